//! A mover killed at random moments among its moves, while a writer on the previous list keeps
//! writing the files it moves: nothing may be lost, and no newest version may stay hidden in a
//! private name once the next run has given back what the dead one left.
//!
//! The mover is a child process (this test binary again, running [`child`]) doing
//! `relocate_many` over every file (the function's batch: sources taken into shared private
//! directories, settled from one listing each), SIGKILLed once a random share of the files is
//! linked home and a random delay later, both drawn from the seed; then the next round
//! recovers its private directories (as the function's rebalance does), puts every file back
//! at the source, and starts another. [`Seen`] says where the kills landed. Shared by `tests/crash.rs` (one local directory) and `tests/nfs.rs` (the NFS tier,
//! the writer and the mover on their own mounts).

use efs_router::dir::find_abandoned;
use efs_router::relocation::{recover, relocate_many};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use std::{fs, thread};

/// The variable that makes [`child`] the mover: the file listing its pairs.
pub const CHILD: &str = "EFS_CRASH_CHILD";

/// A small seeded generator (xorshift): a failing seed reproduces its draws.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// The mover's side: moves every pair listed in the file `CHILD` names, 16 at a time.
pub fn child() {
    let Ok(list) = std::env::var(CHILD) else {
        return;
    };
    let pairs: Vec<(PathBuf, PathBuf)> = fs::read_to_string(list)
        .unwrap()
        .lines()
        .map(|l| {
            let (a, b) = l.split_once('\t').unwrap();
            (PathBuf::from(a), PathBuf::from(b))
        })
        .collect();
    let _ = relocate_many(&pairs, 16, None);
    std::process::exit(0);
}

/// `CRASH_SEED`, or the default: a failure's seed reproduces its draws.
pub fn seed() -> u64 {
    std::env::var("CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261201)
}

/// The arguments that start this test binary as the mover ([`child`]).
pub const CHILD_ARGS: &[&str] = &["--exact", "crash_child", "--ignored"];

/// What one run saw.
#[derive(Debug, Default)]
pub struct Seen {
    /// Kills of a mover still running.
    pub kills: u64,
    /// Kills with some files home and some not: landed among the moves.
    pub among_moves: u64,
    /// Kills that left sources the batch had taken in a private directory of the source's
    /// directory (renamed there, not yet settled): landed inside a batch.
    pub in_batch: u64,
    /// Those sources, over every kill.
    pub taken_left: u64,
    /// Of those, a name's newest version held nowhere else (a writer's, renamed over the
    /// source during its move): hidden until the next round gave it back.
    pub newest_hidden: u64,
    /// Private directories a killed mover left, given back by the next round.
    pub recovered: u64,
    pub writes: u64,
}

/// The names of regular files directly in `dir`, private ones apart.
fn listing(dir: &Path) -> (Vec<String>, Vec<PathBuf>) {
    let (mut files, mut private) = (Vec::new(), Vec::new());
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(".efs-router-") {
            private.push(e.path());
        } else if !name.ends_with(".writing") {
            files.push(name);
        }
    }
    (files, private)
}

/// Writes as an application does: a temporary file, synced, renamed over the name.
pub fn write_atomically(path: &Path, data: &[u8]) {
    let tmp = path.with_extension("writing");
    let mut f = fs::File::create(&tmp).unwrap();
    f.write_all(data).unwrap();
    f.sync_all().unwrap();
    drop(f);
    fs::rename(&tmp, path).unwrap();
}

