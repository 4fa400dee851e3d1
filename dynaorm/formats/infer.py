"""A model inferred from a table's description and a sample of its items (contract 23,
"Tables you already have"): the key grammar (:mod:`dynaorm.schema.templates`) run
backwards.

Items are told apart by a type attribute when they carry one, else by the shape of their
table keys: each key is cut at its separators into tokens, a token that reads as a tag
(``USER``, ``root``, ``c``) where the items of one shape share a few such tokens is a
literal that tells entities apart, any other a field. Each entity then gets a template
for the table key and for every index its items land in (the literals its items share, a
field slot where they differ), slots that always hold the same text as an attribute or
another slot become that one field, and each attribute a field typed from what the items
hold. ``dynaorm:unique`` guard items become ``unique`` rules of their owner, ``v0_`` and
``v<n>_`` rows a versioned entity, the TTL attribute its field; what fits nothing is
counted, with a few keys.

Pure: :func:`infer_model` reads plain data (DescribeTable's ``Table``, the TTL attribute,
the items as DynamoDB gives them) and returns plain data; the driver that reads a live
table is :mod:`dynaorm.client.infer`.
"""

from __future__ import annotations

import keyword
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import date, datetime
from itertools import combinations
from typing import Any, Final

import pydantic

from dynaorm.codec import GUARD_TYPE, VERSION_TTL
from dynaorm.errors import DynaormError
from dynaorm.keys import OWN_PREFIX, KeyTemplate, could_overlap, literal_outranks
from dynaorm.schema.rules import offloaded
from dynaorm.schema.unclaimed import langgraph_row

__all__ = ["InferenceError", "Inferred", "infer_model", "key_of", "read_offloaded", "table_of"]

#: the type attribute names other tools write, tried before any other attribute
_TYPE_NAMES: Final = ("_type", "type", "Type", "entityType", "EntityType", "entity_type",
                      "entity", "Entity", "_et", "__edb_e__", "__typename", "kind", "Kind",
                      "recordType", "RecordType", "itemType", "ItemType", "_t", "_ct")
#: the partition keys of dynaorm's own rows on a table without a type attribute
#: a type value of an entity's name that is not an identifier (``Order Line``, ``2fa-code``):
#: read when the attribute is named as a type attribute
_ODD_TYPE = re.compile(r"\S(.{0,62}\S)?\Z")
#: what a guard item of dynaorm holds beside its key (its owner and the field it guards)
_GUARD_ATTRS: Final = ("owner_pk", "owner_sk", "owner_type", "unique_field")
_VERSION = re.compile(r"v(0|\d{8})_")
_TAG = re.compile(r"[A-Za-z][A-Za-z_-]*\Z")
#: a literal of another tool's keys: ``$taskapp``, ElectroDB's ``$tasks_1``
_DOLLAR = re.compile(r"\$[A-Za-z][A-Za-z0-9_-]*\Z")
#: a word that may be a literal where no tag comes before it (``follower``, ``"info"``)
_WORD = re.compile(r'"?[A-Za-z][A-Za-z_-]*"?\Z')
#: a literal that leads a value inside one token: ``team_`` of ``team_green``
_LEAD = re.compile(r"[A-Za-z][A-Za-z0-9]*[_:=]")
_WORDS: Final = frozenset({"root", "meta", "metadata", "profile", "details", "detail",
                           "info", "summary", "latest", "config", "settings", "stats"})
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?\Z")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")
_INTEGER = re.compile(r"-?\d+\Z")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
#: names a field of a pydantic model cannot take (or takes with a warning): its members
_MEMBERS: Final = frozenset(n for n in dir(pydantic.BaseModel) if not n.startswith("_"))
#: an attribute named as a key attribute (``GSI1PK``, ``gsi1_sk``, ``OG_PK``)
#: an attribute named as a mapper's optimistic lock (``version``, ``record_version``)
_LOCK = re.compile(r"(?i)(record_?|lock_?)?version(_?(no|num|number))?\Z")
_KEYISH = re.compile(r"(?i)gsi|lsi|(^|[^a-z])(pk|sk|key)([^a-z]|$)|[a-z0-9](pk|sk)$")
#: at most this many distinct tag-like tokens at one key position tell entities apart
#: (more: the position holds values, such as short names)
_MAX_TAGS: Final = 8
#: the unplaced keys the model names (the rest are only counted)
_SHOWN: Final = 5

Item = Mapping[str, Mapping[str, Any]]


class InferenceError(DynaormError, ValueError):
    """A table dynaorm cannot infer a model of: none of that name, no items, a binary
    key. ``dynaorm model --infer`` exits 2 on it."""


@dataclass
class Inferred:
    """What :func:`infer_model` gives: the declared model (the plain data
    ``dynaorm.formats`` reads), how many items it sampled and placed, and the keys of
    those it could not place (a few; ``unplaced`` counts them all)."""

    model: dict[str, Any]
    sampled: int
    placed: int
    unplaced: int
    unplaced_keys: list[dict[str, Any]] = field(default_factory=list)
    #: rows of dynaorm's own it recognized (receipts, LangGraph's rows): never entities
    own: int = 0
    #: the sampled items it placed, by their keys (the driver decodes each through the
    #: printed model: :func:`dynaorm.client.infer.decoded`)
    placed_items: list[Item] = field(default_factory=list, repr=False)
    #: why some items the keys placed are not placed (an item the printed model does not
    #: decode: its key and the error), a few
    unreadable: list[str] = field(default_factory=list)


# -- the table -----------------------------------------------------------------------------
def table_of(description: Mapping[str, Any], ttl: str | None) -> dict[str, Any]:
    """The model's ``table`` from DescribeTable's ``Table`` and the TTL attribute; a
    binary key attribute is an :class:`InferenceError` (dynaorm reads no binary key it
    cannot render from a field, and a sample cannot tell what a key of bytes holds)."""
    types = {a["AttributeName"]: a["AttributeType"]
             for a in description.get("AttributeDefinitions", ())}
    name = description["TableName"]
    binary = sorted(a for a, t in types.items() if t == "B")
    if binary:
        raise InferenceError(f"table {name!r} has binary key attributes ({', '.join(binary)}): "
                             "a key of bytes cannot be read back into key templates")
    pk, sk = _key_schema(description["KeySchema"])
    indexes = [_index(i, "gsi") for i in description.get("GlobalSecondaryIndexes", ())]
    indexes += [_index(i, "lsi") for i in description.get("LocalSecondaryIndexes", ())]
    return {"name": name, "pk": pk[0], "sk": sk[0] if sk else None,
            "key_types": {a: t for a, t in types.items() if t == "N"},
            "type_attribute": None, "revision_attribute": "_rev", "ttl": ttl,
            "indexes": indexes, "_types": types}


