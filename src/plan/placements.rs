//! Which earlier placements the list to publish says are open (list version 3,
//! [`efs_router::placement`]): where a miss must still look besides a path's home.
//!
//! - The list takes version 3 once every live client reads it (and at least one reports), as
//!   version 2 waits; a version 3 list stays so, since its readers are running.
//! - Each change of the shards or the strategy opens the placement of the list it replaces
//!   (growth, a drain's start, a migration from `modulo-sha256`). Before the first list, the
//!   files are where the app wrote them: the placement of the one shard `/`.
//! - A placement closes when a complete rebalance pass under this list's shards ended with every
//!   file at home: `rebalancing.balanced` is these shards (it is recorded only for a pass under
//!   one list, no drain under way, nothing left away, every file compared fully). Passes move
//!   files only while the fleet runs the current list, so no client read an earlier one since.
//!   That closes all of them, while every writer is seen: the plan passes no record otherwise
//!   (`CLOSE_PLACEMENTS`).
//! - A shard that left the list was drained first: placements keep the shards still listed. One
//!   that cannot (a `modulo-sha256` placement that lost a shard), a first version 3 list of a
//!   past the function does not know, and a list too long for its parameter say `everywhere`.

use crate::aws::ssm::STANDARD_VALUE_LIMIT;
use crate::state::rebalancing::ShardSet;
use efs_router::list::{MountTargetList, Strategy, Target};
use efs_router::placement::{Everywhere, Open, Placement};
use std::collections::BTreeSet;

/// What the plan knows of the writers, for closing the placements (`CLOSE_PLACEMENTS`).
#[derive(Debug, Clone, Copy)]
pub(super) enum Writers<'a> {
    /// Every writer is seen: a clean pass over these shards (the rebalance's record, if any)
    /// closes the placements.
    Seen(Option<&'a ShardSet>),
    /// A writer may be unseen (a task that reports nothing, ECS's tasks unknown, or
    /// `ecs-may-hide-files` without the opt-in): nothing closes, and `/` stays open, closed or
    /// not, for the app on plain paths may be one, writing every path under `/` (after a
    /// close too). A miss looks in one more directory while it lasts.
    MayBeUnseen,
}

/// `list` with the placements open once it is published in place of `published`.
pub(super) fn settle(
    mut list: MountTargetList,
    published: Option<&MountTargetList>,
    writers: Writers,
    read_v3: bool,
) -> MountTargetList {
    let was_v3 = published.is_some_and(|p| p.open.is_some());
    if !was_v3 && !read_v3 {
        list.open = None;
        return list;
    }
    let everywhere = Open::Everywhere(Everywhere::Everywhere);
    let closed = match writers {
        Writers::Seen(balanced) => balanced.is_some() && ShardSet::of(&list).as_ref() == balanced,
        Writers::MayBeUnseen => false,
    };
    let mut open = match closed {
        true => Open::Placements(Vec::new()),
        false => opened(&list, published).unwrap_or(everywhere.clone()),
    };
    if let (Writers::MayBeUnseen, Open::Placements(placements)) = (writers, &mut open) {
        let first = first_placement();
        if list.placement() != first && !placements.contains(&first) {
            placements.push(first);
        }
    }
    list.open = Some(open);
    if list.to_json().len() > STANDARD_VALUE_LIMIT {
        list.open = Some(everywhere);
    }
    list
}

/// The placements open under `list` after `published`; `None` when not known.
fn opened(list: &MountTargetList, published: Option<&MountTargetList>) -> Option<Open> {
    let (mut open, before) = match published {
        Some(p) => match &p.open {
            Some(Open::Placements(open)) => (open.clone(), p.placement()),
            // Earlier forms say nothing of where files were put.
            Some(Open::Everywhere(_)) | None => return None,
        },
        None => (Vec::new(), first_placement()),
    };
    let now = list.placement();
    if before != now && !open.contains(&before) {
        open.push(before);
    }
    let roots: BTreeSet<String> = list.shards().into_iter().map(|t| t.root).collect();
    let mut kept = Vec::new();
    for p in open {
        let p = p.within(|r| roots.contains(r))?;
        if p != now && !p.targets.is_empty() && !kept.contains(&p) {
            kept.push(p);
        }
    }
    Some(Open::Placements(kept))
}

