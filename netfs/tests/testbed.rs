//! The test bed itself: entries without a type, READDIR charged per reply of names, requests
//! served at once, counters reset, unmounted on drop. Skips (with a message) without FUSE.

use netfs::{Options, TestBed};
use std::fs;
use std::mem::MaybeUninit;
use std::time::Duration;

#[test]
fn entries_have_no_type_and_readdir_is_charged_per_reply() {
    let Some(bed) = TestBed::new("entries") else {
        return;
    };
    for i in 0..1500 {
        fs::write(bed.backing.path().join(format!("f{i}")), b"").unwrap();
    }
    fs::create_dir(bed.backing.path().join("d")).unwrap();
    bed.fs.reset();
    let dir = rustix::fs::open(
        bed.path(),
        rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
        rustix::fs::Mode::empty(),
    )
    .unwrap();
    let mut buf = vec![MaybeUninit::uninit(); 1 << 20];
    let mut entries = rustix::fs::RawDir::new(dir, &mut buf);
    let mut names = 0;
    while let Some(e) = entries.next() {
        let e = e.unwrap();
        assert_eq!(e.file_type(), rustix::fs::FileType::Unknown);
        names += 1;
    }
    assert_eq!(names, 1503); // with . and ..
    let c = bed.fs.counts();
    assert_eq!(c.get("READDIR"), 1503u64.div_ceil(544), "{c:?}");
    assert_eq!(c.get("LOOKUP") + c.get("GETATTR"), 0, "{c:?}");
}

#[test]
fn requests_are_served_at_once_and_counted_by_kind() {
    let Some(bed) = TestBed::with(
        "concurrency",
        Options {
            round_trip: Duration::from_millis(100),
            threads: 16,
            ..Options::default()
        },
    ) else {
        return;
    };
    for i in 0..8 {
        fs::write(bed.backing.path().join(format!("f{i}")), b"x").unwrap();
    }
    bed.fs.reset();
    std::thread::scope(|s| {
        for i in 0..8 {
            let p = bed.path().join(format!("f{i}"));
            s.spawn(move || fs::metadata(p).unwrap());
        }
    });
    let c = bed.fs.counts();
    assert_eq!(c.get("LOOKUP"), 8, "{c:?}");
    assert!(
        c.get("MAX_IN_FLIGHT") >= 2,
        "requests served one by one: {c:?}"
    );
    bed.fs.reset();
    assert_eq!(bed.fs.counts().round_trips(), 0);
}

#[test]
fn a_file_name_is_looked_up_every_time_a_directory_name_is_cached() {
    let Some(bed) = TestBed::new("ttl") else {
        return;
    };
    fs::create_dir(bed.backing.path().join("d")).unwrap();
    fs::write(bed.backing.path().join("d/f"), b"x").unwrap();
    fs::metadata(bed.path().join("d/f")).unwrap();
    bed.fs.reset();
    for _ in 0..3 {
        fs::metadata(bed.path().join("d/f")).unwrap();
    }
    let c = bed.fs.counts();
    assert_eq!((c.get("LOOKUP"), c.get("GETATTR")), (3, 0), "{c:?}");
}

#[test]
fn dropping_the_test_bed_unmounts() {
    let Some(bed) = TestBed::new("unmount") else {
        return;
    };
    fs::write(bed.backing.path().join("only-in-backing"), b"x").unwrap();
    let mnt = bed.mnt.path().to_path_buf();
    assert!(mnt.join("only-in-backing").exists());
    let TestBed {
        fs: netfs,
        backing,
        mnt: mnt_dir,
    } = bed;
    drop(netfs);
    assert!(!mnt.join("only-in-backing").exists());
    let mounts = fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(mnt.to_str().unwrap()), "{mounts}");
    drop((backing, mnt_dir));
}
