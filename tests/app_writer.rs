//! The example application on the Rust router, `examples/app/writer.rs` (the counterpart of
//! `writer.py`), against moto_server and a temporary directory as the file system root: plain
//! paths while the list is not published, the router once it is, each reading written once and
//! found, and the router's report. The example is a program, not a library: its file is
//! included here as the module `writer`, so the tests run its own code (all but `main`, which
//! reads the environment and makes the SDK client).
//!
//! Needs `moto_server` on PATH (`pip install "moto[server]"`).

mod support;

#[allow(dead_code)] // its `main`
#[path = "../examples/app/writer.rs"]
mod writer;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use aws_sdk_ssm::types::ParameterType;
use efs_router::report::{list_sha256, Report};
use efs_router::{Found, Layout, MountTargetList, Router};

use support::files::list_files;
use support::world::PARAMETER_NAME;
use support::{Aws, Moto, Mount};
use writer::{Files, Routing, Stop, RETRY};

/// The lists as the function publishes them: the first, one shard at `/`; then a second mount
/// target's.
const ONE: &str = r#"{"mount_targets":[{"id":"fsmt-0a1b2c3d","ip":"10.0.1.4","az":"us-east-1a","az_id":"use1-az6","subnet_id":"subnet-a","root":"/"}],"strategy":"rendezvous"}"#;
const TWO: &str = r#"{"mount_targets":[{"id":"fsmt-0a1b2c3d","ip":"10.0.1.4","az":"us-east-1a","az_id":"use1-az6","subnet_id":"subnet-a","root":"/"},{"id":"fsmt-4e5f6a7b","ip":"10.0.2.7","az":"us-east-1b","az_id":"use1-az2","subnet_id":"subnet-b","root":"/shards/use1-az2"}],"strategy":"rendezvous"}"#;
const ROOTS: [&str; 2] = ["/", "/shards/use1-az2"];

/// The readings the app wrote, by (device, timestamp): their bytes.
type Readings = BTreeMap<(u64, u64), Vec<u8>>;

struct App {
    ssm: aws_sdk_ssm::Client,
    mount: Mount,
    _moto: Moto,
}

impl App {
    async fn start() -> App {
        let moto = Moto::start();
        App {
            ssm: Aws::at(&moto.endpoint()).await.ssm,
            mount: Mount::temp(),
            _moto: moto,
        }
    }

    /// Puts the list as the function does; answers the parameter's version.
    async fn publish(&self, text: &str) -> i64 {
        let put = self.ssm.put_parameter().name(PARAMETER_NAME).value(text);
        let put = put.r#type(ParameterType::String).overwrite(true);
        put.send().await.expect("put the parameter").version()
    }

    fn routing(&self, refresh: Option<Duration>) -> Routing {
        Routing::new(self.ssm.clone(), PARAMETER_NAME, self.mount.path(), refresh)
    }

    /// A router of the test's own on `text`, to check where the app's files are.
    fn router(&self, text: &str) -> Router {
        let list = MountTargetList::from_json(text).unwrap();
        Router::new(list, Layout::single_mount(self.mount.path())).unwrap()
    }

    /// Each reading's file name, and the shard roots holding a file of that name.
    fn copies(&self) -> BTreeMap<String, Vec<&'static str>> {
        let mut found: BTreeMap<String, Vec<&str>> = BTreeMap::new();
        for root in ROOTS {
            for name in list_files(&self.mount.dir_of_root(root)) {
                found.entry(name).or_default().push(root);
            }
        }
        found
    }

    /// The names in the reports' directory; `None` when it does not exist.
    fn reports(&self) -> Option<Vec<String>> {
        let dir = self.mount.reports_dir();
        dir.exists().then(|| list_files(&dir))
    }
}

/// One reading through the app at `now`, as its loop writes it; answers its logical path.
async fn write(
    routing: &mut Routing,
    now: Instant,
    readings: &mut Readings,
    (device_id, timestamp): (u64, u64),
) -> String {
    let payload = writer::reading(device_id, timestamp);
    let files = routing.current(now).await.expect("what to write through");
    let written = writer::write_reading(&files, device_id, timestamp, &payload).unwrap();
    assert!(
        written,
        "device {device_id} at {timestamp} was already there"
    );
    readings.insert((device_id, timestamp), payload);
    writer::reading_path(device_id, timestamp)
}

