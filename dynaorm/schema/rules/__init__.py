"""The entity rules: one module per feature an entity declares in ``Meta`` -- unique
attributes (:mod:`~dynaorm.schema.rules.unique`), versioning
(:mod:`~dynaorm.schema.rules.versioned`), encryption (:mod:`~dynaorm.schema.rules.encrypted`),
a previous layout (:mod:`~dynaorm.schema.rules.previous`), timestamps and TTL
(:mod:`~dynaorm.schema.rules.stamps`), write sharding (:mod:`~dynaorm.schema.rules.shards`),
index membership (:mod:`~dynaorm.schema.rules.indexes`) and the row revision
(:mod:`~dynaorm.schema.rules.revision`).

A rule is a :class:`Rule`: built once per entity class from its declaration
(:meth:`Rule.build`, where its definition errors are raised), it answers for its feature at
fixed hook points, each a no-op on :class:`Rule`:

======================  ==============================================================
hook                    what the rule does there
======================  ==============================================================
``attributes``          the attributes it writes on the entity's own rows (a field
                        stored under one is refused when the class is defined)
``store``               a field's value as it is stored, where the rule stores it
                        otherwise than its type does (a TTL field's epoch seconds):
                        asked by every write and condition that encodes one field's
                        value (the first rule that overrides it answers)
``encode``              a row about to be written, at the key it is stored under
``rebind``              a row copied to another key (a version row from the latest copy)
``decode``              a stored row about to be read into an object (rules decode in
                        the reverse of the order they encode: two transforms of one
                        field compose)
``keeps``               whether a row a read returned is one of the entity's results
``refuse``              a use of a field it cannot allow (a condition, an update action,
                        a projection): raises
``redact``              a field value about to go into a message, a log record or a span
``stamp``               the field values a write of an object sets on it (the times
                        ``Meta.timestamps`` declares): the write encodes a copy carrying
                        them and puts them on the object once it succeeded
``pin``                 the ``(field, value)`` pairs of the entity's own row that a write
                        planned on it as loaded (at a version) holds to that load: its
                        condition (still stored so), the caller's If-Match (the object's
                        value set otherwise refuses the write), an update planned as a
                        save carries them (the versioned rule's ``version``)
``prepare``             what it needs before rows are decoded, or before the entity's
                        rows are encoded (key material), as protocol steps, so that each
                        is a request of the client: every read runs it on the rows it
                        is about to decode, every commit on the stored items its writes
                        are planned on
``prepare_write``       what it reads before one write of the entity is planned (a
                        :class:`Change`), as protocol steps (a ``Query`` the client sends,
                        its answer sent back), returning what the write is planned on:
                        the versioned rule's last version kept for a new object's key
``rows``                the rows it adds to one write of the entity (a :class:`Change`):
                        write records (unique guards, version rows) placed before or
                        after the entity's own row (:class:`Rows`); what a write costs
                        and the row kinds the model lists are derived from it
``explain``             what a failed condition on one of the rows it added means
                        (:class:`Explained`), from the stored row the failure returned
``export``              what an export writes of a stored row (``None``: not a row to
                        export)
``place``               a write record of a planned commit (every row built) with the
                        values the rule keeps outside the table put there: a reference
                        in their place (its ``decode`` puts them back, first of all)
``holds``               the attributes a write that replaces or deletes the entity's row
                        conditions on as read (so that the rule knows what it replaced)
``publish``             what the rule does outside the table once a commit is planned,
                        before it is sent (protocol steps: the uploads)
``release``             what it does once the commit's outcome is known (applied: remove
                        what no row references any more; not applied: what it published)
======================  ==============================================================

:class:`Rules` resolves an entity's rules once into one tuple per hook, holding only the
rules that override it: a plain entity's tuples are empty, so the hot paths make no call.

Every rule also says, in :attr:`Rule.answers`, what it means on every surface of
:data:`SURFACES` (a save, a query, ``values()``, a stream, a migration, an export, an
error message...). The interaction matrix test (``tests/system/test_rule_matrix.py``)
checks every registered rule has an answer for every surface, and runs every rule alone
and in pairs on each: a new rule gets its row there by existing.

A rule module imports only from :mod:`dynaorm.values`, the schema's leaves
(:mod:`~dynaorm.schema.table`, :mod:`~dynaorm.schema.templates`) and other rules; it is
handed what it needs of its entity when it is built, so the spec and the entity, which
import the rules, are never imported back.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Final, NamedTuple, TypeVar

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError, ForgottenError, OffloadError
from dynaorm.schema.table import TableSchema
from dynaorm.schema.templates import KeyTemplate
from dynaorm.values.codec import encode_value
from dynaorm.values.expressions import Condition, raw_eq
from dynaorm.values.records import Fail, Op, Origin, Role
from dynaorm.values.state import InstanceState

R = TypeVar("R", bound="Rule")
#: the field values a commit's writes of an entity render into keys, new and stored (asked
#: for by :meth:`Rule.prepare` once the rules before it have prepared: stored values are
#: decoded then)
Values = Callable[[], Sequence[Mapping[str, Any]]]

#: every surface a rule answers for (its :attr:`Rule.answers`)
SURFACES: Final = ("save", "update", "delete", "get", "query", "values", "scan", "stream",
                   "history", "migrate", "backfill", "check", "export", "search", "messages",
                   "logs", "spans")
#: every rule class by name, in the order an entity's rules run (registration order)
RULES: dict[str, type[Rule]] = {}


def register_rule(cls: type[R]) -> type[R]:
    """Register a rule class (a class decorator; ``dynaorm.register_rule``): every entity
    class defined from now on asks it to build (:meth:`Rule.build`), in the order of
    :attr:`Rule.order`, then of registration. A rule registered under the name of another
    replaces it."""
    RULES[cls.name] = cls
    return cls


#: :func:`register_rule` (the name dynaorm's own rules use)
register = register_rule


def no_values() -> tuple[Mapping[str, Any], ...]:
    """No field values (what a read, or a commit writing none, renders)."""
    return ()


def build_rules(decl: Declaration) -> Rules:
    """The rules of the entity ``decl`` declares, built in order."""
    built: dict[str, Rule] = {}
    for kind in sorted(RULES.values(), key=lambda k: k.order):
        rule = kind.build(dataclasses.replace(decl, built=built))
        if rule is not None:
            built[rule.name] = rule
    return Rules(tuple(built.values())) if built else NO_RULES


@dataclass(frozen=True)
class Declaration:
    """What an entity class declares, as a rule reads it when it is built."""

    cls: type[Any]
    owner: str
    meta: Mapping[str, Any]
    table: TableSchema
    field_names: frozenset[str]
    #: field name -> stored attribute name, for the fields stored under an alias
    renames: Mapping[str, str]
    pk: KeyTemplate
    sk: KeyTemplate | None
    type_name: str
    #: the entity's template indexes (:class:`~dynaorm.schema.rules.indexes.IndexKeys`)
    indexes: tuple[Any, ...] = ()
    #: ``Meta.shards`` read into one rule per target (see :mod:`~dynaorm.schema.rules.shards`)
    shard_rules: Mapping[str, Any] = field(default_factory=dict)
    #: rules built before this one, by name
    built: Mapping[str, Rule] = field(default_factory=dict)
    #: field name -> its value tree (:mod:`dynaorm.values.tree`)
    trees: Mapping[str, Any] = field(default_factory=dict)

    def attr(self, name: str) -> str:
        """The stored attribute name of field ``name``."""
        return self.renames.get(name, name)

    def uncompared(self, kind: str, names: Iterable[str], *keyed: str) -> None:
        """Refuse the fields ``names`` of a rule's ``kind`` (``Compressed``, ``Encrypted``,
        ``Offloaded``: their stored value is not the value) where a stored value is
        compared: a key template, an index's key (a template's, a native index's
        attribute), ``keyed`` (a rule's fields: ``Offloaded``'s unique rules), the table's
        TTL attribute (DynamoDB expires only a number: the row read back past its TTL), a
        versioned entity's ``version`` (its save's condition: every save after the first a
        false conflict), a vector index's field (built before: it reads numbers)."""
        table = self.table
        keys = {*self.pk.fields, *(self.sk.fields if self.sk else ()), *keyed,
                *getattr(self.built.get("vectors"), "names", ()),
                *(f for index in self.indexes for f in index.fields),
                *(n for i in table.indexes if table.native(i) for n in names
                  if self.attr(n) in table.key_names(i))}
        for why, bad in ((" cannot be in a key, an index, a unique rule or a vector index",
                          keys.intersection(names)),
                         (" cannot be the TTL attribute or a versioned entity's version "
                          "(compared as stored)", {n for n in names if self.attr(n) == table.ttl
                                                   or (n == "version" and self.meta.get(
                                                       "versioned"))})):
            if bad:
                raise DynaormError(f"{self.owner}: {kind} {sorted(bad)}{why}")


