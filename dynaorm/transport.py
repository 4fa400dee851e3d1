"""The only module that talks to DynamoDB.

It sends requests through the botocore client of a PynamoDB ``Connection`` (PynamoDB's
client configuration: no parameter validation, standard retries, timeouts). Not through
``TransactWrite``, which regroups actions by kind so cancellation reasons stop matching,
and not through ``Connection.dispatch``, whose per-request UUIDs, signals and consumed-
capacity bookkeeping cost ~25 µs a request that dynaorm does not use. It retries
transient failures with exponential backoff and
full jitter (a transaction keeps its ``ClientRequestToken`` across retries, so a retry of
an ambiguous failure can never apply a commit twice), and turns botocore/PynamoDB errors
into :class:`RequestFailed` carrying the cancellation reasons in request order.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError, ConnectionError, HTTPClientError
from pynamodb.connection.base import Connection

from ._types import Item
from .errors import RequestError

__all__ = ["Reason", "RequestFailed", "Transport"]

_TRANSIENT = frozenset({
    "ThrottlingException", "ProvisionedThroughputExceededException", "RequestLimitExceeded",
    "InternalServerError", "ServiceUnavailable", "TransactionInProgressException",
    "LimitExceededException", "TransactionConflictException",
})


@dataclass(frozen=True, slots=True)
class Reason:
    """One cancellation reason: DynamoDB's code and, when returned, the stored item."""

    code: str
    message: str | None = None
    item: Item | None = None


#: The transport's failure type is the public :class:`~dynaorm.RequestError`.
RequestFailed = RequestError


def _resolve_region(region: str | None) -> str | None:
    return region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")


class Transport:
    """Sends DynamoDB requests. Swap ``send`` (or subclass) to intercept traffic in tests."""

    max_attempts = 8
    base_delay = 0.025
    max_delay = 1.0

    def __init__(self, endpoint_url: str | None = None, region: str | None = None,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.endpoint_url = endpoint_url
        self.region = _resolve_region(region) or "us-east-1"
        self.connection = Connection(region=self.region, host=endpoint_url)
        self._sleep = sleep

    @property
    def client(self) -> Any:
        """The underlying botocore client (created on first use)."""
        return self.connection.client

    def backoff(self, attempt: int) -> float:
        """Full-jitter exponential backoff for retry ``attempt`` (1-based)."""
        return random.uniform(0, min(self.max_delay, self.base_delay * (2 ** attempt)))

    def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send one request once; errors are mapped to :class:`RequestFailed`."""
        try:
            result: dict[str, Any] = self.connection.client._make_api_call(operation, request)
            return result
        except ClientError as exc:
            error = exc.response.get("Error", {})
            raw: list[dict[str, Any]] = list(exc.response.get("CancellationReasons", ()))  # type: ignore[arg-type]
            reasons = [
                None if r.get("Code") in (None, "None") else
                Reason(str(r["Code"]), r.get("Message"), r.get("Item"))
                for r in raw
            ]
            item = exc.response.get("Item")
            raise RequestFailed(operation, str(error.get("Code", "Unknown")),
                                str(error.get("Message", "")), reasons,
                                item=item if isinstance(item, dict) else None) from exc
        except (ConnectionError, HTTPClientError) as exc:
            raise RequestFailed(operation, "ConnectionError", str(exc)) from exc

    def call(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send with retries of transient failures (the request, token included, is reused)."""
        attempt = 0
        while True:
            attempt += 1
            try:
                return self.send(operation, request)
            except RequestFailed as exc:
                if attempt >= self.max_attempts or not _retryable(exc):
                    raise
            self._sleep(self.backoff(attempt))


def _retryable(exc: RequestFailed) -> bool:
    if exc.code in _TRANSIENT or exc.code == "ConnectionError":
        return True
    if exc.code == "TransactionCanceledException":
        codes = {r.code for r in exc.reasons if r is not None}
        return bool(codes) and codes <= {"TransactionConflict", "ThrottlingError",
                                         "ProvisionedThroughputExceeded"}
    return False
