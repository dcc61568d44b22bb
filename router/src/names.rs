//! The names the router keeps for itself inside shard directories.
//!
//! - `.efs-router-<16 hex digits>.tmp`: a file being written by [`crate::Router::write`]; it is
//!   renamed over its final name once its bytes are synced.
//! - `.efs-router-<16 hex digits>.moving`: a name a move gives the source (or a replacement) for
//!   the instant between taking it away from writers and removing or placing it
//!   ([`crate::relocate`]).
//!
//! - `.efs-router-clients`: the directory of the clients' reports ([`crate::report::DIR`]), at
//!   the file system's root.
//!
//! Exactly those shapes: the prefix, 16 lowercase hexadecimal digits, the suffix; or the
//! reports' directory's name. Such names are never counted, moved or routed: [`crate::dir`]
//! reports them apart (a walk never enters them, so a watched tree at the file system's root,
//! an empty `WATCH_DIR`, never counts or moves the reports), and a logical path with such a
//! component is refused (`reserved-name`). The Python client uses the same rule.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

const PREFIX: &[u8] = b".efs-router-";
const HEX_DIGITS: usize = 16;

/// Which of the router's own names an entry has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Private {
    /// `.efs-router-<16 hex>.tmp`: a write in progress (or abandoned).
    Temporary,
    /// `.efs-router-<16 hex>.moving`: a move in progress (or cut short).
    Moving,
    /// `.efs-router-clients`: the clients' reports ([`crate::report::DIR`]); one fixed name.
    Reports,
}

impl Private {
    fn suffix(self) -> &'static str {
        match self {
            Private::Temporary => ".tmp",
            Private::Moving => ".moving",
            Private::Reports => "",
        }
    }

    /// `temporary` or `moving`.
    pub fn as_str(self) -> &'static str {
        match self {
            Private::Temporary => "temporary",
            Private::Moving => "moving",
            Private::Reports => "reports",
        }
    }
}

/// Whether `name` (one path component) is one of the router's own names, and which.
pub fn private_kind(name: &[u8]) -> Option<Private> {
    if name == crate::report::DIR.as_bytes() {
        return Some(Private::Reports);
    }
    let rest = name.strip_prefix(PREFIX)?;
    if rest.len() <= HEX_DIGITS
        || !rest[..HEX_DIGITS]
            .iter()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return None;
    }
    match &rest[HEX_DIGITS..] {
        b".tmp" => Some(Private::Temporary),
        b".moving" => Some(Private::Moving),
        _ => None,
    }
}

/// A fresh name of `kind`: random (many tasks share the file system, and every container's
/// process may be pid 1) and of fixed length whatever the final name's length.
///
/// # Panics
/// For [`Private::Reports`], which has one fixed name.
pub fn new_private_name(kind: Private) -> String {
    assert!(
        kind != Private::Reports,
        "the reports' directory has one fixed name"
    );
    format!(".efs-router-{}{}", random_hex16(), kind.suffix())
}

/// 16 random lowercase hexadecimal digits (a private name's, a client id).
pub(crate) fn random_hex16() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    // RandomState is seeded from the OS; hashing a counter, the pid and the clock with it
    // gives an unpredictable name without a random-number crate.
    let mut h = RandomState::new().build_hasher();
    h.write_u64(COUNTER.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    h.write_u128(
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recognises_exactly_the_router_names() {
        for (name, want) in [
            (".efs-router-0123456789abcdef.tmp", Some(Private::Temporary)),
            (".efs-router-0123456789abcdef.moving", Some(Private::Moving)),
            (".efs-router-0123456789ABCDEF.tmp", None),
            (".efs-router-0123456789abcde.tmp", None),
            (".efs-router-0123456789abcdef0.tmp", None),
            (".efs-router-0123456789abcdef.tmpx", None),
            (".efs-router-0123456789abcdef", None),
            ("x.efs-router-0123456789abcdef.tmp", None),
            (".efs-router-0123456789abcdeg.moving", None),
            ("device-1.json", None),
            (".efs-router-clients", Some(Private::Reports)),
            (".efs-router-clients.json", None),
            (".efs-router-Clients", None),
        ] {
            assert_eq!(private_kind(name.as_bytes()), want, "{name}");
        }
        for kind in [Private::Temporary, Private::Moving] {
            let a = new_private_name(kind);
            assert_eq!(private_kind(a.as_bytes()), Some(kind), "{a}");
            assert_ne!(a, new_private_name(kind));
        }
    }
}
