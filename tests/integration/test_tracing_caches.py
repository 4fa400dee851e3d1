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

import asyncio
import inspect
import json
import logging
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, Decision, Sampler, SamplingResult
from opentelemetry.trace import NoOpTracerProvider

from dynaorm import AsyncSession, DynaormError, Entity, Hook, Session, Table, Unique
from dynaorm.protocol import metrics, tracing
from dynaorm.protocol.hooks import Attempt, Operation
from dynaorm.protocol.metrics import Metrics
from dynaorm.protocol.tracing import Tracing
from dynaorm.testing import inject_faults
from tests.integration.test_telemetry import Member, shop
from tests.support.concurrency import join_all
from tests.support.examples import examples
from tests.support.fault_kinds import arm
from tests.support.hostile import Reply, answer, json_body, serving

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

IDS = st.sampled_from(["m1", "m2", "m3"])
EMAILS = st.sampled_from(["a@x.com", "b@x.com"])
FAULTS = st.sampled_from(["none", "none", "throttle", "500", "lose"])
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")


@contextmanager
def _served(table: Table, script: Callable[[int, Any], Reply],
            before_exit: Callable[[], object] = lambda: None) -> Iterator[str]:
    """``table`` bound to a loopback server answering by ``script``, on dynaorm's own
    wire; the server's URL. After: ``before_exit`` (a script's wait released), a fresh
    tracing hook on the server's client, the table bound as before."""
    with serving(script) as server:
        bound = table.binding()
        try:
            table.connect(server.url)
            table.wire = "dynaorm"
            yield server.url
        finally:
            before_exit()
            table.db.tracing = Tracing()
            table.restore(bound)


def _steps(ids: st.SearchStrategy[str]) -> st.SearchStrategy[tuple[Any, ...]]:
    """A program's step on the entities of ids ``ids``, with the fault it meets."""
    return st.one_of(
        st.tuples(st.just("save"), ids, EMAILS, FAULTS),
        st.tuples(st.just("delete"), ids, FAULTS),
        st.tuples(st.just("get"), ids, FAULTS),
        st.tuples(st.just("get_many"), st.lists(ids, min_size=1, max_size=3, unique=True),
                  FAULTS),
        st.tuples(st.just("scan"), FAULTS))


STEPS = _steps(IDS)
_CACHES = (tracing._operation_start, tracing._attempt_fixed, metrics._duration_attributes,
           metrics._capacity_attributes)


def _cold() -> None:
    """Forget every template tracing caches (the next operation makes each anew)."""
    for cache in _CACHES:
        cache.cache_clear()
    shop.db.tracing._destination = None


def _act(step: tuple[Any, ...], entity: type[Entity] = Member, home: Table = shop
         ) -> tuple[tuple[str, ...], Callable[[], object]]:
    """The requests ``step`` may fault, and what it does (on ``entity``, keyed by its
    ``<name>_id``, in ``home``)."""
    kind, *args = step
    key = f"{entity.__name__.lower()}_id"
    if kind in ("save", "delete"):
        obj = entity(**{key: args[0]}, email=args[1] if kind == "save" else "a@x.com")

        def write() -> None:
            s = Session(home)
            (s.save if kind == "save" else s.delete)(obj)
            s.commit()
        return WRITES, write
    if kind == "get":
        return ("GetItem",), lambda: Session(home).get(entity, **{key: args[0]})
    if kind == "get_many":
        return ("BatchGetItem",), lambda: Session(home).get_many(
            entity, [{key: i} for i in args[0]])
    return ("Scan",), lambda: Session(home).scan(entity).page_size(2).page()


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


def _providers(home: Table, sampler: Any, meters: bool
               ) -> tuple[InMemorySpanExporter, InMemoryMetricReader]:
    """A tracer provider of the test's own (``sampler``'s) and a meter provider (with
    ``meters``) on ``home``'s client: their exporter and reader."""
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    provider = TracerProvider() if sampler is None else TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    home.db.tracing.tracer_provider = provider
    home.db.tracing.metrics.meter_provider = MeterProvider(
        metric_readers=[reader]) if meters else None
    return exporter, reader


def _run(program: list[tuple[Any, ...]], cold: bool, sampler: Any = None,
         meters: bool = True) -> tuple[list[list[str]], list[str], list[str]]:
    """``program`` from an empty table: the spans of each step, the metric points, and
    how each step ended (``meters``: with a meter provider)."""
    shop.delete()
    shop.create()  # (its requests, outside any operation, are spans of their own)
    _cold()
    exporter, reader = _providers(shop, sampler, meters)
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


# --- providers switched under threads; sampled and dropped operations
# (moved from system/test_red_team_08d_tracing.py:
# Red team 08d, tracing state kept across calls (``Operation.quiet``, the tracing hook's
# tracer and the metrics' instruments, made once per provider and kept on the client's
# hook): what must never happen when the tracer or meter provider changes between calls,
# under threads.
#
# - a thread that switched the meter provider gets, or leaves behind for every later call,
#   the instruments of another provider (the provider seen and its instruments were two
#   attributes written one after the other: a second thread between the writes paired
#   them wrongly, for good);
# - the same for the tracing hook's tracer and the provider it was made from;
# - sampled and dropped operations from many threads on one client: a dropped one's
#   attempts leave a span, a sampled one's attempt is missing, or an attempt lands under
#   another operation's span.
#
# The interleavings are forced (a line trace pauses one thread between the two writes);
# no engine is needed: the operations go to a loopback server (dynaorm's own wire, where
# ``Operation.quiet`` applies). moto marker only, for the fixture-free selection.)

class _Meter:
    def __init__(self, owner: str) -> None:
        self.owner = owner

    def create_histogram(self, name: str, **_: Any) -> tuple[str, str]:
        return (self.owner, name)

    def create_counter(self, name: str, **_: Any) -> tuple[str, str]:
        return (self.owner, name)


class _MeterProvider:
    def __init__(self, name: str) -> None:
        self.name = name

    def get_meter(self, *_: Any, **__: Any) -> _Meter:
        return _Meter(self.name)


def _line_of(function: Callable[..., Any], *texts: str) -> int:
    """The line of ``function`` holding the first of ``texts`` it has (the code before
    the fix wrote the provider after its instruments/tracer: paused between the two; the
    fixed code writes them as one: paused just after)."""
    lines, first = inspect.getsourcelines(function)
    for text in texts:
        for i, line in enumerate(lines):
            if text in line:
                return first + i
    raise AssertionError(f"none of {texts} in {function.__qualname__}")


