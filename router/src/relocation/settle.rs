//! Settling a move whose destination exists: the newer version stays (the destination wins
//! a tie), placed by a rename from a private directory beside it; one owner's file never
//! takes another's name. And the same on a file system without hard links.

use super::outcome::{changing, same_entry_error, same_owner, Relocation};
use super::single::Next;
use super::stamp::{fresh_look, look, Stamp};
use super::{remove_private, same_entry, PrivateDir, ROUNDS};
use std::fs;
use std::io;
use std::path::Path;

// Linux's numbers: what `link(2)` answers on a file system without hard links.
const EPERM: i32 = 1;
const EOPNOTSUPP: i32 = 95;

/// `dst` exists: the same file (a move cut short), an older one, or a newer one.
pub(super) fn settle(src: &Path, dst: &Path, s: Stamp) -> io::Result<Next> {
    for _ in 0..ROUNDS {
        // The link's "exists" is the server's; this client's cache of `dst` may be older, and
        // dropping the source relies on this look.
        let Some(d) = fresh_look(dst)? else {
            // Removed since the link found it: link again.
            match fs::hard_link(src, dst) {
                Ok(()) => return Ok(Next::Retire(s, Relocation::Moved)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) if source_gone(&e, src)? => return Ok(Next::Done(Relocation::SourceGone)),
                Err(e) => return Err(e),
            }
        };
        if d.same_file(&s) {
            // Two names of one file: a move cut short (finish it), unless they are one name.
            if same_entry(src, dst)? {
                return Err(same_entry_error(src, dst));
            }
            return Ok(Next::Retire(s, Relocation::Moved));
        }
        d.regular(dst)?;
        same_owner(src, &s, dst, &d)?;
        if s.newer_than(&d) {
            return replace(src, dst, &s);
        }
        return Ok(Next::Retire(s, Relocation::DroppedOlder));
    }
    Err(changing(dst))
}

/// The source is newer than `dst`: link it into a private directory made beside `dst`, under
/// `dst`'s name (`Q`), look at `dst` once more, rename `Q` over it; the source is then retired.
/// Under `dst`'s name so that a replace cut short is given back by
/// [`recover`](fn@super::recover) (the newer of `Q` and `dst` stays), even once a writer has
/// replaced the source and `Q` is the only name of its version.
fn replace(src: &Path, dst: &Path, s: &Stamp) -> io::Result<Next> {
    let Some(name) = dst.file_name() else {
        return Err(same_entry_error(src, dst));
    };
    // Used through its descriptor: a link put in place of its name sends nothing elsewhere.
    let qd = PrivateDir::beside(dst)?;
    let q = qd.join(name);
    let linked = match fs::hard_link(src, &q) {
        Ok(()) => Ok(None),
        Err(e) if source_gone(&e, src)? => Ok(Some(Next::Done(Relocation::SourceGone))),
        Err(e) if no_hard_links(&e) => Ok(Some(without_links(src, dst, s)?)),
        Err(e) => Err(e),
    };
    let result = match linked {
        Ok(None) => place_replacement(src, dst, &q),
        Ok(Some(next)) => Ok(next),
        Err(e) => Err(e),
    };
    if result.is_err() {
        let _ = fs::remove_file(&q);
    }
    // Empty unless a step failed with `Q` still in it: then it stays, for `recover`.
    if let Err(e) = qd.remove() {
        if result.is_ok() && e.kind() != io::ErrorKind::NotFound {
            return Err(e);
        }
    }
    result
}

