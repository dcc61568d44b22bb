//! Round trips over a network file system, counted on the FUSE test bed (`netfs`): what
//! counting, moving and the client's operations cost, by kind of operation. Counts are
//! deterministic (the test bed runs with no delay here); times are never asserted.
//! Each test prints why and returns when FUSE cannot be mounted on this machine.

use efs_router::dir::{count_files, for_each_file};
use efs_router::relocation::relocate_many;
use efs_router::{relocate, Layout, MountTargetList, Place, Relocation, Router, Strategy, Target};
use netfs::{Counts, TestBed};
use std::fs;
use std::path::{Path, PathBuf};

const NAMES_PER_READDIR: u64 = 544;

fn assert_only(counts: &Counts, allowed: &[&str]) {
    let bookkeeping = [
        "ROUND_TRIPS",
        "MAX_IN_FLIGHT",
        "READDIR_REQUESTS",
        "OPENDIR",
        "RELEASEDIR",
        "RELEASE",
        "FLUSH",
        "FORGET",
        "BATCH_FORGET",
    ];
    for (kind, n) in &counts.0 {
        assert!(
            *n == 0 || allowed.contains(&kind.as_str()) || bookkeeping.contains(&kind.as_str()),
            "unexpected {kind} x{n}: {counts:?}"
        );
    }
}

#[test]
fn counting_reads_names_only_no_lookup_or_getattr_per_entry() {
    let Some(bed) = TestBed::new("counting") else {
        return;
    };
    let dir = bed.backing.path().join("data/analysis");
    fs::create_dir_all(&dir).unwrap();
    for i in 0..5000 {
        fs::write(dir.join(format!("device-{i:05}-1700000000.json")), b"").unwrap();
    }
    fs::create_dir(dir.join("sub")).unwrap();
    let through = bed.path().join("data/analysis");
    // The entries come without a type (DT_UNKNOWN), as over NFS; the subdirectory counts as a
    // file, which is the documented price of never stating an entry.
    bed.fs.reset();
    assert_eq!(count_files(&through).unwrap(), Some(5001));
    let c = bed.fs.counts();
    println!("count_files of 5,000 files: {}", c.summary());
    // ceil((5001 names + . and ..) / 544) = 10 replies.
    let floor = 5003u64.div_ceil(NAMES_PER_READDIR);
    assert!(
        c.get("READDIR") >= floor && c.get("READDIR") <= floor + 1,
        "{c:?}"
    );
    // The path's two directories at most, never one per entry.
    assert!(c.get("LOOKUP") <= 2, "{c:?}");
    assert!(c.get("GETATTR") <= 2, "{c:?}");
    assert_only(&c, &["READDIR", "LOOKUP", "GETATTR"]);

    bed.fs.reset();
    let mut names = 0;
    assert!(for_each_file(&through, |_| {
        names += 1;
        true
    })
    .unwrap());
    assert_eq!(names, 5001);
    let c = bed.fs.counts();
    assert!(
        c.get("READDIR") <= floor + 1 && c.get("LOOKUP") <= 2,
        "{c:?}"
    );
    assert_only(&c, &["READDIR", "LOOKUP", "GETATTR"]);
}

#[test]
fn counting_rounds_up_per_reply_and_shard_sizes_do_not_change_lookups() {
    let Some(bed) = TestBed::new("counting sizes") else {
        return;
    };
    for (n, name) in [(0usize, "empty"), (542, "one-reply"), (20_000, "many")] {
        let dir = bed.backing.path().join(name);
        fs::create_dir(&dir).unwrap();
        for i in 0..n {
            fs::write(dir.join(format!("f{i}")), b"").unwrap();
        }
        bed.fs.reset();
        assert_eq!(count_files(&bed.path().join(name)).unwrap(), Some(n as u64));
        let c = bed.fs.counts();
        let floor = (n as u64 + 2).div_ceil(NAMES_PER_READDIR);
        assert!(
            c.get("READDIR") >= floor && c.get("READDIR") <= floor + 1,
            "{name}: {c:?}"
        );
        assert!(c.get("LOOKUP") <= 1, "{name}: {c:?}");
    }
}

