//! The mover's link after ENOENT (`link_or_settle` in router/src/relocation/single.rs), reached on
//! purpose: when `hard_link(src, dst)` fails with NotFound, a fresh look at `src` tells a
//! writer's new file under the name (move that one), a source gone (`SourceGone`) and a missing
//! destination directory (an error) apart.
//!
//! On NFS the link fails so when another client replaced the file this mount looked at; on a
//! local file system the name only fails when it is missing at the very moment of the link. A
//! hook makes that moment: this test binary defines `linkat`, which `std::fs::hard_link` calls
//! (the executable's own definition wins over the C library's), and, when armed for a source,
//! takes the source away just before the real link and (as a writer would) puts a new file
//! there just after it. Every other call goes straight to the system call. Each test counts the
//! links it saw, so that the path it asks for is shown reached, not assumed.

use efs_router::relocation::relocate_many;
use efs_router::{relocate, Relocation};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::{fs, io};

mod support {
    pub mod link_hook;
}
use support::link_hook::{arm, links, watch, Swap, ENOENT};

/// The tests share the hook: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A misplaced file `src` and where it goes, `dst` (its directory made).
fn pair(dir: &Path) -> (PathBuf, PathBuf) {
    let (from, to) = (dir.join("from"), dir.join("to"));
    fs::create_dir_all(&from).unwrap();
    fs::create_dir_all(&to).unwrap();
    let src = from.join("device-1-1700000000.json");
    fs::write(&src, b"looked at").unwrap();
    (src, to.join("device-1-1700000000.json"))
}

/// A mover: `src` to `dst`, with its answer.
type Mover = fn(&Path, &Path) -> io::Result<Relocation>;

/// Each mover under test: `relocate`, and the function's batch (`relocate_many`).
fn movers() -> [(&'static str, Mover); 2] {
    fn batch(src: &Path, dst: &Path) -> io::Result<Relocation> {
        let moves = [(src.to_path_buf(), dst.to_path_buf())];
        relocate_many(&moves, 1, None)
            .pop()
            .expect("one answer")
            .expect("not stopped")
    }
    [("relocate", relocate), ("relocate_many", batch)]
}

#[test]
fn a_new_file_under_the_name_when_the_link_finds_none_is_the_one_moved() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (name, mover) in movers() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = pair(d.path());
        let looked_at = fs::metadata(&src).unwrap().ino();
        arm(&src, Swap::Replace, b"a writer's new file");
        let moved = mover(&src, &dst).unwrap();
        let links = links();
        println!("{name}: links of the source {links:?}, answered {moved:?}");
        // The first link found no name (ENOENT); the fresh look found another file there, and
        // the second link moved it.
        assert_eq!(links, [ENOENT, 0], "{name}");
        assert_eq!(moved, Relocation::Moved, "{name}");
        assert_eq!(fs::read(&dst).unwrap(), b"a writer's new file", "{name}");
        assert_ne!(fs::metadata(&dst).unwrap().ino(), looked_at, "{name}");
        assert!(
            fs::symlink_metadata(&src).is_err(),
            "{name}: the source stays"
        );
    }
}

#[test]
fn no_file_under_the_name_when_the_link_finds_none_is_a_source_gone() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (name, mover) in movers() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = pair(d.path());
        arm(&src, Swap::Remove, b"");
        let moved = mover(&src, &dst).unwrap();
        let links = links();
        println!("{name}: links of the source {links:?}, answered {moved:?}");
        assert_eq!(links, [ENOENT], "{name}");
        assert_eq!(moved, Relocation::SourceGone, "{name}");
        assert!(fs::symlink_metadata(&dst).is_err(), "{name}");
    }
}

#[test]
fn the_same_file_under_the_name_when_the_link_fails_is_a_missing_destination_directory() {
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    for (name, mover) in movers() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = pair(d.path());
        let dst = dst
            .parent()
            .unwrap()
            .join("gone/deeper")
            .join(dst.file_name().unwrap());
        watch(&src);
        let moved = mover(&src, &dst);
        let links = links();
        println!("{name}: links of the source {links:?}, answered {moved:?}");
        assert_eq!(links, [ENOENT], "{name}");
        assert_eq!(
            moved.map_err(|e| e.kind()),
            Err(io::ErrorKind::NotFound),
            "{name}"
        );
        assert_eq!(
            fs::read(&src).unwrap(),
            b"looked at",
            "{name}: the source stays"
        );
    }
}