@contextmanager
def _paused_at(function: Callable[..., Any], line: int, run: Callable[[], Any]
               ) -> Iterator[tuple[threading.Event, threading.Event, list[Any]]]:
    """Run ``run`` in a thread that stops just before ``line`` of ``function`` until told
    to go on; yields (reached, go, its result)."""
    reached, go, out = threading.Event(), threading.Event(), []
    code = function.__code__

    def local(frame: Any, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno == line and not reached.is_set():
            reached.set()
            go.wait(10)
        return local

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        return local if frame.f_code is code else None

    def body() -> None:
        sys.settrace(tracer)
        try:
            out.append(run())
        finally:
            sys.settrace(None)

    thread = threading.Thread(target=body)
    thread.start()
    try:
        assert reached.wait(10), "the thread never reached the line"
        yield reached, go, out
    finally:
        go.set()
        thread.join(10)


def test_a_provider_switched_under_threads_keeps_its_own_instruments() -> None:
    """Thread A asks for P1's instruments and is paused between the two writes; thread B
    asks for P2's. Never: A handed P2's instruments, nor P1 paired with P2's for later
    calls."""
    metrics = Metrics()
    p1, p2 = _MeterProvider("P1"), _MeterProvider("P2")
    with _paused_at(Metrics.instruments, _line_of(Metrics.instruments, "self._seen = ",
                                                     "return made[1]"),
                    lambda: metrics.instruments(p1)) as (_, go, got):
        assert metrics.instruments(p2)[0][0] == "P2"
        go.set()
    assert metrics.instruments(p1)[0][0] == "P1"  # (a later call)
    assert got and got[0][0][0] == "P1"
    assert metrics.instruments(p2)[0][0] == "P2"


def test_a_tracer_provider_switched_under_threads_keeps_its_own_tracer() -> None:
    """The tracing hook's check (``active``) paused between making the tracer of its
    provider and noting the provider; another thread switches provider meanwhile.
    Never: spans of calls with one provider made by the other's tracer."""
    hook = Tracing()
    p1, p2 = TracerProvider(), TracerProvider()
    hook.tracer_provider = p1
    with _paused_at(Tracing.active, _line_of(Tracing.active, "self._tracer = tracer = "),
                    hook.active) as (_, go, _got):
        hook.tracer_provider = p2
        hook.active()
        go.set()
    for provider in (p1, p2, p1):
        hook.tracer_provider = provider
        hook.active()
        assert hook._tracer is not None
        # (its own provider's: spans go to that provider's processors)
        assert hook._tracer.span_processor is provider._active_span_processor


# == sampled and dropped operations from many threads =======================================
loop = Table("red08d-tracing")


class Thing(Entity):
    class Meta:
        table = loop
        pk = "T#{thing_id}"
        sk = "T"

    thing_id: str


class _Every(Sampler):
    """Samples an operation whose thing id is even (its span's attribute says which)."""

    def should_sample(self, parent_context: Any, trace_id: int, name: str, kind: Any = None,
                      attributes: Any = None, links: Any = None, trace_state: Any = None
                      ) -> SamplingResult:
        keep = threading.current_thread().name.endswith(("0", "2", "4", "6", "8"))
        return SamplingResult(Decision.RECORD_AND_SAMPLE if keep else Decision.DROP,
                              attributes)

    def get_description(self) -> str:
        return "every other thread"


def test_sampled_and_dropped_operations_from_many_threads() -> None:
    """Eight threads, each 15 gets on one client, half of them sampled (by thread): each
    sampled get has its span with exactly its one attempt under it, a dropped get
    leaves no span at all."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=_Every())
    provider.add_span_processor(SimpleSpanProcessor(exporter))

    def script(n: int, request: bytes) -> Reply:
        return Reply(answer(json_body({})))

    with _served(loop, script):
        loop.db.tracing.tracer_provider = provider
        errors: list[BaseException] = []

        def work() -> None:
            try:
                for n in range(15):
                    assert Session(loop).get(Thing, thing_id=f"{n}") is None
            except BaseException as exc:
                errors.append(exc)

        threads = [threading.Thread(target=work, name=f"w{i}") for i in range(8)]
        join_all(threads, 60)
        assert not errors, errors
    spans = exporter.get_finished_spans()
    ops = [s for s in spans if s.parent is None]
    attempts = [s for s in spans if s.parent is not None]
    assert len(ops) == 4 * 15, len(ops)
    by_parent: dict[int, int] = {}
    for a in attempts:
        assert a.parent is not None
        by_parent[a.parent.span_id] = by_parent.get(a.parent.span_id, 0) + 1
    assert {o.context.span_id for o in ops if o.context} == set(by_parent)
    assert set(by_parent.values()) == {1}


# --- a provider switched mid-run, os.fork, several event loops, reloads, pickles
# (moved from system/test_red_team_08e_tracing.py:
# Red team 08e, tracing state kept across calls (the tracing hook's tracer, made once per
# provider and kept on the client's hook; its lock; the open operations it keeps): what
# must never happen across a provider switched mid-run, ``os.fork``, several event loops,
# a module reload and pickling.
#
# - an attempt sampled in under one provider loses its span, or exports it to another
#   provider under a parent that provider never sees, because the client's provider was
#   switched (by another thread or task: the hook is the client's) while it was in flight;
# - a child of ``os.fork()`` deadlocks on the tracing hook's lock a parent's thread held at
#   the fork, or exports a span its parent had open;
# - on several event loops (``asyncio.run`` again, loops in threads, many tasks on each)
#   an operation's span is parented to another task's span, an attempt's span to another
#   operation's, a span is exported twice or a sampled-in one is missing;
# - a reload of the tracing module stops tracing or breaks a client's later operations;
# - a session, client or hook pickles into something that does not work, or refuses with
#   anything but a pickling error.
#
# No engine is needed: the operations go to a loopback server (dynaorm's own wire, where an
# attempt's span is made at its end) or moto in-process. moto marker only.)

loop_table = Table("red08e-tracing")


class Box(Entity):
    class Meta:
        table = loop_table
        pk = "BOX#{box_id}"
        sk = "BOX"

    box_id: str


def _provider() -> tuple[TracerProvider, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider, exporter


@pytest.fixture
def loopback() -> Iterator[str]:
    """``loop_table`` bound to a loopback server answering every request with ``{}`` (a
    get finds nothing), on dynaorm's own wire; its tracing hook restored after."""
    with _served(loop_table, lambda n, request: Reply(answer(json_body({})))) as url:
        yield url


def _ids(spans: list[ReadableSpan]) -> list[int]:
    return [s.context.span_id for s in spans if s.context is not None]


def _parent(span: ReadableSpan) -> int | None:
    return None if span.parent is None else span.parent.span_id


# == a provider switched while an attempt is in flight ======================================
class _Switch(Hook):
    """Switches the client's provider once an attempt has started, as another thread's
    or task's ``client.tracing.tracer_provider = ...`` and its next operation do."""

    def __init__(self, table: Table, to: Any) -> None:
        self.table, self.to = table, to

    def on_start(self, phase: Any) -> object:
        if isinstance(phase, Attempt):
            self.table.db.tracing.tracer_provider = self.to
            self.table.db.tracing.active()  # (another operation's check)
        return None


@pytest.mark.parametrize("to", ["another provider", "a no-op provider"])
def test_a_provider_switched_mid_attempt_keeps_the_attempt_with_its_operation(
        loopback: str, to: str) -> None:
    """Fixed: the span of an attempt made at its end was made with whatever tracer the
    hook held then: switched to a no-op provider, the attempt of an operation sampled in
    lost its span (an ``AttributeError`` logged); switched to another provider, its span
    went there, under a parent only the first provider has. Now an attempt's span is made
    with its operation's tracer."""
    first, first_spans = _provider()
    other, other_spans = _provider()
    loop_table.db.tracing.tracer_provider = first
    loop_table.db.add_hook(_Switch(loop_table, other if to == "another provider"
                                   else NoOpTracerProvider()))
    assert Session(loop_table).get(Box, box_id="x") is None
    spans = first_spans.get_finished_spans()
    [operation] = [s for s in spans if s.name == "dynaorm.get"]
    [attempt] = [s for s in spans if s.name == "DynamoDB.GetItem"]
    assert _parent(attempt) == operation.context.span_id
    assert other_spans.get_finished_spans() == ()


# == os.fork ================================================================================
def _in_child(run: Callable[[], str], timeout: float = 30.0) -> str:
    """``run()`` in a child of ``os.fork()``: what it returned (its exception's repr
    prefixed ``!``), ``"hung"`` if it did not finish within ``timeout`` (killed)."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read)
        try:
            said = run()
        except BaseException as exc:
            said = f"!{exc!r}"
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    deadline = time.monotonic() + timeout
    out = b""
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([read], [], [], 0.2)
            if ready:
                chunk = os.read(read, 65536)
                if not chunk:
                    break
                out += chunk
        else:
            os.kill(pid, signal.SIGKILL)
            return "hung"
    finally:
        os.close(read)
        os.waitpid(pid, 0)
    return out.decode()


def _held_tally(hook: Tracing) -> tuple[threading.Thread, threading.Event, threading.Event]:
    """A thread holding ``hook``'s lock as an attempt's tally does, until told to go."""
    holding, go = threading.Event(), threading.Event()

    def hold() -> None:
        with hook._lock:
            holding.set()
            go.wait(30)

    thread = threading.Thread(target=hold)
    thread.start()
    assert holding.wait(10)
    return thread, holding, go


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_child_of_fork_traces_to_its_own_provider_without_deadlock(loopback: str) -> None:
    """Fixed: a thread of the parent inside an attempt's tally (the hook's lock held) at
    the fork left the child's copy of the lock held forever: the child's first traced
    operation hung. Now the child's hook has a lock of its own (``os.register_at_fork``,
    as the client's own lock). The child's spans go to the provider it configures; none
    its parent made is exported again there."""
    parent_provider, parent_spans = _provider()
    loop_table.db.tracing.tracer_provider = parent_provider
    assert Session(loop_table).get(Box, box_id="before") is None
    made = len(parent_spans.get_finished_spans())
    thread, _, go = _held_tally(loop_table.db.tracing)

    def child() -> str:
        mine, my_spans = _provider()
        loop_table.db.tracing.tracer_provider = mine
        assert Session(loop_table).get(Box, box_id="child") is None
        return ",".join(sorted(s.name for s in my_spans.get_finished_spans()))

    try:
        said = _in_child(child)
    finally:
        go.set()
        thread.join(10)
    assert said == "DynamoDB.GetItem,dynaorm.get", said
    assert len(parent_spans.get_finished_spans()) == made  # (nothing of the child's)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="os.fork")
def test_a_child_forked_mid_operation_never_exports_its_parents_open_span(
        loopback: str) -> None:
    """An operation open in a parent's thread at the fork: the child, tracing to the
    same (inherited) provider, exports its own operation and attempt, never the
    parent's open span nor a span twice."""
    provider, spans = _provider()
    loop_table.db.tracing.tracer_provider = provider
    started, go = threading.Event(), threading.Event()

    class Hold(Hook):
        def on_start(self, phase: Any) -> object:
            if isinstance(phase, Attempt) and phase.request.get("Key", {}).get(
                    "pk", {}).get("S") == "BOX#held":
                started.set()
                go.wait(30)
            return None

    loop_table.db.add_hook(Hold())
    thread = threading.Thread(target=lambda: Session(loop_table).get(Box, box_id="held"))
    thread.start()
    assert started.wait(10)

    def child() -> str:
        before = len(spans.get_finished_spans())
        go.set()  # (the child's copy: no thread waits on it)
        assert Session(loop_table).get(Box, box_id="child") is None
        mine = spans.get_finished_spans()[before:]
        ids = _ids(list(spans.get_finished_spans()))
        assert len(ids) == len(set(ids)), "a span exported twice"
        return ",".join(sorted(s.name for s in mine))

    try:
        said = _in_child(child)
    finally:
        go.set()
        thread.join(10)
    assert said == "DynamoDB.GetItem,dynaorm.get", said
    names = sorted(s.name for s in spans.get_finished_spans())
    assert names == ["DynamoDB.GetItem", "dynaorm.get"]  # the parent's held get, once


