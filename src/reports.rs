//! The clients' reports (`efs_router::report`) as the function reads them: which list each
//! router routes by. The directory is shared with every task and person, so what is read there
//! can only delay a move or a deletion, never permit one: it is opened beneath the mount without
//! following a link, each entry without following one and without blocking, only regular files
//! are read, at most [`MAX_BYTES`]` + 1` bytes each, at most [`MAX_ENTRIES`] entries within
//! [`READ_TIME`]; what is past those bounds, or cannot be read, counts as a client that holds
//! the moves (docs/data-plane.md, "The fleet rule").

use crate::when::When;
use efs_router::names::{private_kind, Private};
use efs_router::report::{client_of_file, Report, DIR, LIFETIME_SECS, MAX_BYTES};
use rustix::fs::{unlinkat, AtFlags, FileType, Mode, OFlags};
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::time::{Duration, Instant};

/// The most entries of the reports' directory one run reads: a fleet of thousands of clients,
/// and no flood can make the run read more (the rest hold the moves, [`Reports::unread`]).
pub const MAX_ENTRIES: usize = 10_000;

/// The longest one run spends reading reports: over NFS each one is a few round trips.
pub const READ_TIME: Duration = Duration::from_secs(10);

/// A report whose file and `written_at` are both older than this is removed: long past its
/// lifetime (180 s), so removing it cannot permit anything.
pub const REMOVE_AFTER_SECS: u64 = 3600;

/// How far a router's clock (its `written_at`) may run ahead of the file server's before its
/// time is taken for one it chose.
pub const MAX_SKEW_SECS: u64 = 300;

/// Reports read at once: over NFS a read is a chain of round trips.
const READERS: usize = 16;

/// One entry of the reports' directory that is named like a report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientFile {
    /// Its name, `<client id>.json`.
    pub file: String,
    /// Unix seconds: its modification time (a link's own, for a link).
    pub mtime: u64,
    /// Unix seconds: its status change time, by the file server's clock: unlike `mtime` and
    /// `written_at`, no writer can set it (a link's own, for a link).
    pub ctime: u64,
    /// The report, or the kind of fault that makes it none (`not-a-file`, `unreadable`, or
    /// [`efs_router::report::ReportError::kind`]).
    pub read: Result<Report, &'static str>,
}

impl ClientFile {
    /// Unix seconds: when its client was last seen. Either clock keeps it: the file's (the file
    /// system's) and the router's own `written_at`; but a time later than the file's last real
    /// change (`ctime`) by more than clocks drift apart was chosen by its writer (a future
    /// `written_at`, or `mtime` set by hand), and the change time is taken instead. So nothing
    /// on the file system holds the moves longer than a lifetime past its last change: a live
    /// router rewrites its report every minute, and each write is a change.
    pub fn last_seen(&self) -> u64 {
        let claimed = match &self.read {
            Ok(r) => self.mtime.max(r.written_at),
            Err(_) => self.mtime,
        };
        match claimed > self.ctime.saturating_add(MAX_SKEW_SECS) {
            true => self.ctime,
            false => claimed,
        }
    }

    /// Whether its client counts at `now` (Unix seconds): seen within its lifetime. A time in
    /// the future is now.
    pub fn is_live(&self, now: u64) -> bool {
        now.saturating_sub(self.last_seen()) <= LIFETIME_SECS
    }
}

/// The reports' directory as one run read it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reports {
    /// Every entry named like a report that was read (stale ones removed are not here).
    pub files: Vec<ClientFile>,
    /// Entries not read: past [`MAX_ENTRIES`] or [`READ_TIME`]. They hold the moves.
    pub unread: usize,
    /// The directory exists but cannot be read, and why: it holds the moves.
    pub dir_problem: Option<String>,
    /// Stale reports removed, reporters' writes abandoned for [`REMOVE_AFTER_SECS`], and
    /// entries no router writes unchanged as long that hold no data.
    pub removed: usize,
    /// Entries no router writes, unchanged for [`REMOVE_AFTER_SECS`], kept because they may
    /// hold data (a regular file with bytes, a directory not empty): they count
    /// toward [`MAX_ENTRIES`] until a person moves them.
    pub junk_kept: usize,
    /// What the function did so that every router can write there ([`keep_open`]).
    pub repaired: Option<Repair>,
}

