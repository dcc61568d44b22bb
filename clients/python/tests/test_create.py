"""Router.create (router/tests/create.rs): the shared cases of tests/vectors/create.json, a file already there left
exactly as it was, another writer winning the link, file systems without hard links, errors that leave no temporary
name, and writers (threads, processes) racing to create the same new paths, of which exactly one wins each."""

import json
import multiprocessing
import os
import queue
import tempfile
import threading
import unittest
from typing import Any, Dict, List, Optional, Tuple

import efs_router
from efs_router import ALREADY_THERE, CREATED, Creation, InsideAnotherShard, Layout, MountTargetList, PathError, Router
from helpers import THREE, VECTORS, FileSystemCase, files_under, make_list, put, read

CREATE_VECTORS = os.path.join(os.path.dirname(VECTORS), "create.json")


def holds(path: str, new: bytes, before: bytes) -> Optional[str]:
    """What holds ``path``, in the vectors' words: new, file (any other bytes are spelled out), directory, link."""
    if os.path.islink(path):
        return "link"
    if os.path.isdir(path):
        return "directory"
    if not os.path.lexists(path):
        return None
    data = read(path)
    return "new" if data == new else "file" if data == before else "bytes %r" % data


def put_before(real: str, what: str, root: str) -> None:
    if what == "file":
        put(real, ("before %s" % root).encode())
    elif what == "directory":
        os.makedirs(real)
    else:
        assert what == "link", what
        os.makedirs(os.path.dirname(real), exist_ok=True)
        os.symlink("no-such-target", real)


def error_kind(e: BaseException) -> str:
    if isinstance(e, InsideAnotherShard):
        return "inside-another-shard"
    assert isinstance(e, PathError), e
    return e.kind


class Vectors(unittest.TestCase):
    def test_the_shared_cases(self) -> None:
        with open(CREATE_VECTORS) as f:
            v = json.load(f)
        self.assertGreaterEqual(len(v["cases"]), 15)
        for case in v["cases"]:
            with self.subTest(case["name"]), tempfile.TemporaryDirectory() as base:
                self.run_case(v, case, base)

    def run_case(self, v: Dict[str, Any], case: Dict[str, Any], base: str) -> None:
        mount_list = MountTargetList.from_json(json.dumps(v["lists"][case["list"]]))
        for s in mount_list.shards():
            os.makedirs(os.path.join(base, s.root.lstrip("/")), exist_ok=True)
        r = Router(mount_list, Layout.single_mount(base))
        data = v["data"].encode()
        if "error" in case:
            with self.assertRaises((PathError, InsideAnotherShard)) as caught:
                r.create(case["path"], data)
            self.assertEqual(error_kind(caught.exception), case["error"])
            self.assertEqual(files_under(base), [])
            return
        home = r.resolve(case["path"])
        self.assertEqual(home.index, case["home"])

        def real(i: int) -> str:
            return r.layout.real_path(r.shards, i, home.logical)

        for b in case["before"]:
            put_before(real(b["shard"]), b["holds"], r.shards[b["shard"]].root)
        got = r.create(case["path"], data)
        self.assertEqual((got.kind, got.index), (case["expect"]["kind"], case["expect"]["index"]))
        self.assertEqual(got.real, real(got.index))
        after = {e["shard"]: e["holds"] for e in case["after"]}
        for i, shard in enumerate(r.shards):
            self.assertEqual(holds(real(i), data, ("before %s" % shard.root).encode()), after.get(i), "shard %d" % i)
        # Nothing else anywhere: no temporary name, no copy at another place (os.walk lists a link as a file).
        places = {real(i) for i, h in after.items() if h != "directory"}
        self.assertEqual(len(files_under(base)), len(places))


