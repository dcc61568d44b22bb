"""Tests of efs_router (standard library unittest), run against the installed package
(``make python-test`` installs it into a virtual environment and runs these from outside the
repository). The routing vectors are ``tests/vectors/routing.json`` of the repository, found from
this file's place or named by the environment variable ``EFS_ROUTER_VECTORS``.
"""

import errno
import hashlib
import json
import multiprocessing
import os
import queue
import random
import tempfile
import threading
import unittest
from typing import Any, Callable, ClassVar, Dict, List, Optional, Sequence, Sized, Tuple
from unittest import mock

import efs_router
from efs_router import (
    DESTINATION_TAKEN,
    HOME,
    MOVED,
    SOURCE_GONE,
    InsideAnotherShard,
    Layout,
    ListError,
    MountTargetList,
    NotFound,
    PathError,
    Place,
    RouteError,
    Router,
    Target,
    normalise,
    relocate,
    shard_index,
)

HERE = os.path.dirname(os.path.abspath(__file__))
VECTORS = os.environ.get("EFS_ROUTER_VECTORS") or os.path.join(HERE, "..", "..", "..", "tests", "vectors",
                                                                "routing.json")
THREE = ["/", "/shards/use1-az4", "/shards/use1-az1"]


def original(file_path: str, mount_targets: Sized) -> int:
    # The original client's expression, verbatim.
    return int(hashlib.sha256(file_path.encode()).hexdigest(), 16) % len(mount_targets)


def make_list(roots: Sequence[str], strategy: str = efs_router.RENDEZVOUS) -> MountTargetList:
    return MountTargetList([Target("fsmt-%d" % i, "10.0.%d.4" % i, root=r) for i, r in enumerate(roots)], strategy)


class Installed(unittest.TestCase):
    def test_the_package_is_the_installed_one(self) -> None:
        # make python-test installs the package (not editable) and runs from outside the
        # repository: an import of the source tree would test what users do not get.
        source = os.path.realpath(os.path.join(HERE, "..", "src"))
        module = os.path.realpath(efs_router.__file__ or "")
        self.assertNotEqual(os.path.commonpath([source, module]), source,
                            "efs_router was imported from the source tree (%s), not the installed package; "
                            "run `make python-test`" % module)

    def test_it_ships_py_typed(self) -> None:
        self.assertTrue(os.path.isfile(os.path.join(os.path.dirname(efs_router.__file__ or ""), "py.typed")))


class Vectors(unittest.TestCase):
    v: ClassVar[Dict[str, Any]]

    @classmethod
    def setUpClass(cls) -> None:
        with open(VECTORS, encoding="utf-8") as f:
            cls.v = json.load(f)

    def test_routing(self) -> None:
        self.assertGreaterEqual(len(self.v["routing"]), 300)
        for case in self.v["routing"]:
            targets = self.v["lists"][case["list"]]
            with self.subTest(case=case):
                self.assertEqual(shard_index(case["path"], targets, case["strategy"]), case["index"])
                # The same with parsed Target objects instead of the JSON entries.
                parsed = [Target.from_dict(t) for t in targets]
                self.assertEqual(shard_index(case["path"], parsed, case["strategy"]), case["index"])

    def test_routing_errors(self) -> None:
        for case in self.v["routing_errors"]:
            targets = self.v["lists"][case["list"]]
            with self.subTest(case=case):
                with self.assertRaises((PathError, RouteError)) as cm:
                    shard_index(case["path"], targets, case["strategy"])
                error = cm.exception
                assert isinstance(error, (PathError, RouteError))
                self.assertEqual(error.kind, case["error"])

    def test_normalise(self) -> None:
        for case in self.v["normalise"]:
            with self.subTest(case=case):
                if "normalised" in case:
                    self.assertEqual(normalise(case["path"]), case["normalised"])
                else:
                    with self.assertRaises(PathError) as cm:
                        normalise(case["path"])
                    self.assertEqual(cm.exception.kind, case["error"])

    def test_lists_parse(self) -> None:
        for name, targets in self.v["lists"].items():
            doc = json.dumps({"mount_targets": targets, "strategy": "rendezvous"})
            self.assertEqual(len(MountTargetList.from_json(doc).mount_targets), len(targets), name)


