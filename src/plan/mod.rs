//! The decision, as a pure function of what was observed: no I/O, no clock.
//!
//! Level-triggered like a Kubernetes controller: it assumes nothing about why it runs or
//! what the last run finished, so a run that died anywhere is finished by the next one.
//!
//! A plan is made in parts, one file each, each a small function of plain data: the counts
//! (files per shard), the room (where a new mount target may go), the state brought up to
//! date with AWS, the fleet, the list clients should see, the size (how many are needed,
//! wanted and possible), one [`Decision`] chosen by [`decide`], its effect (one exhaustive
//! match), the reason rendered from it, and the upkeep every run does whatever was decided
//! (shard directories, waits, publish, redeploy). [`plan`] is that pipeline.

mod clients;
mod comparison;
mod counts;
mod decision;
mod effect;
mod fleet;
mod list;
mod placements;
mod policy;
mod reason;
mod rendezvous;
mod room;
mod scale_in;
mod sizing;
mod step;
mod tasks;
#[cfg(test)]
mod tests;
mod tracking;
mod upkeep;
mod warning;

pub use clients::Behind;
pub use comparison::{comparison, Comparison};
pub use decision::Decision;
pub use fleet::MovesWait;
pub use policy::{ClientReports, Policy};
pub use room::Excluded;
pub use step::{NewTarget, SecurityGroups, Step, StepKind};
pub use tasks::OldTask;
pub use warning::Warning;

use counts::Counts;
use decision::{decide, Bound, Situation};
use effect::{Effect, Outcome};
use fleet::Fleet;
use list::{grow_shards, rebuild_list, serving_shards};
use reason::reason;
use rendezvous::to_rendezvous;
use room::Room;
use scale_in::{drain_under_way, scale_in_candidate};
use sizing::{Band, Limits, Size};
use tracking::track_targets;
use upkeep::upkeep;

use crate::observed::{LifeCycle, Observed};
use crate::shard::{self, FirstRoot};
use crate::state::State;
use efs_router::list::{MountTargetList, Strategy};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Each mount target's first shard.
    pub shards: Vec<FirstRoot>,
    pub file_count: u64,
    /// Files in each shard of the list (by root), and in each root that holds files but
    /// belongs to no listed shard yet.
    pub files_per_shard: BTreeMap<String, u64>,
    /// Files in all the shards each mount target serves, by mount target id.
    pub files_per_target: BTreeMap<String, u64>,
    /// Mount targets creating, available or updating (the response's `total`, the metric
    /// `MountTargets`: one number, named as the contract names it in each).
    pub current: usize,
    /// Shards that take new files once the steps have run (and those of targets still
    /// creating, which will).
    pub current_shards: usize,
    /// Shards the files need (`ceil(files / per-shard mean)`, at least 1), before any bound.
    pub needed: usize,
    /// AZs that can hold a mount target that serves (with one, or with a free eligible subnet).
    pub az_capacity: usize,
    /// Mount targets wanted.
    pub desired: usize,
    /// Shards wanted: `needed` within `MAX_SHARDS` (and, for a modulo list, the targets).
    pub desired_shards: usize,
    /// Needed more shards than `MAX_SHARDS` (or, for a modulo list, the targets) allow; not
    /// while the list is held at version 1 (`list_version_held` says so).
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
    /// Live clients by the version of the list they route by (`unknown`: a report unread).
    pub clients_by_version: BTreeMap<String, u64>,
    /// Seconds since the list was published, while some live client is behind (else 0).
    pub clients_behind_secs: u64,
    /// More shards are needed than one per target, and the list stays version 1 because
    /// not every live client reads version 2.
    pub list_version_held: bool,
    /// Tasks ECS wants running with no live report naming them (`CLIENT_REPORTS=require`):
    /// they hold every move, whatever else does too.
    pub unreported: Vec<Behind>,
    pub reason: String,
    /// Things an operator should know that change nothing (a target in `error`, say).
    pub warnings: Vec<Warning>,
}

