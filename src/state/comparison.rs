//! How a rebalance run finds a file's home: against every shard, or, when the list only grew
//! since a pass left every file at home, against the shards added since.
//!
//! The rule. Let O be the shards of the last clean pass (`rebalancing.balanced` in the
//! state), N the list's shards now, and A = N \ O. Rendezvous gives a file the shard that
//! ranks first by (score, then the smaller root): a strict total order over distinct roots,
//! so the first of N = O ∪ A is the first of {first of O} ∪ A. For a file in a shard s of O
//! whose home under O is s, its home under N is therefore the first of {s} ∪ A: |A| + 1
//! hashes (two when one shard was added) instead of |N|, and exactly the answer of
//! `shard_index` over N. That holds only when:
//! - the file is at home under O where it is: the last clean pass left every file of O's
//!   shards at home, and since then a file enters a shard of O only as a router puts it
//!   there under O or a later list that contains O (its home under such a list is in O only if
//!   it is its home under O), or as a move home under such a list; so the comparison is used
//!   only for files in a shard of O, never for one in an added shard (full comparison);
//! - every list since O contained O: no shard drained or removed (a drain moves files to
//!   shards that are not their home under O). The plan forgets `balanced` whenever a drain is
//!   under way, the rebalance whenever the list no longer holds all of O or has a draining
//!   shard; so a drain, a removal or a migrate between two rebalances means a full comparison;
//! - both lists are rendezvous (modulo re-homes nearly every file when a shard is added) and
//!   no root is listed twice.
//!
//! With nothing added, the comparison is full: that pass finds whatever a person or an old
//! client put in the wrong shard. A pass that compared with the added shards records nothing
//! ([`super::rebalancing::Rebalancing::after_run`]): a writer the fleet rule cannot see may have put
//! a file outside its home in an old shard, where this comparison calls it at home, so only
//! the full pass after it closes the placements. A file the comparison would move is sent to
//! its home over every shard (|N| hashes, for moving files only): for a file at home under O
//! that is the first of {s} ∪ A, and a stray is never moved to an added shard that is not its
//! home, where no router would look for it.

use super::rebalancing::ShardSet;
use efs_router::list::{MountTargetList, Shard, Strategy};
use efs_router::{rendezvous_score, shard_index, LogicalPath, RouteError};
use std::collections::BTreeSet;

/// How a run compares a file's shard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Comparison {
    /// Against every shard of the list.
    Full(Full),
    /// A file in one of `old` stays unless one of `added` outranks its shard; a file
    /// elsewhere is compared with every shard.
    Added {
        old: BTreeSet<String>,
        added: Vec<Shard>,
    },
}

/// Why the comparison is full.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Full {
    /// No pass has left every file at home yet (or a drain made the record go).
    NoBalancedPass,
    /// The list is `modulo-sha256`.
    Modulo,
    /// A shard is draining.
    Draining,
    /// A shard the files were balanced against has left the list (or changed).
    NotOnlyAdded,
    /// Nothing was added since the files were balanced.
    NothingAdded,
}

impl Comparison {
    /// Its name in the response's `moves.comparison`.
    pub fn name(&self) -> &'static str {
        match self {
            Comparison::Full(_) => "full",
            Comparison::Added { .. } => "added_shards",
        }
    }

    /// The root of the home of the file at logical path `raw` found in the shard rooted at
    /// `at`, `shards` being the list's (with its `strategy`).
    pub fn home<'a>(
        &'a self,
        raw: &str,
        at: &'a str,
        shards: &'a [Shard],
        strategy: Strategy,
    ) -> Result<&'a str, RouteError> {
        match self {
            Comparison::Added { old, added } if old.contains(at) => {
                let first = outranking(&LogicalPath::parse(raw)?, at, added);
                if first == at {
                    return Ok(at);
                }
                // It moves: to its home over every shard, which for a file at home under the
                // old list is `first` (the rule), and for a stray an unseen writer put in an
                // old shard may be another old shard. Never an added shard that outranks
                // only where the stray lies: no router would look there.
                shard_index(raw, shards, strategy).map(|i| shards[i].root.as_str())
            }
            _ => shard_index(raw, shards, strategy).map(|i| shards[i].root.as_str()),
        }
    }
}

/// `at`, unless one of `added` ranks first for `path` (higher score, or equal and the smaller
/// root, as rendezvous ranks).
fn outranking<'a>(path: &LogicalPath, at: &'a str, added: &'a [Shard]) -> &'a str {
    let mut best = (rendezvous_score(at, path), at);
    for t in added {
        let score = rendezvous_score(&t.root, path);
        if score > best.0 || (score == best.0 && t.root.as_bytes() < best.1.as_bytes()) {
            best = (score, &t.root);
        }
    }
    best.1
}

