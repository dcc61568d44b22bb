#!/usr/bin/env python3
"""Drives a long operation of efs-mount-autoscaler to its end, one short invocation at a time.

    scripts/efs-drive.py plan      --stack-name efs-mount-autoscaler
    scripts/efs-drive.py undo      --stack-name efs-mount-autoscaler
    scripts/efs-drive.py drain     --function <name or ARN>
    scripts/efs-drive.py migrate   --stack-name efs-mount-autoscaler
    scripts/efs-drive.py rebalance --stack-name efs-mount-autoscaler

Each invocation gives the run `budget_seconds` (default 40): its waits and moves stop by then, as
at Lambda's deadline, so it answers within the AWS SDKs' and CLI's 60 s read timeout, which
otherwise retries a long call while the first goes on unseen. A call is made again only when
it never ran, or its run stopped on SSM's lag (below).
The function is level-triggered, so an interrupted drive goes on where it was when run again.

- plan: one `{"action":"plan"}`, its response printed (a plan counts every file and changes
  nothing, so it has no budget: at 10 million files it can take minutes, which the read timeout
  of a plan, 900 s, allows).
- reconcile: one reconcile now, within the budget, its response printed.
- undo: `{"action":"undo"}` until the decision is `undone` (docs/operations.md, "Undo").
- drain: reconciles until no shard drains and nothing waits: a scale-in's drain to its end.
- migrate: `{"action":"migrate","strategy":"rendezvous"}` once, then as drain, then as rebalance.
- rebalance: rebalances until a pass ends with no file left to move.

A call refused because a run is going (reserved concurrency 1: `TooManyRequestsException`) was
never run, so it is made again after `--interval`; so is a run that stopped because SSM's reads
lagged a write (`StaleParameter`, `StaleWrite`: it changed nothing the next run does not take
up), up to LAGGED_TRIES times in a row. Each invocation prints one line: the decision, files moved (this run, in all), files left that the
run saw, mount targets listed, and an estimate from the pace so far. Exit status: 0 done; 1 failed
(an invocation failed: the function's error is printed); 3 held (the operator must act: a decision
that needs a migration, a `shard_dir_left` warning, or no change for `--patience` seconds: a
target in use, a fleet that does not converge); 2 a usage error; 130 interrupted (Ctrl-C stops
it once the run in flight has answered; a second Ctrl-C at once).
Needs boto3 and the permissions `lambda:InvokeFunction` (and, with --stack-name,
`cloudformation:DescribeStackResource`).
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

DONE, FAILED, USAGE, HELD, INTERRUPTED = 0, 1, 2, 3, 130

# Decisions after which a reconcile has nothing left to do now (docs/contract.md).
RESTING = {
    "keep",
    "at_capacity",
    "hold_no_candidate",
    "hold_settling",
    "hold_recent_scale_out",
}
# Decisions only the operator can lift.
NEEDS_OPERATOR = {"hold_modulo_list"}
MIGRATE_EVENT = {"action": "migrate", "strategy": "rendezvous"}
# A plan has no budget (it counts every file): Lambda's longest run.
PLAN_READ_TIMEOUT = 900
# Errors of a run that SSM's lag stopped; the next run reads again (docs/operations.md).
LAGGED = {"StaleParameter", "StaleWrite"}
# Such runs in a row before the drive fails: a lag that lasts is something else writing.
LAGGED_TRIES = 5


class Failed(Exception):
    """An invocation that did not answer with a response."""


class Interrupted(Exception):
    """Ctrl-C (SIGINT), taken between two invocations."""


def stop_between_runs() -> Callable[[], bool]:
    """Makes the first SIGINT wait for the run in flight to answer (it goes on anyway, on
    Lambda, and an SDK interrupted mid-call may report another error); a second stops now."""
    asked = [False]

    def on_interrupt(signum: int, frame: Any) -> None:
        if asked[0]:
            raise KeyboardInterrupt
        asked[0] = True
        print(
            "stopping after the run in flight answers (Ctrl-C again: now)",
            file=sys.stderr,
        )

    signal.signal(signal.SIGINT, on_interrupt)
    return lambda: asked[0]


@dataclass
class Progress:
    """What the drive has seen so far: for the printed line, the estimate and the patience."""

    started: float = field(default_factory=time.monotonic)
    invocations: int = 0
    moved: int = 0
    seen: tuple[Any, ...] = ()
    unchanged_since: float = field(default_factory=time.monotonic)

    def record(self, r: dict[str, Any]) -> int | None:
        """Counts one response; returns the files the run saw left to move, if it says."""
        self.invocations += 1
        moves = r.get("moves") or {}
        self.moved += int(moves.get("moved", 0))
        now = (
            r.get("decision"),
            r.get("homes"),
            json.dumps(r.get("mount_targets"), sort_keys=True),
            r.get("actions"),
            int(moves.get("moved", 0)) > 0,
        )
        if now != self.seen or moves.get("moved"):
            self.seen, self.unchanged_since = now, time.monotonic()
        left = moves.get("remaining")
        return None if left is None else int(left)

    def line(self, what: str, r: dict[str, Any], left: int | None, took: float) -> str:
        moves = r.get("moves") or {}
        elapsed = time.monotonic() - self.started
        parts = [
            f"[{self.invocations}] {what}: {r.get('decision')}",
            f"homes {r['homes']}" if r.get("homes") else "",
            f"moved {int(moves.get('moved', 0)):,} (in all {self.moved:,})",
            f"left {left:,}" if left is not None else "",
            f"targets {len(r.get('mount_targets') or [])}",
            f"{took:.1f} s",
        ]
        if left and self.moved and elapsed > 0:
            parts.append(
                f"about {left / (self.moved / elapsed) / 60:.0f} min left at this pace"
            )
        warnings = r.get("warning_kinds") or []
        if warnings:
            parts.append("warnings " + ",".join(sorted(set(warnings))))
        return ", ".join(p for p in parts if p)


def draining(r: dict[str, Any]) -> bool:
    return any(
        t.get("draining") or t.get("draining_shards")
        for t in r.get("mount_targets") or []
    )


def rested(r: dict[str, Any]) -> bool:
    """A reconcile with nothing left to do now: no drain, no change of homes under way."""
    return (
        r.get("decision") in RESTING
        and not draining(r)
        and r.get("homes") not in ("announced", "waiting")
        and not r.get("waiting_for")
    )


def undone(r: dict[str, Any]) -> bool:
    return r.get("decision") == "undone"


def passed(r: dict[str, Any]) -> bool:
    """A rebalance run that ended its pass with no file left to move (the fleet let it move)."""
    moves = r.get("moves")
    return bool(
        moves
        and not moves.get("incomplete")
        and not moves.get("remaining")
        and not moves.get("failed")
    )


class Driver:
    def __init__(
        self,
        invoke: Callable[[dict[str, Any]], dict[str, Any]],
        args: argparse.Namespace,
    ):
        self.invoke, self.args = invoke, args
        self.progress = Progress()
        self.interrupted = stop_between_runs()

    def step(self, what: str, event: dict[str, Any]) -> dict[str, Any]:
        if self.interrupted():
            raise Interrupted
        started = time.monotonic()
        r = self.invoke({**event, "budget_seconds": self.args.budget})
        left = self.progress.record(r)
        print(self.progress.line(what, r, left, time.monotonic() - started), flush=True)
        return r

    def until(
        self, what: str, event: dict[str, Any], done: Callable[[dict[str, Any]], bool]
    ) -> int:
        """Invokes `event` until `done` says so, the operator is needed, or nothing changes."""
        while True:
            r = self.step(what, event)
            if r.get("decision") in NEEDS_OPERATOR:
                print(f"held: {r.get('decision')}: {r.get('reason')}", file=sys.stderr)
                return HELD
            if done(r):
                if "shard_dir_left" in (r.get("warning_kinds") or []):
                    print(
                        f"held: a shard directory still holds something: {r.get('warnings')}",
                        file=sys.stderr,
                    )
                    return HELD
                return DONE
            idle = time.monotonic() - self.progress.unchanged_since
            if idle >= self.args.patience:
                print(
                    f"held: nothing changed for {idle:.0f} s: {r.get('decision')}: {r.get('reason')}",
                    file=sys.stderr,
                )
                return HELD
            if not r.get("actions") and not (r.get("moves") or {}).get("moved"):
                self.pause()

    def pause(self) -> None:
        """Waits `--interval`, cut short by Ctrl-C."""
        until = time.monotonic() + self.args.interval
        while not self.interrupted() and time.monotonic() < until:
            time.sleep(min(0.5, max(0.0, until - time.monotonic())))

    def run(self, operation: str) -> int:
        if operation in ("plan", "reconcile"):
            event = {"action": operation}
            r = self.invoke(
                event
                if operation == "plan"
                else {**event, "budget_seconds": self.args.budget}
            )
            print(json.dumps(r, indent=2), flush=True)
            return DONE
        if operation == "undo":
            return self.until("undo", {"action": "undo"}, undone)
        if operation == "drain":
            return self.until("reconcile", {"action": "reconcile"}, rested)
        if operation == "rebalance":
            return self.until("rebalance", self.rebalance_event(), passed)
        first = self.step("migrate", MIGRATE_EVENT)
        if first.get("decision") in NEEDS_OPERATOR:
            return HELD
        for what, event, done in (
            ("reconcile", {"action": "reconcile"}, rested),
            ("rebalance", self.rebalance_event(), passed),
        ):
            status = self.until(what, event, done)
            if status != DONE:
                return status
        return DONE

    def rebalance_event(self) -> dict[str, Any]:
        return {"action": "rebalance", "max_moves": self.args.max_moves}


def lambda_invoker(
    args: argparse.Namespace,
) -> Callable[[dict[str, Any]], dict[str, Any]]:
    import boto3
    from botocore.config import Config

    # The CLI's read timeout, and no retry: a retried invocation would be refused (reserved
    # concurrency 1) while the first one goes on.
    config = Config(
        read_timeout=PLAN_READ_TIMEOUT if args.operation == "plan" else 60,
        connect_timeout=10,
        retries={"total_max_attempts": 1},
    )
    session = boto3.session.Session(region_name=args.region)
    client = session.client("lambda", config=config)
    function = args.function or function_of_stack(session, args.stack_name)

    def once(event: dict[str, Any]) -> tuple[str, bytes]:
        """The function's error type ("" when it answered) and its payload."""
        while True:
            try:
                out = client.invoke(
                    FunctionName=function, Payload=json.dumps(event).encode()
                )
                break
            except client.exceptions.TooManyRequestsException:
                # Refused, never run: the one concurrent run is taken (a scheduled one).
                print(
                    f"throttled: a run is going; again in {args.interval:.0f} s",
                    flush=True,
                )
                time.sleep(args.interval)
        body: bytes = out["Payload"].read()
        if not out.get("FunctionError"):
            return "", body
        try:
            kind = str(json.loads(body).get("errorType", "")) or out["FunctionError"]
        except (ValueError, AttributeError):
            kind = out["FunctionError"]
        return kind, body

    def invoke(event: dict[str, Any]) -> dict[str, Any]:
        for tries in range(1, LAGGED_TRIES + 1):
            kind, body = once(event)
            if kind in LAGGED and tries < LAGGED_TRIES:
                print(
                    f"lagged: {kind}: SSM's reads lagged a write; the run stopped, "
                    f"again in {args.interval:.0f} s",
                    flush=True,
                )
                time.sleep(args.interval)
                continue
            if kind:
                raise Failed(f"{kind}: {body.decode(errors='replace')}")
            break
        answer: dict[str, Any] = json.loads(body)
        return answer

    return invoke


