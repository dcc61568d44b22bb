//! A mover killed at random moments among its moves, on one local directory, while a writer
//! rewrites the files it moves (tests/support/crash.rs). The NFS tier runs the same with each
//! actor on its own mount (tests/nfs.rs). `CRASH_SEED` reproduces a failure's draws.

mod support {
    pub mod crash;
}
use support::crash;

/// The mover's process: does nothing unless the parent test started it.
#[test]
#[ignore = "the mover child of the crash tests, started by them"]
fn crash_child() {
    crash::child();
}

#[test]
fn a_mover_killed_among_its_moves_loses_nothing_and_hides_nothing() {
    let seed = crash::seed();
    let d = tempfile::tempdir().unwrap();
    let (src, dst) = (d.path().join("shard-a"), d.path().join("shard-b"));
    std::fs::create_dir(&src).unwrap();
    std::fs::create_dir(&dst).unwrap();
    let exe = std::env::current_exe().unwrap();
    let seen = crash::run(
        seed,
        (20, 300, std::time::Duration::from_millis(1)),
        (&src, &dst),
        &src,
        (&src, &dst),
        &exe,
        crash::CHILD_ARGS,
    );
    println!("seed {seed}: {seen:?}");
    // The kills landed among the moves, most inside a batch (sources taken, not settled).
    assert!(seen.kills >= 12, "seed {seed}: {seen:?}");
    assert!(seen.among_moves >= 3, "seed {seed}: {seen:?}");
    assert!(seen.in_batch >= 8, "seed {seed}: {seen:?}");
    assert!(seen.recovered >= 1, "seed {seed}: {seen:?}");
    assert!(seen.writes > 0, "seed {seed}: {seen:?}");
}
