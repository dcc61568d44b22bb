//! Moving one file to another directory of the same file system without ever replacing a
//! file that is already there.
//!
//! `rename(2)` replaces its destination, and checking first leaves a window in which another
//! client's file would be lost. `link(2)` fails with `EEXIST` instead, atomically, on NFS as
//! on local disks; the source name is removed once the new name exists. A move cut short
//! between the two leaves one file under two names, which the next attempt recognises (same
//! inode) and finishes. Never a copy: the bytes do not move.

use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;

// Linux's numbers: what `link(2)` answers on a file system without hard links.
const EPERM: i32 = 1;
const EOPNOTSUPP: i32 = 95;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relocation {
    /// The file is at the destination and no longer at the source.
    Moved,
    /// Another file already has the destination name; both were left as they were.
    DestinationTaken,
    /// Nothing at the source (another client moved or removed it, or finished this move).
    SourceGone,
}

/// Moves `src` to `dst` (whose directory must exist), never replacing an existing `dst`.
pub fn relocate(src: &Path, dst: &Path) -> io::Result<Relocation> {
    if src == dst {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is both source and destination", src.display()),
        ));
    }
    match fs::hard_link(src, dst) {
        Ok(()) => remove_source(src),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match same_file(src, dst)? {
            Some(true) => remove_source(src),
            Some(false) => Ok(Relocation::DestinationTaken),
            None => Ok(Relocation::SourceGone),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound && !exists(src)? => {
            Ok(Relocation::SourceGone)
        }
        // File systems without hard links: check, then rename (a small window, documented).
        Err(e) if matches!(e.raw_os_error(), Some(EPERM | EOPNOTSUPP)) => {
            if exists(dst)? {
                return Ok(Relocation::DestinationTaken);
            }
            match fs::rename(src, dst) {
                Ok(()) => Ok(Relocation::Moved),
                Err(e) if e.kind() == io::ErrorKind::NotFound && !exists(src)? => {
                    Ok(Relocation::SourceGone)
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

fn remove_source(src: &Path) -> io::Result<Relocation> {
    match fs::remove_file(src) {
        Ok(()) => Ok(Relocation::Moved),
        // Another mover finished the same move first (the file is at the destination): the
        // one whose unlink succeeds reports the move, so racing movers count it once.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Relocation::SourceGone),
        Err(e) => Err(e),
    }
}

/// `None` when `src` is gone.
fn same_file(src: &Path, dst: &Path) -> io::Result<Option<bool>> {
    let s = match fs::symlink_metadata(src) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let d = fs::symlink_metadata(dst)?;
    Ok(Some(s.dev() == d.dev() && s.ino() == d.ino()))
}

fn exists(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_and_keeps_the_bytes() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        fs::write(&src, b"reading").unwrap();
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::Moved);
        assert!(!src.exists());
        assert_eq!(fs::read(&dst).unwrap(), b"reading");
    }

    #[test]
    fn never_replaces_the_destination() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        fs::write(&src, b"old").unwrap();
        fs::write(&dst, b"new").unwrap();
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::DestinationTaken);
        assert_eq!(fs::read(&src).unwrap(), b"old");
        assert_eq!(fs::read(&dst).unwrap(), b"new");
    }

    #[test]
    fn a_missing_source_is_gone_not_an_error() {
        let d = tempfile::tempdir().unwrap();
        let dst = d.path().join("b");
        assert_eq!(
            relocate(&d.path().join("a"), &dst).unwrap(),
            Relocation::SourceGone
        );
        fs::write(&dst, b"moved by another").unwrap();
        assert_eq!(
            relocate(&d.path().join("a"), &dst).unwrap(),
            Relocation::SourceGone
        );
    }

    #[test]
    fn a_move_cut_short_after_the_link_is_finished() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        fs::write(&src, b"x").unwrap();
        fs::hard_link(&src, &dst).unwrap();
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::Moved);
        assert!(!src.exists());
        assert_eq!(fs::read(&dst).unwrap(), b"x");
    }

    #[test]
    fn racing_movers_leave_exactly_one_copy() {
        let d = tempfile::tempdir().unwrap();
        for round in 0..50 {
            let (src, dst) = (
                d.path().join(format!("s{round}")),
                d.path().join(format!("d{round}")),
            );
            fs::write(&src, round.to_string()).unwrap();
            let outcomes: Vec<Relocation> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| relocate(&src, &dst).unwrap()))
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(
                !outcomes.contains(&Relocation::DestinationTaken),
                "{outcomes:?}"
            );
            let moved = outcomes.iter().filter(|o| **o == Relocation::Moved).count();
            assert_eq!(moved, 1, "{outcomes:?}");
            assert!(!src.exists());
            assert_eq!(fs::read_to_string(&dst).unwrap(), round.to_string());
        }
    }
}
