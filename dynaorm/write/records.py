"""The write actions a plan is made of: frozen records of one write each (a Put, an
Update, a Delete or a ConditionCheck), with the :class:`Origin` that says why it is there.

Plain data, no I/O; :mod:`dynaorm.write.render` checks and renders them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field, fields
from typing import Any, NamedTuple

from dynaorm._types import AttributeValue, Item, PlainKey
from dynaorm.model.expressions import Condition

__all__ = ["ConditionCheck", "Delete", "Fail", "Op", "Origin", "Put", "Role", "Update"]


class Role(enum.Enum):
    """Which item of an entity an action writes."""

    ROW = "row"
    GUARD = "unique guard"
    VERSION = "version row"
    LATEST = "latest copy"


class Fail(enum.Enum):
    """What a failed condition on an action means."""

    EXISTS = "exists"          # the item is already there -> ItemExistsError
    UNIQUE = "unique"          # a guard is taken -> UniqueConstraintError
    CONCURRENT = "concurrent"  # stored values moved -> ConcurrentModificationError
    GONE = "gone"              # item gone (ItemNotFoundError) or changed (Concurrent...)
    CALLER = "caller"          # only the caller's condition -> ConditionFailedError


class Origin(NamedTuple):
    """Why an action is in the plan: which entity and object, which role."""

    entity: type[Any]
    owner_key: PlainKey
    role: Role
    fail: Fail
    field: str | None = None
    value: Any = None
    staged: int = 0  # index of the staged entry that produced it
    #: the caller's own condition (``condition=``, ``where``), ANDed into the action's:
    #: the stored item returned on failure tells whose condition failed
    caller: Condition | None = None


@dataclass(frozen=True, slots=True)
class Put:
    """Write a whole item (PutItem)."""

    key: PlainKey
    item: Item
    condition: Condition | None
    origin: Origin
    #: the item's size when whoever built it knows it holds nothing to refuse (key and
    #: attributes all plain: unique guard items, see :mod:`dynaorm.write.planner`), so the gate
    #: takes it instead of scanning the item again; -1: unknown, the gate scans it
    size: int = field(default=-1, compare=False, repr=False)

    def __init__(self, key: PlainKey, item: Item, condition: Condition | None,
                 origin: Origin, size: int = -1) -> None:
        # the frozen dataclass's own __init__ sets each field with object.__setattr__ (a
        # lookup by name per field); the slots' own setters skip it: ~0.2 us less per
        # action built, the same object (the dataclass keeps an __init__ it is given)
        _PUT_SET[0](self, key)
        _PUT_SET[1](self, item)
        _PUT_SET[2](self, condition)
        _PUT_SET[3](self, origin)
        _PUT_SET[4](self, size)


@dataclass(frozen=True, slots=True)
class Update:
    """Change some attributes of an item (UpdateItem)."""

    key: PlainKey
    set: Item
    remove: tuple[str, ...]
    condition: Condition | None
    origin: Origin
    #: an update expression built by ``s.update()`` (see :mod:`dynaorm.write.updates`); when
    #: given it replaces ``set``/``remove``: ``(clause, attribute, value)`` in call order
    clauses: tuple[tuple[str, str, AttributeValue | None], ...] = ()
    #: the stored item the update applies to, when known (a loaded object's snapshot):
    #: the item it makes must fit in 400 KB too
    known: Item | None = field(default=None, compare=False)
    #: at least :func:`~dynaorm.write.limits.item_size` of ``known`` when the planner knows
    #: a bound (a committed state carries one: see :mod:`dynaorm.write.planner`); -1: unknown,
    #: the gate sizes ``known``. The item is sized exactly only when the bound could not
    #: keep the item after the update within 400 KB.
    known_size: int = field(default=-1, compare=False, repr=False)

    def __init__(self, key: PlainKey, set: Item, remove: tuple[str, ...],
                 condition: Condition | None, origin: Origin,
                 clauses: tuple[tuple[str, str, AttributeValue | None], ...] = (),
                 known: Item | None = None, known_size: int = -1) -> None:
        # (see Put.__init__)
        _UPDATE_SET[0](self, key)
        _UPDATE_SET[1](self, set)
        _UPDATE_SET[2](self, remove)
        _UPDATE_SET[3](self, condition)
        _UPDATE_SET[4](self, origin)
        _UPDATE_SET[5](self, clauses)
        _UPDATE_SET[6](self, known)
        _UPDATE_SET[7](self, known_size)


@dataclass(frozen=True, slots=True)
class Delete:
    """Delete an item (DeleteItem)."""

    key: PlainKey
    condition: Condition | None
    origin: Origin


@dataclass(frozen=True, slots=True)
class ConditionCheck:
    """Require a condition on an item, writing nothing."""

    key: PlainKey
    condition: Condition
    origin: Origin


Op = Put | Update | Delete | ConditionCheck


def _slot_setters(cls: type[Any]) -> tuple[Any, ...]:
    """The setters of a slots dataclass's fields, in field order (see Put.__init__)."""
    return tuple(cls.__dict__[f.name].__set__ for f in fields(cls))


_PUT_SET = _slot_setters(Put)
_UPDATE_SET = _slot_setters(Update)
