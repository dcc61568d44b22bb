"""fsspec's own test suites for implementations (``fsspec.tests.abstract``) on the efs-router file system.

They are written for pytest (fixtures), so ``make python-test`` runs this file with pytest after the unittest
tests; its name keeps unittest's discovery (``test_*.py``) away from it. Every suite of classes the installed fsspec
has runs: copy (within the file system), get (to a local directory), put (from one), open (``xb``) and pipe
(``mode="create"``). Not run: ``fsspec/tests/abstract/mv.py``, two plain functions that test the local file system
(``fsspec.filesystem("file")``), not an implementation given to them.

Each test gets a new file system root of its own holding three shards (``/``, ``/shards/use1-az4``,
``/shards/use1-az1``: the two under ``/`` are other shards' directories, which the logical tree never shows), and
the suites' scenarios start at the logical root (``""``; fsspec's names of logical paths start with '/').
"""

import os
from typing import Callable, Iterator

import pytest
from fsspec.tests.abstract import (
    AbstractCopyTests,
    AbstractFixtures,
    AbstractGetTests,
    AbstractOpenTests,
    AbstractPipeTests,
    AbstractPutTests,
)

from efs_router.fsspec_fs import EfsRouterFileSystem
from helpers import THREE, make_list


class EfsRouterFixtures(AbstractFixtures):  # type: ignore[misc]  # fsspec ships no type information
    @pytest.fixture
    def fs(self, tmp_path: str) -> Iterator[EfsRouterFileSystem]:
        # Beside, not in, the test's temporary directory: the get and put suites' local files are made there.
        base = os.path.join(str(tmp_path), "efs")
        for r in THREE:
            os.makedirs(os.path.join(base, r.lstrip("/")), exist_ok=True)
        # A new instance each time (fsspec would give back the one of equal options) that writes no report.
        yield EfsRouterFileSystem(mount=base, list_json=make_list(THREE).to_json(), report=False,
                                  skip_instance_cache=True)

    @pytest.fixture
    def fs_join(self) -> Callable[..., str]:
        # fsspec's names of logical paths: '/' before each component ("" is the root), as its memory file system.
        return lambda *parts: "/".join(parts)

    @pytest.fixture
    def fs_path(self) -> str:
        return ""

    @pytest.fixture
    def supports_empty_directories(self) -> bool:
        # mkdir makes a directory in the shard its path routes to: an empty one is listed like any other.
        return True


class TestEfsRouterCopy(EfsRouterFixtures, AbstractCopyTests):  # type: ignore[misc]
    pass


class TestEfsRouterGet(EfsRouterFixtures, AbstractGetTests):  # type: ignore[misc]
    pass


class TestEfsRouterPut(EfsRouterFixtures, AbstractPutTests):  # type: ignore[misc]
    pass


class TestEfsRouterOpen(EfsRouterFixtures, AbstractOpenTests):  # type: ignore[misc]
    pass


class TestEfsRouterPipe(EfsRouterFixtures, AbstractPipeTests):  # type: ignore[misc]
    pass
