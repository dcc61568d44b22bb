"""A router's report (efs_router.report): written when the router starts and every period, as Rust writes it
(tests/vectors/reports.json), refreshed from SSM, removed when the router is closed or collected; its place in each
layout; the task from a local metadata endpoint; the lease."""

import gc
import http.server
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import unittest
from typing import Any, Callable, ClassVar, Dict, List, Optional

import efs_router
import helpers
from efs_router import Layout, ReportError, ReportFault, Router
from efs_router import report as rp

TWO_SHARDS = ('{"mount_targets":[{"id":"fsmt-0","ip":"10.0.0.4","root":"/","az_id":"use1-az1","shards":2}],'
              '"strategy":"rendezvous","version":2}')
ORIGINAL = '{"mount_targets":[{"id":"fsmt-0","ip":"10.0.0.4"},{"id":"fsmt-1","ip":"10.0.1.4"}]}'
NO_SLASH = ('{"mount_targets":[{"id":"fsmt-0","ip":"10.0.0.4","root":"/shards/a"},'
            '{"id":"fsmt-1","ip":"10.0.1.4","root":"/shards/b"}],"strategy":"rendezvous"}')
REPORT_VECTORS = os.path.join(os.path.dirname(helpers.VECTORS), "reports.json")


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def read_report(path: Optional[str]) -> Dict[str, Any]:
    assert path is not None
    with open(path, "rb") as f:
        return rp.parse_report(os.path.basename(path), f.read())


def eventually(what: str, done: Callable[[], bool]) -> None:
    """Waits (up to a minute, then fails) for ``done``."""
    until = time.monotonic() + 60
    while not done():
        if time.monotonic() > until:
            raise AssertionError("never: " + what)
        time.sleep(0.005)


class FakeSsm:
    def __init__(self, value: str, version: int):
        self.value, self.version = value, version
        self.fail: Optional[Exception] = None

    def get_parameter(self, *, Name: str) -> Dict[str, Any]:  # Name: boto3's spelling
        if self.fail is not None:
            raise self.fail
        return {"Parameter": {"Name": Name, "Type": "String", "Value": self.value, "Version": self.version}}


