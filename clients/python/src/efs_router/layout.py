"""How the shards are mounted on this host (router/src/layout.rs): what the package hands the router, and where a
shard's copy of a path is (``real_path``), for applications and tests."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

from .errors import LayoutError
from .list import Target


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
