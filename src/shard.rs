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
