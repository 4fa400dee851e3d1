"""AsyncSession natively (contract section 16), on DynamoDB Local (and one test on the
plugin's moto server): concurrent reads, sharded queries, cursors shared with Session,
parallel scans, typed commit failures that leave the table unchanged, and the shared retry
loop seen through faults injected into the aiobotocore client."""

from __future__ import annotations

import asyncio
import logging
import sys
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from dynaorm import (
    AsyncSession,
    DynaormError,
    Entity,
    ItemExistsError,
    RequestError,
    RequestEvent,
    Session,
    Table,
    UniqueConstraintError,
)
from dynaorm.aio import client
from dynaorm.aio.reads import AsyncQuery
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.concurrency import arun
from tests.support.models import Note, SEvent, SOrder, User, app

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


# wire="botocore": a test below hooks the aiobotocore client's events
knobs = Table("dynaorm-aio-knobs", max_attempts=3, max_wait=0, wire="botocore")


class Knob(Entity):
    class Meta:
        table = knobs
        pk = "KNOB#{knob_id}"
        sk = "KNOB"

    knob_id: str


@pytest.fixture
def local(ddb_local: str) -> Iterator[TestBackend]:
    """The suite's table on DynamoDB Local, fresh."""
    with use_tables(app, endpoint_url=ddb_local, name_suffix=worker_suffix()) as tb:
        yield tb


def notes(n: int) -> list[Note]:
    return [Note(note_id=f"n{i:03}", body=f"body {i}") for i in range(n)]


def test_concurrent_gets_with_gather(local: TestBackend) -> None:
    Session(app).save_many(notes(20))
    seen: list[RequestEvent] = []
    app.on_request(seen.append)

    async def main() -> list[Note | None]:
        s = AsyncSession(app)
        first = await client(app)
        got = await asyncio.gather(*(s.get(Note, note_id=f"n{i:03}") for i in range(24)))
        assert await client(app) is first  # one client per table and event loop
        return got

    try:
        got = arun(main())
    finally:
        app._listeners.remove(seen.append)
    assert [g.note_id if g else None for g in got] == [
        *(f"n{i:03}" for i in range(20)), None, None, None, None]
    assert got[3] == Note(note_id="n003", body="body 3")
    assert sum(e.operation == "GetItem" for e in seen) == 24


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_async_for_over_a_sharded_query(local: TestBackend) -> None:
    orders = [SOrder(order_id=f"o{i:02}", status="open", created=f"2024-01-{i % 28 + 1:02}")
              for i in range(30)]
    Session(app).save_many(orders)
    expected = [o.order_id for o in Session(app).query(SOrder, index="gsi1", status="open")]

    async def main() -> tuple[list[str], list[str], int]:
        s = AsyncSession(app)
        q = s.query(SOrder, index="gsi1", status="open")
        assert isinstance(q, AsyncQuery)
        forward = [o.order_id async for o in q]
        backward = [o.order_id for o in await q.reverse().limit(7).all()]
        return forward, backward, await q.count()

    forward, backward, count = arun(main())
    assert len(expected) == 30
    assert forward == expected  # merged in sort-key order, like the sync scatter-gather
    assert backward == expected[::-1][:7]
    assert count == 30


def test_cursor_from_async_resumes_in_sync_and_back(local: TestBackend) -> None:
    events = [SEvent(day="d1", at=f"{i:03}", event_id=f"e{i}") for i in range(25)]
    Session(app).save_many(events)
    want = [e.event_id for e in Session(app).query(SEvent, day="d1")]

    async def first_page() -> tuple[list[str], str | None]:
        page = await AsyncSession(app).query(SEvent, day="d1").page_size(10).page()
        return [e.event_id for e in page.items], page.cursor

    ids, cursor = arun(first_page())
    assert cursor is not None
    middle = Session(app).query(SEvent, day="d1").page_size(10).page(cursor)
    assert middle.cursor is not None

    async def last_page(c: str) -> tuple[list[str], str | None]:
        page = await AsyncSession(app).query(SEvent, day="d1").page_size(10).page(c)
        return [e.event_id for e in page.items], page.cursor

    rest, end = arun(last_page(middle.cursor))
    assert ids + [e.event_id for e in middle.items] + rest == want
    assert end is None


def test_parallel_scan(local: TestBackend) -> None:
    Session(app).save_many(notes(60))
    segments: list[int] = []

    def hook(event: RequestEvent) -> None:
        if event.operation == "Scan":
            segments.append(event.request["Segment"])

    app.on_request(hook)

    async def main() -> tuple[list[str], int, int]:
        s = AsyncSession(app)
        got = await s.scan(Note, segments=4).all()
        counted = await s.scan(Note, segments=3).count()
        values = await s.scan(Note).filter(
            __import__("dynaorm").F("body") == "body 7").values("body")
        assert values == [{"body": "body 7"}]
        return sorted(n.note_id for n in got), counted, len(await s.scan(Note).keys())

    try:
        ids, counted, keys = arun(main())
    finally:
        app._listeners.remove(hook)
    assert ids == [f"n{i:03}" for i in range(60)]
    assert counted == 60 and keys == 60
    assert set(segments[:4]) == {0, 1, 2, 3}


