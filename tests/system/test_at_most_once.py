"""At-most-once writes and one conflict family (contract 18), shown with the public fault
injector (``dynaorm.testing.inject_faults``): a write is applied by the engine and its
answer lost, with or without a second writer sequenced into that window (revert, delete,
re-insert, build on it). Each test proves by scanning the table that nothing of the second
writer is lost, and that each caller's outcome is true: success only when the write is
stored, a :class:`~dynaorm.ConflictError` only when nothing of it was, else
:class:`~dynaorm.OutcomeUnknownError`.

Single-item writes run on every engine and in the async variant (the injector is a phase
hook on the table's client: every wire, both kinds of session); transactions rely on
``ClientRequestToken`` (a resend with the same token is applied at most once), which moto
ignores: those run on DynamoDB Local.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import dynaorm
from dynaorm import (
    Attempt,
    ConcurrentModificationError,
    ConflictError,
    F,
    Hook,
    ItemExistsError,
    ItemGoneError,
    ItemNotFoundError,
    OutcomeUnknownError,
    RequestError,
    Session,
)
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import engine_of
from tests.support.models import Audit, Note, User, app

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")


@pytest.fixture(autouse=True)
def _no_waits() -> Iterator[None]:
    """Retries without waiting, for the module's tests: the suite's table is bound back as
    it was afterwards (it is shared with every other module)."""
    before = app.binding()
    app.max_wait = 0
    yield
    app.restore(before)


def _notes(db: TestBackend) -> list[tuple[str, str, list[str]]]:
    return sorted((i["note_id"], i.get("body", ""), list(i.get("tags", [])))
                  for i in db.scan() if "note_id" in i)


def _stored(db: TestBackend, body: str = "draft") -> Note:
    note = Note(note_id="n1", body=body)
    with Session(db.table) as s:
        s.save(note)
    return note


def _other(db: TestBackend) -> Session:
    """The second writer: a sync session of its own (also inside the async variant)."""
    return Session(db.table)


def _commit_raises(db: TestBackend, stage: Callable[[Any], object],
                   error: type[BaseException]) -> BaseException:
    s = db.session()
    stage(s)
    with pytest.raises(error) as info:
        s.commit()
    return info.value


# -- inserts ------------------------------------------------------------------------------
def test_lost_insert_alone_is_a_success(db: TestBackend) -> None:
    note = Note(note_id="n1", body="mine")
    with inject_faults(db.table) as faults:
        faults.lose_answer("PutItem")
        with db.session() as s:
            s.save(note)
    assert (faults.sent["PutItem"], faults.sent["GetItem"]) == (1, 1)  # read back, not resent
    assert _notes(db) == [("n1", "mine", [])]
    assert dynaorm.inspect(note).persisted
    note.body = "again"
    with db.session() as s:
        s.save(note)
    assert _notes(db) == [("n1", "again", [])]


def test_lost_insert_then_deleted_is_unknown_and_stays_deleted(db: TestBackend) -> None:
    """0.2 resent the insert: it resurrected the item the other writer deleted."""
    def delete() -> None:
        with _other(db) as b:
            b.delete(Note, note_id="n1")

    with inject_faults(db.table) as faults:
        faults.lose_answer("PutItem", after=delete)
        err = _commit_raises(db, lambda s: s.save(Note(note_id="n1", body="mine")),
                             OutcomeUnknownError)
    assert not isinstance(err, ConflictError)
    assert faults.sent["PutItem"] == 1
    assert _notes(db) == []


def test_lost_insert_then_replaced_is_unknown_and_keeps_theirs(db: TestBackend) -> None:
    def replace() -> None:
        with _other(db) as b:
            b.save(Note(note_id="n1", body="theirs"), overwrite=True)

    with inject_faults(db.table) as faults:
        faults.lose_answer("PutItem", after=replace)
        _commit_raises(db, lambda s: s.save(Note(note_id="n1", body="mine")),
                       OutcomeUnknownError)
    assert _notes(db) == [("n1", "theirs", [])]


def test_lost_overwrite_alone_is_a_success(db: TestBackend) -> None:
    _stored(db)
    with inject_faults(db.table) as faults:
        faults.lose_answer("PutItem")
        with db.session() as s:
            s.save(Note(note_id="n1", body="put"), overwrite=True)
    assert _notes(db) == [("n1", "put", [])]


# -- updates of a loaded object -----------------------------------------------------------
def test_lost_update_alone_is_a_success(db: TestBackend) -> None:
    note = _stored(db)
    note.body = "sent"
    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem")
        with db.session() as s:
            s.save(note)
    assert faults.sent["UpdateItem"] == 1
    assert _notes(db) == [("n1", "sent", [])]
    note.body = "later"
    with db.session() as s:
        s.save(note)
    assert _notes(db) == [("n1", "later", [])]


@pytest.mark.parametrize("how", ["timeout", "500"])
def test_lost_update_then_reverted_keeps_the_revert(db: TestBackend, how: str) -> None:
    """The issue's first finding: A writes ``sent``, B reverts to ``draft``; 0.2 resent A's
    update (its condition held again) and B's revert was lost, both told success."""
    note = _stored(db)

    def revert() -> None:
        with _other(db) as b:
            theirs = b.get(Note, note_id="n1")
            assert theirs is not None and theirs.body == "sent"
            theirs.body = "draft"
            b.save(theirs)

    note.body = "sent"
    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem", after=revert, how=how)
        err = _commit_raises(db, lambda s: s.save(note), OutcomeUnknownError)
    assert not isinstance(err, ConflictError)
    assert faults.sent["UpdateItem"] == 2  # A's one attempt, B's revert
    assert _notes(db) == [("n1", "draft", [])]


