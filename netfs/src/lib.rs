//! netfs: a passthrough FUSE file system over a local directory that behaves, for what it
//! costs, like a network file system such as EFS: every operation the kernel sends is counted
//! by kind, and each one that would be a round trip to an NFS server is delayed by a
//! configurable round trip (1 ms by default).
//!
//! The model, and why:
//!
//! - **Round trips.** LOOKUP, GETATTR, SETATTR, CREATE, MKNOD, MKDIR, LINK, UNLINK, RMDIR,
//!   RENAME, SYMLINK, READLINK, OPEN, READ, WRITE, FSYNC, STATFS, ACCESS and the xattr calls
//!   each sleep one round trip before they are served. OPENDIR, FLUSH, RELEASE, RELEASEDIR,
//!   FORGET, INIT, INTERRUPT and IOCTL (answered ENOSYS) are counted but not delayed: NFS has
//!   no such call (a directory is not opened on the server; NFSv4 sends CLOSE without waiting
//!   for it; a terminal ioctl is answered locally) or they are FUSE's own bookkeeping.
//! - **READDIR** is delayed once per `names_per_readdir` names returned (544 by default: what
//!   a 32 KiB NFS READDIR reply holds), whatever the size of the kernel's FUSE requests: the
//!   count `READDIR` is those simulated replies, `READDIR_REQUESTS` the FUSE requests.
//! - **No entry types.** Directory entries carry `DT_UNKNOWN`, as NFSv3 and many NFSv4
//!   servers give them, so a reader that wants a type must stat.
//! - **Caching.** A file's name is never cached by the kernel (entry timeout 0 by default):
//!   every path resolution of a file reaches the server with a LOOKUP, as a file written or
//!   moved by another client must be seen (close-to-open). Directories' names and
//!   attributes, and files' attributes, are cached for a short time (1 s by default), as NFS
//!   caches them (`acdirmin`, `acregmin`): with no cache at all every path component would be a
//!   LOOKUP and `stat` would answer a LOOKUP with a second GETATTR, depending on the clock
//!   tick, which neither NFS nor a deterministic test wants. All three are settings.
//! - **A client whose cache of names is older than the server** (`name_ttl` above 0, and
//!   `revalidate_dirs_on_open`): the kernel trusts a file's name for `name_ttl`, so a name
//!   removed or replaced in the backing directory (by "another client") still answers `stat`
//!   with the file this client looked up, as an NFS client's name cache does (docs/design.md
//!   fact 13). And as NFS's close-to-open does for directories, opening a directory drops the
//!   names cached in it that changed in the backing directory since the kernel was given them
//!   (`FUSE_NOTIFY_INVAL_ENTRY`), so the next lookup of them asks the server. (NFS drops every
//!   name of a directory that changed; the names that did not change would be found again as
//!   they were. A name's change is told by its inode, exactly: the directory's times are
//!   coarser than a tick.)
//! - **Like NFS, not like a local disk**: `renameat2` with flags (`RENAME_NOREPLACE`) is
//!   refused with `EINVAL` (Linux's NFS client does the same), lookups and readdirs in one
//!   directory run in parallel (`FUSE_PARALLEL_DIROPS`), and the kernel still holds a
//!   directory's lock through a create, link, unlink or rename in it, as it does over NFS.
//! - **Concurrency.** Requests are served by a pool of threads (64 by default), each reading
//!   the FUSE device, so concurrent requests are delayed concurrently.
//!
//! The FUSE protocol is spoken directly over `/dev/fuse` (about the size of a passthrough on a
//! FUSE crate): the `fuser` crate cannot answer a directory entry without a type. Mounting goes
//! through `fusermount3` when it is installed (or the one `NETFS_FUSERMOUNT` names; `none`: never),
//! or `mount(2)` when running as root without it.
//!
//! A process that serves the mount itself (tests, the benchmark) and is killed while its own
//! requests are in flight can hang as a zombie with the mount left behind: abort the
//! connection (`echo 1 > /sys/fs/fuse/connections/<n>/abort`, with `fusectl` mounted there) and
//! `fusermount3 -u -z <mount>`. `netfs-sim`, a process of its own, unmounts on SIGINT/SIGTERM.

use std::collections::{BTreeMap, HashMap};
use std::ffi::{CString, OsStr, OsString};
use std::fs;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::os::unix::fs::{DirEntryExt, MetadataExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod abi;
use abi::*;

/// How the simulated network behaves.
#[derive(Debug, Clone)]
pub struct Options {
    /// The delay of one round trip.
    pub round_trip: Duration,
    /// Names one READDIR round trip returns (an NFS reply of 32 KiB holds about 544).
    pub names_per_readdir: usize,
    /// How long the kernel may trust a file's name (0: every resolution is a LOOKUP).
    pub name_ttl: Duration,
    /// How long the kernel may trust a directory's name and attributes.
    pub dir_ttl: Duration,
    /// How long the kernel may trust a file's attributes.
    pub attr_ttl: Duration,
    /// Threads serving requests.
    pub threads: usize,
    /// Opening a directory that changed in the backing directory since the kernel last looked
    /// drops the names the kernel cached in it (see the crate's documentation).
    pub revalidate_dirs_on_open: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            round_trip: Duration::from_millis(1),
            names_per_readdir: 544,
            name_ttl: Duration::ZERO,
            dir_ttl: Duration::from_secs(1),
            attr_ttl: Duration::from_secs(1),
            threads: 64,
            revalidate_dirs_on_open: false,
        }
    }
}

/// Operation counters, by kind.
#[derive(Debug)]
pub struct Stats {
    ops: Vec<AtomicU64>,
    readdir_round_trips: AtomicU64,
    round_trips: AtomicU64,
    in_flight: AtomicU64,
    max_in_flight: AtomicU64,
}

