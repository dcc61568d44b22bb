//! Logical paths: the name an application gives a file, relative to whichever shard root it
//! lands in. A logical path is checked and normalised before it is routed or joined to a
//! mount (docs/design.md fact 7: `os.path.join(mount, "/data/x")` drops the mount, and `..` walks
//! out of it).
//!
//! The rules, shared with the Python client and `tests/vectors/routing.json`:
//!
//! - one leading `/` is dropped: `/data/x` is `data/x`, never an absolute path;
//! - `.` components are dropped;
//! - `..` removes the component before it; a `..` with nothing before it would leave the
//!   root and is refused ([`PathError::EscapesRoot`]);
//! - an empty component (`a//b`, `a/`, `//a`) is refused ([`PathError::EmptyComponent`]);
//! - a NUL byte anywhere is refused ([`PathError::Nul`]);
//! - a path that normalises to nothing (``, `/`, `.`, `a/..`) names the root, not a file, and
//!   is refused ([`PathError::Empty`]);
//! - a path with a component, once normalised, that is one of the router's own names
//!   (`.efs-router-<16 hex>.tmp` or `.moving`, or the reports' directory `.efs-router-clients`,
//!   [`crate::names`]) is refused ([`PathError::Reserved`]): those are writes and moves in
//!   progress and the clients' reports, never files.
//!
//! The result is the components joined by single `/`, with no leading or trailing `/`.
//! Normalisation is lexical, like Python's `posixpath.normpath`: it does not follow symlinks.

use crate::names::private_kind;
use std::fmt;

/// Why a logical path was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("path {path:?} names no file (it is empty or normalises to the shard root)")]
    Empty { path: String },
    #[error("path {path:?} contains a NUL byte")]
    Nul { path: String },
    #[error("path {path:?} has an empty component ('//', or a trailing '/')")]
    EmptyComponent { path: String },
    #[error("path {path:?} leaves its root through '..'")]
    EscapesRoot { path: String },
    #[error("path {path:?} has the component {name:?}, a name the router keeps for itself (.efs-router-<16 hex digits>.tmp or .moving, or .efs-router-clients)")]
    Reserved { path: String, name: String },
}

impl PathError {
    /// The short name of the rule that refused the path, as the test vectors spell it:
    /// `empty`, `nul`, `empty-component`, `escapes-root` or `reserved-name`.
    pub fn kind(&self) -> &'static str {
        match self {
            PathError::Empty { .. } => "empty",
            PathError::Nul { .. } => "nul",
            PathError::EmptyComponent { .. } => "empty-component",
            PathError::EscapesRoot { .. } => "escapes-root",
            PathError::Reserved { .. } => "reserved-name",
        }
    }
}

/// A checked, normalised logical path: relative, `/`-separated, no empty, `.` or `..`
/// components, no NUL, not empty.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LogicalPath(String);

impl LogicalPath {
    /// Checks and normalises `path` by the rules of this module.
    pub fn parse(path: &str) -> Result<LogicalPath, PathError> {
        if path.contains('\0') {
            return Err(PathError::Nul {
                path: path.to_owned(),
            });
        }
        let rest = path.strip_prefix('/').unwrap_or(path);
        if rest.is_empty() {
            return Err(PathError::Empty {
                path: path.to_owned(),
            });
        }
        // A fast path for the common case (`data/analysis/device-1-2.json`): no `.` or `..`
        // components, so the normalised form is the input without its leading slash.
        let mut simple = true;
        for part in rest.split('/') {
            match part {
                "" => {
                    return Err(PathError::EmptyComponent {
                        path: path.to_owned(),
                    })
                }
                "." | ".." => simple = false,
                _ => {}
            }
        }
        if simple {
            return LogicalPath::unreserved(path, rest.to_owned());
        }
        let mut parts: Vec<&str> = Vec::new();
        for part in rest.split('/') {
            match part {
                "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(PathError::EscapesRoot {
                            path: path.to_owned(),
                        });
                    }
                }
                _ => parts.push(part),
            }
        }
        if parts.is_empty() {
            return Err(PathError::Empty {
                path: path.to_owned(),
            });
        }
        LogicalPath::unreserved(path, parts.join("/"))
    }

    /// `normalised` as a logical path, unless one of its components is a router-private name.
    fn unreserved(path: &str, normalised: String) -> Result<LogicalPath, PathError> {
        if let Some(name) = normalised
            .split('/')
            .find(|part| private_kind(part.as_bytes()).is_some())
        {
            return Err(PathError::Reserved {
                path: path.to_owned(),
                name: name.to_owned(),
            });
        }
        Ok(LogicalPath(normalised))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The components, outermost first.
    pub fn components(&self) -> impl Iterator<Item = &str> {
        self.0.split('/')
    }

    /// Whether this path is `prefix` or lies under it (`prefix` is itself a normalised
    /// relative path, e.g. `shards/use1-az4`).
    pub fn is_at_or_under(&self, prefix: &str) -> bool {
        match self.0.strip_prefix(prefix) {
            Some(rest) => rest.is_empty() || rest.starts_with('/'),
            None => false,
        }
    }
}

