//! The router's names abandoned by writers and moves that died, as a walk meets them: removed
//! when that is safe, given back when a cut-short move left them, named when neither can be.

use super::mover::Mover;
use crate::plan::{Warning, WARNINGS_PER_KIND};
use efs_router::dir::{self, Kind, Pinned, NAMED_MARK};
use efs_router::names::Private;
use efs_router::relocation;
use rustix::fs::{Mode, OFlags};
use std::ffi::OsString;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};
use tracing::{info, warn};

/// A cut-short move's private directory the walk met, and the directory that holds it, both
/// pinned as the walk opened them: the recovery reads and gives back there, wherever their
/// paths point by then.
pub(super) struct CutShort {
    pub(super) pd: Pinned,
    pub(super) dir: Pinned,
    /// The private directory's name in its holder.
    pub(super) name: OsString,
    /// The holding directory's path relative to the shard's watched directory.
    pub(super) within: PathBuf,
}

impl CutShort {
    pub(super) fn pin(entry: &dir::Entry<'_>, shown: &Path) -> std::io::Result<CutShort> {
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

impl Mover<'_> {
    /// One of the router's names the walk met in the shard's watched directory `dir`, when it
    /// is abandoned (unchanged for `after`; [`dir::abandoned`]): a write's temporary file, or
    /// a second name of a file a move linked, is removed at once relative to the directory the
    /// walk opened, so no link planted in the tree is followed; a cut-short move's private
    /// directory is given back once the walk has passed ([`Mover::give_back`]); a private
    /// file with one name may be the only copy of a version whose name is not known: it is
    /// never removed, and reported for a person to look at.
    pub(super) fn abandoned(&mut self, entry: &dir::Entry<'_>, dir: &Path, after: Duration) {
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
    /// the shard's walk, or once [`CUT_SHORT_AT_MOST`](super::mover::CUT_SHORT_AT_MOST) are pinned: each is a move of its own,
    /// by path, not a step of the walk. Within the run's time: one the deadline stops, or does
    /// not reach, keeps what it holds in its private directory for a later run, and counts
    /// as `remaining` (so the pass is not clean).
    pub(super) fn give_back(&mut self) {
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
    pub(super) fn give_back_one(&mut self, c: &CutShort) {
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
    pub(super) fn name_cut_short(&mut self, path: &Path) -> bool {
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
    pub(super) fn name_cut_short_left_out(&mut self, unnamed: u64) -> bool {
        self.cut_short_unnamed += unnamed;
        unnamed == 0
    }
}
