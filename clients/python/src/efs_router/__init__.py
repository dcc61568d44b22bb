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
list's shards, ``MountTargetList.shards()`` (or, when every mount target serves one shard, the
entries of the published list, as dicts parsed from JSON or ``Target``), ``strategy`` is
``"rendezvous"`` or ``"modulo-sha256"``; the answer is an index into ``targets``. A version 2
list (``"version": 2``) has mount targets serving several shards: route over its ``shards()``.

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
import stat
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

logger = logging.getLogger(__name__)

__all__ = [
    "RENDEZVOUS", "MODULO_SHA256", "STRATEGIES",
    "RouterError", "ListError", "PathError", "RouteError", "LayoutError", "InsideAnotherShard", "NotFound",
    "NotARegularFile",
    "Target", "MountTargetList", "MAX_LIST_SHARDS", "extra_root",
    "normalise", "shard_index", "modulo_sha256", "rendezvous_score",
    "Layout", "Resolved", "Found", "Location", "Place", "ReadResult", "Router",
    "MOVED", "REPLACED_OLDER", "DROPPED_OLDER", "SOURCE_GONE", "relocate", "is_private_name", "revalidate_dir",
]

RENDEZVOUS = "rendezvous"
MODULO_SHA256 = "modulo-sha256"
STRATEGIES = (RENDEZVOUS, MODULO_SHA256)


# ---------------------------------------------------------------------------------------------
# Errors


class RouterError(Exception):
    """Base of every error this module raises on purpose."""


