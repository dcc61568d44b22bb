//! File operations through the shards: [`Router`] answers where a logical path lives and
//! checks, writes and reads it there.
//!
//! - `write` lands atomically: the bytes go to a temporary name in the home directory, are
//!   synced, then renamed over the final name, so a reader sees the old file, the new one, or
//!   none, never half of one.
//! - `read_with_fallback` reads the home; on a miss it looks where the file can be at once
//!   ([`Router::miss_shards`]: every other shard, or on a version 3 list only where an open
//!   placement homes it), reads
//!   the newest copy (by modification time; a tie goes to the shard earlier in the list) and
//!   moves it home within the file system by [`crate::relocate`] (never a copy, never onto itself; a
//!   newer file already at home wins). Another client moving the same file first is not an
//!   error.
//! - Copies are opened with `O_NOFOLLOW | O_NONBLOCK` and checked with `fstat` to be regular
//!   files: a symbolic link, FIFO, device or directory is not data. At home it is an error
//!   ([`Error::NotRegular`]); elsewhere it is skipped as if absent.
//! - `exists` looks at home, then elsewhere; it moves nothing.
//! - `delete` removes every copy it finds, home and elsewhere ([`crate::delete`]).
//!
//! Shards that share a root (the original list, where every entry is rooted at `/`) are the
//! same directory of the same file system (docs/design.md fact 1), so they are searched once and
//! never moved between.

use crate::cache::{revalidate_dir, revalidate_parent};
use crate::layout::{relative_to, Layout, LayoutError};
use crate::list::{ListError, MountTargetList, Shard};
use crate::names::{new_private_name, Private};
use crate::path::LogicalPath;
use crate::placement::Open;
use crate::relocation::{relocate_known, Relocation, Stamp};
use crate::shard::{index_of, RouteError};
use rustix::fs::{Mode, OFlags};
use rustix::io::Errno;
use std::fs;
use std::io::{self, Read as _, Write};
use std::path::{Path, PathBuf};

/// What went wrong with a file operation.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Route(#[from] RouteError),
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// A list built in code that breaks a rule (a parsed one has been checked already).
    #[error(transparent)]
    List(#[from] ListError),
    /// This router's report ([`crate::reporter`]): none can be written, or it has lapsed.
    #[error(transparent)]
    Report(#[from] crate::reporter::ReportFault),
    /// Joined to the root `/`, the path would land in the directory of the shard rooted at
    /// `root` and alias its files (`shards/use1-az4/x` under `/` is `x` of `/shards/use1-az4`).
    #[error("path {path:?} lies inside the directory of shard root {root}; it would alias that shard's files")]
    InsideAnotherShard { path: String, root: String },
    #[error("{path:?}: no such file in any shard")]
    NotFound { path: String },
    /// A delete removed a copy in each of `rounds` rounds and it still came back: written
    /// again all along ([`Router::delete`]).
    #[error("{path:?}: removed {rounds} times and written again each time; not known deleted")]
    Reappearing { path: String, rounds: usize },
    /// The home copy is a symbolic link, FIFO, device, socket or directory: not data.
    #[error("{}: a {what}, not a regular file: not data, not read", path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    #[error("{op} {}: {source}", path.display())]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

pub(crate) fn io_err<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> Error + 'a {
    move |source| Error::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// A logical path routed: its home shard and the real path there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Position of the home shard among the list's shards ([`Router::shards`]).
    pub index: usize,
    /// The normalised logical path.
    pub logical: LogicalPath,
    /// Where the file is, or will be, on this host.
    pub real: PathBuf,
    /// The application's spelling, which a `modulo-sha256` placement hashes.
    pub raw: String,
}

/// Where a file was found, without moving it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    Home,
    /// In shard `index`, not its home, at `real`.
    Elsewhere {
        index: usize,
        real: PathBuf,
    },
    Missing,
}

/// The answer of [`Router::locate`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub home: Resolved,
    pub found: Found,
}

