//! Recovering a move cut short by a crash: what its private directory holds goes back to its
//! name (the newer copy staying), or is dropped when its path was deleted meanwhile.

use super::outcome::Relocation;
use super::single::relocate;
use super::stamp::look;
use super::{parent, remove_private, PRIVATE_DIR_FLAGS};
use crate::dir::Pinned;
use crate::names::{private_kind, Private};
use rustix::fs::Mode;
use std::ffi::{OsStr, OsString};
use std::fs;
use std::io;
use std::path::Path;
use std::time::Instant;

/// What a recovery of a cut-short move's private directory did ([`recover`]).
#[derive(Debug, Default)]
pub struct Recovered {
    /// Entries given back to their name, or dropped as older than what holds it now.
    pub settled: u64,
    /// Entries dropped because their path was nowhere: a client deleted it while the move
    /// held this copy out of sight (or held it as a second name of the file it deleted).
    pub deleted: u64,
    /// Entries left where they are, each with why: not a regular file, a name its lookup
    /// refused, a step that failed. Each stops only itself. The first [`LEFT_NAMED_AT_MOST`]
    /// only: the rest are counted in [`Recovered::left_unnamed`], so that a directory planted
    /// with millions of names costs no memory per name.
    pub left: Vec<(OsString, io::Error)>,
    /// Entries left beyond the ones [`Recovered::left`] names.
    pub left_unnamed: u64,
    /// The deadline came first: what was not reached stays in the private directory, which
    /// stays, for a later recovery to go on (nothing is lost or dropped for it).
    pub unfinished: bool,
}

impl Recovered {
    /// Every entry left, named or not.
    pub fn left_count(&self) -> u64 {
        self.left.len() as u64 + self.left_unnamed
    }

    fn leave(&mut self, name: OsString, e: io::Error) {
        if self.left.len() < LEFT_NAMED_AT_MOST {
            self.left.push((name, e));
        } else {
            self.left_unnamed += 1;
        }
    }
}

/// Entries of what a recovery leaves that it names ([`Recovered::left`]): enough for a
/// person to see what is wrong; the rest are counted.
pub const LEFT_NAMED_AT_MOST: usize = 64;

/// How deep [`recover`] follows a recovery's own cut-short move inside the directory it
/// recovers (each retire makes its private directory beside what it takes).
const NESTED_AT_MOST: usize = 4;

/// Puts back what a move cut short left in its private directory `pd` (its retire died after
/// taking the source away, before settling it). The entry kept its name inside `pd` for this.
///
/// `found(name)` answers, as the server does now, whether the name's logical path is a file
/// anywhere a router would look (every listed shard, `pd`'s own directory among them). Where
/// it is, the entry goes back to its own name in `pd`'s directory by [`relocate`], so the
/// newer of it and whatever is there stays and nothing is replaced by an older copy. Where it
/// is nowhere, a client deleted the path after the move took this name out of sight (the move
/// had linked it home first, or it is a version the delete could not see): giving it back
/// would bring a deleted file back, so it is dropped. A recovery's own cut-short move nested
/// in `pd` is recovered first. An entry that can't be settled is left, named in
/// [`Recovered::left`], and the rest go on; `pd` is removed once empty.
///
/// `pd` is opened without following a link (one there is an error, and nothing is done), and
/// read and emptied through that descriptor ([`Pinned`]), as is each nested one: a task that
/// swaps a private directory's name for a link meanwhile sends nothing elsewhere.
///
/// Its names are read as they come, never gathered: memory stays a listing's buffer whatever
/// a directory holds.
///
/// Only for a `pd` no move is using: one unchanged for an hour ([`crate::dir::abandoned`]).
pub fn recover(
    pd: &Path,
    mut found: impl FnMut(&OsStr) -> io::Result<bool>,
) -> io::Result<Recovered> {
    let mut done = Recovered::default();
    let pin = open_private(pd)?;
    let mut at = Recovery {
        found: &mut found,
        until: None,
        done: &mut done,
    };
    at.recover_in(pin.path(), parent(pd), pd, 0)?;
    Ok(done)
}

