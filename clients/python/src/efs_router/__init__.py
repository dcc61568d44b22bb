"""Client-side routing for efs-mount-autoscaler (Python 3.9+; the standard library, and boto3 only to read SSM).

Reads the published list of mount targets (the JSON in SSM Parameter Store) and sends each
logical path to its shard, exactly as the Rust library ``efs-router`` (router/ in this
repository) does; both are tested against ``tests/vectors/routing.json``. The rules are in
router/README.md.

    import efs_router
    mount_list = efs_router.MountTargetList.from_json(ssm_value)
    router = efs_router.Router(mount_list, efs_router.Layout.single_mount("/mnt/efs"))
    router.write("data/analysis/device-42-1700000000.json", b"{...}")
    data = router.read_with_fallback("data/analysis/device-42-1700000000.json").data

The core function is ``shard_index(path, targets, strategy) -> int``: ``targets`` are the
entries of the published list (dicts as parsed from JSON, or ``Target``), ``strategy`` is
``"rendezvous"`` or ``"modulo-sha256"``; the answer is an index into ``targets``.

Installing: ``pip install ./clients/python`` (no dependency); ``pip install
"./clients/python[ssm]"`` adds boto3, to read the list from SSM:

    mount_list = efs_router.MountTargetList.from_ssm("/efs-mount-autoscaling/mount-targets")
    router = efs_router.Router.from_ssm("/efs-mount-autoscaling/mount-targets", layout,
                                        refresh_seconds=60)

``from_ssm`` takes a boto3 SSM client (``client=``); without one it makes ``boto3.client("ssm")``.

Picking up a new list. The default, and what the function does after each publish, is a forced
deployment of the ECS services: new tasks read the new list when they start. A ``Router`` can
also re-read the parameter itself, off by default: with ``refresh_seconds=R`` each operation
(``resolve``, ``locate``, ``exists``, ``write``, ``read_with_fallback``) first re-reads the list
when ``R`` seconds or more have passed since the last read (or attempt) began. A re-read that
fails, or gives a list that is not valid or does not fit the layout, keeps the list the router
had and logs a warning (logger ``efs_router``); it never fails the operation, and the next
attempt is ``R`` seconds later. Several threads may share one router; an operation routes by
one list from start to end.

The fleet rule: a refreshing client is on the new list only once it has refreshed, that is up
to ``R`` seconds (plus the read and the operation in flight) after the publish, and a client
whose re-reads fail stays on the old list. The function accounts for refreshing clients with
its setting ``CLIENT_REFRESH_SECONDS``: after each publish it waits that long before it moves
files, so set it above every client's ``refresh_seconds`` with a margin. Tasks that do not
refresh are covered by the forced deployment, as before.
"""

from __future__ import annotations

import errno
import hashlib
import json
import logging
import math
import os
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

logger = logging.getLogger(__name__)

__all__ = [
    "RENDEZVOUS", "MODULO_SHA256", "STRATEGIES",
    "RouterError", "ListError", "PathError", "RouteError", "LayoutError", "InsideAnotherShard", "NotFound",
    "Target", "MountTargetList", "normalise", "shard_index", "modulo_sha256", "rendezvous_score",
    "Layout", "Resolved", "Found", "Location", "Place", "ReadResult", "Router",
    "MOVED", "DESTINATION_TAKEN", "SOURCE_GONE", "relocate",
]

RENDEZVOUS = "rendezvous"
MODULO_SHA256 = "modulo-sha256"
STRATEGIES = (RENDEZVOUS, MODULO_SHA256)


# ---------------------------------------------------------------------------------------------
# Errors


class RouterError(Exception):
    """Base of every error this module raises on purpose."""


class ListError(RouterError, ValueError):
    """The published list is not a mount target list."""


class PathError(RouterError, ValueError):
    """A logical path was refused. ``kind``: empty, nul, empty-component or escapes-root (and
    not-unicode, for a str with a lone surrogate, which Rust's strings cannot hold)."""

    def __init__(self, kind: str, path: str, message: str):
        super().__init__("path %r %s" % (path, message))
        self.kind = kind
        self.path = path


