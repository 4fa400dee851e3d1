"""What DynamoDB does that a test engine does not, put back in front of the engine: the
:class:`Emulator` every request of dynaorm's test backend goes through (in-process, as the
transport of every client: :class:`EmbeddedTransport`; over HTTP, in the proxy of
:mod:`dynaorm.testing.proxy`).

- **Lagging indexes** (any engine, while :func:`index_lag` is on): a read of a global
  secondary index or a vector index sees the table as it was ``seconds`` ago. Each
  table read through an index has a *mirror* on the engine (the same keys and indexes,
  hidden from ``ListTables``): every change to the table (a write's item as a consistent
  read finds it after the write) becomes due on the mirror ``seconds`` later, and an index
  read applies what is due, in order, then reads the mirror's index. Reads of the table
  itself are exact.
- **What moto skips** (``rules=True``: dynaorm's moto backends): ``ClientRequestToken``
  (a transaction replayed with its token and the same items is applied once and answered
  as the first time, for ten minutes; other items: ``IdempotentParameterMismatch
  Exception``), DynamoDB's item size (400 KB as DynamoDB counts it, on puts and on what an
  update makes: refused, and nothing changed; moto's own lower limit is lifted, so items
  up to 409,600 bytes are stored as DynamoDB stores them), a transaction's 4 MB, 25 actions of a
  ``BatchWriteItem`` and 100 of a ``TransactGetItems`` (moto stops at 25), a global
  table's replicas (``UpdateTable``'s ``ReplicaUpdates``, which moto drops: kept and
  described, nothing replicated), and atomicity: one request at a time, so no thread sees
  or undoes half of another's transaction.
- **The bulk API and filtered exports** (given an S3: dynaorm's moto backends, a fault
  proxy given one): ``StartBulkPutItems`` and the rest, ``ExportTableToPointInTime`` with
  its ``FilterSpecification`` (:mod:`dynaorm.testing.emulation.bulk`).

Requests are dicts as a client sends them (botocore's shape, or DynamoDB's JSON in the
proxy: nothing here reads a binary value's bytes but its size).
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import math
import os
import random
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Final

from dynaorm import Client, DynaormError, Reason, RequestError, TableNotFoundError
from dynaorm.client.botocore import botocore_error
from dynaorm.codec import MAX_ITEM_BYTES, item_size, value_size
from dynaorm.testing.emulation.bulk import BULK_OPERATIONS, BULK_WRITES, BulkService
from dynaorm.testing.private_apis import moto_sizes_unchecked, unobserved
from dynaorm.wire import render

#: sends one request to the engine behind (as it is: no rule applied), a failure raised
#: as a :class:`~dynaorm.RequestError`
Forward = Callable[[str, dict[str, Any]], dict[str, Any]]

#: the end of the name of a table's mirror (the table as its lagging indexes see it)
MIRROR_SUFFIX: Final = ".dynaorm-lag"
#: the reads that go through an index (``IndexName``: lagging when its table's mirror has
#: it: :func:`mirror_definition`)
INDEX_READS: Final = frozenset({"Query", "Scan", "SearchVectors"})
#: what a vector index's ``CreateTable`` entry holds of its ``DescribeTable`` entry
_VECTOR_KEYS: Final = ("IndexName", "VectorAttribute", "Dimensions", "DistanceFunction",
                       "SearchSchema", "Projection")
_WRITES: Final = frozenset({"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem",
                            "TransactWriteItems"})
_SCHEMA_CHANGES: Final = frozenset({"CreateTable", "DeleteTable", "UpdateTable"})
#: the requests that read or change a table's replicas (see :meth:`Emulator._replicated`)
_REPLICAS: Final = frozenset({"CreateTable", "DeleteTable", "UpdateTable", "DescribeTable"})
_TOKEN_SECONDS: Final = 600.0  # how long DynamoDB keeps a ClientRequestToken
_MAX_TRANSACTION_BYTES: Final = 4 * 1024 * 1024
_MAX_BATCH_WRITES: Final = 25
_MOTO_GETS: Final = 25  # (moto refuses more; DynamoDB takes 100)
_MAX_TRANSACT_GETS: Final = 100
_TOO_LARGE: Final = "Item size has exceeded the maximum allowed size"
_UPDATE_TOO_LARGE: Final = "Item size to update has exceeded the maximum allowed size"


class IndexLag:
    """How far index reads lag (what :func:`index_lag` yields): ``seconds``, and the
    ``seed`` that picks the changes that lag (``None``: every change lags ``seconds``).

    Its clock is a monotonic one that :meth:`advance` moves on: a change is visible once
    the clock has passed its due time, so a test that runs for less than ``seconds``
    sees the same thing every time, however slow the machine."""

    def __init__(self, seconds: float, seed: int | None = None):
        if isinstance(seconds, bool) or not isinstance(seconds, int | float) or not (
                math.isfinite(seconds) and seconds >= 0):
            raise DynaormError(f"index_lag: seconds must be a number >= 0, got {seconds!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
            raise DynaormError(f"index_lag: seed must be an int or None, got {seed!r}")
        self.seconds = float(seconds)
        """How long ago the table was when an index read sees it."""
        self.seed = seed
        """``None``: every change becomes visible to index reads ``seconds`` after it was
        made; an int: some changes are visible at once and the others after ``seconds``
        (as an index sometimes keeps up and sometimes not: a read sees part of a batch),
        which ones drawn from this seed, the item's key and how many changes of that item
        came before: a run repeats whatever order threads run in. An item's
        changes stay in order (one that would overtake a lagging one waits for it)."""
        self._ahead = 0.0

    def __repr__(self) -> str:
        return f"IndexLag({self.seconds}, seed={self.seed})"

    def now(self) -> float:
        """The lag's clock: a monotonic clock, moved on by :meth:`advance`."""
        return time.monotonic() + self._ahead

    def advance(self, seconds: float) -> None:
        """Move the lag's clock on by ``seconds``, as if they had passed (nothing sleeps):
        changes made that much closer to their due time become visible; ``advance(lag.
        seconds)`` shows every change made so far, another client's included (each
        emulator looks for them first: :meth:`Emulator.catch_up`)."""
        for emulator in list(_EMULATORS):
            emulator.catch_up(self)
        self._ahead += seconds

    def delay(self, key: bytes, nth: int) -> float:
        """The lag of the ``nth`` change of the item at ``key`` (rendered)."""
        if self.seed is None:
            return self.seconds
        draw = random.Random(f"{self.seed}/{key.hex()}/{nth}")
        return self.seconds * draw.randint(0, 1)


