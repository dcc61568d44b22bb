//! The first day beside a running system: an app on plain paths (its tasks report nothing)
//! and a file system with a target in every AZ. Nothing that moves a file, removes a target
//! or needs a newer list form happens until every running task reports; growth goes on; and
//! the shards follow the files, not the targets that happen to exist.

use super::clients::{reads_v2, reporting};
use super::*;
use crate::plan::clients::Why;

/// `o` with the running tasks of an app on plain paths: two of the service, one of a family.
fn plain_app(mut o: Observed) -> Observed {
    o.tasks = vec![
        task("app-1", "service:app", "RUNNING", "RUNNING", NOW - 10),
        task("app-2", "service:app", "RUNNING", "RUNNING", NOW - 10),
        task("batch-1", "family:batch", "RUNNING", "RUNNING", NOW - 10),
    ];
    o
}

fn moves_or_deletes(p: &Plan) -> bool {
    p.steps
        .iter()
        .any(|s| matches!(s, Step::MoveFiles { .. } | Step::DeleteMountTarget { .. }))
}

fn unreported_groups(p: &Plan) -> Vec<(&str, usize)> {
    p.warnings
        .iter()
        .filter_map(|w| match w {
            Warning::ServiceUnreported { group, tasks } => Some((group.as_str(), *tasks)),
            _ => None,
        })
        .collect()
}

#[test]
fn no_report_from_a_services_tasks_holds_moves_and_deletions() {
    // A drain with files to move, and one whose target is ready to go.
    for o in [draining_c(100, 10, 5), unlisted_c(100, 10)] {
        let p = plan(&plain_app(o), &policy());
        assert_eq!(p.decision.name(), "wait_for_clients");
        assert!(!moves_or_deletes(&p), "{:?}", p.steps);
        assert_eq!(p.unreported.len(), 3);
        assert_eq!(
            unreported_groups(&p),
            [("family:batch", 1), ("service:app", 2)]
        );
        // Each silent task is named where the response's `waiting_for` takes its clients.
        let Some(MovesWait::Clients(behind)) = &p.moves_wait else {
            panic!("moves not held by clients: {:?}", p.moves_wait);
        };
        assert_eq!(behind.len(), 3);
        assert!(behind.iter().all(|b| b.why == Why::Unreported));
    }
}

#[test]
fn no_report_from_a_services_tasks_holds_list_version_2() {
    // Files for 5 shards on 3 targets, and a reporting client that reads version 2: only the
    // app's silent tasks keep the list at one shard a target.
    let mut o = three_shards(100_000, 50_000, 50_000);
    reads_v2(&mut o);
    let p = plan(&plain_app(o.clone()), &policy());
    assert_eq!(p.decision.name(), "at_capacity");
    assert!(p.list_version_held);
    // The routers hold it, not MAX_SHARDS: the AtCapacity metric and alarm stay quiet.
    assert!(!p.at_capacity);
    assert!(!p.list.needs_version_2());
    // Every running task reports: the list grows past one shard a target.
    let mut o = plain_app(o);
    for id in ["app-1", "app-2", "batch-1"] {
        reporting(&mut o, id, true, &[1, 2], 10);
    }
    let p = plan(&o, &policy());
    assert_eq!(p.decision.name(), "add_shards");
    assert!(p.list.needs_version_2());
    assert_eq!(p.unreported.len(), 0);
    assert!(unreported_groups(&p).is_empty());
}

#[test]
fn growth_goes_on_while_no_task_reports() {
    // Files for two shards and one target: a new target in a free AZ, whoever reports.
    let p = plan(&plain_app(world(60_000)), &policy());
    assert_eq!(p.decision.name(), "create");
    assert!(created(&p).is_some());
    assert_eq!(p.unreported.len(), 3);
}

#[test]
fn tasks_that_report_nothing_do_not_hold_homes_but_an_old_list_does() {
    // Five shards' files on three targets, published as an announcement: the new shards
    // listed draining. The app's tasks report nothing (plain paths, or started after the
    // publish: ECS's task rule holds the others), and the services run the list.
    let mut o = world(200_000);
    add_shard(&mut o, "fsmt-b", 'b', 0);
    add_shard(&mut o, "fsmt-c", 'c', 0);
    reads_v2(&mut o);
    let announced = plan(&o, &policy());
    assert_eq!(announced.homes, Homes::Announced);
    o.parameter = Some(Parameter::new(announced.list.clone(), at(NOW - 10)));
    o.deployments[0].created_at = at(NOW - 5);
    o.reports.files.clear();
    reads_v2(&mut o);
    let mut plain = plain_app(o.clone());
    for t in &mut plain.tasks {
        t.created_at = at(NOW - 2);
    }
    let p = plan(&plain, &policy());
    assert_eq!(p.unreported.len(), 3, "they still hold moves");
    assert_eq!(p.homes, Homes::Switched);
    // A client that reports the list before the announcement holds the switch.
    reporting(&mut o, "eeeeeeeeeeeeeeee", false, &[1, 2], 0);
    let p = plan(&o, &policy());
    assert!(
        matches!(p.homes, Homes::Waiting(MovesWait::Clients(_))),
        "{:?}",
        p.homes
    );
}

/// EFS's usual setup before the function: a target in each of a, b and c, files in `/`, and
/// no list published yet.
fn target_in_every_az(files: u64) -> Observed {
    let mut o = world(files);
    o.mount_targets = vec![
        target("fsmt-a", 'a', LifeCycle::Available),
        target("fsmt-b", 'b', LifeCycle::Available),
        target("fsmt-c", 'c', LifeCycle::Available),
    ];
    o.parameter = None;
    o
}

fn made_dirs(p: &Plan) -> Vec<&str> {
    p.steps
        .iter()
        .filter_map(|s| match s {
            Step::CreateShardDir { root } => Some(root.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn three_targets_and_few_files_give_one_shard() {
    let p = plan(&target_in_every_az(300), &policy());
    assert_eq!(ids_and_roots(&p.list), [("fsmt-a", "/")]);
    assert_eq!(p.current_shards, 1);
    assert_eq!(p.desired_shards, 1);
    assert!(made_dirs(&p).is_empty(), "{:?}", p.steps);
    assert!(created(&p).is_none());
    assert!(!moves_or_deletes(&p));
}

#[test]
fn more_shards_go_first_to_the_targets_that_serve_none() {
    // Files for two shards: the next existing target (by AZ id) takes the second, and no
    // target is created; its directory is made before any list names it.
    let mut o = target_in_every_az(60_000);
    o.parameter = Some(Parameter::new(
        MountTargetList {
            open: None,
            scope: None,
            mount_targets: vec![listed(&o.mount_targets[0], "/")],
            strategy: Strategy::Rendezvous,
        },
        at(100),
    ));
    let p = plan(&o, &policy());
    assert!(created(&p).is_none(), "{:?}", p.steps);
    assert_eq!(made_dirs(&p), ["/shards/use1-az2"]);
    assert_eq!(p.current_shards, 2);
    // The next run sees the directory: the target joins the list; c stays idle.
    o.files.insert("/shards/use1-az2".into(), 0);
    let p = plan(&o, &policy());
    assert_eq!(
        ids_and_roots(&p.list),
        [("fsmt-a", "/"), ("fsmt-b", "/shards/use1-az2")]
    );
    assert!(names(&p).contains(&"publish"));
}
