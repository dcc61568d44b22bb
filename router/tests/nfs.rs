//! The router's promises on a real NFSv4.1 client, each actor through its own mount.
//!
//! These run on the NFS tier (`make nfs-test`, part of `make test`): a Linux NFS server and
//! several `nosharecache` mounts of one export with EFS's options, inside a small VM
//! (scripts/nfs-tier/). Each mount has its own name and attribute caches, as each ECS task and
//! the function have on EFS. The tier gives the mounts in `EFS_NFS_MOUNTS` (comma-separated)
//! and the server's own directory in `EFS_NFS_BACKING`. On the host they are ignored, never
//! passed: `cargo test -- --ignored` outside the tier fails, naming the variable.
//!
//! Each probe first shows the hazard with plain calls (the cache really is stale, so the test
//! could fail), then shows the router's answer is the server's.

use efs_router::{relocate, Found, Layout, MountTargetList, Place, Relocation, Router, Target};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;
use std::{fs, thread};

mod support {
    pub mod crash;
    pub mod link_hook;
}
use support::crash::{self, write_atomically};
use support::link_hook::{links, watch, ENOENT};

const ON_THE_TIER: &str = "runs on the NFS tier (make nfs-test)";

/// The tier's mounts (at least three: the function, a task, another task).
fn mounts() -> Vec<PathBuf> {
    let v = std::env::var("EFS_NFS_MOUNTS")
        .expect("EFS_NFS_MOUNTS: not set; these tests run on the NFS tier (make nfs-test)");
    let m: Vec<PathBuf> = v.split(',').map(PathBuf::from).collect();
    assert!(m.len() >= 3, "EFS_NFS_MOUNTS: needs 3 mounts, has {v:?}");
    m
}

/// The server's own view of the export: the truth, through no client cache.
fn backing() -> PathBuf {
    PathBuf::from(
        std::env::var("EFS_NFS_BACKING")
            .expect("EFS_NFS_BACKING: not set; these tests run on the NFS tier"),
    )
}

const ROOTS: &[&str] = &["/", "/shards/use1-az4", "/shards/use1-az1"];

/// A router over `base/<test>` (each test its own tree) through one mount.
fn router(mount: &Path, test: &str) -> Router {
    let list = MountTargetList {
        open: None,
        scope: None,
        mount_targets: ROOTS
            .iter()
            .enumerate()
            .map(|(i, r)| Target::new(format!("fsmt-{i}"), format!("10.0.{i}.4"), *r))
            .collect(),
        strategy: efs_router::Strategy::Rendezvous,
    };
    Router::new(list, Layout::single_mount(mount.join(test))).unwrap()
}

/// Makes each shard's watched directory on the server, and has every mount look it up, as a
/// running task has.
fn setup(test: &str) -> Vec<PathBuf> {
    let b = backing().join(test);
    let _ = fs::remove_dir_all(&b);
    for r in ROOTS {
        fs::create_dir_all(b.join(r.trim_start_matches('/')).join("data/analysis")).unwrap();
    }
    let m = mounts();
    for mount in &m {
        for r in ROOTS {
            let d = mount
                .join(test)
                .join(r.trim_start_matches('/'))
                .join("data/analysis");
            assert!(fs::metadata(&d).unwrap().is_dir());
        }
    }
    m
}

/// A logical path whose home is shard `home`, with its real paths: home, and in `other`.
fn misplaced(r: &Router, home: usize, other: usize, tag: &str) -> (String, PathBuf, PathBuf) {
    for i in 0.. {
        let p = format!("data/analysis/device-{tag}{i}-1700000000.json");
        let res = r.resolve(&p).unwrap();
        if res.index == home {
            let there = r.layout().real_path(r.shards(), other, &res.logical);
            return (p, res.real, there);
        }
    }
    unreachable!()
}

/// The path of `real` (under mount `m`) as another mount `n` names it.
fn through(real: &Path, m: &Path, n: &Path) -> PathBuf {
    n.join(real.strip_prefix(m).unwrap())
}

/// The server's own view (no client cache) of `real`, a path under `mount`'s tree of `test`.
fn on_server(test: &str, mount: &Path, real: &Path) -> PathBuf {
    backing()
        .join(test)
        .join(real.strip_prefix(mount.join(test)).unwrap())
}

/// A race test's seed (`NFS_RACE_SEED`, else `default`) and a xorshift generator from it: the
/// seed a failure prints replays its draws.
fn race_draws(default: u64) -> (u64, impl FnMut() -> u64) {
    let seed = std::env::var("NFS_RACE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    let mut rng = seed.max(1);
    let next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    (seed, next)
}

fn missing(path: &Path) -> bool {
    matches!(fs::symlink_metadata(path), Err(e) if e.kind() == std::io::ErrorKind::NotFound)
}

#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn probe_a_miss_then_another_clients_write_is_found() {
    let t = "probe_miss";
    let m = setup(t);
    let task1 = router(&m[1], t);
    let (path, home1, _) = misplaced(&task1, 1, 0, "m");
    let home2 = through(&home1, &m[1], &m[2]);

    // The hazard: task 1 misses, task 2 writes, task 1's cache still says missing.
    assert!(missing(&home1));
    write_atomically(&home2, b"v1");
    assert!(
        missing(&home1),
        "{ON_THE_TIER}: the tier must show a stale negative lookup, or this test proves nothing"
    );
    // The router confirms a miss with the server.
    assert!(task1.exists(&path).unwrap());
    let read = task1.read_with_fallback(&path).unwrap();
    assert_eq!(
        (read.data.as_slice(), read.place),
        (&b"v1"[..], Place::Home)
    );
    assert_eq!(task1.locate(&path).unwrap().found, Found::Home);
}

/// Sets `path`'s modification time to `secs` after 2023-11-14 (the server keeps it).
fn set_mtime(path: &Path, secs: u64) {
    let t = std::time::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs);
    fs::File::options()
        .write(true)
        .open(path)
        .unwrap()
        .set_modified(t)
        .unwrap();
}

