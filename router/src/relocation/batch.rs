//! The function's moves in bulk ([`relocate_many`]): each move decides as
//! [`relocate`](super::relocate) does, but the retires share private directories and their
//! listings.
//!
//! A single move makes a private directory in the source's directory, renames the source into
//! it, lists it (the server's answer of what the rename took, docs/design.md fact 13), unlinks
//! and removes the directory: CREATE, RENAME, READDIR, REMOVE, REMOVE, and the GETATTRs and
//! ACCESS of a new directory, about twice the round trips of the move itself. Here each worker
//! thread keeps one private directory per source directory, renames every source it retires
//! into it under its own name, and settles them all from one listing when it holds
//! [`TAKEN_AT_MOST`] or has no more work: per move that leaves LINK, RENAME and REMOVE, the
//! directory's CREATE, READDIR and RMDIR shared by up to [`TAKEN_AT_MOST`] moves.
//!
//! Why one directory per worker: Linux holds a directory's lock through a rename into it and
//! an unlink in it, so unlinks in a directory that other workers rename into would wait for
//! their renames; each worker's unlinks go to its own directory, and overlap the other
//! workers' links and renames. What is left under the source's lock is each move's RENAME and
//! the shared CREATE and RMDIR.
//!
//! Each private directory is made and checked as [`PrivateDir`] does, and used only through
//! its descriptor: a task that swaps its name for a link while the worker holds it sends no
//! rename, listing or unlink elsewhere. So a batch holds a descriptor for each worker's
//! directory in each source directory until it ends: at most one per pair.
//!
//! A kill at any point leaves each taken source in a private directory under its own name,
//! which [`recover`](fn@super::recover) gives back (the newer copy staying), as it does for a
//! single move's.

use super::outcome::Relocation;
use super::retire::{retire, settle_taken};
use super::single::{check_names, link_or_settle, Next};
use super::stamp::{fresh_look, look, Stamp};
use super::{parent, PrivateDir};
use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::fs;
use std::io;
use std::os::unix::fs::DirEntryExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// How many taken sources a worker's private directory holds before it is listed and emptied:
/// what one listing answers for, and at most what a kill leaves there for `recover`.
pub(crate) const TAKEN_AT_MOST: usize = 64;

type Outcome = io::Result<Relocation>;

/// A source renamed into a private directory, settled once the directory is listed.
struct Taken {
    index: usize,
    name: OsString,
    expected: Stamp,
    outcome: Relocation,
}

/// One worker's private directory in one source directory.
struct Moving {
    dir: PrivateDir,
    taken: Vec<Taken>,
    /// The names in it now: taken, or left by a step that failed.
    names: HashSet<OsString>,
}

/// The pairs `order` names, moved by at most `most` workers, none started once `until` has
/// come; the outcome of pair `i` at index `i`, `None` for a pair not reached.
fn run<P: AsRef<Path> + Sync>(
    pairs: &[(P, P)],
    order: &[usize],
    most: usize,
    until: Option<Instant>,
) -> Vec<Option<Outcome>> {
    crate::pool::workers(
        pairs.len(),
        order,
        most,
        until,
        || Worker {
            pairs,
            dirs: HashMap::new(),
            spent: Vec::new(),
            done: Vec::new(),
        },
        |w, i| {
            if let Some(outcome) = w.take(i) {
                w.done.push((i, outcome));
            }
        },
        Worker::finish,
    )
}

struct Worker<'a, P> {
    pairs: &'a [(P, P)],
    /// By source directory.
    dirs: HashMap<PathBuf, Moving>,
    /// Private directories set aside with a name left in them, removed at the end if empty.
    spent: Vec<PrivateDir>,
    done: Vec<(usize, Outcome)>,
}

