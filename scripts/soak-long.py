#!/usr/bin/env python3
"""The long soaks, as one command with a record (`make soak-long`, docs/testing.md).

Runs SOAK_LONG_HOST seeds (default 10) of the soak on the host, one local directory (the soak
test binary, as `make soak-local` runs it), then SOAK_LONG_TIER seeds (default 3) on the NFS
tier (`make soak`), each of SOAK_LONG_STEPS steps (default 2,000), one after the other. The
seeds come from scripts/soak-seeds.txt: the next HOST + TIER of them, wrapping around, from
the index (commits in HEAD's history x seeds a run) mod the list's length, or SOAK_LONG_START;
the host takes the first ones, SOAK_LONG_JOBS of them at a time (default 1); SOAK_LONG_SEEDS
(seeds, space-separated) runs those alone, on the host. On the tier the
VM gets SOAK_LONG_TIER_TIMEOUT s (default 1,200 + 4 a step) and the soak 200 s less.

It reads the line `soak-statistics: {json}` each soak prints at its end, and replaces the
section of docs/benchmarks.md between the markers below (added at the end if missing) with a
table of the runs (seed, steps, where, result, time, commit, the command that runs it again)
and one of every statistic of each run. A failed run is in the tables too; at the end each
failure is printed with the one command that reproduces it, and the exit status is 1.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEEDS = ROOT / "scripts" / "soak-seeds.txt"
DOC = ROOT / "docs" / "benchmarks.md"
BEGIN = "<!-- soak-long: begin (written by `make soak-long`, scripts/soak-long.py) -->"
END = "<!-- soak-long: end -->"
HEADING = "## The long soaks (`make soak-long`)"
TEST = "a_seeded_soak_loses_no_file_and_keeps_every_invariant"
MARK = "soak-statistics: "


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit():
        sys.exit(f"soak-long: {name}={raw!r}: a whole number is needed")
    return int(raw)


def git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout.strip()


def read_seeds() -> list[int]:
    seeds = []
    for n, line in enumerate(SEEDS.read_text().splitlines(), 1):
        word = line.split("#", 1)[0].strip()
        if not word:
            continue
        if not word.isdigit():
            sys.exit(f"soak-long: {SEEDS.relative_to(ROOT)}:{n}: {word!r} is not a seed")
        seeds.append(int(word))
    if not seeds:
        sys.exit(f"soak-long: {SEEDS.relative_to(ROOT)} lists no seed")
    return seeds


def with_commas(n: int) -> str:
    return f"{n:,}"


def soak_binary() -> str:
    """Builds the soak test and returns its executable (as the Makefile's SOAK_BIN)."""
    out = subprocess.run(
        ["cargo", "test", "--test", "soak", "--no-run", "--message-format=json"],
        cwd=ROOT, check=True, stdout=subprocess.PIPE, text=True,
    ).stdout
    for line in out.splitlines():
        m = json.loads(line)
        if m.get("executable") and "test" in m.get("target", {}).get("kind", []):
            return str(m["executable"])
    sys.exit("soak-long: cargo built no soak test executable")


def failure_reason(output: str) -> str:
    """The soak's own words for a failure: its panic message's first line."""
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if "panicked at" in line:
            said = [x.strip() for x in lines[i + 1:i + 4] if x.strip()]
            if said:
                return said[0][:300]
    for line in reversed(lines):
        if line.startswith("nfs-tier: "):
            return line[:300]
    return "no statistics line (see the log)"


def run_one(where: str, seed: int, steps: int, cmd: list[str], env: dict[str, str],
            again: str, logs: Path) -> dict:
    log = logs / f"{where}-{seed}-{steps}.log"
    print(f"soak-long: {where} seed {seed}, {with_commas(steps)} steps (log {log})", flush=True)
    started = time.monotonic()
    with log.open("w") as f:
        status = subprocess.run(cmd, cwd=ROOT, env=env, stdout=f, stderr=subprocess.STDOUT, check=False).returncode
    wall = time.monotonic() - started
    output = log.read_text(errors="replace")
    stats = None
    for line in output.splitlines():
        if line.startswith(MARK):
            stats = json.loads(line[len(MARK):])
    clean = status == 0 and stats is not None
    result = "clean" if clean else f"FAILED (exit {status}): {failure_reason(output)}"
    print(f"soak-long:   {result.splitlines()[0]} in {wall:.0f} s", flush=True)
    return {
        "where": where, "seed": seed, "steps": steps, "clean": clean, "result": result,
        "secs": stats["secs"] if stats else None, "wall": wall,
        "statistics": stats["statistics"] if stats else [], "again": again, "log": str(log),
    }


def cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def section(runs: list[dict], settings: str, commit: str) -> str:
    out = [BEGIN, "", settings, ""]
    out.append("| seed | steps | on | result | soak's time | wall time | commit | again |")
    out.append("|---|---|---|---|---|---|---|---|")
    for r in runs:
        secs = f"{r['secs']:,.1f} s" if r["secs"] is not None else "—"
        out.append(
            f"| {r['seed']} | {with_commas(r['steps'])} | {r['where']} | {cell(r['result'])} "
            f"| {secs} | {r['wall']:,.0f} s | {commit} | `{r['again']}` |"
        )
    names: list[str] = []
    for r in runs:
        for name, _ in r["statistics"]:
            if name not in names:
                names.append(name)
    if names:
        caption = (
            "Every statistic of each run: those of docs/testing.md's table in its order, then, "
            "from `wind-down steps`, the summary's other counts (a dash: the run printed none):"
        )
        out += ["", caption, ""]
        out.append("| statistic | " + " | ".join(f"{r['where']} {r['seed']}" for r in runs) + " |")
        out.append("|---" * (len(runs) + 1) + "|")
        for name in names:
            values = []
            for r in runs:
                got = {n: v for n, v in r["statistics"]}
                values.append(str(got[name]) if name in got else "—")
            out.append(f"| {name} | " + " | ".join(values) + " |")
    out += ["", END]
    return "\n".join(out)


def write_doc(text: str) -> None:
    doc = DOC.read_text()
    if BEGIN in doc and END in doc:
        before, rest = doc.split(BEGIN, 1)
        _, after = rest.split(END, 1)
        doc = before + text + after
    else:
        doc = doc.rstrip("\n") + f"\n\n{HEADING}\n\n" + text + "\n"
    DOC.write_text(doc)


def main() -> int:
    host_n = env_int("SOAK_LONG_HOST", 10)
    tier_n = env_int("SOAK_LONG_TIER", 3)
    steps = env_int("SOAK_LONG_STEPS", 2000)
    jobs = max(1, env_int("SOAK_LONG_JOBS", 1))
    tier_timeout = env_int("SOAK_LONG_TIER_TIMEOUT", 1200 + 4 * steps)
    seeds = read_seeds()
    count = int(git("rev-list", "--count", "HEAD"))
    start = env_int("SOAK_LONG_START", count * (host_n + tier_n)) % len(seeds)
    chosen = [seeds[(start + i) % len(seeds)] for i in range(host_n + tier_n)]
    # Seeds named (a failure's again, after a fix): on the host, these alone.
    named = os.environ.get("SOAK_LONG_SEEDS", "").split()
    if named:
        if not all(w.isdigit() for w in named):
            sys.exit(f"soak-long: SOAK_LONG_SEEDS={' '.join(named)!r}: whole numbers are needed")
        chosen, host_n, tier_n = [int(w) for w in named], len(named), 0
    commit = git("rev-parse", "--short", "HEAD")
    if git("status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs/benchmarks.md"):
        commit += " + changes"
    logs = Path(tempfile.mkdtemp(prefix="soak-long."))
    print(f"soak-long: {host_n} host and {tier_n} tier seeds of {with_commas(steps)} steps from index "
          f"{start} of {SEEDS.relative_to(ROOT)}: {chosen}", flush=True)

    runs = []
    if host_n:
        binary = soak_binary()

        def host(seed: int) -> dict:
            env = dict(os.environ, SOAK_SEED=str(seed), SOAK_STEPS=str(steps),
                       CARGO_MANIFEST_DIR=str(ROOT))
            cmd = [binary, "--exact", TEST, "--test-threads", "1", "--nocapture", "--color", "never"]
            return run_one("host", seed, steps, cmd, env,
                           f"make soak-local SEED={seed} STEPS={steps}", logs)

        # Each host run is one soak binary on its own directory and moto: JOBS of them share
        # the cores (the runs' timing, and so some of their statistics, move with the load).
        with ThreadPoolExecutor(max_workers=jobs) as pool:
            runs += list(pool.map(host, chosen[:host_n]))
    for seed in chosen[host_n:]:
        args = [f"SEED={seed}", f"STEPS={steps}", f"SOAK_TIER_TIMEOUT={tier_timeout}"]
        cmd = ["make", "--no-print-directory", "soak", *args]
        runs.append(run_one("tier", seed, steps, cmd, dict(os.environ),
                            "make soak " + " ".join(args), logs))

    load = os.getloadavg()[0]
    seeds = " ".join(named)
    seeds_named = f' SOAK_LONG_SEEDS="{seeds}"' if named else ""
    settings = (
        f"Written on {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} by `make soak-long` "
        f"(SOAK_LONG_HOST={host_n} SOAK_LONG_TIER={tier_n} SOAK_LONG_STEPS={steps}"
        f"{f' SOAK_LONG_TIER_TIMEOUT={tier_timeout}' if tier_n else ''}"
        f"{seeds_named}), "
        f"{'seeds named' if named else f'seeds from index {start} of scripts/soak-seeds.txt'}, "
        f"{'one host run at a time' if jobs == 1 else f'{jobs} host runs at a time'}, the tier's one "
        f"at a time; load average {load:.1f} at the end."
    )
    write_doc(section(runs, settings, commit))
    print(f"soak-long: the tables are in {DOC.relative_to(ROOT)}; logs in {logs}")
    failed = [r for r in runs if not r["clean"]]
    for r in failed:
        print(f"soak-long: FAILED: {r['where']} seed {r['seed']}: {r['result']}", file=sys.stderr)
        print(f"  again: {r['again']}   (log {r['log']})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