# == several event loops ======================================================================
async def _traced_gets(tracer: Any, label: str, tasks: int, per_task: int) -> None:
    async def one(n: int) -> None:
        with tracer.start_as_current_span(f"task:{label}:{n}"):
            for i in range(per_task):
                async with AsyncSession(loop_table) as s:
                    assert await s.get(Box, box_id=f"{label}-{n}-{i}") is None
                await asyncio.sleep(0)

    await asyncio.gather(*(one(n) for n in range(tasks)))


def _check_nesting(spans: list[ReadableSpan], expected_tasks: set[str], per_task: int
                   ) -> None:
    """Each task span parents exactly its own operations (per_task gets, each with an
    empty commit of the session's exit, or none), each get exactly its one attempt; no
    span exported twice."""
    ids = _ids(spans)
    assert len(ids) == len(set(ids)), "a span exported twice"
    by_id = {s.context.span_id: s for s in spans if s.context is not None}
    tasks = {s.name: s for s in spans if s.name.startswith("task:")}
    assert set(tasks) == expected_tasks
    gets = [s for s in spans if s.name == "dynaorm.get"]
    assert len(gets) == len(expected_tasks) * per_task, "a sampled-in operation lost"
    for get in gets:
        owner = by_id.get(_parent(get))  # type: ignore[arg-type]
        assert owner is not None and owner.name.startswith("task:")
        key = get.attributes and get.attributes.get("dynaorm.operation")
        assert key == "get"
    for task in tasks.values():
        mine = [g for g in gets if _parent(g) == task.context.span_id]
        assert len(mine) == per_task, (task.name, len(mine))
        assert all(m.context.trace_id == task.context.trace_id for m in mine)
    attempts = [s for s in spans if s.name == "DynamoDB.GetItem"]
    assert sorted(_parent(a) or 0 for a in attempts) == sorted(
        g.context.span_id for g in gets), "an attempt under another operation's span"