impl<P: AsRef<Path>> Worker<'_, P> {
    /// Moves pair `i` up to its retire's rename: its outcome, or `None` when the source was
    /// taken into a private directory, to settle at the next [`Worker::flush`].
    fn take(&mut self, i: usize) -> Option<Outcome> {
        let pairs = self.pairs;
        let (src, dst) = (pairs[i].0.as_ref(), pairs[i].1.as_ref());
        let (expected, outcome) = match start(src, dst) {
            Ok(Next::Done(outcome)) => return Some(Ok(outcome)),
            Ok(Next::Retire(expected, outcome)) => (expected, outcome),
            Err(e) => return Some(Err(e)),
        };
        let Some(name) = src.file_name().map(OsString::from) else {
            return Some(retire(src, dst, &expected, outcome));
        };
        let dir = parent(src).to_path_buf();
        // A rename replaces what holds its new name: settle that first, or set its directory
        // aside when a failed step left it there.
        if self.dirs.get(&dir).is_some_and(|d| d.names.contains(&name)) {
            self.flush(&dir);
            if let Some(d) = self.dirs.remove(&dir) {
                if d.names.contains(&name) {
                    self.spent.push(d.dir);
                } else {
                    self.dirs.insert(dir.clone(), d);
                }
            }
        }
        let pd = match self.moving(&dir) {
            Ok(pd) => pd,
            // The single move's retire makes its own, and answers for a missing directory.
            Err(_) => return Some(retire(src, dst, &expected, outcome)),
        };
        match fs::rename(src, pd.dir.join(&name)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return Some(Ok(Relocation::SourceGone))
            }
            Err(e) => return Some(Err(e)),
        }
        pd.names.insert(name.clone());
        pd.taken.push(Taken {
            index: i,
            name,
            expected,
            outcome,
        });
        if pd.taken.len() >= TAKEN_AT_MOST {
            self.flush(&dir);
        }
        None
    }

    /// This worker's private directory in `dir`, made if need be.
    fn moving(&mut self, dir: &Path) -> io::Result<&mut Moving> {
        if !self.dirs.contains_key(dir) {
            let d = Moving {
                dir: PrivateDir::make_in(dir)?,
                taken: Vec::new(),
                names: HashSet::new(),
            };
            self.dirs.insert(dir.to_path_buf(), d);
        }
        Ok(self.dirs.get_mut(dir).expect("just made"))
    }

    /// Settles what the private directory of `dir` holds, from one listing of it.
    fn flush(&mut self, dir: &Path) {
        let Some(d) = self.dirs.get_mut(dir) else {
            return;
        };
        let taken = std::mem::take(&mut d.taken);
        if taken.is_empty() {
            return;
        }
        let d = &self.dirs[dir].dir;
        let inodes = match listed_inodes(d.path()) {
            Ok(inodes) => inodes,
            Err(e) => {
                // Nothing is decided without the server's answer: the sources stay in the
                // private directory, under their names, for `recover`.
                for t in taken {
                    let e = io::Error::new(
                        e.kind(),
                        format!(
                            "{}: not listed ({e}); the source is left there",
                            d.named().display()
                        ),
                    );
                    self.done.push((t.index, Err(e)));
                }
                return;
            }
        };
        let (pairs, mut settled) = (self.pairs, Vec::with_capacity(taken.len()));
        for t in taken {
            let (src, dst) = (pairs[t.index].0.as_ref(), pairs[t.index].1.as_ref());
            let seen_ino = inodes.get(&t.name).copied();
            let r = settle_taken(src, dst, &d.join(&t.name), seen_ino, &t.expected, t.outcome);
            if r.is_ok() {
                settled.push(t.name);
            }
            self.done.push((t.index, r));
        }
        if let Some(d) = self.dirs.get_mut(dir) {
            for name in settled {
                d.names.remove(&name);
            }
        }
    }

    /// Settles everything taken and removes the private directories. One a failed step left
    /// a source in stays, for `recover`; so does one whose removal failed, empty, until then.
    fn finish(mut self) -> Vec<(usize, Outcome)> {
        let dirs: Vec<PathBuf> = self.dirs.keys().cloned().collect();
        for dir in &dirs {
            self.flush(dir);
        }
        let spent = self.dirs.into_values().map(|d| d.dir).chain(self.spent);
        for pd in spent {
            let _ = pd.remove();
        }
        self.done
    }
}