/// What [`keep_open`] did to the reports' directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Repair {
    /// It was missing: made, mode 1777.
    Made,
    /// Its mode was this, not 1777 (a task chmodded it, or it was made so): set back.
    ModeRestored { was: u32 },
    /// Something else had its name (`what`: a file, a link, ...): renamed to `to` beside it,
    /// neither followed nor removed, and the directory made, mode 1777.
    Displaced { what: &'static str, to: String },
}

/// The mode every router needs: anyone may add a report, only its owner remove it.
const OPEN_MODE: u32 = 0o1777;

/// The function's mark in a reports' directory it made where something else stood (a file, a
/// link): until its `ctime` (the server's) is
/// [`LIFETIME_SECS`] old, the directory may lack live clients' reports, and it holds the moves.
/// Not a report's name: routers never read or write it.
pub const MADE: &str = ".efs-mount-autoscaler-made";

/// Keeps `<mount_path>/.efs-router-clients` a directory every router can write its report in
/// (a shared name must not let one writer lock every router out): made when missing, its mode
/// set back to 1777 when a task changed it, and anything else in its place (a file, a link)
/// renamed aside, to `.efs-router-clients.displaced-<Unix nanoseconds>`, before it is made: nothing is
/// followed or removed, so whatever was planted there is kept for a person to look at. All of
/// it relative to the mount. What it cannot do (the function's access point is not root) is
/// left as it is, and the read after says what is wrong.
fn keep_open(mount_path: &Path) -> Option<Repair> {
    let base = efs_router::dir::open_beneath(mount_path, "", false).ok()?;
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let mut displaced = None;
    let (fd, made) = loop {
        match rustix::fs::openat(&base, DIR, flags, Mode::empty()) {
            Ok(fd) => break (fd, displaced.is_some()),
            Err(rustix::io::Errno::NOENT) => {
                match rustix::fs::mkdirat(&base, DIR, Mode::from_raw_mode(OPEN_MODE)) {
                    // Made by a router meanwhile: opened as it is.
                    Ok(()) | Err(rustix::io::Errno::EXIST) => {}
                    Err(_) => return None,
                }
                let fd = rustix::fs::openat(&base, DIR, flags, Mode::empty()).ok()?;
                break (fd, true);
            }
            // Not a directory, or a link (O_NOFOLLOW): moved aside once, then made.
            Err(rustix::io::Errno::NOTDIR | rustix::io::Errno::LOOP) if displaced.is_none() => {
                let what = match rustix::fs::statat(&base, DIR, AtFlags::SYMLINK_NOFOLLOW) {
                    Ok(st) => kind_of(st.st_mode),
                    Err(_) => "an entry",
                };
                let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
                let to = format!("{DIR}.displaced-{}", now.map_or(0, |d| d.as_nanos()));
                rustix::fs::renameat(&base, DIR, &base, &to).ok()?;
                displaced = Some(Repair::Displaced { what, to });
            }
            Err(_) => return None,
        }
    };
    if displaced.is_some() {
        // The routers could not report while something else had the name: until each live
        // one has had a lifetime to write its report here again, it holds the moves
        // ([`read_under`]). A directory that was missing held no report to lose.
        let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let _ = rustix::fs::openat(&fd, MADE, flags, Mode::from_raw_mode(0o644));
    }
    let was = rustix::fs::fstat(&fd).ok()?.st_mode & 0o7777;
    if was != OPEN_MODE {
        // The umask takes bits off a new directory's mode: set it whole.
        rustix::fs::fchmod(&fd, Mode::from_raw_mode(OPEN_MODE)).ok()?;
    }
    match (displaced, made, was != OPEN_MODE) {
        (Some(repair), _, _) => Some(repair),
        (None, true, _) => Some(Repair::Made),
        (None, false, true) => Some(Repair::ModeRestored { was }),
        (None, false, false) => None,
    }
}

/// What a mode's file type is, in words.
fn kind_of(mode: u32) -> &'static str {
    match rustix::fs::FileType::from_raw_mode(mode) {
        rustix::fs::FileType::RegularFile => "a file",
        rustix::fs::FileType::Symlink => "a symbolic link",
        rustix::fs::FileType::Fifo => "a FIFO",
        rustix::fs::FileType::Socket => "a socket",
        rustix::fs::FileType::Directory => "a directory",
        _ => "a device",
    }
}

