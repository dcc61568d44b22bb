//! The tasks ECS hides from DescribeServices, end to end: the function binary as Lambda runs it,
//! against moto through the proxy, which plays ECS tasks (moto's services start none): a
//! replaced task goes DEACTIVATING, STOPPING, DEPROVISIONING, then STOPPED as the test
//! advances it, and RunTask's tasks run until the test stops them. While such a task, created
//! before the publish, is not stopped, it may write by the old list: nothing moves and no
//! target goes.
//!
//! Needs `moto_server` on PATH (`pip install "moto[server]"`).

#[macro_use]
mod support;

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use efs_router::{shard_index, Layout, MountTargetList, Router, Shard, Target};
use serde_json::{json, Value};

use support::files::list_files;
use support::{event, has_action, has_warning, strings, Aws, Invocation, Mount, Testbed, World};

const BIN: &str = env!("CARGO_BIN_EXE_efs-mount-autoscaler");
const THRESHOLD: u64 = 500;
const SERVICE: &str = "service:ingest";
/// Runs a drain may take (mark, move, unlist, delete), with room to spare.
const MAX_RUNS: usize = 10;

// ----------------------------------------------------------------------------- files

fn name(i: usize) -> String {
    format!("device-{i}-{}.json", 1_795_000_000_000u64 + i as u64)
}

/// The bytes of reading `name`: they encode its name.
fn content(name: &str) -> Vec<u8> {
    format!("{{\"file\":\"{name}\"}}\n").into_bytes()
}

fn put_files(dir: &Path, ids: impl IntoIterator<Item = usize>) -> Vec<String> {
    fs::create_dir_all(dir).expect("create a watched directory");
    let names: Vec<String> = ids.into_iter().map(name).collect();
    for n in &names {
        fs::write(dir.join(n), content(n)).expect("write a reading");
    }
    names
}

/// Every file of every shard directory, by name → the roots that hold it.
fn where_files_are(mount: &Mount) -> BTreeMap<String, Vec<String>> {
    let mut roots = vec!["/".to_string()];
    roots.extend(mount.shard_ids().iter().map(|id| format!("/shards/{id}")));
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for root in roots {
        for n in list_files(&mount.dir_of_root(&root)) {
            out.entry(n).or_default().push(root.clone());
        }
    }
    out
}

fn home(list: &MountTargetList, file: &str) -> Shard {
    let shards = list.shards();
    let i = shard_index(&format!("data/analysis/{file}"), &shards, list.strategy)
        .unwrap_or_else(|e| panic!("{file} does not route: {e}"));
    shards[i].clone()
}

/// Each of `written` is in exactly one place, at its home under `list`, with its own bytes.
fn assert_all_at_home(tb: &Testbed, list: &MountTargetList, written: &[String]) {
    let found = where_files_are(&tb.mount);
    assert_eq!(found.len(), written.len(), "files lost or appeared");
    for n in written {
        let want = home(list, n).root;
        assert_eq!(found.get(n), Some(&vec![want.clone()]), "{n}");
        let bytes = fs::read(tb.mount.dir_of_root(&want).join(n)).expect("read");
        assert_eq!(bytes, content(n), "{n}");
    }
}

// ----------------------------------------------------------------------------- world

/// Mount targets in `azs`, the contract's list published, the targets after the first the
/// function's own (only those may be scaled in), no cool-down.
async fn testbed(azs: &[char]) -> Testbed {
    let mut tb = Testbed::new(BIN, World::builder().mount_targets_in(azs)).await;
    tb.trust_ecs_alone();
    tb.env("FILE_THRESHOLD", THRESHOLD.to_string());
    tb.env("SCALE_IN_COOLDOWN_SECONDS", "0");
    fs::create_dir_all(tb.mount.watch_dir()).expect("the first shard's directory");
    let mut created = serde_json::Map::new();
    for t in tb.world.mount_targets().await {
        if azs[1..].iter().any(|az| tb.world.az_id(*az) == t.az_id) {
            created.insert(t.id.clone(), json!({"az_id": t.az_id, "at": 1}));
        }
    }
    tb.world.put_state(&json!({ "created": created })).await;
    tb
}

async fn published_list(tb: &Testbed) -> MountTargetList {
    MountTargetList::from_json(&tb.world.published().await.value).expect("the published list")
}

fn entry_in(list: &MountTargetList, world: &World, az: char) -> Target {
    let az_id = world.az_id(az);
    let t = list
        .mount_targets
        .iter()
        .find(|t| t.az_id.as_deref() == Some(&az_id));
    t.cloned().expect("an entry in that AZ")
}