/// The look and the link of a move. The look is this client's cached answer: nothing is
/// removed on it (what the retire removes is decided by the listing, and `dst` is looked at
/// as the server answers before anything is dropped or replaced), and the walk that found the
/// source has just fetched it. A miss is confirmed with the server before it is believed.
fn start(src: &Path, dst: &Path) -> io::Result<Next> {
    check_names(src, dst)?;
    let s = match look(src)? {
        Some(s) => s,
        None => match fresh_look(src)? {
            Some(s) => s,
            None => return Ok(Next::Done(Relocation::SourceGone)),
        },
    };
    link_or_settle(src, dst, s)
}

/// The server's inode for each name in the private directory `pd`: one listing.
fn listed_inodes(pd: &Path) -> io::Result<HashMap<OsString, u64>> {
    let mut inodes = HashMap::new();
    for entry in fs::read_dir(pd)? {
        let entry = entry?;
        inodes.insert(entry.file_name(), entry.ino());
    }
    Ok(inodes)
}

/// Moves each `(src, dst)` pair as [`relocate`](super::relocate) does, `concurrency` moves at a
/// time, and gives each outcome in the order of `pairs`: `None` for a pair not tried because
/// `until` came first. The same pair twice is safe (the second finds the source gone).
///
/// How it saves round trips (router/REFERENCE.md, "Many moves at once"): the first look at each
/// source is this client's cached one, a miss confirmed with the server; and each worker
/// retires the sources it takes into one private directory per source directory, settled from
/// one listing for up to 64 moves, so a move is a LINK, a RENAME and a REMOVE. Why at once:
/// Linux holds a directory's lock through a link, a rename or an unlink in it, so moves out of
/// one directory finish at most one rename per round trip however many run; several at a time
/// overlap one file's link into its destination, another's rename and a third's unlink (each
/// worker unlinks in its own private directory). Pairs from several source directories are
/// taken from each directory in turn, so each one's lock is busy.
pub fn relocate_many<P: AsRef<Path> + Sync>(
    pairs: &[(P, P)],
    concurrency: usize,
    until: Option<Instant>,
) -> Vec<Option<io::Result<Relocation>>> {
    let order = by_source_directory_in_turn(pairs);
    run(pairs, &order, concurrency, until)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relocation::tests::{names, put};

    /// A writer's atomic write: a new file renamed over `path`.
    fn rewrite(path: &Path, data: &[u8], secs: u64) {
        let tmp = path.with_extension("writing");
        put(&tmp, data, secs);
        fs::rename(&tmp, path).unwrap();
    }

    fn worker<P>(pairs: &[(P, P)]) -> Worker<'_, P> {
        Worker {
            pairs,
            dirs: HashMap::new(),
            spent: Vec::new(),
            done: Vec::new(),
        }
    }

    fn sorted(mut done: Vec<(usize, Outcome)>) -> Vec<Relocation> {
        done.sort_by_key(|(i, _)| *i);
        done.into_iter().map(|(_, r)| r.unwrap()).collect()
    }

    #[test]
    fn writers_versions_taken_in_one_batch_are_placed_or_dropped_by_age() {
        // A batch after its links and renames, when writers renamed new versions over two of
        // the sources between the link and the rename: one newer than home, one older than a
        // write at home since. The one listing tells them from the file linked.
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        let pairs: Vec<(PathBuf, PathBuf)> = (0..3)
            .map(|i| (a.join(format!("f{i}")), b.join(format!("f{i}"))))
            .collect();
        let mut expected = Vec::new();
        for (src, dst) in &pairs {
            put(src, b"linked", 10);
            expected.push(look(src).unwrap().unwrap());
            fs::hard_link(src, dst).unwrap();
        }
        rewrite(&pairs[1].0, b"newer", 20);
        rewrite(&pairs[2].0, b"stale", 15);
        rewrite(&pairs[2].1, b"home write", 30);
        let mut w = worker(&pairs);
        for (i, (src, _)) in pairs.iter().enumerate() {
            let name = src.file_name().unwrap().to_owned();
            let pd = w.moving(&a).unwrap();
            fs::rename(src, pd.dir.join(&name)).unwrap();
            pd.names.insert(name.clone());
            pd.taken.push(Taken {
                index: i,
                name,
                expected: expected[i],
                outcome: Relocation::Moved,
            });
        }
        assert_eq!(sorted(w.finish()), [Relocation::Moved; 3]);
        let read = |i: usize| fs::read(&pairs[i].1).unwrap();
        assert_eq!(
            [read(0), read(1), read(2)],
            [&b"linked"[..], b"newer", b"home write"]
        );
        assert!(names(&a).is_empty());
        assert_eq!(names(&b), ["f0", "f1", "f2"]);
    }

    #[test]
    fn a_source_written_again_after_it_was_taken_is_not_renamed_over_it() {
        // One worker takes `a/f`; a writer puts a newer version there; the worker's next pair
        // is the same path: what its private directory holds under that name is settled
        // first, then the new version taken.
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        let pair = (a.join("f"), b.join("f"));
        let pairs = [pair.clone(), pair];
        put(&pairs[0].0, b"first", 10);
        let mut w = worker(&pairs);
        assert!(w.take(0).is_none());
        rewrite(&pairs[0].0, b"second", 20);
        assert!(w.take(1).is_none());
        assert_eq!(
            sorted(w.finish()),
            [Relocation::Moved, Relocation::ReplacedOlder]
        );
        assert_eq!(fs::read(&pairs[0].1).unwrap(), b"second");
        assert!(names(&a).is_empty());
        assert_eq!(names(&b), ["f"]);
    }

    #[test]
    fn each_worker_shares_one_private_directory_per_source_directory() {
        let d = tempfile::tempdir().unwrap();
        let dirs: Vec<PathBuf> = ["a", "b", "home"]
            .iter()
            .map(|n| d.path().join(n))
            .collect();
        for dir in &dirs {
            fs::create_dir(dir).unwrap();
        }
        let pairs: Vec<(PathBuf, PathBuf)> = (0..10)
            .map(|i| {
                let src = dirs[i % 2].join(format!("f{i}"));
                put(&src, b"x", 10);
                (src, dirs[2].join(format!("f{i}")))
            })
            .collect();
        let mut w = worker(&pairs);
        for i in 0..pairs.len() {
            assert!(w.take(i).is_none());
        }
        // Two private directories, one in each source directory, holding the sources taken.
        for dir in &dirs[..2] {
            let held = names(dir);
            assert_eq!(held.len(), 1, "{held:?}");
            assert_eq!(names(&dir.join(&held[0])).len(), 5);
        }
        assert_eq!(sorted(w.finish()), [Relocation::Moved; 10]);
        assert!(names(&dirs[0]).is_empty() && names(&dirs[1]).is_empty());
        assert_eq!(names(&dirs[2]).len(), 10);
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
            put(&src, i.to_string().as_bytes(), 10);
            pairs.push((src, dirs[2].join(format!("f{i}"))));
        }
        put(&dirs[2].join("f7"), b"already home, newer", 20);
        put(&dirs[2].join("f8"), b"already home, older", 5);
        pairs.push((dirs[0].join("absent"), dirs[2].join("absent")));
        for concurrency in [0, 1, 8] {
            let outcomes = relocate_many(&pairs, concurrency, None);
            assert_eq!(outcomes.len(), pairs.len());
            for (i, o) in outcomes.into_iter().enumerate() {
                let o = o.expect("every pair tried").unwrap();
                let want = match (concurrency, i) {
                    (_, 300) => Relocation::SourceGone,
                    (0, 7) => Relocation::DroppedOlder,
                    (0, 8) => Relocation::ReplacedOlder,
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
        assert_eq!(
            fs::read(dirs[2].join("f7")).unwrap(),
            b"already home, newer"
        );
        assert!(names(&dirs[0]).is_empty() && names(&dirs[1]).is_empty());
        assert_eq!(names(&dirs[2]).len(), 300);
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
}