/// Issue 39, item 4: under open placements a miss asks home last, and a client's first look
/// at home may be its cache's stale "missing". A placement hit then confirms home with the
/// server: a version another client wrote at home since wins, unless the placement's copy is
/// newer still; `locate` names home whenever home has the file.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_placement_hit_beside_a_newer_home_copy_reads_home() {
    let t = "placement_hit";
    let m = setup(t);
    let mut list = router(&m[1], t).list().clone();
    list.open = Some(efs_router::Open::Placements(vec![
        efs_router::Placement::of(
            efs_router::Strategy::Rendezvous,
            &[Target::new("fsmt-0", "10.0.0.4", "/")],
        ),
    ]));
    let task1 = Router::new(list, Layout::single_mount(m[1].join(t))).unwrap();
    for (round, placement_newer) in [(0, false), (1, true)] {
        let (path, home1, slash1) = misplaced(&task1, 1, 0, &format!("p{round}-"));
        let (home2, slash2) = (
            through(&home1, &m[1], &m[2]),
            through(&slash1, &m[1], &m[2]),
        );
        // Task 1 looks at home and caches the miss; task 2 writes both copies.
        assert!(missing(&home1));
        write_atomically(&slash2, b"at the placement");
        write_atomically(&home2, b"at home");
        let (older, newer) = if placement_newer {
            (&home2, &slash2)
        } else {
            (&slash2, &home2)
        };
        set_mtime(older, 10);
        set_mtime(newer, 20);
        assert!(
            missing(&home1),
            "{ON_THE_TIER}: the tier must show a stale negative lookup, or this test proves nothing"
        );
        let read = task1.read_with_fallback(&path).unwrap();
        let want: (&[u8], Place) = if placement_newer {
            (b"at the placement", Place::AtPlacement { index: 0 })
        } else {
            (b"at home", Place::Home)
        };
        assert_eq!((read.data.as_slice(), read.place), want, "round {round}");
        assert_eq!(
            task1.locate(&path).unwrap().found,
            Found::Home,
            "round {round}"
        );
    }
}

#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn probe_the_old_name_after_a_move_is_not_named() {
    let t = "probe_moved";
    let m = setup(t);
    let task = router(&m[1], t);
    let (path, home_t, away_t) = misplaced(&task, 1, 2, "o");
    fs::write(on_server(t, &m[1], &away_t), b"x").unwrap();
    // The task has seen the file away from home, and not at home.
    assert!(fs::metadata(&away_t).is_ok());
    assert!(missing(&home_t));
    // The function's mount moves it home.
    let (away_f, home_f) = (
        through(&away_t, &m[1], &m[0]),
        through(&home_t, &m[1], &m[0]),
    );
    assert_eq!(relocate(&away_f, &home_f).unwrap(), Relocation::Moved);
    // The hazard: the task's cache still has no file at home. (The old name itself was not
    // seen stale by `stat` on this tier's kernel: its attributes are fetched again; the open
    // of a name cached before the move is another matter, see docs/routing.md.)
    assert!(
        missing(&home_t),
        "{ON_THE_TIER}: the tier must show home missing in the task's cache after the move"
    );
    // The router names only the file's real place.
    assert_eq!(task.locate(&path).unwrap().found, Found::Home);
    assert!(task.exists(&path).unwrap());
}

/// What the previous `relocate` did, with plain calls, around a writer: look at the source and
/// link it home; then (`between`) a writer renames a newer version over the source; then
/// rename the source to a private name, look at that, and unlink it when it is the file
/// looked at.
fn old_protocol_move(src: &Path, dst: &Path, between: impl FnOnce()) {
    let looked = fs::symlink_metadata(src).unwrap().ino();
    fs::hard_link(src, dst).unwrap();
    between();
    let p = src.with_file_name(".efs-router-0000000000000000.moving");
    fs::rename(src, &p).unwrap();
    if fs::symlink_metadata(&p).unwrap().ino() == looked {
        fs::remove_file(&p).unwrap();
    }
}

#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn probe_a_version_renamed_over_the_source_during_a_move() {
    let t = "probe_race";
    let m = setup(t);
    let func = router(&m[0], t);
    // Twice: once the old protocol (the tier must lose the newest version, or it shows
    // nothing), once `relocate` after the same writer, which must keep it.
    for (round, old) in [(0, true), (1, false)] {
        let (_, home_f, away_f) = misplaced(&func, 1, 2, &format!("r{round}"));
        let away_t = through(&away_f, &m[0], &m[1]);
        fs::write(&away_f, b"old").unwrap();
        // The mover has looked at the source: its cache holds the old version.
        assert!(fs::symlink_metadata(&away_f).is_ok());
        assert!(missing(&home_f));
        // A writer on the previous list renames a newer version over the source.
        let writer = || write_atomically(&away_t, b"newest");
        if old {
            old_protocol_move(&away_f, &home_f, writer);
        } else {
            writer();
            relocate(&away_f, &home_f).unwrap();
        }
        let server = |real: &Path| fs::read(on_server(t, &m[0], real)).ok();
        let (home, away) = (server(&home_f), server(&away_f));
        let kept = home.as_deref() == Some(b"newest") || away.as_deref() == Some(b"newest");
        if old {
            assert!(
                !kept,
                "{ON_THE_TIER}: the old protocol must lose the newest version here, or the \
                 tier does not show the hazard (home {home:?}, away {away:?})"
            );
        } else {
            assert_eq!(home.as_deref(), Some(&b"newest"[..]));
            assert_eq!(away, None);
        }
    }
}

