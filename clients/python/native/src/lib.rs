//! The Python package `efs_router`'s native module, `efs_router._native`: the Rust router
//! (`router/`) behind the package's Python API, so that routing, lists, moves, deletes,
//! creates, listings, misses and reports are one implementation in two languages. The
//! package keeps what is Python's own: its named types, boto3 for SSM, the list's refresh,
//! and fsspec.
//!
//! - `router.rs`: [`router::Router`], the router's operations;
//! - `error.rs`: the router's errors as the package's exception classes.
//!
//! The functions below are the router's free functions, each one line over the library.

mod error;
mod router;

use efs_router::list::Strategy;
use efs_router::path::LogicalPath;
use efs_router::report::{self, Report};
use efs_router::{MountTargetList, Relocation, Shard};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use std::path::PathBuf;

/// The list `text` parsed and checked, as the router writes it (its canonical JSON).
#[pyfunction]
fn parse_list(py: Python<'_>, text: &str) -> PyResult<String> {
    let list = MountTargetList::from_json(text).map_err(|e| error::list_error(py, &e))?;
    Ok(list.to_json())
}

fn strategy(name: &str) -> PyResult<Strategy> {
    match name {
        "rendezvous" => Ok(Strategy::Rendezvous),
        "modulo-sha256" => Ok(Strategy::ModuloSha256),
        other => Err(PyValueError::new_err(format!(
            "unknown strategy {other:?}: expected one of rendezvous, modulo-sha256"
        ))),
    }
}

/// The index, in `shards` (`(root, draining)` in list order), of the shard `path` belongs to.
#[pyfunction]
fn shard_index(
    py: Python<'_>,
    path: &str,
    shards: Vec<(String, bool)>,
    strategy: &str,
) -> PyResult<usize> {
    let strategy = self::strategy(strategy)?;
    let shards: Vec<Shard> = shards
        .into_iter()
        .map(|(root, draining)| Shard {
            draining,
            ..Shard::new("", "", root)
        })
        .collect();
    efs_router::shard_index(path, &shards, strategy).map_err(|e| error::route_error(py, &e, path))
}

/// `path` checked and normalised.
#[pyfunction]
fn normalise(py: Python<'_>, path: &str) -> PyResult<String> {
    let logical = LogicalPath::parse(path).map_err(|e| error::path_error(py, &e, path))?;
    Ok(logical.as_str().to_owned())
}

#[pyfunction]
fn rendezvous_score(py: Python<'_>, root: &str, normalised: &str) -> PyResult<u64> {
    let logical =
        LogicalPath::parse(normalised).map_err(|e| error::path_error(py, &e, normalised))?;
    Ok(efs_router::rendezvous_score(root, &logical))
}

#[pyfunction]
fn modulo_sha256(path: &str, n: usize) -> PyResult<usize> {
    if n == 0 {
        return Err(PyValueError::new_err("n must be at least 1"));
    }
    Ok(efs_router::modulo_sha256(path, n))
}

/// Moves the file at `src` to `dst` (`efs_router::relocate`): its outcome's name.
#[pyfunction]
fn relocate(py: Python<'_>, src: PathBuf, dst: PathBuf) -> PyResult<&'static str> {
    let done = py.detach(|| efs_router::relocate(&src, &dst));
    let shown = src.to_string_lossy().into_owned();
    done.map(Relocation::as_str)
        .map_err(|e| error::io_error(py, &e, Some(&shown)))
}

/// Gives back what a cut-short move left in its private directory `pd`
/// (`efs_router::relocation::recover`): `(settled, deleted)`. `found(name)`, when given,
/// answers whether the name's path is a file anywhere a router looks.
#[pyfunction]
#[pyo3(signature = (pd, found=None))]
fn recover(py: Python<'_>, pd: PathBuf, found: Option<Py<PyAny>>) -> PyResult<(u64, u64)> {
    let done = py.detach(|| {
        efs_router::relocation::recover(&pd, |name| match &found {
            None => Ok(true),
            Some(f) => Python::attach(|py| {
                let name = name.to_string_lossy().into_owned();
                f.call1(py, (name,))
                    .and_then(|v| v.is_truthy(py))
                    .map_err(|e| std::io::Error::other(e.to_string()))
            }),
        })
    });
    let shown = pd.to_string_lossy().into_owned();
    let r = done.map_err(|e| error::io_error(py, &e, Some(&shown)))?;
    Ok((r.settled, r.deleted))
}

/// Revalidates this client's cache of the directory `dir`: whether it exists.
#[pyfunction]
fn revalidate_dir(py: Python<'_>, dir: PathBuf) -> PyResult<bool> {
    let done = py.detach(|| efs_router::cache::revalidate_dir(&dir));
    done.map_err(|e| error::io_error(py, &e, None))
}

/// Whether `name` is one of the router's own names (never counted, moved or routed).
#[pyfunction]
fn is_private_name(name: &[u8]) -> bool {
    efs_router::names::private_kind(name).is_some()
}

/// The report file `file_name`'s bytes parsed: the report as JSON, the router's form.
#[pyfunction]
fn parse_report(py: Python<'_>, file_name: &str, data: &[u8]) -> PyResult<String> {
    let parsed = Report::parse(file_name, data).map_err(|e| error::report_error(py, &e))?;
    Ok(parsed.to_json())
}

/// A report (its JSON, fields in any order) as the router writes it.
#[pyfunction]
fn report_json(py: Python<'_>, data: &[u8]) -> PyResult<String> {
    let parsed: Report = serde_json::from_slice(data)
        .map_err(|e| error::report_error(py, &report::ReportError::Malformed(e.to_string())))?;
    Ok(parsed.to_json())
}

#[pyfunction]
fn list_sha256(text: &str) -> String {
    report::list_sha256(text)
}

/// The task the metadata endpoint `uri` names, or `None`.
#[pyfunction]
fn task_arn(py: Python<'_>, uri: &str) -> Option<String> {
    py.detach(|| efs_router::metadata::task_arn(uri).ok())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<router::Router>()?;
    m.add_function(wrap_pyfunction!(parse_list, m)?)?;
    m.add_function(wrap_pyfunction!(shard_index, m)?)?;
    m.add_function(wrap_pyfunction!(normalise, m)?)?;
    m.add_function(wrap_pyfunction!(rendezvous_score, m)?)?;
    m.add_function(wrap_pyfunction!(modulo_sha256, m)?)?;
    m.add_function(wrap_pyfunction!(relocate, m)?)?;
    m.add_function(wrap_pyfunction!(recover, m)?)?;
    m.add_function(wrap_pyfunction!(revalidate_dir, m)?)?;
    m.add_function(wrap_pyfunction!(is_private_name, m)?)?;
    m.add_function(wrap_pyfunction!(parse_report, m)?)?;
    m.add_function(wrap_pyfunction!(report_json, m)?)?;
    m.add_function(wrap_pyfunction!(list_sha256, m)?)?;
    m.add_function(wrap_pyfunction!(task_arn, m)?)?;
    m.add("ROUTER", efs_router::reporter::ROUTER)?;
    Ok(())
}
