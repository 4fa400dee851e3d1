"""Where requests go and as whom: region, credentials and the one botocore client.

Region and credentials follow botocore's own chain (``AWS_DEFAULT_REGION``, the profile,
the config file; ``AWS_REGION`` is honoured too). dynaorm only fills gaps for a *loopback*
endpoint (DynamoDB Local, a moto server on this machine): a region when none is
configured, and :data:`LOOPBACK_ACCESS_KEY` / :data:`LOOPBACK_SECRET_KEY` when no
credentials are configured, so that the CLI, the pytest plugin, the demo and applications
all see the same DynamoDB Local database (it keeps one per access key and region).
Configured credentials are never replaced.
"""

from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

import botocore.config
import botocore.session

from dynaorm.errors import DynaormError

__all__ = [
    "LOOPBACK_ACCESS_KEY",
    "LOOPBACK_REGION",
    "LOOPBACK_SECRET_KEY",
    "MAX_POOL_CONNECTIONS",
    "client_settings",
    "create_client",
    "is_loopback",
    "local_only",
    "resolve_region",
]

#: the access key every loopback endpoint gets where no credentials are configured
#: (DynamoDB Local accepts only letters and digits in one)
LOOPBACK_ACCESS_KEY = "dynaormlocal"
#: its secret (DynamoDB Local and moto accept any; botocore needs some to sign)
LOOPBACK_SECRET_KEY = "dynaormlocal"
#: the region a loopback endpoint gets where none is configured
LOOPBACK_REGION = "us-east-1"
#: connections the client keeps open: at least the widest fan-out (scatter-gather reads)
MAX_POOL_CONNECTIONS = 64

_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})


def is_loopback(endpoint_url: str | None) -> bool:
    """Whether ``endpoint_url`` points at this machine (DynamoDB Local, a moto server)."""
    if not endpoint_url:
        return False
    try:
        host = urlparse(endpoint_url).hostname or ""
    except ValueError:
        return False
    return host in _LOOPBACK_HOSTS or host.startswith("127.")


def _effective_endpoint(endpoint_url: str | None) -> str | None:
    """The endpoint botocore will use: the given one, else the environment's."""
    return (endpoint_url or os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
            or os.environ.get("AWS_ENDPOINT_URL") or None)


def resolve_region(region: str | None, session: Any, endpoint_url: str | None,
                   table: str = "?") -> str:
    """The region to sign for: ``region``, else ``AWS_DEFAULT_REGION``, ``AWS_REGION``,
    the profile's; for a loopback endpoint :data:`LOOPBACK_REGION`; else a DynaormError
    saying how to set one."""
    found = (region or os.environ.get("AWS_DEFAULT_REGION") or os.environ.get("AWS_REGION")
             or session.get_config_variable("region"))
    if found:
        return str(found)
    if is_loopback(_effective_endpoint(endpoint_url)):
        return LOOPBACK_REGION
    raise DynaormError(
        f"table {table!r}: no AWS region configured; pass Table(region=...), set "
        "AWS_REGION or AWS_DEFAULT_REGION, or put 'region = ...' in your AWS profile "
        "(~/.aws/config)")


def local_only(session: Any, endpoint_url: str | None) -> bool:
    """For a loopback endpoint, make ``session`` use only configured credentials (no
    instance-metadata probe) and say ``True``; else ``False`` and change nothing."""
    if not is_loopback(_effective_endpoint(endpoint_url)):
        return False
    resolver = session.get_component("credential_provider")
    for method in ("container-role", "iam-role"):
        resolver.remove(method)
    return True


def client_settings(session: Any, endpoint_url: str | None, region: str | None, *,
                    table: str = "?", connect_timeout: float = 15,
                    read_timeout: float = 30, has_credentials: bool | None = None,
                    ) -> tuple[dict[str, Any], dict[str, Any]]:
    """What every dynaorm client is created with, sync or async: ``create_client``'s
    keyword arguments (region, endpoint, loopback credentials) and ``Config``'s.

    botocore's retries are off (dynaorm retries), parameter validation is off (dynaorm
    builds the requests), and the pool holds :data:`MAX_POOL_CONNECTIONS` connections so
    concurrent reads never wait for one. ``has_credentials``: whether the session has
    credentials (asked of the session when ``None``; an async session's caller awaits it
    after :func:`local_only`).
    """
    name = resolve_region(region, session, endpoint_url, table)
    kwargs: dict[str, Any] = {"region_name": name, "endpoint_url": endpoint_url}
    if local_only(session, endpoint_url):
        if has_credentials is None:
            has_credentials = session.get_credentials() is not None
        if not has_credentials:
            kwargs.update(aws_access_key_id=LOOPBACK_ACCESS_KEY,
                          aws_secret_access_key=LOOPBACK_SECRET_KEY)
    config = {"parameter_validation": False, "connect_timeout": connect_timeout,
              "read_timeout": read_timeout, "max_pool_connections": MAX_POOL_CONNECTIONS,
              "retries": {"total_max_attempts": 1, "mode": "standard"}}
    return kwargs, config


def create_client(endpoint_url: str | None, region: str | None, *,
                  table: str = "?", connect_timeout: float = 15,
                  read_timeout: float = 30) -> Any:
    """A DynamoDB botocore client with botocore's own retries off (dynaorm retries);
    see :func:`client_settings`."""
    session = botocore.session.get_session()
    kwargs, config = client_settings(session, endpoint_url, region, table=table,
                                     connect_timeout=connect_timeout,
                                     read_timeout=read_timeout)
    return session.create_client("dynamodb", config=botocore.config.Config(**config),
                                 **kwargs)
