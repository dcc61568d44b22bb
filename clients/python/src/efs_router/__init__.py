"""Client-side routing for efs-mount-autoscaler (Python 3.9+; the standard library, and boto3 only to read SSM).

Reads the published list of mount targets (the JSON in SSM Parameter Store) and sends each
logical path to its shard, exactly as the Rust library ``efs-router`` (router/ in this
repository) does; both are tested against ``tests/vectors/routing.json``. The rules are in
router/REFERENCE.md.

    import efs_router
    mount_list = efs_router.MountTargetList.from_json(ssm_value)
    router = efs_router.Router(mount_list, efs_router.Layout.single_mount("/mnt/efs"))
    router.write("data/analysis/device-42-1700000000.json", b"{...}")
    data = router.read_with_fallback("data/analysis/device-42-1700000000.json").data

The core function is ``shard_index(path, targets, strategy) -> int``: ``targets`` are the
list's shards, ``MountTargetList.shards()`` (or, when every mount target serves one shard, the
entries of the published list, as dicts parsed from JSON or ``Target``), ``strategy`` is
``"rendezvous"`` or ``"modulo-sha256"``; the answer is an index into ``targets``. A version 2
list (``"version": 2``) has mount targets serving several shards: route over its ``shards()``. A version 3
list (``"version": 3``) also says where a file may be when it is not at home (``"open"``: ``Placement``s, or
``"everywhere"``), and a miss looks only there (``Router.miss_shards``).

Installing: ``pip install ./clients/python`` (no dependency); ``pip install
"./clients/python[ssm]"`` adds boto3, to read the list from SSM:

    mount_list = efs_router.MountTargetList.from_ssm("/efs-mount-autoscaling/mount-targets")
    router = efs_router.Router.from_ssm("/efs-mount-autoscaling/mount-targets", layout,
                                        refresh_seconds=60)

``from_ssm`` takes a boto3 SSM client (``client=``); without one it makes ``boto3.client("ssm")``.

Picking up a new list. The default, and what the function does after each publish, is a forced
deployment of the ECS services: new tasks read the new list when they start. A ``Router`` can
also re-read the parameter itself, off by default: with ``refresh_seconds=R`` each operation
(``resolve``, ``locate``, ``exists``, ``write``, ``read_with_fallback``) first re-reads the list
when ``R`` seconds or more have passed since the last read (or attempt) began. A re-read that
fails, or gives a list that is not valid or does not fit the layout, keeps the list the router
had and logs a warning (logger ``efs_router``); it never fails the operation, and the next
attempt is ``R`` seconds later. Several threads may share one router; an operation routes by
one list from start to end.

The fleet rule: a refreshing client is on the new list only once it has refreshed, that is up
to ``R`` seconds (plus the read and the operation in flight) after the publish, and a client
whose re-reads fail stays on the old list. The function accounts for refreshing clients with
its setting ``CLIENT_REFRESH_SECONDS``: after each publish it waits that long before it moves
files, so set it above every client's ``refresh_seconds`` with a margin. Tasks that do not
refresh are covered by the forced deployment, as before.
"""

# One module per module of the Rust library (router/src/): errors, list, names, path, shard, placement (whose
# types, Placement and Placed, are in list, which reads them), layout, cache, relocation, delete, create, listing,
# fs, report (report.rs and reporter.rs), and ssm (boto3). This file only gathers their public names.
from .cache import revalidate_dir
from .create import ALREADY_THERE, CREATED, Creation
from .delete import Deleted, Left
from .errors import (
    InsideAnotherShard,
    LayoutError,
    ListError,
    NotARegularFile,
    NotFound,
    OtherOwners,
    PathError,
    Reappearing,
    RouteError,
    RouterError,
)
from .fs import HOME as HOME
from .fs import PROBE_THREADS as PROBE_THREADS
from .fs import Found, Location, Place, ReadResult, Resolved, Router
from .fs import logger as logger
from .layout import Layout
from .list import (
    EVERYWHERE,
    MAX_LIST_SHARDS,
    MODULO_SHA256,
    RENDEZVOUS,
    STRATEGIES,
    MountTargetList,
    Placed,
    Placement,
    Target,
    extra_root,
)
from .list import root_is_valid as root_is_valid
from .listing import Entry
from .names import is_private_name
from .path import normalise
from .relocation import DROPPED_OLDER, MOVED, REPLACED_OLDER, SOURCE_GONE, relocate
from .report import ReportError, ReportFault
from .shard import TargetLike as TargetLike
from .shard import modulo_sha256, rendezvous_score, shard_index

__all__ = [
    "RENDEZVOUS", "MODULO_SHA256", "STRATEGIES",
    "RouterError", "ListError", "PathError", "RouteError", "LayoutError", "InsideAnotherShard", "NotFound",
    "NotARegularFile", "OtherOwners", "ReportError", "ReportFault", "Reappearing",
    "Target", "MountTargetList", "MAX_LIST_SHARDS", "extra_root", "Placement", "Placed", "EVERYWHERE",
    "normalise", "shard_index", "modulo_sha256", "rendezvous_score",
    "Layout", "Resolved", "Found", "Location", "Place", "ReadResult", "Router", "Deleted", "Left",
    "Creation", "CREATED", "ALREADY_THERE", "Entry",
    "MOVED", "REPLACED_OLDER", "DROPPED_OLDER", "SOURCE_GONE", "relocate", "is_private_name", "revalidate_dir",
]
