"""Session semantics and what a commit sends (contract sections 3 and 4), on both backends.

``Recorder`` (tests/support/recording.py), a hook on the table's client, records every
request it sends and can fail attempts, without mocking DynamoDB: everything else goes to
the backend.
"""

from __future__ import annotations

import gc
import warnings
from collections.abc import Callable, Iterator

import pytest

import dynaorm
from dynaorm import (
    ConcurrentModificationError,
    DynaormError,
    Entity,
    ItemExistsError,
    ItemNotFoundError,
    ItemTooLargeError,
    Session,
    Table,
    TransactionConflictError,
    TransactionTooLargeError,
)
from dynaorm.errors import RequestError as RequestFailed
from dynaorm.testing import TestBackend
from tests.support.models import Audit, EReading, Note, User, app
from tests.support.recording import Recorder, conflict, recording

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


@pytest.fixture
def rec(db: TestBackend) -> Iterator[Recorder]:
    """Record the test table's requests (retries do not wait) for the test."""
    yield recording(db.table)


class SesPost(Entity):
    """Index keys derived from two fields: gsi2 sk is built from title and slug."""

    class Meta:
        table = app
        pk = "POST#{post_id}"
        sk = "POST"
        indexes = {"gsi2": ("CAT#{category}", "{title}#{slug}")}

    post_id: str
    category: str
    title: str
    slug: str
    views: int = 0


def commit(db: TestBackend, *objs: Entity) -> None:
    s = db.session()
    for obj in objs:
        s.save(obj)
    s.commit()


# -- new vs persisted ----------------------------------------------------------------------
def test_new_and_persisted_objects(db: TestBackend) -> None:
    note = Note(note_id="n1", body="hi", tags=["a"])
    assert not dynaorm.inspect(note).persisted
    commit(db, note)
    assert dynaorm.inspect(note).persisted
    loaded = db.session().get(Note, note_id="n1", consistent=True)
    assert loaded is not None and dynaorm.inspect(loaded).persisted
    assert loaded == note == Note(note_id="n1", body="hi", tags=["a"])
    assert db.session().get(Note, note_id="missing") is None


def test_get_ignores_items_of_another_type(db: TestBackend) -> None:
    commit(db, Note(note_id="n1"))

    class SesNoteLookalike(Entity):
        class Meta:
            table = app
            pk = "NOTE#{note_id}"
            sk = "NOTE"

        note_id: str

    assert db.session().get(SesNoteLookalike, note_id="n1") is None


def test_insert_of_existing_key(db: TestBackend, rec: Recorder) -> None:
    commit(db, Note(note_id="n1", body="first"))
    before = db.scan_raw()
    dup = Note(note_id="n1", body="second")
    s = db.session()
    s.save(dup)
    with pytest.raises(ItemExistsError) as err:
        s.commit()
    assert err.value.entity is Note
    assert err.value.key == {"pk": "NOTE#n1", "sk": "NOTE"}
    assert "Note" in str(err.value) and "NOTE#n1" in str(err.value)
    assert db.scan_raw() == before
    assert not dynaorm.inspect(dup).persisted


def test_insert_of_existing_user_is_item_exists_not_unique(db: TestBackend) -> None:
    commit(db, User(user_id="u1", username="bob", email="bob@x.com"))
    before = db.scan_raw()
    s = db.session()
    s.save(User(user_id="u1", username="bob", email="bob@x.com"))
    with pytest.raises(ItemExistsError):
        s.commit()
    assert db.scan_raw() == before


def test_overwrite_replaces(db: TestBackend) -> None:
    commit(db, Note(note_id="n1", body="first", tags=["x"]))
    s = db.session()
    s.save(Note(note_id="n1", body="second"), overwrite=True)
    s.commit()
    (item,) = db.scan()
    assert item["body"] == "second" and item["tags"] == []


def test_overwrite_of_user_keeps_guards_right(db: TestBackend) -> None:
    commit(db, User(user_id="u1", username="bob", email="bob@x.com", full_name="Bob"))
    s = db.session()
    replacement = User(user_id="u1", username="robert", email="bob@x.com")
    s.save(replacement, overwrite=True)
    s.commit()
    items = db.scan()
    guards = sorted(i["pk"] for i in items if i["_type"] == "dynaorm:unique")
    assert guards == ["email#bob@x.com", "username#robert"]
    (row,) = [i for i in items if i["_type"] == "User"]
    assert row["username"] == "robert" and row["full_name"] == ""
    assert row["gsi1sk"] == "USER#robert"
    # overwrite of an absent item inserts
    s.save(User(user_id="u2", username="amy", email="amy@x.com"), overwrite=True)
    s.commit()
    assert len(db.scan()) == 6