class Modulo(unittest.TestCase):
    def test_agrees_with_the_original_expression_on_random_paths(self) -> None:
        rng = random.Random(20240601)
        alphabet = "abzAZ09-_./ éß中📈\\"
        checked = 0
        for _ in range(5000):
            path = "".join(rng.choice(alphabet) for _ in range(rng.randint(1, 60)))
            for n in (1, 2, 3, 4, 5, 6, 7, 8, 13, 1000):
                self.assertEqual(efs_router.modulo_sha256(path, n), original(path, range(n)))
                try:
                    normalise(path)
                except PathError:
                    continue
                targets = [{"id": "fsmt-%d" % i, "ip": "10.0.0.1"} for i in range(n)]
                self.assertEqual(shard_index(path, targets, "modulo-sha256"), original(path, targets))
                checked += 1
        self.assertGreater(checked, 10000)

    def test_hashes_the_path_as_given(self) -> None:
        targets = make_list(THREE).mount_targets
        for p in ("data/x.json", "/data/x.json", "./data/x.json"):
            self.assertEqual(shard_index(p, targets, "modulo-sha256"), original(p, targets))
            self.assertEqual(shard_index(p, targets, "rendezvous"), shard_index("data/x.json", targets, "rendezvous"))


class Routing(unittest.TestCase):
    def test_draining_gets_nothing_and_routes_as_if_removed(self) -> None:
        targets: List[Dict[str, Any]] = [t.to_dict() for t in make_list(THREE).mount_targets]
        targets[1]["draining"] = True
        without = [targets[0], targets[2]]
        for i in range(2000):
            p = "data/analysis/device-%d-1700000000.json" % i
            for s in efs_router.STRATEGIES:
                got = shard_index(p, targets, s)
                self.assertNotEqual(got, 1)
                self.assertEqual(targets[got]["id"], without[shard_index(p, without, s)]["id"])
        for s in efs_router.STRATEGIES:
            with self.assertRaises(RouteError) as cm:
                shard_index("a", [dict(t, draining=True) for t in targets], s)
            self.assertEqual(cm.exception.kind, "all-draining")
            with self.assertRaises(RouteError) as cm:
                shard_index("a", [], s)
            self.assertEqual(cm.exception.kind, "no-targets")
        with self.assertRaises(ValueError):
            shard_index("a", targets, "consistent")

    def test_rendezvous_keys_on_root_not_position_or_id(self) -> None:
        t = make_list(THREE).mount_targets
        shuffled = [Target("fsmt-recreated", "10.0.9.9", root=t[2].root), t[0], t[1]]
        for i in range(2000):
            p = "d/%d" % i
            self.assertEqual(t[shard_index(p, t, "rendezvous")].root,
                             shuffled[shard_index(p, shuffled, "rendezvous")].root)

    def test_duplicate_roots_go_to_the_first(self) -> None:
        legacy: List[Dict[str, Any]] = [{"id": "a", "ip": "1"}, {"id": "b", "ip": "2"}, {"id": "c", "ip": "3"}]
        for i in range(100):
            self.assertEqual(shard_index("f%d" % i, legacy, "rendezvous"), 0)
        legacy[0]["draining"] = True
        self.assertEqual(shard_index("f", legacy, "rendezvous"), 1)

    def test_lone_surrogate_is_refused(self) -> None:
        with self.assertRaises(PathError) as cm:
            normalise("a\udc80b")
        self.assertEqual(cm.exception.kind, "not-unicode")


