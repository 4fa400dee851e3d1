"""What a write costs, priced as DynamoDB prices it (pure): the rows a write action writes
(its own, and an entry for each index it lands in, leaves or moves within) with their
sizes and write units (:func:`rows_of`), and what each weighs on each table and index, for
attributing the consumed capacity DynamoDB reports (:func:`shares_of`,
:mod:`dynaorm.protocol.capacity`). :mod:`dynaorm.core.explain` is built on it.

A write costs 1 unit per KB (rounded up) of the larger of the item before and after it, an
index entry the same of its projected attributes; in a ``TransactWriteItems`` twice that,
and a condition check 2 units per 4 KB of the item it reads. A read costs 1 unit per 4 KB
(0.5 eventually consistent).
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dynaorm._types import Item, PlainKey
from dynaorm.protocol.capacity import Shares
from dynaorm.schema.entity import spec_of
from dynaorm.schema.table import GSI, LSI, TableSchema
from dynaorm.values.expressions import Placeholders
from dynaorm.values.keys import key_value, wire_key
from dynaorm.values.limits import item_size, updated_item
from dynaorm.values.records import ConditionCheck, Delete, Op, Put, Role, Update
from dynaorm.values.revision import stamp_of
from dynaorm.values.state import InstanceState

__all__ = ["READ_UNIT", "REV", "ROLES", "Row", "entry", "index_entries", "read_units",
           "rows_of", "shares_of", "write_units"]

_KB: Final = 1024
#: bytes a read unit reads
READ_UNIT: Final = 4096
#: a revision as a real commit draws it (its size: 16 characters)
REV: Final = "0" * 16
#: the name of each role of row
ROLES: Final = {Role.ROW: "row", Role.GUARD: "unique guard", Role.VERSION: "version row",
                Role.LATEST: "latest copy", Role.RECEIPT: "receipt"}


def write_units(size: int) -> int:
    """Write units of one write of an item of ``size`` bytes (1 per KB, rounded up)."""
    return max(1, math.ceil(size / _KB))


def read_units(size: int, consistent: bool = False) -> float:
    """Read units of ``size`` bytes read together (1 per 4 KB rounded up; half that
    eventually consistent)."""
    return math.ceil(size / READ_UNIT) * (1.0 if consistent else 0.5)


@dataclass(frozen=True)
class Row:
    """One row a commit writes: its entity, role (``row``, ``latest copy``, ``version
    row``, ``unique guard``, ``check``, ``index entry``), action, table (and index, for
    an index entry), key, size and units."""

    entity: str
    """The entity class it is for."""
    role: str
    """What it is to the entity."""
    action: str
    """``Put``, ``Update``, ``Delete`` or ``ConditionCheck``; an index entry's ``put``,
    ``update`` or ``delete``."""
    table: str
    """The table written."""
    index: str | None
    """The index of an index entry (``None``: a row of the table)."""
    key: PlainKey
    """The row's table key."""
    size: int
    """The bytes it is priced on (the larger of before and after)."""
    units: float
    """The write units it costs (a transaction's: doubled)."""
    exact: bool = True
    """Whether every size it is priced on is known (``False``: the item stored before
    is not, and a real commit would read it)."""
    at: int = 0
    """Which action of its request it is (0 for the first)."""


# -- index entries -------------------------------------------------------------------------
def entry(table: TableSchema, index: GSI | LSI, item: Item | None) -> Item | None:
    """The entry ``item`` has in ``index`` (its projected attributes), if it is there."""
    if item is None:
        return None
    keys = table.key_names(index.name)
    if any(a not in item for a in keys):
        return None
    projection = index.projection
    if projection == "ALL":
        return item
    wanted = set(keys) | (set(projection) | set(table._carried) if not isinstance(
        projection, str) else set())
    return {a: v for a, v in item.items() if a in wanted}


def index_entries(table: TableSchema, before: Item | None, after: Item | None
                  ) -> list[tuple[str, str, int]]:
    """``(index, action, bytes)`` of every index entry a write from ``before`` to
    ``after`` (``None``: no item) puts, updates or deletes: an entry written where its
    projected attributes change, two where its key moves."""
    out = []
    for index in table.indexes.values():
        old, new = entry(table, index, before), entry(table, index, after)
        if old == new or (old is None and new is None):
            continue
        keys = table.key_names(index.name)
        if old is None:
            out.append((index.name, "put", item_size(new or {})))
        elif new is None:
            out.append((index.name, "delete", item_size(old)))
        elif any(old.get(a) != new.get(a) for a in keys):
            out += [(index.name, "delete", item_size(old)), (index.name, "put", item_size(new))]
        else:
            out.append((index.name, "update", max(item_size(old), item_size(new))))
    return out


