//! The size of the published list for realistic AWS values, written by the real
//! `MountTargetList::to_json`: (a) version 2, where a mount target serving k shards carries
//! `"shards": k`, and (b) one full entry per shard (what version 1 would need: a unique id and
//! a root of its own, `/shards/<az_id>.<k>`, for every shard). It also finds how many shards
//! form (b) fits in SSM Parameter Store's standard tier (4 KB) and advanced tier (8 KB).
//! docs/scaling.md holds the figures.
//!
//!     cargo run -p efs-router --release --example list_sizes
//!
//! Shards are spread over the targets as evenly as possible (the first ones take one more);
//! with fewer shards than targets, the list has as many targets as shards.
//! Every list is parsed back with `MountTargetList::from_json` and must describe exactly the
//! shards it was built with.

use efs_router::list::{extra_root, MountTargetList, Strategy, Target, MAX_LIST_SHARDS};

/// Parameter Store's limits on a parameter's value, in bytes: standard and advanced tier.
const STANDARD_TIER: usize = 4096;
const ADVANCED_TIER: usize = 8192;

/// The counts docs/scaling.md asks about, with 21 and 204: the shards of 1 and 10 million files
/// at the default threshold.
const SHARD_COUNTS: [usize; 11] = [1, 3, 6, 20, 21, 50, 100, 200, 204, 256, 1000];

/// The i-th mount target (0-based) as AWS names it: 17-hex-digit ids, three-digit octets,
/// `us-east-1a` …, `use1-az1` …. The first keeps `/`, the others `/shards/<az_id>`.
fn target(i: usize, shards: u32) -> Target {
    let letter = (b'a' + i as u8) as char;
    let az_id = format!("use1-az{}", i + 1);
    Target {
        id: format!("fsmt-0123456789abcdef{i}"),
        ip: format!("10.0.{}.234", 123 + i),
        az: Some(format!("us-east-1{letter}")),
        subnet_id: Some(format!("subnet-0123456789abcdef{i}")),
        root: if i == 0 {
            "/".to_owned()
        } else {
            format!("/shards/{az_id}")
        },
        az_id: Some(az_id),
        draining: false,
        shards,
        draining_shards: 0,
    }
}

/// Form (a): `targets` entries, `shards` shards among them.
fn version_2(targets: usize, shards: usize) -> MountTargetList {
    let mut list = MountTargetList::new(Strategy::Rendezvous);
    let served = |i: usize| (shards / targets + usize::from(i < shards % targets)) as u32;
    list.mount_targets = (0..targets).map(|i| target(i, served(i))).collect();
    list
}

/// Form (b): the same shards, one entry each; the k-th shard (k ≥ 1) of a target is
/// `<id>.<k>` rooted at `/shards/<az_id>.<k>`.
fn one_entry_per_shard(targets: usize, shards: usize) -> MountTargetList {
    let v2 = version_2(targets, shards);
    let mut list = MountTargetList::new(Strategy::Rendezvous);
    for t in &v2.mount_targets {
        for k in 0..t.shards {
            let mut e = Target {
                shards: 1,
                ..t.clone()
            };
            if k > 0 {
                e.id = format!("{}.{k}", t.id);
                e.root = extra_root(t.az_id.as_deref().unwrap_or_default(), k);
            }
            list.mount_targets.push(e);
        }
    }
    list
}

/// The published bytes, after checking that they parse back to `shards` shards.
fn size(list: &MountTargetList, shards: usize) -> usize {
    let json = list.to_json();
    let back = MountTargetList::from_json(&json).expect("the list parses back");
    assert_eq!(back.shard_count(), shards);
    json.len()
}

/// The most shards whose form-(b) list fits in `limit` bytes (the size grows with the shards).
fn most_that_fit(targets: usize, limit: usize) -> usize {
    (targets..=MAX_LIST_SHARDS)
        .take_while(|&s| size(&one_entry_per_shard(targets, s), s) <= limit)
        .last()
        .unwrap_or(0)
}

fn kb(bytes: usize) -> String {
    format!("{bytes} ({:.1} KB)", bytes as f64 / 1024.0)
}

fn main() {
    println!("| shards | (a) version 2, 3 targets | (a) version 2, 6 targets | (b) an entry a shard, 3 targets | (b) an entry a shard, 6 targets |");
    println!("|---|---|---|---|---|");
    for s in SHARD_COUNTS {
        // Fewer shards than targets: as many targets as shards (one target a shard, marked *).
        let cell = |targets: usize, form: fn(usize, usize) -> MountTargetList| {
            let t = targets.min(s);
            let mark = if t < targets { "*" } else { "" };
            format!("{}{mark}", kb(size(&form(t, s), s)))
        };
        println!(
            "| {s} | {} | {} | {} | {} |",
            cell(3, version_2),
            cell(6, version_2),
            cell(3, one_entry_per_shard),
            cell(6, one_entry_per_shard),
        );
    }
    println!();
    println!("* fewer shards than targets: as many targets as shards, one shard each");
    println!();
    for targets in [3, 6] {
        println!(
            "(b) with {targets} targets: at most {} shards fit the standard tier ({STANDARD_TIER} bytes), {} the advanced tier ({ADVANCED_TIER} bytes)",
            most_that_fit(targets, STANDARD_TIER),
            most_that_fit(targets, ADVANCED_TIER),
        );
    }
    // The largest version 2 list there can be: 6 targets, 1,000 shards, each target draining
    // its last shard (a drain writes "draining_shards") and one whole target draining.
    let mut worst = version_2(6, MAX_LIST_SHARDS);
    for t in &mut worst.mount_targets {
        t.draining_shards = 1;
    }
    worst.mount_targets[5].draining = true;
    println!(
        "(a) at its largest (6 targets, {MAX_LIST_SHARDS} shards, every target with \"draining_shards\", one \"draining\"): {} bytes",
        size(&worst, MAX_LIST_SHARDS)
    );
}
