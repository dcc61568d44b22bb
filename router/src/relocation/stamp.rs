//! What a move knows of a file ([`Stamp`]: which one, whose, how new, what type), and the
//! looks that take it: this client's (`lstat`), or the server's answer now.

use super::outcome::not_regular;
use crate::cache;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::Path;

/// What a move needs to know of a file: which one it is, whose, how new, what type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    pub(super) ino: u64,
    pub(super) uid: u32,
    mtime: (i64, i64),
    what: Option<&'static str>,
}

impl Stamp {
    pub(crate) fn of(m: &fs::Metadata) -> Stamp {
        let t = m.file_type();
        let what = if t.is_file() {
            None
        } else if t.is_symlink() {
            Some("symbolic link")
        } else if t.is_dir() {
            Some("directory")
        } else if t.is_fifo() {
            Some("FIFO")
        } else if t.is_char_device() {
            Some("character device")
        } else if t.is_block_device() {
            Some("block device")
        } else if t.is_socket() {
            Some("socket")
        } else {
            Some("special file")
        };
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            uid: m.uid(),
            mtime: (m.mtime(), m.mtime_nsec()),
            what,
        }
    }

    pub(crate) fn mtime(&self) -> (i64, i64) {
        self.mtime
    }

    /// `None` for a regular file; otherwise what it is (`symbolic link`, `FIFO`, …).
    pub(crate) fn what(&self) -> Option<&'static str> {
        self.what
    }

    pub(super) fn same_file(&self, other: &Stamp) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }

    pub(super) fn newer_than(&self, other: &Stamp) -> bool {
        self.mtime > other.mtime
    }

    /// An error naming `path` unless this is a regular file.
    pub(super) fn regular(&self, path: &Path) -> io::Result<()> {
        match self.what {
            None => Ok(()),
            Some(what) => Err(not_regular(path, what)),
        }
    }
}

/// `lstat`: `None` when nothing is there.
pub(crate) fn look(path: &Path) -> io::Result<Option<Stamp>> {
    match fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(Stamp::of(&m))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`look`], as the server answers now: `path`'s directory revalidated first
/// ([`crate::cache`]). A missing directory is nothing there.
pub(crate) fn fresh_look(path: &Path) -> io::Result<Option<Stamp>> {
    if !cache::revalidate_parent(path)? {
        return Ok(None);
    }
    look(path)
}

/// Whether anything is at `path`, as the server answers now ([`fresh_look`]): what a
/// recovery asks of each place a cut-short move's path could be.
pub fn anything_at(path: &Path) -> io::Result<bool> {
    Ok(fresh_look(path)?.is_some())
}