class RouteError(RouterError):
    """No shard to route to. ``kind``: no-targets or all-draining."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class LayoutError(RouterError, ValueError):
    """A layout that does not fit the list."""


class InsideAnotherShard(RouterError, ValueError):
    """Joined to an outer root (``/``), the path lands in another shard's directory."""

    def __init__(self, path: str, root: str):
        super().__init__("path %r lies inside the directory of shard root %s; it would alias that shard's files"
                         % (path, root))
        self.path = path
        self.root = root


class NotFound(RouterError, FileNotFoundError):
    """No shard has the file."""


# ---------------------------------------------------------------------------------------------
# The published list


@dataclass(frozen=True)
class Target:
    """One mount target as clients see it. ``root`` is the shard's directory in the file system."""

    id: str
    ip: str
    az: Optional[str] = None
    az_id: Optional[str] = None
    subnet_id: Optional[str] = None
    root: str = "/"
    draining: bool = False

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], index: int = 0) -> "Target":
        if not isinstance(d, Mapping):
            raise ListError("not a mount target list: mount target %d is not an object" % index)

        def text(key: str, required: bool = False, nullable: bool = True, default: Any = None) -> Any:
            if key not in d:
                if required:
                    raise ListError("not a mount target list: mount target %d has no %r" % (index, key))
                return default
            v = d[key]
            if v is None and nullable:
                return default
            if not isinstance(v, str):
                raise ListError("not a mount target list: mount target %d: %r is not a string" % (index, key))
            return v

        draining = d.get("draining", False)
        if not isinstance(draining, bool):
            raise ListError("not a mount target list: mount target %d: 'draining' is not true or false" % index)
        return cls(
            id=text("id", required=True, nullable=False),
            ip=text("ip", required=True, nullable=False),
            az=text("az"),
            az_id=text("az_id"),
            subnet_id=text("subnet_id"),
            root=text("root", nullable=False, default="/"),
            draining=draining,
        )

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"id": self.id, "ip": self.ip}
        for key in ("az", "az_id", "subnet_id"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        d["root"] = self.root
        if self.draining:
            d["draining"] = True
        return d


def root_is_valid(root: str) -> bool:
    """``/`` or ``/a/b``: absolute, no empty, ``.`` or ``..`` parts, no NUL, no trailing slash."""
    if root == "/":
        return True
    if not root.startswith("/"):
        return False
    return all(part not in ("", ".", "..") and "\0" not in part for part in root[1:].split("/"))


@dataclass
class MountTargetList:
    """The published document. The original two-field form reads as roots ``/``, ``modulo-sha256``."""

    mount_targets: List[Target] = field(default_factory=list)
    strategy: str = RENDEZVOUS

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "MountTargetList":
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise ListError("not a mount target list: %s" % e) from None
        if not isinstance(raw, dict) or "mount_targets" not in raw:
            raise ListError("not a mount target list: no 'mount_targets'")
        unknown = sorted(set(raw) - {"mount_targets", "strategy"})
        if unknown:
            raise ListError("not a mount target list: unknown field %r" % unknown[0])
        entries = raw["mount_targets"]
        if not isinstance(entries, list):
            raise ListError("not a mount target list: 'mount_targets' is not an array")
        strategy = raw.get("strategy")
        if strategy is None:
            strategy = MODULO_SHA256
        if strategy not in STRATEGIES:
            raise ListError("not a mount target list: unknown strategy %r" % (strategy,))
        targets = [Target.from_dict(e, i) for i, e in enumerate(entries)]
        seen = set()
        for i, t in enumerate(targets):
            if not t.id:
                raise ListError("mount target %d has an empty id" % i)
            if t.id in seen:
                raise ListError("mount target %s is listed twice" % t.id)
            seen.add(t.id)
            if not root_is_valid(t.root):
                raise ListError("mount target %s has root %r: a root must be absolute, without '..', '.', "
                                "empty parts or NUL" % (t.id, t.root))
        return cls(targets, strategy)

    def to_json(self) -> str:
        return json.dumps({"mount_targets": [t.to_dict() for t in self.mount_targets], "strategy": self.strategy},
                          separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_ssm(cls, name: str, client: Any = None) -> "MountTargetList":
        """Reads and parses the list published as the SSM parameter ``name``:
        ``client.get_parameter(Name=name)["Parameter"]["Value"]``. ``client`` is a boto3 SSM
        client; None makes ``boto3.client("ssm")`` (the ``ssm`` extra: boto3). Errors of the
        client (a missing parameter, no credentials) are raised as they are; a value that is not
        a list raises ``ListError``."""
        if client is None:
            client = _ssm_client()
        value = client.get_parameter(Name=name)["Parameter"]["Value"]
        if not isinstance(value, str):
            raise ListError("not a mount target list: SSM parameter %s has no string value" % name)
        return cls.from_json(value)


def _ssm_client() -> Any:
    try:
        import boto3
    except ImportError as e:
        raise ImportError("efs_router: reading the list from SSM needs boto3, which is not installed; install "
                          "the package with its 'ssm' extra (pip install \"./clients/python[ssm]\") or pass "
                          "client=", name="boto3") from e
    return boto3.client("ssm")


# ---------------------------------------------------------------------------------------------
# Logical paths


def normalise(path: str) -> str:
    """Checks and normalises a logical path (router/README.md, "Logical paths").

    One leading ``/`` is dropped; ``.`` parts are dropped; ``..`` removes the part before it.
    Refused with ``PathError``: a NUL byte (``nul``), an empty part such as ``a//b`` or ``a/``
    (``empty-component``), a ``..`` that would leave the root (``escapes-root``), and a path
    that normalises to nothing (``empty``).
    """
    if not isinstance(path, str):
        raise TypeError("a logical path is a str, not %s" % type(path).__name__)
    if "\0" in path:
        raise PathError("nul", path, "contains a NUL byte")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise PathError("not-unicode", path, "is not valid Unicode (a lone surrogate)") from None
    rest = path[1:] if path.startswith("/") else path
    if not rest:
        raise PathError("empty", path, "names no file (it is empty or normalises to the shard root)")
    parts = rest.split("/")
    if "" in parts:
        raise PathError("empty-component", path, "has an empty component ('//', or a trailing '/')")
    out: List[str] = []
    for part in parts:
        if part == ".":
            continue
        if part == "..":
            if not out:
                raise PathError("escapes-root", path, "leaves its root through '..'")
            out.pop()
            continue
        out.append(part)
    if not out:
        raise PathError("empty", path, "names no file (it is empty or normalises to the shard root)")
    return "/".join(out)


def _at_or_under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")


# ---------------------------------------------------------------------------------------------
# Routing


TargetLike = Union[Target, Mapping[str, Any]]


def _field(t: TargetLike, key: str, default: Any) -> Any:
    if isinstance(t, Mapping):
        v = t.get(key, default)
        return default if v is None else v
    return getattr(t, key, default)


def rendezvous_score(root: str, normalised: str) -> int:
    """First 8 bytes, big-endian, of SHA-256 over ``root`` (UTF-8), one 0x00 byte, ``normalised`` (UTF-8)."""
    digest = hashlib.sha256(root.encode("utf-8") + b"\0" + normalised.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big")


def modulo_sha256(path: str, n: int) -> int:
    """The original expression: ``int(hashlib.sha256(path.encode()).hexdigest(), 16) % n``."""
    return int(hashlib.sha256(path.encode()).hexdigest(), 16) % n


def shard_index(path: str, targets: Sequence[TargetLike], strategy: str) -> int:
    """The index in ``targets`` (the list's order) of the shard that ``path`` belongs to.

    ``path`` is checked and normalised for both strategies; ``rendezvous`` hashes the normalised
    path, ``modulo-sha256`` the path exactly as given (as the original did). Draining targets
    are never chosen: routing is as if they were already removed.
    """
    normalised = normalise(path)
    return _index_of(path, normalised, targets, strategy)


def _index_of(raw: str, normalised: str, targets: Sequence[TargetLike], strategy: str) -> int:
    if strategy not in STRATEGIES:
        raise ValueError("unknown strategy %r: expected one of %s" % (strategy, ", ".join(STRATEGIES)))
    if not targets:
        raise RouteError("no-targets", "the mount target list is empty: there is no shard to route to")
    active = [i for i, t in enumerate(targets) if not _field(t, "draining", False)]
    if not active:
        raise RouteError("all-draining", "all %d mount targets are draining: there is no shard to route new "
                                         "files to" % len(targets))
    if strategy == MODULO_SHA256:
        return active[modulo_sha256(raw, len(active))]
    best: Optional[Tuple[int, bytes, int]] = None
    for i in active:
        root = _field(targets[i], "root", "/")
        key = (-rendezvous_score(root, normalised), root.encode("utf-8"), i)
        if best is None or key < best:
            best = key
    assert best is not None
    return best[2]


# ---------------------------------------------------------------------------------------------
# Layouts


def _relative_to(root: str, ancestor: str) -> Optional[str]:
    """``root`` relative to ``ancestor`` when ``ancestor`` is ``root`` or above it."""
    if ancestor == "/":
        return root.lstrip("/")
    if root == ancestor:
        return ""
    if root.startswith(ancestor + "/"):
        return root[len(ancestor) + 1:]
    return None


def _join(base: str, rel: str) -> str:
    return os.path.join(base, rel) if rel else base


@dataclass(frozen=True)
class Layout:
    """How the shards are mounted on this host: ``single_mount(base)`` (the file system root once,
    a file is ``<base>/<root>/<path>``) or ``per_target(mounts)`` (target i's ``ip:root`` at
    ``mounts[i]``, a file is ``<mounts[i]>/<path>``)."""

    base: Optional[str] = None
    mounts: Optional[Tuple[str, ...]] = None

    @classmethod
    def single_mount(cls, base: Union[str, os.PathLike[str]]) -> "Layout":
        return cls(base=os.fspath(base))

    @classmethod
    def per_target(cls, mounts: Sequence[Union[str, os.PathLike[str]]]) -> "Layout":
        return cls(mounts=tuple(os.fspath(m) for m in mounts))

    @classmethod
    def per_target_template(cls, template: str, n: int) -> "Layout":
        if "{i}" not in template:
            raise LayoutError("mount template %r has no '{i}' to put the target's index in" % template)
        return cls(mounts=tuple(template.replace("{i}", str(i)) for i in range(n)))

    def check(self, targets: Sequence[Target]) -> None:
        if self.mounts is not None and len(self.mounts) != len(targets):
            raise LayoutError("%d mounts for %d mount targets: a per-target layout needs one mount per target, "
                              "in list order" % (len(self.mounts), len(targets)))

    def shard_dir(self, targets: Sequence[Target], index: int) -> str:
        if self.mounts is not None:
            return self.mounts[index]
        assert self.base is not None
        return _join(self.base, targets[index].root.lstrip("/"))

    def real_path(self, targets: Sequence[Target], index: int, normalised: str) -> str:
        return os.path.join(self.shard_dir(targets, index), normalised)

    def move_paths(self, targets: Sequence[Target], src: int, dst: int, normalised: str) -> Optional[Tuple[str, str]]:
        """Source and destination through one mount that sees both shards (a link or rename between
        two mounts fails with EXDEV, even of one file system); None when no mount does."""
        if self.mounts is None:
            return self.real_path(targets, src, normalised), self.real_path(targets, dst, normalised)
        for k, t in enumerate(targets):
            a = _relative_to(targets[src].root, t.root)
            b = _relative_to(targets[dst].root, t.root)
            if a is not None and b is not None:
                return (os.path.join(_join(self.mounts[k], a), normalised),
                        os.path.join(_join(self.mounts[k], b), normalised))
        return None


# ---------------------------------------------------------------------------------------------
# Moving a file without replacing one (router/src/relocation.rs)
#
# rename(2) replaces its destination, and checking first leaves a window in which another
# client's file would be lost. link(2) fails with EEXIST instead, atomically, on NFS as on local
# disks; the source name is removed once the new name exists. A move cut short between the two
# leaves one file under two names, which the next attempt recognises (same inode) and finishes.
# Never a copy: the bytes do not move.

MOVED = "moved"  # the file is at the destination and no longer at the source
DESTINATION_TAKEN = "destination-taken"  # another file has the destination name; both left as they were
SOURCE_GONE = "source-gone"  # nothing at the source (moved or removed by another, or this move finished by another)

# What link(2) answers on a file system without hard links (ENOTSUP is EOPNOTSUPP on Linux, not everywhere).
_NO_HARD_LINKS = frozenset(e for e in (errno.EPERM, getattr(errno, "EOPNOTSUPP", None), getattr(errno, "ENOTSUP", None))
                           if e is not None)


# Rust's fs::hard_link does not follow a symbolic link at the source (linkat without AT_SYMLINK_FOLLOW).
_LINK_OPTIONS = {"follow_symlinks": False} if os.link in os.supports_follow_symlinks else {}


def _spelling(path: str) -> Tuple[bool, List[str]]:
    # Enough of Rust's Path equality to refuse "a//b" against "a/b" or "a/./b" (and "./a" against "a").
    return path.startswith("/"), [part for part in path.split("/") if part not in ("", ".")]


def relocate(src: Union[str, os.PathLike[str]], dst: Union[str, os.PathLike[str]]) -> str:
    """Moves ``src`` to ``dst`` (whose directory must exist), never replacing an existing ``dst``:
    ``link(src, dst)``, then ``unlink(src)``. Returns ``MOVED``, ``DESTINATION_TAKEN`` (``dst`` is
    another file; nothing was touched) or ``SOURCE_GONE`` (no ``src``: another client moved or
    removed it, or finished this very move). A move cut short between the link and the unlink
    (``src`` and ``dst`` the same inode) is finished; of racing movers, only the one whose unlink
    succeeds answers ``MOVED``. Where ``link`` answers EPERM or EOPNOTSUPP (no hard links), it
    checks ``dst`` and renames (a small window). Other failures raise ``OSError``; the same path
    as source and destination raises ``OSError(EINVAL)``."""
    src, dst = os.fspath(src), os.fspath(dst)
    if src == dst or _spelling(src) == _spelling(dst):
        raise OSError(errno.EINVAL, "%s is both source and destination" % src)
    try:
        os.link(src, dst, **_LINK_OPTIONS)
    except FileExistsError:
        same = _same_file(src, dst)
        if same is None:
            return SOURCE_GONE
        return _remove_source(src) if same else DESTINATION_TAKEN
    except FileNotFoundError:
        if not _lexists(src):
            return SOURCE_GONE
        raise
    except OSError as e:
        if e.errno not in _NO_HARD_LINKS:
            raise
        # File systems without hard links: check, then rename (a small window, documented).
        if _lexists(dst):
            return DESTINATION_TAKEN
        try:
            os.rename(src, dst)
        except FileNotFoundError:
            if not _lexists(src):
                return SOURCE_GONE
            raise
        return MOVED
    return _remove_source(src)


def _remove_source(src: str) -> str:
    try:
        os.unlink(src)
    except FileNotFoundError:
        # Another mover finished the same move first (the file is at the destination): the one
        # whose unlink succeeds reports the move, so racing movers count it once.
        return SOURCE_GONE
    return MOVED


def _same_file(src: str, dst: str) -> Optional[bool]:
    """None when ``src`` is gone."""
    try:
        s = os.lstat(src)
    except FileNotFoundError:
        return None
    d = os.lstat(dst)
    return s.st_dev == d.st_dev and s.st_ino == d.st_ino


def _lexists(path: str) -> bool:
    # Like os.path.lexists, but errors other than "not found" are errors.
    try:
        os.lstat(path)
        return True
    except FileNotFoundError:
        return False


# ---------------------------------------------------------------------------------------------
# File operations


class Resolved(NamedTuple):
    index: int  # type: ignore[assignment]  # the home shard's index in the list (shadows tuple.index)
    logical: str  # the normalised logical path
    real: str  # where the file is, or will be, on this host


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
    removed it first); ``left-elsewhere`` (found in shard ``index`` and left there, for ``reason``)."""

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


def _read_if_present(path: str) -> Optional[bytes]:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _temporary_name() -> str:
    # Random: many tasks share the file system, and each container's process may be pid 1.
    return ".efs-router-%s.tmp" % secrets.token_hex(8)


class _Snapshot:
    """A list checked against the layout, with what routing derives from it. Never changed:
    a refresh replaces the router's snapshot whole, and each operation keeps the one it began with."""

    __slots__ = ("list", "reserved")

    def __init__(self, mount_list: MountTargetList, layout: Layout):
        layout.check(mount_list.mount_targets)
        self.list = mount_list
        # Outer-root-relative directories of other shards: a path there would alias their files.
        self.reserved: List[Tuple[str, str]] = []
        roots = [t.root for t in mount_list.mount_targets]
        for outer in roots:
            for inner in roots:
                rel = _relative_to(inner, outer)
                if rel and all(r != rel for r, _ in self.reserved):
                    self.reserved.append((rel, inner))

    @property
    def targets(self) -> List[Target]:
        return self.list.mount_targets


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
        self._snapshot = _Snapshot(mount_list, layout)
        self._reload = reload
        self._refresh_seconds = refresh_seconds
        self._source = "the mount target list"
        self._clock = clock
        self._lock = threading.Lock()
        self._last_read = clock() if refresh_seconds is not None else 0.0

    @classmethod
    def from_ssm(cls, name: str, layout: Layout, refresh_seconds: Optional[float] = None, client: Any = None,
                 clock: Callable[[], float] = time.monotonic) -> "Router":
        """A router on the list published as the SSM parameter ``name`` (read now; an error here
        is raised). With ``refresh_seconds`` it re-reads the parameter with the same client when
        that many seconds have passed (see the module's documentation). ``client``: a boto3 SSM
        client; None makes ``boto3.client("ssm")`` (the ``ssm`` extra)."""
        if client is None:
            client = _ssm_client()
        ssm = client

        def reload() -> MountTargetList:
            return MountTargetList.from_ssm(name, ssm)

        began = clock()
        router = cls(reload(), layout, reload=reload if refresh_seconds is not None else None,
                     refresh_seconds=refresh_seconds, clock=clock)
        router._source = "SSM parameter %s" % name
        router._last_read = began
        return router

    @property
    def list(self) -> MountTargetList:
        """The list this router routes by now."""
        return self._snapshot.list

    @list.setter
    def list(self, mount_list: MountTargetList) -> None:
        self._snapshot = _Snapshot(mount_list, self.layout)

    @property
    def targets(self) -> List[Target]:
        return self._snapshot.targets

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
                # Set only now: until the attempt is over, other threads see it due and wait.
                self._last_read = began
                return
            if snapshot.list != self._snapshot.list:
                logger.info("efs_router: %s changed: now %d mount targets (%s)", self._source,
                            len(snapshot.targets), snapshot.list.strategy)
            self._snapshot = snapshot
            self._last_read = began

    def resolve(self, path: str) -> Resolved:
        return self._resolve(self._current(), path)

    def _resolve(self, s: _Snapshot, path: str) -> Resolved:
        logical = normalise(path)
        for rel, root in s.reserved:
            if _at_or_under(logical, rel):
                raise InsideAnotherShard(path, root)
        index = _index_of(path, logical, s.targets, s.list.strategy)
        return Resolved(index, logical, self.layout.real_path(s.targets, index, logical))

    @staticmethod
    def _others(s: _Snapshot, home: int) -> Iterator[int]:
        """Shards holding distinct directories other than home's: one per root, in list order."""
        t = s.targets
        for j in range(len(t)):
            if t[j].root != t[home].root and all(k.root != t[j].root for k in t[:j]):
                yield j

    def locate(self, path: str) -> Location:
        """Where ``path`` is now: home, elsewhere, or missing. Moves nothing."""
        s = self._current()
        home = self._resolve(s, path)
        return Location(home, self._find(s, home))

    def _find(self, s: _Snapshot, home: Resolved) -> Found:
        if _present(home.real):
            return Found("home")
        for j in self._others(s, home.index):
            real = self.layout.real_path(s.targets, j, home.logical)
            if _present(real):
                return Found("elsewhere", j, real)
        if _present(home.real):  # moved home by a concurrent read while we looked elsewhere
            return Found("home")
        return Found("missing")

    def exists(self, path: str) -> bool:
        """Whether ``path`` is in any shard: one stat at home; on a miss, one per other shard, then home again."""
        s = self._current()
        return self._find(s, self._resolve(s, path)).kind != "missing"

    def write(self, path: str, data: bytes) -> str:
        """Writes ``data`` as ``path`` in its home shard atomically (temporary name, fsync, rename).
        Creates missing directories; returns the real path."""
        home = self.resolve(path)
        directory = os.path.dirname(home.real)
        os.makedirs(directory, exist_ok=True)
        for attempt in range(9):
            tmp = os.path.join(directory, _temporary_name())
            try:
                fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666)
                break
            except FileExistsError:
                if attempt == 8:
                    raise
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
        """Reads ``path`` from home; on a miss from the first other shard that has it, and moves it
        home there by ``relocate`` (link, then unlink; never over a file at home). Raises
        ``NotFound`` when no shard has it."""
        s = self._current()
        home = self._resolve(s, path)
        data = _read_if_present(home.real)
        if data is not None:
            return ReadResult(data, HOME)
        for j in self._others(s, home.index):
            data = _read_if_present(self.layout.real_path(s.targets, j, home.logical))
            if data is None:
                continue
            place = self._move_home(s, j, home)
            if place is None:  # home gained a file (a write) since our miss: home is the truth
                newer = _read_if_present(home.real)
                if newer is not None:
                    return ReadResult(newer, HOME)
                return ReadResult(data, Place("left-elsewhere", j, "home changed while moving"))
            return ReadResult(data, place)
        data = _read_if_present(home.real)  # moved home by a concurrent read while we looked elsewhere
        if data is not None:
            return ReadResult(data, HOME)
        raise NotFound("%r: no such file in any shard" % path)

    def _move_home(self, s: _Snapshot, src_index: int, home: Resolved) -> Optional[Place]:
        """Moves the file from shard ``src_index`` home by ``relocate``. None when home already has
        a file of that name and the misplaced copy is still there."""
        paths = self.layout.move_paths(s.targets, src_index, home.index, home.logical)
        if paths is None:
            return Place("left-elsewhere", src_index, "no mount on this host sees both shards")
        src, dst = paths
        if src == dst:  # unreachable for distinct roots; never move a file onto itself
            return Place("left-elsewhere", src_index, "source and home are the same path")
        directory = os.path.dirname(dst)
        if directory:
            try:
                os.makedirs(directory, exist_ok=True)
            except OSError as e:
                return Place("left-elsewhere", src_index, "create directory %s: %s" % (directory, e))
        # Never replace a file at home: it is newer than the misplaced copy. relocate refuses
        # atomically (link, then unlink), so no check-then-rename window.
        try:
            outcome = relocate(src, dst)
        except OSError as e:
            return Place("left-elsewhere", src_index, "move %s to %s: %s" % (src, dst, e))
        if outcome == MOVED:
            return Place("moved-home", src_index)
        if outcome == SOURCE_GONE:
            return Place("moved-by-another", src_index)
        return None  # DESTINATION_TAKEN
