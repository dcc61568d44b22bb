//! Costs over a network file system, on the netfs FUSE test bed (see `netfs/src/lib.rs`): each
//! figure beside its floor, with the round trips it took by kind. Prints Markdown tables.
//!
//!     cargo run --release -p efs-router --example netfs_bench -- [--rtt-ms 1] [SECTION ...]
//!
//! Sections: `counting`, `moves`, `drain`, `client` (all by default). Files are created in the
//! backing directory, not through the mount, and the backing directory's own cache is warmed
//! before anything is timed, so the figures are the round trips, not the local disk.

use efs_router::dir::{count_files, for_each_file};
use efs_router::relocation::relocate_many;
use efs_router::{
    shard_index, Layout, MountTargetList, Place, Relocation, Router, Strategy, Target,
};
use netfs::{Counts, NetFs, Options};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const PER_READDIR: u64 = 544;

struct Bed {
    fs: NetFs,
    backing: tempfile::TempDir,
    _mnt: tempfile::TempDir,
}

impl Bed {
    fn new(rtt: Duration) -> Bed {
        let backing = tempfile::tempdir().unwrap();
        let mnt = tempfile::tempdir().unwrap();
        let fs = NetFs::try_mount(
            backing.path(),
            mnt.path(),
            Options {
                round_trip: rtt,
                ..Options::default()
            },
        )
        .unwrap_or_else(|e| {
            eprintln!("SKIP netfs_bench: FUSE test bed unavailable: {e}");
            std::process::exit(0)
        });
        Bed {
            fs,
            backing,
            _mnt: mnt,
        }
    }
    fn b(&self, rel: &str) -> PathBuf {
        self.backing.path().join(rel)
    }
    fn m(&self, rel: &str) -> PathBuf {
        self.fs.mountpoint().join(rel)
    }
    fn measure<T>(&self, f: impl FnOnce() -> T) -> (T, Duration, Counts) {
        self.fs.reset();
        let t = Instant::now();
        let out = f();
        let took = t.elapsed();
        (out, took, self.fs.counts())
    }
}

fn create_files(dir: &Path, names: impl Iterator<Item = String>) {
    fs::create_dir_all(dir).unwrap();
    for n in names {
        fs::File::create(dir.join(n)).unwrap();
    }
}

fn ms(d: Duration) -> String {
    let ms = d.as_secs_f64() * 1000.0;
    if ms >= 10_000.0 {
        format!("{:.1} s", ms / 1000.0)
    } else {
        format!("{ms:.1} ms")
    }
}

fn counting(rtt: Duration) {
    println!("### Counting (`efs_router::dir::count_files`, as the function counts)\n");
    println!("| files | shards | largest shard | floor: ceil(largest / 544) round trips, times ceil(shards / 64) | shards at once, up to 64 (the function now) | one shard after another (before) | round trips, at once |");
    println!("|---|---|---|---|---|---|---|");
    for (files, shards) in [
        (150_000u64, 3u64),
        (1_000_000, 6),
        (1_000_000, 21),
        (1_000_000, 204),
    ] {
        let bed = Bed::new(rtt);
        let mut dirs = Vec::new();
        let mut largest = 0;
        for s in 0..shards {
            let n = files / shards + u64::from(s < files % shards);
            largest = largest.max(n);
            let rel = format!("shards/s{s}/data/analysis");
            create_files(
                &bed.b(&rel),
                (0..n).map(|i| format!("device-{:05}-{}.json", i % 5000, 1_700_000_000 + i)),
            );
            count_files(&bed.b(&rel)).unwrap(); // the backing directory's cache
            dirs.push(bed.m(&rel));
        }
        // As the function counts (src/observe.rs): at most 64 shards at a time.
        let (total, at_once, c) = bed.measure(|| {
            efs_router::pool::map_all(&dirs, 64, |d| count_files(d).unwrap().unwrap())
                .into_iter()
                .sum::<u64>()
        });
        assert_eq!(total, files);
        let (total, one_by_one, _) = bed.measure(|| {
            dirs.iter()
                .map(|d| count_files(d).unwrap().unwrap())
                .sum::<u64>()
        });
        assert_eq!(total, files);
        let floor = largest.div_ceil(PER_READDIR) * shards.div_ceil(64);
        println!(
            "| {files} | {shards} | {largest} | {floor} = {} | {} | {} | {} |",
            ms(rtt * floor as u32),
            ms(at_once),
            ms(one_by_one),
            c.summary()
        );
    }
    println!();
}

/// Source files for moves: `from/<round>-f<i>` → `home-<i % 3>/<round>-f<i>`, through the
/// mount. New names each round: names the kernel saw before (its dentries, now stale) would
/// cost a second LOOKUP each, which a drain of files it never saw does not pay.
fn move_pairs(bed: &Bed, round: usize, n: usize) -> Vec<(PathBuf, PathBuf)> {
    (0..n)
        .map(|i| {
            let name = format!("r{round}-f{i}");
            fs::File::create(bed.b(&format!("from/{name}"))).unwrap();
            (
                bed.m(&format!("from/{name}")),
                bed.m(&format!("home-{}/{name}", i % 3)),
            )
        })
        .collect()
}

