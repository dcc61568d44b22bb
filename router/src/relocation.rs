//! Moving one file to another directory of the same file system without ever replacing a
//! file that is already there.
//!
//! `rename(2)` replaces its destination, and checking first leaves a window in which another
//! client's file would be lost. `link(2)` fails with `EEXIST` instead, atomically, on NFS as
//! on local disks; the source name is removed once the new name exists. A move cut short
//! between the two leaves one file under two names, which the next attempt recognises (same
//! inode) and finishes. Never a copy: the bytes do not move.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

// Linux's numbers: what `link(2)` answers on a file system without hard links.
const EPERM: i32 = 1;
const EOPNOTSUPP: i32 = 95;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Relocation {
    /// The file is at the destination and no longer at the source.
    Moved,
    /// Another file already has the destination name; both were left as they were.
    DestinationTaken,
    /// Nothing at the source (another client moved or removed it, or finished this move).
    SourceGone,
}

/// Moves `src` to `dst` (whose directory must exist), never replacing an existing `dst`.
pub fn relocate(src: &Path, dst: &Path) -> io::Result<Relocation> {
    if src == dst {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} is both source and destination", src.display()),
        ));
    }
    match fs::hard_link(src, dst) {
        Ok(()) => remove_source(src),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => match same_file(src, dst)? {
            Some(true) => remove_source(src),
            Some(false) => Ok(Relocation::DestinationTaken),
            None => Ok(Relocation::SourceGone),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound && !exists(src)? => {
            Ok(Relocation::SourceGone)
        }
        // File systems without hard links: check, then rename (a small window, documented).
        Err(e) if matches!(e.raw_os_error(), Some(EPERM | EOPNOTSUPP)) => {
            if exists(dst)? {
                return Ok(Relocation::DestinationTaken);
            }
            match fs::rename(src, dst) {
                Ok(()) => Ok(Relocation::Moved),
                Err(e) if e.kind() == io::ErrorKind::NotFound && !exists(src)? => {
                    Ok(Relocation::SourceGone)
                }
                Err(e) => Err(e),
            }
        }
        Err(e) => Err(e),
    }
}

/// Moves each `(src, dst)` pair as [`relocate`] does, `concurrency` moves at a time, and
/// gives each outcome in the order of `pairs`: `None` for a pair not tried because `until`
/// came first. The same pair twice is safe (the second finds the source gone).
///
/// Why at once: over NFS each move is a few round trips (a link and an unlink, and the
/// lookups the kernel makes for them), and Linux holds a directory's lock through a link or an
/// unlink in it, so moves out of one directory finish at most one unlink per round trip however
/// many run. Several at a time still overlap one file's link into its destination, another's
/// lookups and a third's unlink, and spread the work over the destination directories; pairs
/// from several source directories are taken from each directory in turn, so each one's lock is
/// busy. One at a time, a move costs all its round trips in a row.
pub fn relocate_many<P: AsRef<Path> + Sync>(
    pairs: &[(P, P)],
    concurrency: usize,
    until: Option<Instant>,
) -> Vec<Option<io::Result<Relocation>>> {
    let order = by_source_directory_in_turn(pairs);
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            if until.is_some_and(|t| Instant::now() >= t) {
                break;
            }
            let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                break;
            };
            let (src, dst) = &pairs[i];
            done.push((i, relocate(src.as_ref(), dst.as_ref())));
        }
        done
    };
    let workers = concurrency.clamp(1, pairs.len().max(1));
    let done: Vec<(usize, io::Result<Relocation>)> = if workers == 1 {
        work()
    } else {
        std::thread::scope(|s| {
            let handles: Vec<_> = (0..workers).map(|_| s.spawn(work)).collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect()
        })
    };
    let mut outcomes: Vec<Option<io::Result<Relocation>>> = pairs.iter().map(|_| None).collect();
    for (i, outcome) in done {
        outcomes[i] = Some(outcome);
    }
    outcomes
}

/// The indices of `pairs`, one from each source directory in turn (in order of first
/// appearance), each directory's in their order.
fn by_source_directory_in_turn<P: AsRef<Path>>(pairs: &[(P, P)]) -> Vec<usize> {
    let mut groups: Vec<Vec<usize>> = Vec::new();
    let mut group_of: HashMap<&Path, usize> = HashMap::new();
    for (i, (src, _)) in pairs.iter().enumerate() {
        let dir = src.as_ref().parent().unwrap_or(Path::new(""));
        let g = *group_of.entry(dir).or_insert_with(|| {
            groups.push(Vec::new());
            groups.len() - 1
        });
        groups[g].push(i);
    }
    let mut order = Vec::with_capacity(pairs.len());
    let longest = groups.iter().map(Vec::len).max().unwrap_or(0);
    for round in 0..longest {
        order.extend(groups.iter().filter_map(|g| g.get(round)));
    }
    order
}

fn remove_source(src: &Path) -> io::Result<Relocation> {
    match fs::remove_file(src) {
        Ok(()) => Ok(Relocation::Moved),
        // Another mover finished the same move first (the file is at the destination): the
        // one whose unlink succeeds reports the move, so racing movers count it once.
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Relocation::SourceGone),
        Err(e) => Err(e),
    }
}

