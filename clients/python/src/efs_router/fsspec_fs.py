"""The logical tree as an fsspec file system: protocol ``efs-router`` (the ``fsspec`` extra; README, "fsspec").

``fsspec.filesystem("efs-router", mount=..., list_json=...)``, or a URL ``efs-router://data/analysis/x.json`` with
the same ``storage_options``, reads and writes logical paths through a ``Router``: a read is
``read_with_fallback``'s, a write ``write``'s (atomic, at home), an exclusive create ``create``'s, a removal
``delete``'s (every copy), a listing ``scandir``'s (the union of the shards). fsspec finds the class through the
entry point ``fsspec.specs`` of this distribution; nothing else imports this module, so the core keeps no
dependency. Python's own: the only module with no counterpart in ``router/src/``.
"""

from __future__ import annotations

import datetime
import errno
import io
import os
from typing import Any, Dict, List, Literal, Optional, Union, overload

from fsspec import AbstractFileSystem
from fsspec.callbacks import DEFAULT_CALLBACK

from .fs import Router
from .layout import Layout
from .list import MountTargetList
from .listing import Entry, _Lister

PROTOCOL = "efs-router"

Info = Dict[str, Any]


def _router(options: Dict[str, Any]) -> Router:
    """The router the storage options name: ``router`` (one of the application's), else a layout (``mount``: the
    file system's root on this host; ``mounts``: one mount per shard) and a list (``list_json``: the list's text;
    ``parameter_name``: read from SSM). A router made here reports the list it routes by unless ``report=False``."""
    given = options.pop("router", None)
    mount, mounts = options.pop("mount", None), options.pop("mounts", None)
    text, name = options.pop("list_json", None), options.pop("parameter_name", None)
    report = options.pop("report", True)
    extra = {k: options.pop(k) for k in ("label", "report_root") if k in options}
    refresh, client = options.pop("refresh_seconds", None), options.pop("ssm_client", None)
    if options:
        raise TypeError("efs-router: unknown storage options %s" % ", ".join(sorted(options)))
    if given is not None:
        if any(v is not None for v in (mount, mounts, text, name)):
            raise TypeError("efs-router: router= comes with its own layout and list; give nothing else")
        if not isinstance(given, Router):
            raise TypeError("efs-router: router= takes an efs_router.Router, not %s" % type(given).__name__)
        return given
    if (mount is None) == (mounts is None):
        raise TypeError("efs-router: give mount= (the file system's root on this host) or mounts= (one per shard)")
    layout = Layout.single_mount(mount) if mount is not None else Layout.per_target(mounts)
    if (text is None) == (name is None):
        raise TypeError("efs-router: give list_json= (the published list's text) or parameter_name= (its SSM name)")
    if name is not None:
        return Router.from_ssm(name, layout, refresh_seconds=refresh, client=client, report=bool(report), **extra)
    if refresh is not None or client is not None:
        raise TypeError("efs-router: refresh_seconds= and ssm_client= go with parameter_name=")
    if report:
        return Router.reporting(text, layout, **extra)
    return Router(MountTargetList.from_json(text), layout)


class _ReadFile(io.BytesIO):
    """A file opened to read: the bytes ``read_with_fallback`` read, whole, in memory."""

    def __init__(self, path: str, data: bytes):
        super().__init__(data)
        self.path = path
        self.size = len(data)

    def writable(self) -> bool:
        return False

    def write(self, data: Any) -> int:
        raise io.UnsupportedOperation("%s is open to read" % self.path)


