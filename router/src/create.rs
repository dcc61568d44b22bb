//! Creating a logical path only where it exists nowhere: [`Router::create`].
//!
//! The check-then-write an application would write itself (`exists`, then `write`) has a window
//! in which another writer creates the path and is then overwritten. `create` closes it at home:
//!
//! 1. the look [`Router::exists`] makes: home, then, on a miss, every other distinct shard
//!    directory at once, each revalidated ([`crate::cache`]). A file found anywhere is
//!    [`Creation::AlreadyThere`]: nothing is written;
//! 2. a private temporary name in the home directory, made as [`Router::write`] makes it
//!    (`O_CREAT|O_EXCL`, the directory made when missing), written and synced;
//! 3. `link(temporary, home)`, never `rename`: the server makes the name only if it is free, in
//!    one operation, on NFS as on a local disk. `EEXIST` means another writer got there first
//!    (or something else holds the name: a link, a directory), so the answer is `AlreadyThere`;
//! 4. the temporary name is unlinked, whatever happened: it never stays behind but when that
//!    unlink itself fails, and then it is a second name of a complete file, which the function's
//!    cleanup of abandoned private names removes.
//!
//! Only step 3 is exclusive: between the look of step 1 and the link, a client on another list
//! may put the path in a shard other than home, and both copies then exist (as with a `write`);
//! reads answer home's, and a move keeps the newer.
//!
//! File systems without hard links answer `link` with `EPERM` or `EOPNOTSUPP`. There the name is
//! taken by `renameat2(RENAME_NOREPLACE)`, just as exclusive; where that is refused too (`EINVAL`,
//! `ENOSYS`, `EOPNOTSUPP`), by an empty file made at home with `O_CREAT|O_EXCL`, which claims the
//! name, then the temporary file renamed over it. For that one round trip the name holds an empty
//! file; a client killed in between leaves it empty. EFS has hard links: it never takes either.

use crate::router::{io_err, temporary_in, Error, Found, Router};
use rustix::fs::{RenameFlags, CWD};
use rustix::io::Errno;
use std::fs;
use std::io::{self, Write};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// What [`Router::create`] did. Python: `Creation(kind, index, real)`, `kind` as [`Creation::as_str`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Creation {
    /// Written at home: shard `index` (the path's home), at `real`.
    Created { index: usize, real: PathBuf },
    /// Something already holds the path, in shard `index` at `real` (home, or the first other
    /// shard in list order that has it); nothing was written. At home this includes another
    /// writer's create that won the race, and a name that is not a regular file (as `exists`).
    AlreadyThere { index: usize, real: PathBuf },
}

impl Creation {
    /// `created` or `already-there`, as the Python client names them.
    pub fn as_str(&self) -> &'static str {
        match self {
            Creation::Created { .. } => "created",
            Creation::AlreadyThere { .. } => "already-there",
        }
    }

    /// Whether this call wrote the file.
    pub fn created(&self) -> bool {
        matches!(self, Creation::Created { .. })
    }

    /// The shard the file is in: home when created.
    pub fn index(&self) -> usize {
        match self {
            Creation::Created { index, .. } | Creation::AlreadyThere { index, .. } => *index,
        }
    }

    /// The file's real path on this host.
    pub fn real(&self) -> &Path {
        match self {
            Creation::Created { real, .. } | Creation::AlreadyThere { real, .. } => real,
        }
    }
}

/// How the synced temporary file was given the final name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Placed {
    /// Linked: the temporary name still names it, and goes next.
    Linked,
    /// Renamed: the temporary name is gone.
    Renamed,
    /// The name was taken: the temporary name still holds the bytes, and goes next.
    Taken,
}

impl Router {
    /// Writes `data` as `path` in its home shard only if the path exists nowhere [`Router::exists`]
    /// would find it, atomically against other writers at home: the same look as `exists`, then a
    /// synced temporary file linked to the final name (never renamed over it), then the temporary
    /// name unlinked (see the module's documentation). Creates missing directories. Errors: the
    /// path's ([`Error::Route`], [`Error::InsideAnotherShard`]), the lease's ([`Error::Report`],
    /// only when it would write) and the file system's; the temporary name is removed on each.
    pub fn create(&self, path: &str, data: &[u8]) -> Result<Creation, Error> {
        let home = self.resolve(path)?;
        match self.find(&home, false)? {
            Found::Home => {
                return Ok(Creation::AlreadyThere {
                    index: home.index,
                    real: home.real,
                })
            }
            Found::Elsewhere { index, real } => return Ok(Creation::AlreadyThere { index, real }),
            Found::Missing => {}
        }
        // Like a write: past its lease this client may already count as gone.
        self.lease()?;
        let created = create_at(&home.real, data, place)?;
        let (index, real) = (home.index, home.real);
        Ok(if created {
            Creation::Created { index, real }
        } else {
            Creation::AlreadyThere { index, real }
        })
    }
}

/// A way of giving the synced temporary file (the first path) the final name (the second).
type Placer = fn(&Path, &Path) -> io::Result<Placed>;

/// Steps 2 to 4 at `dst`, giving the name by `place`: whether this call made the file.
fn create_at(dst: &Path, data: &[u8], place: Placer) -> Result<bool, Error> {
    let dir = dst
        .parent()
        .expect("a real path has a shard directory above it");
    let (tmp, mut file) = temporary_in(dir)?;
    let placed = (|| {
        file.write_all(data).map_err(io_err("write", &tmp))?;
        file.sync_all().map_err(io_err("sync", &tmp))?;
        // Closed before the unlink: over NFS, unlinking a file this client holds open renames
        // it to a `.nfs…` name instead.
        drop(file);
        place(&tmp, dst).map_err(io_err("link", dst))
    })();
    if !matches!(placed, Ok(Placed::Renamed)) {
        // Linked, taken, or failed: the temporary name is still there, and never stays.
        let _ = fs::remove_file(&tmp);
    }
    Ok(placed? != Placed::Taken)
}

