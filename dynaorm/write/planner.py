"""Deciding what to write: staged saves and deletes -> a :class:`~dynaorm.write.render.WritePlan`.

Pure: no I/O. Given each staged object and the stored state it is known to have (from the
object itself, or read by the session before planning), this module emits the row write,
the unique guard items and the version rows, each with the condition that makes the whole
transaction fail rather than leave the table inconsistent.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from dynaorm._types import Item, PlainKey
from dynaorm.errors import ConcurrentModificationError, DynaormError, UniqueConstraintError
from dynaorm.model.entity import encode_entity, spec_of
from dynaorm.model.expressions import (
    Condition,
    F,
    all_of,
    exists,
    not_exists,
    raw_eq,
    rename_paths,
)
from dynaorm.model.layouts import MovedState
from dynaorm.model.rows import version_sk
from dynaorm.model.spec import EntitySpec
from dynaorm.model.state import InstanceState, changed_attributes
from dynaorm.model.timestamps import stamped, stamps
from dynaorm.write.actions import ActionBuilder, undeclared, version_row
from dynaorm.write.committed import Written, stored_values
from dynaorm.write.conditions import as_loaded, stored_as, unchanged, with_condition
from dynaorm.write.guards import claimable
from dynaorm.write.moves import plan_move_delete, plan_move_save
from dynaorm.write.records import ConditionCheck, Delete, Fail, Op, Origin, Put, Role, Update
from dynaorm.write.render import WritePlan
from dynaorm.write.staged import Outcome, Prepared

if TYPE_CHECKING:
    from dynaorm.write.entries import DeleteEntry, SaveEntry

__all__ = ["compile_commit", "plan_delete", "plan_save"]


def _with(item: Item, extra: Item) -> Item:
    """``item`` plus the undeclared attributes ``extra`` (the item itself when none)."""
    return {**extra, **item} if extra else item


def plan_save(entry: SaveEntry, state: InstanceState | None, index: int
              ) -> tuple[list[Op], Outcome]:
    if isinstance(state, MovedState):  # read from Meta.previous's layout: move it (the
        return plan_move_save(entry, state, index)  # caller's condition in its old names)
    ops, outcome = _plan_save(entry, state, index)
    if entry.condition is None or (ops and ops[0].origin.caller is not None):
        return ops, outcome  # (an update of the row itself carries it already)
    return with_condition(ops, entry, spec_of(type(entry.obj)), index), outcome


def _plan_insert(entry: SaveEntry, spec: EntitySpec, index: int
                 ) -> tuple[list[Op], Outcome]:
    """A new object: its row (a versioned entity's first version row and latest copy),
    conditioned on no live item under its key (unless an overwrite of an entity without
    rules), and its guards."""
    obj = entry.obj
    pairs = stamps(obj, spec, insert=True)
    written = stamped(obj, pairs)  # the object as written; obj changes on success only
    values = written.__dict__
    version = entry.after_version + 1 if spec.versioned else None
    key = spec.primary_key(values)
    item = encode_entity(written, spec, version, key)
    b = ActionBuilder(spec, key, index)
    strict = not entry.overwrite
    # (an item whose TTL has passed reads as gone: inserting over it is no conflict)
    cond = claimable(spec) if strict or spec.has_rules else None
    if spec.versioned:
        assert spec.table.sk is not None
        first = {**key, spec.table.sk: version_sk(spec.base_sk(values) or "", version)}
        b.ops.append(Put(first, version_row(spec, item, first[spec.table.sk]), cond,
                         b.origin(Role.VERSION, Fail.EXISTS)))
        b.ops.append(Put(key, item, cond, b.origin(Role.LATEST, Fail.EXISTS)))
    else:
        b.ops.append(Put(key, item, cond, b.origin(Role.ROW, Fail.EXISTS)))
    b.guards(None, values, None, key)
    if spec.previous is not None and strict:
        _no_old_row(b, spec, values, key)
    written_state = Written(spec, key, item, values, version)
    return b.ops, Outcome(obj, written_state, version=version, stamps=pairs)


def _no_old_row(b: ActionBuilder, spec: EntitySpec, values: Mapping[str, Any],
                key: PlainKey) -> None:
    """A new object of an entity in its migration window (``Meta.previous``): no live
    entity may be stored at its old key either (it would be the same entity twice, its
    old row and guards left behind for good); the insert fails with ItemExistsError as
    on its current key."""
    layout = spec.previous
    assert layout is not None
    old_key = layout.key(values, spec.name)
    if old_key == key:  # (a move in place: the insert's own condition covers it)
        return
    free = claimable(spec)
    type_attr = spec.table.type_attribute
    if type_attr is not None:  # (another entity's item at that key is no conflict)
        free = free | (F(type_attr) != layout.type_name)
    b.ops.append(ConditionCheck(old_key, free, b.origin(Role.ROW, Fail.EXISTS)))


def _plan_key_move(b: ActionBuilder, entry: SaveEntry, spec: EntitySpec,
                   state: InstanceState, old_values: Mapping[str, Any], key: PlainKey,
                   item: Item) -> None:
    """A loaded object whose primary key changed: delete the old row (as read: its guard
    values, and every attribute unless an overwrite) and put the new one where nothing
    is."""
    unique_fields = spec.unique_fields
    guard = [exists(spec.table.pk), *unchanged(spec, old_values, unique_fields)]
    if not entry.overwrite:  # the move copies every attribute: none may have changed,
        # and none the class writes may have appeared (a value set after the load)
        keys = {spec.table.pk, spec.table.sk, spec.table.type_attr}
        guard += as_loaded(spec, state.item, {k for k in keys if k} | {
            spec.attr(f) for f in unique_fields})
    b.ops.append(Delete(state.key, all_of(guard), b.origin(Role.ROW, Fail.GONE)))
    b.owner = key
    b.ops.append(Put(key, item, not_exists(spec.table.pk), b.origin(Role.ROW, Fail.EXISTS)))


def _row_condition(entry: SaveEntry, spec: EntitySpec, state: InstanceState,
                   old_values: Mapping[str, Any], touched: set[str]
                   ) -> tuple[Condition | None, Fail, Condition | None]:
    """``(condition, fail, caller)`` of an in-place write of a loaded row that changes
    the attributes ``touched``: what was read is still there (an overwrite: only its
    guards' values), with the caller's condition ANDed in (``caller``: in stored names)."""
    unique_fields = spec.unique_fields
    if entry.overwrite:  # last writer wins: only the guards' stored values are kept
        # exact (read by the commit just before planning)
        cond = all_of([exists(spec.table.pk), *unchanged(
            spec, old_values, unique_fields)]) if unique_fields else None
    else:
        cond = _update_condition(spec, state, old_values, touched)
    caller = entry.condition
    # (an unconditioned overwrite fails only on the caller's condition, if any)
    fail = Fail.GONE if cond is not None else Fail.CALLER
    if caller is not None:
        # ANDed in here as with_condition does (this is the first row action):
        # the action is not built twice (see plan_save)
        caller = rename_paths(caller, spec.renames)
        cond = caller if cond is None else all_of([cond, caller])
    return cond, fail, caller


def _plan_row_write(entry: SaveEntry, spec: EntitySpec, state: InstanceState,
                    old_values: Mapping[str, Any], old_item: Item, key: PlainKey,
                    item: Item, index: int) -> Op | None:
    """The write of a loaded object kept under its key: a Put (overwrite) or an Update
    of the changed attributes, conditioned by :func:`_row_condition`; ``None`` when
    nothing changed."""
    to_set, to_remove = changed_attributes(old_item, item)
    if spec.unstored and (to_set or to_remove):
        to_remove = [*to_remove, *_unstored_left(spec, state.item, item)]
    touched = to_set.keys() | to_remove
    if not touched:
        return None
    cond, fail, caller = _row_condition(entry, spec, state, old_values, touched)
    origin = Origin(entity=spec.cls, owner_key=state.key, role=Role.ROW, fail=fail,
                    staged=index, caller=caller)
    if entry.overwrite:
        return Put(key, item, cond, origin)
    return Update(key, to_set, tuple(sorted(to_remove)), cond, origin, (), state.item)


def _plan_save(entry: SaveEntry, state: InstanceState | None, index: int
               ) -> tuple[list[Op], Outcome]:
    """The ops of a save: an insert (no stored state), a versioned entity's next version,
    or a loaded row moved to its new key or written in place; stamped with
    ``Meta.timestamps`` when it writes, and followed by its guards."""
    obj, spec = entry.obj, spec_of(type(entry.obj))
    values = obj.__dict__
    if state is None:  # insert
        return _plan_insert(entry, spec, index)

    old_values, old_item = stored_values(spec, state)
    extra = undeclared(spec, state.item)  # (a newer model's attributes: kept)
    old_key = state.key
    if spec.versioned:
        return _plan_versioned_update(entry, spec, state, old_values, old_item, index, extra)
    old_item = _with(old_item, extra)
    key = spec.primary_key(values)
    item = _with(encode_entity(obj, spec, key=key), extra)
    writes = spec.timestamps != (None, None) and (key != old_key or any(changed_attributes(
        old_item, item)))
    pairs = stamps(obj, spec, insert=False) if writes else ()  # the updated time moves
    if pairs:
        written = stamped(obj, pairs)
        values = written.__dict__
        item = _with(encode_entity(written, spec, key=key), extra)
    b = ActionBuilder(spec, old_key, index)
    if key != old_key:  # primary key moved: delete the old row, insert the new one
        _plan_key_move(b, entry, spec, state, old_values, key, item)
    else:
        row = _plan_row_write(entry, spec, state, old_values, old_item, key, item, index)
        if row is None:
            return [], Outcome(obj, Written(spec, key, item, values))
        b.ops.append(row)
    b.guards(old_values, values, old_key, key)
    return b.ops, Outcome(obj, Written(spec, key, item, values), stamps=pairs)


def _unstored_left(spec: EntitySpec, stored: Item, item: Item) -> list[str]:
    """Attributes of key-only (or excluded) fields that a stored item still holds (written
    before the field became key-only): an update of the item removes them."""
    return [a for n in sorted(spec.unstored) if (a := spec.attr(n)) in stored
            and a not in item]


def _update_condition(spec: EntitySpec, state: InstanceState, old_values: Mapping[str, Any],
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
        conds += unchanged(spec, old_values, depends)
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
    expected = obj.__dict__.get("version")
    loaded = state.version or 0
    if isinstance(expected, int) and not isinstance(expected, bool) and expected != loaded:
        raise ConcurrentModificationError(
            f"{spec.name} {state.key}: expected version {expected} (obj.version, an "
            f"If-Match), but the object was loaded at version {loaded}: the stored item is "
            "not the version expected; reload it", entity=spec.cls, key=state.key,
            item=spec.cls._from_item(state.item, spec))


def _plan_versioned_update(entry: SaveEntry, spec: EntitySpec, state: InstanceState,
                           old_values: Mapping[str, Any], old_item: Item,
                           index: int, extra: Item) -> tuple[list[Op], Outcome]:
    obj = entry.obj
    values = obj.__dict__
    n = state.version or 0
    if not entry.overwrite:  # (an overwrite replaces whatever version is stored)
        expect_loaded_version(spec, obj, state)
    key = spec.primary_key(values)
    if key != state.key:
        raise DynaormError(f"{spec.name}: the key of a versioned entity cannot change "
                           f"({state.key} -> {key}); delete it and save a new one")
    if _with(encode_entity(obj, spec, n), extra) == _with(old_item, extra):
        return [], Outcome(obj, state, version=n)
    pairs = stamps(obj, spec, insert=False)
    written = stamped(obj, pairs)
    values = written.__dict__
    item = _with(encode_entity(written, spec, n + 1), extra)
    assert spec.table.sk is not None
    b = ActionBuilder(spec, key, index)
    row_sk = version_sk(spec.base_sk(values) or "", n + 1)
    b.ops.append(Put({**key, spec.table.sk: row_sk}, version_row(spec, item, row_sk),
                     not_exists(spec.table.pk), b.origin(Role.VERSION, Fail.CONCURRENT)))
    cond = all_of([raw_eq("version", {"N": str(n)}),
                   *unchanged(spec, old_values, spec.unique_fields)])
    b.ops.append(Put(key, item, cond, b.origin(Role.LATEST, Fail.GONE)))
    b.guards(old_values, values, key, key)
    return b.ops, Outcome(obj, Written(spec, key, item, values, n + 1), version=n + 1,
                          stamps=pairs)


def plan_delete(entry: DeleteEntry, state: InstanceState | None, index: int
                ) -> tuple[list[Op], Outcome]:
    if isinstance(state, MovedState):  # read from Meta.previous's layout (the caller's
        return plan_move_delete(entry, state, index)  # condition in its old names)
    ops, outcome = _plan_delete(entry, state, index)
    return with_condition(ops, entry, spec_of(type(entry.obj)), index), outcome


def _plan_delete(entry: DeleteEntry, state: InstanceState | None, index: int
                 ) -> tuple[list[Op], Outcome]:
    obj, spec = entry.obj, spec_of(type(entry.obj))
    if state is None:  # a plain entity never loaded: delete by key, it must exist
        key = spec.primary_key(obj.__dict__)
        b = ActionBuilder(spec, key, index)
        b.ops.append(Delete(key, exists(spec.table.pk), b.origin(Role.ROW, Fail.MISSING)))
        return b.ops, Outcome(obj, None)
    old_values = type(obj).model_validate(spec.decode_fields(state.item)).__dict__
    b = ActionBuilder(spec, state.key, index)
    conds = [exists(spec.table.pk), *unchanged(spec, old_values, spec.unique_fields)]
    if spec.versioned:
        expect_loaded_version(spec, obj, state)
        conds.append(raw_eq("version", {"N": str(state.version or 0)}))
    b.ops.append(Delete(state.key, all_of(conds),
                        b.origin(Role.LATEST if spec.versioned else Role.ROW, Fail.GONE)))
    b.guards(old_values, None, state.key, None)
    if spec.versioned and entry.history:
        assert spec.table.sk is not None
        base = spec.base_sk(old_values) or ""
        for n in range(1, (state.version or 0) + 1):
            b.ops.append(Delete({**state.key, spec.table.sk: version_sk(base, n)}, None,
                                b.origin(Role.VERSION, Fail.GONE)))
    return b.ops, Outcome(obj, None)


def _item_id(key: PlainKey) -> tuple[Any, ...]:
    """A hashable identity of the item at ``key``, whatever its attributes' order (a
    table's two-attribute key, the common one, without sorting)."""
    if len(key) == 2:
        (a, x), (b, y) = key.items()
        return (a, x, b, y) if a < b else (b, y, a, x)
    return tuple(sorted(key.items()))


def compile_commit(entries: Sequence[Prepared]) -> tuple[WritePlan, list[Outcome]]:
    """Plan a whole commit (each staged write with the state it is planned on, in staging
    order; the tables are its entities'). Raises before anything is sent when the plan is
    impossible.

    Outcomes are one per write that settles an object (an ``s.update()`` or ``s.check()``
    has one only when it produces an object)."""
    ops: list[Op] = []
    outcomes: list[Outcome] = []
    at: dict[tuple[Any, ...], int] = {}
    for index, (entry, state) in enumerate(entries):
        entry_ops, outcome = entry._plan_ops(state, index)
        if outcome is not None:
            outcomes.append(outcome)
        for op in entry_ops:
            if not ops:  # the first action: nothing to merge with (identified lazily)
                ops.append(op)
                continue
            if not at:
                at[_op_id(ops[0])] = 0
            ident = _op_id(op)
            prev = at.get(ident)
            if prev is None:
                at[ident] = len(ops)
                ops.append(op)
                continue
            ops[prev] = _merge(ops[prev], op)
    return WritePlan(tuple(ops)), outcomes


def _op_id(op: Op) -> tuple[Any, ...]:
    """The identity of the item an action writes: its table and key."""
    return op.origin.table.name, _item_id(op.key)


def _merge(first: Op, second: Op) -> Op:
    """Two actions on one item in one commit: fold them into one, or refuse."""
    release, claim = (first, second) if isinstance(first, Delete) else (second, first)
    if isinstance(release, Delete) and isinstance(claim, Put):
        # one object releases the item (a delete, a key move, a changed unique value) and
        # another claims it, in either staging order: one Put, conditioned like the release
        return Put(claim.key, claim.item, release.condition, release.origin)
    if isinstance(first, Put) and isinstance(second, Put) and (
            first.origin.role is Role.GUARD and second.origin.role is Role.GUARD):
        o = second.origin
        raise UniqueConstraintError(o.entity, [(o.field or "?", o.value)], key=o.owner_key)
    raise DynaormError(
        f"commit writes item {first.key} twice ({first.origin.entity.__name__} "
        f"{first.origin.role.value} and {second.origin.entity.__name__} "
        f"{second.origin.role.value}); stage one object per item")
