//! `shard_index` and path normalisation against `tests/vectors/routing.json` (shared with the
//! Python client; each list routed over its shards, version 2 included), the published lists
//! against `tests/vectors/lists.json`, and `modulo-sha256` against the original Python
//! expression run by CPython.

use efs_router::{
    modulo_sha256, shard_index, LogicalPath, MountTargetList, Shard, Strategy, Target,
};
use serde_json::Value;
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};

/// The crate's directory: the one `cargo test` names when it runs the test, else the
/// compile-time one (a shared target directory may keep a binary built in another clone).
fn crate_dir() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")), PathBuf::from)
}

fn vectors() -> Value {
    let file = crate_dir().join("../tests/vectors/routing.json");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).expect("routing.json is JSON")
}

/// Each list of the file as its shards ([`MountTargetList::shards`]): what a case routes over.
fn lists(v: &Value) -> HashMap<String, Vec<Shard>> {
    v["lists"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, l)| {
            let list = MountTargetList {
                open: None,
                scope: None,
                mount_targets: serde_json::from_value(l.clone()).unwrap(),
                strategy: Strategy::Rendezvous,
            };
            (k.clone(), list.shards())
        })
        .collect()
}

fn strategy(s: &Value) -> Strategy {
    serde_json::from_value(s.clone()).unwrap()
}

#[test]
fn every_list_of_the_routing_vectors_is_valid() {
    let v = vectors();
    let mut version_2 = 0;
    for (name, entries) in v["lists"].as_object().unwrap() {
        let mut doc = serde_json::json!({"mount_targets": entries, "strategy": "rendezvous"});
        if entries
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e.get("shards").is_some())
        {
            doc["version"] = 2.into();
            version_2 += 1;
        }
        let list =
            MountTargetList::from_json(&doc.to_string()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(list.mount_targets.len(), entries.as_array().unwrap().len());
    }
    assert!(version_2 >= 3);
}

/// `tests/vectors/routing.json` is exactly what its generator writes.
#[test]
fn routing_vectors_are_the_generators_output() {
    let Some(python) = python3() else {
        eprintln!("SKIPPED: no python3 to run tests/vectors/generate_routing.py");
        return;
    };
    let dir = crate_dir().join("../tests/vectors");
    let out = Command::new(python)
        .arg(dir.join("generate_routing.py"))
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let file = std::fs::read(dir.join("routing.json")).unwrap();
    assert!(
        out.stdout == file,
        "tests/vectors/routing.json differs from what generate_routing.py writes: regenerate it"
    );
}

#[test]
fn routing_vectors() {
    let v = vectors();
    let lists = lists(&v);
    let cases = v["routing"].as_array().unwrap();
    assert!(cases.len() >= 300);
    let mut with_root = 0;
    for case in cases {
        let path = case["path"].as_str().unwrap();
        let shards = &lists[case["list"].as_str().unwrap()];
        let got = shard_index(path, shards, strategy(&case["strategy"]));
        let index = case["index"].as_u64().unwrap() as usize;
        assert_eq!(got, Ok(index), "case {case}");
        if let Some(root) = case.get("root") {
            assert_eq!(shards[index].root, root.as_str().unwrap(), "case {case}");
            with_root += 1;
        }
    }
    assert!(with_root >= 40, "too few version 2 cases: {with_root}");
}

#[test]
fn routing_error_vectors() {
    let v = vectors();
    let lists = lists(&v);
    for case in v["routing_errors"].as_array().unwrap() {
        let path = case["path"].as_str().unwrap();
        let targets = &lists[case["list"].as_str().unwrap()];
        match shard_index(path, targets, strategy(&case["strategy"])) {
            Ok(i) => panic!("case {case}: routed to {i}"),
            Err(e) => assert_eq!(e.kind(), case["error"].as_str().unwrap(), "case {case}"),
        }
    }
}

#[test]
fn normalisation_vectors() {
    let v = vectors();
    for case in v["normalise"].as_array().unwrap() {
        let path = case["path"].as_str().unwrap();
        match (LogicalPath::parse(path), case.get("normalised")) {
            (Ok(p), Some(n)) => assert_eq!(p.as_str(), n.as_str().unwrap(), "case {case}"),
            (Err(e), None) => assert_eq!(e.kind(), case["error"].as_str().unwrap(), "case {case}"),
            (got, _) => panic!("case {case}: got {got:?}"),
        }
    }
}

/// xorshift64*: enough to make paths, no dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Random strings over ASCII, `/`, `.`, multi-byte and astral characters: any string the
/// application could pass, valid as a logical path or not.
fn random_path(rng: &mut Rng) -> String {
    const ALPHABET: &[char] = &[
        'a', 'b', 'z', 'A', 'Z', '0', '9', '-', '_', '.', '/', '/', ' ', 'é', 'ß', '中', '📈', '\\',
    ];
    let len = 1 + rng.below(60);
    (0..len)
        .map(|_| ALPHABET[rng.below(ALPHABET.len())])
        .collect()
}

