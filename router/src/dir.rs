//! Reading directories without a stat per entry: counting a directory's files, listing their
//! names, walking a tree; opening a directory beneath a mount without following links; removing
//! the empty directories a drain leaves; finding abandoned temporary files.
//!
//! Over NFS a stat is a network round trip per file, while one READDIR reply carries
//! hundreds of names. So names come straight from `getdents64` into a fixed buffer, the
//! entry type is taken from `d_type`, and an entry whose type the file system does not report
//! (`DT_UNKNOWN`) is never stat'ed here: counting takes it for a file, the walk reports it as
//! [`Kind::Unknown`] for the caller to look at. Memory stays the buffers, whatever the number
//! of files. (`std::fs::DirEntry::file_type` and `walkdir` fall back to a stat for
//! `DT_UNKNOWN`, so they are not used.)
//!
//! The router's own names (`.efs-router-<16 hex>.tmp` and `.moving`, [`crate::names`]) are
//! writes and moves in progress: never counted, never listed as files; the walk reports them
//! apart ([`Kind::Private`]) and [`find_abandoned`] finds the old ones.
//!
//! Below the directory it starts from, nothing here follows a symbolic link: subdirectories are
//! opened relative to their parent's descriptor with `O_NOFOLLOW | O_DIRECTORY`, and
//! [`open_beneath`] opens a relative path the same way (with `openat2(RESOLVE_BENEATH |
//! RESOLVE_NO_SYMLINKS)` where the kernel has it). A task that plants a link in the file system
//! (`/shards` → elsewhere) makes an error, never a walk or a count of somewhere else.

use crate::names::{private_kind, Private};
use rustix::fs::{AtFlags, FileType, Mode, OFlags, RawDir, ResolveFlags, SeekFrom};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::fmt;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The buffer of one directory read for counting and listing.
const BUFFER_BYTES: usize = 1 << 20;
/// The buffer of each directory open at once in a walk (one per level).
pub(crate) const WALK_BUFFER_BYTES: usize = 64 << 10;
/// Directories nested deeper than this below the walk's root are reported
/// ([`Kind::Failed`]), not entered: it bounds the memory (one buffer and one descriptor per
/// level) whatever the tree.
pub const MAX_DEPTH: usize = 64;

const DIR_FLAGS: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::CLOEXEC);
const SUBDIR_FLAGS: OFlags = DIR_FLAGS.union(OFlags::NOFOLLOW);

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

/// [`count_files`] of the directory open as `dir` (for example from [`open_beneath`]), read
/// from its start (the descriptor's position is rewound).
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

/// Every name in the directory open as `dir` with its type as the listing gives it
/// (`FileType::Unknown` when the server does not say), `.` and `..` aside, until `f` answers
/// false: for a caller that must bound the listing itself, whatever the names are.
pub fn for_each_name_at(
    dir: impl AsFd,
    mut f: impl FnMut(&OsStr, FileType) -> bool,
) -> io::Result<()> {
    let fd = dir.as_fd();
    rustix::fs::seek(fd, SeekFrom::Start(0))?;
    let mut buf: Vec<MaybeUninit<u8>> = vec![MaybeUninit::uninit(); BUFFER_BYTES];
    let mut entries = RawDir::new(fd, &mut buf);
    while let Some(entry) = entries.next() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if !f(OsStr::from_bytes(name), entry.file_type()) {
            break;
        }
    }
    Ok(())
}

