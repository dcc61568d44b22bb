"""Reading the list from SSM Parameter Store: the only part that needs boto3 (the ``ssm`` extra)."""

from __future__ import annotations

import logging
import random
import time
from typing import Any, Callable, NamedTuple, Optional, Tuple

from .errors import ListError

logger = logging.getLogger("efs_router")

# The error codes of a GetParameter worth another attempt: throttling (Parameter Store answers GetParameter at 40
# transactions a second per account and Region by default, which the starts of a forced deployment of hundreds of
# tasks outrun) and AWS's own passing faults. Anything else (ParameterNotFound, AccessDeniedException) is final.
RETRYABLE_CODES = frozenset({
    "ThrottlingException", "Throttling", "TooManyRequestsException", "RequestLimitExceeded", "TooManyUpdates",
    "InternalServerError", "InternalFailure", "ServiceUnavailable", "RequestTimeout",
})


class Backoff(NamedTuple):
    """Bounded retries: at most ``attempts`` reads; before retry k (from 0) a pause drawn uniformly from 0 to
    ``min(cap, base * 2**k)`` seconds (exponential, with full jitter, so that tasks started together spread out)."""

    attempts: int
    base: float
    cap: float

    def pause(self, retry: int, draw: Callable[[float, float], float]) -> float:
        return draw(0.0, min(self.cap, self.base * 2 ** retry))


# The first read, without which the app cannot route: up to 6 reads, at most 15.5 s of pauses (on top of boto3's
# own retries). A re-read, which holds every operation of the router while it lasts and on failure leaves the old
# list routing: up to 3 reads, at most 0.3 s of pauses.
FIRST_READ = Backoff(attempts=6, base=0.5, cap=8.0)
RE_READ = Backoff(attempts=3, base=0.1, cap=0.5)
# Replaced by the tests (no real pauses, fixed draws).
_sleep: Callable[[float], None] = time.sleep
_draw: Callable[[float, float], float] = random.uniform


def error_code(e: BaseException) -> Optional[str]:
    """The AWS error code of a boto3 ``ClientError`` (``e.response["Error"]["Code"]``), else None; without
    importing botocore."""
    response = getattr(e, "response", None)
    error = response.get("Error") if isinstance(response, dict) else None
    code = error.get("Code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


def retryable(e: BaseException) -> bool:
    """Whether a read that raised ``e`` is worth another attempt (``RETRYABLE_CODES``)."""
    return error_code(e) in RETRYABLE_CODES


def _ssm_client() -> Any:
    try:
        import boto3
    except ImportError as e:
        raise ImportError("efs_router: reading the list from SSM needs boto3, which is not installed; install "
                          "the package with its 'ssm' extra (pip install \"./clients/python[ssm]\") or pass "
                          "client=", name="boto3") from e
    return boto3.client("ssm")


def _read_parameter(name: str, client: Any) -> str:
    """The value of the SSM parameter ``name``, for ``MountTargetList.from_ssm``: ``client`` is a boto3 SSM client,
    None makes one."""
    return _read_parameter_version(name, client)[0]


def _read_parameter_version(name: str, client: Any, backoff: Backoff = FIRST_READ) -> Tuple[str, Optional[int]]:
    """The value of the SSM parameter ``name`` and its version (for the report; None if the answer has none).
    A throttled or failed-by-AWS read is tried again as ``backoff`` says; the last error is raised."""
    if client is None:
        client = _ssm_client()
    retry = 0
    while True:
        try:
            parameter = client.get_parameter(Name=name)["Parameter"]
            break
        except Exception as e:
            if retry + 1 >= backoff.attempts or not retryable(e):
                raise
            pause = backoff.pause(retry, _draw)
            logger.warning("efs_router: reading SSM parameter %s: %s (attempt %d of %d), trying again in %.2f s",
                           name, error_code(e), retry + 1, backoff.attempts, pause)
            _sleep(pause)
            retry += 1
    value = parameter["Value"]
    if not isinstance(value, str):
        raise ListError("not-a-list", "not a mount target list: SSM parameter %s has no string value" % name)
    version = parameter.get("Version")
    return value, version if type(version) is int else None
