//! The decision, as a pure function of what was observed: no I/O, no clock.
//!
//! Level-triggered like a Kubernetes controller: it assumes nothing about why it runs or
//! what the last run finished, so a run that died anywhere is finished by the next one.
//!
//! A plan is made in parts, each a small function of plain data: the counts (files per
//! shard), the room (where a new mount target may go), the size (how many are needed, wanted
//! and possible), one [`Decision`] chosen by [`decide`], the reason rendered from that
//! decision, and the housekeeping every run does whatever was decided (shard directories,
//! waits, publish, redeploy).

use crate::observed::{LifeCycle, Observed, Subnet};
use crate::shard::{self, Shard};
use crate::state::{Drain, ShardDrain, State};
use efs_router::list::{extra_root, MountTargetList, Strategy, Target, MAX_LIST_SHARDS};
use std::collections::{BTreeMap, BTreeSet};

/// The settings that shape a plan.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub file_threshold: u64,
    pub max_mount_targets: Option<usize>,
    /// `MAX_SHARDS`: the most shards (directories) the list may have.
    pub max_shards: usize,
    /// The migrate event: a `modulo-sha256` list is published again under `rendezvous`.
    pub migrate: bool,
    pub subnet_ids: Option<Vec<String>>,
    pub security_group_ids: Option<Vec<String>>,
    pub services: Vec<String>,
    pub scale_in_ratio: f64,
    pub scale_in_cooldown_secs: u64,
    /// False once a run has created a target: one new target a run.
    pub allow_create: bool,
    /// How often clients that refresh the list themselves re-read it (`CLIENT_REFRESH_SECONDS`):
    /// no file moves until that long after the list was last published.
    pub client_refresh_secs: u64,
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
    /// Keep the function's state (timers, drains, missing targets) in its parameter.
    SaveState(State),
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

    /// Publishing and redeploying: done once what is observed has settled.
    pub fn is_announcement(&self) -> bool {
        matches!(self, Step::Publish { .. } | Step::ForceDeployment { .. })
    }
}

/// What a run decides about the number of mount targets: exactly one of these a run.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// The migrate event: the `modulo-sha256` list is published again under `rendezvous`
    /// (every entry keeps its target; entries that shared `/` get `/shards/<az-id>`).
    Migrate { entries: usize },
    /// Add a mount target in this subnet.
    Create(NewTarget),
    /// More shards are wanted and no mount target is to be added: the existing targets take
    /// `added` new shards between them, evenly.
    AddShards { added: usize },
    /// More are wanted, but one is still creating: wait for it first.
    WaitForCreating { id: String, az: String },
    /// More are wanted, but this run already created one.
    OneARun,
    /// The files grew while a target was draining: it serves again.
    CancelDrain { id: String },
    /// A draining target's shard still has files (nested ones too): they move home first.
    MoveDrained {
        id: String,
        az: String,
        root: String,
    },
    /// A target is draining (or unlisted), but not every service runs the list published last
    /// yet: nothing moves or goes until they do.
    WaitForFleet { id: String, services: Vec<String> },
    /// A target is draining (or unlisted), but the list that says so is not the one published
    /// (a run died, or its publish failed, after the state was saved): the list goes out
    /// first, and nothing moves or goes until the services run it.
    PublishFirst { id: String },
    /// A drained shard is empty: the list goes out without it (the target goes once the fleet
    /// has converged on that list).
    Unlist { id: String },
    /// A drained shard (not the target's own root) is empty: it leaves the list; the target
    /// keeps serving its other shards.
    DropShard { id: String, root: String },
    /// The shard of a target someone else deleted is empty: its root leaves the list.
    DropGone { id: String },
    /// A target is draining, but clients that refresh the list themselves may not have read
    /// the list that marks it draining yet: nothing moves or goes for `left` seconds.
    WaitForRefresh { id: String, left: u64 },
    /// A draining target's shard is empty: the target goes.
    DeleteDrained { id: String },
    /// Within the scale-in band for long enough: this target starts draining.
    StartDrain { id: String, held: u64 },
    /// Within the scale-in band for long enough: the last shard of the target that serves the
    /// most starts draining (a target's shards go before the target).
    StartShardDrain { id: String, root: String, held: u64 },
    /// Within the scale-in band, but no target goes yet.
    Hold(Hold),
    /// More are needed than can exist.
    AtCapacity(Bound),
    /// Nothing to add or remove (`fewer_would_do`: above the scale-in band, so all stay).
    Keep { fewer_would_do: bool },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hold {
    /// None may go: `/`, targets this function did not create, protected AZs.
    NoCandidate,
    /// The band has held for `held` of the `cooldown` seconds it must.
    Settling { held: u64, cooldown: u64 },
    /// The last scale-out was `ago` seconds ago, less than the cool-down.
    RecentScaleOut { ago: u64, cooldown: u64 },
    /// A `modulo-sha256` list cannot lose an entry without re-homing most files.
    ModuloList,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Bound {
    /// A One Zone file system (in this AZ) takes one mount target.
    OneZone {
        az: String,
    },
    MaxMountTargets(usize),
    /// No AZ without a target has an eligible subnet; `excluded` were refused by AWS.
    Azs {
        usable: usize,
        excluded: usize,
    },
    /// `MAX_SHARDS` (or the list's own cap).
    MaxShards(usize),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Each mount target's first shard.
    pub shards: Vec<Shard>,
    pub file_count: u64,
    /// Files in each shard of the list (by root), and in each root that holds files but
    /// belongs to no listed shard yet.
    pub files_per_shard: BTreeMap<String, u64>,
    /// Files in all the shards each mount target serves, by mount target id.
    pub files_per_target: BTreeMap<String, u64>,
    /// Mount targets creating, available or updating.
    pub current: usize,
    /// Shards that take new files once the steps have run (and those of targets still
    /// creating, which will).
    pub current_shards: usize,
    /// Shards the files need (`ceil(files / per-shard mean)`, at least 1), before any bound.
    pub needed: usize,
    /// AZs that can hold a mount target (with one, or with a free eligible subnet).
    pub az_capacity: usize,
    /// Mount targets wanted.
    pub desired: usize,
    /// Shards wanted: `needed` within `MAX_SHARDS` (and, for a modulo list, the targets).
    pub desired_shards: usize,
    /// Needed more shards than `MAX_SHARDS` (or, for a modulo list, the targets) allow.
    pub at_capacity: bool,
    pub decision: Decision,
    /// The list clients should see once the steps have run.
    pub list: MountTargetList,
    pub steps: Vec<Step>,
    /// Subnets and AZs left out after AWS refused them, still in force.
    pub excluded: Vec<Excluded>,
    /// Services whose newest deployment failed to roll out.
    pub rollouts_failed: Vec<String>,
    /// Why no file may move now (a drain and a rebalance alike), if something holds them.
    pub moves_wait: Option<MovesWait>,
    /// The fleet has not converged on a list published more than `FLEET_PATIENCE` ago.
    pub fleet_stuck: bool,
    /// Shard directories that could not be read or made (skipped).
    pub unreadable: usize,
    pub reason: String,
    /// Things an operator should know that change nothing (a target in `error`, say).
    pub warnings: Vec<String>,
}

/// Why files may not move now, whatever moves them (a drain or a rebalance).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MovesWait {
    /// The list the state calls for is not the one published: it goes out first.
    ListPending,
    /// These services do not run the list published last yet.
    Fleet(Vec<String>),
    /// Clients that refresh the list themselves may not have read it: seconds left.
    Refresh(u64),
}

