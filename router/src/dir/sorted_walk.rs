//! A walk in a fixed order that can start from a position: for a rebalance that goes on,
//! run after run, where the last one stopped.
//!
//! The order is each directory's names sorted bytewise, a directory before what it holds
//! (depth first): a path's position is its components compared one by one. READDIR order is
//! the server's (a hash on ext4, cookies on NFS) and a READDIR cookie is only valid while the
//! directory does not change (a server may reuse or invalidate cookies, and NFS clients keep
//! no order of their own), so a position in it would skip or repeat names once entries come
//! and go. A path's position does not depend on the other entries: a walk that starts at a
//! path visits every entry at or after it once. An entry made (or renamed) at a position the
//! walk has passed is visited by the next walk; an entry removed before it is reached is not
//! visited; none is skipped while it stays where it is.
//!
//! Memory does not grow with a directory: it is listed (one READDIR chain, into one 64 KiB
//! buffer) keeping only the smallest names after the position, at most [`CHUNK_BYTES`] of them
//! for the walk's root, half that a level down, never less than [`MIN_CHUNK_BYTES`]; a
//! directory holding more is listed again for the next chunk (a shard at the default
//! threshold, 50,000 names, fits one). Like [`crate::dir::walk_at`], it reads no stat per
//! entry and never follows a link below its root.
//!
//! Where a listing gives no entry types (`DT_UNKNOWN`: NFSv3, some NFSv4 servers, the FUSE
//! test bed), an entry the visitor asks to [`Flow::Enter`] is opened to see whether it is a
//! directory (a LOOKUP) only while the directory may still hold a subdirectory not yet
//! found: its link count (one `fstat`, taken at the first such entry) is 2 plus its
//! subdirectories on the file systems that count them (ext4, XFS, NFS servers over them).
//! So a shard's directory, which holds files only, costs one GETATTR, not a LOOKUP per
//! entry. A count below 2 (btrfs, some FUSE file systems) says nothing: every such entry is
//! opened. EFS gives types, so a walk over EFS looks up nothing.

use crate::dir::{Dir, Entry, Flow, Order, Subdirs, Walker, WALK_BUFFER_BYTES};
use rustix::fs::{FileType, RawDir, SeekFrom};
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};

/// The names of one chunk of the walk's root directory, in bytes (each name counts its
/// length and [`NAME_OVERHEAD`]).
pub const CHUNK_BYTES: usize = 8 << 20;
/// The smallest chunk, however deep.
pub const MIN_CHUNK_BYTES: usize = 64 << 10;
/// What a kept name costs beside its bytes (its vector and type, the allocator's rounding).
const NAME_OVERHEAD: usize = 56;

/// How a walk ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Walked {
    /// It visited every entry from its start to the end of the tree.
    Ended,
    /// The visitor answered [`Flow::Stop`] for the entry at this path (relative to the root),
    /// which is not visited: a walk started from it goes on there.
    StoppedAt(PathBuf),
}

/// Walks the tree under the directory open as `root` in sorted order from `from` (a relative
/// path; empty for the start), calling `visit` with each entry at or after it, until `visit`
/// answers [`Flow::Stop`]. A directory on the way to `from` is walked from there without being
/// visited again; `from` itself is visited (it is the first entry not visited before), and
/// so is whatever it holds. `from` need not exist. Flows and kinds are those of
/// [`crate::dir::walk_at`]: an error reading `root` is returned, one below it is reported as
/// [`crate::dir::Kind::Failed`].
pub fn walk_sorted_at(
    root: impl AsFd,
    from: &Path,
    visit: impl FnMut(Entry<'_>) -> Flow,
) -> io::Result<Walked> {
    let from: Vec<Vec<u8>> = from
        .components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.as_bytes().to_vec()),
            _ => None,
        })
        .collect();
    let stopped = Walker::new(visit, Sorted { from }).run(root.as_fd())?;
    Ok(match stopped {
        Some(at) => Walked::StoppedAt(at),
        None => Walked::Ended,
    })
}

/// Each directory's names sorted bytewise, in chunks, from the start's position.
struct Sorted {
    /// The start's components.
    from: Vec<Vec<u8>>,
}

/// A name kept for a chunk, ordered by its bytes (names in one directory are unique).
struct Named {
    name: Vec<u8>,
    file_type: FileType,
}

