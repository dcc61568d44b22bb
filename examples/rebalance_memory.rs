//! Benchmark: the function's peak memory during a rebalance that finds many misplaced files.
//!
//!     make bench-rebalance-memory            (= N=500000)
//!     cargo build --bin efs-mount-autoscaler --example rebalance_memory && \
//!       target/debug/examples/rebalance_memory 500000
//!
//! Two mount targets (`/` and `/shards/<az-id>`), N files in the second shard's directory
//! whose home is `/`, and one rebalance that may move a single file: it still walks all N
//! names and counts N - 1 as remaining. The function process's peak resident set size
//! (`VmHWM` in `/proc/<pid>/status`) is read once it has answered. Memory must not grow with
//! N: the walk streams.

#[path = "../tests/support/mod.rs"]
mod support;

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
    let world = World::builder()
        .mount_targets_in(&['a', 'b'])
        .build(&aws)
        .await;
    let list = MountTargetList::from_json(&world.published().await.value).expect("the list");
    let second = list.mount_targets[1].clone();
    let mount = Mount::temp();
    std::fs::create_dir_all(mount.watch_dir()).unwrap();
    let dir = mount.dir_of_root(&second.root);
    std::fs::create_dir_all(&dir).unwrap();

    let shards = list.shards();
    let started = Instant::now();
    let mut made = 0;
    let mut i = 0u64;
    while made < n {
        let name = format!("device-{i}-1700000000.json");
        i += 1;
        let home = shard_index(&format!("data/analysis/{name}"), &shards, list.strategy)
            .expect("routable");
        if shards[home].root == "/" {
            std::fs::write(dir.join(&name), b"{}").unwrap();
            made += 1;
        }
    }
    println!(
        "{n} misplaced files made in {:.1} s",
        started.elapsed().as_secs_f64()
    );

    // The function behind a wrapper that notes its pid, then becomes it (exec): its peak
    // resident set size is `VmHWM` in /proc/<pid>/status, read while it waits for the next event.
    let work = tempfile::tempdir().unwrap();
    let pid_file = work.path().join("pid");
    let wrapper = work.path().join("function");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\necho $$ > {}\nexec {} \"$@\"\n",
            pid_file.display(),
            binary.display()
        ),
    )
    .unwrap();
    std::process::Command::new("chmod")
        .args(["+x"])
        .arg(&wrapper)
        .status()
        .unwrap();
    let function = Function::new(&wrapper, &moto.endpoint()).envs(world.function_env(mount.path()));
    let mut instance = function.start().await;
    let started = Instant::now();
    let inv = instance
        .invoke(
            &json!({"action": "rebalance", "max_moves": 1}),
            Duration::from_secs(900),
        )
        .await;
    let took = started.elapsed();
    let pid = std::fs::read_to_string(&pid_file).unwrap();
    let status = std::fs::read_to_string(format!("/proc/{}/status", pid.trim())).unwrap();
    let peak_kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|kib| kib.parse().ok())
        .unwrap_or(0);
    let logs = instance.stop().await;
    if std::env::var_os("SHOW_LOGS").is_some() {
        println!("{logs}");
    }
    let moves = inv.response()["moves"].clone();
    println!(
        "rebalance: moves {moves}; {:.1} s; the function's peak RSS {:.1} MiB",
        took.as_secs_f64(),
        peak_kib as f64 / 1024.0
    );
    drop(moto);
}
