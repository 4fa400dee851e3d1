"""Unique guard items: the item that claims a unique value for its owner row.

Pure: builds the guard's key, item, the Put that writes it and the condition that the
guard still belongs to its owner.

TTL: on a table with ``Table(ttl=...)``, a guard carries its owner's TTL value (the
same epoch seconds, rewritten in the transaction that changes the owner's TTL), so
DynamoDB expires it with its owner; and a claim is conditioned :func:`claimable`: the
value is free when no guard exists *or* the guard's TTL has passed (an expired owner,
not yet deleted by DynamoDB, never blocks its unique values).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.model.entity import spec_of
from dynaorm.model.expressions import Condition, F, all_of, not_exists, raw_eq
from dynaorm.model.rows import GUARD_TYPE, OWNER_PK, OWNER_SK, OWNER_TYPE, UNIQUE_FIELD
from dynaorm.model.spec import EntitySpec, UniqueRule
from dynaorm.model.timestamps import encode_ttl, expired
from dynaorm.protocol.events import Reason
from dynaorm.write.records import Fail, Op, Origin, Put

__all__ = ["STALE_GUARD", "claimable", "guard_item", "guard_key", "guard_put",
           "held_by_expired", "owned_by", "owner_ttl"]

#: what a :class:`~dynaorm.UniqueConstraintError` adds when the guard that refused the
#: claim names an owner that has expired (or is gone): a guard without the owner's TTL
#: (written before 0.3, or by another tool) or with a stale one
STALE_GUARD = ("the guard's owner has expired or is gone, but the guard does not carry "
               "its TTL (written before dynaorm 0.3?): run `dynaorm check --repair` to "
               "release the value")


def guard_item(spec: EntitySpec, rule: UniqueRule, key: str, owner: PlainKey,
               value: Any, ttl: int | None = None) -> Item:
    """The unique guard item of ``rule`` at ``key``, owned by the row at ``owner``
    (attributes in order: key, type, owner, field, and the owner's TTL ``ttl`` on a
    table with a TTL attribute)."""
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
    if ttl is not None and table.ttl is not None:
        item[table.ttl] = {"N": str(ttl)}
    return item


def guard_put(spec: EntitySpec, rule: UniqueRule, key: str, owner: PlainKey, value: Any,
              condition: Condition, origin: Origin, ttl: int | None = None) -> Put:
    """The Put of a guard item (the write gate checks and sizes it as any Put)."""
    return Put(guard_key(spec, key), guard_item(spec, rule, key, owner, value, ttl),
               condition, origin)


def owner_ttl(spec: EntitySpec, values: Mapping[str, Any] | None) -> int | None:
    """The TTL (epoch seconds) an owner with field ``values`` gives its guards: ``None``
    without a TTL field, or on a table without a TTL attribute."""
    field = spec.ttl_field
    if field is None or values is None or spec.table.ttl is None:
        return None
    return encode_ttl(values.get(field), spec.name, field)


def claimable(spec: EntitySpec, at: float | None = None) -> Condition:
    """The condition of a guard claim: no guard item exists, or (a table with a TTL
    attribute) the one stored has a TTL that has passed at ``at`` (default: now), its
    owner expired: reads count it as gone (``expired`` in :mod:`dynaorm.model.timestamps`
    uses the same ``<=``), so a claim does too. One condition, no read."""
    free = not_exists(spec.table.pk)
    if spec.table.ttl is None:
        return free
    now = int(time.time() if at is None else at)
    return free | (F(spec.table.ttl) <= now)


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


def held_by_expired(failed: Sequence[tuple[Op, Reason]],
                    read: Callable[[Any, PlainKey], Generator[Any, Any, Item | None]]
                    ) -> Generator[Any, Any, bool]:
    """Whether a refused unique claim of ``failed`` (a table with a TTL attribute only)
    was refused by a guard whose owner has expired or is gone: the guard does not carry
    its owner's TTL (a guard that does would have let the claim through), so only
    ``dynaorm check --repair`` releases the value. A protocol: reads the guard when the
    cancellation reason did not return it, and its owner (consistent reads, only after
    a refused claim)."""
    for op, reason in failed:
        origin = op.origin
        if origin.fail is not Fail.UNIQUE:
            continue
        table = spec_of(origin.entity).table
        if table.ttl is None:
            continue
        guard = reason.item if reason.item is not None else (
            yield from read(table, op.key))
        if guard is None or OWNER_PK not in guard:
            continue
        owner = {table.pk: guard[OWNER_PK].get("S", "")}
        if table.sk is not None:
            owner[table.sk] = guard.get(OWNER_SK, {}).get("S", "")
        held = yield from read(table, owner)
        if held is None or expired(held, table.ttl):
            return True
    return False
