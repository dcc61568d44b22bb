"""The published list (router/src/list.rs): mount targets, their shards, and the rules every list obeys.

Version 3 adds ``"open"``: the earlier placements whose files may still be away from home (``Placement``), or
``"everywhere"`` (``EVERYWHERE``) when that is not known. Where a miss looks by it: placement.py."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from .errors import ListError
from .ssm import _read_parameter

RENDEZVOUS = "rendezvous"
MODULO_SHA256 = "modulo-sha256"
STRATEGIES = (RENDEZVOUS, MODULO_SHA256)

# The most shards one list may describe (router/src/list.rs).
MAX_LIST_SHARDS = 1000

_U32_MAX = 0xFFFFFFFF

EVERYWHERE = "everywhere"
"""``"open": "everywhere"``: the open placements are not known, a miss looks in every shard (as in versions 1, 2)."""


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


_ABSENT: Any = object()


def _u32(value: Any, default: int, what: str) -> int:
    """A count as serde_json reads a u32: an integer from 0 to 2**32 - 1; not null, a float (2.0, -0) or a bool."""
    if value is _ABSENT:
        return default
    if type(value) is not int or not 0 <= value <= _U32_MAX:
        raise ListError("not-a-list", "not a mount target list: %s is not a whole number from 0 to %d"
                        % (what, _U32_MAX))
    return value


@dataclass(frozen=True)
class Placed:
    """One mount target's shards in a placement (router/src/placement.rs): ``root``, then ``/shards/<az_id>.<k>``
    for k = 1 ... shards - 1, as a list entry names them."""

    root: str
    az_id: Optional[str] = None
    shards: int = 1

    @classmethod
    def from_dict(cls, d: Any, what: str) -> "Placed":
        if not isinstance(d, dict):
            raise ListError("not-a-list", "not a mount target list: %s is not an object" % what)
        unknown = sorted(set(d) - {"root", "az_id", "shards"})
        if unknown:
            raise ListError("not-a-list", "not a mount target list: %s: unknown field %r" % (what, unknown[0]))
        root = d.get("root")
        if not isinstance(root, str):
            raise ListError("not-a-list", "not a mount target list: %s: 'root' is missing or not a string" % what)
        az_id = d.get("az_id")
        if az_id is not None and not isinstance(az_id, str):
            raise ListError("not-a-list", "not a mount target list: %s: 'az_id' is not a string" % what)
        return cls(root, az_id, _u32(d.get("shards", _ABSENT), 1, "%s: 'shards'" % what))

    def to_dict(self) -> Dict[str, Any]:
        d: Dict[str, Any] = {"root": self.root}
        if self.az_id is not None:
            d["az_id"] = self.az_id
        if self.shards != 1:
            d["shards"] = self.shards
        return d

    def shard_roots(self) -> List[str]:
        """``root``, then ``/shards/<az_id>.<k>`` for k = 1 ... shards - 1 (as ``Target.shard_roots``)."""
        return [self.root if k == 0 else extra_root(self.az_id or "", k) for k in range(max(1, self.shards))]


@dataclass(frozen=True)
class Placement:
    """An earlier list's active shards and strategy: where it homed each path (router/src/placement.rs). Its
    ``targets`` are in list order, which a ``modulo-sha256`` placement routes by. Where it homes a path:
    ``placement.home_root``."""

    strategy: str
    targets: Tuple[Placed, ...]

    @classmethod
    def from_dict(cls, d: Any, index: int) -> "Placement":
        what = "open placement %d" % index
        if not isinstance(d, dict):
            raise ListError("not-a-list", "not a mount target list: %s is not an object" % what)
        unknown = sorted(set(d) - {"strategy", "targets"})
        if unknown:
            raise ListError("not-a-list", "not a mount target list: %s: unknown field %r" % (what, unknown[0]))
        strategy = d.get("strategy")
        if strategy not in STRATEGIES:
            raise ListError("not-a-list", "not a mount target list: %s: unknown strategy %r" % (what, strategy))
        targets = d.get("targets")
        if not isinstance(targets, list):
            raise ListError("not-a-list", "not a mount target list: %s: 'targets' is missing or not an array" % what)
        return cls(strategy, tuple(Placed.from_dict(t, "%s, target %d" % (what, i)) for i, t in enumerate(targets)))

    def to_dict(self) -> Dict[str, Any]:
        return {"strategy": self.strategy, "targets": [t.to_dict() for t in self.targets]}

    def roots(self) -> List[str]:
        """Every shard's root, in order."""
        return [root for t in self.targets for root in t.shard_roots()]


Open = Union[str, List[Placement]]
"""A version 3 list's ``open``: ``EVERYWHERE``, or the placements whose files may still be away from home (none: a
miss looks at home alone)."""


def _open_from_json(value: Any) -> Open:
    # As serde reads the untagged enum: the word "everywhere", or an array of placements; nothing else.
    if value == EVERYWHERE:
        return EVERYWHERE
    if not isinstance(value, list):
        raise ListError("not-a-list", "not a mount target list: 'open' is neither \"everywhere\" nor an array of "
                                      "placements")
    return [Placement.from_dict(p, i) for i, p in enumerate(value)]


