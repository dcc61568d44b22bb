//! Tasks ECS hides from DescribeServices: created before the publish and not stopped yet, they
//! hold every move and deletion; created after it, or stopped, they do not.

use super::*;
use crate::observed::EcsTask;

/// A task of `group`, created at `created` (the list was published at t=100).
fn with_tasks(mut o: Observed, tasks: Vec<EcsTask>) -> Observed {
    o.tasks = tasks;
    o
}

fn held(p: &Plan) -> Vec<OldTask> {
    match &p.decision {
        Decision::Wait(Wait::ForTasks { tasks, .. }) => tasks.clone(),
        _ => Vec::new(),
    }
}

fn moves_or_deletes(p: &Plan) -> bool {
    p.steps
        .iter()
        .any(|s| matches!(s, Step::MoveFiles { .. } | Step::DeleteMountTarget { .. }))
}

#[test]
fn a_stopping_task_holds_a_drain_and_a_deletion() {
    for o in [draining_c(100, 10, 5), unlisted_c(100, 10)] {
        let o = with_tasks(
            o,
            vec![task("t1", "service:app", "STOPPING", "STOPPED", 50)],
        );
        let p = plan(&o, &policy());
        assert_eq!(p.decision.name(), "wait_for_tasks");
        assert_eq!(
            held(&p),
            [OldTask {
                id: "t1".into(),
                group: "service:app".into(),
                last_status: "STOPPING".into(),
            }]
        );
        assert!(!moves_or_deletes(&p), "{:?}", p.steps);
        assert!(matches!(p.moves_wait, Some(MovesWait::Tasks(_))));
    }
}

#[test]
fn a_deactivating_task_and_a_running_one_of_an_old_deployment_hold_a_drain_too() {
    for (last, desired) in [
        ("DEACTIVATING", "STOPPED"),
        ("DEPROVISIONING", "STOPPED"),
        ("RUNNING", "STOPPED"),
        ("RUNNING", "RUNNING"),
    ] {
        let o = with_tasks(
            draining_c(100, 10, 5),
            vec![task("t1", "service:app", last, desired, 50)],
        );
        let p = plan(&o, &policy());
        assert_eq!(p.decision.name(), "wait_for_tasks", "{last}/{desired}");
        assert!(!moves_or_deletes(&p), "{last}: {:?}", p.steps);
    }
}

#[test]
fn a_task_created_after_the_publish_or_stopped_holds_nothing() {
    for t in [
        // Started by the redeploy that followed the publish, stopping already.
        task("new", "service:app", "STOPPING", "STOPPED", 150),
        task("done", "service:app", "STOPPED", "STOPPED", 50),
    ] {
        let p = plan(
            &with_tasks(draining_c(100, 10, 5), vec![t.clone()]),
            &policy(),
        );
        assert_eq!(p.decision.name(), "move_drained", "{t:?}");
        assert_eq!(p.moves_wait, None);
        let p = plan(&with_tasks(unlisted_c(100, 10), vec![t.clone()]), &policy());
        assert_eq!(p.decision.name(), "delete_drained", "{t:?}");
    }
}

#[test]
fn a_task_created_at_the_publish_or_with_no_time_holds() {
    let mut unknown = task("t?", "", "UNDESCRIBED (no reason)", "", 0);
    (unknown.created_at, unknown.started_at) = (None, None);
    for t in [
        task("same", "service:app", "RUNNING", "RUNNING", 100),
        unknown,
    ] {
        let p = plan(
            &with_tasks(draining_c(100, 10, 5), vec![t.clone()]),
            &policy(),
        );
        assert_eq!(p.decision.name(), "wait_for_tasks", "{t:?}");
    }
}

