"""The attribute types: every kind of Python value dynaorm stores, in one registry, and the
codec that asks it (Python values <-> DynamoDB AttributeValues, the wire form).

A :class:`Kind` holds, in one record, all that dynaorm decides by a value's type:

- ``python``: the classes of its values (their subclasses too: a value is of the first
  kind in the registry's order that takes it), and ``annotations``: the field
  annotations whose fields hold it (``Optional`` and ``Annotated`` seen through; by
  default ``python``, compared exactly: ``bool`` is no number here);
- ``tag`` and ``encode``: the DynamoDB type it is stored as (empty: its values' own, as
  an enum's or a set's) and the function from a value to its AttributeValue;
- ``schemas``: the pydantic-core schema types that the fast read path
  (:mod:`dynaorm.values.fastload`) validates straight from ``tag``'s wire form, giving
  what validating the decoded value gives (an ``N`` is text: lax numbers only);
- ``actions``: the update methods a field of the kind takes besides ``set``,
  ``set_default`` and ``remove`` (``add``, ``discard``, ``append``, ``prepend``), each
  with how it combines the stored value and the operand in Python (the read-first update
  path, and repeated actions of one update), and ``zero``: what an absent attribute
  counts as for them (DynamoDB's own rule: ``ADD`` onto nothing adds to 0);
- ``pynamodb``: a kind registered for a class of your own: the PynamoDB attribute
  classes (by name) whose items hold it as dynaorm stores it, which
  :mod:`dynaorm.pynamodb` maps onto its fields (the bridge knows PynamoDB's own).

What asks: the codec below (a value's kind encodes it), the fast read path
(:func:`kind_of_schema`), updates (:func:`kind_of` a field's annotation: which actions fit,
how they accumulate and apply), the PynamoDB bridge (:func:`kinds`). A kind given in a
field's ``Annotated`` metadata is that field's own (a field-level kind, whatever the
value's class), and a schema whose metadata names a kind reads fast only as that kind
says.

Comparisons are DynamoDB's, by stored type (:func:`dynaorm.values.expressions.holds`): numbers,
strings and binaries order, ``contains`` looks into strings, sets and lists,
``begins_with`` into strings.

**Adding a kind.** A built-in kind is one more :class:`Kind` in :data:`_KINDS`, in the
order it must be tried. A class of your own is registered once, before the entities that
use it are defined::

    register(stored_as(Money, Decimal, to=lambda m: m.amount, back=Money))

:func:`stored_as` makes the kind of a class stored as another kind's values (the
number's tag, encoding, fast reading and actions, through ``to`` and ``back``) and gives
the class a pydantic schema of that form; :func:`register` puts a kind ahead of those
already there. Decoding needs nothing: a stored value decodes to plain Python (``Decimal``
for fractional numbers, ``int`` for whole ones, ISO strings for dates and datetimes) that
pydantic validates back into the declared field types.
"""

import base64
import enum
import math
import operator
import types
import typing
import uuid
from collections.abc import Callable, Iterable, Mapping, MutableSequence, MutableSet, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Annotated, Any, TypeVar, Union

from pydantic import (
    AwareDatetime,
    FutureDate,
    FutureDatetime,
    NaiveDatetime,
    PastDate,
    PastDatetime,
)
from pydantic_core import core_schema

from dynaorm._types import AttributeValue, Item
from dynaorm.errors import DynaormError, InvalidValueError

T = TypeVar("T")


@dataclass(frozen=True, eq=False)
class Kind:
    """One kind of stored value (see the module's docstring for each member)."""

    name: str
    python: tuple[type[Any], ...]
    tag: str
    encode: Callable[[Any], AttributeValue]
    schemas: frozenset[str] = frozenset()
    actions: Mapping[str, Callable[[Any, Any], Any]] = field(default_factory=dict)
    zero: Any = None
    annotations: tuple[Any, ...] = ()
    pynamodb: tuple[str, ...] = ()


def _number(value: int | float | Decimal) -> AttributeValue:
    if (isinstance(value, float) and not math.isfinite(value)) or (
            isinstance(value, Decimal) and not value.is_finite()):
        raise InvalidValueError(f"DynamoDB cannot store the number {value!r}")
    return {"N": repr(value) if isinstance(value, float) else str(value)}


