"""Published single-table designs mapped as they are (contract 18, "Mapping" and "No
pydantic error escapes a read"): a table with its own discriminator attribute, items that
hold a field only in their key, items that do not fit their class."""

from __future__ import annotations

import json
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import pydantic
import pytest

from dynaorm import GSI, DynaormError, Entity, ItemDecodeError, Table
from dynaorm.schema.entity import spec_of
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.recording import Requests

crm = Table("mapping-crm", pk="PK", sk="SK", type_attribute="EntityType",
            indexes=[GSI("GSI1", pk="GSI1PK", sk="GSI1SK")])


class Customer(Entity):
    class Meta:
        table = crm
        type_name = "customer"
        pk = "CUSTOMER#{customer_id}"
        sk = "METADATA"

    customer_id: str
    name: str


class Ticket(Entity):
    class Meta:
        table = crm
        type_name = "ticket"
        pk = "CUSTOMER#{customer_id}"
        sk = "TICKET#{ticket_id}"

    customer_id: str
    ticket_id: str
    subject: str
    priority: int = 0


#: items as the design's own loader writes them: the discriminator, fields only in keys
RAW: list[dict[str, Any]] = [
    {"PK": {"S": "CUSTOMER#c1"}, "SK": {"S": "METADATA"}, "EntityType": {"S": "customer"},
     "name": {"S": "Ann"}},
    {"PK": {"S": "CUSTOMER#c1"}, "SK": {"S": "TICKET#t1"}, "EntityType": {"S": "ticket"},
     "subject": {"S": "login"}},
    {"PK": {"S": "CUSTOMER#c1"}, "SK": {"S": "TICKET#t2"}, "EntityType": {"S": "ticket"},
     "subject": {"S": "billing"}, "priority": {"N": "2"}},
]
#: an item of the right type that does not fit its class (a list where an int belongs)
BAD: dict[str, Any] = {
    "PK": {"S": "CUSTOMER#c1"}, "SK": {"S": "TICKET#t9"}, "EntityType": {"S": "ticket"},
    "subject": {"S": "broken"}, "priority": {"L": []}}