#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn racing_readers_of_a_misplaced_file_all_get_its_bytes() {
    let t = "racing_readers";
    let m = setup(t);
    let readers: Vec<Router> = m.iter().map(|mount| router(mount, t)).collect();
    let mut places = std::collections::BTreeMap::<&str, usize>::new();
    for round in 0..8 {
        let (path, home0, away0) = misplaced(&readers[0], 1, 2, &format!("q{round}"));
        fs::write(&away0, format!("bytes {round}")).unwrap();
        // Every reader has missed at home first, so each holds a cached "missing" there.
        for mount in &m {
            assert!(missing(&through(&home0, &m[0], mount)));
        }
        let barrier = Arc::new(Barrier::new(readers.len()));
        let results: Vec<_> = thread::scope(|s| {
            let handles: Vec<_> = readers
                .iter()
                .map(|r| {
                    let (barrier, path) = (barrier.clone(), path.clone());
                    s.spawn(move || {
                        barrier.wait();
                        r.read_with_fallback(&path)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let moved = results
            .iter()
            .filter(|r| matches!(r, Ok(read) if matches!(read.place, Place::MovedHome { .. })))
            .count();
        for r in &results {
            let read = r.as_ref().unwrap();
            assert_eq!(read.data, format!("bytes {round}").into_bytes());
            *places.entry(read.place.as_str()).or_default() += 1;
        }
        assert!(moved <= 1, "{results:?}");
    }
    println!("racing readers: reads by place {places:?}");
    // Each round one reader moved the file home; others read it at home, or found it where it
    // was and saw another move it first (the race this test is for): both must have happened.
    for place in ["moved-home", "moved-by-another"] {
        assert!(places.contains_key(place), "no read {place}: {places:?}");
    }
}

#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_write_into_a_directory_another_client_made_succeeds() {
    let t = "write_new_dir";
    let m = setup(t);
    let (a, b) = (router(&m[1], t), router(&m[2], t));
    let (path, home_a, _) = misplaced(&a, 0, 1, "w");
    let nested = path.replace("data/analysis/", "data/analysis/2026/12/");
    let home_a = home_a.parent().unwrap().join("2026/12");
    // Client a misses the directory; client b makes it (by writing a file there).
    assert!(missing(&home_a));
    b.write(&nested, b"from b").unwrap();
    assert!(
        missing(&home_a),
        "{ON_THE_TIER}: the tier must show a stale missing directory"
    );
    a.write(&nested, b"from a").unwrap();
    assert_eq!(b.read_with_fallback(&nested).unwrap().data, b"from a");
}

/// The function makes a move's destination directory with `dir::open_beneath(.., true)`
/// (beneath the mount, no link followed): a directory another client made after this mount
/// missed it is opened, not refused, and it is that very directory.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_directory_another_client_made_is_opened_beneath_the_mount() {
    let t = "open_beneath_new_dir";
    let m = setup(t);
    let (function, task) = (m[0].join(t), m[1].join(t));
    let rel = "data/analysis/2026/12";
    assert!(missing(&function.join(rel)));
    fs::create_dir_all(task.join(rel)).unwrap();
    assert!(
        missing(&function.join(rel)),
        "{ON_THE_TIER}: the tier must show a stale missing directory"
    );
    let fd = efs_router::dir::open_beneath(&function, rel, true).unwrap();
    let opened = rustix::fs::fstat(&fd).unwrap();
    let made = fs::metadata(backing().join(t).join(rel)).unwrap();
    assert_eq!(opened.st_ino, made.ino());
}

/// Seeded: a writer on one mount rewrites a misplaced file while the function's mount
/// relocates it, at random moments; the newest version is never lost.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn the_newest_version_survives_moves_racing_writers() {
    let t = "race_random";
    let m = setup(t);
    let func = router(&m[0], t);
    let (seed, mut next) = race_draws(20261201);
    let (mut at_home, mut at_source) = (0, 0);
    let (mut relinked, mut enoent_gone, mut links_seen) = (0, 0, 0);
    let mut answers = std::collections::BTreeMap::<String, usize>::new();
    for round in 0..100 {
        let (_, home_f, away_f) = misplaced(&func, 1, 2, &format!("z{round}"));
        let away_t = through(&away_f, &m[0], &m[1]);
        fs::write(&away_f, b"old").unwrap();
        // The mover has looked at the source, as a walk or a read does before it moves.
        assert!(fs::symlink_metadata(&away_f).is_ok());
        let delay = Duration::from_micros(next() % 4000);
        let newest = format!("newest {round}");
        watch(&away_f);
        let moved = thread::scope(|s| {
            s.spawn(|| {
                thread::sleep(delay);
                write_atomically(&away_t, newest.as_bytes());
            });
            s.spawn(|| relocate(&away_f, &home_f).unwrap())
                .join()
                .unwrap()
        });
        let linked = links();
        links_seen += linked.len();
        *answers.entry(format!("{moved:?}")).or_default() += 1;
        // The mover's link found no name: the file it looked at was replaced. A fresh look
        // then found the writer's file under the name (linked at the next try), or nothing.
        // Counted, not asked for: on this tier the kernel looks the name up again when the
        // server calls the file handle stale, so the link finds the new file (0 of 100 here);
        // router/tests/link_race.rs makes that moment on purpose.
        if linked.first() == Some(&ENOENT) {
            if linked.contains(&0) {
                relinked += 1;
            } else {
                enoent_gone += 1;
            }
        }
        let server = |real: &Path| fs::read(on_server(t, &m[0], real)).ok();
        let (home, away) = (server(&home_f), server(&away_f));
        let newest = Some(newest.into_bytes());
        if home == newest {
            at_home += 1;
        } else if away == newest {
            // The writer came after the move: its version is a new file at the source.
            at_source += 1;
        } else {
            panic!("seed {seed} round {round}: the newest version is lost (home {home:?}, away {away:?})");
        }
    }
    println!(
        "seed {seed}: the newest version ended at home {at_home} times, at the source {at_source}; \
         the mover answered {answers:?}; of its {links_seen} links of the source, one found no name \
         and it moved the writer's file {relinked} times, found nothing there {enoent_gone} times"
    );
    assert!(links_seen >= 100, "the link hook saw {links_seen} links");
    // Both orders happened, so the writer landed before, during and after moves.
    assert!(
        at_home > 0 && at_source > 0,
        "seed {seed}: home {at_home}, source {at_source}"
    );
}

/// Seeded: a client on one mount deletes a path while the function's mount moves it home (a
/// plain move, or a replace of an older copy at home), at random moments: every other trial
/// the deleter runs a version 3 list whose open placement (the shard `/`) is where the move
/// comes from, and looks only there and at home. As on the host (router/tests/delete.rs), the
/// path never comes back, but through the one window docs/routing.md documents: a replace
/// whose rename lands at home after the delete's last look there. Prints how often each order
/// of the two happened, and asks for both, for each deleter.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_delete_racing_a_move_through_another_mount_never_brings_the_path_back() {
    use efs_router::Relocation;
    let t = "delete_move_race";
    let m = setup(t);
    let (deleter, func) = (router(&m[1], t), router(&m[0], t));
    // Every other trial's deleter runs a version 3 list whose one open placement is the shard
    // `/`: it looks there and at home only, and the move goes from there home.
    let mut v3 = deleter.list().clone();
    v3.open = Some(efs_router::Open::Placements(vec![
        efs_router::Placement::of(efs_router::Strategy::Rendezvous, &v3.mount_targets[..1]),
    ]));
    let on_placements = Router::new(v3, Layout::single_mount(m[1].join(t))).unwrap();
    let (seed, mut draw) = race_draws(20261201);
    let mut next = move |n: u64| draw() % n;
    let server = |real: &Path| on_server(t, &m[0], real);
    // Placed home, then deleted there; deleted at the source first, the mover finding it gone;
    // came back through the replace window; a trial where the delete went round more than once.
    // Each by deleter: the earlier form's, the placements'.
    let (mut placed_then_deleted, mut source_gone, mut window, mut caught_moving) =
        ([0; 2], [0; 2], [0; 2], [0; 2]);
    // How long a move and a delete take here (it varies with the machine): the delete starts
    // at a moment drawn from the move's start to past its end, so that both orders happen.
    let (warm, home_w, away_w) = misplaced(&func, 1, 2, "warm");
    fs::write(server(&away_w), b"warm").unwrap();
    assert!(fs::symlink_metadata(&away_w).is_ok());
    let started = std::time::Instant::now();
    relocate(&away_w, &home_w).unwrap();
    let move_took = started.elapsed();
    let started = std::time::Instant::now();
    deleter.delete(&warm).unwrap();
    let delete_took = started.elapsed();
    let span = u64::try_from((move_took + delete_took).as_micros()).unwrap() + 1;
    for trial in 0..120u64 {
        let placements = usize::from(trial % 2 == 1);
        let who = [&deleter, &on_placements][placements];
        let replace = next(2) == 1;
        let (to, from) = if placements == 1 {
            (1 + next(2) as usize, 0)
        } else {
            let to = next(3) as usize;
            (to, (to + 1 + next(2) as usize) % 3)
        };
        let (path, _, _) = misplaced(&func, to, from, &format!("x{trial}-"));
        let real = |r: &Router, i: usize| {
            let res = r.resolve(&path).unwrap();
            r.layout().real_path(r.shards(), i, &res.logical)
        };
        let (src, dst) = (real(&func, from), real(&func, to));
        if replace {
            fs::write(server(&dst), b"older, at home").unwrap();
            let old = std::time::SystemTime::now() - Duration::from_secs(60);
            fs::File::options()
                .write(true)
                .open(server(&dst))
                .unwrap()
                .set_modified(old)
                .unwrap();
        }
        fs::write(server(&src), format!("trial {trial}")).unwrap();
        let src_ino = fs::metadata(server(&src)).unwrap().ino();
        // Both have looked at the path, as a walk and a client do before they act.
        assert!(fs::symlink_metadata(&src).is_ok());
        assert!(who.exists(&path).unwrap());
        let (wait_delete, wait_move) = (next(span), 0);
        let barrier = Barrier::new(2);
        let (deleted, moved) = thread::scope(|s| {
            let del = s.spawn(|| {
                barrier.wait();
                thread::sleep(Duration::from_micros(wait_delete));
                who.delete(&path).unwrap()
            });
            let mov = s.spawn(|| {
                barrier.wait();
                thread::sleep(Duration::from_micros(wait_move));
                relocate(&src, &dst).unwrap_or_else(|e| panic!("seed {seed} trial {trial}: {e}"))
            });
            (del.join().unwrap(), mov.join().unwrap())
        });
        let back: Vec<usize> = (0..3)
            .filter(|&i| fs::symlink_metadata(server(&real(&func, i))).is_ok())
            .collect();
        if !back.is_empty() {
            let at_home = fs::metadata(server(&dst)).map(|md| md.ino()).ok();
            let replace_landed_late = replace
                && back == [to]
                && matches!(moved, Relocation::ReplacedOlder | Relocation::SourceGone)
                && at_home == Some(src_ino);
            assert!(
                replace_landed_late,
                "seed {seed} trial {trial} (replace {replace}, placements {placements}, {from} -> {to}): {path} came back in shards {back:?}; delete {deleted:?}, mover {moved:?}"
            );
            window[placements] += 1;
            fs::remove_file(server(&dst)).unwrap();
        }
        if deleted.removed.contains(&to)
            && matches!(moved, Relocation::Moved | Relocation::ReplacedOlder)
        {
            placed_then_deleted[placements] += 1;
        }
        if moved == Relocation::SourceGone && deleted.removed.contains(&from) {
            source_gone[placements] += 1;
        }
        if deleted.rounds > 3 || deleted.unlinked > deleted.removed.len() {
            caught_moving[placements] += 1;
        }
        assert_eq!(
            private_names_under(&backing().join(t)),
            Vec::<PathBuf>::new(),
            "seed {seed} trial {trial}"
        );
    }
    println!(
        "seed {seed}: delete racing a move across two mounts (a move {move_took:?}, a delete \
         {delete_took:?}), every shard / placements: placed then deleted {placed_then_deleted:?}, \
         source gone {source_gone:?}, back through the replace window {window:?}, delete caught \
         a move {caught_moving:?}"
    );
    for k in 0..2 {
        assert!(
            placed_then_deleted[k] > 0,
            "seed {seed}: the move never came first ({k})"
        );
        assert!(
            source_gone[k] > 0,
            "seed {seed}: the delete never came first ({k})"
        );
    }
}

/// The mover's process of the crash test: does nothing unless that test started it.
#[test]
#[ignore = "the mover child of the crash test, started by it"]
fn crash_child() {
    crash::child();
}

/// A mover on the function's mount killed at random moments among its moves, while a writer
/// on a task's mount rewrites the files it moves; the next run gives back what it left.
/// `CRASH_SEED` reproduces a failure's draws.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_mover_killed_among_its_moves_loses_nothing_and_hides_nothing() {
    let t = "crash";
    let m = setup(t);
    let seed = crash::seed();
    let dirs = |base: &Path| {
        (
            base.join(t).join("shards/use1-az1/data/analysis"),
            base.join(t).join("shards/use1-az4/data/analysis"),
        )
    };
    let ((src_f, dst_f), (src_t, _), (src_s, dst_s)) = (dirs(&m[0]), dirs(&m[1]), dirs(&backing()));
    let exe = std::env::current_exe().unwrap();
    let seen = crash::run(
        seed,
        (10, 150, Duration::from_millis(30)),
        (&src_f, &dst_f),
        &src_t,
        (&src_s, &dst_s),
        &exe,
        crash::CHILD_ARGS,
    );
    println!("seed {seed}: {seen:?}");
    assert!(seen.kills >= 6, "seed {seed}: {seen:?}");
    assert!(seen.among_moves >= 2, "seed {seed}: {seen:?}");
    assert!(seen.in_batch >= 4, "seed {seed}: {seen:?}");
    // Writers' versions taken during a move and hidden by the kill, given back.
    assert!(seen.newest_hidden >= 1, "seed {seed}: {seen:?}");
    assert!(seen.recovered >= 1, "seed {seed}: {seen:?}");
    assert!(seen.writes > 0, "seed {seed}: {seen:?}");
}

