//! One client operation over the paths a file lists, through the Rust router, timed: what
//! `scripts/nfs-tier/bench.py` runs inside the NFS tier (the VM sees the host read-only, so it
//! runs this from the target directory) while it counts the mount's NFS calls around it.
//!
//!     nfs_ops LIST BASE OP PATHS
//!
//! `LIST` holds the published list (JSON), `BASE` is the single mount's directory the list's
//! roots are under (`Layout::single_mount`), `PATHS` one logical path a line. `OP`: `exists`,
//! `read` (`read_with_fallback`), `write` (a few bytes), `create` (a few bytes; the outcome is
//! `created` or `already-there`), `delete`, or `list`: `list_dir` of each line as a logical
//! directory, the outcome `N names`. Building the router touches no file. Prints one line of
//! JSON: the operation, the paths, the seconds the operations took (not the start of the
//! process) and the outcomes by kind.

use efs_router::{Layout, MountTargetList, Router};
use std::collections::BTreeMap;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [list, base, op, paths] = args.as_slice() else {
        eprintln!("usage: nfs_ops LIST BASE exists|read|write|create|delete|list PATHS");
        std::process::exit(2);
    };
    let list = MountTargetList::from_json(&std::fs::read_to_string(list).expect("LIST"))
        .expect("a valid list");
    let router = Router::new(list, Layout::single_mount(base)).expect("a router");
    let text = std::fs::read_to_string(paths).expect("PATHS");
    let paths: Vec<&str> = text.lines().collect();
    let began = Instant::now();
    let outcomes: Vec<String> = match op.as_str() {
        "exists" => paths
            .iter()
            .map(|p| match router.exists(p) {
                Ok(true) => "found".to_owned(),
                Ok(false) => "missing".to_owned(),
                Err(e) => format!("error: {e}"),
            })
            .collect(),
        "read" => paths
            .iter()
            .map(|p| match router.read_with_fallback(p) {
                Ok(r) => r.place.as_str().to_owned(),
                Err(e) => format!("error: {e}"),
            })
            .collect(),
        "write" => paths
            .iter()
            .map(|p| match router.write(p, b"x") {
                Ok(_) => "written".to_owned(),
                Err(e) => format!("error: {e}"),
            })
            .collect(),
        "create" => paths
            .iter()
            .map(|p| match router.create(p, b"x") {
                Ok(c) => c.as_str().to_owned(),
                Err(e) => format!("error: {e}"),
            })
            .collect(),
        "list" => paths
            .iter()
            .map(|d| match router.list_dir(d) {
                Ok(entries) => format!("{} names", entries.len()),
                Err(e) => format!("error: {e}"),
            })
            .collect(),
        "delete" => paths
            .iter()
            .map(|p| match router.delete(p) {
                Ok(d) if d.any() => format!("deleted, {} rounds", d.rounds),
                Ok(_) => "absent".to_owned(),
                Err(e) => format!("error: {e}"),
            })
            .collect(),
        other => {
            eprintln!("nfs_ops: unknown operation {other}");
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
        "{{\"op\":{op:?},\"paths\":{},\"seconds\":{seconds},\"outcomes\":{{{}}}}}",
        paths.len(),
        kinds.join(",")
    );
}
