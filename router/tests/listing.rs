//! `Router::list_dir` and `Router::walk` on real directories: the shared cases of
//! `tests/vectors/listing.json` (the Python client runs them too) in both layouts, the copy a
//! listing names being the one a read takes, links on the way never followed, more shards than
//! are read at once, and a walk going on past a directory removed under it.

#[path = "support/tree.rs"]
mod tree;
use efs_router::{Entry, EntryKind, Error, Layout, MountTargetList, Router, Strategy, Target};
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, UNIX_EPOCH};
use std::{fs, os::unix::fs::symlink};
use tree::{files_under, put};

fn vectors() -> Value {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let file = dir.join("../tests/vectors/listing.json");
    let text = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).expect("listing.json is JSON")
}

fn list(roots: &[&str], strategy: Strategy) -> MountTargetList {
    MountTargetList {
        open: None,
        scope: None,
        mount_targets: roots
            .iter()
            .enumerate()
            .map(|(i, r)| Target::new(format!("fsmt-{i}"), format!("10.0.{i}.4"), *r))
            .collect(),
        strategy,
    }
}

/// The directory of the shard rooted at `root` under the single mount `base`.
fn shard_dir(base: &Path, root: &str) -> PathBuf {
    base.join(root.trim_start_matches('/'))
}

/// Makes a case's tree under `base`: every shard directory, then each item. A file holds
/// `<root>:<path>`, so that a read shows which copy it took.
fn make_tree(base: &Path, case: &Value) {
    for r in case["roots"].as_array().unwrap() {
        fs::create_dir_all(shard_dir(base, r.as_str().unwrap())).unwrap();
    }
    for item in case["tree"].as_array().unwrap() {
        let root = item["root"].as_str().unwrap();
        let path = item["path"].as_str().unwrap();
        let real = shard_dir(base, root).join(path);
        fs::create_dir_all(real.parent().unwrap()).unwrap();
        if let Some(target) = item.get("symlink") {
            symlink(target.as_str().unwrap(), &real).unwrap();
        } else if item.get("fifo").is_some() {
            rustix::fs::mknodat(
                rustix::fs::CWD,
                &real,
                rustix::fs::FileType::Fifo,
                rustix::fs::Mode::from_raw_mode(0o644),
                0,
            )
            .unwrap();
        } else if item.get("dir").is_some() {
            fs::create_dir_all(&real).unwrap();
        } else {
            fs::write(&real, format!("{root}:{path}")).unwrap();
            if let Some(ns) = item.get("mtime_ns") {
                let when = UNIX_EPOCH + Duration::from_nanos(ns.as_u64().unwrap());
                let f = fs::File::options().write(true).open(&real).unwrap();
                f.set_modified(when).unwrap();
            }
        }
    }
}

fn strategy(case: &Value) -> Strategy {
    serde_json::from_value(case["strategy"].clone()).unwrap()
}

fn roots(case: &Value) -> Vec<&str> {
    case["roots"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r.as_str().unwrap())
        .collect()
}

/// The routers of a case over `base`: one mount, and one mount per shard.
fn routers(base: &Path, case: &Value) -> Vec<(&'static str, Router)> {
    let roots = roots(case);
    let single = Router::new(list(&roots, strategy(case)), Layout::single_mount(base)).unwrap();
    let mounts = roots.iter().map(|r| shard_dir(base, r)).collect();
    let per_target = Router::new(list(&roots, strategy(case)), Layout::per_target(mounts)).unwrap();
    vec![("single mount", single), ("per target", per_target)]
}

/// An entry in the vectors' words: name, kind, the winning root, the roots holding it.
fn spelled(r: &Router, e: &Entry) -> Value {
    let root = |i: usize| Value::from(r.shards()[i].root.clone());
    serde_json::json!({
        "name": e.name,
        "kind": e.kind.as_str(),
        "root": root(e.index),
        "roots": e.shards.iter().map(|&i| root(i)).collect::<Vec<_>>(),
    })
}

