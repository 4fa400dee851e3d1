"""Versioned entities (0.2): re-creating a deleted one continues its kept history; version
rows keep every table key attribute when an index reuses one."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dynaorm import GSI, Entity, ItemExistsError, Table
from dynaorm.testing import TestBackend, use_tables
from tests.support.update_models import Doc

inv = Table("dynaorm-tests-inverted", indexes=[GSI("inverted", pk="sk", sk="pk")])


class Part(Entity):
    class Meta:
        table = inv
        pk = "EQ#{equipment}"
        sk = "{part}"
        versioned = True
        indexes = {"inverted": ("{part}", "EQ#{equipment}")}

    equipment: str
    part: str
    note: str = ""


def test_recreating_a_deleted_entity_continues_its_history(db: TestBackend) -> None:
    s = db.session()
    s.save(Doc(doc_id="d1", title="a"))
    s.commit()
    for title in ("b", "c"):
        s.update(Doc, doc_id="d1").set(title=title)
        s.commit()
    d = s.get(Doc, doc_id="d1")
    assert d is not None and d.version == 3
    s.delete(d)
    s.commit()
    again = Doc(doc_id="d1", title="reborn")
    s.save(again)
    s.commit()
    assert again.version == 4
    history = s.history(Doc, doc_id="d1").all()
    assert [(h.version, h.title) for h in history] == [
        (1, "a"), (2, "b"), (3, "c"), (4, "reborn")]
    again.title = "next"
    s.save(again)
    s.commit()
    assert [h.version for h in s.history(Doc, doc_id="d1").all()] == [1, 2, 3, 4, 5]


def test_recreating_after_deleting_the_history_starts_at_one(db: TestBackend) -> None:
    s = db.session()
    s.save(Doc(doc_id="d1"))
    s.commit()
    d = s.get(Doc, doc_id="d1")
    assert d is not None
    s.delete(d, history=True)
    s.commit()
    fresh = Doc(doc_id="d1")
    s.save(fresh)
    s.commit()
    assert fresh.version == 1


def test_a_second_recreation_is_refused(db: TestBackend) -> None:
    """Two writers re-create at once: the second finds the latest copy (and its version
    row) taken, and writes nothing."""
    s = db.session()
    s.save(Doc(doc_id="d1"))
    s.commit()
    d = s.get(Doc, doc_id="d1")
    assert d is not None
    s.delete(d)
    s.commit()
    a, b = db.session(), db.session()
    a.save(Doc(doc_id="d1", title="a"))
    b.save(Doc(doc_id="d1", title="b"))
    a.commit()
    before = db.scan()
    with pytest.raises(ItemExistsError):
        b.commit()
    assert db.scan() == before


@pytest.fixture
def inverted(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(inv, endpoint_url=backend) as tb:
        yield tb


@pytest.mark.sync_only
def test_version_rows_keep_table_keys_an_inverted_index_reuses(inverted: TestBackend) -> None:
    s = inverted.session()
    p = Part(equipment="E1", part="pump")
    s.save(p)
    s.commit()
    p.note = "checked"
    s.save(p)
    s.commit()
    rows = inverted.scan()
    assert sorted(r["sk"] for r in rows) == ["v00000001_pump", "v00000002_pump", "v0_pump"]
    assert all(r["pk"] == "EQ#E1" for r in rows)
    got = s.get(Part, equipment="E1", part="pump")
    assert got is not None and (got.version, got.note) == (2, "checked")
    assert [h.note for h in s.history(Part, equipment="E1", part="pump").all()] == [
        "", "checked"]


def test_an_index_template_on_a_table_key_must_be_the_tables() -> None:
    from dynaorm import DynaormError

    with pytest.raises(DynaormError, match="is a table key"):
        class Wrong(Entity):
            class Meta:
                table = inv
                pk = "EQ#{equipment}"
                sk = "{part}"
                indexes = {"inverted": ("PART#{part}", "EQ#{equipment}")}

            equipment: str
            part: str


@pytest.mark.sync_only
def test_an_inverted_index_needs_no_templates(inverted: TestBackend) -> None:
    class Plain(Entity):
        class Meta:
            table = inv
            pk = "PL#{pid}"
            sk = "ROW#{row}"
            versioned = True

        pid: str
        row: str

    s = inverted.session()
    p = Plain(pid="1", row="a")
    s.save(p)
    s.commit()
    rows = inverted.table.transport.call("Query", {
        "TableName": inv.name, "IndexName": "inverted",
        "KeyConditionExpression": "sk = :s", "ExpressionAttributeValues": {
            ":s": {"S": "v0_ROW#a"}}})["Items"]
    assert [r["pk"]["S"] for r in rows] == ["PL#1"]


def test_an_upsert_recreating_a_deleted_entity_continues_its_history(db: TestBackend) -> None:
    s = db.session()
    s.save(Doc(doc_id="d1", title="a"))
    s.commit()
    d = s.get(Doc, doc_id="d1")
    assert d is not None
    s.delete(d)
    s.commit()
    u = s.update(Doc, doc_id="d1", upsert=True).add(views=1)
    s.commit()
    assert (u.result.version, u.result.views) == (2, 1)
    assert [h.version for h in s.history(Doc, doc_id="d1").all()] == [1, 2]
