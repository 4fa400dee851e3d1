"""Phase hooks: the one place tracing, logging, request events and fault injection attach
(pure: the pump calls them; no I/O here).

Two phases are observed, each as a small mutable record handed to every hook when it
starts and when it ends, in the spirit of httpcore's ``trace`` extension:

- an :class:`Operation`: one session operation (a commit, a get, a find, a ``get_many``,
  one page of a query or a scan, a bulk call, a page of ``check`` or ``migrate``), with
  the tables and entity types it is for; at its end, its error, if any;
- an :class:`Attempt`: one HTTP attempt of one request, with the operation's API name, the
  request, the attempt number and the origins of its actions; at its end, the response
  or the :class:`~dynaorm.RequestError`, and the seconds it took.

A hook is any object with ``on_start(phase)`` and ``on_end(phase, token)`` (subclass
:class:`Hook` for both as no-ops). ``on_start`` returns a token (anything) that its
``on_end`` gets back. Several hooks attach at once (:meth:`dynaorm.Client.add_hook`): they
start in the order they were added and end in the reverse order, so an earlier hook wraps
a later one. An attempt's hook may answer it without sending (set ``attempt.response`` or
``attempt.error`` in ``on_start``) or replace its outcome in ``on_end``; an ``on_end`` of
an attempt run by an ``AsyncSession`` may return an awaitable, which is awaited before the
attempt ends. A sync session cannot await it: it closes it and logs the error (a
programming error, like calling a coroutine function from sync code). A hook that raises,
or whose awaitable raises, is logged and ignored: observing never turns a request into a
failure. An operation or attempt that is cancelled (or abandoned) still ends: the
operation with the exception as its ``error``, the attempt ``interrupted``.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from dynaorm.errors import RequestError
from dynaorm.protocol.capacity import attribute
from dynaorm.protocol.events import actions_of, capacity_of, tables_of

if TYPE_CHECKING:
    import logging

#: the service of a request to DynamoDB (:attr:`Attempt.service`); another one (``"kms"``)
#: is a request a rule's key material needs
DYNAMODB = "dynamodb"


@functools.cache
def logger() -> logging.Logger:
    """The ``dynaorm`` logger. :mod:`logging` is imported when a record is about to be
    emitted (a WARNING or an error is handled even where nothing configured logging),
    never by ``import dynaorm`` or a request that logs nothing."""
    import logging

    return logging.getLogger("dynaorm")


@dataclass(slots=True, eq=False)
class Operation:
    """One session operation, as hooks see it (``on_start``: what it is; ``on_end``:
    also how it ended)."""

    name: str
    """What the session did: ``"commit"``, ``"get"``, ``"get_many"``, ``"find"``,
    ``"query"`` / ``"scan"`` (one page), ``"count"``, ``"search"`` (a vector search and its
    read by key), ``"save_many"``, ``"delete_many"``, ``"plan"``, ``"create_table"``,
    ``"check"``, ``"migrate"``, ..."""
    tables: tuple[str, ...] = ()
    """The tables it is for (a commit across tables names each)."""
    entities: tuple[type[Any], ...] = ()
    """The entity classes it is for, when known."""
    error: BaseException | None = None
    """How it failed (set before ``on_end``; ``None``: it succeeded)."""
    session: str = "sync"
    """The kind of session running it: ``"sync"`` or ``"async"`` (set by the driver)."""
    quiet: tuple[HookLike, ...] = ()
    """The hooks its attempts are not reported to: a hook's ``on_start`` of it may add
    itself (neither ``on_start`` nor ``on_end`` of any of its attempts is then called on
    it; its ``on_end`` of the operation still is). Tracing does, for an operation its
    sampler dropped, where its attempts have nothing to do."""


@dataclass(slots=True, eq=False)
class Attempt:
    """One HTTP attempt of one request, as hooks see it."""

    operation: str
    """The DynamoDB API name (``"PutItem"``); a request to another AWS service that a
    feature needs is named ``service:Name`` (``"kms:GenerateDataKey"``, ``"kms:Decrypt"``,
    ``"kms:GenerateMac"``: the key material of ``Encrypted`` fields)."""
    request: dict[str, Any]
    """The request's parameters (botocore-shaped), as they are sent."""
    number: int
    """Which attempt of the request this is (1 for the first)."""
    origins: tuple[Any, ...] = ()
    """For a commit's write: ``(entity_class, key, role)`` per action, in request order;
    for a read, the entity classes it is for."""
    response: dict[str, Any] | None = None
    """The answer (set when it succeeded; a hook's ``on_start`` may set it to answer
    without sending)."""
    error: RequestError | None = None
    """The failure (set when it failed; a hook may set it to fail the attempt)."""
    elapsed: float = 0.0
    """Seconds from sending to the answer or failure (0 when a hook answered)."""
    sent: bool = False
    """Whether the attempt went to the wire (``False``: a hook answered it)."""
    interrupted: bool = False
    """Whether it ended without an answer or a failure: its task was cancelled, or its
    read abandoned, while it was in flight (it may have been applied)."""
    within: Operation | None = None
    """The session operation it is an attempt of (``None`` for a request sent outside
    one); the same object its hooks saw start, so a tracer nests the attempt under it."""
    shares: Callable[[], tuple[tuple[str, str, str, float], ...]] | None = None
    """For a write: what each row it writes weighs on each table and index, a function
    (:mod:`dynaorm.protocol.capacity`)."""
    service: str = DYNAMODB
    """The AWS service the request goes to: ``"dynamodb"``, or ``"kms"`` (the key
    material of ``Encrypted`` fields; its ``operation`` named ``kms:Name``)."""

    @property
    def capacity_by_role(self) -> dict[tuple[str, str], float]:
        """The capacity units the answer reports, by ``(entity, role)``: a write's split
        over the rows it wrote, a read's to its entity types (empty when not reported)."""
        consumed = capacity_of(self.response)
        return attribute(self.shares() if self.shares and consumed else (), self.origins,
                         consumed)

    @property
    def request_id(self) -> str | None:
        """DynamoDB's request id of the answer (``ResponseMetadata.RequestId``), of a
        success or of a failure; ``None`` when there was no answer (not sent, lost)."""
        found = _metadata(self).get("RequestId")
        return found if isinstance(found, str) and found else None

    @property
    def status_code(self) -> int | None:
        """The HTTP status of the answer, when there was one (``None``: not sent, lost,
        or answered by a hook)."""
        status = _metadata(self).get("HTTPStatusCode")
        if status is None and self.sent and self.response is not None:
            return 200  # a wire returns an answer only for a 2xx; DynamoDB's is a 200
        return status if isinstance(status, int) and not isinstance(status, bool) else None

    @property
    def tables(self) -> tuple[str, ...]:
        """The tables the request names, in order (several for a transaction or batch
        across tables); a request to another service (``"kms:Decrypt"``), which names
        none, is for the tables of the operation it is part of."""
        if self.service != DYNAMODB:
            return () if self.within is None else self.within.tables
        return tables_of(self.request)

    @property
    def consumed_capacity(self) -> dict[str, float]:
        """Capacity units the answer reports, by table and ``table/index``."""
        return capacity_of(self.response)

    @property
    def actions(self) -> int:
        """How many items the request writes or reads by key."""
        return actions_of(self.request)


