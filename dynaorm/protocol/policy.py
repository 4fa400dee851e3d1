"""The policy a client hands to both of its drivers: one immutable record of how requests
are retried and observed, and the retry rule it applies (pure: no I/O): which failures
are retried (:func:`retryable`).

A :class:`~dynaorm.Client` resolves its settings once into a :class:`Policy` (attempts,
waits, backoff, consumed-capacity reporting, the phase hooks) and replaces it with a new
one when a hook is added or removed; the pump (:func:`dynaorm.protocol.steps.expand`) reads
nothing else, so a sync and an async session on one client follow the same rules.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Final

from dynaorm.errors import RequestError
from dynaorm.protocol.hooks import HookLike

__all__ = ["DEFAULT_MAX_ATTEMPTS", "MAX_CONCURRENCY", "SERVER_ERRORS", "Policy", "retryable"]

#: the failures a server answers when it could not finish a request (it may have been
#: applied first): what a probe (:attr:`~dynaorm.protocol.steps.Call.probe`) may prove
#: unapplied ("500"...: a page, not JSON, is known by its status)
SERVER_ERRORS = frozenset({"InternalServerError", "InternalFailure", "ServiceUnavailable",
                           "500", "502", "503", "504"})
_TRANSIENT = frozenset({
    "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
    "InternalServerError", "InternalFailure", "ServiceUnavailable",
    "TransactionInProgressException", "LimitExceededException",
    "TransactionConflictException", "ConnectionError",
})
_THROTTLED_REASONS = frozenset({"TransactionConflict", "ThrottlingError",
                                "ProvisionedThroughputExceeded"})

#: attempts per request when neither ``Client(max_attempts=)`` nor botocore's
#: ``AWS_MAX_ATTEMPTS`` / profile ``max_attempts`` says otherwise
DEFAULT_MAX_ATTEMPTS: Final = 5
#: the most requests one operation runs at once (``concurrency=`` of the bulk calls, the
#: threads of a sync session's scatter-gather reads)
MAX_CONCURRENCY: Final = 16


@dataclass(frozen=True, slots=True)
class Policy:
    """How every request of one client is attempted and observed."""

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    """Attempts of one request, at most (one retry layer: botocore's are off)."""
    max_wait: float = 10.0
    """Seconds all retries of one request may wait in all."""
    capacity: str | None = None
    """``ReturnConsumedCapacity`` of every request that takes one (``None``: as built)."""
    hooks: tuple[HookLike, ...] = ()
    """The phase hooks, outermost first (:mod:`dynaorm.protocol.hooks`)."""
    base_delay: float = 0.05
    """The first retry's backoff ceiling, in seconds (doubled each retry)."""
    max_delay: float = 5.0
    """The largest backoff ceiling of one retry, in seconds."""

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff before retry ``attempt`` (1-based):
        uniform(0, min(max_delay, base_delay * 2**attempt)) seconds."""
        return random.uniform(0, min(self.max_delay, self.base_delay * (2 ** attempt)))

    observed: bool = field(init=False, repr=False, compare=False)
    """Whether a hook may look at a write's origins (then requests carry them): any
    hook that reads them (not the DEBUG log, not tracing: ``wants_origins``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "observed",
                           any(getattr(h, "wants_origins", True) for h in self.hooks))


def retryable(exc: RequestError) -> bool:
    """Whether another attempt may succeed (throttling, server errors, lost answers)."""
    if exc.code in _TRANSIENT or exc.maybe_applied:
        return True
    if exc.code == "TransactionCanceledException":
        codes = {r.code for r in exc.reasons if r is not None}
        return bool(codes) and codes <= _THROTTLED_REASONS
    return False
