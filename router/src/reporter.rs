//! Writing this router's report ([`crate::report`]): which list it routes by, so that the
//! function waits for it before it moves files or removes a target.
//!
//! - [`Router::reporting`] parses the list as published (its exact text: the report carries
//!   its SHA-256), routes by it, and writes the report at once. A [`Router::new`] (a list built
//!   or parsed elsewhere, as the function and the operators' tool use) reports nothing.
//! - The file: `<file system root>/.efs-router-clients/<client id>.json`, written atomically
//!   (a `.efs-router-<16 hex>.tmp` name in that directory, written, synced, renamed over), the
//!   directory opened beneath the root without following a link, and made when missing. The
//!   root is the single mount's `base`, or in a per-target layout the mount of the shard rooted
//!   at `/`; without one, [`Reporting::fs_root`] says where the root is mounted.
//! - A background thread rewrites it every [`EVERY_SECS`]. It holds the router's state only
//!   weakly: when the last clone of the router is dropped it stops, and the report is removed
//!   (a graceful end, which the function need not wait [`LIFETIME_SECS`] to see).
//! - The lease: before a write or a move, when the last successful report is [`LEASE_SECS`]
//!   old or more, the router writes one first; if that fails the operation fails with
//!   [`ReportFault::Lapsed`] (`report-lapsed`), since by [`LIFETIME_SECS`] the function counts
//!   this client as gone and may move files under it. A read's move home is then skipped
//!   (the read still answers). The 30 s between the lease and the lifetime cover the
//!   operation in flight and a clock difference.

use crate::dir::open_beneath;
use crate::layout::Layout;
use crate::list::MountTargetList;
use crate::names::{new_private_name, random_hex16, Private};
use crate::report::{ListSeen, Report, DIR, EVERY_SECS, LIFETIME_SECS};
use crate::router::{Error, Router};
use rustix::fs::{AtFlags, Mode, OFlags};
use std::fmt;
use std::io::{self, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError, Weak};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// This router, as its reports name it.
pub const ROUTER: &str = concat!("efs-router-rust/", env!("CARGO_PKG_VERSION"));

/// The list versions this router reads.
pub const READS: [u32; 3] = [1, 2, 3];

/// A report this old or older is rewritten before the router writes or moves anything.
pub const LEASE_SECS: u64 = LIFETIME_SECS - 30;

/// A label is cut to this many bytes, so that a report stays far under its size limit.
const MAX_LABEL: usize = 256;

/// Unix seconds, by some clock.
pub type Clock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// How a router reports; the defaults suit an application.
#[derive(Clone, Default)]
pub struct Reporting {
    /// The SSM parameter's version the list was read at, when read from SSM.
    pub parameter_version: Option<i64>,
    /// A label for people (the service, the host); the host's name when `None`.
    pub label: Option<String>,
    /// Where the file system's root is mounted on this host, when the layout does not say (a
    /// per-target layout without a shard rooted at `/`).
    pub fs_root: Option<PathBuf>,
    /// The task metadata endpoint; `None` reads `ECS_CONTAINER_METADATA_URI_V4` (unset: no task).
    pub metadata_uri: Option<String>,
    /// The clock of `written_at` and of the lease (the system's when `None`): for simulations.
    pub clock: Option<Clock>,
    /// How often the background thread writes; [`EVERY_SECS`] when `None`. For simulations:
    /// the function counts a report as gone after [`LIFETIME_SECS`] whatever this says.
    pub every: Option<Duration>,
    /// The router's name in the report, [`ROUTER`] when `None`: a binding (the Python
    /// package) names itself, so an operator sees which language a client runs.
    pub router: Option<String>,
}

impl fmt::Debug for Reporting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reporting")
            .field("parameter_version", &self.parameter_version)
            .field("label", &self.label)
            .field("fs_root", &self.fs_root)
            .field("metadata_uri", &self.metadata_uri)
            .field("every", &self.every)
            .field("router", &self.router)
            .finish_non_exhaustive()
    }
}

