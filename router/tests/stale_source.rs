//! A source another client deleted, while this client's cache of names still shows it
//! (docs/design.md fact 13), met by a link after the mover's first: commit 6d6deab. On Linux a
//! LINK to a file whose last name is gone fails `ENOENT`; the mover then asks whether the
//! source is still there, and must ask the server (`fresh_look`), not its cache (`look`),
//! which would turn the delete into a bare `NotFound` error, a file a walk counts failed.
//!
//! On one local directory the cache is the file system, so the FUSE test bed (`netfs`) plays
//! the client: names cached for ten minutes, and, as NFS's close-to-open for directories,
//! opening a directory that changed drops the names cached in it. The other client is the
//! backing directory itself. The link hook (tests/support/link_hook.rs) removes the source
//! there just before the mover's second link of it: the link into the private directory made
//! beside a destination that holds an older file (`replace`). The test fails, never skips,
//! where FUSE cannot be mounted.

use efs_router::{relocate, Relocation};
use netfs::{NetFs, Options, TestBed};
use std::fs::{self, File};
use std::path::Path;
use std::time::{Duration, SystemTime};

mod support {
    pub mod link_hook;
}
use support::link_hook::{arm_elsewhere, links, ENOENT};

/// `link(2)`'s error number for a name that exists.
const EEXIST: i32 = 17;

/// A test bed whose client trusts names and attributes for ten minutes and revalidates a
/// directory when it opens it; it must mount here.
fn caching_bed() -> TestBed {
    let options = Options {
        round_trip: Duration::ZERO,
        name_ttl: Duration::from_secs(600),
        dir_ttl: Duration::from_secs(600),
        attr_ttl: Duration::from_secs(600),
        threads: 8,
        revalidate_dirs_on_open: true,
        ..Options::default()
    };
    let backing = tempfile::tempdir().unwrap();
    let mnt = tempfile::tempdir().unwrap();
    match NetFs::try_mount(backing.path(), mnt.path(), options) {
        Ok(fs) => TestBed { fs, backing, mnt },
        Err(e) => panic!("the FUSE test bed does not mount here, so this test cannot run: {e}"),
    }
}

/// Writes `bytes` at `path`, modified `secs` after 1970.
fn put(path: &Path, bytes: &[u8], secs: u64) {
    fs::write(path, bytes).unwrap();
    let when = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
    let f = File::options().write(true).open(path).unwrap();
    f.set_modified(when).unwrap();
}

#[test]
fn a_source_deleted_by_another_client_while_this_one_caches_it_is_a_source_gone() {
    let bed = caching_bed();
    let (mine, theirs) = (bed.path(), bed.backing.path());
    for d in ["from", "to", "shown"] {
        fs::create_dir(theirs.join(d)).unwrap();
    }
    // The hazard first, with plain calls: once this client has looked a name up, a delete by
    // the other leaves it showing the file; opening the directory makes it ask again.
    put(&theirs.join("shown/f"), b"looked at", 20);
    assert!(fs::symlink_metadata(mine.join("shown/f")).is_ok());
    fs::remove_file(theirs.join("shown/f")).unwrap();
    assert!(
        fs::symlink_metadata(mine.join("shown/f")).is_ok(),
        "the test bed's client must still show the deleted name, or this test shows nothing"
    );
    fs::read_dir(mine.join("shown")).unwrap();
    assert!(fs::symlink_metadata(mine.join("shown/f")).is_err());

    // A newer source and an older file at home: the move links the source into a private
    // directory beside home, and that link meets the delete.
    put(&theirs.join("from/f"), b"newer", 20);
    put(&theirs.join("to/f"), b"older", 10);
    let (src, dst) = (mine.join("from/f"), mine.join("to/f"));
    assert!(fs::symlink_metadata(&src).is_ok());
    arm_elsewhere(&src, 2, &theirs.join("from/f"));
    let moved = relocate(&src, &dst);
    let links = links();
    println!("links of the source {links:?}, answered {moved:?}");
    // The first link found home taken (EEXIST), the second found no source (ENOENT).
    assert_eq!(links, [EEXIST, ENOENT]);
    assert_eq!(moved.map_err(|e| e.kind()), Ok(Relocation::SourceGone));
    assert_eq!(fs::read(theirs.join("to/f")).unwrap(), b"older");
    let left: Vec<_> = fs::read_dir(theirs.join("to")).unwrap().collect();
    assert_eq!(
        left.len(),
        1,
        "home holds its file and nothing the move made"
    );
    assert!(fs::symlink_metadata(theirs.join("from/f")).is_err());
}
