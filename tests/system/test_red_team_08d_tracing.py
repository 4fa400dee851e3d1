"""Red team 08d, tracing state kept across calls (``Operation.quiet``, the tracing hook's
tracer and the metrics' instruments, made once per provider and kept on the client's
hook): what must never happen when the tracer or meter provider changes between calls,
under threads.

- a thread that switched the meter provider gets, or leaves behind for every later call,
  the instruments of another provider (the provider seen and its instruments were two
  attributes written one after the other: a second thread between the writes paired
  them wrongly, for good);
- the same for the tracing hook's tracer and the provider it was made from;
- sampled and dropped operations from many threads on one client: a dropped one's
  attempts leave a span, a sampled one's attempt is missing, or an attempt lands under
  another operation's span.

The interleavings are forced (a line trace pauses one thread between the two writes);
no engine is needed: the operations go to a loopback server (dynaorm's own wire, where
``Operation.quiet`` applies). moto marker only, for the fixture-free selection."""

from __future__ import annotations

import inspect
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult

from dynaorm import Entity, Session, Table
from dynaorm.protocol.metrics import Metrics
from dynaorm.protocol.tracing import Tracing
from tests.support.hostile import Reply, answer, json_body, serving

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]


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

    with serving(script) as server:
        bound = loop.binding()
        try:
            loop.connect(server.url)
            loop.wire = "dynaorm"
            loop.db.tracing.tracer_provider = provider
            errors: list[BaseException] = []

            def work() -> None:
                try:
                    for n in range(15):
                        assert Session(loop).get(Thing, thing_id=f"{n}") is None
                except BaseException as exc:
                    errors.append(exc)

            threads = [threading.Thread(target=work, name=f"w{i}") for i in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(60)
            assert not errors, errors
        finally:
            loop.db.tracing.tracer_provider = None
            loop.restore(bound)
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
