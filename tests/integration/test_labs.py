"""Patterns of the public AWS DynamoDB labs, modelled with dynaorm over data written by raw
boto3 calls in the labs' shape, and compared with raw boto3 reads of the same table:
GSI overloading, a sparse index read by scan, a write-sharded GSI with the lab's own shard
values (``request_id % 10 + 1``), a number-keyed product catalog and an adjacency list with
an inverted index (both from data files in the labs' BatchWriteItem shape, written by other
tools: no type attribute)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from dynaorm import GSI, Entity, F, Session, Shards, Table
from dynaorm.testing import TestBackend, use_tables, worker_suffix

pytestmark = pytest.mark.sync_only  # instruments of the sync client (see conftest)

labs = Table("dynaorm-labs", pk="PK", sk="SK", indexes=[
    GSI("GSI_1", pk="GSI_1_PK", sk="GSI_1_SK"),
    GSI("OpenGames", pk="OG_PK", sk="OG_SK", projection="KEYS_ONLY"),
    GSI("GSI_Shard", pk="SH_PK", sk="SH_SK"),
])


class Employee(Entity):
    """GSI_1 overloaded: employees by title ..."""

    class Meta:
        table = labs
        pk = "e#{employee_id}"
        sk = "root"
        indexes = {"GSI_1": ("{title}", "e#{employee_id}")}

    employee_id: str
    name: str
    title: str
    state: str


class Office(Entity):
    """... and offices by city, in the same index attributes."""

    class Meta:
        table = labs
        pk = "o#{office_id}"
        sk = "root"
        indexes = {"GSI_1": ("{city}", "o#{office_id}")}

    office_id: str
    city: str
    seats: int


class Game(Entity):
    """The game lobby: only open games carry the OpenGames keys (a sparse index)."""

    class Meta:
        table = labs
        pk = "GAME#{game_id}"
        sk = "#METADATA#{game_id}"
        indexes = {"OpenGames": ("{map_name}", "{open_at}")}

    game_id: str
    map_name: str
    people: int = 0
    open_at: str | None = None


class Request(Entity):
    """The write-sharding lab: requests of a day spread over shards 1..10."""

    class Meta:
        table = labs
        pk = "REQ#{request_id}"
        sk = "REQ"
        indexes = {"GSI_Shard": ("{day}.{shard}", "{request_id:06d}")}
        shards = {"GSI_Shard": Shards(10, by=lambda r: r.request_id % 10 + 1, first=1)}

    request_id: int
    day: str
    host: str


def s_(v: str) -> dict[str, str]:
    return {"S": v}


def n_(v: int) -> dict[str, str]:
    return {"N": str(v)}


EMPLOYEES = [("1", "Ann", "Manager", "WA"), ("2", "Bo", "Engineer", "WA"),
             ("3", "Cy", "Manager", "OR"), ("4", "Di", "Engineer", "CA"),
             ("5", "Ed", "Engineer", "WA")]
OFFICES = [("10", "Seattle", 120), ("11", "Portland", 40), ("12", "Seattle", 15)]
GAMES = [(f"g{i}", ["Green Grasslands", "Juicy Jungle"][i % 2], i % 5,
          f"2019-10-{10 + i:02d}T00:00:00" if i % 3 else None) for i in range(14)]


def raw_items() -> Iterator[dict[str, Any]]:
    for eid, name, title, state in EMPLOYEES:
        yield {"PK": s_(f"e#{eid}"), "SK": s_("root"), "GSI_1_PK": s_(title),
               "GSI_1_SK": s_(f"e#{eid}"), "_type": s_("Employee"), "employee_id": s_(eid),
               "name": s_(name), "title": s_(title), "state": s_(state)}
    for oid, city, seats in OFFICES:
        yield {"PK": s_(f"o#{oid}"), "SK": s_("root"), "GSI_1_PK": s_(city),
               "GSI_1_SK": s_(f"o#{oid}"), "_type": s_("Office"), "office_id": s_(oid),
               "city": s_(city), "seats": n_(seats)}
    for gid, map_name, people, open_at in GAMES:
        item = {"PK": s_(f"GAME#{gid}"), "SK": s_(f"#METADATA#{gid}"), "_type": s_("Game"),
                "game_id": s_(gid), "map_name": s_(map_name), "people": n_(people)}
        if open_at:
            item.update(OG_PK=s_(map_name), OG_SK=s_(open_at), open_at=s_(open_at))
        yield item
    for rid in range(1, 61):  # the lab's formula for the shard: request_id % 10 + 1
        yield {"PK": s_(f"REQ#{rid}"), "SK": s_("REQ"), "_type": s_("Request"),
               "SH_PK": s_(f"2024-06-01.{rid % 10 + 1}"), "SH_SK": s_(f"{rid:06d}"),
               "request_id": n_(rid), "day": s_("2024-06-01"), "host": s_(f"h{rid % 3}")}


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(labs, endpoint_url=backend) as tb:
        client = tb.table.client
        for item in raw_items():
            client.put_item(TableName=labs.name, Item=item)
        yield tb


@pytest.fixture
def s(db: TestBackend) -> Session:
    return db.session()


def raw_query(db: TestBackend, index: str, pk_attr: str, value: str) -> list[dict[str, Any]]:
    out = db.table.client.query(
        TableName=labs.name, IndexName=index, KeyConditionExpression="#p = :v",
        ExpressionAttributeNames={"#p": pk_attr}, ExpressionAttributeValues={":v": s_(value)})
    return list(out["Items"])


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_gsi_overloading(s: Session, db: TestBackend) -> None:
    managers = s.query(Employee, index="GSI_1", title="Manager").all()
    raw = raw_query(db, "GSI_1", "GSI_1_PK", "Manager")
    assert [m.employee_id for m in managers] == [i["employee_id"]["S"] for i in raw] == ["1", "3"]
    seattle = s.query(Office, index="GSI_1", city="Seattle").all()
    raw = raw_query(db, "GSI_1", "GSI_1_PK", "Seattle")
    assert [(o.office_id, o.seats) for o in seattle] == [
        (i["office_id"]["S"], int(i["seats"]["N"])) for i in raw]
    # one scan of the overloaded index gives both kinds, told apart by the type attribute
    both = s.scan(Employee, Office, index="GSI_1").all()
    assert sorted(type(x).__name__ for x in both) == ["Employee"] * 5 + ["Office"] * 3
    assert s.scan(Employee, index="GSI_1").filter(F("state") == "WA").count() == 3
    assert s.query(Employee, index="GSI_1", title="Engineer").values("name") == [
        {"name": "Bo"}, {"name": "Di"}, {"name": "Ed"}]


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_sparse_index_read_by_scan(s: Session, db: TestBackend) -> None:
    client = db.table.client
    raw = client.scan(TableName=labs.name, IndexName="OpenGames")["Items"]
    opened = s.scan(Game, index="OpenGames").all()
    assert sorted(g.game_id for g in opened) == sorted(i["PK"]["S"][5:] for i in raw)
    assert len(opened) == sum(1 for g in GAMES if g[3])
    assert all(g.open_at is not None for g in opened)  # whole entities from a KEYS_ONLY index
    assert s.scan(Game, index="OpenGames").count() == len(raw)
    jungle = s.query(Game, index="OpenGames", map_name="Juicy Jungle").all()
    raw_jungle = raw_query(db, "OpenGames", "OG_PK", "Juicy Jungle")
    assert [g.game_id for g in jungle] == [i["PK"]["S"][5:] for i in raw_jungle]
    assert [g.open_at or "" for g in jungle] == sorted(g.open_at or "" for g in jungle)
    assert len(s.scan(Game).all()) == len(GAMES)  # the table scan sees the closed ones too


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_write_sharded_gsi_with_the_labs_shard_values(s: Session, db: TestBackend) -> None:
    every = s.query(Request, index="GSI_Shard", day="2024-06-01").all()
    raw = [i for shard in range(1, 11)
           for i in raw_query(db, "GSI_Shard", "SH_PK", f"2024-06-01.{shard}")]
    assert [r.request_id for r in every] == sorted(int(i["request_id"]["N"]) for i in raw)
    for shard in (1, 4, 10):
        one = s.query(Request, index="GSI_Shard", day="2024-06-01", shard=shard).all()
        raw_one = raw_query(db, "GSI_Shard", "SH_PK", f"2024-06-01.{shard}")
        assert [r.request_id for r in one] == [int(i["request_id"]["N"]) for i in raw_one]
    # an item dynaorm writes lands where the lab's own writers put it
    s.save(Request(request_id=77, day="2024-06-01", host="h9"))
    s.commit()
    assert [i["request_id"]["N"] for i in raw_query(db, "GSI_Shard", "SH_PK", "2024-06-01.8")
            if i["request_id"]["N"] == "77"] == ["77"]
    pages: list[Request] = []
    cursor = None
    while True:
        page = s.query(Request, index="GSI_Shard", day="2024-06-01").filter(
            F("host") == "h1").page_size(7).page(cursor)
        pages.extend(page.items)
        if (cursor := page.cursor) is None:
            break
    assert [r.request_id for r in pages] == [r for r in range(1, 61) if r % 3 == 1]


# -- a number-keyed product catalog (the developer guide's ProductCatalog) ----------------
DATA = Path(__file__).resolve().parents[1] / "support" / "data" / "labs"
catalog = Table("dynaorm-labs-catalog", pk="Id", sk=None, key_types={"Id": "N"},
                type_attribute=None)


class Product(Entity):
    """Books and bicycles keyed by a number ``Id``, stored once as the key."""

    class Meta:
        table = catalog
        pk = "{Id}"

    Id: int
    Title: str
    ProductCategory: str
    Price: Decimal | None = None
    Authors: list[str] | None = None
    ISBN: str | None = None
    InPublication: bool | None = None
    PageCount: int | None = None
    BicycleType: str | None = None
    Brand: str | None = None
    Color: set[str] | None = None


def load(table: Table, name: str) -> list[dict[str, Any]]:
    """A data file in the labs' BatchWriteItem shape, written with raw boto3."""
    requests = json.loads((DATA / f"{name}.json").read_text())[name]
    items = [r["PutRequest"]["Item"] for r in requests]
    client = table.client
    for start in range(0, len(items), 25):
        client.batch_write_item(RequestItems={table.name: [
            {"PutRequest": {"Item": i}} for i in items[start:start + 25]]})
    return items


