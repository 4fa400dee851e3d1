"""Reads during a migration window: ``s.get`` finding an entity under its previous layout.

``get`` reads the current key first (one ``GetItem``, as always). Only on a miss, for an
entity that declares ``Meta.previous``, it sends one ``TransactGetItems`` of the current
and the old key together: the two are read at one instant, so an item a mover (a writer
or ``dynaorm migrate``) moves between the first read and the second is still found, under
one layout or the other. A versioned entity found under the old layout also has its old
version rows read (one ``BatchGetItem`` per 100), which a later save moves with it.

Queries are not covered: an old-layout item lives under its old partition key (or its
old type name), so a query over the current key does not return it. Use ``get`` or run
``dynaorm migrate`` first.
"""

from __future__ import annotations

from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError
from dynaorm.protocol.steps import Proto, call
from dynaorm.read.batches import batch_get_p, snapshot_p
from dynaorm.schema.entity import _set_state, prepare_rows
from dynaorm.schema.spec import EntitySpec
from dynaorm.values.keys import key_id, wire_key
from dynaorm.values.state import InstanceState, MovedState
from dynaorm.values.ttl import expired

__all__ = ["moved_p", "owner_p", "previous_get_p", "stored_now_p"]


def moved_p(spec: EntitySpec, item: Item) -> Proto[Any]:
    """An object of ``spec.cls`` read from ``item``, a row of the previous layout, with
    its old version rows (1..n, versioned only: read), marked so that any write of it
    moves it (:class:`~dynaorm.values.state.MovedState`)."""
    layout = spec.previous
    assert layout is not None
    keys = [wire_key(k) for k in layout.version_keys(item, spec.name)]
    found = (yield from batch_get_p(spec.table.name, keys, consistent=True)) if keys else {}
    history = tuple(found[key_id(k)] for k in keys if key_id(k) in found)
    yield from prepare_rows((spec,), (item, *history))
    obj, version = layout.load(spec, item)
    _set_state(obj, MovedState(spec.stored_key(item), item, version, history))
    return obj


def previous_get_p(spec: EntitySpec, old_key: PlainKey, new_key: PlainKey,
                   found: Item | None) -> Proto[Any]:
    """After ``get`` missed ``new_key`` (``found``: what it read there, not the entity's):
    the entity under either layout (``old_key``: its key in the previous one), read
    together (see the module), or ``None``."""
    if key_id(old_key) == key_id(new_key):  # only the type or stored names changed
        item = found
    else:
        both = yield from snapshot_p(spec, (new_key, old_key))
        current, item = both.get(key_id(new_key)), both.get(key_id(old_key))
        if spec.owns(current):  # (and its TTL not passed)
            item = current
    return (yield from owner_p(spec, item))


def owner_p(spec: EntitySpec, item: Item | None) -> Proto[Any]:
    """An object of ``spec`` read from ``item``, in the current layout or the previous
    one (with its old version rows), or ``None`` when it is a live row of neither: what
    ``get`` found, or the owner row a unique guard names (``find`` in a migration window:
    a guard written before the change names its owner under the old key and type name)."""
    if item is not None and spec.owns(item) and spec.fits(item):  # (not an old row)
        yield from prepare_rows((spec,), (item,))
        return spec.cls._from_item(item, spec)
    layout = spec.previous
    item = _live(spec, item)
    if layout is None or item is None or not layout.owns(item):
        return None
    return (yield from moved_p(spec, item))


def _live(spec: EntitySpec, item: Item | None) -> Item | None:
    """``item``, or ``None`` when its TTL has passed (expired, not yet deleted by
    DynamoDB: every read treats it as gone, under either layout)."""
    return None if item is None or expired(item, spec.table.ttl) else item


def stored_now_p(spec: EntitySpec, state: MovedState, new_key: PlainKey
                 ) -> Proto[InstanceState | None]:
    """What an object read from the previous layout (``state``) stands for now, for an
    overwrite planned on what is stored (an entity with rules, whose guards and history
    must follow the stored values, not the loaded ones): its old row and the key it moves
    to (``new_key``) read together, consistently. The old row, still there: a fresh
    :class:`~dynaorm.values.state.MovedState` (with its version rows), so the overwrite
    moves it; else the current row (another writer moved it): its plain state, so the
    overwrite replaces it; else ``None`` (deleted meanwhile: the overwrite inserts)."""
    layout = spec.rules.before  # (its previous layout)
    old_key = state.key
    if key_id(old_key) == key_id(new_key):  # only the type or stored names changed
        out = yield from call("GetItem", {"TableName": spec.table.name, "Key": wire_key(old_key),
                                          "ConsistentRead": True}, (spec.cls,))
        old = current = out.get("Item")
    else:
        both = yield from snapshot_p(spec, (old_key, new_key))
        old, current = both.get(key_id(old_key)), both.get(key_id(new_key))
    old, current = _live(spec, old), _live(spec, current)
    if old is not None and layout.owns(old):
        if current is not old and current is not None and spec.owns(current):
            raise DynaormError(
                f"{spec.name}: both layouts hold it, the old row {old_key} and the current "
                f"row {new_key} (a new object was saved at the current key during the "
                "migration window); overwrite cannot tell which one it replaces: delete "
                "one of them first")
        moved: InstanceState = (yield from moved_p(spec, old))._dynaorm_state
        return moved
    if current is not None and spec.owns(current):
        yield from prepare_rows((spec,), (current,))
        found: InstanceState = spec.cls._from_item(current, spec)._dynaorm_state
        return found
    return None