/// The plan for what was observed, in this order: what was seen ([`Seen`]), the list clients
/// should see, the size, one [`Decision`], its effect, and the upkeep every run does; the
/// steps then go in [`StepKind`]'s order.
pub fn plan(obs: &Observed, policy: &Policy) -> Plan {
    let seen = Seen::of(obs, policy);
    let (base, shards, state) = (seen.base(), &seen.shards[..], &seen.state);
    let settle = |list| {
        let balanced = state.rebalancing.balanced.as_ref();
        placements::settle(list, seen.published, balanced, seen.fleet.clients.read_v3)
    };
    let list = settle(rebuild_list(base, shards, state, obs));
    let moves_wait = seen.fleet.moves_wait(seen.published != Some(&list));
    let drain = drain_under_way(&list, base, shards, state, obs);
    let held = version_held(&seen);
    let limits = Limits::of(&seen.room, obs, policy, seen.modulo, held.clone());
    let current = shards.iter().filter(|s| s.target.state.is_active()).count();
    let serving = serving_shards(&list, shards, state);
    let mut size = Size::of(seen.counts.file_count, current, serving, policy, &limits);
    if policy.undo && !seen.modulo {
        size = size.undoing();
    }
    let band = Band::of(policy, size.current_shards, seen.counts.file_count);
    let growth = match seen.modulo {
        true => Vec::new(),
        false => grow_shards(&list, shards, size.desired_shards, size.desired),
    };
    let decision = decide(&Situation {
        size: &size,
        drain: drain.as_ref(),
        moves_wait: moves_wait.as_ref(),
        creating: shards
            .iter()
            .find(|s| s.target.state == LifeCycle::Creating),
        allow_create: policy.allow_create,
        next_target: seen.room.next_target(policy, shards),
        shards_to_add: growth.iter().map(|(_, added)| *added as usize).sum(),
        bound: &limits.shards.bound,
        in_band: band.holds,
        modulo: seen.modulo,
        migrating: seen.migrated.as_ref().map(|l| l.mount_targets.len()),
        candidate: scale_in_candidate(obs, &list, shards, &seen.counts, state, policy.undo)
            .filter(|_| !seen.modulo),
        below_since: state.below_since,
        last_scale_out: state.last_scale_out,
        cooldown: policy.scale_in_cooldown_secs,
        now: obs.now.secs(),
        undo: (policy.undo && !seen.modulo).then(|| left_after_undo(obs)),
    });
    let reason = reason(&decision, &size, &band, policy);
    let mut warnings = seen.warnings.clone();
    let list_version_held = matches!(limits.shards.bound, Bound::ListVersion { .. })
        && size.needed > limits.shards.most;
    if list_version_held {
        warnings.push(Warning::ListVersionHeld {
            needed: size.needed,
            most: limits.shards.most,
            clients: held.unwrap_or_default(),
        });
    }
    let effect = Effect {
        obs,
        base,
        shards,
        drain: drain.as_ref(),
        growth: &growth,
    };
    let Outcome {
        mut state,
        list,
        mut steps,
    } = effect.of(&decision, state.clone(), list);
    // A drain moves files where they are not at home under the shards the rebalance last
    // balanced against: its comparison after growth must not rely on them any more.
    if !state.draining.is_empty() || !state.draining_shards.is_empty() {
        state.rebalancing.balanced = None;
    }
    // Saved when it changed, or when it was carried over from the old file.
    if state != obs.state || (!obs.state_stored && state != State::default()) {
        steps.push(Step::SaveState(state.clone()));
    }
    // The effect may have changed the shards: what is open follows them.
    let list = placements::settle(
        list,
        seen.published,
        state.rebalancing.balanced.as_ref(),
        seen.fleet.clients.read_v3,
    );
    upkeep(obs, policy, shards, seen.published, &list, &mut steps);
    steps.sort_by_key(Step::kind);
    let (files_per_shard, files_per_target) = seen.counts.per_shard_and_target(&list, shards);
    let unreported = seen.fleet.clients.unreported();
    Plan {
        current_shards: serving_shards(&list, shards, &state),
        file_count: seen.counts.file_count,
        files_per_shard,
        files_per_target,
        current,
        needed: size.needed,
        az_capacity: seen.room.az_capacity,
        desired: size.desired,
        desired_shards: size.desired_shards,
        // Held at version 1, the routers are the bound, not MAX_SHARDS: `list_version_held`.
        at_capacity: size.at_capacity && !list_version_held,
        decision,
        list,
        steps,
        moves_wait,
        unreadable: obs.unreadable.len(),
        reason,
        excluded: seen.room.excluded,
        rollouts_failed: seen.fleet.rollouts_failed,
        fleet_stuck: seen.fleet.stuck,
        clients_by_version: seen.fleet.clients.by_version,
        clients_behind_secs: seen.fleet.clients.behind_secs,
        list_version_held,
        unreported,
        warnings,
        shards: seen.shards,
    }
}

