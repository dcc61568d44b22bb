//! Benchmark: the function's whole reconcile run over a network file system, on the netfs
//! test bed (`netfs/`: a FUSE passthrough that delays and counts each operation as NFS would),
//! against moto_server through the in-test Lambda Runtime API. Prints Markdown tables.
//!
//!     make bench-netfs-function
//!     cargo build --release -p netfs --bin netfs-sim && \
//!       cargo build --bin efs-mount-autoscaler --example reconcile_netfs && \
//!       target/debug/examples/reconcile_netfs [--rtt-ms 1] [--files 150000] [--drain 30000] \
//!         [--runs 5] [--sim PATH] [steady] [drain]
//!
//! `steady`: three mount targets as the contract publishes them, `--files` files over their
//! three shard directories, `FILE_THRESHOLD=100000` (nothing to change: the run only counts).
//! The same run is timed on the backing directory itself and through the mount, `--runs`
//! times each; before each run on the mount the kernel's cache of directories has expired
//! (as between scheduled runs) and the counters are reset.
//!
//! `drain`: two mount targets, the second created by the function (its state parameter says
//! so), `--drain` files in the second's shard, `FILE_THRESHOLD=100000`,
//! `SCALE_IN_COOLDOWN_SECONDS=0`: reconcile runs until the target is gone (mark it draining;
//! move the files, `MOVE_CONCURRENCY` at a time, default 16, and publish the list without it;
//! delete it). Each run's time and round trips, and the moving run cut in three by the
//! counters, sampled every 10 ms: before the first LINK, the moving phase (first LINK to last
//! UNLINK), after the last UNLINK. `SHOW_LOGS=1` prints the function's logs of each run.
//!
//! The function is the debug build next to this example (`target/debug/efs-mount-autoscaler`);
//! `netfs-sim` is the release build (`target/release/netfs-sim`, or `--sim`). Files are made in
//! the backing directory, not through the mount, and its cache is warmed first. Prints SKIP and
//! exits 0 where FUSE cannot mount.

#[path = "../tests/support/mod.rs"]
mod support;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use efs_router::dir::count_files;
use efs_router::MountTargetList;
use serde_json::{json, Value};
use support::{binary_beside_exe, event, strings, Aws, Function, Invocation, Moto, World};

/// Names a READDIR reply holds on the test bed (a 32 KiB NFS reply).
const PER_READDIR: u64 = 544;
/// A little over how long the test bed lets the kernel cache a directory's name and attributes.
const DIR_TTL: Duration = Duration::from_millis(1500);
/// Lambda's longest run.
const TIMEOUT: Duration = Duration::from_secs(900);

type Counts = BTreeMap<String, u64>;

struct Args {
    rtt_ms: f64,
    files: u64,
    drain: u64,
    runs: usize,
    sim: PathBuf,
    sections: Vec<String>,
}

fn args() -> Args {
    let exe = std::env::current_exe().expect("current exe");
    // target/debug/examples/reconcile_netfs -> target/release/netfs-sim
    let target = exe
        .ancestors()
        .nth(3)
        .expect("the example lives in <target>/debug/examples");
    let mut a = Args {
        rtt_ms: 1.0,
        files: 150_000,
        drain: 30_000,
        runs: 5,
        sim: target.join("release").join("netfs-sim"),
        sections: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--rtt-ms" => a.rtt_ms = value().parse().expect("--rtt-ms: milliseconds"),
            "--files" => a.files = value().parse().expect("--files: a whole number"),
            "--drain" => a.drain = value().parse().expect("--drain: a whole number"),
            "--runs" => a.runs = value().parse().expect("--runs: a whole number"),
            "--sim" => a.sim = PathBuf::from(value()),
            "steady" | "drain" => a.sections.push(flag),
            other => panic!("unknown argument {other}"),
        }
    }
    if a.sections.is_empty() {
        a.sections = vec!["steady".into(), "drain".into()];
    }
    a
}

/// `netfs-sim` serving a backing directory at a mount point, and its control socket.
struct Sim {
    child: Child,
    mount: PathBuf,
    control: PathBuf,
    stopped: bool,
}

