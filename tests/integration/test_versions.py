"""Versioned entities (contract section 5), on both backends: the equipment audit seed;
the ``Versioned`` base class; re-creating a deleted entity continues its kept history (0.2);
version rows keep every table key attribute when an index reuses one; only the latest
copy takes part in secondary indexes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import (
    GSI,
    ConcurrentModificationError,
    DynaormError,
    Entity,
    ItemExistsError,
    Session,
    Table,
    Versioned,
)
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules.versioned import parse_version_sk, version_sk
from dynaorm.testing import TestBackend, use_tables
from tests.support.models import Audit, app
from tests.support.recording import Requests, send
from tests.support.update_models import Doc

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class VerTagged(Entity):
    """Versioned with a unique attribute and its own version field declared."""

    class Meta:
        table = app
        pk = "VTAG#{tag_id}"
        sk = "VTAG"
        versioned = True
        unique = ("serial",)

    tag_id: str
    serial: str
    version: int = 0


def audit_rows(db: TestBackend, equipment_id: str = "E1") -> list[dict[str, Any]]:
    return [i for i in db.scan() if i["pk"] == f"EQUIPMENT#{equipment_id}"]


def make_versions(db: TestBackend, n: int, part: str = "P1") -> Audit:
    s = db.session()
    a = Audit(equipment_id="E1", part=part, auditor="amy", notes="n1")
    s.save(a)
    s.commit()
    for i in range(2, n + 1):
        a.notes = f"n{i}"
        s.save(a)
        s.commit()
    return a


def test_version_field_declared_automatically() -> None:
    assert "version" in Audit.model_fields
    assert Audit.model_fields["version"].annotation is int
    assert Audit(equipment_id="E", part="P").version == 0
    assert VerTagged(tag_id="t", serial="s").version == 0


def test_version_field_must_be_int() -> None:
    with pytest.raises(DynaormError, match="version"):
        class VerBroken(Entity):
            class Meta:
                table = app
                pk = "VB#{x}"
                sk = "VB"
                versioned = True

            x: str
            version: str = "0"


def test_version_keys_sort_in_version_order() -> None:
    keys = [version_sk("P", n) for n in (0, 1, 2, 9, 10, 11, 99, 100, 12345678)]
    assert keys[0] == "v0_P"
    assert keys[1] == "v00000001_P"
    assert keys[1:] == sorted(keys[1:])
    assert all(parse_version_sk(k) == (n, "P") for k, n in
               zip(keys, (0, 1, 2, 9, 10, 11, 99, 100, 12345678), strict=True))
    assert parse_version_sk("PROFILE") is None


def test_first_save_writes_v1_and_latest(db: TestBackend) -> None:
    s = db.session()
    a = Audit(equipment_id="E1", part="P1", auditor="amy")
    s.save(a)
    s.commit()
    assert a.version == 1
    rows = audit_rows(db)
    assert [r["sk"] for r in rows] == ["v00000001_P1", "v0_P1"]
    assert all(r["version"] == 1 and r["auditor"] == "amy" for r in rows)


def test_only_the_latest_copy_carries_the_row_revision(db: TestBackend) -> None:
    """(0.6, the rule matrix) Version 2 on carried the latest copy's revision over: a
    version row is history, only the latest copy is stamped (the revision rule's
    ``rebind``)."""
    make_versions(db, 3)
    rows = {r["sk"]: r for r in audit_rows(db)}
    assert [sk for sk, r in rows.items() if "_rev" in r] == ["v0_P1"]


def test_more_than_ten_versions_in_order(db: TestBackend) -> None:
    a = make_versions(db, 12)
    assert a.version == 12
    s = db.session()
    hist = s.history(Audit, equipment_id="E1", part="P1").all()
    assert [h.version for h in hist] == list(range(1, 13))
    assert [h.notes for h in hist] == [f"n{i}" for i in range(1, 13)]
    rev = s.history(Audit, equipment_id="E1", part="P1").reverse().all()
    assert [h.version for h in rev] == list(range(12, 0, -1))
    latest = s.get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert latest is not None and latest.version == 12 and latest.notes == "n12"
    assert latest == a
    assert len(audit_rows(db)) == 13


def test_get_a_stored_version(db: TestBackend) -> None:
    make_versions(db, 11)
    s = db.session()
    for n in (1, 9, 10, 11):
        v = s.get(Audit, equipment_id="E1", part="P1", version=n, consistent=True)
        assert v is not None and v.version == n and v.notes == f"n{n}"
    assert s.get(Audit, equipment_id="E1", part="P1", version=12) is None
    assert s.get(Audit, equipment_id="E1", part="P2") is None


def test_history_limit_page_and_chaining(db: TestBackend) -> None:
    make_versions(db, 11)
    s = db.session()
    base = s.history(Audit, equipment_id="E1", part="P1")
    assert [h.version for h in base.limit(3)] == [1, 2, 3]
    assert [h.version for h in base.reverse().limit(3)] == [11, 10, 9]
    assert base.count() == 11
    first = base.reverse().page_size(4).page()
    assert [h.version for h in first.items] == [11, 10, 9, 8]
    assert first.cursor is not None
    second = base.reverse().page_size(4).page(first.cursor)
    assert [h.version for h in second.items] == [7, 6, 5, 4]
    third = base.reverse().page_size(4).page(second.cursor)
    assert [h.version for h in third.items] == [3, 2, 1]
    assert third.cursor is None
    # the base query was not changed by the branches built from it
    assert [h.version for h in base.limit(2)] == [1, 2]


def test_history_of_one_part_only(db: TestBackend) -> None:
    make_versions(db, 3, part="P1")
    make_versions(db, 2, part="P10")  # base sk "P10" starts with "P1"
    s = db.session()
    assert [(h.part, h.version) for h in s.history(Audit, equipment_id="E1", part="P1")] == [
        ("P1", 1), ("P1", 2), ("P1", 3)]
    assert [h.version for h in s.history(Audit, equipment_id="E1", part="P10")] == [1, 2]


def test_query_returns_latest_copies(db: TestBackend) -> None:
    make_versions(db, 3, part="P1")
    make_versions(db, 2, part="P2")
    s = db.session()
    s.save(Audit(equipment_id="E2", part="P1"))
    s.commit()
    latest = s.query(Audit, equipment_id="E1").all()
    assert [(a.part, a.version, a.notes) for a in latest] == [("P1", 3, "n3"), ("P2", 2, "n2")]


def test_stale_writer_is_refused(db: TestBackend) -> None:
    make_versions(db, 2)
    mine = db.session().get(Audit, equipment_id="E1", part="P1", consistent=True)
    theirs = db.session().get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert mine is not None and theirs is not None
    theirs.notes = "theirs"
    s = db.session()
    s.save(theirs)
    s.commit()
    assert theirs.version == 3
    before = db.scan_raw()
    mine.notes = "mine"
    s2 = db.session()
    s2.save(mine)
    with pytest.raises(ConcurrentModificationError) as err:
        s2.commit()
    assert err.value.entity is Audit
    assert "Audit" in str(err.value)
    assert db.scan_raw() == before
    assert mine.version == 2  # unchanged by the failure
    # reload and retry
    fresh = s2.get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert fresh is not None
    fresh.notes = "mine"
    s2.save(fresh)
    s2.commit()
    assert [h.version for h in s2.history(Audit, equipment_id="E1", part="P1")] == [1, 2, 3, 4]


def test_saving_an_old_version_is_refused(db: TestBackend) -> None:
    make_versions(db, 3)
    s = db.session()
    old = s.get(Audit, equipment_id="E1", part="P1", version=1, consistent=True)
    assert old is not None
    before = db.scan_raw()
    old.notes = "rewrite history"
    s.save(old)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan_raw() == before


def test_insert_of_existing_versioned_entity(db: TestBackend) -> None:
    make_versions(db, 2)
    before = db.scan_raw()
    s = db.session()
    s.save(Audit(equipment_id="E1", part="P1"))
    with pytest.raises(ItemExistsError):
        s.commit()
    assert db.scan_raw() == before


def test_overwrite_of_versioned_entity_adds_a_version(db: TestBackend) -> None:
    make_versions(db, 2)
    s = db.session()
    replacement = Audit(equipment_id="E1", part="P1", auditor="zed")
    s.save(replacement, overwrite=True)
    s.commit()
    assert replacement.version == 3
    hist = s.history(Audit, equipment_id="E1", part="P1").all()
    assert [(h.version, h.auditor) for h in hist] == [(1, "amy"), (2, "amy"), (3, "zed")]


def test_unchanged_save_writes_nothing(db: TestBackend) -> None:
    a = make_versions(db, 2)
    before = db.scan_raw()
    s = db.session()
    s.save(a)
    s.commit()
    assert a.version == 2
    assert db.scan_raw() == before


def test_delete_keeps_history(db: TestBackend) -> None:
    make_versions(db, 3)
    s = db.session()
    a = s.get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert a is not None
    s.delete(a)
    s.commit()
    assert [r["sk"] for r in audit_rows(db)] == ["v00000001_P1", "v00000002_P1", "v00000003_P1"]
    assert s.get(Audit, equipment_id="E1", part="P1", consistent=True) is None
    assert [h.version for h in s.history(Audit, equipment_id="E1", part="P1")] == [1, 2, 3]


def test_delete_with_history(db: TestBackend) -> None:
    make_versions(db, 3, part="P1")
    make_versions(db, 1, part="P2")
    s = db.session()
    a = s.get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert a is not None
    s.delete(a, history=True)
    s.commit()
    assert [r["sk"] for r in audit_rows(db)] == ["v00000001_P2", "v0_P2"]


def test_a_copy_loaded_before_a_delete_and_reinsert_is_refused(db: TestBackend) -> None:
    """Deleted with its history and re-inserted, the entity is at version 1 again: the
    version alone cannot tell the re-insert from what was loaded. The latest copy is also
    conditioned on the revision it was loaded with (0.5: every write stamps a fresh one),
    so a stale copy no longer replaces the re-insert (a lost update before)."""
    with db.session() as s:
        s.save(Doc(doc_id="d1", title="first"))
    stale = db.session().get(Doc, doc_id="d1", consistent=True)
    current = db.session().get(Doc, doc_id="d1", consistent=True)
    assert stale is not None and current is not None
    with db.session() as s:
        s.delete(current, history=True)
    with db.session() as s:
        s.save(Doc(doc_id="d1", title="re-inserted"))
    stale.title = "stale"
    s = db.session()
    s.save(stale)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    stored = db.session().get(Doc, doc_id="d1", consistent=True)
    assert stored is not None and (stored.title, stored.version) == ("re-inserted", 1)


def test_stale_delete_is_refused(db: TestBackend) -> None:
    make_versions(db, 2)
    stale = db.session().get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert stale is not None
    make_versions_more = db.session()
    fresh = make_versions_more.get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert fresh is not None
    fresh.notes = "newer"
    make_versions_more.save(fresh)
    make_versions_more.commit()
    before = db.scan_raw()
    s = db.session()
    s.delete(stale)
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan_raw() == before


def test_versioned_with_unique(db: TestBackend) -> None:
    s = db.session()
    t = VerTagged(tag_id="t1", serial="S1")
    s.save(t)
    s.commit()
    t.serial = "S2"
    s.save(t)
    s.commit()
    items = db.scan()
    guards = [i["pk"] for i in items if i["_type"] == "dynaorm:unique"]
    assert guards == ["serial#S2"]
    assert [h.serial for h in s.history(VerTagged, tag_id="t1")] == ["S1", "S2"]
    s.delete(t)
    s.commit()
    left = db.scan()
    assert [i["sk"] for i in left] == ["v00000001_VTAG", "v00000002_VTAG"]
    # the serial is free again
    s.save(VerTagged(tag_id="t2", serial="S2"))
    s.commit()


def test_key_of_versioned_entity_cannot_change(db: TestBackend) -> None:
    a = make_versions(db, 1)
    before = db.scan_raw()
    a.part = "P9"
    s = db.session()
    s.save(a)
    with pytest.raises(DynaormError, match="cannot change"):
        s.commit()
    assert db.scan_raw() == before


def test_get_version_of_unversioned_entity_is_refused(db: TestBackend) -> None:
    from tests.support.models import Note

    with pytest.raises(DynaormError, match="not versioned"):
        db.session().get(Note, note_id="n1", version=1)
    with pytest.raises(DynaormError, match="not versioned"):
        db.session().history(Note, note_id="n1")


# -- re-creating a deleted entity; version rows and an inverted index (0.2) ----------------

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


def test_a_new_versioned_entity_reads_a_kept_history_only_when_it_meets_one(
        db: TestBackend) -> None:
    """A new versioned entity is planned as version 1: one request, no history read first;
    only when that version row is taken (a deleted predecessor kept its history) is the
    history read and the insert sent again as the next version (issue 39)."""
    s = db.session()
    s.save(Doc(doc_id="d1", title="a"))
    assert [op for op, _ in s.commit().requests] == ["TransactWriteItems"]
    d = s.get(Doc, doc_id="d1")
    assert d is not None
    s.delete(d)
    s.commit()
    again = Doc(doc_id="d1", title="b")
    s.save(again)
    assert [op for op, _ in s.commit().requests] == [
        "TransactWriteItems", "Query", "TransactWriteItems"]
    assert again.version == 2
    assert [(h.version, h.title) for h in s.history(Doc, doc_id="d1").all()] == [
        (1, "a"), (2, "b")]


def test_one_commit_recreating_several_entities_continues_each_kept_history(
        db: TestBackend) -> None:
    """Several new objects whose deleted predecessors kept their histories, beside one
    without: one commit continues each history (a refused version row has every such
    insert read its own, once)."""
    s = db.session()
    for doc_id in ("d1", "d2", "d3"):
        s.save(Doc(doc_id=doc_id, title="a"))
    s.commit()
    for doc_id in ("d1", "d2", "d3"):
        s.update(Doc, doc_id=doc_id).set(title="b")
        s.commit()
        s.delete(Doc, doc_id=doc_id)
        s.commit()
    again = [Doc(doc_id=doc_id, title="c") for doc_id in ("d1", "d2", "d3", "d4")]
    for doc in again:
        s.save(doc)
    s.commit()
    assert [doc.version for doc in again] == [3, 3, 3, 1]
    assert [h.version for h in s.history(Doc, doc_id="d3").all()] == [1, 2, 3]


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


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
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
    rows = send(inverted.table, "Query", {
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


# -- the Versioned base class --------------------------------------------------------------

class Manual(Versioned):
    class Meta:
        table = app
        pk = "MANUAL#{manual_id}"
        sk = "BODY"

    manual_id: str
    text: str = ""


def test_versioned_base_declares_the_field_and_the_rule() -> None:
    assert spec_of(Manual).versioned
    assert Manual.model_fields["version"].annotation is int
    assert Manual(manual_id="m").version == 0
    with pytest.raises(DynaormError, match="abstract"):
        spec_of(Versioned)


def test_versioned_base_writes_versions(db: TestBackend) -> None:
    s = Session(app)
    manual = Manual(manual_id="m1", text="one")
    s.save(manual)
    s.commit()
    manual.text = "two"
    s.save(manual)
    s.commit()
    assert manual.version == 2
    assert [m.text for m in s.history(Manual, manual_id="m1").all()] == ["one", "two"]
    assert sorted(str(i["sk"]) for i in db.scan()) == [
        "v00000001_BODY", "v00000002_BODY", "v0_BODY"]


# -- secondary indexes see only the latest copy --------------------------------------------

class VDoc(Entity):
    class Meta:
        table = app
        pk = "VDOC#{doc_id}"
        sk = "DOC"
        versioned = True
        indexes = {
            "gsi1": ("OWNER#{owner}", "VDOC#{doc_id}"),
            "lsi1": ("VDOC#{doc_id}", "T#{title}"),
        }

    doc_id: str
    owner: str
    title: str


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_index_queries_see_only_the_latest_copy(db: TestBackend) -> None:
    s = db.session()
    doc = VDoc(doc_id="d1", owner="ann", title="draft")
    for title in ("draft", "review", "final"):
        doc.title = title
        s.save(doc)
        s.commit()
    assert doc.version == 3
    by_owner = s.query(VDoc, index="gsi1", owner="ann").all()
    assert [(d.title, d.version) for d in by_owner] == [("final", 3)]
    by_title = s.query(VDoc, index="lsi1", doc_id="d1").all()
    assert [(d.title, d.version) for d in by_title] == [("final", 3)]
    rows = [i for i in db.scan_raw() if i["pk"]["S"] == "VDOC#d1"]
    assert len(rows) == 4  # v0_ plus three versions
    indexed = [i["sk"]["S"] for i in rows if "gsi1pk" in i or "lsi1sk" in i]
    assert indexed == ["v0_DOC"]
    assert [d.title for d in s.history(VDoc, doc_id="d1")] == ["draft", "review", "final"]


# -- a caller's expected version (If-Match) -------------------------------------------------
def test_an_expected_version_other_than_the_loaded_one_is_refused(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Audit(equipment_id="E9", part="P", notes="v1"))
    etag = db.session().get(Audit, equipment_id="E9", part="P")
    assert etag is not None and etag.version == 1  # what a client saw (its ETag)
    with db.session() as s:  # another writer: version 2
        other = s.get(Audit, equipment_id="E9", part="P")
        assert other is not None
        other.notes = "v2"
        s.save(other)
    s = db.session()
    fresh = s.get(Audit, equipment_id="E9", part="P")  # the handler's read: version 2
    assert fresh is not None and fresh.version == 2
    fresh.version = etag.version  # If-Match: "1"
    fresh.notes = "from a stale client"
    s.save(fresh)
    sent = Requests(db.table)
    with pytest.raises(ConcurrentModificationError, match="expected version 1") as caught:
        s.commit()
    assert sent.calls == []
    assert caught.value.entity is Audit
    stored = db.session().get(Audit, equipment_id="E9", part="P")
    assert stored is not None and (stored.version, stored.notes) == (2, "v2")
    for wrong in (1, 3):  # older or newer than loaded: both refused, deletes too
        s = db.session()
        obj = s.get(Audit, equipment_id="E9", part="P")
        assert obj is not None
        obj.version = wrong
        s.delete(obj)
        with pytest.raises(ConcurrentModificationError):
            s.commit()
    s = db.session()
    obj = s.get(Audit, equipment_id="E9", part="P")
    assert obj is not None
    obj.version = 2  # If-Match matching: saved as version 3
    obj.notes = "v3"
    s.save(obj)
    s.commit()
    assert obj.version == 3


def test_a_delete_by_key_expects_no_version(db: TestBackend) -> None:
    """A delete by key reads the item at commit: its version is not an If-Match."""
    with db.session() as s:
        s.save(Audit(equipment_id="E8", part="P", notes="v1"))
    with db.session() as s:
        a = s.get(Audit, equipment_id="E8", part="P")
        assert a is not None
        a.notes = "v2"
        s.save(a)
    s = db.session()
    s.delete(Audit, equipment_id="E8", part="P")
    s.commit()
    assert db.session().get(Audit, equipment_id="E8", part="P") is None


def test_a_refused_definition_leaves_nothing_on_its_table() -> None:
    """A class whose definition is refused is not recorded by its table (a later
    ``migrate`` or ``check`` over the table's classes met it as an abstract class)."""
    with pytest.raises(DynaormError, match="version"):
        class VerRefused(Entity):
            class Meta:
                table = app
                pk = "VR#{x}"
                sk = "VR"
                versioned = True

            x: str
            version: str = "0"
    assert "VerRefused" not in app.entities
