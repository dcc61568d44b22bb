//! Counting a directory's files, and listing their names: the entries that are neither
//! directories nor the router's own names, read from `getdents64`, never a stat per entry.

use super::{open_dir, BUFFER_BYTES};
use crate::names::private_kind;
use rustix::fs::{FileType, RawDir, SeekFrom};
use std::ffi::OsStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// The number of entries directly in `dir` that are not directories (an entry of unknown type
/// counts as a file) and not the router's own names, or `None` if `dir` does not exist. Reads
/// names only (READDIR), never a stat per entry.
pub fn count_files(dir: &Path) -> io::Result<Option<u64>> {
    let Some(fd) = open_dir(dir)? else {
        return Ok(None);
    };
    let mut files = 0u64;
    read_names(fd.as_fd(), |_| {
        files += 1;
        true
    })?;
    Ok(Some(files))
}

/// [`count_files`] of the directory open as `dir` (for example from
/// [`open_beneath`](super::open_beneath)), read from its start (the descriptor's position is
/// rewound).
pub fn count_files_at(dir: impl AsFd) -> io::Result<u64> {
    let fd = dir.as_fd();
    rustix::fs::seek(fd, SeekFrom::Start(0))?;
    let mut files = 0u64;
    read_names(fd, |_| {
        files += 1;
        true
    })?;
    Ok(files)
}

/// Calls `f` with the name of each entry directly in `dir` that [`count_files`] counts, until
/// `f` returns false. Returns false if `dir` does not exist.
pub fn for_each_file(dir: &Path, f: impl FnMut(&OsStr) -> bool) -> io::Result<bool> {
    let Some(fd) = open_dir(dir)? else {
        return Ok(false);
    };
    read_names(fd.as_fd(), f)?;
    Ok(true)
}

/// [`for_each_file`] of the directory open as `dir`, read from its start.
pub fn for_each_file_at(dir: impl AsFd, f: impl FnMut(&OsStr) -> bool) -> io::Result<()> {
    let fd = dir.as_fd();
    rustix::fs::seek(fd, SeekFrom::Start(0))?;
    read_names(fd, f)
}

fn read_names(fd: BorrowedFd<'_>, mut f: impl FnMut(&OsStr) -> bool) -> io::Result<()> {
    let mut buf: Vec<MaybeUninit<u8>> = vec![MaybeUninit::uninit(); BUFFER_BYTES];
    let mut entries = RawDir::new(fd, &mut buf);
    while let Some(entry) = entries.next() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." || entry.file_type() == FileType::Directory {
            continue;
        }
        if private_kind(name).is_none() && !f(OsStr::from_bytes(name)) {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::open_beneath;
    use std::fs;

    #[test]
    fn counts_files_and_links_not_directories() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..2500 {
            fs::write(dir.path().join(format!("device-{i}.json")), b"{}").unwrap();
        }
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("sub").join("inner.json"), b"{}").unwrap();
        std::os::unix::fs::symlink("device-1.json", dir.path().join("link")).unwrap();
        assert_eq!(count_files(dir.path()).unwrap(), Some(2501));
    }

    #[test]
    fn lists_every_file_name_once_and_stops_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..3000 {
            fs::write(dir.path().join(format!("f{i}")), b"").unwrap();
        }
        let mut names = Vec::new();
        assert!(for_each_file(dir.path(), |n| {
            names.push(n.to_owned());
            true
        })
        .unwrap());
        names.sort();
        names.dedup();
        assert_eq!(names.len(), 3000);
        let mut seen = 0;
        for_each_file(dir.path(), |_| {
            seen += 1;
            seen < 10
        })
        .unwrap();
        assert_eq!(seen, 10);
    }

    #[test]
    fn empty_and_missing_directories() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(count_files(dir.path()).unwrap(), Some(0));
        assert_eq!(count_files(&dir.path().join("absent")).unwrap(), None);
    }

    #[test]
    fn a_file_is_not_a_directory_to_count() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, b"x").unwrap();
        assert!(count_files(&file).is_err());
    }

    #[test]
    fn router_names_are_never_counted_or_listed() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "a.json",
            ".efs-router-0123456789abcdef.tmp",
            ".efs-router-fedcba9876543210.moving",
            ".efs-router-0123456789ABCDEF.tmp", // not the router's: a file
        ] {
            fs::write(dir.path().join(name), b"").unwrap();
        }
        assert_eq!(count_files(dir.path()).unwrap(), Some(2));
        let fd = open_beneath(dir.path(), "", false).unwrap();
        assert_eq!(count_files_at(&fd).unwrap(), 2);
        assert_eq!(count_files_at(&fd).unwrap(), 2, "read from the start again");
        let mut names = Vec::new();
        for_each_file_at(&fd, |n| {
            names.push(n.to_string_lossy().into_owned());
            true
        })
        .unwrap();
        names.sort();
        assert_eq!(names, [".efs-router-0123456789ABCDEF.tmp", "a.json"]);
    }
}
