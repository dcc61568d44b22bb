"""What the tests of efs_router share (standard library unittest). The tests run against the installed
package (``make python-test`` installs it into a virtual environment and runs them from outside the
repository); unittest discovery (``-s tests``) puts this directory on ``sys.path``, so each test module
imports this one as ``helpers``. The routing vectors are ``tests/vectors/routing.json`` of the repository,
found from this file's place or named by the environment variable ``EFS_ROUTER_VECTORS``.
"""

import hashlib
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request
from typing import IO, Any, ClassVar, Dict, List, Optional, Sequence, Sized, Tuple
from unittest import mock

import efs_router
from efs_router import Layout, MountTargetList, Router, Target

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.environ.get("EFS_ROUTER_VECTORS") or os.path.join(HERE, "..", "..", "..", "tests", "vectors",
                                                                "routing.json")
LIST_VECTORS = os.path.join(os.path.dirname(VECTORS), "lists.json")
MISS_VECTORS = os.path.join(os.path.dirname(VECTORS), "misses.json")
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


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def moto_command() -> List[str]:
    command = shutil.which("moto_server")
    if command is not None:
        return [command]
    if importlib.util.find_spec("moto") is not None:
        return [sys.executable, "-m", "moto.server"]
    raise AssertionError("moto_server is not installed (pip install 'moto[server]'; make tools installs it)")


def stop(server: "subprocess.Popen[bytes]") -> None:
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait()


class MotoServerCase(unittest.TestCase):
    """Tests against a real moto_server: one for the class, on a free port of 127.0.0.1, stopped after the class's
    tests (and when a subclass's ``setUpClass`` fails after this one's). Each test runs with ``env`` in
    ``os.environ`` and has ``self.ssm``, a boto3 SSM client on the server. A subclass may add to ``env`` in its
    ``setUpClass``, after calling this one."""

    server: ClassVar["subprocess.Popen[bytes]"]
    log: ClassVar[IO[bytes]]
    endpoint: ClassVar[str]
    env: ClassVar[Dict[str, str]]

    @classmethod
    def setUpClass(cls) -> None:
        super().setUpClass()
        port = free_port()
        cls.endpoint = "http://127.0.0.1:%d" % port
        cls.log = tempfile.TemporaryFile()
        cls.addClassCleanup(cls.log.close)
        cls.server = subprocess.Popen(moto_command() + ["-H", "127.0.0.1", "-p", str(port)],
                                      stdin=subprocess.DEVNULL, stdout=cls.log, stderr=subprocess.STDOUT)
        cls.addClassCleanup(stop, cls.server)  # class cleanups run last first: before the log is closed
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(cls.endpoint + "/moto-api/", timeout=2):
                    break
            except OSError:
                if cls.server.poll() is not None or time.monotonic() > deadline:
                    stop(cls.server)  # before reading its log: the server shares the file's offset
                    cls.log.seek(0)
                    raise AssertionError("moto_server did not start on %s:\n%s"
                                         % (cls.endpoint, cls.log.read().decode(errors="replace"))) from None
                time.sleep(0.1)
        # Dummy credentials, and nothing read from this machine's AWS configuration.
        cls.env = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_SESSION_TOKEN": "testing",
                   "AWS_DEFAULT_REGION": "us-east-1", "AWS_REGION": "us-east-1", "AWS_ENDPOINT_URL": cls.endpoint,
                   "AWS_CONFIG_FILE": os.devnull, "AWS_SHARED_CREDENTIALS_FILE": os.devnull}

    def setUp(self) -> None:
        super().setUp()
        patcher = mock.patch.dict(os.environ, self.env)
        patcher.start()
        self.addCleanup(patcher.stop)
        import boto3  # here, not at the top: a module of these tests imports without boto3 (and may skip)

        self.ssm: Any = boto3.client("ssm", endpoint_url=self.endpoint, region_name="us-east-1",
                                     aws_access_key_id="testing", aws_secret_access_key="testing")
