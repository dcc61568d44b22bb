"""Moving a file home (router/src/relocation/): the Rust router's move, through the native module.

The latest version wins ("newer": the modification time, to the nanosecond; the destination wins a tie), and
what a move removes is always the file it looked at. The rules: router/REFERENCE.md, "Moving a file home"."""

from __future__ import annotations

import os
from typing import Callable, Optional, Union

from . import _native

MOVED = "moved"  # the file is at the destination and no longer at the source
REPLACED_OLDER = "replaced-older"  # the destination held an older file; the source replaced it
DROPPED_OLDER = "dropped-older"  # the destination held a file as new or newer; the source was removed
SOURCE_GONE = "source-gone"  # nothing at the source (moved or removed by another, or this move finished by another)


def relocate(src: Union[str, os.PathLike[str]], dst: Union[str, os.PathLike[str]]) -> str:
    """Moves ``src`` to ``dst`` (whose directory must exist), within one file system: the newer of the two
    versions ends at ``dst`` (``dst`` wins a tie), and the source name is gone. Returns ``MOVED`` (``dst``
    had no file, or this very file: a move cut short, finished), ``REPLACED_OLDER``, ``DROPPED_OLDER`` or
    ``SOURCE_GONE`` (no ``src``: another client moved or removed it, or finished this very move). Of racing
    movers, one reports what was done and the others ``SOURCE_GONE``.

    Raises ``NotARegularFile`` when ``src`` or ``dst`` is a symbolic link, FIFO, device, socket or directory
    (nothing is moved), ``OtherOwners`` when they belong to different users, ``OSError(EINVAL)`` when they are
    one directory entry however spelled or either is named as one of the router's own files
    (``is_private_name``), and the file system's own errors (``dst``'s directory missing:
    ``FileNotFoundError``)."""
    return _native.relocate(os.fspath(src), os.fspath(dst))


def recover(pd: Union[str, os.PathLike[str]], found: Optional[Callable[[str], bool]] = None) -> int:
    """Puts back what a move cut short left in its private directory ``pd`` (Rust ``relocation::recover``): each
    entry goes to its name in ``pd``'s directory by ``relocate``, so the newer of it and whatever is there now
    stays; then the emptied ``pd`` is removed. Returns how many entries were given back or dropped. Only for a
    ``pd`` no move is using: one unchanged for an hour.

    ``found(name)`` answers whether the name's path is a file anywhere a router looks, as the server answers
    now; where it is nowhere, a client deleted the path while the move hid this copy, and the entry is dropped
    rather than brought back. Without ``found``, every entry goes back."""
    settled, deleted = _native.recover(os.fspath(pd), found)
    return int(settled + deleted)