/// Reads the reports under `<mount_path>/.efs-router-clients` (`EFS_MOUNT_PATH`'s), and removes
/// stale ones; no directory means no reports. Never fails: a problem is part of what it
/// returns, and holds the moves.
pub fn read(mount_path: &Path, now: When) -> Reports {
    let repaired = keep_open(mount_path);
    Reports {
        repaired,
        ..read_under(mount_path, now, true)
    }
}

/// [`read`] as of now, removing nothing: for operators (`efs-route clients`).
pub fn look(mount_path: &Path) -> Reports {
    read_under(mount_path, When::now(), false)
}

fn read_under(mount_path: &Path, now: When, remove: bool) -> Reports {
    let open = || efs_router::dir::open_beneath(mount_path, DIR, false);
    // Missing, as this NFS client remembers it: a router on another client may have made it
    // within the last minute (fact 13). Asked of the server before it counts as no reports.
    let opened = match open() {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let _ = efs_router::cache::revalidate_dir(mount_path);
            open()
        }
        other => other,
    };
    let dir = match opened {
        Ok(fd) => fd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Reports::default(),
        Err(e) => {
            return Reports {
                dir_problem: Some(e.to_string()),
                ..Reports::default()
            }
        }
    };
    let mut reports = read_dir(&dir, now, Instant::now() + READ_TIME, remove);
    if let Some(age) = made_within_a_lifetime(&dir, now) {
        reports.dir_problem = Some(format!(
            "made by the function {age} s ago: a live client's report may not be in it yet"
        ));
    }
    reports
}

/// The age of the function's mark ([`MADE`]) when younger than a report's lifetime.
fn made_within_a_lifetime(dir: &OwnedFd, now: When) -> Option<u64> {
    let st = rustix::fs::statat(dir, MADE, AtFlags::SYMLINK_NOFOLLOW).ok()?;
    let age = now
        .secs()
        .saturating_sub(u64::try_from(st.st_ctime).unwrap_or(0));
    (age <= LIFETIME_SECS).then_some(age)
}

/// [`read`] of the open directory, until `until`; stale reports are removed when `remove`.
pub fn read_dir(dir: &OwnedFd, now: When, until: Instant, remove: bool) -> Reports {
    let mut names: Vec<String> = Vec::new();
    let mut temporaries: Vec<OsString> = Vec::new();
    let mut junk: Vec<OsString> = Vec::new();
    let mut entries = 0usize;
    // Every entry counts toward the bound, whatever it is: junk directories and names too.
    let read = efs_router::dir::for_each_name_at(dir, |name, kind| {
        entries += 1;
        let private = private_kind(name.as_encoded_bytes());
        let report = name.to_str().filter(|n| client_of_file(n).is_some());
        match (private, report) {
            (Some(Private::Temporary), _) if kind != FileType::Directory => {
                temporaries.push(name.to_os_string())
            }
            (None, Some(name)) if kind != FileType::Directory => names.push(name.to_owned()),
            _ if name == MADE => {}
            // No router writes it: aged out below, a bounded number a run.
            _ if remove && junk.len() < JUNK_AT_MOST => junk.push(name.to_os_string()),
            _ => {}
        }
        entries <= MAX_ENTRIES && Instant::now() < until
    });
    let mut out = Reports::default();
    if remove {
        out.removed += remove_abandoned_writes(dir.as_fd(), &temporaries, now, until);
    }
    if let Err(e) = read {
        out.dir_problem = Some(e.to_string());
    }
    // Past the bound, the directory was not read to its end: how much more is unknown.
    if entries > MAX_ENTRIES || Instant::now() >= until {
        out.unread = entries.saturating_sub(MAX_ENTRIES).max(1);
        names.truncate(MAX_ENTRIES);
    }
    let order: Vec<usize> = (0..names.len()).collect();
    let read = efs_router::pool::map(&names, &order, READERS, Some(until), |name| {
        read_one(dir.as_fd(), name, now, remove)
    });
    for outcome in read {
        match outcome {
            None => out.unread += 1,
            Some(Read::Removed) => out.removed += 1,
            Some(Read::Gone) => {}
            Some(Read::File(f)) => out.files.push(*f),
        }
    }
    out.files.sort_by(|a, b| a.file.cmp(&b.file));
    // Last: the reports are read whatever the junk costs.
    let aged = remove_junk(dir.as_fd(), &junk, now, until);
    out.removed += aged.removed;
    out.junk_kept = aged.kept;
    out
}

/// Entries of the reports' directory no router writes ([`remove_junk`]) looked at in one run
/// at most: each is a `stat` (a round trip over NFS), after the reports are read.
pub const JUNK_AT_MOST: usize = 1000;

