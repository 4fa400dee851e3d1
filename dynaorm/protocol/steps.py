"""The steps of dynaorm's protocols, and the one pump that expands them (pure: no I/O).

Everything a session does that needs DynamoDB (commit, get, find, batches, query and scan
paging, the audit, a table's administration) is written once as a generator -- a
*protocol* -- that yields steps and receives their results, in the manner of h11 for HTTP.
The vocabulary:

- :class:`Call`: one request with the retry rules (:mod:`dynaorm.protocol.policy`); the
  result is the response, or the :class:`~dynaorm.RequestError` is thrown in;
- :class:`Send`: one attempt of one request -- the only step that touches the network;
- :class:`Backoff`: wait the policy's backoff before retry round ``attempt``, within what
  is left of its ``max_wait`` after ``waited`` seconds; the result is the seconds waited;
- :class:`Wait`: sleep ``seconds``;
- :class:`Gather`: run sub-protocols concurrently (at most ``concurrency`` at once); the
  result is the list of their results (the first failure is thrown in);
- :class:`Emit`: result items of a read, in order. A stream emits no more items at once
  than its consumer gives it room for, so a consumer that stops after a batch stops
  exactly where it would have stopped item by item;
- :class:`Await`: something a hook returned to be awaited (an ``AsyncSession``'s driver
  awaits it; a sync driver refuses it).

:func:`expand` is the pump every protocol goes through: it runs a :class:`Call` as the
retry protocol :func:`attempts` (which yields ``Send``, ``Wait`` and ``Await`` and calls
the phase hooks around each attempt), turns a :class:`Backoff` into a :class:`Wait`, and
reports the session operation to the hooks (:mod:`dynaorm.protocol.hooks`). A driver
(:class:`dynaorm.client.drivers.SyncDriver`, :class:`~dynaorm.client.drivers.AsyncDriver`)
only performs ``Send``, ``Wait``, ``Gather`` and ``Await`` and hands ``Emit``-ted items on.
No rule lives in a driver.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Awaitable, Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar

from dynaorm._types import Item, Reader
from dynaorm.errors import DynaormError, RequestError
from dynaorm.protocol.capacity import Meter, Shares, attribute, searched
from dynaorm.protocol.events import RECORDER, capacity_of, shape_problem
from dynaorm.protocol.hooks import (
    DYNAMODB,
    Attempt,
    HookLike,
    LogHook,
    Operation,
    close_all,
    end,
    logger,
    start,
    wants_items,
)
from dynaorm.protocol.policy import HELD_TO, SERVER_ERRORS, Budget, Policy, retryable

R = TypeVar("R")
_LOG = LogHook()
#: the level of :data:`logging.DEBUG` (without importing :mod:`logging` to read it)
_DEBUG = 10
#: the operations whose requests take ``ReturnConsumedCapacity`` (``SearchVectors``
#: reports vector search bytes, not capacity units)
CAPACITY_OPERATIONS: Final = frozenset({
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem",
    "BatchWriteItem", "TransactGetItems", "TransactWriteItems", "SearchVectors"})
#: the requests a capacity budget holds: those that consume capacity units, and the
#: requests to other services that rules send (named ``service:Name``: the KMS requests of
#: keyrings, the S3 requests of offloaded values), which wait on it, consuming none; not a
#: table's administration, nor a vector search (metered apart, in bytes)
HELD_OPERATIONS: Final = (CAPACITY_OPERATIONS - {"SearchVectors"}) | {
    "kms:GenerateDataKey", "kms:Decrypt", "kms:GenerateMac", "kms:Encrypt", "s3:PutObject",
    "s3:GetObject", "s3:DeleteObjects", "s3:ListObjectsV2", "s3:HeadObject"}


@dataclass(frozen=True, slots=True)
class Call:
    """Send ``request`` with the retry rules; the step's result is the response. A
    request that is not ``idempotent`` is never resent after an attempt that may have
    been applied; ``origins`` are passed on to the hooks."""

    operation: str
    request: dict[str, Any]
    origins: tuple[Any, ...] = ()
    idempotent: bool = True
    #: how a wire that has the answer's bytes may read them itself (see :class:`Send`);
    #: never used when hooks see the attempt (they get the answer as botocore shapes it)
    reader: Reader | None = None
    #: a request that is not idempotent, met by a server error (5xx) that may have been
    #: applied: the read (``probe``) that may prove it was not, and the judgment of what
    #: it read (``unapplied(item)``): proved, it is retried within the attempts left
    probe: Call | None = None
    unapplied: Callable[[dict[str, Any] | None], bool] | None = None
    #: the capacity budget of the read or bulk call it is part of (``None``: the client's)
    budget: Budget | None = None
    #: a request to another AWS service (its ``operation`` named ``service:Name``, e.g.
    #: ``"kms:Decrypt"``): the botocore client of that service it goes through, or a
    #: region name (``None``: the client's own, for its region; see :class:`Send`)
    via: Any = None
    #: what each row a write request writes weighs on each table and index, to attribute
    #: its consumed capacity by entity and role (:mod:`dynaorm.protocol.capacity`): a
    #: function, called only for an answer that reports some
    shares: Callable[[], Shares] | None = None
    #: the AWS service the request goes to: ``"dynamodb"``, or another one a rule's
    #: key material needs (``"kms"``, its ``operation`` then named ``kms:Name``)
    service: str = DYNAMODB


@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request`` once; the step's result is the response (a failure is thrown in
    as a :class:`~dynaorm.RequestError`). ``reader``: a wire holding the answer's checked
    bytes may give what it returns instead (``None``: it declines; the answer decodes as
    always); a wire without bytes ignores it. A request to another AWS ``service``
    (``"kms"``; its ``operation`` named ``service:Name``, ``"kms:Decrypt"``) the client
    sends through botocore's client of that service (``via``: the one to use, or a region
    name; ``None``: the client's own)."""

    operation: str
    request: dict[str, Any]
    reader: Reader | None = None
    via: Any = None
    service: str = DYNAMODB


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
    """Run ``protos`` concurrently (at most ``concurrency`` at once); results in order.
    ``within``: the session operation they are part of (set by the pump; a driver runs
    each with it, so that their attempts are the operation's)."""

    protos: Sequence[Generator[Any, Any, Any]]
    concurrency: int
    within: Operation | None = None


