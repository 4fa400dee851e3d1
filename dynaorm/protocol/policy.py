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
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Final

from dynaorm.errors import DynaormError, RequestError
from dynaorm.protocol.capacity import Meter
from dynaorm.protocol.events import Reason, ThrottlingReason
from dynaorm.protocol.hooks import HookLike

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
    "SlowDown", "InternalError", "RequestTimeout",  # (S3's: offloaded values)
})
#: the error codes of a throttled request (a :class:`~dynaorm.ThrottledError`)
THROTTLE_CODES = frozenset({"ThrottlingException", "ProvisionedThroughputExceededException",
                            "RequestLimitExceeded", "SlowDown"})
#: a transaction's cancellation reasons that say an action was throttled
_THROTTLED_ACTIONS = frozenset({"ThrottlingError", "ProvisionedThroughputExceeded"})
_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem",
                     "TransactWriteItems"})
_THROTTLED_REASONS = _THROTTLED_ACTIONS | {"TransactionConflict"}

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
    the rate, scaled down by half on each throttle of that kind (reads or writes: as the
    throttle's ``ThrottlingReasons`` say, else the request's) and back up slowly after
    successes."""

    def __init__(self, rate: Rate, clock: Callable[[], float] = time.monotonic):
        self.rate, self.clock = rate, clock
        self.free = {True: 0.0, False: 0.0}  # (a write?) -> when the next request may go
        self.scale = {True: 1.0, False: 1.0}  # (a write?) -> the share of the rate held
        self.lock = threading.Lock()

    def wait(self, operation: str, request: Mapping[str, Any] | None = None) -> float:
        """Seconds a request of ``operation`` waits before it is sent: until its kind's
        units already consumed, or held for the requests sent before it, are paid for; the
        units ``request`` is :func:`expected` to consume are held for it from then on
        (its :meth:`spent` settles them): requests sent at once go one after another's
        share, not all before any answer says what they cost. A request to another service
        (``"kms:Decrypt"``), which consumes none, waits until both kinds' are paid for."""
        if ":" in operation:
            return max(self._until(True), self._until(False))
        write = operation in _WRITES
        with self.lock:
            pause = self._until(write)
            self._owe(write, expected(operation, request))
        return pause

    def _until(self, write: bool) -> float:
        limit = self.rate.write if write else self.rate.read
        return max(0.0, self.free[write] - self.clock()) if limit else 0.0

    def _owe(self, write: bool, units: float) -> None:
        """Move the next request of a kind back by the time ``units`` take to pay for."""
        if limit := self.rate.write if write else self.rate.read:
            due = max(self.free[write], self.clock())
            self.free[write] = due + units / (limit * self.scale[write])

    def spent(self, operation: str, units: float,
              request: Mapping[str, Any] | None = None) -> None:
        """Record ``units`` consumed by a request of ``operation`` (nothing for another
        service's: it consumes none), less what :meth:`wait` held for ``request``."""
        if ":" in operation:
            return
        write = operation in _WRITES
        with self.lock:
            self._owe(write, (units or 1.0) - expected(operation, request))
            self.scale[write] = min(1.0, self.scale[write] * 1.02)

    def judge(self, operation: str, exc: RequestError) -> None:
        """Adapt down after a throttle of ``operation``'s request (:func:`throttled`): the
        kinds its ``ThrottlingReasons`` name (a throttled index write slows writes), else
        the request's own kind; never for another service's request (its quota is not the
        table's capacity)."""
        if ":" in operation or not throttled(exc):
            return
        named = {r.write for r in exc.reasons if isinstance(r, ThrottlingReason)
                 and r.write is not None}
        with self.lock:
            for write in named or {operation in _WRITES}:
                self.scale[write] = max(0.02, self.scale[write] / 2)


def expected(operation: str, request: Mapping[str, Any] | None) -> float:
    """The units a request is expected to consume before its answer says: one an item it
    writes (two in a transaction), one for a read (``None``: no request, nothing held)."""
    if request is None:
        return 0.0
    if operation == "BatchWriteItem":
        return float(sum(map(len, request.get("RequestItems", {}).values())))
    return 2.0 * len(request.get("TransactItems", ())) or 1.0


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


def throttled(exc: RequestError) -> bool:
    """Whether ``exc`` is a throttle: a throttling code, or a transaction cancelled only
    because actions were throttled."""
    codes = {r.code for r in exc.reasons if isinstance(r, Reason)}
    return exc.code in THROTTLE_CODES or (bool(codes) and codes <= _THROTTLED_ACTIONS)


def retryable(exc: RequestError) -> bool:
    """Whether another attempt may succeed (throttling, server errors, lost answers)."""
    if exc.code in _TRANSIENT or exc.maybe_applied:
        return True
    if exc.code == "TransactionCanceledException":
        codes = {r.code for r in exc.reasons if r is not None}
        return bool(codes) and codes <= _THROTTLED_REASONS
    return False
