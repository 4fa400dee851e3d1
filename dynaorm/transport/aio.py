"""The async I/O: one aiobotocore client per table per event loop, driving the same retry
loop as the sync transport (:func:`dynaorm.transport.retry.attempt_loop`), so ``Table(
max_attempts, max_wait)``, the log records, ``on_request`` events and commit recording
mean the same for both kinds of session."""

from __future__ import annotations

import asyncio
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from dynaorm.errors import DynaormError, RequestError
from dynaorm.transport.config import client_settings, local_only
from dynaorm.transport.retry import (
    Send,
    answered,
    attempt_loop,
    map_error,
    method_name,
    start_request,
)

if TYPE_CHECKING:
    from dynaorm.model.table import Table

__all__ = ["INSTALL_HINT", "AsyncTransport", "client", "close", "transport_of"]

#: What to install for AsyncSession.
INSTALL_HINT = 'pip install "dynaorm[async]"'


def _aiobotocore() -> Any:
    try:
        import aiobotocore.config
        import aiobotocore.session
    except ModuleNotFoundError as exc:
        raise DynaormError(f"AsyncSession needs aiobotocore: {INSTALL_HINT}") from exc
    return aiobotocore


class AsyncTransport:
    """Sends a table's requests with aiobotocore (one client per event loop, created on
    first use); retries, backoff and observation are the sync transport's rules."""

    def __init__(self, table: Table) -> None:
        _aiobotocore()
        self.table = table
        self.endpoint_url = table.endpoint_url
        self.region = table.region
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                 asyncio.Future[Any]] = (
            weakref.WeakKeyDictionary())
        self._contexts: list[tuple[asyncio.AbstractEventLoop, Any]] = []

    # -- the policy is the table's sync transport's (the same knobs, the same hooks) ---
    @property
    def max_attempts(self) -> int:
        """Attempts of one request, at most (the table's)."""
        return int(self.table.transport.max_attempts)

    @property
    def max_wait(self) -> float:
        """Seconds the retries of one request wait in all, at most (the table's)."""
        return float(self.table.transport.max_wait)

    def backoff(self, attempt: int) -> float:
        """The sync transport's backoff before retry ``attempt``."""
        return float(self.table.transport.backoff(attempt))

    @property
    def listeners(self) -> list[Callable[..., object]]:
        """The table's ``on_request`` hooks."""
        return self.table._listeners

    # -- the client ------------------------------------------------------------------
    async def client(self) -> Any:
        """This event loop's aiobotocore client (created once per loop)."""
        loop = asyncio.get_running_loop()
        future = self._clients.get(loop)
        if future is None:
            future = loop.create_future()
            self._clients[loop] = future
            try:
                future.set_result(await self._create(loop))
            except BaseException as exc:
                del self._clients[loop]
                future.set_exception(exc)
                future.exception()  # retrieved: no "never retrieved" warning
                raise
        return await asyncio.shield(future) if not future.done() else future.result()

    async def _create(self, loop: asyncio.AbstractEventLoop) -> Any:
        aio = _aiobotocore()
        session = aio.session.get_session()
        has = None
        if local_only(session, self.endpoint_url):
            has = await session.get_credentials() is not None
        kwargs, config = client_settings(session, self.endpoint_url, self.region,
                                         table=self.table.name, has_credentials=has)
        try:
            context = session.create_client("dynamodb", config=aio.config.AioConfig(
                **config), **kwargs)
            made = await context.__aenter__()
        except Exception as exc:  # a malformed endpoint, ...: never a botocore exception
            raise DynaormError(f"table {self.table.name!r}: cannot create a DynamoDB client "
                               f"for endpoint {self.endpoint_url!r}: {exc}") from exc
        self._contexts.append((loop, context))
        return made

    async def close(self) -> None:
        """Close this event loop's client (a later request makes a new one)."""
        loop = asyncio.get_running_loop()
        self._clients.pop(loop, None)
        mine = [c for lp, c in self._contexts if lp is loop]
        self._contexts = [(lp, c) for lp, c in self._contexts if lp is not loop]
        for context in mine:
            await context.__aexit__(None, None, None)

    # -- requests --------------------------------------------------------------------
    async def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request once; errors are mapped to :class:`~dynaorm.RequestError`."""
        # this loop's client, ready after the first request: taken without awaiting
        # client() (a coroutine per request otherwise)
        future = self._clients.get(asyncio.get_running_loop())
        made = future.result() if future is not None and future.done() else (
            await self.client())
        try:
            result: dict[str, Any] = await getattr(made, method_name(operation))(**request)
            return result
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            err = map_error(operation, request, exc)
            if err is None:  # an aiohttp or socket failure aiobotocore did not wrap
                err = RequestError(operation, "ConnectionError", f"{type(exc).__name__}: {exc}")
                err.maybe_applied = True
            raise err from exc

    async def call(self, operation: str, request: dict[str, Any],
                   origins: tuple[Any, ...] = (), *, idempotent: bool = True) -> dict[str, Any]:
        """Send with the shared retry loop (see :meth:`dynaorm.transport.sync.Transport.call`)."""
        # the first attempt made here, as the sync transport does (no retry loop
        # generator for a request answered at once); a failed one goes on in the loop
        listeners = self.table._listeners
        recorder, observe = start_request(listeners, operation, request)
        start = time.perf_counter() if observe else 0.0
        try:
            out = await self.send(operation, request)
        except RequestError as exc:
            failed = exc
        else:
            return answered(recorder, listeners, observe, operation, request, out, 1, start,
                            origins)
        loop = attempt_loop(self, listeners, operation, request, origins,
                            idempotent=idempotent, first=(recorder, observe, start, failed))
        step = next(loop)
        while True:
            try:
                if isinstance(step, Send):
                    try:
                        out = await self.send(step.operation, step.request)
                    except RequestError as exc:
                        step = loop.throw(exc)
                        continue
                    step = loop.send(out)
                else:
                    await asyncio.sleep(step.seconds)
                    step = next(loop)
            except StopIteration as stop:
                result: dict[str, Any] = stop.value
                return result


_TRANSPORTS: weakref.WeakKeyDictionary[Any, AsyncTransport] = weakref.WeakKeyDictionary()
_RETIRED: list[AsyncTransport] = []  # replaced (the table moved), clients still to close


def transport_of(table: Table) -> AsyncTransport:
    """The table's async transport (one per table and endpoint; a ``Table.connect`` to
    another endpoint gets a new one)."""
    transport = _TRANSPORTS.get(table)
    if transport is None or (transport.endpoint_url, transport.region) != (
            table.endpoint_url, table.region):
        if transport is not None and transport._contexts:
            _RETIRED.append(transport)
        transport = _TRANSPORTS[table] = AsyncTransport(table)
    return transport


async def client(table: Table) -> Any:
    """The aiobotocore client AsyncSessions on ``table`` send through in this event loop
    (register handlers on ``client.meta.events`` to instrument or inject faults)."""
    return await transport_of(table).client()


async def close(table: Table | None = None) -> None:
    """Close the aiobotocore clients of ``table`` (default: of every table) made in the
    running event loop; call it before the loop ends (a later request makes new ones)."""
    if table is not None:
        found = _TRANSPORTS.get(table)
        transports = [found] if found is not None else []
    else:
        transports = [*_TRANSPORTS.values(), *_RETIRED]
    for transport in transports:
        await transport.close()
    _RETIRED[:] = [t for t in _RETIRED if t._contexts]
