"""Honest outcomes (contract 4, 0.2): writes the server applied but whose answer the client
lost, on moto and DynamoDB Local. Faults are botocore event handlers on the table's real
client (tests/support/faults.py): the request really reaches the backend and is applied there, then
the client sees a read timeout, a dropped connection or a 500, and retries. The decision
itself (dynaorm.write.outcomes), without an engine, is in tests/unit/test_outcomes.py."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import dynaorm
from dynaorm import (
    BulkWriteError,
    ConcurrentModificationError,
    ItemExistsError,
    OutcomeUnknownError,
    RequestError,
)
from dynaorm.testing import TestBackend
from tests.support.faults import Faults, faults_on
from tests.support.models import Audit, Note, User

pytestmark = pytest.mark.sync_only  # instruments of the sync client (see conftest)

LOST = ("timeout", "closed", "500")


faults = pytest.fixture(faults_on, name="faults")


@pytest.fixture
def faults3(db: TestBackend) -> Iterator[Faults]:
    """:func:`faults` on a table whose requests are attempted 3 times at most."""
    yield from faults_on(db, attempts=3)


def _note(db: TestBackend, **fields: str) -> Note:
    note = Note(note_id="n1", **fields)
    with db.session() as s:
        s.save(note)
    return note


@pytest.mark.parametrize("how", LOST)
def test_applied_then_lost_insert_is_a_success(db: TestBackend, faults: Faults,
                                                how: str) -> None:
    """0.1 reported ItemExistsError here: the retry found the item its first attempt wrote.
    (0.3) A single-item write is never resent after a lost answer: it is read back."""
    sent = faults.count()
    faults.lose("PutItem", how=how)
    note = _note(db, body="hello")
    assert (sent["PutItem"], sent["GetItem"]) == (1, 1)
    assert [(i["note_id"], i["body"]) for i in db.scan()] == [("n1", "hello")]
    assert dynaorm.inspect(note).persisted  # it can be updated
    note.body = "again"
    with db.session() as s:
        s.save(note)
    assert [i["body"] for i in db.scan()] == ["again"]


@pytest.mark.parametrize("how", LOST)
def test_applied_then_lost_update_is_a_success(db: TestBackend, faults: Faults,
                                               how: str) -> None:
    note = _note(db, body="one")
    sent = faults.count()
    faults.lose("UpdateItem", how=how)
    note.body = "two"
    with db.session() as s:
        s.save(note)
    assert (sent["UpdateItem"], sent["GetItem"]) == (1, 1)
    assert [i["body"] for i in db.scan()] == ["two"]
    note.body = "three"  # its persisted state is what is stored: the next update applies
    with db.session() as s:
        s.save(note)
    assert [i["body"] for i in db.scan()] == ["three"]


@pytest.mark.parametrize("how", LOST)
def test_applied_then_lost_delete_is_unknown_never_resent(db: TestBackend, faults: Faults,
                                                           how: str) -> None:
    """0.1 reported ItemNotFoundError: the retry found the item its first attempt deleted.
    (0.5) 0.2-0.4 reported success because no item was stored: absence proves nothing
    (another writer may have deleted it), and a delete leaves no row to hold its revision:
    OutcomeUnknownError, never resent."""
    note = _note(db)
    sent = faults.count()
    faults.lose("DeleteItem", how=how)
    with pytest.raises(OutcomeUnknownError), db.session() as s:
        s.delete(note)
    assert (sent["DeleteItem"], sent["GetItem"]) == (1, 1)
    assert db.scan() == []


@pytest.mark.parametrize("how", LOST)
def test_applied_then_lost_transaction_is_a_success(db: TestBackend, faults: Faults,
                                                    how: str) -> None:
    """A user with two unique guards: one TransactWriteItems, whose retry carries its token:
    DynamoDB Local and dynaorm's test backend answer it as applied."""
    sent = faults.count()
    faults.lose("TransactWriteItems", how=how)
    user = User(username="ada", email="ada@x.com")
    with db.session() as s:
        s.save(user)
    assert sent["TransactWriteItems"] == 2
    assert len(db.scan()) == 3  # the user and its two guards, once
    assert dynaorm.inspect(user).persisted
    user.full_name = "Ada L."
    with db.session() as s:
        s.save(user)
    assert [i.get("full_name") for i in db.scan() if i.get("_type") == "User"] == ["Ada L."]


def test_applied_then_lost_and_not_read_back_is_outcome_unknown(db: TestBackend,
                                                               faults: Faults) -> None:
    """The attempt is applied and its answer lost; the read back is throttled until its
    attempts run out: nobody can say what is stored (and the write is not resent)."""
    sent = faults.count()
    faults.lose("PutItem")
    faults.refuse("GetItem")
    note = Note(note_id="n1", body="maybe")
    s = db.session()
    s.save(note)
    with pytest.raises(OutcomeUnknownError) as err:
        s.commit()
    assert err.value.operation == "PutItem"
    assert err.value.keys == [{"pk": "NOTE#n1", "sk": "NOTE"}]
    assert "reading the item back failed" in str(err.value) and "Note" in str(err.value)
    assert (sent["PutItem"], sent["GetItem"]) == (1, 5)
    assert not dynaorm.inspect(note).persisted  # not known to be persisted
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


