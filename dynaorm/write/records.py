"""The vocabulary of a commit (pure, no I/O): the write records a plan is made of (a
:class:`Put`, an :class:`Update`, a :class:`Delete` or a :class:`ConditionCheck`, each with
the :class:`Origin` that says why it is there), the staged-write protocol every kind of
write implements (:class:`StagedWrite`, with the :class:`Reads` it may ask for), what an
object becomes when the commit succeeds (:class:`Outcome`), and the state a commit leaves
on it (:class:`Written`); and the :class:`ActionBuilder` that collects a write's actions
with their origins, the rows its entity's rules add beside its own row included (unique
guards, version rows: each rule's ``rows`` hook answers for its own, the same way
whatever the write; see :mod:`dynaorm.schema.rules`).

A commit (:mod:`dynaorm.core.commit`) knows no kind of write: for each staged write it asks
for ``_prepare`` (the stored state it is planned on, reading where its rules need),
``_plan_ops`` (its actions and outcome, pure) and, after success, ``_finish``. Saves
(:mod:`dynaorm.write.save`), deletes (:mod:`dynaorm.write.delete`), ``s.update()`` and
``s.check()`` (:mod:`dynaorm.write.updates`) implement it (a save or delete of an object
read from a previous layout is planned by that layout: ``spec.rules.before``); a new kind
of write implements it too, and nothing else changes. The methods are underscored so that
the objects users hold (``StagedUpdate``) show only their own API.
"""

from __future__ import annotations

import copy
from collections.abc import Generator, Hashable, Mapping, Sequence
from decimal import Decimal
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeVar

from dynaorm._types import Item, PlainKey
from dynaorm.errors import ForgottenError, OffloadError, RequestError
from dynaorm.schema.entity import Entity, encode_entity, spec_of
from dynaorm.schema.rules import NO_ROWS, Change, Fetching, Rows, readable
from dynaorm.values.expressions import Condition
from dynaorm.values.formats import StoredAs
from dynaorm.values.keys import key_id
from dynaorm.values.records import Fail, Op, Origin, Role
from dynaorm.values.state import InstanceState
from dynaorm.values.tree import StoredMembers

if TYPE_CHECKING:
    from dynaorm.schema.spec import EntitySpec
    from dynaorm.schema.table import TableSchema

T = TypeVar("T")
#: a protocol whose result is ``T`` (its steps are whatever the reads yield)
Reading = Generator[Any, Any, T]
#: a planned write: its actions, and ``T``, what its object becomes (an ``Outcome``)
Planned = tuple[list[Op], T]


















class Outcome(NamedTuple):
    """What an object becomes if the commit succeeds (``state=None``: deleted)."""

    obj: Entity
    state: InstanceState | None
    version: int | None = None
    #: ``Meta.timestamps`` the write set: ``(field, value)`` pairs, put on ``obj`` on success
    stamps: tuple[tuple[str, Any], ...] = ()


class Reads(Protocol):
    """The reads a staged write may ask for (protocols: a driver performs them)."""

    #: what a rule that reads whole objects is handed (a previous layout's reads:
    #: :meth:`~dynaorm.schema.rules.Before.stored_now`, ``either``)
    kit: Fetching

    def item(self, table: TableSchema, key: PlainKey) -> Reading[Item | None]:
        """The item stored at ``key`` in ``table``, read consistently (``None``: none)."""

    def for_insert(self, spec: EntitySpec, values: Mapping[str, Any]) -> Reading[Any]:
        """What the entity's rules read before an insert of an object with field
        ``values`` is planned (:meth:`~dynaorm.schema.rules.Rule.prepare_write`: the
        versioned rule's last version kept at its key, 0: none; ``None``: no rule reads,
        nothing is read)."""


class Receipt(Protocol):
    """A keyed commit's receipts, as the phases ask them (a table's receipts rule makes
    them: :meth:`~dynaorm.schema.rules.receipts.Receipts.start`), so that no phase names
    that rule."""

    #: the commit's ``ClientRequestToken`` (its first 16 characters: the rows' revision)
    token: str
    #: the requests the commit sent before its transaction
    sent: list[tuple[str, dict[str, Any]]]

    def keyed_p(self) -> Reading[None]:
        """Key the commit's digest (a protocol: a KMS keyring asks for its MAC)."""

    def rows(self, ops: Sequence[Op]) -> list[Op]:
        """The receipt rows the commit of ``ops`` adds to its plan."""

    def settle(self, exc: RequestError, ops: Sequence[Op], read: Any, step: Any
               ) -> Reading[Any]:
        """What the failed send ``step`` means by the receipts (``None``: they say
        nothing; else the response, or a replay)."""

    def replayed(self, read: Any) -> Reading[Any]:
        """The replay of an earlier commit of the same writes (``None``: none)."""


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

    def _prepare(self, reads: Reads, again: bool) -> Reading[Prepared]:
        """The write as it will be planned, and the stored state it is planned on (reading
        where its rules need: a protocol). ``again``: a conflict of the commit's last
        round was this write's to plan again (:meth:`_rereads`)."""
        raise NotImplementedError

    def _plan_ops(self, state: InstanceState | None, index: int
                  ) -> Planned[Outcome | None]:
        """Its actions (origins tagged with ``index``, its place in the commit) and what
        its object becomes on success (pure)."""
        raise NotImplementedError

    def _rereads(self, table: str | None, key: PlainKey | None,
                 state: InstanceState | None) -> bool:
        """Whether a conflict at ``key`` of ``table`` (``None``: not known) is planned again
        on a fresh read rather than reported."""
        return False

    def _renders(self, state: InstanceState | None) -> tuple[Mapping[str, Any], ...]:
        """The field values its plan on ``state`` renders into keys, new and stored (what
        the rules ask key material for before the commit is planned: the unique rule's
        MACs); none by default."""
        return ()

    def _finish(self, response: Mapping[str, Any], single: bool, reads: Reads
                ) -> Reading[None]:
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

    def _renders(self, state: InstanceState | None) -> tuple[Mapping[str, Any], ...]:
        """The object's values, and those stored (``state``)."""
        obj = self.obj
        return (obj.__dict__,) if state is None else (
            obj.__dict__, loaded_values(spec_of(type(obj)), state))

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
    """The state a commit leaves on an object: its item is the item stored (what the
    write left: attributes and map members it did not touch as they were), and
    ``encoded`` exactly ``encode_entity`` of the values written (the item itself unless
    a merge kept stored forms), so the next write of the object plans from it without
    validating the stored item back into an object and encoding that again
    (:func:`stored_values`). It keeps the written values planning reads (unique fields
    and index-key fields), copied: the object's own may change in place before that next
    write."""

    __slots__ = ("encoded", "values")

    def __init__(self, spec: EntitySpec, key: PlainKey, item: Item,
                 values: Mapping[str, Any], version: int | None = None,
                 encoded: Item | None = None) -> None:
        super().__init__(key, item, version, None,
                         spec.members_of(values) if spec.item_tree.holds_lists else None)
        #: the item as dynaorm encodes the values written (the base of the next diff)
        self.encoded: Item = item if encoded is None else encoded
        planned = spec.unique_fields | frozenset(f for idx in spec.indexes
                                                 for f in idx.fields)
        self.values: Mapping[str, Any] = {
            f: v if type(v) in _IMMUTABLE else copy.deepcopy(v)
            for f in planned if f in values for v in (values[f],)} if planned else _NO_VALUES


