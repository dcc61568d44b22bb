"""Routing a logical path to its shard (router/src/shard.rs)."""

from __future__ import annotations

from typing import Any, Mapping, Sequence, Union

from . import _native
from .list import STRATEGIES, Target
from .path import _text

TargetLike = Union[Target, Mapping[str, Any]]


def _field(t: TargetLike, key: str, default: Any) -> Any:
    if isinstance(t, Mapping):
        v = t.get(key, default)
        return default if v is None else v
    return getattr(t, key, default)


def rendezvous_score(root: str, normalised: str) -> int:
    """First 8 bytes, big-endian, of SHA-256 over ``root`` (UTF-8), one 0x00 byte, ``normalised`` (UTF-8)."""
    return _native.rendezvous_score(root, _text(normalised))


def modulo_sha256(path: str, n: int) -> int:
    """The original expression: ``int(hashlib.sha256(path.encode()).hexdigest(), 16) % n``."""
    return _native.modulo_sha256(path, n)


def shard_index(path: str, targets: Sequence[TargetLike], strategy: str) -> int:
    """The index in ``targets`` (the list's shards in order, ``MountTargetList.shards()``; not its entries when a
    mount target serves several) of the shard that ``path`` belongs to.

    ``path`` is checked and normalised for both strategies; ``rendezvous`` hashes the normalised
    path, ``modulo-sha256`` the path exactly as given (as the original did). Draining shards
    are never chosen: routing is as if they were already removed.
    """
    if strategy not in STRATEGIES:
        raise ValueError("unknown strategy %r: expected one of %s" % (strategy, ", ".join(STRATEGIES)))
    shards = [(_field(t, "root", "/"), bool(_field(t, "draining", False))) for t in targets]
    return _native.shard_index(_text(path), shards, strategy)