Phase = Operation | Attempt


def _metadata(attempt: Attempt) -> dict[str, Any]:
    """The ``ResponseMetadata`` of an attempt's answer: of the response, else of the
    failure's error answer (its own ``response``, or that of the exception it was mapped
    from: botocore's ``ClientError``, the own wire's error answer)."""
    found = None
    if attempt.response is not None:
        found = attempt.response.get("ResponseMetadata")
    elif attempt.error is not None:
        for source in (attempt.error, attempt.error.__cause__):
            answer = getattr(source, "response", None)
            if isinstance(answer, dict) and "ResponseMetadata" in answer:
                found = answer["ResponseMetadata"]
                break
    return found if isinstance(found, dict) else {}


class HookLike(Protocol):
    """What a hook is: ``on_start`` and ``on_end`` of each phase."""

    def on_start(self, phase: Phase) -> object:
        """A phase starts; the value returned comes back to :meth:`on_end`."""

    def on_end(self, phase: Phase, token: Any) -> object:
        """The phase ended (its outcome is on it); for an attempt of an async session, an
        awaitable returned is awaited before the attempt ends."""


class Hook:
    """A hook that does nothing: subclass it and override what you observe."""

    wants_origins: bool = True
    """Whether the hook reads an attempt's ``origins`` (a commit computes them only when
    some attached hook does)."""
    wants_items: bool = True
    """Whether the hook reads the items of an answer as DynamoDB's attribute maps
    (``Item``, ``Items``, ``Responses`` of ``attempt.response``). While every attached hook
    says ``False`` (it reads only the answer's other members: ``ConsumedCapacity``,
    ``Count``, ``ResponseMetadata``...), a read may decode its answer's bytes straight into
    its objects, as with no hook attached, and those members are left out of the answer
    the hooks see at ``on_end`` (put back after): the same view on every engine and wire,
    whether the read's objects came from the bytes (dynaorm's own wire) or from attribute
    maps (botocore's, the embedded test backend)."""

    def on_start(self, phase: Phase) -> object:
        """A phase starts (an :class:`Operation` or an :class:`Attempt`)."""
        return None

    def on_end(self, phase: Phase, token: Any) -> object:
        """A phase ended; ``token`` is what :meth:`on_start` returned."""
        return None


def start(hooks: Sequence[HookLike], phase: Phase) -> list[object]:
    """Every hook's ``on_start``, in order; their tokens. Interrupted by one (a
    ``KeyboardInterrupt``, anything but an ``Exception``), those started end first, the
    phase interrupted (an attempt) or failed by it (an operation): none is left open (a
    tracer's span current in the caller's context, never ended)."""
    tokens = []
    for hook in hooks:
        try:
            tokens.append(hook.on_start(phase))
        except Exception:
            logger().exception("hook %r failed at the start of %s", hook, _name(phase))
            tokens.append(None)
        except BaseException as exc:
            if isinstance(phase, Attempt):
                phase.interrupted = True
            else:
                phase.error = exc
            close_all(end(hooks[:len(tokens)], phase, tokens))
            raise
    return tokens