class ListError(RouterError, ValueError):
    """The published list was refused. ``kind`` names the rule, as ``tests/vectors/lists.json`` spells it:
    not-a-list, duplicate-key, bad-version, shards-need-version, bad-shards, empty-id, duplicate-id, bad-root,
    reserved-root, duplicate-root or nested-root."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class PathError(RouterError, ValueError):
    """A logical path was refused. ``kind``: empty, nul, empty-component, escapes-root or reserved-name (a
    component that is one of the router's own names), and not-unicode, for a str with a lone surrogate,
    which Rust's strings cannot hold."""

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


class NotARegularFile(RouterError, OSError):
    """A copy that is a symbolic link, FIFO, device, socket or directory: not data, left alone. ``path``
    names it, ``what`` says what it is. Raised for the home copy of a read and for either side of a move."""

    def __init__(self, path: str, what: str):
        super().__init__(errno.EINVAL, "%s is a %s, not a regular file: not data, left alone" % (path, what))
        self.path = path
        self.what = what

    def __str__(self) -> str:
        return "%s is a %s, not a regular file: not data, left alone" % (self.path, self.what)


# ---------------------------------------------------------------------------------------------
# The published list


# The most shards one list may describe (router/src/list.rs).
MAX_LIST_SHARDS = 1000

_U32_MAX = 0xFFFFFFFF


def extra_root(az_id: str, k: int) -> str:
    """The root of a mount target's ``k``-th shard (k >= 1; its first is its ``root``): ``/shards/<az_id>.<k>``."""
    return "/shards/%s.%d" % (az_id, k)


@dataclass(frozen=True)
class Target:
    """One mount target as clients see it. ``root`` is its (first) shard's directory in the file system.

    Version 2: it serves ``shards`` shards, ``root`` then ``/shards/<az_id>.<k>`` for k = 1 ... shards - 1
    (``shard_roots()``); the last ``draining_shards`` of them drain (all of them with ``draining``)."""

    id: str
    ip: str
    az: Optional[str] = None
    az_id: Optional[str] = None
    subnet_id: Optional[str] = None
    root: str = "/"
    draining: bool = False
    shards: int = 1
    draining_shards: int = 0

    @classmethod
    def from_dict(cls, d: Mapping[str, Any], index: int = 0) -> "Target":
        if not isinstance(d, Mapping):
            raise ListError("not-a-list", "not a mount target list: mount target %d is not an object" % index)

        def text(key: str, required: bool = False, nullable: bool = True, default: Any = None) -> Any:
            if key not in d:
                if required:
                    raise ListError("not-a-list", "not a mount target list: mount target %d has no %r" % (index, key))
                return default
            v = d[key]
            if v is None and nullable:
                return default
            if not isinstance(v, str):
                raise ListError("not-a-list",
                                "not a mount target list: mount target %d: %r is not a string" % (index, key))
            return v

        def count(key: str, default: int) -> int:
            # As serde_json reads a u32: an integer from 0 to 2**32 - 1; not null, a float (2.0, -0) or a bool.
            if key not in d:
                return default
            v = d[key]
            if type(v) is not int or not 0 <= v <= _U32_MAX:
                raise ListError("not-a-list", "not a mount target list: mount target %d: %r is not a whole number "
                                              "from 0 to %d" % (index, key, _U32_MAX))
            return v

        draining = d.get("draining", False)
        if not isinstance(draining, bool):
            raise ListError("not-a-list",
                            "not a mount target list: mount target %d: 'draining' is not true or false" % index)
        return cls(
            id=text("id", required=True, nullable=False),
            ip=text("ip", required=True, nullable=False),
            az=text("az"),
            az_id=text("az_id"),
            subnet_id=text("subnet_id"),
            root=text("root", nullable=False, default="/"),
            draining=draining,
            shards=count("shards", 1),
            draining_shards=count("draining_shards", 0),
        )

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"id": self.id, "ip": self.ip}
        for key in ("az", "az_id", "subnet_id"):
            if getattr(self, key) is not None:
                d[key] = getattr(self, key)
        d["root"] = self.root
        if self.draining:
            d["draining"] = True
        if self.shards != 1:
            d["shards"] = self.shards
        if self.draining_shards != 0:
            d["draining_shards"] = self.draining_shards
        return d

    def shard_roots(self) -> List[str]:
        """The roots of its shards: ``root``, then ``/shards/<az_id>.<k>`` for k = 1 ... shards - 1."""
        return [self.root if k == 0 else extra_root(self.az_id or "", k) for k in range(max(1, self.shards))]

    def shard_draining(self, k: int) -> bool:
        """Whether its ``k``-th shard drains: the whole target does, or k is among its last ``draining_shards``."""
        return self.draining or k >= max(0, self.shards - self.draining_shards)


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
        """Parses and checks every form (``validate``). Unknown top-level keys, and a key repeated in any
        object of the document, are refused, exactly as the Rust library refuses them. ``version`` is 1 (or
        absent, or null), where every entry serves one shard, or 2."""
        raw = _load_json(text)
        if not isinstance(raw, dict) or "mount_targets" not in raw:
            raise ListError("not-a-list", "not a mount target list: no 'mount_targets'")
        unknown = sorted(set(raw) - {"mount_targets", "strategy", "version"})
        if unknown:
            raise ListError("not-a-list", "not a mount target list: unknown field %r" % unknown[0])
        entries = raw["mount_targets"]
        if not isinstance(entries, list):
            raise ListError("not-a-list", "not a mount target list: 'mount_targets' is not an array")
        strategy = raw.get("strategy")
        if strategy is None:
            strategy = MODULO_SHA256
        if strategy not in STRATEGIES:
            raise ListError("not-a-list", "not a mount target list: unknown strategy %r" % (strategy,))
        version = raw.get("version")
        if version is not None and (type(version) is not int or not 0 <= version <= _U32_MAX):
            raise ListError("not-a-list", "not a mount target list: 'version' is not a whole number from 0 to %d"
                            % _U32_MAX)
        ml = cls([Target.from_dict(e, i) for i, e in enumerate(entries)], strategy)
        if version is None or version == 1:
            for t in ml.mount_targets:
                if t.shards != 1 or t.draining_shards != 0:
                    raise ListError("shards-need-version",
                                    "mount target %s has \"shards\" or \"draining_shards\", which only a version 2 "
                                    "list may have (clients before version 2 would route by its root alone)" % t.id)
        elif version != 2:
            raise ListError("bad-version", "not a mount target list: version %d is not 1 or 2" % version)
        ml.validate()
        return ml

    def needs_version_2(self) -> bool:
        """Some target serves more than one shard, or drains some of them."""
        return any(t.shards != 1 or t.draining_shards != 0 for t in self.mount_targets)

    def shards(self) -> List[Target]:
        """Every shard, in list order (each target's ``root`` first, then its ``/shards/<az_id>.<k>``): each a copy
        of its target's entry with the shard's root, ``draining`` when that shard drains, and one shard. Routing,
        layouts and moves all work on this form."""
        return [replace(t, root=root, draining=t.shard_draining(k), shards=1, draining_shards=0)
                for t in self.mount_targets for k, root in enumerate(t.shard_roots())]

    def shard_count(self) -> int:
        """How many shards the list describes."""
        return sum(max(1, t.shards) for t in self.mount_targets)

    def validate(self) -> None:
        """The rules every list obeys, in this order (router/README.md, "The published list"): each entry in
        list order has a non-empty id not seen before and sane shard counts (``shards`` >= 1; ``draining_shards``
        < ``shards``; more than one shard needs an ``az_id`` and ``rendezvous``; at most ``MAX_LIST_SHARDS`` in
        all); then each shard in list order (``shards()``) has a clean absolute root with no component starting
        with ``.``; then, for each pair of shards (the later one in list order, then the earlier), their roots
        are not the same (except ``/`` when every root is ``/``, or in a ``modulo-sha256`` list) and neither
        lies inside the other (except ``/shards/<name>...`` inside ``/``). Raises ``ListError``."""
        seen = set()
        total = 0
        for i, t in enumerate(self.mount_targets):
            if not t.id:
                raise ListError("empty-id", "mount target %d has an empty id" % i)
            if t.id in seen:
                raise ListError("duplicate-id", "mount target %s is listed twice" % t.id)
            seen.add(t.id)
            why = None
            if t.shards < 1:
                why = '"shards" is %d: a mount target in the list serves at least one shard' % t.shards
            elif not 0 <= t.draining_shards < t.shards:
                why = '"draining_shards" must be fewer than "shards" (a whole target drains with "draining")'
            elif t.shards > 1 and not t.az_id:
                why = 'more than one shard needs an "az_id": its shards are /shards/<az_id>.<k>'
            elif t.shards > 1 and self.strategy != RENDEZVOUS:
                why = "more than one shard needs strategy rendezvous"
            else:
                total += t.shards
                if total > MAX_LIST_SHARDS:
                    why = "the list has more than %d shards" % MAX_LIST_SHARDS
            if why is not None:
                raise ListError("bad-shards", "mount target %s: %s" % (t.id, why))
        targets = self.shards()
        for t in targets:
            if not root_is_valid(t.root):
                raise ListError("bad-root", "mount target %s has root %s: a root must be absolute, without '..', "
                                            "'.', empty parts or NUL" % (t.id, _quoted(t.root)))
            if any(part.startswith(".") for part in t.root.split("/")):
                raise ListError("reserved-root", "mount target %s has root %s: a component starting with '.' is "
                                                 "reserved (the function keeps its state in /.efs-mount-autoscaler)"
                                % (t.id, _quoted(t.root)))
        slash_may_repeat = self.strategy == MODULO_SHA256 or all(t.root == "/" for t in targets)
        for j, later in enumerate(targets):
            for earlier in targets[:j]:
                if earlier.root == later.root:
                    if earlier.root == "/" and slash_may_repeat:
                        continue
                    if earlier.id == later.id:
                        raise ListError("duplicate-root", "mount target %s has root %s twice (its root and one of "
                                                          "its /shards/<az_id>.<k>): one directory cannot be two "
                                                          "shards" % (later.id, later.root))
                    raise ListError("duplicate-root", "mount targets %s and %s both have root %s: one directory "
                                                      "cannot be two shards (only the original form repeats /)"
                                    % (earlier.id, later.id, later.root))
                if _lies_inside(later.root, earlier.root):
                    outer, inner = earlier, later
                elif _lies_inside(earlier.root, later.root):
                    outer, inner = later, earlier
                else:
                    continue
                if outer.root == "/" and inner.root.startswith("/shards/"):
                    continue
                raise ListError("nested-root", "mount target %s has root %s, inside root %s of mount target %s: "
                                               "shard directories must not nest (only /shards/<name> may lie under /)"
                                % (inner.id, inner.root, outer.root, outer.id))

    def to_json(self) -> str:
        """The document, as the Rust library writes it: ``"version": 2`` only when some target serves more than
        one shard or drains some (``needs_version_2``), so that a list older clients can route is always written
        in the form they read."""
        doc: Dict[str, Any] = {"mount_targets": [t.to_dict() for t in self.mount_targets], "strategy": self.strategy}
        if self.needs_version_2():
            doc["version"] = 2
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)

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
            raise ListError("not-a-list", "not a mount target list: SSM parameter %s has no string value" % name)
        return cls.from_json(value)


