"""What the data plane costs on a real NFSv4.1 client: NFS operations per call, counted from the mount's
/proc/self/mountstats, and moves per second against a plain sequential link+unlink mover.

Run on the NFS tier (``make bench-nfs-tier``, which passes ``--delay-ms`` and builds the Rust movers,
router/examples/nfs_moves.rs, named by EFS_NFS_MOVES_BIN, and the Rust client's operations,
router/examples/nfs_ops.rs, named by EFS_NFS_OPS_BIN): each actor through its own mount, as in the tests.
Prints two tables; nothing is asserted (docs/benchmarks.md holds the figures).

The client's operations (``exists`` and ``read_with_fallback`` hitting at home, ``exists`` of a path that is
nowhere, ``write`` of a new file, ``delete`` of a file at home, ``create`` of a new path and of a path already at
home, and a listing, ``listdir`` / ``list_dir``, of one directory of BENCH_LIST_NAMES names, default 10,000, each
in its home shard, so spread over them all), through the Python router and, when
EFS_NFS_OPS_BIN is set, the Rust one, at each shard count of BENCH_SHARDS (default 3; e.g. ``3,21,64``): a
list of 3 mount targets, their shards as directories of one file system (version 2 beyond 3 shards), all
seen through one mount, every shard's directory looked up through it first. Each figure is over BENCH_FILES
paths of its own, all homed in shard 1; files found at home were looked at once before, as a running task
has; a miss, a write and a create of a new path were not. The listing is of a directory of its own for each
client, written on the server: its first listing (the client has not seen the directory), then
BENCH_LIST_REPEATS - 1 more (default 3 in all), reported per listing. ``miss3`` is the miss on list version 3:
with nothing open, with one placement open (the one shard ``/``, which homes every path elsewhere), and with
nothing open but a ``scope`` (``data/analysis``) of a path outside it (``data/other``), which looks everywhere;
``delete3`` the delete of a file at home on the same three. BENCH_OPS, a comma list of exists, read, miss, write,
delete, create, list, miss3 and delete3 (default all; none: none), picks the operations. BENCH_MOVES=0 leaves out
the moves.
BENCH_REPLAY, a comma list of shard counts (0: plain paths, no router), replays the seed's workload: 16 writers
checking that a new file is absent, then writing it, BENCH_REPLAY_FILES in all (default 1,600).

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
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Dict, List, Tuple

import efs_router
from mountstats import per_op
from efs_router import Layout, MountTargetList, Router, Target, relocate

MOUNTS = os.environ["EFS_NFS_MOUNTS"].split(",")
BACKING = os.environ["EFS_NFS_BACKING"]
ROOTS = ["/", "/shards/use1-az4", "/shards/use1-az1"]
AZ_IDS = ["use1-az2", "use1-az4", "use1-az1"]
OPS = ("exists, home hit", "read_with_fallback, home hit", "exists, miss", "write, new file", "delete, at home",
       "create, new path", "create, at home", "listing, first", "listing, again", "exists, miss, v3 none open",
       "exists, miss, v3 one open", "exists, miss, v3 outside scope", "delete, v3 none open", "delete, v3 one open",
       "delete, v3 outside scope")
OP_KEYS = ("exists", "read", "miss", "write", "delete", "create", "list", "miss3", "delete3")
# The forms of list version 3 measured (``miss3``, ``delete3``), each with the directory its paths are in.
V3_FORMS = (("none open", "data/analysis"), ("one open", "data/analysis"), ("outside scope", "data/other"))
# Operations that are bookkeeping of the session, not of the call.
NOT_CALLS = {"SEQUENCE", "NULL", "RENEW", "GET_LEASE_TIME", "EXCHANGE_ID", "CREATE_SESSION", "DESTROY_SESSION",
             "RECLAIM_COMPLETE", "TEST_STATEID", "FREE_STATEID", "SECINFO_NO_NAME", "FSINFO", "SERVER_CAPS",
             "PATHCONF", "LOOKUP_ROOT", "STATFS"}


def measured(mount: str, fn: Callable[[], object]) -> Dict[str, Tuple[int, int, int]]:
    """What ``fn`` sent through ``mount``: each NFS operation's calls, bytes sent and bytes received."""
    before = per_op(mount)
    fn()
    out: Dict[str, Tuple[int, int, int]] = {}
    for k, now in per_op(mount).items():
        was = before.get(k, (0, 0, 0))
        if now[0] > was[0] and k not in NOT_CALLS:
            out[k] = (now[0] - was[0], now[1] - was[1], now[2] - was[2])
    return out


