"""The rows a write adds beside an entity's own (pure): unique guard items (the item that
claims a unique value for its owner row) and version rows, collected with their origins by
an :class:`ActionBuilder`; and which attributes an entity class writes (what every write
that rewrites an item carries over besides: :func:`undeclared`). Every kind of write
(:mod:`dynaorm.write.save`, :mod:`~dynaorm.write.delete`, :mod:`~dynaorm.write.moves`)
builds its guards and version rows here, so they are written the same way whatever the
write that needs them.

TTL: on a table with ``Table(ttl=...)``, a guard carries its owner's TTL value (the
same epoch seconds, rewritten in the transaction that changes the owner's TTL), so
DynamoDB expires it with its owner; and a claim is conditioned :func:`claimable`: the
value is free when no guard exists *or* the guard's TTL has passed (an expired owner,
not yet deleted by DynamoDB, never blocks its unique values).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.caches import cache
from dynaorm.model.expressions import Condition, F, all_of, not_exists, raw_eq
from dynaorm.model.rows import (
    GUARD_TYPE,
    OWNER_PK,
    OWNER_SK,
    OWNER_TYPE,
    UNIQUE_FIELD,
    VERSION_TTL,
    history_sk,
    parse_version_sk,
    version_sk,
)
from dynaorm.model.spec import EntitySpec, UniqueRule
from dynaorm.model.timestamps import encode_ttl
from dynaorm.write.records import Delete, Fail, Op, Origin, Put, Role

__all__ = ["ActionBuilder", "claimable", "declared", "guard_item", "guard_key", "owned_by",
           "undeclared", "version_row"]


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


def _owner_ttl(spec: EntitySpec, values: Mapping[str, Any] | None) -> int | None:
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


class ActionBuilder:
    """Collects the actions of one staged write: each with its origin, and the unique
    guards that follow a change of the entity's values, owner key or TTL."""

    def __init__(self, spec: EntitySpec, owner: PlainKey, index: int) -> None:
        self.spec = spec
        self.owner = owner
        self.index = index
        self.ops: list[Op] = []

    def origin(self, role: Role, fail: Fail, field: str | None = None,
               value: Any = None) -> Origin:
        """The origin of one of this write's actions."""
        return Origin(self.spec.cls, self.owner, role, fail, field, value, self.index)

    def version(self, key: PlainKey, values: Mapping[str, Any], item: Item, n: int,
                condition: Condition, fail: Fail) -> None:
        """The Put of version ``n``'s row: ``item`` under the version key of ``key``."""
        sk = version_sk(self.spec.base_sk(values) or "", n)
        assert self.spec.table.sk is not None
        self.ops.append(Put({**key, self.spec.table.sk: sk}, version_row(self.spec, item, sk),
                            condition, self.origin(Role.VERSION, fail)))

    def guards(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None,
               old_owner: PlainKey | None, new_owner: PlainKey | None,
               retyped: bool = False) -> None:
        """The guard writes that follow the change from ``old`` values owned at
        ``old_owner`` to ``new`` ones at ``new_owner`` (``retyped``: the owner's type name
        changed, a move from a previous layout in place: every guard kept is rewritten
        to name the new type, or finds and checks would not see it)."""
        spec = self.spec
        # (a guard carries its owner's TTL: a changed TTL rewrites the guards it keeps)
        ttl = _owner_ttl(spec, new)
        same_ttl = spec.ttl_field is None or ttl == _owner_ttl(spec, old)
        moved = old_owner != new_owner or retyped
        for rule in spec.uniques:
            old_key = None if old is None else rule.guard_key(old, spec.name)
            new_key = None if new is None else rule.guard_key(new, spec.name)
            if old_key == new_key and not moved and (same_ttl or new_key is None):
                continue
            value = None if new is None else new.get(rule.field)
            if old_key is not None and old_key == new_key and new_owner is not None:
                assert old_owner is not None
                # (re-pointed; or claimed: an owner stored before its rule, or its
                # normalisation, was declared has no guard there, which is no conflict)
                self._put_guard(rule, new_key, new_owner, value, Fail.CONCURRENT,
                                owned_by(spec, old_owner) | claimable(spec), ttl)
                continue
            if old_key is not None and old_owner is not None:
                old_value = None if old is None else old.get(rule.field)
                # (released if still its owner's; no guard at all is released already)
                self.ops.append(Delete(guard_key(spec, old_key), owned_by(spec, old_owner)
                                       | not_exists(spec.table.pk),
                                       self.origin(Role.GUARD, Fail.CONCURRENT, rule.field,
                                                   old_value)))
            if new_key is not None and new_owner is not None:  # free, or held by an
                self._put_guard(rule, new_key, new_owner, value, Fail.UNIQUE,  # expired
                                claimable(spec), ttl)  # owner

    def _put_guard(self, rule: UniqueRule, key: str, owner: PlainKey, value: Any,
                   fail: Fail, condition: Condition, ttl: int | None) -> None:
        self.ops.append(Put(guard_key(self.spec, key),
                            guard_item(self.spec, rule, key, owner, value, ttl), condition,
                            self.origin(Role.GUARD, fail, rule.field, value)))


