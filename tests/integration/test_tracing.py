"""OpenTelemetry tracing (contract 19, Tracing) with the real SDK and its in-memory
exporter: one span per session operation, one child span per HTTP attempt, nested under
the caller's span, with the semantic conventions' attributes and dynaorm's own; retried
attempts and lost answers; both kinds of session (the ``local-async`` variant) and both
wires (``DYNAORM_WIRE=botocore``, dynoxide). The botocore instrumentation's spans and the
Lambda trace header are in ``system/test_tracers.py``."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import Decision, Sampler, SamplingResult
from opentelemetry.trace import SpanKind, StatusCode

from dynaorm import (
    Attempt,
    OutcomeUnknownError,
    RequestError,
    Session,
    ThrottledError,
    ThrottlingReason,
)
from dynaorm.testing import TestBackend, inject_faults
from tests.conftest import engine_of
from tests.support.models import Note, User, app
from tests.support.spans import Spans

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")


@pytest.fixture
def spans(db: TestBackend) -> Iterator[Spans]:
    found = Spans()
    found.attach()
    yield found
    app.db.tracing.tracer_provider = None  # the table's teardown is not traced
    found.provider.shutdown()


def _own_wire(db: TestBackend) -> bool:
    return db.endpoint_url is not None and app.db.wire == "dynaorm"


def _one(found: list[ReadableSpan]) -> ReadableSpan:
    assert len(found) == 1, [s.name for s in found]
    return found[0]


def _session_kind(db: TestBackend) -> str:
    return "async" if getattr(db, "session_kind", "sync") == "async" else "sync"


def test_a_commit_is_a_span_under_the_callers_with_a_child_per_attempt(
        db: TestBackend, spans: Spans) -> None:
    with spans.tracer.start_as_current_span("handler") as handler:
        s = db.session()
        s.save(Note(note_id="n1", body="hello"))
        s.commit()
    op = _one(spans.named("dynaorm.commit"))
    assert op.parent is not None and op.parent.span_id == handler.get_span_context().span_id
    assert op.kind is SpanKind.INTERNAL
    assert op.attributes is not None
    assert op.attributes["dynaorm.operation"] == "commit"
    assert op.attributes["dynaorm.entity_types"] == ("Note",)
    assert op.attributes["aws.dynamodb.table_names"] == (app.name,)
    assert op.attributes["dynaorm.outcome"] == "ok"
    assert op.attributes["dynaorm.attempts"] == 1
    assert op.attributes["rpc.method"] == "PutItem"
    assert op.attributes["dynaorm.session"] == _session_kind(db)
    assert op.status.status_code is StatusCode.UNSET
    attempt = _one(spans.children(op))
    assert attempt.name == "DynamoDB.PutItem" and attempt.kind is SpanKind.CLIENT
    a = attempt.attributes
    assert a is not None
    assert (a["rpc.system"], a["rpc.service"], a["rpc.method"]) == (
        "aws-api", "DynamoDB", "PutItem")
    assert a["aws.dynamodb.table_names"] == (app.name,)
    assert a["dynaorm.attempt"] == 1 and a["dynaorm.actions"] == 1
    assert a["dynaorm.entity_types"] == ("Note",)
    assert a["dynaorm.outcome"] == "ok"
    assert a["http.status_code"] == 200 and a["http.response.status_code"] == 200
    if db.endpoint_url is not None:  # where it went, as botocore's instrumentation says
        from urllib.parse import urlsplit

        url = urlsplit(db.endpoint_url)
        assert (a["server.address"], a["server.port"]) == (url.hostname, url.port)
        assert a["cloud.region"]
    (capacity,) = a["aws.dynamodb.consumed_capacity"]  # type: ignore[misc]
    assert app.name in str(capacity)
    assert attempt.start_time is not None and op.start_time is not None
    assert op.start_time <= attempt.start_time
    assert attempt.end_time is not None and op.end_time is not None
    assert attempt.end_time <= op.end_time


def test_attempt_spans_carry_the_request_id(db: TestBackend, spans: Spans) -> None:
    db.session().get(Note, note_id="none")
    attempt = _one(spans.named("DynamoDB.GetItem"))
    assert attempt.attributes is not None
    if "aws.request_id" not in attempt.attributes and _own_wire(db):
        pytest.xfail("dynaorm's own wire answers with ResponseMetadata from the wire "
                     "branch (issue 28) on")
    assert attempt.attributes["aws.request_id"]


def test_a_failed_request_carries_its_request_id_and_error(db: TestBackend,
                                                           spans: Spans) -> None:
    with db.session() as s:
        s.save(Note(note_id="n1"))
    spans.clear()
    s = db.session()
    s.save(Note(note_id="n1"))  # exists
    with pytest.raises(Exception, match="exists"):
        s.commit()
    op = _one(spans.named("dynaorm.commit"))
    attempt = _one(spans.children(op))
    assert attempt.attributes is not None and op.attributes is not None
    assert attempt.attributes["error.type"] == "ConditionalCheckFailedException"
    assert attempt.attributes["dynaorm.outcome"] == "failed"
    assert attempt.attributes["http.status_code"] == 400
    assert attempt.status.status_code is StatusCode.ERROR
    assert [e.name for e in attempt.events] == ["exception"]
    if db.endpoint_url is not None:  # the answer's id, on both wires
        assert attempt.attributes["aws.request_id"]
    assert op.attributes["error.type"] == "ItemExistsError"
    assert op.attributes["dynaorm.outcome"] == "failed"
    assert op.status.status_code is StatusCode.ERROR
    assert [e.name for e in op.events] == ["exception"]
    assert op.events[0].attributes is not None
    assert op.events[0].attributes["exception.type"].endswith("ItemExistsError")


def test_a_transaction_names_each_entity_type(db: TestBackend, spans: Spans,
                                              request: pytest.FixtureRequest) -> None:
    s = db.session()
    s.save(User(user_id="u1", username="ada", email="ada@example.com"))
    s.save(Note(note_id="n1"))
    s.commit()
    op = _one(spans.named("dynaorm.commit"))
    attempt = _one(spans.children(op))
    assert attempt.name == "DynamoDB.TransactWriteItems"
    assert attempt.attributes is not None and op.attributes is not None
    assert set(op.attributes["dynaorm.entity_types"]) == {"User", "Note"}  # type: ignore[arg-type]
    assert attempt.attributes["dynaorm.actions"] == 4  # the user, two guards, the note
    if engine_of(request) != "moto":  # moto reports no capacity for a transaction
        assert op.attributes["dynaorm.consumed_capacity"] > 0  # type: ignore[operator]


def test_each_page_of_a_scan_is_a_span_with_its_attempt(db: TestBackend,
                                                        spans: Spans) -> None:
    db.session().save_many([Note(note_id=f"n{i:02d}") for i in range(5)])
    spans.clear()
    with spans.tracer.start_as_current_span("listing") as listing:
        found = list(db.session().scan(Note).page_size(2))
    assert len(found) == 5
    pages = spans.named("dynaorm.scan")
    assert len(pages) == 3
    for page in pages:
        assert page.parent is not None
        assert page.parent.span_id == listing.get_span_context().span_id
        attempt = _one(spans.children(page))
        assert attempt.name == "DynamoDB.Scan"
        assert attempt.attributes is not None
        assert attempt.attributes["aws.dynamodb.limit"] >= 2  # type: ignore[operator]
        assert "aws.dynamodb.count" in attempt.attributes


def test_a_bulk_calls_attempts_are_its_children_however_concurrent(
        db: TestBackend, spans: Spans) -> None:
    """get_many sends its BatchGetItem chunks concurrently (threads or tasks): every
    attempt is a child of the one get_many span, none of the caller's."""
    notes = [Note(note_id=f"n{i:03d}") for i in range(250)]
    db.session().save_many(notes, concurrency=4)
    bulk = _one(spans.named("dynaorm.save_many"))
    writes = spans.children(bulk)
    assert writes and {w.name for w in writes} == {"DynamoDB.BatchWriteItem"}
    spans.clear()
    with spans.tracer.start_as_current_span("caller") as caller:
        got = db.session().get_many(Note, [{"note_id": n.note_id} for n in notes],
                                    concurrency=3)
    assert all(g is not None for g in got)
    op = _one(spans.named("dynaorm.get_many"))
    assert op.parent is not None and op.parent.span_id == caller.get_span_context().span_id
    attempts = spans.named("DynamoDB.")
    assert len(attempts) >= 3
    assert {id(s) for s in spans.children(op)} == {id(s) for s in attempts}
    assert op.attributes is not None and op.attributes["dynaorm.attempts"] == len(attempts)