fn error_kind(e: &Error) -> &'static str {
    match e {
        Error::NotFound { .. } => "not-found",
        Error::InsideAnotherShard { .. } => "inside-another-shard",
        Error::Route(r) => r.kind(),
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn the_shared_cases_list_as_the_vectors_say() {
    let v = vectors();
    for case in v["cases"].as_array().unwrap() {
        let name = case["name"].as_str().unwrap();
        let base = tempfile::tempdir().unwrap();
        make_tree(base.path(), case);
        let before = files_under(base.path());
        for (layout, r) in routers(base.path(), case) {
            let at = format!("{name} ({layout})");
            for (path, home) in case["homes"].as_object().unwrap() {
                let index = r.resolve(path).unwrap().index;
                assert_eq!(
                    r.shards()[index].root,
                    home.as_str().unwrap(),
                    "{at}: {path}"
                );
            }
            for (dir, want) in case["listings"].as_object().unwrap() {
                let got: Vec<Value> = r
                    .list_dir(dir)
                    .unwrap_or_else(|e| panic!("{at}: {dir:?}: {e}"))
                    .iter()
                    .map(|e| spelled(&r, e))
                    .collect();
                assert_eq!(&Value::from(got), want, "{at}: {dir:?}");
                same_one_by_one(&r, dir, &at);
            }
            let walked: Vec<(String, Vec<Value>)> = r
                .walk("")
                .map(|l| {
                    let l = l.unwrap_or_else(|e| panic!("{at}: {e}"));
                    (l.dir, l.entries.iter().map(|e| spelled(&r, e)).collect())
                })
                .collect();
            let order: Vec<&str> = walked.iter().map(|(d, _)| d.as_str()).collect();
            assert_eq!(Value::from(order), case["walk"], "{at}");
            for (dir, entries) in walked {
                assert_eq!(
                    Value::from(entries),
                    case["listings"][&dir],
                    "{at}: {dir:?}"
                );
            }
            for (dir, kind) in case["errors"].as_object().unwrap() {
                let e = r.list_dir(dir).expect_err(dir);
                assert_eq!(error_kind(&e), kind.as_str().unwrap(), "{at}: {dir:?}: {e}");
                let first = r.walk(dir).next().unwrap().expect_err(dir);
                assert_eq!(error_kind(&first), kind.as_str().unwrap(), "{at}: {dir:?}");
            }
        }
        assert_eq!(
            files_under(base.path()),
            before,
            "{name}: listing moves nothing"
        );
    }
}

/// Each name of `dir`'s listing, looked up alone ([`Router::entry`]), is the same entry; its
/// file's copy is there to `lstat`; the directory listed in its shards alone is the listing.
fn same_one_by_one(r: &Router, dir: &str, at: &str) {
    let listed = r.list_dir(dir).unwrap();
    let logical = r.logical_dir(dir).unwrap();
    for e in &listed {
        let path = if logical.is_empty() {
            e.name.clone()
        } else {
            format!("{logical}/{}", e.name)
        };
        assert_eq!(r.entry(&path).unwrap().as_ref(), Some(e), "{at}: {path}");
        if !e.is_dir() {
            let st = r.copy_stat(e.index, &path).unwrap().expect(&path);
            assert_eq!(
                st.st_mode & libc_s_ifmt(),
                0o100000,
                "{at}: {path} is a regular file"
            );
        }
    }
    // One shard per distinct root, as a listing reads them.
    let t = r.shards();
    let shards: Vec<usize> = (0..t.len())
        .filter(|&j| !t[..j].iter().any(|k| k.root == t[j].root))
        .collect();
    assert_eq!(
        r.list_dir_in(dir, &shards).unwrap().as_ref(),
        Some(&listed),
        "{at}: {dir:?}"
    );
}

fn libc_s_ifmt() -> u32 {
    0o170000
}

/// `remove_dir` takes an empty logical directory out of every shard that has it, refuses one
/// that holds a name a listing does not show, and never goes through a link.
#[test]
fn an_empty_directory_is_removed_from_every_shard_and_a_link_is_not_followed() {
    let base = tempfile::tempdir().unwrap();
    let r = Router::new(
        list(&["/", "/shards/a"], Strategy::Rendezvous),
        Layout::single_mount(base.path()),
    )
    .unwrap();
    for root in ["", "shards/a"] {
        fs::create_dir_all(base.path().join(root).join("data/empty")).unwrap();
    }
    let e = r.entry("data/empty").unwrap().expect("listed");
    assert_eq!(e.shards, vec![0, 1]);
    r.remove_dir("data/empty", &e.shards).unwrap();
    assert_eq!(r.entry("data/empty").unwrap(), None);
    // A write's temporary name is not listed, but the directory is not empty.
    fs::create_dir_all(base.path().join("data/busy")).unwrap();
    fs::write(
        base.path()
            .join("data/busy/.efs-router-0123456789abcdef.tmp"),
        b"x",
    )
    .unwrap();
    let err = r.remove_dir("data/busy", &[0]).unwrap_err();
    assert!(
        matches!(&err, Error::Io { source, .. } if source.raw_os_error() == Some(39)),
        "{err}"
    );
    // A planted link where the parent is: nothing beyond it is removed.
    let elsewhere = tempfile::tempdir().unwrap();
    fs::create_dir_all(elsewhere.path().join("victim")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), base.path().join("planted")).unwrap();
    r.remove_dir("planted/victim", &[0]).unwrap();
    assert!(elsewhere.path().join("victim").is_dir());
}