def _encode_set(value: set[Any] | frozenset[Any]) -> AttributeValue:
    if not value:  # DynamoDB has no empty sets: an empty list validates back into a set
        return {"L": []}
    items = [v.value if isinstance(v, enum.Enum) else v for v in value]
    if all(isinstance(v, str) for v in items):
        return {"SS": sorted(items)}
    if all(isinstance(v, int | float | Decimal) and not isinstance(v, bool) for v in items):
        return {"NS": sorted(_number(v)["N"] for v in items)}
    if all(isinstance(v, bytes) for v in items):
        return {"BS": sorted(items)}
    return {"L": [_encode(v) for v in items]}


def _encode_map(value: Mapping[Any, Any]) -> AttributeValue:
    """A map's entries: every key a string (a ``str``, or an enum member whose value is
    one), each stored once. Any other key (``1``, ``(2, 3)``, ``None``, ``b"k"``) raises
    :class:`~dynaorm.InvalidValueError`: turning it into a string would change the value
    silently (``{1: "a", "1": "b"}`` would be stored as ``{"1": "b"}``)."""
    out = {}
    for k, v in value.items():
        name = k.value if isinstance(k, enum.Enum) else k
        if not isinstance(name, str):
            raise InvalidValueError(f"a map key must be a string, not {type(k).__name__} "
                                    f"{_short(k)}: DynamoDB's map keys are strings")
        name = str.__str__(name)  # (a str subclass: its text, not its __str__)
        if name in out:
            raise InvalidValueError(f"the map key {_short(k)} is stored as {name!r}, "
                                    "which another key of the map is stored as already")
        out[name] = _encode(v)
    return {"M": out}


def _union(first: Any, then: Any) -> Any:
    return type(first)(set(first) | set(then))


#: the registry, in the order a value's kind is looked for (a value of the first that
#: takes it); :func:`register` puts a kind first
_KINDS: tuple[Kind, ...] = (
    Kind("none", (type(None),), "NULL", lambda v: {"NULL": True}),
    Kind("enum", (enum.Enum,), "", lambda v: _encode(v.value)),
    Kind("bool", (bool,), "BOOL", lambda v: {"BOOL": bool(v)}, frozenset({"bool"})),
    NUMBER := Kind("number", (int, float, Decimal), "N", _number,
                   frozenset({"int", "float", "decimal"}), {"add": operator.add}, 0),
    Kind("string", (str,), "S", lambda v: {"S": str(v)}, frozenset({"str"})),
    Kind("binary", (bytes, bytearray, memoryview), "B", lambda v: {"B": bytes(v)}),
    Kind("time", (datetime, date, time), "S", lambda v: {"S": v.isoformat()},
         frozenset({"datetime", "date", "time"}), annotations=(
             datetime, date, time, AwareDatetime, NaiveDatetime, PastDatetime, FutureDatetime,
             PastDate, FutureDate)),
    Kind("text", (uuid.UUID, timedelta), "S", lambda v: {"S": str(v)}, frozenset({"uuid"})),
    Kind("map", (Mapping,), "M", _encode_map),
    SET := Kind("set", (set, frozenset), "", _encode_set, zero=set(),
                actions={"add": _union, "discard": lambda a, b: set(a) - set(b)},
                annotations=(set, frozenset, AbstractSet, MutableSet)),
    Kind("list", (list, tuple), "L", lambda v: {"L": [_encode(x) for x in v]}, zero=[],
         actions={"append": lambda a, b: [*a, *b], "prepend": lambda a, b: [*b, *a]},
         annotations=(list, Sequence, MutableSequence)),
)
#: where a custom kind's pydantic schema names it (:func:`stored_as`)
_MARK = "dynaorm.kind"


def _kind_of_class(cls: type[Any]) -> Kind | None:
    return next((k for k in _KINDS if issubclass(cls, k.python)), None)


