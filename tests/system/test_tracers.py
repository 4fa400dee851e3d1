"""The tracers teams already run, on DynamoDB Local (contract 19, Tracing): OpenTelemetry's
botocore / aiobotocore instrumentation next to dynaorm's own spans (no double spans:
botocore's span is the attempt's, under dynaorm's operation span), and the AWS Lambda
trace header ``X-Amzn-Trace-Id`` on every wire and both kinds of session, exactly as
botocore decides it. dynaorm's own spans: ``integration/test_tracing.py``."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import quote

import pytest
from opentelemetry.instrumentation.botocore import (
    AiobotocoreInstrumentor,
    BotocoreInstrumentor,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from dynaorm import AsyncSession, Client, Session
from dynaorm.protocol.steps import call
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.concurrency import join_all
from tests.support.models import Note, app
from tests.support.spans import Spans

BOTOCORE_SCOPE = "opentelemetry.instrumentation.botocore.dynamodb"
#: a commit of one item then a get, botocore's spans the attempts, under dynaorm's
SAVE_THEN_GET = [
    ("DynamoDB.GetItem", "dynaorm.get", BOTOCORE_SCOPE),
    ("DynamoDB.PutItem", "dynaorm.commit", BOTOCORE_SCOPE),
    ("dynaorm.commit", None, "dynaorm"),
    ("dynaorm.get", None, "dynaorm")]


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    found = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(found))
    found.provider = provider  # type: ignore[attr-defined]
    yield found
    provider.shutdown()


def _on(ddb_local: str, wire: str) -> Any:
    return use_tables(app, endpoint_url=ddb_local, name_suffix=worker_suffix(), wire=wire)


def _tree(spans: tuple[ReadableSpan, ...]) -> list[tuple[str, str | None, str]]:
    """``(name, parent's name, instrumentation scope)`` of every span."""
    by_id = {s.context.span_id: s.name for s in spans if s.context is not None}
    return sorted((s.name, by_id.get(s.parent.span_id) if s.parent else None,
                   s.instrumentation_scope.name if s.instrumentation_scope else "")
                  for s in spans)


def _traced(exporter: InMemorySpanExporter) -> None:
    """Trace ``app``'s client from now on (what creating the table sent is dropped)."""
    app.db.tracing.tracer_provider = exporter.provider  # type: ignore[attr-defined]
    exporter.clear()


def _untraced(exporter: InMemorySpanExporter) -> tuple[ReadableSpan, ...]:
    """Stop tracing (deleting the table is not traced); the spans exported so far."""
    app.db.tracing.tracer_provider = None
    return exporter.get_finished_spans()


@pytest.fixture
def botocore_instrumented(exporter: InMemorySpanExporter) -> Iterator[None]:
    provider = exporter.provider  # type: ignore[attr-defined]
    BotocoreInstrumentor().instrument(tracer_provider=provider)
    AiobotocoreInstrumentor().instrument(tracer_provider=provider)
    try:
        yield
    finally:
        BotocoreInstrumentor().uninstrument()
        AiobotocoreInstrumentor().uninstrument()


def test_botocore_instrumentation_makes_the_attempt_spans_on_the_botocore_wire(
        ddb_local: str, exporter: InMemorySpanExporter, botocore_instrumented: None) -> None:
    """wire="botocore", sync: the instrumentation's span is each attempt's, a child of
    dynaorm's operation span; dynaorm makes no span of its own for the attempt."""
    with _on(ddb_local, "botocore"):
        _traced(exporter)
        with Session(app) as s:
            s.save(Note(note_id="n1"))
        assert Session(app).get(Note, note_id="n1") is not None
        spans = _untraced(exporter)
    assert _tree(spans) == SAVE_THEN_GET
    put = next(s for s in spans if s.name == "DynamoDB.PutItem")
    assert put.attributes is not None and put.attributes["aws.request_id"]


def test_aiobotocore_instrumentation_makes_them_in_an_async_session(
        ddb_local: str, exporter: InMemorySpanExporter, botocore_instrumented: None) -> None:
    async def main() -> None:
        s = AsyncSession(app)
        s.save(Note(note_id="n1"))
        await s.commit()
        await AsyncSession(app).get(Note, note_id="n1")
        await app.db.aclose()

    with _on(ddb_local, "botocore"):
        _traced(exporter)
        asyncio.run(main())
        spans = _untraced(exporter)
    assert _tree(spans) == SAVE_THEN_GET


def test_only_botocore_instrumented_an_async_session_keeps_dynaorm_attempt_spans(
        ddb_local: str, exporter: InMemorySpanExporter) -> None:
    """Only botocore (sync) instrumented: aiobotocore's calls make no span, so an async
    session's attempts keep dynaorm's."""
    BotocoreInstrumentor().instrument(
        tracer_provider=exporter.provider)  # type: ignore[attr-defined]

    async def main() -> None:
        await AsyncSession(app).get(Note, note_id="n1")
        await app.db.aclose()

    try:
        with _on(ddb_local, "botocore"):
            _traced(exporter)
            asyncio.run(main())
            spans = _untraced(exporter)
    finally:
        BotocoreInstrumentor().uninstrument()
    assert _tree(spans) == [
        ("DynamoDB.GetItem", "dynaorm.get", "dynaorm"), ("dynaorm.get", None, "dynaorm")]


def test_retried_attempts_are_botocores_spans_under_one_operation(
        ddb_local: str, exporter: InMemorySpanExporter, botocore_instrumented: None) -> None:
    from dynaorm.testing import inject_faults

    with _on(ddb_local, "botocore"):
        app.max_wait = 0
        _traced(exporter)
        with inject_faults(app) as faults:  # a lost answer: sent for real, then lost
            faults.lose_answer("GetItem")
            assert Session(app).get(Note, note_id="n1") is None
        spans = _untraced(exporter)
    assert _tree(spans) == [
        ("DynamoDB.GetItem", "dynaorm.get", BOTOCORE_SCOPE),
        ("DynamoDB.GetItem", "dynaorm.get", BOTOCORE_SCOPE),
        ("dynaorm.get", None, "dynaorm")]


def test_the_own_wire_keeps_dynaorm_attempt_spans_with_instrumentation_installed(
        ddb_local: str, exporter: InMemorySpanExporter, botocore_instrumented: None) -> None:
    with _on(ddb_local, "dynaorm"):
        _traced(exporter)
        assert Session(app).get(Note, note_id="n1") is None
        spans = _untraced(exporter)
    assert _tree(spans) == [
        ("DynamoDB.GetItem", "dynaorm.get", "dynaorm"), ("dynaorm.get", None, "dynaorm")]


# -- the Lambda trace header -------------------------------------------------------------
class _Recorder(BaseHTTPRequestHandler):
    """Answers every request with an empty DynamoDB answer; keeps the headers it got."""

    protocol_version = "HTTP/1.1"
    seen: list[dict[str, str]] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        body = json.dumps({}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("x-amzn-RequestId", "R1")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.fixture
def recorder() -> Iterator[str]:
    _Recorder.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Recorder)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


_GET = {"TableName": "t", "Key": {"pk": {"S": "a"}, "sk": {"S": "b"}}}
TRACE_ID = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"


def _sent_header(endpoint: str, wire: str, session: str) -> str | None:
    client = Client(endpoint, "us-east-1", wire=wire)
    if session == "sync":
        client.driver.run(call("GetItem", _GET))
    else:
        async def main() -> None:
            await client.async_driver.run(call("GetItem", _GET))
            await client.aclose()

        asyncio.run(main())
    client.close()
    (headers,) = _Recorder.seen
    _Recorder.seen.clear()
    return headers.get("x-amzn-trace-id")


@pytest.fixture
def credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    monkeypatch.delenv("AWS_PROFILE", raising=False)


def _needs_wire_branch(wire: str, found: str | None) -> None:
    if wire == "dynaorm" and found is None:
        pytest.xfail("dynaorm's own wire sends X-Amzn-Trace-Id from the wire branch "
                     "(issue 28) on")


@pytest.mark.parametrize("session", ["sync", "async"])
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
@pytest.mark.parametrize("trace_id", [
    TRACE_ID, "Root=1-abc;Lineage=a b\r\nX-Injected: 1;Sampled=0"])
def test_under_lambda_the_trace_header_is_sent_as_botocore_sends_it(
        recorder: str, credentials: None, monkeypatch: pytest.MonkeyPatch, wire: str,
        session: str, trace_id: str) -> None:
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "handler")
    monkeypatch.setenv("_X_AMZN_TRACE_ID", trace_id)
    found = _sent_header(recorder, wire, session)
    _needs_wire_branch(wire, found)
    assert found == quote(trace_id, safe="-=;:+&[]{}\"',")  # botocore's own quoting


