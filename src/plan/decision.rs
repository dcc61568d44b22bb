//! The one decision of a run, chosen from plain values.

use super::clients::Behind;
use super::fleet::MovesWait;
use super::policy::Policy;
use super::scale_in::{scale_in_candidate, Candidate};
use super::sizing::Size;
use super::sizing::Sizing;
use super::step::NewTarget;
use super::tasks::{InUse, OldTask};
use super::warning::Warning;
use super::Seen;
use crate::observed::{LifeCycle, Observed};
use crate::shard::FirstRoot;
use efs_router::list::MountTargetList;

/// What a run decides, exactly one a run: grow (a mount target, shards), take the next step
/// of a drain under way (or cancel it), start one, hold, or keep; [`Decision::name`] names
/// each. What each does is [`super::effect`]'s one match.
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
    /// A target is draining (or unlisted), and every service's deployment runs the list
    /// published last, but ECS still shows tasks created before it that it has not stopped
    /// (replaced ones, `DEACTIVATING` or `STOPPING`; RunTask's): nothing moves or goes yet.
    WaitForTasks { id: String, tasks: Vec<OldTask> },
    /// A target is draining (or unlisted), but live clients report another list than the one
    /// published (or may): nothing moves or goes until they run it.
    WaitForClients { id: String, clients: Vec<Behind> },
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
    /// The undo event: a drained target this function did not create (or in a protected AZ)
    /// is unlisted and every service runs that list: it stays, idle, serving no shard.
    Release { id: String },
    /// The undo event has nothing left to do: the list is `/` alone and the fleet runs it.
    /// What is left for the operator: the mount targets there are, and the shard directories
    /// (empty) that still exist.
    Undone {
        targets: Vec<String>,
        roots: Vec<String>,
    },
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
    /// A drained target would go, but tasks run in its AZ (or may: ECS's tasks are unknown),
    /// and a task mounts through its own AZ's target whatever the list says: it stays until
    /// they stop.
    HoldTargetInUse {
        id: String,
        az: String,
        in_use: InUse,
    },
}

/// The event that lifts the limits of a `modulo-sha256` list.
pub const MIGRATE_EVENT: &str = r#"{"action":"migrate","strategy":"rendezvous"}"#;

