"""The compact persisted snapshot of loaded objects (issue 9: memory of ``.all()``).

A loaded object keeps its stored item as a tuple of values per item (sharing the entity's
value objects) and renders the item only when a write needs it. These tests pin that the
rendering is exact, that it is compact (names and values shared; the memory it takes next
to plain pydantic objects is measured by benchmarks/memory.py, never by a test), and that
writes keep their meaning on top of it: updates are conditioned on the stored values of
what they write, and attributes a foreign item carries that the entity does not know
survive an update.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

import dynaorm
from dynaorm import ConcurrentModificationError, Entity, Table
from dynaorm._types import Item
from dynaorm.testing import TestBackend
from dynaorm.values.state import InstanceState
from tests.support.models import Note, app

_t = Table("dynaorm-state-unit")


class Row(Entity):
    """Every kind of value DynamoDB stores."""

    class Meta:
        table = _t
        pk = "ROW#{row_id}"
        sk = "R"

    row_id: str
    name: str
    count: int
    price: Decimal
    ratio: float
    flag: bool
    nothing: str | None = None
    tags: list[str]
    labels: set[str]
    scores: set[int]
    meta: dict[str, Any]
    blob: bytes


def _raw_row(i: int) -> Item:
    return {
        "pk": {"S": f"ROW#r{i}"}, "sk": {"S": "R"}, "_type": {"S": "Row"},
        "row_id": {"S": f"r{i}"}, "name": {"S": f"name {i}"}, "count": {"N": str(i)},
        "price": {"N": "12.50"}, "ratio": {"N": "0.25"}, "flag": {"BOOL": i % 2 == 0},
        "nothing": {"NULL": True}, "tags": {"L": [{"S": "a"}, {"S": "b"}]},
        "labels": {"SS": ["x", "y"]}, "scores": {"NS": ["1", "2"]},
        "meta": {"M": {"k": {"N": "1"}, "l": {"L": [{"BOOL": True}]}}},
        "blob": {"B": b"\x00\x01"},
        # attributes the entity does not know: kept as they are stored
        "legacy": {"S": "old"}, "legacy_n": {"N": "7"}, "legacy_m": {"M": {"a": {"S": "b"}}},
        "legacy_null": {"NULL": True},
    }


def test_loaded_state_renders_the_stored_item_exactly() -> None:
    raw = _raw_row(3)
    obj = Row._from_item(raw)
    state = obj._dynaorm_state
    assert state is not None
    assert state.item == raw
    assert list(state.item) == list(raw)  # attribute order too
    public = dynaorm.inspect(obj)
    assert public.key == {"pk": "ROW#r3", "sk": "R"} and public.version is None
    assert state.item is state.item  # rendered once, when a write first needs it


def test_loaded_state_shares_the_objects_values_and_survives_mutation() -> None:
    obj = Row._from_item(_raw_row(1))
    state = obj._dynaorm_state
    assert isinstance(state, InstanceState)
    data = state._data
    assert isinstance(data, tuple)
    assert any(v is obj.name for v in data)  # the very string object, not a copy
    assert any(v is obj.price for v in data)
    # containers are mutable: the snapshot keeps their wire form, not the object's value
    assert dynaorm.inspect(obj).loaded == obj.model_dump()  # (inspecting keeps no rendering)
    assert getattr(state, "_rendered", None) is None  # nothing rendered until a write needs it
    obj.tags.append("c")
    obj.labels.add("z")
    obj.meta["k"] = 2
    assert state.item == _raw_row(1)


def test_items_of_one_shape_share_their_attribute_names() -> None:
    a = Row._from_item(_raw_row(1))._dynaorm_state
    b = Row._from_item(_raw_row(2))._dynaorm_state
    assert a is not None and b is not None
    assert a._shape is b._shape
    assert a != b
    assert a == Row._from_item(_raw_row(1))._dynaorm_state


def test_a_written_state_keeps_the_item_it_was_given() -> None:
    item: Item = {"pk": {"S": "K"}, "sk": {"S": "S"}}
    state = InstanceState({"pk": "K", "sk": "S"}, item, 4)
    assert state.item is item
    assert state.key == {"pk": "K", "sk": "S"}
    assert state.version == 4


# -- writes on top of the compact snapshot (moto and DynamoDB Local) --------------------

def _put_foreign_note(db: TestBackend, body: str = "v0") -> None:
    """A Note row as another tool wrote it: with attributes Note does not declare."""
    db.table.client.put_item(TableName=db.table.name, Item={
        "pk": {"S": "NOTE#n1"}, "sk": {"S": "NOTE"}, "_type": {"S": "Note"},
        "note_id": {"S": "n1"}, "body": {"S": body}, "tags": {"L": [{"S": "t"}]},
        "legacy": {"S": "keep me"}, "legacy_count": {"N": "3"},
        "legacy_map": {"M": {"a": {"L": [{"N": "1"}]}}}})


def test_update_keeps_attributes_the_entity_does_not_know(db: TestBackend) -> None:
    _put_foreign_note(db)
    with db.session() as s:
        note = s.get(Note, note_id="n1")
        assert note is not None
        note.body = "v1"
        note.tags.append("u")
        s.save(note)
    (stored,) = db.scan_raw()
    assert stored["body"] == {"S": "v1"}
    assert stored["tags"] == {"L": [{"S": "t"}, {"S": "u"}]}
    assert stored["legacy"] == {"S": "keep me"}
    assert stored["legacy_count"] == {"N": "3"}
    assert stored["legacy_map"] == {"M": {"a": {"L": [{"N": "1"}]}}}
    # and the object's new snapshot allows a second update without a reload
    note.body = "v2"
    with db.session() as s:
        s.save(note)
    (stored,) = db.scan_raw()
    assert stored["body"] == {"S": "v2"} and stored["legacy"] == {"S": "keep me"}


def test_staged_update_of_a_loaded_object_keeps_unknown_attributes(db: TestBackend) -> None:
    _put_foreign_note(db)
    s = db.session()
    note = s.get(Note, note_id="n1")
    assert note is not None
    s.update(note).set(body="v1")
    s.commit()
    (stored,) = db.scan_raw()
    assert stored["body"] == {"S": "v1"}
    assert stored["legacy"] == {"S": "keep me"} and stored["legacy_count"] == {"N": "3"}


def test_update_is_conditioned_on_the_stored_value_it_read(db: TestBackend) -> None:
    _put_foreign_note(db)
    s = db.session()
    note = s.get(Note, note_id="n1")
    assert note is not None
    _put_foreign_note(db, body="changed by someone else")
    note.body = "mine"
    s.save(note)
    before = db.scan_raw()
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan_raw() == before  # nothing written
    assert before[0]["body"] == {"S": "changed by someone else"}


def test_unknown_attribute_changed_elsewhere_does_not_block_an_update(db: TestBackend) -> None:
    """Only what the update writes is conditioned: a foreign attribute is not."""
    _put_foreign_note(db)
    s = db.session()
    note = s.get(Note, note_id="n1")
    assert note is not None
    db.table.client.update_item(
        TableName=db.table.name, Key={"pk": {"S": "NOTE#n1"}, "sk": {"S": "NOTE"}},
        UpdateExpression="SET legacy = :v", ExpressionAttributeValues={":v": {"S": "new"}})
    note.body = "v1"
    s.save(note)
    s.commit()
    (stored,) = db.scan_raw()
    assert stored["body"] == {"S": "v1"} and stored["legacy"] == {"S": "new"}


def test_all_loads_compact_states(db: TestBackend) -> None:
    with db.session() as s:
        for i in range(30):
            s.save(Note(note_id=f"n{i:02d}", body=f"b{i}", tags=["x"]))
    notes = db.session().scan(Note).all()
    assert len(notes) == 30
    raw = {item["pk"]["S"]: item for item in db.scan_raw()}
    for note in notes:
        state = note._dynaorm_state
        assert state is not None and isinstance(state._data, tuple)
        assert state.item == raw[state.key["pk"]]


_ = app  # the shared table the ``db`` fixture creates