def test_a_retried_attempt_is_another_child_of_the_operation(db: TestBackend,
                                                             spans: Spans) -> None:
    app.max_wait = 0  # retries without waiting (rebinds the table: trace the new client)
    spans.attach()
    with inject_faults(app) as faults:
        faults.throttle("GetItem", times=2)
        assert db.session().get(Note, note_id="none") is None
    op = _one(spans.named("dynaorm.get"))
    attempts = sorted(spans.children(op), key=lambda s: s.start_time or 0)
    assert [a.name for a in attempts] == ["DynamoDB.GetItem"] * 3
    assert [a.attributes["dynaorm.attempt"] for a in attempts if a.attributes] == [1, 2, 3]
    outcomes = [(a.attributes or {}).get("error.type") for a in attempts]
    assert outcomes == ["ThrottlingException", "ThrottlingException", None]
    assert [a.status.status_code for a in attempts] == [
        StatusCode.ERROR, StatusCode.ERROR, StatusCode.UNSET]
    assert op.attributes is not None
    assert op.attributes["dynaorm.attempts"] == 3 and op.attributes["dynaorm.outcome"] == "ok"
    assert op.status.status_code is StatusCode.UNSET


def test_a_lost_answer_resolved_by_reading_back_is_a_success(db: TestBackend,
                                                             spans: Spans) -> None:
    """The write is applied, its answer lost: the attempt says its outcome is unknown;
    the commit reads the item back, finds its write, and succeeds."""
    with inject_faults(app) as faults:
        faults.lose_answer("PutItem")
        with db.session() as s:
            s.save(Note(note_id="n1", body="applied"))
    op = _one(spans.named("dynaorm.commit"))
    children = spans.children(op)
    lost = _one([c for c in children if c.name == "DynamoDB.PutItem"])
    assert lost.attributes is not None
    assert lost.attributes["dynaorm.outcome"] == "unknown"
    assert lost.attributes["dynaorm.maybe_applied"] is True
    assert lost.attributes["error.type"] == "ConnectionError"
    assert any(c.name == "DynamoDB.GetItem" for c in children)  # the read back
    assert op.attributes is not None and op.attributes["dynaorm.outcome"] == "ok"