def refuse_stored(owner: str, kind: str, field: str, use: str, why: str) -> None:
    """Refuse a ``use`` (a condition, a key, a path, an update's ``add``...) of ``field``,
    of a rule's ``kind`` whose stored value is not the value (``why``): only a value set
    (sealed, compressed, placed as a save's), removed or projected is taken."""
    if use not in ("set", "set_default", "remove", "projection"):
        what = {"condition": "a condition or filter", "key": "a key or index",
                "path": "a nested path"}.get(use, f"an update's {use}()")
        raise DynaormError(f"{owner}.{field}: {'an' if kind[0] in 'EO' else 'a'} {kind} field "
                           f"cannot be in {what} ({why}; save the object)")


class Unplaced(LookupError):
    """A value a placing rule keeps outside the table (:meth:`Rule.place`) is not at
    hand where a row is decoded: the read or write did not prepare its rows first (a
    programming error, never a request made there)."""


class Shape(str):
    """A placeholder value: what stands in a key for a field (``{email}``) or a version
    number (``<n>``) when a write is described rather than made (the model's row kinds,
    the rows a kind of write adds). A rule renders it as it is: never normalised, never
    turned into a MAC, whatever a template's format asks."""

    __slots__ = ()

    def __format__(self, spec: str) -> str:
        return str(self)


