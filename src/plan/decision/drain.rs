//! A drain under way, a step a run: publish → converge → move → publish → converge → delete,
//! unless growth cancels it. What it waits for on the way is [`super::wait`]'s.

use super::{Decision, DrainView, ScaleIn, Wait};
use crate::plan::effect::{Effect, EffectInputs};
use crate::plan::fleet::MovesWait;
use crate::plan::reason::Words;
use crate::plan::step::Step;
use crate::plan::tasks::InUse;
use crate::plan::warning::Warning;

#[derive(Debug, Clone, PartialEq)]
pub enum Drain {
    /// The files grew while a target was draining: it serves again.
    Cancel { id: String },
    /// A draining target's shard still has files (nested ones too): they move home first.
    MoveDrained {
        id: String,
        az: String,
        root: String,
    },
    /// A drained shard is empty: the list goes out without it (the target goes once the fleet
    /// has converged on that list).
    Unlist { id: String },
    /// A drained shard (not the target's own root) is empty: it leaves the list; the target
    /// keeps serving its other shards.
    DropShard { id: String, root: String },
    /// The shard of a target someone else deleted is empty: its root leaves the list.
    DropGone { id: String },
    /// A draining target's shard is empty: the target goes.
    DeleteDrained { id: String },
    /// The undo event: a drained target this function did not create (or in a protected AZ)
    /// is unlisted and every service runs that list: it stays, idle, serving no shard.
    Release { id: String },
    /// A drained target would go, but tasks run in its AZ (or may: ECS's tasks are unknown),
    /// and a task mounts through its own AZ's target whatever the list says: it stays until
    /// they stop.
    HoldTargetInUse {
        id: String,
        az: String,
        in_use: InUse,
    },
}

/// The next step of the drain under way: a cancel, a wait, or the drain's own next step.
pub(super) fn step(d: &DrainView, growing: bool, moves_wait: Option<&MovesWait>) -> Decision {
    let id = d.id.clone();
    if growing {
        return Decision::Drain(Drain::Cancel { id });
    }
    if let Some(wait) = moves_wait {
        return Decision::Wait(Wait::of(id, wait));
    }
    let drain = if let Some(root) = d.with_files.first() {
        Drain::MoveDrained {
            id,
            az: d.az.clone(),
            root: root.clone(),
        }
    } else if d.shard && !d.unlisted {
        Drain::DropShard {
            id,
            root: d.root.clone(),
        }
    } else if d.shard {
        // Dropped, and the list without it is the one published: nothing left to do (the
        // next run forgets it).
        return Decision::ScaleIn(ScaleIn::Keep {
            fewer_would_do: false,
        });
    } else if d.gone {
        Drain::DropGone { id }
    } else if !d.unlisted {
        Drain::Unlist { id }
    } else if d.keep {
        Drain::Release { id }
    } else if let Some(in_use) = &d.in_use {
        Drain::HoldTargetInUse {
            id,
            az: d.az.clone(),
            in_use: in_use.clone(),
        }
    } else {
        Drain::DeleteDrained { id }
    };
    Decision::Drain(drain)
}

