"""Threads released together, for the racing tests."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

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
