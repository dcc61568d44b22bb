//! Moving files to their homes under the published list: a draining shard's files before its
//! mount target goes ([`drain_shards`]), and misplaced files in the background ([`rebalance`],
//! the walk of [`crate::rebalance`]'s run).
//!
//! A file's logical path is `<WATCH_DIR>/<its path below the watched directory>`, nested ones
//! included; its home is the shard `shard_index` gives that path under the list (draining shards
//! get nothing), at the same relative path. Each shard's tree is walked in name order
//! (`efs_router::sorted_walk`, from a directory opened beneath the mount without following
//! links): memory stays bounded whatever the number of misplaced files, and a rebalance goes on
//! where its last run stopped. The router's names abandoned by writers and moves that died are
//! cleaned up as the rebalance's walk meets them. Moves go in batches
//! through `efs_router::relocation::relocate_many`, several at a time, each deciding as
//! `efs_router::relocate` does (their retires share private directories): the latest write
//! wins (an older copy at home is replaced, an older copy at the source is dropped), and what a
//! move removes is the file it looked at. The router's own names (writes and moves in
//! progress) are never moved; links, FIFOs and devices are skipped.

use crate::config::Config;
use crate::error::Error;
use crate::plan::{Warning, WARNINGS_PER_KIND};
use crate::state::rebalancing::{path_digest, Cursor};
use crate::state::comparison::Comparison;
use crate::shard;
use efs_router::dir::Pinned;
use efs_router::dir::{self, Flow, Kind, NAMED_MARK};
use efs_router::list::MountTargetList;
use efs_router::names::Private;
use efs_router::relocation::{self, relocate_many, OtherOwners};
use efs_router::sorted_walk::{walk_sorted_at, Walked};
use efs_router::{NotARegularFile, Relocation};
use rustix::fs::{Mode, OFlags};
use serde::Serialize;
use std::collections::BTreeSet;
use std::collections::HashMap;
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::{Duration, Instant, SystemTime};
use tracing::{info, warn};

/// Misplaced files are moved this many at a time (the paths of one batch are what is held).
const BATCH: usize = 256;
/// Directories a batch pins at most before it is moved: with the destinations', well within
/// Lambda's 1,024 descriptors.
const PINS_AT_MOST: usize = 128;
/// Cut-short moves' private directories the walk holds at most before it gives them back
/// (each pins two descriptors: it and its holder). With a batch's (at most [`PINS_AT_MOST`]
/// sources and [`BATCH`] destinations) and the walk's (one a level), within Lambda's 1,024.
const CUT_SHORT_AT_MOST: usize = 64;
/// Entries that hold a drain named in one run at most: enough to act on, a small response.
const NAMED_AT_MOST: usize = 10;

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
    /// Abandoned names of writers and moves that died (unchanged for an hour), removed or
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
    /// How a rebalance compared each file's shard ([`Comparison::name`]).
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

/// How a run moves files: the budget, the deadline, how many at a time.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    pub max_moves: u64,
    pub until: Instant,
    pub concurrency: usize,
}

/// Drains the shards rooted at `roots`: moves their files home, at most `max_moves`, and none
/// once `until` has come. Every file not moved is counted in `remaining`. The directories it
/// leaves empty are removed afterwards, and the router's names it meets are dealt with as a
/// rebalance does (a drain waits for them): an abandoned one is cleaned up or given back, and a
/// cut-short move not abandoned yet is named in `warnings`, as what holds the drain.
pub fn drain_shards(
    config: &Config,
    list: &MountTargetList,
    roots: &[String],
    budget: Budget,
    warnings: &mut Vec<Warning>,
) -> Result<Moves, Error> {
    let mut mover = Mover::new(config, list, budget, None, u64::MAX);
    mover.abandoned_after = Some(config.abandoned_after);
    mover.draining = true;
    for root in roots.iter().collect::<BTreeSet<_>>() {
        if Instant::now() >= budget.until {
            mover.moves.incomplete = true;
            break;
        }
        mover.shard(root, Path::new(""), true)?;
    }
    warnings.append(&mut mover.take_warnings());
    let moves = mover.moves;
    log_moves(&moves);
    Ok(moves)
}

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

/// One rebalance run: the walk a drain makes ([`drain_shards`]), over the shards rooted at
/// `roots` in the order of their roots, from `walk.from` on, until the end of the last shard (the pass ends: `resume_at` is
/// `None`), the deadline, or `walk.max_visits` files. On the way it cleans up the router's
/// abandoned names it meets (see [`Mover::abandoned`]): the walk that finds misplaced files
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

fn log_moves(moves: &Moves) {
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

/// A walk resuming at a position kept by its digest ([`Cursor::at`]): it visits nothing until
/// it meets that path, below the directory it starts from.
struct Seeking {
    within: PathBuf,
    digest: String,
    /// The position as it was kept: kept again if the run ends before it is met.
    cursor: Cursor,
    /// The walk left `within` without meeting it.
    left: bool,
}

/// One run's moving: what it routes by, what it may still do, what it did.
struct Mover<'a> {
    config: &'a Config,
    list: &'a MountTargetList,
    shards: Vec<efs_router::list::Shard>,
    budget: Budget,
    moves: Moves,
    /// Misplaced files found and not moved yet.
    batch: Vec<Misplaced>,
    /// The directories the batch's files are in, pinned as the walk opened them, by their
    /// path relative to the shard's watched directory.
    pins: HashMap<PathBuf, Rc<Pinned>>,
    /// `None`: every file against every shard.
    comparison: Option<&'a Comparison>,
    max_visits: u64,
    /// Where the walk stopped before its end.
    stopped: Option<Cursor>,
    /// A walk resuming at a position kept by its digest, until it meets it.
    seeking: Option<Seeking>,
    /// A rebalance's: the router's names unchanged this long are abandoned, cleaned up as the
    /// walk meets them. `None` for a drain.
    abandoned_after: Option<Duration>,
    /// Cut-short moves the walk met in the current shard, given back once it has passed, or
    /// once [`CUT_SHORT_AT_MOST`] are held.
    cut_short: Vec<CutShort>,
    /// Entries left by cut-short moves that no warning of this run names (past
    /// [`WARNINGS_PER_KIND`]): counted by warning `warnings_capped`.
    cut_short_unnamed: u64,
    /// A drain's walk: a cut-short move not abandoned yet holds it, and is named.
    draining: bool,
    warnings: Vec<Warning>,
}

