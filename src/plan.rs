//! The decision, as a pure function of what was observed: no I/O, no clock.
//!
//! Level-triggered like a Kubernetes controller: it assumes nothing about why it runs or
//! what the last run finished, so a run that died anywhere is finished by the next one.

use crate::observed::{LifeCycle, Observed, Subnet};
use crate::scale_state::ScaleState;
use crate::shard::{self, Shard};
use efs_router::list::{MountTargetList, Strategy, Target};
use std::collections::{BTreeMap, BTreeSet};

/// The settings that shape a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub file_threshold: u64,
    pub max_mount_targets: Option<usize>,
    pub subnet_ids: Option<Vec<String>>,
    pub security_group_ids: Option<Vec<String>>,
    pub services: Vec<String>,
    pub scale_in_ratio: f64,
    pub scale_in_cooldown_secs: u64,
    /// False on the second pass of a run, after it created or waited: one new target a run.
    pub allow_create: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecurityGroups {
    Given(Vec<String>),
    /// Those of this existing mount target (looked up when the step runs).
    SameAs(String),
    /// None given and no target to copy: AWS applies the VPC's default group.
    VpcDefault,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewTarget {
    pub subnet_id: String,
    pub az: String,
    pub az_id: String,
    pub root: String,
    pub security_groups: SecurityGroups,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    CreateShardDir {
        root: String,
    },
    CreateMountTarget(NewTarget),
    Wait {
        mount_target_id: String,
    },
    /// Keep the scale-in timers (before a create, so a run that dies still remembers it).
    SaveState(ScaleState),
    /// Move the files of a draining shard to their homes.
    MoveFiles {
        root: String,
        list: MountTargetList,
    },
    DeleteMountTarget {
        mount_target_id: String,
    },
    Publish {
        list: MountTargetList,
    },
    ForceDeployment {
        service: String,
    },
}

impl Step {
    /// The name used in the response's `actions` and in logs.
    pub fn name(&self) -> &'static str {
        match self {
            Step::CreateShardDir { .. } => "create_shard_directory",
            Step::CreateMountTarget(_) => "create_mount_target",
            Step::Wait { .. } => "wait_mount_target",
            Step::SaveState(_) => "save_state",
            Step::MoveFiles { .. } => "move_files",
            Step::DeleteMountTarget { .. } => "delete_mount_target",
            Step::Publish { .. } => "publish",
            Step::ForceDeployment { .. } => "force_deployment",
        }
    }

    /// Steps that change what a run observes; after them it observes again before it publishes.
    pub fn changes_state(&self) -> bool {
        matches!(
            self,
            Step::CreateMountTarget(_)
                | Step::Wait { .. }
                | Step::MoveFiles { .. }
                | Step::DeleteMountTarget { .. }
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    pub shards: Vec<Shard>,
    pub file_count: u64,
    /// By mount target id.
    pub files_per_shard: BTreeMap<String, u64>,
    /// Mount targets creating, available or updating.
    pub current: usize,
    /// `ceil(files / threshold)`, at least 1, before any bound.
    pub needed: usize,
    /// AZs that can hold a mount target (with one, or with a free eligible subnet).
    pub az_capacity: usize,
    pub desired: usize,
    /// Needed more than the AZs (or MAX_MOUNT_TARGETS) allow.
    pub at_capacity: bool,
    /// The list clients should see once the steps have run.
    pub list: MountTargetList,
    pub steps: Vec<Step>,
    /// Subnets and AZs left out after AWS refused them, still in force.
    pub excluded: Vec<Excluded>,
    /// Services whose newest deployment failed to roll out.
    pub rollouts_failed: Vec<String>,
    pub reason: String,
    /// Things an operator should know that change nothing (a target in `error`, say).
    pub warnings: Vec<String>,
}

pub fn plan(obs: &Observed, policy: &Policy) -> Plan {
    let published = obs.parameter.as_ref().map(|p| &p.list);
    let shards = shard::assign(&obs.mount_targets, published, |root| {
        obs.files.contains_key(root)
    });
    let mut warnings = Vec::new();

    // Files: each distinct root once (the original layout lists `/` for every target).
    let files_of = |root: &str| obs.files.get(root).copied().unwrap_or(0);
    let mut roots: BTreeSet<&str> = shards.iter().map(|s| s.root.as_str()).collect();
    roots.insert("/");
    let file_count: u64 = roots.iter().map(|r| files_of(r)).sum();
    let files_per_shard = shards
        .iter()
        .map(|s| (s.target.id.clone(), files_of(&s.root)))
        .collect();
    let orphaned: Vec<&String> = obs
        .files
        .keys()
        .filter(|r| !roots.contains(r.as_str()))
        .collect();
    for root in orphaned {
        if files_of(root) > 0 {
            warnings.push(format!(
                "{} files under {root} belong to no mount target and are not counted",
                files_of(root)
            ));
        }
    }
    for s in &shards {
        if !s.target.state.is_active() {
            warnings.push(format!(
                "mount target {} in {} is {}; it holds its AZ but serves no shard",
                s.target.id,
                s.target.az,
                s.target.state.as_str()
            ));
        }
    }

    let current = shards.iter().filter(|s| s.target.state.is_active()).count();
    let vpc = obs
        .vpc_id
        .clone()
        .or_else(|| obs.subnets.first().map(|s| s.vpc_id.clone()));
    let used_azs: BTreeSet<&str> = obs
        .mount_targets
        .iter()
        .filter(|t| t.occupies_az())
        .map(|t| t.az_id.as_str())
        .collect();
    let mut eligible: Vec<&Subnet> = obs
        .subnets
        .iter()
        .filter(|s| vpc.as_deref() == Some(s.vpc_id.as_str()))
        .filter(|s| {
            policy
                .subnet_ids
                .as_ref()
                .is_none_or(|ids| ids.contains(&s.id))
        })
        .filter(|s| !used_azs.contains(s.az_id.as_str()))
        .filter(|s| obs.file_system.allows_az(&s.az, &s.az_id))
        .filter(|s| {
            obs.scale_state
                .exclusion(&s.id, &s.az_id, obs.now)
                .is_none()
        })
        .collect();
    eligible.sort_by(|a, b| (&a.az_id, &a.id).cmp(&(&b.az_id, &b.id)));
    for s in obs
        .subnets
        .iter()
        .filter(|s| vpc.as_deref() != Some(s.vpc_id.as_str()))
    {
        warnings.push(format!(
            "subnet {} is in {}, not the file system's VPC {}; ignored",
            s.id,
            s.vpc_id,
            vpc.as_deref().unwrap_or("?")
        ));
    }
    // Refused subnets still left out: said on every run, so the reason for a capacity
    // shortfall is in each response.
    let mut excluded: Vec<Excluded> = obs
        .scale_state
        .excluded
        .iter()
        .filter(|(_, e)| e.until > obs.now)
        .map(|(key, e)| Excluded {
            key: key.clone(),
            until: e.until,
            reason: e.reason.clone(),
        })
        .collect();
    excluded.sort_by(|a, b| a.key.cmp(&b.key));
    for e in &excluded {
        warnings.push(format!(
            "{} is left out of scale-out until {} (Unix time): {}",
            e.key, e.until, e.reason
        ));
    }
    let mut rollouts_failed = Vec::new();
    for d in &obs.deployments {
        if let Some(why) = &d.rollout_failed {
            rollouts_failed.push(d.service.clone());
            warnings.push(format!(
                "the rollout of service {}'s newest deployment failed ({why}); its tasks still \
                 run the previous deployment and the list it had",
                d.service
            ));
        }
    }
    let free_azs: BTreeSet<&str> = eligible.iter().map(|s| s.az_id.as_str()).collect();
    let az_capacity = used_azs.len() + free_azs.len();
    let limit = az_capacity
        .min(policy.max_mount_targets.unwrap_or(usize::MAX))
        .max(1);
    let needed = usize::try_from(file_count.div_ceil(policy.file_threshold))
        .unwrap_or(usize::MAX)
        .max(1);
    let desired = needed.min(limit);
    let at_capacity = needed > limit;

    let bounds = Bounds {
        max_mount_targets: policy.max_mount_targets,
        one_zone: obs.file_system.is_one_zone().then(|| {
            obs.file_system
                .one_zone_az
                .clone()
                .or(obs.file_system.one_zone_az_id.clone())
                .unwrap_or_default()
        }),
        excluded: excluded.len(),
    };
    let mut steps = Vec::new();
    let mut list = rebuild_list(published, &shards);
    let mut state = obs.scale_state.clone();
    let now = obs.now;
    let draining = shards.iter().find(|s| {
        list.mount_targets
            .iter()
            .any(|t| t.id == s.target.id && t.draining)
    });
    let serving = current - usize::from(draining.is_some());
    let need_text = format!(
        "{file_count} files need {needed} mount target{} at {} per target",
        if needed == 1 { "" } else { "s" },
        policy.file_threshold
    );
    // Hysteresis: a target may go only well below the scale-out line (no flapping at it).
    let band =
        policy.scale_in_ratio * policy.file_threshold as f64 * serving.saturating_sub(1) as f64;
    let in_band = serving > 1 && file_count as f64 <= band;
    let creating: Vec<&Shard> = shards
        .iter()
        .filter(|s| s.target.state == LifeCycle::Creating)
        .collect();
    let reason = if let Some(d) = draining {
        let id = &d.target.id;
        if needed > serving {
            set_draining(&mut list, id, false);
            format!("{need_text}; {serving} serving: the growth cancels the drain of {id}")
        } else if files_of(&d.root) > 0 {
            steps.push(Step::MoveFiles {
                root: d.root.clone(),
                list: list.clone(),
            });
            format!(
                "{need_text}; draining {id} ({}): its {} files move to their homes first",
                d.target.az,
                files_of(&d.root)
            )
        } else {
            steps.push(Step::DeleteMountTarget {
                mount_target_id: id.clone(),
            });
            format!("{need_text}; {id} is drained (its directory is empty): deleting it")
        }
    } else if desired > current {
        if let Some(c) = creating.first() {
            format!(
                "{need_text}; have {current}; waiting for {} in {} before adding another",
                c.target.id, c.target.az
            )
        } else if !policy.allow_create {
            format!("{need_text}; have {current}; one new mount target a run")
        } else if let Some(subnet) = eligible.first() {
            let root = shard::root_for_az(&subnet.az_id);
            if !obs.files.contains_key(&root) {
                steps.push(Step::CreateShardDir { root: root.clone() });
            }
            let security_groups = match (
                &policy.security_group_ids,
                shards.iter().find(|s| s.target.state.is_active()),
            ) {
                (Some(ids), _) => SecurityGroups::Given(ids.clone()),
                (None, Some(s)) => SecurityGroups::SameAs(s.target.id.clone()),
                (None, None) => SecurityGroups::VpcDefault,
            };
            // The scale-in timers and `created_azs` change only once AWS accepts the create
            // (apply records them): a refused or conflicting create is not a scale-out.
            steps.push(Step::CreateMountTarget(NewTarget {
                subnet_id: subnet.id.clone(),
                az: subnet.az.clone(),
                az_id: subnet.az_id.clone(),
                root,
                security_groups,
            }));
            format!(
                "{need_text}; had {current}; adding one in {} ({}, {})",
                subnet.az, subnet.az_id, subnet.id
            )
        } else {
            bound_text(&need_text, current, az_capacity, &bounds)
        }
    } else if at_capacity {
        bound_text(&need_text, current, az_capacity, &bounds)
    } else if in_band {
        let since = *state.below_since.get_or_insert(now);
        let held = now.saturating_sub(since);
        let after_scale_out = state.last_scale_out.map(|t| now.saturating_sub(t));
        let cooldown = policy.scale_in_cooldown_secs;
        // Only a target this function created may go (never the first shard, never one that
        // was there before), and never one in a protected AZ; the one with the fewest files,
        // the newest on a tie.
        let created =
            |az: &Option<String>| az.as_ref().is_some_and(|az| state.created_azs.contains(az));
        let candidate = list
            .mount_targets
            .iter()
            .enumerate()
            .filter(|(_, t)| t.root != "/" && created(&t.az_id))
            .filter(|(_, t)| {
                !t.az_id
                    .as_ref()
                    .is_some_and(|az| obs.protected_azs.contains(az))
            })
            .min_by_key(|(i, t)| (files_of(&t.root), std::cmp::Reverse(*i)))
            .map(|(_, t)| t.id.clone());
        let band_text = format!(
            "{need_text}; {serving} serving, within the scale-in band (<= {band:.0} files)"
        );
        match candidate {
            None => format!(
                "{band_text}, but none may go: the first shard `/`, targets this function did not \
                 create and targets in protected AZs stay"
            ),
            Some(_) if held < cooldown => format!("{band_text} for {held} s of {cooldown} s"),
            Some(_) if after_scale_out.is_some_and(|t| t < cooldown) => format!(
                "{band_text}, but the last scale-out was {} s ago (cool-down {cooldown} s)",
                after_scale_out.unwrap_or_default()
            ),
            Some(id) => {
                set_draining(&mut list, &id, true);
                state.below_since = None;
                format!("{band_text} for {held} s: draining {id} before removing it")
            }
        }
    } else {
        state.below_since = None;
        if desired < current {
            format!("{need_text}; have {current}: above the scale-in band, keeping them")
        } else {
            format!("{need_text}; have {current}: nothing to add")
        }
    };
    if state != obs.scale_state {
        steps.insert(0, Step::SaveState(state));
    }

    for s in shards.iter().filter(|s| s.target.state.is_active()) {
        if !obs.files.contains_key(&s.root) {
            steps.push(Step::CreateShardDir {
                root: s.root.clone(),
            });
        }
    }
    for s in &creating {
        steps.push(Step::Wait {
            mount_target_id: s.target.id.clone(),
        });
    }

    let publish = published != Some(&list);
    if publish {
        steps.push(Step::Publish { list: list.clone() });
    }
    let param_time = obs.parameter.as_ref().and_then(|p| p.last_modified);
    for service in &policy.services {
        let deployed = obs.deployments.iter().find(|d| &d.service == service);
        let stale = match (param_time, deployed.and_then(|d| d.created_at)) {
            (Some(published_at), Some(deployed_at)) => published_at > deployed_at,
            (Some(_), None) => true,
            (None, _) => false,
        };
        if publish || stale {
            steps.push(Step::ForceDeployment {
                service: service.clone(),
            });
        }
    }

    Plan {
        shards,
        file_count,
        files_per_shard,
        current,
        needed,
        az_capacity,
        desired,
        at_capacity,
        list,
        steps,
        excluded,
        rollouts_failed,
        reason,
        warnings,
    }
}

fn set_draining(list: &mut MountTargetList, id: &str, draining: bool) {
    for t in list.mount_targets.iter_mut().filter(|t| t.id == id) {
        t.draining = draining;
    }
}

/// What bounds the number of mount targets, for the reason.
struct Bounds {
    max_mount_targets: Option<usize>,
    /// The AZ of a One Zone file system.
    one_zone: Option<String>,
    /// Subnets or AZs left out after AWS refused them.
    excluded: usize,
}

fn bound_text(need_text: &str, current: usize, az_capacity: usize, bounds: &Bounds) -> String {
    match (&bounds.one_zone, bounds.max_mount_targets) {
        (Some(az), _) => format!(
            "{need_text}; have {current}; a One Zone file system (in {az}) takes exactly one \
             mount target, in its own AZ: at capacity"
        ),
        (None, Some(m)) if m < az_capacity => {
            format!("{need_text}; have {current}; MAX_MOUNT_TARGETS is {m}: at capacity")
        }
        _ => format!(
            "{need_text}; have {current}; no AZ without a mount target has an eligible subnet \
             ({az_capacity} AZ{} usable{}): at capacity",
            if az_capacity == 1 { "" } else { "s" },
            match bounds.excluded {
                0 => String::new(),
                n => format!("; {n} subnet(s) or AZ(s) left out after AWS refused them"),
            }
        ),
    }
}

/// A subnet (by id) or an AZ (by AZ id) left out of scale-out after CreateMountTarget refused it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Excluded {
    #[serde(rename = "subnet_or_az")]
    pub key: String,
    pub until: u64,
    pub reason: String,
}

/// The list clients should see: the published order kept (modulo routing depends on it),
/// each entry refreshed from what was observed, entries whose target is gone dropped, new
/// available targets appended. Only `available` targets with an address are listed.
fn rebuild_list(published: Option<&MountTargetList>, shards: &[Shard]) -> MountTargetList {
    let servable: Vec<&Shard> = shards
        .iter()
        .filter(|s| s.target.state == LifeCycle::Available && s.target.ip.is_some())
        .collect();
    let entry = |s: &Shard, draining: bool| Target {
        id: s.target.id.clone(),
        ip: s.target.ip.clone().unwrap_or_default(),
        az: Some(s.target.az.clone()),
        az_id: Some(s.target.az_id.clone()),
        subnet_id: Some(s.target.subnet_id.clone()),
        root: s.root.clone(),
        draining,
    };
    let mut out = MountTargetList::new(published.map_or(Strategy::Rendezvous, |l| l.strategy));
    let mut used = BTreeSet::new();
    for e in published.map(|l| l.mount_targets.as_slice()).unwrap_or(&[]) {
        let found = servable.iter().find(|s| s.target.id == e.id).or_else(|| {
            servable
                .iter()
                .find(|s| e.az_id.as_deref() == Some(s.target.az_id.as_str()))
        });
        if let Some(s) = found.filter(|s| !used.contains(&s.target.id)) {
            used.insert(s.target.id.clone());
            out.mount_targets.push(entry(s, e.draining));
        }
    }
    for s in servable {
        if used.insert(s.target.id.clone()) {
            out.mount_targets.push(entry(s, false));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observed::{Deployment, FileSystem, MountTarget, Parameter};
    use crate::scale_state::ScaleState;
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
            }],
            files: BTreeMap::from([("/".to_owned(), files)]),
            protected_azs: BTreeSet::new(),
            scale_state: ScaleState::default(),
            now: NOW,
        };
        o.parameter = Some(Parameter {
            list: plan(&o, &policy()).list,
            last_modified: at(100),
        });
        o
    }

    fn policy() -> Policy {
        Policy {
            file_threshold: 50_000,
            max_mount_targets: None,
            subnet_ids: None,
            security_group_ids: None,
            services: vec!["app".into()],
            scale_in_ratio: 0.6,
            scale_in_cooldown_secs: 1800,
            allow_create: true,
        }
    }

    const NOW: u64 = 1_000_000;

    fn names(p: &Plan) -> Vec<&'static str> {
        p.steps.iter().map(Step::name).collect()
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
        o.files.insert(shard::root_for_az(&t.az_id), files);
        o.mount_targets.push(t);
        let list = plan(o, &policy()).list;
        o.parameter = Some(Parameter {
            list,
            last_modified: at(100),
        });
    }

    #[test]
    fn below_threshold_does_nothing() {
        let p = plan(&world(49_999), &policy());
        assert_eq!((p.needed, p.desired, p.current), (1, 1, 1));
        assert!(p.steps.is_empty(), "{:?}", p.steps);
        assert!(!p.at_capacity);
        assert_eq!(p.files_per_shard["fsmt-a"], 49_999);
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
        assert!(p.reason.contains("61234 files need 2"), "{}", p.reason);
    }

    #[test]
    fn the_trigger_stays_true_after_a_scale_out_and_nothing_happens() {
        let mut o = world(30_000);
        add_shard(&mut o, "fsmt-b", 'b', 30_000);
        let p = plan(&o, &policy());
        assert_eq!((p.file_count, p.desired, p.current), (60_000, 2, 2));
        assert!(p.steps.is_empty(), "{:?}", p.steps);
    }

    #[test]
    fn azs_exhausted_is_at_capacity_and_creates_nothing() {
        let mut o = world(100_000);
        add_shard(&mut o, "fsmt-b", 'b', 50_000);
        add_shard(&mut o, "fsmt-c", 'c', 50_000);
        let p = plan(&o, &policy());
        assert_eq!((p.needed, p.desired, p.az_capacity), (4, 3, 3));
        assert!(p.at_capacity);
        assert!(created(&p).is_none());
        assert!(p.reason.contains("at capacity"), "{}", p.reason);
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
        assert!(p.reason.contains("waiting for fsmt-b"), "{}", p.reason);
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
        assert_eq!((p.needed, p.desired), (10, 2));
        assert!(p.at_capacity);
        assert!(created(&p).is_none());
        assert!(p.reason.contains("MAX_MOUNT_TARGETS is 2"), "{}", p.reason);
    }

    #[test]
    fn a_used_az_is_not_free_through_a_second_subnet() {
        let mut o = world(100_000);
        // Only other subnet: a second one in AZ a, which already has a target.
        o.subnets = vec![subnet("subnet-a", VPC, 'a'), subnet("subnet-a2", VPC, 'a')];
        let p = plan(&o, &policy());
        assert!(created(&p).is_none());
        assert!(p.at_capacity);
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
        assert!(p.warnings.iter().any(|w| w.contains("subnet-x")));
        o.subnets.pop();
        let p = plan(&o, &policy());
        assert!(created(&p).is_none());
        assert!(p.at_capacity);
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
        assert_eq!(p.files_per_shard["fsmt-b2"], 7);
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
        assert!(p
            .warnings
            .iter()
            .any(|w| w.contains("fsmt-b") && w.contains("error")));
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
        o.scale_state.created_azs = BTreeSet::from(["use1-az2".to_owned(), "use1-az3".to_owned()]);
        o
    }

    fn draining_id(p: &Plan) -> Option<&str> {
        p.list
            .mount_targets
            .iter()
            .find(|t| t.draining)
            .map(|t| t.id.as_str())
    }

    fn saved(p: &Plan) -> Option<&ScaleState> {
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
        o.scale_state
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
        o.scale_state.exclude(
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
        o.scale_state
            .exclude("subnet-b", NOW, "NoFreeAddressesInSubnet".into(), 0);
        let p = plan(&o, &policy());
        assert_eq!(created(&p).map(|n| n.subnet_id.as_str()), Some("subnet-b"));
        assert!(p.excluded.is_empty());
    }

    #[test]
    fn nothing_eligible_left_is_at_capacity() {
        let mut o = world(61_234);
        o.scale_state
            .exclude("subnet-b", NOW + 60, "NoFreeAddressesInSubnet".into(), NOW);
        o.scale_state
            .exclude("subnet-c", NOW + 60, "SubnetNotFound".into(), NOW);
        let p = plan(&o, &policy());
        assert_eq!(created(&p), None);
        assert!(p.at_capacity);
        assert_eq!(p.az_capacity, 1);
        assert!(
            p.warnings.iter().any(|w| w.contains("subnet-c")),
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
        assert!(p.at_capacity);
        assert_eq!((p.az_capacity, p.desired), (1, 1));
        assert!(p.reason.contains("One Zone"), "{}", p.reason);
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
        assert!(
            p.warnings
                .iter()
                .any(|w| w.contains("app") && w.contains("tasks failed to start")),
            "{:?}",
            p.warnings
        );
    }

    #[test]
    fn the_scale_in_band_has_hysteresis() {
        // n = 2: the band is files <= 0.6 * 50,000 * 1 = 30,000; scale-out is above 100,000.
        let mut o = world(20_000);
        add_shard(&mut o, "fsmt-b", 'b', 10_000);
        let p = plan(&o, &policy());
        assert!(
            p.reason.contains("within the scale-in band"),
            "{}",
            p.reason
        );
        // Just above the band (30,001) and far below the scale-out line: keep both, quietly.
        let mut o = world(20_000);
        add_shard(&mut o, "fsmt-b", 'b', 10_001);
        let p = plan(&o, &policy());
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
        o.scale_state.below_since = Some(NOW - 1799);
        let p = plan(&o, &policy());
        assert!(p.steps.is_empty(), "{:?}", p.steps);
        assert!(p.reason.contains("for 1799 s of 1800 s"), "{}", p.reason);
        // Held long enough: the shard with the fewest files drains; list published, redeployed.
        o.scale_state.below_since = Some(NOW - 1800);
        let p = plan(&o, &policy());
        assert_eq!(draining_id(&p), Some("fsmt-c"));
        assert_eq!(names(&p), ["save_state", "publish", "force_deployment"]);
        assert_eq!(saved(&p).unwrap().below_since, None);
        // Leaving the band resets the clock.
        let mut o = three_shards(60_000, 10, 5);
        o.scale_state.below_since = Some(NOW - 100);
        let p = plan(&o, &policy());
        assert_eq!(saved(&p).unwrap().below_since, None);
    }

    #[test]
    fn no_scale_in_soon_after_a_scale_out() {
        let mut o = three_shards(100, 10, 5);
        o.scale_state.below_since = Some(NOW - 5000);
        o.scale_state.last_scale_out = Some(NOW - 600);
        let p = plan(&o, &policy());
        assert_eq!(draining_id(&p), None);
        assert!(
            p.reason.contains("last scale-out was 600 s ago"),
            "{}",
            p.reason
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
        assert!(p.reason.contains("none may go"), "{}", p.reason);
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
        assert!(p.reason.contains("none may go"), "{}", p.reason);
    }

    #[test]
    fn targets_that_were_there_before_are_never_drained() {
        let mut o = three_shards(100, 10, 5);
        o.scale_state.created_azs.clear();
        let zero = Policy {
            scale_in_cooldown_secs: 0,
            ..policy()
        };
        let p = plan(&o, &zero);
        assert_eq!(draining_id(&p), None);
        assert!(p.reason.contains("did not create"), "{}", p.reason);
        o.scale_state.created_azs.insert("use1-az2".into());
        assert_eq!(draining_id(&plan(&o, &zero)), Some("fsmt-b"));
    }

    /// `three_shards` with c marked draining in the published list.
    fn draining_c(root: u64, b: u64, c: u64) -> Observed {
        let mut o = three_shards(root, b, c);
        let list = &mut o.parameter.as_mut().unwrap().list;
        list.mount_targets[2].draining = true;
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
        let p = plan(&draining_c(100, 10, 0), &policy());
        assert_eq!(
            p.steps,
            [Step::DeleteMountTarget {
                mount_target_id: "fsmt-c".into()
            }]
        );
        assert_eq!(draining_id(&p), Some("fsmt-c"), "listed until it is gone");
    }

    #[test]
    fn a_deleted_drained_target_leaves_the_list() {
        let mut o = draining_c(100, 10, 0);
        o.mount_targets[2].state = LifeCycle::Deleting;
        let p = plan(&o, &policy());
        assert_eq!(
            names(&p),
            ["save_state", "publish", "force_deployment"],
            "{}",
            p.reason
        );
        assert_eq!(p.list.mount_targets.len(), 2);
        assert_eq!(draining_id(&p), None);
        assert_eq!(p.current, 2);
    }

    #[test]
    fn growth_cancels_a_drain() {
        let p = plan(&draining_c(60_000, 30_000, 20_000), &policy());
        assert_eq!(draining_id(&p), None);
        assert_eq!(names(&p), ["publish", "force_deployment"]);
        assert!(
            p.reason.contains("cancels the drain of fsmt-c"),
            "{}",
            p.reason
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
}
