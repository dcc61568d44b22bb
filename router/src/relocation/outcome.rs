//! What a move answers: its outcome ([`Relocation`]), and the errors that leave both files
//! where they are (not data, two owners, one file named twice, a destination that keeps
//! changing).

use super::stamp::Stamp;
use super::ROUNDS;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};

/// What a move did. Of several clients moving the same file at once, one reports what was
/// done and the others [`Relocation::SourceGone`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Relocation {
    /// The file is at the destination and no longer at the source (the destination had no
    /// file of that name, or had this very file: a move cut short, finished).
    Moved,
    /// The destination held an older file (by modification time); the source replaced it.
    ReplacedOlder,
    /// The destination held a file as new or newer; the source was an older copy and was
    /// removed.
    DroppedOlder,
    /// Nothing at the source (another client moved or removed it, or finished this move).
    SourceGone,
}

impl Relocation {
    /// `moved`, `replaced-older`, `dropped-older` or `source-gone`, as the Python client names them.
    pub fn as_str(self) -> &'static str {
        match self {
            Relocation::Moved => "moved",
            Relocation::ReplacedOlder => "replaced-older",
            Relocation::DroppedOlder => "dropped-older",
            Relocation::SourceGone => "source-gone",
        }
    }
}

/// The error (inside an [`io::Error`] of kind `InvalidData`; see [`NotARegularFile::of`]) of a
/// move whose source or destination is a symbolic link, directory, FIFO, device or socket:
/// not data, left alone.
#[derive(Debug)]
pub struct NotARegularFile {
    pub path: PathBuf,
    /// `symbolic link`, `directory`, `FIFO`, `character device`, `block device` or `socket`.
    pub what: &'static str,
}

impl NotARegularFile {
    /// The [`NotARegularFile`] inside `e`, if that is what `e` is.
    pub fn of(e: &io::Error) -> Option<&NotARegularFile> {
        e.get_ref()?.downcast_ref()
    }
}

impl fmt::Display for NotARegularFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is a {}, not a regular file: not data, left alone",
            self.path.display(),
            self.what
        )
    }
}

impl std::error::Error for NotARegularFile {}

/// The error (inside an [`io::Error`] of kind `PermissionDenied`; see [`OtherOwners::of`]) of
/// a move whose source and destination are two files of different owners: which is newer is
/// the writers' to say (an mtime anyone can set), so neither takes the other's name and both
/// stay where they are.
#[derive(Debug)]
pub struct OtherOwners {
    pub src: PathBuf,
    pub dst: PathBuf,
    pub src_uid: u32,
    pub dst_uid: u32,
}

impl OtherOwners {
    /// The [`OtherOwners`] inside `e`, if that is what `e` is.
    pub fn of(e: &io::Error) -> Option<&OtherOwners> {
        e.get_ref()?.downcast_ref()
    }
}

impl fmt::Display for OtherOwners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (uid {}) and {} (uid {}) have different owners: neither replaces the other; \
             both left for a person to look at",
            self.src.display(),
            self.src_uid,
            self.dst.display(),
            self.dst_uid
        )
    }
}

impl std::error::Error for OtherOwners {}

/// An error unless `s` (at `src`) and `d` (at `dst`) have one owner: the rule for every move
/// that would replace one file by another or drop one for another.
pub(super) fn same_owner(src: &Path, s: &Stamp, dst: &Path, d: &Stamp) -> io::Result<()> {
    if s.uid == d.uid {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        OtherOwners {
            src: src.to_path_buf(),
            dst: dst.to_path_buf(),
            src_uid: s.uid,
            dst_uid: d.uid,
        },
    ))
}

pub(super) fn not_regular(path: &Path, what: &'static str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        NotARegularFile {
            path: path.to_path_buf(),
            what,
        },
    )
}

pub(super) fn same_entry_error(src: &Path, dst: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} and {} are one file: a move onto itself would remove its only name",
            src.display(),
            dst.display()
        ),
    )
}

pub(super) fn changing(dst: &Path) -> io::Error {
    io::Error::other(format!(
        "{}: changed {ROUNDS} times while a move looked at it; the source was left as it was",
        dst.display()
    ))
}
