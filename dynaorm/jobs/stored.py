"""Entities read straight from the DynamoDB JSON of an export's data file, in pydantic-core
(in Rust), many lines in one call: the fast way of :func:`~dynaorm.jobs.exports.export_part`.

For each entity whose rows are their stored attributes read as their fields and nothing
else (no rule decodes or skips them: the export says which), :func:`stored_validator`
makes a copy of the model's own core schema in which every field is read from its stored
attribute: ``{"S": ...}`` text for strings, datetimes, dates, UUIDs
and enums of strings; ``{"N": ...}`` text for numbers (pydantic's lax numbers: the value
decoding the text gives); ``{"BOOL": ...}``; ``{"SS": [...]}`` and ``{"NS": [...]}`` for
sets; ``{"L": [...]}`` for lists and ``{"M": {...}}`` for maps and nested models, their
members read the same way. A field reads ``[attribute, tag]`` first, else the attribute's
whole value (which no field schema takes: the line is refused, but a ``NULL``: ``None``
where the field takes it), else, with the attribute absent, the field's default (as the
plain way reads an attribute a ``None`` was left out of; a field of a key template has
none: absent, the key gives it, the plain way). A line of such an entity's type (its type
attribute) is validated into an object of the entity; any other line -- another type, a
guard, a versioned entity's rows, a value the copy refuses (another tag, an empty set
stored as a list) -- comes back as the line's JSON, read the plain way, so the plain
way's answers, errors and counts hold (``tests/equivalence/test_export_fast.py``).
"""

from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from dynaorm.schema.spec import EntitySpec
from dynaorm.values.fastload import build_validator, field_tag


def _untag(tag: str) -> Callable[[Any], Any]:
    """A member of a list or map, ``{tag: value}``, as its value (else refused)."""
    def untag(av: Any) -> Any:
        if type(av) is dict and len(av) == 1 and tag in av:
            return av[tag]
        raise ValueError(f"not a {tag} value")
    return untag


def _null(av: Any) -> None:
    """``{"NULL": true}`` as ``None`` (else refused)."""
    if av != {"NULL": True}:
        raise ValueError("not a NULL value")


_NULL = {"type": "function-plain", "function": {"type": "no-info", "function": _null}}


