"""Router.listdir, scandir, walk and glob (router/tests/listing.rs): the shared cases of tests/vectors/listing.json in
both layouts, the copy a listing names being the one a read takes, the winning copy's stat, globbing, pruning a
walk and its errors, links on the way never followed, and more shards than are read at once."""

import json
import os
import tempfile
import unittest
from typing import Any, Dict, List, Tuple

import efs_router
from efs_router import Entry, InsideAnotherShard, Layout, NotFound, PathError, Router
from helpers import VECTORS, files_under, make_list, put

LISTING_VECTORS = os.path.join(os.path.dirname(VECTORS), "listing.json")


def cases() -> List[Dict[str, Any]]:
    with open(LISTING_VECTORS, encoding="utf-8") as f:
        found: List[Dict[str, Any]] = json.load(f)["cases"]
    return found


def shard_dir(base: str, root: str) -> str:
    return os.path.join(base, root.lstrip("/"))


def make_tree(base: str, case: Dict[str, Any]) -> None:
    """Every shard directory, then each item; a file holds ``<root>:<path>``, so that a read shows which copy it
    took."""
    for root in case["roots"]:
        os.makedirs(shard_dir(base, root), exist_ok=True)
    for item in case["tree"]:
        real = os.path.join(shard_dir(base, item["root"]), item["path"])
        os.makedirs(os.path.dirname(real), exist_ok=True)
        if "symlink" in item:
            os.symlink(item["symlink"], real)
        elif "fifo" in item:
            os.mkfifo(real)
        elif "dir" in item:
            os.makedirs(real, exist_ok=True)
        else:
            put(real, ("%s:%s" % (item["root"], item["path"])).encode())
            if "mtime_ns" in item:
                os.utime(real, ns=(item["mtime_ns"], item["mtime_ns"]))


def routers(base: str, case: Dict[str, Any]) -> List[Tuple[str, Router]]:
    """The routers of a case over ``base``: one mount, and one mount per shard."""
    roots = case["roots"]
    single = Router(make_list(roots, case["strategy"]), Layout.single_mount(base))
    per_target = Router(make_list(roots, case["strategy"]),
                        Layout.per_target([shard_dir(base, r) for r in roots]))
    return [("single mount", single), ("per target", per_target)]


def spelled(r: Router, e: Entry) -> Dict[str, Any]:
    """An entry in the vectors' words: name, kind, the winning root, the roots holding it."""
    return {"name": e.name, "kind": e.kind, "root": r.shards[e.index].root,
            "roots": [r.shards[i].root for i in e.shards]}


def error_kind(e: Exception) -> str:
    if isinstance(e, NotFound):
        return "not-found"
    if isinstance(e, InsideAnotherShard):
        return "inside-another-shard"
    if isinstance(e, PathError):
        return e.kind
    raise AssertionError("unexpected error %r" % e)


class Vectors(unittest.TestCase):
    def test_the_shared_cases_list_as_the_vectors_say(self) -> None:
        for case in cases():
            with tempfile.TemporaryDirectory() as base:
                make_tree(base, case)
                before = files_under(base)
                for layout, r in routers(base, case):
                    at = "%s (%s)" % (case["name"], layout)
                    for path, home in case["homes"].items():
                        self.assertEqual(r.shards[r.resolve(path).index].root, home, "%s: %s" % (at, path))
                    for d, want in case["listings"].items():
                        self.assertEqual([spelled(r, e) for e in r.scandir(d)], want, "%s: %r" % (at, d))
                        self.assertEqual(r.listdir(d), [e["name"] for e in want], "%s: %r" % (at, d))
                    walked = list(r.walk(""))
                    self.assertEqual([d for d, _, _ in walked], case["walk"], at)
                    for d, dirnames, filenames in walked:
                        listing = case["listings"][d]
                        self.assertEqual(dirnames, [e["name"] for e in listing if e["kind"] == "dir"], at)
                        self.assertEqual(filenames, [e["name"] for e in listing if e["kind"] == "file"], at)
                    for d, kind in case["errors"].items():
                        with self.assertRaises((NotFound, InsideAnotherShard, PathError), msg="%s: %r" % (at, d)) as c:
                            r.scandir(d)
                        self.assertEqual(error_kind(c.exception), kind, "%s: %r" % (at, d))
                        with self.assertRaises((NotFound, InsideAnotherShard, PathError)) as c:
                            next(r.walk(d))
                        self.assertEqual(error_kind(c.exception), kind, "%s: %r" % (at, d))
                self.assertEqual(files_under(base), before, "%s: listing moves nothing" % case["name"])