class Lists(unittest.TestCase):
    def test_original_form(self) -> None:
        ml = MountTargetList.from_json('{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4"},'
                                       '{"id":"fsmt-2","ip":"10.0.2.7"}]}')
        self.assertEqual(ml.strategy, "modulo-sha256")
        self.assertTrue(all(t.root == "/" for t in ml.mount_targets))

    def test_current_form_round_trips(self) -> None:
        text = ('{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4","az":"us-east-1a","az_id":"use1-az6",'
                '"subnet_id":"subnet-1","root":"/"},{"id":"fsmt-2","ip":"10.0.2.7","az":"us-east-1b",'
                '"az_id":"use1-az4","subnet_id":"subnet-2","root":"/shards/use1-az4"}],"strategy":"rendezvous"}')
        ml = MountTargetList.from_json(text)
        self.assertEqual(ml.strategy, "rendezvous")
        self.assertEqual(ml.to_json(), text)

    def test_refuses_what_is_not_a_list(self) -> None:
        for bad in ["", "not json", "[]", '{"targets":[]}', '{"mount_targets":{}}',
                    '{"mount_targets":[{"ip":"10.0.0.1"}]}', '{"mount_targets":[{"id":"","ip":"10.0.0.1"}]}',
                    '{"mount_targets":[{"id":"a","ip":"1"},{"id":"a","ip":"2"}]}',
                    '{"mount_targets":[{"id":"a","ip":"1","root":"shards/x"}]}',
                    '{"mount_targets":[{"id":"a","ip":"1","root":"/shards/../x"}]}',
                    '{"mount_targets":[],"strategy":"consistent"}', '{"mount_targets":[],"extra":1}',
                    '{"mount_targets":[{"id":"a","ip":"1","draining":"yes"}]}']:
            with self.subTest(bad=bad), self.assertRaises(ListError):
                MountTargetList.from_json(bad)


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


