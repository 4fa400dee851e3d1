"""Unique guard items: the item that claims a unique value for its owner row.

Pure: builds the guard's key, item, the Put that writes it and the condition that the
guard still belongs to its owner.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dynaorm._types import Item, PlainKey
from dynaorm.model.expressions import Condition, all_of, raw_eq
from dynaorm.model.rows import GUARD_TYPE, OWNER_PK, OWNER_SK, OWNER_TYPE, UNIQUE_FIELD
from dynaorm.model.spec import EntitySpec, UniqueRule
from dynaorm.write.records import Origin, Put

__all__ = ["guard_item", "guard_key", "guard_put", "owned_by"]



class _Layout(NamedTuple):
    """What every guard item of one (entity, unique field) shares."""

    pk: str
    sk: str | None
    type_attr: str
    type_name: str
    field: str


#: per (entity class, unique field): its guard items' layout (a spec never changes)
_LAYOUTS: dict[tuple[type[Any], str], _Layout] = {}


def _layout(spec: EntitySpec, rule: UniqueRule) -> _Layout:
    found = _LAYOUTS.get((spec.cls, rule.field))
    if found is None:
        table = spec.table
        found = _LAYOUTS[(spec.cls, rule.field)] = _Layout(
            table.pk, table.sk, table.type_attr, spec.type_name, rule.field)
    return found


def guard_item(spec: EntitySpec, rule: UniqueRule, key: str, owner: PlainKey,
               value: Any) -> Item:
    """The unique guard item of ``rule`` at ``key``, owned by the row at ``owner``."""
    return _item(_layout(spec, rule), key, owner)


def _item(layout: _Layout, key: str, owner: PlainKey) -> Item:
    # (built as one literal, in the item's attribute order: key, type, owner, field)
    if layout.sk is None:
        return {layout.pk: {"S": key}, layout.type_attr: {"S": GUARD_TYPE},
                OWNER_PK: {"S": owner[layout.pk]}, OWNER_TYPE: {"S": layout.type_name},
                UNIQUE_FIELD: {"S": layout.field}}
    return {layout.pk: {"S": key}, layout.sk: {"S": key},
            layout.type_attr: {"S": GUARD_TYPE}, OWNER_PK: {"S": owner[layout.pk]},
            OWNER_SK: {"S": owner[layout.sk]}, OWNER_TYPE: {"S": layout.type_name},
            UNIQUE_FIELD: {"S": layout.field}}


def guard_put(spec: EntitySpec, rule: UniqueRule, key: str, owner: PlainKey, value: Any,
              condition: Condition, origin: Origin) -> Put:
    """The Put of a guard item (the write gate checks and sizes it as any Put)."""
    layout = _layout(spec, rule)
    guard = {layout.pk: key} if layout.sk is None else {layout.pk: key, layout.sk: key}
    return Put(guard, _item(layout, key, owner), condition, origin)


def guard_key(spec: EntitySpec, key: str) -> PlainKey:
    """The primary key of the guard item at ``key`` (the same text in both key parts)."""
    out = {spec.table.pk: key}
    if spec.table.sk is not None:
        out[spec.table.sk] = key
    return out


def owned_by(spec: EntitySpec, owner: PlainKey) -> Condition:
    """The condition that a guard item still belongs to the row at ``owner``."""
    conds = [raw_eq(OWNER_PK, {"S": owner[spec.table.pk]})]
    if spec.table.sk is not None:
        conds.append(raw_eq(OWNER_SK, {"S": owner[spec.table.sk]}))
    cond = all_of(conds)
    assert cond is not None
    return cond