/// What a move costs on the test bed: the source's directory revalidated and the source looked
/// at (a LOOKUP), LINK, the retire (MKDIR of a private directory beside the source, a READDIR
/// of it as it is opened, checked empty, RENAME of the source into it, a listing of it: READDIR
/// and the GETATTR of its open, UNLINK, RMDIR), and the LOOKUPs the kernel makes for them
/// (names are never cached on the test bed). The listing is what makes the retire right over
/// NFS, where a look at the renamed name answers from the client's cache (docs/design.md fact
/// 13). (Before the NFS tier: 10 round trips, a RENAME to a private name, an `lstat` of it, an
/// UNLINK; before that, link then unlink, 5, which could unlink a version a writer had just
/// renamed over the source.)
const MOVE_ROUND_TRIPS: u64 = 15;

/// The retire's operations besides LOOKUPs: what every move that removes its source sends.
const RETIRE: &[&str] = &[
    "MKDIR", "RENAME", "READDIR", "GETATTR", "UNLINK", "RMDIR", "LOOKUP",
];

fn allowed<'a>(more: &[&'a str]) -> Vec<&'a str> {
    RETIRE.iter().copied().chain(more.iter().copied()).collect()
}

#[test]
fn a_move_is_one_link_one_rename_one_unlink_and_the_kernels_lookups() {
    let Some(bed) = TestBed::new("move") else {
        return;
    };
    for d in ["from", "home"] {
        fs::create_dir(bed.backing.path().join(d)).unwrap();
        fs::metadata(bed.path().join(d)).unwrap(); // the directories' names are cached
    }
    fs::write(bed.backing.path().join("from/f"), b"x").unwrap();
    let (src, dst) = (bed.path().join("from/f"), bed.path().join("home/f"));
    bed.fs.reset();
    assert_eq!(relocate(&src, &dst).unwrap(), Relocation::Moved);
    let c = bed.fs.counts();
    println!("relocate, moved: {}", c.summary());
    assert_eq!(
        (c.get("LINK"), c.get("RENAME"), c.get("UNLINK")),
        (1, 1, 1),
        "{c:?}"
    );
    // The private directory made, read once as it is opened (the check that it is the one
    // just made: empty), listed once after the rename, removed.
    assert_eq!(
        (c.get("MKDIR"), c.get("READDIR"), c.get("RMDIR")),
        (1, 2, 1),
        "{c:?}"
    );
    assert!(c.get("LOOKUP") <= 8, "{c:?}");
    assert!(c.get("GETATTR") <= 1, "{c:?}");
    assert!(c.round_trips() <= MOVE_ROUND_TRIPS, "{c:?}");
    assert_only(&c, &allowed(&["LINK"]));
    assert_eq!(fs::read(bed.backing.path().join("home/f")).unwrap(), b"x");
    assert!(!bed.backing.path().join("from/f").exists());

    // The destination newer: the source is the older copy, removed; no link is even sent.
    fs::write(bed.backing.path().join("from/g"), b"old").unwrap();
    set_mtime(&bed.backing.path().join("from/g"), 10);
    fs::write(bed.backing.path().join("home/g"), b"new").unwrap();
    set_mtime(&bed.backing.path().join("home/g"), 20);
    bed.fs.reset();
    assert_eq!(
        relocate(&bed.path().join("from/g"), &bed.path().join("home/g")).unwrap(),
        Relocation::DroppedOlder
    );
    let c = bed.fs.counts();
    println!("relocate, destination newer: {}", c.summary());
    assert_eq!(
        (c.get("LINK"), c.get("RENAME"), c.get("UNLINK")),
        (0, 1, 1),
        "{c:?}"
    );
    assert!(c.round_trips() <= MOVE_ROUND_TRIPS, "{c:?}");
    assert_only(&c, &allowed(&[]));
    assert!(!bed.backing.path().join("from/g").exists());
    assert_eq!(fs::read(bed.backing.path().join("home/g")).unwrap(), b"new");

    // The source newer: it replaces the destination.
    fs::write(bed.backing.path().join("from/h"), b"new").unwrap();
    set_mtime(&bed.backing.path().join("from/h"), 20);
    fs::write(bed.backing.path().join("home/h"), b"old").unwrap();
    set_mtime(&bed.backing.path().join("home/h"), 10);
    bed.fs.reset();
    assert_eq!(
        relocate(&bed.path().join("from/h"), &bed.path().join("home/h")).unwrap(),
        Relocation::ReplacedOlder
    );
    let c = bed.fs.counts();
    println!("relocate, source newer: {}", c.summary());
    // The link into a private directory beside home, the rename over home, then the source
    // retired.
    assert_eq!(
        (c.get("LINK"), c.get("RENAME"), c.get("UNLINK")),
        (1, 2, 1),
        "{c:?}"
    );
    assert_only(&c, &allowed(&["LINK"]));
    assert!(!bed.backing.path().join("from/h").exists());
    assert_eq!(fs::read(bed.backing.path().join("home/h")).unwrap(), b"new");
    assert_eq!(
        count_files(&bed.backing.path().join("home")).unwrap(),
        Some(3)
    );
    assert_eq!(
        fs::read_dir(bed.backing.path().join("from"))
            .unwrap()
            .count(),
        0
    );
}

