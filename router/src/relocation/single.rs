//! One file moved home ([`relocate`]): the names checked, the source looked at, the link;
//! then, by what the link found, settling with the destination and retiring the source.

use super::outcome::{changing, same_entry_error, Relocation};
use super::retire::retire;
use super::settle::{no_hard_links, settle, without_links};
use super::stamp::{fresh_look, Stamp};
use super::ROUNDS;
use crate::names::private_kind;
use std::fs;
use std::io;
use std::path::Path;

/// Moves `src` to `dst` (whose directory must exist), within one file system: the newer of
/// the two versions ends at `dst` (`dst` wins a tie), and the source name is gone. See the
/// [module's documentation](super) and router/REFERENCE.md for every case.
///
/// Errors: `src` or `dst` not a regular file ([`NotARegularFile`](super::NotARegularFile), kind
/// `InvalidData`);
/// `src` or `dst` named as one of the router's own files ([`crate::names`]: a write or a move in
/// progress), kind `InvalidInput`;
/// `src` and `dst` one directory entry however spelled (`./a` and `a`, `d/../d/f` and `d/f`:
/// same parent directory by device and inode, same name), kind `InvalidInput`; the file
/// system's own errors (`dst`'s directory missing: `NotFound`; two mounts: `EXDEV`).
pub fn relocate(src: &Path, dst: &Path) -> io::Result<Relocation> {
    relocate_known(src, dst, None)
}

/// [`relocate`], the source already looked at (`fstat` of the copy a read opened).
pub(crate) fn relocate_known(
    src: &Path,
    dst: &Path,
    known: Option<Stamp>,
) -> io::Result<Relocation> {
    check_names(src, dst)?;
    let s = match known {
        Some(s) => s,
        None => match fresh_look(src)? {
            Some(s) => s,
            None => return Ok(Relocation::SourceGone),
        },
    };
    finish(src, dst, link_or_settle(src, dst, s)?)
}

/// Retires the source, if that is what is left of the move, by [`retire`].
pub(super) fn finish(src: &Path, dst: &Path, next: Next) -> io::Result<Relocation> {
    match next {
        Next::Done(outcome) => Ok(outcome),
        Next::Retire(expected, outcome) => retire(src, dst, &expected, outcome),
    }
}

/// What is left of a move once its link, or its comparison with `dst`, is done.
pub(crate) enum Next {
    /// Nothing: the move is over.
    Done(Relocation),
    /// The source is to be retired: it should be the file `.0` (linked or compared), and the
    /// move answers `.1` unless the retire finds a writer's version instead.
    Retire(Stamp, Relocation),
}

/// Refuses a request that names one file twice, or one of the router's own files.
pub(crate) fn check_names(src: &Path, dst: &Path) -> io::Result<()> {
    if src == dst {
        return Err(same_entry_error(src, dst));
    }
    for path in [src, dst] {
        if let Some(kind) = path
            .file_name()
            .and_then(|n| private_kind(n.as_encoded_bytes()))
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: a {} name of the router's own, never moved",
                    path.display(),
                    kind.as_str()
                ),
            ));
        }
    }
    Ok(())
}

