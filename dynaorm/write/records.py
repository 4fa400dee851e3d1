"""The vocabulary of a commit (plain data, no I/O): the write records a plan is made of (a
:class:`Put`, an :class:`Update`, a :class:`Delete` or a :class:`ConditionCheck`, each with
the :class:`Origin` that says why it is there), the staged-write protocol every kind of
write implements (:class:`StagedWrite`, with the :class:`Reads` it may ask for), what an
object becomes when the commit succeeds (:class:`Outcome`), and the state a commit leaves
on it (:class:`Written`).

A commit (:mod:`dynaorm.core.commit`) knows no kind of write: for each staged write it asks
for ``_prepare`` (the stored state it is planned on, reading where its rules need),
``_plan_ops`` (its actions and outcome, pure) and, after success, ``_finish``. Saves
(:mod:`dynaorm.write.save`), deletes (:mod:`dynaorm.write.delete`), ``s.update()`` and
``s.check()`` (:mod:`dynaorm.write.updates`) implement it, moves between layouts
(:mod:`dynaorm.write.moves`) are planned for the first two; a new kind of write implements
it too, and nothing else changes. The methods are underscored so that the objects users
hold (``StagedUpdate``) show only their own API.
"""

from __future__ import annotations

import copy
import enum
from collections.abc import Generator, Hashable, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from dynaorm._types import AttributeValue, Item, PlainKey
from dynaorm.model.entity import Entity, encode_entity, spec_of
from dynaorm.model.expressions import Condition
from dynaorm.model.keys import key_id
from dynaorm.model.state import InstanceState

if TYPE_CHECKING:
    from dynaorm.model.layouts import MovedState
    from dynaorm.model.spec import EntitySpec
    from dynaorm.model.table import TableSchema

__all__ = ["ConditionCheck", "Delete", "Fail", "ObjectWrite", "Op", "Origin", "Outcome",
           "Prepared", "Put", "Reading", "Reads", "Role", "StagedWrite", "Update", "Written",
           "stored_values"]

#: a protocol's result (its steps are whatever the reads yield)
Reading = Generator[Any, Any, Any]


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
    GONE = "gone"              # item gone (ItemGoneError) or changed (Concurrent...)
    MISSING = "missing"        # by key, never read: absent -> ItemNotFoundError (no conflict)
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

    @property
    def table(self) -> TableSchema:
        """The table the action writes to: its entity's (guards and version rows live
        beside their owner)."""
        table: TableSchema = self.entity.__dynaorm_spec__.table
        return table


@dataclass(frozen=True, slots=True)
class Put:
    """Write a whole item (PutItem)."""

    key: PlainKey
    item: Item
    condition: Condition | None
    origin: Origin


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


class Outcome(NamedTuple):
    """What an object becomes if the commit succeeds (``state=None``: deleted)."""

    obj: Entity
    state: InstanceState | None
    version: int | None = None
    #: ``Meta.timestamps`` the write set: ``(field, value)`` pairs, put on ``obj`` on success
    stamps: tuple[tuple[str, Any], ...] = ()


class Reads(Protocol):
    """The reads a staged write may ask for (protocols: a driver performs them)."""

    def item(self, table: TableSchema, key: PlainKey) -> Generator[Any, Any, Item | None]:
        """The item stored at ``key`` in ``table``, read consistently (``None``: none)."""

    def last_version(self, obj: Entity) -> Generator[Any, Any, int]:
        """The highest stored version row of ``obj``'s key (0: no kept history)."""

    def stored_now(self, spec: EntitySpec, state: MovedState, new_key: PlainKey
                   ) -> Generator[Any, Any, InstanceState | None]:
        """What an object read from its previous layout stands for now (see
        :func:`dynaorm.read.previous.stored_now_p`)."""


class StagedWrite:
    """One staged write of a unit of work (a save, a delete, an update, a check): the
    protocol a commit drives, with what most kinds share as defaults (no object to settle,
    never coalesced, never planned again, nothing to take after the commit)."""

    __slots__ = ()
    #: the entity class it writes (a write by key: its own)
    entity: type[Entity]

    @property
    def _obj(self) -> Entity | None:
        """The object whose state a successful commit settles (``None``: none)."""
        return None

    @property
    def _entity(self) -> type[Entity]:
        """The entity class it writes."""
        return self.entity

    def _stage_key(self) -> Hashable:
        """Which stored item it stands for: staged writes with equal keys coalesce (the
        one staged last wins)."""
        return id(self)

    def _prepare(self, reads: Reads, again: bool) -> Generator[Any, Any, Prepared]:
        """The write as it will be planned, and the stored state it is planned on (reading
        where its rules need: a protocol). ``again``: a conflict of the commit's last
        round was this write's to plan again (:meth:`_rereads`)."""
        raise NotImplementedError

    def _plan_ops(self, state: InstanceState | None, index: int
                  ) -> tuple[list[Op], Outcome | None]:
        """Its actions (origins tagged with ``index``, its place in the commit) and what
        its object becomes on success (pure)."""
        raise NotImplementedError

    def _rereads(self, table: str | None, key: PlainKey | None,
                 state: InstanceState | None) -> bool:
        """Whether a conflict at ``key`` of ``table`` (``None``: not known) is planned again
        on a fresh read rather than reported."""
        return False

    def _finish(self, response: Mapping[str, Any], single: bool, reads: Reads
                ) -> Generator[Any, Any, None]:
        """After the commit succeeded: take its results (``response``: the answer of a
        ``single`` item write, or of the transaction; ``{}`` when a lost answer's write
        was applied)."""
        return
        yield  # (a protocol that asks for nothing)


#: a staged write with the stored state it is planned on
Prepared = tuple[StagedWrite, InstanceState | None]


class ObjectWrite(StagedWrite):
    """What a staged save or delete of one object shares: the object it settles, and
    where it is stored."""

    __slots__ = ()
    obj: Entity
    condition: Condition | None

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


class Written(InstanceState):
    """The state a commit leaves on an object: its item is exactly ``encode_entity`` of
    the values written, so the next write of the object plans from it without validating
    the stored item back into an object and encoding that again (:func:`stored_values`).
    It keeps the written values planning reads (unique fields and index-key fields),
    copied: the object's own may change in place before that next write."""

    __slots__ = ("values",)

    def __init__(self, spec: EntitySpec, key: PlainKey, item: Item,
                 values: Mapping[str, Any], version: int | None = None) -> None:
        super().__init__(key, item, version)
        planned = spec.unique_fields | frozenset(f for idx in spec.indexes
                                                 for f in idx.fields)
        self.values: Mapping[str, Any] = {
            f: v if type(v) in _IMMUTABLE else copy.deepcopy(v)
            for f in planned if f in values for v in (values[f],)} if planned else _NO_VALUES


_IMMUTABLE = frozenset({str, int, bool, float, Decimal, type(None)})
_NO_VALUES: Mapping[str, Any] = MappingProxyType({})  # shared by states that keep none


def stored_values(spec: EntitySpec, state: InstanceState) -> tuple[Mapping[str, Any], Item]:
    """The stored field values and the item as dynaorm writes them (the diff's base) of
    the state an update plans from: a loaded item is validated back into an object and
    encoded again (the stored item may hold what the entity does not, or lack defaults);
    a state a commit left has both already."""
    if isinstance(state, Written):
        return state.values, state.item
    old_obj = spec.cls.model_validate(spec.decode_fields(state.item))
    return old_obj.__dict__, encode_entity(old_obj, spec, state.version)
