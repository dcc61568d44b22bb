//! Where a shard's files are on this host: the two ways of mounting of docs/design.md fact 5.
//!
//! - [`Layout::SingleMount`] (Fargate, and this function): the file system root mounted once
//!   at `base`; the file `path` of the shard rooted at `root` is `<base>/<root>/<path>`
//!   (`<base>/<path>` for root `/`).
//! - [`Layout::PerTarget`] (hosts that can mount, e.g. EC2): one mount per shard, shard i's
//!   `ip:root` mounted at `mounts[i]`, typically `/mnt/efs-<i>`; the file is `<mounts[i]>/<path>`.
//!   Shard i is the i-th of the list's shards ([`crate::MountTargetList::shards`]): a mount
//!   target serving several shards has a mount for each.
//!
//! Every `targets` argument below is that list of shards, and every index a position in it.

use crate::list::Shard;
use crate::path::LogicalPath;
use std::path::{Path, PathBuf};

/// How the shards are mounted on this host.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layout {
    /// The file system root mounted once at `base`.
    SingleMount { base: PathBuf },
    /// Shard i of the list (by position among its shards) mounted, as `ip:root`, at `mounts[i]`.
    PerTarget { mounts: Vec<PathBuf> },
}

/// A layout that does not fit the list it is used with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    #[error("{mounts} mounts for {shards} shards: a per-target layout needs one mount per shard (its ip:root), in the list's shard order")]
    MountCount { mounts: usize, shards: usize },
    #[error("mount template {0:?} has no '{{i}}' to put the shard's position in")]
    Template(String),
}

impl Layout {
    pub fn single_mount(base: impl Into<PathBuf>) -> Layout {
        Layout::SingleMount { base: base.into() }
    }

    pub fn per_target(mounts: Vec<PathBuf>) -> Layout {
        Layout::PerTarget { mounts }
    }

    /// One mount per shard from a template such as `/mnt/efs-{i}`, for `n` shards
    /// ([`crate::MountTargetList::shard_count`]).
    pub fn per_target_template(template: &str, n: usize) -> Result<Layout, LayoutError> {
        if !template.contains("{i}") {
            return Err(LayoutError::Template(template.to_owned()));
        }
        Ok(Layout::PerTarget {
            mounts: (0..n)
                .map(|i| PathBuf::from(template.replace("{i}", &i.to_string())))
                .collect(),
        })
    }

    /// Checks that the layout can serve `shards` (the list's [`crate::MountTargetList::shards`]).
    pub fn check(&self, shards: &[Shard]) -> Result<(), LayoutError> {
        match self {
            Layout::SingleMount { .. } => Ok(()),
            Layout::PerTarget { mounts } if mounts.len() == shards.len() => Ok(()),
            Layout::PerTarget { mounts } => Err(LayoutError::MountCount {
                mounts: mounts.len(),
                shards: shards.len(),
            }),
        }
    }

    /// The directory on this host that is shard `index`'s root.
    ///
    /// # Panics
    /// If `index` is out of range of `targets` or of the mounts; [`Layout::check`] first.
    pub fn shard_dir(&self, targets: &[Shard], index: usize) -> PathBuf {
        match self {
            Layout::SingleMount { base } => join_root(base, &targets[index].root),
            Layout::PerTarget { mounts } => mounts[index].clone(),
        }
    }

    /// Shard `index`'s directory as a mount of this host and the path beneath it (no leading
    /// `/`; empty for the mount itself): what [`crate::dir::open_beneath`] opens without
    /// following a link the file system's users could have planted in a shard's root.
    pub fn beneath_mount<'a>(&'a self, targets: &'a [Shard], index: usize) -> (&'a Path, &'a str) {
        match self {
            Layout::SingleMount { base } => (base, targets[index].root.trim_start_matches('/')),
            Layout::PerTarget { mounts } => (&mounts[index], ""),
        }
    }

    /// The real path of `path` in shard `index`.
    pub fn real_path(&self, targets: &[Shard], index: usize, path: &LogicalPath) -> PathBuf {
        self.shard_dir(targets, index).join(path.as_str())
    }

    /// The source and destination, both seen through one mount, for moving `path` from shard
    /// `from` to shard `to` by a rename within the file system. A rename between two different
    /// mounts fails with `EXDEV` even when they are of the same file system, so in a
    /// per-target layout this picks the mount of the first shard whose root contains both
    /// shards' roots (the shard rooted at `/`, in the layout of docs/design.md). `None` when no
    /// mount sees both.
    pub fn move_paths(
        &self,
        targets: &[Shard],
        from: usize,
        to: usize,
        path: &LogicalPath,
    ) -> Option<(PathBuf, PathBuf)> {
        match self {
            Layout::SingleMount { .. } => Some((
                self.real_path(targets, from, path),
                self.real_path(targets, to, path),
            )),
            Layout::PerTarget { mounts } => {
                let (root_from, root_to) = (&targets[from].root, &targets[to].root);
                targets.iter().enumerate().find_map(|(k, t)| {
                    let a = relative_to(root_from, &t.root)?;
                    let b = relative_to(root_to, &t.root)?;
                    let mount = &mounts[k];
                    Some((
                        join_rel(mount, a).join(path.as_str()),
                        join_rel(mount, b).join(path.as_str()),
                    ))
                })
            }
        }
    }
}

