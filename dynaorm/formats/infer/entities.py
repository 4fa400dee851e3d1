"""One entity from its items (its templates and fields), the entities a table without a
type attribute can tell apart by key shape (two that could read one key ranked, else merged
or one left out), and each as the model's plain data."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from dynaorm.codec import sealed_by
from dynaorm.errors import DynaormError, OffloadError
from dynaorm.formats.infer.items import SEPARATORS, Item, Table, _Group, _key_attrs
from dynaorm.formats.infer.kinds import _field, _kind, _merge, _resolved
from dynaorm.formats.infer.naming import Values, _attr_field_name, _name_slots, _Namer
from dynaorm.formats.infer.templates import Found, _is_whole, _render, _Slot, _template
from dynaorm.keys import KeyTemplate, could_overlap, literal_outranks
from dynaorm.schema.rules import compressed, offloaded

#: an attribute named as a mapper's optimistic lock (``version``, ``record_version``)
_LOCK = re.compile(r"(?i)(record_?|lock_?)?version(_?(no|num|number))?\Z")


@dataclass
class _Entity:
    group: _Group
    templates: dict[str, str]
    fields: list[dict[str, Any]]
    key_only: list[str]
    members: list[bool]
    #: the table key templates, parsed (the key grammar reads the items with them)
    parsed: dict[str, KeyTemplate]
    unique: list[dict[str, Any]] = field(default_factory=list)

    def support(self) -> int:
        return sum(self.members)

    def reads(self, key: Mapping[str, str]) -> bool:
        """Whether this entity's table key templates parse the key texts ``key``."""
        return all(a in key and t.parse_key(key[a]) is not None for a, t in self.parsed.items())

    def meets(self, other: _Entity) -> bool:
        """Whether some key could fit both entities' templates and neither outranks the
        other (:func:`~dynaorm.keys.literal_outranks`): dynaorm refuses such a
        pair on a table without a type attribute."""
        (pk, sk), (theirs, their_sk) = self.pk_sk(), other.pk_sk()
        if not could_overlap(pk, theirs) or (sk is not None and their_sk is not None
                                             and not could_overlap(sk, their_sk)):
            return False
        return not (literal_outranks(pk, sk, theirs, their_sk)
                    or literal_outranks(theirs, their_sk, pk, sk))

    def pk_sk(self) -> tuple[KeyTemplate, KeyTemplate | None]:
        pk, *sk = self.parsed.values()
        return pk, sk[0] if sk else None

    def covers(self, other: _Entity) -> bool:
        """Whether every key of ``other``'s templates parses under this entity's."""
        return all(t.covers(other.parsed[a]) for a, t in self.parsed.items())


def _entity(table: Table, keyed: Sequence[str], skip: set[str], models: _Namer,
            plain: frozenset[str], group: _Group) -> _Entity:
    """The templates (of the ``keyed`` attributes) and fields of one entity from its
    items (``group``)."""
    templates = {a: found for a in keyed if (found := _template(group, a, a in plain))}
    slots = [p for parts, _ in templates.values() for p in parts if isinstance(p, _Slot)]
    # (a plain attribute of an index keyed on a template too: a field stored as itself,
    # the index's template that field whole)
    attrs = _attribute_values(group, (set(templates) - plain) | skip)
    names = _Namer(("model_config", *keyed))  # (a key-only field is stored under its
    # name: never a key attribute's)
    whole = {a for a in table["_keys"] if _is_whole(templates[a][0])}  # (every item has them)
    new = _name_slots(slots, attrs, names, whole)
    fields = _attribute_fields(group, attrs, names, models, table)
    key_only = _slot_fields(new, slots, templates, fields, table)
    _as_text({s.field for s in slots}, fields)
    rendered, parsed, members = _read_back(group, templates, table["_keys"])
    group.widths = {a: len(parts) for a, (parts, _) in templates.items()}
    return _Entity(group, rendered, fields, key_only, members, parsed)


def _read_back(group: _Group, templates: Mapping[str, Found], table_keys: Sequence[str]
               ) -> tuple[dict[str, str], dict[str, KeyTemplate], list[bool]]:
    """The ``templates`` rendered, the table key's parsed, and which items of ``group``
    they read back (not an item whose key the template does not parse back, a value
    holding '#' in a table of '|' keys: its entity's reads would never find it)."""
    rendered = {a: _render(parts, group.sep) for a, (parts, _) in templates.items()}
    parsed = {a: KeyTemplate.parse(rendered[a]) for a in table_keys}
    members = [all(n in templates[a][1] and parsed[a].parse_key(group.keys[n][a]) is not None
                   for a in table_keys) for n in range(len(group.items))]
    return rendered, parsed, members


