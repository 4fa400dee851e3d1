#!/usr/bin/env python
"""Scale (issue 9), on DynamoDB Local: a cold scatter-gather query, and ``save_many``.

- **Cold scatter query**: the first query of a GSI partition sharded over 16 (``Meta.shards``:
  16 Query requests, sent in parallel and merged) on a *fresh* table object (``connect()``
  drops its transport, so the botocore session, client and connections are made anew),
  against one cold botocore client (a new botocore session, as a new process has) and one
  query of the same index partition unsharded. Wall time, median of ``--repeats``
  alternating runs. Target: <= 2x.
- **save_many**: 10,000 items with ``concurrency=4`` against ``concurrency=1`` (BatchWriteItem
  of 25, 4 requests in flight vs 1), wall time, median of ``--repeats`` alternating runs.
  Target: >= 1.5x the throughput. DynamoDB Local is warmed up first (its JIT makes the
  first runs several times slower), and the same items sent as hand-built requests through
  one raw botocore client from 4 threads vs 1 give the machine's ceiling.
- **Memory of .all()**: measured by ``benchmarks/memory.py``; its figure is printed here
  when ``--memory-json`` names the JSON that ``memory.py --json`` wrote.

    python benchmarks/scale.py [--items 10000] [--repeats 5] [--memory-json build/bench/memory.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import botocore.config
import botocore.session

from dynaorm import GSI, Entity, Session, Table
from dynaorm.testing import use_tables
from tests.support.ddb_local import DUMMY_ACCESS_KEY, DUMMY_REGION, DUMMY_SECRET_KEY, DynamoDBLocal

SHARDS = 16
SCATTER_ITEMS = 320
TARGET_COLD = 2.0
TARGET_SAVE_MANY = 1.5
table = Table("dynaorm-bench-scale", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class Ticket(Entity):
    """Open tickets spread over 16 partitions of gsi1."""

    class Meta:
        table = table
        pk = "TICKET#{ticket_id}"
        sk = "T"
        indexes = {"gsi1": ("ST#{status}#{shard}", "{created}#{ticket_id}")}
        shards = {"gsi1": SHARDS}

    ticket_id: str
    status: str
    created: str


class Row(Entity):
    """What save_many writes."""

    class Meta:
        table = table
        pk = "ROW#{batch}"
        sk = "R#{row_id}"

    batch: str
    row_id: str
    title: str
    amount: int


def cold_scatter(url: str) -> tuple[float, int, float, float]:
    """Seconds for a fresh table's first scatter query, the items it returned, the seconds
    its client took to make, and the seconds of the same query again (warm)."""
    start = time.perf_counter()
    table.connect(url)
    _ = table.client
    made = time.perf_counter()
    got = Session(table).query(Ticket, index="gsi1", status="open").all()
    end = time.perf_counter()
    Session(table).query(Ticket, index="gsi1", status="open").all()
    return end - start, len(got), made - start, time.perf_counter() - end


def cold_botocore(url: str, name: str) -> tuple[float, int, float]:
    """Seconds for one cold botocore client (new session) and one query, its count, and
    the seconds the client took to make."""
    start = time.perf_counter()
    session = botocore.session.get_session()
    client: Any = session.create_client(
        "dynamodb", DUMMY_REGION, endpoint_url=url, aws_access_key_id=DUMMY_ACCESS_KEY,
        aws_secret_access_key=DUMMY_SECRET_KEY,
        config=botocore.config.Config(parameter_validation=False))
    made = time.perf_counter()
    out = client.query(TableName=name, IndexName="gsi1",
                       KeyConditionExpression="gsi1pk = :p",
                       ExpressionAttributeValues={":p": {"S": "ST#open#0"}})
    return time.perf_counter() - start, len(out["Items"]), made - start


def save_many_seconds(url: str, items: int, concurrency: int, run: int) -> float:
    rows = [Row(batch=f"b{run}-{concurrency}", row_id=f"r{i:06d}", title=f"row {i}",
                amount=i) for i in range(items)]
    table.connect(url)
    s = Session(table)
    s.save_many(rows[:25], concurrency=1)  # the client and a connection exist already
    start = time.perf_counter()
    s.save_many(rows, concurrency=concurrency)
    return time.perf_counter() - start


def raw_batches_seconds(url: str, items: int, threads: int, run: int) -> float:
    """The machine's ceiling: the same items as hand-built BatchWriteItem requests of 25
    through one plain botocore client, ``threads`` requests in flight vs 1 (no retries of
    unprocessed items are needed on DynamoDB Local)."""
    from concurrent.futures import ThreadPoolExecutor

    client = botocore.session.get_session().create_client(
        "dynamodb", endpoint_url=url, region_name=DUMMY_REGION,
        aws_access_key_id=DUMMY_ACCESS_KEY, aws_secret_access_key=DUMMY_SECRET_KEY,
        config=botocore.config.Config(max_pool_connections=16))
    batch = f"raw{run}-{threads}"

    def put(i: int) -> dict[str, Any]:
        return {"PutRequest": {"Item": {
            "pk": {"S": f"ROW#{batch}"}, "sk": {"S": f"R#r{i:06d}"}, "_type": {"S": "Row"},
            "batch": {"S": batch}, "row_id": {"S": f"r{i:06d}"}, "title": {"S": f"row {i}"},
            "amount": {"N": str(i)}}}}

    requests = [[put(i) for i in range(start, min(start + 25, items))]
                for start in range(0, items, 25)]

    def send(writes: list[dict[str, Any]]) -> None:
        out = client.batch_write_item(RequestItems={table.name: writes})
        assert not out.get("UnprocessedItems"), "unprocessed items"

    send(requests[0])  # the client and a connection exist already
    start = time.perf_counter()
    with ThreadPoolExecutor(threads) as pool:
        list(pool.map(send, requests))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--memory-json", type=Path)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    figures: dict[str, Any] = {k: [] for k in (
        "cold_dynaorm", "cold_dynaorm_client", "warm_dynaorm", "cold_botocore",
        "cold_botocore_client", "save_many_1", "save_many_4", "raw_1", "raw_4")}
    with DynamoDBLocal() as ddb, use_tables(table, endpoint_url=ddb.endpoint_url) as db:
        url = ddb.endpoint_url
        db.session().save_many([Ticket(ticket_id=f"t{i:04d}", status="open",
                                       created=f"2024-01-{1 + i % 28:02d}")
                                for i in range(SCATTER_ITEMS)])
        cold_scatter(url)  # the first of all pays imports and class set-up: not counted
        cold_botocore(url, db.table.name)
        for _ in range(args.repeats):
            seconds, n, client, warm = cold_scatter(url)
            assert n == SCATTER_ITEMS, n
            figures["cold_dynaorm"].append(seconds)
            figures["cold_dynaorm_client"].append(client)
            figures["warm_dynaorm"].append(warm)
            seconds, n, client = cold_botocore(url, db.table.name)
            assert n > 0
            figures["cold_botocore"].append(seconds)
            figures["cold_botocore_client"].append(client)
        # DynamoDB Local's JIT makes its first thousands of writes several times slower:
        # warm it up first, so that neither concurrency pays for it (not counted)
        for run in range(2):
            save_many_seconds(url, args.items, 4, 100 + run)
        for run in range(args.repeats):
            for c in ((1, 4) if run % 2 == 0 else (4, 1)):
                figures[f"save_many_{c}"].append(save_many_seconds(url, args.items, c, run))
                figures[f"raw_{c}"].append(raw_batches_seconds(url, args.items, c, run))
    med = {k: statistics.median(v) for k, v in figures.items()}
    cold = med["cold_dynaorm"] / med["cold_botocore"]
    speedup = med["save_many_1"] / med["save_many_4"]
    ceiling = med["raw_1"] / med["raw_4"]
    print(f"DynamoDB Local, wall time, median of {args.repeats}")
    print(f"first scatter query over {SHARDS} shards ({SCATTER_ITEMS} items), fresh Table: "
          f"{med['cold_dynaorm'] * 1e3:.1f} ms (client {med['cold_dynaorm_client'] * 1e3:.1f}"
          f" ms; the same query warm: {med['warm_dynaorm'] * 1e3:.1f} ms)")
    print(f"one cold botocore client + one query:                  "
          f"{med['cold_botocore'] * 1e3:.1f} ms (client "
          f"{med['cold_botocore_client'] * 1e3:.1f} ms)")
    print(f"  ratio {cold:.2f}x (target <= {TARGET_COLD}x: "
          f"{'met' if cold <= TARGET_COLD else 'NOT met'})")
    print(f"save_many of {args.items}: concurrency=1 {med['save_many_1']:.2f} s "
          f"({args.items / med['save_many_1']:.0f} items/s), concurrency=4 "
          f"{med['save_many_4']:.2f} s ({args.items / med['save_many_4']:.0f} items/s)")
    print(f"  speed-up {speedup:.2f}x (target >= {TARGET_SAVE_MANY}x: "
          f"{'met' if speedup >= TARGET_SAVE_MANY else 'NOT met'})")
    print(f"  the machine's ceiling: raw botocore batches, 4 threads vs 1: {ceiling:.2f}x "
          f"({med['raw_1']:.2f} s vs {med['raw_4']:.2f} s)")
    if args.memory_json and args.memory_json.exists():
        mem = json.loads(args.memory_json.read_text())
        print(f"peak memory of .all() over {mem['items']} items (benchmarks/memory.py): "
              f"{mem['ratio']:.2f}x plain pydantic objects (target <= 1.5x)")
    else:
        print("peak memory of .all(): run benchmarks/memory.py (target <= 1.5x pydantic)")
    if args.json:
        args.json.write_text(json.dumps({"runs": figures, "medians": med}, indent=2))


if __name__ == "__main__":
    main()
