"""The model in the formats other tools read and write: dynaorm's own JSON
(:func:`dynaorm.schema.model.model_of`), a NoSQL Workbench data model and the AWS DynamoDB
MCP server's ``schema.json``; and back, from any of them, to entity code
(:func:`import_code`) that exports to the same model.

What each format holds:

- ``json``: everything the model holds (``docs/guide/model.md`` gives its schema).
- ``workbench``: NoSQL Workbench's model (``ModelName``, ``ModelMetadata``, ``DataModel``:
  per table its ``KeyAttributes``, ``NonKeyAttributes`` with their types, one
  ``TableFacets`` entry per entity, whose key aliases are the key templates, and its
  ``GlobalSecondaryIndexes``). A facet knows no index templates, unique rules or versions:
  read back, each GSI is keyed on the attributes of the entities that name them.
- ``mcp``: the MCP server's ``schema.json`` (``tables``: ``table_config``, ``gsi_list``,
  ``entities`` with ``entity_type``, key templates in dynaorm's syntax, ``gsi_mappings``,
  ``fields`` and ``access_patterns``).

Neither of the last two has a place for an LSI, a multi-attribute (native) key or a
vector index (a vector field is a list of numbers there), nor the MCP server's for a search
pattern (``SearchVectors``): an export leaves them out and says so (its notes). A file
that cannot be read is a :class:`~dynaorm.ModelFileError` naming the place in it.
"""

from __future__ import annotations

import ast
import json
import re
import sys
import types
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from pydantic import ValidationError

from dynaorm.errors import DynaormError, ModelFileError
from dynaorm.schema.model import OPERATIONS
from dynaorm.schema.templates import SHARD_FIELD, KeyTemplate
from dynaorm.tools.codegen import code_of, identifier

__all__ = ["FORMATS", "export", "import_code", "read"]

#: the formats ``dynaorm model`` writes and reads
FORMATS: Final = ("json", "workbench", "mcp")
_TYPES: Final = ("string", "integer", "number", "decimal", "boolean", "binary", "datetime",
                 "date", "uuid", "any", "list", "set", "map", "enum", "union", "object")
_WORKBENCH_TYPES: Final = ("S", "N", "B", "BOOL", "M", "L", "SS", "NS", "BS", "NULL")
_MCP_FIELD_TYPES: Final = ("string", "integer", "decimal", "boolean", "array", "object",
                           "uuid")
_MCP_OPERATIONS: Final = ("GetItem", "PutItem", "DeleteItem", "Query", "Scan", "UpdateItem",
                          "BatchGetItem", "BatchWriteItem")
_RANGES: Final = ("begins_with", "between", ">", "<", ">=", "<=")
_SET_TAGS: Final = {"string": "SS", "binary": "BS", "integer": "NS", "number": "NS",
                    "decimal": "NS"}


# -- export --------------------------------------------------------------------------------
def export(model: Mapping[str, Any], fmt: str) -> tuple[dict[str, Any], list[str]]:
    """``model`` (a table's, :func:`~dynaorm.schema.model.model_of`) in format ``fmt``,
    and what the format had no place for (one line each)."""
    if fmt == "json":
        return dict(model), []
    if fmt == "workbench":
        return _workbench(model)
    if fmt == "mcp":
        return _mcp(model)
    raise DynaormError(f"unknown model format {fmt!r} (known: {', '.join(FORMATS)})")


