//! Misplaced files moved home a batch at a time, each path resolved through a pinned directory.

use super::mover::{Budget, Mover};
use super::Moves;
use crate::config::Config;
use crate::error::Error;
use crate::shard;
use efs_router::dir::{self, Pinned};
use efs_router::relocation::{relocate_many, OtherOwners};
use efs_router::{NotARegularFile, Relocation};
use std::collections::{BTreeSet, HashMap};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use tracing::{info, warn};

/// Misplaced files are moved this many at a time (the paths of one batch are what is held).
pub(super) const BATCH: usize = 256;
/// Directories a batch pins at most before it is moved: with the destinations', well within
/// Lambda's 1,024 descriptors.
const PINS_AT_MOST: usize = 128;

/// A misplaced file the walk met: its directory pinned as the walk opened it, its name there,
/// and where its home is.
pub(super) struct Misplaced {
    pub(super) from: Rc<Pinned>,
    pub(super) name: OsString,
    pub(super) home: PathBuf,
}

impl Mover<'_> {
    /// A misplaced file the walk met (its home: `home`), within the run's moves and time: it
    /// joins the batch, moved once the batch is full.
    pub(super) fn misplaced(
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

    /// Moves the batch ([`flush`]), then lets go of the directories it pinned.
    pub(super) fn flush(&mut self) -> Result<(), Error> {
        flush(self.config, &mut self.batch, self.budget, &mut self.moves)?;
        self.pins.clear();
        Ok(())
    }
}

/// Moves one batch, making each destination's directory first (beneath the mount, without
/// following links); a pair whose time ran out counts as remaining. Every path it moves by
/// resolves through a pinned directory: the source's as the walk opened it, the destination's
/// as just opened beneath the mount.
pub(super) fn flush(
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
