"""Listing the logical tree (router/src/listing.rs): ``Router.listdir``, ``scandir``, ``walk`` and ``glob``; and, for
the fsspec file system (fsspec_fs.py) only, one name looked up by the same rules (``_Lister.entry``) and a listing's
sizes (``_Lister.with_stats``).

A logical directory is the union of that directory in every distinct shard directory, read at once (one READDIR
stream per shard that holds it, a bounded ``ThreadPoolExecutor``). Each name appears once:

- a name that is a directory in any shard is a directory (the union again, below it); a file of the same name in
  another shard is not listed (a read of it still finds it, unless its home holds the directory);
- otherwise it is a file, and the copy that wins is the one ``read_with_fallback`` reads: home's when home has it;
  else the newest of the other shards' copies (``st_mtime_ns``; a tie goes to the shard earlier in the list). Only
  regular files are data: a symbolic link, FIFO, socket or device is never listed and never followed, and a name
  whose home copy is one is not listed at all, since the read refuses it (``NotARegularFile``).

The router's own names (``is_private_name``) are never shown, nor another shard's directory (``shards/use1-az4``
under ``/``), nor a directory that holds nothing but those (``shards``). Every directory is opened beneath the
mount, one component at a time with ``O_NOFOLLOW``; opening it revalidates this client's cache of it, so the names
are the server's. Names and kinds come from the directory entries (``d_type``): no ``stat`` per entry, except where
the file system does not say, and for a name with copies in two or more shards other than its home.

Shards that share a root are one directory: the first of them in list order stands for it (``Entry.index`` and
``Entry.shards``).
"""

from __future__ import annotations

import errno
import fnmatch
import os
import stat
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

from .cache import revalidate_dir
from .delete import _open_beneath
from .errors import InsideAnotherShard, NotFound, PathError
from .layout import Layout
from .list import Target
from .names import is_private_name
from .path import _at_or_under, normalise

FILE = "file"
DIRECTORY = "dir"
_OTHER = "other"  # a symbolic link, FIFO, socket or device: not data

Held = List[Tuple[int, str]]  # the shards holding a name, each with what it is there
OnError = Optional[Callable[[OSError], object]]
T = TypeVar("T")
U = TypeVar("U")


class Entry:
    """One name of a logical directory, as ``os.DirEntry`` is one of a directory. ``name``; ``path``, its logical
    path (what ``read_with_fallback`` takes); ``kind``, ``"file"`` or ``"dir"``; ``index``, the shard whose copy it
    is (for a file, the one ``read_with_fallback`` reads now; for a directory, the first shard in list order that
    holds it); ``real``, that copy's path on this host; ``shards``, every shard holding the name as this kind, in
    list order (a file in more than one has stale copies, which a read or the function's moves drop)."""

    __slots__ = ("name", "path", "kind", "index", "real", "shards", "_mount", "_beneath", "_stat")

    def __init__(self, name: str, path: str, kind: str, index: int, real: str, shards: Tuple[int, ...],
                 mount: str, beneath: str, st: Optional[os.stat_result] = None):
        self.name = name
        self.path = path
        self.kind = kind
        self.index = index
        self.real = real
        self.shards = shards
        self._mount = mount  # where ``stat`` opens the copy's directory from, without following a link
        self._beneath = beneath
        self._stat = st

    def is_dir(self) -> bool:
        return self.kind == DIRECTORY

    def is_file(self) -> bool:
        return self.kind == FILE

    def stat(self) -> os.stat_result:
        """The winning copy's ``lstat``, kept after the first call: its directory opened beneath the mount without
        following a link, the name looked at relative to it."""
        if self._stat is None:
            fd = _open_beneath(self._mount, self._beneath)
            try:
                self._stat = os.stat(self.name, dir_fd=fd, follow_symlinks=False)
            finally:
                os.close(fd)
        return self._stat

    def __repr__(self) -> str:
        return "Entry(%r, kind=%r, index=%d, shards=%r)" % (self.path, self.kind, self.index, self.shards)


class _Contested(NamedTuple):
    """A file name in several shards other than its home: the newest copy wins."""

    name: str
    home: int
    candidates: List[int]
    held: Held


