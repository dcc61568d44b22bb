"""What ``Router.create`` answers (router/src/create.rs, where the create itself is): a path written at home only
where it exists nowhere a read looks, by a synced temporary name linked to the final name (never renamed over
it), so that of two writers exactly one creates it."""

from __future__ import annotations

from typing import NamedTuple

CREATED = "created"  # written at home by this call
ALREADY_THERE = "already-there"  # something already holds the path; nothing was written


class Creation(NamedTuple):
    """What ``Router.create`` did: ``created`` (written at home: shard ``index``, at ``real``) or
    ``already-there`` (something holds the path in shard ``index`` at ``real``: home, or the first other shard
    in list order that has it; at home this includes another writer's create that won the race, and a name that
    is not a regular file, as ``exists`` says). Rust: ``Creation::Created`` and ``Creation::AlreadyThere``."""

    kind: str
    index: int  # type: ignore[assignment]  # shadows tuple.index, as in Resolved
    real: str

    def created(self) -> bool:
        """Whether this call wrote the file."""
        return self.kind == CREATED