/// The router the app writes through at `now`; panics on plain paths.
async fn routed(routing: &mut Routing, now: Instant) -> Router {
    match routing.current(now).await.expect("what to write through") {
        Files::Routed(router) => router.clone(),
        Files::Plain(_) => panic!("plain paths, not the router"),
    }
}

fn file_name(path: &str) -> String {
    path.rsplit('/').next().unwrap().to_owned()
}

/// The app's report: the list `text` it routes by (at the parameter's `version`), and only the
/// current router's.
fn assert_report(app: &App, router: &Router, text: &str, version: i64) {
    let file = format!("{}.json", router.client_id().unwrap());
    assert_eq!(app.reports(), Some(vec![file.clone()]));
    let bytes = std::fs::read(router.report_file().unwrap()).unwrap();
    let report = Report::parse(&file, &bytes).unwrap();
    assert_eq!(report.list.sha256, list_sha256(text));
    assert_eq!(report.list.parameter_version, Some(version));
    assert_eq!(report.label.as_deref(), Some(writer::LABEL));
    assert!(
        report.router.starts_with("efs-router-rust/"),
        "{}",
        report.router
    );
}

/// Check-then-write never replaces a reading, wherever it is, nor writes a second copy; and
/// the router reads each one's bytes.
fn assert_each_reading_once(app: &App, router: &Router, readings: &Readings) {
    for &(device_id, timestamp) in readings.keys() {
        let files = Files::Routed(router);
        let again = writer::write_reading(&files, device_id, timestamp, b"{\"replaced\":true}");
        assert!(
            !again.unwrap(),
            "device {device_id} at {timestamp} written twice"
        );
    }
    let copies = app.copies();
    let names: BTreeSet<String> = readings
        .keys()
        .map(|&(d, t)| file_name(&writer::reading_path(d, t)))
        .collect();
    assert_eq!(copies.keys().cloned().collect::<BTreeSet<_>>(), names);
    assert!(copies.values().all(|roots| roots.len() == 1), "{copies:?}");
    for (&(device_id, timestamp), payload) in readings {
        let path = writer::reading_path(device_id, timestamp);
        assert_eq!(&router.read_with_fallback(&path).unwrap().data, payload);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn plain_paths_until_the_list_is_published_then_the_router() {
    let app = App::start().await;
    let mut routing = app.routing(Some(Duration::from_secs(60)));
    let (t0, mut readings) = (Instant::now(), Readings::new());
    let mut plain = Vec::new();
    for d in 0..20 {
        plain.push(write(&mut routing, t0, &mut readings, (d, 100)).await);
    }
    // Plain paths are the first shard's files: where a router on a one-shard list rooted at /
    // puts them. No router, no report.
    let one = app.router(ONE);
    for p in &plain {
        assert_eq!(one.resolve(p).unwrap().real, app.mount.path().join(p));
    }
    let mut names: Vec<String> = plain.iter().map(|p| file_name(p)).collect();
    names.sort();
    assert_eq!(list_files(&app.mount.watch_dir()), names);
    assert_eq!(app.reports(), None);

    // Published, but not looked for again until the retry period has passed.
    app.publish(ONE).await;
    for d in 0..5 {
        let now = t0 + RETRY - Duration::from_secs(1);
        plain.push(write(&mut routing, now, &mut readings, (d, 101)).await);
    }
    assert_eq!(list_files(&app.mount.watch_dir()).len(), 25);
    assert_eq!(app.reports(), None); // still no router
    let at = t0 + RETRY;
    let first = routed(&mut routing, at).await;
    assert_eq!(first.shards().len(), 1);
    let mut routes = Vec::new();
    for d in 0..10 {
        routes.push(write(&mut routing, at, &mut readings, (d, 102)).await);
    }
    for p in plain.iter().chain(&routes) {
        assert_eq!(one.locate(p).unwrap().found, Found::Home, "{p}");
    }

    // The function adds a shard (it makes the directory first) and publishes; the app re-reads
    // a refresh period later: a new list is a new router, and a new client.
    std::fs::create_dir_all(app.mount.dir_of_root(ROOTS[1])).unwrap();
    let version = app.publish(TWO).await;
    let later = at + Duration::from_secs(60);
    for d in 0..40 {
        routes.push(write(&mut routing, later, &mut readings, (d, 103)).await);
    }
    let router = routed(&mut routing, later).await;
    assert_eq!(router.shards().len(), 2);
    assert_ne!(router.client_id(), first.client_id());
    drop(first);
    let two = app.router(TWO);
    let homes: BTreeSet<usize> = routes[10..]
        .iter()
        .map(|p| two.resolve(p).unwrap())
        .inspect(|home| assert!(home.real.is_file(), "{}", home.real.display()))
        .map(|home| home.index)
        .collect();
    assert_eq!(homes, BTreeSet::from([0, 1])); // the new shard takes new files

    // Files written before the second shard whose home is now that shard: found where they are.
    let elsewhere: Vec<&String> = plain
        .iter()
        .chain(&routes[..10])
        .filter(|p| two.resolve(p).unwrap().index == 1)
        .collect();
    assert!(!elsewhere.is_empty());
    for p in elsewhere {
        let found = two.locate(p).unwrap().found;
        assert!(
            matches!(found, Found::Elsewhere { index: 0, .. }),
            "{p}: {found:?}"
        );
    }

    assert_report(&app, &router, TWO, version);
    assert_each_reading_once(&app, &router, &readings);

    // A failed re-read (the parameter gone) keeps the list: the same router, the same report.
    app.ssm
        .delete_parameter()
        .name(PARAMETER_NAME)
        .send()
        .await
        .unwrap();
    let after = routed(&mut routing, later + Duration::from_secs(60)).await;
    assert_eq!(after.client_id(), router.client_id());
    drop((router, after));
    drop(routing); // the app's end: its report goes with it
    assert_eq!(app.reports(), Some(vec![]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_program_before_and_after_the_list() {
    let app = App::start().await;
    let start = 1_700_000_000;
    let mut routing = app.routing(None);
    assert_eq!(writer::run(&mut routing, 30, start).await.unwrap(), 30);
    drop(routing);
    let mut plain: Vec<String> = (0..30)
        .map(|d| file_name(&writer::reading_path(d, start)))
        .collect();
    plain.sort();
    assert_eq!(list_files(&app.mount.watch_dir()), plain);
    assert_eq!(app.reports(), None);

    app.publish(TWO).await;
    let mut routing = app.routing(None);
    // The plain paths' readings are found, and not written again.
    assert_eq!(writer::run(&mut routing, 30, start).await.unwrap(), 0);
    assert_eq!(
        writer::run(&mut routing, 200, start + 1).await.unwrap(),
        200
    );
    assert_eq!(writer::run(&mut routing, 200, start + 1).await.unwrap(), 0);
    assert_eq!(app.reports().map(|r| r.len()), Some(1));
    drop(routing);
    assert_eq!(app.reports(), Some(vec![]));

    // Each new reading at its home, in both shards; the plain ones where they were.
    let two = app.router(TWO);
    let mut homes = BTreeSet::new();
    for i in 0..200 {
        let path = writer::reading_path(i % 100, start + 1 + i / 100);
        let home = two.resolve(&path).unwrap();
        assert_eq!(two.locate(&path).unwrap().found, Found::Home, "{path}");
        homes.insert(home.index);
    }
    assert_eq!(homes, BTreeSet::from([0, 1]));
    let copies = app.copies();
    assert_eq!(copies.len(), 230);
    assert!(copies.values().all(|roots| roots.len() == 1), "{copies:?}");
    for name in &plain {
        assert_eq!(copies[name], ["/"]);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn only_a_missing_parameter_means_plain_paths() {
    let app = App::start().await;
    app.publish("not a list").await;
    match app.routing(None).current(Instant::now()).await {
        Err(Stop::List { parameter, source }) => {
            assert_eq!(parameter, PARAMETER_NAME);
            assert!(matches!(source, efs_router::Error::List(_)), "{source:?}");
        }
        Err(e) => panic!("stopped for another reason: {e}"),
        Ok(_) => panic!("not stopped by a value that is not a list"),
    }
    // SSM out of reach: no answer is not the parameter's absence either.
    let port = support::moto::free_port();
    let nowhere = Aws::at(&format!("http://127.0.0.1:{port}")).await.ssm;
    let mut routing = Routing::new(nowhere, PARAMETER_NAME, app.mount.path(), None);
    match routing.current(Instant::now()).await {
        Err(Stop::Read { parameter, .. }) => assert_eq!(parameter, PARAMETER_NAME),
        Err(e) => panic!("stopped for another reason: {e}"),
        Ok(_) => panic!("not stopped when SSM does not answer"),
    }
    let written = std::fs::read_dir(app.mount.path()).unwrap().count();
    assert_eq!(written, 0); // no file, no report
}
