//! Benchmark: a rebalance's walk right after one shard was added, with the full comparison
//! and with the comparison against the added shard only.
//!
//!     make bench-rebalance                   (= N=2000000 SHARDS=40)
//!     cargo run --release --example rebalance_bench -- 2000000 40
//!
//! N empty files, each at its home under a list of SHARDS shards (5 mount targets serving
//! SHARDS / 5 each), are made once on local disk (under the system's temporary directory,
//! kept for later runs); then the first target serves one shard more. Each comparison walks
//! every shard once (the run's code: `moves::rebalance`, the sorted walk from the start, no
//! move allowed, so the tree is the same for both), and the bench prints its CPU per file,
//! the files a run visits before the default deadline (900 s less the 20 s margin) on one
//! core and at the template's 256 MB, and the peak resident memory of the walks.

use efs_mount_autoscaler::bench::{
    comparison, rebalance, Budget, Comparison, ShardSet, Walk, ABANDONED_AFTER,
};
use efs_mount_autoscaler::config::Config;
use efs_router::{shard_index, MountTargetList};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The default deadline of a run: the template's `FunctionTimeout` less the function's margin.
const RUN_SECS: f64 = 900.0 - 20.0;
/// CPU at the template's 256 MB, against one vCPU at 1,769 MB (Lambda gives CPU in proportion).
const AT_256_MB: f64 = 256.0 / 1769.0;

fn list(targets: usize, per_target: u32, first_extra: u32) -> MountTargetList {
    let entries: Vec<String> = (0..targets)
        .map(|i| {
            let az = format!("use1-az{}", i + 1);
            let root = if i == 0 { "/".to_owned() } else { format!("/shards/{az}") };
            let shards = per_target + if i == 0 { first_extra } else { 0 };
            format!(
                r#"{{"id":"fsmt-{i}","ip":"10.0.{i}.4","az_id":"{az}","root":"{root}","shards":{shards}}}"#
            )
        })
        .collect();
    let text = format!(
        r#"{{"version":2,"strategy":"rendezvous","mount_targets":[{}]}}"#,
        entries.join(",")
    );
    MountTargetList::from_json(&text).expect("a valid list")
}

fn watch(mount: &Path, root: &str) -> PathBuf {
    let mut p = mount.to_path_buf();
    p.extend(root.split('/').filter(|c| !c.is_empty()));
    p.join("data/analysis")
}

/// N files at home under `old`, made once.
fn tree(mount: &Path, old: &MountTargetList, n: usize) {
    let done = mount.join(".complete");
    if done.exists() {
        println!("tree: {} (made before)", mount.display());
        return;
    }
    let started = Instant::now();
    let shards = old.shards();
    let dirs: Vec<PathBuf> = shards.iter().map(|t| watch(mount, &t.root)).collect();
    for d in &dirs {
        std::fs::create_dir_all(d).unwrap();
    }
    for i in 0..n {
        let name = format!("device-{i}-1700000000.json");
        let home = shard_index(&format!("data/analysis/{name}"), &shards, old.strategy).unwrap();
        std::fs::File::create(dirs[home].join(name)).unwrap();
        if (i + 1) % 500_000 == 0 {
            println!("  {} files made", i + 1);
        }
    }
    std::fs::write(&done, b"").unwrap();
    println!(
        "tree: {n} files in {} shards made in {:.0} s",
        shards.len(),
        started.elapsed().as_secs_f64()
    );
}

/// This process's (user, system) CPU time.
fn cpu() -> (Duration, Duration) {
    let mut u = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage fills the struct it is given.
    let u = unsafe {
        libc::getrusage(libc::RUSAGE_SELF, u.as_mut_ptr());
        u.assume_init()
    };
    let d = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (d(u.ru_utime), d(u.ru_stime))
}

fn status_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap()
        .lines()
        .find_map(|l| l.strip_prefix(field))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn main() {
    let mut args = std::env::args().skip(1);
    let n: usize = args
        .next()
        .map_or(2_000_000, |a| a.parse().expect("N files"));
    let shards: u32 = args.next().map_or(40, |a| a.parse().expect("SHARDS"));
    assert!(
        shards.is_multiple_of(5),
        "SHARDS: a multiple of the 5 mount targets"
    );
    let (old, new) = (list(5, shards / 5, 0), list(5, shards / 5, 1));
    let mount = std::env::temp_dir().join(format!("efs-rebalance-bench-{n}-{shards}"));
    tree(&mount, &old, n);

    let mount_path = mount.display().to_string();
    let config = Config::from_lookup(|k| match k {
        "EFS_FILE_SYSTEM_ID" => Some("fs-bench".into()),
        "ECS_CLUSTER_NAME" => Some("c".into()),
        "ECS_SERVICE_NAME" => Some("s".into()),
        "EFS_MOUNT_PATH" => Some(mount_path.clone()),
        _ => None,
    })
    .unwrap();
    let roots: Vec<String> = new.shards().into_iter().map(|t| t.root).collect();
    let balanced = ShardSet::of(&old).unwrap();
    let modes = [
        ("full", comparison(&new, None)),
        ("added shard", comparison(&new, Some(&balanced))),
    ];
    assert!(matches!(modes[1].1, Comparison::Added { .. }));
    println!(
        "{n} files, {} shards, 1 added: each comparison walks them all once (no move)",
        roots.len()
    );
    // The peak from here on (writing 5 to clear_refs resets VmHWM to the current RSS).
    std::fs::write("/proc/self/clear_refs", "5").unwrap();
    let before_kib = status_kib("VmRSS:");
    let mut remaining = Vec::new();
    for (name, c) in &modes {
        let budget = Budget {
            max_moves: 0,
            until: Instant::now() + Duration::from_secs(3600),
            concurrency: 16,
        };
        let walk = Walk {
            from: None,
            max_visits: u64::MAX,
            comparison: c,
            abandoned_after: ABANDONED_AFTER,
        };
        let (cpu0, t0) = (cpu(), Instant::now());
        let moves = rebalance(&config, &new, &roots, budget, walk, &mut Vec::new()).unwrap();
        let (cpu1, wall) = (cpu(), t0.elapsed());
        let files = moves.visited.max(1) as f64;
        let (user, sys) = (cpu1.0 - cpu0.0, cpu1.1 - cpu0.1);
        let per_file = (user + sys).as_secs_f64() / files;
        println!(
            "{name:>12}: {} files visited, {} misplaced; CPU {:.2} µs a file ({:.2} user + {:.2} system), wall {:.2} µs a file",
            moves.visited,
            moves.remaining,
            per_file * 1e6,
            user.as_secs_f64() / files * 1e6,
            sys.as_secs_f64() / files * 1e6,
            wall.as_secs_f64() / files * 1e6,
        );
        println!(
            "{:>12}  files a run visits by the default deadline ({RUN_SECS:.0} s): {:.1} million on one core, {:.1} million at 256 MB",
            "",
            RUN_SECS / per_file / 1e6,
            RUN_SECS * AT_256_MB / per_file / 1e6,
        );
        remaining.push(moves.remaining);
    }
    assert_eq!(
        remaining[0], remaining[1],
        "both comparisons find the same files"
    );
    println!(
        "peak resident memory: {:.1} MiB ({:.1} MiB before the walks)",
        status_kib("VmHWM:") as f64 / 1024.0,
        before_kib as f64 / 1024.0
    );
}
