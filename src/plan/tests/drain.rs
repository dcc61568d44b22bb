//! Drains: publish, converge, move, publish, converge, delete.

use super::*;

#[test]
fn a_drain_moves_files_first_and_deletes_only_an_empty_shard() {
    let p = plan(&draining_c(100, 10, 5), &policy());
    assert_eq!(names(&p), ["save_state", "move_files"]);
    match &p.steps[1] {
        Step::MoveFiles { root, list } => {
            assert_eq!(root, "/shards/use1-az3");
            assert!(
                list.mount_targets[2].draining,
                "moves route around the draining shard"
            );
        }
        other => panic!("{other:?}"),
    }
    // Empty: first the list goes out without it (the target still exists) ...
    let p = plan(&draining_c(100, 10, 0), &policy());
    assert_eq!(
        p.decision,
        Decision::Drain(Drain::Unlist {
            id: "fsmt-c".into()
        })
    );
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert_eq!(p.list.mount_targets.len(), 2);
    assert!(saved(&p).unwrap().draining["fsmt-c"].unlisted);
    // ... then, once the fleet runs that list, the target goes.
    let p = plan(&unlisted_c(100, 10), &policy());
    assert_eq!(
        p.steps[1..],
        [Step::DeleteMountTarget {
            mount_target_id: "fsmt-c".into()
        }]
    );
    assert_eq!(p.list.mount_targets.len(), 2, "not listed again");
}

#[test]
fn nothing_moves_or_goes_until_the_fleet_runs_the_list() {
    for o in [draining_c(100, 10, 5), unlisted_c(100, 10)] {
        // The service's newest deployment started before the list was published ...
        let mut late = o.clone();
        late.deployments[0].created_at = at(50);
        // ... or an older deployment still has running tasks ...
        let mut old_tasks = o.clone();
        old_tasks.deployments[0].others_running = 2;
        // ... or the rollout failed.
        let mut failed = o.clone();
        failed.deployments[0].rollout_failed = Some("circuit breaker".into());
        for waiting in [late, old_tasks, failed] {
            let p = plan(&waiting, &policy());
            assert!(
                matches!(&p.decision, Decision::Wait(Wait::ForFleet { services, .. }) if services == &["app"]),
                "{:?}",
                p.decision
            );
            assert!(
                !p.steps
                    .iter()
                    .any(|s| matches!(s, Step::MoveFiles { .. } | Step::DeleteMountTarget { .. })),
                "{:?}",
                p.steps
            );
        }
    }
}

#[test]
fn a_drain_saved_but_not_published_publishes_before_anything_moves_or_goes() {
    // The state says c is draining, but the list in SSM does not (its publish failed):
    // the fleet runs that list, so it is published first.
    let mut o = draining_c(100, 10, 5);
    o.parameter.as_mut().unwrap().list.mount_targets[2].draining = false;
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::Wait(Wait::PublishFirst {
            id: "fsmt-c".into()
        })
    );
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert_eq!(draining_id(&p), Some("fsmt-c"));
    // Unlisted in the state, but still published: the list without it goes first, no delete.
    let mut o = unlisted_c(100, 10);
    let listed = draining_c(100, 10, 0).parameter.unwrap().list;
    o.parameter.as_mut().unwrap().list = listed;
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::Wait(Wait::PublishFirst {
            id: "fsmt-c".into()
        })
    );
    assert!(!p
        .steps
        .iter()
        .any(|s| matches!(s, Step::DeleteMountTarget { .. })));
    assert_eq!(p.list.mount_targets.len(), 2);
}

#[test]
fn a_drain_never_ends_on_a_shard_whose_nested_files_remain() {
    // The direct count is 0, but the tree still holds files.
    let mut o = draining_c(100, 10, 0);
    o.tree_has_files.insert("/shards/use1-az3".into(), true);
    let p = plan(&o, &policy());
    assert!(
        matches!(p.decision, Decision::Drain(Drain::MoveDrained { .. })),
        "{:?}",
        p.decision
    );
    // A tree that could not be walked is not known to be empty either.
    o.tree_has_files.clear();
    let p = plan(&o, &policy());
    assert!(
        matches!(p.decision, Decision::Drain(Drain::MoveDrained { .. })),
        "{:?}",
        p.decision
    );
}

