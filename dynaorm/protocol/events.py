"""What happened on the wire: one :class:`RequestEvent` per attempt, the
:class:`CommitResult` a commit returns, a transaction's cancellation :class:`Reason`, and
what a request names (its tables, its actions, the capacity it consumed), and the
recording of a commit's requests into its result in the current context (:func:`recording`).
Plain data."""

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from dynaorm._types import Item
from dynaorm.errors import RequestError

#: Why an action is in a write request: ``(entity_class, key, role)``; ``key`` is the
#: table key of the entity object the action is for, ``role`` one of ``"row"``,
#: ``"latest"``, ``"version"``, ``"guard"``, ``"check"``.
EventOrigin = tuple[type[Any], dict[str, Any], str]


#: the JSON type of each top-level member of DynamoDB's answers that dynaorm reads
_MEMBERS: dict[str, type | tuple[type, ...]] = {
    "Item": dict, "Attributes": dict, "Items": list, "LastEvaluatedKey": dict,
    "Responses": (dict, list), "UnprocessedKeys": dict, "UnprocessedItems": dict,
    "Count": int, "ScannedCount": int, "ConsumedCapacity": (dict, list),
    "ItemCollectionMetrics": dict, "Table": dict, "TableDescription": dict,
    "TimeToLiveDescription": dict, "TableNames": list, "SearchResults": list}


def shape_problem(answer: object) -> str | None:
    """What makes ``answer`` (a decoded answer, or one a hook supplied) not of DynamoDB's
    shape (``None``: nothing): not an object, a top-level member of another JSON type
    than DynamoDB sends (``"Item": "x"``), an ``Items`` entry that is not an object, or a
    ``SearchResults`` entry whose ``Item`` is not an object or ``Score`` not a number
    (deeper shapes are the readers' to judge)."""
    if not isinstance(answer, dict):
        return f"a {type(answer).__name__}, not an object"
    for name, value in answer.items():  # (an answer has a few members: walk those)
        kind = _MEMBERS.get(name)
        if kind is not None and not isinstance(value, kind):  # (a wire drops nulls first)
            return f"a {type(value).__name__} as {name}"
    for item in answer.get("Items") or ():  # (a loop: no generator resumed per item)
        if not isinstance(item, dict):
            return "an entry of Items that is not an object"
    for hit in answer.get("SearchResults") or ():
        if not isinstance(hit, dict) or not isinstance(hit.get("Item", {}), dict) or (
                type(hit.get("Score", 0.0)) not in (int, float)):
            return "an entry of SearchResults that is not an Item and its Score"
    return None


@dataclass(frozen=True, slots=True)
class Reason:
    """One cancellation reason of a transaction (an entry of
    :attr:`RequestError.reasons <dynaorm.RequestError.reasons>`, ``None`` where its action
    was not the cause): DynamoDB's code and message and, when returned, the stored item.
    A transport or an engine of your own raises a cancellation with them, as DynamoDB's
    ``CancellationReasons`` read."""

    code: str
    """DynamoDB's code: ``"ConditionalCheckFailed"``, ``"TransactionConflict"``, ..."""
    message: str | None = None
    """Its message (``None``: none given)."""
    item: Item | None = None
    """The stored item, as DynamoDB JSON, when the request asked for it back."""


@dataclass(frozen=True, slots=True)
class ThrottlingReason:
    """Why DynamoDB throttled a request (one of its ``ThrottlingReasons``): ``reason``
    says what was throttled, how, and which limit it hit
    (``"TableWriteProvisionedThroughputExceeded"``, ``"IndexReadKeyRangeThroughputExceeded"``,
    ...), ``resource`` the ARN of the table or index."""

    reason: str
    """What was throttled, how, and the limit: ``"TableWriteProvisionedThroughputExceeded"``."""
    resource: str = ""
    """The ARN of the table or index (``""``: not given)."""

    @property
    def table(self) -> str | None:
        """The table the resource is, or whose index it is (``None``: not an ARN)."""
        _, found, rest = self.resource.partition(":table/")
        return rest.split("/", 1)[0] if found else None

    @property
    def index(self) -> str | None:
        """The index the resource is (``None``: the table itself)."""
        _, found, rest = self.resource.partition("/index/")
        return rest if found else None

    @property
    def write(self) -> bool | None:
        """Whether writes were throttled (``False``: reads; ``None``: it does not say)."""
        return True if "Write" in self.reason else False if "Read" in self.reason else None


