"""File operations (router/src/fs.rs): the router, and what its operations answer."""

from __future__ import annotations

import errno
import logging
import math
import os
import threading
import time
from typing import Any, Callable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

from .cache import revalidate_dir
from .create import ALREADY_THERE, CREATED, Creation, create_at
from .delete import Deleted, delete_everywhere
from .delete import Place as DeletePlace
from .errors import InsideAnotherShard, NotARegularFile, NotFound
from .layout import Layout, _relative_to
from .list import MountTargetList, Target
from .listing import Entry, _Lister
from .names import _private_name
from .path import _at_or_under, normalise
from .placement import miss_roots
from .relocation import MOVED, REPLACED_OLDER, SOURCE_GONE, _parent, _regular, _relocate
from .report import EVERY_SECS, Reporter, ReportFault, Source, SsmSource, reporting
from .shard import _index_of
from .ssm import _ssm_client

# The logger of the package, by its name (as before the modules): "efs_router".
logger = logging.getLogger("efs_router")


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


def _present(path: str) -> bool:
    try:
        os.stat(path)
        return True
    except FileNotFoundError:
        return False


def _make_dir(directory: str) -> None:
    """Makes ``directory`` and its parents when the server says it is missing. One another client made may be
    missing only in this client's cache, where mkdir would answer "exists" while the cache still says
    "missing": revalidated first, it is found."""
    if not revalidate_dir(directory):
        os.makedirs(directory, exist_ok=True)


def _fresh_present(path: str) -> bool:
    """_present, as the server answers now: ``path``'s directory revalidated first (``revalidate_dir``)."""
    return revalidate_dir(_parent(path)) and _present(path)


# A copy is opened as data: no link followed, no wait on a FIFO, no controlling terminal.
_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
               | getattr(os, "O_CLOEXEC", 0))


class _Opened(NamedTuple):
    fd: int
    st: os.stat_result


def _open_copy(path: str) -> Optional[_Opened]:
    """Opens ``path`` as data (O_NOFOLLOW | O_NONBLOCK), then fstat: a regular file, or ``NotARegularFile``.
    None when nothing is there. One open: no look before it."""
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        return None
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise NotARegularFile(path, "symbolic link") from None
        if e.errno == errno.ENXIO:  # a socket, or a device without a driver
            raise NotARegularFile(path, "special file") from None
        raise
    try:
        st = os.fstat(fd)
        _regular(st, path)
    except BaseException:
        os.close(fd)
        raise
    return _Opened(fd, st)


def _fresh_open(path: str) -> Optional[_Opened]:
    """``_open_copy``, as the server answers now: ``path``'s directory revalidated first."""
    if not revalidate_dir(_parent(path)):
        return None
    return _open_copy(path)


def _fresh_candidate(path: str) -> Optional[_Opened]:
    """``_fresh_open`` of a copy in another shard: anything but a regular file counts as absent."""
    try:
        return _fresh_open(path)
    except NotARegularFile:
        return None


def _read_opened(opened: _Opened) -> bytes:
    with os.fdopen(opened.fd, "rb") as f:
        return f.read()


def _close(opened: Optional[_Opened]) -> None:
    if opened is not None:
        os.close(opened.fd)


T = TypeVar("T")


PROBE_THREADS = 32
"""Paths a miss probes at once, as the Rust library: with hundreds of shards, a thread each would cost more
than the round trips it saves."""


S = TypeVar("S")


