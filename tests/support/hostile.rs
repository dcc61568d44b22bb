//! A hostile co-tenant (issue 27): another writer of the shared file system, with the clients'
//! uid, that plants in the shards and in the reports' directory what the function must neither
//! follow, nor count wrong, nor be stopped by. `tests/soak.rs` draws its actions and judges the
//! function; this module only does them on disk.
//!
//! Every name it gives in a shard starts with [`PREFIX`] (its names that are not UTF-8 too), or
//! is one of the router's private names, which the soak records; its files hold bytes that start
//! with [`CONTENT`]. So the checks tell its entries from the clients'. The **victims**
//! ([`Victims`]) are files the test owns outside every shard, which its links point at: nothing
//! may ever move, change or delete them, nor add anything beside them.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs;
use std::io::ErrorKind;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{symlink, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use efs_router::report::{ListSeen, Report};

/// The first bytes of every name the co-tenant gives in a shard (its private names aside).
pub const PREFIX: &str = "hostile-";
/// The first bytes of every file the co-tenant writes.
pub const CONTENT: &[u8] = b"hostile ";
/// The victims' directory, beside the shards under the mount (in the first shard's root, outside
/// its watched tree): no shard's.
pub const VICTIMS: &str = "hostile-victims";
/// The names of the files in the co-tenant's own directories are `hostile-f-<k>.json` for k
/// below this; the victims' directory holds files of the same names, so a move that resolved a
/// swapped directory's path again would meet a victim.
pub const OWN_FILES: u64 = 6;

/// The name of the co-tenant's `k`th file in a directory of its own.
pub fn own_file_name(k: u64) -> String {
    format!("{PREFIX}f-{k}.json")
}

/// Whether a path (`/`-separated, as `to_string_lossy` gives it) names the co-tenant's entry or
/// something inside one: a component of it starts with [`PREFIX`].
pub fn is_hostile(rel: &str) -> bool {
    rel.split('/').any(|name| name.starts_with(PREFIX))
}

/// A name that is not UTF-8: [`PREFIX`], two bytes no UTF-8 text holds, then `tag`.
pub fn non_utf8(tag: &str) -> OsString {
    let mut bytes = PREFIX.as_bytes().to_vec();
    bytes.extend_from_slice(b"\xff\xfe-");
    bytes.extend_from_slice(tag.as_bytes());
    OsString::from_vec(bytes)
}

/// Writes one of the co-tenant's files: [`CONTENT`], then `tag`.
pub fn write_own(path: &Path, tag: &str) -> std::io::Result<()> {
    let mut bytes = CONTENT.to_vec();
    bytes.extend_from_slice(tag.as_bytes());
    bytes.push(b'\n');
    fs::write(path, bytes)
}

/// A directory of its own at `dir`, with `files` of its files in it (at least one) and one more
/// in a directory below: what it later swaps for a link.
pub fn own_dir(dir: &Path, files: u64, tag: &str) -> std::io::Result<()> {
    fs::create_dir(dir)?;
    for k in 0..files.clamp(1, OWN_FILES) {
        write_own(&dir.join(own_file_name(k)), tag)?;
    }
    let below = dir.join(format!("{PREFIX}below"));
    fs::create_dir(&below)?;
    write_own(&below.join(own_file_name(0)), tag)
}

/// The target of a link at `link` (relative to the mount) that points at `target` (relative to
/// the mount too), spelled relative to the link's directory: the same on every mount of the
/// file system.
pub fn relative_target(link: &Path, target: &Path) -> PathBuf {
    let depth = link.components().count().saturating_sub(1);
    let mut out = PathBuf::new();
    for _ in 0..depth {
        out.push("..");
    }
    out.push(target);
    out
}

/// Removes whatever is at `path`, without following a link: a directory with all it holds.
/// Nothing there is no error.
pub fn remove(path: &Path) -> std::io::Result<()> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// Swaps the real directory `dir` for a link to `target`: renamed away to `away` first, then
/// the link made under its name.
pub fn swap_for_link(dir: &Path, away: &Path, target: &Path) -> std::io::Result<()> {
    fs::rename(dir, away)?;
    symlink(target, dir)
}

/// Undoes [`swap_for_link`]: the link removed, the directory renamed back.
pub fn swap_back(dir: &Path, away: &Path) -> std::io::Result<()> {
    if fs::symlink_metadata(dir).is_ok_and(|m| m.file_type().is_symlink()) {
        fs::remove_file(dir)?;
    }
    fs::rename(away, dir)
}

/// Writes a report for `client` (16 hex digits, no router's) naming the list `text`, with the
/// times it chooses: `written_at` inside, and the file's mtime.
pub fn write_report(
    file: &Path,
    client: &str,
    text: &str,
    reads: Vec<u32>,
    written_at: u64,
    mtime: SystemTime,
) -> std::io::Result<()> {
    let seen = ListSeen::of(text, None);
    let report = Report {
        label: Some("a hostile co-tenant".into()),
        ..Report::loaded(client, "hostile/0.0.0", reads, seen, written_at)
    };
    fs::write(file, report.to_json())?;
    set_mtime(file, mtime)
}

/// Sets the modification time of the file at `path` (not through a link).
pub fn set_mtime(path: &Path, mtime: SystemTime) -> std::io::Result<()> {
    fs::File::options()
        .write(true)
        .open(path)?
        .set_modified(mtime)
}

/// Makes a FIFO at `path`: a reader that opened it blocking would hang.
pub fn fifo(path: &Path) -> std::io::Result<()> {
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|e| std::io::Error::new(ErrorKind::InvalidInput, e))?;
    // SAFETY: mkfifo(3) reads a NUL-terminated path that outlives the call.
    if unsafe { libc::mkfifo(c.as_ptr(), 0o644) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Unix seconds `years` from now: a time no clock of the fleet shows yet.
pub fn years_ahead(years: u64) -> u64 {
    unix_now() + years * 365 * 24 * 3600
}

pub fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

// ----------------------------------------------------------------------------- the victims

/// One victim as planted: what must stay exactly so.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Victim {
    bytes: Vec<u8>,
    ino: u64,
    mtime: (i64, i64),
}

/// Files the test owns in [`VICTIMS`], outside every shard, that the co-tenant's links point
/// at. Some are named like the clients' files, some like the co-tenant's own (so that a
/// directory of its own swapped for a link to them has the same names behind it).
pub struct Victims {
    files: BTreeMap<PathBuf, Victim>,
    dirs: BTreeSet<PathBuf>,
}

impl Victims {
    /// Plants them under `mount` (the view the co-tenant writes through).
    pub fn plant(mount: &Path) -> Victims {
        let dir = mount.join(VICTIMS);
        fs::create_dir_all(dir.join("batch-0")).expect("the victims' directory");
        let mut names: Vec<PathBuf> = (0..3)
            .map(|i| PathBuf::from(format!("device-90000{i}.json")))
            .collect();
        names.extend((0..OWN_FILES).map(|k| PathBuf::from(own_file_name(k))));
        names.push(PathBuf::from("batch-0/reading-900010.json"));
        names.push(PathBuf::from(format!("{PREFIX}below/{}", own_file_name(0))));
        fs::create_dir_all(dir.join(format!("{PREFIX}below"))).expect("the victims' directory");
        // Set well in the past: a move that kept the newer copy would lose to any client's.
        let old = UNIX_EPOCH + Duration::from_secs(978_307_200);
        for name in &names {
            let path = dir.join(name);
            fs::write(&path, format!("victim {}\n", name.display()))
                .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
            set_mtime(&path, old).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
        let (files, dirs) = Self::read(mount).expect("the victims as planted");
        Victims { files, dirs }
    }

    /// The victims' files, relative to the mount.
    pub fn files(&self) -> Vec<PathBuf> {
        self.files.keys().cloned().collect()
    }

    /// Every file and directory under the victims' directory, relative to the mount, links
    /// never followed (anything that is neither is an error: nothing planted one there).
    fn read(mount: &Path) -> Result<(BTreeMap<PathBuf, Victim>, BTreeSet<PathBuf>), String> {
        let mut files = BTreeMap::new();
        let mut dirs = BTreeSet::new();
        let mut todo = vec![PathBuf::from(VICTIMS)];
        while let Some(rel) = todo.pop() {
            let path = mount.join(&rel);
            let m = fs::symlink_metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            if m.is_dir() {
                dirs.insert(rel.clone());
                let entries =
                    fs::read_dir(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                for e in entries {
                    let e = e.map_err(|e| format!("{}: {e}", path.display()))?;
                    todo.push(rel.join(e.file_name()));
                }
            } else if m.is_file() {
                let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
                let victim = Victim {
                    bytes,
                    ino: m.ino(),
                    mtime: (m.mtime(), m.mtime_nsec()),
                };
                files.insert(rel, victim);
            } else {
                return Err(format!(
                    "{} is neither a file nor a directory",
                    rel.display()
                ));
            }
        }
        Ok((files, dirs))
    }

    /// Every victim as planted (the same inode, bytes and mtime), and nothing else there.
    pub fn check(&self, truth: &Path) -> Result<(), String> {
        let (files, dirs) = Self::read(truth).map_err(|e| format!("the victims: {e}"))?;
        for (rel, was) in &self.files {
            match files.get(rel) {
                None => return Err(format!("victim {} is gone", rel.display())),
                Some(now) if now != was => {
                    return Err(format!(
                        "victim {} changed: {:?} is now {:?}",
                        rel.display(),
                        was,
                        now
                    ))
                }
                Some(_) => {}
            }
        }
        if let Some(extra) = files.keys().find(|rel| !self.files.contains_key(*rel)) {
            return Err(format!(
                "{} appeared among the victims: something was moved there",
                extra.display()
            ));
        }
        if dirs != self.dirs {
            return Err(format!(
                "the victims' directories changed: {:?}, planted {:?}",
                dirs, self.dirs
            ));
        }
        Ok(())
    }
}

// ----------------------------------------------------------------------------- swaps in a run

/// A directory of the co-tenant's swapped for a link, and back, again and again while a
/// function run walks: `dir` (real at the start) and `away`, its name while swapped, and the
/// link's target.
pub struct Swap {
    pub dir: PathBuf,
    pub away: PathBuf,
    pub target: PathBuf,
}

/// What the swaps beside a run did: how many times the directory was swapped either way, and
/// whether it ended swapped for the link.
#[derive(Debug, Default, Clone, Copy)]
pub struct Swapped {
    pub flips: u64,
    pub swapped: bool,
}

/// Swaps `swap.dir` for a link and back, after each of `pauses` (cycled) until `done`, on a
/// thread of its own; the last state stays.
pub fn swap_beside(
    swap: Swap,
    pauses: Vec<Duration>,
    done: Arc<AtomicBool>,
) -> std::thread::JoinHandle<Swapped> {
    std::thread::spawn(move || {
        let mut out = Swapped::default();
        let pauses = if pauses.is_empty() {
            vec![Duration::from_millis(5)]
        } else {
            pauses
        };
        for pause in pauses.iter().cycle() {
            std::thread::sleep(*pause);
            if done.load(Ordering::Acquire) {
                break;
            }
            let flipped = if out.swapped {
                swap_back(&swap.dir, &swap.away)
            } else {
                swap_for_link(&swap.dir, &swap.away, &swap.target)
            };
            match flipped {
                Ok(()) => {
                    out.flips += 1;
                    out.swapped = !out.swapped;
                }
                // The function took the directory away (a drain removes what it emptied, a
                // move home made its files go): nothing more to swap.
                Err(_) => break,
            }
        }
        out
    })
}
