"""The steps of dynaorm's protocols, and the one pump that expands them (pure: no I/O).

Everything a session does that needs DynamoDB (commit, get, find, batches, query and scan
paging, the audit) is written once as a generator -- a *protocol* -- that yields steps and
receives their results, in the manner of h11 for HTTP. The vocabulary:

- :class:`Call`: one request with the retry rules (:mod:`dynaorm.transport.retry`); the
  result is the response, or the :class:`~dynaorm.RequestError` is thrown in;
- :class:`Send`: one attempt of one request -- the only step that touches the network;
- :class:`Backoff`: wait the retry policy's backoff before retry round ``attempt``, within
  what is left of its ``max_wait`` after ``waited`` seconds; the result is the seconds
  waited;
- :class:`Wait`: sleep ``seconds``;
- :class:`Gather`: run sub-protocols concurrently (at most ``concurrency`` at once); the
  result is the list of their results (the first failure is thrown in);
- :class:`Emit`: result items of a read, in order. A stream emits no more items at once
  than its consumer gives it room for, so a consumer that stops after a batch stops
  exactly where it would have stopped item by item.

:func:`expand` is the pump every protocol goes through: it turns a :class:`Call` into the
retry protocol (which yields :class:`Send` and :class:`Backoff`) and a :class:`Backoff`
into a :class:`Wait`, so a driver (:meth:`dynaorm.transport.sync.Transport.run`,
:meth:`dynaorm.transport.aio.AsyncTransport.run`) only performs ``Send``, ``Wait`` and
``Gather`` and hands ``Emit``-ted items on. No rule lives in a driver.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from dynaorm._types import Item
from dynaorm.errors import RequestError
from dynaorm.transport import retry
from dynaorm.transport.retry import RetryPolicy

__all__ = ["Backoff", "Call", "Emit", "Gather", "Primitive", "Proto", "Send", "Step", "Stream",
           "Wait", "attempts", "call", "captured", "consume", "expand", "forward", "gather", "pull"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class Call:
    """Send ``request`` with the retry rules; the step's result is the response. A
    request that is not ``idempotent`` is never resent after an attempt that may have
    been applied; ``origins`` are passed on to ``on_request`` hooks."""

    operation: str
    request: dict[str, Any]
    origins: tuple[Any, ...] = ()
    idempotent: bool = True


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request`` once; the step's result is the response (a failure is thrown in
    as a :class:`~dynaorm.RequestError`)."""

    operation: str
    request: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Backoff:
    """Wait the policy's backoff before retry round ``attempt``, within what is left of
    its ``max_wait`` after ``waited`` seconds; the step's result is the seconds waited."""

    attempt: int
    waited: float


@dataclass(frozen=True, slots=True)
class Wait:
    """Sleep ``seconds``."""

    seconds: float


@dataclass(frozen=True, slots=True)
class Gather:
    """Run ``protos`` concurrently (at most ``concurrency`` at once); results in order."""

    protos: Sequence[Generator[Any, Any, Any]]
    concurrency: int


@dataclass(frozen=True, slots=True)
class Emit:
    """Result items of a read, in order (a page's worth in one step)."""

    items: Sequence[Item]


Step = Call | Send | Backoff | Wait | Gather | Emit
#: What :func:`expand` leaves for a driver to perform.
Primitive = Send | Wait | Gather | Emit
#: A protocol: yields steps, returns its result.
Proto = Generator[Step, Any, R]
#: A read's protocol: yields steps and result items, returns nothing.
Stream = Generator[Step, Any, None]


def expand(proto: Generator[Any, Any, R], policy: RetryPolicy
           ) -> Generator[Primitive, Any, R]:
    """Drive ``proto``: a :class:`Call` runs the retry protocol, a :class:`Backoff` becomes
    a :class:`Wait` within the policy's ``max_wait``; every other step is yielded for the
    driver, and its result (or failure) passed back. Returns ``proto``'s result. Closed
    early (a cancelled task, an abandoned read), it closes ``proto`` at once, in the
    closer's context (its ``finally`` blocks run there, not whenever it is collected)."""
    value: Any = None
    error: Exception | None = None
    try:
        while True:
            try:
                step = proto.send(value) if error is None else proto.throw(error)
            except StopIteration as stop:
                result: R = stop.value
                return result
            value = error = None
            try:
                if isinstance(step, Call):
                    value = yield from expand(attempts(policy, step), policy)
                elif isinstance(step, Backoff):
                    delay = min(policy.backoff(step.attempt), policy.max_wait - step.waited)
                    value = 0.0
                    if delay > 0:
                        yield Wait(delay)
                        value = delay
                else:
                    value = yield step
            except Exception as exc:  # thrown into the protocol, which may handle it
                error = exc
    finally:
        proto.close()