impl std::fmt::Display for MovesWait {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            MovesWait::ListPending => write!(
                f,
                "the published list is about to change (a reconcile run publishes it first)"
            ),
            MovesWait::Fleet(services) => write!(
                f,
                "services {} do not run the list published last yet",
                services.join(", ")
            ),
            MovesWait::Refresh(left) => write!(
                f,
                "clients that refresh the list (CLIENT_REFRESH_SECONDS) may not have read the one \
                 published last: {left} s more"
            ),
        }
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

/// How long the fleet may take to run a new list before the run warns that it has not.
pub const FLEET_PATIENCE_SECS: u64 = 1800;

pub fn plan(obs: &Observed, policy: &Policy) -> Plan {
    let published = obs.parameter.as_ref().map(|p| &p.list);
    let mut warnings = obs.warnings.clone();
    // The migrate event: the plan starts from the list as rendezvous would have it; the
    // comparison with what is published (below) makes it go out.
    let migrated = if policy.migrate {
        match published {
            Some(l) if l.strategy == Strategy::ModuloSha256 => migrate(l, obs, &mut warnings),
            _ => {
                warnings.push(
                    "the migrate event asks for rendezvous, and the list already is (or none \
                     is published): nothing to migrate"
                        .to_owned(),
                );
                None
            }
        }
    } else {
        None
    };
    let base = migrated.as_ref().or(published);
    let shards = shard::assign(&obs.mount_targets, base, |root| {
        obs.files.contains_key(root)
    });
    let counts = Counts::of(obs, &shards, base, &mut warnings);
    let room = Room::of(obs, policy, &mut warnings);
    let rollouts_failed = rollouts_failed(obs, &mut warnings);
    for (root, why) in &obs.unreadable {
        warnings.push(format!("shard {root} skipped: {why}"));
    }
    let strategy = base.map_or(Strategy::Rendezvous, |l| l.strategy);
    let modulo = strategy == Strategy::ModuloSha256;
    let mut state = obs.state.clone();
    track_targets(obs, base, &shards, strategy, &mut state, &mut warnings);
    let fleet_waiting = fleet_waiting(obs);
    let published_age = published_at(obs).map(|t| obs.now.saturating_sub(t));
    let fleet_stuck =
        !fleet_waiting.is_empty() && published_age.is_some_and(|a| a > FLEET_PATIENCE_SECS);
    if fleet_stuck {
        warnings.push(format!(
            "services {} have not run the list published {} s ago (old tasks still run, or the \
             rollout is stuck): files wait to move",
            fleet_waiting.join(", "),
            published_age.unwrap_or_default()
        ));
    }

    let current = shards.iter().filter(|s| s.target.state.is_active()).count();
    let mut list = rebuild_list(base, &shards, &state, obs);
    // Whatever moves files (a drain, a rebalance) waits for the same things, in this order.
    let moves_wait = if published != Some(&list) {
        Some(MovesWait::ListPending)
    } else if !fleet_waiting.is_empty() {
        Some(MovesWait::Fleet(fleet_waiting))
    } else {
        Some(refresh_left(obs, policy))
            .filter(|left| *left > 0)
            .map(MovesWait::Refresh)
    };
    let drain = drain_under_way(&list, base, &shards, &state, obs);
    let size = Size::of(
        counts.file_count,
        current,
        serving_shards(&list, &shards, &state),
        room.az_capacity,
        policy,
        modulo,
    );
    let band = Band::of(policy, size.current_shards, counts.file_count);
    let candidate = if modulo {
        None
    } else {
        scale_in_candidate(obs, &list, &shards, &counts, &state)
    };
    let creating: Vec<&Shard> = shards
        .iter()
        .filter(|s| s.target.state == LifeCycle::Creating)
        .collect();
    let growth = if modulo {
        Vec::new()
    } else {
        grow_shards(&list, &shards, size.desired_shards, size.desired)
    };
    let bound = room.bound(obs, policy, modulo);
    let situation = Situation {
        size: &size,
        drain: drain.clone(),
        moves_wait: moves_wait.clone(),
        creating: creating.first().copied(),
        allow_create: policy.allow_create,
        next_target: room.eligible.first().map(|subnet| NewTarget {
            subnet_id: subnet.id.clone(),
            az: subnet.az.clone(),
            az_id: subnet.az_id.clone(),
            root: shard::root_for_az(&subnet.az_id),
            security_groups: match (
                &policy.security_group_ids,
                shards.iter().find(|s| s.target.state.is_active()),
            ) {
                (Some(ids), _) => SecurityGroups::Given(ids.clone()),
                (None, Some(s)) => SecurityGroups::SameAs(s.target.id.clone()),
                (None, None) => SecurityGroups::VpcDefault,
            },
        }),
        shards_to_add: growth.iter().map(|(_, added)| *added as usize).sum(),
        bound: &bound,
        in_band: band.holds,
        modulo,
        migrating: migrated.as_ref().map(|l| l.mount_targets.len()),
        candidate,
        below_since: state.below_since,
        last_scale_out: state.last_scale_out,
        cooldown: policy.scale_in_cooldown_secs,
        now: obs.now,
    };
    let decision = decide(&situation);
    let reason = reason(&decision, &size, &band, policy, modulo);

    // The decision's own steps, and what it does to the list and the state.
    let mut steps = Vec::new();
    state.below_since = match &decision {
        // The band holds: its clock runs from when it began.
        Decision::Hold(_) => Some(state.below_since.unwrap_or(obs.now)),
        Decision::StartDrain { .. } | Decision::StartShardDrain { .. } | Decision::Keep { .. } => {
            None
        }
        _ => state.below_since,
    };
    match &decision {
        Decision::Create(new) => {
            if !obs.files.contains_key(&new.root) {
                steps.push(Step::CreateShardDir {
                    root: new.root.clone(),
                });
            }
            // The scale-in timers and the targets created change only once AWS accepts the
            // create (apply records them): a refused or conflicting create is not a scale-out.
            steps.push(Step::CreateMountTarget(new.clone()));
        }
        Decision::CancelDrain { id } => {
            state.draining.remove(id);
            state.draining_shards.retain(|_, d| &d.target != id);
            list = rebuild_list(base, &shards, &state, obs);
        }
        Decision::StartDrain { id, .. } => {
            let root = list
                .mount_targets
                .iter()
                .find(|t| &t.id == id)
                .map(|t| t.root.clone())
                .unwrap_or_default();
            state.draining.insert(
                id.clone(),
                Drain {
                    root,
                    since: obs.now,
                    unlisted: false,
                    gone: false,
                },
            );
            list = rebuild_list(base, &shards, &state, obs);
        }
        Decision::StartShardDrain { id, root, .. } => {
            state.draining_shards.insert(
                root.clone(),
                ShardDrain {
                    target: id.clone(),
                    since: obs.now,
                    unlisted: false,
                },
            );
            list = rebuild_list(base, &shards, &state, obs);
        }
        Decision::MoveDrained { .. } => {
            for root in drain.iter().flat_map(|d| d.with_files.iter()) {
                steps.push(Step::MoveFiles {
                    root: root.clone(),
                    list: list.clone(),
                });
            }
        }
        Decision::Unlist { id } | Decision::DropGone { id } => {
            if let Some(d) = state.draining.get_mut(id) {
                d.unlisted = true;
            }
            list = rebuild_list(base, &shards, &state, obs);
        }
        Decision::DropShard { root, .. } => {
            if let Some(d) = state.draining_shards.get_mut(root) {
                d.unlisted = true;
            }
            list = rebuild_list(base, &shards, &state, obs);
        }
        Decision::DeleteDrained { id } => steps.push(Step::DeleteMountTarget {
            mount_target_id: id.clone(),
        }),
        _ => {}
    }
    // New shards go on the targets that serve now, in the runs that grow (a target being
    // added, waited for, or none to add): a scale-out like a new target.
    if matches!(
        decision,
        Decision::Create(_)
            | Decision::WaitForCreating { .. }
            | Decision::OneARun
            | Decision::AddShards { .. }
    ) && !growth.is_empty()
    {
        for (index, added) in &growth {
            list.mount_targets[*index].shards += added;
        }
        state.last_scale_out = Some(obs.now);
        state.below_since = None;
    }
    // After this run: with the shards it adds or drops.
    let current_shards = serving_shards(&list, &shards, &state);
    // Saved when it changed, or when it was carried over from the old file.
    if state != obs.state || (!obs.state_stored && state != State::default()) {
        steps.insert(0, Step::SaveState(state));
    }
    housekeeping(
        obs, policy, &shards, &creating, published, &list, &mut steps,
    );
    let (files_per_shard, files_per_target) = counts.per_shard_and_target(&list, &shards);

    Plan {
        shards,
        file_count: counts.file_count,
        files_per_shard,
        files_per_target,
        current,
        current_shards,
        needed: size.needed,
        az_capacity: room.az_capacity,
        desired: size.desired,
        desired_shards: size.desired_shards,
        at_capacity: size.at_capacity,
        decision,
        list,
        steps,
        excluded: room.excluded,
        rollouts_failed,
        moves_wait,
        fleet_stuck,
        unreadable: obs.unreadable.len(),
        reason,
        warnings,
    }
}

