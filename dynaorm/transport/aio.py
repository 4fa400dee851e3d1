"""The async I/O: one aiobotocore client per table per event loop, and the asyncio driver
of protocols. Requests go through aiobotocore (``wire = "botocore"``) or through
:class:`dynaorm.wire.aio.AsyncWire` (``wire = "dynaorm"``), the same switch as the sync
transport's and by default following it. :meth:`AsyncTransport.run` mirrors
:meth:`dynaorm.transport.sync.Transport.run` step for step: the same pump
(:func:`~dynaorm.transport.steps.expand`, so ``Table(max_attempts, max_wait)``, the log
records, ``on_request`` events and commit recording mean the same for both kinds of
session), a ``Send`` awaited on the wire, a ``Wait`` as ``asyncio.sleep``, a ``Gather`` as
tasks (at most the client's connection pool at once)."""

from __future__ import annotations

import asyncio
import weakref
from collections.abc import AsyncIterator, Callable, Generator, Sequence
from typing import Any, Protocol, TypeVar

from dynaorm._types import Item
from dynaorm.errors import DynaormError, RequestError
from dynaorm.transport.config import (
    MAX_POOL_CONNECTIONS,
    client_settings,
    configured_endpoint,
    local_only,
)
from dynaorm.transport.config import _in_process as in_process
from dynaorm.transport.errors import map_error, method_name
from dynaorm.transport.retry import RetryPolicy
from dynaorm.transport.steps import Emit, Gather, Send, Stream, Wait, captured, expand

__all__ = ["INSTALL_HINT", "AsyncTransport", "Table"]

R = TypeVar("R")