def test_lost_update_then_built_on_is_unknown_and_keeps_theirs(db: TestBackend) -> None:
    """0.2 resent it, the condition failed on B's state: ConcurrentModificationError
    ("nothing written") for a write that was applied. (0.5) 0.3-0.4 reported success from
    the stored values, which prove nothing (B could have written them): the row holds B's
    revision, so OutcomeUnknownError, never resent."""
    note = _stored(db)

    def build() -> None:
        with _other(db) as b:
            theirs = b.get(Note, note_id="n1")
            assert theirs is not None
            theirs.tags = ["b"]
            b.save(theirs)

    note.body = "sent"
    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem", after=build)
        _commit_raises(db, lambda s: s.save(note), OutcomeUnknownError)
    assert _notes(db) == [("n1", "sent", ["b"])]


def test_lost_update_then_deleted_is_unknown_and_stays_deleted(db: TestBackend) -> None:
    note = _stored(db)

    def delete() -> None:
        with _other(db) as b:
            b.delete(Note, note_id="n1")

    note.body = "sent"
    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem", after=delete)
        _commit_raises(db, lambda s: s.save(note), OutcomeUnknownError)
    assert _notes(db) == []


# -- s.update() with clauses and where ----------------------------------------------------
def test_lost_staged_update_with_where_is_a_success(db: TestBackend) -> None:
    """0.2: ConditionFailedError with no other writer, the value stored."""
    _stored(db)
    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem")
        with db.session() as s:
            s.update(Note, note_id="n1").set(body="sent").where(F("body") == "draft")
    assert _notes(db) == [("n1", "sent", [])]


def test_lost_lone_update_resolved_as_applied_has_its_result(db: TestBackend) -> None:
    """(0.4) its answer carried the result (ALL_NEW): with the answer lost and the update
    read back as applied, ``u.result`` raised although the update was reported applied."""
    _stored(db)
    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem")
        s = db.session()
        u = s.update(Note, note_id="n1").set(body="sent")
        s.commit()
    assert u.result.body == "sent" and u.result.note_id == "n1"
    assert _notes(db) == [("n1", "sent", [])]


def test_lost_staged_update_then_reverted_is_unknown(db: TestBackend) -> None:
    _stored(db)

    def revert() -> None:
        with _other(db) as b:
            b.update(Note, note_id="n1").set(body="draft")

    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem", after=revert)
        _commit_raises(db, lambda s: s.update(Note, note_id="n1").set(
            body="sent").where(F("body") == "draft"), OutcomeUnknownError)
    assert _notes(db) == [("n1", "draft", [])]


def test_lost_append_is_applied_once_and_a_success(db: TestBackend) -> None:
    """(0.5) The row holds the append's own revision: applied, once (0.4: unknown)."""
    _stored(db)
    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem")
        with db.session() as s:
            s.update(Note, note_id="n1").append(tags=["once"])
    assert faults.sent["UpdateItem"] == 1
    assert _notes(db) == [("n1", "draft", ["once"])]