def test_overwrite_cannot_steal_a_unique_value(db: TestBackend) -> None:
    commit(db, User(user_id="u1", username="bob", email="bob@x.com"),
           User(user_id="u2", username="amy", email="amy@x.com"))
    before = db.scan_raw()
    s = db.session()
    s.save(User(user_id="u2", username="bob", email="amy@x.com"), overwrite=True)
    from dynaorm import UniqueConstraintError

    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert err.value.field == "username"
    assert db.scan_raw() == before


def test_persisted_object_saved_in_another_session_updates(db: TestBackend) -> None:
    commit(db, Note(note_id="n1", body="v1"))
    loaded = db.session().get(Note, note_id="n1", consistent=True)
    assert loaded is not None
    loaded.body = "v2"
    commit(db, loaded)
    (item,) = db.scan()
    assert item["body"] == "v2"


def test_only_changed_attributes_are_written(db: TestBackend, rec: Recorder) -> None:
    commit(db, Note(note_id="n1", body="v1", tags=["a"]))
    note = db.session().get(Note, note_id="n1", consistent=True)
    assert note is not None
    rec.clear()
    note.body = "v2"
    commit(db, note)
    ((op, req),) = rec.writes
    assert op == "UpdateItem"  # the changed attribute, and the write's fresh revision
    assert req["UpdateExpression"] == "SET #n0 = :v0, #n1 = :v1"
    assert req["ExpressionAttributeNames"]["#n0"] == "body"
    assert req["ExpressionAttributeNames"]["#n1"] == "_rev"
    assert req["ExpressionAttributeValues"][":v0"] == {"S": "v2"}
    assert "tags" not in str(req)
    rec.clear()
    commit(db, note)  # nothing changed: nothing sent
    assert rec.writes == []


def test_update_of_user_touches_only_the_row(db: TestBackend, rec: Recorder) -> None:
    commit(db, User(user_id="u1", username="bob", email="bob@x.com"))
    user = db.session().get(User, user_id="u1", consistent=True)
    assert user is not None
    rec.clear()
    user.full_name = "Bob B."
    commit(db, user)
    ((op, req),) = rec.writes
    assert op == "UpdateItem"
    assert req["Key"] == {"pk": {"S": "USER#u1"}, "sk": {"S": "PROFILE"}}
    assert req["UpdateExpression"] == "SET #n0 = :v0, #n1 = :v1"  # (#n1: the revision)


def test_primary_key_move(db: TestBackend, rec: Recorder) -> None:
    commit(db, Note(note_id="n1", body="hi"))
    note = db.session().get(Note, note_id="n1", consistent=True)
    assert note is not None
    rec.clear()
    note.note_id = "n2"
    commit(db, note)
    ((op, req),) = rec.writes
    assert op == "TransactWriteItems"
    assert [next(iter(i)) for i in req["TransactItems"]] == ["Delete", "Put"]
    assert [i["pk"] for i in db.scan()] == ["NOTE#n2"]
    # the moved object is persisted under its new key
    note.body = "moved"
    commit(db, note)
    assert db.scan()[0]["body"] == "moved"


def test_primary_key_move_onto_an_existing_key(db: TestBackend) -> None:
    commit(db, Note(note_id="n1", body="one"), Note(note_id="n2", body="two"))
    note = db.session().get(Note, note_id="n1", consistent=True)
    assert note is not None
    before = db.scan_raw()
    note.note_id = "n2"
    s = db.session()
    s.save(note)
    with pytest.raises(ItemExistsError):
        s.commit()
    assert db.scan_raw() == before


@pytest.mark.parametrize("insert_first", [True, False])
def test_key_move_and_insert_at_the_old_key_both_land(db: TestBackend,
                                                      insert_first: bool) -> None:
    s = db.session()
    s.save(EReading(device="d", ts=1, v=1))
    s.commit()
    moved = s.get(EReading, device="d", ts=1)
    assert moved is not None
    moved.ts = 2
    fresh = EReading(device="d", ts=1, v=9)
    for obj in ((fresh, moved) if insert_first else (moved, fresh)):
        s.save(obj)
    s.commit()
    stored = {(i["ts"], i["v"]) for i in db.scan() if i["pk"] == "EDEV#d"}
    assert stored == {(1, 9), (2, 1)}
    assert dynaorm.inspect(fresh).persisted and dynaorm.inspect(moved).persisted


