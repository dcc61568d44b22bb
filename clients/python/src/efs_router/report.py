"""A client's report (router/src/report.rs, router/src/reporter.rs): which list this router routes by, written to
the shared file system so that the function waits for it before it moves files or removes a target.

- Where: ``<file system root>/.efs-router-clients/<client id>.json``, the id 16 random lowercase hex digits per
  router; written atomically (a ``.efs-router-<16 hex>.tmp`` name in that directory, written, fsync'ed, renamed
  over), the directory opened beneath the root without following a link and made when missing. The root is the
  single mount's ``base``, or in a per-target layout the mount of the shard rooted at ``/``; without one,
  ``report_root`` says where the root is mounted.
- What: compact JSON, fields in the order of ``FIELDS``, exactly as the Rust library writes it
  (``tests/vectors/reports.json``), at most ``MAX_BYTES``.
- When: when the router loads a list, and every ``EVERY_SECS`` from a daemon thread while the router lives; removed
  when the router is collected, closed (``Router.close``) or the interpreter exits.
- The lease: before a write or a move, when the last successful report is ``LEASE_SECS`` old or more, one is written
  first; if that fails the write raises ``ReportFault("report-lapsed")`` and a read's move home is skipped, since
  after ``LIFETIME_SECS`` the function counts this client as gone.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
import weakref
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    FrozenSet,
    List,
    NamedTuple,
    Optional,
    Sequence,
    Set,
    Tuple,
    Union,
)

from .errors import RouterError
from .layout import Layout
from .list import MountTargetList, Target
from .names import REPORTS_DIR, _client_id, _private_name
from .ssm import _ssm_client

if TYPE_CHECKING:
    from .fs import Router

DIR = REPORTS_DIR
FORMAT = 1
MAX_BYTES = 4096
EVERY_SECS = 60
LIFETIME_SECS = 180
LEASE_SECS = LIFETIME_SECS - 30
"""A report this old or older is rewritten before the router writes or moves anything: the 30 s before the
function's ``LIFETIME_SECS`` cover the operation in flight and a clock difference."""
READS = (1, 2, 3)
"""The list versions this router reads."""
METADATA_URI_VAR = "ECS_CONTAINER_METADATA_URI_V4"
_MAX_LABEL = 256
_MAX_ARN = 512
_U32_MAX = 2 ** 32 - 1
_U64_MAX = 2 ** 64 - 1
_I64 = (-2 ** 63, 2 ** 63 - 1)


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("efs-router")
    except Exception:  # run from a checkout, not installed
        return "unknown"


ROUTER = "efs-router-python/" + _version()

FIELDS = ("format", "client", "router", "reads", "list", "loaded_at", "refreshed_at", "refresh_failed_at",
          "written_at", "every", "task", "label")
_LIST_FIELDS = ("sha256", "version", "parameter_version")
_OPTIONAL = frozenset(("refreshed_at", "refresh_failed_at", "task", "label"))


