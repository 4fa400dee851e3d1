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
  ``Meta.key_only`` or TTL field, ``model_post_init`` or private attributes,
  ``extra="allow"``, strict numbers, or a field type outside the table below never gets a
  fast validator (``None``): all its loads are plain.

========================================================  ===
field type (optionally ``| None``)                         tag
========================================================  ===
``str`` (with constraints), ``Literal`` of strings,        ``S``
``datetime``, ``date``, ``time``, ``UUID``
``int``, ``float``, ``Decimal`` (lax, not strict)          ``N``
``bool``                                                   ``BOOL``
a class registered with ``stored_as``                      its base's
========================================================  ===

(the :attr:`~dynaorm.values.codec.Kind.schemas` of the registry's kinds).
"""

import gc
import operator
import threading
from collections.abc import Callable, Mapping
from typing import Any, Final, TypeVar

from pydantic import BaseModel
from pydantic_core import SchemaValidator

from dynaorm.caches import cache
from dynaorm.values.codec import kind_of_schema

#: the keys of a field schema the fast way reads as the plain way does (constraints)
_KEYS: Final = frozenset({
    "type", "strict", "metadata", "max_length", "min_length", "pattern", "strip_whitespace",
    "to_lower", "to_upper", "gt", "ge", "lt", "le", "multiple_of", "max_digits",
    "decimal_places", "allow_inf_nan", "coerce_numbers_to_str", "ref", "serialization",
    "microseconds_precision", "tz_constraint", "now_op", "now_utc_offset", "version",
    "val_json_bytes", "ser_json_bytes"})
_BUILDING: Final = threading.Lock()

#: validates one item; the copy's schema
Fast = tuple[Callable[[Any], Any], dict[str, Any]]

#: (entity class, its core schema's id) -> the fast validator, or None; and
#: (type attribute, (type name, entity class, its schema's id)...) -> a whole answer of
#: those types validated in one call, or None
_fast: dict[tuple[Any, ...], Any] = cache("fastload.validators")


def fast_validator(cls: type[BaseModel], renames: Mapping[str, str],
                   eligible: Callable[[], bool]) -> Fast | None:
    """The fast validator of ``cls`` (fields stored under ``renames`` names): one item
    (and the copy's schema); ``None`` when its items must be loaded the plain way.
    ``eligible``: what the entity's spec allows (no key-only or TTL field, the model's
    own ``model_validate``), asked only when the validators are built (once a class)."""
    schema = cls.__dict__.get("__pydantic_core_schema__")
    found: Fast | None = _cached((cls, id(schema)), lambda: _build(schema, renames) if (
        isinstance(schema, dict) and eligible()) else None)
    return found


def _cached(key: tuple[Any, ...], build: Callable[[], Any]) -> Any:
    """``_fast[key]``, built by ``build()`` the first time (one build at a time: see
    :func:`build_validator`, the classes read as incomplete meanwhile)."""
    try:
        return _fast[key]
    except KeyError:
        pass
    with _BUILDING:
        if key not in _fast:
            _fast[key] = build()
        return _fast[key]


def fast_answer(type_attr: str, types: Mapping[str, tuple[type[BaseModel], Fast | None]],
                key_attrs: tuple[str, ...], pk_attr: str | None
                ) -> Callable[[bytes], dict[str, Any]] | None:
    """A validator of a whole answer's JSON bytes (Query, Scan, GetItem or BatchGetItem),
    in one pydantic-core call: ``Items`` a list of objects of the ``types`` (type name ->
    (class, its :func:`fast_validator`)), ``Item`` one, ``Responses`` a list per table
    (and ``Keys`` beside it: each item's ``key_attrs`` as stored, to match it to the key
    asked for), each item told apart by its ``type_attr`` string and validated as its
    type's fast validator does, an item of no such type read as ``{"type": its type
    attribute's string}`` (as is an item of such a type that its fast validator refuses:
    the caller tells them apart), every other member of the answer
    (``LastEvaluatedKey``, ``Count``, ``ConsumedCapacity``...) as plain JSON values, as
    :func:`json.loads` reads them; ``None`` when some type has no fast validator (or the
    schema cannot be built). With ``pk_attr`` (a scoped read), ``Pks`` beside ``Items``:
    each item's string partition key's text (an item without one refuses the answer).
    Built once per set of types."""
    if any(fast is None for _, fast in types.values()):
        return None
    key = (type_attr, key_attrs, pk_attr, *sorted(
        (name, cls, id(cls.__dict__.get("__pydantic_core_schema__")))
        for name, (cls, _) in types.items()))
    found: Callable[[bytes], dict[str, Any]] | None = _cached(key, lambda: _answer(
        type_attr, types, key_attrs, pk_attr))
    return found


#: the partition key text of an entry of a scoped answer's ``Pks`` (taken in Rust: each
#: entry is the text itself)
_P = operator.itemgetter("p")


def _answer(type_attr: str, types: Mapping[str, tuple[type[BaseModel], Fast | None]],
            key_attrs: tuple[str, ...], pk_attr: str | None = None
            ) -> Callable[[bytes], dict[str, Any]] | None:
    """The validator :func:`fast_answer` keeps, built."""
    choices = {name: fast[1] for name, (_, fast) in types.items() if fast is not None}
    union = {"type": "tagged-union", "choices": choices, "discriminator": [type_attr, "S"]}
    # an item of another type (its type attribute a string): {"type": that string}
    other = {"type": "typed-dict", "extra_behavior": "ignore", "fields": {
        "type": {"type": "typed-dict-field", "schema": {"type": "str"},
                 "validation_alias": [type_attr, "S"]}}}
    either = {"type": "union", "mode": "left_to_right", "choices": [union, other]}
    items = {"type": "list", "items_schema": either,
             "fail_fast": True}  # (a refused answer costs little)
    keys = {"type": "list", "items_schema": {"type": "typed-dict", "fields": {
        attr: {"type": "typed-dict-field", "schema": {"type": "any"}} for attr in key_attrs}}}
    fields: dict[str, Any] = {
        "Items": {"type": "typed-dict-field", "schema": items, "required": False},
        "Item": {"type": "typed-dict-field", "schema": either, "required": False},
        "Responses": {"type": "typed-dict-field", "required": False,
                      "schema": {"type": "dict", "values_schema": items}},
        "Keys": {"type": "typed-dict-field", "required": False, "validation_alias": "Responses",
                 "schema": {"type": "dict", "values_schema": keys}}}
    if pk_attr is not None:  # (a scoped read: each item's partition key text, a str)
        pks = {"type": "list", "items_schema": {
            "type": "function-after", "function": {"type": "no-info", "function": _P},
            "schema": {"type": "typed-dict", "fields": {"p": {
                "type": "typed-dict-field", "schema": {"type": "str", "strict": True},
                "validation_alias": [pk_attr, "S"]}}}}}
        fields["Pks"] = {"type": "typed-dict-field", "required": False,
                         "validation_alias": "Items", "schema": pks}
    answer = {"type": "typed-dict", "extra_behavior": "allow", "fields": fields}
    built = build_validator([cls for cls, _ in types.values()], answer)
    return None if built is None else built.validate_json


R = TypeVar("R")


def collector_paused(read: Callable[[bytes], R]) -> Callable[[bytes], R]:
    """``read`` run with the cyclic garbage collector paused (and resumed after, also
    when it raises), unless the collector was already off.

    Reading a page's bytes makes all of the page's objects at once (about four tracked
    containers an item: the object, its ``__dict__``, its fields-set and its place on the
    page); with the collector on, every 700 of them start a collection that walks the
    young objects, all alive, and promotes them, and the promotions soon start full
    collections of the whole heap. Paused, the page makes no collection; its objects meet
    the collector once, later. Measured on 1,000-item queries in a steady state
    (``benchmarks/steady_reads.py``: 400 in a row, a 154,000-object heap, the same code
    with and without the pause): 2.65-2.92 -> 2.20-2.34 ms a query, young collections a
    quarter as many, full ones a third; ``wire.py``, which collects before each short
    batch, shows 2-4%. The validation holds the GIL from start to end (pydantic-core
    builds the objects in Rust as it goes), so other threads hardly run inside the pause;
    one that reads a page meanwhile finds the collector off and leaves it so, and only a
    ``gc.disable()`` made by another thread inside the pause would be undone by its end."""
    def paused(data: bytes) -> R:
        if not gc.isenabled():
            return read(data)
        gc.disable()
        try:
            return read(data)
        finally:
            gc.enable()

    return paused


def build_validator(classes: list[type[Any]], schema: dict[str, Any]) -> SchemaValidator | None:
    """``schema``'s validator, really built for the models of ``classes`` in it.

    pydantic-core reuses a complete model's own validator for a "model" schema of its
    class (its "prebuilt" shortcut, read from the class's ``__dict__``): for the moment the
    copy is built, each class reads as incomplete, so that the copy is really built."""
    complete = [(cls, cls.__dict__.get("__pydantic_complete__")) for cls in classes]
    try:
        for cls in classes:
            type.__setattr__(cls, "__pydantic_complete__", False)
        return SchemaValidator(schema)
    except Exception:  # a schema this copy cannot rebuild: plain loads, nothing lost
        return None
    finally:
        for cls, was in complete:
            type.__setattr__(cls, "__pydantic_complete__", was)


def field_tag(schema: Mapping[str, Any]) -> str | None:
    """The type tag a field schema reads exactly from (its kind's, asked of the registry:
    :func:`~dynaorm.values.codec.kind_of_schema`), else ``None``."""
    kind = schema.get("type")
    if kind == "nullable":
        inner = schema.get("schema")
        return field_tag(inner) if isinstance(inner, dict) else None
    if kind == "literal":
        expected = schema.get("expected", ())
        return "S" if expected and all(type(v) is str for v in expected) else None
    found = kind_of_schema(schema)
    if found is None or (found.tag == "N" and schema.get("strict")):
        return None  # (an N is text on the wire: numbers validate from it when lax only)
    if kind == "function-wrap":  # a stored_as kind's: its base read from the same tag
        inner = schema.get("schema")
        return found.tag if isinstance(inner, dict) and field_tag(inner) == found.tag else None
    if kind not in found.schemas or set(schema) - _KEYS:
        return None  # (an unknown key might change what the value means: stay plain)
    return found.tag


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
    tag = field_tag(inner)
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
            or inner.get("strict") or "allow" in (config.get("extra_fields_behavior"),
                                                  inner.get("extra_behavior"))):
        return None  # (extra="allow": a plain load's objects hold an empty extra dict)
    fields = {}
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
    model = {**schema, "schema": model_fields, "config": fast_config}
    one = build_validator([schema["cls"]], model)
    return None if one is None else (one.validate_python, model)
