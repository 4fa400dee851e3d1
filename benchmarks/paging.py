#!/usr/bin/env python
"""Paging cost by cursor over 1, 4, 16 and 64 shards, against plain iteration.

On DynamoDB Local (started here the way the test suite starts it), one partition key of
``--items`` items is written sharded over N partitions of a GSI (``Meta.shards``), then read

- by iteration (``.page_size(P).all()``: every shard read to its end in requests of P,
  merged), and
- page by page through cursors (``.page_size(P).page(cursor)``, a fresh query per page, as
  a web handler would),

counting the requests sent and the items DynamoDB read (``ScannedCount``) per item
returned, with a botocore ``after-call`` handler on the real client. Targets (issue 9):
unsharded paging within 1.1x the requests of iteration; 16 shards within 2.5x the items
read. Also prints the longest cursor.

Usage::

    .venv/bin/python benchmarks/paging.py                 # 400 items, pages of 25
    .venv/bin/python benchmarks/paging.py --items 1000 --page 50 --json out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dynaorm import GSI, Entity, Session, Table
from dynaorm.testing import use_tables
from tests.support.ddb_local import DynamoDBLocal

SHARDS = (1, 4, 16, 64)
bench = Table("dynaorm-bench-paging", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


def entity(n: int) -> type[Entity]:
    """An entity whose status key is spread over ``n`` partitions (1: unsharded)."""

    class Order(Entity):
        class Meta:
            table = bench
            pk = f"S{n}#{{order_id}}"
            sk = "O"
            type_name = f"Order{n}"
            indexes = {"gsi1": ("ST#{status}#{shard}" if n > 1 else "ST#{status}",
                                "{created}#{order_id}")}
            if n > 1:
                shards = {"gsi1": n}

        order_id: str
        status: str
        created: str

    return Order


class Counter:
    def __init__(self, table: Table) -> None:
        self.requests = 0
        self.read = 0
        table.wire = "botocore"  # counted by a hook on the botocore client
        table.client.meta.events.register("after-call.dynamodb.Query", self._after)

    def _after(self, parsed: dict[str, Any], **_: Any) -> None:
        self.requests += 1
        self.read += int(parsed.get("ScannedCount", 0))

    def take(self) -> tuple[int, int]:
        out = (self.requests, self.read)
        self.requests = self.read = 0
        return out


def measure(s: Session, cls: type[Entity], status: str, page: int,
            counter: Counter) -> dict[str, Any]:
    counter.take()
    everything = s.query(cls, index="gsi1", status=status).page_size(page).all()
    it_requests, it_read = counter.take()
    got: list[Any] = []
    cursor: str | None = None
    pages = 0
    longest = 0
    while True:
        result = s.query(cls, index="gsi1", status=status).page_size(page).page(cursor)
        pages += 1
        got.extend(result.items)
        cursor = result.cursor
        if cursor is None:
            break
        longest = max(longest, len(cursor))
    pg_requests, pg_read = counter.take()
    assert got == everything, "paging returned other items than iteration"
    n = len(everything)
    return {"items": n, "pages": pages,
            "iterate_requests": it_requests, "iterate_read_per_item": it_read / n,
            "page_requests": pg_requests, "page_read_per_item": pg_read / n,
            "requests_ratio": pg_requests / it_requests, "read_ratio": pg_read / it_read,
            "requests_per_page": pg_requests / pages, "longest_cursor": longest}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=400)
    parser.add_argument("--page", type=int, default=25)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    classes = {n: entity(n) for n in SHARDS}
    results: dict[int, dict[str, Any]] = {}
    with DynamoDBLocal() as ddb, use_tables(bench, endpoint_url=ddb.endpoint_url) as db:
        s = db.session()
        for n, cls in classes.items():
            s.save_many([cls(order_id=f"o{i:05d}", status=f"open{n}",
                             created=f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}")
                         for i in range(args.items)])
        counter = Counter(db.table)
        for n, cls in classes.items():
            results[n] = measure(s, cls, f"open{n}", args.page, counter)
    print(f"{args.items} items, pages of {args.page}, DynamoDB Local")
    print(f"{'shards':>6} {'pages':>5} {'iter req':>8} {'page req':>8} {'req/page':>8} "
          f"{'read/item it':>12} {'read/item pg':>12} {'read ratio':>10} {'cursor':>6}")
    for n, r in results.items():
        print(f"{n:>6} {r['pages']:>5} {r['iterate_requests']:>8} {r['page_requests']:>8} "
              f"{r['requests_per_page']:>8.2f} {r['iterate_read_per_item']:>12.2f} "
              f"{r['page_read_per_item']:>12.2f} {r['read_ratio']:>10.2f} "
              f"{r['longest_cursor']:>6}")
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
