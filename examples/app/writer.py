#!/usr/bin/env python3
"""The IoT platform's writer on the Python router: a reference for applications (README.md beside it).

Every device reading is one small JSON file, ``data/analysis/device-{id}-{timestamp}.json`` (about 1 KB), on EFS.
The app used to check whether the path existed (``os.path.exists``) and write it if not, in one directory of
150,000 files. Here it writes each reading unless it is already there in one call, ``Router.create`` (a check
then a write would let another task write the same reading between the two), through ``efs_router``, which
spreads the files over the shard directories the function publishes in SSM.

    pip install "./clients/python[ssm]"       # efs_router, with boto3
    python writer.py 1000                     # writes 1,000 readings and exits

Environment: ``SSM_PARAMETER_NAME`` (the list, default ``/efs-mount-autoscaling/mount-targets``),
``EFS_MOUNT_PATH`` (where the task mounts the file system root, default ``/mnt/efs``) and, optionally,
``EFS_ROUTER_REFRESH_SECONDS`` (re-read the list that often; unset: read it once, and the function's forced
deployment brings a new list by replacing the task).

A throttled read of the list (Parameter Store answers GetParameter at 40 per second per account and Region by
default: a forced deployment of hundreds of tasks starts them all at once) is tried again: by boto3, by
``efs_router`` (a few times, briefly) and, at start, by this app with longer pauses (``START_BACKOFF``), each
pause exponential and jittered; past that the app stops and ECS starts the task again. A re-read that fails keeps
the list in use.
"""

from __future__ import annotations

import json
import logging
import os
import random
import sys
import time
from typing import Any, Callable, List, Optional, Union

import boto3
from botocore.config import Config
from botocore.exceptions import ConnectionError as BotocoreConnectionError

import efs_router
from efs_router.ssm import Backoff, retryable

log = logging.getLogger("writer")

DEFAULT_PARAMETER = "/efs-mount-autoscaling/mount-targets"
DEFAULT_MOUNT = "/mnt/efs"
WATCH_DIR = "data/analysis"  # the function's WATCH_DIR: relative to each shard's root
RETRY_SECONDS = 60.0  # while the list is not published, how often to look for it again
DEVICES = 100  # simulated devices
# At start, after efs_router's own retries gave up on a throttled (or failed-by-AWS, or unreachable) SSM: up to 6
# looks, pauses drawn from 0 to 2, 4, 8, 16 and 30 s, at most 60 s in all; then the error stops the app.
START_BACKOFF = Backoff(attempts=6, base=2.0, cap=30.0)


def reading_path(device_id: Union[int, str], timestamp: int) -> str:
    """The logical path of a reading: the same in every shard, the router picks the shard."""
    return "%s/device-%s-%d.json" % (WATCH_DIR, device_id, timestamp)


class PlainPaths:
    """Until the list is published: the app's own code, files at ``<mount>/<path>``, with the two methods of
    ``efs_router.Router`` that the app uses.

    Why this is safe: ``<mount>/<path>`` is the file in the first shard, rooted at ``/``. Every list the function
    publishes has that shard (it never removes ``/``), and only that one while the files fit in one shard, so a
    file written here is where a router puts it while the list has one shard; with more shards,
    ``Router.exists`` and ``read_with_fallback`` look there too, and the function moves it home later. Nothing
    is moved under this code meanwhile: it writes no report, so the function moves no file while this task
    runs (see ``Routing.current``)."""

    def __init__(self, mount: str) -> None:
        self.mount = mount

    def exists(self, path: str) -> bool:
        return os.path.exists(os.path.join(self.mount, path))

    def create(self, path: str, data: bytes) -> efs_router.Creation:
        real = os.path.join(self.mount, path)
        os.makedirs(os.path.dirname(real), exist_ok=True)
        # "x": create, never replace. The NFS server answers it (this host's name cache does not), so a reading
        # another task wrote meanwhile raises FileExistsError and is kept, not lost.
        try:
            with open(real, "xb") as f:
                f.write(data)
        except FileExistsError:
            return efs_router.Creation("already-there", 0, real)
        return efs_router.Creation("created", 0, real)


# What write_reading writes through: the router, or plain paths until the list exists.
Files = Union[efs_router.Router, PlainPaths]