def _quoted(text: str) -> str:
    # As Rust's {:?} shows a string: in double quotes (the roots here are ASCII in every case that matters).
    return json.dumps(text, ensure_ascii=False)


def _lies_inside(inner: str, outer: str) -> bool:
    """Whether the clean root ``inner`` lies strictly inside the clean root ``outer``."""
    if outer == "/":
        return inner != "/"
    return inner.startswith(outer + "/")


# serde_json, which the Rust library parses with, refuses a document nested deeper than this.
_MAX_NESTING = 127


def _no_repeated_keys(pairs: List[Tuple[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


class _RepeatedKey(Exception):
    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("number out of range: %s" % text)
    return value


def _finite_int(text: str) -> Union[int, float]:
    if text == "-0":
        return -0.0  # serde_json reads -0 as a float: not an integer where one is expected
    value = int(text)
    try:
        float(value)
    except OverflowError:
        raise ValueError("number out of range: %s" % text) from None
    return value


def _no_constant(name: str) -> Any:
    raise ValueError("%s is not JSON" % name)


def _load_json(text: Union[str, bytes]) -> Any:
    """``json.loads``, refusing what serde_json refuses: a key repeated in one object (``duplicate-key``),
    NaN and Infinity, numbers beyond a double, lone surrogates, nesting deeper than 127 (``not-a-list``)."""
    try:
        raw = json.loads(text, object_pairs_hook=_no_repeated_keys, parse_constant=_no_constant,
                         parse_float=_finite, parse_int=_finite_int)
    except _RepeatedKey as e:
        raise ListError("duplicate-key", "not a mount target list: the key %s appears twice in one object"
                        % _quoted(e.key)) from None
    except (ValueError, RecursionError) as e:
        raise ListError("not-a-list", "not a mount target list: %s" % e) from None
    stack: List[Tuple[Any, int]] = [(raw, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ListError("not-a-list", "not a mount target list: a lone surrogate in a string") from None
        elif isinstance(value, (dict, list)):
            if depth > _MAX_NESTING:
                raise ListError("not-a-list", "not a mount target list: nested deeper than %d" % _MAX_NESTING)
            items = list(value.items()) if isinstance(value, dict) else [(None, v) for v in value]
            for key, item in items:
                if key is not None:
                    stack.append((key, depth))
                stack.append((item, depth + 1))
    return raw


def _ssm_client() -> Any:
    try:
        import boto3
    except ImportError as e:
        raise ImportError("efs_router: reading the list from SSM needs boto3, which is not installed; install "
                          "the package with its 'ssm' extra (pip install \"./clients/python[ssm]\") or pass "
                          "client=", name="boto3") from e
    return boto3.client("ssm")


# ---------------------------------------------------------------------------------------------
# The router's own names (router/src/names.rs)

_PRIVATE_PREFIX = ".efs-router-"
_PRIVATE_SUFFIXES = {".tmp": "temporary", ".moving": "moving"}
_HEX = frozenset("0123456789abcdef")


def is_private_name(name: Union[str, bytes]) -> bool:
    """Whether ``name`` (one path component) is one of the router's own names: ``.efs-router-`` then 16
    lowercase hexadecimal digits then ``.tmp`` (a write in progress) or ``.moving`` (a move in progress).
    Such names are never counted, moved or routed."""
    if isinstance(name, bytes):
        try:
            name = name.decode("ascii")
        except UnicodeDecodeError:
            return False
    if not name.startswith(_PRIVATE_PREFIX):
        return False
    rest = name[len(_PRIVATE_PREFIX):]
    return len(rest) > 16 and all(c in _HEX for c in rest[:16]) and rest[16:] in _PRIVATE_SUFFIXES


def _private_name(suffix: str) -> str:
    # Random: many tasks share the file system, and each container's process may be pid 1.
    return _PRIVATE_PREFIX + secrets.token_hex(8) + suffix


# ---------------------------------------------------------------------------------------------
# Logical paths


def normalise(path: str) -> str:
    """Checks and normalises a logical path (router/README.md, "Logical paths").

    One leading ``/`` is dropped; ``.`` parts are dropped; ``..`` removes the part before it.
    Refused with ``PathError``: a NUL byte (``nul``), an empty part such as ``a//b`` or ``a/``
    (``empty-component``), a ``..`` that would leave the root (``escapes-root``), a path
    that normalises to nothing (``empty``), and one with a part, once normalised, that is one of the
    router's own names (``reserved-name``, see ``is_private_name``).
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
    for part in out:
        if is_private_name(part):
            raise PathError("reserved-name", path, "has the component %r, a name the router keeps for its own "
                                                   "temporary files (.efs-router-<16 hex digits>.tmp or .moving)"
                            % part)
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
    """The index in ``targets`` (the list's shards in order, ``MountTargetList.shards()``; not its entries when a
    mount target serves several) of the shard that ``path`` belongs to.

    ``path`` is checked and normalised for both strategies; ``rendezvous`` hashes the normalised
    path, ``modulo-sha256`` the path exactly as given (as the original did). Draining shards
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
        raise RouteError("all-draining", "all %d shards are draining: there is no shard to route new files to"
                         % len(targets))
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
    a file is ``<base>/<root>/<path>``) or ``per_target(mounts)`` (one mount per shard: shard i's ``ip:root``
    at ``mounts[i]``, a file is ``<mounts[i]>/<path>``). Shard i is the i-th of ``MountTargetList.shards()``;
    every ``targets`` argument below is that list of shards."""

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
        """One mount per shard from a template such as ``/mnt/efs-{i}``, for ``n`` shards (``shard_count()``)."""
        if "{i}" not in template:
            raise LayoutError("mount template %r has no '{i}' to put the shard's position in" % template)
        return cls(mounts=tuple(template.replace("{i}", str(i)) for i in range(n)))

    def check(self, shards: Sequence[Target]) -> None:
        """Checks that the layout can serve ``shards`` (the list's ``shards()``)."""
        if self.mounts is not None and len(self.mounts) != len(shards):
            raise LayoutError("%d mounts for %d shards: a per-target layout needs one mount per shard (its ip:root), "
                              "in the list's shard order" % (len(self.mounts), len(shards)))

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
# Moving a file home (router/src/relocation.rs)
#
# The latest version wins ("newer": the modification time, to the nanosecond; the destination wins a tie),
# and what a move removes is always the file it looked at. link(src, dst) makes the name if it is free
# (atomically, on NFS as on local disks); the source is then *retired*: renamed to a private name
# (.efs-router-<16 hex>.moving) in its directory, looked at, and unlinked if it is the file expected; a
# different file there is a version a writer renamed over the source meanwhile, which ends at dst if it is
# newer than what dst holds. A dst that exists is compared: as new or newer, the source is an older copy
# and is retired; older, the source replaces it (linked to a private name beside dst, dst looked at once
# more, the private name renamed over dst). Never a copy: the bytes do not move.

MOVED = "moved"  # the file is at the destination and no longer at the source
REPLACED_OLDER = "replaced-older"  # the destination held an older file; the source replaced it
DROPPED_OLDER = "dropped-older"  # the destination held a file as new or newer; the source was removed
SOURCE_GONE = "source-gone"  # nothing at the source (moved or removed by another, or this move finished by another)

# What link(2) answers on a file system without hard links (ENOTSUP is EOPNOTSUPP on Linux, not everywhere).
_NO_HARD_LINKS = frozenset(e for e in (errno.EPERM, getattr(errno, "EOPNOTSUPP", None), getattr(errno, "ENOTSUP", None))
                           if e is not None)

# Rust's fs::hard_link does not follow a symbolic link at the source (linkat without AT_SYMLINK_FOLLOW).
_LINK_OPTIONS = {"follow_symlinks": False} if os.link in os.supports_follow_symlinks else {}

# How many times a move looks again at a destination that other clients keep changing under it.
_ROUNDS = 8


def _spelling(path: str) -> Tuple[bool, List[str]]:
    # Enough of Rust's Path equality to refuse "a//b" against "a/b" or "a/./b" (and "./a" against "a").
    return path.startswith("/"), [part for part in path.split("/") if part not in ("", ".")]


def _what(st: os.stat_result) -> Optional[str]:
    """None for a regular file; otherwise what it is, as Rust names it."""
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISLNK, "symbolic link"), (stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return what
    return "special file"


def _regular(st: os.stat_result, path: str) -> None:
    what = _what(st)
    if what is not None:
        raise NotARegularFile(path, what)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return a.st_dev == b.st_dev and a.st_ino == b.st_ino


def _newer(a: os.stat_result, b: os.stat_result) -> bool:
    return a.st_mtime_ns > b.st_mtime_ns


def _look(path: str) -> Optional[os.stat_result]:
    """lstat: None when nothing is there; errors other than "not found" are errors."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def revalidate_dir(path: Union[str, os.PathLike[str]]) -> bool:
    """Makes the next lookup of any name in the directory ``path`` answer as the server does now, not as this
    NFS client's name cache remembers (router/src/cache.rs): opening a directory makes the client fetch its
    attributes, and a directory that changed drops its cached lookups, found or missing. One round trip, plus a
    LOOKUP for each name then looked up in a directory that changed. False when ``path`` is not there, even
    after its parents were revalidated the same way (a directory another client made is found at once)."""
    path = os.fspath(path)
    for attempt in range(2):
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            return True
        except FileNotFoundError:
            # Missing, maybe only in this client's cache of the parent: ask the parent first.
            parent = os.path.dirname(path.rstrip("/"))
            if attempt or not parent or parent == path or not revalidate_dir(parent):
                return False
    return False


def _fresh_look(path: str) -> Optional[os.stat_result]:
    """_look, as the server answers now: ``path``'s directory revalidated first."""
    if not revalidate_dir(_parent(path)):
        return None
    return _look(path)


def _parent(path: str) -> str:
    return os.path.dirname(path) or "."


def _beside(path: str) -> str:
    """A fresh .efs-router-<16 hex>.moving in ``path``'s directory."""
    return os.path.join(_parent(path), _private_name(".moving"))


def _remove_private(p: str) -> None:
    try:
        os.unlink(p)
    except FileNotFoundError:
        pass


def _same_entry(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one directory entry: the same name in the same directory (by device and
    inode, so d/../d/f is d/f)."""
    name_a, name_b = os.path.basename(a), os.path.basename(b)
    if not name_a or not name_b or name_a in (".", "..") or name_b in (".", ".."):
        return True
    if name_a != name_b:
        return False
    return _same_file(os.stat(_parent(a)), os.stat(_parent(b)))


def _same_entry_error(src: str, dst: str) -> OSError:
    return OSError(errno.EINVAL, "%s and %s are one file: a move onto itself would remove its only name" % (src, dst))


def _changing(dst: str) -> OSError:
    return OSError(errno.EAGAIN, "%s: changed %d times while a move looked at it; the source was left as it was"
                   % (dst, _ROUNDS))


def relocate(src: Union[str, os.PathLike[str]], dst: Union[str, os.PathLike[str]]) -> str:
    """Moves ``src`` to ``dst`` (whose directory must exist), within one file system: the newer of the two
    versions ends at ``dst`` (``dst`` wins a tie), and the source name is gone. Returns ``MOVED`` (``dst``
    had no file, or this very file: a move cut short, finished), ``REPLACED_OLDER``, ``DROPPED_OLDER`` or
    ``SOURCE_GONE`` (no ``src``: another client moved or removed it, or finished this very move). Of racing
    movers, one reports what was done and the others ``SOURCE_GONE``.

    Raises ``NotARegularFile`` when ``src`` or ``dst`` is a symbolic link, FIFO, device, socket or directory
    (nothing is moved), ``OSError(EINVAL)`` when they are one directory entry however spelled (``./a`` and
    ``a``, ``d/../d/f`` and ``d/f``) or either is named as one of the router's own files (``is_private_name``),
    and the file system's own errors (``dst``'s directory missing:
    ``FileNotFoundError``). Where ``link`` answers EPERM or EOPNOTSUPP (no hard links), it looks at ``dst``
    and renames (a small window). The rules: router/README.md, "Moving a file home"."""
    return _relocate(os.fspath(src), os.fspath(dst), None)


def _relocate(src: str, dst: str, known: Optional[os.stat_result]) -> str:
    if src == dst or _spelling(src) == _spelling(dst):
        raise _same_entry_error(src, dst)
    for path in (src, dst):
        if is_private_name(os.path.basename(path)):
            raise OSError(errno.EINVAL, "%s: a name of the router's own, never moved" % path)
    s = known if known is not None else _fresh_look(src)
    if s is None:
        return SOURCE_GONE
    _regular(s, src)
    try:
        if not _link_unless_gone(src, dst):
            return SOURCE_GONE
    except FileExistsError:
        return _settle(src, dst, s)
    except OSError as e:
        if e.errno not in _NO_HARD_LINKS:
            raise
        return _without_links(src, dst, s)
    return _retire(src, dst, s, MOVED)


def _link_unless_gone(src: str, dst: str) -> bool:
    """Links ``src`` at ``dst`` (never replacing a file there: ``FileExistsError``); False when ``src`` is gone,
    which means another mover finished first."""
    try:
        os.link(src, dst, **_LINK_OPTIONS)
    except FileNotFoundError:
        if _look(src) is None:
            return False
        raise
    return True


def _settle(src: str, dst: str, s: os.stat_result) -> str:
    """``dst`` exists: the same file (a move cut short), an older one, or a newer one."""
    for _ in range(_ROUNDS):
        d = _fresh_look(dst)  # the link's "exists" is the server's; this client's cache may be older
        if d is None:  # removed since the link found it: link again
            try:
                if not _link_unless_gone(src, dst):
                    return SOURCE_GONE
            except FileExistsError:
                continue
            return _retire(src, dst, s, MOVED)
        if _same_file(d, s):  # two names of one file: a move cut short, unless they are one name
            if _same_entry(src, dst):
                raise _same_entry_error(src, dst)
            return _retire(src, dst, s, MOVED)
        _regular(d, dst)
        if _newer(s, d):
            return _replace(src, dst, s)
        return _retire(src, dst, s, DROPPED_OLDER)
    raise _changing(dst)


def _replace(src: str, dst: str, s: os.stat_result) -> str:
    """The source is newer than ``dst``: link it to a private name beside ``dst``, look at ``dst`` once more,
    rename the private name over it, then retire the source."""
    q = _beside(dst)
    try:
        if not _link_unless_gone(src, q):
            return SOURCE_GONE
    except OSError as e:
        if e.errno not in _NO_HARD_LINKS:
            raise
        return _without_links(src, dst, s)
    try:
        linked = _look(q)  # what was linked: a writer may have put a new version at the source since
        if linked is None:
            raise OSError(errno.ENOENT, "%s: removed by another client while moving %s there" % (q, src))
        _regular(linked, src)
        # The last look before the rename, as the server answers: between it and the rename, a write landing
        # at dst would be replaced (router/README.md, "What is left to chance").
        now = _fresh_look(dst)
        if now is None:
            go, outcome = True, MOVED
        elif _same_file(now, linked):
            go, outcome = False, MOVED
        else:
            _regular(now, dst)
            go, outcome = _newer(linked, now), REPLACED_OLDER
        if go:
            os.rename(q, dst)
            # When dst was already this very file (another mover placed it meanwhile), rename does nothing and
            # the private name stays: remove it.
            _remove_private(q)
        else:
            _remove_private(q)
            outcome = MOVED if outcome == MOVED else DROPPED_OLDER
    except BaseException:
        try:
            os.unlink(q)
        except OSError:
            pass
        raise
    return _retire(src, dst, linked, outcome)


def _retire(src: str, dst: str, expected: os.stat_result, outcome: str) -> str:
    """Removes the source by a name no writer uses: renames it into a private directory made for this move
    beside it (``.efs-router-<16 hex>.moving/``, keeping its name), asks the server what the rename took (a
    listing of that directory), and unlinks it if it is ``expected``. Over NFS an lstat of the renamed name
    answers from this client's cache, which may still hold the version it looked at while the rename took a
    newer one a writer put there; the listing is the server's answer and refreshes that entry (router/src/
    relocation.rs). The mover whose rename succeeds reports ``outcome``; one that finds the source gone
    reports ``SOURCE_GONE``."""
    name = os.path.basename(src)
    pd = _beside(src)
    try:
        os.mkdir(pd)
    except FileNotFoundError:  # the source's directory is gone, and the source with it
        return SOURCE_GONE
    p = os.path.join(pd, name)
    try:
        try:
            os.rename(src, p)
        except FileNotFoundError:
            return SOURCE_GONE
        return _settle_taken(src, dst, pd, p, expected, outcome)
    finally:
        try:  # empty unless a step failed with the file still in it: then it stays for the next move
            os.rmdir(pd)
        except OSError:
            pass


def _settle_taken(src: str, dst: str, pd: str, p: str, expected: os.stat_result, outcome: str) -> str:
    name = os.path.basename(p)
    with os.scandir(pd) as listing:
        ino = next((e.inode() for e in listing if e.name == name), None)
    if ino is None:
        return outcome
    taken = _look(p)
    if ino == expected.st_ino and taken is not None and _same_file(taken, expected):
        _remove_private(p)
        return outcome
    # A writer renamed a new version over the source after it was looked at; the listing refreshed this
    # client's entry for it, so lstat now answers for that version.
    if taken is None:
        return outcome
    if taken.st_ino != ino:  # the cache still disagrees with the server: decide nothing, leave it there
        raise OSError(errno.EIO, "%s: this client's cache and the server disagree on the file taken from %s; "
                      "left there" % (p, src))
    what = _what(taken)
    if what is not None:  # not data, and not ours: give the name back if it is still free
        try:
            os.link(p, src, **_LINK_OPTIONS)
            os.unlink(p)
        except OSError:
            pass
        raise NotARegularFile(src, what)
    placed = _place(p, taken, dst)
    return REPLACED_OLDER if outcome == DROPPED_OLDER and placed else outcome


def _place(p: str, taken: os.stat_result, dst: str) -> bool:
    """The private file ``p`` holds the version ``taken``: it ends at ``dst`` if ``dst`` has no file or an
    older one; otherwise it is removed. True when it was placed."""
    for _ in range(_ROUNDS):
        d = _fresh_look(dst)
        if d is None:
            try:
                os.link(p, dst, **_LINK_OPTIONS)
            except FileExistsError:
                continue
            except OSError as e:
                if e.errno not in _NO_HARD_LINKS:
                    raise
                os.rename(p, dst)
                return True
            _remove_private(p)
            return True
        if _same_file(d, taken):
            _remove_private(p)
            return True
        _regular(d, dst)
        if _newer(taken, d):
            os.rename(p, dst)
            _remove_private(p)  # left by rename if dst became this file meanwhile
            return True
        _remove_private(p)
        return False
    raise _changing(dst)


def _without_links(src: str, dst: str, s: os.stat_result) -> str:
    """File systems without hard links: look at ``dst``, then rename (a window between the two, documented);
    an older source is retired as usual."""
    d = _fresh_look(dst)
    if d is None:
        outcome, replace = MOVED, True
    elif _same_file(d, s):
        if _same_entry(src, dst):
            raise _same_entry_error(src, dst)
        return _retire(src, dst, s, MOVED)
    else:
        _regular(d, dst)
        outcome, replace = REPLACED_OLDER, _newer(s, d)
    if not replace:
        return _retire(src, dst, s, DROPPED_OLDER)
    try:
        os.rename(src, dst)
    except FileNotFoundError:
        if _look(src) is None:
            return SOURCE_GONE
        raise
    return outcome


# ---------------------------------------------------------------------------------------------
# File operations


class Resolved(NamedTuple):
    index: int  # type: ignore[assignment]  # the home shard's position in shards() (shadows tuple.index)
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


def _probe(paths: Sequence[str], check: Callable[[str], T]) -> List[Union[T, BaseException]]:
    """``check`` of each path, in their order: at once (up to ``PROBE_THREADS`` threads) when there are
    several, since over NFS each is a round trip and they do not wait on one another. An exception is
    returned in its place."""
    def one(path: str) -> Union[T, BaseException]:
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
                # Set only now: until the attempt is over, other threads see it due and wait.
                self._last_read = began
                return
            if snapshot.list != self._snapshot.list:
                logger.info("efs_router: %s changed: now %d mount targets, %d shards (%s)", self._source,
                            len(snapshot.list.mount_targets), len(snapshot.shards), snapshot.list.strategy)
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
        """Where ``path`` is now: home, elsewhere, or missing. Moves nothing. Every answer is the server's, never
        this client's name cache: each directory it answers from is revalidated first (``revalidate_dir``)."""
        s = self._current()
        home = self._resolve(s, path)
        return Location(home, self._find(s, home, fresh_hit=True))

    def _find(self, s: _Snapshot, home: Resolved, fresh_hit: bool) -> Found:
        if not fresh_hit and _present(home.real):
            return Found("home")
        # A miss may be this client's cache remembering a name missing that another client has written since.
        if _fresh_present(home.real):
            return Found("home")
        # The other shards are looked at all at once, as a fallback read does.
        others = list(self._others(s, home.index))
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
        """Whether ``path`` is in any shard: one stat at home; on a miss, home's directory revalidated and home
        looked at again, then each other shard the same way (at once), then home once more."""
        s = self._current()
        return self._find(s, self._resolve(s, path), fresh_hit=False).kind != "missing"

    def write(self, path: str, data: bytes) -> str:
        """Writes ``data`` as ``path`` in its home shard atomically (temporary name, fsync, rename).
        Creates missing directories; returns the real path."""
        home = self.resolve(path)
        directory = os.path.dirname(home.real)
        # The directory is made only when the create finds it missing: over NFS making it first would
        # cost a round trip on every write.
        try:
            tmp, fd = _create_temporary(directory)
        except FileNotFoundError:
            # Missing, or only missing in this client's cache (another client made it): a mkdir would answer
            # "exists" while the cache still says "missing".
            if not revalidate_dir(directory):
                os.makedirs(directory, exist_ok=True)
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
        """Reads ``path`` from home (one open: no look before it). On a miss, opens it in every other shard at
        once (a thread each), reads the newest copy (modification time; a tie goes to the shard earlier in the
        list) and moves it home by ``relocate``. Copies are opened with O_NOFOLLOW | O_NONBLOCK and checked
        with fstat: at home, anything but a regular file raises ``NotARegularFile``; elsewhere it is skipped.
        Raises ``NotFound`` when no shard has it."""
        s = self._current()
        home = self._resolve(s, path)
        opened = _open_copy(home.real)
        if opened is None:  # a miss is confirmed against the server before any other shard is searched
            opened = _fresh_open(home.real)
        if opened is not None:
            return ReadResult(_read_opened(opened), HOME)
        others = list(self._others(s, home.index))
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
                    if not revalidate_dir(directory):  # made by another client, or really missing
                        os.makedirs(directory, exist_ok=True)
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
