"""The published list (router/src/list.rs): mount targets, their shards, and the rules every list obeys.

Version 3 adds ``"open"``: the earlier placements whose files may still be away from home (``Placement``), or
``"everywhere"`` (``EVERYWHERE``) when that is not known.

The rules are the Rust router's: ``from_json`` and ``validate`` ask the native module, and this module only holds
the document as Python types (built from the router's own form of it, so nothing is parsed twice)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Mapping, Optional, Tuple, Union

from . import _native
from .errors import ListError
from .ssm import _read_parameter

RENDEZVOUS = "rendezvous"
MODULO_SHA256 = "modulo-sha256"
STRATEGIES = (RENDEZVOUS, MODULO_SHA256)

# The most shards one list may describe (router/src/list.rs).
MAX_LIST_SHARDS = 1000

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
        """An entry as the published list writes it (checked by ``MountTargetList.from_json``, not here)."""
        return cls(id=d["id"], ip=d["ip"], az=d.get("az"), az_id=d.get("az_id"), subnet_id=d.get("subnet_id"),
                   root=d.get("root") or "/", draining=bool(d.get("draining", False)), shards=d.get("shards", 1),
                   draining_shards=d.get("draining_shards", 0))

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
    return root.startswith("/") and "\0" not in root and all(p not in ("", ".", "..") for p in root[1:].split("/"))


@dataclass(frozen=True)
class Placed:
    """One mount target's shards in a placement (router/src/placement.rs): ``root``, then ``/shards/<az_id>.<k>``
    for k = 1 ... shards - 1, as a list entry names them."""

    root: str
    az_id: Optional[str] = None
    shards: int = 1

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Placed":
        return cls(d["root"], d.get("az_id"), d.get("shards", 1))

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
    def from_dict(cls, d: Mapping[str, Any]) -> "Placement":
        return cls(d["strategy"], tuple(Placed.from_dict(t) for t in d["targets"]))

    def to_dict(self) -> Dict[str, Any]:
        return {"strategy": self.strategy, "targets": [t.to_dict() for t in self.targets]}

    def roots(self) -> List[str]:
        """Every shard's root, in order."""
        return [root for t in self.targets for root in t.shard_roots()]


Open = Union[str, List[Placement]]
"""A version 3 list's ``open``: ``EVERYWHERE``, or the placements whose files may still be away from home (none: a
miss looks at home alone)."""


def _open_from_json(value: Any) -> Open:
    return EVERYWHERE if value == EVERYWHERE else [Placement.from_dict(p) for p in value]


def _open_to_json(value: Open) -> Any:
    return value if isinstance(value, str) else [p.to_dict() for p in value]


@dataclass
class MountTargetList:
    """The published document. The original two-field form reads as roots ``/``, ``modulo-sha256``.

    ``open`` (version 3): the earlier placements whose files may still be away from home, or ``EVERYWHERE``
    (``Open``); None in the earlier forms, whose misses look everywhere. ``scope`` (version 3): the tree, relative
    to each shard's root, that ``open`` speaks for (what the function walks); a miss outside it looks everywhere."""

    mount_targets: List[Target] = field(default_factory=list)
    strategy: str = RENDEZVOUS
    open: Optional[Open] = None
    scope: Optional[str] = None

    @classmethod
    def from_json(cls, text: Union[str, bytes]) -> "MountTargetList":
        """Parses and checks every form (``validate``). Unknown top-level keys, and a key repeated in any
        object of the document, are refused, exactly as the Rust library refuses them. ``version`` is 1 (or
        absent, or null), where every entry serves one shard, 2, or 3, which has ``open`` (and only it has)."""
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError as e:
                raise ListError("not-a-list", "not a mount target list: %s" % e) from None
        try:
            canonical = json.loads(_native.parse_list(text))
        except UnicodeEncodeError:
            raise ListError("not-a-list", "not a mount target list: a lone surrogate in a string") from None
        return cls([Target.from_dict(e) for e in canonical["mount_targets"]], canonical.get("strategy", MODULO_SHA256),
                   None if canonical.get("open") is None else _open_from_json(canonical["open"]),
                   canonical.get("scope"))

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
        """The rules every list obeys, in this order (router/REFERENCE.md, "The published list"): each entry in
        list order has a non-empty id not seen before and sane shard counts (``shards`` >= 1; ``draining_shards``
        < ``shards``; more than one shard needs an ``az_id`` and ``rendezvous``; at most ``MAX_LIST_SHARDS`` in
        all); then each shard in list order (``shards()``) has a clean absolute root with no component starting
        with ``.``; then, for each pair of shards (the later one in list order, then the earlier), their roots
        are not the same (except ``/`` when every root is ``/``, or in a ``modulo-sha256`` list) and neither
        lies inside the other (except ``/shards/<name>...`` inside ``/``); then every open placement has shards,
        each with a sane count (``shards`` >= 1, more than one needs an ``az_id``) and a root that is one of the
        list's shards (``bad-open``). Raises ``ListError``."""
        if isinstance(self.open, str) and self.open != EVERYWHERE:  # only a list built in code
            raise ListError("bad-open", "\"open\" is %s: it is \"everywhere\" or a list of placements"
                            % json.dumps(self.open, ensure_ascii=False))
        for t in self.mount_targets:  # counts the published form cannot hold: only a list built in code
            if t.shards < 0:
                raise ListError("bad-shards", 'mount target %s: "shards" is %d: a mount target in the list serves '
                                              "at least one shard" % (t.id, t.shards))
            if t.draining_shards < 0:
                raise ListError("bad-shards", 'mount target %s: "draining_shards" must be fewer than "shards" (a '
                                              'whole target drains with "draining")' % t.id)
        if isinstance(self.open, list) and any(p.shards < 0 for pl in self.open for p in pl.targets):
            raise ListError("bad-open", "\"open\" has a placement of a negative number of shards")
        try:
            _native.parse_list(self.to_json())
        except UnicodeEncodeError:
            raise ListError("not-a-list", "not a mount target list: a lone surrogate in a string") from None

    def to_json(self) -> str:
        """The document, as the Rust library writes it (keys ``mount_targets``, ``open``, ``scope``, ``strategy``,
        ``version``): version 3 when it says which placements are open, else ``"version": 2`` only when some target
        serves more than one shard or drains some (``needs_version_2``), so that a list older clients can route is
        always written in the form they read."""
        doc: Dict[str, Any] = {"mount_targets": [t.to_dict() for t in self.mount_targets]}
        if self.open is not None:
            doc["open"] = _open_to_json(self.open)
            if self.scope is not None:
                doc["scope"] = self.scope
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
