use super::decision::{Bound, Hold, MIGRATE_EVENT};
use super::*;
use crate::observed::{Deployment, FileSystem, MountTarget, Parameter};
use crate::observed::{LifeCycle, Observed, Subnet};
use crate::state::{Drain, ShardDrain, State};
use efs_router::list::{az_root, extra_root, Target};
use std::collections::BTreeSet;
use std::time::{Duration, SystemTime};

const VPC: &str = "vpc-main";

fn subnet(id: &str, vpc: &str, az: char) -> Subnet {
    Subnet {
        id: id.into(),
        vpc_id: vpc.into(),
        az: format!("us-east-1{az}"),
        az_id: format!("use1-az{}", az as u8 - b'a' + 1),
    }
}

fn target(id: &str, az: char, state: LifeCycle) -> MountTarget {
    MountTarget {
        id: id.into(),
        subnet_id: format!("subnet-{az}"),
        vpc_id: Some(VPC.into()),
        az: format!("us-east-1{az}"),
        az_id: format!("use1-az{}", az as u8 - b'a' + 1),
        ip: Some(format!("10.0.{}.4", az as u8 - b'a' + 1)),
        state,
    }
}

fn at(secs: u64) -> Option<SystemTime> {
    Some(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// A file system with one available target in AZ a, subnets in a, b, c of its VPC, its
/// list published at t=100 and the service deployed at t=200, and `files` files in `/`.
fn world(files: u64) -> Observed {
    let mut o = Observed {
        file_system: FileSystem {
            id: "fs-1".into(),
            state: LifeCycle::Available,
            one_zone_az: None,
            one_zone_az_id: None,
        },
        mount_targets: vec![target("fsmt-a", 'a', LifeCycle::Available)],
        vpc_id: Some(VPC.into()),
        subnets: vec![
            subnet("subnet-a", VPC, 'a'),
            subnet("subnet-b", VPC, 'b'),
            subnet("subnet-c", VPC, 'c'),
        ],
        parameter: None,
        deployments: vec![Deployment {
            service: "app".into(),
            id: Some("ecs-svc/1".into()),
            created_at: at(200),
            rollout_failed: None,
            others_running: 0,
        }],
        files: BTreeMap::from([("/".to_owned(), files)]),
        protected_azs: BTreeSet::new(),
        state: State::default(),
        state_stored: true,
        warnings: Vec::new(),
        unreadable: BTreeMap::new(),
        tree_has_files: BTreeMap::new(),
        now: NOW,
    };
    // Published as it was before the files grew: one shard, built by hand (not by `plan`,
    // so that a bug in the list's rebuild cannot move the input along with the output).
    o.parameter = Some(Parameter {
        list: MountTargetList {
            mount_targets: vec![listed(&o.mount_targets[0], "/")],
            strategy: Strategy::Rendezvous,
        },
        last_modified: at(100),
    });
    o
}

/// The entry a serving target has in a list the function published: one shard at `root`.
fn listed(t: &MountTarget, root: &str) -> Target {
    Target {
        az: Some(t.az.clone()),
        az_id: Some(t.az_id.clone()),
        subnet_id: Some(t.subnet_id.clone()),
        ..Target::new(&t.id, t.ip.clone().unwrap_or_default(), root)
    }
}

fn policy() -> Policy {
    Policy {
        file_threshold: 50_000,
        max_mount_targets: None,
        max_shards: 256,
        migrate: false,
        subnet_ids: None,
        security_group_ids: None,
        services: vec!["app".into()],
        scale_in_ratio: 0.6,
        scale_in_cooldown_secs: 1800,
        allow_create: true,
        client_refresh_secs: 0,
    }
}

const NOW: u64 = 1_000_000;

/// Each warning's kind, in order.
fn kinds(p: &Plan) -> Vec<&'static str> {
    p.warnings.iter().map(Warning::kind).collect()
}

fn names(p: &Plan) -> Vec<&'static str> {
    p.steps.iter().map(|s| s.kind().name()).collect()
}

fn created(p: &Plan) -> Option<&NewTarget> {
    p.steps.iter().find_map(|s| match s {
        Step::CreateMountTarget(n) => Some(n),
        _ => None,
    })
}

/// Adds an available target in `az` with its own shard root, published.
fn add_shard(o: &mut Observed, id: &str, az: char, files: u64) {
    let t = target(id, az, LifeCycle::Available);
    let root = az_root(&t.az_id);
    o.files.insert(root.clone(), files);
    // The list as published once the target served: appended, one shard, nothing grown yet.
    let parameter = o.parameter.as_mut().expect("a published list");
    parameter.list.mount_targets.push(listed(&t, &root));
    parameter.last_modified = at(100);
    o.mount_targets.push(t);
}

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
        matches!(p.decision, Decision::Create(_)),
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

