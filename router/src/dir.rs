//! Reading a directory without a stat per entry: counting its files, listing their names.
//!
//! Over NFS a stat is a network round trip per file, while one READDIR reply carries
//! hundreds of names. So names come straight from `getdents64` into one 1 MiB buffer, the
//! entry type is taken from `d_type`, and an entry whose type the file system does not report
//! (`DT_UNKNOWN`, common on NFS) counts as a file rather than costing a stat. Memory stays
//! the buffer, whatever the number of files. (`std::fs::DirEntry::file_type` and `walkdir`
//! fall back to a stat for `DT_UNKNOWN`, so they are not used.)

use rustix::fs::{FileType, Mode, OFlags, RawDir};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

const BUFFER_BYTES: usize = 1 << 20;

/// The number of non-directory entries directly in `dir`, or `None` if `dir` does not exist.
pub fn count_files(dir: &Path) -> std::io::Result<Option<u64>> {
    let mut files = 0u64;
    let found = for_each_file(dir, |_| {
        files += 1;
        true
    })?;
    Ok(found.then_some(files))
}

/// Calls `f` with the name of each non-directory entry directly in `dir` (an entry of
/// unknown type counts as a file), until `f` returns false. Returns false if `dir` does not
/// exist.
pub fn for_each_file(dir: &Path, mut f: impl FnMut(&OsStr) -> bool) -> std::io::Result<bool> {
    let fd = match rustix::fs::open(
        dir,
        OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    let mut buf: Vec<MaybeUninit<u8>> = Vec::with_capacity(BUFFER_BYTES);
    buf.resize(BUFFER_BYTES, MaybeUninit::uninit());
    let mut entries = RawDir::new(fd, &mut buf);
    while let Some(entry) = entries.next() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if entry.file_type() != FileType::Directory && !f(OsStr::from_bytes(name)) {
            break;
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
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
}
