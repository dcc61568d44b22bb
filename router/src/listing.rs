//! Listing the logical tree: [`Router::list_dir`] and [`Router::walk`].
//!
//! A logical directory is the union of that directory in every distinct shard directory, read
//! at once (one READDIR stream per shard that holds it, [`crate::pool`]). Each name appears once:
//!
//! - a name that is a directory in any shard is a directory (the union again, below it); a file
//!   of the same name in another shard is not listed (a read of it still finds it, unless its
//!   home holds the directory);
//! - otherwise it is a file, and the copy that wins is the one [`Router::read_with_fallback`]
//!   reads (on a version 3 list, a copy in a shard no miss of its path looks in is not listed,
//!   as no read finds it): home's when home has it; else the newest of the other shards' copies (modification
//!   time, to the nanosecond; a tie goes to the shard earlier in the list). Only regular files
//!   are data: a symbolic link, FIFO, socket or device is never listed and never followed, and a
//!   name whose home copy is one is not listed at all, since the read refuses it
//!   ([`crate::Error::NotRegular`]).
//!
//! The router's own names ([`crate::names`]) are never shown, nor another shard's directory
//! (`shards/use1-az4` under `/`), nor a directory that holds nothing but those (`shards`).
//! Every directory is opened without following a link on the way (`openat2`, else
//! [`crate::dir::open_beneath`]); opening it revalidates this client's cache of it, so the
//! names are the server's ([`crate::cache`]). Names come from `d_type`: no `stat` per entry,
//! except where the file system does not say, and for a name with copies in two or more shards
//! other than its home (their modification times decide).
//!
//! Shards that share a root are one directory: the first of them in list order stands for it
//! (an [`Entry`]'s `index` and `shards`).

use crate::cache::revalidate_dir;
use crate::dir::{open_beneath, WALK_BUFFER_BYTES};
use crate::layout::relative_to;
use crate::names::private_kind;
use crate::path::{LogicalPath, PathError};
use crate::router::{Error, Router, PROBE_THREADS};
use crate::shard::RouteError;
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, ResolveFlags, CWD};
use rustix::io::Errno;
use std::collections::BTreeMap;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};

/// What a listed name is in the logical tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryKind {
    File,
    Directory,
}

impl EntryKind {
    /// `file` or `dir`, as the Python client and `tests/vectors/listing.json` spell them.
    pub fn as_str(self) -> &'static str {
        match self {
            EntryKind::File => "file",
            EntryKind::Directory => "dir",
        }
    }
}

/// One name of a logical directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub kind: EntryKind,
    /// The shard whose copy this entry is: for a file, the one `read_with_fallback` reads now;
    /// for a directory, the first shard in list order that holds it.
    pub index: usize,
    /// That copy's path on this host.
    pub real: PathBuf,
    /// Every shard that holds the name as this kind, in list order: a file in more than one
    /// has stale copies, which a read or the function's moves drop.
    pub shards: Vec<usize>,
}

impl Entry {
    pub fn is_dir(&self) -> bool {
        self.kind == EntryKind::Directory
    }
}

/// One directory of a [`Walk`]: its logical path (`""` for the root) and its entries, by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub dir: String,
    pub entries: Vec<Entry>,
}

/// What one shard's directory has under a name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Held {
    File,
    Directory,
    /// A symbolic link, FIFO, socket or device: not data.
    Other,
}

impl Held {
    pub(crate) fn of(t: FileType) -> Held {
        match t {
            FileType::RegularFile => Held::File,
            FileType::Directory => Held::Directory,
            _ => Held::Other,
        }
    }
}

/// How a file name's winner is decided.
enum Pick {
    /// Not listed: no regular file a read would take.
    Nothing,
    /// This shard's copy.
    One(usize),
    /// The newest of `candidates` (list order), unless home (`home`) has one by now.
    Newest { home: usize, candidates: Vec<usize> },
}

impl Router {
    /// The logical directory `dir` (`""`, `/` or `.` for the shards' roots): every name in it,
    /// sorted, one [`Entry`] each (see the module's documentation for which copy wins). Reads
    /// each distinct shard directory at once; a shard without the directory is not an error.
    /// [`Error::NotFound`] when no shard has it as a directory; the path's own errors
    /// ([`Error::Route`], [`Error::InsideAnotherShard`]).
    pub fn list_dir(&self, dir: &str) -> Result<Vec<Entry>, Error> {
        let logical = self.logical_dir(dir)?;
        self.entries_of(&logical, &self.distinct())?
            .ok_or_else(|| Error::NotFound {
                path: dir.to_owned(),
            })
    }