/// Each entry's (id, shards, draining_shards).
fn shard_counts(list: &MountTargetList) -> Vec<(&str, u32, u32)> {
    list.mount_targets
        .iter()
        .map(|t| (t.id.as_str(), t.shards, t.draining_shards))
        .collect()
}

#[test]
fn azs_exhausted_new_shards_go_on_the_existing_targets() {
    let mut o = world(100_000);
    add_shard(&mut o, "fsmt-b", 'b', 50_000);
    add_shard(&mut o, "fsmt-c", 'c', 50_000);
    let p = plan(&o, &policy());
    // 200,000 files at 49,113 a shard on average: 5 shards on the 3 targets.
    assert_eq!(
        (p.needed, p.desired_shards, p.desired, p.az_capacity),
        (5, 5, 3, 3)
    );
    assert!(!p.at_capacity);
    assert!(created(&p).is_none());
    assert_eq!(p.decision, Decision::AddShards { added: 2 });
    assert_eq!(
        shard_counts(&p.list),
        [("fsmt-a", 2, 0), ("fsmt-b", 2, 0), ("fsmt-c", 1, 0)]
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
    // Once published, the next run has nothing to add.
    o.files.insert("/shards/use1-az1.1".into(), 0);
    o.files.insert("/shards/use1-az2.1".into(), 0);
    o.state = saved(&p).unwrap().clone();
    o.parameter = Some(Parameter {
        list: p.list.clone(),
        last_modified: at(NOW - 10),
    });
    o.deployments[0].created_at = at(NOW - 5);
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::Keep {
            fewer_would_do: false
        }
    );
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    assert_eq!(p.current_shards, 5);
}

#[test]
fn a_new_target_and_new_shards_in_one_run() {
    // Two targets, a third AZ free, 15 shards wanted: the third target is created and the
    // two that serve take their even share (5 each) at once; the third gets its own later.
    let mut o = world(400_000);
    add_shard(&mut o, "fsmt-b", 'b', 300_000);
    let p = plan(&o, &policy());
    assert_eq!((p.needed, p.desired), (15, 3));
    assert!(matches!(&p.decision, Decision::Create(n) if n.az_id == "use1-az3"));
    assert_eq!(shard_counts(&p.list), [("fsmt-a", 5, 0), ("fsmt-b", 5, 0)]);
    // The next run: c serves, not listed yet; it joins with its first shard and takes
    // the rest of its share.
    add_shard(&mut o, "fsmt-c", 'c', 0);
    o.parameter.as_mut().unwrap().list = p.list.clone();
    let p = plan(&o, &policy());
    assert_eq!(p.decision, Decision::AddShards { added: 4 });
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
    let p = plan(&o, &capped);
    assert_eq!((p.needed, p.desired_shards), (204, 12));
    assert!(p.at_capacity);
    assert_eq!(p.decision, Decision::AddShards { added: 9 });
    o.parameter.as_mut().unwrap().list = p.list.clone();
    let p = plan(&o, &capped);
    assert_eq!(p.decision, Decision::AtCapacity(Bound::MaxShards(12)));
    // Raising MAX_SHARDS is the way out, not the migrate event.
    assert_eq!(p.decision.lifted_by(), None);
}

#[test]
fn a_modulo_list_at_capacity_says_migrating_lifts_the_cap() {
    let mut o = world(200_000);
    add_shard(&mut o, "fsmt-b", 'b', 0);
    add_shard(&mut o, "fsmt-c", 'c', 0);
    o.parameter = Some(Parameter {
        list: MountTargetList::from_json(
            r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4"},{"id":"fsmt-b","ip":"10.0.2.4"},{"id":"fsmt-c","ip":"10.0.3.4"}]}"#,
        )
        .unwrap(),
        last_modified: at(100),
    });
    let p = plan(&o, &policy());
    assert_eq!((p.needed, p.desired_shards), (5, 3));
    assert!(p.at_capacity);
    assert!(matches!(
        p.decision,
        Decision::AtCapacity(Bound::Azs { .. })
    ));
    assert_eq!(p.decision.lifted_by(), Some(MIGRATE_EVENT));
    assert!(p.list.mount_targets.iter().all(|t| t.shards == 1));
}