@dataclass(frozen=True, slots=True)
class RequestEvent:
    """One attempt of one request, as ``table.on_request`` hooks see it.

    ``response`` is the parsed response of a successful attempt (else ``None``) and
    ``error`` the :class:`~dynaorm.RequestError` of a failed one (else ``None``).
    ``attempt`` counts from 1; ``elapsed`` is in seconds; ``consumed_capacity`` maps table
    name and ``"table/index"`` to capacity units (empty when not returned). ``origins``:
    for a write, one ``(entity_class, key, role)`` per action in request order; for a
    read, the entity classes it was for (empty when not known).
    """

    operation: str
    """The DynamoDB API name (``"PutItem"``)."""
    request: dict[str, Any]
    """The request's parameters, as sent (botocore-shaped)."""
    response: dict[str, Any] | None
    """The answer (``None`` when the attempt failed)."""
    error: RequestError | None
    """The attempt's failure as a dynaorm error (``None`` when it succeeded)."""
    attempt: int
    """Which attempt of the request this was (1 for the first)."""
    elapsed: float
    """Seconds the attempt took, from sending to the answer or failure."""
    consumed_capacity: dict[str, float]
    """Capacity units the attempt consumed, by table (and index) name."""
    origins: tuple[Any, ...] = ()
    """For a commit's write: what each action of the request stands for (entity, key, role);
    empty otherwise."""

    @property
    def table(self) -> str | None:
        """The table the request is for (the first one, for a multi-table batch)."""
        return table_of(self.request)


@dataclass(slots=True)
class CommitResult:
    """What ``Session.commit()`` sent.

    ``requests``: ``(operation, request)`` for each request the commit sent, in order
    (reads it made to plan included; a retried request appears once).
    ``consumed_capacity``: capacity units the commit's writes consumed, by table name
    (the table's own share) and by ``"table/index"``; their sum is the total.
    Both are empty for a commit with nothing to write.
    """

    requests: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """``(operation, request)`` for each request the commit sent, in order."""
    consumed_capacity: dict[str, float] = field(default_factory=dict)
    """Capacity units the commit's writes consumed, by table (and index) name."""
    replayed: bool = False
    """True when a commit with an idempotency key applied nothing because a commit of the
    same writes under that key already had: ``requests`` are that commit's (as its
    receipt kept them); ``consumed_capacity`` is what the replay's own requests reported:
    DynamoDB's answer to its cancelled transaction reports no capacity (what it consumed
    is not known), so it holds only the reads it made when the client asks reads for
    capacity (``return_consumed_capacity=``), else it is empty."""

    def _consumed(self, capacity: dict[str, float]) -> None:
        for name, units in capacity.items():
            self.consumed_capacity[name] = self.consumed_capacity.get(name, 0.0) + units


def table_of(request: dict[str, Any]) -> str | None:
    """The table a request is for (the first, for transactions and batches)."""
    return next(iter(tables_of(request)), None)


def tables_of(request: dict[str, Any]) -> tuple[str, ...]:
    """Every table a request names, in order of first mention (one for a single-item
    request; several for a transaction or batch across tables)."""
    name = request.get("TableName")
    if name is not None:
        return (str(name),)
    items = request.get("TransactItems")
    if items:
        found: dict[str, None] = {}
        for item in items:
            (body,) = item.values()
            found[str(body.get("TableName"))] = None
        return tuple(found)
    batch = request.get("RequestItems")
    if batch:
        return tuple(str(t) for t in batch)
    return ()


def actions_of(request: dict[str, Any]) -> int:
    """How many items a request writes or reads by key (1 for a single-item request)."""
    items = request.get("TransactItems")
    if items is not None:
        return len(items)
    batch = request.get("RequestItems")
    if batch is not None:
        return sum(len(v["Keys"]) if isinstance(v, dict) else len(v) for v in batch.values())
    return 1


def capacity_of(response: dict[str, Any] | None) -> dict[str, float]:
    """Capacity units of a response's ``ConsumedCapacity``, by table and ``table/index``."""
    raw = (response or {}).get("ConsumedCapacity")
    if not raw:
        return {}
    out: dict[str, float] = {}
    for entry in raw if isinstance(raw, list) else [raw]:
        if "VectorSearchRequestBytes" in entry:
            continue  # (a search's: bytes, not units; see protocol.capacity.searched)
        table = str(entry.get("TableName", "?"))
        indexes = {**entry.get("GlobalSecondaryIndexes", {}),
                   **entry.get("LocalSecondaryIndexes", {})}
        own = entry.get("Table", {}).get("CapacityUnits")
        if own is None:  # no breakdown: everything counts for the table
            own = float(entry.get("CapacityUnits", 0.0)) - sum(
                float(i.get("CapacityUnits", 0.0)) for i in indexes.values())
        out[table] = out.get(table, 0.0) + float(own)
        for index, units in indexes.items():
            key = f"{table}/{index}"
            out[key] = out.get(key, 0.0) + float(units.get("CapacityUnits", 0.0))
    return out


#: the commit being recorded in this context, if any (see :func:`recording`)
RECORDER: contextvars.ContextVar[CommitResult | None] = contextvars.ContextVar(
    "dynaorm_recorder", default=None)


@contextlib.contextmanager
def recording() -> Iterator[CommitResult]:
    """Record every request sent in this context during the block into a CommitResult."""
    result = CommitResult()
    token = RECORDER.set(result)
    try:
        yield result
    finally:
        RECORDER.reset(token)
