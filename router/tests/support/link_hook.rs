//! A `linkat` of the test binary's own, which `std::fs::hard_link` calls (the executable's own
//! definition wins over the C library's): every call goes straight to the system call, and the
//! links of one watched source are counted. Armed for a source, it takes the source away just
//! before the real link of it and (as a writer would) may put a new file under its name just
//! after: the moment at which a mover's link finds no name (ENOENT), made on purpose.

#![allow(dead_code)]

use std::ffi::{c_char, c_int, CStr, OsStr};
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// `linkat`'s error number for a missing name.
pub const ENOENT: i32 = 2;

/// What the hook does to the next link of `src`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Swap {
    /// Removes the source before the link and renames a new file (written before) under its
    /// name after.
    Replace,
    /// Removes the source before the link.
    Remove,
}

#[derive(Debug, Default)]
struct Hook {
    armed: Option<(PathBuf, Swap, Vec<u8>)>,
    /// Links of the armed source: (the error number, 0 for none) of each, in order.
    links: Vec<i32>,
    watched: Option<PathBuf>,
    /// Before the link of the watched source this many links on, removes this other name
    /// ([`arm_elsewhere`]).
    elsewhere: Option<(usize, PathBuf)>,
}

static HOOK: Mutex<Hook> = Mutex::new(Hook {
    armed: None,
    links: Vec::new(),
    watched: None,
    elsewhere: None,
});

extern "C" {
    fn __errno_location() -> *mut c_int;
}

/// `linkat(2)`, as the C library declares it; see the module's documentation.
///
/// # Safety
///
/// As `linkat(2)`: `oldpath` and `newpath` are NUL-terminated strings.
#[no_mangle]
pub unsafe extern "C" fn linkat(
    olddirfd: c_int,
    oldpath: *const c_char,
    newdirfd: c_int,
    newpath: *const c_char,
    flags: c_int,
) -> c_int {
    let (old, new) = (CStr::from_ptr(oldpath), CStr::from_ptr(newpath));
    let old_path = Path::new(OsStr::from_bytes(old.to_bytes()));
    let (swap, watched) = {
        let mut hook = HOOK.lock().unwrap_or_else(|e| e.into_inner());
        let swap = match &hook.armed {
            Some((src, swap, bytes)) if src == old_path => Some((*swap, bytes.clone())),
            _ => None,
        };
        if swap.is_some() {
            hook.armed = None;
        }
        let watched = hook.watched.as_deref() == Some(old_path);
        if watched {
            if let Some((left, other)) = &mut hook.elsewhere {
                *left -= 1;
                if *left == 0 {
                    fs::remove_file(&*other).expect("the hook removes the other name");
                    hook.elsewhere = None;
                }
            }
        }
        (swap, watched)
    };
    // A writer's new file is made before the old one goes (as a write to a temporary name
    // does), so that it is a new inode: one made after could reuse the old one's number.
    let fresh = old_path.with_extension("hook-new");
    if let Some((swap, bytes)) = &swap {
        if *swap == Swap::Replace {
            fs::write(&fresh, bytes).expect("the hook writes a new file");
        }
        fs::remove_file(old_path).expect("the hook removes the source");
    }
    let result = rustix::fs::linkat(
        rustix::fd::BorrowedFd::borrow_raw(olddirfd),
        old,
        rustix::fd::BorrowedFd::borrow_raw(newdirfd),
        new,
        rustix::fs::AtFlags::from_bits_retain(flags as u32),
    );
    if let Some((Swap::Replace, _)) = &swap {
        fs::rename(&fresh, old_path).expect("the hook puts the new file at the source");
    }
    let errno = result.err().map_or(0, |e| e.raw_os_error());
    if watched || swap.is_some() {
        HOOK.lock()
            .unwrap_or_else(|e| e.into_inner())
            .links
            .push(errno);
    }
    if errno == 0 {
        0
    } else {
        *__errno_location() = errno;
        -1
    }
}

/// Arms the hook for the next link of `src`, and counts every link of it from now on.
pub fn arm(src: &Path, swap: Swap, bytes: &[u8]) {
    let mut hook = HOOK.lock().unwrap();
    hook.armed = Some((src.to_path_buf(), swap, bytes.to_vec()));
    hook.watched = Some(src.to_path_buf());
    hook.links.clear();
    hook.elsewhere = None;
}

/// The links of the armed source since [`arm`], each's error number (0: linked); disarms.
pub fn links() -> Vec<i32> {
    let mut hook = HOOK.lock().unwrap();
    hook.armed = None;
    hook.watched = None;
    hook.elsewhere = None;
    std::mem::take(&mut hook.links)
}

/// Counts every link of `src` from now on (none armed).
pub fn watch(src: &Path) {
    let mut hook = HOOK.lock().unwrap();
    hook.armed = None;
    hook.watched = Some(src.to_path_buf());
    hook.links.clear();
    hook.elsewhere = None;
}

/// Counts every link of `src` from now on, and just before the `nth` of them (1: the next)
/// removes `other`: the source's file as another client (or the server itself) names it, so
/// that what this client's cache holds of `src` stays as it was.
pub fn arm_elsewhere(src: &Path, nth: usize, other: &Path) {
    assert!(nth > 0, "the first link is the 1st");
    watch(src);
    HOOK.lock().unwrap().elsewhere = Some((nth, other.to_path_buf()));
}
