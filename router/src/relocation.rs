//! Moving one file to another directory of the same file system: the latest version wins,
//! and what a move removes is always the file it looked at.
//!
//! "Newer" is the modification time, to the nanosecond; the destination (home) wins a tie.
//! The protocol (router/README.md, "Moving a file home"), in short:
//!
//! - the source is looked at first (`lstat`): gone is [`Relocation::SourceGone`]; anything but
//!   a regular file is an error ([`NotARegularFile`]), never moved;
//! - `link(src, dst)`; if that makes the name, the source is retired;
//! - if `dst` exists and is the same file, a move was cut short: the source is retired; if it is
//!   another, as new or newer, the source is an older copy and is retired
//!   ([`Relocation::DroppedOlder`]); if it is older, the source replaces it: linked into a
//!   private directory beside `dst` under `dst`'s name, `dst` looked at once more, that name
//!   renamed over `dst` ([`Relocation::ReplacedOlder`]), then the source retired;
//! - **retiring** the source never unlinks a name a writer uses: the source is renamed into a
//!   private directory (`.efs-router-<16 hex>.moving/`) in its directory, under its own name,
//!   and the directory listed (the server's answer); the file expected (the one linked or
//!   compared) is unlinked; anything else is a version a writer renamed over the source
//!   meanwhile, which ends at `dst` if it is newer than what `dst` holds then, and is dropped
//!   otherwise. [`relocate_many`] shares these directories among many moves.
//!
//! Never a copy: the bytes do not move, and the inode and its modification time stay.

use crate::cache;
use crate::names::{new_private_name, private_kind, Private};
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs;
use std::io;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::time::Instant;

// Linux's numbers: what `link(2)` answers on a file system without hard links.
const EPERM: i32 = 1;
const EOPNOTSUPP: i32 = 95;

/// How many times a move looks again at a destination that other clients keep changing
/// under it before it gives up (an error; nothing is lost, the source stays).
const ROUNDS: usize = 8;

/// What a move did. Of several clients moving the same file at once, one reports what was
/// done and the others [`Relocation::SourceGone`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Relocation {
    /// The file is at the destination and no longer at the source (the destination had no
    /// file of that name, or had this very file: a move cut short, finished).
    Moved,
    /// The destination held an older file (by modification time); the source replaced it.
    ReplacedOlder,
    /// The destination held a file as new or newer; the source was an older copy and was
    /// removed.
    DroppedOlder,
    /// Nothing at the source (another client moved or removed it, or finished this move).
    SourceGone,
}

impl Relocation {
    /// `moved`, `replaced-older`, `dropped-older` or `source-gone`, as the Python client names them.
    pub fn as_str(self) -> &'static str {
        match self {
            Relocation::Moved => "moved",
            Relocation::ReplacedOlder => "replaced-older",
            Relocation::DroppedOlder => "dropped-older",
            Relocation::SourceGone => "source-gone",
        }
    }
}

/// The error (inside an [`io::Error`] of kind `InvalidData`; see [`NotARegularFile::of`]) of a
/// move whose source or destination is a symbolic link, directory, FIFO, device or socket:
/// not data, left alone.
#[derive(Debug)]
pub struct NotARegularFile {
    pub path: PathBuf,
    /// `symbolic link`, `directory`, `FIFO`, `character device`, `block device` or `socket`.
    pub what: &'static str,
}

impl NotARegularFile {
    /// The [`NotARegularFile`] inside `e`, if that is what `e` is.
    pub fn of(e: &io::Error) -> Option<&NotARegularFile> {
        e.get_ref()?.downcast_ref()
    }
}

impl fmt::Display for NotARegularFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is a {}, not a regular file: not data, left alone",
            self.path.display(),
            self.what
        )
    }
}

impl std::error::Error for NotARegularFile {}