def version_row(spec: EntitySpec, item: Item, sk: str) -> Item:
    """A version row: the item under its version key, left out of every secondary index
    (only the latest copy is indexed, or index queries would return every version) except
    one whose keys are the table's own: a table key attribute always stays.

    A version row never carries the table's TTL attribute (history outlives its entity
    until deleted with it: TTL never leaves gaps in it); the TTL value the entity had is
    kept aside under ``VERSION_TTL``, which reads put back (``EntitySpec.decode_fields``)."""
    keys = (spec.table.pk, spec.table.sk)
    indexed = _table_index_attributes(spec)
    row = {k: v for k, v in item.items() if k not in indexed or k in keys}
    ttl = spec.table.ttl
    if ttl is not None and ttl in row:
        row[VERSION_TTL] = row.pop(ttl)
    assert spec.table.sk is not None
    row[spec.table.sk] = {"S": sk}
    if spec.history_index is not None:  # versions of one entity, contiguous in that LSI
        parsed = parse_version_sk(sk)
        assert parsed is not None
        row[spec.history_index[1]] = {"S": history_sk(parsed[1], parsed[0])}
    return row


def _table_index_attributes(spec: EntitySpec) -> frozenset[str]:
    """Every secondary-index key attribute of the table (an undeclared one a newer model
    writes included): version rows stay out of every index."""
    table_wide = {a for idx in spec.table.indexes.values()
                  for a in (getattr(idx, "pk", None), idx.sk) if a}
    # (a field stored under an index's key attribute the entity does not use is a field)
    return spec.index_attributes | frozenset(table_wide - set(spec.stored_fields))


def undeclared(spec: EntitySpec, stored: Item) -> Item:
    """The attributes of a stored item that ``spec`` does not write (a newer model version
    wrote them: rolling deploys): every write that rewrites the item carries them over.
    Not the entity's fields (by stored name), table keys, its own index keys, the
    discriminator, nor the version of a versioned entity or its history key."""
    known = declared(spec)
    if len(stored) <= len(known) and stored.keys() <= known:
        return {}
    return {k: v for k, v in stored.items() if k not in known}


def declared(spec: EntitySpec) -> frozenset[str]:
    """Every attribute a stored item of ``spec`` may hold that the class writes."""
    found = _DECLARED.get(spec.cls)
    if found is None:
        table = spec.table
        names = {*spec.stored_fields, *spec.table_key_attrs, *spec.index_attributes}
        if table.type_attribute is not None:
            names.add(table.type_attribute)
        if spec.versioned:
            names.add("version")
            names.add(VERSION_TTL)  # (a version row's kept TTL: never carried over)
        if spec.history_index is not None:
            names.add(spec.history_index[1])
        found = _DECLARED[spec.cls] = frozenset(names)
    return found


#: the attributes each entity class writes, by class
_DECLARED: dict[type[Any], frozenset[str]] = cache("rows.declared")