class Table(Protocol):
    """What the async transport needs of a :class:`~dynaorm.Table`: where it is, and the
    sync transport whose retry policy and hooks it shares."""

    name: str
    endpoint_url: str | None
    region: str | None
    _listeners: list[Callable[..., object]]

    @property
    def transport(self) -> RetryPolicy:
        """The table's sync transport (its retry policy)."""
        ...  # pragma: no cover


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
    first use) or dynaorm's own async wire; retries, backoff and observation are the sync
    transport's rules."""

    #: which wire sends: ``"botocore"`` (aiobotocore's client methods) or ``"dynaorm"``
    #: (:class:`dynaorm.wire.aio.AsyncWire`); ``None``: the table's sync transport's
    #: ``wire``, so one setting decides both kinds of session. The in-process moto of
    #: :func:`dynaorm.transport.config.in_process_mock` always gets aiobotocore (moto
    #: answers botocore's HTTP in-process, no socket to send to).
    wire: str | None = None

    def __init__(self, table: Table) -> None:
        _aiobotocore()
        self.table = table
        self.endpoint_url = table.endpoint_url
        self.region = table.region
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                 asyncio.Future[Any]] = (
            weakref.WeakKeyDictionary())
        self._contexts: list[tuple[asyncio.AbstractEventLoop, Any]] = []
        self._wires: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = (
            weakref.WeakKeyDictionary())
        self._wire_lock: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                   asyncio.Lock] = weakref.WeakKeyDictionary()

    # -- the policy is the table's sync transport's (the same knobs, the same hooks) ---
    @property
    def max_attempts(self) -> int:
        """Attempts of one request, at most (the table's)."""
        return int(self.table.transport.max_attempts)

    @property
    def capacity(self) -> str | None:
        """``ReturnConsumedCapacity`` of every request that takes one (the table's)."""
        return self.table.transport.capacity

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

    # -- the wire ----------------------------------------------------------------------
    def wire_name(self) -> str:
        """The wire requests go through now: :attr:`wire`, else the table's sync
        transport's; ``"botocore"`` under moto's in-process mock whatever either says (as
        for the sync transport: moto answers inside botocore)."""
        from dynaorm.transport.sync import _moto_active, check_wire

        name = self.wire or str(getattr(self.table.transport, "wire", None) or "botocore")
        check_wire(self.table.name, name)
        if name == "dynaorm" and (_moto_active() or in_process(self._endpoint())):
            return "botocore"
        return name

    _UNRESOLVED: Any = object()
    _configured: Any = _UNRESOLVED

    def _endpoint(self) -> str | None:
        """The configured endpoint (resolved once: a botocore session is not cheap)."""
        if self._configured is self._UNRESOLVED:
            self._configured = configured_endpoint(self.endpoint_url)
        found: str | None = self._configured
        return found

    async def async_wire(self) -> Any:
        """This event loop's :class:`~dynaorm.wire.aio.AsyncWire` (made once per loop,
        from the loop's aiobotocore client: the same endpoint, region and config; closed
        with it by :meth:`close`)."""
        loop = asyncio.get_running_loop()
        found = self._wires.get(loop)
        if found is not None:
            return found
        lock = self._wire_lock.setdefault(loop, asyncio.Lock())
        async with lock:
            found = self._wires.get(loop)
            if found is None:
                from dynaorm.wire import credentials_for
                from dynaorm.wire.aio import AsyncWire

                made = await self.client()
                # the credential chain may read files or ask a metadata service: off the loop
                creds = await asyncio.to_thread(credentials_for, self.endpoint_url)
                found = AsyncWire(made, creds)
                self._wires[loop] = found
                self._contexts.append((loop, found))
        return found

    async def close(self) -> None:
        """Close this event loop's client and wire (a later request makes new ones)."""
        loop = asyncio.get_running_loop()
        self._clients.pop(loop, None)
        self._wires.pop(loop, None)
        mine = [c for lp, c in self._contexts if lp is loop]
        self._contexts = [(lp, c) for lp, c in self._contexts if lp is not loop]
        for context in mine:
            await context.__aexit__(None, None, None)

    # -- requests --------------------------------------------------------------------
    async def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request once; errors are mapped to :class:`~dynaorm.RequestError`.
        The table's sync transport's ``interceptor`` (if any) is called around the raw
        send, as for the sync transport."""
        interceptor = getattr(self.table.transport, "interceptor", None)
        if interceptor is not None:
            answer: dict[str, Any] = await interceptor.send_async(
                operation, request, lambda: self._send(operation, request))
            return answer
        return await self._send(operation, request)

    async def _send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        if self.wire_name() == "dynaorm":
            wire = self._wires.get(asyncio.get_running_loop())
            if wire is None:
                wire = await self.async_wire()
            pending = wire.send(operation, request)
        else:
            made = await self.client()
            pending = getattr(made, method_name(operation))(**request)
        try:
            result: dict[str, Any] = await pending
            return result
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            err = map_error(operation, request, exc)
            if err is None:  # an aiohttp or socket failure aiobotocore did not wrap
                err = RequestError(operation, "ConnectionError", f"{type(exc).__name__}: {exc}")
                err.maybe_applied = True
            raise err from exc

    # -- the driver (mirrors dynaorm.transport.sync.Transport's) -----------------------
    async def run(self, proto: Generator[Any, Any, R]) -> R:
        """Drive ``proto`` to its result (through :meth:`iterate`: one loop)."""
        box: list[R] = []
        async for _ in self.iterate(captured(proto, box)):
            raise TypeError("run() drives protocols that emit no items; iterate a read")
        return box[0]

    async def iterate(self, stream: Stream) -> AsyncIterator[Sequence[Item]]:
        """The batches of items ``stream`` emits, in order, fetched lazily."""
        steps = expand(stream, self)
        value: Any = None
        error: Exception | None = None
        try:
            while True:
                try:
                    step = steps.send(value) if error is None else steps.throw(error)
                except StopIteration:
                    return
                value = error = None
                if isinstance(step, Emit):
                    yield step.items
                    continue
                try:
                    value = await self._perform(step)
                except Exception as exc:
                    error = exc
        finally:
            steps.close()

    async def _perform(self, step: Any) -> Any:
        if isinstance(step, Send):
            return await self.send(step.operation, step.request)
        if isinstance(step, Wait):
            await asyncio.sleep(step.seconds)
            return step.seconds
        if isinstance(step, Gather):
            return await self._gather(step)
        raise TypeError(f"not a protocol step: {step!r}")  # pragma: no cover

    async def _gather(self, step: Gather) -> list[Any]:
        if self.wire_name() == "dynaorm":  # made once, before the tasks need it
            await self.async_wire()
        else:
            await self.client()
        limit = asyncio.Semaphore(min(step.concurrency, MAX_POOL_CONNECTIONS))

        async def one(proto: Generator[Any, Any, Any]) -> Any:
            async with limit:
                return await self.run(proto)

        tasks = [asyncio.ensure_future(one(p)) for p in step.protos]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