/// `None` when `src` is gone.
fn same_file(src: &Path, dst: &Path) -> io::Result<Option<bool>> {
    let s = match fs::symlink_metadata(src) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let d = fs::symlink_metadata(dst)?;
    Ok(Some(s.dev() == d.dev() && s.ino() == d.ino()))
}

fn exists(path: &Path) -> io::Result<bool> {
    match fs::symlink_metadata(path) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn moves_and_keeps_the_bytes() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        fs::write(&src, b"reading").unwrap();
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::Moved);
        assert!(!src.exists());
        assert_eq!(fs::read(&dst).unwrap(), b"reading");
    }

    #[test]
    fn never_replaces_the_destination() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        fs::write(&src, b"old").unwrap();
        fs::write(&dst, b"new").unwrap();
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::DestinationTaken);
        assert_eq!(fs::read(&src).unwrap(), b"old");
        assert_eq!(fs::read(&dst).unwrap(), b"new");
    }

    #[test]
    fn a_missing_source_is_gone_not_an_error() {
        let d = tempfile::tempdir().unwrap();
        let dst = d.path().join("b");
        assert_eq!(
            relocate(&d.path().join("a"), &dst).unwrap(),
            Relocation::SourceGone
        );
        fs::write(&dst, b"moved by another").unwrap();
        assert_eq!(
            relocate(&d.path().join("a"), &dst).unwrap(),
            Relocation::SourceGone
        );
    }

    #[test]
    fn a_move_cut_short_after_the_link_is_finished() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        fs::write(&src, b"x").unwrap();
        fs::hard_link(&src, &dst).unwrap();
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::Moved);
        assert!(!src.exists());
        assert_eq!(fs::read(&dst).unwrap(), b"x");
    }

    #[test]
    fn many_moves_at_once_report_in_order() {
        let d = tempfile::tempdir().unwrap();
        let dirs: Vec<_> = ["a", "b", "home"]
            .iter()
            .map(|n| d.path().join(n))
            .collect();
        for dir in &dirs {
            fs::create_dir(dir).unwrap();
        }
        let mut pairs = Vec::new();
        for i in 0..300 {
            let src = dirs[i % 2].join(format!("f{i}"));
            fs::write(&src, i.to_string()).unwrap();
            pairs.push((src, dirs[2].join(format!("f{i}"))));
        }
        fs::write(dirs[2].join("f7"), b"already home").unwrap();
        pairs.push((dirs[0].join("absent"), dirs[2].join("absent")));
        for concurrency in [0, 1, 8] {
            let outcomes = relocate_many(&pairs, concurrency, None);
            assert_eq!(outcomes.len(), pairs.len());
            for (i, o) in outcomes.into_iter().enumerate() {
                let o = o.expect("every pair tried").unwrap();
                let want = match (concurrency, i) {
                    (_, 7) => Relocation::DestinationTaken,
                    (_, 300) => Relocation::SourceGone,
                    (0, _) => Relocation::Moved,
                    _ => Relocation::SourceGone, // moved by the first round
                };
                assert_eq!(o, want, "pair {i} at concurrency {concurrency}");
            }
        }
        for i in (0..300).filter(|&i| i != 7) {
            assert_eq!(
                fs::read_to_string(dirs[2].join(format!("f{i}"))).unwrap(),
                i.to_string()
            );
        }
        assert_eq!(fs::read(dirs[1].join("f7")).unwrap(), b"7");
    }

    #[test]
    fn nothing_is_tried_after_the_deadline() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        fs::write(&src, b"x").unwrap();
        let outcomes = relocate_many(&[(&src, &dst)], 4, Some(Instant::now()));
        assert!(outcomes[0].is_none());
        assert!(src.exists() && !dst.exists());
    }

    #[test]
    fn source_directories_take_turns() {
        let pairs: Vec<(PathBuf, PathBuf)> = ["a/1", "a/2", "a/3", "b/1", "c/1", "b/2"]
            .iter()
            .map(|s| (PathBuf::from(s), PathBuf::from("home").join(s)))
            .collect();
        assert_eq!(by_source_directory_in_turn(&pairs), vec![0, 3, 4, 1, 5, 2]);
    }

    #[test]
    fn racing_movers_leave_exactly_one_copy() {
        let d = tempfile::tempdir().unwrap();
        for round in 0..50 {
            let (src, dst) = (
                d.path().join(format!("s{round}")),
                d.path().join(format!("d{round}")),
            );
            fs::write(&src, round.to_string()).unwrap();
            let outcomes: Vec<Relocation> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..4)
                    .map(|_| s.spawn(|| relocate(&src, &dst).unwrap()))
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            assert!(
                !outcomes.contains(&Relocation::DestinationTaken),
                "{outcomes:?}"
            );
            let moved = outcomes.iter().filter(|o| **o == Relocation::Moved).count();
            assert_eq!(moved, 1, "{outcomes:?}");
            assert!(!src.exists());
            assert_eq!(fs::read_to_string(&dst).unwrap(), round.to_string());
        }
    }
}