def _probe(paths: Sequence[S], check: Callable[[S], T]) -> List[Union[T, BaseException]]:
    """``check`` of each path, in their order: at once (up to ``PROBE_THREADS`` threads) when there are
    several, since over NFS each is a round trip and they do not wait on one another. An exception is
    returned in its place."""
    def one(path: S) -> Union[T, BaseException]:
        try:
            return check(path)
        except Exception as e:
            return e

    if len(paths) < 2:
        return [one(p) for p in paths]
    out: List[Union[T, BaseException]] = [RuntimeError("not probed")] * len(paths)

    pending = iter(range(len(paths)))
    lock = threading.Lock()

    def run() -> None:
        while True:
            with lock:
                i = next(pending, None)
            if i is None:
                return
            out[i] = one(paths[i])

    threads = [threading.Thread(target=run, daemon=True) for _ in range(min(len(paths), PROBE_THREADS))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def _create_temporary(directory: str) -> Tuple[str, int]:
    """A new ``.efs-router-<16 hex>.tmp`` in ``directory``, created exclusively, open for writing: its path and
    descriptor. ``FileNotFoundError`` when the directory is missing."""
    for attempt in range(9):
        tmp = os.path.join(directory, _private_name(".tmp"))
        try:
            return tmp, os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
        except FileExistsError:
            if attempt == 8:
                raise
    raise AssertionError("unreachable")


class _Snapshot:
    """A list checked against the layout, with what routing derives from it. Never changed:
    a refresh replaces the router's snapshot whole, and each operation keeps the one it began with."""

    __slots__ = ("list", "shards", "reserved")

    def __init__(self, mount_list: MountTargetList, layout: Layout):
        # A list built in code is checked as a parsed one was (its shards are expanded below).
        mount_list.validate()
        # What paths route to, by position: the list's shards.
        self.shards = mount_list.shards()
        layout.check(self.shards)
        self.list = mount_list
        # Outer-root-relative directories of other shards: a path there would alias their files.
        self.reserved: List[Tuple[str, str]] = []
        roots = [t.root for t in self.shards]
        for outer in roots:
            for inner in roots:
                rel = _relative_to(inner, outer)
                if rel and all(r != rel for r, _ in self.reserved):
                    self.reserved.append((rel, inner))

    @property
    def targets(self) -> List[Target]:
        return self.shards


class Router:
    """A published list and how this host mounts it.

    ``reload`` and ``refresh_seconds`` (both or neither; ``Router.from_ssm`` sets them): each
    operation calls ``reload()`` for a new list first when ``refresh_seconds`` or more have
    passed, by ``clock`` (seconds, ``time.monotonic`` unless a test injects one), since the last
    call began; a call that raises, or a list that does not fit ``layout``, keeps the list and
    logs a warning. See the module's documentation for the fleet rule."""

    def __init__(self, mount_list: MountTargetList, layout: Layout, *,
                 reload: Optional[Callable[[], MountTargetList]] = None, refresh_seconds: Optional[float] = None,
                 clock: Callable[[], float] = time.monotonic, reporter: Optional[Reporter] = None):
        if refresh_seconds is not None:
            if not (isinstance(refresh_seconds, (int, float)) and math.isfinite(refresh_seconds)
                    and refresh_seconds >= 0):
                raise ValueError("refresh_seconds %r: expected None (no refresh) or a number of seconds >= 0"
                                 % (refresh_seconds,))
            if reload is None:
                raise ValueError("refresh_seconds needs reload, the way to read the list again (see Router.from_ssm)")
        self.layout = layout
        self._snapshot = _Snapshot(mount_list, layout)
        self._reload = reload
        self._refresh_seconds = refresh_seconds
        self._source = "the mount target list"
        self._clock = clock
        self._lock = threading.Lock()
        self._last_read = clock() if refresh_seconds is not None else 0.0
        self._reporter = reporter  # its report (report.py); None: it reports nothing

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
        router._last_read = began
        if report:
            assert source.read is not None
            router._reporter = reporting(router, source.read[1], label=label, report_root_dir=report_root,
                                         metadata_uri=metadata_uri, clock=report_clock, every=report_every,
                                         ssm=source)
        return router

    @classmethod
    def reporting(cls, text: str, layout: Layout, *, parameter_version: Optional[int] = None,
                  label: Optional[str] = None, report_root: Optional[str] = None,
                  report_clock: Callable[[], float] = time.time, report_every: float = EVERY_SECS,
                  metadata_uri: Optional[str] = None) -> "Router":
        """A router on the list published as ``text`` (exactly: the report carries its SHA-256) that reports it, as
        Rust's ``Router::reporting``; the options as ``from_ssm``'s. A new list is a new router."""
        router = cls(MountTargetList.from_json(text), layout)
        router._reporter = reporting(router, Source(text, parameter_version), label=label,
                                     report_root_dir=report_root, metadata_uri=metadata_uri, clock=report_clock,
                                     every=report_every)
        return router

    @property
    def client_id(self) -> Optional[str]:
        """This router's client id, when it reports."""
        return self._reporter.client if self._reporter is not None else None

    @property
    def report_file(self) -> Optional[str]:
        """Where this router's report is, when it reports."""
        return self._reporter.file if self._reporter is not None else None

    def close(self) -> None:
        """Stops reporting and removes the report (also done when the router is collected, and at exit); a reporting
        router then writes and moves nothing more (``report-lapsed``)."""
        if self._reporter is not None:
            self._reporter.close()

    def lease(self) -> None:
        """Before a write or a move: a report younger than ``LEASE_SECS``, or one written now; else
        ``ReportFault("report-lapsed")``. A router that does not report holds no lease."""
        if self._reporter is not None:
            self._reporter.lease()

    @property
    def list(self) -> MountTargetList:
        """The list this router routes by now."""
        return self._snapshot.list

    @list.setter
    def list(self, mount_list: MountTargetList) -> None:
        self._snapshot = _Snapshot(mount_list, self.layout)

    @property
    def shards(self) -> List[Target]:
        """The shards of the list, by position: an index of ``Resolved``, ``Found`` or ``Place`` is one of these."""
        return self._snapshot.shards

    @property
    def targets(self) -> List[Target]:
        """The same as ``shards`` (the name from before version 2, when each mount target was one shard)."""
        return self._snapshot.shards

    def _current(self) -> _Snapshot:
        """The snapshot an operation uses from start to end, refreshed first when it is due."""
        if self._refresh_seconds is not None:
            self._refresh_if_due(self._refresh_seconds)
        return self._snapshot

    def _refresh_if_due(self, period: float) -> None:
        if self._clock() - self._last_read < period:
            return
        # One re-read at a time; the others wait for it rather than route by a list past its time.
        with self._lock:
            began = self._clock()
            if began - self._last_read < period:
                return  # another thread refreshed while this one waited
            assert self._reload is not None
            try:
                snapshot = _Snapshot(self._reload(), self.layout)
            except Exception as e:  # never fails the operation: the old list still routes
                logger.warning("efs_router: re-reading %s failed, still routing by the list read before "
                               "(next attempt in %ss): %s: %s", self._source, period, type(e).__name__, e)
                if self._reporter is not None:
                    self._reporter.refreshed(None)
                # Set only now: until the attempt is over, other threads see it due and wait.
                self._last_read = began
                return
            if snapshot.list != self._snapshot.list:
                logger.info("efs_router: %s changed: now %d mount targets, %d shards (%s)", self._source,
                            len(snapshot.list.mount_targets), len(snapshot.shards), snapshot.list.strategy)
            self._snapshot = snapshot
            self._last_read = began
            if self._reporter is not None:
                self._reporter.refreshed(snapshot.list)

    def resolve(self, path: str) -> Resolved:
        return self._resolve(self._current(), path)

    def _resolve(self, s: _Snapshot, path: str) -> Resolved:
        logical = normalise(path)
        for rel, root in s.reserved:
            if _at_or_under(logical, rel):
                raise InsideAnotherShard(path, root)
        index = _index_of(path, logical, s.targets, s.list.strategy)
        return Resolved(index, logical, self.layout.real_path(s.targets, index, logical), path)

    @staticmethod
    def _others(s: _Snapshot, home: int) -> Iterator[int]:
        """Shards holding distinct directories other than home's: one per root, in list order."""
        t = s.targets
        for j in range(len(t)):
            if t[j].root != t[home].root and all(k.root != t[j].root for k in t[:j]):
                yield j

    def miss_shards(self, home: Resolved) -> List[int]:
        """The shards a miss of ``home``'s path (``resolve``'s answer) looks in besides home, by the list the router
        routes by now: where an open placement homes it (placement.py), in a version 3 list; every other shard in
        the earlier forms, and when the list says ``everywhere``. ``exists``, ``locate``, ``create`` and
        ``read_with_fallback`` look there; ``delete`` still looks in every shard."""
        return self._miss_shards(self._snapshot, home)

    @classmethod
    def _miss_shards(cls, s: _Snapshot, home: Resolved) -> List[int]:
        t = s.targets
        roots = miss_roots(s.list.open, home.raw, home.logical, t[home.index].root)
        if roots is None:
            return list(cls._others(s, home.index))
        # A list checks that each root is one of its shards: the first shard of that root stands for it.
        return [next(j for j, sh in enumerate(t) if sh.root == root) for root in roots]

    def locate(self, path: str) -> Location:
        """Where ``path`` is now: home, elsewhere, or missing. Moves nothing. Every answer is the server's, never
        this client's name cache: each directory it answers from is revalidated first (``revalidate_dir``)."""
        s = self._current()
        home = self._resolve(s, path)
        return Location(home, self._find(s, home, fresh_hit=True))

    @classmethod
    def _home_last(cls, s: _Snapshot, others: List[int]) -> bool:
        """Whether home need not be asked before the other shards a miss looks in (router/src/fs.rs,
        ``miss_places``): under open placements a file moves only from a placement's home to its home under this
        list, linked home before it leaves, so a look there and then at home cannot miss it. Elsewhere readers on
        other lists move files either way, and home is asked before and after."""
        return isinstance(s.list.open, list) and bool(others)

    def _find(self, s: _Snapshot, home: Resolved, fresh_hit: bool) -> Found:
        if not fresh_hit and _present(home.real):
            return Found("home")
        others = self._miss_shards(s, home)
        # A miss may be this client's cache remembering a name missing that another client has written since.
        if not self._home_last(s, others) and _fresh_present(home.real):
            return Found("home")
        # The other shards a miss looks in (miss_shards) are looked at all at once, as a fallback read does.
        reals = [self.layout.real_path(s.targets, j, home.logical) for j in others]
        for j, real, there in zip(others, reals, _probe(reals, _fresh_present)):
            if isinstance(there, BaseException):
                raise there
            if there:
                return Found("elsewhere", j, real)
        if others and _fresh_present(home.real):  # moved home by a concurrent read while we looked elsewhere
            return Found("home")
        return Found("missing")

    def exists(self, path: str) -> bool:
        """Whether ``path`` is in any shard a miss looks in (``miss_shards``): one stat at home; on a miss, home's
        directory revalidated and home looked at again, then each of those shards the same way (at once), then home
        once more (not when there are none). Under open placements home is looked at again only after them
        (``_home_last``)."""
        s = self._current()
        return self._find(s, self._resolve(s, path), fresh_hit=False).kind != "missing"

    def delete(self, path: str) -> Deleted:
        """Removes ``path`` from every shard of the list (router/src/delete.rs): the other distinct shard
        directories at once, then home, then all at once until a round finds nothing. Only regular files go; a
        link, FIFO or directory at a copy's place (or a link on the way) is left and reported in ``left``. A
        missing path is not an error (``any()`` is False). Raises the path's errors, the file system's (after
        every shard of that round was tried) and ``Reappearing``."""
        s = self._current()
        home = self._resolve(s, path)
        directory, _, name = home.logical.rpartition("/")

        def place(j: int) -> DeletePlace:
            mount, rel = self.layout.beneath_mount(s.targets, j)
            beneath = "/".join(p for p in (rel, directory) if p)
            return DeletePlace(j, self.layout.real_path(s.targets, j, home.logical), mount, beneath, name)

        others = [place(j) for j in self._others(s, home.index)]
        return delete_everywhere(path, place(home.index), others, _probe)

    def create(self, path: str, data: bytes) -> Creation:
        """Writes ``data`` as ``path`` in its home shard only if ``exists`` would find it nowhere, atomically against
        other writers at home: the same look, then a synced temporary name linked to the final name (never renamed
        over it), then unlinked (create.py). ``Creation("created", home, real)``, or ``Creation("already-there",
        index, real)`` naming the shard that holds it. Creates missing directories; the temporary name is removed on
        every error."""
        s = self._current()
        home = self._resolve(s, path)
        found = self._find(s, home, fresh_hit=False)
        if found.kind == "elsewhere":
            assert found.index is not None and found.real is not None
            return Creation(ALREADY_THERE, found.index, found.real)
        if found.kind == "home":
            return Creation(ALREADY_THERE, home.index, home.real)
        self.lease()  # like a write: past its lease this client may already count as gone
        made = create_at(home.real, data, _create_temporary, _make_dir)
        return Creation(CREATED if made else ALREADY_THERE, home.index, home.real)

    def listdir(self, directory: str = "") -> List[str]:
        """The names in the logical directory ``directory`` (``""`` for the roots), sorted: ``scandir``'s."""
        return [e.name for e in self._lister().scandir(directory)]

    def scandir(self, directory: str = "") -> List[Entry]:
        """Every name in the logical directory ``directory``, sorted, one ``Entry`` each: the union of the
        directory in every shard, read at once; for a file, the copy ``read_with_fallback`` reads (listing.py).
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
        s = self._current()

        def looked(p: str) -> List[int]:
            home = self._resolve(s, p)
            return [home.index] + self._miss_shards(s, home)

        # On a version 3 list a read looks only where an open placement homes a path: listed the same.
        placements = isinstance(s.list.open, list)
        return _Lister(self.layout, s.shards, s.reserved, lambda p: self._resolve(s, p).index, PROBE_THREADS,
                       looked if placements else None)

    def write(self, path: str, data: bytes) -> str:
        """Writes ``data`` as ``path`` in its home shard atomically (temporary name, fsync, rename).
        Creates missing directories; returns the real path."""
        home = self.resolve(path)
        self.lease()
        directory = os.path.dirname(home.real)
        # The directory is made only when the create finds it missing: over NFS making it first would
        # cost a round trip on every write.
        try:
            tmp, fd = _create_temporary(directory)
        except FileNotFoundError:
            _make_dir(directory)
            tmp, fd = _create_temporary(directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.rename(tmp, home.real)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise
        return home.real

    def read_with_fallback(self, path: str) -> ReadResult:
        """Reads ``path`` from home (one open: no look before it). On a miss, opens it at once in each shard a miss
        looks in (``miss_shards``: every other shard, but under a version 3 list only where an open placement homes
        it), reads the newest copy (modification time; a tie goes to the shard earlier in the list) and moves it
        home by ``relocate``; on a version 3 list it leaves it there (``at-placement``). Copies are opened with
        O_NOFOLLOW | O_NONBLOCK and checked with fstat: at home, anything but a regular file raises
        ``NotARegularFile``; elsewhere it is skipped. Raises ``NotFound`` when none of those shards has it."""
        s = self._current()
        home = self._resolve(s, path)
        opened = _open_copy(home.real)
        others = self._miss_shards(s, home)
        if opened is None and not self._home_last(s, others):
            opened = _fresh_open(home.real)  # a miss is confirmed against the server before any other shard
        if opened is not None:
            return ReadResult(_read_opened(opened), HOME)
        reals = [self.layout.real_path(s.targets, j, home.logical) for j in others]
        found = _probe(reals, _fresh_candidate)
        newest: Optional[Tuple[int, _Opened]] = None
        failure: Optional[BaseException] = None
        for j, got in zip(others, found):
            if isinstance(got, BaseException):
                failure = failure or got
            elif got is not None and (newest is None or got.st.st_mtime_ns > newest[1].st.st_mtime_ns):
                _close(newest[1] if newest is not None else None)
                newest = (j, got)
            else:
                _close(got)
        if failure is not None:
            _close(newest[1] if newest is not None else None)
            raise failure
        if newest is None:
            opened = _fresh_open(home.real) if others else None  # moved home by a concurrent read meanwhile
            if opened is not None:
                return ReadResult(_read_opened(opened), HOME)
            raise NotFound("%r: no such file in any shard" % path)
        j, copy = newest
        data = _read_opened(copy)
        if s.list.open is not None:
            # A version 3 list: found only where an open placement homes it. Moved home, it would be
            # hidden from the clients still on that placement's list; the function moves it once
            # every client runs one list.
            return ReadResult(data, Place("at-placement", j))
        place = self._move_home(s, j, home, copy.st)
        if place is None:  # home gained a file as new or newer (a write) since our miss: home is the truth
            opened = _fresh_open(home.real)
            if opened is not None:
                return ReadResult(_read_opened(opened), HOME)
            return ReadResult(data, Place("moved-by-another", j))
        return ReadResult(data, place)

    def _move_home(self, s: _Snapshot, src_index: int, home: Resolved, known: os.stat_result) -> Optional[Place]:
        """Moves the file from shard ``src_index`` home by ``relocate`` (``known``: the copy that was read).
        None when home has a file as new or newer and the copy was dropped."""
        try:
            self.lease()
        except ReportFault as e:
            return Place("left-elsewhere", src_index, str(e))
        paths = self.layout.move_paths(s.targets, src_index, home.index, home.logical)
        if paths is None:
            return Place("left-elsewhere", src_index, "no mount on this host sees both shards")
        src, dst = paths
        if src == dst:  # unreachable for distinct roots; never move a file onto itself
            return Place("left-elsewhere", src_index, "source and home are the same path")
        # The newer of the copy and whatever is at home now ends at home. The home directory is made only
        # if the link finds it missing (a round trip saved per move).
        try:
            try:
                outcome = _relocate(src, dst, known)
            except FileNotFoundError:
                directory = os.path.dirname(dst)
                if not directory:
                    raise
                try:
                    _make_dir(directory)
                except OSError as e:
                    return Place("left-elsewhere", src_index, "create directory %s: %s" % (directory, e))
                outcome = _relocate(src, dst, known)
        except OSError as e:
            return Place("left-elsewhere", src_index, "move %s to %s: %s" % (src, dst, e))
        if outcome in (MOVED, REPLACED_OLDER):
            return Place("moved-home", src_index)
        if outcome == SOURCE_GONE:
            return Place("moved-by-another", src_index)
        return None  # DROPPED_OLDER
