"""Where a file can be when it is not at home (router/src/placement.rs; list version 3): the earlier placements
still open.

A file is away from its home under the published list for a known reason, and each reason is an earlier list that
homed it elsewhere: a client on that list wrote it and the rebalance has not moved it yet; it lies in a shard that
is draining now; it predates the router, in the first shard's directory (the list of that one shard, ``/``); the
list was migrated from ``modulo-sha256``. A placement (``Placement``, list.py) is such a list's active shards and
strategy: nothing else routes.

A version 3 list carries ``"open"``: the placements whose files may still be away from home, or ``"everywhere"``
when the function does not know them. A miss then looks at home, and at the path's home under each open placement
where that differs: with none open, nowhere else. ``Router.miss_shards`` maps these roots to the list's shards.
"""

from __future__ import annotations

from typing import List, Optional

from .errors import RouteError
from .list import EVERYWHERE, Open, Placement, Target
from .shard import _index_of


def home_root(placement: Placement, raw: str, logical: str) -> Optional[str]:
    """The root of ``logical``'s home under ``placement`` (``raw``: the application's spelling, which
    ``modulo-sha256`` hashes; ``logical``, the normalised path, which ``rendezvous`` hashes). None for a placement
    of no shard."""
    roots = placement.roots()
    try:
        i = _index_of(raw, logical, [Target("", "", root=r) for r in roots], placement.strategy)
    except RouteError:
        return None
    return roots[i]


def miss_roots(open_: Optional[Open], raw: str, logical: str, home: str) -> Optional[List[str]]:
    """The roots a miss of ``logical`` looks in besides ``home`` (its home's root), in the placements' order, each
    once; None for every shard (``EVERYWHERE``, or no ``open``: the earlier forms)."""
    if open_ is None or open_ == EVERYWHERE or isinstance(open_, str):
        return None
    roots: List[str] = []
    for p in open_:
        root = home_root(p, raw, logical)
        if root is not None and root != home and root not in roots:
            roots.append(root)
    return roots
