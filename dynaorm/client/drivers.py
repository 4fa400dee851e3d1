"""The two drivers of a :class:`~dynaorm.Client`: they perform what the pump
(:func:`dynaorm.protocol.steps.expand`) leaves, and nothing else.

- ``Send``: the client's transport's ``send`` (blocking) / ``await client.asend``; a
  request to another service (KMS) through the client's botocore client of it (blocking)
  / the same in a worker thread, off the loop;
- ``Wait``: ``time.sleep`` / ``await asyncio.sleep``;
- ``Gather``: threads, each in a copy of the caller's context / tasks, at most the
  client's pool size at once;
- ``Await`` (what a hook returned): refused in a sync session (``TypeError``) / awaited;
- ``Emit``: yielded by ``iterate`` / by the async ``iterate``, or handed to
  ``collect``'s callback (``all()``: no async generator on a request's way).

A ``BaseException`` while a step is performed (a cancelled task, ``KeyboardInterrupt``) is
thrown into the protocol before it goes on, so the phases it was in end with it.
Both read the client's one :class:`~dynaorm.protocol.policy.Policy` when a protocol starts,
so retries, waits, hooks and consumed-capacity reporting are the same for both kinds of
session. A rule written in both would belong in the protocol.
"""

import contextvars
import time
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Iterator, Sequence
from typing import Any

from dynaorm._types import Item
from dynaorm.protocol.hooks import DYNAMODB, Operation
from dynaorm.protocol.policy import MAX_CONCURRENCY, Policy
from dynaorm.protocol.steps import Await, Emit, Gather, Proto, R, Send, Stream, Wait, expand

#: what a read's consumer makes of each batch of items (``None``: the batch as it is)
Decode = Callable[[Sequence[Item]], Iterable[Any]] | None


def _refuse(step: Await) -> None:
    close = getattr(step.awaitable, "close", None)
    if close is not None:
        close()  # never awaited: closed, not left to warn
    raise TypeError("a hook returned an awaitable (a coroutine callback?) in a sync "
                    "session: it needs an AsyncSession")


class SyncDriver:
    """Runs protocols with blocking I/O through its client."""

    __slots__ = ("_client", "sleep")

    def __init__(self, client: Any):  # (its Client: not imported, no circle)
        self._client = client
        #: how a ``Wait`` sleeps (``time.sleep``; a test may give a fake clock's)
        self.sleep: Callable[[float], object] = time.sleep

    def run(self, proto: Proto[R], operation: Operation | None = None, *,
            within: Operation | None = None, policy: Policy | None = None) -> R:
        """Drive ``proto`` to its result (``operation``: what the hooks are told it is;
        ``within``: the operation it is a gathered part of; ``policy``: the client's, as
        the caller read it for this operation, else read now)."""
        drive = self._drive(expand(proto, policy or self._client.policy, operation,
                                   within=within))
        try:
            next(drive)
        except StopIteration as stop:
            result: R = stop.value
            return result
        drive.close()
        raise TypeError("run() drives protocols that emit no items; iterate a read")

    def iterate(self, stream: Stream, operation: Operation | None,
                decode: Decode = None) -> Iterator[Any]:
        """The batches of items ``stream`` emits, in order, fetched lazily (each page one
        ``operation`` for the hooks), or what ``decode`` makes of each, one at a time (a
        failure there fails the page: hooks and spans see what the caller sees); closing
        the iterator closes the stream."""
        return self._drive(expand(stream, self._client.policy, operation, paged=True), decode)

    def _drive(self, steps: Proto[R], decode: Decode = None
               ) -> Generator[Any, None, R]:
        """The one loop: perform each step of the pumped protocol, yield the items it
        emits (decoded), return its result; closed, it closes the protocol."""
        value = None
        error = None
        try:
            while True:
                try:
                    step = steps.send(value) if error is None else steps.throw(error)
                except StopIteration as stop:
                    result: R = stop.value
                    return result
                value = error = None
                if type(step) is Emit:
                    try:
                        yield from (step.items,) if decode is None else decode(step.items)
                    except Exception as exc:  # the items failed their consumer
                        error = exc
                    continue
                try:
                    value = self._perform(step)
                except Exception as exc:
                    error = exc
                except BaseException as exc:  # interrupted: the protocol ends with it
                    steps.throw(exc)
                    raise
        finally:
            steps.close()

    def _perform(self, step: Any) -> Any:
        kind = type(step)
        if kind is Send:
            client = self._client
            if step.service != DYNAMODB:  # (a request to another service: KMS)
                return client.send(step.operation, step.request, via=step.via,
                                   service=step.service)
            transport = client._transport or client._transport_for(step.operation)
            return transport.send(step.operation, step.request, step.reader)
        if kind is Wait:
            self.sleep(step.seconds)
            return step.seconds
        if kind is Gather:
            return self._gather(step)
        if kind is Await:
            _refuse(step)
        raise TypeError(f"not a protocol step: {step!r}")  # pragma: no cover

    def _gather(self, step: Gather) -> list[Any]:
        from concurrent.futures import ThreadPoolExecutor  # (threads only where gathered)

        protos = step.protos
        workers = min(step.concurrency, len(protos), MAX_CONCURRENCY)
        with ThreadPoolExecutor(max_workers=workers) as pool:
            futures = [pool.submit(contextvars.copy_context().run, self.run, p,
                                   within=step.within) for p in protos]
            try:
                return [f.result() for f in futures]
            except BaseException:
                for f in futures:
                    f.cancel()
                raise


