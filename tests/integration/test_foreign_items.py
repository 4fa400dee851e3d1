"""Tables written by other tools: ``Table(type_attribute=None)`` (contract 14)."""

from __future__ import annotations

from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import pytest

from dynaorm import GSI, DynaormError, Entity, F, Table
from dynaorm.schema.checks import could_overlap
from dynaorm.schema.templates import KeyTemplate
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.recording import Requests

shop = Table("foreign-shop", pk="PK", sk="SK", type_attribute=None,
             indexes=[GSI("GSI1", pk="GSI1PK", sk="GSI1SK", projection="KEYS_ONLY")])


class Customer(Entity):
    class Meta:
        table = shop
        pk = "CUST#{customer_id}"
        sk = "PROFILE"

    customer_id: str
    name: str
    email: str | None = None


class Order(Entity):
    class Meta:
        table = shop
        pk = "CUST#{customer_id}"
        sk = "ORDER#{order_id}"
        indexes = {"GSI1": ("STATUS#{status}", "ORDER#{order_id}")}

    customer_id: str
    order_id: str
    status: str
    total: Decimal = Decimal(0)


def put_raw(table: Table, *items: dict[str, Any]) -> None:
    """Items as another tool writes them (no type attribute, fields only in keys)."""
    for item in items:
        table.client.put_item(TableName=table.name, Item=item)


