"""What the data plane costs on a real NFSv4.1 client: NFS operations per call, counted from the mount's
/proc/self/mountstats, and moves per second against a plain sequential link+unlink mover.

Run on the NFS tier (``make bench-nfs``, which passes ``--delay-ms``): each actor through its own mount, as in
the tests. Prints one table; nothing is asserted (docs/benchmarks.md holds the figures).
"""

import os
import shutil
import sys
import time
from typing import Callable, Dict, List, Tuple

import efs_router
from efs_router import Layout, MountTargetList, Router, Target, relocate

MOUNTS = os.environ["EFS_NFS_MOUNTS"].split(",")
BACKING = os.environ["EFS_NFS_BACKING"]
ROOTS = ["/", "/shards/use1-az4", "/shards/use1-az1"]
# Operations that are bookkeeping of the session, not of the call.
NOT_CALLS = {"SEQUENCE", "NULL", "RENEW", "GET_LEASE_TIME", "EXCHANGE_ID", "CREATE_SESSION", "DESTROY_SESSION",
             "RECLAIM_COMPLETE", "TEST_STATEID", "FREE_STATEID", "SECINFO_NO_NAME", "FSINFO", "SERVER_CAPS",
             "PATHCONF", "LOOKUP_ROOT", "STATFS"}


def ops(mount: str) -> Dict[str, int]:
    """The mount's count of each NFS operation sent so far."""
    out: Dict[str, int] = {}
    with open("/proc/self/mountstats") as f:
        mine, per_op = False, False
        for line in f:
            if line.startswith("device "):
                mine, per_op = (" mounted on %s " % mount) in line, False
            elif mine and line.strip() == "per-op statistics":
                per_op = True
            elif mine and per_op and ":" in line:
                name, rest = line.strip().split(":", 1)
                fields = rest.split()
                if fields and fields[0].isdigit():
                    out[name] = int(fields[0])
    return out


def counted(mount: str, fn: Callable[[], object]) -> Dict[str, int]:
    before = ops(mount)
    fn()
    after = ops(mount)
    return {k: after[k] - before.get(k, 0) for k in after if after[k] - before.get(k, 0) and k not in NOT_CALLS}


def router(mount: str) -> Router:
    ml = MountTargetList([Target("fsmt-%d" % i, "10.0.%d.4" % i, root=r) for i, r in enumerate(ROOTS)],
                         efs_router.RENDEZVOUS)
    return Router(ml, Layout.single_mount(os.path.join(mount, "bench")))


def homed(r: Router, home: int, tag: str, n: int) -> List[str]:
    out, i = [], 0
    while len(out) < n:
        p = "data/analysis/device-%s%d-1700000000.json" % (tag, i)
        if r.resolve(p).index == home:
            out.append(p)
        i += 1
    return out


def summary(c: Dict[str, int], n: int) -> str:
    total = sum(c.values())
    parts = ", ".join("%s %.2g" % (k, v / n) for k, v in sorted(c.items()))
    return "%.1f round trips (%s)" % (total / n, parts)


def main() -> None:
    delay = os.environ.get("NFS_DELAY_MS", "0")
    shutil.rmtree(os.path.join(BACKING, "bench"), ignore_errors=True)
    for r in ROOTS:
        os.makedirs(os.path.join(BACKING, "bench", r.lstrip("/"), "data/analysis"))
    fn, task = MOUNTS[0], MOUNTS[1]
    rt, rf = router(task), router(fn)
    rows: List[Tuple[str, str]] = []
    n = int(os.environ.get("BENCH_FILES", "200"))

    # Reads and checks through a task's mount: home hits, misses (no file anywhere).
    hits = homed(rt, 1, "hit", n)
    for p in hits:
        with open(os.path.join(BACKING, "bench", "shards/use1-az4", p), "w") as f:
            f.write("x")
    for p in hits:  # the names are looked up once, as a running task has
        rt.exists(p)
    rows.append(("exists, home hit", summary(counted(task, lambda: [rt.exists(p) for p in hits]), n)))
    rows.append(("read, home hit", summary(counted(task, lambda: [rt.read_with_fallback(p) for p in hits]), n)))
    misses = homed(rt, 1, "miss", n)
    rows.append(("exists, miss (3 shards)", summary(counted(task, lambda: [rt.exists(p) for p in misses]), n)))

    # Moves through the function's mount: misplaced files (home shard 1, found in shard 2), one at a time.
    def misplaced(tag: str) -> List[Tuple[str, str]]:
        pairs = []
        for p in homed(rf, 1, tag, n):
            src = rf.layout.real_path(rf.shards, 2, efs_router.normalise(p))
            with open(os.path.join(BACKING, "bench", "shards/use1-az1", p), "w") as f:
                f.write("x")
            pairs.append((src, rf.resolve(p).real))
        for src, _ in pairs:  # listed by a walk, as the function's rebalance does before it moves
            os.lstat(src)
        return pairs

    pairs = misplaced("mv")
    began = time.monotonic()
    c = counted(fn, lambda: [relocate(s, d) for s, d in pairs])
    relocate_rate = n / (time.monotonic() - began)
    rows.append(("relocate (one at a time)", summary(c, n) + ", %.0f moves/s" % relocate_rate))

    plain = misplaced("plain")

    def link_unlink() -> None:
        for s, d in plain:
            os.link(s, d)
            os.unlink(s)

    began = time.monotonic()
    c = counted(fn, link_unlink)
    plain_rate = n / (time.monotonic() - began)
    rows.append(("plain link + unlink (one at a time)", summary(c, n) + ", %.0f moves/s" % plain_rate))
    rows.append(("relocate / plain", "%.2f x" % (relocate_rate / plain_rate)))

    print("NFS tier, netem delay %s ms on lo, %d files each:" % (delay, n))
    for what, figure in rows:
        print("  %-38s %s" % (what, figure))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
