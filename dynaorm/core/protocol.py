"""The I/O steps of dynaorm's read and write protocols (pure: no I/O).

Everything a session does that needs DynamoDB (commit, get, find, batches, query and scan
paging) is written once as a generator that yields steps and receives their results, in
the manner of h11 for HTTP; a driver performs them: :mod:`dynaorm.sync.driver` with the sync
transport and threads, :mod:`dynaorm.aio.driver` with the async transport and asyncio.

- :class:`Call`: one request through the transport's retry loop; the driver sends back
  the response, or throws its :class:`~dynaorm.RequestError` into the generator;
- :class:`Backoff`: wait before retry round ``attempt`` of a batch (the transport's
  backoff, within its ``max_wait`` given ``waited`` so far); the result is the seconds
  waited;
- :class:`Gather`: run sub-protocols concurrently, at most ``concurrency`` at once; the
  result is the list of their results (the first failure is thrown);
- :class:`Emit`: result items of a read, in order (drivers hand them to the caller).
  A stream emits no more items at once than its consumer gives it room for (see
  ``ReadBase._run``), so a consumer that stops after a batch stops exactly where it
  would have stopped item by item.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from dynaorm._types import Item

__all__ = ["Backoff", "Call", "Emit", "Gather", "Op", "Proto", "Stream", "call", "consume",
           "forward", "gather", "pull"]

R = TypeVar("R")


@dataclass(frozen=True, slots=True, init=False)
class Call:
    """Send ``request`` (with retries); the step's result is the response."""

    operation: str
    request: dict[str, Any]
    origins: tuple[Any, ...] = ()
    idempotent: bool = True

    def __init__(self, operation: str, request: dict[str, Any], origins: tuple[Any, ...] = (),
                 idempotent: bool = True) -> None:
        # the generated __init__ of a frozen dataclass, through the slots' own setters
        # (object.__setattr__ per field cost ~0.4 us a step; every get and page has one)
        _set_operation(self, operation)
        _set_request(self, request)
        _set_origins(self, origins)
        _set_idempotent(self, idempotent)


_set_operation: Any = Call.__dict__["operation"].__set__
_set_request: Any = Call.__dict__["request"].__set__
_set_origins: Any = Call.__dict__["origins"].__set__
_set_idempotent: Any = Call.__dict__["idempotent"].__set__


@dataclass(frozen=True, slots=True)
class Backoff:
    """Wait the transport's backoff before retry round ``attempt``, within what is left
    of its ``max_wait`` after ``waited`` seconds; the step's result is the seconds waited."""

    attempt: int
    waited: float


@dataclass(frozen=True, slots=True)
class Gather:
    """Run ``protos`` concurrently (at most ``concurrency`` at once); results in order."""

    protos: Sequence[Generator[Any, Any, Any]]
    concurrency: int


@dataclass(frozen=True, slots=True)
class Emit:
    """Result items of a read, in order (a page's worth in one step: one step per
    item would cost more than the items' own decoding)."""

    items: Sequence[Item]


Op = Call | Backoff | Gather
#: A protocol: yields steps, returns its result.
Proto = Generator[Op, Any, R]
#: A read's protocol: yields steps and result items, returns nothing.
Stream = Generator[Op | Emit, Any, None]


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