def test_a_lost_answer_not_read_back_is_outcome_unknown(db: TestBackend,
                                                        spans: Spans) -> None:
    app.max_wait = 0
    spans.attach()
    with inject_faults(app) as faults:
        faults.lose_answer("PutItem")
        faults.throttle("GetItem", times=None)
        s = db.session()
        s.save(Note(note_id="n1", body="maybe"))
        with pytest.raises(OutcomeUnknownError):
            s.commit()
    op = _one(spans.named("dynaorm.commit"))
    assert op.attributes is not None
    assert op.attributes["dynaorm.outcome"] == "unknown"
    assert op.attributes["error.type"] == "OutcomeUnknownError"
    assert op.status.status_code is StatusCode.ERROR
    children = spans.children(op)
    assert [c.name for c in children].count("DynamoDB.GetItem") == app.db.max_attempts


def test_no_provider_no_hook_in_the_policy(db: TestBackend) -> None:
    """With no tracer provider configured (the suite sets no global one), the tracing
    hook is not even in the policy the drivers read: nothing but the check."""
    from opentelemetry import trace

    if not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        pytest.skip("this process configured a global tracer provider")
    assert app.db.tracing.tracer_provider is None
    assert not app.db.tracing.active()
    assert app.db.tracing not in app.db.policy.hooks
    provider = TracerProvider()
    app.db.tracing.tracer_provider = provider
    assert app.db.policy.hooks[0] is app.db.tracing
    app.db.tracing.enabled = False
    assert app.db.tracing not in app.db.policy.hooks
    db.session().get(Note, note_id="none")  # works either way


