//! The cost of one report write (router/REFERENCE.md "Reports"): a reporting router over DIR (a
//! fresh temporary directory when none is given), its report rewritten REPEATS times through
//! the lease (a clock moved past it each time), each timed: open the directory beneath the
//! root, create, write, fsync, rename.
//!
//!     cargo run --release -p efs-router --example report_bench -- [DIR] [REPEATS]

use efs_router::reporter::{Clock, LEASE_SECS};
use efs_router::{Layout, Reporting, Router};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

const LIST: &str =
    r#"{"mount_targets":[{"id":"fsmt-0","ip":"10.0.0.4","root":"/"}],"strategy":"rendezvous"}"#;

fn main() {
    let mut args = std::env::args().skip(1);
    let temp = tempfile::tempdir_in(".").expect("a temporary directory here");
    let dir = args
        .next()
        .map_or_else(|| temp.path().to_path_buf(), Into::into);
    let repeats: usize = args
        .next()
        .map_or(200, |r| r.parse().expect("REPEATS is a number"));
    let now = Arc::new(AtomicU64::new(1_700_000_000));
    let read = Arc::clone(&now);
    let clock: Clock = Arc::new(move || read.load(Ordering::SeqCst));
    let options = Reporting {
        clock: Some(clock),
        ..Reporting::default()
    };
    let router = Router::reporting(LIST, Layout::single_mount(&dir), options).expect("a router");
    let mut took: Vec<f64> = (0..repeats)
        .map(|_| {
            now.fetch_add(LEASE_SECS, Ordering::SeqCst);
            let started = Instant::now();
            router.lease().expect("a report written");
            started.elapsed().as_secs_f64() * 1e6
        })
        .collect();
    took.sort_by(f64::total_cmp);
    let mean = took.iter().sum::<f64>() / took.len() as f64;
    let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize];
    let bytes = std::fs::metadata(router.report_file().unwrap())
        .unwrap()
        .len();
    println!(
        "{repeats} report writes of {bytes} bytes: mean {mean:.0} us, p50 {:.0} us, p99 {:.0} us, max {:.0} us",
        at(0.5),
        at(0.99),
        at(1.0)
    );
}
