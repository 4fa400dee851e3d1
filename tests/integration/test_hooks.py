"""Phase hooks (contract 19): a hook attached to a client sees the start and end of every
session operation (a commit, a get, each page of a query or scan, a bulk call) and of
every HTTP attempt, with what a span needs; several attach at once and nest in the order
they were added; a hook may answer an attempt without sending it; nothing a hook does
wrong turns a request into a failure. The same on both kinds of session. What an attempt
says of its answer without a backend: ``unit/test_hooks.py``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from dynaorm import Attempt, Hook, Operation, RequestError, Session
from dynaorm.testing import TestBackend, inject_faults
from tests.support.models import Note, User, app


class Journal(Hook):
    """Writes down every phase, as ``(start|end, kind, detail)``."""

    def __init__(self, name: str, seen: list[tuple[str, ...]]) -> None:
        self.name = name
        self.seen = seen

    def _detail(self, phase: Any) -> str:
        if isinstance(phase, Operation):
            return f"op:{phase.name}:{','.join(phase.tables)}:" + ",".join(
                e.__name__ for e in phase.entities)
        return f"attempt:{phase.operation}#{phase.number}"

    def on_start(self, phase: Any) -> object:
        self.seen.append((self.name, "start", self._detail(phase)))
        return self.name

    def on_end(self, phase: Any, token: Any) -> object:
        assert token == self.name  # each hook gets its own token back
        outcome = "error" if (phase.error is not None) else "ok"
        self.seen.append((self.name, "end", self._detail(phase), outcome))
        return None


@pytest.fixture
def journal(db: TestBackend) -> list[tuple[str, ...]]:
    seen: list[tuple[str, ...]] = []
    app.db.add_hook(Journal("outer", seen))
    app.db.add_hook(Journal("inner", seen))
    return seen


def test_a_commit_is_one_operation_around_its_attempts(db: TestBackend,
                                                       journal: list[tuple[str, ...]]) -> None:
    s = db.session()
    s.save(User(user_id="u1", username="ada", email="ada@example.com"))
    s.commit()
    op = f"op:commit:{app.name}:User"
    assert journal == [
        ("outer", "start", op), ("inner", "start", op),
        ("outer", "start", "attempt:TransactWriteItems#1"),
        ("inner", "start", "attempt:TransactWriteItems#1"),
        ("inner", "end", "attempt:TransactWriteItems#1", "ok"),
        ("outer", "end", "attempt:TransactWriteItems#1", "ok"),
        ("inner", "end", op, "ok"), ("outer", "end", op, "ok")]


def test_a_failed_operation_ends_with_its_error(db: TestBackend,
                                                journal: list[tuple[str, ...]]) -> None:
    with db.session() as s:
        s.save(Note(note_id="n1"))
    journal.clear()
    s = db.session()
    s.save(Note(note_id="n1"))  # exists: ItemExistsError
    with pytest.raises(Exception, match="exists"):
        s.commit()
    ends = [e for e in journal if e[1] == "end" and e[0] == "outer"]
    assert ends == [("outer", "end", "attempt:PutItem#1", "error"),
                    ("outer", "end", f"op:commit:{app.name}:Note", "error")]


def test_each_page_of_a_read_is_one_operation(db: TestBackend,
                                              journal: list[tuple[str, ...]]) -> None:
    db.session().save_many([Note(note_id=f"n{i:02d}") for i in range(5)])
    journal.clear()
    found = list(db.session().scan(Note).page_size(2))
    assert len(found) == 5
    pages = [e for e in journal if e[:2] == ("outer", "start") and e[2].startswith("op:")]
    assert pages == [("outer", "start", f"op:scan:{app.name}:Note")] * 3
    attempts = [e for e in journal if e[:2] == ("outer", "start") and "attempt" in e[2]]
    assert attempts == [("outer", "start", "attempt:Scan#1")] * 3
    # every attempt is inside its page: start page, attempt, end page, ...
    kinds = [("op" if e[2].startswith("op:") else "at", e[1])
             for e in journal if e[0] == "outer"]
    assert kinds == [("op", "start"), ("at", "start"), ("at", "end"), ("op", "end")] * 3


def test_retries_are_numbered_attempts_of_one_operation(db: TestBackend) -> None:
    app.max_wait = 0  # retries without waiting (rebinds the table: hook the new client)
    seen: list[tuple[str, ...]] = []
    app.db.add_hook(Journal("outer", seen))
    with inject_faults(app) as faults:
        faults.throttle("GetItem", times=2)
        assert db.session().get(Note, note_id="none") is None
    attempts = [e for e in seen if e[1] == "end" and "attempt" in e[2]]
    assert attempts == [("outer", "end", "attempt:GetItem#1", "error"),
                        ("outer", "end", "attempt:GetItem#2", "error"),
                        ("outer", "end", "attempt:GetItem#3", "ok")]


class Answers(Hook):
    """Answers every GetItem itself: nothing is sent."""

    def on_start(self, phase: Any) -> object:
        if isinstance(phase, Attempt) and phase.operation == "GetItem":
            phase.response = {"Item": {"pk": {"S": "NOTE#x"}, "sk": {"S": "NOTE"},
                                       "_type": {"S": "Note"}, "body": {"S": "canned"}}}
        return None


def test_a_hook_may_answer_an_attempt_without_sending_it(db: TestBackend) -> None:
    sent: list[Attempt] = []

    class Watch(Hook):
        def on_end(self, phase: Any, token: Any) -> object:
            if isinstance(phase, Attempt):
                sent.append(phase)
            return None

    app.db.add_hook(Watch())
    app.db.add_hook(Answers())
    got = db.session().get(Note, note_id="x")
    assert got is not None and got.body == "canned"
    assert [(a.operation, a.sent) for a in sent] == [("GetItem", False)]


def test_a_hooks_answer_with_a_null_type_attribute_is_no_entity(db: TestBackend) -> None:
    """A hook's answer holds whatever the hook put there: an item whose type attribute is
    not DynamoDB JSON is none of the entity's (it raised AttributeError)."""
    class NullType(Hook):
        def on_start(self, phase: Any) -> object:
            if isinstance(phase, Attempt) and phase.operation == "GetItem":
                phase.response = {"Item": {"pk": {"S": "NOTE#x"}, "sk": {"S": "NOTE"},
                                           "_type": None, "body": {"S": "canned"}}}
            return None

    app.db.add_hook(NullType())
    assert db.session().get(Note, note_id="x") is None