fn open_dir(dir: &Path) -> io::Result<Option<OwnedFd>> {
    match rustix::fs::open(dir, DIR_FLAGS, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
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

/// What a walk found at one name, from the directory entry alone (no stat).
#[derive(Debug)]
pub enum Kind {
    /// A regular file (`DT_REG`).
    File,
    /// The file system did not say (`DT_UNKNOWN`, as NFSv3 and some NFSv4 servers answer). Not
    /// stat'ed: the caller looks (`lstat`) at a candidate just before acting on it, and may
    /// answer [`Flow::Enter`] to walk it if it turns out to be a directory.
    Unknown,
    /// A directory (`DT_DIR`), reported before it is walked.
    Directory,
    /// One of the router's own names (a write or a move in progress, or abandoned), whatever
    /// its type; never entered.
    Private(Private),
    /// A symbolic link, FIFO, device or socket: not data, skipped (a link is never followed).
    Other(Other),
    /// A directory that could not be opened or read (or lies deeper than [`MAX_DEPTH`]): only
    /// it is skipped, the walk goes on.
    Failed(io::Error),
}

/// The entry types that are neither files nor directories.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Other {
    Symlink,
    Fifo,
    CharDevice,
    BlockDevice,
    Socket,
}

impl Other {
    pub fn as_str(self) -> &'static str {
        match self {
            Other::Symlink => "symbolic link",
            Other::Fifo => "FIFO",
            Other::CharDevice => "character device",
            Other::BlockDevice => "block device",
            Other::Socket => "socket",
        }
    }
}

/// What a walk reports for the entry `name` whose `d_type` is `file_type`.
fn kind_of(name: &[u8], file_type: FileType) -> Kind {
    match private_kind(name) {
        Some(p) => Kind::Private(p),
        None => match file_type {
            FileType::RegularFile => Kind::File,
            FileType::Directory => Kind::Directory,
            FileType::Symlink => Kind::Other(Other::Symlink),
            FileType::Fifo => Kind::Other(Other::Fifo),
            FileType::CharacterDevice => Kind::Other(Other::CharDevice),
            FileType::BlockDevice => Kind::Other(Other::BlockDevice),
            FileType::Socket => Kind::Other(Other::Socket),
            FileType::Unknown => Kind::Unknown,
        },
    }
}

/// One entry of a walk.
#[derive(Debug)]
pub struct Entry<'a> {
    /// Its path relative to the walk's root (`sub/x.json`).
    pub path: &'a Path,
    /// The directory that holds it, open, for `*at` calls (`statat(dir, name,
    /// AT_SYMLINK_NOFOLLOW)`) that do not resolve the path again.
    pub dir: BorrowedFd<'a>,
    pub kind: Kind,
}

impl Entry<'_> {
    /// Its name in [`Entry::dir`].
    pub fn name(&self) -> &OsStr {
        self.path.file_name().unwrap_or_default()
    }
}

/// What the walk does after the visitor has seen an entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flow {
    /// Go on; a [`Kind::Directory`] is walked.
    Continue,
    /// Go on, but do not walk this [`Kind::Directory`].
    Skip,
    /// For a [`Kind::Unknown`]: open it as a directory (without following a link) and walk it
    /// if it is one; if it is not, nothing happens. Otherwise as [`Flow::Continue`].
    Enter,
    /// End the walk now.
    Stop,
}