fn moves(rtt: Duration) {
    let n = 10_000usize;
    println!("### Moves: {n} files from one directory into three (`relocate_many`)\n");
    println!("Floors at this round trip: a move (link, rename to a private name, unlink) is 10 round trips on the test bed, so one at a time takes {}; the source directory's lock is held through 5 of them (the rename's two LOOKUPs and its RENAME, the unlink's LOOKUP and its UNLINK), so no number at once beats {} ({} moves/s); over NFS, which answers those lookups from its attribute cache, the lock holds for the RENAME and the UNLINK: {}.\n",
        ms(rtt * (10 * n) as u32), ms(rtt * (5 * n) as u32), (1.0 / (5.0 * rtt.as_secs_f64())).round(), ms(rtt * (2 * n) as u32));
    println!("| at once | time | moves/s | round trips per move | most round trips in flight |");
    println!("|---|---|---|---|---|");
    let bed = Bed::new(rtt);
    for d in ["from", "home-0", "home-1", "home-2"] {
        fs::create_dir(bed.b(d)).unwrap();
    }
    for (round, concurrency) in [1usize, 4, 16, 64].into_iter().enumerate() {
        let pairs = move_pairs(&bed, round, n);
        count_files(&bed.b("from")).unwrap();
        for d in ["from", "home-0", "home-1", "home-2"] {
            fs::metadata(bed.m(d)).unwrap();
        }
        let (out, took, c) = bed.measure(|| relocate_many(&pairs, concurrency, None));
        assert!(out.iter().all(|o| matches!(o, Some(Ok(Relocation::Moved)))));
        println!(
            "| {concurrency}{} | {} | {:.0} | {} | {} |",
            if concurrency == 1 {
                " (one after another)"
            } else {
                ""
            },
            ms(took),
            n as f64 / took.as_secs_f64(),
            c.summary_per(n as u64),
            c.get("MAX_IN_FLIGHT")
        );
    }
    println!();
}

fn target(i: usize, root: &str, draining: bool) -> Target {
    Target {
        draining,
        ..Target::new(format!("fsmt-{i}"), format!("10.0.{i}.4"), root)
    }
}

fn drain(rtt: Duration) {
    let n = 30_000usize;
    let concurrency = 16;
    println!("### Drain: {n} files out of a draining shard into the three others\n");
    let roots = ["/", "/shards/a", "/shards/b", "/shards/c"];
    let list = MountTargetList {
        open: None,
        scope: None,
        mount_targets: roots
            .iter()
            .enumerate()
            .map(|(i, r)| target(i, r, i == 3))
            .collect(),
        strategy: Strategy::Rendezvous,
    };
    let bed = Bed::new(rtt);
    let watch = |root: &str| match root.trim_start_matches('/') {
        "" => "data/analysis".to_owned(),
        r => format!("{r}/data/analysis"),
    };
    for r in roots {
        fs::create_dir_all(bed.b(&watch(r))).unwrap();
    }
    let from = watch(roots[3]);
    create_files(
        &bed.b(&from),
        (0..n).map(|i| format!("device-{:05}-{}.json", i % 5000, 1_700_000_000 + i)),
    );
    count_files(&bed.b(&from)).unwrap();
    let (moved, took, c) = bed.measure(|| {
        // As a drain does: list the shard, route each name, move them.
        let shards = list.shards();
        let mut pairs = Vec::new();
        for_each_file(&bed.m(&from), |name| {
            let name = name.to_str().unwrap();
            let logical = format!("data/analysis/{name}");
            let home = shard_index(&logical, &shards, list.strategy).unwrap();
            pairs.push((
                bed.m(&from).join(name),
                bed.m(&watch(roots[home])).join(name),
            ));
            true
        })
        .unwrap();
        relocate_many(&pairs, concurrency, None)
            .iter()
            .filter(|o| matches!(o, Some(Ok(Relocation::Moved))))
            .count()
    });
    assert_eq!(moved, n);
    println!("| files | at once | time | moves/s | round trips per move | floor on the test bed (5 round trips a file through the source's lock) | floor over NFS (2 a file) | one at a time (10 a file) |");
    println!("|---|---|---|---|---|---|---|---|");
    println!(
        "| {n} | {concurrency} | {} | {:.0} | {} | {} | {} | {} |\n",
        ms(took),
        n as f64 / took.as_secs_f64(),
        c.summary_per(n as u64),
        ms(rtt * (5 * n) as u32),
        ms(rtt * (2 * n) as u32),
        ms(rtt * (10 * n) as u32)
    );
}

