"""dynaorm's own JSON: everything the model holds (``docs/guide/model.md`` gives its
schema); :func:`to_format` is the model itself, :func:`from_format` checks a file of it."""

import ast
import json
from collections.abc import Mapping
from typing import Any, Final

from dynaorm.errors import DynaormError
from dynaorm.formats._common import (
    RANGES,
    At,
    attributes,
    function,
    maybe,
    maybe_template,
    name_of,
    template,
)
from dynaorm.schema.model import OPERATIONS
from dynaorm.schema.places import OFFLOAD_THRESHOLD
from dynaorm.values.formats import StoredAs

_TYPES: Final = ("string", "integer", "number", "decimal", "boolean", "binary", "datetime",
                 "date", "uuid", "any", "list", "set", "map", "enum", "union", "object")
_INDEX_KINDS: Final = ("gsi", "lsi", "vector")


def _read_type(at: At) -> dict[str, Any]:
    kind = at.get("type", str, "a type name", choices=_TYPES).value
    out = {"type": kind}
    if kind in ("list", "set"):
        out["items"] = _read_type(at.get("items", dict, "a type"))
    elif kind == "map":
        out["values"] = _read_type(at.get("values", dict, "a type"))
    elif kind == "enum":
        _read_enum(at, out)
    elif kind == "union":
        _read_union(at, out)
    elif kind == "object":
        _read_object(at, out)
    vector = at.get("vector", int, "a number of dimensions", default=None).value
    if vector is not None:
        out["vector"] = vector
    stored = at.get("stored_as", str, "a time's stored format", default=None)
    if stored.value is not None:
        _check_stored_as(stored, kind)
        out["stored_as"] = stored.value
    return out


def _read_enum(at: At, out: dict[str, Any]) -> None:
    """An enum's values, each given once (``Literal`` drops one)."""
    values = at.get("values", list, "a list of values")
    out["values"] = values.value
    if len({(type(v), json.dumps(v)) for v in out["values"]}) < len(out["values"]):
        raise values.fail("an enum's values are each given once")  # (Literal drops one)


def _read_union(at: At, out: dict[str, Any]) -> None:
    """A union's types, each given once, a union in it flattened into its types."""
    of = at.get("of", list, "a list of types")
    members = [_read_type(t) for t in of.items()]  # (a union in a union: its types)
    out["of"] = [m for t in members for m in (
        t["of"] if t["type"] == "union" and "vector" not in t else [t])]
    if len({json.dumps(t, sort_keys=True) for t in out["of"]}) < len(out["of"]):
        raise of.fail("a union's types are each given once")  # (X | X is X)


def _read_object(at: At, out: dict[str, Any]) -> None:
    """A nested model: its name and fields, each stored under its name (no fields: a
    model around it, inside itself)."""
    out["model"] = name_of(at.get("model", str, "a class name"), "a nested model's name")
    if (fields := at.get("fields", list, "fields", default=None)).value is None:
        return
    out["fields"] = _read_fields(fields)
    for f, place in zip(out["fields"], fields.items(), strict=True):
        if f["stored"] != f["name"]:  # (dynaorm stores a nested field under its name)
            raise place.get("stored").fail("a nested model's field is stored under its "
                                           f"name, {f['name']!r}")


def _check_stored_as(stored: At, kind: str) -> None:
    """Refuses a stored format that is not a datetime's (or ``number``, a boolean's), or
    not one dynaorm reads."""
    if kind != ("boolean" if stored.value == "number" else "datetime"):
        raise stored.fail("a stored format is a datetime's (or number, a boolean's)")
    try:
        StoredAs(stored.value)
    except DynaormError as exc:
        raise stored.fail(str(exc)) from None


def _read_fields(at: At) -> list[dict[str, Any]]:
    """A list of fields, each name once (a class holds one field of a name)."""
    fields = []
    for f in at.items():
        fields.append(_read_field(f))
        if fields[-1]["name"] in [g["name"] for g in fields[:-1]]:
            raise f.fail(f"field {fields[-1]['name']!r} is named twice")
    return fields


def _read_field(at: At) -> dict[str, Any]:
    name = name_of(at.get("name", str, "a field name"), "a field name")
    if name.startswith(("_", "model_")) or name == "Meta":  # (no field of a class: dropped)
        raise at.get("name").fail(f"{name!r} cannot be a field's name")
    out = {"name": name,
           "stored": _filled(at, "stored", "an attribute name", name),
           **_read_type(at),
           "required": at.get("required", bool, "true or false",
                              default=True).value,
           "nullable": at.get("nullable", bool, "true or false",
                              default=False).value}
    if "default" in at.value:
        out["default"] = at.value["default"]
        if out["type"] == "set" and isinstance(out["default"], list) and not all(
                isinstance(v, str | int | float | bool) for v in out["default"]):
            raise at.fail("a set's default holds values that cannot be in a set")
    if at.value.get("default_factory") is not None:
        out["default_factory"] = function(at.get("default_factory", str, "a function"))
    if at.value.get("default_repr") is not None:
        shown = at.get("default_repr", str, "a Python literal")
        try:
            ast.literal_eval(shown.value)
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            raise shown.fail("a default dynaorm writes only as a Python literal, got "
                             f"{shown.value[:60]!r}") from None
        out["default_repr"] = shown.value
    if not out["required"] and not {"default", "default_factory", "default_repr"} & {*out}:
        out["default"] = None  # (an optional field with no default given: None, as code says)
    squeezed = at.get("compressed", int, "a number of bytes", default=None).value
    if squeezed is not None:
        out["compressed"] = squeezed
    for flag in ("encrypted", "excluded", "offloaded"):
        if at.get(flag, bool, "true or false", default=False).value:
            out[flag] = True
    return out