class Broken(Hook):
    def on_start(self, phase: Any) -> object:
        raise RuntimeError("a faulty hook")

    def on_end(self, phase: Any, token: Any) -> object:
        raise RuntimeError("a faulty hook")


def test_a_faulty_hook_never_fails_a_request(db: TestBackend,
                                             caplog: pytest.LogCaptureFixture) -> None:
    app.db.add_hook(Broken())
    with db.session() as s:
        s.save(Note(note_id="n1"))
    assert db.session().get(Note, note_id="n1") is not None
    assert "faulty hook" in caplog.text or "failed at the" in caplog.text


@pytest.mark.sync_only
def test_an_awaitable_from_a_hook_is_awaited_in_async_and_refused_in_sync(
        db: TestBackend, caplog: pytest.LogCaptureFixture) -> None:
    if db.endpoint_url is None:
        pytest.skip("aiobotocore cannot reach moto's in-process mock")
    awaited: list[str] = []

    class Later(Hook):
        def on_end(self, phase: Any, token: Any) -> object:
            if isinstance(phase, Attempt) and phase.operation == "GetItem":
                async def note() -> None:
                    awaited.append(phase.operation)
                return note()
            return None

    app.db.add_hook(Later())

    async def main() -> None:
        from dynaorm import AsyncSession

        assert await AsyncSession(app).get(Note, note_id="n") is None
        await app.db.aclose()

    asyncio.run(main())
    assert awaited == ["GetItem"]
    # a sync session cannot await it: closed and logged, and the request stands
    assert Session(app).get(Note, note_id="n") is None
    assert awaited == ["GetItem"] and "AsyncSession" in caplog.text


def test_a_removed_hook_sees_nothing(db: TestBackend) -> None:
    seen: list[tuple[str, ...]] = []
    hook = app.db.add_hook(Journal("gone", seen))
    app.db.remove_hook(hook)
    app.db.remove_hook(hook)  # no error when not attached
    db.session().get(Note, note_id="n")
    assert seen == []


def test_on_request_of_a_table_and_of_its_client(db: TestBackend) -> None:
    by_table: list[str] = []
    by_client: list[str] = []
    app.on_request(lambda e: by_table.append(e.operation))
    app.db.on_request(lambda e: by_client.append(e.operation))
    db.session().get(Note, note_id="n")
    with pytest.raises(RequestError):
        from dynaorm.protocol.steps import call

        app.db.driver.run(call("GetItem", {"TableName": "dynaorm-nope",
                                           "Key": {"pk": {"S": "a"}, "sk": {"S": "b"}}}))
    assert by_table == ["GetItem"]  # another table's request is not this table's
    assert by_client[0] == "GetItem" and len(by_client) >= 2


def test_a_faulty_awaitable_never_fails_a_write(db: TestBackend,
                                               caplog: pytest.LogCaptureFixture) -> None:
    """A hook's awaitable that raises (a tracer's export, say) is logged; the write it
    ended stands and is reported, and every other hook still ends the attempt."""
    if db.endpoint_url is None:
        pytest.skip("aiobotocore cannot reach moto's in-process mock")
    seen: list[tuple[str, ...]] = []

    class Failing(Hook):
        def on_end(self, phase: Any, token: Any) -> object:
            if isinstance(phase, Attempt):
                async def export() -> None:
                    raise RuntimeError("tracer export failed")
                return export()
            return None

    app.db.add_hook(Journal("outer", seen))
    app.db.add_hook(Failing())

    async def main() -> None:
        from dynaorm import AsyncSession

        s = AsyncSession(app)
        note = Note(note_id="n1")
        s.save(note)
        await s.commit()
        from dynaorm import inspect

        assert inspect(note).persisted
        await app.db.aclose()

    asyncio.run(main())
    assert "tracer export failed" in caplog.text
    assert ("outer", "end", "attempt:PutItem#1", "ok") in seen
    assert [r["pk"] for r in db.scan()] == ["NOTE#n1"]


