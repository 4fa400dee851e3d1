"""Published single-table designs mapped as they are (contract 18, "Mapping" and "No
pydantic error escapes a read"): a table with its own discriminator attribute, items that
hold a field only in their key, items that do not fit their class."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pydantic
import pytest

from dynaorm import GSI, DynaormError, Entity, ItemDecodeError, Table
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