/// `q` (in its private directory beside `dst`) is a new name of the source: rename it over
/// `dst` if it is still newer than what `dst` holds, else remove it.
fn place_replacement(src: &Path, dst: &Path, q: &Path) -> io::Result<Next> {
    // What was linked: a writer may have put a new version at the source since.
    let Some(linked) = look(q)? else {
        return Err(io::Error::other(format!(
            "{}: removed by another client while moving {} there",
            q.display(),
            src.display()
        )));
    };
    linked.regular(src)?;
    // The last look before the rename, as the server answers: between it and the rename, a
    // write landing at `dst` would be replaced (router/REFERENCE.md, "What is left to chance").
    let (go, outcome) = match fresh_look(dst)? {
        None if fresh_look(src)?.is_none() => {
            // `dst` held an older file when this replace began, and the source is gone too: a
            // delete, which removes the other shards' copies before home's (crate::delete).
            // Placed now, the replacement would bring the deleted path back; the source's
            // inode lives on wherever anything else moved it.
            remove_private(q)?;
            return Ok(Next::Done(Relocation::SourceGone));
        }
        None => (true, Relocation::Moved),
        Some(now) if now.same_file(&linked) => (false, Relocation::Moved),
        Some(now) => {
            now.regular(dst)?;
            if let Err(e) = same_owner(src, &linked, dst, &now) {
                remove_private(q)?;
                return Err(e);
            }
            (linked.newer_than(&now), Relocation::ReplacedOlder)
        }
    };
    if go {
        fs::rename(q, dst)?;
    }
    // When `dst` was already this very file (another mover placed it meanwhile), rename does
    // nothing and `q` stays: remove it.
    remove_private(q)?;
    let outcome = match (go, outcome) {
        (false, Relocation::ReplacedOlder) => Relocation::DroppedOlder,
        (_, other) => other,
    };
    Ok(Next::Retire(linked, outcome))
}

/// File systems without hard links: look at `dst`, then rename (a window between the two,
/// documented); an older source is retired as usual.
pub(super) fn without_links(src: &Path, dst: &Path, s: &Stamp) -> io::Result<Next> {
    let (outcome, replace) = match fresh_look(dst)? {
        None => (Relocation::Moved, true),
        Some(d) if d.same_file(s) => {
            if same_entry(src, dst)? {
                return Err(same_entry_error(src, dst));
            }
            return Ok(Next::Retire(*s, Relocation::Moved));
        }
        Some(d) => {
            d.regular(dst)?;
            same_owner(src, s, dst, &d)?;
            (Relocation::ReplacedOlder, s.newer_than(&d))
        }
    };
    if !replace {
        return Ok(Next::Retire(*s, Relocation::DroppedOlder));
    }
    match fs::rename(src, dst) {
        Ok(()) => Ok(Next::Done(outcome)),
        Err(e) if source_gone(&e, src)? => Ok(Next::Done(Relocation::SourceGone)),
        Err(e) => Err(e),
    }
}

/// Whether `e` (from a link or a rename of `src`) means a delete took the source: as the
/// server answers, since a LINK to a file whose last name is gone fails `ENOENT` while this
/// client's cache may still show the name.
fn source_gone(e: &io::Error, src: &Path) -> io::Result<bool> {
    Ok(e.kind() == io::ErrorKind::NotFound && fresh_look(src)?.is_none())
}

