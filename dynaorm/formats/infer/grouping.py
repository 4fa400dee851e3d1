"""Which items are one entity: by a type attribute when the items carry one (which
attribute reads as one), else by the shape of their table keys (the tokens that tell
entities apart, words that vary within one entity read as values)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from itertools import combinations
from typing import Any, Final

from dynaorm.formats.infer.items import (
    Entry,
    Item,
    Shape,
    Table,
    _add,
    _base_key,
    _Group,
    _is_tag,
    _key_attrs,
    _lead,
    _roles,
    _shape,
    _text,
)
from dynaorm.formats.infer.naming import _class_name, _shape_name

#: the type attribute names other tools write, tried before any other attribute
_TYPE_NAMES: Final = ("_type", "type", "Type", "entityType", "EntityType", "entity_type",
                      "entity", "Entity", "_et", "__edb_e__", "__typename", "kind", "Kind",
                      "recordType", "RecordType", "itemType", "ItemType", "_t", "_ct")


#: a type value of an entity's name that is not an identifier (``Order Line``, ``2fa-code``):
#: read when the attribute is named as a type attribute
_ODD_TYPE = re.compile(r"\S(.{0,62}\S)?\Z")


#: at most this many distinct tag-like tokens at one key position tell entities apart
#: (more: the position holds values, such as short names)
_MAX_TAGS: Final = 8

#: a key shape's signature: each key part's tokens, a literal or ``*`` (a value) each
Sig = tuple[Any, ...]


def _signatures(shapes: Sequence[Shape],
                values: Sequence[set[str]]) -> list[Sig]:
    """The signature of each of same-length table keys (``values``: the texts of each
    item's other attributes): a token that may be a literal, at a position of few such
    tokens, is one unless its item holds it as an attribute (``NORMAL`` of
    ``NORMAL#2020-04-24``, its ``State``); where every token starts with one of a few
    leads (``User:`` of ``User:UserA``), the lead; else ``*``."""
    roles = [[_roles(toks) for toks in shape] for shape in shapes]
    columns = _columns(shapes, roles)
    out = []
    for shape, role, held in zip(shapes, roles, values, strict=True):
        sig = [["*"] * len(toks) for toks in shape]
        for part, pos, how in columns:
            token = shape[part][pos]
            if how == "lead":
                sig[part][pos] = _lead(token) + "*"
            elif role[part][pos] and token not in held:
                sig[part][pos] = token
        out.append(tuple(tuple(p) for p in sig))
    return out


def _columns(shapes: Sequence[Shape],
             roles: Sequence[Sequence[tuple[bool, ...]]]) -> list[tuple[int, int, str]]:
    """The key positions that tell entities apart: by their literal tokens (few of them),
    or by the leads of their tokens (few of them, every token with one)."""
    columns = []
    for part, tokens in enumerate(shapes[0]):
        for pos in range(len(tokens)):
            tags = {s[part][pos] for s, r in zip(shapes, roles, strict=True) if r[part][pos]}
            if tags and len(tags) <= _MAX_TAGS:
                columns.append((part, pos, "token"))
                continue
            leads = {_lead(s[part][pos]) for s in shapes}
            if "" not in leads and len(leads) <= _MAX_TAGS:
                columns.append((part, pos, "lead"))
    return columns


def _by_shape(entries: Sequence[Entry],
              table: Table) -> list[_Group]:
    """Items without a type attribute, grouped by the shape of their table key."""
    by_len = defaultdict(list)
    for entry in entries:
        by_len[tuple(len(t) for t in _shape(entry[1], table))].append(entry)
    groups: dict[Sig, _Group] = {}
    for same in by_len.values():
        shapes = [_shape(k, table) for _, k, _ in same]
        keys = set(_key_attrs(table))
        held = [{t for a, av in item.items() if a not in keys and (t := _text(av))}
                for item, _, _ in same]
        sigs = _words_as_values(_signatures(shapes, held), same, table)
        for (item, key, versioned), sig in zip(same, sigs, strict=True):
            _add(groups.setdefault(sig, _Group(_shape_name(sig, table["name"]), None,
                                               sep=table["_sep"])), item, key, versioned)
    return list(groups.values())


def _words_as_values(sigs: list[Sig],
                     entries: Sequence[Entry],
                     table: Table) -> list[Sig]:
    """``sigs`` with each literal that varies within one entity read as a value: where the
    signatures of two groups differ at one position only, a word in both followed by a
    value in the same key part (``Active#2026-01-01``, ``Saved#2026-02-01``), and their
    items hold the same attributes (most of them: a status word of one entity's items,
    not two entities), that position is a field (``*``) of one group."""
    keys = table["_keys"]
    attrs: dict[Sig, set[str]] = defaultdict(set)
    for sig, (item, _, _) in zip(sigs, entries, strict=True):
        attrs[sig].update(a for a in item if a not in keys)
    refused: set[tuple[Any, Any]] = set()
    while (pair := _word_pair(attrs, refused)) is not None:
        a, b, (part, pos) = pair
        merged = tuple((*p[:pos], "*", *p[pos + 1:]) if n == part else p
                       for n, p in enumerate(a))
        if _covers_other(attrs, a, b, merged):
            # (its template would cover another entity's keys: ``{sk}#{sk_2}`` beside
            # ``ORDER#{order_id}``, which dynaorm cannot tell apart without a type)
            refused.add((a, b))
            continue
        held = attrs.pop(a) | attrs.pop(b)
        attrs[merged] = attrs.get(merged, set()) | held
        sigs = [merged if sig in (a, b) else sig for sig in sigs]
    return sigs


def _word_pair(attrs: Mapping[Sig, set[str]], refused: set[tuple[Any, Any]]
               ) -> tuple[Sig, Sig, tuple[int, int]] | None:
    """The first two signatures of ``attrs`` (not ``refused``) a word apart whose items
    hold alike attributes, with the (key part, token) where they differ; else ``None``."""
    return next(((a, b, at[:2]) for n, a in enumerate(attrs) for b in list(attrs)[n + 1:]
                 if (a, b) not in refused and (at := _word_apart(a, b)) is not None
                 and _alike(attrs[a], attrs[b], exact=not at[2])), None)


def _covers_other(attrs: Mapping[Sig, set[str]], a: Sig,
                  b: Sig, merged: Sig) -> bool:
    """Whether ``merged`` (``a`` and ``b`` as one) fits the keys of another signature of
    ``attrs`` whose items hold other attributes (another entity's)."""
    return any(_fits(other, merged) and not _alike(attrs[other], attrs[a] | attrs[b])
               for other in attrs if other not in (a, b))


def _fits(sig: Sig, template: Sig) -> bool:
    """Whether keys of signature ``sig`` fit ``template`` (a literal or ``*`` each; both of
    one key shape, as every signature :func:`_words_as_values` compares)."""
    return all(t in ("*", x) for p, q in zip(sig, template, strict=True)
               for x, t in zip(p, q, strict=True))


def _word_apart(a: Sig, b: Sig) -> tuple[int, int, bool] | None:
    """The one position (key part, token) where signatures ``a`` and ``b`` differ, when
    both hold a literal there, and whether a value (``*``) comes next in that part (then
    the word leads a value: ``Active#2026-01-01``); else ``None``. (Both of one key shape,
    as every signature :func:`_words_as_values` compares.)"""
    apart = [(p, q) for p, (x, y) in enumerate(zip(a, b, strict=True))
             for q, (s, t) in enumerate(zip(x, y, strict=True)) if s != t]
    if len(apart) != 1:
        return None
    part, pos = apart[0]
    toks = a[part]
    if "*" in (toks[pos], b[part][pos]):
        return None
    leads = pos + 1 < len(toks) and toks[pos + 1] == "*" == b[part][pos + 1]
    # (a word alone in its key part stays a literal: read as a value, that part would be
    # one field, a template of any key, and clash with the other entities' templates)
    return (part, pos, leads) if leads or len(toks) > 1 else None


def _alike(a: set[str], b: set[str], exact: bool = False) -> bool:
    """Whether two groups' attribute names are one entity's: some, most of them shared
    (``exact``, for a word that leads no value, ``johndoe`` beside ``arvinje``: all)."""
    return bool(a) and a == b if exact else bool(a & b) and 2 * len(a & b) >= len(a | b)


def _type_attribute(items: Sequence[Item], table: Table) -> str | None:
    """The attribute that names each item's entity: one of :data:`_TYPE_NAMES` (first) or
    any other string attribute on nearly every item with few values, whose items of each
    value share one key shape."""
    keys = set(_key_attrs(table)) | {table.get("ttl"), table["revision_attribute"]}
    counts = Counter(a for item in items for a, v in item.items()
                     if "S" in v and a not in keys)
    known = [a for a in _TYPE_NAMES if counts[a] >= 0.5 * len(items)]  # (items without
    # one, another tool's strays, are left unplaced: the model claims none of them)
    others = [a for a, n in counts.most_common() if n >= 0.95 * len(items) and a not in known]
    for attr in sorted(known, key=lambda a: -counts[a]) + others:
        if _types_keys(items, table, attr, attr in known, counts[attr]):
            return attr
    return None


def _types_keys(items: Sequence[Item], table: Table, attr: str, known: bool,
                held: int) -> bool:
    """Whether ``attr`` reads as a type attribute: few values, each of one key shape; not
    a data attribute (two values on items of one key skeleton, its tags and where its
    values go, and of alike attributes: a task's ``type``, a cart item's ``Status``), nor
    one value only most items hold."""
    shapes: dict[str, set[tuple[int, ...]]] = defaultdict(set)
    names: dict[Any, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for item in items:
        value = _text(item.get(attr))
        base = _base_key(item, table)
        if value is None or base is None:
            continue
        shape = _shape(base[0], table)
        shapes[value].add(tuple(map(len, shape)))
        names[tuple(tuple(t if _is_tag(t) else "" for t in p) for p in shape)][value].update(
            item)
    if any(_alike(*pair) for one in names.values() for pair in combinations(one.values(), 2)
           ) or (len(shapes) < 2 and held < 0.9 * len(items)):
        return False
    return _type_values(shapes, len(items), known)


def _type_values(shapes: Mapping[str, set[tuple[int, ...]]], n: int, known: bool) -> bool:
    """Whether the values (``shapes``: each one's key shapes) of an attribute ``n`` items
    hold read as types: names, few, each of one key shape (but for a ``known`` type
    attribute's name)."""
    if not all(re.fullmatch(r"[A-Za-z_][\w:.\-]*", v) or (known and _ODD_TYPE.match(v))
               for v in shapes):
        return False
    if known:  # (a type attribute's name: a few values, each item its entity's)
        return len(shapes) <= 64
    few = 2 <= len(shapes) <= max(2, min(64, n // 3)) and len(shapes) < n
    return few and all(len(s) == 1 for s in shapes.values())


def _by_type(entries: Sequence[Entry], attr: str,
             table: Table, unplaced: list[Item]) -> list[_Group]:
    """Items grouped by their type attribute's value; those without one put in
    ``unplaced`` (no entity of the model claims them)."""
    groups: dict[str, _Group] = {}
    for entry in entries:
        value = _text(entry[0].get(attr))
        if value is None:
            unplaced.append(entry[0])
            continue
        _add(groups.setdefault(value, _Group(_class_name(value), value, sep=table["_sep"])),
             *entry)
    return list(groups.values())


def _groups(entries: Sequence[Entry], table: Table,
            type_attr: str | None, unplaced: list[Item]) -> list[_Group]:
    """The sample's groups, one an entity: by the type attribute's value, else by key
    shape (a shape one item holds, in a sample of ten items a shape, a stray put in
    ``unplaced``, not an entity)."""
    if type_attr is not None:
        return _by_type(entries, type_attr, table, unplaced)
    groups = _by_shape(entries, table)
    if len(entries) >= 10 * len(groups):
        unplaced += [g.items[0] for g in groups if len(g.items) == 1]
        groups = [g for g in groups if len(g.items) > 1]
    return groups
