"""The errors the package raises on purpose, each with the rule it names (``kind``). The native module
(``_native``, the Rust router) raises these very classes."""

from __future__ import annotations

import errno
from typing import Optional


class RouterError(Exception):
    """Base of every error this module raises on purpose."""


class ListError(RouterError, ValueError):
    """The published list was refused. ``kind`` names the rule, as ``tests/vectors/lists.json`` spells it:
    not-a-list, duplicate-key, bad-version, open-needs-version, bad-open, bad-scope, shards-need-version, bad-shards,
    empty-id, duplicate-id, bad-root, reserved-root, duplicate-root or nested-root."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class PathError(RouterError, ValueError):
    """A logical path was refused. ``kind``: empty, nul, empty-component, escapes-root or reserved-name (a
    component that is one of the router's own names), and not-unicode, for a str with a lone surrogate,
    which Rust's strings cannot hold."""

    def __init__(self, kind: str, path: str, message: str):
        super().__init__("path %r %s" % (path, message))
        self.kind = kind
        self.path = path


class RouteError(RouterError):
    """No shard to route to. ``kind``: no-targets or all-draining."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class LayoutError(RouterError, ValueError):
    """A layout that does not fit the list."""


class InsideAnotherShard(RouterError, ValueError):
    """Joined to an outer root (``/``), the path lands in another shard's directory."""

    def __init__(self, path: str, root: str):
        super().__init__("path %r lies inside the directory of shard root %s; it would alias that shard's files"
                         % (path, root))
        self.path = path
        self.root = root


class NotFound(RouterError, FileNotFoundError):
    """No shard has the file."""


class Reappearing(RouterError):
    """A delete removed a copy in each of ``rounds`` rounds and it still came back: written again all along."""

    def __init__(self, path: str, rounds: int):
        super().__init__("%r: removed %d times and written again each time; not known deleted" % (path, rounds))
        self.path = path
        self.rounds = rounds


class NotARegularFile(RouterError, OSError):
    """A copy that is a symbolic link, FIFO, device, socket or directory: not data, left alone. ``path``
    names it, ``what`` says what it is. Raised for the home copy of a read and for either side of a move."""

    def __init__(self, path: str, what: str):
        super().__init__(errno.EINVAL, "%s is a %s, not a regular file: not data, left alone" % (path, what))
        self.path = path
        self.what = what

    def __str__(self) -> str:
        return "%s is a %s, not a regular file: not data, left alone" % (self.path, self.what)


class OtherOwners(RouterError, OSError):
    """A move between two files of different owners: which is newer is the writers' to say (an mtime anyone
    can set), so neither takes the other's name and both stay. ``src`` and ``dst`` name them, ``src_uid`` and
    ``dst_uid`` their owners (Rust ``relocation::OtherOwners``)."""

    def __init__(self, src: str, dst: str, src_uid: int, dst_uid: int):
        super().__init__(errno.EACCES, "%s (uid %d) and %s (uid %d) have different owners: neither replaces the "
                         "other; both left for a person to look at" % (src, src_uid, dst, dst_uid))
        self.src, self.dst, self.src_uid, self.dst_uid = src, dst, src_uid, dst_uid

    def __str__(self) -> str:
        return "%s (uid %d) and %s (uid %d) have different owners: neither replaces the other; both left for a " \
               "person to look at" % (self.src, self.src_uid, self.dst, self.dst_uid)


class ReportError(RouterError, ValueError):
    """A report file that is not a report. ``kind``: too-large, malformed or wrong-name (report.rs ``ReportError``)."""

    def __init__(self, kind: str, message: str):
        super().__init__(message)
        self.kind = kind


class ReportFault(RouterError):
    """This router could not report. ``kind``: ``no-report-dir`` (a per-target layout without a shard rooted at ``/``
    and no ``report_root``) or ``report-lapsed`` (the lease: the report is ``LEASE_SECS`` old and writing it failed,
    so nothing is written or moved; ``last_ok`` is when it was last written, None if never)."""

    def __init__(self, kind: str, message: str, last_ok: Optional[int] = None):
        super().__init__(message)
        self.kind = kind
        self.last_ok = last_ok
