"""An entity's previous layout (``Meta.previous``): the key templates, type name and stored
attribute names its items had before a design change, and the mapping of an item stored
that way onto the entity as it is now.

``Meta.previous = Previous(pk="USER#{id}", type_name="user", stored_names={"email": "mail"})``
declares it; :func:`previous_layout` checks it once, when the class is defined, into a
frozen :class:`Layout` kept on the spec (``spec.previous``). Pure: ``dynaorm migrate``
(:mod:`dynaorm.jobs.migration`) builds on it.

The migration window's reads are the layout's too, as protocols (the phase hands them its
reads, :class:`~dynaorm.schema.rules.Fetching`): a ``get`` that misses the current key
reads the current and the old key together (one ``TransactGetItems``: an item a mover moves
between the two reads is still found, under one layout or the other; :meth:`Layout.read`),
``find`` reads the owner a guard names in either layout (:meth:`Layout.owner`), and an
object found the old way is read with its old version rows (:meth:`Layout.moved`), which
a later write moves with it. Queries are not covered: an old-layout item lives under its
old partition key (or its old type name); use ``get`` or run ``dynaorm migrate`` first.

A write of an object read from the old layout (its state a
:class:`~dynaorm.values.state.MovedState`: the old row as stored, and a versioned entity's
old version rows) is planned here (:meth:`Layout.save`, :meth:`Layout.delete`, asked by
every save and delete; the phase hands them its encoder, :class:`~dynaorm.schema.rules.
Writing`). Saving it plans a *move*, in one transaction: the old row is deleted on the
condition that it is still exactly as read, the current row is put on the condition that
nothing is there yet, each unique guard is re-pointed at the new key (on the condition that
it still names the old one), and a versioned entity's version rows are deleted under the old
key and put under the new one. Deleting it deletes the old row (and its guards, and its
history when asked). The session's writes and ``dynaorm migrate`` plan moves here: there
is one move.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from dynaorm._types import Item, PlainKey
from dynaorm.errors import (
    DynaormError,
    ForgottenError,
    ItemDecodeError,
    KeyTemplateError,
    TransactionTooLargeError,
)
from dynaorm.protocol.steps import call
from dynaorm.schema.described import described
from dynaorm.schema.rules import (
    Before,
    Change,
    Declaration,
    Fetching,
    Moved,
    Rule,
    Writing,
    register,
)
from dynaorm.schema.rules.versioned import LATEST_PREFIX, parse_version_sk, version_sk
from dynaorm.schema.table import TableSchema
from dynaorm.schema.templates import SHARD_FIELD, KeyTemplate, literal_outranks, parse_keys
from dynaorm.values.codec import encode_value
from dynaorm.values.expressions import (
    Condition,
    F,
    all_of,
    exists,
    free,
    not_exists,
    raw_eq,
    rename_paths,
    stored_as,
)
from dynaorm.values.keys import key_id, key_order, key_value, named, wire_key
from dynaorm.values.merge import merge_items
from dynaorm.values.records import ConditionCheck, Delete, Fail, Op, Origin, Put, Role
from dynaorm.values.state import MovedState, undeclared
from dynaorm.values.times import stamped
from dynaorm.values.ttl import expired

#: DynamoDB's limit of actions in one transaction: a move must fit in it
MAX_MOVE_ACTIONS = 100
#: version rows one history batch moves (two actions each, and one check)
HISTORY_BATCH = 24


@dataclass(frozen=True)
class Previous:
    """``Meta.previous``: what changed in an entity's layout, the old values only.

    ``pk`` / ``sk``: the old key templates (``None``: unchanged); ``type_name``: the old
    type name (``None``: unchanged); ``stored_names``: field name -> the attribute name it
    was stored under (fields left out were stored under their current name). Index keys
    need no entry: every move writes the current ones.
    """

    pk: str | None = None
    """The old partition key template (``None``: unchanged)."""
    sk: str | None = None
    """The old sort key template (``None``: unchanged)."""
    type_name: str | None = None
    """The old type name (``None``: unchanged)."""
    stored_names: Mapping[str, str] = field(default_factory=dict)
    """Field name -> the attribute name it was stored under (fields left out kept their name)."""


@dataclass(frozen=True)
class Layout(Before):
    """A checked :class:`Previous`: the old layout in full (unchanged parts filled in)."""

    pk: KeyTemplate
    sk: KeyTemplate | None
    type_name: str
    #: old stored attribute name -> field name, for every field
    fields_by_attr: Mapping[str, str]
    table: TableSchema
    versioned: bool
    #: field name -> its old stored attribute name, only where it differs from the field
    #: name (what a caller's condition, written in field names, is judged through on an
    #: old row)
    renames: Mapping[str, str]
    #: the entity's rules' decoders as a row stored in this layout is read, last rule
    #: first (an encrypted value opened under its old attribute name, bound to the old
    #: row's key)
    decoders: tuple[Callable[[Item], Item], ...] = field(default=(), compare=False)

    @property
    def pks(self) -> tuple[KeyTemplate, ...]:  # type: ignore[override]
        return (self.pk,)

    def key(self, values: Mapping[str, Any], owner: str, version: int | None = None
            ) -> PlainKey:
        """The old table key of the entity with ``values`` (latest copy or version)."""
        key = {self.table.pk: self.pk.render(values, owner)}
        if self.sk is not None and self.table.sk is not None:
            sk = self.sk.render(values, owner)
            key[self.table.sk] = version_sk(sk, version) if self.versioned else sk
        return key

    def stores(self, spec: Any, item: Item | None) -> bool:
        """(a latest copy or, for a versioned entity, one of its version rows)"""
        if item is None or (spec.owns(item) and spec.fits(item)):
            return False
        sk = self.table.sk
        if self.versioned and sk in item:  # (a version row: as its copy)
            parsed = parse_version_sk(key_value(item[sk]))
            if parsed is not None:
                item = {**item, sk: {"S": version_sk(parsed[1], 0)}}
        return self.owns(item)

    def vacant(self, spec: Any, values: Mapping[str, Any], key: PlainKey,
               origin: Callable[[Role, Fail], Origin]) -> tuple[Op, ...]:
        old_key = self.key(values, spec.name)
        if old_key == key:  # (a move in place: the insert's own condition covers it)
            return ()
        vacant = free(self.table.pk, self.table.ttl)
        type_attr = self.table.type_attribute
        if type_attr is not None:  # (another entity's item at that key is no conflict)
            vacant = vacant | (F(type_attr) != self.type_name)
        # (nor one holding another value of a current key field the old key lacks: an old
        # row of many current keys is the entity at its own only, as `read` has it)
        now, was = ({f for t in pair if t for f in t.fields} for pair in spec.layouts)
        for name in sorted(values.keys() & now - was):
            vacant = vacant | ~raw_eq(self.renames.get(name, name), encode_value(values[name]))
        return (ConditionCheck(old_key, vacant, origin(Role.ROW, Fail.EXISTS)),)

    def owns(self, item: Item | None) -> bool:
        """Whether ``item`` is stored in this (old) layout: the old type name (on a table
        with a type attribute) and a table key the old templates parse; a row the table
        keeps beside its entities' (``dynaorm:...``) never is, whatever its key parses as."""
        if item is None or self.table.own_row(item):
            return False
        type_attr = self.table.type_attribute
        if type_attr is not None:
            return named(item, type_attr) == self.type_name and (
                self.parse_key(item) is not None)
        return self.parse_key(item) is not None and not self._claimed(item)

    def _claimed(self, item: Item) -> bool:
        """Whether ``item``'s key is claimed by a layout whose literal parts outrank this
        layout's templates (:func:`~dynaorm.schema.templates.literal_outranks`): another
        entity's key, fully literal (``OLD#admin``/``PROFILE``, which the old template
        ``OLD#{a}`` renders too) or partly (``OLD#admin``/``P#{c}`` beside the old
        ``OLD#{a}``/``P#{c}``), current or, until migrated, previous. On a table without a
        type attribute the literal wins over a template, under the old layout as under
        the current one, so that row is never read, moved or deleted as this layout's."""
        return any(literal_outranks(pk, sk, self.pk, self.sk) and s.fits_layout(item, pk, sk)
                   for s in (e.__dynaorm_spec__ for e in self.table.entities.values())
                   for pk, sk in s.layouts)

    def version_keys(self, item: Item, owner: str) -> list[PlainKey]:
        """The keys of the old version rows (1..n) of ``item``, this layout's latest copy
        (none: not versioned)."""
        n = int(item.get("version", {}).get("N", "0")) if self.versioned else 0
        values = self.parse_key(item) or {}
        return [self.key(values, owner, v) for v in range(1, n + 1)]

    def parse_key(self, item: Item) -> dict[str, Any] | None:
        """The field values the old key templates hold in ``item``'s table key (``None``:
        the key does not fit the old layout)."""
        return parse_keys(item, [(a, t, LATEST_PREFIX * (self.versioned and a == self.table.sk))
                                 for a, t in ((self.table.pk, self.pk), (self.table.sk, self.sk))
                                 if a and t])

    def translate(self, item: Item, renames: Mapping[str, str]) -> Item:
        """``item`` (stored in the old layout) with its attributes under their current
        names (``renames``: field -> current stored name) and without its table key: what
        the current spec decodes (the key fields come from :meth:`parse_key`)."""
        keys = {self.table.pk, self.table.sk}
        out = {}
        for attr, av in item.items():
            if attr in keys:
                continue
            name = self.fields_by_attr.get(attr)
            out[attr if name is None else renames.get(name, name)] = av
        return out

    def values(self, spec: Any, item: Item) -> dict[str, Any]:
        """The field values of ``item``, stored in this layout (``spec``'s previous one),
        as the current class reads them (plain Python, to validate): attributes under
        their current names, the key fields parsed back from the old key."""
        for decode in self.decoders:  # (the row as stored: its old key, its old names)
            item = decode(item)
        data: dict[str, Any] = spec.decode_fields(self.translate(item, spec.renames),
                                                  decoded=True)
        for name, value in (self.parse_key(item) or {}).items():
            data.setdefault(name, value)
        return data

    def validate(self, spec: Any, item: Item, forgotten: bool = False) -> Any:
        """An object of ``spec.cls`` validated from ``item``, stored in this layout (no
        state set). With ``forgotten``, a forgotten tenant's row is read without its
        sealed values (what a delete plans on: none of them is in a key)."""
        try:
            return spec.cls.model_validate(self.values(spec, item))
        except ForgottenError:
            if not forgotten:
                raise
            names = spec.rules.by_name["encrypted"].fields  # (attribute: field)
            return spec.cls.model_construct(**self.values(spec, {
                a: v for a, v in item.items()
                if self.fields_by_attr.get(a, names.get(a)) not in names.values()}))
        except ValidationError as exc:
            key = spec.stored_key(item)
            raise ItemDecodeError(f"the stored item {key} (previous layout) does not fit "
                                  f"{spec.name}: {exc.errors()[0]['msg']}", entity=spec.cls,
                                  key=key) from exc

    def refuse(self, spec: Any, state: Any) -> None:
        if type(state) is MovedState:
            raise DynaormError(
                f"{spec.name} {state.key} is still stored in its previous layout "
                "(Meta.previous): update() cannot move it; read it, change it and save it "
                "(the save moves it), or run `dynaorm migrate` first")

    def save(self, spec: Any, entry: Any, state: Any, index: int, kit: Writing
             ) -> Moved | None:
        """(a move: see the module)"""
        if type(state) is not MovedState:
            return None
        obj = entry.obj
        needed = move_actions(spec, len(state.history))
        if needed > MAX_MOVE_ACTIONS:
            raise TransactionTooLargeError(
                f"{spec.name} {state.key}: moving it to its current layout with its "
                f"{len(state.history)} version rows takes {needed} actions, more than the "
                f"{MAX_MOVE_ACTIONS} one transaction holds: run `dynaorm migrate`, which "
                "moves a long history in conditioned batches first and then the entity")
        loaded_obj = spec.cls.model_validate(self.values(spec, state.item))
        loaded = loaded_obj.__dict__
        changed = any(obj.__dict__.get(f) != loaded.get(f) for f in spec.field_names
                      if f != "version")
        pairs = spec.rules.stamp(obj, False) if changed else ()
        written = stamped(obj, pairs)
        values = written.__dict__
        version = spec.rules.sort_keys.next(state.version or 0, changed)
        ops = _row_moves(spec, _origin(spec, state.key, index),  # (its old version rows)
                         _history_rows(spec, state.history, kit), in_place=False)
        key = spec.primary_key(values)
        encoded = kit.encode(written, spec, version, key)
        item = {**_kept(spec, state.item), **encoded, **_as_stored(
            spec, self.translate(state.item, spec.renames),
            kit.encode(loaded_obj, spec, None if version is None else state.version, key),
            encoded)}
        # an overwrite of an entity without rules is last writer wins: the old row goes and
        # the new one is put whatever either holds now (with rules, the commit has just
        # read what is stored, under either layout, and the move is planned on that)
        loose = entry.overwrite and not spec.has_rules
        ops.append(_row_delete(spec, state, entry.condition, loose, index))
        own = Put(key, item, None if loose else free(spec.table.pk, spec.table.ttl),
                  _origin(spec, key, index)(spec.rules.own, Fail.EXISTS))
        rows = spec.rules.rows(Change(spec.cls, state.key, loaded, values, state.key, key, item,
                                      version if changed else None,
                                      retyped=self.type_name != spec.type_name,
                                      rules=spec.rules, staged=index))
        return Moved([*ops, *rows.before, own, *rows.after], key, item, values, version, pairs,
                     encoded)

    def delete(self, spec: Any, entry: Any, state: Any, index: int, kit: Writing
               ) -> list[Op] | None:
        """(its old row, as read, its guards and, with ``history=True``, its old version
        rows)"""
        if type(state) is not MovedState:
            return None
        old = self.validate(spec, state.item, forgotten=True).__dict__
        rows = spec.rules.rows(Change(spec.cls, state.key, old, None, state.key, None,
                                      retyped=self.type_name != spec.type_name,
                                      rules=spec.rules, staged=index))
        ops = [*rows.before, _row_delete(spec, state, entry.condition, False, index),
               *rows.after]
        if entry.history and state.version:  # (the version rows it was loaded with)
            base = self.sk.render(old, spec.name) if self.sk else ""  # (unversioned)
            # a version row not read under the old key was moved ahead of its entity (a
            # history batch of `dynaorm migrate`): it is deleted under the current key
            keys, sk = spec.rules.sort_keys, spec.table.sk
            read = {keys.parse(key_value(row[sk])) for row in state.history}
            origin = _origin(spec, state.key, index)(Role.VERSION, Fail.GONE)
            ops += [Delete({**state.key, sk: keys.key(base, n)} if (n, base) in read
                           else spec.primary_key({**old, "version": n}, n), None, origin)
                    for n in range(1, state.version + 1)]
        return ops


    # -- the migration window's reads (the phase hands them its reads, ``Fetching``)

    def moved(self, spec: Any, item: Item, kit: Fetching, forgotten: bool = False
              ) -> Generator[Any, Any, Any]:
        """An object of ``spec.cls`` read from ``item``, a row of this layout, with its
        old version rows (1..n, versioned only: read), marked so that any write of it
        moves it (:class:`~dynaorm.values.state.MovedState`); ``forgotten``: as
        :meth:`validate` has it (a write: one that would seal is refused when it seals)."""
        keys = [wire_key(k) for k in self.version_keys(item, spec.name)]
        found = (yield from kit.batch(spec.table.name, keys, consistent=True)) if keys else {}
        history = tuple(found[key_id(k)] for k in keys if key_id(k) in found)
        yield from kit.prepare((spec,), (item, *history))
        obj = self.validate(spec, item, forgotten)
        kit.settle(obj, MovedState(spec.stored_key(item), item, obj.__dict__.get("version")
                                   if self.versioned else None, history))
        return obj

    def read(self, spec: Any, old_key: PlainKey, key: PlainKey, found: Item | None,
             kit: Fetching) -> Generator[Any, Any, Any]:
        """(the current and the old key read together, at one instant: an item a mover
        moves between ``get``'s first read and this one is still found, under one layout
        or the other)"""
        item = found
        if key_id(old_key) != key_id(key):  # (else only the type or stored names changed)
            both = yield from kit.snapshot(spec, (key, old_key))
            current, item = both.get(key_id(key)), both.get(key_id(old_key))
            if spec.owns(current):  # (and its TTL not passed)
                return (yield from self.owner(spec, current, kit))
        obj = yield from self.owner(spec, item, kit)
        # an old row is the entity at ``key`` only if its current key is ``key``: an old
        # layout with fewer fields holds one row for many current keys (or a row's
        # attributes name another key): that object is not at ``key``, a miss
        return obj if obj is None or _at(spec, obj, key) else None

    def owner(self, spec: Any, item: Item | None, kit: Fetching) -> Generator[Any, Any, Any]:
        """(a guard written before the change names its owner under the old key and type
        name: ``find`` in a migration window)"""
        obj = yield from Before.owner(self, spec, item, kit)
        if obj is None and (item := _live(spec, item)) is not None and self.owns(item):
            obj = yield from self.moved(spec, item, kit)
        return obj

    def stored_now(self, spec: Any, state: Any, key: PlainKey, kit: Fetching
                   ) -> Generator[Any, Any, Any]:
        if type(state) is not MovedState:
            return (yield from Before.stored_now(self, spec, state, key, kit))
        return (yield from self.either(spec, state.key, key, kit, held=True))

    def either(self, spec: Any, old_key: PlainKey, key: PlainKey, kit: Fetching,
               held: bool = False) -> Generator[Any, Any, Any]:
        """The old row, still there: a fresh :class:`~dynaorm.values.state.MovedState`
        (with its version rows), so the write moves it; else the current row (another
        writer moved it): its plain state, so the write replaces it; else ``None``.
        ``held``: the object read from that old row is held (a write of it, its key
        fields maybe changed), else asked by ``key`` (an old row whose object's current
        key is not ``key`` is not the entity at ``key``, as :meth:`read` has it)."""
        if key_id(old_key) == key_id(key):  # only the type or stored names changed
            out = yield from call("GetItem", {"TableName": spec.table.name,
                                              "Key": wire_key(old_key), "ConsistentRead": True},
                                  (spec.cls,))
            old = current = out.get("Item")
        else:
            both = yield from kit.snapshot(spec, (old_key, key))
            old, current = both.get(key_id(old_key)), both.get(key_id(key))
        old, current = _live(spec, old), _live(spec, current)
        if old is not None and self.owns(old):
            obj = yield from self.moved(spec, old, kit, True)
            if held or _at(spec, obj, key):
                if current is not old and spec.owns(current):
                    raise DynaormError(
                        f"{spec.name}: both layouts hold it, the old row {old_key} and the "
                        f"current row {key} (a new object was saved at the current key "
                        "during the migration window); overwrite cannot tell which one it "
                        "replaces: delete one of them first")
                return obj._dynaorm_state
        if current is not None and spec.owns(current):
            yield from kit.prepare((spec,), (current,))
            return spec.cls._from_item(current, spec)._dynaorm_state
        return None


