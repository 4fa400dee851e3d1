"""Moving an entity from its previous layout (``Meta.previous``) to its current one.

Pure: no I/O. An object read from the old layout carries a
:class:`~dynaorm.values.state.MovedState` (the old row as stored, and a versioned
entity's old version rows). Saving it plans a *move*, in one transaction: the old row is
deleted on the condition that it is still exactly as read, the current row is put on the
condition that nothing is there yet, each unique guard is re-pointed at the new key (on
the condition that it still names the old one), and a versioned entity's version rows are
deleted under the old key and put under the new one. Deleting it deletes the old row (and
its guards, and its history when asked). Both the session's writes and ``dynaorm migrate``
plan moves here: there is one move.
"""

from __future__ import annotations

from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.errors import TransactionTooLargeError
from dynaorm.schema.described import described
from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.schema.spec import EntitySpec
from dynaorm.values.expressions import Condition, all_of, exists, free, not_exists, rename_paths
from dynaorm.values.keys import key_value
from dynaorm.values.records import ConditionCheck, Delete, Fail, Op, Put, Role
from dynaorm.values.state import MovedState
from dynaorm.values.times import stamped
from dynaorm.write.conditions import pinned, stored_as, undeclared
from dynaorm.write.records import ActionBuilder, Outcome, Planned, Written

__all__ = ["HISTORY_BATCH", "MAX_MOVE_ACTIONS", "history_batches", "kept",
           "kept_row_move", "move_actions", "needs_history_batches",
           "plan_move_delete", "plan_move_save"]

#: DynamoDB's limit of actions in one transaction: a move must fit in it
MAX_MOVE_ACTIONS = 100
#: version rows one history batch moves (two actions each, and one check)
HISTORY_BATCH = 24


def _layout(spec: EntitySpec) -> Any:
    return spec.rules.before  # (the previous layout: a stand-in never moves)


def kept(spec: EntitySpec, item: Item) -> Item:
    """The attributes of an old-layout row that neither layout declares (written by a
    newer model, or by another tool): a move carries them to the new row, as every write
    of an item keeps them (:func:`~dynaorm.write.conditions.undeclared`). Not the old fields
    by their old names either, nor any index key of the table (rendered anew)."""
    table = spec.table
    old = _layout(spec).fields_by_attr
    index_keys = {a for name in table.indexes if table.native(name) is None
                  for a in table.key_attributes(name)}
    return {k: v for k, v in undeclared(spec, item).items()
            if k not in old and k not in index_keys}


def move_actions(spec: EntitySpec, versions: int) -> int:
    """The actions a move of an entity with ``versions`` version rows takes, at most
    (row delete and put, two per version row, and the rows its rules add to a move: a
    re-pointed guard per unique rule, a new version row)."""
    rows = spec.rules.rows(described(spec, "move"))
    return 2 + 2 * versions + len(rows.before) + len(rows.after)


def needs_history_batches(spec: EntitySpec, state: MovedState) -> bool:
    """Whether moving the object of ``state`` in one transaction exceeds the limit."""
    return move_actions(spec, len(state.history)) > MAX_MOVE_ACTIONS


def history_batches(spec: EntitySpec, state: MovedState) -> list[list[Op]]:
    """The old version rows of ``state`` moved ahead of the entity, :data:`HISTORY_BATCH`
    rows per transaction: each put under the new key if absent and deleted under the old
    one if present, with a check that the old latest copy is still at the version read (a writer
    that moved or changed the entity meanwhile fails the batch). Version rows never change
    once written, so a history moved in several transactions is the history read."""
    check = all_of([exists(spec.table.pk), *pinned(spec, state.version or 0)])
    assert check is not None
    rows = _history_rows(spec, state)
    out: list[list[Op]] = []
    for at in range(0, len(rows), HISTORY_BATCH):
        b = ActionBuilder(spec, state.key, 0)
        b.ops.append(ConditionCheck(state.key, check, b.origin(Role.LATEST, Fail.GONE)))
        _row_moves(b, rows[at:at + HISTORY_BATCH])
        out.append(b.ops)
    return out


def kept_row_move(spec: EntitySpec, row: Item) -> list[Op]:
    """Move one old version row whose entity is gone (history kept by a delete without
    ``history=True``) to the current layout, in one transaction: put under its current
    key if absent, deleted under its old one if present, on the condition that its old
    latest copy is still absent (an entity stored there again moves its history itself).
    """
    assert spec.table.sk is not None
    keys = spec.rules.sort_keys
    parsed = keys.parse(key_value(row[spec.table.sk]))
    assert parsed is not None
    latest = spec.stored_key(row)
    latest[spec.table.sk] = keys.key(parsed[1], 0)
    b = ActionBuilder(spec, latest, 0)
    b.ops.append(ConditionCheck(latest, not_exists(spec.table.pk),
                                b.origin(Role.LATEST, Fail.EXISTS)))
    _row_moves(b, _history_rows(spec, MovedState(latest, {}, None, (row,))))
    return b.ops


def _row_moves(b: ActionBuilder, rows: list[tuple[int, PlainKey, Item]],
               in_place: bool = True) -> None:
    """Each version row put under its current key if absent and deleted under its old
    one if present (``in_place``: a row whose key did not change, only its type or stored
    names, is put where it is)."""
    pk = b.spec.table.pk
    for _, old_key, row in rows:
        new_key = {a: row[a]["S"] for a in b.spec.table_key_attrs}
        if in_place and new_key == old_key:
            b.ops.append(Put(new_key, row, exists(pk), b.origin(Role.VERSION, Fail.GONE)))
            continue
        b.ops.append(Delete(old_key, exists(pk), b.origin(Role.VERSION, Fail.GONE)))
        b.ops.append(Put(new_key, row, not_exists(pk), b.origin(Role.VERSION, Fail.EXISTS)))


