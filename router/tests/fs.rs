//! `Router` on real directories (temporary ones standing in for the EFS mounts): routing to
//! real paths in both layouts, atomic writes, fallback reads that move files home, and two or
//! more readers racing for the same misplaced file.

#[path = "support/tree.rs"]
mod tree;
use efs_router::{
    Error, Found, Layout, MountTargetList, Place, RouteError, Router, Strategy, Target,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::{fs, thread};
use tree::{files_under, put};

fn target(i: usize, root: &str) -> Target {
    Target::new(format!("fsmt-{i}"), format!("10.0.{i}.4"), root)
}

fn list(roots: &[&str], strategy: Strategy) -> MountTargetList {
    MountTargetList {
        open: None,
        scope: None,
        mount_targets: roots
            .iter()
            .enumerate()
            .map(|(i, r)| target(i, r))
            .collect(),
        strategy,
    }
}

const THREE: &[&str] = &["/", "/shards/use1-az4", "/shards/use1-az1"];

/// A single-mount router over a fresh directory, with every shard directory created (the
/// function publishes only shards whose directory exists).
fn single(roots: &[&str], strategy: Strategy) -> (tempfile::TempDir, Router) {
    let dir = tempfile::tempdir().unwrap();
    let l = list(roots, strategy);
    for r in roots {
        fs::create_dir_all(dir.path().join(r.trim_start_matches('/'))).unwrap();
    }
    let router = Router::new(l, Layout::single_mount(dir.path())).unwrap();
    (dir, router)
}

/// A path whose home is `home`, and the real path of the same logical path in shard `other`.
fn misplaced(router: &Router, home: usize, other: usize, tag: &str) -> (String, PathBuf, PathBuf) {
    for i in 0.. {
        let p = format!("data/analysis/device-{tag}{i}-1700000000.json");
        let r = router.resolve(&p).unwrap();
        if r.index == home {
            let elsewhere = router
                .layout()
                .real_path(router.shards(), other, &r.logical);
            return (p, r.real, elsewhere);
        }
    }
    unreachable!()
}

#[test]
fn real_paths_in_the_single_mount_layout() {
    let (dir, router) = single(THREE, Strategy::Rendezvous);
    let mut seen = [false; 3];
    for i in 0..200 {
        let r = router
            .resolve(&format!("/data/analysis/device-{i}-1.json"))
            .unwrap();
        let root = router.list().mount_targets[r.index]
            .root
            .trim_start_matches('/');
        let expect = dir
            .path()
            .join(root)
            .join(format!("data/analysis/device-{i}-1.json"));
        assert_eq!(r.real, expect);
        seen[r.index] = true;
    }
    assert_eq!(seen, [true; 3]);
}

#[test]
fn bad_paths_are_refused_before_touching_the_file_system() {
    let (dir, router) = single(THREE, Strategy::Rendezvous);
    for (p, kind) in [
        ("../etc/passwd", "escapes-root"),
        ("data/../../x", "escapes-root"),
        ("data//x", "empty-component"),
        ("data/x/", "empty-component"),
        ("data/x\0", "nul"),
        ("", "empty"),
    ] {
        match router.write(p, b"x") {
            Err(Error::Route(e)) => assert_eq!(e.kind(), kind, "{p:?}"),
            other => panic!("{p:?}: {other:?}"),
        }
    }
    // A leading slash stays inside the root.
    let real = router.write("/etc/passwd", b"x").unwrap();
    assert!(real.starts_with(dir.path()), "{}", real.display());
    // Under `/`, `shards/<az-id>/…` is another shard's directory.
    assert!(matches!(
        router.write("shards/use1-az4/data/x", b"x"),
        Err(Error::InsideAnotherShard { .. })
    ));
    assert!(matches!(
        router.read_with_fallback("shards/use1-az1"),
        Err(Error::InsideAnotherShard { .. })
    ));
    router.write("shards/other/x", b"x").unwrap();
    router.write("shardsX/x", b"x").unwrap();
    assert_eq!(files_under(dir.path()).len(), 3);
}

#[test]
fn write_then_read_at_home() {
    let (dir, router) = single(THREE, Strategy::Rendezvous);
    let real = router.write("data/analysis/a.json", b"{\"v\":1}").unwrap();
    assert_eq!(fs::read(&real).unwrap(), b"{\"v\":1}");
    assert!(router.exists("data/analysis/a.json").unwrap());
    assert!(!router.exists("data/analysis/b.json").unwrap());
    let read = router.read_with_fallback("/data/analysis/a.json").unwrap();
    assert_eq!(
        (read.data.as_slice(), read.place),
        (&b"{\"v\":1}"[..], Place::Home)
    );
    router.write("data/analysis/a.json", b"{\"v\":2}").unwrap();
    assert_eq!(
        router
            .read_with_fallback("data/analysis/a.json")
            .unwrap()
            .data,
        b"{\"v\":2}"
    );
    // No temporary file is left behind.
    assert_eq!(files_under(dir.path()).len(), 1);
    assert!(matches!(
        router.read_with_fallback("data/analysis/b.json"),
        Err(Error::NotFound { .. })
    ));
}

#[test]
fn fallback_read_moves_a_misplaced_file_home() {
    let (_dir, router) = single(THREE, Strategy::Rendezvous);
    let (p, home, elsewhere) = misplaced(&router, 1, 2, "m");
    put(&elsewhere, b"reading");
    assert!(router.exists(&p).unwrap());
    let loc = router.locate(&p).unwrap();
    assert_eq!(
        loc.found,
        Found::Elsewhere {
            index: 2,
            real: elsewhere.clone()
        }
    );
    let read = router.read_with_fallback(&p).unwrap();
    assert_eq!(read.data, b"reading");
    assert_eq!(read.place, Place::MovedHome { from: 2 });
    assert!(!elsewhere.exists());
    assert_eq!(fs::read(&home).unwrap(), b"reading");
    assert_eq!(router.read_with_fallback(&p).unwrap().place, Place::Home);
    assert_eq!(router.locate(&p).unwrap().found, Found::Home);
}

#[test]
fn fallback_never_replaces_a_file_at_home() {
    let (_dir, router) = single(THREE, Strategy::Rendezvous);
    let (p, home, elsewhere) = misplaced(&router, 0, 1, "n");
    put(&elsewhere, b"old");
    put(&home, b"new");
    let read = router.read_with_fallback(&p).unwrap();
    assert_eq!(
        (read.data.as_slice(), read.place),
        (&b"new"[..], Place::Home)
    );
    assert_eq!(fs::read(&elsewhere).unwrap(), b"old");
}

#[test]
fn a_move_keeps_the_inode_it_is_a_rename_not_a_copy() {
    use std::os::unix::fs::MetadataExt;
    let (_dir, router) = single(THREE, Strategy::ModuloSha256);
    let (p, home, elsewhere) = misplaced(&router, 2, 0, "i");
    put(&elsewhere, b"x");
    let ino = fs::metadata(&elsewhere).unwrap().ino();
    router.read_with_fallback(&p).unwrap();
    assert_eq!(fs::metadata(&home).unwrap().ino(), ino);
}

#[test]
fn racing_readers_all_get_the_bytes_and_one_copy_stays_at_home() {
    const READERS: usize = 8;
    let (dir, router) = single(THREE, Strategy::Rendezvous);
    let router = Arc::new(router);
    for round in 0..60 {
        let other = if round % 2 == 0 { 0 } else { 2 };
        let (p, home, elsewhere) = misplaced(&router, 1, other, &format!("r{round}-"));
        let data: Vec<u8> = format!("round {round} ").repeat(500).into_bytes();
        put(&elsewhere, &data);
        let barrier = Arc::new(Barrier::new(READERS));
        let handles: Vec<_> = (0..READERS)
            .map(|_| {
                let (router, barrier, p) = (router.clone(), barrier.clone(), p.clone());
                thread::spawn(move || {
                    barrier.wait();
                    router.read_with_fallback(&p)
                })
            })
            .collect();
        let mut movers = 0;
        for h in handles {
            let read = h.join().unwrap().expect("every reader gets the file");
            assert_eq!(read.data, data, "round {round}");
            match read.place {
                Place::MovedHome { from } => {
                    assert_eq!(from, other);
                    movers += 1
                }
                Place::Home | Place::MovedByAnother { .. } => {}
                Place::LeftElsewhere { reason, .. } => panic!("left elsewhere: {reason}"),
                Place::AtPlacement { index } => panic!("left at a placement, {index}"),
            }
        }
        assert_eq!(movers, 1, "round {round}: exactly one rename succeeds");
        assert!(!elsewhere.exists());
        assert_eq!(fs::read(&home).unwrap(), data);
    }
    // 60 files, each once, each at home, nothing else.
    let files = files_under(dir.path());
    assert_eq!(files.len(), 60);
    for f in files {
        assert!(
            f.starts_with("shards/use1-az4/data/analysis"),
            "{}",
            f.display()
        );
    }
}

#[test]
fn writes_are_atomic_readers_never_see_half_a_file() {
    const SIZE: usize = 1 << 20;
    let (dir, router) = single(THREE, Strategy::Rendezvous);
    let router = Arc::new(router);
    let p = "data/analysis/big.json";
    router.write(p, &vec![b'a'; SIZE]).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    // Readers that have read once: the writer goes on until both have, however a loaded
    // machine schedules them.
    let reading = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (router, done, reading) = (router.clone(), done.clone(), reading.clone());
            thread::spawn(move || {
                let mut reads = 0;
                while !done.load(Ordering::Relaxed) {
                    let data = router.read_with_fallback(p).unwrap().data;
                    assert_eq!(data.len(), SIZE, "a partial file was visible");
                    assert!(
                        data.iter().all(|&b| b == data[0]),
                        "a mixed file was visible"
                    );
                    reads += 1;
                    if reads == 1 {
                        reading.fetch_add(1, Ordering::Relaxed);
                    }
                }
                reads
            })
        })
        .collect();
    for i in 0u32.. {
        router.write(p, &vec![b'a' + (i % 26) as u8; SIZE]).unwrap();
        if i >= 100 && reading.load(Ordering::Relaxed) == 2 {
            break;
        }
    }
    done.store(true, Ordering::Relaxed);
    for r in readers {
        assert!(r.join().unwrap() > 0);
    }
    assert_eq!(
        files_under(dir.path()).len(),
        1,
        "temporary files left behind"
    );
}

