//! Opening a directory beneath a mount without following a link at any component, and the
//! errors that name the component at fault.

use super::{describe, DIR_FLAGS, SUBDIR_FLAGS};
use rustix::fs::{AtFlags, FileType, Mode, ResolveFlags};
use rustix::io::Errno;
use std::fmt;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Opens the directory `rel` beneath `base` without following a link at any component of
/// `rel`, creating missing components (`mkdirat`, mode 0777 less the umask) when `create`.
///
/// `base` is opened as given (it is the caller's mount). `rel` is relative, `/`-separated;
/// empty and `.` components are skipped, and `..` is refused (`InvalidInput`), as is a NUL.
/// Where the kernel has `openat2` (Linux 5.6), the path is opened in one call with
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS`; otherwise, or when that
/// call fails (a missing component to create, a link to name in the error), component by
/// component with `openat(O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC)` from the parent's descriptor.
/// A component that is a symbolic link or not a directory is an error naming it
/// (`…/shards: a symbolic link: not followed`); a missing one without `create` is `NotFound`.
pub fn open_beneath(base: &Path, rel: &str, create: bool) -> io::Result<OwnedFd> {
    let parts = beneath_parts(rel)?;
    let base_fd = rustix::fs::open(base, DIR_FLAGS, Mode::empty())
        .map_err(|e| in_context(base, describe(e)))?;
    if parts.is_empty() {
        return Ok(base_fd);
    }
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    if let Ok(fd) = rustix::fs::openat2(
        &base_fd,
        parts.join("/"),
        SUBDIR_FLAGS,
        Mode::empty(),
        resolve,
    ) {
        return Ok(fd);
    }
    let mut fd = base_fd;
    let mut shown = base.to_path_buf();
    for part in parts {
        shown.push(part);
        let next = match rustix::fs::openat(&fd, part, SUBDIR_FLAGS, Mode::empty()) {
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&fd, part, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(in_context(&shown, describe(e))),
                }
                rustix::fs::openat(&fd, part, SUBDIR_FLAGS, Mode::empty())
            }
            other => other,
        };
        fd = next.map_err(|e| in_context(&shown, explain(&fd, part, e)))?;
    }
    Ok(fd)
}

/// The error of opening `name` in `dir` as a directory, saying whether it is a symbolic link
/// (`O_NOFOLLOW | O_DIRECTORY` answers a link with `ENOTDIR` or `ELOOP`).
fn explain(dir: impl AsFd, name: &str, e: Errno) -> io::Error {
    if matches!(e, Errno::NOTDIR | Errno::LOOP) {
        if let Ok(st) = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            if FileType::from_raw_mode(st.st_mode) == FileType::Symlink {
                return describe(Errno::LOOP);
            }
            return describe(Errno::NOTDIR);
        }
    }
    describe(e)
}

fn beneath_parts(rel: &str) -> io::Result<Vec<&str>> {
    let bad = |why: &str| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{rel:?}: {why}, not a path beneath a directory"),
        )
    };
    if rel.contains('\0') {
        return Err(bad("contains a NUL byte"));
    }
    let mut parts = Vec::new();
    for part in rel.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err(bad("has a '..' component")),
            _ => parts.push(part),
        }
    }
    Ok(parts)
}

fn in_context(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(
        e.kind(),
        PathError {
            path: path.to_path_buf(),
            source: e,
        },
    )
}

/// An error at a path: `<path>: <cause>`.
#[derive(Debug)]
struct PathError {
    path: PathBuf,
    source: io::Error,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.source)
    }
}

impl std::error::Error for PathError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::{count_files_at, remove_empty_dirs_at, walk_at, Flow, Kind};
    use std::fs;

    #[test]
    fn opens_beneath_without_following_links_and_creates_when_asked() {
        let d = tempfile::tempdir().unwrap();
        let base = d.path().join("mnt");
        fs::create_dir_all(base.join("data/analysis")).unwrap();
        fs::write(base.join("data/analysis/x.json"), b"").unwrap();
        fs::create_dir_all(d.path().join("elsewhere/use1-az4/data/analysis")).unwrap();
        fs::write(
            d.path().join("elsewhere/use1-az4/data/analysis/planted"),
            b"",
        )
        .unwrap();
        std::os::unix::fs::symlink(d.path().join("elsewhere"), base.join("shards")).unwrap();

        let fd = open_beneath(&base, "data/analysis", false).unwrap();
        assert_eq!(count_files_at(&fd).unwrap(), 1);
        let fd = open_beneath(&base, "/./data//analysis/", false).unwrap();
        assert_eq!(count_files_at(&fd).unwrap(), 1);

        // A planted link is an error naming it, with or without create, and nothing is made.
        for create in [false, true] {
            let e = open_beneath(&base, "shards/use1-az4/data/analysis", create).unwrap_err();
            let text = e.to_string();
            assert!(
                text.contains("shards") && text.contains("symbolic link"),
                "{text}"
            );
        }
        assert!(!d.path().join("elsewhere/use1-az4/data/analysis/x").exists());

        // Missing: NotFound, or made.
        let e = open_beneath(&base, "new/shard/data", false).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::NotFound);
        let fd = open_beneath(&base, "new/shard/data", true).unwrap();
        assert_eq!(count_files_at(&fd).unwrap(), 0);
        assert!(base.join("new/shard/data").is_dir());

        // A file where a directory should be.
        let e = open_beneath(&base, "data/analysis/x.json", true).unwrap_err();
        assert!(e.to_string().contains("not a directory"), "{e}");
        for bad in ["../mnt", "data/../../x", "a\0b"] {
            let e = open_beneath(&base, bad, false).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad}");
        }

        // The walk and the cleanup from the descriptor.
        let fd = open_beneath(&base, "", false).unwrap();
        let mut files = Vec::new();
        walk_at(&fd, |e| {
            if matches!(e.kind, Kind::File) {
                files.push(e.path.to_path_buf());
            }
            Flow::Continue
        })
        .unwrap();
        assert_eq!(files, [PathBuf::from("data/analysis/x.json")]);
        let out = remove_empty_dirs_at(&fd).unwrap();
        assert_eq!(out.removed, 3, "new/shard/data, new/shard, new: {out:?}");
        assert!(d.path().join("elsewhere/use1-az4/data/analysis").is_dir());
    }
}
