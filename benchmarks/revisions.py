#!/usr/bin/env python
"""Revisions (issue 40): what the row revision that proves outcomes costs.

Every dynaorm request that puts or updates an entity's row stamps a fresh random revision
on it (``_rev``: 16 hex characters, 64 random bits; see docs/guide/failure-semantics.md).
This prints, with no server:

- **bytes**: what the attribute adds to each row, by DynamoDB's own size rules, and what
  that does to write units (1 WCU per started KB, 2 in a transaction) for rows of
  typical sizes: only a row that crosses a 1 KB boundary pays one more unit;
- **CPU**: the client time to render a single-item write (a loaded object's ``UpdateItem``,
  an insert's ``PutItem``) with and without the revision, plus the state a commit
  promises with the revision set (``InstanceState.revised``), median of ``--repeats``.

    python benchmarks/revisions.py [--iterations 20000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dynaorm import Entity, Table
from dynaorm.values.limits import item_size
from dynaorm.values.revision import REVISION
from dynaorm.values.state import InstanceState
from dynaorm.write.render import compile_commit
from dynaorm.write.save import SaveEntry

table = Table("bench-revisions")


class Order(Entity):
    class Meta:
        table = table
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    order_id: str
    status: str = "open"
    total: int = 0
    note: str = ""


def _per_call(fn: object, iterations: int, repeats: int) -> float:
    """Median microseconds per call of ``fn``."""
    runs = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()  # type: ignore[operator]
        runs.append((time.perf_counter() - start) / iterations * 1e6)
    return statistics.median(runs)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--iterations", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    stamp = {REVISION: {"S": os.urandom(8).hex()}}
    added = item_size(stamp)
    print(f"bytes added to each row: {added} ({REVISION!r} + 16 characters)")
    print("row bytes  WCU without  WCU with  (a transaction: twice each)")
    for size in (100, 400, 1000, 1004, 1010, 3000, 4090):
        print(f"{size:9}  {math.ceil(size / 1024):11}  {math.ceil((size + added) / 1024):8}")

    loaded = Order(order_id="o1", total=3)
    item = {"pk": {"S": "ORDER#o1"}, "sk": {"S": "ORDER"}, "_type": {"S": "Order"},
            "order_id": {"S": "o1"}, "status": {"S": "open"}, "total": {"N": "3"},
            "note": {"S": ""}, REVISION: {"S": "0123456789abcdef"}}
    state = InstanceState({"pk": "ORDER#o1", "sk": "ORDER"}, item)
    object.__setattr__(loaded, "_dynaorm_slot", state)
    loaded.status = "paid"
    update_plan = compile_commit([(SaveEntry(loaded), state)])[0]
    insert_plan = compile_commit([(SaveEntry(Order(order_id="o2")), None)])[0]
    rows = [
        ("UpdateItem, no revision", lambda: update_plan.single_request()),
        ("UpdateItem, revision", lambda: update_plan.single_request(os.urandom(16).hex()[:16])),
        ("PutItem, no revision", lambda: insert_plan.single_request()),
        ("PutItem, revision", lambda: insert_plan.single_request(os.urandom(16).hex()[:16])),
        ("the promised state, revised", lambda: state.revised(stamp)),
    ]
    print(f"\nclient CPU per call (median of {args.repeats} x {args.iterations}):")
    for name, fn in rows:
        print(f"  {name:32} {_per_call(fn, args.iterations, args.repeats):7.2f} us")


if __name__ == "__main__":
    main()