/// The drain under way, if any: a target's (the first in the list's order, then any unlisted
/// one), else a shard's.
fn drain_under_way(
    list: &MountTargetList,
    base: Option<&MountTargetList>,
    shards: &[Shard],
    state: &State,
    obs: &Observed,
) -> Option<DrainView> {
    let az_of = |id: &str| {
        shards
            .iter()
            .find(|s| s.target.id == id)
            .map(|s| s.target.az.clone())
            .unwrap_or_default()
    };
    // A shard that could not be walked is not known to be empty.
    let has_files = |root: &str| obs.tree_has_files.get(root).copied().unwrap_or(true);
    let target = list
        .mount_targets
        .iter()
        .find_map(|t| state.draining.get_key_value(&t.id))
        .or_else(|| state.draining.iter().find(|(_, d)| d.unlisted && !d.gone));
    if let Some((id, d)) = target {
        // A target's drain empties every shard it serves (a target gone by hand may serve several).
        let roots = base
            .and_then(|l| l.mount_targets.iter().find(|t| &t.id == id))
            .filter(|t| t.root == d.root)
            .map_or_else(|| vec![d.root.clone()], |t| t.shard_roots());
        return Some(DrainView {
            id: id.clone(),
            az: az_of(id),
            root: d.root.clone(),
            unlisted: d.unlisted,
            gone: d.gone,
            shard: false,
            with_files: roots.into_iter().filter(|r| has_files(r)).collect(),
        });
    }
    let (root, d) = state.draining_shards.iter().next()?;
    Some(DrainView {
        id: d.target.clone(),
        az: az_of(&d.target),
        root: root.clone(),
        unlisted: d.unlisted,
        gone: false,
        shard: true,
        with_files: has_files(root).then(|| root.clone()).into_iter().collect(),
    })
}

/// The first shard of mount target `id` when the target serves (creating, available or
/// updating).
fn serving<'a>(shards: &'a [Shard], id: &str) -> Option<&'a Shard> {
    shards
        .iter()
        .find(|s| s.target.id == id && s.target.state.is_active())
}

/// Shards that take new files: those of each listed target that serves (creating, available
/// or updating) and is not draining, less its draining shards; and one for each serving
/// target not listed yet (it will serve its first shard), unless it is being drained.
fn serving_shards(list: &MountTargetList, shards: &[Shard], state: &State) -> usize {
    shards
        .iter()
        .filter(|s| s.target.state.is_active())
        .map(
            |s| match list.mount_targets.iter().find(|e| e.id == s.target.id) {
                Some(e) if e.draining => 0,
                Some(e) => (e.shards - e.draining_shards) as usize,
                None if state.draining.contains_key(&s.target.id) => 0,
                None => 1,
            },
        )
        .sum()
}

/// Where new shards go: `desired` shards spread over `desired_targets` mount targets as
/// evenly as they can be (the one with the fewest takes the next), counting targets still to
/// come (creating, or to be created in a later run) at one shard each. Only a listed target
/// that serves now, with an AZ id, takes shards now; the others get theirs once they serve.
/// Returns (index in the list, shards added).
fn grow_shards(
    list: &MountTargetList,
    shards: &[Shard],
    desired: usize,
    desired_targets: usize,
) -> Vec<(usize, u32)> {
    // (shards it serves, index in the list when it can take one now)
    let mut takers: Vec<(u32, Option<usize>)> = Vec::new();
    for (i, e) in list.mount_targets.iter().enumerate() {
        let Some(s) = serving(shards, &e.id) else {
            continue;
        };
        if e.draining {
            continue;
        }
        let can_take = s.target.state == LifeCycle::Available
            && s.target.ip.is_some()
            && e.az_id.as_deref().is_some_and(|a| !a.is_empty())
            && e.draining_shards == 0;
        takers.push((e.shards - e.draining_shards, can_take.then_some(i)));
    }
    for s in shards.iter().filter(|s| s.target.state.is_active()) {
        if !list.mount_targets.iter().any(|e| e.id == s.target.id) {
            takers.push((1, None));
        }
    }
    while takers.len() < desired_targets {
        takers.push((1, None));
    }
    let mut total: usize = takers.iter().map(|(n, _)| *n as usize).sum();
    let mut room = MAX_LIST_SHARDS.saturating_sub(list.shard_count());
    let mut added: BTreeMap<usize, u32> = BTreeMap::new();
    while total < desired && room > 0 {
        // The fewest first; on a tie, one that can take it now, then list order.
        let Some(next) = (0..takers.len()).min_by_key(|&j| (takers[j].0, takers[j].1.is_none(), j))
        else {
            break;
        };
        takers[next].0 += 1;
        total += 1;
        if let Some(index) = takers[next].1 {
            *added.entry(index).or_default() += 1;
            room -= 1;
        }
    }
    added.into_iter().collect()
}