@dataclass(frozen=True, slots=True)
class Change:
    """One write of an entity, as the rules that add rows to it read it (SQLAlchemy's
    ``DependencyProcessor.process_saves`` gets the same: the states of a flush): the field
    values before and after, the keys of its row before and after, and what the write
    itself makes of its row."""

    #: the entity class (the origins of the rows name it)
    entity: type[Any]
    #: the key the origins of the rows name (the row the write reports on)
    owner: PlainKey
    #: the field values stored before (``None``: nothing stored: an insert)
    old: Mapping[str, Any] | None
    #: the field values written (``None``: the row goes: a delete)
    new: Mapping[str, Any] | None
    #: the key of the row before (``None``: none) and after (``None``: none)
    old_key: PlainKey | None
    new_key: PlainKey | None
    #: the row as it is written (encoded; ``None``: a delete)
    item: Item | None = None
    #: the version a save writes a version row of (``None``: none)
    version: int | str | None = None
    #: a delete: the stored versions whose rows go with it (1 to ``history``; 0: none)
    history: int = 0
    #: the row's type name changed (a move from a previous layout in place)
    retyped: bool = False
    #: the entity's rules (a row copied from the written one is rebound by each)
    rules: Rules | None = None
    #: the place of the staged write in its commit (the origins carry it)
    staged: int = 0

    def origin(self, role: Role, fail: Fail, field: str | None = None, value: Any = None,
               owner: PlainKey | None = None) -> Origin:
        """The origin of a row a rule adds to this write (``owner``: another key than
        :attr:`owner` for it to name)."""
        return Origin(self.entity, self.owner if owner is None else owner, role, fail, field,
                      value, self.staged)


class Rows(NamedTuple):
    """The rows a rule adds to a write, by their place in its request: before the
    entity's own row (a save's version row) or after it (guards, released history)."""

    before: tuple[Op, ...] = ()
    after: tuple[Op, ...] = ()


#: no rows
NO_ROWS: Final = Rows()


class Explained(NamedTuple):
    """What a failed condition on a row a rule added means: the failure it is (which
    may differ from the one planned: a guard that names its claimant refused a change of
    the owner, not a taken value), and the key of the row that holds what was refused
    (a guard's owner; ``None``: none to read)."""

    fail: Fail
    holder: PlainKey | None = None


class KeyLayout(NamedTuple):
    """How the sort keys of an entity's rows are laid out (:attr:`Rule.sort_keys`): reads
    and key conditions ask it, never the rule."""

    #: the prefix of the sort key of the entity's own row (a latest copy's ``v0_``; empty:
    #: the template's key as rendered, and no rows kept beside it: no history)
    latest: str
    #: ``(n, base)`` of a row's sort key (0: the entity's own row; ``n``: the n-th kept
    #: row, a version), ``None``: not one of the layout's
    parse: Callable[[str], tuple[int, str] | None]
    #: the sort keys between which the kept rows (1 and up) of ``base`` lie (in the
    #: history index, with ``indexed``)
    bounds: Callable[[str, bool], tuple[str, str]]
    #: the sort key of row ``n`` of ``base`` (0: the entity's own row)
    key: Callable[[str, int], str]
    #: ``(spec, item, sk)``: the kept row of the encoded ``item`` of ``spec``'s entity
    #: under the sort key ``sk`` (a version row)
    row: Callable[[Any, Item, str], Item]
    #: ``(n, changed)``: the number the next write of a row stored at ``n`` (0: none
    #: stored, or a kept history's last) writes, ``changed``: it changes the row (a
    #: version's next; ``None``: the rows are not numbered)
    next: Callable[[int, bool], int | None]