impl<'a> Mover<'a> {
    fn new(
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
    fn shard(&mut self, root: &str, from: &Path, drain: bool) -> Result<(), Error> {
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
    fn visit(&mut self, root: &str, dir: &Path, entry: dir::Entry<'_>) -> Result<Flow, Error> {
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
        let Some(rel_path) = entry.path.to_str() else {
            self.moves.failed += 1;
            self.held_by(
                dir.join(entry.path),
                "a name that is not UTF-8, which no router routes",
            );
            return Ok(flow);
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
                self.misplaced(dir, &entry, home)?
            }
            Ok(_) => {}
            Err(e) => {
                self.moves.failed += 1;
                warn!(file = %logical, error = %e, "not a routable path; left alone");
            }
        }
        Ok(flow)
    }

    /// The run's moves, or its time, are spent: a misplaced file met now stays where it is.
    fn spent(&self) -> bool {
        let taken = self.moves.moved + self.moves.dropped_older + self.batch.len() as u64;
        taken >= self.budget.max_moves || Instant::now() >= self.budget.until
    }

    /// A misplaced file the walk met (its home: `home`), within the run's moves and time: it
    /// joins the batch, moved once the batch is full.
    fn misplaced(
        &mut self,
        dir: &Path,
        entry: &dir::Entry<'_>,
        home: PathBuf,
    ) -> Result<(), Error> {
        let within = entry.path.parent().unwrap_or(Path::new("")).to_path_buf();
        let from = match self.pins.get(&within) {
            Some(pin) => Rc::clone(pin),
            None => match Pinned::dup(entry.dir, &dir.join(&within)) {
                Ok(pin) => Rc::clone(self.pins.entry(within).or_insert(Rc::new(pin))),
                Err(e) => {
                    self.moves.failed += 1;
                    warn!(path = %dir.join(entry.path).display(), error = %e, "not moved");
                    return Ok(());
                }
            },
        };
        let name = entry.name().to_os_string();
        self.batch.push(Misplaced { from, name, home });
        if self.batch.len() == BATCH || self.pins.len() >= PINS_AT_MOST {
            self.flush()?;
        }
        Ok(())
    }

    /// One of the router's names the walk met in the shard's watched directory `dir`, when it
    /// is abandoned (unchanged for `after`; [`dir::abandoned`]): a write's temporary file, or
    /// a second name of a file a move linked, is removed at once relative to the directory the
    /// walk opened, so no link planted in the tree is followed; a cut-short move's private
    /// directory is given back once the walk has passed ([`Mover::give_back`]); a private
    /// file with one name may be the only copy of a version whose name is not known: it is
    /// never removed, and reported for a person to look at.
    fn abandoned(&mut self, entry: &dir::Entry<'_>, dir: &Path, after: Duration) {
        let path = dir.join(entry.path);
        let Some(a) = dir::abandoned(entry, SystemTime::now(), after) else {
            if self.draining && matches!(entry.kind, Kind::Private(Private::Moving)) {
                self.warnings.push(Warning::DrainHeldByMove {
                    path: path.display().to_string(),
                    after: after.as_secs(),
                });
            }
            return;
        };
        if a.kind == Private::Moving && a.directory {
            // Two descriptors each: given back once the walk has met as many as it may hold.
            match CutShort::pin(entry, &path) {
                Ok(c) => self.cut_short.push(c),
                Err(e) => {
                    warn!(path = %path.display(), error = %e, "cut-short move not given back")
                }
            }
        } else if !a.safe_to_remove() {
            self.moves.kept_hidden += 1;
            if !a.named && self.name_cut_short(&path) {
                let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
                if let Ok(fd) = rustix::fs::openat(entry.dir, entry.name(), flags, Mode::empty()) {
                    mark_named(&fd);
                }
            }
        } else {
            match rustix::fs::unlinkat(entry.dir, entry.name(), rustix::fs::AtFlags::empty()) {
                Ok(()) => self.moves.abandoned_removed += 1,
                Err(e) => {
                    warn!(path = %path.display(), error = %e, "abandoned file not removed")
                }
            }
        }
    }

    /// Gives back what the cut-short moves the walk met left in their private directories
    /// ([`relocation::recover`]: the newer copy stays, an older one is dropped, and one whose
    /// path is now in no listed shard was deleted by a client meanwhile and is dropped). After
    /// the shard's walk, or once [`CUT_SHORT_AT_MOST`] are pinned: each is a move of its own,
    /// by path, not a step of the walk. Within the run's time: one the deadline stops, or does
    /// not reach, keeps what it holds in its private directory for a later run, and counts
    /// as `remaining` (so the pass is not clean).
    fn give_back(&mut self) {
        for c in std::mem::take(&mut self.cut_short) {
            if Instant::now() >= self.budget.until {
                self.moves.remaining += 1;
                info!(path = %c.pd.shown().display(), "cut-short move waits for the next run: out of time");
                continue;
            }
            self.give_back_one(&c);
        }
    }

    /// [`Mover::give_back`] of one cut-short move.
    fn give_back_one(&mut self, c: &CutShort) {
        let within = c.within.clone();
        let found = |name: &std::ffi::OsStr| {
            Ok(relocation::anything_at(&c.dir.join(name))? || self.anywhere(&within.join(name))?)
        };
        // What is left is named once: the private directory is marked after.
        let named = rustix::fs::fstat(&c.pd).is_ok_and(|st| st.st_mode & NAMED_MARK != 0);
        let until = Some(self.budget.until);
        let (left, unnamed): (Vec<(PathBuf, String)>, u64) = match relocation::recover_pinned(
            c.pd.path(),
            c.dir.path(),
            &c.name,
            until,
            found,
        ) {
            Ok(r) => {
                self.moves.abandoned_removed += r.settled + r.deleted;
                if r.unfinished {
                    self.moves.remaining += 1;
                    info!(path = %c.pd.shown().display(), settled = r.settled, deleted = r.deleted, "cut-short move given back in part: the rest waits for the next run");
                }
                let shown = c.pd.shown();
                let left = r.left.into_iter();
                let left = left.map(|(name, e)| (shown.join(name), e.to_string()));
                (left.collect(), r.left_unnamed)
            }
            Err(e) => (vec![(c.pd.shown().to_path_buf(), e.to_string())], 0),
        };
        self.moves.kept_hidden += left.len() as u64 + unnamed;
        let mut all_named = unnamed == 0;
        if unnamed > 0 {
            warn!(path = %c.pd.shown().display(), left = unnamed, "cut-short move not given back: more entries than are named");
        }
        for (path, e) in &left {
            warn!(path = %path.display(), error = %e, named, "cut-short move not given back");
            if !named {
                all_named &= self.name_cut_short(path);
            }
        }
        if !named && !left.is_empty() && !self.name_cut_short_left_out(unnamed) {
            all_named = false;
        }
        // Marked only once each entry left was named: the next pass names the rest.
        if !left.is_empty() && !named && all_named {
            mark_named(&c.pd);
        }
    }

    /// Names `path` by warning `cut_short_move`, unless this run has named
    /// [`WARNINGS_PER_KIND`] already: then it is counted for `warnings_capped`, and answers
    /// false (not named: a later run names it).
    fn name_cut_short(&mut self, path: &Path) -> bool {
        let named = self
            .warnings
            .iter()
            .filter(|w| matches!(w, Warning::CutShortMove { .. }))
            .count();
        if named >= WARNINGS_PER_KIND {
            self.cut_short_unnamed += 1;
            return false;
        }
        self.warnings.push(Warning::CutShortMove {
            path: path.display().to_string(),
        });
        true
    }

    /// Counts `unnamed` entries no warning names for `warnings_capped`: answers whether there
    /// were none.
    fn name_cut_short_left_out(&mut self, unnamed: u64) -> bool {
        self.cut_short_unnamed += unnamed;
        unnamed == 0
    }

    /// The warnings of the run: what it named, and how many cut-short moves it did not name
    /// (`warnings_capped`).
    fn take_warnings(&mut self) -> Vec<Warning> {
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
    fn held_by(&mut self, path: PathBuf, what: &'static str) {
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

    /// Moves the batch ([`flush`]), then lets go of the directories it pinned.
    fn flush(&mut self) -> Result<(), Error> {
        flush(self.config, &mut self.batch, self.budget, &mut self.moves)?;
        self.pins.clear();
        Ok(())
    }

    /// Whether `rel` (relative to the watched directory) is anything in any listed shard, as
    /// the server answers now.
    fn anywhere(&self, rel: &Path) -> std::io::Result<bool> {
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

/// A misplaced file the walk met: its directory pinned as the walk opened it, its name there,
/// and where its home is.
struct Misplaced {
    from: Rc<Pinned>,
    name: OsString,
    home: PathBuf,
}

/// A cut-short move's private directory the walk met, and the directory that holds it, both
/// pinned as the walk opened them: the recovery reads and gives back there, wherever their
/// paths point by then.
struct CutShort {
    pd: Pinned,
    dir: Pinned,
    /// The private directory's name in its holder.
    name: OsString,
    /// The holding directory's path relative to the shard's watched directory.
    within: PathBuf,
}

impl CutShort {
    fn pin(entry: &dir::Entry<'_>, shown: &Path) -> std::io::Result<CutShort> {
        use rustix::fs::{openat, Mode, OFlags};
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let pd = openat(entry.dir, entry.name(), flags, Mode::empty())?;
        let holder = shown.parent().unwrap_or(shown);
        Ok(CutShort {
            pd: Pinned::own(pd, shown)?,
            dir: Pinned::dup(entry.dir, holder)?,
            name: entry.name().to_os_string(),
            within: entry.path.parent().unwrap_or(Path::new("")).to_path_buf(),
        })
    }
}

/// Marks a private name the function has named to a person ([`dir::NAMED_MARK`]), so that the
/// next passes count it without naming it again. A mark that cannot be set names it again.
fn mark_named(fd: &impl AsFd) {
    if let Ok(st) = rustix::fs::fstat(fd) {
        let mode = rustix::fs::Mode::from_raw_mode((st.st_mode & 0o7777) | NAMED_MARK);
        let _ = rustix::fs::fchmod(fd, mode);
    }
}

/// Moves one batch, making each destination's directory first (beneath the mount, without
/// following links); a pair whose time ran out counts as remaining. Every path it moves by
/// resolves through a pinned directory: the source's as the walk opened it, the destination's
/// as just opened beneath the mount.
fn flush(
    config: &Config,
    batch: &mut Vec<Misplaced>,
    budget: Budget,
    moves: &mut Moves,
) -> Result<(), Error> {
    if batch.is_empty() {
        return Ok(());
    }
    let parents: BTreeSet<PathBuf> = batch
        .iter()
        .filter_map(|m| m.home.parent().map(Path::to_path_buf))
        .collect();
    let mut homes = HashMap::new();
    for parent in parents {
        match shard::open_dir(config, &parent, true).and_then(|fd| Pinned::own(fd, &parent)) {
            Ok(pin) => {
                homes.insert(parent, pin);
            }
            Err(e) => {
                warn!(dir = %parent.display(), error = %e, "destination directory not made; its files stay")
            }
        }
    }
    let mut pairs = Vec::with_capacity(batch.len());
    let mut shown = Vec::with_capacity(batch.len());
    for m in batch.iter() {
        let Some(home) = m.home.parent().and_then(|p| homes.get(p)) else {
            moves.failed += 1;
            continue;
        };
        pairs.push((m.from.join(&m.name), home.join(&m.name)));
        shown.push((m.from.shown().join(&m.name), m.home.clone()));
    }
    let outcomes = relocate_many(&pairs, budget.concurrency.max(1), Some(budget.until));
    // The paths name the pinned directories only while they are held: until the moves end.
    batch.clear();
    for (((src, dst), (from, _)), outcome) in shown.iter().zip(&pairs).zip(outcomes) {
        match outcome {
            None => moves.remaining += 1,
            Some(Ok(Relocation::Moved | Relocation::ReplacedOlder)) => moves.moved += 1,
            Some(Ok(Relocation::DroppedOlder)) => {
                moves.dropped_older += 1;
                info!(from = %src.display(), to = %dst.display(), "an older copy dropped: home holds a newer version");
            }
            Some(Ok(Relocation::SourceGone)) => {}
            // The source is not data: nothing a router finds is left away.
            Some(Err(e)) if NotARegularFile::of(&e).is_some_and(|n| &n.path == from) => {
                moves.skipped += 1;
                warn!(from = %src.display(), error = %e, "not a regular file; left alone");
            }
            // A regular file stays away from home (home holds a link, a FIFO or a directory,
            // or another owner's file): a failure, so the pass does not close its placement.
            Some(Err(e)) if NotARegularFile::of(&e).is_some() => {
                moves.failed += 1;
                warn!(from = %src.display(), to = %dst.display(), error = %e, "home is not a regular file; left away");
            }
            Some(Err(e)) if OtherOwners::of(&e).is_some() => {
                moves.failed += 1;
                warn!(from = %src.display(), to = %dst.display(), error = %e, "two owners' files at one name; both left");
            }
            Some(Err(e)) => {
                moves.failed += 1;
                warn!(from = %src.display(), to = %dst.display(), error = %e, "move failed; left in place");
            }
        }
    }
    Ok(())
}

/// What a walk of a draining shard's tree found ([`holds_files`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holds {
    Files,
    Nothing,
    /// The walk met its time before it could tell: the drain holds, nothing else waits.
    Unknown,
}

/// How many entries a walk visits between two looks at the clock.
const CLOCK_EVERY: u32 = 256;

/// Whether the tree under `dir` (opened beneath the mount, links not followed) holds a file
/// other than a write in progress (a temporary name), nested ones included, walked until
/// `until` at most. A move's private name counts as a file: a router killed mid-move may have
/// left the only copy of a version in it, and a drain that called the shard empty would drop
/// its root from every list, hiding that copy. The drain holds until a walk has given it
/// back. A missing `dir` holds nothing; a part of the tree that cannot be read counts as
/// holding one.
pub fn holds_files(config: &Config, dir: &Path, until: Instant) -> std::io::Result<Holds> {
    let fd = match shard::open_dir(config, dir, false) {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Holds::Nothing),
        Err(e) => return Err(e),
    };
    let mut holds = Holds::Nothing;
    let mut seen = 0u32;
    dir::walk_at(&fd, |entry| {
        seen = seen.wrapping_add(1);
        if seen.is_multiple_of(CLOCK_EVERY) && Instant::now() >= until {
            holds = Holds::Unknown;
            return Flow::Stop;
        }
        match entry.kind {
            Kind::File | Kind::Other(_) | Kind::Failed(_) | Kind::Private(Private::Moving) => {
                holds = Holds::Files;
                Flow::Stop
            }
            // Opened as a directory if it is one (then walked); if not, it is a file.
            Kind::Unknown => {
                match rustix::fs::statat(
                    entry.dir,
                    entry.name(),
                    rustix::fs::AtFlags::SYMLINK_NOFOLLOW,
                ) {
                    Ok(st) if rustix::fs::FileType::from_raw_mode(st.st_mode).is_dir() => {
                        Flow::Enter
                    }
                    _ => {
                        holds = Holds::Files;
                        Flow::Stop
                    }
                }
            }
            Kind::Directory | Kind::Private(Private::Temporary | Private::Reports) => {
                Flow::Continue
            }
        }
    })?;
    Ok(holds)
}

#[cfg(test)]
mod tests {
    use crate::config::ABANDONED_AFTER;
    use super::*;
    use efs_router::names::new_private_name;
    use std::fs;
    use std::time::SystemTime;

    fn put(path: &Path, data: &[u8], secs: u64) {
        fs::write(path, data).unwrap();
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs);
        let f = fs::File::options().write(true).open(path).unwrap();
        f.set_modified(t).unwrap();
    }

    /// A replace cut short: its private directory beside `home`'s name holds a version under
    /// that name, with one link (a writer has replaced the source since).
    fn cut_short_replace(dir: &Path, name: &str, data: &[u8], secs: u64) -> PathBuf {
        let qd = dir.join(new_private_name(Private::Moving));
        fs::create_dir(&qd).unwrap();
        put(&qd.join(name), data, secs);
        qd
    }

    /// [`holds_files`] with time enough.
    fn holds(config: &Config, dir: &Path) -> bool {
        let until = Instant::now() + Duration::from_secs(60);
        holds_files(config, dir, until).unwrap() == Holds::Files
    }

    #[test]
    fn a_drain_walk_out_of_time_holds_its_drain_and_says_so() {
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let watch = config.watch_path("/shards/use1-az2");
        for i in 0..600 {
            fs::create_dir_all(watch.join(format!("empty/{i}"))).unwrap();
        }
        // Empty, with the time to tell.
        let later = Instant::now() + Duration::from_secs(60);
        assert_eq!(holds_files(&config, &watch, later).unwrap(), Holds::Nothing);
        // Out of time before the end: not called empty.
        assert_eq!(
            holds_files(&config, &watch, Instant::now()).unwrap(),
            Holds::Unknown
        );
        // A file among them, with the time to find it.
        put(&watch.join("empty/599/a.json"), b"{}", 0);
        assert_eq!(holds_files(&config, &watch, later).unwrap(), Holds::Files);
    }

    fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

    fn config(mount: &Path) -> Config {
        let base = mount.to_str().unwrap().to_owned();
        Config::from_lookup(|k| match k {
            "EFS_FILE_SYSTEM_ID" => Some("fs-1".into()),
            "ECS_CLUSTER_NAME" => Some("c".into()),
            "ECS_SERVICE_NAME" => Some("s".into()),
            "EFS_MOUNT_PATH" => Some(base.clone()),
            _ => None,
        })
        .unwrap()
    }

    /// A rebalance over every shard of `list`, whose walk counts the router's names unchanged
    /// for `abandoned_after` as abandoned (the age is the ctime's, which cannot be set back:
    /// the tests' hour is zero).
    fn rebalance_all(
        config: &Config,
        list: &MountTargetList,
        abandoned_after: Duration,
        warnings: &mut Vec<Warning>,
    ) -> Moves {
        run(config, list, None, u64::MAX, abandoned_after, warnings)
    }

    /// One rebalance run from `from`, looking at `cap` files at most.
    fn capped_run(
        config: &Config,
        list: &MountTargetList,
        from: Option<&Cursor>,
        cap: u64,
    ) -> Moves {
        run(config, list, from, cap, ABANDONED_AFTER, &mut Vec::new())
    }

    /// One rebalance run over every shard of `list`, with time and moves enough.
    fn run(
        config: &Config,
        list: &MountTargetList,
        from: Option<&Cursor>,
        max_visits: u64,
        abandoned_after: Duration,
        warnings: &mut Vec<Warning>,
    ) -> Moves {
        let roots: Vec<String> = list.shards().into_iter().map(|t| t.root).collect();
        let budget = Budget {
            max_moves: 1000,
            until: Instant::now() + Duration::from_secs(60),
            concurrency: 2,
        };
        let comparison = crate::state::comparison::comparison(list, None);
        let walk = Walk {
            from,
            max_visits,
            comparison: &comparison,
            abandoned_after,
        };
        rebalance(config, list, &roots, budget, walk, warnings).unwrap()
    }

    #[test]
    fn a_capped_rebalance_resumes_after_any_name_and_ends_its_pass() {
        use std::os::unix::ffi::OsStrExt;
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[
            ("/", "use1-az1", 1),
            ("/shards/x", "use1-az2", 1),
        ]);
        let first = config.watch_path("/");
        // Before the misplaced files in the walk's order: a directory whose name is not UTF-8,
        // and a path longer than a position holds, each with more files than a run looks at.
        let foreign = first.join(std::ffi::OsStr::from_bytes(b"a\xff"));
        let long = first.join(format!("b{}/{}", "x".repeat(254), "y".repeat(255)));
        for dir in [&foreign, &long] {
            fs::create_dir_all(dir).unwrap();
            for i in 0..7 {
                put(&dir.join(format!("{i}.json")), b"{}", 0);
            }
        }
        // Misplaced files after them: every name that routes to the second shard.
        fs::create_dir_all(first.join("c")).unwrap();
        let shards = list.shards();
        let away: Vec<String> = (0..200)
            .map(|i| format!("c/{i}.json"))
            .filter(|p| {
                let logical = format!("{}/{p}", config.watch_dir);
                let i = efs_router::shard_index(&logical, &shards, list.strategy).unwrap();
                shards[i].root == "/shards/x"
            })
            .take(5)
            .collect();
        for p in &away {
            put(&first.join(p), b"{}", 0);
        }

        let (mut from, mut runs, mut seeks) = (None, 0, 0);
        loop {
            runs += 1;
            assert!(runs <= 20, "the pass never ends: at {from:?}");
            let moves = capped_run(&config, &list, from.as_ref(), 3);
            from = moves.resume_at;
            seeks += from.as_ref().is_some_and(|c| c.start().1.is_some()) as u32;
            if from.is_none() {
                break;
            }
        }
        // 19 files, each visited at most twice (once more in the shard it moved to), 3 a run,
        // and the run that ends the pass. Positions inside both directories were kept by
        // digest; before, each run went back to where it had started, for ever.
        assert!(runs <= (2 * 19usize).div_ceil(3) + 1, "{runs} runs");
        assert!(seeks >= 3, "{seeks} positions kept by digest");
        let second = config.watch_path("/shards/x");
        for p in &away {
            assert!(second.join(p).is_file(), "{p} not moved home");
        }
    }

    #[test]
    fn a_position_kept_by_digest_and_gone_since_is_walked_again_from_its_directory() {
        use std::os::unix::ffi::OsStrExt;
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
        let first = config.watch_path("/");
        let dir = first.join("d");
        fs::create_dir_all(&dir).unwrap();
        for name in [&b"0\xff"[..], b"1\xff", b"2\xff", b"3\xff"] {
            put(&dir.join(std::ffi::OsStr::from_bytes(name)), b"{}", 0);
        }
        put(&first.join("e.json"), b"{}", 0);
        let moves = capped_run(&config, &list, None, 2);
        let at = moves.resume_at.unwrap();
        assert_eq!(at.start().0, Path::new("d"));
        // Met again: the next run goes on after it.
        let moves = capped_run(&config, &list, Some(&at), 2);
        assert_eq!(moves.visited, 2);
        let next = moves.resume_at.unwrap();
        assert_eq!(next.path, "e.json");
        // Gone: the next run visits nothing past it, and resumes at its directory's start.
        fs::remove_file(dir.join(std::ffi::OsStr::from_bytes(b"2\xff"))).unwrap();
        let moves = capped_run(&config, &list, Some(&at), 2);
        assert_eq!(moves.visited, 0);
        assert_eq!(moves.resume_at.unwrap().path, "d");
    }

    #[test]
    fn a_cut_short_move_holds_a_drain_and_a_write_in_progress_does_not() {
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let watch = config.watch_path("/shards/use1-az2");
        let nested = watch.join("2026/12");
        fs::create_dir_all(&nested).unwrap();
        // A write in progress is the writer's, not data yet.
        put(
            &nested.join(new_private_name(Private::Temporary)),
            b"half",
            0,
        );
        assert!(!holds(&config, &watch));
        // A move cut short, nested: its private directory may hold the only copy.
        let qd = cut_short_replace(&nested, "device-1.json", b"only copy", 0);
        assert!(holds(&config, &watch));
        // Even empty, or a file under that name: what it holds cannot be known by its name.
        fs::remove_file(qd.join("device-1.json")).unwrap();
        assert!(holds(&config, &watch));
        fs::remove_dir(&qd).unwrap();
        fs::write(&qd, b"planted").unwrap();
        assert!(holds(&config, &watch));
        fs::remove_file(&qd).unwrap();
        assert!(!holds(&config, &watch));
    }

    #[test]
    fn a_cut_short_replace_is_given_back_and_only_a_nameless_private_file_is_reported() {
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
        let watch = config.watch_path("/");
        fs::create_dir_all(&watch).unwrap();
        // Newer than home: replaces it. Older than home: dropped.
        put(&watch.join("a"), b"home, older", 10);
        cut_short_replace(&watch, "a", b"replacement", 20);
        put(&watch.join("b"), b"home, newer", 40);
        cut_short_replace(&watch, "b", b"an older copy", 20);
        // A replace's private file from before: one link, its name unknown.
        let legacy = watch.join(new_private_name(Private::Moving));
        put(&legacy, b"nameless", 20);
        // A write that died before its rename.
        put(
            &watch.join(new_private_name(Private::Temporary)),
            b"half",
            20,
        );

        // Not an hour old yet (a move may be using them): left alone.
        let mut warnings = Vec::new();
        let moves = rebalance_all(&config, &list, ABANDONED_AFTER, &mut warnings);
        assert_eq!(moves.abandoned_removed, 0);
        assert_eq!((warnings.len(), names(&watch).len()), (0, 6));

        // An hour later.
        let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
        assert_eq!(moves.abandoned_removed, 3, "{moves:?}");
        assert_eq!(fs::read(watch.join("a")).unwrap(), b"replacement");
        assert_eq!(fs::read(watch.join("b")).unwrap(), b"home, newer");
        let legacy_name = legacy.file_name().unwrap().to_str().unwrap();
        assert_eq!(names(&watch), [legacy_name, "a", "b"]);
        let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
        assert_eq!(kinds, ["cut_short_move"]);
        assert!(
            matches!(&warnings[0], Warning::CutShortMove { path } if *path == legacy.display().to_string())
        );

        // The next runs: the directories are gone; the nameless file is counted, not named
        // again, and neither its bytes nor its time changed.
        let before = fs::metadata(&legacy).unwrap().modified().unwrap();
        for _ in 0..2 {
            warnings.clear();
            let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
            assert_eq!((moves.abandoned_removed, moves.kept_hidden), (0, 1));
            assert!(warnings.is_empty(), "{warnings:?}");
        }
        assert_eq!(fs::metadata(&legacy).unwrap().modified().unwrap(), before);
    }

    #[test]
    fn what_a_give_back_leaves_is_named_once_and_counted_on_every_pass() {
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
        let watch = config.watch_path("/");
        fs::create_dir_all(&watch).unwrap();
        // A cut-short replace holding a newer version it can give back, and a link it never
        // places.
        put(&watch.join("a"), b"older", 0);
        let pd = cut_short_replace(&watch, "a", b"a", 10);
        std::os::unix::fs::symlink("/etc/passwd", pd.join("b")).unwrap();
        let mut warnings = Vec::new();
        let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
        assert_eq!((moves.abandoned_removed, moves.kept_hidden), (1, 1));
        let named: Vec<_> = warnings
            .iter()
            .map(|w| match w {
                Warning::CutShortMove { path } => path.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(named, [pd.join("b").display().to_string()]);
        assert_eq!(fs::read(watch.join("a")).unwrap(), b"a");
        // Later passes count it and name nothing; the link is still there, unfollowed.
        for _ in 0..2 {
            warnings.clear();
            let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
            assert_eq!(moves.kept_hidden, 1);
            assert!(warnings.is_empty(), "{warnings:?}");
        }
        assert!(fs::symlink_metadata(pd.join("b")).unwrap().is_symlink());
    }

    #[test]
    fn a_cut_short_move_of_a_path_deleted_since_is_not_brought_back() {
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[
            ("/", "use1-az1", 1),
            ("/shards/x", "use1-az2", 1),
        ]);
        let (first, second) = (config.watch_path("/"), config.watch_path("/shards/x"));
        let nested = first.join("2026/12");
        fs::create_dir_all(&nested).unwrap();
        fs::create_dir_all(second.join("2026/12")).unwrap();
        // Moves cut short in the first shard's nested directory, each after it had linked its
        // file into the second: one whose path a client has deleted since (the link at home
        // gone), one whose path is still there.
        for name in ["deleted", "kept"] {
            let pd = cut_short_replace(&nested, name, name.as_bytes(), 20);
            fs::hard_link(pd.join(name), second.join("2026/12").join(name)).unwrap();
        }
        fs::remove_file(second.join("2026/12/deleted")).unwrap();

        let mut warnings = Vec::new();
        let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
        assert_eq!(moves.abandoned_removed, 2, "{moves:?}");
        assert!(warnings.is_empty(), "{warnings:?}");
        let everywhere = [names(&nested), names(&second.join("2026/12"))].concat();
        assert!(
            !everywhere.contains(&"deleted".to_owned()),
            "{everywhere:?}"
        );
        assert!(everywhere.contains(&"kept".to_owned()), "{everywhere:?}");
        assert!(
            everywhere.iter().all(|n| !n.starts_with(".efs-router-")),
            "{everywhere:?}"
        );
    }

    #[test]
    fn a_drain_gives_back_an_abandoned_move_and_names_one_that_holds_it() {
        let mount = tempfile::tempdir().unwrap();
        let mut config = config(mount.path());
        let mut list = crate::state::rebalancing::tests::list(&[
            ("/", "use1-az1", 1),
            ("/shards/x", "use1-az2", 1),
        ]);
        list.mount_targets[1].draining = true;
        let (home, drained) = (config.watch_path("/"), config.watch_path("/shards/x"));
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(&drained).unwrap();
        // A move out of the draining shard cut short in its retire: the file it linked home,
        // and a writer's newer version its rename took, the only copy of that version.
        put(&home.join("a"), b"linked", 10);
        let pd = cut_short_replace(&drained, "b", b"the writer's, newest", 30);
        fs::hard_link(home.join("a"), pd.join("a")).unwrap();
        put(&home.join("b"), b"older", 20);
        let budget = || Budget {
            max_moves: 1000,
            until: Instant::now() + Duration::from_secs(60),
            concurrency: 2,
        };
        let roots = ["/shards/x".to_owned()];

        // Not abandoned yet: it holds the drain, and the drain says so.
        let mut warnings = Vec::new();
        drain_shards(&config, &list, &roots, budget(), &mut warnings).unwrap();
        let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
        assert_eq!(kinds, ["drain_held_by_move"]);
        assert!(holds(&config, &drained));

        // Once abandoned, the drain gives it back and moves it home: the newest version wins.
        config.abandoned_after = Duration::ZERO;
        for _ in 0..2 {
            warnings.clear();
            drain_shards(&config, &list, &roots, budget(), &mut warnings).unwrap();
            assert!(warnings.is_empty(), "{warnings:?}");
        }
        assert!(!holds(&config, &drained));
        assert_eq!(names(&home), ["a", "b"]);
        assert_eq!(fs::read(home.join("b")).unwrap(), b"the writer's, newest");
        assert_eq!(fs::read(home.join("a")).unwrap(), b"linked");
    }

    #[test]
    fn a_directory_swapped_for_a_link_after_the_walk_moves_nothing_of_its_target() {
        let mount = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let (home, shard) = (config.watch_path("/"), config.watch_path("/shards/x"));
        fs::create_dir_all(home.join("sub")).unwrap();
        fs::create_dir_all(shard.join("sub")).unwrap();
        put(&shard.join("sub/a"), b"misplaced", 10);
        put(&victim.path().join("a"), b"someone else's", 10);
        // The walk met `sub/a` and pinned `sub`; then a task swapped `sub` for a link to
        // another directory holding a file of the same name.
        let fd = shard::open_dir(&config, &shard.join("sub"), false).unwrap();
        let from = Rc::new(Pinned::own(fd, &shard.join("sub")).unwrap());
        fs::rename(shard.join("sub"), shard.join("was-sub")).unwrap();
        std::os::unix::fs::symlink(victim.path(), shard.join("sub")).unwrap();
        let mut batch = vec![Misplaced {
            from,
            name: "a".into(),
            home: home.join("sub/a"),
        }];
        let budget = Budget {
            max_moves: 10,
            until: Instant::now() + Duration::from_secs(60),
            concurrency: 1,
        };
        let mut moves = Moves::default();
        flush(&config, &mut batch, budget, &mut moves).unwrap();
        assert_eq!(moves.moved, 1, "{moves:?}");
        // What moved is the file the walk saw; the link's target is untouched.
        assert_eq!(fs::read(home.join("sub/a")).unwrap(), b"misplaced");
        assert_eq!(names(victim.path()), ["a"]);
        assert_eq!(
            fs::read(victim.path().join("a")).unwrap(),
            b"someone else's"
        );
        assert!(names(&shard.join("was-sub")).is_empty());
    }

    #[test]
    fn a_cut_short_move_swapped_for_a_link_is_given_back_from_where_the_walk_saw_it() {
        let d = tempfile::tempdir().unwrap();
        let victim = tempfile::tempdir().unwrap();
        let dir = d.path().join("shard");
        fs::create_dir(&dir).unwrap();
        let pd = cut_short_replace(&dir, "a", b"taken", 10);
        put(&victim.path().join("a"), b"someone else's", 20);
        let name = pd.file_name().unwrap().to_os_string();
        let open = |p: &Path| efs_router::dir::open_beneath(p, "", false).unwrap();
        let pinned_pd = Pinned::own(open(&pd), &pd).unwrap();
        let pinned_dir = Pinned::own(open(&dir), &dir).unwrap();
        // A task moves the private directory away and links its name to another directory.
        fs::rename(&pd, d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(victim.path(), &pd).unwrap();
        let (pd_path, dir_path) = (pinned_pd.path(), pinned_dir.path());
        let r = relocation::recover_pinned(pd_path, dir_path, &name, None, |_| Ok(true));
        // The copy the walk saw is given back (the link in its place is not removed: rmdir
        // refuses it, and says so); the link's target is untouched.
        assert!(r.is_err(), "{r:?}");
        assert_eq!(fs::read(dir.join("a")).unwrap(), b"taken");
        assert_eq!(names(victim.path()), ["a"]);
        assert_eq!(
            fs::read(victim.path().join("a")).unwrap(),
            b"someone else's"
        );
        assert!(names(&d.path().join("moved")).is_empty());
    }

    #[test]
    fn a_drain_names_what_it_will_never_move_and_holds() {
        use std::os::unix::ffi::OsStrExt;
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let mut list = crate::state::rebalancing::tests::list(&[
            ("/", "use1-az1", 1),
            ("/shards/x", "use1-az2", 1),
        ]);
        list.mount_targets[1].draining = true;
        let (home, drained) = (config.watch_path("/"), config.watch_path("/shards/x"));
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(drained.join("sub")).unwrap();
        put(&drained.join("sub/a.json"), b"moves", 10);
        std::os::unix::fs::symlink("/etc", drained.join("link")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            drained.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        put(
            &drained.join(std::ffi::OsStr::from_bytes(b"bad-\xff")),
            b"unroutable",
            10,
        );
        let budget = Budget {
            max_moves: 1000,
            until: Instant::now() + Duration::from_secs(60),
            concurrency: 2,
        };
        let mut warnings = Vec::new();
        let roots = ["/shards/x".to_owned()];
        let moves = drain_shards(&config, &list, &roots, budget, &mut warnings).unwrap();
        assert_eq!(moves.moved, 1, "{moves:?}");
        assert_eq!(fs::read(home.join("sub/a.json")).unwrap(), b"moves");
        let mut held: Vec<_> = warnings
            .iter()
            .map(|w| match w {
                Warning::DrainHeldByEntry { path, what } => {
                    let name = Path::new(path).file_name().unwrap().to_string_lossy();
                    (name.into_owned(), *what)
                }
                other => panic!("{other:?}"),
            })
            .collect();
        held.sort();
        let names: Vec<_> = held.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["bad-\u{fffd}", "fifo", "link"]);
        assert!(holds(&config, &drained));
    }

    #[test]
    fn abandoned_names_behind_a_planted_link_are_never_removed() {
        let mount = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[
            ("/", "use1-az1", 1),
            ("/shards/x", "use1-az2", 1),
        ]);
        fs::create_dir_all(config.watch_path("/")).unwrap();
        // The second shard's watched directory is a link someone planted, to a directory
        // holding what looks like a router's abandoned write and a cut-short move.
        let planted = config.watch_path("/shards/x");
        fs::create_dir_all(planted.parent().unwrap()).unwrap();
        std::os::unix::fs::symlink(outside.path(), &planted).unwrap();
        let tmp = outside.path().join(new_private_name(Private::Temporary));
        put(&tmp, b"not the router's", 20);
        let pd = cut_short_replace(outside.path(), "c", b"not the router's either", 20);
        // And a nested one: a link to the outside inside the first shard.
        let nested = config.watch_path("/").join("batch");
        std::os::unix::fs::symlink(outside.path(), &nested).unwrap();

        let mut warnings = Vec::new();
        let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
        assert_eq!(moves.abandoned_removed, 0, "{moves:?}");
        // The planted shard is not walked (it fails), the nested link is skipped.
        assert_eq!((moves.failed, moves.skipped), (1, 1), "{moves:?}");
        assert!(tmp.exists());
        assert!(pd.join("c").exists());
        assert!(!outside.path().join("c").exists());
        let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
        assert!(kinds.is_empty(), "{kinds:?}");
    }

    #[test]
    fn a_move_refused_at_home_leaves_a_file_away_and_counts_as_failed() {
        use std::os::unix::fs::{chown, symlink};
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[
            ("/", "use1-az1", 1),
            ("/shards/x", "use1-az2", 1),
        ]);
        let (first, second) = (config.watch_path("/"), config.watch_path("/shards/x"));
        fs::create_dir_all(&first).unwrap();
        fs::create_dir_all(&second).unwrap();
        // Names whose home is the second shard, each in the first.
        let shards = list.shards();
        let away: Vec<String> = (0..200)
            .map(|i| format!("{i}.json"))
            .filter(|p| {
                let logical = format!("{}/{p}", config.watch_dir);
                let i = efs_router::shard_index(&logical, &shards, list.strategy).unwrap();
                shards[i].root == "/shards/x"
            })
            .take(4)
            .collect();
        for p in &away[..3] {
            put(&first.join(p), b"{}", 0);
        }
        // Home holds a link for the first, another owner's file for the second; the third
        // moves. The fourth is itself a link in the first shard: not data, skipped.
        symlink("elsewhere", second.join(&away[0])).unwrap();
        put(&second.join(&away[1]), b"{}", 5);
        chown(second.join(&away[1]), Some(4321), Some(4321)).unwrap();
        symlink("elsewhere", first.join(&away[3])).unwrap();

        let moves = rebalance_all(&config, &list, ABANDONED_AFTER, &mut Vec::new());
        // Two regular files are still away from home: the pass that saw them is not clean.
        // The two links the walk met (the fourth, and the first's at home) are skipped.
        assert_eq!(
            (moves.moved, moves.skipped, moves.failed),
            (1, 2, 2),
            "{moves:?}"
        );
        assert!(first.join(&away[0]).is_file() && first.join(&away[1]).is_file());
        assert!(second.join(&away[2]).is_file());
    }

    /// One rebalance run over every shard of `list`, comparing as `comparison` says.
    fn compared_run(config: &Config, list: &MountTargetList, comparison: &Comparison) -> Moves {
        let roots: Vec<String> = list.shards().into_iter().map(|t| t.root).collect();
        let budget = Budget {
            max_moves: 1000,
            until: Instant::now() + Duration::from_secs(60),
            concurrency: 2,
        };
        let walk = Walk {
            from: None,
            max_visits: u64::MAX,
            comparison,
            abandoned_after: ABANDONED_AFTER,
        };
        rebalance(config, list, &roots, budget, walk, &mut Vec::new()).unwrap()
    }

    #[test]
    fn a_pass_against_added_shards_closes_nothing_and_a_full_one_finds_a_stray() {
        use crate::state::comparison::comparison;
        use crate::state::rebalancing::{tests::list, Rebalancing, ShardSet};
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let old = list(&[("/", "use1-az1", 1), ("/shards/x", "use1-az2", 1)]);
        let grown = list(&[
            ("/", "use1-az1", 1),
            ("/shards/x", "use1-az2", 1),
            ("/shards/y", "use1-az3", 1),
        ]);
        for root in ["/", "/shards/x", "/shards/y"] {
            fs::create_dir_all(config.watch_path(root)).unwrap();
        }
        // A stray: a file in `/` whose home is `/shards/x`, put there since the last clean pass
        // by a writer the fleet rule cannot see. `/shards/y`, added since, does not outrank `/`
        // for it.
        let stray = (0..500)
            .map(|i| format!("{i}.json"))
            .find(|p| {
                let logical = format!("{}/{p}", config.watch_dir);
                let path = efs_router::LogicalPath::parse(&logical).unwrap();
                let score = |root: &str| efs_router::rendezvous_score(root, &path);
                score("/shards/x") > score("/") && score("/") > score("/shards/y")
            })
            .unwrap();
        put(&config.watch_path("/").join(&stray), b"{}", 0);
        let record = Rebalancing {
            balanced: ShardSet::of(&old),
            ..Rebalancing::default()
        };
        // The pass after growth compares a file in an old shard with the added one only: it
        // does not see the stray, and its clean end records nothing that closes placements.
        let added = comparison(&grown, record.balanced.as_ref());
        assert_eq!(added.name(), "added_shards");
        let moves = compared_run(&config, &grown, &added);
        assert_eq!((moves.moved, moves.remaining, moves.failed), (0, 0, 0));
        let record = record.after_run(&grown, moves.resume_at, true);
        assert_ne!(record.balanced, ShardSet::of(&grown));
        // The next pass compares fully: it moves the stray home, and its clean end closes.
        let full = comparison(&grown, record.balanced.as_ref());
        assert_eq!(full.name(), "full");
        let moves = compared_run(&config, &grown, &full);
        assert_eq!((moves.moved, moves.remaining, moves.failed), (1, 0, 0));
        assert!(config.watch_path("/shards/x").join(&stray).is_file());
        let record = record.after_run(&grown, moves.resume_at, true);
        assert_eq!(record.balanced, ShardSet::of(&grown));
    }

    /// Runs the test `name` (this one) again in a child process whose descriptors are
    /// Lambda's (`RLIMIT_NOFILE` 1,024), and there runs `body`: the limit is the process's,
    /// so it is not set in the process that runs the other tests at once.
    fn with_lambdas_descriptors(name: &str, body: impl FnOnce()) {
        const CHILD: &str = "EFS_TEST_LAMBDAS_DESCRIPTORS";
        if std::env::var_os(CHILD).is_some() {
            let limit = libc::rlimit {
                rlim_cur: 1024,
                rlim_max: 1024,
            };
            // SAFETY: setrlimit reads the struct it is given, nothing else.
            assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
            return body();
        }
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", name, "--test-threads=1", "--nocapture"])
            .env(CHILD, "1")
            .status()
            .unwrap();
        assert!(
            status.success(),
            "{name} under RLIMIT_NOFILE 1024: {status}"
        );
    }

    /// A mount in memory where the host has one: planted trees take seconds there.
    fn roomy_mount() -> tempfile::TempDir {
        tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap())
    }