/// Walks the tree under `root`, calling `visit` with each entry (depth first, each
/// directory's entries in the order the file system gives them; a directory before what it
/// holds), until `visit` answers [`Flow::Stop`]. Returns false if `root` does not exist.
///
/// `root` itself is opened as given (links in its path are followed: it is the caller's);
/// below it, each subdirectory is opened relative to its parent with `O_NOFOLLOW |
/// O_DIRECTORY`, so a link is never entered. Memory: one 64 KiB buffer and one descriptor per
/// level open, at most [`MAX_DEPTH`] levels. An error reading `root` itself is returned; a
/// subdirectory that cannot be opened or read is reported as [`Kind::Failed`] and only it is
/// skipped.
pub fn walk(root: &Path, visit: impl FnMut(Entry<'_>) -> Flow) -> io::Result<bool> {
    let Some(fd) = open_dir(root)? else {
        return Ok(false);
    };
    walk_fd(fd.as_fd(), visit)?;
    Ok(true)
}

/// [`walk`] from the directory open as `root` (for example from [`open_beneath`]), read from
/// its start.
pub fn walk_at(root: impl AsFd, visit: impl FnMut(Entry<'_>) -> Flow) -> io::Result<()> {
    let fd = root.as_fd();
    rustix::fs::seek(fd, SeekFrom::Start(0))?;
    walk_fd(fd, visit)
}

fn walk_fd(fd: BorrowedFd<'_>, visit: impl FnMut(Entry<'_>) -> Flow) -> io::Result<()> {
    Walker::new(visit, Streaming).run(fd).map(drop)
}

/// How a walk lists a directory's names: the one thing [`walk`] ([`Streaming`]) and
/// [`crate::sorted_walk::walk_sorted_at`] (sorted chunks) do differently. What a name then
/// leads to (the visit, the descent, the errors reported) is [`Walker`]'s, for both.
pub(crate) trait Order: Sized {
    /// Hands each entry of `dir` to [`Walker::entry`] until the walk stops. An error reading
    /// it is returned.
    fn walk_dir<V: FnMut(Entry<'_>) -> Flow>(
        walker: &mut Walker<V, Self>,
        dir: Dir<'_>,
    ) -> io::Result<()>;
}

/// A directory open in a walk, `depth` levels below the root; `on_path` when it lies on the
/// way to the walk's start (the root always does).
#[derive(Clone, Copy)]
pub(crate) struct Dir<'f> {
    pub(crate) fd: BorrowedFd<'f>,
    pub(crate) depth: usize,
    pub(crate) on_path: bool,
}

/// The file system's order, streamed: each name goes from the buffer to the visitor, none is
/// kept, and the walk always starts at the beginning.
struct Streaming;

impl Order for Streaming {
    fn walk_dir<V: FnMut(Entry<'_>) -> Flow>(
        walker: &mut Walker<V, Self>,
        dir: Dir<'_>,
    ) -> io::Result<()> {
        let mut buf: Vec<MaybeUninit<u8>> = vec![MaybeUninit::uninit(); WALK_BUFFER_BYTES];
        let mut entries = RawDir::new(dir.fd, &mut buf);
        // No link count (its `fstat` would be a round trip more): every untyped entry the
        // visitor asks to enter is opened.
        let mut subdirs = Subdirs::uncounted();
        while let Some(entry) = entries.next() {
            let entry = entry?;
            let name = entry.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            walker.entry(dir, name, entry.file_type(), false, &mut subdirs);
            if walker.stopped() {
                break;
            }
        }
        Ok(())
    }
}

/// The subdirectories a directory may still hold, from its link count (see
/// [`crate::sorted_walk`]'s note): `None` until looked at, then `Some(None)` when the count
/// says nothing.
#[derive(Default)]
pub(crate) struct Subdirs {
    left: Option<Option<u64>>,
}

impl Subdirs {
    /// A directory whose link count is never looked at: any untyped entry may be a directory.
    fn uncounted() -> Self {
        Subdirs { left: Some(None) }
    }

    /// Whether an entry of unknown type in the directory open as `fd` may be a directory.
    fn may_remain(&mut self, fd: BorrowedFd<'_>) -> bool {
        let left = *self.left.get_or_insert_with(|| {
            rustix::fs::fstat(fd)
                .ok()
                .map(|st| links(st.st_nlink))
                .filter(|links| *links >= 2)
                .map(|links| links - 2)
        });
        left != Some(0)
    }

    /// One of them found (entries before the start are never seen, so the count only
    /// overstates what is left: an entry is opened when in doubt, never skipped).
    fn found(&mut self, was_dir: bool) {
        if let (true, Some(Some(n))) = (was_dir, self.left.as_mut()) {
            *n = n.saturating_sub(1);
        }
    }
}

/// A link count as a number (`st_nlink` is 64 bits on x86-64, 32 on arm64).
fn links(n: impl Into<u64>) -> u64 {
    n.into()
}

/// A walk in progress, each directory's names listed as `O` lists them.
pub(crate) struct Walker<V, O> {
    visit: V,
    /// The current entry's path, relative to the root.
    path: PathBuf,
    pub(crate) order: O,
    /// Where the visitor answered [`Flow::Stop`].
    stopped: Option<PathBuf>,
}