def test_a_cancelled_operation_ends_with_its_attempt(db: TestBackend) -> None:
    """Cancelled while its request is in flight: the attempt still ends (interrupted), and
    the operation ends with the cancellation as its error."""
    if db.endpoint_url is None:
        pytest.skip("aiobotocore cannot reach moto's in-process mock")
    ended: list[tuple[str, Any]] = []

    class Slow(Hook):
        def on_start(self, phase: Any) -> object:
            return None

        def on_end(self, phase: Any, token: Any) -> object:
            if isinstance(phase, Attempt):
                ended.append(("attempt", phase.interrupted))
            else:
                ended.append(("operation", type(phase.error).__name__))
            return None

    held: list[asyncio.Event] = []

    class Stall(Hook):  # holds the attempt: the task is cancelled meanwhile
        def on_end(self, phase: Any, token: Any) -> object:
            if isinstance(phase, Attempt):
                held[0].set()
                return asyncio.sleep(30)
            return None

    slow, stall = app.db.add_hook(Slow()), app.db.add_hook(Stall())

    async def main() -> None:
        from dynaorm import AsyncSession

        # (cancelled once the stall holds the attempt, not after a fixed time: on a loaded
        # machine the answer could take longer than the wait, and the attempt was cut short)
        held.append(asyncio.Event())
        task = asyncio.ensure_future(AsyncSession(app).get(Note, note_id="n"))
        await asyncio.wait_for(held[0].wait(), 120)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await app.db.aclose()

    asyncio.run(main())
    app.db.remove_hook(stall)
    app.db.remove_hook(slow)
    assert ended == [("attempt", False), ("operation", "CancelledError")]


def test_a_hook_that_wants_no_items_sees_the_same_answer_on_every_engine(
        db: TestBackend) -> None:
    """A hook that says ``wants_items = False`` saw a read's objects in ``Item``/``Items``
    on dynaorm's own wire (decoded straight from the bytes) and DynamoDB's attribute maps
    on botocore's (the embedded default), so it could pass its tests and fail in
    production: it now sees no item member on any engine or wire, the answer's other
    members as they are, and the reads return what they always did; a hook that wants
    items sees attribute maps everywhere."""
    seen: list[tuple[str, str, frozenset[str]]] = []

    class Looking(Hook):
        wants_items = False

        def __init__(self, name: str) -> None:
            self.name = name

        def on_end(self, phase: Any, token: Any) -> object:
            if isinstance(phase, Attempt) and phase.response is not None and (
                    phase.operation in ("GetItem", "Scan", "Query", "BatchGetItem")):
                seen.append((self.name, phase.operation, frozenset(phase.response)))
            return None

    with db.session() as s:
        s.save(Note(note_id="n1", body="b"))
        s.save(User(user_id="u1", username="ada", email="ada@example.com"))
    quiet = app.db.add_hook(Looking("quiet"))
    try:
        s = db.session()
        got = s.get(User, user_id="u1")
        assert got is not None and got.username == "ada"
        assert [n.note_id for n in s.scan(Note)] == ["n1"]
        assert [n.note_id for n in s.query(Note, note_id="n1")] == ["n1"]
        assert [u.user_id for u in s.get_many(User, [{"user_id": "u1"}]) if u] == ["u1"]
        maps: list[Any] = []

        class Reading(Hook):
            def on_end(self, phase: Any, token: Any) -> object:
                if isinstance(phase, Attempt) and phase.operation == "GetItem":
                    maps.append((phase.response or {}).get("Item"))
                return None

        reading = app.db.add_hook(Reading())
        try:
            assert db.session().get(User, user_id="u1") == got
        finally:
            app.db.remove_hook(reading)
    finally:
        app.db.remove_hook(quiet)
    quiet_views = [(op, members) for name, op, members in seen[:4]]
    assert [op for op, _ in quiet_views] == ["GetItem", "Scan", "Query", "BatchGetItem"]
    for _, members in quiet_views:
        assert not members & {"Item", "Items", "Responses"}, members
    assert "Count" in quiet_views[1][1] and "ResponseMetadata" in quiet_views[0][1]
    (item,) = maps
    assert isinstance(item, dict) and item["username"] == {"S": "ada"}
    # (with a hook that wants items attached, the quiet one sees them too: one answer)
    assert "Item" in seen[4][2]
