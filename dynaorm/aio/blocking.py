"""A blocking adapter over a real :class:`AsyncSession` (for running sync-style code,
such as a test suite, through the async code path): every coroutine runs to completion on
this thread's private event loop, kept for the thread's life (so the connections opened on
it are reused). Not for production code: use ``AsyncSession`` from asyncio directly."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from dynaorm.aio.reads import AsyncTerminals
from dynaorm.aio.session import AsyncSession

__all__ = ["BlockingAsyncSession", "BlockingRead", "close_loop", "loop"]

_LOCAL = threading.local()


def loop() -> asyncio.AbstractEventLoop:
    """This thread's private event loop (made on first use)."""
    found: asyncio.AbstractEventLoop | None = getattr(_LOCAL, "loop", None)
    if found is None or found.is_closed():
        found = _LOCAL.loop = asyncio.new_event_loop()
    return found


def close_loop() -> None:
    """Close this thread's private loop and the clients made on it (if any)."""
    from dynaorm.aio import close

    found: asyncio.AbstractEventLoop | None = getattr(_LOCAL, "loop", None)
    if found is None or found.is_closed():
        return
    found.run_until_complete(close())
    found.close()


def _run(awaitable: Any) -> Any:
    return loop().run_until_complete(awaitable)


def _blocking(value: Any) -> Any:
    if isinstance(value, AsyncTerminals):
        return BlockingRead(value)
    return value


class BlockingRead:
    """An async query or scan whose terminals block (builders return adapters too)."""

    def __init__(self, read: AsyncTerminals[Any]) -> None:
        self._aread = read

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._aread, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **k: _run(attr(*a, **k))
        if callable(attr):
            return lambda *a, **k: _blocking(attr(*a, **k))
        return attr

    def __iter__(self) -> Iterator[Any]:
        agen = self._aread.__aiter__()
        try:
            while True:
                try:
                    yield _run(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            _run(agen.aclose())  # type: ignore[attr-defined]


class BlockingAsyncSession:
    """Session-shaped: ``s.get(...)`` runs ``await AsyncSession.get(...)`` to completion."""

    def __init__(self, session: AsyncSession) -> None:
        self._asession = session

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._asession, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **k: _run(attr(*a, **k))
        if callable(attr) and name in ("query", "scan", "history"):
            return lambda *a, **k: _blocking(attr(*a, **k))
        return attr

    def __enter__(self) -> BlockingAsyncSession:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _run(self._asession.__aexit__(exc_type, exc, tb))
