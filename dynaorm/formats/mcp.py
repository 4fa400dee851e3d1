"""The AWS DynamoDB MCP server's ``schema.json`` (``tables``: ``table_config``,
``gsi_list``, ``entities`` with ``entity_type``, key templates, ``gsi_mappings``, ``fields``
and ``access_patterns``), as the server's own validator reads it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from typing import Any, Final

from dynaorm.formats._common import (
    RANGES,
    At,
    attributes,
    left_out,
    name_of,
    template,
    unknown_shards,
    vector_fields,
)
from dynaorm.formats.code import identifier
from dynaorm.schema.templates import KeyTemplate

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


#: the type name guard items are stored under (unique rules' guards: an entity of their own)
GUARD_TYPE: Final = "dynaorm:unique"
#: a key template the format holds: ``{name}`` parts (a format spec said apart), no shard
_PLAIN: Final = re.compile(r"(?:[^{}]|\{(?!shard[:}])[A-Za-z_]\w*(:[^{}]*)?\})*")
_SPEC: Final = re.compile(r"\{([A-Za-z_]\w*):[^{}]*\}")


def _template(text: str, who: str, notes: list[str]) -> str:
    """A key template in the format's syntax: a format spec (``{sent:%Y-%m-%d}``) left
    out, and said on stderr (the format's templates hold a field's value as it is)."""
    plain = _SPEC.sub(r"{\1}", text)
    if plain != text:
        notes.append(f"mcp: {who}'s key {text!r} formats a value: written {plain!r}, the "
                     "format's templates hold no format")
    return plain


def _one(names: list[str]) -> str | list[str]:
    """A GSI's key (attributes or templates) as the server's schema holds it: one, or a
    list for a multi-attribute key (awslabs/mcp PR #2520)."""
    return names[0] if len(names) == 1 else names


def to_format(model: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    table = model["table"]
    gsis, notes = left_out(model, "mcp", multi=True)
    out = _table_config(table, gsis)
    out["entities"] = _entities(model, table, {i["name"]: i for i in gsis}, notes)
    return {"tables": [out]}, notes


def _table_config(table: Mapping[str, Any], gsis: list[dict[str, Any]]) -> dict[str, Any]:
    """The table's ``table_config`` and, when it has GSIs, its ``gsi_list``."""
    config = {"table_name": table["name"], "partition_key": table["pk"]}
    if table.get("sk"):
        config["sort_key"] = table["sk"]
    out: dict[str, Any] = {"table_config": config}
    if gsis:
        out["gsi_list"] = [{"name": i["name"], "partition_key": _one(i["pk"]),
                            **({"sort_key": _one(i["sk"])} if i["sk"] else {})} for i in gsis]
    return out


def _entities(model: Mapping[str, Any], table: Mapping[str, Any], kept: Mapping[str, Any],
              notes: list[str]) -> dict[str, Any]:
    """Every entity the format can hold, with its guards, under its name (or its type
    name, where several share a name); one with a sharded key left out."""
    entities = {}
    ids = _Ids(model)
    named = Counter(e["name"] for e in model["entities"])
    for e in model["entities"]:
        key = _entity_key(e, named, notes)
        own = _own_key(e, table)
        if not all(_PLAIN.fullmatch(t) for t in own.values()):
            notes.append(f"mcp: left out {e['name']}: its key {own!r} is sharded, which the "
                         "format's templates cannot say")
            continue
        entities[key] = _entity(e, table, own, kept, ids, notes)
        entities.update(_other_rows(e, key, table, ids, notes))
    return entities


def _entity_key(e: Mapping[str, Any], named: Counter[str], notes: list[str]) -> str:
    """The key an entity is written under: its name, or its type name where classes of
    one name each have their own type name."""
    key = e["name"] if named[e["name"]] == 1 else e["type_name"]
    if key != e["name"]:
        notes.append(f"mcp: several entities are named {e['name']!r}: the one stored as "
                     f"{e['type_name']!r} is keyed by its type name")
    return str(key)


def _own_key(e: Mapping[str, Any], table: Mapping[str, Any]) -> Mapping[str, str]:
    """The key templates of the entity's own row (its first row, where it lists rows)."""
    if e.get("rows"):
        own: Mapping[str, str] = e["rows"][0]["key"]
        return own
    return {table["pk"]: e["pk"], **({table["sk"]: e["sk"]} if table.get("sk") else {})}


def _other_rows(e: Mapping[str, Any], key: str, table: Mapping[str, Any], ids: _Ids,
                notes: list[str]) -> dict[str, Any]:
    """The entity's rows besides its own: unique guards as entities of their own (but
    those of an encrypted field), the rest noted as left out."""
    guards = {}
    for row in e.get("rows", ())[1:]:
        if row["role"] == "unique guard" and row["field"] in e.get("encrypted", ()):
            notes.append(f"mcp: left out the guards of {e['name']}.{row['field']}: keyed "
                         "by a MAC of the encrypted value, which no template says")
        elif row["role"] == "unique guard":
            guards[f"{key}_{row['field']}_guard"] = _guard(e, row, table, ids)
        elif row["role"] == "version row":
            notes.append(f"mcp: {e['name']}'s version rows ({row['key']!r}, <n> in 8 "
                         "digits) have no template there: its history pattern reads them")
        else:
            notes.append(f"mcp: left out {e['name']}'s {row['role']} rows ({row['key']!r})"
                         ": the format has no place for them")
    return guards


class _Ids:
    """Pattern numbers, each used once across the file: a declared ``pattern_id`` while it
    is free, else the next number no pattern declares."""

    def __init__(self, model: Mapping[str, Any]):
        self.declared = {p["pattern_id"] for e in model["entities"]
                         for p in e.get("access_patterns", ()) if "pattern_id" in p}
        self.used: set[int] = set()
        self.last = 0

    def take(self, wanted: int | None) -> int:
        if wanted is None or wanted in self.used:
            while self.last + 1 in self.used | self.declared:
                self.last += 1
            wanted = self.last = self.last + 1
        self.used.add(wanted)
        return wanted


def _entity(e: Mapping[str, Any], table: Mapping[str, Any], own: Mapping[str, str],
            kept: Mapping[str, Any], ids: _Ids, notes: list[str]) -> dict[str, Any]:
    """An entity under the key its own row is stored under (a versioned entity's latest
    copy: ``v0_...``), with the fields the format can type and its access patterns."""
    entity = {"entity_type": e["type_name"],
              "pk_template": _template(own[table["pk"]], e["name"], notes)}
    if table.get("sk"):
        entity["sk_template"] = _template(own[table["sk"]], e["name"], notes)
    mappings = []
    for i in e.get("indexes", ()):
        if i["name"] in kept and all(_PLAIN.fullmatch(t) for t in (i["pk"], i["sk"]) if t):
            who = f"{e['name']} on {i['name']}"
            mappings.append({"name": i["name"], "pk_template": _template(i["pk"], who, notes),
                             **({"sk_template": _template(i["sk"], who, notes)}
                                if i.get("sk") else {})})
        elif i["name"] in kept:
            notes.append(f"mcp: left out {e['name']}'s keys on {i['name']!r} "
                         f"({i['pk']!r}, {i['sk']!r}): they are sharded")
    mappings += _native_mappings(e, list(kept.values()))
    mappings.sort(key=lambda m: list(kept).index(m["name"]))  # (in the table's order)
    if mappings:
        entity["gsi_mappings"] = mappings
    entity["fields"] = []
    for f in e["fields"]:
        if f.get("encrypted") or f.get("compressed") is not None:
            notes.append(f"mcp: left out {e['name']}.{f['name']}: stored "
                         f"{'encrypted' if f.get('encrypted') else 'compressed'} as binary, "
                         "a type the format does not have")
        else:
            entity["fields"].append({"name": f["name"], **_mcp_type(f),
                                     "required": f["required"]})
    notes += vector_fields(e, "mcp")
    entity["access_patterns"] = _mcp_patterns(e, kept, ids, notes)
    return entity


def _guard(e: Mapping[str, Any], row: Mapping[str, Any], table: Mapping[str, Any],
           ids: _Ids) -> dict[str, Any]:
    """The guard items of one unique rule of ``e``, as an entity of their own (stored as
    ``dynaorm:unique``, keyed ``[scope#]prefix#{value}``), read by one GetItem."""
    key = row["key"]
    params = list(dict.fromkeys(KeyTemplate.parse(key[table["pk"]]).fields))
    guard = {"entity_type": GUARD_TYPE, "pk_template": key[table["pk"]]}
    if table.get("sk"):
        guard["sk_template"] = key[table["sk"]]
    guard["fields"] = [{"name": n, "type": "string", "required": True} for n in params]
    guard["access_patterns"] = [{
        "pattern_id": ids.take(None), "name": f"get_{e['name']}_{row['field']}_guard",
        "description": f"the guard of {e['name']}.{row['field']}'s unique values",
        "operation": "GetItem", "parameters": [{"name": n, "type": "string"} for n in params],
        "return_type": "single_entity"}]
    return guard


def _mcp_patterns(e: Mapping[str, Any], kept: Mapping[str, Any], ids: _Ids,
                  notes: list[str]) -> list[dict[str, Any]]:
    """An entity's ``access_patterns`` in the MCP server's shape, each numbered once; a
    search (which it has no place for) noted. A derived query reads a whole partition: it
    has no range value, so no range condition."""
    patterns = []
    for p in e.get("access_patterns", ()):
        if p["operation"] == "SearchVectors":
            notes.append(f"mcp: left out {e['name']}'s search {p['name']!r}: the format has "
                         "no place for it")
            continue
        pattern = {"pattern_id": ids.take(p.get("pattern_id")), "name": p["name"],
                   "description": p.get("description") or _describe(e, p),
                   "operation": _mcp_operation(p)}
        if p.get("index") and p["index"] in kept:
            pattern["index_name"] = p["index"]
        if p.get("range_condition") and e.get("patterns") == "declared":
            pattern["range_condition"] = p["range_condition"]
        pattern["parameters"] = [dict(q) for q in p.get("parameters", ())]
        pattern["return_type"] = p.get("returns") or "entity_list"
        patterns.append(pattern)
    return patterns


def _native_mappings(e: Mapping[str, Any], gsis: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The ``gsi_mappings`` of the native GSIs an entity lands in: a template of exactly
    the field stored as each key attribute (a list of them for a multi-attribute key)."""
    by_attr = {f["stored"]: f["name"] for f in e["fields"]}
    out = []
    for index in gsis:
        if index.get("native") and index["name"] in e.get("lands_in", ()):
            fields = {part: [f"{{{by_attr[a]}}}" for a in index[part]] for part in ("pk", "sk")}
            mapping = {"name": index["name"], "pk_template": _one(fields["pk"])}
            if fields["sk"]:
                mapping["sk_template"] = _one(fields["sk"])
            out.append(mapping)
    return out


def _describe(e: Mapping[str, Any], p: Mapping[str, Any]) -> str:
    params = ", ".join(q["name"] for q in p.get("parameters", ()))
    where = f" on {p['index']}" if p.get("index") else ""
    if p["name"].startswith("history_"):
        where += " (its version rows, sort key v<n>_...)"
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
        gpk = attributes(g.get("partition_key", (str, list), "an attribute or a list"), 1)
        gsk = attributes(g.get("sort_key", (str, list), "an attribute or a list", default=[]))
        table["indexes"].append({"name": g.get("name", str, "an index name").value,
                                 "kind": "gsi", "native": len(gpk) > 1 or len(gsk) > 1,
                                 "pk": gpk, "sk": gsk, "projection": "ALL"})
    known = {i["name"]: [*i["pk"], *i["sk"]] if i["native"] else [] for i in table["indexes"]}
    entities, guards = {}, []
    for name, e in t.get("entities", dict, "an object of entities").members():
        if e.get("entity_type", str, "a type name").value == GUARD_TYPE:
            guards.append((name, e))
        else:
            entities[name] = _mcp_entity(name, e, known, sk is not None)
    for name, e in guards:  # (a unique rule's guards: the rule, on the entity it names)
        _unique(name, e, entities)
    for index in (i for i in table["indexes"] if i["native"]):  # (typed by the fields)
        for attr in [*index["pk"], *index["sk"]]:
            kinds = {f["type"] for en in entities.values() for f in en["fields"]
                     if f["stored"] == attr}
            if kinds and kinds <= {"integer", "decimal"}:
                table["key_types"][attr] = "N"
    return {"dynaorm_model": 1, "table": table, "entities": list(entities.values())}


def _unique(name: str, e: At, entities: Mapping[str, dict[str, Any]]) -> None:
    """The unique rule whose guards entity ``name`` (``<Entity>_<field>_guard``, keyed
    ``[scope#]prefix#{field}``) describes, added to the entity it names."""
    pk = e.get("pk_template", str, "a key template")
    fields = list(KeyTemplate.parse(template(pk, "a template")).fields)
    head, _, tail = name.rpartition("_guard")
    owner = entities.get(head.removesuffix(f"_{fields[-1]}") if fields and not tail else "")
    if owner is None:
        raise e.fail("a guard entity is named <entity>_<field>_guard, of an entity here")
    scope, _, prefix = pk.value.removesuffix(f"#{{{fields[-1]}}}").rpartition("#")
    owner.setdefault("unique", []).append({"field": fields[-1], "prefix": prefix,
                                           "scope": scope or None, "normalize": None})


def _mcp_entity(name: str, e: At, known: Mapping[str, list[str]], has_sk: bool
                ) -> dict[str, Any]:
    cls = identifier(name)
    sk = e.get("sk_template", str, "a key template", default=None)
    if (sk.value is None) == has_sk:
        raise e.fail("an entity has an sk_template exactly when its table has a sort_key")
    indexes, stored = [], {}
    for m in e.get("gsi_mappings", list, "a list of mappings", default=[]).items():
        index = m.get("name", str, "an index name")
        if index.value not in known:
            raise index.fail(f"no GSI {index.value!r} in the table's gsi_list")
        if known[index.value]:  # (a multi-attribute key: the entity's fields, stored as its
            for attr, shape in zip(known[index.value], [  # attributes, by the templates)
                    *attributes(m.get("pk_template", (str, list), "templates")),
                    *attributes(m.get("sk_template", (str, list), "templates", default=[]))],
                    strict=False):
                stored[shape.strip("{}")] = attr
            continue
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
                       "stored": stored.get(f.value["name"], f.value["name"]), **desc,
                       "required": required,
                       "nullable": not required, **({} if required else {"default": None})})
    patterns = [_mcp_pattern(p) for p in e.get("access_patterns", list, "a list",
                                                      default=[]).items()]
    pk = template(e.get("pk_template", str, "a key template"), "a template")
    sk_text = None if sk.value is None else template(sk, "a template")
    shards = unknown_shards({"primary": (pk, sk_text),
                              **{i["name"]: (i["pk"], i["sk"]) for i in indexes}})
    return {"name": cls, "type_name": e.get("entity_type", str, "a type name").value,
            "pk": pk, "sk": sk_text, "fields": fields, "indexes": indexes, "shards": shards,
            "patterns": "declared" if patterns else "derived", "access_patterns": patterns,
            "_place": e.place}


def _mcp_pattern(p: At) -> dict[str, Any]:
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



def from_format(doc: Any) -> list[dict[str, Any]]:
    """The models (one per table) a parsed ``schema.json`` holds, checked."""
    tables = At(doc).get("tables", list, "a list of tables")
    if not tables.value:
        raise tables.fail("a model of no table")
    return [_read_mcp(t) for t in tables.items()]
