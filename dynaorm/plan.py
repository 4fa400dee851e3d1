"""Write plans: an ordered tuple of frozen write records, rendered to DynamoDB requests.

A plan is plain data. It is built without I/O (see :mod:`dynaorm.compile`), checked
against DynamoDB's limits, and rendered either as one ``TransactWriteItems`` request (in
the plan's own order, so cancellation reason ``i`` belongs to ``ops[i]``) or, when it holds
a single action, as one ``PutItem``/``UpdateItem``/``DeleteItem``.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ._types import AttributeValue, Item, PlainKey
from .errors import ItemTooLargeError, TransactionTooLargeError
from .expressions import Condition, Placeholders, condition_values
from .keys import key_av

__all__ = [
    "MAX_ACTIONS", "MAX_ITEM_BYTES", "MAX_REQUEST_BYTES", "ConditionCheck", "Delete", "Fail",
    "Op", "Origin", "Put", "Role", "Update", "WritePlan",
]

MAX_ACTIONS = 100
MAX_ITEM_BYTES = 400 * 1024
MAX_REQUEST_BYTES = 4 * 1024 * 1024


class Role(enum.Enum):
    """Which item of an entity an action writes."""

    ROW = "row"
    GUARD = "unique guard"
    VERSION = "version row"
    LATEST = "latest copy"


class Fail(enum.Enum):
    """What a failed condition on an action means."""

    EXISTS = "exists"          # the item is already there -> ItemExistsError
    UNIQUE = "unique"          # a guard is taken -> UniqueConstraintError
    CONCURRENT = "concurrent"  # stored values moved -> ConcurrentModificationError
    GONE = "gone"              # item gone (ItemNotFoundError) or changed (Concurrent...)
    CALLER = "caller"          # only the caller's condition -> ConditionFailedError


class Origin(NamedTuple):
    """Why an action is in the plan: which entity and object, which role."""

    entity: type[Any]
    owner_key: PlainKey
    role: Role
    fail: Fail
    field: str | None = None
    value: Any = None
    staged: int = 0  # index of the staged entry that produced it
    #: the caller's own condition (``condition=``, ``where``), ANDed into the action's:
    #: the stored item returned on failure tells whose condition failed
    caller: Condition | None = None


@dataclass(frozen=True, slots=True)
class Put:
    key: PlainKey
    item: Item
    condition: Condition | None
    origin: Origin


@dataclass(frozen=True, slots=True)
class Update:
    key: PlainKey
    set: Item
    remove: tuple[str, ...]
    condition: Condition | None
    origin: Origin
    #: an update expression built by ``s.update()`` (see :mod:`dynaorm.updates`); when
    #: given it replaces ``set``/``remove``: ``(clause, attribute, value)`` in call order
    clauses: tuple[tuple[str, str, AttributeValue | None], ...] = ()


@dataclass(frozen=True, slots=True)
class Delete:
    key: PlainKey
    condition: Condition | None
    origin: Origin


@dataclass(frozen=True, slots=True)
class ConditionCheck:
    key: PlainKey
    condition: Condition
    origin: Origin


Op = Put | Update | Delete | ConditionCheck


def _key_av(key: PlainKey) -> Item:
    return {k: key_av(v) for k, v in key.items()}


def render_op(op: Op, table: str) -> tuple[str, dict[str, Any]]:
    """(operation name for a single request, request body) of one action."""
    ph = Placeholders()
    body: dict[str, Any] = {"TableName": table}
    if isinstance(op, Put):
        name = "PutItem"
        body["Item"] = op.item
    else:
        body["Key"] = _key_av(op.key)
        if isinstance(op, Update) and op.clauses:
            name = "UpdateItem"
            body["UpdateExpression"] = render_clauses(op.clauses, ph)
        elif isinstance(op, Update):
            name = "UpdateItem"
            parts = []
            if op.set:
                assigns = ", ".join(f"{ph.name(k)} = {ph.value_av(v)}" for k, v in op.set.items())
                parts.append(f"SET {assigns}")
            if op.remove:
                parts.append("REMOVE " + ", ".join(ph.name(k) for k in op.remove))
            body["UpdateExpression"] = " ".join(parts)
        elif isinstance(op, Delete):
            name = "DeleteItem"
        else:
            name = "ConditionCheck"
    if op.condition is not None:
        body["ConditionExpression"] = op.condition.render(ph)
        # a failed condition returns the stored item: it tells which error applies, and
        # whether an ambiguous earlier attempt had in fact written what this one would
        body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    ph.apply(body)
    return name, body


_SET_FORMS = {
    "SET": "{n} = {v}",
    "DEFAULT": "{n} = if_not_exists({n}, {v})",
    "APPEND": "{n} = list_append(if_not_exists({n}, {e}), {v})",
    "PREPEND": "{n} = list_append({v}, if_not_exists({n}, {e}))",
}


def render_clauses(clauses: tuple[tuple[str, str, AttributeValue | None], ...],
                   ph: Placeholders) -> str:
    """``SET ... REMOVE ... ADD ... DELETE ...`` of an update expression; actions keep
    their call order within each clause."""
    sets: list[str] = []
    removes: list[str] = []
    adds: list[str] = []
    deletes: list[str] = []
    empty: str | None = None
    for kind, attr, av in clauses:
        n = ph.name(attr)
        if kind == "REMOVE":
            removes.append(n)
            continue
        assert av is not None
        v = ph.value_av(av)
        if kind in ("APPEND", "PREPEND") and empty is None:
            empty = ph.value_av({"L": []})
        if kind == "ADD":
            adds.append(f"{n} {v}")
        elif kind == "DELETE":
            deletes.append(f"{n} {v}")
        else:
            sets.append(_SET_FORMS[kind].format(n=n, v=v, e=empty))
    parts = [f"{word} {', '.join(items)}" for word, items in (
        ("SET", sets), ("REMOVE", removes), ("ADD", adds), ("DELETE", deletes)) if items]
    return " ".join(parts)


_TRANSACT_NAME = {"PutItem": "Put", "UpdateItem": "Update", "DeleteItem": "Delete",
                  "ConditionCheck": "ConditionCheck"}


# -- sizes ---------------------------------------------------------------------------------
def value_size(av: AttributeValue) -> int:
    """DynamoDB's size of one attribute value (bytes), as documented."""
    (tag, raw), = av.items()
    if tag == "S":
        return len(raw.encode())
    if tag == "N":
        return len(raw.lstrip("-").replace(".", "")) // 2 + 2
    if tag == "B":
        return len(raw)
    if tag in ("BOOL", "NULL"):
        return 1
    if tag == "SS":
        return sum(len(s.encode()) for s in raw)
    if tag == "NS":
        return sum(len(n) // 2 + 2 for n in raw)
    if tag == "BS":
        return sum(len(b) for b in raw)
    if tag == "L":
        return 3 + sum(value_size(v) + 1 for v in raw)
    return 3 + sum(len(k.encode()) + value_size(v) + 1 for k, v in raw.items())


def item_size(item: Item) -> int:
    """DynamoDB's size of an item: attribute names plus values (strings take a fast path)."""
    total = 0
    for name, value in item.items():
        total += len(name) if name.isascii() else len(name.encode())
        text = value.get("S")
        if text is None:
            total += value_size(value)
        else:
            total += len(text) if text.isascii() else len(text.encode())
    return total


def check_item_size(size: int, entity: str, key: PlainKey) -> int:
    """``size`` if an item of that many bytes fits in DynamoDB, else ItemTooLargeError."""
    if size > MAX_ITEM_BYTES:
        raise ItemTooLargeError(f"{entity} {key}: item of {size} bytes exceeds DynamoDB's "
                                f"{MAX_ITEM_BYTES} byte limit")
    return size


def _exact_size(op: Op) -> int:
    size = item_size(op.item) if isinstance(op, Put) else item_size(_key_av(op.key))
    if isinstance(op, Update):
        size += item_size(op.set)
        size += sum(value_size(av) + len(a) for _, a, av in op.clauses if av is not None)
    return size


@dataclass(frozen=True)
class WritePlan:
    """An ordered, limit-checked tuple of write actions on one table."""

    table: str
    ops: tuple[Op, ...]
    token: str = field(default="", compare=False)

    def __post_init__(self) -> None:
        if len(self.ops) > MAX_ACTIONS:
            first = self.ops[0].origin
            raise TransactionTooLargeError(
                f"commit needs {len(self.ops)} actions (first: {first.entity.__name__} "
                f"{first.owner_key}); DynamoDB allows {MAX_ACTIONS} per transaction")
        total = 0
        for op in self.ops:
            total += check_item_size(_exact_size(op), op.origin.entity.__name__, op.key)
            if op.condition is not None:  # condition values travel in the request too
                total += sum(value_size(av) for av in condition_values(op.condition))
        if total > MAX_REQUEST_BYTES:
            first = self.ops[0].origin
            raise TransactionTooLargeError(
                f"commit (first: {first.entity.__name__} {first.owner_key}) of {total} bytes "
                f"exceeds DynamoDB's {MAX_REQUEST_BYTES} byte "
                "request limit")

    def __len__(self) -> int:
        return len(self.ops)

    def single_request(self) -> tuple[str, dict[str, Any]]:
        """The one-item request (PutItem/UpdateItem/DeleteItem) of a one-action plan."""
        (op,) = self.ops
        name, body = render_op(op, self.table)
        if isinstance(op, Update) and op.clauses:
            body["ReturnValues"] = "ALL_NEW"  # s.update(): the stored entity afterwards
        return name, body

    def transaction_request(self, token: str) -> dict[str, Any]:
        """The TransactWriteItems request, actions in plan order."""
        items = []
        for op in self.ops:
            name, body = render_op(op, self.table)
            items.append({_TRANSACT_NAME[name]: body})
        return {"TransactItems": items, "ClientRequestToken": token}
