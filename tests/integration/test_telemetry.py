"""OpenTelemetry's stable database conventions and metrics (contract 22), with the SDK's
in-memory span exporter and metric reader, on every engine: spans say ``db.system.name``
``aws.dynamodb``, ``db.operation.name`` and ``db.collection.name`` (the older ``db.system``
and ``db.operation`` only when ``OTEL_SEMCONV_STABILITY_OPT_IN`` holds ``database/dup``);
each attempt records ``db.client.operation.duration`` (seconds, stable attributes,
``error.type`` on a failure) and its consumed capacity by table, entity and row role.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dynaorm import Entity, Session, Table, Unique, UniqueConstraintError
from dynaorm.testing import worker_suffix
from tests.conftest import engine_of

pytestmark = [pytest.mark.sync_only,  # (the hook's providers are the test's own)
              pytest.mark.engines("moto", "local", "dynoxide")]

shop = Table("otel_shop", return_consumed_capacity="INDEXES")


class Member(Entity):
    class Meta:
        table = shop
        pk = "MEMBER#{member_id}"
        sk = "MEMBER"
        unique = (Unique("email"),)

    member_id: str
    email: str


class Observed:
    """The test's providers, attached to the table's client."""

    def __init__(self) -> None:
        self.spans = InMemorySpanExporter()
        self.tracer_provider = TracerProvider()
        self.tracer_provider.add_span_processor(SimpleSpanProcessor(self.spans))
        self.reader = InMemoryMetricReader()
        self.meter_provider = MeterProvider(metric_readers=[self.reader])

    def points(self, name: str) -> list[Any]:
        data = self.reader.get_metrics_data()
        if data is None:  # (nothing recorded at all)
            return []
        return [p for rm in data.resource_metrics for sm in rm.scope_metrics
                for m in sm.metrics if m.name == name for p in m.data.data_points]

    def unit(self, name: str) -> str:
        data = self.reader.get_metrics_data()
        (found,) = {m.unit for rm in data.resource_metrics for sm in rm.scope_metrics
                    for m in sm.metrics if m.name == name}
        return str(found)


@pytest.fixture
def observed(backend: str | None) -> Iterator[Observed]:
    name = shop.name
    shop.name = name + worker_suffix()
    shop.connect(backend)
    seen = Observed()
    try:
        shop.delete()
        shop.create()
        shop.db.tracing.tracer_provider = seen.tracer_provider
        shop.db.tracing.metrics.meter_provider = seen.meter_provider
        yield seen
    finally:
        shop.db.tracing.tracer_provider = None
        shop.db.tracing.metrics.meter_provider = None
        shop.delete()
        shop.name = name


def _attempts(observed: Observed) -> list[Any]:
    return [s for s in observed.spans.get_finished_spans() if s.name.startswith("DynamoDB.")]


def test_spans_follow_the_stable_database_conventions(observed: Observed) -> None:
    s = Session(shop)
    s.save(Member(member_id="m1", email="a@example.com"))
    s.commit()
    assert Session(shop).get(Member, member_id="m1").email == "a@example.com"
    spans = _attempts(observed)
    assert [s.name for s in spans] == ["DynamoDB.TransactWriteItems", "DynamoDB.GetItem"]
    for span in spans:
        attributes = dict(span.attributes or {})
        assert attributes["db.system.name"] == "aws.dynamodb"
        assert attributes["db.operation.name"] == span.name.split(".")[1]
        assert attributes["db.collection.name"] == shop.name
        assert "db.system" not in attributes and "db.operation" not in attributes
    (get,) = [s for s in observed.spans.get_finished_spans() if s.name == "dynaorm.get"]
    assert get.attributes["db.system.name"] == "aws.dynamodb"


def test_the_older_names_too_when_the_opt_in_asks_for_both(
        observed: Observed, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "http,database/dup")
    again = Observed()  # (the opt-in is read when a provider is first seen)
    shop.db.tracing.tracer_provider = again.tracer_provider
    Session(shop).get(Member, member_id="nobody")
    (span,) = _attempts(again)
    attributes = dict(span.attributes or {})
    assert attributes["db.system"] == "dynamodb" and attributes["db.operation"] == "GetItem"
    assert attributes["db.system.name"] == "aws.dynamodb"
    assert attributes["db.operation.name"] == "GetItem"
    monkeypatch.setenv("OTEL_SEMCONV_STABILITY_OPT_IN", "database")
    stable = Observed()
    shop.db.tracing.tracer_provider = stable.tracer_provider
    Session(shop).get(Member, member_id="nobody")
    (span,) = _attempts(stable)
    assert "db.system" not in dict(span.attributes or {})


def test_each_attempt_records_its_duration_and_capacity_by_entity_and_role(
        observed: Observed, request: pytest.FixtureRequest) -> None:
    s = Session(shop)
    s.save(Member(member_id="m1", email="a@example.com"))
    s.commit()
    Session(shop).get(Member, member_id="m1")
    s = Session(shop)
    s.save(Member(member_id="m2", email="a@example.com"))
    with pytest.raises(UniqueConstraintError):  # (the email is taken: refused)
        s.commit()
    durations = observed.points("db.client.operation.duration")
    assert observed.unit("db.client.operation.duration") == "s"
    by_operation = {(p.attributes["db.operation.name"], p.attributes.get("error.type")): p
                    for p in durations}
    assert set(by_operation) == {("TransactWriteItems", None), ("GetItem", None),
                                 ("TransactWriteItems", "TransactionCanceledException")}
    for point in durations:
        assert point.attributes["db.system.name"] == "aws.dynamodb"
        assert point.attributes["db.collection.name"] == shop.name
        assert point.count == 1 and 0 < point.sum < 30
    capacity = {(p.attributes["dynaorm.entity"], p.attributes["dynaorm.row_role"]): p.value
                for p in observed.points("dynaorm.consumed_capacity")}
    assert capacity[("Member", "read")] == 0.5  # (the get: a strongly... eventually
    if engine_of(request) != "moto":  # consistent read of one small item)
        assert capacity[("Member", "row")] > 0  # (moto answers TransactWriteItems
        assert capacity[("Member", "unique_guard")] > 0  # with no ConsumedCapacity)
    for point in observed.points("dynaorm.consumed_capacity"):
        assert point.attributes["db.collection.name"] == shop.name


def test_no_meter_provider_records_nothing_and_spans_still_go(observed: Observed) -> None:
    shop.db.tracing.metrics.meter_provider = None
    Session(shop).get(Member, member_id="nobody")
    assert observed.points("db.client.operation.duration") == []
    assert len(_attempts(observed)) == 1


def test_metrics_are_recorded_with_only_a_meter_provider(observed: Observed) -> None:
    """No tracer provider at all (the suite sets no global one), a meter provider: every
    attempt still records its duration and capacity, and no span is made."""
    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        pytest.skip("this process configured a global tracer provider")
    shop.db.tracing.tracer_provider = None
    assert shop.db.tracing in shop.db.policy.hooks  # the meter provider alone attaches it
    s = Session(shop)
    s.save(Member(member_id="m1", email="a@example.com"))
    s.commit()
    assert Session(shop).get(Member, member_id="m1") is not None
    durations = observed.points("db.client.operation.duration")
    assert sorted(p.attributes["db.operation.name"] for p in durations) == [
        "GetItem", "TransactWriteItems"]
    assert all(p.count == 1 and p.attributes["db.collection.name"] == shop.name
               for p in durations)
    capacity = {(p.attributes["dynaorm.entity"], p.attributes["dynaorm.row_role"]): p.value
                for p in observed.points("dynaorm.consumed_capacity")}
    assert capacity[("Member", "read")] == 0.5
    assert observed.spans.get_finished_spans() == ()
    shop.db.tracing.enabled = False  # off: neither spans nor metrics
    try:
        assert shop.db.tracing not in shop.db.policy.hooks
        Session(shop).get(Member, member_id="m1")
    finally:
        shop.db.tracing.enabled = True
    assert sum(p.count for p in observed.points("db.client.operation.duration")) == 2



#: attributes whose value is the endpoint's or the answer's own (checked apart)
_WHERE = ("cloud.region", "server.address", "server.port", "aws.request_id")


def _said(span: Any) -> dict[str, Any]:
    return {k: v for k, v in dict(span.attributes or {}).items() if k not in _WHERE}


def test_a_commit_and_a_get_carry_exactly_their_attributes(
        observed: Observed, request: pytest.FixtureRequest) -> None:
    """Every attribute of a traced commit's and get's spans, by name and value: what
    they said before an attempt's span on dynaorm's own wire was made at its end and its
    attributes from templates made once (none lost, none added, none changed)."""
    s = Session(shop)
    s.save(Member(member_id="m1", email="a@example.com"))
    s.commit()
    Session(shop).get(Member, member_id="m1")
    spans = {span.name: span for span in observed.spans.get_finished_spans()}
    assert sorted(spans) == ["DynamoDB.GetItem", "DynamoDB.TransactWriteItems",
                             "dynaorm.commit", "dynaorm.get"]
    common = {"rpc.system": "aws-api", "rpc.service": "DynamoDB",
              "db.system.name": "aws.dynamodb", "aws.dynamodb.table_names": (shop.name,),
              "db.collection.name": shop.name, "dynaorm.entity_types": ("Member",)}
    read = {"dynaorm.capacity.Member.read": 0.5}
    get_capacity = (json.dumps({"TableName": shop.name, "CapacityUnits": 0.5,
                                "Table": {"CapacityUnits": 0.5}}),)
    attempt = {"dynaorm.attempt": 1, "dynaorm.outcome": "ok", "http.status_code": 200,
               "http.response.status_code": 200}
    assert _said(spans["dynaorm.get"]) == {
        **common, "dynaorm.operation": "get", "dynaorm.session": "sync",
        "dynaorm.attempts": 1, "dynaorm.outcome": "ok", "rpc.method": "GetItem",
        "dynaorm.consumed_capacity": 0.5, **read}
    assert _said(spans["DynamoDB.GetItem"]) == {
        **common, **attempt, **read, "rpc.method": "GetItem",
        "db.operation.name": "GetItem", "dynaorm.actions": 1,
        "aws.dynamodb.consumed_capacity": get_capacity}
    commit = _said(spans["dynaorm.commit"])
    written = _said(spans["DynamoDB.TransactWriteItems"])
    units = {k: commit.pop(k) for k in list(commit) if "capacity" in k}
    assert commit == {**common, "dynaorm.operation": "commit", "dynaorm.session": "sync",
                      "dynaorm.attempts": 1, "dynaorm.outcome": "ok",
                      "rpc.method": "TransactWriteItems"}
    reported = {k: written.pop(k) for k in list(written) if "capacity" in k}
    assert written == {**common, **attempt, "rpc.method": "TransactWriteItems",
                       "db.operation.name": "TransactWriteItems", "dynaorm.actions": 2}
    if engine_of(request) != "moto":  # (moto's TransactWriteItems reports no capacity)
        (raw,) = reported.pop("aws.dynamodb.consumed_capacity")
        assert reported == {k: v for k, v in units.items() if k.count(".") == 3}
        assert units["dynaorm.consumed_capacity"] == json.loads(raw)["CapacityUnits"] == sum(
            reported.values())
        assert set(reported) == {"dynaorm.capacity.Member.row",
                                 "dynaorm.capacity.Member.unique_guard"}
    else:
        assert reported == units == {}
    for span in spans.values():
        said = dict(span.attributes or {})
        if span.name.startswith("DynamoDB."):
            assert said["cloud.region"] and said["server.address"] and said["aws.request_id"]
            assert isinstance(said["server.port"], int)
        else:
            assert not set(_WHERE) & set(said)


def test_a_sampled_out_operation_makes_no_span_and_still_records_its_metrics(
        observed: Observed) -> None:
    """A tracer provider whose sampler drops everything, beside the meter provider: no
    span is exported, and each attempt records its duration and capacity as a traced one
    does (a dropped operation's attempts skip only their spans)."""
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    dropped = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(dropped))
    shop.db.tracing.tracer_provider = provider
    s = Session(shop)
    s.save(Member(member_id="m1", email="a@example.com"))
    s.commit()
    assert Session(shop).get(Member, member_id="m1") is not None
    assert dropped.get_finished_spans() == () == observed.spans.get_finished_spans()
    durations = observed.points("db.client.operation.duration")
    assert sorted((p.attributes["db.operation.name"], p.count) for p in durations) == [
        ("GetItem", 1), ("TransactWriteItems", 1)]
    for point in durations:
        assert point.attributes["db.collection.name"] == shop.name
        assert point.attributes["db.system.name"] == "aws.dynamodb"
    capacity = {(p.attributes["dynaorm.entity"], p.attributes["dynaorm.row_role"]): p.value
                for p in observed.points("dynaorm.consumed_capacity")}
    assert capacity[("Member", "read")] == 0.5


