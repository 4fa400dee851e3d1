#!/usr/bin/env python
"""Entities through a KEYS_ONLY index against the same query through an ALL index (issue 10).

On DynamoDB Local (started here the way the test suite starts it), ``--items`` orders of
one customer are written to a table with two GSIs over the same keys: ``keys``
(``KEYS_ONLY``) and ``full`` (``ALL``). A query of entities through ``keys`` returns whole
entities: dynaorm reads the index, then the items by key (``BatchGetItem``, 100 a
request), in the query's order. Through ``full`` the index already holds everything.

For each (all results, and the first ``--limit``), side by side: wall time (median of
``--repeats`` alternating runs), the requests sent by operation and the items DynamoDB
read (``ScannedCount`` of the queries plus the items the batch gets returned), counted by a
botocore ``after-call`` handler on the client both send through. Raw botocore doing the
same by hand (query the KEYS_ONLY index, then ``batch_get_item``; or one query of the ALL
index) is the reference.

    python benchmarks/projections.py [--items 500] [--limit 25] [--repeats 7]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dynaorm import GSI, Entity, Session, Table
from dynaorm.testing import use_tables
from tests.support.ddb_local import DynamoDBLocal

table = Table("dynaorm-bench-proj", indexes=[
    GSI("keys", pk="kpk", sk="ksk", projection="KEYS_ONLY"),
    GSI("full", pk="fpk", sk="fsk", projection="ALL"),
])


class Order(Entity):
    """An order, reachable by customer through both indexes."""

    class Meta:
        table = table
        pk = "ORDER#{order_id}"
        sk = "O"
        indexes = {"keys": ("CUST#{customer}", "{created}#{order_id}"),
                   "full": ("CUST#{customer}", "{created}#{order_id}")}

    order_id: str
    customer: str
    created: str
    status: str
    item_name: str
    total: int


class Tally:
    """Requests by operation and items read: a botocore ``after-call`` handler on the
    table's client, which dynaorm and the raw botocore reader both send through."""

    def __init__(self) -> None:
        self.ops: Counter[str] = Counter()
        self.read = 0

    def __call__(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        self.ops[model.name] += 1
        if model.name == "Query":
            self.read += int(parsed.get("ScannedCount", 0))
        elif model.name == "BatchGetItem":
            self.read += sum(len(v) for v in parsed.get("Responses", {}).values())

    def take(self) -> tuple[dict[str, int], int]:
        out = (dict(self.ops), self.read)
        self.ops, self.read = Counter(), 0
        return out


def raw_reader(client: Any, name: str, index: str, limit: int | None) -> Callable[[], int]:
    """The same read by hand with raw botocore (items returned)."""
    def run() -> int:
        request: dict[str, Any] = {
            "TableName": name, "IndexName": index,
            "KeyConditionExpression": "#p = :p",
            "ExpressionAttributeNames": {"#p": "kpk" if index == "keys" else "fpk"},
            "ExpressionAttributeValues": {":p": {"S": "CUST#c1"}}}
        if limit:
            request["Limit"] = limit
        items: list[dict[str, Any]] = []
        while True:
            out = client.query(**request)
            items.extend(out["Items"])
            start = out.get("LastEvaluatedKey")
            if not start or (limit and len(items) >= limit):
                break
            request["ExclusiveStartKey"] = start
        if index == "full":
            return len(items)
        got = 0
        keys = [{"pk": i["pk"], "sk": i["sk"]} for i in items]
        for at in range(0, len(keys), 100):
            pending: dict[str, Any] = {name: {"Keys": keys[at:at + 100]}}
            while pending:
                out = client.batch_get_item(RequestItems=pending)
                got += len(out["Responses"].get(name, []))
                pending = out.get("UnprocessedKeys") or {}
        return got
    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=500)
    parser.add_argument("--limit", type=int, default=25)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    tally = Tally()
    results: dict[str, Any] = {}
    with DynamoDBLocal() as ddb, use_tables(table, endpoint_url=ddb.endpoint_url) as db:
        db.session().save_many([
            Order(order_id=f"o{i:05d}", customer="c1", created=f"2024-{1 + i % 12:02d}-"
                  f"{1 + i % 28:02d}", status=("open", "paid")[i % 2],
                  item_name=f"widget {i % 97}", total=i) for i in range(args.items)])
        db.table.wire = "botocore"  # tallied by a hook on the botocore client
        client = db.table.client
        client.meta.events.register("after-call.dynamodb", tally)
        cases: dict[str, Callable[[], int]] = {}
        for label, limit in (("all", None), (f"first {args.limit}", args.limit)):
            for index in ("keys", "full"):
                def run(index: str = index, limit: int | None = limit) -> int:
                    q = Session(table).query(Order, index=index, customer="c1")
                    return len((q.limit(limit) if limit else q).all())
                cases[f"dynaorm {index} {label}"] = run
                cases[f"botocore {index} {label}"] = raw_reader(client, table.name, index,
                                                                limit)
        times: dict[str, list[float]] = {k: [] for k in cases}
        for name, fn in cases.items():  # once untimed: check and count requests
            tally.take()
            n = fn()
            want = args.items if "all" in name else args.limit
            assert n == want, (name, n)
            ops, read = tally.take()
            results[name] = {"items": n, "requests": ops, "read": read}
        for r in range(args.repeats):
            order = list(cases.items())
            for name, fn in order[r % len(order):] + order[:r % len(order)]:
                start = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - start)
    for name in cases:
        results[name]["ms"] = statistics.median(times[name]) * 1e3
    print(f"{args.items} orders of one customer, DynamoDB Local, wall time median of "
          f"{args.repeats}; 'vs ALL': the same read through the ALL index")
    print(f"{'read':<26}{'ms':>8}{'vs ALL':>8}{'requests':>30}{'items read':>12}")
    for name in cases:
        r = results[name]
        sent = ", ".join(f"{k} {v}" for k, v in sorted(r["requests"].items()))
        full = results[name.replace(" keys ", " full ")]
        print(f"{name:<26}{r['ms']:>8.1f}{r['ms'] / full['ms']:>7.2f}x{sent:>30}"
              f"{r['read']:>12}")
    if args.json:
        args.json.write_text(json.dumps({"results": results, "times": times}, indent=2))


if __name__ == "__main__":
    main()