impl<V: FnMut(Entry<'_>) -> Flow, O: Order> Walker<V, O> {
    pub(crate) fn new(visit: V, order: O) -> Self {
        Walker {
            visit,
            path: PathBuf::new(),
            order,
            stopped: None,
        }
    }

    /// Walks the tree under the directory open as `root`. An error reading `root` is
    /// returned; errors below it are reported. Returns where the visitor stopped, if it did.
    pub(crate) fn run(mut self, root: BorrowedFd<'_>) -> io::Result<Option<PathBuf>> {
        let dir = Dir {
            fd: root,
            depth: 0,
            on_path: true,
        };
        O::walk_dir(&mut self, dir)?;
        Ok(self.stopped)
    }

    pub(crate) fn stopped(&self) -> bool {
        self.stopped.is_some()
    }

    /// The entry `name` of `dir`, whose `d_type` is `file_type`: visited (unless `through`, a
    /// directory on the way to the start), then walked if the flow says so. An untyped entry
    /// is opened only while `subdirs` says `dir` may still hold a subdirectory.
    pub(crate) fn entry(
        &mut self,
        dir: Dir<'_>,
        name: &[u8],
        file_type: FileType,
        through: bool,
        subdirs: &mut Subdirs,
    ) {
        let kind = kind_of(name, file_type);
        let (is_dir, is_unknown) = (
            matches!(kind, Kind::Directory),
            matches!(kind, Kind::Unknown),
        );
        let name = OsStr::from_bytes(name);
        self.path.push(name);
        let flow = match through {
            true if is_dir => Flow::Continue,
            true => Flow::Enter,
            false => (self.visit)(Entry {
                path: &self.path,
                dir: dir.fd,
                kind,
            }),
        };
        match flow {
            Flow::Stop => self.stopped = Some(self.path.clone()),
            Flow::Continue | Flow::Enter if is_dir => {
                self.descend(dir, name, false, through);
                subdirs.found(true);
            }
            Flow::Enter if is_unknown && subdirs.may_remain(dir.fd) => {
                let was_dir = self.descend(dir, name, true, through);
                subdirs.found(was_dir);
            }
            _ => {}
        }
        self.path.pop();
    }

    /// Walks `name` of `parent` (its path is `self.path`); `maybe` when its type is unknown
    /// (then "not a directory" is no error, nor when `on_path`, on the way to the start).
    /// Returns whether it was a directory (or could not be told from one).
    fn descend(&mut self, parent: Dir<'_>, name: &OsStr, maybe: bool, on_path: bool) -> bool {
        if parent.depth + 1 > MAX_DEPTH {
            let e = io::Error::other(format!(
                "deeper than {MAX_DEPTH} levels below the walk's root: not walked"
            ));
            self.report(parent.fd, e);
            return true;
        }
        let outcome = match rustix::fs::openat(parent.fd, name, SUBDIR_FLAGS, Mode::empty()) {
            Ok(fd) => {
                let dir = Dir {
                    fd: fd.as_fd(),
                    depth: parent.depth + 1,
                    on_path,
                };
                O::walk_dir(self, dir)
            }
            // Not a directory after all, or gone since it was listed.
            Err(Errno::NOTDIR | Errno::LOOP) if maybe || on_path => return false,
            Err(Errno::NOENT) => return false,
            Err(e) => Err(describe(e)),
        };
        if let Err(e) = outcome {
            self.report(parent.fd, e);
        }
        true
    }

    fn report(&mut self, parent: BorrowedFd<'_>, e: io::Error) {
        let flow = (self.visit)(Entry {
            path: &self.path,
            dir: parent,
            kind: Kind::Failed(e),
        });
        if flow == Flow::Stop {
            self.stopped = Some(self.path.clone());
        }
    }
}

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