@dataclass(frozen=True, slots=True)
class Emit:
    """Result items of a read, in order (a page's worth in one step)."""

    items: Sequence[Item]


@dataclass(frozen=True, slots=True)
class Await:
    """Await ``awaitable`` (what a hook's ``on_end`` returned)."""

    awaitable: Awaitable[Any]


Step = Call | Send | Backoff | Wait | Gather | Emit | Await
#: What :func:`expand` leaves for a driver to perform.
Primitive = Send | Wait | Gather | Emit | Await
#: A protocol: yields steps, returns its result.
Proto = Generator[Step, Any, R]
#: A read's protocol: yields steps and result items, returns nothing.
Stream = Generator[Step, Any, None]


def expand(proto: Generator[Any, Any, R], policy: Policy,
           operation: Operation | None = None, *, paged: bool = False,
           within: Operation | None = None) -> Generator[Primitive, Any, R]:
    """Drive ``proto``: a :class:`Call` runs the retry protocol :func:`attempts`, a
    :class:`Backoff` becomes a :class:`Wait` within the policy's ``max_wait``; every other
    step is yielded for the driver, and its result (or failure) passed back. Returns
    ``proto``'s result.

    ``operation``: the session operation ``proto`` is, reported to the policy's hooks
    (``on_start`` before it, ``on_end`` after it, with its error); ``paged``: each page of
    a read is one operation (from its first request, a Call or a Gather, to the items it
    emits); ``within``: the operation ``proto`` is a part of (a gathered sub-protocol: its
    attempts, and those of what it gathers, are that operation's). Closed early (a
    cancelled task, an abandoned read), it closes ``proto`` at once, in the closer's
    context (its ``finally`` blocks run there, not whenever it is collected)."""
    hooks = policy.hooks if operation is not None else ()
    current = None  # the operation open now (a page, or the whole)
    tokens = []
    emitted = False  # the open page's items are with its consumer (who may fail on them)
    if hooks and not paged:
        operation.error = None  # type: ignore[union-attr]  # (run again: its own outcome)
        current, tokens = operation, start(hooks, operation)  # type: ignore[arg-type]
    value: Any = None
    error = None
    try:
        while True:
            try:
                step = proto.send(value) if error is None else proto.throw(error)
            except StopIteration as stop:
                result: R = stop.value
                return result
            value = error = None
            kind = type(step)
            if hooks and paged:
                assert operation is not None
                current, tokens, emitted = _page(hooks, operation, current, tokens, kind,
                                                 emitted)
            part_of = current if current is not None else within
            try:
                if kind is Call:
                    value = yield from attempts(policy, step, part_of)
                elif kind is Backoff:
                    value = yield from _backoff(policy, step)
                elif kind is Gather and part_of is not None:
                    value = yield dataclasses.replace(step, within=part_of)
                else:
                    value = yield step
            except Exception as exc:  # thrown into the protocol, which may handle it
                error = exc
    except BaseException as exc:  # the protocol failed, or was cancelled or closed mid-way
        _failed(current, emitted, exc)
        raise
    finally:
        proto.close()
        if current is not None:
            close_all(end(hooks, current, tokens))