_GLOBAL_METER = """
import sys
from opentelemetry import metrics
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
reader = InMemoryMetricReader()
metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
from dynaorm import Client, RequestError
from dynaorm.protocol.steps import call
client = Client(sys.argv[1], "us-east-1")
try:
    client.driver.run(call("GetItem", {"TableName": "dynaorm-none-such",
                                       "Key": {"pk": {"S": "a"}, "sk": {"S": "b"}}}))
except RequestError as exc:
    print(exc.code)
data = reader.get_metrics_data()
print(sorted((m.name, p.attributes["db.operation.name"], p.attributes.get("error.type"))
             for rm in data.resource_metrics for sm in rm.scope_metrics for m in sm.metrics
             for p in m.data.data_points))
from opentelemetry import trace
print(type(trace.get_tracer_provider()).__name__)
"""


def test_the_global_meter_provider_alone_records_metrics(backend: str | None) -> None:
    """A process that sets OpenTelemetry's global meter provider and no tracer provider
    (set once per process: run in a child): its requests record their duration, the
    failed one with its ``error.type``."""
    import os
    import subprocess
    import sys

    if backend is None:
        pytest.skip("moto's in-process mock is not reachable from another process")
    env = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x",
           **{k: v for k, v in os.environ.items() if not k.startswith(("OTEL_", "DD_"))}}
    out = subprocess.run([sys.executable, "-c", _GLOBAL_METER, backend], capture_output=True,
                         text=True, env=env, check=True, timeout=120)
    code, points, tracer_provider = out.stdout.strip().splitlines()
    assert code == "ResourceNotFoundException", out.stderr
    assert points == str([("db.client.operation.duration", "GetItem",
                           "ResourceNotFoundException")])
    assert tracer_provider == "ProxyTracerProvider"  # (no tracer provider: no spans)