class Routing:
    """``Router.from_ssm`` once the list is published; ``PlainPaths`` until then.

    On day one the function has not run yet and the parameter does not exist. Then ``current()`` answers plain
    paths and looks for the parameter again at its first call ``retry_seconds`` later, switching to the router
    once it is there. A throttled read is tried again (``START_BACKOFF``) and never means plain paths: on a list
    of several shards a file written at ``/`` would be away from home, where a version 3 list's miss does not
    look. Any other error (no credentials, access denied, a list the router refuses), and throttling past the
    last look, is raised, and ECS restarts the task, which reads the list again."""

    def __init__(self, parameter: str, mount: str, ssm: Any, *, refresh_seconds: Optional[float] = None,
                 retry_seconds: float = RETRY_SECONDS, label: Optional[str] = None,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep,
                 draw: Callable[[float, float], float] = random.uniform) -> None:
        self.parameter = parameter
        self.layout = efs_router.Layout.single_mount(mount)  # Fargate mounts the file system root once
        self.ssm = ssm
        self.refresh_seconds = refresh_seconds
        self.retry_seconds = retry_seconds
        self.label = label
        self.clock = clock
        self.sleep = sleep
        self.draw = draw
        self.plain = PlainPaths(mount)
        self.router: Optional[efs_router.Router] = None
        self.next_look = clock()

    def current(self) -> Files:
        if self.router is None and self.clock() >= self.next_look:
            try:
                self.router = self._start()
                log.info("routing by the list in %s: %d shards", self.parameter, len(self.router.shards))
            # boto3 raises this, a ClientError with the code ParameterNotFound, as efs_router passes it on.
            except self.ssm.exceptions.ParameterNotFound:
                self.next_look = self.clock() + self.retry_seconds
                log.warning("%s is not published yet: writing plain paths under %s (the first shard, /); "
                            "looking again in %.0f s", self.parameter, self.plain.mount, self.retry_seconds)
        return self.router if self.router is not None else self.plain

    def _start(self) -> efs_router.Router:
        """The router, once SSM answers: a read throttled past efs_router's own retries (or failed by AWS, or by
        the network) is tried again after an exponential, jittered pause, up to ``START_BACKOFF.attempts``
        reads in all; the last error is raised."""
        for retry in range(START_BACKOFF.attempts):
            try:
                # Reads the list and reports it (report=True is the default): the report, in
                # <mount>/.efs-router-clients/, tells the function which list this task routes by. The function
                # moves no file and removes no mount target until every running task reports the current list,
                # since an app that does not route would lose sight of a file moved out of its directory.
                return efs_router.Router.from_ssm(self.parameter, self.layout, refresh_seconds=self.refresh_seconds,
                                                  client=self.ssm, clock=self.clock, label=self.label)
            except Exception as e:
                if retry + 1 >= START_BACKOFF.attempts or not (retryable(e) or isinstance(e, BotocoreConnectionError)):
                    raise
                pause = START_BACKOFF.pause(retry, self.draw)
                log.warning("reading %s: %s; looking again in %.1f s (%d of %d)", self.parameter, e, pause,
                            retry + 1, START_BACKOFF.attempts)
                self.sleep(pause)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def close(self) -> None:
        """Removes this task's report: it writes no more."""
        if self.router is not None:
            self.router.close()


def write_reading(router: Files, device_id: Union[int, str], timestamp: int, payload: bytes) -> bool:
    """A reading is written once, and one already there is never replaced (a device may send the same reading
    again): one ``create``, which looks wherever a read looks (every shard a miss looks in), so a reading written
    under an earlier list, or by a task on plain paths, is found wherever it is. True when written."""
    # The router's create writes a synced temporary name and links it to the final name in the path's home
    # shard: of two tasks writing the same reading, exactly one creates it.
    return router.create(reading_path(device_id, timestamp), payload).created()


def reading(device_id: int, timestamp: int) -> bytes:
    """A simulated reading: about 1 KB of JSON."""
    samples = [round(random.uniform(15.0, 30.0), 3) for _ in range(100)]
    return json.dumps({"device_id": device_id, "timestamp": timestamp, "unit": "celsius",
                       "samples": samples}).encode()


def main(argv: Optional[List[str]] = None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = sys.argv[1:] if argv is None else argv
    count = int(args[0]) if args else 100
    refresh = os.environ.get("EFS_ROUTER_REFRESH_SECONDS")
    # Short timeouts: a look for the list, or a refresh, holds up the write that makes it.
    # boto3's standard retry mode: throttling retried with exponential, jittered pauses, 3 attempts a call.
    ssm = boto3.client("ssm", config=Config(connect_timeout=5, read_timeout=5,
                                            retries={"mode": "standard", "max_attempts": 3}))
    routing = Routing(os.environ.get("SSM_PARAMETER_NAME") or DEFAULT_PARAMETER,
                      os.environ.get("EFS_MOUNT_PATH") or DEFAULT_MOUNT, ssm,
                      refresh_seconds=float(refresh) if refresh else None, label="device-writer")
    start = int(time.time())
    written = 0
    try:
        for i in range(count):
            device_id, timestamp = i % DEVICES, start + i // DEVICES
            if write_reading(routing.current(), device_id, timestamp, reading(device_id, timestamp)):
                written += 1
    finally:
        routing.close()
    log.info("%d readings written, %d were already there", written, count - written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