/// Where a read found its bytes, and what it did about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// Read at home.
    Home,
    /// Found in shard `from` and moved home by this read.
    MovedHome { from: usize },
    /// Found in shard `from`, but another client moved (or removed) it before this read could.
    MovedByAnother { from: usize },
    /// Found in shard `index` and left there, for `reason` (no mount sees both shards, or the
    /// move failed); the read still succeeds.
    LeftElsewhere { index: usize, reason: String },
    /// Found in shard `index`, where an open placement of a version 3 list homes it, and left
    /// there: a client still on that placement's list looks for it there and nowhere the
    /// newer list homes it. The function moves it home once every client runs one list.
    AtPlacement { index: usize },
}

impl Place {
    /// `home`, `moved-home`, `moved-by-another`, `left-elsewhere` or `at-placement`, as the
    /// Python client names them.
    pub fn as_str(&self) -> &'static str {
        match self {
            Place::Home => "home",
            Place::MovedHome { .. } => "moved-home",
            Place::MovedByAnother { .. } => "moved-by-another",
            Place::LeftElsewhere { .. } => "left-elsewhere",
            Place::AtPlacement { .. } => "at-placement",
        }
    }
}

/// The answer of [`Router::read_with_fallback`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub data: Vec<u8>,
    pub place: Place,
}

/// A published list and how this host mounts it.
#[derive(Debug, Clone)]
pub struct Router {
    list: MountTargetList,
    /// The list's shards ([`MountTargetList::shards`]): what paths route to, by position.
    shards: Vec<Shard>,
    layout: Layout,
    /// Paths, relative to some shard's root, that are another shard's directory.
    reserved: Vec<(String, String)>,
    /// Its report, when it reports ([`Router::reporting`]).
    pub(crate) reporter: Option<crate::reporter::Reporter>,
}

impl Router {
    pub fn new(list: MountTargetList, layout: Layout) -> Result<Router, Error> {
        list.validate()?;
        let shards = list.shards();
        layout.check(&shards)?;
        let mut reserved: Vec<(String, String)> = Vec::new();
        for outer in &shards {
            for inner in &shards {
                if let Some(rel) = relative_to(&inner.root, &outer.root) {
                    if !rel.is_empty() && !reserved.iter().any(|(r, _)| r == rel) {
                        reserved.push((rel.to_owned(), inner.root.clone()));
                    }
                }
            }
        }
        Ok(Router {
            list,
            shards,
            layout,
            reserved,
            reporter: None,
        })
    }

    pub fn list(&self) -> &MountTargetList {
        &self.list
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// The shards, by position: an index of [`Resolved`] or [`Found`] is one of these.
    pub fn shards(&self) -> &[Shard] {
        &self.shards
    }

    /// The home shard of `path` and the real path there.
    pub fn resolve(&self, path: &str) -> Result<Resolved, Error> {
        let logical = LogicalPath::parse(path).map_err(RouteError::from)?;
        if let Some((_, root)) = self
            .reserved
            .iter()
            .find(|(r, _)| logical.is_at_or_under(r))
        {
            return Err(Error::InsideAnotherShard {
                path: path.to_owned(),
                root: root.clone(),
            });
        }
        let index = index_of(path, &logical, self.shards(), self.list.strategy)?;
        let real = self.layout.real_path(self.shards(), index, &logical);
        Ok(Resolved {
            index,
            logical,
            real,
            raw: path.to_owned(),
        })
    }

    /// The shards other than `home` that hold distinct directories, in list order: one per
    /// root, none with home's root.
    pub(crate) fn others(&self, home: usize) -> impl Iterator<Item = usize> + '_ {
        let t = self.shards();
        (0..t.len()).filter(move |&j| {
            t[j].root != t[home].root && !t[..j].iter().any(|k| k.root == t[j].root)
        })
    }

    /// The shards a miss of `home`'s path looks in besides home: where an open placement homes
    /// it ([`crate::placement`]), in a version 3 list; every other shard ([`Router::others`])
    /// in the earlier forms, and when the list says `everywhere`.
    pub fn miss_shards(&self, home: &Resolved) -> Vec<usize> {
        let t = self.shards();
        let home_root = &t[home.index].root;
        let roots = self
            .list
            .open_for(&home.logical)
            .and_then(|o| o.miss_roots(&home.raw, &home.logical, home_root));
        match roots {
            None => self.others(home.index).collect(),
            // A list checks that each root is one of its shards.
            Some(roots) => roots
                .iter()
                .filter_map(|r| t.iter().position(|s| &s.root == r))
                .collect(),
        }
    }

