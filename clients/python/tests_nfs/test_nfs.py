"""The Python client's promises on a real NFSv4.1 client, each actor through its own mount.

These run only on the NFS tier (``make nfs-test``, part of ``make test``): a Linux NFS server and several
``nosharecache`` mounts of one export with EFS's options, in a small VM (scripts/nfs-tier/). Each mount has its
own name and attribute caches, as each ECS task and the function have on EFS. The tier names the mounts in
``EFS_NFS_MOUNTS`` (comma-separated) and the server's own directory in ``EFS_NFS_BACKING``; without them every
test fails, naming the variable. Each probe first shows the hazard with plain calls (the cache really is
stale, so the test could fail), then that the client answers as the server does.
"""

import importlib.util
import os
import random
import shutil
import threading
import time
import unittest
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple

import efs_router
from efs_router import HOME, Layout, MountTargetList, Router, Target, relocate

ROOTS = ["/", "/shards/use1-az4", "/shards/use1-az1"]
ON_THE_TIER = "runs on the NFS tier (make nfs-test)"


def mounts() -> List[str]:
    value = os.environ.get("EFS_NFS_MOUNTS")
    if not value:
        raise AssertionError("EFS_NFS_MOUNTS: not set; these tests run on the NFS tier (make nfs-test)")
    m = value.split(",")
    if len(m) < 3:
        raise AssertionError("EFS_NFS_MOUNTS: needs 3 mounts, has %r" % value)
    return m


def backing() -> str:
    value = os.environ.get("EFS_NFS_BACKING")
    if not value:
        raise AssertionError("EFS_NFS_BACKING: not set; these tests run on the NFS tier")
    return value


def router(mount: str, test: str) -> Router:
    ml = MountTargetList([Target("fsmt-%d" % i, "10.0.%d.4" % i, root=r) for i, r in enumerate(ROOTS)],
                         efs_router.RENDEZVOUS)
    return Router(ml, Layout.single_mount(os.path.join(mount, test)))


def setup(test: str) -> List[str]:
    """Each shard's watched directory made on the server, and looked up through every mount, as a running task
    has."""
    b = os.path.join(backing(), test)
    shutil.rmtree(b, ignore_errors=True)
    for r in ROOTS:
        os.makedirs(os.path.join(b, r.lstrip("/"), "data/analysis"))
    m = mounts()
    for mount in m:
        for r in ROOTS:
            assert os.path.isdir(os.path.join(mount, test, r.lstrip("/"), "data/analysis"))
    return m


def misplaced(r: Router, home: int, other: int, tag: str) -> Tuple[str, str, str]:
    i = 0
    while True:
        p = "data/analysis/device-%s%d-1700000000.json" % (tag, i)
        res = r.resolve(p)
        if res.index == home:
            return p, res.real, r.layout.real_path(r.shards, other, res.logical)
        i += 1


def through(real: str, m: str, n: str) -> str:
    return os.path.join(n, os.path.relpath(real, m))


