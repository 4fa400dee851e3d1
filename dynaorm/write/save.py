"""``s.save(obj)`` as a staged write (:class:`SaveEntry`): what it reads before planning
where its rules need it, and how it plans (pure, :func:`plan_save`): an insert (the row, a
versioned entity's first version row and latest copy, its unique guards), an update of a
loaded row in place (only what changed, conditioned on what it read), a move of a loaded
row to its new key, a versioned entity's next version, or a move from the previous
layout (planned by that layout, ``spec.rules.before``).

A new versioned entity is planned optimistically as version 1 (its version row and latest
copy conditioned on absence): only when that version row's condition is refused (a
deleted predecessor kept its history) is the history read and the insert planned again
as the next version (:meth:`SaveEntry._rereads`). The common insert reads nothing.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Annotated, Any, NotRequired

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict  # (pydantic takes typing's from Python 3.12)

from dynaorm._types import Item, PlainKey
from dynaorm.caches import cache
from dynaorm.errors import DynaormError, InvalidValueError
from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.schema.lock import locked, moved
from dynaorm.schema.spec import EntitySpec
from dynaorm.values.expressions import Condition, all_of, exists, free
from dynaorm.values.limits import short_repr
from dynaorm.values.merge import Merged
from dynaorm.values.records import Delete, Fail, Op, Origin, Put, Role, Update
from dynaorm.values.state import InstanceState, undeclared
from dynaorm.values.times import stamped
from dynaorm.write.conditions import (
    WRITING,
    expect_loaded_version,
    expect_stored_version,
    with_condition,
)
from dynaorm.write.records import (
    ActionBuilder,
    ObjectWrite,
    Outcome,
    Planned,
    Prepared,
    Reading,
    Reads,
    Written,
    stored_values,
)


def plan_save(entry: SaveEntry, state: InstanceState | None, index: int
              ) -> Planned[Outcome]:
    """The actions of a save planned on ``state`` (``None``: an insert), the caller's
    condition included, and what the object becomes (planned on a row of its entity's
    previous layout, a move: the layout plans it)."""
    spec = type(entry.obj).__dynaorm_spec__  # (staged: its class was checked)
    moved = None if state is None else spec.rules.before.save(spec, entry, state, index,
                                                              WRITING)  # (a move: loaded)
    if moved is not None:
        return moved.ops, Outcome(entry.obj, Written(spec, moved.key, moved.item, moved.values,
                                                     moved.version, moved.encoded),
                                  version=moved.version, stamps=moved.stamps)
    ops, outcome = _plan_save(entry, state, index, spec)
    if entry.mark:
        ops = [_marked(op, entry.mark) for op in ops]
    if entry.condition is None:
        return ops, outcome
    return with_condition(ops, entry, spec, index), outcome


def _marked(op: Op, mark: Item) -> Op:
    """``op`` writing ``mark`` too, if it writes the entity's row, latest copy or version
    row (a copy of the latest copy as written: later ones carry the mark too)."""
    if op.origin.role not in (Role.ROW, Role.LATEST, Role.VERSION):
        return op
    if isinstance(op, Put):
        return dataclasses.replace(op, item={**op.item, **mark})
    return dataclasses.replace(op, set={**op.set, **mark}) if isinstance(op, Update) else op


@dataclass(frozen=True, slots=True)
class SaveEntry(ObjectWrite):
    """``s.save(obj)``: an insert (new object) or an update (persisted object)."""

    obj: Any
    overwrite: bool = False
    condition: Condition | None = None  # the caller's own condition (``condition=``)
    #: a new versioned entity continues the kept history that ends at this version
    #: (``None``: not read, planned as version 1 until its version row is refused)
    after_version: int | None = None
    #: attributes written with the row (or latest copy) when it changes: a job's marker
    mark: Item | None = None

    def _prepare(self, reads: Reads, again: bool) -> Reading[Prepared]:
        """The stored state: the object's own, or, for an overwrite of an entity with
        rules, what is stored now (last writer wins, and its guards are planned from
        what is stored, not from what was loaded); a new versioned entity whose first
        version row was refused (``again``), or one in its migration window, continues
        the history a deleted predecessor kept."""
        obj = self.obj
        spec = type(obj).__dynaorm_spec__  # (staged: its class was checked)
        state = obj._dynaorm_state
        if self.overwrite and (spec.has_rules or spec.lock):  # on what is stored now (an object
            # read from the previous layout: under either layout, as that layout reads it)
            state = yield from spec.rules.before.stored_now(
                spec, state, spec.primary_key(obj.__dict__), reads.kit)
        elif state is not None and spec.primary_key(obj.__dict__) != state.key and (
                not spec.rules.before.stores(spec, state.item)):  # (a move: as it was read)
            state = yield from _with_unknown(spec, state, reads)
        if state is None and self.after_version is None and (again or spec.rules.reads_insert):
            last = yield from reads.for_insert(spec, obj.__dict__)  # (a kept history)
            return dataclasses.replace(self, after_version=last), state
        return self, state

    _plan_ops = plan_save

    def _rereads(self, table: str | None, key: PlainKey | None,
                 state: InstanceState | None) -> bool:
        spec = spec_of(type(self.obj))
        if state is None and key:
            # (the versioned rule's key layout parses its version keys: a plain one, none)
            # the version row it planned is taken: 1 (a kept history: this write's, or
            # another's; every such insert reads its own), or the one after the last it
            # read (another writer kept a version since: read again, continue after it)
            found = spec.rules.sort_keys.parse(str(key.get(spec.table.sk or "", "")))
            if found and found[0] == (self.after_version or 0) + 1:
                return True
        if table not in (None, spec.table.name) or not (self.overwrite and (
                spec.has_rules or spec.lock)):
            return False
        mine = state.key if state is not None else None
        return key is None or key in (mine, spec.primary_key(self.obj.__dict__))


def _with_unknown(spec: Any, state: InstanceState, reads: Reads
                  ) -> Reading[InstanceState]:
    """A key move copies the whole item to its new key: the attributes no class here
    declares that another writer (a newer model) set after the load are read now and
    carried, conditioned like the rest (the declared ones are conditioned on the load)."""
    stored = yield from reads.item(spec.table, state.key)
    if stored is None:
        return state  # (gone: the move's conditioned delete fails and says so)
    loaded = state.item
    new = {k: v for k, v in undeclared(spec, stored).items() if k not in loaded}
    if not new:
        return state
    return InstanceState(state.key, {**loaded, **new}, state.version, None, state.members)


def _plan_save(entry: SaveEntry, state: InstanceState | None, index: int, spec: EntitySpec
               ) -> Planned[Outcome]:
    """The ops of a save: an insert (no stored state), a versioned entity's next version,
    or a loaded row moved to its new key or written in place; stamped with
    ``Meta.timestamps`` when it writes, and followed by its guards."""
    obj = entry.obj
    if entry.overwrite:  # (planned on what is stored now: a versioned entity's If-Match)
        expect_stored_version(spec, obj, state)
    if state is None:
        check_fields(obj, None)
        return _plan_insert(entry, spec, index)
    old_values, old_item = stored_values(spec, state)
    check_fields(obj, old_values)
    following = spec.rules.sort_keys.next(state.version or 0, True)
    if following is not None:  # (its rules number its rows: a versioned entity's next)
        return _plan_next_version(entry, spec, state, old_values, old_item, index, following)
    old_key = state.key
    values = obj.__dict__
    key = spec.primary_key(values)
    encoded = encode_entity(obj, spec, key=key)  # (the next diff's base: Written.encoded)
    merged = state.merged(spec, old_item, encoded, values)
    writes = (spec.timestamps != (None, None) or spec.lock) and (key != old_key or merged.touched)
    # the updated time moves, and another writer's lock from the value loaded
    pairs = (*spec.rules.stamp(obj, False), *moved(spec.lock, state.item)) if writes else ()
    if pairs:
        written = stamped(obj, pairs)
        values = written.__dict__
        encoded = encode_entity(written, spec, key=key)
        merged = state.merged(spec, old_item, encoded, values)
    b = ActionBuilder(spec, old_key, index)
    row: Op | None
    if key != old_key:  # primary key moved: delete the old row, insert the new one
        row = _plan_key_move(b, entry, spec, state, key, merged.item)
    else:
        row = _plan_row_write(entry, spec, state, merged, key, index)
    if row is None:  # (nothing changed)
        return [], Outcome(obj, Written(spec, key, merged.item, values, encoded=encoded))
    b.around(b.rows(old_values, values, old_key, key, merged.item), row)
    return b.ops, Outcome(obj, Written(spec, key, merged.item, values, encoded=encoded),
                          stamps=pairs)



def _plan_insert(entry: SaveEntry, spec: EntitySpec, index: int
                 ) -> Planned[Outcome]:
    """A new object: its row (a versioned entity's next version row and latest copy),
    conditioned on no live item under its key (unless an overwrite of an entity without
    rules), and its guards."""
    obj = entry.obj
    pairs = (*(spec.rules.stamp(obj, True) if spec.rules.stampers else ()),
             *moved(spec.lock, {}))  # (a lock: its first)
    written = stamped(obj, pairs) if pairs else obj  # obj changes on success only
    values = written.__dict__
    version = spec.rules.sort_keys.next(entry.after_version or 0, True)
    key = spec.primary_key(values)
    item = encode_entity(written, spec, version, key)
    b = ActionBuilder(spec, key, index)
    strict = not entry.overwrite
    # (an item whose TTL has passed reads as gone: inserting over it is no conflict)
    cond = free(spec.table.pk, spec.table.ttl) if strict or spec.has_rules else None
    b.around(b.rows(None, values, None, key, item, version),
             Put(key, item, cond, b.origin(spec.rules.own, Fail.EXISTS)))
    if strict:  # (in a migration window: no live row at its old key either)
        b.ops += spec.rules.before.vacant(spec, values, key, b.origin)
    return b.ops, Outcome(obj, Written(spec, key, item, values, version), version=version,
                          stamps=pairs)


def _plan_key_move(b: ActionBuilder, entry: SaveEntry, spec: EntitySpec,
                   state: InstanceState, key: PlainKey, item: Item) -> Put:
    """A loaded object whose primary key changed: delete the old row (as read: its guard
    values, and every attribute unless an overwrite), and the put of the new one where
    nothing is (its origin names the new key, as the rows that follow it do)."""
    # (a rule's references: as read; unless an overwrite, the move copies every
    # attribute: none may have changed, and none the class writes may have appeared)
    keys = {spec.table.pk, spec.table.sk, spec.table.type_attr, *spec.rules.held,
            *(spec.attr(f) for f in spec.unique_fields)}
    # (a lock: every writer moves it, so the whole item needs no condition)
    guard = all_of([exists(spec.table.pk), *state.guards(
        spec, spec.rules.held | locked(spec.lock), leave=None if (
            entry.overwrite or spec.lock) else {k for k in keys if k})])
    b.ops.append(Delete(state.key, guard, b.origin(Role.ROW, Fail.GONE)))
    b.owner = key  # (onto an item whose TTL has passed: gone for reads, as for an insert)
    return Put(key, item, free(spec.table.pk, spec.table.ttl), b.origin(Role.ROW, Fail.EXISTS))


def _plan_row_write(entry: SaveEntry, spec: EntitySpec, state: InstanceState,
                    merged: Merged, key: PlainKey, index: int) -> Op | None:
    """The write of a loaded object kept under its key: a Put (overwrite) or an Update
    of what changed (whole attributes, and members of stored maps by path: ``merged``),
    conditioned on what was read (an overwrite: only its guards' values) with the
    caller's condition ANDed in; ``None`` when nothing changed."""
    to_set, to_remove, item, members = merged.set, merged.remove, merged.item, merged.members
    if spec.unstored and (to_set or to_remove or members):
        # (key-only or excluded fields' attributes the stored item still holds, written
        # before the field became key-only: the update removes them)
        to_remove = [*to_remove, *(a for n in sorted(spec.unstored)
                                   if (a := spec.attr(n)) in state.item and a not in item)]
    touched = to_set.keys() | to_remove
    for path, _ in members:
        touched.add(path[0])
    if not touched:
        return None
    if entry.overwrite:  # last writer wins: only the guards' stored values are kept
        # exact (read by the commit just before planning; a rule's references, a lock: as
        # read, so that the lock moves from the value stored)
        after = spec.rules.held | locked(spec.lock)
        cond = all_of([exists(spec.table.pk), *state.guards(
            spec, after)]) if spec.unique_fields or after else None
    else:
        cond = state.update_guard(spec, touched)
    # (an unconditioned overwrite fails only on the caller's condition, if any: plan_save
    # ANDs it in)
    origin = Origin(spec.cls, state.key, Role.ROW, Fail.GONE if cond is not None else
                    Fail.CALLER, staged=index)
    if entry.overwrite:
        return Put(key, item, cond, origin)
    return Update(key, to_set, tuple(sorted(to_remove)), cond, origin, (), state.item,
                  tuple(members))


def _plan_next_version(entry: SaveEntry, spec: EntitySpec, state: InstanceState,
                       old_values: Mapping[str, Any], old_item: Item,
                       index: int, following: int) -> Planned[Outcome]:
    """A loaded versioned entity: the next version row (``following``, where nothing is)
    and the latest copy replaced on the condition that it is still at the version and the
    revision read (deleted with its history and re-inserted, it is at version 1 again:
    another row)."""
    obj = entry.obj
    n = state.version or 0
    if not entry.overwrite:  # (an overwrite replaces whatever version is stored)
        expect_loaded_version(spec, obj, state)
    key = spec.primary_key(obj.__dict__)
    if key != state.key:
        raise DynaormError(f"{spec.name}: the key of a versioned entity cannot change "
                           f"({state.key} -> {key}); delete it and save a new one")
    extra = undeclared(spec, state.item)  # (as stored, in both)
    new, was = {**encode_entity(obj, spec, n), **extra}, {**old_item, **extra}
    opaque = {*spec.encrypted, *spec.rules.held}  # (values compared: not their ciphertexts,
    if opaque:  # sealed anew by each encoding, nor the references to where they are kept)
        new, was = ({a: v for a, v in i.items() if a not in opaque} for i in (new, was))
        if any(getattr(obj, f) != old_values.get(f) for f in spec.field_names
               if spec.attr(f) in opaque):
            was = {}  # (a value changed)
    if new == was:
        return [], Outcome(obj, state, version=n)
    pairs = (*spec.rules.stamp(obj, False), *moved(spec.lock, state.item))
    written = stamped(obj, pairs)
    values = written.__dict__
    encoded = encode_entity(written, spec, following)
    item = state.merged(spec, old_item, encoded, values).item  # (untouched: as stored)
    b = ActionBuilder(spec, key, index)
    revision = {a for a in (spec.table.revision_attribute,) if a}
    # unless an overwrite, the put replaces every attribute: none may have changed since
    # the load (another tool's write moves no version and no revision)
    leave = {spec.table.pk, spec.table.sk, *revision, *(a for a, _ in spec.rules.pin(n)),
             *(spec.attr(f) for f in spec.unique_fields)}
    cond = all_of([*spec.rules.pinned(n), *state.guards(
        spec, revision | locked(spec.lock), leave=None if (
            entry.overwrite or spec.lock) else {a for a in leave if a})])
    b.around(b.rows(old_values, values, key, key, item, following),
             Put(key, item, cond, b.origin(Role.LATEST, Fail.GONE)))
    return b.ops, Outcome(obj, Written(spec, key, item, values, following, encoded),
                          version=following, stamps=pairs)


#: per entity class: the validator of :func:`check_fields`, and the fields that hold models
_CHECKS: dict[type[Any], tuple[TypeAdapter[Any], frozenset[str]]] = cache("save.checks")


def check_fields(obj: Any, before: Mapping[str, Any] | None) -> None:
    """What ``save`` checks before sending: every field value of ``obj`` that differs
    from ``before`` (the values it was loaded or last written with; ``None``: a new
    object, every field) as its field's type and constraints take it (an assignment,
    or a list changed in place, is not validated by pydantic), and every field holding
    models, as their dumped values (a nested model changed in place, in a list or a dict
    too, is not either)."""
    cls = type(obj)
    if cls not in _CHECKS:  # every field's type and constraints, each optional
        _CHECKS[cls] = TypeAdapter(TypedDict(  # type: ignore[operator]
            f"{cls.__name__}Fields", {n: NotRequired[Annotated[(i.annotation, *i.metadata)]
                                                     if i.metadata else i.annotation]
                                      for n, i in cls.model_fields.items()})), frozenset(
            n for n, t in spec_of(cls).trees.items() if t.holds_models)
    check, models = _CHECKS[cls]
    data = obj.__dict__ if before is None else {
        n: v for n, v in obj.__dict__.items() if n in models or n not in before
        or before[n] != v}
    if models:  # (a model changed in place is the same object: validated as dumped)
        data = {**data, **check.dump_python({n: data[n] for n in models & data.keys()},
                                            by_alias=False, round_trip=True, warnings=False)}
    try:
        check.validate_python(data, by_name=True)  # (a dump by alias or by name)
    except ValidationError as exc:
        error = exc.errors()[0]
        name = error["loc"][0]
        shown = spec_of(cls).rules.redact(str(name), error["input"])
        raise InvalidValueError(
            f"{cls.__name__} field {name!r}: {short_repr(shown)} breaks its rules "
            f"({error['msg']})") from (exc if shown is error["input"] else None)
