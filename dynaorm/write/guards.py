"""Unique guard items: the item that claims a unique value for its owner row.

Pure: builds the guard's key, item, the Put that writes it and the condition that the
guard still belongs to its owner.
"""

from __future__ import annotations

from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.model.expressions import Condition, all_of, raw_eq
from dynaorm.model.rows import GUARD_TYPE, OWNER_PK, OWNER_SK, OWNER_TYPE, UNIQUE_FIELD
from dynaorm.model.spec import EntitySpec, UniqueRule
from dynaorm.write.records import Origin, Put

__all__ = ["guard_item", "guard_key", "guard_put", "owned_by"]


def guard_item(spec: EntitySpec, rule: UniqueRule, key: str, owner: PlainKey,
               value: Any) -> Item:
    """The unique guard item of ``rule`` at ``key``, owned by the row at ``owner``
    (attributes in order: key, type, owner, field)."""
    table = spec.table
    item = {table.pk: {"S": key}}
    if table.sk is not None:
        item[table.sk] = {"S": key}
    item[table.type_attr] = {"S": GUARD_TYPE}
    item[OWNER_PK] = {"S": owner[table.pk]}
    if table.sk is not None:
        item[OWNER_SK] = {"S": owner[table.sk]}
    item[OWNER_TYPE] = {"S": spec.type_name}
    item[UNIQUE_FIELD] = {"S": rule.field}
    return item


def guard_put(spec: EntitySpec, rule: UniqueRule, key: str, owner: PlainKey, value: Any,
              condition: Condition, origin: Origin) -> Put:
    """The Put of a guard item (the write gate checks and sizes it as any Put)."""
    return Put(guard_key(spec, key), guard_item(spec, rule, key, owner, value), condition,
               origin)


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