/// The list a `modulo-sha256` list becomes under `rendezvous`: the same entries in the same
/// order; the first rooted at `/` keeps it, each other entry that shared `/` gets
/// `/shards/<az-id>` (its AZ from the list or from AWS). None, with a warning, when an AZ is
/// unknown or the result would not be a valid list.
fn migrate(
    list: &MountTargetList,
    obs: &Observed,
    warnings: &mut Vec<String>,
) -> Option<MountTargetList> {
    let mut out = MountTargetList::new(Strategy::Rendezvous);
    let mut slash_taken = false;
    for e in &list.mount_targets {
        let mut e = e.clone();
        if e.root == "/" {
            if slash_taken {
                let az_id = e.az_id.clone().or_else(|| {
                    obs.mount_targets
                        .iter()
                        .find(|t| t.id == e.id)
                        .map(|t| t.az_id.clone())
                });
                let Some(az_id) = az_id else {
                    warnings.push(format!(
                        "cannot migrate: the AZ of listed mount target {} is known neither from \
                         the list nor from AWS, so its shard cannot be named; nothing changed",
                        e.id
                    ));
                    return None;
                };
                e.root = shard::root_for_az(&az_id);
                e.az_id = Some(az_id);
            }
            slash_taken = true;
        }
        out.mount_targets.push(e);
    }
    if let Err(err) = out.validate() {
        warnings.push(format!(
            "cannot migrate: the list under rendezvous would be refused ({err}); nothing changed"
        ));
        return None;
    }
    Some(out)
}

/// Services that do not run the list published last yet: their PRIMARY deployment started
/// before it, another deployment still has running tasks, or the rollout failed. Empty when
/// nothing is published.
fn fleet_waiting(obs: &Observed) -> Vec<String> {
    let Some(published_at) = obs.parameter.as_ref().and_then(|p| p.last_modified) else {
        return Vec::new();
    };
    obs.deployments
        .iter()
        .filter(|d| {
            let started_after = d.created_at.is_some_and(|t| t > published_at);
            !started_after || d.others_running > 0 || d.rollout_failed.is_some()
        })
        .map(|d| d.service.clone())
        .collect()
}

/// Brings the state up to date with what AWS shows: targets that went missing (kept in place
/// for a run, then drained as gone), targets gone for good forgotten, drains that no rule allows
/// any more (or that the function did not start) dropped with a warning.
fn track_targets(
    obs: &Observed,
    published: Option<&MountTargetList>,
    shards: &[Shard],
    strategy: Strategy,
    state: &mut State,
    warnings: &mut Vec<String>,
) {
    let seen = |id: &str| {
        obs.mount_targets
            .iter()
            .any(|t| t.id == id && !matches!(t.state, LifeCycle::Deleted | LifeCycle::Deleting))
    };
    // Missing: listed (or created) but not seen.
    let mut watched: BTreeSet<String> = state.created.keys().cloned().collect();
    if let Some(l) = published {
        watched.extend(l.mount_targets.iter().map(|t| t.id.clone()));
    }
    watched.extend(state.draining.keys().cloned());
    state
        .missing
        .retain(|id, _| watched.contains(id) && !seen(id));
    for id in &watched {
        if !seen(id) {
            state.missing.entry(id.clone()).or_insert(obs.now);
        }
    }
    let gone = |state: &State, id: &str| state.missing.get(id).is_some_and(|t| *t < obs.now);
    // A created target gone for good is forgotten.
    let gone_created: Vec<String> = state
        .created
        .keys()
        .filter(|id| gone(state, id))
        .cloned()
        .collect();
    for id in gone_created {
        state.created.remove(&id);
    }
    // A listed target gone for good: its root drains home (rendezvous only: under modulo an
    // entry never changes).
    if let (Some(l), Strategy::Rendezvous) = (published, strategy) {
        for t in &l.mount_targets {
            let recreated = shards.iter().any(|s| s.root == t.root);
            if gone(state, &t.id) && !recreated && !state.draining.contains_key(&t.id) {
                warnings.push(format!(
                    "mount target {} ({}) is gone; its root {} stays listed, draining, until its \
                     files are home",
                    t.id, t.root, t.root
                ));
                state.draining.insert(
                    t.id.clone(),
                    Drain {
                        root: t.root.clone(),
                        since: obs.now,
                        unlisted: false,
                        gone: true,
                    },
                );
            }
        }
    }
    // Each drain is checked against the rules again, whatever the list or the state says.
    let listed = |id: &str| published.is_some_and(|l| l.mount_targets.iter().any(|t| t.id == id));
    let ids: Vec<String> = state.draining.keys().cloned().collect();
    for id in ids {
        let d = state.draining[&id].clone();
        if d.gone {
            // Done once its root has left the list, or a target re-created in its AZ took the
            // root over (with its files).
            let taken_over = shards.iter().any(|s| s.root == d.root);
            if (d.unlisted && !listed(&id)) || taken_over {
                state.draining.remove(&id);
            }
            continue;
        }
        if d.unlisted && !seen(&id) {
            // Deleted by this function once unlisted: done.
            state.draining.remove(&id);
            state.created.remove(&id);
            continue;
        }
        if gone(state, &id) {
            // Deleted by someone else while it drained: only its root is left to empty.
            if let Some(d) = state.draining.get_mut(&id) {
                d.gone = true;
            }
            continue;
        }
        let target = obs.mount_targets.iter().find(|t| t.id == id);
        let protected = target.is_some_and(|t| obs.protected_azs.contains(&t.az_id));
        let allowed = state.created.contains_key(&id)
            && d.root != "/"
            && !protected
            && strategy == Strategy::Rendezvous;
        if target.is_some() && !allowed {
            warnings.push(format!(
                "the drain of {id} stopped: a target that was there before this function, the \
                 first shard `/`, a protected AZ or a modulo list never goes"
            ));
            state.draining.remove(&id);
        }
    }
    // A shard drain holds while its target serves, listed, and the shard is still its last.
    let roots: Vec<String> = state.draining_shards.keys().cloned().collect();
    for root in roots {
        let d = state.draining_shards[&root].clone();
        let entry = published.and_then(|l| l.mount_targets.iter().find(|t| t.id == d.target));
        if d.unlisted {
            // Done once the list without it is the one published.
            if !entry.is_some_and(|t| t.shard_roots().contains(&root)) {
                state.draining_shards.remove(&root);
            }
            continue;
        }
        let last = entry.and_then(|t| {
            let az_id = t.az_id.as_deref().filter(|_| t.shards > 1)?;
            Some(extra_root(az_id, t.shards - 1))
        });
        let holds = strategy == Strategy::Rendezvous
            && seen(&d.target)
            && entry.is_some_and(|t| !t.draining)
            && last.as_deref() == Some(root.as_str());
        if !holds {
            if entry.is_some() && seen(&d.target) {
                warnings.push(format!(
                    "the drain of shard {root} stopped: it is no longer the last shard of {} \
                     (the list was changed by hand?)",
                    d.target
                ));
            }
            state.draining_shards.remove(&root);
        }
    }
    // A draining mark the function did not make is not obeyed.
    if let Some(l) = published {
        for t in l.mount_targets.iter().filter(|t| t.draining) {
            if !state.draining.contains_key(&t.id) {
                warnings.push(format!(
                    "the list marks {} draining, but this function did not: the mark is removed",
                    t.id
                ));
            }
        }
        for t in l.mount_targets.iter().filter(|t| t.draining_shards > 0) {
            let marked = state
                .draining_shards
                .values()
                .filter(|d| d.target == t.id)
                .count();
            if (t.draining_shards as usize) > marked {
                warnings.push(format!(
                    "the list marks {} shard(s) of {} draining, but this function did not: the \
                     mark is removed",
                    t.draining_shards, t.id
                ));
            }
        }
    }
}

/// Files per shard: each distinct root once (the original layout lists `/` for every target).
struct Counts<'a> {
    by_root: &'a BTreeMap<String, u64>,
    file_count: u64,
}