def test_ambiguous_insert_over_another_writers_item_is_unknown_not_a_conflict(
        db: TestBackend, faults: Faults) -> None:
    """(0.3) The attempt got a 500 (here: without reaching the server); the item stored is
    another writer's. The insert may have been applied and then overwritten: never a
    definite ItemExistsError ("nothing written"), and never resent over it."""
    _note(db, body="theirs")
    before = db.scan()
    faults.refuse("PutItem", times=1, status=500, code="InternalServerError")
    s = db.session()
    s.save(Note(note_id="n1", body="mine"))
    with pytest.raises(OutcomeUnknownError) as err:
        s.commit()
    assert not isinstance(err.value, ItemExistsError)
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


def test_ambiguous_update_of_a_deleted_item_is_unknown(
        db: TestBackend, faults: Faults) -> None:
    """(0.3) A 500, and the item is gone: it may have been updated, then deleted."""
    note = _note(db, body="one")
    with db.session() as s:
        s.delete(Note(note_id="n1"))
    faults.refuse("UpdateItem", times=1, status=500, code="InternalServerError")
    note.body = "two"
    s = db.session()
    s.save(note)
    with pytest.raises(OutcomeUnknownError, match="no item is stored now"):
        s.commit()
    assert db.scan() == []


@pytest.mark.engines("moto")  # (every attempt refused before sending)
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


def test_bulk_write_applied_then_lost_is_unknown_and_never_resent(db: TestBackend,
                                                                  faults: Faults) -> None:
    """(0.3) A BatchWriteItem round whose answer is lost is not resent (a resend could
    apply over another writer's newer state): its objects are BulkWriteError.unknown."""
    sent = faults.count()
    faults.lose("BatchWriteItem")
    notes = [Note(note_id=f"n{i}") for i in range(3)]
    with pytest.raises(BulkWriteError) as err:
        db.session().save_many(notes)
    assert (err.value.written, err.value.not_written) == ([], [])
    assert err.value.unknown == notes and sent["BatchWriteItem"] == 1
    assert isinstance(err.value.__cause__, RequestError)
    assert len(db.scan()) == 3  # applied, as far as anyone could tell from the answers


@pytest.mark.engines("moto")  # (every attempt refused before sending)
def test_bulk_write_throttled_is_not_written(db: TestBackend, faults: Faults) -> None:
    sent = faults.count()
    faults.refuse("BatchWriteItem")
    note = Note(note_id="n1")
    with pytest.raises(BulkWriteError) as err:
        db.session().save_many([note])
    assert (err.value.written, err.value.not_written, err.value.unknown) == ([], [note], [])
    ((obj, cause),) = err.value.errors
    assert obj is note and isinstance(cause, RequestError)
    assert cause.code == "ThrottlingException" and sent["BatchWriteItem"] == 5
    assert db.scan() == [] and not dynaorm.inspect(note).persisted


@pytest.mark.parametrize("how", LOST)
def test_applied_then_lost_append_is_never_resent(db: TestBackend, faults: Faults,
                                                  how: str) -> None:
    """A list append (like an ADD) applied twice is a wrong answer: after an attempt that
    may have applied, it is not resent. (0.5) The row holds this write's revision: it
    was applied, once (0.4: unknown, the stored list proving nothing)."""
    _note(db, body="x")
    sent = faults.count()
    faults.lose("UpdateItem", how=how)
    with db.session() as s:
        s.update(Note, note_id="n1").append(tags=["once"])
    # (the read back, whose item is the update's result its lost answer left out)
    assert (sent["UpdateItem"], sent["GetItem"]) == (1, 1)
    assert [i["tags"] for i in db.scan()] == [["once"]]  # applied exactly once


# -- attempts run out ----------------------------------------------------------------------
def test_applied_then_unreadable_update_and_delete_are_outcome_unknown(
        db: TestBackend, faults: Faults) -> None:
    """Applied, answer lost, then the read back is throttled until its attempts run out:
    for an update and for a delete, OutcomeUnknownError names the item; the object keeps
    its last known state (a reload tells what is stored)."""
    note = _note(db, body="one")
    sent = faults.count()
    faults.lose("UpdateItem")
    faults.refuse("GetItem")
    note.body = "two"
    s = db.session()
    s.save(note)
    known = dynaorm.inspect(note)
    with pytest.raises(OutcomeUnknownError) as err:
        s.commit()
    assert (err.value.operation, err.value.keys) == ("UpdateItem", [{"pk": "NOTE#n1",
                                                                      "sk": "NOTE"}])
    assert sent["UpdateItem"] == 1 and sent["GetItem"] == db.table.max_attempts == 5
    assert dynaorm.inspect(note) == known and known.persisted
    assert known.loaded is not None and known.loaded["body"] == "one"
    assert [i["body"] for i in db.scan()] == ["two"]  # it was applied
    faults.clear()

    # (the object still holds the state before the update: a delete conditioned on that
    # revision would be refused; reloaded, it deletes what is stored)
    note = s.get(type(note), note_id="n1", consistent=True)
    assert note is not None
    sent = faults.count()
    faults.lose("DeleteItem", how="closed")
    faults.refuse("GetItem", status=503, code="ServiceUnavailable")
    s.delete(note)
    with pytest.raises(OutcomeUnknownError) as err:
        s.commit()
    assert err.value.operation == "DeleteItem" and "Note" in str(err.value)
    assert sent["DeleteItem"] == 1
    assert db.scan() == []


