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
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Final

from dynaorm.errors import DynaormError, RequestError
from dynaorm.protocol.capacity import Meter
from dynaorm.protocol.hooks import HookLike

__all__ = ["DEFAULT_MAX_ATTEMPTS", "HELD_TO", "MAX_CONCURRENCY", "SERVER_ERRORS", "Budget",
           "Policy", "Rate", "budget_of", "held_to", "retryable"]

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
_THROTTLES = frozenset({"ThrottlingException", "ProvisionedThroughputExceededException",
                        "RequestLimitExceeded", "ThrottlingError", "ProvisionedThroughputExceeded"})
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem",
                     "TransactWriteItems"})
_THROTTLED_REASONS = frozenset({"TransactionConflict", "ThrottlingError",
                                "ProvisionedThroughputExceeded"})

#: attempts per request when neither ``Client(max_attempts=)`` nor botocore's
#: ``AWS_MAX_ATTEMPTS`` / profile ``max_attempts`` says otherwise
DEFAULT_MAX_ATTEMPTS: Final = 5
#: the most requests one operation runs at once (``concurrency=`` of the bulk calls, the
#: threads of a sync session's scatter-gather reads)
MAX_CONCURRENCY: Final = 16


@dataclass(frozen=True, slots=True)
class Rate:
    """A capacity budget: at most ``read`` read units and ``write`` write units consumed
    a second (``None``: no limit of that kind). See :doc:`the jobs guide </guide/jobs>`."""

    read: float | None = None
    """Read capacity units a second, at most (``None``: no limit)."""
    write: float | None = None
    """Write capacity units a second, at most (``None``: no limit)."""

    def __post_init__(self) -> None:
        units = (self.read, self.write)
        if not all(u is None or (type(u) in (int, float) and u > 0) for u in units):
            raise DynaormError(f"Rate: read= and write= take a positive number of capacity "
                               f"units a second, or None; got {self!r}")

    def share(self, n: int) -> Rate:
        """This budget split evenly between ``n`` workers running at once."""
        return Rate(self.read and self.read / n, self.write and self.write / n)


class Budget:
    """A :class:`Rate` held by one client: each kind's next request waits until the units
    already consumed (``ConsumedCapacity``; 1 when a response says none) are paid for at
    the rate, scaled down by half on each throttle and back up slowly after successes."""

    def __init__(self, rate: Rate, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate, self.clock, self.scale = rate, clock, 1.0
        self.free = {True: 0.0, False: 0.0}  # (a write?) -> when the next request may go
        self.lock = threading.Lock()

    def wait(self, operation: str) -> float:
        """Seconds a request of ``operation`` waits before it is sent: until its kind's
        units are paid for; a request to another service (``"kms:Decrypt"``), which
        consumes none, until both kinds' are."""
        if ":" in operation:
            return max(self._until(True), self._until(False))
        return self._until(operation in _WRITES)

    def _until(self, write: bool) -> float:
        limit = self.rate.write if write else self.rate.read
        return max(0.0, self.free[write] - self.clock()) if limit else 0.0

    def spent(self, operation: str, units: float) -> None:
        """Record ``units`` consumed by a request of ``operation`` (nothing for another
        service's: it consumes none)."""
        if ":" in operation:
            return
        write = operation in _WRITES
        if limit := self.rate.write if write else self.rate.read:
            with self.lock:
                due = max(self.free[write], self.clock())
                self.free[write] = due + (units or 1.0) / (limit * self.scale)
                self.scale = min(1.0, self.scale * 1.02)

    def judge(self, exc: RequestError) -> None:
        """Adapt down after a throttle (``exc`` or a transaction reason is one; not
        another service's: its quota is not the table's capacity)."""
        if ":" not in exc.operation and {exc.code, *(r.code for r in exc.reasons if r)
                                         } & _THROTTLES:
            with self.lock:
                self.scale = max(0.02, self.scale / 2)


def budget_of(rate: object) -> Budget | None:
    """A new budget holding ``rate`` (``None``: none); anything but a Rate is refused."""
    if rate is not None and not isinstance(rate, Rate):
        raise DynaormError(f"rate= takes a dynaorm.Rate, got {rate!r}")
    return None if rate is None else Budget(rate)


#: the budget the requests of a block of work (a job's task) are held to, in place of
#: their client's: what :func:`held_to` sets in this context (threads a driver gathers
#: in run in copies of it)
HELD_TO: ContextVar[Budget | None] = ContextVar("dynaorm_held_to", default=None)


@contextmanager
def held_to(rate: Rate | None) -> Iterator[None]:
    """Hold every request sent in the block (in this context) to ``rate``, whatever
    client it goes through (``None``: their clients' own budgets)."""
    token = HELD_TO.set(budget_of(rate))
    try:
        yield
    finally:
        HELD_TO.reset(token)


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
    budget: Budget | None = field(default=None, compare=False)
    """The client's capacity budget (``Client(rate=)``), or ``None``."""
    meter: Meter | None = field(default=None, compare=False)
    """The client's consumed capacity by entity and role (``client.capacity()``)."""

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