def test_tracing_never_makes_a_commit_compute_origins(db: TestBackend,
                                                      spans: Spans) -> None:
    """Tracing reads no origins (they cost a commit work): ``policy.observed`` is off."""
    assert app.db.tracing in app.db.policy.hooks
    assert not app.db.policy.observed


def test_tracing_leaves_reads_decoding_their_bytes_straight_into_objects(
        db: TestBackend, spans: Spans) -> None:
    """Tracing reads no item of an answer (``wants_items = False``): with it and another
    such hook attached, a read on dynaorm's own wire still validates its answer's bytes
    straight into objects (hooks then see no item member of ``attempt.response``, on any
    wire), and the spans still say the answer's count and status; a hook that may read
    items (the default) sees DynamoDB's attribute maps."""
    from dynaorm import Hook

    seen: list[Any] = []

    class Looking(Hook):
        wants_items = False

        def on_end(self, phase: Any, token: Any) -> object:
            if isinstance(phase, Attempt) and phase.operation == "GetItem":
                seen.append((phase.response or {}).get("Item"))
            return None

    db.session().save_many([Note(note_id=f"n{i}", body="b") for i in range(3)])
    with db.session() as s:
        s.save(User(user_id="u1", username="ada", email="ada@example.com"))
    spans.clear()
    hook = app.db.add_hook(Looking())
    try:
        assert sorted(n.note_id for n in db.session().scan(Note)) == ["n0", "n1", "n2"]
        got = db.session().get(User, user_id="u1")
        assert got is not None and got.username == "ada"
        plain = app.db.add_hook(Hook())  # (wants items: the plain decoding)
        try:
            assert db.session().get(User, user_id="u1") == got
        finally:
            app.db.remove_hook(plain)
    finally:
        app.db.remove_hook(hook)
    fast, shaped = seen
    assert isinstance(shaped, dict) and shaped["username"] == {"S": "ada"}
    assert fast is None  # (no hook wants items: none seen, on every engine and wire)
    (scan,) = spans.named("DynamoDB.Scan")
    assert scan.attributes is not None and scan.attributes["aws.dynamodb.count"] == 3
    for get in spans.named("DynamoDB.GetItem"):
        assert get.attributes is not None and get.attributes["dynaorm.outcome"] == "ok"
        assert get.attributes["http.response.status_code"] == 200


def test_a_sampled_out_operation_still_succeeds(db: TestBackend) -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app.db.tracing.tracer_provider = provider
    with db.session() as s:
        s.save(Note(note_id="n1"))
    assert db.session().get(Note, note_id="n1") is not None
    assert exporter.get_finished_spans() == ()



