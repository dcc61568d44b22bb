//! A router's report on real directories: written when the router starts and every period,
//! read back by the function's parser, removed when the last clone of the router is dropped;
//! its place in each layout; the task from a local metadata endpoint; the lease.

use efs_router::report::{list_sha256, Report, DIR, EVERY_SECS};
use efs_router::reporter::{Clock, LEASE_SECS, READS, ROUTER};
use efs_router::{Error, Layout, Place, Reporting, Router};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use std::{fs, thread};

/// A version 2 list (a target serving two shards), as the function publishes it.
const TWO_SHARDS: &str = r#"{"mount_targets":[{"id":"fsmt-0","ip":"10.0.0.4","root":"/","az_id":"use1-az1","shards":2}],"strategy":"rendezvous","version":2}"#;
/// The original form: no version, every root `/`.
const ORIGINAL: &str =
    r#"{"mount_targets":[{"id":"fsmt-0","ip":"10.0.0.4"},{"id":"fsmt-1","ip":"10.0.1.4"}]}"#;
/// Two shards on two targets, none rooted at `/`.
const NO_SLASH: &str = r#"{"mount_targets":[{"id":"fsmt-0","ip":"10.0.0.4","root":"/shards/a"},{"id":"fsmt-1","ip":"10.0.1.4","root":"/shards/b"}],"strategy":"rendezvous"}"#;

fn fs_root() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir_all(d.path().join("shards/use1-az1.1")).unwrap();
    d
}

/// A clock the test moves.
fn manual(start: u64) -> (Arc<AtomicU64>, Clock) {
    let now = Arc::new(AtomicU64::new(start));
    let read = Arc::clone(&now);
    (now, Arc::new(move || read.load(Ordering::SeqCst)))
}

fn read_report(file: &Path) -> Report {
    let name = file.file_name().unwrap().to_str().unwrap();
    Report::parse(name, &fs::read(file).unwrap()).unwrap()
}

/// Waits (up to a minute, then fails) for `done`.
fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let until = Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(Instant::now() < until, "never: {what}");
        thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_router_reports_the_exact_list_it_routes_by_and_removes_it_when_dropped() {
    let d = fs_root();
    let (_, clock) = manual(1_700_000_000);
    let options = Reporting {
        parameter_version: Some(7),
        label: Some("reader-service".into()),
        clock: Some(clock),
        ..Reporting::default()
    };
    let router = Router::reporting(TWO_SHARDS, Layout::single_mount(d.path()), options).unwrap();
    let id = router.client_id().unwrap().to_owned();
    let file = router.report_file().unwrap();
    assert_eq!(file, d.path().join(DIR).join(format!("{id}.json")));
    let report = read_report(&file);
    assert_eq!(report.client, id);
    assert_eq!(report.router, ROUTER);
    assert!(report.router.starts_with("efs-router-rust/"));
    assert_eq!(report.reads, READS);
    assert!(report.can_read(2));
    assert_eq!(report.list.sha256, list_sha256(TWO_SHARDS));
    assert_eq!(report.list.version, 2);
    assert_eq!(report.list.parameter_version, Some(7));
    assert_eq!(
        (report.loaded_at, report.written_at),
        (1_700_000_000, 1_700_000_000)
    );
    assert_eq!(report.every, EVERY_SECS);
    assert_eq!(report.task, None);
    assert_eq!(report.label.as_deref(), Some("reader-service"));
    // No temporary file is left beside it.
    let names: Vec<_> = fs::read_dir(d.path().join(DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [std::ffi::OsString::from(format!("{id}.json"))]);
    // Made writable by every task's user, whatever this process's umask.
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(d.path().join(DIR))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o7777, 0o1777);
    // A clone is the same client; the report goes with the last of them.
    let clone = router.clone();
    drop(router);
    assert_eq!(clone.client_id(), Some(id.as_str()));
    assert!(file.exists());
    drop(clone);
    assert!(!file.exists());
}

