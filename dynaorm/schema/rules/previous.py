"""An entity's previous layout (``Meta.previous``): the key templates, type name and stored
attribute names its items had before a design change, and the mapping of an item stored
that way onto the entity as it is now.

``Meta.previous = Previous(pk="USER#{id}", type_name="user", stored_names={"email": "mail"})``
declares it; :func:`previous_layout` checks it once, when the class is defined, into a
frozen :class:`Layout` kept on the spec (``spec.previous``). Pure: reads
(:mod:`dynaorm.read.previous`), moves (:mod:`dynaorm.write.moves`) and ``dynaorm migrate``
(:mod:`dynaorm.tools.migrate`) build on it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import ValidationError

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError, ItemDecodeError, KeyTemplateError
from dynaorm.schema.rules import Before, Declaration, Rule, register
from dynaorm.schema.rules.versioned import LATEST_PREFIX, parse_version_sk, version_sk
from dynaorm.schema.table import TableSchema
from dynaorm.schema.templates import SHARD_FIELD, KeyTemplate, parse_keys
from dynaorm.values.expressions import F, free
from dynaorm.values.keys import key_value
from dynaorm.values.records import ConditionCheck, Fail, Op, Origin, Role
from dynaorm.values.state import MovedState

__all__ = ["Layout", "MovedState", "Previous", "PreviousLayout", "previous_layout"]


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
    renames: Mapping[str, str] = field(default_factory=dict)
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
        if self.versioned and sk is not None and sk in item:  # (a version row: as its copy)
            parsed = parse_version_sk(key_value(item[sk]))
            if parsed is not None:
                item = {**item, sk: {"S": version_sk(parsed[1], 0)}}
        return self.owns(item)

    def vacant(self, values: Mapping[str, Any], owner: str, key: PlainKey,
               origin: Callable[[Role, Fail], Origin]) -> tuple[Op, ...]:
        old_key = self.key(values, owner)
        if old_key == key:  # (a move in place: the insert's own condition covers it)
            return ()
        vacant = free(self.table.pk, self.table.ttl)
        type_attr = self.table.type_attribute
        if type_attr is not None:  # (another entity's item at that key is no conflict)
            vacant = vacant | (F(type_attr) != self.type_name)
        return (ConditionCheck(old_key, vacant, origin(Role.ROW, Fail.EXISTS)),)

    def owns(self, item: Item | None) -> bool:
        """Whether ``item`` is stored in this (old) layout: the old type name (on a table
        with a type attribute) and a table key the old templates parse."""
        if item is None:
            return False
        type_attr = self.table.type_attribute
        if type_attr is not None and item.get(type_attr, {}).get("S") != self.type_name:
            return False
        return self.parse_key(item) is not None

    def load(self, spec: Any, item: Item) -> tuple[Any, int | None]:
        """An object of ``spec.cls`` validated from ``item``, stored in this layout (no
        state set: :meth:`validate`), and its version (``None``: not versioned)."""
        obj = self.validate(spec, item)
        return obj, obj.__dict__.get("version") if self.versioned else None

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
        out: Item = {}
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

    def validate(self, spec: Any, item: Item) -> Any:
        """An object of ``spec.cls`` validated from ``item``, stored in this layout (no
        state set)."""
        try:
            return spec.cls.model_validate(self.values(spec, item))
        except ValidationError as exc:
            key = spec.stored_key(item)
            raise ItemDecodeError(f"the stored item {key} (previous layout) does not fit "
                                  f"{spec.name}: {exc.errors()[0]['msg']}", entity=spec.cls,
                                  key=key) from exc


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
    return (old is None and new is None) or (old is not None and new is not None
                                             and old.source == new.source)


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
        decoders = tuple(rule.renamed(old).decode if hasattr(rule, "renamed") else rule.decode
                         for rule in reversed(list(decl.built.values()))
                         if type(rule).decode is not Rule.decode)
        return cls(dataclasses.replace(layout, decoders=decoders))