# -- deletes ------------------------------------------------------------------------------
@pytest.mark.parametrize("by_key", [False, True])
def test_lost_delete_alone_is_unknown(db: TestBackend, by_key: bool) -> None:
    """(0.5) 0.3-0.4: a success, from no item stored; absence proves nothing (another
    writer may have deleted it): OutcomeUnknownError, never resent."""
    note = _stored(db)

    def delete(s: Any) -> None:
        if by_key:
            s.delete(Note, note_id="n1")
        else:
            s.delete(note)

    with inject_faults(db.table) as faults:
        faults.lose_answer("DeleteItem")
        _commit_raises(db, delete, OutcomeUnknownError)
    assert faults.sent["DeleteItem"] == 1
    assert _notes(db) == []


@pytest.mark.parametrize("by_key", [False, True])
def test_lost_delete_then_reinserted_is_unknown_and_keeps_theirs(db: TestBackend,
                                                                 by_key: bool) -> None:
    """0.2 resent the delete: it deleted the item the other writer inserted."""
    note = _stored(db)

    def reinsert() -> None:
        with _other(db) as b:
            b.save(Note(note_id="n1", body="theirs"))

    with inject_faults(db.table) as faults:
        faults.lose_answer("DeleteItem", after=reinsert)
        _commit_raises(db, lambda s: s.delete(Note, note_id="n1") if by_key
                       else s.delete(note), OutcomeUnknownError)
    assert _notes(db) == [("n1", "theirs", [])]


# -- transactions (ClientRequestToken): DynamoDB Local and dynaorm's test backend -----------
def _tokens_honoured(request: pytest.FixtureRequest) -> None:
    if engine_of(request) == "dynoxide":
        pytest.skip("dynoxide does not apply a ClientRequestToken at most once")


def test_lost_versioned_save_then_reverted_is_a_success_and_keeps_the_revert(
        db: TestBackend, request: pytest.FixtureRequest) -> None:
    """The resend carries the same token: DynamoDB answers it as applied and applies
    nothing, so the other writer's later revert stays."""
    _tokens_honoured(request)
    audit = Audit(equipment_id="E1", part="P1", notes="draft")
    with Session(db.table) as s:
        s.save(audit)

    def revert() -> None:
        with _other(db) as b:
            theirs = b.get(Audit, equipment_id="E1", part="P1")
            assert theirs is not None and theirs.notes == "sent"
            theirs.notes = "draft"
            b.save(theirs)

    audit.notes = "sent"
    with inject_faults(db.table) as faults:
        faults.lose_answer("TransactWriteItems", after=revert)
        with db.session() as s:
            s.save(audit)
    assert faults.sent["TransactWriteItems"] == 3  # A, B, A's resend (deduplicated)
    latest = Session(db.table).get(Audit, equipment_id="E1", part="P1")
    assert latest is not None and (latest.notes, latest.version) == ("draft", 3)  # type: ignore[attr-defined]


@pytest.mark.parametrize("how", ["timeout", "500"])
def test_lost_versioned_save_then_deleted_is_a_success_and_stays_deleted(
        db: TestBackend, request: pytest.FixtureRequest, how: str) -> None:
    _tokens_honoured(request)
    audit = Audit(equipment_id="E1", part="P1", notes="draft")
    with Session(db.table) as s:
        s.save(audit)

    def delete() -> None:
        with _other(db) as b:
            theirs = b.get(Audit, equipment_id="E1", part="P1")
            assert theirs is not None
            b.delete(theirs)

    audit.notes = "sent"
    with inject_faults(db.table) as faults:
        faults.lose_answer("TransactWriteItems", after=delete, how=how)
        with db.session() as s:
            s.save(audit)
    assert Session(db.table).get(Audit, equipment_id="E1", part="P1") is None


def test_lost_key_move_then_built_on_is_a_success(db: TestBackend,
                                                  request: pytest.FixtureRequest) -> None:
    _tokens_honoured(request)
    note = _stored(db)

    def build() -> None:
        with _other(db) as b:
            b.update(Note, note_id="n2").set(tags=["b"])

    note.note_id = "n2"
    with inject_faults(db.table) as faults:
        faults.lose_answer("TransactWriteItems", after=build)
        with db.session() as s:
            s.save(note)
    assert _notes(db) == [("n2", "draft", ["b"])]


def test_lost_unique_insert_then_deleted_is_a_success_and_stays_deleted(
        db: TestBackend, request: pytest.FixtureRequest) -> None:
    _tokens_honoured(request)
    user = User(user_id="u1", username="ada", email="ada@x.com")

    def delete() -> None:
        with _other(db) as b:
            theirs = b.get(User, user_id="u1")
            assert theirs is not None
            b.delete(theirs)

    with inject_faults(db.table) as faults:
        faults.lose_answer("TransactWriteItems", after=delete)
        with db.session() as s:
            s.save(user)
    assert db.scan() == []  # the user and its guards: deleted once, never resurrected