def _key_schema(schema: Iterable[Mapping[str, str]]) -> tuple[list[str], list[str]]:
    pk = [k["AttributeName"] for k in schema if k["KeyType"] == "HASH"]
    sk = [k["AttributeName"] for k in schema if k["KeyType"] == "RANGE"]
    return pk, sk


def _index(index: Mapping[str, Any], kind: str) -> dict[str, Any]:
    pk, sk = _key_schema(index["KeySchema"])
    projection = index.get("Projection", {})
    shown: Any = projection.get("ProjectionType", "ALL")
    if shown == "INCLUDE":
        shown = list(projection.get("NonKeyAttributes", ()))
    return {"name": index["IndexName"], "kind": kind, "projection": shown, "sk": sk,
            **({"native": False, "pk": pk} if kind == "gsi" else {})}


# -- tokens --------------------------------------------------------------------------------
def _is_tag(token: str) -> bool:
    """Whether ``token`` reads as a literal of a key (``USER``, ``root``, ``c``,
    ``Order``), not a value."""
    if _DOLLAR.match(token):
        return True
    if not _TAG.match(token):
        return False
    return (token.isupper() or (len(token) <= 3 and token.islower())
            or token.lower() in _WORDS or (token[0].isupper() and token[1:].islower()
                                           and len(token) >= 4))


def _text(av: Mapping[str, Any] | None) -> str | None:
    """The text of a string or number attribute value (``None`` for any other)."""
    value = av and av.get("S", av.get("N"))
    return value if isinstance(value, str) else None


#: the characters a table's keys may join their parts with, ``#`` first (a table whose
#: keys hold none of them is read with ``#``)
SEPARATORS: Final = ("#", "|")


def _separator(items: Sequence[Item], table: Mapping[str, Any]) -> str:
    """The separator of the table's keys: of :data:`SEPARATORS`, the one the most table
    key texts of the sample hold (``USER|123|ORDER|9``), ``#`` on a tie."""
    texts = [t for i in items for a in (table["pk"], table["sk"]) if a
             for t in [_text(i.get(a))] if t]
    return max(SEPARATORS, key=lambda c: sum(c in t for t in texts))


# -- the items of one entity ---------------------------------------------------------------
@dataclass
class _Group:
    """The sampled items of one entity, with the version prefix of each read off its sort
    key (a versioned entity's latest copy and version rows)."""

    name: str
    type_name: str | None
    items: list[Item] = field(default_factory=list)
    keys: list[dict[str, str]] = field(default_factory=list)
    versioned: bool = False
    #: the separator of the table's keys (:func:`_separator`)
    sep: str = "#"
    #: the token count of each key attribute's template, when fixed (a merged group keeps
    #: the covering entity's: :func:`_untangled`); else the most common of its items
    widths: dict[str, int] = field(default_factory=dict)


def _base_key(item: Item, table: Mapping[str, Any]) -> tuple[dict[str, str], bool] | None:
    """The item's key texts by attribute (table key and index keys), the sort key's
    version prefix read off, and whether it had one; ``None`` when the table key is no
    string or number."""
    out: dict[str, str] = {}
    versioned = False
    for attr in _key_attrs(table):
        text = _text(item.get(attr))
        if text is None:
            if attr in (table["pk"], table["sk"]):
                return None
            continue
        if attr == table["sk"] and "N" not in item[attr]:
            m = _VERSION.match(text)
            if m is not None:
                text, versioned = text[m.end():], True
        out[attr] = text
    return out, versioned


def _key_attrs(table: Mapping[str, Any]) -> list[str]:
    return [a for a in dict.fromkeys([table["pk"], table["sk"], *(
        a for i in table["indexes"] for a in (*i.get("pk", ()), *i.get("sk", ())))]) if a]


def _shape(key: Mapping[str, str], table: Mapping[str, Any]) -> tuple[tuple[str, ...], ...]:
    return tuple(tuple(key[a].split(table["_sep"])) for a in (table["pk"], table["sk"]) if a)


def _roles(tokens: tuple[str, ...]) -> tuple[bool, ...]:
    """Which tokens of a key may be literals: a tag, or a word (``follower``, ``"info"``)
    that does not follow a tag (after ``USER`` comes a value: ``USER#alice``)."""
    out = []
    after_tag = False
    for token in tokens:
        ok = not token or (not after_tag and (_is_tag(token) or _WORD.match(token) is not None))
        out.append(ok)
        after_tag = ok and _is_tag(token)
    return tuple(out)


def _signatures(shapes: Sequence[tuple[tuple[str, ...], ...]],
                values: Sequence[set[str]]) -> list[tuple[Any, ...]]:
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


def _columns(shapes: Sequence[tuple[tuple[str, ...], ...]],
             roles: Sequence[Sequence[tuple[bool, ...]]]) -> list[tuple[int, int, str]]:
    """The key positions that tell entities apart: by their literal tokens (few of them),
    or by the leads of their tokens (few of them, every token with one)."""
    columns: list[tuple[int, int, str]] = []
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


def _lead(token: str) -> str:
    m = _LEAD.match(token)
    return "" if m is None or m.end() == len(token) else m.group()


def _by_shape(entries: Sequence[tuple[Item, dict[str, str], bool]],
              table: Mapping[str, Any]) -> list[_Group]:
    """Items without a type attribute, grouped by the shape of their table key."""
    by_len: dict[tuple[int, ...], list[tuple[Item, dict[str, str], bool]]] = defaultdict(list)
    for entry in entries:
        by_len[tuple(len(t) for t in _shape(entry[1], table))].append(entry)
    groups: dict[tuple[Any, ...], _Group] = {}
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


def _words_as_values(sigs: list[tuple[Any, ...]],
                     entries: Sequence[tuple[Item, dict[str, str], bool]],
                     table: Mapping[str, Any]) -> list[tuple[Any, ...]]:
    """``sigs`` with each literal that varies within one entity read as a value: where the
    signatures of two groups differ at one position only, a word in both followed by a
    value in the same key part (``Active#2026-01-01``, ``Saved#2026-02-01``), and their
    items hold the same attributes (most of them: a status word of one entity's items,
    not two entities), that position is a field (``*``) of one group."""
    keys = {table["pk"], table["sk"]}
    attrs: dict[tuple[Any, ...], set[str]] = defaultdict(set)
    for sig, (item, _, _) in zip(sigs, entries, strict=True):
        attrs[sig].update(a for a in item if a not in keys)
    refused: set[tuple[Any, Any]] = set()
    while True:
        pair = _word_pair(attrs, refused)
        if pair is None:
            return sigs
        a, b, (part, pos) = pair
        merged = tuple(tuple("*" if (p, q) == (part, pos) else t for q, t in enumerate(toks))
                       for p, toks in enumerate(a))
        if _covers_other(attrs, a, b, merged):
            # (its template would cover another entity's keys: ``{sk}#{sk_2}`` beside
            # ``ORDER#{order_id}``, which dynaorm cannot tell apart without a type)
            refused.add((a, b))
            continue
        held = attrs.pop(a) | attrs.pop(b)
        attrs[merged] = attrs.get(merged, set()) | held
        sigs = [merged if sig in (a, b) else sig for sig in sigs]


