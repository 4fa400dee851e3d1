"""Red team 08g, issue 70's tracing cuts (the caller's context read once, a quiet
operation's token its dropped span ended by phase, an attempt's span made with its
operation's tracer, the attributes written into one dict): what must never happen at
their seams.

- the same random program (commits, deletes, gets, ``get_many``, scan pages, with
  throttles, server errors and lost answers injected) exports other spans (names, kinds,
  parents, attributes, status, events) or metric points, or ends otherwise, when another
  hook sits beside dynaorm's tracer: a no-op one (which wants the answer's items, or
  not), one that raises at every start and end, one that adds and removes hooks on the
  client from another thread while the operation is in flight; traced or sampled out,
  with meters or without;
- an exception from the OpenTelemetry SDK (a span processor's ``on_start``/``on_end``,
  so ``start_span``/``span.end`` raise; a meter's instrument) changes what the caller is
  told, is not logged, or leaves the hook with an operation open; a failing meter loses
  the attempt's span;
- ``suppress_instrumentation`` entered by a hook while an operation is in flight changes
  it (the caller's context is read once, at the operation's start);
- an async operation cancelled mid-attempt leaves its span or an attempt's open.

Engine-independent: moto only."""

from __future__ import annotations

import asyncio
import json
import logging
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

from dynaorm import AsyncSession, DynaormError, Entity, Hook, Session, Table, Unique
from dynaorm.protocol.hooks import Attempt, Operation
from dynaorm.testing import inject_faults
from tests.support.examples import examples
from tests.support.fault_kinds import arm
from tests.support.hostile import Reply, answer, json_body, serving

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

shop = Table("red08g_shop", return_consumed_capacity="INDEXES")


class Buyer(Entity):
    class Meta:
        table = shop
        pk = "BUYER#{buyer_id}"
        sk = "BUYER"
        unique = (Unique("email"),)

    buyer_id: str
    email: str


IDS = st.sampled_from(["b1", "b2", "b3"])
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
                shop.db.add_hook(other)
                shop.db.tracing.active()
                shop.db.remove_hook(other)
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
def _act(step: tuple[Any, ...]) -> tuple[tuple[str, ...], Callable[[], object]]:
    kind, *args = step
    if kind in ("save", "delete"):
        buyer = Buyer(buyer_id=args[0], email=args[1] if kind == "save" else "a@x.com")

        def write() -> None:
            s = Session(shop)
            (s.save if kind == "save" else s.delete)(buyer)
            s.commit()
        return WRITES, write
    if kind == "get":
        return ("GetItem",), lambda: Session(shop).get(Buyer, buyer_id=args[0])
    if kind == "get_many":
        return ("BatchGetItem",), lambda: Session(shop).get_many(
            Buyer, [{"buyer_id": i} for i in args[0]])
    return ("Scan",), lambda: Session(shop).scan(Buyer).page_size(2).page()


def _span(span: Any, names: dict[int, str]) -> str:
    """What a span says, comparable (ids, times and the request id aside)."""
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


@contextmanager
def _hooked(extra: str | None) -> Iterator[None]:
    hook = None if extra is None else shop.db.add_hook(EXTRAS[extra]())
    try:
        yield
    finally:
        if hook is not None:
            shop.db.remove_hook(hook)


def _run(program: list[tuple[Any, ...]], extra: str | None, sampler: Any = None,
         meters: bool = True, aio: bool = False
         ) -> tuple[list[list[str]], list[str], list[str]]:
    """``program`` from an empty table, with ``extra`` beside the tracer: the spans of
    each step, the metric points, how each step ended. A step with no fault runs with no
    fault injector (the tracer alone, when ``extra`` is ``None``)."""
    shop.delete()
    shop.create()
    exporter, reader = InMemorySpanExporter(), InMemoryMetricReader()
    provider = TracerProvider() if sampler is None else TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    shop.db.tracing.tracer_provider = provider
    shop.db.tracing.metrics.meter_provider = MeterProvider(
        metric_readers=[reader]) if meters else None
    spans, ended = [], []
    for step in program:
        exporter.clear()
        operations, act = (_aact if aio else _act)(step)
        with _hooked(extra):
            if step[-1] == "none":
                ended.append(_ended(act))
            else:
                with inject_faults(shop) as faults:
                    arm(faults, operations, step[-1])
                    ended.append(_ended(act))
        finished = exporter.get_finished_spans()
        names = {s.context.span_id: s.name for s in finished if s.context is not None}
        spans.append(sorted(_span(s, names) for s in finished))
    assert not shop.db.tracing._open  # nothing left open
    return spans, _points(reader), ended


