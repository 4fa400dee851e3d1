"""Red team 08e, tracing state kept across calls (the tracing hook's tracer, made once per
provider and kept on the client's hook; its lock; the open operations it keeps): what
must never happen across a provider switched mid-run, ``os.fork``, several event loops,
a module reload and pickling.

- an attempt sampled in under one provider loses its span, or exports it to another
  provider under a parent that provider never sees, because the client's provider was
  switched (by another thread or task: the hook is the client's) while it was in flight;
- a child of ``os.fork()`` deadlocks on the tracing hook's lock a parent's thread held at
  the fork, or exports a span its parent had open;
- on several event loops (``asyncio.run`` again, loops in threads, many tasks on each)
  an operation's span is parented to another task's span, an attempt's span to another
  operation's, a span is exported twice or a sampled-in one is missing;
- a reload of the tracing module stops tracing or breaks a client's later operations;
- a session, client or hook pickles into something that does not work, or refuses with
  anything but a pickling error.

No engine is needed: the operations go to a loopback server (dynaorm's own wire, where an
attempt's span is made at its end) or moto in-process. moto marker only."""

from __future__ import annotations

import asyncio
import os
import pickle
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NoOpTracerProvider

from dynaorm import AsyncSession, Entity, Hook, Session, Table
from dynaorm.protocol.hooks import Attempt
from dynaorm.protocol.tracing import Tracing
from tests.support.examples import examples
from tests.support.hostile import Reply, answer, json_body, serving

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

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
    with serving(lambda n, request: Reply(answer(json_body({})))) as server:
        bound = loop_table.binding()
        try:
            loop_table.connect(server.url)
            loop_table.wire = "dynaorm"
            yield server.url
        finally:
            loop_table.db.tracing = Tracing()
            loop_table.restore(bound)


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
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
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