#[test]
fn draining_shards_get_no_new_files_but_are_still_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut l = list(THREE, Strategy::Rendezvous);
    let router_all = Router::new(l.clone(), Layout::single_mount(dir.path())).unwrap();
    l.mount_targets[1].draining = true;
    let router = Router::new(l, Layout::single_mount(dir.path())).unwrap();
    for i in 0..300 {
        let p = format!("data/analysis/device-{i}-1.json");
        router.write(&p, b"x").unwrap();
        assert_ne!(router.resolve(&p).unwrap().index, 1);
    }
    assert!(!dir.path().join("shards/use1-az4/data").exists());
    // A file in the draining shard is found and moved to its new home.
    let (p, _, in_draining) = misplaced(&router_all, 1, 1, "d");
    put(&in_draining, b"old home");
    let read = router.read_with_fallback(&p).unwrap();
    assert_eq!(read.place, Place::MovedHome { from: 1 });
    assert!(!in_draining.exists());
    let mut all = list(THREE, Strategy::Rendezvous);
    for t in &mut all.mount_targets {
        t.draining = true;
    }
    let router = Router::new(all, Layout::single_mount(dir.path())).unwrap();
    assert!(matches!(
        router.write("x", b"x"),
        Err(Error::Route(RouteError::AllDraining { count: 3 }))
    ));
}

