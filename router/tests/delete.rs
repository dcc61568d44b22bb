//! `Router::delete` on real directories: every copy goes (home and the other shards, nested
//! paths, both layouts), a link or FIFO at a copy's place or on the way is never followed and
//! is left, the router's private names are never removed; on a version 3 list it looks at home
//! and where an open placement homes the path, and everywhere where the list says so; and a
//! seeded race of deletes against moves (a single move, a replace of an older home copy, the
//! function's batch, a fallback read, a reader on another list; the function's moves against a
//! deleter on placements too) in which no deleted path comes back but through the one window
//! docs/routing.md documents. `DELETE_RACE_SEED` reproduces a failure's draws.

#[path = "support/tree.rs"]
mod tree;
use efs_router::relocation::relocate_many;
use efs_router::{
    relocate, Deleted, Error, Layout, Left, MountTargetList, Open, Place, Relocation, Router,
    Strategy, Target,
};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Barrier;
use std::time::{Duration, Instant};
use std::{fs, thread};
use tree::{files_under, put};

fn list(roots: &[&str]) -> MountTargetList {
    MountTargetList {
        open: None,
        scope: None,
        mount_targets: roots
            .iter()
            .enumerate()
            .map(|(i, r)| Target::new(format!("fsmt-{i}"), format!("10.0.{i}.4"), *r))
            .collect(),
        strategy: Strategy::Rendezvous,
    }
}

const FOUR: &[&str] = &[
    "/",
    "/shards/use1-az4",
    "/shards/use1-az1",
    "/shards/use1-az6",
];

fn single(dir: &Path, roots: &[&str]) -> Router {
    for r in roots {
        fs::create_dir_all(dir.join(r.trim_start_matches('/'))).unwrap();
    }
    Router::new(list(roots), Layout::single_mount(dir)).unwrap()
}

/// A path under `prefix` whose home is shard `home`.
fn homed(router: &Router, prefix: &str, home: usize, tag: &str) -> String {
    (0..)
        .map(|i| format!("{prefix}/device-{tag}{i}-1700000000.json"))
        .find(|p| router.resolve(p).unwrap().index == home)
        .unwrap()
}

fn real(router: &Router, index: usize, path: &str) -> PathBuf {
    let r = router.resolve(path).unwrap();
    router
        .layout()
        .real_path(router.shards(), index, &r.logical)
}

#[test]
fn a_path_with_copies_at_home_and_in_two_other_shards_is_gone_from_all() {
    let d = tempfile::tempdir().unwrap();
    let router = single(d.path(), FOUR);
    let path = homed(&router, "data/analysis", 1, "a");
    for i in [1, 2, 3] {
        put(&real(&router, i, &path), format!("copy {i}").as_bytes());
    }
    let keep = homed(&router, "data/analysis", 2, "keep");
    put(&real(&router, 2, &keep), b"another path");
    let done = router.delete(&path).unwrap();
    assert_eq!(
        done,
        Deleted {
            removed: vec![1, 2, 3],
            unlinked: 3,
            left: vec![],
            rounds: 3,
        }
    );
    assert_eq!(
        files_under(d.path()),
        [PathBuf::from("shards/use1-az1").join(&keep)]
    );
    // Again: nothing there, not an error.
    let again = router.delete(&path).unwrap();
    assert!(!again.any());
    assert_eq!((again.removed.len(), again.rounds), (0, 3));
}

#[test]
fn nested_paths_go_from_every_shard_even_one_without_the_directory() {
    let d = tempfile::tempdir().unwrap();
    let router = single(d.path(), FOUR);
    let path = homed(&router, "data/analysis/site-7/2026/12", 0, "n");
    for i in [0, 2] {
        put(&real(&router, i, &path), b"nested");
    }
    // Shard 3 has part of the way only; shard 1 none of it.
    fs::create_dir_all(d.path().join("shards/use1-az6/data/analysis/site-7")).unwrap();
    let done = router.delete(&path).unwrap();
    assert_eq!((done.removed, done.unlinked), (vec![0, 2], 2));
    assert!(done.left.is_empty());
    assert!(files_under(d.path()).is_empty());
    // The directories stay: other files may be written there at any moment.
    assert!(real(&router, 2, &path).parent().unwrap().is_dir());
}

