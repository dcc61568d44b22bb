//! Homes change in two publishes, so that no client misses what another writes.
//!
//! A list knows the placements before it, never the lists after it. Were homes to change at
//! once (growth, a drain's start, a migration), a task still on the list before would miss
//! every file a task on the new list writes at a home it does not know: `exists` false, a read
//! `NotFound`, `create` a second copy. So a change of homes first goes out as an
//! *announcement*: the published list with homes unchanged, naming every shard of the next
//! list (one it did not name is listed draining: nothing is routed there, every miss of a
//! version 1 or 2 list looks there) and, on a version 3 list, the next list's placement open
//! (a miss looks at the path's home there). Homes switch once the fleet runs the announcement
//! by the rule moves use ([`super::fleet::Fleet::moves_wait`]); after the fleet's patience
//! they switch anyway, with a warning that names whom the hole reopens for.
//!
//! It is level-triggered, like the rest of the plan: the published list itself says whether
//! it announces the next one, so a run that died between the two publishes is finished by the
//! next. docs/data-plane.md, "When homes change", says what it costs.

use super::fleet::{MovesWait, FLEET_PATIENCE_SECS};
use crate::aws::ssm::STANDARD_VALUE_LIMIT;
use efs_router::list::{MountTargetList, Target};
use efs_router::placement::{Everywhere, Open, Placement};
use std::collections::BTreeMap;

/// Where the homes of the list a run publishes stand against the published one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Homes {
    /// The next list homes every path where the published one does: published as it is.
    Kept,
    /// Homes change: the announcement goes out first, with homes unchanged.
    Announced,
    /// The published list announces the next one; the fleet does not run it yet.
    Waiting(MovesWait),
    /// The fleet runs the announcement: homes switch.
    Switched,
    /// The fleet still did not run the announcement after its patience: homes switch, and a
    /// client named here misses what the new homes receive until it is replaced.
    SwitchedEarly(MovesWait),
}

impl Homes {
    pub const NAMES: [&'static str; 5] =
        ["kept", "announced", "waiting", "switched", "switched_early"];

    /// The name the response gives it (`homes`).
    pub fn name(&self) -> &'static str {
        let i = match self {
            Homes::Kept => 0,
            Homes::Announced => 1,
            Homes::Waiting(_) => 2,
            Homes::Switched => 3,
            Homes::SwitchedEarly(_) => 4,
        };
        Homes::NAMES[i]
    }
}

/// The list to publish in place of `published`, when `next` is the list the run arrived at:
/// `next` itself when homes do not change or the fleet runs its announcement (or has had its
/// patience: `age`, seconds since the publish), else its announcement. `fleet` is why the
/// fleet does not run the published list yet (`None`: it does).
pub(super) fn stage(
    next: MountTargetList,
    published: Option<&MountTargetList>,
    fleet: Option<MovesWait>,
    age: Option<u64>,
) -> (MountTargetList, Homes) {
    let Some(published) = published else {
        // No list yet: no client routes, none can miss.
        return (next, Homes::Kept);
    };
    if routes_alike(&next.placement(), &published.placement()) {
        return (next, Homes::Kept);
    }
    let announcement = announcing(&next, published);
    if announcement != *published {
        return (announcement, Homes::Announced);
    }
    // Every shard of the next list is listed already, and (unless placements are open) a miss
    // looks in every listed shard: only a shard the published list keeps from routing (an
    // announced one) may be unknown to an older list, so only then is the fleet waited for.
    let placements = matches!(published.open, Some(Open::Placements(_)));
    if !placements && !takes_up(published, &next) {
        return (next, Homes::Switched);
    }
    match fleet {
        None => (next, Homes::Switched),
        Some(wait) if age.is_some_and(|a| a > FLEET_PATIENCE_SECS) => {
            (next, Homes::SwitchedEarly(wait))
        }
        Some(wait) => (announcement, Homes::Waiting(wait)),
    }
}

/// Two placements that home every path in the same directory: equal, or each of one root
/// alone, the same (a `modulo-sha256` list of targets that all serve `/` homes every path in
/// `/`, as a rendezvous list of `/` alone does).
fn routes_alike(a: &Placement, b: &Placement) -> bool {
    let one_root = |p: &Placement| {
        let roots = p.roots();
        let first = roots.first().cloned();
        first.filter(|r| roots.iter().all(|x| x == r))
    };
    a == b || one_root(a).is_some_and(|r| one_root(b) == Some(r))
}