/// [`recover`] of the private directory named `name` in `dir`, read through `pd`: for a
/// caller that names the private directory and its holder by paths of its own that resolve to
/// the very directories it walked (the function's, [`Pinned`]: `pd` opened without following a
/// link), not to what their paths point to now. Once `until` has come it stops between two
/// entries ([`Recovered::unfinished`]): what it did not reach stays in `pd`, which stays.
pub fn recover_pinned(
    pd: &Path,
    dir: &Path,
    name: &OsStr,
    until: Option<Instant>,
    mut found: impl FnMut(&OsStr) -> io::Result<bool>,
) -> io::Result<Recovered> {
    let mut done = Recovered::default();
    let mut at = Recovery {
        found: &mut found,
        until,
        done: &mut done,
    };
    at.recover_in(pd, dir, &dir.join(name), 0)?;
    Ok(done)
}

/// One recovery under way: how it asks where a path is, its deadline, what it did.
struct Recovery<'a> {
    found: &'a mut dyn FnMut(&OsStr) -> io::Result<bool>,
    until: Option<Instant>,
    done: &'a mut Recovered,
}

impl Recovery<'_> {
    /// The deadline has come: the recovery stops, and says so.
    fn out_of_time(&mut self) -> bool {
        let out = self.until.is_some_and(|t| Instant::now() >= t);
        self.done.unfinished |= out;
        out
    }

    /// Recovers what `pd` holds into `dir`, then removes `pd`, by the path `remove`, once
    /// empty. `pd` names the open directory itself ([`Pinned::path`]).
    fn recover_in(&mut self, pd: &Path, dir: &Path, remove: &Path, depth: usize) -> io::Result<()> {
        // A recovery's own retire that died: what it holds goes back to its name in `pd`
        // first.
        for entry in fs::read_dir(pd)? {
            let name = entry?.file_name();
            let kind = private_kind(name.as_encoded_bytes());
            if kind.is_none() {
                continue;
            }
            if self.out_of_time() {
                return Ok(());
            }
            if let Err(e) = self.nested(pd, &name, kind, depth) {
                self.done.leave(name, e);
            }
        }
        for entry in fs::read_dir(pd)? {
            let name = entry?.file_name();
            if private_kind(name.as_encoded_bytes()).is_some() {
                continue;
            }
            if self.out_of_time() {
                return Ok(());
            }
            let found = (self.found)(&name);
            match recover_entry(&pd.join(&name), &dir.join(&name), found) {
                Ok(Some(Relocation::SourceGone)) => {}
                Ok(Some(_)) => self.done.settled += 1,
                Ok(None) => self.done.deleted += 1,
                Err(e) => self.done.leave(name, e),
            }
        }
        match fs::remove_dir(remove) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            // Not empty: what is left is named in `done.left`.
            Err(_) if self.done.left_count() > 0 => Ok(()),
            // Names this listing did not meet (a server's listing of a directory emptied while
            // it is read may skip some): they wait for a later recovery.
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::NOTEMPTY.raw_os_error()) => {
                self.done.unfinished = true;
                Ok(())
            }
            Err(e) => Err(e),
            Ok(()) => Ok(()),
        }
    }

    /// The private name `name` met in `pd`: a recovery's own cut-short move, given back into
    /// `pd`, which is no settling yet (that comes after); anything else is left.
    fn nested(
        &mut self,
        pd: &Path,
        name: &OsStr,
        kind: Option<Private>,
        depth: usize,
    ) -> io::Result<()> {
        let p = pd.join(name);
        match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() && kind == Some(Private::Moving) && depth < NESTED_AT_MOST => {
                // Read through its own descriptor, opened without following a link. What it
                // leaves is named under this one's name.
                let nested = open_private(&p)?;
                let mut inner = Recovered::default();
                let mut at = Recovery {
                    found: &mut *self.found,
                    until: self.until,
                    done: &mut inner,
                };
                let r = at.recover_in(nested.path(), pd, &p, depth + 1);
                self.done.deleted += inner.deleted;
                self.done.unfinished |= inner.unfinished;
                self.done.left_unnamed += inner.left_unnamed;
                for (n, e) in inner.left {
                    self.done.leave(Path::new(name).join(n).into_os_string(), e);
                }
                r
            }
            Ok(_) => Err(io::Error::other("a private name no move leaves here")),
            Err(e) => Err(e),
        }
    }
}

