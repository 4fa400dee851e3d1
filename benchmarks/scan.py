#!/usr/bin/env python
"""Scan throughput and server-side counts on DynamoDB Local.

- scan: ``s.scan(Row).all()`` (entities decoded and validated), sequential and with
  segments, against boto3's ``Scan`` paginator with the same type filter and the same
  page size (raw items, nothing decoded): items per second. Two page sizes, each against
  the paginator at that size: dynaorm's iteration page (``Limit`` of 1,000, its default)
  and DynamoDB's own 1 MB pages (``.page_size(10**6)``; the paginator's default).
  Target (issue 10): >= 0.9x the paginator; through dynaorm's own wire (the default;
  issue 20): >= 2x the paginator. ``wire="botocore"`` is measured beside it.
- count: ``s.query(Row, part=...).count()`` (``Select=COUNT``) against PynamoDB's
  ``Model.count(hash_key)`` on the same partition. Target: >= 1x.

Usage::

    .venv/bin/python benchmarks/scan.py                  # 5000 items, 5 repeats
    .venv/bin/python benchmarks/scan.py --items 20000 --repeats 3
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from dynaorm import Entity, Session, Table
from dynaorm.read.spec import ITER_PAGE_ITEMS
from dynaorm.testing import use_tables
from tests.support.ddb_local import DynamoDBLocal

bench = Table("dynaorm-bench-scan")


class Row(Entity):
    class Meta:
        table = bench
        pk = "PART#{part}"
        sk = "ROW#{n:06d}"

    part: str
    n: int
    label: str = ""
    score: int = 0


def medians(fns: list[tuple[str, Callable[[], int]]],
            repeats: int) -> list[tuple[str, float, int]]:
    """(name, median seconds, result) of each, the runs interleaved (one of each per round,
    the order rotating) so that a busy machine's drift hits every contender alike."""
    times: dict[str, list[float]] = {name: [] for name, _ in fns}
    results: dict[str, int] = {}
    for r in range(repeats):
        for name, fn in fns[r % len(fns):] + fns[:r % len(fns)]:
            start = time.perf_counter()
            results[name] = fn()
            times[name].append(time.perf_counter() - start)
    return [(name, statistics.median(times[name]), results[name]) for name, _ in fns]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--items", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with DynamoDBLocal() as ddb, use_tables(bench, endpoint_url=ddb.endpoint_url) as db:
        s = Session(bench)
        s.save_many([Row(part="p1" if i % 2 else "p2", n=i, label=f"row {i}", score=i % 97)
                     for i in range(args.items)])
        client = db.table.client
        import boto3

        from dynaorm.client.settings import local_credentials

        b3 = boto3.client("dynamodb", endpoint_url=ddb.endpoint_url,
                          region_name=os.environ.get("AWS_DEFAULT_REGION", "us-east-1"),
                          **local_credentials(ddb.endpoint_url))

        def on(wire: str, fn: Callable[[], int]) -> Callable[[], int]:
            def run() -> int:
                bench.wire = wire  # (the documented switch of a table that exists)
                return fn()
            return run

        def paginator(size: int | None) -> Callable[[], int]:
            # size: Limit per request (None: DynamoDB's 1 MB pages); on DynamoDB Local a
            # scan page costs more the further into the table it starts
            def run() -> int:
                pages = b3.get_paginator("scan").paginate(
                    TableName=bench.name, FilterExpression="#t = :t",
                    ExpressionAttributeNames={"#t": "_type"},
                    ExpressionAttributeValues={":t": {"S": "Row"}},
                    PaginationConfig={"PageSize": size} if size else {})
                return sum(len(p["Items"]) for p in pages)
            return run

        def scan(segments: int = 1, size: int = ITER_PAGE_ITEMS) -> Callable[[], int]:
            return lambda: len(s.scan(Row, segments=segments).page_size(size).all())

        class PRow(Model):
            class Meta:
                table_name = bench.name
                host = ddb.endpoint_url
                region = os.environ.get("AWS_DEFAULT_REGION", "us-east-1")
                aws_access_key_id = local_credentials(ddb.endpoint_url).get(
                    "aws_access_key_id")
                aws_secret_access_key = local_credentials(ddb.endpoint_url).get(
                    "aws_secret_access_key")

            pk = UnicodeAttribute(hash_key=True)
            sk = UnicodeAttribute(range_key=True)
            n = NumberAttribute()

        assert client is not None
        mb = 10**6  # a Limit no 1 MB page reaches: DynamoDB's own page size
        groups = {
            f"pages of {ITER_PAGE_ITEMS} items (dynaorm's iteration default)": [
                ("boto3 Scan paginator", paginator(ITER_PAGE_ITEMS)),
                ("dynaorm scan().all()", on("dynaorm", scan())),
                ("scan().all() wire=botocore", on("botocore", scan())),
                ("dynaorm scan(segments=4)", on("dynaorm", scan(4))),
                ("segments=4 wire=botocore", on("botocore", scan(4)))],
            "DynamoDB's 1 MB pages (the paginator's default)": [
                ("boto3 Scan paginator", paginator(None)),
                ("dynaorm scan().all()", on("dynaorm", scan(size=mb))),
                ("scan().all() wire=botocore", on("botocore", scan(size=mb))),
                ("dynaorm scan(segments=2)", on("dynaorm", scan(2, mb))),
                ("dynaorm scan(segments=4)", on("dynaorm", scan(4, mb)))],
        }
        print(f"{args.items} items on DynamoDB Local, median of {args.repeats}")
        for title, rows in groups.items():
            print(f"  {title}")
            base = None
            for name, seconds, n in medians(rows, args.repeats):
                assert n == args.items, (name, n)
                rate = n / seconds
                base = base or rate
                print(f"    {name:<28} {rate:>10,.0f} items/s  ({rate / base:.2f}x)")
        half = sum(1 for i in range(args.items) if i % 2)
        counts = [
            ("PynamoDB Model.count", lambda: PRow.count("PART#p1")),
            ("dynaorm query().count()", on("dynaorm", lambda: s.query(Row, part="p1").count())),
            ("dynaorm scan().count()", on("dynaorm", lambda: s.scan(Row).count() // 2)),
        ]
        print(f"  count, median of {args.repeats * 3} (ratio: speed against PynamoDB's)")
        base = None
        for name, seconds, n in medians(counts, args.repeats * 3):
            assert n in (half, args.items // 2), (name, n)
            base = base or seconds
            print(f"  {name:<28} {seconds * 1000:>10.1f} ms  ({base / seconds:.2f}x)")


if __name__ == "__main__":
    main()