def _failed(current: Operation | None, emitted: bool, exc: BaseException) -> None:
    """The open operation ended by ``exc`` (not a consumer of its items that had enough)."""
    if current is not None and not (emitted and type(exc) is GeneratorExit):
        current.error = exc


def _page(hooks: Sequence[HookLike], operation: Operation, current: Operation | None,
          tokens: list[object], kind: type, emitted: bool
          ) -> tuple[Operation | None, list[object], bool]:
    """The page of a read open after a step of ``kind``, and whether its items are with
    their consumer: a page starts at its first request (a Call or a Gather) and ends when
    its consumer, given its items, asks for more (what it makes of them, a decoding that
    fails, is the page's outcome)."""
    if emitted and kind is not Emit:
        close_all(end(hooks, current, tokens))  # type: ignore[arg-type]
        current, tokens = None, []
    if current is None and kind in (Call, Gather):
        current = dataclasses.replace(operation)
        return current, start(hooks, current), False
    return current, tokens, current is not None and kind is Emit


def _backoff(policy: Policy, step: Backoff) -> Generator[Primitive, Any, float]:
    """A :class:`Backoff` as the :class:`Wait` it is (within ``max_wait``): the seconds."""
    delay = min(policy.backoff(step.attempt), policy.max_wait - step.waited)
    if delay <= 0:
        return 0.0
    yield Wait(delay)
    return delay


def debug_logged() -> bool:
    """Whether a DEBUG record on the ``dynaorm`` logger would be emitted (then each attempt
    is logged): never while nothing has imported :mod:`logging` (nothing can have lowered
    a level or attached a handler, and DEBUG is below the last-resort handler's WARNING),
    so a program that configures no logging does not load it for this check."""
    return "logging" in sys.modules and logger().isEnabledFor(_DEBUG)


def _held(policy: Policy, step: Call) -> tuple[Budget | None, dict[str, Any]]:
    """The capacity budget that holds ``step``'s request (one of :data:`HELD_OPERATIONS`:
    the step's, the context's (:data:`HELD_TO`), else the policy's), and the request as
    sent: asking for consumed capacity as the policy says, or ``TOTAL`` for a budget to
    count it."""
    request = step.request
    budget = (step.budget or HELD_TO.get() or policy.budget) if (
        step.operation in HELD_OPERATIONS) else None
    mode = policy.capacity or (
        "TOTAL" if budget and "ReturnConsumedCapacity" not in request else None)
    if mode is None or step.operation not in CAPACITY_OPERATIONS or (
            request.get("ReturnConsumedCapacity") == mode):
        return budget, request
    return budget, {**request, "ReturnConsumedCapacity": mode}


