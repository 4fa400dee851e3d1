"""The analytics lake: a single table kept as one Apache Iceberg table per entity, queried
with DuckDB and Polars.

``jobs.export(shop, staging, format="iceberg", catalog=..., namespace="shop")`` runs the
export's tasks (they write typed Parquet data files under ``staging``), then commits each
entity as the Iceberg table ``shop.<type name>`` (``shop.Order_history``: its version rows),
one commit a table. Run again, it replaces the rows in one commit (readers see the old
rows or the new); a job applied already changes nothing. The catalog is pyiceberg's SQL
catalog on a local sqlite file here; on AWS it is Glue or S3 Tables (docs/guide/lake.md),
fed by DynamoDB's incremental exports. Needs ``dynaorm[lake]`` (pyiceberg, pyarrow), and
DuckDB and Polars to query.

Run: ``python examples/lake.py [--endpoint-url URL]``
"""

from __future__ import annotations

import tempfile
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import duckdb
import polars
from _support import run
from pydantic import Field
from pyiceberg.catalog.sql import SqlCatalog

from dynaorm import Entity, Session, Table, Versioned, jobs

shop = Table("dynaorm-example-lake")


class Customer(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "PROFILE"
        unique = ("email",)

    customer_id: str
    email: str
    country: str


class Order(Versioned):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "ORDER#{order_id}"

    customer_id: str
    order_id: str
    total: Decimal = Field(max_digits=10, decimal_places=2)
    placed: datetime
    tags: set[str] = set()


def main() -> None:
    with run(shop, "a single table as one Iceberg table per entity"):
        s = Session(shop)
        for n, country in enumerate(["FR", "FR", "DE"]):
            s.save(Customer(customer_id=f"c{n}", email=f"c{n}@example.com", country=country))
        for n in range(6):
            s.save(Order(customer_id=f"c{n % 3}", order_id=f"o{n}", total=Decimal("9.50") * n,
                         placed=datetime(2026, 1, n + 1, tzinfo=UTC),
                         tags={"gift"} if n % 2 else set()))
        s.commit()

        where = Path(tempfile.mkdtemp())
        (where / "warehouse").mkdir()
        catalog = SqlCatalog("shop", uri=f"sqlite:///{where}/catalog.db",
                             warehouse=f"file://{where}/warehouse")

        def export(staging: str) -> None:
            print(f">>> jobs.run_local(jobs.export(shop, {staging!r}, format='iceberg', ...))")
            report = jobs.run_local(jobs.export(
                shop, where / staging, format="iceberg", catalog=catalog, namespace="shop",
                segments=2, history=True))
            for name, rows in sorted(report.tables.items()):
                print(f"    {name}: {rows} rows committed")
        export("first")
        print(f"tables: {sorted('.'.join(t) for t in catalog.list_tables('shop'))}")
        fields = catalog.load_table("shop.Order").schema().fields
        types = {f.name: str(f.field_type) for f in fields}
        print(f"Order columns: {types}")

        paid = s.get(Order, customer_id="c0", order_id="o3")
        assert paid is not None
        paid.total = Decimal("99.99")  # (a new version: the history table gains a row)
        s.save(paid)
        s.delete(Customer, customer_id="c2")
        s.commit()
        export("second")

        orders = catalog.load_table("shop.Order")
        print(f"Order snapshots: {len(orders.history())}, the last applied "
              f"{orders.properties['dynaorm.kind']} export")
        db = duckdb.connect()
        db.register("orders", orders.scan().to_arrow())
        db.register("customers", catalog.load_table("shop.Customer").scan().to_arrow())
        print(">>> DuckDB: revenue by country")
        for country, revenue in db.execute(
                "SELECT c.country, sum(o.total) FROM orders o JOIN customers c "
                "USING (customer_id) GROUP BY c.country ORDER BY c.country").fetchall():
            print(f"    {country} {revenue}")
        versions = polars.scan_iceberg(catalog.load_table("shop.Order_history")).filter(
            polars.col("order_id") == "o3").select("version", "total").sort("version").collect()
        print(f"Polars: o3's history {versions.rows()}")


if __name__ == "__main__":
    main()
