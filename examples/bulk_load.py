"""Loading a thousand entities into a table that already holds some, with DynamoDB's bulk
put items (``StartBulkPutItems``), through the model's rules.

Customers have a unique e-mail (a guard item each) and orders are versioned (a latest copy
and a version row each): a plain bulk put would leave owners without guards, guards
without owners and duplicate e-mails. ``jobs.load`` renders each entity's rows as ``save``
would write them, each conditioned on a free key, lets DynamoDB load them from S3, and
reads the failure report back: the customer whose e-mail is taken gets a
``UniqueConstraintError`` naming ``email``, the one whose key is taken an
``ItemExistsError``, and neither leaves a row behind (``dynaorm check`` is clean). Then a
filtered export: one customer's orders only, the filter built from the model.

S3 is moto's, in process; the bulk API is dynaorm's emulator of it (DynamoDB Local has
none): on DynamoDB itself, give an S3 bucket of yours and nothing else changes.

Run: ``python examples/bulk_load.py [--endpoint-url URL]``
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime

from _support import run
from moto import mock_aws

from dynaorm import Entity, RequestError, Session, Table, Versioned, jobs
from dynaorm.jobs.checking import check_table
from dynaorm.protocol.steps import call
from dynaorm.testing import moto_backend, s3_factory

shop = Table("dynaorm-example-load")


class Customer(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "PROFILE"
        unique = ("email",)

    customer_id: str
    email: str
    name: str = ""


class Order(Versioned):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "ORDER#{order_id}"

    customer_id: str
    order_id: str
    total: int = 0
    placed: datetime


def source() -> list[Entity]:
    """What an upstream system hands over: 100 customers with three orders each, one of
    them under a taken e-mail, one at a taken key."""
    out: list[Entity] = []
    for n in range(100):
        out.append(Customer(customer_id=f"c{n:04d}", email=f"c{n:04d}@example.com",
                            name=f"Customer {n}"))
        out += [Order(customer_id=f"c{n:04d}", order_id=f"o{k}", total=10 * k + n,
                      placed=datetime(2026, 5, 1, tzinfo=UTC)) for k in range(3)]
    out[0] = Customer(customer_id="c0000", email="ada@example.com", name="twice Ada")
    out.append(Customer(customer_id="legacy-1", email="new@example.com"))
    return out


def main() -> None:
    with mock_aws(), moto_backend(), run(shop, "a bulk load through the rules") as db:
        s3_factory()().create_bucket(Bucket="example-loads")
        s = Session(shop)
        s.save(Customer(customer_id="ada", email="ada@example.com", name="Ada"))
        s.save(Customer(customer_id="legacy-1", email="old@example.com"))
        s.commit()

        print(">>> jobs.load(shop, source(), s3=\"s3://example-loads/shop\")")
        report = jobs.load(shop, source(), s3="s3://example-loads/shop", name="first",
                           poll=0)
        for line in report.lines():
            print(f"    {line.strip()}")
        for failure in report.failures:
            print(f"    {type(failure.error).__name__} for {failure.key['pk']}: "
                  f"field {getattr(failure.error, 'field', None)!r}")
        print(f"check: {len(check_table(shop).problems)} problem(s)")
        print(f"items: {len(db.scan_raw())} (the 2 customers before: 4 with their guards; "
              "99 customers and 300 orders loaded: 798)")
        print(f"c0001's orders: {len(s.query(Order, customer_id='c0001').all())}")
        again = jobs.load(shop, source(), s3="s3://example-loads/shop", name="first", poll=0)
        print(f"run again with the same name: {again.loaded} loaded, "
              f"{len(again.operations)} operation (nothing sent again)")

        try:  # (an export needs point-in-time recovery; DynamoDB Local keeps none)
            shop.db.driver.run(call("UpdateContinuousBackups", {
                "TableName": shop.name,
                "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}))
        except RequestError as exc:
            if exc.code != "UnknownOperationException":
                raise
        out = tempfile.mkdtemp()
        print(">>> jobs.export(shop, out, entities=[Order], scope={\"customer_id\": "
              "\"c0042\"}, start_export=...)")
        exported = jobs.run_local(jobs.export(
            shop, out, entities=[Order], scope={"customer_id": "c0042"},
            start_export="s3://example-loads/exports", poll=0))
        print(f"    {exported.rows} from an export of {exported.scanned} items")


if __name__ == "__main__":
    main()