/// The error (inside an [`io::Error`] of kind `PermissionDenied`; see [`OtherOwners::of`]) of
/// a move whose source and destination are two files of different owners: which is newer is
/// the writers' to say (an mtime anyone can set), so neither takes the other's name and both
/// stay where they are.
#[derive(Debug)]
pub struct OtherOwners {
    pub src: PathBuf,
    pub dst: PathBuf,
    pub src_uid: u32,
    pub dst_uid: u32,
}

impl OtherOwners {
    /// The [`OtherOwners`] inside `e`, if that is what `e` is.
    pub fn of(e: &io::Error) -> Option<&OtherOwners> {
        e.get_ref()?.downcast_ref()
    }
}

impl fmt::Display for OtherOwners {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} (uid {}) and {} (uid {}) have different owners: neither replaces the other; \
             both left for a person to look at",
            self.src.display(),
            self.src_uid,
            self.dst.display(),
            self.dst_uid
        )
    }
}

impl std::error::Error for OtherOwners {}

/// An error unless `s` (at `src`) and `d` (at `dst`) have one owner: the rule for every move
/// that would replace one file by another or drop one for another.
fn same_owner(src: &Path, s: &Stamp, dst: &Path, d: &Stamp) -> io::Result<()> {
    if s.uid == d.uid {
        return Ok(());
    }
    Err(io::Error::new(
        io::ErrorKind::PermissionDenied,
        OtherOwners {
            src: src.to_path_buf(),
            dst: dst.to_path_buf(),
            src_uid: s.uid,
            dst_uid: d.uid,
        },
    ))
}

/// What a move needs to know of a file: which one it is, whose, how new, what type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    dev: u64,
    ino: u64,
    uid: u32,
    mtime: (i64, i64),
    what: Option<&'static str>,
}

impl Stamp {
    pub(crate) fn of(m: &fs::Metadata) -> Stamp {
        let t = m.file_type();
        let what = if t.is_file() {
            None
        } else if t.is_symlink() {
            Some("symbolic link")
        } else if t.is_dir() {
            Some("directory")
        } else if t.is_fifo() {
            Some("FIFO")
        } else if t.is_char_device() {
            Some("character device")
        } else if t.is_block_device() {
            Some("block device")
        } else if t.is_socket() {
            Some("socket")
        } else {
            Some("special file")
        };
        Stamp {
            dev: m.dev(),
            ino: m.ino(),
            uid: m.uid(),
            mtime: (m.mtime(), m.mtime_nsec()),
            what,
        }
    }

    pub(crate) fn mtime(&self) -> (i64, i64) {
        self.mtime
    }

    /// `None` for a regular file; otherwise what it is (`symbolic link`, `FIFO`, …).
    pub(crate) fn what(&self) -> Option<&'static str> {
        self.what
    }

    fn same_file(&self, other: &Stamp) -> bool {
        self.dev == other.dev && self.ino == other.ino
    }

    fn newer_than(&self, other: &Stamp) -> bool {
        self.mtime > other.mtime
    }

    /// An error naming `path` unless this is a regular file.
    fn regular(&self, path: &Path) -> io::Result<()> {
        match self.what {
            None => Ok(()),
            Some(what) => Err(not_regular(path, what)),
        }
    }
}

fn not_regular(path: &Path, what: &'static str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        NotARegularFile {
            path: path.to_path_buf(),
            what,
        },
    )
}

/// Moves `src` to `dst` (whose directory must exist), within one file system: the newer of
/// the two versions ends at `dst` (`dst` wins a tie), and the source name is gone. See the
/// module's documentation and router/README.md for every case.
///
/// Errors: `src` or `dst` not a regular file ([`NotARegularFile`], kind `InvalidData`);
/// `src` or `dst` named as one of the router's own files ([`crate::names`]: a write or a move in
/// progress), kind `InvalidInput`;
/// `src` and `dst` one directory entry however spelled (`./a` and `a`, `d/../d/f` and `d/f`:
/// same parent directory by device and inode, same name), kind `InvalidInput`; the file
/// system's own errors (`dst`'s directory missing: `NotFound`; two mounts: `EXDEV`).
pub fn relocate(src: &Path, dst: &Path) -> io::Result<Relocation> {
    relocate_known(src, dst, None)
}

