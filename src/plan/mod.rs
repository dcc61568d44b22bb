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

mod counts;
mod decision;
mod fleet;
mod list;
mod policy;
mod reason;
mod rendezvous;
mod room;
mod scale_in;
mod sizing;
mod step;
#[cfg(test)]
mod tests;
mod tracking;
mod upkeep;

pub use decision::Decision;
pub use fleet::{MovesWait, FLEET_PATIENCE_SECS};
pub use policy::Policy;
pub use room::Excluded;
pub use step::{NewTarget, SecurityGroups, Step};

use counts::Counts;
use decision::{decide, Situation};
use fleet::{fleet_waiting, published_at, refresh_left, rollouts_failed};
use list::{grow_shards, rebuild_list, serving_shards};
use reason::reason;
use rendezvous::migrate;
use room::Room;
use scale_in::{drain_under_way, scale_in_candidate};
use sizing::{Band, Size};
use tracking::track_targets;
use upkeep::housekeeping;

use crate::observed::{LifeCycle, Observed};
use crate::shard::{self, Shard};
use crate::state::{Drain, ShardDrain, State};
use efs_router::list::{MountTargetList, Strategy};
use std::collections::BTreeMap;

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
