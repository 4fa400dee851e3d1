"""The rules of one request's attempts, shared by the sync and the async transport (pure).

:func:`attempt_loop` is the retry loop as a generator: it yields :class:`Send` (send the
request once; the driver sends back the parsed response or throws the
:class:`~dynaorm.RequestError`) and :class:`Wait` (sleep that long), and returns the
response. It attempts a request at most ``max_attempts`` times in all, with exponential
backoff and full jitter, waiting at most ``max_wait`` seconds in all; a request that is
not idempotent is never resent after an attempt that may have been applied. Each attempt
is logged on the ``dynaorm`` logger (DEBUG), passed to ``Table.on_request`` hooks as a
:class:`~dynaorm.transport.events.RequestEvent`, and recorded into the :class:`CommitResult` being
recorded in the current context (:func:`recording`).

:func:`map_error` turns a botocore exception (aiobotocore raises the same ones) into a
:class:`~dynaorm.RequestError`, so both transports fail alike.
"""

from __future__ import annotations

import contextvars
import logging
import random
import time
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from dynaorm._types import Item
from dynaorm.errors import RequestError, TableNotFoundError
from dynaorm.transport.events import CommitResult, RequestEvent, actions_of, capacity_of, table_of

__all__ = ["FirstAttempt", "Reason", "RetryPolicy", "Send", "Wait", "answered", "attempt_loop",
           "backoff", "logger", "map_error", "method_name", "recording", "retryable",
           "start_request"]

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


@dataclass(frozen=True, slots=True)
class Reason:
    """One cancellation reason: DynamoDB's code and, when returned, the stored item."""

    code: str
    message: str | None = None
    item: Item | None = None


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


@dataclass(frozen=True, slots=True)
class Send:
    """Step of :func:`attempt_loop`: send the request once."""

    operation: str
    request: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Wait:
    """Step of :func:`attempt_loop`: sleep ``seconds`` before the next attempt."""

    seconds: float


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


class recording:  # lower case: called like the function it was, ``with recording() as r``
    """Record every request sent in this context during the block into a CommitResult.

    A plain context manager class rather than ``@contextmanager``: every commit enters
    one, and a generator-based one costs a generator and its frames each time."""

    __slots__ = ("_result", "_token")

    def __init__(self) -> None:
        self._result = CommitResult()
        self._token: contextvars.Token[CommitResult | None] | None = None

    def __enter__(self) -> CommitResult:
        self._token = _RECORDER.set(self._result)
        return self._result

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        _RECORDER.reset(self._token)


#: a first attempt a transport made itself, which failed: ``(recorder, observe, start,
#: error)`` as :func:`start_request` and the attempt left them (see :func:`attempt_loop`)
FirstAttempt = tuple[CommitResult | None, bool, float, RequestError]


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


def attempt_loop(policy: RetryPolicy, listeners: Sequence[Listener], operation: str,
                 request: dict[str, Any], origins: tuple[Any, ...] = (), *,
                 idempotent: bool = True, first: FirstAttempt | None = None
                 ) -> Generator[Send | Wait, Any, dict[str, Any]]:
    """The attempts of one request (see the module's docstring); returns the response.

    ``first``: the transport made the first attempt itself (after :func:`start_request`,
    answered with :func:`answered` when it succeeds: no generator for the common request)
    and it failed; the loop goes on from there, by the same rules."""
    if first is None:
        recorder, observe = start_request(listeners, operation, request)
        start, failed = 0.0, None
    else:
        recorder, observe, start, failed = first
    attempt = 0
    waited = 0.0
    maybe_applied = False
    step = Send(operation, request)
    while True:
        attempt += 1
        if failed is None:
            start = time.perf_counter() if observe else 0.0
            try:
                out: dict[str, Any] = yield step
            except RequestError as exc:
                failed = exc
            else:
                return answered(recorder, listeners, observe, operation, request, out,
                                attempt, start, origins)
        error, failed = failed, None
        if observe:
            observe_attempt(listeners, operation, request, None, error, attempt, start, origins)
        maybe_applied = maybe_applied or error.maybe_applied
        if attempt >= policy.max_attempts or not retryable(error) or (
                maybe_applied and not idempotent):
            error.maybe_applied = maybe_applied
            error.attempts = attempt
            if attempt > 1:
                error.args = (f"{error.args[0]} (after {attempt} attempts)", *error.args[1:])
            raise error
        delay = min(policy.backoff(attempt), policy.max_wait - waited)
        if delay > 0:
            yield Wait(delay)
            waited += delay


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


def map_error(operation: str, request: dict[str, Any], exc: Exception) -> RequestError | None:
    """The :class:`~dynaorm.RequestError` for a botocore exception raised by sending
    ``request`` once (``None``: not a botocore failure)."""
    if isinstance(exc, ClientError):
        return _client_error(operation, request, exc)
    if isinstance(exc, HTTPClientError):  # sent, answer lost: a read timeout, a dropped line
        err = RequestError(operation, "ConnectionError", str(exc))
        err.maybe_applied = True
        return err
    if isinstance(exc, BotoCoreError):  # not sent: no connection, no credentials, ...
        code = "ConnectionError" if isinstance(exc, BotoConnectionError) else (
            type(exc).__name__)
        return RequestError(operation, code, str(exc))
    return None


def _client_error(operation: str, request: dict[str, Any], exc: ClientError) -> RequestError:
    error = exc.response.get("Error", {})
    code = str(error.get("Code", "Unknown"))
    message = str(error.get("Message", ""))
    raw: list[dict[str, Any]] = list(exc.response.get("CancellationReasons", ()))  # type: ignore[arg-type]
    reasons = [
        None if r.get("Code") in (None, "None") else
        Reason(str(r["Code"]), r.get("Message"), r.get("Item"))
        for r in raw
    ]
    item = exc.response.get("Item")
    if code == "ResourceNotFoundException":
        err: RequestError = TableNotFoundError(
            operation, code, f"{message} (table {table_of(request)!r})", reasons)
    else:
        err = RequestError(operation, code, message, reasons,
                           item=item if isinstance(item, dict) else None)
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    # a 5xx may come after the server applied the request; a 4xx was refused (throttling
    # included), except that an attempt of this token is still in progress
    err.maybe_applied = status >= 500 or code == "TransactionInProgressException"
    return err


_METHODS: dict[str, str] = {}


def method_name(operation: str) -> str:
    """The botocore client method of a DynamoDB operation (``PutItem`` -> ``put_item``),
    the public way both transports send through."""
    name = _METHODS.get(operation)
    if name is None:
        from botocore import xform_name

        name = _METHODS[operation] = xform_name(operation)
    return name
