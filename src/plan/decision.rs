//! The one decision of a run, chosen from plain values; its families, a file each.

mod drain;
mod event;
mod grow;
mod scale_in;
mod wait;

pub use drain::Drain;
pub use event::Event;
pub use grow::{Bound, Grow};
#[cfg(test)] // the plan's tests name it
pub use scale_in::Hold;
pub use scale_in::ScaleIn;
pub use wait::Wait;

use super::fleet::MovesWait;
use super::policy::Policy;
use super::scale_in::{scale_in_candidate, Candidate};
use super::sizing::Size;
use super::sizing::Sizing;
use super::step::NewTarget;
use super::tasks::InUse;
use super::warning::Warning;
use super::Seen;
use crate::observed::{LifeCycle, Observed};
use crate::shard::FirstRoot;
use efs_router::list::MountTargetList;

/// What a run decides, exactly one a run, in one of five families: growth, a drain's next
/// step, a drain's wait, scale-in (or keeping what there is), or an operator's event. Each
/// family is a file of its own that says its decisions, their names ([`Decision::name`]), what
/// each does (its `effect`) and their words (its `words`); the matches here, in
/// [`super::effect`] and in [`super::reason`] delegate to it, an arm a family.
#[derive(Debug, Clone, PartialEq)]
pub enum Decision {
    /// A mount target, shards, or what holds them back ([`grow`]).
    Grow(Grow),
    /// The next step of a drain under way, or its cancel ([`drain`]).
    Drain(Drain),
    /// A drain under way waits for the fleet, its tasks, its clients ([`wait`]).
    Wait(Wait),
    /// A drain starts or is held within the band, or what there is stays ([`scale_in`]).
    ScaleIn(ScaleIn),
    /// The migrate event, and the undo event's end ([`event`]).
    Event(Event),
}

/// The event that lifts the limits of a `modulo-sha256` list.
pub const MIGRATE_EVENT: &str = r#"{"action":"migrate","strategy":"rendezvous"}"#;

impl Decision {
    /// The event that would lift what holds this decision back, for the reason to name: a
    /// `modulo-sha256` list at capacity (its bound is the mount targets', never `MAX_SHARDS`),
    /// or one whose scale-in is held because no entry may leave it.
    pub fn lifted_by(&self) -> Option<&'static str> {
        match self {
            Decision::Grow(g) => g.lifted_by(),
            Decision::ScaleIn(s) => s.lifted_by(),
            Decision::Drain(_) | Decision::Wait(_) | Decision::Event(_) => None,
        }
    }

    /// Every decision's name, in the order of the contract's table of decisions
    /// (docs/contract.md), which is tested against it; a new one goes here too.
    #[cfg_attr(not(test), allow(dead_code))] // read by the tests only
    pub const NAMES: [&'static str; 27] = [
        "migrate",
        "create",
        "add_shards",
        "wait_for_creating",
        "one_a_run",
        "cancel_drain",
        "move_drained",
        "wait_for_fleet",
        "wait_for_tasks",
        "wait_for_clients",
        "publish_first",
        "unlist",
        "drop_shard",
        "drop_gone",
        "wait_for_refresh",
        "delete_drained",
        "release",
        "undone",
        "start_drain",
        "start_shard_drain",
        "hold_no_candidate",
        "hold_settling",
        "hold_recent_scale_out",
        "hold_modulo_list",
        "at_capacity",
        "keep",
        "hold_target_in_use",
    ];

    /// The decision's name: in the response (`decision`), in the run summary, and what tests
    /// assert on (never the reason's wording).
    pub fn name(&self) -> &'static str {
        match self {
            Decision::Grow(g) => g.name(),
            Decision::Drain(d) => d.name(),
            Decision::Wait(w) => w.name(),
            Decision::ScaleIn(s) => s.name(),
            Decision::Event(e) => e.name(),
        }
    }

    /// The warning the decision itself gives, if any: a deletion held by the tasks that
    /// mount through the target.
    pub(super) fn warning(&self) -> Option<Warning> {
        match self {
            Decision::Drain(d) => d.warning(),
            _ => None,
        }
    }
}

/// Everything [`decide`] looks at, as plain values.
pub(super) struct Situation<'a> {
    pub(super) size: &'a Size,
    /// The drain under way, if any.
    pub(super) drain: Option<&'a DrainView>,
    /// Why no file may move now.
    pub(super) moves_wait: Option<&'a MovesWait>,
    pub(super) creating: Option<&'a FirstRoot>,
    pub(super) allow_create: bool,
    /// Where a new target would go, if anywhere.
    pub(super) next_target: Option<NewTarget>,
    /// Shards the serving targets can take now, towards the desired number.
    pub(super) shards_to_add: usize,
    pub(super) bound: &'a Bound,
    pub(super) in_band: bool,
    /// The list is `modulo-sha256`: no entry may leave it.
    pub(super) modulo: bool,
    /// The migrate event, with the number of entries of the list it republishes.
    pub(super) migrating: Option<usize>,
    pub(super) candidate: Option<Candidate>,
    /// The state's timers: since when the band holds, when the last scale-out was.
    pub(super) below_since: Option<u64>,
    pub(super) last_scale_out: Option<u64>,
    pub(super) cooldown: u64,
    pub(super) now: u64,
    /// The undo event, and what would be left once it is done (targets, shard roots).
    pub(super) undo: Option<(Vec<String>, Vec<String>)>,
}

