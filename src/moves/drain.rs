//! A drain's walk: a draining shard's files moved home before its mount target goes, and
//! whether a draining shard's tree still holds a file.

use super::count::log_moves;
use super::mover::{Budget, Mover};
use super::Moves;
use crate::config::Config;
use crate::error::Error;
use crate::plan::Warning;
use crate::shard;
use efs_router::dir::{self, Flow, Kind};
use efs_router::list::MountTargetList;
use efs_router::names::Private;
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Instant;

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
