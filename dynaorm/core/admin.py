"""A table's administration as protocols (pure: a driver performs them): create it with
every index (then its stream and TTL), delete it, tell whether it exists, and wait for it
to settle. :class:`dynaorm.Table`'s ``create``, ``delete`` and ``exists`` run these through
the table's client."""

import functools
import time
from collections.abc import Callable, Iterator
from typing import Any

from dynaorm.core.settings import apply_settings_p
from dynaorm.errors import DynaormError, RequestError
from dynaorm.protocol.steps import Proto, Wait, call
from dynaorm.schema.table import TableSchema


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
    """CreateTable (on-demand billing) with every index; if it exists, the global and
    vector indexes it lacks are added (UpdateTable, one at a time, then their backfill
    waited for within ``wait``; a vector index only on an on-demand table). Then the
    declared stream and TTL, each enabled where it is not yet. Another creator may run at
    once: what it has done or is doing is progress (see :func:`_apply_p`)."""
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
    if table.ttl is not None:  # (nothing to do when it is enabled, by this creator or another)
        try:
            if not (yield from _ttl_enabled_p(table)):
                yield from _apply_p("UpdateTimeToLive", {
                    "TableName": table.name,
                    "TimeToLiveSpecification": {"Enabled": True, "AttributeName": table.ttl}},
                    functools.partial(_ttl_enabled_p, table), time.monotonic() + wait)
        except RequestError as exc:
            raise DynaormError(f"cannot enable TTL on attribute {table.ttl!r} of table "
                               f"{table.name!r}: {exc}") from exc
    yield from apply_settings_p(table, functools.partial(
        _settle_p, table, lambda status: status == "ACTIVE", wait))



def index_status_p(table: TableSchema) -> Proto[dict[str, str]]:
    """Each secondary index of the table as it exists: ``"ACTIVE"``, ``"CREATING"``,
    ``"BACKFILLING"`` (created, still reading the table's items: queries on it fail until
    it is ``"ACTIVE"``), ``"UPDATING"`` or ``"DELETING"``; a declared index the table lacks
    is ``"MISSING"`` (``create()`` adds a global one); a global one keyed otherwise than
    declared (other key attributes, or a template index where a native one is declared) is
    ``"MISMATCHED"`` (queries of it would be refused: give the new index another name); a
    vector index whose attribute, dimensions, distance or search schema differ from the
    declared ones is ``"MISMATCHED"`` too."""
    out = yield from call("DescribeTable", {"TableName": table.name})
    found = {}
    definition = table.definition()
    declared = {g["IndexName"]: g["KeySchema"]
                for g in definition.get("GlobalSecondaryIndexes", [])}
    for gsi in out["Table"].get("GlobalSecondaryIndexes") or []:
        status = str(gsi.get("IndexStatus", "ACTIVE"))
        if (keys := gsi.get("KeySchema")) and declared.get(gsi["IndexName"], keys) != keys:
            status = "MISMATCHED"
        found[gsi["IndexName"]] = "BACKFILLING" if gsi.get("Backfilling") else status
    for lsi in out["Table"].get("LocalSecondaryIndexes") or []:
        found[lsi["IndexName"]] = "ACTIVE"
    vectors = {v["IndexName"]: v for v in definition.get("VectorIndexes", [])}
    for vector in out["Table"].get("VectorIndexes") or []:
        status = str(vector.get("IndexStatus", "ACTIVE"))
        wanted = vectors.get(vector["IndexName"])
        if wanted is not None and any(vector.get(k) != wanted.get(k) for k in _VECTOR_SHAPE):
            status = "MISMATCHED"
        found[vector["IndexName"]] = "BACKFILLING" if vector.get("Backfilling") else status
    for name in (*table.indexes, *table.vector_indexes):
        found.setdefault(name, "MISSING")
    return found


#: what makes a vector index the one declared (its projection aside, as a GSI's)
_VECTOR_SHAPE = ("VectorAttribute", "Dimensions", "DistanceFunction", "SearchSchema")


