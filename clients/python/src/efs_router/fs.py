"""File operations (router/src/router.rs and its neighbours): the router, and what its operations answer. Each
operation is the Rust router's, through the native module (``_native``), which leaves the GIL while it works, so an
application's threads read and write at once. This module keeps what is Python's own: the named answers, the
list's refresh (boto3 reads SSM) and the report's options."""

from __future__ import annotations

import logging
import math
import threading
import time
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Tuple

from . import _native
from .create import Creation
from .delete import Deleted, Left
from .layout import Layout
from .list import MountTargetList, Target
from .listing import Entry, _Lister
from .path import _text
from .report import EVERY_SECS, ROUTER, Source, SsmSource
from .ssm import _ssm_client

# The logger of the package, by its name (as before the modules): "efs_router".
logger = logging.getLogger("efs_router")

# How many shards' directories a miss or a listing reads at once (the Rust router's PROBE_THREADS).
PROBE_THREADS = 32


class Resolved(NamedTuple):
    index: int  # type: ignore[assignment]  # the home shard's position in shards() (shadows tuple.index)
    logical: str  # the normalised logical path
    real: str  # where the file is, or will be, on this host
    raw: str  # the application's spelling, which a modulo-sha256 placement hashes (placement.py)


class Found(NamedTuple):
    kind: str  # "home", "elsewhere" or "missing"
    index: Optional[int] = None  # type: ignore[assignment]  # for "elsewhere": the shard that has it
    real: Optional[str] = None  # for "elsewhere": its real path there


class Location(NamedTuple):
    home: Resolved
    found: Found


class Place(NamedTuple):
    """Where a read found its bytes: ``home``; ``moved-home`` (found in shard ``index``, moved
    home by this read); ``moved-by-another`` (found in shard ``index``, another client moved or
    removed it first); ``left-elsewhere`` (found in shard ``index`` and left there, for ``reason``);
    ``at-placement`` (found in shard ``index``, where an open placement of a version 3 list homes it,
    and left there: a client still on that placement's list looks for it there alone)."""

    kind: str
    index: Optional[int] = None  # type: ignore[assignment]  # shadows tuple.index, as in Resolved
    reason: Optional[str] = None


class ReadResult(NamedTuple):
    data: bytes
    place: Place


HOME = Place("home")


def _layout_args(layout: Layout) -> Tuple[Optional[str], Optional[List[str]]]:
    return layout.base, (list(layout.mounts) if layout.mounts is not None else None)


class _Snapshot:
    """A list checked against the layout: the Python list, its shards, and the native router on it. Never changed:
    a refresh replaces the router's snapshot whole, and each operation keeps the one it began with."""

    __slots__ = ("list", "shards", "native")

    def __init__(self, mount_list: MountTargetList, native: Any):
        self.list = mount_list
        self.shards = mount_list.shards()
        self.native = native

    @classmethod
    def of(cls, mount_list: MountTargetList, layout: Layout) -> "_Snapshot":
        # A list built in code is checked as a parsed one was.
        mount_list.validate()
        base, mounts = _layout_args(layout)
        return cls(mount_list, _native.Router(mount_list.to_json(), base, mounts))


def _reporting(text: str, layout: Layout, parameter_version: Optional[int], label: Optional[str],
               report_root: Optional[str], metadata_uri: Optional[str], clock: Callable[[], float],
               every: float) -> _Snapshot:
    base, mounts = _layout_args(layout)
    native = _native.Router.reporting(text, base, mounts, parameter_version=parameter_version, label=label,
                                      fs_root=report_root, metadata_uri=metadata_uri, clock=clock,
                                      every=float(every), router=ROUTER)
    return _Snapshot(MountTargetList.from_json(text), native)


class _Reporter:
    """What a test or an application's own schedule reaches of a router's report: ``write`` it now."""

    def __init__(self, router: "Router"):
        self._router = router

    def write(self) -> None:
        self._router._snapshot.native.write_report()


