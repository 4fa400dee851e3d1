"""Write sharding (``Meta.shards``) and scatter-gather reads that merge every shard;
``Shards(count, by=, first=)`` and ``query(..., shard=)`` (contract section 7, 0.2)."""

from __future__ import annotations

import zlib
from typing import Any

import pytest

from dynaorm import DynaormError, Entity, F, KeyTemplateError, Query, Session, Shards, Table
from dynaorm.schema.entity import spec_of
from dynaorm.testing import TestBackend
from tests.support.models import SHARDS, SEvent, SOrder, app, unsaved
from tests.support.recording import Requests


def partitions(rec: Requests) -> list[str]:
    """The partition key values of the Query requests ``rec`` saw."""
    return [r["ExpressionAttributeValues"][":v0"]["S"] for r in rec.of("Query")]


ORDERS = [SOrder(order_id=f"o{i:02d}", status="open" if i % 4 else "closed",
                 created=f"2024-06-{1 + i % 9:02d}", total=i * 10) for i in range(30)]


def open_orders(pred: Any = lambda o: True) -> list[SOrder]:
    chosen = [o for o in ORDERS if o.status == "open" and pred(o)]
    return sorted(chosen, key=lambda o: (o.created, o.order_id))


@pytest.fixture
def s(db: TestBackend) -> Session:
    session = db.session()
    session.save_many(unsaved(ORDERS))
    return session


def chain(q: Query[Any]) -> list[Any]:
    """Every item of ``q`` read page by page through cursors."""
    out: list[Any] = []
    page = q.page()
    while True:
        out.extend(page.items)
        if page.cursor is None:
            return out
        page = q.page(page.cursor)


def test_writes_spread_over_the_shards(s: Session, db: TestBackend) -> None:
    raw = [i for i in db.scan_raw() if i["_type"]["S"] == "SOrder"]
    assert len(raw) == len(ORDERS)
    by_status: dict[str, set[str]] = {}
    for item in raw:
        status, shard = item["gsi1pk"]["S"].split("#")[1:]
        assert status == item["status"]["S"]
        assert 0 <= int(shard) < SHARDS
        by_status.setdefault(status, set()).add(shard)
    assert len(by_status["open"]) > 1  # one hot key, several partitions
    # the shard is a stable function of the item's identity
    again = s.get(SOrder, order_id="o05")
    assert again is not None
    again.total += 1
    s.save(again)
    s.commit()
    after = {i["order_id"]["S"]: i["gsi1pk"]["S"] for i in db.scan_raw()
             if i["_type"]["S"] == "SOrder"}
    assert after == {i["order_id"]["S"]: i["gsi1pk"]["S"] for i in raw}


def test_get_needs_no_shard(s: Session) -> None:
    got = s.get(SOrder, order_id="o07")
    assert got == ORDERS[7]
    assert s.get_many(SOrder, [{"order_id": "o01"}, {"order_id": "zz"}]) == [ORDERS[1], None]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_scatter_gather_merges_in_sort_key_order(s: Session, db: TestBackend) -> None:
    rec = Requests(db.table)
    q = s.query(SOrder, index="gsi1", status="open")
    assert q.all() == open_orders()
    assert sorted(set(partitions(rec))) == [f"SSTATUS#open#{n}" for n in range(SHARDS)]
    assert q.reverse().all() == open_orders()[::-1]
    assert q.limit(5).all() == open_orders()[:5]
    assert q.reverse().limit(4).all() == open_orders()[::-1][:4]
    assert q.count() == len(open_orders())
    assert q.first() == open_orders()[0]
    assert q.filter(F("total") >= 150).all() == open_orders(lambda o: o.total >= 150)
    assert q.begins_with(created="2024-06-0").page_size(2).all() == open_orders()
    assert q.gt(created="2024-06-05").all() == open_orders(lambda o: o.created > "2024-06-05")
    assert q.between({"created": "2024-06-03"}, {"created": "2024-06-06"}).reverse().all() == \
        open_orders(lambda o: "2024-06-03" <= o.created <= "2024-06-06")[::-1]
    closed = s.query(SOrder, index="gsi1", status="closed").all()
    assert closed == sorted((o for o in ORDERS if o.status == "closed"),
                            key=lambda o: (o.created, o.order_id))
    assert s.query(SOrder, index="gsi1", status="void").all() == []


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
@pytest.mark.parametrize("size", [1, 3, 7, 50])
def test_scatter_gather_pages_cover_everything_once(s: Session, size: int) -> None:
    q = s.query(SOrder, index="gsi1", status="open").page_size(size)
    assert chain(q) == open_orders()
    assert chain(q.reverse()) == open_orders()[::-1]
    filtered = q.filter(F("total") < 200)
    assert chain(filtered) == open_orders(lambda o: o.total < 200)


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_scatter_gather_limit_with_pages(s: Session) -> None:
    q = s.query(SOrder, index="gsi1", status="open").limit(7).page_size(3)
    assert chain(q) == open_orders()[:7]