impl Default for Stats {
    fn default() -> Self {
        Stats {
            ops: (0..OPCODE_SLOTS).map(|_| AtomicU64::new(0)).collect(),
            readdir_round_trips: AtomicU64::new(0),
            round_trips: AtomicU64::new(0),
            in_flight: AtomicU64::new(0),
            max_in_flight: AtomicU64::new(0),
        }
    }
}

impl Stats {
    fn op(&self, opcode: u32) {
        let slot = (opcode as usize).min(OPCODE_SLOTS - 1);
        self.ops[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// Sleeps `n` round trips, counting them, and how many run at once.
    fn wait(&self, n: u64, rt: Duration) {
        if n == 0 {
            return;
        }
        self.round_trips.fetch_add(n, Ordering::Relaxed);
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.max_in_flight.fetch_max(now, Ordering::Relaxed);
        if !rt.is_zero() {
            std::thread::sleep(rt * n as u32);
        }
        self.in_flight.fetch_sub(1, Ordering::Relaxed);
    }

    /// The counts so far: each kind seen (`LOOKUP`, `READDIR`, ...), `READDIR_REQUESTS`,
    /// `ROUND_TRIPS` (all delayed round trips) and `MAX_IN_FLIGHT` (most round trips at once).
    pub fn snapshot(&self) -> Counts {
        let mut m = BTreeMap::new();
        for (i, c) in self.ops.iter().enumerate() {
            let n = c.load(Ordering::Relaxed);
            if n == 0 {
                continue;
            }
            if i as u32 == FUSE_READDIR {
                m.insert("READDIR_REQUESTS".to_owned(), n);
            } else {
                m.insert(opcode_name(i as u32), n);
            }
        }
        let rd = self.readdir_round_trips.load(Ordering::Relaxed);
        if rd > 0 {
            m.insert("READDIR".to_owned(), rd);
        }
        m.insert(
            "ROUND_TRIPS".to_owned(),
            self.round_trips.load(Ordering::Relaxed),
        );
        m.insert(
            "MAX_IN_FLIGHT".to_owned(),
            self.max_in_flight.load(Ordering::Relaxed),
        );
        Counts(m)
    }

    /// Sets every counter back to zero.
    pub fn reset(&self) {
        for c in &self.ops {
            c.store(0, Ordering::Relaxed);
        }
        self.readdir_round_trips.store(0, Ordering::Relaxed);
        self.round_trips.store(0, Ordering::Relaxed);
        self.max_in_flight.store(0, Ordering::Relaxed);
    }
}

/// Kinds that are the test bed's own bookkeeping or the kernel's housekeeping, not round trips
/// of the work measured: left out of summaries.
const BOOKKEEPING: &[&str] = &[
    "ROUND_TRIPS",
    "MAX_IN_FLIGHT",
    "READDIR_REQUESTS",
    "FORGET",
    "BATCH_FORGET",
    "RELEASE",
    "RELEASEDIR",
    "FLUSH",
    "OPENDIR",
    "INTERRUPT",
    "IOCTL",
    "INIT",
];

/// A snapshot of the counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts(pub BTreeMap<String, u64>);

impl Counts {
    /// The count of one kind (0 when never seen).
    pub fn get(&self, kind: &str) -> u64 {
        self.0.get(kind).copied().unwrap_or(0)
    }

    /// Round trips delayed (READDIR counted per simulated reply).
    pub fn round_trips(&self) -> u64 {
        self.get("ROUND_TRIPS")
    }

    /// The counts as one JSON object.
    pub fn to_json(&self) -> String {
        let body: Vec<String> = self.0.iter().map(|(k, v)| format!("\"{k}\":{v}")).collect();
        format!("{{{}}}", body.join(","))
    }

    /// The kinds that were round trips, as `KIND n` pairs (no bookkeeping kinds), for reports.
    pub fn summary(&self) -> String {
        self.summary_per(1)
    }

    /// [`Counts::summary`] per operation of `n`: `KIND x` with x = count / n (whole when it is,
    /// else two decimals), or `KIND count in all` for a kind under 0.01 per operation.
    pub fn summary_per(&self, n: u64) -> String {
        let parts: Vec<String> = self
            .0
            .iter()
            .filter(|(k, v)| **v > 0 && !BOOKKEEPING.contains(&k.as_str()))
            .map(|(k, v)| {
                if n <= 1 {
                    return format!("{k} {v}");
                }
                let x = *v as f64 / n as f64;
                if x < 0.01 {
                    format!("{k} {v} in all")
                } else if (x - x.round()).abs() < 0.005 {
                    format!("{k} {}", x.round())
                } else {
                    format!("{k} {x:.2}")
                }
            })
            .collect();
        if parts.is_empty() {
            "none".to_owned()
        } else {
            parts.join(", ")
        }
    }
}

/// Why the test bed cannot run here.
#[derive(Debug)]
pub struct Unavailable(pub String);

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

/// A mounted netfs. Dropping it unmounts.
#[derive(Debug)]
pub struct NetFs {
    mountpoint: PathBuf,
    stats: Arc<Stats>,
    mounted: bool,
}

impl NetFs {
    /// Serves `backing` at `mountpoint` (an existing empty directory) until dropped.
    pub fn mount(backing: &Path, mountpoint: &Path, options: Options) -> io::Result<NetFs> {
        let backing = fs::canonicalize(backing)?;
        let mountpoint = fs::canonicalize(mountpoint)?;
        let root_ino = fs::metadata(&backing)?.ino();
        let fd = mount_fuse(&mountpoint)?;
        let stats = Arc::new(Stats::default());
        let server = Arc::new(Server {
            fd,
            opts: options.clone(),
            stats: stats.clone(),
            root_ino,
            nodes: Mutex::new(HashMap::from([(
                FUSE_ROOT_ID,
                Node {
                    paths: vec![backing.clone()],
                    nlookup: 1,
                },
            )])),
            dirs: Mutex::new(HashMap::new()),
            given: Mutex::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
        });
        for i in 0..options.threads.max(1) {
            let s = server.clone();
            std::thread::Builder::new()
                .name(format!("netfs-{i}"))
                .spawn(move || s.serve())?;
        }
        let fs = NetFs {
            mountpoint,
            stats,
            mounted: true,
        };
        // The kernel answers nothing on the mount until INIT is done; one stat waits for it.
        fs::metadata(&fs.mountpoint)?;
        fs.stats.reset();
        Ok(fs)
    }

    /// Mounts like [`NetFs::mount`], or says why the test bed cannot run here (no
    /// `/dev/fuse`, neither `fusermount3` nor root, or the mount failed).
    pub fn try_mount(
        backing: &Path,
        mountpoint: &Path,
        options: Options,
    ) -> Result<NetFs, Unavailable> {
        if !Path::new("/dev/fuse").exists() {
            return Err(Unavailable("no /dev/fuse".to_owned()));
        }
        if find_fusermount().is_none() && unsafe { libc::geteuid() } != 0 {
            return Err(Unavailable(
                "no fusermount3 (Debian package fuse3), and not root".to_owned(),
            ));
        }
        NetFs::mount(backing, mountpoint, options)
            .map_err(|e| Unavailable(format!("mounting FUSE failed: {e}")))
    }

    pub fn mountpoint(&self) -> &Path {
        &self.mountpoint
    }

    /// The counters, live.
    pub fn stats(&self) -> &Arc<Stats> {
        &self.stats
    }

    pub fn counts(&self) -> Counts {
        self.stats.snapshot()
    }

    pub fn reset(&self) {
        self.stats.reset()
    }

    /// Unmounts now (also done on drop).
    pub fn unmount(&mut self) -> io::Result<()> {
        if !self.mounted {
            return Ok(());
        }
        self.mounted = false;
        unmount(&self.mountpoint)
    }
}

impl Drop for NetFs {
    fn drop(&mut self) {
        if let Err(e) = self.unmount() {
            eprintln!("netfs: unmounting {}: {e}", self.mountpoint.display());
        }
    }
}

/// A test bed for tests: a backing directory and a mount of it, both temporary.
#[derive(Debug)]
pub struct TestBed {
    // Field order: the mount goes before the directories it uses.
    pub fs: NetFs,
    pub backing: tempfile::TempDir,
    pub mnt: tempfile::TempDir,
}

impl TestBed {
    /// A test bed with no delay (counts are what tests check), or `None` after printing why
    /// FUSE cannot be used here: the caller then skips, except in CI (`CI` set), where a test
    /// that cannot run fails instead (see [`TestBed::with`]).
    pub fn new(test: &str) -> Option<TestBed> {
        TestBed::with(
            test,
            Options {
                round_trip: Duration::ZERO,
                dir_ttl: Duration::from_secs(600),
                attr_ttl: Duration::from_secs(600),
                threads: 16,
                ..Options::default()
            },
        )
    }

    pub fn with(test: &str, options: Options) -> Option<TestBed> {
        let backing = tempfile::tempdir().expect("temporary directory");
        let mnt = tempfile::tempdir().expect("temporary directory");
        match NetFs::try_mount(backing.path(), mnt.path(), options) {
            Ok(fs) => Some(TestBed { fs, backing, mnt }),
            // In CI a test that cannot run must fail, never pass by skipping (`make test`
            // installs fuse3 for a machine that is not root).
            Err(e) if std::env::var_os("CI").is_some_and(|v| !v.is_empty()) => {
                panic!("{test}: FUSE test bed unavailable in CI (CI is set): {e}")
            }
            Err(e) => {
                eprintln!("SKIP {test}: FUSE test bed unavailable: {e}");
                None
            }
        }
    }

    /// The mounted view of the backing directory.
    pub fn path(&self) -> &Path {
        self.fs.mountpoint()
    }
}

/// `fusermount3` from `NETFS_FUSERMOUNT` (`none`: do not use it), else from `PATH`.
fn find_fusermount() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NETFS_FUSERMOUNT") {
        return (p != "none").then(|| PathBuf::from(p));
    }
    let path = std::env::var_os("PATH").unwrap_or_else(|| "/usr/bin:/bin".into());
    std::env::split_paths(&path)
        .chain([PathBuf::from("/usr/bin"), PathBuf::from("/bin")])
        .map(|d| d.join("fusermount3"))
        .find(|p| p.is_file())
}