fn decision(inv: &Invocation) -> String {
    inv.response()["decision"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// The tasks the response says it waits for: (id, group, last status).
fn tasks_waited_for(r: &Value) -> Vec<(String, String, String)> {
    let tasks = r["waiting_for_tasks"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let field = |t: &Value, k: &str| t[k].as_str().unwrap_or_default().to_string();
    let each = tasks
        .iter()
        .map(|t| (field(t, "id"), field(t, "group"), field(t, "last_status")));
    each.collect()
}

// ----------------------------------------------------------------------------- a drain

#[tokio::test(flavor = "multi_thread")]
async fn a_stopping_task_on_the_old_list_holds_the_drain_and_all_it_wrote_goes_home() {
    let tb = testbed(&['a', 'b', 'c']).await;
    tb.proxy.stop_tasks_slowly();
    let old = published_list(&tb).await;
    let c = entry_in(&old, &tb.world, 'c');
    // Within the band of three targets (<= 600 files), above that of two (<= 300): c drains,
    // and b stays once c is gone.
    let mut written = put_files(&tb.mount.watch_dir(), 0..320);
    written.extend(put_files(
        &tb.mount.dir_of_root(&entry_in(&old, &tb.world, 'b').root),
        400..407,
    ));
    written.extend(put_files(&tb.mount.dir_of_root(&c.root), 500..504));
    // The service's task routes by the list it read when it started.
    let task = Router::new(old.clone(), Layout::single_mount(tb.mount.path())).expect("router");

    // Run 1 marks c draining, publishes and redeploys: ECS replaces the task.
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, decision(&inv), "start_drain");
    let tasks = tb.proxy.tasks(SERVICE);
    check_eq!(inv, tasks.len(), 2, "the old task and the new one");
    let (old_id, new_id) = (tasks[0].0.clone(), tasks[1].0.clone());

    // While ECS takes it down, it writes by the old list (some into c's shard), and the
    // drain waits, saying for what; DescribeServices' counts show nothing old.
    let mut next = 2000;
    let mut into_c = 0;
    for status in ["RUNNING", "DEACTIVATING", "STOPPING", "DEPROVISIONING"] {
        if status != "DEPROVISIONING" {
            for _ in 0..20 {
                let n = name(next);
                next += 1;
                let at = task
                    .write(&format!("data/analysis/{n}"), &content(&n))
                    .expect("write");
                into_c += usize::from(at.starts_with(tb.mount.dir_of_root(&c.root)));
                written.push(n);
            }
        }
        let inv = tb.invoke(&event("reconcile")).await;
        let r = inv.response();
        check_eq!(inv, decision(&inv), "wait_for_tasks", "{status}");
        check!(inv, !has_action(r, "move_files"), "{status}");
        check!(inv, strings(r, "waiting_for").contains(&old_id), "{status}");
        check_eq!(
            inv,
            tasks_waited_for(r),
            vec![(old_id.clone(), SERVICE.to_string(), status.to_string())]
        );
        check!(inv, !strings(r, "waiting_for").contains(&new_id));
        tb.proxy.advance_tasks();
    }
    assert!(
        into_c > 0,
        "the old task wrote nothing into c's shard: the test shows nothing"
    );
    assert_eq!(tb.proxy.tasks(SERVICE)[0].1, "STOPPED");

    // Stopped: the drain goes on. The list without c goes out and replaces the tasks again;
    // c goes only once the task replaced then is stopped too.
    let mut held_deletion = 0;
    let mut deleted = Vec::new();
    for _ in 0..12 {
        let inv = tb.invoke(&event("reconcile")).await;
        if decision(&inv) == "wait_for_tasks" {
            check!(inv, !has_action(inv.response(), "delete_mount_target"));
            held_deletion += 1;
            tb.proxy.advance_tasks();
        }
        deleted = strings(inv.response(), "deleted");
        if !deleted.is_empty() {
            break;
        }
    }
    assert_eq!(deleted, vec![c.id.clone()]);
    assert!(
        held_deletion > 0,
        "the deletion never waited for a stopping task"
    );
    let list = published_list(&tb).await;
    assert!(list.mount_targets.iter().all(|t| t.id != c.id));
    // Nothing the old task wrote is left under c's root: every file is under a listed root,
    // once; and after a rebalance (the readings first put in b were not all b's), at home.
    assert!(list_files(&tb.mount.dir_of_root(&c.root)).is_empty());
    let roots: Vec<String> = list.shards().into_iter().map(|t| t.root).collect();
    let found = where_files_are(&tb.mount);
    assert_eq!(found.len(), written.len(), "files lost or appeared");
    assert!(
        found
            .values()
            .all(|at| at.len() == 1 && roots.contains(&at[0])),
        "{found:?}"
    );
    let inv = tb
        .invoke(&json!({"action": "rebalance", "max_moves": 1000}))
        .await;
    check!(inv, has_action(inv.response(), "move_files"));
    assert_all_at_home(&tb, &list, &written);
}

// ----------------------------------------------------------------------------- a task in the AZ

/// The warnings of kind `kind`, in words (`warnings` and `warning_kinds` go in the same order).
fn warnings_of(r: &Value, kind: &str) -> Vec<String> {
    let kinds = strings(r, "warning_kinds");
    let words = strings(r, "warnings");
    let pairs = kinds.into_iter().zip(words);
    pairs.filter(|(k, _)| k == kind).map(|(_, w)| w).collect()
}

/// A Fargate task mounts through its own AZ's target, whatever the list says: a drained target
/// is not deleted while a task of the service runs in its AZ, the warning names the task and
/// the AZ, and it goes once the task stops.
#[tokio::test(flavor = "multi_thread")]
async fn a_drained_target_stays_while_a_task_runs_in_its_az_and_goes_once_it_stops() {
    let mut tb = testbed(&['a', 'b', 'c']).await;
    tb.env("ECS_CLIENT_FAMILIES", "batch");
    // The service's task runs in a (the testbed described the service already); the tasks its
    // forced deployments start from now on run in c's AZ: chosen while no task ran there, c
    // has one by the time it is drained.
    tb.proxy.place_tasks_in("us-east-1c");
    let old = published_list(&tb).await;
    let c = entry_in(&old, &tb.world, 'c');
    // Within the band of three targets, above that of two: c drains, b stays.
    put_files(&tb.mount.watch_dir(), 0..320);
    put_files(
        &tb.mount.dir_of_root(&entry_in(&old, &tb.world, 'b').root),
        400..407,
    );
    put_files(&tb.mount.dir_of_root(&c.root), 500..504);

    // Marked, moved, unlisted, and the fleet on that list: the deletion is held.
    let mut held = None;
    for _ in 0..MAX_RUNS {
        let inv = tb.invoke(&event("reconcile")).await;
        check!(inv, !has_action(inv.response(), "delete_mount_target"));
        if decision(&inv) == "hold_target_in_use" {
            held = Some(inv);
            break;
        }
    }
    let inv = held.expect("the deletion was never held");
    let running: Vec<String> = tb
        .proxy
        .tasks(SERVICE)
        .into_iter()
        .filter(|(_, status)| status != "STOPPED")
        .map(|(id, _)| id)
        .collect();
    check_eq!(inv, running.len(), 1, "the service's one task");
    let warned = warnings_of(inv.response(), "target_in_use");
    check_eq!(inv, warned.len(), 1);
    check!(
        inv,
        warned[0].contains(&running[0])
            && warned[0].contains("us-east-1c")
            && warned[0].contains(&c.id),
        "{warned:?}"
    );
    check!(
        inv,
        published_list(&tb)
            .await
            .mount_targets
            .iter()
            .all(|t| t.id != c.id)
    );

    // Held again, and again: the target is still there for the task.
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, decision(&inv), "hold_target_in_use");
    check_eq!(inv, tb.proxy.count("DeleteMountTarget"), 0);
    let ids: Vec<String> = tb
        .world
        .mount_targets()
        .await
        .into_iter()
        .map(|t| t.id)
        .collect();
    check!(inv, ids.contains(&c.id));

    // The service's task stops (ECS placed its replacement elsewhere), but a task of a client
    // family started with RunTask runs in c's AZ now: it holds c as well.
    tb.proxy.place_tasks_in("us-east-1a");
    tb.proxy.stop_task(&running[0]);
    let batch = tb
        .proxy
        .start_task_in("family:batch", "batch", "us-east-1c");
    let batch = batch.rsplit('/').next().unwrap_or_default().to_string();
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, decision(&inv), "hold_target_in_use");
    let warned = warnings_of(inv.response(), "target_in_use");
    check!(
        inv,
        warned.len() == 1 && warned[0].contains(&batch),
        "{warned:?}"
    );
    check!(inv, !warned[0].contains(&running[0]), "{warned:?}");

    // It ends: c goes.
    tb.proxy.stop_task(&batch);
    let inv = tb.invoke(&event("reconcile")).await;
    check_eq!(inv, decision(&inv), "delete_drained");
    check_eq!(inv, strings(inv.response(), "deleted"), vec![c.id.clone()]);
    check!(inv, !has_warning(inv.response(), "target_in_use"));
}

