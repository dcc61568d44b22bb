//! A directory held open, named by a path that resolves to it and nothing else.
//!
//! The function moves files as root in trees every task can write. A walk opens each directory
//! without following links, but the moves take paths, and a path resolved again after
//! the walk goes wherever a task has since pointed it: a directory swapped for a link would make
//! root move another directory's files. `/proc/self/fd/<n>` names the open directory itself:
//! the kernel jumps to it, whatever its path has become, and a call by path beneath it stays in
//! it. Opening it again revalidates it with the server as opening its path does (Linux checks a
//! directory reached through such a link as it checks one opened by name, NFS close-to-open
//! included), so what the moves ask of the server stays fresh.

use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Where the process's open descriptors are named.
const FDS: &str = "/proc/self/fd";

/// A directory held open, and `/proc/self/fd/<n>`, the path that names it: a call by a path
/// beneath it ([`Pinned::join`]) stays in this directory, wherever its name has gone since.
#[derive(Debug)]
pub struct Pinned {
    /// Held for `path` to name it.
    fd: OwnedFd,
    path: PathBuf,
    /// Where it was when it was opened, for logs.
    shown: PathBuf,
}

impl Pinned {
    /// Pins the directory open as `dir` (found at `shown`).
    pub fn dup(dir: BorrowedFd<'_>, shown: &Path) -> io::Result<Pinned> {
        Pinned::own(dir.try_clone_to_owned()?, shown)
    }

    /// Pins `fd`, a directory, named `shown` in logs.
    pub fn own(fd: OwnedFd, shown: &Path) -> io::Result<Pinned> {
        let path = Path::new(FDS).join(fd.as_raw_fd().to_string());
        // Without /proc the name would not be the directory: refuse rather than resolve paths.
        // Looked at once a process, not once a pin: a stat through the pin would reach the
        // directory itself, a round trip over NFS for every directory a batch moves from.
        static PROC: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
        if !*PROC.get_or_init(|| std::fs::metadata(FDS).is_ok_and(|m| m.is_dir())) {
            return Err(io::Error::other(format!(
                "{}: cannot be pinned: {FDS} does not name it (is /proc mounted?)",
                shown.display()
            )));
        }
        Ok(Pinned {
            fd,
            path,
            shown: shown.to_path_buf(),
        })
    }

    /// The pinned directory's entry `name`: a path that resolves through the directory itself.
    pub fn join(&self, name: impl AsRef<OsStr>) -> PathBuf {
        self.path.join(name.as_ref())
    }

    /// The path that names the directory itself.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Where it was when it was opened: for logs, never resolved.
    pub fn shown(&self) -> &Path {
        &self.shown
    }
}

impl AsFd for Pinned {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dir::open_beneath;
    use std::fs;

    #[test]
    fn a_pinned_directory_swapped_for_a_link_is_still_itself() {
        let d = tempfile::tempdir().unwrap();
        let (walked, elsewhere) = (d.path().join("walked"), d.path().join("elsewhere"));
        fs::create_dir(&walked).unwrap();
        fs::create_dir(&elsewhere).unwrap();
        fs::write(walked.join("f"), b"walked").unwrap();
        fs::write(elsewhere.join("f"), b"someone else's").unwrap();
        let fd = open_beneath(d.path(), "walked", false).unwrap();
        let pinned = Pinned::own(fd, &walked).unwrap();
        // A task moves the directory away and plants a link in its place.
        fs::rename(&walked, d.path().join("moved")).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &walked).unwrap();
        assert_eq!(fs::read(walked.join("f")).unwrap(), b"someone else's");
        assert_eq!(fs::read(pinned.join("f")).unwrap(), b"walked");
        // A call by path beneath it makes its names there.
        fs::write(pinned.join("g"), b"new").unwrap();
        assert!(d.path().join("moved/g").exists());
        assert!(!elsewhere.join("g").exists());
        assert_eq!(pinned.shown(), walked);
    }
}