/// Whether `next` routes to a shard other than `/` that `published` lists draining (by root).
fn takes_up(published: &MountTargetList, next: &MountTargetList) -> bool {
    let draining = |l: &MountTargetList| -> Vec<String> {
        l.shards()
            .into_iter()
            .filter(|s| s.draining)
            .map(|s| s.root)
            .collect()
    };
    let (before, after) = (draining(published), draining(next));
    // `/` is in every list ever published, so no client can miss what the next list homes
    // there (a draining mark on it is someone else's edit). Any other shard may be new to a
    // list older than the announcement, whatever its directory already holds.
    before.iter().any(|r| r != "/" && !after.contains(r))
}

/// `next` with homes as `published` has them: each shard `published` does not serve marked
/// draining (a target it does not list, or lists draining, drains whole; shards a target
/// gained drain as its last), each it serves not draining; and on a version 3 list, `next`'s
/// placement open. A list too long for its parameter looks everywhere instead.
fn announcing(next: &MountTargetList, published: &MountTargetList) -> MountTargetList {
    let mut out = next.clone();
    for e in &mut out.mount_targets {
        // By root: a target re-created in its AZ serves its predecessor's shards.
        match published.mount_targets.iter().find(|p| p.root == e.root) {
            Some(p) if !p.draining => {
                let served = (p.shards.max(1) - p.draining_shards).min(e.shards.max(1));
                e.draining = false;
                e.draining_shards = e.shards.max(1) - served;
            }
            _ => {
                e.draining = true;
                e.draining_shards = 0;
            }
        }
    }
    out.open = match &next.open {
        Some(Open::Placements(open)) => {
            let own = out.placement();
            let mut open: Vec<Placement> = open.iter().filter(|p| **p != own).cloned().collect();
            let coming = next.placement();
            if !open.contains(&coming) {
                open.push(coming);
            }
            Some(Open::Placements(open))
        }
        other => other.clone(),
    };
    if out.open.is_some() && out.to_json().len() > STANDARD_VALUE_LIMIT {
        out.open = Some(Open::Everywhere(Everywhere::Everywhere));
    }
    out
}