/// The private directory `pd`, opened without following a link, and pinned.
fn open_private(pd: &Path) -> io::Result<Pinned> {
    let fd = rustix::fs::open(pd, PRIVATE_DIR_FLAGS, Mode::empty()).map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!(
                "{}: not opened as a directory, no link followed ({e})",
                pd.display()
            ),
        )
    })?;
    Pinned::own(fd, pd)
}

/// One entry of a cut-short move: given back to `name` (`Some`), or dropped because its path
/// is nowhere (`None`).
fn recover_entry(p: &Path, name: &Path, found: io::Result<bool>) -> io::Result<Option<Relocation>> {
    if found? {
        return relocate(p, name).map(Some);
    }
    // Only a regular file is dropped: anything else is not a copy a move took.
    match look(p)? {
        None => Ok(Some(Relocation::SourceGone)),
        Some(s) => {
            s.regular(p)?;
            remove_private(p)?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::names::new_private_name;
    use crate::relocation::tests::{names, put};
    use crate::relocation::NotARegularFile;
    use std::path::PathBuf;

    /// A retire that died after taking the source away: the file sits, under its own name, in
    /// a private directory beside where it was.
    fn cut_short(dir: &Path, name: &str, data: &[u8], secs: u64) -> PathBuf {
        let pd = dir.join(new_private_name(Private::Moving));
        fs::create_dir(&pd).unwrap();
        put(&pd.join(name), data, secs);
        pd
    }

    #[test]
    fn a_cut_short_retire_is_given_back_and_the_newer_copy_stays() {
        let d = tempfile::tempdir().unwrap();
        // Nothing at the name: the version goes back.
        let pd = cut_short(d.path(), "a", b"only copy", 10);
        assert_eq!(recover(&pd, |_| Ok(true)).unwrap().settled, 1);
        assert_eq!(fs::read(d.path().join("a")).unwrap(), b"only copy");
        // A newer version written there since: the cut-short one is the older copy, dropped.
        put(&d.path().join("b"), b"newer", 30);
        let pd2 = cut_short(d.path(), "b", b"older", 20);
        assert_eq!(recover(&pd2, |_| Ok(true)).unwrap().settled, 1);
        assert_eq!(fs::read(d.path().join("b")).unwrap(), b"newer");
        // An older version there: the cut-short one replaces it.
        put(&d.path().join("c"), b"older", 10);
        let pd3 = cut_short(d.path(), "c", b"newer", 20);
        assert_eq!(recover(&pd3, |_| Ok(true)).unwrap().settled, 1);
        assert_eq!(fs::read(d.path().join("c")).unwrap(), b"newer");
        // No private directory or name is left.
        assert_eq!(names(d.path()), ["a", "b", "c"]);
    }

    #[test]
    fn a_cut_short_replace_is_given_back_by_the_name_it_was_to_replace() {
        // A replace that died after linking the source into its private directory beside
        // home, under home's name; a writer then replaced the source, so that private name is
        // the only one of the version linked.
        let d = tempfile::tempdir().unwrap();
        let (src_dir, home) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir(&src_dir).unwrap();
        fs::create_dir(&home).unwrap();
        put(&home.join("f"), b"home, older", 10);
        put(&src_dir.join("f"), b"linked", 20);
        let qd = home.join(new_private_name(Private::Moving));
        fs::create_dir(&qd).unwrap();
        fs::hard_link(src_dir.join("f"), qd.join("f")).unwrap();
        put(&src_dir.join("writer.tmp"), b"the writer's", 30);
        fs::rename(src_dir.join("writer.tmp"), src_dir.join("f")).unwrap();
        // Newer than home: it replaces home.
        assert_eq!(recover(&qd, |_| Ok(true)).unwrap().settled, 1);
        assert_eq!(fs::read(home.join("f")).unwrap(), b"linked");
        // Older than home: dropped.
        put(&home.join("g"), b"home, newer", 40);
        let qd = cut_short(&home, "g", b"linked", 20);
        assert_eq!(recover(&qd, |_| Ok(true)).unwrap().settled, 1);
        assert_eq!(fs::read(home.join("g")).unwrap(), b"home, newer");
        assert_eq!(names(&home), ["f", "g"]);
        assert_eq!(fs::read(src_dir.join("f")).unwrap(), b"the writer's");
    }

    #[test]
    fn a_cut_short_move_of_a_path_deleted_since_is_not_brought_back() {
        // The move linked the file home, then its retire took the source's name into its
        // private directory and died. A client then deleted the path (at home: the only name
        // it could see), and wrote another path in the same directory.
        let d = tempfile::tempdir().unwrap();
        let (src_dir, home) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir(&src_dir).unwrap();
        fs::create_dir(&home).unwrap();
        put(&src_dir.join("f"), b"deleted", 10);
        fs::hard_link(src_dir.join("f"), home.join("f")).unwrap();
        let pd = src_dir.join(new_private_name(Private::Moving));
        fs::create_dir(&pd).unwrap();
        fs::rename(src_dir.join("f"), pd.join("f")).unwrap();
        // A version a writer renamed over the source meanwhile, taken by the same retire, of
        // a path deleted since: the delete came after it, so it goes too.
        put(&pd.join("g"), b"hidden, then deleted", 20);
        // And one whose path is still a file somewhere: given back.
        put(&pd.join("h"), b"the only copy", 20);
        put(&home.join("h"), b"older", 5);
        fs::remove_file(home.join("f")).unwrap();
        let found = |name: &OsStr| {
            Ok(look(&src_dir.join(name))?.is_some() || look(&home.join(name))?.is_some())
        };
        let r = recover(&pd, found).unwrap();
        assert_eq!((r.settled, r.deleted, r.left.len()), (1, 2, 0), "{r:?}");
        assert_eq!(names(&src_dir), ["h"]);
        assert_eq!(fs::read(src_dir.join("h")).unwrap(), b"the only copy");
        assert_eq!(names(&home), ["h"]);
    }

    #[test]
    fn a_private_directory_that_is_a_link_is_never_followed() {
        // A task planted links by private names: one given to `recover` itself, one nested in
        // the directory it recovers; both to a directory holding files of the names a move
        // leaves.
        let d = tempfile::tempdir().unwrap();
        let victim = d.path().join("victim");
        fs::create_dir(&victim).unwrap();
        put(&victim.join("a"), b"the victim's", 40);
        let planted = d.path().join(new_private_name(Private::Moving));
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(recover(&planted, |_| Ok(true)).is_err());
        let pd = cut_short(d.path(), "b", b"only copy", 10);
        let nested = pd.join(new_private_name(Private::Moving));
        std::os::unix::fs::symlink(&victim, &nested).unwrap();
        let r = recover(&pd, |_| Ok(true)).unwrap();
        assert_eq!((r.settled, r.deleted, r.left.len()), (1, 0, 1), "{r:?}");
        assert_eq!(names(&victim), ["a"]);
        assert_eq!(fs::read(victim.join("a")).unwrap(), b"the victim's");
        assert!(!d.path().join("a").exists());
        assert_eq!(fs::read(d.path().join("b")).unwrap(), b"only copy");
    }

    #[test]
    fn what_a_recovery_cannot_settle_stops_only_itself() {
        let d = tempfile::tempdir().unwrap();
        let pd = cut_short(d.path(), "a", b"only copy", 10);
        // A link and a FIFO planted in it, a name whose home is a directory, and a
        // recovery's own cut-short move nested in it.
        std::os::unix::fs::symlink("/etc/passwd", pd.join("link")).unwrap();
        rustix::fs::mknodat(
            rustix::fs::CWD,
            pd.join("fifo"),
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        fs::create_dir(d.path().join("dir")).unwrap();
        put(&pd.join("dir"), b"home is a directory", 10);
        let nested = pd.join(new_private_name(Private::Moving));
        fs::create_dir(&nested).unwrap();
        put(&nested.join("b"), b"nested", 10);
        let r = recover(&pd, |_| Ok(true)).unwrap();
        assert_eq!((r.settled, r.deleted), (2, 0), "{r:?}");
        let mut left: Vec<_> = r.left.iter().map(|(n, _)| n.to_str().unwrap()).collect();
        left.sort();
        assert_eq!(left, ["dir", "fifo", "link"]);
        assert!(
            NotARegularFile::of(&r.left.iter().find(|(n, _)| n == "link").unwrap().1).is_some()
        );
        assert_eq!(fs::read(d.path().join("a")).unwrap(), b"only copy");
        assert_eq!(fs::read(d.path().join("b")).unwrap(), b"nested");
        // What is left stays in the private directory, nothing followed or opened.
        assert_eq!(names(&pd), ["dir", "fifo", "link"]);
        assert_eq!(fs::read(pd.join("dir")).unwrap(), b"home is a directory");
    }

    /// A private directory planted with this many names (the function's tests plant as many):
    /// enough that gathering every name would show, few enough to make in a few seconds.
    const PLANTED: usize = 200_000;

    /// A directory for a planted one: in memory where the host has it (`/dev/shm`), where
    /// 200,000 names take seconds, not the minutes a loaded disk can take.
    fn roomy_tempdir() -> tempfile::TempDir {
        tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap())
    }

    #[test]
    fn a_give_back_of_a_planted_directory_stops_at_its_deadline_and_loses_nothing() {
        let d = roomy_tempdir();
        let pd = d.path().join(new_private_name(Private::Moving));
        fs::create_dir(&pd).unwrap();
        for i in 0..PLANTED {
            fs::File::create(pd.join(format!("{i}"))).unwrap();
        }
        let open = |p: &Path| rustix::fs::open(p, PRIVATE_DIR_FLAGS, Mode::empty()).unwrap();
        let pin = Pinned::own(open(&pd), &pd).unwrap();
        let holder = Pinned::own(open(d.path()), d.path()).unwrap();
        let name = pd.file_name().unwrap().to_os_string();
        // Each recovery's deadline comes while the thousandth name is asked about.
        let recover_some = || {
            let (until, mut asked) = (Instant::now() + std::time::Duration::from_secs(2), 0);
            let found = |_: &OsStr| {
                asked += 1;
                while asked == 1000 && Instant::now() < until {
                    std::thread::sleep(until - Instant::now());
                }
                Ok(true)
            };
            recover_pinned(pin.path(), holder.path(), &name, Some(until), found).unwrap()
        };
        // Nothing lost: each name is given back or still in the private directory.
        let given_back_or_kept = || {
            let back = fs::read_dir(d.path()).unwrap().count() as u64 - 1;
            (back, back + fs::read_dir(&pd).unwrap().count() as u64)
        };
        // A later recovery goes on where the first stopped.
        for back in [1000, 2000] {
            let r = recover_some();
            assert!(r.unfinished, "{r:?}");
            assert_eq!(
                (r.settled, r.deleted, r.left_count()),
                (1000, 0, 0),
                "{r:?}"
            );
            assert_eq!(given_back_or_kept(), (back, PLANTED as u64));
        }
    }

    #[test]
    fn what_a_recovery_leaves_is_named_up_to_a_bound_and_counted() {
        let d = tempfile::tempdir().unwrap();
        let pd = cut_short(d.path(), "a", b"only copy", 10);
        for i in 0..LEFT_NAMED_AT_MOST + 5 {
            std::os::unix::fs::symlink("/etc/passwd", pd.join(format!("link-{i}"))).unwrap();
        }
        let r = recover(&pd, |_| Ok(true)).unwrap();
        assert_eq!((r.settled, r.left.len()), (1, LEFT_NAMED_AT_MOST), "{r:?}");
        assert_eq!(
            (r.left_unnamed, r.left_count()),
            (5, LEFT_NAMED_AT_MOST as u64 + 5)
        );
        assert!(!r.unfinished);
        assert_eq!(fs::read(d.path().join("a")).unwrap(), b"only copy");
    }
}
