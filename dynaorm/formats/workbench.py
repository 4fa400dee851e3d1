"""NoSQL Workbench's data model (``ModelName``, ``ModelMetadata``, ``DataModel``: per table
its ``KeyAttributes``, ``NonKeyAttributes`` with their types, one ``TableFacets`` entry per
entity, whose key aliases are the key templates, and its ``GlobalSecondaryIndexes``). A
facet knows no index templates, unique rules or versions: read back, each GSI is keyed on
the attributes of the entities that name them. It has no place for an LSI, a
multi-attribute key or a vector index: an export leaves them out and says so."""

import re
from collections.abc import Callable, Mapping
from typing import Any, Final

from dynaorm.formats._common import (
    At,
    left_out,
    template,
    unknown_shards,
    vector_fields,
)
from dynaorm.formats.code import identifier
from dynaorm.schema.templates import SHARD_FIELD, KeyTemplate

_WORKBENCH_TYPES: Final = ("S", "N", "B", "BOOL", "M", "L", "SS", "NS", "BS", "NULL")
_SET_TAGS: Final = {"string": "SS", "binary": "BS", "integer": "NS", "number": "NS",
                    "decimal": "NS"}



def _attribute_type(desc: Mapping[str, Any]) -> str:
    """The DynamoDB type a field of type ``desc`` is stored as (Workbench's names)."""
    kind = desc["type"]
    if kind in ("integer", "number", "decimal") or (kind == "union" and all(
            _attribute_type(d) == "N" for d in desc["of"])):
        return "N"
    if kind == "enum":
        return "N" if all(isinstance(v, int | float) for v in desc["values"]) else "S"
    return {"boolean": "BOOL", "binary": "B", "list": "L", "map": "M", "object": "M",
            "union": "S", "any": "S"}.get(kind, _SET_TAGS.get(desc.get("items", {}).get(
                "type", ""), "L") if kind == "set" else "S")


def _facet_attributes(model: Mapping[str, Any], entity: Mapping[str, Any],
                      keys: tuple[str | None, ...]) -> dict[str, str]:
    """The non-key attributes an entity's rows hold, with their types: its stored fields,
    the index keys it writes, the type and revision attributes."""
    table, out = model["table"], {}
    for f in entity["fields"]:
        if f["stored"] not in keys and f["name"] not in entity.get("key_only", ()) and not (
                f.get("excluded")):  # (a TTL field is stored as epoch seconds)
            out[f["stored"]] = "N" if f["name"] == entity.get("ttl_field") else "B" if (
                f.get("encrypted") or f.get("compressed") == 0) else _attribute_type(f)
    indexes = {i["name"]: i for i in table["indexes"]}
    for idx in entity.get("indexes", ()):
        index = indexes[idx["name"]]
        for attr in ([*index.get("pk", ()), *index["sk"]] if index["kind"] == "gsi" else
                     index["sk"]):
            if attr not in keys:
                out.setdefault(attr, table.get("key_types", {}).get(attr, "S"))
    for attr in (table.get("type_attribute"), table.get("revision_attribute")):
        if attr:
            out[attr] = "S"
    return out


