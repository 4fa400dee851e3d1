"""A faster validator for loading entities: items validated in pydantic-core, in Rust,
straight from DynamoDB's typed wire form (no Python decoding of the attributes first).

For an entity whose fields all have a type this module can read exactly from one
DynamoDB type tag, :func:`fast_validator` builds (once per class and schema, cached) a
copy of the entity's own core schema where every field is read from its stored attribute's
tag with an ``AliasPath`` (``AliasPath("email", "S")``, ``AliasPath("seq", "N")``: numbers
validated from their text by pydantic's lax coercion, which gives the same value as
decoding the text first) and every field is *required*. Whatever that copy cannot express
exactly makes it refuse the item (a :class:`pydantic.ValidationError`), and the loader then
decodes that item the plain way, so errors, defaults, ``NULL``\\ s, fields filled back from
keys and every unusual shape stay the plain path's by construction:

- a field missing from the item (default, key-only, ``None`` left out), stored ``NULL``
  or under another type tag than its type's: the item is refused;
- an entity with a model validator, a field validator, a custom ``model_validate``, a
  ``Meta.key_only`` or TTL field, strict numbers, or a field type outside the table below
  never gets a fast validator (``None``): all its loads are plain.

========================================================  ===
field type (optionally ``| None``)                         tag
========================================================  ===
``str`` (with constraints), ``Literal`` of strings,        ``S``
``datetime``, ``date``, ``time``, ``UUID``
``int``, ``float``, ``Decimal`` (lax, not strict)          ``N``
``bool``                                                   ``BOOL``
========================================================  ===
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import Any, Final

from pydantic import BaseModel
from pydantic_core import SchemaValidator

from dynaorm.caches import cache

__all__ = ["fast_validator"]

#: core schema types read from "S", "N" or "BOOL"
_TAGS: Final[Mapping[str, str]] = {
    "str": "S", "datetime": "S", "date": "S", "time": "S", "uuid": "S",
    "int": "N", "float": "N", "decimal": "N", "bool": "BOOL",
}
_NUMBERS: Final = frozenset({"int", "float", "decimal"})
_BUILDING: Final = threading.Lock()

#: validates one item; validates a list of items (a page) in one call
Fast = tuple[Callable[[Any], Any], Callable[[Any], list[Any]]]

#: (entity class, its core schema's id) -> the fast validators, or None
_fast: dict[tuple[type[Any], int], Fast | None] = cache("fastload.validators")


def fast_validator(cls: type[BaseModel], renames: Mapping[str, str],
                   eligible: bool) -> Fast | None:
    """The fast validators of ``cls`` (fields stored under ``renames`` names): one item,
    and a list of items; ``None`` when its items must be loaded the plain way.
    ``eligible``: what the entity's spec allows (no key-only or TTL field, the model's
    own ``model_validate``)."""
    schema = cls.__dict__.get("__pydantic_core_schema__")
    key = (cls, id(schema))
    try:
        return _fast[key]
    except KeyError:
        pass
    with _BUILDING:  # one build at a time (see _build: the class reads as incomplete)
        if key not in _fast:
            _fast[key] = _build(schema, renames) if eligible and isinstance(schema, dict) else (
                None)
        return _fast[key]


def _tag(schema: Mapping[str, Any]) -> str | None:
    """The type tag a field schema reads exactly from, else ``None``."""
    kind = schema.get("type")
    if kind == "nullable":
        inner = schema.get("schema")
        return _tag(inner) if isinstance(inner, dict) else None
    if kind == "literal":
        expected = schema.get("expected", ())
        return "S" if expected and all(type(v) is str for v in expected) else None
    if kind in _NUMBERS and schema.get("strict"):
        return None
    tag = _TAGS.get(str(kind))
    if tag is None or set(schema) - {"type", "strict", "metadata", "max_length", "min_length",
                                     "pattern", "strip_whitespace", "to_lower", "to_upper",
                                     "gt", "ge", "lt", "le", "multiple_of", "max_digits",
                                     "decimal_places", "allow_inf_nan", "coerce_numbers_to_str",
                                     "ref", "serialization", "microseconds_precision",
                                     "tz_constraint", "now_op", "now_utc_offset", "version",
                                     "val_json_bytes", "ser_json_bytes"}:
        return None  # (an unknown key might change what the value means: stay plain)
    return tag


def _field(name: str, field: Mapping[str, Any],
           renames: Mapping[str, str]) -> dict[str, Any] | None:
    """``field`` read from its stored attribute's tag, required; ``None``: not expressible."""
    if field.get("type") != "model-field" or (field.get("validation_alias") is not None and (
            field.get("validation_alias") != renames.get(name))):
        return None
    inner = field.get("schema")
    if isinstance(inner, dict) and inner.get("type") == "default":
        inner = inner.get("schema")  # required here: a missing field goes the plain way
    if not isinstance(inner, dict):
        return None
    tag = _tag(inner)
    if tag is None:
        return None
    out = {k: v for k, v in field.items() if k not in ("validation_alias", "schema")}
    out["schema"] = inner
    out["validation_alias"] = [renames.get(name, name), tag]
    return out


def _build(schema: dict[str, Any], renames: Mapping[str, str]) -> Fast | None:
    """The fast validator for a model's core schema, or ``None``."""
    inner = schema.get("schema")
    config = schema.get("config") or {}
    if (schema.get("type") != "model" or schema.get("custom_init") or schema.get("root_model")
            or schema.get("post_init") or not isinstance(inner, dict)
            or inner.get("type") != "model-fields" or config.get("strict")
            or inner.get("strict")):
        return None
    fields: dict[str, Any] = {}
    for name, field in inner.get("fields", {}).items():
        fast = _field(name, field, renames)
        if fast is None:
            return None
        fields[name] = fast
    model_fields = {**inner, "fields": fields, "extra_behavior": "ignore"}
    model_fields.pop("extras_schema", None)
    model_fields.pop("extras_keys_schema", None)
    fast_config = {**config, "extra_fields_behavior": "ignore", "validate_by_alias": True,
                   "validate_by_name": False, "loc_by_alias": False}
    cls = schema["cls"]
    # pydantic-core reuses a complete model's own validator for a "model" schema of its
    # class (its "prebuilt" shortcut, read from the class's __dict__): for the moment the
    # copy is built, the class reads as incomplete, so that the copy is really built
    complete = cls.__dict__.get("__pydantic_complete__")
    try:
        type.__setattr__(cls, "__pydantic_complete__", False)
        model = {**schema, "schema": model_fields, "config": fast_config}
        one = SchemaValidator(model)
        many = SchemaValidator({"type": "list", "items_schema": model})
    except Exception:  # a schema this copy cannot rebuild: plain loads, nothing lost
        return None
    finally:
        type.__setattr__(cls, "__pydantic_complete__", complete)
    return one.validate_python, many.validate_python
