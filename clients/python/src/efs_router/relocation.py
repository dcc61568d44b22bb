"""Moving a file home (router/src/relocation.rs)."""

from __future__ import annotations

import errno
import os
import stat
from typing import Callable, List, Optional, Tuple, Union

from .cache import revalidate_dir
from .errors import NotARegularFile, OtherOwners
from .names import _private_name, is_private_name

# The latest version wins ("newer": the modification time, to the nanosecond; the destination wins a tie),
# and what a move removes is always the file it looked at. link(src, dst) makes the name if it is free
# (atomically, on NFS as on local disks); the source is then *retired*: renamed to a private name
# (.efs-router-<16 hex>.moving) in its directory, looked at, and unlinked if it is the file expected; a
# different file there is a version a writer renamed over the source meanwhile, which ends at dst if it is
# newer than what dst holds. A dst that exists is compared: as new or newer, the source is an older copy
# and is retired; older, the source replaces it (linked into a private directory beside dst under dst's
# name, dst looked at once more, that name renamed over dst). Never a copy: the bytes do not move.

MOVED = "moved"  # the file is at the destination and no longer at the source
REPLACED_OLDER = "replaced-older"  # the destination held an older file; the source replaced it
DROPPED_OLDER = "dropped-older"  # the destination held a file as new or newer; the source was removed
SOURCE_GONE = "source-gone"  # nothing at the source (moved or removed by another, or this move finished by another)

# What link(2) answers on a file system without hard links (ENOTSUP is EOPNOTSUPP on Linux, not everywhere).
_NO_HARD_LINKS = frozenset(e for e in (errno.EPERM, getattr(errno, "EOPNOTSUPP", None), getattr(errno, "ENOTSUP", None))
                           if e is not None)

# Rust's fs::hard_link does not follow a symbolic link at the source (linkat without AT_SYMLINK_FOLLOW).
_LINK_OPTIONS = {"follow_symlinks": False} if os.link in os.supports_follow_symlinks else {}

# How many times a move looks again at a destination that other clients keep changing under it.
_ROUNDS = 8


def _spelling(path: str) -> Tuple[bool, List[str]]:
    # Enough of Rust's Path equality to refuse "a//b" against "a/b" or "a/./b" (and "./a" against "a").
    return path.startswith("/"), [part for part in path.split("/") if part not in ("", ".")]


