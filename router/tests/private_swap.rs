//! A task swapping a move's private directory for a link while the move uses it (issue 39,
//! item 5: private directories by descriptor).
//!
//! The movers run as root in trees every task can write. Each move, or each worker of a batch,
//! makes a private directory `.efs-router-<16 hex>.moving` in the source's directory (and, to
//! replace an older home copy, one beside home). Here another thread keeps listing the
//! source and home directories, and renames every such directory it sees away (into `parked/`,
//! outside them) and plants a symbolic link of the same name to a "victim" directory that
//! holds a file of every name moved. Were a move to use its private directory by path after
//! that, its renames would replace the victim's files, its listing read the victim's, and its
//! unlinks remove them. After each round: every victim file is untouched (same bytes, same
//! inode, no name added or removed), and every user file's newest version is where readers
//! look (at home or at its source), one file, nothing lost; nothing is left in what was
//! parked.
//!
//! Coverage: a swap counts as landed when the mover used the directory it took after it was
//! taken: the swapping thread watches each directory it parks (inotify: an entry made, renamed
//! in or out, removed, or the directory opened), and one that sees any of these was in use by a
//! move in flight, through a descriptor that outlived its name. The rounds go on until enough
//! have landed (or a bound), and each test asks for a number of them. The draws (how many files, which have an
//! older or newer copy at home, the batch's concurrency, the swapper's pauses) come from a seed,
//! `EFS_RACE_SEED` or a fixed one, printed and named in every failure.

use efs_router::relocation::relocate_many;
use efs_router::{relocate, Relocation};
use rustix::fs::inotify;
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::mem::MaybeUninit;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant, SystemTime};