pub(super) fn no_hard_links(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(EPERM | EOPNOTSUPP))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relocation::single::finish;
    use crate::relocation::tests::{ino, names, put};
    use crate::relocation::{relocate, OtherOwners};
    use std::os::unix::fs::MetadataExt;
    use std::time::{Duration, SystemTime};

    /// Gives `path` to `uid` (the tests run as root, as the function does).
    fn own(path: &Path, uid: u32) {
        std::os::unix::fs::chown(path, Some(uid), None)
            .expect("chown: these tests run as root, as the function does");
    }

    #[test]
    fn one_owners_file_never_takes_anothers_name() {
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        // Another owner's file at home, older than the copy: not replaced.
        put(&b.join("f"), b"theirs", 10);
        own(&b.join("f"), 1000);
        put(&a.join("f"), b"planted, dated later", 20);
        let e = relocate(&a.join("f"), &b.join("f")).unwrap_err();
        let other = OtherOwners::of(&e).expect("other owners");
        assert_eq!((other.src_uid, other.dst_uid), (0, 1000));
        assert_eq!(fs::read(b.join("f")).unwrap(), b"theirs");
        assert_eq!(fs::read(a.join("f")).unwrap(), b"planted, dated later");
        // Newer than the copy: the copy is not dropped for it either.
        put(&b.join("g"), b"theirs, dated later", 30);
        own(&b.join("g"), 1000);
        put(&a.join("g"), b"mine", 20);
        let e = relocate(&a.join("g"), &b.join("g")).unwrap_err();
        assert!(OtherOwners::of(&e).is_some());
        assert_eq!(fs::read(a.join("g")).unwrap(), b"mine");
        // One owner: the latest write wins, as ever.
        put(&b.join("h"), b"older", 10);
        put(&a.join("h"), b"newer", 20);
        assert_eq!(
            relocate(&a.join("h"), &b.join("h")).unwrap(),
            Relocation::ReplacedOlder
        );
        assert_eq!(fs::read(b.join("h")).unwrap(), b"newer");
        assert_eq!(names(&a), ["f", "g"]);
        assert_eq!(names(&b), ["f", "g", "h"]);
    }

    #[test]
    fn an_older_source_is_dropped_and_a_tie_goes_home() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        for (src_secs, dst_secs) in [(10, 20), (30, 30)] {
            put(&src, b"old", src_secs);
            put(&dst, b"new", dst_secs);
            assert_eq!(relocate(&src, &dst).unwrap(), Relocation::DroppedOlder);
            assert!(!src.exists());
            assert_eq!(fs::read(&dst).unwrap(), b"new");
            assert_eq!(names(d.path()), ["b"]);
        }
    }

    #[test]
    fn a_newer_source_replaces_the_destination() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        put(&src, b"new", 20);
        put(&dst, b"old", 10);
        let newer = ino(&src);
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::ReplacedOlder);
        assert!(!src.exists());
        assert_eq!(fs::read(&dst).unwrap(), b"new");
        let m = fs::metadata(&dst).unwrap();
        assert_eq!((m.ino(), m.nlink()), (newer, 1));
        assert_eq!(names(d.path()), ["b"]);
        // Nanoseconds count.
        put(&src, b"newer by a nanosecond", 0);
        let t = SystemTime::UNIX_EPOCH + Duration::new(1_700_000_000, 1);
        fs::File::options()
            .write(true)
            .open(&src)
            .unwrap()
            .set_modified(t)
            .unwrap();
        put(&dst, b"older", 0);
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::ReplacedOlder);
        assert_eq!(fs::read(&dst).unwrap(), b"newer by a nanosecond");
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
        assert_eq!(fs::metadata(&dst).unwrap().nlink(), 1);
    }

    #[test]
    fn without_hard_links_it_looks_then_renames() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        put(&src, b"x", 10);
        let s = look(&src).unwrap().unwrap();
        assert_eq!(
            without_links(&src, &dst, &s)
                .and_then(|n| finish(&src, &dst, n))
                .unwrap(),
            Relocation::Moved
        );
        put(&src, b"older", 5);
        let s = look(&src).unwrap().unwrap();
        assert_eq!(
            without_links(&src, &dst, &s)
                .and_then(|n| finish(&src, &dst, n))
                .unwrap(),
            Relocation::DroppedOlder
        );
        put(&src, b"newer", 20);
        let s = look(&src).unwrap().unwrap();
        assert_eq!(
            without_links(&src, &dst, &s)
                .and_then(|n| finish(&src, &dst, n))
                .unwrap(),
            Relocation::ReplacedOlder
        );
        assert_eq!(fs::read(&dst).unwrap(), b"newer");
        assert_eq!(names(d.path()), ["b"]);
    }

    #[test]
    fn a_replace_whose_source_and_home_were_deleted_meanwhile_places_nothing() {
        // A replace has linked the newer source into its private directory beside home; then a
        // delete removes the source, then the older home copy (crate::delete: the other shards
        // first). Placing the replacement now would bring the deleted path back.
        let d = tempfile::tempdir().unwrap();
        let (a, b) = (d.path().join("a"), d.path().join("b"));
        fs::create_dir(&a).unwrap();
        fs::create_dir(&b).unwrap();
        let (src, dst) = (a.join("f"), b.join("f"));
        put(&src, b"newer", 20);
        let qd = PrivateDir::beside(&dst).unwrap();
        let q = qd.join("f");
        fs::hard_link(&src, &q).unwrap();
        fs::remove_file(&src).unwrap();
        assert!(matches!(
            place_replacement(&src, &dst, &q).unwrap(),
            Next::Done(Relocation::SourceGone)
        ));
        assert!(names(qd.path()).is_empty() && names(&b).len() == 1 && names(&a).is_empty());
        qd.remove().unwrap();
        // Home gone but the source still there (moved away by a client on another list, say):
        // the replacement is placed, and the source then retired as usual.
        put(&src, b"newer", 20);
        let qd = PrivateDir::beside(&dst).unwrap();
        let q = qd.join("f");
        fs::hard_link(&src, &q).unwrap();
        assert!(matches!(
            place_replacement(&src, &dst, &q).unwrap(),
            Next::Retire(_, Relocation::Moved)
        ));
        assert_eq!(fs::read(&dst).unwrap(), b"newer");
    }
}
