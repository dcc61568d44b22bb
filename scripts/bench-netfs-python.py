#!/usr/bin/env python3
"""Python's costs over a network file system, on the netfs FUSE test bed (netfs-sim): the naive
count (``os.listdir`` plus ``os.path.isfile`` on every entry, one stat each) and the Python
client's ``exists``, ``read_with_fallback`` and ``write``, each with the round trips it took by
kind. Prints Markdown tables.

    scripts/bench-netfs-python.py --sim PATH/TO/netfs-sim [--rtt-ms 1] [--files 150000]
                                  [--shards 3] [--reps 100] [--client-src DIR]

The client is imported from its source (``--client-src``, by default the package's directory
in this repository); nothing is installed. Files are created in the backing directory, not
through the mount. Exits 0 with a SKIP line when FUSE cannot be mounted here.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOOKKEEPING = {"ROUND_TRIPS", "MAX_IN_FLIGHT", "READDIR_REQUESTS", "OPENDIR", "RELEASEDIR", "RELEASE",
               "FLUSH", "FORGET", "BATCH_FORGET", "INTERRUPT", "IOCTL", "INIT"}


class Sim:
    """netfs-sim on a fresh backing directory, and its control socket."""

    def __init__(self, binary, rtt_ms):
        self.work = tempfile.mkdtemp(prefix="netfs-bench-")
        self.backing = os.path.join(self.work, "backing")
        self.mnt = os.path.join(self.work, "mnt")
        self.sock = os.path.join(self.work, "control.sock")
        os.mkdir(self.backing)
        os.mkdir(self.mnt)
        self.proc = subprocess.Popen(
            [binary, "--backing", self.backing, "--mount", self.mnt, "--rtt-ms", str(rtt_ms),
             "--control", self.sock],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline()
        if not line.startswith("mounted"):
            err = self.proc.stderr.read()
            self.proc.wait()
            shutil.rmtree(self.work, ignore_errors=True)
            print("SKIP bench-netfs-python: FUSE test bed unavailable: %s" % err.strip())
            sys.exit(0)

    def command(self, cmd):
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(self.sock)
            s.sendall((cmd + "\n").encode())
            return s.makefile().readline().strip()

    def reset(self):
        self.command("reset")

    def stats(self):
        return json.loads(self.command("stats"))

    def b(self, rel):
        return os.path.join(self.backing, rel)

    def m(self, rel):
        return os.path.join(self.mnt, rel)

    def close(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(timeout=60)
        shutil.rmtree(self.work, ignore_errors=True)


def per_op(stats, n):
    parts = []
    for k, v in sorted(stats.items()):
        if k in BOOKKEEPING or v == 0:
            continue
        x = v / n
        if x < 0.01:
            parts.append("%s %d in all" % (k, v))
            continue
        parts.append("%s %s" % (k, int(round(x)) if abs(x - round(x)) < 0.005 else "%.2f" % x))
    return ", ".join(parts) or "none"


def fmt(seconds):
    return "%.1f s" % seconds if seconds >= 10 else "%.1f ms" % (seconds * 1000)


def naive_count(args):
    sim = Sim(args.sim, args.rtt_ms)
    try:
        dirs = []
        for s in range(args.shards):
            rel = "shards/s%d/data/analysis" % s
            os.makedirs(sim.b(rel))
            n = args.files // args.shards + (1 if s < args.files % args.shards else 0)
            for i in range(n):
                open(os.path.join(sim.b(rel), "device-%05d-%d.json" % (i % 5000, 1700000000 + i)), "wb").close()
            os.listdir(sim.b(rel))  # the backing directory's cache
            dirs.append(sim.m(rel))
        sim.reset()
        t = time.monotonic()
        total = 0
        for d in dirs:
            total += sum(1 for name in os.listdir(d) if os.path.isfile(os.path.join(d, name)))
        took = time.monotonic() - t
        stats = sim.stats()
        assert total == args.files, total
        print("### Counting the naive way (Python: `os.listdir`, then `os.path.isfile` on every entry)\n")
        print("| files | shards | time | round trips | per file |")
        print("|---|---|---|---|---|")
        print("| %d | %d | %s | %s | %.3f ms |" % (args.files, args.shards, fmt(took), per_op(stats, 1),
                                                 took * 1000 / args.files))
        print()
        return took / args.files
    finally:
        sim.close()


def client(args):
    # The package as installed: it binds the Rust router, whose native module its source lacks.
    import efs_router  # noqa: E402

    print("### The Python client (`efs_router.Router`, installed: the Rust router bound), per operation\n")
    print("| shards | operation | time per op | round trips per op |")
    print("|---|---|---|---|")
    for shards in (3, 6):
        sim = Sim(args.sim, args.rtt_ms)
        try:
            roots = ["/"] + ["/shards/s%d" % i for i in range(1, shards)]
            text = json.dumps({"mount_targets": [{"id": "fsmt-%d" % i, "ip": "10.0.%d.4" % i, "root": r}
                                                 for i, r in enumerate(roots)], "strategy": "rendezvous"})
            router = efs_router.Router(efs_router.MountTargetList.from_json(text),
                                       efs_router.Layout.single_mount(sim.mnt))

            def dir_of(i):
                r = roots[i].lstrip("/")
                return os.path.join(r, "data/analysis") if r else "data/analysis"

            for i in range(shards):
                os.makedirs(sim.b(dir_of(i)), exist_ok=True)

            def name(tag, k):
                return "data/analysis/device-%s-%d.json" % (tag, k)

            for k in range(args.reps):
                p = name("hit", k)
                with open(os.path.join(sim.b(dir_of(router.resolve(p).index)), os.path.basename(p)), "wb") as f:
                    f.write(b"0123456789")
                for tag in ("away-e", "away-r"):
                    p = name(tag, k)
                    other = (router.resolve(p).index + 1) % shards
                    with open(os.path.join(sim.b(dir_of(other)), os.path.basename(p)), "wb") as f:
                        f.write(b"0123456789")
            for i in range(shards):
                os.stat(sim.m(dir_of(i)))

            def row(op, f):
                sim.reset()
                t = time.monotonic()
                for k in range(args.reps):
                    f(k)
                took = time.monotonic() - t
                print("| %d | %s | %s | %s |" % (shards, op, fmt(took / args.reps), per_op(sim.stats(), args.reps)))

            def exists(tag, want):
                def f(k):
                    assert router.exists(name(tag, k)) == want
                return f

            def read_miss(k):
                try:
                    router.read_with_fallback(name("none", k))
                except efs_router.NotFound:
                    return
                raise AssertionError("found")

            row("`exists`, home hit", exists("hit", True))
            row("`exists`, fallback hit", exists("away-e", True))
            row("`exists`, miss", exists("none", False))
            row("`read_with_fallback`, home hit", lambda k: router.read_with_fallback(name("hit", k)))
            row("`read_with_fallback`, fallback hit (moved home)",
                lambda k: router.read_with_fallback(name("away-r", k)))
            row("`read_with_fallback`, miss", read_miss)
            row("`write` (new file)", lambda k: router.write(name("new", k), b"0123456789"))
        finally:
            sim.close()
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sim", required=True, help="the netfs-sim binary")
    ap.add_argument("--rtt-ms", type=float, default=1.0)
    ap.add_argument("--files", type=int, default=150000)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--reps", type=int, default=100)
    ap.add_argument("sections", nargs="*", default=["naive", "client"])
    args = ap.parse_args()
    if "naive" in args.sections:
        per_file = naive_count(args)
        print("At that rate the naive count of 1,000,000 files in 6 shards would take about %s "
              "(one LOOKUP a file, every file; not run).\n" % fmt(per_file * 1_000_000))
    if "client" in args.sections:
        client(args)


if __name__ == "__main__":
    main()