/// [`relocate`], the source already looked at (`fstat` of the copy a read opened).
pub(crate) fn relocate_known(
    src: &Path,
    dst: &Path,
    known: Option<Stamp>,
) -> io::Result<Relocation> {
    check_names(src, dst)?;
    let s = match known {
        Some(s) => s,
        None => match fresh_look(src)? {
            Some(s) => s,
            None => return Ok(Relocation::SourceGone),
        },
    };
    finish(src, dst, link_or_settle(src, dst, s)?)
}

/// Retires the source, if that is what is left of the move, by [`retire`].
fn finish(src: &Path, dst: &Path, next: Next) -> io::Result<Relocation> {
    match next {
        Next::Done(outcome) => Ok(outcome),
        Next::Retire(expected, outcome) => retire(src, dst, &expected, outcome),
    }
}

/// What is left of a move once its link, or its comparison with `dst`, is done.
pub(crate) enum Next {
    /// Nothing: the move is over.
    Done(Relocation),
    /// The source is to be retired: it should be the file `.0` (linked or compared), and the
    /// move answers `.1` unless the retire finds a writer's version instead.
    Retire(Stamp, Relocation),
}

/// Refuses a request that names one file twice, or one of the router's own files.
pub(crate) fn check_names(src: &Path, dst: &Path) -> io::Result<()> {
    if src == dst {
        return Err(same_entry_error(src, dst));
    }
    for path in [src, dst] {
        if let Some(kind) = path
            .file_name()
            .and_then(|n| private_kind(n.as_encoded_bytes()))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: a {} name of the router's own, never moved",
                    path.display(),
                    kind.as_str()
                ),
            ));
        }
    }
    Ok(())
}