/// This process's count of each NFS operation sent so far through `mount`
/// (`/proc/self/mountstats`, per-op statistics: the first number is the operations sent).
fn ops(mount: &Path) -> std::collections::BTreeMap<String, u64> {
    let stats = fs::read_to_string("/proc/self/mountstats").expect("/proc/self/mountstats");
    let marker = format!(" mounted on {} ", mount.display());
    let (mut mine, mut per_op) = (false, false);
    let mut out = std::collections::BTreeMap::new();
    for line in stats.lines() {
        if line.starts_with("device ") {
            (mine, per_op) = (line.contains(&marker), false);
        } else if mine && line.trim() == "per-op statistics" {
            per_op = true;
        } else if let Some((name, rest)) = line.trim().split_once(':').filter(|_| mine && per_op) {
            if let Some(n) = rest.split_whitespace().next().and_then(|n| n.parse().ok()) {
                out.insert(name.to_owned(), n);
            }
        }
    }
    assert!(!out.is_empty(), "{}: no per-op statistics", mount.display());
    out
}

/// A private directory given back as its names are read, over a real NFS client: READDIR
/// pages are read while the recovery renames entries out, so a page may skip a name (the
/// server's cookies move); a name skipped stays in the private directory, which stays, and
/// a later recovery gives it back. Nothing is lost, and it ends.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_private_directory_emptied_as_it_is_read_loses_nothing() {
    use efs_router::names::{new_private_name, Private};
    // Long names, so that a listing's 32 KiB buffer holds about 140: each read after the
    // first comes after renames. (3,000 names took 263 s under the tier's emulation.)
    const NAMES: usize = 500;
    let t = "stream";
    let m = setup(t);
    let dir = m[0].join(t).join("data/analysis");
    let pd = dir.join(new_private_name(Private::Moving));
    fs::create_dir(&pd).unwrap();
    for i in 0..NAMES {
        fs::write(pd.join(format!("{i:05}{}", "f".repeat(195))), b"x").unwrap();
    }
    let (mut rounds, mut settled) = (0, 0);
    while fs::symlink_metadata(&pd).is_ok() {
        rounds += 1;
        assert!(rounds <= 10, "never ends: {settled} given back");
        let r = efs_router::relocation::recover(&pd, |_| Ok(true)).unwrap();
        assert_eq!((r.deleted, r.left_count()), (0, 0), "{r:?}");
        settled += r.settled;
        if !r.unfinished {
            break;
        }
    }
    eprintln!("{NAMES} names given back in {rounds} recoveries");
    assert_eq!(settled, NAMES as u64);
    assert!(fs::symlink_metadata(&pd).is_err());
    let back = backing().join(t).join("data/analysis");
    assert_eq!(fs::read_dir(&back).unwrap().count(), NAMES);
}