def _attempt(hooks: Sequence[HookLike], step: Call, request: dict[str, Any], number: int,
             within: Operation | None
             ) -> Generator[Primitive, Any, tuple[dict[str, Any] | None, RequestError | None]]:
    """One attempt with hooks: their ``on_start`` (a hook may answer it), the
    :class:`Send` unless answered (with the step's reader unless a hook reads items:
    ``Hook.wants_items``), and their ``on_end`` (awaiting what they return); the answer or
    the failure."""
    attempt = Attempt(step.operation, request, number, step.origins, within=within,
                      shares=step.shares, service=step.service)
    wanted = wants_items(hooks)  # (asked once: the reader's and the answer's items)
    tokens = start(hooks, attempt)
    answer = None  # the wire's (a hook's answer instead is checked: see below)
    if attempt.response is None and attempt.error is None:
        attempt.sent = True
        began = time.perf_counter()
        try:
            attempt.response = answer = yield Send(
                step.operation, request, None if wanted else step.reader, step.via,
                step.service)
        except RequestError as exc:
            attempt.error = exc
        except BaseException:  # cancelled, or its read abandoned: it ends all the same
            attempt.elapsed = time.perf_counter() - began
            attempt.interrupted = True
            close_all(end(hooks, attempt, tokens, wanted))
            raise
        attempt.elapsed = time.perf_counter() - began
    ending = end(hooks, attempt, tokens, wanted)
    for awaitable in ending:
        try:
            yield Await(awaitable)
        except Exception:  # a faulty hook's awaitable: logged, the attempt stands
            logger().exception("an awaitable a hook returned at the end of %s failed",
                               step.operation)
        except BaseException:
            close_all(ending)  # every other hook still ends
            raise
    if attempt.response is None and attempt.error is None:
        return {}, None  # a hook took both away: an empty answer
    if attempt.error is not None and not isinstance(attempt.error, RequestError):
        raise DynaormError(f"a hook set {step.operation}'s attempt.error to "
                           f"{attempt.error!r}: it takes a dynaorm.RequestError or None")
    problem = (None if attempt.error is not None or attempt.response is answer
               else shape_problem(attempt.response))
    if problem is not None:
        raise DynaormError(f"a hook set {step.operation}'s attempt.response to "
                           f"{problem}: it takes a DynamoDB answer (a dict) or None")
    return attempt.response, attempt.error


def _judged(policy: Policy, step: Call, error: RequestError, number: int,
            maybe_applied: bool, within: Operation | None) -> Generator[Primitive, Any, bool]:
    """Whether ``step``'s request may have been applied after ``error`` failed attempt
    ``number``: an earlier attempt may have been, or this one, unless it was a server error
    (5xx) its probe proves unapplied (then it is retried; a probe that fails proves
    nothing). Raises ``error`` as the last attempt's when no other may follow."""
    if (error.maybe_applied and not maybe_applied and number < policy.max_attempts
            and error.code in SERVER_ERRORS and step.probe is not None):
        assert step.unapplied is not None
        try:
            out = yield from attempts(policy, step.probe, within)
        except RequestError:
            pass
        else:
            error.maybe_applied = not step.unapplied(out.get("Item"))
    maybe_applied = maybe_applied or error.maybe_applied
    if number >= policy.max_attempts or not retryable(error) or (
            maybe_applied and not step.idempotent):
        raise _last(error, number, maybe_applied)
    return maybe_applied


def _last(error: RequestError, number: int, maybe_applied: bool) -> RequestError:
    """``error`` as the last of ``number`` attempts (said in its message after several)."""
    error.maybe_applied = maybe_applied
    error.attempts = number
    if number > 1:
        error.args = (f"{error.args[0]} (after {number} attempts)", *error.args[1:])
    return error