def _common() -> dict[type[Any], Kind]:
    """The kind of each common class, found at once (no class of the caller is kept)."""
    found = {c: _kind_of_class(c) for c in (str, int, float, bool, Decimal, type(None), dict,
                                             list, set, bytes, datetime, date, uuid.UUID)}
    return {c: k for c, k in found.items() if k is not None}


_BY_CLASS = _common()


def kinds() -> tuple[Kind, ...]:
    """The registry's kinds, in the order a value's kind is looked for."""
    return _KINDS


def register(kind: Kind) -> Kind:
    """Add ``kind`` to the registry ahead of every kind there, in place of one of its
    name (its classes, subclasses included, are its own from now on; register before
    defining the entities that use it). Returns ``kind``."""
    global _KINDS
    _KINDS = (kind, *(k for k in _KINDS if k.name != kind.name))
    _BY_CLASS.clear()
    _BY_CLASS.update(_common())
    return kind


def stored_as(cls: type[T], base: type[Any], to: Callable[[T], Any],
              back: Callable[[Any], T], *, pynamodb: tuple[str, ...] = ()) -> Kind:
    """The kind of ``cls``, a class of your own, stored as ``base``'s kind stores its
    values (``to`` turns an object into such a value, ``back`` makes one from it): that
    kind's tag, encoding, fast reading and update actions (``add`` of two objects is
    ``back(to(a) + to(b))``). Unless ``cls`` has its own ``__get_pydantic_core_schema__``,
    it gets one: an object validates as itself, anything else as ``base`` then ``back``,
    and an object dumps as ``to(obj)`` (what is stored). Register it with
    :func:`register`."""
    inner = _kind_of_class(base)
    if inner is None:
        raise DynaormError(f"{base.__name__} is no kind of stored value")
    kind = Kind(cls.__name__, (cls,), inner.tag, lambda v: inner.encode(to(v)),
                actions={m: _through(f, to, back) for m, f in inner.actions.items()},
                zero=None if inner.zero is None else back(inner.zero), pynamodb=pynamodb)
    if "__get_pydantic_core_schema__" not in cls.__dict__:
        def schema(source: Any, handler: Any) -> core_schema.CoreSchema:
            return core_schema.no_info_wrap_validator_function(
                lambda v, h: v if isinstance(v, cls) else back(h(v)),
                handler.generate_schema(base), metadata={_MARK: kind.name},
                serialization=core_schema.plain_serializer_function_ser_schema(to))
        type.__setattr__(cls, "__get_pydantic_core_schema__", schema)
    return kind