class _WriteFile(io.BytesIO):
    """A file opened to write, buffered in memory and written whole when it is closed (``commit``): ``wb`` by
    ``Router.write`` (atomic), ``xb`` by ``Router.create`` (``FileExistsError`` when the path is there by then).
    Leaving a ``with`` block by an exception writes nothing; so does ``discard``. In a transaction (``autocommit``
    False) the bytes wait for the transaction's ``commit``."""

    def __init__(self, fs: "EfsRouterFileSystem", path: str, exclusive: bool, autocommit: bool):
        super().__init__()
        self.fs = fs
        self.path = path
        self.exclusive = exclusive
        self.autocommit = autocommit
        self._data: Optional[bytes] = None
        self._failed = False

    def readable(self) -> bool:
        return False

    def read(self, size: Optional[int] = -1) -> bytes:
        raise io.UnsupportedOperation("%s is open to write" % self.path)

    def __exit__(self, kind: Any, value: Any, traceback: Any) -> None:
        # An error in the block: what was written so far is not the file; nothing replaces the old one.
        self._failed = kind is not None
        self.close()

    def close(self) -> None:
        if self.closed:
            return
        self._data = None if self._failed else self.getvalue()
        super().close()
        if self.autocommit:
            self.commit()

    def commit(self) -> None:
        data, self._data = self._data, None
        if data is None:
            return
        if not self.exclusive:
            self.fs.router.write(self.path, data)
        elif not self.fs.router.create(self.path, data).created():
            raise FileExistsError(errno.EEXIST, "already there (in some shard)", self.path)

    def discard(self) -> None:
        self._data = None


def _name(logical: str, rooted: bool = True) -> str:
    """fsspec's name of a logical path, spelled as the caller spelled the path it asked about: with a leading '/'
    (``""`` for the root) for a rooted path, a URL or the root, as fsspec's memory file system names them; without
    it for a relative path (``data/parquet``), as s3fs and gcsfs name theirs, so that a caller who lists
    ``data/parquet`` (pyarrow's datasets, dask) gets names beneath ``data/parquet``."""
    if not logical:
        return ""
    return "/" + logical if rooted else logical


def _rooted(path: str) -> bool:
    """Whether names asked about through ``path`` carry a leading '/': a relative path's do not (``_name``)."""
    return path.startswith("/") or not path


def _info(e: Entry, rooted: bool = True) -> Info:
    """``ls``'s details of one entry (a file's ``stat()`` already kept: ``_Lister.with_stats``, ``entry``)."""
    if e.is_dir():
        return {"name": _name(e.path, rooted), "size": 0, "type": "directory", "shard": e.index,
                "shards": list(e.shards)}
    st = e.stat()
    return {"name": _name(e.path, rooted), "size": st.st_size, "type": "file", "mtime": st.st_mtime, "shard": e.index,
            "shards": list(e.shards)}


_ROOT: Info = {"name": "", "size": 0, "type": "directory"}