/// Where the app put its files before any list: the one shard `/`.
fn first_placement() -> Placement {
    Placement::of(Strategy::Rendezvous, &[Target::new("", "", "/")])
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::state::rebalancing::tests::list;
    use efs_router::{Layout, Router};
    use std::path::Path;

    fn everywhere() -> Option<Open> {
        Some(Open::Everywhere(Everywhere::Everywhere))
    }

    /// The placements of `lists` (each a `(root, az id, shards)` rendezvous list).
    fn placements(lists: &[&MountTargetList]) -> Option<Open> {
        Some(Open::Placements(
            lists.iter().map(|l| l.placement()).collect(),
        ))
    }

    /// Every writer seen, no pass recorded.
    fn seen() -> Writers<'static> {
        Writers::Seen(None)
    }

    fn slash() -> MountTargetList {
        list(&[("/", "use1-az1", 1)])
    }

    #[test]
    fn each_change_of_the_shards_opens_the_placement_it_replaces() {
        let two = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
        let four = list(&[("/", "use1-az1", 2), ("/shards/use1-az2", "use1-az2", 2)]);
        // Not every client reads version 3: the earlier forms, as before.
        assert_eq!(settle(two.clone(), None, seen(), false).open, None);
        // The first list: the app's files are in `/`.
        let first = settle(two.clone(), None, seen(), true);
        assert_eq!(first.open, placements(&[&slash()]));
        assert_eq!(settle(slash(), None, seen(), true).open, placements(&[]));
        // Growth opens the list it replaces, and keeps what was open.
        let grown = settle(four.clone(), Some(&first), seen(), false);
        assert_eq!(grown.open, placements(&[&slash(), &two]));
        // A drain's start opens the list with that shard active.
        let mut draining = four.clone();
        draining.mount_targets[1].draining_shards = 1;
        let drain = settle(draining.clone(), Some(&grown), seen(), true);
        assert_eq!(drain.open, placements(&[&slash(), &two, &four]));
        // The shard drained and left the list: each placement keeps the shards still listed,
        // and one that became the list's own is closed.
        let three = list(&[("/", "use1-az1", 2), ("/shards/use1-az2", "use1-az2", 1)]);
        let unlisted = settle(three.clone(), Some(&drain), seen(), true);
        assert_eq!(unlisted.open, placements(&[&slash(), &two]));
        // A pass over these shards left every file at home: all closed.
        let balanced = ShardSet::of(&three);
        let closed = settle(
            three.clone(),
            Some(&unlisted),
            Writers::Seen(balanced.as_ref()),
            true,
        );
        assert_eq!(closed.open, placements(&[]));
        // A record of other shards closes nothing.
        let other = ShardSet::of(&two);
        assert_ne!(
            settle(three, Some(&unlisted), Writers::Seen(other.as_ref()), true).open,
            placements(&[])
        );
    }

    #[test]
    fn while_a_writer_may_be_unseen_misses_look_in_the_first_shard() {
        let unseen = Writers::MayBeUnseen;
        let two = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
        let first = settle(two.clone(), None, seen(), true);
        let balanced = ShardSet::of(&two);
        let closed = settle(
            two.clone(),
            Some(&first),
            Writers::Seen(balanced.as_ref()),
            true,
        );
        assert_eq!(closed.open, placements(&[]));
        // An unseen writer (the app on plain paths) puts every path under `/`.
        let reopened = settle(two.clone(), Some(&closed), unseen, true);
        assert_eq!(reopened.open, placements(&[&slash()]));
        // Open already, it is not named twice; a list of `/` alone is its own placement.
        assert_eq!(
            settle(two.clone(), Some(&reopened), unseen, true).open,
            reopened.open
        );
        let alone = settle(slash(), None, unseen, true);
        assert_eq!(alone.open, placements(&[]));
        // The earlier forms and `everywhere` look in `/` already, and stay as they are, a list
        // too long for its parameter too (its run fails on it, naming the parameter).
        assert_eq!(settle(two.clone(), None, unseen, false).open, None);
        let mut long = two.clone();
        for k in 0..200 {
            long.mount_targets
                .push(Target::new(format!("fsmt-{k}"), "10.0.0.9", "/"));
        }
        assert!(long.to_json().len() > STANDARD_VALUE_LIMIT);
        assert_eq!(settle(long, None, unseen, false).open, None);
        let unknown = settle(two.clone(), Some(&two), unseen, true);
        assert_eq!(unknown.open, everywhere());
    }

    #[test]
    fn what_is_not_known_is_looked_for_everywhere() {
        let two = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
        // A list of an earlier form: where its files went is not known, until a pass.
        assert_eq!(
            settle(two.clone(), Some(&two), seen(), true).open,
            everywhere()
        );
        let balanced = ShardSet::of(&two);
        assert_eq!(
            settle(
                two.clone(),
                Some(&two),
                Writers::Seen(balanced.as_ref()),
                true
            )
            .open,
            placements(&[])
        );
        // A version 3 list stays so, whoever reads.
        let v3 = settle(two.clone(), None, seen(), true);
        assert!(settle(two.clone(), Some(&v3), seen(), false).open.is_some());
        // A modulo placement that lost a shard would home the rest elsewhere.
        let mut modulo = MountTargetList::new(Strategy::ModuloSha256);
        for (i, root) in ["/", "/", "/"].iter().enumerate() {
            modulo
                .mount_targets
                .push(Target::new(format!("fsmt-{i}"), "10.0.0.1", *root));
        }
        let mut migrated = two.clone();
        migrated.open = Some(Open::Placements(vec![Placement::of(
            Strategy::ModuloSha256,
            &[
                Target::new("a", "x", "/"),
                Target::new("b", "x", "/shards/use1-az2"),
            ],
        )]));
        let shrunk = slash();
        assert_eq!(
            settle(shrunk, Some(&migrated), seen(), true).open,
            everywhere()
        );
        // Too long for the parameter: everywhere.
        let mut long = two.clone();
        long.open = Some(Open::Placements(
            (0..200)
                .map(|k| {
                    Placement::of(
                        Strategy::Rendezvous,
                        &[Target {
                            az_id: Some("use1-az2".into()),
                            shards: k + 2,
                            ..Target::new("b", "x", "/shards/use1-az2")
                        }],
                    )
                })
                .collect(),
        ));
        let mut wide = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 250)]);
        wide.open = None;
        assert_eq!(settle(wide, Some(&long), seen(), true).open, everywhere());
    }

    /// A router on `list` as published (its text parsed back) over `mount`.
    pub(in crate::plan) fn router(list: &MountTargetList, mount: &Path) -> Router {
        let parsed = MountTargetList::from_json(&list.to_json()).unwrap();
        Router::new(parsed, Layout::single_mount(mount)).unwrap()
    }

    /// For each reason a file is away from home, a router on the published list finds it,
    /// and a miss looks nowhere but home and the open placements' homes.
    #[test]
    fn a_miss_finds_a_file_put_by_each_open_placement() {
        let mount = tempfile::tempdir().unwrap();
        let two = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
        let four = list(&[("/", "use1-az1", 2), ("/shards/use1-az2", "use1-az2", 2)]);
        let mut draining = four.clone();
        draining.mount_targets[0].draining_shards = 1;
        let mut modulo = MountTargetList::new(Strategy::ModuloSha256);
        modulo.mount_targets = two.mount_targets.clone();
        // (what wrote the files, the list published before, the list published now)
        let cases: [(
            &str,
            MountTargetList,
            Option<MountTargetList>,
            MountTargetList,
        ); 4] = [
            ("the app before the router", slash(), None, two.clone()),
            (
                "an old list's writer",
                two.clone(),
                Some(settle(two.clone(), None, seen(), true)),
                four.clone(),
            ),
            (
                "a shard now draining",
                four.clone(),
                Some(settle(
                    four.clone(),
                    Some(&settle(two.clone(), None, seen(), true)),
                    seen(),
                    true,
                )),
                draining,
            ),
            (
                "a list migrated from modulo",
                modulo.clone(),
                Some(settle(modulo.clone(), None, seen(), true)),
                two.clone(),
            ),
        ];
        for (who, writer, published, next) in cases {
            let now = settle(next, published.as_ref(), seen(), true);
            let Some(Open::Placements(open)) = &now.open else {
                panic!("{who}: {:?}", now.open)
            };
            let (old, new) = (router(&writer, mount.path()), router(&now, mount.path()));
            let mut away = 0;
            for i in 0..40 {
                let path = format!("data/{who}/{i}.json");
                old.write(&path, b"x").unwrap();
                away +=
                    (old.resolve(&path).unwrap().real != new.resolve(&path).unwrap().real) as u32;
                assert!(new.exists(&path).unwrap(), "{who}: {path} not found");
                assert_eq!(new.read_with_fallback(&path).unwrap().data, b"x");
                // A path that is nowhere: home, and where each open placement homes it.
                let missing = format!("data/{who}/missing-{i}.json");
                let home = new.resolve(&missing).unwrap();
                assert!(new.miss_shards(&home).len() <= open.len(), "{who}");
                assert!(!new.exists(&missing).unwrap());
            }
            assert!(away > 0, "{who}: no file was away from home");
        }
    }
}