# -- staging -------------------------------------------------------------------------------
def test_coalescing(db: TestBackend, rec: Recorder) -> None:
    commit(db, Note(note_id="n1", body="v1"))
    note = db.session().get(Note, note_id="n1", consistent=True)
    assert note is not None
    s = db.session()
    note.body = "v2"
    s.save(note)
    note.body = "v3"
    s.save(note)
    assert len(s.plan().ops) == 1
    rec.clear()
    s.commit()
    ((op, req),) = rec.writes
    assert op == "UpdateItem" and req["ExpressionAttributeValues"][":v0"] == {"S": "v3"}

    note.body = "v4"
    s.save(note)
    s.delete(note)
    plan = s.plan()
    assert len(plan.ops) == 1 and type(plan.ops[0]).__name__ == "Delete"
    rec.clear()
    s.commit()
    assert [op for op, _ in rec.writes] == ["DeleteItem"]
    assert db.scan() == []


def test_two_objects_for_one_key_coalesce_last_wins(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="a"))
    s.save(Note(note_id="n1", body="b"))
    assert len(s.plan().ops) == 1
    s.commit()
    assert db.scan()[0]["body"] == "b"


def test_context_manager_commits(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Note(note_id="n1"))
        s.save(Note(note_id="n2"))
    assert [i["pk"] for i in db.scan()] == ["NOTE#n1", "NOTE#n2"]


def test_context_manager_rolls_back_on_exception(db: TestBackend) -> None:
    class Boom(Exception):
        pass

    with pytest.raises(Boom), db.session() as s:
        s.save(Note(note_id="n1"))
        raise Boom
    assert db.scan() == []
    s.commit()  # the stage was dropped
    assert db.scan() == []


def test_rollback(db: TestBackend, rec: Recorder) -> None:
    s = db.session()
    s.save(Note(note_id="n1"))
    s.rollback()
    s.commit()
    assert rec.writes == []
    assert db.scan() == []


def test_failed_commit_writes_nothing_and_keeps_state(db: TestBackend) -> None:
    commit(db, Note(note_id="n1", body="v1"), Note(note_id="taken"))
    note = db.session().get(Note, note_id="n1", consistent=True)
    assert note is not None
    before = db.scan_raw()
    s = db.session()
    note.body = "v2"
    s.save(note)
    state = dynaorm.inspect(note)
    clash = Note(note_id="taken", body="x")
    s.save(clash)
    with pytest.raises(ItemExistsError):
        s.commit()
    assert db.scan_raw() == before
    assert dynaorm.inspect(note) == state  # still the loaded snapshot
    assert state.loaded is not None and state.loaded["body"] == "v1"
    assert not dynaorm.inspect(clash).persisted
    s.commit()  # the staged work was dropped
    assert db.scan_raw() == before
    # retry without the clash: the update still writes the change against the old snapshot
    s.save(note)
    s.commit()
    assert {i["pk"]: i["body"] for i in db.scan()}["NOTE#n1"] == "v2"


def test_failed_insert_then_retry(db: TestBackend) -> None:
    commit(db, User(user_id="u1", username="bob", email="bob@x.com"))
    s = db.session()
    amy = User(user_id="u2", username="bob", email="amy@x.com")
    s.save(amy)
    with pytest.raises(DynaormError):
        s.commit()
    amy.username = "amy"
    s.save(amy)
    s.commit()
    assert dynaorm.inspect(amy).persisted
    assert len(db.scan()) == 6


# -- gone and concurrent -------------------------------------------------------------------
def test_update_of_deleted_item(db: TestBackend) -> None:
    commit(db, Note(note_id="n1", body="v1"))
    mine = db.session().get(Note, note_id="n1", consistent=True)
    theirs = db.session().get(Note, note_id="n1", consistent=True)
    assert mine is not None and theirs is not None
    other = db.session()
    other.delete(theirs)
    other.commit()
    mine.body = "v2"
    s = db.session()
    s.save(mine)
    with pytest.raises(ItemNotFoundError) as err:
        s.commit()
    assert err.value.entity is Note and err.value.key == {"pk": "NOTE#n1", "sk": "NOTE"}
    assert db.scan_raw() == []
    s.delete(mine)
    with pytest.raises(ItemNotFoundError):
        s.commit()
    assert db.scan_raw() == []