#[test]
fn a_link_or_fifo_at_a_copys_place_or_on_the_way_is_left_and_never_followed() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let router = single(d.path(), FOUR);
    let path = homed(&router, "data/analysis", 0, "l");
    let name = Path::new(&path).file_name().unwrap().to_owned();
    // The victim a planted link points at: outside every shard.
    let victim = outside.path().join(&name);
    fs::write(&victim, b"not the router's").unwrap();
    // Home: a regular copy. Shard 1: a link at the copy's place. Shard 2: its `data` is a
    // link to a tree holding the same relative path. Shard 3: a FIFO.
    put(&real(&router, 0, &path), b"home");
    let link = real(&router, 1, &path);
    fs::create_dir_all(link.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(&victim, &link).unwrap();
    let tree = outside.path().join("tree");
    put(&tree.join(&path), b"behind a link");
    fs::remove_dir_all(d.path().join("shards/use1-az1/data")).ok();
    std::os::unix::fs::symlink(tree.join("data"), d.path().join("shards/use1-az1/data")).unwrap();
    let fifo = real(&router, 3, &path);
    fs::create_dir_all(fifo.parent().unwrap()).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        &fifo,
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o644),
        0,
    )
    .unwrap();

    let done = router.delete(&path).unwrap();
    assert_eq!((done.removed, done.unlinked), (vec![0], 1));
    let left: Vec<(usize, &str)> = done.left.iter().map(|l| (l.index, l.what)).collect();
    assert_eq!(
        left,
        [
            (1, "symbolic link"),
            (2, "link or non-directory above it"),
            (3, "FIFO")
        ]
    );
    assert_eq!(
        done.left[0],
        Left {
            index: 1,
            real: real(&router, 1, &path),
            what: "symbolic link"
        }
    );
    assert_eq!(fs::read(&victim).unwrap(), b"not the router's");
    assert_eq!(fs::read(tree.join(&path)).unwrap(), b"behind a link");
    assert!(fs::symlink_metadata(real(&router, 1, &path))
        .unwrap()
        .file_type()
        .is_symlink());
    assert!(fs::symlink_metadata(&fifo).is_ok());
}

#[test]
fn a_private_name_is_never_removed() {
    let d = tempfile::tempdir().unwrap();
    let router = single(d.path(), FOUR);
    for p in [
        "data/analysis/.efs-router-0123456789abcdef.tmp",
        "data/analysis/.efs-router-0123456789abcdef.moving/x.json",
    ] {
        match router.delete(p) {
            Err(Error::Route(e)) => assert_eq!(e.kind(), "reserved-name", "{p}"),
            other => panic!("{p}: {other:?}"),
        }
    }
    // A move in progress holds the path's file under a private directory beside it, and a
    // write in progress its temporary name: a delete of the path never looks there.
    let path = homed(&router, "data/analysis", 1, "p");
    let name = Path::new(&path).file_name().unwrap().to_owned();
    let dir = real(&router, 2, &path).parent().unwrap().to_owned();
    let moving = dir.join(".efs-router-00000000000000ab.moving");
    put(&moving.join(&name), b"a move's");
    put(&dir.join(".efs-router-00000000000000cd.tmp"), b"a write's");
    put(&real(&router, 1, &path), b"home");
    let done = router.delete(&path).unwrap();
    assert_eq!(done.removed, [1]);
    assert_eq!(fs::read(moving.join(&name)).unwrap(), b"a move's");
    assert_eq!(
        fs::read(dir.join(".efs-router-00000000000000cd.tmp")).unwrap(),
        b"a write's"
    );
}