impl<'a> Counts<'a> {
    fn of(
        obs: &'a Observed,
        shards: &[Shard],
        list: Option<&MountTargetList>,
        warnings: &mut Vec<String>,
    ) -> Counts<'a> {
        let mut roots: BTreeSet<String> = shards.iter().map(|s| s.root.clone()).collect();
        roots.insert("/".to_owned());
        if let Some(l) = list {
            roots.extend(l.shards().into_iter().map(|t| t.root));
        }
        let mut counts = Counts {
            by_root: &obs.files,
            file_count: 0,
        };
        counts.file_count = roots.iter().map(|r| counts.files_of(r)).sum();
        for (root, files) in &obs.files {
            if *files > 0 && !roots.contains(root) {
                warnings.push(format!(
                    "{files} files under {root} belong to no mount target and are not counted"
                ));
            }
        }
        for s in shards.iter().filter(|s| !s.target.state.is_active()) {
            warnings.push(format!(
                "mount target {} in {} is {}; it holds its AZ but serves no shard",
                s.target.id,
                s.target.az,
                s.target.state.as_str()
            ));
        }
        counts
    }

    fn files_of(&self, root: &str) -> u64 {
        self.by_root.get(root).copied().unwrap_or(0)
    }

    /// Files by shard root (the list's shards, then the first shard of each target not
    /// listed yet), and by mount target (all the shards it serves).
    fn per_shard_and_target(
        &self,
        list: &MountTargetList,
        shards: &[Shard],
    ) -> (BTreeMap<String, u64>, BTreeMap<String, u64>) {
        let mut per_shard = BTreeMap::new();
        let mut per_target = BTreeMap::new();
        for t in list.shards() {
            let files = self.files_of(&t.root);
            per_shard.insert(t.root.clone(), files);
            *per_target.entry(t.id).or_insert(0) += files;
        }
        for s in shards {
            if !per_target.contains_key(&s.target.id) {
                let files = self.files_of(&s.root);
                per_shard.entry(s.root.clone()).or_insert(files);
                per_target.insert(s.target.id.clone(), files);
            }
        }
        (per_shard, per_target)
    }
}

/// Where a new mount target may go.
struct Room<'a> {
    /// Subnets in the file system's VPC (and `SUBNET_IDS`), in AZs without a target, that the
    /// file system's type allows and AWS has not refused: lowest AZ id first.
    eligible: Vec<&'a Subnet>,
    az_capacity: usize,
    excluded: Vec<Excluded>,
}

impl<'a> Room<'a> {
    fn of(obs: &'a Observed, policy: &Policy, warnings: &mut Vec<String>) -> Room<'a> {
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
            .filter(|s| obs.state.exclusion(&s.id, &s.az_id, obs.now).is_none())
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
        let excluded: Vec<Excluded> = obs
            .state
            .excluded
            .iter()
            .filter(|(_, e)| e.until > obs.now)
            .map(|(key, e)| Excluded {
                key: key.clone(),
                until: e.until,
                reason: e.reason.clone(),
            })
            .collect();
        for e in &excluded {
            warnings.push(format!(
                "{} is left out of scale-out until {} (Unix time): {}",
                e.key, e.until, e.reason
            ));
        }
        let free_azs: BTreeSet<&str> = eligible.iter().map(|s| s.az_id.as_str()).collect();
        Room {
            az_capacity: used_azs.len() + free_azs.len(),
            eligible,
            excluded,
        }
    }

    /// What bounds the number of shards: `MAX_SHARDS`; for a modulo list, whatever bounds
    /// the number of mount targets.
    fn bound(&self, obs: &Observed, policy: &Policy, modulo: bool) -> Bound {
        if !modulo {
            return Bound::MaxShards(policy.max_shards.min(MAX_LIST_SHARDS));
        }
        let fs = &obs.file_system;
        if fs.is_one_zone() {
            return Bound::OneZone {
                az: fs
                    .one_zone_az
                    .clone()
                    .or_else(|| fs.one_zone_az_id.clone())
                    .unwrap_or_default(),
            };
        }
        match policy.max_mount_targets {
            Some(m) if m < self.az_capacity => Bound::MaxMountTargets(m),
            _ => Bound::Azs {
                usable: self.az_capacity,
                excluded: self.excluded.len(),
            },
        }
    }
}

/// How many shards and mount targets: needed by the files, possible, wanted.
struct Size {
    file_count: u64,
    /// Mount targets creating, available or updating.
    current: usize,
    /// Shards that take new files.
    current_shards: usize,
    needed: usize,
    desired_shards: usize,
    /// Mount targets wanted: one per shard while the AZs last.
    desired: usize,
    at_capacity: bool,
}

impl Size {
    fn of(
        file_count: u64,
        current: usize,
        current_shards: usize,
        az_capacity: usize,
        policy: &Policy,
        modulo: bool,
    ) -> Size {
        let target_limit = az_capacity
            .min(policy.max_mount_targets.unwrap_or(usize::MAX))
            .max(1);
        // A modulo list cannot have more shards than entries, one per mount target.
        let shard_limit = if modulo {
            target_limit
        } else {
            policy.max_shards.clamp(1, MAX_LIST_SHARDS)
        };
        let needed = shards_needed(file_count, policy.file_threshold);
        let desired_shards = needed.min(shard_limit);
        Size {
            file_count,
            current,
            current_shards,
            needed,
            desired_shards,
            desired: desired_shards.min(target_limit),
            at_capacity: needed > shard_limit,
        }
    }
}

/// The mean number of files per shard that keeps every shard at or below `threshold` once
/// balanced. Rendezvous sends each file to one of n shards with equal chance, so a shard's
/// count is binomial, with mean μ and a standard deviation below √μ; requiring
/// μ + 4·√μ ≤ threshold gives μ = (√(threshold + 4) − 2)². A shard then exceeds the threshold
/// with a chance under 1 in 30,000 (under 1 % for all of 256 shards at once). At the default
/// 50,000 that is 49,113 (1.8 % headroom); at 100 it is 67.
pub fn per_shard(threshold: u64) -> u64 {
    let root = ((threshold as f64) + 4.0).sqrt() - 2.0;
    ((root * root).floor() as u64).max(1)
}

/// The files `n` shards hold with none above `threshold`: all of them in one shard, else
/// `n` times [`per_shard`] (several shards are balanced only on average).
pub fn capacity(n: usize, threshold: u64) -> u64 {
    match n {
        0 => 0,
        1 => threshold,
        n => (n as u64).saturating_mul(per_shard(threshold)),
    }
}

/// The fewest shards whose [`capacity`] holds `files`: at least 1.
pub fn shards_needed(files: u64, threshold: u64) -> usize {
    if files <= threshold {
        return 1;
    }
    usize::try_from(files.div_ceil(per_shard(threshold)))
        .unwrap_or(usize::MAX)
        .max(2)
}

/// Hysteresis: a shard may go only well below the scale-out line (no flapping at it).
struct Band {
    files: f64,
    holds: bool,
}

impl Band {
    fn of(policy: &Policy, serving: usize, file_count: u64) -> Band {
        let files = policy.scale_in_ratio
            * capacity(serving.saturating_sub(1), policy.file_threshold) as f64;
        Band {
            files,
            holds: serving > 1 && file_count as f64 <= files,
        }
    }
}

/// What a scale-in would drain.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Candidate {
    /// The last shard of a target that serves several.
    Shard { id: String, root: String },
    /// A whole target (serving one shard).
    Target(String),
}

