//! Benchmark: the function's peak memory during a rebalance that finds many misplaced files.
//!
//!     make bench-rebalance-memory            (= N=500000)
//!     cargo build --bin efs-mount-autoscaler --example rebalance_memory && \
//!       target/debug/examples/rebalance_memory 500000
//!
//! Two mount targets (`/` and `/shards/<az-id>`), N files in the second shard's directory
//! whose home is `/`, and one rebalance that may move a single file: it still walks all N
//! names and counts N - 1 as remaining. A wrapper samples the function process's peak
//! resident set size (`VmHWM` in `/proc/<pid>/status`) while it runs. Memory must not grow
//! with N: the walk streams.

#[path = "../tests/support/mod.rs"]
mod support;

use std::io::Write;
use std::time::{Duration, Instant};

use efs_router::{shard_index, MountTargetList};
use serde_json::json;
use support::{binary_beside_exe, Aws, Function, Moto, Mount, World};

#[tokio::main]
async fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .map(|a| a.parse().expect("N: a whole number of files"))
        .unwrap_or(500_000);
    let binary = binary_beside_exe();
    assert!(
        binary.exists(),
        "{} is missing: build it (make bench-rebalance-memory)",
        binary.display()
    );

    let moto = Moto::start();
    let aws = Aws::at(&moto.endpoint()).await;
    let world = World::builder().mount_targets_in(&['a', 'b']).build(&aws).await;
    let list = MountTargetList::from_json(&world.published().await.value).expect("the list");
    let second = list.mount_targets[1].clone();
    let mount = Mount::temp();
    std::fs::create_dir_all(mount.watch_dir()).unwrap();
    let dir = mount.dir_of_root(&second.root);
    std::fs::create_dir_all(&dir).unwrap();

    let started = Instant::now();
    let mut made = 0;
    let mut i = 0u64;
    while made < n {
        let name = format!("device-{i}-1700000000.json");
        i += 1;
        let home = shard_index(
            &format!("data/analysis/{name}"),
            &list.mount_targets,
            list.strategy,
        )
        .expect("routable");
        if list.mount_targets[home].root == "/" {
            std::fs::write(dir.join(&name), b"{}").unwrap();
            made += 1;
        }
    }
    println!(
        "{n} misplaced files made in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The function behind a wrapper that keeps its peak RSS (`VmHWM`, KiB) in `rss`.
    let work = tempfile::tempdir().unwrap();
    let rss = work.path().join("rss");
    let wrapper = work.path().join("function");
    let mut w = std::fs::File::create(&wrapper).unwrap();
    writeln!(
        w,
        "#!/bin/sh\n{} \"$@\" &\npid=$!\nwhile kill -0 $pid 2>/dev/null; do\n  grep VmHWM /proc/$pid/status > {}.new 2>/dev/null && mv {}.new {}\n  sleep 0.1\ndone\nwait $pid",
        binary.display(),
        rss.display(),
        rss.display(),
        rss.display()
    )
    .unwrap();
    drop(w);
    std::process::Command::new("chmod")
        .args(["+x"])
        .arg(&wrapper)
        .status()
        .unwrap();
    let function = Function::new(&wrapper, &moto.endpoint()).envs(world.function_env(mount.path()));
    let started = Instant::now();
    let inv = function
        .invoke(
            &json!({"action": "rebalance", "max_moves": 1}),
            Duration::from_secs(900),
        )
        .await;
    let took = started.elapsed();
    let moves = inv.response()["moves"].clone();
    let peak_kib: u64 = std::fs::read_to_string(&rss)
        .unwrap_or_default()
        .split_whitespace()
        .nth(1)
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0);
    println!(
        "rebalance: moves {moves}; {:.1} s; the function's peak RSS {:.1} MiB",
        took.as_secs_f64(),
        peak_kib as f64 / 1024.0
    );
    drop(moto);
}
