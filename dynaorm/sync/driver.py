"""The sync driver of :mod:`dynaorm.core.protocol`: requests through the sync transport,
concurrent steps on threads (each thread keeps the caller's context, so a commit's
recording and ``on_request`` hooks see every request)."""

from __future__ import annotations

import contextvars
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, TypeVar

from dynaorm._types import Item
from dynaorm.core.protocol import Backoff, Call, Emit, Gather, Proto, Stream

if TYPE_CHECKING:
    from dynaorm.transport.sync import Transport

__all__ = ["MAX_WORKERS", "iterate", "run"]

R = TypeVar("R")
#: Threads running concurrent steps (shards, segments, batches) at once, at most.
MAX_WORKERS = 16


def _perform(transport: Transport, step: Any) -> Any:
    if isinstance(step, Call):
        return transport.call(step.operation, step.request, step.origins,
                              idempotent=step.idempotent)
    if isinstance(step, Backoff):
        delay = min(transport.backoff(step.attempt), transport.max_wait - step.waited)
        if delay <= 0:
            return 0.0
        transport._sleep(delay)
        return delay
    if isinstance(step, Gather):
        return _gather(transport, step)
    raise TypeError(f"not a protocol step: {step!r}")  # pragma: no cover


def _gather(transport: Transport, step: Gather) -> list[Any]:
    protos = list(step.protos)
    _ = transport.client  # made once here, not by racing threads
    workers = min(step.concurrency, len(protos), MAX_WORKERS)
    contexts = [contextvars.copy_context() for _ in protos]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        futures = [pool.submit(ctx.run, run, transport, p) for ctx, p in zip(
            contexts, protos, strict=True)]
        try:
            return [f.result() for f in futures]
        except BaseException:
            for f in futures:
                f.cancel()
            raise


def run(transport: Transport, proto: Proto[R]) -> R:
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
            value = _perform(transport, step)
        except Exception as exc:  # thrown into the protocol, which may handle it
            error = exc


def iterate(transport: Transport, stream: Stream) -> Iterator[Sequence[Item]]:
    """The batches of items ``stream`` emits, in order, fetched lazily; closing the
    iterator closes it."""
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
                if type(step) is Call:  # a page's request (the common step): _perform's
                    value = transport.call(step.operation, step.request, step.origins,
                                           idempotent=step.idempotent)  # first case, inline
                else:
                    value = _perform(transport, step)
            except Exception as exc:
                error = exc
    finally:
        stream.close()