/// What a scale-in would drain. First a shard: the last of the serving target with the most
/// shards (the later in the list on a tie), since a target's shards go before the target.
/// Then a target: only one this function created (never the first shard, never one that was
/// there before), never one in a protected AZ; the one with the fewest files, the newest on
/// a tie.
fn scale_in_candidate(
    obs: &Observed,
    list: &MountTargetList,
    shards: &[Shard],
    counts: &Counts,
    state: &State,
) -> Option<Candidate> {
    let serves = |id: &str| serving(shards, id).is_some();
    let shard = list
        .mount_targets
        .iter()
        .enumerate()
        .filter(|(_, t)| t.shards > 1 && !t.draining && t.draining_shards == 0 && serves(&t.id))
        .max_by_key(|(i, t)| (t.shards, *i))
        .and_then(|(_, t)| {
            let az_id = t.az_id.as_deref()?;
            Some(Candidate::Shard {
                id: t.id.clone(),
                root: extra_root(az_id, t.shards - 1),
            })
        });
    if shard.is_some() {
        return shard;
    }
    let protected =
        |az: &Option<String>| az.as_ref().is_some_and(|az| obs.protected_azs.contains(az));
    list.mount_targets
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            t.root != "/"
                && t.shards == 1
                && state.created.contains_key(&t.id)
                && !protected(&t.az_id)
        })
        .min_by_key(|(i, t)| (counts.files_of(&t.root), std::cmp::Reverse(*i)))
        .map(|(_, t)| Candidate::Target(t.id.clone()))
}

fn rollouts_failed(obs: &Observed, warnings: &mut Vec<String>) -> Vec<String> {
    let mut failed = Vec::new();
    for d in &obs.deployments {
        if let Some(why) = &d.rollout_failed {
            failed.push(d.service.clone());
            warnings.push(format!(
                "the rollout of service {}'s newest deployment failed ({why}); its tasks still \
                 run the previous deployment and the list it had",
                d.service
            ));
        }
    }
    failed
}

/// Everything [`decide`] looks at, as plain values.
struct Situation<'a> {
    size: &'a Size,
    /// The drain under way, if any.
    drain: Option<DrainView>,
    /// Why no file may move now.
    moves_wait: Option<MovesWait>,
    creating: Option<&'a Shard>,
    allow_create: bool,
    /// Where a new target would go, if anywhere.
    next_target: Option<NewTarget>,
    /// Shards the serving targets can take now, towards the desired number.
    shards_to_add: usize,
    bound: &'a Bound,
    in_band: bool,
    /// The list is `modulo-sha256`: no entry may leave it.
    modulo: bool,
    /// The migrate event, with the number of entries of the list it republishes.
    migrating: Option<usize>,
    candidate: Option<Candidate>,
    below_since: Option<u64>,
    last_scale_out: Option<u64>,
    cooldown: u64,
    now: u64,
}

/// A drain as [`decide`] sees it.
#[derive(Debug, Clone)]
struct DrainView {
    /// The target drained, or the one whose shard is drained.
    id: String,
    az: String,
    root: String,
    /// One shard of a target that keeps serving its others: it leaves the list once empty.
    shard: bool,
    /// The roots it drains that still hold a file (nested ones too).
    with_files: Vec<String>,
    /// The list without it has been published; the target goes next.
    unlisted: bool,
    /// Someone else deleted the target; only its root is left to empty.
    gone: bool,
}

/// The one decision of a run, in order of precedence: the migrate event; a drain under way
/// is finished (or cancelled by growth); then growth (a mount target, then shards); then
/// capacity; then scale-in.
fn decide(s: &Situation) -> Decision {
    if let Some(entries) = s.migrating {
        return Decision::Migrate { entries };
    }
    // A drain yields to growth: a drain is cancelled, and the root of a target gone by hand
    // (which cannot serve again) waits while shards or a target are added.
    let growing = s.size.desired_shards > s.size.current_shards;
    if let Some(d) = s.drain.as_ref().filter(|d| !(d.gone && growing)) {
        let id = d.id.clone();
        return if growing {
            Decision::CancelDrain { id }
        } else if let Some(wait) = &s.moves_wait {
            // publish → converge → move → publish → converge → delete.
            match wait {
                // The clients run the published list, not the one the state implies.
                MovesWait::ListPending => Decision::PublishFirst { id },
                MovesWait::Fleet(services) => Decision::WaitForFleet {
                    id,
                    services: services.clone(),
                },
                MovesWait::Refresh(left) => Decision::WaitForRefresh { id, left: *left },
            }
        } else if let Some(root) = d.with_files.first() {
            Decision::MoveDrained {
                id,
                az: d.az.clone(),
                root: root.clone(),
            }
        } else if d.shard && !d.unlisted {
            Decision::DropShard {
                id,
                root: d.root.clone(),
            }
        } else if d.shard {
            // Dropped, and the list without it is the one published: nothing left to do
            // (the next run forgets it).
            Decision::Keep {
                fewer_would_do: false,
            }
        } else if d.gone {
            Decision::DropGone { id }
        } else if !d.unlisted {
            Decision::Unlist { id }
        } else {
            Decision::DeleteDrained { id }
        };
    }
    let short_of_targets = s.size.desired > s.size.current;
    if short_of_targets {
        if let Some(c) = s.creating {
            return Decision::WaitForCreating {
                id: c.target.id.clone(),
                az: c.target.az.clone(),
            };
        } else if !s.allow_create {
            return Decision::OneARun;
        } else if let Some(new) = &s.next_target {
            return Decision::Create(new.clone());
        }
    }
    if s.shards_to_add > 0 {
        return Decision::AddShards {
            added: s.shards_to_add,
        };
    }
    if s.size.at_capacity || (short_of_targets && s.modulo) {
        return Decision::AtCapacity(s.bound.clone());
    }
    if s.in_band {
        let held = s.now.saturating_sub(s.below_since.unwrap_or(s.now));
        let after_scale_out = s.last_scale_out.map(|t| s.now.saturating_sub(t));
        return match &s.candidate {
            None if s.modulo => Decision::Hold(Hold::ModuloList),
            None => Decision::Hold(Hold::NoCandidate),
            Some(_) if held < s.cooldown => Decision::Hold(Hold::Settling {
                held,
                cooldown: s.cooldown,
            }),
            Some(_) if after_scale_out.is_some_and(|t| t < s.cooldown) => {
                Decision::Hold(Hold::RecentScaleOut {
                    ago: after_scale_out.unwrap_or_default(),
                    cooldown: s.cooldown,
                })
            }
            Some(Candidate::Target(id)) => Decision::StartDrain {
                id: id.clone(),
                held,
            },
            Some(Candidate::Shard { id, root }) => Decision::StartShardDrain {
                id: id.clone(),
                root: root.clone(),
                held,
            },
        };
    }
    Decision::Keep {
        fewer_would_do: s.size.desired_shards < s.size.current_shards,
    }
}

