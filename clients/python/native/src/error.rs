//! The router's errors as the package's own exception classes (`efs_router.errors`): each
//! keeps its kind and fields, and a file system's error stays an `OSError` with its errno, so
//! Python's subclasses (`FileNotFoundError`, …) apply.

use efs_router::path::PathError;
use efs_router::report::ReportError;
use efs_router::{Error, ListError, NotARegularFile, OtherOwners, ReportFault, RouteError};
use pyo3::exceptions::PyOSError;
use pyo3::prelude::*;
use std::io;

/// An instance of the class `name` of `efs_router.errors`, made with `args`.
fn raise<'py, A>(py: Python<'py>, name: &str, args: A) -> PyErr
where
    A: pyo3::call::PyCallArgs<'py>,
{
    let made = py
        .import("efs_router.errors")
        .and_then(|m| m.getattr(name))
        .and_then(|class| class.call1(args));
    match made {
        Ok(e) => PyErr::from_value(e),
        Err(e) => e,
    }
}

pub fn list_error(py: Python<'_>, e: &ListError) -> PyErr {
    raise(py, "ListError", (e.kind(), e.to_string()))
}

pub fn path_error(py: Python<'_>, e: &PathError, path: &str) -> PyErr {
    // The class adds "path '<path>' " itself; Rust's message already names it.
    let message = e.to_string();
    let rest = message.split_once(' ').map_or("", |(_, r)| r);
    let rest = rest.split_once(' ').map_or(rest, |(_, r)| r);
    raise(py, "PathError", (e.kind(), path, rest))
}

pub fn route_error(py: Python<'_>, e: &RouteError, path: &str) -> PyErr {
    match e {
        RouteError::Path(p) => path_error(py, p, path),
        other => raise(py, "RouteError", (other.kind(), other.to_string())),
    }
}

pub fn report_fault(py: Python<'_>, e: &ReportFault) -> PyErr {
    let last_ok = match e {
        ReportFault::Lapsed { last_ok, .. } => *last_ok,
        ReportFault::NoRoot => None,
    };
    raise(py, "ReportFault", (e.kind(), e.to_string(), last_ok))
}

pub fn report_error(py: Python<'_>, e: &ReportError) -> PyErr {
    raise(py, "ReportError", (e.kind(), e.to_string()))
}

/// An `io::Error`: a move's refusals as their classes, anything else an `OSError`.
pub fn io_error(py: Python<'_>, e: &io::Error, path: Option<&str>) -> PyErr {
    if let Some(n) = NotARegularFile::of(e) {
        return raise(
            py,
            "NotARegularFile",
            (n.path.display().to_string(), n.what),
        );
    }
    if let Some(o) = OtherOwners::of(e) {
        let (src, dst) = (o.src.display().to_string(), o.dst.display().to_string());
        return raise(py, "OtherOwners", (src, dst, o.src_uid, o.dst_uid));
    }
    let message = e.to_string();
    match path {
        Some(p) => PyOSError::new_err((errno(e), message, p.to_owned())),
        None => PyOSError::new_err((errno(e), message)),
    }
}

/// The errno of `e`: its own, or for an error the router made (a refusal, not a system
/// call's) the one its kind stands for, so Python sees `EINVAL` where Rust says
/// `InvalidInput`.
fn errno(e: &io::Error) -> i32 {
    use io::ErrorKind as K;
    e.raw_os_error().unwrap_or(match e.kind() {
        K::NotFound => 2,
        K::PermissionDenied => 13,
        K::AlreadyExists => 17,
        K::InvalidInput | K::InvalidData => 22,
        K::DirectoryNotEmpty => 39,
        _ => 5,
    })
}

/// Any error of a router's operation on `path`.
pub fn error(py: Python<'_>, e: &Error, path: &str) -> PyErr {
    match e {
        Error::Route(r) => route_error(py, r, path),
        Error::Layout(l) => raise(py, "LayoutError", (l.to_string(),)),
        Error::List(l) => list_error(py, l),
        Error::Report(r) => report_fault(py, r),
        Error::InsideAnotherShard { path, root } => {
            raise(py, "InsideAnotherShard", (path.as_str(), root.as_str()))
        }
        Error::NotFound { .. } => raise(py, "NotFound", (e.to_string(),)),
        Error::Reappearing { path, rounds } => raise(py, "Reappearing", (path.as_str(), *rounds)),
        Error::NotRegular { path, what } => {
            raise(py, "NotARegularFile", (path.display().to_string(), *what))
        }
        Error::Io { op, path, source } => {
            if NotARegularFile::of(source).is_some() || OtherOwners::of(source).is_some() {
                return io_error(py, source, None);
            }
            let message = format!("{op} {}: {source}", path.display());
            PyOSError::new_err((errno(source), message, path.display().to_string()))
        }
    }
}
