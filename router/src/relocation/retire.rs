//! Retiring a move's source: renamed into a private directory, under its own name, and
//! settled from the server's listing of it: the file expected is unlinked, a version a
//! writer put there meanwhile ends at the destination if it is newer.

use super::outcome::{changing, same_entry_error, same_owner, OtherOwners, Relocation};
use super::settle::no_hard_links;
use super::stamp::{fresh_look, look, Stamp};
use super::{remove_private, PrivateDir, ROUNDS};
use std::fs;
use std::io;
use std::path::Path;

/// Removes the source by a name no writer uses: renames it into a private directory made for
/// this move in its directory (`.efs-router-<16 hex>.moving/`, keeping its name), asks the
/// server what the rename took, and unlinks it if it is `expected`; a newer version found
/// there instead ends at `dst` if it is newer than what `dst` holds, and is dropped if not.
/// The mover whose rename succeeds reports `outcome`; one that finds the source gone reports
/// [`Relocation::SourceGone`], so racing movers count a move once.
///
/// Why a directory, and a listing: over NFS, `lstat` of the renamed name answers from this
/// client's cache, which may still hold the version it looked at while the rename took a newer
/// one a writer put there since (measured: it even opens the old bytes). The listing of a
/// directory that holds only this file is the server's answer, and it refreshes the cache's
/// entry for the name (docs/design.md fact 13).
///
/// The private directory is used through its descriptor ([`PrivateDir`]): a task that swaps
/// its name for a link meanwhile sends nothing elsewhere.
pub(crate) fn retire(
    src: &Path,
    dst: &Path,
    expected: &Stamp,
    outcome: Relocation,
) -> io::Result<Relocation> {
    let Some(name) = src.file_name() else {
        return Err(same_entry_error(src, dst));
    };
    let pd = match PrivateDir::beside(src) {
        Ok(pd) => pd,
        // The source's directory is gone, and the source with it.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Relocation::SourceGone),
        Err(e) => return Err(e),
    };
    let p = pd.join(name);
    let result = match fs::rename(src, &p) {
        Ok(()) => listed_inode(pd.path(), &p)
            .and_then(|ino| settle_taken(src, dst, &p, ino, expected, outcome)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Relocation::SourceGone),
        Err(e) => Err(e),
    };
    // Empty unless a step failed with the file still in it: then it stays, for the next
    // rebalance to find (`dir::abandoned`), never hidden by a removal here.
    if let Err(e) = pd.remove() {
        if result.is_ok() && e.kind() != io::ErrorKind::NotFound {
            return Err(e);
        }
    }
    result
}

/// `p`, in a private directory whose listing (the server's answer) gave `seen_ino` as its inode
/// (`None`: not there), holds what a retire's rename took from `src`: unlinked if it is the
/// file `expected`, else a writer's version, placed at `dst` if newer than what `dst` holds,
/// dropped if not.
pub(crate) fn settle_taken(
    src: &Path,
    dst: &Path,
    p: &Path,
    seen_ino: Option<u64>,
    expected: &Stamp,
    outcome: Relocation,
) -> io::Result<Relocation> {
    let Some(ino) = seen_ino else {
        return Ok(outcome);
    };
    // The server's inode is the identity check: the private directory is on the source's
    // file system, so the device is the expected one's.
    if ino == expected.ino {
        remove_private(p)?;
        return Ok(outcome);
    }
    // A writer renamed a new version over the source after it was looked at. The listing
    // has refreshed this client's entry for `p`, so `lstat` answers for that version.
    let Some(taken) = look(p)? else {
        return Ok(outcome);
    };
    if taken.ino != ino {
        // The cache still disagrees with the server: decide nothing (a link back would link
        // the cached file), and leave the version where the next move finds it.
        return Err(io::Error::other(format!(
            "{}: this client's cache and the server disagree on the file taken from {}; left there",
            p.display(),
            src.display()
        )));
    }
    if let Err(e) = taken.regular(src) {
        // Not data, and not ours: give the name back if it is still free.
        give_back(p, src);
        return Err(e);
    }
    let placed = match place(p, &taken, expected, dst) {
        // Another owner's file at home: this version goes back where it was taken from.
        Err(e) if OtherOwners::of(&e).is_some() => {
            give_back(p, src);
            return Err(e);
        }
        other => other?,
    };
    Ok(match outcome {
        Relocation::DroppedOlder if placed => Relocation::ReplacedOlder,
        other => other,
    })
}

/// The inode the server lists for `p`'s name in `pd`, read from a listing of `pd` (which holds
/// only `p`): `None` when it is not there.
fn listed_inode(pd: &Path, p: &Path) -> io::Result<Option<u64>> {
    let name = p.file_name();
    for entry in fs::read_dir(pd)? {
        let entry = entry?;
        if Some(entry.file_name().as_os_str()) == name {
            return Ok(Some(std::os::unix::fs::DirEntryExt::ino(&entry)));
        }
    }
    Ok(None)
}

