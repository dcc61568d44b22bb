"""Logical paths (router/src/path.rs)."""

from __future__ import annotations

from typing import List

from .errors import PathError
from .names import is_private_name


def normalise(path: str) -> str:
    """Checks and normalises a logical path (router/README.md, "Logical paths").

    One leading ``/`` is dropped; ``.`` parts are dropped; ``..`` removes the part before it.
    Refused with ``PathError``: a NUL byte (``nul``), an empty part such as ``a//b`` or ``a/``
    (``empty-component``), a ``..`` that would leave the root (``escapes-root``), a path
    that normalises to nothing (``empty``), and one with a part, once normalised, that is one of the
    router's own names (``reserved-name``, see ``is_private_name``).
    """
    if not isinstance(path, str):
        raise TypeError("a logical path is a str, not %s" % type(path).__name__)
    if "\0" in path:
        raise PathError("nul", path, "contains a NUL byte")
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        raise PathError("not-unicode", path, "is not valid Unicode (a lone surrogate)") from None
    rest = path[1:] if path.startswith("/") else path
    if not rest:
        raise PathError("empty", path, "names no file (it is empty or normalises to the shard root)")
    parts = rest.split("/")
    if "" in parts:
        raise PathError("empty-component", path, "has an empty component ('//', or a trailing '/')")
    out: List[str] = []
    for part in parts:
        if part == ".":
            continue
        if part == "..":
            if not out:
                raise PathError("escapes-root", path, "leaves its root through '..'")
            out.pop()
            continue
        out.append(part)
    if not out:
        raise PathError("empty", path, "names no file (it is empty or normalises to the shard root)")
    for part in out:
        if is_private_name(part):
            raise PathError("reserved-name", path, "has the component %r, a name the router keeps for itself "
                                                   "(.efs-router-<16 hex digits>.tmp or .moving, or "
                                                   ".efs-router-clients)"
                            % part)
    return "/".join(out)


def _at_or_under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")