# -- the conflict family: every member provoked, none for an applied write ----------------
def test_a_stale_update_is_a_conflict(db: TestBackend) -> None:
    note = _stored(db)
    with _other(db) as b:
        theirs = b.get(Note, note_id="n1")
        assert theirs is not None
        theirs.body = "theirs"
        b.save(theirs)
    note.body = "mine"
    err = _commit_raises(db, lambda s: s.save(note), ConflictError)
    assert isinstance(err, ConcurrentModificationError)
    assert _notes(db) == [("n1", "theirs", [])]


def test_an_insert_over_a_stored_item_is_a_conflict(db: TestBackend) -> None:
    _stored(db, "theirs")
    err = _commit_raises(db, lambda s: s.save(Note(note_id="n1")), ConflictError)
    assert isinstance(err, ItemExistsError)
    assert _notes(db) == [("n1", "theirs", [])]


def test_an_update_of_an_item_deleted_meanwhile_is_a_conflict(db: TestBackend) -> None:
    note = _stored(db)
    with _other(db) as b:
        b.delete(Note, note_id="n1")
    note.body = "mine"
    err = _commit_raises(db, lambda s: s.save(note), ConflictError)
    assert isinstance(err, ItemGoneError) and isinstance(err, ItemNotFoundError)
    assert _notes(db) == []


# -- the injector itself ------------------------------------------------------------------
def test_throttled_attempts_are_retried(db: TestBackend) -> None:
    with inject_faults(db.table) as faults:
        faults.throttle("PutItem", times=2)
        with db.session() as s:
            s.save(Note(note_id="n1"))
    assert faults.sent["PutItem"] == 3
    assert _notes(db) == [("n1", "", [])]


def test_throttled_to_the_end_is_a_definite_request_error(db: TestBackend) -> None:
    with inject_faults(db.table) as faults:
        faults.throttle("PutItem", times=None)
        err = _commit_raises(db, lambda s: s.save(Note(note_id="n1")), RequestError)
    assert not isinstance(err, OutcomeUnknownError)
    assert isinstance(err, RequestError) and err.code == "ThrottlingException"
    assert faults.sent["PutItem"] == db.table.max_attempts
    assert _notes(db) == []


def test_a_server_error_on_an_insert_proves_nothing_and_is_unknown(db: TestBackend) -> None:
    """A 5xx may come after the server applied the write: it is read back first. (0.5)
    No item stored proves nothing (0.4 resent it: counterexample 1), so the insert is
    not resent: OutcomeUnknownError after one attempt and one read."""
    with inject_faults(db.table) as faults:
        faults.server_error("PutItem")
        _commit_raises(db, lambda s: s.save(Note(note_id="n1", body="mine")),
                       OutcomeUnknownError)
    assert (faults.sent["PutItem"], faults.sent["GetItem"]) == (1, 1)
    assert _notes(db) == []


@pytest.mark.parametrize("by_key", [False, True])
def test_a_server_error_on_a_delete_proved_unapplied_is_retried(db: TestBackend,
                                                                by_key: bool) -> None:
    """A loaded object's row still holding the revision it was loaded with proves its
    delete unapplied: resent (availability). By key, nothing was loaded: no proof."""
    note = _stored(db)
    with inject_faults(db.table) as faults:
        faults.server_error("DeleteItem", times=2)
        if by_key:
            _commit_raises(db, lambda s: s.delete(Note, note_id="n1"), OutcomeUnknownError)
        else:
            with db.session() as s:
                s.delete(note)
    assert (faults.sent["DeleteItem"], faults.sent["GetItem"]) == ((1, 1) if by_key else (3, 2))
    assert _notes(db) == ([("n1", "draft", [])] if by_key else [])


def test_server_errors_to_the_last_attempt_are_unknown(db: TestBackend) -> None:
    note = _stored(db)
    note.body = "sent"
    with inject_faults(db.table) as faults:
        faults.server_error("UpdateItem", times=None)
        _commit_raises(db, lambda s: s.save(note), OutcomeUnknownError)
    assert faults.sent["UpdateItem"] == db.table.max_attempts  # each proved unapplied
    assert _notes(db) == [("n1", "draft", [])]