/// The Python to check against; none outside CI skips the check, and in CI a test that
/// cannot run fails (`make test`).
fn python3() -> Option<String> {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let found = Command::new(&python)
        .arg("--version")
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|_| python);
    if found.is_none() && std::env::var_os("CI").is_some_and(|v| !v.is_empty()) {
        panic!("PYTHON: no python3 to check the vectors against, and CI is set");
    }
    found
}

#[test]
fn modulo_agrees_with_the_original_python_expression() {
    let Some(python) = python3() else {
        eprintln!("SKIPPED: no python3 to run the original expression");
        return;
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut paths: Vec<String> = (0..5000).map(|_| random_path(&mut rng)).collect();
    paths.extend(
        (0..1000).map(|i| format!("data/analysis/device-{i}-{}.json", 1_700_000_000 + i * 7)),
    );
    let ns: Vec<usize> = (1..=8)
        .chain([
            13,
            64,
            1000,
            1 << 31,
            u32::MAX as usize,
            1 << 40,
            (1 << 62) + 7,
        ])
        .collect();
    let script = r#"
import hashlib, json, sys
paths, ns = json.load(sys.stdin)
# The original client's expression, verbatim, with len(mount_targets) = n.
json.dump([[int(hashlib.sha256(file_path.encode()).hexdigest(), 16) % n for n in ns] for file_path in paths], sys.stdout)
"#;
    let mut child = Command::new(python)
        .args(["-c", script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input = serde_json::to_vec(&(&paths, &ns)).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    let expected: Vec<Vec<usize>> = serde_json::from_slice(&out.stdout).unwrap();
    let list = |n: usize| -> Vec<Shard> {
        (0..n)
            .map(|i| {
                let entry: Target = serde_json::from_value(
                    serde_json::json!({"id": format!("fsmt-{i}"), "ip": "10.0.0.1"}),
                )
                .unwrap();
                entry.first_shard()
            })
            .collect()
    };
    let lists: Vec<Vec<Shard>> = (1..=8).map(list).collect();
    let mut routed = 0;
    for (path, want) in paths.iter().zip(&expected) {
        for (&n, &w) in ns.iter().zip(want) {
            assert_eq!(modulo_sha256(path, n), w, "path {path:?} n {n}");
            if n <= 8 && LogicalPath::parse(path).is_ok() {
                assert_eq!(
                    shard_index(path, &lists[n - 1], Strategy::ModuloSha256),
                    Ok(w)
                );
                routed += 1;
            }
        }
    }
    assert!(routed > 8000, "too few valid random paths: {routed}");
}

fn list_vectors() -> Value {
    let file = crate_dir().join("../tests/vectors/lists.json");
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    serde_json::from_str(&text).expect("lists.json is JSON")
}

#[test]
fn list_vectors_valid() {
    let v = list_vectors();
    let cases = v["valid"].as_array().unwrap();
    assert!(cases.len() >= 10);
    for case in cases {
        let list = MountTargetList::from_json(case["json"].as_str().unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", case["name"]));
        let shards = list.shards();
        assert_eq!(shards.len(), list.shard_count());
        let roots: Vec<&str> = shards.iter().map(|t| t.root.as_str()).collect();
        let want: Vec<&str> = case["roots"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert_eq!(roots, want, "{}", case["name"]);
        let draining: Vec<bool> = shards.iter().map(|t| t.draining).collect();
        let want: Vec<bool> = match case.get("draining") {
            Some(d) => d
                .as_array()
                .unwrap()
                .iter()
                .map(|b| b.as_bool().unwrap())
                .collect(),
            None => vec![false; roots.len()],
        };
        assert_eq!(draining, want, "{}", case["name"]);
        assert_eq!(list.strategy.as_str(), case["strategy"], "{}", case["name"]);
        if let Some(text) = case.get("to_json") {
            assert_eq!(list.to_json(), text.as_str().unwrap(), "{}", case["name"]);
        }
        // What the function publishes is read back the same.
        assert_eq!(MountTargetList::from_json(&list.to_json()), Ok(list));
    }
}

#[test]
fn list_vectors_invalid() {
    let v = list_vectors();
    let cases = v["invalid"].as_array().unwrap();
    assert!(cases.len() >= 70);
    for case in cases {
        let name = &case["name"];
        let e = match MountTargetList::from_json(case["json"].as_str().unwrap()) {
            Ok(l) => panic!("{name}: accepted as {l:?}"),
            Err(e) => e,
        };
        assert_eq!(e.kind(), case["error"], "{name}: {e}");
        let message = e.to_string();
        for m in case["mentions"].as_array().unwrap() {
            assert!(message.contains(m.as_str().unwrap()), "{name}: {message}");
        }
    }
}

/// The lists of `tests/vectors/misses.json`: version 3 lists with placements open, one with
/// none, one that says `everywhere`, and one of version 2.
fn miss_lists() -> Vec<(&'static str, String)> {
    let targets = r#"[{"id":"fsmt-a","ip":"10.0.1.4","az_id":"use1-az1","root":"/","shards":3},{"id":"fsmt-b","ip":"10.0.2.7","az_id":"use1-az2","root":"/shards/use1-az2","shards":2},{"id":"fsmt-c","ip":"10.0.3.9","az_id":"use1-az3","root":"/shards/use1-az3"}]"#;
    let v3 = |open: &str| {
        format!(
            r#"{{"mount_targets":{targets},"open":{open},"strategy":"rendezvous","version":3}}"#
        )
    };
    vec![
        ("nothing open", v3("[]")),
        (
            "the app's files, and an older list",
            v3(
                r#"[{"strategy":"rendezvous","targets":[{"root":"/"}]},{"strategy":"rendezvous","targets":[{"root":"/"},{"root":"/shards/use1-az2"}]}]"#,
            ),
        ),
        (
            "migrated from modulo",
            v3(
                r#"[{"strategy":"modulo-sha256","targets":[{"root":"/"},{"root":"/shards/use1-az2"},{"root":"/shards/use1-az3"}]}]"#,
            ),
        ),
        (
            "a shard draining",
            format!(
                r#"{{"mount_targets":{},"open":[{{"strategy":"rendezvous","targets":[{{"root":"/","az_id":"use1-az1","shards":3}},{{"root":"/shards/use1-az2","az_id":"use1-az2","shards":2}},{{"root":"/shards/use1-az3"}}]}}],"strategy":"rendezvous","version":3}}"#,
                targets.replace(r#""shards":2}"#, r#""shards":2,"draining_shards":1}"#)
            ),
        ),
        ("not known", v3(r#""everywhere""#)),
        (
            "version 2",
            targets
                .replace("[{", r#"{"mount_targets":[{"#)
                .replace("}]", r#"}],"strategy":"rendezvous","version":2}"#),
        ),
    ]
}

/// Where a miss looks besides home, for the lists of [`miss_lists`]: pinned in
/// `tests/vectors/misses.json`, which the Python client checks too. With
/// `EFS_ROUTER_WRITE_VECTORS=1` the file is written from this router's answers instead.
#[test]
fn miss_vectors() {
    let file = crate_dir().join("../tests/vectors/misses.json");
    let mount = tempfile::tempdir().unwrap();
    let mut cases = Vec::new();
    for (name, text) in miss_lists() {
        let list = MountTargetList::from_json(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let router =
            efs_router::Router::new(list, efs_router::Layout::single_mount(mount.path())).unwrap();
        for i in 0..12 {
            // Spellings modulo tells apart, as the app wrote them.
            let path = match i % 3 {
                0 => format!("data/analysis/device-{i}.json"),
                1 => format!("/data/analysis/device-{i}.json"),
                _ => format!("./data/analysis/device-{i}.json"),
            };
            let home = router.resolve(&path).unwrap();
            let roots = |js: Vec<usize>| -> Vec<String> {
                js.into_iter()
                    .map(|j| router.shards()[j].root.clone())
                    .collect()
            };
            cases.push(serde_json::json!({
                "list": name,
                "path": path,
                "home": router.shards()[home.index].root,
                "looks": roots(router.miss_shards(&home)),
            }));
        }
    }
    let lists: serde_json::Map<String, Value> = miss_lists()
        .into_iter()
        .map(|(n, t)| (n.to_owned(), Value::String(t)))
        .collect();
    let doc = serde_json::json!({
        "about": "Where a miss looks besides a path's home (router/src/placement.rs, docs/routing.md): for version 3 lists, the path's home under each open placement where that differs from home, in the placements' order, each root once; for `everywhere` and the earlier forms, every other shard's root in list order, each once. Shared by router/ (router/tests/vectors.rs, which writes it with EFS_ROUTER_WRITE_VECTORS=1) and clients/python (tests/test_misses.py).",
        "lists": lists,
        "cases": cases,
    });
    if std::env::var_os("EFS_ROUTER_WRITE_VECTORS").is_some() {
        std::fs::write(&file, serde_json::to_string_pretty(&doc).unwrap() + "\n").unwrap();
    }
    let text = std::fs::read_to_string(&file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    let pinned: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(pinned, doc, "misses.json disagrees with this router");
    // Each list is there for a reason: a miss looks nowhere else, somewhere, everywhere.
    let looks = |name: &str| -> Vec<usize> {
        doc["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["list"] == name)
            .map(|c| c["looks"].as_array().unwrap().len())
            .collect()
    };
    assert!(looks("nothing open").iter().all(|&n| n == 0));
    assert!(looks("the app's files, and an older list")
        .iter()
        .any(|&n| n > 0));
    assert!(looks("not known").iter().all(|&n| n == 5));
    assert!(looks("a shard draining").iter().any(|&n| n > 0));
}