@pytest.fixture
def db(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(crm, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        for item in RAW:
            crm.client.put_item(TableName=crm.name, Item=item)
        yield tb


def test_key_fields_are_filled_back_with_a_type_attribute(db: TestBackend) -> None:
    s = db.session(crm)
    ann = s.get(Customer, customer_id="c1")  # 0.2: a raw ValidationError
    assert ann == Customer(customer_id="c1", name="Ann")
    got = s.query(Customer, Ticket, customer_id="c1").all()
    assert [(type(x).__name__, getattr(x, "ticket_id", None)) for x in got] == [
        ("Customer", None), ("Ticket", "t1"), ("Ticket", "t2")]
    assert sorted(t.ticket_id for t in s.scan(Ticket).all()) == ["t1", "t2"]
    assert [t.ticket_id for t in s.get_many(Ticket, [
        {"customer_id": "c1", "ticket_id": "t2"}, {"customer_id": "c1", "ticket_id": "t1"}])
        if t is not None] == ["t2", "t1"]
    t1 = s.get(Ticket, customer_id="c1", ticket_id="t1")
    assert t1 is not None
    t1.priority = 5  # a loaded object saves as usual
    s.save(t1)
    s.commit()
    again = s.get(Ticket, customer_id="c1", ticket_id="t1", consistent=True)
    assert again is not None and (again.priority, again.subject) == (5, "login")


def test_no_validation_error_escapes_a_read(db: TestBackend) -> None:
    crm.client.put_item(TableName=crm.name, Item=BAD)
    s = db.session(crm)
    key = {"PK": "CUSTOMER#c1", "SK": "TICKET#t9"}
    reads = [
        lambda: s.get(Ticket, customer_id="c1", ticket_id="t9"),
        lambda: s.get_many(Ticket, [{"customer_id": "c1", "ticket_id": "t9"}]),
        lambda: s.query(Ticket, customer_id="c1").all(),
        lambda: s.query(Customer, Ticket, customer_id="c1").page(),
        lambda: s.scan(Ticket).all(),
    ]
    for read in reads:
        with pytest.raises(ItemDecodeError, match=r"TICKET#t9.*does not fit Ticket") as err:
            read()
        assert (err.value.entity, err.value.key) == (Ticket, key)
        assert isinstance(err.value.__cause__, pydantic.ValidationError)
    with pytest.raises(pydantic.ValidationError):  # objects the caller builds: pydantic's
        Ticket(customer_id="c1", ticket_id="t3", subject="x", priority=[])  # type: ignore[arg-type]


def test_a_key_field_named_version_on_a_plain_entity(db: TestBackend) -> None:
    class Release(Entity):  # a plain entity: "version" is one of its key fields
        class Meta:
            table = crm
            type_name = "release"
            pk = "PRODUCT#{product}"
            sk = "RELEASE#{version}"

        product: str
        version: str
        notes: str = ""

    s = db.session(crm)
    s.save(Release(product="p", version="1.2", notes="first"))
    s.commit()
    got = s.get(Release, product="p", version="1.2")  # 0.2: "not versioned; no version"
    assert got == Release(product="p", version="1.2", notes="first")
    assert s.get(Release, product="p", version="9.9") is None
    assert [r.version for r in s.query(Release, product="p").all()] == ["1.2"]


class Invoice(Entity):
    class Meta:
        table = crm
        type_name = "invoice"
        pk = "CUSTOMER#{customer_id}"
        sk = "INVOICE#{doc_id}"
        indexes = {"GSI1": ("ACCOUNT#{account}", "DATE#{day}")}

    customer_id: str
    doc_id: str
    account: str
    day: str


class Shipment(Entity):
    class Meta:
        table = crm
        type_name = "shipment"
        pk = "CUSTOMER#{customer_id}"
        sk = "SHIPMENT#{doc_id}"
        indexes = {"GSI1": ("ACCOUNT#{account}", "DATE#{day}")}

    customer_id: str
    doc_id: str
    account: str
    day: str


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_one_key_condition_over_types_sharing_its_template(db: TestBackend) -> None:
    s = db.session(crm)
    for n, day in enumerate(["2024-01-05", "2024-02-10", "2024-03-15"]):
        s.save(Invoice(customer_id="c1", doc_id=f"i{n}", account="a", day=day))
        s.save(Shipment(customer_id="c1", doc_id=f"s{n}", account="a", day=day))
    s.commit()
    rec = Requests(crm)
    got = s.query(Invoice, Shipment, index="GSI1", account="a").between(
        {"day": "2024-02-01"}, {"day": "2024-03-31"}).all()  # 0.2: "need a single type"
    assert sorted((type(x).__name__, x.doc_id) for x in got) == [
        ("Invoice", "i1"), ("Invoice", "i2"), ("Shipment", "s1"), ("Shipment", "s2")]
    assert len(rec.of("Query")) == 1  # one request, not one per type
    assert s.query(Invoice, Shipment, index="GSI1", account="a").gte(
        day="2024-03-01").count() == 2
    with pytest.raises(DynaormError, match="sort-key templates to agree"):
        s.query(Invoice, Shipment, customer_id="c1").gte(doc_id="i1").all()


# -- published designs stored exactly as their authors store them (contract 21) -------------
LABS = Path(__file__).resolve().parents[1] / "support" / "data" / "labs"
#: the crm design above, as its authors store it: no revision of dynaorm's
crm_exact = Table("mapping-crm-exact", pk="PK", sk="SK", type_attribute="EntityType",
                  revision_attribute=None)
#: the AWS labs' adjacency list and product catalog: no discriminator, no revision
ledger = Table("mapping-labs-ledger", pk="PK", sk="SK", type_attribute=None,
               revision_attribute=None, indexes=[GSI("GSI_1", pk="SK", sk="PK")])
catalog = Table("mapping-labs-catalog", pk="Id", sk=None, key_types={"Id": "N"},
                type_attribute=None, revision_attribute=None)


class ExactCustomer(Entity):
    class Meta:
        table = crm_exact
        type_name = "customer"
        pk = "CUSTOMER#{customer_id}"
        sk = "METADATA"
        key_only = ("customer_id",)

    customer_id: str
    name: str


class ExactTicket(Entity):
    class Meta:
        table = crm_exact
        type_name = "ticket"
        pk = "CUSTOMER#{customer_id}"
        sk = "TICKET#{ticket_id}"
        key_only = ("customer_id", "ticket_id")

    customer_id: str
    ticket_id: str
    subject: str
    priority: int | None = None


class LabInvoice(Entity):
    class Meta:
        table = ledger
        pk = "I#{invoice_id}"
        sk = "root"
        key_only = ("invoice_id",)

    invoice_id: str
    InvoiceAmount: int
    InvoiceDate: str


class LabBill(Entity):
    class Meta:
        table = ledger
        pk = "B#{bill_id}"
        sk = "root"
        key_only = ("bill_id",)

    bill_id: str
    BillAmount: int
    BillStatus: str


class LabCustomer(Entity):
    class Meta:
        table = ledger
        pk = "C#{customer_id}"
        sk = "root"
        key_only = ("customer_id",)

    customer_id: str
    CustomerName: str


class LabInvoiceBill(Entity):
    class Meta:
        table = ledger
        pk = "I#{invoice_id}"
        sk = "B#{bill_id}"
        indexes = {"GSI_1": ("B#{bill_id}", "I#{invoice_id}")}  # the table's own keys
        key_only = ("invoice_id", "bill_id")

    invoice_id: str
    bill_id: str
    BillAmountOnInvoice: int


class LabInvoiceCustomer(Entity):
    class Meta:
        table = ledger
        pk = "I#{invoice_id}"
        sk = "C#{customer_id}"
        indexes = {"GSI_1": ("C#{customer_id}", "I#{invoice_id}")}
        key_only = ("invoice_id", "customer_id")

    invoice_id: str
    customer_id: str
    CustomerSince: str


class LabProduct(Entity):
    class Meta:
        table = catalog
        pk = "{Id}"

    Id: int
    Title: str
    ProductCategory: str
    Price: Decimal | None = None
    Authors: list[str] | None = None
    ISBN: str | None = None
    Dimensions: str | None = None
    InPublication: bool | None = None
    PageCount: int | None = None
    BicycleType: str | None = None
    Brand: str | None = None
    Description: str | None = None
    Color: set[str] | None = None


def _published(name: str) -> list[dict[str, Any]]:
    """A data file of the labs, in its BatchWriteItem shape: the items as published."""
    requests = json.loads((LABS / f"{name}.json").read_text())[name]
    return [r["PutRequest"]["Item"] for r in requests]


def _canonical(items: list[dict[str, Any]]) -> list[str]:
    """The items comparable as stored (a set's members in any order)."""
    return sorted(json.dumps({k: {t: sorted(v) if t in ("SS", "NS", "BS") else v
                                  for t, v in av.items()} for k, av in i.items()},
                             sort_keys=True, default=str) for i in items)


@pytest.mark.parametrize(("table", "published"), [
    (crm_exact, RAW), (ledger, _published("InvoiceAndBills")),
    (catalog, _published("ProductCatalog"))], ids=["crm", "adjacency", "catalog"])
def test_a_published_design_is_stored_exactly_as_published(
        backend: str | None, table: Table, published: list[dict[str, Any]]) -> None:
    """(0.6, contract 21) A design mapped with ``revision_attribute=None`` (and no type
    attribute, or its own) reads its published items, and dynaorm stores exactly those
    items again: saved anew, or loaded and changed (one attribute, nothing added)."""
    with use_tables(table, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        for item in published:
            table.client.put_item(TableName=table.name, Item=item)
        s = tb.session(table)
        objs = s.scan(*table.entities.values()).all()
        assert len(objs) == len(published)
        for item in published:
            table.client.delete_item(TableName=table.name, Key={
                a: item[a] for a in (table.pk, table.sk) if a})
        for obj in objs:
            s.save(type(obj).model_validate(obj.model_dump()))
            s.commit()
        assert _canonical(tb.scan_raw()) == _canonical(published)
        first, name = next((o, n) for o in s.scan(*table.entities.values()).all()
                           for n, f in type(o).model_fields.items()
                           if f.annotation is str and n not in spec_of(type(o)).key_only)
        setattr(first, name, "changed")
        s.save(first)
        s.commit()
        stored = tb.scan_raw()
        changed = [i for i in stored if i.get(name) == {"S": "changed"}]
        assert len(changed) == 1 and _canonical(stored) == _canonical(
            [{**i, name: {"S": "changed"}} if all(i[a] == changed[0][a] for a in (
                table.pk, table.sk) if a) else i for i in published])
