//! The seed's day one, scaled down: the function installed with its defaults beside a system
//! that already runs. A file system with a mount target in each of 3 AZs, an app whose tasks
//! read and write `data/analysis` with plain paths (they report nothing), and more files than
//! one shard holds. While no task reports, nothing leaves the app's directory. Then a reporting
//! router replaces the plain app, task by task as ECS replaces tasks: files move, and every
//! file stays readable through the router.
//!
//! Needs `moto_server` on PATH (`pip install "moto[server]"`).

#[macro_use]
mod support;

use std::collections::BTreeMap;
use std::path::Path;

use efs_router::{Layout, Reporting, Router};

use support::files::list_files;
use support::{event, has_warning, Invocation, Seed, Testbed, World};

const BIN: &str = env!("CARGO_BIN_EXE_efs-mount-autoscaler");

/// Files for 5 shards at this threshold (a shard holds 67 on average): more than 3 targets.
const THRESHOLD: u64 = 100;
const FILES: usize = 300;

/// The app's directory, relative to the file system's root: the first shard's.
const WATCH_DIR: &str = "data/analysis";

/// The app's files as they are, by name: `data/analysis` alone, as a plain-path app sees them.
fn plain_view(mount: &Path) -> BTreeMap<String, Vec<u8>> {
    let dir = mount.join(WATCH_DIR);
    list_files(&dir)
        .into_iter()
        .map(|n| {
            let bytes = std::fs::read(dir.join(&n)).unwrap();
            (n, bytes)
        })
        .collect()
}

/// The app with a reporting router: one router a running task, on the list published when
/// the task started, reporting its task's ARN; a stopped task's router is dropped (its report
/// goes with it).
struct RoutedApp {
    endpoint: String,
    routers: BTreeMap<String, Router>,
}

impl RoutedApp {
    async fn follow(&mut self, tb: &Testbed) {
        let running = tb.proxy.running_task_arns("service:ingest");
        self.routers.retain(|arn, _| running.contains(arn));
        let text = tb.world.published().await.value;
        for arn in running {
            if self.routers.contains_key(&arn) {
                continue;
            }
            let options = Reporting {
                metadata_uri: Some(format!("{}/{arn}", self.endpoint)),
                label: Some("day-one app".into()),
                ..Reporting::default()
            };
            let layout = Layout::single_mount(tb.mount.path());
            let router = Router::reporting(&text, layout, options).expect("a reporting router");
            self.routers.insert(arn, router);
        }
    }
}

fn decision(inv: &Invocation) -> &str {
    inv.response()["decision"].as_str().unwrap_or_default()
}

fn moved(inv: &Invocation) -> u64 {
    inv.response()["moves"]["moved"].as_u64().unwrap_or(0)
}

#[tokio::test(flavor = "multi_thread")]
async fn installed_beside_a_plain_app_it_moves_nothing_until_every_task_reports() {
    let world = World::builder()
        .mount_targets_in(&['a', 'b', 'c'])
        .parameter(Seed::Absent);
    let mut tb = Testbed::new(BIN, world).await;
    tb.env("FILE_THRESHOLD", THRESHOLD.to_string());
    tb.mount.generate(FILES);
    let before = plain_view(tb.mount.path());
    assert_eq!(before.len(), FILES);
    // The app runs before the function's first run.
    let tasks = tb.start_tasks().await;

    // Day one, the defaults: growth happens, nothing leaves the app's directory.
    for run in 0..4 {
        let event = match run % 2 {
            0 => event("reconcile"),
            _ => event("rebalance"),
        };
        let inv = tb.invoke(&event).await;
        let r = inv.response();
        check!(inv, has_warning(r, "service_unreported"));
        check_eq!(inv, moved(&inv), 0);
        check_eq!(inv, plain_view(tb.mount.path()), before, "run {run}");
        if run == 0 {
            // The silent tasks are named, and the list stays one shard a target (version 1).
            let behind: Vec<&str> = r["clients_behind"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|c| c["why"] == "unreported")
                .map(|c| c["client"].as_str().unwrap())
                .collect();
            check_eq!(
                inv,
                behind,
                tasks.iter().map(String::as_str).collect::<Vec<_>>()
            );
            check!(inv, has_warning(r, "list_version_held"));
        }
    }
    let list = tb.world.published().await.json();
    assert_eq!(list["mount_targets"].as_array().unwrap().len(), 3, "{list}");

    // The app ships a reporting router: each task ECS runs now starts one on the list it
    // reads, and so does each task a forced deployment starts later.
    let mut app = RoutedApp {
        endpoint: support::metadata::endpoint(),
        routers: BTreeMap::new(),
    };
    let mut total_moved = 0;
    let mut settled = false;
    for run in 0..16 {
        app.follow(&tb).await;
        let event = match run % 2 {
            0 => event("reconcile"),
            _ => serde_json::json!({"action": "rebalance", "max_moves": 1000}),
        };
        let inv = tb.invoke(&event).await;
        check!(inv, !has_warning(inv.response(), "service_unreported"));
        total_moved += moved(&inv);
        eprintln!(
            "run {run}: {} {} moved {} warnings {}",
            decision(&inv),
            inv.response()["actions"],
            moved(&inv),
            inv.response()["warning_kinds"]
        );
        // Settled: a rebalance finds nothing left to move after files did move.
        if run % 2 == 1 && moved(&inv) == 0 && total_moved > 0 && decision(&inv) == "keep" {
            settled = true;
            break;
        }
    }
    assert!(settled, "the fleet never settled");
    assert!(total_moved > 0, "no file moved once every task reported");
    let list = tb.world.published().await.json();
    assert!(
        list["mount_targets"].as_array().unwrap().len() >= 3,
        "{list}"
    );

    // A pass found every file at home: the next run publishes that nothing is open any more
    // (list version 3: every task's router reads it), and a miss looks at home alone.
    let inv = tb.invoke(&event("reconcile")).await;
    let list = tb.world.published().await.json();
    check_eq!(
        inv,
        (&list["version"], &list["open"]),
        (&serde_json::json!(3), &serde_json::json!([]))
    );

    // Every file, read through a router on the published list, has its bytes, at home.
    app.follow(&tb).await;
    let router = app
        .routers
        .values()
        .next()
        .expect("a running task's router");
    for (name, bytes) in &before {
        let read = router
            .read_with_fallback(&format!("{WATCH_DIR}/{name}"))
            .unwrap_or_else(|e| panic!("{name} cannot be read through the router: {e}"));
        assert_eq!(&read.data, bytes, "{name}");
        assert_eq!(read.place, efs_router::Place::Home, "{name}");
    }
    // And some of them are no longer where the plain app looked: they did move.
    assert!(plain_view(tb.mount.path()).len() < FILES);
}