/// `link(src, dst)`, the source looked at as `s`; when `dst` exists, settles which of the two
/// stays.
pub(crate) fn link_or_settle(src: &Path, dst: &Path, mut s: Stamp) -> io::Result<Next> {
    for _ in 0..ROUNDS {
        s.regular(src)?;
        match fs::hard_link(src, dst) {
            Ok(()) => return Ok(Next::Retire(s, Relocation::Moved)),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return settle(src, dst, s),
            Err(e) if e.kind() == io::ErrorKind::NotFound => match fresh_look(src)? {
                None => return Ok(Next::Done(Relocation::SourceGone)),
                // The file looked at is gone, yet the name is there: a writer put a new version
                // under it meanwhile (on NFS the link names the file looked at). Move that one.
                Some(now) if !now.same_file(&s) => s = now,
                // The source is as it was: `dst`'s directory is missing.
                Some(_) => return Err(e),
            },
            Err(e) if no_hard_links(&e) => return without_links(src, dst, &s),
            Err(e) => return Err(e),
        }
    }
    Err(changing(src))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::relocation::tests::{ino, names, put, set_mtime};
    use crate::relocation::NotARegularFile;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn moves_and_keeps_the_bytes() {
        let d = tempfile::tempdir().unwrap();
        let (src, dst) = (d.path().join("a"), d.path().join("b"));
        fs::write(&src, b"reading").unwrap();
        let before = ino(&src);
        assert_eq!(relocate(&src, &dst).unwrap(), Relocation::Moved);
        assert!(!src.exists());
        assert_eq!(fs::read(&dst).unwrap(), b"reading");
        let m = fs::metadata(&dst).unwrap();
        assert_eq!((m.ino(), m.nlink()), (before, 1));
        assert_eq!(names(d.path()), ["b"]);
    }

    #[test]
    fn a_missing_source_is_gone_not_an_error() {
        let d = tempfile::tempdir().unwrap();
        let dst = d.path().join("b");
        assert_eq!(
            relocate(&d.path().join("a"), &dst).unwrap(),
            Relocation::SourceGone
        );
        fs::write(&dst, b"moved by another").unwrap();
        assert_eq!(
            relocate(&d.path().join("a"), &dst).unwrap(),
            Relocation::SourceGone
        );
    }

    #[test]
    fn one_file_however_spelled_is_refused_and_kept() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("sub")).unwrap();
        std::os::unix::fs::symlink(".", d.path().join("here")).unwrap();
        let f = d.path().join("f");
        fs::write(&f, b"only copy").unwrap();
        for other in [
            d.path().join("./f"),
            d.path().join("sub/../f"),
            d.path().join("here/f"),
            d.path().join("here/sub/../here/f"),
        ] {
            for (src, dst) in [(&f, &other), (&other, &f)] {
                let e = relocate(src, dst).unwrap_err();
                assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{}", dst.display());
                assert_eq!(fs::read(&f).unwrap(), b"only copy");
            }
        }
        assert_eq!(names(d.path()), ["f", "here", "sub"]);
    }

    #[test]
    fn the_routers_own_files_are_never_moved() {
        let d = tempfile::tempdir().unwrap();
        let (tmp, file) = (
            d.path().join(".efs-router-0123456789abcdef.tmp"),
            d.path().join("f"),
        );
        fs::write(&tmp, b"a write in progress").unwrap();
        fs::write(&file, b"x").unwrap();
        for (src, dst) in [
            (tmp.clone(), d.path().join("g")),
            (
                file.clone(),
                d.path().join(".efs-router-0123456789abcdef.moving"),
            ),
        ] {
            let e = relocate(&src, &dst).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
        }
        assert_eq!(names(d.path()), [".efs-router-0123456789abcdef.tmp", "f"]);
    }

    #[test]
    fn links_fifos_and_directories_are_not_data() {
        let d = tempfile::tempdir().unwrap();
        let file = d.path().join("file");
        put(&file, b"x", 10);
        let link = d.path().join("link");
        std::os::unix::fs::symlink("file", &link).unwrap();
        let fifo = d.path().join("fifo");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let dir = d.path().join("dir");
        fs::create_dir(&dir).unwrap();
        for (src, dst, bad, what) in [
            (&link, d.path().join("moved-link"), &link, "symbolic link"),
            (&fifo, d.path().join("moved-fifo"), &fifo, "FIFO"),
            (&dir, d.path().join("moved-dir"), &dir, "directory"),
            (&file, dir.clone(), &dir, "directory"),
            (&file, link.clone(), &link, "symbolic link"),
        ] {
            let e = relocate(src, &dst).unwrap_err();
            let n = NotARegularFile::of(&e).unwrap_or_else(|| panic!("{e}"));
            assert_eq!((n.path.as_path(), n.what), (bad.as_path(), what));
            assert_eq!(e.kind(), io::ErrorKind::InvalidData);
        }
        assert_eq!(names(d.path()), ["dir", "fifo", "file", "link"]);
        assert_eq!(fs::read(&file).unwrap(), b"x");
    }

    #[test]
    fn racing_movers_leave_exactly_one_copy() {
        let d = tempfile::tempdir().unwrap();
        const MOVERS: usize = 6;
        for round in 0..99 {
            let (src, dst) = (
                d.path().join(format!("s{round}")),
                d.path().join(format!("d{round}")),
            );
            fs::write(&src, round.to_string()).unwrap();
            // Every third round home holds an older copy, which the movers replace.
            let older = round % 3 == 0;
            if older {
                set_mtime(&src, 20);
                put(&dst, b"older", 10);
            }
            let barrier = std::sync::Barrier::new(MOVERS);
            let outcomes: Vec<Relocation> = std::thread::scope(|s| {
                let handles: Vec<_> = (0..MOVERS)
                    .map(|_| {
                        s.spawn(|| {
                            barrier.wait();
                            relocate(&src, &dst).unwrap()
                        })
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let reporting: Vec<_> = outcomes
                .iter()
                .filter(|o| **o != Relocation::SourceGone)
                .collect();
            assert_eq!(reporting.len(), 1, "{outcomes:?}");
            if !older {
                assert_eq!(*reporting[0], Relocation::Moved, "{outcomes:?}");
            }
            assert!(!src.exists());
            assert_eq!(fs::read_to_string(&dst).unwrap(), round.to_string());
            assert_eq!(fs::metadata(&dst).unwrap().nlink(), 1);
        }
        assert_eq!(names(d.path()).len(), 99);
    }
}
