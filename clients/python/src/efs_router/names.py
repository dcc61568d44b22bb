"""The router's own names (router/src/names.rs)."""

from __future__ import annotations

import secrets
from typing import Union

_PRIVATE_PREFIX = ".efs-router-"
_PRIVATE_SUFFIXES = {".tmp": "temporary", ".moving": "moving"}
_HEX = frozenset("0123456789abcdef")

REPORTS_DIR = ".efs-router-clients"
"""The directory of the clients' reports, at the file system's root (router/src/report.rs ``DIR``)."""


def is_private_name(name: Union[str, bytes]) -> bool:
    """Whether ``name`` (one path component) is one of the router's own names: ``.efs-router-`` then 16
    lowercase hexadecimal digits then ``.tmp`` (a write in progress) or ``.moving`` (a move in progress), or
    ``.efs-router-clients`` (the clients' reports, ``REPORTS_DIR``). Such names are never counted, moved or
    routed."""
    if isinstance(name, bytes):
        try:
            name = name.decode("ascii")
        except UnicodeDecodeError:
            return False
    if name == REPORTS_DIR:
        return True
    if not name.startswith(_PRIVATE_PREFIX):
        return False
    rest = name[len(_PRIVATE_PREFIX):]
    return len(rest) > 16 and all(c in _HEX for c in rest[:16]) and rest[16:] in _PRIVATE_SUFFIXES


def _private_name(suffix: str) -> str:
    # Random: many tasks share the file system, and each container's process may be pid 1.
    return _PRIVATE_PREFIX + secrets.token_hex(8) + suffix


def _client_id() -> str:
    """A report's client id: 16 random lowercase hexadecimal digits."""
    return secrets.token_hex(8)