/// The rebalance's walk over a real NFSv4.1 client: READDIR gives every entry's type, so the
/// walk sends no LOOKUP or GETATTR per entry (docs/benchmarks.md, "The rebalance's walk").
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn the_sorted_walk_sends_no_lookup_per_entry() {
    use efs_router::dir::{Flow, Kind};
    use efs_router::sorted_walk::{walk_sorted_at, Walked};
    const FILES: usize = 2000;
    let test = "sorted-walk";
    let m = setup(test);
    // Written on the server: no client has looked any of them up.
    let dir = backing().join(test).join("data/analysis");
    fs::create_dir_all(dir.join("a-sub")).unwrap();
    fs::write(dir.join("a-sub/nested.json"), b"").unwrap();
    for i in 0..FILES {
        fs::write(dir.join(format!("device-{i:05}.json")), b"").unwrap();
    }
    let mount = &m[0];
    let root = fs::File::open(mount.join(test).join("data/analysis")).unwrap();
    let before = ops(mount);
    let (mut files, mut unknown) = (0usize, 0usize);
    let walked = walk_sorted_at(&root, Path::new(""), |e| {
        match e.kind {
            Kind::File => files += 1,
            Kind::Unknown => unknown += 1,
            _ => {}
        }
        Flow::Continue
    })
    .unwrap();
    let after = ops(mount);
    let sent =
        |op: &str| after.get(op).copied().unwrap_or(0) - before.get(op).copied().unwrap_or(0);
    println!(
        "sorted walk of {} entries: READDIR {}, LOOKUP {}, GETATTR {}, ACCESS {}",
        FILES + 2,
        sent("READDIR"),
        sent("LOOKUP"),
        sent("GETATTR"),
        sent("ACCESS")
    );
    assert_eq!(walked, Walked::Ended);
    assert_eq!(
        (files, unknown),
        (FILES + 1, 0),
        "NFSv4.1 READDIR gives every type"
    );
    // The subdirectory is entered (a LOOKUP, its attributes); nothing is sent per file.
    assert!(sent("LOOKUP") <= 4, "LOOKUP {}", sent("LOOKUP"));
    assert!(sent("GETATTR") <= 8, "GETATTR {}", sent("GETATTR"));
    assert!(sent("READDIR") >= 1);
}

/// A listing through a mount whose name cache still says "missing" shows the files another
/// client wrote since, as the server has them: opening each shard's directory revalidates it
/// (close-to-open on directories), and a directory that changed is read again. Prints what a
/// listing of three shards sends, changed and unchanged.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_listing_shows_what_another_client_wrote_since() {
    let t = "listing_fresh";
    let m = setup(t);
    let task1 = router(&m[1], t);
    let (path, home1, other1) = misplaced(&task1, 1, 0, "l");
    let name = path.rsplit('/').next().unwrap().to_owned();
    let listed = |r: &Router| -> Vec<(String, usize, Vec<usize>)> {
        r.list_dir("data/analysis")
            .unwrap()
            .into_iter()
            .map(|e| (e.name, e.index, e.shards))
            .collect()
    };
    // Task 1 lists the (empty) directories and misses the name.
    assert_eq!(listed(&task1), []);
    assert!(missing(&home1) && missing(&other1));
    // Task 2 writes the file at home and a stale copy in shard 0.
    write_atomically(&through(&other1, &m[1], &m[2]), b"stale");
    write_atomically(&through(&home1, &m[1], &m[2]), b"v1");
    assert!(
        missing(&home1) && missing(&other1),
        "{ON_THE_TIER}: the tier must show stale negative lookups, or this test proves nothing"
    );
    let sent = |before: &std::collections::BTreeMap<String, u64>| {
        let after = ops(&m[1]);
        ["READDIR", "GETATTR", "LOOKUP", "ACCESS"].map(|op| {
            let n = |o: &std::collections::BTreeMap<String, u64>| o.get(op).copied().unwrap_or(0);
            (op, n(&after) - n(before))
        })
    };
    let before = ops(&m[1]);
    assert_eq!(listed(&task1), [(name.clone(), 1, vec![0, 1])]);
    println!("listing 3 shards, 2 changed: {:?}", sent(&before));
    let before = ops(&m[1]);
    assert_eq!(listed(&task1), [(name, 1, vec![0, 1])]);
    println!("listing 3 shards, unchanged: {:?}", sent(&before));
    assert_eq!(task1.read_with_fallback(&path).unwrap().data, b"v1");
}