_LAGS: list[IndexLag] = []  # the index_lag blocks open now, innermost last
_UNFRONTED: list[str] = []  # the endpoint the test runs on, when no emulator fronts it


@contextmanager
def unfronted(url: str) -> Iterator[None]:
    """For the block, the tables run on ``url``, which no emulator fronts (the pytest
    plugin's ``--dynaorm-endpoint`` when it is DynamoDB's own): :func:`index_lag`
    raises rather than lag nothing."""
    _UNFRONTED.append(url)
    try:
        yield
    finally:
        _UNFRONTED.remove(url)


@contextmanager
def index_lag(seconds: float, *, seed: int | None = None) -> Iterator[IndexLag]:
    """For the block, reads of global secondary indexes and vector indexes see the table as
    it was ``seconds`` ago (under a ``seed``, only the changes it picks lag:
    :class:`IndexLag`); reads of the table itself, strongly consistent or not, are
    exact. It holds on dynaorm's test backend (in-process, and its moto server) and
    on any endpoint behind :func:`~dynaorm.testing.fault_proxy` (the pytest option
    ``--dynaorm-index-lag`` puts ``--dynaorm-endpoint`` behind one). Blocks nest: the
    innermost holds; when one ends, changes still pending are dropped (the table as it is
    counts as old). Yields the :class:`IndexLag` (``lag.advance(seconds)``)."""
    lag = IndexLag(seconds, seed)
    if _UNFRONTED:
        raise DynaormError(
            f"index_lag: the tests run on {_UNFRONTED[-1]}, which no emulator fronts (a "
            "fault proxy serves local engines: it does not sign requests anew), so nothing "
            "would lag on its clock; DynamoDB's own indexes lag as they do. Run on a local "
            "engine, or in process, to control the lag")
    _LAGS.append(lag)
    try:
        yield lag
    finally:
        _LAGS.remove(lag)
        for emulator in list(_EMULATORS):
            emulator.forget()


