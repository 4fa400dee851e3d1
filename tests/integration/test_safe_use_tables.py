"""``use_tables`` never deletes a table on AWS (issue 59, point 1): with no endpoint outside
moto, or an endpoint on an AWS domain, it refuses before sending anything; on a test engine
(the in-process moto, DynamoDB Local) it still creates and deletes fresh tables."""

from __future__ import annotations

import os

import pytest

from dynaorm import Entity, RequestEvent, Session
from dynaorm.client.table import Table
from dynaorm.testing import NotATestEngineError, use_tables, worker_suffix
from dynaorm.testing.engines import check_test_engine

#: credentials that look like real ones (AWS's documented example keys)
REAL_LOOKING = {"AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
                "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "AWS_REGION": "us-east-1"}


@pytest.fixture
def aws_like(monkeypatch: pytest.MonkeyPatch, tmp_path: object) -> None:
    """The environment of a developer's shell with real credentials and no endpoint."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE",
                 "DYNAORM_TEST_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", f"{tmp_path}/none")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", f"{tmp_path}/none")
    for name, value in REAL_LOOKING.items():
        monkeypatch.setenv(name, value)


def _sent(table: Table) -> list[RequestEvent]:
    events: list[RequestEvent] = []
    table.on_request(events.append)
    return events


@pytest.mark.parametrize("endpoint", [None, "https://dynamodb.us-east-1.amazonaws.com",
                                      "https://dynamodb.us-east-1.api.aws",
                                      "https://dynamodb.cn-north-1.amazonaws.com.cn"])
def test_refuses_aws_before_sending(aws_like: None, endpoint: str | None) -> None:
    prod, other = Table("orders-prod"), Table("audit-prod")
    events, also = _sent(prod), _sent(other)
    with (pytest.raises(NotATestEngineError, match="orders-prod") as caught,
          use_tables(prod, other, endpoint_url=endpoint)):
        raise AssertionError("the block must not run")
    assert caught.value.table == "orders-prod" and caught.value.endpoint == endpoint
    assert events == also == []  # no DeleteTable, no CreateTable: nothing was sent
    assert prod.name == "orders-prod" and prod.endpoint_url is None  # bound back


def test_a_configured_aws_endpoint_is_refused_too(aws_like: None,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "https://dynamodb.eu-west-1.amazonaws.com")
    with (pytest.raises(NotATestEngineError, match=r"eu-west-1\.amazonaws\.com"),
          use_tables(Table("orders-prod"))):
        pass


class Order(Entity):
    order_id: str

    class Meta:
        table = Table("safe-orders")
        pk = "ORDER#{order_id}"
        sk = "ORDER"


def test_still_works_on_test_engines(backend: str | None) -> None:
    """The in-process moto (no endpoint inside ``moto_backend``) and DynamoDB Local (a
    loopback endpoint) are test engines: fresh tables, usable, deleted afterwards."""
    table = Order.Meta.table
    with use_tables(table, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        with Session(table) as s:
            s.save(Order(order_id="o1"))
        assert [i["order_id"] for i in tb.scan()] == ["o1"]
    assert table.name == "safe-orders"


# -- hosts that may lead to AWS (issue 59: "accepts a raw AWS IP or a company DNS name") ----
@pytest.fixture
def no_dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every host name looked up (none may be: the rule reads the URL, never DNS)."""
    import socket

    looked: list[str] = []

    def lookup(host: object, *args: object, **kwargs: object) -> object:
        looked.append(str(host))
        raise socket.gaierror("the engine check never resolves a name")

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return looked


#: endpoints 0.7's first fix took for test engines though each may lead to DynamoDB itself
ELSEWHERE = [
    "https://52.94.0.10",  # an address in AWS's published ranges (DynamoDB us-east-1)
    "http://10.0.12.7:443",  # a VPC interface endpoint's private address
    "https://dynamodb.corp.example.com",  # a company name whose CNAME leads to AWS
    "http://dynamodb-local:8000",  # a container's name: fine, once named (below)
    "http://127.0.0.1.nip.io:8000",  # a name that resolves to loopback today
    "http://localhost.corp.example.com:8000", "http://0.0.0.0:8000",
    "http://[2600:1f18::1]:8000", "http://169.254.169.254",
]


@pytest.mark.parametrize("endpoint", ELSEWHERE)
def test_a_host_not_on_this_machine_is_refused_unless_named(
        aws_like: None, no_dns: list[str], monkeypatch: pytest.MonkeyPatch,
        endpoint: str) -> None:
    """The honest rule: a test engine is moto in process, an endpoint on this machine
    (``localhost``, ``*.localhost``, ``127.0.0.0/8``, ``::1``), or a host the user names in
    ``DYNAORM_TEST_HOSTS``. A name or an address elsewhere can lead to DynamoDB itself and
    dynaorm resolves none to find out; naming one is the user's word that it does not."""
    table = Table("orders-prod")
    events = _sent(table)
    with (pytest.raises(NotATestEngineError, match="DYNAORM_TEST_HOSTS") as caught,
          use_tables(table, endpoint_url=endpoint)):
        raise AssertionError("the block must not run")
    assert caught.value.endpoint == endpoint and events == [] and no_dns == []
    from urllib.parse import urlparse

    host = str(urlparse(endpoint).hostname)
    monkeypatch.setenv("DYNAORM_TEST_HOSTS", f"other-engine, {host.upper()}")
    check_test_engine(table.connect(endpoint))  # named: taken, nothing sent
    assert events == [] and no_dns == []


@pytest.mark.parametrize("endpoint", [
    "http://localhost:8000", "http://LOCALHOST:8000", "http://engine.localhost:8000",
    "http://127.0.0.1:8000", "http://127.8.9.10:8000", "http://[::1]:8000",
    "http://[::ffff:127.0.0.1]:8000"])
def test_an_endpoint_on_this_machine_is_a_test_engine(aws_like: None, no_dns: list[str],
                                                      endpoint: str) -> None:
    table = Table("orders-test")
    table.connect(endpoint)
    check_test_engine(table)
    assert no_dns == []


@pytest.mark.parametrize("endpoint", ["https://dynamodb.us-east-1.amazonaws.com",
                                      "https://localhost.amazonaws.com"])
def test_naming_an_aws_host_does_not_make_it_a_test_engine(
        aws_like: None, monkeypatch: pytest.MonkeyPatch, endpoint: str) -> None:
    from urllib.parse import urlparse

    monkeypatch.setenv("DYNAORM_TEST_HOSTS", str(urlparse(endpoint).hostname))
    table = Table("orders-prod")
    table.connect(endpoint)
    with pytest.raises(NotATestEngineError, match="the AWS endpoint"):
        check_test_engine(table)


@pytest.mark.sync_only
def test_a_named_host_works_end_to_end(ddb_local: str,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """An engine reached by a name (this machine's host name here, as a container's would
    be) is refused, then taken once named in ``DYNAORM_TEST_HOSTS``: fresh tables, usable
    (on DynamoDB Local, which listens on every address; the in-process moto has no host)."""
    import socket
    from urllib.parse import urlparse

    backend = ddb_local
    name = socket.gethostname().lower()
    try:
        socket.getaddrinfo(name, None)
    except OSError:
        pytest.skip(f"this machine's name {name!r} does not resolve")
    endpoint = backend.replace(str(urlparse(backend).hostname), name, 1)
    table = Order.Meta.table
    with pytest.raises(NotATestEngineError), use_tables(table, endpoint_url=endpoint):
        pass
    monkeypatch.setenv("DYNAORM_TEST_HOSTS", name)
    for variable, value in (("AWS_REGION", "us-east-1"), ("AWS_ACCESS_KEY_ID", "test"),
                            ("AWS_SECRET_ACCESS_KEY", "test")):  # (stand-ins are loopback's)
        monkeypatch.setenv(variable, os.environ.get(variable, value))
    with use_tables(table, endpoint_url=endpoint, name_suffix=worker_suffix()) as tb:
        with Session(table) as s:
            s.save(Order(order_id="n1"))
        assert [i["order_id"] for i in tb.scan()] == ["n1"]


def test_a_requests_call_to_aws_inside_the_embedded_moto_is_refused_never_sent() -> None:
    """moto starts for botocore alone (its services' routes for the ``requests`` library
    are left out of the start): its catch-all for AWS's domains still answers a
    ``requests`` call, which never passes through to the network."""
    requests = pytest.importorskip("requests")
    from dynaorm.testing import moto_backend

    with moto_backend():
        got = requests.get("https://s3.amazonaws.com/a-bucket/a-key", timeout=5)
    assert (got.status_code, got.text) == (400, "The method is not implemented")
