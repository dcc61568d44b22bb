"""What the data plane costs on a real NFSv4.1 client: NFS operations per call, counted from the mount's
/proc/self/mountstats, and moves per second against a plain sequential link+unlink mover.

Run on the NFS tier (``make bench-nfs-tier``, which passes ``--delay-ms`` and builds the Rust movers,
router/examples/nfs_moves.rs, named by EFS_NFS_MOVES_BIN): each actor through its own mount, as in the tests.
Prints one table; nothing is asserted (docs/benchmarks.md holds the figures).

Calls under the source directory's lock (Linux holds a directory's lock through a call that changes it: LINK
locks the destination's, RENAME both directories, REMOVE and CREATE their own): for the plain mover its
REMOVEs; for the router's moves the RENAMEs, the CREATEs of private directories and their RMDIRs, which are
the REMOVEs beyond one per file (each file is unlinked inside a private directory, under that one's lock).
"""

import json
import os
import shutil
import subprocess
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


def rust_mover(mount: str, mode: str, pairs: List[Tuple[str, str]],
               concurrency: int = 16) -> Tuple[Dict[str, int], float]:
    """Runs router/examples/nfs_moves.rs over ``pairs``: the NFS calls it sent through ``mount``, and moves per second
    (timed by the mover itself, not counting its start)."""
    listing = "/tmp/bench-pairs-%s" % mode
    with open(listing, "w") as f:
        f.writelines("%s\t%s\n" % p for p in pairs)
    result: Dict[str, object] = {}

    def run() -> None:
        out = subprocess.run([os.environ["EFS_NFS_MOVES_BIN"], mode, listing, str(concurrency)], check=True,
                             capture_output=True, text=True).stdout
        result.update(json.loads(out))

    c = counted(mount, run)
    if result["outcomes"] != {"moved": len(pairs)}:
        raise SystemExit("nfs_moves %s: %s" % (mode, result["outcomes"]))
    return c, len(pairs) / float(str(result["seconds"]))


def under_source_lock(c: Dict[str, int], n: int, private_dirs: bool) -> str:
    if private_dirs:
        calls = c.get("RENAME", 0) + c.get("CREATE", 0) + c.get("REMOVE", 0) - n
    else:
        calls = c.get("REMOVE", 0)
    return "%.2f under the source's lock" % (calls / n)


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
    rows.append(("relocate, Python (one at a time)", "%s; %s; %.0f moves/s"
                 % (summary(c, n), under_source_lock(c, n, True), relocate_rate)))

    plain = misplaced("plain")

    def link_unlink() -> None:
        for s, d in plain:
            os.link(s, d)
            os.unlink(s)

    began = time.monotonic()
    c = counted(fn, link_unlink)
    plain_rate = n / (time.monotonic() - began)
    rows.append(("plain link + unlink, Python (one at a time)", "%s; %s; %.0f moves/s"
                 % (summary(c, n), under_source_lock(c, n, False), plain_rate)))
    rows.append(("relocate / plain, Python", "%.2f x" % (relocate_rate / plain_rate)))

    # The function's moves (Rust): relocate_many, MOVE_CONCURRENCY's default of 16 at a time, against the plain
    # mover in Rust, one at a time.
    c, many_rate = rust_mover(fn, "many", misplaced("many"), 16)
    rows.append(("relocate_many, Rust (16 at a time)", "%s; %s; %.0f moves/s"
                 % (summary(c, n), under_source_lock(c, n, True), many_rate)))
    c, one_rate = rust_mover(fn, "one", misplaced("one"))
    rows.append(("relocate, Rust (one at a time)", "%s; %s; %.0f moves/s"
                 % (summary(c, n), under_source_lock(c, n, True), one_rate)))
    c, rust_plain_rate = rust_mover(fn, "plain", misplaced("rplain"))
    rows.append(("plain link + unlink, Rust (one at a time)", "%s; %s; %.0f moves/s"
                 % (summary(c, n), under_source_lock(c, n, False), rust_plain_rate)))
    rows.append(("relocate_many / plain, Rust", "%.2f x" % (many_rate / rust_plain_rate)))

    print("NFS tier, netem delay %s ms on lo, %d files each:" % (delay, n))
    for what, figure in rows:
        print("  %-44s %s" % (what, figure))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