@pytest.mark.parametrize("session", ["sync", "async"])
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_outside_lambda_no_trace_header(recorder: str, credentials: None,
                                        monkeypatch: pytest.MonkeyPatch, wire: str,
                                        session: str) -> None:
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    monkeypatch.setenv("_X_AMZN_TRACE_ID", TRACE_ID)  # set, but not in a Lambda function
    assert _sent_header(recorder, wire, session) is None
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "handler")
    monkeypatch.delenv("_X_AMZN_TRACE_ID")  # in a Lambda function, no trace
    assert _sent_header(recorder, wire, session) is None



def test_a_lambda_wire_reads_each_invocations_trace_id(
        recorder: str, credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """In Lambda a client outlives invocations, and each invocation has its own trace id:
    the wire reads it at each request (only whether it runs in Lambda is read once, when
    the wire is made)."""
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "handler")
    client = Client(recorder, "us-east-1", wire="dynaorm")
    try:
        for trace_id in ("Root=1-a;Sampled=1", "Root=1-b;Sampled=0"):
            monkeypatch.setenv("_X_AMZN_TRACE_ID", trace_id)
            client.driver.run(call("GetItem", _GET))
        monkeypatch.delenv("_X_AMZN_TRACE_ID")
        client.driver.run(call("GetItem", _GET))
    finally:
        client.close()
    sent = [headers.get("x-amzn-trace-id") for headers in _Recorder.seen]
    assert sent == ["Root=1-a;Sampled=1", "Root=1-b;Sampled=0", None]