#[test]
fn migrate_republishes_a_modulo_list_under_rendezvous() {
    let mut o = world(200_000);
    add_shard(&mut o, "fsmt-b", 'b', 0);
    let original = MountTargetList::from_json(
        r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4"},{"id":"fsmt-b","ip":"10.0.2.4"}]}"#,
    )
    .unwrap();
    o.parameter = Some(Parameter {
        list: original.clone(),
        last_modified: at(100),
    });
    let migrating = Policy {
        migrate: true,
        ..policy()
    };
    let p = plan(&o, &migrating);
    assert_eq!(p.decision, Decision::Migrate { entries: 2 });
    assert_eq!(p.list.strategy, Strategy::Rendezvous);
    let got: Vec<(&str, &str)> = p
        .list
        .mount_targets
        .iter()
        .map(|t| (t.id.as_str(), t.root.as_str()))
        .collect();
    assert_eq!(got, [("fsmt-a", "/"), ("fsmt-b", "/shards/use1-az2")]);
    assert_eq!(names(&p), ["publish", "force_deployment"]);
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
        matches!(p.decision, Decision::Create(_) | Decision::AddShards { .. }),
        "{:?}",
        p.decision
    );
    // A rendezvous list is not migrated again.
    let p2 = plan(&o, &migrating);
    assert!(!matches!(p2.decision, Decision::Migrate { .. }));
    assert_eq!(kinds(&p2), ["nothing_to_migrate"]);
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
        matches!(&p.decision, Decision::WaitForCreating { id, .. } if id == "fsmt-b"),
        "{:?}",
        p.decision
    );
}

#[test]
fn max_mount_targets_bounds_desired() {
    let mut o = world(500_000);
    add_shard(&mut o, "fsmt-b", 'b', 0);
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
    assert_eq!(p.decision, Decision::AddShards { added: 9 });
    assert_eq!(shard_counts(&p.list), [("fsmt-a", 6, 0), ("fsmt-b", 5, 0)]);
}

#[test]
fn a_used_az_is_not_free_through_a_second_subnet() {
    let mut o = world(100_000);
    // Only other subnet: a second one in AZ a, which already has a target.
    o.subnets = vec![subnet("subnet-a", VPC, 'a'), subnet("subnet-a2", VPC, 'a')];
    let p = plan(&o, &policy());
    assert!(created(&p).is_none());
    assert_eq!(p.decision, Decision::AddShards { added: 2 });
    assert_eq!(p.az_capacity, 1);
}

#[test]
fn subnets_of_another_vpc_are_never_chosen() {
    let mut o = world(100_000);
    o.subnets = vec![
        subnet("subnet-x", "vpc-other", 'b'),
        subnet("subnet-c", VPC, 'c'),
    ];
    let p = plan(&o, &policy());
    assert_eq!(created(&p).unwrap().subnet_id, "subnet-c");
    assert_eq!(
        p.warnings,
        [Warning::OtherVpc {
            subnet: "subnet-x".into(),
            vpc: "vpc-other".into(),
            file_system_vpc: VPC.into()
        }]
    );
    o.subnets.pop();
    let p = plan(&o, &policy());
    assert!(created(&p).is_none());
    assert_eq!(p.decision, Decision::AddShards { added: 2 });
}

#[test]
fn an_allow_list_restricts_the_choice() {
    let p = plan(
        &world(100_000),
        &Policy {
            subnet_ids: Some(vec!["subnet-c".into()]),
            security_group_ids: Some(vec!["sg-1".into()]),
            ..policy()
        },
    );
    let new = created(&p).unwrap();
    assert_eq!(new.subnet_id, "subnet-c");
    assert_eq!(
        new.security_groups,
        SecurityGroups::Given(vec!["sg-1".into()])
    );
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
fn a_missing_parameter_is_published_and_services_redeployed() {
    let mut o = world(10);
    o.parameter = None;
    let p = plan(&o, &policy());
    assert_eq!(names(&p), ["publish", "force_deployment"]);
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
    assert_eq!(names(&p), ["force_deployment"]);
}

#[test]
fn the_original_form_keeps_its_order_and_strategy_and_gains_the_new_target() {
    let mut o = world(10);
    let b = target("fsmt-b", 'b', LifeCycle::Available);
    o.mount_targets.insert(0, b);
    // As the original wrote it: a then b, two fields each, root `/` for both.
    o.parameter = Some(Parameter {
        list: MountTargetList::from_json(
            r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4"},{"id":"fsmt-b","ip":"10.0.2.4"}]}"#,
        )
        .unwrap(),
        last_modified: at(100),
    });
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
    let got: Vec<(&str, &str)> = p
        .list
        .mount_targets
        .iter()
        .map(|t| (t.id.as_str(), t.root.as_str()))
        .collect();
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
    assert_eq!(names(&p), ["publish", "force_deployment"]);
    assert_eq!(p.list.mount_targets[1].root, "/shards/use1-az2");
}

#[test]
fn a_pre_existing_second_target_gets_a_shard_directory_before_it_is_published() {
    let mut o = world(10);
    o.parameter = None;
    o.mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Available));
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