class _Asked(Sampler):
    """A sampler that drops everything and remembers what it was asked: each span's name
    and the attributes it was given."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any]] = []

    def should_sample(self, parent_context: Any, trace_id: int, name: str,
                      kind: SpanKind | None = None, attributes: Any = None,
                      links: Any = None, trace_state: Any = None) -> SamplingResult:
        self.asked.append((name, attributes))
        return SamplingResult(Decision.DROP)

    def get_description(self) -> str:
        return "asked"


def test_a_sampled_out_operation_asks_once_and_builds_nothing(db: TestBackend) -> None:
    """A sampler that drops everything is asked once per operation, for its span, with
    the attributes it has from its start; its attempts make no span (none asked for), and
    nothing is built per call: two gets ask with the very same attributes."""
    sampler = _Asked()
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=sampler)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    app.db.tracing.tracer_provider = provider
    try:
        with db.session() as s:
            s.save(Note(note_id="n1"))
        for _ in range(2):
            assert db.session().get(Note, note_id="n1") is not None
    finally:
        app.db.tracing.tracer_provider = None
    assert exporter.get_finished_spans() == ()
    assert [name for name, _ in sampler.asked] == ["dynaorm.commit", "dynaorm.get",
                                                   "dynaorm.get"]
    (_, first), (_, second) = sampler.asked[1:]
    assert first is second
    assert dict(first) == {
        "rpc.system": "aws-api", "rpc.service": "DynamoDB", "db.system.name": "aws.dynamodb",
        "dynaorm.operation": "get", "dynaorm.session": _session_kind(db),
        "aws.dynamodb.table_names": (app.name,), "db.collection.name": app.name,
        "dynaorm.entity_types": ("Note",)}


@pytest.mark.sync_only
def test_concurrent_async_operations_nest_under_their_own_callers(db: TestBackend) -> None:
    """Tasks interleave their attempts on one loop: each operation span is a child of the
    span current in its own task, each attempt of its own operation."""
    if db.endpoint_url is None:
        pytest.skip("aiobotocore cannot reach moto's in-process mock")
    found = Spans()
    found.attach()

    async def one(i: int) -> None:
        from dynaorm import AsyncSession

        with found.tracer.start_as_current_span(f"caller{i}"):
            s = AsyncSession(app)
            s.save(Note(note_id=f"n{i}"))
            await s.commit()
            await AsyncSession(app).get(Note, note_id=f"n{i}")

    async def main() -> None:
        await asyncio.gather(*(one(i) for i in range(4)))
        await app.db.aclose()

    asyncio.run(main())
    for i in range(4):
        caller = _one(found.named(f"caller{i}"))
        ops = found.children(caller)
        assert sorted(o.name for o in ops) == ["dynaorm.commit", "dynaorm.get"]
        for op in ops:
            assert op.attributes is not None and op.attributes["dynaorm.session"] == "async"
            (attempt,) = found.children(op)
            assert attempt.attributes is not None
            assert attempt.attributes["dynaorm.attempt"] == 1


@pytest.mark.sync_only
def test_an_abandoned_read_ends_its_span(db: TestBackend, spans: Spans) -> None:
    db.session().save_many([Note(note_id=f"n{i:02d}") for i in range(5)])
    spans.clear()
    rows = iter(Session(app).scan(Note).page_size(2))
    assert next(rows) is not None
    del rows  # the rest is never read
    pages = spans.named("dynaorm.scan")
    assert len(pages) == 1 and all(p.end_time is not None for p in pages)


def test_an_attempt_outside_any_operation_is_a_span_of_its_own(db: TestBackend,
                                                               spans: Spans) -> None:
    from dynaorm.protocol.steps import call

    with pytest.raises(RequestError):
        app.db.driver.run(call("GetItem", {"TableName": "dynaorm-nope",
                                           "Key": {"pk": {"S": "a"}, "sk": {"S": "b"}}}))
    attempt = _one(spans.all)
    assert attempt.name == "DynamoDB.GetItem" and attempt.parent is None
    assert attempt.attributes is not None
    assert attempt.attributes["error.type"] == "ResourceNotFoundException"


@pytest.mark.sync_only
def test_a_cancelled_operation_ends_both_spans(db: TestBackend, spans: Spans) -> None:
    """Cancelled while its attempt is in flight: the attempt span ends ``interrupted``,
    the operation span ``cancelled``, and the caller's span is current again."""
    if db.endpoint_url is None:
        pytest.skip("aiobotocore cannot reach moto's in-process mock")
    from opentelemetry import trace

    from dynaorm import AsyncSession, Hook

    holding = asyncio.Event()

    class Stall(Hook):  # holds the answered attempt: the task is cancelled meanwhile
        def on_end(self, phase: Any, token: Any) -> object:
            if not isinstance(phase, Attempt):
                return None
            holding.set()
            return asyncio.sleep(30)

    app.db.add_hook(Stall())

    async def main() -> None:
        with spans.tracer.start_as_current_span("caller") as caller:
            task = asyncio.ensure_future(AsyncSession(app).get(Note, note_id="n"))
            await holding.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert trace.get_current_span() is caller
        await app.db.aclose()

    asyncio.run(main())
    op = _one(spans.named("dynaorm.get"))
    attempt = _one(spans.children(op))
    assert op.attributes is not None and attempt.attributes is not None
    assert op.attributes["dynaorm.outcome"] == "cancelled"
    assert op.attributes["error.type"] == "CancelledError"
    assert attempt.attributes["dynaorm.outcome"] == "ok"  # answered; cancelled after


