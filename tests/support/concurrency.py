"""Threads released together, for the racing tests; coroutines run to their end."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Coroutine, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

R = TypeVar("R")


def race(n: int, work: Callable[[int], R]) -> list[R | BaseException]:
    """Run ``work(i)`` on ``n`` threads released together; results or raised errors."""
    barrier = threading.Barrier(n)

    def run(i: int) -> R | BaseException:
        barrier.wait()
        try:
            return work(i)
        except Exception as exc:
            return exc

    with ThreadPoolExecutor(max_workers=n) as pool:
        return list(pool.map(run, range(n)))


def join_all(threads: Iterable[threading.Thread], timeout: float | None = None) -> None:
    """Start every thread of ``threads``, then join each (``timeout``: each join's)."""
    started = list(threads)
    for t in started:
        t.start()
    for t in started:
        t.join(timeout)


def arun(coro: Coroutine[Any, Any, R]) -> R:
    """``asyncio.run``, closing the clients and wires the coroutine's loop made before
    the loop ends (:func:`dynaorm.aio.close`)."""
    from dynaorm.aio import close

    async def closing() -> R:
        try:
            return await coro
        finally:
            await close()

    return asyncio.run(closing())