def on_server(real: str, mount: str) -> Optional[bytes]:
    try:
        with open(os.path.join(backing(), os.path.relpath(real, mount)), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def write_atomically(path: str, data: bytes) -> None:
    tmp = path + ".writing"
    with open(tmp, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    os.rename(tmp, path)


def missing(path: str) -> bool:
    try:
        os.lstat(path)
        return False
    except FileNotFoundError:
        return True


def _read_into(r: Router, path: str, barrier: threading.Barrier, results: List[object], i: int) -> None:
    barrier.wait()
    try:
        results[i] = r.read_with_fallback(path)
    except BaseException as e:  # surfaced by the caller: Thread.join does not re-raise
        results[i] = e


class Probes(unittest.TestCase):
    def test_a_miss_then_another_clients_write_is_found(self) -> None:
        t = "py_probe_miss"
        m = setup(t)
        task1 = router(m[1], t)
        path, home1, _ = misplaced(task1, 1, 0, "m")
        self.assertTrue(missing(home1))
        write_atomically(through(home1, m[1], m[2]), b"v1")
        self.assertTrue(missing(home1), ON_THE_TIER + ": the tier must show a stale negative lookup")
        self.assertTrue(task1.exists(path))
        read = task1.read_with_fallback(path)
        self.assertEqual((read.data, read.place), (b"v1", HOME))
        self.assertEqual(task1.locate(path).found.kind, "home")

    def test_a_listing_shows_what_another_client_wrote_since(self) -> None:
        t = "py_listing_fresh"
        m = setup(t)
        task1 = router(m[1], t)
        path, home1, other1 = misplaced(task1, 1, 0, "l")
        self.assertEqual(task1.listdir("data/analysis"), [])
        self.assertTrue(missing(home1) and missing(other1))
        write_atomically(through(other1, m[1], m[2]), b"stale")
        write_atomically(through(home1, m[1], m[2]), b"v1")
        self.assertTrue(missing(home1) and missing(other1), ON_THE_TIER + ": the tier must show stale negative lookups")
        # Opening each shard's directory revalidates it: the names are the server's.
        entries = task1.scandir("data/analysis")
        self.assertEqual([(e.path, e.index, e.shards) for e in entries], [(path, 1, (0, 1))])
        self.assertEqual(task1.read_with_fallback(path).data, b"v1")

    def test_the_old_name_after_a_move_is_not_named(self) -> None:
        t = "py_probe_moved"
        m = setup(t)
        task = router(m[1], t)
        path, home_t, away_t = misplaced(task, 1, 2, "o")
        with open(os.path.join(backing(), os.path.relpath(away_t, m[1])), "wb") as f:
            f.write(b"x")
        self.assertFalse(missing(away_t))
        self.assertTrue(missing(home_t))
        self.assertEqual(relocate(through(away_t, m[1], m[0]), through(home_t, m[1], m[0])), efs_router.MOVED)
        # The hazard: this client's cache still has no file at home (the old name is fetched again by stat).
        self.assertTrue(missing(home_t), ON_THE_TIER + ": the tier must show home missing after the move")
        self.assertEqual(task.locate(path).found.kind, "home")
        self.assertTrue(task.exists(path))

    def test_a_version_renamed_over_the_source_during_a_move(self) -> None:
        t = "py_probe_race"
        m = setup(t)
        func = router(m[0], t)
        # First the previous protocol, with plain calls around the writer: it must lose the newest version on the
        # tier, or the tier shows nothing. Then relocate after the same writer, which must keep it.
        for round_, old in enumerate((True, False, False)):
            _, home_f, away_f = misplaced(func, 1, 2, "r%d" % round_)
            with open(away_f, "wb") as f:
                f.write(b"old")
            looked = os.lstat(away_f).st_ino  # the mover's cache holds the old version
            self.assertTrue(missing(home_f))
            if old:
                os.link(away_f, home_f)
                write_atomically(through(away_f, m[0], m[1]), b"newest")
                p = os.path.join(os.path.dirname(away_f), ".efs-router-0000000000000000.moving")
                os.rename(away_f, p)
                if os.lstat(p).st_ino == looked:
                    os.unlink(p)
                self.assertNotIn(b"newest", (on_server(home_f, m[0]), on_server(away_f, m[0])),
                                 ON_THE_TIER + ": the previous protocol must lose the newest version here")
                continue
            write_atomically(through(away_f, m[0], m[1]), b"newest")
            relocate(away_f, home_f)
            self.assertEqual(on_server(home_f, m[0]), b"newest")
            self.assertIsNone(on_server(away_f, m[0]))

    def test_racing_readers_of_a_misplaced_file_all_get_its_bytes(self) -> None:
        t = "py_racing_readers"
        m = setup(t)
        readers = [router(mount, t) for mount in m]
        places: Counter[str] = Counter()
        for round_ in range(6):
            path, home0, away0 = misplaced(readers[0], 1, 2, "q%d" % round_)
            with open(away0, "wb") as f:
                f.write(b"bytes %d" % round_)
            for i in range(len(m)):
                self.assertTrue(missing(through(home0, m[0], m[i])))
            barrier = threading.Barrier(len(readers))
            results: List[object] = [None] * len(readers)
            threads = [threading.Thread(target=_read_into, args=(readers[i], path, barrier, results, i))
                       for i in range(len(readers))]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            for res in results:
                self.assertIsInstance(res, efs_router.ReadResult, repr(results))
                assert isinstance(res, efs_router.ReadResult)
                self.assertEqual(res.data, b"bytes %d" % round_)
                places[res.place.kind] += 1
            self.assertLessEqual(sum(1 for r in results if getattr(r, "place", HOME).kind == "moved-home"), 1)
        print("racing readers: reads by place %r" % dict(places))
        # Each round one reader moved the file home; the others read it at home, or found it where it was and saw
        # another move it first (the race this test is for): both must have happened.
        for kind in ("moved-home", "moved-by-another"):
            self.assertGreater(places[kind], 0, (kind, dict(places)))

    def test_a_write_into_a_directory_another_client_made_succeeds(self) -> None:
        t = "py_write_new_dir"
        m = setup(t)
        a, b = router(m[1], t), router(m[2], t)
        path, home_a, _ = misplaced(a, 0, 1, "w")
        nested = path.replace("data/analysis/", "data/analysis/2026/12/")
        new_dir = os.path.join(os.path.dirname(home_a), "2026/12")
        self.assertTrue(missing(new_dir))
        b.write(nested, b"from b")
        self.assertTrue(missing(new_dir), ON_THE_TIER + ": the tier must show a stale missing directory")
        a.write(nested, b"from a")
        self.assertEqual(b.read_with_fallback(nested).data, b"from a")

    def test_the_newest_version_survives_moves_racing_writers(self) -> None:
        t = "py_race_random"
        m = setup(t)
        func = router(m[0], t)
        seed = int(os.environ.get("NFS_RACE_SEED", "20261201"))
        rng = random.Random(seed)
        # How long a write and a move take here, which varies with the machine and the code:
        # the writer's moment is drawn across the whole move and a little after it, so that
        # both orders happen whatever their speed.
        _, home_w, away_w = misplaced(func, 1, 2, "warm")
        started = time.monotonic()
        write_atomically(through(away_w, m[0], m[1]), b"warm")
        write_took = time.monotonic() - started
        self.assertFalse(missing(away_w))
        started = time.monotonic()
        relocate(away_w, home_w)
        move_took = time.monotonic() - started
        at_home = at_source = 0
        # The mover's answers. Which of its paths the link took (no name, then the writer's file, or nothing) is the
        # Rust router's to count: router/tests/link_race.rs makes that moment on purpose, and the router's own tier
        # tests race it here.
        answers: Counter[str] = Counter()
        for round_ in range(30):
            _, home_f, away_f = misplaced(func, 1, 2, "z%d" % round_)
            with open(away_f, "wb") as f:
                f.write(b"old")
            self.assertFalse(missing(away_f))
            # The write lands about `write_took` after it starts: from the move's start to a
            # little after its end.
            delay = rng.random() * (move_took + write_took)
            newest = b"newest %d" % round_
            writer = threading.Timer(delay, write_atomically, (through(away_f, m[0], m[1]), newest))
            writer.start()
            time.sleep(write_took)
            answers[relocate(away_f, home_f)] += 1
            writer.join()
            time.sleep(0)
            home, away = on_server(home_f, m[0]), on_server(away_f, m[0])
            if home == newest:
                at_home += 1
            elif away == newest:
                at_source += 1
            else:
                self.fail("seed %d round %d: the newest version is lost (home %r, away %r)"
                          % (seed, round_, home, away))
        print("seed %d: the newest version ended at home %d times, at the source %d (a write %.1f ms, "
              "a move %.1f ms); the mover answered %r"
              % (seed, at_home, at_source, write_took * 1000, move_took * 1000, dict(answers)))
        self.assertEqual(sum(answers.values()), 30)
        self.assertTrue(at_home > 0 and at_source > 0, (seed, at_home, at_source))



# Session bookkeeping, not a call's: a lease's SEQUENCE and the like.
NOT_CALLS = {"SEQUENCE", "RENEW", "GET_LEASE_TIME", "NULL"}


def nfs_ops(mount: str) -> Dict[str, int]:
    """This process's count of each NFS operation sent so far through ``mount``, as the tier's benches count
    them (scripts/nfs-tier/mountstats.py, read from the repository this test runs in)."""
    path = Path(__file__).resolve().parents[3] / "scripts" / "nfs-tier" / "mountstats.py"
    spec = importlib.util.spec_from_file_location("mountstats", path)
    if spec is None or spec.loader is None:
        raise AssertionError("%s: cannot load" % path)
    mountstats = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mountstats)
    per_op: Dict[str, Tuple[int, int, int]] = mountstats.per_op(mount)
    out = {name: calls for name, (calls, _, _) in per_op.items()}
    if not out:
        raise AssertionError("%s: no per-op statistics" % mount)
    return out


class Costs(unittest.TestCase):
    def test_a_delete_on_a_settled_list_is_three_calls_and_the_remove_at_64_shards(self) -> None:
        """As router/tests/nfs.rs, through the Python package: one look at home on a settled version 3 list (at most
        3 NFS calls and the REMOVE), every shard outside the list's ``scope``."""
        t = "py_delete_settled_cost"
        m = mounts()
        targets = [Target("fsmt-%d" % i, "10.0.%d.4" % i, az_id=az, root=r, shards=21 + (i == 0))
                   for i, (r, az) in enumerate(zip(ROOTS, ["use1-az2", "use1-az4", "use1-az1"]))]
        ml = MountTargetList(targets, efs_router.RENDEZVOUS, open=[], scope="data/analysis")
        task = Router(ml, Layout.single_mount(os.path.join(m[1], t)))
        self.assertEqual(len(task.shards), 64)
        shutil.rmtree(os.path.join(backing(), t), ignore_errors=True)
        for d in ("data/analysis", "data/other"):
            for s in task.shards:
                os.makedirs(os.path.join(backing(), t, s.root.lstrip("/"), d))
                self.assertTrue(os.path.isdir(os.path.join(m[1], t, s.root.lstrip("/"), d)))
        for prefix, rounds in (("data/analysis", 1), ("data/other", 3)):
            path = "%s/device-settled-1700000000.json" % prefix
            home = task.resolve(path)
            with open(os.path.join(backing(), os.path.relpath(home.real, m[1])), "wb") as f:
                f.write(b"x")
            self.assertTrue(task.exists(path))
            before = nfs_ops(m[1])
            done = task.delete(path)
            after = nfs_ops(m[1])
            sent = {k: n - before.get(k, 0) for k, n in after.items()
                    if n - before.get(k, 0) and k not in NOT_CALLS}
            print("Python, delete at 64 shards, nothing open, %s: %s" % (prefix, sent))
            self.assertEqual((done.removed, done.rounds), ([home.index], rounds))
            self.assertEqual(sent.get("REMOVE"), 1, sent)
            if rounds == 1:
                self.assertLessEqual(sum(sent.values()) - 1, 3, sent)
            else:
                self.assertGreaterEqual(sent.get("LOOKUP", 0), 63, sent)


if __name__ == "__main__":
    unittest.main()