def _at(spec: Any, obj: Any, key: PlainKey) -> bool:
    """Whether ``key`` is the current table key of ``obj`` as DynamoDB compares keys: a
    number key by its value (``5.0`` is ``5``: DynamoDB reads the row at ``5`` for
    either), else by its text (``False``: its values render no key)."""
    try:
        own = spec.primary_key(obj.__dict__)
    except DynaormError:
        return False
    return {a: key_order(v) for a, v in own.items()} == {a: key_order(v)
                                                         for a, v in key.items()}


def _live(spec: Any, item: Item | None) -> Item | None:
    """``item``, or ``None`` when its TTL has passed (expired, not yet deleted by
    DynamoDB: every read treats it as gone, under either layout)."""
    return None if item is None or expired(item, spec.table.ttl) else item


def _origin(spec: Any, owner: PlainKey, index: int) -> Callable[[Role, Fail], Origin]:
    """The origin of a row of a move staged at ``index``, naming ``owner``, by role and
    failure."""
    return lambda role, fail: Origin(spec.cls, owner, role, fail, None, None, index)


def _kept(spec: Any, item: Item) -> Item:
    """The attributes of an old-layout row that neither layout declares (written by a
    newer model, or by another tool): a move carries them to the new row, as every write
    of an item keeps them (:func:`~dynaorm.values.state.undeclared`). Not the old fields
    by their old names either, nor any index key of the table (rendered anew)."""
    table = spec.table
    old = spec.rules.before.fields_by_attr
    index_keys = {a for name in table.indexes if table.native(name) is None
                  for a in table.key_attributes(name)}
    return {k: v for k, v in undeclared(spec, item).items()
            if k not in old and k not in index_keys}