// ----------------------------------------------------------------------------- a rebalance

#[tokio::test(flavor = "multi_thread")]
async fn a_runtask_client_on_the_old_list_holds_a_rebalance_until_ecs_stops_it() {
    let mut tb = testbed(&['a', 'b']).await;
    tb.env("ECS_CLIENT_FAMILIES", "ingest");
    // Pages of one task: the function must read them all.
    tb.proxy.task_page_size(1);
    let start = published_list(&tb).await;
    let b = entry_in(&start, &tb.world, 'b');
    let misplaced: Vec<usize> = (0..40)
        .filter(|i| home(&start, &name(*i)).id != b.id)
        .collect();
    let written = put_files(&tb.mount.dir_of_root(&b.root), misplaced.iter().copied());

    // Two batch tasks started with RunTask (in no service), then the list goes out again, and
    // a reconcile redeploys the service: the service converges, the batch tasks run on.
    let ecs = Aws::at(&tb.proxy.endpoint()).await.ecs;
    let mut batch = Vec::new();
    for _ in 0..2 {
        let out = ecs
            .run_task()
            .cluster(&tb.world.cluster)
            .task_definition("ingest")
            .launch_type(aws_sdk_ecs::types::LaunchType::Fargate)
            .send()
            .await
            .expect("RunTask");
        let arn = out.tasks()[0].task_arn().expect("a task arn");
        batch.push(arn.rsplit('/').next().unwrap().to_string());
    }
    tb.world.put_parameter(&start.to_json()).await;
    let inv = tb.invoke(&event("reconcile")).await;
    check!(inv, has_action(inv.response(), "force_deployment"));

    let inv = tb
        .invoke(&json!({"action": "rebalance", "max_moves": 100}))
        .await;
    let r = inv.response();
    check!(inv, !has_action(r, "move_files"));
    let held = tasks_waited_for(r);
    let ids: Vec<&str> = held.iter().map(|(id, _, _)| id.as_str()).collect();
    check_eq!(
        inv,
        ids,
        batch.iter().map(String::as_str).collect::<Vec<_>>()
    );
    check!(
        inv,
        held.iter()
            .all(|(_, g, s)| g == "family:ingest" && s == "RUNNING")
    );
    check!(
        inv,
        tb.proxy.task_pages() > 4,
        "paged: {}",
        tb.proxy.task_pages()
    );
    assert_eq!(
        list_files(&tb.mount.dir_of_root(&b.root)).len(),
        written.len()
    );

    // One ends; the other still holds.
    tb.proxy.stop_task(&batch[0]);
    let inv = tb
        .invoke(&json!({"action": "rebalance", "max_moves": 100}))
        .await;
    check!(inv, !has_action(inv.response(), "move_files"));
    check_eq!(inv, tasks_waited_for(inv.response()).len(), 1);

    // Both ended: the files move home.
    tb.proxy.stop_task(&batch[1]);
    let inv = tb
        .invoke(&json!({"action": "rebalance", "max_moves": 100}))
        .await;
    check!(inv, has_action(inv.response(), "move_files"));
    check_eq!(
        inv,
        inv.response()["moves"]["moved"],
        json!(misplaced.len())
    );
    assert_all_at_home(&tb, &start, &written);
}