def _aact(step: tuple[Any, ...]) -> tuple[tuple[str, ...], Callable[[], object]]:
    """:func:`_act` in an async session (a fresh event loop per step)."""
    kind, *args = step

    async def run() -> object:
        s = AsyncSession(shop)
        if kind in ("save", "delete"):
            buyer = Buyer(buyer_id=args[0], email=args[1] if kind == "save" else "a@x.com")
            (s.save if kind == "save" else s.delete)(buyer)
            return await s.commit()
        if kind == "get":
            return await s.get(Buyer, buyer_id=args[0])
        if kind == "get_many":
            return await s.get_many(Buyer, [{"buyer_id": i} for i in args[0]])
        return await s.scan(Buyer).page_size(2).page()
    return _act(step)[0], lambda: asyncio.run(run())


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
    wait = shop.max_wait
    shop.max_wait = 0  # (faults retried without waiting)
    shop.connect(backend)
    try:
        yield
    finally:
        shop.db.tracing.tracer_provider = None
        shop.db.tracing.metrics.meter_provider = None
        shop.delete()
        shop.max_wait = wait


@settings(max_examples=examples(12), deadline=None, suppress_health_check=list(HealthCheck))
@given(program=st.lists(STEPS, min_size=1, max_size=5),
       extra=st.sampled_from(sorted(EXTRAS)))
def test_a_hook_beside_the_tracer_changes_nothing_it_exports(
        fresh: None, program: list[tuple[Any, ...]], extra: str) -> None:
    """The same program with the tracer alone and with ``extra`` beside it: the same
    spans, metric points and outcomes, traced; sampled out, no span and the same points."""
    alone = _run(program, None)
    assert any(alone[0])
    beside = _run(program, extra)
    assert beside == alone
    dropped = _run(program, extra, sampler=ALWAYS_OFF)
    assert dropped == ([[] for _ in program], alone[1], alone[2])
    dropped_alone = _run(program, None, sampler=ALWAYS_OFF)
    assert dropped_alone == dropped
    quiet = _run(program, extra, sampler=ALWAYS_OFF, meters=False)
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
    baseline = _run(program, extra)
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(_Failing(where))
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    shop.delete()
    shop.create()
    shop.db.tracing.tracer_provider = provider
    ended = []
    with caplog.at_level(logging.ERROR, logger="dynaorm"):
        for step in program:
            operations, act = _act(step)
            with _hooked(extra), inject_faults(shop) as faults:
                arm(faults, operations, step[-1])
                ended.append(_ended(act))
    assert ended == baseline[2]
    assert not shop.db.tracing._open
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
    baseline = _run(program, extra, meters=False)
    shop.delete()
    shop.create()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    shop.db.tracing.tracer_provider = provider
    shop.db.tracing.metrics.meter_provider = _BrokenMeters()
    spans, ended = [], []
    for step in program:
        exporter.clear()
        operations, act = _act(step)
        with _hooked(extra), inject_faults(shop) as faults:
            arm(faults, operations, step[-1])
            ended.append(_ended(act))
        finished = exporter.get_finished_spans()
        names = {s.context.span_id: s.name for s in finished if s.context is not None}
        spans.append(sorted(_span(s, names) for s in finished))
    assert ended == baseline[2]
    assert not shop.db.tracing._open
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
    baseline = _run(program, "noop")
    EXTRAS["suppressing"] = _Suppressing
    try:
        suppressed = _run(program, "suppressing")
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

    with serving(reply) as server:
        bound = shop.binding()
        try:
            shop.connect(server.url)
            shop.wire = "dynaorm"
            shop.max_wait = 0
            for extra in (None, "noop"):
                exporter = InMemorySpanExporter()
                provider = TracerProvider()
                provider.add_span_processor(SimpleSpanProcessor(exporter))
                shop.db.tracing.tracer_provider = provider
                gate.clear()
                arrived.clear()
                with _hooked(extra):
                    async def main() -> None:
                        task = asyncio.ensure_future(
                            AsyncSession(shop).get(Buyer, buyer_id="b1"))
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
                    assert not shop.db.tracing._open
                    exporter.clear()
                    assert Session(shop).get(Buyer, buyer_id="b1") is None
                    assert len(exporter.get_finished_spans()) == 2
        finally:
            gate.set()
            shop.db.tracing.tracer_provider = None
            shop.restore(bound)


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
    baseline = _run(program, extra)
    dropped = _run(program, extra, sampler=ALWAYS_OFF)
    try:
        for kind in (Plain, Wrapping):
            shop.db.tracing = kind()
            assert _run(program, extra) == baseline
            assert _run(program, extra, sampler=ALWAYS_OFF) == dropped
    finally:
        shop.db.tracing = Tracing()


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
@given(program=st.lists(STEPS, min_size=1, max_size=5))
def test_a_quiet_operation_hides_its_attempts_from_the_tracer_alone(
        fresh: None, program: list[tuple[Any, ...]]) -> None:
    """Sampled out with nothing for its attempts to do (no meter, dynaorm's own route, no
    instrumentation imported), an operation is quiet for the tracer: the tracer sees no
    attempt of it, another hook beside it sees every attempt and every end a traced run
    shows it; the same outcomes, no span, nothing left open."""
    import sys

    EXTRAS["counting"] = Counting
    hook = shop.db.tracing
    try:
        Counting.seen = []
        traced = _run(program, "counting")
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
            quiet = _run(program, "counting", sampler=ALWAYS_OFF, meters=False)
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

    shop.create()
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    shop.db.tracing.tracer_provider = provider
    hook = shop.db.add_hook(_Interrupt(kind))
    try:
        with pytest.raises(KeyboardInterrupt):
            Session(shop).get(Buyer, buyer_id="b1")
    finally:
        shop.db.remove_hook(hook)
    assert not trace.get_current_span().get_span_context().is_valid
    assert not shop.db.tracing._open
    finished = {s.name: s for s in exporter.get_finished_spans()}
    assert finished["dynaorm.get"].status.status_code.name == "ERROR"
    if kind is Attempt:
        assert finished["DynamoDB.GetItem"].status.status_code.name == "ERROR"
    exporter.clear()
    assert Session(shop).get(Buyer, buyer_id="b1") is None  # traced as usual after
    assert sorted(s.name for s in exporter.get_finished_spans()) == [
        "DynamoDB.GetItem", "dynaorm.get"]