/// Every file a listing shows is read from the copy it names: the listing's rule is the
/// read's (home first; else the newest; a tie to the earlier shard).
#[test]
fn a_read_takes_the_copy_the_listing_names() {
    let v = vectors();
    let case = &v["cases"][0];
    let base = tempfile::tempdir().unwrap();
    make_tree(base.path(), case);
    let (_, r) = routers(base.path(), case).remove(0);
    let entries = r.list_dir("data/analysis").unwrap();
    let files: Vec<&Entry> = entries
        .iter()
        .filter(|e| e.kind == EntryKind::File)
        .collect();
    assert_eq!(files.len(), 8);
    for e in files {
        let path = format!("data/analysis/{}", e.name);
        let want = format!("{}:{path}", r.shards()[e.index].root);
        // `real` is that copy (looked at first: the read may move it home).
        assert_eq!(fs::read_to_string(&e.real).unwrap(), want, "{path}");
        let read = r.read_with_fallback(&path).unwrap();
        assert_eq!(String::from_utf8(read.data).unwrap(), want, "{path}");
    }
}

/// A shard whose `data` is a link to a directory elsewhere holds no `data`: the listing never
/// goes through it, at the last component or above it.
#[test]
fn a_link_on_the_way_is_never_followed() {
    let base = tempfile::tempdir().unwrap();
    let roots = ["/", "/shards/use1-az4", "/shards/use1-az1"];
    for root in roots {
        fs::create_dir_all(shard_dir(base.path(), root)).unwrap();
    }
    let elsewhere = base.path().join("elsewhere");
    put(&elsewhere.join("analysis/secret.json"), b"");
    put(
        &shard_dir(base.path(), "/").join("data/analysis/a.json"),
        b"",
    );
    symlink(
        &elsewhere,
        shard_dir(base.path(), "/shards/use1-az1").join("data"),
    )
    .unwrap();
    let r = Router::new(
        list(&roots, Strategy::Rendezvous),
        Layout::single_mount(base.path()),
    )
    .unwrap();
    let top: Vec<(String, Vec<usize>)> = r
        .list_dir("")
        .unwrap()
        .into_iter()
        .map(|e| (e.name, e.shards))
        .collect();
    assert_eq!(
        top,
        [
            ("data".to_owned(), vec![0]),
            ("elsewhere".to_owned(), vec![0])
        ]
    );
    let names: Vec<String> = r
        .list_dir("data/analysis")
        .unwrap()
        .into_iter()
        .map(|e| e.name)
        .collect();
    assert_eq!(names, ["a.json"]);
}

