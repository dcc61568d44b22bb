//! Reading directories without a stat per entry: counting a directory's files, listing their
//! names, walking a tree; opening a directory beneath a mount without following links; holding
//! a directory open under a path that names it alone ([`Pinned`]); removing the empty
//! directories a drain leaves; finding abandoned temporary files.
//!
//! Over NFS a stat is a network round trip per file, while one READDIR reply carries
//! hundreds of names. So names come straight from `getdents64` into a fixed buffer, the
//! entry type is taken from `d_type`, and an entry whose type the file system does not report
//! (`DT_UNKNOWN`) is never stat'ed here: counting takes it for a file, the walk reports it as
//! [`Kind::Unknown`] for the caller to look at. Memory stays the buffers, whatever the number
//! of files. (`std::fs::DirEntry::file_type` and `walkdir` fall back to a stat for
//! `DT_UNKNOWN`, so they are not used.)
//!
//! The router's own names (`.efs-router-<16 hex>.tmp` and `.moving`, [`crate::names`]) are
//! writes and moves in progress: never counted, never listed as files; the walk reports them
//! apart ([`Kind::Private`]) and [`find_abandoned`] finds the old ones.
//!
//! Below the directory it starts from, nothing here follows a symbolic link: subdirectories are
//! opened relative to their parent's descriptor with `O_NOFOLLOW | O_DIRECTORY`, and
//! [`open_beneath`] opens a relative path the same way (with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` where the kernel has it). A task that plants a link in the file system
//! (`/shards` → elsewhere) makes an error, never a walk or a count of somewhere else.

mod abandoned;
mod beneath;
mod cleanup;
mod count;
mod pinned;
pub mod sorted_walk;
mod walk;

pub use abandoned::{abandoned, find_abandoned, Abandoned, NAMED_MARK};
pub use beneath::open_beneath;
pub use cleanup::{remove_empty_dirs, remove_empty_dirs_at, remove_empty_dirs_until, RemovedDirs};
pub use count::{count_files, count_files_at, for_each_file, for_each_file_at};
pub use pinned::Pinned;
pub use walk::{for_each_name_at, walk, walk_at, Entry, Flow, Kind, Other, MAX_DEPTH};
pub(crate) use walk::{Dir, Order, Subdirs, Walker, WALK_BUFFER_BYTES};

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

/// The buffer of one directory read for counting and listing.
const BUFFER_BYTES: usize = 1 << 20;

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);
const SUBDIR_FLAGS: OFlags = DIR_FLAGS.union(OFlags::NOFOLLOW);

fn open_dir(dir: &Path) -> io::Result<Option<OwnedFd>> {
    match rustix::fs::open(dir, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// An error of a directory operation, with the errno's meaning made plain for the two that
/// matter here (a link met with `O_NOFOLLOW`, a component that is not a directory).
fn describe(e: Errno) -> io::Error {
    let plain = io::Error::from(e);
    match e {
        Errno::LOOP => io::Error::new(plain.kind(), "a symbolic link: not followed"),
        Errno::NOTDIR => io::Error::new(plain.kind(), "not a directory"),
        _ => plain,
    }
}
