//! The moves' tests: drains, rebalance runs, give-backs, on a local file system.

use super::batch::{flush, Misplaced};
use super::give_back::CutShort;
use super::mover::Mover;
use super::*;
use crate::config::Config;
use crate::config::ABANDONED_AFTER;
use crate::plan::{Warning, WARNINGS_PER_KIND};
use crate::shard;
use crate::state::comparison::Comparison;
use crate::state::rebalancing::Cursor;
use efs_router::dir::{self, Flow, Pinned};
use efs_router::list::MountTargetList;
use efs_router::names::new_private_name;
use efs_router::names::Private;
use efs_router::relocation;
use std::fs;
use std::path::{Path, PathBuf};
use std::rc::Rc;
use std::time::SystemTime;
use std::time::{Duration, Instant};

fn put(path: &Path, data: &[u8], secs: u64) {
    fs::write(path, data).unwrap();
    let t = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000 + secs);
    let f = fs::File::options().write(true).open(path).unwrap();
    f.set_modified(t).unwrap();
}

/// A replace cut short: its private directory beside `home`'s name holds a version under
/// that name, with one link (a writer has replaced the source since).
fn cut_short_replace(dir: &Path, name: &str, data: &[u8], secs: u64) -> PathBuf {
    let qd = dir.join(new_private_name(Private::Moving));
    fs::create_dir(&qd).unwrap();
    put(&qd.join(name), data, secs);
    qd
}

/// [`holds_files`] with time enough.
fn holds(config: &Config, dir: &Path) -> bool {
    let until = Instant::now() + Duration::from_secs(60);
    holds_files(config, dir, until).unwrap() == Holds::Files
}