impl PartialEq for Named {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}
impl Eq for Named {}
impl PartialOrd for Named {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Named {
    fn cmp(&self, other: &Self) -> Ordering {
        self.name.cmp(&other.name)
    }
}

/// Where a chunk starts in its directory: at a name, or just after one.
struct Bound {
    name: Vec<u8>,
    inclusive: bool,
}

impl Bound {
    fn admits(&self, name: &[u8]) -> bool {
        match name.cmp(&self.name[..]) {
            Ordering::Greater => true,
            Ordering::Equal => self.inclusive,
            Ordering::Less => false,
        }
    }
}

/// The smallest names of the directory open as `fd` that `bound` admits, sorted, within
/// `budget` bytes; and whether it holds more.
fn read_chunk(
    fd: BorrowedFd<'_>,
    bound: Option<&Bound>,
    budget: usize,
) -> io::Result<(Vec<Named>, bool)> {
    rustix::fs::seek(fd, SeekFrom::Start(0))?;
    let mut buf: Vec<MaybeUninit<u8>> = vec![MaybeUninit::uninit(); WALK_BUFFER_BYTES];
    let mut entries = RawDir::new(fd, &mut buf);
    let mut kept: BinaryHeap<Named> = BinaryHeap::new();
    let (mut bytes, mut more) = (0usize, false);
    while let Some(entry) = entries.next() {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." || bound.is_some_and(|b| !b.admits(name)) {
            continue;
        }
        // Full, and past the largest kept: it belongs to a later chunk.
        if bytes >= budget && kept.peek().is_some_and(|max| name > &max.name[..]) {
            more = true;
            continue;
        }
        bytes += name.len() + NAME_OVERHEAD;
        kept.push(Named {
            name: name.to_vec(),
            file_type: entry.file_type(),
        });
        while bytes > budget && kept.len() > 1 {
            let dropped = kept.pop().expect("not empty");
            bytes -= dropped.name.len() + NAME_OVERHEAD;
            more = true;
        }
    }
    Ok((kept.into_sorted_vec(), more))
}

