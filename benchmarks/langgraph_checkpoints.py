#!/usr/bin/env python
"""Agent state in the table (issue 71): the client CPU of ``dynaorm.langgraph.Saver``
beside AWS's ``langgraph_checkpoint_aws.DynamoDBSaver``, on the same engine.

Both savers run on one DynamoDB Local, each in its own table, with a state of 5 chat
messages (``langchain_core`` messages, as an agent's ``messages`` channel holds them).
Two cases, each timed with ``time.process_time`` (the client's CPU only: the engine is
another process) over ``--iterations`` calls, batches of the two savers alternating,
``--repeats`` batches each, the least batch kept (the machine's noise only adds), the
collector off in each batch:

- ``put + get_tuple``: a new checkpoint of the thread (its parent the last one) and the
  thread's latest checkpoint read back, with its 2 pending writes, as a graph does on
  every step and every ``invoke``;
- ``list of 20``: the 20 checkpoints of a thread (each with 2 pending writes), newest first.

Printed: microseconds per call of each, the ratio, and the issue's budget beside it
(dynaorm at most 0.3x AWS's saver's CPU).

(Not ``benchmarks/langgraph.py``: benchmarks/ is on ``sys.path`` wherever a benchmark
was loaded, as in the test suite, and a module of that name would hide the ``langgraph``
package.)

    python benchmarks/langgraph_checkpoints.py [--iterations 50] [--repeats 3]
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

#: issue 71's budget: dynaorm's saver at most this many times AWS's saver's client CPU
BUDGET = 0.3


def _state() -> dict[str, Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    words = "the table keeps the agent's state beside the application's own entities "
    return {"messages": [(HumanMessage if i % 2 == 0 else AIMessage)(
        content=f"message {i}: " + words * 3, id=f"m{i}") for i in range(5)]}


def _cases(saver: Any, thread: str) -> dict[str, Callable[[], object]]:
    from langgraph.checkpoint.base import empty_checkpoint

    latest: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
    state = _state()
    step = [0]

    def put(config: dict[str, Any]) -> dict[str, Any]:
        cp = empty_checkpoint()
        step[0] += 1
        cp["channel_values"] = state
        cp["channel_versions"] = {"messages": step[0]}
        return saver.put(config, cp, {"source": "loop", "step": step[0]},  # type: ignore[no-any-return]
                         {"messages": step[0]})

    listed: dict[str, Any] = {"configurable": {"thread_id": thread + "-list",
                                               "checkpoint_ns": ""}}
    parent = listed
    for _ in range(20):
        parent = put(parent)
        saver.put_writes(parent, [("messages", state["messages"][-1]), ("next", "agent")],
                         "task")
    head = put(latest)
    saver.put_writes(head, [("messages", state["messages"][-1]), ("next", "agent")], "task")

    def put_get() -> object:
        put(head)
        return saver.get_tuple(latest)

    def list20() -> object:
        found = list(saver.list(listed))
        assert len(found) == 20 and all(len(t.pending_writes) == 2 for t in found)
        return found

    return {"put + get_tuple": put_get, "list of 20": list20}


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
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    import boto3
    from langgraph_checkpoint_aws import DynamoDBSaver

    from dynaorm import Table
    from dynaorm.langgraph import Saver
    from tests.support.ddb_local import DynamoDBLocal

    with DynamoDBLocal() as ddb:
        url = ddb.endpoint_url
        app = Table("bench-langgraph-dynaorm")
        app.connect(url)
        app.create()
        client = boto3.client("dynamodb", endpoint_url=url, region_name="us-east-1",
                              aws_access_key_id="x", aws_secret_access_key="x")
        client.create_table(
            TableName="bench-langgraph-aws", BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": k, "AttributeType": "S"}
                                  for k in ("PK", "SK")],
            KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"},
                       {"AttributeName": "SK", "KeyType": "RANGE"}])
        session = boto3.Session(aws_access_key_id="x", aws_secret_access_key="x",
                                region_name="us-east-1")
        savers = {"dynaorm": _cases(Saver(app), "t"),
                  "aws": _cases(DynamoDBSaver("bench-langgraph-aws", session=session,
                                              endpoint_url=url), "t")}
        for cases in savers.values():  # (warm: imports, connections, caches)
            for fn in cases.values():
                for _ in range(10):
                    fn()
        print(f"client CPU per call, least of {args.repeats} batches of {args.iterations}; "
              f"5 messages of state, DynamoDB Local")
        for case in savers["dynaorm"]:
            best = {name: min(_cpu(cases[case], args.iterations) for _ in range(1))
                    for name, cases in savers.items()}
            for _ in range(args.repeats - 1):
                for name, cases in savers.items():
                    best[name] = min(best[name], _cpu(cases[case], args.iterations))
            ratio = best["dynaorm"] / best["aws"]
            print(f"{case:>16}: dynaorm {best['dynaorm']:8.0f} us   aws DynamoDBSaver "
                  f"{best['aws']:8.0f} us   ratio {ratio:.2f}x (budget {BUDGET}x: "
                  f"{'met' if ratio <= BUDGET else 'MISSED'})")


if __name__ == "__main__":
    main()