def counted(mount: str, fn: Callable[[], object]) -> Dict[str, int]:
    return calls(measured(mount, fn))


def calls(m: Dict[str, Tuple[int, int, int]]) -> Dict[str, int]:
    return {k: v[0] for k, v in m.items()}


def sizes(m: Dict[str, Tuple[int, int, int]], n: int) -> str:
    """Bytes each operation, n of them: in all, and each kind of call's mean (sent + received), which EFS meters at
    4 KiB at least."""
    sent, received = sum(v[1] for v in m.values()), sum(v[2] for v in m.values())
    each = ", ".join("%s %d" % (k, (v[1] + v[2]) // v[0]) for k, v in sorted(m.items()))
    return "%.0f B sent, %.0f B received; a call's mean: %s" % (sent / n, received / n, each)


def rust_mover(mount: str, mode: str, pairs: List[Tuple[str, str]],
               concurrency: int = 16) -> Tuple[Dict[str, Tuple[int, int, int]], float]:
    """Runs router/examples/nfs_moves.rs over ``pairs``: the NFS calls it sent through ``mount`` (``measured``), and
    moves per second (timed by the mover itself, not counting its start)."""
    listing = "/tmp/bench-pairs-%s" % mode
    with open(listing, "w") as f:
        f.writelines("%s\t%s\n" % p for p in pairs)
    result: Dict[str, object] = {}

    def run() -> None:
        out = subprocess.run([os.environ["EFS_NFS_MOVES_BIN"], mode, listing, str(concurrency)], check=True,
                             capture_output=True, text=True).stdout
        result.update(json.loads(out))

    c = measured(mount, run)
    if result["outcomes"] != {"moved": len(pairs)}:
        raise SystemExit("nfs_moves %s: %s" % (mode, result["outcomes"]))
    return c, len(pairs) / float(str(result["seconds"]))


def under_source_lock(c: Dict[str, int], n: int, private_dirs: bool) -> str:
    if private_dirs:
        calls = c.get("RENAME", 0) + c.get("CREATE", 0) + c.get("REMOVE", 0) - n
    else:
        calls = c.get("REMOVE", 0)
    return "%.2f under the source's lock" % (calls / n)


def shard_list(n: int) -> MountTargetList:
    """``n`` shards on 3 mount targets, as even as can be (the first targets get one more): for 3, the roots of
    ROOTS, one a target; beyond, each target's further shards at /shards/<az_id>.<k> (a version 2 list)."""
    per = [n // 3 + (1 if i < n % 3 else 0) for i in range(3)]
    ml = MountTargetList([Target("fsmt-%d" % i, "10.0.%d.4" % i, az_id=az, root=r, shards=k)
                          for i, (r, az, k) in enumerate(zip(ROOTS, AZ_IDS, per))], efs_router.RENDEZVOUS)
    ml.validate()
    assert ml.shard_count() == n
    return ml


def router(mount: str) -> Router:
    ml = MountTargetList([Target("fsmt-%d" % i, "10.0.%d.4" % i, root=r) for i, r in enumerate(ROOTS)],
                         efs_router.RENDEZVOUS)
    return Router(ml, Layout.single_mount(os.path.join(mount, "bench")))


def homed(r: Router, home: int, tag: str, n: int, prefix: str = "data/analysis") -> List[str]:
    out, i = [], 0
    while len(out) < n:
        p = "%s/device-%s%d-1700000000.json" % (prefix, tag, i)
        if r.resolve(p).index == home:
            out.append(p)
        i += 1
    return out


def summary(c: Dict[str, int], n: int) -> str:
    total = sum(c.values())
    parts = ", ".join("%s %.3g" % (k, v / n) for k, v in sorted(c.items()))
    return "%.1f round trips (%s)" % (total / n, parts)


def rust_ops(mount: str, ml: MountTargetList, base: str, op: str, paths: List[str],
             expect: str) -> Tuple[Dict[str, int], float]:
    """Runs router/examples/nfs_ops.rs: ``op`` of each of ``paths`` through the Rust router. The NFS calls it sent
    through ``mount`` and the seconds its operations took (timed by itself, not counting its start)."""
    with open("/tmp/bench-list.json", "w") as f:
        f.write(ml.to_json())
    with open("/tmp/bench-paths", "w") as f:
        f.writelines(p + "\n" for p in paths)
    result: Dict[str, object] = {}

    def run() -> None:
        out = subprocess.run([os.environ["EFS_NFS_OPS_BIN"], "/tmp/bench-list.json", base, op, "/tmp/bench-paths"],
                             check=True, capture_output=True, text=True).stdout
        result.update(json.loads(out))

    c = counted(mount, run)
    if result["outcomes"] != {expect: len(paths)}:
        raise SystemExit("nfs_ops %s: %s" % (op, result["outcomes"]))
    return c, float(str(result["seconds"]))


Row = Tuple[int, str, str, Dict[str, int], float, int]


def client_ops(mount: str, shards: int, n: int, which: List[str], names: int,
               repeats: int) -> List[Row]:
    """Each operation of OPS named in ``which`` (OP_KEYS) through ``mount`` at ``shards`` shards, ``n`` paths each
    (a listing: ``names`` names, listed ``repeats`` times), by the Python router and (EFS_NFS_OPS_BIN) the Rust
    one: (shards, client, operation, NFS calls, seconds, operations)."""
    top = "bench-ops-%d" % shards
    shutil.rmtree(os.path.join(BACKING, top), ignore_errors=True)
    ml = shard_list(shards)
    dirs = ("data/analysis", "data/other")
    for t in ml.shards():
        for d in dirs:
            os.makedirs(os.path.join(BACKING, top, t.root.lstrip("/"), d))
    base = os.path.join(mount, top)
    r = Router(ml, Layout.single_mount(base))
    for t in ml.shards():  # every shard's directory looked up once, as a running task's mount has
        for d in dirs:
            os.stat(os.path.join(base, t.root.lstrip("/"), d))
    home = 1

    def placed(tag: str, prefix: str = "data/analysis") -> List[str]:
        """New paths homed in shard ``home``, each a file there, written on the server (not through the mount)."""
        paths = homed(r, home, tag, n, prefix)
        for p in paths:
            with open(os.path.join(BACKING, top, r.shards[home].root.lstrip("/"), p), "w") as f:
                f.write("x")
        return paths

    def listed_dir(tag: str) -> str:
        """A new directory of ``names`` empty files, each in its home shard, written on the server; the shards'
        ``data`` directories above it were looked up before."""
        d = "data/listing-%s" % tag
        for t in ml.shards():
            os.makedirs(os.path.join(BACKING, top, t.root.lstrip("/"), d))
        for i in range(names):
            p = "%s/device-%05d-1700000000.json" % (d, i)
            open(os.path.join(BACKING, top, r.shards[r.resolve(p).index].root.lstrip("/"), p), "w").close()
        return d

    rows: List[Row] = []

    def timed(fn: Callable[[], object]) -> Tuple[Dict[str, int], float]:
        began = time.monotonic()
        c = counted(mount, fn)
        return c, time.monotonic() - began

    def python_op(what: str, fn: Callable[[], object]) -> None:
        c, secs = timed(fn)
        rows.append((shards, "Python", what, c, secs, n))

    if "exists" in which or "read" in which:
        hits = placed("hit")
        for p in hits:  # the names are looked up once, as a running task has
            r.exists(p)
        if "exists" in which:
            python_op(OPS[0], lambda: [r.exists(p) for p in hits])
        if "read" in which:
            python_op(OPS[1], lambda: [r.read_with_fallback(p) for p in hits])
        for p in hits:
            assert r.exists(p), p
    if "miss" in which:
        misses = homed(r, home, "miss", n)
        python_op(OPS[2], lambda: [r.exists(p) for p in misses])
        for p in misses:
            assert not r.exists(p), p
    # List version 3 (where a miss, and a delete, look: router/src/placement.rs): nothing open (the steady
    # state); one placement open, the one shard `/`, which homes every path outside shard ``home``; and nothing
    # open with a scope, for a path outside it (it looks everywhere).
    slash = efs_router.Placement(efs_router.RENDEZVOUS, (efs_router.Placed("/"),))
    v3 = {"none open": MountTargetList(ml.mount_targets, ml.strategy, open=[]),
          "one open": MountTargetList(ml.mount_targets, ml.strategy, open=[slash]),
          "outside scope": MountTargetList(ml.mount_targets, ml.strategy, open=[], scope="data/analysis")}
    for form in v3.values():
        form.validate()
    if "miss3" in which:
        for form, prefix in V3_FORMS:
            r3 = Router(v3[form], Layout.single_mount(base))
            misses = homed(r3, home, "miss3%s" % form[:3], n, prefix)
            python_op("exists, miss, v3 %s" % form, lambda: [r3.exists(p) for p in misses])
            for p in misses:
                assert not r3.exists(p), p
    if "delete3" in which:
        for form, prefix in V3_FORMS:
            r3 = Router(v3[form], Layout.single_mount(base))
            gone = placed("del3%s" % form[:3], prefix)
            for p in gone:  # looked at once, as a hit is
                assert r3.exists(p), p
            python_op("delete, v3 %s" % form, lambda: [r3.delete(p) for p in gone])
            for p in gone:
                assert not r3.exists(p), p
    if "write" in which:
        news = homed(r, home, "new", n)
        python_op(OPS[3], lambda: [r.write(p, b"x") for p in news])
        for p in news:
            assert r.exists(p), p
    if "delete" in which:
        gone = placed("del")
        for p in gone:
            r.exists(p)
        python_op(OPS[4], lambda: [r.delete(p) for p in gone])
        for p in gone:
            assert not r.exists(p), p
    if "create" in which:
        def python_create(what: str, paths: List[str], kind: str) -> None:
            got: List[str] = []
            python_op(what, lambda: got.extend(r.create(p, b"x").kind for p in paths))
            if got != [kind] * len(paths):
                raise SystemExit("create: %s" % sorted(set(got)))

        created = homed(r, home, "cnew", n)
        python_create(OPS[5], created, efs_router.CREATED)
        for p in created:
            assert r.exists(p), p
        there = placed("chome")
        for p in there:  # looked at once before, as a hit is
            r.exists(p)
        python_create(OPS[6], there, efs_router.ALREADY_THERE)
    if "list" in which:
        d = listed_dir("py")
        got: List[int] = []
        for k in range(repeats):
            c, secs = timed(lambda: got.append(len(r.listdir(d))))
            if got[-1] != names:
                raise SystemExit("listdir %s: %d names, not %d" % (d, got[-1], names))
            rows.append((shards, "Python", OPS[7 if k == 0 else 8], c, secs, 1))

    if os.environ.get("EFS_NFS_OPS_BIN"):
        def rust_op(what: str, op: str, paths: List[str], expect: str) -> None:
            c, secs = rust_ops(mount, ml, base, op, paths, expect)
            rows.append((shards, "Rust", what, c, secs, len(paths)))

        if "exists" in which or "read" in which:
            hits = placed("rhit")
            rust_ops(mount, ml, base, "exists", hits, "found")  # looked up once
            if "exists" in which:
                rust_op(OPS[0], "exists", hits, "found")
            if "read" in which:
                rust_op(OPS[1], "read", hits, "home")
        if "miss" in which:
            rust_op(OPS[2], "exists", homed(r, home, "rmiss", n), "missing")
        if "miss3" in which:
            for form, prefix in V3_FORMS:
                c, secs = rust_ops(mount, v3[form], base, "exists", homed(r, home, "rmiss3%s" % form[:3], n, prefix),
                                   "missing")
                rows.append((shards, "Rust", "exists, miss, v3 %s" % form, c, secs, n))
        if "delete3" in which:
            for form, prefix in V3_FORMS:
                gone = placed("rdel3%s" % form[:3], prefix)
                rust_ops(mount, v3[form], base, "exists", gone, "found")  # looked at once
                rounds = 1 if form == "none open" else 3
                c, secs = rust_ops(mount, v3[form], base, "delete", gone, "deleted, %d rounds" % rounds)
                rows.append((shards, "Rust", "delete, v3 %s" % form, c, secs, n))
        if "write" in which:
            rust_op(OPS[3], "write", homed(r, home, "rnew", n), "written")
        if "delete" in which:
            gone = placed("rdel")
            rust_ops(mount, ml, base, "exists", gone, "found")
            rust_op(OPS[4], "delete", gone, "deleted, 3 rounds")
        if "create" in which:
            created = homed(r, home, "rcnew", n)
            rust_op(OPS[5], "create", created, "created")
            rust_ops(mount, ml, base, "exists", created, "found")
            there = placed("rchome")
            rust_ops(mount, ml, base, "exists", there, "found")
            rust_op(OPS[6], "create", there, "already-there")
        if "list" in which:
            d = listed_dir("rs")
            for k in range(repeats):
                c, secs = rust_ops(mount, ml, base, "list", [d], "%d names" % names)
                rows.append((shards, "Rust", OPS[7 if k == 0 else 8], c, secs, 1))
    return rows


WRITERS = 16


def replay(mount: str, shards: int, files: int) -> Tuple[Dict[str, int], float]:
    """The seed's workload: WRITERS threads, each checking that a new device file is absent and then writing it,
    ``files`` in all, through the Python router on a version 3 list with nothing open at ``shards`` shards (0: the
    app on plain paths, ``os.path.exists`` then ``open``, as before the router). The NFS calls and the seconds."""
    top = "bench-replay-%d" % shards
    shutil.rmtree(os.path.join(BACKING, top), ignore_errors=True)
    if shards <= 1:
        ml = MountTargetList([Target("fsmt-0", "10.0.0.4", root="/")], efs_router.RENDEZVOUS, open=[])
    else:
        ml = shard_list(shards)
        ml = MountTargetList(ml.mount_targets, ml.strategy, open=[])
    ml.validate()
    for t in ml.shards():
        os.makedirs(os.path.join(BACKING, top, t.root.lstrip("/"), "data/analysis"))
    base = os.path.join(mount, top)
    r = Router(ml, Layout.single_mount(base))
    for t in ml.shards():  # looked up once, as a running task has
        os.stat(os.path.join(base, t.root.lstrip("/"), "data/analysis"))
    data = b'{"reading": 42}'

    def path(w: int, i: int) -> str:
        return "data/analysis/device-%02d-%06d-1700000000.json" % (w, i)

    def one(w: int) -> None:
        for i in range(files // WRITERS):
            p = path(w, i)
            if shards == 0:
                real = os.path.join(base, p)
                if not os.path.exists(real):
                    with open(real, "wb") as f:
                        f.write(data)
            elif not r.exists(p):
                r.write(p, data)

    def run() -> None:
        with ThreadPoolExecutor(WRITERS) as pool:
            list(pool.map(one, range(WRITERS)))

    began = time.monotonic()
    c = counted(mount, run)
    took = time.monotonic() - began
    # Every file written is found where an app looks: a router's read, or the plain path.
    lost = [path(w, i) for w in range(WRITERS) for i in range(files // WRITERS)
            if not (r.exists(path(w, i)) if shards else os.path.exists(os.path.join(base, path(w, i))))]
    if lost:
        raise SystemExit("replay at %d shards: %d of %d files not found, e.g. %s" % (shards, len(lost), files, lost[0]))
    return c, took


def main() -> None:
    delay = os.environ.get("NFS_DELAY_MS", "0")
    fn, task = MOUNTS[0], MOUNTS[1]
    n = int(os.environ.get("BENCH_FILES", "200"))

    # The client's operations, through a task's mount.
    print("NFS tier, netem delay %s ms on lo, %d files each: a client's operations, NFS calls and time per "
          "operation" % (delay, n))
    which = [w for w in os.environ.get("BENCH_OPS", ",".join(OP_KEYS)).split(",") if w not in ("", "none")]
    unknown = set(which) - set(OP_KEYS)
    if unknown:
        raise SystemExit("BENCH_OPS: unknown %s (of %s)" % (", ".join(sorted(unknown)), ", ".join(OP_KEYS)))
    names = int(os.environ.get("BENCH_LIST_NAMES", "10000"))
    repeats = int(os.environ.get("BENCH_LIST_REPEATS", "3"))
    if "list" in which:
        print("  a listing: one directory of %d names over the shards, listed %d times, per listing"
              % (names, repeats))
    for shards in (int(k) for k in os.environ.get("BENCH_SHARDS", "3").split(",") if which):
        for shards_, client, what, c, secs, count in client_ops(task, shards, n, which, names, repeats):
            print("  %2d shards  %-6s  %-29s %9.2f ms  %s"
                  % (shards_, client, what, 1000 * secs / count, summary(c, count)))
            sys.stdout.flush()
    if os.environ.get("BENCH_REPLAY"):
        files = int(os.environ.get("BENCH_REPLAY_FILES", "1600"))
        print("The seed's workload: %d writers, check then write, %d new files; 0 shards: plain paths, no router"
              % (WRITERS, files))
        for shards in (int(k) for k in os.environ["BENCH_REPLAY"].split(",")):
            c, secs = replay(task, shards, files)
            meta = sum(v for k, v in c.items() if k not in ("READ", "WRITE", "COMMIT"))
            print("  %2d shards  %7.0f files a second  %5.2f metadata calls a file  (%s)"
                  % (shards, files / secs, meta / files, summary(c, files)))
            sys.stdout.flush()
    if os.environ.get("BENCH_MOVES", "1") == "0":
        return

    shutil.rmtree(os.path.join(BACKING, "bench"), ignore_errors=True)
    for r in ROOTS:
        os.makedirs(os.path.join(BACKING, "bench", r.lstrip("/"), "data/analysis"))
    rf = router(fn)
    rows: List[Tuple[str, str]] = []

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
    m, many_rate = rust_mover(fn, "many", misplaced("many"), 16)
    c = calls(m)
    rows.append(("relocate_many, Rust (16 at a time)", "%s; %s; %.0f moves/s"
                 % (summary(c, n), under_source_lock(c, n, True), many_rate)))
    # What a drain's or a rebalance's moves send and receive, which EFS meters (operations-reference.md's costs).
    rows.append(("relocate_many, Rust: bytes a move", sizes(m, n)))
    m, one_rate = rust_mover(fn, "one", misplaced("one"))
    c = calls(m)
    rows.append(("relocate, Rust (one at a time)", "%s; %s; %.0f moves/s"
                 % (summary(c, n), under_source_lock(c, n, True), one_rate)))
    m, rust_plain_rate = rust_mover(fn, "plain", misplaced("rplain"))
    c = calls(m)
    rows.append(("plain link + unlink, Rust (one at a time)", "%s; %s; %.0f moves/s"
                 % (summary(c, n), under_source_lock(c, n, False), rust_plain_rate)))
    rows.append(("relocate_many / plain, Rust", "%.2f x" % (many_rate / rust_plain_rate)))

    print("NFS tier, netem delay %s ms on lo, %d files each: moves, 3 shards" % (delay, n))
    for what, figure in rows:
        print("  %-44s %s" % (what, figure))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
