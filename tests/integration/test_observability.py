"""Observability (contract 17) and CommitResult (contract 4), on moto and DynamoDB Local:
the ``dynaorm`` logger, ``table.on_request`` hooks, what a commit reports it sent."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from dynaorm import CommitResult, RequestError, RequestEvent
from dynaorm.testing import TestBackend
from tests.support.faults import Faults
from tests.support.models import Audit, Note, User

pytestmark = pytest.mark.sync_only  # instruments of the sync client (see conftest)

USER_KEY = {"pk": "USER#u1", "sk": "PROFILE"}


@pytest.fixture
def events(db: TestBackend) -> Iterator[list[RequestEvent]]:
    seen: list[RequestEvent] = []
    hook = db.table.on_request(seen.append)
    assert hook == seen.append  # returned as given: usable as a decorator
    yield seen
    db.table._listeners.remove(hook)


@pytest.fixture
def faults(db: TestBackend) -> Iterator[Faults]:
    db.table.max_wait = 0
    f = Faults(db.table)
    yield f
    f.clear()


def _ada() -> User:
    return User(user_id="u1", username="ada", email="ada@x.com")


# -- the logger ----------------------------------------------------------------------------
def test_one_debug_record_per_attempt(db: TestBackend, faults: Faults,
                                      caplog: pytest.LogCaptureFixture) -> None:
    faults.refuse("TransactWriteItems", times=1)
    with caplog.at_level(logging.DEBUG, logger="dynaorm"), db.session() as s:
        s.save(_ada())
    records = [r for r in caplog.records if r.name == "dynaorm"]
    assert [(r.operation, r.table, r.actions, r.attempt, r.error)  # type: ignore[attr-defined]
            for r in records] == [
        ("TransactWriteItems", db.table.name, 3, 1, "ThrottlingException"),
        ("TransactWriteItems", db.table.name, 3, 2, None)]
    for r in records:
        assert r.levelno == logging.DEBUG
        assert isinstance(r.ms, float) and r.ms >= 0  # type: ignore[attr-defined]
        assert isinstance(r.consumed_capacity, dict)  # type: ignore[attr-defined]
        message = r.getMessage()
        assert "TransactWriteItems" in message and db.table.name in message
        assert "3 action(s)" in message and f"attempt {r.attempt}" in message  # type: ignore[attr-defined]
        assert " ms" in message and "consumed capacity" in message


def test_nothing_logged_above_debug(db: TestBackend, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="dynaorm"), db.session() as s:
        s.save(_ada())
    assert [r for r in caplog.records if r.name == "dynaorm"] == []


# -- on_request ----------------------------------------------------------------------------
def test_hook_sees_a_commit_with_guards(db: TestBackend, events: list[RequestEvent]) -> None:
    with db.session() as s:
        s.save(_ada())
    (event,) = events
    assert event.operation == "TransactWriteItems" and event.table == db.table.name
    assert event.origins == ((User, USER_KEY, "row"), (User, USER_KEY, "guard"),
                             (User, USER_KEY, "guard"))
    assert len(event.request["TransactItems"]) == 3
    assert event.response is not None and event.error is None
    assert event.attempt == 1 and event.elapsed > 0
    assert isinstance(event.consumed_capacity, dict)


def test_hook_sees_versioned_roles(db: TestBackend, events: list[RequestEvent]) -> None:
    audit = Audit(equipment_id="E1", part="P1")
    with db.session() as s:
        s.save(audit)
    roles = [role for _, _, role in events[-1].origins]
    assert sorted(roles) == ["latest", "version"]
    assert {entity for entity, _, _ in events[-1].origins} == {Audit}


def test_hook_sees_each_failed_attempt(db: TestBackend, events: list[RequestEvent],
                                       faults: Faults) -> None:
    faults.refuse("PutItem", times=2)
    with db.session() as s:
        s.save(Note(note_id="n1"))
    assert [(e.attempt, e.error is None) for e in events] == [(1, False), (2, False),
                                                              (3, True)]
    first = events[0]
    assert isinstance(first.error, RequestError) and first.response is None
    assert first.error.code == "ThrottlingException"
    assert first.origins == ((Note, {"pk": "NOTE#n1", "sk": "NOTE"}, "row"),)


def test_hook_sees_reads(db: TestBackend, events: list[RequestEvent]) -> None:
    db.session().get(Note, note_id="n1")
    list(db.session().query(Note, note_id="n1"))
    assert [e.operation for e in events] == ["GetItem", "Query"]
    assert all(e.response is not None for e in events)
    assert [e.origins for e in events] == [(Note,), (Note,)]


def test_a_failing_hook_does_not_fail_the_request(db: TestBackend,
                                                  caplog: pytest.LogCaptureFixture) -> None:
    @db.table.on_request
    def broken(event: RequestEvent) -> None:
        raise RuntimeError("hook bug")

    try:
        with db.session() as s:
            s.save(Note(note_id="n1"))
    finally:
        db.table._listeners.remove(broken)
    assert len(db.scan()) == 1
    assert any("hook bug" in (r.exc_text or "") or r.exc_info for r in caplog.records
               if r.name == "dynaorm")


# -- CommitResult --------------------------------------------------------------------------
def test_commit_result_lists_the_requests_sent(db: TestBackend,
                                               events: list[RequestEvent]) -> None:
    s = db.session()
    s.save(_ada())
    result = s.commit()
    assert isinstance(result, CommitResult)
    ((operation, request),) = result.requests
    assert operation == "TransactWriteItems"
    assert request["ClientRequestToken"] and request["ReturnConsumedCapacity"] == "INDEXES"
    assert [a["Put"]["Item"]["pk"]["S"] for a in request["TransactItems"]] == [
        "USER#u1", "username#ada", "email#ada@x.com"]
    capacity: dict[str, float] = {}
    for e in events:
        for name, units in e.consumed_capacity.items():
            capacity[name] = capacity.get(name, 0.0) + units
    assert result.consumed_capacity == capacity


def test_commit_result_includes_reads_made_to_plan(db: TestBackend) -> None:
    with db.session() as s:
        s.save(_ada())
    s = db.session()
    s.delete(_ada())  # not loaded: the commit reads the stored user to find its guards
    result = s.commit()
    assert [op for op, _ in result.requests] == ["GetItem", "TransactWriteItems"]
    assert db.scan() == []


def test_commit_result_lists_a_retried_request_once(db: TestBackend, faults: Faults) -> None:
    sent = faults.count()
    faults.refuse("PutItem", times=2)
    s = db.session()
    s.save(Note(note_id="n1"))
    result = s.commit()
    assert sent["PutItem"] == 3
    assert [op for op, _ in result.requests] == ["PutItem"]


def test_commit_result_consumed_capacity(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1"))
    assert s.commit().consumed_capacity == {db.table.name: 1.0}
    s.save(_ada())
    capacity = s.commit().consumed_capacity
    if db.endpoint_url:  # DynamoDB Local reports transactions, with the index share
        assert capacity[db.table.name] > 0 and capacity[f"{db.table.name}/gsi1"] > 0
        assert set(capacity) == {db.table.name, f"{db.table.name}/gsi1"}


def test_empty_commit_result() -> None:
    from dynaorm import Session
    from tests.support.models import app

    result = Session(app).commit()
    assert result.requests == [] and result.consumed_capacity == {}


def test_commit_with_nothing_to_write_is_empty(db: TestBackend) -> None:
    note = Note(note_id="n1")
    with db.session() as s:
        s.save(note)
    s = db.session()
    s.save(note)  # unchanged
    result = s.commit()
    assert result.requests == [] and result.consumed_capacity == {}