class ThreeShards(unittest.TestCase):
    """The first case of the vectors: three shards, files spread, duplicates, links, private names."""

    def setUp(self) -> None:
        self._tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self._tmp.cleanup)
        self.base = self._tmp.name
        self.case = cases()[0]
        make_tree(self.base, self.case)
        self.router = routers(self.base, self.case)[0][1]

    def test_a_read_takes_the_copy_the_listing_names(self) -> None:
        files = [e for e in self.router.scandir("data/analysis") if e.is_file()]
        self.assertEqual(len(files), 8)
        for e in files:
            want = ("%s:%s" % (self.router.shards[e.index].root, e.path)).encode()
            with open(e.real, "rb") as f:  # that copy, looked at first: the read may move it home
                self.assertEqual(f.read(), want, e.path)
            self.assertEqual(self.router.read_with_fallback(e.path).data, want, e.path)

    def test_stat_is_the_winning_copys(self) -> None:
        entries = {e.name: e for e in self.router.scandir("data/analysis")}
        self.assertEqual(entries["c.json"].stat().st_mtime_ns, 1700000300000000000)
        self.assertEqual(entries["e.json"].stat().st_mtime_ns, 1700000200000000001)
        self.assertEqual(entries["b.json"].stat().st_mtime_ns, 1700000100000000000)
        self.assertEqual(entries["a.json"].stat().st_size, len("/:data/analysis/a.json"))
        self.assertTrue(entries["sub"].is_dir() and not entries["sub"].is_file())
        self.assertEqual(entries["sub"].stat().st_ino, os.stat(os.path.join(self.base, "data/analysis/sub")).st_ino)
        self.assertEqual(entries["x"].path, "data/analysis/x")

    def test_glob_matches_per_component(self) -> None:
        g = self.router.glob
        json_files = ["data/analysis/%s.json" % n for n in "abcdefi"]
        self.assertEqual(g("data/analysis/*.json"), json_files)
        self.assertEqual(g("/data/analysis/[bc].json"), json_files[1:3])
        self.assertEqual(g("data/*/x"), ["data/analysis/x"])
        self.assertEqual(g("*"), ["data", "readme.txt"])
        self.assertEqual(g("**/*.json"),
                         json_files + ["data/analysis/sub/one.json", "data/analysis/sub/two.json",
                                       "data/analysis/x/inner.json"])
        self.assertEqual(g("data/**/inner.json"), ["data/analysis/x/inner.json"])
        self.assertEqual(g("data/analysis/.*"), ["data/analysis/.efs-router-0123456789ABCDEF.tmp"])
        self.assertEqual(g("data/analysis/g.json"), [])  # a link at home: not data, not listed
        self.assertEqual(g("data/analysis/a.json"), ["data/analysis/a.json"])
        self.assertEqual(g("nope/*"), [])
        with self.assertRaises(PathError):
            g("../*")
        with self.assertRaises(InsideAnotherShard):
            g("shards/use1-az4/*")

    def test_a_walk_may_be_pruned_and_its_errors_handled(self) -> None:
        seen = []
        for d, dirnames, _ in self.router.walk("data"):
            seen.append(d)
            if "sub" in dirnames:
                dirnames.remove("sub")
        self.assertEqual(seen, ["data", "data/analysis", "data/analysis/x"])
        errors: List[OSError] = []
        self.assertEqual(list(self.router.walk("nope", onerror=errors.append)), [])
        self.assertEqual([type(e) for e in errors], [NotFound])
        with self.assertRaises(NotFound):
            list(self.router.walk("nope"))

    def test_a_subdirectory_removed_after_its_parent_was_listed_is_skipped(self) -> None:
        walk = self.router.walk("data/analysis")
        d, dirnames, _ = next(walk)
        self.assertEqual((d, dirnames), ("data/analysis", ["sub", "x"]))
        for root in ("/", "/shards/use1-az4"):
            for name in ("one.json", "two.json"):
                path = os.path.join(shard_dir(self.base, root), "data/analysis/sub", name)
                if os.path.exists(path):
                    os.unlink(path)
            os.rmdir(os.path.join(shard_dir(self.base, root), "data/analysis/sub"))
        self.assertEqual([d for d, _, _ in walk], ["data/analysis/x"])