@settings(max_examples=examples(8), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(loops=st.integers(1, 3), tasks=st.integers(1, 5), per_task=st.integers(1, 3),
       threaded=st.booleans())
def test_operations_on_several_event_loops_nest_under_their_own_task(
        loopback: str, loops: int, tasks: int, per_task: int, threaded: bool) -> None:
    """``asyncio.run`` again and again (``threaded``: each loop in a thread of its own, all
    at once), many tasks on each, every task under a span of its own: every operation's
    span is a child of its own task's span, every attempt's of its own operation's; no
    span is exported twice, none is missing."""
    provider, exporter = _provider()
    loop_table.db.tracing.tracer_provider = provider
    tracer = provider.get_tracer("test")
    labels = [f"L{i}" for i in range(loops)]
    errors: list[BaseException] = []

    def run(label: str) -> None:
        try:
            asyncio.run(_traced_gets(tracer, label, tasks, per_task))
        except BaseException as exc:
            errors.append(exc)

    if threaded:
        threads = [threading.Thread(target=run, args=(label,)) for label in labels]
        join_all(threads, 60)
    else:
        for label in labels:
            run(label)
    assert not errors, errors
    _check_nesting(list(exporter.get_finished_spans()),
                   {f"task:{label}:{n}" for label in labels for n in range(tasks)},
                   per_task)


def test_an_async_session_traced_on_one_loop_then_another(loopback: str) -> None:
    """One ``AsyncSession`` used on a loop, then (after that loop closed) on another: its
    operations on the second are traced as on the first (or the session refuses the
    second loop with an error; never a hang, never a span under the first loop's task)."""
    provider, exporter = _provider()
    loop_table.db.tracing.tracer_provider = provider
    tracer = provider.get_tracer("test")
    session = AsyncSession(loop_table)

    async def use(label: str) -> None:
        with tracer.start_as_current_span(f"task:{label}:0"):
            assert await session.get(Box, box_id=label) is None

    asyncio.run(use("first"))
    asyncio.run(asyncio.wait_for(use("second"), 30))
    _check_nesting(list(exporter.get_finished_spans()), {"task:first:0", "task:second:0"}, 1)


# == a module reload ==========================================================================
_RELOAD = r"""
import importlib, sys
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from dynaorm import Entity, Hook, Session, Table
from dynaorm.protocol.hooks import Attempt
import dynaorm.protocol.tracing as tracing
from tests.support.hostile import Reply, answer, json_body, serving

t = Table("red08e-reload")
class Box(Entity):
    class Meta:
        table = t
        pk = "BOX#{box_id}"
        sk = "BOX"
    box_id: str

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
with serving(lambda n, r: Reply(answer(json_body({})))) as server:
    t.connect(server.url)
    t.wire = "dynaorm"
    t.db.tracing.tracer_provider = provider
    assert Session(t).get(Box, box_id="a") is None
    importlib.reload(tracing)
    assert Session(t).get(Box, box_id="b") is None
    other = InMemorySpanExporter()
    p2 = TracerProvider()
    p2.add_span_processor(SimpleSpanProcessor(other))
    t.db.tracing.tracer_provider = p2
    assert Session(t).get(Box, box_id="c") is None
    print(sorted(s.name for s in exporter.get_finished_spans()),
          sorted(s.name for s in other.get_finished_spans()))
    # a reload while an operation and its attempt are open (by a hook inside them)
    class Reload(Hook):
        def on_start(self, phase):
            if isinstance(phase, Attempt):
                importlib.reload(tracing)
    t.db.add_hook(Reload())
    other.clear()
    assert Session(t).get(Box, box_id="d") is None
    print(sorted(s.name for s in other.get_finished_spans()))
"""


def test_a_reload_of_the_tracing_module_keeps_tracing() -> None:
    """``importlib.reload(dynaorm.protocol.tracing)`` between operations (in a process of
    its own: a reload is for good): the client's hook keeps tracing each later operation,
    to the provider configured then, with its attempt under it. Fixed: a reload while an
    operation was open lost its span and its attempt's (the hook ended a token by its
    class, which the reload replaced); now it ends them by their phase."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    done = subprocess.run([sys.executable, "-c", _RELOAD], capture_output=True, text=True,
                          timeout=120, cwd=root, env={**os.environ, "PYTHONPATH": root})
    assert done.returncode == 0, done.stderr[-3000:]
    two = "'DynamoDB.GetItem', 'DynamoDB.GetItem', 'dynaorm.get', 'dynaorm.get'"
    one = "['DynamoDB.GetItem', 'dynaorm.get']"
    assert done.stdout.split("\n")[:2] == [f"[{two}] {one}", one], done.stdout
    assert "failed" not in done.stderr, done.stderr[-3000:]


# == pickling =================================================================================
def test_objects_holding_tracing_state_pickle_and_work_or_refuse_clearly(
        loopback: str) -> None:
    """A tracing hook, a client, a table, a session: each either pickles into one that
    works (the hook: with a lock of its own, tracing to the provider given it again), or
    refuses with a pickling error (``TypeError`` / ``PicklingError``) naming what."""
    provider, exporter = _provider()
    loop_table.db.tracing.tracer_provider = provider
    assert Session(loop_table).get(Box, box_id="x") is None
    assert len(exporter.get_finished_spans()) == 2
    for thing in (loop_table.db.tracing, loop_table.db, Session(loop_table),
                  AsyncSession(loop_table)):
        try:
            data = pickle.dumps(thing)
        except (TypeError, pickle.PicklingError, AttributeError) as exc:
            assert str(exc), type(thing)
            continue
        copy = pickle.loads(data)
        assert type(copy) is type(thing)
        if isinstance(copy, Tracing):
            assert copy._lock is not thing._lock  # type: ignore[attr-defined]


# --- hooks, span processors and meters that misbehave beside the tracer
# (moved from system/test_red_team_08g_tracing.py:
# Red team 08g, issue 70's tracing cuts (the caller's context read once, a quiet
# operation's token its dropped span ended by phase, an attempt's span made with its
# operation's tracer, the attributes written into one dict): what must never happen at
# their seams.
#
# - the same random program (commits, deletes, gets, ``get_many``, scan pages, with
#   throttles, server errors and lost answers injected) exports other spans (names, kinds,
#   parents, attributes, status, events) or metric points, or ends otherwise, when another
#   hook sits beside dynaorm's tracer: a no-op one (which wants the answer's items, or
#   not), one that raises at every start and end, one that adds and removes hooks on the
#   client from another thread while the operation is in flight; traced or sampled out,
#   with meters or without;
# - an exception from the OpenTelemetry SDK (a span processor's ``on_start``/``on_end``,
#   so ``start_span``/``span.end`` raise; a meter's instrument) changes what the caller is
#   told, is not logged, or leaves the hook with an operation open; a failing meter loses
#   the attempt's span;
# - ``suppress_instrumentation`` entered by a hook while an operation is in flight changes
#   it (the caller's context is read once, at the operation's start);
# - an async operation cancelled mid-attempt leaves its span or an attempt's open.
#
# Engine-independent: moto only.)

buyer_shop = Table("red08g_shop", return_consumed_capacity="INDEXES")


class Buyer(Entity):
    class Meta:
        table = buyer_shop
        pk = "BUYER#{buyer_id}"
        sk = "BUYER"
        unique = (Unique("email"),)

    buyer_id: str
    email: str


BUYER_IDS = st.sampled_from(["b1", "b2", "b3"])
BUYER_STEPS = _steps(BUYER_IDS)


# == hooks beside the tracer ===============================================================
class NoOp(Hook):
    """Does nothing; wants the answer's items (the default)."""


class NoItems(Hook):
    """Does nothing; wants none of the answer's items (as the tracer)."""

    wants_items = False
    wants_origins = False


class Raising(Hook):
    """Raises at every start and end (logged and ignored by the pump)."""

    def on_start(self, phase: Any) -> object:
        raise RuntimeError("hook start")

    def on_end(self, phase: Any, token: Any) -> object:
        raise RuntimeError("hook end")


class Churn(Hook):
    """At each attempt's start, another thread adds a hook to the client and removes it
    again (the operation in flight keeps the policy it started with)."""

    def on_start(self, phase: Any) -> object:
        if isinstance(phase, Attempt):
            other = NoOp()

            def churn() -> None:
                buyer_shop.db.add_hook(other)
                buyer_shop.db.tracing.active()
                buyer_shop.db.remove_hook(other)
            thread = threading.Thread(target=churn)
            thread.start()
            thread.join()
        return None


class Cancel(Hook):
    """Cancels its task at the start of each operation's first attempt (the cancellation
    lands while the attempt is in flight); nothing in a sync session."""

    def on_start(self, phase: Any) -> object:
        if isinstance(phase, Attempt) and phase.number == 1 and phase.within is not None:
            try:
                task = asyncio.current_task()
            except RuntimeError:
                return None
            if task is not None:
                task.cancel()
        return None


EXTRAS: dict[str, Callable[[], Hook]] = {
    "noop": NoOp, "no items": NoItems, "raising": Raising, "churn": Churn}


# == running a program =====================================================================
def _buyer_act(step: tuple[Any, ...]) -> tuple[tuple[str, ...], Callable[[], object]]:
    return _act(step, Buyer, buyer_shop)






@contextmanager
def _hooked(extra: str | None) -> Iterator[None]:
    hook = None if extra is None else buyer_shop.db.add_hook(EXTRAS[extra]())
    try:
        yield
    finally:
        if hook is not None:
            buyer_shop.db.remove_hook(hook)


def _buyer_run(program: list[tuple[Any, ...]], extra: str | None, sampler: Any = None,
         meters: bool = True, aio: bool = False
         ) -> tuple[list[list[str]], list[str], list[str]]:
    """``program`` from an empty table, with ``extra`` beside the tracer: the spans of
    each step, the metric points, how each step ended. A step with no fault runs with no
    fault injector (the tracer alone, when ``extra`` is ``None``)."""
    buyer_shop.delete()
    buyer_shop.create()
    exporter, reader = _providers(buyer_shop, sampler, meters)
    spans, ended = [], []
    for step in program:
        exporter.clear()
        operations, act = (_aact if aio else _buyer_act)(step)
        with _hooked(extra):
            if step[-1] == "none":
                ended.append(_ended(act))
            else:
                with inject_faults(buyer_shop) as faults:
                    arm(faults, operations, step[-1])
                    ended.append(_ended(act))
        finished = exporter.get_finished_spans()
        names = {s.context.span_id: s.name for s in finished if s.context is not None}
        spans.append(sorted(_span(s, names) for s in finished))
    assert not buyer_shop.db.tracing._open  # nothing left open
    return spans, _points(reader), ended


def _aact(step: tuple[Any, ...]) -> tuple[tuple[str, ...], Callable[[], object]]:
    """:func:`_buyer_act` in an async session (a fresh event loop per step)."""
    kind, *args = step

    async def run() -> object:
        s = AsyncSession(buyer_shop)
        if kind in ("save", "delete"):
            buyer = Buyer(buyer_id=args[0], email=args[1] if kind == "save" else "a@x.com")
            (s.save if kind == "save" else s.delete)(buyer)
            return await s.commit()
        if kind == "get":
            return await s.get(Buyer, buyer_id=args[0])
        if kind == "get_many":
            return await s.get_many(Buyer, [{"buyer_id": i} for i in args[0]])
        return await s.scan(Buyer).page_size(2).page()
    return _buyer_act(step)[0], lambda: asyncio.run(run())


def _ended(act: Callable[[], object]) -> str:
    try:
        out = act()
    except DynaormError as exc:
        return type(exc).__name__
    except asyncio.CancelledError:
        return "cancelled"
    return "ok" if out is None else f"ok {type(out).__name__}"


@pytest.fixture
def fresh(backend: str | None) -> Iterator[None]:
    wait = buyer_shop.max_wait
    buyer_shop.max_wait = 0  # (faults retried without waiting)
    buyer_shop.connect(backend)
    try:
        yield
    finally:
        buyer_shop.db.tracing.tracer_provider = None
        buyer_shop.db.tracing.metrics.meter_provider = None
        buyer_shop.delete()
        buyer_shop.max_wait = wait


@settings(max_examples=examples(12), deadline=None, suppress_health_check=list(HealthCheck))
@given(program=st.lists(BUYER_STEPS, min_size=1, max_size=5),
       extra=st.sampled_from(sorted(EXTRAS)))
def test_a_hook_beside_the_tracer_changes_nothing_it_exports(
        fresh: None, program: list[tuple[Any, ...]], extra: str) -> None:
    """The same program with the tracer alone and with ``extra`` beside it: the same
    spans, metric points and outcomes, traced; sampled out, no span and the same points."""
    alone = _buyer_run(program, None)
    assert any(alone[0])
    beside = _buyer_run(program, extra)
    assert beside == alone
    dropped = _buyer_run(program, extra, sampler=ALWAYS_OFF)
    assert dropped == ([[] for _ in program], alone[1], alone[2])
    dropped_alone = _buyer_run(program, None, sampler=ALWAYS_OFF)
    assert dropped_alone == dropped
    quiet = _buyer_run(program, extra, sampler=ALWAYS_OFF, meters=False)
    assert quiet == ([[] for _ in program], [], alone[2])


# == the SDK raising =======================================================================
class _Failing(SpanProcessor):
    """A span processor that raises where ``where`` says (``start``: ``start_span``
    raises; ``end``: ``span.end()`` does)."""

    def __init__(self, where: str) -> None:
        self.where = where

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        if self.where == "start":
            raise RuntimeError("processor start")

    def on_end(self, span: Any) -> None:
        if self.where == "end":
            raise RuntimeError("processor end")


def _faulted_program() -> list[tuple[Any, ...]]:
    return [("save", "b1", "a@x.com", "none"), ("save", "b2", "a@x.com", "throttle"),
            ("get", "b1", "lose"), ("get_many", ["b1", "b2"], "500"),
            ("scan", "none"), ("delete", "b1", "none"), ("get", "b1", "none")]


@pytest.mark.parametrize("extra", [None, "noop"])
@pytest.mark.parametrize("where", ["start", "end"])
def test_a_raising_span_processor_changes_nothing_the_caller_is_told(
        fresh: None, where: str, extra: str | None, caplog: pytest.LogCaptureFixture) -> None:
    """``start_span`` or ``span.end()`` raising (a span processor's failure): logged,
    ignored, the caller told what it is told with a working SDK, nothing left open; with
    the tracer alone and with a hook beside it."""
    program = _faulted_program()
    baseline = _buyer_run(program, extra)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(_Failing(where))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    buyer_shop.delete()
    buyer_shop.create()
    buyer_shop.db.tracing.tracer_provider = provider
    ended = []
    with caplog.at_level(logging.ERROR, logger="dynaorm"):
        for step in program:
            operations, act = _buyer_act(step)
            with _hooked(extra), inject_faults(buyer_shop) as faults:
                arm(faults, operations, step[-1])
                ended.append(_ended(act))
    assert ended == baseline[2]
    assert not buyer_shop.db.tracing._open
    assert any("processor " + where in (r.exc_text or "") or (
        r.exc_info and "processor " + where in str(r.exc_info[1])) for r in caplog.records)


class _BrokenMeter:
    def create_histogram(self, name: str, **_: Any) -> Any:
        return self

    def create_counter(self, name: str, **_: Any) -> Any:
        return self

    def record(self, *_: Any, **__: Any) -> None:
        raise RuntimeError("meter record")

    def add(self, *_: Any, **__: Any) -> None:
        raise RuntimeError("meter add")


class _BrokenMeters:
    def get_meter(self, *_: Any, **__: Any) -> _BrokenMeter:
        return _BrokenMeter()


@pytest.mark.parametrize("extra", [None, "noop"])
def test_a_failing_meter_loses_no_span(fresh: None, extra: str | None) -> None:
    """A meter whose instruments raise (a broken SDK or exporter pipeline): the caller
    told the same, and the spans exported the same as with no meter at all (the attempt's
    span still ended, its operation's count and capacity still added up)."""
    program = _faulted_program()
    baseline = _buyer_run(program, extra, meters=False)
    buyer_shop.delete()
    buyer_shop.create()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    buyer_shop.db.tracing.tracer_provider = provider
    buyer_shop.db.tracing.metrics.meter_provider = _BrokenMeters()
    spans, ended = [], []
    for step in program:
        exporter.clear()
        operations, act = _buyer_act(step)
        with _hooked(extra), inject_faults(buyer_shop) as faults:
            arm(faults, operations, step[-1])
            ended.append(_ended(act))
        finished = exporter.get_finished_spans()
        names = {s.context.span_id: s.name for s in finished if s.context is not None}
        spans.append(sorted(_span(s, names) for s in finished))
    assert ended == baseline[2]
    assert not buyer_shop.db.tracing._open
    assert spans == baseline[0]


# == suppression entered mid-operation =====================================================
class _Suppressing(Hook):
    """Enters ``suppress_instrumentation`` at an attempt's start, leaves it at its end."""

    def on_start(self, phase: Any) -> object:
        if isinstance(phase, Attempt):
            from opentelemetry import context
            from opentelemetry.instrumentation.utils import _SUPPRESS_INSTRUMENTATION_KEY

            return context.attach(context.set_value(_SUPPRESS_INSTRUMENTATION_KEY, True))
        return None

    def on_end(self, phase: Any, token: Any) -> object:
        if token is not None:
            from opentelemetry import context

            context.detach(token)
        return None


def test_suppression_entered_mid_operation_changes_nothing(fresh: None) -> None:
    """The caller's context is read once, at the operation's start: a hook entering
    suppression while an attempt is in flight neither drops the attempt's span nor leaves
    the operation's open."""
    pytest.importorskip("opentelemetry.instrumentation.utils")
    program = [("save", "b1", "a@x.com", "none"), ("get", "b1", "throttle"),
               ("scan", "none")]
    baseline = _buyer_run(program, "noop")
    EXTRAS["suppressing"] = _Suppressing
    try:
        suppressed = _buyer_run(program, "suppressing")
    finally:
        del EXTRAS["suppressing"]
    assert suppressed == baseline


# == async cancelled mid-attempt ===========================================================
def test_an_async_operation_cancelled_mid_attempt_ends_its_spans() -> None:
    """A task cancelled while its attempt waits for an answer: its operation's span and
    the attempt's are exported, ended (the operation's as failed, the attempt's as
    interrupted), nothing left open; with the tracer alone and with a hook beside it;
    the hook's next operation traced as usual."""
    gate, arrived = threading.Event(), threading.Event()

    def reply(n: int, request: Any) -> Reply:
        arrived.set()
        gate.wait(5)
        return Reply(answer(json_body({})))

    with _served(buyer_shop, reply, before_exit=gate.set):
        buyer_shop.max_wait = 0
        for extra in (None, "noop"):
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            buyer_shop.db.tracing.tracer_provider = provider
            gate.clear()
            arrived.clear()
            with _hooked(extra):
                async def main() -> None:
                    task = asyncio.ensure_future(
                        AsyncSession(buyer_shop).get(Buyer, buyer_id="b1"))
                    assert await asyncio.to_thread(arrived.wait, 10)  # (in flight)
                    task.cancel()
                    with pytest.raises(asyncio.CancelledError):
                        await task
                asyncio.run(main())
                gate.set()
                spans = exporter.get_finished_spans()
                assert len(spans) == 2, [s.name for s in spans]
                op, attempt = sorted(spans, key=lambda s: s.kind.name != "INTERNAL")
                assert attempt.parent is not None
                assert attempt.parent.span_id == op.context.span_id
                assert op.status.status_code.name == "ERROR"
                assert attempt.status.status_code.name == "ERROR"
                assert not buyer_shop.db.tracing._open
                exporter.clear()
                assert Session(buyer_shop).get(Buyer, buyer_id="b1") is None
                assert len(exporter.get_finished_spans()) == 2


# == a subclass of the tracer =============================================================
@pytest.mark.parametrize("extra", [None, "noop"])
def test_a_tracing_subclass_exports_what_tracing_does(fresh: None, extra: str | None) -> None:
    """The client's tracer replaced by a subclass of ``Tracing`` (overriding nothing, or
    wrapping ``on_start``/``on_end``): the same spans, metric points and outcomes as
    ``Tracing`` itself, traced and sampled out, nothing left open."""
    from dynaorm.protocol.tracing import Tracing

    class Plain(Tracing):
        pass

    class Wrapping(Tracing):
        def on_start(self, phase: Any) -> object:
            return ("mine", super().on_start(phase))

        def on_end(self, phase: Any, token: Any) -> object:
            return super().on_end(phase, token[1])

    program = _faulted_program()
    baseline = _buyer_run(program, extra)
    dropped = _buyer_run(program, extra, sampler=ALWAYS_OFF)
    try:
        for kind in (Plain, Wrapping):
            buyer_shop.db.tracing = kind()
            assert _buyer_run(program, extra) == baseline
            assert _buyer_run(program, extra, sampler=ALWAYS_OFF) == dropped
    finally:
        buyer_shop.db.tracing = Tracing()


# == a quiet operation beside another hook =================================================
class Counting(Hook):
    """Notes every attempt it sees, and every operation's end."""

    seen: list[str] = []

    def on_start(self, phase: Any) -> object:
        if isinstance(phase, Attempt):
            Counting.seen.append(phase.operation)
        return None

    def on_end(self, phase: Any, token: Any) -> object:
        if isinstance(phase, Operation):
            Counting.seen.append(f"end {phase.name}")
        return None


@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck))
@given(program=st.lists(BUYER_STEPS, min_size=1, max_size=5))
def test_a_quiet_operation_hides_its_attempts_from_the_tracer_alone(
        fresh: None, program: list[tuple[Any, ...]]) -> None:
    """Sampled out with nothing for its attempts to do (no meter, dynaorm's own route, no
    instrumentation imported), an operation is quiet for the tracer: the tracer sees no
    attempt of it, another hook beside it sees every attempt and every end a traced run
    shows it; the same outcomes, no span, nothing left open."""
    import sys

    EXTRAS["counting"] = Counting
    hook = buyer_shop.db.tracing
    try:
        Counting.seen = []
        traced = _buyer_run(program, "counting")
        shown = [s for s in Counting.seen if s not in ("CreateTable", "DeleteTable",
                                                       "DescribeTable")]
        routes, instrumentation = hook._routes, sys.modules.pop(
            "opentelemetry.instrumentation", None)
        reached: list[str] = []
        started = hook.on_start
        hook._routes = lambda session: False
        hook.on_start = lambda phase: (reached.append(  # type: ignore
            getattr(phase, "operation", "")), started(phase))[1]
        try:
            Counting.seen = []
            quiet = _buyer_run(program, "counting", sampler=ALWAYS_OFF, meters=False)
        finally:
            hook._routes = routes
            del hook.on_start
            if instrumentation is not None:
                sys.modules["opentelemetry.instrumentation"] = instrumentation
        assert quiet == ([[] for _ in program], [], traced[2])
        assert [s for s in Counting.seen if s not in (
            "CreateTable", "DeleteTable", "DescribeTable")] == shown
        assert set(reached) <= {"", "CreateTable", "DeleteTable", "DescribeTable"}  # (no
        # attempt of the program reached the tracer: the table's administration alone)
    finally:
        del EXTRAS["counting"]