def _open_to_json(value: Open) -> Any:
    return value if isinstance(value, str) else [p.to_dict() for p in value]


@dataclass
class MountTargetList:
    """The published document. The original two-field form reads as roots ``/``, ``modulo-sha256``.

    ``open`` (version 3): the earlier placements whose files may still be away from home, or ``EVERYWHERE``
    (``Open``); None in the earlier forms, whose misses look everywhere."""

    mount_targets: List[Target] = field(default_factory=list)
    strategy: str = RENDEZVOUS
    open: Optional[Open] = None

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "MountTargetList":
        """Parses and checks every form (``validate``). Unknown top-level keys, and a key repeated in any
        object of the document, are refused, exactly as the Rust library refuses them. ``version`` is 1 (or
        absent, or null), where every entry serves one shard, 2, or 3, which has ``open`` (and only it has)."""
        raw = _load_json(text)
        if not isinstance(raw, dict) or "mount_targets" not in raw:
            raise ListError("not-a-list", "not a mount target list: no 'mount_targets'")
        unknown = sorted(set(raw) - {"mount_targets", "strategy", "version", "open"})
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
        open_ = raw.get("open")
        ml = cls([Target.from_dict(e, i) for i, e in enumerate(entries)], strategy,
                 None if open_ is None else _open_from_json(open_))
        if version is None or version == 1:
            for t in ml.mount_targets:
                if t.shards != 1 or t.draining_shards != 0:
                    raise ListError("shards-need-version",
                                    "mount target %s has \"shards\" or \"draining_shards\", which only a version 2 "
                                    "list may have (clients before version 2 would route by its root alone)" % t.id)
        elif version not in (2, 3):
            raise ListError("bad-version", "not a mount target list: version %d is not 1, 2 or 3" % version)
        if (version == 3) != (ml.open is not None):
            raise ListError("open-needs-version", _OPEN_NEEDS_VERSION)
        ml.validate()
        return ml

    def version(self) -> int:
        """Its version as written: 3 when it says which placements are open, else 2 when ``needs_version_2``,
        else 1."""
        if self.open is not None:
            return 3
        return 2 if self.needs_version_2() else 1

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
        lies inside the other (except ``/shards/<name>...`` inside ``/``); then every open placement has shards,
        each with a sane count (``shards`` >= 1, more than one needs an ``az_id``) and a root that is one of the
        list's shards (``bad-open``). Raises ``ListError``."""
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
        self._validate_open(targets)

    def _validate_open(self, shards: List[Target]) -> None:
        """Every open placement has shards, each of them one of the list's own (a miss looks in the directories
        the list names, never another)."""
        if self.open is None or self.open == EVERYWHERE:
            return
        if isinstance(self.open, str):  # only a list built in code: a document's is checked as it is read
            raise ListError("bad-open", "\"open\" is %s: it is \"everywhere\" or a list of placements"
                            % _quoted(self.open))
        listed = {t.root for t in shards}
        for p in self.open:
            if p.strategy not in STRATEGIES:  # only a list built in code, as above
                raise ListError("bad-open", "\"open\" has a placement of strategy %r" % (p.strategy,))
            if not p.targets:
                raise ListError("bad-open", _bad_open("(none: a placement of no shard)"))
            for t in p.targets:
                if t.shards < 1 or (t.shards > 1 and not t.az_id):
                    raise ListError("bad-open", _bad_open(t.root))
            for root in p.roots():
                if root not in listed:
                    raise ListError("bad-open", _bad_open(root))

    def to_json(self) -> str:
        """The document, as the Rust library writes it (keys ``mount_targets``, ``open``, ``strategy``,
        ``version``): version 3 when it says which placements are open, else ``"version": 2`` only when some target
        serves more than one shard or drains some (``needs_version_2``), so that a list older clients can route is
        always written in the form they read."""
        doc: Dict[str, Any] = {"mount_targets": [t.to_dict() for t in self.mount_targets]}
        if self.open is not None:
            doc["open"] = _open_to_json(self.open)
        doc["strategy"] = self.strategy
        version = self.version()
        if version != 1:
            doc["version"] = version
        return json.dumps(doc, separators=(",", ":"), ensure_ascii=False)

    @classmethod
    def from_ssm(cls, name: str, client: Any = None) -> "MountTargetList":
        """Reads and parses the list published as the SSM parameter ``name``:
        ``client.get_parameter(Name=name)["Parameter"]["Value"]``. ``client`` is a boto3 SSM
        client; None makes ``boto3.client("ssm")`` (the ``ssm`` extra: boto3). Errors of the
        client (a missing parameter, no credentials) are raised as they are; a value that is not
        a list raises ``ListError``."""
        return cls.from_json(_read_parameter(name, client))


_OPEN_NEEDS_VERSION = ('"open" is in a list exactly when it is version 3 (clients before version 3 would look for a '
                       'missing file in every shard, and a version 3 list must say where)')


def _bad_open(root: str) -> str:
    return "\"open\" names shard root %s, which is not one of the list's shards" % _quoted(root)


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
