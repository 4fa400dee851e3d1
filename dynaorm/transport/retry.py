"""The rules of one request's attempts (pure): which failures are retried, the backoff,
and what every attempt leaves behind -- one DEBUG record on the ``dynaorm`` logger, one
:class:`~dynaorm.RequestEvent` for the ``Table.on_request`` hooks, and the request and its
consumed capacity in the :class:`~dynaorm.CommitResult` being recorded in the current
context (:class:`recording`). The retry protocol that applies them is
:func:`dynaorm.transport.steps.attempts`: at most ``max_attempts`` attempts, exponential
backoff with full jitter within ``max_wait`` seconds in all, and a request that is not
idempotent never resent after an attempt that may have been applied.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Final, Protocol

from dynaorm.errors import RequestError
from dynaorm.transport.events import CommitResult, RequestEvent, actions_of, capacity_of, table_of

__all__ = [
    "CAPACITY_OPERATIONS",
    "Listener",
    "RetryPolicy",
    "answered",
    "backoff",
    "logger",
    "observe_attempt",
    "recording",
    "retryable",
    "start_request",
    "with_capacity",
]

#: the ``dynaorm`` logger: one DEBUG record per attempt of a request
logger = logging.getLogger("dynaorm")

_TRANSIENT = frozenset({
    "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
    "InternalServerError", "InternalFailure", "ServiceUnavailable",
    "TransactionInProgressException", "LimitExceededException",
    "TransactionConflictException", "ConnectionError",
})
_THROTTLED_REASONS = frozenset({"TransactionConflict", "ThrottlingError",
                                "ProvisionedThroughputExceeded"})

#: the commit being recorded in this context, if any (see :func:`recording`)
_RECORDER: contextvars.ContextVar[CommitResult | None] = contextvars.ContextVar(
    "dynaorm_recorder", default=None)

Listener = Callable[[RequestEvent], object]


class RetryPolicy(Protocol):
    """What the retry loop needs of a transport: its limits and its backoff."""

    @property
    def max_attempts(self) -> int:
        """Attempts of one request, at most."""
        ...  # pragma: no cover

    @property
    def max_wait(self) -> float:
        """Seconds all retries of one request may wait."""
        ...  # pragma: no cover

    def backoff(self, attempt: int) -> float:
        """Seconds to wait before retry ``attempt`` (1-based)."""
        ...  # pragma: no cover

    @property
    def listeners(self) -> Sequence[Listener]:
        """The ``on_request`` hooks called after every attempt."""
        ...  # pragma: no cover

    @property
    def capacity(self) -> str | None:
        """``ReturnConsumedCapacity`` for every request that takes one (``None``: as built)."""
        ...  # pragma: no cover


#: the operations whose requests take ``ReturnConsumedCapacity``
CAPACITY_OPERATIONS: Final = frozenset({
    "GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan", "BatchGetItem",
    "BatchWriteItem", "TransactGetItems", "TransactWriteItems"})


def with_capacity(operation: str, request: dict[str, Any], mode: str | None
                  ) -> dict[str, Any]:
    """``request`` asking for consumed capacity ``mode`` (``None``: as it is)."""
    if mode is None or operation not in CAPACITY_OPERATIONS or (
            request.get("ReturnConsumedCapacity") == mode):
        return request
    return {**request, "ReturnConsumedCapacity": mode}


def backoff(attempt: int, base_delay: float, max_delay: float) -> float:
    """Full-jitter exponential backoff: uniform(0, min(max_delay, base_delay * 2**n))."""
    return random.uniform(0, min(max_delay, base_delay * (2 ** attempt)))


def retryable(exc: RequestError) -> bool:
    """Whether another attempt may succeed (throttling, server errors, lost answers)."""
    if exc.code in _TRANSIENT or exc.maybe_applied:
        return True
    if exc.code == "TransactionCanceledException":
        codes = {r.code for r in exc.reasons if r is not None}
        return bool(codes) and codes <= _THROTTLED_REASONS
    return False


@contextlib.contextmanager
def recording() -> Iterator[CommitResult]:
    """Record every request sent in this context during the block into a CommitResult."""
    result = CommitResult()
    token = _RECORDER.set(result)
    try:
        yield result
    finally:
        _RECORDER.reset(token)


def start_request(listeners: Sequence[Listener], operation: str, request: dict[str, Any]
                  ) -> tuple[CommitResult | None, bool]:
    """Before the first attempt of a request: it is recorded into the commit being
    recorded, if any; returns that recorder and whether attempts are observed (hooks, or
    the logger at DEBUG)."""
    recorder = _RECORDER.get()
    if recorder is not None:
        recorder._add(operation, request)
    return recorder, bool(listeners) or logger.isEnabledFor(logging.DEBUG)


def answered(recorder: CommitResult | None, listeners: Sequence[Listener], observe: bool,
             operation: str, request: dict[str, Any], out: dict[str, Any], attempt: int,
             start: float, origins: tuple[Any, ...]) -> dict[str, Any]:
    """After attempt ``attempt`` answered ``out``: observed, its consumed capacity
    recorded; returns ``out``."""
    if observe:
        observe_attempt(listeners, operation, request, out, None, attempt, start, origins)
    if recorder is not None and "ConsumedCapacity" in out:
        recorder._consumed(capacity_of(out))
    return out


def observe_attempt(listeners: Sequence[Listener], operation: str, request: dict[str, Any],
                    response: dict[str, Any] | None, error: RequestError | None,
                    attempt: int, start: float, origins: tuple[Any, ...]) -> None:
    """Log one attempt (DEBUG) and pass it to the ``on_request`` hooks."""
    elapsed = time.perf_counter() - start
    capacity = capacity_of(response)
    if logger.isEnabledFor(logging.DEBUG):
        table = table_of(request)
        actions = actions_of(request)
        outcome = "ok" if error is None else f"failed: {error.code}"
        logger.debug(
            "%s on %s: %d action(s), attempt %d, %.1f ms, consumed capacity %s, %s",
            operation, table, actions, attempt, elapsed * 1000, capacity or "-", outcome,
            extra={"operation": operation, "table": table, "actions": actions,
                   "attempt": attempt, "ms": elapsed * 1000,
                   "consumed_capacity": capacity,
                   "error": None if error is None else error.code})
    if listeners:
        event = RequestEvent(operation, request, response, error, attempt, elapsed,
                             capacity, origins)
        for listener in list(listeners):
            try:
                listener(event)
            except Exception:  # a faulty hook must not turn a write into a failure
                logger.exception("on_request hook %r failed", listener)