impl<'a> Situation<'a> {
    /// What the plan has seen and sized, the drain under way, and what holds the moves.
    pub(super) fn of(
        seen: &'a Seen,
        obs: &Observed,
        policy: &Policy,
        list: &MountTargetList,
        sizing: &'a Sizing,
        drain: Option<&'a DrainView>,
        moves_wait: Option<&'a MovesWait>,
    ) -> Situation<'a> {
        let (shards, state) = (&seen.first_roots[..], &seen.state);
        let modulo = seen.modulo;
        let candidate = scale_in_candidate(obs, list, shards, &seen.counts, state, policy.undo)
            .filter(|_| !modulo);
        Situation {
            size: &sizing.size,
            drain,
            moves_wait,
            creating: shards
                .iter()
                .find(|s| s.target.state == LifeCycle::Creating),
            allow_create: policy.allow_create,
            next_target: seen.room.next_target(policy, shards),
            shards_to_add: sizing.growth.iter().map(|(_, added)| *added as usize).sum(),
            bound: &sizing.limits.shards.bound,
            in_band: sizing.band.holds,
            modulo,
            migrating: seen.migrated.as_ref().map(|l| l.mount_targets.len()),
            candidate,
            below_since: state.below_since,
            last_scale_out: state.last_scale_out,
            cooldown: policy.scale_in_cooldown_secs,
            now: obs.now.secs(),
            undo: (policy.undo && !modulo).then(|| super::left_after_undo(obs)),
        }
    }
}

/// A drain as [`decide`] sees it.
#[derive(Debug, Clone)]
pub(super) struct DrainView {
    /// The target drained, or the one whose shard is drained.
    pub(super) id: String,
    pub(super) az: String,
    pub(super) root: String,
    /// One shard of a target that keeps serving its others: it leaves the list once empty.
    pub(super) shard: bool,
    /// The roots it drains that still hold a file (nested ones too).
    pub(super) with_files: Vec<String>,
    /// The list without it has been published; the target goes next.
    pub(super) unlisted: bool,
    /// Someone else deleted the target; only its root is left to empty.
    pub(super) gone: bool,
    /// The target stays once drained (the undo event's drain of one this function did not
    /// create, or in a protected AZ).
    pub(super) keep: bool,
    /// What mounts through the target now (tasks in its AZ): it is not deleted while any does.
    pub(super) in_use: Option<InUse>,
}

/// The one decision of a run, in order of precedence: the migrate event; a drain under way
/// is finished (or cancelled by growth); then growth (a mount target, then shards); then
/// capacity; then the undo event; then scale-in.
pub(super) fn decide(s: &Situation) -> Decision {
    if let Some(entries) = s.migrating {
        return Decision::Event(Event::Migrate { entries });
    }
    // A drain yields to growth: a drain is cancelled, and the root of a target gone by hand
    // (which cannot serve again) waits while shards or a target are added.
    let growing = s.size.desired_shards > s.size.current_shards;
    if let Some(d) = s.drain.filter(|d| !(d.gone && growing)) {
        return drain::step(d, growing, s.moves_wait);
    }
    if let Some(grow) = grow::decide(s) {
        return Decision::Grow(grow);
    }
    if let Some(undo) = event::undo(s) {
        return undo;
    }
    if s.in_band {
        return Decision::ScaleIn(scale_in::decide(s));
    }
    Decision::ScaleIn(ScaleIn::Keep {
        fewer_would_do: s.size.desired_shards < s.size.current_shards,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One decision of every kind: each family's `examples` has an exhaustive match, so a new
    /// decision cannot be left out of them, nor (by this test) of [`Decision::NAMES`].
    fn one_of_each() -> Vec<Decision> {
        let families = [
            grow::examples(),
            drain::examples(),
            wait::examples(),
            scale_in::examples(),
            event::examples(),
        ];
        families.into_iter().flatten().collect()
    }

    #[test]
    fn names_lists_every_decision_once() {
        let mut names: Vec<&str> = one_of_each().iter().map(Decision::name).collect();
        // In the contract's order; a name missing from it sorts first.
        names.sort_by_key(|n| Decision::NAMES.iter().position(|m| m == n));
        assert_eq!(names, Decision::NAMES);
    }
}