@dataclass
class _Mirror:
    """One table as its lagging indexes see it: the mirror table (none made when the
    table has no lagging index), those indexes, how the emulator reaches the engine, and
    the changes not yet due (``(due, key, item or None)``)."""

    name: str
    indexes: frozenset[str]
    own: Forward
    pending: list[tuple[float, dict[str, Any], dict[str, Any] | None]] = field(
        default_factory=list)
    changes: dict[bytes, tuple[int, float]] = field(default_factory=dict)  # n, last due
    #: the table's items as the emulator last saw them, by rendered key: a change of
    #: another client (one that does not send through the emulator) is what differs
    known: dict[bytes, dict[str, Any]] = field(default_factory=dict)


_EMULATORS: weakref.WeakSet[Emulator] = weakref.WeakSet()


class Emulator:
    """DynamoDB's behaviour in front of one engine (see the module): index lag always,
    and what moto skips with ``rules=True``. :meth:`handle` answers one request."""

    def __init__(self, *, rules: bool, lags: bool = True,
                 s3: Callable[[], Any] | None = None):
        self.rules = rules
        """Whether it enforces what moto skips (then it answers one request at a time)."""
        self.lags = lags
        """Whether index reads lag through it (``False``: another emulator behind it lags
        them; two would each mirror the other's mirror)."""
        self._lock = threading.RLock()
        self._tokens: dict[str, tuple[bytes, dict[str, Any], float]] = {}
        self._keys: dict[str, tuple[str, ...]] = {}  # each table's key attributes
        self._mirrors: dict[str, _Mirror] = {}
        self._lag: IndexLag | None = None  # the lag the mirrors were made under
        self._closed = False
        #: the replicas of each table made global (``UpdateTable``'s ``ReplicaUpdates``)
        self._replicas: dict[str, list[str]] = {}
        self.bulk = None if s3 is None else BulkService(s3, self._replicas)
        """The bulk API and filtered exports it answers, over the S3 ``s3()`` makes
        (:mod:`dynaorm.testing.emulation.bulk`); ``None``: given no S3, it passes them on."""
        _EMULATORS.add(self)

    def close(self) -> None:
        """The engine is gone: forget its mirrors without a request."""
        with self._lock:
            self._closed = True
            self._mirrors.clear()
            if self.bulk is not None:
                self.bulk.forget()

    def forget(self) -> None:
        """Drop every mirror (deleted on the engine) and the changes it held."""
        with self._lock:
            mirrors, self._mirrors, self._lag = list(self._mirrors.values()), {}, None
            for mirror in [] if self._closed else mirrors:
                if mirror.indexes:
                    _drop(mirror.own, mirror.name)

    def handle(self, operation: str, request: dict[str, Any], forward: Forward,
               own: Forward | None = None) -> dict[str, Any]:
        """The answer to ``request`` (a failure raised as a :class:`~dynaorm.RequestError`),
        as DynamoDB would give it: the request (or the index read it becomes) goes through
        ``forward``, what the emulator reads and writes itself through ``own`` (default:
        ``forward``; in process, a client no botocore handler or tracer watches)."""
        own = own or forward
        if self.rules:  # one at a time: no thread sees (or undoes) half a transaction
            with self._lock:
                return self._handle(operation, request, forward, own)
        return self._handle(operation, request, forward, own)

    def _handle(self, operation: str, request: dict[str, Any], forward: Forward,
                own: Forward) -> dict[str, Any]:
        lag = self._follow(operation, request, own)
        if self.bulk is not None and operation in BULK_OPERATIONS:
            return self.bulk.answer(operation, request, own)
        if self.rules and operation in _REPLICAS:
            return self._replicated(operation, request, forward, own)
        if self.rules:
            replayed = self._replayed(operation, request)
            if replayed is not None:
                return replayed
            _refuse(operation, request)
        if lag is not None and operation in INDEX_READS and request.get("IndexName"):
            mirror = self._mirror(request["TableName"], own)
            if mirror is not None and request["IndexName"] in mirror.indexes:
                return self._lagging_read(operation, request, mirror, lag, forward)
        if lag is None or operation not in _WRITES:
            return _mirrors_hidden(operation, self._send(operation, request, forward, own))
        with self._lock:  # (sent and recorded in one step: never taken for another's)
            for table in {t for _, t, _ in _actions(operation, request)}:
                self._mirror(table, own)
            answer = self._send(operation, request, forward, own)
            self._record(operation, request, lag, own)
        return answer

    def _follow(self, operation: str, request: dict[str, Any], own: Forward
                ) -> IndexLag | None:
        """The lag on now; the mirrors of another lag, or of a table whose definition
        ``request`` changes, dropped."""
        lag = _LAGS[-1] if self.lags and _LAGS else None  # (the innermost block's)
        with self._lock:
            if lag is not self._lag:
                self.forget()
                self._lag = lag
            if operation in _SCHEMA_CHANGES:
                self._keys.pop(request.get("TableName", ""), None)
                dropped = self._mirrors.pop(request.get("TableName", ""), None)
                if dropped is not None and dropped.indexes:
                    _drop(own, dropped.name)
        return lag

    def _key(self, table: str, item: dict[str, Any], own: Forward) -> dict[str, Any]:
        """The key of ``item`` (or of a key) of ``table``."""
        names = self._keys.get(table)
        if names is None:
            found = own("DescribeTable", {"TableName": table})["Table"]["KeySchema"]
            names = self._keys[table] = tuple(k["AttributeName"] for k in found)
        return {name: item[name] for name in names}

    # -- what moto skips -----------------------------------------------------------------
    def _replicated(self, operation: str, request: dict[str, Any], forward: Forward,
                    own: Forward) -> dict[str, Any]:
        """A table's replicas (a global table's, version 2019.11.21), which moto drops:
        ``UpdateTable``'s ``ReplicaUpdates`` kept here (the rest of the update sent), and
        ``DescribeTable`` answering them as ``Replicas``, each ``ACTIVE`` at once; a table
        deleted or made anew has none."""
        name = str(request.get("TableName", ""))
        if operation in ("CreateTable", "DeleteTable"):
            self._replicas.pop(name, None)
            return forward(operation, request)
        updates = request.get("ReplicaUpdates") if operation == "UpdateTable" else None
        if updates:
            rest = {k: v for k, v in request.items() if k != "ReplicaUpdates"}
            answer = forward(operation, rest) if set(rest) - {"TableName"} else {
                "TableDescription": own("DescribeTable", {"TableName": name})["Table"]}
            regions = self._replicas.setdefault(name, [])
            for update in updates:
                for kind, body in update.items():
                    region = str(body.get("RegionName"))
                    if kind == "Create" and region not in regions:
                        regions.append(region)
                    elif kind == "Delete" and region in regions:
                        regions.remove(region)
            key = "TableDescription"
        else:
            answer, key = forward(operation, request), "Table"
        replicas = self._replicas.get(name)
        if replicas and isinstance(answer.get(key), dict):
            answer = {**answer, key: {**answer[key], "Replicas": [
                {"RegionName": r, "ReplicaStatus": "ACTIVE"} for r in replicas]}}
        return answer

    def _replayed(self, operation: str, request: dict[str, Any]) -> dict[str, Any] | None:
        """The first answer to a transaction whose token was applied (``None``: none)."""
        token = request.get("ClientRequestToken") if operation == "TransactWriteItems" else None
        found = self._tokens.get(token) if token else None
        if found is None or time.monotonic() - found[2] > _TOKEN_SECONDS:
            return None
        if found[0] != _fingerprint(request):
            raise RequestError(operation, "IdempotentParameterMismatchException",
                               f"ClientRequestToken {token!r} was used by a transaction of "
                               "other items")
        return copy.deepcopy(found[1])

    def _send(self, operation: str, request: dict[str, Any], forward: Forward,
              own: Forward) -> dict[str, Any]:
        """``request`` sent; with the rules, an update that makes an item too large is
        undone and refused, and a transaction's token remembered."""
        if not self.rules:
            return forward(operation, request)
        if operation == "TransactGetItems" and (
                _MOTO_GETS < len(request["TransactItems"]) <= _MAX_TRANSACT_GETS):
            return _transact_gets(request, forward)
        updated = [(at, (t, body["Key"])) for at, (kind, t, body)
                   in enumerate(_actions(operation, request)) if kind == "Update"]
        try:
            touched = [(t, self._key(t, k, own)) for t, k in _touched(operation, request)
                       ] if updated else []
        except TableNotFoundError:  # (the request fails on its own)
            return forward(operation, request)
        before = [(t, k, _read(own, t, k)) for t, k in touched]
        answer = forward(operation, request)
        for at, (table, key) in updated:
            item = _read(own, table, key)
            if item is not None and item_size(item) > MAX_ITEM_BYTES:
                for t, k, old in before:
                    _restore(own, t, k, old)
                raise _too_large(operation, request, at)
        token = request.get("ClientRequestToken") if operation == "TransactWriteItems" else None
        if token:
            self._tokens[token] = (_fingerprint(request), copy.deepcopy(answer),
                                   time.monotonic())
        return answer

    # -- lagging indexes -----------------------------------------------------------------
    def _mirror(self, table: str, own: Forward) -> _Mirror | None:
        """The mirror of ``table``, made now (with the table's items as they are) if the
        lag has none yet; ``None``: no such table (the request fails on its own)."""
        with self._lock:
            found = self._mirrors.get(table)
            if found is None:
                try:
                    found = self._mirrors[table] = _make_mirror(table, own)
                except TableNotFoundError:
                    return None
            return found

    def _record(self, operation: str, request: dict[str, Any], lag: IndexLag,
                own: Forward) -> None:
        """Each item a write touched, as a consistent read finds it now, due on its mirror
        after its lag (read and queued in one step: the queue keeps the order things
        happened in)."""
        for table, key in _touched(operation, request):
            with self._lock:
                mirror = self._mirrors.get(table)
                if mirror is None or not mirror.indexes:
                    continue
                key = self._key(table, key, own)
                _queue(mirror, key, _read(own, table, key), lag)

    def catch_up(self, lag: IndexLag) -> None:
        """Another client's changes (a boto3 client, the handler under test: writes that
        do not come through the emulator) to the tables mirrored under ``lag``, each due
        on its mirror ``lag`` after now, when the emulator sees it: on each lagging read
        and before :meth:`IndexLag.advance` moves the clock."""
        with self._lock:
            if self._closed or lag is not self._lag:
                return
            for table, mirror in self._mirrors.items():
                if mirror.indexes:
                    self._caught_up(table, mirror, lag)

    def _caught_up(self, table: str, mirror: _Mirror, lag: IndexLag) -> None:
        """The changes to ``table`` no write through the emulator made, queued."""
        now = {}
        for item in _scanned(mirror.own, table):
            key = self._key(table, item, mirror.own)
            now[render(key)] = (key, item)
        for rendered, (key, item) in now.items():
            if mirror.known.get(rendered) != item:
                _queue(mirror, key, item, lag)
        for rendered in [k for k in mirror.known if k not in now]:
            gone = self._key(table, mirror.known[rendered], mirror.own)
            _queue(mirror, gone, None, lag)

    def _lagging_read(self, operation: str, request: dict[str, Any], mirror: _Mirror,
                      lag: IndexLag, forward: Forward) -> dict[str, Any]:
        """The index read of the mirror, once the changes due are applied to it."""
        with self._lock:
            self._caught_up(request["TableName"], mirror, lag)
            now = lag.now()
            due = [change for change in mirror.pending if change[0] <= now]
            mirror.pending = [change for change in mirror.pending if change[0] > now]
            for _, key, item in due:
                _restore(mirror.own, mirror.name, key, item)
        answer = forward(operation, {**request, "TableName": mirror.name})
        used = answer.get("ConsumedCapacity")  # (an index read's: one table's)
        if isinstance(used, dict) and used.get("TableName") == mirror.name:
            used["TableName"] = request["TableName"]
        return answer