/// `<base>/<root without its leading '/'>`.
fn join_root(base: &Path, root: &str) -> PathBuf {
    join_rel(base, root.trim_start_matches('/'))
}

fn join_rel(base: &Path, rel: &str) -> PathBuf {
    if rel.is_empty() {
        base.to_path_buf()
    } else {
        base.join(rel)
    }
}

/// `root` relative to `ancestor` (both valid roots), when `ancestor` is `root` or above it.
pub(crate) fn relative_to<'a>(root: &'a str, ancestor: &str) -> Option<&'a str> {
    if ancestor == "/" {
        return Some(root.trim_start_matches('/'));
    }
    let rest = root.strip_prefix(ancestor)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn targets(roots: &[&str]) -> Vec<Shard> {
        roots
            .iter()
            .enumerate()
            .map(|(i, r)| Shard::new(format!("fsmt-{i}"), format!("10.0.{i}.4"), *r))
            .collect()
    }

    fn p(s: &str) -> LogicalPath {
        LogicalPath::parse(s).unwrap()
    }

    #[test]
    fn single_mount_puts_each_shard_under_its_root() {
        let t = targets(&["/", "/shards/use1-az4"]);
        let l = Layout::single_mount("/mnt/efs");
        let x = p("/data/analysis/d.json");
        assert_eq!(
            l.real_path(&t, 0, &x),
            PathBuf::from("/mnt/efs/data/analysis/d.json")
        );
        assert_eq!(
            l.real_path(&t, 1, &x),
            PathBuf::from("/mnt/efs/shards/use1-az4/data/analysis/d.json")
        );
    }

    #[test]
    fn per_target_uses_each_mount_and_moves_through_the_root_mount() {
        let t = targets(&["/shards/a", "/", "/shards/b"]);
        let l = Layout::per_target_template("/mnt/efs-{i}", 3).unwrap();
        l.check(&t).unwrap();
        let x = p("data/d.json");
        assert_eq!(
            l.real_path(&t, 2, &x),
            PathBuf::from("/mnt/efs-2/data/d.json")
        );
        assert_eq!(
            l.move_paths(&t, 2, 0, &x),
            Some((
                PathBuf::from("/mnt/efs-1/shards/b/data/d.json"),
                PathBuf::from("/mnt/efs-1/shards/a/data/d.json")
            ))
        );
        // Without a target rooted above both, no mount sees both shards.
        let t = targets(&["/shards/a", "/shards/b"]);
        let l = Layout::per_target_template("/mnt/efs-{i}", 2).unwrap();
        assert_eq!(l.move_paths(&t, 1, 0, &x), None);
        assert_eq!(
            Layout::per_target_template("/mnt/efs-{i}", 1)
                .unwrap()
                .check(&t),
            Err(LayoutError::MountCount {
                mounts: 1,
                shards: 2
            })
        );
        assert!(Layout::per_target_template("/mnt/efs", 1).is_err());
    }

    #[test]
    fn relative_roots() {
        assert_eq!(relative_to("/shards/a", "/"), Some("shards/a"));
        assert_eq!(relative_to("/", "/"), Some(""));
        assert_eq!(relative_to("/shards/a", "/shards/a"), Some(""));
        assert_eq!(relative_to("/shards/a/b", "/shards/a"), Some("b"));
        assert_eq!(relative_to("/shards/ab", "/shards/a"), None);
        assert_eq!(relative_to("/", "/shards"), None);
    }
}