class ReportError(RouterError, ValueError):
    """A report file that is not a report. ``kind``: too-large, malformed or wrong-name (report.rs ``ReportError``)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class ReportFault(RouterError):
    """This router could not report. ``kind``: ``no-report-dir`` (a per-target layout without a shard rooted at ``/``
    and no ``report_root``) or ``report-lapsed`` (the lease: the report is ``LEASE_SECS`` old and writing it failed,
    so nothing is written or moved; ``last_ok`` is when it was last written, None if never)."""

    def __init__(self, kind: str, message: str, last_ok: Optional[int] = None):
        super().__init__(message)
        self.kind = kind
        self.last_ok = last_ok


def list_sha256(text: Union[str, bytes]) -> str:
    """SHA-256, lowercase hex, of the exact bytes of a list as published (the parameter's value, UTF-8)."""
    return hashlib.sha256(text.encode("utf-8") if isinstance(text, str) else text).hexdigest()


def is_client_id(text: str) -> bool:
    return len(text) == 16 and all(c in "0123456789abcdef" for c in text)


def client_of_file(name: str) -> Optional[str]:
    """The client id of a report file's name (``<id>.json``), if it is one."""
    if name.endswith(".json") and is_client_id(name[:-5]):
        return name[:-5]
    return None


def to_json(report: Dict[str, Any]) -> str:
    """The report as written: compact JSON, fields in the order of ``FIELDS`` (absent ones null), as Rust's
    ``Report::to_json``."""
    out = {k: report.get(k) for k in FIELDS}
    out["list"] = {k: report["list"].get(k) for k in _LIST_FIELDS}
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


# Parsing: the same answers as Rust's Report::parse (serde), for the vectors; the function is the reader.
class _Pairs(dict):  # type: ignore[type-arg]
    """A JSON object that remembers its repeated keys (serde refuses a repeated field, and ignores a repeated
    unknown key)."""

    repeated: FrozenSet[str] = frozenset()


def _pairs(pairs: List[Tuple[str, Any]]) -> _Pairs:
    d = _Pairs(pairs)
    if len(d) != len(pairs):
        seen: Set[str] = set()
        repeated: Set[str] = set()
        for k, _ in pairs:
            (repeated if k in seen else seen).add(k)
        d.repeated = frozenset(repeated)
    return d


def _repeats(obj: Any, fields: Sequence[str]) -> bool:
    return not isinstance(obj, dict) or any(k in getattr(obj, "repeated", ()) for k in fields)


def _int_or_float(text: str) -> Union[int, float]:
    # serde_json reads -0 as a float, never an integer.
    return -0.0 if text == "-0" else int(text)


def _refuse_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


def _whole(value: Any, low: int, high: int) -> bool:
    return type(value) is int and low <= value <= high


def _text(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        value.encode("utf-8")  # a lone surrogate (serde_json refuses one in a string it reads)
    except UnicodeEncodeError:
        return False
    return True


def _field_errors(obj: Any) -> Optional[str]:
    if _repeats(obj, FIELDS):
        return "not an object, or a field repeated"
    for k in FIELDS:
        if k not in obj and k not in _OPTIONAL:
            return "missing field %s" % k
    seen = obj.get("list")
    if _repeats(seen, _LIST_FIELDS):
        return "list"
    checks = [
        _whole(obj["format"], 0, _U32_MAX), _text(obj["client"]), _text(obj["router"]),
        isinstance(obj["reads"], list) and all(_whole(v, 0, _U32_MAX) for v in obj["reads"]),
        "sha256" in seen and _text(seen["sha256"]), "version" in seen and _whole(seen["version"], 0, _U32_MAX),
        seen.get("parameter_version") is None or _whole(seen["parameter_version"], *_I64),
        _whole(obj["loaded_at"], 0, _U64_MAX), _whole(obj["written_at"], 0, _U64_MAX),
        _whole(obj["every"], 0, _U64_MAX),
    ]
    checks += [obj.get(k) is None or _whole(obj[k], 0, _U64_MAX) for k in ("refreshed_at", "refresh_failed_at")]
    checks += [obj.get(k) is None or _text(obj[k]) for k in ("task", "label")]
    return None if all(checks) else "a field of the wrong type"


def _loads(data: bytes) -> Any:
    # surrogateescape: bytes that are not UTF-8 fail only inside a field that is read, as in serde_json.
    text = data.decode("utf-8", "surrogateescape")

    def loads() -> Any:
        return json.loads(text, object_pairs_hook=_pairs, parse_int=_int_or_float, parse_constant=_refuse_constant)

    try:
        return loads()
    except RecursionError:
        # serde_json skips an unknown field however deep it nests; 4096 bytes nest at most 2048 levels.
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 3 * MAX_BYTES))
        try:
            return loads()
        finally:
            sys.setrecursionlimit(limit)


def parse_report(file_name: str, data: bytes) -> Dict[str, Any]:
    """Parses the bytes of the report file ``file_name`` as Rust's ``Report::parse`` does; raises ``ReportError``."""
    if len(data) > MAX_BYTES:
        raise ReportError("too-large", "report is over %d bytes" % MAX_BYTES)
    try:
        obj = _loads(data)
    except ValueError as e:
        raise ReportError("malformed", "report is not JSON: %s" % e) from None
    why = _field_errors(obj)
    if why is None and obj["format"] != FORMAT:
        why = "format %s" % obj["format"]
    if why is None and (not is_client_id(obj["client"]) or len(obj["list"]["sha256"].encode("utf-8")) != 64):
        why = "client or list.sha256"
    if why is not None:
        raise ReportError("malformed", "report is not a format-%d report: %s" % (FORMAT, why))
    if client_of_file(file_name) != obj["client"]:
        raise ReportError("wrong-name", "report's client %r is not its file's name" % obj["client"])
    report = {k: obj.get(k) for k in FIELDS}
    report["list"] = {k: obj["list"].get(k) for k in _LIST_FIELDS}
    return report