def attempts(policy: Policy, step: Call, within: Operation | None = None
             ) -> Generator[Primitive, Any, dict[str, Any]]:
    """The retry protocol of one :class:`Call`: at most ``policy.max_attempts`` attempts
    (each between its hooks' ``on_start`` and ``on_end``, the DEBUG log first when the
    ``dynaorm`` logger is at DEBUG), a :class:`Wait` of the policy's backoff before each
    retry (within ``max_wait`` in all), only failures that
    :func:`~dynaorm.protocol.policy.retryable` allows, and never a resend of a request that
    is not idempotent after an attempt that may have been applied (a server error its
    ``probe`` proves unapplied is retried). The request and its consumed capacity are
    recorded into the commit being recorded, if any. A capacity budget holds the
    requests of :data:`HELD_OPERATIONS`: a KMS one consumes no units of it, but waits, as
    any does, while it is spent. Returns the response, or raises the
    last :class:`~dynaorm.RequestError` (``maybe_applied`` and ``attempts`` set).
    ``within``: the session operation the call is part of (each
    :class:`~dynaorm.protocol.hooks.Attempt` names it)."""
    budget, request = _held(policy, step)
    recording = RECORDER.get()
    if recording is not None:
        recording.requests.append((step.operation, request))
    quiet = getattr(within, "quiet", ())  # (the hooks that asked to see none of them)
    hooks = tuple(filter(lambda h: h not in quiet, policy.hooks)) if quiet else policy.hooks
    hooks = (_LOG, *hooks) if debug_logged() else hooks
    number = 0
    waited = 0.0
    maybe_applied = False
    while True:
        number += 1
        if budget is not None and (pause := budget.wait(step.operation, request)) > 0:
            yield Wait(pause)
        if hooks:
            out, error = yield from _attempt(hooks, step, request, number, within)
        else:
            try:
                out, error = (yield Send(step.operation, request, step.reader, step.via,
                                         step.service)), None
            except RequestError as exc:
                out, error = None, exc
        if error is None:
            assert out is not None
            if budget is not None:
                budget.spent(step.operation, sum(capacity_of(out).values()), request)
            if "ConsumedCapacity" in out:
                if recording is not None:
                    recording._consumed(capacity_of(out))
                if policy.meter is not None:
                    _metered(policy.meter, step, out)
            return out
        if budget is not None:
            budget.judge(step.operation, error)
        maybe_applied = yield from _judged(policy, step, error, number, maybe_applied, within)
        delay = min(policy.backoff(number), policy.max_wait - waited)
        if delay > 0:
            yield Wait(delay)
            waited += delay


def _metered(meter: Meter, step: Call, out: dict[str, Any]) -> None:
    """An answer's consumed capacity added to the client's ``meter`` by entity and role (an
    answer whose ``ConsumedCapacity`` is not DynamoDB's shape adds nothing to it)."""
    try:
        consumed, bytes_ = capacity_of(out), searched(step.origins, out)
    except (AttributeError, TypeError, ValueError):
        return
    meter.add(attribute(step.shares() if step.shares else (), step.origins, consumed))
    meter.add(bytes_)


def call(operation: str, request: dict[str, Any], origins: tuple[Any, ...] = (), *,
         idempotent: bool = True,
         reader: Reader | None = None,
         budget: Budget | None = None) -> Proto[dict[str, Any]]:
    """The response to one request (``reader``: see :class:`Send`)."""
    out: dict[str, Any] = yield Call(operation, request, origins, idempotent, reader,
                                     budget=budget)
    return out


def budgeted(proto: Proto[R], budget: Budget | None) -> Proto[R]:
    """``proto`` with every request it sends (gathered ones too) held to ``budget``."""
    value = None
    error = None
    try:
        while True:
            try:
                step = proto.send(value) if error is None else proto.throw(error)
            except StopIteration as stop:
                result: R = stop.value
                return result
            if isinstance(step, Call | Gather) and budget is not None:
                step = dataclasses.replace(step, budget=budget) if isinstance(
                    step, Call) else dataclasses.replace(
                    step, protos=[budgeted(p, budget) for p in step.protos])
            value = error = None
            try:
                value = yield step
            except Exception as exc:
                error = exc
    finally:
        proto.close()


def gather(protos: Sequence[Proto[R]], concurrency: int) -> Proto[list[R]]:
    """The results of ``protos`` run concurrently (sequentially when only one)."""
    if not protos:
        return []
    if len(protos) == 1 or concurrency <= 1:
        results = []
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
    value = None
    error = None
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
    value = None
    error = None
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