def test_update_and_delete_of_deleted_user(db: TestBackend) -> None:
    commit(db, User(user_id="u1", username="bob", email="bob@x.com"),
           Note(note_id="n1"))
    mine = db.session().get(User, user_id="u1", consistent=True)
    theirs = db.session().get(User, user_id="u1", consistent=True)
    assert mine is not None and theirs is not None
    other = db.session()
    other.delete(theirs)
    other.commit()
    before = db.scan_raw()
    s = db.session()
    mine.email = "new@x.com"
    s.save(mine)
    with pytest.raises(ItemNotFoundError):
        s.commit()
    assert db.scan_raw() == before
    s.delete(mine)
    with pytest.raises(ItemNotFoundError):
        s.commit()
    assert db.scan_raw() == before


def test_delete_of_a_never_stored_object(db: TestBackend) -> None:
    s = db.session()
    s.delete(Note(note_id="ghost"))
    with pytest.raises(ItemNotFoundError):
        s.commit()
    s.delete(User(user_id="ghost", username="g", email="g@x.com"))
    with pytest.raises(ItemNotFoundError):
        s.commit()
    assert db.scan_raw() == []


def test_concurrent_change_of_a_unique_value(db: TestBackend) -> None:
    commit(db, User(user_id="u1", username="bob", email="bob@x.com"))
    mine = db.session().get(User, user_id="u1", consistent=True)
    theirs = db.session().get(User, user_id="u1", consistent=True)
    assert mine is not None and theirs is not None
    theirs.username = "robert"
    commit(db, theirs)
    before = db.scan_raw()
    mine.full_name = "Bob"
    s = db.session()
    s.save(mine)
    with pytest.raises(ConcurrentModificationError) as err:
        s.commit()
    assert err.value.entity is User
    assert "User" in str(err.value) and "USER#u1" in str(err.value)
    assert db.scan_raw() == before
    # reload and retry
    fresh = s.get(User, user_id="u1", consistent=True)
    assert fresh is not None
    fresh.full_name = "Bob"
    s.save(fresh)
    s.commit()


def test_concurrent_delete_of_user_with_changed_unique_value(db: TestBackend) -> None:
    commit(db, User(user_id="u1", username="bob", email="bob@x.com"))
    mine = db.session().get(User, user_id="u1", consistent=True)
    theirs = db.session().get(User, user_id="u1", consistent=True)
    assert mine is not None and theirs is not None
    theirs.email = "robert@x.com"
    commit(db, theirs)
    before = db.scan_raw()
    s = db.session()
    s.delete(mine)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan_raw() == before


def test_concurrent_change_of_a_derived_key_field(db: TestBackend) -> None:
    commit(db, SesPost(post_id="p1", category="c", title="Hello", slug="hello"))
    mine = db.session().get(SesPost, post_id="p1", consistent=True)
    theirs = db.session().get(SesPost, post_id="p1", consistent=True)
    assert mine is not None and theirs is not None
    theirs.slug = "hello-world"
    commit(db, theirs)
    before = db.scan_raw()
    mine.title = "Goodbye"  # gsi2sk = "{title}#{slug}" would be built from a stale slug
    s = db.session()
    s.save(mine)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan_raw() == before
    (item,) = db.scan()
    assert item["gsi2sk"] == "Hello#hello-world"
    # an unrelated field does not depend on the others
    mine2 = s.get(SesPost, post_id="p1", consistent=True)
    assert mine2 is not None
    theirs.views = 5
    commit(db, theirs)
    mine2.title = "Goodbye"
    s.save(mine2)
    s.commit()
    (item,) = db.scan()
    assert (item["gsi2sk"], item["views"]) == ("Goodbye#hello-world", 5)


# -- the wire ------------------------------------------------------------------------------
def test_single_item_commits_use_single_item_calls(db: TestBackend,
                                                   rec: Recorder) -> None:
    note = Note(note_id="n1")
    commit(db, note)
    note.body = "x"
    commit(db, note)
    s = db.session()
    s.delete(note)
    s.commit()
    a = Audit(equipment_id="E1", part="P1")
    commit(db, a)
    assert [op for op, _ in rec.writes] == ["PutItem", "UpdateItem", "DeleteItem",
                                            "TransactWriteItems"]
    for _, req in rec.writes[:3]:
        assert "ClientRequestToken" not in req


def test_multi_item_commits_use_a_fresh_token(db: TestBackend, rec: Recorder) -> None:
    commit(db, Note(note_id="n1"), Note(note_id="n2"))
    commit(db, Note(note_id="n3"), Note(note_id="n4"))
    tokens = [req["ClientRequestToken"] for op, req in rec.writes]
    assert [op for op, _ in rec.writes] == ["TransactWriteItems"] * 2
    assert len(set(tokens)) == 2 and all(tokens)
    assert len(rec.writes[0][1]["TransactItems"]) == 2


