//! What the rebalance keeps between its runs, in the state parameter (`rebalancing`): where
//! its walk stands, whether the pass under way has left every file it saw at home, and the
//! shards the last such pass balanced the files against.
//!
//! A pass walks every listed shard, in the order of their roots, each in name order
//! ([`efs_router::sorted_walk`]), over as many runs as it takes: a run that stops (its
//! deadline, or `REBALANCE_MAX_VISITS`) records the first entry it did not visit, and the
//! next run goes on from there. A run that reaches the end of the last shard ends the pass
//! (the next run starts a new one at the first shard).
//!
//! A pass that ran under one list from start to end (no drain under way, no other list
//! published: the plan marks it unclean otherwise), left nothing misplaced (no file remaining,
//! none failing) and compared every file fully is recorded as `balanced`: every file in one of
//! those shards is at home under that list, and the placements close. The next passes use it
//! while the list only grows ([`super::comparison::Comparison`]); such a pass, which does not
//! look for a stray in the old shards, records nothing.

use super::comparison::{comparison, Comparison};
use efs_router::list::{MountTargetList, Strategy};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path};

/// The longest position kept, in characters of its JSON form: the state parameter holds at
/// most 4,096. A longer one is kept by its digest ([`Cursor::at`]).
pub const MAX_PATH_CHARS: usize = 512;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rebalancing {
    /// Where the next run goes on; absent when the next run starts a pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next: Option<Cursor>,
    /// The pass under way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pass: Option<Pass>,
    /// The shards the last clean pass balanced the files against.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub balanced: Option<ShardSet>,
}

/// A position of the walk: the first entry not visited yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Cursor {
    /// The shard's root.
    pub root: String,
    /// Relative to the shard's watched directory; empty for its start.
    pub path: String,
}

/// The pass under way.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pass {
    /// [`shards_sha256`] of the list the pass began under.
    pub shards: String,
    /// Every file its runs saw was at home (or moved there), and the list has not changed.
    pub clean: bool,
}

/// A set of shards, in a few characters whatever their number: each mount target's first
/// root and how many shards it served (its others follow from its AZ id), and the digest of
/// all their roots, which checks what is rebuilt from that.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardSet {
    pub sha256: String,
    pub targets: BTreeMap<String, u32>,
}

