"""Definition-time rules for mapping any table (contract 14), checked once per class.

- stored names: a field's stored attribute is its pydantic alias (or serialization alias);
- typed keys: an ``N``/``B`` key attribute's template is one field of a matching type;
- a field as a key: a template that is exactly one field whose stored name is the key
  attribute stores that field once, as the key;
- tables without a type attribute: entities whose table keys could be the same key are
  refused, unless one has a literal key where the other has a template (``Meta.overlaps``:
  the literal wins, see :func:`literal_outranks`), and so are unique and versioned rules;
- key-only fields (``Meta.key_only``, and ``Field(exclude=True)``): never stored as their own
  attribute, so each must be read back exactly from the table key (:func:`unstored_fields`);
- the TTL field and ``Meta.timestamps`` are checked for their types.
"""

from __future__ import annotations

import re
import types
import typing
from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from decimal import Decimal
from typing import Any, Protocol

from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.schema.table import TableSchema
from dynaorm.schema.templates import KeyTemplate, literal_outranks
from dynaorm.values.codec import Kind, kind_of
from dynaorm.values.keys import OWN_PREFIX


class IndexTemplates(Protocol):
    """What the mapping rules read of an entity's templates for one secondary index
    (:class:`~dynaorm.schema.spec.IndexKeys`)."""

    @property
    def pk_attr(self) -> str: ...
    @property
    def sk_attr(self) -> str | None: ...
    @property
    def pk(self) -> KeyTemplate: ...
    @property
    def sk(self) -> KeyTemplate | None: ...

#: ``Meta.overlaps``: "literal" (default) lets a literal key win over another entity's
#: template on a table without a type attribute; "refuse" keeps 0.2's strict check
OVERLAP_POLICIES = ("literal", "refuse")


def stored_names(cls: type[Any]) -> dict[str, str]:
    """Field name -> stored name, for fields whose alias (or serialization alias) differs."""
    out = {}
    for name, info in cls.model_fields.items():
        alias = info.serialization_alias or info.alias
        if isinstance(alias, str) and alias and alias != name:
            out[name] = alias
    return out


