"""Key-only fields (contract 18, "Mapping"): a field declared in ``Meta.key_only`` lives
only inside its key, on every write path (save, update of a loaded object, ``s.update``
with ``upsert=True``, versioned saves and their version rows, ``save_many``, overwrite, key
moves), and reads fill it back from the key. ``Field(exclude=True)`` is never stored by
any path either. Each test scans the table to see what is stored. Definition-time
refusals are in ``unit/test_definitions.py``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from pydantic import Field

from dynaorm import GSI, DynaormError, Entity, Table, Unique, Versioned
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.audit import audit_table
from tests.support.recording import send

keys = Table("keys-only", pk="PK", sk="SK", indexes=[GSI("GSI1", pk="GSI1PK", sk="GSI1SK")])
T0 = datetime(2024, 5, 1, 10, 0, tzinfo=UTC)
T1 = datetime(2024, 5, 1, 11, 30, tzinfo=UTC)


class Reading(Entity):
    class Meta:
        table = keys
        pk = "DEVICE#{device}"
        sk = "{timestamp}"
        key_only = ("device", "timestamp")
        indexes = {"GSI1": ("SITE#{site}", "{timestamp}#{device}")}

    device: str
    timestamp: datetime
    site: str
    value: int = 0
    note: str = Field("", exclude=True)  # never stored by any write


class Handle(Entity):  # a unique rule on a key-only field, and a seq padded in the key
    class Meta:
        table = keys
        pk = "HANDLE#{handle}"
        sk = "SEQ#{seq:06d}"
        key_only = ("handle", "seq")
        unique = (Unique("email"),)

    handle: str
    seq: int
    email: str


class Doc(Versioned):
    class Meta:
        table = keys
        pk = "TENANT#{tenant}"
        sk = "DOC#{doc_id}"
        key_only = ("tenant", "doc_id")

    tenant: str
    doc_id: str
    body: str = ""


class Point(Entity):  # no rule: s.update takes the plain path (one UpdateItem, no read)
    class Meta:
        table = keys
        pk = "POINT#{p}"
        sk = "{at}"
        key_only = ("p",)

    p: str
    at: int = Field(exclude=True)  # exclude=True on a key field: the same as key-only
    v: int = 0
    tags: list[str] = Field(default_factory=list, exclude=True)


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(keys, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        if str(request.node.callspec.params.get("backend", "")).endswith("-async"):
            tb.session_kind = "async"
        yield tb


def stored(db: TestBackend) -> list[dict[str, Any]]:
    """Every stored item, plain, without the table's own bookkeeping names (0.5: nor
    the revision a row's write stamps)."""
    return [{k: v for k, v in i.items() if k != "_rev"} for i in db.scan()]


def attrs(db: TestBackend) -> list[set[str]]:
    return [set(item) for item in stored(db)]


READING_ATTRS = {"PK", "SK", "_type", "GSI1PK", "GSI1SK", "site", "value"}


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_save_stores_the_field_only_in_its_key_and_reads_fill_it_back(db: TestBackend) -> None:
    s = db.session()
    s.save(Reading(device="d1", timestamp=T0, site="s1", value=3, note="scratch"))
    s.commit()
    assert attrs(db) == [READING_ATTRS]
    item = stored(db)[0]
    assert item["PK"] == "DEVICE#d1" and item["SK"] == "2024-05-01T10:00:00.000000Z"
    want = Reading(device="d1", timestamp=T0, site="s1", value=3)
    assert s.get(Reading, device="d1", timestamp=T0) == want
    assert s.query(Reading, device="d1").all() == [want]
    assert s.query(Reading, index="GSI1", site="s1").all() == [want]
    assert s.scan(Reading).all() == [want]
    assert s.query(Reading, device="d1").values("timestamp", "value") == [
        {"timestamp": T0, "value": 3}]
    assert s.query(Reading, device="d1").keys() == [{"device": "d1", "timestamp": T0}]


def test_an_update_of_a_loaded_object_and_a_key_move(db: TestBackend) -> None:
    s = db.session()
    s.save(Reading(device="d1", timestamp=T0, site="s1", value=3))
    s.commit()
    r = s.get(Reading, device="d1", timestamp=T0)
    assert r is not None
    r.value = 4
    s.save(r)
    s.commit()
    assert attrs(db) == [READING_ATTRS]
    r.timestamp = T1  # the key moves: delete + put
    s.save(r)
    s.commit()
    assert attrs(db) == [READING_ATTRS]
    assert stored(db)[0]["SK"] == "2024-05-01T11:30:00.000000Z"
    assert s.get(Reading, device="d1", timestamp=T1) == Reading(
        device="d1", timestamp=T1, site="s1", value=4)
    s.save(Reading(device="d1", timestamp=T1, site="s2", value=9), overwrite=True)
    s.commit()
    assert attrs(db) == [READING_ATTRS]
    assert stored(db)[0]["site"] == "s2"
    assert audit_table(keys)[1] == []


def test_update_builder_and_upsert(db: TestBackend) -> None:
    s = db.session()
    s.update(Reading, upsert=True, device="d2", timestamp=T0).set(site="s1", value=1)
    s.commit()
    assert attrs(db) == [READING_ATTRS]  # the index keys are rendered, the fields are not
    s.update(Reading, device="d2", timestamp=T0).add(value=5)
    s.commit()
    assert attrs(db) == [READING_ATTRS]
    got = s.get(Reading, device="d2", timestamp=T0)
    assert got == Reading(device="d2", timestamp=T0, site="s1", value=6)
    s.update(Reading, device="d2", timestamp=T0).set(site="s3")  # re-renders the index key
    s.commit()
    assert stored(db)[0]["GSI1PK"] == "SITE#s3"
    assert attrs(db) == [READING_ATTRS]
    with pytest.raises(DynaormError, match="never stored"):
        db.session().update(Reading, device="d2", timestamp=T0).set(note="x")