def function_of_stack(session: Any, stack: str) -> str:
    cfn = session.client("cloudformation")
    res = cfn.describe_stack_resource(
        StackName=stack, LogicalResourceId="AutoscalerFunction"
    )
    name: str = res["StackResourceDetail"]["PhysicalResourceId"]
    return name


def parse(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(
        prog="efs-drive",
        description=(__doc__ or "").split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "operation",
        choices=["plan", "reconcile", "undo", "drain", "migrate", "rebalance"],
    )
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("--function", help="the function's name or ARN")
    who.add_argument(
        "--stack-name", help="the stack that deployed it (its AutoscalerFunction)"
    )
    p.add_argument("--region", help="the AWS region (default: the CLI's)")
    p.add_argument(
        "--budget",
        type=int,
        default=40,
        help="seconds a run may take, 30 to 50 (default 40)",
    )
    p.add_argument(
        "--max-moves",
        type=int,
        default=10_000,
        help="files a rebalance run moves at most (default 10000)",
    )
    p.add_argument(
        "--interval",
        type=float,
        default=15.0,
        help="seconds between runs that changed nothing (default 15)",
    )
    p.add_argument(
        "--patience",
        type=float,
        default=1800.0,
        help="seconds with nothing changing before the drive stops as held (default 1800, the fleet's patience)",
    )
    args = p.parse_args(argv)
    if not 30 <= args.budget <= 50:
        p.error(
            "--budget: 30 to 50 seconds, so that a run answers within the 60 s read timeout"
        )
    return args


def main(argv: list[str]) -> int:
    args = parse(argv)
    try:
        status = Driver(lambda_invoker(args), args).run(args.operation)
    except (Interrupted, KeyboardInterrupt):
        print(
            "interrupted: run the same command again to go on where it was",
            file=sys.stderr,
        )
        return INTERRUPTED
    except Failed as e:
        print(f"failed: the function answered an error: {e}", file=sys.stderr)
        return FAILED
    except Exception as e:  # noqa: BLE001 (botocore's errors, any of them: a timeout, a refusal, credentials)
        print(f"failed: {type(e).__name__}: {e}", file=sys.stderr)
        return FAILED
    if args.operation not in ("plan", "reconcile"):
        print({DONE: "done", HELD: "held"}.get(status, "failed"), flush=True)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
