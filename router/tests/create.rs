//! `Router::create` on real directories: the shared cases of `tests/vectors/create.json` (the
//! Python client runs them too), a file already there left exactly as it was, and writers racing
//! to create the same new paths, of which exactly one wins each.

#[path = "support/tree.rs"]
mod tree;
use efs_router::{Creation, Error, Layout, MountTargetList, Router, Strategy, Target};
use serde_json::Value;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};
use std::{fs, thread};
use tree::{files_under, put};

fn vectors() -> Value {
    let dir = std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from);
    let file = dir.join("../tests/vectors/create.json");
    let text = fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).expect("create.json is JSON")
}

/// A single-mount router on `list` over `base`, every shard directory made.
fn router_on(base: &Path, list: MountTargetList) -> Router {
    for s in list.shards() {
        fs::create_dir_all(base.join(s.root.trim_start_matches('/'))).unwrap();
    }
    Router::new(list, Layout::single_mount(base)).unwrap()
}

/// What holds `path`, in the vectors' words: `new`, `file` (any other bytes are spelled out),
/// `directory`, `link`, or `None`.
fn holds(path: &Path, new: &[u8], before: &[u8]) -> Option<String> {
    let meta = fs::symlink_metadata(path).ok()?;
    Some(if meta.is_symlink() {
        "link".to_owned()
    } else if meta.is_dir() {
        "directory".to_owned()
    } else {
        match fs::read(path).unwrap() {
            b if b == new => "new".to_owned(),
            b if b == before => "file".to_owned(),
            b => format!("bytes {:?}", String::from_utf8_lossy(&b)),
        }
    })
}

/// The error's kind, as the vectors spell it.
fn kind(e: &Error) -> &'static str {
    match e {
        Error::Route(r) => r.kind(),
        Error::InsideAnotherShard { .. } => "inside-another-shard",
        other => panic!("unexpected error {other:?}"),
    }
}

/// Puts what the vector's `before` names at `real`, the path in shard `root`.
fn put_before(real: &Path, what: &str, root: &str) {
    match what {
        "file" => put(real, format!("before {root}").as_bytes()),
        "directory" => fs::create_dir_all(real).unwrap(),
        "link" => {
            fs::create_dir_all(real.parent().unwrap()).unwrap();
            std::os::unix::fs::symlink("no-such-target", real).unwrap();
        }
        other => panic!("unknown holder {other:?}"),
    }
}

/// Checks one case of the vectors: its outcome and what every shard holds afterwards.
fn run_case(v: &Value, case: &Value) {
    let name = case["name"].as_str().unwrap();
    let doc = &v["lists"][case["list"].as_str().unwrap()];
    let list = MountTargetList::from_json(&doc.to_string()).unwrap();
    let base = tempfile::tempdir().unwrap();
    let router = router_on(base.path(), list);
    let path = case["path"].as_str().unwrap();
    let data = v["data"].as_str().unwrap().as_bytes();
    if let Some(error) = case.get("error") {
        let got = router.create(path, data).expect_err(name);
        assert_eq!(kind(&got), error.as_str().unwrap(), "{name}");
        assert_eq!(files_under(base.path()), Vec::<PathBuf>::new(), "{name}");
        return;
    }
    let home = router.resolve(path).unwrap();
    assert_eq!(home.index as u64, case["home"].as_u64().unwrap(), "{name}");
    let shards = router.shards();
    let real = |i: usize| router.layout().real_path(shards, i, &home.logical);
    let shard_of = |e: &Value| e["shard"].as_u64().unwrap() as usize;
    for b in case["before"].as_array().unwrap() {
        let i = shard_of(b);
        put_before(&real(i), b["holds"].as_str().unwrap(), &shards[i].root);
    }
    let got = router.create(path, data).unwrap();
    let expect = &case["expect"];
    assert_eq!(
        (got.as_str(), got.index() as u64),
        (
            expect["kind"].as_str().unwrap(),
            expect["index"].as_u64().unwrap()
        ),
        "{name}"
    );
    assert_eq!(got.real(), real(got.index()), "{name}");
    let after: Vec<(usize, &str)> = case["after"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (shard_of(e), e["holds"].as_str().unwrap()))
        .collect();
    for (i, shard) in shards.iter().enumerate() {
        let before = format!("before {}", shard.root);
        let want = after.iter().find(|(j, _)| *j == i).map(|(_, h)| *h);
        let have = holds(&real(i), data, before.as_bytes());
        assert_eq!(have.as_deref(), want, "{name}: shard {i}");
    }
    // Nothing else anywhere: no temporary name, no copy at another place.
    let mut places: Vec<PathBuf> = after
        .iter()
        .filter(|(_, h)| *h != "directory")
        .map(|(i, _)| real(*i))
        .collect();
    places.dedup();
    assert_eq!(files_under(base.path()).len(), places.len(), "{name}");
}