def _as_stored(spec: Any, stored: Item, old: Item, new: Item) -> Item:
    """The attributes of ``new`` (the moved row as dynaorm encodes it) that the change
    did not touch, and the members of its maps and lists, as ``stored`` (the old row under
    the current names) holds them (``old``: the loaded object encoded at the new key):
    a move keeps another writer's forms, as a save in place does (contract 24). Never
    the keys, the type, the revision or a rendered index key: those are the new row's."""
    table = spec.table
    fixed = {table.pk, table.sk, table.type_attr, table.revision_attribute,
             *(a for name in table.indexes if table.native(name) is None
               for a in table.key_attributes(name))}
    merged = merge_items({a: av for a, av in stored.items() if a not in fixed}, old, new).item
    return {a: merged[a] for a in new if a in merged and a not in fixed}


def move_actions(spec: Any, versions: int) -> int:
    """The actions a move of an entity with ``versions`` version rows takes, at most
    (row delete and put, two per version row, and the rows its rules add to a move: a
    re-pointed guard per unique rule, a new version row)."""
    rows = spec.rules.rows(described(spec, "move"))
    return 2 + 2 * versions + len(rows.before) + len(rows.after)


def history_batches(spec: Any, state: MovedState, kit: Writing) -> list[list[Op]]:
    """The old version rows of ``state`` moved ahead of the entity, :data:`HISTORY_BATCH`
    rows per transaction: each put under the new key if absent and deleted under the old
    one if present, with a check that the old latest copy is still at the version read (a
    writer that moved or changed the entity meanwhile fails the batch). Version rows never
    change once written, so a history moved in several transactions is the history read."""
    check = all_of([exists(spec.table.pk), *spec.rules.pinned(state.version or 0)])
    assert check is not None
    rows = _history_rows(spec, state.history, kit)
    origin = _origin(spec, state.key, 0)
    return [[ConditionCheck(state.key, check, origin(Role.LATEST, Fail.GONE)),
             *_row_moves(spec, origin, rows[at:at + HISTORY_BATCH])]
            for at in range(0, len(rows), HISTORY_BATCH)]