def test_the_shard_is_never_passed(s: Session) -> None:
    # (0.2) a query may name one shard to read (test_one_shard_alone); never out of range
    with pytest.raises(KeyTemplateError):
        s.query(SOrder, index="gsi1", status="open", shard=SHARDS).all()
    with pytest.raises(KeyTemplateError):
        s.get(SOrder, order_id="o01", shard=0)


def test_shards_need_the_placeholder() -> None:
    with pytest.raises(DynaormError):
        class SBad(Entity):
            class Meta:
                table = Table("sbad", indexes=list(app.indexes.values()))
                pk = "SBAD#{x}"
                sk = "X"
                indexes = {"gsi1": ("SBAD#{x}", "X")}
                shards = {"gsi1": 2}

            x: str


EVENTS = [SEvent(day="2024-01-01" if i % 5 else "2024-01-02", at=f"T{(i * 7) % 24:02d}:00",
                 event_id=f"e{i}", kind="view" if i % 3 else "click") for i in range(20)]


def test_primary_key_sharding(db: TestBackend) -> None:
    s = db.session()
    s.save_many(unsaved(EVENTS))
    partitions = {i["pk"]["S"] for i in db.scan_raw() if i["_type"]["S"] == "SEvent"}
    assert {p.rsplit("#", 1)[0] for p in partitions} == {"SDAY#2024-01-01", "SDAY#2024-01-02"}
    assert len(partitions) > 2
    day1 = sorted((e for e in EVENTS if e.day == "2024-01-01"), key=lambda e: (e.at, e.event_id))
    for e in EVENTS[:5]:
        assert s.get(SEvent, day=e.day, at=e.at, event_id=e.event_id) == e
    q = s.query(SEvent, day="2024-01-01")
    assert q.all() == day1
    assert q.reverse().limit(3).all() == day1[::-1][:3]
    assert q.lt(at="T10").all() == [e for e in day1 if e.at < "T10"]
    assert q.filter(F("kind") == "click").all() == [e for e in day1 if e.kind == "click"]
    assert chain(q.page_size(4)) == day1
    assert chain(q.reverse().page_size(5)) == day1[::-1]
    found = s.get(SEvent, day=day1[0].day, at=day1[0].at, event_id=day1[0].event_id)
    assert found is not None
    s.delete(found)
    s.commit()
    assert q.all() == day1[1:]


# -- Shards(count, by=, first=) and query(..., shard=) (0.2) -------------------------------

class Request(Entity):
    """The labs' write-sharded GSI: ``requestid % 10 + 1`` picks one of shards 1..10."""

    class Meta:
        table = app
        pk = "REQ#{request_id}"
        sk = "REQ"
        indexes = {"gsi1": ("DAY#{day}#{shard}", "{request_id:08d}")}
        shards = {"gsi1": Shards(10, by=lambda r: r.request_id % 10 + 1, first=1)}

    request_id: int
    day: str
    status: str = "ok"


class Bucketed(Entity):
    """Sharded by a field that holds the shard value."""

    class Meta:
        table = app
        pk = "BKT#{name}"
        sk = "BKT"
        indexes = {"gsi2": ("BKTS#{shard}", "{name}")}
        shards = {"gsi2": Shards(3, by="bucket")}

    name: str
    bucket: int


class Event(Entity):
    """The table key itself sharded by a function of a key field."""

    class Meta:
        table = app
        pk = "EVDAY#{day}#{shard}"
        sk = "{event_id}"
        shards = {"primary": Shards(4, by=lambda e: int(e.event_id[1:]) % 4)}

    day: str
    event_id: str
    kind: str = ""


class Plain(Entity):
    class Meta:
        table = app
        pk = "PLAIN#{pid}"
        sk = "P"
        indexes = {"gsi2": ("PLAINS#{shard}", "{pid}")}
        shards = {"gsi2": 5}

    pid: str


REQUESTS = [Request(request_id=i, day="2024-05-01") for i in range(1, 41)]


@pytest.fixture
def s_by_rule(db: TestBackend) -> Session:
    session = db.session()
    session.save_many([*unsaved(REQUESTS), *(Event(day="d1", event_id=f"e{i}") for i in range(12))])
    return session