# Writing.
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_reports_dir(root: str, create: bool) -> int:
    """The reports' directory beneath ``root``, opened without following a link (made when missing, if ``create``)."""
    root_fd = os.open(root, _DIR_FLAGS)
    try:
        flags = _DIR_FLAGS | getattr(os, "O_NOFOLLOW", 0)
        try:
            return os.open(DIR, flags, dir_fd=root_fd)
        except FileNotFoundError:
            if not create:
                raise
        made = True
        try:
            os.mkdir(DIR, 0o1777, dir_fd=root_fd)
        except FileExistsError:
            made = False
        fd = os.open(DIR, flags, dir_fd=root_fd)
        if made:
            # Writable by every user whatever the umask (tasks of other users report there too), and sticky: no
            # client may remove another's report, which could let the function count a live client as gone.
            try:
                os.fchmod(fd, 0o1777)
            except OSError:
                pass
        return fd
    finally:
        os.close(root_fd)


def _write_atomically(root: str, name: str, data: bytes) -> None:
    dir_fd = _open_reports_dir(root, True)
    try:
        tmp = _private_name(".tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0), 0o644, dir_fd=dir_fd)
        try:
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    finally:
        os.close(dir_fd)


def _remove(root: str, name: str, stop: threading.Event, lock: threading.Lock) -> None:
    """The end of a reporter (collected, closed, or at exit): the thread stops and the report goes. Under the
    reporter's lock, so that a write in flight ends first and none follows."""
    with lock:
        stop.set()
        try:
            dir_fd = _open_reports_dir(root, False)
        except OSError:
            return
        try:
            os.unlink(name, dir_fd=dir_fd)
        except OSError:
            pass
        finally:
            os.close(dir_fd)


def task_arn(uri: str, timeout: float = 2.0) -> Optional[str]:
    """The ``TaskARN`` of ``<uri>/task`` (the ECS task metadata endpoint, plain HTTP; no proxy), or None."""
    parts = urllib.parse.urlsplit(uri.rstrip("/") + "/task")
    if parts.scheme != "http" or not parts.hostname:
        return None
    try:
        conn = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=timeout)
        try:
            conn.request("GET", parts.path or "/", headers={"Accept": "application/json"})
            answer = conn.getresponse()
            body = answer.read(1 << 20)
            if answer.status != 200:
                return None
        finally:
            conn.close()
        arn = json.loads(body).get("TaskARN")
    except (OSError, ValueError, AttributeError, http.client.HTTPException):
        return None
    return arn if isinstance(arn, str) and 0 < len(arn) <= _MAX_ARN else None


def _cut(text: str, max_bytes: int) -> str:
    return text.encode("utf-8", "replace")[:max_bytes].decode("utf-8", "ignore")


def _list_version(text: str) -> int:
    try:
        version = json.loads(text).get("version")
    except (ValueError, AttributeError):
        return 1
    return version if type(version) is int else 1


def report_root(layout: Layout, shards: Sequence[Target], given: Optional[str] = None) -> str:
    """Where the file system's root is on this host: ``given``, the single mount's base, or the mount of the shard
    rooted at ``/``; ``ReportFault("no-report-dir")`` when none is."""
    if given is not None:
        return os.fspath(given)
    if layout.mounts is None:
        assert layout.base is not None
        return layout.base
    for mount, shard in zip(layout.mounts, shards):
        if shard.root == "/":
            return mount
    raise ReportFault("no-report-dir", "no directory for the report: a per-target layout without a shard rooted at "
                                       "/ needs report_root, where the file system's root is mounted")


class Source(NamedTuple):
    """A list as read: its exact text, and the SSM parameter's version when read from SSM."""

    text: str
    parameter_version: Optional[int] = None


class SsmSource:
    """Reads the list from SSM for ``Router.from_ssm``, remembering the text and version of each list it parsed."""

    def __init__(self, name: str, client: Any):
        self.name = name
        self.client = client if client is not None else _ssm_client()
        self.read: Optional[Tuple[MountTargetList, Source]] = None

    def __call__(self) -> MountTargetList:
        from .ssm import _read_parameter_version
        text, version = _read_parameter_version(self.name, self.client)
        mount_list = MountTargetList.from_json(text)
        self.read = (mount_list, Source(text, version))
        return mount_list


def _run(ref: "weakref.ReferenceType[Reporter]", stop: threading.Event, every: float) -> None:
    """The thread: every ``every`` seconds the report rewritten, while the reporter lives (a weak reference)."""
    while not stop.wait(every):
        reporter = ref()
        if reporter is None:
            return
        try:
            reporter.write()
        except OSError:
            pass  # tried again at the next tick; the lease stops writes and moves meanwhile
        del reporter