    #[test]
    fn six_hundred_cut_short_moves_are_given_back_within_lambdas_descriptors() {
        let name =
            "homing::tests::six_hundred_cut_short_moves_are_given_back_within_lambdas_descriptors";
        with_lambdas_descriptors(name, || {
            let mount = roomy_mount();
            let config = config(mount.path());
            let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
            let watch = config.watch_path("/");
            // Each in a directory of its own, as a task would plant them, or moves die.
            for i in 0..600 {
                let dir = watch.join(format!("{i:03}"));
                fs::create_dir_all(&dir).unwrap();
                put(&dir.join("a"), b"older", 0);
                cut_short_replace(&dir, "a", format!("{i}").as_bytes(), 10);
            }
            let mut warnings = Vec::new();
            let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
            assert_eq!(
                (moves.abandoned_removed, moves.failed),
                (600, 0),
                "{moves:?}"
            );
            assert_eq!((moves.remaining, moves.kept_hidden), (0, 0), "{moves:?}");
            assert!(warnings.is_empty(), "{warnings:?}");
            for i in 0..600 {
                let dir = watch.join(format!("{i:03}"));
                assert_eq!(names(&dir), ["a"]);
                assert_eq!(fs::read(dir.join("a")).unwrap(), format!("{i}").as_bytes());
            }
        });
    }

