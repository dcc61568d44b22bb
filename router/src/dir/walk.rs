//! Walking a tree from the directory entries alone (each entry's `d_type`, no stat), one
//! buffer and one descriptor per level, never through a link; and listing one directory's
//! every name with its type ([`for_each_name_at`]). The walk's machinery ([`Walker`],
//! [`Order`]) is shared with the sorted walk ([`super::sorted_walk`]).

use super::{describe, open_dir, BUFFER_BYTES, SUBDIR_FLAGS};
use crate::names::{private_kind, Private};
use rustix::fs::{FileType, Mode, RawDir, SeekFrom};
use rustix::io::Errno;
use std::ffi::OsStr;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// The buffer of each directory open at once in a walk (one per level).
pub(crate) const WALK_BUFFER_BYTES: usize = 64 << 10;

/// Directories nested deeper than this below the walk's root are reported
/// ([`Kind::Failed`]), not entered: it bounds the memory (one buffer and one descriptor per
/// level) whatever the tree.
pub const MAX_DEPTH: usize = 64;

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

/// [`walk`] from the directory open as `root` (for example from
/// [`open_beneath`](super::open_beneath)), read from its start.
pub fn walk_at(root: impl AsFd, visit: impl FnMut(Entry<'_>) -> Flow) -> io::Result<()> {
    let fd = root.as_fd();
    rustix::fs::seek(fd, SeekFrom::Start(0))?;
    walk_fd(fd, visit)
}

fn walk_fd(fd: BorrowedFd<'_>, visit: impl FnMut(Entry<'_>) -> Flow) -> io::Result<()> {
    Walker::new(visit, Streaming).run(fd).map(drop)
}

/// How a walk lists a directory's names: the one thing [`walk`] ([`Streaming`]) and
/// [`super::sorted_walk::walk_sorted_at`] (sorted chunks) do differently. What a name then
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
/// [`super::sorted_walk`]'s note): `None` until looked at, then `Some(None)` when the count
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

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
}