# == async sessions, cancelled mid-attempt =================================================
@settings(max_examples=examples(6), deadline=None, suppress_health_check=list(HealthCheck))
@given(program=st.lists(STEPS, min_size=1, max_size=4),
       extra=st.sampled_from(sorted(EXTRAS)))
def test_async_a_hook_beside_the_tracer_changes_nothing_it_exports(
        fresh: None, program: list[tuple[Any, ...]], extra: str) -> None:
    """The property above in async sessions, and with every operation cancelled in its
    first attempt (a hook cancelling its task): the same spans, points and outcomes with a
    hook beside the tracer as without; nothing left open."""
    alone = _run(program, None, aio=True)
    assert _run(program, extra, aio=True) == alone
    EXTRAS["cancel"] = Cancel
    try:
        cancelled = _run(program, "cancel", aio=True)
        assert set(cancelled[2]) == {"cancelled"}
        if extra != "cancel":
            EXTRAS["both"] = lambda: _Both(Cancel(), EXTRAS[extra]())
            try:
                assert _run(program, "both", aio=True) == cancelled
            finally:
                del EXTRAS["both"]
        assert _run(program, "cancel", aio=True, sampler=ALWAYS_OFF) == (
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
    with serving(lambda n, request: Reply(answer(json_body({})))) as server:
        bound = shop.binding()
        try:
            shop.connect(server.url)
            shop.wire = "dynaorm"
            hook = shop.db.tracing
            during = Operation("reencrypt", (shop.name,), (Buyer,))
            request = {"TableName": shop.name, "Key": {"pk": {"S": "BUYER#b1"},
                                                        "sk": {"S": "BUYER"}}}
            hook.tracer_provider = TracerProvider(sampler=ALWAYS_OFF)
            reached: list[str] = []
            started = hook.on_start
            monkeypatch.setattr(hook, "on_start", lambda phase: (
                reached.append(type(phase).__name__), started(phase))[1])
            shop.db.driver.run(call("GetItem", request, (Buyer,)), during)
            assert reached == ["Operation"]  # (quiet: its attempt never reached the hook)
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            hook.tracer_provider = provider
            shop.db.driver.run(call("GetItem", request, (Buyer,)), during)
            assert not hook._open
            assert sorted(s.name for s in exporter.get_finished_spans()) == [
                "DynamoDB.GetItem", "dynaorm.reencrypt"]
        finally:
            shop.db.tracing = type(shop.db.tracing)()
            shop.restore(bound)


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

    with serving(reply) as server:
        bound = shop.binding()
        try:
            shop.connect(server.url)
            shop.wire = "dynaorm"
            exporter = InMemorySpanExporter()
            provider = TracerProvider()
            provider.add_span_processor(SimpleSpanProcessor(exporter))
            shop.db.tracing.tracer_provider = provider
            hook = shop.db.add_hook(Told())
            during = Operation("reencrypt", (shop.name,), (Buyer,))
            request = {"TableName": shop.name, "Key": {"pk": {"S": "BUYER#b1"},
                                                        "sk": {"S": "BUYER"}}}
            with pytest.raises(RequestError):
                shop.db.driver.run(call("UpdateItem", request, (Buyer,),
                                        idempotent=False), during)
            exporter.clear()
            assert "Item" not in shop.db.driver.run(call("GetItem", request, (Buyer,)), during)
            shop.db.remove_hook(hook)
            assert told[-1] is None
            op = next(s for s in exporter.get_finished_spans() if s.name == "dynaorm.reencrypt")
            assert op.status.status_code.name == "UNSET"
            assert op.attributes is not None and op.attributes["dynaorm.outcome"] == "ok"
        finally:
            shop.db.tracing = type(shop.db.tracing)()
            shop.restore(bound)
