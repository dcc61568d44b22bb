//! Scale-in and rebalancing end to end: the function binary as Lambda runs it (our Runtime
//! API), against moto_server (through the counting proxy), on generated files whose bytes
//! encode their names. Draining, moving, deleting and rebalancing are checked on what is there
//! afterwards: the mount targets moto describes, the published list, the files on disk.
//!
//! Needs `moto_server` on PATH (`pip install "moto[server]"`).

#[macro_use]
mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use efs_router::{shard_index, MountTargetList, Shard, Target};
use serde_json::{json, Value};

use support::files::list_files;
use support::function::pretty;
use support::{event, has_action, has_warning, strings, Invocation, Mount, Testbed, World};

const BIN: &str = env!("CARGO_BIN_EXE_efs-mount-autoscaler");

/// With a few dozen files, every layout here is deep in the scale-in band
/// (`0.6 × 500 × (n − 1)`) and far below the scale-out line.
const THRESHOLD: u64 = 500;

/// Runs a scale-in may take per target (mark, then move + delete), with room to spare.
const MAX_RUNS: usize = 10;

// ----------------------------------------------------------------------------- files

/// The name of generated reading `i` (unique per `i`).
fn name(i: usize) -> String {
    format!("device-{i}-{}.json", 1_795_000_000_000u64 + i as u64)
}

/// The bytes of a generated file: they encode its name, so a file that moved under another
/// name, or was replaced by another file, shows.
fn content(name: &str) -> Vec<u8> {
    let reversed: String = name.chars().rev().collect();
    format!("{{\"file\":\"{name}\",\"check\":\"{reversed}\"}}\n").into_bytes()
}

/// Writes the readings `ids` into `dir` (created if missing); returns their names.
fn put_files(dir: &Path, ids: impl IntoIterator<Item = usize>) -> Vec<String> {
    fs::create_dir_all(dir).expect("create a watched directory");
    ids.into_iter()
        .map(|i| {
            let n = name(i);
            fs::write(dir.join(&n), content(&n)).expect("write a reading");
            n
        })
        .collect()
}

/// Every file of every shard directory under the mount (`/` and `/shards/*`), by
/// (root, name), with its bytes.
fn snapshot(mount: &Mount) -> BTreeMap<(String, String), Vec<u8>> {
    let mut roots = vec!["/".to_string()];
    roots.extend(mount.shard_ids().iter().map(|id| format!("/shards/{id}")));
    let mut out = BTreeMap::new();
    for root in roots {
        let dir = mount.dir_of_root(&root);
        for n in list_files(&dir) {
            let bytes = fs::read(dir.join(&n)).expect("read a file");
            out.insert((root.clone(), n), bytes);
        }
    }
    out
}

/// Every file under the mount by name, with its bytes; panics when a name is in two places.
fn files_by_name(mount: &Mount) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for ((root, n), bytes) in snapshot(mount) {
        if out.insert(n.clone(), bytes).is_some() {
            panic!("{n} is in two places (one of them {root})");
        }
    }
    out
}

/// The same names with the same bytes as `before`, each in one place only.
fn assert_files_intact(before: &BTreeMap<String, Vec<u8>>, mount: &Mount, inv: &Invocation) {
    let now = snapshot(mount);
    let mut by_name: BTreeMap<&String, Vec<&String>> = BTreeMap::new();
    for (root, n) in now.keys() {
        by_name.entry(n).or_default().push(root);
    }
    let twice: Vec<_> = by_name.iter().filter(|(_, r)| r.len() > 1).collect();
    check!(inv, twice.is_empty(), "files in two places: {twice:?}");
    let after: BTreeMap<String, Vec<u8>> = now.into_iter().map(|((_, n), b)| (n, b)).collect();
    let lost: Vec<_> = before.keys().filter(|n| !after.contains_key(*n)).collect();
    let new: Vec<_> = after.keys().filter(|n| !before.contains_key(*n)).collect();
    check!(
        inv,
        lost.is_empty() && new.is_empty(),
        "files lost: {lost:?}; files that appeared: {new:?}"
    );
    let changed: Vec<_> = before
        .iter()
        .filter(|(n, b)| after.get(*n) != Some(*b))
        .map(|(n, _)| n)
        .collect();
    check!(
        inv,
        changed.is_empty(),
        "files whose bytes changed: {changed:?}"
    );
    check_eq!(inv, before.len(), after.len());
}

/// The home shard of a file under `list`, as a client routes it (over the list's shards).
fn home(list: &MountTargetList, file: &str) -> Shard {
    let shards = list.shards();
    let i = shard_index(&format!("data/analysis/{file}"), &shards, list.strategy)
        .unwrap_or_else(|e| panic!("{file} does not route: {e}"));
    shards[i].clone()
}

// ----------------------------------------------------------------------------- world

/// A testbed with a mount target in each of `azs`, the contract's list published (roots `/`
/// then `/shards/<az-id>`), `FILE_THRESHOLD` = `THRESHOLD` and an empty first shard. The
/// function's state parameter records the targets after the first as its own (as if it had
/// created them): only those may be scaled in.
async fn testbed(azs: &[char]) -> Testbed {
    let tb = testbed_before_the_function(azs).await;
    let mut created = serde_json::Map::new();
    for t in tb.world.mount_targets().await {
        if azs[1..].iter().any(|az| tb.world.az_id(*az) == t.az_id) {
            created.insert(t.id.clone(), serde_json::json!({"az_id": t.az_id, "at": 1}));
        }
    }
    tb.world
        .put_state(&serde_json::json!({ "created": created }))
        .await;
    tb
}

/// The same world, but every mount target was there before the function: none is its own.
async fn testbed_before_the_function(azs: &[char]) -> Testbed {
    let mut tb = Testbed::new(BIN, World::builder().mount_targets_in(azs)).await;
    tb.trust_ecs_alone();
    tb.env("FILE_THRESHOLD", THRESHOLD.to_string());
    fs::create_dir_all(tb.mount.watch_dir()).expect("create the first shard's directory");
    tb
}

/// The published list, which must parse.
async fn published_list(tb: &Testbed) -> MountTargetList {
    let text = tb.world.published().await.value;
    MountTargetList::from_json(&text)
        .unwrap_or_else(|e| panic!("the published list does not parse ({e}): {text}"))
}

/// The published entry in us-east-1`az`.
fn entry_in(list: &MountTargetList, world: &World, az: char) -> Target {
    let az_id = world.az_id(az);
    list.mount_targets
        .iter()
        .find(|t| t.az_id.as_deref() == Some(az_id.as_str()))
        .cloned()
        .unwrap_or_else(|| panic!("no entry in {az_id}: {}", list.to_json()))
}

fn draining_ids(list: &MountTargetList) -> Vec<String> {
    list.mount_targets
        .iter()
        .filter(|t| t.draining)
        .map(|t| t.id.clone())
        .collect()
}

/// The published list after a run, checked: it parses as the contract's JSON; it lists only
/// targets that exist, are available and whose shard directory exists, with their described
/// address and AZ; one root each; at most one target draining, never the first shard, and
/// not all of them; the response's `mount_targets` is this list.
async fn checked_list(tb: &Testbed, inv: &Invocation) -> MountTargetList {
    let text = tb.world.published().await.value;
    let list = MountTargetList::from_json(&text).unwrap_or_else(|e| {
        panic!(
            "the published list does not parse ({e}): {text}\n{}",
            inv.describe()
        )
    });
    let described = tb.world.mount_targets().await;
    let context = format!(
        "published {text}\ndescribed {described:#?}\n{}",
        inv.describe()
    );
    for t in &list.mount_targets {
        let d = described
            .iter()
            .find(|d| d.id == t.id)
            .unwrap_or_else(|| panic!("{} is published but does not exist\n{context}", t.id));
        assert_eq!(d.state, "available", "{} published\n{context}", t.id);
        assert_eq!(d.ip, t.ip, "ip of {}\n{context}", t.id);
        assert_eq!(
            t.az_id.as_deref(),
            Some(d.az_id.as_str()),
            "az_id of {}\n{context}",
            t.id
        );
        assert!(
            tb.mount.dir_of_root(&t.root).is_dir(),
            "{} is published with root {} whose directory does not exist\n{context}",
            t.id,
            t.root
        );
    }
    let roots: BTreeSet<&str> = list.mount_targets.iter().map(|t| t.root.as_str()).collect();
    assert_eq!(
        roots.len(),
        list.mount_targets.len(),
        "two entries share a root\n{context}"
    );
    for shard in list.shards() {
        assert!(
            tb.mount.dir_of_root(&shard.root).is_dir(),
            "shard {} of {} is published but its directory does not exist\n{context}",
            shard.root,
            shard.id
        );
    }
    assert_eq!(
        list.mount_targets.iter().filter(|t| t.root == "/").count(),
        1,
        "the first shard `/` must stay listed\n{context}"
    );
    // An announcement lists the next list's new targets draining besides a drain's.
    let announcing = ["announced", "waiting"].map(|h| json!(h));
    assert!(
        draining_ids(&list).len() <= 1 || announcing.contains(&inv.response()["homes"]),
        "more than one target draining\n{context}"
    );
    assert!(
        list.mount_targets
            .iter()
            .all(|t| !(t.draining && t.root == "/")),
        "the first shard is draining\n{context}"
    );
    assert!(
        list.mount_targets.iter().any(|t| !t.draining),
        "every target is draining: no shard for new files\n{context}"
    );
    let raw: Value = serde_json::from_str(&text).expect("parsed above");
    assert_eq!(
        inv.response()["mount_targets"],
        raw["mount_targets"],
        "the response's list is not the published one\n{context}"
    );
    list
}

// ----------------------------------------------------------------------------- responses

