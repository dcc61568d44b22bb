"""Reading the list from SSM Parameter Store: the only part that needs boto3 (the ``ssm`` extra)."""

from __future__ import annotations

from typing import Any, Optional, Tuple

from .errors import ListError


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


def _read_parameter_version(name: str, client: Any) -> Tuple[str, Optional[int]]:
    """The value of the SSM parameter ``name`` and its version (for the report; None if the answer has none)."""
    if client is None:
        client = _ssm_client()
    parameter = client.get_parameter(Name=name)["Parameter"]
    value = parameter["Value"]
    if not isinstance(value, str):
        raise ListError("not-a-list", "not a mount target list: SSM parameter %s has no string value" % name)
    version = parameter.get("Version")
    return value, version if type(version) is int else None