def _add_indexes_p(table: TableSchema, wait: float) -> Proto[None]:
    """Add the declared global indexes an existing table lacks (a local index can only be
    made with its table: refused with the way out), then wait for their backfill.

    Another creator may be adding the same indexes at once (two cold starts, two deploy
    jobs): an index it has added or is building is progress, waited for like ours, and as
    DynamoDB builds one new index of a table at a time, each addition first waits for any
    index of the table being built or deleted, by whoever."""
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
    for gsi in definition.get("GlobalSecondaryIndexes", []):
        name = gsi["IndexName"]
        if status[name] != "MISSING":
            continue
        status = yield from _idle_p(table, deadline, name)
        if status[name] != "MISSING":
            continue  # added meanwhile by another creator
        try:
            yield from _apply_p("UpdateTable", {
                "TableName": table.name,
                "AttributeDefinitions": definition["AttributeDefinitions"],
                "GlobalSecondaryIndexUpdates": [{"Create": gsi}]},
                functools.partial(_index_added_p, table, name), deadline)
        except RequestError as exc:
            raise DynaormError(f"cannot add index {name!r} to table {table.name!r}: "
                               f"{exc}") from exc
    yield from _add_vector_indexes_p(table, deadline)
    yield from _until_p(functools.partial(_no_index_busy_p, table), deadline)


def _add_vector_indexes_p(table: TableSchema, deadline: float) -> Proto[None]:
    """Add the declared vector indexes an existing table lacks (UpdateTable's
    ``VectorIndexUpdates``, one at a time), refused before anything is sent on a table
    that is not on-demand (DynamoDB has vector indexes on on-demand tables only)."""
    status = yield from index_status_p(table)
    missing = [v for name, v in table.vector_indexes.items() if status[name] == "MISSING"]
    if not missing:
        return
    out = yield from call("DescribeTable", {"TableName": table.name})
    billing = (out["Table"].get("BillingModeSummary") or {}).get("BillingMode", "PROVISIONED")
    if billing != "PAY_PER_REQUEST":
        raise DynaormError(
            f"table {table.name!r} is {billing}: vector index(es) "
            f"{[v.name for v in missing]} need an on-demand table (switch it with "
            "UpdateTable BillingMode=PAY_PER_REQUEST, then call create() again)")
    definitions = table.definition()["AttributeDefinitions"]
    for index in missing:
        status = yield from _idle_p(table, deadline, index.name)
        if status[index.name] != "MISSING":
            continue  # added meanwhile by another creator
        try:
            yield from _apply_p("UpdateTable", {
                "TableName": table.name, "AttributeDefinitions": definitions,
                "VectorIndexUpdates": [{"Create": table.vector_definition(index)}]},
                functools.partial(_index_added_p, table, index.name), deadline)
        except RequestError as exc:
            raise DynaormError(f"cannot add vector index {index.name!r} to table "
                               f"{table.name!r}: {exc}") from exc


#: refusals of a table change while another change of it is under way (an index being
#: built: "Only 1 online index can be created or deleted simultaneously", the table being
#: updated): retried once that change has had time to end
_CONTENDED = frozenset({"ResourceInUseException", "LimitExceededException"})
#: an index status of a change under way (one at a time per table)
_BUSY = frozenset({"CREATING", "BACKFILLING", "UPDATING", "DELETING"})


def _idle_p(table: TableSchema, deadline: float, adding: str) -> Proto[dict[str, str]]:
    """Wait until no index of the table is being built or deleted (by this creator or
    another), then return the indexes' status; past ``deadline`` refuse to add
    ``adding``, saying which index is still being built."""
    delays = _delays()
    while True:
        status = yield from index_status_p(table)
        busy = sorted(n for n, s in status.items() if s in _BUSY)
        if not busy:
            return status
        if time.monotonic() > deadline:
            raise DynaormError(
                f"cannot add index {adding!r} to table {table.name!r}: index(es) {busy} "
                "still being built (DynamoDB builds one at a time): call create() again "
                "once index_status() shows them ACTIVE")
        yield Wait(next(delays))


def _index_added_p(table: TableSchema, name: str) -> Proto[bool]:
    """Whether the table has the index ``name`` (in any state)."""
    return (yield from index_status_p(table))[name] != "MISSING"


