"""Reads by key, as protocols (pure: a driver performs them): ``get`` (GetItem), ``find``
(through a unique guard to its owner), ``get_many`` (BatchGetItem, or one TransactGetItems
for a snapshot), each on the entities of a session's :class:`~dynaorm.core.stage.Stage`;
and the one GetItem every read by key goes through (a write's consistent reads:
:data:`dynaorm.read.batches.FETCHING`)."""

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.core.stage import Stage, check_concurrency
from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.protocol.steps import Proto, call
from dynaorm.read.batches import FETCHING, batch_get_p, snapshot_p
from dynaorm.schema.entity import Entity, T, answer_reader, prepare_rows
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.table import TableSchema
from dynaorm.schema.unclaimed import note_unclaimed
from dynaorm.values.keys import key_id, wire_key
from dynaorm.values.limits import check_read_key

#: Times ``find`` reads a guard and its owner before concluding nobody holds the value.
FIND_ROUNDS = 3


def get_item_p(table: TableSchema, key: PlainKey, consistent: bool = False,
               origins: tuple[type[Entity], ...] = (), reader: Any = None
               ) -> Proto[Item | None]:
    """The item at ``key`` in ``table`` (GetItem; a key DynamoDB would refuse raises
    before anything is sent); with ``reader`` (:func:`~dynaorm.schema.entity.answer_reader`),
    the object it read from the answer's bytes where it could."""
    check_read_key(table, key, "/".join(o.__name__ for o in origins) or "item")
    request: dict[str, Any] = {"TableName": table.name, "Key": wire_key(key)}
    if consistent:
        request["ConsistentRead"] = True
    out = yield from call("GetItem", request, origins, reader=reader)
    item = out.get("Item")
    return item


def get_p(stage: Stage, entity: type[T], consistent: bool, version: int | None,
          fields: Mapping[str, Any]) -> Proto[T | None]:
    """One entity by its key fields (``None`` if absent); in a migration window, under
    either layout."""
    spec = stage.spec(entity)
    key = stage.key(spec, fields, version)
    item = yield from get_item_p(spec.table, key, consistent, (entity,),
                                 answer_reader({spec.type_name: (entity, spec)}))
    if isinstance(item, entity):  # (read from the answer's bytes)
        return item if stage.scope is None else _held(stage, item)
    if item is not None and spec.rules.preparers:  # (key material: Encrypted fields)
        yield from prepare_rows((spec,), (item,))
    found: T | None
    if version is None and not spec.owns(item) and (
            old := spec.rules.before.key(fields, spec.name)) is not None:
        found = yield from spec.rules.before.read(spec, old, key, item, FETCHING)
    else:
        found = _owned(entity, spec, item)
    return found if stage.scope is None else _held(stage, found)


def _held(stage: Stage, obj: T | None) -> T | None:
    """``obj``, read in the scope of ``stage`` from a key the scope admitted, unless its
    own scope fields say another scope (a stale key's row: ``None``, as a miss)."""
    return obj if obj is None or stage.scope is None or stage.scope.holds(obj) else None


def _owned(entity: type[T], spec: EntitySpec, item: Item | None) -> T | None:
    """``item`` as an ``entity`` when it is one of its items (one of a class no more
    declared is noted, once)."""
    if item is not None and spec.owns(item):
        return entity._from_item(item, spec)
    if item is not None:
        note_unclaimed(spec.table, item)  # a renamed class: say so, once
    return None


def get_many_p(stage: Stage, entity: type[T], keys: Sequence[Mapping[str, Any]],
               consistent: bool, snapshot: bool, concurrency: int) -> Proto[list[T | None]]:
    """Many entities, in input order (BatchGetItem; ``snapshot``: one TransactGetItems)."""
    spec = stage.spec(entity)
    check_concurrency(concurrency)
    wanted = [stage.key(spec, k) for k in keys]
    if snapshot:
        found = yield from snapshot_p(spec, wanted)
    else:
        found = yield from batch_get_p(spec.table.name, [wire_key(k) for k in wanted],
                                       consistent=consistent, concurrency=concurrency,
                                       reader=answer_reader({spec.type_name: (entity, spec)}),
                                       origins=(entity,))  # (its units counted for it)
    items = [found.get(key_id(key)) for key in wanted]
    if spec.rules.preparers:
        yield from prepare_rows((spec,), list(found.values()))
    out = []
    for item in items:
        if isinstance(item, entity):  # (read from the answer's bytes; asked again: a copy)
            out.append(copy.deepcopy(item) if any(o is item for o in out) else item)
        else:
            out.append(_owned(entity, spec, item))
    # a migration window: a miss is looked up under either layout, as get does
    for at, obj in enumerate(out):
        if obj is None and not snapshot and (
                old := spec.rules.before.key(keys[at], spec.name)) is not None:
            out[at] = yield from spec.rules.before.read(spec, old, wanted[at], items[at],
                                                        FETCHING)
    return out if stage.scope is None else [_held(stage, obj) for obj in out]


def find_p(stage: Stage, entity: type[T], consistent: bool,
           fields: Mapping[str, Any]) -> Proto[T | None]:
    """The owner of a unique value: the guard names it, and the owner, when read, must
    still hold the value (a guard can be re-pointed between the two reads); else the
    guard is read again (consistently), up to :data:`FIND_ROUNDS` times."""
    spec = stage.spec(entity)
    rule = next((r for r in spec.uniques if r.field in fields), None)
    if rule is None:
        names = [r.field for r in spec.uniques]
        raise DynaormError(f"{spec.name}: find() takes one unique field ({names}), "
                           f"got {sorted(fields)}")
    if set(fields) != set(rule.fields):
        raise KeyTemplateError(f"{spec.name}: find() by {rule.field!r} takes "
                               f"exactly {sorted(rule.fields)}")
    if stage.scope is not None:
        stage.scope.fields(spec, fields, "find")
    key = yield from rule.guard_key_p(fields, spec.name, (entity,))
    if key is None:  # no value, no guard: nothing can be found by it
        return None
    table = spec.table
    for _ in range(FIND_ROUNDS):
        guard = yield from get_item_p(table, rule.row_key(table, key), consistent, (entity,))
        owner = rule.owner_key(table, guard, spec.type_name) or rule.owner_key(
            table, guard, spec.rules.before.type_name)  # (a guard of the old type name)
        if owner is None:
            return None
        if stage.scope is not None and not stage.scope.admits_key(spec, owner.get(table.pk)):
            return None  # (a guard of the scope naming another scope's key: not read)
        item = yield from get_item_p(table, owner, consistent, (entity,))
        obj: T | None = yield from spec.rules.before.owner(spec, item, FETCHING)  # (either
        # layout, as get reads)
        if obj is not None and _held(stage, obj) is None:
            return None  # (a stale key's row: its fields say another scope)
        if obj is not None:
            held = yield from rule.guard_key_p({f: obj.__dict__.get(f) for f in rule.fields},
                                               spec.name, (entity,))
            if held == key:
                return obj
        consistent = True  # the guard moved under us: read the latest state
    return None
