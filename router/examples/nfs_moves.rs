//! One mover over the pairs a file lists, timed: what `scripts/nfs-tier/bench.py` runs inside
//! the NFS tier (the VM sees the host read-only, so it runs this from the target directory)
//! while it counts the mount's NFS calls around it.
//!
//!     nfs_moves MODE PAIRS [CONCURRENCY]
//!
//! `PAIRS` holds one `src<TAB>dst` a line. `MODE`: `many`, the function's batch
//! (`relocate_many`, `CONCURRENCY` at a time, 16 by default); `one`, `relocate` one pair after
//! another; `plain`, `link(src, dst)` then `unlink(src)` one pair after another, the mover that
//! can unlink a writer's newer version. Prints one line of JSON: the mode, the concurrency, the
//! pairs, the seconds the moves took (not the start of the process) and the outcomes by kind.

use efs_router::relocate;
use efs_router::relocation::relocate_many;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(mode), Some(list)) = (args.first(), args.get(1)) else {
        eprintln!("usage: nfs_moves many|one|plain PAIRS [CONCURRENCY]");
        std::process::exit(2);
    };
    let concurrency: usize = args.get(2).map_or(16, |c| c.parse().expect("CONCURRENCY"));
    let pairs: Vec<(PathBuf, PathBuf)> = std::fs::read_to_string(list)
        .expect("PAIRS")
        .lines()
        .map(|l| {
            let (a, b) = l.split_once('\t').expect("src<TAB>dst");
            (PathBuf::from(a), PathBuf::from(b))
        })
        .collect();
    let began = Instant::now();
    let outcomes: Vec<String> = match mode.as_str() {
        "many" => relocate_many(&pairs, concurrency, None)
            .into_iter()
            .map(|o| match o {
                Some(Ok(r)) => r.as_str().to_owned(),
                Some(Err(e)) => format!("error: {e}"),
                None => "not tried".to_owned(),
            })
            .collect(),
        "one" => pairs
            .iter()
            .map(|(s, d)| match relocate(s, d) {
                Ok(r) => r.as_str().to_owned(),
                Err(e) => format!("error: {e}"),
            })
            .collect(),
        "plain" => pairs
            .iter()
            .map(
                |(s, d)| match std::fs::hard_link(s, d).and_then(|()| std::fs::remove_file(s)) {
                    Ok(()) => "moved".to_owned(),
                    Err(e) => format!("error: {e}"),
                },
            )
            .collect(),
        other => {
            eprintln!("nfs_moves: unknown mode {other}");
            std::process::exit(2);
        }
    };
    let seconds = began.elapsed().as_secs_f64();
    let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
    for o in outcomes {
        *by_kind.entry(o).or_default() += 1;
    }
    let kinds: Vec<String> = by_kind
        .iter()
        .map(|(k, n)| format!("{:?}:{n}", k))
        .collect();
    println!(
        "{{\"mode\":{mode:?},\"concurrency\":{concurrency},\"pairs\":{},\"seconds\":{seconds},\"outcomes\":{{{}}}}}",
        pairs.len(),
        kinds.join(",")
    );
}