# == a hook interrupted at its start =======================================================
class _Interrupt(Hook):
    """Raises ``KeyboardInterrupt`` at the start of a phase of kind ``kind`` (a Ctrl-C
    landing in a hook: not an ``Exception``, so not logged and ignored)."""

    def __init__(self, kind: type) -> None:
        self.kind = kind

    def on_start(self, phase: Any) -> object:
        if isinstance(phase, self.kind):
            raise KeyboardInterrupt
        return None


@pytest.mark.parametrize("kind", [Attempt, Operation], ids=["attempt", "operation"])
def test_a_hook_interrupted_at_its_start_leaves_no_span_open(fresh: None, kind: type
                                                             ) -> None:
    """Fixed: an inner hook's ``on_start`` interrupted (``KeyboardInterrupt``) after the
    tracer's had started the phase's span: the pump never called the tracer's ``on_end``,
    so the attempt's span stayed current in the caller's context (the caller's own spans
    made after it were its children) and was never exported, or the operation stayed
    open in the tracer. Now the hooks started end before the interruption goes on (the
    attempt interrupted, the operation failed by it)."""
    from opentelemetry import trace

    buyer_shop.create()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    buyer_shop.db.tracing.tracer_provider = provider
    hook = buyer_shop.db.add_hook(_Interrupt(kind))
    try:
        with pytest.raises(KeyboardInterrupt):
            Session(buyer_shop).get(Buyer, buyer_id="b1")
    finally:
        buyer_shop.db.remove_hook(hook)
    assert not trace.get_current_span().get_span_context().is_valid
    assert not buyer_shop.db.tracing._open
    finished = {s.name: s for s in exporter.get_finished_spans()}
    assert finished["dynaorm.get"].status.status_code.name == "ERROR"
    if kind is Attempt:
        assert finished["DynamoDB.GetItem"].status.status_code.name == "ERROR"
    exporter.clear()
    assert Session(buyer_shop).get(Buyer, buyer_id="b1") is None  # traced as usual after
    assert sorted(s.name for s in exporter.get_finished_spans()) == [
        "DynamoDB.GetItem", "dynaorm.get"]