def test_a_wire_made_outside_lambda_stays_outside(
        recorder: str, credentials: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lambda sets its variables before the process starts: a wire made without
    ``AWS_LAMBDA_FUNCTION_NAME`` looks for no trace id later (botocore's wire reads both
    at each request)."""
    monkeypatch.delenv("AWS_LAMBDA_FUNCTION_NAME", raising=False)
    client = Client(recorder, "us-east-1", wire="dynaorm")
    try:
        client.driver.run(call("GetItem", _GET))  # (the wire is made here)
        monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "handler")
        monkeypatch.setenv("_X_AMZN_TRACE_ID", TRACE_ID)
        client.driver.run(call("GetItem", _GET))
    finally:
        client.close()
    assert [headers.get("x-amzn-trace-id") for headers in _Recorder.seen] == [None, None]


# -- the global provider, configured late, in a fresh process ----------------------------
_LATE = """
import sys
from dynaorm import Entity, Table
from dynaorm.testing import moto_backend, use_tables

t = Table("dynaorm-late")

class Thing(Entity):
    class Meta:
        table = t
        pk = "T#{thing_id}"
        sk = "T"
    thing_id: str

with moto_backend(), use_tables(t) as db:
    db.session().get(Thing, thing_id="a")            # no provider yet: nothing traced
    print("before:", "opentelemetry.trace" in sys.modules, t.db.tracing.active())
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    print("api alone:", t.db.tracing.active())
    trace.set_tracer_provider(provider)              # the client exists, its policy made
    db.session().get(Thing, thing_id="a")
    print("after:", sorted(s.name for s in exporter.get_finished_spans()))
"""

_FROM_ENVIRONMENT = """
import opentelemetry.trace
from dynaorm import Client
print("active:", Client("http://127.0.0.1:9", "us-east-1").tracing.active())
"""


def _python(code: str, **env: str) -> str:
    import os
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, **env}, timeout=120, check=False)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_provider_configured_after_the_client_is_used_is_traced() -> None:
    out = _python(_LATE).splitlines()
    assert out == ["before: False False", "api alone: False",
                   "after: ['DynamoDB.GetItem', 'dynaorm.get']"]


def test_a_provider_made_from_the_environment_is_used() -> None:
    """``OTEL_PYTHON_TRACER_PROVIDER`` (as auto-instrumentation sets it): the API makes
    the global provider on first use; the check sees it."""
    assert _python(_FROM_ENVIRONMENT, OTEL_PYTHON_TRACER_PROVIDER="sdk_tracer_provider"
                   ).split() == ["active:", "True"]
    assert _python(_FROM_ENVIRONMENT).split() == ["active:", "False"]


# -- an attempt cut off in flight ----------------------------------------------------------
class _Hanging(BaseHTTPRequestHandler):
    """Never answers until the test releases it."""

    protocol_version = "HTTP/1.1"
    release = threading.Event()

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).release.wait(30)

    def log_message(self, format: str, *args: Any) -> None:
        return None


@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_an_attempt_cancelled_in_flight_ends_interrupted(
        credentials: None, exporter: InMemorySpanExporter, wire: str) -> None:
    from dynaorm import Operation

    _Hanging.release = threading.Event()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hanging)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = Client(f"http://127.0.0.1:{server.server_address[1]}", "us-east-1", wire=wire)
    client.tracing.tracer_provider = exporter.provider  # type: ignore[attr-defined]

    async def main() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(client.async_driver.run(
                call("GetItem", _GET), Operation("get", ("t",))), 0.3)
        _Hanging.release.set()
        await client.aclose()

    try:
        asyncio.run(main())
    finally:
        _Hanging.release.set()
        server.shutdown()
        server.server_close()
    spans = {s.name: s for s in exporter.get_finished_spans()}
    op, attempt = spans["dynaorm.get"], spans.get("DynamoDB.GetItem")
    assert op.attributes is not None and op.attributes["dynaorm.outcome"] == "cancelled"
    assert attempt is not None and attempt.attributes is not None
    assert attempt.attributes["dynaorm.outcome"] == "interrupted"
    assert attempt.parent is not None and op.context is not None
    assert attempt.parent.span_id == op.context.span_id


@pytest.mark.parametrize("session", ["sync", "async"])
def test_botocore_spans_of_concurrent_parts_nest_under_their_operation(
        ddb_local: str, exporter: InMemorySpanExporter, botocore_instrumented: None,
        session: str) -> None:
    """A get_many's BatchGetItem requests run in threads (sync) or tasks (async): each
    of botocore's spans is a child of the one get_many span."""
    keys = [{"note_id": f"n{i:03d}"} for i in range(250)]  # three requests

    async def main() -> None:
        await AsyncSession(app).get_many(Note, keys, concurrency=3)
        await app.db.aclose()

    with _on(ddb_local, "botocore"):
        _traced(exporter)
        if session == "sync":
            Session(app).get_many(Note, keys, concurrency=3)
        else:
            asyncio.run(main())
        spans = _untraced(exporter)
    assert _tree(spans) == [("DynamoDB.BatchGetItem", "dynaorm.get_many", BOTOCORE_SCOPE)] * 3 + [
        ("dynaorm.get_many", None, "dynaorm")]


def test_an_attempt_botocore_never_saw_is_dynaorms_span(
        ddb_local: str, exporter: InMemorySpanExporter, botocore_instrumented: None) -> None:
    """A hook answered the first attempt (a throttle injected): botocore never sent it,
    so dynaorm's span stands for it, beside botocore's span of the retry."""
    from dynaorm.testing import inject_faults

    with _on(ddb_local, "botocore"):
        app.max_wait = 0
        _traced(exporter)
        with inject_faults(app) as faults:
            faults.throttle("GetItem")
            assert Session(app).get(Note, note_id="n1") is None
        spans = _untraced(exporter)
    assert _tree(spans) == [
        ("DynamoDB.GetItem", "dynaorm.get", "dynaorm"),
        ("DynamoDB.GetItem", "dynaorm.get", BOTOCORE_SCOPE),
        ("dynaorm.get", None, "dynaorm")]
    ours = next(s for s in spans if s.name == "DynamoDB.GetItem"
                and s.instrumentation_scope is not None
                and s.instrumentation_scope.name == "dynaorm")
    assert ours.attributes is not None
    assert ours.attributes["dynaorm.sent"] is False
    assert ours.attributes["error.type"] == "ThrottlingException"
    assert ours.attributes["dynaorm.attempt"] == 1
    botocore_span = next(s for s in spans if s is not ours and s.name == "DynamoDB.GetItem")
    assert ours.end_time is not None and botocore_span.start_time is not None
    assert ours.end_time <= botocore_span.start_time


# -- threads sharing one client --------------------------------------------------------------
@pytest.mark.sync_only  # threads sharing one client
def test_threads_sharing_a_client_nest_under_their_own_callers(db: TestBackend) -> None:
    """Eight threads share the client, each under its own span, its gets and commits
    interleaving with the others': every operation span is its own thread's caller's
    child, every attempt its own operation's (on the botocore wire, where each attempt's
    span is made current while it is sent, too)."""
    spans = Spans()
    spans.attach()

    def work(i: int) -> None:
        with spans.tracer.start_as_current_span(f"caller{i}"):
            for n in range(3):
                with db.session() as s:
                    s.save(Note(note_id=f"t{i}-{n}"))
                db.session().get(Note, note_id=f"t{i}-{n}")

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    join_all(threads)
    for i in range(8):
        (caller,) = spans.named(f"caller{i}")
        ops = spans.children(caller)
        assert sorted(o.name for o in ops) == ["dynaorm.commit"] * 3 + ["dynaorm.get"] * 3
        for op in ops:
            assert [a.name for a in spans.children(op)] == [
                "DynamoDB.PutItem" if op.name == "dynaorm.commit" else "DynamoDB.GetItem"]
    assert len(spans.named("DynamoDB.")) == 48 and not app.db.tracing._open
    app.db.tracing.tracer_provider = None