class AsyncDriver:
    """Runs protocols on asyncio through its client (the mirror of :class:`SyncDriver`)."""

    __slots__ = ("_client",)

    def __init__(self, client: Any):  # (its Client: not imported, no circle)
        self._client = client

    async def run(self, proto: Proto[R],
                  operation: Operation | None = None, *,
                  within: Operation | None = None, policy: Policy | None = None) -> R:
        """Drive ``proto`` to its result (as :meth:`SyncDriver.run`)."""
        if operation is not None:
            operation.session = "async"
        steps = expand(proto, policy or self._client.policy, operation, within=within)
        box: list[R] = []
        try:
            if await self._until_emit(steps, box) is not None:
                raise TypeError("run() drives protocols that emit no items; iterate a read")
        finally:
            steps.close()
        return box[0]

    def iterate(self, stream: Stream, operation: Operation | None,
                decode: Decode = None) -> AsyncGenerator[Any, None]:
        """As :meth:`SyncDriver.iterate`: the batches ``stream`` emits, or what ``decode``
        makes of each, one at a time; closing the iterator closes the stream."""
        return self._batches(self._pages(stream, operation), decode)

    async def collect(self, stream: Stream, operation: Operation | None,
                      take: Callable[[Sequence[Item]], object]) -> None:
        """Hand every batch of items ``stream`` emits to ``take``, in order, as it comes
        (what :meth:`iterate` yields, without an async generator between the pages and the
        caller: ``all()``). An exception ``take`` raises fails the page and the stream."""
        steps = self._pages(stream, operation)
        try:
            await self._until_emit(steps, [], take=take)
        finally:
            steps.close()

    def _pages(self, stream: Stream, operation: Operation | None
               ) -> Proto[None]:
        if operation is not None:
            operation.session = "async"
        return expand(stream, self._client.policy, operation, paged=True)

    async def _batches(self, steps: Proto[None], decode: Decode
                       ) -> AsyncGenerator[Any, None]:
        box: list[None] = []
        error = None
        try:
            while (items := await self._until_emit(steps, box, error)) is not None:
                error = None
                try:
                    for obj in (items,) if decode is None else decode(items):
                        yield obj
                except Exception as exc:  # the items failed their consumer: the page too
                    error = exc
        finally:
            steps.close()

    async def _until_emit(self, steps: Proto[R], box: list[R],
                          error: Exception | None = None,
                          take: Callable[[Sequence[Item]], object] | None = None
                          ) -> Sequence[Item] | None:
        """The one loop (the mirror of :meth:`SyncDriver._drive`): perform each step of
        the pumped protocol (``error`` thrown in first) until it emits items (returned,
        or handed to ``take``: a failure there is the page's) or ends (``None``; its
        result put in ``box``). A plain coroutine, so that a request's await passes
        through no async generator; the caller closes ``steps``."""
        value = None
        while True:
            try:
                step = steps.send(value) if error is None else steps.throw(error)
            except StopIteration as stop:
                box.append(stop.value)
                return None
            value = error = None
            if type(step) is Emit:
                if take is None:
                    return step.items
                try:
                    take(step.items)
                except Exception as exc:  # the items failed their consumer: the page too
                    error = exc
                continue
            try:
                value = await self._perform(step)
            except Exception as exc:
                error = exc
            except BaseException as exc:  # cancelled: the protocol ends with it (its
                steps.throw(exc)  # hooks see the cancellation), then it goes on
                raise

    async def _perform(self, step: Any) -> Any:
        kind = type(step)
        if kind is Send:
            return await self._client.asend(step.operation, step.request, step.reader,
                                            step.via, step.service)
        if kind is Wait:
            import asyncio  # (loaded by whoever runs the loop; not by import dynaorm)

            await asyncio.sleep(step.seconds)
            return step.seconds
        if kind is Gather:
            return await self._gather(step)
        if kind is Await:
            return await step.awaitable
        raise TypeError(f"not a protocol step: {step!r}")  # pragma: no cover

    async def _gather(self, step: Gather) -> list[Any]:
        import asyncio

        limit = asyncio.Semaphore(min(step.concurrency, self._client.pool_size))

        async def one(proto: Proto[Any]) -> Any:
            async with limit:
                return await self.run(proto, within=step.within)

        tasks = [asyncio.ensure_future(one(p)) for p in step.protos]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