/// Three shards (a: `/`, b, c), the list published, no drain, timers clear.
fn three_shards(root: u64, b: u64, c: u64) -> Observed {
    let mut o = world(root);
    add_shard(&mut o, "fsmt-b", 'b', b);
    add_shard(&mut o, "fsmt-c", 'c', c);
    // As if this function had created b and c.
    o.state.record_created("fsmt-b", "use1-az2", 0);
    o.state.record_created("fsmt-c", "use1-az3", 0);
    o.state.last_scale_out = None;
    o
}

/// fsmt-a (created before, root `/`) serving `n` shards, b and c one each, all published
/// and run by the fleet; `files` in each shard.
fn sharded_a(files: u64, n: u32) -> Observed {
    let mut o = three_shards(files, files, files);
    let list = &mut o.parameter.as_mut().unwrap().list;
    list.mount_targets[0].shards = n;
    for k in 1..n {
        o.files.insert(extra_root("use1-az1", k), files);
    }
    o
}

/// `sharded_a(100, 3)` with its last shard draining, marked and published, the fleet on
/// that list; `left` files still in it.
fn draining_shard(left: u64) -> Observed {
    let mut o = sharded_a(100, 3);
    let root = extra_root("use1-az1", 2);
    o.state.draining_shards.insert(
        root.clone(),
        ShardDrain {
            target: "fsmt-a".into(),
            since: NOW - 600,
            unlisted: false,
        },
    );
    o.parameter.as_mut().unwrap().list.mount_targets[0].draining_shards = 1;
    o.files.insert(root.clone(), left);
    o.tree_has_files.insert(root, left > 0);
    o
}

#[test]
fn scale_in_drains_a_targets_extra_shards_last_first_then_the_target() {
    let no_cooldown = Policy {
        scale_in_cooldown_secs: 0,
        ..policy()
    };
    // a serves 3 shards, b and c one each: the shard goes first, the last of a's.
    let p = plan(&sharded_a(100, 3), &no_cooldown);
    assert_eq!(
        p.decision,
        Decision::StartShardDrain {
            id: "fsmt-a".into(),
            root: "/shards/use1-az1.2".into(),
            held: 0
        }
    );
    assert_eq!(
        shard_counts(&p.list),
        [("fsmt-a", 3, 1), ("fsmt-b", 1, 0), ("fsmt-c", 1, 0)]
    );
    let routes = p.list.shards();
    assert!(routes[2].draining && !routes[1].draining && !routes[0].draining);
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    // Marked and published: its files move home, by the list that marks it.
    let p = plan(&draining_shard(5), &policy());
    assert_eq!(
        p.decision,
        Decision::MoveDrained {
            id: "fsmt-a".into(),
            az: "us-east-1a".into(),
            root: "/shards/use1-az1.2".into()
        }
    );
    assert!(
        matches!(&p.steps[..], [Step::MoveFiles { root, list }] if root == "/shards/use1-az1.2" && list.mount_targets[0].draining_shards == 1)
    );
    // Empty: it leaves the list; the target serves on with its other two. Nothing is deleted.
    let p = plan(&draining_shard(0), &policy());
    assert_eq!(
        p.decision,
        Decision::DropShard {
            id: "fsmt-a".into(),
            root: "/shards/use1-az1.2".into()
        }
    );
    assert_eq!(
        shard_counts(&p.list),
        [("fsmt-a", 2, 0), ("fsmt-b", 1, 0), ("fsmt-c", 1, 0)]
    );
    assert!(!names(&p).contains(&"delete_mount_target"));
    // Kept as unlisted until that list is the one published: a failed publish does not
    // bring the shard back; then it is forgotten, without a warning.
    let unlisted = saved(&p).unwrap().clone();
    assert!(unlisted.draining_shards["/shards/use1-az1.2"].unlisted);
    let mut o = draining_shard(0);
    o.state = unlisted.clone();
    let again = plan(&o, &policy());
    assert_eq!(
        again.decision,
        Decision::PublishFirst {
            id: "fsmt-a".into()
        }
    );
    assert_eq!(shard_counts(&again.list), shard_counts(&p.list));
    o.parameter.as_mut().unwrap().list = p.list.clone();
    let done = plan(&o, &policy());
    assert!(saved(&done).unwrap().draining_shards.is_empty());
    assert!(done.warnings.is_empty(), "{:?}", done.warnings);
    assert_eq!(shard_counts(&done.list), shard_counts(&p.list));
    // Once no target serves more than one shard, targets drain as before: c, the emptier.
    let p = plan(&three_shards(100, 10, 5), &no_cooldown);
    assert_eq!(
        p.decision,
        Decision::StartDrain {
            id: "fsmt-c".into(),
            held: 0
        }
    );
    // Growth cancels a shard drain like a target's.
    let mut o = draining_shard(5);
    o.files.insert("/".into(), 400_000);
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::CancelDrain {
            id: "fsmt-a".into()
        }
    );
    assert_eq!(p.list.mount_targets[0].draining_shards, 0);
}