def _read(schema: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """``(tag, schema of what is under the tag)`` of a value of ``schema`` as stored, or
    ``None`` where the copy cannot say (the plain way reads it)."""
    kind = schema.get("type")
    if kind == "nullable":  # (a None stored: {"NULL": true}, the attribute's whole value)
        found = _read(schema["schema"])
        return None if found is None else (found[0], {**schema, "schema": {
            "type": "union", "mode": "left_to_right", "choices": [found[1], _NULL]}})
    if kind == "enum":
        values = [m.value for m in schema.get("members", ())]
        tag = "S" if values and all(type(v) is str for v in values) else None
        return None if tag is None else (tag, dict(schema))
    if kind in ("list", "set", "frozenset", "dict"):
        return _container(schema)
    if kind == "model":
        model = _model(schema)
        return None if model is None else ("M", model)
    tag = field_tag(schema)
    return None if tag is None else (tag, dict(schema))


def _container(schema: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
    """A list, a set or a map as stored: ``SS`` / ``NS`` of plain members, else ``L`` /
    ``M`` of members each ``{tag: value}``."""
    kind = schema["type"]
    if kind == "dict":
        member = _member(schema.get("values_schema", {"type": "any"}))
        keys = schema.get("keys_schema", {"type": "str"})
        return None if member is None or keys.get("type") != "str" else (
            "M", {**schema, "values_schema": member})
    inner = schema.get("items_schema", {"type": "any"})
    if kind != "list" and inner.get("type") in ("str", "int", "decimal"):
        return ("SS" if inner["type"] == "str" else "NS"), dict(schema)
    member = _member(inner)
    return None if member is None or kind != "list" else ("L", {**schema,
                                                                "items_schema": member})


def _member(schema: Mapping[str, Any]) -> dict[str, Any] | None:
    """The schema of a list's or a map's member as stored (``{tag: value}``)."""
    if schema.get("type") == "model":  # (its fields read under "M")
        return _model(schema, ("M",))
    found = _read(schema)
    if found is None:
        return None
    return {"type": "function-before", "schema": found[1],
            "function": {"type": "no-info", "function": _untag(found[0])}}


def _fields(fields: Mapping[str, Any], prefix: Sequence[str], stored: Mapping[str, str],
            required: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    """A model's fields, each read from its stored attribute under ``prefix``."""
    out = {}
    for name, field in fields.items():
        inner = field.get("schema", {})
        default = inner if inner.get("type") == "default" else None
        found = _read(inner["schema"] if default else inner)
        if field.get("type") != "model-field" or found is None:
            return None
        schema = found[1] if default is None or name in required else {
            **default, "schema": found[1]}
        attr = stored.get(name, name)
        out[name] = {**{k: v for k, v in field.items() if k != "validation_alias"},
                     "schema": schema, "validation_alias": [[*prefix, attr, found[0]],
                                                            [*prefix, attr]]}
    return out


def _model(schema: Mapping[str, Any], prefix: Sequence[str] = (),
           stored: Mapping[str, str] | None = None,
           required: frozenset[str] = frozenset()) -> dict[str, Any] | None:
    """A model schema (an entity's, ``stored``: its stored names; or a nested model's)
    whose fields are read as stored, or ``None`` (a custom ``__init__``, a root model,
    ``extra="allow"``, a field the copy cannot read)."""
    inner, config = schema.get("schema") or {}, schema.get("config") or {}
    if (schema.get("type") != "model" or schema.get("custom_init") or schema.get("root_model")
            or schema.get("post_init") or inner.get("type") != "model-fields"
            or "allow" in (config.get("extra_fields_behavior"), inner.get("extra_behavior"))):
        return None
    fields = _fields(inner.get("fields", {}), prefix, stored or {}, required)
    if fields is None:
        return None
    model_fields = {k: v for k, v in inner.items() if k not in ("extras_schema",
                                                                "extras_keys_schema")}
    return {**schema, "schema": {**model_fields, "fields": fields, "extra_behavior": "ignore"},
            "config": {**config, "extra_fields_behavior": "ignore", "validate_by_alias": True,
                       "validate_by_name": False, "loc_by_alias": False}}


def _keyed(spec: EntitySpec) -> frozenset[str]:
    """The fields a key template of ``spec`` renders (missing from an item: its key says
    them)."""
    return frozenset(f for t in (spec.pk, spec.sk, *(t for i in spec.indexes for t in (
        i.pk, i.sk))) if t is not None for f in t.fields)


def stored_validator(type_attribute: str, entities: Mapping[str, tuple[type[Any], EntitySpec]]
                     ) -> Callable[[bytes], list[Any]] | None:
    """A validator of a JSON array of data-file lines (``{"Item": {...}}`` each): each
    line an object of its entity (``entities``: type name -> (the class validated into,
    which may leave fields out, and the entity's spec)), or the line's JSON where the fast
    way does not take it (see the module). ``None`` when no entity can be read this way."""
    choices = {}
    for name, (cls, spec) in entities.items():
        model = _model(_inlined(cls.__dict__.get("__pydantic_core_schema__") or {}),
                       ("Item",), spec.renames, _keyed(spec))
        if model is not None:
            choices[name] = (cls, model)
    if not choices:
        return None
    union = {"type": "tagged-union", "discriminator": ["Item", type_attribute, "S"],
             "choices": {n: m for n, (_, m) in choices.items()}}
    either = {"type": "union", "mode": "left_to_right", "choices": [union, {"type": "any"}]}
    built = build_validator(list(_classes(union)), {"type": "list", "items_schema": either})
    return None if built is None else built.validate_json


def _inlined(schema: Any, defs: Mapping[str, Any] | None = None,
             seen: frozenset[str] = frozenset()) -> Any:
    """``schema`` with its shared definitions (a nested model used twice) written out in
    place of each reference; a recursive one is left as a reference (no copy reads it)."""
    if isinstance(schema, list):
        return [_inlined(s, defs, seen) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") == "definitions":
        defs = {**(defs or {}), **{d["ref"]: d for d in schema["definitions"]}}
        return _inlined(schema["schema"], defs, seen)
    ref = str(schema.get("schema_ref"))
    if schema.get("type") == "definition-ref" and defs and ref in defs and ref not in seen:
        return _inlined(defs[ref], defs, seen | {ref})
    return {k: _inlined(v, defs, seen) for k, v in schema.items()}


def _classes(schema: Any) -> Iterator[type[Any]]:
    """Every model class a schema validates (each read as incomplete while the copy is
    built: its own validator is not the copy's)."""
    if isinstance(schema, dict):
        if schema.get("type") == "model":
            yield schema["cls"]
        for value in schema.values():
            yield from _classes(value)
    elif isinstance(schema, list):
        for value in schema:
            yield from _classes(value)
