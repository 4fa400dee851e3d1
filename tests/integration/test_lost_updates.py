"""No lost updates (contract section 4, 0.2): an update of a persisted object is conditioned
on the stored values of every attribute it writes or removes, on every engine. Racing
writers are in tests/system/test_concurrency.py, the request size those conditions add in
tests/unit/test_write_plan.py."""

from __future__ import annotations

from typing import Any

import pytest

import dynaorm
from dynaorm import ConcurrentModificationError, Entity, Session
from dynaorm.testing import TestBackend
from tests.support.models import Note, app
from tests.support.raw import raw_get, raw_set
from tests.support.recording import send

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


def _note(db: TestBackend, **fields: Any) -> None:
    with db.session() as s:
        s.save(Note(note_id="n1", **fields))


def _load(db: TestBackend) -> tuple[Session, Note]:
    s = db.session()
    n = s.get(Note, note_id="n1")
    assert n is not None
    return s, n


def test_same_attribute_from_one_loaded_state_second_writer_fails(db: TestBackend) -> None:
    _note(db, body="v0")
    s1, a = _load(db)
    s2, b = _load(db)
    a.body = "from a"
    s1.save(a)
    s1.commit()
    b.body = "from b"
    s2.save(b)
    before = db.scan()
    with pytest.raises(ConcurrentModificationError) as err:
        s2.commit()
    assert err.value.entity is Note
    assert db.scan() == before
    assert before[0]["body"] == "from a"
    # b kept the state it was loaded with: reload and retry works
    s3, c = _load(db)
    c.body = "from b"
    s3.save(c)
    s3.commit()
    assert db.scan()[0]["body"] == "from b"


def test_a_delete_of_a_loaded_object_is_conditioned_on_its_revision(db: TestBackend) -> None:
    """(0.6, the rule matrix) The delete of an object loaded before another writer's
    change deleted that change unseen: it is conditioned on the revision it was loaded
    with (the revision rule's answer for deletes)."""
    _note(db, body="v0")
    s1, stale = _load(db)
    s2, fresh = _load(db)
    fresh.body = "changed"
    s2.save(fresh)
    s2.commit()
    s1.delete(stale)
    with pytest.raises(ConcurrentModificationError):
        s1.commit()
    s1.rollback()
    assert _load(db)[1].body == "changed"
    s3, current = _load(db)
    s3.delete(current)
    s3.commit()
    assert db.scan() == []


def test_removed_attribute_is_conditioned_too(db: TestBackend) -> None:
    _note(db, body="v0", tags=["x"])
    s1, a = _load(db)
    s2, b = _load(db)
    a.tags = ["y"]
    s1.save(a)
    s1.commit()
    b.tags = []  # written as an empty list: conditioned on the old ["x"]
    s2.save(b)
    before = db.scan()
    with pytest.raises(ConcurrentModificationError):
        s2.commit()
    assert db.scan() == before


def test_attribute_absent_when_loaded_must_still_be_absent(db: TestBackend) -> None:
    t = db.table
    type_attr = t.type_attribute
    send(t, "PutItem", {"TableName": t.name, "Item": {  # written by other code
        "pk": {"S": "NOTE#n1"}, "sk": {"S": "NOTE"}, type_attr: {"S": "Note"},
        "note_id": {"S": "n1"}}})
    s1, a = _load(db)
    s2, b = _load(db)
    assert a.body == "" and b.body == ""
    a.body = "A"
    b.body = "B"
    s1.save(a)
    s1.commit()
    s2.save(b)
    before = db.scan()
    with pytest.raises(ConcurrentModificationError):
        s2.commit()
    assert db.scan() == before
    assert before[0]["body"] == "A"


def test_different_attributes_both_land(db: TestBackend) -> None:
    _note(db, body="v0", tags=["x"])
    s1, a = _load(db)
    s2, b = _load(db)
    a.body = "from a"
    b.tags = ["from b"]
    s1.save(a)
    s1.commit()
    s2.save(b)
    s2.commit()
    (row,) = db.scan()
    assert (row["body"], row["tags"]) == ("from a", ["from b"])