def to_format(model: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    table = model["table"]
    key_types = table.get("key_types", {})
    keys = (table["pk"], table.get("sk"))
    gsis, notes = left_out(model, "workbench")
    attributes = {}
    facets = []
    for e in model["entities"]:
        own = _facet_attributes(model, e, keys)
        attributes.update({a: t for a, t in own.items() if a not in attributes})
        alias = {"PartitionKeyAlias": e["pk"]}
        if e.get("sk") is not None:
            alias["SortKeyAlias"] = e["sk"]
        facets.append({"FacetName": e["name"], "KeyAttributeAlias": alias, "TableData": [],
                       "NonKeyAttributes": list(own), "DataAccess": {"MySql": {}}})
        notes += [f"workbench: left out {e['name']}'s {what}" for what, there in (
            ("unique rules", e.get("unique")), ("versioning", e.get("versioned")),
            ("encrypted fields", e.get("encrypted")), ("previous layout", e.get("previous")))
            if there]
        notes += vector_fields(e, "workbench")
        notes += [f"workbench: {e['name']}.{f['name']} is stored compressed (binary) from "
                  f"{f['compressed']} bytes on: typed as its plain value" for f in e["fields"]
                  if f.get("compressed") and not f.get("encrypted")]

    def key(attr: str) -> dict[str, str]:
        return {"AttributeName": attr, "AttributeType": key_types.get(attr, "S")}

    key_attributes = {"PartitionKey": key(table["pk"])}
    if table.get("sk"):
        key_attributes["SortKey"] = key(table["sk"])
    data = {
        "TableName": table["name"], "KeyAttributes": key_attributes,
        "NonKeyAttributes": [{"AttributeName": a, "AttributeType": t}
             for a, t in attributes.items() if a not in keys],
        "TableFacets": facets}
    if gsis:
        data["GlobalSecondaryIndexes"] = [_workbench_gsi(i, key) for i in gsis]
    data.update({"TableData": [], "DataAccess": {"MySql": {}},
                 "BillingMode": "PAY_PER_REQUEST"})
    return {"ModelName": table["name"],
            "ModelMetadata": {"Author": "dynaorm", "Description": f"The design of table "
                              f"{table['name']!r}, written by dynaorm",
                              "AWSService": "Amazon DynamoDB", "Version": "3.0"},
            "DataModel": [data]}, notes



def _workbench_gsi(index: Mapping[str, Any], key: Callable[[str], dict[str, str]]
                   ) -> dict[str, Any]:
    keys = {"PartitionKey": key(index["pk"][0])}
    if index["sk"]:
        keys["SortKey"] = key(index["sk"][0])
    projection = index.get("projection", "ALL")
    shown = ({"ProjectionType": projection} if isinstance(projection, str)
             else {"ProjectionType": "INCLUDE",
                   "NonKeyAttributes": list(projection)})
    return {"IndexName": index["name"], "KeyAttributes": keys, "Projection": shown}


# -- NoSQL Workbench -----------------------------------------------------------------------
def _key_of(at: At) -> tuple[str, str]:
    return (at.get("AttributeName", str, "an attribute name").value,
            at.get("AttributeType", str, "S, N or B", choices=("S", "N", "B")).value)


def _alias(text: str) -> str:
    """A facet's key alias as a key template: a template stays; ``<name>`` parts become
    ``{name}``; a bare name is the one field the key holds; anything else a constant."""
    if "{" in text:
        return text
    if "<" in text:
        return re.sub(r"<(\w+)>", r"{\1}", text)
    return f"{{{text}}}" if re.fullmatch(r"[A-Za-z_]\w*", text) else text


_FROM_WORKBENCH: Final[dict[str, dict[str, Any]]] = {
    "S": {"type": "string"}, "N": {"type": "decimal"}, "B": {"type": "binary"},
    "BOOL": {"type": "boolean"}, "M": {"type": "map", "values": {"type": "any"}},
    "L": {"type": "list", "items": {"type": "any"}},
    "SS": {"type": "set", "items": {"type": "string"}},
    "NS": {"type": "set", "items": {"type": "decimal"}},
    "BS": {"type": "set", "items": {"type": "binary"}}, "NULL": {"type": "any"}}
_KEY_FIELDS: Final[dict[str, dict[str, Any]]] = {
    "S": {"type": "string"}, "N": {"type": "integer"}, "B": {"type": "binary"}}


def _read_workbench(t: At, ours: bool) -> dict[str, Any]:
    name = t.get("TableName", str, "a table name").value
    keys = t.get("KeyAttributes", dict, "an object")
    pk, pk_type = _key_of(keys.get("PartitionKey", dict, "an object"))
    sk, sk_type = _key_of(keys.get("SortKey", dict, "an object")) if "SortKey" in (
        keys.value) else (None, "S")
    types_ = {}
    for a in t.get("NonKeyAttributes", list, "a list", default=[]).items():
        types_[a.get("AttributeName", str, "a name").value] = a.get(
            "AttributeType", str, "a type", choices=_WORKBENCH_TYPES).value
    key_types = {a: k for a, k in ((pk, pk_type), (sk, sk_type)) if a and k != "S"}
    indexes = [_workbench_index(g, key_types) for g in t.get(
        "GlobalSecondaryIndexes", list, "a list", default=[]).items()]
    facets = list(t.get("TableFacets", list, "a list of facets", default=[]).items())
    every = [set(_listed(f)) for f in facets]
    own = {a: a if every and all(a in names for names in every) else None
           for a in ("_type", "_rev")}
    entities = [_facet(f, (pk, sk), key_types, types_, own, ours) for f in facets]
    return {"dynaorm_model": 1, "table": {
        "name": name, "pk": pk, "sk": sk, "key_types": key_types,
        "type_attribute": own["_type"], "revision_attribute": own["_rev"], "ttl": None,
        "stream": None, "indexes": indexes}, "entities": entities}


def _workbench_index(g: At, key_types: dict[str, str]) -> dict[str, Any]:
    """A global secondary index of a workbench table, as the model states it; the types of
    its key attributes other than strings go into ``key_types``."""
    gkeys = g.get("KeyAttributes", dict, "an object")
    gpk, gpk_type = _key_of(gkeys.get("PartitionKey", dict, "an object"))
    gsk = _key_of(gkeys.get("SortKey", dict, "an object")) if "SortKey" in gkeys.value \
        else None
    projection = g.get("Projection", dict, "an object", default={"ProjectionType": "ALL"})
    kind = projection.get("ProjectionType", str, "ALL, KEYS_ONLY or INCLUDE",
                          choices=("ALL", "KEYS_ONLY", "INCLUDE")).value
    key_types.update({a: k for a, k in ((gpk, gpk_type), gsk or ("", "S")) if k != "S"})
    return {"name": g.get("IndexName", str, "an index name").value, "kind": "gsi",
            "native": True, "pk": [gpk], "sk": [gsk[0]] if gsk else [],
            "projection": projection.get("NonKeyAttributes", list, "names").value
            if kind == "INCLUDE" else kind}


def _facet(f: At, keys: tuple[str, str | None], key_types: Mapping[str, str],
           types_: Mapping[str, str], own: Mapping[str, str | None], ours: bool
           ) -> dict[str, Any]:
    facet = f.get("FacetName", str, "a facet name").value
    cls = identifier(facet)
    alias = f.get("KeyAttributeAlias", dict, "an object")
    as_template = (lambda text: text) if ours else _alias
    pk = template(At(as_template(alias.get("PartitionKeyAlias", str, "an alias").value),
                       alias.place + ".PartitionKeyAlias"), "a key alias")
    sk_alias = alias.get("SortKeyAlias", str, "an alias", default=None).value
    if (sk_alias is None) != (keys[1] is None):
        raise alias.fail("a facet names a sort key alias exactly when its table has a sort key")
    sk = None if sk_alias is None else template(At(as_template(sk_alias), alias.place +
                                                     ".SortKeyAlias"), "a key alias")
    listed = _listed(f)
    keyed, key_only = _key_fields(keys, (pk, sk), key_types, types_, listed)
    fields = {n: d for n, d in keyed.items() if n not in listed}
    for attr in listed:
        if attr in own.values():
            continue
        if attr in keyed:
            fields[attr] = keyed[attr]
            continue
        name = identifier(attr, [*fields, *keyed])
        desc = _KEY_FIELDS.get(key_types[attr], {}) if attr in key_types else _FROM_WORKBENCH[
            types_.get(attr, "S")]
        fields[name] = {"name": name, "stored": attr, **desc, "required": False,
                        "nullable": True, "default": None}
    return {"name": cls, "type_name": facet, "pk": pk, "sk": sk, "fields": list(fields.values()),
            "key_only": key_only, "shards": unknown_shards({"primary": (pk, sk)}),
            "_place": f.place}


def _listed(facet: At) -> list[str]:
    """A facet's ``NonKeyAttributes``: attribute names."""
    return [a.of(str, "an attribute name") for a in facet.get(
        "NonKeyAttributes", list, "a list of attribute names", default=[]).items()]


def _key_fields(keys: tuple[str, str | None], templates: tuple[str, str | None],
                key_types: Mapping[str, str], types_: Mapping[str, str], listed: list[str]
                ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The fields a facet's key templates name (required; typed by the key attribute a
    template of exactly the field is stored as, else by the attribute of its name), and
    those the items hold only in their key (not listed as their own attribute)."""
    keyed = {}
    key_only = []
    for attr, shape in zip(keys, templates, strict=True):
        parsed = KeyTemplate.parse(shape) if shape else None
        for name in (f for f in (parsed.fields if parsed else ()) if f != SHARD_FIELD):
            exact = shape == f"{{{name}}}"
            desc = _KEY_FIELDS[key_types.get(attr or "", "S")] if exact else (
                _FROM_WORKBENCH[types_[name]] if name in types_ else {"type": "string"})
            keyed[name] = {"name": name, "stored": name, **desc, "required": True,
                           "nullable": False}
            if attr != name and name not in listed and parsed and name in parsed.exact_fields:
                key_only.append(name)  # (a field the item holds only in its key)
    return keyed, key_only


def from_format(doc: Any) -> list[dict[str, Any]]:
    """The models (one per table) a parsed Workbench file holds, checked (aliases in a file
    dynaorm wrote are its key templates)."""
    at = At(doc)
    tables = at.get("DataModel", list, "a list of tables")
    if not tables.value:
        raise tables.fail("a model of no table")
    ours = at.get("ModelMetadata", dict, "an object", default={}).get(
        "Author", str, "a name", default="").value == "dynaorm"
    return [_read_workbench(t, ours) for t in tables.items()]