/// Whether the draining mark of `t` in the published list may be an announcement's: every
/// shard it marks holds no file (nothing routes to an announced shard before homes switch).
/// A mark on a shard that holds files is someone else's.
pub(super) fn announces(t: &Target, files: &BTreeMap<String, u64>) -> bool {
    let roots = t.shard_roots();
    let marked = match t.draining {
        true => &roots[..],
        false => &roots[roots.len() - (t.draining_shards as usize).min(roots.len())..],
    };
    !marked.is_empty() && marked.iter().all(|r| files.get(r).is_none_or(|n| *n == 0))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::placements::tests::router;
    use crate::state::rebalancing::tests::list;
    use efs_router::list::Strategy;

    fn v3(l: MountTargetList, open: Vec<Placement>) -> MountTargetList {
        MountTargetList {
            open: Some(Open::Placements(open)),
            ..l
        }
    }

    fn patience() -> Option<u64> {
        Some(FLEET_PATIENCE_SECS + 1)
    }

    #[test]
    fn growth_is_announced_then_switched_once_the_fleet_runs_it() {
        let two = v3(
            list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]),
            vec![],
        );
        let mut three = list(&[
            ("/", "use1-az1", 2),
            ("/shards/use1-az2", "use1-az2", 1),
            ("/shards/use1-az3", "use1-az3", 1),
        ]);
        three.open = Some(Open::Placements(vec![two.placement()]));
        let (announced, homes) = stage(three.clone(), Some(&two), None, Some(0));
        assert_eq!(homes, Homes::Announced);
        // Homes as before; every new shard listed, draining; the next placement open.
        assert_eq!(announced.placement(), two.placement());
        assert_eq!(announced.shard_count(), three.shard_count());
        assert!(announced.mount_targets[2].draining);
        assert_eq!(announced.mount_targets[0].draining_shards, 1);
        assert_eq!(
            announced.open,
            Some(Open::Placements(vec![three.placement()]))
        );
        // The next run finds it published: it waits for the fleet, then switches.
        let mut again = three.clone();
        again.open = Some(Open::Placements(vec![two.placement()]));
        let wait = MovesWait::Fleet(vec!["app".into()]);
        let (kept, homes) = stage(
            again.clone(),
            Some(&announced),
            Some(wait.clone()),
            Some(60),
        );
        assert_eq!(
            (kept, homes),
            (announced.clone(), Homes::Waiting(wait.clone()))
        );
        let (switched, homes) = stage(again.clone(), Some(&announced), None, Some(60));
        assert_eq!((switched, homes), (again.clone(), Homes::Switched));
        let (early, homes) = stage(
            again.clone(),
            Some(&announced),
            Some(wait.clone()),
            patience(),
        );
        assert_eq!((early, homes), (again, Homes::SwitchedEarly(wait)));
    }

    #[test]
    fn what_keeps_homes_goes_out_as_it_is() {
        let two = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
        assert_eq!(stage(two.clone(), None, None, None).1, Homes::Kept);
        let mut refreshed = two.clone();
        refreshed.mount_targets[1].ip = "10.0.9.9".into();
        assert_eq!(stage(refreshed, Some(&two), None, None).1, Homes::Kept);
        // A modulo list whose targets all serve `/` homes every path in `/`, as `/` alone does.
        let mut modulo = MountTargetList::new(Strategy::ModuloSha256);
        for i in 0..3 {
            modulo
                .mount_targets
                .push(Target::new(format!("fsmt-{i}"), "10.0.0.1", "/"));
        }
        let slash = list(&[("/", "use1-az1", 1)]);
        assert!(routes_alike(&modulo.placement(), &slash.placement()));
        assert!(!routes_alike(&two.placement(), &slash.placement()));
    }

    #[test]
    fn a_drain_start_on_version_1_needs_no_announcement_but_on_version_3_does() {
        let two = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
        let mut draining = two.clone();
        draining.mount_targets[1].draining = true;
        // Version 1: every shard is listed already and a miss looks in all of them, so the
        // fleet is not waited for.
        let wait = Some(MovesWait::Fleet(vec!["app".into()]));
        assert_eq!(
            stage(draining.clone(), Some(&two), wait, None).1,
            Homes::Switched
        );
        let two3 = v3(two.clone(), vec![]);
        let mut drain3 = draining.clone();
        drain3.open = Some(Open::Placements(vec![two.placement()]));
        let (announced, homes) = stage(drain3.clone(), Some(&two3), None, None);
        assert_eq!(homes, Homes::Announced);
        assert!(!announced.mount_targets[1].draining);
        assert_eq!(
            announced.open,
            Some(Open::Placements(vec![drain3.placement()]))
        );
    }

    #[test]
    fn on_version_1_a_shard_taken_up_waits_for_the_fleet_unless_it_is_slash() {
        let two = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
        let mut announced = two.clone();
        announced.mount_targets[1].draining = true;
        let wait = || Some(MovesWait::Fleet(vec!["app".into()]));
        // The second shard may be new to a list older than the announcement, whether or not
        // its directory already holds files (a directory left from before): wait.
        assert!(matches!(
            stage(two.clone(), Some(&announced), wait(), None).1,
            Homes::Waiting(_)
        ));
        // `/` is in every list: a draining mark on it, someone's edit, is dropped at once.
        let mut marked = two.clone();
        marked.mount_targets[0].draining = true;
        assert_eq!(
            stage(two.clone(), Some(&marked), wait(), None).1,
            Homes::Switched
        );
    }

    /// The rollout hole, closed: a task on the announcement finds, and does not write again,
    /// what a task on the switched list creates; and the other way round.
    #[test]
    fn a_task_on_the_announcement_finds_what_the_next_list_writes() {
        let mount = tempfile::tempdir().unwrap();
        for (version, open) in [(1, None), (3, Some(Open::Placements(vec![])))] {
            let mut one = list(&[("/", "use1-az1", 1)]);
            one.open = open.clone();
            let mut grown = list(&[("/", "use1-az1", 1), ("/shards/use1-az2", "use1-az2", 1)]);
            grown.open = open
                .as_ref()
                .map(|_| Open::Placements(vec![one.placement()]));
            let (announced, homes) = stage(grown.clone(), Some(&one), None, None);
            assert_eq!(homes, Homes::Announced);
            let (switched, _) = stage(grown.clone(), Some(&announced), None, None);
            std::fs::create_dir_all(mount.path().join("shards/use1-az2")).unwrap();
            let (older, newer) = (
                router(&announced, mount.path()),
                router(&switched, mount.path()),
            );
            let mut away = 0;
            for i in 0..200 {
                let path = format!("v{version}/new/{i}.json");
                newer.create(&path, b"new").unwrap();
                away += (older.resolve(&path).unwrap().real != newer.resolve(&path).unwrap().real)
                    as u32;
                assert!(older.exists(&path).unwrap(), "v{version}: {path}");
                assert_eq!(older.read_with_fallback(&path).unwrap().data, b"new");
                assert!(
                    !older.create(&path, b"again").unwrap().created(),
                    "v{version}: {path}"
                );
                let path = format!("v{version}/old/{i}.json");
                older.create(&path, b"old").unwrap();
                assert!(newer.exists(&path).unwrap(), "v{version}: {path}");
                assert!(
                    !newer.create(&path, b"again").unwrap().created(),
                    "v{version}: {path}"
                );
            }
            assert!(away > 50, "v{version}: {away} of 200 homed elsewhere");
        }
    }
}
