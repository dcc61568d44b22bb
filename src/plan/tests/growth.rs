//! Growth: when a mount target or shards are added, and what bounds them.

use super::clients::reads_v2;
use super::*;

#[test]
fn below_threshold_does_nothing() {
    let p = plan(&world(49_999), &policy());
    assert_eq!((p.needed, p.desired, p.current), (1, 1, 1));
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    assert!(!p.at_capacity);
    assert_eq!(p.files_per_shard["/"], 49_999);
    assert_eq!(p.files_per_target["fsmt-a"], 49_999);
}

#[test]
fn exactly_at_threshold_is_still_one() {
    let p = plan(&world(50_000), &policy());
    assert_eq!(p.desired, 1);
    assert!(p.steps.is_empty());
}

#[test]
fn first_crossing_creates_one_in_the_first_free_az() {
    let p = plan(&world(61_234), &policy());
    assert_eq!(p.desired, 2);
    assert_eq!(names(&p), ["create_shard_directory", "create_mount_target"]);
    let new = created(&p).unwrap();
    assert_eq!(
        (new.subnet_id.as_str(), new.az_id.as_str()),
        ("subnet-b", "use1-az2")
    );
    assert_eq!(new.root, "/shards/use1-az2");
    assert_eq!(new.security_groups, SecurityGroups::SameAs("fsmt-a".into()));
    assert!(
        matches!(p.decision, Decision::Grow(Grow::Create(_))),
        "{:?}",
        p.decision
    );
}

#[test]
fn the_trigger_stays_true_after_a_scale_out_and_nothing_happens() {
    let mut o = world(30_000);
    add_shard(&mut o, "fsmt-b", 'b', 30_000);
    let p = plan(&o, &policy());
    assert_eq!((p.file_count, p.desired, p.current), (60_000, 2, 2));
    assert!(p.steps.is_empty(), "{:?}", p.steps);
}

/// Three targets, one in each AZ, 200,000 files: more shards wanted than targets can be.
fn azs_exhausted() -> Observed {
    let mut o = world(100_000);
    add_shard(&mut o, "fsmt-b", 'b', 50_000);
    add_shard(&mut o, "fsmt-c", 'c', 50_000);
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    o
}

