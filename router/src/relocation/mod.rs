//! Moving one file to another directory of the same file system: the latest version wins,
//! and what a move removes is always the file it looked at.
//!
//! "Newer" is the modification time, to the nanosecond; the destination (home) wins a tie.
//! The protocol (router/REFERENCE.md, "Moving a file home"), in short:
//!
//! - the source is looked at first (`lstat`): gone is [`Relocation::SourceGone`]; anything but
//!   a regular file is an error ([`NotARegularFile`]), never moved;
//! - `link(src, dst)`; if that makes the name, the source is retired;
//! - if `dst` exists and is the same file, a move was cut short: the source is retired; if it is
//!   another, as new or newer, the source is an older copy and is retired
//!   ([`Relocation::DroppedOlder`]); if it is older, the source replaces it: linked into a
//!   private directory beside `dst` under `dst`'s name, `dst` looked at once more, that name
//!   renamed over `dst` ([`Relocation::ReplacedOlder`]), then the source retired;
//! - **retiring** the source never unlinks a name a writer uses: the source is renamed into a
//!   private directory (`.efs-router-<16 hex>.moving/`) in its directory, under its own name,
//!   and the directory listed (the server's answer); the file expected (the one linked or
//!   compared) is unlinked; anything else is a version a writer renamed over the source
//!   meanwhile, which ends at `dst` if it is newer than what `dst` holds then, and is dropped
//!   otherwise. [`relocate_many`] shares these directories among many moves.
//!
//! Every private directory is opened the moment it is made, checked to be that one, and used
//! only through its descriptor (`PrivateDir`); a recovery opens the ones it reads without
//! following a link. So a task that swaps one for a link sends no rename, listing or unlink
//! elsewhere, though the function runs as root.
//!
//! Never a copy: the bytes do not move, and the inode and its modification time stay.

mod batch;
mod outcome;
mod recover;
mod retire;
mod settle;
mod single;
mod stamp;

pub use batch::relocate_many;
pub use outcome::{NotARegularFile, OtherOwners, Relocation};
pub use recover::{recover, recover_pinned, Recovered, LEFT_NAMED_AT_MOST};
pub use single::relocate;
pub(crate) use single::relocate_known;
pub use stamp::anything_at;
pub(crate) use stamp::Stamp;

use crate::dir::Pinned;
use crate::names::{new_private_name, Private};
use rustix::fs::{Mode, OFlags, RawDir};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fs;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// How many times a move looks again at a destination that other clients keep changing
/// under it before it gives up (an error; nothing is lost, the source stays).
const ROUNDS: usize = 8;

/// Whether `a` and `b` are one directory entry: the same name in the same directory (by
/// device and inode, so `d/../d/f` is `d/f`).
fn same_entry(a: &Path, b: &Path) -> io::Result<bool> {
    let (Some(name_a), Some(name_b)) = (a.file_name(), b.file_name()) else {
        return Ok(true);
    };
    if name_a != name_b {
        return Ok(false);
    }
    let (da, db) = (fs::metadata(parent(a))?, fs::metadata(parent(b))?);
    Ok(da.dev() == db.dev() && da.ino() == db.ino())
}

pub(crate) fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// How a private directory is opened: a directory, never through a link.
const PRIVATE_DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// A move's private directory (`.efs-router-<16 hex>.moving`), made for it and held open as
/// [`Pinned`]: every call in it (a rename or a link into it, its listing, an unlink, a settle)
/// names it through its descriptor ([`PrivateDir::join`]), so a task that swaps its name for a
/// link or another directory afterwards changes nothing a move does. Only its removal names it
/// in its parent, by `rmdir`, which removes an empty directory and follows no link.
#[derive(Debug)]
pub(crate) struct PrivateDir {
    pin: Pinned,
    /// Its name in the directory it was made in: what its removal names, and errors show.
    named: PathBuf,
}