/// The live clients that keep the list on version 1 when it is version 1 now and not every
/// one of them reads version 2 (none, when no client reports). A list that is version 2
/// already stays so: its readers are running.
fn version_held(seen: &Seen) -> Option<Vec<String>> {
    let v2 = seen.base().is_some_and(MountTargetList::needs_version_2);
    let clients = &seen.fleet.clients;
    (!seen.modulo && !v2 && !clients.read_v2).then(|| clients.v1_only.clone())
}

/// What the undo event leaves: every mount target AWS shows (those it did not create, and the
/// one serving `/`), and the shard directories other than `/` that still exist.
fn left_after_undo(obs: &Observed) -> (Vec<String>, Vec<String>) {
    let targets = obs.mount_targets.iter().map(|t| t.id.clone()).collect();
    let roots = obs.files.keys().filter(|r| *r != "/").cloned().collect();
    (targets, roots)
}

/// How many mount targets should serve a shard: as many as the files need shards (within
/// `MAX_MOUNT_TARGETS`), whatever targets exist. A modulo list keeps one entry a target, as
/// the deployments already on it have.
fn targets_wanted(obs: &Observed, policy: &Policy, strategy: Strategy) -> usize {
    if strategy == Strategy::ModuloSha256 {
        return usize::MAX;
    }
    if policy.undo {
        return 1;
    }
    let files = obs.files.values().sum();
    sizing::shards_needed(files, policy.file_threshold)
        .min(policy.max_mount_targets.unwrap_or(usize::MAX))
}

/// What a plan starts from: the observation in the plan's terms, with every warning it gives.
struct Seen<'a> {
    published: Option<&'a MountTargetList>,
    /// The migrate event's list: the published one under rendezvous.
    migrated: Option<MountTargetList>,
    /// Each mount target's first shard.
    shards: Vec<FirstRoot>,
    counts: Counts<'a>,
    room: Room<'a>,
    /// The list is `modulo-sha256`.
    modulo: bool,
    /// The function's state, brought up to date with what AWS shows.
    state: State,
    fleet: Fleet,
    warnings: Vec<Warning>,
}

impl<'a> Seen<'a> {
    fn of(obs: &'a Observed, policy: &Policy) -> Seen<'a> {
        let published = obs.parameter.as_ref().map(|p| &p.list);
        let mut warnings = obs.warnings.clone();
        // The migrate event: the plan starts from the list as rendezvous would have it;
        // upkeep's comparison with what is published makes it go out.
        let migrated = policy
            .migrate
            .then(|| to_rendezvous(published, obs, &mut warnings))
            .flatten();
        let base = migrated.as_ref().or(published);
        let strategy = base.map_or(Strategy::Rendezvous, |l| l.strategy);
        let shards = shard::assign(
            &obs.mount_targets,
            base,
            |root| obs.files.contains_key(root),
            targets_wanted(obs, policy, strategy),
        );
        let counts = Counts::of(obs, &shards, base, &mut warnings);
        let room = Room::of(obs, policy, &mut warnings);
        for (root, why) in &obs.unreadable {
            warnings.push(Warning::ShardSkipped {
                root: root.clone(),
                why: why.clone(),
            });
        }
        let mut state = obs.state.clone();
        track_targets(
            obs,
            base,
            &shards,
            strategy,
            policy.undo,
            &mut state,
            &mut warnings,
        );
        let fleet = Fleet::of(obs, policy, &mut warnings);
        Seen {
            published,
            migrated,
            shards,
            counts,
            room,
            modulo: strategy == Strategy::ModuloSha256,
            state,
            fleet,
            warnings,
        }
    }

    /// The list the plan starts from: the migrated one, else the published one.
    fn base(&self) -> Option<&MountTargetList> {
        self.migrated.as_ref().or(self.published)
    }
}