def test_the_callers_span_stays_current(db: TestBackend, spans: Spans) -> None:
    """Whatever the wire (the botocore one makes each attempt's span current while it is
    sent) and however an operation ends, the caller's span is current after it."""
    from opentelemetry import trace

    app.max_wait = 0
    spans.attach()
    with spans.tracer.start_as_current_span("caller") as caller:
        with inject_faults(app) as faults:
            faults.throttle("GetItem", times=None)
            with pytest.raises(RequestError):
                db.session().get(Note, note_id="n")
        assert trace.get_current_span() is caller
        with db.session() as s:
            s.save(Note(note_id="n1"))
        assert trace.get_current_span() is caller
        assert len(list(db.session().scan(Note).page_size(1))) == 1
        assert trace.get_current_span() is caller
    assert len(spans.named("DynamoDB.GetItem")) == app.db.max_attempts


def test_a_hook_given_to_a_client_traces_it(db: TestBackend, spans: Spans) -> None:
    """``client.tracing = Tracing(provider)``: the client's own hook, replaced."""
    from dynaorm import Tracing

    app.db.tracing = Tracing(spans.provider)
    db.session().get(Note, note_id="n")
    op = _one(spans.named("dynaorm.get"))
    assert [s.name for s in spans.children(op)] == ["DynamoDB.GetItem"]


@pytest.mark.sync_only
def test_each_page_of_check_is_a_span(db: TestBackend, spans: Spans) -> None:
    """``dynaorm check`` (sync tooling): each scanned page is one ``dynaorm.check`` span
    with its Scan attempt; the reads it makes to judge a page are spans of their own."""
    from dynaorm.jobs.checking import check_table

    db.session().save_many([Note(note_id=f"n{i:02d}") for i in range(3)])
    spans.clear()
    check_table(app)
    scans = [p for p in spans.named("dynaorm.check") if p.name == "dynaorm.check"]
    assert scans
    for page in scans:
        assert [c.name for c in spans.children(page)] == ["DynamoDB.Scan"]


def test_suppressed_instrumentation_makes_no_span(db: TestBackend, spans: Spans) -> None:
    """As OpenTelemetry's own instrumentations: inside ``suppress_instrumentation()``
    (an exporter's own calls, say) nothing is traced, the parts of a gathered operation
    included."""
    from opentelemetry.instrumentation.utils import suppress_instrumentation

    with suppress_instrumentation():
        db.session().get(Note, note_id="n")
        db.session().get_many(Note, [{"note_id": f"n{i}"} for i in range(150)],
                              concurrency=2)
    assert spans.all == []
    db.session().get(Note, note_id="n")
    assert [s.name for s in spans.all] == ["DynamoDB.GetItem", "dynaorm.get"]


def test_a_client_pointed_elsewhere_keeps_its_tracing_settings() -> None:
    """``Table.connect`` of a table given ``client=`` binds it to that client pointed at
    another endpoint: the tracing provider (and switch) go with it, as its hooks do."""
    from dynaorm import Client

    provider = TracerProvider()
    client = Client("http://127.0.0.1:9", "us-east-1")
    client.tracing.tracer_provider = provider
    client.tracing.enabled = False
    pointed = client._pointed_at("http://127.0.0.1:10", None)
    assert pointed is not client
    assert pointed.tracing.tracer_provider is provider and not pointed.tracing.enabled