/// What [`remove_junk`] did.
#[derive(Debug, Default, PartialEq, Eq)]
struct Aged {
    removed: usize,
    /// Old, but it may hold data: kept.
    kept: usize,
}

/// Removes the entries `names` of the reports' directory that no router writes (not a report's
/// name, not a reporter's write; or a report's name on what is not a regular file) once they
/// are unchanged for [`REMOVE_AFTER_SECS`], by their `ctime`, which no writer can set: each
/// counts toward [`MAX_ENTRIES`], so a flood of them would hold every move for good. Only
/// what holds no data goes ([`holds_no_data`]); the rest is kept and counted. Relative to
/// the directory, without following a link: a link goes itself, never its target.
fn remove_junk(dir: BorrowedFd<'_>, names: &[OsString], now: When, until: Instant) -> Aged {
    let mut aged = Aged::default();
    for name in names {
        if Instant::now() >= until {
            break;
        }
        let Ok(st) = rustix::fs::statat(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        match remove_old_junk(dir, name.as_os_str(), &st, now) {
            Some(true) => aged.removed += 1,
            Some(false) => aged.kept += 1,
            None => {}
        }
    }
    if aged.kept > 0 {
        tracing::warn!(
            kept = aged.kept,
            "entries of the reports' directory no router writes, an hour old, may hold data: kept (they count toward its bound)"
        );
    }
    aged
}

/// Removes `name` (as `st` describes it) when it is junk unchanged for an hour that holds no
/// data: `Some(true)` removed, `Some(false)` kept because it may hold data, `None` too young
/// (or gone meanwhile).
fn remove_old_junk(
    dir: BorrowedFd<'_>,
    name: &std::ffi::OsStr,
    st: &rustix::fs::Stat,
    now: When,
) -> Option<bool> {
    if now.secs().saturating_sub(secs(st.st_ctime)) < REMOVE_AFTER_SECS {
        return None;
    }
    if !holds_no_data(st) {
        return Some(false);
    }
    // A directory goes only empty (rmdir); anything else is one name, never followed.
    let flags = match FileType::from_raw_mode(st.st_mode) {
        FileType::Directory => AtFlags::REMOVEDIR,
        _ => AtFlags::empty(),
    };
    Some(unlinkat(dir, name, flags).is_ok())
}

/// Whether removing the entry `st` describes loses no bytes: a link (itself), a FIFO, a
/// socket or a device node; an empty regular file; a directory (removed only if empty). A
/// regular file with bytes stays even with another name: that name may be in this directory
/// too, and go next.
fn holds_no_data(st: &rustix::fs::Stat) -> bool {
    match FileType::from_raw_mode(st.st_mode) {
        FileType::RegularFile => st.st_size == 0,
        _ => true,
    }
}

/// Removes the reporters' writes (`.efs-router-<hex>.tmp`) unchanged for
/// [`REMOVE_AFTER_SECS`]: a router that died while writing its report left it, and it is no
/// report. Only a regular file with one name, relative to the directory, without following a
/// link; its age is by its `ctime`, which no writer can set. Answers how many went.
fn remove_abandoned_writes(
    dir: BorrowedFd<'_>,
    names: &[OsString],
    now: When,
    until: Instant,
) -> usize {
    let mut removed = 0;
    for name in names {
        if Instant::now() >= until {
            break;
        }
        let Ok(st) = rustix::fs::statat(dir, name.as_os_str(), AtFlags::SYMLINK_NOFOLLOW) else {
            continue;
        };
        #[allow(clippy::useless_conversion)] // st_nlink is u32 on aarch64
        let one_name = u64::from(st.st_nlink) == 1;
        let regular = rustix::fs::FileType::from_raw_mode(st.st_mode) == FileType::RegularFile;
        let old = now.secs().saturating_sub(secs(st.st_ctime)) >= REMOVE_AFTER_SECS;
        if regular && one_name && old && unlinkat(dir, name.as_os_str(), AtFlags::empty()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// What one entry turned out to be.
enum Read {
    File(Box<ClientFile>),
    /// Stale, and removed.
    Removed,
    /// Gone between the listing and the open (a router replaced it, or removed its own).
    Gone,
}

/// Opens `name` without following a link and without blocking (a FIFO), reads a regular file
/// of at most [`MAX_BYTES`] + 1 bytes, and removes it when stale.
fn read_one(dir: BorrowedFd<'_>, name: &str, now: When, remove: bool) -> Read {
    let file = |st: &rustix::fs::Stat, read: Result<Report, &'static str>| {
        Read::File(Box::new(ClientFile {
            file: name.to_owned(),
            mtime: secs(st.st_mtime),
            ctime: secs(st.st_ctime),
            read,
        }))
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match rustix::fs::openat(dir, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(rustix::io::Errno::NOENT) => return Read::Gone,
        // A link (ELOOP) or anything else that cannot be opened: its own time, if it has one.
        Err(_) => {
            return match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(st) if remove && remove_old_junk(dir, name.as_ref(), &st, now) == Some(true) => {
                    Read::Removed
                }
                Ok(st) => file(&st, Err("not-a-file")),
                Err(_) => Read::Gone,
            }
        }
    };
    let Ok(st) = rustix::fs::fstat(&fd) else {
        return Read::File(Box::new(ClientFile {
            file: name.to_owned(),
            mtime: now.secs(),
            ctime: now.secs(),
            read: Err("unreadable"),
        }));
    };
    if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
        // A FIFO, a socket or a device under a report's name: junk, aged out as any.
        drop(fd);
        if remove && remove_old_junk(dir, name.as_ref(), &st, now) == Some(true) {
            return Read::Removed;
        }
        return file(&st, Err("not-a-file"));
    }
    let read = match read_at_most(&fd, MAX_BYTES + 1) {
        Ok(bytes) => Report::parse(name, &bytes).map_err(|e| e.kind()),
        Err(_) => Err("unreadable"),
    };
    let found = file(&st, read);
    let Read::File(f) = &found else {
        return found;
    };
    // Stale by the time that keeps it live, so a future-dated one goes too, an hour on.
    let stale = now.secs().saturating_sub(f.last_seen()) > REMOVE_AFTER_SECS;
    if remove && stale && remove_if_same(dir, name, &st) {
        return Read::Removed;
    }
    found
}

/// Removes `name` if it is still the regular file `st` describes (a router that rewrote its
/// report since has made another file, which stays).
fn remove_if_same(dir: BorrowedFd<'_>, name: &str, st: &rustix::fs::Stat) -> bool {
    let same = rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW)
        .is_ok_and(|now| now.st_ino == st.st_ino && now.st_dev == st.st_dev);
    same && rustix::fs::unlinkat(dir, name, AtFlags::empty()).is_ok()
}

fn read_at_most(fd: impl AsFd, most: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0u8; most];
    let mut len = 0;
    while len < most {
        match rustix::io::read(&fd, &mut buf[len..]) {
            Ok(0) => break,
            Ok(n) => len += n,
            Err(rustix::io::Errno::INTR) => {}
            Err(e) => return Err(e.into()),
        }
    }
    buf.truncate(len);
    Ok(buf)
}