def _read_index(at: At) -> dict[str, Any]:
    kind = at.get("kind", str, "gsi, lsi or vector", choices=_INDEX_KINDS).value
    out = {"name": at.get("name", str, "an index name").value, "kind": kind}
    if kind == "gsi":
        out["native"] = at.get("native", bool, "true or false", default=False).value
        out["pk"] = attributes(at.get("pk", list, "attribute names"), 1)
        out["sk"] = attributes(at.get("sk", list, "attribute names", default=[]))
        for pair in ("warm_throughput", "max_on_demand"):  # (an index's settings: issue 63)
            if at.value.get(pair) is not None:
                given = at.get(pair, list, "[reads, writes]")
                if len(given.value) != 2 or not all(
                        type(v) is int and v > 0 for v in given.value):
                    raise given.fail("expected [reads, writes], two whole numbers above 0")
                out[pair] = list(given.value)
    elif kind == "lsi":
        out["sk"] = attributes(at.get("sk", list, "attribute names"), 1, 1)
    else:
        out.update({k: at.get(k, kind_, what, default=d).value for k, kind_, what, d in (
            ("attribute", str, "an attribute name", ...), ("dimensions", int, "a number", ...),
            ("distance", str, "a distance", "COSINE"), ("partition", str, "a name", None),
            ("filters", list, "attribute names", []))})
        attributes(at.get("filters", list, "attribute names", default=[]), 0, 64)
    out["projection"] = at.get("projection", (str, list), "ALL, KEYS_ONLY or attribute names",
                               default="ALL").value
    return out


def _read_entity(at: At) -> dict[str, Any]:
    name = name_of(at.get("name", str, "a class name"), "an entity's name")
    out = {
        "name": name, "type_name": _filled(at, "type_name", "a type name", name),
        "pk": template(at.get("pk", str, "a key template"), "a key template"),
        "sk": maybe_template(at.get("sk", str, "a key template", default=None)),
        "fields": _read_fields(at.get("fields", list, "a list of fields")),
        "_place": at.place}
    out["indexes"] = [{"name": i.get("name", str, "an index name").value,
                       "pk": template(i.get("pk", str, "a key template"), "a key template"),
                       "sk": maybe_template(i.get("sk", str, "a template", default=None))}
                      for i in at.get("indexes", list, "a list", default=[]).items()]
    out["unique"] = [{
        "field": name_of(u.get("field", str, "a field name"), "a field name"),
        "prefix": _filled(u, "prefix", "a unique rule's prefix", None),
        "scope": maybe(u.get("scope", str, "a template", default=None),
                        lambda a: template(a, "a template")),
        "normalize": maybe(u.get("normalize", str, "a function", default=None), function)}
        for u in at.get("unique", list, "a list of unique rules", default=[]).items()]
    out["versioned"] = at.get("versioned", bool, "true or false", default=False).value
    out["history_index"] = at.get("history_index", str, "an index name", default=None).value
    stamps = at.get("timestamps", dict, "an object", default={})
    out["timestamps"] = {k: maybe(stamps.get(k, str, "a field name", default=None),
                                   lambda a: name_of(a, "a field name"))
                         for k in ("created", "updated")}
    out["key_only"] = [name_of(n, "a field name") for n in at.get(
        "key_only", list, "field names", default=[]).items()]
    out["shards"] = {target: {"count": s.get("count", int, "a number").value,
                              "first": s.get("first", int, "a number", default=0).value,
                              "by": maybe(s.get("by", str, "a field or a function",
                                                 default=None), _shard_by)}
                     for target, s in at.get("shards", dict, "an object", default={})
                     .members()}
    out["overlaps"] = at.get("overlaps", str, "literal or refuse", default="literal",
                             choices=("literal", "refuse")).value
    out["previous"] = maybe(at.get("previous", dict, "an object", default=None), lambda p: {
        "pk": template(p.get("pk", str, "a key template"), "a key template"),
        "sk": maybe_template(p.get("sk", str, "a key template", default=None)),
        "type_name": _filled(p, "type_name", "a type name"),
        "stored_names": {name_of(At(n, f"{p.place}.stored_names"), "a field name"):
                         a.of(str, "an attribute name") for n, a in p.get(
                             "stored_names", dict, "an object", default={}).members()}})
    out["lock"] = at.get("lock", dict, "an object", default=None).value  # (Lock's arguments:
    # a literal in the code, refused there)
    out["patterns"] = at.get("patterns", str, "declared or derived", default="derived",
                             choices=("declared", "derived")).value
    out["access_patterns"] = [_read_pattern(p) for p in at.get(
        "access_patterns", list, "a list of patterns", default=[]).items()]
    return out