/// The comparison for a run under `list`, the files balanced against `balanced`.
pub fn comparison(list: &MountTargetList, balanced: Option<&ShardSet>) -> Comparison {
    let shards = list.shards();
    let Some(balanced) = balanced else {
        return Comparison::Full(Full::NoBalancedPass);
    };
    if list.strategy != Strategy::Rendezvous {
        return Comparison::Full(Full::Modulo);
    }
    if shards.iter().any(|t| t.draining) {
        return Comparison::Full(Full::Draining);
    }
    let distinct: BTreeSet<&str> = shards.iter().map(|t| t.root.as_str()).collect();
    let Some(old) = balanced
        .roots_in(list)
        .filter(|_| distinct.len() == shards.len())
    else {
        return Comparison::Full(Full::NotOnlyAdded);
    };
    let added: Vec<Shard> = shards
        .into_iter()
        .filter(|t| !old.contains(&t.root))
        .collect();
    match added.is_empty() {
        true => Comparison::Full(Full::NothingAdded),
        false => Comparison::Added { old, added },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::rebalancing::tests::list;
    use crate::state::rebalancing::ShardSet;

    fn base() -> MountTargetList {
        list(&[("/", "use1-az1", 2), ("/shards/use1-az2", "use1-az2", 1)])
    }

    #[test]
    fn pure_growth_compares_with_the_added_shards_and_anything_else_with_all() {
        let balanced = ShardSet::of(&base()).unwrap();
        // One shard more on a target, and one more target: only those two are compared.
        let grown = list(&[
            ("/", "use1-az1", 3),
            ("/shards/use1-az2", "use1-az2", 1),
            ("/shards/use1-az3", "use1-az3", 1),
        ]);
        let Comparison::Added { old, added } = comparison(&grown, Some(&balanced)) else {
            panic!("growth: {:?}", comparison(&grown, Some(&balanced)))
        };
        let added: Vec<&str> = added.iter().map(|t| t.root.as_str()).collect();
        assert_eq!(added, ["/shards/use1-az1.2", "/shards/use1-az3"]);
        assert_eq!(old.len(), 3);
        assert_eq!(comparison(&grown, Some(&balanced)).name(), "added_shards");

        let full = |l: &MountTargetList, b: Option<&ShardSet>| match comparison(l, b) {
            Comparison::Full(why) => Some(why),
            Comparison::Added { .. } => None,
        };
        assert_eq!(full(&grown, None), Some(Full::NoBalancedPass));
        assert_eq!(full(&base(), Some(&balanced)), Some(Full::NothingAdded));
        // A drain under way: full.
        let mut draining = grown.clone();
        draining.mount_targets[0].draining_shards = 1;
        assert_eq!(full(&draining, Some(&balanced)), Some(Full::Draining));
        let mut draining = grown.clone();
        draining.mount_targets[1].draining = true;
        assert_eq!(full(&draining, Some(&balanced)), Some(Full::Draining));
        // A drain done (a shard or a target gone), even with another added: full.
        let drained = list(&[("/", "use1-az1", 1), ("/shards/use1-az3", "use1-az3", 1)]);
        assert_eq!(full(&drained, Some(&balanced)), Some(Full::NotOnlyAdded));
        let replaced = list(&[("/", "use1-az1", 2), ("/shards/use1-az3", "use1-az3", 1)]);
        assert_eq!(full(&replaced, Some(&balanced)), Some(Full::NotOnlyAdded));
        // A modulo list (before a migrate), and the migrate's own republish: full.
        let modulo = MountTargetList {
            strategy: Strategy::ModuloSha256,
            ..grown.clone()
        };
        assert_eq!(full(&modulo, Some(&balanced)), Some(Full::Modulo));
    }

    #[test]
    fn it_agrees_with_the_full_comparison_and_sends_a_stray_only_home() {
        // Lists grown from random ones by random additions; files at home under the old.
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let azs = ["use1-az1", "use1-az2", "use1-az4", "use1-az5", "use1-az6"];
        for case in 0..200 {
            let targets = 1 + next(4) as usize;
            let old_spec: Vec<(String, &str, u32)> = (0..targets)
                .map(|i| {
                    let root = if i == 0 {
                        "/".to_owned()
                    } else {
                        format!("/shards/{}", azs[i])
                    };
                    (root, azs[i], 1 + next(6) as u32)
                })
                .collect();
            let mut new_spec = old_spec.clone();
            for t in new_spec.iter_mut() {
                t.2 += next(3) as u32;
            }
            if next(2) == 0 && targets < azs.len() {
                new_spec.push((format!("/shards/{}", azs[targets]), azs[targets], 1));
            }
            let as_list = |spec: &[(String, &str, u32)]| {
                let borrowed: Vec<(&str, &str, u32)> =
                    spec.iter().map(|(r, a, n)| (r.as_str(), *a, *n)).collect();
                list(&borrowed)
            };
            let (old, new) = (as_list(&old_spec), as_list(&new_spec));
            let balanced = ShardSet::of(&old).unwrap();
            let two = comparison(&new, Some(&balanced));
            let Comparison::Added {
                old: old_roots,
                added,
            } = &two
            else {
                assert_eq!(
                    old, new,
                    "case {case}: only an unchanged list compares fully"
                );
                continue;
            };
            let (old_shards, new_shards) = (old.shards(), new.shards());
            for f in 0..300 {
                let raw = format!("data/analysis/device-{case}-{f}.json");
                let at = &old_shards[shard_index(&raw, &old_shards, old.strategy).unwrap()].root;
                assert!(old_roots.contains(at));
                let full = &new_shards[shard_index(&raw, &new_shards, new.strategy).unwrap()].root;
                let got = two.home(&raw, at, &new_shards, new.strategy).unwrap();
                assert_eq!(got, full, "case {case}, {raw}");
                // A stray in another old shard: left, or sent to its home, never elsewhere.
                for stray in old_roots.iter().filter(|r| *r != at) {
                    let got = two.home(&raw, stray, &new_shards, new.strategy).unwrap();
                    assert!(
                        got == stray || got == full,
                        "case {case}, {raw} in {stray}: {got}"
                    );
                }
                // Found in an added shard: compared with every shard.
                let elsewhere = two.home(&raw, &added[0].root, &new_shards, new.strategy);
                assert_eq!(elsewhere.unwrap(), full);
            }
        }
    }
}
