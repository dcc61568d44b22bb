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

mod announcement;
mod clients;
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

pub use announcement::Homes;
pub use clients::Behind;
pub use decision::Decision;
pub use fleet::MovesWait;
pub use policy::{ClientReports, ClosePlacements, Policy};
pub use room::Excluded;
pub use step::{NewTarget, SecurityGroups, Step, StepKind};
pub use tasks::OldTask;
pub use warning::{capped, Warning, WARNINGS_PER_KIND};

use counts::Counts;
use decision::{decide, Bound, Situation};
pub use effect::Waits;
use effect::{Effect, EffectInputs};
use fleet::Fleet;
use list::{rebuild_list, serving_shards};
use placements::Writers;
use reason::reason;
use rendezvous::to_rendezvous;
use room::Room;
use scale_in::drain_under_way;
use sizing::{Size, Sizing};
use tracking::track_targets;
use upkeep::upkeep;

use crate::observed::Observed;
use crate::shard::{self, FirstRoot};
use crate::state::State;
use efs_router::list::{MountTargetList, Strategy};
use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Each mount target's first shard.
    pub first_roots: Vec<FirstRoot>,
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
    pub usable_azs: usize,
    /// Mount targets wanted.
    pub desired: usize,
    /// Shards wanted: `needed` within `MAX_SHARDS` (and, for a modulo list, the targets).
    pub desired_shards: usize,
    /// Needed more shards than `MAX_SHARDS` (or, for a modulo list, the targets) allow; not
    /// while the list is held at version 1 (`list_version_held` says so).
    pub at_capacity: bool,
    pub decision: Decision,
    /// What the decision waits for, named in the response's `waiting_for`.
    pub waits: Waits,
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
    /// Where the homes of the list stand: kept, announced, switched ([`Homes`]).
    pub homes: Homes,
}

/// The plan for what was observed, in this order: what was seen ([`Seen`]), the list clients
/// should see, the size, one [`Decision`], its effect, and the upkeep every run does; the
/// steps then go in [`StepKind`]'s order.
pub fn plan(obs: &Observed, policy: &Policy) -> Plan {
    let seen = Seen::of(obs, policy);
    let (base, shards, state) = (seen.base(), &seen.first_roots[..], &seen.state);
    let list = seen.settle(rebuild_list(base, shards, state, obs), state);
    let moves_wait = seen.fleet.moves_wait(seen.published != Some(&list));
    let drain = drain_under_way(&list, base, shards, state, obs);
    let held = version_held(&seen);
    let sizing = Sizing::of(&seen, obs, policy, &list, held.clone());
    let (drain_view, wait) = (drain.as_ref(), moves_wait.as_ref());
    let decision = decide(&Situation::of(
        &seen, obs, policy, &list, &sizing, drain_view, wait,
    ));
    let Sizing {
        size,
        limits,
        band,
        growth,
    } = sizing;
    let reason = reason(&decision, &size, &band, policy);
    let mut warnings = seen.warnings.clone();
    warnings.extend(decision.warning());
    let list_version_held = matches!(limits.shards.bound, Bound::ListVersion { .. })
        && size.needed > limits.shards.most;
    if list_version_held {
        warnings.push(Warning::ListVersionHeld {
            needed: size.needed,
            most: limits.shards.most,
            clients: held.unwrap_or_default(),
        });
    }
    let inputs = EffectInputs {
        obs,
        base,
        shards,
        drain: drain.as_ref(),
        growth: &growth,
    };
    let Effect {
        state,
        list,
        mut steps,
        waits,
    } = inputs.of(&decision, state.clone(), list);
    // Saved when it changed, or when it was carried over from the old file.
    if state != obs.state || (!obs.state_stored && state != State::default()) {
        steps.push(Step::SaveState(Box::new(state.clone())));
    }
    // The effect may have changed the shards: what is open follows them.
    let next = seen.settle(list, &state);
    let age = obs.published_at().map(|t| obs.now.since(t).as_secs());
    let fleet = seen.fleet.homes_wait();
    let (list, homes) = announcement::stage(next.clone(), seen.published, fleet, age);
    upkeep(
        obs,
        policy,
        shards,
        seen.published,
        (&list, &next),
        &mut steps,
    );
    saved_first(&mut steps, &state);
    steps.sort_by_key(Step::kind);
    let mut decided = Decided {
        decision,
        reason,
        waits,
        size,
        moves_wait,
        list_version_held,
        warnings,
        homes: Homes::Kept,
    };
    decided.homes(homes, seen.published, obs);
    Plan::assemble(seen, obs, &state, list, steps, decided)
}