def _slot_fields(new: Iterable[str], slots: Sequence[_Slot],
                 templates: Mapping[str, Found],
                 fields: list[dict[str, Any]], table: Table) -> list[str]:
    """Add to ``fields`` each ``new`` slot field (no attribute holds it): stored as the key
    attribute it is the whole of, else key-only (in the table key) or optional (in an
    index key only); the key-only ones' names."""
    key_only = []
    table_keys = table["_keys"]
    for slot_field in new:
        mine = [s for s in slots if s.field == slot_field]
        whole = [s.attr for s in mine if s.attr in table_keys
                 and _is_whole(templates[s.attr][0])]
        number = any(s.attr in table["key_types"] for s in mine)
        kind = {"type": "integer"} if number else {"type": "string"}
        if whole:  # the key attribute itself: the field stored as it
            fields.insert(0, _field(slot_field, whole[0], kind, True, ()))
        elif any(s.attr in table_keys for s in mine):
            fields.insert(0, _field(slot_field, slot_field, kind, True, ()))
            key_only.append(slot_field)
        else:
            fields.append(_field(slot_field, slot_field, kind, False, ()))
    return key_only


def _as_text(in_keys: set[str], fields: list[dict[str, Any]]) -> None:
    """Each field in a key template typed as text (or a number): a key renders a field's
    text as the item stores it, and a datetime would render its own."""
    for f in fields:
        if f["name"] in in_keys and f["type"] not in ("string", "integer", "decimal"):
            f["type"] = ("integer" if str(f.get("stored_as", "")).startswith(("epoch", "num"))
                         else "string")  # (a number's text in a key: its number)
            f.pop("stored_as", None)


def _attribute_values(group: _Group, skip: set[str]) -> Values:
    out: dict[str, dict[int, Mapping[str, Any]]] = defaultdict(dict)
    for n, item in enumerate(group.items):
        for attr, av in item.items():
            if attr not in skip:
                out[attr][n] = av
    return out


def _attribute_fields(group: _Group, attrs: Values,
                      names: _Namer, models: _Namer, table: Table
                      ) -> list[dict[str, Any]]:
    out = []
    total = len(group.items)
    plain = table["_opened"]  # (sealed values the keyring given opened, by identity)
    for attr, values in attrs.items():
        known = all(id(av) in plain for av in values.values())
        avs = [plain[id(av)] if known else offloaded.held_value(av)  # (a value, not its
               for av in values.values()]  # reference)
        opened = _decompressed(avs)
        try:  # (its type is sealed with it, unless opened)
            sealed = known or all(sealed_by(av) for av in opened)
        except OffloadError:  # (a decompressed map of a reference's shape: a value)
            sealed = False
        if attr == table.get("ttl"):
            kind = {"type": "datetime"}
        elif sealed and not known:
            kind = {"type": "any"}
        else:
            kind = _resolved(_merge([_kind(av) for av in opened]), f"{group.name}_{attr}", models)
        out.append(_field(_attr_field_name(attr, names), attr, kind, len(avs) == total, opened))
        if any(offloaded.reference(av) for av in values.values()):
            out[-1]["offloaded"] = True
        if opened is not avs:
            out[-1]["compressed"] = 256  # (the rule's default: a read tells by the type)
        if sealed:
            out[-1]["encrypted"] = True
    return out


def _decompressed(avs: list[Any]) -> list[Any]:
    """``avs`` (an attribute's values) with their binary values decompressed, where each
    is a value ``Compressed`` wrote (a zlib stream of DynamoDB JSON); else ``avs``."""
    rule = compressed.Compression({"": ("", 0)}, "")
    try:
        return [rule.decode({"": av})[""] for av in avs] if any("B" in av for av in avs) else avs
    except DynaormError:
        return avs


def _readable(group: _Group, build: Callable[[_Group], _Entity]) -> _Entity:
    """The entity of ``group``; one named by a type attribute reads every item of its type
    (a scan decodes each), so when its templates leave some unparsed (values holding the
    table's separator: ``OLD.b_aa.||ba`` in a table read with ``|``) it is built again
    with the other separators, and at last with its keys whole (a character none holds),
    keeping the one that places the most."""
    entity = build(group)
    if group.type_name is None:
        return entity
    texts = [t for k in group.keys for t in k.values()]
    for sep in (*SEPARATORS, "\x00"):
        if all(entity.members):
            break
        if sep != group.sep and not (sep == "\x00" and any(sep in t for t in texts)):
            other = build(replace(group, sep=sep))
            entity = max(entity, other, key=_Entity.support)
    return entity


