"""The NFS client's name cache (router/src/cache.rs)."""

from __future__ import annotations

import os
from typing import Union

from . import _native


def revalidate_dir(path: Union[str, os.PathLike[str]]) -> bool:
    """Makes this client ask the server about the directory ``path`` (its cached names may be up to a minute old):
    whether it exists now. A name missing in a cached listing is then looked up afresh."""
    return _native.revalidate_dir(os.fspath(path))
