"""A table's administration as protocols (pure: a driver performs them): create it with
every index (then its stream and TTL), delete it, tell whether it exists, and wait for it
to settle. :class:`dynaorm.Table`'s ``create``, ``delete`` and ``exists`` run these through
the table's client."""

from __future__ import annotations

import time
from collections.abc import Callable

from dynaorm.errors import DynaormError, RequestError
from dynaorm.model.table import TableSchema
from dynaorm.protocol.steps import Proto, Wait, call

__all__ = ["create_p", "delete_p", "index_status_p", "status_p"]


def status_p(table: TableSchema) -> Proto[str | None]:
    """The table's status (``"ACTIVE"``, ``"CREATING"``, ...), ``None`` when it does not
    exist."""
    try:
        out = yield from call("DescribeTable", {"TableName": table.name})
    except RequestError as exc:
        if exc.code == "ResourceNotFoundException":
            return None
        raise
    return str(out["Table"].get("TableStatus", "ACTIVE"))


def create_p(table: TableSchema, wait: float) -> Proto[None]:
    """CreateTable (on-demand billing) with every index; if it exists, the global indexes
    it lacks are added (UpdateTable, one at a time, then their backfill waited for within
    ``wait``). Then the declared stream and TTL, each enabled where it is not yet."""
    created = True
    try:
        yield from call("CreateTable", table.definition())
    except RequestError as exc:
        if exc.code != "ResourceInUseException":
            raise
        created = False
    yield from _settle_p(table, lambda status: status == "ACTIVE", wait)
    if not created:
        yield from _add_indexes_p(table, wait)
    if table.stream is not None:
        yield from _enable_stream_p(table, wait)
    if table.ttl is not None:
        yield from _enable_ttl_p(table)


def index_status_p(table: TableSchema) -> Proto[dict[str, str]]:
    """Each secondary index of the table as it exists: ``"ACTIVE"``, ``"CREATING"``,
    ``"BACKFILLING"`` (created, still reading the table's items: queries on it fail until
    it is ``"ACTIVE"``), ``"UPDATING"`` or ``"DELETING"``; a declared index the table lacks
    is ``"MISSING"`` (``create()`` adds a global one)."""
    out = yield from call("DescribeTable", {"TableName": table.name})
    found: dict[str, str] = {}
    for gsi in out["Table"].get("GlobalSecondaryIndexes") or []:
        status = str(gsi.get("IndexStatus", "ACTIVE"))
        found[gsi["IndexName"]] = "BACKFILLING" if gsi.get("Backfilling") else status
    for lsi in out["Table"].get("LocalSecondaryIndexes") or []:
        found[lsi["IndexName"]] = "ACTIVE"
    for name in table.indexes:
        found.setdefault(name, "MISSING")
    return found


def _add_indexes_p(table: TableSchema, wait: float) -> Proto[None]:
    """Add the declared global indexes an existing table lacks (a local index can only be
    made with its table: refused with the way out), then wait for their backfill."""
    definition = table.definition()
    status = yield from index_status_p(table)
    missing_local = sorted(i["IndexName"] for i in definition.get("LocalSecondaryIndexes", [])
                           if status[i["IndexName"]] == "MISSING")
    if missing_local:
        raise DynaormError(
            f"table {table.name!r} exists without local index(es) {missing_local}: a local "
            "secondary index can only be created with its table (create a new table and "
            "copy the items, or declare a global index instead)")
    deadline = time.monotonic() + wait
    building: str | None = None
    for gsi in definition.get("GlobalSecondaryIndexes", []):
        if status[gsi["IndexName"]] != "MISSING":
            continue
        if building is not None:  # DynamoDB builds one new index of a table at a time
            yield from _backfill_p(table, building, deadline)
        try:
            yield from call("UpdateTable", {
                "TableName": table.name,
                "AttributeDefinitions": definition["AttributeDefinitions"],
                "GlobalSecondaryIndexUpdates": [{"Create": gsi}]})
        except RequestError as exc:
            more = (f" (index {building!r} is still being built: call create() again once "
                    "index_status() shows it ACTIVE)" if building is not None else "")
            raise DynaormError(f"cannot add index {gsi['IndexName']!r} to table "
                               f"{table.name!r}: {exc}{more}") from exc
        building = gsi["IndexName"]
    if building is not None:
        yield from _backfill_p(table, building, deadline)


def _backfill_p(table: TableSchema, name: str, deadline: float) -> Proto[None]:
    """Wait (polling) until the index ``name`` is ACTIVE; past ``deadline`` (a
    ``time.monotonic()``) return anyway: a large table backfills for long
    (``Table.index_status()`` tells)."""
    def active() -> Proto[bool]:
        return (yield from index_status_p(table)).get(name) == "ACTIVE"

    yield from _until_p(active, deadline)


def delete_p(table: TableSchema, wait: float) -> Proto[None]:
    """DeleteTable; no error if it does not exist."""
    try:
        yield from call("DeleteTable", {"TableName": table.name})
    except RequestError as exc:
        if exc.code != "ResourceNotFoundException":
            raise
    yield from _settle_p(table, lambda status: status is None, wait)


def _enable_ttl_p(table: TableSchema) -> Proto[None]:
    """Enable TTL on the declared attribute (nothing to do when it already is)."""
    try:
        out = yield from call("DescribeTimeToLive", {"TableName": table.name})
        current = out.get("TimeToLiveDescription") or {}
        if current.get("AttributeName") == table.ttl and current.get(
                "TimeToLiveStatus") in ("ENABLED", "ENABLING"):
            return
        yield from call("UpdateTimeToLive", {
            "TableName": table.name,
            "TimeToLiveSpecification": {"Enabled": True, "AttributeName": table.ttl}})
    except RequestError as exc:
        raise DynaormError(f"cannot enable TTL on attribute {table.ttl!r} of table "
                           f"{table.name!r}: {exc}") from exc


def _enable_stream_p(table: TableSchema, wait: float) -> Proto[None]:
    """Enable the declared stream on a table that existed without one."""
    out = yield from call("DescribeTable", {"TableName": table.name})
    current = out["Table"].get("StreamSpecification") or {}
    if current.get("StreamEnabled"):
        if current.get("StreamViewType") != table.stream:
            raise DynaormError(
                f"table {table.name!r} has a {current.get('StreamViewType')} stream, not "
                f"{table.stream}: disable it first (UpdateTable) to change its view type")
        return
    spec = {"StreamEnabled": True, "StreamViewType": table.stream}
    try:
        yield from call("UpdateTable", {"TableName": table.name, "StreamSpecification": spec})
    except RequestError as exc:
        raise DynaormError(f"cannot enable the stream of table {table.name!r}: {exc}"
                           ) from exc
    yield from _settle_p(table, lambda status: status == "ACTIVE", wait)


def _settle_p(table: TableSchema, done: Callable[[str | None], bool], timeout: float
              ) -> Proto[None]:
    """Wait, polling with a growing delay, until the table's status is ``done``."""
    def settled() -> Proto[bool]:
        return done((yield from status_p(table)))

    if not (yield from _until_p(settled, time.monotonic() + timeout)):
        raise DynaormError(f"table {table.name!r} did not settle in {timeout}s")


def _until_p(ready: Callable[[], Proto[bool]], deadline: float) -> Proto[bool]:
    """Poll ``ready`` with a growing delay (50 ms doubling to 2 s) until it holds (True)
    or ``deadline`` (a ``time.monotonic()``) has passed (False)."""
    delay = 0.05
    while not (yield from ready()):
        if time.monotonic() > deadline:
            return False
        yield Wait(delay)
        delay = min(delay * 2, 2.0)
    return True