    fn real_in(&self, index: usize, logical: &LogicalPath) -> PathBuf {
        self.layout.real_path(self.shards(), index, logical)
    }

    /// The shards of [`Router::miss_shards`], with the real path there; and whether home need
    /// not be asked before them. Under open placements a file moves only from a placement's
    /// home to its home under this list (the function's moves, made while every client runs
    /// it; a read leaves it, [`Place::AtPlacement`]), linked home before it leaves: a look
    /// there, then at home, cannot miss it, so home is asked once, last. Elsewhere readers on
    /// other lists move files either way, and home is asked before and after.
    fn miss_places(&self, home: &Resolved) -> (Vec<(usize, PathBuf)>, bool) {
        let places: Vec<(usize, PathBuf)> = self
            .miss_shards(home)
            .into_iter()
            .map(|j| (j, self.real_in(j, &home.logical)))
            .collect();
        let open = self.list.open_for(&home.logical);
        let home_last = matches!(open, Some(Open::Placements(_))) && !places.is_empty();
        (places, home_last)
    }

    /// Where `path` is now: home, elsewhere, or nowhere. Moves nothing. Every answer is the
    /// server's, never this client's name cache ([`crate::cache`]): each directory it answers
    /// from is revalidated first (one round trip each, the other shards' at once).
    pub fn locate(&self, path: &str) -> Result<Location, Error> {
        let home = self.resolve(path)?;
        let found = self.find(&home, true)?;
        Ok(Location { home, found })
    }

    /// `fresh_hit`: whether a file found at home is confirmed too (a miss always is, and so is
    /// a copy found in another shard).
    pub(crate) fn find(&self, home: &Resolved, fresh_hit: bool) -> Result<Found, Error> {
        if !fresh_hit && present(&home.real)? {
            return Ok(Found::Home);
        }
        let (others, home_last) = self.miss_places(home);
        // A miss may be this client's cache remembering a name missing that another client
        // has written since: ask the server.
        if !home_last && fresh_present(&home.real)? {
            return Ok(Found::Home);
        }
        if others.is_empty() {
            return Ok(Found::Missing);
        }
        for ((j, real), there) in others.iter().zip(probe(&others, fresh_present)) {
            if there? {
                // Home was not asked yet (home last): another client may have written it there
                // since this client cached it missing. Home answers when it has the file.
                if home_last && fresh_present(&home.real)? {
                    return Ok(Found::Home);
                }
                return Ok(Found::Elsewhere {
                    index: *j,
                    real: real.clone(),
                });
            }
        }
        // A concurrent read may have moved it home while we looked elsewhere: it was linked
        // home before it left the shard where we missed it, so home shows it now.
        if fresh_present(&home.real)? {
            return Ok(Found::Home);
        }
        Ok(Found::Missing)
    }

    /// Whether `path` exists where the router would find it. One `stat` when it is at home; on
    /// a miss, home's directory revalidated and home looked at again, then the directory of each
    /// shard of [`Router::miss_shards`] the same way (at once), then home once more. Under open
    /// placements home is looked at again only after them: a move there goes home, never away.
    pub fn exists(&self, path: &str) -> Result<bool, Error> {
        let home = self.resolve(path)?;
        Ok(self.find(&home, false)? != Found::Missing)
    }

    /// Writes `data` as `path` in its home shard, atomically: a temporary file in the same
    /// directory, synced, then renamed over the name. Creates missing directories. Returns
    /// the real path. A stale copy in another shard is left alone; reads prefer home.
    pub fn write(&self, path: &str, data: &[u8]) -> Result<PathBuf, Error> {
        let home = self.resolve(path)?;
        self.lease()?;
        let dir = home
            .real
            .parent()
            .expect("a real path has a shard directory above it");
        let (tmp, mut file) = temporary_in(dir)?;
        let result = (|| {
            file.write_all(data).map_err(io_err("write", &tmp))?;
            file.sync_all().map_err(io_err("sync", &tmp))?;
            drop(file);
            fs::rename(&tmp, &home.real).map_err(io_err("rename", &tmp))
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp);
        }
        result.map(|()| home.real)
    }