#[test]
fn azs_exhausted_new_shards_go_on_the_existing_targets() {
    let p = plan(&azs_exhausted(), &policy());
    // 200,000 files at 49,113 a shard on average: 5 shards on the 3 targets.
    assert_eq!(
        (p.needed, p.desired_shards, p.desired, p.usable_azs),
        (5, 5, 3, 3)
    );
    assert!(!p.at_capacity);
    assert!(created(&p).is_none());
    assert_eq!(p.decision, Decision::Grow(Grow::AddShards { added: 2 }));
    // Announced first: listed, draining, homes unchanged.
    assert_eq!(p.homes, Homes::Announced);
    assert_eq!(
        shard_counts(&p.list),
        [("fsmt-a", 2, 1), ("fsmt-b", 2, 1), ("fsmt-c", 1, 0)]
    );
    // Their directories are made before the list that names them goes out.
    assert_eq!(
        names(&p),
        [
            "save_state",
            "create_shard_directory",
            "create_shard_directory",
            "publish",
            "force_deployment"
        ]
    );
    assert!(p.steps.contains(&Step::CreateShardDir {
        root: "/shards/use1-az1.1".into()
    }));
    assert!(p.steps.contains(&Step::CreateShardDir {
        root: "/shards/use1-az2.1".into()
    }));
    assert!(p.list.to_json().contains(r#""version":2"#));
    // A scale-out like a new target: the scale-in clock starts again.
    assert_eq!(saved(&p).unwrap().last_scale_out, Some(NOW));
}

#[test]
fn azs_exhausted_the_new_shards_homes_switch_once_the_fleet_runs_them() {
    let mut o = azs_exhausted();
    let p = plan(&o, &policy());
    // Once published, the next run has nothing to add.
    o.files.insert("/shards/use1-az1.1".into(), 0);
    o.files.insert("/shards/use1-az2.1".into(), 0);
    o.state = saved(&p).unwrap().clone();
    o.parameter = Some(Parameter::new(p.list.clone(), at(NOW - 10)));
    o.deployments[0].created_at = at(NOW - 5);
    // Its client still reports the list before: homes wait.
    let p = plan(&o, &policy());
    assert!(
        matches!(p.homes, Homes::Waiting(MovesWait::Clients(_))),
        "{:?}",
        p.homes
    );
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    assert_eq!(p.waits.clients.len(), 1);
    o.reports.files.clear();
    reads_v2(&mut o);
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::ScaleIn(ScaleIn::Keep {
            fewer_would_do: false
        })
    );
    // The fleet runs the announcement: homes switch.
    assert_eq!(p.homes, Homes::Switched);
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert_eq!(
        shard_counts(&p.list),
        [("fsmt-a", 2, 0), ("fsmt-b", 2, 0), ("fsmt-c", 1, 0)]
    );
    assert_eq!(p.current_shards, 5);
    o.parameter = Some(Parameter::new(p.list.clone(), at(NOW - 4)));
    o.deployments[0].created_at = at(NOW - 2);
    o.reports.files.clear();
    reads_v2(&mut o);
    let p = plan(&o, &policy());
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    assert_eq!(p.homes, Homes::Kept);
}

#[test]
fn a_new_target_and_new_shards_in_one_run() {
    // Two targets, a third AZ free, 15 shards wanted: the third target is created and the
    // two that serve take their even share (5 each) at once; the third gets its own later.
    let mut o = world(400_000);
    add_shard(&mut o, "fsmt-b", 'b', 300_000);
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    let p = plan(&o, &policy());
    assert_eq!((p.needed, p.desired), (15, 3));
    assert!(matches!(&p.decision, Decision::Grow(Grow::Create(n)) if n.az_id == "use1-az3"));
    assert_eq!(shard_counts(&p.list), [("fsmt-a", 5, 4), ("fsmt-b", 5, 4)]);
    // The next run: c serves, not listed yet; it joins with its first shard and takes
    // the rest of its share.
    add_shard(&mut o, "fsmt-c", 'c', 0);
    o.parameter.as_mut().unwrap().list = p.list.clone();
    let p = plan(&o, &policy());
    assert_eq!(p.decision, Decision::Grow(Grow::AddShards { added: 4 }));
    // Announced: c, new to the list, drains whole until homes switch.
    assert_eq!(
        shard_counts(&p.list),
        [("fsmt-a", 5, 4), ("fsmt-b", 5, 4), ("fsmt-c", 5, 0)]
    );
    assert!(p.list.mount_targets[2].draining);
    o.parameter.as_mut().unwrap().list = p.list.clone();
    let p = plan(&o, &policy());
    assert_eq!(p.homes, Homes::Switched);
    assert_eq!(
        shard_counts(&p.list),
        [("fsmt-a", 5, 0), ("fsmt-b", 5, 0), ("fsmt-c", 5, 0)]
    );
    let roots: Vec<String> = p.list.shards().into_iter().map(|t| t.root).collect();
    assert_eq!(roots.len(), 15);
    assert!(roots.contains(&"/shards/use1-az3.4".to_owned()));
}

#[test]
fn max_shards_is_the_capacity_and_the_reason_says_so() {
    let mut o = world(10_000_000);
    add_shard(&mut o, "fsmt-b", 'b', 0);
    add_shard(&mut o, "fsmt-c", 'c', 0);
    let capped = Policy {
        max_shards: 12,
        ..policy()
    };
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    let p = plan(&o, &capped);
    assert_eq!((p.needed, p.desired_shards), (204, 12));
    assert!(p.at_capacity);
    assert_eq!(p.decision, Decision::Grow(Grow::AddShards { added: 9 }));
    o.parameter.as_mut().unwrap().list = p.list.clone();
    let p = plan(&o, &capped);
    assert_eq!(
        p.decision,
        Decision::Grow(Grow::AtCapacity(Bound::MaxShards(12)))
    );
    // Raising MAX_SHARDS is the way out, not the migrate event.
    assert_eq!(p.decision.lifted_by(), None);
}

#[test]
fn a_modulo_list_at_capacity_says_migrating_lifts_the_cap() {
    let mut o = world(200_000);
    add_shard(&mut o, "fsmt-b", 'b', 0);
    add_shard(&mut o, "fsmt-c", 'c', 0);
    o.parameter = Some(Parameter::new(MountTargetList::from_json(
            r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4"},{"id":"fsmt-b","ip":"10.0.2.4"},{"id":"fsmt-c","ip":"10.0.3.4"}]}"#,
        )
        .unwrap(), at(100)));
    let p = plan(&o, &policy());
    assert_eq!((p.needed, p.desired_shards), (5, 3));
    assert!(p.at_capacity);
    assert!(matches!(
        p.decision,
        Decision::Grow(Grow::AtCapacity(Bound::Azs { .. }))
    ));
    assert_eq!(p.decision.lifted_by(), Some(MIGRATE_EVENT));
    assert!(p.list.mount_targets.iter().all(|t| t.shards == 1));
}

#[test]
fn a_target_creating_is_waited_for_and_not_doubled() {
    let mut o = world(160_000);
    o.mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Creating));
    let p = plan(&o, &policy());
    assert_eq!(p.desired, 3);
    assert!(created(&p).is_none());
    assert!(p.steps.contains(&Step::Wait {
        mount_target_id: "fsmt-b".into()
    }));
    // Not published while creating.
    assert!(!p.list.mount_targets.iter().any(|t| t.id == "fsmt-b"));
    assert!(
        matches!(&p.decision, Decision::Grow(Grow::WaitForCreating { id, .. }) if id == "fsmt-b"),
        "{:?}",
        p.decision
    );
}

