//! The rebalance: misplaced files moved home under the published list, in the background, a
//! little each run. Here is what it is:
//! - the run ([`run`]): walks the shards within its moves and time, and saves where it stopped;
//! - its record ([`crate::state::rebalancing`], the state's `rebalancing`): where the next run
//!   goes on, and the shards of its last clean pass;
//! - its comparison ([`crate::state::comparison`]): after shards were only added, which names
//!   can have moved.
//!
//! How a file moves is the router's (`efs_router::relocation`); the walk that meets misplaced
//! files, shared with the drains, is [`super::walk`].

use super::{Budget, Moves, Walk};
use crate::aws::Aws;
use crate::config::Config;
use crate::error::Error;
use crate::observed::Observed;
use crate::plan::{Behind, MovesWait, Plan, Warning};
use crate::state::comparison::comparison;
use crate::state::State;
use std::time::Instant;
use tracing::{info, warn};

/// What a rebalance run did, for the run's answer: the caller folds it into its own.
#[derive(Debug, Default)]
pub(crate) struct Rebalanced {
    pub(crate) warnings: Vec<Warning>,
    /// Services the run waited for.
    pub(crate) waiting_for: Vec<String>,
    /// Live clients the run waited for.
    pub(crate) clients_behind: Vec<Behind>,
    /// What the walk moved; `None` when the run did not walk.
    pub(crate) moves: Option<Moves>,
    /// The state with the rebalance's new record, when it changed (saved by [`save`]).
    pub(crate) state: Option<State>,
}

/// The rebalance: moves misplaced files home under the published list, within `max_moves` and
/// the time left, going on where the last run stopped ([`crate::state::rebalancing::Rebalancing`]). It does not
/// go through the plan's decision because it decides nothing the plan decides: it changes no
/// list or AWS resource, and walks the list clients use now (not the one a reconcile would
/// publish); it changes only its own record in the state, which it returns when it changed.
/// What it shares with a drain, whether files may move at all, it takes from the plan
/// ([`Plan::moves_wait`]).
pub(crate) fn run(
    config: &Config,
    observed: &Observed,
    first: &Plan,
    max_moves: u64,
    wait_until: Instant,
) -> Result<Rebalanced, Error> {
    let mut done = Rebalanced::default();
    if let Some(wait) = &first.moves_wait {
        let why = Warning::MovesWait(wait.clone());
        warn!(kind = why.kind(), "{why}");
        done.warnings.push(why);
        match wait {
            MovesWait::Fleet(services) => done.waiting_for.extend(services.iter().cloned()),
            MovesWait::Clients(clients) => done.clients_behind.extend(clients.iter().cloned()),
            // The tasks are taken from the plan when the run answers (`tasks_waited_for`).
            MovesWait::ListPending | MovesWait::Tasks(_) | MovesWait::Refresh(_) => {}
        }
        return Ok(done);
    }
    let Some(parameter) = &observed.parameter else {
        return Ok(done);
    };
    let roots: Vec<String> = parameter
        .list
        .shards()
        .into_iter()
        .map(|t| t.root)
        .collect();
    let budget = Budget {
        max_moves,
        until: wait_until,
        concurrency: config.move_concurrency,
    };
    let record = &observed.state.rebalancing;
    let comparison = comparison(&parameter.list, record.balanced.as_ref());
    let walk = Walk {
        from: record.next.as_ref(),
        max_visits: config.rebalance_max_visits.unwrap_or(u64::MAX),
        comparison: &comparison,
        abandoned_after: config.abandoned_after,
    };
    let moves = super::rebalance(
        config,
        &parameter.list,
        &roots,
        budget,
        walk,
        &mut done.warnings,
    )?;
    let clean = moves.remaining == 0 && moves.failed == 0;
    let state = State {
        rebalancing: record.after_run(&parameter.list, moves.resume_at.clone(), clean),
        ..observed.state.clone()
    };
    done.moves = Some(moves);
    done.state = (state != observed.state).then_some(state);
    Ok(done)
}

/// Saves the state as read before the walk moves anything, as a reconcile's plan does: SSM's
/// reads, versioned ones too, may lag its writes, and only a write's answer shows that the
/// state read was the newest, and with it its record of the list published last, which the
/// walk's list was held to ([`crate::observe`]). A run fooled by an older state stops here.
pub(crate) async fn saved_first(
    aws: &Aws,
    config: &Config,
    observed: &Observed,
    first: &Plan,
) -> Result<(), Error> {
    if first.moves_wait.is_some() || observed.parameter.is_none() {
        return Ok(());
    }
    aws.ssm
        .write_state(&config.state_parameter_name, &observed.state)
        .await
}

/// Saves the state with the rebalance's new record. A position too long for the parameter
/// (beside what else the state holds) falls back to its shard's start ([`State::within`]).
pub(crate) async fn save(aws: &Aws, config: &Config, state: State) -> Result<(), Error> {
    let name = &config.state_parameter_name;
    aws.ssm.write_state(name, &state).await?;
    info!(parameter = %name, rebalancing = ?state.rebalancing, "rebalance position saved");
    Ok(())
}