def _left_out(model: Mapping[str, Any], fmt: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The table's GSIs a format can hold (one attribute per key), and notes for the rest."""
    kept, notes = [], []
    for index in model["table"]["indexes"]:
        single = index["kind"] == "gsi" and len(index["pk"]) == 1 and len(index["sk"]) <= 1
        if single:
            kept.append(index)
        else:
            what = ("a vector index" if index["kind"] == "vector" else "an LSI"
                    if index["kind"] == "lsi" else "a multi-attribute index")
            notes.append(f"{fmt}: left out {what}, {index['name']!r}: the format has no "
                         "place for it")
    return kept, notes


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
            out[f["stored"]] = "N" if f["name"] == entity.get("ttl_field") else (
                _attribute_type(f))
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


def _workbench(model: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    table = model["table"]
    key_types = table.get("key_types", {})
    keys = (table["pk"], table.get("sk"))
    gsis, notes = _left_out(model, "workbench")
    attributes: dict[str, str] = {}
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
        notes += _vector_fields(e, "workbench")

    def key(attr: str) -> dict[str, str]:
        return {"AttributeName": attr, "AttributeType": key_types.get(attr, "S")}

    key_attributes = {"PartitionKey": key(table["pk"])}
    if table.get("sk"):
        key_attributes["SortKey"] = key(table["sk"])
    data: dict[str, Any] = {
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


def _vector_fields(e: Mapping[str, Any], fmt: str) -> list[str]:
    """Notes for an entity's vector fields, which a format holds as lists of numbers."""
    return [f"{fmt}: left out that {e['name']}.{f['name']} is a Vector({f['vector']}): a "
            "list of numbers there" for f in e["fields"] if f.get("vector") is not None]


def _workbench_gsi(index: Mapping[str, Any], key: Callable[[str], dict[str, str]]
                   ) -> dict[str, Any]:
    keys = {"PartitionKey": key(index["pk"][0])}
    if index["sk"]:
        keys["SortKey"] = key(index["sk"][0])
    projection = index.get("projection", "ALL")
    shown: dict[str, Any] = ({"ProjectionType": projection} if isinstance(projection, str)
                             else {"ProjectionType": "INCLUDE",
                                   "NonKeyAttributes": list(projection)})
    return {"IndexName": index["name"], "KeyAttributes": keys, "Projection": shown}


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
    gsis, notes = _left_out(model, "mcp")
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
        notes += _vector_fields(e, "mcp")
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


# -- reading -------------------------------------------------------------------------------
class _At:
    """A value of a parsed file and its place in it (a JSON path)."""

    def __init__(self, value: Any, place: str = "$") -> None:
        self.value, self.place = value, place

    def fail(self, message: str) -> ModelFileError:
        return ModelFileError(message, place=self.place)

    def of(self, kind: type[Any] | tuple[type[Any], ...], what: str) -> Any:
        """The value, refused unless it is of ``kind``."""
        if not isinstance(self.value, kind) or (isinstance(self.value, bool) and (
                bool not in (kind if isinstance(kind, tuple) else (kind,)))):
            raise self.fail(f"expected {what}, got {json.dumps(self.value)[:60]}")
        return self.value

    def get(self, name: str, kind: type[Any] | tuple[type[Any], ...] = object,
            what: str = "a value", *, default: Any = ..., choices: tuple[Any, ...] = ()
            ) -> _At:
        """Member ``name`` of this object (``default``: what an absent one is)."""
        members = self.of(dict, "an object")
        place = f"{self.place}.{name}"
        if name not in members and default is ...:
            raise self.fail(f"missing {name!r} ({what})")
        if name not in members or (members[name] is None and default is not ...):
            return _At(default, place)  # (null: as absent)
        found = _At(members[name], place)
        found.of(kind, what)
        if choices and found.value not in choices:
            raise found.fail(f"expected one of {', '.join(map(str, choices))}; got "
                             f"{json.dumps(found.value)[:60]}")
        return found

    def items(self, what: str = "a list") -> Iterator[_At]:
        for i, value in enumerate(self.of(list, what)):
            yield _At(value, f"{self.place}[{i}]")

    def members(self) -> Iterator[tuple[str, _At]]:
        for name, value in self.of(dict, "an object").items():
            yield name, _At(value, f"{self.place}.{name}")


def _name(at: _At, what: str) -> str:
    """A name that must be a Python identifier (a class or a field)."""
    text = at.of(str, what)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        raise at.fail(f"{what} must be a Python identifier, got {text!r}")
    return str(text)


def _template(at: _At, what: str) -> str:
    text = at.of(str, what)
    try:
        KeyTemplate.parse(text, owner=at.place)
    except DynaormError as exc:
        raise at.fail(str(exc)) from None
    return str(text)


def _maybe_template(at: _At) -> str | None:
    return None if at.value is None else _template(at, "a key template")


def read(text: str, fmt: str = "json") -> list[dict[str, Any]]:
    """The models (one per table) a file of format ``fmt`` describes, checked; each
    entity carries ``"_place"``, where it is in the file."""
    if fmt not in FORMATS:
        raise DynaormError(f"unknown model format {fmt!r} (known: {', '.join(FORMATS)})")
    try:
        doc = _At(json.loads(text))
    except json.JSONDecodeError as exc:
        raise ModelFileError(f"not JSON: {exc.msg}",
                             place=f"line {exc.lineno}, column {exc.colno}") from None
    if fmt == "json":
        return [_read_json(doc)]
    tables = doc.get("DataModel" if fmt == "workbench" else "tables", list, "a list of tables")
    if not tables.value:
        raise tables.fail("a model of no table")
    if fmt == "workbench":  # (aliases in a file dynaorm wrote are its key templates)
        ours = doc.get("ModelMetadata", dict, "an object", default={}).get(
            "Author", str, "a name", default="").value == "dynaorm"
        return [_read_workbench(t, ours) for t in tables.items()]
    return [_read_mcp(t) for t in tables.items()]


# -- dynaorm's JSON ------------------------------------------------------------------------
def _read_type(at: _At) -> dict[str, Any]:
    kind = at.get("type", str, "a type name", choices=_TYPES).value
    out: dict[str, Any] = {"type": kind}
    if kind in ("list", "set"):
        out["items"] = _read_type(at.get("items", dict, "a type"))
    elif kind == "map":
        out["values"] = _read_type(at.get("values", dict, "a type"))
    elif kind == "enum":
        out["values"] = at.get("values", list, "a list of values").value
    elif kind == "union":
        out["of"] = [_read_type(t) for t in at.get("of", list, "a list of types").items()]
    elif kind == "object":
        out["model"] = _name(at.get("model", str, "a class name"), "a nested model's name")
        out["fields"] = [_read_field(f) for f in at.get("fields", list, "fields").items()]
    vector = at.get("vector", int, "a number of dimensions", default=None).value
    if vector is not None:
        out["vector"] = vector
    return out


def _read_field(at: _At) -> dict[str, Any]:
    name = _name(at.get("name", str, "a field name"), "a field name")
    out: dict[str, Any] = {"name": name,
                           "stored": at.get("stored", str, "an attribute name",
                                            default=name).value, **_read_type(at),
                           "required": at.get("required", bool, "true or false",
                                              default=True).value,
                           "nullable": at.get("nullable", bool, "true or false",
                                              default=False).value}
    if "default" in at.value:
        out["default"] = at.value["default"]
    if at.value.get("default_factory") is not None:
        out["default_factory"] = _function(at.get("default_factory", str, "a function"))
    if at.value.get("default_repr") is not None:
        shown = at.get("default_repr", str, "a Python literal")
        try:
            ast.literal_eval(shown.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise shown.fail("a default dynaorm writes only as a Python literal, got "
                             f"{shown.value[:60]!r}") from None
        out["default_repr"] = shown.value
    for flag in ("encrypted", "excluded"):
        if at.get(flag, bool, "true or false", default=False).value:
            out[flag] = True
    return out


#: a function a model names: ``module:qualname``, a builtin's ``qualname``, ``<lambda>``
_FUNCTION: Final = re.compile(r"<lambda>|([A-Za-z_]\w*(\.[A-Za-z_]\w*)*:)?"
                              r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*\Z")


def _function(at: _At) -> str:
    text = at.of(str, "a function's name")
    if not _FUNCTION.match(text):
        raise at.fail(f"expected a function as module:name, got {text[:60]!r}")
    return str(text)


def _maybe(at: _At, read: Callable[[_At], Any]) -> Any:
    return None if at.value is None else read(at)


_INDEX_KINDS: Final = ("gsi", "lsi", "vector")


def _attributes(at: _At, least: int, most: int) -> list[str]:
    """A list of ``least`` to ``most`` attribute names (an index's keys)."""
    names = [a.of(str, "an attribute name") for a in at.items()]
    if not least <= len(names) <= most:
        raise at.fail(f"expected {least} to {most} attribute names, got {len(names)}")
    return names


def _read_index(at: _At) -> dict[str, Any]:
    kind = at.get("kind", str, "gsi, lsi or vector", choices=_INDEX_KINDS).value
    out: dict[str, Any] = {"name": at.get("name", str, "an index name").value, "kind": kind}
    if kind == "gsi":
        out["native"] = at.get("native", bool, "true or false", default=False).value
        out["pk"] = _attributes(at.get("pk", list, "attribute names"), 1, 4)
        out["sk"] = _attributes(at.get("sk", list, "attribute names", default=[]), 0, 4)
    elif kind == "lsi":
        out["sk"] = _attributes(at.get("sk", list, "attribute names"), 1, 1)
    else:
        out.update({k: at.get(k, kind_, what, default=d).value for k, kind_, what, d in (
            ("attribute", str, "an attribute name", ...), ("dimensions", int, "a number", ...),
            ("distance", str, "a distance", "COSINE"), ("partition", str, "a name", None),
            ("filters", list, "attribute names", []))})
        _attributes(at.get("filters", list, "attribute names", default=[]), 0, 64)
    out["projection"] = at.get("projection", (str, list), "ALL, KEYS_ONLY or attribute names",
                               default="ALL").value
    return out


def _read_entity(at: _At) -> dict[str, Any]:
    name = _name(at.get("name", str, "a class name"), "an entity's name")
    out: dict[str, Any] = {
        "name": name, "type_name": at.get("type_name", str, "a type name", default=name).value,
        "pk": _template(at.get("pk", str, "a key template"), "a key template"),
        "sk": _maybe_template(at.get("sk", str, "a key template", default=None)),
        "fields": [_read_field(f) for f in at.get("fields", list, "a list of fields").items()],
        "_place": at.place}
    out["indexes"] = [{"name": i.get("name", str, "an index name").value,
                       "pk": _template(i.get("pk", str, "a key template"), "a key template"),
                       "sk": _maybe_template(i.get("sk", str, "a template", default=None))}
                      for i in at.get("indexes", list, "a list", default=[]).items()]
    out["unique"] = [{
        "field": _name(u.get("field", str, "a field name"), "a field name"),
        "prefix": u.get("prefix", str, "a prefix", default=None).value,
        "scope": _maybe(u.get("scope", str, "a template", default=None),
                        lambda a: _template(a, "a template")),
        "normalize": _maybe(u.get("normalize", str, "a function", default=None), _function)}
        for u in at.get("unique", list, "a list of unique rules", default=[]).items()]
    out["versioned"] = at.get("versioned", bool, "true or false", default=False).value
    out["history_index"] = at.get("history_index", str, "an index name", default=None).value
    stamps = at.get("timestamps", dict, "an object", default={})
    out["timestamps"] = {k: _maybe(stamps.get(k, str, "a field name", default=None),
                                   lambda a: _name(a, "a field name"))
                         for k in ("created", "updated")}
    out["key_only"] = [_name(n, "a field name") for n in at.get(
        "key_only", list, "field names", default=[]).items()]
    out["shards"] = {target: {"count": s.get("count", int, "a number").value,
                              "first": s.get("first", int, "a number", default=0).value,
                              "by": _maybe(s.get("by", str, "a field or a function",
                                                 default=None), _function)}
                     for target, s in at.get("shards", dict, "an object", default={})
                     .members()}
    out["overlaps"] = at.get("overlaps", str, "literal or refuse", default="literal",
                             choices=("literal", "refuse")).value
    out["previous"] = _maybe(at.get("previous", dict, "an object", default=None),
                             _read_previous)
    out["patterns"] = at.get("patterns", str, "declared or derived", default="derived",
                             choices=("declared", "derived")).value
    out["access_patterns"] = [_read_pattern(p) for p in at.get(
        "access_patterns", list, "a list of patterns", default=[]).items()]
    return out


def _read_previous(at: _At) -> dict[str, Any]:
    return {"pk": _template(at.get("pk", str, "a key template"), "a key template"),
            "sk": _maybe_template(at.get("sk", str, "a key template", default=None)),
            "type_name": at.get("type_name", str, "a type name").value,
            "stored_names": {_name(_At(n, f"{at.place}.stored_names"), "a field name"):
                             a.of(str, "an attribute name") for n, a in at.get(
                                 "stored_names", dict, "an object", default={}).members()}}


def _read_pattern(at: _At) -> dict[str, Any]:
    out = {"name": _name(at.get("name", str, "a pattern name"), "a pattern's name"),
           "operation": at.get("operation", str, "an operation", choices=OPERATIONS).value,
           "index": at.get("index", str, "an index name", default=None).value,
           "parameters": [{
               "name": q.get("name", str, "a parameter name").value,
               "type": q.get("type", str, "a parameter type").value,
               **({"entity_type": _name(q.get("entity_type", str, "an entity"), "an entity")}
                  if "entity_type" in q.value else {})}
               for q in at.get("parameters", list, "a list", default=[]).items()],
           "range_condition": at.get("range_condition", str, "a range condition", default=None,
                                     choices=_RANGES).value,
           "returns": at.get("returns", str, "a return type", default=None).value,
           "description": at.get("description", str, "a description", default="").value}
    if at.value.get("pattern_id") is not None:
        out["pattern_id"] = at.get("pattern_id", int, "a number").value
    return out


def _read_json(doc: _At) -> dict[str, Any]:
    doc.get("dynaorm_model", int, "the model format's version (1)", choices=(1,))
    t = doc.get("table", dict, "an object")
    table = {"name": t.get("name", str, "a table name").value,
             "pk": t.get("pk", str, "an attribute name").value,
             "sk": t.get("sk", str, "an attribute name", default=None).value,
             "key_types": t.get("key_types", dict, "an object", default={}).value,
             "indexes": [_read_index(i) for i in t.get("indexes", list, "a list of indexes",
                                                       default=[]).items()]}
    for key, default in (("type_attribute", "_type"), ("revision_attribute", "_rev"),
                         ("ttl", None), ("stream", None)):
        table[key] = default if key not in t.value else None if t.value[key] is None else (
            t.get(key, str, "an attribute name").value)  # (null: none, absent: the default)
    if "settings" in t.value:  # (checked as a Table checks them)
        table["settings"] = _read_settings(t.get("settings", dict, "an object"))
    for _, kind in t.get("key_types", dict, "an object", default={}).members():
        kind.of(str, "S, N or B")
        if kind.value not in ("S", "N", "B"):
            raise kind.fail(f"expected S, N or B, got {kind.value!r}")
    entities = [_read_entity(e) for e in doc.get("entities", list, "a list of entities")
                .items()]
    return {"dynaorm_model": 1, "table": table, "entities": entities}


def _read_settings(at: _At) -> dict[str, Any]:
    """A model's table settings, checked (a :class:`SettingsError` is the file's)."""
    from dynaorm.errors import SettingsError
    from dynaorm.schema.settings import settings_of

    given = {k: tuple(v) if isinstance(v, list) else v for k, v in at.value.items()}
    try:
        return settings_of("the table", **given).data()
    except (SettingsError, TypeError) as exc:
        raise at.fail(str(exc)) from None


# -- NoSQL Workbench -----------------------------------------------------------------------
def _key_of(at: _At) -> tuple[str, str]:
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


def _read_workbench(t: _At, ours: bool) -> dict[str, Any]:
    name = t.get("TableName", str, "a table name").value
    keys = t.get("KeyAttributes", dict, "an object")
    pk, pk_type = _key_of(keys.get("PartitionKey", dict, "an object"))
    sk, sk_type = _key_of(keys.get("SortKey", dict, "an object")) if "SortKey" in (
        keys.value) else (None, "S")
    types_: dict[str, str] = {}
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


def _workbench_index(g: _At, key_types: dict[str, str]) -> dict[str, Any]:
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


def _facet(f: _At, keys: tuple[str, str | None], key_types: Mapping[str, str],
           types_: Mapping[str, str], own: Mapping[str, str | None], ours: bool
           ) -> dict[str, Any]:
    facet = f.get("FacetName", str, "a facet name").value
    cls = identifier(facet)
    alias = f.get("KeyAttributeAlias", dict, "an object")
    as_template = (lambda text: text) if ours else _alias
    pk = _template(_At(as_template(alias.get("PartitionKeyAlias", str, "an alias").value),
                       alias.place + ".PartitionKeyAlias"), "a key alias")
    sk_alias = alias.get("SortKeyAlias", str, "an alias", default=None).value
    if (sk_alias is None) != (keys[1] is None):
        raise alias.fail("a facet names a sort key alias exactly when its table has a sort key")
    sk = None if sk_alias is None else _template(_At(as_template(sk_alias), alias.place +
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
            "key_only": key_only, "shards": _unknown_shards({"primary": (pk, sk)}),
            "_place": f.place}


def _listed(facet: _At) -> list[str]:
    """A facet's ``NonKeyAttributes``: attribute names."""
    return [a.of(str, "an attribute name") for a in facet.get(
        "NonKeyAttributes", list, "a list of attribute names", default=[]).items()]


def _key_fields(keys: tuple[str, str | None], templates: tuple[str, str | None],
                key_types: Mapping[str, str], types_: Mapping[str, str], listed: list[str]
                ) -> tuple[dict[str, dict[str, Any]], list[str]]:
    """The fields a facet's key templates name (required; typed by the key attribute a
    template of exactly the field is stored as, else by the attribute of its name), and
    those the items hold only in their key (not listed as their own attribute)."""
    keyed: dict[str, dict[str, Any]] = {}
    key_only = []
    for attr, template in zip(keys, templates, strict=True):
        parsed = KeyTemplate.parse(template) if template else None
        for name in (f for f in (parsed.fields if parsed else ()) if f != SHARD_FIELD):
            exact = template == f"{{{name}}}"
            desc = _KEY_FIELDS[key_types.get(attr or "", "S")] if exact else (
                _FROM_WORKBENCH[types_[name]] if name in types_ else {"type": "string"})
            keyed[name] = {"name": name, "stored": name, **desc, "required": True,
                           "nullable": False}
            if attr != name and name not in listed and parsed and name in parsed.exact_fields:
                key_only.append(name)  # (a field the item holds only in its key)
    return keyed, key_only


def _unknown_shards(templates: Mapping[str, tuple[str | None, ...]]) -> dict[str, Any]:
    """The shards of the targets whose templates use ``{shard}``, in a format that keeps
    no shard count: one shard each, marked for the code to say so."""
    return {target: {"count": 1, "first": 0, "by": None, "unknown": True}
            for target, pair in templates.items()
            if any(SHARD_FIELD in KeyTemplate.parse(t).fields for t in pair if t)}


# -- the MCP server's schema.json ----------------------------------------------------------
_FROM_MCP: Final[dict[str, dict[str, Any]]] = {
    "string": {"type": "string"}, "integer": {"type": "integer"},
    "decimal": {"type": "decimal"}, "boolean": {"type": "boolean"}, "uuid": {"type": "uuid"},
    "object": {"type": "map", "values": {"type": "any"}}}


def _read_mcp(t: _At) -> dict[str, Any]:
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


def _mcp_entity(name: str, e: _At, known: set[str], has_sk: bool) -> dict[str, Any]:
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
        indexes.append({"name": index.value, "pk": _template(m.get("pk_template", str, "a key"
                                                                   " template"), "a template"),
                        "sk": None if msk.value is None else _template(msk, "a template")})
    fields = []
    for f in e.get("fields", list, "a list of fields").items():
        kind = f.get("type", str, "a field type", choices=_MCP_FIELD_TYPES).value
        desc = ({"type": "list", "items": _FROM_MCP[f.get(
            "item_type", str, "an item type", choices=tuple(_FROM_MCP)).value]}
            if kind == "array" else _FROM_MCP[kind])
        required = f.get("required", bool, "true or false").value
        fields.append({"name": _name(f.get("name", str, "a field name"), "a field name"),
                       "stored": f.value["name"], **desc, "required": required,
                       "nullable": not required, **({} if required else {"default": None})})
    patterns = [_mcp_pattern(p, known) for p in e.get("access_patterns", list, "a list",
                                                      default=[]).items()]
    pk = _template(e.get("pk_template", str, "a key template"), "a template")
    sk_text = None if sk.value is None else _template(sk, "a template")
    shards = _unknown_shards({"primary": (pk, sk_text),
                              **{i["name"]: (i["pk"], i["sk"]) for i in indexes}})
    return {"name": cls, "type_name": e.get("entity_type", str, "a type name").value,
            "pk": pk, "sk": sk_text, "fields": fields, "indexes": indexes, "shards": shards,
            "patterns": "declared" if patterns else "derived", "access_patterns": patterns,
            "_place": e.place}


def _mcp_pattern(p: _At, known: set[str]) -> dict[str, Any]:
    index = p.get("index_name", str, "an index name", default=None)
    params = []
    for q in p.get("parameters", list, "a list of parameters", default=[]).items():
        kind = q.get("type", str, "a parameter type",
                     choices=("string", "integer", "boolean", "entity")).value
        params.append({"name": q.get("name", str, "a parameter name").value, "type": kind,
                       **({"entity_type": _name(q.get("entity_type", str, "an entity name"),
                                                "an entity name")} if kind == "entity" else {})})
    return {"name": _name(p.get("name", str, "a pattern name"), "a pattern's name"),
            "operation": p.get("operation", str, "an operation", choices=_MCP_OPERATIONS).value,
            "index": index.value, "parameters": params,
            "range_condition": p.get("range_condition", str, "a range condition", default=None,
                                     choices=_RANGES).value,
            "returns": p.get("return_type", str, "a return type", choices=(
                "single_entity", "entity_list", "success_flag", "mixed_data", "void")).value,
            "description": p.get("description", str, "a description", default="").value,
            "pattern_id": p.get("pattern_id", int, "a number").value}


# -- code ----------------------------------------------------------------------------------
def import_code(text: str, fmt: str = "json") -> str:
    """Entity code for the models a file of format ``fmt`` describes (see
    :func:`~dynaorm.tools.codegen.code_of`), checked by defining what it defines: a design
    dynaorm refuses is a :class:`~dynaorm.ModelFileError` at the entity's place. A table
    whose entities a file tells apart by nothing but key shapes that overlap (a Workbench
    model of generic ``PK``/``SK`` facets) gets dynaorm's type attribute, ``_type``."""
    models = read(text, fmt)
    places = {e["name"]: e.pop("_place") for m in models for e in m["entities"]}
    try:
        _define(code_of(models, check=True))  # (the functions it names not imported)
    except ModelFileError as exc:
        untyped = [m for m in models if m["table"]["type_attribute"] is None]
        if "no type attribute" not in str(exc) or not untyped:
            raise _placed(exc, places) from exc.__cause__
        for model in untyped:
            model["table"]["type_attribute"] = "_type"
        try:
            _define(code_of(models, check=True))
        except ModelFileError as again:
            raise _placed(again, places) from again.__cause__
    return code_of(models)


def _define(code: str) -> None:
    """Define what ``code`` defines, in a module of its own; a refusal is a
    :class:`~dynaorm.ModelFileError` (placed by :func:`_placed`)."""
    module = types.ModuleType("dynaorm_imported_model")
    sys.modules[module.__name__] = module
    try:
        exec(compile(code, "<dynaorm model --import>", "exec"), module.__dict__)
    except (DynaormError, ValidationError, TypeError, ValueError, NameError) as exc:
        raise ModelFileError(f"dynaorm refuses the design: {exc}", place="$") from exc
    finally:
        del sys.modules[module.__name__]


def _placed(exc: ModelFileError, places: Mapping[str, str]) -> ModelFileError:
    """``exc`` at the place of the entity its message names (the longest name found)."""
    message = str(exc).partition(": ")[2]
    found = max((n for n in places if re.search(rf"\b{re.escape(n)}\b", message)), key=len,
                default=None)
    return ModelFileError(message, place=places[found] if found else "$")
