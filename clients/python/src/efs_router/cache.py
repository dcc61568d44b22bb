"""The NFS client's name cache, and how to make a lookup ask the server instead (router/src/cache.rs)."""

from __future__ import annotations

import os
from typing import Union


def revalidate_dir(path: Union[str, os.PathLike[str]]) -> bool:
    """Makes the next lookup of any name in the directory ``path`` answer as the server does now, not as this
    NFS client's name cache remembers (router/src/cache.rs): opening a directory makes the client fetch its
    attributes, and a directory that changed drops its cached lookups, found or missing. One round trip, plus a
    LOOKUP for each name then looked up in a directory that changed. False when ``path`` is not there, even
    after its parents were revalidated the same way (a directory another client made is found at once)."""
    path = os.fspath(path)
    for attempt in range(2):
        try:
            os.close(os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))
            return True
        except FileNotFoundError:
            # Missing, maybe only in this client's cache of the parent: ask the parent first.
            parent = os.path.dirname(path.rstrip("/"))
            if attempt or not parent or parent == path or not revalidate_dir(parent):
                return False
    return False
