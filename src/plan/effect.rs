//! What each decision does: to the function's state, to the list clients see, and the steps
//! it adds. One exhaustive match, so a new decision cannot be added without saying what it
//! does; the steps every run takes whatever was decided are [`mod@super::upkeep`]'s.

use super::clients::Behind;
use super::decision::{Decision, DrainView};
use super::fleet::MovesWait;
use super::list::rebuild_list;
use super::step::Step;
use super::tasks::OldTask;
use crate::observed::Observed;
use crate::shard::FirstRoot;
use crate::state::rebalancing::list_shards_sha256;
use crate::state::{Drain, ShardDrain, State};
use efs_router::list::MountTargetList;

/// What a decision's effect reads.
pub(super) struct EffectInputs<'a> {
    pub(super) obs: &'a Observed,
    /// The list the plan started from (the published one, or it under rendezvous).
    pub(super) base: Option<&'a MountTargetList>,
    pub(super) shards: &'a [FirstRoot],
    pub(super) drain: Option<&'a DrainView>,
    /// New shards for the targets that serve now: (index in the list, shards added).
    pub(super) growth: &'a [(usize, u32)],
}

/// The state, the list, the decision's own steps and what it waits for, once the decision has
/// been carried out.
pub(super) struct Effect {
    pub(super) state: State,
    pub(super) list: MountTargetList,
    pub(super) steps: Vec<Step>,
    pub(super) waits: Waits,
}

/// What a decision waits for, for the response to name (`waiting_for`, `waiting_for_tasks`,
/// `clients_behind`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Waits {
    /// Services whose deployments do not run the list published last.
    pub services: Vec<String>,
    /// ECS tasks created before that list, not stopped yet.
    pub tasks: Vec<OldTask>,
    /// Live clients that report another list.
    pub clients: Vec<Behind>,
}

impl Waits {
    /// What a wait for the fleet names.
    pub(super) fn of(wait: &MovesWait) -> Waits {
        let mut out = Waits::default();
        match wait {
            MovesWait::Fleet(services) => out.services = services.clone(),
            MovesWait::Tasks(tasks) => out.tasks = tasks.clone(),
            MovesWait::Clients(clients) => out.clients = clients.clone(),
            MovesWait::ListPending | MovesWait::Refresh(_) => {}
        }
        out
    }
}

/// The root of the list's entry for this target (none: empty).
fn root_of(list: &MountTargetList, id: &str) -> String {
    let entry = list.mount_targets.iter().find(|t| t.id == id);
    entry.map(|t| t.root.clone()).unwrap_or_default()
}

/// A drain moves files where they are not at home under the shards the rebalance last
/// balanced against: its comparison after growth must not rely on them any more. No decision's
/// own effect: it holds after every one, a drain started in an earlier run too.
///
/// For the same reason the pass under way is unclean once a drain is under way, or a list
/// other than the one it began under is published (`published`) or about to be (`list`):
/// files were homed elsewhere meanwhile, perhaps behind its walk, and a pass that ended clean
/// would close the placements that still hold them. Every run sees this, not only the
/// rebalance's own runs, which a drain started and cancelled between two of them escapes.
fn forget_balance_while_draining(state: &mut State, lists: [Option<&MountTargetList>; 2]) {
    let draining = !state.draining.is_empty() || !state.draining_shards.is_empty();
    if draining {
        state.rebalancing.balanced = None;
    }
    if let Some(pass) = state.rebalancing.pass.as_mut() {
        let other = lists
            .into_iter()
            .flatten()
            .any(|l| list_shards_sha256(l) != pass.shards);
        if draining || other {
            pass.clean = false;
        }
    }
}

impl EffectInputs<'_> {
    pub(super) fn of(&self, decision: &Decision, state: State, list: MountTargetList) -> Effect {
        let mut out = Effect {
            state,
            list,
            steps: Vec::new(),
            waits: Waits::default(),
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
                let drain = Drain {
                    root: root_of(&out.list, id),
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
            // Unlisted, the fleet on the list without it: the drain is over, the target stays.
            Decision::Release { id } => {
                out.state.draining.remove(id);
            }
            // The band holds: its clock runs from when it began.
            Decision::Hold(_) => out.state.below_since = Some(out.state.below_since.unwrap_or(now)),
            Decision::Keep { .. } => out.state.below_since = None,
            // Waiting: nothing changes until that is over; the response names what it waits for.
            Decision::WaitForFleet { services, .. } => out.waits.services = services.clone(),
            Decision::WaitForTasks { tasks, .. } => out.waits.tasks = tasks.clone(),
            Decision::WaitForClients { clients, .. } => out.waits.clients = clients.clone(),
            // Waiting (a publish, clients' refresh, a target's tasks) or bounded: nothing changes.
            Decision::PublishFirst { .. }
            | Decision::WaitForRefresh { .. }
            | Decision::HoldTargetInUse { .. }
            | Decision::AtCapacity(_) => {}
            // What the undo leaves of the shards is their directories: the empty ones go.
            Decision::Undone { roots, .. } => out.steps.push(Step::RemoveShardDirs {
                roots: roots.clone(),
            }),
        }
        forget_balance_while_draining(&mut out.state, [self.published(), Some(&out.list)]);
        out
    }

    /// The list clients were given last.
    fn published(&self) -> Option<&MountTargetList> {
        self.obs.parameter.as_ref().map(|p| &p.list)
    }

    /// The list again, from the changed state.
    fn relist(&self, out: &mut Effect) {
        out.list = rebuild_list(self.base, self.shards, &out.state, self.obs);
    }

    /// Adds the new shards to the targets that take them: a scale-out like a new target, so
    /// the scale-in clock starts again.
    fn grow(&self, out: &mut Effect) {
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
