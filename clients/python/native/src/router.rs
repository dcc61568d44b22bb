//! `efs_router._native.Router`: one [`efs_router::Router`], never changed (a refresh makes a
//! new one, [`Router::with_list`]). Every call leaves the GIL while the router works, so the
//! application's threads read and write at once; answers are plain tuples, which the Python
//! package turns into its named types.

use crate::error;
use efs_router::reporter::Clock;
use efs_router::{Creation, Found, Layout, Place, Reporting};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `(index, logical, real, raw)`: a path routed.
type Resolved = (usize, String, String, String);

fn text(p: &std::path::Path) -> String {
    p.to_string_lossy().into_owned()
}

fn resolved(r: &efs_router::Resolved) -> Resolved {
    (
        r.index,
        r.logical.as_str().to_owned(),
        text(&r.real),
        r.raw.clone(),
    )
}

/// The layout the package's `Layout` names: `base` (one mount) or `mounts` (one per shard).
fn layout(base: Option<PathBuf>, mounts: Option<Vec<PathBuf>>) -> PyResult<Layout> {
    match (base, mounts) {
        (Some(base), None) => Ok(Layout::single_mount(base)),
        (None, Some(mounts)) => Ok(Layout::per_target(mounts)),
        _ => Err(pyo3::exceptions::PyValueError::new_err(
            "a layout has a base (one mount) or mounts (one per shard), not both",
        )),
    }
}

/// A Python callable answering Unix seconds, as the reporter's clock.
fn clock(f: Py<PyAny>) -> Clock {
    Arc::new(move || {
        Python::attach(|py| {
            f.call0(py)
                .and_then(|v| v.extract::<f64>(py))
                .map_or(0, |secs| secs.max(0.0) as u64)
        })
    })
}

#[pyclass(frozen, module = "efs_router._native")]
pub struct Router(efs_router::Router);

#[pymethods]
impl Router {
    /// A router on a list already checked by `parse_list` (its canonical JSON), reporting nothing.
    #[new]
    #[pyo3(signature = (list_json, base=None, mounts=None))]
    fn new(
        py: Python<'_>,
        list_json: &str,
        base: Option<PathBuf>,
        mounts: Option<Vec<PathBuf>>,
    ) -> PyResult<Self> {
        let list = efs_router::MountTargetList::from_json(list_json)
            .map_err(|e| error::list_error(py, &e))?;
        let router = efs_router::Router::new(list, layout(base, mounts)?)
            .map_err(|e| error::error(py, &e, ""))?;
        Ok(Router(router))
    }