impl Drain {
    pub(super) fn name(&self) -> &'static str {
        match self {
            Drain::Cancel { .. } => "cancel_drain",
            Drain::MoveDrained { .. } => "move_drained",
            Drain::Unlist { .. } => "unlist",
            Drain::DropShard { .. } => "drop_shard",
            Drain::DropGone { .. } => "drop_gone",
            Drain::DeleteDrained { .. } => "delete_drained",
            Drain::Release { .. } => "release",
            Drain::HoldTargetInUse { .. } => "hold_target_in_use",
        }
    }

    /// The warning the step itself gives: a deletion held by the tasks that mount through the
    /// target.
    pub(super) fn warning(&self) -> Option<Warning> {
        match self {
            Drain::HoldTargetInUse { id, az, in_use } => Some(Warning::TargetInUse {
                id: id.clone(),
                az: az.clone(),
                in_use: in_use.clone(),
            }),
            _ => None,
        }
    }

    pub(in crate::plan) fn effect(&self, inputs: &EffectInputs, out: &mut Effect) {
        match self {
            Drain::Cancel { id } => {
                out.state.draining.remove(id);
                out.state.draining_shards.retain(|_, d| &d.target != id);
                inputs.relist(out);
            }
            Drain::MoveDrained { .. } => {
                for root in inputs.drain.iter().flat_map(|d| d.with_files.iter()) {
                    out.steps.push(Step::MoveFiles {
                        root: root.clone(),
                        list: out.list.clone(),
                    });
                }
            }
            Drain::Unlist { id } | Drain::DropGone { id } => {
                if let Some(d) = out.state.draining.get_mut(id) {
                    d.unlisted = true;
                }
                inputs.relist(out);
            }
            Drain::DropShard { root, .. } => {
                if let Some(d) = out.state.draining_shards.get_mut(root) {
                    d.unlisted = true;
                }
                inputs.relist(out);
            }
            Drain::DeleteDrained { id } => out.steps.push(Step::DeleteMountTarget {
                mount_target_id: id.clone(),
            }),
            // Unlisted, the fleet on the list without it: the drain is over, the target stays.
            Drain::Release { id } => {
                out.state.draining.remove(id);
            }
            // Waiting for a target's tasks: nothing changes.
            Drain::HoldTargetInUse { .. } => {}
        }
    }

    pub(in crate::plan) fn words(&self, at: &Words) -> String {
        let need = at.need;
        match self {
            Drain::Cancel { id } => format!(
                "{need}; {} serving: the growth cancels the drain of {id}",
                at.size.current_shards
            ),
            Drain::MoveDrained { id, az, root } => format!(
                "{need}; draining {id} ({az}): the files under {root} move to their homes first"
            ),
            Drain::DropShard { id, root } => format!(
                "{need}; shard {root} of {id} is drained (its tree is empty): it leaves the list"
            ),
            Drain::Unlist { id } => format!(
                "{need}; {id} is drained (its tree is empty): the list goes out without it; the \
                 target goes once the services run that list"
            ),
            Drain::DropGone { id } => format!(
                "{need}; the shard of {id}, deleted outside this function, is empty: its root \
                 leaves the list"
            ),
            Drain::DeleteDrained { id } => {
                format!("{need}; {}: deleting it", unlisted_and_run(id))
            }
            Drain::Release { id } => format!(
                "{need}; {}: it was not created by this function (or is protected), so it \
                 stays, serving no shard",
                unlisted_and_run(id)
            ),
            Drain::HoldTargetInUse { id, az, in_use } => format!(
                "{need}; {}: it is not deleted while a task runs in {az}, a task mounting \
                 through its own AZ's target ({in_use})",
                unlisted_and_run(id)
            ),
        }
    }
}

fn unlisted_and_run(id: &str) -> String {
    format!("{id} is drained and unlisted, and every service runs the list without it")
}

/// One of each, for [`Decision::NAMES`]' test: the match fails to compile until a new one is
/// here.
#[cfg(test)]
pub(super) fn examples() -> Vec<Decision> {
    let id = || "fsmt-1".to_owned();
    let all = [
        Drain::Cancel { id: id() },
        Drain::MoveDrained {
            id: id(),
            az: "a".into(),
            root: "/r".into(),
        },
        Drain::Unlist { id: id() },
        Drain::DropShard {
            id: id(),
            root: "/r".into(),
        },
        Drain::DropGone { id: id() },
        Drain::DeleteDrained { id: id() },
        Drain::Release { id: id() },
        Drain::HoldTargetInUse {
            id: id(),
            az: "a".into(),
            in_use: InUse::TasksUnknown("throttled".into()),
        },
    ];
    all.iter().for_each(|d| match d {
        Drain::Cancel { .. }
        | Drain::MoveDrained { .. }
        | Drain::Unlist { .. }
        | Drain::DropShard { .. }
        | Drain::DropGone { .. }
        | Drain::DeleteDrained { .. }
        | Drain::Release { .. }
        | Drain::HoldTargetInUse { .. } => {}
    });
    all.into_iter().map(Decision::Drain).collect()
}