@pytest.mark.parametrize("kind", ["throttle", "conflict", "in_progress", "5xx"])
def test_transient_failure_is_retried_with_the_same_token(
        db: TestBackend, rec: Recorder, kind: str) -> None:
    fault = {
        "throttle": RequestFailed("TransactWriteItems", "ThrottlingException", "slow down"),
        "conflict": conflict(3),
        "in_progress": RequestFailed("TransactWriteItems", "TransactionInProgressException",
                                     "in progress"),
        "5xx": RequestFailed("TransactWriteItems", "InternalServerError", "oops"),
    }[kind]
    rec.faults["TransactWriteItems"] = [fault]
    commit(db, User(user_id="u1", username="bob", email="bob@x.com"))
    sends = [req for op, req in rec.writes]
    assert len(sends) == 2
    assert sends[0] == sends[1]  # the identical request, token included
    assert sends[0]["ClientRequestToken"]
    assert len(db.scan()) == 3


def test_single_item_transaction_conflict_is_retried(db: TestBackend) -> None:
    transport = recording(db.table)
    transport.faults["PutItem"] = [RequestFailed("PutItem", "TransactionConflictException",
                                                 "conflict with an ongoing transaction")]
    s = db.session()
    s.save(EReading(device="d", ts=5))
    s.commit()
    assert [op for op, _ in transport.sent] == ["PutItem", "PutItem"]
    assert [i["ts"] for i in db.scan()] == [5]


def test_persistent_conflict(db: TestBackend, rec: Recorder) -> None:
    commit(db, Note(note_id="n0"))
    before = db.scan_raw()
    rec.clear()
    rec.always["TransactWriteItems"] = conflict(2)
    s = db.session()
    a, b = Note(note_id="n1"), Note(note_id="n2")
    s.save(a)
    s.save(b)
    with pytest.raises(TransactionConflictError):
        s.commit()
    assert len(rec.writes) == db.table.max_attempts
    assert len({req["ClientRequestToken"] for _, req in rec.writes}) == 1
    del rec.always["TransactWriteItems"]
    assert db.scan_raw() == before
    assert not dynaorm.inspect(a).persisted and not dynaorm.inspect(b).persisted


def test_non_transient_failure_is_not_retried(db: TestBackend, rec: Recorder) -> None:
    rec.always["PutItem"] = RequestFailed("PutItem", "ValidationException", "bad request")
    s = db.session()
    s.save(Note(note_id="n1"))
    with pytest.raises(DynaormError, match="ValidationException"):
        s.commit()
    assert len(rec.writes) == 1


def test_too_many_actions(db: TestBackend, rec: Recorder) -> None:
    s = db.session()
    for i in range(101):
        s.save(Note(note_id=f"n{i:03d}"))
    with pytest.raises(TransactionTooLargeError, match="101"):
        s.commit()
    assert rec.writes == []
    assert db.scan_raw() == []
    for i in range(100):
        s.save(Note(note_id=f"n{i:03d}"))
    s.commit()
    assert len(db.scan_raw()) == 100


def test_too_many_actions_counting_guards(db: TestBackend, rec: Recorder) -> None:
    s = db.session()
    for i in range(34):  # 34 users x 3 actions = 102
        s.save(User(user_id=f"u{i}", username=f"user{i}", email=f"u{i}@x.com"))
    with pytest.raises(TransactionTooLargeError):
        s.commit()
    assert rec.writes == []


def test_item_too_large(db: TestBackend, rec: Recorder) -> None:
    s = db.session()
    s.save(Note(note_id="big", body="x" * (401 * 1024)))
    with pytest.raises(ItemTooLargeError) as err:
        s.commit()
    assert "Note" in str(err.value) and "NOTE#big" in str(err.value)
    assert rec.writes == []
    assert db.scan_raw() == []


def test_request_too_large(db: TestBackend, rec: Recorder) -> None:
    s = db.session()
    for i in range(11):
        s.save(Note(note_id=f"b{i}", body="x" * (390 * 1024)))
    with pytest.raises(TransactionTooLargeError):
        s.commit()
    assert rec.writes == []


def test_item_just_under_the_limit_is_stored(db: TestBackend) -> None:
    body = "x" * (390 * 1024)  # moto refuses items over 405000 bytes
    commit(db, Note(note_id="big", body=body))
    loaded = db.session().get(Note, note_id="big", consistent=True)
    assert loaded is not None and loaded.body == body


