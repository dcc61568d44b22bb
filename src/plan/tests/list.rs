//! The published list: its order, strategy and entries, and what goes out when.

use super::clients::reads_v2;
use super::*;

#[test]
fn migrate_republishes_a_modulo_list_under_rendezvous() {
    let mut o = world(200_000);
    add_shard(&mut o, "fsmt-b", 'b', 0);
    let original = MountTargetList::from_json(
        r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4"},{"id":"fsmt-b","ip":"10.0.2.4"}]}"#,
    )
    .unwrap();
    o.parameter = Some(Parameter::new(original.clone(), at(100)));
    let migrating = Policy {
        migrate: true,
        ..policy()
    };
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    let p = plan(&o, &migrating);
    assert_eq!(p.decision, Decision::Event(Event::Migrate { entries: 2 }));
    assert_eq!(p.list.strategy, Strategy::Rendezvous);
    let got = ids_and_roots(&p.list);
    assert_eq!(got, [("fsmt-a", "/"), ("fsmt-b", "/shards/use1-az2")]);
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    // Files wait for the fleet to run it; nothing else is decided in that run.
    assert_eq!(p.moves_wait, Some(MovesWait::ListPending));
    // Without the event, the modulo list stays as it is.
    let p = plan(&o, &policy());
    assert_eq!(p.list.strategy, Strategy::ModuloSha256);
    // Once published, the next run grows past the AZs.
    o.parameter.as_mut().unwrap().list = plan(&o, &migrating).list;
    o.files.insert("/shards/use1-az2".into(), 0);
    let p = plan(&o, &policy());
    assert!(
        matches!(
            p.decision,
            Decision::Grow(Grow::Create(_)) | Decision::Grow(Grow::AddShards { .. })
        ),
        "{:?}",
        p.decision
    );
    // A rendezvous list is not migrated again.
    let p2 = plan(&o, &migrating);
    assert!(!matches!(
        p2.decision,
        Decision::Event(Event::Migrate { .. })
    ));
    assert_eq!(kinds(&p2), ["nothing_to_migrate"]);
}

#[test]
fn a_missing_parameter_is_published_and_services_redeployed() {
    let mut o = world(10);
    o.parameter = None;
    let p = plan(&o, &policy());
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert_eq!(p.list.strategy, Strategy::Rendezvous);
    assert_eq!(p.list.mount_targets.len(), 1);
    assert_eq!(p.list.mount_targets[0].root, "/");
    assert_eq!(p.list.mount_targets[0].ip, "10.0.1.4");
}

#[test]
fn a_parameter_newer_than_the_deployment_redeploys_only() {
    let mut o = world(10);
    o.parameter.as_mut().unwrap().last_modified = at(300);
    let p = plan(&o, &policy());
    assert_eq!(names(&p), ["save_state", "force_deployment"]);
}

/// SSM's reads may lag, versioned ones too: only a save's answer shows that the state planned
/// from is the newest. So a plan that changes anything saves it first, unchanged; one that
/// changes nothing writes nothing.
#[test]
fn a_plan_that_changes_anything_saves_the_state_first_even_unchanged() {
    let mut o = world(10);
    assert_eq!(names(&plan(&o, &policy())), Vec::<&str>::new());
    o.parameter.as_mut().unwrap().last_modified = at(300);
    let p = plan(&o, &policy());
    assert_eq!(p.steps[0], Step::SaveState(Box::new(o.state.clone())));
}

#[test]
fn the_original_form_keeps_its_order_and_strategy_and_gains_the_new_target() {
    let mut o = world(10);
    let b = target("fsmt-b", 'b', LifeCycle::Available);
    o.mount_targets.insert(0, b);
    // As the original wrote it: a then b, two fields each, root `/` for both.
    o.parameter = Some(Parameter::new(MountTargetList::from_json(
            r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4"},{"id":"fsmt-b","ip":"10.0.2.4"}]}"#,
        )
        .unwrap(), at(100)));
    o.mount_targets
        .push(target("fsmt-c", 'c', LifeCycle::Available));
    o.files.insert("/shards/use1-az3".into(), 0);
    let p = plan(&o, &policy());
    let ids: Vec<&str> = p.list.mount_targets.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(ids, ["fsmt-a", "fsmt-b", "fsmt-c"]);
    let roots: Vec<&str> = p
        .list
        .mount_targets
        .iter()
        .map(|t| t.root.as_str())
        .collect();
    assert_eq!(roots, ["/", "/", "/shards/use1-az3"]);
    assert_eq!(p.list.strategy, Strategy::ModuloSha256);
    // `/` is counted once although two targets share it.
    assert_eq!(p.file_count, 10);
    // 10 files and 3 targets: the scale-in clock starts too (only fsmt-c may ever go).
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
}