def _what(st: os.stat_result) -> Optional[str]:
    """None for a regular file; otherwise what it is, as Rust names it."""
    mode = st.st_mode
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISLNK, "symbolic link"), (stat.S_ISDIR, "directory"), (stat.S_ISFIFO, "FIFO"),
                       (stat.S_ISCHR, "character device"), (stat.S_ISBLK, "block device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return what
    return "special file"


def _regular(st: os.stat_result, path: str) -> None:
    what = _what(st)
    if what is not None:
        raise NotARegularFile(path, what)


def _same_owner(src: str, s: os.stat_result, dst: str, d: os.stat_result) -> None:
    """The rule for every move that would replace one file by another or drop one for another."""
    if s.st_uid != d.st_uid:
        raise OtherOwners(src, dst, s.st_uid, d.st_uid)


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return a.st_dev == b.st_dev and a.st_ino == b.st_ino


def _newer(a: os.stat_result, b: os.stat_result) -> bool:
    return a.st_mtime_ns > b.st_mtime_ns


def _look(path: str) -> Optional[os.stat_result]:
    """lstat: None when nothing is there; errors other than "not found" are errors."""
    try:
        return os.lstat(path)
    except FileNotFoundError:
        return None


def _fresh_look(path: str) -> Optional[os.stat_result]:
    """_look, as the server answers now: ``path``'s directory revalidated first."""
    if not revalidate_dir(_parent(path)):
        return None
    return _look(path)


def _parent(path: str) -> str:
    return os.path.dirname(path) or "."


def _beside(path: str) -> str:
    """A fresh .efs-router-<16 hex>.moving in ``path``'s directory."""
    return os.path.join(_parent(path), _private_name(".moving"))


def _remove_private(p: str) -> None:
    try:
        os.unlink(p)
    except FileNotFoundError:
        pass


def _same_entry(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one directory entry: the same name in the same directory (by device and
    inode, so d/../d/f is d/f)."""
    name_a, name_b = os.path.basename(a), os.path.basename(b)
    if not name_a or not name_b or name_a in (".", "..") or name_b in (".", ".."):
        return True
    if name_a != name_b:
        return False
    return _same_file(os.stat(_parent(a)), os.stat(_parent(b)))


def _same_entry_error(src: str, dst: str) -> OSError:
    return OSError(errno.EINVAL, "%s and %s are one file: a move onto itself would remove its only name" % (src, dst))


def _changing(dst: str) -> OSError:
    return OSError(errno.EAGAIN, "%s: changed %d times while a move looked at it; the source was left as it was"
                   % (dst, _ROUNDS))


def relocate(src: Union[str, os.PathLike[str]], dst: Union[str, os.PathLike[str]]) -> str:
    """Moves ``src`` to ``dst`` (whose directory must exist), within one file system: the newer of the two
    versions ends at ``dst`` (``dst`` wins a tie), and the source name is gone. Returns ``MOVED`` (``dst``
    had no file, or this very file: a move cut short, finished), ``REPLACED_OLDER``, ``DROPPED_OLDER`` or
    ``SOURCE_GONE`` (no ``src``: another client moved or removed it, or finished this very move). Of racing
    movers, one reports what was done and the others ``SOURCE_GONE``.

    Raises ``NotARegularFile`` when ``src`` or ``dst`` is a symbolic link, FIFO, device, socket or directory
    (nothing is moved), ``OSError(EINVAL)`` when they are one directory entry however spelled (``./a`` and
    ``a``, ``d/../d/f`` and ``d/f``) or either is named as one of the router's own files (``is_private_name``),
    and the file system's own errors (``dst``'s directory missing:
    ``FileNotFoundError``). Where ``link`` answers EPERM or EOPNOTSUPP (no hard links), it looks at ``dst``
    and renames (a small window). The rules: router/README.md, "Moving a file home"."""
    return _relocate(os.fspath(src), os.fspath(dst), None)


def _relocate(src: str, dst: str, known: Optional[os.stat_result]) -> str:
    if src == dst or _spelling(src) == _spelling(dst):
        raise _same_entry_error(src, dst)
    for path in (src, dst):
        if is_private_name(os.path.basename(path)):
            raise OSError(errno.EINVAL, "%s: a name of the router's own, never moved" % path)
    for _ in range(_ROUNDS):
        s = known if known is not None else _fresh_look(src)
        known = None
        if s is None:
            return SOURCE_GONE
        _regular(s, src)
        try:
            if not _link_unless_gone(src, dst):
                return SOURCE_GONE
        except FileExistsError:
            return _settle(src, dst, s)
        except FileNotFoundError:
            # The file looked at is gone, yet the source's name is there: a writer put a new version
            # under it meanwhile (on NFS the link names the file looked at). Move what is there now.
            now = _fresh_look(src)
            if now is None:
                return SOURCE_GONE
            if _same_file(now, s):
                raise  # the source is as it was: dst's directory is missing
            continue
        except OSError as e:
            if e.errno not in _NO_HARD_LINKS:
                raise
            return _without_links(src, dst, s)
        return _retire(src, dst, s, MOVED)
    raise _changing(src)


def _link_unless_gone(src: str, dst: str) -> bool:
    """Links ``src`` at ``dst`` (never replacing a file there: ``FileExistsError``); False when ``src`` is gone,
    which means another mover finished first."""
    try:
        os.link(src, dst, **_LINK_OPTIONS)
    except FileNotFoundError:
        if _look(src) is None:
            return False
        raise
    return True


def _settle(src: str, dst: str, s: os.stat_result) -> str:
    """``dst`` exists: the same file (a move cut short), an older one, or a newer one."""
    for _ in range(_ROUNDS):
        d = _fresh_look(dst)  # the link's "exists" is the server's; this client's cache may be older
        if d is None:  # removed since the link found it: link again
            try:
                if not _link_unless_gone(src, dst):
                    return SOURCE_GONE
            except FileExistsError:
                continue
            return _retire(src, dst, s, MOVED)
        if _same_file(d, s):  # two names of one file: a move cut short, unless they are one name
            if _same_entry(src, dst):
                raise _same_entry_error(src, dst)
            return _retire(src, dst, s, MOVED)
        _regular(d, dst)
        _same_owner(src, s, dst, d)
        if _newer(s, d):
            return _replace(src, dst, s)
        return _retire(src, dst, s, DROPPED_OLDER)
    raise _changing(dst)


def _replace(src: str, dst: str, s: os.stat_result) -> str:
    """The source is newer than ``dst``: link it into a private directory made beside ``dst``, under ``dst``'s
    name (q), look at ``dst`` once more, rename q over it; then retire the source. Under ``dst``'s name so that a
    replace cut short is given back by ``recover`` (the newer of q and ``dst`` stays), even once a writer has
    replaced the source and q is the only name of its version."""
    qd = _beside(dst)
    os.mkdir(qd)
    q = os.path.join(qd, os.path.basename(dst))
    try:
        try:
            if not _link_unless_gone(src, q):
                return SOURCE_GONE
        except OSError as e:
            if e.errno not in _NO_HARD_LINKS:
                raise
            return _without_links(src, dst, s)
        placed = _place_replacement(src, dst, q)
        if placed is None:
            return SOURCE_GONE
        linked, outcome = placed
    except BaseException:
        try:
            os.unlink(q)
        except OSError:
            pass
        raise
    finally:
        try:  # empty unless a step failed with q still in it: then it stays, for recover
            os.rmdir(qd)
        except OSError:
            pass
    return _retire(src, dst, linked, outcome)


def _place_replacement(src: str, dst: str, q: str) -> Optional[Tuple[os.stat_result, str]]:
    """q (in its private directory beside ``dst``) is a new name of the source: renamed over ``dst`` if it is still
    newer than what ``dst`` holds, else removed. Returns what was linked and the outcome to retire the source as;
    None when ``dst`` and the source were both removed meanwhile (a delete): nothing is placed."""
    linked = _look(q)  # what was linked: a writer may have put a new version at the source since
    if linked is None:
        raise OSError(errno.ENOENT, "%s: removed by another client while moving %s there" % (q, src))
    _regular(linked, src)
    # The last look before the rename, as the server answers: between it and the rename, a write landing at dst
    # would be replaced (router/README.md, "What is left to chance").
    now = _fresh_look(dst)
    if now is None and _fresh_look(src) is None:
        # dst held an older file when this replace began, and the source is gone too: a delete, which removes
        # the other shards' copies before home's. Placed now, the replacement would bring the path back.
        _remove_private(q)
        return None
    if now is None:
        go, outcome = True, MOVED
    elif _same_file(now, linked):
        go, outcome = False, MOVED
    else:
        _regular(now, dst)
        if now.st_uid != linked.st_uid:
            _remove_private(q)
            _same_owner(src, linked, dst, now)
        go, outcome = _newer(linked, now), REPLACED_OLDER
    if go:
        os.rename(q, dst)
    # When dst was already this very file (another mover placed it meanwhile), rename does nothing and q stays.
    _remove_private(q)
    if not go and outcome == REPLACED_OLDER:
        outcome = DROPPED_OLDER
    return linked, outcome


def recover(pd: Union[str, os.PathLike[str]], found: Optional[Callable[[str], bool]] = None) -> int:
    """Puts back what a move cut short left in its private directory ``pd`` (a retire's source, under its own
    name, beside where it was; a replace's new version, under the name it was to replace): each entry goes to
    its name in ``pd``'s directory by ``relocate``, so the newer of it and whatever is there now stays and an
    older copy is dropped; then the emptied ``pd`` is removed. Returns how many entries were given back or
    dropped. Only for a ``pd`` no move is using: one unchanged for an hour (Rust ``relocation::recover``).

    ``found(name)`` answers whether the name's path is a file anywhere a router looks, as the server answers
    now (Rust's ``found``); where it is nowhere, a client deleted the path while the move hid this copy, and the
    entry (a regular file) is dropped rather than brought back. Without ``found``, every entry goes back."""
    pd = os.fspath(pd)
    settled = 0
    for name in sorted(os.listdir(pd)):
        if is_private_name(name):
            continue  # a recovery's own retire that died too: the next recovery of it
        p = os.path.join(pd, name)
        if found is not None and not found(name):
            st = _look(p)
            if st is not None:
                _regular(st, p)
                _remove_private(p)
                settled += 1
            continue
        if relocate(p, os.path.join(_parent(pd), name)) != SOURCE_GONE:
            settled += 1
    try:
        os.rmdir(pd)
    except FileNotFoundError:
        pass
    return settled


def _retire(src: str, dst: str, expected: os.stat_result, outcome: str) -> str:
    """Removes the source by a name no writer uses: renames it into a private directory made for this move
    beside it (``.efs-router-<16 hex>.moving/``, keeping its name), asks the server what the rename took (a
    listing of that directory), and unlinks it if it is ``expected``. Over NFS an lstat of the renamed name
    answers from this client's cache, which may still hold the version it looked at while the rename took a
    newer one a writer put there; the listing is the server's answer and refreshes that entry (router/src/
    relocation.rs). The mover whose rename succeeds reports ``outcome``; one that finds the source gone
    reports ``SOURCE_GONE``."""
    name = os.path.basename(src)
    pd = _beside(src)
    try:
        os.mkdir(pd)
    except FileNotFoundError:  # the source's directory is gone, and the source with it
        return SOURCE_GONE
    p = os.path.join(pd, name)
    try:
        try:
            os.rename(src, p)
        except FileNotFoundError:
            return SOURCE_GONE
        return _settle_taken(src, dst, pd, p, expected, outcome)
    finally:
        try:  # empty unless a step failed with the file still in it: then it stays for the next move
            os.rmdir(pd)
        except OSError:
            pass


def _settle_taken(src: str, dst: str, pd: str, p: str, expected: os.stat_result, outcome: str) -> str:
    name = os.path.basename(p)
    with os.scandir(pd) as listing:
        ino = next((e.inode() for e in listing if e.name == name), None)
    if ino is None:
        return outcome
    taken = _look(p)
    if ino == expected.st_ino and taken is not None and _same_file(taken, expected):
        _remove_private(p)
        return outcome
    # A writer renamed a new version over the source after it was looked at; the listing refreshed this
    # client's entry for it, so lstat now answers for that version.
    if taken is None:
        return outcome
    if taken.st_ino != ino:  # the cache still disagrees with the server: decide nothing, leave it there
        raise OSError(errno.EIO, "%s: this client's cache and the server disagree on the file taken from %s; "
                      "left there" % (p, src))
    what = _what(taken)
    if what is not None:  # not data, and not ours: give the name back if it is still free
        try:
            os.link(p, src, **_LINK_OPTIONS)
            os.unlink(p)
        except OSError:
            pass
        raise NotARegularFile(src, what)
    try:
        placed = _place(p, taken, dst)
    except OtherOwners:
        # Another owner's file at home: this version goes back where it was taken from.
        try:
            os.link(p, src, **_LINK_OPTIONS)
            os.unlink(p)
        except OSError:
            pass
        raise
    return REPLACED_OLDER if outcome == DROPPED_OLDER and placed else outcome


def _place(p: str, taken: os.stat_result, dst: str) -> bool:
    """The private file ``p`` holds the version ``taken``: it ends at ``dst`` if ``dst`` has no file or an
    older one; otherwise it is removed. True when it was placed."""
    for _ in range(_ROUNDS):
        d = _fresh_look(dst)
        if d is None:
            try:
                os.link(p, dst, **_LINK_OPTIONS)
            except FileExistsError:
                continue
            except OSError as e:
                if e.errno not in _NO_HARD_LINKS:
                    raise
                os.rename(p, dst)
                return True
            _remove_private(p)
            return True
        if _same_file(d, taken):
            _remove_private(p)
            return True
        _regular(d, dst)
        _same_owner(p, taken, dst, d)
        if _newer(taken, d):
            os.rename(p, dst)
            _remove_private(p)  # left by rename if dst became this file meanwhile
            return True
        _remove_private(p)
        return False
    raise _changing(dst)


def _without_links(src: str, dst: str, s: os.stat_result) -> str:
    """File systems without hard links: look at ``dst``, then rename (a window between the two, documented);
    an older source is retired as usual."""
    d = _fresh_look(dst)
    if d is None:
        outcome, replace = MOVED, True
    elif _same_file(d, s):
        if _same_entry(src, dst):
            raise _same_entry_error(src, dst)
        return _retire(src, dst, s, MOVED)
    else:
        _regular(d, dst)
        _same_owner(src, s, dst, d)
        outcome, replace = REPLACED_OLDER, _newer(s, d)
    if not replace:
        return _retire(src, dst, s, DROPPED_OLDER)
    try:
        os.rename(src, dst)
    except FileNotFoundError:
        if _look(src) is None:
            return SOURCE_GONE
        raise
    return outcome