def _through(action: Callable[[Any, Any], Any], to: Callable[[Any], Any],
             back: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda a, b: back(action(to(a), to(b)))


def kind_of(annotation: Any) -> Kind | None:
    """The kind of a field annotated ``annotation`` (``Optional`` and ``Annotated`` seen
    through, a :class:`Kind` in ``Annotated`` winning; a union of numbers is a number),
    or ``None`` (another type, or a union of several)."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        args = typing.get_args(annotation)
        return next((m for m in args[1:] if isinstance(m, Kind)), None) or kind_of(args[0])
    if origin is Union or origin is types.UnionType:
        found = [kind_of(a) for a in typing.get_args(annotation) if a is not type(None)]
        return found[0] if len(found) == 1 or all(k is NUMBER for k in found) else None
    base = origin or annotation
    return next((k for k in _KINDS if base in (k.annotations or k.python)), None)


def kind_of_schema(schema: Mapping[str, Any]) -> Kind | None:
    """The kind whose values a pydantic-core schema validates: by the schema's type
    (:attr:`Kind.schemas`), or the kind a :func:`stored_as` schema names."""
    name = (schema.get("metadata") or {}).get(_MARK)
    kind = schema.get("type")
    return next((k for k in _KINDS if (k.name == name if name else kind in k.schemas)), None)


def encode_value(value: Any) -> AttributeValue:
    """Encode one Python value. A value DynamoDB cannot store raises
    :class:`~dynaorm.InvalidValueError` before anything is sent: NaN and infinities (float
    or ``Decimal``), a type with no DynamoDB form, maps and lists nested far beyond
    DynamoDB's 32 levels, a map with a key that is not a string."""
    try:
        return _encode(value)
    except RecursionError:
        raise InvalidValueError("maps and lists nested far deeper than DynamoDB's limit "
                                "of 32 levels") from None


def _encode(value: Any) -> AttributeValue:
    kind = _BY_CLASS.get(type(value)) or _kind_of_class(type(value))
    if kind is None:
        raise InvalidValueError(f"cannot store a value of type {type(value).__name__} in "
                                f"DynamoDB: {_short(value)}")
    return kind.encode(value)


def _short(value: Any) -> str:
    """``repr(value)``, cut to keep messages short (a repr may be huge or raise)."""
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 80 else text[:77] + "..."


def encode_fields(data: Mapping[str, Any], owner: str = "") -> Item:
    """Encode a dumped model: ``None`` fields are left out of the item."""
    try:
        return {k: encode_value(v) for k, v in data.items() if v is not None}
    except DynaormError:
        for k, v in data.items():  # find the field to name it
            try:
                encode_value(v)
            except DynaormError as exc:
                raise type(exc)(f"{owner or 'item'} field {k!r}: {exc}") from exc
        raise


def decode_number(text: str) -> int | Decimal:
    """A number's text as ``int`` (whole) or ``Decimal``."""
    if "." in text or "e" in text or "E" in text:
        return Decimal(text)
    return int(text)


def decode_value(av: AttributeValue) -> Any:
    """Decode one AttributeValue."""
    for tag, raw in av.items():
        return _DECODERS[tag](raw)
    raise TypeError("empty AttributeValue")


def _exactly(kind: type[Any], what: str) -> Callable[[Any], Any]:
    """A check that a value read is of exactly ``kind`` (else ``what``, a TypeError)."""
    def check(raw: Any) -> Any:
        if type(raw) is kind:
            return raw
        raise TypeError(f"{what}: {type(raw).__name__}")
    return check


def _binary(raw: Any) -> bytes:
    """A binary value as read (``bytes``); anything else is not one (``bytes(5)`` would
    read a number as five zero bytes)."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return bytes(raw)
    raise TypeError(f"a binary value that is not bytes: {type(raw).__name__}")


_boolean = _exactly(bool, "a BOOL value that is not a boolean")
_text = _exactly(str, "a set member that is not a string")
_listed = _exactly(list, "a set value that is not a list")  # (a string: its characters)
#: DynamoDB's types: tag -> its wire value decoded
_DECODERS: dict[str, Callable[[Any], Any]] = {
    "S": lambda raw: raw,
    "N": decode_number,
    "BOOL": _boolean,
    "NULL": lambda raw: None,
    "M": lambda raw: {k: decode_value(v) for k, v in raw.items()},
    "L": lambda raw: [decode_value(v) for v in raw],
    "SS": lambda raw: {_text(v) for v in _listed(raw)},
    "NS": lambda raw: {decode_number(v) for v in _listed(raw)},
    "B": _binary,
    "BS": lambda raw: {_binary(v) for v in _listed(raw)},
}


def binary_from_json(value: Any) -> Any:
    """``value`` as read from DynamoDB's JSON (an attribute value, items, a whole answer:
    binary values base64 text) with its binary values as ``bytes``, as botocore reads
    them and the wire's answers carry them (maps and lists looked into)."""
    if isinstance(value, list):
        return [binary_from_json(v) for v in value]
    if not isinstance(value, dict):
        return value
    if len(value) == 1:
        b, bs = value.get("B"), value.get("BS")
        if isinstance(b, str):
            return {"B": base64.b64decode(b)}
        if isinstance(bs, list) and all(isinstance(x, str) for x in bs):
            return {"BS": [base64.b64decode(x) for x in bs]}
    return {k: binary_from_json(v) for k, v in value.items()}


def decode_item(item: Item, names: Iterable[str] | None = None) -> dict[str, Any]:
    """An item's attribute values (DynamoDB JSON) as Python values, with no entity: text,
    numbers (``int`` or ``Decimal``), ``bytes``, sets, lists and dicts; with ``names``, only
    those attributes."""
    out = {}
    for k in item if names is None else names:
        got = item.get(k)
        if got is not None:
            text = got.get("S")
            out[k] = text if text is not None else decode_value(got)
    return out