# == async sessions, cancelled mid-attempt =================================================
@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck))
@given(program=st.lists(BUYER_STEPS, min_size=1, max_size=4),
       extra=st.sampled_from(sorted(EXTRAS)))
def test_async_a_hook_beside_the_tracer_changes_nothing_it_exports(
        fresh: None, program: list[tuple[Any, ...]], extra: str) -> None:
    """The property above in async sessions, and with every operation cancelled in its
    first attempt (a hook cancelling its task): the same spans, points and outcomes with a
    hook beside the tracer as without; nothing left open."""
    alone = _buyer_run(program, None, aio=True)
    assert _buyer_run(program, extra, aio=True) == alone
    EXTRAS["cancel"] = Cancel
    try:
        cancelled = _buyer_run(program, "cancel", aio=True)
        assert set(cancelled[2]) == {"cancelled"}
        if extra != "cancel":
            EXTRAS["both"] = lambda: _Both(Cancel(), EXTRAS[extra]())
            try:
                assert _buyer_run(program, "both", aio=True) == cancelled
            finally:
                del EXTRAS["both"]
        assert _buyer_run(program, "cancel", aio=True, sampler=ALWAYS_OFF) == (
            [[] for _ in program], cancelled[1], cancelled[2])
    finally:
        del EXTRAS["cancel"]