/// SHA-256 (hex) of the roots, sorted, each followed by a NUL.
pub fn shards_sha256<'a>(roots: impl IntoIterator<Item = &'a str>) -> String {
    let sorted: BTreeSet<&str> = roots.into_iter().collect();
    let mut hash = Sha256::new();
    for root in sorted {
        hash.update(root.as_bytes());
        hash.update([0u8]);
    }
    hash.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The digest of where `list` homes files: every shard's root, each draining one marked, and
/// the strategy (not the list's text, as a report's is). A pass is clean only under one such
/// digest: a drain started and cancelled within it homed files elsewhere meanwhile, behind
/// the walk, and a pass that ignored that would close placements still holding them.
pub fn list_shards_sha256(list: &MountTargetList) -> String {
    let mut named: Vec<String> = list
        .shards()
        .iter()
        .map(|t| match t.draining {
            true => format!("{}\u{1}draining", t.root),
            false => t.root.clone(),
        })
        .collect();
    named.push(format!("\u{1}{}", list.strategy));
    shards_sha256(named.iter().map(String::as_str))
}

impl ShardSet {
    /// The shards of `list`, when files can be balanced against them for later growth: a
    /// rendezvous list, none draining, no root twice.
    pub fn of(list: &MountTargetList) -> Option<ShardSet> {
        let shards = list.shards();
        let roots: BTreeSet<&str> = shards.iter().map(|t| t.root.as_str()).collect();
        let usable = list.strategy == Strategy::Rendezvous
            && roots.len() == shards.len()
            && !shards.iter().any(|t| t.draining);
        usable.then(|| ShardSet {
            sha256: shards_sha256(roots),
            targets: list
                .mount_targets
                .iter()
                .map(|t| (t.root.clone(), t.shards.max(1)))
                .collect(),
        })
    }

    /// These shards' roots, found in `list`: `None` unless every one of them is there (each
    /// mount target still serving at least as many shards, the digest the same).
    pub fn roots_in(&self, list: &MountTargetList) -> Option<BTreeSet<String>> {
        let mut roots = BTreeSet::new();
        for (first, served) in &self.targets {
            let t = list.mount_targets.iter().find(|t| &t.root == first)?;
            let all = t.shard_roots();
            roots.extend(all.get(..*served as usize)?.iter().cloned());
        }
        (shards_sha256(roots.iter().map(String::as_str)) == self.sha256).then_some(roots)
    }
}

impl Cursor {
    /// The position `path` (relative, as the walk reports it) in the shard at `root`. A path
    /// that is UTF-8 and fits [`MAX_PATH_CHARS`] is kept as it is. Any other (a name that is not
    /// UTF-8, a path too long) is kept as the deepest directory on its way that fits, followed
    /// by a [`SEEK`] component naming the path by its digest: the next run walks that directory
    /// without visiting anything until it meets the path, and goes on from there. So every
    /// entry the file system can hold is a place a walk can stop at and resume after.
    pub fn at(root: &str, path: &Path) -> Cursor {
        let (kept, whole) = utf8_prefix(path, MAX_PATH_CHARS);
        if whole {
            return Cursor {
                root: root.to_owned(),
                path: kept,
            };
        }
        let (kept, _) = utf8_prefix(path, MAX_PATH_CHARS - SEEK_CHARS);
        let seek = format!("{SEEK}{}", path_digest(path));
        Cursor {
            root: root.to_owned(),
            path: match kept.is_empty() {
                true => seek,
                false => format!("{kept}/{seek}"),
            },
        }
    }

    /// Where a walk goes on: the path it starts from, and the digest of the entry it seeks
    /// there before it visits anything (see [`Cursor::at`]).
    pub fn start(&self) -> (&Path, Option<&str>) {
        match self.path.rsplit_once('/') {
            Some((dir, last)) if last.starts_with(SEEK) => (Path::new(dir), Some(&last[1..])),
            None if self.path.starts_with(SEEK) => (Path::new(""), Some(&self.path[1..])),
            _ => (Path::new(&self.path), None),
        }
    }
}

/// Marks a position's last component as a digest to seek. No name holds a NUL, and a build that
/// does not know the mark sorts it before every name: it walks that directory from its start.
pub const SEEK: char = '\0';
/// What a seek component costs in the JSON form: the mark, escaped, its digest and a slash.
const SEEK_CHARS: usize = 6 + DIGEST_HEX + 1;
/// The digest's length: 64 bits of SHA-256, so that two paths of one tree never share one.
const DIGEST_HEX: usize = 16;

/// SHA-256 of a relative path's bytes, as the walk reports it, in [`DIGEST_HEX`] characters.
pub fn path_digest(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let digest = Sha256::digest(path.as_os_str().as_bytes());
    digest
        .iter()
        .take(DIGEST_HEX / 2)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The leading components of `path` that are UTF-8 and fit in `limit` JSON characters, and
/// whether they are all of it.
fn utf8_prefix(path: &Path, limit: usize) -> (String, bool) {
    let mut kept = String::new();
    for c in path.components() {
        let Component::Normal(part) = c else { continue };
        let Some(part) = part.to_str() else {
            return (kept, false);
        };
        let longer = match kept.is_empty() {
            true => part.to_owned(),
            false => format!("{kept}/{part}"),
        };
        if json_chars(&longer) > limit {
            return (kept, false);
        }
        kept = longer;
    }
    (kept, true)
}

fn json_chars(s: &str) -> usize {
    serde_json::to_string(s).map_or(usize::MAX, |j| j.chars().count())
}

impl Rebalancing {
    /// After a run under `list` that stopped at `stopped` (`None`: it ended the pass) and saw
    /// every file at home or moved it there (`clean`).
    pub fn after_run(
        &self,
        list: &MountTargetList,
        stopped: Option<Cursor>,
        clean: bool,
    ) -> Rebalancing {
        let shards = list_shards_sha256(list);
        // A run from the start begins a pass; a record from before passes were kept is not
        // known to be clean.
        let pass = match (&self.next, &self.pass) {
            (None, _) => Pass {
                shards: shards.clone(),
                clean: true,
            },
            (Some(_), Some(p)) => p.clone(),
            (Some(_), None) => Pass {
                shards: shards.clone(),
                clean: false,
            },
        };
        let pass = Pass {
            clean: pass.clean && clean && pass.shards == shards,
            ..pass
        };
        // A record the list no longer holds all of is of no more use.
        let kept = self
            .balanced
            .clone()
            .filter(|b| b.roots_in(list).is_some() && ShardSet::of(list).is_some());
        match stopped {
            Some(next) => Rebalancing {
                next: Some(next),
                pass: Some(pass),
                balanced: kept,
            },
            None => Rebalancing {
                next: None,
                pass: None,
                balanced: match (pass.clean, self.compared_with_added(list)) {
                    // It did not look for a stray in the old shards: the next pass compares
                    // fully, and only its clean end says every file is at home.
                    (true, true) => None,
                    (true, false) => ShardSet::of(list),
                    (false, _) => kept,
                },
            },
        }
    }
}

impl Rebalancing {
    /// Whether this pass's runs compare a file in an old shard with the added shards only
    /// ([`Comparison::Added`]). That holds for a file at home under the old shards, which
    /// a writer the fleet rule cannot see (a router that does not report, an app on plain
    /// paths) need not leave it: a stray there is judged at home. So such a pass moves files
    /// home but closes nothing. Its record and the list stay as they were through a clean
    /// pass, so its last run compares as each of them did.
    fn compared_with_added(&self, list: &MountTargetList) -> bool {
        matches!(
            comparison(list, self.balanced.as_ref()),
            Comparison::Added { .. }
        )
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use efs_router::list::Target;

    /// A rendezvous list of `(root, az id, shards)` targets: for this module's and the
    /// comparison's tests.
    pub(crate) fn list(shards: &[(&str, &str, u32)]) -> MountTargetList {
        MountTargetList {
            open: None,
            scope: None,
            mount_targets: shards
                .iter()
                .enumerate()
                .map(|(i, (root, az, n))| Target {
                    az_id: Some((*az).to_owned()),
                    shards: *n,
                    ..Target::new(format!("fsmt-{i}"), "10.0.0.1", *root)
                })
                .collect(),
            strategy: Strategy::Rendezvous,
        }
    }

    #[test]
    fn any_position_is_kept_in_its_bound_exactly_or_by_its_digest() {
        use std::os::unix::ffi::OsStrExt;
        let c = Cursor::at("/", Path::new("a/b/c.json"));
        assert_eq!(
            (c.path.as_str(), c.start()),
            ("a/b/c.json", (Path::new("a/b/c.json"), None))
        );
        // Too long: the deepest directory that fits, and the path's digest to seek below it.
        let long = format!("a/{}", "x".repeat(MAX_PATH_CHARS));
        let c = Cursor::at("/", Path::new(&long));
        let digest = path_digest(Path::new(&long));
        assert_eq!(c.start(), (Path::new("a"), Some(digest.as_str())));
        let c = Cursor::at("/", Path::new(&"y".repeat(600)));
        assert_eq!(c.start().0, Path::new(""));
        assert!(c.start().1.is_some());
        // Not UTF-8: the same, whatever its length.
        let foreign = Path::new(std::ffi::OsStr::from_bytes(b"d/\xff/f"));
        let c = Cursor::at("/", foreign);
        let digest = path_digest(foreign);
        assert_eq!(c.start(), (Path::new("d"), Some(digest.as_str())));
        // Escapes count as they are written; every form fits its bound.
        let escaped = "\u{1}".repeat(100);
        assert_eq!(
            Cursor::at("/", Path::new(&escaped)).start().0,
            Path::new("")
        );
        let deep = format!("{}/{}", "z/".repeat(250), "w".repeat(200));
        for path in [long.as_str(), escaped.as_str(), deep.as_str()] {
            assert!(json_chars(&Cursor::at("/", Path::new(path)).path) <= MAX_PATH_CHARS);
        }
        // Two paths never share a digest position.
        assert_ne!(
            Cursor::at("/", Path::new(&long)),
            Cursor::at("/", Path::new(&format!("{long}y")))
        );
    }

    #[test]
    fn a_shard_set_is_found_again_in_a_list_that_only_grew() {
        let old = list(&[("/", "use1-az1", 2), ("/shards/use1-az2", "use1-az2", 1)]);
        let set = ShardSet::of(&old).unwrap();
        let roots = set.roots_in(&old).unwrap();
        assert_eq!(roots.len(), 3);
        let grown = list(&[
            ("/", "use1-az1", 3),
            ("/shards/use1-az2", "use1-az2", 1),
            ("/shards/use1-az3", "use1-az3", 1),
        ]);
        assert_eq!(set.roots_in(&grown), Some(roots));
        // Fewer shards, another AZ behind the same first root, a target gone: not found.
        let fewer = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
        assert_eq!(set.roots_in(&fewer), None);
        let moved = list(&[("/", "use1-az9", 2), ("/shards/use1-az2", "use1-az2", 1)]);
        assert_eq!(set.roots_in(&moved), None);
        assert_eq!(set.roots_in(&list(&[("/", "use1-az1", 2)])), None);
        // Draining shards, and modulo lists, are never balanced against.
        let mut draining = old.clone();
        draining.mount_targets[0].draining_shards = 1;
        assert_eq!(ShardSet::of(&draining), None);
        let modulo = MountTargetList {
            strategy: Strategy::ModuloSha256,
            ..list(&[("/", "use1-az1", 1)])
        };
        assert_eq!(ShardSet::of(&modulo), None);
    }

    #[test]
    fn only_a_clean_pass_under_one_list_is_recorded() {
        let l = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
        let at = |p: &str| {
            Some(Cursor {
                root: "/".into(),
                path: p.into(),
            })
        };
        // Two clean runs: recorded.
        let r = Rebalancing::default().after_run(&l, at("m"), true);
        assert_eq!((r.next.clone(), r.balanced.clone()), (at("m"), None));
        let done = r.after_run(&l, None, true);
        assert_eq!(done.balanced, ShardSet::of(&l));
        assert_eq!((done.next.clone(), done.pass.clone()), (None, None));
        // A run that left a file misplaced: the pass is not recorded, the old record stays.
        let r = done.after_run(&l, at("m"), false).after_run(&l, None, true);
        assert_eq!(r.balanced, done.balanced);
        // The list grew during the pass: not recorded either (the old record stays, the list
        // still holds all of it).
        let grown = list(&[
            ("/", "use1-az1", 1),
            ("/shards/use1-az2", "use1-az2", 1),
            ("/shards/use1-az3", "use1-az3", 1),
        ]);
        let r = done
            .after_run(&l, at("m"), true)
            .after_run(&grown, None, true);
        assert_eq!(r.balanced, done.balanced);
        // A drain started and cancelled during the pass: files were homed elsewhere meanwhile,
        // so the pass is not recorded.
        let mut draining = l.clone();
        draining.mount_targets[1].draining = true;
        let r = Rebalancing::default()
            .after_run(&l, at("m"), true)
            .after_run(&draining, at("n"), true)
            .after_run(&l, None, true);
        assert_eq!(r.balanced, None);
        // A shard gone: the record goes.
        let shrunk = list(&[("/", "use1-az1", 1)]);
        let r = done.after_run(&shrunk, at("m"), true);
        assert_eq!(r.balanced, None);
    }
}