def _mirrors_hidden(operation: str, answer: dict[str, Any]) -> dict[str, Any]:
    """``answer`` without the emulator's mirror tables in a ``ListTables`` answer's names
    (a new answer then: the proxy sends one it did not change as it is)."""
    names = answer.get("TableNames") if operation == "ListTables" else None
    if names and any(n.endswith(MIRROR_SUFFIX) for n in names):
        return {**answer, "TableNames": [n for n in names if not n.endswith(MIRROR_SUFFIX)]}
    return answer


def _fingerprint(request: dict[str, Any]) -> bytes:
    """What a replay with the same token must repeat: the transaction's items (DynamoDB
    lets its capacity and metrics options differ)."""
    return hashlib.sha256(render({"TransactItems": request.get("TransactItems")})).digest()


def _drop(forward: Forward, table: str) -> None:
    with contextlib.suppress(RequestError):  # (gone already)
        forward("DeleteTable", {"TableName": table})


def _read(forward: Forward, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
    item = forward("GetItem", {"TableName": table, "Key": key,
                               "ConsistentRead": True}).get("Item")
    return item


def _restore(forward: Forward, table: str, key: dict[str, Any],
             item: dict[str, Any] | None) -> None:
    """Put ``item`` at ``key`` of ``table`` (``None``: no item there)."""
    if item is None:
        forward("DeleteItem", {"TableName": table, "Key": key})
    else:
        forward("PutItem", {"TableName": table, "Item": item})


def mirror_definition(table: dict[str, Any]) -> tuple[dict[str, Any], frozenset[str]]:
    """The ``CreateTable`` request of the mirror of a table ``DescribeTable`` describes as
    ``table`` (its keys and every lagging index, on demand), and the names of those
    indexes: its global secondary indexes and its vector indexes; none: nothing lags."""
    gsis = [{"IndexName": g["IndexName"], "KeySchema": g["KeySchema"],
             "Projection": g["Projection"]} for g in table.get("GlobalSecondaryIndexes", [])]
    vectors = [{k: v[k] for k in _VECTOR_KEYS if k in v} for v in table.get("VectorIndexes")
               or []]
    used = {k["AttributeName"] for k in table["KeySchema"]} | {
        k["AttributeName"] for g in gsis for k in g["KeySchema"]} | {
        e["AttributeName"] for v in vectors for e in v.get("SearchSchema", [])}
    create = {
        "TableName": table["TableName"] + MIRROR_SUFFIX, "KeySchema": table["KeySchema"],
        "BillingMode": "PAY_PER_REQUEST", "AttributeDefinitions": [
            a for a in table["AttributeDefinitions"] if a["AttributeName"] in used]}
    if gsis:
        create["GlobalSecondaryIndexes"] = gsis
    if vectors:
        create["VectorIndexes"] = vectors
    return create, frozenset(g["IndexName"] for g in [*gsis, *vectors])


def _make_mirror(table: str, own: Forward) -> _Mirror:
    """A new mirror of ``table`` on the engine (:func:`mirror_definition`), holding the
    table's items as they are (none made for a table without a lagging index)."""
    create, indexes = mirror_definition(own("DescribeTable", {"TableName": table})["Table"])
    name = create["TableName"]
    if not indexes:
        return _Mirror(name, indexes, own)
    _drop(own, name)  # (a mirror a stopped run left behind)
    own("CreateTable", create)  # (active at once on a local engine)
    mirror = _Mirror(name, indexes, own)
    keys = [k["AttributeName"] for k in create["KeySchema"]]
    for item in _scanned(own, table):
        own("PutItem", {"TableName": name, "Item": item})
        mirror.known[render({k: item[k] for k in keys})] = item
    return mirror


def _scanned(own: Forward, table: str) -> Iterator[dict[str, Any]]:
    """Every item of ``table``, by a consistent scan."""
    scan = {"TableName": table, "ConsistentRead": True}
    while True:
        page = own("Scan", scan)
        yield from page.get("Items", [])
        if not page.get("LastEvaluatedKey"):
            return
        scan["ExclusiveStartKey"] = page["LastEvaluatedKey"]


def _queue(mirror: _Mirror, key: dict[str, Any], item: dict[str, Any] | None,
           lag: IndexLag) -> None:
    """``item`` (``None``: no item) at ``key``, due on ``mirror`` after its lag (never
    before a change of the same item queued earlier), and known as the table's now."""
    rendered = render(key)
    nth, last = mirror.changes.get(rendered, (0, -math.inf))
    due = max(last, lag.now() + lag.delay(rendered, nth))
    mirror.changes[rendered] = (nth + 1, due)
    mirror.pending.append((due, key, item))
    if item is None:
        mirror.known.pop(rendered, None)
    else:
        mirror.known[rendered] = item


def _actions(operation: str, request: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    """``(kind, table, body)`` of each action of a write request, in order: ``Put``
    (``body`` holds ``Item``), ``Update``, ``Delete`` or ``ConditionCheck`` (``Key``)."""
    if operation == "TransactWriteItems":
        return [(kind, body["TableName"], body) for action in request["TransactItems"]
                for kind, body in action.items()]
    if operation == "BatchWriteItem":
        return [("Put", table, put["PutRequest"]) if "PutRequest" in put
                else ("Delete", table, put["DeleteRequest"])
                for table, puts in request["RequestItems"].items() for put in puts]
    kind = {"PutItem": "Put", "UpdateItem": "Update", "DeleteItem": "Delete"}.get(operation)
    return [] if kind is None else [(kind, request["TableName"], request)]


def _touched(operation: str, request: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """``(table, key)`` of each item a write changes; a put's key is its whole item (the
    caller keeps the key attributes it knows)."""
    return [(table, body["Item"] if kind == "Put" else body["Key"])
            for kind, table, body in _actions(operation, request) if kind != "ConditionCheck"]


def _too_large(operation: str, request: dict[str, Any], at: int) -> RequestError:
    """DynamoDB's refusal of an update that makes an item too large (in a transaction: its
    cancellation, the reason at the update's place)."""
    if operation != "TransactWriteItems":
        return RequestError(operation, "ValidationException", _UPDATE_TOO_LARGE)
    reasons: list[Reason | None] = [None] * len(request["TransactItems"])
    reasons[at] = Reason("ValidationError", _UPDATE_TOO_LARGE)
    codes = ", ".join("None" if r is None else r.code for r in reasons)
    return RequestError(operation, "TransactionCanceledException", "Transaction cancelled, "
                        f"please refer cancellation reasons for specific reasons [{codes}]",
                        reasons)


def _refuse(operation: str, request: dict[str, Any]) -> None:
    """Refuse, as DynamoDB does, what moto lets through: an item over 400 KB, a
    transaction over 4 MB, a batch of more than 25 writes."""
    actions = _actions(operation, request)
    if operation == "BatchWriteItem" and len(actions) > _MAX_BATCH_WRITES:
        raise RequestError(operation, "ValidationException",
                           "Too many items requested for the BatchWriteItem call")
    if any(kind == "Put" and item_size(body["Item"]) > MAX_ITEM_BYTES
           for kind, _, body in actions):
        raise RequestError(operation, "ValidationException", _TOO_LARGE)
    if operation == "TransactWriteItems":
        size = sum(item_size(body.get("Item") or body["Key"]) + sum(
            value_size(v) for v in (body.get("ExpressionAttributeValues") or {}).values())
            for _, _, body in actions)
        if size > _MAX_TRANSACTION_BYTES:
            raise RequestError(operation, "ValidationException", "Transaction payload size "
                               f"cannot exceed 4MB. Payload Size: {size}")


def _transact_gets(request: dict[str, Any], forward: Forward) -> dict[str, Any]:
    """A ``TransactGetItems`` of more than moto's 25 items, read 25 at a time (one request
    at a time: a snapshot all the same)."""
    items = request["TransactItems"]
    answer: dict[str, Any] = {"Responses": []}
    for start in range(0, len(items), _MOTO_GETS):
        part = forward("TransactGetItems", {**request, "TransactItems": items[
            start:start + _MOTO_GETS]})
        answer["Responses"].extend(part.get("Responses", []))
    return answer


#: per region, the botocore client the in-process emulators send their own requests with
#: (made inside a moto block, it reaches the moto of each block open later)
_OWN: dict[tuple[str, str | None], Any] = {}


class EmbeddedTransport:
    """The transport of every client inside :func:`~dynaorm.testing.moto_backend`: its
    botocore wire (which moto answers) behind an :class:`Emulator`, whose own requests go
    through a botocore client no one else holds, unseen by tracers. An
    ``AsyncSession``'s requests are sent on a worker thread (moto answers only botocore's
    client)."""

    botocore = True

    def __init__(self, emulator: Emulator, wire: Any):
        self.emulator, self.wire = emulator, wire

    def send(self, operation: str, request: dict[str, Any], reader: Any = None
             ) -> dict[str, Any]:
        """Send ``request`` through the emulator (``reader`` is ignored); moto stores the
        items the emulator lets through whatever their size (its own limit is lower than
        DynamoDB's: :func:`~dynaorm.testing.private_apis.moto_sizes_unchecked`), for the writes
        whose sizes it checks only (a PartiQL write: moto's check holds)."""
        if operation not in _WRITES and operation not in BULK_WRITES:
            return self.emulator.handle(operation, request, self.wire.send, self._own)
        with moto_sizes_unchecked():
            return self.emulator.handle(operation, request, self.wire.send, self._own)

    def _own(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """One of the emulator's own requests, to the engine the wire reaches: the same
        moto (the same region), or the endpoint a table names (DynamoDB Local, reached
        through moto's mock, which lets it pass)."""
        meta = self.wire.client.meta
        region, url = str(meta.region_name), str(meta.endpoint_url)
        endpoint = None if url.endswith(".amazonaws.com") else url
        client = _OWN.get((region, endpoint)) or _OWN.setdefault(
            (region, endpoint), Client(endpoint, region).botocore)
        from botocore import xform_name

        with unobserved():
            try:
                answer: dict[str, Any] = getattr(client, xform_name(operation))(**request)
            except Exception as exc:
                mapped = botocore_error(operation, request, exc)
                if mapped is exc:
                    raise
                raise mapped from exc
        return answer

    async def asend(self, operation: str, request: dict[str, Any], reader: Any = None
                    ) -> dict[str, Any]:
        """:meth:`send` on a worker thread."""
        import asyncio

        return await asyncio.to_thread(self.send, operation, request)

    def close(self) -> None:
        """Close the botocore wire's connections (none: moto answers in process)."""
        self.wire.close()

    async def aclose(self) -> None:
        """Close the running loop's aiobotocore client, if one was made."""
        await self.wire.aclose()

    def where(self) -> tuple[str, str] | None:
        """Where the botocore wire's client sends."""
        found: tuple[str, str] | None = self.wire.where()
        return found


def _forked() -> None:
    """In a child of ``os.fork()``: no emulator's lock is held by a thread it has not."""
    for emulator in list(_EMULATORS):
        emulator._lock = threading.RLock()


if hasattr(os, "register_at_fork"):  # (not on Windows)
    os.register_at_fork(after_in_child=_forked)
