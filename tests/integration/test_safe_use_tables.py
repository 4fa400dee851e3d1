"""``use_tables`` never deletes a table on AWS (issue 59, point 1): with no endpoint outside
moto, or an endpoint on an AWS domain, it refuses before sending anything; on a test engine
(the in-process moto, DynamoDB Local) it still creates and deletes fresh tables."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from dynaorm import Entity, RequestEvent, Session
from dynaorm.client.table import Table
from dynaorm.testing import NotATestEngineError, moto_backend, use_tables, worker_suffix
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


# --- more ways to reach AWS anyway
# (moved from integration/test_fix59_red_team.py:
# Red team of issue 59's fixes (branch fix59): ways to make ``use_tables`` reach AWS
# anyway. Every refused endpoint below is refused before any request is sent; the test
# engines (the in-process moto, DynamoDB Local) still work.)


@pytest.fixture
def aws_shell(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A developer's shell: real-looking credentials, no endpoint, an empty config file
    (returned, for tests that write one)."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE",
                 "DYNAORM_TEST_ENDPOINT", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    config.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    for name, value in REAL_LOOKING.items():
        monkeypatch.setenv(name, value)
    return config




def _refused(table: Table, no_dns: list[str], **kwargs: Any) -> NotATestEngineError:
    events: list[RequestEvent] = []
    table.on_request(events.append)
    with (pytest.raises(NotATestEngineError) as caught, use_tables(table, **kwargs)):
        raise AssertionError("the block must not run")
    assert events == [] and no_dns == []  # nothing sent, not even a name looked up
    return caught.value


#: endpoints on AWS (0.7's fix59 accepted each of the first group)
AWS_ENDPOINTS = [
    # urllib3 (botocore's sender) reads the host before the backslash, the standard
    # library after the "@": fix59 took this for loopback, botocore sent it to AWS
    "http://dynamodb.us-east-1.amazonaws.com\\@127.0.0.1:8000",
    # the ISO and European sovereign partitions (botocore's partitions.json)
    "https://dynamodb.us-iso-east-1.c2s.ic.gov",
    "https://dynamodb.us-isob-east-1.sc2s.sgov.gov",
    "https://dynamodb.eu-isoe-west-1.cloud.adc-e.uk",
    "https://dynamodb.us-isof-south-1.csp.hci.ic.gov",
    "https://dynamodb.eusc-de-east-1.amazonaws.eu",
    # a "loopback" name (127.*) on AWS's domain is AWS's name, not this machine
    "https://127.0.0.1.amazonaws.com",
    # already refused by fix59: kept as regression guards
    "https://DYNAMODB.US-EAST-1.AMAZONAWS.COM",
    "http://127.0.0.1@dynamodb.us-east-1.amazonaws.com",
    "https://localhost.amazonaws.com",
    "https://dynamodb.us-east-1.amazonaws.com.",
    "https://dynamodb-fips.us-gov-west-1.amazonaws.com",
    "https://dynamodb.us-gov-east-1.amazonaws.com",
    "https://dynamodb-fips.us-east-1.api.aws",
    "https://dynamodb.us-east-1.amazonaws.com:443/",
    "https://vpce-0a1b-2c3d.dynamodb.us-east-1.vpce.amazonaws.com",
]


@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
@pytest.mark.parametrize("endpoint", AWS_ENDPOINTS)
def test_aws_endpoints_refused(aws_shell: Path, no_dns: list[str], endpoint: str,
                               wire: str) -> None:
    caught = _refused(Table("orders-prod"), no_dns, endpoint_url=endpoint, wire=wire)
    assert caught.endpoint == endpoint and caught.table == "orders-prod"


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"])
def test_environment_endpoint_on_aws_refused(aws_shell: Path, no_dns: list[str],
                                             monkeypatch: pytest.MonkeyPatch,
                                             variable: str) -> None:
    monkeypatch.setenv(variable, "http://dynamodb.us-east-1.amazonaws.com\\@localhost:8000")
    _refused(Table("orders-prod"), no_dns)


@pytest.mark.parametrize("config", [
    "[default]\nendpoint_url = https://dynamodb.us-iso-east-1.c2s.ic.gov\n",
    "[default]\nservices = prod\n[services prod]\ndynamodb =\n"
    "  endpoint_url = https://dynamodb.eu-west-1.amazonaws.com\n",
    "[default]\nuse_fips_endpoint = true\nuse_dualstack_endpoint = true\n",
])
def test_config_file_endpoint_on_aws_refused(aws_shell: Path, no_dns: list[str],
                                             config: str) -> None:
    aws_shell.write_text(config)
    _refused(Table("orders-prod"), no_dns)


def test_ignored_configured_loopback_is_aws(aws_shell: Path, no_dns: list[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A loopback endpoint in the environment that botocore is told to ignore: requests go
    to AWS, so it must not count as a test engine."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://localhost:8000")
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    assert _refused(Table("orders-prod"), no_dns).endpoint is None


def test_moto_started_then_stopped_is_aws(aws_shell: Path, no_dns: list[str]) -> None:
    table = Table("orders-prod")
    with moto_backend(), use_tables(table):
        pass  # inside moto: fine
    _refused(table, no_dns)  # after it: AWS again


def test_bound_to_an_aws_endpoint_then_no_endpoint_given(aws_shell: Path,
                                                         no_dns: list[str]) -> None:
    """A table whose client points at AWS, handed to use_tables with no endpoint: the
    table's own endpoint counts (use_tables(endpoint_url=None) does not reset it to a test
    engine)."""
    table = Table("orders-prod", endpoint_url="https://dynamodb.us-east-1.amazonaws.com")
    _refused(table, no_dns)
    assert table.endpoint_url == "https://dynamodb.us-east-1.amazonaws.com"


@pytest.mark.parametrize("endpoint", ["http://[::1]:8000", "http://127.0.0.2:8000",
                                      "http://LOCALHOST:8000"])
def test_test_engine_endpoints_accepted(aws_shell: Path, endpoint: str) -> None:
    table = Table("orders-test")
    table.connect(endpoint)
    check_test_engine(table)  # no error: not AWS


def test_loopback_parsers_keep_test_engines_usable(backend: str | None) -> None:
    """The fix keeps moto and DynamoDB Local usable (both parsers read loopback there)."""
    table = Order.Meta.table
    with use_tables(table, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        with Session(table) as s:
            s.save(Order(order_id="r1"))
        assert [i["order_id"] for i in tb.scan()] == ["r1"]


# --- nested models' aliases of every kind (issue 59, point 1b) ---------------------------


# --- a key move onto an expired item, a second writer in the window (issue 59, point 5) ---


# --- find in a migration window: a versioned entity with a unique (encrypted) field ----------