def kept_row_move(spec: Any, row: Item, kit: Writing) -> list[Op]:
    """Move one old version row whose entity is gone (history kept by a delete without
    ``history=True``) to the current layout, in one transaction: put under its current
    key if absent, deleted under its old one if present, on the condition that its old
    latest copy is still absent (an entity stored there again moves its history itself).
    """
    keys = spec.rules.sort_keys
    parsed = keys.parse(key_value(row[spec.table.sk]))
    assert parsed is not None
    latest = {**spec.stored_key(row), spec.table.sk: keys.key(parsed[1], 0)}
    origin = _origin(spec, latest, 0)
    return [ConditionCheck(latest, not_exists(spec.table.pk), origin(Role.LATEST, Fail.EXISTS)),
            *_row_moves(spec, origin, _history_rows(spec, (row,), kit))]


def _row_moves(spec: Any, origin: Callable[[Role, Fail], Origin],
               rows: list[tuple[int, PlainKey, Item]], in_place: bool = True) -> list[Op]:
    """Each version row put under its current key if absent and deleted under its old
    one if present (``in_place``: a row whose key did not change, only its type or stored
    names, is put where it is)."""
    ops: list[Op]
    pk, ops = spec.table.pk, []
    for _, old_key, row in rows:
        new_key = {a: row[a]["S"] for a in spec.table_key_attrs}
        if in_place and new_key == old_key:
            ops.append(Put(new_key, row, exists(pk), origin(Role.VERSION, Fail.GONE)))
            continue
        ops.append(Delete(old_key, exists(pk), origin(Role.VERSION, Fail.GONE)))
        ops.append(Put(new_key, row, not_exists(pk), origin(Role.VERSION, Fail.EXISTS)))
    return ops