class Reporter:
    """One router's report, and the thread that rewrites it (see the module's documentation)."""

    def __init__(self, root: str, source: Source, *, label: Optional[str] = None, metadata_uri: Optional[str] = None,
                 clock: Callable[[], float] = time.time, every: float = EVERY_SECS,
                 ssm: Optional[SsmSource] = None):
        self.client = _client_id()
        self.root = root
        self.file = os.path.join(root, DIR, self.client + ".json")
        self._clock = clock
        self._ssm = ssm
        self._lock = threading.Lock()
        self._last_ok: Optional[int] = None
        uri = metadata_uri if metadata_uri is not None else os.environ.get(METADATA_URI_VAR)
        now = int(clock())
        if label is None:
            label = socket.gethostname() or None
        self.report: Dict[str, Any] = {
            "format": FORMAT, "client": self.client, "router": ROUTER, "reads": list(READS),
            "list": self._seen(source), "loaded_at": now, "refreshed_at": None,
            "refresh_failed_at": None, "written_at": now, "every": int(every),
            "task": task_arn(uri) if uri else None, "label": _cut(label, _MAX_LABEL) if label is not None else None,
        }
        stop = self._stop = threading.Event()
        # Collected, or at the interpreter's exit: the thread stops and the report is removed.
        self._finalizer = weakref.finalize(self, _remove, root, self.client + ".json", stop, self._lock)
        try:
            self.write()
        except OSError:
            pass  # the lease: the first write or move tries again
        threading.Thread(target=_run, args=(weakref.ref(self), stop, every), name="efs-router-report",
                         daemon=True).start()

    @staticmethod
    def _seen(source: Source) -> Dict[str, Any]:
        return {"sha256": list_sha256(source.text), "version": _list_version(source.text),
                "parameter_version": source.parameter_version}

    def write(self) -> None:
        """Writes the report now (one write at a time)."""
        with self._lock:
            self._write_locked()

    def _write_locked(self) -> None:
        if self._stop.is_set():
            raise OSError(errno.ESHUTDOWN, "the router was closed: it reports no more")
        now = int(self._clock())
        self.report["written_at"] = now
        _write_atomically(self.root, self.client + ".json", to_json(self.report).encode("utf-8"))
        self._last_ok = now

    def _fresh(self) -> bool:
        last = self._last_ok
        return not self._stop.is_set() and last is not None and int(self._clock()) - last < LEASE_SECS

    def lease(self) -> None:
        """Before a write or a move: a report younger than ``LEASE_SECS``, or one written now; else
        ``ReportFault("report-lapsed")``."""
        if self._fresh():
            return
        try:
            with self._lock:
                if not self._fresh():  # threads that found it stale together write it once
                    self._write_locked()
        except OSError as e:
            raise ReportFault("report-lapsed", "report-lapsed: this router's report was last written at %s, %d s or "
                              "more ago, and writing it now failed; the function may count this client as gone, so "
                              "nothing is written or moved: %s" % (self._last_ok, LEASE_SECS, e),
                              self._last_ok) from e

    def refreshed(self, mount_list: Optional[MountTargetList]) -> None:
        """A re-read of the list: ``mount_list`` the router now routes by, or None when the re-read failed (or gave a
        list the router refused). A new list is reported at once; a refresh, at the next tick."""
        now = int(self._clock())
        changed = False
        with self._lock:
            if mount_list is None:
                self.report["refresh_failed_at"] = now
            else:
                self.report["refreshed_at"] = now
                self.report["refresh_failed_at"] = None
                read = self._ssm.read if self._ssm is not None else None
                if read is not None and read[0] is mount_list:
                    seen = self._seen(read[1])
                    if seen != self.report["list"]:
                        self.report["list"] = seen
                        self.report["loaded_at"] = now
                        changed = True
        if changed:
            try:
                self.write()
            except OSError:
                pass  # the lease

    def close(self) -> None:
        """Stops reporting and removes the report; the router writes and moves nothing more (``report-lapsed``)."""
        self._finalizer()


def reporting(router: "Router", source: Source, *, label: Optional[str] = None, report_root_dir: Optional[str] = None,
              metadata_uri: Optional[str] = None, clock: Callable[[], float] = time.time,
              every: float = EVERY_SECS, ssm: Optional[SsmSource] = None) -> Reporter:
    """The reporter of ``router``, on the list read as ``source``."""
    root = report_root(router.layout, router.shards, report_root_dir)
    return Reporter(root, source, label=label, metadata_uri=metadata_uri, clock=clock, every=every, ssm=ssm)