def _untangled(entities: list[_Entity], build: Callable[[_Group], _Entity],
               unplaced: list[Item]) -> list[_Entity]:
    """Entities of a table without a type attribute that dynaorm tells apart by key shape
    (two whose keys could fit one item must be ranked: a literal key where the other has
    a template), each placing the items the model reads as its own. Of two that overlap
    unranked, one whose templates cover the other's takes the other's items (built again
    from both groups), else the one that places fewer is left out, its items unplaced.
    Then an item is its entity's only when that entity reads it (its keys parse, no
    literal key outranks it) and no other entity does; an entity that reads another's
    items is left out too (its fields were not inferred from them)."""
    out = list(entities)
    while (pair := next(((a, b) for n, a in enumerate(out) for b in out[n + 1:]
                         if a.meets(b)), None)) is not None:
        a, b = pair if not pair[1].covers(pair[0]) else pair[::-1]
        if a.covers(b):
            group = a.group
            merged = _Group(group.name, None, group.items + b.group.items,
                            group.keys + b.group.keys, group.versioned or b.group.versioned,
                            group.sep, dict(group.widths))
            out[out.index(a)] = build(merged)
            out.remove(b)
        else:
            out.remove(min(pair, key=_Entity.support))
    keys = [(item, key) for e in entities for item, key in zip(e.group.items, e.group.keys,
                                                                 strict=True)]
    while not _settle(out, keys):
        pass
    held = {id(i) for e in out for i in e.group.items}
    unplaced += [i for i, _ in keys if id(i) not in held]
    return out


def _settle(entities: list[_Entity], items: Sequence[tuple[Item, dict[str, str]]]) -> bool:
    """Each entity's members set to the items of its group the model reads as its own;
    ``False`` (one entity left out) when an entity reads an item of no group of its."""
    winners = {id(e): [w for w in entities if w is not e
                       and literal_outranks(*w.pk_sk(), *e.pk_sk())] for e in entities}
    for e in entities:
        own = {id(i) for i in e.group.items}
        for item, key in items:
            if id(item) not in own and e.reads(key) and not any(
                    w.reads(key) for w in winners[id(e)]):
                entities.remove(e)
                return False
        e.members = [e.reads(k) and not any(w.reads(k) for w in winners[id(e)])
                     for k in e.group.keys]
    return True


def _name_entities(entities: Sequence[_Entity], models: Iterable[str]) -> None:
    """Name each entity's class, none as a nested model's (``models``)."""
    names = _Namer(models)
    for e in sorted(entities, key=lambda e: -len(e.group.items)):
        e.group.name = names(e.group.name)


def _numbers(table: dict[str, Any], entities: Sequence[_Entity],
             types: Mapping[str, str]) -> dict[str, Any]:
    """The table, each field stored in a key attribute (of the table or an index) of the
    key attribute's type: a string, or a number (an integer unless the items hold a
    fraction)."""
    for e in entities:
        for f in e.fields:
            kind = types.get(f["stored"])
            if kind == "S" and f["type"] not in ("string", "datetime"):
                f["type"] = "string"  # (a key attribute: its text as stored; a time
                # declares its form)
            elif kind == "N" and f["type"] not in ("integer", "decimal"):
                f["type"] = "integer"
                f.pop("stored_as", None)
    return table


def _entity_model(e: _Entity, table: Table) -> dict[str, Any]:
    indexes = []
    for index in table["indexes"]:
        if index.get("native"):
            continue
        attrs = index.get("pk", [table["pk"]]) + index["sk"]  # (a local index: the table's pk)
        if all(a in e.templates for a in attrs):
            indexes.append({"name": index["name"], "pk": e.templates[attrs[0]],
                            "sk": e.templates[attrs[1]] if len(attrs) > 1 else None})
    return {"name": e.group.name, "type_name": e.group.type_name or e.group.name,
            "pk": e.templates[table["pk"]],
            "sk": e.templates.get(table["sk"]) if table["sk"] else None,
            "fields": e.fields, "indexes": indexes, "unique": e.unique,
            "versioned": e.group.versioned, "key_only": e.key_only, "lock": _lock(e, table)}


def _lock(e: _Entity, table: Table) -> dict[str, Any] | None:
    """The optimistic lock of DynamoDBMapper, the Enhanced Client and PynamoDB (an
    integer N from 1, named as a version, on every item) ``e``'s items keep: its field
    made ``int | None = None``, the lock then writes it."""
    for f in e.fields:
        at = f["stored"]
        if (_LOCK.match(at) and not e.group.versioned
                and at not in _key_attrs(table) and all(
                    re.fullmatch(r"[1-9]\d*", i.get(at, {}).get("N", "")) for i in e.group.items)):
            f.update(name=at, required=False, nullable=True, default=None)  # (no alias)
            return {"field": at, "first": 1, "step": 1}
    return None