def _row_delete(spec: Any, state: MovedState, caller: Condition | None, loose: bool,
                index: int) -> Delete:
    """The delete of the old row: conditioned on it being exactly as read (``loose``: not
    at all, an overwrite), and on the caller's own ``condition=``. The caller writes that
    condition in field names, which mean the same on either layout: on the old row it is
    judged through the old stored names (``Previous.stored_names``), so it guards the row
    the move replaces, and a failure is a ``ConditionFailedError`` as on any row."""
    own = None
    if not loose:  # every attribute but its key as read
        own = all_of([exists(spec.table.pk), *stored_as(
            state.item, set(state.item) - set(spec.table_key_attrs)),
            *spec.rules.pinned(state.version or 0)])
    origin = _origin(spec, state.key, index)(spec.rules.own, Fail.GONE)
    if caller is not None:
        caller = rename_paths(caller, spec.rules.before.renames)  # (its old stored names)
        origin = origin._replace(fail=Fail.GONE if own is not None else Fail.CALLER,
                                 caller=caller)
        own = caller if own is None else all_of([own, caller])
    return Delete(state.key, own, origin)


def _history_rows(spec: Any, history: tuple[Item, ...], kit: Writing
                  ) -> list[tuple[int, PlainKey, Item]]:
    """Each old version row: (version, old key, the row under the current layout)."""
    out, keys, layout = [], spec.rules.sort_keys, spec.rules.before
    for row in history:
        parsed = keys.parse(key_value(row[spec.table.sk]))
        if parsed is None or parsed[0] == 0:
            continue
        n = parsed[0]
        obj = layout.validate(spec, row)
        key = spec.primary_key({**obj.__dict__, "version": n}, n)
        new = kit.encode(obj, spec, n)
        out.append((n, spec.stored_key(row),
                    {**_kept(spec, row), **keys.row(spec, new, key[spec.table.sk])}))
    return sorted(out, key=lambda t: t[0])