#[test]
fn a_runtask_client_holds_a_rebalance() {
    // No drain: what a rebalance takes from the plan is whether files may move.
    let o = with_tasks(
        three_shards(100, 10, 5),
        vec![task("batch-1", "family:batch", "RUNNING", "RUNNING", 50)],
    );
    let p = plan(&o, &policy());
    assert_eq!(
        p.moves_wait,
        Some(MovesWait::Tasks(vec![OldTask {
            id: "batch-1".into(),
            group: "family:batch".into(),
            last_status: "RUNNING".into(),
        }]))
    );
    // Growth never waits for the fleet.
    let p = plan(&with_tasks(world(120_000), o.tasks.clone()), &policy());
    assert_eq!(p.decision.name(), "create");
}

#[test]
fn the_services_come_first_then_the_tasks() {
    let mut o = with_tasks(
        draining_c(100, 10, 5),
        vec![task("t1", "service:app", "STOPPING", "STOPPED", 50)],
    );
    o.deployments[0].others_running = 1;
    assert_eq!(plan(&o, &policy()).decision.name(), "wait_for_fleet");
}

#[test]
fn tasks_that_hold_past_the_patience_warn_naming_their_group() {
    let mut o = with_tasks(
        draining_c(100, 10, 5),
        vec![task("t1", "family:batch", "RUNNING", "RUNNING", 50)],
    );
    o.now = When::from_secs(100 + 1801);
    let p = plan(&o, &policy());
    assert!(p.fleet_stuck);
    assert!(p.warnings.iter().any(|w| matches!(
        w,
        Warning::FleetNotConverged { services, .. } if services == &["family:batch"]
    )));
}

#[test]
fn tasks_that_could_not_be_listed_hold_moves_and_deletions_never_growth() {
    for o in [draining_c(100, 10, 5), unlisted_c(100, 10)] {
        let mut o = o;
        o.tasks_unknown = Some("ListTasks throttled".into());
        for client_reports in [ClientReports::Require, ClientReports::EcsMayHideFiles] {
            let p = plan(
                &o,
                &Policy {
                    client_reports,
                    ..policy()
                },
            );
            assert_eq!(p.decision.name(), "wait_for_clients");
            assert!(!moves_or_deletes(&p), "{:?}", p.steps);
            assert!(kinds(&p).contains(&"tasks_unknown"));
        }
    }
    // Files for two shards: the new target is asked for all the same.
    let mut o = world(60_000);
    o.tasks_unknown = Some("ListTasks throttled".into());
    let p = plan(&o, &policy());
    assert_eq!(p.decision.name(), "create");
    // And a list that would need version 2 stays version 1: any task may run an old router.
    let mut o = three_shards(100_000, 50_000, 50_000);
    super::clients::reads_v2(&mut o);
    assert!(plan(&o, &policy()).list.needs_version_2());
    o.tasks_unknown = Some("ListTasks throttled".into());
    let p = plan(&o, &policy());
    assert!(p.list_version_held);
    assert!(!p.list.needs_version_2());
}

// ----------------------------------------------------------------------------- tasks in the AZ

use super::super::tasks::{InUse, TaskInAz};

/// A task of the service created after the publish (it runs the list without c), in `az`.
fn new_task_in(id: &str, az: Option<&str>) -> EcsTask {
    let mut t = task(id, "service:app", "RUNNING", "RUNNING", 150);
    t.az = az.map(str::to_owned);
    t
}

/// ECS trusted alone: a running task without a report holds no move (the report rule is
/// `clients.rs`'s).
fn trusting_ecs() -> Policy {
    Policy {
        client_reports: ClientReports::EcsMayHideFiles,
        ..policy()
    }
}

fn in_use(p: &Plan) -> Option<&InUse> {
    match &p.decision {
        Decision::Drain(Drain::HoldTargetInUse { in_use, .. }) => Some(in_use),
        _ => None,
    }
}