class Base(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.root = self._tmp.name
        os.makedirs(os.path.join(self.root, "shards", "use1-az1.1"))

    def tearDown(self) -> None:
        self._tmp.cleanup()


class Writes(Base):
    def test_a_router_reports_the_exact_list_and_removes_the_report_when_closed(self) -> None:
        router = Router.reporting(TWO_SHARDS, Layout.single_mount(self.root), parameter_version=7,
                                  label="reader-service", report_clock=Clock(1_700_000_000))
        cid = router.client_id
        assert cid is not None
        self.assertTrue(rp.is_client_id(cid))
        self.assertEqual(router.report_file, os.path.join(self.root, rp.DIR, cid + ".json"))
        report = read_report(router.report_file)
        self.assertEqual(report["client"], cid)
        self.assertTrue(report["router"].startswith("efs-router-python/"))
        self.assertEqual(report["reads"], [1, 2, 3])
        self.assertEqual(report["list"], {"sha256": rp.list_sha256(TWO_SHARDS), "version": 2,
                                          "parameter_version": 7})
        self.assertEqual((report["loaded_at"], report["written_at"], report["every"]),
                         (1_700_000_000, 1_700_000_000, rp.EVERY_SECS))
        self.assertEqual((report["task"], report["label"]), (None, "reader-service"))
        self.assertEqual(os.listdir(os.path.join(self.root, rp.DIR)), [cid + ".json"])  # no temporary left
        self.assertEqual(os.stat(os.path.join(self.root, rp.DIR)).st_mode & 0o7777, 0o1777)  # any umask; sticky
        router.close()
        self.assertEqual(os.listdir(os.path.join(self.root, rp.DIR)), [])
        with self.assertRaises(ReportFault) as cm:  # a closed router writes nothing more
            router.write("data/a.json", b"a")
        self.assertEqual(cm.exception.kind, "report-lapsed")

    def test_a_collected_router_removes_its_report(self) -> None:
        router = Router.reporting(ORIGINAL, Layout.single_mount(self.root))
        path = router.report_file
        assert path is not None
        self.assertEqual(read_report(path)["list"]["version"], 1)
        self.assertTrue(read_report(path)["label"])  # the host's name
        del router
        gc.collect()
        eventually("the report removed", lambda: not os.path.exists(path))

    def test_the_reports_directory_is_a_private_name(self) -> None:
        self.assertTrue(efs_router.is_private_name(rp.DIR))
        self.assertTrue(efs_router.is_private_name(rp.DIR.encode()))
        self.assertFalse(efs_router.is_private_name(rp.DIR + ".json"))
        with self.assertRaises(efs_router.PathError) as cm:
            efs_router.normalise("data/%s/x.json" % rp.DIR)
        self.assertEqual(cm.exception.kind, "reserved-name")

    def test_a_process_that_exits_removes_its_report(self) -> None:
        program = ("import os, sys, efs_router\n"
                   "r = efs_router.Router.reporting(sys.argv[1], efs_router.Layout.single_mount(sys.argv[2]))\n"
                   "print(os.path.exists(r.report_file), r.report_file)\n")
        out = subprocess.run([sys.executable, "-c", program, ORIGINAL, self.root], check=True,
                             stdout=subprocess.PIPE, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
        existed, path = out.stdout.decode().split()
        self.assertEqual((existed, os.path.dirname(path)), ("True", os.path.join(self.root, rp.DIR)))
        self.assertFalse(os.path.exists(path))

    def test_each_router_is_its_own_client_and_a_plain_one_reports_nothing(self) -> None:
        a = Router.reporting(ORIGINAL, Layout.single_mount(self.root))
        b = Router.reporting(ORIGINAL, Layout.single_mount(self.root))
        self.assertNotEqual(a.client_id, b.client_id)
        plain = Router(a.list, Layout.single_mount(self.root))
        self.assertIsNone(plain.client_id)
        plain.lease()
        a.close()
        b.close()

    def test_the_thread_rewrites_the_report_every_period(self) -> None:
        clock = Clock(1000)
        router = Router.reporting(TWO_SHARDS, Layout.single_mount(self.root), report_clock=clock, report_every=0.01)
        clock.now = 1060
        eventually("rewritten at 1060", lambda: read_report(router.report_file)["written_at"] == 1060)
        self.assertEqual(read_report(router.report_file)["loaded_at"], 1000)
        router.close()
        clock.now = 1120
        time.sleep(0.1)
        self.assertFalse(os.path.exists(router.report_file or ""))

    def test_a_per_target_layout_reports_through_the_root_shard_mount(self) -> None:
        mounts = [os.path.join(self.root, "m%d" % i) for i in range(2)]
        for m in mounts:
            os.mkdir(m)
        router = Router.reporting(TWO_SHARDS, Layout.per_target(mounts))
        self.assertEqual(os.path.dirname(router.report_file or ""), os.path.join(mounts[0], rp.DIR))
        with self.assertRaises(ReportFault) as cm:
            Router.reporting(NO_SLASH, Layout.per_target(mounts))
        self.assertEqual(cm.exception.kind, "no-report-dir")
        root = os.path.join(self.root, "root")
        os.mkdir(root)
        given = Router.reporting(NO_SLASH, Layout.per_target(mounts), report_root=root)
        self.assertTrue(os.path.exists(given.report_file or ""))
        self.assertEqual(os.path.dirname(given.report_file or ""), os.path.join(root, rp.DIR))
        router.close()
        given.close()

    def test_the_reports_directory_is_not_followed_through_a_link(self) -> None:
        elsewhere = os.path.join(self.root, "elsewhere")
        os.mkdir(elsewhere)
        os.symlink(elsewhere, os.path.join(self.root, rp.DIR))
        router = Router.reporting(TWO_SHARDS, Layout.single_mount(self.root))
        self.assertEqual(os.listdir(elsewhere), [])
        with self.assertRaises(ReportFault) as cm:
            router.write("data/x.json", b"x")
        self.assertEqual(cm.exception.kind, "report-lapsed")

    def test_the_task_is_read_from_the_metadata_endpoint(self) -> None:
        paths: List[str] = []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                paths.append(self.path)
                body = b'{"Cluster":"c","TaskARN":"arn:aws:ecs:us-east-1:111122223333:task/c/abc"}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        try:
            uri = "http://127.0.0.1:%d/v4/abc" % server.server_address[1]
            router = Router.reporting(TWO_SHARDS, Layout.single_mount(self.root), metadata_uri=uri)
        finally:
            server.shutdown()
            server.server_close()
        self.assertEqual(paths, ["/v4/abc/task"])
        self.assertEqual(read_report(router.report_file)["task"], "arn:aws:ecs:us-east-1:111122223333:task/c/abc")
        self.assertIsNone(rp.task_arn("http://127.0.0.1:1/v4"))  # nothing listening: no task
        router.close()


class Refreshes(Base):
    def test_from_ssm_reports_the_parameter_version_and_each_refresh(self) -> None:
        ssm = FakeSsm(ORIGINAL, 3)
        clock, wall = Clock(0), Clock(5000)
        router = Router.from_ssm("/p", Layout.single_mount(self.root), refresh_seconds=60, client=ssm, clock=clock,
                                 report_clock=wall)
        report = read_report(router.report_file)
        self.assertEqual(report["list"], {"sha256": rp.list_sha256(ORIGINAL), "version": 1, "parameter_version": 3})
        self.assertEqual((report["loaded_at"], report["refreshed_at"]), (5000, None))
        # A failed re-read: reported at the next write.
        ssm.fail = RuntimeError("throttled")
        clock.now, wall.now = 60, 5060
        router.resolve("data/a.json")
        ssm.fail = None
        # A new list: reported at once.
        ssm.value, ssm.version = TWO_SHARDS, 4
        clock.now, wall.now = 120, 5120
        router.resolve("data/a.json")
        report = read_report(router.report_file)
        self.assertEqual(report["list"], {"sha256": rp.list_sha256(TWO_SHARDS), "version": 2,
                                          "parameter_version": 4})
        self.assertEqual((report["loaded_at"], report["refreshed_at"], report["refresh_failed_at"]),
                         (5120, 5120, None))
        # A failure after it, written by the next report.
        ssm.fail = RuntimeError("throttled")
        clock.now, wall.now = 180, 5180
        router.resolve("data/a.json")
        router._reporter.write()  # type: ignore[union-attr]  # what the thread does at its tick
        report = read_report(router.report_file)
        self.assertEqual((report["loaded_at"], report["refreshed_at"], report["refresh_failed_at"]),
                         (5120, 5120, 5180))
        router.close()

    def test_report_false_reports_nothing(self) -> None:
        router = Router.from_ssm("/p", Layout.single_mount(self.root), client=FakeSsm(ORIGINAL, 1), report=False)
        self.assertIsNone(router.client_id)
        self.assertFalse(os.path.exists(os.path.join(self.root, rp.DIR)))


def block_reports(root: str) -> None:
    """Replaces the reports' directory with a file, so that no report can be written."""
    d = os.path.join(root, rp.DIR)
    for name in os.listdir(d):
        os.unlink(os.path.join(d, name))
    os.rmdir(d)
    with open(d, "w") as f:
        f.write("not a directory")


class Lease(Base):
    def test_a_lapsed_report_stops_writes_and_moves_until_one_is_written(self) -> None:
        clock = Clock(10_000)
        router = Router.reporting(TWO_SHARDS, Layout.single_mount(self.root), report_clock=clock)
        block_reports(self.root)
        clock.now = 10_000 + rp.LEASE_SECS - 1
        router.write("data/a.json", b"a")  # within the lease: nothing written first
        clock.now = 10_000 + rp.LEASE_SECS
        with self.assertRaises(ReportFault) as cm:
            router.write("data/b.json", b"b")
        self.assertEqual((cm.exception.kind, cm.exception.last_ok), ("report-lapsed", 10_000))
        self.assertFalse(router.exists("data/b.json"))
        # A read still answers, but moves nothing.
        logical = "data/misplaced.json"
        home = router.resolve(logical)
        other = 1 - home.index
        there = router.layout.real_path(router.shards, other, home.logical)
        os.makedirs(os.path.dirname(there), exist_ok=True)
        with open(there, "wb") as f:
            f.write(b"m")
        got = router.read_with_fallback(logical)
        self.assertEqual((got.data, got.place.kind, got.place.index), (b"m", "left-elsewhere", other))
        self.assertTrue(os.path.exists(there) and not os.path.exists(home.real))
        # A report can be written again: the next write renews the lease.
        os.unlink(os.path.join(self.root, rp.DIR))
        router.write("data/b.json", b"b")
        self.assertEqual(read_report(router.report_file)["written_at"], 10_000 + rp.LEASE_SECS)
        self.assertEqual(router.read_with_fallback(logical).place.kind, "moved-home")
        router.close()

    def test_a_router_whose_first_report_failed_writes_nothing_until_it_reports(self) -> None:
        with open(os.path.join(self.root, rp.DIR), "w") as f:
            f.write("not a directory")
        router = Router.reporting(TWO_SHARDS, Layout.single_mount(self.root))
        with self.assertRaises(ReportFault) as cm:
            router.write("data/a.json", b"a")
        self.assertEqual((cm.exception.kind, cm.exception.last_ok), ("report-lapsed", None))
        os.unlink(os.path.join(self.root, rp.DIR))
        router.write("data/a.json", b"a")
        self.assertTrue(os.path.exists(router.report_file or ""))
        router.close()


def case_bytes(case: Dict[str, Any]) -> bytes:
    data: bytes = case["text"].encode("utf-8") if "text" in case else bytes.fromhex(case["hex"])
    pad: int = case.get("pad_to", len(data))
    return data + b" " * (pad - len(data))


class Vectors(unittest.TestCase):
    """tests/vectors/reports.json, which the Rust library passes too (router/tests/report_vectors.rs)."""

    v: ClassVar[Dict[str, Any]]

    @classmethod
    def setUpClass(cls) -> None:
        with open(REPORT_VECTORS, encoding="utf-8") as f:
            cls.v = json.load(f)

    def test_the_vectors_are_the_generators_output(self) -> None:
        generator = os.path.join(os.path.dirname(REPORT_VECTORS), "generate_reports.py")
        out = subprocess.run([sys.executable, generator], check=True, stdout=subprocess.PIPE).stdout
        with open(REPORT_VECTORS, "rb") as f:
            self.assertTrue(out == f.read(), "reports.json differs from what generate_reports.py writes: regenerate it")

    def test_list_digests_are_of_the_exact_text(self) -> None:
        self.assertGreaterEqual(len(self.v["lists"]), 4)
        for case in self.v["lists"]:
            self.assertEqual(rp.list_sha256(case["text"]), case["sha256"])
            self.assertEqual(rp.list_sha256(case["text"].encode("utf-8")), case["sha256"])

    def test_a_report_is_written_exactly_as_rust_writes_it(self) -> None:
        for case in self.v["serialised"]:
            self.assertEqual(rp.to_json(case["report"]), case["json"])
            self.assertEqual(rp.parse_report(case["report"]["client"] + ".json", case["json"].encode("utf-8")),
                             case["report"])

    def test_what_this_router_writes_is_in_that_form(self) -> None:
        with tempfile.TemporaryDirectory() as root:
            router = Router.reporting(TWO_SHARDS, Layout.single_mount(root), label='é "x"\n')
            with open(router.report_file or "", "rb") as f:
                data = f.read()
            self.assertEqual(data.decode("utf-8"), rp.to_json(read_report(router.report_file)))
            self.assertEqual(list(json.loads(data)), list(rp.FIELDS))
            router.close()

    def test_report_files_parse_as_rust_parses_them(self) -> None:
        outcomes = set()
        for case in self.v["files"]:
            outcomes.add(case["outcome"])
            with self.subTest(name=case["name"], text=case.get("text", case.get("hex", ""))[:80]):
                try:
                    got = rp.parse_report(case["name"], case_bytes(case))
                except ReportError as e:
                    self.assertEqual(e.kind, case["outcome"])
                else:
                    self.assertEqual(case["outcome"], "ok")
                    self.assertEqual(got, case["report"])
        self.assertEqual(outcomes, {"ok", "too-large", "malformed", "wrong-name"})


if __name__ == "__main__":
    unittest.main()