/// What listing costs over a real NFSv4.1 client: each shard's directory opened once (a
/// GETATTR) and read in READDIR replies of hundreds of names, with no LOOKUP or GETATTR per
/// entry (the types come with the names); an unchanged directory is not read again.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_listing_sends_no_lookup_per_entry() {
    const PER_SHARD: usize = 1000;
    let t = "listing_cost";
    let m = setup(t);
    // Written on the server: no client has looked any of them up.
    for (k, r) in ROOTS.iter().enumerate() {
        let dir = backing()
            .join(t)
            .join(r.trim_start_matches('/'))
            .join("data/analysis");
        for i in 0..PER_SHARD {
            fs::write(dir.join(format!("s{k}-{i:05}.json")), b"").unwrap();
        }
    }
    let task = router(&m[1], t);
    let mut counts = Vec::new();
    for _ in 0..2 {
        let before = ops(&m[1]);
        assert_eq!(task.list_dir("data/analysis").unwrap().len(), 3 * PER_SHARD);
        let after = ops(&m[1]);
        let sent =
            |op: &str| after.get(op).copied().unwrap_or(0) - before.get(op).copied().unwrap_or(0);
        counts.push(["READDIR", "GETATTR", "LOOKUP", "ACCESS"].map(|op| (op, sent(op))));
    }
    println!(
        "listing {} names in 3 shards: first {:?}; unchanged {:?}",
        3 * PER_SHARD,
        counts[0],
        counts[1]
    );
    let [(_, readdir), (_, getattr), (_, lookup), _] = counts[0];
    assert!(readdir >= 3, "a READDIR stream per shard: {readdir}");
    assert!(
        lookup == 0 && getattr <= 6,
        "nothing per entry: LOOKUP {lookup}, GETATTR {getattr}"
    );
    assert_eq!(
        counts[1][0],
        ("READDIR", 0),
        "an unchanged directory is not read again"
    );
}

/// A delete through a mount whose name cache still says "missing" for copies another client
/// wrote since, at home and in another shard: both go, as the server sees it (fact 13).
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_delete_removes_copies_another_client_wrote_after_this_mount_missed_them() {
    let t = "delete_stale_miss";
    let m = setup(t);
    let task1 = router(&m[1], t);
    let (path, home1, other1) = misplaced(&task1, 1, 0, "d");
    // Task 1 looks, and caches both misses.
    assert!(missing(&home1) && missing(&other1));
    // Task 2 writes a copy at home and a stale one in shard 0.
    write_atomically(&through(&home1, &m[1], &m[2]), b"home");
    write_atomically(&through(&other1, &m[1], &m[2]), b"stale");
    assert!(
        missing(&home1) && missing(&other1),
        "{ON_THE_TIER}: the tier must show stale negative lookups, or this test proves nothing"
    );
    let done = task1.delete(&path).unwrap();
    assert_eq!(done.removed, [0, 1], "{done:?}");
    assert!(missing(&on_server(t, &m[1], &home1)));
    assert!(missing(&on_server(t, &m[1], &other1)));
}

/// What a delete costs on a settled version 3 list (nothing open) at 64 shards: one look at
/// home, at most 3 NFS calls and the REMOVE (issue 39's floor; every shard's look cost 195).
/// Outside the list's `scope` the same list says `everywhere`, and the delete looks in every
/// shard: a LOOKUP in each other shard at least. Session bookkeeping (a lease's SEQUENCE) is
/// not the delete's.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_delete_on_a_settled_list_is_three_calls_and_the_remove_at_64_shards() {
    let t = "delete_settled_cost";
    let m = mounts();
    let mut list = router(&m[1], t).list().clone();
    for (i, (target, az)) in list
        .mount_targets
        .iter_mut()
        .zip(["use1-az2", "use1-az4", "use1-az1"])
        .enumerate()
    {
        target.az_id = Some(az.to_owned());
        target.shards = 21 + u32::from(i == 0);
    }
    list.open = Some(efs_router::Open::Placements(vec![]));
    list.scope = Some("data/analysis".to_owned());
    let task = Router::new(list, Layout::single_mount(m[1].join(t))).unwrap();
    assert_eq!(task.shards().len(), 64);
    let b = backing().join(t);
    let _ = fs::remove_dir_all(&b);
    for dir in ["data/analysis", "data/other"] {
        for s in task.shards() {
            let d = Path::new(s.root.trim_start_matches('/')).join(dir);
            fs::create_dir_all(b.join(&d)).unwrap();
            // Looked up once, as a running task has.
            assert!(fs::metadata(m[1].join(t).join(&d)).unwrap().is_dir());
        }
    }
    let n = |op: &str, sent: &std::collections::BTreeMap<String, u64>| {
        sent.get(op).copied().unwrap_or(0)
    };
    for (prefix, rounds) in [("data/analysis", 1), ("data/other", 3)] {
        let path = format!("{prefix}/device-settled-1700000000.json");
        let home = task.resolve(&path).unwrap();
        fs::write(on_server(t, &m[1], &home.real), b"x").unwrap();
        assert!(task.exists(&path).unwrap());
        let before = ops(&m[1]);
        let done = task.delete(&path).unwrap();
        let mut sent = sent_since(&m[1], &before);
        sent.retain(|op, _| {
            !["SEQUENCE", "RENEW", "GET_LEASE_TIME", "NULL"].contains(&op.as_str())
        });
        println!("delete at 64 shards, nothing open, {prefix}: {sent:?}");
        assert_eq!((done.removed, done.rounds), (vec![home.index], rounds));
        assert_eq!(n("REMOVE", &sent), 1, "{sent:?}");
        let looks = sent.values().sum::<u64>() - 1;
        if rounds == 1 {
            assert!(looks <= 3, "{prefix}: {sent:?}");
        } else {
            assert!(n("LOOKUP", &sent) >= 63, "{prefix}: {sent:?}");
        }
    }
}