def known_items(prepared: Sequence[tuple[Any, InstanceState | None]]
                ) -> dict[tuple[str, Any], Item]:
    """The stored items the plan is planned on, by (table, key)."""
    out = {}
    for entry, state in prepared:
        if state is not None:
            table = spec_of(entry._entity).table.name
            out[(table, tuple(sorted(state.key.items())))] = state.item
            for row in getattr(state, "history", ()):
                spec = spec_of(entry._entity)
                key = {a: key_value(row[a]) for a in spec.table_key_attrs}  # (as op.key)
                out[(table, tuple(sorted(key.items())))] = row
    return out


def _before(op: Op, known: Mapping[tuple[str, Any], Item]) -> tuple[Item | None, bool]:
    """The item stored at ``op``'s key before it (``None``: none), and whether that is
    known."""
    table = op.origin.table
    found = known.get((table.name, tuple(sorted(op.key.items()))))
    if found is not None:
        return found, True
    if isinstance(op, Update | Delete) and op.known is not None:
        return op.known, True  # (a released guard: its item, as its rule built it)
    if isinstance(op, Put) and op.condition is not None and op.condition.render(
            Placeholders()).startswith("attribute_not_exists("):
        return None, True  # an insert, a claim, a new version row: conditioned on absence
    return None, False


def rows_of(op: Op, stamped: bool, factor: int, known: Mapping[tuple[str, Any], Item],
            at: int = 0) -> list[Row]:
    """The rows ``op`` (action ``at`` of its request) writes: its own, then its index
    entries (``factor``: 2 in a transaction; ``known``: the stored items by
    ``(table, key)``, :func:`known_items`)."""
    table, entity = op.origin.table, op.origin.entity.__name__
    stamp = stamp_of(table, REV) if stamped else {}
    before, exact = _before(op, known)
    size = item_size(before) if before is not None else 0
    role = "check" if isinstance(op, ConditionCheck) else ROLES[op.origin.role]
    after: Item | None
    if isinstance(op, Put):
        after = {**op.item, **stamp}
    elif isinstance(op, Update):
        after = updated_item(before or wire_key(op.key), {**op.set, **stamp}, op.remove,
                             op.clauses, op.members)
    elif isinstance(op, Delete):
        after = None
    else:
        return [Row(entity, role, "ConditionCheck", table.name, None, op.key, size,
                    2 * max(1, math.ceil(size / READ_UNIT)), exact, at)]
    size = max(size, item_size(after) if after is not None else 0)
    rows = [Row(entity, role, type(op).__name__, table.name, None, op.key, size,
                factor * write_units(size), exact, at)]
    for index, action, bytes_ in index_entries(table, before, after):
        rows.append(Row(entity, "index entry", action, table.name, index, op.key, bytes_,
                        factor * write_units(bytes_), exact, at))
    return rows


def shares_of(ops: tuple[Op, ...], sizes: tuple[int, ...],
              known: Mapping[tuple[str, Any], Item]) -> Shares:
    """What each row a plan of ``ops`` writes weighs on each table and index, to split the
    capacity DynamoDB reports over them: on its table, the units it is priced at (the
    larger of the item stored before it, when ``known`` (:func:`known_items`) or the
    action holds it, and the bytes it adds to its request, ``sizes``; twice in a
    transaction; a check 2 per 4 KB), not the bytes alone (an Update of one attribute of an
    8 KB row costs 16 units in a transaction); on each index whose key attributes its item
    holds, those bytes."""
    factor, out = 1 if len(ops) == 1 else 2, []
    for op, size in zip(ops, sizes, strict=True):
        origin = op.origin
        entity, table = origin.entity.__name__, origin.table
        before = (known and known.get((table.name, tuple(sorted(op.key.items()))))) or (
            op.known if isinstance(op, Update | Delete) else None)
        priced = max(size, item_size(before) if before else 0)
        check = isinstance(op, ConditionCheck)
        out.append((entity, "check" if check else ROLES[origin.role], table.name, float(
            2 * math.ceil(priced / READ_UNIT) if check else factor * write_units(priced))))
        held = op.item.keys() if isinstance(op, Put) else (
            op.set.keys() | (op.known or {}).keys() if isinstance(op, Update) else ())
        for index, keys in table.index_keys.items():
            out.append((entity, "index entry", f"{table.name}/{index}",
                        float(size) if held and keys <= held else 0.0))
    return tuple(out)