/// The decision in words, for the response and the log.
fn reason(decision: &Decision, size: &Size, band: &Band, policy: &Policy, modulo: bool) -> String {
    let serving = size.current_shards;
    let need = format!(
        "{} files need {} shard{} (at most {} files each, {} on average); {} serving on {} \
         mount target{}",
        size.file_count,
        size.needed,
        if size.needed == 1 { "" } else { "s" },
        policy.file_threshold,
        per_shard(policy.file_threshold),
        serving,
        size.current,
        if size.current == 1 { "" } else { "s" },
    );
    let current = size.current;
    let in_band = format!(
        "{need}; within the scale-in band (<= {:.0} files)",
        band.files
    );
    let migrate_lifts = if modulo {
        "; a modulo-sha256 list has one shard per mount target: the event \
         {\"action\":\"migrate\",\"strategy\":\"rendezvous\"} lifts that cap"
    } else {
        ""
    };
    match decision {
        Decision::Migrate { entries } => format!(
            "the migrate event: the list of {entries} entries goes out under rendezvous (each \
             keeps its target; those that shared / get /shards/<az-id>); misplaced files are \
             found through the fallback and moved home by the rebalance"
        ),
        Decision::Create(n) => format!(
            "{need}; adding a mount target in {} ({}, {})",
            n.az, n.az_id, n.subnet_id
        ),
        Decision::AddShards { added } => format!(
            "{need}; no mount target to add (no free AZ, MAX_MOUNT_TARGETS or One Zone), so \
             the {current} there take {added} new shard{} between them",
            if *added == 1 { "" } else { "s" }
        ),
        Decision::DropShard { id, root } => format!(
            "{need}; shard {root} of {id} is drained (its tree is empty): it leaves the list"
        ),
        Decision::StartShardDrain { id, root, held } => {
            format!(
                "{in_band} for {held} s: draining shard {root} of {id} before it leaves the list"
            )
        }
        Decision::AtCapacity(Bound::MaxShards(m)) => {
            format!("{need}; MAX_SHARDS is {m}: at capacity")
        }
        Decision::WaitForCreating { id, az } => {
            format!("{need}; have {current}; waiting for {id} in {az} before adding another")
        }
        Decision::OneARun => format!("{need}; have {current}; one new mount target a run"),
        Decision::CancelDrain { id } => {
            format!("{need}; {serving} serving: the growth cancels the drain of {id}")
        }
        Decision::MoveDrained { id, az, root } => format!(
            "{need}; draining {id} ({az}): the files under {root} move to their homes first"
        ),
        Decision::WaitForFleet { id, services } => format!(
            "{need}; draining {id}: nothing moves or goes until every service runs the list \
             published last (waiting for {})",
            services.join(", ")
        ),
        Decision::PublishFirst { id } => format!(
            "{need}; draining {id}: the list that says so goes out first (the one published \
             is not it); nothing moves or goes until every service runs it"
        ),
        Decision::Unlist { id } => format!(
            "{need}; {id} is drained (its tree is empty): the list goes out without it; the \
             target goes once the services run that list"
        ),
        Decision::DropGone { id } => format!(
            "{need}; the shard of {id}, deleted outside this function, is empty: its root \
             leaves the list"
        ),
        Decision::DeleteDrained { id } => format!(
            "{need}; {id} is drained and unlisted, and every service runs the list without it: \
             deleting it"
        ),
        Decision::WaitForRefresh { id, left } => format!(
            "{need}; draining {id}: its files move (and it goes) once clients that refresh the \
             list have read it ({left} s more, CLIENT_REFRESH_SECONDS)"
        ),
        Decision::StartDrain { id, held } => {
            format!("{in_band} for {held} s: draining {id} before removing it")
        }
        Decision::Hold(Hold::NoCandidate) => format!(
            "{in_band}, but none may go: the first shard `/`, targets this function did not \
             create and targets in protected AZs stay"
        ),
        Decision::Hold(Hold::Settling { held, cooldown }) => {
            format!("{in_band} for {held} s of {cooldown} s")
        }
        Decision::Hold(Hold::ModuloList) => format!(
            "{in_band}, but the list is modulo-sha256: removing an entry would re-home most \
             files, so none goes"
        ),
        Decision::Hold(Hold::RecentScaleOut { ago, cooldown }) => {
            format!("{in_band}, but the last scale-out was {ago} s ago (cool-down {cooldown} s)")
        }
        Decision::AtCapacity(Bound::OneZone { az }) => format!(
            "{need}; a One Zone file system (in {az}) takes exactly one mount target, in its \
             own AZ: at capacity{migrate_lifts}"
        ),
        Decision::AtCapacity(Bound::MaxMountTargets(m)) => {
            format!("{need}; MAX_MOUNT_TARGETS is {m}: at capacity{migrate_lifts}")
        }
        Decision::AtCapacity(Bound::Azs { usable, excluded }) => format!(
            "{need}; no AZ without a mount target has an eligible subnet ({usable} AZ{} \
             usable{}): at capacity{migrate_lifts}",
            if *usable == 1 { "" } else { "s" },
            match excluded {
                0 => String::new(),
                n => format!("; {n} subnet(s) or AZ(s) left out after AWS refused them"),
            }
        ),
        Decision::Keep {
            fewer_would_do: true,
        } => format!("{need}: above the scale-in band, keeping them"),
        Decision::Keep {
            fewer_would_do: false,
        } => format!("{need}: nothing to add"),
    }
}

/// What every run does whatever it decided: make missing shard directories, wait for
/// targets still creating, publish a changed list, redeploy services older than the list.
fn housekeeping(
    obs: &Observed,
    policy: &Policy,
    shards: &[Shard],
    creating: &[&Shard],
    published: Option<&MountTargetList>,
    list: &MountTargetList,
    steps: &mut Vec<Step>,
) {
    let mut roots: Vec<String> = shards
        .iter()
        .filter(|s| s.target.state.is_active())
        .map(|s| s.root.clone())
        .collect();
    // New shards of a serving target get their directory before the list names them.
    for t in list.shards() {
        if serving(shards, &t.id).is_some() && !t.draining && !roots.contains(&t.root) {
            roots.push(t.root);
        }
    }
    for root in roots {
        if !obs.files.contains_key(&root) && !obs.unreadable.contains_key(&root) {
            steps.push(Step::CreateShardDir { root });
        }
    }
    for s in creating {
        steps.push(Step::Wait {
            mount_target_id: s.target.id.clone(),
        });
    }
    let publish = published != Some(list);
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
}

/// Seconds left before clients that re-read the list every `CLIENT_REFRESH_SECONDS` have all
/// read the one published last (0 when they have, or when no client refreshes by itself).
fn refresh_left(obs: &Observed, policy: &Policy) -> u64 {
    (published_at(obs).unwrap_or(0) + policy.client_refresh_secs).saturating_sub(obs.now)
}

/// When the list was last published (Unix seconds), if it exists.
fn published_at(obs: &Observed) -> Option<u64> {
    obs.parameter
        .as_ref()
        .and_then(|p| p.last_modified)
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map(|d| d.as_secs())
}

