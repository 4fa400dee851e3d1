#!/usr/bin/env python
"""Agent state in the table (issues 71, 83): the client CPU of ``dynaorm.langgraph.Saver``
beside AWS's ``langgraph_checkpoint_aws.DynamoDBSaver``, on the same engine, and of
dynaorm's saver sealed (``sealed=True``, a ``StaticKeyring``) and single-writer
(``single_writer=True``, the writes of one run) beside its plain self.

The savers run on one DynamoDB Local, each in its own table, with a state of
``--messages`` chat messages (20; ``langchain_core`` messages, as an agent's ``messages``
channel holds them).
Two cases, each timed with ``time.process_time`` (the client's CPU only: the engine is
another process) over ``--iterations`` calls, batches of the two savers alternating,
``--repeats`` batches each, the least batch kept (the machine's noise only adds), the
collector off in each batch:

- ``put + get_tuple``: a new checkpoint of the thread (its parent the last one: the
  thread a chain) and the thread's latest checkpoint read back, as a graph does on every
  step and every ``invoke``;
- ``list of 20``: the 20 checkpoints of a thread (each with 2 pending writes), newest first.

Printed: microseconds per call of each, the ratios, and the issues' budgets beside them
(issue 83: dynaorm at most 0.25x AWS's saver's CPU on ``put + get_tuple``; sealed at most
1.5x, single-writer at most 1.1x, the plain saver's).

(Not ``benchmarks/langgraph.py``: benchmarks/ is on ``sys.path`` wherever a benchmark
was loaded, as in the test suite, and a module of that name would hide the ``langgraph``
package.)

    python benchmarks/langgraph_checkpoints.py [--iterations 50] [--repeats 3] [--messages 20]

``--history`` instead: the client CPU of ``graph.get_state_history`` over a thread of
about 30 checkpoints (10 turns of a graph whose ``messages`` is a ``DeltaChannel``, as
deepagents' is; each snapshot reads its channel's history) beside ``InMemorySaver``.

    python benchmarks/langgraph_checkpoints.py --history [--repeats 3]
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

#: issue 83's budgets: each variant at most this many times its reference's client CPU
#: on ``put + get_tuple`` (dynaorm: AWS's saver; sealed and single-writer: dynaorm's)
BUDGETS = {"dynaorm": ("aws", 0.25), "sealed": ("dynaorm", 1.5),
           "single writer": ("dynaorm", 1.1)}


def _state(messages: int) -> dict[str, Any]:
    from langchain_core.messages import AIMessage, HumanMessage

    words = "the table keeps the agent's state beside the application's own entities "
    return {"messages": [(HumanMessage if i % 2 == 0 else AIMessage)(
        content=f"message {i}: " + words * 3, id=f"m{i}") for i in range(messages)]}


def _cases(saver: Any, thread: str, messages: int) -> dict[str, Callable[[], object]]:
    from langgraph.checkpoint.base import empty_checkpoint

    run = {"run_id": "bench-run"}  # (one run's writes: a single writer holds the thread)
    latest: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": "",
                                               **run}}
    state = _state(messages)
    step = [0]

    def put(config: dict[str, Any]) -> dict[str, Any]:
        cp = empty_checkpoint()
        step[0] += 1
        cp["channel_values"] = state
        cp["channel_versions"] = {"messages": step[0]}
        return saver.put(config, cp, {"source": "loop", "step": step[0]},  # type: ignore[no-any-return]
                         {"messages": step[0]})

    listed: dict[str, Any] = {"configurable": {"thread_id": thread + "-list",
                                               "checkpoint_ns": "", **run}}
    parent = listed
    for _ in range(20):
        parent = put(parent)
        saver.put_writes(parent, [("messages", state["messages"][-1]), ("next", "agent")],
                         "task")
    head = [put(latest)]

    def put_get() -> object:
        head[0] = put({"configurable": {**head[0]["configurable"], **run}})
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


def history(repeats: int) -> None:
    """``get_state_history`` of a 30-checkpoint thread: dynaorm's saver on DynamoDB Local
    beside ``InMemorySaver`` (see the module)."""
    from typing import Annotated, TypedDict

    from langchain_core.messages import AIMessage, HumanMessage
    from langgraph.channels.delta import DeltaChannel
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import START, StateGraph

    from dynaorm import Table
    from dynaorm.langgraph import Saver
    from tests.support.ddb_local import DynamoDBLocal

    def append(old: list[Any], new: list[Any]) -> list[Any]:
        return [*old, *new]

    State = TypedDict("State", {  # type: ignore[misc]  # noqa: UP013 (a local value)
        "messages": Annotated[list[Any], DeltaChannel(append, snapshot_frequency=50)]})

    builder = StateGraph(State)
    builder.add_node("think", lambda state: {"messages": [AIMessage("a thought " * 40)]})
    builder.add_node("reply", lambda state: {"messages": [AIMessage("a reply " * 40)]})
    builder.add_edge(START, "think")
    builder.add_edge("think", "reply")
    with DynamoDBLocal() as ddb:
        table = Table("bench-langgraph-history")
        table.connect(ddb.endpoint_url)
        table.create()
        config: Any = {"configurable": {"thread_id": "t"}}
        cpu = {}
        for name, saver in (("dynaorm", Saver(table)), ("InMemorySaver", InMemorySaver())):
            graph = builder.compile(checkpointer=saver)
            for turn in range(10):
                graph.invoke({"messages": [HumanMessage(f"question {turn} " * 20)]}, config)
            found = len(list(graph.get_state_history(config)))
            cpu[name] = min(_cpu(lambda g=graph: list(g.get_state_history(config)), 3)
                            for _ in range(repeats))
        print(f"get_state_history of {found} checkpoints, client CPU per call: dynaorm "
              f"{cpu['dynaorm'] / 1000:.1f} ms, InMemorySaver {cpu['InMemorySaver'] / 1000:.1f}"
              f" ms ({cpu['dynaorm'] / cpu['InMemorySaver']:.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--messages", type=int, default=20)
    parser.add_argument("--history", action="store_true")
    args = parser.parse_args()
    if args.history:
        return history(args.repeats)
    import os

    import boto3
    from langgraph_checkpoint_aws import DynamoDBSaver

    from dynaorm import StaticKeyring, Table
    from dynaorm.langgraph import Saver
    from tests.support.ddb_local import DynamoDBLocal

    with DynamoDBLocal() as ddb:
        url = ddb.endpoint_url
        tables = {name: Table(f"bench-langgraph-{name.replace(' ', '-')}", **kw)
                  for name, kw in (("dynaorm", {}), ("sealed", {
                      "keyring": StaticKeyring(os.urandom(32))}), ("single writer", {}))}
        for table in tables.values():
            table.connect(url)
            table.create()
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
        n = args.messages
        savers = {"dynaorm": _cases(Saver(tables["dynaorm"]), "t", n),
                  "sealed": _cases(Saver(tables["sealed"], sealed=True), "t", n),
                  "single writer": _cases(Saver(tables["single writer"],
                                                single_writer=True), "t", n),
                  "aws": _cases(DynamoDBSaver("bench-langgraph-aws", session=session,
                                              endpoint_url=url), "t", n)}
        for cases in savers.values():  # (warm: imports, connections, caches)
            for fn in cases.values():
                for _ in range(10):
                    fn()
        print(f"client CPU per call, least of {args.repeats} batches of {args.iterations}; "
              f"{n} messages of state, DynamoDB Local")
        for case in savers["dynaorm"]:
            best = {name: min(_cpu(cases[case], args.iterations) for _ in range(1))
                    for name, cases in savers.items()}
            for _ in range(args.repeats - 1):
                for name, cases in savers.items():
                    best[name] = min(best[name], _cpu(cases[case], args.iterations))
            print(f"{case}: " + "   ".join(f"{name} {us:.0f} us" for name, us in best.items()))
            for name, (reference, budget) in BUDGETS.items():
                ratio = best[name] / best[reference]
                verdict = ("met" if ratio <= budget else "MISSED") if case == (
                    "put + get_tuple") else "no budget"
                print(f"    {name} / {reference}: {ratio:.2f}x (budget {budget}x: {verdict})")


if __name__ == "__main__":
    main()