fn mount_fuse(mountpoint: &Path) -> io::Result<Arc<OwnedFd>> {
    match find_fusermount() {
        Some(fusermount) => mount_with_fusermount(&fusermount, mountpoint),
        None => mount_directly(mountpoint),
    }
    .map(Arc::new)
}

/// `fusermount3` opens `/dev/fuse`, mounts it and sends the descriptor back over a socket.
fn mount_with_fusermount(fusermount: &Path, mountpoint: &Path) -> io::Result<OwnedFd> {
    use std::os::unix::process::CommandExt;
    let (ours, theirs) = UnixStream::pair()?;
    let their_fd = theirs.as_raw_fd();
    let mut cmd = Command::new(fusermount);
    cmd.arg("-o")
        .arg("rw,nosuid,nodev,fsname=netfs,subtype=netfs")
        .arg("--")
        .arg(mountpoint)
        .env("_FUSE_COMMFD", their_fd.to_string());
    // SAFETY: only fcntl, which is async-signal-safe, between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            let flags = libc::fcntl(their_fd, libc::F_GETFD);
            if flags < 0 || libc::fcntl(their_fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let out = cmd.output()?;
    drop(theirs);
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "fusermount3: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    receive_fd(&ours)
}

fn receive_fd(sock: &UnixStream) -> io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut cbuf = [0u64; 8];
    // SAFETY: msghdr is plain data; the buffers outlive the call.
    unsafe {
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = cbuf.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of_val(&cbuf) as _;
        let n = libc::recvmsg(sock.as_raw_fd(), &mut msg, libc::MSG_CMSG_CLOEXEC);
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(io::Error::other("fusermount3 sent no file descriptor"));
        }
        let fd: RawFd = std::ptr::read_unaligned(libc::CMSG_DATA(cmsg).cast());
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// As root without `fusermount3`: `mount(2)` of a `/dev/fuse` descriptor.
fn mount_directly(mountpoint: &Path) -> io::Result<OwnedFd> {
    let dev = fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/fuse")?;
    let fd: OwnedFd = dev.into();
    // SAFETY: plain calls with valid C strings.
    unsafe {
        let data = CString::new(format!(
            "fd={},rootmode=40000,user_id={},group_id={},allow_other",
            fd.as_raw_fd(),
            libc::geteuid(),
            libc::getegid()
        ))
        .unwrap();
        let target = cstring(mountpoint.as_os_str())?;
        if libc::mount(
            c"netfs".as_ptr(),
            target.as_ptr(),
            c"fuse.netfs".as_ptr(),
            libc::MS_NOSUID | libc::MS_NODEV,
            data.as_ptr().cast(),
        ) != 0
        {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(fd)
}

/// Unmounts with `fusermount3 -u` (lazily if busy), or `umount2` as root.
pub fn unmount(mountpoint: &Path) -> io::Result<()> {
    if let Some(fusermount) = find_fusermount() {
        for args in [&["-u"][..], &["-u", "-z"][..]] {
            let out = Command::new(&fusermount)
                .args(args)
                .arg(mountpoint)
                .output()?;
            if out.status.success() {
                return Ok(());
            }
            if args.len() == 2 {
                return Err(io::Error::other(format!(
                    "fusermount3 -u: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
        }
        unreachable!()
    }
    let target = cstring(mountpoint.as_os_str())?;
    // SAFETY: a valid C string.
    if unsafe { libc::umount2(target.as_ptr(), libc::MNT_DETACH) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn cstring(s: &OsStr) -> io::Result<CString> {
    CString::new(s.as_bytes()).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

fn last_errno() -> i32 {
    io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// What the server knows of an inode: its current names in the backing directory.
struct Node {
    paths: Vec<PathBuf>,
    nlookup: u64,
}

/// An open directory: the names read so far and the simulated NFS replies fetched.
struct DirState {
    reader: Option<fs::ReadDir>,
    entries: Vec<(u64, OsString)>,
    /// The highest simulated READDIR reply (a window of `names_per_readdir` entries) fetched.
    fetched: Option<usize>,
    next_offset: usize,
}

struct Server {
    fd: Arc<OwnedFd>,
    opts: Options,
    stats: Arc<Stats>,
    root_ino: u64,
    nodes: Mutex<HashMap<u64, Node>>,
    dirs: Mutex<HashMap<u64, Arc<Mutex<DirState>>>>,
    /// The names the kernel was given, by backing directory, each with the inode it named
    /// then (`revalidate_dirs_on_open`).
    given: Mutex<HashMap<PathBuf, Vec<(OsString, u64)>>>,
    next_fh: AtomicU64,
}

type Reply = Result<Vec<u8>, i32>;

impl Server {
    fn serve(&self) {
        let mut buf = vec![0u8; MAX_WRITE as usize + 64 * 1024];
        loop {
            // SAFETY: reading into our own buffer.
            let n = unsafe {
                libc::read(
                    self.fd.as_raw_fd(),
                    buf.as_mut_ptr().cast(),
                    buf.len() as libc::size_t,
                )
            };
            if n < 0 {
                match last_errno() {
                    libc::EINTR | libc::EAGAIN | libc::ENOENT => continue,
                    _ => return, // ENODEV: unmounted
                }
            }
            let n = n as usize;
            if n < IN_HEADER_LEN {
                continue;
            }
            let req = Request::parse(&buf[..n]);
            self.handle(&req);
        }
    }

    fn handle(&self, req: &Request) {
        self.stats.op(req.opcode);
        if is_round_trip(req.opcode) {
            self.stats.wait(1, self.opts.round_trip);
        }
        let reply = match req.opcode {
            FUSE_INIT => self.init(req),
            FUSE_DESTROY => Ok(Vec::new()),
            FUSE_FORGET => {
                let mut a = req.args();
                self.forget(req.nodeid, a.u64());
                return;
            }
            FUSE_BATCH_FORGET => {
                let mut a = req.args();
                let count = a.u32();
                a.u32();
                for _ in 0..count {
                    let (node, n) = (a.u64(), a.u64());
                    self.forget(node, n);
                }
                return;
            }
            FUSE_INTERRUPT | FUSE_NOTIFY_REPLY => return,
            FUSE_LOOKUP => self.lookup(req),
            FUSE_GETATTR => self.getattr(req),
            FUSE_SETATTR => self.setattr(req),
            FUSE_READLINK => self.readlink(req),
            FUSE_SYMLINK => self.symlink(req),
            FUSE_MKNOD => self.mknod(req),
            FUSE_MKDIR => self.mkdir(req),
            FUSE_UNLINK => self.remove(req, false),
            FUSE_RMDIR => self.remove(req, true),
            FUSE_RENAME => self.rename(req, false),
            FUSE_RENAME2 => self.rename(req, true),
            FUSE_LINK => self.link(req),
            FUSE_OPEN => self.open(req),
            FUSE_CREATE => self.create(req),
            FUSE_READ => self.read(req),
            FUSE_WRITE => self.write(req),
            FUSE_FLUSH | FUSE_FSYNCDIR => Ok(Vec::new()),
            FUSE_FSYNC => self.fsync(req),
            FUSE_RELEASE => {
                let mut a = req.args();
                // SAFETY: the descriptor is ours, opened by OPEN or CREATE.
                unsafe { libc::close(a.u64() as RawFd) };
                Ok(Vec::new())
            }
            FUSE_OPENDIR => self.opendir(req),
            FUSE_READDIR => self.readdir(req),
            FUSE_RELEASEDIR => {
                let mut a = req.args();
                self.dirs.lock().unwrap().remove(&a.u64());
                Ok(Vec::new())
            }
            FUSE_STATFS => self.statfs(),
            FUSE_ACCESS => self.access(req),
            _ => Err(libc::ENOSYS),
        };
        self.send(req.unique, reply);
    }

    fn send(&self, unique: u64, reply: Reply) {
        let (error, body) = match reply {
            Ok(body) => (0i32, body),
            Err(e) => (-e, Vec::new()),
        };
        let mut out = Vec::with_capacity(OUT_HEADER_LEN + body.len());
        put_u32(&mut out, (OUT_HEADER_LEN + body.len()) as u32);
        put_i32(&mut out, error);
        put_u64(&mut out, unique);
        out.extend_from_slice(&body);
        // SAFETY: writing our own buffer. A failure (ENOENT: the request was interrupted and
        // is gone) needs nothing done.
        unsafe {
            libc::write(self.fd.as_raw_fd(), out.as_ptr().cast(), out.len());
        }
    }

    fn init(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let (major, minor, max_readahead, kernel_flags) = (a.u32(), a.u32(), a.u32(), a.u32());
        if major < 7 || (major == 7 && minor < 31) {
            return Err(libc::EPROTO);
        }
        let wanted = FUSE_BIG_WRITES | FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES;
        let mut out = Vec::with_capacity(64);
        put_u32(&mut out, 7);
        put_u32(&mut out, 31);
        put_u32(&mut out, max_readahead);
        put_u32(&mut out, kernel_flags & wanted);
        put_u16(&mut out, 64); // max_background
        put_u16(&mut out, 48); // congestion_threshold
        put_u32(&mut out, MAX_WRITE);
        put_u32(&mut out, 1); // time_gran
        put_u16(&mut out, (MAX_WRITE / 4096) as u16); // max_pages
        out.resize(64, 0);
        Ok(out)
    }

    fn path_of(&self, nodeid: u64) -> Result<PathBuf, i32> {
        let nodes = self.nodes.lock().unwrap();
        nodes
            .get(&nodeid)
            .and_then(|n| n.paths.first().cloned())
            .ok_or(libc::ESTALE)
    }

    fn child(&self, parent: u64, name: &[u8]) -> Result<PathBuf, i32> {
        Ok(self.path_of(parent)?.join(OsStr::from_bytes(name)))
    }

    fn nodeid(&self, ino: u64) -> u64 {
        if ino == self.root_ino {
            FUSE_ROOT_ID
        } else {
            ino + 2
        }
    }

    fn ttl(&self, is_dir: bool) -> (Duration, Duration) {
        if is_dir {
            (self.opts.dir_ttl, self.opts.dir_ttl)
        } else {
            (self.opts.name_ttl, self.opts.attr_ttl)
        }
    }

    /// An entry reply for `path`, which the kernel now holds one more reference to.
    fn entry(&self, path: PathBuf) -> Reply {
        let md = fs::symlink_metadata(&path).map_err(|e| errno(&e))?;
        self.name_given(&path, md.ino());
        let nodeid = self.nodeid(md.ino());
        {
            let mut nodes = self.nodes.lock().unwrap();
            let node = nodes.entry(nodeid).or_insert(Node {
                paths: Vec::new(),
                nlookup: 0,
            });
            node.nlookup += 1;
            // The name just seen goes first: an older one may have been renamed or removed
            // behind the server's back (in the backing directory).
            node.paths.retain(|p| *p != path);
            node.paths.insert(0, path);
        }
        let (entry_ttl, attr_ttl) = self.ttl(md.is_dir());
        let mut out = Vec::with_capacity(128);
        put_u64(&mut out, nodeid);
        put_u64(&mut out, 0); // generation
        put_u64(&mut out, entry_ttl.as_secs());
        put_u64(&mut out, attr_ttl.as_secs());
        put_u32(&mut out, entry_ttl.subsec_nanos());
        put_u32(&mut out, attr_ttl.subsec_nanos());
        put_attr(&mut out, &md);
        Ok(out)
    }

    fn attr_reply(&self, md: &fs::Metadata) -> Reply {
        let (_, attr_ttl) = self.ttl(md.is_dir());
        let mut out = Vec::with_capacity(104);
        put_u64(&mut out, attr_ttl.as_secs());
        put_u32(&mut out, attr_ttl.subsec_nanos());
        put_u32(&mut out, 0);
        put_attr(&mut out, md);
        Ok(out)
    }

    fn forget(&self, nodeid: u64, n: u64) {
        if nodeid == FUSE_ROOT_ID {
            return;
        }
        let mut nodes = self.nodes.lock().unwrap();
        if let Some(node) = nodes.get_mut(&nodeid) {
            node.nlookup = node.nlookup.saturating_sub(n);
            if node.nlookup == 0 {
                nodes.remove(&nodeid);
            }
        }
    }

    /// `path` is no longer a name of node `ino`'s.
    fn forget_path(&self, ino: u64, path: &Path) {
        let mut nodes = self.nodes.lock().unwrap();
        if let Some(node) = nodes.get_mut(&self.nodeid(ino)) {
            node.paths.retain(|p| p != path);
        }
    }

    /// The file `ino` named `from` is now named `to`.
    fn renamed(&self, ino: u64, from: &Path, to: &Path) {
        let mut nodes = self.nodes.lock().unwrap();
        if let Some(node) = nodes.get_mut(&self.nodeid(ino)) {
            node.paths.retain(|p| p != from && p != to);
            node.paths.insert(0, to.to_path_buf());
        }
    }

    /// The directory `from` is now `to`, and so is everything under it.
    fn moved(&self, from: &Path, to: &Path) {
        let mut nodes = self.nodes.lock().unwrap();
        for node in nodes.values_mut() {
            for p in node.paths.iter_mut() {
                if let Ok(rest) = p.strip_prefix(from) {
                    *p = if rest.as_os_str().is_empty() {
                        to.to_path_buf()
                    } else {
                        to.join(rest)
                    };
                }
            }
        }
    }

    fn lookup(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let path = self.child(req.nodeid, a.cstr())?;
        self.entry(path)
    }

    fn getattr(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let (flags, _, fh) = (a.u32(), a.u32(), a.u64());
        let md = if flags & FUSE_GETATTR_FH != 0 {
            fstat(fh as RawFd)?
        } else {
            fs::symlink_metadata(self.path_of(req.nodeid)?).map_err(|e| errno(&e))?
        };
        self.attr_reply(&md)
    }

    fn setattr(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let valid = a.u32();
        a.u32();
        let fh = a.u64();
        let size = a.u64();
        a.u64(); // lock_owner
        let (atime, mtime, _ctime) = (a.u64(), a.u64(), a.u64());
        let (atimensec, mtimensec, _ctimensec) = (a.u32(), a.u32(), a.u32());
        let mode = a.u32();
        a.u32();
        let (uid, gid) = (a.u32(), a.u32());
        let path = self.path_of(req.nodeid)?;
        let cpath = cstring(path.as_os_str()).map_err(|e| errno(&e))?;
        // SAFETY: plain system calls on a valid C string or our own descriptor.
        unsafe {
            if valid & FATTR_MODE != 0 && libc::chmod(cpath.as_ptr(), mode & 0o7777) != 0 {
                return Err(last_errno());
            }
            if valid & (FATTR_UID | FATTR_GID) != 0 {
                let u = if valid & FATTR_UID != 0 {
                    uid
                } else {
                    u32::MAX
                };
                let g = if valid & FATTR_GID != 0 {
                    gid
                } else {
                    u32::MAX
                };
                if libc::lchown(cpath.as_ptr(), u, g) != 0 {
                    return Err(last_errno());
                }
            }
            if valid & FATTR_SIZE != 0 {
                let r = if valid & FATTR_FH != 0 {
                    libc::ftruncate(fh as RawFd, size as libc::off_t)
                } else {
                    libc::truncate(cpath.as_ptr(), size as libc::off_t)
                };
                if r != 0 {
                    return Err(last_errno());
                }
            }
            if valid & (FATTR_ATIME | FATTR_MTIME) != 0 {
                let t = |set: bool, now: bool, s: u64, ns: u32| libc::timespec {
                    tv_sec: s as libc::time_t,
                    tv_nsec: if !set {
                        libc::UTIME_OMIT
                    } else if now {
                        libc::UTIME_NOW
                    } else {
                        ns as libc::c_long
                    },
                };
                let times = [
                    t(
                        valid & FATTR_ATIME != 0,
                        valid & FATTR_ATIME_NOW != 0,
                        atime,
                        atimensec,
                    ),
                    t(
                        valid & FATTR_MTIME != 0,
                        valid & FATTR_MTIME_NOW != 0,
                        mtime,
                        mtimensec,
                    ),
                ];
                if libc::utimensat(
                    libc::AT_FDCWD,
                    cpath.as_ptr(),
                    times.as_ptr(),
                    libc::AT_SYMLINK_NOFOLLOW,
                ) != 0
                {
                    return Err(last_errno());
                }
            }
        }
        let md = fs::symlink_metadata(&path).map_err(|e| errno(&e))?;
        self.attr_reply(&md)
    }

    fn readlink(&self, req: &Request) -> Reply {
        let target = fs::read_link(self.path_of(req.nodeid)?).map_err(|e| errno(&e))?;
        Ok(target.into_os_string().into_vec())
    }

    fn symlink(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let name = a.cstr().to_vec();
        let target = a.cstr().to_vec();
        let path = self.child(req.nodeid, &name)?;
        std::os::unix::fs::symlink(OsStr::from_bytes(&target), &path).map_err(|e| errno(&e))?;
        self.entry(path)
    }

    fn mknod(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let (mode, rdev, _umask, _) = (a.u32(), a.u32(), a.u32(), a.u32());
        let path = self.child(req.nodeid, a.cstr())?;
        let c = cstring(path.as_os_str()).map_err(|e| errno(&e))?;
        // SAFETY: a valid C string.
        if unsafe { libc::mknod(c.as_ptr(), mode, rdev as libc::dev_t) } != 0 {
            return Err(last_errno());
        }
        self.entry(path)
    }

    fn mkdir(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let (mode, _umask) = (a.u32(), a.u32());
        let path = self.child(req.nodeid, a.cstr())?;
        let c = cstring(path.as_os_str()).map_err(|e| errno(&e))?;
        // SAFETY: a valid C string.
        if unsafe { libc::mkdir(c.as_ptr(), mode) } != 0 {
            return Err(last_errno());
        }
        self.entry(path)
    }

    fn remove(&self, req: &Request, dir: bool) -> Reply {
        let mut a = req.args();
        let path = self.child(req.nodeid, a.cstr())?;
        let md = fs::symlink_metadata(&path).map_err(|e| errno(&e))?;
        if dir {
            fs::remove_dir(&path)
        } else {
            fs::remove_file(&path)
        }
        .map_err(|e| errno(&e))?;
        self.forget_path(md.ino(), &path);
        Ok(Vec::new())
    }

    fn rename(&self, req: &Request, with_flags: bool) -> Reply {
        let mut a = req.args();
        let newdir = a.u64();
        if with_flags {
            let flags = a.u32();
            a.u32();
            // Linux's NFS client refuses every rename flag (RENAME_NOREPLACE included).
            if flags != 0 {
                return Err(libc::EINVAL);
            }
        }
        let from = self.child(req.nodeid, a.cstr())?;
        let to = self.child(newdir, a.cstr())?;
        let moving = fs::symlink_metadata(&from).map_err(|e| errno(&e))?;
        let replaced = fs::symlink_metadata(&to).ok();
        fs::rename(&from, &to).map_err(|e| errno(&e))?;
        if let Some(r) = replaced {
            self.forget_path(r.ino(), &to);
        }
        if moving.is_dir() {
            self.moved(&from, &to);
        } else {
            self.renamed(moving.ino(), &from, &to);
        }
        Ok(Vec::new())
    }

    fn link(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let old = self.path_of(a.u64())?;
        let new = self.child(req.nodeid, a.cstr())?;
        fs::hard_link(&old, &new).map_err(|e| errno(&e))?;
        self.entry(new)
    }

    fn open(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let flags = a.u32() as i32;
        let path = self.path_of(req.nodeid)?;
        let c = cstring(path.as_os_str()).map_err(|e| errno(&e))?;
        let flags = (flags & !(libc::O_CREAT | libc::O_EXCL | libc::O_NOCTTY)) | libc::O_CLOEXEC;
        // SAFETY: a valid C string.
        let fd = unsafe { libc::open(c.as_ptr(), flags) };
        if fd < 0 {
            return Err(last_errno());
        }
        Ok(open_out(fd as u64))
    }

    fn create(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let (flags, mode, _umask, _) = (a.u32() as i32, a.u32(), a.u32(), a.u32());
        let path = self.child(req.nodeid, a.cstr())?;
        let c = cstring(path.as_os_str()).map_err(|e| errno(&e))?;
        let flags = (flags & !libc::O_NOCTTY) | libc::O_CREAT | libc::O_CLOEXEC;
        // SAFETY: a valid C string.
        let fd = unsafe { libc::open(c.as_ptr(), flags, mode as libc::c_uint) };
        if fd < 0 {
            return Err(last_errno());
        }
        match self.entry(path) {
            Ok(mut out) => {
                out.extend_from_slice(&open_out(fd as u64));
                Ok(out)
            }
            Err(e) => {
                // SAFETY: our own descriptor.
                unsafe { libc::close(fd) };
                Err(e)
            }
        }
    }

    fn read(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let (fh, offset, size) = (a.u64(), a.u64(), a.u32());
        let mut buf = vec![0u8; size as usize];
        // SAFETY: reading into our own buffer from our own descriptor.
        let n = unsafe {
            libc::pread(
                fh as RawFd,
                buf.as_mut_ptr().cast(),
                buf.len(),
                offset as libc::off_t,
            )
        };
        if n < 0 {
            return Err(last_errno());
        }
        buf.truncate(n as usize);
        Ok(buf)
    }

    fn write(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let (fh, offset, size) = (a.u64(), a.u64(), a.u32());
        a.u32();
        a.u64();
        a.u32();
        a.u32();
        let data = a.bytes(size as usize);
        // SAFETY: writing our own buffer to our own descriptor.
        let n = unsafe {
            libc::pwrite(
                fh as RawFd,
                data.as_ptr().cast(),
                data.len(),
                offset as libc::off_t,
            )
        };
        if n < 0 {
            return Err(last_errno());
        }
        let mut out = Vec::with_capacity(8);
        put_u32(&mut out, n as u32);
        put_u32(&mut out, 0);
        Ok(out)
    }

    fn fsync(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let (fh, flags) = (a.u64(), a.u32());
        // SAFETY: our own descriptor.
        let r = unsafe {
            if flags & 1 != 0 {
                libc::fdatasync(fh as RawFd)
            } else {
                libc::fsync(fh as RawFd)
            }
        };
        if r != 0 {
            return Err(last_errno());
        }
        Ok(Vec::new())
    }

    /// The kernel was given `path`'s name, naming inode `ino` (`revalidate_dirs_on_open`).
    fn name_given(&self, path: &Path, ino: u64) {
        if !self.opts.revalidate_dirs_on_open {
            return;
        }
        let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
            return;
        };
        let mut given = self.given.lock().unwrap();
        let names = given.entry(dir.to_path_buf()).or_default();
        names.retain(|(n, _)| n != name);
        names.push((name.to_os_string(), ino));
    }

    /// Opening directory `nodeid` (backing `path`): the names given in it that no longer name
    /// the inode they named then are dropped from the kernel's cache (`revalidate_dirs_on_open`).
    fn revalidate(&self, nodeid: u64, path: &Path) {
        if !self.opts.revalidate_dirs_on_open {
            return;
        }
        let stale: Vec<OsString> = {
            let mut given = self.given.lock().unwrap();
            let Some(names) = given.get_mut(path) else {
                return;
            };
            let now = |n: &OsStr| fs::symlink_metadata(path.join(n)).ok().map(|m| m.ino());
            let (stale, kept) = std::mem::take(names)
                .into_iter()
                .partition(|(n, ino)| now(n) != Some(*ino));
            *names = kept;
            stale.into_iter().map(|(n, _)| n).collect()
        };
        for name in stale {
            self.notify_inval_entry(nodeid, &name);
        }
    }

    /// Tells the kernel to drop its cached name `name` in directory `parent`. A name it no
    /// longer holds is answered with an error, which changes nothing.
    fn notify_inval_entry(&self, parent: u64, name: &OsStr) {
        let name = name.as_bytes();
        let len = OUT_HEADER_LEN + 16 + name.len() + 1;
        let mut out = Vec::with_capacity(len);
        put_u32(&mut out, len as u32);
        put_i32(&mut out, FUSE_NOTIFY_INVAL_ENTRY);
        put_u64(&mut out, 0);
        put_u64(&mut out, parent);
        put_u32(&mut out, name.len() as u32);
        put_u32(&mut out, 0);
        out.extend_from_slice(name);
        out.push(0);
        // SAFETY: writing our own buffer.
        unsafe {
            libc::write(self.fd.as_raw_fd(), out.as_ptr().cast(), out.len());
        }
    }

    fn opendir(&self, req: &Request) -> Reply {
        let path = self.path_of(req.nodeid)?;
        let md = fs::metadata(&path).map_err(|e| errno(&e))?;
        self.revalidate(req.nodeid, &path);
        let reader = fs::read_dir(&path).map_err(|e| errno(&e))?;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        let state = DirState {
            reader: Some(reader),
            entries: vec![(md.ino(), ".".into()), (md.ino(), "..".into())],
            fetched: None,
            next_offset: 0,
        };
        self.dirs
            .lock()
            .unwrap()
            .insert(fh, Arc::new(Mutex::new(state)));
        Ok(open_out(fh))
    }

    fn readdir(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let (fh, offset, size) = (a.u64(), a.u64() as usize, a.u32() as usize);
        let state = self
            .dirs
            .lock()
            .unwrap()
            .get(&fh)
            .cloned()
            .ok_or(libc::EBADF)?;
        let mut st = state.lock().unwrap();
        let per = self.opts.names_per_readdir.max(1);
        if offset == 0 && st.next_offset > 0 {
            // A rewind to the start (`seekdir(0)`, `rewinddir`): as an NFS client does, read
            // the directory again from cookie 0, so names removed meanwhile are gone.
            let path = self.path_of(req.nodeid)?;
            let md = fs::metadata(&path).map_err(|e| errno(&e))?;
            st.reader = Some(fs::read_dir(&path).map_err(|e| errno(&e))?);
            st.entries = vec![(md.ino(), ".".into()), (md.ino(), "..".into())];
            st.fetched = None;
        } else if offset < st.next_offset {
            // A rewind: the replies before this offset must be fetched again.
            st.fetched = (offset / per).checked_sub(1);
        }
        let mut out = Vec::with_capacity(size);
        let mut i = offset;
        loop {
            while st.entries.len() <= i {
                match st.reader.as_mut().and_then(|r| r.next()) {
                    Some(Ok(e)) => st.entries.push((e.ino(), e.file_name())),
                    Some(Err(e)) => return Err(errno(&e)),
                    None => {
                        st.reader = None;
                        break;
                    }
                }
            }
            let Some((ino, name)) = st.entries.get(i) else {
                break;
            };
            let name = name.as_bytes();
            let len = DIRENT_HEADER_LEN + name.len();
            let padded = (len + 7) & !7;
            if out.len() + padded > size {
                break;
            }
            put_u64(&mut out, *ino);
            put_u64(&mut out, (i + 1) as u64); // offset of the next entry
            put_u32(&mut out, name.len() as u32);
            put_u32(&mut out, DT_UNKNOWN);
            out.extend_from_slice(name);
            out.resize(out.len() + padded - len, 0);
            i += 1;
        }
        let mut replies = 0;
        if i > offset {
            let last = (i - 1) / per;
            let first_new = st.fetched.map_or(offset / per, |f| f + 1);
            if last >= first_new {
                replies = (last - first_new + 1) as u64;
                st.fetched = Some(last);
            }
        }
        st.next_offset = i;
        drop(st);
        self.stats
            .readdir_round_trips
            .fetch_add(replies, Ordering::Relaxed);
        self.stats.wait(replies, self.opts.round_trip);
        Ok(out)
    }

    fn statfs(&self) -> Reply {
        let root = self.path_of(FUSE_ROOT_ID)?;
        let c = cstring(root.as_os_str()).map_err(|e| errno(&e))?;
        // SAFETY: statvfs fills the struct we give it.
        let st = unsafe {
            let mut st: libc::statvfs = std::mem::zeroed();
            if libc::statvfs(c.as_ptr(), &mut st) != 0 {
                return Err(last_errno());
            }
            st
        };
        let mut out = Vec::with_capacity(80);
        for v in [st.f_blocks, st.f_bfree, st.f_bavail, st.f_files, st.f_ffree] {
            put_u64(&mut out, v);
        }
        put_u32(&mut out, st.f_bsize as u32);
        put_u32(&mut out, st.f_namemax as u32);
        put_u32(&mut out, st.f_frsize as u32);
        out.resize(80, 0);
        Ok(out)
    }

    fn access(&self, req: &Request) -> Reply {
        let mut a = req.args();
        let mask = a.u32() as i32;
        let c = cstring(self.path_of(req.nodeid)?.as_os_str()).map_err(|e| errno(&e))?;
        // SAFETY: a valid C string.
        if unsafe { libc::access(c.as_ptr(), mask) } != 0 {
            return Err(last_errno());
        }
        Ok(Vec::new())
    }
}

fn fstat(fd: RawFd) -> Result<fs::Metadata, i32> {
    // A borrowed descriptor: the std File must not close it.
    // SAFETY: fd is open (the kernel gave it back as a file handle of ours).
    let file = std::mem::ManuallyDrop::new(unsafe { fs::File::from_raw_fd(fd) });
    file.metadata().map_err(|e| errno(&e))
}

fn open_out(fh: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(16);
    put_u64(&mut out, fh);
    put_u32(&mut out, 0); // open_flags: no FOPEN_KEEP_CACHE, no FOPEN_CACHE_DIR
    put_u32(&mut out, 0);
    out
}

fn put_attr(out: &mut Vec<u8>, md: &fs::Metadata) {
    put_u64(out, md.ino());
    put_u64(out, md.size());
    put_u64(out, md.blocks());
    put_u64(out, md.atime() as u64);
    put_u64(out, md.mtime() as u64);
    put_u64(out, md.ctime() as u64);
    put_u32(out, md.atime_nsec() as u32);
    put_u32(out, md.mtime_nsec() as u32);
    put_u32(out, md.ctime_nsec() as u32);
    put_u32(out, md.mode());
    put_u32(out, md.nlink() as u32);
    put_u32(out, md.uid());
    put_u32(out, md.gid());
    put_u32(out, md.rdev() as u32);
    put_u32(out, md.blksize() as u32);
    put_u32(out, 0);
}