fn secs(t: i64) -> u64 {
    u64::try_from(t).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use efs_router::report::{list_sha256, ListSeen};
    use std::os::unix::fs::symlink;

    const ID: &str = "0123456789abcdef";

    fn report(id: &str, written_at: u64) -> Report {
        let list = ListSeen {
            sha256: list_sha256("{}"),
            version: 1,
            parameter_version: None,
        };
        Report::loaded(id, "efs-router-rust/0.1.0", vec![1, 2], list, written_at)
    }

    fn dir() -> (tempfile::TempDir, OwnedFd) {
        let tmp = tempfile::tempdir().unwrap();
        let fd = rustix::fs::open(
            tmp.path(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        (tmp, fd)
    }

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(3600)
    }

    #[test]
    fn reports_links_garbage_and_other_names_are_told_apart() {
        let (tmp, fd) = dir();
        let now = When::now();
        let p = |n: &str| tmp.path().join(n);
        std::fs::write(p(&format!("{ID}.json")), report(ID, now.secs()).to_json()).unwrap();
        std::fs::write(p("1111111111111111.json"), b"not json").unwrap();
        std::fs::write(p("2222222222222222.json"), vec![b' '; MAX_BYTES + 1]).unwrap();
        symlink("/etc/passwd", p("3333333333333333.json")).unwrap();
        std::fs::write(p("notes.txt"), b"ignored").unwrap();
        std::fs::write(p(&format!("{ID}.json.tmp")), b"ignored").unwrap();
        let r = read_dir(&fd, now, later(), true);
        let kinds: Vec<(&str, Result<&str, &str>)> = r
            .files
            .iter()
            .map(|f| {
                let read = f.read.as_ref().map(|r| r.client.as_str());
                (f.file.as_str(), read.map_err(|e| *e))
            })
            .collect();
        assert_eq!(
            kinds,
            [
                ("0123456789abcdef.json", Ok(ID)),
                ("1111111111111111.json", Err("malformed")),
                ("2222222222222222.json", Err("too-large")),
                ("3333333333333333.json", Err("not-a-file")),
            ]
        );
        assert_eq!((r.unread, r.removed, r.dir_problem), (0, 0, None));
        // The link was not followed, nor removed.
        assert!(p("3333333333333333.json").symlink_metadata().is_ok());
    }

    #[test]
    fn a_stale_report_is_removed_and_a_recent_one_kept() {
        let (tmp, fd) = dir();
        let p = |n: &str| tmp.path().join(n);
        let now = When::now();
        // Written two hours ago by both clocks (the file's time set back, as the server would
        // have it), and one written now.
        let old = "aaaaaaaaaaaaaaaa";
        let two_hours_ago = now.secs() - 2 * 3600;
        std::fs::write(
            p(&format!("{old}.json")),
            report(old, two_hours_ago).to_json(),
        )
        .unwrap();
        let f = std::fs::File::options()
            .write(true)
            .open(p(&format!("{old}.json")))
            .unwrap();
        f.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(two_hours_ago))
            .unwrap();
        drop(f);
        let recent = report(ID, now.secs() - 30);
        std::fs::write(p(&format!("{ID}.json")), recent.to_json()).unwrap();
        let r = read_dir(&fd, now, later(), true);
        assert_eq!(r.removed, 1);
        assert_eq!(r.files.len(), 1);
        assert_eq!(r.files[0].read, Ok(recent));
        assert!(!p(&format!("{old}.json")).exists());
    }

    #[test]
    fn a_report_from_the_future_is_live_for_a_lifetime_past_its_last_change_only() {
        let (tmp, fd) = dir();
        let path = tmp.path().join(format!("{ID}.json"));
        // Written now, claiming to have been written in 2100, its mtime set there too.
        let year_2100 = 4_102_444_800;
        std::fs::write(&path, report(ID, year_2100).to_json()).unwrap();
        let f = std::fs::File::options().write(true).open(&path).unwrap();
        f.set_modified(std::time::UNIX_EPOCH + Duration::from_secs(year_2100))
            .unwrap();
        drop(f);
        let changed = secs(rustix::fs::stat(&path).unwrap().st_ctime);
        let read_at = |t: u64| read_dir(&fd, When::from_secs(t), later(), true);
        let r = read_at(changed + 10);
        assert_eq!(r.files.len(), 1);
        // Its claim is taken for what the server saw: the change, not 2100.
        assert_eq!(r.files[0].last_seen(), changed);
        assert!(r.files[0].is_live(changed + 10));
        assert!(!r.files[0].is_live(changed + LIFETIME_SECS + 1));
        // And an hour past the change it is removed, as any stale report is.
        let r = read_at(changed + REMOVE_AFTER_SECS + 1);
        assert_eq!((r.files.len(), r.removed), (0, 1));
        assert!(!path.exists());
    }

    #[test]
    fn a_router_ahead_of_the_server_within_the_skew_keeps_its_own_time() {
        let (tmp, fd) = dir();
        let path = tmp.path().join(format!("{ID}.json"));
        let now = When::now().secs();
        std::fs::write(&path, report(ID, now + MAX_SKEW_SECS - 10).to_json()).unwrap();
        let r = read_dir(&fd, When::from_secs(now), later(), true);
        assert_eq!(r.files[0].last_seen(), now + MAX_SKEW_SECS - 10);
    }

    #[test]
    fn a_flood_is_read_only_to_the_bound() {
        let (tmp, fd) = dir();
        for i in 0..MAX_ENTRIES + 5 {
            std::fs::write(tmp.path().join(format!("{i:016x}.json")), b"x").unwrap();
        }
        let r = read_dir(&fd, When::now(), later(), true);
        // Reading stops at the bound: the rest are unread, however many.
        assert!(r.unread >= 1, "{}", r.unread);
        assert_eq!(r.files.len(), MAX_ENTRIES);
    }

    #[test]
    fn junk_of_any_kind_counts_toward_the_bound() {
        // Directories and writes in progress were not counted: a flood of them was listed in
        // full on every run, and held nothing.
        let (tmp, fd) = dir();
        for i in 0..MAX_ENTRIES / 2 + 1 {
            std::fs::create_dir(tmp.path().join(format!("junk-{i}"))).unwrap();
            std::fs::write(tmp.path().join(format!(".efs-router-{i:016x}.tmp")), b"").unwrap();
        }
        std::fs::write(tmp.path().join(format!("{ID}.json")), b"x").unwrap();
        let r = read_dir(&fd, When::now(), later(), false);
        assert!(r.unread >= 1, "{}", r.unread);
    }

    #[test]
    fn a_dead_reporters_write_is_removed_once_abandoned() {
        let (tmp, fd) = dir();
        let name = |i: u64| tmp.path().join(format!(".efs-router-{i:016x}.tmp"));
        std::fs::write(name(1), b"half a report").unwrap();
        // Not a reporter's: two names, or a directory.
        std::fs::write(name(2), b"linked").unwrap();
        std::fs::hard_link(name(2), tmp.path().join("elsewhere")).unwrap();
        std::fs::create_dir(name(3)).unwrap();
        let now = When::now().secs();
        // Young: it may be a write going on.
        let r = read_dir(&fd, When::from_secs(now), later(), true);
        assert_eq!(r.removed, 0);
        assert!(name(1).exists());
        // An hour on, as the function's clock has it.
        let r = read_dir(
            &fd,
            When::from_secs(now + REMOVE_AFTER_SECS + 5),
            later(),
            true,
        );
        // The other two are junk by now: the empty directory goes, the file with bytes stays
        // (its other name too).
        assert_eq!((r.removed, r.junk_kept), (2, 1));
        assert!(!name(1).exists() && !name(3).exists());
        assert!(name(2).exists() && tmp.path().join("elsewhere").exists());
        // Looking removes nothing.
        std::fs::write(name(4), b"half").unwrap();
        let r = read_dir(
            &fd,
            When::from_secs(now + 2 * REMOVE_AFTER_SECS),
            later(),
            false,
        );
        assert_eq!(r.removed, 0);
        assert!(name(4).exists());
    }

    #[test]
    fn the_directory_is_kept_open_to_every_router() {
        use std::os::unix::fs::PermissionsExt;
        let mount = tempfile::tempdir().unwrap();
        let dir = mount.path().join(DIR);
        let mode = || std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777;
        // Missing: made for the routers (day one needs no operator for it).
        assert_eq!(read(mount.path(), When::now()).repaired, Some(Repair::Made));
        assert_eq!(mode(), 0o1777);
        assert_eq!(read(mount.path(), When::now()).repaired, None);
        // A task locks the others out: set back.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        let r = read(mount.path(), When::now());
        assert_eq!(r.repaired, Some(Repair::ModeRestored { was: 0o755 }));
        assert_eq!(mode(), 0o1777);
        // A link in its place is neither followed nor removed: renamed aside, and the
        // directory made again. Its target is untouched.
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::set_permissions(elsewhere.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::remove_dir(&dir).unwrap();
        symlink(elsewhere.path(), &dir).unwrap();
        let r = read(mount.path(), When::now());
        let Some(Repair::Displaced { what, to }) = r.repaired else {
            panic!("{:?}", r.repaired)
        };
        assert_eq!(what, "a symbolic link");
        assert_eq!(
            std::fs::read_link(mount.path().join(&to)).unwrap(),
            elsewhere.path()
        );
        assert_eq!(mode(), 0o1777);
        // Routers could not report meanwhile: the moves wait a lifetime for them to.
        assert!(r.dir_problem.is_some());
        assert!(read(mount.path(), When::now()).dir_problem.is_some());
        let later = When::from_secs(When::now().secs() + LIFETIME_SECS + 1);
        assert_eq!(read(mount.path(), later).dir_problem, None);
        let m = std::fs::metadata(elsewhere.path())
            .unwrap()
            .permissions()
            .mode()
            & 0o7777;
        assert_eq!(m, 0o700);
        // A file in its place: kept, with what it holds, under the name beside it.
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::write(&dir, b"planted").unwrap();
        let r = read(mount.path(), When::now());
        let Some(Repair::Displaced { what, to }) = r.repaired else {
            panic!("{:?}", r.repaired)
        };
        assert_eq!(what, "a file");
        assert_eq!(std::fs::read(mount.path().join(&to)).unwrap(), b"planted");
        assert_eq!(mode(), 0o1777);
        // Looking, as efs-route does, changes nothing.
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(look(mount.path()).repaired, None);
        assert!(!dir.exists());
    }

    #[test]
    fn a_router_locked_out_by_a_file_in_the_directorys_place_writes_again_after_a_run() {
        use efs_router::{Layout, Reporting, Router};
        let mount = tempfile::tempdir().unwrap();
        std::fs::write(mount.path().join(DIR), b"planted").unwrap();
        let list = r#"{"version":1,"strategy":"rendezvous","mount_targets":[{"id":"fsmt-1","ip":"10.0.0.1","root":"/"}]}"#;
        let layout = Layout::single_mount(mount.path());
        let router = Router::reporting(list, layout, Reporting::default()).unwrap();
        // No report can be written: the router writes nothing it could not answer for.
        let err = router.write("data/x.json", b"x").unwrap_err();
        assert!(
            matches!(&err, efs_router::Error::Report(f) if f.kind() == "report-lapsed"),
            "{err}"
        );
        // The function's next run moves the file aside and makes the directory.
        let r = read(mount.path(), When::now());
        assert!(matches!(
            r.repaired,
            Some(Repair::Displaced { what: "a file", .. })
        ));
        router.write("data/x.json", b"x").unwrap();
        assert!(router.report_file().unwrap().is_file());
    }

    #[test]
    fn out_of_time_nothing_more_is_read() {
        let (tmp, fd) = dir();
        std::fs::write(tmp.path().join(format!("{ID}.json")), b"x").unwrap();
        let r = read_dir(&fd, When::now(), Instant::now(), true);
        assert!(r.unread >= 1);
        assert!(r.files.is_empty());
    }

    #[test]
    fn planted_junk_ages_out_and_what_may_hold_data_stays() {
        // In memory where the host has it: 10,001 names on a loaded disk take long.
        let tmp = tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap());
        let fd = rustix::fs::open(
            tmp.path(),
            OFlags::RDONLY | OFlags::DIRECTORY,
            Mode::empty(),
        )
        .unwrap();
        let p = |n: &str| tmp.path().join(n);
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("target"), b"someone's").unwrap();
        // Past the bound: names no router writes, and each kind of entry.
        for i in 0..MAX_ENTRIES + 1 {
            std::fs::write(p(&format!("junk-{i}")), b"").unwrap();
        }
        symlink(outside.path().join("target"), p("link")).unwrap();
        symlink(outside.path(), p("1111111111111111.json")).unwrap();
        for fifo in ["fifo", "2222222222222222.json"] {
            rustix::fs::mknodat(&fd, fifo, FileType::Fifo, Mode::from_raw_mode(0o600), 0).unwrap();
        }
        std::fs::create_dir(p("empty")).unwrap();
        std::fs::create_dir(p("full")).unwrap();
        std::fs::write(p("full/kept"), b"bytes").unwrap();
        std::fs::write(p("data"), b"bytes, one name").unwrap();
        std::fs::write(p("two"), b"bytes, two names").unwrap();
        std::fs::hard_link(p("two"), p("two-b")).unwrap();
        std::fs::create_dir(p(&format!("{ID}.json"))).unwrap();

        // Young: it holds, and nothing goes.
        let now = When::now();
        let r = read_dir(&fd, now, later(), true);
        assert!(r.unread >= 1, "{r:?}");
        assert_eq!((r.removed, r.junk_kept), (0, 0));

        // An hour on, it ages out, a bounded number a run; what may hold data stays.
        let hour_on = When::from_secs(now.secs() + REMOVE_AFTER_SECS + 1);
        let (mut runs, mut removed) = (0, 0);
        loop {
            runs += 1;
            assert!(
                runs <= MAX_ENTRIES / JUNK_AT_MOST + 3,
                "never ends: {removed}"
            );
            let r = read_dir(&fd, hour_on, later(), true);
            removed += r.removed;
            if r.removed == 0 {
                assert_eq!((r.unread, r.junk_kept, r.files.len()), (0, 4, 0), "{r:?}");
                break;
            }
        }
        assert_eq!(removed, MAX_ENTRIES + 1 + 6);
        let mut left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(left, ["data", "full", "two", "two-b"]);
        assert_eq!(std::fs::read(p("full/kept")).unwrap(), b"bytes");
        assert_eq!(
            std::fs::read(outside.path().join("target")).unwrap(),
            b"someone's"
        );
    }
}
