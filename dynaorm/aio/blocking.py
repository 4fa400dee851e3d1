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

from dynaorm.aio.reads import AsyncSearch, AsyncTerminals
from dynaorm.client.session import run_op

_LOCAL = threading.local()


def loop() -> asyncio.AbstractEventLoop:
    """This thread's private event loop (made on first use)."""
    found = getattr(_LOCAL, "loop", None)
    if found is None or found.is_closed():
        found = _LOCAL.loop = asyncio.new_event_loop()
    return found


def close_loop() -> None:
    """Close this thread's private loop and the clients made on it (if any)."""
    from dynaorm.aio import close

    found = getattr(_LOCAL, "loop", None)
    if found is None or found.is_closed():
        return
    found.run_until_complete(close())
    found.close()


def _run(awaitable: Any) -> Any:
    return loop().run_until_complete(awaitable)


class _Blocking:
    """What an async object of dynaorm answers, run to completion: a coroutine method
    runs on this thread's loop, a builder returns an adapter too."""

    def __init__(self, target: Any):
        self._target = self.__wrapped__ = target  # (what dynaorm.explain explains)

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._target, name)
        if inspect.iscoroutinefunction(attr):
            return lambda *a, **k: _run(attr(*a, **k))
        if callable(attr) and (isinstance(self._target, AsyncTerminals | AsyncSearch)
                               or name in ("query", "scan", "history", "search")):
            return lambda *a, **k: _blocking(attr(*a, **k))
        return attr


def _blocking(value: Any) -> Any:
    return BlockingRead(value) if isinstance(value, AsyncTerminals | AsyncSearch) else value


class BlockingRead(_Blocking):
    """An async query, scan or search whose terminals block (builders return adapters
    too)."""

    def __iter__(self) -> Iterator[Any]:
        agen = self._target.__aiter__()
        try:
            while True:
                try:
                    yield _run(agen.__anext__())
                except StopAsyncIteration:
                    return
        finally:
            _run(agen.aclose())


class BlockingAsyncSession(_Blocking):
    """Session-shaped: ``s.get(...)`` runs ``await AsyncSession.get(...)`` to completion."""

    def __enter__(self) -> BlockingAsyncSession:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        _run(self._target.__aexit__(exc_type, exc, tb))

    def run(self, op: Any) -> Any:
        """Run an operation made with this adapter (its steps are its blocking calls), as
        :meth:`dynaorm.Session.run` does."""
        with self._target._stage.held():
            return run_op(op)
