"""Where a miss looks (router/src/placement.rs, ``Router.miss_shards``): ``tests/vectors/misses.json``, shared with
the Rust router, and the operations that look there (``exists``, ``locate``, ``create``, ``read_with_fallback``
and ``delete``)."""

import json
import os
import random
import tempfile
import threading
import unittest
from typing import Any, ClassVar, Dict, Iterator, List, Tuple

from efs_router import (
    MODULO_SHA256,
    RENDEZVOUS,
    Layout,
    MountTargetList,
    NotFound,
    Router,
    Target,
    modulo_sha256,
    relocate,
)
from helpers import MISS_VECTORS, put


def load() -> Dict[str, Any]:
    with open(MISS_VECTORS, encoding="utf-8") as f:
        v: Dict[str, Any] = json.load(f)
    return v


class MountCase(unittest.TestCase):
    """A single mount in a temporary directory, with ``data/analysis`` made in every shard of ``lists`` (so that a
    look at a shard's directory never climbs to its parent, another shard's)."""

    lists: ClassVar[Dict[str, str]]

    @classmethod
    def setUpClass(cls) -> None:
        cls.lists = load()["lists"]

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.base = self._tmp.name
        for text in self.lists.values():
            for t in MountTargetList.from_json(text).shards():
                os.makedirs(self.at(t.root, "data/analysis"), exist_ok=True)

    def at(self, root: str, logical: str) -> str:
        return os.path.join(self.base, root.lstrip("/"), logical)

    def router(self, name: str) -> Router:
        return Router(MountTargetList.from_json(self.lists[name]), Layout.single_mount(self.base))

    def roots(self, router: Router) -> List[str]:
        """The distinct shard roots of ``router``'s list, in list order."""
        out: List[str] = []
        for t in router.shards:
            if t.root not in out:
                out.append(t.root)
        return out


class MissVectors(MountCase):
    def test_every_case_has_the_home_and_looks_of_the_rust_router(self) -> None:
        v = load()
        self.assertEqual({c["list"] for c in v["cases"]}, set(v["lists"]))
        self.assertGreaterEqual(len(v["cases"]), 60)
        routers = {name: self.router(name) for name in v["lists"]}
        for case in v["cases"]:
            with self.subTest(list=case["list"], path=case["path"]):
                r = routers[case["list"]]
                home = r.resolve(case["path"])
                self.assertEqual(home.raw, case["path"])
                self.assertEqual(r.shards[home.index].root, case["home"])
                self.assertEqual([r.shards[j].root for j in r.miss_shards(home)], case["looks"])

    def test_each_list_is_there_for_a_reason_and_is_written_back_as_it_is(self) -> None:
        v = load()

        def looks(name: str) -> List[int]:
            return [len(c["looks"]) for c in v["cases"] if c["list"] == name]

        self.assertTrue(all(n == 0 for n in looks("nothing open")))
        self.assertTrue(any(n > 0 for n in looks("the app's files, and an older list")))
        self.assertTrue(any(n > 0 for n in looks("migrated from modulo")))
        self.assertTrue(any(n > 0 for n in looks("a shard draining")))
        self.assertTrue(all(n == 5 for n in looks("not known")))
        self.assertTrue(all(n == 5 for n in looks("version 2")))
        for name, text in v["lists"].items():
            with self.subTest(list=name):
                self.assertEqual(MountTargetList.from_json(text).to_json(), text)

    def away_from_home(self) -> Iterator[Tuple[Router, Dict[str, Any], str, str]]:
        """Each case of the shared vectors with each shard but its home: the router on the case's
        list, the case, the other shard's root and the path's logical name (see ``subtest``)."""
        v = load()
        routers = {name: self.router(name) for name in v["lists"]}
        for case in v["cases"]:
            r = routers[case["list"]]
            logical = r.resolve(case["path"]).logical
            for root in self.roots(r):
                if root != case["home"]:
                    yield r, case, root, logical

    def subtest(self, case: Dict[str, Any], root: str) -> Any:
        """The subtest of ``case`` with a copy in ``root`` (a failure there names them and goes on)."""
        return self.subTest(list=case["list"], path=case["path"], copy_in=root)

    def test_exists_and_locate_find_a_copy_exactly_where_a_miss_looks(self) -> None:
        for r, case, root, logical in self.away_from_home():
            with self.subtest(case, root):
                copy = self.at(root, logical)
                put(copy, b"away")
                try:
                    looked = root in case["looks"]
                    self.assertEqual(r.exists(case["path"]), looked)
                    found = r.locate(case["path"]).found
                    self.assertEqual(found.kind, "elsewhere" if looked else "missing")
                    if looked:
                        self.assertEqual(found.real, copy)
                finally:
                    os.unlink(copy)

    def test_delete_removes_a_copy_exactly_where_a_miss_looks(self) -> None:
        """A delete looks where a miss does, and only there: a copy elsewhere is one the list says cannot be."""
        for r, case, root, logical in self.away_from_home():
            with self.subtest(case, root):
                at_home, copy = self.at(case["home"], logical), self.at(root, logical)
                put(at_home, b"home")
                put(copy, b"away")
                try:
                    looked = root in case["looks"]
                    done = r.delete(case["path"])
                    self.assertEqual(sorted(r.shards[j].root for j in done.removed),
                                     sorted([case["home"]] + ([root] if looked else [])))
                    self.assertEqual(done.rounds, 3 if case["looks"] else 1)
                    self.assertFalse(os.path.lexists(at_home))
                    self.assertEqual(os.path.lexists(copy), not looked)
                finally:
                    if os.path.lexists(copy):
                        os.unlink(copy)


