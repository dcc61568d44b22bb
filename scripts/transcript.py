#!/usr/bin/env python3
"""The function's answers across the host test suite, recorded and compared.

A change meant to keep behaviour (a rename, a move of code) should leave every answer the
function gives the same. The soak cannot show it: its course rests on timing. The other
integration tests drive the function through fixed scenarios, so their answers can be
compared across two builds:

  scripts/transcript.py record OUT BIN...   run each test of each test binary alone, with
                                            EFS_TRANSCRIPT=OUT/<binary>/<test>.jsonl
  scripts/transcript.py record OUT --only "BIN/TEST ..." BIN...   only those tests
  scripts/transcript.py compare A B         the tests whose answers differ, after the values
                                            AWS or the clock draws (ids, times) are masked
  scripts/transcript.py settle A B TEST...  with A/1..5 and B/1..5 recorded: which of the
                                            TESTs differ, leaving out each answer that
                                            varies within one commit

`record` leaves out the soak (tests/soak.rs). `compare` and `settle` exit 1 if any test's
answers, or whether it passed, differ. scripts/same-answers.sh runs all three for two commits.
"""

import concurrent.futures
import json
import os
import re
import subprocess
import sys
from pathlib import Path

# Values AWS, moto or the clock draws, masked before answers are compared: a rename cannot
# change them, and two runs of one build draw them differently.
MASKS = [
    (re.compile(r"\bfsmt-[0-9a-f]{8,}"), "fsmt-*"),
    (re.compile(r"\bfs-[0-9a-f]{8,}"), "fs-*"),
    (re.compile(r"\b(subnet|vpc|sg|eni)-[0-9a-f]{8,}"), r"\1-*"),
    (re.compile(r"\b[0-9a-f]{32}\b"), "<hex32>"),
    (re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"), "<uuid>"),
    (re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:?\d\d)?"), "<time>"),
    (re.compile(r"\b1[6-9]\d{8}(\d{3}|\d{6}|\d{9})?\b"), "<epoch>"),
    (re.compile(r"\b\d+(\.\d+)?\s?(ms|s|seconds)\b"), "<duration>"),
    (re.compile(r"/tmp/[^\s\"']+"), "<tmp>"),
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:*"),
]
# How often `settle` wants each differing test run at each commit. A test whose answers rest on
# timing (an extra save_state when a run's second plan falls in the next second) varies in
# most sets of five runs.
RUNS = 5
# Numbers that are times since 1970, in seconds or milliseconds (2020 to 2036): no count in an
# answer comes near them.
EPOCHS = [(1_577_836_800, 2_082_758_400), (1_577_836_800_000, 2_082_758_400_000)]
# Fields whose values are times or durations, masked whole.
TIMED = re.compile(r"(_ms|_secs|_seconds|elapsed|duration|_at|time|deadline)$")


def mask_text(text):
    for pattern, repl in MASKS:
        text = pattern.sub(repl, text)
    return text


def mask(value):
    if isinstance(value, dict):
        # Keys drawn by AWS (files_per_target's ids) mask alike: their values are then kept
        # as a sorted list under the one masked key.
        out = {}
        for k, v in value.items():
            v = "<timed>" if TIMED.search(k) and isinstance(v, (int, float)) else mask(v)
            out.setdefault(mask_text(k), []).append(v)
        return {k: vs[0] if len(vs) == 1 else sorted(vs, key=json.dumps) for k, vs in out.items()}
    if isinstance(value, list):
        items = [mask(v) for v in value]
        # A list ordered by drawn ids (tasks, targets) is ordered by chance once they are masked.
        if any(isinstance(v, str) and v != mask_text(v) for v in value):
            items.sort(key=json.dumps)
        return items
    if isinstance(value, str):
        return mask_text(value)
    if isinstance(value, int) and any(lo <= value < hi for lo, hi in EPOCHS):
        return "<epoch>"
    return value


def tests_of(binary):
    out = subprocess.run([binary, "--list", "--format", "terse"], check=True,
                         capture_output=True, text=True).stdout
    # The support module's own tests are built into every binary, and start no function.
    return [line[: -len(": test")] for line in out.splitlines()
            if line.endswith(": test") and not line.startswith("support::")]


def binary_name(binary):
    return re.sub(r"-[0-9a-f]{16}$", "", Path(binary).name)


def run_one(binary, test, out_dir):
    file = out_dir / binary_name(binary) / f"{test}.jsonl"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.unlink(missing_ok=True)
    env = dict(os.environ, EFS_TRANSCRIPT=str(file))
    done = subprocess.run([binary, "--exact", test, "--test-threads", "1"], check=False, env=env,
                          capture_output=True, text=True)
    (file.parent / f"{test}.status").write_text("passed\n" if done.returncode == 0 else "failed\n")
    if done.returncode != 0:
        # What the test printed: why it failed, beside its answers.
        (file.parent / f"{test}.out").write_text(done.stdout + done.stderr)
    return binary_name(binary), test, done.returncode == 0


def record(out_dir, binaries, only=None):
    """Each test of each binary alone, two at a time; `only`: the `binary/test` names to run."""
    out_dir = Path(out_dir)
    jobs = [(b, t) for b in binaries if binary_name(b) != "soak"
            for t in tests_of(b) if only is None or f"{binary_name(b)}/{t}" in only]
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        for name, test, passed in pool.map(lambda j: run_one(j[0], j[1], out_dir), jobs):
            print(f"{'passed' if passed else 'FAILED'} {name}::{test}", flush=True)


def answers(dir_, rel):
    file = dir_ / rel
    lines = file.read_text().splitlines() if file.exists() else []
    status = file.with_suffix(".status")
    passed = status.read_text().strip() if status.exists() else "missing"
    return passed, [mask(json.loads(line)) for line in lines]


def differences(x, y, where="$"):
    """The paths at which two answers differ, with the values there (shortened)."""
    if isinstance(x, dict) and isinstance(y, dict):
        for k in sorted(set(x) | set(y)):
            yield from differences(x.get(k), y.get(k), f"{where}.{k}")
    elif isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
        for i, (u, v) in enumerate(zip(x, y)):
            yield from differences(u, v, f"{where}[{i}]")
    elif x != y:
        yield where, json.dumps(x)[:300], json.dumps(y)[:300]


def compare(a, b):
    a, b = Path(a), Path(b)
    rels = sorted({p.relative_to(d).with_suffix(".jsonl") for d in (a, b)
                   for p in d.rglob("*.status")})
    differ, count = [], 0
    for rel in rels:
        (pa, xa), (pb, xb) = answers(a, rel), answers(b, rel)
        count += len(xa)
        if (pa, xa) != (pb, xb):
            differ.append(rel)
            print(f"differs: {rel.with_suffix('')} ({pa}, {len(xa)} answers / {pb}, {len(xb)})")
            for i, (x, y) in enumerate(zip(xa, xb)):
                if x != y:
                    for where, u, v in list(differences(x, y))[:6]:
                        print(f"  answer {i + 1}, {where}:\n    {u}\n    {v}")
                    break
    print(f"{len(rels)} tests, {count} answers; {len(rels) - len(differ)} the same, "
          f"{len(differ)} differ")
    return 1 if differ else 0


def settle(base, head, tests):
    """Each test recorded RUNS times at both commits (in runs 1 to RUNS). An answer that
    varies within one commit is unsettled and left out; the others are compared: a test
    differs if whether it passed, how many answers it gave, or a settled answer differs."""
    base, head, differ = Path(base), Path(head), 0
    for test in tests:
        rel = Path(f"{test}.jsonl")
        runs = {c: [answers(c / str(n), rel) for n in range(1, RUNS + 1)] for c in (base, head)}
        shapes = {c: {(passed, len(xs)) for passed, xs in rs} for c, rs in runs.items()}
        if any(len(s) > 1 for s in shapes.values()):
            print(f"unsettled: {test} (whether it passes, or how many answers, varies within one commit)")
            continue
        if shapes[base] != shapes[head]:
            differ += 1
            print(f"DIFFERS: {test} (passed and answers {shapes[base]} at one, {shapes[head]} at the other)")
            continue
        count = len(runs[base][0][1])
        settled = [i for i in range(count)
                   if all(len({json.dumps(xs[i], sort_keys=True) for _, xs in rs}) == 1
                          for rs in runs.values())]
        changed = [i + 1 for i in settled if runs[base][0][1][i] != runs[head][0][1][i]]
        loose = count - len(settled)
        if not settled:
            print(f"unsettled: {test} (each of its {count} answers varies within one commit)")
        elif changed:
            differ += 1
            print(f"DIFFERS: {test} (answers {changed}: the same {RUNS} times at each commit, "
                  f"not across them)")
        else:
            print(f"the same: {test} ({len(settled)} of {count} answers settled and the same, "
                  f"{loose} unsettled)")
    return 1 if differ else 0


def main(argv):
    if len(argv) >= 3 and argv[0] == "record":
        only = None
        if argv[2] == "--only":
            only, argv = set(argv[3].split()), argv[:2] + argv[4:]
        record(argv[1], argv[2:], only)
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(argv[1], argv[2])
    if len(argv) >= 3 and argv[0] == "settle":
        return settle(argv[1], argv[2], argv[3:])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
