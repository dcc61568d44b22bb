//! Shards: each mount target owns a directory of the one namespace that every mount target
//! serves (docs/design.md, fact 1). The first keeps `/`, where the files already are; each one
//! this function adds gets `/shards/<az-id>`, a key that survives re-creating the target.

use crate::observed::MountTarget;
use efs_router::list::{az_root, MountTargetList};

/// A mount target and the root of its first shard: the one [`assign`] gives it (a version 2
/// entry may serve more shards, named after that AZ by `efs_router::list::extra_root`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FirstRoot {
    pub target: MountTarget,
    pub root: String,
}

/// Opens `dir` (a shard's directory, or one below it) beneath the function's mount without
/// following a link a task could plant, making missing directories when `create`.
pub fn open_dir(
    config: &crate::config::Config,
    dir: &std::path::Path,
    create: bool,
) -> std::io::Result<std::os::fd::OwnedFd> {
    let rel = dir.strip_prefix(&config.mount_path).unwrap_or(dir);
    efs_router::dir::open_beneath(&config.mount_path, &rel.to_string_lossy(), create)
}

/// Removes the shards' directories that are empty: the watched directory of each of `roots`
/// and those above it up to the mount, then every directory under `/shards` and `/shards`
/// itself. Each only if empty (the empty ones below it first), relative to its parent opened
/// beneath the mount: no link is followed, and `rmdir` refuses a directory that holds
/// anything, so nothing but empty directories goes. Answers each directory left, and why.
/// For the undo, once only `/` is listed and every file is home.
pub fn remove_empty_shard_dirs(
    config: &crate::config::Config,
    roots: &[String],
) -> Vec<(std::path::PathBuf, String)> {
    let mut left = Vec::new();
    let shards = config.mount_path.join("shards");
    let dirs = std::iter::once(shards).chain(
        roots
            .iter()
            .filter(|r| r.as_str() != "/")
            .map(|r| config.watch_path(r)),
    );
    for dir in dirs {
        if let Err((path, e)) = remove_empty_upwards(config, &dir) {
            if !left.iter().any(|(p, _)| *p == path) {
                left.push((path, e));
            }
        }
    }
    left
}

