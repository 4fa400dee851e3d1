"""``s.save(obj)`` and ``s.delete(obj)`` as staged writes (:class:`SaveEntry`,
:class:`DeleteEntry`): what they read before planning where their rules need it, and how
they plan (:mod:`dynaorm.write.planner`). Both implement
:class:`~dynaorm.write.staged.StagedWrite`."""

from __future__ import annotations

import dataclasses
from collections.abc import Generator, Hashable, Mapping
from dataclasses import dataclass
from typing import Any

from dynaorm._types import PlainKey
from dynaorm.errors import ItemNotFoundError
from dynaorm.model.entity import Entity, spec_of
from dynaorm.model.expressions import Condition
from dynaorm.model.keys import key_id
from dynaorm.model.layouts import MovedState
from dynaorm.model.state import InstanceState
from dynaorm.write.actions import undeclared
from dynaorm.write.planner import plan_delete, plan_save
from dynaorm.write.records import Op
from dynaorm.write.staged import Outcome, Prepared, Reads

__all__ = ["DeleteEntry", "SaveEntry", "either_layout"]


class _ObjectEntry:
    """What a staged save or delete of one object shares as a staged write."""

    __slots__ = ()
    obj: Entity

    @property
    def _obj(self) -> Entity:
        return self.obj

    @property
    def _entity(self) -> type[Entity]:
        return type(self.obj)

    def _stage_key(self) -> Hashable:
        """Which stored item the object stands for: where it is and where it goes (a key
        move and an insert at the old key do not coalesce)."""
        obj = self.obj
        spec = spec_of(type(obj))
        state = obj._dynaorm_state
        new = key_id(spec.primary_key(obj.__dict__))
        return (spec.table.name, spec.type_name, new if state is None else key_id(state.key),
                new)


@dataclass(frozen=True, slots=True)
class SaveEntry(_ObjectEntry):
    """``s.save(obj)``: an insert (new object) or an update (persisted object)."""

    obj: Entity
    overwrite: bool = False
    condition: Condition | None = None  # the caller's own condition (``condition=``)
    #: an insert of a versioned entity whose kept history ends at this version continues it
    after_version: int = 0


    def _prepare(self, reads: Reads) -> Generator[Any, Any, Prepared]:
        """The stored state: the object's own, or, for an overwrite of an entity with
        rules, what is stored now (last writer wins, and its guards are planned from
        what is stored, not from what was loaded); a new versioned entity continues the
        history a deleted predecessor kept."""
        obj = self.obj
        spec = spec_of(type(obj))
        state = obj._dynaorm_state
        if self.overwrite and spec.has_rules:
            if isinstance(state, MovedState):
                # read from Meta.previous's layout: planned on what is stored now, under
                # either layout (the old row again, or the row another writer moved)
                state = yield from reads.stored_now(spec, state,
                                                    spec.primary_key(obj.__dict__))
            else:
                key = spec.primary_key(obj.__dict__) if state is None else state.key
                item = yield from reads.item(spec.table, key)
                state = None if item is None else type(obj)._from_item(item)._dynaorm_state
        elif (state is not None and not isinstance(state, MovedState)
              and not spec.versioned and spec.primary_key(obj.__dict__) != state.key):
            state = yield from _with_unknown(spec, state, reads)
        entry = self
        if state is None and spec.versioned:
            last = yield from reads.last_version(obj)  # a deleted entity's kept history
            if last:
                entry = dataclasses.replace(self, after_version=last)
        return entry, state

    def _plan_ops(self, state: InstanceState | None, index: int
                  ) -> tuple[list[Op], Outcome | None]:
        return plan_save(self, state, index)

    def _rereads(self, table: str | None, key: PlainKey | None,
                 state: InstanceState | None) -> bool:
        spec = spec_of(type(self.obj))
        if not (self.overwrite and spec.has_rules) or table not in (None, spec.table.name):
            return False
        mine = state.key if state is not None else None
        return key is None or key in (mine, spec.primary_key(self.obj.__dict__))

    def _finish(self, response: Mapping[str, Any], single: bool, reads: Reads
                ) -> Generator[Any, Any, None]:
        return
        yield  # (a protocol that asks for nothing: the commit settles the object)


def _with_unknown(spec: Any, state: InstanceState, reads: Reads
                  ) -> Generator[Any, Any, InstanceState]:
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
    return InstanceState(state.key, {**loaded, **new}, state.version)


def either_layout(spec: Any, fields: Mapping[str, Any], reads: Reads
                  ) -> Generator[Any, Any, InstanceState | None]:
    """The stored state of the entity with key ``fields`` of an entity declaring
    ``Meta.previous``: its old row (a :class:`MovedState`), its current row, or ``None``
    (neither; an expired item counts as gone)."""
    assert spec.previous is not None
    old_key = spec.previous.key(fields, spec.name)
    state: InstanceState | None = yield from reads.stored_now(
        spec, MovedState(old_key, {}, None), spec.primary_key(fields))
    return state


@dataclass(frozen=True, slots=True)
class DeleteEntry(_ObjectEntry):
    """``s.delete(obj)``; with ``history`` a versioned entity's version rows go too."""

    obj: Entity
    history: bool = False
    condition: Condition | None = None  # the caller's own condition (``condition=``)


    def _prepare(self, reads: Reads) -> Generator[Any, Any, Prepared]:
        """The stored state: the object's own; an entity with rules deleted by key (never
        loaded) is read first, consistently, so that its guards and history go too."""
        obj = self.obj
        spec = spec_of(type(obj))
        state = obj._dynaorm_state
        if state is None and spec.previous is not None:
            # by key in a migration window: the entity under either layout (its old row
            # too, with its guards and version rows), read together, consistently
            state = yield from either_layout(spec, obj.__dict__, reads)
            if state is None:
                key = spec.primary_key(obj.__dict__)
                raise ItemNotFoundError(f"{spec.name} {key} does not exist (under either "
                                        "layout)", entity=spec.cls, key=key)
        elif spec.has_rules and state is None:
            key = spec.primary_key(obj.__dict__)
            item = yield from reads.item(spec.table, key)
            if item is None:
                raise ItemNotFoundError(f"{spec.name} {key} does not exist",
                                        entity=spec.cls, key=key)
            state = type(obj)._from_item(item)._dynaorm_state
        return self, state

    def _plan_ops(self, state: InstanceState | None, index: int
                  ) -> tuple[list[Op], Outcome | None]:
        return plan_delete(self, state, index)

    def _rereads(self, table: str | None, key: PlainKey | None,
                 state: InstanceState | None) -> bool:
        return False

    def _finish(self, response: Mapping[str, Any], single: bool, reads: Reads
                ) -> Generator[Any, Any, None]:
        return
        yield  # (a protocol that asks for nothing: the commit settles the object)
