"""The conditions that keep a write from losing another's (pure): that the stored values a
write depends on are still the ones it read (no lost updates), that a versioned entity is
still at the version it was loaded at, and the caller's own ``condition=`` ANDed into the
action on the entity's row; and which attributes an entity class writes, so that every
write that rewrites an item carries over the others (:func:`undeclared`) and a write that
replaces it conditions on them (:func:`as_loaded`). Every kind of write builds its
conditions here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dynaorm._types import Item
from dynaorm.caches import cache
from dynaorm.errors import ConcurrentModificationError
from dynaorm.schema.entity import encode_entity
from dynaorm.schema.rules import Writing
from dynaorm.schema.spec import EntitySpec
from dynaorm.values.codec import encode_value
from dynaorm.values.expressions import (
    Condition,
    all_of,
    exists,
    not_exists,
    raw_eq,
    rename_paths,
    stored_as,
)
from dynaorm.values.records import ConditionCheck, Delete, Fail, Op, Origin, Put, Role, Update
from dynaorm.values.state import InstanceState

__all__ = [
    "WRITING",
    "as_loaded",
    "conditioned",
    "declared",
    "expect_loaded_version",
    "expect_stored_version",
    "unchanged",
    "undeclared",
    "update_condition",
    "with_condition",
]


def unchanged(spec: EntitySpec, old: Mapping[str, Any], attrs: set[str] | frozenset[str],
              stored: Item | None = None) -> list[Condition]:
    """Conditions that the stored values of ``attrs`` are still what ``old`` says."""
    conds: list[Condition] = []
    for name in sorted(attrs):
        attr = spec.attr(name)
        if name in spec.unstored or spec.rules.transforms:
            conds += [] if stored is None or name in spec.unstored else stored_as(stored, {attr})
            continue  # key-only: its key holds it; Encrypted (any rule's transform): the
            # value as stored, read (``stored``: the loaded item)
        value = spec.rules.store(name, old.get(name), spec.name)  # (a TTL's epoch seconds)
        if value is None:
            conds.append(not_exists(attr))
        else:
            conds.append(raw_eq(attr, encode_value(value)))
    return conds


def as_loaded(spec: EntitySpec, stored: Item, leave: set[str] | frozenset[str] = frozenset()
              ) -> list[Condition]:
    """Conditions that the item is still exactly as loaded (``stored``, raw), for a write
    that replaces or removes the whole item (a bulk delete, a key move): every attribute it
    held still holds its value, and every attribute the class writes that it did not hold
    (a field left out while ``None``, a sparse index key) is still absent, so a value
    another writer set after the load is never dropped. ``leave``: attributes the caller
    conditions otherwise. Every dynaorm write stamps the row's revision, so one since the
    load fails this, whatever it wrote. (An attribute a writer outside dynaorm added after
    the load is beyond what a condition can name: see failure-semantics.md.)"""
    own = declared(spec) | {a for a in (spec.table.revision_attribute,) if a}
    absent = own - stored.keys() - leave
    return [*stored_as(stored, set(stored) - leave),
            *(not_exists(a) for a in sorted(absent))]


def update_condition(spec: EntitySpec, state: InstanceState, old_values: Mapping[str, Any],
                     touched: set[str]) -> Condition | None:
    """An update of a loaded item: it exists, the values its guards and index keys are
    built from are as read, and what it writes is still what it read (no lost updates)."""
    unique_fields = spec.unique_fields
    depends = set(unique_fields)
    if spec.indexes:
        for attr in touched:
            depends.update(spec.derived_fields(attr))
    if depends:
        stored = spec.stored_fields
        touched_fields = {stored.get(a, a) for a in touched}
        depends -= touched_fields - unique_fields  # unique values read stay conditioned
    conds = [exists(spec.table.pk)]
    if depends:  # (a plain entity's update depends on none)
        conds += unchanged(spec, old_values, depends, state.item)
    conds += stored_as(state.item, touched - {spec.attr(d) for d in depends}
                       if depends else touched)
    return all_of(conds)


def expect_loaded_version(spec: EntitySpec, obj: Any, state: InstanceState) -> None:
    """A caller's expected version (If-Match) is honoured: ``obj.version`` set to anything
    but the version it was loaded at is :class:`ConcurrentModificationError` (versions only
    grow, so the stored item is no longer the version the caller saw; or the object was
    loaded before the version the caller saw): nothing is sent."""
    if getattr(obj, "_dynaorm_state", None) is None:
        return  # not loaded (a delete by key, read at commit): nothing was expected
    for name, loaded in spec.rules.pin(state.version or 0):  # (a versioned entity's)
        expected = obj.__dict__.get(name)
        if isinstance(expected, int) and not isinstance(expected, bool) and expected != loaded:
            raise ConcurrentModificationError(
                f"{spec.name} {state.key}: expected version {expected} (obj.version, an "
                f"If-Match), but the object was loaded at version {loaded}: the stored item "
                "is not the version expected; reload it", entity=spec.cls, key=state.key,
                item=spec.cls._from_item(state.item, spec))


def expect_stored_version(spec: EntitySpec, obj: Any, stored: InstanceState | None) -> None:
    """An overwrite honours a version the caller set (If-Match: ``obj.version`` other than
    the version the object was loaded at, or any for a new object): the stored item, read
    just before planning (``None``: none), must be at that version, else
    :class:`ConcurrentModificationError` and nothing is sent."""
    own = obj._dynaorm_state
    for name, loaded in spec.rules.pin(0 if own is None else own.version or 0):
        expected = obj.__dict__.get(name)
        if expected == loaded:
            return  # no version set by the caller: last writer wins
        version = 0 if stored is None else stored.version or 0
        if expected != version:
            raise ConcurrentModificationError(
                f"{spec.name} {spec.primary_key(obj.__dict__)}: expected version {expected} "
                f"(obj.version, an If-Match), but version {version} is stored; not "
                "overwritten", entity=spec.cls, key=spec.primary_key(obj.__dict__),
                item=None if stored is None else spec.cls._from_item(stored.item, spec))


def with_condition(ops: list[Op], entry: Any, spec: EntitySpec,
                   index: int) -> list[Op]:
    """AND the caller's ``condition=`` of ``entry`` (a save or a delete of one object) into
    the action on the entity's own row (the first row/latest-copy action: the delete of
    the old row when the key moves). With nothing to write, the condition is still
    checked (a ConditionCheck)."""
    caller = entry.condition
    if caller is None:
        return ops
    caller = rename_paths(caller, spec.renames, spec.kinds)
    for i, op in enumerate(ops):
        o = op.origin
        if o.role in (Role.ROW, Role.LATEST):
            fail = o.fail if op.condition is not None else Fail.CALLER
            origin = o._replace(fail=fail, caller=caller)
            cond = caller if op.condition is None else all_of([op.condition, caller])
            assert cond is not None
            ops[i] = conditioned(op, cond, origin)
            return ops
    state = entry.obj._dynaorm_state
    key = state.key if state is not None else spec.primary_key(entry.obj.__dict__)
    origin = Origin(entity=spec.cls, owner_key=key, role=Role.ROW, fail=Fail.CALLER,
                    staged=index, caller=caller)
    return [*ops, ConditionCheck(key, caller, origin)]


def conditioned(op: Op, cond: Condition, origin: Origin) -> Op:
    """``replace(op, condition=cond, origin=origin)``, built directly (every conditional
    write makes one; ``dataclasses.replace`` introspects the fields each time)."""
    if isinstance(op, Update):
        return Update(op.key, op.set, op.remove, cond, origin, op.clauses, op.known,
                      op.members)
    if isinstance(op, Put):
        return Put(op.key, op.item, cond, origin)
    if isinstance(op, Delete):
        return Delete(op.key, cond, origin)
    return ConditionCheck(op.key, cond, origin)


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
        names.update(name for name, _ in spec.rules.pin(0))  # (a versioned entity's version)
        # (a version row's kept TTL, ...; the revision is carried: each write stamps anew)
        names |= spec.rules.attributes - {table.revision_attribute}
        found = _DECLARED[spec.cls] = frozenset(names)
    return found


#: what a rule that plans a whole write is handed (a previous layout's move)
WRITING = Writing(encode_entity, undeclared)
#: the attributes each entity class writes, by class
_DECLARED: dict[type[Any], frozenset[str]] = cache("records.declared")
