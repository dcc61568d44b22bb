//! Finding what a write or a move left when it died part way: the router's own files
//! unchanged for a while, and whether removing each can lose data.

use super::{walk, Entry, Flow, Kind};
use crate::names::Private;
use rustix::fs::{AtFlags, FileType};
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// The router's own files under `root` (walked as [`walk`](fn@walk) does: `root` itself is
/// opened as given) whose last change is at least `older_than` ago ([`abandoned`]): one `lstat`
/// per private name found, none for anything else.
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