RAW = [
    {"PK": {"S": "CUST#c1"}, "SK": {"S": "PROFILE"}, "name": {"S": "Ann"}},
    {"PK": {"S": "CUST#c1"}, "SK": {"S": "ORDER#o1"}, "status": {"S": "OPEN"},
     "total": {"N": "12.5"}, "GSI1PK": {"S": "STATUS#OPEN"}, "GSI1SK": {"S": "ORDER#o1"}},
    {"PK": {"S": "CUST#c1"}, "SK": {"S": "ORDER#o2"}, "status": {"S": "SHIPPED"},
     "GSI1PK": {"S": "STATUS#SHIPPED"}, "GSI1SK": {"S": "ORDER#o2"}},
    {"PK": {"S": "CUST#c1"}, "SK": {"S": "NOTE#n1"}, "text": {"S": "call back"}},  # no entity
    {"PK": {"S": "CUST#c2"}, "SK": {"S": "PROFILE"}, "name": {"S": "Bob"},
     "customer_id": {"S": "c2"}},
    {"PK": {"S": "SYSTEM"}, "SK": {"S": "CONFIG"}, "v": {"N": "1"}},  # no entity
]


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(shop, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        put_raw(shop, *RAW)
        yield tb


# -- pure: overlapping shapes -----------------------------------------------------------------
@pytest.mark.parametrize(("a", "b", "overlap"), [
    ("CUST#{x}", "CUST#{y}", True),
    ("CUST#{x}", "ORDER#{y}", False),
    ("PROFILE", "ORDER#{y}", False),
    ("ORDER#{y}", "{anything}", True),  # one field matches any key
    ("A#{x}#B", "A#{y}", False),
    ("USER{x}", "USERS", True),
    ("V{x}", "W{y}", False),
    ("{a}X", "{b}Y", False),
])
def test_could_overlap(a: str, b: str, overlap: bool) -> None:
    assert could_overlap(KeyTemplate.parse(a), KeyTemplate.parse(b)) is overlap
    assert could_overlap(KeyTemplate.parse(b), KeyTemplate.parse(a)) is overlap


def test_overlapping_entities_are_refused_when_the_second_is_defined() -> None:
    # (Customer's literal "PROFILE" would win over "{what}" (0.3); Order's template cannot)
    with pytest.raises(DynaormError, match="could match the same item as Order"):
        class Anything(Entity):
            class Meta:
                table = shop
                pk = "CUST#{who}"
                sk = "{what}"
            who: str
            what: str
    assert "Anything" not in shop.entities


def test_unique_and_versioned_rules_are_refused() -> None:
    with pytest.raises(DynaormError, match="unique rules need"):
        class U(Entity):
            class Meta:
                table = shop
                pk = "U#{u}"
                sk = "U"
                unique = ("mail",)
            u: str
            mail: str
    with pytest.raises(DynaormError, match="versioning need"):
        class V(Entity):
            class Meta:
                table = shop
                pk = "V#{v}"
                sk = "V"
                versioned = True
            v: str
            version: int = 0


# -- on the backends -----------------------------------------------------------------------
def test_reads_match_items_by_key_shape_and_fill_fields_from_keys(db: TestBackend) -> None:
    s = db.session(shop)
    ann = s.get(Customer, customer_id="c1")
    assert ann is not None and ann.name == "Ann" and ann.customer_id == "c1"  # from the key
    assert s.get(Order, customer_id="c1", order_id="o1") == Order(
        customer_id="c1", order_id="o1", status="OPEN", total=Decimal("12.5"))
    assert s.get(Customer, customer_id="zz") is None
    got = s.query(Customer, Order, customer_id="c1").all()
    assert [type(x).__name__ for x in got] == ["Order", "Order", "Customer"]  # NOTE skipped
    page = s.query(Order, customer_id="c1").page()
    assert [o.order_id for o in page.items] == ["o1", "o2"]
    assert s.query(Order, customer_id="c1").count() == 2
    assert s.query(Order, customer_id="c1").values("status", "order_id") == [
        {"status": "OPEN", "order_id": "o1"}, {"status": "SHIPPED", "order_id": "o2"}]


def test_unmatched_items_are_skipped_and_counted(db: TestBackend) -> None:
    s = db.session(shop)
    page = s.scan(Customer).page()
    assert sorted(c.customer_id for c in page.items) == ["c1", "c2"]
    assert page.skipped == 2  # the note and the config item; orders belong to Order
    assert s.scan(Customer, Order).page().skipped == 2
    rec = Requests(shop)
    assert s.scan(Customer).count() == 2
    assert s.scan(Order).filter(F("status") == "OPEN").count() == 1
    [count, _] = rec.of("Scan")
    assert set(count["ProjectionExpression"].split(", ")) == {"#n0", "#n1"}  # keys only
    assert "Select" not in count and "FilterExpression" not in count
    plain = s.query(Order, customer_id="c1").page()
    assert plain.skipped == 0  # the query's range holds orders only


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_writes_carry_no_type_attribute(db: TestBackend) -> None:
    s = db.session(shop)
    s.save(Customer(customer_id="c3", name="Cy"))
    s.save(Order(customer_id="c3", order_id="o9", status="OPEN"))
    s.commit()
    items = {(i["PK"]["S"], i["SK"]["S"]): i for i in shop.client.scan(TableName=shop.name)[
        "Items"]}
    assert "_type" not in items[("CUST#c3", "PROFILE")]
    assert items[("CUST#c3", "ORDER#o9")]["GSI1PK"] == {"S": "STATUS#OPEN"}
    open_orders = s.query(Order, index="GSI1", status="OPEN").all()  # KEYS_ONLY: fetched
    assert sorted(o.order_id for o in open_orders) == ["o1", "o9"]
    assert open_orders[0].total is not None
    s.update(Order, customer_id="c1", order_id="o2").set(total=Decimal(3))
    s.commit()
    o2 = s.get(Order, customer_id="c1", order_id="o2", consistent=True)
    assert o2 is not None and o2.total == Decimal(3) and o2.status == "SHIPPED"


def test_stream_records_are_classified_by_key_shape() -> None:
    def record(keys: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
        return {"eventID": "1", "eventName": "INSERT", "eventSource": "aws:dynamodb",
                "dynamodb": {"Keys": keys, "NewImage": new, "SequenceNumber": "1",
                             "StreamViewType": "NEW_IMAGE"}}
    recs = [record({"PK": {"S": "CUST#c1"}, "SK": {"S": "ORDER#o1"}}, RAW[1]),
            record({"PK": {"S": "SYSTEM"}, "SK": {"S": "CONFIG"}}, RAW[5])]
    order, other = list(shop.changes(recs))
    assert order.entity is Order and order.role == "row"
    assert order.new == Order(customer_id="c1", order_id="o1", status="OPEN",
                              total=Decimal("12.5"))
    assert other.entity is None and other.role == "row"