def raw_gsi(db: TestBackend, pk: str) -> list[dict[str, Any]]:
    client = db.table.client
    out = client.query(TableName=app.name, IndexName="gsi1",
                       KeyConditionExpression="gsi1pk = :p",
                       ExpressionAttributeValues={":p": {"S": pk}})
    return list(out["Items"])


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_custom_shard_values_land_where_the_rule_says(s_by_rule: Session, db: TestBackend) -> None:
    for shard in range(1, 11):
        raw = raw_gsi(db, f"DAY#2024-05-01#{shard}")
        assert sorted(int(i["request_id"]["N"]) for i in raw) == [
            r for r in range(1, 41) if r % 10 + 1 == shard]
    assert raw_gsi(db, "DAY#2024-05-01#0") == []


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_scatter_gather_reads_shards_first_to_last(s_by_rule: Session, db: TestBackend) -> None:
    rec = Requests(db.table)
    got = s_by_rule.query(Request, index="gsi1", day="2024-05-01").all()
    assert [r.request_id for r in got] == list(range(1, 41))
    parts = sorted(r["ExpressionAttributeValues"][":v0"]["S"] for r in rec.of("Query"))
    assert parts == sorted(f"DAY#2024-05-01#{i}" for i in range(1, 11))


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_one_shard_alone(s_by_rule: Session, db: TestBackend) -> None:
    rec = Requests(db.table)
    got = s_by_rule.query(Request, index="gsi1", day="2024-05-01", shard=3).all()
    assert [r.request_id for r in got] == [2, 12, 22, 32]
    (request,) = rec.of("Query")
    assert request["ExpressionAttributeValues"][":v0"] == {"S": "DAY#2024-05-01#3"}
    assert s_by_rule.query(Request, index="gsi1", day="2024-05-01", shard=3).count() == 4
    page = s_by_rule.query(Request, index="gsi1", day="2024-05-01", shard=3).page_size(3).page()
    rest = s_by_rule.query(Request, index="gsi1", day="2024-05-01", shard=3).page_size(3).page(
        page.cursor)
    assert [r.request_id for r in page.items + rest.items] == [2, 12, 22, 32]
    for bad in (0, 11, "3", True):
        with pytest.raises(KeyTemplateError):
            s_by_rule.query(Request, index="gsi1", day="2024-05-01", shard=bad).all()
    with pytest.raises(KeyTemplateError):
        s_by_rule.query(Request, index=None, request_id=1, shard=1).all()  # the table key is plain


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_a_field_holds_the_shard(db: TestBackend) -> None:
    s = db.session()
    s.save_many([Bucketed(name=f"b{i}", bucket=i % 3) for i in range(9)])
    assert [b.name for b in s.query(Bucketed, index="gsi2", shard=1)] == ["b1", "b4", "b7"]
    assert len(s.query(Bucketed, index="gsi2").all()) == 9
    with pytest.raises(KeyTemplateError, match=r"outside 0\.\.2"):
        s.save_many([Bucketed(name="x", bucket=3)])
    with pytest.raises(KeyTemplateError):
        s.save(Bucketed(name="y", bucket=-1))
        s.commit()
    assert s.get(Bucketed, name="x") is None


def test_primary_shard_from_key_fields(s_by_rule: Session, db: TestBackend) -> None:
    got = s_by_rule.get(Event, day="d1", event_id="e5")
    assert got is not None and got.event_id == "e5"
    keys = {i["pk"] for i in db.scan() if i.get("_type") == "Event"}
    assert keys == {f"EVDAY#d1#{n}" for n in range(4)}
    assert [e.event_id for e in s_by_rule.query(Event, day="d1", shard=1)] == ["e1", "e5", "e9"]
    assert len(s_by_rule.query(Event, day="d1").all()) == 12


def test_primary_by_must_use_key_fields() -> None:
    with pytest.raises(KeyTemplateError, match="primary-key template"):
        class BadEvent(Entity):
            class Meta:
                table = app
                pk = "BADEV#{day}#{shard}"
                sk = "{event_id}"
                shards = {"primary": Shards(4, by="kind")}

            day: str
            event_id: str
            kind: int = 0

    class SneakyEvent(Entity):  # a function cannot be checked until it runs: get() refuses
        class Meta:
            table = app
            pk = "SNEAKY#{day}#{shard}"
            sk = "{event_id}"
            shards = {"primary": Shards(4, by=lambda e: e.kind)}

        day: str
        event_id: str
        kind: int = 0

    with pytest.raises(KeyTemplateError, match="primary-key template fields"):
        spec_of(SneakyEvent).primary_key({"day": "d", "event_id": "e", "kind": 1})


def test_bad_rules_are_refused_at_definition() -> None:
    for bad in (0, -1, True, "4"):
        with pytest.raises(DynaormError):
            Shards(bad)  # type: ignore[arg-type]
    with pytest.raises(DynaormError):
        Shards(4, by=3)  # type: ignore[arg-type]
    with pytest.raises(DynaormError):
        Shards(4, first=1.5)  # type: ignore[arg-type]
    with pytest.raises(KeyTemplateError):
        class NoField(Entity):
            class Meta:
                table = app
                pk = "NOF#{a}"
                sk = "X"
                indexes = {"gsi2": ("NOFS#{shard}", "{a}")}
                shards = {"gsi2": Shards(2, by="missing")}

            a: str


def test_plain_n_keeps_its_crc32_buckets() -> None:
    spec = spec_of(Plain)
    for pid in ("a", "b", "p-17", "zz"):
        assert spec.shard_of({"pid": pid}, "gsi2") == zlib.crc32(pid.encode()) % 5
    assert spec.shards["gsi2"] == Shards(5)
    assert list(Shards(10, first=1).values) == list(range(1, 11))