#[test]
fn each_router_is_its_own_client_and_the_original_form_is_version_1() {
    let d = fs_root();
    let a = Router::reporting(
        ORIGINAL,
        Layout::single_mount(d.path()),
        Reporting::default(),
    )
    .unwrap();
    let b = Router::reporting(
        ORIGINAL,
        Layout::single_mount(d.path()),
        Reporting::default(),
    )
    .unwrap();
    assert_ne!(a.client_id(), b.client_id());
    let report = read_report(&a.report_file().unwrap());
    assert_eq!(
        (report.list.version, report.list.parameter_version),
        (1, None)
    );
    // Without a label, the host's name.
    assert!(report.label.is_some_and(|l| !l.is_empty()));
    // A router built from a parsed list reports nothing, and holds no lease.
    let plain = Router::new(a.list().clone(), Layout::single_mount(d.path())).unwrap();
    assert_eq!(plain.client_id(), None);
    plain.lease().unwrap();
}

#[test]
fn the_thread_rewrites_the_report_every_period_and_stops_with_the_router() {
    let d = fs_root();
    let (now, clock) = manual(1000);
    let options = Reporting {
        clock: Some(clock),
        every: Some(Duration::from_millis(10)),
        ..Reporting::default()
    };
    let router = Router::reporting(TWO_SHARDS, Layout::single_mount(d.path()), options).unwrap();
    let file = router.report_file().unwrap();
    now.store(1060, Ordering::SeqCst);
    eventually("the report rewritten at 1060", || {
        read_report(&file).written_at == 1060
    });
    assert_eq!(read_report(&file).loaded_at, 1000);
    // Refreshes noted by the application go into the next report.
    router.note_refresh(false);
    now.store(1120, Ordering::SeqCst);
    eventually("the report rewritten at 1120", || {
        read_report(&file).written_at == 1120
    });
    let report = read_report(&file);
    assert_eq!(
        (report.refreshed_at, report.refresh_failed_at),
        (None, Some(1060))
    );
    // The thread may be writing: the report goes when that write ends.
    drop(router);
    eventually("the report removed", || !file.exists());
    // Nothing writes it again: the thread is gone with the router.
    now.store(1180, Ordering::SeqCst);
    thread::sleep(Duration::from_millis(100));
    assert!(!file.exists());
}

#[test]
fn a_per_target_layout_reports_through_the_mount_of_the_root_shard() {
    let d = tempfile::tempdir().unwrap();
    let mounts: Vec<PathBuf> = (0..2).map(|i| d.path().join(format!("m{i}"))).collect();
    for m in &mounts {
        fs::create_dir(m).unwrap();
    }
    let router = Router::reporting(
        TWO_SHARDS,
        Layout::per_target(mounts.clone()),
        Reporting::default(),
    )
    .unwrap();
    // Shard 0 is rooted at `/`: its mount is the file system's root.
    assert_eq!(
        router.report_file().unwrap().parent().unwrap(),
        mounts[0].join(DIR)
    );
    assert!(router.report_file().unwrap().exists());
    // Without a shard rooted at `/`, the root must be given.
    let err = Router::reporting(
        NO_SLASH,
        Layout::per_target(mounts.clone()),
        Reporting::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::Report(f) if f.kind() == "no-report-dir"),
        "{err}"
    );
    let root = d.path().join("root");
    fs::create_dir(&root).unwrap();
    let options = Reporting {
        fs_root: Some(root.clone()),
        ..Reporting::default()
    };
    let router = Router::reporting(NO_SLASH, Layout::per_target(mounts), options).unwrap();
    assert_eq!(
        router.report_file().unwrap().parent().unwrap(),
        root.join(DIR)
    );
    assert!(router.report_file().unwrap().exists());
}