def _word_pair(attrs: Mapping[tuple[Any, ...], set[str]], refused: set[tuple[Any, Any]]
               ) -> tuple[tuple[Any, ...], tuple[Any, ...], tuple[int, int]] | None:
    """The first two signatures of ``attrs`` (not ``refused``) a word apart whose items
    hold alike attributes, with the (key part, token) where they differ; else ``None``."""
    return next(((a, b, at[:2]) for n, a in enumerate(attrs) for b in list(attrs)[n + 1:]
                 if (a, b) not in refused and (at := _word_apart(a, b)) is not None
                 and _alike(attrs[a], attrs[b], exact=not at[2])), None)


def _covers_other(attrs: Mapping[tuple[Any, ...], set[str]], a: tuple[Any, ...],
                  b: tuple[Any, ...], merged: tuple[Any, ...]) -> bool:
    """Whether ``merged`` (``a`` and ``b`` as one) fits the keys of another signature of
    ``attrs`` whose items hold other attributes (another entity's)."""
    return any(_fits(other, merged) and not _alike(attrs[other], attrs[a] | attrs[b])
               for other in attrs if other not in (a, b))


def _fits(sig: tuple[Any, ...], template: tuple[Any, ...]) -> bool:
    """Whether keys of signature ``sig`` fit ``template`` (a literal or ``*`` each)."""
    return [len(p) for p in sig] == [len(p) for p in template] and all(
        t in ("*", x) for p, q in zip(sig, template, strict=True)
        for x, t in zip(p, q, strict=True))


def _word_apart(a: tuple[Any, ...], b: tuple[Any, ...]) -> tuple[int, int, bool] | None:
    """The one position (key part, token) where signatures ``a`` and ``b`` differ, when
    both hold a literal there, and whether a value (``*``) comes next in that part (then
    the word leads a value: ``Active#2026-01-01``); else ``None``."""
    if [len(p) for p in a] != [len(p) for p in b]:
        return None
    apart = [(p, q) for p, (x, y) in enumerate(zip(a, b, strict=True))
             for q, (s, t) in enumerate(zip(x, y, strict=True)) if s != t]
    if len(apart) != 1:
        return None
    part, pos = apart[0]
    toks = a[part]
    if "*" in (a[part][pos], b[part][pos]):
        return None
    leads = pos + 1 < len(toks) and toks[pos + 1] == "*" == b[part][pos + 1]
    # (a word alone in its key part stays a literal: read as a value, that part would be
    # one field, a template of any key, and clash with the other entities' templates)
    return (part, pos, leads) if leads or len(toks) > 1 else None


def _alike(a: set[str], b: set[str], exact: bool = False) -> bool:
    """Whether two groups' attribute names are one entity's: some, most of them shared
    (``exact``, for a word that leads no value, ``johndoe`` beside ``arvinje``: all)."""
    return bool(a) and a == b if exact else bool(a & b) and 2 * len(a & b) >= len(a | b)


def _add(group: _Group, item: Item, key: dict[str, str], versioned: bool) -> None:
    group.items.append(item)
    group.keys.append(key)
    group.versioned |= versioned


def _shape_name(sig: tuple[tuple[str, ...], ...], table: str) -> str:
    """A class name for the entity of a key shape: its literals (``USER#*``, ``ORDER#*``
    -> ``UserOrder``), else its table's name (``prod-orders`` -> ``ProdOrder``)."""
    words = [t.strip('"$*:=_') for toks in sig for t in toks if t != "*"]
    literals = [w for w in dict.fromkeys(words) if w.lower() not in _WORDS] or words
    return _class_name("_".join(literals) or re.sub(r"(?<=[^su])s\Z", "", table))


def _class_name(text: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z])(?=[A-Z])", text) if w]
    name = "".join(w[:1].upper() + w[1:].lower() if w.isupper() or w.islower()
                   else w[:1].upper() + w[1:] for w in words) or "Item"
    return name if name[0].isalpha() else f"E{name}"


def _snake(text: str) -> str:
    text = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", text)
    text = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower() or "field"
    if text[0].isdigit() or text.startswith("model_"):
        text = f"f{text}"
    return text


# -- type attribute ------------------------------------------------------------------------
def _type_attribute(items: Sequence[Item], table: Mapping[str, Any]) -> str | None:
    """The attribute that names each item's entity: one of :data:`_TYPE_NAMES` (first) or
    any other string attribute on nearly every item with few values, whose items of each
    value share one key shape."""
    keys = set(_key_attrs(table)) | {table.get("ttl"), table["revision_attribute"]}
    counts: Counter[str] = Counter(a for item in items for a, v in item.items()
                                   if "S" in v and a not in keys)
    known = [a for a in _TYPE_NAMES if counts[a] >= 0.5 * len(items)]  # (items without
    # one, another tool's strays, are left unplaced: the model claims none of them)
    others = [a for a, n in counts.most_common() if n >= 0.95 * len(items) and a not in known]
    for attr in sorted(known, key=lambda a: -counts[a]) + others:
        if _types_keys(items, table, attr, attr in known, counts[attr]):
            return attr
    return None