/// The seed (`EFS_RACE_SEED`, else a fixed one) and a splitmix64 generator from it.
fn rng() -> (u64, impl FnMut() -> u64) {
    let seed: u64 = std::env::var("EFS_RACE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(39);
    println!("seed {seed} (EFS_RACE_SEED={seed} reproduces its draws)");
    let mut state = seed;
    let next = move || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    (seed, next)
}

/// `path` holds `data`, last modified `secs` seconds after an arbitrary epoch.
fn put(path: &Path, data: &[u8], secs: u64) {
    fs::write(path, data).unwrap();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

fn is_private_moving(name: &str) -> bool {
    name.starts_with(".efs-router-") && name.ends_with(".moving")
}

/// One user file: moved from `src` to `dst`; the newest version's bytes, which must survive.
struct UserFile {
    src: PathBuf,
    dst: PathBuf,
    newest: Vec<u8>,
}

/// A round's tree: source and home directories, the victim's, and where swaps park what they
/// took.
struct Bed {
    _root: tempfile::TempDir,
    watched: Vec<PathBuf>,
    victim: PathBuf,
    parked: PathBuf,
    files: Vec<UserFile>,
    /// The victim's files as they were: name to (inode, bytes).
    victim_files: BTreeMap<String, (u64, Vec<u8>)>,
}

/// `n` misplaced files over three source directories, homed in two; about one in four has an
/// older copy at home (the move replaces it, by a private directory beside home), one in eight a
/// newer one (the source is dropped). The victim holds a file of every name, newest of all.
fn bed(round: usize, n: usize, next: &mut impl FnMut() -> u64) -> Bed {
    let root = tempfile::tempdir().unwrap();
    let dir = |n: &str| {
        let p = root.path().join(n);
        fs::create_dir(&p).unwrap();
        p
    };
    let sources: Vec<PathBuf> = (0..3).map(|i| dir(&format!("src{i}"))).collect();
    let homes: Vec<PathBuf> = (0..2).map(|i| dir(&format!("home{i}"))).collect();
    let (victim, parked) = (dir("victim"), dir("parked"));
    let mut files = Vec::with_capacity(n);
    let mut victim_files = BTreeMap::new();
    for i in 0..n {
        let name = format!("r{round}-f{i}");
        let (src, dst) = (sources[i % 3].join(&name), homes[i % 2].join(&name));
        let mine = format!("user {name}").into_bytes();
        put(&src, &mine, 20);
        let newest = match next() % 8 {
            0 | 1 => {
                put(&dst, b"older, at home", 10);
                mine
            }
            2 => {
                put(&dst, format!("newer at home {name}").as_bytes(), 30);
                format!("newer at home {name}").into_bytes()
            }
            _ => mine,
        };
        let theirs = format!("the victim's {name}").into_bytes();
        let v = victim.join(&name);
        put(&v, &theirs, 40);
        victim_files.insert(name, (fs::metadata(&v).unwrap().ino(), theirs));
        files.push(UserFile { src, dst, newest });
    }
    let watched = sources.into_iter().chain(homes).collect();
    Bed {
        _root: root,
        watched,
        victim,
        parked,
        files,
        victim_files,
    }
}

/// What the swapping thread did.
#[derive(Debug, Default, Clone, Copy)]
struct Swaps {
    /// Private directories renamed away and replaced by a link.
    made: u64,
    /// Of those, made while a move was in flight.
    in_flight: u64,
    /// Of those, directories the mover used after they were taken: landed.
    landed: u64,
}

/// What a mover does in a private directory: makes, takes or removes an entry, or opens it.
fn used() -> inotify::WatchFlags {
    use inotify::WatchFlags as W;
    W::CREATE | W::MOVED_TO | W::MOVED_FROM | W::DELETE | W::OPEN
}

/// The watches that saw the mover use their directory, read once the mover is done.
fn landed(inot: &impl std::os::fd::AsFd) -> u64 {
    let mut buf = [MaybeUninit::uninit(); 4096];
    let mut events = inotify::Reader::new(inot, &mut buf);
    let mut seen = HashSet::new();
    loop {
        match events.next() {
            Ok(e) if e.events().bits() & used().bits() != 0 => {
                seen.insert(e.wd());
            }
            Ok(_) => {}
            Err(rustix::io::Errno::WOULDBLOCK) => return seen.len() as u64,
            Err(e) => panic!("inotify: {e}"),
        }
    }
}

/// Swaps every private directory it sees in `watched` for a link to `victim` until `stop`,
/// pausing up to `pause_ns` between scans; watches each directory it parks ([`landed`]).
fn swapper(
    watched: Vec<PathBuf>,
    victim: PathBuf,
    parked: PathBuf,
    moving: Arc<AtomicBool>,
    stop: Arc<AtomicBool>,
    pause_ns: u64,
) -> thread::JoinHandle<(Swaps, std::os::fd::OwnedFd)> {
    thread::spawn(move || {
        let mut swaps = Swaps::default();
        let flags = inotify::CreateFlags::CLOEXEC | inotify::CreateFlags::NONBLOCK;
        let inot = inotify::init(flags).expect("inotify");
        while !stop.load(Ordering::Acquire) {
            for dir in &watched {
                let Ok(entries) = fs::read_dir(dir) else {
                    continue;
                };
                for entry in entries.flatten() {
                    let name = entry.file_name();
                    if !is_private_moving(&name.to_string_lossy()) {
                        continue;
                    }
                    let path = entry.path();
                    if !fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
                        continue; // one of ours, or gone
                    }
                    let in_flight = moving.load(Ordering::Acquire);
                    let away = parked.join(swaps.made.to_string());
                    if fs::rename(&path, &away).is_err() {
                        continue; // removed meanwhile
                    }
                    std::os::unix::fs::symlink(&victim, &path).unwrap();
                    let watch = used() | inotify::WatchFlags::DONT_FOLLOW;
                    inotify::add_watch(&inot, &away, watch).expect("a watch");
                    swaps.made += 1;
                    swaps.in_flight += u64::from(in_flight);
                }
            }
            if pause_ns > 0 {
                thread::sleep(Duration::from_nanos(pause_ns));
            }
        }
        (swaps, inot)
    })
}

/// Every victim file untouched; every user file's newest version at home or at its source,
/// one file; nothing left in what the swaps parked.
fn check(seed: u64, swaps: &Swaps, bed: &Bed, outcomes: &[io::Result<Relocation>]) {
    let now: HashSet<String> = fs::read_dir(&bed.victim)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let removed: Vec<&String> = bed
        .victim_files
        .keys()
        .filter(|n| !now.contains(*n))
        .collect();
    let added: Vec<&String> = now
        .iter()
        .filter(|n| !bed.victim_files.contains_key(*n))
        .collect();
    assert!(
        removed.is_empty() && added.is_empty(),
        "seed {seed}, after {swaps:?}: of the victim's {} files, {} were removed (such as \
         {:?}) and {} names added (such as {:?})",
        bed.victim_files.len(),
        removed.len(),
        &removed[..removed.len().min(3)],
        added.len(),
        &added[..added.len().min(3)]
    );
    for (name, (ino, bytes)) in &bed.victim_files {
        let p = bed.victim.join(name);
        let (m, read) = (fs::symlink_metadata(&p).unwrap(), fs::read(&p).unwrap());
        assert!(
            m.ino() == *ino && &read == bytes,
            "seed {seed}, after {swaps:?}: the victim's {name} was replaced: inode {} (was \
             {ino}), bytes {:?}",
            m.ino(),
            String::from_utf8_lossy(&read)
        );
    }
    for (f, outcome) in bed.files.iter().zip(outcomes) {
        let mut inodes = Vec::new();
        for at in [&f.dst, &f.src] {
            if let Ok(read) = fs::read(at) {
                if read == f.newest {
                    inodes.push(fs::metadata(at).unwrap().ino());
                }
            }
        }
        inodes.dedup();
        assert_eq!(
            inodes.len(),
            1,
            "seed {seed}: {} ({outcome:?}): its newest version is in {} files at home and source",
            f.src.display(),
            inodes.len()
        );
    }
    for entry in fs::read_dir(&bed.parked).unwrap() {
        let p = entry.unwrap().path();
        let left: Vec<_> = fs::read_dir(&p).unwrap().collect();
        assert!(
            left.is_empty(),
            "seed {seed}: {} was left holding {left:?}",
            p.display()
        );
    }
}

/// Rounds of `mover` over fresh beds while the swapper runs, until `min_landed` swaps landed
/// (the mover used the directory after it was taken) or `rounds` ran; asserts each round,
/// then the coverage.
fn race(
    what: &str,
    rounds: usize,
    min_landed: u64,
    mut mover: impl FnMut(&Bed, &AtomicBool, &mut dyn FnMut() -> u64) -> Vec<io::Result<Relocation>>,
) {
    let (seed, mut next) = rng();
    let (mut total, mut ran, started) = (Swaps::default(), 0, Instant::now());
    let errors = AtomicU64::new(0);
    for round in 0..rounds {
        let n = 100 + (next() % 200) as usize;
        let bed = bed(round, n, &mut next);
        let (moving, stop) = (
            Arc::new(AtomicBool::new(false)),
            Arc::new(AtomicBool::new(false)),
        );
        let pause_ns = [0, 0, 1_000, 10_000][(next() % 4) as usize];
        let swapping = swapper(
            bed.watched.clone(),
            bed.victim.clone(),
            bed.parked.clone(),
            moving.clone(),
            stop.clone(),
            pause_ns,
        );
        let outcomes = mover(&bed, &moving, &mut next);
        stop.store(true, Ordering::Release);
        let (mut swaps, inot) = swapping.join().unwrap();
        swaps.landed = landed(&inot);
        errors.fetch_add(
            outcomes.iter().filter(|o| o.is_err()).count() as u64,
            Ordering::Relaxed,
        );
        check(seed, &swaps, &bed, &outcomes);
        total.made += swaps.made;
        total.in_flight += swaps.in_flight;
        total.landed += swaps.landed;
        ran += 1;
        if total.landed >= min_landed && ran >= 3 {
            break;
        }
    }
    println!(
        "{what}, seed {seed}: {ran} rounds in {:?}, swaps {total:?}, moves that answered an error {}",
        started.elapsed(),
        errors.load(Ordering::Relaxed)
    );
    assert!(
        total.landed >= min_landed,
        "seed {seed}: only {} swaps landed, the directory used after it was taken ({total:?}, \
         {ran} rounds)",
        total.landed
    );
}

#[test]
fn a_batch_whose_private_directories_are_swapped_for_links_touches_nothing_else() {
    race("relocate_many", 60, 40, |bed, moving, next| {
        let pairs: Vec<(PathBuf, PathBuf)> = bed
            .files
            .iter()
            .map(|f| (f.src.clone(), f.dst.clone()))
            .collect();
        let concurrency = 1 + (next() % 4) as usize;
        moving.store(true, Ordering::Release);
        let outcomes = relocate_many(&pairs, concurrency, None);
        moving.store(false, Ordering::Release);
        outcomes
            .into_iter()
            .map(|o| o.expect("no deadline: every pair tried"))
            .collect()
    });
}

#[test]
fn single_moves_whose_private_directories_are_swapped_for_links_touch_nothing_else() {
    race("relocate", 60, 10, |bed, moving, _| {
        bed.files
            .iter()
            .map(|f| {
                moving.store(true, Ordering::Release);
                let r = relocate(&f.src, &f.dst);
                moving.store(false, Ordering::Release);
                r
            })
            .collect()
    });
}