class FileSystem(FileSystemCase):
    def test_real_paths(self) -> None:
        r = self.router()
        seen = set()
        for i in range(200):
            res = r.resolve("/data/analysis/device-%d-1.json" % i)
            root = r.targets[res.index].root.lstrip("/")
            self.assertEqual(res.real, os.path.join(self.base, root, "data/analysis/device-%d-1.json" % i)
                             if root else os.path.join(self.base, "data/analysis/device-%d-1.json" % i))
            seen.add(res.index)
        self.assertEqual(seen, {0, 1, 2})

    def test_bad_paths_are_refused(self) -> None:
        r = self.router()
        for p, kind in [("../etc/passwd", "escapes-root"), ("data/../../x", "escapes-root"),
                        ("data//x", "empty-component"), ("data/x/", "empty-component"), ("data/x\0", "nul"),
                        ("", "empty")]:
            with self.subTest(p=p), self.assertRaises(PathError) as cm:
                r.write(p, b"x")
            self.assertEqual(cm.exception.kind, kind)
        self.assertTrue(r.write("/etc/passwd", b"x").startswith(self.base))
        with self.assertRaises(InsideAnotherShard):
            r.write("shards/use1-az4/data/x", b"x")
        with self.assertRaises(InsideAnotherShard):
            r.read_with_fallback("shards/use1-az1")
        r.write("shards/other/x", b"x")
        r.write("shardsX/x", b"x")
        self.assertEqual(len(files_under(self.base)), 3)

    def test_write_then_read(self) -> None:
        r = self.router()
        real = r.write("data/analysis/a.json", b'{"v":1}')
        with open(real, "rb") as f:
            self.assertEqual(f.read(), b'{"v":1}')
        self.assertTrue(r.exists("data/analysis/a.json"))
        self.assertFalse(r.exists("data/analysis/b.json"))
        self.assertEqual(r.read_with_fallback("/data/analysis/a.json"), (b'{"v":1}', HOME))
        r.write("data/analysis/a.json", b'{"v":2}')
        self.assertEqual(r.read_with_fallback("data/analysis/a.json").data, b'{"v":2}')
        self.assertEqual(len(files_under(self.base)), 1)
        with self.assertRaises(NotFound):
            r.read_with_fallback("data/analysis/b.json")
        with self.assertRaises(FileNotFoundError):
            r.read_with_fallback("data/analysis/b.json")

    def test_fallback_moves_a_misplaced_file_home(self) -> None:
        r = self.router()
        p, home, elsewhere = self.misplaced(r, 1, 2, "m")
        put(elsewhere, b"reading")
        ino = os.stat(elsewhere).st_ino
        self.assertTrue(r.exists(p))
        self.assertEqual(r.locate(p).found, efs_router.Found("elsewhere", 2, elsewhere))
        self.assertEqual(r.read_with_fallback(p), (b"reading", Place("moved-home", 2)))
        self.assertFalse(os.path.exists(elsewhere))
        self.assertEqual(os.stat(home).st_ino, ino)  # moved, not copied
        self.assertEqual(os.stat(home).st_nlink, 1)
        self.assertEqual(r.read_with_fallback(p).place, HOME)
        self.assertEqual(r.locate(p).found.kind, "home")

    def test_fallback_never_replaces_a_file_at_home(self) -> None:
        r = self.router()
        p, home, elsewhere = self.misplaced(r, 0, 1, "n")
        put(elsewhere, b"old")
        put(home, b"new")
        self.assertEqual(r.read_with_fallback(p), (b"new", HOME))
        with open(elsewhere, "rb") as f:
            self.assertEqual(f.read(), b"old")

    def test_draining_gets_no_new_files_but_is_read(self) -> None:
        ml = make_list(THREE)
        r_all = Router(ml, Layout.single_mount(self.base))
        ml2 = MountTargetList([Target(t.id, t.ip, root=t.root, draining=(i == 1))
                               for i, t in enumerate(ml.mount_targets)], "rendezvous")
        r = Router(ml2, Layout.single_mount(self.base))
        for i in range(300):
            p = "data/analysis/device-%d-1.json" % i
            r.write(p, b"x")
            self.assertNotEqual(r.resolve(p).index, 1)
        self.assertFalse(os.path.exists(os.path.join(self.base, "shards/use1-az4/data")))
        p, _, in_draining = self.misplaced(r_all, 1, 1, "d")
        put(in_draining, b"old home")
        self.assertEqual(r.read_with_fallback(p).place, Place("moved-home", 1))
        self.assertFalse(os.path.exists(in_draining))

    def test_per_target_layout_moves_through_the_root_mount(self) -> None:
        mounts = [os.path.join(self.base, r.lstrip("/")) if r != "/" else self.base for r in THREE]
        r = self.router(layout=Layout.per_target(mounts))
        p, home, elsewhere = self.misplaced(r, 2, 1, "p")
        self.assertTrue(home.startswith(mounts[2] + "/") and elsewhere.startswith(mounts[1] + "/"))
        put(elsewhere, b"x")
        self.assertEqual(r.read_with_fallback(p).place, Place("moved-home", 1))
        self.assertFalse(os.path.exists(elsewhere))
        r2 = self.router(roots=THREE[1:], layout=Layout.per_target(mounts[1:]))
        p, home, elsewhere = self.misplaced(r2, 0, 1, "q")
        put(elsewhere, b"y")
        got = r2.read_with_fallback(p)
        self.assertEqual((got.data, got.place.kind, got.place.index), (b"y", "left-elsewhere", 1))
        self.assertTrue(os.path.exists(elsewhere) and not os.path.exists(home))
        with self.assertRaises(efs_router.LayoutError):
            self.router(layout=Layout.per_target(mounts[:2]))
        self.assertEqual(Layout.per_target_template("/mnt/efs-{i}", 2).mounts, ("/mnt/efs-0", "/mnt/efs-1"))

    def test_original_list_is_one_directory(self) -> None:
        ml = MountTargetList.from_json('{"mount_targets":[{"id":"fsmt-1","ip":"10.0.1.4"},'
                                       '{"id":"fsmt-2","ip":"10.0.2.7"},{"id":"fsmt-3","ip":"10.0.3.9"}]}')
        r = Router(ml, Layout.single_mount(self.base))
        homes = set()
        for i in range(90):
            p = "data/analysis/device-%d-1.json" % i
            self.assertEqual(r.write(p, b"x"), os.path.join(self.base, p))
            homes.add(r.resolve(p).index)
            self.assertEqual(r.read_with_fallback(p).place, HOME)
        self.assertEqual(homes, {0, 1, 2})
        self.assertEqual(len(files_under(self.base)), 90)