impl PrivateDir {
    /// Makes a fresh private directory in `path`'s directory and pins it ([`PrivateDir::make_in`]).
    pub(crate) fn beside(path: &Path) -> io::Result<PrivateDir> {
        PrivateDir::make_in(parent(path))
    }

    /// Makes a fresh private directory in `dir`, opens that name (`O_DIRECTORY | O_NOFOLLOW`)
    /// and checks it is the one just made: a directory, not a link, with no entry. Otherwise
    /// an error naming it (never of kind `NotFound`, which is `dir`'s own: gone), and nothing
    /// is done in it. The owner is not compared: over an EFS access point the server makes
    /// it the access point's user, whatever this process's uid.
    ///
    /// Over NFS this is the directory's CREATE, then the open's GETATTR (close-to-open) and
    /// one READDIR (the check that it is empty), the only calls it adds to an unpinned one.
    pub(crate) fn make_in(dir: &Path) -> io::Result<PrivateDir> {
        let named = dir.join(new_private_name(Private::Moving));
        fs::create_dir(&named)?;
        let not_made = |why: &dyn std::fmt::Display| {
            io::Error::other(format!(
                "{}: not the private directory just made ({why}); nothing done in it",
                named.display()
            ))
        };
        let fd =
            rustix::fs::open(&named, PRIVATE_DIR_FLAGS, Mode::empty()).map_err(|e| match e {
                Errno::LOOP => not_made(&"a symbolic link, not followed"),
                Errno::NOTDIR => not_made(&"not a directory"),
                e => not_made(&io::Error::from(e)),
            })?;
        if !is_empty(fd.as_fd()).map_err(|e| not_made(&e))? {
            return Err(not_made(&"not empty"));
        }
        let pin = Pinned::own(fd, &named).inspect_err(|_| {
            // Ours and empty (just read so): not left behind.
            let _ = fs::remove_dir(&named);
        })?;
        Ok(PrivateDir { pin, named })
    }

    /// Its entry `name`, through its descriptor.
    pub(crate) fn join(&self, name: impl AsRef<OsStr>) -> PathBuf {
        self.pin.join(name)
    }

    /// The path that names the directory itself.
    pub(crate) fn path(&self) -> &Path {
        self.pin.path()
    }

    /// Its name in its parent.
    pub(crate) fn named(&self) -> &Path {
        &self.named
    }

    /// Removes it, by its name in its parent (`rmdir`): only an empty directory goes, and a
    /// link put in its place is refused (`ENOTDIR`), never followed. A directory moved away
    /// meanwhile stays where it was moved, empty.
    pub(crate) fn remove(&self) -> io::Result<()> {
        fs::remove_dir(&self.named)
    }
}

/// Whether the open directory `fd` has no entry but `.` and `..`: read to its end.
fn is_empty(fd: BorrowedFd<'_>) -> io::Result<bool> {
    let mut buf = [MaybeUninit::<u8>::uninit(); 1024];
    let mut entries = RawDir::new(fd, &mut buf);
    while let Some(entry) = entries.next() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name != b"." && name != b".." {
            return Ok(false);
        }
    }
    Ok(true)
}

fn remove_private(p: &Path) -> io::Result<()> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// What the tests of every part share.
#[cfg(test)]
pub(crate) mod tests {
    use std::fs;
    use std::os::unix::fs::MetadataExt;
    use std::path::Path;
    use std::time::{Duration, SystemTime};

    /// `path` holds `data` and was last modified `secs` seconds after an arbitrary epoch.
    pub(crate) fn put(path: &Path, data: &[u8], secs: u64) {
        fs::write(path, data).unwrap();
        set_mtime(path, secs);
    }

    pub(crate) fn set_mtime(path: &Path, secs: u64) {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs);
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    pub(crate) fn ino(path: &Path) -> u64 {
        fs::symlink_metadata(path).unwrap().ino()
    }

    /// The names in `dir`, sorted: no private name may be left behind.
    pub(crate) fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }
}
