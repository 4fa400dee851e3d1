"""``dynaorm.inspect(obj)`` (release 0.4): an object's persistence state, new, persisted or
deleted, with the values it was loaded with, its loaded version, its table and key, through
everything that changes it: reads, commits (inserts, updates, key moves, deletes), failed
commits (nothing changes), bulk calls, and a read from the previous layout."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from pydantic import Field

import dynaorm
from dynaorm import (
    ConditionFailedError,
    DynaormError,
    Entity,
    F,
    Inspection,
    ItemExistsError,
    ItemNotFoundError,
    Previous,
    Table,
    UniqueConstraintError,
)
from dynaorm.protocol.steps import call
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.models import Audit, Note, User, app

# -- a table of this module's own: a previous layout, a TTL, a field no write stores -------
own = Table("dynaorm-inspect", ttl="expires")


def _old_memo(db: TestBackend, id: str, body: str) -> None:
    """``Memo`` as it was stored before a design change (``MEMO#{id}``, type ``memo``,
    text stored as ``body``), written raw to set the scene: a class of its own would take
    the type name ``Memo`` retired, which 0.4 refuses on one table."""
    db.table.db.driver.run(call("PutItem", {"TableName": db.table.name, "Item": {
        "pk": {"S": f"MEMO#{id}"}, "sk": {"S": "MEMO"}, "_type": {"S": "memo"},
        "id": {"S": id}, "body": {"S": body}}}))


class Memo(Entity):
    """``Memo`` after a change: a new key template, type name and stored name."""

    class Meta:
        table = own
        pk = "NOTE#{id}"
        sk = "MEMO"
        type_name = "memo2"
        previous = Previous(pk="MEMO#{id}", type_name="memo", stored_names={"text": "body"})

    id: str
    text: str = ""


class Lease(Entity):
    """A TTL (stored in whole seconds) and a field no write stores."""

    class Meta:
        table = own
        pk = "LEASE#{id}"
        sk = "LEASE"

    id: str
    holder: str = ""
    expires: datetime | None = None
    scratch: str = Field(default="", exclude=True)


@pytest.fixture
def own_db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """This module's table, fresh, on the current backend (async variant included)."""
    with use_tables(own, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        callspec = getattr(request.node, "callspec", None)
        if callspec and str(callspec.params.get("backend", "")).endswith("-async"):
            tb.session_kind = "async"
        yield tb


# -- new ------------------------------------------------------------------------------------
def test_a_new_object() -> None:
    note = Note(note_id="n1", body="hello")
    state = dynaorm.inspect(note)
    assert isinstance(state, Inspection)
    assert state.status == "new" and state.new and not state.persisted and not state.deleted
    assert state.entity is Note and state.table is app
    assert state.key == {"pk": "NOTE#n1", "sk": "NOTE"}  # where a save would insert it
    assert state.loaded is None and state.version is None and state.changed is None
    assert not state.previous_layout
    assert repr(state) == "<Inspection Note new, key={'pk': 'NOTE#n1', 'sk': 'NOTE'}>"


def test_a_new_object_whose_key_cannot_render_has_no_key() -> None:
    state = dynaorm.inspect(Note.model_construct(body="no id"))
    assert state.new and state.key is None


def test_the_record_is_frozen_and_its_mappings_read_only(db: TestBackend) -> None:
    note = Note(note_id="n1", body="a")
    with db.session() as s:
        s.save(note)
    state = dynaorm.inspect(note)
    with pytest.raises(AttributeError):
        state.status = "new"  # type: ignore[misc]
    assert state.loaded is not None and state.key is not None
    with pytest.raises(TypeError):
        state.loaded["body"] = "b"  # type: ignore[index]
    with pytest.raises(TypeError):
        state.key["pk"] = "X"  # type: ignore[index]


@pytest.mark.parametrize("value", [1, None, "Note", Note, Entity])
def test_anything_but_an_entity_object_is_refused(value: object) -> None:
    with pytest.raises(DynaormError, match=r"dynaorm.inspect\(\) takes an entity object"):
        dynaorm.inspect(value)  # type: ignore[arg-type]


def test_an_object_of_an_abstract_entity_is_refused() -> None:
    class Base(Entity):  # no Meta.pk: abstract, never stored
        name: str = ""

    with pytest.raises(DynaormError, match="Base is abstract"):
        dynaorm.inspect(Base())


# -- persisted: loaded, inserted, updated --------------------------------------------------
def test_a_loaded_object_and_its_changes(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Note(note_id="n1", body="hello", tags=["a"]))
    note = db.session().get(Note, note_id="n1")
    assert note is not None
    state = dynaorm.inspect(note)
    assert state.status == "persisted" and state.persisted and not state.new
    assert state.key == {"pk": "NOTE#n1", "sk": "NOTE"}
    assert state.loaded == {"note_id": "n1", "body": "hello", "tags": ["a"]}
    assert state.version is None and state.changed == frozenset()
    note.body = "changed"
    note.tags.append("b")  # a change in place counts too
    state = dynaorm.inspect(note)
    assert state.changed == {"body", "tags"}
    assert state.loaded == {"note_id": "n1", "body": "hello", "tags": ["a"]}  # as loaded
    assert {n for n, v in state.loaded.items() if getattr(note, n) != v} == state.changed
    assert repr(state) == ("<Inspection Note persisted, key={'pk': 'NOTE#n1', 'sk': 'NOTE'}, "
                           "changed=['body', 'tags']>")


def test_a_committed_insert_then_update(db: TestBackend) -> None:
    note = Note(note_id="n1", body="one")
    s = db.session()
    s.save(note)
    assert dynaorm.inspect(note).new  # staged only: nothing changes before the commit
    s.commit()
    state = dynaorm.inspect(note)
    assert state.persisted and state.changed == frozenset()
    assert state.loaded == {"note_id": "n1", "body": "one", "tags": []}
    note.body = "two"
    s.save(note)
    s.commit()
    state = dynaorm.inspect(note)
    assert state.persisted and state.changed == frozenset()
    assert state.loaded == {"note_id": "n1", "body": "two", "tags": []}
    assert state.key == {"pk": "NOTE#n1", "sk": "NOTE"}


def test_the_loaded_values_are_a_copy(db: TestBackend) -> None:
    note = Note(note_id="n1", tags=["a"])
    with db.session() as s:
        s.save(note)
    loaded = dynaorm.inspect(note).loaded
    assert loaded is not None
    loaded["tags"].append("not mine")
    assert note.tags == ["a"] and dynaorm.inspect(note).loaded == {
        "note_id": "n1", "body": "", "tags": ["a"]}


def test_a_key_move(db: TestBackend) -> None:
    note = Note(note_id="n1", body="x")
    s = db.session()
    s.save(note)
    s.commit()
    note.note_id = "n2"
    state = dynaorm.inspect(note)
    assert state.key == {"pk": "NOTE#n1", "sk": "NOTE"}  # still the stored item's
    assert state.changed == {"note_id"} and state.loaded is not None
    assert state.loaded["note_id"] == "n1"
    s.save(note)
    s.commit()
    state = dynaorm.inspect(note)
    assert state.key == {"pk": "NOTE#n2", "sk": "NOTE"} and state.changed == frozenset()
    assert s.get(Note, note_id="n1") is None


def test_a_versioned_entity_has_its_loaded_version(db: TestBackend) -> None:
    audit = Audit(equipment_id="e1", part="p")
    new_key = dynaorm.inspect(audit).key
    assert dynaorm.inspect(audit).version is None
    s = db.session()
    s.save(audit)
    s.commit()
    state = dynaorm.inspect(audit)
    assert state.version == 1 and state.loaded is not None and state.loaded["version"] == 1
    assert state.key == new_key and state.key is not None
    assert state.key["pk"] == "EQUIPMENT#e1"  # the latest copy's key
    audit.notes = "checked"
    s.save(audit)
    s.commit()
    assert dynaorm.inspect(audit).version == 2
    loaded = s.get(Audit, equipment_id="e1", part="p")
    assert loaded is not None
    state = dynaorm.inspect(loaded)
    assert state.version == 2 and state.changed == frozenset()
    assert state.loaded is not None and state.loaded["notes"] == "checked"
    assert "version=2" in repr(state)


# -- failed commits change nothing ---------------------------------------------------------
def test_a_failed_insert_leaves_the_object_new(db: TestBackend) -> None:
    with db.session() as s:
        s.save(User(user_id="u1", username="ann", email="ann@x.io"))
    dup = User(user_id="u2", username="ann", email="other@x.io")
    before = dynaorm.inspect(dup)
    s = db.session()
    s.save(dup)
    with pytest.raises(UniqueConstraintError):
        s.commit()
    assert dynaorm.inspect(dup) == before and before.new
    same_key = Note(note_id="n1")
    with db.session() as s:
        s.save(Note(note_id="n1"))
    s = db.session()
    s.save(same_key)
    with pytest.raises(ItemExistsError):
        s.commit()
    assert dynaorm.inspect(same_key).new


def test_a_failed_update_or_delete_leaves_the_loaded_state(db: TestBackend) -> None:
    note = Note(note_id="n1", body="one")
    with db.session() as s:
        s.save(note)
    note.body = "two"
    before = dynaorm.inspect(note)
    s = db.session()
    s.save(note, condition=F("body") == "not so")
    with pytest.raises(ConditionFailedError):
        s.commit()
    assert dynaorm.inspect(note) == before
    assert before.changed == {"body"} and before.loaded is not None
    assert before.loaded["body"] == "one"
    s.rollback()
    s.delete(note, condition=F("body") == "not so")
    with pytest.raises(ConditionFailedError):
        s.commit()
    assert dynaorm.inspect(note) == before


# -- deleted ---------------------------------------------------------------------------------
def test_a_deleted_object_inserts_when_saved_again(db: TestBackend) -> None:
    note = Note(note_id="n1", body="one")
    s = db.session()
    s.save(note)
    s.commit()
    s.delete(note)
    assert dynaorm.inspect(note).persisted  # staged only
    s.commit()
    state = dynaorm.inspect(note)
    assert state.status == "deleted" and state.deleted and not state.new
    assert not state.persisted
    assert state.loaded is None and state.version is None and state.changed is None
    assert state.key == {"pk": "NOTE#n1", "sk": "NOTE"}  # where saving it inserts it
    assert repr(state) == "<Inspection Note deleted, key={'pk': 'NOTE#n1', 'sk': 'NOTE'}>"
    # a copy of a deleted object is deleted too (as a copy of a loaded one is loaded)
    assert dynaorm.inspect(note.model_copy()).deleted
    assert dynaorm.inspect(copy.deepcopy(note)).deleted
    # saving it again is an insert: refused while another writer's item holds the key
    with db.session() as other:
        other.save(Note(note_id="n1", body="theirs"))
    s.save(note)
    with pytest.raises(ItemExistsError):
        s.commit()
    assert dynaorm.inspect(note).deleted  # the failed commit changed nothing
    s.rollback()
    with db.session() as other:
        other.delete(Note, note_id="n1")
    s.save(note)
    s.commit()
    state = dynaorm.inspect(note)
    assert state.persisted and state.loaded == {"note_id": "n1", "body": "one", "tags": []}


def test_a_deleted_object_is_deleted_again_as_a_new_one_is(db: TestBackend) -> None:
    note = Note(note_id="n1")
    with db.session() as s:
        s.save(note)
    with db.session() as s:
        s.delete(note)
    s = db.session()
    s.delete(note)  # by its key, as for an object never loaded: the item must exist
    with pytest.raises(ItemNotFoundError):
        s.commit()
    assert dynaorm.inspect(note).deleted


def test_a_deleted_versioned_object(db: TestBackend) -> None:
    audit = Audit(equipment_id="e1", part="p")
    s = db.session()
    s.save(audit)
    s.commit()
    s.delete(audit)
    s.commit()
    state = dynaorm.inspect(audit)
    assert state.deleted and state.version is None
    s.save(audit)  # inserted again, continuing its kept history
    s.commit()
    assert dynaorm.inspect(audit).persisted and dynaorm.inspect(audit).version == 2


def test_a_delete_of_a_never_loaded_object(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Note(note_id="n1"))
    stranger = Note(note_id="n1")  # built, not read: deleted by its key
    with db.session() as s:
        s.delete(stranger)
    assert dynaorm.inspect(stranger).deleted


# -- bulk calls ------------------------------------------------------------------------------
def test_bulk_save_and_delete(db: TestBackend) -> None:
    s = db.session()
    notes = [Note(note_id=f"n{i}", body=str(i)) for i in range(3)]
    s.save_many(notes)
    assert [dynaorm.inspect(n).status for n in notes] == ["persisted"] * 3
    assert all(dynaorm.inspect(n).changed == frozenset() for n in notes)
    notes[0].body = "changed"
    s.save_many(notes[:1])  # a loaded object: a conditioned update
    state = dynaorm.inspect(notes[0])
    assert state.loaded is not None and state.loaded["body"] == "changed"
    loaded = s.get(Note, note_id="n1")
    assert loaded is not None
    s.delete_many([notes[0], loaded, Note(note_id="n2")])
    assert dynaorm.inspect(notes[0]).deleted and dynaorm.inspect(loaded).deleted
    assert dynaorm.inspect(notes[2]).persisted  # (deleted by another object: not known)
    s.save_many([notes[0]])  # a deleted object: inserted again
    assert dynaorm.inspect(notes[0]).persisted
    assert [i["note_id"] for i in db.scan()] == ["n0"]


# -- this module's table: TTL, unstored fields, the previous layout ---------------------------
def test_a_ttl_stored_in_whole_seconds_and_an_unstored_field_are_not_changes(
        own_db: TestBackend) -> None:
    lease = Lease(id="l1", holder="ann",
                  expires=datetime(2100, 1, 1, 12, 0, 0, 500_000, tzinfo=UTC))
    with own_db.session() as s:
        s.save(lease)
    state = dynaorm.inspect(lease)
    assert state.loaded is not None
    assert state.loaded["expires"] == datetime(2100, 1, 1, 12, 0, 0, tzinfo=UTC)  # as stored
    assert lease.expires != state.loaded["expires"] and state.changed == frozenset()
    lease.scratch = "never stored"
    assert dynaorm.inspect(lease).changed == frozenset()
    lease.expires = datetime(2100, 1, 2, tzinfo=UTC)
    lease.holder = "bob"
    assert dynaorm.inspect(lease).changed == {"expires", "holder"}


def test_an_object_read_from_the_previous_layout(own_db: TestBackend) -> None:
    _old_memo(own_db, "m1", "hi")
    s = own_db.session()
    memo = s.get(Memo, id="m1")
    assert memo is not None
    state = dynaorm.inspect(memo)
    assert state.persisted and state.previous_layout
    assert state.key == {"pk": "MEMO#m1", "sk": "MEMO"}  # the old row's
    assert state.loaded == {"id": "m1", "text": "hi"} and state.changed == frozenset()
    assert repr(state).endswith(", read from the previous layout>")
    memo.text = "moved"
    assert dynaorm.inspect(memo).changed == {"text"}
    s.save(memo)  # the save moves it
    s.commit()
    state = dynaorm.inspect(memo)
    assert state.persisted and not state.previous_layout
    assert state.key == {"pk": "NOTE#m1", "sk": "MEMO"}
    assert state.loaded == {"id": "m1", "text": "moved"}
    fresh = own_db.session().get(Memo, id="m1")
    assert fresh is not None and not dynaorm.inspect(fresh).previous_layout