/// Why a router could not report.
#[derive(Debug, thiserror::Error)]
pub enum ReportFault {
    #[error("no directory for the report: a per-target layout without a shard rooted at / needs Reporting::fs_root, where the file system's root is mounted")]
    NoRoot,
    #[error("report-lapsed: this router's report was last written at {last_ok:?} (Unix seconds), {LEASE_SECS} s or more ago, and writing it now failed; the function may count this client as gone, so nothing is written or moved: {source}")]
    Lapsed {
        last_ok: Option<u64>,
        #[source]
        source: io::Error,
    },
}

impl ReportFault {
    /// `no-report-dir` or `report-lapsed`.
    pub fn kind(&self) -> &'static str {
        match self {
            ReportFault::NoRoot => "no-report-dir",
            ReportFault::Lapsed { .. } => "report-lapsed",
        }
    }
}

/// A router's reporting, shared by its clones.
#[derive(Clone)]
pub(crate) struct Reporter(Arc<Shared>);

impl fmt::Debug for Reporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reporter")
            .field("client", &self.0.client)
            .field("file", &self.0.file())
            .finish_non_exhaustive()
    }
}

struct Shared {
    client: String,
    root: PathBuf,
    clock: Clock,
    /// The report as last written (or to be written).
    report: Mutex<Report>,
    /// Unix seconds of the last successful write; 0 before the first.
    last_ok: AtomicU64,
    /// Set when the router is gone or closed: the thread ends.
    stop: Arc<(Mutex<bool>, Condvar)>,
    /// Set by [`Router::close_report`]: nothing is written again, so the lease fails.
    closed: std::sync::atomic::AtomicBool,
}

impl Shared {
    fn file(&self) -> PathBuf {
        self.root.join(DIR).join(format!("{}.json", self.client))
    }

    /// Writes the report now.
    fn write(&self) -> io::Result<()> {
        let mut report = self.report.lock().unwrap_or_else(PoisonError::into_inner);
        self.write_locked(&mut report)
    }

    /// Writes `report` (the lock held throughout, so writes never cross).
    fn write_locked(&self, report: &mut Report) -> io::Result<()> {
        if self.closed.load(Ordering::Acquire) {
            return Err(io::Error::other(
                "the router was closed: it reports no more",
            ));
        }
        let now = (self.clock)();
        report.written_at = now;
        write_atomically(
            &self.root,
            &format!("{}.json", self.client),
            report.to_json().as_bytes(),
        )?;
        self.last_ok.store(now.max(1), Ordering::Release);
        Ok(())
    }

    /// Whether the last successful report is younger than [`LEASE_SECS`].
    fn fresh(&self) -> bool {
        let last = self.last_ok.load(Ordering::Acquire);
        !self.closed.load(Ordering::Acquire)
            && last != 0
            && (self.clock)().saturating_sub(last) < LEASE_SECS
    }

    fn lease(&self) -> Result<(), ReportFault> {
        if self.fresh() {
            return Ok(());
        }
        let mut report = self.report.lock().unwrap_or_else(PoisonError::into_inner);
        // Threads that found it stale together write it once.
        if self.fresh() {
            return Ok(());
        }
        self.write_locked(&mut report)
            .map_err(|source| ReportFault::Lapsed {
                last_ok: Some(self.last_ok.load(Ordering::Acquire)).filter(|&t| t != 0),
                source,
            })
    }
}