class Router:
    """A published list and how this host mounts it.

    ``reload`` and ``refresh_seconds`` (both or neither; ``Router.from_ssm`` sets them): each
    operation calls ``reload()`` for a new list first when ``refresh_seconds`` or more have
    passed, by ``clock`` (seconds, ``time.monotonic`` unless a test injects one), since the last
    call began; a call that raises, or a list that does not fit ``layout``, keeps the list and
    logs a warning. See the module's documentation for the fleet rule."""

    def __init__(self, mount_list: MountTargetList, layout: Layout, *,
                 reload: Optional[Callable[[], MountTargetList]] = None, refresh_seconds: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic):
        if refresh_seconds is not None:
            if not (isinstance(refresh_seconds, (int, float)) and math.isfinite(refresh_seconds)
                    and refresh_seconds >= 0):
                raise ValueError("refresh_seconds %r: expected None (no refresh) or a number of seconds >= 0"
                                 % (refresh_seconds,))
            if reload is None:
                raise ValueError("refresh_seconds needs reload, the way to read the list again (see Router.from_ssm)")
        self.layout = layout
        self._snapshot = _Snapshot.of(mount_list, layout)
        self._reload = reload
        self._refresh_seconds = refresh_seconds
        self._source = "the mount target list"
        self._ssm: Optional[SsmSource] = None
        self._clock = clock
        self._lock = threading.Lock()
        self._last_read = clock() if refresh_seconds is not None else 0.0

    @classmethod
    def from_ssm(cls, name: str, layout: Layout, refresh_seconds: Optional[float] = None, client: Any = None,
                 clock: Callable[[], float] = time.monotonic, *, report: bool = True, label: Optional[str] = None,
                 report_root: Optional[str] = None, report_clock: Callable[[], float] = time.time,
                 report_every: float = EVERY_SECS, metadata_uri: Optional[str] = None) -> "Router":
        """A router on the list published as the SSM parameter ``name`` (read now; an error here
        is raised). With ``refresh_seconds`` it re-reads the parameter with the same client when
        that many seconds have passed (see the module's documentation). ``client``: a boto3 SSM
        client; None makes ``boto3.client("ssm")`` (the ``ssm`` extra).

        It reports the list it routes by (``report``, README "Reports"): ``label`` (the host's name when None),
        ``report_root`` (where the file system's root is mounted, when the layout has no shard rooted at ``/``),
        ``metadata_uri`` (the ECS task metadata endpoint; None reads ``ECS_CONTAINER_METADATA_URI_V4``);
        ``report_clock`` and ``report_every`` are for tests and simulations."""
        source = SsmSource(name, client if client is not None else _ssm_client())
        began = clock()
        router = cls(source(), layout, reload=source if refresh_seconds is not None else None,
                     refresh_seconds=refresh_seconds, clock=clock)
        router._source = "SSM parameter %s" % name
        router._ssm = source
        router._last_read = began
        if report:
            assert source.read is not None
            text, version = source.read[1]
            router._snapshot = _reporting(text, layout, version, label, report_root, metadata_uri, report_clock,
                                          report_every)
        return router

    @classmethod
    def reporting(cls, text: str, layout: Layout, *, parameter_version: Optional[int] = None,
                  label: Optional[str] = None, report_root: Optional[str] = None,
                  report_clock: Callable[[], float] = time.time, report_every: float = EVERY_SECS,
                  metadata_uri: Optional[str] = None) -> "Router":
        """A router on the list published as ``text`` (exactly: the report carries its SHA-256) that reports it, as
        Rust's ``Router::reporting``; the options as ``from_ssm``'s. A new list is a new router."""
        router = cls(MountTargetList.from_json(text), layout)
        router._snapshot = _reporting(text, layout, parameter_version, label, report_root, metadata_uri,
                                      report_clock, report_every)
        return router

    @property
    def client_id(self) -> Optional[str]:
        """This router's client id, when it reports."""
        cid = self._snapshot.native.client_id
        return None if cid is None else str(cid)

    @property
    def report_file(self) -> Optional[str]:
        """Where this router's report is, when it reports."""
        file = self._snapshot.native.report_file
        return None if file is None else str(file)

    @property
    def _reporter(self) -> Optional[_Reporter]:
        return _Reporter(self) if self.client_id is not None else None

    def close(self) -> None:
        """Stops reporting and removes the report (also done when the router is collected); a reporting router
        then writes and moves nothing more (``report-lapsed``)."""
        self._snapshot.native.close_report()

    def lease(self) -> None:
        """Before a write or a move: a report younger than ``LEASE_SECS``, or one written now; else
        ``ReportFault("report-lapsed")``. A router that does not report holds no lease."""
        self._snapshot.native.lease()

    @property
    def list(self) -> MountTargetList:
        """The list this router routes by now."""
        return self._snapshot.list

    @list.setter
    def list(self, mount_list: MountTargetList) -> None:
        self._snapshot = _Snapshot.of(mount_list, self.layout)

    @property
    def shards(self) -> List[Target]:
        """The shards of the list, by position: an index of ``Resolved``, ``Found`` or ``Place`` is one of these."""
        return self._snapshot.shards

    @property
    def targets(self) -> List[Target]:
        """The same as ``shards`` (the name from before version 2, when each mount target was one shard)."""
        return self._snapshot.shards

    def _current(self) -> Any:
        """The native router an operation uses from start to end, refreshed first when it is due."""
        if self._refresh_seconds is not None:
            self._refresh_if_due(self._refresh_seconds)
        return self._snapshot.native

    def _refresh_if_due(self, period: float) -> None:
        if self._clock() - self._last_read < period:
            return
        # One re-read at a time; the others wait for it rather than route by a list past its time.
        with self._lock:
            began = self._clock()
            if began - self._last_read < period:
                return  # another thread refreshed while this one waited
            assert self._reload is not None
            old = self._snapshot
            try:
                snapshot = self._reread(old)
            except Exception as e:  # never fails the operation: the old list still routes
                logger.warning("efs_router: re-reading %s failed, still routing by the list read before "
                               "(next attempt in %ss): %s: %s", self._source, period, type(e).__name__, e)
                old.native.note_refresh(False)
                # Set only now: until the attempt is over, other threads see it due and wait.
                self._last_read = began
                return
            if snapshot.list != old.list:
                logger.info("efs_router: %s changed: now %d mount targets, %d shards (%s)", self._source,
                            len(snapshot.list.mount_targets), len(snapshot.shards), snapshot.list.strategy)
            self._snapshot = snapshot
            self._last_read = began

    def _reread(self, old: _Snapshot) -> _Snapshot:
        """The list read again: a new native router that keeps this one's report's client, on the exact text read
        (the report names its digest)."""
        assert self._reload is not None
        mount_list = self._reload()
        read = self._ssm.read if self._ssm is not None else None
        if read is not None and read[0] is mount_list:
            text, version = read[1]
        else:
            text, version = Source(mount_list.to_json())
        return _Snapshot(mount_list, old.native.with_list(text, version))

    def resolve(self, path: str) -> Resolved:
        return Resolved(*self._current().resolve(_text(path)))

    def miss_shards(self, home: Resolved) -> List[int]:
        """The shards a miss of ``home``'s path (``resolve``'s answer) looks in besides home, by the list the router
        routes by now: where an open placement homes it, in a version 3 list; every other shard in the earlier
        forms, and when the list says ``everywhere``. ``exists``, ``locate``, ``create``, ``read_with_fallback``
        and ``delete`` look there."""
        return list(self._snapshot.native.miss_shards(home.raw))

    def locate(self, path: str) -> Location:
        """Where ``path`` is now: home, elsewhere, or missing. Moves nothing. Every answer is the server's, never
        this client's name cache."""
        resolved, kind, index, real = self._current().locate(_text(path))
        return Location(Resolved(*resolved), Found(kind, index, real))

    def exists(self, path: str) -> bool:
        """Whether ``path`` is at home or in any shard a miss looks in (``miss_shards``)."""
        return bool(self._current().exists(_text(path)))

    def delete(self, path: str) -> Deleted:
        """Removes ``path`` from home and every shard a miss looks in (``miss_shards``; router/src/delete.rs): on a
        version 3 list with nothing open, home alone. Only regular files go; a link, FIFO or directory at a copy's
        place (or a link on the way) is left and reported in ``left``. A missing path is not an error (``any()`` is
        False). Raises the path's errors, the file system's (after every shard of that round was tried) and
        ``Reappearing``."""
        removed, unlinked, left, rounds = self._current().delete(_text(path))
        return Deleted(list(removed), unlinked, [Left(*x) for x in left], rounds)

    def create(self, path: str, data: bytes) -> Creation:
        """Writes ``data`` as ``path`` in its home shard only if ``exists`` would find it nowhere, atomically against
        other writers at home (router/src/create.rs). ``Creation("created", home, real)``, or
        ``Creation("already-there", index, real)`` naming the shard that holds it. Creates missing directories."""
        return Creation(*self._current().create(_text(path), bytes(data)))

    def listdir(self, directory: str = "") -> List[str]:
        """The names in the logical directory ``directory`` (``""`` for the roots), sorted: ``scandir``'s."""
        return [e.name for e in self._lister().scandir(directory)]

    def scandir(self, directory: str = "") -> List[Entry]:
        """Every name in the logical directory ``directory``, sorted, one ``Entry`` each: the union of the
        directory in every shard, read at once; for a file, the copy ``read_with_fallback`` reads.
        ``NotFound`` when no shard has it as a directory."""
        return self._lister().scandir(directory)

    def walk(self, top: str = "", onerror: Optional[Callable[[OSError], object]] = None
             ) -> Iterator[Tuple[str, List[str], List[str]]]:
        """``os.walk`` of the logical tree, top down: ``(directory, dirnames, filenames)``, logical paths; prune
        ``dirnames`` in place. An ``OSError`` (``NotFound`` for a missing ``top``) is raised, or given to
        ``onerror`` and the walk goes on."""
        return self._lister().walk(top, onerror)

    def glob(self, pattern: str) -> List[str]:
        """The logical paths (files and directories) matching ``pattern``, sorted: ``fnmatch`` per component, ``**``
        for any number of directories, a leading '.' matched only by a '.' (listing.py)."""
        return self._lister().glob(pattern)

    def _lister(self) -> _Lister:
        """A listing by the list this operation begins with."""
        return _Lister(self._current())

    def write(self, path: str, data: bytes) -> str:
        """Writes ``data`` as ``path`` in its home shard atomically (temporary name, fsync, rename).
        Creates missing directories; returns the real path."""
        return str(self._current().write(_text(path), bytes(data)))

    def read_with_fallback(self, path: str) -> ReadResult:
        """Reads ``path`` from home (one open: no look before it). On a miss, opens it at once in each shard a miss
        looks in (``miss_shards``), reads the newest copy (modification time; a tie goes to the shard earlier in the
        list) and moves it home by ``relocate``; on a version 3 list it leaves it there (``at-placement``). A copy
        that is not a regular file: at home ``NotARegularFile``; elsewhere skipped. ``NotFound`` when none of those
        shards has it."""
        data, kind, index, reason = self._current().read_with_fallback(_text(path))
        return ReadResult(data, HOME if kind == "home" else Place(kind, index, reason))