impl Order for Sorted {
    /// A directory on the way to the start is listed from the start's name there (its path
    /// is the start's first `depth` components).
    fn walk_dir<V: FnMut(Entry<'_>) -> Flow>(
        walker: &mut Walker<V, Self>,
        dir: Dir<'_>,
    ) -> io::Result<()> {
        let Dir { fd, depth, on_path } = dir;
        let budget = (CHUNK_BYTES >> depth.min(16)).max(MIN_CHUNK_BYTES);
        let from = &walker.order.from;
        let start = from.get(depth).filter(|_| on_path).cloned();
        let start_below = depth + 1 < from.len();
        let mut bound = start.clone().map(|name| Bound {
            name,
            inclusive: true,
        });
        let mut subdirs = Subdirs::default();
        loop {
            let (chunk, more) = read_chunk(fd, bound.as_ref(), budget)?;
            for named in &chunk {
                // The start's own name here: a directory on the way to it is walked on
                // without being visited again; the start itself is visited.
                let through = start.as_deref() == Some(&named.name[..]) && start_below;
                walker.entry(dir, &named.name, named.file_type, through, &mut subdirs);
                if walker.stopped() {
                    return Ok(());
                }
            }
            match (more, chunk.last()) {
                (true, Some(last)) => {
                    bound = Some(Bound {
                        name: last.name.clone(),
                        inclusive: false,
                    })
                }
                _ => return Ok(()),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn open(dir: &Path) -> std::os::fd::OwnedFd {
        crate::dir::open_beneath(dir, "", false).unwrap()
    }

    /// The paths a walk from `from` visits, in order, stopping at the `stop`-th; and how it
    /// ended.
    fn visited(root: &Path, from: &str, stop: Option<usize>) -> (Vec<String>, Walked) {
        let mut seen = Vec::new();
        let walked = walk_sorted_at(open(root), Path::new(from), |e| {
            if stop == Some(seen.len()) {
                return Flow::Stop;
            }
            seen.push(e.path.to_string_lossy().into_owned());
            Flow::Continue
        })
        .unwrap();
        (seen, walked)
    }

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        // `a-b` sorts after `a` as a name, and `a/x` before `a-b` as a path.
        for p in ["a/x", "a/y/z", "a-b", "b", "c/d/e", "c/f"] {
            let path = d.path().join(p);
            fs::create_dir_all(path.parent().unwrap()).unwrap();
            fs::write(path, b"").unwrap();
        }
        d
    }

    const ORDER: [&str; 11] = [
        "a", "a/x", "a/y", "a/y/z", "a-b", "b", "c", "c/d", "c/d/e", "c/f", "",
    ];

    #[test]
    fn visits_in_name_order_and_goes_on_from_where_it_stopped() {
        let d = tree();
        let (all, walked) = visited(d.path(), "", None);
        assert_eq!(all, ORDER[..10]);
        assert_eq!(walked, Walked::Ended);
        // Stopped after each number of entries, then started again from there: every entry
        // once, in order.
        for (n, at) in ORDER.iter().enumerate().take(10) {
            let (first, walked) = visited(d.path(), "", Some(n));
            assert_eq!(walked, Walked::StoppedAt(PathBuf::from(at)));
            let (rest, walked) = visited(d.path(), at, None);
            assert_eq!(walked, Walked::Ended);
            let both: Vec<_> = first.iter().chain(&rest).cloned().collect();
            assert_eq!(both, ORDER[..10], "stopped at {n}");
        }
    }

    #[test]
    fn a_start_that_is_gone_goes_on_at_the_next_position() {
        let d = tree();
        // Neither exists: the walk goes on from where they would be.
        assert_eq!(visited(d.path(), "a/xx", None).0, ORDER[2..10]);
        assert_eq!(visited(d.path(), "a/y/zz", None).0, ORDER[4..10]);
        assert_eq!(visited(d.path(), "bb/q", None).0, ORDER[6..10]);
        assert_eq!(visited(d.path(), "zz", None).0, Vec::<String>::new());
        // A directory on the way to the start is now a file: it was visited before (as the
        // directory), so it is visited by the next walk, not this one.
        fs::remove_dir_all(d.path().join("c/d")).unwrap();
        fs::write(d.path().join("c/d"), b"").unwrap();
        assert_eq!(visited(d.path(), "c/d/e", None).0, ["c/f"]);
    }

    #[test]
    fn entries_made_behind_the_position_wait_for_the_next_walk() {
        let d = tree();
        let (first, _) = visited(d.path(), "", Some(5));
        assert_eq!(first, ORDER[..5]);
        fs::write(d.path().join("a/w"), b"").unwrap(); // behind: next walk
        fs::write(d.path().join("bz"), b"").unwrap(); // ahead: this walk
        let (rest, _) = visited(d.path(), ORDER[5], None);
        assert_eq!(rest, ["b", "bz", "c", "c/d", "c/d/e", "c/f"]);
        assert!(visited(d.path(), "", None).0.contains(&"a/w".to_owned()));
    }

    #[test]
    fn a_directory_larger_than_a_chunk_is_read_in_chunks_in_order() {
        let d = tempfile::tempdir().unwrap();
        // A level deep enough for the smallest chunk: more names than it holds.
        let mut deep = d.path().to_path_buf();
        for _ in 0..10 {
            deep.push("d");
        }
        fs::create_dir_all(&deep).unwrap();
        let n = 3 * MIN_CHUNK_BYTES / (NAME_OVERHEAD + 8);
        let mut names: Vec<String> = (0..n).map(|i| format!("{:08}", i * 7919 % n)).collect();
        for name in &names {
            fs::write(deep.join(name), b"").unwrap();
        }
        names.sort();
        let prefix = "d/".repeat(10);
        let files = |from: &str, stop: Option<usize>| {
            let (seen, walked) = visited(d.path(), from, stop);
            let files: Vec<String> = seen
                .into_iter()
                .filter_map(|p| p.strip_prefix(&prefix).map(str::to_owned))
                .collect();
            (files, walked)
        };
        assert_eq!(files("", None).0, names);
        // Stopped inside the second chunk and started again.
        let (first, walked) = files("", Some(10 + n / 2));
        let Walked::StoppedAt(at) = walked else {
            panic!("not stopped")
        };
        let (rest, _) = files(at.to_str().unwrap(), None);
        let both: Vec<String> = first.into_iter().chain(rest).collect();
        assert_eq!(both, names);
    }
}
