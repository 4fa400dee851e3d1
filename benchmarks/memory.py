#!/usr/bin/env python
"""Peak memory of loading 20,000 entities with ``.all()``, against plain pydantic objects.

One partition of ``--items`` orders is written to DynamoDB Local (started here the way the
test suite starts it; ``--engine moto`` uses moto in-process instead). Then, each under
``tracemalloc`` (peak of the block, after ``gc.collect()``), side by side in one process:

- **dynaorm**: ``Session.query(Order, customer=...).all()`` (the query, the pages as they
  arrive, the entities and their persisted snapshots; the list is kept until the peak is
  read);
- **pydantic**: the same 20,000 rows as plain ``pydantic.BaseModel`` objects with the same
  fields, each built from a fresh dict (``json.loads`` of the row, then ``model_validate``):
  the memory the loaded data itself needs, with nothing of a database client;
- **dynaorm, pages of 1000** (reference): the same with ``.page_size(1000)``. Most of what
  ``.all()`` holds beyond the objects is the response being parsed: botocore turns a 1 MB
  page into about 25 MB of Python objects (the JSON tree and its own parsed copy);
- **botocore + pydantic** (reference): raw botocore's query paginator, boto3's
  ``TypeDeserializer`` and ``model_validate`` (what a hand-written loader peaks at).

Target (issue 9): dynaorm's peak <= 1.5x the pydantic objects'.

    python benchmarks/memory.py [--items 20000] [--engine local|moto] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import tracemalloc
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from decimal import Decimal
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pydantic import BaseModel

from dynaorm import Entity, Table
from dynaorm.testing import TestBackend, moto_backend, use_tables

TARGET = 1.5
PAGE = 1000  # the reference row: requests of 1000 items instead of DynamoDB's 1 MB pages
table = Table("dynaorm-bench-memory")


class Order(Entity):
    """A typical row: two key fields, strings, an int, a decimal, a bool."""

    class Meta:
        table = table
        pk = "CUST#{customer}"
        sk = "ORDER#{order_id}"

    customer: str
    order_id: str
    status: str
    item_name: str
    quantity: int
    total: Decimal
    paid: bool
    created: str


class PlainOrder(BaseModel):
    """The same fields, as a plain pydantic model."""

    customer: str
    order_id: str
    status: str
    item_name: str
    quantity: int
    total: Decimal
    paid: bool
    created: str


def rows(n: int) -> list[dict[str, Any]]:
    """The ``n`` orders of customer c1, as plain dicts."""
    return [{"customer": "c1", "order_id": f"o{i:06d}", "status": ("open", "paid")[i % 2],
             "item_name": f"widget model {i % 97} in colour {i % 13}", "quantity": 1 + i % 9,
             "total": Decimal(f"{i % 500}.{i % 100:02d}"), "paid": bool(i % 2),
             "created": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}T10:{i % 60:02d}:00Z"}
            for i in range(n)]


def peak(fn: Callable[[], Any]) -> tuple[int, Any]:
    """(peak bytes allocated while ``fn`` runs, its result), the result kept alive."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        result = fn()
        _, top = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return top, result


@contextmanager
def engine(name: str) -> Iterator[TestBackend]:
    """Fresh tables on DynamoDB Local or in-process moto."""
    with ExitStack() as stack:
        if name == "moto":
            stack.enter_context(moto_backend())
            yield stack.enter_context(use_tables(table))
        else:
            from tests.support.ddb_local import DynamoDBLocal

            ddb = stack.enter_context(DynamoDBLocal())
            yield stack.enter_context(use_tables(table, endpoint_url=ddb.endpoint_url))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=20_000)
    parser.add_argument("--engine", choices=("local", "moto"), default="local")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    data = rows(args.items)
    lines = [json.dumps(r, default=str) for r in data]
    figures: dict[str, list[int]] = {k: [] for k in ("dynaorm", "dynaorm_pages", "pydantic",
                                                     "botocore")}
    with engine(args.engine) as db:
        db.session().save_many([Order.model_validate(r) for r in data], concurrency=4)
        session = db.session()
        client = db.table.client
        from boto3.dynamodb.types import TypeDeserializer

        deser = TypeDeserializer()

        def load_dynaorm() -> list[Order]:
            return session.query(Order, customer="c1").all()

        def load_dynaorm_pages() -> list[Order]:
            return session.query(Order, customer="c1").page_size(PAGE).all()

        def load_pydantic() -> list[PlainOrder]:
            return [PlainOrder.model_validate(json.loads(line)) for line in lines]

        def load_botocore() -> list[PlainOrder]:
            out = []
            pages = client.get_paginator("query").paginate(
                TableName=db.table.name, KeyConditionExpression="pk = :pk",
                ExpressionAttributeValues={":pk": {"S": "CUST#c1"}})
            for page in pages:
                for item in page["Items"]:
                    out.append(PlainOrder.model_validate(
                        {k: deser.deserialize(v) for k, v in item.items()}))
            return out

        loaders = {"dynaorm": load_dynaorm, "dynaorm_pages": load_dynaorm_pages,
                   "pydantic": load_pydantic, "botocore": load_botocore}
        for fn in loaders.values():  # warm caches (schemas, botocore models) untimed
            fn()
        for _ in range(args.repeats):
            for name, fn in loaders.items():
                top, result = peak(fn)
                assert len(result) == args.items, (name, len(result))
                figures[name].append(top)
                del result
    med = {k: statistics.median(v) for k, v in figures.items()}
    ratio = med["dynaorm"] / med["pydantic"]
    print(f"peak memory of loading {args.items} items ({args.engine}), "
          f"median of {args.repeats}")
    print(f"{'contender':<26}{'peak MB':>10}{'bytes/item':>12}{'vs pydantic':>13}")
    for name, label in (("dynaorm", "dynaorm .all()"),
                        ("dynaorm_pages", f".page_size({PAGE}).all()"),
                        ("pydantic", "pydantic objects"), ("botocore", "botocore + pydantic")):
        print(f"{label:<26}{med[name] / 1e6:>10.2f}{med[name] / args.items:>12.0f}"
              f"{med[name] / med['pydantic']:>12.2f}x")
    verdict = "met" if ratio <= TARGET else "NOT met"
    print(f"target: dynaorm <= {TARGET}x pydantic objects: {ratio:.2f}x ({verdict})")
    if args.json:
        args.json.write_text(json.dumps({"items": args.items, "engine": args.engine,
                                         "peaks": figures, "ratio": ratio}, indent=2))


if __name__ == "__main__":
    main()
