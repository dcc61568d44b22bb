"""A client's report (router/src/report.rs, router/src/reporter.rs): which list this router routes by, written to
the shared file system so that the function waits for it before it moves files or removes a target. The Rust
router writes it (through the native module); this module names its constants and reads report files.

- Where: ``<file system root>/.efs-router-clients/<client id>.json``, the id 16 random lowercase hex digits per
  router; written atomically, the directory opened beneath the root without following a link and made when
  missing. The root is the single mount's ``base``, or in a per-target layout the mount of the shard rooted at
  ``/``; without one, ``report_root`` says where the root is mounted.
- What: compact JSON, fields in the order of ``FIELDS``, at most ``MAX_BYTES`` (``tests/vectors/reports.json``).
- When: when the router loads a list, and every ``EVERY_SECS`` from a thread while the router lives; removed when
  the router is collected or closed (``Router.close``).
- The lease: before a write or a move, when the last successful report is ``LEASE_SECS`` old or more, one is written
  first; if that fails the write raises ``ReportFault("report-lapsed")`` and a read's move home is skipped, since
  after ``LIFETIME_SECS`` the function counts this client as gone.
"""

from __future__ import annotations

import json
from typing import Any, Dict, NamedTuple, Optional, Tuple, Union

from . import _native
from .errors import ReportError as ReportError
from .errors import ReportFault as ReportFault
from .list import MountTargetList
from .names import REPORTS_DIR
from .ssm import FIRST_READ, RE_READ, _read_parameter_version, _ssm_client

DIR = REPORTS_DIR
FORMAT = 1
MAX_BYTES = 4096
EVERY_SECS = 60
LIFETIME_SECS = 180
"""A report not rewritten for this long is a client that is gone: three missed reports."""
LEASE_SECS = LIFETIME_SECS - 30
"""A report this old or older is rewritten before the router writes or moves anything: the 30 s before the
function's ``LIFETIME_SECS`` cover the operation in flight and a clock difference."""
READS = (1, 2, 3)
"""The list versions this router reads."""
METADATA_URI_VAR = "ECS_CONTAINER_METADATA_URI_V4"


def _version() -> str:
    try:
        from importlib.metadata import version
        return version("efs-router")
    except Exception:  # run from a checkout, not installed
        return "unknown"


ROUTER = "efs-router-python/" + _version()
"""This package as its reports name it (the Rust router beneath it writes them)."""

FIELDS = ("format", "client", "router", "reads", "list", "loaded_at", "refreshed_at", "refresh_failed_at",
          "written_at", "every", "task", "label")


def list_sha256(text: Union[str, bytes]) -> str:
    """SHA-256, lowercase hex, of the exact bytes of a list as published (the parameter's value, UTF-8)."""
    return str(_native.list_sha256(text.decode("utf-8") if isinstance(text, bytes) else text))


def is_client_id(text: str) -> bool:
    return len(text) == 16 and all(c in "0123456789abcdef" for c in text)


def client_of_file(name: str) -> Optional[str]:
    """The client id of a report file's name (``<id>.json``), if it is one."""
    if name.endswith(".json") and is_client_id(name[:-5]):
        return name[:-5]
    return None


def parse_report(file_name: str, data: bytes) -> Dict[str, Any]:
    """The report in the bytes of the report file ``file_name``, as the function reads it (Rust
    ``Report::parse``); ``ReportError`` (``too-large``, ``malformed``, ``wrong-name``) otherwise."""
    parsed: Dict[str, Any] = json.loads(_native.parse_report(file_name, bytes(data)))
    return parsed


def to_json(report: Dict[str, Any]) -> str:
    """The report as written: compact JSON, fields in the order of ``FIELDS`` (absent ones null), as the router
    writes it (``Report::to_json``)."""
    text = json.dumps(report, ensure_ascii=False, allow_nan=False).encode("utf-8")
    return str(_native.report_json(text))


def task_arn(uri: str) -> Optional[str]:
    """The ``TaskARN`` of ``<uri>/task`` (the ECS task metadata endpoint), or None."""
    arn = _native.task_arn(uri)
    return None if arn is None else str(arn)


class Source(NamedTuple):
    """A list as read: its exact text, and the SSM parameter's version when read from SSM."""

    text: str
    parameter_version: Optional[int] = None


class SsmSource:
    """Reads the list from SSM for ``Router.from_ssm``, remembering the text and version of each list it parsed."""

    def __init__(self, name: str, client: Any):
        self.name = name
        self.client = client if client is not None else _ssm_client()
        self.read: Optional[Tuple[MountTargetList, Source]] = None

    def __call__(self) -> MountTargetList:
        # The first read retries longer than a re-read, which holds the router's operations (ssm.py).
        text, version = _read_parameter_version(self.name, self.client, FIRST_READ if self.read is None else RE_READ)
        mount_list = MountTargetList.from_json(text)
        self.read = (mount_list, Source(text, version))
        return mount_list
