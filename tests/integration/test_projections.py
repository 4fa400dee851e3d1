"""Entities through indexes that do not project everything (contract section 6, 0.2):
KEYS_ONLY and INCLUDE indexes return whole entities, read by key in batches, in the query's
order, requested types only, reading on until the limit is met."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import GSI, LSI, Entity, Page, Query, Session, Table
from dynaorm.testing import TestBackend, use_tables
from tests.support.models import unsaved
from tests.support.recording import Requests

proj = Table("dynaorm-proj", indexes=[
    GSI("keys", pk="kpk", sk="ksk", projection="KEYS_ONLY"),
    GSI("incl", pk="ipk", sk="isk", projection=["status"]),
    LSI("lkeys", sk="lsk", projection="KEYS_ONLY"),
])


#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class POrder(Entity):
    class Meta:
        table = proj
        pk = "PORDER#{order_id}"
        sk = "ORDER"
        indexes = {"keys": ("CUST#{customer}", "ORDER#{created}#{order_id}"),
                   "incl": ("STATUS#{status}", "{created}#{order_id}")}

    order_id: str
    customer: str
    created: str
    status: str = "open"
    total: int = 0


class PInvoice(Entity):
    class Meta:
        table = proj
        pk = "PINV#{inv_id}"
        sk = "INVOICE"
        indexes = {"keys": ("CUST#{customer}", "ORDER#{created}#INV#{inv_id}")}

    inv_id: str
    customer: str
    created: str
    amount: int = 0


class PLine(Entity):
    """Rows of one partition; the LSI keeps them by position, projecting keys only."""

    class Meta:
        table = proj
        pk = "CART#{cart}"
        sk = "LINE#{line}"
        indexes = {"lkeys": (None, "POS#{pos:04d}")}

    cart: str
    line: str
    pos: int
    sku: str = ""


ORDERS = [POrder(order_id=f"o{i:02d}", customer="c1" if i % 3 else "c2",
                 created=f"2024-01-{1 + i % 17:02d}", status="open" if i % 2 else "shipped",
                 total=i * 7) for i in range(30)]
INVOICES = [PInvoice(inv_id=f"i{i}", customer="c1", created=f"2024-01-{3 + i:02d}", amount=i)
            for i in range(4)]
LINES = [PLine(cart="k1", line=f"L{i}", pos=30 - i, sku=f"s{i}") for i in range(12)]


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(proj, endpoint_url=backend) as tb:
        yield tb


@pytest.fixture
def s(db: TestBackend) -> Session:
    session = db.session()
    session.save_many(unsaved(ORDERS, INVOICES, LINES))
    return session


@pytest.fixture
def rec(db: TestBackend) -> Requests:
    return Requests(db.table)


def c1_orders() -> list[POrder]:
    return sorted((o for o in ORDERS if o.customer == "c1"), key=lambda o: (o.created,
                                                                             o.order_id))


def chain(q: Query[Any]) -> list[Page[Any]]:
    pages = [q.page()]
    while pages[-1].cursor is not None:
        pages.append(q.page(pages[-1].cursor))
    return pages


def test_definition_adds_the_type_attribute_to_include() -> None:
    gsis = {g["IndexName"]: g for g in proj.definition()["GlobalSecondaryIndexes"]}
    assert gsis["incl"]["Projection"] == {"ProjectionType": "INCLUDE",
                                          "NonKeyAttributes": ["status", "_type"]}
    assert gsis["keys"]["Projection"] == {"ProjectionType": "KEYS_ONLY"}


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_keys_only_index_returns_whole_entities_in_order(s: Session, rec: Requests) -> None:
    got = s.query(POrder, index="keys", customer="c1").all()
    assert got == c1_orders()  # every field, though the index holds only keys
    assert [r["IndexName"] for r in rec.of("Query")] == ["keys"]
    (batch,) = rec.of("BatchGetItem")
    assert len(batch["RequestItems"]["dynaorm-proj"]["Keys"]) == len(got)
    assert s.query(POrder, index="keys", customer="c1").reverse().all() == c1_orders()[::-1]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_several_types_by_key_shape(s: Session) -> None:
    got = s.query(POrder, PInvoice, index="keys", customer="c1").all()
    want = sorted([*c1_orders(), *INVOICES],
                  key=lambda e: f"ORDER#{e.created}#" + (
                      f"INV#{e.inv_id}" if isinstance(e, PInvoice) else e.order_id))
    assert got == want
    # the invoices' prefix (ORDER#) reads the orders too: key shapes tell them apart
    assert s.query(PInvoice, index="keys", customer="c1").all() == INVOICES
    assert s.query(POrder, PInvoice, index="keys", customer="c1").count() == len(want)


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_limit_reads_on_past_foreign_rows(s: Session, db: TestBackend, rec: Requests) -> None:
    # rows another tool wrote into the index partition: their table keys fit no entity
    client = db.table.client
    for i in range(6):
        client.put_item(TableName="dynaorm-proj", Item={
            "pk": {"S": f"OTHER#{i}"}, "sk": {"S": "X"}, "kpk": {"S": "CUST#c1"},
            "ksk": {"S": f"ORDER#2024-01-0{i % 3}#x{i}"}})
    rec.clear()
    got = s.query(POrder, index="keys", customer="c1").page_size(3).limit(7).all()
    assert got == c1_orders()[:7]
    assert all(r["Limit"] == 3 for r in rec.of("Query"))
    keys = [k for r in rec.of("BatchGetItem") for k in r["RequestItems"]["dynaorm-proj"]["Keys"]]
    assert not any(k["pk"]["S"].startswith("OTHER#") for k in keys)  # never read by key
    assert s.query(POrder, index="keys", customer="c1").count() == len(c1_orders())


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_pages_over_a_keys_only_index(s: Session, rec: Requests) -> None:
    q = s.query(POrder, index="keys", customer="c1").page_size(4)
    pages = chain(q)
    assert [o for p in pages for o in p.items] == c1_orders()
    assert all(len(p.items) == 4 for p in pages[:-1])
    limited = chain(q.limit(6))
    assert [o for p in limited for o in p.items] == c1_orders()[:6]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_include_index_returns_whole_entities(s: Session, rec: Requests) -> None:
    got = s.query(POrder, index="incl", status="open").all()
    want = sorted((o for o in ORDERS if o.status == "open"), key=lambda o: (o.created,
                                                                             o.order_id))
    assert got == want and all(o.total == int(o.order_id[1:]) * 7 for o in got)
    assert len(rec.of("BatchGetItem")) == 1
    rec.clear()
    assert s.query(POrder, index="incl", status="open").count() == len(want)
    (counted,) = rec.of("Query")
    assert counted["Select"] == "COUNT"
    assert counted["FilterExpression"] == "#n1 IN (:v1)"  # the type, on the server
    assert counted["ExpressionAttributeNames"]["#n1"] == "_type"
    assert s.query(POrder, index="incl", status="open").values("total", "order_id")[:2] == [
        {"total": w.total, "order_id": w.order_id} for w in want[:2]]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_count_on_keys_only_reads_keys(s: Session, rec: Requests) -> None:
    assert s.query(POrder, index="keys", customer="c2").count() == 10
    (request,) = rec.of("Query")
    assert "Select" not in request and "FilterExpression" not in request
    names = request["ExpressionAttributeNames"]
    assert {names[n] for n in request["ProjectionExpression"].split(", ")} == {
        "pk", "sk", "kpk", "ksk"}
    assert not rec.of("BatchGetItem")  # counting never reads items


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_keys_only_lsi_and_scans(s: Session) -> None:
    lines = s.query(PLine, index="lkeys", cart="k1").all()
    assert lines == sorted(LINES, key=lambda li: li.pos)
    assert s.query(PLine, index="lkeys", cart="k1").consistent().limit(2).all() == lines[:2]
    scanned = s.scan(POrder, index="keys").all()
    assert sorted(scanned, key=lambda o: o.order_id) == ORDERS
    assert s.scan(POrder, index="keys").count() == 30
    assert s.scan(POrder, PInvoice, index="keys").count() == 34
    assert len(s.scan(POrder, index="incl").all()) == 30
    assert s.scan(POrder, index="incl").count() == 30
    keys = s.scan(POrder, index="keys").keys()
    assert sorted(k["order_id"] for k in keys) == sorted(o.order_id for o in ORDERS)