class _Lister:
    """Listing by one list from start to end: its shards, the paths reserved for other shards' directories
    (``(relative path, root)``), ``home`` (a logical path's home shard) and the most directories read at once."""

    def __init__(self, layout: Layout, shards: Sequence[Target], reserved: Sequence[Tuple[str, str]],
                 home: Callable[[str], int], threads: int, looked: Optional[Callable[[str], List[int]]] = None):
        self.layout = layout
        self.shards = shards
        self.reserved = reserved
        self.home = home
        self.threads = threads
        # On a version 3 list: the shards a read of a path looks in (home first); a copy elsewhere is not listed.
        self.looked = looked
        self.distinct = [j for j, t in enumerate(shards) if all(k.root != t.root for k in shards[:j])]

    def directory(self, path: str) -> str:
        """``path`` checked and normalised as a logical directory: ``""`` (also ``/`` or ``.``) for the roots."""
        try:
            logical = normalise(path)
        except PathError as e:
            if e.kind == "empty":
                return ""
            raise
        for rel, root in self.reserved:
            if _at_or_under(logical, rel):
                raise InsideAnotherShard(path, root)
        return logical

    def scandir(self, path: str) -> List[Entry]:
        entries = self.entries_of(self.directory(path), self.distinct)
        if entries is None:
            raise NotFound("%r: no such directory in any shard" % path)
        return entries

    def walk(self, top: str, onerror: OnError) -> Iterator[Tuple[str, List[str], List[str]]]:
        """``os.walk`` of the logical tree, top down: each directory is listed in the shards its parent's listing
        found it in; ``dirnames`` may be pruned in place. A missing ``top`` is ``NotFound``; a subdirectory gone
        since its parent was listed is skipped. An ``OSError`` goes to ``onerror`` (the walk goes on), or is
        raised when it is None."""
        pending: List[Tuple[str, Optional[List[int]]]] = [(self.directory(top), None)]
        while pending:
            d, held = pending.pop()
            try:
                entries = self.entries_of(d, self.distinct if held is None else held)
                if entries is None and held is None:
                    raise NotFound("%r: no such directory in any shard" % top)
            except OSError as e:
                if onerror is None:
                    raise
                onerror(e)
                continue
            if entries is None:
                continue  # gone since its parent was listed (a delete, a drain's clean-up)
            subdirs = {e.name: list(e.shards) for e in entries if e.is_dir()}
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

    def entry(self, path: str) -> Optional[Entry]:
        """The one name ``path`` (not ``""``) as ``scandir`` of its directory would list it, or None when it would not
        be listed: the name looked at (``lstat``) in each shard's directory at once, by the same rules, without
        reading the directory. Costs ``scandir``'s opens and one ``lstat`` per shard. For a file, ``stat()`` is the
        winning copy's ``lstat`` already."""
        d, _, name = self.directory(path).rpartition("/")
        held: Held = []
        stats: Dict[int, os.stat_result] = {}
        for j, st in zip(self.distinct, self._map(lambda j: self._lstats(j, d, [name], regular=False)[0],
                                                  self.distinct)):
            if st is not None:
                held.append((j, _kind(st)))
                stats[j] = st
        got = self._settle(d, {name: held}) if held else []
        if not got:
            return None
        e = got[0]
        if e.is_file() and e._stat is None:
            e._stat = stats[e.index]
        return e

    def with_stats(self, d: str, entries: List[Entry]) -> List[Entry]:
        """``entries`` (of ``scandir(d)``), each file with its winning copy's ``lstat`` kept for ``stat()``: one
        open of ``d`` per shard holding a winner and one ``lstat`` per file, the shards at once. A copy gone (or no
        longer a regular file) since the listing is looked for again by ``entry`` (a read may have moved it home),
        and left out when it is gone."""
        asks: Dict[int, List[Entry]] = {}
        for e in entries:
            if e.is_file() and e._stat is None:
                asks.setdefault(e.index, []).append(e)
        shards = sorted(asks)
        gone: Dict[str, Optional[Entry]] = {}
        for j, got in zip(shards, self._map(lambda j: self._lstats(j, d, [e.name for e in asks[j]]), shards)):
            for e, st in zip(asks[j], got):
                if st is None:
                    gone[e.name] = None
                else:
                    e._stat = st
        for name in gone:
            gone[name] = self.entry(_join(d, name))
        out: List[Entry] = []
        for e in entries:
            if e.name not in gone:
                out.append(e)
                continue
            again = gone[e.name]
            if again is not None:
                out.append(again)
        return out

    def entries_of(self, d: str, shards: Sequence[int]) -> Optional[List[Entry]]:
        """``_union``, except that a directory above another shard's (``shards`` under ``/``) holding nothing else
        is not there: the parent's listing does not show it either."""
        entries = self._union(d, shards)
        above = bool(d) and any(_strictly_under(r, d) for r, _ in self.reserved)
        if entries is not None and above and not entries:
            return None
        return entries

    def _union(self, d: str, shards: Sequence[int]) -> Optional[List[Entry]]:
        """The union of ``d`` in ``shards`` (each standing for its root), sorted by name; None when none has it."""
        names: Dict[str, Held] = {}
        found = False
        for j, got in zip(shards, self._map(lambda j: self._read(j, d), shards)):
            if got is None:
                continue
            found = True
            for name, kind in got:
                names.setdefault(name, []).append((j, kind))
        return self._settle(d, names) if found else None

    def _map(self, f: Callable[[U], T], items: Sequence[U]) -> List[T]:
        """``f`` of each item, at once (up to ``threads``) when there are several: over NFS each is a chain of
        round trips that does not wait on the others. The first error, in item order, is raised."""
        if len(items) < 2:
            return [f(i) for i in items]
        with ThreadPoolExecutor(max_workers=min(len(items), self.threads)) as pool:
            return list(pool.map(f, items))

    def _settle(self, d: str, names: Dict[str, Held]) -> List[Entry]:
        out: List[Entry] = []
        contested: List[_Contested] = []
        for name in sorted(names):
            held = names[name]
            logical = _join(d, name)
            if any(_at_or_under(logical, r) for r, _ in self.reserved):
                continue
            dirs = _holding(held, DIRECTORY)
            if dirs:
                # ``shards`` under ``/``: shown only when it holds more than other shards' roots.
                above = any(_strictly_under(r, logical) for r, _ in self.reserved)
                if above and self.entries_of(logical, dirs) is None:
                    continue
                out.append(self._entry(d, name, DIRECTORY, dirs[0], dirs))
                continue
            pick = self._pick(logical, held)
            if isinstance(pick, int):
                out.append(self._entry(d, name, FILE, pick, _holding(held, FILE)))
            elif pick is not None:
                contested.append(_Contested(name, pick[0], pick[1], held))
        if contested:
            out.extend(self._newest(d, contested))
            out.sort(key=lambda e: e.name)
        return out

    def _pick(self, logical: str, held: Held) -> Union[None, int, Tuple[int, List[int]]]:
        """Which copy of the file ``logical`` a read takes, as far as the names tell: a shard, none (not listed), or
        (home, candidates) when the newest of several copies decides."""
        if self.looked is not None:
            shards = {self._standing_for(j) for j in self.looked(logical)}
            held = [(j, kind) for j, kind in held if j in shards]
            if not held:
                return None
        if len(held) == 1:
            j, kind = held[0]
            return j if kind == FILE else None
        home = self._standing_for(self.home(logical))
        for j, kind in held:
            if j == home:  # the read takes home's copy, or refuses what is there (NotARegularFile)
                return j if kind == FILE else None
        candidates = _holding(held, FILE)
        if len(candidates) < 2:
            return candidates[0] if candidates else None
        return home, candidates

    def _newest(self, d: str, contested: List[_Contested]) -> List[Entry]:
        """The entries of names in several shards but not at home: the newest copy of each wins, unless home has a
        regular file by now (a read that missed at home looks there again, and a move may have put it there). One
        ``lstat`` per copy, the shards at once."""
        asks: Dict[int, List[str]] = {}
        for c in contested:
            for j in [*c.candidates, c.home]:
                asks.setdefault(j, []).append(c.name)
        shards = sorted(asks)
        seen: Dict[Tuple[int, str], os.stat_result] = {}
        for j, got in zip(shards, self._map(lambda j: self._lstats(j, d, asks[j]), shards)):
            for name, st in zip(asks[j], got):
                if st is not None:
                    seen[(j, name)] = st
        out: List[Entry] = []
        for c in contested:
            winner: Optional[int] = c.home if (c.home, c.name) in seen else None
            if winner is None:
                for j in c.candidates:
                    st = seen.get((j, c.name))
                    if st is not None and (winner is None or st.st_mtime_ns > seen[(winner, c.name)].st_mtime_ns):
                        winner = j
            if winner is not None:
                out.append(self._entry(d, c.name, FILE, winner, _holding(c.held, FILE), seen[(winner, c.name)]))
        return out

    def _lstats(self, j: int, d: str, names: List[str], regular: bool = True) -> List[Optional[os.stat_result]]:
        """The ``lstat`` of each of ``names`` in ``d`` of shard ``j`` that is a regular file there now (with
        ``regular=False``: whatever it is)."""
        fd = self._open(j, d)
        if fd is None:
            return [None] * len(names)
        out: List[Optional[os.stat_result]] = []
        try:
            for name in names:
                try:
                    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                except FileNotFoundError:
                    out.append(None)
                    continue
                out.append(st if stat.S_ISREG(st.st_mode) or not regular else None)
        finally:
            os.close(fd)
        return out

    def _read(self, j: int, d: str) -> Optional[List[Tuple[str, str]]]:
        """The names in ``d`` of shard ``j`` with what each is; None when the shard has no such directory (or a link
        or a non-directory on the way: never followed)."""
        fd = self._open(j, d)
        if fd is None:
            return None
        out: List[Tuple[str, str]] = []
        try:
            with os.scandir(fd) as entries:
                for e in entries:
                    if is_private_name(e.name) or not _is_unicode(e.name):
                        continue
                    if e.is_dir(follow_symlinks=False):
                        out.append((e.name, DIRECTORY))
                    elif e.is_file(follow_symlinks=False):
                        out.append((e.name, FILE))
                    else:
                        out.append((e.name, _OTHER))
        finally:
            os.close(fd)
        return out

    def _place(self, j: int, d: str) -> Tuple[str, str, str]:
        """``d`` of shard ``j``: its path on this host, and the mount and the path beneath it."""
        mount, rel = self.layout.beneath_mount(self.shards, j)
        base = self.layout.shard_dir(self.shards, j)
        return (os.path.join(base, d) if d else base), mount, "/".join(p for p in (rel, d) if p)

    def _open(self, j: int, d: str) -> Optional[int]:
        """``d`` of shard ``j`` opened beneath the mount (which revalidates it); None when the server says it is
        missing, or it is a link or not a directory."""
        real, mount, beneath = self._place(j, d)
        for attempt in (0, 1):
            try:
                try:
                    return _open_beneath(mount, beneath)
                except FileNotFoundError:
                    if attempt:
                        return None
                # Missing, maybe only in this client's cache: ask the server, then look once more.
                if not revalidate_dir(real):
                    return None
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR):
                    return None
                raise
        return None

    def _standing_for(self, i: int) -> int:
        """The shard that stands for shard ``i``'s root in ``distinct``."""
        return next(j for j in range(i + 1) if self.shards[j].root == self.shards[i].root)

    def _entry(self, d: str, name: str, kind: str, j: int, shards: List[int],
               st: Optional[os.stat_result] = None) -> Entry:
        real, mount, beneath = self._place(j, d)
        return Entry(name, _join(d, name), kind, j, os.path.join(real, name), tuple(shards), mount, beneath, st)


def _kind(st: os.stat_result) -> str:
    if stat.S_ISDIR(st.st_mode):
        return DIRECTORY
    return FILE if stat.S_ISREG(st.st_mode) else _OTHER


def _holding(held: Held, kind: str) -> List[int]:
    return [j for j, k in held if k == kind]


def _join(d: str, name: str) -> str:
    return d + "/" + name if d else name


def _strictly_under(path: str, d: str) -> bool:
    return (not d and bool(path)) or path.startswith(d + "/")


def _is_unicode(name: str) -> bool:
    # A name that is not UTF-8 comes with lone surrogates, which no logical path (no read) can name.
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


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
