"""``Meta.timestamps`` (contract 14): created once, updated on every write."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from dynaorm import (
    ConcurrentModificationError,
    DynaormError,
    Entity,
    ItemExistsError,
    Session,
    Table,
)
from dynaorm.testing import TestBackend
from tests.support.engines import on_engine
from tests.support.recording import Requests

stamped = Table("stamps")


class Doc(Entity):
    class Meta:
        table = stamped
        pk = "DOC#{doc_id}"
        sk = "DOC"
        timestamps = ("created_at", "updated_at")  # declared by dynaorm

    doc_id: str
    title: str = ""


class Note(Entity):
    class Meta:
        table = stamped
        pk = "NOTE#{note_id}"
        sk = "NOTE"
        timestamps = (None, "touched")

    note_id: str
    touched: datetime | None = None  # declared by the user: type checkers see it
    body: str = ""


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, stamped)


def test_fields_are_declared() -> None:
    fields = Doc.model_fields
    assert fields["created_at"].annotation == datetime | None
    assert fields["created_at"].default is None and fields["updated_at"].default is None
    assert "created_at" not in Note.model_fields


def test_bad_timestamps_are_refused() -> None:
    with pytest.raises(DynaormError, match="must be a datetime"):
        class Bad(Entity):
            class Meta:
                table = stamped
                pk = "B#{b}"
                sk = "B"
                timestamps = ("b", None)
            b: str
    with pytest.raises(DynaormError, match=r"must be \(created_field, updated_field\)"):
        class Bad2(Entity):
            class Meta:
                table = stamped
                pk = "B2#{b}"
                sk = "B"
                timestamps = "when"
            b: str


def created_at(obj: Entity) -> datetime | None:
    """Doc's dynaorm-declared field (type checkers see only fields the class declares)."""
    value: datetime | None = obj.__dict__["created_at"]
    return value


def updated_at(obj: Entity) -> datetime | None:
    """Doc's dynaorm-declared field."""
    value: datetime | None = obj.__dict__["updated_at"]
    return value


def _stored(s: Session, doc_id: str) -> Doc:
    got = Session(s.table).get(Doc, doc_id=doc_id, consistent=True)
    assert got is not None
    return got


class Clock:
    """A fake clock for ``Meta.timestamps``: every reading is one second after the last,
    so "later" never depends on how fast the machine is (no sleeping)."""

    def __init__(self) -> None:
        self.at = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
        self.readings: list[datetime] = []

    def __call__(self) -> datetime:
        self.at += timedelta(seconds=1)
        self.readings.append(self.at)
        return self.at


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    """The time the writes stamp. dynaorm takes no clock argument for timestamps (no
    ``Table``/``Session`` ``clock=``), so the module-level ``now`` is replaced where the
    planner and ``s.update()`` look it up."""
    fake = Clock()
    monkeypatch.setattr("dynaorm.schema.rules.stamps.now", fake)
    monkeypatch.setattr("dynaorm.write.updates.now", fake)
    return fake


def test_commit_sets_created_once_and_updated_on_every_write(db: TestBackend,
                                                             clock: Clock) -> None:
    s = db.session()
    doc = Doc(doc_id="d1", title="a")
    s.save(doc)
    s.commit()
    created = created_at(doc)
    assert created is not None and created == updated_at(doc)
    assert created in clock.readings and created.tzinfo is not None
    assert _stored(s, "d1") == doc  # the object holds what was stored
    doc.title = "b"
    s.save(doc)
    s.commit()
    moved = updated_at(doc)
    assert created_at(doc) == created and moved is not None and moved > created
    assert _stored(s, "d1") == doc
    rec = Requests(stamped)
    s.save(doc)  # nothing changed: nothing is written, no time moves
    s.commit()
    assert rec.of("UpdateItem") == [] and rec.of("TransactWriteItems") == []


def test_update_keeps_created_and_moves_updated(db: TestBackend, clock: Clock) -> None:
    s = db.session()
    s.save(Doc(doc_id="d1"))
    s.commit()
    first = _stored(s, "d1")
    rec = Requests(stamped)
    upd = s.update(Doc, doc_id="d1").set(title="x")
    s.commit()
    [request] = rec.of("UpdateItem")
    assert "if_not_exists" in request["UpdateExpression"]
    after = _stored(s, "d1")
    assert created_at(after) == created_at(first) and after.title == "x"
    now, then = updated_at(after), updated_at(first)
    assert now is not None and then is not None and now > then and now in clock.readings
    assert updated_at(upd.result) == updated_at(after)
    s.update(Doc, doc_id="d2", upsert=True).set(title="new")
    s.commit()
    new = _stored(s, "d2")
    assert created_at(new) is not None and created_at(new) == updated_at(new)


def test_save_many_and_an_updated_only_entity(db: TestBackend) -> None:
    s = db.session()
    docs = [Doc(doc_id=f"d{i}") for i in range(3)]
    s.save_many(docs)
    assert all(created_at(d) is not None and updated_at(d) == created_at(d) for d in docs)
    assert _stored(s, "d2") == docs[2]
    note = Note(note_id="n1")
    s.save(note)
    s.commit()
    assert note.touched is not None
    raw = {i["pk"]: i for i in db.scan()}
    assert "created_at" not in raw["NOTE#n1"]
    assert datetime.fromisoformat(raw["NOTE#n1"]["touched"]) == note.touched


def test_a_failed_commit_leaves_the_objects_timestamps_alone(db: TestBackend) -> None:
    """State changes only after success: a refused insert or update sets no time."""
    s = db.session()
    s.save(Doc(doc_id="d1", title="a"))
    s.commit()
    clash = Doc(doc_id="d1", title="again")  # a new object at a taken key
    s.save(clash)
    before = db.scan()
    with pytest.raises(ItemExistsError):
        s.commit()
    assert db.scan() == before
    assert created_at(clash) is None and updated_at(clash) is None

    loaded = _stored(s, "d1")
    stamp = updated_at(loaded)
    other = _stored(s, "d1")
    other.title = "theirs"
    s2 = Session(s.table)
    s2.save(other)
    s2.commit()
    loaded.title = "mine"  # from the same read: a lost update, refused
    s.save(loaded)
    before = db.scan()
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan() == before
    assert updated_at(loaded) == stamp
