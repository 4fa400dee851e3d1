#!/usr/bin/env python
"""AsyncSession throughput and overhead (issue 9), side by side in one run.

1. On DynamoDB Local (started here like ``tests/support/ddb_local.py`` does, or ``--endpoint``):
   200 ``get``s of stored items
   - sequentially through ``Session`` (the sync baseline),
   - concurrently (``asyncio.gather``) through ``AsyncSession``  (target >= 3x the sync),
   - concurrently through a raw aiobotocore client (target: AsyncSession >= 0.9x of it).
     aioboto3 (its ``Table`` resource) is no longer a contender: every aioboto3 release
     that runs on the installed botocore pins an older aiobotocore, so pip resolves an
     aioboto3 of 2019 whose resource fails on today's boto3.
2. Client-side overhead per operation, nothing sent: ``AsyncSession.get``/``save`` vs raw
   aiobotocore ``get_item``/``put_item`` (a client configured like dynaorm's), every
   client answered by the same canned ``before-send`` handler (target <= 1.10x). As in
   ``overhead.py``, the raw ``get`` unmarshals the item by hand into a slots dataclass.

On a machine with few cores, DynamoDB Local and the client share the CPU, so concurrency
buys little: the ratios to the sequential baseline say more about the machine than about
the library; the ratio to aiobotocore (same load, same server) is the library's.

Usage::

    .venv/bin/python benchmarks/async_gets.py [--gets 200] [--rounds 5] [--iterations 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dynaorm import AsyncSession, Entity, Session, Table
from dynaorm.aio import client as aio_client
from dynaorm.aio import close
from dynaorm.client.settings import LOOPBACK_ACCESS_KEY, LOOPBACK_REGION, LOOPBACK_SECRET_KEY

# wire="botocore": part 2 answers the aiobotocore client from a before-send handler
bench = Table("dynaorm-bench-async", wire="botocore")


class Item(Entity):
    """A plain entity of a few fields."""

    class Meta:
        table = bench
        pk = "ITEM#{item_id}"
        sk = "ITEM"

    item_id: str
    name: str
    score: int = 0
    tags: list[str] = []


@dataclass(slots=True)
class RawItem:
    """What the raw contender of the overhead part unmarshals a got item into."""

    item_id: str
    name: str
    score: int
    tags: list[str]


def _key(i: int) -> dict[str, Any]:
    return {"pk": {"S": f"ITEM#i{i:04}"}, "sk": {"S": "ITEM"}}


async def _timed(fn: Callable[[], Awaitable[Any]], rounds: int,
                 clock: Callable[[], float] = time.perf_counter) -> float:
    best = float("inf")
    for _ in range(rounds):
        start = clock()
        await fn()
        best = min(best, clock() - start)
    return best


def throughput(endpoint: str, gets: int, rounds: int) -> dict[str, float]:
    """Seconds for ``gets`` gets, best of ``rounds``, per contender."""
    from aiobotocore.session import get_session

    bench.connect(endpoint)
    bench.delete()
    bench.create()
    s = Session(bench)
    s.save_many([Item(item_id=f"i{i:04}", name=f"item {i}", score=i, tags=["a", "b"])
                 for i in range(gets)])
    ids = [f"i{i:04}" for i in range(gets)]

    def sync_gets() -> None:
        for item_id in ids:
            assert s.get(Item, item_id=item_id) is not None

    sync_gets()  # warm the client

    # The machine's ceiling: the same gets sequentially through a plain boto3 client. What
    # aiobotocore gains over it is what any asyncio client can gain on this machine (with
    # few cores, DynamoDB Local and the client share the CPU).
    import boto3

    plain = boto3.client("dynamodb", endpoint_url=endpoint, region_name=LOOPBACK_REGION,
                         aws_access_key_id=LOOPBACK_ACCESS_KEY,
                         aws_secret_access_key=LOOPBACK_SECRET_KEY)

    def boto3_gets() -> None:
        for i in range(gets):
            assert "Item" in plain.get_item(TableName=bench.name, Key=_key(i))

    boto3_gets()
    # interleaved, so that DynamoDB Local's warming up favours neither
    best_sync = best_boto3 = float("inf")
    for _ in range(rounds):
        best_sync = min(best_sync, _sync_time(sync_gets))
        best_boto3 = min(best_boto3, _sync_time(boto3_gets))

    async def main() -> dict[str, float]:
        a = AsyncSession(bench)

        async def async_gets() -> None:
            got = await asyncio.gather(*(a.get(Item, item_id=i) for i in ids))
            assert all(g is not None for g in got)

        await async_gets()
        out = {"async": await _timed(async_gets, rounds)}
        async with get_session().create_client(
                "dynamodb", endpoint_url=endpoint, region_name=LOOPBACK_REGION,
                aws_access_key_id=LOOPBACK_ACCESS_KEY,
                aws_secret_access_key=LOOPBACK_SECRET_KEY) as raw:
            async def raw_gets() -> None:
                got = await asyncio.gather(*(raw.get_item(TableName=bench.name,
                                                          Key=_key(i)) for i in range(gets)))
                assert all("Item" in g for g in got)

            await raw_gets()
            out["aiobotocore"] = await _timed(raw_gets, rounds)
        await close()
        return out

    out = asyncio.run(main())
    out["sync"] = best_sync
    out["boto3_sync"] = best_boto3
    bench.delete()
    return out


def _sync_time(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


# -- client-side overhead -------------------------------------------------------------
_ITEM = {"pk": {"S": "ITEM#i0001"}, "sk": {"S": "ITEM"}, "_type": {"S": "Item"},
         "item_id": {"S": "i0001"}, "name": {"S": "item 1"}, "score": {"N": "1"},
         "tags": {"L": [{"S": "a"}, {"S": "b"}]}}
_BODIES = {"GetItem": json.dumps({"Item": _ITEM}).encode(), "PutItem": b"{}"}


class _Raw:
    def __init__(self, body: bytes) -> None:
        self._body = body

    async def read(self) -> bytes:
        return self._body


def _canned(request: Any, **kwargs: Any) -> Any:
    from aiobotocore.awsrequest import AioAWSResponse

    operation = kwargs["event_name"].rpartition(".")[2]
    body = _BODIES[operation]
    headers = {"x-amzn-RequestId": "canned", "Content-Type": "application/x-amz-json-1.0",
               "Content-Length": str(len(body))}
    return AioAWSResponse(request.url, 200, headers, _Raw(body))


def overhead(iterations: int, rounds: int) -> dict[str, float]:
    """Microseconds per operation, best of ``rounds``, nothing sent."""
    from aiobotocore.config import AioConfig
    from aiobotocore.session import get_session

    from dynaorm.client.settings import client_settings

    os.environ.setdefault("AWS_ACCESS_KEY_ID", "x")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "x")
    bench.connect("http://127.0.0.1:1", region="us-east-1")

    async def main() -> dict[str, float]:
        ours = await aio_client(bench)
        ours.meta.events.register("before-send.dynamodb", _canned)
        a = AsyncSession(bench)
        # the raw client is configured as dynaorm's is (parameter validation and botocore's
        # retries off), so that only the library's own work differs
        _, settings = client_settings(get_session(), "http://127.0.0.1:1", "us-east-1",
                                      has_credentials=True)
        async with get_session().create_client(
                "dynamodb", region_name="us-east-1", endpoint_url="http://127.0.0.1:1",
                aws_access_key_id="x", aws_secret_access_key="x",
                config=AioConfig(**settings)) as raw:
            raw.meta.events.register("before-send.dynamodb", _canned)

            async def orm_get() -> None:
                for _ in range(iterations):
                    await a.get(Item, item_id="i0001")

            async def raw_get() -> None:
                # as overhead.py's raw contender does: the item unmarshalled by hand into a
                # slots dataclass (no validation), so both sides hand back an object
                for _ in range(iterations):
                    item = (await raw.get_item(TableName=bench.name, Key=_key(1)))["Item"]
                    RawItem(item["item_id"]["S"], item["name"]["S"], int(item["score"]["N"]),
                            [t["S"] for t in item["tags"]["L"]])

            async def orm_save() -> None:
                for i in range(iterations):
                    a.save(Item(item_id=f"i{i}", name="x", score=i, tags=["a"]))
                    await a.commit()

            async def raw_save() -> None:
                for i in range(iterations):
                    item = {"pk": {"S": f"ITEM#i{i}"}, "sk": {"S": "ITEM"},
                            "_type": {"S": "Item"}, "item_id": {"S": f"i{i}"},
                            "name": {"S": "x"}, "score": {"N": str(i)},
                            "tags": {"L": [{"S": "a"}]}}
                    await raw.put_item(TableName=bench.name, Item=item,
                                       ConditionExpression="attribute_not_exists(#pk)",
                                       ExpressionAttributeNames={"#pk": "pk"})

            contenders = (("async_get", orm_get), ("raw_get", raw_get),
                          ("async_save", orm_save), ("raw_save", raw_save))
            samples: dict[str, list[float]] = {name: [] for name, _ in contenders}
            for _, fn in contenders:
                await fn()  # warm up
            for _ in range(rounds):  # interleaved, so that drift hits every contender
                for name, fn in contenders:
                    # process CPU time: other processes on the machine do not count
                    samples[name].append(await _timed(fn, 1, time.process_time))
            out = {name: min(times) / iterations * 1e6 for name, times in samples.items()}
        await close()
        return out

    return asyncio.run(main())


def _print_throughput(args: argparse.Namespace) -> None:
    if args.endpoint:
        t = throughput(args.endpoint, args.gets, args.rounds)
    else:
        from tests.support.ddb_local import DynamoDBLocal

        with DynamoDBLocal() as server:
            t = throughput(server.endpoint_url, args.gets, args.rounds)
    n = args.gets
    print(f"{n} gets on DynamoDB Local (best of {args.rounds}):")
    for name in ("sync", "boto3_sync", "async", "aiobotocore"):
        print(f"  {name:<18} {t[name] * 1000:8.1f} ms  {n / t[name]:8.0f} gets/s")
    print(f"  AsyncSession vs sequential Session: {t['sync'] / t['async']:.2f}x  (target >= 3)")
    print(f"  the machine's ceiling: aiobotocore vs sequential boto3: "
          f"{t['boto3_sync'] / t['aiobotocore']:.2f}x  ({os.cpu_count()} cores shared "
          "with DynamoDB Local)")
    print(f"  AsyncSession vs aiobotocore:        {t['aiobotocore'] / t['async']:.2f}x  "
          "(target >= 0.9)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--endpoint", help="a running DynamoDB Local (else one is started)")
    parser.add_argument("--gets", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=2000)
    parser.add_argument("--overhead-only", action="store_true")
    args = parser.parse_args()
    for name, value in {"AWS_ACCESS_KEY_ID": LOOPBACK_ACCESS_KEY,
                        "AWS_SECRET_ACCESS_KEY": LOOPBACK_SECRET_KEY,
                        "AWS_DEFAULT_REGION": LOOPBACK_REGION}.items():
        os.environ.setdefault(name, value)

    if not args.overhead_only:
        _print_throughput(args)
    o = overhead(args.iterations, args.rounds)
    print(f"client-side overhead per operation, nothing sent ({args.iterations} x "
          f"{args.rounds}, best, process CPU time):")
    for op in ("get", "save"):
        print(f"  {op:<5} AsyncSession {o['async_' + op]:7.1f} us   raw aiobotocore "
              f"{o['raw_' + op]:7.1f} us   ratio {o['async_' + op] / o['raw_' + op]:.2f}x"
              "  (target <= 1.10)")


if __name__ == "__main__":
    main()
