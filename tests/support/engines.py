"""Which engine answers at an endpoint: tests whose allowances differ by engine (limits a
few bytes off DynamoDB's, features an engine lacks) key them on the engine, also when the
suite runs against an arbitrary endpoint (``--dynaorm-endpoint URL``).

The engines name themselves in the ``Server`` header of any answer, even a refusal of an
unsigned request: dynoxide ``Dynoxide/<version>``, DynamoDB Local ``Jetty(<version>)``.
Anything else (DynamoDB itself, or an engine not known here) is ``"endpoint"``: held to
DynamoDB's exact behaviour.
"""

from __future__ import annotations

import functools
import http.client
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, Final
from urllib.parse import urlsplit

__all__ = ["identify", "lacks", "local_transaction_units", "on_engine", "spellings"]

_TIMEOUT: Final = 5.0


def on_engine(backend: str | None, *tables: Any) -> Iterator[Any]:
    """A module's tables fixture (``yield from on_engine(backend, table)``): ``tables``
    fresh on the test's engine (``backend``: ``None`` for moto in process), under this
    worker's names (a :class:`~dynaorm.testing.TestBackend`)."""
    from dynaorm.testing import use_tables, worker_suffix

    with use_tables(*tables, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        yield tb


@functools.cache
def identify(endpoint_url: str) -> str:
    """``"dynoxide"``, ``"local"`` (DynamoDB Local) or ``"endpoint"`` (anything else)."""
    parts = urlsplit(endpoint_url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "127.0.0.1", parts.port, timeout=_TIMEOUT)
    try:
        connection.request("POST", parts.path or "/", body=b"{}", headers={
            "X-Amz-Target": "DynamoDB_20120810.ListTables",
            "Content-Type": "application/x-amz-json-1.0"})
        server = connection.getresponse().getheader("Server") or ""
    except OSError:
        return "endpoint"
    finally:
        connection.close()
    if server.startswith("Dynoxide"):
        return "dynoxide"
    if server.startswith("Jetty"):
        return "local"
    return "endpoint"


def lacks(run: Callable[[str, dict[str, Any]], Any], operation: str) -> bool:
    """Whether the engine ``run`` sends to has no ``operation`` API: it answers a request
    of it (empty, which an engine that has it refuses or answers) with
    ``UnknownOperationException``, as dynoxide and DynamoDB Local answer the bulk API."""
    try:
        run(operation, {})
    except Exception as exc:  # (any other answer: the engine has it)
        return getattr(exc, "code", None) == "UnknownOperationException"
    return False


def local_transaction_units(rows: Sequence[Any]) -> dict[str, float]:
    """What DynamoDB Local reports as a ``TransactWriteItems``'s consumed capacity, by table
    and ``table/index``, for actions priced as ``rows`` (:class:`dynaorm.write.costs.Row`,
    each with the place ``at`` of its action): it keeps each action's capacity (its table's
    units with its indexes' units) in a set, so actions of equal capacity on one table
    count once, where DynamoDB counts each one (its 2026-05-28 build; shown by
    ``integration/test_explain.py``, which fails when a build counts every action)."""
    actions: dict[int, dict[str, float]] = {}
    for row in rows:
        name = row.table if row.index is None else f"{row.table}/{row.index}"
        units = actions.setdefault(row.at, {})
        units[name] = units.get(name, 0.0) + row.units
    distinct = {frozenset(units.items()) for units in actions.values()}
    out: dict[str, float] = {}
    for capacity in distinct:
        for name, counted in capacity:
            out[name] = out.get(name, 0.0) + counted
    return out


def spellings(client: Any, table: str, key: dict[str, Any], numbers: Iterable[str]
              ) -> dict[str, str]:
    """How the engine behind ``client`` stores each of ``numbers``: written in one item
    under ``key`` of ``table``, read back, the item then deleted. moto and DynamoDB Local
    keep a number's spelling (``1E2``), dynoxide stores its value (``100``): a test that
    compares stored spellings compares them as the engine stores them."""
    written = list(numbers)
    client.put_item(TableName=table, Item={**key, "n": {"L": [{"N": n} for n in written]}})
    got = client.get_item(TableName=table, Key=key, ConsistentRead=True)["Item"]["n"]["L"]
    client.delete_item(TableName=table, Key=key)
    return {n: g["N"] for n, g in zip(written, got, strict=True)}
