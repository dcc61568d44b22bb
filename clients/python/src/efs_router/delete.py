"""Deleting a logical path everywhere a copy of it may be (router/src/delete.rs): ``Router.delete``.

The other distinct shard directories are looked at all at once and their copies removed, then home's; then
everywhere again, at once, until a round finds nothing (at most ``ROUNDS``). Others first: a move links its
source home before it takes the source away, so a move that had not linked when its source was removed can
no longer link, and one that had is seen at home. The last rounds catch a move by a client on another list,
into a shard already looked at. Each look is the server's answer: the copy's directory is opened (which
revalidates this client's name cache) beneath the mount, one component at a time with ``O_NOFOLLOW``, and
the name is looked at and unlinked relative to it. Only a regular file is removed; a link, FIFO, directory
or device at a copy's place, or a link on the way to it, is left and reported (``Left``), never followed.
What can still bring a deleted path back: docs/routing.md, "Deleting a file"."""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple, Union

from .cache import revalidate_dir
from .errors import Reappearing
from .relocation import _what

ROUNDS = 8
"""Rounds of looks a delete makes at most before it gives up on a path written again in every one."""

_DIR = os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0)
_SUBDIR = _DIR | getattr(os, "O_NOFOLLOW", 0)

ABOVE = "link or non-directory above it"


class Left(NamedTuple):
    """A copy's place holding something other than a regular file: never followed, never removed."""

    index: int  # type: ignore[assignment]  # the shard's position in Router.shards (shadows tuple.index)
    real: str
    what: str  # "symbolic link", "directory", "FIFO", ..., or ABOVE (a component of the way there)


class Deleted(NamedTuple):
    """What ``Router.delete`` did: the shards a copy was removed from (list order), the names unlinked (more
    than ``removed`` when a copy came back into a shard already cleared), what was left, the rounds of looks
    (1 with one distinct shard directory, else 3 when no copy came back after it was looked for)."""

    removed: List[int]
    unlinked: int
    left: List[Left]
    rounds: int

    def any(self) -> bool:
        """Whether a copy was found and removed anywhere."""
        return self.unlinked > 0


class Place(NamedTuple):
    """One copy's place: its shard, its real path, the mount and the directory beneath it, its name."""

    index: int  # type: ignore[assignment]
    real: str
    mount: str
    directory: str
    name: str


_ABSENT, _REMOVED, _VANISHED = "absent", "removed", "vanished"


def _open_beneath(mount: str, directory: str) -> int:
    """The directory ``directory`` beneath ``mount``, opened one component at a time without following a link."""
    fd = os.open(mount, _DIR)
    for part in (p for p in directory.split("/") if p not in ("", ".")):
        try:
            nfd = os.open(part, _SUBDIR, dir_fd=fd)
        finally:
            os.close(fd)
        fd = nfd
    return fd


def _open_dir(p: Place) -> Optional[int]:
    """The copy's directory; None when the server says it is not there (one missing only in this client's
    cache is looked up again)."""
    try:
        return _open_beneath(p.mount, p.directory)
    except FileNotFoundError:
        if not revalidate_dir(os.path.dirname(p.real)):
            return None
    try:
        return _open_beneath(p.mount, p.directory)
    except FileNotFoundError:
        return None


def _remove_copy(p: Place) -> "Look":
    """Looks at the copy's place as the server answers and unlinks a regular file there: (what happened, what
    was left instead)."""
    try:
        fd = _open_dir(p)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            return _ABSENT, ABOVE
        raise
    if fd is None:
        return _ABSENT, None
    try:
        try:
            st = os.stat(p.name, dir_fd=fd, follow_symlinks=False)
        except FileNotFoundError:
            return _ABSENT, None
        if not stat.S_ISREG(st.st_mode):
            return _ABSENT, _what(st)
        # By name: a version a writer renamed there since the look goes too, and a link is unlinked, not followed.
        try:
            os.unlink(p.name, dir_fd=fd)
        except FileNotFoundError:
            return _VANISHED, None
        return _REMOVED, None
    finally:
        os.close(fd)


Look = Tuple[str, Optional[str]]


def delete_everywhere(path: str, home: Place, others: Sequence[Place],
                      probe: Callable[[Sequence[Place], Callable[[Place], Look]], List[Union[Look, BaseException]]]
                      ) -> Deleted:
    """``path``'s copies removed from ``others`` at once, then from ``home``, then from all until a round finds
    nothing. ``probe`` runs a check on each place at once (``fs._probe``)."""
    removed: List[int] = []
    left: List[Left] = []
    counts = {"unlinked": 0, "rounds": 0}

    def round_of(places: Sequence[Place]) -> bool:
        counts["rounds"] += 1
        seen, failure = False, None
        for p, got in zip(places, probe(places, _remove_copy)):
            if isinstance(got, BaseException):
                failure = failure or got
                continue
            happened, what = got
            if happened != _ABSENT:
                seen = True
            if happened == _REMOVED:
                counts["unlinked"] += 1
                if p.index not in removed:
                    removed.append(p.index)
            if what is not None and all(entry.index != p.index for entry in left):
                left.append(Left(p.index, p.real, what))
        if failure is not None:
            raise failure
        return seen

    def answer() -> Deleted:
        return Deleted(sorted(removed), counts["unlinked"], left, counts["rounds"])

    if not others:
        round_of([home])
        return answer()
    round_of(others)
    round_of([home])
    everywhere = [home, *others]
    while round_of(everywhere):
        if counts["rounds"] >= ROUNDS:
            raise Reappearing(path, counts["rounds"])
    return answer()
