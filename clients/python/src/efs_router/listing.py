"""Listing the logical tree (router/src/listing.rs and lookup.rs, through the native module): ``Router.listdir``,
``scandir``, ``walk`` and ``glob``; and, for the fsspec file system (fsspec_fs.py), one name looked up by the same
rules (``_Lister.entry``), a listing's sizes (``_Lister.with_stats``) and an empty directory's removal.

A logical directory is the union of that directory in every distinct shard directory, read at once. Each name
appears once: a name that is a directory in any shard is a directory; otherwise it is a file, and the copy that
wins is the one ``read_with_fallback`` reads. The router's own names are never shown, nor another shard's
directory. Every directory is opened beneath the mount without following a link; opening it revalidates this
client's cache of it, so the names are the server's. The rules are the Rust router's (router/src/listing.rs);
``walk`` and ``glob`` are Python's shapes over its listings.
"""

from __future__ import annotations

import fnmatch
import os
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

from .errors import NotFound
from .path import _text, normalise

FILE = "file"
DIRECTORY = "dir"

OnError = Optional[Callable[[OSError], object]]


class Entry:
    """One name of a logical directory, as ``os.DirEntry`` is one of a directory. ``name``; ``path``, its logical
    path (what ``read_with_fallback`` takes); ``kind``, ``"file"`` or ``"dir"``; ``index``, the shard whose copy it
    is (for a file, the one ``read_with_fallback`` reads now; for a directory, the first shard in list order that
    holds it); ``real``, that copy's path on this host; ``shards``, every shard holding the name as this kind, in
    list order (a file in more than one has stale copies, which a read or the function's moves drop)."""

    __slots__ = ("name", "path", "kind", "index", "real", "shards", "_router", "_stat")

    def __init__(self, name: str, path: str, kind: str, index: int, real: str, shards: Tuple[int, ...],
                 router: Any = None, st: Optional[os.stat_result] = None):
        self.name = name
        self.path = path
        self.kind = kind
        self.index = index
        self.real = real
        self.shards = shards
        self._router = router  # the native router that listed it: where stat() looks
        self._stat = st

    def is_dir(self) -> bool:
        return self.kind == DIRECTORY

    def is_file(self) -> bool:
        return self.kind == FILE

    def stat(self) -> os.stat_result:
        """The winning copy's ``lstat``, kept after the first call: its directory opened beneath the mount without
        following a link, the name looked at relative to it."""
        if self._stat is None:
            got = self._router.copy_stat(self.index, self.path) if self._router is not None else None
            if got is None:
                raise FileNotFoundError(2, "no longer there", self.real)
            self._stat = _stat_result(got)
        return self._stat

    def __repr__(self) -> str:
        return "Entry(%r, kind=%r, index=%d, shards=%r)" % (self.path, self.kind, self.index, self.shards)


