"""Honest outcomes (contract 4, 0.2): writes the server applied but whose answer the client
lost, on moto and DynamoDB Local. Faults are botocore event handlers on the table's real
client (tests/faults.py): the request really reaches the backend and is applied there, then
the client sees a read timeout, a dropped connection or a 500, and retries."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dynaorm import (
    ConcurrentModificationError,
    ItemExistsError,
    ItemNotFoundError,
    OutcomeUnknownError,
    RequestError,
)
from dynaorm.testing import TestBackend
from tests.faults import Faults
from tests.models import Audit, Note, User

LOST = ("timeout", "closed", "500")


@pytest.fixture
def faults(db: TestBackend) -> Iterator[Faults]:
    db.table.transport.max_wait = 0  # retry without waiting
    f = Faults(db.table)
    yield f
    f.clear()


def _note(db: TestBackend, **fields: str) -> Note:
    note = Note(note_id="n1", **fields)
    with db.session() as s:
        s.save(note)
    return note


@pytest.mark.parametrize("how", LOST)
def test_applied_then_lost_insert_is_a_success(db: TestBackend, faults: Faults,
                                                how: str) -> None:
    """0.1 reported ItemExistsError here: the retry found the item its first attempt wrote."""
    sent = faults.count()
    faults.lose("PutItem", how=how)
    note = _note(db, body="hello")
    assert sent["PutItem"] == 2
    assert [(i["note_id"], i["body"]) for i in db.scan()] == [("n1", "hello")]
    assert note._dynaorm_state is not None  # persisted: it can be updated
    note.body = "again"
    with db.session() as s:
        s.save(note)
    assert [i["body"] for i in db.scan()] == ["again"]


def test_applied_then_lost_update_is_a_success(db: TestBackend, faults: Faults) -> None:
    note = _note(db, body="one")
    faults.lose("UpdateItem")
    note.body = "two"
    with db.session() as s:
        s.save(note)
    assert [i["body"] for i in db.scan()] == ["two"]
    note.body = "three"  # its persisted state is what is stored: the next update applies
    with db.session() as s:
        s.save(note)
    assert [i["body"] for i in db.scan()] == ["three"]


@pytest.mark.parametrize("how", LOST)
def test_applied_then_lost_delete_is_a_success(db: TestBackend, faults: Faults,
                                                how: str) -> None:
    """0.1 reported ItemNotFoundError: the retry found the item its first attempt deleted."""
    note = _note(db)
    sent = faults.count()
    faults.lose("DeleteItem", how=how)
    with db.session() as s:
        s.delete(note)
    assert sent["DeleteItem"] == 2
    assert db.scan() == []


def test_applied_then_lost_transaction_is_a_success(db: TestBackend, faults: Faults) -> None:
    """A user with two unique guards: one TransactWriteItems. DynamoDB Local replays the
    token; moto ignores tokens, and the retry's cancellation shows the commit's own items."""
    sent = faults.count()
    faults.lose("TransactWriteItems", how="500")
    user = User(username="ada", email="ada@x.com")
    with db.session() as s:
        s.save(user)
    assert sent["TransactWriteItems"] == 2
    assert len(db.scan()) == 3  # the user and its two guards, once
    assert user._dynaorm_state is not None
    user.full_name = "Ada L."
    with db.session() as s:
        s.save(user)
    assert [i.get("full_name") for i in db.scan() if i.get("_type") == "User"] == ["Ada L."]


def test_applied_then_throttled_is_outcome_unknown(db: TestBackend, faults: Faults) -> None:
    """The first attempt is applied and its answer lost; every retry is throttled until the
    attempts run out: nobody can say from the answers what is stored."""
    sent = faults.count()
    faults.lose("PutItem")
    faults.refuse("PutItem", after=1)
    note = Note(note_id="n1", body="maybe")
    s = db.session()
    s.save(note)
    with pytest.raises(OutcomeUnknownError) as err:
        s.commit()
    assert err.value.operation == "PutItem"
    assert err.value.keys == [{"pk": "NOTE#n1", "sk": "NOTE"}]
    assert "ThrottlingException" in str(err.value) and "Note" in str(err.value)
    assert sent["PutItem"] == 5
    assert note._dynaorm_state is None  # not known to be persisted
    assert [i["body"] for i in db.scan()] == ["maybe"]  # ... but it was applied


def test_applied_then_throttled_transaction_is_outcome_unknown(db: TestBackend,
                                                               faults: Faults) -> None:
    faults.lose("TransactWriteItems", how="closed")
    faults.refuse("TransactWriteItems", after=1)
    s = db.session()
    s.save(User(user_id="u1", username="ada", email="ada@x.com"))
    with pytest.raises(OutcomeUnknownError) as err:
        s.commit()
    assert err.value.operation == "TransactWriteItems"
    assert {k["pk"] for k in err.value.keys} == {"USER#u1", "username#ada",
                                                 "email#ada@x.com"}
    assert len(db.scan()) == 3


def test_ambiguous_then_a_condition_on_another_state_is_a_definite_error(
        db: TestBackend, faults: Faults) -> None:
    """The first attempt got a 500 without reaching the server; the retry's condition
    fails on an item this commit did not write: the right typed error, nothing written."""
    _note(db, body="theirs")
    before = db.scan()
    faults.refuse("PutItem", times=1, status=500, code="InternalServerError")
    s = db.session()
    s.save(Note(note_id="n1", body="mine"))
    with pytest.raises(ItemExistsError):
        s.commit()
    assert db.scan() == before


def test_ambiguous_update_then_another_writer_is_concurrent_modification(
        db: TestBackend, faults: Faults) -> None:
    """A versioned entity (a transaction): the retry's version condition fails on the
    version another writer stored, not on one this commit wrote."""
    audit = Audit(equipment_id="E1", part="P1", notes="one")
    with db.session() as s:
        s.save(audit)
    other = db.session().get(Audit, equipment_id="E1", part="P1")
    assert other is not None
    other.notes = "theirs"
    with db.session() as s:
        s.save(other)
    before = db.scan()
    faults.refuse("TransactWriteItems", times=1, status=503, code="ServiceUnavailable")
    audit.notes = "mine"
    s = db.session()
    s.save(audit)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan() == before


def test_ambiguous_update_of_a_deleted_item_is_item_not_found(
        db: TestBackend, faults: Faults) -> None:
    note = _note(db, body="one")
    with db.session() as s:
        s.delete(Note(note_id="n1"))
    faults.refuse("UpdateItem", times=1, status=500, code="InternalServerError")
    note.body = "two"
    s = db.session()
    s.save(note)
    with pytest.raises(ItemNotFoundError):
        s.commit()
    assert db.scan() == []


def test_throttling_alone_is_a_definite_request_error(db: TestBackend, faults: Faults) -> None:
    """Throttled attempts were refused, never applied: a definite failure, not unknown."""
    faults.refuse("PutItem")
    s = db.session()
    s.save(Note(note_id="n1"))
    with pytest.raises(RequestError) as err:
        s.commit()
    assert not isinstance(err.value, OutcomeUnknownError)
    assert err.value.code == "ThrottlingException"
    assert db.scan() == []