class Before:
    """Where an entity's rows were stored before a design change (:attr:`Rules.before`):
    the previous-layout rule's :class:`~dynaorm.schema.rules.previous.Layout`, or this
    stand-in where the entity declares none, which holds no row (no old key, no old row),
    so a phase asks either the same way."""

    __slots__ = ()
    #: the type name the old rows were stored under (the stand-in's: none, ``""``)
    type_name: str
    #: the partition key templates the old rows were stored under (the stand-in's: none)
    pks: tuple[KeyTemplate, ...] = ()

    def key(self, values: Mapping[str, Any], owner: str, version: int | None = None
            ) -> PlainKey | None:
        """The old table key of the entity with ``values`` (``version``: that version
        row's; ``None``: no old key)."""
        return None

    def owns(self, item: Item | None) -> bool:
        """Whether ``item`` is stored in this (old) layout."""
        return False

    def stores(self, spec: Any, item: Item | None) -> bool:
        """Whether ``item`` is a row (a latest copy or a version row) of this layout, not
        of ``spec``'s current one."""
        return False

    def values(self, spec: Any, item: Item) -> dict[str, Any]:
        """The field values of ``item``, a row of this layout, as ``spec``'s class reads
        them (the stand-in holds none: asked, it raises)."""
        raise DynaormError(f"{spec.name} declares no previous layout")

    def vacant(self, spec: Any, values: Mapping[str, Any], key: PlainKey,
               origin: Callable[[Role, Fail], Origin]) -> tuple[Op, ...]:
        """A new object's check that no live row of it is stored in this layout (at its
        old key, other than ``key``: it would be the same entity twice, its old row and
        guards left behind for good): an insert fails with ItemExistsError there as on its
        current key (``origin``: the origin of a row of the write, by role and
        failure)."""
        return ()

    def refuse(self, spec: Any, state: Any) -> None:
        """Raise if ``state`` is a row of this layout: an update by key would miss it (or
        an upsert store it twice), one of an object read from it would write the old row
        under the current names (a row of neither layout)."""

    def save(self, spec: Any, entry: Any, state: Any, index: int, kit: Writing
             ) -> Moved | None:
        """The plan of ``entry``, a save (``obj``, ``overwrite``, ``condition``) staged at
        ``index``, when ``state`` is a row of this layout: a move (``None``: not one of
        its rows, the save is planned as any)."""
        return None

    def delete(self, spec: Any, entry: Any, state: Any, index: int, kit: Writing
               ) -> list[Op] | None:
        """The actions of ``entry``, a delete (``obj``, ``history``, ``condition``), when
        ``state`` is a row of this layout (``None``: not one of its rows)."""
        return None

    def stored_now(self, spec: Any, state: Any, key: PlainKey, kit: Fetching
                   ) -> Generator[Any, Any, Any]:
        """What an overwrite of an object in ``state`` (``None``: new, at ``key``), or a
        delete by key, is planned on: the row stored now, read consistently, as a state
        (``None``: none; where a value cannot be read, the row as read: :func:`readable`).
        A previous layout reads an object read from it under either layout
        (:meth:`either`)."""
        at = key if state is None else state.key
        item = yield from kit.item(spec.table, at)
        if item is None:
            return None
        try:
            return spec.cls._from_item(item)._dynaorm_state
        except (ForgottenError, OffloadError):  # (replaced or deleted whole, never read:
            # conditioned on its references as read)
            return InstanceState(at, item, readable(spec, item).get("version"))

    def either(self, spec: Any, old_key: PlainKey, key: PlainKey, kit: Fetching
               ) -> Generator[Any, Any, Any]:
        """The state of the entity stored at ``old_key`` in this layout or at ``key`` in
        the current one, read together (``None``: neither; the stand-in reads nothing)."""
        return None
        yield  # (reads nothing)

    def read(self, spec: Any, old_key: PlainKey, key: PlainKey, found: Item | None,
             kit: Fetching) -> Generator[Any, Any, Any]:
        """After a ``get`` missed ``key`` (``found``: what it read there), the object
        under either layout (``old_key``: its key in this one), or ``None``."""
        return None
        yield  # (reads nothing)

    def owner(self, spec: Any, item: Item | None, kit: Fetching) -> Generator[Any, Any, Any]:
        """An object read from ``item`` (a ``get``'s, or the owner row a unique guard
        names), ``None`` when it is no live row of the entity (a previous layout: in
        either layout)."""
        if item is not None and spec.owns(item) and spec.fits(item):
            yield from kit.prepare((spec,), (item,))
            return spec.cls._from_item(item, spec)
        return None


def readable(spec: Any, item: Item) -> dict[str, Any]:
    """The field values of the stored ``item``; where some cannot be read (sealed for a
    forgotten tenant; kept in S3, the object gone), every other one, unvalidated: all a
    write replacing or deleting the row needs (none of those is in a key or an index; a
    unique one's guard, keyed by a MAC no one can open, is left to ``check --repair``)."""
    try:
        return spec.cls.model_validate(spec.decode_fields(item)).__dict__  # type: ignore[no-any-return]
    except (ForgottenError, OffloadError) as exc:
        unread = spec.rules.held if isinstance(exc, OffloadError) else spec.encrypted
    return spec.cls.model_construct(**spec.decode_fields(  # type: ignore[no-any-return]
        {a: v for a, v in item.items() if a not in unread})).__dict__


class Writing(NamedTuple):
    """What a rule that plans a whole write (a previous layout's move) is handed by the
    phase that asks it, and cannot import: the entity's encoder."""

    #: ``(obj, spec, version, key)``: the stored item of ``obj``
    encode: Callable[..., Item]


class Fetching(NamedTuple):
    """What a rule that reads an entity's rows whole (a previous layout's old row with its
    version rows) is handed by the phase that asks it, and cannot import: the reads, as
    protocols, and what decodes and settles an object."""

    #: ``(table_name, keys, consistent=)``: the items at the wire ``keys`` by key id
    batch: Callable[..., Generator[Any, Any, Any]]
    #: ``(spec, keys)``: the items at ``keys`` by key id, read at one instant
    snapshot: Callable[..., Generator[Any, Any, Any]]
    #: ``(specs, items)``: what the entities' rules need before ``items`` are decoded
    prepare: Callable[..., Generator[Any, Any, None]]
    #: ``(obj, state)``: the object's state set
    settle: Callable[[Any, Any], None]
    #: ``(table, key)``: the item at ``key``, read consistently and prepared
    item: Callable[..., Generator[Any, Any, Any]]


