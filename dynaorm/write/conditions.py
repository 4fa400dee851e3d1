"""The conditions of a write that the loaded state does not render itself (pure; that the
stored values a write depends on are still the ones read, and the item's undeclared
attributes: :class:`~dynaorm.values.state.InstanceState`): that a versioned entity is
still at the version it was loaded at, and the caller's own ``condition=`` ANDed into the
action on the entity's row.
"""

from typing import Any

from dynaorm.errors import ConcurrentModificationError
from dynaorm.schema.entity import encode_entity
from dynaorm.schema.rules import Writing
from dynaorm.schema.spec import EntitySpec
from dynaorm.values.expressions import (
    Condition,
    all_of,
    rename_paths,
)
from dynaorm.values.records import ConditionCheck, Delete, Fail, Op, Origin, Put, Role, Update
from dynaorm.values.state import InstanceState


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


#: what a rule that plans a whole write is handed (a previous layout's move)
WRITING = Writing(encode_entity)