WRITES = ["PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"]
READS = ["GetItem", "Query", "Scan", "BatchGetItem", "TransactGetItems"]
PERSISTENT = [("throttle", 400, "ThrottlingException"), ("5xx", 500, "InternalServerError"),
              ("503", 503, "ServiceUnavailable")]


def _write(db: TestBackend, operation: str) -> None:
    s = db.session()
    if operation == "PutItem":
        s.save(Note(note_id="new"))
    elif operation == "UpdateItem":
        s.update(Note, note_id="n1").set(body="two")
    elif operation == "DeleteItem":
        s.delete(Note, note_id="n1")
    elif operation == "TransactWriteItems":
        s.save(User(username="ada", email="ada@x.com"))
    else:
        s.save_many([Note(note_id="b1"), Note(note_id="b2")])
        return
    s.commit()


def _read(db: TestBackend, operation: str) -> None:
    s = db.session()
    if operation == "GetItem":
        s.get(Note, note_id="n1")
    elif operation == "Query":
        s.query(Note, note_id="n1").all()
    elif operation == "Scan":
        s.scan(Note).all()
    elif operation == "BatchGetItem":
        s.get_many(Note, [{"note_id": "n1"}, {"note_id": "n2"}])
    else:
        s.get_many(Note, [{"note_id": "n1"}, {"note_id": "n2"}], snapshot=True)


#: (a 500 and a 503 take the same path, a throttle another: every operation is throttled,
#: and fails with a 5xx, the two codes in turn)
@pytest.mark.engines("moto")  # (refused attempts never reach an engine: the retry layer's)
@pytest.mark.parametrize(("operation", "fault", "status", "code"), [
    (operation, *fault) for i, operation in enumerate(WRITES + READS)
    for fault in (PERSISTENT[0], PERSISTENT[1 + i % 2])])
def test_persistent_faults_send_exactly_max_attempts(
        db: TestBackend, faults3: Faults, operation: str, fault: str, status: int,
        code: str) -> None:
    """Every operation, throttled or failing with a 5xx on every attempt: exactly
    ``max_attempts`` HTTP attempts (one retry layer), then a typed error; the refused
    attempts never reached the server, so nothing changed. A write whose 5xx may have
    been applied is OutcomeUnknownError, anything else RequestError naming the code."""
    _note(db, body="one")
    assert db.table.max_attempts == 3
    before = db.scan_raw()
    sent = faults3.count()
    faults3.refuse(operation, status=status, code=code)
    bulk = operation == "BatchWriteItem"  # (0.3) BulkWriteError; a 5xx round is not resent
    with pytest.raises(BulkWriteError if bulk else RequestError
                       if fault == "throttle" or operation in READS
                       else OutcomeUnknownError) as err:
        (_write if operation in WRITES else _read)(db, operation)
    # (0.3) a bulk round or a single-item write that may have been applied is not resent;
    # a single-item write is read back instead
    single = operation in ("PutItem", "UpdateItem", "DeleteItem")
    # (0.5) none of these writes is of a loaded object: no revision it was loaded with
    # can prove it unapplied (an insert's absence, a by-key write's row prove nothing:
    # another writer may have made them), so none is resent after a 5xx (0.4 resent the
    # insert and the delete: a second writer's delete or re-insert in between was erased)
    attempts = 1 if (bulk or single) and fault != "throttle" else 3
    assert sent[operation] == attempts
    read_back = 1 if single and fault != "throttle" else 0
    assert sum(sent.values()) == attempts + read_back  # and no other request
    assert sent["GetItem"] == read_back or operation == "GetItem"
    error = err.value
    if isinstance(error, BulkWriteError):
        assert error.written == []
        assert len(error.unknown if fault != "throttle" else error.not_written) == 2
        error = error.errors[0][1]
        assert isinstance(error, RequestError) and (error.code, error.attempts) == (
            code, attempts)
        faults3.clear()
        assert db.scan_raw() == before
        return
    assert isinstance(error, RequestError | OutcomeUnknownError)
    assert error.operation == operation
    if isinstance(error, RequestError):
        assert (error.code, error.attempts) == (code, 3)
        assert not isinstance(error, OutcomeUnknownError)
    else:
        assert code in str(error)
    faults3.clear()
    assert db.scan_raw() == before
