"""What the tests of efs_router share (standard library unittest). The tests run against the installed
package (``make python-test`` installs it into a virtual environment and runs them from outside the
repository); unittest discovery (``-s tests``) puts this directory on ``sys.path``, so each test module
imports this one as ``helpers``. The routing vectors are ``tests/vectors/routing.json`` of the repository,
found from this file's place or named by the environment variable ``EFS_ROUTER_VECTORS``.
"""

import hashlib
import os
import tempfile
import unittest
from typing import Any, List, Optional, Sequence, Sized, Tuple
from unittest import mock

import efs_router
from efs_router import Layout, MountTargetList, Router, Target

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.environ.get("EFS_ROUTER_VECTORS") or os.path.join(HERE, "..", "..", "..", "tests", "vectors",
                                                                "routing.json")
LIST_VECTORS = os.path.join(os.path.dirname(VECTORS), "lists.json")
THREE = ["/", "/shards/use1-az4", "/shards/use1-az1"]


def original(file_path: str, mount_targets: Sized) -> int:
    # The original client's expression, verbatim.
    return int(hashlib.sha256(file_path.encode()).hexdigest(), 16) % len(mount_targets)


def make_list(roots: Sequence[str], strategy: str = efs_router.RENDEZVOUS) -> MountTargetList:
    return MountTargetList([Target("fsmt-%d" % i, "10.0.%d.4" % i, root=r) for i, r in enumerate(roots)], strategy)


def v2(*entries: str) -> str:
    """A version 2 document of these entries (each a JSON object's contents)."""
    return '{"mount_targets":[%s],"strategy":"rendezvous","version":2}' % ",".join("{%s}" % e for e in entries)


def put(path: str, data: bytes) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)


def files_under(d: str) -> List[str]:
    return sorted(os.path.relpath(os.path.join(dp, f), d) for dp, _, fs in os.walk(d) for f in fs)


class FileSystemCase(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.base = self._tmp.name
        for r in THREE:
            os.makedirs(os.path.join(self.base, r.lstrip("/")), exist_ok=True)

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def router(self, roots: Sequence[str] = THREE, strategy: str = "rendezvous",
               layout: Optional[Layout] = None) -> Router:
        return Router(make_list(roots, strategy), layout or Layout.single_mount(self.base))

    @staticmethod
    def misplaced(router: Router, home: int, other: int, tag: str) -> Tuple[str, str, str]:
        for i in range(100000):
            p = "data/analysis/device-%s%d-1700000000.json" % (tag, i)
            r = router.resolve(p)
            if r.index == home:
                return p, r.real, router.layout.real_path(router.targets, other, r.logical)
        raise AssertionError("no path found")


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def put_at(path: str, data: bytes, secs: int, nanos: int = 0) -> None:
    """``path`` holds ``data``, last modified ``secs`` seconds (and ``nanos``) after an arbitrary epoch."""
    put(path, data)
    set_mtime(path, secs, nanos)


def set_mtime(path: str, secs: int, nanos: int = 0) -> None:
    ns = (1_700_000_000 + secs) * 1_000_000_000 + nanos
    os.utime(path, ns=(ns, ns))


def names(d: str) -> List[str]:
    """The names in ``d``, sorted: no private name may be left behind."""
    return sorted(os.listdir(d))


def no_hard_links(code: int) -> "mock._patch[mock.MagicMock]":
    """``os.link`` failing with ``code``, as on a file system without hard links."""
    def link(src: str, dst: str, **kw: Any) -> None:  # as the kernel does: the source is looked up first
        os.lstat(src)
        raise OSError(code, os.strerror(code), src, None, dst)
    return mock.patch.object(os, "link", side_effect=link)