def _types_keys(items: Sequence[Item], table: Mapping[str, Any], attr: str, known: bool,
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
        return len(shapes) <= 64 and (len(shapes) < n or n <= 64)
    few = 2 <= len(shapes) <= max(2, min(64, n // 3)) and len(shapes) < n
    return few and all(len(s) == 1 for s in shapes.values())


def _by_type(entries: Sequence[tuple[Item, dict[str, str], bool]], attr: str,
             table: Mapping[str, Any], unplaced: list[Item]) -> list[_Group]:
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


# -- templates -----------------------------------------------------------------------------
@dataclass
class _Slot:
    """A field slot of a key template: its attribute, position, and the text it holds in
    each item (by the item's index in its group)."""

    attr: str
    pos: int
    tag: str | None
    values: dict[int, str]
    field: str = ""
    #: the literal every value of the slot starts with (``team_``), read off ``values``
    lead: str = ""


def _template(group: _Group, attr: str, plain: bool = False
              ) -> tuple[list[str | _Slot], set[int]] | None:
    """The segments of ``attr``'s template for ``group`` (literal tokens and slots, the
    ``#`` between them implied), and the items it holds; ``None`` when no item has it.
    ``plain``: an index key attribute holding a field as it is (one slot, whatever the
    sample holds: ``Operator``)."""
    if plain:
        values = {n: k[attr] for n, k in enumerate(group.keys) if attr in k}
        return ([_Slot(attr, 0, None, values)], set(values)) if values else None
    present = [(n, tuple(k[attr].split(group.sep))) for n, k in enumerate(group.keys)
               if attr in k]
    if not present:
        return None
    lengths = Counter(len(t) for _, t in present)  # (the token count: the group's fixed one
    width = group.widths.get(attr, 0)  # when an item has it, else the most common)
    width = width if lengths[width] else lengths.most_common(1)[0][0]
    fits = [(n, t) for n, t in present if len(t) == width]
    return _segments(group, attr, fits, width), {n for n, _ in fits}


def _segments(group: _Group, attr: str, fits: Sequence[tuple[int, tuple[str, ...]]],
              width: int) -> list[str | _Slot]:
    """The segments of ``attr``'s template from the token lists ``fits`` (``width`` each):
    a token every item holds alike as a literal word, else a slot."""
    parts: list[str | _Slot] = []
    roles = [_roles(t) for _, t in fits]
    for pos in range(width):
        seen = {t[pos] for _, t in fits}
        token = next(iter(seen))
        if len(seen) == 1 and all(r[pos] for r in roles) and not _held(group, fits, token):
            parts.append(token)
        else:
            tag = parts[-1] if parts and isinstance(parts[-1], str) else None
            parts.append(_led(_Slot(attr, pos, tag, {n: t[pos] for n, t in fits})))
    return parts


def _held(group: _Group, fits: Sequence[tuple[int, tuple[str, ...]]], token: str) -> bool:
    """Whether every item of ``fits`` holds ``token`` as the text of an attribute other
    than its key attributes (not its type name): a field's value, not a literal."""
    return bool(token) and token != group.type_name and all(
        any(_text(av) == token for a, av in group.items[n].items() if a not in group.keys[n])
        for n, _ in fits)


def _led(slot: _Slot) -> _Slot:
    """``slot`` with the literal its values all start with (``team_`` of ``team_green``,
    ``team_core``) read off as its lead."""
    values = list(slot.values.values())
    m = _LEAD.match(values[0])
    if m is None or not all(v.startswith(m.group()) and len(v) > m.end() for v in values):
        return slot
    lead = m.group()
    return _Slot(slot.attr, slot.pos, lead[:-1], {n: v[len(lead):] for n, v in
                                                  slot.values.items()}, lead=lead)


def _render(parts: Sequence[str | _Slot], sep: str) -> str:
    return sep.join(_escaped(p) if isinstance(p, str)
                    else _escaped(p.lead) + "{" + p.field + "}" for p in parts)


def _escaped(text: str) -> str:
    return text.replace("{", "{{").replace("}", "}}")


# -- fields --------------------------------------------------------------------------------
def _kind(av: Mapping[str, Any]) -> dict[str, Any]:
    """The model type of one attribute value."""
    (tag, value), = av.items()
    if tag == "S":
        if _DATETIME.match(value) and _parses(datetime.fromisoformat, value):
            stored = _stored_format(value)
            return {"type": "datetime", **({"stored_as": stored} if stored else {})}
        return {"type": "date" if _DATE.match(value) and _parses(date.fromisoformat, value)
                else "string"}
    if tag == "N":
        return {"type": "integer" if _INTEGER.match(value) else "decimal"}
    if tag in ("BOOL", "B", "NULL"):
        return {"type": {"BOOL": "boolean", "B": "binary", "NULL": "null"}[tag]}
    if tag in ("SS", "NS", "BS"):
        inner = ({"type": "string"} if tag == "SS" else {"type": "binary"} if tag == "BS"
                 else {"type": "integer" if all(_INTEGER.match(v) for v in value)
                       else "decimal"})
        return {"type": "set", "items": inner}
    if tag == "L":
        return {"type": "list", "items": _merge([_kind(v) for v in value], members=True)}
    return {"type": "map", "_values": [value]}


def _parses(parse: Callable[[str], object], text: str) -> bool:
    """Whether ``text`` (of a time's or a date's shape) is one (``2024-02-30`` is not)."""
    try:
        parse(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


#: a time as text other writers store it: its separator, fraction and zone
_TIME_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}([T ])\d{2}:\d{2}:\d{2}(?:\.(\d+))?(Z?)\Z")


def _stored_format(text: str) -> str | None:
    """The stored format (:class:`~dynaorm.StoredAs`) of a time stored as ``text``, when
    dynaorm's own form (ISO-8601 with an offset) is not it: ISO-8601 with ``Z`` (with
    milliseconds, JavaScript's, or microseconds), a pattern for whole seconds, with or
    without ``Z``, and for microseconds without a zone; ``None`` for any other text."""
    found = _TIME_TEXT.match(text)
    if found is None:
        return None
    sep, fraction, zone = found.groups()
    if fraction is None:
        return f"%Y-%m-%d{sep}%H:%M:%S{zone}"
    if zone and sep == "T" and len(fraction) != 9:
        return "iso-z-millis" if len(fraction) == 3 else "iso-z"
    return {6: f"%Y-%m-%d{sep}%H:%M:%S.%f{zone}", 9: f"%Y-%m-%d{sep}%H:%M:%S.%f000{zone}"}.get(
        len(fraction))


#: the stored formats of ISO-8601 times with ``Z``
_ZULU: Final = frozenset({"iso-z", "iso-z-millis", "%Y-%m-%dT%H:%M:%SZ",
                          "%Y-%m-%dT%H:%M:%S.%f000Z"})
#: the model types of values stored as ``S`` and as ``N``
_TEXTS: Final = frozenset({"string", "date", "datetime"})
_NUMBERS: Final = frozenset({"integer", "decimal"})


def _merge(kinds: Sequence[dict[str, Any]], members: bool = False) -> dict[str, Any]:
    """The one type of values of ``kinds`` (``any`` when they differ): texts of several
    kinds are strings, integers and fractions decimals, and values stored as ``S`` on some
    items and ``N`` on others a union of a string and a number (pydantic keeps each value
    its type, so each is written back with the tag it was read with). ``members``: the
    values of a list or a map, where a ``NULL`` among others makes the type ``any`` (a
    field's ``NULL`` makes it optional instead)."""
    real = [k for k in kinds if k["type"] != "null"]
    if not real or (members and len(real) < len(kinds)):
        return {"type": "any"}
    names = {k["type"] for k in real}
    return _merge_names(names) if len(names) > 1 else _merge_one(real)


def _merge_names(names: set[str]) -> dict[str, Any]:
    """The one type of values of two or more model types ``names``."""
    number = {"type": "decimal" if "decimal" in names else "integer"}
    if names <= _NUMBERS:
        return number
    if names <= _TEXTS:
        return {"type": "string"}
    if names <= _TEXTS | _NUMBERS:
        return {"type": "union", "of": [{"type": "string"}, number]}
    return {"type": "any"}


def _merge_one(real: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The one type of values ``real`` (none ``null``) all of one model type."""
    kind = real[0]["type"]
    if kind == "union":  # (two-typed on every item: a fraction on one makes it decimal)
        numbers = {t["type"] for k in real for t in k["of"]} & _NUMBERS
        return {"type": "union", "of": [{"type": "string"}, {"type": "decimal" if (
            "decimal" in numbers) else "integer"}]}
    if kind in ("list", "set"):
        return {"type": kind, "items": _merge([k["items"] for k in real])}
    if kind == "map":
        return {"type": "map", "_values": [m for k in real for m in k["_values"]]}
    if kind == "datetime":  # (one stored format, when every value was stored in it; ISO
        # with Z and any fraction, Java's Instant.toString(), is ISO_Z)
        formats = {k.get("stored_as") for k in real}
        one = formats.pop() if len(formats) == 1 else "iso-z" if formats <= _ZULU else None
        return {"type": kind, **({"stored_as": one} if one else {})}
    return dict(real[0])


class _Namer:
    """Names of fields and nested models, each once in its scope."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self.taken = set(taken)
        #: the field name of each attribute named so far
        self.attrs: dict[str, str] = {}

    def __call__(self, wanted: str) -> str:
        while keyword.iskeyword(wanted) or wanted in _MEMBERS:  # (``class``, ``json``)
            wanted += "_"
        name = wanted
        n = 2
        while name in self.taken:
            name, n = f"{wanted}_{n}", n + 1
        self.taken.add(name)
        return name


def _resolved(kind: dict[str, Any], name: str, models: _Namer) -> dict[str, Any]:
    """``kind`` with each map of identifier keys a nested model (``name`` its class), any
    other map ``dict[str, ...]``."""
    if kind["type"] in ("list", "set"):
        return {**kind, "items": _resolved(kind["items"], name, models)}
    if kind["type"] != "map":
        return kind
    values: list[Mapping[str, Any]] = kind["_values"]
    keys = {k for v in values for k in v}
    if keys and all(_IDENT.match(k) and not k.startswith(("_", "model_")) and k != "Meta"
                    and not keyword.iskeyword(k) and k not in _MEMBERS for k in keys):
        fields = _fields_of(values, keys, models, name)
        return {"type": "object", "model": models(_class_name(name)), "fields": fields}
    inner = _merge([_kind(av) for v in values for av in v.values()], members=True)
    return {"type": "map", "values": _resolved(inner, name, models)}


def _fields_of(values: Sequence[Mapping[str, Any]], keys: Iterable[str], models: _Namer,
               owner: str) -> list[dict[str, Any]]:
    """The fields of a nested model from the maps ``values`` (each attribute a field under
    its own name; optional unless every map holds it)."""
    out = []
    for key in sorted(keys):
        avs = [v[key] for v in values if key in v]
        kind = _resolved(_merge([_kind(av) for av in avs]), key[:1].upper() + key[1:], models)
        out.append(_field(key, key, kind, len(avs) == len(values), avs))
    return out


#: the last word of an attribute named as a time (``createdAt``, ``updated_at``,
#: ``expires``, ``timestamp``, ``LastLoginTime``, ``ttl``)
_TIME_WORDS: Final = frozenset({"at", "time", "timestamp", "ts", "epoch", "date", "datetime",
                                "expires", "expiry", "expiration", "ttl", "created",
                                "updated", "modified", "deleted"})
#: the first or last word of an attribute named as a boolean
_BOOL_WORDS: Final = frozenset({"is", "has", "can", "enabled", "active", "deleted", "flag"})
#: the epoch numbers read as times: from 2000-01-01 to 2100-01-01, in seconds or in
#: milliseconds (the two ranges are a thousand times apart: no number is in both)
_EPOCHS: Final = (("epoch-seconds", 946_684_800, 4_102_444_800),
                  ("epoch-millis", 946_684_800_000, 4_102_444_800_000))


def _epoch(stored: str, kind: Mapping[str, Any], avs: Sequence[Mapping[str, Any]]
           ) -> dict[str, Any] | None:
    """A time stored as a number of epoch seconds or milliseconds (``StoredAs``), when both
    say so: the attribute is named as a time (its last word one of :data:`_TIME_WORDS`)
    and every value is a whole number of one of :data:`_EPOCHS`' ranges; or a boolean
    stored as 1 or 0, named as one (``isActive``, ``enabled``: :data:`_BOOL_WORDS`)."""
    words = re.split(r"[^a-z0-9]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stored).lower())
    words = [w for w in words if w]
    if kind.get("type") != "integer" or not avs or not words:
        return None
    try:
        numbers = [int(av["N"]) for av in avs if "NULL" not in av]
    except (KeyError, ValueError):
        return None
    if {words[0], words[-1]} & _BOOL_WORDS and set(numbers) <= {0, 1}:
        return {"type": "boolean", "stored_as": "number"}
    if words[-1] not in _TIME_WORDS:
        return None
    for fmt, low, high in _EPOCHS:
        if numbers and all(low <= v < high for v in numbers):
            return {"type": "datetime", "stored_as": fmt}
    return None


def _field(name: str, stored: str, kind: dict[str, Any], required: bool,
           avs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    kind = _epoch(stored, kind, avs) or kind
    nullable = not required or any("NULL" in av for av in avs)
    out: dict[str, Any] = {"name": name, "stored": stored, **kind,
                           "required": required and not nullable, "nullable": nullable}
    if nullable:
        out["default"] = None
    return out


# -- one entity ----------------------------------------------------------------------------
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


def _entity(group: _Group, table: Mapping[str, Any], keyed: Sequence[str], skip: set[str],
            models: _Namer, plain: frozenset[str] = frozenset()) -> _Entity:
    """The templates (of the ``keyed`` attributes) and fields of one entity from its
    items."""
    templates: dict[str, tuple[list[str | _Slot], set[int]]] = {}
    for attr in keyed:
        found = _template(group, attr, attr in plain)
        if found is not None:
            templates[attr] = found
    slots = [p for parts, _ in templates.values() for p in parts if isinstance(p, _Slot)]
    # (a plain attribute of an index keyed on a template too: a field stored as itself,
    # the index's template that field whole)
    attrs = _attribute_values(group, (set(templates) - plain) | skip)
    names = _Namer(("model_config", *keyed))  # (a key-only field is stored under its
    # name: never a key attribute's)
    table_keys = (table["pk"], table["sk"])
    whole = {a for a in table_keys if a in templates and _is_whole(templates[a][0])}
    stored_of = _name_slots(slots, attrs, names, whole)
    fields = _attribute_fields(group, attrs, names, models, table)
    key_only = _slot_fields(stored_of, slots, templates, fields, table)
    _as_text({s.field for s in slots}, fields)
    rendered = {a: _render(parts, group.sep) for a, (parts, _) in templates.items()}
    # (an item whose key the template does not parse back, a value holding '#' in a
    # table of '|' keys: not placed, its entity's reads would never find it)
    parsed = {a: KeyTemplate.parse(rendered[a]) for a in table_keys if a}
    members = [all(n in templates[a][1] and parsed[a].parse_key(group.keys[n][a]) is not None
                   for a in table_keys if a) for n in range(len(group.items))]
    group.widths = {a: len(parts) for a, (parts, _) in templates.items()}
    return _Entity(group, rendered, fields, key_only, members, parsed)


def _slot_fields(stored_of: Mapping[str, str | None], slots: Sequence[_Slot],
                 templates: Mapping[str, tuple[list[str | _Slot], set[int]]],
                 fields: list[dict[str, Any]], table: Mapping[str, Any]) -> list[str]:
    """Add to ``fields`` each slot field no attribute holds: stored as the key attribute
    it is the whole of, else key-only (in the table key) or optional (in an index key
    only); the key-only ones' names."""
    key_only = []
    table_keys = (table["pk"], table["sk"])
    for slot_field, stored in stored_of.items():
        if stored is not None:
            continue
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


def _is_whole(parts: Sequence[str | _Slot]) -> bool:
    """Whether a template is one field, nothing around it."""
    return len(parts) == 1 and isinstance(parts[0], _Slot) and not parts[0].lead


def _attribute_values(group: _Group, skip: set[str]) -> dict[str, dict[int, Mapping[str, Any]]]:
    out: dict[str, dict[int, Mapping[str, Any]]] = defaultdict(dict)
    for n, item in enumerate(group.items):
        for attr, av in item.items():
            if attr not in skip:
                out[attr][n] = av
    return out


def _name_slots(slots: Sequence[_Slot], attrs: Mapping[str, Mapping[int, Mapping[str, Any]]],
                names: _Namer, whole: set[str]) -> dict[str, str | None]:
    """Name each slot's field: the attribute it always equals, else a slot named before
    it that it always equals, else a new field after its tag (``USER`` -> ``user_id``) or
    its attribute. Returns each slot field's stored attribute (``None``: in keys only)."""
    out: dict[str, str | None] = {}
    named: list[_Slot] = []
    # (the attributes' names first: a key-only field takes another; those named as
    # themselves before the rest, so no field is named as another's attribute)
    for attr in sorted(attrs, key=lambda a: _snake(a) != a):
        _attr_field_name(attr, names)
    for slot in slots:
        same = _same_attribute(slot, attrs)
        if same is not None:
            slot.field = _attr_field_name(same, names)
        else:
            twin = next((s for s in named if _agree(s, slot)), None)
            if twin is not None:
                slot.field = twin.field
            elif slot.attr in whole and _snake(slot.attr) not in names.attrs.values():
                # (the key attribute is the field, stored as itself: named after it)
                slot.field = _snake(slot.attr)
                names.taken.add(slot.field)
                out[slot.field] = None
            else:
                base = f"{_snake(slot.tag)}_id" if slot.tag else _snake(slot.attr)
                slot.field = names(base)
                out[slot.field] = None
        named.append(slot)
    return out


def _attr_field_name(attr: str, names: _Namer) -> str:
    """The field name of attribute ``attr`` (once per entity: :class:`_Namer` remembers)."""
    if attr not in names.attrs:
        names.attrs[attr] = names(_snake(attr))
    return names.attrs[attr]


def _same_attribute(slot: _Slot, attrs: Mapping[str, Mapping[int, Mapping[str, Any]]]
                    ) -> str | None:
    """The attribute ``slot`` holds the text of in every item (its lead too, which is
    then read back into the field: ``user_123`` is the ``user_id`` attribute's value)."""
    for lead in dict.fromkeys(("", slot.lead)):
        for attr, values in attrs.items():
            if all(_text(values.get(n)) == lead + v for n, v in slot.values.items()) and (
                    _one_tag(values.values())):
                if lead:
                    slot.values = {n: lead + v for n, v in slot.values.items()}
                    slot.lead = ""
                return attr
    return None


def _one_tag(avs: Iterable[Mapping[str, Any]]) -> bool:
    """Whether values held as key text are all strings, or all whole numbers spelled as a
    key renders them: a field of both (``S`` on some items, ``N`` on others) or of a
    number spelled otherwise (``05``) is not one a key template renders back."""
    avs = list(avs)
    tags = {next(iter(av)) for av in avs}
    return tags == {"S"} or (tags == {"N"} and all(
        _INTEGER.match(av["N"]) and str(int(av["N"])) == av["N"] for av in avs))


def _agree(a: _Slot, b: _Slot) -> bool:
    """Whether two slots hold one field: the same text in every item that has both, under
    the same tag (else in at least three items of different texts: not a coincidence)."""
    both = a.values.keys() & b.values.keys()
    if not both or any(a.values[n] != b.values[n] for n in both):
        return False
    return a.tag == b.tag or len({a.values[n] for n in both}) >= 3


def _attribute_fields(group: _Group, attrs: Mapping[str, Mapping[int, Mapping[str, Any]]],
                      names: _Namer, models: _Namer, table: Mapping[str, Any]
                      ) -> list[dict[str, Any]]:
    out = []
    total = len(group.items)
    for attr, values in attrs.items():
        avs = [offloaded.held_value(av) for av in values.values()]  # (a value, not its
        # reference)
        if attr == table.get("ttl"):
            kind: dict[str, Any] = {"type": "datetime"}
        else:
            kind = _resolved(_merge([_kind(av) for av in avs]), f"{group.name}_{attr}", models)
        out.append(_field(_attr_field_name(attr, names), attr, kind, len(avs) == total, avs))
        if any(offloaded.reference(av) for av in values.values()):
            out[-1]["offloaded"] = True
    return out


# -- the model -----------------------------------------------------------------------------
def _groups(entries: Sequence[tuple[Item, dict[str, str], bool]], table: Mapping[str, Any],
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


def infer_model(description: Mapping[str, Any], ttl: str | None,
                items: Sequence[Item]) -> Inferred:
    """The model of the table DescribeTable's ``description`` gives, with TTL attribute
    ``ttl``, from a sample of its ``items`` (as DynamoDB gives them); a table without
    items is an :class:`InferenceError`."""
    table = table_of(description, ttl)
    if not items:
        raise InferenceError(f"table {table['name']!r} has no items: a model is inferred "
                             "from a sample of its items")
    table["_sep"] = _separator(items, table)
    type_attr = _type_attribute(items, table)
    own: list[Item] = []
    entries, guards, unplaced = _sorted_items(items, table, type_attr, own)
    groups = _groups(entries, table, type_attr, unplaced)
    skip = {a for a in (type_attr, table["revision_attribute"], VERSION_TTL) if a}
    models = _Namer()
    native, plain = _native_attributes(table, groups)
    keyed = [a for a in _key_attrs(table) if a in (table["pk"], table["sk"]) or a not in native]
    entities = [_readable(g, lambda g: _entity(g, table, keyed, skip, models, plain))
                for g in groups]
    if type_attr is None:  # (told apart by key shape only)
        entities = _untangled(entities,
                              lambda g: _entity(g, table, keyed, skip, models, plain), unplaced)
    _name_entities(entities, models.taken)
    _guards(entities, guards, unplaced, table)
    for e in entities:
        unplaced += [i for i, ok in zip(e.group.items, e.members, strict=True) if not ok]
    table["type_attribute"] = type_attr
    table["offload"] = _offload_at(items)
    types = table.pop("_types")
    del table["_sep"]
    model = {"dynaorm_model": 1, "table": _numbers(table, entities, types),
             "entities": [_entity_model(e, table) for e in entities]}
    keys = [key_of(i, table) for i in unplaced[:_SHOWN]]
    gone = {id(i) for i in (*unplaced, *own)}
    return Inferred(model, len(items), len(items) - len(unplaced) - len(own), len(unplaced),
                    keys, len(own), [i for i in items if id(i) not in gone])


def _offload_at(items: Sequence[Item]) -> str | None:
    """Where most of the offloaded values of ``items`` went (``s3://BUCKET/PREFIX``, the
    printed table's ``offload=``; ``None``: none is)."""
    seen = Counter(r.location for i in items for r in offloaded.references(i).values())
    return seen.most_common(1)[0][0] if seen else None


def read_offloaded(items: Sequence[dict[str, Any]],
                   read: Callable[[list[offloaded.Reference]], Iterable[bytes | Exception]]
                   ) -> None:
    """Each reference to an offloaded value (``Offloaded``) of ``items`` with its object's
    bytes beside it, as a read puts them (``read``: each object's bytes, or the error
    reading it gave): the value is typed, and the printed model decodes it."""
    wanted = [(item, attr, ref) for item in items
              for attr, ref in offloaded.references(item).items()]
    for (item, attr, ref), body in zip(wanted, read([r for *_, r in wanted]), strict=True):
        item[attr] = offloaded.fetched(item[attr], ref, body)


def key_of(item: Item, table: Mapping[str, Any]) -> dict[str, Any]:
    """The table key of ``item`` as the report names it (each key attribute's text), by
    the model's ``table`` (its ``pk`` and ``sk``)."""
    return {a: _text(item.get(a)) for a in (table["pk"], table["sk"]) if a}


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


def _own(item: Item, kind: str | None, table: Mapping[str, Any]) -> bool:
    """Whether ``item`` (of type value ``kind``) is one of dynaorm's own rows that no
    entity claims: a row kind's (a receipt, a Powertools record, a surface's:
    :class:`dynaorm.RowKind`), by its partition key in dynaorm's namespace, or a row of
    ``dynaorm.langgraph`` (by its type name, or its keys and fields where it has none)."""
    pk = _text(item.get(table["pk"]))
    return (pk is not None and pk.startswith(OWN_PREFIX)) or langgraph_row(
        item, table["pk"], table["sk"], kind)


def _sorted_items(items: Sequence[Item], table: Mapping[str, Any], type_attr: str | None,
                  own: list[Item]) -> tuple[list[tuple[Item, dict[str, str], bool]],
                                            list[Item], list[Item]]:
    """The items of entities (with their key texts), dynaorm's unique guards, and those
    of no key it reads; dynaorm's own rows (receipts, LangGraph's) put in ``own``."""
    entries: list[tuple[Item, dict[str, str], bool]] = []
    guards: list[Item] = []
    unplaced: list[Item] = []
    for item in items:
        kind = _text(item.get(type_attr)) if type_attr else None
        if _own(item, kind, table):
            own.append(item)
            continue
        if kind is not None and kind.startswith(OWN_PREFIX) and kind != GUARD_TYPE:
            unplaced.append(item)  # (dynaorm's prefix, no row of its: no entity's name)
            continue
        if kind == GUARD_TYPE or all(a in item for a in _GUARD_ATTRS[::2]):
            guards.append(item)
            continue
        base = _base_key(item, table)
        if base is None:
            unplaced.append(item)
        else:
            entries.append((item, *base))
    return entries, guards, unplaced


def _name_entities(entities: Sequence[_Entity], models: Iterable[str]) -> None:
    """Name each entity's class, none as a nested model's (``models``)."""
    names = _Namer(models)
    for e in sorted(entities, key=lambda e: -len(e.group.items)):
        e.group.name = names(e.group.name)


def _guards(entities: Sequence[_Entity], guards: Sequence[Item], unplaced: list[Item],
            table: Mapping[str, Any]) -> None:
    """dynaorm's unique guard items as ``unique`` rules of the entities they name (one
    rule for the guards of one owner's field: :func:`_rule`)."""
    by_type = {e.group.type_name or e.group.name: e for e in entities}
    found: dict[tuple[str, str], list[tuple[str, Item]]] = defaultdict(list)
    for guard in guards:
        owner = by_type.get(_text(guard.get("owner_type")) or "")
        name = _text(guard.get("unique_field"))
        key = _text(guard.get(table["pk"])) or ""
        field_of = {f["name"] for f in owner.fields} if owner is not None else set()
        if owner is None or name is None or name not in field_of or "#" not in key:
            unplaced.append(guard)
            continue
        found[(owner.group.type_name or owner.group.name, name)].append((key, guard))
    for (type_name, name), keyed in found.items():
        owner = by_type[type_name]
        for rule in _rules(owner, name, keyed, table):
            if rule not in owner.unique:
                owner.unique.append(rule)


def _rules(owner: _Entity, name: str, keyed: Sequence[tuple[str, Item]],
           table: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``unique`` rules of ``owner``'s field ``name`` its guards (``keyed``: each
    guard's key text) hold: one scoped by a template of the owner's fields when the
    guards' keys render it (by the key grammar) before one prefix and it differs between
    them (``acme#email#a@x``, ``beta#email#b@x``: ``scope="{tenant_id}"``), else one of a
    literal prefix per prefix the keys hold."""
    heads = {key: key.rsplit("#", 1)[0] for key, _ in keyed}
    literal = [{"field": name, "prefix": p, "scope": None, "normalize": None}
               for p in dict.fromkeys(heads.values())]
    if len(literal) == 1:
        return literal
    values = {key: _owner_values(owner, guard, table) for key, guard in keyed}
    for scope in _scopes(owner):
        prefixes: set[str] = set()
        leads: set[str] = set()
        for key, head in heads.items():
            if values[key] is None:  # (its owner not sampled: its key parsed below)
                continue
            lead = _rendered(scope, values[key])
            if lead is None or not head.startswith(lead + "#"):
                break
            prefixes.add(head[len(lead) + 1:])
            leads.add(lead)
        else:
            if len(prefixes) != 1 or len(leads) < 2 or "" in prefixes:
                continue
            prefix = prefixes.pop()
            whole = KeyTemplate.parse(f"{scope.source}#{_escaped(prefix)}")
            if all(whole.parse_key(head) is not None for head in heads.values()):
                return [{"field": name, "prefix": prefix, "scope": scope.source,
                         "normalize": None}]
    return literal


def _owner_values(owner: _Entity, guard: Item, table: Mapping[str, Any]
                  ) -> dict[str, str] | None:
    """The field texts of the sampled item of ``owner`` the guard names as its owner (its
    stored attributes, and what its keys hold by the owner's templates); ``None`` when
    the sample does not hold it."""
    wanted = {a: _text(guard.get(o)) for a, o in ((table["pk"], "owner_pk"),
                                                  (table["sk"], "owner_sk")) if a}
    for item in owner.group.items:
        if all(_text(item.get(a)) == text for a, text in wanted.items()):
            out = {f["name"]: t for f in owner.fields if (t := _text(item.get(f["stored"])))}
            for attr, template in owner.parsed.items():
                text = _text(item.get(attr))
                parsed = template.parse_key(text) if text is not None else None
                out.update({k: v for k, v in (parsed or {}).items() if k not in out})
            return out
    return None


def _scopes(owner: _Entity) -> list[KeyTemplate]:
    """The scope templates a guard of ``owner`` may render before its prefix: each field
    alone (``{tenant_id}``), and each leading run of the owner's key templates that ends
    at a field (``ORG#{org_id}``)."""
    out: dict[str, KeyTemplate] = {}
    for f in owner.fields:
        if _IDENT.match(f["name"]):
            out.setdefault("{" + f["name"] + "}", KeyTemplate.parse("{" + f["name"] + "}"))
    for template in owner.parsed.values():
        for name in template.fields:  # (the leading part as written: a format spec kept)
            source = template.prefix_through(name)
            out.setdefault(source, KeyTemplate.parse(source))
    return sorted(out.values(), key=lambda t: -len(t.segments))


def _rendered(scope: KeyTemplate, values: Mapping[str, str] | None) -> str | None:
    """The text ``scope`` renders from ``values`` (``None``: a field it needs is missing,
    or its value is refused there)."""
    if values is None or not all(f in values for f in scope.fields):
        return None
    try:
        return scope.render(values)
    except DynaormError:
        return None


def _native_attributes(table: Mapping[str, Any], groups: Sequence[_Group]
                       ) -> tuple[set[str], frozenset[str]]:
    """Mark native each GSI keyed on entity attributes as stored (several attributes to a
    key part; or every item's value a whole field, no literal: ``Operator``, ``Date``,
    ``TransactionId``; or the table's own key attributes, an inverted index) and give the
    attributes they are keyed on; and the plain attributes of the other GSIs (a whole
    field in every item, beside a key attribute holding a template: ``Operator`` with
    ``GSI1SK`` = ``DATE#...``), each a field stored as itself that the index's template
    holds whole."""
    out: set[str] = set()
    plain: set[str] = set()
    table_keys = (table["pk"], table["sk"])
    for index in table["indexes"]:
        if index["kind"] != "gsi":
            continue
        attrs = [*index["pk"], *index["sk"]]
        own = [a for a in attrs if a not in table_keys]  # (none: the table's keys inverted,
        # a template index of the entities' own templates)
        whole = [a for a in own if all(_whole(g, a) for g in groups)]
        native = len(index["pk"]) > 1 or len(index["sk"]) > 1 or (bool(own) and (
            len(whole) == len(own)))
        if native:
            index["native"] = True
            out.update(a for a in attrs if a not in table_keys)
        else:
            plain.update(a for a in whole if not _KEYISH.search(a))
    return out, frozenset(plain - out)


def _whole(group: _Group, attr: str) -> bool:
    """Whether every value of ``attr`` in ``group`` is one field, no literal around it."""
    found = _template(group, attr)
    if found is None:
        return True
    parts = found[0]
    if len(parts) != 1:
        return False
    if isinstance(parts[0], _Slot):  # (a lead, ``txn_`` of ``txn_8f3a``, is a literal only
        # in an attribute named as a key's: ElectroDB's ``gsi1pk``)
        return _is_whole(parts) or _KEYISH.search(attr) is None
    # one text in every item: a value the sample holds once (``AgentB``), unless the
    # attribute is named as a key's (``GSI1PK`` = ``ALL_ORDERS``: a literal)
    return _KEYISH.search(attr) is None


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


def _entity_model(e: _Entity, table: Mapping[str, Any]) -> dict[str, Any]:
    indexes = []
    for index in table["indexes"]:
        if index.get("native"):
            continue
        attrs = index.get("pk", [table["pk"]]) + index.get("sk", [])
        if index["kind"] == "lsi":
            attrs = [table["pk"], *index["sk"]]
        if all(a in e.templates for a in attrs):
            indexes.append({"name": index["name"], "pk": e.templates[attrs[0]],
                            "sk": e.templates[attrs[1]] if len(attrs) > 1 else None})
    return {"name": e.group.name, "type_name": e.group.type_name or e.group.name,
            "pk": e.templates[table["pk"]],
            "sk": e.templates.get(table["sk"]) if table["sk"] else None,
            "fields": e.fields, "indexes": indexes, "unique": e.unique,
            "versioned": e.group.versioned, "key_only": e.key_only, "lock": _lock(e, table)}
    # (the rest as the model format's defaults)


def _lock(e: _Entity, table: Mapping[str, Any]) -> dict[str, Any] | None:
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

