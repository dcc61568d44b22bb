"""Logical paths (router/src/path.rs)."""

from __future__ import annotations

from . import _native
from .errors import PathError


def normalise(path: str) -> str:
    """``path`` checked and normalised, as the router checks it: relative, ``/``-separated, no empty, ``.`` or
    ``..`` components, no NUL, none of the router's own names; ``PathError`` (with its ``kind``) otherwise."""
    return _native.normalise(_text(path))


def _text(path: str) -> str:
    """``path`` as a string Rust can hold: a lone surrogate is ``PathError("not-unicode")``."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise PathError("not-unicode", path, "is not valid Unicode (a lone surrogate): no file can have this name") \
            from None
    return path