class Create(FileSystemCase):
    def test_a_new_path_is_created_at_home(self) -> None:
        r = self.router()
        got = r.create("data/analysis/new.json", b"x")
        home = r.resolve("data/analysis/new.json")
        self.assertEqual(got, Creation(CREATED, home.index, home.real))
        self.assertTrue(got.created())
        self.assertEqual((read(home.real), os.stat(home.real).st_nlink), (b"x", 1))
        self.assertEqual(files_under(self.base), [os.path.relpath(home.real, self.base)])

    def test_a_file_already_at_home_is_left_exactly_as_it_was(self) -> None:
        r = self.router()
        p = "data/analysis/kept.json"
        home = r.resolve(p)
        put(home.real, b"first")
        before = os.stat(home.real)
        got = r.create(p, b"second")
        self.assertEqual(got, Creation(ALREADY_THERE, home.index, home.real))
        self.assertFalse(got.created())
        after = os.stat(home.real)
        self.assertEqual((after.st_ino, after.st_mtime_ns, after.st_nlink), (before.st_ino, before.st_mtime_ns, 1))
        self.assertEqual(read(home.real), b"first")

    def test_a_copy_only_in_another_shard_is_already_there(self) -> None:
        r = self.router()
        p, home, elsewhere = self.misplaced(r, 1, 2, "e")
        put(elsewhere, b"elsewhere")
        self.assertEqual(r.create(p, b"x"), Creation(ALREADY_THERE, 2, elsewhere))
        self.assertFalse(os.path.lexists(home))
        self.assertEqual(read(elsewhere), b"elsewhere")

    def test_bad_paths_are_refused_before_touching_the_file_system(self) -> None:
        r = self.router()
        with self.assertRaises(PathError):
            r.create("../x", b"x")
        with self.assertRaises(InsideAnotherShard):
            r.create("shards/use1-az4/x", b"x")
        self.assertEqual(files_under(self.base), [])

    def test_the_names_are_exported(self) -> None:
        self.assertEqual((efs_router.CREATED, efs_router.ALREADY_THERE), ("created", "already-there"))


def _race_creator(base: str, p: str, writer: int, barrier: Any, results: Any) -> None:
    r = Router(make_list(THREE), Layout.single_mount(base))
    data = ("writer %d " % writer).encode() * 200
    barrier.wait()
    got = r.create(p, data)
    results.put((data, tuple(got)))


class Racing(FileSystemCase):
    ROUNDS = 30

    def run_race(self, n: int, spawn: Any) -> None:
        r = self.router()
        for round_ in range(self.ROUNDS):
            p = "data/analysis/race-%d.json" % round_
            home = r.resolve(p)
            out: List[Tuple[bytes, Tuple[str, int, str]]] = spawn(p, n)
            self.assertEqual(len(out), n)
            winners = [data for data, got in out if got[0] == CREATED]
            self.assertEqual(len(winners), 1, "round %d" % round_)
            self.assertEqual({got[1:] for _, got in out}, {(home.index, home.real)})
            self.assertEqual(read(home.real), winners[0])
        # One file per path, at home; not one temporary name.
        self.assertEqual(len(files_under(self.base)), self.ROUNDS)

    def test_racing_threads(self) -> None:
        def spawn(p: str, n: int) -> List[Tuple[bytes, Tuple[str, int, str]]]:
            barrier = threading.Barrier(n)
            results: "queue.Queue[Tuple[bytes, Tuple[str, int, str]]]" = queue.Queue()
            ts = [threading.Thread(target=_race_creator, args=(self.base, p, w, barrier, results)) for w in range(n)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()
            return [results.get_nowait() for _ in ts]

        self.run_race(8, spawn)

    def test_racing_processes(self) -> None:
        ctx: Any = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")

        def spawn(p: str, n: int) -> List[Tuple[bytes, Tuple[str, int, str]]]:
            barrier, results = ctx.Barrier(n), ctx.Queue()
            procs = [ctx.Process(target=_race_creator, args=(self.base, p, w, barrier, results)) for w in range(n)]
            for proc in procs:
                proc.start()
            out = [results.get(timeout=60) for _ in procs]
            for proc in procs:
                proc.join(60)
            return out

        self.run_race(4, spawn)


if __name__ == "__main__":
    unittest.main()
