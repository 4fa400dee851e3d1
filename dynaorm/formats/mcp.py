"""The AWS DynamoDB MCP server's ``schema.json`` (``tables``: ``table_config``,
``gsi_list``, ``entities`` with ``entity_type``, key templates, ``gsi_mappings``, ``fields``
and ``access_patterns``), as the server's own validator reads it."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from dynaorm.formats._common import (
    RANGES,
    At,
    left_out,
    name_of,
    template,
    unknown_shards,
    vector_fields,
)
from dynaorm.formats.code import identifier

__all__ = ["from_format", "to_format"]

_MCP_FIELD_TYPES: Final = ("string", "integer", "decimal", "boolean", "array", "object",
                           "uuid")
_MCP_OPERATIONS: Final = ("GetItem", "PutItem", "DeleteItem", "Query", "Scan", "UpdateItem",
                          "BatchGetItem", "BatchWriteItem")


def _mcp_type(desc: Mapping[str, Any]) -> dict[str, Any]:
    kind = desc["type"]
    if kind in ("list", "set"):
        return {"type": "array", "item_type": _mcp_type(desc["items"])["type"]}
    named = {"integer": "integer", "number": "decimal", "decimal": "decimal",
             "boolean": "boolean", "uuid": "uuid", "map": "object", "object": "object",
             "any": "object"}.get(kind, "string")
    return {"type": named}


def _mcp_operation(p: Mapping[str, Any]) -> str:
    operation = str(p["operation"])
    if operation == "TransactWriteItems":
        return "DeleteItem" if p["name"].startswith("delete_") else "PutItem"
    return operation


def _mcp(model: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    table = model["table"]
    gsis, notes = left_out(model, "mcp")
    config = {"table_name": table["name"], "partition_key": table["pk"]}
    if table.get("sk"):
        config["sort_key"] = table["sk"]
    out: dict[str, Any] = {"table_config": config}
    if gsis:
        out["gsi_list"] = [{"name": i["name"], "partition_key": i["pk"][0],
                            **({"sort_key": i["sk"][0]} if i["sk"] else {})} for i in gsis]
    kept = {i["name"]: i for i in gsis}
    entities: dict[str, Any] = {}
    number = 0
    named = Counter(e["name"] for e in model["entities"])
    for e in model["entities"]:
        entity: dict[str, Any] = {"entity_type": e["type_name"], "pk_template": e["pk"]}
        if e.get("sk") is not None:
            entity["sk_template"] = e["sk"]
        mappings = [{"name": i["name"], "pk_template": i["pk"],
                     **({"sk_template": i["sk"]} if i.get("sk") else {})}
                    for i in e.get("indexes", ()) if i["name"] in kept]
        mappings += _native_mappings(e, gsis)
        if mappings:
            entity["gsi_mappings"] = mappings
        entity["fields"] = [{"name": f["name"], **_mcp_type(f), "required": f["required"]}
                            for f in e["fields"]]
        notes += vector_fields(e, "mcp")
        patterns, number = _mcp_patterns(e, kept, number, notes)
        entity["access_patterns"] = patterns
        key = e["name"] if named[e["name"]] == 1 else e["type_name"]
        if key != e["name"]:  # (classes of one name, each with its own type name)
            notes.append(f"mcp: several entities are named {e['name']!r}: the one stored as "
                         f"{e['type_name']!r} is keyed by its type name")
        entities[key] = entity
    out["entities"] = entities
    return {"tables": [out]}, notes


def _mcp_patterns(e: Mapping[str, Any], kept: Mapping[str, Any], number: int,
                  notes: list[str]) -> tuple[list[dict[str, Any]], int]:
    """An entity's ``access_patterns`` in the MCP server's shape, numbered on from
    ``number``, and the last number; a search (which it has no place for) noted."""
    patterns = []
    for p in e.get("access_patterns", ()):
        if p["operation"] == "SearchVectors":
            notes.append(f"mcp: left out {e['name']}'s search {p['name']!r}: the format has "
                         "no place for it")
            continue
        number = p.get("pattern_id", number + 1)
        pattern = {"pattern_id": number, "name": p["name"],
                   "description": p.get("description") or _describe(e, p),
                   "operation": _mcp_operation(p)}
        if p.get("index") and p["index"] in kept:
            pattern["index_name"] = p["index"]
        if p.get("range_condition"):
            pattern["range_condition"] = p["range_condition"]
        pattern["parameters"] = [dict(q) for q in p.get("parameters", ())]
        pattern["return_type"] = p.get("returns") or "entity_list"
        patterns.append(pattern)
    return patterns, number


def _native_mappings(e: Mapping[str, Any], gsis: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``gsi_mappings`` of the native one-attribute GSIs an entity lands in: a
    template of exactly the field stored as each key attribute."""
    by_attr = {f["stored"]: f["name"] for f in e["fields"]}
    out = []
    for index in gsis:
        if index.get("native") and index["name"] in e.get("lands_in", ()):
            mapping = {"name": index["name"], "pk_template": f"{{{by_attr[index['pk'][0]]}}}"}
            if index["sk"]:
                mapping["sk_template"] = f"{{{by_attr[index['sk'][0]]}}}"
            out.append(mapping)
    return out


