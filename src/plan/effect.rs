//! What each decision does: to the function's state, to the list clients see, and the steps
//! it adds. One exhaustive match, so a new decision cannot be added without saying what it
//! does; the steps every run takes whatever was decided are [`mod@super::upkeep`]'s.

use super::decision::{Decision, DrainView};
use super::list::rebuild_list;
use super::step::Step;
use crate::observed::Observed;
use crate::shard::FirstRoot;
use crate::state::{Drain, ShardDrain, State};
use efs_router::list::MountTargetList;

/// What a decision's effect reads.
pub(super) struct Effect<'a> {
    pub(super) obs: &'a Observed,
    /// The list the plan started from (the published one, or it under rendezvous).
    pub(super) base: Option<&'a MountTargetList>,
    pub(super) shards: &'a [FirstRoot],
    pub(super) drain: Option<&'a DrainView>,
    /// New shards for the targets that serve now: (index in the list, shards added).
    pub(super) growth: &'a [(usize, u32)],
}

/// The state, the list and the decision's own steps, once the decision has been carried out.
pub(super) struct Outcome {
    pub(super) state: State,
    pub(super) list: MountTargetList,
    pub(super) steps: Vec<Step>,
}

impl Effect<'_> {
    pub(super) fn of(&self, decision: &Decision, state: State, list: MountTargetList) -> Outcome {
        let mut out = Outcome {
            state,
            list,
            steps: Vec::new(),
        };
        let now = self.obs.now.secs();
        match decision {
            // The list already is the migrated one; publishing it is upkeep.
            Decision::Migrate { .. } => {}
            Decision::Create(new) => {
                if !self.obs.files.contains_key(&new.root) {
                    out.steps.push(Step::CreateShardDir {
                        root: new.root.clone(),
                    });
                }
                // The scale-in timers and the targets created change only once AWS accepts the
                // create (apply records them): a refused or conflicting create is not a scale-out.
                out.steps.push(Step::CreateMountTarget(new.clone()));
                self.grow(&mut out);
            }
            // New shards go on the targets that serve now in every run that grows (a target
            // waited for, or none to add), not only in one that creates.
            Decision::WaitForCreating { .. } | Decision::OneARun | Decision::AddShards { .. } => {
                self.grow(&mut out)
            }
            Decision::CancelDrain { id } => {
                out.state.draining.remove(id);
                out.state.draining_shards.retain(|_, d| &d.target != id);
                self.relist(&mut out);
            }
            Decision::StartDrain { id, .. } => {
                let root = out
                    .list
                    .mount_targets
                    .iter()
                    .find(|t| &t.id == id)
                    .map(|t| t.root.clone())
                    .unwrap_or_default();
                let drain = Drain {
                    root,
                    since: now,
                    unlisted: false,
                    gone: false,
                };
                out.state.draining.insert(id.clone(), drain);
                out.state.below_since = None;
                self.relist(&mut out);
            }
            Decision::StartShardDrain { id, root, .. } => {
                let drain = ShardDrain {
                    target: id.clone(),
                    since: now,
                    unlisted: false,
                };
                out.state.draining_shards.insert(root.clone(), drain);
                out.state.below_since = None;
                self.relist(&mut out);
            }
            Decision::MoveDrained { .. } => {
                for root in self.drain.iter().flat_map(|d| d.with_files.iter()) {
                    out.steps.push(Step::MoveFiles {
                        root: root.clone(),
                        list: out.list.clone(),
                    });
                }
            }
            Decision::Unlist { id } | Decision::DropGone { id } => {
                if let Some(d) = out.state.draining.get_mut(id) {
                    d.unlisted = true;
                }
                self.relist(&mut out);
            }
            Decision::DropShard { root, .. } => {
                if let Some(d) = out.state.draining_shards.get_mut(root) {
                    d.unlisted = true;
                }
                self.relist(&mut out);
            }
            Decision::DeleteDrained { id } => out.steps.push(Step::DeleteMountTarget {
                mount_target_id: id.clone(),
            }),
            // Unlisted, and the fleet runs the list without it: the drain is over, the target
            // stays.
            Decision::Release { id } => {
                out.state.draining.remove(id);
            }
            // The band holds: its clock runs from when it began.
            Decision::Hold(_) => out.state.below_since = Some(out.state.below_since.unwrap_or(now)),
            Decision::Keep { .. } => out.state.below_since = None,
            // Waiting (for the fleet, a publish, refreshing clients) or bounded: nothing changes
            // until that is over.
            Decision::WaitForFleet { .. }
            | Decision::WaitForTasks { .. }
            | Decision::WaitForClients { .. }
            | Decision::PublishFirst { .. }
            | Decision::WaitForRefresh { .. }
            | Decision::AtCapacity(_) => {}
            // What the undo leaves of the shards is their directories: the empty ones go.
            Decision::Undone { roots, .. } => out.steps.push(Step::RemoveShardDirs {
                roots: roots.clone(),
            }),
        }
        out
    }

    /// The list again, from the changed state.
    fn relist(&self, out: &mut Outcome) {
        out.list = rebuild_list(self.base, self.shards, &out.state, self.obs);
    }

    /// Adds the new shards to the targets that take them: a scale-out like a new target, so
    /// the scale-in clock starts again.
    fn grow(&self, out: &mut Outcome) {
        if self.growth.is_empty() {
            return;
        }
        for (index, added) in self.growth {
            out.list.mount_targets[*index].shards += added;
        }
        out.state.last_scale_out = Some(self.obs.now.secs());
        out.state.below_since = None;
    }
}
