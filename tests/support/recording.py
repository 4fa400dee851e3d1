"""Record the exact requests dynaorm sends, with a botocore event handler on the real client
(works on moto and DynamoDB Local alike)."""

from __future__ import annotations

import copy
import threading
from typing import Any

from dynaorm import Table


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
