//! Moving files to their homes under the published list: a draining shard's files before its
//! mount target goes, and misplaced files in the background (`rebalance`).
//!
//! A file's logical path is `<WATCH_DIR>/<name>`, its home the shard `shard_index` gives that
//! path under the list (draining shards get nothing). Moves go through the function's own mount
//! of the file system root, by `efs_router::relocate` (link, then unlink): never a copy, never
//! over a file already at home. A file whose name is taken at home is left where it is,
//! counted and logged.

use crate::config::Config;
use crate::error::Error;
use efs_router::dir::for_each_file;
use efs_router::list::MountTargetList;
use efs_router::{relocate, shard_index, Relocation};
use serde::Serialize;
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::time::Instant;
use tracing::{info, warn};

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Moves {
    pub moved: u64,
    /// Misplaced files not moved by this run (the budget or the time ran out).
    pub remaining: u64,
    /// Left where they are: their home already holds a file of that name.
    pub skipped: u64,
    /// Names that are not a routable path, or moves the file system refused.
    pub failed: u64,
}

impl Moves {
    /// Adds a later pass over the same shard: its moves count too, while what it still found
    /// misplaced, skipped or failing replaces the earlier pass's (the same files, seen again).
    pub fn then(&mut self, later: Moves) {
        self.moved += later.moved;
        self.remaining = later.remaining;
        self.skipped = later.skipped;
        self.failed = later.failed;
    }
}

/// Moves misplaced files found in the shards rooted at `roots`, at most `max_moves`, and none
/// once `until` has come. Every misplaced file not moved is counted in `remaining`.
pub fn move_home(
    config: &Config,
    list: &MountTargetList,
    roots: &[String],
    max_moves: u64,
    until: Instant,
) -> Result<Moves, Error> {
    let mut moves = Moves::default();
    let roots: BTreeSet<&String> = roots.iter().collect();
    // Destination directories made this run: one mkdir per shard, not one per file (over NFS
    // each is a round trip).
    let mut ready: BTreeSet<String> = BTreeSet::new();
    for root in roots {
        let dir = config.watch_path(root);
        let mut misplaced: Vec<(OsString, String)> = Vec::new();
        for_each_file(&dir, |name| {
            let Some(name_str) = name.to_str() else {
                moves.failed += 1;
                return true;
            };
            let logical = if config.watch_dir.is_empty() {
                name_str.to_owned()
            } else {
                format!("{}/{name_str}", config.watch_dir)
            };
            match shard_index(&logical, &list.mount_targets, list.strategy) {
                Ok(i) if list.mount_targets[i].root != *root => {
                    misplaced.push((name.to_owned(), list.mount_targets[i].root.clone()));
                }
                Ok(_) => {}
                Err(e) => {
                    moves.failed += 1;
                    warn!(file = %logical, error = %e, "not a routable path; left alone");
                }
            }
            true
        })
        .map_err(|source| Error::ReadDir {
            path: dir.clone(),
            source,
        })?;

        for (name, home) in misplaced {
            if moves.moved >= max_moves || Instant::now() >= until {
                moves.remaining += 1;
                continue;
            }
            let src = dir.join(&name);
            let home_dir = config.watch_path(&home);
            if !ready.contains(&home) {
                std::fs::create_dir_all(&home_dir).map_err(|source| Error::CreateShardDir {
                    path: home_dir.clone(),
                    source,
                })?;
                ready.insert(home);
            }
            let dst = home_dir.join(&name);
            match relocate(&src, &dst) {
                Ok(Relocation::Moved) => moves.moved += 1,
                Ok(Relocation::SourceGone) => {}
                Ok(Relocation::DestinationTaken) => {
                    moves.skipped += 1;
                    warn!(from = %src.display(), to = %dst.display(), "home already holds a file of this name; left both alone");
                }
                Err(e) => {
                    moves.failed += 1;
                    warn!(from = %src.display(), to = %dst.display(), error = %e, "move failed; left in place");
                }
            }
        }
    }
    info!(
        moved = moves.moved,
        remaining = moves.remaining,
        skipped = moves.skipped,
        failed = moves.failed,
        "moved files home"
    );
    Ok(moves)
}

/// Whether the tree under `dir` holds a file that is not a writer's temporary file, nested
/// ones included; links are not followed. A missing `dir` holds nothing.
pub fn holds_files(dir: &std::path::Path) -> std::io::Result<bool> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    for entry in entries {
        let entry = entry?;
        // `file_type` does not follow a symlink.
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if holds_files(&entry.path())? {
                return Ok(true);
            }
        } else if !is_temporary(&entry.file_name()) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// A writer's temporary file (`.efs-router-<hex>.tmp`): in progress, never moved or counted.
fn is_temporary(name: &std::ffi::OsStr) -> bool {
    let name = name.to_string_lossy();
    name.starts_with(".efs-router-") && (name.ends_with(".tmp") || name.ends_with(".moving"))
}
