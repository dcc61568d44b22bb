"""Routing a logical path to its shard (router/src/shard.rs)."""

from __future__ import annotations

import hashlib
from typing import Any, Mapping, Optional, Sequence, Tuple, Union

from .errors import RouteError
from .list import MODULO_SHA256, STRATEGIES, Target
from .path import normalise

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