impl fmt::Display for LogicalPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl AsRef<str> for LogicalPath {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(p: &str) -> String {
        LogicalPath::parse(p)
            .unwrap_or_else(|e| panic!("{p:?}: {e}"))
            .as_str()
            .to_owned()
    }

    fn err(p: &str) -> &'static str {
        match LogicalPath::parse(p) {
            Ok(l) => panic!("{p:?} accepted as {l:?}"),
            Err(e) => e.kind(),
        }
    }

    #[test]
    fn normalises() {
        assert_eq!(
            ok("data/analysis/device-1-2.json"),
            "data/analysis/device-1-2.json"
        );
        assert_eq!(ok("/data/analysis/x.json"), "data/analysis/x.json");
        assert_eq!(ok("./data/./x"), "data/x");
        assert_eq!(ok("data/tmp/../x"), "data/x");
        assert_eq!(ok("a/b/../../c"), "c");
        assert_eq!(ok("a/./../b"), "b");
        assert_eq!(ok("données/été.json"), "données/été.json");
        assert_eq!(ok("a\\b"), "a\\b");
    }

    #[test]
    fn refuses() {
        assert_eq!(err(""), "empty");
        assert_eq!(err("/"), "empty");
        assert_eq!(err("."), "empty");
        assert_eq!(err("a/.."), "empty");
        assert_eq!(err("a//b"), "empty-component");
        assert_eq!(err("a/"), "empty-component");
        assert_eq!(err("//a"), "empty-component");
        assert_eq!(err(".."), "escapes-root");
        assert_eq!(err("/../etc/passwd"), "escapes-root");
        assert_eq!(err("a/../../b"), "escapes-root");
        assert_eq!(err("a\0b"), "nul");
        assert_eq!(err(".efs-router-0123456789abcdef.tmp"), "reserved-name");
        assert_eq!(
            err("data/.efs-router-0123456789abcdef.moving"),
            "reserved-name"
        );
        assert_eq!(err("a/.efs-router-0123456789abcdef.tmp/b"), "reserved-name");
        assert_eq!(
            err("/./data/x/../.efs-router-ffffffffffffffff.tmp"),
            "reserved-name"
        );
        // Near misses are ordinary names; a reserved component normalised away is gone.
        assert_eq!(
            ok("data/.efs-router-0123456789ABCDEF.tmp"),
            "data/.efs-router-0123456789ABCDEF.tmp"
        );
        assert_eq!(ok("data/.efs-router-0123456789abcdef.tmp/.."), "data");
        // The reports' directory, anywhere in a path.
        assert_eq!(
            err(".efs-router-clients/0123456789abcdef.json"),
            "reserved-name"
        );
        assert_eq!(err("data/.efs-router-clients"), "reserved-name");
        assert_eq!(
            ok("data/.efs-router-clients.json"),
            "data/.efs-router-clients.json"
        );
    }

    #[test]
    fn prefix_test_is_per_component() {
        let p = LogicalPath::parse("shards/use1-az4/x").unwrap();
        assert!(p.is_at_or_under("shards"));
        assert!(p.is_at_or_under("shards/use1-az4"));
        assert!(!p.is_at_or_under("shards/use1-az"));
        assert!(!p.is_at_or_under("shard"));
    }
}
