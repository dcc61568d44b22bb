"""Router.create on a real NFSv4.1 client (router/tests/nfs.rs has the same in Rust): two clients, each through its
own mount, racing to create the same new paths, of which exactly one wins each; a create through a mount that cached
a miss of a path another client created since finds it. Runs only on the NFS tier (``make nfs-test``)."""

import os
import threading
import unittest
from typing import List, Tuple

from efs_router import ALREADY_THERE, Creation, Router
from test_nfs import ON_THE_TIER, backing, misplaced, missing, on_server, router, setup

Result = Tuple[bytes, Creation]


def _create_into(r: Router, path: str, who: int, barrier: threading.Barrier, results: List[object]) -> None:
    data = ("client %d " % who).encode() * 100
    barrier.wait()
    try:
        results[who] = (data, r.create(path, data))
    except BaseException as e:  # surfaced by the caller: Thread.join does not re-raise
        results[who] = e


def private_names_under(d: str) -> List[str]:
    return [os.path.join(dp, n) for dp, dirs, files in os.walk(d) for n in dirs + files if n.startswith(".efs-router-")]


class RacingCreates(unittest.TestCase):
    def test_two_mounts_racing_have_one_winner_per_path(self) -> None:
        t = "py_create_race"
        m = setup(t)
        a, b = router(m[1], t), router(m[2], t)

        path, home_a, _ = misplaced(a, 1, 0, "c")
        self.assertTrue(missing(home_a))
        self.assertTrue(b.create(path, b"b first").created())
        self.assertTrue(missing(home_a), ON_THE_TIER + ": the tier must show a stale negative lookup")
        home = a.resolve(path)
        self.assertEqual(a.create(path, b"a second"), Creation(ALREADY_THERE, home.index, home.real))
        self.assertEqual(on_server(home_a, m[1]), b"b first")

        wins = [0, 0]
        for i in range(30):
            p = "data/analysis/py-create-race-%d.json" % i
            barrier = threading.Barrier(2)
            results: List[object] = [None, None]
            threads = [threading.Thread(target=_create_into, args=(r, p, who, barrier, results))
                       for who, r in enumerate((a, b))]
            for th in threads:
                th.start()
            for th in threads:
                th.join()
            got: List[Result] = []
            for res in results:
                self.assertIsInstance(res, tuple, repr(results))
                assert isinstance(res, tuple)
                got.append(res)
            winners = [who for who, (_, c) in enumerate(got) if c.created()]
            self.assertEqual(len(winners), 1, "%s: %r" % (p, [c.kind for _, c in got]))
            wins[winners[0]] += 1
            home = a.resolve(p)
            self.assertEqual({c.index for _, c in got}, {home.index})
            self.assertEqual(on_server(home.real, m[1]), got[winners[0]][0])
        print("racing creates over 30 paths: client 0 won %d, client 1 won %d" % tuple(wins))
        self.assertTrue(all(w > 0 for w in wins), wins)  # each client won some and lost some
        self.assertEqual(private_names_under(os.path.join(backing(), t)), [])


if __name__ == "__main__":
    unittest.main()
