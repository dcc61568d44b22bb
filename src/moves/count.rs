//! What a run moved: the counts its answer gives.

use crate::state::rebalancing::Cursor;
use serde::Serialize;
use tracing::info;

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Moves {
    /// Moved home (including those that replaced an older copy at home).
    pub moved: u64,
    /// Older copies removed because a newer version of the same path is at home.
    pub dropped_older: u64,
    /// Misplaced files not moved by this run (the budget or the time ran out).
    pub remaining: u64,
    /// Entries that are not regular files (links, FIFOs, devices): left where they are.
    pub skipped: u64,
    /// Names that are not a routable path, or moves the file system refused, or a move
    /// refused because home holds what it must not replace (a link, a FIFO, a directory,
    /// another owner's file): each leaves a file away from home.
    pub failed: u64,
    /// Names of writers and moves that died, unchanged for `ABANDONED_AFTER_SECONDS`: removed or
    /// given back (a rebalance's, in the part of the tree it walked).
    #[serde(skip_serializing_if = "is_zero")]
    pub abandoned_removed: u64,
    /// The walk stopped (at the deadline, or after `REBALANCE_MAX_VISITS` files) before the
    /// end of its pass: `remaining` counts only the files it saw; a rebalance's next run goes
    /// on from `resume_at`.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub incomplete: bool,
    /// Files (and entries of unknown type) the walk looked at.
    pub visited: u64,
    /// The router's private names met that hold what no move can give back (a cut-short
    /// move's entries it cannot place, a nameless private file): each is named once, by
    /// warning `cut_short_move`, and counted on every pass that meets it.
    #[serde(skip_serializing_if = "is_zero")]
    pub kept_hidden: u64,
    /// Where the next rebalance run goes on; absent when this run ended its pass.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume_at: Option<Cursor>,
    /// How a rebalance compared each file's shard ([`Comparison::name`](crate::state::comparison::Comparison::name)).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comparison: Option<&'static str>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl Moves {
    /// Adds a later pass over the same shard: its moves count too, while what it still found
    /// misplaced, skipped or failing replaces the earlier pass's (the same files, seen again).
    pub fn then(&mut self, later: Moves) {
        self.moved += later.moved;
        self.dropped_older += later.dropped_older;
        self.abandoned_removed += later.abandoned_removed;
        self.kept_hidden = later.kept_hidden;
        self.visited += later.visited;
        self.remaining = later.remaining;
        self.skipped = later.skipped;
        self.failed = later.failed;
        self.incomplete = later.incomplete;
    }
}

pub(super) fn log_moves(moves: &Moves) {
    info!(
        moved = moves.moved,
        dropped_older = moves.dropped_older,
        remaining = moves.remaining,
        skipped = moves.skipped,
        failed = moves.failed,
        visited = moves.visited,
        resume_at = ?moves.resume_at,
        "moved files home"
    );
}