def read(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class Relocate(unittest.TestCase):
    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.d = self._tmp.name
        self.src, self.dst = os.path.join(self.d, "a"), os.path.join(self.d, "b")

    def tearDown(self) -> None:
        self._tmp.cleanup()

    def test_moves_and_keeps_the_bytes(self) -> None:
        put(self.src, b"reading")
        ino = os.stat(self.src).st_ino
        self.assertEqual(relocate(self.src, self.dst), MOVED)
        self.assertFalse(os.path.lexists(self.src))
        self.assertEqual(read(self.dst), b"reading")
        st = os.stat(self.dst)
        self.assertEqual((st.st_ino, st.st_nlink), (ino, 1))  # the same file, one name: never a copy

    def test_never_replaces_the_destination(self) -> None:
        put(self.src, b"old")
        put(self.dst, b"new")
        self.assertEqual(relocate(self.src, self.dst), DESTINATION_TAKEN)
        self.assertEqual(read(self.src), b"old")
        self.assertEqual(read(self.dst), b"new")
        os.mkdir(os.path.join(self.d, "c"))  # a directory at the destination is taken too
        self.assertEqual(relocate(self.src, os.path.join(self.d, "c")), DESTINATION_TAKEN)
        self.assertEqual(read(self.src), b"old")

    def test_a_missing_source_is_gone_not_an_error(self) -> None:
        self.assertEqual(relocate(self.src, self.dst), SOURCE_GONE)
        put(self.dst, b"moved by another")
        self.assertEqual(relocate(self.src, self.dst), SOURCE_GONE)
        self.assertEqual(read(self.dst), b"moved by another")

    def test_a_move_cut_short_after_the_link_is_finished(self) -> None:
        put(self.src, b"x")
        os.link(self.src, self.dst)
        self.assertEqual(relocate(self.src, self.dst), MOVED)
        self.assertFalse(os.path.lexists(self.src))
        self.assertEqual(read(self.dst), b"x")
        self.assertEqual(os.stat(self.dst).st_nlink, 1)

    def test_refuses_one_path_as_both(self) -> None:
        put(self.src, b"x")
        for dst in (self.src, self.d + "//a", os.path.join(self.d, ".", "a")):
            with self.subTest(dst=dst), self.assertRaises(OSError) as cm:
                relocate(self.src, dst)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.assertEqual(read(self.src), b"x")

    def test_other_failures_raise(self) -> None:
        put(self.src, b"x")
        with self.assertRaises(FileNotFoundError):  # the destination's directory must exist
            relocate(self.src, os.path.join(self.d, "no", "b"))
        self.assertEqual(read(self.src), b"x")

    @staticmethod
    def no_hard_links(code: int) -> "mock._patch[mock.MagicMock]":
        def link(src: str, dst: str, **kw: Any) -> None:  # as the kernel does: the source is looked up first
            os.lstat(src)
            raise OSError(code, os.strerror(code), src, None, dst)
        return mock.patch.object(os, "link", side_effect=link)

    def test_without_hard_links_it_checks_then_renames(self) -> None:
        for code in (errno.EPERM, errno.EOPNOTSUPP):
            with self.subTest(errno=code), self.no_hard_links(code):
                put(self.src, b"x")
                self.assertEqual(relocate(self.src, self.dst), MOVED)
                self.assertFalse(os.path.lexists(self.src))
                self.assertEqual(read(self.dst), b"x")
                put(self.src, b"y")
                self.assertEqual(relocate(self.src, self.dst), DESTINATION_TAKEN)
                self.assertEqual((read(self.src), read(self.dst)), (b"y", b"x"))
                os.unlink(self.src)
                self.assertEqual(relocate(self.src, self.dst), SOURCE_GONE)
                os.unlink(self.dst)
        with mock.patch.object(os, "link", side_effect=OSError(errno.EIO, "I/O error")):
            put(self.src, b"x")
            with self.assertRaises(OSError) as cm:
                relocate(self.src, self.dst)
            self.assertEqual(cm.exception.errno, errno.EIO)
            self.assertFalse(os.path.lexists(self.dst))

    def test_racing_movers_leave_exactly_one_copy(self) -> None:
        for rnd in range(50):
            src, dst = os.path.join(self.d, "s%d" % rnd), os.path.join(self.d, "d%d" % rnd)
            put(src, str(rnd).encode())
            barrier = threading.Barrier(4)
            outcomes: List[str] = []

            def mover(src: str, dst: str, barrier: threading.Barrier, outcomes: List[str]) -> None:
                barrier.wait()
                outcomes.append(relocate(src, dst))

            ts = [threading.Thread(target=mover, args=(src, dst, barrier, outcomes)) for _ in range(4)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            self.assertEqual(len(outcomes), 4)
            self.assertNotIn(DESTINATION_TAKEN, outcomes)
            self.assertEqual(outcomes.count(MOVED), 1, outcomes)
            self.assertFalse(os.path.lexists(src))
            self.assertEqual(read(dst), str(rnd).encode())
            self.assertEqual(os.stat(dst).st_nlink, 1)
        self.assertEqual(sorted(os.listdir(self.d)), sorted("d%d" % i for i in range(50)))


class MoveHome(FileSystemCase):
    def test_a_move_cut_short_leaves_the_file_readable_at_home(self) -> None:
        r = self.router()
        p, home, elsewhere = self.misplaced(r, 1, 2, "c")
        put(elsewhere, b"x")
        os.makedirs(os.path.dirname(home), exist_ok=True)
        os.link(elsewhere, home)  # a reader died between link and unlink
        self.assertEqual(r.read_with_fallback(p), (b"x", HOME))
        self.assertEqual(relocate(elsewhere, home), MOVED)  # the next attempt finishes it
        self.assertEqual(files_under(self.base), [os.path.relpath(home, self.base)])

    def test_a_failed_move_leaves_the_file_and_still_reads(self) -> None:
        r = self.router()
        p, home, elsewhere = self.misplaced(r, 1, 2, "f")
        put(elsewhere, b"x")
        with mock.patch.object(os, "link", side_effect=OSError(errno.EIO, "I/O error")):
            got = r.read_with_fallback(p)
        self.assertEqual((got.data, got.place.kind, got.place.index), (b"x", "left-elsewhere", 2))
        assert got.place.reason is not None
        self.assertTrue(got.place.reason.startswith("move %s to %s: " % (elsewhere, home)), got.place.reason)
        self.assertTrue(os.path.exists(elsewhere) and not os.path.exists(home))

    def test_moves_home_without_hard_links(self) -> None:
        r = self.router()
        p, home, elsewhere = self.misplaced(r, 1, 2, "h")
        put(elsewhere, b"x")
        with Relocate.no_hard_links(errno.EOPNOTSUPP):
            self.assertEqual(r.read_with_fallback(p), (b"x", Place("moved-home", 2)))
        self.assertEqual(files_under(self.base), [os.path.relpath(home, self.base)])

    def test_home_written_during_the_move_wins(self) -> None:
        r = self.router()
        p, home, elsewhere = self.misplaced(r, 1, 2, "w")
        put(elsewhere, b"old")
        real_link = os.link

        def write_first(src: str, dst: str, **kw: Any) -> None:  # a write lands at home after the miss, before the link
            r.write(p, b"new")
            return real_link(src, dst, **kw)

        with mock.patch.object(os, "link", side_effect=write_first):
            self.assertEqual(r.read_with_fallback(p), (b"new", HOME))
        self.assertEqual((read(home), read(elsewhere)), (b"new", b"old"))


def _race_reader(base: str, path: str, barrier: Any, results: Any) -> None:
    r = Router(make_list(THREE), Layout.single_mount(base))
    barrier.wait()
    try:
        got = r.read_with_fallback(path)
        results.put((got.data, got.place.kind))
    except Exception as e:  # reported to the parent
        results.put((None, repr(e)))


class Races(FileSystemCase):
    def run_race(self, readers: int, spawn: Callable[[str, int], List[Tuple[Optional[bytes], str]]]) -> None:
        r = self.router()
        for rnd in range(20):
            other = 0 if rnd % 2 == 0 else 2
            p, home, elsewhere = self.misplaced(r, 1, other, "r%d-" % rnd)
            data = ("round %d " % rnd).encode() * 500
            put(elsewhere, data)
            results = spawn(p, readers)
            self.assertEqual(len(results), readers)
            for got, kind in results:
                self.assertEqual(got, data, kind)
                self.assertIn(kind, ("home", "moved-home", "moved-by-another"))
            self.assertEqual(sum(1 for _, k in results if k == "moved-home"), 1, results)
            self.assertFalse(os.path.exists(elsewhere))
            with open(home, "rb") as f:
                self.assertEqual(f.read(), data)
        files = files_under(self.base)
        self.assertEqual(len(files), 20)
        self.assertTrue(all(f.startswith("shards/use1-az4/data/analysis/") for f in files), files)

    def test_racing_processes(self) -> None:
        ctx: Any = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")

        def spawn(p: str, n: int) -> List[Tuple[Optional[bytes], str]]:
            barrier, results = ctx.Barrier(n), ctx.Queue()
            procs = [ctx.Process(target=_race_reader, args=(self.base, p, barrier, results)) for _ in range(n)]
            for proc in procs:
                proc.start()
            out = [results.get(timeout=60) for _ in procs]
            for proc in procs:
                proc.join(60)
            return out

        self.run_race(6, spawn)

    def test_racing_threads(self) -> None:
        def spawn(p: str, n: int) -> List[Tuple[Optional[bytes], str]]:
            barrier = threading.Barrier(n)
            results: "queue.Queue[Tuple[Optional[bytes], str]]" = queue.Queue()
            ts = [threading.Thread(target=_race_reader, args=(self.base, p, barrier, results)) for _ in range(n)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return [results.get_nowait() for _ in ts]

        self.run_race(8, spawn)

    def test_writes_are_atomic(self) -> None:
        size = 1 << 20
        r = self.router()
        p = "data/analysis/big.json"
        r.write(p, b"a" * size)
        done = threading.Event()
        bad: List[int] = []
        reads = [0]

        def reader() -> None:
            while not done.is_set():
                d = r.read_with_fallback(p).data
                if len(d) != size or d.count(d[:1]) != size:
                    bad.append(len(d))
                reads[0] += 1

        ts = [threading.Thread(target=reader) for _ in range(2)]
        for t in ts:
            t.start()
        for i in range(60):
            r.write(p, bytes([ord("a") + i % 26]) * size)
        done.set()
        for t in ts:
            t.join()
        self.assertEqual(bad, [])
        self.assertGreater(reads[0], 0)
        self.assertEqual(files_under(self.base), [os.path.relpath(r.resolve(p).real, self.base)])


if __name__ == "__main__":
    unittest.main()
