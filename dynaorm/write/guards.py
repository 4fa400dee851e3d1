"""Unique guard items: the item that claims a unique value for its owner row.

Pure: builds the guard's key, item, the Put that writes it (sized here, see
:func:`guard_put`) and the condition that the guard still belongs to its owner.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from dynaorm._types import Item, PlainKey
from dynaorm.model.expressions import Condition, all_of, raw_eq
from dynaorm.model.rows import GUARD_TYPE, OWNER_PK, OWNER_SK, OWNER_TYPE, UNIQUE_FIELD
from dynaorm.model.spec import EntitySpec, UniqueRule
from dynaorm.write.limits import plain_key_value
from dynaorm.write.records import Origin, Put
from dynaorm.write.sizes import MAX_SORT_KEY_BYTES

__all__ = ["guard_item", "guard_key", "guard_put", "owned_by"]



class _Layout(NamedTuple):
    """What every guard item of one (entity, unique field) shares."""

    pk: str
    sk: str | None
    type_attr: str
    type_name: str
    field: str
    #: the bytes of its names and fixed values; -1 when one is not plain (see guard_put)
    size: int


#: per (entity class, unique field): its guard items' layout (a spec never changes)
_LAYOUTS: dict[tuple[type[Any], str], _Layout] = {}


def _layout(spec: EntitySpec, rule: UniqueRule) -> _Layout:
    found = _LAYOUTS.get((spec.cls, rule.field))
    if found is None:
        table = spec.table
        found = _LAYOUTS[(spec.cls, rule.field)] = _Layout(
            table.pk, table.sk, table.type_attr, spec.type_name, rule.field,
            _guard_constant_size(spec, rule))
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
    """The Put of a guard item, sized here: the write gate's rule (what
    :func:`~dynaorm.write.limits.check_item` answers for an item of plain strings) applied to
    the few values a guard item is built of, instead of scanning the item again. A guard
    key or owner key that is not plain leaves the size unknown: the gate checks it."""
    layout = _layout(spec, rule)
    size = layout.size
    # the key and owner values: plain_key_value's test (names were checked once), inline
    if size >= 0 and 0 < len(key) <= MAX_SORT_KEY_BYTES and key.isascii():
        sk = layout.sk
        owner_pk = owner.get(layout.pk)
        owner_sk = "" if sk is None else owner.get(sk)
        if (type(owner_pk) is str and 0 < len(owner_pk) <= MAX_SORT_KEY_BYTES
                and owner_pk.isascii() and type(owner_sk) is str
                and len(owner_sk) <= MAX_SORT_KEY_BYTES and owner_sk.isascii()
                and (sk is None or owner_sk)):
            size += len(key) * (1 if sk is None else 2) + len(owner_pk) + len(owner_sk)
        else:
            size = -1
    else:
        size = -1
    guard = {layout.pk: key} if layout.sk is None else {layout.pk: key, layout.sk: key}
    return Put(guard, _item(layout, key, owner), condition, origin, size)


def _guard_constant_size(spec: EntitySpec, rule: UniqueRule) -> int:
    """The bytes of a guard item of ``rule`` that do not depend on the guard's key or
    owner: every name, the type and field values; -1 when any of them is not plain (a
    name clashing with another included: the gate then checks every such guard item the
    long way). Every value is held to the key limits (a plain key value), so a name that
    is a key attribute of some index needs no other rule."""
    table = spec.table
    keys = [table.pk] if table.sk is None else [table.pk, table.sk]
    owners = [OWNER_PK] if table.sk is None else [OWNER_PK, OWNER_SK]
    fixed = {table.type_attr: GUARD_TYPE, OWNER_TYPE: spec.type_name,
             UNIQUE_FIELD: rule.field}
    names = [*keys, *owners, *fixed]
    if len(set(names)) != len(names):
        return -1
    if not all(plain_key_value(n, n) for n in names) or not all(
            plain_key_value(n, v) for n, v in fixed.items()):
        return -1
    return sum(map(len, names)) + sum(map(len, fixed.values()))


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
