"""Record the exact requests dynaorm sends: ``Requests`` and ``Recorder``, phase hooks on a
table's client (:meth:`dynaorm.Client.add_hook`) that see every attempt of the requests
naming that table, on every wire and both kinds of session. ``Recorder`` can also fail
attempts instead of sending them. The suite's autouse fixture detaches every hook after
each test (clients are shared by the tables that connect alike)."""

from __future__ import annotations

import copy
import threading
from typing import Any

from dynaorm import Attempt, Hook, Table
from dynaorm.errors import RequestError as RequestFailed
from dynaorm.protocol.events import Reason


def _mine(table: Table, phase: object) -> bool:
    return isinstance(phase, Attempt) and table.name in phase.tables


class Requests(Hook):
    """Every request (operation, params) and the thread that sent it, in order."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.threads: set[int] = set()
        self.responses: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._barrier: threading.Barrier | None = None
        self._waiting = 0
        self._timeout = 10.0
        #: after :meth:`expect_overlap`: whether the first requests were in flight together
        self.overlapped: bool | None = None
        table.db.add_hook(self)

    def on_start(self, phase: Any) -> object:
        if not _mine(self.table, phase):
            return None
        with self._lock:
            self.calls.append((phase.operation, copy.deepcopy(phase.request)))
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
        return True

    def on_end(self, phase: Any, token: Any) -> object:
        if token:
            with self._lock:
                self.responses.append((phase.operation, phase.response or {}))
        return None

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

    @property
    def operations(self) -> list[str]:
        """The operation of every request, in order."""
        return [op for op, _ in self.calls]

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


class Recorder(Hook):
    """Records (operation, request) of every attempt naming ``table`` and can fail
    attempts instead of sending them: ``faults[operation]`` is a list of errors raised
    (one per attempt, in order); ``always[operation]`` is raised on every attempt.
    Attach it with ``table.db.add_hook(recorder)`` (the suite detaches it after the
    test); give the table ``max_wait = 0`` first so retries do not wait."""

    def __init__(self, table: Table) -> None:
        self.table = table
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.faults: dict[str, list[RequestFailed]] = {}
        self.always: dict[str, RequestFailed] = {}
        self._lock = threading.Lock()

    def on_start(self, phase: Any) -> object:
        if not _mine(self.table, phase):
            return None
        operation = phase.operation
        with self._lock:
            self.sent.append((operation, copy.deepcopy(phase.request)))
            if operation in self.always:
                phase.error = self.always[operation]
            elif self.faults.get(operation):
                phase.error = self.faults[operation].pop(0)
        return None

    @property
    def writes(self) -> list[tuple[str, dict[str, Any]]]:
        return [(op, req) for op, req in self.sent if op in WRITES]

    def clear(self) -> None:
        self.sent.clear()


def recording(table: Table) -> Recorder:
    """A :class:`Recorder` attached to ``table``'s client, the table first rebound so that
    retries do not wait (``max_wait = 0``)."""
    table.max_wait = 0
    recorder = Recorder(table)
    table.db.add_hook(recorder)
    return recorder


def conflict(n: int) -> RequestFailed:
    """A cancelled transaction of ``n`` actions, the first in a TransactionConflict."""
    reasons: list[Reason | None] = [Reason("TransactionConflict"), *[None] * (n - 1)]
    return RequestFailed("TransactWriteItems", "TransactionCanceledException",
                         "Transaction cancelled", reasons)


def send(table: Table, operation: str, request: dict[str, Any]) -> dict[str, Any]:
    """One raw request through ``table``'s client, with the retry rules (what a test uses
    to write or read items behind dynaorm's back, on every wire)."""
    from dynaorm.protocol.steps import call

    answer: dict[str, Any] = table.db.driver.run(call(operation, request))
    return answer


BATCHES = ("BatchWriteItem", "BatchGetItem")


class FlakyBatches(Hook):
    """Answers the first ``flaky`` batch requests naming ``table`` as DynamoDB does under
    throttling: only the first ``keep`` share of their entries is really sent (one attempt
    through the table's client: the server applies or reads exactly those), the rest comes
    back as ``UnprocessedItems`` / ``UnprocessedKeys``. Attached to the table's client at
    once (set the table's ``max_wait`` etc. before: that rebinds it to another client).

    ``batches``: (operation, entries asked, entries really sent) of every batch attempt
    answered; ``log``: (operation, request, response) of every attempt answered;
    ``fail(operation, request)``: when it returns true, the attempt fails with a
    ``ThrottlingException`` without being sent (listed in ``refused``). Its own sends
    block: for sync sessions (``sync_only`` tests)."""

    def __init__(self, table: Table, flaky: int = 0, keep: float = 0.5, *,
                 operations: tuple[str, ...] = BATCHES, fail: Any = None) -> None:
        self.table = table
        self.flaky = flaky
        self.keep = keep
        self.operations = operations
        self.fail = fail
        self.batches: list[tuple[str, int, int]] = []
        self.log: list[tuple[str, dict[str, Any], dict[str, Any]]] = []
        self.refused: list[tuple[str, dict[str, Any]]] = []
        self._lock = threading.Lock()
        self.client = table.db
        self.client.add_hook(self)

    def detach(self) -> None:
        self.client.remove_hook(self)

    def ops(self, operation: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        """(request, response) of the attempts of ``operation`` answered, in order."""
        return [(req, out) for op, req, out in self.log if op == operation]

    def on_start(self, phase: Any) -> object:
        if not _mine(self.table, phase):
            return None
        operation, request = phase.operation, phase.request
        if self.fail is not None and self.fail(operation, request):
            with self._lock:
                self.refused.append((operation, request))
            phase.error = RequestFailed(operation, "ThrottlingException",
                                        "slow down (injected)")
            return None
        if operation not in self.operations:
            return None
        ((table, body),) = request["RequestItems"].items()
        entries = body if operation == "BatchWriteItem" else body["Keys"]
        with self._lock:
            if self.flaky <= 0:
                return len(entries)  # sent as it is: counted when answered
            self.flaky -= 1
        cut = int(len(entries) * self.keep)
        keep, rest = entries[:cut], entries[cut:]
        out: dict[str, Any]
        try:
            if operation == "BatchWriteItem":
                out = self.client.send(operation, {**request, "RequestItems": {
                    table: keep}}) if keep else {}
                if rest:
                    left = out.get("UnprocessedItems", {}).get(table, [])
                    out["UnprocessedItems"] = {table: [*left, *rest]}
            else:
                out = self.client.send(operation, {**request, "RequestItems": {
                    table: {**body, "Keys": keep}}}) if keep else {"Responses": {table: []}}
                if rest:
                    left = out.get("UnprocessedKeys", {}).get(table, {}).get("Keys", [])
                    out["UnprocessedKeys"] = {table: {**body, "Keys": [*left, *rest]}}
        except RequestFailed as exc:
            phase.error = exc
            return None
        phase.response = out
        with self._lock:
            self.batches.append((operation, len(entries), len(keep)))
        return None

    def on_end(self, phase: Any, token: Any) -> object:
        if not _mine(self.table, phase) or phase.response is None:
            return None
        with self._lock:
            if token is not None:
                self.batches.append((phase.operation, token, token))
            self.log.append((phase.operation, phase.request, phase.response))
        return None
