"""The only module that talks to DynamoDB: one botocore client, one retry layer.

Requests go straight through the botocore client (``client._make_api_call``), created
once per transport by :func:`dynaorm.config.create_client` with botocore's own retries
off, so dynaorm's retries and botocore's never multiply. :meth:`Transport.call` attempts a
request at most ``max_attempts`` times in all, with exponential backoff and full jitter,
waiting at most ``max_wait`` seconds in all; a transaction's request (and so its
``ClientRequestToken``) is reused as is, so a retry never applies a commit twice.

Failures leave here only as :class:`~dynaorm.RequestError` (a missing table as
:class:`~dynaorm.TableNotFoundError`), never as botocore exceptions, with the
cancellation reasons in request order and ``maybe_applied`` set when some attempt may
have been applied (a timeout or dropped connection after sending, a 5xx), which is what
:mod:`dynaorm.outcomes` needs to report an honest outcome.

Every attempt is logged on the ``dynaorm`` logger (DEBUG) and passed to the hooks of
``Table.on_request`` as a :class:`~dynaorm.events.RequestEvent`.
"""

from __future__ import annotations

import contextvars
import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError, HTTPClientError
from botocore.exceptions import ConnectionError as BotoConnectionError

from ._types import Item
from .config import create_client
from .errors import DynaormError, RequestError, TableNotFoundError
from .events import CommitResult, RequestEvent, actions_of, capacity_of, table_of

__all__ = ["Reason", "RequestFailed", "Transport", "logger"]

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

#: the commit being recorded on this thread, if any (see :meth:`Transport.recording`)
_RECORDER: contextvars.ContextVar[CommitResult | None] = contextvars.ContextVar(
    "dynaorm_recorder", default=None)

Listener = Callable[[RequestEvent], object]


@dataclass(frozen=True, slots=True)
class Reason:
    """One cancellation reason: DynamoDB's code and, when returned, the stored item."""

    code: str
    message: str | None = None
    item: Item | None = None


#: The transport's failure type is the public :class:`~dynaorm.RequestError`.
RequestFailed = RequestError


class Transport:
    """Sends DynamoDB requests. Swap ``send`` (or subclass) to intercept traffic in tests."""

    #: backoff of retry ``n``: uniform(0, min(max_delay, base_delay * 2**n)) seconds
    base_delay = 0.05
    max_delay = 5.0

    def __init__(self, endpoint_url: str | None = None, region: str | None = None,
                 sleep: Callable[[float], None] = time.sleep, *, max_attempts: int = 5,
                 max_wait: float = 10.0, table: str = "?") -> None:
        self.endpoint_url = endpoint_url
        self.region = region
        #: every request is attempted at most this many times in all
        self.max_attempts = max_attempts
        #: the most seconds the retries of one request wait in all
        self.max_wait = max_wait
        #: ``fn(event)`` hooks called after every attempt (``Table.on_request``)
        self.listeners: list[Listener] = []
        self._sleep = sleep
        self._table = table
        self._client: Any = None
        self._lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The botocore client (created once, on first use; safe to share by threads)."""
        client = self._client
        if client is None:
            with self._lock:
                if self._client is None:
                    try:
                        self._client = create_client(self.endpoint_url, self.region,
                                                     table=self._table)
                    except (BotoCoreError, ValueError) as exc:  # a malformed endpoint, ...
                        raise DynaormError(
                            f"table {self._table!r}: cannot create a DynamoDB client for "
                            f"endpoint {self.endpoint_url!r}: {exc}") from exc
                client = self._client
        return client

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff before retry ``attempt`` (1-based)."""
        return random.uniform(0, min(self.max_delay, self.base_delay * (2 ** attempt)))

    def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request once; errors are mapped to :class:`RequestFailed`."""
        try:
            result: dict[str, Any] = self.client._make_api_call(operation, request)
            return result
        except ClientError as exc:
            raise _client_error(operation, request, exc) from exc
        except HTTPClientError as exc:  # sent, answer lost: a read timeout, a dropped line
            err = RequestFailed(operation, "ConnectionError", str(exc))
            err.maybe_applied = True
            raise err from exc
        except BotoCoreError as exc:  # not sent: no connection, no credentials, ...
            code = "ConnectionError" if isinstance(exc, BotoConnectionError) else (
                type(exc).__name__)
            raise RequestFailed(operation, code, str(exc)) from exc

    def call(self, operation: str, request: dict[str, Any],
             origins: tuple[Any, ...] = (), *, idempotent: bool = True) -> dict[str, Any]:
        """Send with retries of transient failures (the request, token included, is
        reused as is). ``origins`` are passed on to ``on_request`` hooks. A request that is
        not ``idempotent`` (a counter increment, a list append) is never resent after an
        attempt that may have been applied: applying it twice would be a wrong answer."""
        recorder = _RECORDER.get()
        if recorder is not None:
            recorder._add(operation, request)
        observe = bool(self.listeners) or logger.isEnabledFor(logging.DEBUG)
        attempt = 0
        waited = 0.0
        maybe_applied = False
        while True:
            attempt += 1
            start = time.perf_counter() if observe else 0.0
            try:
                out = self.send(operation, request)
            except RequestFailed as exc:
                if observe:
                    self._observe(operation, request, None, exc, attempt, start, origins)
                retry = _retryable(exc)
                maybe_applied = maybe_applied or exc.maybe_applied
                if attempt >= self.max_attempts or not retry or (
                        maybe_applied and not idempotent):
                    exc.maybe_applied = maybe_applied
                    exc.attempts = attempt
                    if attempt > 1:
                        exc.args = (f"{exc.args[0]} (after {attempt} attempts)", *exc.args[1:])
                    raise
            else:
                if observe:
                    self._observe(operation, request, out, None, attempt, start, origins)
                if recorder is not None and "ConsumedCapacity" in out:
                    recorder._consumed(capacity_of(out))
                return out
            delay = min(self.backoff(attempt), self.max_wait - waited)
            if delay > 0:
                self._sleep(delay)
                waited += delay

    @contextmanager
    def recording(self) -> Iterator[CommitResult]:
        """Record every request this thread sends in the block into a CommitResult."""
        result = CommitResult()
        token = _RECORDER.set(result)
        try:
            yield result
        finally:
            _RECORDER.reset(token)

    def _observe(self, operation: str, request: dict[str, Any],
                 response: dict[str, Any] | None, error: RequestError | None,
                 attempt: int, start: float, origins: tuple[Any, ...]) -> None:
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
        if self.listeners:
            event = RequestEvent(operation, request, response, error, attempt, elapsed,
                                 capacity, origins)
            for listener in list(self.listeners):
                try:
                    listener(event)
                except Exception:  # a faulty hook must not turn a write into a failure
                    logger.exception("on_request hook %r failed", listener)


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
        err = RequestFailed(operation, code, message, reasons,
                            item=item if isinstance(item, dict) else None)
    status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) or 0)
    # a 5xx may come after the server applied the request; a 4xx was refused (throttling
    # included), except that an attempt of this token is still in progress
    err.maybe_applied = status >= 500 or code == "TransactionInProgressException"
    return err


def _retryable(exc: RequestFailed) -> bool:
    if exc.code in _TRANSIENT or exc.maybe_applied:
        return True
    if exc.code == "TransactionCanceledException":
        codes = {r.code for r in exc.reasons if r is not None}
        return bool(codes) and codes <= _THROTTLED_REASONS
    return False