def test_plain_update_and_upsert_store_no_key_only_or_excluded_field(db: TestBackend) -> None:
    s = db.session()
    s.update(Point, upsert=True, p="p1", at=5).set(v=1)  # 0.2 stored "at" here
    s.commit()
    assert attrs(db) == [{"PK", "SK", "_type", "v"}]
    s.update(Point, upsert=True, p="p1", at=5).add(v=2)
    s.commit()
    assert attrs(db) == [{"PK", "SK", "_type", "v"}]
    assert s.get(Point, p="p1", at=5) == Point(p="p1", at=5, v=3)
    with pytest.raises(DynaormError, match="never stored"):
        db.session().update(Point, p="p1", at=5).append(tags=["x"])
    s.save(Point(p="p2", at=6, v=1, tags=["x"]))
    s.commit()
    assert attrs(db) == [{"PK", "SK", "_type", "v"}] * 2
    assert s.get(Point, p="p2", at=6) == Point(p="p2", at=6, v=1)


def test_save_many_stores_no_key_only_field(db: TestBackend) -> None:
    s = db.session()
    s.save_many([Reading(device="d3", timestamp=T0, site="s1", value=n) for n in range(1)] +
                [Reading(device="d4", timestamp=T1, site="s1", value=2)])
    assert attrs(db) == [READING_ATTRS, READING_ATTRS]
    loaded = s.query(Reading, device="d4").all()
    loaded[0].value = 7
    s.save_many(loaded)
    assert attrs(db) == [READING_ATTRS, READING_ATTRS]
    assert s.get(Reading, device="d4", timestamp=T1) == Reading(
        device="d4", timestamp=T1, site="s1", value=7)


def test_a_unique_rule_and_a_padded_number_as_key_only(db: TestBackend) -> None:
    s = db.session()
    s.save(Handle(handle="ann", seq=7, email="a@x"))
    s.commit()
    rows = [i for i in stored(db) if i["_type"] == "Handle"]
    assert [set(i) for i in rows] == [{"PK", "SK", "_type", "email"}]
    assert rows[0]["SK"] == "SEQ#000007"
    h = s.get(Handle, handle="ann", seq=7)
    assert h == Handle(handle="ann", seq=7, email="a@x")
    assert h is not None
    h.email = "b@x"  # a guard swap conditioned on the stored (key-held) values
    s.save(h)
    s.commit()
    assert s.get(Handle, handle="ann", seq=7) == Handle(handle="ann", seq=7, email="b@x")
    h.handle = "bob"  # a key move of a unique entity
    s.save(h)
    s.commit()
    assert s.get(Handle, handle="bob", seq=7) == Handle(handle="bob", seq=7, email="b@x")
    assert [set(i) for i in stored(db) if i["_type"] == "Handle"] == [
        {"PK", "SK", "_type", "email"}]
    assert audit_table(keys)[1] == []  # dynaorm check: nothing to report
    s.delete(h)
    s.commit()
    assert stored(db) == []


def test_versioned_rows_hold_no_key_only_field(db: TestBackend) -> None:
    s = db.session()
    d = Doc(tenant="t1", doc_id="d1", body="one")
    s.save(d)
    s.commit()
    d.body = "two"
    s.save(d)
    s.commit()
    s.update(Doc, tenant="t1", doc_id="d1").set(body="three")
    s.commit()
    items = stored(db)
    assert sorted(i["SK"] for i in items) == [
        "v00000001_DOC#d1", "v00000002_DOC#d1", "v00000003_DOC#d1", "v0_DOC#d1"]
    assert all(set(i) == {"PK", "SK", "_type", "body", "version"} for i in items)
    got = s.get(Doc, tenant="t1", doc_id="d1")
    assert got is not None and (got.doc_id, got.tenant, got.body, got.version) == (
        "d1", "t1", "three", 3)
    old = s.get(Doc, tenant="t1", doc_id="d1", version=1)
    assert old is not None and (old.doc_id, old.body) == ("d1", "one")
    assert [v.body for v in s.history(Doc, tenant="t1", doc_id="d1")] == [
        "one", "two", "three"]
    s.update(Doc, upsert=True, tenant="t1", doc_id="d2").set(body="new")
    s.commit()
    assert all("doc_id" not in i and "tenant" not in i for i in stored(db))
    assert audit_table(keys)[1] == []


def test_an_item_written_before_the_field_became_key_only(db: TestBackend) -> None:
    s = db.session()
    send(keys, "PutItem", {"TableName": keys.name, "Item": {
        "PK": {"S": "DEVICE#d9"}, "SK": {"S": "2024-05-01T10:00:00.000000Z"},
        "_type": {"S": "Reading"}, "device": {"S": "d9"},
        "timestamp": {"S": "2024-05-01T10:00:00.000000Z"}, "site": {"S": "s1"},
        "GSI1PK": {"S": "SITE#s1"}, "GSI1SK": {"S": "2024-05-01T10:00:00.000000Z#d9"}}})
    r = s.get(Reading, device="d9", timestamp=T0)
    assert r is not None
    r.value = 1
    s.save(r)  # the next write of the item drops the attributes the key holds
    s.commit()
    assert attrs(db) == [READING_ATTRS]