#[test]
fn a_shard_drain_the_function_did_not_start_or_that_is_not_the_last_is_not_obeyed() {
    // The list marks a's last shard draining, the state does not: the mark is removed.
    let mut o = sharded_a(100, 3);
    o.parameter.as_mut().unwrap().list.mount_targets[0].draining_shards = 1;
    let p = plan(&o, &policy());
    assert_eq!(p.list.mount_targets[0].draining_shards, 0);
    assert_eq!(
        p.warnings,
        [Warning::ForeignShardDrainMark {
            id: "fsmt-a".into(),
            shards: 1
        }]
    );
    // The state drains a shard that is not the last one: dropped with a warning.
    let mut o = draining_shard(5);
    o.parameter.as_mut().unwrap().list.mount_targets[0].shards = 4;
    o.parameter.as_mut().unwrap().list.mount_targets[0].draining_shards = 0;
    let p = plan(&o, &policy());
    assert!(saved(&p).unwrap().draining_shards.is_empty());
    assert!(
        !matches!(p.decision, Decision::MoveDrained { .. }),
        "{:?}",
        p.decision
    );
}

fn draining_id(p: &Plan) -> Option<&str> {
    p.list
        .mount_targets
        .iter()
        .find(|t| t.draining)
        .map(|t| t.id.as_str())
}

fn saved(p: &Plan) -> Option<&State> {
    p.steps.iter().find_map(|s| match s {
        Step::SaveState(st) => Some(st),
        _ => None,
    })
}

#[test]
fn scale_out_records_nothing_before_aws_accepts_the_create() {
    let p = plan(&world(61_234), &policy());
    assert!(created(&p).is_some());
    assert_eq!(saved(&p), None, "{:?}", p.steps);
}

#[test]
fn a_refused_subnet_is_passed_over_for_the_next_free_az() {
    let mut o = world(61_234);
    o.state
        .exclude("subnet-b", NOW + 60, "NoFreeAddressesInSubnet".into(), NOW);
    let p = plan(&o, &policy());
    assert_eq!(created(&p).map(|n| n.subnet_id.as_str()), Some("subnet-c"));
    assert_eq!(p.excluded.len(), 1);
    assert_eq!(p.excluded[0].key, "subnet-b");
    assert!(!p.at_capacity);
}

#[test]
fn a_refused_az_is_passed_over_whatever_its_subnet() {
    let mut o = world(61_234);
    o.state.exclude(
        "use1-az2",
        NOW + 60,
        "UnsupportedAvailabilityZone".into(),
        NOW,
    );
    let p = plan(&o, &policy());
    assert_eq!(created(&p).map(|n| n.az_id.as_str()), Some("use1-az3"));
}

#[test]
fn an_exclusion_ends_at_its_time() {
    let mut o = world(61_234);
    o.state
        .exclude("subnet-b", NOW, "NoFreeAddressesInSubnet".into(), 0);
    let p = plan(&o, &policy());
    assert_eq!(created(&p).map(|n| n.subnet_id.as_str()), Some("subnet-b"));
    assert!(p.excluded.is_empty());
}

#[test]
fn nothing_eligible_left_is_at_capacity() {
    let mut o = world(61_234);
    o.state
        .exclude("subnet-b", NOW + 60, "NoFreeAddressesInSubnet".into(), NOW);
    o.state
        .exclude("subnet-c", NOW + 60, "SubnetNotFound".into(), NOW);
    let p = plan(&o, &policy());
    assert_eq!(created(&p), None);
    assert_eq!(p.decision, Decision::AddShards { added: 1 });
    assert_eq!(p.az_capacity, 1);
    assert_eq!(kinds(&p), ["excluded", "excluded"]);
    assert!(
        p.warnings
            .iter()
            .any(|w| matches!(w, Warning::Excluded { key, .. } if key == "subnet-c")),
        "{:?}",
        p.warnings
    );
}

fn one_zone(o: &mut Observed, az: char) {
    o.file_system.one_zone_az = Some(format!("us-east-1{az}"));
    o.file_system.one_zone_az_id = Some(format!("use1-az{}", az as u8 - b'a' + 1));
}