fn set_mtime(path: &Path, secs: u64) {
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
fn moves_at_once_share_their_private_directories() {
    let Some(bed) = TestBed::new("many moves") else {
        return;
    };
    let homes = ["home-a", "home-b", "home-c"];
    for d in ["from"].iter().chain(&homes) {
        fs::create_dir(bed.backing.path().join(d)).unwrap();
        fs::metadata(bed.path().join(d)).unwrap();
    }
    let n = 300;
    let pairs: Vec<(PathBuf, PathBuf)> = (0..n)
        .map(|i| {
            fs::write(bed.backing.path().join(format!("from/f{i}")), i.to_string()).unwrap();
            (
                bed.path().join(format!("from/f{i}")),
                bed.path().join(format!("{}/f{i}", homes[i % 3])),
            )
        })
        .collect();
    bed.fs.reset();
    let outcomes = relocate_many(&pairs, 16, None);
    assert!(outcomes
        .iter()
        .all(|o| matches!(o, Some(Ok(Relocation::Moved)))));
    let c = bed.fs.counts();
    println!("relocate_many, {n} moves at 16: {}", c.summary());
    assert_eq!(c.get("LINK"), n as u64, "{c:?}");
    assert_eq!(c.get("RENAME"), n as u64, "{c:?}");
    assert_eq!(c.get("UNLINK"), n as u64, "{c:?}");
    // One private directory per worker for the one source directory, made, read once as it is
    // opened (the check that it is the one just made: empty), listed once per 64 sources it
    // took and removed. Workers take about 19 each, but the pool hands out work as they ask,
    // so on a loaded machine one may take 64 or more and list twice.
    let (mkdir, readdir, rmdir) = (c.get("MKDIR"), c.get("READDIR"), c.get("RMDIR"));
    assert!((1..=16).contains(&mkdir), "{c:?}");
    assert_eq!(rmdir, mkdir, "{c:?}");
    assert!(
        (2 * mkdir..=2 * mkdir + n as u64 / 64).contains(&readdir),
        "{c:?}"
    );
    // Under the source directory's lock: each move's RENAME, and the shared MKDIRs and RMDIRs.
    assert!(c.get("RENAME") + mkdir + rmdir <= n as u64 + 32, "{c:?}");
    // Besides the test bed's LOOKUPs (it caches no name): LINK, RENAME, UNLINK, and the
    // directories' share: MKDIR, RMDIR, and a GETATTR and a READDIR per listing.
    assert!(
        c.round_trips() - c.get("LOOKUP") <= 3 * n as u64 + 2 * mkdir + 2 * readdir,
        "{c:?}"
    );
    assert_only(&c, &allowed(&["LINK"]));
    for (i, home) in (0..n).map(|i| (i, homes[i % 3])) {
        let moved = bed.backing.path().join(format!("{home}/f{i}"));
        assert_eq!(fs::read_to_string(moved).unwrap(), i.to_string());
    }
    assert_eq!(
        count_files(&bed.backing.path().join("from")).unwrap(),
        Some(0)
    );
}

#[test]
fn rename_without_replacing_is_refused_as_nfs_refuses_it() {
    let Some(bed) = TestBed::new("renameat2") else {
        return;
    };
    fs::write(bed.backing.path().join("a"), b"x").unwrap();
    let r = rustix::fs::renameat_with(
        rustix::fs::CWD,
        bed.path().join("a"),
        rustix::fs::CWD,
        bed.path().join("b"),
        rustix::fs::RenameFlags::NOREPLACE,
    );
    assert_eq!(r, Err(rustix::io::Errno::INVAL));
}

fn target(i: usize, root: &str) -> Target {
    Target::new(format!("fsmt-{i}"), format!("10.0.{i}.4"), root)
}

const THREE: &[&str] = &["/", "/shards/use1-az4", "/shards/use1-az1"];

/// A router over the mount, every shard's `data/analysis` made and its name cached.
fn router(bed: &TestBed) -> Router {
    let list = MountTargetList {
        open: None,
        scope: None,
        mount_targets: THREE
            .iter()
            .enumerate()
            .map(|(i, r)| target(i, r))
            .collect(),
        strategy: Strategy::Rendezvous,
    };
    for r in THREE {
        let d = Path::new(r.trim_start_matches('/')).join("data/analysis");
        fs::create_dir_all(bed.backing.path().join(&d)).unwrap();
        fs::metadata(bed.path().join(&d)).unwrap();
    }
    Router::new(list, Layout::single_mount(bed.path())).unwrap()
}

/// A logical path whose home is shard `home`.
fn path_homed_at(router: &Router, home: usize, tag: &str) -> String {
    (0..)
        .map(|i| format!("data/analysis/device-{tag}{i}-1700000000.json"))
        .find(|p| router.resolve(p).unwrap().index == home)
        .unwrap()
}

/// The file `path` put straight into shard `shard`'s backing directory.
fn put(bed: &TestBed, shard: usize, path: &str, data: &[u8]) {
    let p = bed
        .backing
        .path()
        .join(THREE[shard].trim_start_matches('/'))
        .join(path);
    fs::write(p, data).unwrap();
}

#[test]
fn exists_on_a_home_hit_is_exactly_one_lookup() {
    let Some(bed) = TestBed::new("exists") else {
        return;
    };
    let router = router(&bed);
    let hit = path_homed_at(&router, 1, "hit");
    put(&bed, 1, &hit, b"x");
    bed.fs.reset();
    assert!(router.exists(&hit).unwrap());
    let c = bed.fs.counts();
    println!("exists, home hit: {}", c.summary());
    assert_eq!(c.get("LOOKUP"), 1, "{c:?}");
    assert_eq!(c.round_trips(), 1, "{c:?}");

    // A fallback hit: home, home again once its directory is revalidated (a miss is confirmed
    // with the server), then both other shards at once, each directory revalidated first.
    let elsewhere = path_homed_at(&router, 1, "elsewhere");
    put(&bed, 2, &elsewhere, b"x");
    bed.fs.reset();
    assert!(router.exists(&elsewhere).unwrap());
    let c = bed.fs.counts();
    println!("exists, fallback hit: {}", c.summary());
    assert_eq!((c.get("LOOKUP"), c.get("OPENDIR")), (4, 3), "{c:?}");
    assert_eq!(c.round_trips(), 4, "{c:?}");

    // A miss: home twice, each other shard once, and home once more, fresh (a mover may have
    // brought it home).
    let missing = path_homed_at(&router, 1, "missing");
    bed.fs.reset();
    assert!(!router.exists(&missing).unwrap());
    let c = bed.fs.counts();
    println!("exists, miss: {}", c.summary());
    assert_eq!((c.get("LOOKUP"), c.get("OPENDIR")), (5, 4), "{c:?}");
    assert_eq!(c.round_trips(), 5, "{c:?}");
}

#[test]
fn reads_and_writes_cost_their_floor() {
    let Some(bed) = TestBed::new("read and write") else {
        return;
    };
    let router = router(&bed);
    let hit = path_homed_at(&router, 0, "hit");
    put(&bed, 0, &hit, b"at home");
    bed.fs.reset();
    let read = router.read_with_fallback(&hit).unwrap();
    assert_eq!(
        (read.data.as_slice(), read.place),
        (&b"at home"[..], Place::Home)
    );
    let c = bed.fs.counts();
    println!("read, home hit: {}", c.summary());
    // The name, the open, the bytes.
    assert_eq!(
        (c.get("LOOKUP"), c.get("OPEN"), c.get("READ")),
        (1, 1, 1),
        "{c:?}"
    );
    assert_eq!(c.round_trips(), 3, "{c:?}");

    // A fallback hit: home missed, the two others tried at once, read where it is, moved home.
    let elsewhere = path_homed_at(&router, 0, "elsewhere");
    put(&bed, 2, &elsewhere, b"misplaced");
    bed.fs.reset();
    let read = router.read_with_fallback(&elsewhere).unwrap();
    assert_eq!(read.place, Place::MovedHome { from: 2 });
    let c = bed.fs.counts();
    println!("read, fallback hit (moved home): {}", c.summary());
    assert_eq!((c.get("OPEN"), c.get("READ")), (1, 1), "{c:?}");
    assert_eq!(
        (c.get("LINK"), c.get("RENAME"), c.get("UNLINK")),
        (1, 1, 1),
        "{c:?}"
    );
    // The home directory exists: never made. The one MKDIR and RMDIR are the retire's private
    // directory, the one GETATTR its listing's open (its open as made is answered by the
    // MKDIR's attributes here).
    assert_eq!(
        (c.get("MKDIR"), c.get("RMDIR"), c.get("GETATTR")),
        (1, 1, 1),
        "{c:?}"
    );
    // home, home again (fresh), the two others, then the move's six (the read's fstat stands
    // for the move's first look at the source); directories opened: home's, the two others'
    // (revalidated), and the private one twice (as made, checked empty; then listed).
    assert_eq!(c.get("LOOKUP"), 1 + 1 + 2 + 6, "{c:?}");
    assert_eq!(c.get("OPENDIR"), 1 + 2 + 2, "{c:?}");

    let missing = path_homed_at(&router, 0, "missing");
    bed.fs.reset();
    assert!(router.read_with_fallback(&missing).is_err());
    let c = bed.fs.counts();
    println!("read, miss: {}", c.summary());
    assert_eq!((c.get("LOOKUP"), c.get("OPENDIR")), (5, 4), "{c:?}");
    assert_eq!(c.round_trips(), 5, "{c:?}");

    let new = path_homed_at(&router, 1, "new");
    bed.fs.reset();
    router.write(&new, b"fresh").unwrap();
    let c = bed.fs.counts();
    println!("write: {}", c.summary());
    // No mkdir or stat of the directory: it exists, and the create finds it.
    assert_eq!(c.get("MKDIR") + c.get("GETATTR"), 0, "{c:?}");
    assert_eq!(
        (
            c.get("CREATE"),
            c.get("WRITE"),
            c.get("FSYNC"),
            c.get("RENAME")
        ),
        (1, 1, 1, 1),
        "{c:?}"
    );
    assert_eq!(router.read_with_fallback(&new).unwrap().data, b"fresh");

    // A write into a shard whose directory is missing makes it.
    let deeper = "data/fresh-dir/x.json";
    bed.fs.reset();
    let real = router.write(deeper, b"y").unwrap();
    assert_eq!(fs::read(real).unwrap(), b"y");
}

#[test]
fn walking_reads_names_only_and_enters_an_unknown_entry_only_when_asked() {
    use efs_router::dir::{walk, Flow, Kind};
    let Some(bed) = TestBed::new("walk") else {
        return;
    };
    let dir = bed.backing.path().join("data/analysis");
    fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    for i in 0..2000 {
        fs::write(dir.join(format!("device-{i:05}.json")), b"").unwrap();
    }
    fs::write(dir.join("sub/deeper/nested.json"), b"").unwrap();
    fs::write(dir.join(".efs-router-0123456789abcdef.tmp"), b"").unwrap();
    let through = bed.path().join("data/analysis");
    fs::metadata(&through).unwrap();

    // Every entry comes without a type: reported as unknown (the private name apart), never
    // stat'ed, and nothing below is entered unless the caller asks.
    bed.fs.reset();
    let (mut unknown, mut private, mut other) = (0, 0, 0);
    assert!(walk(&through, |e| {
        match e.kind {
            Kind::Unknown => unknown += 1,
            Kind::Private(_) => private += 1,
            _ => other += 1,
        }
        Flow::Continue
    })
    .unwrap());
    assert_eq!((unknown, private, other), (2001, 1, 0));
    let c = bed.fs.counts();
    println!("walk of 2,002 entries: {}", c.summary());
    let floor = 2004u64.div_ceil(NAMES_PER_READDIR);
    assert!(c.get("READDIR") <= floor + 1, "{c:?}");
    assert!(c.get("LOOKUP") <= 1 && c.get("GETATTR") <= 1, "{c:?}");
    assert_only(&c, &["READDIR", "LOOKUP", "GETATTR"]);

    // The caller looks at a candidate (one lstat) and answers Enter for a directory.
    let mut files = Vec::new();
    walk(&through, |e| match e.kind {
        Kind::Unknown if fs::symlink_metadata(through.join(e.path)).unwrap().is_dir() => {
            Flow::Enter
        }
        Kind::Unknown => {
            files.push(e.path.to_path_buf());
            Flow::Continue
        }
        _ => Flow::Continue,
    })
    .unwrap();
    assert_eq!(files.len(), 2001);
    assert!(files.contains(&PathBuf::from("sub/deeper/nested.json")));

    // Counting skips the router's names too, still by names only.
    bed.fs.reset();
    assert_eq!(count_files(&through).unwrap(), Some(2001));
    assert_only(&bed.fs.counts(), &["READDIR", "LOOKUP", "GETATTR"]);
}

#[test]
fn a_delete_looks_where_a_miss_looks_three_times_and_unlinks_what_it_finds() {
    let Some(bed) = TestBed::new("delete") else {
        return;
    };
    let router = router(&bed);
    // The usual delete: the file at home only.
    let home = path_homed_at(&router, 1, "home");
    put(&bed, 1, &home, b"x");
    bed.fs.reset();
    let done = router.delete(&home).unwrap();
    assert_eq!((done.removed.as_slice(), done.rounds), (&[1][..], 3));
    let c = bed.fs.counts();
    println!(
        "delete, at home: {}, OPENDIR {}",
        c.summary(),
        c.get("OPENDIR")
    );
    // Three rounds: the two other shards, home, all three again; each look opens the copy's
    // directory once (over NFS its revalidation, a GETATTR) and looks the name up.
    assert_eq!((c.get("OPENDIR"), c.get("LOOKUP")), (6, 6 + 1), "{c:?}");
    assert_eq!(c.get("UNLINK"), 1, "{c:?}");
    assert_only(&c, &["LOOKUP", "GETATTR", "UNLINK"]);
    let at_home = c.round_trips();

    // A copy at home and a stale one elsewhere: the same looks, and the kernel's LOOKUP and
    // the UNLINK of one more name.
    let two = path_homed_at(&router, 1, "two");
    put(&bed, 1, &two, b"x");
    put(&bed, 2, &two, b"stale");
    bed.fs.reset();
    let done = router.delete(&two).unwrap();
    assert_eq!(done.removed, [1, 2]);
    let c = bed.fs.counts();
    println!("delete, at home and elsewhere: {}", c.summary());
    assert_eq!(c.get("UNLINK"), 2, "{c:?}");
    assert_eq!(c.round_trips(), at_home + 2, "{c:?}");

    // Nowhere: the same looks, without the unlink's LOOKUP and UNLINK.
    let missing = path_homed_at(&router, 1, "missing");
    bed.fs.reset();
    assert!(!router.delete(&missing).unwrap().any());
    let c = bed.fs.counts();
    println!("delete, nowhere: {}", c.summary());
    assert_eq!(c.round_trips(), at_home - 2, "{c:?}");
    assert_only(&c, &["LOOKUP", "GETATTR"]);

    // A version 3 list with nothing open: home alone, one look and the unlink, whatever the
    // shards (a copy can be nowhere else).
    let mut list = router.list().clone();
    list.open = Some(efs_router::Open::Placements(vec![]));
    let settled = Router::new(list.clone(), Layout::single_mount(bed.path())).unwrap();
    let p = path_homed_at(&settled, 1, "settled");
    put(&bed, 1, &p, b"x");
    put(&bed, 2, &p, b"where no router looks");
    bed.fs.reset();
    let done = settled.delete(&p).unwrap();
    assert_eq!((done.removed.as_slice(), done.rounds), (&[1][..], 1));
    let c = bed.fs.counts();
    println!(
        "delete, at home, nothing open: {}, OPENDIR {}",
        c.summary(),
        c.get("OPENDIR")
    );
    assert_eq!((c.get("OPENDIR"), c.get("UNLINK")), (1, 1), "{c:?}");
    assert!(c.get("LOOKUP") <= 2, "{c:?}");
    assert_only(&c, &["LOOKUP", "GETATTR", "UNLINK"]);

    // One placement open, the shard `/`: it and home, in the three rounds (1, 1, then 2).
    list.open = Some(efs_router::Open::Placements(vec![
        efs_router::Placement::of(Strategy::Rendezvous, &list.mount_targets[..1]),
    ]));
    let one_open = Router::new(list, Layout::single_mount(bed.path())).unwrap();
    let p = path_homed_at(&one_open, 1, "one-open");
    put(&bed, 1, &p, b"x");
    bed.fs.reset();
    let done = one_open.delete(&p).unwrap();
    assert_eq!((done.removed.as_slice(), done.rounds), (&[1][..], 3));
    let c = bed.fs.counts();
    println!(
        "delete, at home, one placement open: {}, OPENDIR {}",
        c.summary(),
        c.get("OPENDIR")
    );
    assert_eq!((c.get("OPENDIR"), c.get("UNLINK")), (4, 1), "{c:?}");
    assert_only(&c, &["LOOKUP", "GETATTR", "UNLINK"]);
}

#[test]
fn the_sorted_walk_looks_up_an_untyped_entry_only_while_a_subdirectory_may_remain() {
    use efs_router::dir::{Flow, Kind};
    use efs_router::sorted_walk::{walk_sorted_at, Walked};
    let Some(bed) = TestBed::new("sorted-walk") else {
        return;
    };
    let dir = bed.backing.path().join("data/analysis");
    // One subdirectory, which sorts first; 2,000 files beside it and one in it.
    fs::create_dir_all(dir.join("a-sub")).unwrap();
    fs::write(dir.join("a-sub/nested.json"), b"").unwrap();
    for i in 0..2000 {
        fs::write(dir.join(format!("device-{i:05}.json")), b"").unwrap();
    }
    let through = bed.path().join("data/analysis");
    let fd = efs_router::dir::open_beneath(&through, "", false).unwrap();

    // Every entry comes without a type and the caller asks to enter each (as the rebalance
    // does): once the link counts say no subdirectory is left, none is looked up.
    bed.fs.reset();
    let mut files = Vec::new();
    let walked = walk_sorted_at(&fd, Path::new(""), |e| {
        assert!(matches!(e.kind, Kind::Unknown), "{e:?}");
        files.push(e.path.to_path_buf());
        Flow::Enter
    })
    .unwrap();
    assert_eq!(walked, Walked::Ended);
    assert_eq!(
        files.len(),
        2002,
        "a-sub, what it holds, and the 2,000 files"
    );
    assert_eq!(files[1], PathBuf::from("a-sub/nested.json"));
    let c = bed.fs.counts();
    println!("sorted walk of 2,002 untyped entries: {}", c.summary());
    // a-sub (a directory) and nested.json (before a-sub's link count was looked at).
    assert!(c.get("LOOKUP") <= 3, "{c:?}");
    assert!(c.get("GETATTR") <= 3, "{c:?}");
    let floor = 2003u64.div_ceil(NAMES_PER_READDIR);
    assert!(c.get("READDIR") <= 2 * (floor + 1), "{c:?}");
    assert_only(&c, &["READDIR", "LOOKUP", "GETATTR", "OPEN"]);

    // The unsorted walk opens every untyped entry it is asked to enter: the figure it saves.
    bed.fs.reset();
    efs_router::dir::walk_at(&fd, |_| Flow::Enter).unwrap();
    let c = bed.fs.counts();
    println!("unsorted walk, entering each: {}", c.summary());
    assert!(c.get("LOOKUP") >= 2000, "{c:?}");
}
