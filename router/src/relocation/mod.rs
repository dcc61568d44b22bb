//! Moving one file to another directory of the same file system: the latest version wins,
//! and what a move removes is always the file it looked at.
//!
//! "Newer" is the modification time, to the nanosecond; the destination (home) wins a tie.
//! The protocol (router/README.md, "Moving a file home"), in short:
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
pub use recover::{recover, recover_pinned, Recovered};
pub use single::relocate;
pub(crate) use single::relocate_known;
pub use stamp::anything_at;
pub(crate) use stamp::Stamp;

use crate::names::{new_private_name, Private};
use std::fs;
use std::io;
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

/// A fresh `.efs-router-<16 hex>.moving` in `path`'s directory.
pub(crate) fn private_beside(path: &Path) -> PathBuf {
    parent(path).join(new_private_name(Private::Moving))
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