/// Puts `p` back at `src` if that name is still free (`link` never replaces), then removes `p`.
fn give_back(p: &Path, src: &Path) {
    if fs::hard_link(p, src).is_ok() {
        let _ = fs::remove_file(p);
    }
}

/// The private file `p` holds the version `taken`: it ends at `dst` if `dst` has no file, an
/// older one, or still the file `expected` that the move took from the source before `taken`
/// was put under the source's name; otherwise it is removed. True when it was placed.
fn place(p: &Path, taken: &Stamp, expected: &Stamp, dst: &Path) -> io::Result<bool> {
    for _ in 0..ROUNDS {
        match fresh_look(dst)? {
            None => match fs::hard_link(p, dst) {
                Ok(()) => {
                    remove_private(p)?;
                    return Ok(true);
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) if no_hard_links(&e) => {
                    fs::rename(p, dst)?;
                    return Ok(true);
                }
                Err(e) => return Err(e),
            },
            Some(d) if d.same_file(taken) => {
                remove_private(p)?;
                return Ok(true);
            }
            Some(d) => {
                d.regular(dst)?;
                same_owner(p, taken, dst, &d)?;
                // `dst` still holding `expected`, `taken` replaced it under the source's name:
                // the later write whatever the clocks say (two writes in one clock tick share a
                // modification time, and a tie would drop the newest version).
                if d.same_file(expected) || taken.newer_than(&d) {
                    fs::rename(p, dst)?;
                    remove_private(p)?; // left by rename if `dst` became this file meanwhile
                    return Ok(true);
                }
                remove_private(p)?;
                return Ok(false);
            }
        }
    }
    Err(changing(dst))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relocation::tests::{names, put};

    #[test]
    fn a_version_written_over_the_source_during_the_move_is_kept() {
        // The state after `link(src, dst)` when a writer then renames a new version over src:
        // retiring the source must find the new version in its private name and place it.
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        put(&src, b"linked", 10);
        let linked = look(&src).unwrap().unwrap();
        fs::hard_link(&src, &dst).unwrap();
        let tmp = d.path().join("writer.tmp");
        put(&tmp, b"written after", 20);
        fs::rename(&tmp, &src).unwrap();
        assert_eq!(
            retire(&src, &dst, &linked, Relocation::Moved).unwrap(),
            Relocation::Moved
        );
        assert_eq!(fs::read(&dst).unwrap(), b"written after");
        assert_eq!(names(d.path()), ["b"]);

        // Written within the clock tick of the linked version (the same modification time):
        // it came later under the source's name, so it is the one kept.
        fs::remove_file(&dst).unwrap();
        put(&src, b"linked", 10);
        let linked = look(&src).unwrap().unwrap();
        fs::hard_link(&src, &dst).unwrap();
        put(&tmp, b"same tick, later", 10);
        fs::rename(&tmp, &src).unwrap();
        assert_eq!(
            retire(&src, &dst, &linked, Relocation::Moved).unwrap(),
            Relocation::Moved
        );
        assert_eq!(fs::read(&dst).unwrap(), b"same tick, later");
        assert_eq!(names(d.path()), ["b"]);

        // The new version is older than what home holds by then (a write at home): dropped.
        put(&src, b"linked", 10);
        let linked = look(&src).unwrap().unwrap();
        fs::remove_file(&dst).unwrap();
        fs::hard_link(&src, &dst).unwrap();
        put(&tmp, b"stale", 15);
        fs::rename(&tmp, &src).unwrap();
        let home = d.path().join("home.tmp");
        put(&home, b"home write", 30);
        fs::rename(&home, &dst).unwrap();
        assert_eq!(
            retire(&src, &dst, &linked, Relocation::Moved).unwrap(),
            Relocation::Moved
        );
        assert_eq!(fs::read(&dst).unwrap(), b"home write");
        assert_eq!(names(d.path()), ["b"]);

        // Dropping an older source, a newer version written over it meanwhile replaces home.
        put(&src, b"old", 10);
        let compared = look(&src).unwrap().unwrap();
        put(&dst, b"home", 20);
        put(&tmp, b"newest", 30);
        fs::rename(&tmp, &src).unwrap();
        assert_eq!(
            retire(&src, &dst, &compared, Relocation::DroppedOlder).unwrap(),
            Relocation::ReplacedOlder
        );
        assert_eq!(fs::read(&dst).unwrap(), b"newest");
        assert_eq!(names(d.path()), ["b"]);
    }
}
