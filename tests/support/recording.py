"""Record the exact requests dynaorm sends: ``Requests``, with a botocore event handler on
the real client (works on moto and DynamoDB Local alike), and ``RecordingTransport``, a real
transport that records what it sends and can inject failures."""

from __future__ import annotations

import copy
import threading
from typing import Any

from dynaorm import Table
from dynaorm.errors import RequestError as RequestFailed
from dynaorm.transport.events import Reason
from dynaorm.transport.sync import Transport


class Requests:
    """Every request (operation, params) and the thread that sent it, in order."""

    def __init__(self, table: Table) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.threads: set[int] = set()
        self.responses: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._barrier: threading.Barrier | None = None
        self._waiting = 0
        self._timeout = 10.0
        #: after :meth:`expect_overlap`: whether the first requests were in flight together
        self.overlapped: bool | None = None
        table.transport.wire = "botocore"  # hooks botocore's client: its wire
        events = table.transport.client.meta.events
        events.register("provide-client-params.dynamodb", self._params)
        events.register("after-call.dynamodb", self._after)

    def _params(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        with self._lock:
            self.calls.append((model.name, copy.deepcopy(params)))
            self.threads.add(threading.get_ident())
            barrier = self._barrier
            if barrier is not None:
                self._waiting += 1
                if self._waiting >= barrier.parties:
                    self._barrier = None  # later requests go straight through
        if barrier is not None:
            try:  # held until `parties` requests are in flight at once (no timing guess)
                barrier.wait(timeout=self._timeout)
                self.overlapped = self.overlapped is not False
            except threading.BrokenBarrierError:
                self.overlapped = False
                with self._lock:
                    self._barrier = None

    def expect_overlap(self, parties: int = 2, timeout: float = 10.0) -> None:
        """Hold the next ``parties`` requests until all of them have been sent: if the
        code under test sends them one after another, the wait times out and
        :attr:`overlapped` is ``False`` (a proof of concurrency that does not depend on
        how fast the backend answers)."""
        with self._lock:
            self._barrier = threading.Barrier(parties)
            self._timeout = timeout
            self._waiting = 0
            self.overlapped = None

    def _after(self, parsed: dict[str, Any], model: Any, **_: Any) -> None:
        with self._lock:
            self.responses.append((model.name, parsed))

    def of(self, operation: str) -> list[dict[str, Any]]:
        """The requests of one operation, in order."""
        return [p for op, p in self.calls if op == operation]

    def items_read(self, operation: str) -> int:
        """Items DynamoDB evaluated for ``operation`` requests (ScannedCount)."""
        return sum(int(r.get("ScannedCount", 0)) for op, r in self.responses if op == operation)

    def clear(self) -> None:
        with self._lock:
            self.calls.clear()
            self.responses.clear()
            self.threads.clear()


WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems",
                    "BatchWriteItem"})


class RecordingTransport(Transport):
    """A real transport that records (operation, request) and can inject failures.

    ``faults[operation]`` is a list of errors raised (one per attempt, in order) instead of
    sending; ``always[operation]`` is raised on every attempt.
    """

    def __init__(self, endpoint_url: str | None) -> None:
        super().__init__(endpoint_url, sleep=lambda _: None)
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.faults: dict[str, list[RequestFailed]] = {}
        self.always: dict[str, RequestFailed] = {}

    def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        self.sent.append((operation, copy.deepcopy(request)))
        if operation in self.always:
            raise self.always[operation]
        pending = self.faults.get(operation)
        if pending:
            raise pending.pop(0)
        return super().send(operation, request)

    @property
    def writes(self) -> list[tuple[str, dict[str, Any]]]:
        return [(op, req) for op, req in self.sent if op in WRITES]

    def clear(self) -> None:
        self.sent.clear()


def conflict(n: int) -> RequestFailed:
    """A cancelled transaction of ``n`` actions, the first in a TransactionConflict."""
    reasons: list[Reason | None] = [Reason("TransactionConflict"), *[None] * (n - 1)]
    return RequestFailed("TransactWriteItems", "TransactionCanceledException",
                         "Transaction cancelled", reasons)