/// More shards than are read at once (32): every file written is listed once, at home.
#[test]
fn forty_one_shards_list_every_file_once_at_home() {
    let base = tempfile::tempdir().unwrap();
    let roots: Vec<String> = std::iter::once("/".to_owned())
        .chain((0..40).map(|i| format!("/shards/z{i}")))
        .collect();
    let refs: Vec<&str> = roots.iter().map(String::as_str).collect();
    for root in &refs {
        fs::create_dir_all(shard_dir(base.path(), root)).unwrap();
    }
    let r = Router::new(
        list(&refs, Strategy::Rendezvous),
        Layout::single_mount(base.path()),
    )
    .unwrap();
    let mut homes = BTreeMap::new();
    for i in 0..300 {
        let path = format!("data/device-{i:03}.json");
        r.write(&path, b"x").unwrap();
        homes.insert(
            format!("device-{i:03}.json"),
            r.resolve(&path).unwrap().index,
        );
    }
    let got: BTreeMap<String, usize> = r
        .list_dir("/data")
        .unwrap()
        .into_iter()
        .map(|e| {
            assert_eq!(e.shards, [e.index], "{}", e.name);
            (e.name, e.index)
        })
        .collect();
    assert_eq!(got, homes);
    let used: std::collections::BTreeSet<usize> = homes.values().copied().collect();
    assert!(used.len() > 32, "{} shards hold files", used.len());
    assert_eq!(
        r.list_dir("").unwrap().len(),
        1,
        "data alone: shards/ holds only shard roots"
    );
}

/// A subdirectory removed after its parent was listed is skipped; the walk goes on.
#[test]
fn a_walk_goes_on_past_a_directory_removed_under_it() {
    let base = tempfile::tempdir().unwrap();
    let roots = ["/", "/shards/use1-az4"];
    for root in roots {
        fs::create_dir_all(shard_dir(base.path(), root)).unwrap();
    }
    let r = Router::new(
        list(&roots, Strategy::Rendezvous),
        Layout::single_mount(base.path()),
    )
    .unwrap();
    put(&shard_dir(base.path(), "/").join("data/a/x.json"), b"");
    put(
        &shard_dir(base.path(), "/shards/use1-az4").join("data/b/y.json"),
        b"",
    );
    put(
        &shard_dir(base.path(), "/shards/use1-az4").join("data/c/z.json"),
        b"",
    );
    let mut walk = r.walk("data");
    let first = walk.next().unwrap().unwrap();
    let subdirs: Vec<&str> = first.entries.iter().map(|e| e.name.as_str()).collect();
    assert_eq!((first.dir.as_str(), subdirs), ("data", vec!["a", "b", "c"]));
    fs::remove_dir_all(shard_dir(base.path(), "/shards/use1-az4").join("data/b")).unwrap();
    let rest: Vec<String> = walk.map(|l| l.unwrap().dir).collect();
    assert_eq!(rest, ["data/a", "data/c"]);
}

/// On a version 3 list a read looks at home and where an open placement homes a path, nowhere
/// else: a copy elsewhere is listed only while a placement that homes it there is open.
#[test]
fn a_version_3_list_shows_only_copies_a_read_finds() {
    let d = tempfile::tempdir().unwrap();
    let mut ml = list(&["/", "/shards/b", "/shards/c"], Strategy::Rendezvous);
    let router = Router::new(ml.clone(), Layout::single_mount(d.path())).unwrap();
    // One file away from home, in the first shard (`/`), as the app wrote it before a list.
    let name = (0..100)
        .map(|i| format!("x{i}.json"))
        .find(|n| router.resolve(&format!("data/{n}")).unwrap().index != 0)
        .unwrap();
    put(&shard_dir(d.path(), "/").join("data").join(&name), b"x");
    let names = |ml: &MountTargetList| -> Vec<String> {
        let r = Router::new(ml.clone(), Layout::single_mount(d.path())).unwrap();
        let found = r.exists(&format!("data/{name}")).unwrap();
        let listed: Vec<String> = r
            .list_dir("data")
            .unwrap()
            .into_iter()
            .map(|e| e.name)
            .collect();
        assert_eq!(found, !listed.is_empty(), "{listed:?}");
        listed
    };
    assert_eq!(names(&ml), std::slice::from_ref(&name));
    let slash = efs_router::Placement::of(Strategy::Rendezvous, &[Target::new("a", "x", "/")]);
    ml.open = Some(efs_router::Open::Placements(vec![slash]));
    assert_eq!(names(&ml), std::slice::from_ref(&name));
    ml.open = Some(efs_router::Open::Placements(vec![]));
    assert!(names(&ml).is_empty());
}