    #[test]
    fn a_planted_private_directory_of_200000_names_is_named_by_a_count() {
        let name = "homing::tests::a_planted_private_directory_of_200000_names_is_named_by_a_count";
        with_lambdas_descriptors(name, || {
            let mount = roomy_mount();
            let config = config(mount.path());
            let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
            let watch = config.watch_path("/");
            fs::create_dir_all(&watch).unwrap();
            // A move's private directory planted with links, which no move gives back, and
            // one version it does give back, newer than home's.
            put(&watch.join("a"), b"older", 0);
            let pd = cut_short_replace(&watch, "a", b"only copy", 10);
            for i in 0..200_000 {
                std::os::unix::fs::symlink("/etc/passwd", pd.join(format!("l{i}"))).unwrap();
            }
            let mut warnings = Vec::new();
            let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
            assert_eq!((moves.abandoned_removed, moves.kept_hidden), (1, 200_000));
            assert_eq!(fs::read(watch.join("a")).unwrap(), b"only copy");
            let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
            let mut wanted = vec!["cut_short_move"; WARNINGS_PER_KIND];
            wanted.push("warnings_capped");
            assert_eq!(kinds, wanted);
            let left_out = (200_000 - WARNINGS_PER_KIND) as u64;
            assert!(
                matches!(warnings.last(), Some(Warning::WarningsCapped { kind: "cut_short_move", left_out: n }) if *n == left_out),
                "{:?}",
                warnings.last()
            );
        });
    }

