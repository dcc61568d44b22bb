#!/usr/bin/env python3
"""The course a soak's function took, read from its summary: what it created, drained, deleted
and published, and what no run may ever show (files lost or hidden). With several logs, prints
them side by side and exits 1 when their courses differ.

    scripts/soak-course.py LOG [LOG...]

The soak's counts (runs, client operations, the wind-down's steps) rest on timing, and so,
now and then, does its course: two runs of one binary and seed can part at a race (a throttled
call that ends Throttled in one and TimedOut in the other), and from there the seed draws other
faults. So a rename is judged on several runs of each side, not one (docs/benchmarks.md,
"Issue 30's renames and the soak's course")."""
import re
import sys

FACTS = {
    "seed": r"soak: seed (\d+) \(0x[0-9a-f]+\), (\d+) steps clean",
    "targets created": r"targets created (\d+)",
    "drains": r", drains (\d+),",
    "targets deleted": r", deleted (\d+) \(",
    "most targets at once": r"most at once (\d+)",
    "most shards in a list": r"most shards in a list (\d+)",
    "lists published": r"lists published (\d+)",
    "deployments": r"deployments (\d+)",
    "rollouts completed": r"rollouts completed (\d+)",
    "runs stopped by a stale read": r"runs stopped by a stale read (\d+)",
    "final list": r"final list (\S+);",
    "version 2 lists": r"version 2 lists published (\d+)",
    "version 3 lists open, closed": r"placements open (\d+), with none (\d+)",
    "latest versions hidden": r"latest versions hidden there (\d+)",
    "deleted paths seen again": r"deleted paths seen on disk again: (\d+)",
}


def course(path):
    text = open(path, encoding="utf-8", errors="replace").read()
    out = {}
    for name, pattern in FACTS.items():
        m = re.search(pattern, text)
        if not m:
            sys.exit(f"{path}: no '{name}' in the soak's summary (did the soak pass?)")
        out[name] = " ".join(m.groups())
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    courses = [course(p) for p in sys.argv[1:]]
    differ = False
    for name in FACTS:
        values = [c[name] for c in courses]
        mark = "" if len(set(values)) == 1 else "   <- differs"
        differ |= bool(mark)
        print(f"{name:30} {' | '.join(values)}{mark}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
