//! One run's moving: the walk of a shard, entry by entry, within the run's budget.

use super::batch::{Misplaced, BATCH};
use super::give_back::CutShort;
use super::Moves;
use crate::config::Config;
use crate::error::Error;
use crate::plan::Warning;
use crate::shard;
use crate::state::comparison::Comparison;
use crate::state::rebalancing::{path_digest, Cursor};
use efs_router::dir::Pinned;
use efs_router::dir::{self, Flow, Kind};
use efs_router::list::MountTargetList;
use efs_router::relocation;
use efs_router::sorted_walk::{walk_sorted_at, Walked};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant};
use tracing::{info, warn};

/// Cut-short moves' private directories the walk holds at most before it gives them back
/// (each pins two descriptors: it and its holder). With a batch's (at most [`PINS_AT_MOST`]
/// sources and [`BATCH`] destinations) and the walk's (one a level), within Lambda's 1,024.
pub(super) const CUT_SHORT_AT_MOST: usize = 64;
/// Entries that hold a drain named in one run at most: enough to act on, a small response.
const NAMED_AT_MOST: usize = 10;

/// How a run moves files: the budget, the deadline, how many at a time.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub max_moves: u64,
    pub until: Instant,
    pub concurrency: usize,
}

/// A walk resuming at a position kept by its digest ([`Cursor::at`]): it visits nothing until
/// it meets that path, below the directory it starts from.
pub(super) struct Seeking {
    pub(super) within: PathBuf,
    pub(super) digest: String,
    /// The position as it was kept: kept again if the run ends before it is met.
    pub(super) cursor: Cursor,
    /// The walk left `within` without meeting it.
    pub(super) left: bool,
}

/// One run's moving: what it routes by, what it may still do, what it did.
pub(super) struct Mover<'a> {
    pub(super) config: &'a Config,
    pub(super) list: &'a MountTargetList,
    pub(super) shards: Vec<efs_router::list::Shard>,
    pub(super) budget: Budget,
    pub(super) moves: Moves,
    /// Misplaced files found and not moved yet.
    pub(super) batch: Vec<Misplaced>,
    /// The directories the batch's files are in, pinned as the walk opened them, by their
    /// path relative to the shard's watched directory.
    pub(super) pins: HashMap<PathBuf, Rc<Pinned>>,
    /// `None`: every file against every shard.
    pub(super) comparison: Option<&'a Comparison>,
    pub(super) max_visits: u64,
    /// Where the walk stopped before its end.
    pub(super) stopped: Option<Cursor>,
    /// A walk resuming at a position kept by its digest, until it meets it.
    pub(super) seeking: Option<Seeking>,
    /// A rebalance's: the router's names unchanged this long are abandoned, cleaned up as the
    /// walk meets them. `None` for a drain.
    pub(super) abandoned_after: Option<Duration>,
    /// Cut-short moves the walk met in the current shard, given back once it has passed, or
    /// once [`CUT_SHORT_AT_MOST`] are held.
    pub(super) cut_short: Vec<CutShort>,
    /// Entries left by cut-short moves that no warning of this run names (past
    /// [`WARNINGS_PER_KIND`]): counted by warning `warnings_capped`.
    pub(super) cut_short_unnamed: u64,
    /// A drain's walk: a cut-short move not abandoned yet holds it, and is named.
    pub(super) draining: bool,
    pub(super) warnings: Vec<Warning>,
}

impl<'a> Mover<'a> {
    pub(super) fn new(
        config: &'a Config,
        list: &'a MountTargetList,
        budget: Budget,
        comparison: Option<&'a Comparison>,
        max_visits: u64,
    ) -> Self {
        Mover {
            config,
            list,
            // Files route over the list's shards (several per mount target in a version 2 list).
            shards: list.shards(),
            budget,
            moves: Moves::default(),
            batch: Vec::with_capacity(BATCH),
            pins: HashMap::new(),
            comparison,
            max_visits,
            stopped: None,
            seeking: None,
            abandoned_after: None,
            cut_short: Vec::new(),
            cut_short_unnamed: 0,
            draining: false,
            warnings: Vec::new(),
        }
    }