def test_commit_failures_are_typed_and_change_nothing(local: TestBackend) -> None:
    with Session(app) as s:
        s.save(User(user_id="u1", username="ada", email="ada@example.com"))
    before = local.scan_raw()

    async def insert_again() -> None:
        async with AsyncSession(app) as s:
            s.save(User(user_id="u1", username="other", email="other@example.com"))

    async def steal_email() -> None:
        s = AsyncSession(app)
        s.save(User(user_id="u2", username="bob", email="ADA@example.com"))
        s.save(Note(note_id="n1", body="in the same transaction"))
        await s.commit()

    with pytest.raises(ItemExistsError):
        arun(insert_again())
    with pytest.raises(UniqueConstraintError) as caught:
        arun(steal_email())
    assert "email" in str(caught.value)
    assert local.scan_raw() == before  # nothing was written, not even the note


def test_commit_result_and_staging_mirror_session(local: TestBackend) -> None:
    async def main() -> None:
        s = AsyncSession(app)
        s.save(User(user_id="u1", username="ada", email="ada@example.com"))
        result = await s.commit()
        assert [op for op, _ in result.requests] == ["TransactWriteItems"]
        user = await s.find(User, email="ADA@example.com")
        assert user is not None and user.user_id == "u1"
        user.full_name = "Ada"
        s.save(user)
        s.rollback()
        assert (await s.commit()).requests == []
        s.update(Note, note_id="n9", upsert=True).set(body="made")
        await s.commit()
        assert (await s.get(Note, note_id="n9")) == Note(note_id="n9", body="made")
        await s.save_many(notes(30), concurrency=3)
        got = await s.get_many(Note, [{"note_id": "n001"}, {"note_id": "zz"}])
        assert got == [Note(note_id="n001", body="body 1"), None]
        snap = await s.get_many(Note, [{"note_id": "n002"}], snapshot=True)
        assert snap == [Note(note_id="n002", body="body 2")]
        await s.delete_many(Note, [{"note_id": f"n{i:03}"} for i in range(30)])
        assert await s.scan(Note).count() == 1

    arun(main())


def test_faults_through_the_async_client_count_max_attempts(
        ddb_local: str, caplog: pytest.LogCaptureFixture) -> None:
    attempts: list[int] = []
    knobs.on_request(lambda e: attempts.append(e.attempt) if e.operation == "PutItem" else None)

    async def main() -> RequestError:
        made = await client(knobs)
        sent = [0]

        def throttle(**_: Any) -> tuple[Any, dict[str, Any]]:
            sent[0] += 1
            http = SimpleNamespace(status_code=400, headers={}, content=b"")
            return http, {"Error": {"Code": "ThrottlingException", "Message": "injected"},
                          "ResponseMetadata": {"HTTPStatusCode": 400}}

        made.meta.events.register("before-call.dynamodb.PutItem", throttle)
        try:
            s = AsyncSession(knobs)
            s.save(Knob(knob_id="k1"))
            with pytest.raises(RequestError) as caught:
                await s.commit()
        finally:
            made.meta.events.unregister("before-call.dynamodb.PutItem", throttle)
        assert sent[0] == 3  # Table(max_attempts=3), as for the sync transport
        assert await AsyncSession(knobs).get(Knob, knob_id="k1") is None
        return caught.value

    with (use_tables(knobs, endpoint_url=ddb_local, name_suffix=worker_suffix()),
          caplog.at_level(logging.DEBUG, logger="dynaorm")):
        error = arun(main())
    knobs._listeners.clear()
    assert error.code == "ThrottlingException" and error.attempts == 3
    assert "after 3 attempts" in str(error)
    assert attempts == [1, 2, 3]  # one on_request event per attempt
    records = [r for r in caplog.records if getattr(r, "operation", "") == "PutItem"]
    assert [r.__dict__["attempt"] for r in records] == [1, 2, 3]


def test_on_the_moto_server_fixture(dynaorm_moto_server: str) -> None:
    async def main() -> list[Note]:
        async with AsyncSession(app) as s:
            s.save(Note(note_id="m1", body="served by moto"))
        return await AsyncSession(app).scan(Note).all()

    with use_tables(app, endpoint_url=dynaorm_moto_server, name_suffix="-aio-moto"):
        assert arun(main()) == [Note(note_id="m1", body="served by moto")]


def test_without_aiobotocore_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "aiobotocore", None)
    monkeypatch.setitem(sys.modules, "aiobotocore.session", None)
    monkeypatch.setitem(sys.modules, "aiobotocore.config", None)
    with pytest.raises(DynaormError, match=r'pip install "dynaorm\[async\]"'):
        AsyncSession(Table("dynaorm-aio-absent", wire="botocore"))
    AsyncSession(Table("dynaorm-aio-absent"))  # dynaorm's own wire needs none


def test_no_connection_is_a_request_error_as_for_the_sync_session() -> None:
    dead = Table("dynaorm-aio-dead", endpoint_url="http://127.0.0.1:9", max_attempts=2,
                 max_wait=0)

    class Dead(Entity):
        class Meta:
            table = dead
            pk = "DEAD#{dead_id}"
            sk = "DEAD"

        dead_id: str

    with pytest.raises(RequestError) as from_async:
        arun(AsyncSession(dead).get(Dead, dead_id="d1"))
    with pytest.raises(RequestError) as from_sync:
        Session(dead).get(Dead, dead_id="d1")
    for caught in (from_async.value, from_sync.value):
        assert caught.code == "ConnectionError" and caught.attempts == 2