    /// A router on the list published as `text` that reports it (`efs_router::reporter`).
    #[staticmethod]
    #[allow(clippy::too_many_arguments)]
    #[pyo3(signature = (text, base=None, mounts=None, *, parameter_version=None, label=None,
        fs_root=None, metadata_uri=None, clock=None, every=None, router=None))]
    fn reporting(
        py: Python<'_>,
        text: &str,
        base: Option<PathBuf>,
        mounts: Option<Vec<PathBuf>>,
        parameter_version: Option<i64>,
        label: Option<String>,
        fs_root: Option<PathBuf>,
        metadata_uri: Option<String>,
        clock: Option<Py<PyAny>>,
        every: Option<f64>,
        router: Option<String>,
    ) -> PyResult<Self> {
        let options = Reporting {
            parameter_version,
            label,
            fs_root,
            metadata_uri,
            clock: clock.map(self::clock),
            every: every.map(|s| Duration::from_secs_f64(s.max(0.001))),
            router,
        };
        let layout = layout(base, mounts)?;
        let made = py.detach(|| efs_router::Router::reporting(text, layout, options));
        made.map(Router).map_err(|e| error::error(py, &e, ""))
    }

    /// A router on a list read again, keeping this one's layout and its report's client.
    #[pyo3(signature = (text, parameter_version=None))]
    fn with_list(
        &self,
        py: Python<'_>,
        text: &str,
        parameter_version: Option<i64>,
    ) -> PyResult<Self> {
        let made = py.detach(|| self.0.with_list(text, parameter_version));
        made.map(Router).map_err(|e| error::error(py, &e, ""))
    }

    fn note_refresh(&self, py: Python<'_>, ok: bool) {
        py.detach(|| self.0.note_refresh(ok));
    }

    #[getter]
    fn client_id(&self) -> Option<String> {
        self.0.client_id().map(str::to_owned)
    }

    #[getter]
    fn report_file(&self) -> Option<String> {
        self.0.report_file().as_deref().map(text)
    }

    fn close_report(&self, py: Python<'_>) {
        py.detach(|| self.0.close_report());
    }

    fn write_report(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.0.write_report())
            .map_err(|e| error::io_error(py, &e, None))
    }

    fn lease(&self, py: Python<'_>) -> PyResult<()> {
        py.detach(|| self.0.lease())
            .map_err(|e| error::error(py, &e, ""))
    }

    fn resolve(&self, py: Python<'_>, path: &str) -> PyResult<Resolved> {
        let r = self
            .0
            .resolve(path)
            .map_err(|e| error::error(py, &e, path))?;
        Ok(resolved(&r))
    }

    fn miss_shards(&self, py: Python<'_>, path: &str) -> PyResult<Vec<usize>> {
        let r = self
            .0
            .resolve(path)
            .map_err(|e| error::error(py, &e, path))?;
        Ok(self.0.miss_shards(&r))
    }

    /// `(resolved, kind, index, real)`: kind `home`, `elsewhere` (with the shard and its real
    /// path) or `missing`.
    fn locate(
        &self,
        py: Python<'_>,
        path: &str,
    ) -> PyResult<(Resolved, &'static str, Option<usize>, Option<String>)> {
        let at = py.detach(|| self.0.locate(path));
        let at = at.map_err(|e| error::error(py, &e, path))?;
        let (kind, index, real) = match &at.found {
            Found::Home => ("home", None, None),
            Found::Elsewhere { index, real } => ("elsewhere", Some(*index), Some(text(real))),
            Found::Missing => ("missing", None, None),
        };
        Ok((resolved(&at.home), kind, index, real))
    }

    fn exists(&self, py: Python<'_>, path: &str) -> PyResult<bool> {
        py.detach(|| self.0.exists(path))
            .map_err(|e| error::error(py, &e, path))
    }

    fn write(&self, py: Python<'_>, path: &str, data: Vec<u8>) -> PyResult<String> {
        let real = py.detach(|| self.0.write(path, &data));
        real.map(|r| text(&r))
            .map_err(|e| error::error(py, &e, path))
    }

    /// `(data, kind, index, reason)`, kind as `Place::as_str`.
    #[allow(clippy::type_complexity)]
    fn read_with_fallback<'py>(
        &self,
        py: Python<'py>,
        path: &str,
    ) -> PyResult<(
        Bound<'py, PyBytes>,
        &'static str,
        Option<usize>,
        Option<String>,
    )> {
        let read = py.detach(|| self.0.read_with_fallback(path));
        let read = read.map_err(|e| error::error(py, &e, path))?;
        let (index, reason) = match &read.place {
            Place::Home => (None, None),
            Place::MovedHome { from } | Place::MovedByAnother { from } => (Some(*from), None),
            Place::LeftElsewhere { index, reason } => (Some(*index), Some(reason.clone())),
            Place::AtPlacement { index } => (Some(*index), None),
        };
        Ok((
            PyBytes::new(py, &read.data),
            read.place.as_str(),
            index,
            reason,
        ))
    }

    /// `(removed, unlinked, left, rounds)`, `left` as `(index, real, what)`.
    #[allow(clippy::type_complexity)]
    fn delete(
        &self,
        py: Python<'_>,
        path: &str,
    ) -> PyResult<(Vec<usize>, usize, Vec<(usize, String, &'static str)>, usize)> {
        let done = py.detach(|| self.0.delete(path));
        let d = done.map_err(|e| error::error(py, &e, path))?;
        let left = d
            .left
            .iter()
            .map(|l| (l.index, text(&l.real), l.what))
            .collect();
        Ok((d.removed, d.unlinked, left, d.rounds))
    }

    /// `(kind, index, real)`, kind as `Creation::as_str`.
    fn create(
        &self,
        py: Python<'_>,
        path: &str,
        data: Vec<u8>,
    ) -> PyResult<(&'static str, usize, String)> {
        let made = py.detach(|| self.0.create(path, &data));
        let c: Creation = made.map_err(|e| error::error(py, &e, path))?;
        Ok((c.as_str(), c.index(), text(c.real())))
    }

    /// The logical directory `dir`'s entries.
    fn list_dir(&self, py: Python<'_>, dir: &str) -> PyResult<Vec<Entry>> {
        let listed = py.detach(|| self.0.list_dir(dir));
        let entries = listed.map_err(|e| error::error(py, &e, dir))?;
        Ok(entries.into_iter().map(entry).collect())
    }

    /// `dir` as listed in `shards` only (a walk's subdirectory); `None` when none has it.
    fn list_dir_in(
        &self,
        py: Python<'_>,
        dir: &str,
        shards: Vec<usize>,
    ) -> PyResult<Option<Vec<Entry>>> {
        let listed = py.detach(|| self.0.list_dir_in(dir, &shards));
        let entries = listed.map_err(|e| error::error(py, &e, dir))?;
        Ok(entries.map(|e| e.into_iter().map(entry).collect()))
    }

    /// The one name `path` as a listing of its directory would show it, or `None`.
    fn entry(&self, py: Python<'_>, path: &str) -> PyResult<Option<Entry>> {
        let found = py.detach(|| self.0.entry(path));
        Ok(found.map_err(|e| error::error(py, &e, path))?.map(entry))
    }

    /// `path` checked as a logical directory: `""` for the roots.
    fn directory(&self, py: Python<'_>, path: &str) -> PyResult<String> {
        self.0
            .logical_dir(path)
            .map_err(|e| error::error(py, &e, path))
    }

    /// The `lstat` of `path`'s copy in shard `j`, as the fields `os.stat_result` takes.
    fn copy_stat(&self, py: Python<'_>, j: usize, path: &str) -> PyResult<Option<StatFields>> {
        let got = py.detach(|| self.0.copy_stat(j, path));
        Ok(got
            .map_err(|e| error::error(py, &e, path))?
            .map(|st| stat_fields(&st)))
    }

    fn remove_dir(&self, py: Python<'_>, path: &str, shards: Vec<usize>) -> PyResult<()> {
        py.detach(|| self.0.remove_dir(path, &shards))
            .map_err(|e| error::error(py, &e, path))
    }
}

/// `(name, kind, index, real, shards)`: one name of a logical directory.
type Entry = (String, &'static str, usize, String, Vec<usize>);

fn entry(e: efs_router::Entry) -> Entry {
    (e.name, e.kind.as_str(), e.index, text(&e.real), e.shards)
}

/// `(mode, ino, dev, nlink, uid, gid, size, atime_ns, mtime_ns, ctime_ns)`.
type StatFields = (u32, u64, u64, u64, u32, u32, i64, i128, i128, i128);

fn stat_fields(st: &rustix::fs::Stat) -> StatFields {
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (
        st.st_mode,
        st.st_ino,
        st.st_dev,
        // u32 on aarch64, u64 here: one width for Python.
        #[allow(clippy::useless_conversion)]
        u64::from(st.st_nlink),
        st.st_uid,
        st.st_gid,
        st.st_size,
        ns(st.st_atime, st.st_atime_nsec as i64),
        ns(st.st_mtime, st.st_mtime_nsec as i64),
        ns(st.st_ctime, st.st_ctime_nsec as i64),
    )
}