#[test]
fn one_shard_directory_takes_one_round_and_per_target_mounts_are_each_cleared() {
    let d = tempfile::tempdir().unwrap();
    let router = single(d.path(), &["/"]);
    put(&d.path().join("data/x.json"), b"x");
    let done = router.delete("data/x.json").unwrap();
    assert_eq!((done.removed, done.rounds), (vec![0], 1));

    let mounts: Vec<PathBuf> = (0..3).map(|i| d.path().join(format!("efs-{i}"))).collect();
    for m in &mounts {
        fs::create_dir_all(m).unwrap();
    }
    let roots = &["/", "/shards/use1-az4", "/shards/use1-az1"];
    let router = Router::new(list(roots), Layout::per_target(mounts.clone())).unwrap();
    for m in &mounts {
        put(&m.join("data/analysis/y.json"), b"y");
    }
    let done = router.delete("data/analysis/y.json").unwrap();
    assert_eq!((done.removed, done.rounds), (vec![0, 1, 2], 3));
    assert!(files_under(d.path()).is_empty());
}

// ------------------------------------------------------ where a version 3 list says copies are

/// `n` shards on 3 mount targets, as even as can be (a version 2 list beyond 3), as the NFS
/// tier's benchmark lists are.
fn many(n: u32) -> MountTargetList {
    let mut l = list(&["/", "/shards/use1-az4", "/shards/use1-az1"]);
    for (i, (t, az)) in l
        .mount_targets
        .iter_mut()
        .zip(["use1-az2", "use1-az4", "use1-az1"])
        .enumerate()
    {
        t.az_id = Some(az.to_owned());
        t.shards = n / 3 + u32::from((i as u32) < n % 3);
    }
    assert_eq!(l.shard_count(), n as usize);
    l
}

/// A router on `list` over `dir`, every shard's directory made.
fn on(dir: &Path, list: MountTargetList) -> Router {
    let router = Router::new(list, Layout::single_mount(dir)).unwrap();
    for s in router.shards() {
        fs::create_dir_all(dir.join(s.root.trim_start_matches('/'))).unwrap();
    }
    router
}

/// `path` put in every shard; the shards whose copy is still there after `done`.
fn put_everywhere(router: &Router, path: &str) {
    for i in 0..router.shards().len() {
        put(&real(router, i, path), format!("copy {i}").as_bytes());
    }
}

fn still_there(router: &Router, path: &str) -> Vec<usize> {
    (0..router.shards().len())
        .filter(|&i| fs::symlink_metadata(real(router, i, path)).is_ok())
        .collect()
}

/// `list` as version 3 with these placements open.
fn v3(mut list: MountTargetList, open: Vec<efs_router::Placement>) -> MountTargetList {
    list.open = Some(Open::Placements(open));
    list
}

/// On a settled version 3 list (nothing open) a copy can be nowhere but home, whatever the
/// shards: the delete looks there alone, in one round. The copies planted in the 63 other
/// shards are where the list says none can be (no router finds them; the function keeps a
/// placement open while one can be there): never looked at, so left.
#[test]
fn a_settled_list_at_64_shards_deletes_at_home_alone_in_one_round() {
    let d = tempfile::tempdir().unwrap();
    let router = on(d.path(), v3(many(64), vec![]));
    let path = homed(&router, "data/analysis", 17, "s");
    put_everywhere(&router, &path);
    let done = router.delete(&path).unwrap();
    assert_eq!(
        done,
        Deleted {
            removed: vec![17],
            unlinked: 1,
            left: vec![],
            rounds: 1,
        }
    );
    let others: Vec<usize> = (0..64).filter(|&i| i != 17).collect();
    assert_eq!(still_there(&router, &path), others);
    // Nowhere: one look, not an error.
    let again = router.delete(&path).unwrap();
    assert_eq!((again.any(), again.rounds), (false, 1));
}