def _describe(e: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    params = ", ".join(q["name"] for q in p.get("parameters", ()))
    where = f" on {p['index']}" if p.get("index") else ""
    return f"{p['operation']} {e['name']}{where}" + (f" by {params}" if params else "")


# -- the MCP server's schema.json ----------------------------------------------------------
_FROM_MCP: Final[dict[str, dict[str, Any]]] = {
    "string": {"type": "string"}, "integer": {"type": "integer"},
    "decimal": {"type": "decimal"}, "boolean": {"type": "boolean"}, "uuid": {"type": "uuid"},
    "object": {"type": "map", "values": {"type": "any"}}}


def _read_mcp(t: At) -> dict[str, Any]:
    config = t.get("table_config", dict, "an object")
    sk = config.get("sort_key", str, "an attribute name", default=None).value
    table = {"name": config.get("table_name", str, "a table name").value,
             "pk": config.get("partition_key", str, "an attribute name").value, "sk": sk,
             "key_types": {}, "type_attribute": "_type", "revision_attribute": "_rev",
             "ttl": None, "stream": None, "indexes": []}
    for g in t.get("gsi_list", list, "a list of GSIs", default=[]).items():
        gsk = g.get("sort_key", str, "an attribute name", default=None).value
        table["indexes"].append({"name": g.get("name", str, "an index name").value,
                                 "kind": "gsi", "native": False,
                                 "pk": [g.get("partition_key", str, "an attribute").value],
                                 "sk": [gsk] if gsk else [], "projection": "ALL"})
    known = {i["name"] for i in table["indexes"]}
    entities = [_mcp_entity(name, e, known, sk is not None)
                for name, e in t.get("entities", dict, "an object of entities").members()]
    return {"dynaorm_model": 1, "table": table, "entities": entities}


def _mcp_entity(name: str, e: At, known: set[str], has_sk: bool) -> dict[str, Any]:
    cls = identifier(name)
    sk = e.get("sk_template", str, "a key template", default=None)
    if (sk.value is None) == has_sk:
        raise e.fail("an entity has an sk_template exactly when its table has a sort_key")
    indexes = []
    for m in e.get("gsi_mappings", list, "a list of mappings", default=[]).items():
        index = m.get("name", str, "an index name")
        if index.value not in known:
            raise index.fail(f"no GSI {index.value!r} in the table's gsi_list")
        msk = m.get("sk_template", str, "a key template", default=None)
        indexes.append({"name": index.value, "pk": template(m.get("pk_template", str, "a key"
                                                                   " template"), "a template"),
                        "sk": None if msk.value is None else template(msk, "a template")})
    fields = []
    for f in e.get("fields", list, "a list of fields").items():
        kind = f.get("type", str, "a field type", choices=_MCP_FIELD_TYPES).value
        desc = ({"type": "list", "items": _FROM_MCP[f.get(
            "item_type", str, "an item type", choices=tuple(_FROM_MCP)).value]}
            if kind == "array" else _FROM_MCP[kind])
        required = f.get("required", bool, "true or false").value
        fields.append({"name": name_of(f.get("name", str, "a field name"), "a field name"),
                       "stored": f.value["name"], **desc, "required": required,
                       "nullable": not required, **({} if required else {"default": None})})
    patterns = [_mcp_pattern(p, known) for p in e.get("access_patterns", list, "a list",
                                                      default=[]).items()]
    pk = template(e.get("pk_template", str, "a key template"), "a template")
    sk_text = None if sk.value is None else template(sk, "a template")
    shards = unknown_shards({"primary": (pk, sk_text),
                              **{i["name"]: (i["pk"], i["sk"]) for i in indexes}})
    return {"name": cls, "type_name": e.get("entity_type", str, "a type name").value,
            "pk": pk, "sk": sk_text, "fields": fields, "indexes": indexes, "shards": shards,
            "patterns": "declared" if patterns else "derived", "access_patterns": patterns,
            "_place": e.place}


def _mcp_pattern(p: At, known: set[str]) -> dict[str, Any]:
    index = p.get("index_name", str, "an index name", default=None)
    params = []
    for q in p.get("parameters", list, "a list of parameters", default=[]).items():
        kind = q.get("type", str, "a parameter type",
                     choices=("string", "integer", "boolean", "entity")).value
        params.append({"name": q.get("name", str, "a parameter name").value, "type": kind,
                       **({"entity_type": name_of(q.get("entity_type", str, "an entity name"),
                                                "an entity name")} if kind == "entity" else {})})
    return {"name": name_of(p.get("name", str, "a pattern name"), "a pattern's name"),
            "operation": p.get("operation", str, "an operation", choices=_MCP_OPERATIONS).value,
            "index": index.value, "parameters": params,
            "range_condition": p.get("range_condition", str, "a range condition", default=None,
                                     choices=RANGES).value,
            "returns": p.get("return_type", str, "a return type", choices=(
                "single_entity", "entity_list", "success_flag", "mixed_data", "void")).value,
            "description": p.get("description", str, "a description", default="").value,
            "pattern_id": p.get("pattern_id", int, "a number").value}




to_format = _mcp


def from_format(doc: Any) -> list[dict[str, Any]]:
    """The models (one per table) a parsed ``schema.json`` holds, checked."""
    tables = At(doc).get("tables", list, "a list of tables")
    if not tables.value:
        raise tables.fail("a model of no table")
    return [_read_mcp(t) for t in tables.items()]