#[test]
fn a_task_in_a_drained_targets_az_holds_its_deletion_with_a_warning() {
    for az in [Some("us-east-1c"), None] {
        let o = with_tasks(unlisted_c(100, 10), vec![new_task_in("t-c", az)]);
        for policy in [
            trusting_ecs(),
            Policy {
                undo: true,
                ..trusting_ecs()
            },
        ] {
            let p = plan(&o, &policy);
            assert_eq!(p.decision.name(), "hold_target_in_use", "{az:?}");
            let held = InUse::Tasks(vec![TaskInAz {
                id: "t-c".into(),
                group: "service:app".into(),
                az: az.map(str::to_owned),
            }]);
            assert_eq!(in_use(&p), Some(&held));
            assert!(!moves_or_deletes(&p), "{:?}", p.steps);
            // The drain stays recorded: the next run asks again.
            assert!(saved(&p).is_none_or(|s| s.draining.contains_key("fsmt-c")));
            let warned = p.warnings.iter().find_map(|w| match w {
                Warning::TargetInUse { id, az, in_use } => Some((id, az, in_use)),
                _ => None,
            });
            assert_eq!(
                warned,
                Some((&"fsmt-c".to_owned(), &"us-east-1c".to_owned(), &held))
            );
        }
    }
}

#[test]
fn a_task_in_another_az_or_stopped_holds_no_deletion() {
    let mut stopped = new_task_in("done", Some("us-east-1c"));
    stopped.last_status = "STOPPED".into();
    for t in [new_task_in("t-b", Some("us-east-1b")), stopped] {
        let p = plan(
            &with_tasks(unlisted_c(100, 10), vec![t.clone()]),
            &trusting_ecs(),
        );
        assert_eq!(p.decision.name(), "delete_drained", "{t:?}");
        assert!(!kinds(&p).contains(&"target_in_use"));
    }
}

#[test]
fn a_task_in_the_az_holds_nothing_before_the_deletion() {
    // The moves and the unlisting go on: only the deletion cuts a mount.
    let t = new_task_in("t-c", Some("us-east-1c"));
    let p = plan(
        &with_tasks(draining_c(100, 10, 5), vec![t.clone()]),
        &trusting_ecs(),
    );
    assert_eq!(p.decision.name(), "move_drained");
    let p = plan(
        &with_tasks(draining_c(100, 10, 0), vec![t]),
        &trusting_ecs(),
    );
    assert_eq!(p.decision.name(), "unlist");
    assert!(!kinds(&p).contains(&"target_in_use"));
}

#[test]
fn tasks_unknown_or_an_unknown_az_count_as_in_use() {
    use super::super::tasks::in_use as target_in_use;
    let mut o = with_tasks(
        unlisted_c(100, 10),
        vec![new_task_in("t-b", Some("us-east-1b"))],
    );
    assert_eq!(target_in_use(&o, "us-east-1c"), None);
    // A target whose AZ is not known: any task may mount through it.
    assert!(target_in_use(&o, "").is_some());
    o.tasks_unknown = Some("ListTasks throttled".into());
    assert_eq!(
        target_in_use(&o, "us-east-1c"),
        Some(InUse::TasksUnknown("ListTasks throttled".into()))
    );
}

#[test]
fn scale_in_drains_a_target_no_task_mounts_through_first() {
    let mut o = three_shards(100, 10, 5);
    o.state.below_since = Some(NOW - 1800);
    // c has the fewest files, and would go first.
    assert_eq!(plan(&o, &trusting_ecs()).decision.name(), "start_drain");
    let drained = |o: &Observed| match plan(o, &trusting_ecs()).decision {
        Decision::ScaleIn(ScaleIn::StartDrain { id, .. }) => id,
        d => panic!("{d:?}"),
    };
    assert_eq!(drained(&o), "fsmt-c");
    // A task runs in c's AZ: b goes first, its AZ free.
    o.tasks = vec![new_task_in("t-c", Some("us-east-1c"))];
    assert_eq!(drained(&o), "fsmt-b");
    // Tasks in both: the fewest files again.
    o.tasks.push(new_task_in("t-b", Some("us-east-1b")));
    assert_eq!(drained(&o), "fsmt-c");
}
