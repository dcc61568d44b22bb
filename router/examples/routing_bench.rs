//! The routing benchmark of router/REFERENCE.md: balance, movement and speed of `shard_index`
//! for both strategies on 1,000,000 generated paths.
//!
//!     cargo run --release -p efs-router --example routing_bench
//!
//! Optional argument: the number of paths (default 1000000).

use efs_router::{shard_index, Shard, Strategy};
use std::hint::black_box;
use std::time::Instant;

fn target(i: usize, az_id: &str, root: &str) -> Shard {
    Shard {
        az_id: Some(az_id.to_owned()),
        ..Shard::new(format!("fsmt-{i}"), format!("10.0.{i}.4"), root)
    }
}

/// `data/analysis/device-{id}-{timestamp}.json`: 50,000 devices reporting once a minute.
fn paths(n: usize) -> Vec<String> {
    (0..n)
        .map(|i| {
            let id = i % 50_000;
            let ts = 1_700_000_000 + (i / 50_000) * 60 + id % 60;
            format!("data/analysis/device-{id}-{ts}.json")
        })
        .collect()
}

fn route(paths: &[String], targets: &[Shard], s: Strategy) -> Vec<usize> {
    paths
        .iter()
        .map(|p| shard_index(p, targets, s).expect("routable"))
        .collect()
}

/// Fraction of paths whose home (by target id) differs between two lists.
fn moved(a: &[usize], ta: &[Shard], b: &[usize], tb: &[Shard]) -> f64 {
    let m = a
        .iter()
        .zip(b)
        .filter(|(&i, &j)| ta[i].id != tb[j].id)
        .count();
    m as f64 / a.len() as f64
}

fn shares(idx: &[usize], n: usize) -> Vec<f64> {
    let mut c = vec![0usize; n];
    for &i in idx {
        c[i] += 1;
    }
    c.iter().map(|&x| x as f64 / idx.len() as f64).collect()
}

/// Best of three runs over all paths, in ns per call.
fn ns_per_call(paths: &[String], targets: &[Shard], s: Strategy) -> f64 {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            let mut acc = 0usize;
            for p in paths {
                acc = acc.wrapping_add(shard_index(black_box(p), black_box(targets), s).unwrap());
            }
            black_box(acc);
            t.elapsed().as_nanos() as f64 / paths.len() as f64
        })
        .fold(f64::INFINITY, f64::min)
}

fn pct(x: f64) -> String {
    format!("{:.2} %", x * 100.0)
}

fn main() {
    let count: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse().expect("a number of paths"))
        .unwrap_or(1_000_000);
    let paths = paths(count);
    let all = [
        target(0, "use1-az6", "/"),
        target(1, "use1-az4", "/shards/use1-az4"),
        target(2, "use1-az1", "/shards/use1-az1"),
        target(3, "use1-az2", "/shards/use1-az2"),
        target(4, "use1-az3", "/shards/use1-az3"),
        target(5, "use1-az5", "/shards/use1-az5"),
    ];
    let three = &all[..3];
    let four = &all[..4];
    let four_minus_second: Vec<Shard> = [0, 2, 3].iter().map(|&i| all[i].clone()).collect();
    let four_minus_last = &all[..3];

    println!("paths: {count} (data/analysis/device-{{id}}-{{timestamp}}.json, 50,000 devices)");
    println!();
    println!("| strategy | n = 3 shares | max/mean | 3 → 4 moved | 4 → 3, 2nd removed | 4 → 3, last removed | optimum |");
    println!("|---|---|---|---|---|---|---|");
    for s in [Strategy::Rendezvous, Strategy::ModuloSha256] {
        let i3 = route(&paths, three, s);
        let i4 = route(&paths, four, s);
        let i4m2 = route(&paths, &four_minus_second, s);
        let i4ml = route(&paths, four_minus_last, s);
        let sh = shares(&i3, 3);
        let max = sh.iter().cloned().fold(0.0, f64::max);
        println!(
            "| `{s}` | {} | {:.4} | {} | {} | {} | {} |",
            sh.iter()
                .map(|x| format!("{:.2}", x * 100.0))
                .collect::<Vec<_>>()
                .join(" / "),
            max * 3.0,
            pct(moved(&i3, three, &i4, four)),
            pct(moved(&i4, four, &i4m2, &four_minus_second)),
            pct(moved(&i4, four, &i4ml, four_minus_last)),
            pct(0.25),
        );
        if s == Strategy::Rendezvous {
            // Removing a shard moves only its own files: every mover was on the removed one.
            let own = i4.iter().filter(|&&i| i == 1).count() as f64 / count as f64;
            let strays = i4
                .iter()
                .zip(&i4m2)
                .filter(|(&a, &b)| a != 1 && all[a].id != four_minus_second[b].id)
                .count();
            println!(
                "|   | (n = 4 share of the 2nd: {}; movers not from it: {strays}) | | | | | |",
                pct(own)
            );
        }
    }
    println!();
    println!("| strategy | n | ns per `shard_index` call |");
    println!("|---|---|---|");
    for s in [Strategy::Rendezvous, Strategy::ModuloSha256] {
        for n in [3, 4, 6] {
            println!("| `{s}` | {n} | {:.0} |", ns_per_call(&paths, &all[..n], s));
        }
    }
}