#[test]
fn per_target_layout_moves_through_the_mount_of_root() {
    // One directory tree stands for the file system; mount i is where `ip:root_i` appears.
    let fsroot = tempfile::tempdir().unwrap();
    let mounts: Vec<PathBuf> = THREE
        .iter()
        .map(|r| fsroot.path().join(r.trim_start_matches('/')))
        .collect();
    for m in &mounts {
        fs::create_dir_all(m).unwrap();
    }
    let router = Router::new(
        list(THREE, Strategy::Rendezvous),
        Layout::per_target(mounts.clone()),
    )
    .unwrap();
    let (p, home, elsewhere) = misplaced(&router, 2, 1, "p");
    assert!(home.starts_with(&mounts[2]));
    assert!(elsewhere.starts_with(&mounts[1]));
    put(&elsewhere, b"x");
    let read = router.read_with_fallback(&p).unwrap();
    assert_eq!(read.place, Place::MovedHome { from: 1 });
    assert_eq!(fs::read(&home).unwrap(), b"x");
    assert!(!elsewhere.exists());

    // Without a target rooted above both shards, no mount sees both: read, don't move.
    let roots = &THREE[1..];
    let router = Router::new(
        list(roots, Strategy::Rendezvous),
        Layout::per_target(mounts[1..].to_vec()),
    )
    .unwrap();
    let (p, home, elsewhere) = misplaced(&router, 0, 1, "q");
    put(&elsewhere, b"y");
    let read = router.read_with_fallback(&p).unwrap();
    assert_eq!(read.data, b"y");
    assert!(matches!(read.place, Place::LeftElsewhere { index: 1, .. }));
    assert!(elsewhere.exists() && !home.exists());

    assert!(matches!(
        Router::new(
            list(THREE, Strategy::Rendezvous),
            Layout::per_target(mounts[..2].to_vec())
        ),
        Err(Error::Layout(_))
    ));
}

