"""The rules of one request's attempts (pure): which failures are retried, which requests
take ``ReturnConsumedCapacity``, and the recording of a commit's requests and consumed
capacity into its :class:`~dynaorm.CommitResult` (:func:`recording`).

The retry protocol that applies them is :func:`dynaorm.protocol.steps.attempts`: at most
``max_attempts`` attempts, exponential backoff with full jitter within ``max_wait`` seconds
in all (:class:`~dynaorm.protocol.policy.Policy`), and a request that is not idempotent
never resent after an attempt that may have been applied.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from typing import Any, Final

from dynaorm.errors import RequestError
from dynaorm.protocol.events import CommitResult

__all__ = ["CAPACITY_OPERATIONS", "recorder", "recording", "retryable", "with_capacity"]

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


def recorder() -> CommitResult | None:
    """The commit being recorded in this context, if any."""
    return _RECORDER.get()