#[test]
fn the_reports_directory_is_not_followed_through_a_link() {
    let d = fs_root();
    let elsewhere = d.path().join("elsewhere");
    fs::create_dir(&elsewhere).unwrap();
    std::os::unix::fs::symlink(&elsewhere, d.path().join(DIR)).unwrap();
    let router = Router::reporting(
        TWO_SHARDS,
        Layout::single_mount(d.path()),
        Reporting::default(),
    )
    .unwrap();
    assert_eq!(fs::read_dir(&elsewhere).unwrap().count(), 0);
    let err = router.write("data/x.json", b"x").unwrap_err();
    assert!(
        matches!(&err, Error::Report(f) if f.kind() == "report-lapsed"),
        "{err}"
    );
}

#[test]
fn the_task_is_read_from_the_metadata_endpoint() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let uri = format!("http://{}/v4/abc", listener.local_addr().unwrap());
    let server = thread::spawn(move || {
        let (mut conn, _) = listener.accept().unwrap();
        let (mut request, mut buf) = (Vec::new(), [0u8; 4096]);
        while !request.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = conn.read(&mut buf).unwrap();
            assert_ne!(n, 0, "the request ended before its headers did");
            request.extend_from_slice(&buf[..n]);
        }
        let body = r#"{"Cluster":"c","TaskARN":"arn:aws:ecs:us-east-1:111122223333:task/c/abc"}"#;
        write!(
            conn,
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        String::from_utf8(request).unwrap()
    });
    let d = fs_root();
    let options = Reporting {
        metadata_uri: Some(uri),
        ..Reporting::default()
    };
    let router = Router::reporting(TWO_SHARDS, Layout::single_mount(d.path()), options).unwrap();
    let request = server.join().unwrap();
    assert!(
        request.starts_with("GET /v4/abc/task HTTP/1.1\r\n"),
        "{request}"
    );
    assert_eq!(
        read_report(&router.report_file().unwrap()).task.as_deref(),
        Some("arn:aws:ecs:us-east-1:111122223333:task/c/abc")
    );
}

/// Replaces the reports' directory with a file, so that no report can be written.
fn block_reports(root: &Path) {
    fs::remove_dir_all(root.join(DIR)).unwrap();
    fs::write(root.join(DIR), b"not a directory").unwrap();
}

#[test]
fn a_lapsed_report_stops_writes_moves_and_deletes_until_one_is_written() {
    let d = fs_root();
    let (now, clock) = manual(10_000);
    let options = Reporting {
        clock: Some(clock),
        ..Reporting::default()
    };
    let router = Router::reporting(TWO_SHARDS, Layout::single_mount(d.path()), options).unwrap();
    let file = router.report_file().unwrap();
    block_reports(d.path());
    // Within the lease, nothing is written first: the write goes through.
    now.store(10_000 + LEASE_SECS - 1, Ordering::SeqCst);
    router.write("data/a.json", b"a").unwrap();
    // At the lease's end, the report must be written first, and cannot be.
    now.store(10_000 + LEASE_SECS, Ordering::SeqCst);
    let err = router.write("data/b.json", b"b").unwrap_err();
    assert!(
        matches!(&err, Error::Report(f) if f.kind() == "report-lapsed"),
        "{err}"
    );
    assert!(!router.exists("data/b.json").unwrap());
    // A read still answers, but moves nothing: the copy stays where it is.
    let logical = "data/misplaced.json";
    let home = router.resolve(logical).unwrap();
    let other = 1 - home.index;
    let there = router
        .layout()
        .real_path(router.shards(), other, &home.logical);
    fs::create_dir_all(there.parent().unwrap()).unwrap();
    fs::write(&there, b"m").unwrap();
    let read = router.read_with_fallback(logical).unwrap();
    assert_eq!(read.data, b"m");
    assert!(
        matches!(read.place, Place::LeftElsewhere { index, .. } if index == other),
        "{:?}",
        read.place
    );
    assert!(there.exists() && !home.real.exists());
    // A delete is refused too, and removes nothing.
    let err = router.delete("data/a.json").unwrap_err();
    assert!(
        matches!(&err, Error::Report(f) if f.kind() == "report-lapsed"),
        "{err}"
    );
    assert!(router.exists("data/a.json").unwrap());
    // Once a report can be written again, the next write renews the lease and goes through.
    fs::remove_file(d.path().join(DIR)).unwrap();
    router.write("data/b.json", b"b").unwrap();
    assert_eq!(read_report(&file).written_at, 10_000 + LEASE_SECS);
    assert_eq!(
        router.read_with_fallback(logical).unwrap().place,
        Place::MovedHome { from: other }
    );
}