impl Sim {
    /// Starts it and waits for the mount; `Err` with its error output when it cannot mount.
    fn start(binary: &Path, backing: &Path, work: &Path, rtt_ms: f64) -> Result<Sim, String> {
        let mount = work.join("mnt");
        let control = work.join("control.sock");
        std::fs::create_dir_all(&mount).expect("mount point");
        let mut child = Command::new(binary)
            .arg("--backing")
            .arg(backing)
            .arg("--mount")
            .arg(&mount)
            .arg("--rtt-ms")
            .arg(rtt_ms.to_string())
            .arg("--control")
            .arg(&control)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", binary.display()));
        let mut stderr = child.stderr.take().expect("stderr");
        let errors = Arc::new(Mutex::new(String::new()));
        let errors_in = errors.clone();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = stderr.read(&mut buf) {
                if n == 0 {
                    break;
                }
                errors_in
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line);
        if !line.starts_with("mounted") {
            let _ = child.wait();
            std::thread::sleep(Duration::from_millis(100));
            let errors = errors.lock().unwrap().trim().to_owned();
            return Err(errors);
        }
        Ok(Sim {
            child,
            mount,
            control,
            stopped: false,
        })
    }

    fn connect(&self) -> UnixStream {
        UnixStream::connect(&self.control)
            .unwrap_or_else(|e| panic!("control socket {}: {e}", self.control.display()))
    }

    fn command(&self, cmd: &str) -> String {
        ask(&mut self.connect(), cmd)
    }

    fn reset(&self) {
        assert_eq!(self.command("reset"), "ok");
    }

    fn stats(&self) -> Counts {
        parse_counts(&self.command("stats"))
    }

    /// Samples the counters every 10 ms until the returned sampler is stopped.
    fn sample(&self) -> Sampler {
        let mut conn = self.connect();
        let stop = Arc::new(AtomicBool::new(false));
        let stop_in = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut samples = Vec::new();
            while !stop_in.load(Ordering::Relaxed) {
                samples.push((Instant::now(), parse_counts(&ask(&mut conn, "stats"))));
                std::thread::sleep(Duration::from_millis(10));
            }
            samples.push((Instant::now(), parse_counts(&ask(&mut conn, "stats"))));
            samples
        });
        Sampler { stop, thread }
    }

    /// Its own shutdown (SIGTERM: it unmounts and exits); a lazy unmount if it does not go.
    fn stop(&mut self) {
        if self.stopped {
            return;
        }
        self.stopped = true;
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let until = Instant::now() + Duration::from_secs(60);
        while Instant::now() < until {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        eprintln!(
            "netfs-sim did not stop: unmounting {}",
            self.mount.display()
        );
        let _ = Command::new("fusermount3")
            .arg("-u")
            .arg("-z")
            .arg(&self.mount)
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Sim {
    fn drop(&mut self) {
        self.stop();
    }
}

fn ask(conn: &mut UnixStream, cmd: &str) -> String {
    writeln!(conn, "{cmd}").expect("control socket write");
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        match conn.read(&mut byte) {
            Ok(1) if byte[0] != b'\n' => line.push(byte[0]),
            Ok(_) => break,
            Err(e) => panic!("control socket read: {e}"),
        }
    }
    String::from_utf8_lossy(&line).trim().to_owned()
}

fn parse_counts(text: &str) -> Counts {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("stats {text:?}: {e}"))
}

struct Sampler {
    stop: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<Vec<(Instant, Counts)>>,
}

impl Sampler {
    fn finish(self) -> Vec<(Instant, Counts)> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread.join().expect("sampler")
    }
}

/// A run cut in three by the samples: before, during and after the phase in which operations
/// of some kinds were sent (from the last sample where they had all been zero to the first
/// where they had reached their final total; one sample period wide at each end), with the
/// round trips of every kind sent in each part.
struct Phase {
    before: (Duration, Counts),
    during: (Duration, Counts),
    after: (Duration, Counts),
}

fn phase(samples: &[(Instant, Counts)], kinds: &[&str]) -> Option<Phase> {
    let total = |c: &Counts| kinds.iter().map(|k| get(c, k)).sum();
    let (first, zero) = samples.first()?;
    let (last, total_counts) = samples.last()?;
    let final_total: u64 = total(total_counts);
    if final_total == 0 {
        return None;
    }
    let (start, at_start) = samples.iter().rev().find(|(_, c)| total(c) == 0)?;
    let (end, at_end) = samples.iter().find(|(_, c)| total(c) == final_total)?;
    let diff = |from: &Counts, to: &Counts| -> Counts {
        to.iter()
            .map(|(k, v)| (k.clone(), v.saturating_sub(get(from, k))))
            .collect()
    };
    Some(Phase {
        before: (start.duration_since(*first), diff(zero, at_start)),
        during: (end.duration_since(*start), diff(at_start, at_end)),
        after: (last.duration_since(*end), diff(at_end, total_counts)),
    })
}

