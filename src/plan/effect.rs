//! What a decision does: to the function's state, to the list clients see, and the steps it
//! adds. Each family says it for its own decisions (its `effect`), in an exhaustive match, so
//! a new decision cannot be added without saying what it does; here is what every decision's
//! effect shares. The steps every run takes whatever was decided are
//! [`mod@super::upkeep`]'s.

use super::clients::Behind;
use super::decision::{Decision, DrainView};
use super::fleet::MovesWait;
use super::list::rebuild_list;
use super::step::Step;
use super::tasks::OldTask;
use crate::observed::Observed;
use crate::shard::FirstRoot;
use crate::state::rebalancing::list_shards_sha256;
use crate::state::State;
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
        match decision {
            Decision::Grow(g) => g.effect(self, &mut out),
            Decision::Drain(d) => d.effect(self, &mut out),
            Decision::Wait(w) => w.effect(self, &mut out),
            Decision::ScaleIn(s) => s.effect(self, &mut out),
            Decision::Event(e) => e.effect(self, &mut out),
        }
        forget_balance_while_draining(&mut out.state, [self.published(), Some(&out.list)]);
        out
    }

    /// The list clients were given last.
    fn published(&self) -> Option<&MountTargetList> {
        self.obs.parameter.as_ref().map(|p| &p.list)
    }

    /// The list again, from the changed state.
    pub(super) fn relist(&self, out: &mut Effect) {
        out.list = rebuild_list(self.base, self.shards, &out.state, self.obs);
    }

    /// Adds the new shards to the targets that take them: a scale-out like a new target, so
    /// the scale-in clock starts again.
    pub(super) fn grow(&self, out: &mut Effect) {
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