    /// The tree under the logical directory `dir`, one [`Listing`] per directory, depth first,
    /// each directory before what it holds, subdirectories by name. Each directory is listed
    /// as [`Router::list_dir`] lists it, in the shards its parent's listing found it in; memory
    /// is one directory's entries and the names of the directories still to list. A missing
    /// `dir` is an [`Error::NotFound`] item; a subdirectory gone since its parent was listed is
    /// skipped; any other error is an item, and the walk goes on.
    pub fn walk(&self, dir: &str) -> Walk<'_> {
        match self.logical_dir(dir) {
            Ok(top) => Walk {
                router: self,
                pending: vec![(top, None)],
                failed: None,
            },
            Err(e) => Walk {
                router: self,
                pending: Vec::new(),
                failed: Some(e),
            },
        }
    }

    /// `dir` checked and normalised; `""` for the roots.
    pub fn logical_dir(&self, dir: &str) -> Result<String, Error> {
        let logical = match LogicalPath::parse(dir) {
            Ok(p) => p.as_str().to_owned(),
            Err(PathError::Empty { .. }) => return Ok(String::new()),
            Err(e) => return Err(RouteError::from(e).into()),
        };
        if let Some((_, root)) = self
            .reserved_dirs()
            .into_iter()
            .find(|(rel, _)| at_or_under(&logical, rel))
        {
            return Err(Error::InsideAnotherShard {
                path: dir.to_owned(),
                root,
            });
        }
        Ok(logical)
    }

    /// Directories, relative to a shard's root, that are another shard's, with that shard's
    /// root: what `Router::new` refuses paths under.
    fn reserved_dirs(&self) -> Vec<(String, String)> {
        let shards = self.shards();
        let mut out: Vec<(String, String)> = Vec::new();
        for outer in shards {
            for inner in shards {
                match relative_to(&inner.root, &outer.root) {
                    Some(rel) if !rel.is_empty() && !out.iter().any(|(r, _)| r == rel) => {
                        out.push((rel.to_owned(), inner.root.clone()));
                    }
                    _ => {}
                }
            }
        }
        out
    }

    /// One shard per distinct root, the first in list order.
    pub(crate) fn distinct(&self) -> Vec<usize> {
        let t = self.shards();
        (0..t.len())
            .filter(|&j| !t[..j].iter().any(|k| k.root == t[j].root))
            .collect()
    }

    /// The shard that stands for shard `i`'s root in [`Router::distinct`].
    fn standing_for(&self, i: usize) -> usize {
        let t = self.shards();
        (0..=i).find(|&j| t[j].root == t[i].root).unwrap_or(i)
    }

    /// `dir` (logical, `""` for the root) in shard `j` on this host.
    pub(crate) fn real_dir(&self, j: usize, dir: &str) -> PathBuf {
        let base = self.layout().shard_dir(self.shards(), j);
        if dir.is_empty() {
            base
        } else {
            base.join(dir)
        }
    }

    /// [`Router::union`], except that a directory above another shard's (`shards` under `/`)
    /// holding nothing else is not there: the parent's listing does not show it either.
    pub(crate) fn entries_of(
        &self,
        dir: &str,
        shards: &[usize],
    ) -> Result<Option<Vec<Entry>>, Error> {
        let got = self.union(dir, shards)?;
        let above = !dir.is_empty()
            && self
                .reserved_dirs()
                .iter()
                .any(|(r, _)| strictly_under(r, dir));
        Ok(got.filter(|entries| !(above && entries.is_empty())))
    }

    /// The union of `dir` in `shards` (each standing for its root), sorted by name; `None`
    /// when none of them has it.
    fn union(&self, dir: &str, shards: &[usize]) -> Result<Option<Vec<Entry>>, Error> {
        let read = crate::pool::map_all(shards, PROBE_THREADS, |&j| self.read_shard(j, dir));
        let mut names: BTreeMap<String, Vec<(usize, Held)>> = BTreeMap::new();
        let mut found = false;
        for (&j, got) in shards.iter().zip(read) {
            let Some(held) = got? else { continue };
            found = true;
            for (name, h) in held {
                names.entry(name).or_default().push((j, h));
            }
        }
        if !found {
            return Ok(None);
        }
        self.settle(dir, names).map(Some)
    }

    /// One entry per name of `names` (each with what every shard holding it has there).
    pub(crate) fn settle(
        &self,
        dir: &str,
        names: BTreeMap<String, Vec<(usize, Held)>>,
    ) -> Result<Vec<Entry>, Error> {
        let reserved = self.reserved_dirs();
        let mut out = Vec::with_capacity(names.len());
        let mut contested = Vec::new();
        for (name, held) in names {
            let logical = join(dir, &name);
            if reserved.iter().any(|(r, _)| at_or_under(&logical, r)) {
                continue;
            }
            let dirs = holding(&held, Held::Directory);
            if let Some(&first) = dirs.first() {
                // `shards` under `/`: shown only when it holds more than other shards' roots.
                let above = reserved.iter().any(|(r, _)| strictly_under(r, &logical));
                if above && self.entries_of(&logical, &dirs)?.is_none() {
                    continue;
                }
                out.push(Entry {
                    real: self.real_dir(first, &logical),
                    name,
                    kind: EntryKind::Directory,
                    index: first,
                    shards: dirs,
                });
                continue;
            }
            match self.pick(&logical, &held)? {
                Pick::Nothing => {}
                Pick::One(j) => out.push(self.file(name, &logical, j, &held)),
                Pick::Newest { home, candidates } => contested.push(Contested {
                    name,
                    home,
                    candidates,
                    held,
                }),
            }
        }
        if !contested.is_empty() {
            out.extend(self.newest(dir, contested)?);
            out.sort_by(|a, b| a.name.cmp(&b.name));
        }
        Ok(out)
    }

    fn file(&self, name: String, logical: &str, j: usize, held: &[(usize, Held)]) -> Entry {
        Entry {
            real: self.real_dir(j, logical),
            name,
            kind: EntryKind::File,
            index: j,
            shards: holding(held, Held::File),
        }
    }

    /// Which copy of the file `logical` a read takes, as far as the names tell.
    fn pick(&self, logical: &str, held: &[(usize, Held)]) -> Result<Pick, Error> {
        // On a version 3 list a read looks only at home and where an open placement homes the
        // path: a copy anywhere else is none a read finds, so it is not listed either.
        let looked: Vec<(usize, Held)>;
        let held = match self.list().open {
            Some(crate::placement::Open::Placements(_)) => {
                let resolved = self.resolve(logical)?;
                // Outside the list's scope a miss looks everywhere, and so does the listing.
                let within = matches!(
                    self.list().open_for(&resolved.logical),
                    Some(crate::placement::Open::Placements(_))
                );
                let shards: Vec<usize> = (self.miss_shards(&resolved).into_iter())
                    .chain([resolved.index])
                    .map(|j| self.standing_for(j))
                    .collect();
                looked = held
                    .iter()
                    .filter(|(j, _)| !within || shards.contains(j))
                    .cloned()
                    .collect();
                &looked[..]
            }
            _ => held,
        };
        if let [(j, h)] = held {
            return Ok(if *h == Held::File {
                Pick::One(*j)
            } else {
                Pick::Nothing
            });
        }
        let home = self.standing_for(self.resolve(logical)?.index);
        if let Some((_, h)) = held.iter().find(|(j, _)| *j == home) {
            // The read takes home's copy, or refuses what is there (`NotRegular`).
            return Ok(if *h == Held::File {
                Pick::One(home)
            } else {
                Pick::Nothing
            });
        }
        let candidates = holding(held, Held::File);
        Ok(match candidates.as_slice() {
            [] => Pick::Nothing,
            [j] => Pick::One(*j),
            _ => Pick::Newest { home, candidates },
        })
    }

    /// The entries of the names in several shards but not at home: the newest copy of each
    /// wins, unless home has a regular file by now (a read that found the name missing at
    /// home looks there again, and a move may have put it there meanwhile). One `lstat` per
    /// copy, the shards at once.
    fn newest(&self, dir: &str, contested: Vec<Contested>) -> Result<Vec<Entry>, Error> {
        let mut asks: BTreeMap<usize, Vec<&str>> = BTreeMap::new();
        for c in &contested {
            for &j in c.candidates.iter().chain([&c.home]) {
                asks.entry(j).or_default().push(&c.name);
            }
        }
        let asks: Vec<(usize, Vec<&str>)> = asks.into_iter().collect();
        let times = crate::pool::map_all(&asks, PROBE_THREADS, |(j, names)| {
            self.mtimes(*j, dir, names)
        });
        let mut seen: BTreeMap<(usize, &str), Mtime> = BTreeMap::new();
        for ((j, names), got) in asks.iter().zip(times) {
            for (name, t) in names.iter().zip(got?) {
                if let Some(t) = t {
                    seen.insert((*j, *name), t);
                }
            }
        }
        let mut out = Vec::new();
        for c in &contested {
            let name = c.name.as_str();
            let winner = if seen.contains_key(&(c.home, name)) {
                Some(c.home)
            } else {
                newest_of(&c.candidates, |j| seen.get(&(j, name)).copied())
            };
            if let Some(j) = winner {
                out.push(self.file(c.name.clone(), &join(dir, name), j, &c.held));
            }
        }
        Ok(out)
    }

    /// The modification time of each of `names` in `dir` of shard `j` that is a regular file
    /// there now (`lstat`, relative to the directory, never following a link).
    fn mtimes(&self, j: usize, dir: &str, names: &[&str]) -> Result<Vec<Option<Mtime>>, Error> {
        let real = self.real_dir(j, dir);
        let Some(fd) = self
            .open_listed(j, dir)
            .map_err(io_error("open directory", &real))?
        else {
            return Ok(vec![None; names.len()]);
        };
        names
            .iter()
            .map(
                |name| match rustix::fs::statat(&fd, *name, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) if FileType::from_raw_mode(st.st_mode) == FileType::RegularFile => Ok(
                        Some((i128::from(st.st_mtime), i128::from(st.st_mtime_nsec))),
                    ),
                    Ok(_) | Err(Errno::NOENT) => Ok(None),
                    Err(e) => Err(io_error("stat", &real.join(name))(e.into())),
                },
            )
            .collect()
    }

    /// The names in `dir` of shard `j`, with what each is; `None` when the shard has no such
    /// directory (or a link or a non-directory on the way: never followed).
    fn read_shard(&self, j: usize, dir: &str) -> Result<Option<Vec<(String, Held)>>, Error> {
        let real = self.real_dir(j, dir);
        let Some(fd) = self.opened(j, dir)? else {
            return Ok(None);
        };
        let mut out = Vec::new();
        let mut buf: Vec<MaybeUninit<u8>> = vec![MaybeUninit::uninit(); WALK_BUFFER_BYTES];
        let mut entries = RawDir::new(fd.as_fd(), &mut buf);
        while let Some(entry) = entries.next() {
            let entry = entry.map_err(|e| io_error("read directory", &real)(e.into()))?;
            let bytes = entry.file_name().to_bytes();
            if bytes == b"." || bytes == b".." || private_kind(bytes).is_some() {
                continue;
            }
            // A logical path is a string: no read can name a name that is not UTF-8.
            let Ok(name) = std::str::from_utf8(bytes) else {
                continue;
            };
            let held = match entry.file_type() {
                FileType::Unknown => {
                    match rustix::fs::statat(fd.as_fd(), name, AtFlags::SYMLINK_NOFOLLOW) {
                        Ok(st) => Held::of(FileType::from_raw_mode(st.st_mode)),
                        Err(Errno::NOENT) => continue,
                        Err(e) => return Err(io_error("stat", &real.join(name))(e.into())),
                    }
                }
                t => Held::of(t),
            };
            out.push((name.to_owned(), held));
        }
        Ok(Some(out))
    }

    /// [`Router::open_listed`], its error naming the directory.
    pub(crate) fn opened(&self, j: usize, dir: &str) -> Result<Option<OwnedFd>, Error> {
        self.open_listed(j, dir)
            .map_err(io_error("open directory", &self.real_dir(j, dir)))
    }

    /// `dir` of shard `j`, opened (which revalidates it) without following a link anywhere on
    /// the way; `None` when it is missing as the server says, or is a link or not a directory.
    pub(crate) fn open_listed(&self, j: usize, dir: &str) -> io::Result<Option<OwnedFd>> {
        let real = self.real_dir(j, dir);
        let (mount, rel) = self.layout().beneath_mount(self.shards(), j);
        let beneath = [rel, dir]
            .iter()
            .filter(|p| !p.is_empty())
            .copied()
            .collect::<Vec<_>>()
            .join("/");
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
        for attempt in 0..2 {
            // One call when nothing on the way is a link; otherwise (a link in the mount's own
            // path, no openat2) component by component beneath the mount.
            let opened = match rustix::fs::openat2(CWD, &real, flags, Mode::empty(), resolve) {
                Ok(fd) => Ok(fd),
                Err(Errno::NOENT) => Err(io::Error::from(Errno::NOENT)),
                Err(_) => open_beneath(mount, &beneath, false),
            };
            match opened {
                Ok(fd) => return Ok(Some(fd)),
                Err(e) if not_followed(&e) => return Ok(None),
                Err(e) if e.kind() == io::ErrorKind::NotFound && attempt == 0 => {}
                Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
                Err(e) => return Err(e),
            }
            // Missing, maybe only in this client's cache: ask the server, then look once more.
            match revalidate_dir(&real) {
                Ok(true) => {}
                Ok(false) => return Ok(None),
                Err(e) if not_followed(&e) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
        Ok(None)
    }
}

/// A file name in several shards other than its home: [`Pick::Newest`].
struct Contested {
    name: String,
    home: usize,
    candidates: Vec<usize>,
    held: Vec<(usize, Held)>,
}

/// A modification time, seconds and nanoseconds.
type Mtime = (i128, i128);

/// The newest of `candidates` (list order) by `mtime`; a tie goes to the earlier, as the read.
fn newest_of(candidates: &[usize], mtime: impl Fn(usize) -> Option<Mtime>) -> Option<usize> {
    let mut best: Option<(usize, Mtime)> = None;
    for &j in candidates {
        if let Some(t) = mtime(j) {
            if best.is_none_or(|(_, b)| t > b) {
                best = Some((j, t));
            }
        }
    }
    best.map(|(j, _)| j)
}

/// The shards of `held` that have the name as `kind`, in list order.
fn holding(held: &[(usize, Held)], kind: Held) -> Vec<usize> {
    held.iter()
        .filter(|(_, h)| *h == kind)
        .map(|(j, _)| *j)
        .collect()
}

pub(crate) fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_owned()
    } else {
        format!("{dir}/{name}")
    }
}