/// An error of a directory operation, with the errno's meaning made plain for the two that
/// matter here (a link met with `O_NOFOLLOW`, a component that is not a directory).
fn describe(e: Errno) -> io::Error {
    let plain = io::Error::from(e);
    match e {
        Errno::LOOP => io::Error::new(plain.kind(), "a symbolic link: not followed"),
        Errno::NOTDIR => io::Error::new(plain.kind(), "not a directory"),
        _ => plain,
    }
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

/// One of the router's own files that has not changed for a while: a write or a move that
/// died part way (see [`abandoned`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abandoned {
    /// Relative to the walk's root.
    pub path: PathBuf,
    pub kind: Private,
    /// Since its last change (`ctime`: a write, a rename, a link), by this host's clock.
    pub age: Duration,
    /// Its number of names (`st_nlink`).
    pub links: u64,
    /// Whether it is a regular file (anything else under such a name is not the router's but
    /// a move's private directory).
    pub regular: bool,
    /// Whether it is a directory (not a link to one): a move's private directory.
    pub directory: bool,
    /// Whether it bears [`NAMED_MARK`]: the function has named it to a person already.
    pub named: bool,
}

/// The mode bit the function sets on a private name it has named to a person (what no move
/// can give back), so that it is named once, not on every pass: the sticky bit, which a
/// router never sets there and which changes nothing for a regular file.
pub const NAMED_MARK: u32 = 0o1000;

impl Abandoned {
    /// Whether removing it can lose no data: a temporary file was never visible under a real
    /// name (its write died before the rename); a `.moving` name with other names is a second
    /// name of a file that is also elsewhere (a move cut short after the link). A `.moving`
    /// file with one name may be the only copy of a version whose logical name is not known
    /// here (a move that died between taking a newer version away from a writer and placing
    /// it): keep it and report it for a person to look at.
    pub fn safe_to_remove(&self) -> bool {
        self.regular && (self.kind == Private::Temporary || self.links > 1)
    }
}

/// What `entry` of a walk is when it is one of the router's own names (a write's temporary
/// file, a move's private name) last changed at least `older_than` before `now`: a write or a
/// move that died part way. One `lstat`, relative to the directory the walk opened (no path is
/// resolved again, no link followed); nothing for any other entry. `ctime` changes with every
/// write, rename and link, so a write or a move in progress looks young; the age is by this
/// host's clock against the file system's, so choose `older_than` far above any clock
/// difference (an hour, not seconds).
pub fn abandoned(entry: &Entry<'_>, now: SystemTime, older_than: Duration) -> Option<Abandoned> {
    let Kind::Private(kind @ (Private::Temporary | Private::Moving)) = entry.kind else {
        // The reports' directory is the function's to clean (stale reports and their writes).
        return None;
    };
    let st = rustix::fs::statat(entry.dir, entry.name(), AtFlags::SYMLINK_NOFOLLOW).ok()?;
    let changed = UNIX_EPOCH
        + Duration::new(
            u64::try_from(st.st_ctime).unwrap_or(0),
            u32::try_from(st.st_ctime_nsec).unwrap_or(0),
        );
    let age = now.duration_since(changed).unwrap_or_default();
    // `st_nlink` is u64 on x86_64 Linux and u32 on aarch64 (the Lambda's): widen it, whatever
    // the host's width.
    #[allow(clippy::useless_conversion)]
    let links = u64::from(st.st_nlink);
    let file_type = FileType::from_raw_mode(st.st_mode);
    (age >= older_than).then(|| Abandoned {
        path: entry.path.to_path_buf(),
        kind,
        age,
        links,
        regular: file_type == FileType::RegularFile,
        directory: file_type == FileType::Directory,
        named: st.st_mode & NAMED_MARK != 0,
    })
}