#: the members of an answer that hold its items (a read's objects, where it read them
#: straight from the answer's bytes): never seen by hooks that all say ``wants_items =
#: False``
ITEM_MEMBERS = ("Item", "Items", "Responses")


def close_all(awaitables: Iterator[Awaitable[Any]]) -> None:
    """Run what is left of the hooks' ``on_end`` without awaiting: what they return is
    closed (a coroutine no one will await), not left to warn."""
    for awaitable in awaitables:
        close = getattr(awaitable, "close", None)
        if close is not None:
            close()


def end(hooks: Sequence[HookLike], phase: Phase, tokens: Sequence[object],
        wanted: bool | None = None) -> Iterator[Awaitable[Any]]:
    """Every hook's ``on_end``, in reverse order; yields what a hook returned that is to be
    awaited (the driver awaits it, or refuses it in a sync session, before going on).
    While no hook wants an answer's items (:attr:`Hook.wants_items`; ``wanted``: whether
    one does, if the caller asked already), they see it without them
    (:data:`ITEM_MEMBERS`), which are put back after the last ``on_end``."""
    hidden = _hide_items(hooks, phase, wanted)
    try:
        for hook, token in zip(reversed(hooks), reversed(tokens), strict=True):
            try:
                result = hook.on_end(phase, token)
            except Exception:
                logger().exception("hook %r failed at the end of %s", hook, _name(phase))
                continue
            if result is not None and hasattr(result, "__await__"):
                yield result
    finally:
        if hidden and isinstance(phase, Attempt) and phase.response is hidden[0]:
            for name, value in hidden[1].items():  # (what a hook set itself stays)
                phase.response.setdefault(name, value)


def wants_items(hooks: Sequence[HookLike]) -> bool:
    """Whether one of ``hooks`` reads the items of an answer (:attr:`Hook.wants_items`)."""
    return any(getattr(h, "wants_items", True) for h in hooks)


def _hide_items(hooks: Sequence[HookLike], phase: Phase, wanted: bool | None
                ) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """Take the item members out of an attempt's answer while no hook wants them: the
    answer and what was taken (``None``: nothing taken)."""
    if not hooks or not isinstance(phase, Attempt) or not isinstance(
            phase.response, dict) or (wants_items(hooks) if wanted is None else wanted):
        return None
    answer = phase.response
    taken = {name: answer.pop(name) for name in ITEM_MEMBERS if name in answer}
    return (answer, taken) if taken else None


def _name(phase: Phase) -> str:
    return phase.name if isinstance(phase, Operation) else phase.operation


class LogHook(Hook):
    """One DEBUG record per attempt on the ``dynaorm`` logger: operation, table, actions,
    attempt, milliseconds, consumed capacity and outcome, in the message and as record
    attributes. The pump attaches it to an attempt only while the ``dynaorm`` logger is at
    DEBUG (:func:`dynaorm.protocol.steps.debug_logged`)."""

    wants_origins = False

    def on_end(self, phase: Phase, token: Any) -> object:
        """Log an attempt (nothing for an operation)."""
        if not isinstance(phase, Attempt):
            return None
        tables = phase.tables
        table = tables[0] if tables else None
        capacity = phase.consumed_capacity
        error = phase.error
        outcome = "ok" if error is None else f"failed: {error.code}"
        ms = phase.elapsed * 1000
        logger().debug(
            "%s on %s: %d action(s), attempt %d, %.1f ms, consumed capacity %s, %s",
            phase.operation, table, phase.actions, phase.number, ms, capacity or "-",
            outcome,
            extra={"operation": phase.operation, "table": table, "actions": phase.actions,
                   "attempt": phase.number, "ms": ms, "consumed_capacity": capacity,
                   "error": None if error is None else error.code})
        return None


@dataclass(eq=False)
class Listeners(Hook):
    """The ``on_request`` hooks (:class:`~dynaorm.RequestEvent` after every attempt):
    ``everywhere`` sees every request, ``by_table`` those naming one of its tables."""

    everywhere: list[Callable[[Any], object]]
    by_table: Callable[[str], Sequence[Callable[[Any], object]]]

    def on_end(self, phase: Phase, token: Any) -> object:
        """Tell the listeners about an attempt (nothing for an operation)."""
        if not isinstance(phase, Attempt):
            return None
        from dynaorm.protocol.events import RequestEvent

        chosen = list(self.everywhere)
        for name in phase.tables:
            chosen.extend(self.by_table(name))
        if not chosen:
            return None
        event = RequestEvent(phase.operation, phase.request, phase.response, phase.error,
                             phase.number, phase.elapsed, phase.consumed_capacity,
                             phase.origins)
        for listener in chosen:
            try:
                listener(event)
            except Exception:  # a faulty hook must not turn a write into a failure
                logger().exception("on_request hook %r failed", listener)
        return None
