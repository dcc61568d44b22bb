//! Deleting a logical path everywhere a copy of it may be: [`Router::delete`].
//!
//! A path has one home, but copies can sit in other shards: written by a client on another
//! list, or on their way home in a move. A delete of the home copy alone leaves those for a
//! fallback read to find again: the path comes back. So a delete looks where a miss looks
//! ([`Router::miss_shards`]): every other distinct shard directory in the earlier list forms
//! and wherever a version 3 list says `everywhere` (a path outside its `scope` too); on a
//! version 3 list only the path's home under each open placement, where that differs from
//! home. The function keeps a placement open while a file can be away from home where it homed
//! it, and moves files only from there to home (docs/data-plane.md): those are all the places
//! a copy can be, as for a miss (a file put elsewhere by hand is found by no router until the
//! rebalance moves it home: docs/routing.md). In those places it
//!
//! 1. looks in every one at once and removes the copy there;
//! 2. then looks at home and removes it there. Others first: a move (a fallback read's, the
//!    function's) links its source home before it takes the source away, so a move that had not
//!    linked when step 1 removed its source can no longer link, and one that had is seen at
//!    home in step 2;
//! 3. looks everywhere again at once, removing what it finds, until a round finds nothing (at
//!    most [`ROUNDS`]): a move by a client on another list goes to *its* home, which step 1 may
//!    have looked at already, and takes its source away before step 2 looks (so even a delete
//!    that found nothing looks once more).
//!
//! With none of them (one distinct shard directory, or a settled version 3 list: nothing open)
//! it is one look at home: nothing can move there from anywhere a router looks.
//!
//! Each look is the server's answer, never this client's name cache ([`crate::cache`]): the
//! directory is opened (which revalidates it) beneath this host's mount without following a
//! link at any component ([`crate::dir::open_beneath`]), and the name is looked at and unlinked
//! relative to it. Only a regular file is removed: a symbolic link, FIFO, directory or device at
//! a copy's place, or a link in the way to it, is never followed and is left, reported
//! ([`Left`]). A logical path has no router-private component, so a write or a move in progress
//! is never removed by name.
//!
//! What can still bring a deleted path back, and for how long: docs/routing.md, "Deleting a file".

use crate::cache::revalidate_dir;
use crate::dir::open_beneath;
use crate::names::private_kind;
use crate::router::{Error, Router, PROBE_THREADS};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags, CWD};
use rustix::io::Errno;
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// Rounds of looks a delete makes at most before it gives up on a path that is written again
/// in every one ([`Error::Reappearing`]).
pub const ROUNDS: usize = 8;

/// What [`Router::delete`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Deleted {
    /// The shards (positions in [`Router::shards`]) a copy was removed from, in list order.
    pub removed: Vec<usize>,
    /// Names unlinked: more than `removed` has shards when a copy came back into a shard already
    /// cleared (a move in flight) and was removed again.
    pub unlinked: usize,
    /// Entries at a copy's place that are not regular files, left alone (each shard once).
    pub left: Vec<Left>,
    /// Rounds of looks: 1 when a copy can be nowhere but home (one distinct shard directory, or
    /// nothing open on a version 3 list); otherwise the other places, then home, then all of
    /// them until a round finds nothing: 3 when no copy came back after it was looked for.
    pub rounds: usize,
}

impl Deleted {
    /// Whether a copy was found and removed anywhere.
    pub fn any(&self) -> bool {
        self.unlinked > 0
    }
}

/// A copy's place that holds something other than a regular file: never followed, never removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Left {
    pub index: usize,
    pub real: PathBuf,
    /// `symbolic link`, `directory`, `FIFO`, `character device`, `block device`, `socket`, or
    /// `link or non-directory above it` (a component of the way there).
    pub what: &'static str,
}

/// One look at one copy's place.
enum Look {
    Absent,
    /// Unlinked; or seen and gone before the unlink (taken by a move, which may place it
    /// somewhere already looked at): either way the delete looks again.
    Removed {
        unlinked: bool,
    },
    Left(&'static str),
}

/// One copy's place: its shard, its real path, and how to reach it without following links.
struct Place<'a> {
    index: usize,
    real: PathBuf,
    mount: &'a Path,
    dir: String,
    name: &'a str,
}

impl Router {
    /// Removes `path` from home and every shard a miss of it looks in
    /// ([`Router::miss_shards`]): those at once, then home, then all of them at once until a
    /// round finds nothing (see the module's documentation). A missing path is not an error (`Deleted::any` is false): a
    /// delete retried after a lost answer finds nothing. Errors: the path's own
    /// ([`Error::Route`], [`Error::InsideAnotherShard`]); the file system's, after every shard
    /// of that round was tried; [`Error::Reappearing`].
    pub fn delete(&self, path: &str) -> Result<Deleted, Error> {
        let home = self.resolve(path)?;
        // Like a write: past its lease this client may already count as gone.
        self.lease()?;
        let (dir, name) = match home.logical.as_str().rsplit_once('/') {
            Some((dir, name)) => (dir, name),
            None => ("", home.logical.as_str()),
        };
        debug_assert!(
            private_kind(name.as_bytes()).is_none(),
            "a logical path has no router-private component"
        );
        let place = |index: usize| {
            let (mount, rel) = self.layout().beneath_mount(self.shards(), index);
            Place {
                index,
                real: self.layout().real_path(self.shards(), index, &home.logical),
                mount,
                dir: [rel, dir]
                    .iter()
                    .filter(|p| !p.is_empty())
                    .copied()
                    .collect::<Vec<_>>()
                    .join("/"),
                name,
            }
        };
        // Where a miss looks, and only there: the list names no other place a copy can be.
        let others: Vec<Place> = self.miss_shards(&home).into_iter().map(place).collect();
        let mut done = Deleted::default();
        if others.is_empty() {
            round(&[place(home.index)], &mut done)?;
            return Ok(done);
        }
        round(&others, &mut done)?;
        let home_place = [place(home.index)];
        round(&home_place, &mut done)?;
        let all: Vec<Place> = home_place.into_iter().chain(others).collect();
        while round(&all, &mut done)? {
            if done.rounds >= ROUNDS {
                return Err(Error::Reappearing {
                    path: path.to_owned(),
                    rounds: done.rounds,
                });
            }
        }
        Ok(done)
    }
}