/// A plan that changes anything saves the state first, changed or not. SSM's reads, versioned
/// ones too, may lag its writes, so no read shows that the state planned from is the newest;
/// a write's answer does ([`crate::aws::ssm::Ssm`]'s check of what it wrote over). A run
/// fooled by an older state stops at that save, before it changed anything.
fn saved_first(steps: &mut Vec<Step>, state: &State) {
    let saves = steps.iter().any(|s| s.kind() == StepKind::SaveState);
    if !saves && steps.iter().any(|s| s.kind().changes_outside_state()) {
        steps.push(Step::SaveState(Box::new(state.clone())));
    }
}

/// What the decision's part of a plan made, for [`Plan::assemble`].
struct Decided {
    decision: Decision,
    reason: String,
    waits: Waits,
    size: Size,
    moves_wait: Option<MovesWait>,
    list_version_held: bool,
    warnings: Vec<Warning>,
    homes: Homes,
}

impl Decided {
    /// Where the homes stand ([`announcement`]): said in the reason, the waits and the warnings.
    fn homes(&mut self, homes: Homes, published: Option<&MountTargetList>, obs: &Observed) {
        // An announcement's draining marks are the function's own.
        let announced = |id: &str| {
            let entry = published.and_then(|p| p.mount_targets.iter().find(|t| t.id == id));
            entry.is_some_and(|t| announcement::announces(t, &obs.files))
        };
        self.warnings.retain(|w| match w {
            Warning::ForeignDrainMark { id } | Warning::ForeignShardDrainMark { id, .. } => {
                !announced(id)
            }
            _ => true,
        });
        match &homes {
            Homes::Kept => {}
            Homes::Announced => self.reason.push_str(
                "; homes change: the list goes out with them unchanged and the next ones announced, \
                 and they switch once the fleet runs it",
            ),
            Homes::Waiting(wait) => {
                self.reason
                    .push_str(&format!("; the next homes are announced, waiting: {wait}"));
                if self.waits == Waits::default() {
                    self.waits = Waits::of(wait);
                }
            }
            Homes::Switched => self
                .reason
                .push_str("; homes switch: the fleet runs the list that announced them"),
            Homes::SwitchedEarly(wait) => {
                self.reason.push_str(&format!(
                    "; homes switch after the fleet's patience, though {wait}"
                ));
                self.warnings.push(Warning::HomesSwitchedEarly(wait.clone()));
            }
        }
        self.homes = homes;
    }
}