/// With placements open, a delete looks at home and at the path's home under each of them
/// (the shard `/` that held the files before any list, and the 21-shard list before a growth)
/// and removes every copy there, in the usual three rounds; no other shard is looked at.
#[test]
fn a_copy_where_an_open_placement_homes_the_path_is_removed_and_nowhere_else_is_looked_at() {
    let d = tempfile::tempdir().unwrap();
    let slash = efs_router::Placement::of(Strategy::Rendezvous, &list(&["/"]).mount_targets);
    let before = many(21).placement();
    let router = on(d.path(), v3(many(64), vec![slash.clone(), before.clone()]));
    let before_router = Router::new(many(21), Layout::single_mount(d.path())).unwrap();
    // The shard (of this list) that `before` homes `p` in.
    let was_home = |p: &str| {
        let root = &before_router.shards()[before_router.resolve(p).unwrap().index].root;
        router
            .shards()
            .iter()
            .position(|s| &s.root == root)
            .unwrap()
    };
    // A path homed elsewhere under each: three places.
    let path = (0..)
        .map(|i| format!("data/analysis/site-3/device-o{i}-1700000000.json"))
        .find(|p| {
            let (h, b) = (router.resolve(p).unwrap().index, was_home(p));
            h != 0 && b != 0 && h != b
        })
        .unwrap();
    let (home, was) = (router.resolve(&path).unwrap().index, was_home(&path));
    let mut named = vec![0, home, was];
    named.sort_unstable();
    // Where a miss looks: the same places.
    let mut misses = router.miss_shards(&router.resolve(&path).unwrap());
    misses.sort_unstable();
    assert_eq!(misses, [0, was]);
    put_everywhere(&router, &path);
    let done = router.delete(&path).unwrap();
    assert_eq!((&done.removed, done.unlinked, done.rounds), (&named, 3, 3));
    assert!(done.left.is_empty());
    let rest: Vec<usize> = (0..64).filter(|i| !named.contains(i)).collect();
    assert_eq!(still_there(&router, &path), rest);
    // A copy at a placement alone (a file not yet moved home) goes too.
    put(&real(&router, was, &path), b"not yet home");
    let done = router.delete(&path).unwrap();
    assert_eq!((done.removed, done.rounds), (vec![was], 3));
}

/// Where the list does not know where copies can be, every shard is looked at, as before:
/// the earlier forms, a version 3 list whose `open` is `everywhere`, and on a version 3 list
/// with a `scope`, a path outside it (the function never walks there). Inside the scope, the
/// same list's delete is home alone.
#[test]
fn where_the_list_says_everywhere_every_shard_is_looked_at() {
    let d = tempfile::tempdir().unwrap();
    let mut everywhere = many(64);
    everywhere.open = Some(Open::Everywhere(
        efs_router::placement::Everywhere::Everywhere,
    ));
    let mut scoped = v3(many(64), vec![]);
    scoped.scope = Some("data/analysis".to_owned());
    for (form, l, path) in [
        (
            "version 2",
            many(64),
            "data/analysis/device-e1-1700000000.json",
        ),
        (
            "everywhere",
            everywhere,
            "data/analysis/device-e2-1700000000.json",
        ),
        (
            "outside the scope",
            scoped.clone(),
            "data/other/device-e3-1700000000.json",
        ),
    ] {
        let router = on(d.path(), l);
        put_everywhere(&router, path);
        let done = router.delete(path).unwrap();
        assert_eq!(
            (done.removed, done.unlinked, done.rounds),
            ((0..64).collect::<Vec<_>>(), 64, 3),
            "{form}"
        );
        assert_eq!(still_there(&router, path), Vec::<usize>::new(), "{form}");
    }
    let router = on(d.path(), scoped);
    let inside = "data/analysis/nested/device-e4-1700000000.json";
    put_everywhere(&router, inside);
    let home = router.resolve(inside).unwrap().index;
    let done = router.delete(inside).unwrap();
    assert_eq!((done.removed, done.rounds), (vec![home], 1));
    assert_eq!(still_there(&router, inside).len(), 63);
}

// ----------------------------------------------------------------------------- the race

/// A small seeded generator (xorshift): a failing seed reproduces its draws.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Busy-waits `micros`: sleeps are far coarser than a move.
fn spin(micros: u64) {
    let until = Instant::now() + Duration::from_micros(micros);
    while Instant::now() < until {
        std::hint::spin_loop();
    }
}

