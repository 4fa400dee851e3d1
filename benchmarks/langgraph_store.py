#!/usr/bin/env python
"""The LangGraph memory store (issue 71): a ``search`` of 10 hits, client CPU, side by side
with ``langgraph_checkpoint_aws``'s ``DynamoDBStore`` on the same DynamoDB Local.

Each store holds the same 10 items in the namespace ``("users", "u1")`` (a value of five
fields, ~300 bytes) and searches it (``store.search(("users", "u1"), limit=10)``: one
``Query`` each, 10 hits). Printed: the client CPU per search (``time.process_time``, the
least batch: the machine's noise only adds; batches of the two alternate, the collector off
in each), and the ratio beside the issue's budget (at most 0.5x ``DynamoDBStore``'s).

    python benchmarks/langgraph_store.py [--iterations 200] [--repeats 5]
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dynaorm import Table
from dynaorm.client.settings import local_credentials
from dynaorm.langgraph import Store
from dynaorm.testing import use_tables
from tests.support.ddb_local import DynamoDBLocal

#: issue 71's budget: the store's search at most this many times DynamoDBStore's CPU
BUDGET = 0.5
NAMESPACE = ("users", "u1")
bench = Table("lgstore-bench")


def _value(n: int) -> dict[str, object]:
    return {"text": f"the user prefers the train to the plane ({n})", "n": n,
            "tags": ["travel", "preference"], "source": {"thread": f"t{n}", "turn": n},
            "score": 50 + n}  # (no float: DynamoDBStore refuses them)


def _cpu(fn: Callable[[], object], iterations: int) -> float:
    """Client CPU microseconds per call of ``fn`` over one batch (the collector off)."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        for _ in range(iterations):
            fn()
        return (time.process_time() - start) / iterations * 1e6
    finally:
        gc.enable()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    from langgraph_checkpoint_aws.store.dynamodb import DynamoDBStore

    with DynamoDBLocal() as ddb, use_tables(bench, endpoint_url=ddb.endpoint_url):
        for name, value in local_credentials(ddb.endpoint_url).items():
            os.environ[name.upper()] = value
        theirs = DynamoDBStore("lgstore-bench-aws", region_name="us-east-1",
                               endpoint_url=ddb.endpoint_url)
        theirs.setup()
        ours = Store(bench)
        for store in (ours, theirs):
            for n in range(10):
                store.put(NAMESPACE, f"m{n}", _value(n))
        cases: dict[str, Callable[[], object]] = {
            "dynaorm.langgraph.Store": lambda: ours.search(NAMESPACE, limit=10),
            "langgraph_checkpoint_aws DynamoDBStore": lambda: theirs.search(NAMESPACE,
                                                                            limit=10)}
        for case in cases.values():  # (warm: imports, connections; both find all 10)
            assert [len(case()) for _ in range(20)] == [10] * 20
        best = dict.fromkeys(cases, float("inf"))
        for _ in range(args.repeats):
            for name, case in cases.items():
                best[name] = min(best[name], _cpu(case, args.iterations))
        for name, cpu in best.items():
            print(f"  {name:40} {cpu:8.0f} us client CPU per search of 10 hits")
        ratio = best["dynaorm.langgraph.Store"] / best["langgraph_checkpoint_aws DynamoDBStore"]
        verdict = "ok" if ratio <= BUDGET else "MISSED"
        print(f"  ratio {ratio:.2f}x (budget <= {BUDGET}x): {verdict}")


if __name__ == "__main__":
    main()