def _old_template(source: Any, what: str, owner: str, lookup: tuple[str, ...],
                  key_type: str) -> KeyTemplate:
    template = KeyTemplate.parse(source, owner=owner, key_type=key_type)
    for name in template.fields:
        if name == SHARD_FIELD:
            raise KeyTemplateError(f"{owner}.Meta.previous.{what} {source!r}: sharded "
                                   "layouts cannot be migrated")
        if name not in lookup:
            raise KeyTemplateError(
                f"{owner}.Meta.previous.{what} {source!r} names field {name!r}, which is not "
                f"a field of the current key {list(lookup)}: get() could not find the old "
                "item from the current key fields")
    return template


def _old_keys(owner: str, raw: Previous, table: TableSchema, pk: KeyTemplate,
              sk: KeyTemplate | None) -> tuple[KeyTemplate, KeyTemplate | None]:
    """The old key templates ``(pk, sk)`` (the current ones where unchanged): each may
    only name fields of the current key, and an old ``sk`` needs a table sort key."""
    lookup = tuple(dict.fromkeys((*pk.fields, *(sk.fields if sk else ()))))
    old_pk = pk if raw.pk is None else _old_template(raw.pk, "pk", owner, lookup,
                                                     table.key_type(table.pk))
    if raw.sk is not None and table.sk is None:
        raise DynaormError(f"{owner}.Meta.previous.sk given but table {table.name!r} has no "
                           "sort key")
    old_sk = sk if raw.sk is None else _old_template(raw.sk, "sk", owner, lookup,
                                                     table.key_type(table.sk))
    return old_pk, old_sk