class Moved(NamedTuple):
    """A save a rule planned whole: its actions, the row it leaves (its key, item, field
    values and version) and the times it set on its object."""

    ops: list[Op]
    key: PlainKey
    item: Item
    values: Mapping[str, Any]
    version: int | None
    stamps: tuple[tuple[str, Any], ...]
    #: the row as dynaorm encodes its values (``item`` keeps stored forms): the base of
    #: the object's next save (``None``: ``item`` itself)
    encoded: Item | None = None


class _NoBefore(Before):
    __slots__ = ()
    type_name = ""


#: no previous layout
NO_BEFORE: Final[Before] = _NoBefore()


class Rule:
    """One entity feature: built from an entity's declaration, answering at fixed hook
    points (each a no-op here; see the module's table)."""

    __slots__ = ()
    name: ClassVar[str]
    """The rule's name (the ``Meta`` option it reads, where there is one); unique in the
    registry."""
    answers: ClassVar[Mapping[str, str]] = {}
    """What the rule means on each surface of :data:`SURFACES` (the interaction matrix
    asks every rule for each)."""
    order: ClassVar[int] = 50
    """Where it is built and runs among an entity's rules (lower first; then registration
    order): a rule may read the rules built before it (:attr:`Declaration.built`). Rules
    encode in this order and decode in the reverse order."""
    transforms: ClassVar[bool] = True
    """Whether :meth:`decode` changes the values of fields (a transform: encryption,
    compression, most rules a user writes): a read then never validates the entity's rows
    straight from their wire form, and a loaded object's snapshot keeps what was stored
    (``False``: its decode only puts back attributes a row keeps aside)."""
    options: ClassVar[tuple[str, ...]] = ()
    """The ``Meta`` options the rule reads besides dynaorm's own (``("audited",)``): an
    entity class may set them once the rule is registered."""
    own: ClassVar[Role | None] = None
    """The role of the entity's own row where the rule applies (``None``: it says nothing;
    a versioned entity's own row is its latest copy)."""
    sort_keys: ClassVar[KeyLayout | None] = None
    """How the sort keys of the entity's rows are laid out where the rule keeps more
    than one row of it (``None``: it says nothing; the versioned rule's version keys)."""
    before: Before | None = None
    """The layout the entity's rows were stored in before a design change, where the
    rule keeps one (``None``: it says nothing; the previous-layout rule's)."""

    @classmethod
    def build(cls, decl: Declaration) -> Rule | None:
        """The rule of the entity ``decl`` declares (``None``: the entity does not use
        it); a definition error raises here."""
        return None

    def attributes(self) -> frozenset[str]:
        """The attributes this rule writes on the entity's own rows."""
        return frozenset()

    def store(self, name: str, value: Any, owner: str) -> Any:
        """``value`` of field ``name`` as it is stored, before it is encoded (a TTL
        field's epoch seconds; ``owner``: the entity's name, for a refusal's message): by
        default as its type stores it, itself."""
        return value

    def encode(self, item: Item, key: PlainKey, stored: Item | None) -> None:
        """Change ``item``, about to be written at ``key``, in place (``stored``: the
        item as loaded, at the same key, where known)."""

    def rebind(self, row: Item, source: Item) -> None:
        """Change ``row``, a copy of the encoded ``source`` under another key (a version
        row of a latest copy), in place."""

    def decode(self, item: Item) -> Item:
        """``item``, a stored row, as the fields are read from it."""
        return item

    def keeps(self, item: Item) -> bool:
        """Whether a row a read returned is a result (asked by every read path: a get, a
        query, a scan, a search, history, ``values()``, a count; a read of the entity then
        reads whole rows, counts them on the client, and never reads an answer's bytes
        straight into objects). A row past the table's TTL is none, whatever this says."""
        return True

    def refuse(self, use: str, name: str) -> None:
        """Raise if field ``name`` cannot be used as ``use`` (``"condition"``,
        ``"projection"``, ``"key"``, or an update action: ``"set"``, ``"add"``, ...)."""

    def redact(self, name: str, value: Any) -> Any:
        """``value`` of field ``name`` as a message, log record or span may show it."""
        return value

    def stamp(self, obj: Any, insert: bool) -> tuple[tuple[str, Any], ...]:
        """The ``(field, value)`` pairs a write of ``obj`` sets on it (``insert``: the
        write inserts it), as :mod:`dynaorm.values.times` moves them: nothing is changed
        on ``obj`` here."""
        return ()

    def pin(self, version: int) -> tuple[tuple[str, Any], ...]:
        """The ``(field, value)`` pairs of the entity's own row that a write planned on it
        as loaded at ``version`` holds to that load: the write is conditioned on them
        still stored, a value the caller set otherwise on the object refuses it (an
        If-Match), an update planned as a save carries them."""
        return ()

    def prepare(self, items: tuple[Item, ...], writing: bool,
                values: Values = no_values) -> Generator[Any, Any, None]:
        """What this rule needs before the stored rows ``items`` are decoded (any rows a
        read returned or a write is planned on: skip what is not the entity's), and, with
        ``writing``, before rows of the entity are encoded or planned, asked for as
        protocol steps (a ``Call`` each: the client sends it as any request). Run by every
        read before it decodes and by a commit before it plans, once (:func:`~dynaorm.
        schema.entity.prepare_rows`); ``decode``, ``encode`` and ``rows`` then only read
        what it got. ``values()``: the field values the commit's writes of the entity
        render into keys (new and stored: the unique rule's MACs), decoded once the rules
        before this one have prepared."""
        return
        yield  # (asks for nothing)

    def prepare_write(self, change: Change) -> Generator[Any, Any, Any]:
        """What this rule reads first for ``change``, a write of the entity about to be
        planned, before its rows are (:meth:`rows`): the reads asked for as protocol steps
        (a ``Call`` each, e.g. a ``Query``: the client sends it and sends its answer back
        here), what they found returned for the write to be planned on (``None``: nothing
        to read). The versioned rule's: the last version a new object's kept history ends
        at (its next row continues it). Pure but for its steps: one implementation for
        sync and async sessions. Asked today of an insert planned on what its key keeps
        (after its first version row was refused, or in a migration window); the first
        rule that overrides it answers."""
        return
        yield  # (asks for nothing)

    def rows(self, change: Change) -> Rows:
        """The rows this rule adds to ``change``, a write of the entity, as write records
        (each with its :class:`~dynaorm.values.records.Origin`: :meth:`Change.origin`).
        The rows a kind of write costs and the row kinds the model lists are this hook
        run on a described write (its values :class:`Shape` s)."""
        return NO_ROWS

    def reads(self, touched: frozenset[str]) -> bool:
        """Whether an update by key changing the fields ``touched`` is planned on the
        stored row, read first (as a save), for the rows this rule adds to it (or what it
        holds). Asked only of a rule that adds rows (overrides :meth:`rows`) or overrides
        this: by default always, since its rows may follow any stored value."""
        return True

    def explain(self, origin: Origin, reason: str, stored: Item | None) -> Explained | None:
        """What the failed condition (cancellation reason code ``reason``) of the row
        with ``origin`` means, ``stored``: the row as the failure returned it (``None``:
        not returned); ``None``: not a row of this rule's."""
        return None

    def export(self, item: Item) -> Item | None:
        """What an export writes of the stored row ``item`` (``None``: nothing)."""
        return item

    def place(self, ops: Sequence[Op], known: Callable[[PlainKey], Item | None]
              ) -> list[Op]:
        """``ops``, the write records of the entity's rows in a commit being planned
        (every row of it built: version rows, guards, a move's), with the values this rule
        keeps outside the table put there, a reference in their place (``known``: the
        item stored at a key as the plan read it, ``None``: not read), checked against
        DynamoDB's limits afterwards. A rule that places values decodes them back in
        :meth:`decode`, before every other rule decodes (whatever its :attr:`order`; a
        value not at hand raises :class:`Unplaced`); the other rules' ``prepare``,
        ``encode`` (its ``stored``) and ``decode`` see rows with the values put back.
        By default ``ops`` as they are."""
        return list(ops)

    def holds(self) -> frozenset[str]:
        """The attributes of the entity's row that a write replacing or deleting it (an
        overwrite, a key move, a delete) conditions on as it read them, so that what the
        rule's :meth:`publish` is told was replaced was (the references of values kept
        outside the table)."""
        return frozenset()

    def publish(self, ops: Sequence[Op], known: Callable[[PlainKey], Item | None]
                ) -> Generator[Any, Any, Any]:
        """What the rule does outside the table once a commit is planned, before it is
        sent, for ``ops`` (the plan's write records of the entity) and ``known`` (the item
        stored at a key as the plan read it, ``None``: not read), as protocol steps (the
        uploads of offloaded values: a ``Call`` each, the client sends them); returns
        what :meth:`release` is handed. A failure raises before anything is sent, after
        undoing what it did."""
        return None
        yield  # (does nothing)

    def release(self, published: Any, applied: bool | None) -> Generator[Any, Any, None]:
        """What the rule does once the outcome of the commit it published for is settled
        (``published``: what :meth:`publish` returned; ``applied``: the commit applied,
        ``False``: it proved not to, ``None``: its outcome stayed unknown, but nothing of
        it applies any more): remove what no row references any more, or what it
        published for a commit that did not apply (unknown: as a fresh read of its rows
        shows). Not asked of a commit closed while it was sending (what it published
        stays: ``dynaorm check`` reports it). A failure here is logged, never raised: the
        commit's outcome stands."""
        return
        yield  # (does nothing)


