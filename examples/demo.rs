//! The function, end to end, on this machine: moto_server plays AWS, a directory plays EFS.
//!
//!     make demo     (= cargo build --bin efs-mount-autoscaler --example demo && cargo run --example demo)
//!
//! A file system with one mount target and 60,000 readings in `data/analysis`; the function
//! runs once, as Lambda runs it, on the scheduled event, with the default threshold of 50,000
//! files per mount target. It should add a second mount target, publish both in SSM, and
//! redeploy the ECS service.

#[path = "../tests/support/mod.rs"]
mod support;

use std::time::{Duration, Instant};

use support::function::pretty;
use support::{binary_beside_exe, event, project_dir, Aws, Function, Moto, Mount, World};

const FILES: usize = 60_000;

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

    step("Starting moto_server (the AWS emulator)");
    let moto = Moto::start();
    println!("  {}", moto.endpoint());

    step("Building the world: a VPC with subnets in 3 AZs, an EFS file system with 1 mount target, the SSM parameter, an ECS service");
    let aws = Aws::at(&moto.endpoint()).await;
    let world = World::builder().build(&aws).await;
    for t in world.mount_targets().await {
        println!("  mount target {} {} in {} ({})", t.id, t.ip, t.az, t.az_id);
    }

    // In Cargo's target directory (wherever CARGO_TARGET_DIR puts it), next to the binaries.
    let mount_dir = binary
        .parent()
        .and_then(|debug| debug.parent())
        .unwrap_or(project_dir())
        .join("demo-efs");
    step(&format!(
        "Writing {FILES} readings into {}/data/analysis",
        mount_dir.display()
    ));
    let started = Instant::now();
    let mount = Mount::at(&mount_dir);
    mount.generate(FILES);
    println!("  done in {:.1} s", started.elapsed().as_secs_f64());

    step("Invoking the function with events/scheduled.json (FILE_THRESHOLD 50000, the default)");
    let before = world.primary_deployment(&world.services[0]).await;
    let function = Function::new(&binary, &moto.endpoint()).envs(world.function_env(mount.path()));
    let invocation = function
        .invoke(&event("scheduled"), Duration::from_secs(120))
        .await;

    match &invocation.result {
        Ok(response) => {
            println!("\nResponse:\n{}", pretty(response));
        }
        Err(error) => {
            println!("\nThe function failed:\n{}", pretty(error));
            println!("\n{}", invocation.logs_block());
            std::process::exit(1);
        }
    }

    match world.parameter().await {
        Some(p) => println!(
            "\nPublished list ({}, SSM parameter version {}):\n{}",
            world.parameter_name,
            p.version,
            pretty(&p.json())
        ),
        None => println!("\nNothing is published at {}", world.parameter_name),
    }

    let after = world.primary_deployment(&world.services[0]).await;
    println!(
        "\nECS service {}: primary deployment {} -> {}{}",
        world.services[0],
        before.id,
        after.id,
        if before.id == after.id {
            " (unchanged)"
        } else {
            " (redeployed)"
        }
    );
    println!("Shard directories: {:?}", mount.shard_ids());

    step("Stopping moto_server");
    drop(moto);
}

fn step(text: &str) {
    println!("\n== {text}");
}