    /// Walks the shard rooted at `root` from `from` and moves its misplaced files home.
    pub(super) fn shard(&mut self, root: &str, from: &Path, drain: bool) -> Result<(), Error> {
        let dir = self.config.watch_path(root);
        let fd = match shard::open_dir(self.config, &dir, false) {
            Ok(fd) => fd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(source) => {
                warn!(root = %root, error = %source, "shard skipped: cannot open its directory");
                self.moves.failed += 1;
                return Ok(());
            }
        };
        let mut walk_error = None;
        let walked = walk_sorted_at(&fd, from, |entry| match self.visit(root, &dir, entry) {
            Ok(flow) => flow,
            Err(e) => {
                walk_error = Some(e);
                Flow::Stop
            }
        });
        match (walked, self.seeking.take()) {
            // Out of time before the position was met: it is kept as it was.
            (Ok(Walked::StoppedAt(_)), Some(seek)) if !seek.left => {
                self.stopped = Some(seek.cursor)
            }
            // The position is gone (the walk left its directory, or ended, without meeting
            // it): the next run visits that directory from its start, never past it.
            (Ok(_), Some(seek)) => {
                self.moves.incomplete = true;
                self.stopped = Some(Cursor::at(root, &seek.within));
            }
            (Ok(Walked::Ended), None) => {}
            (Ok(Walked::StoppedAt(at)), None) => self.stopped = Some(Cursor::at(root, &at)),
            (Err(source), _) => {
                warn!(root = %root, error = %source, "shard skipped: cannot read its directory");
                self.moves.failed += 1;
            }
        }
        if let Some(e) = walk_error {
            return Err(e);
        }
        self.flush()?;
        self.give_back();
        if drain {
            // Within the drain's time: what it does not reach is left for its next run.
            match dir::remove_empty_dirs_until(&fd, Some(self.budget.until)) {
                Ok(removed) => info!(root = %root, removed = ?removed, "empty directories removed"),
                Err(e) => warn!(root = %root, error = %e, "empty directories left"),
            }
        }
        Ok(())
    }

    /// One entry of the walk of the shard at `root` (watched directory `dir`): a misplaced
    /// file joins the batch (moved once the batch is full), anything else is counted.
    pub(super) fn visit(
        &mut self,
        root: &str,
        dir: &Path,
        entry: dir::Entry<'_>,
    ) -> Result<Flow, Error> {
        let budget = self.budget;
        // Past the deadline nothing more can move: counting on would only hold the run.
        if Instant::now() >= budget.until {
            self.moves.incomplete = true;
            return Ok(Flow::Stop);
        }
        if let Some(seek) = &mut self.seeking {
            if !entry.path.starts_with(&seek.within) {
                seek.left = true;
                return Ok(Flow::Stop);
            }
            if path_digest(entry.path) != seek.digest {
                return Ok(Flow::Enter);
            }
            self.seeking = None;
        }
        if matches!(entry.kind, Kind::File | Kind::Unknown) {
            if self.moves.visited >= self.max_visits {
                self.moves.incomplete = true;
                return Ok(Flow::Stop);
            }
            self.moves.visited += 1;
        }
        let flow = match entry.kind {
            Kind::File => Flow::Continue,
            // Maybe a directory: opened as one (without following a link) and walked if it
            // is; a misplaced one that is not a regular file is refused by the move.
            Kind::Unknown => Flow::Enter,
            Kind::Directory => return Ok(Flow::Continue),
            Kind::Private(_) => {
                if let Some(after) = self.abandoned_after {
                    self.abandoned(&entry, dir, after);
                }
                if self.cut_short.len() >= CUT_SHORT_AT_MOST {
                    // As at the shard's end: the batch first, whose moves may free their
                    // names.
                    info!(
                        held = CUT_SHORT_AT_MOST,
                        at = %dir.join(entry.path).display(),
                        "cut-short moves given back before the shard's end: as many held open as a run may"
                    );
                    self.flush()?;
                    self.give_back();
                }
                return Ok(Flow::Continue);
            }
            Kind::Other(other) => {
                self.moves.skipped += 1;
                warn!(path = %dir.join(entry.path).display(), kind = other.as_str(), "not a regular file; left alone");
                self.held_by(dir.join(entry.path), other.as_str());
                return Ok(Flow::Continue);
            }
            Kind::Failed(ref e) => {
                self.moves.failed += 1;
                warn!(path = %dir.join(entry.path).display(), error = %e, "directory skipped");
                self.held_by(dir.join(entry.path), "a directory that cannot be walked");
                return Ok(Flow::Continue);
            }
        };
        self.route(root, dir, &entry)?;
        Ok(flow)
    }

