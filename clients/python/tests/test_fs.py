"""File operations (router/src/fs.rs) on a local directory, the router's own names, revalidate_dir."""

import multiprocessing
import os
import queue
import tempfile
import threading
import unittest
from typing import Any, Callable, List, Optional, Tuple

import efs_router
from efs_router import (
    HOME,
    MOVED,
    InsideAnotherShard,
    Layout,
    MountTargetList,
    NotARegularFile,
    NotFound,
    PathError,
    Place,
    Router,
    Target,
    relocate,
)
from helpers import THREE, FileSystemCase, files_under, make_list, put, put_at, read, v2


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

    def test_a_version_2_list_routes_over_its_shards_in_both_layouts(self) -> None:
        # fsmt-a serves /, /shards/use1-az1.1, .2; fsmt-b /shards/use1-az2 and /shards/use1-az2.1 (draining).
        ml = MountTargetList.from_json(
            v2('"id":"fsmt-a","ip":"10.0.1.4","az_id":"use1-az1","root":"/","shards":3',
               '"id":"fsmt-b","ip":"10.0.2.7","az_id":"use1-az2","root":"/shards/use1-az2","shards":2,'
               '"draining_shards":1'))
        roots = [t.root for t in ml.shards()]
        for root in roots:
            os.makedirs(os.path.join(self.base, root.lstrip("/")), exist_ok=True)
        r = Router(ml, Layout.single_mount(self.base))
        self.assertEqual(len(r.shards), 5)
        self.assertEqual(r.shards[4].root, "/shards/use1-az2.1")
        self.assertIs(r.targets, r.shards)
        homes = [0] * 5
        for i in range(400):
            p = "data/analysis/device-%d-1.json" % i
            home = r.resolve(p)
            self.assertEqual(home.real, os.path.join(self.base, roots[home.index].lstrip("/"), p))
            homes[home.index] += 1
        self.assertTrue(all(h > 0 for h in homes[:4]) and homes[4] == 0, homes)
        p, home_real, elsewhere = self.misplaced(r, 1, 4, "v")
        put(elsewhere, b"x")
        self.assertEqual(r.locate(p).found, efs_router.Found("elsewhere", 4, elsewhere))
        self.assertEqual(r.read_with_fallback(p).place, Place("moved-home", 4))
        self.assertTrue(os.path.exists(home_real) and not os.path.exists(elsewhere))
        p, home_real, elsewhere = self.misplaced(r, 2, 1, "w")
        put(elsewhere, b"y")
        self.assertEqual(r.read_with_fallback(p).place, Place("moved-home", 1))
        with self.assertRaises(InsideAnotherShard):
            r.write("shards/use1-az1.2/x", b"x")
        # Per target: one mount per shard (its ip:root), in the list's shard order.
        mounts = [os.path.join(self.base, root.lstrip("/")) if root != "/" else self.base for root in roots]
        per = Router(ml, Layout.per_target(mounts))
        p, home_real, elsewhere = self.misplaced(per, 3, 2, "x")
        self.assertTrue(home_real.startswith(mounts[3] + "/") and elsewhere.startswith(mounts[2] + "/"))
        put(elsewhere, b"z")
        self.assertEqual(per.read_with_fallback(p).place, Place("moved-home", 2))
        self.assertTrue(os.path.exists(home_real) and not os.path.exists(elsewhere))
        with self.assertRaises(efs_router.LayoutError) as cm:
            Router(ml, Layout.per_target(mounts[:2]))
        self.assertEqual(str(cm.exception), "2 mounts for 5 shards: a per-target layout needs one mount per shard "
                                            "(its ip:root), in the list's shard order")


class RevalidateDir(unittest.TestCase):
    """The call behind every confirmed miss (its effect on a real NFS client is tested in tests_nfs/)."""

    def test_a_directory_is_there_or_not_and_a_file_is_an_error(self) -> None:
        with tempfile.TemporaryDirectory() as d:
            self.assertTrue(efs_router.revalidate_dir(d))
            self.assertFalse(efs_router.revalidate_dir(os.path.join(d, "a", "b", "c")))
            f = os.path.join(d, "f")
            put_at(f, b"", 1)
            with self.assertRaises(NotADirectoryError):
                efs_router.revalidate_dir(f)