#[test]
fn a_one_zone_file_system_never_gets_a_second_target() {
    let mut o = world(200_000);
    one_zone(&mut o, 'a');
    let p = plan(&o, &policy());
    assert_eq!(created(&p), None, "{:?}", p.steps);
    // Its one target serves all the shards.
    assert!(!p.at_capacity);
    assert_eq!((p.az_capacity, p.desired, p.desired_shards), (1, 1, 5));
    assert_eq!(p.decision, Decision::AddShards { added: 4 });
    // Under a modulo list, one target is one shard: at capacity, and migrating lifts it.
    o.parameter.as_mut().unwrap().list.strategy = Strategy::ModuloSha256;
    let p = plan(&o, &policy());
    assert!(p.at_capacity);
    assert_eq!(
        p.decision,
        Decision::AtCapacity(Bound::OneZone {
            az: "us-east-1a".into()
        })
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
fn the_scale_in_band_has_hysteresis() {
    // n = 2: the band is files <= 0.6 * 50,000 * 1 = 30,000; scale-out is above 100,000.
    let mut o = world(20_000);
    add_shard(&mut o, "fsmt-b", 'b', 10_000);
    let p = plan(&o, &policy());
    assert!(matches!(p.decision, Decision::Hold(_)), "{:?}", p.decision);
    // Just above the band (30,001) and far below the scale-out line: keep both, quietly.
    let mut o = world(20_000);
    add_shard(&mut o, "fsmt-b", 'b', 10_001);
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::Keep {
            fewer_would_do: true
        }
    );
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    assert_eq!(draining_id(&p), None);
    // After a scale-in to 1, the same 30,000 files do not make it grow again.
    let p = plan(&world(30_000), &policy());
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    // At 2 with 50,001 files (the first line crossed): no scale-in either.
    let mut o = world(25_000);
    add_shard(&mut o, "fsmt-b", 'b', 25_001);
    assert!(plan(&o, &policy()).steps.is_empty());
}

#[test]
fn the_band_must_hold_for_the_cool_down() {
    let o = three_shards(100, 10, 5);
    // First time in the band: the clock starts, nothing drains.
    let p = plan(&o, &policy());
    assert_eq!(names(&p), ["save_state"]);
    assert_eq!(saved(&p).unwrap().below_since, Some(NOW));
    assert_eq!(draining_id(&p), None);
    // Held for less than the cool-down: wait, nothing written.
    let mut o = three_shards(100, 10, 5);
    o.state.below_since = Some(NOW - 1799);
    let p = plan(&o, &policy());
    assert!(p.steps.is_empty(), "{:?}", p.steps);
    assert_eq!(
        p.decision,
        Decision::Hold(Hold::Settling {
            held: 1799,
            cooldown: 1800
        })
    );
    // Held long enough: the shard with the fewest files drains; list published, redeployed.
    o.state.below_since = Some(NOW - 1800);
    let p = plan(&o, &policy());
    assert_eq!(draining_id(&p), Some("fsmt-c"));
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert_eq!(saved(&p).unwrap().below_since, None);
    // Leaving the band resets the clock.
    let mut o = three_shards(60_000, 10, 5);
    o.state.below_since = Some(NOW - 100);
    let p = plan(&o, &policy());
    assert_eq!(saved(&p).unwrap().below_since, None);
}

#[test]
fn no_scale_in_soon_after_a_scale_out() {
    let mut o = three_shards(100, 10, 5);
    o.state.below_since = Some(NOW - 5000);
    o.state.last_scale_out = Some(NOW - 600);
    let p = plan(&o, &policy());
    assert_eq!(draining_id(&p), None);
    assert_eq!(
        p.decision,
        Decision::Hold(Hold::RecentScaleOut {
            ago: 600,
            cooldown: 1800
        })
    );
    let p = plan(
        &o,
        &Policy {
            scale_in_cooldown_secs: 0,
            ..policy()
        },
    );
    assert_eq!(draining_id(&p), Some("fsmt-c"));
}

#[test]
fn protected_azs_and_the_first_shard_never_go() {
    let mut o = three_shards(100, 10, 5);
    o.protected_azs.insert("use1-az3".into()); // c
    let zero = Policy {
        scale_in_cooldown_secs: 0,
        ..policy()
    };
    assert_eq!(draining_id(&plan(&o, &zero)), Some("fsmt-b"));
    o.protected_azs.insert("use1-az2".into()); // b
    let p = plan(&o, &zero);
    assert_eq!(draining_id(&p), None);
    assert_eq!(p.decision, Decision::Hold(Hold::NoCandidate));
    // The original list: every target is rooted at `/`, so none is this function's to remove.
    let mut o = world(10);
    o.mount_targets
        .push(target("fsmt-b", 'b', LifeCycle::Available));
    o.parameter = Some(Parameter {
        list: MountTargetList::from_json(
            r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4"},{"id":"fsmt-b","ip":"10.0.2.4"}]}"#,
        )
        .unwrap(),
        last_modified: at(100),
    });
    let p = plan(&o, &zero);
    assert_eq!(draining_id(&p), None);
    assert_eq!(p.decision, Decision::Hold(Hold::ModuloList));
}

#[test]
fn targets_that_were_there_before_are_never_drained() {
    let mut o = three_shards(100, 10, 5);
    o.state.created.clear();
    let zero = Policy {
        scale_in_cooldown_secs: 0,
        ..policy()
    };
    let p = plan(&o, &zero);
    assert_eq!(draining_id(&p), None);
    assert_eq!(p.decision, Decision::Hold(Hold::NoCandidate));
    o.state.record_created("fsmt-b", "use1-az2", 0);
    o.state.last_scale_out = None;
    assert_eq!(draining_id(&plan(&o, &zero)), Some("fsmt-b"));
}

/// `three_shards` with c marked draining in the published list.
/// `three_shards` with c draining: marked by this function (in its state), published
/// at t=100, and every service redeployed since (t=200).
fn draining_c(root: u64, b: u64, c: u64) -> Observed {
    let mut o = three_shards(root, b, c);
    let list = &mut o.parameter.as_mut().unwrap().list;
    list.mount_targets[2].draining = true;
    o.state.draining.insert(
        "fsmt-c".into(),
        Drain {
            root: "/shards/use1-az3".into(),
            since: NOW - 600,
            unlisted: false,
            gone: false,
        },
    );
    o.tree_has_files.insert("/shards/use1-az3".into(), c > 0);
    o
}

/// `draining_c` with c already drained and published without it.
fn unlisted_c(root: u64, b: u64) -> Observed {
    let mut o = draining_c(root, b, 0);
    o.state.draining.get_mut("fsmt-c").unwrap().unlisted = true;
    o.parameter.as_mut().unwrap().list.mount_targets.remove(2);
    o
}

#[test]
fn a_drain_moves_files_first_and_deletes_only_an_empty_shard() {
    let p = plan(&draining_c(100, 10, 5), &policy());
    assert_eq!(names(&p), ["move_files"]);
    match &p.steps[0] {
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
        Decision::Unlist {
            id: "fsmt-c".into()
        }
    );
    assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
    assert_eq!(p.list.mount_targets.len(), 2);
    assert!(saved(&p).unwrap().draining["fsmt-c"].unlisted);
    // ... then, once the fleet runs that list, the target goes.
    let p = plan(&unlisted_c(100, 10), &policy());
    assert_eq!(
        p.steps,
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
                matches!(&p.decision, Decision::WaitForFleet { services, .. } if services == &["app"]),
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
        Decision::PublishFirst {
            id: "fsmt-c".into()
        }
    );
    assert_eq!(names(&p), ["publish", "force_deployment"]);
    assert_eq!(draining_id(&p), Some("fsmt-c"));
    // Unlisted in the state, but still published: the list without it goes first, no delete.
    let mut o = unlisted_c(100, 10);
    let listed = draining_c(100, 10, 0).parameter.unwrap().list;
    o.parameter.as_mut().unwrap().list = listed;
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::PublishFirst {
            id: "fsmt-c".into()
        }
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
        matches!(p.decision, Decision::MoveDrained { .. }),
        "{:?}",
        p.decision
    );
    // A tree that could not be walked is not known to be empty either.
    o.tree_has_files.clear();
    let p = plan(&o, &policy());
    assert!(
        matches!(p.decision, Decision::MoveDrained { .. }),
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
    o.now = NOW + 300;
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
        Decision::PublishFirst {
            id: "fsmt-b".into()
        }
    );
    assert_eq!(draining_id(&p), Some("fsmt-b"));
    // ... and once the services run it, the files move.
    o.state = saved(&p).unwrap().clone();
    o.parameter.as_mut().unwrap().list = p.list.clone();
    let p = plan(&o, &policy());
    assert!(
        matches!(p.decision, Decision::MoveDrained { .. }),
        "{:?}",
        p.decision
    );
    // Emptied: its root leaves the list.
    o.tree_has_files.insert("/shards/use1-az2".into(), false);
    let p = plan(&o, &policy());
    assert_eq!(
        p.decision,
        Decision::DropGone {
            id: "fsmt-b".into()
        }
    );
    assert_eq!(p.list.mount_targets.len(), 2);
    // Growth meanwhile is not held up by it.
    o.files.insert("/".into(), 200_000);
    o.tree_has_files.insert("/shards/use1-az2".into(), true);
    let p = plan(&o, &policy());
    assert!(
        matches!(p.decision, Decision::Create(_)),
        "{:?}",
        p.decision
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
    assert_eq!(p.decision, Decision::Hold(Hold::ModuloList));
    let gone = o.mount_targets.remove(2);
    o.state.missing.insert(gone.id.clone(), NOW - 300);
    let p = plan(&o, &zero);
    assert_eq!(p.list.mount_targets.len(), 3);
    assert_eq!(draining_id(&p), None);
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
        Decision::CancelDrain {
            id: "fsmt-c".into()
        }
    );
    // Growth that two serving shards can hold does not cancel it.
    let p = plan(&draining_c(60_000, 30_000, 10), &policy());
    assert_eq!(draining_id(&p), Some("fsmt-c"));
}