fn get(c: &Counts, kind: &str) -> u64 {
    c.get(kind).copied().unwrap_or(0)
}

/// The round trips by kind, as `KIND n` (or per `per`, as `KIND x.xx`).
/// The round trips of `c`, per operation of `per` (`netfs::Counts::summary_per`).
fn summary(c: &Counts, per: u64) -> String {
    netfs::Counts(c.clone()).summary_per(per)
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 10_000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.0} ms")
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// The function's own counting time, from its metric line (`CountDuration`, milliseconds).
fn count_duration(inv: &Invocation) -> Option<Duration> {
    inv.logs.lines().find_map(|l| {
        let v: Value = serde_json::from_str(l.trim()).ok()?;
        let ms = v.get("CountDuration")?.as_f64()?;
        Some(Duration::from_secs_f64(ms / 1000.0))
    })
}

/// `<backing>/<root>/data/analysis`.
fn watch(backing: &Path, root: &str) -> PathBuf {
    backing
        .join(root.trim_start_matches('/'))
        .join("data/analysis")
}

fn create_files(dir: &Path, first: u64, n: u64) {
    std::fs::create_dir_all(dir).expect("shard directory");
    for i in first..first + n {
        let name = format!("device-{:05}-{}.json", i % 5000, 1_700_000_000 + i);
        std::fs::File::create(dir.join(name)).expect("create a file");
    }
}

fn checked(inv: &Invocation) -> &Value {
    match &inv.result {
        Ok(v) => v,
        Err(_) => panic!("the run failed:\n{}", inv.describe()),
    }
}

fn actions(r: &Value) -> String {
    let a = strings(r, "actions");
    if a.is_empty() {
        "none".to_owned()
    } else {
        a.join(", ")
    }
}

fn start_sim(args: &Args, backing: &Path, work: &Path) -> Sim {
    match Sim::start(&args.sim, backing, work, args.rtt_ms) {
        Ok(sim) => sim,
        Err(e) => {
            println!("SKIP reconcile_netfs: FUSE test bed unavailable: {e}");
            std::process::exit(0)
        }
    }
}