/// Two mount targets of a version 2 list: fsmt-a serves `/`, `/shards/use1-az1.1` and
/// `/shards/use1-az1.2`; fsmt-b serves `/shards/use1-az2` and `/shards/use1-az2.1`, the last draining.
const V2: &str = r#"{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4","az_id":"use1-az1","root":"/","shards":3},{"id":"fsmt-b","ip":"10.0.2.7","az_id":"use1-az2","root":"/shards/use1-az2","shards":2,"draining_shards":1}],"strategy":"rendezvous","version":2}"#;

#[test]
fn a_version_2_list_routes_over_its_shards_in_both_layouts() {
    let l = MountTargetList::from_json(V2).unwrap();
    let roots: Vec<String> = l.shards().into_iter().map(|s| s.root).collect();
    let fsroot = tempfile::tempdir().unwrap();
    for r in &roots {
        fs::create_dir_all(fsroot.path().join(r.trim_start_matches('/'))).unwrap();
    }
    let router = Router::new(l.clone(), Layout::single_mount(fsroot.path())).unwrap();
    assert_eq!(router.shards().len(), 5);
    assert_eq!(router.shards()[4].root, "/shards/use1-az2.1");
    let mut homes = [0; 5];
    for i in 0..400 {
        let p = format!("data/analysis/device-{i}-1.json");
        let home = router.resolve(&p).unwrap();
        assert_eq!(
            home.real,
            fsroot
                .path()
                .join(roots[home.index].trim_start_matches('/'))
                .join(&p)
        );
        homes[home.index] += 1;
    }
    // Every shard but the draining one gets files.
    assert!(
        homes[..4].iter().all(|&h| h > 0) && homes[4] == 0,
        "{homes:?}"
    );
    // A file in the draining shard, or in a sibling shard of the same target, moves home.
    let (p, home, elsewhere) = misplaced(&router, 1, 4, "v");
    put(&elsewhere, b"x");
    assert_eq!(
        router.locate(&p).unwrap().found,
        Found::Elsewhere {
            index: 4,
            real: elsewhere.clone()
        }
    );
    assert_eq!(
        router.read_with_fallback(&p).unwrap().place,
        Place::MovedHome { from: 4 }
    );
    assert!(home.exists() && !elsewhere.exists());
    let (p, home, elsewhere) = misplaced(&router, 2, 1, "w");
    put(&elsewhere, b"y");
    assert_eq!(
        router.read_with_fallback(&p).unwrap().place,
        Place::MovedHome { from: 1 }
    );
    assert!(home.exists() && !elsewhere.exists());
    // The derived roots are other shards' directories under /: refused as logical paths there.
    assert!(matches!(
        router.write("shards/use1-az1.2/x", b"x"),
        Err(Error::InsideAnotherShard { .. })
    ));

    // Per target: one mount per shard (ip:root), in the list's shard order.
    let mounts: Vec<PathBuf> = roots
        .iter()
        .map(|r| fsroot.path().join(r.trim_start_matches('/')))
        .collect();
    let per = Router::new(l.clone(), Layout::per_target(mounts.clone())).unwrap();
    let (p, home, elsewhere) = misplaced(&per, 3, 2, "x");
    assert!(home.starts_with(&mounts[3]) && elsewhere.starts_with(&mounts[2]));
    put(&elsewhere, b"z");
    // Moved through the mount of shard 0, rooted at /, which sees both.
    assert_eq!(
        per.read_with_fallback(&p).unwrap().place,
        Place::MovedHome { from: 2 }
    );
    assert!(home.exists() && !elsewhere.exists());
    // One mount per mount target is not enough.
    match Router::new(l, Layout::per_target(mounts[..2].to_vec())) {
        Err(Error::Layout(e)) => assert_eq!(
            e.to_string(),
            "2 mounts for 5 shards: a per-target layout needs one mount per shard (its ip:root), in the list's shard order"
        ),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_original_list_is_one_directory_and_nothing_moves_onto_itself() {
    let dir = tempfile::tempdir().unwrap();
    let l = MountTargetList::from_json(
        r#"{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4"},{"id":"fsmt-2","ip":"10.0.2.7"},{"id":"fsmt-3","ip":"10.0.3.9"}]}"#,
    )
    .unwrap();
    assert_eq!(l.strategy, Strategy::ModuloSha256);
    let router = Router::new(l, Layout::single_mount(dir.path())).unwrap();
    let mut homes = [0; 3];
    for i in 0..90 {
        let p = format!("data/analysis/device-{i}-1.json");
        let real = router.write(&p, b"x").unwrap();
        assert_eq!(real, dir.path().join(&p));
        homes[router.resolve(&p).unwrap().index] += 1;
        let read = router.read_with_fallback(&p).unwrap();
        assert_eq!(read.place, Place::Home);
    }
    assert!(homes.iter().all(|&h| h > 0), "{homes:?}");
    assert_eq!(files_under(dir.path()).len(), 90);
}

/// `path` holds `data`, last modified `secs` seconds after an arbitrary epoch.
fn put_at(path: &Path, data: &[u8], secs: u64) {
    put(path, data);
    let t =
        std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_700_000_000 + secs);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

#[test]
fn the_newest_copy_is_read_and_moved_home_a_tie_going_to_the_earlier_shard() {
    let (_dir, router) = single(THREE, Strategy::Rendezvous);
    let targets = router.list().shards();
    let (p, home, in_0) = misplaced(&router, 1, 0, "newest");
    let logical = router.resolve(&p).unwrap().logical;
    let in_2 = router.layout().real_path(&targets, 2, &logical);
    // The later shard has the newer copy: it wins though shard 0 comes first.
    put_at(&in_0, b"older", 10);
    put_at(&in_2, b"newer", 20);
    let read = router.read_with_fallback(&p).unwrap();
    assert_eq!(
        (read.data.as_slice(), read.place),
        (&b"newer"[..], Place::MovedHome { from: 2 })
    );
    assert_eq!(fs::read(&home).unwrap(), b"newer");
    assert!(!in_2.exists());
    // The older copy is left where it is (home wins every later read; rebalancing drops it).
    assert_eq!(fs::read(&in_0).unwrap(), b"older");

    // Equal times: the shard earlier in the list.
    let (p, home, in_0) = misplaced(&router, 1, 0, "tie");
    let logical = router.resolve(&p).unwrap().logical;
    let in_2 = router.layout().real_path(&targets, 2, &logical);
    put_at(&in_0, b"first", 10);
    put_at(&in_2, b"second", 10);
    let read = router.read_with_fallback(&p).unwrap();
    assert_eq!(
        (read.data.as_slice(), read.place),
        (&b"first"[..], Place::MovedHome { from: 0 })
    );
    assert_eq!(fs::read(&home).unwrap(), b"first");
}

/// Runs `f` on another thread and fails if it takes more than 10 s (a read that blocks on a
/// FIFO never returns).
fn within_10s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = std::sync::mpsc::channel();
    thread::spawn(move || tx.send(f()).unwrap());
    rx.recv_timeout(std::time::Duration::from_secs(10))
        .expect("blocked: a FIFO was opened without O_NONBLOCK")
}

fn mkfifo(path: &Path) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        path,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();
}