    /// A file (or an entry that may be one) the walk met: where its home is, and whether it
    /// is misplaced (then it joins the batch) or cannot be routed (counted as failed).
    fn route(&mut self, root: &str, dir: &Path, entry: &dir::Entry<'_>) -> Result<(), Error> {
        let Some(rel_path) = entry.path.to_str() else {
            self.moves.failed += 1;
            self.held_by(
                dir.join(entry.path),
                "a name that is not UTF-8, which no router routes",
            );
            return Ok(());
        };
        let logical = match self.config.watch_dir.as_str() {
            "" => rel_path.to_owned(),
            watch_dir => format!("{watch_dir}/{rel_path}"),
        };
        let home = match self.comparison {
            Some(c) => c.home(&logical, root, &self.shards, self.list.strategy),
            None => efs_router::shard_index(&logical, &self.shards, self.list.strategy)
                .map(|i| self.shards[i].root.as_str()),
        };
        match home {
            // Past the moves or the time, a misplaced file is only counted.
            Ok(home_root) if home_root != root && self.spent() => self.moves.remaining += 1,
            Ok(home_root) if home_root != root => {
                let home = self.config.watch_path(home_root).join(entry.path);
                self.misplaced(dir, entry, home)?
            }
            Ok(_) => {}
            Err(e) => {
                self.moves.failed += 1;
                warn!(file = %logical, error = %e, "not a routable path; left alone");
            }
        }
        Ok(())
    }

    /// The run's moves, or its time, are spent: a misplaced file met now stays where it is.
    pub(super) fn spent(&self) -> bool {
        let taken = self.moves.moved + self.moves.dropped_older + self.batch.len() as u64;
        taken >= self.budget.max_moves || Instant::now() >= self.budget.until
    }

    /// The warnings of the run: what it named, and how many cut-short moves it did not name
    /// (`warnings_capped`).
    pub(super) fn take_warnings(&mut self) -> Vec<Warning> {
        let mut warnings = std::mem::take(&mut self.warnings);
        if self.cut_short_unnamed > 0 {
            warnings.push(Warning::WarningsCapped {
                kind: "cut_short_move",
                left_out: std::mem::take(&mut self.cut_short_unnamed),
            });
        }
        warnings
    }

    /// A drain's walk met an entry it will never move: the shard keeps it, so the drain holds
    /// (dropping the root would hide it), and the first few are named for a person to deal
    /// with.
    pub(super) fn held_by(&mut self, path: PathBuf, what: &'static str) {
        let named = self
            .warnings
            .iter()
            .filter(|w| matches!(w, Warning::DrainHeldByEntry { .. }))
            .count();
        if self.draining && named < NAMED_AT_MOST {
            self.warnings.push(Warning::DrainHeldByEntry {
                path: path.to_string_lossy().into_owned(),
                what,
            });
        }
    }

    /// Whether `rel` (relative to the watched directory) is anything in any listed shard, as
    /// the server answers now.
    pub(super) fn anywhere(&self, rel: &Path) -> std::io::Result<bool> {
        for t in self.list.shards() {
            if anything_beneath(self.config, &self.config.watch_path(&t.root).join(rel))? {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// Whether anything is at `path`, as the server answers now, its directory opened beneath the
/// mount without following a link (one on the way is an error: the entry asked about stays).
fn anything_beneath(config: &Config, path: &Path) -> std::io::Result<bool> {
    let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
        return Ok(false);
    };
    match shard::open_dir(config, dir, false) {
        Ok(fd) => relocation::anything_at(&Pinned::own(fd, dir)?.join(name)),
        // Missing maybe only in this client's cache: asked again as the server answers, which
        // can only turn it into a "yes", and a "yes" gives a copy back, never drops one.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => relocation::anything_at(path),
        Err(e) => Err(e),
    }
}