def test_a_patched_global_provider_is_honoured(db: TestBackend, spans: Spans) -> None:
    """Tests that patch ``trace.get_tracer_provider`` (no global provider set) get their
    provider: the check's shortcut reads the API's global only when the API is its own."""
    from unittest import mock

    app.db.tracing.tracer_provider = None
    with mock.patch("opentelemetry.trace.get_tracer_provider", return_value=spans.provider):
        db.session().get(Note, note_id="n")
    assert [s.name for s in spans.all] == ["DynamoDB.GetItem", "dynaorm.get"]


def test_a_plan_that_reads_is_a_span(db: TestBackend, spans: Spans) -> None:
    """``Session.plan()`` reads what the commit would need (here: the stored guards of
    a user deleted without being loaded): one ``dynaorm.plan`` span with its reads."""
    with db.session() as s:
        s.save(User(user_id="u1", username="ada", email="ada@example.com"))
    spans.clear()
    s = db.session()
    s.delete(User(user_id="u1", username="?", email="?"))
    s.plan()
    op = _one(spans.named("dynaorm.plan"))
    assert op.attributes is not None and op.attributes["dynaorm.entity_types"] == ("User",)
    assert [c.name for c in spans.children(op)] == ["DynamoDB.GetItem"]


def test_a_hostile_answer_still_ends_every_span(db: TestBackend, spans: Spans) -> None:
    """An answer whose ``ConsumedCapacity`` entries are not DynamoDB's shape (a hook's):
    the get stands, and both spans end with what could be read (a top-level member of the
    wrong type is refused: tests/integration/test_process_models.py)."""
    from dynaorm import Hook

    class Hostile(Hook):
        def on_start(self, phase: Any) -> object:
            if isinstance(phase, Attempt) and phase.operation == "GetItem":
                phase.response = {"ConsumedCapacity": ["junk", 7]}
            return None

    app.db.add_hook(Hostile())
    assert db.session().get(Note, note_id="n") is None
    op = _one(spans.named("dynaorm.get"))
    attempt = _one(spans.children(op))
    assert op.attributes is not None and attempt.attributes is not None
    assert op.attributes["dynaorm.attempts"] == 1 and op.attributes["dynaorm.outcome"] == "ok"
    assert "dynaorm.consumed_capacity" not in op.attributes
    assert attempt.attributes["aws.dynamodb.consumed_capacity"] == ('"junk"', "7")
    assert attempt.end_time is not None and not app.db.tracing._open



def test_a_throttle_carries_its_reasons_on_every_span_and_event(
        db: TestBackend, spans: Spans) -> None:
    """An injected throttle with DynamoDB's ``ThrottlingReasons``, on every attempt: the
    commit ends in a ThrottledError carrying them, and so do each attempt's span, the
    operation's span and each ``on_request`` event."""
    events: list[Any] = []
    db.table.max_wait = 0
    spans.attach()  # (again: the table is bound anew)
    db.table.on_request(events.append)
    with inject_faults(db.table) as faults:
        faults.throttle("PutItem", times=None, reasons=[
            "TableWriteKeyRangeThroughputExceeded", ThrottlingReason(
                "IndexWriteProvisionedThroughputExceeded", "arn:x:table/t/index/gsi1")])
        s = db.session()
        s.save(Note(note_id="n1"))
        with pytest.raises(ThrottledError) as err:
            s.commit()
    reasons = ("TableWriteKeyRangeThroughputExceeded", "IndexWriteProvisionedThroughputExceeded")
    resources = (f"arn:aws:dynamodb:::table/{db.table.name}", "arn:x:table/t/index/gsi1")
    assert tuple(r.reason for r in err.value.reasons) == reasons
    assert err.value.code == "ProvisionedThroughputExceededException"
    assert [e.error.reasons for e in events] == [err.value.reasons] * 5
    op = _one(spans.named("dynaorm.commit"))
    for span in (op, *spans.children(op)):
        assert span.attributes is not None
        assert span.attributes["dynaorm.throttling_reasons"] == reasons
        assert span.attributes["dynaorm.throttled_resources"] == resources
    assert len(spans.children(op)) == 5
    assert db.scan() == []