#[test]
fn max_mount_targets_bounds_desired() {
    let mut o = world(500_000);
    add_shard(&mut o, "fsmt-b", 'b', 0);
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    let p = plan(
        &o,
        &Policy {
            max_mount_targets: Some(2),
            ..policy()
        },
    );
    assert_eq!((p.needed, p.desired_shards, p.desired), (11, 11, 2));
    assert!(!p.at_capacity);
    assert!(created(&p).is_none());
    // The two targets take the shards a third would have served.
    assert_eq!(p.decision, Decision::Grow(Grow::AddShards { added: 9 }));
    assert_eq!(shard_counts(&p.list), [("fsmt-a", 6, 5), ("fsmt-b", 5, 4)]);
}

#[test]
fn one_new_target_a_run() {
    let p = plan(
        &world(200_000),
        &Policy {
            allow_create: false,
            ..policy()
        },
    );
    assert_eq!(p.desired, 3);
    assert!(created(&p).is_none());
}

#[test]
fn scale_out_records_nothing_before_aws_accepts_the_create() {
    let p = plan(&world(61_234), &policy());
    assert!(created(&p).is_some());
    assert_eq!(saved(&p), None, "{:?}", p.steps);
}

#[test]
fn a_one_zone_file_system_never_gets_a_second_target() {
    let mut o = world(200_000);
    one_zone(&mut o, 'a');
    // Every client reads version 2: the list may grow past one shard a target.
    reads_v2(&mut o);
    let p = plan(&o, &policy());
    assert_eq!(created(&p), None, "{:?}", p.steps);
    // Its one target serves all the shards.
    assert!(!p.at_capacity);
    assert_eq!((p.usable_azs, p.desired, p.desired_shards), (1, 1, 5));
    assert_eq!(p.decision, Decision::Grow(Grow::AddShards { added: 4 }));
    // Under a modulo list, one target is one shard: at capacity, and migrating lifts it.
    o.parameter.as_mut().unwrap().list.strategy = Strategy::ModuloSha256;
    let p = plan(&o, &policy());
    assert!(p.at_capacity);
    assert_eq!(
        p.decision,
        Decision::Grow(Grow::AtCapacity(Bound::OneZone {
            az: "us-east-1a".into()
        }))
    );
    assert_eq!(p.decision.lifted_by(), Some(MIGRATE_EVENT));
}

#[test]
fn a_one_zone_file_system_without_targets_gets_one_in_its_own_az() {
    let mut o = world(10);
    one_zone(&mut o, 'c');
    o.mount_targets.clear();
    o.parameter = None;
    let p = plan(&o, &policy());
    assert_eq!(created(&p).map(|n| n.subnet_id.as_str()), Some("subnet-c"));
}

/// A create whose answer never came (lost, or the run died): the target AWS shows in that
/// subnet is the function's own, and the entry goes; with none there, the entry just goes.
#[test]
fn a_create_asked_for_and_never_recorded_is_adopted_by_its_subnet() {
    let mut o = world(100);
    o.mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Available));
    o.state.intend_create("subnet-b", "use1-az2", 7);
    o.state.intend_create("subnet-c", "use1-az3", 7);
    let p = plan(&o, &policy());
    let state = saved(&p).expect("the adoption is saved");
    assert_eq!(
        state.created.keys().collect::<Vec<_>>(),
        ["fsmt-b"],
        "{state:?}"
    );
    assert_eq!(state.created["fsmt-b"].at, 7);
    assert!(state.creating.is_empty(), "{state:?}");
}