impl Shared {
    /// The thread stopped and the report removed: a graceful end.
    fn stop(&self) {
        let (stopped, wake) = &*self.stop;
        *stopped.lock().unwrap_or_else(PoisonError::into_inner) = true;
        wake.notify_all();
        if let Ok(dir) = open_beneath(&self.root, DIR, false) {
            let _ = rustix::fs::unlinkat(&dir, format!("{}.json", self.client), AtFlags::empty());
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Reporter {
    /// Writes the first report (a failure leaves the lease lapsed: the router's first write
    /// tries again) and starts the thread that rewrites it.
    fn start(root: PathBuf, list: ListSeen, options: Reporting) -> Reporter {
        let clock = options.clock.unwrap_or_else(|| Arc::new(unix_now));
        let every = options
            .every
            .unwrap_or(Duration::from_secs(EVERY_SECS))
            .max(Duration::from_millis(1));
        let client = random_hex16();
        let task = match options.metadata_uri {
            Some(uri) => crate::metadata::task_arn(&uri).ok(),
            None => crate::metadata::task_arn_from_env(),
        };
        let now = clock();
        let report = Report {
            every: every.as_secs(),
            task,
            label: options.label.or_else(hostname).map(|l| cut(&l, MAX_LABEL)),
            ..Report::loaded(
                client.clone(),
                options.router.unwrap_or_else(|| ROUTER.to_owned()),
                READS.to_vec(),
                list,
                now,
            )
        };
        let shared = Arc::new(Shared {
            client,
            root,
            clock,
            report: Mutex::new(report),
            last_ok: AtomicU64::new(0),
            stop: Arc::new((Mutex::new(false), Condvar::new())),
            closed: std::sync::atomic::AtomicBool::new(false),
        });
        let _ = shared.write();
        let (weak, stop) = (Arc::downgrade(&shared), Arc::clone(&shared.stop));
        // Without the thread (it could not start), the lease still keeps operations honest.
        let _ = std::thread::Builder::new()
            .name("efs-router-report".to_owned())
            .spawn(move || rewrite_every(&weak, &stop, every));
        Reporter(shared)
    }
}

/// The thread: every `every`, the report rewritten, until the router is gone. A failed write
/// is tried again at the next tick; the lease stops operations meanwhile.
fn rewrite_every(weak: &Weak<Shared>, stop: &(Mutex<bool>, Condvar), every: Duration) {
    let (stopped, wake) = stop;
    loop {
        let guard = stopped.lock().unwrap_or_else(PoisonError::into_inner);
        let (guard, _) = wake
            .wait_timeout_while(guard, every, |stopped| !*stopped)
            .unwrap_or_else(PoisonError::into_inner);
        if *guard {
            return;
        }
        drop(guard);
        let Some(shared) = weak.upgrade() else {
            return;
        };
        let _ = shared.write();
    }
}

impl Router {
    /// A router on the list published as `text` (the parameter's value, exactly), that reports
    /// it ([`crate::reporter`]): the report is written now and every [`EVERY_SECS`] while a
    /// clone of the router lives, and removed when the last is dropped. A new list is a new
    /// router (and a new client). Fails as [`MountTargetList::from_json`] and [`Router::new`]
    /// do, and with [`ReportFault::NoRoot`] when no directory can hold the report; a report
    /// that cannot be written is no error here: the first write or move tries again (the lease).
    pub fn reporting(text: &str, layout: Layout, options: Reporting) -> Result<Router, Error> {
        let list = MountTargetList::from_json(text)?;
        let mut router = Router::new(list, layout)?;
        let root = match (&options.fs_root, router.layout()) {
            (Some(root), _) => root.clone(),
            (None, Layout::SingleMount { base }) => base.clone(),
            (None, Layout::PerTarget { mounts }) => router
                .shards()
                .iter()
                .position(|t| t.root == "/")
                .map(|i| mounts[i].clone())
                .ok_or(ReportFault::NoRoot)?,
        };
        let seen = ListSeen::of(text, options.parameter_version);
        router.reporter = Some(Reporter::start(root, seen, options));
        Ok(router)
    }

    /// This router's client id, when it reports.
    pub fn client_id(&self) -> Option<&str> {
        self.reporter.as_ref().map(|r| r.0.client.as_str())
    }

    /// Where this router's report is, when it reports.
    pub fn report_file(&self) -> Option<PathBuf> {
        self.reporter.as_ref().map(|r| r.0.file())
    }

    /// Records a re-read of the list's source that found it unchanged (`ok`) or failed, for the
    /// next report (an application that refreshes its list itself). A changed list is a new
    /// router ([`Router::reporting`]).
    pub fn note_refresh(&self, ok: bool) {
        if let Some(r) = &self.reporter {
            let now = (r.0.clock)();
            let mut report = r.0.report.lock().unwrap_or_else(PoisonError::into_inner);
            if ok {
                report.refreshed_at = Some(now);
                report.refresh_failed_at = None;
            } else {
                report.refresh_failed_at = Some(now);
            }
        }
    }

    /// A router on the list published as `text`, read again by an application that refreshes
    /// its list itself, that keeps this router's layout and, when it reports, its client: the
    /// report names the new list at once when it differs (`loaded_at` now), and the refresh.
    /// Fails as [`Router::reporting`] does; this router is unchanged then.
    pub fn with_list(&self, text: &str, parameter_version: Option<i64>) -> Result<Router, Error> {
        let list = MountTargetList::from_json(text)?;
        let mut router = Router::new(list, self.layout().clone())?;
        router.reporter = self.reporter.clone();
        if let Some(r) = &router.reporter {
            let seen = ListSeen::of(text, parameter_version);
            let now = (r.0.clock)();
            let mut report = r.0.report.lock().unwrap_or_else(PoisonError::into_inner);
            report.refreshed_at = Some(now);
            report.refresh_failed_at = None;
            if report.list != seen {
                report.list = seen;
                report.loaded_at = now;
                // A failure is the lease's to meet: the next write or move tries again.
                let _ = r.0.write_locked(&mut report);
            }
        }
        Ok(router)
    }

    /// Writes this router's report now, as the background thread does at its tick (an
    /// application's own schedule, or a test's).
    pub fn write_report(&self) -> io::Result<()> {
        match &self.reporter {
            Some(r) => r.0.write(),
            None => Ok(()),
        }
    }

    /// Stops reporting now and removes the report, for every clone of this router: it then
    /// writes and moves nothing more ([`ReportFault::Lapsed`]), as the function may count it
    /// gone. A binding's `close`, where dropping the last clone is not in the caller's hands.
    pub fn close_report(&self) {
        if let Some(r) = &self.reporter {
            r.0.closed.store(true, Ordering::Release);
            // Taken so that a write in flight finishes before the file goes.
            let _report = r.0.report.lock().unwrap_or_else(PoisonError::into_inner);
            r.0.stop();
        }
    }

    /// The lease: before a write or a move, a report younger than [`LEASE_SECS`], or one
    /// written now. A router that does not report holds no lease.
    pub fn lease(&self) -> Result<(), Error> {
        match &self.reporter {
            Some(r) => Ok(r.0.lease()?),
            None => Ok(()),
        }
    }
}

/// Writes `bytes` as `name` in `<root>/.efs-router-clients` (made when missing, opened without
/// following a link): a private temporary name, written, synced, renamed over.
fn write_atomically(root: &Path, name: &str, bytes: &[u8]) -> io::Result<()> {
    let dir = reports_dir(root)?;
    let tmp = new_private_name(Private::Temporary);
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = rustix::fs::openat(&dir, &tmp, flags, Mode::from_raw_mode(0o644))?;
    let mut file = std::fs::File::from(fd);
    let written = (|| {
        file.write_all(bytes)?;
        file.sync_all()?;
        rustix::fs::renameat(&dir, &tmp, &dir, name)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = rustix::fs::unlinkat(&dir, &tmp, AtFlags::empty());
    }
    written
}

/// `<root>/.efs-router-clients`, opened without following a link; made when missing, writable
/// by every user whatever this process's umask (tasks of other users report there too) and
/// sticky, so no client can remove another's report: a report taken away could let the function
/// count a live client as gone.
fn reports_dir(root: &Path) -> io::Result<OwnedFd> {
    match open_beneath(root, DIR, false) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            let dir = open_beneath(root, DIR, true)?;
            // Another client may have made it first; then it is theirs to have set.
            let _ = rustix::fs::fchmod(&dir, Mode::from_raw_mode(0o1777));
            Ok(dir)
        }
        other => other,
    }
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The host's name (a container's is its task's short id on Fargate).
fn hostname() -> Option<String> {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .ok()
        .or_else(|| std::env::var("HOSTNAME").ok())?;
    Some(name.trim().to_owned()).filter(|n| !n.is_empty())
}

/// `text` cut to at most `max` bytes, on a character boundary.
fn cut(text: &str, max: usize) -> String {
    let mut end = text.len().min(max);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}
