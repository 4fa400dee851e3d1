"""``s.save(obj, overwrite=True)`` on a persisted object is last writer wins (contract
section 18, "Overwrite"): whatever another writer stored since the load (another unique
value, another version, a delete), the overwrite succeeds, and the guards afterwards are
exactly those of the values it wrote (the other writer's are released)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from dynaorm import UniqueConstraintError
from dynaorm.testing import TestBackend
from tests.support.guards import GUARD, assert_guards_consistent
from tests.support.models import Audit, Note, User

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


def guards(db: TestBackend) -> dict[str, dict[str, Any]]:
    return {i["pk"]: i for i in db.scan() if i.get("_type") == GUARD}


def _user(db: TestBackend) -> User:
    with db.session() as s:
        s.save(User(user_id="u1", username="ann", email="ann@x.com", full_name="Ann"))
    mine = db.session().get(User, user_id="u1", consistent=True)
    assert mine is not None
    return mine


def _other_writer(db: TestBackend, **changes: Any) -> None:
    with db.session() as other:
        theirs = other.get(User, user_id="u1", consistent=True)
        assert theirs is not None
        for name, value in changes.items():
            setattr(theirs, name, value)
        other.save(theirs)


@contextmanager
def _other_writer_before(db: TestBackend, operation: str,
                         write: Callable[[], None]) -> Iterator[list[str]]:
    """Another writer's ``write``, once, just before this table's first ``operation``
    (a botocore ``before-call`` hook: the table sends through botocore's wire meanwhile);
    the list it yields says whether it ran."""
    db.table.wire = "botocore"  # hooks botocore's client: its wire
    events = db.table.client.meta.events
    fired: list[str] = []

    def slip_in(**_: Any) -> None:
        if not fired:
            fired.append("other writer")
            write()

    events.register(f"before-call.dynamodb.{operation}", slip_in)
    try:
        yield fired
    finally:
        events.unregister(f"before-call.dynamodb.{operation}", slip_in)


def test_overwrite_wins_over_another_writers_unique_change(db: TestBackend) -> None:
    mine = _user(db)
    _other_writer(db, email="ann@other.com", username="anna", full_name="Theirs")
    mine.full_name = "Mine"
    with db.session() as s:
        s.save(mine, overwrite=True)  # was ConcurrentModificationError in 0.2
    stored = db.session().get(User, user_id="u1", consistent=True)
    assert stored is not None
    assert (stored.email, stored.username, stored.full_name) == ("ann@x.com", "ann", "Mine")
    assert set(guards(db)) == {"email#ann@x.com", "username#ann"}  # theirs released
    assert_guards_consistent(db)
    with db.session() as s:  # the released values are free again
        s.save(User(user_id="u2", username="anna", email="ann@other.com"))
    assert_guards_consistent(db)
    mine.full_name = "Mine again"  # the state the overwrite left plans the next save
    with db.session() as s:
        s.save(mine)
    assert_guards_consistent(db)


def test_overwrite_with_a_new_unique_value_over_another_writers_change(
        db: TestBackend) -> None:
    mine = _user(db)
    _other_writer(db, email="ann@other.com")
    mine.email = "ann@mine.com"
    with db.session() as s:
        s.save(mine, overwrite=True)
    assert set(guards(db)) == {"email#ann@mine.com", "username#ann"}
    assert_guards_consistent(db)


def test_overwrite_recreates_an_item_another_writer_deleted(db: TestBackend) -> None:
    mine = _user(db)
    with db.session() as other:
        other.delete(User, user_id="u1")
    assert guards(db) == {}
    mine.full_name = "Back"
    with db.session() as s:
        s.save(mine, overwrite=True)
    assert set(guards(db)) == {"email#ann@x.com", "username#ann"}
    assert_guards_consistent(db)
    with db.session() as s:  # a plain entity too
        s.save(Note(note_id="n1", body="one"))
    note = db.session().get(Note, note_id="n1")
    assert note is not None
    db.session().delete_many(Note, [{"note_id": "n1"}])
    note.body = "two"
    with db.session() as s:
        s.save(note, overwrite=True)
    assert [i["body"] for i in db.scan() if i.get("_type") == "Note"] == ["two"]


def test_overwrite_of_a_plain_entity_wins_over_another_writers_change(
        db: TestBackend) -> None:
    with db.session() as s:
        s.save(Note(note_id="n1", body="one", tags=["a"]))
    mine = db.session().get(Note, note_id="n1")
    theirs = db.session().get(Note, note_id="n1")
    assert mine is not None and theirs is not None
    theirs.body, theirs.tags = "theirs", ["b"]
    with db.session() as s:
        s.save(theirs)
    mine.body = "mine"
    with db.session() as s:
        s.save(mine, overwrite=True)
    got = db.session().get(Note, note_id="n1", consistent=True)
    assert got is not None and (got.body, got.tags) == ("mine", ["a"])  # the whole object


def test_overwrite_of_a_versioned_entity_after_another_version(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Audit(equipment_id="E1", part="P1", notes="one"))
    mine = db.session().get(Audit, equipment_id="E1", part="P1")
    theirs = db.session().get(Audit, equipment_id="E1", part="P1")
    assert mine is not None and theirs is not None
    theirs.notes = "theirs"
    with db.session() as s:
        s.save(theirs)
    mine.notes = "mine"
    with db.session() as s:
        s.save(mine, overwrite=True)
    assert mine.version == 3  # type: ignore[attr-defined]
    s = db.session()
    assert [a.notes for a in s.history(Audit, equipment_id="E1", part="P1")] == [
        "one", "theirs", "mine"]


def test_overwrite_never_takes_a_unique_value_another_owner_holds(db: TestBackend) -> None:
    mine = _user(db)
    with db.session() as s:
        s.save(User(user_id="u2", username="bob", email="bob@x.com"))
    mine.email = "bob@x.com"
    s = db.session()
    s.save(mine, overwrite=True)
    with pytest.raises(UniqueConstraintError):
        s.commit()
    stored = db.session().get(User, user_id="u1", consistent=True)
    assert stored is not None and stored.email == "ann@x.com"
    assert_guards_consistent(db)


@pytest.mark.sync_only  # a botocore hook on the sync client sequences the other writer
def test_overwrite_reads_again_when_another_writer_slips_in_before_it_lands(
        db: TestBackend) -> None:
    """The overwrite reads the stored item, plans on it, and sends; another writer changes
    a unique value in between: the conditioned write fails (nothing written), the commit
    reads and plans again, and succeeds with exact guards."""
    mine = _user(db)
    with _other_writer_before(db, "PutItem",
                              lambda: _other_writer(db, email="ann@other.com")) as fired:
        mine.full_name = "Mine"
        with db.session() as s:
            s.save(mine, overwrite=True)
    assert fired == ["other writer"]
    stored = db.session().get(User, user_id="u1", consistent=True)
    assert stored is not None and (stored.email, stored.full_name) == ("ann@x.com", "Mine")
    assert set(guards(db)) == {"email#ann@x.com", "username#ann"}
    assert_guards_consistent(db)


@pytest.mark.sync_only
@pytest.mark.parametrize(("entity", "operation"), [("User", "PutItem"),
                                                  ("Audit", "TransactWriteItems")])
def test_overwrite_recreates_an_item_deleted_between_its_read_and_its_write(
        db: TestBackend, entity: str, operation: str) -> None:
    """(0.4) another writer deleted the item after the overwrite read it: ItemGoneError.
    An overwrite is last writer wins: it reads again and recreates the item."""
    mine: User | Audit
    if entity == "User":
        mine = _user(db)
        mine.full_name = "Back"
        key: dict[str, str] = {"user_id": "u1"}
    else:
        with db.session() as s:
            s.save(Audit(equipment_id="E1", part="P1", auditor="a"))
        key = {"equipment_id": "E1", "part": "P1"}
        loaded = db.session().get(Audit, consistent=True, **key)
        assert loaded is not None
        mine = loaded
        mine.auditor = "Back"
    def delete() -> None:
        with db.session() as other:
            other.delete(type(mine), **key)

    with _other_writer_before(db, operation, delete) as fired, db.session() as s:
        s.save(mine, overwrite=True)
    assert fired == ["other writer"]
    stored = db.session().get(type(mine), consistent=True, **key)
    assert stored is not None
    assert getattr(stored, "full_name" if entity == "User" else "auditor") == "Back"
    assert_guards_consistent(db)