/// `dir` and the directories above it up to the mount, each if empty (see
/// [`remove_empty_shard_dirs`]); the first one left, and why.
fn remove_empty_upwards(
    config: &crate::config::Config,
    dir: &std::path::Path,
) -> Result<(), (std::path::PathBuf, String)> {
    use rustix::fs::{unlinkat, AtFlags};
    use rustix::io::Errno;
    let failed =
        |path: &std::path::Path, e: &dyn std::fmt::Display| (path.to_path_buf(), e.to_string());
    match open_dir(config, dir, false) {
        Ok(fd) => {
            efs_router::dir::remove_empty_dirs_at(&fd).map_err(|e| failed(dir, &e))?;
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(failed(dir, &e)),
    }
    let rel = dir.strip_prefix(&config.mount_path).unwrap_or(dir);
    let parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    for n in (1..=parts.len()).rev() {
        let path = config.mount_path.join(parts[..n].join("/"));
        let parent = match open_dir(config, path.parent().unwrap_or(&config.mount_path), false) {
            Ok(fd) => fd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(failed(&path, &e)),
        };
        match unlinkat(&parent, parts[n - 1].as_str(), AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => {}
            // Files in the directory itself are left, and said; above it, other directories
            // (another shard's) are no reason to.
            Err(Errno::NOTEMPTY | Errno::EXIST) if path == dir => {
                return Err(failed(&path, &"not empty"))
            }
            Err(Errno::NOTEMPTY | Errno::EXIST) => return Ok(()),
            Err(e) => return Err(failed(&path, &e)),
        }
    }
    Ok(())
}

/// Gives every mount target that holds an AZ its shard root, in a stable order (the
/// published list's, then the rest by AZ id):
/// 1. the root the published list gives its id;
/// 2. else the root the list gives a target in the same AZ (a re-created target keeps its shard);
/// 3. else `/shards/<az-id>` when that directory already exists (a run created it, then died),
///    while fewer than `wanted` targets serve;
/// 4. else `/` while no target holds `/` (the first shard keeps the files that were there);
/// 5. else `/shards/<az-id>` while fewer than `wanted` targets serve (its directory gets made);
/// 6. else none: the target stays idle, in no list, until the files need it. Shards follow the
///    files, not the targets: a file system with a target in every AZ and few files keeps one
///    shard, and no file of the app's moves for targets that were merely there.
pub fn assign(
    targets: &[MountTarget],
    published: Option<&MountTargetList>,
    shard_dir_exists: impl Fn(&str) -> bool,
    wanted: usize,
) -> Vec<FirstRoot> {
    let listed = published.map(|l| l.mount_targets.as_slice()).unwrap_or(&[]);
    let mut ordered: Vec<&MountTarget> = targets.iter().filter(|t| t.occupies_az()).collect();
    ordered.sort_by_key(|t| {
        let by_id = listed.iter().position(|e| e.id == t.id);
        let by_az = listed
            .iter()
            .position(|e| e.az_id.as_deref() == Some(t.az_id.as_str()));
        (
            by_id.or(by_az).unwrap_or(usize::MAX),
            t.az_id.clone(),
            t.id.clone(),
        )
    });

    let mut shards: Vec<FirstRoot> = Vec::with_capacity(ordered.len());
    let mut pending: Vec<&MountTarget> = Vec::new();
    for t in ordered {
        let known = listed.iter().find(|e| e.id == t.id).or_else(|| {
            listed
                .iter()
                .find(|e| e.az_id.as_deref() == Some(t.az_id.as_str()))
        });
        match known {
            Some(entry) => shards.push(FirstRoot {
                target: t.clone(),
                root: entry.root.clone(),
            }),
            None => pending.push(t),
        }
    }
    // A root any listed entry holds is taken, even when that entry's target is gone: its files
    // are still there, draining home.
    let taken = |shards: &[FirstRoot], root: &str| {
        shards.iter().any(|s| s.root == root) || listed.iter().any(|e| e.root == root)
    };
    // `/` goes only to an available target: the first to take it is one that serves now.
    pending.sort_by_key(|t| t.state != crate::observed::LifeCycle::Available);
    let mut rest = Vec::new();
    for t in pending {
        let own = az_root(&t.az_id);
        // Within what the files need too, `/` counted as served: a target drained and kept
        // (the undo event) leaves its empty directory behind, and must stay idle.
        let serving = shards.iter().filter(|s| s.target.state.is_active()).count();
        let room = serving + usize::from(!taken(&shards, "/")) < wanted;
        if shard_dir_exists(&own) && !taken(&shards, &own) && room {
            shards.push(FirstRoot {
                target: t.clone(),
                root: own,
            });
        } else {
            rest.push(t);
        }
    }
    for t in rest {
        let serving = shards.iter().filter(|s| s.target.state.is_active()).count();
        let root = if !taken(&shards, "/") {
            // `/` holds the files that were there: it is always served.
            "/".to_owned()
        } else if serving < wanted {
            az_root(&t.az_id)
        } else {
            continue;
        };
        shards.push(FirstRoot {
            target: t.clone(),
            root,
        });
    }
    shards
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observed::LifeCycle;

    fn target(id: &str, az: char, state: LifeCycle) -> MountTarget {
        MountTarget {
            id: id.into(),
            subnet_id: format!("subnet-{az}"),
            vpc_id: None,
            az: format!("us-east-1{az}"),
            az_id: format!("use1-az{az}"),
            ip: Some("10.0.0.1".into()),
            state,
        }
    }

    fn root_of<'a>(shards: &'a [FirstRoot], id: &str) -> &'a str {
        &shards.iter().find(|s| s.target.id == id).unwrap().root
    }

    #[test]
    fn the_undo_removes_only_empty_shard_directories_and_follows_no_link() {
        use std::fs;
        let mount = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let config = crate::config::Config::from_lookup(|k| match k {
            "EFS_FILE_SYSTEM_ID" => Some("fs-1".into()),
            "ECS_CLUSTER_NAME" => Some("c".into()),
            "ECS_SERVICE_NAME" => Some("s".into()),
            "EFS_MOUNT_PATH" => Some(mount.path().to_str().unwrap().into()),
            "WATCH_DIR" => Some("data/analysis".into()),
            _ => None,
        })
        .unwrap();
        // Empty shards, nested empty directories in one; a file someone left in another; a
        // link planted in a third, to a directory with an empty directory in it.
        for root in ["/shards/a", "/shards/a.1", "/shards/b"] {
            fs::create_dir_all(config.watch_path(root).join("2026/12")).unwrap();
        }
        fs::write(config.watch_path("/shards/b").join("kept.json"), b"{}").unwrap();
        fs::create_dir_all(outside.path().join("empty")).unwrap();
        std::os::unix::fs::symlink(outside.path(), mount.path().join("shards/c")).unwrap();
        // The first shard's directory and what is beside /shards stay.
        fs::create_dir_all(config.watch_path("/")).unwrap();
        let roots = ["/", "/shards/a", "/shards/b", "/shards/gone"].map(String::from);
        let left = remove_empty_shard_dirs(&config, &roots);
        let left: Vec<_> = left.iter().map(|(p, _)| p.clone()).collect();
        assert_eq!(
            left,
            [mount.path().join("shards"), config.watch_path("/shards/b")]
        );
        assert!(!mount.path().join("shards/a").exists());
        assert!(!mount.path().join("shards/a.1").exists());
        assert!(config.watch_path("/shards/b").join("kept.json").exists());
        assert!(outside.path().join("empty").is_dir());
        assert!(config.watch_path("/").is_dir());
        // Once the file is gone, everything goes.
        fs::remove_file(config.watch_path("/shards/b").join("kept.json")).unwrap();
        fs::remove_file(mount.path().join("shards/c")).unwrap();
        assert!(remove_empty_shard_dirs(&config, &roots).is_empty());
        assert!(!mount.path().join("shards").exists());
    }

    #[test]
    fn slash_goes_only_to_an_available_target() {
        // A creating target sorted first (by AZ) does not take `/` from an available one.
        let targets = [
            target("fsmt-a", 'a', LifeCycle::Creating),
            target("fsmt-b", 'b', LifeCycle::Available),
        ];
        let shards = assign(&targets, None, |_| false, usize::MAX);
        assert_eq!(root_of(&shards, "fsmt-b"), "/");
        assert_eq!(root_of(&shards, "fsmt-a"), "/shards/use1-aza");
    }

    #[test]
    fn targets_serve_shards_only_as_the_files_need_them() {
        // A target in every AZ, as EFS's usual setup has, and files for one shard.
        let targets = [
            target("fsmt-c", 'c', LifeCycle::Available),
            target("fsmt-a", 'a', LifeCycle::Available),
            target("fsmt-b", 'b', LifeCycle::Available),
        ];
        let shards = assign(&targets, None, |_| false, 1);
        let roots: Vec<(&str, &str)> = shards
            .iter()
            .map(|s| (s.target.id.as_str(), s.root.as_str()))
            .collect();
        assert_eq!(roots, [("fsmt-a", "/")]);
        // Two needed: the next existing target (by AZ id) takes the next shard.
        let shards = assign(&targets, None, |_| false, 2);
        assert_eq!(shards.len(), 2);
        assert_eq!(root_of(&shards, "fsmt-b"), "/shards/use1-azb");
        // A listed target keeps its shard whatever is wanted: it leaves only through a drain.
        let list = MountTargetList::from_json(
            r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.0.1","az_id":"use1-aza","root":"/"},{"id":"fsmt-c","ip":"10.0.0.1","az_id":"use1-azc","root":"/shards/use1-azc"}],"strategy":"rendezvous"}"#,
        )
        .unwrap();
        let shards = assign(&targets, Some(&list), |_| false, 1);
        assert_eq!(shards.len(), 2);
        assert_eq!(root_of(&shards, "fsmt-c"), "/shards/use1-azc");
    }

    #[test]
    fn a_root_a_listed_entry_holds_is_not_given_away() {
        // `/` belongs to a listed target that is gone: its files are still there, draining.
        let list = MountTargetList::from_json(
            r#"{"mount_targets":[{"id":"fsmt-gone","ip":"10.0.0.9","az_id":"use1-azz","root":"/"}],"strategy":"rendezvous"}"#,
        )
        .unwrap();
        let targets = [target("fsmt-new", 'b', LifeCycle::Available)];
        let shards = assign(&targets, Some(&list), |_| false, usize::MAX);
        assert_eq!(root_of(&shards, "fsmt-new"), "/shards/use1-azb");
    }
}