def test_a_server_error_on_an_update_proved_unapplied_is_retried(db: TestBackend) -> None:
    """(0.5) The row still holds the revision the object was loaded with: the update was
    not applied, and it is resent (0.4: OutcomeUnknownError, equal values proving
    nothing)."""
    note = _stored(db)
    note.body = "sent"
    with inject_faults(db.table) as faults:
        faults.server_error("UpdateItem")
        with db.session() as s:
            s.save(note)
    assert (faults.sent["UpdateItem"], faults.sent["GetItem"]) == (2, 1)
    assert _notes(db) == [("n1", "sent", [])]


def test_a_server_error_on_a_transaction_is_resent(db: TestBackend) -> None:
    with inject_faults(db.table) as faults:
        faults.server_error("TransactWriteItems")
        with db.session() as s:
            s.save(User(user_id="u1", username="ada", email="ada@x.com"))
    assert faults.sent["TransactWriteItems"] == 2
    assert len(db.scan()) == 3


def test_the_injector_is_removed_after_the_block(db: TestBackend) -> None:
    with inject_faults(db.table) as faults:
        faults.throttle("PutItem", times=None)
        assert faults in db.table.db.policy.hooks
    assert faults not in db.table.db.policy.hooks
    with db.session() as s:
        s.save(Note(note_id="n1"))
    assert faults.sent["PutItem"] == 0
    with pytest.raises(ValueError, match="times"):
        faults.throttle("PutItem", times=0)
    with pytest.raises(ValueError, match="how"):
        faults.lose_answer("PutItem", how="slow")


# -- a cancelled AsyncSession.commit ------------------------------------------------------
class _Slow(Hook):
    """A phase hook that holds this table's PutItem attempt for 5 seconds, ``before`` it
    reaches the engine (the hook answers it itself, with a throttle: it is never sent) or
    ``after`` the engine applied it: a commit awaited with a timeout is cancelled there
    (an AsyncSession awaits what a hook's ``on_end`` returns)."""

    def __init__(self, table: str, where: str) -> None:
        self.table = table
        self.where = where

    def _held(self, phase: Any) -> bool:
        return (isinstance(phase, Attempt) and phase.operation == "PutItem"
                and self.table in phase.tables)

    def on_start(self, phase: Any) -> object:
        if self._held(phase) and self.where == "before":
            phase.error = RequestError("PutItem", "ThrottlingException", "held back")
        return None

    def on_end(self, phase: Any, token: Any) -> object:
        return asyncio.sleep(5) if self._held(phase) else None


@pytest.fixture
def local(ddb_local: str) -> Iterator[TestBackend]:
    with use_tables(app, endpoint_url=ddb_local, name_suffix=worker_suffix()) as tb:
        yield tb


@pytest.mark.parametrize("where", ["before", "after"])
def test_a_cancelled_commit_leaves_objects_consistent(local: TestBackend, where: str) -> None:
    """0.2: in 77 of 81 trials the cancelled write had landed and saving the object again
    raised ItemExistsError. Now the next save reads the key once: landed -> an update."""
    from dynaorm import AsyncSession
    from dynaorm.aio import close
    from dynaorm.core.commit import pending

    note = Note(note_id="n1", body="one")

    async def main() -> None:
        s = AsyncSession(local.table)
        # the client and a connection first: the 1-second budget below is the commit's
        # alone (a first use on a loaded machine may take longer than that by itself)
        assert await s.get(Note, note_id="warm-up") is None
        slow = local.table.db.add_hook(_Slow(local.table.name, where))
        try:
            s.save(note)
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(s.commit(), 1.0)
        finally:
            local.table.db.remove_hook(slow)
        assert not dynaorm.inspect(note).persisted and pending(note)  # nothing changed, remembered
        landed = bool(_notes(local))
        assert landed == (where == "after")
        note.body = "two"
        s.save(note)
        await s.commit()
        await close()

    asyncio.run(main())
    assert dynaorm.inspect(note).persisted and not pending(note)
    assert _notes(local) == [("n1", "two", [])]


def test_lost_bulk_write_of_a_loaded_object_is_read_back(db: TestBackend) -> None:
    """save_many of a loaded object sends a conditioned UpdateItem: a lost answer is read
    back, and an applied write is reported written (not unknown, not resent)."""
    note = _stored(db)
    note.body = "sent"
    with inject_faults(db.table) as faults:
        faults.lose_answer("UpdateItem")
        db.session().save_many([note])
    assert faults.sent["UpdateItem"] == 1 and dynaorm.inspect(note).persisted
    assert _notes(db) == [("n1", "sent", [])]
