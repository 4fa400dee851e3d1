"""Where :func:`~dynaorm.testing.use_tables` may delete and create tables: on a test
engine only, never on AWS itself (issue 59: with no endpoint, outside moto, it sent
``DeleteTable`` to AWS with the shell's credentials).

A table's requests go to a test engine when moto answers them in process
(:func:`~dynaorm.testing.moto_backend`, or the caller's own ``mock_aws``), or when its
endpoint (given, or configured: ``AWS_ENDPOINT_URL_DYNAMODB``, ...) is a loopback one
(DynamoDB Local, a moto server, dynoxide) or any other endpoint not on an AWS domain (an
engine in a container, ``http://dynamodb-local:8000``). Anything else is refused with
:class:`NotATestEngineError` before a request is sent.
"""

from __future__ import annotations

from urllib.parse import urlparse

from dynaorm.client.settings import configured_endpoint
from dynaorm.client.table import Table
from dynaorm.errors import DynaormError
from dynaorm.private_apis import moto_active

__all__ = ["AWS_DOMAINS", "NotATestEngineError", "check_test_engine"]


class NotATestEngineError(DynaormError):
    """:func:`use_tables` (and so :func:`tables_fixture`) was asked to delete and create
    tables somewhere that may be AWS itself: no endpoint outside an in-process moto (AWS's
    endpoint for the region, with whatever credentials the chain finds), or an endpoint on
    an AWS domain. Raised before any request is sent. ``table`` names the table and
    ``endpoint`` where it points (``None``: AWS's endpoint for the region)."""

    def __init__(self, message: str, *, table: str, endpoint: str | None) -> None:
        super().__init__(message)
        self.table = table
        """The table's name."""
        self.endpoint = endpoint
        """Where the table points (``None``: AWS's endpoint for the region)."""


#: the domains of AWS's own endpoints (commercial, China, dual-stack): never a test engine
#: (every other partition botocore knows, GovCloud's and the ISO and sovereign ones, too)
AWS_DOMAINS = ("amazonaws.com", "amazonaws.com.cn", "api.aws")


def _aws_domains() -> set[str]:
    from botocore.loaders import Loader

    found = set(AWS_DOMAINS)
    for partition in Loader().load_data("partitions")["partitions"]:
        outputs = partition.get("outputs", {})
        found.update(str(outputs[k]) for k in ("dnsSuffix", "dualStackDnsSuffix")
                     if outputs.get(k))
    return found


def _hosts(endpoint: str) -> list[str]:
    """The endpoint's host as each parser on the way reads it (the standard library's, and
    urllib3's, which botocore sends with): ``http://aws\\@127.0.0.1`` is 127.0.0.1 to one
    and AWS to the other. A URL either cannot read has no host (``""``)."""
    from urllib3.util import parse_url

    hosts: list[str | None] = []
    try:
        hosts.append(urlparse(endpoint).hostname)
    except ValueError:
        hosts.append(None)
    try:
        hosts.append(parse_url(endpoint).host)
    except ValueError:
        hosts.append(None)
    return [(h or "").lower().strip("[]").rstrip(".") for h in hosts]


def _on_aws(endpoint: str) -> bool:
    domains = _aws_domains()
    return any(host == d or host.endswith("." + d)
               for host in _hosts(endpoint) for d in domains)


def check_test_engine(table: Table) -> None:
    """Refuse (:class:`NotATestEngineError`) unless ``table``'s requests go to a test
    engine: moto in process (:func:`moto_backend`, or the caller's own ``mock_aws``), a
    loopback endpoint (DynamoDB Local, a moto server, dynoxide), or an endpoint given or
    configured that is not on an AWS domain (an engine in a container, ``http://ddb:8000``).
    Without an endpoint, outside moto, requests go to AWS with the credential chain's
    credentials: deleting the table there could delete production data."""
    client = table.db
    if moto_active():
        return
    # an endpoint given is the endpoint: the botocore session (and its config files) is
    # read only when none is, so the plain environment never makes one
    endpoint = client.endpoint_url or configured_endpoint(None, client._botocore_session())
    if endpoint and not _on_aws(endpoint):  # (a loopback name on AWS's domain is AWS's)
        return
    where = (f"the AWS endpoint {endpoint}" if endpoint else
             "AWS (no endpoint is given or configured, and no in-process moto is on)")
    raise NotATestEngineError(
        f"use_tables: refusing to delete and create table {table.name!r} on {where}: "
        "give endpoint_url= a local engine (DynamoDB Local, a moto server), or run inside "
        "dynaorm.testing.moto_backend()", table=table.name, endpoint=endpoint)