/// Whether the normalised `path` is `prefix` or lies under it.
fn at_or_under(path: &str, prefix: &str) -> bool {
    path.strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Whether `path` lies strictly under `dir` (`""`, the root, holds everything).
fn strictly_under(path: &str, dir: &str) -> bool {
    (dir.is_empty() && !path.is_empty())
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// A link or a non-directory on the way (what `O_NOFOLLOW | O_DIRECTORY` and `open_beneath`
/// refuse).
pub(crate) fn not_followed(e: &io::Error) -> bool {
    // ELOOP's kind is not nameable on stable Rust; the error keeps it.
    [Errno::LOOP, Errno::NOTDIR]
        .iter()
        .any(|&n| io::Error::from(n).kind() == e.kind())
}

pub(crate) fn io_error<'a>(
    op: &'static str,
    path: &'a Path,
) -> impl FnOnce(io::Error) -> Error + 'a {
    move |source| Error::Io {
        op,
        path: path.to_path_buf(),
        source,
    }
}

/// The directories of a tree, one [`Listing`] at a time: [`Router::walk`].
#[derive(Debug)]
pub struct Walk<'r> {
    router: &'r Router,
    /// Directories still to list, the next last, each with the shards its parent's listing
    /// found it in (`None`: the start, looked for in every shard).
    pending: Vec<(String, Option<Vec<usize>>)>,
    /// The start's own error, answered first.
    failed: Option<Error>,
}