def _plain(annotation: Any) -> tuple[Any, ...]:
    """The types a field annotation allows, ``None`` left out (``int | None`` -> (int,))."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _plain(typing.get_args(annotation)[0])
    if origin is typing.Union or origin is types.UnionType:
        return tuple(t for a in typing.get_args(annotation) if a is not type(None)
                     for t in _plain(a))
    return (annotation,)


def _fits(annotation: Any, kind: str) -> bool:
    allowed = _plain(annotation)
    if kind == "N":
        return all(isinstance(t, type) and issubclass(t, int | Decimal)
                   and not issubclass(t, bool) for t in allowed)
    return all(isinstance(t, type) and issubclass(t, bytes) for t in allowed)


def key_attr_templates(table: TableSchema, pk: KeyTemplate, sk: KeyTemplate | None,
                   indexes: Iterable[IndexTemplates]) -> list[tuple[str, KeyTemplate]]:
    """(key attribute, its template) of the table key and of each secondary index."""
    pairs = [(table.pk, pk)]
    if sk is not None and table.sk is not None:
        pairs.append((table.sk, sk))
    for idx in indexes:
        pairs.append((idx.pk_attr, idx.pk))
        if idx.sk is not None and idx.sk_attr is not None:
            pairs.append((idx.sk_attr, idx.sk))
    return pairs


def _stored_attributes(owner: str, field_names: frozenset[str],
                       renames: Mapping[str, str]) -> dict[str, str]:
    """Stored attribute name -> field name, for every field: two fields stored under one
    name, or a field renamed onto the name another field is stored under, are refused."""
    stored: dict[str, str] = {}
    for name in sorted(field_names):
        attr = renames.get(name, name)
        if attr in stored:
            raise DynaormError(f"{owner}: fields {stored[attr]!r} and {name!r} are both "
                               f"stored as attribute {attr!r}")
        stored[attr] = name
    for name, attr in renames.items():
        if name in stored and stored[name] != name:
            raise DynaormError(f"{owner}: field {name!r} is stored as {attr!r}, and field "
                               f"{stored[name]!r} is stored as {name!r}: rename one")
    return stored


def _check_key_clash(owner: str, table: TableSchema, stored: Mapping[str, str],
                     renames: Mapping[str, str],
                     templates: list[tuple[str, KeyTemplate]]) -> None:
    """Refuse a field stored under a key attribute of the table or of any of its indexes
    (unless a key template that is exactly that field stores it as that key), and a
    renamed field whose own name is such an attribute or the TTL attribute."""
    as_key = {attr for attr, t in templates if t.single is not None
              and renames.get(t.single, t.single) == attr}
    reserved = {table.pk, table.sk, table.type_attribute}
    for index_name in table.indexes:  # every index: a field must not leak into one
        if table.native(index_name) is None:  # (a native index's keys are fields)
            reserved.update(table.key_attributes(index_name))
    clash = sorted(a for a in stored if a in reserved and a not in as_key)
    clash += sorted(n for n in renames if (n in reserved or n == table.ttl) and n not in stored)
    if clash:
        raise DynaormError(f"{owner}: field(s) {clash} collide with key attributes of table "
                           f"{table.name!r} (a key template that is exactly that one field, "
                           "'{field}', stores the field as the key)")


def _check_typed_keys(owner: str, table: TableSchema, templates: list[tuple[str, KeyTemplate]],
                      fields: Mapping[str, Any]) -> None:
    """Refuse a number (``N``) or binary (``B``) key attribute whose one-field template
    names a field of another type."""
    for attr, template in templates:
        kind = table.key_type(attr)
        if kind == "S":
            continue
        single = template.single
        assert single is not None  # KeyTemplate.parse refused anything else
        info = fields.get(single)
        if info is not None and not _fits(info.annotation, kind):
            want = "an int or Decimal" if kind == "N" else "bytes"
            raise KeyTemplateError(f"{owner}: key attribute {attr!r} is {kind}; field "
                                   f"{single!r} of template {template.source!r} must be {want}, "
                                   f"not {info.annotation!r}")


def check_mapping(owner: str, table: TableSchema, field_names: frozenset[str],
                  renames: Mapping[str, str], pk: KeyTemplate, sk: KeyTemplate | None,
                  indexes: Iterable[IndexTemplates], cls: type[Any]) -> None:
    """Stored names, key attributes and typed keys of one entity, and a partition key
    template of the prefix reserved for dynaorm's own rows (raises when refused)."""
    fields = cls.model_fields
    head = pk.segments[0]
    if isinstance(head, str) and head.startswith(OWN_PREFIX):
        raise KeyTemplateError(f"{owner}: pk template {pk.source!r} begins with "
                               f"{OWN_PREFIX!r}, reserved for dynaorm's own rows (receipts, "
                               "Powertools records)")
    stored = _stored_attributes(owner, field_names, renames)
    templates = key_attr_templates(table, pk, sk, indexes)
    _check_key_clash(owner, table, stored, renames, templates)
    _check_typed_keys(owner, table, templates, fields)
    for attr, name in stored.items():  # a native index's attribute: the field stores its type
        kind = None if name not in fields else next(
            (m for m in fields[name].metadata if isinstance(m, Kind)), None) or kind_of(
            fields[name].annotation)  # (a field-level kind, StoredAs: the tag it stores)
        if any(table.native(i) and attr in table.key_names(i) for i in table.indexes) and (
                kind is None or kind.tag != table.key_type(attr)):
            stores = f"stores {kind.tag}" if kind and kind.tag else "stores no key type"
            hint = f"; Table(key_types={{{attr!r}: {kind.tag!r}}})" if kind and kind.tag in (
                "N", "B") else ""
            raise DynaormError(f"{owner}.{name} {stores}, but native index key attribute "
                               f"{attr!r} is {table.key_type(attr)}{hint}")




def check_rules(cls: type[Any], table: TableSchema, layouts: Layouts, *,
                uniques: bool, versioned: bool, sharded: bool, ttl_field: str | None,
                timestamps: tuple[str | None, str | None], overlaps: str) -> None:
    """Rules that need string keys or a type attribute, the TTL field's and the
    timestamps' types, and overlapping key shapes on a table without a type attribute
    (checked on the entity's spec as it is built: its ``layouts``, ``Meta.previous``'s too)."""
    owner = cls.__name__
    fields = cls.model_fields
    if not table.string_keys:
        for what, present in (("unique rules", uniques), ("versioning", versioned),
                              ("sharding", sharded)):
            if present:
                raise DynaormError(f"{owner}: {what} need(s) string table keys; table "
                                   f"{table.name!r} declares key_types {table.key_types}")
    if table.type_attribute is None:
        for what, present in (("unique rules", uniques), ("versioning", versioned)):
            if present:
                raise DynaormError(f"{owner}: {what} need(s) the type attribute (guard and "
                                   f"version rows carry it); table {table.name!r} has "
                                   "type_attribute=None")
        _check_overlaps(cls, table, layouts, overlaps)
    if ttl_field is not None:
        info = fields[ttl_field]
        allowed = _plain(info.annotation)
        if not all(isinstance(t, type) and (issubclass(t, datetime) or (
                issubclass(t, int) and not issubclass(t, bool))) for t in allowed):
            raise DynaormError(f"{owner}: field {ttl_field!r} is the TTL attribute "
                               f"{table.ttl!r}; it must be a datetime or an int of epoch "
                               f"seconds, not {info.annotation!r}")
    for name in timestamps:
        if name is None:
            continue
        allowed = _plain(fields[name].annotation)
        if not all(isinstance(t, type) and issubclass(t, datetime) for t in allowed):
            raise DynaormError(f"{owner}.Meta.timestamps: field {name!r} must be a datetime, "
                               f"not {fields[name].annotation!r}")