/// `deleted` of the response (absent: none).
fn deleted(r: &Value) -> Vec<String> {
    support::strings(r, "deleted")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Moves {
    moved: u64,
    dropped_older: u64,
    remaining: u64,
    skipped: u64,
    failed: u64,
}

/// `moves` of the response, which must be there.
fn moves(inv: &Invocation) -> Moves {
    let m = &inv.response()["moves"];
    let field = |k: &str| {
        m[k].as_u64().unwrap_or_else(|| {
            panic!(
                "no whole number moves.{k} in the response\n{}",
                inv.describe()
            )
        })
    };
    Moves {
        moved: field("moved"),
        dropped_older: field("dropped_older"),
        remaining: field("remaining"),
        skipped: field("skipped"),
        failed: field("failed"),
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

fn rebalance(max_moves: u64) -> Value {
    json!({"action": "rebalance", "max_moves": max_moves})
}

// ----------------------------------------------------------------------------- scale-in

/// What one reconcile run did to the world, checked against what it says: every list it
/// leaves is valid, files are intact, at most one target goes, only one that the function
/// was draining, whose emptied shard had already left the published list (publish, converge,
/// then delete), never the first, and a changed list is followed by a redeploy.
async fn reconcile_checked(
    tb: &Testbed,
    files: &BTreeMap<String, Vec<u8>>,
) -> (Invocation, MountTargetList) {
    run_checked(tb, files, &event("reconcile")).await
}

/// [`reconcile_checked`] for another event that reconciles (the undo event).
async fn run_checked(
    tb: &Testbed,
    files: &BTreeMap<String, Vec<u8>>,
    ev: &Value,
) -> (Invocation, MountTargetList) {
    let targets_before = tb.world.mount_targets().await;
    let list_before = published_list(tb).await;
    let state_before = tb.world.state().await;
    let param_before = tb.world.published().await;
    let deployments_before = tb.world.deployment_ids().await;

    let inv = tb.invoke(ev).await;
    let r = inv.response().clone();
    let list = checked_list(tb, &inv).await;
    assert_files_intact(files, &tb.mount, &inv);

    let targets_after = tb.world.mount_targets().await;
    let gone: BTreeSet<String> = targets_before
        .iter()
        .filter(|t| !targets_after.iter().any(|a| a.id == t.id))
        .map(|t| t.id.clone())
        .collect();
    let said: BTreeSet<String> = deleted(&r).into_iter().collect();
    check_eq!(
        inv,
        gone,
        said,
        "the targets gone are not those the response says it deleted"
    );
    check!(
        inv,
        gone.len() <= 1,
        "more than one target deleted in a run"
    );
    check!(
        inv,
        targets_after
            .iter()
            .all(|t| targets_before.iter().any(|b| b.id == t.id)),
        "a scale-in created a mount target: {targets_after:#?}"
    );
    for id in &gone {
        let drain = &state_before["draining"][id];
        check!(
            inv,
            drain["unlisted"] == json!(true),
            "deleted {id}, which was not drained and unlisted before the run: {state_before}"
        );
        check!(
            inv,
            list_before.mount_targets.iter().all(|t| &t.id != id),
            "deleted {id} while it was still published: {}",
            list_before.to_json()
        );
        let root = drain["root"].as_str().unwrap_or_default().to_string();
        check_ne!(inv, root, "/", "deleted the first shard");
        let left = list_files(&tb.mount.dir_of_root(&root));
        check!(
            inv,
            left.is_empty(),
            "deleted {id} while its shard still holds {left:?}"
        );
        check!(
            inv,
            list.mount_targets.iter().all(|t| &t.id != id),
            "deleted {id} but it is still published"
        );
    }
    if tb.world.published().await.value != param_before.value {
        check_ne!(
            inv,
            tb.world.deployment_ids().await,
            deployments_before,
            "the list changed but the service was not redeployed"
        );
    }
    (inv, list)
}

#[tokio::test(flavor = "multi_thread")]
async fn three_targets_with_few_files_scale_in_to_the_first_one_by_one_files_intact() {
    let mut tb = testbed(&['a', 'b', 'c']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    let start = published_list(&tb).await;
    assert_eq!(start.mount_targets.len(), 3, "{}", start.to_json());
    let first = start.mount_targets[0].clone();
    assert_eq!(first.root, "/");
    let b = entry_in(&start, &tb.world, 'b');
    let c = entry_in(&start, &tb.world, 'c');
    put_files(&tb.mount.watch_dir(), 0..12);
    put_files(&tb.mount.dir_of_root(&b.root), 100..107);
    put_files(&tb.mount.dir_of_root(&c.root), 200..204);
    let files = files_by_name(&tb.mount);
    assert_eq!(files.len(), 12 + 7 + 4);

    let mut drained: Vec<String> = Vec::new();
    let mut runs = Vec::new();
    loop {
        assert!(
            runs.len() < MAX_RUNS,
            "still {} targets after {MAX_RUNS} runs; the last:\n{}",
            tb.world.mount_targets().await.len(),
            runs.last().map(Invocation::describe).unwrap_or_default()
        );
        let (inv, list) = reconcile_checked(&tb, &files).await;
        let r = inv.response();
        if let Some(m) = r.get("moves").filter(|m| !m.is_null()) {
            check_eq!(inv, m["failed"], json!(0));
            check_eq!(inv, m["skipped"], json!(0));
        }
        for id in draining_ids(&list) {
            if !drained.contains(&id) {
                drained.push(id);
            }
        }
        runs.push(inv);
        if tb.world.mount_targets().await.len() == 1 {
            break;
        }
    }
    let log = runs
        .iter()
        .map(|i| pretty(i.response()))
        .collect::<Vec<_>>()
        .join("\n");

    // The one with the fewest files went first, and only the first shard is left.
    assert_eq!(
        drained,
        vec![c.id.clone(), b.id.clone()],
        "drain order\n{log}"
    );
    let targets = tb.world.mount_targets().await;
    assert_eq!(targets.len(), 1, "{targets:#?}");
    assert_eq!(targets[0].id, first.id, "the first shard's target went");
    let list = published_list(&tb).await;
    assert_eq!(list.mount_targets.len(), 1, "{}", list.to_json());
    assert_eq!(list.mount_targets[0].id, first.id);
    assert!(!list.mount_targets[0].draining, "{}", list.to_json());
    // Every file is in the first shard, and each was moved by exactly one run.
    let at_home = list_files(&tb.mount.watch_dir());
    assert_eq!(at_home.len(), files.len(), "{log}");
    // c's 4 files moved once (to `/` or to b), b's files (its 7 and those it got) once more.
    let moved: u64 = runs
        .iter()
        .filter_map(|i| i.response()["moves"]["moved"].as_u64())
        .sum();
    assert!(
        (7 + 4..=7 + 4 + 4).contains(&moved),
        "{moved} files moved over the runs\n{log}"
    );
    assert!(
        runs.iter().any(|i| has_action(i.response(), "move_files"))
            && runs
                .iter()
                .any(|i| has_action(i.response(), "delete_mount_target")),
        "{log}"
    );

    // At one target it is steady: nothing to change.
    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("reconcile")).await;
    checked_list(&tb, &inv).await;
    tb.assert_nothing_changed(&inv);
    assert_files_intact(&files, &tb.mount, &inv);
}

/// Sets a file's modification time to `secs` after the epoch.
fn set_mtime(path: &Path, secs: u64) {
    let t = UNIX_EPOCH + Duration::from_secs(secs);
    fs::File::options()
        .write(true)
        .open(path)
        .and_then(|f| f.set_modified(t))
        .unwrap_or_else(|e| panic!("set mtime of {}: {e}", path.display()));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_drain_never_sticks_on_a_name_taken_at_home_the_latest_write_wins() {
    let mut tb = testbed(&['a', 'b']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    let start = published_list(&tb).await;
    let b = entry_in(&start, &tb.world, 'b');
    let root_dir = tb.mount.watch_dir();
    let b_dir = tb.mount.dir_of_root(&b.root);
    put_files(&root_dir, 0..6);
    put_files(&b_dir, 100..105);
    // Two names held both in the draining shard and at their only possible home: for one the
    // copy at home is newer, for the other the draining shard's.
    let (older_in_b, newer_in_b) = (name(900), name(901));
    let newest = |n: &str| format!("{{\"copy\":\"the newest of {n}\"}}").into_bytes();
    let stale = |n: &str| format!("{{\"copy\":\"a stale {n}\"}}").into_bytes();
    fs::write(root_dir.join(&older_in_b), newest(&older_in_b)).unwrap();
    fs::write(b_dir.join(&older_in_b), stale(&older_in_b)).unwrap();
    set_mtime(&b_dir.join(&older_in_b), 1_000);
    set_mtime(&root_dir.join(&older_in_b), 2_000);
    fs::write(root_dir.join(&newer_in_b), stale(&newer_in_b)).unwrap();
    fs::write(b_dir.join(&newer_in_b), newest(&newer_in_b)).unwrap();
    set_mtime(&root_dir.join(&newer_in_b), 1_000);
    set_mtime(&b_dir.join(&newer_in_b), 2_000);
    // A nested file: moved to the same relative path at home.
    fs::create_dir_all(b_dir.join("2024-01")).unwrap();
    fs::write(b_dir.join("2024-01").join("nested.json"), b"nested").unwrap();

    let mut runs = Vec::new();
    while tb.world.mount_targets().await.len() == 2 {
        assert!(
            runs.len() < MAX_RUNS,
            "b never went:\n{}",
            runs.iter()
                .map(Invocation::describe)
                .collect::<Vec<_>>()
                .join("\n")
        );
        let inv = tb.invoke(&event("reconcile")).await;
        // Every list the run leaves is checked (valid, its roots intact).
        checked_list(&tb, &inv).await;
        runs.push(inv);
    }
    let log = runs
        .iter()
        .map(|i| pretty(i.response()))
        .collect::<Vec<_>>()
        .join("\n");
    // The newest version of each name is at home, the stale ones are gone, nothing else moved
    // but b's files, and the drain ended: b's tree is empty and its target deleted.
    assert_eq!(
        fs::read(root_dir.join(&older_in_b)).unwrap(),
        newest(&older_in_b),
        "{log}"
    );
    assert_eq!(
        fs::read(root_dir.join(&newer_in_b)).unwrap(),
        newest(&newer_in_b),
        "{log}"
    );
    assert_eq!(
        fs::read(root_dir.join("2024-01").join("nested.json")).unwrap(),
        b"nested"
    );
    assert!(list_files(&b_dir).is_empty(), "{log}");
    assert!(
        !b_dir.join("2024-01").exists(),
        "the drain removes the directories it empties"
    );
    for i in (0..6).chain(100..105) {
        let n = name(i);
        assert_eq!(
            fs::read(root_dir.join(&n)).unwrap(),
            content(&n),
            "{n}\n{log}"
        );
    }
    let dropped: u64 = runs
        .iter()
        .filter_map(|i| i.response()["moves"]["dropped_older"].as_u64())
        .sum();
    assert_eq!(dropped, 1, "{log}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cool_down_that_has_not_passed_drains_nothing_but_keeps_the_timer() {
    let mut tb = testbed(&['a', 'b', 'c']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "3600");
    let start = published_list(&tb).await;
    put_files(&tb.mount.watch_dir(), 0..10);
    put_files(
        &tb.mount.dir_of_root(&entry_in(&start, &tb.world, 'b').root),
        100..105,
    );
    put_files(
        &tb.mount.dir_of_root(&entry_in(&start, &tb.world, 'c').root),
        200..203,
    );
    let layout = snapshot(&tb.mount);
    let param = tb.world.published().await;
    let deployments = tb.world.deployment_ids().await;

    let mut since = None;
    for run in 1..=2 {
        let t0 = now_secs();
        let inv = tb.invoke(&event("reconcile")).await;
        let r = inv.response();
        let list = checked_list(&tb, &inv).await;
        check!(
            inv,
            draining_ids(&list).is_empty(),
            "run {run} drained within the cool-down"
        );
        for a in ["move_files", "delete_mount_target", "publish"] {
            check!(inv, !has_action(r, a), "run {run}: {a}");
        }
        tb.assert_nothing_changed(&inv);
        assert_eq!(tb.world.published().await, param, "run {run}");
        assert_eq!(tb.world.deployment_ids().await, deployments, "run {run}");
        assert_eq!(tb.world.mount_targets().await.len(), 3, "run {run}");
        assert_eq!(snapshot(&tb.mount), layout, "run {run}: files moved");

        let state = tb.world.state().await;
        let below = state["below_since"]
            .as_u64()
            .unwrap_or_else(|| panic!("run {run}: no below_since in {state}\n{}", inv.describe()));
        match since {
            None => {
                assert!(
                    below >= t0 && below <= now_secs(),
                    "run {run}: below_since {below} is not the time of this run ({t0}..)"
                );
                since = Some(below);
            }
            Some(s) => check_eq!(
                inv,
                below,
                s,
                "run {run}: the timer was restarted instead of kept"
            ),
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_target_in_a_protected_az_is_kept_and_another_drains_instead() {
    let mut tb = testbed(&['a', 'b', 'c']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    // c has the fewest files and would go first; its AZ is protected.
    tb.env("PROTECTED_SUBNET_IDS", tb.world.subnet('c').id.clone());
    let start = published_list(&tb).await;
    let first = start.mount_targets[0].clone();
    let b = entry_in(&start, &tb.world, 'b');
    let c = entry_in(&start, &tb.world, 'c');
    put_files(&tb.mount.watch_dir(), 0..12);
    put_files(&tb.mount.dir_of_root(&b.root), 100..107);
    let c_files = put_files(&tb.mount.dir_of_root(&c.root), 200..203);
    let files = files_by_name(&tb.mount);

    // b drains and goes; c is never marked.
    let mut runs = Vec::new();
    while tb.world.mount_targets().await.iter().any(|t| t.id == b.id) {
        assert!(
            runs.len() < MAX_RUNS,
            "{} still there after {MAX_RUNS} runs; the last:\n{}",
            b.id,
            runs.last().map(Invocation::describe).unwrap_or_default()
        );
        let (inv, list) = reconcile_checked(&tb, &files).await;
        check!(
            inv,
            !list
                .mount_targets
                .iter()
                .any(|t| t.id == c.id && t.draining),
            "{} in the protected AZ is draining",
            c.id
        );
        if runs.is_empty() {
            check_eq!(
                inv,
                draining_ids(&list),
                vec![b.id.clone()],
                "the first run drains b instead"
            );
        }
        runs.push(inv);
    }
    let ids = tb.world.mount_target_ids().await;
    assert_eq!(ids, BTreeSet::from([first.id.clone(), c.id.clone()]));

    // Now only the first shard and the protected one are left: none may go, run after run.
    for _ in 0..2 {
        tb.proxy.reset_counts();
        let inv = tb.invoke(&event("reconcile")).await;
        let r = inv.response();
        let list = checked_list(&tb, &inv).await;
        check!(inv, draining_ids(&list).is_empty());
        check_eq!(inv, list.mount_targets.len(), 2);
        tb.assert_nothing_changed(&inv);
        check_eq!(inv, r["decision"], json!("hold_no_candidate"));
        assert_files_intact(&files, &tb.mount, &inv);
        // The protected shard keeps its own files (it may have got some of b's).
        let in_c = list_files(&tb.mount.dir_of_root(&c.root));
        check!(
            inv,
            c_files.iter().all(|n| in_c.contains(n)),
            "the protected shard's files were moved: {in_c:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn mount_targets_that_were_there_before_the_function_are_never_removed() {
    // Three targets the function did not create (an ECS task's AZ, say), few files, no
    // cool-down: they serve shards, but none is drained or deleted, run after run.
    let mut tb = testbed_before_the_function(&['a', 'b', 'c']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    put_files(&tb.mount.watch_dir(), 0..5);
    let files = files_by_name(&tb.mount);
    let before = tb.world.mount_targets().await.len();
    for _ in 0..3 {
        let (inv, list) = reconcile_checked(&tb, &files).await;
        check!(inv, draining_ids(&list).is_empty());
        check_eq!(inv, inv.response()["decision"], json!("hold_no_candidate"));
    }
    assert_eq!(tb.world.mount_targets().await.len(), before);
    assert_eq!(tb.proxy.count("DeleteMountTarget"), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn growth_while_draining_cancels_the_drain_and_deletes_nothing() {
    // A low threshold, so that a few dozen files need a second target.
    let threshold = 50;
    let mut tb = testbed(&['a', 'b']).await;
    tb.env("FILE_THRESHOLD", threshold.to_string());
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    let start = published_list(&tb).await;
    let b = entry_in(&start, &tb.world, 'b');
    let b_dir = tb.mount.dir_of_root(&b.root);
    put_files(&tb.mount.watch_dir(), 0..10);
    put_files(&b_dir, 100..105);

    // 15 files at 50 a target: within the band (<= 30), b is marked draining.
    let inv = tb.invoke(&event("reconcile")).await;
    let list = checked_list(&tb, &inv).await;
    check_eq!(inv, draining_ids(&list), vec![b.id.clone()]);

    // Then the directory grows to 55 files: more than one shard holds (50), so 2 are
    // needed (at most 56 fit two once balanced), 1 serving.
    put_files(&tb.mount.watch_dir(), 1000..1040);
    let files = files_by_name(&tb.mount);
    let deployments = tb.world.deployment_ids().await;
    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("reconcile")).await;
    let r = inv.response();
    let list = checked_list(&tb, &inv).await;
    check!(
        inv,
        draining_ids(&list).is_empty(),
        "the drain was not cancelled"
    );
    check_eq!(inv, list.mount_targets.len(), 2);
    check!(inv, has_action(r, "publish"));
    check_ne!(
        inv,
        tb.world.deployment_ids().await,
        deployments,
        "the list without the mark was not rolled out"
    );
    for a in ["move_files", "delete_mount_target", "create_mount_target"] {
        check!(inv, !has_action(r, a), "{a}");
    }
    check!(inv, deleted(r).is_empty());
    assert_eq!(
        tb.proxy.count("DeleteMountTarget"),
        0,
        "{:?}",
        tb.proxy.counts()
    );
    assert_eq!(tb.world.mount_targets().await.len(), 2);
    assert_files_intact(&files, &tb.mount, &inv);
    assert_eq!(list_files(&b_dir).len(), 5, "b's files were moved");

    // And it stays cancelled: 55 files are above the band (30).
    tb.proxy.reset_counts();
    let inv = tb.invoke(&event("reconcile")).await;
    let list = checked_list(&tb, &inv).await;
    check!(inv, draining_ids(&list).is_empty());
    tb.assert_nothing_changed(&inv);
    assert_files_intact(&files, &tb.mount, &inv);
}

// ----------------------------------------------------------------------------- rebalance

/// The first `n` readings (from `from` on) whose home under `list` is the entry with `root`.
fn homed_at(list: &MountTargetList, root: &str, from: usize, n: usize) -> Vec<usize> {
    (from..)
        .filter(|&i| home(list, &name(i)).root == root)
        .take(n)
        .collect()
}

/// Misplaced files under `list`: those not in their home's directory.
fn misplaced(mount: &Mount, list: &MountTargetList) -> Vec<(String, String)> {
    snapshot(mount)
        .into_keys()
        .filter(|(root, n)| home(list, n).root != *root)
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rebalance_out_of_time_stops_walking_and_says_its_count_is_partial() {
    let tb = testbed(&['a', 'b']).await;
    let list = published_list(&tb).await;
    let b = entry_in(&list, &tb.world, 'b');
    put_files(&tb.mount.watch_dir(), homed_at(&list, &b.root, 0, 20));
    let files = files_by_name(&tb.mount);
    // Told a deadline inside the margin the function keeps: no time to walk, let alone move
    // (waited for as long as it takes to answer, whatever this host's speed).
    let inv = tb
        .invoke_told(&rebalance(1000), Duration::from_secs(5))
        .await;
    check_eq!(inv, inv.response()["moves"]["incomplete"], json!(true));
    check_eq!(inv, moves(&inv).moved, 0);
    assert_files_intact(&files, &tb.mount, &inv);
    // With time, the walk is whole: the flag is gone and nothing is left.
    let inv = tb.invoke(&rebalance(1000)).await;
    check!(inv, inv.response()["moves"].get("incomplete").is_none());
    check_eq!(inv, (moves(&inv).moved, moves(&inv).remaining), (20, 0));
    assert_files_intact(&files, &tb.mount, &inv);
}

/// What one reader beside a run saw: its reads (or looks) by place.
#[derive(Debug, Default)]
struct ReaderSaw {
    passes: usize,
    by_place: BTreeMap<&'static str, usize>,
}

/// Readers routing by the published list, each with a router of its own, go over every file
/// written before a rebalance again and again while the function moves the misplaced ones
/// home, and once more after it: one looks (`locate`, which moves nothing), one reads
/// (`read_with_fallback`, which moves what it finds away from home, racing the function's
/// mover). Every file written before the run exists all along, so every look and every read
/// of every one of them must find it, with its own bytes: a "not found" here is a lost file,
/// never an accepted answer.
#[tokio::test(flavor = "multi_thread")]
async fn readers_beside_a_rebalance_find_every_file_written_before_it() {
    use efs_router::{Found, Layout, Location, Router};
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    let tb = testbed(&['a', 'b']).await;
    let list = published_list(&tb).await;
    let root = list.mount_targets[0].root.clone();
    let b = entry_in(&list, &tb.world, 'b');
    put_files(&tb.mount.watch_dir(), homed_at(&list, &root, 0, 50));
    put_files(&tb.mount.watch_dir(), homed_at(&list, &b.root, 0, 200));
    put_files(
        &tb.mount.dir_of_root(&b.root),
        homed_at(&list, &root, 10_000, 200),
    );
    let files = files_by_name(&tb.mount);
    assert_eq!(files.len(), 450);
    let files = Arc::new(files);
    let stop = Arc::new(AtomicBool::new(false));
    let reader = |moves: bool| {
        let (files, stop) = (files.clone(), stop.clone());
        let router = Router::new(list.clone(), Layout::single_mount(tb.mount.path()))
            .expect("the published list fits a single mount");
        std::thread::spawn(move || -> Result<ReaderSaw, String> {
            let mut saw = ReaderSaw::default();
            loop {
                // Whether the run had ended before this pass began: then it is the last.
                let last = stop.load(Ordering::Acquire);
                for (n, bytes) in files.iter() {
                    let path = format!("data/analysis/{n}");
                    let place = if moves {
                        let read = router
                            .read_with_fallback(&path)
                            .map_err(|e| format!("read {path}: {e} ({saw:?})"))?;
                        if read.data != *bytes {
                            return Err(format!("read {path}: not its bytes ({saw:?})"));
                        }
                        // Slowly: the run's moves and this reader's overlap.
                        std::thread::sleep(Duration::from_millis(1));
                        read.place.as_str()
                    } else {
                        let found = match router.locate(&path) {
                            Ok(Location { found, .. }) => found,
                            Err(e) => return Err(format!("locate {path}: {e} ({saw:?})")),
                        };
                        std::thread::sleep(Duration::from_micros(200));
                        match found {
                            Found::Home => "home",
                            Found::Elsewhere { .. } => "elsewhere",
                            Found::Missing => {
                                return Err(format!("locate {path}: missing ({saw:?})"))
                            }
                        }
                    };
                    *saw.by_place.entry(place).or_default() += 1;
                }
                saw.passes += 1;
                if last {
                    return Ok(saw);
                }
            }
        })
    };
    let readers = [reader(false), reader(true)];
    let inv = tb.invoke(&rebalance(10_000)).await;
    stop.store(true, Ordering::Release);
    let saw: Vec<ReaderSaw> = readers
        .into_iter()
        .map(|r| {
            r.join()
                .expect("a reader panicked")
                .unwrap_or_else(|e| panic!("{e}\n{}", inv.describe()))
        })
        .collect();
    println!(
        "beside a rebalance that moved {}: the looking reader {:?}, the reading reader {:?}",
        moves(&inv).moved,
        saw[0],
        saw[1]
    );
    check_eq!(inv, moves(&inv).remaining, 0);
    for s in &saw {
        check!(inv, s.passes >= 1, "{saw:?}");
    }
    // Between them, the function and the reading reader moved all 400 misplaced files home.
    let moved_by_reader = saw[1].by_place.get("moved-home").copied().unwrap_or(0) as u64;
    check!(
        inv,
        moves(&inv).moved + moved_by_reader >= 400,
        "moved {} by the run, {moved_by_reader} by the reader",
        moves(&inv).moved
    );
    assert!(misplaced(&tb.mount, &list).is_empty());
    assert_files_intact(&files, &tb.mount, &inv);
}

#[tokio::test(flavor = "multi_thread")]
async fn rebalance_respects_max_moves_and_finishes_over_several_runs() {
    let tb = testbed(&['a', 'b']).await;
    let list = published_list(&tb).await;
    let root = list.mount_targets[0].root.clone();
    let b = entry_in(&list, &tb.world, 'b');
    let root_dir = tb.mount.watch_dir();
    let b_dir = tb.mount.dir_of_root(&b.root);
    // 10 files at home in each shard, and 25 + 25 in the other one's.
    put_files(&root_dir, homed_at(&list, &root, 0, 10));
    put_files(&b_dir, homed_at(&list, &b.root, 0, 10));
    put_files(&root_dir, homed_at(&list, &b.root, 10_000, 25));
    put_files(&b_dir, homed_at(&list, &root, 10_000, 25));
    let files = files_by_name(&tb.mount);
    assert_eq!(files.len(), 70);
    assert_eq!(misplaced(&tb.mount, &list).len(), 50);

    for (run, (moved, remaining)) in [(20, 30), (20, 10), (10, 0), (0, 0)]
        .into_iter()
        .enumerate()
    {
        let inv = tb.invoke(&rebalance(20)).await;
        let m = moves(&inv);
        check_eq!(
            inv,
            m,
            Moves {
                moved,
                dropped_older: 0,
                remaining,
                skipped: 0,
                failed: 0
            },
            "run {}",
            run + 1
        );
        check!(inv, has_action(inv.response(), "move_files"));
        assert_files_intact(&files, &tb.mount, &inv);
        check_eq!(
            inv,
            misplaced(&tb.mount, &list).len() as u64,
            remaining,
            "run {}: misplaced files left vs reported remaining",
            run + 1
        );
        assert_eq!(
            published_list(&tb).await,
            list,
            "rebalance changed the list"
        );
    }
    assert!(
        tb.proxy.mutating_calls().is_empty(),
        "rebalance changed AWS state: {:?}",
        tb.proxy.counts()
    );

    // Every file is at its home per the published list.
    let list = published_list(&tb).await;
    for ((r, n), _) in snapshot(&tb.mount) {
        assert_eq!(home(&list, &n).root, r, "{n} is not at home");
    }
    assert_eq!(list_files(&root_dir).len() + list_files(&b_dir).len(), 70);

    // The sample event on the balanced layout moves nothing.
    assert_eq!(event("rebalance")["max_moves"], json!(10_000));
    let before = snapshot(&tb.mount);
    let inv = tb.invoke(&event("rebalance")).await;
    check_eq!(
        inv,
        moves(&inv),
        Moves {
            moved: 0,
            dropped_older: 0,
            remaining: 0,
            skipped: 0,
            failed: 0
        }
    );
    assert_eq!(snapshot(&tb.mount), before, "a balanced layout changed");
    assert!(
        tb.proxy.mutating_calls().is_empty(),
        "{:?}",
        tb.proxy.counts()
    );
}

/// Where a rebalance run says the next one goes on: (root, path), or `None` at a pass's end.
fn resume_at(inv: &Invocation) -> Option<(String, String)> {
    let at = &inv.response()["moves"]["resume_at"];
    (!at.is_null()).then(|| {
        let part = |k: &str| {
            at[k]
                .as_str()
                .unwrap_or_else(|| panic!("resume_at.{k}"))
                .to_owned()
        };
        (part("root"), part("path"))
    })
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rebalance_capped_in_visits_goes_on_where_it_stopped_until_every_file_is_home() {
    const CAP: u64 = 7;
    let mut tb = testbed(&['a', 'b']).await;
    tb.env("REBALANCE_MAX_VISITS", CAP.to_string());
    let list = published_list(&tb).await;
    let root = list.mount_targets[0].root.clone();
    let b = entry_in(&list, &tb.world, 'b');
    assert!(root < b.root, "the walk takes / first");
    let (root_dir, b_dir) = (tb.mount.watch_dir(), tb.mount.dir_of_root(&b.root));
    put_files(&root_dir, homed_at(&list, &root, 0, 10));
    put_files(&b_dir, homed_at(&list, &b.root, 0, 10));
    put_files(&root_dir, homed_at(&list, &b.root, 10_000, 12));
    put_files(&b_dir, homed_at(&list, &root, 10_000, 13));
    let files = files_by_name(&tb.mount);
    assert_eq!((files.len(), misplaced(&tb.mount, &list).len()), (45, 25));

    // Each run looks at CAP files and says where the next goes on; positions only advance.
    // The 12 files moved from / to the later shard are visited again there, at home: every
    // other visit is of a file not visited before in the pass.
    let (mut visited, mut moved, mut runs) = (Vec::new(), 0, 0);
    let mut last: Option<(String, String)> = None;
    loop {
        runs += 1;
        assert!(runs <= 20, "the pass does not end");
        let inv = tb.invoke(&rebalance(1000)).await;
        let m = moves(&inv);
        let r = &inv.response()["moves"];
        check_eq!(inv, (m.remaining, m.failed, m.skipped), (0, 0, 0));
        check_eq!(inv, r["comparison"], json!("full"));
        assert_files_intact(&files, &tb.mount, &inv);
        visited.push(r["visited"].as_u64().expect("moves.visited"));
        moved += m.moved;
        let at = resume_at(&inv);
        check_eq!(inv, r.get("incomplete").is_some(), at.is_some());
        check!(
            inv,
            at.is_none() || at > last,
            "went back: {at:?} after {last:?}"
        );
        if at.is_none() {
            break;
        }
        check_eq!(inv, *visited.last().unwrap(), CAP);
        let state = tb.world.state().await;
        check_eq!(
            inv,
            state["rebalancing"]["next"]["path"],
            json!(at.as_ref().unwrap().1)
        );
        last = at;
    }
    assert_eq!(visited.iter().sum::<u64>(), 45 + 12, "{visited:?}");
    assert_eq!(runs, 57u64.div_ceil(CAP) as usize, "{visited:?}");
    assert_eq!(moved, 25);
    assert!(misplaced(&tb.mount, &list).is_empty());
    // The pass left every file at home under this list: recorded, and the state keeps no
    // position (the next run starts a pass).
    let state = tb.world.state().await;
    assert!(
        state["rebalancing"]["balanced"]["sha256"].is_string(),
        "{state}"
    );
    assert!(state["rebalancing"].get("next").is_none(), "{state}");
    let inv = tb.invoke(&rebalance(1000)).await;
    check_eq!(inv, inv.response()["moves"]["visited"], json!(CAP));
    check_eq!(inv, moves(&inv).moved, 0);
    assert!(
        tb.proxy.mutating_calls().is_empty(),
        "rebalance changed AWS state: {:?}",
        tb.proxy.counts()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rebalance_keeps_the_newest_copy_of_a_name_and_skips_what_is_not_a_file() {
    let tb = testbed(&['a', 'b']).await;
    let list = published_list(&tb).await;
    let root = list.mount_targets[0].root.clone();
    let b = entry_in(&list, &tb.world, 'b');
    let root_dir = tb.mount.watch_dir();
    let b_dir = tb.mount.dir_of_root(&b.root);
    let homed_b = homed_at(&list, &b.root, 0, 3);
    // The same name at home (b, older) and misplaced (in `/`, newer): the newer replaces it.
    let clash = name(homed_b[0]);
    let at_home = b"{\"copy\":\"older, at home\"}".to_vec();
    let misplaced = b"{\"copy\":\"newer, misplaced\"}".to_vec();
    fs::create_dir_all(&b_dir).unwrap();
    fs::write(b_dir.join(&clash), &at_home).unwrap();
    fs::write(root_dir.join(&clash), &misplaced).unwrap();
    set_mtime(&b_dir.join(&clash), 1_000);
    set_mtime(&root_dir.join(&clash), 2_000);
    // One more misplaced file that can move, one at home in `/`, and a planted link whose
    // name routes to b: not data, never moved or followed.
    let movable = put_files(&root_dir, [homed_b[1]]).remove(0);
    let stays = put_files(&root_dir, homed_at(&list, &root, 0, 1)).remove(0);
    let link = name(homed_b[2]);
    std::os::unix::fs::symlink("/etc/hostname", root_dir.join(&link)).unwrap();

    for run in 1..=2 {
        let inv = tb.invoke(&event("rebalance")).await;
        let m = moves(&inv);
        check_eq!(
            inv,
            (m.moved, m.dropped_older, m.remaining, m.skipped, m.failed),
            (if run == 1 { 2 } else { 0 }, 0, 0, 1, 0),
            "run {run}"
        );
        assert_eq!(
            fs::read(b_dir.join(&clash)).unwrap(),
            misplaced,
            "run {run}"
        );
        assert!(!root_dir.join(&clash).exists(), "run {run}");
        assert_eq!(fs::read(b_dir.join(&movable)).unwrap(), content(&movable));
        assert!(!root_dir.join(&movable).exists(), "run {run}");
        assert_eq!(fs::read(root_dir.join(&stays)).unwrap(), content(&stays));
        assert!(
            fs::symlink_metadata(root_dir.join(&link))
                .unwrap()
                .file_type()
                .is_symlink()
                && !b_dir.join(&link).exists(),
            "run {run}: the link was moved"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn the_targets_the_function_created_go_again_when_the_files_shrink() {
    // One target that was there before; 1,010 files at 500 a target need 3: two runs add two
    // (one a run), and the function records them as its own.
    let mut tb = testbed_before_the_function(&['a']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    let original = published_list(&tb).await.mount_targets[0].id.clone();
    let names = put_files(&tb.mount.watch_dir(), 0..1010);
    for expected in [2, 3] {
        let inv = tb.invoke(&event("reconcile")).await;
        check!(inv, has_action(inv.response(), "create_mount_target"));
        check_eq!(inv, tb.world.mount_targets().await.len(), expected);
    }
    let created: BTreeSet<String> = tb
        .world
        .mount_targets()
        .await
        .into_iter()
        .map(|t| t.id)
        .filter(|id| *id != original)
        .collect();

    // The files shrink to 20 (all still in the first shard: a scale-out moves none).
    for n in &names[20..] {
        fs::remove_file(tb.mount.watch_dir().join(n)).expect("remove a reading");
    }
    let files = files_by_name(&tb.mount);
    let mut gone = BTreeSet::new();
    for _ in 0..2 * MAX_RUNS {
        if tb.world.mount_targets().await.len() == 1 {
            break;
        }
        let (inv, _) = reconcile_checked(&tb, &files).await;
        gone.extend(deleted(inv.response()));
    }
    assert_eq!(
        gone, created,
        "the targets removed are not the ones the function created"
    );
    let left: Vec<String> = tb
        .world
        .mount_targets()
        .await
        .into_iter()
        .map(|t| t.id)
        .collect();
    assert_eq!(left, vec![original]);
}

// ----------------------------------------------------------------------------- the fleet rule

#[tokio::test(flavor = "multi_thread")]
async fn files_move_and_a_target_goes_only_while_every_service_runs_the_list() {
    // ECS's rolling update, played by the proxy: an old deployment keeps running tasks (on the
    // previous list) until the test completes the rollout.
    let mut tb = testbed(&['a', 'b', 'c']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    tb.proxy.hold_rollouts();
    let start = published_list(&tb).await;
    let c = entry_in(&start, &tb.world, 'c');
    put_files(&tb.mount.watch_dir(), 0..12);
    put_files(
        &tb.mount.dir_of_root(&entry_in(&start, &tb.world, 'b').root),
        100..107,
    );
    put_files(&tb.mount.dir_of_root(&c.root), 200..204);
    let files = files_by_name(&tb.mount);

    // Run 1 marks c draining, publishes and redeploys: the old tasks still run.
    let (inv, list) = reconcile_checked(&tb, &files).await;
    check_eq!(inv, draining_ids(&list), vec![c.id.clone()]);
    assert_eq!(tb.proxy.rolling_services(), vec!["ingest".to_string()]);

    // While they run, nothing moves, however many runs; the response says what it waits for.
    for run in 2..=3 {
        tb.proxy.reset_counts();
        let (inv, _) = reconcile_checked(&tb, &files).await;
        let r = inv.response();
        check!(inv, !has_action(r, "move_files"), "run {run}");
        check!(
            inv,
            strings(r, "waiting_for").contains(&"ingest".to_string()),
            "run {run}"
        );
        assert_eq!(list_files(&tb.mount.dir_of_root(&c.root)).len(), 4);
        tb.assert_nothing_changed(&inv);
    }

    // The rollout completes: the files move, and the list goes out without c. The target
    // stays while the services roll out that list.
    tb.proxy.complete_rollouts();
    let (inv, list) = reconcile_checked(&tb, &files).await;
    check!(inv, has_action(inv.response(), "move_files"));
    check!(inv, list.mount_targets.iter().all(|t| t.id != c.id));
    check!(inv, !has_action(inv.response(), "delete_mount_target"));
    assert_eq!(tb.world.mount_targets().await.len(), 3);
    let (inv, _) = reconcile_checked(&tb, &files).await;
    check!(inv, !has_action(inv.response(), "delete_mount_target"));
    assert_eq!(tb.world.mount_targets().await.len(), 3);

    // Once they run the list without it, c goes.
    tb.proxy.complete_rollouts();
    let (inv, _) = reconcile_checked(&tb, &files).await;
    check_eq!(inv, deleted(inv.response()), vec![c.id.clone()]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rebalance_waits_for_the_fleet() {
    let tb = testbed(&['a', 'b']).await;
    tb.proxy.hold_rollouts();
    let start = published_list(&tb).await;
    let b = entry_in(&start, &tb.world, 'b');
    // Misplaced files in b's shard.
    let names: Vec<String> = (0..40).map(name).collect();
    let misplaced: Vec<usize> = (0..40)
        .filter(|i| home(&start, &names[*i]).id != b.id)
        .collect();
    put_files(&tb.mount.dir_of_root(&b.root), misplaced.iter().copied());
    // The list is published again, so the service must be redeployed; that rollout is held:
    // its old tasks may still run an older list.
    tb.world.put_parameter(&start.to_json()).await;
    tb.invoke(&event("reconcile")).await;
    assert_eq!(tb.proxy.rolling_services(), vec!["ingest".to_string()]);
    let inv = tb.invoke(&rebalance(100)).await;
    let r = inv.response();
    check!(inv, !has_action(r, "move_files"));
    check!(
        inv,
        strings(r, "waiting_for").contains(&"ingest".to_string())
    );
    tb.proxy.complete_rollouts();
    let inv = tb.invoke(&rebalance(100)).await;
    check_eq!(inv, moves(&inv).moved, misplaced.len() as u64);
}

// ----------------------------------------------------------------------------- a shared file system

#[tokio::test(flavor = "multi_thread")]
async fn a_draining_mark_in_the_list_on_the_protected_first_shard_is_not_obeyed() {
    let tb = testbed(&['a', 'b']).await;
    let mut list = published_list(&tb).await;
    list.mount_targets[0].draining = true; // `/`, hand-edited
    tb.world.put_parameter(&list.to_json()).await;
    put_files(&tb.mount.watch_dir(), 0..5);
    let files = files_by_name(&tb.mount);
    for _ in 0..3 {
        let (inv, list) = reconcile_checked(&tb, &files).await;
        check!(inv, draining_ids(&list).is_empty());
        check!(inv, !has_action(inv.response(), "move_files"));
        check!(inv, deleted(inv.response()).is_empty());
    }
    assert_eq!(list_files(&tb.mount.watch_dir()).len(), 5);
    assert_eq!(tb.world.mount_targets().await.len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_forged_state_file_gets_no_target_deleted() {
    // A task writes the old state file naming the AZ of a target the function did not make.
    let mut tb = testbed_before_the_function(&['a', 'b']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    let dir = tb.mount.path().join(".efs-mount-autoscaler");
    fs::create_dir_all(&dir).unwrap();
    fs::write(
        dir.join("state.json"),
        json!({"created_azs": [tb.world.az_id('b')], "below_since": 1}).to_string(),
    )
    .unwrap();
    put_files(&tb.mount.watch_dir(), 0..3);
    let files = files_by_name(&tb.mount);
    for _ in 0..4 {
        let (inv, list) = reconcile_checked(&tb, &files).await;
        check!(inv, draining_ids(&list).is_empty());
        check!(inv, deleted(inv.response()).is_empty());
    }
    assert_eq!(tb.world.mount_targets().await.len(), 2);
    assert!(tb.world.state().await.get("created").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn planted_links_and_a_fifo_on_the_file_system_neither_redirect_nor_hang_the_function() {
    let tb = testbed(&['a']).await;
    let elsewhere = tempfile::tempdir().unwrap();
    // The old state directory is a link out of the file system, with a FIFO behind it.
    std::os::unix::fs::symlink(
        elsewhere.path(),
        tb.mount.path().join(".efs-mount-autoscaler"),
    )
    .unwrap();
    let status = std::process::Command::new("mkfifo")
        .arg(elsewhere.path().join("state.json"))
        .status()
        .unwrap();
    assert!(status.success());
    // `/shards` is a link out of the file system too.
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), tb.mount.path().join("shards")).unwrap();
    put_files(&tb.mount.watch_dir(), 0..(THRESHOLD as usize + 10));

    let inv = tb
        .invoke_with_deadline(&event("reconcile"), Duration::from_secs(60))
        .await;
    check!(inv, inv.within_deadline());
    let r = inv.response();
    // The scale-out went on; the shard whose directory sits behind the link was skipped.
    check!(inv, has_action(r, "create_mount_target"));
    check!(inv, has_warning(r, "shard_skipped"));
    assert_eq!(
        fs::read_dir(outside.path()).unwrap().count(),
        0,
        "wrote through /shards"
    );
    assert_eq!(
        fs::read_dir(elsewhere.path()).unwrap().count(),
        1,
        "only the FIFO"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fifo_or_a_link_to_dev_zero_in_place_of_the_old_state_file_neither_hangs_nor_fails_a_run()
{
    for plant in ["fifo", "dev-zero"] {
        // No state parameter yet: the old file is where the function would look, once.
        let tb = testbed_before_the_function(&['a']).await;
        let dir = tb.mount.path().join(".efs-mount-autoscaler");
        fs::create_dir_all(&dir).unwrap();
        let file = dir.join("state.json");
        if plant == "fifo" {
            let status = std::process::Command::new("mkfifo")
                .arg(&file)
                .status()
                .unwrap();
            assert!(status.success());
        } else {
            std::os::unix::fs::symlink("/dev/zero", &file).unwrap();
        }
        put_files(&tb.mount.watch_dir(), 0..5);
        let inv = tb
            .invoke_with_deadline(&event("reconcile"), Duration::from_secs(60))
            .await;
        check!(inv, inv.within_deadline(), "{plant}");
        let r = inv.response();
        check!(inv, has_warning(r, "old_state_file"), "{plant}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_file_where_a_shard_directory_should_be_stops_only_that_shard() {
    let tb = testbed(&['a', 'b']).await;
    let start = published_list(&tb).await;
    let b = entry_in(&start, &tb.world, 'b');
    // A regular file at `/shards`: b's shard cannot be read.
    let shards = tb.mount.path().join("shards");
    let _ = fs::remove_dir_all(&shards);
    fs::write(&shards, b"not a directory").unwrap();
    put_files(&tb.mount.watch_dir(), 0..(2 * THRESHOLD as usize + 10));
    let inv = tb.invoke(&event("reconcile")).await;
    let r = inv.response();
    check!(inv, has_warning(r, "shard_skipped"));
    check_eq!(
        inv,
        r["files_per_shard"][&b.root],
        json!(0),
        "b's shard was read"
    );
    // The run went on: scale-out included.
    check!(inv, has_action(r, "create_mount_target"));
    let metrics: Vec<Value> = inv
        .logs
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("UnreadableShards").is_some())
        .collect();
    check!(
        inv,
        metrics
            .iter()
            .any(|m| m["UnreadableShards"].as_u64() >= Some(1))
    );
}

// ----------------------------------------------------------------------------- shards

/// Each file of `names` read through the router under the published `list`, with the file
/// system mounted once at `base`: it must return each file's own bytes. (The Python client runs
/// this same router since it binds it, so one read answers for both languages.)
fn assert_readable_through_the_router(list: &MountTargetList, base: &Path, names: &[String]) {
    let router = efs_router::Router::new(list.clone(), efs_router::Layout::single_mount(base))
        .expect("the published list fits a single mount");
    for n in names {
        let path = format!("data/analysis/{n}");
        let read = router
            .read_with_fallback(&path)
            .unwrap_or_else(|e| panic!("Rust router: {path}: {e}"));
        assert_eq!(read.data, content(n), "Rust router: {path}");
    }
}

/// Files in each shard directory of `list`, by root.
fn files_per_shard_dir(tb: &Testbed, list: &MountTargetList) -> BTreeMap<String, usize> {
    list.shards()
        .into_iter()
        .map(|t| {
            let n = list_files(&tb.mount.dir_of_root(&t.root)).len();
            (t.root, n)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_azs_shards_hold_every_directory_to_the_threshold_then_go_again() {
    // 1,000 files at a threshold of 100, 3 AZs: 15 shards (67 a shard on average, so that
    // none passes 100 once balanced) on 3 mount targets, 5 each.
    let threshold = 100usize;
    let mut tb = testbed(&['a']).await;
    tb.env("FILE_THRESHOLD", threshold.to_string());
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    put_files(&tb.mount.watch_dir(), 0..1000);
    let mut files = files_by_name(&tb.mount);

    // Scale out: a target a run in the free AZs, the shards on the targets that serve.
    let mut list = published_list(&tb).await;
    for _ in 0..MAX_RUNS {
        // The simulated fleet runs the list published last and reads version 2.
        tb.fleet_reports(&[1, 2]).await;
        let inv = tb.invoke(&event("reconcile")).await;
        list = checked_list(&tb, &inv).await;
        assert_files_intact(&files, &tb.mount, &inv);
        let r = inv.response();
        if list.mount_targets.len() == 3 && r["shards"] == r["desired_shards"] {
            check_eq!(inv, r["at_capacity"], json!(false));
            break;
        }
    }
    assert_eq!(list.mount_targets.len(), 3, "{}", list.to_json());
    assert!(list.shard_count() >= 10, "{}", list.to_json());
    let per_target: Vec<u32> = list.mount_targets.iter().map(|t| t.shards).collect();
    assert!(
        per_target.iter().max().unwrap() - per_target.iter().min().unwrap() <= 1,
        "the shards are not spread evenly: {per_target:?}"
    );
    assert_eq!(tb.world.mount_targets().await.len(), 3);

    // Rebalance until every file is at home: then no directory is over the threshold.
    for _ in 0..MAX_RUNS {
        tb.fleet_reports(&[1, 2]).await;
        let inv = tb.invoke(&rebalance(100_000)).await;
        assert_files_intact(&files, &tb.mount, &inv);
        if moves(&inv).remaining == 0 && misplaced(&tb.mount, &list).is_empty() {
            break;
        }
    }
    assert!(misplaced(&tb.mount, &list).is_empty());
    let per_dir = files_per_shard_dir(&tb, &list);
    assert_eq!(per_dir.values().sum::<usize>(), 1000, "{per_dir:?}");
    assert!(
        per_dir.values().all(|n| *n <= threshold),
        "a shard directory holds more than {threshold} files: {per_dir:?}"
    );
    let names: Vec<String> = files.keys().cloned().collect();
    assert_readable_through_the_router(&list, tb.mount.path(), &names);

    // The files shrink to 30: the shards drain (a target's last first) and leave the list,
    // then the targets the function created go; `/` stays. Nothing is lost on the way.
    let keep: BTreeSet<String> = names.iter().take(30).cloned().collect();
    for n in names.iter().filter(|n| !keep.contains(*n)) {
        let at = home(&list, n);
        fs::remove_file(tb.mount.dir_of_root(&at.root).join(n)).expect("remove a file");
    }
    files.retain(|n, _| keep.contains(n));
    let mut shard_counts = vec![list.shard_count()];
    for _ in 0..80 {
        tb.fleet_reports(&[1, 2]).await;
        let (inv, now) = reconcile_checked(&tb, &files).await;
        list = now;
        if *shard_counts.last().unwrap() != list.shard_count() {
            shard_counts.push(list.shard_count());
        }
        let r = inv.response();
        if list.shard_count() == 1 && tb.world.mount_targets().await.len() == 1 {
            check_eq!(inv, r["shards"], json!(1));
            break;
        }
    }
    assert_eq!(
        (list.mount_targets.len(), list.shard_count()),
        (1, 1),
        "{}",
        list.to_json()
    );
    assert_eq!(list.mount_targets[0].root, "/");
    assert_eq!(tb.world.mount_targets().await.len(), 1);
    // One shard at a time, never up again.
    assert!(
        shard_counts.windows(2).all(|w| w[1] == w[0] - 1),
        "{shard_counts:?}"
    );
    let names: Vec<String> = files.keys().cloned().collect();
    assert_readable_through_the_router(&list, tb.mount.path(), &names);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_migrate_event_makes_a_modulo_list_rendezvous_and_the_rebalance_brings_files_home() {
    let tb = testbed(&['a', 'b', 'c']).await;
    let start = published_list(&tb).await;
    // The original two-field form: modulo-sha256, every entry rooted at /.
    let original: Vec<Value> = start
        .mount_targets
        .iter()
        .map(|t| json!({"id": t.id, "ip": t.ip}))
        .collect();
    tb.world
        .put_parameter(&json!({ "mount_targets": original }).to_string())
        .await;
    put_files(&tb.mount.watch_dir(), 0..300);
    let files = files_by_name(&tb.mount);

    // A reconcile leaves a modulo list modulo.
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(
        inv,
        published_list(&tb).await.strategy,
        efs_router::list::Strategy::ModuloSha256
    );

    // The event: the same targets in the same order, under rendezvous, each its own root.
    let inv = tb
        .invoke(&json!({"action": "migrate", "strategy": "rendezvous"}))
        .await;
    let r = inv.response();
    check_eq!(inv, r["action"], json!("migrate"));
    check!(
        inv,
        has_action(r, "publish") && has_action(r, "force_deployment")
    );
    // Announced first: every path's home stays `/`, the new roots are listed, draining.
    check_eq!(inv, r["homes"], json!("announced"));
    let announced = checked_list(&tb, &inv).await;
    assert!(misplaced(&tb.mount, &announced).is_empty());
    assert!(announced.mount_targets[1..].iter().all(|t| t.draining));
    tb.converge(&[1]).await;
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, inv.response()["homes"], json!("switched"));
    let list = checked_list(&tb, &inv).await;
    tb.converge(&[1]).await;
    assert_eq!(list.strategy, efs_router::list::Strategy::Rendezvous);
    let ids: Vec<&str> = list.mount_targets.iter().map(|t| t.id.as_str()).collect();
    let before: Vec<&str> = start.mount_targets.iter().map(|t| t.id.as_str()).collect();
    check_eq!(inv, ids, before);
    assert_eq!(list.mount_targets[0].root, "/");
    for t in &list.mount_targets[1..] {
        check_eq!(
            inv,
            t.root,
            format!("/shards/{}", t.az_id.as_deref().unwrap_or_default())
        );
    }
    assert_files_intact(&files, &tb.mount, &inv);
    // Most files are away from home now; the rebalance brings half of them home, and every
    // file is readable meanwhile: the fallback finds (and moves home) the rest.
    let away = misplaced(&tb.mount, &list).len();
    assert!(away > 100, "{away} misplaced");
    let inv = tb.invoke(&rebalance((away / 2) as u64)).await;
    check_eq!(inv, moves(&inv).moved, (away / 2) as u64);
    assert_files_intact(&files, &tb.mount, &inv);
    let names: Vec<String> = files.keys().cloned().collect();
    assert_readable_through_the_router(&list, tb.mount.path(), &names);
    for _ in 0..MAX_RUNS {
        let inv = tb.invoke(&rebalance(100_000)).await;
        assert_files_intact(&files, &tb.mount, &inv);
        if misplaced(&tb.mount, &list).is_empty() {
            break;
        }
    }
    assert!(misplaced(&tb.mount, &list).is_empty());
    assert_readable_through_the_router(&list, tb.mount.path(), &names);
    // Sent again, it changes nothing.
    let inv = tb
        .invoke(&json!({"action": "migrate", "strategy": "rendezvous"}))
        .await;
    check!(inv, !has_action(inv.response(), "publish"));
}

// ----------------------------------------------------------------------------- client reports

/// The client id the reports of these tests use.
const OLD_CLIENT: &str = "0123456789abcdef";

/// `OLD_CLIENT` is named in `waiting_for` and `clients_behind` as routing by an older list.
fn waits_for_old_client(inv: &Invocation) {
    let r = inv.response();
    let named = format!("client {OLD_CLIENT} ");
    check!(
        inv,
        strings(r, "waiting_for")
            .iter()
            .any(|w| w.starts_with(&named)),
        "{}",
        pretty(r)
    );
    check_eq!(inv, r["clients_behind"][0]["client"], json!(OLD_CLIENT));
    check_eq!(inv, r["clients_behind"][0]["why"], json!("old-list"));
    check!(inv, r["clients_behind"][0]["last_seen"].is_u64());
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_reporting_an_old_list_holds_a_rebalance() {
    let tb = testbed(&['a', 'b']).await;
    let list = published_list(&tb).await;
    let b = entry_in(&list, &tb.world, 'b');
    put_files(&tb.mount.watch_dir(), homed_at(&list, &b.root, 0, 10));
    let files = files_by_name(&tb.mount);
    // A standalone task still routes by a list from before: nothing may move.
    tb.mount
        .report(OLD_CLIENT, r#"{"mount_targets":[]}"#, &[1, 2]);
    let inv = tb.invoke(&rebalance(1000)).await;
    check!(inv, has_warning(inv.response(), "moves_wait"));
    check!(inv, !has_action(inv.response(), "move_files"));
    waits_for_old_client(&inv);
    assert_files_intact(&files, &tb.mount, &inv);
    check_eq!(inv, misplaced(&tb.mount, &list).len(), 10);
    // It loads the published list: the rebalance goes on.
    tb.mount
        .report(OLD_CLIENT, &tb.world.published().await.value, &[1, 2]);
    let inv = tb.invoke(&rebalance(1000)).await;
    check_eq!(inv, moves(&inv).moved, 10);
    assert_files_intact(&files, &tb.mount, &inv);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rebalance_during_a_drain_names_a_client_behind_once() {
    let mut tb = testbed(&['a', 'b']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    let before = tb.world.published().await.value;
    put_files(&tb.mount.watch_dir(), 0..6);
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, inv.response()["decision"], json!("start_drain"));
    // A client still on the list before the drain holds both the drain and the rebalance.
    tb.mount.report(OLD_CLIENT, &before, &[1, 2]);
    let inv = tb.invoke(&rebalance(1000)).await;
    let r = inv.response();
    check_eq!(inv, r["decision"], json!("wait_for_clients"));
    waits_for_old_client(&inv);
    let named = format!("client {OLD_CLIENT} ");
    let waits = strings(r, "waiting_for");
    check_eq!(
        inv,
        waits.iter().filter(|w| w.starts_with(&named)).count(),
        1
    );
    check_eq!(inv, r["clients_behind"].as_array().map(Vec::len), Some(1));
    let entries = r["clients_behind"].as_array().cloned().unwrap_or_default();
    let old = entries.iter().filter(|c| c["client"] == json!(OLD_CLIENT));
    check_eq!(inv, old.count(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn planted_links_oversized_and_garbage_reports_delay_and_never_stop_the_run() {
    let tb = testbed(&['a', 'b']).await;
    let list = published_list(&tb).await;
    let b = entry_in(&list, &tb.world, 'b');
    put_files(&tb.mount.watch_dir(), homed_at(&list, &b.root, 0, 10));
    let files = files_by_name(&tb.mount);
    let current = tb.world.published().await.value;
    tb.mount.report(OLD_CLIENT, &current, &[1, 2]);
    let dir = tb.mount.reports_dir();
    // A link to a report of the current list elsewhere, an oversized file, garbage.
    let elsewhere = tb.mount.path().join("elsewhere.json");
    fs::copy(dir.join(format!("{OLD_CLIENT}.json")), &elsewhere).unwrap();
    let planted = [
        "1111111111111111.json",
        "2222222222222222.json",
        "3333333333333333.json",
    ];
    std::os::unix::fs::symlink(&elsewhere, dir.join(planted[0])).unwrap();
    fs::write(dir.join(planted[1]), vec![b' '; 5000]).unwrap();
    fs::write(dir.join(planted[2]), b"\x00garbage").unwrap();
    for event in [rebalance(1000), event("reconcile")] {
        let inv = tb.invoke(&event).await;
        let r = inv.response();
        check_eq!(inv, r["statusCode"], json!(200));
        check!(inv, has_warning(r, "report_unreadable"));
        let behind: BTreeSet<String> = r["clients_behind"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| c["client"].as_str().unwrap().to_owned())
            .collect();
        if event["action"] == "rebalance" {
            check_eq!(inv, behind, planted.iter().map(|p| p.to_string()).collect());
        }
        check!(inv, !has_action(r, "move_files"));
        assert_files_intact(&files, &tb.mount, &inv);
    }
    // Nothing followed the link, nothing removed what a task may have planted.
    assert!(dir.join(planted[0]).symlink_metadata().is_ok());
    assert!(elsewhere.exists());
    // The directory itself a link: nothing is read through it, and nothing moves.
    for p in planted {
        fs::remove_file(dir.join(p)).unwrap();
    }
    let moved = tb.mount.path().join("reports-elsewhere");
    fs::rename(&dir, &moved).unwrap();
    std::os::unix::fs::symlink(&moved, &dir).unwrap();
    let inv = tb.invoke(&rebalance(1000)).await;
    check!(inv, has_warning(inv.response(), "reports_unread"));
    check!(inv, !has_action(inv.response(), "move_files"));
    // The link was moved aside, never followed, and the directory made anew; its reports are
    // not there, so the next run still waits for them.
    check!(inv, has_warning(inv.response(), "reports_dir_repaired"));
    let aside: Vec<_> = fs::read_dir(tb.mount.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.to_string_lossy()
                .contains(".efs-router-clients.displaced-")
        })
        .collect();
    check_eq!(inv, aside.len(), 1);
    check_eq!(inv, fs::read_link(&aside[0]).unwrap(), moved.clone());
    let inv = tb.invoke(&rebalance(1000)).await;
    check!(inv, has_warning(inv.response(), "reports_unread"));
    check!(inv, !has_action(inv.response(), "move_files"));
    // Put back, the reports permit the moves again.
    fs::remove_file(&aside[0]).unwrap();
    fs::remove_dir_all(&dir).unwrap();
    fs::rename(&moved, &dir).unwrap();
    let inv = tb.invoke(&rebalance(1000)).await;
    check_eq!(inv, moves(&inv).moved, 10);
    assert_files_intact(&files, &tb.mount, &inv);
}

#[tokio::test(flavor = "multi_thread")]
async fn routers_that_cannot_read_version_2_keep_the_list_on_one_shard_a_target() {
    let tb = testbed(&['a', 'b', 'c']).await;
    let before = tb.world.published().await;
    tb.mount.generate(4 * THRESHOLD as usize);
    tb.mount.report(OLD_CLIENT, &before.value, &[1]);
    let inv = tb.invoke(&event("reconcile")).await;
    let r = inv.response();
    check_eq!(inv, r["decision"], json!("at_capacity"));
    check!(inv, has_warning(r, "list_version_held"));
    check_eq!(
        inv,
        (r["desired"].clone(), r["shards"].clone()),
        (json!(3), json!(3))
    );
    let list = published_list(&tb).await;
    check!(inv, !list.needs_version_2(), "{list:?}");
    check!(inv, list.mount_targets.iter().all(|t| t.shards == 1));
    // Once every live client reads version 2, the shards the files need go out.
    tb.mount
        .report(OLD_CLIENT, &tb.world.published().await.value, &[1, 2]);
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, inv.response()["decision"], json!("add_shards"));
    check!(inv, published_list(&tb).await.needs_version_2());
}

#[tokio::test(flavor = "multi_thread")]
async fn reports_required_lists_the_services_tasks_and_a_reported_fleet_moves() {
    let mut tb = testbed(&['a', 'b']).await;
    // The default: every running task must report.
    tb.unset("CLIENT_REPORTS");
    let list = published_list(&tb).await;
    let b = entry_in(&list, &tb.world, 'b');
    put_files(&tb.mount.watch_dir(), homed_at(&list, &b.root, 0, 10));
    let files = files_by_name(&tb.mount);
    let text = tb.world.published().await.value;
    // The service's tasks run before the function does, and report nothing.
    let tasks = tb.start_tasks().await;
    let inv = tb.invoke(&rebalance(1000)).await;
    let behind: Vec<String> = inv.response()["clients_behind"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["why"] == "unreported")
        .map(|c| c["client"].as_str().unwrap_or_default().to_owned())
        .collect();
    check_eq!(inv, behind, tasks);
    check!(
        inv,
        !has_action(inv.response(), "move_files") || moves(&inv).moved == 0
    );
    check!(inv, has_warning(inv.response(), "service_unreported"));
    // Every task reports: the files move.
    for (i, task) in tasks.iter().enumerate() {
        let id = format!("{:016x}", 0xfeed_0000 + i);
        tb.mount.report_of_task(&id, &text, &[1, 2], task);
    }
    let inv = tb.invoke(&rebalance(1000)).await;
    check_eq!(inv, moves(&inv).moved, 10);
    assert_files_intact(&files, &tb.mount, &inv);
}

#[tokio::test(flavor = "multi_thread")]
async fn undo_brings_every_file_home_to_slash_and_deletes_only_the_targets_it_created() {
    // Targets in a and b before the function, files for 6 shards at a threshold of 100: the
    // function creates c, and each of the 3 targets serves 2 shards.
    let threshold = 100usize;
    let mut tb = testbed_before_the_function(&['a', 'b']).await;
    tb.env("FILE_THRESHOLD", threshold.to_string());
    put_files(&tb.mount.watch_dir(), 0..400);
    let files = files_by_name(&tb.mount);
    let before = tb.world.mount_target_ids().await;
    let mut list = published_list(&tb).await;
    for _ in 0..MAX_RUNS {
        tb.fleet_reports(&[1, 2]).await;
        let inv = tb.invoke(&event("reconcile")).await;
        list = checked_list(&tb, &inv).await;
        let r = inv.response();
        if list.mount_targets.len() == 3 && r["shards"] == r["desired_shards"] {
            break;
        }
    }
    assert_eq!(list.mount_targets.len(), 3, "{}", list.to_json());
    assert!(
        list.mount_targets.iter().all(|t| t.shards == 2),
        "{}",
        list.to_json()
    );
    for _ in 0..MAX_RUNS {
        tb.fleet_reports(&[1, 2]).await;
        let inv = tb.invoke(&rebalance(100_000)).await;
        assert_files_intact(&files, &tb.mount, &inv);
        if misplaced(&tb.mount, &list).is_empty() {
            break;
        }
    }
    assert!(
        list_files(&tb.mount.watch_dir()).len() < 400,
        "nothing moved out of /"
    );

    // Undo, one step a run, each checked: drains one at a time, deletes only what it drained.
    let mut decisions = BTreeSet::new();
    let mut undone = None;
    for _ in 0..60 {
        tb.fleet_reports(&[1, 2]).await;
        let (inv, now) = run_checked(&tb, &files, &json!({"action": "undo"})).await;
        list = now;
        let decision = inv.response()["decision"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        decisions.insert(decision.clone());
        eprintln!("undo: {decision}: {}", inv.response()["reason"]);
        if decision == "undone" {
            undone = Some(inv);
            break;
        }
    }
    let inv = undone.unwrap_or_else(|| panic!("never undone; decisions {decisions:?}"));
    // Every file is home under `/`, in the one directory a plain app reads.
    check_eq!(inv, list_files(&tb.mount.watch_dir()).len(), 400);
    check_eq!(inv, list.shard_count(), 1, "{}", list.to_json());
    check_eq!(inv, list.mount_targets[0].root.as_str(), "/");
    // The target it created is gone; both that were there before stay (b idle, unlisted).
    let after = tb.world.mount_target_ids().await;
    check_eq!(inv, after, before);
    // The shard directories it made are gone, `/shards` with them: they were empty.
    check!(
        inv,
        !tb.mount.has_shards(),
        "left under /shards: {:?}",
        tb.mount.shard_ids()
    );
    check_eq!(
        inv,
        strings(inv.response(), "warnings"),
        Vec::<String>::new()
    );
    // Undone again: nothing left to remove, and only the removal's look done (the state saved
    // before it, unchanged).
    tb.fleet_reports(&[1, 2]).await;
    let (again, _) = run_checked(&tb, &files, &json!({"action": "undo"})).await;
    check_eq!(again, again.response()["decision"], json!("undone"));
    check_eq!(
        again,
        again.response()["actions"],
        json!(["save_state", "remove_shard_directories"])
    );
    check_eq!(again, strings(again.response(), "warnings").len(), 0);
    for step in [
        "start_shard_drain",
        "start_drain",
        "delete_drained",
        "release",
    ] {
        check!(inv, decisions.contains(step), "no {step}: {decisions:?}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_short_moves_private_name_holds_the_drain_and_its_target() {
    let mut tb = testbed(&['a', 'b']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    let list = published_list(&tb).await;
    let b = entry_in(&list, &tb.world, 'b');
    put_files(&tb.mount.watch_dir(), 0..5);
    // A router killed mid-move left the only copy of a reading in its private directory, in
    // the shard that few files would drain.
    let private = tb
        .mount
        .dir_of_root(&b.root)
        .join(efs_router::names::new_private_name(
            efs_router::names::Private::Moving,
        ));
    fs::create_dir_all(&private).expect("a cut-short move's directory");
    let only = name(99);
    fs::write(private.join(&only), content(&only)).expect("the only copy");
    let mut decisions = BTreeSet::new();
    for _ in 0..12 {
        tb.fleet_reports(&[1, 2]).await;
        let inv = tb.invoke(&event("reconcile")).await;
        check!(inv, inv.result.is_ok());
        decisions.insert(
            inv.response()["decision"]
                .as_str()
                .unwrap_or_default()
                .to_owned(),
        );
    }
    // The drain began and holds: b serves, listed, with the copy under its root.
    assert!(decisions.contains("move_drained"), "{decisions:?}");
    assert_eq!(tb.world.mount_targets().await.len(), 2);
    let now = published_list(&tb).await;
    assert!(
        now.mount_targets.iter().any(|t| t.root == b.root),
        "{}",
        now.to_json()
    );
    assert_eq!(fs::read(private.join(&only)).unwrap(), content(&only));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_cut_short_moves_only_copy_is_given_back_after_the_hour_and_the_drain_ends() {
    let mut tb = testbed(&['a', 'b']).await;
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    // The hour, shortened to the least the function accepts: the give-back runs end to end.
    tb.env("ABANDONED_AFTER_SECONDS", "60");
    let list = published_list(&tb).await;
    let a = entry_in(&list, &tb.world, 'a');
    let b = entry_in(&list, &tb.world, 'b');
    put_files(&tb.mount.watch_dir(), 0..5);
    // A move from b home to a was killed after its retire took the source into a private
    // directory, and the source was then a writer's newer version: home has the older one, and
    // the newest is only in the private directory, in the shard that few files drain.
    let i = homed_at(&list, &a.root, 100, 1)[0];
    let only = name(i);
    let at_home = tb.mount.dir_of_root(&a.root).join(&only);
    fs::create_dir_all(at_home.parent().unwrap()).unwrap();
    fs::write(&at_home, b"an older version").unwrap();
    let old = SystemTime::now() - Duration::from_secs(3600);
    fs::File::options()
        .write(true)
        .open(&at_home)
        .and_then(|f| f.set_modified(old))
        .unwrap();
    let private = tb
        .mount
        .dir_of_root(&b.root)
        .join(efs_router::names::new_private_name(
            efs_router::names::Private::Moving,
        ));
    put_files(&private, [i]);
    let started = std::time::Instant::now();
    // Within the hour the drain starts and waits.
    let mut held = 0;
    for _ in 0..4 {
        tb.fleet_reports(&[1, 2]).await;
        let inv = tb.invoke(&event("reconcile")).await;
        check!(inv, inv.result.is_ok());
        held += usize::from(has_warning(inv.response(), "drain_held_by_move"));
    }
    assert!(
        held > 0,
        "no run said the move's private name held the drain"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "too slow to test within the hour"
    );
    assert_eq!(tb.world.mount_targets().await.len(), 2);
    // Past it, the drain gives the copy back, moves it home and ends.
    tokio::time::sleep(Duration::from_secs(61).saturating_sub(started.elapsed())).await;
    let mut given_back = 0;
    for _ in 0..MAX_RUNS {
        tb.fleet_reports(&[1, 2]).await;
        let inv = tb.invoke(&event("reconcile")).await;
        check!(inv, inv.result.is_ok());
        given_back += inv.response()["moves"]["abandoned_removed"]
            .as_u64()
            .unwrap_or(0);
        if tb.world.mount_targets().await.len() == 1 {
            break;
        }
    }
    assert_eq!(
        tb.world.mount_targets().await.len(),
        1,
        "the drain never ended"
    );
    assert!(given_back > 0, "no run counted the give-back");
    let now = published_list(&tb).await;
    let at = tb.mount.dir_of_root(&home(&now, &only).root);
    assert_eq!(
        fs::read(at.join(&only)).ok(),
        Some(content(&only)),
        "the newest version is not at its home"
    );
    assert!(!private.exists(), "the private directory is still there");
}

// ----------------------------------------------------------------------------- a stale state

/// The run before created the state parameter (recording b as its own), and SSM's reads of it
/// lag that write: they answer `ParameterNotFound`. A run that took that for "no state yet"
/// would start from an empty one, set the scale-in timer and save it over the state, and b
/// would never be removed again (the soak, seed 5). The function asks for version 1 as well;
/// SSM's read of that version lags too (both say nothing is there), so the run plans from an
/// empty state, and its save makes version 2: it wrote over version 1, which it never read.
/// It puts version 1 back and stops with `StaleWrite`, having changed nothing else; once SSM
/// answers, the state is read whole.
#[tokio::test(flavor = "multi_thread")]
async fn a_state_read_as_not_found_after_its_creation_is_never_taken_for_none() {
    let tb = testbed_before_the_function(&['a', 'b']).await;
    put_files(&tb.mount.watch_dir(), 0..10);
    let b = tb.world.mount_targets().await[1].id.clone();
    // Five reads answer "not found": four in the first run, one in the next.
    tb.proxy
        .lag_parameter_reads(1000, 5, Duration::from_secs(120), 5);
    let ssm = tb.ssm_through_the_proxy();
    let state = json!({ "created": { &b: { "az_id": tb.world.az_id('b'), "at": 1 } } });
    ssm.put_parameter()
        .name(support::world::STATE_PARAMETER_NAME)
        .value(state.to_string())
        .r#type(aws_sdk_ssm::types::ParameterType::String)
        .send()
        .await
        .expect("the state, created as the last run did");
    tb.proxy.reset_counts();

    let inv = tb.invoke(&event("reconcile")).await;
    let error = inv.result.as_ref().err().cloned().unwrap_or_default();
    check_eq!(inv, error["errorType"], json!("StaleWrite"));
    // Its save, and version 1 put back.
    check_eq!(inv, tb.proxy.state_writes(), 2);
    check!(inv, tb.proxy.mutating_calls().is_empty());
    check_eq!(inv, tb.world.state().await, state);
    let served = tb.proxy.stale_reads();
    check!(
        inv,
        served.keys().any(|(_, kind)| *kind == "version not found"),
        "{served:?}"
    );
    // No write from now on opens a window of its own: the next write closes the one open.
    tb.proxy.lag_parameter_reads(0, 0, Duration::ZERO, 0);

    // The window of the put back lags the next runs' reads (answering the empty state): such
    // a run plans from it, and stops alike if it saves. SSM answers at last: the state is read
    // whole, and b stays the function's own all along.
    for _ in 0..4 {
        let inv = tb.invoke(&event("reconcile")).await;
        let now = tb.world.state().await;
        check!(inv, now["created"].get(&b).is_some(), "state: {now}");
        if inv.result.is_err() {
            let error = inv.result.as_ref().err().cloned().unwrap_or_default();
            check_eq!(inv, error["errorType"], json!("StaleWrite"));
            continue;
        }
        if inv.response()["decision"] == json!("hold_settling") {
            check!(inv, now["below_since"].is_u64(), "state: {now}");
            return;
        }
    }
    panic!("SSM's reads lagged past four runs");
}

// ----------------------------------------------------------------------------- the drive

/// What the drive's first call meets.
#[derive(Clone, Copy, PartialEq)]
enum First {
    /// Refused, as Lambda does while a scheduled run is going.
    Throttled,
    /// The state was written through SSM's lag just before: the run reads the older one and
    /// stops at its first save (`StaleWrite`), as may the next while the lag lasts.
    Lagged,
}

/// A newer state written through SSM's lag: its next two reads (the value, then the check of
/// the version after it) answer the state before it. It differs only by a refusal of a subnet
/// that does not exist.
async fn state_through_the_lag(tb: &Testbed) {
    let mut newer = tb.world.state().await;
    newer["excluded"] = json!({"subnet-0lagged": {"until": 4_000_000_000u64, "reason": "lag"}});
    tb.proxy
        .lag_parameter_reads(1000, 2, Duration::from_secs(60), 3);
    tb.put_through_the_proxy(support::world::STATE_PARAMETER_NAME, &newer.to_string())
        .await;
    // Only that write lags; the next one closes its window.
    tb.proxy.lag_parameter_reads(0, 0, Duration::ZERO, 0);
}

/// Runs scripts/efs-drive.py with `args` against `api`, answering each invocation it makes
/// through `run_checked` (the fleet reporting the list published now before each, as it
/// would in the time between two invocations); `interrupt_after` sends it SIGINT once that
/// many invocations were answered; `first` says what its first call meets ([`First`]; a run
/// stopped by the lag is answered as it ran, unchecked). Returns its exit status, its printed
/// lines, and the events it sent that ran to an answer, with their decisions.
async fn drive(
    tb: &Testbed,
    files: &BTreeMap<String, Vec<u8>>,
    api: &mut support::lambda_api::LambdaApi,
    args: &[&str],
    (interrupt_after, first): (Option<usize>, First),
) -> (Option<i32>, Vec<String>, Vec<(Value, String)>) {
    let (mut throttle_first, mut lagging) = (first == First::Throttled, first == First::Lagged);
    if lagging {
        state_through_the_lag(tb).await;
    }
    let out = tempfile::NamedTempFile::new().expect("a file for the drive's output");
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/efs-drive.py");
    let mut child = tokio::process::Command::new(python)
        .arg(script)
        .args(args)
        .args([
            "--function",
            "efs-mount-autoscaler",
            "--region",
            "us-east-1",
        ])
        .args(["--interval", "0.1", "--patience", "120"])
        .env("AWS_ENDPOINT_URL_LAMBDA", api.endpoint())
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env_remove("AWS_PROFILE")
        .stdout(out.reopen().expect("reopen the output file"))
        .kill_on_drop(true)
        .spawn()
        .expect("start scripts/efs-drive.py");
    let mut seen = Vec::new();
    let status = loop {
        tokio::select! {
            status = child.wait() => break status.expect("the drive's exit status").code(),
            Some(req) = api.next() => {
                assert_eq!(req.function, "efs-mount-autoscaler");
                if std::mem::take(&mut throttle_first) {
                    req.throttle();
                    continue;
                }
                tb.fleet_reports(&[1, 2]).await;
                let inv = if lagging {
                    let inv = tb.invoke(&req.event).await;
                    let kind = inv.result.as_ref().err().map(|e| e["errorType"].clone());
                    if let Some(kind) = kind {
                        check_eq!(inv, kind, json!("StaleWrite"));
                        req.answer(inv.result.clone());
                        continue;
                    }
                    lagging = false;
                    inv
                } else {
                    run_checked(tb, files, &req.event).await.0
                };
                let decision = inv.response()["decision"].as_str().unwrap_or_default().to_owned();
                seen.push((req.event.clone(), decision));
                req.answer(inv.result.clone());
                if interrupt_after == Some(seen.len()) {
                    let pid = child.id().expect("the drive's pid").to_string();
                    std::process::Command::new("kill").args(["-INT", &pid]).status().unwrap();
                }
            }
        }
    };
    let lines = fs::read_to_string(out.path()).expect("the drive's output");
    (status, lines.lines().map(str::to_owned).collect(), seen)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_drive_takes_undo_to_its_end_in_short_invocations_and_resumes_after_an_interrupt() {
    // Targets in a, b and c, the last two the function's own, each shard holding files.
    let tb = testbed(&['a', 'b', 'c']).await;
    let list = published_list(&tb).await;
    put_files(&tb.mount.watch_dir(), 0..30);
    for (k, t) in list.mount_targets.iter().enumerate().skip(1) {
        put_files(&tb.mount.dir_of_root(&t.root), k * 100..k * 100 + 30);
    }
    let files = files_by_name(&tb.mount);
    let first_target = list.mount_targets[0].id.clone();
    let mut api = support::lambda_api::LambdaApi::start().await;

    // Its first run stops on SSM's lag (`StaleWrite`): the call is made again. Interrupted
    // after two invocations that answered: it stops, saying so (a third it had sent already
    // goes on, as on Lambda, where a call's run does not stop with its caller).
    let (status, lines, first) =
        drive(&tb, &files, &mut api, &["undo"], (Some(2), First::Lagged)).await;
    assert_eq!(status, Some(130), "{lines:#?}");
    assert!(
        lines.iter().any(|l| l.starts_with("lagged: StaleWrite:")),
        "{lines:#?}"
    );
    assert!((2..=3).contains(&first.len()), "{first:?}");
    // Run again, it goes on from where the file system and the list are, to the end; its first
    // call, refused while "a scheduled run" is going, is made again.
    let (status, lines, rest) =
        drive(&tb, &files, &mut api, &["undo"], (None, First::Throttled)).await;
    assert_eq!(status, Some(0), "{lines:#?}");
    let all: Vec<_> = first.iter().chain(&rest).collect();
    // Every invocation was an undo with a budget inside the CLI's 60 s read timeout, which the
    // drive keeps, never retrying: it answered each within it, or the drive would have failed.
    for (event, _) in &all {
        assert_eq!(event["action"], json!("undo"), "{event}");
        assert_eq!(event["budget_seconds"], json!(40), "{event}");
    }
    // One printed line a call (the refused one too), then the outcome.
    assert_eq!(lines.len(), 1 + rest.len() + 1, "{lines:#?}");
    assert_eq!(lines.last().map(String::as_str), Some("done"));
    let decisions: BTreeSet<&str> = all.iter().map(|(_, d)| d.as_str()).collect();
    for step in ["start_drain", "delete_drained", "undone"] {
        assert!(decisions.contains(step), "no {step}: {decisions:?}");
    }
    assert_eq!(rest.last().map(|(_, d)| d.as_str()), Some("undone"));
    assert_eq!(list_files(&tb.mount.watch_dir()).len(), 90);
    assert_eq!(
        tb.world.mount_target_ids().await,
        BTreeSet::from([first_target]),
        "{all:?}"
    );
}