class Rules:
    """An entity's rules, resolved once into one tuple per hook (``encoders``,
    ``decoders``, ...): only the rules whose class overrides a hook are in its tuple, in
    the order they run (``decoders``: the reverse of ``encoders``' order, so transforms of
    one field are undone last first); ``transforms``: whether a decoder changes values
    (:attr:`Rule.transforms`)."""

    __slots__ = ("adders", "all", "attributes", "before", "by_name", "decoders", "encode_raw",
                 "encode_view", "encoders", "explainers", "exporters", "held", "keepers", "keyed",
                 "opaque", "own", "pin",
                 "placers", "places", "prepare_write", "prepared_first", "preparers", "publishers",
                 "readers",
                 "reads_insert", "rebinders", "redactors", "refusers",
                 "sort_keys", "stampers", "store", "transforms", "unplacers")

    def __init__(self, rules: tuple[Rule, ...]):
        self.all = rules
        self.by_name: Mapping[str, Rule] = {r.name: r for r in rules}
        self.attributes: frozenset[str] = frozenset().union(*(r.attributes() for r in rules))
        #: a field's value as stored (:meth:`Rule.store` of the rule that overrides it)
        self.store = next(iter(self._hooked("store")), Rule().store)
        self.encoders = self._hooked("encode")
        self.rebinders = self._hooked("rebind")
        self._placing(rules)
        self.keepers = self._hooked("keeps")
        self.refusers = self._hooked("refuse")
        self.redactors = self._hooked("redact")
        self.stampers = self._hooked("stamp")
        #: the :meth:`Rule.pin` of the rule that pins the entity's own row (none: nothing)
        self.pin = next(iter(self._hooked("pin")), Rule().pin)
        #: the role of the entity's own row (:attr:`Rule.own`; a plain row by default)
        self.own: Role = next((r.own for r in rules if r.own is not None), Role.ROW)
        #: the layout of its rows' sort keys (:attr:`Rule.sort_keys`; plain by default)
        self.sort_keys: KeyLayout = next(
            (r.sort_keys for r in rules if r.sort_keys is not None), PLAIN_KEYS)
        #: the layout its rows had before (:attr:`Rule.before`; a stand-in: none)
        self.before: Before = next((r.before for r in rules if r.before is not None),
                                   NO_BEFORE)
        #: the :meth:`Rule.prepare_write` of the rule that reads before a write is planned
        #: (the rule that numbers the rows: the versioned rule; none: it reads nothing)
        self.prepare_write = next(iter(self._hooked("prepare_write")), Rule().prepare_write)
        #: whether an insert asks :attr:`prepare_write` before it is planned, not only once
        #: its first row was refused: a rule reads, and rows it continues may be kept where
        #: no condition of the insert looks (under the previous layout's key)
        self.reads_insert = bool(self._hooked("prepare_write")) and self.before is not NO_BEFORE
        self.adders = self._hooked("rows")
        #: the ``reads`` of the rules that add rows, or that say when an update by key
        #: is read first (:meth:`Rule.reads`)
        self.readers = tuple(r.reads for r in rules if type(r).rows is not Rule.rows
                             or type(r).reads is not Rule.reads)
        self.explainers = self._hooked("explain")
        self.exporters = self._hooked("export")

    def _placing(self, rules: tuple[Rule, ...]) -> None:
        """The hooks of the rules that keep values outside the table (:meth:`Rule.place`):
        their decoders put the values back first and they prepare first (the rows the
        other rules see), and an encoder of theirs sees a stored row as stored."""
        placing = {id(r) for r in rules if type(r).place is not Rule.place}
        self.placers = self._hooked("place")
        #: for each of :attr:`encoders`: whether it is a placing rule's (it sees the row
        #: as stored, its references)
        self.encode_raw = tuple(_owner(e) in placing for e in self.encoders)
        #: whether an encoder sees the stored row with those values put back (one of a
        #: rule that keeps none outside: it may change any value)
        self.encode_view = not all(self.encode_raw)
        decoders = self._hooked("decode")[::-1]
        self.unplacers = tuple(d for d in decoders if _owner(d) in placing)
        #: the decoders of the rules that transform values in the row itself
        self.opaque = tuple(d for d in decoders if _owner(d) not in placing)
        self.decoders = (*self.unplacers, *self.opaque)
        # (a placing rule's references are maps, which no fast read takes: rows holding
        # none read as if it had no decode)
        self.transforms = _transforming(rules, placing)
        #: the attributes a write replacing or deleting the row conditions on as read
        self.held: frozenset[str] = frozenset().union(*(r.holds() for r in rules))
        self.publishers = self._hooked("publish")
        #: whether a rule does something outside the table (a placing rule: ``Offloaded``;
        #: or one that publishes): a commit of no such entity asks nothing of them
        self.places = bool(self.placers or self.publishers)
        prepares = self._hooked("prepare")
        first = tuple(p for p in prepares if _owner(p) in placing)
        self.preparers = (*first, *(p for p in prepares if _owner(p) not in placing))
        #: how many of :attr:`preparers` are placing rules' (they come first)
        self.prepared_first = len(first)
        #: whether a rule that places nothing prepares (key material): a commit of the
        #: entity asks it before it plans; a placing rule's (what a stored row keeps
        #: outside, fetched) only once its plan finds a value not at hand (:class:`Unplaced`)
        self.keyed = len(self.preparers) > len(first)

    def _hooked(self, hook: str) -> tuple[Callable[..., Any], ...]:
        base = getattr(Rule, hook)
        return tuple(getattr(r, hook) for r in self.all if getattr(type(r), hook) is not base)

    def get(self, kind: type[R]) -> R | None:
        """The entity's rule of class ``kind``, if it has one."""
        found = self.by_name.get(kind.name)
        return found if isinstance(found, kind) else None

    def __bool__(self) -> bool:
        return bool(self.all)

    def encode(self, item: Item, key: PlainKey, stored: Item | None = None) -> None:
        """Every rule's :meth:`Rule.encode` of ``item``, in order (``stored`` with the
        values a placing rule keeps outside put back where it holds them; a placing rule
        sees it as stored, its references)."""
        view = stored if stored is None or not (self.unplacers and self.encode_view) else (
            self.unplace(stored, strict=False))
        for encode, raw in zip(self.encoders, self.encode_raw, strict=True):
            encode(item, key, stored if raw else view)

    def unplace(self, item: Item, strict: bool = True) -> Item:
        """``item`` with the values the placing rules keep outside the table put back
        (``strict=False``: a value not at hand, or gone from where it was kept, is left
        as its reference: the rules after see the row, and ``check`` names it)."""
        for decode in self.unplacers:
            try:
                item = decode(item)
            except (Unplaced, OffloadError):
                if strict:
                    raise
        return item

    def rebind(self, row: Item, source: Item) -> None:
        """Every rule's :meth:`Rule.rebind` of ``row``, copied from ``source``; a value a
        placing rule keeps outside (an unchanged value kept in S3, its reference copied)
        put back first, to be bound anew (and placed anew) as any other."""
        if self.unplacers and self.rebinders:
            row.update(self.unplace(row))
        for rebind in self.rebinders:
            rebind(row, source)

    def decode(self, item: Item) -> Item:
        """``item`` through every rule's :meth:`Rule.decode`, in reverse order (the last
        rule to encode decodes first)."""
        for decode in self.decoders:
            item = decode(item)
        return item

    def keeps(self, item: Item) -> bool:
        """Whether every rule keeps ``item`` as a result."""
        return all(keep(item) for keep in self.keepers)

    def refuse(self, use: str, name: str) -> None:
        """Every rule's :meth:`Rule.refuse` of ``name`` used as ``use``."""
        for refuse in self.refusers:
            refuse(use, name)

    def redact(self, name: str, value: Any) -> Any:
        """``value`` of field ``name`` as every rule lets a message show it."""
        for redact in self.redactors:
            value = redact(name, value)
        return value

    def stamp(self, obj: Any, insert: bool) -> tuple[tuple[str, Any], ...]:
        """Every rule's :meth:`Rule.stamp` of ``obj``, in order."""
        return tuple(pair for stamp in self.stampers for pair in stamp(obj, insert))

    def pinned(self, version: int) -> list[Condition]:
        """The conditions that the entity's own row is still as loaded at ``version``, as
        its rules pin it (:meth:`Rule.pin`: a versioned entity's version; none for a plain
        one)."""
        return [raw_eq(name, encode_value(value)) for name, value in self.pin(version)]

    def prepare(self, items: tuple[Item, ...] = (), writing: bool = False,
                values: Values = no_values) -> Generator[Any, Any, None]:
        """Every rule's :meth:`Rule.prepare`, in order (a protocol): the placing rules'
        first, then the others' on the rows with those values put back."""
        placed = self.prepared_first
        for at, prepare in enumerate(self.preparers):
            if placed and at == placed and items:  # (the placing rules' are first)
                items = tuple(self.unplace(i, strict=False) for i in items)
            yield from prepare(items, writing, values)

    def rows(self, change: Change) -> Rows:
        """Every rule's :meth:`Rule.rows` of ``change``, in order: the rows before the
        entity's own, and those after."""
        before = []
        after = []
        for add in self.adders:
            rows = add(change)
            before += rows.before
            after += rows.after
        return Rows(tuple(before), tuple(after))

    def reads(self, touched: frozenset[str]) -> bool:
        """Whether an update by key changing ``touched`` is read first for the rows a rule
        adds (:meth:`Rule.reads` of every rule that adds rows)."""
        return any(reads(touched) for reads in self.readers)

    def explain(self, origin: Origin, reason: str, stored: Item | None) -> Explained:
        """What a failed condition on a row with ``origin`` means: the first rule's that
        owns the row, else what was planned (``origin.fail``)."""
        for explain in self.explainers:
            found: Explained | None = explain(origin, reason, stored)
            if found is not None:
                return found
        return Explained(origin.fail)


def _transforming(rules: tuple[Rule, ...], placing: set[int]) -> bool:
    """Whether a rule of ``rules`` that keeps no value outside (not in ``placing``)
    transforms values in the row when it decodes."""
    return any(r.transforms and type(r).decode is not Rule.decode and id(r) not in placing
               for r in rules)


def _owner(hook: Callable[..., Any]) -> int:
    """The id of the rule a resolved hook (a bound method) belongs to."""
    return id(getattr(hook, "__self__", None))


#: the plain layout: every sort key as its template renders it
PLAIN_KEYS: Final = KeyLayout("", lambda sk: None, lambda base, indexed: (base, base),
                              lambda base, n: base, lambda spec, item, sk: item,
                              lambda n, changed: None)
#: a plain entity's rules (none): shared
NO_RULES: Final = Rules(())