#[test]
fn a_draining_mark_the_function_did_not_make_is_removed() {
    // Marked by hand in the list, on the protected first shard: not obeyed.
    let mut o = three_shards(100, 10, 5);
    o.parameter.as_mut().unwrap().list.mount_targets[0].draining = true;
    let p = plan(&o, &policy());
    assert_eq!(draining_id(&p), None);
    assert!(p.steps.iter().any(|s| matches!(s, Step::Publish { .. })));
    assert_eq!(
        p.warnings,
        [Warning::ForeignDrainMark {
            id: "fsmt-a".into()
        }]
    );
}

#[test]
fn a_drain_that_no_rule_allows_any_more_stops() {
    // c became protected while draining.
    let mut o = draining_c(100, 10, 5);
    o.protected_azs.insert("use1-az3".into());
    let p = plan(&o, &policy());
    assert_eq!(draining_id(&p), None);
    assert!(!saved(&p).unwrap().draining.contains_key("fsmt-c"));
    assert!(!p.steps.iter().any(|s| matches!(s, Step::MoveFiles { .. })));
}

#[test]
fn a_target_missing_for_one_run_keeps_its_place_then_drains_as_gone() {
    let mut o = three_shards(100, 10, 5);
    let gone = o.mount_targets.remove(1); // b
    let p = plan(&o, &policy());
    assert_eq!(p.list, o.parameter.as_ref().unwrap().list, "kept as it was");
    assert_eq!(saved(&p).unwrap().missing.get(&gone.id), Some(&NOW));
    // Still missing a run later: its root stays listed, draining, until its files are home.
    o.state = saved(&p).unwrap().clone();
    o.now = When::from_secs(NOW + 300);
    o.tree_has_files.insert("/shards/use1-az2".into(), true);
    let p = plan(&o, &policy());
    assert_eq!(draining_id(&p), Some("fsmt-b"));
    assert_eq!(p.list.mount_targets.len(), 3);
    assert!(saved(&p).unwrap().draining["fsmt-b"].gone);
    assert!(
        !saved(&p).unwrap().created.contains_key("fsmt-b"),
        "forgotten"
    );
}

#[test]
fn the_root_of_a_target_gone_by_hand_drains_then_leaves_and_never_blocks_growth() {
    let mut o = three_shards(100, 10, 5);
    let gone = o.mount_targets.remove(1); // b, deleted by hand two runs ago
    o.state.missing.insert(gone.id.clone(), NOW - 600);
    o.tree_has_files.insert("/shards/use1-az2".into(), true);
    // First the list that marks its root draining goes out ...
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::Wait(Wait::PublishFirst {
            id: "fsmt-b".into()
        })
    );
    assert_eq!(draining_id(&p), Some("fsmt-b"));
    // ... and once the services run it, the files move.
    o.state = saved(&p).unwrap().clone();
    o.parameter.as_mut().unwrap().list = p.list.clone();
    let p = plan(&o, &policy());
    assert!(
        matches!(p.decision, Decision::Drain(Drain::MoveDrained { .. })),
        "{:?}",
        p.decision
    );
    // Emptied: its root leaves the list.
    o.tree_has_files.insert("/shards/use1-az2".into(), false);
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::Drain(Drain::DropGone {
            id: "fsmt-b".into()
        })
    );
    assert_eq!(p.list.mount_targets.len(), 2);
    // Growth meanwhile is not held up by it.
    o.files.insert("/".into(), 200_000);
    o.tree_has_files.insert("/shards/use1-az2".into(), true);
    let p = plan(&o, &policy());
    assert!(
        matches!(p.decision, Decision::Grow(Grow::Create(_))),
        "{:?}",
        p.decision
    );
}

#[test]
fn a_deleted_drained_target_is_forgotten() {
    let mut o = unlisted_c(100, 10);
    o.mount_targets[2].state = LifeCycle::Deleting;
    o.state.missing.insert("fsmt-c".into(), NOW - 300);
    let p = plan(&o, &policy());
    let s = saved(&p).unwrap();
    assert!(!s.draining.contains_key("fsmt-c") && !s.created.contains_key("fsmt-c"));
    assert_eq!(p.list.mount_targets.len(), 2);
    assert_eq!(p.current, 2);
}