_IMMUTABLE = frozenset({str, int, bool, float, Decimal, type(None)})
_NO_VALUES: Mapping[str, Any] = MappingProxyType({})  # shared by states that keep none


def loaded_values(spec: EntitySpec, state: InstanceState) -> Mapping[str, Any]:
    """The field values of the stored item of ``state``, in the current layout or the
    previous one (``Meta.previous``)."""
    before = spec.rules.before  # (a stand-in stores no row)
    if before.stores(spec, state.item):  # (a forgotten tenant's: its values but the sealed)
        values: Mapping[str, Any] = before.validate(  # type: ignore[attr-defined]
            spec, state.item, True).__dict__
        return values
    return stored_values(spec, state)[0]


def stored_values(spec: EntitySpec, state: InstanceState) -> tuple[Mapping[str, Any], Item]:
    """The stored field values and the item as dynaorm writes them (the diff's base) of
    the state an update plans from: a loaded item is validated back into an object and
    encoded again (the stored item may hold what the entity does not, or lack defaults);
    a state a commit left has both already."""
    if isinstance(state, Written):
        return state.values, state.encoded
    stored = state.item
    try:
        old_obj = spec.cls.model_validate(spec.decode_fields(stored))
    except (ForgottenError, OffloadError):  # (a value unread: replaced or deleted whole)
        return readable(spec, stored), stored
    item = encode_entity(old_obj, spec, state.version)  # (its ciphertexts: those stored)
    for attr in spec.table.key_roles.keys() - stored.keys():
        item.pop(attr, None)  # an index key written before its index: a change writes it whole
    # encrypted and field-level kinds' attributes as stored: a value stored otherwise than
    # it is stored now (a ciphertext; 0.5's time with an offset in a native key) is written
    # (a time of a stored format is written only when it changed: another writer's text;
    # a rule's references to values kept outside the table: as stored)
    kept = (*spec.encrypted, *(spec.attr(n) for n, k in spec.kinds.items()
                               if not isinstance(k, StoredAs | StoredMembers)),
            *spec.rules.held)
    return old_obj.__dict__, {**item, **{a: stored[a] for a in kept
                                         if a in item and a in stored}}












class ActionBuilder:
    """Collects the actions of one staged write: each with its origin, and the rows the
    entity's rules add to it (:meth:`rows`)."""

    def __init__(self, spec: EntitySpec, owner: PlainKey, index: int) -> None:
        self.spec = spec
        self.owner = owner
        self.index = index
        self.ops: list[Op] = []

    def origin(self, role: Role, fail: Fail, field: str | None = None,
               value: Any = None) -> Origin:
        """The origin of one of this write's actions."""
        return Origin(self.spec.cls, self.owner, role, fail, field, value, self.index)

    def rows(self, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None,
             old_key: PlainKey | None, new_key: PlainKey | None, item: Item | None = None,
             version: int | None = None, history: int = 0, retyped: bool = False) -> Rows:
        """The rows the entity's rules add to the change from ``old`` values stored at
        ``old_key`` to ``new`` ones at ``new_key`` (a :class:`~dynaorm.schema.rules.Change`
        with ``item``, the row written, ``version``, the version row a save writes,
        ``history``, the versions a delete takes with it, and ``retyped``, a move from a
        previous layout in place): their origins name :attr:`owner`."""
        rules = self.spec.rules
        if not rules.adders:
            return NO_ROWS
        return rules.rows(Change(self.spec.cls, self.owner, old, new, old_key, new_key, item,
                                 version, history, retyped, rules, self.index))

    def around(self, rows: Rows, own: Op) -> None:
        """The entity's own row ``own`` with the rows its rules add around it."""
        self.ops += rows.before
        self.ops.append(own)
        self.ops += rows.after