def _no_index_busy_p(table: TableSchema) -> Proto[bool]:
    """Whether no index of the table is being built or deleted."""
    return not _BUSY.intersection((yield from index_status_p(table)).values())


def _apply_p(operation: str, request: dict[str, Any], done: Callable[[], Proto[bool]],
             deadline: float) -> Proto[None]:
    """Send a table change that another creator may be making at once. A refusal is that
    creator's progress when ``done()`` then holds (the change is made or under way: the
    answer was "already exists", "already enabled", "being created"); a refusal for a
    change of the table still under way (:data:`_CONTENDED`) is retried, with a growing
    delay, until ``deadline``. Any other refusal raises its :class:`RequestError`."""
    delays = _delays()
    while True:
        try:
            yield from call(operation, request)
            return
        except RequestError as exc:
            if (yield from done()):
                return
            if exc.code not in _CONTENDED or time.monotonic() > deadline:
                raise
        yield Wait(next(delays))


def delete_p(table: TableSchema, wait: float) -> Proto[None]:
    """DeleteTable; no error if it does not exist."""
    try:
        yield from call("DeleteTable", {"TableName": table.name})
    except RequestError as exc:
        if exc.code != "ResourceNotFoundException":
            raise
        return  # (no table: nothing to wait for)
    yield from _settle_p(table, lambda status: status is None, wait)


def _ttl_enabled_p(table: TableSchema) -> Proto[bool]:
    """Whether TTL is enabled (or being enabled) on the declared attribute."""
    out = yield from call("DescribeTimeToLive", {"TableName": table.name})
    current = out.get("TimeToLiveDescription") or {}
    return bool(current.get("AttributeName") == table.ttl
                and current.get("TimeToLiveStatus") in ("ENABLED", "ENABLING"))


def _enable_stream_p(table: TableSchema, wait: float) -> Proto[None]:
    """Enable the declared stream on a table that existed without one (another creator
    may enable it at once: then it is checked like one found enabled)."""
    if (yield from _stream_enabled_p(table)):
        return
    spec = {"StreamEnabled": True, "StreamViewType": table.stream}
    try:
        yield from _apply_p("UpdateTable", {"TableName": table.name, "StreamSpecification": spec},
                            functools.partial(_stream_enabled_p, table), time.monotonic() + wait)
    except RequestError as exc:
        raise DynaormError(f"cannot enable the stream of table {table.name!r}: {exc}") from exc
    yield from _settle_p(table, lambda status: status == "ACTIVE", wait)


def _stream_enabled_p(table: TableSchema) -> Proto[bool]:
    """Whether the table has its stream enabled; one of another view type than declared
    is refused (it must be disabled first)."""
    out = yield from call("DescribeTable", {"TableName": table.name})
    current = out["Table"].get("StreamSpecification") or {}
    if not current.get("StreamEnabled"):
        return False
    if current.get("StreamViewType") != table.stream:
        raise DynaormError(
            f"table {table.name!r} has a {current.get('StreamViewType')} stream, not "
            f"{table.stream}: disable it first (UpdateTable) to change its view type")
    return True


def _settle_p(table: TableSchema, done: Callable[[str | None], bool], timeout: float
              ) -> Proto[None]:
    """Wait, polling with a growing delay, until the table's status is ``done``."""
    def settled() -> Proto[bool]:
        return done((yield from status_p(table)))

    if not (yield from _until_p(settled, time.monotonic() + timeout)):
        raise DynaormError(f"table {table.name!r} did not settle in {timeout}s")


def _until_p(ready: Callable[[], Proto[bool]], deadline: float) -> Proto[bool]:
    """Poll ``ready`` with the growing delays of :func:`_delays` until it holds (True)
    or ``deadline`` (a ``time.monotonic()``) has passed (False)."""
    delays = _delays()
    while not (yield from ready()):
        if time.monotonic() > deadline:
            return False
        yield Wait(next(delays))
    return True


def _delays() -> Iterator[float]:
    """The delays between polls and between retries of a contended change: 50 ms,
    doubling, at most 2 s."""
    delay = 0.05
    while True:
        yield delay
        delay = min(delay * 2, 2.0)
