"""What the function's own reads of a directory cost on a real NFSv4.1 client: NFS calls and bytes on the wire
of one count of a shard directory of N files, as each reconcile run makes (and the rebalance's walk reads the
same listing), counted from /proc/self/mountstats.

Run on the NFS tier (``make bench-nfs-reads``, which builds router/examples/count_bench.rs, named by
EFS_NFS_COUNT_BIN): for each N of BENCH_READ_FILES (default 100000,1000000) it writes N empty files on the
server's side (as an app would have, named as the seed's app names them; BENCH_READ_AS=links: hard links of one file), drops the client's caches (the next
run, 5 minutes later, finds its cached listing expired: acdirmax is 60 s), and counts the directory through the
function's mount with the function's code. Prints one JSON line a size; nothing is asserted
(docs/benchmarks.md and docs/operations.md hold the figures).
"""

import json
import os
import subprocess
import sys
import time
from typing import Dict, Tuple

from mountstats import per_op


def delta(before: Dict[str, Tuple[int, int, int]], after: Dict[str, Tuple[int, int, int]]) -> Dict[str, list]:
    d = {}
    for k, v in after.items():
        b = before.get(k, (0, 0, 0))
        if v[0] != b[0]:
            d[k] = [v[i] - b[i] for i in range(3)]
    return d


def mount_point_of(path: str) -> str:
    """The mount point of the file system that holds ``path``."""
    path = os.path.realpath(path)
    while not os.path.ismount(path):
        path = os.path.dirname(path)
    return path


def main() -> None:
    mounts = os.environ["EFS_NFS_MOUNTS"].split(",")
    backing = os.environ["EFS_NFS_BACKING"]
    count_bin = os.environ["EFS_NFS_COUNT_BIN"]
    sizes = [int(n) for n in os.environ.get("BENCH_READ_FILES", "100000,1000000").split(",")]
    # BENCH_READ_AS=links: the names are hard links of one empty file, which the VM's memory holds
    # at 10 million where as many inodes do not fit; a listing carries the same fields for each.
    links = os.environ.get("BENCH_READ_AS", "files") == "links"
    mount = mounts[0]
    # tmpfs allows one inode per two pages of the VM's memory by default (about 500,000 at 4 GiB):
    # the export's file system takes as many as the files need.
    subprocess.run(["mount", "-o", "remount,nr_inodes=0", mount_point_of(backing)], check=True)
    for n in sizes:
        rel = "reads-%d/data/analysis" % n
        server_dir = os.path.join(backing, rel)
        os.makedirs(server_dir)
        started = time.monotonic()
        first = os.path.join(server_dir, "device-0-1700000000.json")
        os.close(os.open(first, os.O_CREAT | os.O_WRONLY, 0o644))
        for i in range(1, n):
            name = os.path.join(server_dir, "device-%d-1700000000.json" % i)
            if links:
                os.link(first, name)
            else:
                os.close(os.open(name, os.O_CREAT | os.O_WRONLY, 0o644))
        made = time.monotonic() - started
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3\n")
        before = per_op(mount)
        started = time.monotonic()
        out = subprocess.run([count_bin, os.path.join(mount, rel)], check=True, capture_output=True, text=True).stdout
        took = time.monotonic() - started
        calls = delta(before, per_op(mount))
        counted = int(out.split()[0])
        if counted != n:
            sys.exit("counted %d files of %d" % (counted, n))
        readdir = calls.get("READDIR", [0, 0, 0])
        print(json.dumps({
            "files": n,
            "as": "links" if links else "files",
            "calls": calls,
            "readdir_calls": readdir[0],
            "readdir_bytes_received": readdir[2],
            "readdir_bytes_sent": readdir[1],
            "bytes_received_per_file": round(sum(c[2] for c in calls.values()) / n, 2),
            "names_per_readdir": round(n / max(readdir[0], 1), 1),
            "count_seconds_under_tcg": round(took, 2),
            "seconds_to_make_the_files": round(made, 1),
        }), flush=True)
        subprocess.run(["rm", "-rf", os.path.join(backing, "reads-%d" % n)], check=True)


if __name__ == "__main__":
    main()