#[test]
fn growth_cancels_a_drain() {
    let p = plan(&draining_c(60_000, 30_000, 20_000), &policy());
    assert_eq!(draining_id(&p), None);
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert!(saved(&p).unwrap().draining.is_empty());
    assert_eq!(
        p.decision,
        Decision::Drain(Drain::Cancel {
            id: "fsmt-c".into()
        })
    );
    // Growth that two serving shards can hold does not cancel it.
    let p = plan(&draining_c(60_000, 30_000, 10), &policy());
    assert_eq!(draining_id(&p), Some("fsmt-c"));
}

#[test]
fn a_drain_makes_the_rebalance_forget_what_its_last_pass_balanced_against() {
    // A drain moves files out of their homes under that list: the comparison after growth
    // must not rely on it any more (src/state/comparison.rs).
    let mut o = draining_c(100, 10, 5);
    let balanced =
        crate::state::rebalancing::ShardSet::of(&three_shards(100, 10, 5).parameter.unwrap().list);
    assert!(balanced.is_some());
    o.state.rebalancing.balanced = balanced;
    let p = plan(&o, &policy());
    assert_eq!(names(&p), ["save_state", "move_files"]);
    assert_eq!(saved(&p).unwrap().rebalancing.balanced, None);
    // Without a drain the record stays.
    let mut o = three_shards(100, 10, 5);
    o.state.rebalancing.balanced =
        crate::state::rebalancing::ShardSet::of(&o.parameter.as_ref().unwrap().list);
    let p = plan(&o, &policy());
    let state = saved(&p).unwrap_or(&o.state);
    assert!(state.rebalancing.balanced.is_some());
    assert_eq!(state.rebalancing.balanced, o.state.rebalancing.balanced);
}

#[test]
fn a_drain_started_and_cancelled_between_two_runs_of_a_pass_leaves_it_unclean() {
    use crate::state::rebalancing::{Cursor, Rebalancing};
    let no_cooldown = Policy {
        scale_in_cooldown_secs: 0,
        ..policy()
    };
    let mut o = three_shards(100, 10, 5);
    let list = o.parameter.as_ref().unwrap().list.clone();
    // A pass under way under the list, clean so far: its first run stopped in `/`.
    let at = Cursor {
        root: "/".into(),
        path: "m".into(),
    };
    o.state.rebalancing = Rebalancing::default().after_run(&list, Some(at), true);
    let clean = |s: &State| s.rebalancing.pass.as_ref().map(|p| p.clean);
    assert_eq!(clean(&o.state), Some(true));
    // A reconcile run starts a drain of c: files are homed around c from now on.
    let p = plan(&o, &no_cooldown);
    assert_eq!(p.decision.name(), "start_drain");
    let started = saved(&p).unwrap().clone();
    assert_eq!(clean(&started), Some(false));
    // Growth cancels it before the pass's next run: the list is the one it began under again.
    let mut grown = draining_c(60_000, 30_000, 20_000);
    grown.state.rebalancing = started.rebalancing.clone();
    let p = plan(&grown, &policy());
    assert_eq!(p.decision.name(), "cancel_drain");
    let cancelled = saved(&p).unwrap();
    assert_eq!(clean(cancelled), Some(false));
    // The pass's next run ends it under that list: not recorded, so no placement closes.
    let ended = cancelled.rebalancing.after_run(&list, None, true);
    assert_eq!(ended.balanced, None);
    // A list published during a pass other than the one it began under (a hand edit the
    // function put back, say) leaves it unclean too, though the rebalance never saw it.
    let mut edited = three_shards(100, 10, 5);
    edited.state.rebalancing = o.state.rebalancing.clone();
    edited.parameter.as_mut().unwrap().list.mount_targets[1].root = "/elsewhere".into();
    let p = plan(&edited, &policy());
    assert_eq!(clean(saved(&p).unwrap()), Some(false));
}