    #[test]
    fn entries_left_past_the_warnings_cap_are_named_by_a_later_pass() {
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
        let watch = config.watch_path("/");
        fs::create_dir_all(&watch).unwrap();
        let pd = watch.join(new_private_name(Private::Moving));
        fs::create_dir(&pd).unwrap();
        for i in 0..WARNINGS_PER_KIND + 5 {
            std::os::unix::fs::symlink("/etc/passwd", pd.join(format!("l{i}"))).unwrap();
        }
        // Not all named: the private directory is not marked, so each pass names again.
        for _ in 0..2 {
            let mut warnings = Vec::new();
            let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
            assert_eq!(moves.kept_hidden, (WARNINGS_PER_KIND + 5) as u64);
            let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
            let mut wanted = vec!["cut_short_move"; WARNINGS_PER_KIND];
            wanted.push("warnings_capped");
            assert_eq!(kinds, wanted);
            assert_eq!(
                warnings.last(),
                Some(&Warning::WarningsCapped {
                    kind: "cut_short_move",
                    left_out: 5
                })
            );
        }
    }

    #[test]
    fn a_give_back_out_of_time_waits_for_the_next_run_and_leaves_the_pass_unclean() {
        let mount = tempfile::tempdir().unwrap();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
        let watch = config.watch_path("/");
        fs::create_dir_all(&watch).unwrap();
        let pd = cut_short_replace(&watch, "a", b"only copy", 10);
        let mut mover = Mover::new(
            &config,
            &list,
            Budget {
                max_moves: 10,
                until: Instant::now(),
                concurrency: 1,
            },
            None,
            u64::MAX,
        );
        let fd = shard::open_dir(&config, &watch, false).unwrap();
        let mut met = None;
        dir::walk_at(&fd, |entry| {
            met = Some(CutShort::pin(&entry, &watch.join(entry.path)).unwrap());
            Flow::Stop
        })
        .unwrap();
        mover.cut_short.push(met.unwrap());
        mover.give_back();
        assert_eq!(
            (mover.moves.remaining, mover.moves.abandoned_removed),
            (1, 0)
        );
        assert_eq!(fs::read(pd.join("a")).unwrap(), b"only copy");
    }
}