#[test]
fn links_and_fifos_are_not_data_skipped_elsewhere_refused_at_home() {
    let (dir, router) = single(THREE, Strategy::Rendezvous);
    let router = Arc::new(router);
    let secret = dir.path().join("secret");
    fs::write(&secret, b"outside the shards").unwrap();

    // Elsewhere: a symbolic link and a FIFO are skipped; the regular copy in the third shard
    // is the one read, even though it is older.
    let (p, home, in_0) = misplaced(&router, 1, 0, "skip");
    let logical = router.resolve(&p).unwrap().logical;
    let in_2 = router
        .layout()
        .real_path(&router.list().shards(), 2, &logical);
    fs::create_dir_all(in_0.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&secret, &in_0).unwrap();
    put_at(&in_2, b"real", 1);
    let r = router.clone();
    let read = within_10s(move || r.read_with_fallback(&p).unwrap());
    assert_eq!(
        (read.data.as_slice(), read.place),
        (&b"real"[..], Place::MovedHome { from: 2 })
    );
    assert_eq!(fs::read(&home).unwrap(), b"real");
    assert!(fs::symlink_metadata(&in_0)
        .unwrap()
        .file_type()
        .is_symlink());

    // Only a FIFO elsewhere: as if absent.
    let (p, _, in_2) = misplaced(&router, 1, 2, "fifo");
    mkfifo(&in_2);
    let r = router.clone();
    let q = p.clone();
    assert!(matches!(
        within_10s(move || r.read_with_fallback(&q)),
        Err(Error::NotFound { .. })
    ));

    // At home: an error naming the path, for a link and for a FIFO; nothing is followed.
    for (tag, make) in [("link", true), ("fifo", false)] {
        let (p, home, _) = misplaced(&router, 1, 2, tag);
        if make {
            fs::create_dir_all(home.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink(&secret, &home).unwrap();
        } else {
            mkfifo(&home);
        }
        let r = router.clone();
        match within_10s(move || r.read_with_fallback(&p)) {
            Err(Error::NotRegular { path, what }) => {
                assert_eq!(path, home);
                assert_eq!(what, if make { "symbolic link" } else { "FIFO" });
            }
            other => panic!("{tag}: {other:?}"),
        }
    }
}

#[test]
fn a_misplaced_copy_older_than_home_is_dropped_by_a_move() {
    // What a drain or a rebalance does with a stale copy (a read never looks: home answers).
    let (_dir, router) = single(THREE, Strategy::Rendezvous);
    let (p, home, elsewhere) = misplaced(&router, 1, 2, "stale");
    put_at(&elsewhere, b"old", 10);
    put_at(&home, b"new", 20);
    assert_eq!(router.read_with_fallback(&p).unwrap().data, b"new");
    assert_eq!(
        efs_router::relocate(&elsewhere, &home).unwrap(),
        efs_router::Relocation::DroppedOlder
    );
    assert!(!elsewhere.exists());
    assert_eq!(fs::read(&home).unwrap(), b"new");
}

#[test]
fn router_names_are_never_routed_and_writes_leave_none() {
    let (dir, router) = single(THREE, Strategy::Rendezvous);
    for p in [
        "data/analysis/.efs-router-0123456789abcdef.tmp",
        "data/.efs-router-0123456789abcdef.moving/x.json",
    ] {
        match router.write(p, b"x") {
            Err(Error::Route(e)) => assert_eq!(e.kind(), "reserved-name", "{p}"),
            other => panic!("{p}: {other:?}"),
        }
    }
    let real = router.write("data/analysis/a.json", b"x").unwrap();
    assert_eq!(
        efs_router::dir::count_files(real.parent().unwrap()).unwrap(),
        Some(1)
    );
    assert_eq!(files_under(dir.path()).len(), 1);
}

#[test]
fn a_router_refuses_a_list_built_in_code_that_breaks_a_rule() {
    let mut l = list(THREE, Strategy::Rendezvous);
    l.mount_targets[1].az_id = Some("use1-az4".into());
    l.mount_targets[1].shards = 5000;
    match Router::new(l, Layout::single_mount("/mnt/efs")) {
        Err(Error::List(e)) => assert_eq!(e.kind(), "bad-shards"),
        other => panic!("expected a refused list, got {:?}", other.map(|_| ())),
    }
    let one_entry_twice = MountTargetList::from_json(
        r#"{"mount_targets":[{"id":"fsmt-a","ip":"1","az_id":"z","root":"/shards/z.1","shards":2}],"strategy":"rendezvous","version":2}"#,
    )
    .unwrap_err();
    assert_eq!(one_entry_twice.kind(), "duplicate-root");
    assert!(
        one_entry_twice
            .to_string()
            .contains("fsmt-a has root /shards/z.1 twice"),
        "{one_entry_twice}"
    );
}

/// On a version 3 list a miss finds a copy only where an open placement homes it, and a client
/// still on that placement's list looks for it there alone: the read leaves it there. On an
/// earlier form, whose readers look everywhere, the read moves it home.
#[test]
fn a_read_on_a_version_3_list_leaves_a_copy_where_an_open_placement_homes_it() {
    let dir = tempfile::tempdir().unwrap();
    for r in THREE {
        fs::create_dir_all(dir.path().join(r.trim_start_matches('/'))).unwrap();
    }
    let mut v3 = list(THREE, Strategy::Rendezvous);
    // The app's files, before the first list: all in `/`.
    v3.open = Some(efs_router::placement::Open::Placements(vec![
        efs_router::placement::Placement::of(Strategy::Rendezvous, &[target(0, "/")]),
    ]));
    let router = Router::new(v3, Layout::single_mount(dir.path())).unwrap();
    let (p, home, at_slash) = misplaced(&router, 1, 0, "v3-");
    put(&at_slash, b"before the router");
    let read = router.read_with_fallback(&p).unwrap();
    assert_eq!(read.data, b"before the router");
    assert_eq!(read.place, Place::AtPlacement { index: 0 });
    assert!(at_slash.exists() && !home.exists());
    // The same list as version 2: its readers look in every shard, so the read moves it.
    let v2 = Router::new(
        list(THREE, Strategy::Rendezvous),
        Layout::single_mount(dir.path()),
    )
    .unwrap();
    let read = v2.read_with_fallback(&p).unwrap();
    assert_eq!(read.place, Place::MovedHome { from: 0 });
    assert!(!at_slash.exists() && home.exists());
}

/// A placement hit beside a copy at home: `locate` names home, and a read takes the newer of
/// the two (home on a tie), on any file system. (Over NFS the read's first look at home can be
/// this client's stale "missing"; router/tests/nfs.rs plays that through two mounts.)
#[test]
fn a_placement_hit_beside_a_copy_at_home_answers_home_unless_the_placement_is_newer() {
    let dir = tempfile::tempdir().unwrap();
    for r in THREE {
        fs::create_dir_all(dir.path().join(r.trim_start_matches('/'))).unwrap();
    }
    let mut v3 = list(THREE, Strategy::Rendezvous);
    v3.open = Some(efs_router::Open::Placements(vec![
        efs_router::Placement::of(Strategy::Rendezvous, &[target(0, "/")]),
    ]));
    let router = Router::new(v3, Layout::single_mount(dir.path())).unwrap();
    let (p, home, at_slash) = misplaced(&router, 1, 0, "both-");
    fs::create_dir_all(home.parent().unwrap()).unwrap();
    put_at(&at_slash, b"older, at the placement", 10);
    put_at(&home, b"newer, at home", 20);
    assert_eq!(router.locate(&p).unwrap().found, Found::Home);
    // The placement's copy newer (a writer still on the earlier list): the read takes it.
    put_at(&at_slash, b"newest, at the placement", 30);
    assert_eq!(router.locate(&p).unwrap().found, Found::Home);
    assert!(router.exists(&p).unwrap());
}

/// Under open placements a miss asks home last, not first: files move only from a placement's
/// home to their home (the function's moves; a read leaves them), linked home before they go,
/// so a look at the placement and then at home never misses one in flight. A mover takes the
/// files home in a seeded order while readers ask for every one of them (`EFS_RACE_SEED`).
#[test]
fn a_miss_under_open_placements_finds_every_file_moving_home_beside_it() {
    let seed: u64 = std::env::var("EFS_RACE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2026);
    let dir = tempfile::tempdir().unwrap();
    for r in THREE {
        fs::create_dir_all(dir.path().join(r.trim_start_matches('/'))).unwrap();
    }
    let mut v3 = list(THREE, Strategy::Rendezvous);
    v3.open = Some(efs_router::Open::Placements(vec![
        efs_router::Placement::of(Strategy::Rendezvous, &[target(0, "/")]),
    ]));
    let router = Arc::new(Router::new(v3, Layout::single_mount(dir.path())).unwrap());
    let mut files: Vec<(String, PathBuf, PathBuf)> = (0..200)
        .map(|i| misplaced(&router, 1 + i % 2, 0, &format!("race{i}-")))
        .collect();
    for (_, home, at_slash) in &files {
        put(at_slash, b"x");
        fs::create_dir_all(home.parent().unwrap()).unwrap();
    }
    // Fisher-Yates by splitmix64: the seed replays the order.
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    for i in (1..files.len()).rev() {
        files.swap(i, (next() % (i as u64 + 1)) as usize);
    }
    let done = Arc::new(AtomicBool::new(false));
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (router, done) = (router.clone(), done.clone());
            let paths: Vec<String> = files.iter().map(|(p, ..)| p.clone()).collect();
            thread::spawn(move || {
                let (mut home, mut away) = (0u64, 0u64);
                while !done.load(Ordering::Acquire) {
                    for p in &paths {
                        match router.locate(p).unwrap().found {
                            Found::Home => home += 1,
                            Found::Elsewhere { .. } => away += 1,
                            Found::Missing => panic!("seed {seed}: {p} missing while it moved"),
                        }
                        assert!(router.exists(p).unwrap(), "seed {seed}: {p} missed");
                    }
                }
                (home, away)
            })
        })
        .collect();
    for (_, home, at_slash) in &files {
        efs_router::relocate(at_slash, home).unwrap();
        thread::yield_now();
    }
    done.store(true, Ordering::Release);
    let (mut home, mut away) = (0, 0);
    for r in readers {
        let (h, a) = r.join().unwrap();
        (home, away) = (home + h, away + a);
    }
    // Coverage: the readers met files on both sides of their moves.
    assert!(
        home > 0 && away > 0,
        "seed {seed}: home {home}, away {away}"
    );
}