# What a miss may do on the file system: every call that names a path.


class NothingOpen(MountCase):
    """A version 3 list that says nothing is open: a miss looks at home and nowhere else."""

    def paths(self, router: Router, tag: str) -> List[str]:
        """Paths homed in each shard of ``router``'s list but ``/`` (whose directory holds the others)."""
        out: Dict[int, str] = {}
        for i in range(10000):
            p = "data/analysis/device-%s%d.json" % (tag, i)
            j = router.resolve(p).index
            if router.shards[j].root != "/":
                out.setdefault(j, p)
        self.assertEqual(len(out), len(router.shards) - 1)
        return list(out.values())

    def test_a_copy_where_no_placement_is_open_is_neither_found_nor_deleted(self) -> None:
        r = self.router("nothing open")
        p = self.paths(r, "a")[0]
        home = r.resolve(p)
        other = next(j for j, t in enumerate(r.shards) if t.root != r.shards[home.index].root)
        stray = self.at(r.shards[other].root, home.logical)
        put(stray, b"stray")
        self.assertFalse(r.exists(p))
        self.assertEqual(r.locate(p).found.kind, "missing")
        with self.assertRaises(NotFound):
            r.read_with_fallback(p)
        # A delete looks where a miss does: at home alone, in one round. The list says no copy can be elsewhere
        # (the function keeps a placement open while one can); this one is found by no router, and left.
        deleted = r.delete(p)
        self.assertEqual((deleted.removed, deleted.rounds), ([], 1))
        self.assertTrue(os.path.lexists(stray))


