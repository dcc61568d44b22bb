//! `Router` on real directories (temporary ones standing in for the EFS mounts): routing to
//! real paths in both layouts, atomic writes, fallback reads that move files home, and two or
//! more readers racing for the same misplaced file.

use efs_router::{
    Error, Found, Layout, MountTargetList, Place, RouteError, Router, Strategy, Target,
};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::{fs, thread};

fn target(i: usize, root: &str) -> Target {
    Target {
        id: format!("fsmt-{i}"),
        ip: format!("10.0.{i}.4"),
        az: None,
        az_id: None,
        subnet_id: None,
        root: root.to_owned(),
        draining: false,
    }
}

fn list(roots: &[&str], strategy: Strategy) -> MountTargetList {
    MountTargetList {
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
            let elsewhere =
                router
                    .layout()
                    .real_path(&router.list().mount_targets, other, &r.logical);
            return (p, r.real, elsewhere);
        }
    }
    unreachable!()
}

fn put(path: &Path, data: &[u8]) {
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, data).unwrap();
}

/// Every regular file under `dir`, relative paths.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_dir() {
                stack.push(e.path());
            } else {
                out.push(e.path().strip_prefix(dir).unwrap().to_path_buf());
            }
        }
    }
    out.sort();
    out
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
    let readers: Vec<_> = (0..2)
        .map(|_| {
            let (router, done) = (router.clone(), done.clone());
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
                }
                reads
            })
        })
        .collect();
    for i in 0..100u8 {
        router.write(p, &vec![b'a' + i % 26; SIZE]).unwrap();
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