impl Plan {
    /// The plan from what was seen and decided, with the list and steps the run takes.
    fn assemble(
        seen: Seen,
        obs: &Observed,
        state: &State,
        list: MountTargetList,
        steps: Vec<Step>,
        decided: Decided,
    ) -> Plan {
        let shards = &seen.first_roots[..];
        let (files_per_shard, files_per_target) = seen.counts.per_shard_and_target(&list, shards);
        let size = &decided.size;
        Plan {
            current_shards: serving_shards(&list, shards, state),
            file_count: seen.counts.file_count,
            files_per_shard,
            files_per_target,
            current: size.current,
            needed: size.needed,
            usable_azs: seen.room.usable_azs,
            desired: size.desired,
            desired_shards: size.desired_shards,
            // Held at version 1, the routers are the bound, not MAX_SHARDS: `list_version_held`.
            at_capacity: size.at_capacity && !decided.list_version_held,
            decision: decided.decision,
            waits: decided.waits,
            list,
            steps,
            moves_wait: decided.moves_wait,
            unreadable: obs.unreadable.len(),
            reason: decided.reason,
            excluded: seen.room.excluded,
            rollouts_failed: seen.fleet.rollouts_failed,
            fleet_stuck: seen.fleet.stuck,
            unreported: seen.fleet.clients.unreported(),
            clients_by_version: seen.fleet.clients.by_version,
            clients_behind_secs: seen.fleet.clients.behind_secs,
            list_version_held: decided.list_version_held,
            warnings: decided.warnings,
            homes: decided.homes,
            first_roots: seen.first_roots,
        }
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

/// Whether a clean pass may close the placements: while every writer ECS shows is seen
/// (`CLIENT_REPORTS=require`, every task reporting, ECS's tasks listed), or the operator chose
/// the risk by name. Clients outside ECS are seen only by their reports, under either mode.
fn may_close(obs: &Observed, policy: &Policy, fleet: &Fleet) -> bool {
    let seen = policy.client_reports == ClientReports::Require
        && obs.tasks_unknown.is_none()
        && fleet.clients.unreported().is_empty();
    seen || policy.close_placements == ClosePlacements::UnseenWritersMayHideFiles
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
    first_roots: Vec<FirstRoot>,
    counts: Counts<'a>,
    room: Room<'a>,
    /// The list is `modulo-sha256`.
    modulo: bool,
    /// The function's state, brought up to date with what AWS shows.
    state: State,
    fleet: Fleet,
    /// A clean pass may close the placements ([`ClosePlacements`]).
    may_close: bool,
    /// What the placements speak for ([`Policy::scope`]).
    scope: Option<String>,
    warnings: Vec<Warning>,
}

impl<'a> Seen<'a> {
    fn of(obs: &'a Observed, policy: &Policy) -> Seen<'a> {
        let published = obs.parameter.as_ref().map(|p| &p.list);
        let mut warnings: Vec<Warning> = obs.warnings.iter().cloned().map(Warning::from).collect();
        // The migrate event: the plan starts from the list as rendezvous would have it;
        // upkeep's comparison with what is published makes it go out.
        let migrated = policy
            .migrate
            .then(|| to_rendezvous(published, obs, &mut warnings))
            .flatten();
        let base = migrated.as_ref().or(published);
        let strategy = base.map_or(Strategy::Rendezvous, |l| l.strategy);
        let first_roots = shard::assign(
            &obs.mount_targets,
            base,
            |root| obs.files.contains_key(root),
            targets_wanted(obs, policy, strategy),
        );
        let counts = Counts::of(obs, &first_roots, base, &mut warnings);
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
            &first_roots,
            strategy,
            policy.undo,
            &mut state,
            &mut warnings,
        );
        let fleet = Fleet::of(obs, policy, &mut warnings);
        let may_close = may_close(obs, policy, &fleet);
        Seen {
            published,
            migrated,
            first_roots,
            counts,
            room,
            modulo: strategy == Strategy::ModuloSha256,
            state,
            fleet,
            may_close,
            scope: policy.scope.clone(),
            warnings,
        }
    }

    /// The list with its open placements: what is open follows the shards, and the shards the
    /// rebalance last balanced against (`state`'s), which close them only while they may.
    fn settle(&self, list: MountTargetList, state: &State) -> MountTargetList {
        let writers = match self.may_close {
            true => Writers::Seen(state.rebalancing.balanced.as_ref()),
            false => Writers::MayBeUnseen,
        };
        let mut list =
            placements::settle(list, self.published, writers, self.fleet.clients.read_v3);
        // The placements speak for what the rebalance walks: elsewhere a miss looks everywhere.
        if list.open.is_some() {
            list.scope = self.scope.clone();
        }
        list
    }

    /// The list the plan starts from: the migrated one, else the published one.
    fn base(&self) -> Option<&MountTargetList> {
        self.migrated.as_ref().or(self.published)
    }
}