class Version3(unittest.TestCase):
    def test_a_version_3_list_shows_only_copies_a_read_finds(self) -> None:
        """A read looks at home and where an open placement homes a path, nowhere else: a copy elsewhere is listed
        only while a placement that homes it there is open (as router/tests/listing.rs)."""
        with tempfile.TemporaryDirectory() as base:
            ml = make_list(["/", "/shards/b", "/shards/c"])
            r = Router(ml, Layout.single_mount(base))
            name = next("x%d.json" % i for i in range(100) if r.resolve("data/x%d.json" % i).index != 0)
            put(os.path.join(base, "data", name), b"x")  # in `/`, as the app wrote it before a list
            slash = efs_router.Placement(efs_router.RENDEZVOUS, (efs_router.Placed("/"),))
            for open_, listed in ((None, [name]), ([slash], [name]), ([], [])):
                router = Router(efs_router.MountTargetList(ml.mount_targets, ml.strategy, open=open_),
                                Layout.single_mount(base))
                names = router.listdir("data")
                self.assertEqual(names, listed, open_)
                self.assertEqual(router.exists("data/" + name), bool(names), open_)


class Layouts(unittest.TestCase):
    def test_a_link_on_the_way_is_never_followed(self) -> None:
        roots = ["/", "/shards/use1-az4", "/shards/use1-az1"]
        with tempfile.TemporaryDirectory() as base:
            for root in roots:
                os.makedirs(shard_dir(base, root), exist_ok=True)
            put(os.path.join(base, "elsewhere/analysis/secret.json"), b"")
            put(os.path.join(base, "data/analysis/a.json"), b"")
            os.symlink(os.path.join(base, "elsewhere"), os.path.join(shard_dir(base, "/shards/use1-az1"), "data"))
            r = Router(make_list(roots), Layout.single_mount(base))
            self.assertEqual([(e.name, e.shards) for e in r.scandir("")], [("data", (0,)), ("elsewhere", (0,))])
            self.assertEqual(r.listdir("data/analysis"), ["a.json"])

    def test_forty_one_shards_list_every_file_once_at_home(self) -> None:
        roots = ["/"] + ["/shards/z%d" % i for i in range(40)]
        with tempfile.TemporaryDirectory() as base:
            for root in roots:
                os.makedirs(shard_dir(base, root), exist_ok=True)
            r = Router(make_list(roots, efs_router.RENDEZVOUS), Layout.single_mount(base))
            homes = {}
            for i in range(300):
                path = "data/device-%03d.json" % i
                r.write(path, b"x")
                homes["device-%03d.json" % i] = r.resolve(path).index
            entries = r.scandir("/data")
            self.assertEqual({e.name: e.index for e in entries}, homes)
            self.assertTrue(all(e.shards == (e.index,) for e in entries))
            self.assertGreater(len(set(homes.values())), efs_router.PROBE_THREADS)
            self.assertEqual(r.listdir(""), ["data"])  # shards/ holds only shard roots


if __name__ == "__main__":
    unittest.main()
