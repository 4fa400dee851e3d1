"""A single table exported as one typed Parquet dataset per entity, then queried with DuckDB
and Polars: no key templates re-implemented in SQL, no ``{'S': ...}`` in sight.

The table holds customers (a unique e-mail, so guard items; an encrypted note), versioned
orders (latest copies and version rows, nested order lines, a set of tags, an enum) and
an item no entity claims. ``jobs.export`` writes ``out/Customer/`` and ``out/Order/`` (and,
with ``history=True``, ``out/Order.history/``): latest copies only, never a guard, the
encrypted note left out unless asked for. Needs ``dynaorm[export]`` (pyarrow), and DuckDB
and Polars to query the result.

Run: ``python examples/export_datasets.py [--endpoint-url URL]``
"""

from __future__ import annotations

import enum
import tempfile
from datetime import UTC, datetime
from decimal import Decimal

import duckdb
import polars
from _support import run
from pydantic import BaseModel, Field

from dynaorm import Encrypted, Entity, Session, StaticKeyring, Table, Versioned, jobs
from dynaorm.protocol.steps import call

shop = Table("dynaorm-example-export", keyring=StaticKeyring(b"k" * 32, mac_key=b"m" * 32))


class Status(enum.Enum):
    OPEN = "open"
    PAID = "paid"


class Line(BaseModel):
    sku: str
    qty: int
    price: Decimal = Field(max_digits=10, decimal_places=2)


class Customer(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "PROFILE"
        unique = ("email",)

    customer_id: str
    email: str
    country: str
    note: Encrypted[str] = ""


class Order(Versioned):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}"
        sk = "ORDER#{order_id}"

    customer_id: str
    order_id: str
    status: Status = Status.OPEN
    placed: datetime
    lines: list[Line] = []
    tags: set[str] = set()


def main() -> None:
    with run(shop, "a single table as one typed Parquet dataset per entity"):
        s = Session(shop)
        for n, country in enumerate(["FR", "FR", "DE"]):
            s.save(Customer(customer_id=f"c{n}", email=f"c{n}@example.com", country=country,
                            note="pays late"))
        for n in range(6):
            s.save(Order(customer_id=f"c{n % 3}", order_id=f"o{n}",
                         placed=datetime(2026, 1, n + 1, tzinfo=UTC),
                         lines=[Line(sku="tea", qty=n + 1, price=Decimal("4.50"))],
                         tags={"gift"} if n % 2 else set()))
        s.commit()
        paid = s.get(Order, customer_id="c0", order_id="o0")
        assert paid is not None
        paid.status = Status.PAID  # (its second version: a version row beside the latest)
        s.save(paid)
        s.commit()
        shop.db.driver.run(call("PutItem", {"TableName": shop.name, "Item": {
            "pk": {"S": "LEGACY#1"}, "sk": {"S": "X"}, "_type": {"S": "legacy"}}}))

        out = tempfile.mkdtemp()
        print(">>> jobs.run_local(jobs.export(shop, out, segments=2, history=True))")
        report = jobs.run_local(jobs.export(shop, out, segments=2, history=True))
        for name, rows in sorted(report.rows.items()):
            print(f"    {name}: {rows} rows")
        print(f"    unclaimed: {report.unclaimed}, skipped (guards, version rows read as "
              f"history...): {report.skipped}")

        db = duckdb.connect()
        db.execute("SET TimeZone = 'UTC'")
        columns = [c[0] for c in db.execute(
            f"DESCRIBE SELECT * FROM '{out}/Customer/*.parquet'").fetchall()]
        print(f"Customer columns (the encrypted note left out): {columns}")
        query = f"""
            WITH lines AS (SELECT customer_id, unnest(lines) AS l
                           FROM '{out}/Order/*.parquet')
            SELECT c.country, count(*) AS lines, sum(l.qty * l.price) AS revenue
            FROM lines JOIN '{out}/Customer/*.parquet' c USING (customer_id)
            GROUP BY c.country ORDER BY c.country"""
        print(">>> DuckDB: order lines and revenue by country")
        for country, lines, revenue in db.execute(query).fetchall():
            print(f"    {country} {lines} {revenue}")
        history = db.execute(f"SELECT order_id, version, status FROM "
                             f"'{out}/Order.history/*.parquet' WHERE order_id = 'o0' "
                             "ORDER BY version").fetchall()
        print(f"o0's history: {history}")
        frame = polars.read_parquet(f"{out}/Order/*.parquet")
        gifts = frame.filter(polars.col("tags").list.contains("gift"))["order_id"].sort()
        print(f"Polars: gift orders {gifts.to_list()}")


if __name__ == "__main__":
    main()