/// `link(tmp, dst)`: made, or `Taken` on `EEXIST`; without hard links, [`without_links`].
fn place(tmp: &Path, dst: &Path) -> io::Result<Placed> {
    match fs::hard_link(tmp, dst) {
        Ok(()) => Ok(Placed::Linked),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(Placed::Taken),
        Err(e) if no_hard_links(&e) => without_links(tmp, dst),
        Err(e) => Err(e),
    }
}

/// What `link(2)` answers on a file system without hard links.
fn no_hard_links(e: &io::Error) -> bool {
    e.raw_os_error()
        .is_some_and(|n| n == Errno::PERM.raw_os_error() || n == Errno::OPNOTSUPP.raw_os_error())
}

/// `renameat2(tmp, dst, RENAME_NOREPLACE)`: as exclusive as a link. Where the file system or the
/// kernel refuses the flag, [`claim_then_rename`].
fn without_links(tmp: &Path, dst: &Path) -> io::Result<Placed> {
    match rustix::fs::renameat_with(CWD, tmp, CWD, dst, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(Placed::Renamed),
        Err(Errno::EXIST) => Ok(Placed::Taken),
        Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => claim_then_rename(tmp, dst),
        Err(e) => Err(e.into()),
    }
}

/// Claims `dst` with an empty file made `O_CREAT|O_EXCL` (exclusive everywhere, and never through
/// a link), then renames `tmp` over it. For that one round trip `dst` is an empty file.
fn claim_then_rename(tmp: &Path, dst: &Path) -> io::Result<Placed> {
    let claim = match fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dst)
    {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Ok(Placed::Taken),
        Err(e) => return Err(e),
    };
    let ours = claim.metadata();
    drop(claim);
    match fs::rename(tmp, dst) {
        Ok(()) => Ok(Placed::Renamed),
        Err(e) => {
            // The claim goes, unless a write has replaced it meanwhile: that file is not ours.
            let still_ours = match (&ours, fs::symlink_metadata(dst)) {
                (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
                (Err(_), _) => true,
                (_, Err(_)) => false,
            };
            if still_ours {
                let _ = fs::remove_file(dst);
            }
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(dir: &Path) -> Vec<String> {
        let mut n: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        n.sort();
        n
    }

    /// Each way of placing a name: made when free, `Taken` (the other file untouched) when not.
    #[test]
    fn every_way_of_placing_takes_a_free_name_and_never_replaces_one() {
        let placers: [(&str, Placer); 3] = [
            ("link", place),
            ("renameat2", without_links),
            ("claim", claim_then_rename),
        ];
        for (how, placer) in placers {
            let d = tempfile::tempdir().unwrap();
            let dst = d.path().join("f");
            let tmp = d.path().join(".efs-router-0123456789abcdef.tmp");
            fs::write(&tmp, b"new").unwrap();
            let placed = placer(&tmp, &dst).unwrap();
            assert!(matches!(placed, Placed::Linked | Placed::Renamed), "{how}");
            assert_eq!(fs::read(&dst).unwrap(), b"new", "{how}");
            // A linked temporary name is the same file as `dst`: a new one, as a create makes.
            let _ = fs::remove_file(&tmp);
            fs::write(&tmp, b"second").unwrap();
            assert_eq!(placer(&tmp, &dst).unwrap(), Placed::Taken, "{how}");
            assert_eq!(fs::read(&dst).unwrap(), b"new", "{how}");
            assert_eq!(fs::read(&tmp).unwrap(), b"second", "{how}");
        }
    }

    /// A dangling link at the name is taken, never followed: its target stays absent.
    #[test]
    fn a_link_at_the_name_is_never_followed() {
        for placer in [place, without_links, claim_then_rename] {
            let d = tempfile::tempdir().unwrap();
            let (dst, target) = (d.path().join("f"), d.path().join("target"));
            std::os::unix::fs::symlink(&target, &dst).unwrap();
            let tmp = d.path().join(".efs-router-0123456789abcdef.tmp");
            fs::write(&tmp, b"new").unwrap();
            assert_eq!(placer(&tmp, &dst).unwrap(), Placed::Taken);
            assert!(!target.exists());
        }
    }

    /// Whatever placing answers, the temporary name is gone afterwards, and an error is the
    /// error, with the final name left as it was.
    #[test]
    fn the_temporary_name_never_stays() {
        fn failing(_: &Path, _: &Path) -> io::Result<Placed> {
            Err(io::Error::from_raw_os_error(Errno::IO.raw_os_error()))
        }
        let d = tempfile::tempdir().unwrap();
        let dst = d.path().join("sub/f");
        match create_at(&dst, b"x", failing) {
            Err(Error::Io {
                op: "link", source, ..
            }) => {
                assert_eq!(source.raw_os_error(), Some(Errno::IO.raw_os_error()))
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(names(&d.path().join("sub")), Vec::<String>::new());
        for (placer, made) in [
            (place as Placer, true),
            (place, false),
            (without_links, false),
            (claim_then_rename, false),
        ] {
            let got = create_at(&dst, b"y", placer).unwrap();
            assert_eq!(got, made);
            assert_eq!(names(&d.path().join("sub")), ["f"]);
            assert_eq!(fs::read(&dst).unwrap(), b"y");
        }
    }
}
