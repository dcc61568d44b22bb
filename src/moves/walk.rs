//! A rebalance run's walk: the shards in the order of their roots, from where the last run
//! stopped.

use super::count::log_moves;
use super::mover::{Budget, Mover, Seeking};
use super::Moves;
use crate::config::Config;
use crate::error::Error;
use crate::plan::Warning;
use crate::state::comparison::Comparison;
use crate::state::rebalancing::Cursor;
use efs_router::list::MountTargetList;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

/// Where a rebalance run starts, how many files it may look at, how it compares.
#[derive(Debug, Clone, Copy)]
pub struct Walk<'a> {
    /// `None`: a pass starts at the first shard.
    pub from: Option<&'a Cursor>,
    pub max_visits: u64,
    pub comparison: &'a Comparison,
    /// The router's names unchanged this long are abandoned
    /// ([`ABANDONED_AFTER`](crate::config::ABANDONED_AFTER)).
    pub abandoned_after: Duration,
}

/// One rebalance run: the walk a drain makes ([`drain_shards`](super::drain_shards)), over the shards rooted at
/// `roots` in the order of their roots, from `walk.from` on, until the end of the last shard (the pass ends: `resume_at` is
/// `None`), the deadline, or `walk.max_visits` files. On the way it cleans up the router's
/// abandoned names it meets (see `Mover::abandoned`): the walk that finds misplaced files
/// finds them too, so a run reads no directory twice and its work stays within its visits.
pub fn rebalance(
    config: &Config,
    list: &MountTargetList,
    roots: &[String],
    budget: Budget,
    walk: Walk<'_>,
    warnings: &mut Vec<Warning>,
) -> Result<Moves, Error> {
    let mut mover = Mover::new(config, list, budget, Some(walk.comparison), walk.max_visits);
    mover.abandoned_after = Some(walk.abandoned_after);
    mover.moves.comparison = Some(walk.comparison.name());
    for root in roots.iter().collect::<BTreeSet<_>>() {
        let from = match walk.from {
            // Walked earlier in this pass.
            Some(c) if root.as_str() < c.root.as_str() => continue,
            Some(c) if *root == c.root => c.clone(),
            _ => Cursor::at(root, Path::new("")),
        };
        if Instant::now() >= budget.until {
            mover.moves.incomplete = true;
            mover.stopped = Some(from);
            break;
        }
        let (start, seek) = from.start();
        let start = start.to_path_buf();
        mover.seeking = seek.map(|digest| Seeking {
            within: start.clone(),
            digest: digest.to_owned(),
            cursor: from.clone(),
            left: false,
        });
        mover.shard(root, &start, false)?;
        if mover.stopped.is_some() {
            break;
        }
    }
    warnings.append(&mut mover.take_warnings());
    let mut moves = mover.moves;
    moves.resume_at = mover.stopped;
    log_moves(&moves);
    Ok(moves)
}