    /// Reads `path` from its home (one open: no look before it). On a miss, opens it in every
    /// shard of [`Router::miss_shards`] at once, reads the newest copy (modification time; a
    /// tie goes to the shard earlier in the list) and moves it home by [`crate::relocate`];
    /// on a version 3 list it leaves it there ([`Place::AtPlacement`]). Fails with
    /// [`Error::NotFound`] when no shard has it, and [`Error::NotRegular`] when the home copy
    /// is not a regular file (elsewhere such a thing is skipped).
    pub fn read_with_fallback(&self, path: &str) -> Result<Read, Error> {
        let home = self.resolve(path)?;
        if let Some(copy) = open_copy(&home.real)? {
            return Ok(Read {
                data: copy.read(&home.real)?,
                place: Place::Home,
            });
        }
        let (others, home_last) = self.miss_places(&home);
        // A miss is confirmed against the server before any other shard is searched (or, under
        // open placements, after them: see `miss_places`).
        if !home_last {
            if let Some(copy) = fresh_open(&home.real)? {
                return Ok(Read {
                    data: copy.read(&home.real)?,
                    place: Place::Home,
                });
            }
        }
        if others.is_empty() {
            return Err(Error::NotFound {
                path: path.to_owned(),
            });
        }
        let mut newest: Option<(usize, &Path, Opened)> = None;
        for ((j, real), found) in others.iter().zip(probe(&others, fresh_candidate)) {
            let Some(copy) = found? else {
                continue;
            };
            if newest
                .as_ref()
                .is_none_or(|(_, _, best)| copy.stamp.mtime() > best.stamp.mtime())
            {
                newest = Some((*j, real, copy));
            }
        }
        let Some((j, real, copy)) = newest else {
            // A concurrent read may have moved it home while we looked elsewhere.
            if let Some(copy) = fresh_open(&home.real)? {
                return Ok(Read {
                    data: copy.read(&home.real)?,
                    place: Place::Home,
                });
            }
            return Err(Error::NotFound {
                path: path.to_owned(),
            });
        };
        let stamp = copy.stamp;
        let data = copy.read(real)?;
        if home_last {
            // A placement hit, home not asked since this client's first look, which its cache
            // may have answered: a version written at home since then is the newer one unless
            // the placement's copy is newer still (a writer on the earlier list). One round
            // trip, on a placement hit only.
            if let Some(at_home) = fresh_open(&home.real)? {
                if at_home.stamp.mtime() >= stamp.mtime() {
                    return Ok(Read {
                        data: at_home.read(&home.real)?,
                        place: Place::Home,
                    });
                }
            }
        }
        if self.list.open.is_some() {
            // A version 3 list: a miss found it only where an open placement homes it. Moving it
            // home would hide it from the clients still on that placement's list, whose misses
            // look nowhere this list homes it; the function's rebalance moves it once every
            // client runs one list.
            return Ok(Read {
                data,
                place: Place::AtPlacement { index: j },
            });
        }
        match self.move_home(j, &home, stamp)? {
            Move::Done(place) => Ok(Read { data, place }),
            Move::HomeNewer => {
                // Home gained a file as new or newer (a write) since our miss: home is the truth.
                if let Some(copy) = fresh_open(&home.real)? {
                    return Ok(Read {
                        data: copy.read(&home.real)?,
                        place: Place::Home,
                    });
                }
                Ok(Read {
                    data,
                    place: Place::MovedByAnother { from: j },
                })
            }
        }
    }