// ----------------------------------------------------------------------------- ECS refusing

#[tokio::test(flavor = "multi_thread")]
async fn throttled_task_calls_are_retried_and_past_the_retries_only_moves_wait() {
    let tb = testbed(&['a', 'b']).await;
    tb.proxy.throttle("ListTasks", 2);
    tb.proxy.throttle("DescribeTasks", 2);
    let inv = tb.invoke(&event("reconcile")).await;
    check!(inv, inv.result.is_ok());
    check_eq!(inv, tb.proxy.faulted("ListTasks"), 2);
    check_eq!(inv, tb.proxy.faulted("DescribeTasks"), 2);

    // Throttled for good: the fleet is not known, so nothing moves and no target goes, but
    // the run goes on, and growth with it.
    tb.proxy.reset_counts();
    tb.proxy.throttle("ListTasks", 1000);
    tb.mount.generate(3 * THRESHOLD as usize);
    // The first run cancels the drain the files no longer allow, the next adds a target.
    for want in ["cancel_drain", "create"] {
        let inv = tb.invoke(&event("reconcile")).await;
        check!(inv, inv.result.is_ok());
        check!(inv, has_warning(inv.response(), "tasks_unknown"));
        check_eq!(inv, inv.response()["decision"], json!(want));
    }
    assert_eq!(tb.proxy.count("CreateMountTarget"), 1);
    let inv = tb
        .invoke(&json!({"action": "rebalance", "max_moves": 100}))
        .await;
    check!(inv, has_warning(inv.response(), "tasks_unknown"));
    check_eq!(
        inv,
        inv.response()["moves"]["moved"].as_u64().unwrap_or(0),
        0
    );
    check_eq!(inv, tb.proxy.count("DeleteMountTarget"), 0);
}