def _stat_result(f: Tuple[int, ...]) -> os.stat_result:
    """``os.stat_result`` of the native module's fields (mode, ino, dev, nlink, uid, gid, size, and the three
    times in nanoseconds)."""
    mode, ino, dev, nlink, uid, gid, size, atime, mtime, ctime = f
    return os.stat_result((mode, ino, dev, nlink, uid, gid, size, atime // 10**9, mtime // 10**9, ctime // 10**9),
                          {"st_atime": atime / 1e9, "st_mtime": mtime / 1e9, "st_ctime": ctime / 1e9,
                           "st_atime_ns": atime, "st_mtime_ns": mtime, "st_ctime_ns": ctime})


class _Lister:
    """Listing by one list from start to end: one native router, never changed."""

    def __init__(self, native: Any):
        self.native = native

    def _entry(self, d: str, t: Tuple[str, str, int, str, List[int]]) -> Entry:
        name, kind, index, real, shards = t
        return Entry(name, _join(d, name), kind, index, real, tuple(shards), self.native)

    def directory(self, path: str) -> str:
        """``path`` checked and normalised as a logical directory: ``""`` (also ``/`` or ``.``) for the roots."""
        return str(self.native.directory(_text(path)))

    def scandir(self, path: str) -> List[Entry]:
        d = self.directory(path)
        return [self._entry(d, t) for t in self.native.list_dir(d)]

    def entry(self, path: str) -> Optional[Entry]:
        """The one name ``path`` (not ``""``) as ``scandir`` of its directory would list it, or None when it would not
        be listed: the name looked at (``lstat``) in each shard's directory at once, by the same rules, without
        reading the directory."""
        logical = self.directory(path)
        got = self.native.entry(logical)
        return None if got is None else self._entry(logical.rpartition("/")[0], got)

    def with_stats(self, d: str, entries: List[Entry]) -> List[Entry]:
        """``entries`` (of ``scandir(d)``), each file with its winning copy's ``lstat`` kept for ``stat()``. A copy
        gone since the listing is looked for again by ``entry`` (a read may have moved it home), and left out when
        it is gone."""
        out: List[Entry] = []
        for e in entries:
            if not e.is_file():
                out.append(e)
                continue
            try:
                e.stat()
                out.append(e)
            except FileNotFoundError:
                again = self.entry(e.path)
                if again is not None:
                    out.append(again)
        return out

    def remove_dir(self, logical: str, shards: Sequence[int]) -> None:
        """``rmdir`` of ``logical`` in each of ``shards``, never through a link; the first error is raised after
        every shard was tried."""
        self.native.remove_dir(logical, list(shards))

    def walk(self, top: str, onerror: OnError) -> Iterator[Tuple[str, List[str], List[str]]]:
        """``os.walk`` of the logical tree, top down: each directory is listed in the shards its parent's listing
        found it in; ``dirnames`` may be pruned in place. A missing ``top`` is ``NotFound``; a subdirectory gone
        since its parent was listed is skipped. An ``OSError`` goes to ``onerror`` (the walk goes on), or is
        raised when it is None."""
        pending: List[Tuple[str, Optional[List[int]]]] = [(self.directory(top), None)]
        while pending:
            d, held = pending.pop()
            try:
                got = self.native.list_dir(d) if held is None else self.native.list_dir_in(d, held)
            except OSError as e:
                if onerror is None:
                    raise
                onerror(e)
                continue
            if got is None:
                continue  # gone since its parent was listed (a delete, a drain's clean-up)
            entries = [self._entry(d, t) for t in got]
            subdirs: Dict[str, List[int]] = {e.name: list(e.shards) for e in entries if e.is_dir()}
            dirnames = [e.name for e in entries if e.is_dir()]
            yield d, dirnames, [e.name for e in entries if e.is_file()]
            for name in reversed(dirnames):
                if name in subdirs:
                    pending.append((_join(d, name), subdirs[name]))

    def glob(self, pattern: str) -> List[str]:
        parts = normalise(pattern).split("/")
        # The leading components without wildcards name where to start; the last is always matched by a listing.
        literal = 0
        while literal < len(parts) - 1 and not _wild(parts[literal]):
            literal += 1
        top, pats = "/".join(parts[:literal]), parts[literal:]
        out: List[str] = []
        try:
            for d, dirnames, filenames in self.walk(top, None):
                below = [p for p in d[len(top):].split("/") if p]
                for name in dirnames + filenames:
                    if _match(below + [name], pats):
                        out.append(_join(d, name))
                dirnames[:] = [n for n in dirnames if _may_match_below(below + [n], pats)]
        except NotFound:  # no directory ``top``: nothing matches, as for glob.glob
            return []
        return sorted(out)


def _join(d: str, name: str) -> str:
    return d + "/" + name if d else name


def _wild(part: str) -> bool:
    return part == "**" or any(c in part for c in "*?[")


def _name_matches(name: str, pat: str) -> bool:
    # As glob: a name starting with '.' only by a pattern starting with '.'.
    if name.startswith(".") and not pat.startswith("."):
        return False
    return fnmatch.fnmatchcase(name, pat)


def _match(parts: List[str], pats: List[str]) -> bool:
    """Whether the components ``parts`` match the pattern's ``pats``; ``**`` matches any number of components (none
    starting with '.')."""
    if not pats:
        return not parts
    if pats[0] == "**":
        for i in range(len(parts) + 1):
            if _match(parts[i:], pats[1:]):
                return True
            if i < len(parts) and parts[i].startswith("."):
                return False
        return False
    return bool(parts) and _name_matches(parts[0], pats[0]) and _match(parts[1:], pats[1:])


def _may_match_below(parts: List[str], pats: List[str]) -> bool:
    """Whether a path below the directory ``parts`` may match ``pats``: whether the walk enters it."""
    if not pats:
        return False
    if pats[0] == "**":
        return True
    if not parts:
        return True
    return _name_matches(parts[0], pats[0]) and _may_match_below(parts[1:], pats[1:])
