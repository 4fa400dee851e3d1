"""Write sharding (``Meta.shards``) and scatter-gather reads that merge every shard."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import DynaormError, Entity, F, KeyTemplateError, Query, Session, Table
from dynaorm.testing import TestBackend
from dynaorm.transport.sync import Transport
from tests.support.models import app

SHARDS = 4


class SOrder(Entity):
    """Orders by status on gsi1, the hot status key spread over four partitions."""

    class Meta:
        table = app
        pk = "SORDER#{order_id}"
        sk = "ORDER"
        indexes = {"gsi1": ("SSTATUS#{status}#{shard}", "{created}#{order_id}")}
        shards = {"gsi1": SHARDS}

    order_id: str
    status: str
    created: str
    total: int = 0


class SEvent(Entity):
    """Events of one day, the table key itself sharded three ways."""

    class Meta:
        table = app
        pk = "SDAY#{day}#{shard}"
        sk = "{at}#{event_id}"
        shards = {"primary": 3}

    day: str
    at: str
    event_id: str
    kind: str = "click"


class Counter(Transport):
    """Counts the Query requests sent (and keeps their partition key values)."""

    def __init__(self, endpoint_url: str | None) -> None:
        super().__init__(endpoint_url)
        self.partitions: list[str] = []

    def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        if operation == "Query":
            self.partitions.append(request["ExpressionAttributeValues"][":v0"]["S"])
        return super().send(operation, request)


ORDERS = [SOrder(order_id=f"o{i:02d}", status="open" if i % 4 else "closed",
                 created=f"2024-06-{1 + i % 9:02d}", total=i * 10) for i in range(30)]


def open_orders(pred: Any = lambda o: True) -> list[SOrder]:
    chosen = [o for o in ORDERS if o.status == "open" and pred(o)]
    return sorted(chosen, key=lambda o: (o.created, o.order_id))


@pytest.fixture
def s(db: TestBackend) -> Session:
    session = db.session()
    session.save_many(ORDERS)
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


@pytest.mark.sync_only
def test_scatter_gather_merges_in_sort_key_order(s: Session, db: TestBackend) -> None:
    counter = Counter(db.endpoint_url)
    db.table.transport = counter
    q = s.query(SOrder, index="gsi1", status="open")
    assert q.all() == open_orders()
    assert sorted(set(counter.partitions)) == [f"SSTATUS#open#{n}" for n in range(SHARDS)]
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


@pytest.mark.parametrize("size", [1, 3, 7, 50])
def test_scatter_gather_pages_cover_everything_once(s: Session, size: int) -> None:
    q = s.query(SOrder, index="gsi1", status="open").page_size(size)
    assert chain(q) == open_orders()
    assert chain(q.reverse()) == open_orders()[::-1]
    filtered = q.filter(F("total") < 200)
    assert chain(filtered) == open_orders(lambda o: o.total < 200)


def test_scatter_gather_limit_with_pages(s: Session) -> None:
    q = s.query(SOrder, index="gsi1", status="open").limit(7).page_size(3)
    assert chain(q) == open_orders()[:7]


def test_the_shard_is_never_passed(s: Session) -> None:
    # (0.2) a query may name one shard to read (tests/test_shards_02.py); never out of range
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
    s.save_many(EVENTS)
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