class OpenPlacements(MountCase):
    """A file written by a router on an earlier list, whose placement the version 3 list says is open."""

    def test_a_file_written_under_an_open_placement_is_found_and_read_where_it_is(self) -> None:
        r = self.router("the app's files, and an older list")
        # The earlier lists: the app's files in /, then / and /shards/use1-az2.
        earlier = [Router(MountTargetList([Target("fsmt-%d" % i, "10.0.%d.4" % i, root=root)
                                           for i, root in enumerate(roots)], RENDEZVOUS),
                          Layout.single_mount(self.base)) for roots in (["/"], ["/", "/shards/use1-az2"])]
        seen: Dict[str, int] = {}
        for i in range(400):
            if len(seen) == 2 and min(seen.values()) >= 4:
                break
            p = "data/analysis/device-w%d.json" % i
            home = r.resolve(p)
            for old in earlier:
                there = old.shards[old.resolve(p).index].root
                if there == r.shards[home.index].root:
                    continue
                seen[there] = seen.get(there, 0) + 1
                with self.subTest(path=p, written_in=there):
                    written = old.write(p, b"written %d" % i)
                    self.assertEqual(written, self.at(there, home.logical))
                    self.assertTrue(r.exists(p))
                    found = r.locate(p).found
                    self.assertEqual((found.kind, found.real), ("elsewhere", written))
                    got = r.read_with_fallback(p)
                    self.assertEqual(got.data, b"written %d" % i)
                    # Left there: a client still on that list looks for it there alone.
                    self.assertEqual((got.place.kind, r.shards[got.place.index or 0].root), ("at-placement", there))
                    self.assertTrue(os.path.lexists(written))
                    self.assertFalse(os.path.lexists(home.real))
                    self.assertEqual(old.read_with_fallback(p).data, b"written %d" % i)
                    r.delete(p)
        self.assertEqual(set(seen), {"/", "/shards/use1-az2"})

    def test_a_miss_finds_every_file_moving_home_beside_it(self) -> None:
        """Under open placements home is asked last: files move only from a placement's home to their home (the
        function's moves), linked home before they go, so a look there and then at home never misses one in
        flight (router/tests/fs.rs has the same race). A mover takes them home in a seeded order."""
        r = self.router("the app's files, and an older list")
        paths = []
        for i in range(2000):
            p = "data/analysis/device-race%d.json" % i
            home = r.resolve(p)
            if r.shards[home.index].root != "/" and "/" in [r.shards[j].root for j in r.miss_shards(home)]:
                paths.append((p, self.at("/", home.logical), home.real))
            if len(paths) == 150:
                break
        for _, at_slash, _ in paths:
            put(at_slash, b"x")
        order = list(paths)
        random.Random(int(os.environ.get("EFS_RACE_SEED", "2026"))).shuffle(order)
        done = threading.Event()
        seen = {"home": 0, "elsewhere": 0}
        failures: List[str] = []

        def reader() -> None:
            while not done.is_set():
                for p, _, _ in paths:
                    kind = r.locate(p).found.kind
                    if kind == "missing" or not r.exists(p):
                        failures.append(p)
                        return
                    seen[kind] += 1

        threads = [threading.Thread(target=reader) for _ in range(2)]
        for t in threads:
            t.start()
        for _, at_slash, real in order:
            relocate(at_slash, real)
        done.set()
        for t in threads:
            t.join()
        self.assertEqual(failures, [])
        self.assertGreater(min(seen.values()), 0, seen)

    def test_a_modulo_placement_finds_a_file_by_the_path_as_the_app_spelled_it(self) -> None:
        r = self.router("migrated from modulo")
        roots = ["/", "/shards/use1-az2", "/shards/use1-az3"]
        original = Router(MountTargetList([Target("fsmt-%d" % i, "10.0.%d.4" % i, root=root)
                                           for i, root in enumerate(roots)], MODULO_SHA256),
                          Layout.single_mount(self.base))
        moved = 0
        for i in range(40):
            p = ("/data/analysis/device-m%d.json", "./data/analysis/device-m%d.json")[i % 2] % i
            there = roots[modulo_sha256(p, 3)]
            home = r.resolve(p)
            if there == r.shards[home.index].root:
                continue
            with self.subTest(path=p, written_in=there):
                self.assertEqual(original.write(p, b"m"), self.at(there, home.logical))
                self.assertTrue(r.exists(p))
                got = r.read_with_fallback(p)
                self.assertEqual((got.data, got.place.kind), (b"m", "at-placement"))
                self.assertEqual(original.read_with_fallback(p).place.kind, "home")
                moved += 1
                r.delete(p)
        self.assertGreater(moved, 5)


if __name__ == "__main__":
    unittest.main()