@pytest.fixture
def shop(backend: str | None) -> Iterator[list[dict[str, Any]]]:
    with use_tables(catalog, endpoint_url=backend, name_suffix=worker_suffix()):
        yield load(catalog, "ProductCatalog")


def raw_scan(table: Table, **params: Any) -> list[dict[str, Any]]:
    client = table.client
    items: list[dict[str, Any]] = []
    request: dict[str, Any] = {"TableName": table.name, **params}
    while True:
        out = client.scan(**request)
        items += out["Items"]
        if "LastEvaluatedKey" not in out:
            return items
        request["ExclusiveStartKey"] = out["LastEvaluatedKey"]


def test_number_keyed_product_catalog(shop: list[dict[str, Any]]) -> None:
    s = Session(catalog)
    book = s.get(Product, Id=103)
    raw = catalog.client.get_item(TableName=catalog.name, Key={"Id": {"N": "103"}})
    assert book is not None and book.Title == raw["Item"]["Title"]["S"]
    assert book.Authors == ["Author1", "Author2"] and book.InPublication is False
    assert [p.Id if p else None for p in s.get_many(Product, [{"Id": 205}, {"Id": 999},
                                                              {"Id": 101}])] == [205, None, 101]
    cheap_bikes = s.scan(Product).filter(
        (F("ProductCategory") == "Bicycle") & (F("Price") < 300)).all()
    raw_bikes = raw_scan(catalog, FilterExpression="ProductCategory = :c AND Price < :p",
                         ExpressionAttributeValues={":c": {"S": "Bicycle"}, ":p": {"N": "300"}})
    assert sorted(p.Id for p in cheap_bikes) == sorted(int(i["Id"]["N"]) for i in raw_bikes) == [
        201, 202]
    assert s.scan(Product).count() == len(shop) == 8
    assert sorted(v["Title"] for v in s.scan(Product).filter(
        F("Color").contains("Green")).values("Title")) == ["19-Bike-203", "21-Bike-202"]
    s.update(Product, Id=101).add(Price=Decimal(3))
    s.commit()
    after = catalog.client.get_item(TableName=catalog.name, Key={"Id": {"N": "101"}})
    assert after["Item"]["Price"] == {"N": "5"} and "_type" not in after["Item"]