#[test]
fn no_mount_target_yet_uses_the_allowed_subnets() {
    let mut o = world(10);
    o.mount_targets.clear();
    o.vpc_id = None;
    o.parameter = None;
    let p = plan(&o, &policy());
    assert_eq!(p.current, 0);
    let new = created(&p).unwrap();
    assert_eq!(new.subnet_id, "subnet-a");
    assert_eq!(new.security_groups, SecurityGroups::VpcDefault);
}

#[test]
fn each_situation_has_its_decision() {
    let default = policy();
    let no_cooldown = Policy {
        scale_in_cooldown_secs: 0,
        ..policy()
    };
    let second_pass = Policy {
        allow_create: false,
        ..policy()
    };
    let refreshing = Policy {
        client_refresh_secs: NOW,
        ..policy()
    };
    let one_max = Policy {
        max_mount_targets: Some(1),
        ..policy()
    };
    let three_max = Policy {
        max_shards: 3,
        ..policy()
    };
    let migrating = Policy {
        migrate: true,
        ..policy()
    };
    let creating_b = {
        let mut o = world(200_000);
        o.mount_targets
            .push(target("fsmt-b", 'b', LifeCycle::Creating));
        o
    };
    let table: Vec<(&str, Observed, &Policy, &str)> = vec![
        ("files cross the line", world(61_234), &default, "create"),
        (
            "a target was created this run",
            world(61_234),
            &second_pass,
            "one_a_run",
        ),
        (
            "a target is still creating",
            creating_b,
            &default,
            "wait_for_creating",
        ),
        (
            "a draining shard with files",
            draining_c(100, 10, 5),
            &default,
            "move_drained",
        ),
        (
            "clients have not refreshed yet",
            draining_c(100, 10, 5),
            &refreshing,
            "wait_for_refresh",
        ),
        (
            "nor for an empty shard",
            draining_c(100, 10, 0),
            &refreshing,
            "wait_for_refresh",
        ),
        (
            "a drained, empty shard",
            draining_c(100, 10, 0),
            &default,
            "unlist",
        ),
        (
            "a drained shard, unlisted",
            unlisted_c(100, 10),
            &default,
            "delete_drained",
        ),
        (
            "a drain while old tasks run",
            {
                let mut o = draining_c(100, 10, 5);
                o.deployments[0].others_running = 1;
                o
            },
            &default,
            "wait_for_fleet",
        ),
        (
            "growth during a drain",
            draining_c(150_000, 10, 5),
            &default,
            "cancel_drain",
        ),
        (
            "the band held long enough",
            three_shards(100, 10, 5),
            &no_cooldown,
            "start_drain",
        ),
        (
            "the band just began",
            three_shards(100, 10, 5),
            &default,
            "hold_settling",
        ),
        (
            "more needed than MAX_SHARDS allows",
            three_shards(100_000, 50_000, 50_000),
            &three_max,
            "at_capacity",
        ),
        (
            "one target allowed, more shards needed",
            world(200_000),
            &one_max,
            "add_shards",
        ),
        (
            "the AZs exhausted",
            three_shards(100_000, 50_000, 50_000),
            &default,
            "add_shards",
        ),
        (
            "a modulo list at capacity",
            {
                let mut o = three_shards(100_000, 50_000, 50_000);
                o.parameter.as_mut().unwrap().list.strategy = Strategy::ModuloSha256;
                o
            },
            &default,
            "at_capacity",
        ),
        (
            "the migrate event on a modulo list",
            {
                let mut o = three_shards(100, 10, 5);
                o.parameter.as_mut().unwrap().list.strategy = Strategy::ModuloSha256;
                o
            },
            &migrating,
            "migrate",
        ),
        (
            "the band held long enough, a target serves several shards",
            sharded_a(100, 3),
            &no_cooldown,
            "start_shard_drain",
        ),
        (
            "a draining shard with files",
            draining_shard(5),
            &default,
            "move_drained",
        ),
        ("a drained shard", draining_shard(0), &default, "drop_shard"),
        ("few files, one target", world(10), &default, "keep"),
    ];
    for (case, o, policy, want) in table {
        let p = plan(&o, policy);
        assert_eq!(p.decision.name(), want, "{case}: {:?}", p.decision);
    }
}