class EfsRouterFileSystem(AbstractFileSystem):  # type: ignore[misc]  # fsspec ships no type information
    """fsspec's interface to the logical tree of one router (module docstring; README, "fsspec").

    A name is a logical path with a leading ``/`` (``/data/x.json``, as fsspec's memory file system names files)
    when it was asked about with one, as a URL or from the root, and without it when asked about without it
    (``data/x.json``, as s3fs names files); ``""`` is the root, the union of the shards' roots. Storage
    options: ``router``; or ``mount`` / ``mounts`` with ``list_json`` / ``parameter_name`` (and ``refresh_seconds``,
    ``ssm_client``), ``report``, ``label``, ``report_root`` (see ``_router``)."""

    protocol = PROTOCOL
    root_marker = "/"

    def __init__(self, **storage_options: Any):
        if self._cached:  # fsspec's instance cache gave back one already made: it keeps its router
            return
        options = dict(storage_options)
        # fsspec's own options (its instance cache, its listings cache) are its to read; this class keeps no cache.
        own = {k: options.pop(k) for k in list(options) if k in _FSSPEC_OPTIONS}
        super().__init__(**own)
        self.router = _router(options)

    @classmethod
    def _strip_protocol(cls, path: Any) -> Any:
        if isinstance(path, list):
            return [cls._strip_protocol(p) for p in path]
        path = os.fspath(path)
        url = False
        for prefix in (PROTOCOL + "://", PROTOCOL + "::"):
            if path.startswith(prefix):
                path, url = path[len(prefix):], True
        return _name(path.strip("/"), url or path.startswith("/"))

    def _logical(self, path: str) -> str:
        """The logical path of an fsspec path or URL: ``efs-router://data/x.json`` and ``/data/x.json`` are both
        ``data/x.json``; ``""`` is the root."""
        return str(self._strip_protocol(path)).lstrip("/")

    def _lister(self) -> _Lister:
        return self.router._lister()

    @overload
    def ls(self, path: str, detail: Literal[True] = ..., **kwargs: Any) -> List[Info]: ...

    @overload
    def ls(self, path: str, detail: Literal[False], **kwargs: Any) -> List[str]: ...

    def ls(self, path: str, detail: bool = True, **kwargs: Any) -> Union[List[Info], List[str]]:
        """The logical directory ``path``: ``scandir``'s entries (every shard at once, no call per entry); with
        ``detail``, the size and mtime of each file's winning copy too (one ``lstat`` each). A file: itself."""
        lister = self._lister()
        rooted = _rooted(str(self._strip_protocol(path)))
        path = _in_tree(lister, self._logical(path))
        try:
            entries = lister.scandir(path)
        except FileNotFoundError:
            e = lister.entry(path) if path else None
            if e is None or not e.is_file():
                raise FileNotFoundError(errno.ENOENT, "no such file or directory in any shard", path) from None
            entries = [e]
        else:
            if detail:
                entries = lister.with_stats(path, entries)
        if not detail:
            return [_name(e.path, rooted) for e in entries]
        return [_info(e, rooted) for e in entries]

    def info(self, path: str, **kwargs: Any) -> Info:
        """``path`` as ``ls`` of its directory would give it, from one ``lstat`` per shard (no directory read)."""
        lister = self._lister()
        rooted = _rooted(str(self._strip_protocol(path)))
        path = _in_tree(lister, self._logical(path))
        if not path:
            return dict(_ROOT)
        e = lister.entry(path)
        if e is None:
            raise FileNotFoundError(errno.ENOENT, "no such file or directory in any shard", path)
        return _info(e, rooted)

    def exists(self, path: str, **kwargs: Any) -> bool:
        """``Router.exists``: one ``stat`` at home on a hit; a directory counts. An invalid path is not there."""
        path = self._logical(path)
        if not path:
            return True
        try:
            return self.router.exists(path)
        except ValueError:  # PathError, InsideAnotherShard
            return False

    def modified(self, path: str) -> datetime.datetime:
        info = self.info(path)
        if info["type"] != "file":
            raise IsADirectoryError(errno.EISDIR, "a directory has no one modification time", info["name"])
        return datetime.datetime.fromtimestamp(info["mtime"], tz=datetime.timezone.utc)

    def _open(self, path: str, mode: str = "rb", block_size: Any = None, autocommit: bool = True,
              cache_options: Any = None, **kwargs: Any) -> Union[_ReadFile, _WriteFile]:
        path = self._logical(path)
        if mode == "rb":
            return _ReadFile(path, self.router.read_with_fallback(path).data)
        if mode == "wb":
            return _WriteFile(self, path, exclusive=False, autocommit=autocommit)
        if mode == "xb":
            # Looked at now, as fsspec's tests expect; the create on close is what decides, atomically.
            if self.router.exists(path):
                raise FileExistsError(errno.EEXIST, "already there (in some shard)", path)
            return _WriteFile(self, path, exclusive=True, autocommit=autocommit)
        raise ValueError("efs-router opens a file to read (rb) or to write whole (wb, xb), not %r" % mode)

    def cat_file(self, path: str, start: Optional[int] = None, end: Optional[int] = None, **kwargs: Any) -> bytes:
        """``read_with_fallback``'s bytes, sliced as Python slices them (``start``/``end`` may be negative)."""
        data = self.router.read_with_fallback(self._logical(path)).data
        return data[start:end]

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite", **kwargs: Any) -> None:
        """``Router.write`` (``mode="overwrite"``), or ``Router.create`` (``mode="create"``: ``FileExistsError`` when
        the path is in any shard)."""
        path = self._logical(path)
        if mode == "overwrite":
            self.router.write(path, bytes(value))
        elif mode == "create":
            if not self.router.create(path, bytes(value)).created():
                raise FileExistsError(errno.EEXIST, "already there (in some shard)", path)
        else:
            raise ValueError("pipe_file mode %r: expected 'overwrite' or 'create'" % mode)

    def put_file(self, lpath: str, rpath: str, callback: Any = DEFAULT_CALLBACK, mode: str = "overwrite",
                 **kwargs: Any) -> None:
        # fsspec's makes the parent directory first; a write makes it in the file's home shard itself.
        if os.path.isdir(lpath):
            self.makedirs(rpath, exist_ok=True)
            return
        with open(lpath, "rb") as f:
            data = f.read()
        callback.set_size(len(data))
        self.pipe_file(rpath, data, mode=mode)
        callback.relative_update(len(data))

    def cp_file(self, path1: str, path2: str, **kwargs: Any) -> None:
        """A file: read as ``read_with_fallback`` reads, written by ``write``. A directory: ``makedirs``."""
        if self.info(path1)["type"] == "directory":
            self.makedirs(path2, exist_ok=True)
            return
        self.pipe_file(path2, self.cat_file(path1))

    def rm_file(self, path: str) -> None:
        """``Router.delete``: every copy, wherever a miss looks. A directory (``rm`` passes them too): ``rmdir``."""
        path = self._logical(path)
        deleted = self.router.delete(path)
        if any(left.what == "directory" for left in deleted.left):
            self.rmdir(path)
        elif not deleted.any():
            raise FileNotFoundError(errno.ENOENT, "no such file in any shard", path)

    def mkdir(self, path: str, create_parents: bool = True, **kwargs: Any) -> None:
        path = self._logical(path)
        if self.exists(path):
            raise FileExistsError(errno.EEXIST, "already there", path)
        parent = self._parent(path)
        if not create_parents and not self.isdir(parent):
            raise FileNotFoundError(errno.ENOENT, "no such directory in any shard", parent)
        self._make_at_home(path)

    def makedirs(self, path: str, exist_ok: bool = False) -> None:
        path = self._logical(path)
        try:
            kind = self.info(path)["type"]
        except FileNotFoundError:
            self._make_at_home(path)
            return
        if not exist_ok or kind != "directory":
            raise FileExistsError(errno.EEXIST, "already there", path)

    def _make_at_home(self, path: str) -> None:
        """A logical directory: made (with its parents) in the shard its path routes to, as a file of that path
        would be. Files written below it later go to their own home shards."""
        os.makedirs(self.router.resolve(path).real, exist_ok=True)

    def rmdir(self, path: str) -> None:
        """An empty logical directory, removed from every shard holding it: ``OSError(ENOTEMPTY)`` when it lists
        anything, or when a shard's copy holds names the listing does not show (a write's temporary file)."""
        lister = self._lister()
        path = _in_tree(lister, self._logical(path))
        if not path:
            raise PermissionError(errno.EPERM, "the root of the logical tree is not removed", path)
        e = lister.entry(path)
        if e is None:
            raise FileNotFoundError(errno.ENOENT, "no such directory in any shard", path)
        if not e.is_dir():
            raise NotADirectoryError(errno.ENOTDIR, "not a directory", path)
        if lister.scandir(e.path):
            raise OSError(errno.ENOTEMPTY, "directory not empty", path)
        lister.remove_dir(e.path, e.shards)


def _in_tree(lister: _Lister, path: str) -> str:
    """``path`` normalised as a logical path (``""`` the root). One the router refuses (``PathError``: a router's
    own name, ``..`` above the root; ``InsideAnotherShard``) names nothing in the tree: ``FileNotFoundError``, so
    that ``isdir``, ``isfile`` and ``exists`` say False, as for a name in no shard."""
    try:
        return lister.directory(path)
    except ValueError as e:
        raise FileNotFoundError(errno.ENOENT, str(e), path) from e


# The storage options AbstractFileSystem itself reads (its caches); the others are this class's.
_FSSPEC_OPTIONS = frozenset({"skip_instance_cache", "use_listings_cache", "listings_expiry_time", "max_paths",
                             "asynchronous", "loop"})