class PrivateNames(unittest.TestCase):
    def test_exactly_the_router_names(self) -> None:
        for name, want in ((".efs-router-0123456789abcdef.tmp", True), (".efs-router-0123456789abcdef.moving", True),
                           (".efs-router-0123456789ABCDEF.tmp", False), (".efs-router-0123456789abcde.tmp", False),
                           (".efs-router-0123456789abcdef0.tmp", False), (".efs-router-0123456789abcdef.tmpx", False),
                           (".efs-router-0123456789abcdef", False), ("x.efs-router-0123456789abcdef.tmp", False),
                           (".efs-router-0123456789abcdeg.moving", False), ("device-1.json", False)):
            self.assertEqual(efs_router.is_private_name(name), want, name)
            self.assertEqual(efs_router.is_private_name(name.encode()), want, name)

    def test_never_routed(self) -> None:
        with tempfile.TemporaryDirectory() as base:
            r = Router(make_list(THREE), Layout.single_mount(base))
            for p in ("data/analysis/.efs-router-0123456789abcdef.tmp", "data/.efs-router-0123456789abcdef.moving/x"):
                with self.subTest(p=p), self.assertRaises(PathError) as cm:
                    r.write(p, b"x")
                self.assertEqual(cm.exception.kind, "reserved-name")
            real = r.write("data/analysis/a.json", b"x")
            self.assertEqual(os.listdir(os.path.dirname(real)), ["a.json"])


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

    def test_the_newest_copy_is_read_and_moved_home_a_tie_going_to_the_earlier_shard(self) -> None:
        r = self.router()
        p, home, in_0 = self.misplaced(r, 1, 0, "newest")
        in_2 = r.layout.real_path(r.targets, 2, r.resolve(p).logical)
        put_at(in_0, b"older", 10)
        put_at(in_2, b"newer", 20)  # the later shard has the newer copy: it wins though shard 0 comes first
        self.assertEqual(r.read_with_fallback(p), (b"newer", Place("moved-home", 2)))
        self.assertEqual(read(home), b"newer")
        self.assertFalse(os.path.lexists(in_2))
        self.assertEqual(read(in_0), b"older")  # left; home wins every later read, rebalancing drops it
        p, home, in_0 = self.misplaced(r, 1, 0, "tie")
        in_2 = r.layout.real_path(r.targets, 2, r.resolve(p).logical)
        put_at(in_0, b"first", 10)
        put_at(in_2, b"second", 10)
        self.assertEqual(r.read_with_fallback(p), (b"first", Place("moved-home", 0)))
        self.assertEqual(read(home), b"first")

    def within_10s(self, f: Callable[[], Any]) -> Any:
        """``f()`` on another thread; fails if it blocks (a FIFO opened without O_NONBLOCK never returns)."""
        out: "queue.Queue[Tuple[bool, Any]]" = queue.Queue()

        def run() -> None:
            try:
                out.put((True, f()))
            except Exception as e:
                out.put((False, e))

        threading.Thread(target=run, daemon=True).start()
        try:
            ok, value = out.get(timeout=10)
        except queue.Empty:
            raise AssertionError("blocked: a FIFO was opened without O_NONBLOCK") from None
        if not ok:
            raise value
        return value

    def test_links_and_fifos_are_not_data_skipped_elsewhere_refused_at_home(self) -> None:
        r = self.router()
        secret = os.path.join(self.base, "secret")
        put(secret, b"outside the shards")
        # Elsewhere: a symbolic link is skipped; the regular copy in the third shard is read, though older.
        p, home, in_0 = self.misplaced(r, 1, 0, "skip")
        in_2 = r.layout.real_path(r.targets, 2, r.resolve(p).logical)
        os.makedirs(os.path.dirname(in_0), exist_ok=True)
        os.symlink(secret, in_0)
        put_at(in_2, b"real", 1)
        self.assertEqual(self.within_10s(lambda: r.read_with_fallback(p)), (b"real", Place("moved-home", 2)))
        self.assertEqual(read(home), b"real")
        self.assertTrue(os.path.islink(in_0))
        # Only a FIFO elsewhere: as if absent.
        p, _, in_2 = self.misplaced(r, 1, 2, "fifo")
        os.makedirs(os.path.dirname(in_2), exist_ok=True)
        os.mkfifo(in_2)
        with self.assertRaises(NotFound):
            self.within_10s(lambda: r.read_with_fallback(p))
        # At home: an error naming the path, for a link and for a FIFO; nothing is followed.
        for tag, what in (("link", "symbolic link"), ("fifo", "FIFO")):
            p, home, _ = self.misplaced(r, 1, 2, tag)
            os.makedirs(os.path.dirname(home), exist_ok=True)
            if tag == "link":
                os.symlink(secret, home)
            else:
                os.mkfifo(home)
            with self.subTest(tag=tag), self.assertRaises(NotARegularFile) as cm:
                self.within_10s(lambda p=p: r.read_with_fallback(p))  # type: ignore[misc]
            self.assertEqual((cm.exception.path, cm.exception.what), (home, what))


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
        errors: List[BaseException] = []

        def reader() -> None:
            # Thread.join does not re-raise: an exception is kept and checked below.
            try:
                while not done.is_set():
                    d = r.read_with_fallback(p).data
                    if len(d) != size or d.count(d[:1]) != size:
                        bad.append(len(d))
                    reads[0] += 1
            except BaseException as e:
                errors.append(e)

        ts = [threading.Thread(target=reader) for _ in range(2)]
        for t in ts:
            t.start()
        for i in range(60):
            r.write(p, bytes([ord("a") + i % 26]) * size)
        done.set()
        for t in ts:
            t.join()
        self.assertEqual(errors, [])
        self.assertEqual(bad, [])
        self.assertGreater(reads[0], 0)
        self.assertEqual(files_under(self.base), [os.path.relpath(r.resolve(p).real, self.base)])


if __name__ == "__main__":
    unittest.main()