/// The router's own files under `root` (walked as [`walk`] does: `root` itself is opened as
/// given) whose last change is at least `older_than` ago ([`abandoned`]): one `lstat` per
/// private name found, none for anything else.
pub fn find_abandoned(root: &Path, older_than: Duration) -> io::Result<Vec<Abandoned>> {
    let now = SystemTime::now();
    let mut found = Vec::new();
    walk(root, |entry| {
        found.extend(abandoned(&entry, now, older_than));
        Flow::Continue
    })?;
    Ok(found)
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

    /// `(path, kind)` of every entry a walk reports, sorted.
    fn walked(root: &Path, mut flow: impl FnMut(&Entry<'_>) -> Flow) -> Vec<(String, String)> {
        let mut seen = Vec::new();
        assert!(walk(root, |e| {
            let kind = match &e.kind {
                Kind::File => "file".to_owned(),
                Kind::Unknown => "unknown".to_owned(),
                Kind::Directory => "dir".to_owned(),
                Kind::Private(p) => p.as_str().to_owned(),
                Kind::Other(o) => o.as_str().to_owned(),
                Kind::Failed(err) => format!("failed: {err}"),
            };
            seen.push((e.path.to_string_lossy().into_owned(), kind));
            flow(&e)
        })
        .unwrap());
        seen.sort();
        seen
    }

    fn owned(v: &[(&str, &str)]) -> Vec<(String, String)> {
        v.iter()
            .map(|(a, b)| (a.to_string(), b.to_string()))
            .collect()
    }

    #[test]
    fn walks_nested_files_and_reports_everything_else_apart() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path().join("root");
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::write(root.join("top.json"), b"").unwrap();
        fs::write(root.join("a/mid.json"), b"").unwrap();
        fs::write(root.join("a/b/deep.json"), b"").unwrap();
        fs::write(root.join("a/.efs-router-0123456789abcdef.tmp"), b"").unwrap();
        fs::create_dir(root.join("a/.efs-router-0123456789abcdef.moving")).unwrap();
        fs::write(
            root.join("a/.efs-router-0123456789abcdef.moving/hidden"),
            b"",
        )
        .unwrap();
        // The reports' directory (a watched tree at the file system's root): never entered.
        fs::create_dir(root.join(".efs-router-clients")).unwrap();
        fs::write(
            root.join(".efs-router-clients/0123456789abcdef.json"),
            b"{}",
        )
        .unwrap();
        // Outside the root, reachable only through links: never entered, never listed.
        fs::create_dir(d.path().join("outside")).unwrap();
        fs::write(d.path().join("outside/secret.json"), b"").unwrap();
        std::os::unix::fs::symlink(d.path().join("outside"), root.join("a/b/escape")).unwrap();
        std::os::unix::fs::symlink("../top.json", root.join("a/link.json")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            root.join("fifo"),
            FileType::Fifo,
            Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        assert_eq!(
            walked(&root, |_| Flow::Continue),
            owned(&[
                (".efs-router-clients", "reports"),
                ("a", "dir"),
                ("a/.efs-router-0123456789abcdef.moving", "moving"),
                ("a/.efs-router-0123456789abcdef.tmp", "temporary"),
                ("a/b", "dir"),
                ("a/b/deep.json", "file"),
                ("a/b/escape", "symbolic link"),
                ("a/link.json", "symbolic link"),
                ("a/mid.json", "file"),
                ("fifo", "FIFO"),
                ("top.json", "file"),
            ])
        );
        // Skip a directory; stop early.
        let skipped = walked(&root, |e| {
            if e.path == Path::new("a") {
                Flow::Skip
            } else {
                Flow::Continue
            }
        });
        assert_eq!(
            skipped,
            owned(&[
                (".efs-router-clients", "reports"),
                ("a", "dir"),
                ("fifo", "FIFO"),
                ("top.json", "file")
            ])
        );
        let mut n = 0;
        walk(&root, |_| {
            n += 1;
            if n == 2 {
                Flow::Stop
            } else {
                Flow::Continue
            }
        })
        .unwrap();
        assert_eq!(n, 2);
        assert!(!walk(&d.path().join("absent"), |_| Flow::Continue).unwrap());
    }

    #[test]
    fn a_directory_that_cannot_be_read_stops_only_itself() {
        use std::os::unix::fs::MetadataExt;
        let d = tempfile::tempdir().unwrap();
        if fs::metadata(d.path()).unwrap().uid() == 0 {
            // Root reads any directory; the test needs a permission that holds. The same path
            // (a subdirectory's open failing) is the depth limit's, tested below.
            return;
        }
        fs::create_dir_all(d.path().join("closed")).unwrap();
        fs::write(d.path().join("closed/x"), b"").unwrap();
        fs::write(d.path().join("open.json"), b"").unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(d.path().join("closed"), fs::Permissions::from_mode(0o000)).unwrap();
        let seen = walked(d.path(), |_| Flow::Continue);
        fs::set_permissions(d.path().join("closed"), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(seen.len(), 3, "{seen:?}");
        assert!(seen[1].1.starts_with("failed:"), "{seen:?}");
        assert_eq!(seen[2].0, "open.json");
    }

    #[test]
    fn depth_is_bounded_and_reported() {
        let d = tempfile::tempdir().unwrap();
        let mut deep = d.path().to_path_buf();
        for _ in 0..MAX_DEPTH + 2 {
            deep.push("d");
        }
        fs::create_dir_all(&deep).unwrap();
        fs::write(d.path().join("f"), b"").unwrap();
        let seen = walked(d.path(), |_| Flow::Continue);
        let failed: Vec<_> = seen
            .iter()
            .filter(|(_, k)| k.starts_with("failed"))
            .collect();
        assert_eq!(failed.len(), 1, "{failed:?}");
        assert_eq!(failed[0].0.matches('d').count(), MAX_DEPTH + 1);
        assert!(seen.contains(&("f".to_owned(), "file".to_owned())));
    }

    #[test]
    fn enter_on_a_known_directory_walks_it_as_continue_does() {
        // A local file system reports types, so this checks only that `Enter` on a directory
        // walks it; entries of unknown type are entered only when asked in the netfs tests
        // (`walking_reads_names_only_and_enters_an_unknown_entry_only_when_asked`).
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("sub")).unwrap();
        fs::write(d.path().join("sub/x"), b"").unwrap();
        let seen = walked(d.path(), |_| Flow::Enter);
        assert_eq!(seen, owned(&[("sub", "dir"), ("sub/x", "file")]));
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

    #[test]
    fn finds_abandoned_router_files_by_age() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("sub")).unwrap();
        let tmp = d.path().join("sub/.efs-router-0123456789abcdef.tmp");
        let moving_linked = d.path().join(".efs-router-1111111111111111.moving");
        let moving_alone = d.path().join(".efs-router-2222222222222222.moving");
        fs::write(&tmp, b"half a write").unwrap();
        fs::write(d.path().join("home.json"), b"x").unwrap();
        fs::hard_link(d.path().join("home.json"), &moving_linked).unwrap();
        fs::write(&moving_alone, b"a version").unwrap();
        // The reports' directory and what is in it are not the walk's.
        fs::create_dir(d.path().join(".efs-router-clients")).unwrap();
        fs::write(
            d.path()
                .join(".efs-router-clients/.efs-router-3333333333333333.tmp"),
            b"{",
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(50));
        let mut found = find_abandoned(d.path(), Duration::from_millis(20)).unwrap();
        found.sort_by(|a, b| a.path.cmp(&b.path));
        let summary: Vec<_> = found
            .iter()
            .map(|a| {
                (
                    a.path.to_string_lossy().into_owned(),
                    a.kind,
                    a.links,
                    a.safe_to_remove(),
                )
            })
            .collect();
        assert_eq!(
            summary,
            [
                (
                    ".efs-router-1111111111111111.moving".to_owned(),
                    Private::Moving,
                    2,
                    true
                ),
                (
                    ".efs-router-2222222222222222.moving".to_owned(),
                    Private::Moving,
                    1,
                    false
                ),
                (
                    "sub/.efs-router-0123456789abcdef.tmp".to_owned(),
                    Private::Temporary,
                    1,
                    true
                ),
            ]
        );
        assert!(found.iter().all(|a| a.age >= Duration::from_millis(20)));
        // Young ones are not abandoned.
        assert!(find_abandoned(d.path(), Duration::from_secs(3600))
            .unwrap()
            .is_empty());
    }
}
