#!/usr/bin/env python
"""Client CPU per operation over real HTTP, async: raw aiobotocore vs pydynox's async API vs
dynaorm's AsyncSession on aiobotocore (``wire="botocore"``) and on its own wire
(``wire="dynaorm"``, :class:`dynaorm.wire.AsyncWire`).

The endpoint is canned (``benchmarks/canned_http.py``: ``http.server`` in a child process,
HTTP/1.1 keep-alive, fixed JSON with a correct ``x-amz-crc32``), so every contender pays its
whole client path (render, SigV4, the socket, read, parse, build objects) and only the client
process's CPU is timed (``time.process_time``, which counts every thread of the process: what
we want, since pydynox's Rust client does its I/O on tokio's threads of its own and hands the
result back to the event loop). Operations run one after another in one event loop (no
concurrency: the CPU per operation is what is measured).

Contenders (interleaved repeats, median per operation):

``aiobotocore``       a raw aiobotocore client (dynaorm's settings: no parameter validation,
                      one attempt); items unmarshalled by hand into slots dataclasses
``pydynox``           pydynox models through its async API (the default one: ``await
                      Model.get``, ``await model.save(condition=...)``, ``Transaction``,
                      ``async for`` over ``Model.query``); it asks for
                      ``ReturnConsumedCapacity`` on every request and sends a
                      ``ClientRequestToken`` with each transaction (its defaults)
``dynaorm-botocore``  ``AsyncSession`` on ``Table(wire="botocore")``: aiobotocore
``dynaorm``           ``AsyncSession`` on ``Table(wire="dynaorm")`` (the default): AsyncWire
``asyncwire-raw``     (for reference) the same requests as ``aiobotocore`` sent by hand through
                      ``AsyncWire.send``, unmarshalled by hand the same way: the wire's own
                      share, without dynaorm's entity layer

Operations: ``get`` (GetItem into an object), ``put`` (a new item, conditional PutItem),
``tx3`` (an entity with two unique attributes: one TransactWriteItems of 3 Puts; dynaorm
through a commit, pydynox by hand with ``Transaction.save_model``, each Put conditioned on
absence), ``query25`` / ``query1000`` (a Query page of 25 / 1,000 items into
objects; dynaorm reads it as a web service reads a page, ``.limit(n).page()``).

Usage::

    .venv/bin/python benchmarks/wire_async.py [--repeats 5] [--scale 1.0] [--json PATH]
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.canned_http import (
    ITERATIONS,
    OPS,
    REGION,
    TARGETS,
    arguments,
    canned_endpoint,
    check_answer,
    dynaorm_models,
    ids,
    messages_of,
    pydynox_models,
    raw_requests,
    user_of,
)

CONTENDERS = ("aiobotocore", "pydynox", "dynaorm-botocore", "dynaorm", "asyncwire-raw")
Op = Callable[[], Awaitable[object]]


def raw_ops(send: Callable[[str, dict[str, Any]], Awaitable[dict[str, Any]]]
            ) -> dict[str, Op]:
    """The hand-written contender's ops over ``send(operation, request)``."""
    requests = raw_requests()

    def op(name: str, build: Callable[[Any], object] = lambda answer: answer) -> Op:
        async def run() -> object:
            return build(await send(*requests[name]()))
        return run

    return {"get": op("get", user_of), "put": op("put"), "tx3": op("tx3"),
            "query25": op("query25", messages_of), "query1000": op("query1000", messages_of)}


async def make_aiobotocore(endpoint: str) -> tuple[dict[str, Op], Any]:
    import aiobotocore.config
    import aiobotocore.session

    context = aiobotocore.session.get_session().create_client(
        "dynamodb", region_name=REGION, endpoint_url=endpoint,
        aws_access_key_id="x", aws_secret_access_key="x",
        config=aiobotocore.config.AioConfig(
            parameter_validation=False, max_pool_connections=64,
            retries={"total_max_attempts": 1, "mode": "standard"}))
    client: Any = await context.__aenter__()
    from dynaorm.client.botocore import method_name

    async def send(operation: str, request: dict[str, Any]) -> dict[str, Any]:
        answer: dict[str, Any] = await getattr(client, method_name(operation))(**request)
        return answer

    return raw_ops(send), context


def make_pydynox(endpoint: str) -> dict[str, Op]:
    """pydynox's models through its async API (its methods without the ``sync_`` prefix)."""
    from pydynox import Transaction

    client, User, Guard, Message = pydynox_models(endpoint)
    new_id = ids()

    def new_user() -> Any:
        uid = new_id()
        return User(pk=f"USER#{uid}", sk="PROFILE", user_id=uid, org_id="o1",
                    username="alice", email="alice@x.com", full_name="Alice Liddell")

    async def get() -> object:
        return await User.get(pk="USER#u1", sk="PROFILE")

    async def put() -> object:
        return await new_user().save(condition=User.pk.not_exists())

    async def tx3() -> object:
        user = new_user()
        async with Transaction(client) as tx:
            tx.save_model(user, condition=User.pk.not_exists())
            for a in ("username", "email"):
                token = f"{a}#{getattr(user, a)}"
                tx.save_model(Guard(pk=token, sk=token, owner_pk=user.pk, owner_sk=user.sk,
                                    owner_type="User", unique_field=a),
                              condition=Guard.pk.not_exists())
        return tx

    def query(room: str) -> Op:
        async def run() -> object:
            return [m async for m in Message.query(partition_key=f"ROOM#{room}")]
        return run

    return {"get": get, "put": put, "tx3": tx3, "query25": query("r25"),
            "query1000": query("r1000")}