/// `link(src, dst)`, the source looked at as `s`; when `dst` exists, settles which of the two
/// stays.
pub(crate) fn link_or_settle(src: &Path, dst: &Path, mut s: Stamp) -> io::Result<Next> {
    for _ in 0..ROUNDS {
        s.regular(src)?;
        match fs::hard_link(src, dst) {
            Ok(()) => return Ok(Next::Retire(s, Relocation::Moved)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return settle(src, dst, s),
            Err(e) if e.kind() == io::ErrorKind::NotFound => match fresh_look(src)? {
                None => return Ok(Next::Done(Relocation::SourceGone)),
                // The file looked at is gone, yet the name is there: a writer put a new version
                // under it meanwhile (on NFS the link names the file looked at). Move that one.
                Some(now) if !now.same_file(&s) => s = now,
                // The source is as it was: `dst`'s directory is missing.
                Some(_) => return Err(e),
            },
            Err(e) if no_hard_links(&e) => return without_links(src, dst, &s),
            Err(e) => return Err(e),
        }
    }
    Err(changing(src))
}

/// `dst` exists: the same file (a move cut short), an older one, or a newer one.
fn settle(src: &Path, dst: &Path, s: Stamp) -> io::Result<Next> {
    for _ in 0..ROUNDS {
        // The link's "exists" is the server's; this client's cache of `dst` may be older, and
        // dropping the source relies on this look.
        let Some(d) = fresh_look(dst)? else {
            // Removed since the link found it: link again.
            match fs::hard_link(src, dst) {
                Ok(()) => return Ok(Next::Retire(s, Relocation::Moved)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) if e.kind() == io::ErrorKind::NotFound && look(src)?.is_none() => {
                    return Ok(Next::Done(Relocation::SourceGone))
                }
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
/// Under `dst`'s name so that a replace cut short is given back by [`recover`] (the newer of
/// `Q` and `dst` stays), even once a writer has replaced the source and `Q` is the only name
/// of its version.
fn replace(src: &Path, dst: &Path, s: &Stamp) -> io::Result<Next> {
    let Some(name) = dst.file_name() else {
        return Err(same_entry_error(src, dst));
    };
    let qd = private_beside(dst);
    fs::create_dir(&qd)?;
    let q = qd.join(name);
    let linked = match fs::hard_link(src, &q) {
        Ok(()) => Ok(None),
        Err(e) if e.kind() == io::ErrorKind::NotFound && look(src)?.is_none() => {
            Ok(Some(Next::Done(Relocation::SourceGone)))
        }
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
    if let Err(e) = fs::remove_dir(&qd) {
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
    // write landing at `dst` would be replaced (router/README.md, "What is left to chance").
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
pub(crate) fn retire(
    src: &Path,
    dst: &Path,
    expected: &Stamp,
    outcome: Relocation,
) -> io::Result<Relocation> {
    let Some(name) = src.file_name() else {
        return Err(same_entry_error(src, dst));
    };
    let pd = private_beside(src);
    match fs::create_dir(&pd) {
        Ok(()) => {}
        // The source's directory is gone, and the source with it.
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Relocation::SourceGone),
        Err(e) => return Err(e),
    }
    let p = pd.join(name);
    let result = match fs::rename(src, &p) {
        Ok(()) => listed_inode(&pd, &p)
            .and_then(|ino| settle_listed(src, dst, &p, ino, expected, outcome)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(Relocation::SourceGone),
        Err(e) => Err(e),
    };
    // Empty unless a step failed with the file still in it: then it stays, for the next
    // rebalance to find (`dir::abandoned`), never hidden by a removal here.
    if let Err(e) = fs::remove_dir(&pd) {
        if result.is_ok() && e.kind() != io::ErrorKind::NotFound {
            return Err(e);
        }
    }
    result
}

/// `p`, in a private directory whose listing (the server's answer) gave `listed` as its inode
/// (`None`: not there), holds what a retire's rename took from `src`: unlinked if it is the
/// file `expected`, else a writer's version, placed at `dst` if newer than what `dst` holds,
/// dropped if not.
pub(crate) fn settle_listed(
    src: &Path,
    dst: &Path,
    p: &Path,
    listed: Option<u64>,
    expected: &Stamp,
    outcome: Relocation,
) -> io::Result<Relocation> {
    let Some(ino) = listed else {
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
    let placed = match place(p, &taken, dst) {
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

/// The private file `p` holds the version `taken`: it ends at `dst` if `dst` has no file or
/// an older one; otherwise it is removed. True when it was placed.
fn place(p: &Path, taken: &Stamp, dst: &Path) -> io::Result<bool> {
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
                if taken.newer_than(&d) {
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

/// File systems without hard links: look at `dst`, then rename (a window between the two,
/// documented); an older source is retired as usual.
fn without_links(src: &Path, dst: &Path, s: &Stamp) -> io::Result<Next> {
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
        Err(e) if e.kind() == io::ErrorKind::NotFound && look(src)?.is_none() => {
            Ok(Next::Done(Relocation::SourceGone))
        }
        Err(e) => Err(e),
    }
}

fn no_hard_links(e: &io::Error) -> bool {
    matches!(e.raw_os_error(), Some(EPERM | EOPNOTSUPP))
}

/// `lstat`: `None` when nothing is there.
pub(crate) fn look(path: &Path) -> io::Result<Option<Stamp>> {
    match fs::symlink_metadata(path) {
        Ok(m) => Ok(Some(Stamp::of(&m))),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`look`], as the server answers now: `path`'s directory revalidated first
/// ([`crate::cache`]). A missing directory is nothing there.
pub(crate) fn fresh_look(path: &Path) -> io::Result<Option<Stamp>> {
    if !cache::revalidate_parent(path)? {
        return Ok(None);
    }
    look(path)
}

/// Whether anything is at `path`, as the server answers now ([`fresh_look`]): what a
/// recovery asks of each place a cut-short move's path could be.
pub fn anything_at(path: &Path) -> io::Result<bool> {
    Ok(fresh_look(path)?.is_some())
}

/// Whether `a` and `b` are one directory entry: the same name in the same directory (by
/// device and inode, so `d/../d/f` is `d/f`).
fn same_entry(a: &Path, b: &Path) -> io::Result<bool> {
    let (Some(name_a), Some(name_b)) = (a.file_name(), b.file_name()) else {
        return Ok(true);
    };
    if name_a != name_b {
        return Ok(false);
    }
    let (da, db) = (fs::metadata(parent(a))?, fs::metadata(parent(b))?);
    Ok(da.dev() == db.dev() && da.ino() == db.ino())
}

fn same_entry_error(src: &Path, dst: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!(
            "{} and {} are one file: a move onto itself would remove its only name",
            src.display(),
            dst.display()
        ),
    )
}

fn changing(dst: &Path) -> io::Error {
    io::Error::other(format!(
        "{}: changed {ROUNDS} times while a move looked at it; the source was left as it was",
        dst.display()
    ))
}

pub(crate) fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

/// A fresh `.efs-router-<16 hex>.moving` in `path`'s directory.
pub(crate) fn private_beside(path: &Path) -> PathBuf {
    parent(path).join(new_private_name(Private::Moving))
}

fn remove_private(p: &Path) -> io::Result<()> {
    match fs::remove_file(p) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// What a recovery of a cut-short move's private directory did ([`recover`]).
#[derive(Debug, Default)]
pub struct Recovered {
    /// Entries given back to their name, or dropped as older than what holds it now.
    pub settled: u64,
    /// Entries dropped because their path was nowhere: a client deleted it while the move
    /// held this copy out of sight (or held it as a second name of the file it deleted).
    pub deleted: u64,
    /// Entries left where they are, each with why: not a regular file, a name its lookup
    /// refused, a step that failed. Each stops only itself.
    pub left: Vec<(OsString, io::Error)>,
}

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
/// Only for a `pd` no move is using: one unchanged for an hour ([`crate::dir::abandoned`]).
pub fn recover(
    pd: &Path,
    mut found: impl FnMut(&OsStr) -> io::Result<bool>,
) -> io::Result<Recovered> {
    let mut done = Recovered::default();
    recover_in(pd, parent(pd), pd, &mut found, &mut done, 0)?;
    Ok(done)
}

/// [`recover`] of the private directory named `name` in `dir`, read through `pd`: for a
/// caller that names the private directory and its holder by paths of its own that resolve to
/// the very directories it walked (the function's), not to what their paths point to now.
pub fn recover_pinned(
    pd: &Path,
    dir: &Path,
    name: &OsStr,
    mut found: impl FnMut(&OsStr) -> io::Result<bool>,
) -> io::Result<Recovered> {
    let mut done = Recovered::default();
    recover_in(pd, dir, &dir.join(name), &mut found, &mut done, 0)?;
    Ok(done)
}

/// Recovers what `pd` holds into `dir`, then removes `pd`, by the path `remove`, once empty.
fn recover_in(
    pd: &Path,
    dir: &Path,
    remove: &Path,
    found: &mut dyn FnMut(&OsStr) -> io::Result<bool>,
    done: &mut Recovered,
    depth: usize,
) -> io::Result<()> {
    // A recovery's own retire that died: what it holds goes back to its name in `pd` first.
    for name in names_in(pd)? {
        let kind = private_kind(name.as_encoded_bytes());
        if kind.is_none() {
            continue;
        }
        let p = pd.join(&name);
        let result = match fs::symlink_metadata(&p) {
            Ok(m) if m.is_dir() && kind == Some(Private::Moving) && depth < NESTED_AT_MOST => {
                // Given back into `pd`, which is no settling yet: that comes below.
                let mut inner = Recovered::default();
                let r = recover_in(&p, pd, &p, found, &mut inner, depth + 1);
                done.deleted += inner.deleted;
                for (n, e) in inner.left {
                    done.left
                        .push((Path::new(&name).join(n).into_os_string(), e));
                }
                r
            }
            Ok(_) => Err(io::Error::other("a private name no move leaves here")),
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            done.left.push((name, e));
        }
    }
    for name in names_in(pd)? {
        if private_kind(name.as_encoded_bytes()).is_some() {
            continue;
        }
        match recover_entry(&pd.join(&name), &dir.join(&name), found(&name)) {
            Ok(Some(Relocation::SourceGone)) => {}
            Ok(Some(_)) => done.settled += 1,
            Ok(None) => done.deleted += 1,
            Err(e) => done.left.push((name, e)),
        }
    }
    match fs::remove_dir(remove) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        // Not empty: what is left is named in `done.left`.
        Err(_) if !done.left.is_empty() => Ok(()),
        Err(e) => Err(e),
        Ok(()) => Ok(()),
    }
}

fn names_in(dir: &Path) -> io::Result<Vec<OsString>> {
    fs::read_dir(dir)?
        .map(|e| e.map(|e| e.file_name()))
        .collect()
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

/// Moves each `(src, dst)` pair as [`relocate`] does, `concurrency` moves at a time, and
/// gives each outcome in the order of `pairs`: `None` for a pair not tried because `until`
/// came first. The same pair twice is safe (the second finds the source gone).
///
/// How it saves round trips (router/README.md, "Many moves at once"): the first look at each
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
    crate::batch::run(pairs, &order, concurrency, until)
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
pub(crate) mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    /// `path` holds `data` and was last modified `secs` seconds after an arbitrary epoch.
    pub(crate) fn put(path: &Path, data: &[u8], secs: u64) {
        fs::write(path, data).unwrap();
        set_mtime(path, secs);
    }

    fn set_mtime(path: &Path, secs: u64) {
        let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs);
        fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    fn ino(path: &Path) -> u64 {
        fs::symlink_metadata(path).unwrap().ino()
    }

    /// The names in `dir`, sorted: no private name may be left behind.
    pub(crate) fn names(dir: &Path) -> Vec<String> {
        let mut v: Vec<String> = fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        v.sort();
        v
    }

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
    fn moves_and_keeps_the_bytes() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        fs::write(&src, b"reading").unwrap();
        let before = ino(&src);
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::Moved);
        assert!(!src.exists());
        assert_eq!(fs::read(&dst).unwrap(), b"reading");
        let m = fs::metadata(&dst).unwrap();
        assert_eq!((m.ino(), m.nlink()), (before, 1));
        assert_eq!(names(d.path()), ["b"]);
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
        assert_eq!(fs::metadata(&dst).unwrap().nlink(), 1);
    }

    #[test]
    fn one_file_however_spelled_is_refused_and_kept() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(".", d.path().join("here")).unwrap();
        let f = d.path().join("f");
        fs::write(&f, b"only copy").unwrap();
        for other in [
            d.path().join("./f"),
            d.path().join("sub/../f"),
            d.path().join("here/f"),
            d.path().join("here/sub/../here/f"),
        ] {
            for (src, dst) in [(&f, &other), (&other, &f)] {
                let e = relocate(src, dst).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{}", dst.display());
                assert_eq!(fs::read(&f).unwrap(), b"only copy");
            }
        }
        assert_eq!(names(d.path()), ["f", "here", "sub"]);
    }

    #[test]
    fn the_routers_own_files_are_never_moved() {
        let d = tempfile::tempdir().unwrap();
        let (tmp, file) = (
            d.path().join(".efs-router-0123456789abcdef.tmp"),
            d.path().join("f"),
        );
        fs::write(&tmp, b"a write in progress").unwrap();
        fs::write(&file, b"x").unwrap();
        for (src, dst) in [
            (tmp.clone(), d.path().join("g")),
            (
                file.clone(),
                d.path().join(".efs-router-0123456789abcdef.moving"),
            ),
        ] {
            let e = relocate(&src, &dst).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        }
        assert_eq!(names(d.path()), [".efs-router-0123456789abcdef.tmp", "f"]);
    }

    #[test]
    fn links_fifos_and_directories_are_not_data() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("file");
        put(&file, b"x", 10);
        let link = d.path().join("link");
        std::os::unix::fs::symlink("file", &link).unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let dir = d.path().join("dir");
        fs::create_dir(&dir).unwrap();
        for (src, dst, bad, what) in [
            (&link, d.path().join("moved-link"), &link, "symbolic link"),
            (&fifo, d.path().join("moved-fifo"), &fifo, "FIFO"),
            (&dir, d.path().join("moved-dir"), &dir, "directory"),
            (&file, dir.clone(), &dir, "directory"),
            (&file, link.clone(), &link, "symbolic link"),
        ] {
            let e = relocate(src, &dst).unwrap_err();
            let n = NotARegularFile::of(&e).unwrap_or_else(|| panic!("{e}"));
            assert_eq!((n.path.as_path(), n.what), (bad.as_path(), what));
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        }
        assert_eq!(names(d.path()), ["dir", "fifo", "file", "link"]);
        assert_eq!(fs::read(&file).unwrap(), b"x");
    }

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

    #[test]
    fn racing_movers_leave_exactly_one_copy() {
        let d = tempfile::tempdir().unwrap();
        const MOVERS: usize = 6;
        for round in 0..99 {
            let (src, dst) = (
                d.path().join(format!("s{round}")),
                d.path().join(format!("d{round}")),
            );
            fs::write(&src, round.to_string()).unwrap();
            // Every third round home holds an older copy, which the movers replace.
            let older = round % 3 == 0;
            if older {
                set_mtime(&src, 20);
                put(&dst, b"older", 10);
            }
            let barrier = std::sync::Barrier::new(MOVERS);
            let outcomes: Vec<Relocation> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..MOVERS)
                    .map(|_| {
                        s.spawn(|| {
                            barrier.wait();
                            relocate(&src, &dst).unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let reporting: Vec<_> = outcomes
                .iter()
                .filter(|o| **o != Relocation::SourceGone)
                .collect();
            assert_eq!(reporting.len(), 1, "{outcomes:?}");
            if !older {
                assert_eq!(*reporting[0], Relocation::Moved, "{outcomes:?}");
            }
            assert!(!src.exists());
            assert_eq!(fs::read_to_string(&dst).unwrap(), round.to_string());
            assert_eq!(fs::metadata(&dst).unwrap().nlink(), 1);
        }
        assert_eq!(names(d.path()).len(), 99);
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
        let qd = private_beside(&dst);
        fs::create_dir(&qd).unwrap();
        let q = qd.join("f");
        fs::hard_link(&src, &q).unwrap();
        fs::remove_file(&src).unwrap();
        assert!(matches!(
            place_replacement(&src, &dst, &q).unwrap(),
            Next::Done(Relocation::SourceGone)
        ));
        assert!(names(&qd).is_empty() && names(&b).len() == 1 && names(&a).is_empty());
        fs::remove_dir(&qd).unwrap();
        // Home gone but the source still there (moved away by a client on another list, say):
        // the replacement is placed, and the source then retired as usual.
        put(&src, b"newer", 20);
        fs::create_dir(&qd).unwrap();
        fs::hard_link(&src, &q).unwrap();
        assert!(matches!(
            place_replacement(&src, &dst, &q).unwrap(),
            Next::Retire(_, Relocation::Moved)
        ));
        assert_eq!(fs::read(&dst).unwrap(), b"newer");
    }
}