/// What the mover of one trial does.
#[derive(Debug, Clone, Copy)]
enum Mover {
    /// `relocate` of a misplaced copy home.
    Move,
    /// The same, with an older copy at home: the source replaces it.
    Replace,
    /// `relocate_many` of the path among other misplaced files.
    Batch,
    /// A fallback read on the deleter's list.
    Read,
    /// A fallback read on another list, whose home for the path is one of the deleter's
    /// other shards: it moves the deleter's home copy there.
    ReadOnAnotherList,
}

/// How the trials went: races hit, and paths that came back through the documented window.
#[derive(Debug, Default)]
struct Races {
    /// The mover placed the file home, and the delete removed it there after.
    placed_then_deleted: u64,
    /// The delete removed the source first: the mover found it gone.
    source_gone: u64,
    /// A copy seen, then gone before the unlink, or seen again in a later round.
    caught_moving: u64,
    /// The delete removed the source and the home copy both: the mover had linked home and
    /// not yet taken the source.
    both_names: u64,
    /// A replace's rename landed after the delete's last look at home (docs/routing.md).
    window: u64,
}

/// A fallback read, as the move it made: `None` when it found nothing.
fn read_as_move(router: &Router, path: &str) -> Option<Relocation> {
    match router.read_with_fallback(path) {
        Ok(read) => match read.place {
            Place::MovedHome { .. } => Some(Relocation::Moved),
            Place::MovedByAnother { .. } => Some(Relocation::SourceGone),
            Place::Home | Place::LeftElsewhere { .. } | Place::AtPlacement { .. } => None,
        },
        Err(Error::NotFound { .. }) => None,
        Err(e) => panic!("{path}: {e}"),
    }
}