async fn steady(args: &Args, binary: &Path) {
    let moto = Moto::start();
    let aws = Aws::at(&moto.endpoint()).await;
    let world = World::builder()
        .mount_targets_in(&['a', 'b', 'c'])
        .build(&aws)
        .await;
    let list = MountTargetList::from_json(&world.published().await.value).expect("the list");
    let work = tempfile::Builder::new()
        .prefix("reconcile-netfs-")
        .tempdir()
        .expect("temp dir");
    let backing = work.path().join("backing");
    let shards = list.mount_targets.len() as u64;
    let mut largest = 0;
    let mut first = 0;
    for (i, t) in list.mount_targets.iter().enumerate() {
        let n = args.files / shards + u64::from((i as u64) < args.files % shards);
        largest = largest.max(n);
        let dir = watch(&backing, &t.root);
        create_files(&dir, first, n);
        first += n;
        count_files(&dir).expect("count").expect("the directory"); // the backing cache
    }
    let sim = start_sim(args, &backing, work.path());
    let on_mount = Function::new(binary, &moto.endpoint())
        .envs(world.function_env(&sim.mount))
        .env("FILE_THRESHOLD", "100000");
    let on_backing = on_mount
        .clone()
        .env("EFS_MOUNT_PATH", backing.display().to_string());

    println!(
        "### The function's reconcile run, steady state: {} files in {shards} shards\n",
        args.files
    );
    println!("Mount targets a, b, c as the contract publishes them (roots {}), `FILE_THRESHOLD=100000`: the run counts and changes nothing. Each run is a cold start of the function's debug build; AWS is moto_server on this machine.\n",
        list.mount_targets.iter().map(|t| format!("`{}`", t.root)).collect::<Vec<_>>().join(", "));
    // A first run on the backing directory: whatever a first run records, it records now.
    let warm = on_backing.invoke(&event("reconcile"), TIMEOUT).await;
    let r = checked(&warm);
    println!(
        "First run (on the backing directory, not timed): actions {}; file_count {}.\n",
        actions(r),
        r["file_count"]
    );
    println!("| run | EFS_MOUNT_PATH | wall time (invoke to answer) | the function's count (`CountDuration`) | actions | round trips |");
    println!("|---|---|---|---|---|---|");
    let (mut local, mut mounted, mut counts_local, mut counts_mounted) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let mut last = Counts::new();
    for run in 1..=args.runs {
        let inv = on_backing.invoke(&event("reconcile"), TIMEOUT).await;
        let r = checked(&inv);
        assert_eq!(r["file_count"], json!(args.files), "{}", inv.describe());
        let count = count_duration(&inv).unwrap_or_default();
        println!(
            "| {run} | the backing directory (local disk) | {} | {} | {} | |",
            ms(inv.elapsed),
            ms(count),
            actions(r)
        );
        local.push(inv.elapsed);
        counts_local.push(count);

        // As between scheduled runs, the directories' cached names and attributes have expired.
        tokio::time::sleep(DIR_TTL).await;
        sim.reset();
        let inv = on_mount.invoke(&event("reconcile"), TIMEOUT).await;
        let c = sim.stats();
        let r = checked(&inv);
        assert_eq!(r["file_count"], json!(args.files), "{}", inv.describe());
        let count = count_duration(&inv).unwrap_or_default();
        println!(
            "| {run} | the test bed's mount | {} | {} | {} | {} |",
            ms(inv.elapsed),
            ms(count),
            actions(r),
            summary(&c, 1)
        );
        mounted.push(inv.elapsed);
        counts_mounted.push(count);
        last = c;
    }
    let floor = largest.div_ceil(PER_READDIR);
    println!();
    println!("Medians of {} runs: wall time {} on the mount, {} on the local directory ({} more); the function's count {} on the mount (floor: ceil({largest} / {PER_READDIR}) = {floor} READDIR round trips = {}), {} on the local directory. Round trips of a run on the mount: {} ({} in all; most in flight at once {}).\n",
        args.runs,
        ms(median(mounted.clone())),
        ms(median(local.clone())),
        ms(median(mounted).saturating_sub(median(local))),
        ms(median(counts_mounted)),
        ms(Duration::from_secs_f64(args.rtt_ms / 1000.0) * floor as u32),
        ms(median(counts_local)),
        summary(&last, 1),
        get(&last, "ROUND_TRIPS"),
        get(&last, "MAX_IN_FLIGHT"),
    );
    drop(sim);
    drop(moto);
}