def attempts(policy: RetryPolicy, step: Call) -> Proto[dict[str, Any]]:
    """The retry protocol of one :class:`Call`: at most ``policy.max_attempts`` attempts
    (:class:`Send`), a :class:`Backoff` before each retry, only failures that
    :func:`~dynaorm.transport.retry.retryable` allows, and never a resend of a request that
    is not idempotent after an attempt that may have been applied. Every attempt is
    observed and recorded (:mod:`dynaorm.transport.retry`). Returns the response, or raises
    the last :class:`~dynaorm.RequestError` (``maybe_applied`` and ``attempts`` set)."""
    operation, origins = step.operation, step.origins
    request = retry.with_capacity(operation, step.request, policy.capacity)
    listeners = policy.listeners
    recorder, observe = retry.start_request(listeners, operation, request)
    attempt = 0
    waited = 0.0
    maybe_applied = False
    while True:
        attempt += 1
        start = time.perf_counter() if observe else 0.0
        try:
            out: dict[str, Any] = yield Send(operation, request)
        except RequestError as error:
            if observe:
                retry.observe_attempt(listeners, operation, request, None, error, attempt,
                                      start, origins)
            maybe_applied = maybe_applied or error.maybe_applied
            if attempt >= policy.max_attempts or not retry.retryable(error) or (
                    maybe_applied and not step.idempotent):
                error.maybe_applied = maybe_applied
                error.attempts = attempt
                if attempt > 1:
                    error.args = (f"{error.args[0]} (after {attempt} attempts)",
                                  *error.args[1:])
                raise
            waited += yield Backoff(attempt, waited)
        else:
            return retry.answered(recorder, listeners, observe, operation, request, out,
                                  attempt, start, origins)


def captured(proto: Generator[Any, Any, R], box: list[R]) -> Stream:
    """``proto`` as a stream that leaves its result in ``box``: what a driver's ``run``
    iterates, so that each driver has one loop (``iterate``)."""
    box.append((yield from proto))


def call(operation: str, request: dict[str, Any], origins: tuple[Any, ...] = (), *,
         idempotent: bool = True) -> Proto[dict[str, Any]]:
    """The response to one request."""
    out: dict[str, Any] = yield Call(operation, request, origins, idempotent)
    return out


def gather(protos: Sequence[Proto[R]], concurrency: int) -> Proto[list[R]]:
    """The results of ``protos`` run concurrently (sequentially when only one)."""
    if not protos:
        return []
    if len(protos) == 1 or concurrency <= 1:
        results: list[R] = []
        for p in protos:
            results.append((yield from p))
        return results
    out: list[R] = yield Gather(protos, concurrency)
    return out


def consume(stream: Stream, on_items: Callable[[Sequence[Item]], bool]) -> Proto[bool]:
    """Drive ``stream``, passing its steps on (and their results and failures back),
    handing each batch of items to ``on_items`` until it returns ``True`` (then:
    ``True``) or the stream ends (``False``). The stream stays usable after an early
    stop."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = stream.send(value) if error is None else stream.throw(error)
        except StopIteration:
            return False
        value = error = None
        if isinstance(step, Emit):
            if on_items(step.items):
                return True
            continue
        try:
            value = yield step
        except Exception as exc:  # passed back into the stream, which may handle it
            error = exc


def pull(stream: Stream, n: int | None) -> Proto[list[Item]]:
    """The next ``n`` items (all, for ``None``) of ``stream``, which stays usable (a
    stream given room for ``n`` emits no more; of one that does, the first ``n``)."""
    items: list[Item] = []
    if n is not None and n <= 0:
        return items

    def take(batch: Sequence[Item]) -> bool:
        items.extend(batch)
        return n is not None and len(items) >= n

    yield from consume(stream, take)
    if n is not None:
        del items[n:]
    return items


def forward(stream: Stream, stop: Callable[[Sequence[Item]], bool]) -> Stream:
    """``stream``'s steps and items, ending after the batch for which ``stop`` is true."""
    value: Any = None
    error: BaseException | None = None
    while True:
        try:
            step = stream.send(value) if error is None else stream.throw(error)
        except StopIteration:
            return
        value = error = None
        try:
            value = yield step
        except Exception as exc:
            error = exc
            continue
        if isinstance(step, Emit) and stop(step.items):
            stream.close()
            return