fn client(rtt: Duration) {
    println!("### The Rust client (`efs_router::Router`), per operation\n");
    println!("| shards | operation | time per op | round trips per op | floor |");
    println!("|---|---|---|---|---|");
    let reps = 100;
    for shards in [3usize, 6] {
        let bed = Bed::new(rtt);
        let roots: Vec<String> = (0..shards)
            .map(|i| {
                if i == 0 {
                    "/".to_owned()
                } else {
                    format!("/shards/s{i}")
                }
            })
            .collect();
        let list = MountTargetList {
            open: None,
            scope: None,
            mount_targets: roots
                .iter()
                .enumerate()
                .map(|(i, r)| target(i, r, false))
                .collect(),
            strategy: Strategy::Rendezvous,
        };
        let dir_of = |i: usize| {
            let r = roots[i].trim_start_matches('/');
            if r.is_empty() {
                "data/analysis".to_owned()
            } else {
                format!("{r}/data/analysis")
            }
        };
        for i in 0..shards {
            fs::create_dir_all(bed.b(&dir_of(i))).unwrap();
        }
        let router = Router::new(list, Layout::single_mount(bed.fs.mountpoint())).unwrap();
        let name = |tag: &str, k: usize| format!("data/analysis/device-{tag}-{k}.json");
        let home_of = |p: &str| router.resolve(p).unwrap().index;
        // Files at home, files in another shard (one set for exists, one for reads, which
        // move them), and names nowhere.
        for k in 0..reps {
            let p = name("hit", k);
            fs::write(bed.b(&dir_of(home_of(&p))).join(&p[14..]), b"0123456789").unwrap();
            for tag in ["away-e", "away-r"] {
                let p = name(tag, k);
                let other = (home_of(&p) + 1) % shards;
                fs::write(bed.b(&dir_of(other)).join(&p[14..]), b"0123456789").unwrap();
            }
        }
        for i in 0..shards {
            fs::metadata(bed.m(&dir_of(i))).unwrap();
        }
        let n = reps as u64;
        let row = |op: &str, floor: &str, f: &dyn Fn(usize)| {
            let (_, took, c) = bed.measure(|| (0..reps).for_each(f));
            println!(
                "| {shards} | {op} | {} | {} | {floor} |",
                ms(took / reps as u32),
                c.summary_per(n)
            );
        };
        row("`exists`, home hit", "LOOKUP 1", &|k| {
            assert!(router.exists(&name("hit", k)).unwrap())
        });
        row(
            "`exists`, fallback hit",
            "LOOKUP 1 + one per other shard, at once: 2 round trips' time",
            &|k| assert!(router.exists(&name("away-e", k)).unwrap()),
        );
        row(
            "`exists`, miss",
            "LOOKUP per shard + home again: 3 round trips' time",
            &|k| assert!(!router.exists(&name("none", k)).unwrap()),
        );
        row(
            "miss probed one shard after another (the client before)",
            &format!("{} round trips' time", shards + 1),
            &|k| {
                let p = name("none", k);
                let home = router.resolve(&p).unwrap();
                assert!(!home.real.exists());
                for j in (0..shards).filter(|&j| j != home.index) {
                    assert!(!bed.m(&dir_of(j)).join(&p[14..]).exists());
                }
                assert!(!home.real.exists());
            },
        );
        row(
            "`read_with_fallback`, home hit",
            "LOOKUP, OPEN, READ",
            &|k| {
                let r = router.read_with_fallback(&name("hit", k)).unwrap();
                assert_eq!(r.place, Place::Home);
            },
        );
        row(
            "`read_with_fallback`, fallback hit (moved home)",
            "the miss, the read, a move",
            &|k| {
                let r = router.read_with_fallback(&name("away-r", k)).unwrap();
                assert!(matches!(r.place, Place::MovedHome { .. }));
            },
        );
        row("`read_with_fallback`, miss", "as `exists`", &|k| {
            assert!(router.read_with_fallback(&name("none", k)).is_err())
        });
        row("`write` (new file)", "CREATE, WRITE, FSYNC, RENAME", &|k| {
            router.write(&name("new", k), b"0123456789").unwrap();
        });
    }
    println!();
}

fn main() {
    let mut rtt = Duration::from_millis(1);
    let mut sections = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        if a == "--rtt-ms" {
            let v: f64 = args
                .next()
                .and_then(|v| v.parse().ok())
                .expect("--rtt-ms F");
            rtt = Duration::from_secs_f64(v / 1000.0);
        } else {
            sections.push(a);
        }
    }
    if sections.is_empty() {
        sections = ["counting", "moves", "drain", "client"]
            .map(String::from)
            .to_vec();
    }
    println!("Round trip {}; test bed netfs (FUSE, 64 threads, file names not cached, directories' names and all attributes for 1 s).\n", ms(rtt));
    for s in sections {
        match s.as_str() {
            "counting" => counting(rtt),
            "moves" => moves(rtt),
            "drain" => drain(rtt),
            "client" => client(rtt),
            other => panic!("unknown section {other}"),
        }
    }
}