async fn drain(args: &Args, binary: &Path) {
    let n = args.drain;
    let moto = Moto::start();
    let aws = Aws::at(&moto.endpoint()).await;
    let world = World::builder()
        .mount_targets_in(&['a', 'b'])
        .build(&aws)
        .await;
    let list = MountTargetList::from_json(&world.published().await.value).expect("the list");
    let b = list.mount_targets[1].clone();
    let b_az = b
        .az_id
        .clone()
        .expect("the contract's list names the AZ id");
    world
        .put_state(&json!({"created": {b.id.clone(): {"az_id": b_az, "at": 1}}}))
        .await;
    let work = tempfile::Builder::new()
        .prefix("reconcile-netfs-")
        .tempdir()
        .expect("temp dir");
    let backing = work.path().join("backing");
    let home = watch(&backing, &list.mount_targets[0].root);
    let from = watch(&backing, &b.root);
    std::fs::create_dir_all(&home).expect("the first shard's directory");
    create_files(&from, 0, n);
    count_files(&from).expect("count").expect("the directory"); // the backing cache
    let sim = start_sim(args, &backing, work.path());
    let function = Function::new(binary, &moto.endpoint())
        .envs(world.function_env(&sim.mount))
        .env("FILE_THRESHOLD", "100000")
        .env("SCALE_IN_COOLDOWN_SECONDS", "0");

    println!("### The function's drain: {n} files, by the function's reconcile runs\n");
    println!("Mount targets a (root `/`) and b (root `{}`, created by the function, as its state parameter says), {n} files in b's shard, `FILE_THRESHOLD=100000`, `SCALE_IN_COOLDOWN_SECONDS=0`, `MOVE_CONCURRENCY` unset (16). Reconcile runs until b is gone; the counters are reset before each run.\n", b.root);
    println!("| run | actions | moved | wall time | moving phase (first LINK to last UNLINK) | round trips | most in flight |");
    println!("|---|---|---|---|---|---|---|");
    let mut moving = None;
    for run in 1..=10 {
        sim.reset();
        let sampler = sim.sample();
        let inv = function.invoke(&event("reconcile"), TIMEOUT).await;
        let samples = sampler.finish();
        let c = sim.stats();
        let r = checked(&inv).clone();
        if std::env::var_os("SHOW_LOGS").is_some() {
            println!("{}", inv.logs);
        }
        let moved = r["moves"]["moved"].as_u64().unwrap_or(0);
        let phase = phase(&samples, &["LINK", "UNLINK"]);
        println!(
            "| {run} | {} | {moved} | {} | {} | {} | {} |",
            actions(&r),
            ms(inv.elapsed),
            phase.as_ref().map(|p| ms(p.during.0)).unwrap_or_default(),
            summary(&c, 1),
            get(&c, "MAX_IN_FLIGHT")
        );
        if moved > 0 {
            assert_eq!(
                r["moves"]["failed"],
                json!(0),
                "{}",
                support::function::pretty(&r)
            );
            moving = Some((moved, inv.elapsed, phase.expect("moves were sent"), c));
        }
        if world.mount_targets().await.len() == 1 {
            break;
        }
    }
    assert_eq!(
        world.mount_targets().await.len(),
        1,
        "b still there after 10 runs"
    );
    let at_home = count_files(&home).expect("count").unwrap_or(0);
    assert_eq!(at_home, n, "files at home after the drain");
    assert_eq!(
        count_files(&from).ok().flatten().unwrap_or(0),
        0,
        "files left in b's shard"
    );
    let (moved, wall, p, c) = moving.expect("no run moved files");
    let rtt = Duration::from_secs_f64(args.rtt_ms / 1000.0);
    println!();
    println!(
        "The run that moved the files, {moved} of them: {} in all ({:.0} files/s), of which",
        ms(wall),
        moved as f64 / wall.as_secs_f64()
    );
    println!(
        "- before the first LINK: {} ({});",
        ms(p.before.0),
        summary(&p.before.1, 1)
    );
    println!("- the moving phase, first LINK to last UNLINK: {} ({:.0} files/s): {} per file ({} in all; the walk, and 16 moves at a time);",
        ms(p.during.0),
        moved as f64 / p.during.0.as_secs_f64(),
        summary(&p.during.1, moved),
        get(&p.during.1, "ROUND_TRIPS"),
    );
    println!(
        "- after the last UNLINK: {} ({}).",
        ms(p.after.0),
        summary(&p.after.1, 1)
    );
    println!();
    println!(
        "Round trips per file over the whole run: {} ({} in all).\n",
        summary(&c, moved),
        get(&c, "ROUND_TRIPS")
    );
    println!("Floors at this round trip, for moves out of one directory, whose lock the kernel holds through each change in it: on the test bed 5 round trips a file (the rename's two LOOKUPs and its RENAME, the unlink's LOOKUP and its UNLINK) = {}; over NFS 2 (RENAME, UNLINK) = {}; one move at a time, 10 round trips a file = {}.\n",
        ms(rtt * (5 * moved) as u32),
        ms(rtt * (2 * moved) as u32),
        ms(rtt * (10 * moved) as u32),
    );
    drop(sim);
    drop(moto);
}

#[tokio::main]
async fn main() {
    let args = args();
    let binary = binary_beside_exe();
    assert!(
        binary.exists(),
        "{} is missing: build it (make bench-netfs-function)",
        binary.display()
    );
    if !Path::new("/dev/fuse").exists() {
        println!("SKIP reconcile_netfs: no /dev/fuse");
        return;
    }
    assert!(
        args.sim.exists(),
        "{} is missing: cargo build --release -p netfs --bin netfs-sim (or --sim PATH)",
        args.sim.display()
    );
    println!(
        "Round trip {} ms; test bed netfs-sim (FUSE, 64 threads, file names not cached, directories' names and all attributes for 1 s); {} cores.\n",
        args.rtt_ms,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    for s in args.sections.clone() {
        match s.as_str() {
            "steady" => steady(&args, &binary).await,
            "drain" => drain(&args, &binary).await,
            _ => unreachable!(),
        }
    }
}
