//! The function's first day, end to end, on this machine: moto_server plays AWS (behind the
//! tests' proxy, which plays the ECS tasks moto does not run), a directory plays EFS.
//!
//!     make demo     (= cargo build --bin efs-mount-autoscaler --example demo && cargo run --example demo)
//!
//! The system the function is installed into: a file system with a mount target in each of 3
//! AZs (EFS's usual setup), 60,000 readings in `data/analysis`, and an app whose task reads and
//! writes them with plain paths. The function runs with its defaults, as Lambda runs it: the
//! files need 2 shards, so a target that was already there takes the second (no target is
//! created), the list is published and the service redeployed. It moves no file: the app's
//! task reports no list, and would lose sight of a file moved out of its directory.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use serde_json::Value;

use support::files::count_files;
use support::function::pretty;
use support::{binary_beside_exe, event, project_dir, Mount, Seed, Testbed, World};

const FILES: usize = 60_000;
const DEADLINE: Duration = Duration::from_secs(120);

#[tokio::main]
async fn main() {
    let binary = binary_beside_exe();
    if !binary.exists() {
        eprintln!(
            "{} is missing: run `cargo build --bin efs-mount-autoscaler` first (or `make demo`).",
            binary.display()
        );
        std::process::exit(1);
    }
    // In Cargo's target directory (wherever CARGO_TARGET_DIR puts it), next to the binaries.
    let mount_dir = binary
        .parent()
        .and_then(|debug| debug.parent())
        .unwrap_or(project_dir())
        .join("demo-efs");

    step("Starting moto_server (the AWS emulator) and building the users' world: subnets in 3 AZs, an EFS file system with a mount target in each, an ECS service, no list yet");
    let world = World::builder()
        .mount_targets_in(&['a', 'b', 'c'])
        .parameter(Seed::Absent);
    let tb = Testbed::with_mount(&binary, world, Mount::at(&mount_dir)).await;
    for t in tb.world.mount_targets().await {
        println!("  mount target {} {} in {} ({})", t.id, t.ip, t.az, t.az_id);
    }

    step(&format!(
        "Writing {FILES} readings into {}/data/analysis",
        mount_dir.display()
    ));
    let started = Instant::now();
    tb.mount.generate(FILES);
    println!("  done in {:.1} s", started.elapsed().as_secs_f64());
    let tasks = tb.start_tasks().await;
    println!("  the app runs on plain paths, no router: tasks {tasks:?}");

    for run in 1..=2 {
        step(&format!(
            "Run {run}: events/scheduled.json, the defaults (FILE_THRESHOLD 50000, CLIENT_REPORTS require)"
        ));
        let r = invoke(&tb, &event("scheduled")).await;
        say(
            &r,
            &[
                "decision",
                "reason",
                "homes",
                "actions",
                "shards",
                "total",
                "warning_kinds",
            ],
        );
    }
    match tb.world.parameter().await {
        Some(p) => println!(
            "\nPublished list ({}, SSM parameter version {}):\n{}",
            tb.world.parameter_name,
            p.version,
            pretty(&p.json())
        ),
        None => println!("\nNothing is published at {}", tb.world.parameter_name),
    }
    println!("Shard directories: {:?}", tb.mount.shard_ids());

    step("A rebalance (events/rebalance.json): would it move files home?");
    let r = invoke(&tb, &event("rebalance")).await;
    say(&r, &["moves", "waiting_for", "clients_behind"]);
    let left = count_files(&tb.mount.watch_dir());
    println!(
        "\n{left} of {FILES} readings are in data/analysis, where the app looks: nothing moves until \
         every task of the app runs a router that reports (docs/operations.md, \"Day one\")."
    );
    step("Stopping moto_server");
}

/// One invocation's response; the failure and the function's logs, then exit, if it failed.
async fn invoke(tb: &Testbed, event: &Value) -> Value {
    let invocation = tb.function.invoke(event, DEADLINE).await;
    match &invocation.result {
        Ok(response) => response.clone(),
        Err(error) => {
            println!("\nThe function failed:\n{}", pretty(error));
            println!("\n{}", invocation.logs_block());
            std::process::exit(1);
        }
    }
}

/// The response's fields `keys`, one a line.
fn say(response: &Value, keys: &[&str]) {
    for key in keys {
        println!("  {key}: {}", response[*key]);
    }
}

fn step(text: &str) {
    println!("\n== {text}");
}