#[test]
fn a_router_whose_first_report_failed_writes_nothing_until_it_reports() {
    let d = fs_root();
    fs::write(d.path().join(DIR), b"not a directory").unwrap();
    let router = Router::reporting(
        TWO_SHARDS,
        Layout::single_mount(d.path()),
        Reporting::default(),
    )
    .unwrap();
    let err = router.write("data/a.json", b"a").unwrap_err();
    assert!(
        matches!(&err, Error::Report(f) if f.kind() == "report-lapsed"),
        "{err}"
    );
    fs::remove_file(d.path().join(DIR)).unwrap();
    router.write("data/a.json", b"a").unwrap();
    assert!(router.report_file().unwrap().exists());
}

/// A list read again by an application that refreshes it itself: the new router keeps the
/// client, and its report names the new list at once; an unchanged list is a refresh only.
#[test]
fn a_list_read_again_keeps_the_client_and_is_reported_at_once() {
    let d = fs_root();
    let (now, clock) = manual(5_000);
    let options = Reporting {
        parameter_version: Some(3),
        clock: Some(clock),
        ..Reporting::default()
    };
    let first = Router::reporting(ORIGINAL, Layout::single_mount(d.path()), options).unwrap();
    now.store(5_060, Ordering::SeqCst);
    let same = first.with_list(ORIGINAL, Some(3)).unwrap();
    assert_eq!(same.client_id(), first.client_id());
    let report = read_report(&first.report_file().unwrap());
    assert_eq!(
        (report.loaded_at, report.refreshed_at),
        (5_000, None),
        "unchanged: written at the next tick"
    );
    now.store(5_120, Ordering::SeqCst);
    let second = same.with_list(TWO_SHARDS, Some(4)).unwrap();
    assert_eq!(second.client_id(), first.client_id());
    assert_eq!(second.shards().len(), 2);
    let report = read_report(&second.report_file().unwrap());
    assert_eq!(report.list.sha256, list_sha256(TWO_SHARDS));
    assert_eq!(
        (report.list.version, report.list.parameter_version),
        (2, Some(4))
    );
    assert_eq!(
        (report.loaded_at, report.refreshed_at, report.written_at),
        (5_120, Some(5_120), 5_120)
    );
    // A list that does not parse changes nothing.
    assert!(matches!(second.with_list("{}", None), Err(Error::List(_))));
    drop((first, same));
    assert!(
        second.report_file().unwrap().exists(),
        "one client, alive while any of its routers is"
    );
}

/// `close_report`: the report goes at once, for every clone, and nothing is written or moved
/// after it (a binding's `close`).
#[test]
fn a_closed_report_is_removed_and_the_router_writes_nothing_more() {
    let d = fs_root();
    let router = Router::reporting(
        TWO_SHARDS,
        Layout::single_mount(d.path()),
        Reporting::default(),
    )
    .unwrap();
    let clone = router.clone();
    router.write("data/a.json", b"a").unwrap();
    let file = router.report_file().unwrap();
    router.close_report();
    assert!(!file.exists());
    let err = clone.write("data/b.json", b"b").unwrap_err();
    assert!(
        matches!(&err, Error::Report(f) if f.kind() == "report-lapsed"),
        "{err}"
    );
    assert!(router.write_report().is_err());
    assert!(!file.exists(), "the thread does not write it back");
}
