"""The published list (router/src/list.rs): the list vectors (tests/vectors/lists.json), the forms, versions 2, 3."""

import dataclasses
import json
import unittest
from typing import Any, ClassVar, Dict

import efs_router
from efs_router import (
    EVERYWHERE,
    Layout,
    ListError,
    MountTargetList,
    Placed,
    Placement,
    Router,
    Target,
)
from helpers import LIST_VECTORS, v2


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

    def test_version_must_be_1_2_or_3_and_shards_need_2(self) -> None:
        for version in ("0", "4", "4294967295"):
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


V3 = ('{"mount_targets":[{"id":"fsmt-a","ip":"10.0.1.4","az_id":"use1-az1","root":"/","shards":2},{"id":"fsmt-b",'
      '"ip":"10.0.2.7","az_id":"use1-az2","root":"/shards/use1-az2"}],"open":[{"strategy":"rendezvous","targets":'
      '[{"root":"/"}]}],"strategy":"rendezvous","version":3}')
ONE_PLACEMENT = '[{"strategy":"rendezvous","targets":[{"root":"/"}]}]'


class Version3(unittest.TestCase):
    """As router/src/list.rs's version_3_says_which_placements_are_open_and_names_only_its_shards."""

    def refused(self, text: str) -> ListError:
        with self.assertRaises(ListError) as cm:
            MountTargetList.from_json(text)
        return cm.exception

    def test_round_trips_and_says_which_placements_are_open(self) -> None:
        ml = MountTargetList.from_json(V3)
        self.assertEqual(ml.version(), 3)
        self.assertEqual(ml.open, [Placement("rendezvous", (Placed("/"),))])
        self.assertEqual(ml.to_json(), V3)
        everywhere = V3.replace(ONE_PLACEMENT, '"everywhere"')
        self.assertEqual(MountTargetList.from_json(everywhere).open, EVERYWHERE)
        self.assertEqual(MountTargetList.from_json(everywhere).to_json(), everywhere)
        none = V3.replace(ONE_PLACEMENT, "[]")
        self.assertEqual(MountTargetList.from_json(none).open, [])
        # A placement's az_id may be null (absent), as a list entry's; its defaults are not written.
        spelled = V3.replace('{"root":"/"}', '{"root":"/","az_id":null,"shards":1}')
        self.assertEqual(MountTargetList.from_json(spelled).to_json(), V3)

    def test_open_is_in_a_list_exactly_when_it_is_version_3(self) -> None:
        none = V3.replace(ONE_PLACEMENT, "[]")
        for text in (V3.replace(',"version":3', "").replace(',"shards":2', ""),
                     V3.replace(',"version":3', ',"version":2'), none.replace('"open":[],', ""),
                     V3.replace(ONE_PLACEMENT, "null")):
            with self.subTest(text=text):
                e = self.refused(text)
                self.assertEqual(e.kind, "open-needs-version", str(e))
                self.assertIn('"open"', str(e))

    def test_a_placement_names_the_lists_shards_only_with_the_counts_an_entry_has(self) -> None:
        for placed, root in (('{"root":"/shards/use1-az9"}', '"/shards/use1-az9"'),
                             ('{"root":"/","az_id":"use1-az1","shards":3}', '"/shards/use1-az1.2"'),
                             ('{"root":"/","shards":2}', '"/"'), ('{"root":"/","shards":0}', '"/"')):
            with self.subTest(placed=placed):
                e = self.refused(V3.replace('{"root":"/"}', placed))
                self.assertEqual(e.kind, "bad-open", str(e))
                self.assertIn("names shard root %s," % root, str(e))
        self.assertEqual(self.refused(V3.replace('[{"root":"/"}]', "[]")).kind, "bad-open")
        # The list's own shards are checked first.
        self.assertEqual(self.refused(V3.replace('"shards":2', '"shards":0')).kind, "bad-shards")

    def test_what_is_not_open_placements_is_not_a_list(self) -> None:
        for open_ in ('"Everywhere"', '"nowhere"', "{}", "3", '["everywhere"]', '[{"strategy":"rendezvous"}]',
                      '[{"targets":[{"root":"/"}]}]', '[{"strategy":"consistent","targets":[{"root":"/"}]}]',
                      '[{"strategy":"rendezvous","targets":[{"root":"/"}],"x":1}]',
                      '[{"strategy":"rendezvous","targets":[{"root":null}]}]',
                      '[{"strategy":"rendezvous","targets":[{"az_id":"use1-az1"}]}]',
                      '[{"strategy":"rendezvous","targets":[{"root":"/","shards":null}]}]',
                      '[{"strategy":"rendezvous","targets":[{"root":"/","shards":1.0}]}]',
                      '[{"strategy":"rendezvous","targets":[{"root":"/","shards":-1}]}]',
                      '[{"strategy":"rendezvous","targets":[{"root":"/","az_id":1}]}]',
                      '[{"strategy":"rendezvous","targets":[{"root":"/","ip":"10.0.1.4"}]}]',
                      '[{"strategy":"rendezvous","targets":{"root":"/"}}]'):
            with self.subTest(open=open_):
                self.assertEqual(self.refused(V3.replace(ONE_PLACEMENT, open_)).kind, "not-a-list")
        # A repeated key inside a placement, as anywhere in the document.
        e = self.refused(V3.replace('{"root":"/"}', '{"root":"/","root":"/"}'))
        self.assertEqual(e.kind, "duplicate-key")

    def test_a_list_built_in_code_is_version_3_exactly_when_it_says_what_is_open(self) -> None:
        ml = MountTargetList.from_json(V3)
        built = dataclasses.replace(ml, open=None)
        self.assertEqual(built.version(), 2)
        self.assertTrue(built.to_json().endswith('"strategy":"rendezvous","version":2}'))
        built.open = [Placement("modulo-sha256", (Placed("/shards/use1-az2"), Placed("/")))]
        self.assertEqual(built.version(), 3)
        self.assertIn('"open":[{"strategy":"modulo-sha256","targets":[{"root":"/shards/use1-az2"},{"root":"/"}]}],'
                      '"strategy":"rendezvous","version":3}', built.to_json())
        self.assertEqual(MountTargetList.from_json(built.to_json()), built)
        # And checked by the same rules when a router takes it.
        for open_, kind in (([Placement("rendezvous", (Placed("/shards/use1-az9"),))], "bad-open"),
                            ([Placement("rendezvous", (Placed("/", "use1-az1", -1),))], "bad-open"),
                            ([Placement("rendezvous", ())], "bad-open"), ("nowhere", "bad-open")):
            with self.subTest(open=open_), self.assertRaises(ListError) as cm:
                Router(dataclasses.replace(ml, open=open_), Layout.single_mount("/mnt/efs"))
            self.assertEqual(cm.exception.kind, kind)


if __name__ == "__main__":
    unittest.main()