#[test]
fn deletes_racing_moves_never_bring_a_path_back_but_through_the_replace_window() {
    let seed: u64 = std::env::var("DELETE_RACE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20261201);
    println!("seed {seed} (DELETE_RACE_SEED={seed} reproduces its draws)");
    let mut rng = Rng(seed.max(1));
    let d = tempfile::tempdir().unwrap();
    // Two views of one directory, one per actor (on this host one cache stands for both).
    let (deleter, mover) = (single(d.path(), FOUR), single(d.path(), FOUR));
    // Another list: the same shards, the fourth draining (routed as if gone, still read).
    let mut drained = list(FOUR);
    drained.mount_targets[3].draining = true;
    let other_list = Router::new(drained, Layout::single_mount(d.path())).unwrap();
    // A version 3 list of the same shards whose one open placement is the shard `/`: its
    // delete looks only there and at home, which is where the function's moves go between.
    let slash = efs_router::Placement::of(Strategy::Rendezvous, &list(&["/"]).mount_targets);
    let placements =
        Router::new(v3(list(FOUR), vec![slash]), Layout::single_mount(d.path())).unwrap();
    // A move needs its destination's directory (a read's makes it; `relocate` does not).
    for r in FOUR {
        fs::create_dir_all(
            d.path()
                .join(r.trim_start_matches('/'))
                .join("data/analysis"),
        )
        .unwrap();
    }
    // The races of each deleter: the earlier form's (every shard), the placements'.
    let mut races = [Races::default(), Races::default()];
    let kinds = [
        Mover::Move,
        Mover::Replace,
        Mover::Batch,
        Mover::Read,
        Mover::ReadOnAnotherList,
    ];
    // Which orders of delete and move happen hangs on how the machine schedules the two
    // threads: after 600 trials, more are drawn (the same seed, the same draws) until each
    // deleter has met every order asked for below, up to ten times as many.
    let covered = |r: &Races| {
        r.placed_then_deleted > 0 && r.source_gone > 0 && r.caught_moving + r.both_names > 0
    };
    let mut trials = 0;
    for trial in 0..6000u64 {
        if trial >= 600 && races.iter().all(covered) {
            break;
        }
        trials += 1;
        let kind = kinds[rng.below(kinds.len() as u64) as usize];
        let tag = format!("t{trial}-");
        // Half the function's moves race the deleter on placements, from the placement's
        // home to the path's (no read on that list moves a file).
        let on_placements =
            matches!(kind, Mover::Move | Mover::Replace | Mover::Batch) && rng.below(2) == 1;
        let who = if on_placements { &placements } else { &deleter };
        let (path, from, to) = match kind {
            _ if on_placements => {
                let home = 1 + rng.below(3) as usize;
                (homed(&deleter, "data/analysis", home, &tag), 0, home)
            }
            Mover::ReadOnAnotherList => {
                // Homed at the deleter's shard 3, which the other list drains.
                let p = homed(&deleter, "data/analysis", 3, &tag);
                let k = other_list.resolve(&p).unwrap().index;
                (p, 3, k)
            }
            _ => {
                let home = rng.below(4) as usize;
                let p = homed(&deleter, "data/analysis", home, &tag);
                let from = (home + 1 + rng.below(3) as usize) % 4;
                (p, from, home)
            }
        };
        let (src, dst) = (real(&deleter, from, &path), real(&deleter, to, &path));
        if let Mover::Replace = kind {
            put(&dst, b"older, at home");
            let t = std::time::SystemTime::now() - Duration::from_secs(60);
            fs::File::options()
                .write(true)
                .open(&dst)
                .unwrap()
                .set_modified(t)
                .unwrap();
        }
        put(&src, format!("trial {trial}").as_bytes());
        let src_ino = fs::metadata(&src).unwrap().ino();
        let batch: Vec<(PathBuf, PathBuf)> = (0..3)
            .map(|i| {
                let p = homed(&deleter, "data/analysis", to, &format!("{tag}b{i}-"));
                let pair = (real(&deleter, from, &p), real(&deleter, to, &p));
                put(&pair.0, b"batch");
                pair
            })
            .chain([(src.clone(), dst.clone())])
            .collect();
        let (wait_delete, wait_move) = (rng.below(150), rng.below(150));
        let start = Barrier::new(2);
        let (deleted, moved) = thread::scope(|s| {
            let del = s.spawn(|| {
                start.wait();
                spin(wait_delete);
                who.delete(&path).unwrap()
            });
            let mov = s.spawn(|| {
                start.wait();
                spin(wait_move);
                match kind {
                    Mover::Move | Mover::Replace => Some(
                        relocate(&src, &dst)
                            .unwrap_or_else(|e| panic!("trial {trial} {kind:?}: {e:?}")),
                    ),
                    Mover::Batch => relocate_many(&batch, 2, None)
                        .pop()
                        .unwrap()
                        .map(|r| r.unwrap()),
                    Mover::Read => read_as_move(&mover, &path),
                    Mover::ReadOnAnotherList => read_as_move(&other_list, &path),
                }
            });
            (del.join().unwrap(), mov.join().unwrap())
        });
        let back: Vec<usize> = (0..4)
            .filter(|&i| fs::symlink_metadata(real(&deleter, i, &path)).is_ok())
            .collect();
        if !back.is_empty() {
            let at_home = fs::metadata(&dst).map(|m| m.ino()).ok();
            // The replacement renamed over home after the delete's last look there: the move
            // then reports ReplacedOlder, or SourceGone when the delete took the source before
            // the move retired it. The inode at home is the evidence either way.
            let replace_landed_late = matches!(kind, Mover::Replace)
                && back == [to]
                && matches!(
                    moved,
                    Some(Relocation::ReplacedOlder | Relocation::SourceGone)
                )
                && at_home == Some(src_ino);
            assert!(
                replace_landed_late,
                "seed {seed} trial {trial} ({kind:?}, placements {on_placements}, {from} -> {to}): {path} came back in shards {back:?}; delete {deleted:?}, mover {moved:?}"
            );
            races[usize::from(on_placements)].window += 1;
            fs::remove_file(&dst).unwrap();
        }
        let races = &mut races[usize::from(on_placements)];
        if deleted.removed.contains(&to)
            && matches!(moved, Some(Relocation::Moved | Relocation::ReplacedOlder))
        {
            races.placed_then_deleted += 1;
        }
        if moved == Some(Relocation::SourceGone) && deleted.removed.contains(&from) {
            races.source_gone += 1;
        }
        if deleted.rounds > 3 || deleted.unlinked > deleted.removed.len() {
            races.caught_moving += 1;
        }
        if deleted.removed.contains(&from)
            && deleted.removed.contains(&to)
            && !matches!(kind, Mover::Replace)
        {
            races.both_names += 1;
        }
        // Nothing private is left behind by either actor.
        let private: Vec<PathBuf> = files_under(d.path())
            .into_iter()
            .filter(|e| e.to_string_lossy().contains(".efs-router-"))
            .collect();
        assert!(private.is_empty(), "seed {seed} trial {trial}: {private:?}");
        for (s, t) in &batch[..3] {
            let _ = fs::remove_file(s);
            let _ = fs::remove_file(t);
        }
    }
    println!(
        "seed {seed}: {trials} trials; every shard {:?}; placements {:?}",
        races[0], races[1]
    );
    for r in &races {
        assert!(r.placed_then_deleted > 0, "seed {seed}: {races:?}");
        assert!(r.source_gone > 0, "seed {seed}: {races:?}");
        assert!(r.caught_moving + r.both_names > 0, "seed {seed}: {races:?}");
    }
}

/// A path written again all along, in every shard, by writers that never stop: each round of
/// the delete removes a copy and finds another, so after `ROUNDS` (8) rounds it gives up with
/// `Error::Reappearing` rather than call the path deleted. Writers on every shard make it
/// likely that each round finds one; the delete is tried until it gives up (within a generous
/// bound), and the attempts that ended sooner are counted. Once the writers stop, a delete
/// removes the path from everywhere.
#[test]
fn a_path_written_again_in_every_round_is_reappearing() {
    const ROUNDS: usize = 8; // delete::ROUNDS
    let d = tempfile::tempdir().unwrap();
    let router = single(d.path(), FOUR);
    let path = homed(&router, "data/analysis", 1, "again");
    let places: Vec<PathBuf> = (0..FOUR.len()).map(|i| real(&router, i, &path)).collect();
    for p in &places {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
    }
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (error, attempts, ended_sooner, writes) = thread::scope(|s| {
        let writers: Vec<_> = places
            .iter()
            .map(|p| {
                let stop = &stop;
                s.spawn(move || {
                    let mut writes = 0u64;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        fs::write(p, b"written again").unwrap();
                        writes += 1;
                    }
                    writes
                })
            })
            .collect();
        let bound = Instant::now() + Duration::from_secs(60);
        let (mut attempts, mut ended_sooner) = (0u64, Vec::new());
        let error = loop {
            attempts += 1;
            match router.delete(&path) {
                Err(e) => break Some(e),
                Ok(done) => ended_sooner.push(done.rounds),
            }
            if Instant::now() > bound {
                break None;
            }
        };
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let writes: u64 = writers.into_iter().map(|w| w.join().unwrap()).sum();
        (error, attempts, ended_sooner, writes)
    });
    println!(
        "{attempts} deletes against {writes} writes; the ones that ended before giving up, by rounds: {ended_sooner:?}"
    );
    match error {
        Some(Error::Reappearing { path: p, rounds }) => {
            assert_eq!((p.as_str(), rounds), (path.as_str(), ROUNDS));
        }
        Some(e) => panic!("{path}: expected Reappearing, got {e:?}"),
        None => panic!(
            "{path}: no delete gave up as Reappearing in 60 s ({attempts} deletes, {writes} writes, rounds {ended_sooner:?})"
        ),
    }
    // The writers stopped: the path goes from everywhere.
    router.delete(&path).unwrap();
    let left: Vec<&PathBuf> = places
        .iter()
        .filter(|p| fs::symlink_metadata(p).is_ok())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
