//! The plan's tests and their fixtures, built by hand (never by running `plan`).

use super::decision::{Bound, Drain, Event, Grow, Hold, ScaleIn, Wait, MIGRATE_EVENT};
use super::*;
use crate::observed::{Deployment, EcsTask, FileSystem, MountTarget, Parameter, When};
use crate::observed::{LifeCycle, Observed, Subnet};
use crate::state::{self, ShardDrain, State};
use efs_router::list::{az_root, extra_root, Target};
use std::collections::BTreeSet;

mod clients;
mod day_one;
mod decisions;
mod drain;
mod growth;
mod list;
mod room;
mod scale_in;
mod tasks;
mod undo;

pub(super) const VPC: &str = "vpc-main";

pub(super) fn subnet(id: &str, vpc: &str, az: char) -> Subnet {
    Subnet {
        id: id.into(),
        vpc_id: vpc.into(),
        az: format!("us-east-1{az}"),
        az_id: format!("use1-az{}", az as u8 - b'a' + 1),
    }
}

pub(super) fn target(id: &str, az: char, state: LifeCycle) -> MountTarget {
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

/// An ECS task `id` of `group`, created at `created` (Unix seconds).
pub(super) fn task(id: &str, group: &str, last: &str, desired: &str, created: u64) -> EcsTask {
    EcsTask {
        arn: format!("arn:aws:ecs:us-east-1:1:task/prod/{id}"),
        group: group.into(),
        last_status: last.into(),
        desired_status: desired.into(),
        created_at: at(created),
        started_at: at(created + 5),
        az: Some("us-east-1a".into()),
    }
}

pub(super) fn at(secs: u64) -> Option<When> {
    Some(When::from_secs(secs))
}

/// A file system with one available target in AZ a, subnets in a, b, c of its VPC, its
/// list published at t=100 and the service deployed at t=200, and `files` files in `/`.
pub(super) fn world(files: u64) -> Observed {
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
        tasks: Vec::new(),
        tasks_unknown: None,
        files: BTreeMap::from([("/".to_owned(), files)]),
        protected_azs: BTreeSet::new(),
        state: State::default(),
        state_stored: true,
        warnings: Vec::new(),
        unreadable: BTreeMap::new(),
        tree_has_files: BTreeMap::new(),
        reports: Default::default(),
        now: When::from_secs(NOW),
    };
    // Published as it was before the files grew: one shard, built by hand (not by `plan`,
    // so that a bug in the list's rebuild cannot move the input along with the output).
    o.parameter = Some(Parameter::new(
        MountTargetList {
            open: None,
            scope: None,
            mount_targets: vec![listed(&o.mount_targets[0], "/")],
            strategy: Strategy::Rendezvous,
        },
        at(100),
    ));
    o
}

/// The entry a serving target has in a list the function published: one shard at `root`.
pub(super) fn listed(t: &MountTarget, root: &str) -> Target {
    Target {
        az: Some(t.az.clone()),
        az_id: Some(t.az_id.clone()),
        subnet_id: Some(t.subnet_id.clone()),
        ..Target::new(&t.id, t.ip.clone().unwrap_or_default(), root)
    }
}

pub(super) fn policy() -> Policy {
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
        client_reports: ClientReports::default(),
        close_placements: ClosePlacements::default(),
        undo: false,
        scope: None,
    }
}

pub(super) const NOW: u64 = 1_000_000;

/// Each warning's kind, in order.
pub(super) fn kinds(p: &Plan) -> Vec<&'static str> {
    p.warnings.iter().map(Warning::kind).collect()
}

pub(super) fn names(p: &Plan) -> Vec<&'static str> {
    p.steps.iter().map(|s| s.kind().name()).collect()
}

pub(super) fn created(p: &Plan) -> Option<&NewTarget> {
    p.steps.iter().find_map(|s| match s {
        Step::CreateMountTarget(n) => Some(n),
        _ => None,
    })
}

/// Adds an available target in `az` with its own shard root, published.
pub(super) fn add_shard(o: &mut Observed, id: &str, az: char, files: u64) {
    let t = target(id, az, LifeCycle::Available);
    let root = az_root(&t.az_id);
    o.files.insert(root.clone(), files);
    // The list as published once the target served: appended, one shard, nothing grown yet.
    let parameter = o.parameter.as_mut().expect("a published list");
    parameter.list.mount_targets.push(listed(&t, &root));
    parameter.last_modified = at(100);
    o.mount_targets.push(t);
}

/// Each entry's (id, shards, draining_shards).
/// Each listed target's id and root, in list order.
pub(super) fn ids_and_roots(list: &MountTargetList) -> Vec<(&str, &str)> {
    list.mount_targets
        .iter()
        .map(|t| (t.id.as_str(), t.root.as_str()))
        .collect()
}

pub(super) fn shard_counts(list: &MountTargetList) -> Vec<(&str, u32, u32)> {
    list.mount_targets
        .iter()
        .map(|t| (t.id.as_str(), t.shards, t.draining_shards))
        .collect()
}

/// Three shards (a: `/`, b, c), the list published, no drain, timers clear.
pub(super) fn three_shards(root: u64, b: u64, c: u64) -> Observed {
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
pub(super) fn sharded_a(files: u64, n: u32) -> Observed {
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
pub(super) fn draining_shard(left: u64) -> Observed {
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

pub(super) fn draining_id(p: &Plan) -> Option<&str> {
    p.list
        .mount_targets
        .iter()
        .find(|t| t.draining)
        .map(|t| t.id.as_str())
}

pub(super) fn saved(p: &Plan) -> Option<&State> {
    p.steps.iter().find_map(|s| match s {
        Step::SaveState(st) => Some(&**st),
        _ => None,
    })
}

pub(super) fn one_zone(o: &mut Observed, az: char) {
    o.file_system.one_zone_az = Some(format!("us-east-1{az}"));
    o.file_system.one_zone_az_id = Some(format!("use1-az{}", az as u8 - b'a' + 1));
}

/// `three_shards` with c marked draining in the published list.
/// `three_shards` with c draining: marked by this function (in its state), published
/// at t=100, and every service redeployed since (t=200).
pub(super) fn draining_c(root: u64, b: u64, c: u64) -> Observed {
    let mut o = three_shards(root, b, c);
    let list = &mut o.parameter.as_mut().unwrap().list;
    list.mount_targets[2].draining = true;
    o.state.draining.insert(
        "fsmt-c".into(),
        state::Drain {
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
pub(super) fn unlisted_c(root: u64, b: u64) -> Observed {
    let mut o = draining_c(root, b, 0);
    o.state.draining.get_mut("fsmt-c").unwrap().unlisted = true;
    o.parameter.as_mut().unwrap().list.mount_targets.remove(2);
    o
}
