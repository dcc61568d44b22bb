//! Cleaning up after a drain: removing the empty directories it leaves, bottom up, never the
//! root and never through a link.

use super::{describe, DIR_FLAGS, MAX_DEPTH, SUBDIR_FLAGS, WALK_BUFFER_BYTES};
use crate::names::private_kind;
use rustix::fs::{AtFlags, FileType, Mode, RawDir, SeekFrom};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// What [`remove_empty_dirs`] did.
#[derive(Debug, Default)]
pub struct RemovedDirs {
    /// Directories removed.
    pub removed: u64,
    /// Directories left because they still hold something (a file, a write in progress).
    pub kept: u64,
    /// Directories that could not be read or removed, relative to the root, and why.
    pub failed: Vec<(PathBuf, io::Error)>,
    /// Stopped at its time before the end.
    pub incomplete: bool,
}

/// Removes every empty directory below `root`, bottom up (a directory emptied by removing its
/// empty subdirectories goes too), never `root` itself and never through a link: directories
/// are opened relative to their parent with `O_NOFOLLOW | O_DIRECTORY`, and removed with
/// `rmdir`, which refuses a directory that is not empty (a write landing meanwhile keeps its
/// directory). For a drain to clean up after itself. An entry of unknown type is opened to see
/// whether it is a directory (a round trip each; NFSv4 reports types, so it seldom happens).
pub fn remove_empty_dirs(root: &Path) -> io::Result<RemovedDirs> {
    let fd = rustix::fs::open(root, DIR_FLAGS, Mode::empty())?;
    let mut out = RemovedDirs::default();
    clean(fd.as_fd(), &mut PathBuf::new(), 0, None, &mut out)?;
    Ok(out)
}

/// [`remove_empty_dirs`] below the directory open as `root`.
pub fn remove_empty_dirs_at(root: impl AsFd) -> io::Result<RemovedDirs> {
    remove_empty_dirs_until(root, None)
}

/// [`remove_empty_dirs_at`], stopping once `until` has come ([`RemovedDirs::incomplete`]):
/// what it has not reached stays, for the next time.
pub fn remove_empty_dirs_until(
    root: impl AsFd,
    until: Option<std::time::Instant>,
) -> io::Result<RemovedDirs> {
    let fd = root.as_fd();
    rustix::fs::seek(fd, SeekFrom::Start(0))?;
    let mut out = RemovedDirs::default();
    clean(fd, &mut PathBuf::new(), 0, until, &mut out)?;
    Ok(out)
}

fn clean(
    fd: BorrowedFd<'_>,
    path: &mut PathBuf,
    depth: usize,
    until: Option<std::time::Instant>,
    out: &mut RemovedDirs,
) -> io::Result<()> {
    let mut buf: Vec<MaybeUninit<u8>> = vec![MaybeUninit::uninit(); WALK_BUFFER_BYTES];
    let mut entries = RawDir::new(fd, &mut buf);
    while let Some(entry) = entries.next() {
        if until.is_some_and(|u| std::time::Instant::now() >= u) {
            out.incomplete = true;
            return Ok(());
        }
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        let maybe = match entry.file_type() {
            _ if name == b"." || name == b".." => continue,
            _ if private_kind(name).is_some() => continue,
            FileType::Directory => false,
            FileType::Unknown => true,
            _ => continue,
        };
        let name = OsStr::from_bytes(name);
        path.push(name);
        if depth + 1 > MAX_DEPTH {
            out.failed.push((
                path.clone(),
                io::Error::other(format!("deeper than {MAX_DEPTH} levels: not cleaned")),
            ));
            path.pop();
            continue;
        }
        let below = match rustix::fs::openat(fd, name, SUBDIR_FLAGS, Mode::empty()) {
            Ok(sub) => clean(sub.as_fd(), path, depth + 1, until, out).map(|()| true),
            Err(Errno::NOTDIR | Errno::LOOP) if maybe => Ok(false),
            Err(Errno::NOENT) => Ok(false),
            Err(e) => Err(describe(e)),
        };
        match below {
            Ok(true) => match rustix::fs::unlinkat(fd, name, AtFlags::REMOVEDIR) {
                Ok(()) => out.removed += 1,
                Err(Errno::NOTEMPTY | Errno::EXIST) => out.kept += 1,
                Err(Errno::NOENT) => {}
                Err(e) => out.failed.push((path.clone(), describe(e))),
            },
            Ok(false) => {}
            Err(e) => out.failed.push((path.clone(), e)),
        }
        path.pop();
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    #[test]
    fn removing_empty_directories_stops_at_its_time() {
        let d = tempfile::tempdir().unwrap();
        for i in 0..10 {
            fs::create_dir_all(d.path().join(format!("a/{i}"))).unwrap();
        }
        let fd = rustix::fs::open(d.path(), DIR_FLAGS, Mode::empty()).unwrap();
        let out = remove_empty_dirs_until(&fd, Some(std::time::Instant::now())).unwrap();
        assert!(out.incomplete);
        assert_eq!(out.removed, 0);
        assert!(d.path().join("a/0").is_dir());
        let later = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let out = remove_empty_dirs_until(&fd, Some(later)).unwrap();
        assert!(!out.incomplete);
        assert_eq!(out.removed, 11);
        assert!(!d.path().join("a").exists());
    }

    #[test]
    fn removes_empty_directories_bottom_up_never_the_root_nor_through_links() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        for p in ["a/b/c", "a/d", "keep/e", "busy", "tmp-only"] {
            fs::create_dir_all(root.join(p)).unwrap();
        }
        fs::write(root.join("keep/file"), b"").unwrap();
        fs::write(root.join("tmp-only/.efs-router-0123456789abcdef.tmp"), b"").unwrap();
        fs::create_dir_all(d.path().join("outside/empty")).unwrap();
        std::os::unix::fs::symlink(d.path().join("outside"), root.join("busy/link")).unwrap();
        let out = remove_empty_dirs(&root).unwrap();
        assert_eq!(out.removed, 5, "a/b/c, a/b, a/d, a, keep/e: {out:?}");
        assert_eq!(out.kept, 3, "keep, busy, tmp-only: {out:?}");
        assert!(out.failed.is_empty(), "{out:?}");
        assert!(root.is_dir());
        assert!(!root.join("a").exists());
        assert!(root.join("keep/file").exists() && !root.join("keep/e").exists());
        assert!(root.join("tmp-only").is_dir());
        assert!(d.path().join("outside/empty").is_dir(), "followed a link");
        // Already clean: nothing more.
        let again = remove_empty_dirs(&root).unwrap();
        assert_eq!((again.removed, again.kept), (0, 3));
        // An empty root stays.
        let empty = d.path().join("empty-root");
        fs::create_dir(&empty).unwrap();
        assert_eq!(remove_empty_dirs(&empty).unwrap().removed, 0);
        assert!(empty.is_dir());
    }
}
