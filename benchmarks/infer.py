#!/usr/bin/env python
"""Model inference (``dynaorm.infer``, contract 23): client CPU to infer a model from
10,000 sampled items, budget 2 s (issue 72).

The items are an online shop's, as another tool would write them (no type attribute:
entities told apart by key shapes; two overloaded global indexes, one sparse; nested
maps, lists, sets, numbers, ISO timestamps), built in memory: what is measured is the
client's work on a sample it has read (the inference, the entity code it prints, that
code defined to give the model every format prints, and every placed item decoded
through it), not the Scan.

Usage::

    .venv/bin/python benchmarks/infer.py              # 10,000 items, 3 repeats
    .venv/bin/python benchmarks/infer.py --items 50000 --repeats 1
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dynaorm.client.infer import _defined_table, decoded, inferred_code, with_report
from dynaorm.formats.infer import infer_model

BUDGET = 2.0
DESCRIPTION = {
    "TableName": "bench-shop",
    "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"},
                  {"AttributeName": "SK", "KeyType": "RANGE"}],
    "AttributeDefinitions": [{"AttributeName": a, "AttributeType": "S"}
                             for a in ("PK", "SK", "GSI1PK", "GSI1SK", "GSI2PK", "GSI2SK")],
    "GlobalSecondaryIndexes": [
        {"IndexName": f"GSI{n}", "Projection": {"ProjectionType": "ALL"},
         "KeySchema": [{"AttributeName": f"GSI{n}PK", "KeyType": "HASH"},
                       {"AttributeName": f"GSI{n}SK", "KeyType": "RANGE"}]}
        for n in (1, 2)],
}


def s(text: str) -> dict[str, str]:
    return {"S": text}


def items(count: int) -> list[dict[str, Any]]:
    """``count`` items of five entities in the shop's layout."""
    out: list[dict[str, Any]] = []
    n = 0
    while len(out) < count:
        c, o, p = f"c{n % 997}x", f"o{n}k", f"p{n % 89}z"
        at = f"2024-{n % 12 + 1:02d}-{n % 28 + 1:02d}T10:{n % 60:02d}:00Z"
        kind = n % 5
        if kind == 0:
            item = {"PK": s(f"CUSTOMER#{c}"), "SK": s("PROFILE"), "email": s(f"{c}@x.com"),
                    "name": s(f"Customer {n}"), "tags": {"SS": ["a", f"t{n % 7}"]},
                    "address": {"M": {"city": s("Oslo"), "zip": s(f"{n:05d}")}}}
        elif kind == 1:
            item = {"PK": s(f"CUSTOMER#{c}"), "SK": s(f"ORDER#{o}"), "placed": s(at),
                    "total": {"N": f"{n % 500}.{n % 100:02d}"},
                    "GSI1PK": s(f"ORDER#{o}"), "GSI1SK": s(f"ORDER#{o}")}
        elif kind == 2:
            item = {"PK": s(f"ORDER#{o}"), "SK": s(f"ITEM#{p}"), "qty": {"N": str(n % 9 + 1)},
                    "GSI1PK": s(f"PRODUCT#{p}"), "GSI1SK": s(at),
                    "lines": {"L": [{"M": {"sku": s(p), "n": {"N": "1"}}}]}}
        elif kind == 3:
            item = {"PK": s(f"PRODUCT#{p}"), "SK": s("METADATA"), "price": {"N": str(n % 70)},
                    "active": {"BOOL": n % 2 == 0}, "blob": {"B": b"\x00\x01"}}
            if n % 3 == 0:
                item |= {"GSI2PK": s("FEATURED"), "GSI2SK": s(f"PRODUCT#{p}")}
        else:
            item = {"PK": s(f"WAREHOUSE#w{n % 13}"), "SK": s(f"STOCK#{p}"),
                    "count": {"N": str(n)}, "GSI2PK": s(f"PRODUCT#{p}"),
                    "GSI2SK": s(f"WAREHOUSE#w{n % 13}")}
        out.append(item)
        n += 1
    return out


def once(sample: list[dict[str, Any]]) -> tuple[float, dict[str, Any]]:
    start = time.process_time()
    found = infer_model(DESCRIPTION, None, sample)
    table = _defined_table(inferred_code(found))
    model = with_report(table.model(), decoded(found, table))  # (placed: decoded, each)
    return time.process_time() - start, model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sample = items(args.items)
    runs = []
    model: dict[str, Any] = {}
    for _ in range(args.repeats):
        seconds, model = once(sample)
        runs.append(seconds)
    best, median = min(runs), statistics.median(runs)
    print(f"inferred {args.items:,} items: {len(model['entities'])} entities, "
          f"{model['inferred']['placed']:,} placed")
    for e in model["entities"]:
        print(f"  {e['name']}: {e['pk']} | {e['sk']} "
              + " ".join(f"{i['name']}=({i['pk']}, {i['sk']})" for i in e["indexes"]))
    print(f"client CPU: best {best:.3f} s, median {median:.3f} s "
          f"(budget {BUDGET:.1f} s for 10,000 items): "
          + ("within budget" if median <= BUDGET * args.items / 10_000 else "OVER BUDGET"))


if __name__ == "__main__":
    main()