def overlap_policy(owner: str, raw: Any) -> str:
    """``Meta.overlaps`` checked: ``"literal"`` (the default) or ``"refuse"``."""
    if raw is None:
        return "literal"
    if raw not in OVERLAP_POLICIES:
        raise DynaormError(f"{owner}.Meta.overlaps must be one of {OVERLAP_POLICIES}, "
                           f"got {raw!r}")
    return str(raw)


#: an entity's key templates ``(pk, sk)``, each layout (:attr:`EntitySpec.layouts`)
Layouts = tuple[tuple[KeyTemplate, KeyTemplate | None], ...]


def _check_overlaps(cls: type[Any], table: TableSchema, layouts: Layouts,
                    policy: str) -> None:
    """Each layout of ``cls`` (its keys, ``Meta.previous``'s until migrated) against each
    of every other entity's: a row both may fit is told apart by a literal key only."""
    for other in list(table.entities.values()):
        theirs = other.__dynaorm_spec__  # the other's EntitySpec
        if other.__qualname__ == cls.__qualname__:
            continue
        for (pk, sk), (tpk, tsk) in ((m, t) for m in layouts for t in theirs.layouts):
            if not could_overlap(pk, tpk) or not (
                    sk is None or tsk is None or could_overlap(sk, tsk)):
                continue
            ranked = literal_outranks(pk, sk, tpk, tsk) or literal_outranks(tpk, tsk, pk, sk)
            if ranked and "refuse" not in (policy, theirs.overlaps):
                continue  # the literal key wins where they meet (Meta.overlaps = "literal")
            why = ("Meta.overlaps = 'refuse' keeps such pairs out" if ranked else
                   "neither key is a literal where the other is a template, so no "
                   "precedence can tell them apart")
            raise DynaormError(
                f"{cls.__name__}: its keys ({pk.source!r}, "
                f"{sk.source if sk else None!r}) could match the same item as "
                f"{theirs.name}'s ({tpk.source!r}, {tsk.source if tsk else None!r}); "
                f"table {table.name!r} has no type attribute, so items are told apart by "
                f"key shape only ({why})")


def _key_only_names(owner: str, raw: Any) -> Collection[str]:
    """``Meta.key_only`` as a collection of field names (``None``: none; one name alone
    is allowed); anything but field names is refused."""
    if raw is None:
        raw = ()
    if isinstance(raw, str):
        raw = (raw,)
    if not isinstance(raw, tuple | list | set | frozenset) or not all(
            isinstance(n, str) for n in raw):
        raise DynaormError(f"{owner}.Meta.key_only must be a tuple of field names, "
                           f"got {raw!r}")
    return raw


def _check_key_only(owner: str, names: Collection[str], fields: Mapping[str, Any],
                    table_key: list[KeyTemplate], in_index: set[str],
                    exact: frozenset[str]) -> None:
    """Each key-only field must be a field that the table key templates (``table_key``)
    hold and give back exactly (an index key alone is not enough: it is left off when a
    field it needs is ``None``)."""
    in_table_key = {f for t in table_key for f in t.fields}
    for name in sorted(set(names)):
        if name not in fields:
            raise DynaormError(f"{owner}.Meta.key_only names {name!r}, which is not a field")
        if name not in in_table_key | in_index:
            raise DynaormError(f"{owner}.Meta.key_only: field {name!r} is in no key "
                               "template, so it would not be stored anywhere")
        if name not in in_table_key:
            raise DynaormError(
                f"{owner}.Meta.key_only: field {name!r} is only in an index key template; "
                "an index key is left off when a field it needs is None, so the value "
                "could not be read back: a key-only field must be in the pk or sk template")
        if name not in exact:
            raise DynaormError(
                f"{owner}.Meta.key_only: field {name!r} cannot be read back exactly from "
                f"the key ({', '.join(repr(t.source) for t in table_key)}: a !u/!l "
                "conversion or a format spec other than integer padding loses its value)")


def _check_excluded(owner: str, excluded: set[str], uniques: set[str], in_index: set[str],
                    exact: frozenset[str]) -> None:
    """An ``exclude=True`` field that a unique rule or an index template uses must be
    given back exactly by the table key (else its value would be lost)."""
    for name in sorted(excluded & (uniques | in_index) - exact):
        used = "a unique rule" if name in uniques else "an index key template"
        raise DynaormError(
            f"{owner}: field {name!r} has exclude=True (never stored) but {used} uses it, "
            "and the table key does not give it back exactly: declare it in the pk/sk "
            "template (a key-only field) or drop exclude=True")


