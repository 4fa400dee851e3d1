"""``use_tables`` never deletes a table on AWS (issue 59, point 1): with no endpoint outside
moto, or an endpoint on an AWS domain, it refuses before sending anything; on a test engine
(the in-process moto, DynamoDB Local) it still creates and deletes fresh tables."""

from __future__ import annotations

import pytest

from dynaorm import Entity, RequestEvent, Session
from dynaorm.client.table import Table
from dynaorm.testing import NotATestEngineError, use_tables, worker_suffix

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
