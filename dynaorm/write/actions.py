"""The actions one entity's write consists of besides its row: unique guard items and
version rows.

Pure. The planner (:mod:`dynaorm.write.planner`) and the layout moves
(:mod:`dynaorm.write.moves`) both build their plans from these, so a guard or a version
row is written the same way whatever the write that needs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.caches import cache
from dynaorm.model.expressions import not_exists
from dynaorm.model.rows import VERSION_TTL, history_sk, parse_version_sk
from dynaorm.model.spec import EntitySpec
from dynaorm.write.guards import claimable, guard_key, guard_put, owned_by, owner_ttl
from dynaorm.write.records import Delete, Fail, Op, Origin, Role

__all__ = ["ActionBuilder", "declared", "undeclared", "version_row"]


class ActionBuilder:
    """Collects the actions of one staged entry: each with its origin, and the unique
    guards that follow a change of the entity's values, owner key or TTL."""

    def __init__(self, spec: EntitySpec, owner: PlainKey, index: int) -> None:
        self.spec = spec
        self.owner = owner
        self.index = index
        self.ops: list[Op] = []

    def origin(self, role: Role, fail: Fail, field: str | None = None,
               value: Any = None) -> Origin:
        """The origin of one of this entry's actions."""
        return Origin(entity=self.spec.cls, owner_key=self.owner, role=role, fail=fail,
                      field=field, value=value, staged=self.index)

    def guards(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None,
               old_owner: PlainKey | None, new_owner: PlainKey | None,
               retyped: bool = False) -> None:
        """The guard writes that follow the change from ``old`` values owned at
        ``old_owner`` to ``new`` ones at ``new_owner`` (``retyped``: the owner's type name
        changed, a move from a previous layout in place: every guard kept is rewritten
        to name the new type, or finds and checks would not see it)."""
        spec = self.spec
        # (a guard carries its owner's TTL: a changed TTL rewrites the guards it keeps)
        ttl = owner_ttl(spec, new)
        same_ttl = spec.ttl_field is None or ttl == owner_ttl(spec, old)
        for rule in spec.uniques:
            old_key = None if old is None else rule.guard_key(old, spec.name)
            new_key = None if new is None else rule.guard_key(new, spec.name)
            moved = old_owner != new_owner or retyped
            if old_key == new_key and not moved and (same_ttl or new_key is None):
                continue
            value = None if new is None else new.get(rule.field)
            if old_key is not None and old_key == new_key and new_owner is not None:
                assert old_owner is not None
                # (re-pointed; or claimed: an owner stored before its rule, or its
                # normalisation, was declared has no guard there, which is no conflict)
                self.ops.append(guard_put(
                    spec, rule, new_key, new_owner, value,
                    owned_by(spec, old_owner) | claimable(spec),
                    self.origin(Role.GUARD, Fail.CONCURRENT, rule.field, value), ttl))
                continue
            if old_key is not None and old_owner is not None:
                old_value = None if old is None else old.get(rule.field)
                # (released if still its owner's; no guard at all is released already)
                self.ops.append(Delete(guard_key(spec, old_key), owned_by(spec, old_owner)
                                       | not_exists(spec.table.pk),
                                       self.origin(Role.GUARD, Fail.CONCURRENT, rule.field,
                                                   old_value)))
            if new_key is not None and new_owner is not None:
                self.ops.append(guard_put(  # free, or held by an expired owner
                    spec, rule, new_key, new_owner, value, claimable(spec),
                    self.origin(Role.GUARD, Fail.UNIQUE, rule.field, value), ttl))


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
_DECLARED: dict[type[Any], frozenset[str]] = cache("actions.declared")
