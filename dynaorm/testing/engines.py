"""Where :func:`~dynaorm.testing.use_tables` may delete and create tables: on a test
engine only, never on AWS itself (issue 59: with no endpoint, outside moto, it sent
``DeleteTable`` to AWS with the shell's credentials).

A table's requests go to a test engine when moto answers them in process
(:func:`~dynaorm.testing.moto_backend`, or the caller's own ``mock_aws``), or when its
endpoint (given, or configured: ``AWS_ENDPOINT_URL_DYNAMODB``, ...) is on this machine
(``localhost``, ``*.localhost``, ``127.0.0.0/8``, ``::1``: DynamoDB Local, a moto server,
dynoxide) or on a host named in ``DYNAORM_TEST_HOSTS`` (an engine in a container,
``DYNAORM_TEST_HOSTS=dynamodb-local``). Nothing else is: a host name can point anywhere
(a company name whose DNS leads to DynamoDB), and so can an address (AWS's own, a VPC
endpoint's private one), and dynaorm resolves none to find out. An endpoint on an AWS
domain is refused even when named. Anything refused is a :class:`NotATestEngineError`
before a request is sent (or a name looked up).
"""

import ipaddress
import os
from urllib.parse import urlparse

from dynaorm import DynaormError, Table
from dynaorm.private_apis import moto_active

#: the environment variable naming hosts besides this machine's that are test engines
#: (comma-separated host names or addresses: ``dynamodb-local,10.0.0.7``)
TEST_HOSTS = "DYNAORM_TEST_HOSTS"


class NotATestEngineError(DynaormError):
    """:func:`use_tables` (and so :func:`tables_fixture`) was asked to delete and create
    tables somewhere that may be AWS itself: no endpoint outside an in-process moto (AWS's
    endpoint for the region, with whatever credentials the chain finds), an endpoint on an
    AWS domain, or one on a host neither on this machine nor named in
    ``DYNAORM_TEST_HOSTS``. Raised before any request is sent. ``table`` names the table
    and ``endpoint`` where it points (``None``: AWS's endpoint for the region)."""

    def __init__(self, message: str, *, table: str, endpoint: str | None):
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

    hosts = []
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


def _loopback(host: str) -> bool:
    """Whether ``host`` (as a URL gives it) names this machine by itself: ``localhost``
    (RFC 6761: never sent to DNS), or a loopback address (``127.0.0.0/8``, ``::1``, an
    IPv4-mapped loopback). A name is never resolved."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host.partition("%")[0])
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return address.is_loopback or (mapped is not None and mapped.is_loopback)




def _test_host(endpoint: str) -> bool:
    """Whether every parser reads ``endpoint``'s host as this machine or a named test
    host (see the module)."""
    named = {h.strip().lower().strip("[]").rstrip(".")
             for h in os.environ.get(TEST_HOSTS, "").split(",") if h.strip()}
    return all(host and (_loopback(host) or host in named) for host in _hosts(endpoint))


def check_test_engine(table: Table) -> None:
    """Refuse (:class:`NotATestEngineError`) unless ``table``'s requests go to a test
    engine: moto in process (:func:`moto_backend`, or the caller's own ``mock_aws``), an
    endpoint on this machine (DynamoDB Local, a moto server, dynoxide), or one on a host
    named in ``DYNAORM_TEST_HOSTS`` (an engine in a container), never one on an AWS
    domain. Without an endpoint, outside moto, requests go to AWS with the credential
    chain's credentials: deleting the table there could delete production data; a host
    name or address elsewhere may lead there too."""
    if moto_active():
        return
    endpoint = table.db.configured_endpoint
    aws = bool(endpoint) and _on_aws(endpoint or "")
    if endpoint and not aws and _test_host(endpoint):  # (localhost.amazonaws.com: AWS's)
        return
    where = (f"the AWS endpoint {endpoint}" if aws else
             f"{endpoint}, not on this machine nor named in {TEST_HOSTS} (a name or "
             "address elsewhere may lead to AWS)" if endpoint else
             "AWS (no endpoint is given or configured, and no in-process moto is on)")
    raise NotATestEngineError(
        f"use_tables: refusing to delete and create table {table.name!r} on {where}: "
        "give endpoint_url= a local engine (DynamoDB Local, a moto server), name an "
        f"engine's host in {TEST_HOSTS}, or run inside dynaorm.testing.moto_backend()",
        table=table.name, endpoint=endpoint)
