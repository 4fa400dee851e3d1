"""``s.delete(obj)`` as a staged write (:class:`DeleteEntry`): what it reads before
planning where its rules need it (an entity with rules deleted by key is read first, so
that its guards and history go too), and how it plans (pure, :meth:`DeleteEntry._plan_ops`): the
row (or latest copy) conditioned on what was read, its guards released, a versioned
entity's version rows with ``history=True``; an object read from its previous layout is
deleted there (planned by that layout, ``spec.rules.before``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from dynaorm.errors import ItemNotFoundError
from dynaorm.schema.entity import spec_of
from dynaorm.schema.lock import locked
from dynaorm.schema.rules import readable
from dynaorm.values.expressions import Condition, all_of, exists
from dynaorm.values.records import Delete, Fail, Role
from dynaorm.values.state import InstanceState
from dynaorm.write.conditions import WRITING, expect_loaded_version, with_condition
from dynaorm.write.records import (
    ActionBuilder,
    ObjectWrite,
    Outcome,
    Planned,
    Prepared,
    Reading,
    Reads,
)


@dataclass(frozen=True, slots=True)
class DeleteEntry(ObjectWrite):
    """``s.delete(obj)``; with ``history`` a versioned entity's version rows go too."""

    obj: Any
    history: bool = False
    condition: Condition | None = None  # the caller's own condition (``condition=``)

    def _prepare(self, reads: Reads, again: bool) -> Reading[Prepared]:
        """The stored state: the object's own; an entity with rules deleted by key (never
        loaded) is read first, consistently, so that its guards and history go too."""
        obj = self.obj
        spec = spec_of(type(obj))
        state = obj._dynaorm_state
        old = None if state is not None else spec.rules.before.key(obj.__dict__, spec.name)
        if state is not None or not (old or spec.has_rules):
            return self, state
        key, before = spec.primary_key(obj.__dict__), spec.rules.before
        # (by key in a migration window: the entity under either layout, its old row too,
        # with its guards and version rows, read together, consistently)
        state = yield from (before.either(spec, old, key, reads.kit) if old else
                            before.stored_now(spec, None, key, reads.kit))
        if state is None:
            raise ItemNotFoundError(f"{spec.name} {key} does not exist" + (
                " (under either layout)" if old else ""), entity=spec.cls, key=key)
        return self, state

    def _plan_ops(self, state: InstanceState | None, index: int
                  ) -> Planned[Outcome | None]:
        """The actions of a delete planned on ``state`` (``None``: by key, never read), the
        caller's condition included; the object becomes deleted."""
        obj, spec = self.obj, spec_of(type(self.obj))
        moved = spec.rules.before.delete(spec, self, state, index, WRITING)
        if moved is not None:  # (a row of its previous layout: the layout plans it)
            return moved, Outcome(obj, None)
        if state is None:  # a plain entity never loaded: delete by key, it must exist
            key = spec.primary_key(obj.__dict__)
            b = ActionBuilder(spec, key, index)
            b.ops.append(Delete(key, exists(spec.table.pk), b.origin(Role.ROW, Fail.MISSING)))
            return with_condition(b.ops, self, spec, index), Outcome(obj, None)
        old_values = readable(spec, state.item)
        b = ActionBuilder(spec, state.key, index)
        # (another writer's lock, else the whole item as loaded: a change stored since,
        # ours or one made in place that keeps our revision, is never deleted unseen)
        held = {a for a in (spec.table.revision_attribute,) if a} | spec.rules.held
        keys = {spec.table.pk, spec.table.sk or "", *map(spec.attr, spec.unique_fields),
                *(a for a, _ in spec.rules.pin(0))}  # (conditioned as the rules say)
        conds = [exists(spec.table.pk), *state.guards(
            spec, held | locked(spec.lock),
            leave=None if spec.lock else held | keys)]
        expect_loaded_version(spec, obj, state)
        version = state.version or 0
        conds += spec.rules.pinned(version)  # (a versioned entity: at its version)
        b.around(b.rows(old_values, None, state.key, None,  # (its version rows go too)
                        history=version if self.history else 0),
                 Delete(state.key, all_of(conds),
                        b.origin(spec.rules.own, Fail.GONE)))
        return with_condition(b.ops, self, spec, index), Outcome(obj, None)