def test_overwrite_of_a_persisted_object_is_last_writer_wins(db: TestBackend) -> None:
    _note(db, body="v0")
    s1, a = _load(db)
    s2, b = _load(db)
    a.body = "from a"
    s1.save(a)
    s1.commit()
    b.body = "from b"
    s2.save(b, overwrite=True)
    s2.commit()
    assert db.scan()[0]["body"] == "from b"


def test_moving_a_key_is_conditioned_on_every_attribute_it_copies(db: TestBackend) -> None:
    _note(db, body="v0")
    s1, a = _load(db)
    s2, b = _load(db)
    a.body = "changed"
    s1.save(a)
    s1.commit()
    b.note_id = "n2"  # moves the item: would copy the stale body to the new key
    s2.save(b)
    before = db.scan()
    with pytest.raises(ConcurrentModificationError):
        s2.commit()
    assert db.scan() == before


def test_model_copy_of_a_loaded_object_saves_as_an_update(db: TestBackend) -> None:
    _note(db, body="v0")
    s, n = _load(db)
    copy = n.model_copy(update={"body": "copied"})
    mine, theirs = dynaorm.inspect(copy), dynaorm.inspect(n)
    assert mine.persisted and mine.changed == {"body"}  # loaded as n was, then changed
    assert (mine.key, mine.loaded, mine.version) == (theirs.key, theirs.loaded, theirs.version)
    s.save(copy)
    plan = s.plan()
    (op,) = plan.ops
    assert type(op).__name__ == "Update"
    s.commit()
    assert db.scan()[0]["body"] == "copied"
    deep = copy.model_copy(deep=True)
    assert dynaorm.inspect(deep).persisted


class Memo(Entity):
    class Meta:
        table = app
        pk = "MEMO#{memo_id}"
        sk = "MEMO"

    memo_id: str
    body: str = ""
    note: str | None = None  # (absent from the stored item while None)


def _memo_moved(db: TestBackend, before_load: bool, **theirs: str) -> Session:
    """Memo m1 stored, ``theirs`` set by another writer (before or after the load), and
    the loaded object staged to move to m2; the session to commit it."""
    with db.session() as s:
        s.save(Memo(memo_id="m1", body="v0"))
    if before_load:
        raw_set(db.table, {"pk": "MEMO#m1", "sk": "MEMO"}, **theirs)
    s = db.session()
    m = s.get(Memo, memo_id="m1", consistent=True)
    assert m is not None
    if not before_load:
        raw_set(db.table, {"pk": "MEMO#m1", "sk": "MEMO"}, **theirs)
    m.memo_id = "m2"
    s.save(m)
    return s


def test_moving_a_key_never_drops_a_value_set_after_the_load(db: TestBackend) -> None:
    # (0.4) the move was conditioned on the attributes present at load only: a value
    # another writer set where the loaded item had none was dropped, and the move
    # reported success
    s = _memo_moved(db, False, note="theirs")
    before = db.scan_raw()
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan_raw() == before


def test_moving_a_key_carries_a_newer_models_attribute(db: TestBackend) -> None:
    _memo_moved(db, True, newer_attr="kept").commit()
    moved = raw_get(db.table, {"pk": "MEMO#m2", "sk": "MEMO"})
    assert moved is not None and moved["newer_attr"] == {"S": "kept"}
    assert raw_get(db.table, {"pk": "MEMO#m1", "sk": "MEMO"}) is None


def test_moving_a_key_carries_an_attribute_a_newer_model_set_after_the_load(
        db: TestBackend) -> None:
    # (0.4) the move copied the item as loaded: an attribute a newer model set after the
    # load was dropped, and the move reported success. A condition cannot name what no
    # class here declares: the move reads it and carries it
    _memo_moved(db, False, newer_attr="theirs").commit()
    moved = raw_get(db.table, {"pk": "MEMO#m2", "sk": "MEMO"})
    assert moved is not None and moved["newer_attr"] == {"S": "theirs"}
