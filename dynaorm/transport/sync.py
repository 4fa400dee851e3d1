"""The sync I/O: one botocore client per table, driving the shared retry loop.

Requests go through the botocore client's public operation methods (``client.put_item``),
created once per transport by :func:`dynaorm.transport.config.create_client` with
botocore's own retries off, so dynaorm's retries and botocore's never multiply.
:meth:`Transport.call` runs :func:`dynaorm.transport.retry.attempt_loop` (the rules the async transport shares: at most
``max_attempts`` attempts, full-jitter backoff within ``max_wait`` seconds, a
transaction's request and token reused as is, one log record and ``on_request`` event per
attempt, the commit being recorded).

Failures leave here only as :class:`~dynaorm.RequestError` (a missing table as
:class:`~dynaorm.TableNotFoundError`), never as botocore exceptions, with the
cancellation reasons in request order and ``maybe_applied`` set when some attempt may
have been applied (a timeout or dropped connection after sending, a 5xx), which is what
:mod:`dynaorm.write.outcomes` needs to report an honest outcome.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from botocore.exceptions import BotoCoreError

from dynaorm.errors import DynaormError, RequestError
from dynaorm.transport import retry
from dynaorm.transport.config import create_client
from dynaorm.transport.events import CommitResult
from dynaorm.transport.retry import Listener, Reason, Send, attempt_loop, logger

__all__ = ["Reason", "RequestFailed", "Transport", "logger"]

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
        return retry.backoff(attempt, self.base_delay, self.max_delay)

    def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request once; errors are mapped to :class:`RequestFailed`."""
        try:
            result: dict[str, Any] = getattr(self.client, retry.method_name(operation))(
                **request)
            return result
        except Exception as exc:
            err = retry.map_error(operation, request, exc)
            if err is None:
                raise
            raise err from exc

    def call(self, operation: str, request: dict[str, Any],
             origins: tuple[Any, ...] = (), *, idempotent: bool = True) -> dict[str, Any]:
        """Send with retries of transient failures (the request, token included, is
        reused as is). ``origins`` are passed on to ``on_request`` hooks. A request that is
        not ``idempotent`` (a counter increment, a list append) is never resent after an
        attempt that may have been applied: applying it twice would be a wrong answer."""
        # the first attempt made here (the common request answers at once: no retry
        # loop generator for it); a failed one goes on in the shared loop, by its rules
        listeners = self.listeners
        recorder, observe = retry.start_request(listeners, operation, request)
        start = time.perf_counter() if observe else 0.0
        try:
            out = self.send(operation, request)
        except RequestFailed as exc:
            failed = exc
        else:
            return retry.answered(recorder, listeners, observe, operation, request, out,
                                     1, start, origins)
        loop = attempt_loop(self, listeners, operation, request, origins,
                            idempotent=idempotent, first=(recorder, observe, start, failed))
        step = next(loop)
        while True:
            try:
                if isinstance(step, Send):
                    try:
                        out = self.send(step.operation, step.request)
                    except RequestFailed as exc:
                        step = loop.throw(exc)
                        continue
                    step = loop.send(out)
                else:
                    self._sleep(step.seconds)  # a Wait
                    step = next(loop)
            except StopIteration as stop:
                result: dict[str, Any] = stop.value
                return result

    @contextmanager
    def recording(self) -> Iterator[CommitResult]:
        """Record every request this context sends in the block into a CommitResult."""
        with retry.recording() as result:
            yield result