def _shard_by(at: At) -> str:
    """What a shard is chosen by: a field (a bare name, as code writes it) or a function."""
    if ":" in at.value or at.value == "<lambda>":
        return function(at)
    return name_of(at, "a field name")


def _filled(at: At, name: str, what: str, default: Any = ...) -> Any:
    """Member ``name``: text, never empty (code would leave an empty one to a default of
    its own: the class's name, the field's name or type)."""
    found = at.get(name, str, what, default=default)
    if found.value == "":
        raise found.fail(f"{what} is never empty")
    return found.value


def _read_pattern(at: At) -> dict[str, Any]:
    out = {"name": name_of(at.get("name", str, "a pattern name"), "a pattern's name"),
           "operation": at.get("operation", str, "an operation", choices=OPERATIONS).value,
           "index": at.get("index", str, "an index name", default=None).value,
           "parameters": [{
               "name": q.get("name", str, "a parameter name").value,
               "type": _filled(q, "type", "a parameter's type"),
               **({"entity_type": name_of(q.get("entity_type", str, "an entity"), "an entity")}
                  if "entity_type" in q.value else {})}
               for q in at.get("parameters", list, "a list", default=[]).items()],
           "range_condition": at.get("range_condition", str, "a range condition", default=None,
                                     choices=RANGES).value,
           "returns": at.get("returns", str, "a return type", default=None).value,
           "description": at.get("description", str, "a description", default="").value}
    if at.value.get("pattern_id") is not None:
        out["pattern_id"] = at.get("pattern_id", int, "a number").value
    return out


def _read_settings(at: At) -> dict[str, Any]:
    """A model's table settings, checked (a :class:`~dynaorm.SettingsError` is the
    file's)."""
    from dynaorm.errors import SettingsError
    from dynaorm.schema.settings import settings_of

    given = {k: tuple(v) if isinstance(v, list) else v for k, v in at.value.items()}
    try:
        return settings_of("the table", **given).data()
    except (SettingsError, TypeError) as exc:
        raise at.fail(str(exc)) from None


def _read_json(doc: At) -> dict[str, Any]:
    doc.get("dynaorm_model", int, "the model format's version (1)", choices=(1,))
    t = doc.get("table", dict, "an object")
    table = {"name": t.get("name", str, "a table name").value,
             "pk": t.get("pk", str, "an attribute name").value,
             "sk": t.get("sk", str, "an attribute name", default=None).value,
             "key_types": t.get("key_types", dict, "an object", default={}).value,
             "indexes": [_read_index(i) for i in t.get("indexes", list, "a list of indexes",
                                                       default=[]).items()]}
    table["offload"] = t.get("offload", str, "s3://BUCKET/PREFIX", default=None).value
    table["offload_threshold"] = t.get("offload_threshold", int, "a number of bytes",
                                       default=OFFLOAD_THRESHOLD).value
    for key, default in (("type_attribute", "_type"), ("revision_attribute", "_rev"),
                         ("ttl", None), ("stream", None)):
        table[key] = default if key not in t.value else None if t.value[key] is None else (
            t.get(key, str, "an attribute name").value)  # (null: none, absent: the default)
    # (checked as a Table checks them; none given: a Table's defaults, as its model says)
    table["settings"] = _read_settings(t.get("settings", dict, "an object", default={}))
    table["receipts_ttl"] = 7 * 86400  # (a Table's default, unless its receipts say)
    for row in t.get("rows", list, "a list of rows", default=[]).items():  # (the receipts')
        if row.get("role", str, "a row's role", default=None).value == "receipt":
            ttl = row.get("ttl_seconds", int, "seconds", default=None)
            if ttl.value is not None and ttl.value <= 0:
                raise ttl.fail(f"expected a positive number of seconds, got {ttl.value}")
            table["receipts_ttl"] = ttl.value
    for _, kind in t.get("key_types", dict, "an object", default={}).members():
        kind.of(str, "S, N or B")
        if kind.value not in ("S", "N", "B"):
            raise kind.fail(f"expected S, N or B, got {kind.value!r}")
    entities = [_read_entity(e) for e in doc.get("entities", list, "a list of entities")
                .items()]
    return {"dynaorm_model": 1, "table": table, "entities": entities}



def to_format(model: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The model as dynaorm's JSON (all of it: nothing left out)."""
    return dict(model), []


def from_format(doc: Any) -> list[dict[str, Any]]:
    """The model a parsed file of dynaorm's JSON holds, checked (one table)."""
    return [_read_json(At(doc))]
