"""Tests of efs_router (standard library unittest), run against the installed package
(``make python-test`` installs it into a virtual environment and runs these from outside the
repository). The routing vectors are ``tests/vectors/routing.json`` of the repository, found from
this file's place or named by the environment variable ``EFS_ROUTER_VECTORS``.
"""

import contextlib
import dataclasses
import errno
import hashlib
import json
import multiprocessing
import os
import queue
import random
import subprocess
import sys
import tempfile
import threading
import unittest
from typing import Any, Callable, ClassVar, Dict, Iterator, List, Optional, Sequence, Sized, Tuple
from unittest import mock

import efs_router
from efs_router import (
    DROPPED_OLDER,
    HOME,
    MOVED,
    REPLACED_OLDER,
    SOURCE_GONE,
    InsideAnotherShard,
    Layout,
    ListError,
    MountTargetList,
    NotARegularFile,
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
LIST_VECTORS = os.path.join(os.path.dirname(VECTORS), "lists.json")
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


class ListVectors(unittest.TestCase):
    v: ClassVar[Dict[str, Any]]

    @classmethod
    def setUpClass(cls) -> None:
        with open(LIST_VECTORS, encoding="utf-8") as f:
            cls.v = json.load(f)

    def test_valid(self) -> None:
        self.assertGreaterEqual(len(self.v["valid"]), 10)
        for case in self.v["valid"]:
            with self.subTest(case=case["name"]):
                ml = MountTargetList.from_json(case["json"])
                shards = ml.shards()
                self.assertEqual(len(shards), ml.shard_count())
                self.assertEqual([t.root for t in shards], case["roots"])
                self.assertEqual([t.draining for t in shards], case.get("draining", [False] * len(shards)))
                self.assertEqual(ml.strategy, case["strategy"])
                if "to_json" in case:
                    self.assertEqual(ml.to_json(), case["to_json"])
                self.assertEqual(MountTargetList.from_json(ml.to_json()), ml)  # what is published reads back

    def test_invalid(self) -> None:
        self.assertGreaterEqual(len(self.v["invalid"]), 70)
        for case in self.v["invalid"]:
            with self.subTest(case=case["name"]):
                with self.assertRaises(ListError) as cm:
                    MountTargetList.from_json(case["json"])
                self.assertEqual(cm.exception.kind, case["error"], str(cm.exception))
                for m in case["mentions"]:
                    self.assertIn(m, str(cm.exception))


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


V2 = ('{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4","az":"us-east-1a","az_id":"use1-az1","subnet_id":"subnet-1",'
      '"root":"/","shards":3},{"id":"fsmt-b","ip":"10.0.2.7","az":"us-east-1b","az_id":"use1-az2",'
      '"subnet_id":"subnet-2","root":"/shards/use1-az2","shards":4,"draining_shards":1}],"strategy":"rendezvous",'
      '"version":2}')


def v2(*entries: str) -> str:
    """A version 2 document of these entries (each a JSON object's contents)."""
    return '{"mount_targets":[%s],"strategy":"rendezvous","version":2}' % ",".join("{%s}" % e for e in entries)


class Version2(unittest.TestCase):
    def refused(self, text: str) -> ListError:
        with self.assertRaises(ListError) as cm:
            MountTargetList.from_json(text)
        return cm.exception

    def test_a_router_refuses_a_list_built_in_code_that_breaks_a_rule(self) -> None:
        ml = MountTargetList.from_json(V2)
        huge = dataclasses.replace(ml.mount_targets[0], shards=5000)
        with self.assertRaises(ListError) as cm:
            Router(MountTargetList([huge], ml.strategy), Layout.single_mount("/mnt/efs"))
        self.assertEqual(cm.exception.kind, "bad-shards")

    def test_a_root_repeated_within_one_entry_is_named_once(self) -> None:
        e = self.refused('{"mount_targets":[{"id":"fsmt-a","ip":"1","az_id":"z","root":"/shards/z.1","shards":2}],'
                         '"strategy":"rendezvous","version":2}')
        self.assertEqual(e.kind, "duplicate-root")
        self.assertIn("fsmt-a has root /shards/z.1 twice", str(e))

    def test_round_trips(self) -> None:
        ml = MountTargetList.from_json(V2)
        self.assertTrue(ml.needs_version_2())
        self.assertEqual((len(ml.mount_targets), ml.shard_count()), (2, 7))
        self.assertEqual(ml.to_json(), V2)
        self.assertEqual(MountTargetList.from_json(ml.to_json()), ml)

    def test_one_shard_per_target_is_written_in_the_current_form(self) -> None:
        current = ('{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4","az_id":"use1-az1","root":"/"},{"id":"fsmt-b",'
                   '"ip":"10.0.2.7","az_id":"use1-az2","root":"/shards/use1-az2","draining":true}],'
                   '"strategy":"rendezvous"}')
        for text in (current, current.replace('"rendezvous"}', '"rendezvous","version":2}'),
                     current.replace('"rendezvous"}', '"rendezvous","version":1}'),
                     current.replace('"root":"/",', '"root":"/","shards":1,"draining_shards":0,')):
            with self.subTest(text=text):
                ml = MountTargetList.from_json(text)
                self.assertFalse(ml.needs_version_2())
                self.assertEqual(ml.to_json(), current)
                self.assertEqual(ml.shards(), ml.mount_targets)
        ml = MountTargetList.from_json(current)
        ml.mount_targets[1] = dataclasses.replace(ml.mount_targets[1], shards=2)
        self.assertTrue(ml.to_json().endswith('"shards":2}],"strategy":"rendezvous","version":2}'))
        ml.mount_targets[1] = dataclasses.replace(ml.mount_targets[1], shards=1)
        ml.mount_targets[0] = dataclasses.replace(ml.mount_targets[0], draining_shards=1)
        self.assertTrue(ml.needs_version_2())

    def test_shards_expand_in_list_order_with_their_roots_and_draining(self) -> None:
        ml = MountTargetList.from_json(V2)
        shards = ml.shards()
        self.assertEqual([(s.id, s.root, s.draining) for s in shards], [
            ("fsmt-a", "/", False), ("fsmt-a", "/shards/use1-az1.1", False), ("fsmt-a", "/shards/use1-az1.2", False),
            ("fsmt-b", "/shards/use1-az2", False), ("fsmt-b", "/shards/use1-az2.1", False),
            ("fsmt-b", "/shards/use1-az2.2", False), ("fsmt-b", "/shards/use1-az2.3", True)])
        for sh in shards:
            self.assertEqual((sh.shards, sh.draining_shards), (1, 0))
            t = next(t for t in ml.mount_targets if t.id == sh.id)
            self.assertEqual((sh.ip, sh.az, sh.az_id, sh.subnet_id), (t.ip, t.az, t.az_id, t.subnet_id))
        b = ml.mount_targets[1]
        self.assertEqual(b.shard_roots(), ["/shards/use1-az2", "/shards/use1-az2.1", "/shards/use1-az2.2",
                                           "/shards/use1-az2.3"])
        self.assertEqual([b.shard_draining(k) for k in range(4)], [False, False, False, True])
        ml.mount_targets[1] = dataclasses.replace(b, draining=True)
        self.assertEqual([s.draining for s in ml.shards()], [False] * 3 + [True] * 4)
        self.assertEqual(efs_router.extra_root("use1-az9", 12), "/shards/use1-az9.12")

    def test_version_must_be_1_or_2_and_shards_need_2(self) -> None:
        for version in ("0", "3", "4294967295"):
            e = self.refused('{"mount_targets":[],"strategy":"rendezvous","version":%s}' % version)
            self.assertEqual(e.kind, "bad-version")
            self.assertIn("version %s " % version, str(e))
        for version in ('"2"', "2.0", "-1", "-0", "true", "4294967296"):
            self.assertEqual(self.refused('{"mount_targets":[],"version":%s}' % version).kind, "not-a-list", version)
        MountTargetList.from_json('{"mount_targets":[],"version":null}')
        entry = '{"id":"fsmt-a","ip":"1","az_id":"use1-az1","root":"/",'
        for rest, version in (('"shards":2}', ""), ('"shards":2}', ',"version":1'),
                              ('"shards":3,"draining_shards":1}', ""), ('"shards":0}', ""),
                              ('"shards":1,"draining_shards":1}', ',"version":1')):
            text = ('{"mount_targets":[{"id":"fsmt-0","ip":"1","root":"/shards/x"},%s%s],"strategy":"rendezvous"%s}'
                    % (entry, rest, version))
            e = self.refused(text)
            self.assertEqual(e.kind, "shards-need-version", text)
            self.assertIn("fsmt-a", str(e))
            self.assertIn("version 2", str(e))

    def test_shard_counts_are_checked(self) -> None:
        cases = [
            (v2('"id":"a","ip":"1","az_id":"z","shards":0'), "a", "is 0"),
            (v2('"id":"a","ip":"1","az_id":"z","shards":2,"draining_shards":2'), "a", "fewer than"),
            (v2('"id":"a","ip":"1","az_id":"z","draining_shards":1'), "a", "fewer than"),
            (v2('"id":"a","ip":"1","shards":2'), "a", "az_id"),
            (v2('"id":"a","ip":"1","az_id":null,"shards":2'), "a", "az_id"),
            (v2('"id":"a","ip":"1","az_id":"","shards":2'), "a", "az_id"),
            ('{"mount_targets":[{"id":"a","ip":"1","az_id":"z","shards":2}],"strategy":"modulo-sha256","version":2}',
             "a", "rendezvous"),
            ('{"mount_targets":[{"id":"a","ip":"1","az_id":"z","shards":2}],"version":2}', "a", "rendezvous"),
            (v2('"id":"a","ip":"1","az_id":"x","shards":600', '"id":"b","ip":"1","az_id":"y","root":"/shards/y",'
                '"shards":401'), "b", "more than 1000 shards"),
            (v2('"id":"a","ip":"1","az_id":"x","shards":4294967295'), "a", "more than 1000 shards"),
        ]
        for text, target_id, why in cases:
            with self.subTest(text=text):
                e = self.refused(text)
                self.assertEqual(e.kind, "bad-shards", str(e))
                self.assertIn("mount target %s:" % target_id, str(e))
                self.assertIn(why, str(e))
        most = v2('"id":"a","ip":"1","az_id":"x","shards":600',
                  '"id":"b","ip":"1","az_id":"y","root":"/shards/y","shards":400')
        self.assertEqual(MountTargetList.from_json(most).shard_count(), efs_router.MAX_LIST_SHARDS)
        for n in ("-1", "-0", "1.0", "1e0", '"2"', "null", "true", "4294967296"):
            for key in ("shards", "draining_shards"):
                text = v2('"id":"a","ip":"1","az_id":"z","%s":%s' % (key, n))
                self.assertEqual(self.refused(text).kind, "not-a-list", text)

    def test_a_list_built_in_code_is_checked_by_the_same_rules(self) -> None:
        for t, why in ((Target("a", "1", az_id="z", shards=-1), '"shards" is -1'),
                       (Target("a", "1", az_id="z", shards=2, draining_shards=-1), "fewer than")):
            with self.subTest(t=t), self.assertRaises(ListError) as cm:
                MountTargetList([t]).validate()
            self.assertEqual(cm.exception.kind, "bad-shards")
            self.assertIn(why, str(cm.exception))

    def test_entries_are_checked_in_order_then_the_expanded_shards(self) -> None:
        self.assertEqual(self.refused(v2('"id":"a","ip":"1","az_id":"x","root":"relative"', '"id":"a","ip":"1"',
                                         '"id":"b","ip":"1","shards":0')).kind, "duplicate-id")
        self.assertEqual(self.refused(v2('"id":"a","ip":"1","az_id":"x","root":"relative"',
                                         '"id":"b","ip":"1","shards":0')).kind, "bad-shards")
        self.assertEqual(self.refused(v2('"id":"a","ip":"1","az_id":"x","shards":0', '"id":"","ip":"1"')).kind,
                         "bad-shards")

    def test_derived_roots_are_checked_like_roots(self) -> None:
        for entries, kind, mentions in [
            (['"id":"a","ip":"1","az_id":"z","root":"/","shards":2', '"id":"b","ip":"1","root":"/shards/z.1"'],
             "duplicate-root", ["a", "b", "/shards/z.1"]),
            (['"id":"a","ip":"1","az_id":"z","root":"/shards/z.1","shards":2'], "duplicate-root", ["/shards/z.1"]),
            (['"id":"a","ip":"1","az_id":"z","root":"/","shards":2',
              '"id":"b","ip":"1","az_id":"z","root":"/shards/z","shards":2'], "duplicate-root", ["/shards/z.1"]),
            (['"id":"a","ip":"1","az_id":"a//b","root":"/","shards":2'], "bad-root", ["/shards/a//b.1"]),
            (['"id":"a","ip":"1","az_id":"x/../y","root":"/","shards":2'], "bad-root", ["/shards/x/../y.1"]),
            (['"id":"a","ip":"1","az_id":"z/","root":"/","shards":2'], "reserved-root", ["/shards/z/.1"]),
            (['"id":"a","ip":"1","az_id":"..","root":"/","shards":2'], "reserved-root", ["/shards/...1"]),
            (['"id":"a","ip":"1","az_id":"z.1","root":"/","shards":1',
              '"id":"b","ip":"1","az_id":"y/q","root":"/shards/y","shards":2'], "nested-root",
             ["b", "/shards/y/q.1", "/shards/y"]),
        ]:
            with self.subTest(entries=entries):
                e = self.refused(v2(*entries))
                self.assertEqual(e.kind, kind, str(e))
                for m in mentions:
                    self.assertIn(m, str(e))
        ok = v2('"id":"a","ip":"1","az_id":"x","root":"/","shards":3',
                '"id":"b","ip":"1","az_id":"y","root":"/shards/y","shards":2')
        self.assertEqual(MountTargetList.from_json(ok).shard_count(), 5)


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
        self.assertEqual(names(self.d), ["b"])

    def test_an_older_source_is_dropped_and_a_tie_goes_home(self) -> None:
        for src_secs, dst_secs in ((10, 20), (30, 30)):
            with self.subTest(src=src_secs, dst=dst_secs):
                put_at(self.src, b"old", src_secs)
                put_at(self.dst, b"new", dst_secs)
                self.assertEqual(relocate(self.src, self.dst), DROPPED_OLDER)
                self.assertFalse(os.path.lexists(self.src))
                self.assertEqual(read(self.dst), b"new")
                self.assertEqual(names(self.d), ["b"])

    def test_a_newer_source_replaces_the_destination(self) -> None:
        put_at(self.src, b"new", 20)
        put_at(self.dst, b"old", 10)
        ino = os.stat(self.src).st_ino
        self.assertEqual(relocate(self.src, self.dst), REPLACED_OLDER)
        self.assertFalse(os.path.lexists(self.src))
        self.assertEqual(read(self.dst), b"new")
        st = os.stat(self.dst)
        self.assertEqual((st.st_ino, st.st_nlink), (ino, 1))
        self.assertEqual(names(self.d), ["b"])
        put_at(self.src, b"newer by a nanosecond", 0, 1)  # nanoseconds count
        put_at(self.dst, b"older", 0)
        self.assertEqual(relocate(self.src, self.dst), REPLACED_OLDER)
        self.assertEqual(read(self.dst), b"newer by a nanosecond")

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

    def test_one_file_however_spelled_is_refused_and_kept(self) -> None:
        os.mkdir(os.path.join(self.d, "sub"))
        os.symlink(".", os.path.join(self.d, "here"))
        put(self.src, b"only copy")
        for other in (self.src, self.d + "//a", os.path.join(self.d, ".", "a"), os.path.join(self.d, "sub", "..", "a"),
                      os.path.join(self.d, "here", "a"), os.path.join(self.d, "here", "sub", "..", "here", "a")):
            for src, dst in ((self.src, other), (other, self.src)):
                with self.subTest(src=src, dst=dst), self.assertRaises(OSError) as cm:
                    relocate(src, dst)
                self.assertEqual(cm.exception.errno, errno.EINVAL)
                self.assertEqual(read(self.src), b"only copy")
        cwd = os.getcwd()
        os.chdir(self.d)
        try:
            with self.assertRaises(OSError) as cm:
                relocate("./a", "a")
            self.assertEqual(cm.exception.errno, errno.EINVAL)
        finally:
            os.chdir(cwd)
        self.assertEqual(names(self.d), ["a", "here", "sub"])

    def test_the_routers_own_files_are_never_moved(self) -> None:
        tmp = os.path.join(self.d, ".efs-router-0123456789abcdef.tmp")
        put(tmp, b"a write in progress")
        put(self.src, b"x")
        for src, dst in ((tmp, self.dst), (self.src, os.path.join(self.d, ".efs-router-0123456789abcdef.moving"))):
            with self.subTest(src=src, dst=dst), self.assertRaises(OSError) as cm:
                relocate(src, dst)
            self.assertEqual(cm.exception.errno, errno.EINVAL)
        self.assertEqual(names(self.d), [".efs-router-0123456789abcdef.tmp", "a"])

    def test_links_fifos_and_directories_are_not_data(self) -> None:
        put_at(self.src, b"x", 10)
        link, fifo, directory = (os.path.join(self.d, n) for n in ("link", "fifo", "dir"))
        os.symlink("a", link)
        os.mkfifo(fifo)
        os.mkdir(directory)
        for src, dst, bad, what in ((link, "moved-link", link, "symbolic link"), (fifo, "moved-fifo", fifo, "FIFO"),
                                    (directory, "moved-dir", directory, "directory"),
                                    (self.src, directory, directory, "directory"),
                                    (self.src, link, link, "symbolic link")):
            with self.subTest(src=src, dst=dst), self.assertRaises(NotARegularFile) as cm:
                relocate(src, os.path.join(self.d, dst))
            self.assertEqual((cm.exception.path, cm.exception.what), (bad, what))
            self.assertIsInstance(cm.exception, OSError)
        self.assertEqual(names(self.d), ["a", "dir", "fifo", "link"])
        self.assertEqual(read(self.src), b"x")

    @contextlib.contextmanager
    def writer_renames_over_the_source(self, data: bytes, secs: int,
                                       also: Optional[Callable[[], None]] = None) -> Iterator[None]:
        """Just before the move first removes the source name (by renaming it to a private name, or by
        unlinking it, as a link-then-unlink move would), a writer renames a new version over the source (and
        ``also`` runs)."""
        real_rename, real_unlink = os.rename, os.unlink
        done = [False]

        def writer() -> None:
            done[0] = True
            tmp = os.path.join(self.d, "writer.tmp")
            put_at(tmp, data, secs)
            real_rename(tmp, self.src)
            if also is not None:
                also()

        def rename(a: Any, b: Any, *args: Any, **kw: Any) -> None:
            # The move takes the source away into a private name, or a private directory.
            private = any(efs_router.is_private_name(os.path.basename(x)) for x in (b, os.path.dirname(b)))
            if not done[0] and a == self.src and private:
                writer()
            real_rename(a, b, *args, **kw)

        def unlink(a: Any, *args: Any, **kw: Any) -> None:
            if not done[0] and a == self.src:
                writer()
            real_unlink(a, *args, **kw)

        with mock.patch.object(os, "rename", side_effect=rename), mock.patch.object(os, "unlink", side_effect=unlink):
            yield
        self.assertTrue(done[0], "the writer never ran")

    def test_a_version_written_over_the_source_during_the_move_is_kept(self) -> None:
        # Between link(src, dst) and the rename of src to its private name, a writer puts a newer version at
        # src: it must end at dst, never be unlinked.
        put_at(self.src, b"linked", 10)
        with self.writer_renames_over_the_source(b"written after", 20):
            self.assertEqual(relocate(self.src, self.dst), MOVED)
        self.assertEqual(read(self.dst), b"written after")
        self.assertEqual(names(self.d), ["b"])

        # The version written is older than what home holds by then (a write at home): dropped.
        os.unlink(self.dst)
        put_at(self.src, b"linked", 10)

        def home_write() -> None:
            home = os.path.join(self.d, "home.tmp")
            put_at(home, b"home write", 30)
            os.replace(home, self.dst)

        with self.writer_renames_over_the_source(b"stale", 15, home_write):
            self.assertEqual(relocate(self.src, self.dst), MOVED)
        self.assertEqual(read(self.dst), b"home write")
        self.assertEqual(names(self.d), ["b"])

        # Dropping an older source, a newer version written over it meanwhile replaces home.
        put_at(self.src, b"old", 10)
        put_at(self.dst, b"home", 20)
        with self.writer_renames_over_the_source(b"newest", 30):
            self.assertEqual(relocate(self.src, self.dst), REPLACED_OLDER)
        self.assertEqual(read(self.dst), b"newest")
        self.assertEqual(names(self.d), ["b"])

    def test_home_rewritten_during_a_replacement_is_looked_at_again(self) -> None:
        # The source is newer than home; while it is linked beside home, home is written again (newer still):
        # the last look before the rename sees it, and the source is dropped as older.
        put_at(self.src, b"newer than home", 20)
        put_at(self.dst, b"home", 10)
        real_link = os.link

        def link(a: Any, b: Any, **kw: Any) -> None:
            real_link(a, b, **kw)
            if efs_router.is_private_name(os.path.basename(b)):
                tmp = os.path.join(self.d, "home.tmp")
                put_at(tmp, b"home, newest", 30)
                os.replace(tmp, self.dst)

        with mock.patch.object(os, "link", side_effect=link):
            self.assertEqual(relocate(self.src, self.dst), DROPPED_OLDER)
        self.assertEqual(read(self.dst), b"home, newest")
        self.assertEqual(names(self.d), ["b"])

    def test_a_replacement_another_mover_already_placed_leaves_no_private_name(self) -> None:
        # rename(2) of two names of one file does nothing: if another mover put this very file at home
        # between the last look and the rename, the private name would stay behind.
        put_at(self.src, b"newer", 20)
        put_at(self.dst, b"older", 10)
        real_rename = os.rename

        def rename(a: Any, b: Any, *args: Any, **kw: Any) -> None:
            if efs_router.is_private_name(os.path.basename(a)) and b == self.dst:
                tmp = os.path.join(self.d, "other-mover")
                os.link(self.src, tmp)
                real_rename(tmp, self.dst)
            real_rename(a, b, *args, **kw)

        with mock.patch.object(os, "rename", side_effect=rename):
            self.assertEqual(relocate(self.src, self.dst), REPLACED_OLDER)
        self.assertEqual(names(self.d), ["b"])
        self.assertEqual((read(self.dst), os.stat(self.dst).st_nlink), (b"newer", 1))

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

    def test_without_hard_links_it_looks_then_renames(self) -> None:
        for code in (errno.EPERM, errno.EOPNOTSUPP):
            with self.subTest(errno=code), self.no_hard_links(code):
                put_at(self.src, b"x", 10)
                self.assertEqual(relocate(self.src, self.dst), MOVED)
                self.assertFalse(os.path.lexists(self.src))
                self.assertEqual(read(self.dst), b"x")
                put_at(self.src, b"older", 5)
                self.assertEqual(relocate(self.src, self.dst), DROPPED_OLDER)
                self.assertEqual(read(self.dst), b"x")
                put_at(self.src, b"newer", 20)
                self.assertEqual(relocate(self.src, self.dst), REPLACED_OLDER)
                self.assertEqual(read(self.dst), b"newer")
                self.assertEqual(relocate(self.src, self.dst), SOURCE_GONE)
                self.assertEqual(names(self.d), ["b"])
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
            older = rnd % 3 == 0  # every third round home holds an older copy, which the movers replace
            if older:
                set_mtime(src, 20)
                put_at(dst, b"older", 10)
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
            reporting = [o for o in outcomes if o != SOURCE_GONE]
            self.assertEqual(len(reporting), 1, outcomes)
            if not older:
                self.assertEqual(reporting, [MOVED])
            self.assertFalse(os.path.lexists(src))
            self.assertEqual(read(dst), str(rnd).encode())
            self.assertEqual(os.stat(dst).st_nlink, 1)
        self.assertEqual(sorted(os.listdir(self.d)), sorted("d%d" % i for i in range(50)))


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
        # Home is as new or newer (written after): the misplaced copy was the older one and is gone.
        self.assertEqual(read(home), b"new")
        self.assertFalse(os.path.lexists(elsewhere))
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