/// Runs `rounds` movers over `files` misplaced files, each killed within `max_delay`. `mover_src`/`mover_dst` are the
/// shard directories through the mover's mount, `writer_src` the source through the writer's,
/// `truth_src`/`truth_dst` the same directories through no cache (the server's own, or the
/// same local directory). `exe` and `args` start the child (this binary, running [`child`]).
pub fn run(
    seed: u64,
    (rounds, files, max_delay): (u32, usize, Duration),
    mover: (&Path, &Path),
    writer_src: &Path,
    truth: (&Path, &Path),
    exe: &Path,
    args: &[&str],
) -> Seen {
    let (mover_src, mover_dst) = mover;
    let (truth_src, truth_dst) = truth;
    let mut rng = Rng::new(seed);
    let names: Vec<String> = (0..files).map(|i| format!("device-{i:04}.json")).collect();
    // The newest version written of each name: what must survive.
    let newest: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
    for n in &names {
        let v = format!("{n} v0");
        fs::write(truth_src.join(n), &v).unwrap();
        newest.lock().unwrap().insert(n.clone(), v);
    }
    let pairs: String = names
        .iter()
        .map(|n| {
            format!(
                "{}\t{}\n",
                mover_src.join(n).display(),
                mover_dst.join(n).display()
            )
        })
        .collect();
    let list = std::env::temp_dir().join(format!("efs-crash-{seed}-{}", std::process::id()));
    fs::write(&list, pairs).unwrap();
    let mut seen = Seen::default();
    for round in 0..rounds {
        // Every round the mover has every file to move: what the last one moved goes back.
        misplace_again(&newest.lock().unwrap(), truth_src, truth_dst);
        // A writer on the previous list rewrites random names at the source meanwhile.
        let stop = Arc::new(AtomicBool::new(false));
        let writer = {
            let (stop, newest, names) = (stop.clone(), newest.clone(), names.clone());
            let (src, mut wrng) = (
                writer_src.to_path_buf(),
                Rng::new(seed ^ (round as u64 + 7)),
            );
            thread::spawn(move || {
                let mut writes = 0;
                while !stop.load(Ordering::SeqCst) {
                    let n = &names[wrng.below(names.len() as u64) as usize];
                    let v = format!("{n} r{round} w{writes}");
                    // Recorded first: the version is the newest as soon as its rename lands.
                    newest.lock().unwrap().insert(n.clone(), v.clone());
                    write_atomically(&src.join(n), v.as_bytes());
                    writes += 1;
                    thread::sleep(Duration::from_micros(300));
                }
                writes
            })
        };
        let home_before = listing(truth_dst).0.len();
        let mut child = Command::new(exe)
            .args(args)
            .env(CHILD, &list)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Once it has linked a random share of the files home (a process starts slowly in the
        // VM, and a batch's moves can all be over within the longest delay), a random moment
        // later.
        let share = home_before + 1 + rng.below(files as u64 * 3 / 4) as usize;
        for _ in 0..20_000 {
            if listing(truth_dst).0.len() >= share || child.try_wait().unwrap().is_some() {
                break;
            }
            thread::sleep(Duration::from_micros(100));
        }
        thread::sleep(Duration::from_micros(
            rng.below(max_delay.as_micros() as u64),
        ));
        // (A child that has finished is not killed: its moves all ran.)
        let killed = child.try_wait().unwrap().is_none() && child.kill().is_ok();
        let _ = child.wait();
        stop.store(true, Ordering::SeqCst);
        seen.writes += writer.join().unwrap();
        if killed {
            seen.kills += 1;
        }
        // The next run gives back what the dead mover left in private directories.
        let (at_src, private_src) = listing(truth_src);
        let (at_home, _) = listing(truth_dst);
        if !at_home.is_empty() && !at_src.is_empty() {
            seen.among_moves += 1;
        }
        let taken: Vec<PathBuf> = private_src
            .iter()
            .filter(|p| p.is_dir())
            .flat_map(|p| fs::read_dir(p).unwrap().map(|e| e.unwrap().path()))
            .collect();
        if killed && !taken.is_empty() {
            seen.in_batch += 1;
            seen.taken_left += taken.len() as u64;
        }
        seen.newest_hidden += hidden(&newest.lock().unwrap(), &taken, truth_src, truth_dst);
        seen.recovered += tidy(mover_src) + tidy(mover_dst);
        check_visible(&newest.lock().unwrap(), truth_src, truth_dst, seed, round);
    }
    // The last run, with no writer and no kill, finishes every move.
    let pairs: Vec<(PathBuf, PathBuf)> = names
        .iter()
        .map(|n| (mover_src.join(n), mover_dst.join(n)))
        .collect();
    for outcome in relocate_many(&pairs, 16, None) {
        outcome.unwrap().unwrap();
    }
    let newest = newest.lock().unwrap();
    for n in &names {
        assert_eq!(
            fs::read_to_string(truth_dst.join(n)).unwrap(),
            newest[n],
            "seed {seed}: {n} at home is not its newest version"
        );
    }
    tidy(mover_src);
    tidy(mover_dst);
    assert_eq!(
        listing(truth_src).0,
        Vec::<String>::new(),
        "seed {seed}: left at the source"
    );
    // What is left under a private name is never a newest version, and never a directory.
    for p in listing(truth_src).1.into_iter().chain(listing(truth_dst).1) {
        assert!(!p.is_dir(), "seed {seed}: {} not given back", p.display());
        let held = fs::read_to_string(&p).unwrap_or_default();
        assert!(
            !newest.values().any(|v| *v == held),
            "seed {seed}: the newest version {held:?} is hidden in {}",
            p.display()
        );
    }
    let _ = fs::remove_file(&list);
    seen
}

/// What the function's rebalance does with what dead movers left in `dir` (without its hour of
/// waiting: no mover is alive here): private directories given back, second names removed.
/// Answers how many private directories were given back.
fn tidy(dir: &Path) -> u64 {
    let mut given_back = 0;
    for a in find_abandoned(dir, Duration::ZERO).unwrap() {
        let path = dir.join(&a.path);
        if path.is_dir() {
            // No client deletes here: every path is still a file somewhere.
            let r = recover(&path, |_| Ok(true)).unwrap();
            assert!(r.left.is_empty(), "{}: {:?}", path.display(), r.left);
            given_back += 1;
        } else if a.safe_to_remove() {
            fs::remove_file(&path).unwrap();
        }
    }
    given_back
}

/// How many of the files in `taken` hold their name's newest version, which is neither at the
/// source nor at home.
fn hidden(newest: &BTreeMap<String, String>, taken: &[PathBuf], src: &Path, dst: &Path) -> u64 {
    let read = |p: &Path| fs::read_to_string(p).ok();
    let mut n = 0;
    for p in taken {
        let name = p.file_name().unwrap().to_string_lossy().into_owned();
        let Some(v) = newest.get(&name) else { continue };
        let elsewhere = [src, dst]
            .iter()
            .any(|d| read(&d.join(&name)).as_ref() == Some(v));
        if read(p).as_ref() == Some(v) && !elsewhere {
            n += 1;
        }
    }
    n
}

/// Puts each name's newest version back at the source (the server's side, or the one local
/// directory), and removes an older copy at home: a list changed back, so every file is
/// misplaced again. No writer or mover runs meanwhile.
fn misplace_again(newest: &BTreeMap<String, String>, src: &Path, dst: &Path) {
    for (n, v) in newest {
        let home = dst.join(n);
        match fs::read_to_string(&home) {
            Ok(held) if held == *v => fs::rename(&home, src.join(n)).unwrap(),
            Ok(_) => fs::remove_file(&home).unwrap(),
            Err(e) => assert_eq!(e.kind(), std::io::ErrorKind::NotFound, "{}", home.display()),
        }
    }
}

/// Every name's newest version is where readers look: at home or at the source.
fn check_visible(newest: &BTreeMap<String, String>, src: &Path, dst: &Path, seed: u64, round: u32) {
    for (n, v) in newest {
        let found = [src, dst]
            .iter()
            .any(|d| fs::read_to_string(d.join(n)).ok().as_deref() == Some(v.as_str()));
        assert!(
            found,
            "seed {seed} round {round}: the newest version of {n} ({v:?}) is neither home nor at the source"
        );
    }
}