def _old_type_name(owner: str, raw: Previous, table: TableSchema, type_name: str) -> str:
    """The old type name (the current one when unchanged); one can only have been stored
    on a table with a type attribute."""
    old_type = type_name if raw.type_name is None else str(raw.type_name)
    if raw.type_name is not None and table.type_attribute is None:
        raise DynaormError(f"{owner}.Meta.previous.type_name: table {table.name!r} stores no "
                           "type attribute, so a type name was never stored")
    return old_type


def _old_stored_names(owner: str, raw: Previous, table: TableSchema, field_names: frozenset[str],
                      renames: Mapping[str, str]) -> dict[str, str]:
    """Field name -> its old stored attribute name, for every field: ``stored_names``
    checked (known fields, non-empty names other than the table's keys and type
    attribute), the current stored name for the fields it leaves out."""
    if not isinstance(raw.stored_names, Mapping):
        raise DynaormError(f"{owner}.Meta.previous.stored_names must map field names to "
                           f"stored names, got {raw.stored_names!r}")
    reserved = {table.pk, table.sk, table.type_attribute} - {None}
    old_names = {n: renames.get(n, n) for n in field_names}
    for name, stored in raw.stored_names.items():
        if name not in field_names:
            raise DynaormError(f"{owner}.Meta.previous.stored_names names unknown field "
                               f"{name!r}")
        if not isinstance(stored, str) or not stored or stored in reserved:
            raise DynaormError(f"{owner}.Meta.previous.stored_names[{name!r}] must be an "
                               f"attribute name other than the table's keys and type "
                               f"attribute, got {stored!r}")
        old_names[name] = stored
    return old_names


def _same_template(old: KeyTemplate | None, new: KeyTemplate | None) -> bool:
    """Whether two key templates (either possibly absent) are the same."""
    return getattr(old, "source", None) == getattr(new, "source", None)


def _check_changed(owner: str, same_keys: bool, same_names: bool, same_type: bool) -> None:
    """Refuse a previous layout the reads could not tell from the current one: identical,
    or differing in stored names only."""
    if same_keys and same_names and same_type:
        raise DynaormError(f"{owner}.Meta.previous is identical to the current layout: "
                           "declare the key templates, type name or stored names that "
                           "changed (or remove Meta.previous once migrated)")
    if same_keys and same_type:
        raise DynaormError(f"{owner}.Meta.previous: only stored names changed; the old and "
                           "the new item share one key and one type, so a read could not "
                           "tell them apart (change the type name too, or rename the "
                           "fields with a model validator)")


