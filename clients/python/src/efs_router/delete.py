"""What ``Router.delete`` answers (router/src/delete.rs, where the delete itself is)."""

from __future__ import annotations

from typing import List, NamedTuple

ROUNDS = 8
"""Rounds of looks a delete makes at most before it gives up on a path written again in every one."""

ABOVE = "link or non-directory above it"


class Left(NamedTuple):
    """A copy's place holding something other than a regular file: never followed, never removed."""

    index: int  # type: ignore[assignment]  # the shard's position in Router.shards (shadows tuple.index)
    real: str
    what: str  # "symbolic link", "directory", "FIFO", ..., or ABOVE (a component of the way there)


class Deleted(NamedTuple):
    """What ``Router.delete`` did: the shards a copy was removed from (list order), the names unlinked (more
    than ``removed`` when a copy came back into a shard already cleared), what was left, the rounds of looks
    (1 when it looks at home alone: one distinct shard directory, or nothing open on a version 3 list; else 3
    when no copy came back after it was looked for)."""

    removed: List[int]
    unlinked: int
    left: List[Left]
    rounds: int

    def any(self) -> bool:
        """Whether a copy was found and removed anywhere."""
        return self.unlinked > 0