/// The function's clean-up judges one of the router's names abandoned by its `ctime` as the
/// function's own mount sees it (`dir::abandoned`, over the walk the rebalance makes), through
/// that mount's attribute cache (acregmin 3 s, acregmax 60 s). The cache can only make a name
/// look older than it is, by at most its timeout; so a temporary file another client keeps
/// writing must never look abandoned here past a threshold above that timeout, and one it
/// stopped writing must not look abandoned before the threshold has passed. The function's
/// threshold is an hour, far above the 60 s bound; this test's is 5 s, above the 3 s that
/// holds for a file that keeps changing.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_name_another_client_keeps_writing_never_looks_abandoned_through_this_mount() {
    use efs_router::dir::{abandoned, walk_at, Flow};
    use efs_router::names::{new_private_name, Private};
    use std::io::Write;
    use std::time::{Instant, SystemTime};
    const OLDER_THAN: Duration = Duration::from_secs(5);
    // The tier's (and EFS's) attribute timeout for a file that keeps changing.
    const ACREGMIN: Duration = Duration::from_secs(3);
    let t = "abandoned";
    let m = setup(t);
    let name = new_private_name(Private::Temporary);
    let written = m[1].join(t).join("data/analysis").join(&name);
    let watched = m[0].join(t).join("data/analysis");
    // Through the function's mount, as its rebalance walks: is the name there, and abandoned?
    let judged = || {
        let root = fs::File::open(&watched).unwrap();
        let mut found = None;
        walk_at(&root, |e| {
            if e.name() == std::ffi::OsStr::new(&name) {
                found = Some(abandoned(&e, SystemTime::now(), OLDER_THAN).is_some());
            }
            Flow::Continue
        })
        .unwrap();
        found
    };
    let append = |i: u32| {
        let mut f = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&written)
            .unwrap();
        writeln!(f, "{i}").unwrap();
    };
    // Another client writes every 500 ms for 12 s, more than twice the threshold.
    let start = Instant::now();
    let (mut seen, mut i) = (0, 0);
    while start.elapsed() < Duration::from_secs(12) {
        append(i);
        i += 1;
        if let Some(old) = judged() {
            assert!(
                !old,
                "judged abandoned {:?} into writes every 500 ms",
                start.elapsed()
            );
            seen += 1;
        }
        thread::sleep(Duration::from_millis(500));
    }
    assert!(seen > 0, "the function's mount never listed the name");
    // It stops: abandoned once the threshold has passed since its last write, less what the
    // cache may still show of a write before it, never sooner.
    let last = Instant::now();
    while judged() != Some(true) {
        assert!(
            last.elapsed() < Duration::from_secs(120),
            "never judged abandoned"
        );
        thread::sleep(Duration::from_millis(100));
    }
    let after = last.elapsed();
    println!(
        "abandoned: judged young in {seen} walks while written; abandoned {:.1} s after the last write (threshold {} s)",
        after.as_secs_f64(),
        OLDER_THAN.as_secs()
    );
    assert!(after + ACREGMIN >= OLDER_THAN, "{after:?}");
}

/// Names under `dir` on the server that are the router's own (`.efs-router-…`): none may stay.
fn private_names_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        if e.file_name().to_string_lossy().starts_with(".efs-router-") {
            out.push(e.path());
        } else if e.file_type().unwrap().is_dir() {
            out.extend(private_names_under(&e.path()));
        }
    }
    out
}

/// Two clients, each through its own mount, racing to create the same new paths (homed in
/// every shard): exactly one wins each path, the server holds the winner's bytes, and no
/// temporary name is left. First the look: a create through a mount that cached a miss of a
/// path another client has created since answers `AlreadyThere`, as the server sees it.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn racing_creates_through_two_mounts_have_one_winner_per_path() {
    use efs_router::Creation;
    const PATHS: usize = 30;
    let t = "create_race";
    let m = setup(t);
    let (a, b) = (Arc::new(router(&m[1], t)), Arc::new(router(&m[2], t)));

    let (path, home_a, _) = misplaced(&a, 1, 0, "c");
    assert!(missing(&home_a));
    assert!(b.create(&path, b"b first").unwrap().created());
    assert!(
        missing(&home_a),
        "{ON_THE_TIER}: the tier must show a stale negative lookup"
    );
    let home = a.resolve(&path).unwrap();
    assert_eq!(
        a.create(&path, b"a second").unwrap(),
        Creation::AlreadyThere {
            index: home.index,
            real: home.real.clone()
        }
    );
    assert_eq!(fs::read(on_server(t, &m[1], &home_a)).unwrap(), b"b first");

    let mut wins = [0usize; 2];
    for i in 0..PATHS {
        let p = format!("data/analysis/create-race-{i}.json");
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = [a.clone(), b.clone()]
            .into_iter()
            .enumerate()
            .map(|(who, r)| {
                let (barrier, p) = (barrier.clone(), p.clone());
                thread::spawn(move || {
                    let data = format!("client {who} ").repeat(100).into_bytes();
                    barrier.wait();
                    (data.clone(), r.create(&p, &data).unwrap())
                })
            })
            .collect();
        let got: Vec<(Vec<u8>, Creation)> =
            handles.into_iter().map(|h| h.join().unwrap()).collect();
        let home = a.resolve(&p).unwrap();
        let kinds: Vec<&str> = got.iter().map(|(_, c)| c.as_str()).collect();
        let winners: Vec<usize> = (0..2).filter(|&w| got[w].1.created()).collect();
        assert_eq!(winners.len(), 1, "{p}: {kinds:?}");
        wins[winners[0]] += 1;
        assert!(got.iter().all(|(_, c)| c.index() == home.index), "{p}");
        let on_disk = fs::read(on_server(t, &m[1], &home.real)).unwrap();
        assert_eq!(on_disk, got[winners[0]].0, "{p}");
    }
    println!(
        "racing creates over {PATHS} paths: client 0 won {}, client 1 won {}",
        wins[0], wins[1]
    );
    // Each client won some and lost some: both ends of the race were reached.
    assert!(wins.iter().all(|w| *w > 0), "{wins:?}");
    assert_eq!(
        private_names_under(&backing().join(t)),
        Vec::<PathBuf>::new()
    );
}