#[test]
fn a_recreated_target_keeps_its_shard_and_place() {
    let mut o = world(10);
    add_shard(&mut o, "fsmt-b", 'b', 7);
    add_shard(&mut o, "fsmt-c", 'c', 3);
    o.mount_targets.retain(|t| t.id != "fsmt-b");
    o.mount_targets.push(MountTarget {
        id: "fsmt-b2".into(),
        ip: Some("10.0.2.9".into()),
        ..target("fsmt-b2", 'b', LifeCycle::Available)
    });
    let p = plan(&o, &policy());
    let got = ids_and_roots(&p.list);
    assert_eq!(
        got,
        [
            ("fsmt-a", "/"),
            ("fsmt-b2", "/shards/use1-az2"),
            ("fsmt-c", "/shards/use1-az3")
        ]
    );
    assert_eq!(p.files_per_target["fsmt-b2"], 7);
    assert_eq!(p.files_per_shard["/shards/use1-az2"], 7);
}

#[test]
fn a_target_in_error_holds_its_az_but_is_not_published() {
    let mut o = world(120_000);
    o.mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Error));
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    let p = plan(&o, &policy());
    assert_eq!(p.current, 1);
    assert_eq!(created(&p).unwrap().az_id, "use1-az3");
    assert!(!p.list.mount_targets.iter().any(|t| t.id == "fsmt-b"));
    assert_eq!(
        p.warnings,
        [Warning::TargetNotServing {
            id: "fsmt-b".into(),
            az: "us-east-1b".into(),
            state: "error".into()
        }]
    );
}

#[test]
fn a_run_that_died_after_creating_is_finished_without_a_second_target() {
    // Created in b and its directory made, then the run died before publishing.
    let mut o = world(61_000);
    o.mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Available));
    o.files.insert("/shards/use1-az2".into(), 0);
    let p = plan(&o, &policy());
    assert!(created(&p).is_none());
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert_eq!(p.list.mount_targets[1].root, "/shards/use1-az2");
}

#[test]
fn a_pre_existing_second_target_gets_a_shard_directory_before_it_is_published() {
    // Few files: the second target serves no shard, and nothing is made for it.
    let mut o = world(10);
    o.parameter = None;
    o.mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Available));
    let p = plan(&o, &policy());
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert_eq!(ids_and_roots(&p.list), [("fsmt-a", "/")]);
    // Files for two shards: it takes the second, its directory made before any list names it.
    o.files.insert("/".into(), 60_000);
    let p = plan(&o, &policy());
    assert_eq!(
        names(&p),
        [
            "save_state",
            "create_shard_directory",
            "publish",
            "force_deployment"
        ]
    );
    assert_eq!(
        p.steps[1],
        Step::CreateShardDir {
            root: "/shards/use1-az2".into()
        }
    );
}

#[test]
fn a_failed_rollout_is_a_warning() {
    let mut o = world(10);
    o.deployments[0].rollout_failed = Some("tasks failed to start".into());
    let p = plan(&o, &policy());
    assert_eq!(
        p.warnings,
        [
            Warning::RolloutFailed {
                service: "app".into(),
                why: "tasks failed to start".into()
            },
            // Its tasks run the list published long ago, and a failed rollout never ends.
            Warning::FleetNotConverged {
                services: vec!["app".into()],
                age: NOW - 100
            }
        ]
    );
}

#[test]
fn an_updating_target_keeps_its_place() {
    let mut o = three_shards(100, 10, 5);
    o.mount_targets[1].state = LifeCycle::Updating;
    let p = plan(&o, &policy());
    assert_eq!(p.list, o.parameter.as_ref().unwrap().list);
    assert!(!p.steps.iter().any(|s| matches!(s, Step::Publish { .. })));
}

#[test]
fn a_modulo_list_never_loses_an_entry() {
    let mut o = three_shards(100, 10, 5);
    o.parameter.as_mut().unwrap().list.strategy = Strategy::ModuloSha256;
    let zero = Policy {
        scale_in_cooldown_secs: 0,
        ..policy()
    };
    let p = plan(&o, &zero);
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::Hold(Hold::ModuloList))
    );
    let gone = o.mount_targets.remove(2);
    o.state.missing.insert(gone.id.clone(), NOW - 300);
    let p = plan(&o, &zero);
    assert_eq!(p.list.mount_targets.len(), 3);
    assert_eq!(draining_id(&p), None);
}