def _row_delete(b: ActionBuilder, state: MovedState, caller: Condition | None,
                loose: bool) -> Delete:
    """The delete of the old row: conditioned on it being exactly as read (``loose``: not
    at all, an overwrite), and on the caller's own ``condition=``. The caller writes that
    condition in field names, which mean the same on either layout: on the old row it is
    judged through the old stored names (``Previous.stored_names``), so it guards the row
    the move replaces, and a failure is a ``ConditionFailedError`` as on any row."""
    spec = b.spec
    own = None
    if not loose:  # every attribute but its key as read
        own = all_of([exists(spec.table.pk), *stored_as(
            state.item, set(state.item) - set(spec.table_key_attrs)),
            *pinned(spec, state.version or 0)])
    origin = b.origin(spec.rules.own, Fail.GONE)
    if caller is not None:
        caller = rename_paths(caller, _layout(spec).renames)  # (its old stored names)
        origin = origin._replace(fail=Fail.GONE if own is not None else Fail.CALLER,
                                 caller=caller)
        own = caller if own is None else all_of([own, caller])
    return Delete(state.key, own, origin)


def _history_rows(spec: EntitySpec, state: MovedState
                  ) -> list[tuple[int, PlainKey, Item]]:
    """Each old version row: (version, old key, the row under the current layout)."""
    out, keys = [], spec.rules.sort_keys
    for row in state.history:
        assert spec.table.sk is not None
        parsed = keys.parse(key_value(row[spec.table.sk]))
        if parsed is None or parsed[0] == 0:
            continue
        n = parsed[0]
        obj = _layout(spec).validate(spec, row)
        values = {**obj.__dict__, "version": n}
        new = encode_entity(obj, spec, n)
        key = spec.primary_key(values, n)
        out.append((n, spec.stored_key(row),
                    {**kept(spec, row), **keys.row(spec, new, key[spec.table.sk])}))
    return sorted(out, key=lambda t: t[0])


def plan_move_save(entry: Any, state: MovedState, index: int
                   ) -> Planned[Outcome]:
    """Save an object read from the previous layout: move it (see the module)."""
    obj = entry.obj
    spec = spec_of(type(obj))
    old_key = state.key
    needed = move_actions(spec, len(state.history))
    if needed > MAX_MOVE_ACTIONS:
        raise TransactionTooLargeError(
            f"{spec.name} {old_key}: moving it to its current layout with its "
            f"{len(state.history)} version rows takes {needed} actions, more than the "
            f"{MAX_MOVE_ACTIONS} one transaction holds: run `dynaorm migrate`, which moves "
            "a long history in conditioned batches first and then the entity")
    loaded = spec.cls.model_validate(_layout(spec).values(spec, state.item)).__dict__
    changed = any(obj.__dict__.get(f) != loaded.get(f) for f in spec.field_names
                  if f != "version")
    pairs = spec.rules.stamp(obj, False) if changed else ()
    written_obj = stamped(obj, pairs)
    values = written_obj.__dict__
    b = ActionBuilder(spec, old_key, index)
    version = spec.rules.sort_keys.next(state.version or 0, changed)
    _row_moves(b, _history_rows(spec, state), in_place=False)  # (its old version rows)
    key = spec.primary_key(values)
    item = {**kept(spec, state.item), **encode_entity(written_obj, spec, version, key)}
    # an overwrite of an entity without rules is last writer wins: the old row goes and the
    # new one is put whatever either holds now (with rules, the commit has just read what
    # is stored, under either layout, and the move is planned on that: see the module)
    loose = entry.overwrite and not spec.has_rules
    b.ops.append(_row_delete(b, state, entry.condition, loose))
    b.owner = key  # (the new row's origin names it, as its version row's does)
    own = Put(key, item, None if loose else free(spec.table.pk, spec.table.ttl),
              b.origin(spec.rules.own, Fail.EXISTS))
    b.owner = old_key
    b.around(b.rows(loaded, values, old_key, key, item, version if changed else None,
                    retyped=_layout(spec).type_name != spec.type_name), own)
    return b.ops, Outcome(obj, Written(spec, key, item, values, version), version=version,
                          stamps=pairs)


def plan_move_delete(entry: Any, state: MovedState, index: int
                     ) -> Planned[Outcome]:
    """Delete an object read from the previous layout: its old row (as read), its guards
    and, with ``history=True``, its old version rows."""
    obj = entry.obj
    spec = spec_of(type(obj))
    old_key = state.key
    old = spec.cls.model_validate(_layout(spec).values(spec, state.item)).__dict__
    b = ActionBuilder(spec, old_key, index)
    # (its old version rows: as read, under either layout, below)
    b.around(b.rows(old, None, old_key, None, retyped=_layout(spec).type_name != spec.type_name),
             _row_delete(b, state, entry.condition, False))
    if entry.history and state.version:  # (the version rows it was loaded with)
        assert spec.table.sk is not None
        base = _layout(spec).sk.render(old, spec.name)  # (its old sort key, unversioned)
        # a version row not read under the old key was moved ahead of its entity (a
        # history batch of `dynaorm migrate`): it is deleted under the current key
        keys = spec.rules.sort_keys
        read = {keys.parse(key_value(row[spec.table.sk])) for row in state.history}
        for n in range(1, (state.version or 0) + 1):
            key = {**old_key, spec.table.sk: keys.key(base, n)}
            if (n, base) not in read:
                key = spec.primary_key({**old, "version": n}, n)
            b.ops.append(Delete(key, None, b.origin(Role.VERSION, Fail.GONE)))
    return b.ops, Outcome(obj, None)