def make_dynaorm(endpoint: str, wire: str) -> tuple[dict[str, Op], Any]:
    from dynaorm import AsyncSession

    app, User, PlainUser, Message = dynaorm_models(endpoint, wire)
    new_id = ids()

    def new(cls: type[Any]) -> Any:
        return cls(user_id=new_id(), org_id="o1", username="alice", email="alice@x.com",
                   full_name="Alice Liddell")

    async def get() -> object:
        return await AsyncSession(app).get(User, user_id="u1")

    async def put() -> object:
        session = AsyncSession(app)
        session.save(new(PlainUser))
        return await session.commit()

    async def tx3() -> object:
        session = AsyncSession(app)
        session.save(new(User))
        return await session.commit()

    def query(room: str, n: int) -> Op:  # a web service's page: .limit(n).page()
        async def run() -> object:
            return (await AsyncSession(app).query(Message, room=room).limit(n).page()).items
        return run

    return ({"get": get, "put": put, "tx3": tx3, "query25": query("r25", 25),
             "query1000": query("r1000", 1000)}, app)


async def timed(fn: Op, n: int) -> float:
    gc.collect()  # each batch pays the collections its own allocations cause, no one else's
    start = time.process_time()
    for _ in range(n):
        await fn()
    return (time.process_time() - start) / n


async def run(endpoint: str, repeats: int, scale: float) -> dict[tuple[str, str], float]:
    from dynaorm.aio import close

    raw, context = await make_aiobotocore(endpoint)
    botocore_ops, table_b = make_dynaorm(endpoint, "botocore")
    dynaorm_ops, table_d = make_dynaorm(endpoint, "dynaorm")
    from dynaorm.wire import AsyncWire

    wire = AsyncWire(table_d.db._endpoint())  # (the wire the client's transport opens per loop)
    contenders = {"aiobotocore": raw, "pydynox": make_pydynox(endpoint),
                  "dynaorm-botocore": botocore_ops,
                  "dynaorm": dynaorm_ops, "asyncwire-raw": raw_ops(wire.send)}
    try:
        for name, ops in contenders.items():
            for op, fn in ops.items():
                check_answer(name, op, await fn())
                await fn()  # warm: pools open, caches filled
        assert table_d.db.async_wire is not None, "the dynaorm contender did not use AsyncWire"
        assert table_b.db.async_wire is None
        samples: dict[tuple[str, str], list[float]] = {}
        for _ in range(repeats):
            for op in OPS:
                n = max(1, int(ITERATIONS[op] * scale))
                for name in CONTENDERS:
                    samples.setdefault((name, op), []).append(
                        await timed(contenders[name][op], n))
    finally:
        await context.__aexit__(None, None, None)
        await wire.close()
        await close()
    return {k: statistics.median(v) for k, v in samples.items()}


def report(medians: dict[tuple[str, str], float]) -> tuple[str, bool]:
    lines = ["| op | aiobotocore | pydynox | dynaorm wire=botocore | dynaorm wire=dynaorm | "
             "dynaorm / aiobotocore | target | AsyncWire raw (no entities) |",
             "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    ok = True
    for op in OPS:
        base = medians[("aiobotocore", op)]
        mine = medians[("dynaorm", op)]
        ratio = mine / base
        ok &= ratio <= TARGETS[op]
        lines.append(
            f"| {op} | {base * 1e3:.3f} ms | "
            f"{medians[('pydynox', op)] * 1e3:.3f} ms "
            f"({medians[('pydynox', op)] / base:.2f}x) | "
            f"{medians[('dynaorm-botocore', op)] * 1e3:.3f} ms "
            f"({medians[('dynaorm-botocore', op)] / base:.2f}x) | {mine * 1e3:.3f} ms | "
            f"{ratio:.2f}x | <= {TARGETS[op]}x {'ok' if ratio <= TARGETS[op] else 'MISSED'} | "
            f"{medians[('asyncwire-raw', op)] * 1e3:.3f} ms "
            f"({medians[('asyncwire-raw', op)] / base:.2f}x) |")
    return "\n".join(lines), ok


def main() -> int:
    args = arguments(__doc__)
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    with canned_endpoint() as endpoint:
        medians = asyncio.run(run(endpoint, args.repeats, args.scale))
    table, ok = report(medians)
    print(table)
    if args.json:
        args.json.write_text(json.dumps({f"{n}:{op}": v for (n, op), v in medians.items()},
                                        indent=2))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