# -- an adjacency list with an inverted index (the labs' InvoiceAndBills) ------------------
invoices = Table("dynaorm-labs-adjacency", pk="PK", sk="SK", type_attribute=None,
                 indexes=[GSI("GSI_1", pk="SK", sk="PK")])


class Invoice(Entity):
    class Meta:
        table = invoices
        pk = "I#{invoice_id}"
        sk = "root"

    invoice_id: str
    InvoiceAmount: int
    InvoiceDate: str


class Bill(Entity):
    class Meta:
        table = invoices
        pk = "B#{bill_id}"
        sk = "root"

    bill_id: str
    BillAmount: int
    BillStatus: str


class Customer(Entity):
    class Meta:
        table = invoices
        pk = "C#{customer_id}"
        sk = "root"

    customer_id: str
    CustomerName: str


class InvoiceBill(Entity):
    """The edge invoice -> bill; the inverted index reads it bill -> invoices."""

    class Meta:
        table = invoices
        pk = "I#{invoice_id}"
        sk = "B#{bill_id}"
        indexes = {"GSI_1": ("B#{bill_id}", "I#{invoice_id}")}  # the table's own keys

    invoice_id: str
    bill_id: str
    BillAmountOnInvoice: int


class InvoiceCustomer(Entity):
    class Meta:
        table = invoices
        pk = "I#{invoice_id}"
        sk = "C#{customer_id}"
        indexes = {"GSI_1": ("C#{customer_id}", "I#{invoice_id}")}

    invoice_id: str
    customer_id: str
    CustomerSince: str