#[test]
fn the_shared_cases_of_the_vectors() {
    let v = vectors();
    let cases = v["cases"].as_array().unwrap();
    assert!(cases.len() >= 15);
    for case in cases {
        run_case(&v, case);
    }
}

const THREE: &[&str] = &["/", "/shards/use1-az4", "/shards/use1-az1"];

fn three(base: &Path) -> Router {
    let list = MountTargetList {
        open: None,
        scope: None,
        mount_targets: THREE
            .iter()
            .enumerate()
            .map(|(i, r)| Target::new(format!("fsmt-{i}"), format!("10.0.{i}.4"), *r))
            .collect(),
        strategy: Strategy::Rendezvous,
    };
    router_on(base, list)
}

#[test]
fn a_file_already_at_home_is_left_exactly_as_it_was() {
    let base = tempfile::tempdir().unwrap();
    let router = three(base.path());
    let p = "data/analysis/kept.json";
    let home = router.resolve(p).unwrap();
    put(&home.real, b"first");
    let before = fs::metadata(&home.real).unwrap();
    let got = router.create(p, b"second").unwrap();
    assert_eq!(
        got,
        Creation::AlreadyThere {
            index: home.index,
            real: home.real.clone()
        }
    );
    assert!(!got.created());
    let after = fs::metadata(&home.real).unwrap();
    assert_eq!(
        (
            after.ino(),
            after.mtime(),
            after.mtime_nsec(),
            after.nlink()
        ),
        (before.ino(), before.mtime(), before.mtime_nsec(), 1)
    );
    assert_eq!(fs::read(&home.real).unwrap(), b"first");
    // Then created anew once deleted: the same call, now the only name of a new file.
    router.delete(p).unwrap();
    let again = router.create(p, b"third").unwrap();
    assert_eq!(
        (again.created(), again.as_str(), again.real()),
        (true, "created", home.real.as_path())
    );
    assert_eq!(fs::metadata(&home.real).unwrap().nlink(), 1);
    assert_eq!(files_under(base.path()).len(), 1);
}

#[test]
fn a_missing_home_directory_is_made() {
    let base = tempfile::tempdir().unwrap();
    let router = three(base.path());
    let got = router.create("new/deep/dir/x.json", b"x").unwrap();
    assert!(got.created());
    assert_eq!(fs::read(got.real()).unwrap(), b"x");
}

/// Writers racing to create the same new path: exactly one `Created`, the file holds its bytes,
/// every other answer names home, and no temporary name is left (8 threads, 60 paths).
#[test]
fn racing_creators_of_one_new_path_have_exactly_one_winner() {
    const WRITERS: usize = 8;
    const ROUNDS: usize = 60;
    let base = tempfile::tempdir().unwrap();
    let router = Arc::new(three(base.path()));
    for round in 0..ROUNDS {
        let p = format!("data/analysis/race-{round}.json");
        let home = router.resolve(&p).unwrap();
        let barrier = Arc::new(Barrier::new(WRITERS));
        let handles: Vec<_> = (0..WRITERS)
            .map(|w| {
                let (router, barrier, p) = (router.clone(), barrier.clone(), p.clone());
                thread::spawn(move || {
                    let data = format!("writer {w} ").repeat(200).into_bytes();
                    barrier.wait();
                    (data.clone(), router.create(&p, &data).unwrap())
                })
            })
            .collect();
        let mut winners = Vec::new();
        for h in handles {
            let (data, got) = h.join().unwrap();
            assert_eq!((got.index(), got.real()), (home.index, home.real.as_path()));
            if got.created() {
                winners.push(data);
            }
        }
        assert_eq!(winners.len(), 1, "round {round}");
        assert_eq!(fs::read(&home.real).unwrap(), winners[0], "round {round}");
        assert_eq!(fs::metadata(&home.real).unwrap().nlink(), 1);
    }
    // One file per path, at home; not one temporary name.
    assert_eq!(files_under(base.path()).len(), ROUNDS);
}
