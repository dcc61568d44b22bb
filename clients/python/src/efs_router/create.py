"""Creating a logical path only where it exists nowhere (router/src/create.rs): ``Router.create``.

The check-then-write an application would write itself (``exists``, then ``write``) has a window in which
another writer creates the path and is then overwritten. ``create`` closes it at home:

1. the look ``Router.exists`` makes: home, then, on a miss, the shard directories a miss looks in at once
   (``Router.miss_shards``: every other one, or under a version 3 list where an open placement homes the path),
   each revalidated. A file found in any is ``already-there``: nothing is written;
2. a private temporary name in the home directory, made as ``write`` makes it (``O_CREAT|O_EXCL``, the
   directory made when missing), written and synced;
3. ``link(temporary, home)``, never ``rename``: the server makes the name only if it is free, in one
   operation, on NFS as on a local disk. ``EEXIST`` means another writer got there first (or something else
   holds the name: a link, a directory), so the answer is ``already-there``;
4. the temporary name is unlinked, whatever happened: it never stays behind but when that unlink itself
   fails, and then it is a second name of a complete file, which the function's cleanup removes.

File systems without hard links answer ``link`` with ``EPERM`` or ``EOPNOTSUPP``. There an empty file made at
home with ``O_CREAT|O_EXCL`` claims the name, then the temporary file is renamed over it: for that one round
trip the name holds an empty file, and a client killed in between leaves it empty. (Rust first tries
``renameat2(RENAME_NOREPLACE)``, which Python's standard library does not offer.) EFS has hard links.
"""

from __future__ import annotations

import os
from typing import Callable, NamedTuple, Optional, Tuple

from .relocation import _LINK_OPTIONS, _NO_HARD_LINKS

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


# How the synced temporary file was given the final name.
_LINKED = "linked"  # the temporary name still names it, and goes next
_RENAMED = "renamed"  # the temporary name is gone
_TAKEN = "taken"  # the name was taken: the temporary name still holds the bytes, and goes next

_CLAIM_FLAGS = (os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
                | getattr(os, "O_CLOEXEC", 0))


def create_at(dst: str, data: bytes, create_temporary: Callable[[str], Tuple[str, int]],
              make_dir: Callable[[str], None]) -> bool:
    """Steps 2 to 4 at ``dst`` (``create_temporary`` and ``make_dir`` as ``write`` uses them): whether this
    call made the file. The temporary name is removed on every path, errors included."""
    directory = os.path.dirname(dst)
    # As in a write, the directory is made only when the create finds it missing.
    try:
        tmp, fd = create_temporary(directory)
    except FileNotFoundError:
        make_dir(directory)
        tmp, fd = create_temporary(directory)
    placed: Optional[str] = None
    try:
        # Closed before the unlink: over NFS, unlinking a file this client holds open renames it to a .nfs name.
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        placed = _place(tmp, dst)
    finally:
        if placed != _RENAMED:  # linked, taken, or failed: the temporary name is still there
            try:
                os.unlink(tmp)
            except OSError:
                pass
    return placed != _TAKEN


def _place(tmp: str, dst: str) -> str:
    """``link(tmp, dst)``: made, or ``_TAKEN`` on EEXIST; without hard links, ``_claim_then_rename``."""
    try:
        os.link(tmp, dst, **_LINK_OPTIONS)
        return _LINKED
    except FileExistsError:
        return _TAKEN
    except OSError as e:
        if e.errno not in _NO_HARD_LINKS:
            raise
    return _claim_then_rename(tmp, dst)


def _claim_then_rename(tmp: str, dst: str) -> str:
    """Claims ``dst`` with an empty file made O_CREAT|O_EXCL (exclusive everywhere, and never through a link),
    then renames ``tmp`` over it. For that one round trip ``dst`` is an empty file."""
    try:
        fd = os.open(dst, _CLAIM_FLAGS, 0o666)
    except FileExistsError:
        return _TAKEN
    try:
        ours: Optional[os.stat_result] = os.fstat(fd)
    except OSError:
        ours = None
    finally:
        os.close(fd)
    try:
        os.rename(tmp, dst)
    except BaseException:
        # The claim goes, unless a write has replaced it meanwhile: that file is not ours.
        try:
            now = os.lstat(dst)
            if ours is None or (now.st_dev, now.st_ino) == (ours.st_dev, ours.st_ino):
                os.unlink(dst)
        except OSError:
            pass
        raise
    return _RENAMED
