"""The asyncio driver of :mod:`dynaorm.core.protocol`: requests through the async transport,
concurrent steps as tasks (at most the client's connection pool at once)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, TypeVar

from dynaorm._types import Item
from dynaorm.core.protocol import Backoff, Call, Emit, Gather, Proto, Stream
from dynaorm.transport.aio import AsyncTransport
from dynaorm.transport.config import MAX_POOL_CONNECTIONS

__all__ = ["iterate", "run"]

R = TypeVar("R")


async def _perform(transport: AsyncTransport, step: Any) -> Any:
    if isinstance(step, Call):
        return await transport.call(step.operation, step.request, step.origins,
                                    idempotent=step.idempotent)
    if isinstance(step, Backoff):
        delay = min(transport.backoff(step.attempt), transport.max_wait - step.waited)
        if delay <= 0:
            return 0.0
        await asyncio.sleep(delay)
        return delay
    if isinstance(step, Gather):
        return await _gather(transport, step)
    raise TypeError(f"not a protocol step: {step!r}")  # pragma: no cover


async def _gather(transport: AsyncTransport, step: Gather) -> list[Any]:
    await transport.client()  # made once, before the tasks need it
    limit = asyncio.Semaphore(min(step.concurrency, MAX_POOL_CONNECTIONS))

    async def one(proto: Proto[Any]) -> Any:
        async with limit:
            return await run(transport, proto)

    tasks = [asyncio.ensure_future(one(p)) for p in step.protos]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


async def run(transport: AsyncTransport, proto: Proto[R]) -> R:
    """Drive ``proto`` to its result."""
    value: Any = None
    error: Exception | None = None
    while True:
        try:
            step = proto.send(value) if error is None else proto.throw(error)
        except StopIteration as stop:
            result: R = stop.value
            return result
        value = error = None
        try:
            if type(step) is Call:  # (the common step, without _perform's coroutine)
                value = await transport.call(step.operation, step.request, step.origins,
                                             idempotent=step.idempotent)
            else:
                value = await _perform(transport, step)
        except Exception as exc:  # thrown into the protocol, which may handle it
            error = exc


async def iterate(transport: AsyncTransport,
                  stream: Stream) -> AsyncIterator[Sequence[Item]]:
    """The batches of items ``stream`` emits, in order, fetched lazily."""
    value: Any = None
    error: Exception | None = None
    try:
        while True:
            try:
                step = stream.send(value) if error is None else stream.throw(error)
            except StopIteration:
                return
            value = error = None
            if isinstance(step, Emit):
                yield step.items
                continue
            try:
                value = await _perform(transport, step)
            except Exception as exc:
                error = exc
    finally:
        stream.close()