class _Both(Hook):
    """Two hooks as one (the first's start first, its end last)."""

    def __init__(self, first: Hook, second: Hook) -> None:
        self.first, self.second = first, second

    def on_start(self, phase: Any) -> object:
        return (self.first.on_start(phase), self.second.on_start(phase))

    def on_end(self, phase: Any, token: Any) -> object:
        self.second.on_end(phase, token[1])
        return self.first.on_end(phase, token[0])


# == one Operation run more than once (as dynaorm.jobs.reencryption runs its `during`) =========
def test_an_operation_run_again_after_a_quiet_run_is_traced(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Fixed: a tool runs several protocols under one ``Operation`` (``reencrypt``'s
    ``during``: its guard rows, its update, its read-back). A run sampled out with
    nothing for its attempts to do made it quiet for the tracer (``Operation.quiet``),
    and it stayed so: a later run sampled in lost its attempts' spans (filtered from the
    hook as the quiet run's), and its end, taken for a quiet one's, called ``end()`` on
    the operation's record: its span never ended, the record left open in the hook for
    good. Now a quiet operation's end takes the tracer out of ``quiet``."""
    import sys

    from dynaorm.protocol.steps import call

    monkeypatch.delitem(sys.modules, "opentelemetry.instrumentation", raising=False)
    with _served(buyer_shop, lambda n, request: Reply(answer(json_body({})))):
        hook = buyer_shop.db.tracing
        during = Operation("reencrypt", (buyer_shop.name,), (Buyer,))
        request = {"TableName": buyer_shop.name, "Key": {"pk": {"S": "BUYER#b1"},
                                                    "sk": {"S": "BUYER"}}}
        hook.tracer_provider = TracerProvider(sampler=ALWAYS_OFF)
        reached: list[str] = []
        started = hook.on_start
        monkeypatch.setattr(hook, "on_start", lambda phase: (
            reached.append(type(phase).__name__), started(phase))[1])
        buyer_shop.db.driver.run(call("GetItem", request, (Buyer,)), during)
        assert reached == ["Operation"]  # (quiet: its attempt never reached the hook)
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        hook.tracer_provider = provider
        buyer_shop.db.driver.run(call("GetItem", request, (Buyer,)), during)
        assert not hook._open
        assert sorted(s.name for s in exporter.get_finished_spans()) == [
            "DynamoDB.GetItem", "dynaorm.reencrypt"]


def test_an_operation_run_again_after_a_failed_run_is_told_its_own_outcome() -> None:
    """Fixed: ``reencrypt`` runs its read-back under the ``during`` whose update just
    failed its condition (a concurrent writer): the read-back, answered, was ended with
    the update's error still on the operation (``Operation.error`` never reset): its span
    said ``ConditionalCheckFailed`` (status ERROR) and every hook was told the run
    failed. Now each run of an operation starts with no error."""
    from dynaorm.errors import RequestError
    from dynaorm.protocol.steps import call

    failure = json_body({"__type": "com.amazonaws.dynamodb.v20120810#"
                                   "ConditionalCheckFailedException", "message": "no"})

    def reply(n: int, request: Any) -> Reply:
        if n == 1:
            return Reply(answer(failure, status="400 Bad Request"))
        return Reply(answer(json_body({})))

    told: list[object] = []

    class Told(Hook):
        def on_end(self, phase: Any, token: Any) -> object:
            if isinstance(phase, Operation):
                told.append(None if phase.error is None else type(phase.error).__name__)
            return None

    with _served(buyer_shop, reply):
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        buyer_shop.db.tracing.tracer_provider = provider
        hook = buyer_shop.db.add_hook(Told())
        during = Operation("reencrypt", (buyer_shop.name,), (Buyer,))
        request = {"TableName": buyer_shop.name, "Key": {"pk": {"S": "BUYER#b1"},
                                                    "sk": {"S": "BUYER"}}}
        with pytest.raises(RequestError):
            buyer_shop.db.driver.run(call("UpdateItem", request, (Buyer,),
                                    idempotent=False), during)
        exporter.clear()
        assert "Item" not in buyer_shop.db.driver.run(
            call("GetItem", request, (Buyer,)), during)
        buyer_shop.db.remove_hook(hook)
        assert told[-1] is None
        op = next(s for s in exporter.get_finished_spans() if s.name == "dynaorm.reencrypt")
        assert op.status.status_code.name == "UNSET"
        assert op.attributes is not None and op.attributes["dynaorm.outcome"] == "ok"
