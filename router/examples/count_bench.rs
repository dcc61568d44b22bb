//! Counts the files of a directory the way the function does, and prints the count and the
//! time it took. Used by `scripts/bench-count.sh` beside `ls -f | wc -l`, strace and time.
//!
//!     cargo run --release -p efs-router --example count_bench -- DIR [REPEATS]

use std::time::Instant;

fn main() {
    let mut args = std::env::args_os().skip(1);
    let dir = args.next().expect("usage: count_bench DIR [REPEATS]");
    let repeats: usize = args
        .next()
        .map(|r| r.to_string_lossy().parse().expect("REPEATS is a number"))
        .unwrap_or(1);
    for _ in 0..repeats {
        let started = Instant::now();
        let files = efs_router::dir::count_files(dir.as_ref())
            .expect("readable directory")
            .expect("existing directory");
        println!("{files} files in {:.3} s", started.elapsed().as_secs_f64());
    }
}