@pytest.fixture
def ledger(backend: str | None) -> Iterator[list[dict[str, Any]]]:
    with use_tables(invoices, endpoint_url=backend, name_suffix=worker_suffix()):
        yield load(invoices, "InvoiceAndBills")


def raw_partition(index: str | None, attr: str, value: str) -> list[dict[str, Any]]:
    params: dict[str, Any] = {
        "TableName": invoices.name, "KeyConditionExpression": "#k = :v",
        "ExpressionAttributeNames": {"#k": attr}, "ExpressionAttributeValues": {":v": s_(value)}}
    if index:
        params["IndexName"] = index
    return list(invoices.client.query(**params)["Items"])


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_adjacency_list_with_an_inverted_index(ledger: list[dict[str, Any]]) -> None:
    s = Session(invoices)
    # an invoice's whole partition: the invoice, its customer, its bills
    got = s.query(Invoice, InvoiceBill, InvoiceCustomer, invoice_id="1420").all()
    raw = raw_partition(None, "PK", "I#1420")
    assert [(type(x).__name__, x.model_dump().get("bill_id") or x.model_dump().get(
        "customer_id")) for x in got] == [
        ("InvoiceBill", "3392"), ("InvoiceBill", "3393"), ("InvoiceCustomer", "355"),
        ("Invoice", None)]
    assert len(got) == len(raw)
    # the inverted index: every invoice a bill is on, and every invoice of a customer
    on_bill = s.query(InvoiceBill, index="GSI_1", bill_id="3392").all()
    raw_bill = raw_partition("GSI_1", "SK", "B#3392")
    assert [(e.invoice_id, e.BillAmountOnInvoice) for e in on_bill] == [
        (i["PK"]["S"][2:], int(i["BillAmountOnInvoice"]["N"])) for i in raw_bill] == [
        ("1420", 600), ("1421", 400)]
    of_customer = s.query(InvoiceCustomer, index="GSI_1", customer_id="355").all()
    assert [e.invoice_id for e in of_customer] == ["1420", "1421"]
    bill = s.get(Bill, bill_id="3393")
    assert bill is not None and bill.BillStatus == "Default"
    assert s.get_many(Invoice, [{"invoice_id": e.invoice_id} for e in on_bill]) == [
        s.get(Invoice, invoice_id="1420"), s.get(Invoice, invoice_id="1421")]
    # the entities' "root" rows by scan, the rest of the table is edges
    roots = s.scan(Invoice).page()
    assert sorted(i.invoice_id for i in roots.items) == ["1420", "1421", "1422"]
    assert roots.skipped == 0  # every item has an entity
    assert s.scan(Customer).count() == 2
    # a new edge written by dynaorm is found through the inverted index like the lab's
    s.save(InvoiceBill(invoice_id="1422", bill_id="3392", BillAmountOnInvoice=5))
    s.commit()
    assert [i["PK"]["S"] for i in raw_partition("GSI_1", "SK", "B#3392")] == [
        "I#1420", "I#1421", "I#1422"]