    /// Moves `home.logical` from shard `from` to its home; `stamp` is the copy that was read.
    fn move_home(&self, from: usize, home: &Resolved, stamp: Stamp) -> Result<Move, Error> {
        if let Err(lapsed) = self.lease() {
            return Ok(Move::Done(Place::LeftElsewhere {
                index: from,
                reason: lapsed.to_string(),
            }));
        }
        let Some((src, dst)) =
            self.layout
                .move_paths(self.shards(), from, home.index, &home.logical)
        else {
            return Ok(Move::Done(Place::LeftElsewhere {
                index: from,
                reason: "no mount on this host sees both shards".to_owned(),
            }));
        };
        if src == dst {
            // Unreachable for distinct roots; never move a file onto itself.
            return Ok(Move::Done(Place::LeftElsewhere {
                index: from,
                reason: "source and home are the same path".to_owned(),
            }));
        }
        // The newer of the copy and whatever is at home now ends at home. The home directory
        // is made only if the link finds it missing (a round trip saved per move).
        let mut moved = relocate_known(&src, &dst, Some(stamp));
        if matches!(&moved, Err(e) if e.kind() == io::ErrorKind::NotFound) {
            if let Some(dir) = dst.parent() {
                if let Err(e) = make_dir(dir) {
                    return Ok(Move::Done(Place::LeftElsewhere {
                        index: from,
                        reason: format!("create directory {}: {e}", dir.display()),
                    }));
                }
            }
            moved = relocate_known(&src, &dst, Some(stamp));
        }
        match moved {
            Ok(Relocation::Moved | Relocation::ReplacedOlder) => {
                Ok(Move::Done(Place::MovedHome { from }))
            }
            Ok(Relocation::SourceGone) => Ok(Move::Done(Place::MovedByAnother { from })),
            Ok(Relocation::DroppedOlder) => Ok(Move::HomeNewer),
            Err(e) => Ok(Move::Done(Place::LeftElsewhere {
                index: from,
                reason: format!("move {} to {}: {e}", src.display(), dst.display()),
            })),
        }
    }
}

/// The outcome of [`Router::move_home`].
enum Move {
    Done(Place),
    /// Home has a file as new or newer; the copy read was older and is gone.
    HomeNewer,
}

/// Whether something is at `path` (following symlinks, like `os.path.exists`); errors other
/// than "not found" are errors.
fn present(path: &Path) -> Result<bool, Error> {
    match fs::metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(io_err("stat", path)(e)),
    }
}

/// Makes `dir` and its parents when the server says it is missing. A directory another client
/// made may be missing only in this client's cache, where `mkdir` would answer "exists" while
/// the cache still says "missing": revalidated first, it is found.
pub(crate) fn make_dir(dir: &Path) -> io::Result<()> {
    if revalidate_dir(dir)? {
        return Ok(());
    }
    fs::create_dir_all(dir)
}

/// [`present`], as the server answers now: `path`'s directory revalidated first
/// ([`crate::cache`]). A missing directory is a missing file.
fn fresh_present(path: &Path) -> Result<bool, Error> {
    if !revalidate_parent(path).map_err(io_err("open directory", path))? {
        return Ok(false);
    }
    present(path)
}

/// [`open_copy`], as the server answers now: `path`'s directory revalidated first.
fn fresh_open(path: &Path) -> Result<Option<Opened>, Error> {
    if !revalidate_parent(path).map_err(io_err("open directory", path))? {
        return Ok(None);
    }
    open_copy(path)
}

/// [`fresh_open`] of a copy in another shard: anything but a regular file counts as absent.
fn fresh_candidate(path: &Path) -> Result<Option<Opened>, Error> {
    match fresh_open(path) {
        Err(Error::NotRegular { .. }) => Ok(None),
        other => other,
    }
}

/// A fresh temporary file in `dir`, the directory made when the create finds it missing:
/// over NFS making it first would cost round trips on every write.
pub(crate) fn temporary_in(dir: &Path) -> Result<(PathBuf, fs::File), Error> {
    match create_temporary(dir) {
        Err((_, e)) if e.kind() == io::ErrorKind::NotFound => {
            make_dir(dir).map_err(io_err("create directory", dir))?;
            create_temporary(dir)
        }
        created => created,
    }
    .map_err(|(tmp, e)| io_err("create", &tmp)(e))
}