def unstored_fields(cls: type[Any], raw: Any, pk: KeyTemplate, sk: KeyTemplate | None,
                    indexes: Iterable[IndexTemplates], unique_fields: Iterable[str]
                    ) -> tuple[frozenset[str], frozenset[str]]:
    """``Meta.key_only`` checked, and the fields no write stores as their own attribute:
    ``(key_only, unstored)``, ``unstored`` adding the ``Field(exclude=True)`` fields.

    A key-only field must be a field that the table's key templates (pk or sk) give back
    exactly (:attr:`KeyTemplate.exact_fields`): reads fill it back from the key. An
    excluded field that a unique rule or an index template uses must be one too (its
    value would be lost)."""
    owner = cls.__name__
    fields = cls.model_fields
    names = _key_only_names(owner, raw)
    table_key = [t for t in (pk, sk) if t is not None]
    exact = frozenset().union(*(t.exact_fields for t in table_key))
    in_index = {f for idx in indexes for t in (idx.pk, idx.sk) if t is not None for f in t.fields}
    uniques = set(unique_fields)
    _check_key_only(owner, names, fields, table_key, in_index, exact)
    excluded = {n for n, info in fields.items() if info.exclude}
    _check_excluded(owner, excluded, uniques, in_index, exact)
    key_only = frozenset(names)
    return key_only, key_only | frozenset(excluded)


_FIELD = object()


def _parts(template: KeyTemplate) -> list[list[Any]]:
    """The template split at '#': each part a list of literal texts and field markers."""
    parts: list[list[Any]] = [[]]
    for seg in template.segments:
        if not isinstance(seg, str):
            parts[-1].append(_FIELD)
            continue
        pieces = seg.split("#")
        for n, piece in enumerate(pieces):
            if n:
                parts.append([])
            if piece:
                parts[-1].append(piece)
    return parts


def _part_overlap(a: list[Any], b: list[Any]) -> bool:
    a_lit, b_lit = _FIELD not in a, _FIELD not in b
    if a_lit and b_lit:
        return "".join(a) == "".join(b)
    if a_lit or b_lit:
        text, other = ("".join(a), b) if a_lit else ("".join(b), a)
        pattern = "".join(".+" if t is _FIELD else re.escape(t) for t in other)
        return re.fullmatch(pattern, text) is not None
    head_a = a[0] if a[0] is not _FIELD else ""
    head_b = b[0] if b[0] is not _FIELD else ""
    tail_a = a[-1] if a[-1] is not _FIELD else ""
    tail_b = b[-1] if b[-1] is not _FIELD else ""
    return (head_a.startswith(head_b) or head_b.startswith(head_a)) and (
        tail_a.endswith(tail_b) or tail_b.endswith(tail_a))


def could_overlap(a: KeyTemplate, b: KeyTemplate) -> bool:
    """Whether some rendered key could fit both templates (conservative: ``True`` when
    unsure)."""
    if a.key_type != b.key_type:
        return False
    if a.key_type != "S" or a.single is not None or b.single is not None:
        return True
    pa, pb = _parts(a), _parts(b)
    if len(pa) != len(pb):
        return False
    return all(_part_overlap(x, y) for x, y in zip(pa, pb, strict=True))


#: a number's bound as the comparison it makes (of Decimal, and of :class:`F`)
BOUND_OPS = {"ge": "__ge__", "gt": "__gt__", "le": "__le__", "lt": "__lt__"}


#: the attribute a backfill (:mod:`dynaorm.jobs`) marks the items it changed with
JOB_MARK = "_dynaorm_job"


def check_reserved(owner: str, table: TableSchema, renames: Mapping[str, str],
                   field_names: frozenset[str], rules: Any) -> None:
    """Refuse a field stored under an attribute dynaorm writes itself on the entity's
    rows (contract 21): the row revision, a rule's own attributes (a version row's kept
    TTL and native index keys, a history index's key), a backfill's marker. (The key
    attributes and the type attribute: :func:`check_mapping`.)"""
    own = (rules.attributes - table.key_roles.keys()) | {JOB_MARK}  # (keys: above)
    clash = sorted({renames.get(n, n) for n in field_names} & own)
    if clash:
        raise DynaormError(
            f"{owner}: field(s) stored as {clash}: dynaorm writes "
            f"{'that attribute' if len(clash) == 1 else 'those attributes'} itself on table "
            f"{table.name!r} (the row revision: Table(revision_attribute=...); store the "
            "field under another name with Field(alias=...))")
