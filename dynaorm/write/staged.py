"""What a unit of work stages, as the planner reads it: a save or a delete of one object
(:class:`SaveEntry`, :class:`DeleteEntry`), or an action that plans itself
(``s.update()``, ``s.check()``: a :class:`StagedAction`), and the :class:`Outcome` an
object takes if the commit succeeds.

Plain data, no I/O: :func:`dynaorm.write.planner.compile_commit` turns entries into a plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from dynaorm.model.entity import Entity
from dynaorm.model.expressions import Condition
from dynaorm.model.state import InstanceState
from dynaorm.write.records import Op

__all__ = ["DeleteEntry", "Entry", "Outcome", "SaveEntry", "StagedAction"]


@dataclass(frozen=True, slots=True)
class SaveEntry:
    """``s.save(obj)``: an insert (new object) or an update (persisted object)."""

    obj: Entity
    overwrite: bool = False
    condition: Condition | None = None  # the caller's own condition (``condition=``)
    #: an insert of a versioned entity whose kept history ends at this version continues it
    after_version: int = 0


@dataclass(frozen=True, slots=True)
class DeleteEntry:
    """``s.delete(obj)``; with ``history`` a versioned entity's version rows go too."""

    obj: Entity
    history: bool = False
    condition: Condition | None = None  # the caller's own condition (``condition=``)


class Outcome(NamedTuple):
    """What an object becomes if the commit succeeds (``state=None``: deleted)."""

    obj: Entity
    state: InstanceState | None
    version: int | None = None
    #: ``Meta.timestamps`` the write set: ``(field, value)`` pairs, put on ``obj`` on success
    stamps: tuple[tuple[str, Any], ...] = ()


class StagedAction(Protocol):
    """A staged action that plans itself (``s.update()``, ``s.check()``): the object is
    its own entry."""

    def _plan_ops(self, state: InstanceState | None,
                  index: int) -> tuple[list[Op], Outcome | None]: ...


Entry = SaveEntry | DeleteEntry | StagedAction
