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
        events = table.transport.client.meta.events
        events.register("provide-client-params.dynamodb", self._params)
        events.register("after-call.dynamodb", self._after)

    def _params(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        with self._lock:
            self.calls.append((model.name, copy.deepcopy(params)))
            self.threads.add(threading.get_ident())

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