# -- misuse --------------------------------------------------------------------------------
def test_session_checks_the_table(db: TestBackend) -> None:
    """A session stages entities of its table's client only (contract 19): a table
    bound to another client is refused, naming both tables."""
    other = Table("other-table", endpoint_url="http://127.0.0.1:9")
    with pytest.raises(DynaormError, match="other-table") as err:
        Session(other).save(Note(note_id="n1"))
    assert db.table.name in str(err.value)
    with pytest.raises(DynaormError):
        Session("app")  # type: ignore[arg-type]


def test_a_session_stages_entities_of_any_table_of_its_client(db: TestBackend) -> None:
    """What 0.3 refused (a session took its own table's entities only) is the rule of
    contract 19 (0.4): a session made from one table stages the entities of every table
    bound to the same client, and commits them where they belong."""
    other = Table("other-table", client=db.table.db)
    s = db.session(other)
    s.save(Note(note_id="n1", body="x"))
    s.commit()
    assert [(i["note_id"], i["body"]) for i in db.scan()] == [("n1", "x")]
    assert s.get(Note, note_id="n1", consistent=True) == Note(note_id="n1", body="x")


def test_abstract_entity_cannot_be_saved(db: TestBackend) -> None:
    class SesBase(Entity):
        class Meta:
            table = app

        name: str = ""

    with pytest.raises(DynaormError, match="abstract"):
        db.session().save(SesBase())


def test_lookup_takes_exactly_the_key_fields(db: TestBackend) -> None:
    from dynaorm import KeyTemplateError

    s = db.session()
    with pytest.raises(KeyTemplateError, match="note_id"):
        s.get(Note)
    with pytest.raises(KeyTemplateError, match="body"):
        s.get(Note, note_id="n1", body="x")
    with pytest.raises(DynaormError):
        s.find(User, full_name="x")


# -- a session dropped with staged work ---------------------------------------------------------
#: whether a Session or AsyncSession let go warns is the session's own (its staged work),
#: the same on every engine: on moto and, for AsyncSession, on the moto server
DROPPED = pytest.mark.engines("moto")


def _dropped(use: Callable[[], object]) -> list[str]:
    """The ResourceWarnings of the sessions ``use`` makes and lets go (not those of
    sockets or sessions an earlier test let go: the heap as it was is frozen, so the
    collection after ``use`` looks at ``use``'s objects only; a full collection of a CI
    worker's heap cost ~0.6 s of CPU, ten of them 39 s for the test below)."""
    gc.freeze()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            use()
            gc.collect()
    finally:
        gc.unfreeze()
    return [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)
            and "Session" in str(w.message)]


@DROPPED
def test_a_session_dropped_with_staged_work_warns_what_is_lost(db: TestBackend) -> None:
    def stage() -> None:
        s = db.session()
        s.save(Note(note_id="n1", body="draft"))
        s.update(User, user_id="u1").set(full_name="Ann")
        s.delete(Note, note_id="n2")
        s.check(Note, note_id="n3", condition=dynaorm.F("body").exists())

    (message,) = _dropped(stage)
    kind = "AsyncSession" if db.session_kind == "async" else "Session"
    assert message == (
        f"{kind} dropped with 4 staged write(s) never committed, so never written: "
        "save Note {'pk': 'NOTE#n1', 'sk': 'NOTE'}; update User {'pk': 'USER#u1', 'sk': "
        "'PROFILE'}; delete Note {'pk': 'NOTE#n2', 'sk': 'NOTE'}; check Note {'pk': "
        "'NOTE#n3', 'sk': 'NOTE'} (commit() them, or rollback() to drop them)")
    assert db.scan() == []


@DROPPED
def test_no_warning_for_a_session_committed_rolled_back_failed_or_never_staged(
        db: TestBackend) -> None:
    def committed() -> None:
        with db.session() as s:
            s.save(Note(note_id="n1"))

    def rolled_back() -> None:
        s = db.session()
        s.save(Note(note_id="n2"))
        s.rollback()

    def failed() -> None:
        s = db.session()
        s.save(Note(note_id="n1"))  # (stored already)
        with pytest.raises(ItemExistsError):
            s.commit()

    def read_only() -> None:
        assert db.session().get(Note, note_id="n1", consistent=True) is not None

    for use in (committed, rolled_back, failed, read_only):
        assert _dropped(use) == [], use.__name__