def previous_layout(owner: str, raw: Any, table: TableSchema, field_names: frozenset[str],
                    pk: KeyTemplate, sk: KeyTemplate | None, type_name: str,
                    renames: Mapping[str, str], versioned: bool, sharded: bool
                    ) -> Layout | None:
    """``Meta.previous`` checked into a :class:`Layout` (``None`` when not declared).

    ``pk``/``sk``/``type_name``/``renames`` are the current layout's."""
    if raw is None:
        return None
    if not isinstance(raw, Previous):
        raise DynaormError(f"{owner}.Meta.previous must be dynaorm.Previous(...), got {raw!r}")
    if sharded:
        raise DynaormError(f"{owner}.Meta.previous: a sharded entity cannot declare a "
                           "previous layout")
    old_pk, old_sk = _old_keys(owner, raw, table, pk, sk)
    old_type = _old_type_name(owner, raw, table, type_name)
    old_names = _old_stored_names(owner, raw, table, field_names, renames)
    by_attr = {stored: name for name, stored in old_names.items()}
    if len(by_attr) != len(old_names):
        raise DynaormError(f"{owner}.Meta.previous.stored_names stores two fields under one "
                           "name")
    _check_changed(owner,
                   same_keys=_same_template(old_pk, pk) and _same_template(old_sk, sk),
                   same_names=all(old_names[n] == renames.get(n, n) for n in field_names),
                   same_type=old_type == type_name)
    return Layout(old_pk, old_sk, old_type, by_attr, table, versioned,
                  {n: a for n, a in old_names.items() if a != n})


@register
@dataclass(frozen=True, slots=True, eq=False)
class PreviousLayout(Rule):
    """``Meta.previous``: the layout an entity's items had before a design change, read
    alongside the current one until ``dynaorm migrate`` has moved every item."""

    before: Layout
    name = "previous"

    order = 80
    answers = {
        "save": "a loaded old-layout object is moved: old row deleted as read, new row put, "
                "guards and version rows moved, in one transaction",
        "update": "an update by key of an entity still in its old layout is refused "
                  "(DynaormError: read it and save it, or migrate first), as is "
                  "s.update(obj) of an object read from it",
        "delete": "deletes the row in whichever layout it is stored",
        "get": "a miss at the current key reads the old key too (one TransactGetItems)",
        "query": "the current layout only: an old-layout item is no result until it is "
                 "moved (get finds it)",
        "values": "as query",
        "scan": "the current layout only: an old-layout item is skipped until it is moved",
        "stream": "an old-layout row's change is a Change of its entity, its images read "
                  "as the current class (old key, type name and stored names)",
        "history": "history() and get(version=n) read the current layout only; a move "
                   "brings the old version rows with it",
        "migrate": "moves every old-layout item to the current layout, page by page",
        "backfill": "the current layout only (as scan): migrate first",
        "check": "an old-layout item whose type name changed is no problem; one whose type "
                 "name did not is stale-key until migrate moves it",
        "export": "old-layout items are exported in the current layout",
        "search": "an old-layout item in the index is a hit, read as current (as a scan "
                  "reads it); a write of it moves it",
        "messages": "names the old key where it is read from",
        "logs": "as messages",
        "spans": "as messages",
    }

    @classmethod
    def build(cls, decl: Declaration) -> PreviousLayout | None:
        layout = previous_layout(decl.owner, decl.meta.get("previous"), decl.table,
                                 decl.field_names, decl.pk, decl.sk, decl.type_name,
                                 decl.renames, "versioned" in decl.built,
                                 "shards" in decl.built)
        if layout is None:
            return None
        old = layout.fields_by_attr
        # (in reverse order, as the rules' own decoders; a rule that reads attributes by
        # name reads them under the old names where it offers ``renamed``)
        # (a placing rule's values are put back first, whatever its order)
        decoders = tuple(rule.renamed(old).decode if hasattr(rule, "renamed") else rule.decode
                         for rule in sorted(reversed(list(decl.built.values())),
                                            key=lambda r: type(r).place is Rule.place)
                         if type(rule).decode is not Rule.decode)
        return cls(dataclasses.replace(layout, decoders=decoders))

