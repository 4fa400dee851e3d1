"""Tracing's caches change nothing it emits (issue 70): a random program of commits (a
unique email taken now and then: refused), deletes, gets, ``get_many`` calls and scan
pages, with throttles, server errors and lost answers injected, run from an empty table
three times: *cold* (every template the hook caches, the endpoint's attributes included,
made anew before each step), *warm* (made once, reused), and under a sampler that drops
everything. Warm and cold emit exactly the same spans (names, kinds, parents, attributes,
status, exception events) and metric points; the sampled-out run exports no span, builds
no attempt attribute and records the same metric points. On moto alone: none of this
depends on the engine (the last test on DynamoDB Local: dynaorm's own wire)."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from dynaorm import DynaormError, Session
from dynaorm.protocol import metrics, tracing
from dynaorm.testing import inject_faults
from tests.integration.test_telemetry import Member, shop
from tests.support.examples import examples
from tests.support.fault_kinds import arm

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

IDS = st.sampled_from(["m1", "m2", "m3"])
EMAILS = st.sampled_from(["a@x.com", "b@x.com"])
FAULTS = st.sampled_from(["none", "none", "throttle", "500", "lose"])
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")
STEPS = st.one_of(
    st.tuples(st.just("save"), IDS, EMAILS, FAULTS),
    st.tuples(st.just("delete"), IDS, FAULTS),
    st.tuples(st.just("get"), IDS, FAULTS),
    st.tuples(st.just("get_many"), st.lists(IDS, min_size=1, max_size=3, unique=True),
              FAULTS),
    st.tuples(st.just("scan"), FAULTS))
_CACHES = (tracing._operation_start, tracing._attempt_fixed, metrics._duration_attributes,
           metrics._capacity_attributes)


def _cold() -> None:
    """Forget every template tracing caches (the next operation makes each anew)."""
    for cache in _CACHES:
        cache.cache_clear()
    shop.db.tracing._destination = None


def _act(step: tuple[Any, ...]) -> tuple[tuple[str, ...], Callable[[], object]]:
    """The requests ``step`` may fault, and what it does."""
    kind, *args = step
    if kind in ("save", "delete"):
        member = Member(member_id=args[0], email=args[1] if kind == "save" else "a@x.com")

        def write() -> None:
            s = Session(shop)
            (s.save if kind == "save" else s.delete)(member)
            s.commit()
        return WRITES, write
    if kind == "get":
        return ("GetItem",), lambda: Session(shop).get(Member, member_id=args[0])
    if kind == "get_many":
        return ("BatchGetItem",), lambda: Session(shop).get_many(
            Member, [{"member_id": i} for i in args[0]])
    return ("Scan",), lambda: Session(shop).scan(Member).page_size(2).page()


def _span(span: Any, names: dict[int, str]) -> str:
    """What a span says, as one comparable string (its ids, times and the answer's request
    id aside; its parent by name)."""
    parent = None if span.parent is None else names.get(span.parent.span_id, "caller")
    events = [(e.name, {k: v for k, v in (e.attributes or {}).items()
                        if k != "exception.stacktrace"}) for e in span.events]
    attributes = {k: v for k, v in (span.attributes or {}).items() if k != "aws.request_id"}
    return json.dumps([span.name, span.kind.name, parent, attributes,
                       span.status.status_code.name, span.status.description, events],
                      sort_keys=True, default=str)


def _points(reader: InMemoryMetricReader) -> list[str]:
    data = reader.get_metrics_data()
    if data is None:
        return []
    return sorted(json.dumps([m.name, dict(p.attributes or {}),
                              getattr(p, "count", None), getattr(p, "value", None)],
                             sort_keys=True)
                  for rm in data.resource_metrics for sm in rm.scope_metrics
                  for m in sm.metrics for p in m.data.data_points)


def _run(program: list[tuple[Any, ...]], cold: bool, sampler: Any = None,
         meters: bool = True) -> tuple[list[list[str]], list[str], list[str]]:
    """``program`` from an empty table: the spans of each step, the metric points, and
    how each step ended (``meters``: with a meter provider)."""
    shop.delete()
    shop.create()  # (its requests, outside any operation, are spans of their own)
    _cold()
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    provider = TracerProvider() if sampler is None else TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    shop.db.tracing.tracer_provider = provider
    shop.db.tracing.metrics.meter_provider = MeterProvider(
        metric_readers=[reader]) if meters else None
    spans, ended = [], []
    for step in program:
        if cold:
            _cold()
        exporter.clear()
        operations, act = _act(step)
        with inject_faults(shop) as faults:
            arm(faults, operations, step[-1])
            try:
                act()
                ended.append("ok")
            except DynaormError as exc:
                ended.append(type(exc).__name__)
        finished = exporter.get_finished_spans()
        names = {s.context.span_id: s.name for s in finished if s.context is not None}
        spans.append(sorted(_span(s, names) for s in finished))
    return spans, _points(reader), ended


@pytest.fixture
def fresh_shop(backend: str | None) -> Any:
    name, wait = shop.name, shop.max_wait
    shop.name = name + "_caches"
    shop.max_wait = 0  # (faults retried without waiting)
    shop.connect(backend)
    try:
        yield shop
    finally:
        shop.db.tracing.tracer_provider = None
        shop.db.tracing.metrics.meter_provider = None
        shop.delete()
        shop.name, shop.max_wait = name, wait
        shop.connect(backend)


@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck))
@given(program=st.lists(STEPS, min_size=1, max_size=6))
def test_cached_templates_emit_exactly_what_cold_ones_do(
        fresh_shop: Any, program: list[tuple[Any, ...]]) -> None:
    cold = _run(program, cold=True)
    warm = _run(program, cold=False)
    assert warm == cold
    assert any(cold[0]) and all(len(step) >= 2 for step in cold[0])  # (spans were made)
    dropped = _run(program, cold=False, sampler=ALWAYS_OFF)
    assert dropped[0] == [[] for _ in program]  # no span at all
    assert dropped[1:] == cold[1:]  # the same metric points, the same outcomes
    assert tracing._attempt_fixed.cache_info().currsize == 0  # no attempt attribute built
    assert not shop.db.tracing._open


@settings(max_examples=examples(4), deadline=None, suppress_health_check=list(HealthCheck))
@given(program=st.lists(STEPS, min_size=1, max_size=5))
def test_quiet_dropped_operations_emit_nothing_and_end_as_traced_ones(
        fresh_shop: Any, program: list[tuple[Any, ...]]) -> None:
    """Sampled out with no meter provider and nothing for its attempts to do (the route
    said to be dynaorm's own wire, no instrumentation imported), each operation is quiet:
    its token is its dropped span alone, its attempts never reach the hook; the program
    ends as a traced run does, no span is exported, nothing is left open, no attempt
    attribute is built."""
    import sys

    traced = _run(program, cold=False)
    hook = shop.db.tracing
    routes, instrumentation = hook._routes, sys.modules.pop(
        "opentelemetry.instrumentation", None)
    seen: list[str] = []
    started = hook.on_start
    hook._routes = lambda session: False
    hook.on_start = lambda phase: (seen.append(getattr(phase, "operation", "")),  # type: ignore
                                   started(phase))[1]
    try:
        quiet = _run(program, cold=False, sampler=ALWAYS_OFF, meters=False)
    finally:
        hook._routes = routes
        del hook.on_start
        if instrumentation is not None:
            sys.modules["opentelemetry.instrumentation"] = instrumentation
    assert quiet == ([[] for _ in program], [], traced[2])
    assert set(seen) <= {"", "CreateTable", "DeleteTable", "DescribeTable"}  # (only the
    # table's administration, between runs: no attempt of the program reached the hook)
    assert tracing._attempt_fixed.cache_info().currsize == 0
    assert not hook._open


def test_each_tracer_is_asked_once_per_operation(
        fresh_shop: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """A traced operation asks each tracer whether it is active once (the client's
    policy, read once per operation): the one before an active one, and the active one,
    not again when the active ones are gathered."""
    from dynaorm import Hook

    shop.create()
    asked: list[str] = []

    class Idle(Hook):
        def active(self) -> bool:
            asked.append("idle")
            return False

    client, hook = shop.db, shop.db.tracing
    active = hook.active
    monkeypatch.setattr(hook, "active", lambda: (asked.append("tracing"), active())[1])
    monkeypatch.setattr(client, "_tracers", (Idle(), hook))
    hook.tracer_provider = TracerProvider()
    assert Session(shop).get(Member, member_id="m1") is None
    assert asked == ["idle", "tracing"]


@pytest.mark.engines("local")  # (dynaorm's own wire: moto's in-process mock is botocore's)
def test_a_dropped_operations_attempts_are_not_reported_to_tracing(
        fresh_shop: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """With nothing for them to do (no meter provider, no botocore client, no
    instrumentation imported), a dropped operation's attempts never reach the hook: it
    puts itself in ``Operation.quiet`` and the pump runs them as with no hook at all.
    With a meter provider they do (their metrics are recorded all the same)."""
    import sys

    if shop.db.transport.botocore:
        pytest.skip("botocore's client needs the attempts")
    monkeypatch.delitem(sys.modules, "opentelemetry.instrumentation", raising=False)  # (as
    # in a process that imports none: another test may have)
    shop.create()
    hook = shop.db.tracing
    seen: list[str] = []
    started = hook.on_start
    monkeypatch.setattr(hook, "on_start", lambda phase: (
        seen.append(type(phase).__name__), started(phase))[1])
    hook.tracer_provider = TracerProvider(sampler=ALWAYS_OFF)
    assert Session(shop).get(Member, member_id="m1") is None
    assert seen == ["Operation"]
    hook.metrics.meter_provider = MeterProvider(metric_readers=[InMemoryMetricReader()])
    assert Session(shop).get(Member, member_id="m1") is None
    assert seen == ["Operation", "Operation", "Attempt"]
