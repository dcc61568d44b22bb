//! The NFS client's name cache, and how to make a lookup ask the server instead.
//!
//! Every NFS client (each ECS task, the function) keeps its own cache of names: a name it
//! found maps to the file it found, and with EFS's default mount options (`lookupcache=all`,
//! `acdirmin=30`, `acdirmax=60`) a name it missed stays missing, for up to a minute after
//! another client created, moved or replaced it (docs/design.md fact 13). Close-to-open
//! keeps a file's *contents* fresh, never which file a name holds. Mount options are out of
//! reach on Fargate and Lambda, so the code asks for fresh answers where an answer matters:
//!
//! - opening a directory (`open(dir, O_DIRECTORY)`) makes the client fetch the directory's
//!   attributes from the server (close-to-open, for directories); when the directory changed
//!   since the client last looked, it drops every cached lookup in it, found or missing, and the
//!   next lookup of a name there goes to the server;
//! - when the directory did not change, the cached lookups in it are right, and cost nothing.
//!
//! So [`revalidate_dir`] costs one round trip (a GETATTR), plus one LOOKUP for each name then
//! looked up in a directory that changed. On a local file system it is one `open` and `close`.

use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::io;
use std::path::Path;

const FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);

/// Makes the next lookup of any name in `dir` answer as the server does now, not as this
/// client's cache remembers (see the module's documentation). `Ok(false)` when `dir` is not
/// there, even after its parents were revalidated the same way (a directory another client
/// made is found at once). Follows links as `open` does: `dir` is the caller's own path.
pub fn revalidate_dir(dir: &Path) -> io::Result<bool> {
    match rustix::fs::open(dir, FLAGS, Mode::empty()) {
        Ok(_) => Ok(true),
        Err(Errno::NOENT) => {
            // Missing, maybe only in this client's cache of the parent: ask the parent first.
            let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) else {
                return Ok(false);
            };
            if !revalidate_dir(parent)? {
                return Ok(false);
            }
            match rustix::fs::open(dir, FLAGS, Mode::empty()) {
                Ok(_) => Ok(true),
                Err(Errno::NOENT) => Ok(false),
                Err(e) => Err(e.into()),
            }
        }
        Err(e) => Err(e.into()),
    }
}

/// [`revalidate_dir`] of the directory that holds `path`.
pub fn revalidate_parent(path: &Path) -> io::Result<bool> {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => revalidate_dir(p),
        _ => revalidate_dir(Path::new(".")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_is_there_or_not_and_a_file_is_an_error() {
        let d = tempfile::tempdir().unwrap();
        assert!(revalidate_dir(d.path()).unwrap());
        assert!(!revalidate_dir(&d.path().join("a/b/c")).unwrap());
        std::fs::write(d.path().join("f"), b"").unwrap();
        let e = revalidate_dir(&d.path().join("f")).unwrap_err();
        assert_eq!(e.raw_os_error(), Some(Errno::NOTDIR.raw_os_error()));
        assert!(revalidate_parent(&d.path().join("f")).unwrap());
    }
}