/// Looks at each of `places` at once and removes what is a regular file there; true when
/// something was seen there (removed, or gone under the look).
fn round(places: &[Place], done: &mut Deleted) -> Result<bool, Error> {
    done.rounds += 1;
    let looks = crate::pool::map_all(places, PROBE_THREADS, remove_copy);
    let mut seen = false;
    let mut failed = None;
    for (p, look) in places.iter().zip(looks) {
        match look {
            Ok(Look::Absent) => {}
            Ok(Look::Removed { unlinked }) => {
                seen = true;
                if unlinked {
                    done.unlinked += 1;
                    if !done.removed.contains(&p.index) {
                        done.removed.push(p.index);
                        done.removed.sort_unstable();
                    }
                }
            }
            Ok(Look::Left(what)) => {
                if !done.left.iter().any(|l| l.index == p.index) {
                    done.left.push(Left {
                        index: p.index,
                        real: p.real.clone(),
                        what,
                    });
                }
            }
            Err(e) => failed = failed.or(Some(e)),
        }
    }
    match failed {
        Some(e) => Err(e),
        None => Ok(seen),
    }
}

/// Opens the copy's directory (the server's answer), looks at the name without following it,
/// and unlinks it if it is a regular file.
fn remove_copy(p: &Place) -> Result<Look, Error> {
    let io_err = |op: &'static str| {
        move |source: io::Error| Error::Io {
            op,
            path: p.real.clone(),
            source,
        }
    };
    let dir = match open_dir(p) {
        Ok(Some(dir)) => dir,
        Ok(None) => return Ok(Look::Absent),
        Err(e) if way_not_followed(&e) => return Ok(Look::Left("link or non-directory above it")),
        Err(e) => return Err(io_err("open directory")(e)),
    };
    let st = match rustix::fs::statat(&dir, p.name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => st,
        Err(Errno::NOENT) => return Ok(Look::Absent),
        Err(e) => return Err(io_err("stat")(e.into())),
    };
    if let Some(what) = not_regular(FileType::from_raw_mode(st.st_mode)) {
        return Ok(Look::Left(what));
    }
    // By name: what a writer renamed there since the look is removed too (a write racing the
    // delete), and a link put there since is unlinked, never followed.
    match rustix::fs::unlinkat(&dir, p.name, AtFlags::empty()) {
        Ok(()) => Ok(Look::Removed { unlinked: true }),
        Err(Errno::NOENT) => Ok(Look::Removed { unlinked: false }),
        Err(e) => Err(io_err("unlink")(e.into())),
    }
}

/// The copy's directory, opened beneath the mount; `None` when the server says it is not
/// there (a directory missing only in this client's cache is looked up again).
fn open_dir(p: &Place) -> io::Result<Option<OwnedFd>> {
    // One call, no link anywhere on the way, the mount's own path included: one round trip
    // (the directory's revalidation) when the way is cached. Anything else (a link in the
    // mount's path, a missing directory, no openat2) goes the way that names the cause.
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    let real_dir = p.real.parent().unwrap_or(p.mount);
    if let Ok(fd) = rustix::fs::openat2(CWD, real_dir, flags, Mode::empty(), resolve) {
        return Ok(Some(fd));
    }
    match open_beneath(p.mount, &p.dir, false) {
        Ok(fd) => Ok(Some(fd)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            if !revalidate_dir(real_dir)? {
                return Ok(None);
            }
            match open_beneath(p.mount, &p.dir, false) {
                Ok(fd) => Ok(Some(fd)),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// A symbolic link or a non-directory on the way to the copy (`open_beneath` refuses both).
fn way_not_followed(e: &io::Error) -> bool {
    // ELOOP's kind is not nameable on stable Rust; the error keeps it.
    [Errno::LOOP, Errno::NOTDIR]
        .iter()
        .any(|&n| io::Error::from(n).kind() == e.kind())
}

fn not_regular(t: FileType) -> Option<&'static str> {
    match t {
        FileType::RegularFile => None,
        FileType::Symlink => Some("symbolic link"),
        FileType::Directory => Some("directory"),
        FileType::Fifo => Some("FIFO"),
        FileType::CharacterDevice => Some("character device"),
        FileType::BlockDevice => Some("block device"),
        FileType::Socket => Some("socket"),
        FileType::Unknown => Some("special file"),
    }
}