/// The list clients should see. A listed target leaves it only through a drain:
/// - the published order is kept (modulo routing depends on it), each entry refreshed from
///   what was observed; a target re-created in the same AZ takes its predecessor's place;
/// - an entry whose target is not seen (or not serving) keeps its place; a target gone for
///   good keeps its root listed, draining, until its files are home;
/// - a target is marked draining as the state (not the list) says; one drained and unlisted
///   is left out;
/// - new targets are appended once `available`, with an address and their shard directory.
fn rebuild_list(
    published: Option<&MountTargetList>,
    shards: &[Shard],
    state: &State,
    obs: &Observed,
) -> MountTargetList {
    let servable = |s: &&Shard| {
        matches!(s.target.state, LifeCycle::Available | LifeCycle::Updating)
            && s.target.ip.is_some()
    };
    let unlisted = |id: &str| state.draining.get(id).is_some_and(|d| d.unlisted);
    let draining = |id: &str| state.draining.get(id).is_some_and(|d| !d.unlisted);
    let entry = |s: &Shard, shards: u32| Target {
        id: s.target.id.clone(),
        ip: s.target.ip.clone().unwrap_or_default(),
        az: Some(s.target.az.clone()),
        az_id: Some(s.target.az_id.clone()),
        subnet_id: Some(s.target.subnet_id.clone()),
        root: s.root.clone(),
        draining: draining(&s.target.id),
        shards,
        draining_shards: 0,
    };
    let strategy = published.map_or(Strategy::Rendezvous, |l| l.strategy);
    let mut out = MountTargetList::new(strategy);
    let mut used = BTreeSet::new();
    for e in published.map(|l| l.mount_targets.as_slice()).unwrap_or(&[]) {
        if unlisted(&e.id) {
            continue;
        }
        let found = shards
            .iter()
            .filter(servable)
            .find(|s| s.target.id == e.id)
            .or_else(|| {
                shards.iter().filter(servable).find(|s| {
                    e.az_id.as_deref() == Some(s.target.az_id.as_str()) && s.root == e.root
                })
            });
        match found.filter(|s| !used.contains(&s.target.id)) {
            Some(s) => {
                used.insert(s.target.id.clone());
                // It keeps the shards its entry gives it (a re-created target inherits them).
                out.mount_targets.push(entry(s, e.shards.max(1)));
            }
            None => {
                // Not serving now (missing for a run, gone with files left, updating without
                // an address): the entry stays where it is.
                used.insert(e.id.clone());
                out.mount_targets.push(Target {
                    draining: strategy == Strategy::Rendezvous && draining(&e.id),
                    ..e.clone()
                });
            }
        }
    }
    for s in shards.iter().filter(servable) {
        if !used.contains(&s.target.id)
            && !unlisted(&s.target.id)
            && obs.files.contains_key(&s.root)
        {
            used.insert(s.target.id.clone());
            out.mount_targets.push(entry(s, 1));
        }
    }
    // Shards are marked draining as the state says: only ever the last of a target's; one
    // drained and unlisted is left out.
    for e in &mut out.mount_targets {
        let last = e
            .az_id
            .as_deref()
            .filter(|_| e.shards > 1)
            .map(|az_id| extra_root(az_id, e.shards - 1));
        let unlisted = last
            .as_ref()
            .and_then(|root| state.draining_shards.get(root))
            .is_some_and(|d| d.unlisted && d.target == e.id);
        if unlisted {
            e.shards -= 1;
        }
        let marked = state
            .draining_shards
            .values()
            .filter(|d| d.target == e.id && !d.unlisted)
            .count() as u32;
        e.draining_shards = if e.draining {
            0
        } else {
            marked.min(e.shards - 1)
        };
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observed::{Deployment, FileSystem, MountTarget, Parameter};
    use crate::state::State;
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
        // Published as it was before the files grew: one shard.
        o.parameter = Some(Parameter {
            list: plan(
                &o,
                &Policy {
                    file_threshold: 1 << 50,
                    ..policy()
                },
            )
            .list,
            last_modified: at(100),
        });
        o
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
        // The list as published once the target served: one shard each, nothing grown yet.
        let list = plan(
            o,
            &Policy {
                file_threshold: 1 << 50,
                ..policy()
            },
        )
        .list;
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
        assert!(p.reason.contains("MAX_SHARDS is 12"), "{}", p.reason);
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
        assert!(
            p.reason
                .contains(r#"{"action":"migrate","strategy":"rendezvous"}"#),
            "{}",
            p.reason
        );
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
        assert!(p2.warnings.iter().any(|w| w.contains("nothing to migrate")));
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
        assert!(p.warnings.iter().any(|w| w.contains("subnet-x")));
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
        assert!(
            p.warnings.iter().any(|w| w.contains("did not")),
            "{:?}",
            p.warnings
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
        assert!(p.reason.contains("migrate"), "{}", p.reason);
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
                    !p.steps.iter().any(|s| matches!(
                        s,
                        Step::MoveFiles { .. } | Step::DeleteMountTarget { .. }
                    )),
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
        assert!(
            p.warnings.iter().any(|w| w.contains("did not")),
            "{:?}",
            p.warnings
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

    /// The decision's name, for the table below.
    fn kind(d: &Decision) -> &'static str {
        match d {
            Decision::Migrate { .. } => "migrate",
            Decision::Create(_) => "create",
            Decision::AddShards { .. } => "add shards",
            Decision::DropShard { .. } => "drop shard",
            Decision::StartShardDrain { .. } => "start shard drain",
            Decision::WaitForCreating { .. } => "wait for creating",
            Decision::OneARun => "one a run",
            Decision::CancelDrain { .. } => "cancel drain",
            Decision::MoveDrained { .. } => "move drained files",
            Decision::DeleteDrained { .. } => "delete drained",
            Decision::WaitForFleet { .. } => "wait for the fleet",
            Decision::Unlist { .. } => "unlist",
            Decision::PublishFirst { .. } => "publish first",
            Decision::DropGone { .. } => "drop gone",
            Decision::WaitForRefresh { .. } => "wait for refresh",
            Decision::StartDrain { .. } => "start drain",
            Decision::Hold(_) => "hold",
            Decision::AtCapacity(_) => "at capacity",
            Decision::Keep { .. } => "keep",
        }
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
                "one a run",
            ),
            (
                "a target is still creating",
                creating_b,
                &default,
                "wait for creating",
            ),
            (
                "a draining shard with files",
                draining_c(100, 10, 5),
                &default,
                "move drained files",
            ),
            (
                "clients have not refreshed yet",
                draining_c(100, 10, 5),
                &refreshing,
                "wait for refresh",
            ),
            (
                "nor for an empty shard",
                draining_c(100, 10, 0),
                &refreshing,
                "wait for refresh",
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
                "delete drained",
            ),
            (
                "a drain while old tasks run",
                {
                    let mut o = draining_c(100, 10, 5);
                    o.deployments[0].others_running = 1;
                    o
                },
                &default,
                "wait for the fleet",
            ),
            (
                "growth during a drain",
                draining_c(150_000, 10, 5),
                &default,
                "cancel drain",
            ),
            (
                "the band held long enough",
                three_shards(100, 10, 5),
                &no_cooldown,
                "start drain",
            ),
            (
                "the band just began",
                three_shards(100, 10, 5),
                &default,
                "hold",
            ),
            (
                "more needed than MAX_SHARDS allows",
                three_shards(100_000, 50_000, 50_000),
                &three_max,
                "at capacity",
            ),
            (
                "one target allowed, more shards needed",
                world(200_000),
                &one_max,
                "add shards",
            ),
            (
                "the AZs exhausted",
                three_shards(100_000, 50_000, 50_000),
                &default,
                "add shards",
            ),
            (
                "a modulo list at capacity",
                {
                    let mut o = three_shards(100_000, 50_000, 50_000);
                    o.parameter.as_mut().unwrap().list.strategy = Strategy::ModuloSha256;
                    o
                },
                &default,
                "at capacity",
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
                "start shard drain",
            ),
            (
                "a draining shard with files",
                draining_shard(5),
                &default,
                "move drained files",
            ),
            ("a drained shard", draining_shard(0), &default, "drop shard"),
            ("few files, one target", world(10), &default, "keep"),
        ];
        for (case, o, policy, want) in table {
            let p = plan(&o, policy);
            assert_eq!(kind(&p.decision), want, "{case}: {:?}", p.decision);
        }
    }
}
