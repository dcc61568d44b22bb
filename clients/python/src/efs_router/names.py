"""The router's own names (router/src/names.rs)."""

from __future__ import annotations

from typing import Union

from . import _native

REPORTS_DIR = ".efs-router-clients"
"""The directory of the clients' reports, at the file system's root (router/src/report.rs ``DIR``)."""


def is_private_name(name: Union[str, bytes]) -> bool:
    """Whether ``name`` (one path component) is one of the router's own names: ``.efs-router-`` then 16
    lowercase hexadecimal digits then ``.tmp`` (a write in progress) or ``.moving`` (a move in progress), or
    ``.efs-router-clients`` (the clients' reports, ``REPORTS_DIR``). Such names are never counted, moved or
    routed."""
    if isinstance(name, str):
        try:
            name = name.encode("utf-8")
        except UnicodeEncodeError:
            return False
    return _native.is_private_name(name)