impl Decision {
    /// The event that would lift what holds this decision back, for the reason to name: a
    /// `modulo-sha256` list at capacity (its bound is the mount targets', never `MAX_SHARDS`),
    /// or one whose scale-in is held because no entry may leave it.
    pub fn lifted_by(&self) -> Option<&'static str> {
        match self {
            Decision::AtCapacity(Bound::MaxShards(_) | Bound::ListVersion { .. }) => None,
            Decision::AtCapacity(_) | Decision::Hold(Hold::ModuloList) => Some(MIGRATE_EVENT),
            _ => None,
        }
    }

    /// Every decision's name, in [`Decision::name`]'s order: the contract's table of decisions
    /// (docs/contract.md) is tested against it.
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
            Decision::Migrate { .. } => "migrate",
            Decision::Create(_) => "create",
            Decision::AddShards { .. } => "add_shards",
            Decision::WaitForCreating { .. } => "wait_for_creating",
            Decision::OneARun => "one_a_run",
            Decision::CancelDrain { .. } => "cancel_drain",
            Decision::MoveDrained { .. } => "move_drained",
            Decision::WaitForFleet { .. } => "wait_for_fleet",
            Decision::WaitForTasks { .. } => "wait_for_tasks",
            Decision::WaitForClients { .. } => "wait_for_clients",
            Decision::PublishFirst { .. } => "publish_first",
            Decision::Unlist { .. } => "unlist",
            Decision::DropShard { .. } => "drop_shard",
            Decision::DropGone { .. } => "drop_gone",
            Decision::WaitForRefresh { .. } => "wait_for_refresh",
            Decision::DeleteDrained { .. } => "delete_drained",
            Decision::Release { .. } => "release",
            Decision::Undone { .. } => "undone",
            Decision::StartDrain { .. } => "start_drain",
            Decision::StartShardDrain { .. } => "start_shard_drain",
            Decision::Hold(Hold::NoCandidate) => "hold_no_candidate",
            Decision::Hold(Hold::Settling { .. }) => "hold_settling",
            Decision::Hold(Hold::RecentScaleOut { .. }) => "hold_recent_scale_out",
            Decision::Hold(Hold::ModuloList) => "hold_modulo_list",
            Decision::AtCapacity(_) => "at_capacity",
            Decision::Keep { .. } => "keep",
            Decision::HoldTargetInUse { .. } => "hold_target_in_use",
        }
    }

    /// The warning the decision itself gives, if any: a deletion held by the tasks that
    /// mount through the target.
    pub(super) fn warning(&self) -> Option<Warning> {
        match self {
            Decision::HoldTargetInUse { id, az, in_use } => Some(Warning::TargetInUse {
                id: id.clone(),
                az: az.clone(),
                in_use: in_use.clone(),
            }),
            _ => None,
        }
    }
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
    /// One shard per mount target: not every live client reads a version 2 list (`clients`
    /// do not; none when no client reports).
    ListVersion {
        most: usize,
        clients: Vec<String>,
    },
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
/// capacity; then scale-in.
pub(super) fn decide(s: &Situation) -> Decision {
    if let Some(entries) = s.migrating {
        return Decision::Migrate { entries };
    }
    // A drain yields to growth: a drain is cancelled, and the root of a target gone by hand
    // (which cannot serve again) waits while shards or a target are added.
    let growing = s.size.desired_shards > s.size.current_shards;
    if let Some(d) = s.drain.filter(|d| !(d.gone && growing)) {
        return drain_step(d, growing, s.moves_wait);
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
    if let Some((targets, roots)) = &s.undo {
        // Undo: every shard but `/` drains, one at a time, whatever the band says.
        // Asked for: no band, no cool-down, no time since the last scale-out is waited for.
        return match (&s.candidate, s.moves_wait) {
            (Some(c), _) => start_drain(c, 0),
            (None, None) => Decision::Undone {
                targets: targets.clone(),
                roots: roots.clone(),
            },
            // The one-shard list is out; the fleet has not run it yet.
            (None, Some(_)) => Decision::Keep {
                fewer_would_do: false,
            },
        };
    }
    if s.in_band {
        return scale_in(s);
    }
    Decision::Keep {
        fewer_would_do: s.size.desired_shards < s.size.current_shards,
    }
}

/// The next step of the drain under way: publish → converge → move → publish → converge →
/// delete, unless growth cancels it.
fn drain_step(d: &DrainView, growing: bool, moves_wait: Option<&MovesWait>) -> Decision {
    let id = d.id.clone();
    if growing {
        return Decision::CancelDrain { id };
    }
    if let Some(wait) = moves_wait {
        return match wait {
            // The clients run the published list, not the one the state implies.
            MovesWait::ListPending => Decision::PublishFirst { id },
            MovesWait::Fleet(services) => Decision::WaitForFleet {
                id,
                services: services.clone(),
            },
            MovesWait::Tasks(tasks) => Decision::WaitForTasks {
                id,
                tasks: tasks.clone(),
            },
            MovesWait::Clients(clients) => Decision::WaitForClients {
                id,
                clients: clients.clone(),
            },
            MovesWait::Refresh(left) => Decision::WaitForRefresh { id, left: *left },
        };
    }
    if let Some(root) = d.with_files.first() {
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
        // Dropped, and the list without it is the one published: nothing left to do (the
        // next run forgets it).
        Decision::Keep {
            fewer_would_do: false,
        }
    } else if d.gone {
        Decision::DropGone { id }
    } else if !d.unlisted {
        Decision::Unlist { id }
    } else if d.keep {
        Decision::Release { id }
    } else if let Some(in_use) = &d.in_use {
        Decision::HoldTargetInUse {
            id,
            az: d.az.clone(),
            in_use: in_use.clone(),
        }
    } else {
        Decision::DeleteDrained { id }
    }
}

/// Within the scale-in band: what may go, once the cool-downs allow.
fn scale_in(s: &Situation) -> Decision {
    let held = s.now.saturating_sub(s.below_since.unwrap_or(s.now));
    let after_scale_out = s.last_scale_out.map(|t| s.now.saturating_sub(t));
    match &s.candidate {
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
        Some(c) => start_drain(c, held),
    }
}

/// The drain a scale-in starts: a shard's, or a whole target's.
fn start_drain(candidate: &Candidate, held: u64) -> Decision {
    match candidate {
        Candidate::Target(id) => Decision::StartDrain {
            id: id.clone(),
            held,
        },
        Candidate::Shard { id, root } => Decision::StartShardDrain {
            id: id.clone(),
            root: root.clone(),
            held,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plan::step::SecurityGroups;

    /// One decision of every kind, so a new one cannot be left out of [`Decision::NAMES`]: the
    /// match below is exhaustive.
    fn one_of_each() -> Vec<Decision> {
        let id = || "fsmt-1".to_owned();
        let new = NewTarget {
            subnet_id: "subnet-1".into(),
            az: "us-east-1a".into(),
            az_id: "use1-az1".into(),
            root: "/shards/use1-az1".into(),
            security_groups: SecurityGroups::VpcDefault,
        };
        let all = vec![
            Decision::Migrate { entries: 1 },
            Decision::Create(new),
            Decision::AddShards { added: 1 },
            Decision::WaitForCreating {
                id: id(),
                az: "a".into(),
            },
            Decision::OneARun,
            Decision::CancelDrain { id: id() },
            Decision::MoveDrained {
                id: id(),
                az: "a".into(),
                root: "/r".into(),
            },
            Decision::WaitForFleet {
                id: id(),
                services: vec![],
            },
            Decision::WaitForTasks {
                id: id(),
                tasks: vec![],
            },
            Decision::WaitForClients {
                id: id(),
                clients: vec![],
            },
            Decision::PublishFirst { id: id() },
            Decision::Unlist { id: id() },
            Decision::DropShard {
                id: id(),
                root: "/r".into(),
            },
            Decision::DropGone { id: id() },
            Decision::WaitForRefresh { id: id(), left: 1 },
            Decision::DeleteDrained { id: id() },
            Decision::Release { id: id() },
            Decision::Undone {
                targets: vec![],
                roots: vec![],
            },
            Decision::StartDrain { id: id(), held: 1 },
            Decision::StartShardDrain {
                id: id(),
                root: "/r".into(),
                held: 1,
            },
            Decision::Hold(Hold::NoCandidate),
            Decision::Hold(Hold::Settling {
                held: 1,
                cooldown: 2,
            }),
            Decision::Hold(Hold::RecentScaleOut {
                ago: 1,
                cooldown: 2,
            }),
            Decision::Hold(Hold::ModuloList),
            Decision::AtCapacity(Bound::MaxShards(1)),
            Decision::Keep {
                fewer_would_do: false,
            },
            Decision::HoldTargetInUse {
                id: id(),
                az: "a".into(),
                in_use: InUse::TasksUnknown("throttled".into()),
            },
        ];
        all.iter().for_each(listed_here);
        all
    }

    /// Exhaustive: a new decision fails to compile here until [`one_of_each`] has it.
    fn listed_here(d: &Decision) {
        match d {
            Decision::Migrate { .. }
            | Decision::Create(_)
            | Decision::AddShards { .. }
            | Decision::WaitForCreating { .. }
            | Decision::OneARun
            | Decision::CancelDrain { .. }
            | Decision::MoveDrained { .. }
            | Decision::WaitForFleet { .. }
            | Decision::WaitForTasks { .. }
            | Decision::WaitForClients { .. }
            | Decision::PublishFirst { .. }
            | Decision::Unlist { .. }
            | Decision::DropShard { .. }
            | Decision::DropGone { .. }
            | Decision::WaitForRefresh { .. }
            | Decision::DeleteDrained { .. }
            | Decision::Release { .. }
            | Decision::Undone { .. }
            | Decision::StartDrain { .. }
            | Decision::StartShardDrain { .. }
            | Decision::Hold(
                Hold::NoCandidate
                | Hold::Settling { .. }
                | Hold::RecentScaleOut { .. }
                | Hold::ModuloList,
            )
            | Decision::AtCapacity(_)
            | Decision::Keep { .. }
            | Decision::HoldTargetInUse { .. } => {}
        }
    }

    #[test]
    fn names_lists_every_decision_once_in_order() {
        let names: Vec<&str> = one_of_each().iter().map(Decision::name).collect();
        assert_eq!(names, Decision::NAMES);
    }
}
