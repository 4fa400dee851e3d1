"""Number (``N``) and binary (``B``) key attributes (contract 14: typed keys)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from dynaorm import GSI, DynaormError, Entity, F, KeyTemplateError, Session, Shards, Table
from dynaorm.read.keycond import SortCondition, plan_keys
from dynaorm.schema.spec import EntitySpec
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from dynaorm.values.keys import BinaryKey, NumberKey, key_av
from tests.support.recording import Requests

catalog = Table("typed-catalog", pk="Id", sk=None, key_types={"Id": "N"})
readings = Table("typed-readings", pk="device", sk="ts", key_types={"ts": "N", "score": "N"},
                 indexes=[GSI("by_site", pk="site", sk="score")])
blobs = Table("typed-blobs", pk="digest", sk=None, key_types={"digest": "B"})


class Product(Entity):
    class Meta:
        table = catalog
        pk = "{Id}"  # the field is the key attribute itself: stored once, as N

    Id: int
    Title: str
    Price: Decimal | None = None
    ProductCategory: str = "Book"


class Reading(Entity):
    class Meta:
        table = readings
        pk = "DEV#{device_id}"
        sk = "{ts}"
        indexes = {"by_site": ("SITE#{site_id}", "{score}")}

    device_id: str
    ts: int
    site_id: str | None = None
    score: Decimal | None = None
    value: float = 0.0


class Blob(Entity):
    class Meta:
        table = blobs
        pk = "{digest}"

    digest: bytes
    size: int


def _spec(cls: type[Any]) -> EntitySpec:
    spec: EntitySpec = cls.__dynaorm_spec__
    return spec


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(catalog, readings, blobs, endpoint_url=backend,
                    name_suffix=worker_suffix()) as tb:
        yield tb


def raw_scan(table: Table) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = table.client.scan(TableName=table.name,
                                                   ConsistentRead=True)["Items"]
    return out


# -- pure: definitions and requests --------------------------------------------------------
def test_create_table_declares_the_key_types() -> None:
    assert catalog.definition()["AttributeDefinitions"] == [
        {"AttributeName": "Id", "AttributeType": "N"}]
    defs = readings.definition()["AttributeDefinitions"]
    assert defs == [{"AttributeName": "device", "AttributeType": "S"},
                    {"AttributeName": "score", "AttributeType": "N"},
                    {"AttributeName": "site", "AttributeType": "S"},
                    {"AttributeName": "ts", "AttributeType": "N"}]
    assert blobs.definition()["AttributeDefinitions"] == [
        {"AttributeName": "digest", "AttributeType": "B"}]


def test_key_conditions_carry_number_values() -> None:
    spec = _spec(Reading)
    plan = plan_keys(spec, None, {"device_id": "d1"}, SortCondition("between", (
        {"ts": 9}, {"ts": 10})))
    assert plan.sk_op == "BETWEEN" and not plan.empty  # 9 < 10 as numbers, not as text
    assert [key_av(v) for v in plan.sk_values] == [{"N": "9"}, {"N": "10"}]
    gt = plan_keys(spec, None, {"device_id": "d1"}, SortCondition("gt", ({"ts": 5},)))
    assert (gt.sk_op, [key_av(v) for v in gt.sk_values]) == (">", [{"N": "5"}])
    empty = plan_keys(spec, None, {"device_id": "d1"}, SortCondition("between", (
        {"ts": 10}, {"ts": 9})))
    assert empty.empty
    assert key_av(BinaryKey(b"\x00\x01")) == {"B": b"\x00\x01"}
    assert key_av(NumberKey("1.5")) == {"N": "1.5"}


def test_a_typed_key_template_must_be_one_field_of_a_matching_type() -> None:
    with pytest.raises(KeyTemplateError, match="exactly one field"):
        class Bad1(Entity):
            class Meta:
                table = catalog
                pk = "P#{Id}"
            Id: int

    with pytest.raises(KeyTemplateError, match="must be an int or Decimal"):
        class Bad2(Entity):
            class Meta:
                table = catalog
                pk = "{Id}"
            Id: str

    with pytest.raises(KeyTemplateError, match="must be bytes"):
        class Bad3(Entity):
            class Meta:
                table = blobs
                pk = "{digest}"
            digest: str

    with pytest.raises(DynaormError, match="not a key attribute"):
        Table("typed-x", key_types={"nope": "N"})
    with pytest.raises(DynaormError, match="must be 'S', 'N' or 'B'"):
        Table("typed-x", key_types={"pk": "BOOL"})


def test_rules_need_string_table_keys() -> None:
    with pytest.raises(DynaormError, match="unique rules need\\(s\\) string table keys"):
        class Unique1(Entity):
            class Meta:
                table = readings
                pk = "DEV#{device_id}"
                sk = "{ts}"
                unique = ("title",)
            device_id: str
            ts: int
            title: str

    with pytest.raises(DynaormError, match="versioning need\\(s\\) string table keys"):
        class Versioned1(Entity):
            class Meta:
                table = readings
                pk = "DEV#{device_id}"
                sk = "{ts}"
                versioned = True
            device_id: str
            ts: int
            version: int = 0

    with pytest.raises(DynaormError, match="sharding need\\(s\\) string table keys"):
        class Sharded1(Entity):
            class Meta:
                table = readings
                pk = "DEV#{device_id}#{shard}"
                sk = "{ts}"
                shards = {"primary": Shards(4)}
            device_id: str
            ts: int


# -- on the backends -----------------------------------------------------------------------
def test_number_keyed_catalog(db: TestBackend) -> None:
    s = db.session(catalog)
    s.save_many([Product(Id=i, Title=f"Book {i}", Price=Decimal(i) + Decimal("0.5"))
                 for i in range(100, 130)])
    raw = {int(i["Id"]["N"]): i for i in raw_scan(catalog)}
    assert set(raw) == set(range(100, 130))
    assert sorted(raw[101]) == ["Id", "Price", "ProductCategory", "Title", "_rev", "_type"]
    got = s.get(Product, Id=101)
    assert got is not None and got.Title == "Book 101" and got.Price == Decimal("101.5")
    many = s.get_many(Product, [{"Id": 105}, {"Id": 999}, {"Id": 100}])
    assert [p.Id if p else None for p in many] == [105, None, 100]
    assert [p.Id if p else None for p in s.get_many(Product, [{"Id": 105}], snapshot=True)
            ] == [105]
    s.update(Product, Id=101).set(Title="Renamed").add(Price=Decimal(1))
    s.commit()
    again = Session(catalog).get(Product, Id=101, consistent=True)
    assert again is not None and again.Title == "Renamed" and again.Price == Decimal("102.5")
    again.ProductCategory = "Bicycle"
    s.save(again)
    s.commit()
    s.delete(Product, Id=102)
    s.commit()
    assert s.get(Product, Id=102) is None
    assert len(raw_scan(catalog)) == 29
    cheap = s.scan(Product).filter(F("Price") < 110).all()
    assert sorted(p.Id for p in cheap) == [i for i in range(100, 110) if i != 102]
    assert s.scan(Product).count() == 29
    page = s.scan(Product).page_size(7).page()
    assert page.cursor is not None
    seen = [p.Id for p in page.items]
    while page.cursor is not None:
        page = s.scan(Product).page_size(7).page(page.cursor)
        seen += [p.Id for p in page.items]
    assert sorted(seen) == sorted(set(range(100, 130)) - {102})


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_number_sort_key_conditions_and_cursors(db: TestBackend) -> None:
    s = db.session(readings)
    s.save_many([Reading(device_id="d1", ts=t, site_id="s1", score=Decimal(t % 7), value=t)
                 for t in (5, 9, 10, 11, 100, 1000)])
    rec = Requests(readings)
    q = s.query(Reading, device_id="d1")
    assert [r.ts for r in q] == [5, 9, 10, 11, 100, 1000]  # number order, not text order
    [request] = rec.of("Query")
    assert request["ExpressionAttributeValues"] == {":v0": {"S": "DEV#d1"}}
    assert [r.ts for r in q.between({"ts": 9}, {"ts": 100})] == [9, 10, 11, 100]
    assert [r.ts for r in q.gt(ts=10)] == [11, 100, 1000]
    assert [r.ts for r in q.lte(ts=10)] == [5, 9, 10]
    assert [r.ts for r in q.lt(ts=10).reverse()] == [9, 5]
    assert [r.ts for r in q.gte(ts=1000)] == [1000]
    assert q.eq(ts=11).one().value == 11
    values = rec.of("Query")[-1]["ExpressionAttributeValues"]
    assert {"N": "11"} in values.values()
    page = q.page_size(4).page()
    assert [r.ts for r in page.items] == [5, 9, 10, 11]
    assert page.cursor is not None
    rest = q.page_size(4).page(page.cursor)
    assert [r.ts for r in rest.items] == [100, 1000] and rest.cursor is None
    by_site = s.query(Reading, index="by_site", site_id="s1").gte(score=Decimal(3)).all()
    assert sorted(r.ts for r in by_site) == [5, 10, 11, 1000]  # scores 5, 3, 4, 6
    assert s.query(Reading, device_id="d1").keys()[:2] == [{"device_id": "d1", "ts": 5},
                                                          {"device_id": "d1", "ts": 9}]


def test_binary_keys(db: TestBackend) -> None:
    s = db.session(blobs)
    for n in range(3):
        s.save(Blob(digest=bytes([n, 0, 255]), size=n))
    s.commit()
    got = s.get(Blob, digest=bytes([1, 0, 255]))
    assert got is not None and got.size == 1
    assert [b.size if b else None for b in s.get_many(
        Blob, [{"digest": bytes([2, 0, 255])}, {"digest": b"zz"}])] == [2, None]
    s.update(Blob, digest=bytes([0, 0, 255])).set(size=10)
    s.commit()
    assert {b.size for b in s.scan(Blob)} == {10, 1, 2}
    page = s.scan(Blob).page_size(1).page()
    assert page.cursor is not None
    second = s.scan(Blob).page_size(1).page(page.cursor)
    assert second.items and second.items[0].digest != page.items[0].digest
    s.delete(Blob, digest=bytes([2, 0, 255]))
    s.commit()
    assert len(raw_scan(blobs)) == 2


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_check_finds_and_repairs_stale_typed_index_keys(db: TestBackend) -> None:
    from dynaorm.jobs.audit import audit_items, repair

    s = db.session(readings)
    s.save_many([Reading(device_id="d1", ts=1, site_id="s1", score=Decimal(5))])
    readings.client.put_item(TableName=readings.name, Item={
        "device": {"S": "DEV#d1"}, "ts": {"N": "2"}, "_type": {"S": "Reading"},
        "device_id": {"S": "d1"}, "site_id": {"S": "s1"},
        "score": {"N": "1"}, "site": {"S": "SITE#old"}, "value": {"N": "0"}})
    problems = audit_items(readings, raw_scan(readings))
    assert [(p.kind, p.key) for p in problems] == [("stale-index", ("DEV#d1", "2"))]
    assert problems[0].detail == "Reading: site 'SITE#old' -> 'SITE#s1'"
    assert [r.ok for r in repair(readings, problems)] == [True]
    assert audit_items(readings, raw_scan(readings)) == []
    found = s.query(Reading, index="by_site", site_id="s1").all()
    assert sorted(r.ts for r in found) == [1, 2]


def test_upsert_of_a_field_that_is_the_key_and_stream_records(db: TestBackend) -> None:
    s = db.session(catalog)
    s.update(Product, Id=500, upsert=True).set(Title="New", ProductCategory="Book")
    s.commit()
    [item] = raw_scan(catalog)
    assert item["Id"] == {"N": "500"} and item["Title"] == {"S": "New"}
    record = {"eventID": "e1", "eventName": "MODIFY", "eventSource": "aws:dynamodb",
              "dynamodb": {"Keys": {"Id": {"N": "500"}}, "NewImage": item,
                           "OldImage": {**item, "Title": {"S": "Old"}},
                           "SequenceNumber": "1", "StreamViewType": "NEW_AND_OLD_IMAGES"}}
    [change] = catalog.changes([record])
    assert change.entity is Product and change.kind == "modify" and change.role == "row"
    assert isinstance(change.new, Product) and change.new.Id == 500 and change.new.Title == "New"
    assert isinstance(change.old, Product) and change.old.Title == "Old"


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_check_table_pages_and_checkpoints_over_number_keys(db: TestBackend,
                                                            tmp_path: Any) -> None:
    from dynaorm.jobs.checking import check_table

    s = db.session(readings)
    s.save_many([Reading(device_id="d1", ts=t, site_id="s1", score=Decimal(t)) for t in
                 range(1, 8)])
    for t in (3, 5):
        readings.client.update_item(
            TableName=readings.name, Key={"device": {"S": "DEV#d1"}, "ts": {"N": str(t)}},
            UpdateExpression="SET site = :x", ExpressionAttributeValues={":x": {"S": "OLD"}})
    result = check_table(readings, fix=True, page_size=2, checkpoint=tmp_path / "cp.json")
    assert result.scanned == 7
    assert [line.split()[:2] for line in result.problems] == [
        ["stale-index", "DEV#d1"], ["stale-index", "DEV#d1"]]
    assert sum(1 for r in result.repairs if r.ok) == 2
    assert check_table(readings).problems == []
    assert sorted(r.ts for r in s.query(Reading, index="by_site", site_id="s1")) == list(
        range(1, 8))