#[test]
fn a_drain_walk_out_of_time_holds_its_drain_and_says_so() {
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let watch = config.watch_path("/shards/use1-az2");
    for i in 0..600 {
        fs::create_dir_all(watch.join(format!("empty/{i}"))).unwrap();
    }
    // Empty, with the time to tell.
    let later = Instant::now() + Duration::from_secs(60);
    assert_eq!(holds_files(&config, &watch, later).unwrap(), Holds::Nothing);
    // Out of time before the end: not called empty.
    assert_eq!(
        holds_files(&config, &watch, Instant::now()).unwrap(),
        Holds::Unknown
    );
    // A file among them, with the time to find it.
    put(&watch.join("empty/599/a.json"), b"{}", 0);
    assert_eq!(holds_files(&config, &watch, later).unwrap(), Holds::Files);
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn config(mount: &Path) -> Config {
    let base = mount.to_str().unwrap().to_owned();
    Config::from_lookup(|k| match k {
        "EFS_FILE_SYSTEM_ID" => Some("fs-1".into()),
        "ECS_CLUSTER_NAME" => Some("c".into()),
        "ECS_SERVICE_NAME" => Some("s".into()),
        "EFS_MOUNT_PATH" => Some(base.clone()),
        _ => None,
    })
    .unwrap()
}

/// A rebalance over every shard of `list`, whose walk counts the router's names unchanged
/// for `abandoned_after` as abandoned (the age is the ctime's, which cannot be set back:
/// the tests' hour is zero).
fn rebalance_all(
    config: &Config,
    list: &MountTargetList,
    abandoned_after: Duration,
    warnings: &mut Vec<Warning>,
) -> Moves {
    run(config, list, None, u64::MAX, abandoned_after, warnings)
}

/// One rebalance run from `from`, looking at `cap` files at most.
fn capped_run(config: &Config, list: &MountTargetList, from: Option<&Cursor>, cap: u64) -> Moves {
    run(config, list, from, cap, ABANDONED_AFTER, &mut Vec::new())
}

/// One rebalance run over every shard of `list`, with time and moves enough.
fn run(
    config: &Config,
    list: &MountTargetList,
    from: Option<&Cursor>,
    max_visits: u64,
    abandoned_after: Duration,
    warnings: &mut Vec<Warning>,
) -> Moves {
    let roots: Vec<String> = list.shards().into_iter().map(|t| t.root).collect();
    let budget = Budget {
        max_moves: 1000,
        until: Instant::now() + Duration::from_secs(60),
        concurrency: 2,
    };
    let comparison = crate::state::comparison::comparison(list, None);
    let walk = Walk {
        from,
        max_visits,
        comparison: &comparison,
        abandoned_after,
    };
    rebalance(config, list, &roots, budget, walk, warnings).unwrap()
}

#[test]
fn a_capped_rebalance_resumes_after_any_name_and_ends_its_pass() {
    use std::os::unix::ffi::OsStrExt;
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let list = crate::state::rebalancing::tests::list(&[
        ("/", "use1-az1", 1),
        ("/shards/x", "use1-az2", 1),
    ]);
    let first = config.watch_path("/");
    // Before the misplaced files in the walk's order: a directory whose name is not UTF-8,
    // and a path longer than a position holds, each with more files than a run looks at.
    let foreign = first.join(std::ffi::OsStr::from_bytes(b"a\xff"));
    let long = first.join(format!("b{}/{}", "x".repeat(254), "y".repeat(255)));
    for dir in [&foreign, &long] {
        fs::create_dir_all(dir).unwrap();
        for i in 0..7 {
            put(&dir.join(format!("{i}.json")), b"{}", 0);
        }
    }
    // Misplaced files after them: every name that routes to the second shard.
    fs::create_dir_all(first.join("c")).unwrap();
    let shards = list.shards();
    let away: Vec<String> = (0..200)
        .map(|i| format!("c/{i}.json"))
        .filter(|p| {
            let logical = format!("{}/{p}", config.watch_dir);
            let i = efs_router::shard_index(&logical, &shards, list.strategy).unwrap();
            shards[i].root == "/shards/x"
        })
        .take(5)
        .collect();
    for p in &away {
        put(&first.join(p), b"{}", 0);
    }

    let (mut from, mut runs, mut seeks) = (None, 0, 0);
    loop {
        runs += 1;
        assert!(runs <= 20, "the pass never ends: at {from:?}");
        let moves = capped_run(&config, &list, from.as_ref(), 3);
        from = moves.resume_at;
        seeks += from.as_ref().is_some_and(|c| c.start().1.is_some()) as u32;
        if from.is_none() {
            break;
        }
    }
    // 19 files, each visited at most twice (once more in the shard it moved to), 3 a run,
    // and the run that ends the pass. Positions inside both directories were kept by
    // digest; before, each run went back to where it had started, for ever.
    assert!(runs <= (2 * 19usize).div_ceil(3) + 1, "{runs} runs");
    assert!(seeks >= 3, "{seeks} positions kept by digest");
    let second = config.watch_path("/shards/x");
    for p in &away {
        assert!(second.join(p).is_file(), "{p} not moved home");
    }
}

#[test]
fn a_position_kept_by_digest_and_gone_since_is_walked_again_from_its_directory() {
    use std::os::unix::ffi::OsStrExt;
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
    let first = config.watch_path("/");
    let dir = first.join("d");
    fs::create_dir_all(&dir).unwrap();
    for name in [&b"0\xff"[..], b"1\xff", b"2\xff", b"3\xff"] {
        put(&dir.join(std::ffi::OsStr::from_bytes(name)), b"{}", 0);
    }
    put(&first.join("e.json"), b"{}", 0);
    let moves = capped_run(&config, &list, None, 2);
    let at = moves.resume_at.unwrap();
    assert_eq!(at.start().0, Path::new("d"));
    // Met again: the next run goes on after it.
    let moves = capped_run(&config, &list, Some(&at), 2);
    assert_eq!(moves.visited, 2);
    let next = moves.resume_at.unwrap();
    assert_eq!(next.path, "e.json");
    // Gone: the next run visits nothing past it, and resumes at its directory's start.
    fs::remove_file(dir.join(std::ffi::OsStr::from_bytes(b"2\xff"))).unwrap();
    let moves = capped_run(&config, &list, Some(&at), 2);
    assert_eq!(moves.visited, 0);
    assert_eq!(moves.resume_at.unwrap().path, "d");
}

#[test]
fn a_cut_short_move_holds_a_drain_and_a_write_in_progress_does_not() {
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let watch = config.watch_path("/shards/use1-az2");
    let nested = watch.join("2026/12");
    fs::create_dir_all(&nested).unwrap();
    // A write in progress is the writer's, not data yet.
    put(
        &nested.join(new_private_name(Private::Temporary)),
        b"half",
        0,
    );
    assert!(!holds(&config, &watch));
    // A move cut short, nested: its private directory may hold the only copy.
    let qd = cut_short_replace(&nested, "device-1.json", b"only copy", 0);
    assert!(holds(&config, &watch));
    // Even empty, or a file under that name: what it holds cannot be known by its name.
    fs::remove_file(qd.join("device-1.json")).unwrap();
    assert!(holds(&config, &watch));
    fs::remove_dir(&qd).unwrap();
    fs::write(&qd, b"planted").unwrap();
    assert!(holds(&config, &watch));
    fs::remove_file(&qd).unwrap();
    assert!(!holds(&config, &watch));
}

#[test]
fn a_cut_short_replace_is_given_back_and_only_a_nameless_private_file_is_reported() {
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
    let watch = config.watch_path("/");
    fs::create_dir_all(&watch).unwrap();
    // Newer than home: replaces it. Older than home: dropped.
    put(&watch.join("a"), b"home, older", 10);
    cut_short_replace(&watch, "a", b"replacement", 20);
    put(&watch.join("b"), b"home, newer", 40);
    cut_short_replace(&watch, "b", b"an older copy", 20);
    // A replace's private file from before: one link, its name unknown.
    let legacy = watch.join(new_private_name(Private::Moving));
    put(&legacy, b"nameless", 20);
    // A write that died before its rename.
    put(
        &watch.join(new_private_name(Private::Temporary)),
        b"half",
        20,
    );

    // Not an hour old yet (a move may be using them): left alone.
    let mut warnings = Vec::new();
    let moves = rebalance_all(&config, &list, ABANDONED_AFTER, &mut warnings);
    assert_eq!(moves.abandoned_removed, 0);
    assert_eq!((warnings.len(), names(&watch).len()), (0, 6));

    // An hour later.
    let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
    assert_eq!(moves.abandoned_removed, 3, "{moves:?}");
    assert_eq!(fs::read(watch.join("a")).unwrap(), b"replacement");
    assert_eq!(fs::read(watch.join("b")).unwrap(), b"home, newer");
    let legacy_name = legacy.file_name().unwrap().to_str().unwrap();
    assert_eq!(names(&watch), [legacy_name, "a", "b"]);
    let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
    assert_eq!(kinds, ["cut_short_move"]);
    assert!(
        matches!(&warnings[0], Warning::CutShortMove { path } if *path == legacy.display().to_string())
    );

    // The next runs: the directories are gone; the nameless file is counted, not named
    // again, and neither its bytes nor its time changed.
    let before = fs::metadata(&legacy).unwrap().modified().unwrap();
    for _ in 0..2 {
        warnings.clear();
        let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
        assert_eq!((moves.abandoned_removed, moves.kept_hidden), (0, 1));
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    assert_eq!(fs::metadata(&legacy).unwrap().modified().unwrap(), before);
}

#[test]
fn what_a_give_back_leaves_is_named_once_and_counted_on_every_pass() {
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
    let watch = config.watch_path("/");
    fs::create_dir_all(&watch).unwrap();
    // A cut-short replace holding a newer version it can give back, and a link it never
    // places.
    put(&watch.join("a"), b"older", 0);
    let pd = cut_short_replace(&watch, "a", b"a", 10);
    std::os::unix::fs::symlink("/etc/passwd", pd.join("b")).unwrap();
    let mut warnings = Vec::new();
    let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
    assert_eq!((moves.abandoned_removed, moves.kept_hidden), (1, 1));
    let named: Vec<_> = warnings
        .iter()
        .map(|w| match w {
            Warning::CutShortMove { path } => path.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(named, [pd.join("b").display().to_string()]);
    assert_eq!(fs::read(watch.join("a")).unwrap(), b"a");
    // Later passes count it and name nothing; the link is still there, unfollowed.
    for _ in 0..2 {
        warnings.clear();
        let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
        assert_eq!(moves.kept_hidden, 1);
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    assert!(fs::symlink_metadata(pd.join("b")).unwrap().is_symlink());
}

#[test]
fn a_cut_short_move_of_a_path_deleted_since_is_not_brought_back() {
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let list = crate::state::rebalancing::tests::list(&[
        ("/", "use1-az1", 1),
        ("/shards/x", "use1-az2", 1),
    ]);
    let (first, second) = (config.watch_path("/"), config.watch_path("/shards/x"));
    let nested = first.join("2026/12");
    fs::create_dir_all(&nested).unwrap();
    fs::create_dir_all(second.join("2026/12")).unwrap();
    // Moves cut short in the first shard's nested directory, each after it had linked its
    // file into the second: one whose path a client has deleted since (the link at home
    // gone), one whose path is still there.
    for name in ["deleted", "kept"] {
        let pd = cut_short_replace(&nested, name, name.as_bytes(), 20);
        fs::hard_link(pd.join(name), second.join("2026/12").join(name)).unwrap();
    }
    fs::remove_file(second.join("2026/12/deleted")).unwrap();

    let mut warnings = Vec::new();
    let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
    assert_eq!(moves.abandoned_removed, 2, "{moves:?}");
    assert!(warnings.is_empty(), "{warnings:?}");
    let everywhere = [names(&nested), names(&second.join("2026/12"))].concat();
    assert!(
        !everywhere.contains(&"deleted".to_owned()),
        "{everywhere:?}"
    );
    assert!(everywhere.contains(&"kept".to_owned()), "{everywhere:?}");
    assert!(
        everywhere.iter().all(|n| !n.starts_with(".efs-router-")),
        "{everywhere:?}"
    );
}

#[test]
fn a_drain_gives_back_an_abandoned_move_and_names_one_that_holds_it() {
    let mount = tempfile::tempdir().unwrap();
    let mut config = config(mount.path());
    let mut list = crate::state::rebalancing::tests::list(&[
        ("/", "use1-az1", 1),
        ("/shards/x", "use1-az2", 1),
    ]);
    list.mount_targets[1].draining = true;
    let (home, drained) = (config.watch_path("/"), config.watch_path("/shards/x"));
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(&drained).unwrap();
    // A move out of the draining shard cut short in its retire: the file it linked home,
    // and a writer's newer version its rename took, the only copy of that version.
    put(&home.join("a"), b"linked", 10);
    let pd = cut_short_replace(&drained, "b", b"the writer's, newest", 30);
    fs::hard_link(home.join("a"), pd.join("a")).unwrap();
    put(&home.join("b"), b"older", 20);
    let budget = || Budget {
        max_moves: 1000,
        until: Instant::now() + Duration::from_secs(60),
        concurrency: 2,
    };
    let roots = ["/shards/x".to_owned()];

    // Not abandoned yet: it holds the drain, and the drain says so.
    let mut warnings = Vec::new();
    drain_shards(&config, &list, &roots, budget(), &mut warnings).unwrap();
    let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
    assert_eq!(kinds, ["drain_held_by_move"]);
    assert!(holds(&config, &drained));

    // Once abandoned, the drain gives it back and moves it home: the newest version wins.
    config.abandoned_after = Duration::ZERO;
    for _ in 0..2 {
        warnings.clear();
        drain_shards(&config, &list, &roots, budget(), &mut warnings).unwrap();
        assert!(warnings.is_empty(), "{warnings:?}");
    }
    assert!(!holds(&config, &drained));
    assert_eq!(names(&home), ["a", "b"]);
    assert_eq!(fs::read(home.join("b")).unwrap(), b"the writer's, newest");
    assert_eq!(fs::read(home.join("a")).unwrap(), b"linked");
}

#[test]
fn a_directory_swapped_for_a_link_after_the_walk_moves_nothing_of_its_target() {
    let mount = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let (home, shard) = (config.watch_path("/"), config.watch_path("/shards/x"));
    fs::create_dir_all(home.join("sub")).unwrap();
    fs::create_dir_all(shard.join("sub")).unwrap();
    put(&shard.join("sub/a"), b"misplaced", 10);
    put(&victim.path().join("a"), b"someone else's", 10);
    // The walk met `sub/a` and pinned `sub`; then a task swapped `sub` for a link to
    // another directory holding a file of the same name.
    let fd = shard::open_dir(&config, &shard.join("sub"), false).unwrap();
    let from = Rc::new(Pinned::own(fd, &shard.join("sub")).unwrap());
    fs::rename(shard.join("sub"), shard.join("was-sub")).unwrap();
    std::os::unix::fs::symlink(victim.path(), shard.join("sub")).unwrap();
    let mut batch = vec![Misplaced {
        from,
        name: "a".into(),
        home: home.join("sub/a"),
    }];
    let budget = Budget {
        max_moves: 10,
        until: Instant::now() + Duration::from_secs(60),
        concurrency: 1,
    };
    let mut moves = Moves::default();
    flush(&config, &mut batch, budget, &mut moves).unwrap();
    assert_eq!(moves.moved, 1, "{moves:?}");
    // What moved is the file the walk saw; the link's target is untouched.
    assert_eq!(fs::read(home.join("sub/a")).unwrap(), b"misplaced");
    assert_eq!(names(victim.path()), ["a"]);
    assert_eq!(
        fs::read(victim.path().join("a")).unwrap(),
        b"someone else's"
    );
    assert!(names(&shard.join("was-sub")).is_empty());
}

#[test]
fn a_cut_short_move_swapped_for_a_link_is_given_back_from_where_the_walk_saw_it() {
    let d = tempfile::tempdir().unwrap();
    let victim = tempfile::tempdir().unwrap();
    let dir = d.path().join("shard");
    fs::create_dir(&dir).unwrap();
    let pd = cut_short_replace(&dir, "a", b"taken", 10);
    put(&victim.path().join("a"), b"someone else's", 20);
    let name = pd.file_name().unwrap().to_os_string();
    let open = |p: &Path| efs_router::dir::open_beneath(p, "", false).unwrap();
    let pinned_pd = Pinned::own(open(&pd), &pd).unwrap();
    let pinned_dir = Pinned::own(open(&dir), &dir).unwrap();
    // A task moves the private directory away and links its name to another directory.
    fs::rename(&pd, d.path().join("moved")).unwrap();
    std::os::unix::fs::symlink(victim.path(), &pd).unwrap();
    let (pd_path, dir_path) = (pinned_pd.path(), pinned_dir.path());
    let r = relocation::recover_pinned(pd_path, dir_path, &name, None, |_| Ok(true));
    // The copy the walk saw is given back (the link in its place is not removed: rmdir
    // refuses it, and says so); the link's target is untouched.
    assert!(r.is_err(), "{r:?}");
    assert_eq!(fs::read(dir.join("a")).unwrap(), b"taken");
    assert_eq!(names(victim.path()), ["a"]);
    assert_eq!(
        fs::read(victim.path().join("a")).unwrap(),
        b"someone else's"
    );
    assert!(names(&d.path().join("moved")).is_empty());
}

#[test]
fn a_drain_names_what_it_will_never_move_and_holds() {
    use std::os::unix::ffi::OsStrExt;
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let mut list = crate::state::rebalancing::tests::list(&[
        ("/", "use1-az1", 1),
        ("/shards/x", "use1-az2", 1),
    ]);
    list.mount_targets[1].draining = true;
    let (home, drained) = (config.watch_path("/"), config.watch_path("/shards/x"));
    fs::create_dir_all(&home).unwrap();
    fs::create_dir_all(drained.join("sub")).unwrap();
    put(&drained.join("sub/a.json"), b"moves", 10);
    std::os::unix::fs::symlink("/etc", drained.join("link")).unwrap();
    rustix::fs::mknodat(
        rustix::fs::CWD,
        drained.join("fifo"),
        rustix::fs::FileType::Fifo,
        rustix::fs::Mode::from_raw_mode(0o600),
        0,
    )
    .unwrap();
    put(
        &drained.join(std::ffi::OsStr::from_bytes(b"bad-\xff")),
        b"unroutable",
        10,
    );
    let budget = Budget {
        max_moves: 1000,
        until: Instant::now() + Duration::from_secs(60),
        concurrency: 2,
    };
    let mut warnings = Vec::new();
    let roots = ["/shards/x".to_owned()];
    let moves = drain_shards(&config, &list, &roots, budget, &mut warnings).unwrap();
    assert_eq!(moves.moved, 1, "{moves:?}");
    assert_eq!(fs::read(home.join("sub/a.json")).unwrap(), b"moves");
    let mut held: Vec<_> = warnings
        .iter()
        .map(|w| match w {
            Warning::DrainHeldByEntry { path, what } => {
                let name = Path::new(path).file_name().unwrap().to_string_lossy();
                (name.into_owned(), *what)
            }
            other => panic!("{other:?}"),
        })
        .collect();
    held.sort();
    let names: Vec<_> = held.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["bad-\u{fffd}", "fifo", "link"]);
    assert!(holds(&config, &drained));
}

#[test]
fn abandoned_names_behind_a_planted_link_are_never_removed() {
    let mount = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let list = crate::state::rebalancing::tests::list(&[
        ("/", "use1-az1", 1),
        ("/shards/x", "use1-az2", 1),
    ]);
    fs::create_dir_all(config.watch_path("/")).unwrap();
    // The second shard's watched directory is a link someone planted, to a directory
    // holding what looks like a router's abandoned write and a cut-short move.
    let planted = config.watch_path("/shards/x");
    fs::create_dir_all(planted.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(outside.path(), &planted).unwrap();
    let tmp = outside.path().join(new_private_name(Private::Temporary));
    put(&tmp, b"not the router's", 20);
    let pd = cut_short_replace(outside.path(), "c", b"not the router's either", 20);
    // And a nested one: a link to the outside inside the first shard.
    let nested = config.watch_path("/").join("batch");
    std::os::unix::fs::symlink(outside.path(), &nested).unwrap();

    let mut warnings = Vec::new();
    let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
    assert_eq!(moves.abandoned_removed, 0, "{moves:?}");
    // The planted shard is not walked (it fails), the nested link is skipped.
    assert_eq!((moves.failed, moves.skipped), (1, 1), "{moves:?}");
    assert!(tmp.exists());
    assert!(pd.join("c").exists());
    assert!(!outside.path().join("c").exists());
    let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
    assert!(kinds.is_empty(), "{kinds:?}");
}

#[test]
fn a_move_refused_at_home_leaves_a_file_away_and_counts_as_failed() {
    use std::os::unix::fs::{chown, symlink};
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let list = crate::state::rebalancing::tests::list(&[
        ("/", "use1-az1", 1),
        ("/shards/x", "use1-az2", 1),
    ]);
    let (first, second) = (config.watch_path("/"), config.watch_path("/shards/x"));
    fs::create_dir_all(&first).unwrap();
    fs::create_dir_all(&second).unwrap();
    // Names whose home is the second shard, each in the first.
    let shards = list.shards();
    let away: Vec<String> = (0..200)
        .map(|i| format!("{i}.json"))
        .filter(|p| {
            let logical = format!("{}/{p}", config.watch_dir);
            let i = efs_router::shard_index(&logical, &shards, list.strategy).unwrap();
            shards[i].root == "/shards/x"
        })
        .take(4)
        .collect();
    for p in &away[..3] {
        put(&first.join(p), b"{}", 0);
    }
    // Home holds a link for the first, another owner's file for the second; the third
    // moves. The fourth is itself a link in the first shard: not data, skipped.
    symlink("elsewhere", second.join(&away[0])).unwrap();
    put(&second.join(&away[1]), b"{}", 5);
    chown(second.join(&away[1]), Some(4321), Some(4321)).unwrap();
    symlink("elsewhere", first.join(&away[3])).unwrap();

    let moves = rebalance_all(&config, &list, ABANDONED_AFTER, &mut Vec::new());
    // Two regular files are still away from home: the pass that saw them is not clean.
    // The two links the walk met (the fourth, and the first's at home) are skipped.
    assert_eq!(
        (moves.moved, moves.skipped, moves.failed),
        (1, 2, 2),
        "{moves:?}"
    );
    assert!(first.join(&away[0]).is_file() && first.join(&away[1]).is_file());
    assert!(second.join(&away[2]).is_file());
}

/// One rebalance run over every shard of `list`, comparing as `comparison` says.
fn compared_run(config: &Config, list: &MountTargetList, comparison: &Comparison) -> Moves {
    let roots: Vec<String> = list.shards().into_iter().map(|t| t.root).collect();
    let budget = Budget {
        max_moves: 1000,
        until: Instant::now() + Duration::from_secs(60),
        concurrency: 2,
    };
    let walk = Walk {
        from: None,
        max_visits: u64::MAX,
        comparison,
        abandoned_after: ABANDONED_AFTER,
    };
    rebalance(config, list, &roots, budget, walk, &mut Vec::new()).unwrap()
}

#[test]
fn a_pass_against_added_shards_closes_nothing_and_a_full_one_finds_a_stray() {
    use crate::state::comparison::comparison;
    use crate::state::rebalancing::{tests::list, Rebalancing, ShardSet};
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let old = list(&[("/", "use1-az1", 1), ("/shards/x", "use1-az2", 1)]);
    let grown = list(&[
        ("/", "use1-az1", 1),
        ("/shards/x", "use1-az2", 1),
        ("/shards/y", "use1-az3", 1),
    ]);
    for root in ["/", "/shards/x", "/shards/y"] {
        fs::create_dir_all(config.watch_path(root)).unwrap();
    }
    // A stray: a file in `/` whose home is `/shards/x`, put there since the last clean pass
    // by a writer the fleet rule cannot see. `/shards/y`, added since, does not outrank `/`
    // for it.
    let stray = (0..500)
        .map(|i| format!("{i}.json"))
        .find(|p| {
            let logical = format!("{}/{p}", config.watch_dir);
            let path = efs_router::LogicalPath::parse(&logical).unwrap();
            let score = |root: &str| efs_router::rendezvous_score(root, &path);
            score("/shards/x") > score("/") && score("/") > score("/shards/y")
        })
        .unwrap();
    put(&config.watch_path("/").join(&stray), b"{}", 0);
    let record = Rebalancing {
        balanced: ShardSet::of(&old),
        ..Rebalancing::default()
    };
    // The pass after growth compares a file in an old shard with the added one only: it
    // does not see the stray, and its clean end records nothing that closes placements.
    let added = comparison(&grown, record.balanced.as_ref());
    assert_eq!(added.name(), "added_shards");
    let moves = compared_run(&config, &grown, &added);
    assert_eq!((moves.moved, moves.remaining, moves.failed), (0, 0, 0));
    let record = record.after_run(&grown, moves.resume_at, true);
    assert_ne!(record.balanced, ShardSet::of(&grown));
    // The next pass compares fully: it moves the stray home, and its clean end closes.
    let full = comparison(&grown, record.balanced.as_ref());
    assert_eq!(full.name(), "full");
    let moves = compared_run(&config, &grown, &full);
    assert_eq!((moves.moved, moves.remaining, moves.failed), (1, 0, 0));
    assert!(config.watch_path("/shards/x").join(&stray).is_file());
    let record = record.after_run(&grown, moves.resume_at, true);
    assert_eq!(record.balanced, ShardSet::of(&grown));
}

/// Runs the test `name` (this one) again in a child process whose descriptors are
/// Lambda's (`RLIMIT_NOFILE` 1,024), and there runs `body`: the limit is the process's,
/// so it is not set in the process that runs the other tests at once.
fn with_lambdas_descriptors(name: &str, body: impl FnOnce()) {
    const CHILD: &str = "EFS_TEST_LAMBDAS_DESCRIPTORS";
    if std::env::var_os(CHILD).is_some() {
        let limit = libc::rlimit {
            rlim_cur: 1024,
            rlim_max: 1024,
        };
        // SAFETY: setrlimit reads the struct it is given, nothing else.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &limit) }, 0);
        return body();
    }
    let status = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--test-threads=1", "--nocapture"])
        .env(CHILD, "1")
        .status()
        .unwrap();
    assert!(
        status.success(),
        "{name} under RLIMIT_NOFILE 1024: {status}"
    );
}

/// A mount in memory where the host has one: planted trees take seconds there.
fn roomy_mount() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm").unwrap_or_else(|_| tempfile::tempdir().unwrap())
}

#[test]
fn six_hundred_cut_short_moves_are_given_back_within_lambdas_descriptors() {
    let name =
        "moves::tests::six_hundred_cut_short_moves_are_given_back_within_lambdas_descriptors";
    with_lambdas_descriptors(name, || {
        let mount = roomy_mount();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
        let watch = config.watch_path("/");
        // Each in a directory of its own, as a task would plant them, or moves die.
        for i in 0..600 {
            let dir = watch.join(format!("{i:03}"));
            fs::create_dir_all(&dir).unwrap();
            put(&dir.join("a"), b"older", 0);
            cut_short_replace(&dir, "a", format!("{i}").as_bytes(), 10);
        }
        let mut warnings = Vec::new();
        let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
        assert_eq!(
            (moves.abandoned_removed, moves.failed),
            (600, 0),
            "{moves:?}"
        );
        assert_eq!((moves.remaining, moves.kept_hidden), (0, 0), "{moves:?}");
        assert!(warnings.is_empty(), "{warnings:?}");
        for i in 0..600 {
            let dir = watch.join(format!("{i:03}"));
            assert_eq!(names(&dir), ["a"]);
            assert_eq!(fs::read(dir.join("a")).unwrap(), format!("{i}").as_bytes());
        }
    });
}

#[test]
fn a_planted_private_directory_of_200000_names_is_named_by_a_count() {
    let name = "moves::tests::a_planted_private_directory_of_200000_names_is_named_by_a_count";
    with_lambdas_descriptors(name, || {
        let mount = roomy_mount();
        let config = config(mount.path());
        let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
        let watch = config.watch_path("/");
        fs::create_dir_all(&watch).unwrap();
        // A move's private directory planted with links, which no move gives back, and
        // one version it does give back, newer than home's.
        put(&watch.join("a"), b"older", 0);
        let pd = cut_short_replace(&watch, "a", b"only copy", 10);
        for i in 0..200_000 {
            std::os::unix::fs::symlink("/etc/passwd", pd.join(format!("l{i}"))).unwrap();
        }
        let mut warnings = Vec::new();
        let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
        assert_eq!((moves.abandoned_removed, moves.kept_hidden), (1, 200_000));
        assert_eq!(fs::read(watch.join("a")).unwrap(), b"only copy");
        let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
        let mut wanted = vec!["cut_short_move"; WARNINGS_PER_KIND];
        wanted.push("warnings_capped");
        assert_eq!(kinds, wanted);
        let left_out = (200_000 - WARNINGS_PER_KIND) as u64;
        assert!(
            matches!(warnings.last(), Some(Warning::WarningsCapped { kind: "cut_short_move", left_out: n }) if *n == left_out),
            "{:?}",
            warnings.last()
        );
    });
}

#[test]
fn entries_left_past_the_warnings_cap_are_named_by_a_later_pass() {
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
    let watch = config.watch_path("/");
    fs::create_dir_all(&watch).unwrap();
    let pd = watch.join(new_private_name(Private::Moving));
    fs::create_dir(&pd).unwrap();
    for i in 0..WARNINGS_PER_KIND + 5 {
        std::os::unix::fs::symlink("/etc/passwd", pd.join(format!("l{i}"))).unwrap();
    }
    // Not all named: the private directory is not marked, so each pass names again.
    for _ in 0..2 {
        let mut warnings = Vec::new();
        let moves = rebalance_all(&config, &list, Duration::ZERO, &mut warnings);
        assert_eq!(moves.kept_hidden, (WARNINGS_PER_KIND + 5) as u64);
        let kinds: Vec<_> = warnings.iter().map(Warning::kind).collect();
        let mut wanted = vec!["cut_short_move"; WARNINGS_PER_KIND];
        wanted.push("warnings_capped");
        assert_eq!(kinds, wanted);
        assert_eq!(
            warnings.last(),
            Some(&Warning::WarningsCapped {
                kind: "cut_short_move",
                left_out: 5
            })
        );
    }
}

#[test]
fn a_give_back_out_of_time_waits_for_the_next_run_and_leaves_the_pass_unclean() {
    let mount = tempfile::tempdir().unwrap();
    let config = config(mount.path());
    let list = crate::state::rebalancing::tests::list(&[("/", "use1-az1", 1)]);
    let watch = config.watch_path("/");
    fs::create_dir_all(&watch).unwrap();
    let pd = cut_short_replace(&watch, "a", b"only copy", 10);
    let mut mover = Mover::new(
        &config,
        &list,
        Budget {
            max_moves: 10,
            until: Instant::now(),
            concurrency: 1,
        },
        None,
        u64::MAX,
    );
    let fd = shard::open_dir(&config, &watch, false).unwrap();
    let mut met = None;
    dir::walk_at(&fd, |entry| {
        met = Some(CutShort::pin(&entry, &watch.join(entry.path)).unwrap());
        Flow::Stop
    })
    .unwrap();
    mover.cut_short.push(met.unwrap());
    mover.give_back();
    assert_eq!(
        (mover.moves.remaining, mover.moves.abandoned_removed),
        (1, 0)
    );
    assert_eq!(fs::read(pd.join("a")).unwrap(), b"only copy");
}