/// The NFS calls `mount` sent since `before` (an [`ops`]), those it sent, by name.
fn sent_since(
    mount: &Path,
    before: &std::collections::BTreeMap<String, u64>,
) -> std::collections::BTreeMap<String, u64> {
    ops(mount)
        .into_iter()
        .map(|(op, n)| (op.clone(), n - before.get(&op).copied().unwrap_or(0)))
        .filter(|(_, n)| *n > 0)
        .collect()
}

/// What a create costs on a real NFS client (router/REFERENCE.md, "Creating a file"): a new path
/// is the miss of `exists`, then the write of the temporary name, one LINK and one REMOVE, no
/// RENAME; a path at home that this client has looked up costs at most a GETATTR (the link
/// and the unlink changed the file's link count, so its cached attributes are dropped). A
/// write of a new path beside it, for comparison.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_create_is_the_look_then_one_link_and_one_remove() {
    let t = "create_cost";
    let m = setup(t);
    let task = router(&m[1], t);
    let (path, home, _) = misplaced(&task, 1, 0, "k");
    let (written, _, _) = misplaced(&task, 1, 0, "w");
    assert!(missing(&home));
    let n = |op: &str, sent: &std::collections::BTreeMap<String, u64>| {
        sent.get(op).copied().unwrap_or(0)
    };
    let before = ops(&m[1]);
    assert!(task.create(&path, b"new").unwrap().created());
    let created = sent_since(&m[1], &before);
    println!("create of a new path, 3 shards: {created:?}");
    assert_eq!(
        (
            n("LINK", &created),
            n("REMOVE", &created),
            n("RENAME", &created)
        ),
        (1, 1, 0)
    );
    let before = ops(&m[1]);
    assert!(!task.create(&path, b"again").unwrap().created());
    let again = sent_since(&m[1], &before);
    println!("create of a path at home, cached: {again:?}");
    assert!(again.values().sum::<u64>() <= 1, "{again:?}");
    let before = ops(&m[1]);
    task.write(&written, b"new").unwrap();
    let wrote = sent_since(&m[1], &before);
    println!("write of a new path: {wrote:?}");
    assert_eq!((n("LINK", &wrote), n("RENAME", &wrote)), (0, 1));
}

/// Under open placements (list version 3) a miss looks at the placements first and at home
/// last: the function's moves go only from a placement's home to the file's home, linked home
/// before they leave. Here the mover is the function's mount and each reader its own, which
/// has already missed every file at home, so its cache remembers each name missing there: the
/// look at home must still ask the server. Seeded order (`NFS_RACE_SEED`); coverage asserted
/// per reader: files met on both sides of their moves.
#[test]
#[ignore = "runs on the NFS tier (make nfs-test)"]
fn a_miss_under_open_placements_through_another_mount_finds_every_file_moving_home() {
    let t = "placements_home_last";
    let m = setup(t);
    let (seed, mut draw) = race_draws(20261202);
    let v3 = |mount: &Path| {
        let mut list = router(mount, t).list().clone();
        list.open = Some(efs_router::Open::Placements(vec![
            efs_router::Placement::of(efs_router::Strategy::Rendezvous, &list.mount_targets[..1]),
        ]));
        Router::new(list, Layout::single_mount(mount.join(t))).unwrap()
    };
    let mover = v3(&m[0]);
    let mut files: Vec<(String, PathBuf, PathBuf)> = (0..120)
        .map(|i| misplaced(&mover, 1 + i % 2, 0, &format!("h{i}-")))
        .collect();
    for (_, home, at_slash) in &files {
        fs::write(on_server(t, &m[0], at_slash), b"x").unwrap();
        fs::create_dir_all(home.parent().unwrap()).unwrap();
    }
    let mut next = move |n: u64| draw() % n;
    for i in (1..files.len()).rev() {
        files.swap(i, next(i as u64 + 1) as usize);
    }
    let paths: Vec<String> = files.iter().map(|(p, ..)| p.clone()).collect();
    let readers: Vec<Router> = m[1..].iter().map(|mount| v3(mount)).collect();
    // Each reader's cache: every file missing at home, found at the placement.
    for (r, mount) in readers.iter().zip(&m[1..]) {
        for (_, home, at_slash) in &files {
            assert!(missing(&through(home, &m[0], mount)));
            assert!(through(at_slash, &m[0], mount).exists());
        }
        assert!(paths.iter().all(|p| r.exists(p).unwrap()));
    }
    let done = AtomicBool::new(false);
    let crossed: Vec<(u64, u64)> = thread::scope(|s| {
        let handles: Vec<_> = readers
            .iter()
            .map(|r| {
                let (done, paths) = (&done, &paths);
                s.spawn(move || {
                    // Rounds that met files on both sides of their moves.
                    let mut crossed = 0u64;
                    let mut last_round = false;
                    loop {
                        // One whole round after the mover is done: every file home by then.
                        last_round |= done.load(Ordering::Acquire);
                        let (mut home, mut away) = (0u64, 0u64);
                        // Against the mover's order, so that the two cross.
                        for p in paths.iter().rev() {
                            match r.locate(p).unwrap().found {
                                Found::Home => home += 1,
                                Found::Elsewhere { .. } => away += 1,
                                Found::Missing => {
                                    panic!("seed {seed}: {p} missing while it moved")
                                }
                            }
                            assert!(r.exists(p).unwrap(), "seed {seed}: {p} missed");
                        }
                        crossed += u64::from(home > 0 && away > 0);
                        if last_round {
                            return (crossed, away);
                        }
                    }
                })
            })
            .collect();
        for (_, home, at_slash) in &files {
            relocate(at_slash, home).unwrap();
        }
        done.store(true, Ordering::Release);
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    println!(
        "placements first, home last, through other mounts (seed {seed}): rounds that met files on both sides of their moves per reader {:?}",
        crossed.iter().map(|(c, _)| c).collect::<Vec<_>>()
    );
    for (c, away_in_last) in &crossed {
        assert!(
            *c > 0,
            "seed {seed}: a reader never crossed the mover: {crossed:?}"
        );
        assert_eq!(
            *away_in_last, 0,
            "seed {seed}: a file not home after its move"
        );
    }
}