/// A new, empty file with a [`temporary_name`] in `dir`; on failure, the name tried.
pub(crate) fn create_temporary(dir: &Path) -> Result<(PathBuf, fs::File), (PathBuf, io::Error)> {
    let mut attempt = 0;
    loop {
        let tmp = dir.join(new_private_name(Private::Temporary));
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&tmp)
        {
            Ok(file) => return Ok((tmp, file)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists && attempt < 8 => attempt += 1,
            Err(e) => return Err((tmp, e)),
        }
    }
}

/// `check` of each path, in their order: at once (up to [`PROBE_THREADS`] at a time) when there are several,
/// since over NFS each is a round trip and they do not wait on one another.
fn probe<T: Send>(
    paths: &[(usize, PathBuf)],
    check: impl Fn(&Path) -> Result<T, Error> + Sync,
) -> Vec<Result<T, Error>> {
    // Up to PROBE_THREADS at once (one on the caller's thread): with hundreds of shards a
    // thread each would cost more than the round trips it saves.
    crate::pool::map_all(paths, PROBE_THREADS, |(_, p)| check(p))
}

/// Paths a miss probes at once.
pub(crate) const PROBE_THREADS: usize = 32;

/// A copy opened for reading: a regular file, and what `fstat` said of it.
struct Opened {
    file: fs::File,
    stamp: Stamp,
    len: u64,
}

impl Opened {
    fn read(mut self, path: &Path) -> Result<Vec<u8>, Error> {
        let mut data = Vec::with_capacity(usize::try_from(self.len).unwrap_or(0));
        self.file
            .read_to_end(&mut data)
            .map_err(io_err("read", path))?;
        Ok(data)
    }
}

/// Opens `path` as data: `O_NOFOLLOW` (a symbolic link is not followed), `O_NONBLOCK` (a FIFO
/// does not wait for a writer), `O_NOCTTY`, then `fstat`: a regular file, or
/// [`Error::NotRegular`]. `None` when nothing is there. One open: no look before it, unless
/// the server calls the file this client's cache names stale (another client renamed a new
/// version over it): then the directory is revalidated and the name opened again.
fn open_copy(path: &Path) -> Result<Option<Opened>, Error> {
    for _ in 0..STALE_TRIES {
        match open_once(path) {
            Err(Errno::STALE) => {
                revalidate_parent(path).map_err(io_err("open", path))?;
            }
            Err(e) => return Err(io_err("open", path)(e.into())),
            Ok(opened) => return opened,
        }
    }
    Err(io_err("open", path)(Errno::STALE.into()))
}

/// Looks again after a stale file handle at most this many times: each is another client's
/// rename over the name meanwhile.
const STALE_TRIES: usize = 4;

/// [`open_copy`]'s one try; `Err` only for a stale file handle (from the open or the `fstat`)
/// or another error of the open.
fn open_once(path: &Path) -> Result<Result<Option<Opened>, Error>, Errno> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::NOCTTY | OFlags::CLOEXEC;
    let fd = match rustix::fs::open(path, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(Ok(None)),
        Err(Errno::LOOP) => return Ok(Err(not_regular(path, "symbolic link"))),
        // A socket, or a device without a driver.
        Err(Errno::NXIO) => return Ok(Err(not_regular(path, "special file"))),
        Err(e) => return Err(e),
    };
    let file = fs::File::from(fd);
    let meta = match file.metadata() {
        Ok(m) => m,
        Err(e) if e.raw_os_error() == Some(Errno::STALE.raw_os_error()) => {
            return Err(Errno::STALE)
        }
        Err(e) => return Ok(Err(io_err("stat", path)(e))),
    };
    let stamp = Stamp::of(&meta);
    if let Some(what) = stamp.what() {
        return Ok(Err(not_regular(path, what)));
    }
    Ok(Ok(Some(Opened {
        file,
        stamp,
        len: meta.len(),
    })))
}

fn not_regular(path: &Path, what: &'static str) -> Error {
    Error::NotRegular {
        path: path.to_path_buf(),
        what,
    }
}
