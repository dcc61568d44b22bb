"""Routing (router/src/shard.rs): the routing vectors, modulo-sha256, rendezvous."""

import json
import os
import random
import subprocess
import sys
import unittest
from typing import Any, ClassVar, Dict, List

import efs_router
from efs_router import (
    MountTargetList,
    PathError,
    RouteError,
    Target,
    normalise,
    shard_index,
)
from helpers import THREE, VECTORS, make_list, original


class Vectors(unittest.TestCase):
    v: ClassVar[Dict[str, Any]]

    @classmethod
    def setUpClass(cls) -> None:
        with open(VECTORS, encoding="utf-8") as f:
            cls.v = json.load(f)

    def shards(self, name: str) -> List[Target]:
        """The list ``name`` of the file as its shards: what a case routes over."""
        return MountTargetList([Target.from_dict(t) for t in self.v["lists"][name]]).shards()

    def test_routing(self) -> None:
        self.assertGreaterEqual(len(self.v["routing"]), 300)
        with_root = 0
        for case in self.v["routing"]:
            shards = self.shards(case["list"])
            with self.subTest(case=case):
                self.assertEqual(shard_index(case["path"], shards, case["strategy"]), case["index"])
                # The same with the shards as JSON entries instead of Target objects.
                entries = [t.to_dict() for t in shards]
                self.assertEqual(shard_index(case["path"], entries, case["strategy"]), case["index"])
                if "root" in case:
                    self.assertEqual(shards[case["index"]].root, case["root"])
                    with_root += 1
                else:  # one shard per entry: the entries route as they are
                    targets = self.v["lists"][case["list"]]
                    self.assertEqual(shard_index(case["path"], targets, case["strategy"]), case["index"])
        self.assertGreaterEqual(with_root, 40)

    def test_the_file_is_what_its_generator_writes(self) -> None:
        generator = os.path.join(os.path.dirname(VECTORS), "generate_routing.py")
        out = subprocess.run([sys.executable, generator], check=True, stdout=subprocess.PIPE).stdout
        with open(VECTORS, "rb") as f:
            self.assertTrue(out == f.read(), "routing.json differs from what generate_routing.py writes: regenerate it")

    def test_routing_errors(self) -> None:
        for case in self.v["routing_errors"]:
            targets = self.shards(case["list"])
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
        version_2 = 0
        for name, targets in self.v["lists"].items():
            d: Dict[str, Any] = {"mount_targets": targets, "strategy": "rendezvous"}
            if any("shards" in t for t in targets):
                d["version"] = 2
                version_2 += 1
            self.assertEqual(len(MountTargetList.from_json(json.dumps(d)).mount_targets), len(targets), name)
        self.assertGreaterEqual(version_2, 3)


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


if __name__ == "__main__":
    unittest.main()