impl Iterator for Walk<'_> {
    type Item = Result<Listing, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        if let Some(e) = self.failed.take() {
            return Some(Err(e));
        }
        loop {
            let (dir, held) = self.pending.pop()?;
            let start = held.is_none();
            let shards = held.unwrap_or_else(|| self.router.distinct());
            match self.router.entries_of(&dir, &shards) {
                Ok(Some(entries)) => {
                    for e in entries.iter().rev().filter(|e| e.is_dir()) {
                        self.pending
                            .push((join(&dir, &e.name), Some(e.shards.clone())));
                    }
                    return Some(Ok(Listing { dir, entries }));
                }
                Ok(None) if start => return Some(Err(Error::NotFound { path: dir })),
                // Gone since its parent was listed (a delete, a drain's clean-up).
                Ok(None) => {}
                Err(e) => return Some(Err(e)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_newest_wins_and_a_tie_goes_to_the_earlier() {
        let t = |j: usize| [Some((5, 1)), Some((5, 2)), Some((5, 2)), None][j];
        assert_eq!(newest_of(&[0, 1, 2, 3], t), Some(1));
        assert_eq!(newest_of(&[2, 1], t), Some(2));
        assert_eq!(newest_of(&[3], t), None);
    }

    #[test]
    fn paths_under_and_strictly_under() {
        assert!(at_or_under("shards/a", "shards/a"));
        assert!(at_or_under("shards/a/x", "shards/a"));
        assert!(!at_or_under("shards/ab", "shards/a"));
        assert!(strictly_under("shards/a", "shards"));
        assert!(!strictly_under("shards", "shards"));
        assert!(!strictly_under("shardsx/a", "shards"));
        assert!(strictly_under("x", ""));
        assert!(!strictly_under("", ""));
    }
}
