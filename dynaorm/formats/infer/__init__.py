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

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Final

from dynaorm.codec import VERSION_TTL
from dynaorm.errors import DynaormError
from dynaorm.formats.infer.entities import (
    _entity,
    _entity_model,
    _name_entities,
    _numbers,
    _readable,
    _untangled,
)
from dynaorm.formats.infer.grouping import _groups, _type_attribute
from dynaorm.formats.infer.items import Item, Table, _key_attrs, _separator, _text
from dynaorm.formats.infer.naming import _Namer
from dynaorm.formats.infer.own import (
    _guards,
    _offload_at,
    _sorted_items,
    opened_values,
    read_offloaded,
)
from dynaorm.formats.infer.templates import _native_attributes

__all__ = ["InferenceError", "Inferred", "infer_model", "key_of", "opened_values", "read_offloaded",
           "table_of"]

#: the unplaced keys the model names (the rest are only counted)
_SHOWN: Final = 5


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
            "indexes": indexes, "_types": types, "_keys": (*pk, *sk)}


def _key_schema(schema: Iterable[Mapping[str, str]]) -> tuple[list[str], list[str]]:
    pk = [k["AttributeName"] for k in schema if k["KeyType"] == "HASH"]
    sk = [k["AttributeName"] for k in schema if k["KeyType"] == "RANGE"]
    return pk, sk


def _index(index: Mapping[str, Any], kind: str) -> dict[str, Any]:
    pk, sk = _key_schema(index["KeySchema"])
    projection = index.get("Projection", {})
    shown = projection.get("ProjectionType", "ALL")
    if shown == "INCLUDE":
        shown = list(projection.get("NonKeyAttributes", ()))
    return {"name": index["IndexName"], "kind": kind, "projection": shown, "sk": sk,
            **({"native": False, "pk": pk} if kind == "gsi" else {})}


def infer_model(description: Mapping[str, Any], ttl: str | None,
                items: Sequence[Item], opened: Mapping[int, Any] | None = None) -> Inferred:
    """The model of the table DescribeTable's ``description`` gives, with TTL attribute
    ``ttl``, from a sample of its ``items`` (as DynamoDB gives them; ``opened``: the
    plaintexts of sealed values, by the identity of each value stored: a sealed field
    whose every value is there is typed by them, else ``Any``); a table without items is
    an :class:`InferenceError`."""
    table = table_of(description, ttl)
    if not items:
        raise InferenceError(f"table {table['name']!r} has no items: a model is inferred "
                             "from a sample of its items")
    table["_sep"], table["_opened"] = _separator(items, table), opened or {}
    type_attr = _type_attribute(items, table)
    own: list[Item] = []
    entries, guards, unplaced = _sorted_items(items, table, type_attr, own)
    groups = _groups(entries, table, type_attr, unplaced)
    skip = {a for a in (type_attr, table["revision_attribute"], VERSION_TTL) if a}
    models = _Namer()
    native, plain = _native_attributes(table, groups)
    keyed = [a for a in _key_attrs(table) if a in table["_keys"] or a not in native]
    build = partial(_entity, table, keyed, skip, models, plain)
    entities = [_readable(g, build) for g in groups]
    if type_attr is None:  # (told apart by key shape only)
        entities = _untangled(entities, build, unplaced)
    _name_entities(entities, models.taken)
    _guards(entities, guards, unplaced, table)
    for e in entities:
        unplaced += [i for i, ok in zip(e.group.items, e.members, strict=True) if not ok]
    table["type_attribute"] = type_attr
    table["offload"] = _offload_at(items)
    types = table.pop("_types")
    del table["_sep"], table["_opened"]
    model = {"dynaorm_model": 1, "table": _numbers(table, entities, types),
             "entities": [_entity_model(e, table) for e in entities]}
    del table["_keys"]
    keys = [key_of(i, table) for i in unplaced[:_SHOWN]]
    gone = {id(i) for i in (*unplaced, *own)}
    return Inferred(model, len(items), len(items) - len(unplaced) - len(own), len(unplaced),
                    keys, len(own), [i for i in items if id(i) not in gone])


def key_of(item: Item, table: Table) -> dict[str, Any]:
    """The table key of ``item`` as the report names it (each key attribute's text), by
    the model's ``table`` (its ``pk`` and ``sk``)."""
    return {a: _text(item.get(a)) for a in (table["pk"], table["sk"]) if a}
