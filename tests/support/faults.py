"""Fault injection with botocore event handlers on a table's real client.

(0.3) Tests of dynaorm's outcomes use the public injector, ``dynaorm.testing.
inject_faults`` (a phase hook on the table's client: every engine, both kinds of session;
tests/system/test_at_most_once.py). These handlers stay for what only they can show: that
botocore's own exceptions (a real ``ReadTimeoutError``, ``ConnectionClosedError``, an
HTTP 500/503 body) are mapped to the errors the retry layer and outcomes expect.

Works on moto and on DynamoDB Local alike: nothing is mocked, the handlers sit in
botocore's own pipeline of the client dynaorm sends through (``table.client``).

- :meth:`Faults.count` counts the HTTP attempts of an operation ('request-created' fires
  once per attempt, before anything answers it);
- :meth:`Faults.refuse` answers attempts itself, before they are sent, with a 4xx/5xx
  (throttling, a server error): the server never sees them;
- :meth:`Faults.lose` lets attempts reach the server, which applies them, and then makes
  the client see a failure: a read timeout, a dropped connection, or a 500.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from typing import Any

from botocore.awsrequest import AWSResponse
from botocore.exceptions import ConnectionClosedError, ReadTimeoutError

from dynaorm import Table
from dynaorm.testing import TestBackend


class _Body:
    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body

    def read(self, *_: Any) -> bytes:
        body, self._body = self._body, b""
        return body


class Faults:
    """Fault handlers on ``table.client``; :meth:`clear` removes them all."""

    def __init__(self, table: Table) -> None:
        self.table = table
        table.wire = "botocore"  # hooks botocore's client: its wire
        self.events = table.client.meta.events
        self.sent: Counter[str] = Counter()
        self._registered: list[tuple[str, Any]] = []

    def _on(self, event: str, handler: Any, first: bool = False) -> None:
        if first:
            self.events.register_first(event, handler)
        else:
            self.events.register(event, handler)
        self._registered.append((event, handler))

    def clear(self) -> None:
        for event, handler in self._registered:
            self.events.unregister(event, handler)
        self._registered.clear()

    def count(self, operation: str = "*") -> Counter[str]:
        """Count every HTTP attempt of ``operation`` (all operations by default)."""

        def counted(event_name: str, **_: Any) -> None:
            self.sent[event_name.rpartition(".")[2]] += 1

        self._on(f"request-created.dynamodb.{operation}", counted)
        return self.sent

    def refuse(self, operation: str, *, times: int | None = None, status: int = 400,
               code: str = "ThrottlingException", after: int = 0,
               fields: dict[str, Any] | None = None) -> None:
        """Answer attempts of ``operation`` with ``status``/``code`` before they are sent
        (the first ``after`` attempts pass; then ``times`` refused, None = all); ``fields``:
        more members of the error's body (a throttle's ``throttlingReasons``)."""
        seen = [0]

        def refused(request: Any, **_: Any) -> AWSResponse | None:
            seen[0] += 1
            n = seen[0] - after
            if n <= 0 or (times is not None and n > times):
                return None
            body = json.dumps({"__type": f"com.amazonaws.dynamodb.v20120810#{code}",
                               "message": f"injected {code}", **(fields or {})}).encode()
            headers = {"x-amzn-RequestId": "injected",
                       "Content-Type": "application/x-amz-json-1.0",
                       "Content-Length": str(len(body))}
            url = request.url
            # botocore calls every 'before-send' handler and takes the first answer: point
            # the refused request nowhere so that a later responder (moto's in-process
            # backend) does not apply it
            request.url = "http://refused.invalid/"
            return AWSResponse(url, status, headers, _Body(body))  # type: ignore[arg-type]

        # first: ahead of moto's own 'before-send' responder
        self._on(f"before-send.dynamodb.{operation}", refused, first=True)

    def lose(self, operation: str, *, times: int = 1, how: str = "timeout") -> None:
        """Let the first ``times`` attempts of ``operation`` be applied by the server, then
        fail them on the client: ``how`` = "timeout", "closed" or "500"."""
        left = [times]

        def lost(http_response: Any, parsed: dict[str, Any], **_: Any) -> None:
            if left[0] <= 0 or http_response.status_code >= 300:
                return
            left[0] -= 1
            if how == "timeout":
                raise ReadTimeoutError(endpoint_url="injected")
            if how == "closed":
                raise ConnectionClosedError(endpoint_url="injected")
            http_response.status_code = 500
            parsed["Error"] = {"Code": "InternalServerError", "Message": "injected 500"}
            parsed.setdefault("ResponseMetadata", {})["HTTPStatusCode"] = 500

        self._on(f"after-call.dynamodb.{operation}", lost)


def faults_on(db: TestBackend, attempts: int | None = None) -> Iterator[Faults]:
    """The tests' ``faults`` fixture (``pytest.fixture(faults_on, name="faults")``):
    handlers on ``db``'s table, retried without waiting (``attempts``: at most that many
    attempts a request, set first: it rebinds the table, and the handlers go on the
    client it is bound to then); cleared afterwards."""
    db.table.max_wait = 0
    if attempts is not None:
        db.table.max_attempts = attempts
    f = Faults(db.table)
    yield f
    f.clear()
