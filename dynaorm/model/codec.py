"""Python values <-> DynamoDB AttributeValues (wire form).

Encoding works on ``model_dump(mode="python")`` output; decoding produces plain Python
values that pydantic validates back into the declared field types (``Decimal`` for
fractional numbers, ``int`` for whole ones, ISO strings for dates and datetimes).
"""

from __future__ import annotations

import base64
import enum
import math
import uuid
from collections.abc import Iterable, Mapping
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from dynaorm._types import AttributeValue, Item
from dynaorm.errors import DynaormError, InvalidValueError

__all__ = ["decode_item", "decode_number", "decode_value", "encode_fields", "encode_value"]


def _number(value: int | float | Decimal) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidValueError(f"DynamoDB cannot store the number {value!r}")
        return repr(value)
    if isinstance(value, Decimal):
        if not value.is_finite():
            raise InvalidValueError(f"DynamoDB cannot store the number {value!r}")
        return str(value)
    return str(value)


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
    if value is None:
        return {"NULL": True}
    t = type(value)
    if t is str:
        return {"S": value}
    if t is bool:
        return {"BOOL": value}
    if t is int or t is float or t is Decimal:
        return {"N": _number(value)}
    if isinstance(value, enum.Enum):
        return _encode(value.value)
    if isinstance(value, bool):
        return {"BOOL": bool(value)}
    if isinstance(value, int | float | Decimal):
        return {"N": _number(value)}
    if isinstance(value, str):
        return {"S": str(value)}
    if isinstance(value, bytes | bytearray | memoryview):
        return {"B": bytes(value)}
    if isinstance(value, datetime | date | time):
        return {"S": value.isoformat()}
    if isinstance(value, uuid.UUID | timedelta):
        return {"S": str(value)}
    if isinstance(value, Mapping):
        return {"M": _encode_map(value)}
    if isinstance(value, set | frozenset):
        return _encode_set(value)
    if isinstance(value, list | tuple):
        return {"L": [_encode(v) for v in value]}
    raise InvalidValueError(f"cannot store a value of type {t.__name__} in DynamoDB: "
                            f"{_short(value)}")


def _encode_map(value: Mapping[Any, Any]) -> dict[str, AttributeValue]:
    """A map's entries: every key a string (a ``str``, or an enum member whose value is
    one), each stored once. Any other key (``1``, ``(2, 3)``, ``None``, ``b"k"``) raises
    :class:`~dynaorm.InvalidValueError`: turning it into a string would change the value
    silently (``{1: "a", "1": "b"}`` would be stored as ``{"1": "b"}``)."""
    out: dict[str, AttributeValue] = {}
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
    return out


def _short(value: Any) -> str:
    """``repr(value)``, cut to keep messages short (a repr may be huge or raise)."""
    try:
        text = repr(value)
    except Exception:  # a hostile __repr__ must not hide the real error
        text = f"<{type(value).__name__} object>"
    return text if len(text) <= 80 else text[:77] + "..."


def _encode_set(value: set[Any] | frozenset[Any]) -> AttributeValue:
    if not value:  # DynamoDB has no empty sets: an empty list validates back into a set
        return {"L": []}
    items = [v.value if isinstance(v, enum.Enum) else v for v in value]
    if all(isinstance(v, str) for v in items):
        return {"SS": sorted(items)}
    if all(isinstance(v, int | float | Decimal) and not isinstance(v, bool) for v in items):
        return {"NS": sorted(_number(v) for v in items)}
    if all(isinstance(v, bytes) for v in items):
        return {"BS": sorted(items)}
    return {"L": [_encode(v) for v in items]}


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


_DECODERS: dict[str, Any] = {
    "S": lambda raw: raw,
    "N": decode_number,
    "BOOL": lambda raw: _boolean(raw),
    "NULL": lambda raw: None,
    "M": lambda raw: {k: decode_value(v) for k, v in raw.items()},
    "L": lambda raw: [decode_value(v) for v in raw],
    "SS": lambda raw: {_text(v) for v in _listed(raw)},
    "NS": lambda raw: {decode_number(v) for v in _listed(raw)},
    "B": lambda raw: _binary(raw),
    "BS": lambda raw: {_binary(v) for v in _listed(raw)},
}


def _boolean(raw: Any) -> bool:
    if type(raw) is bool:
        return raw
    raise TypeError(f"a BOOL value that is not a boolean: {type(raw).__name__}")


def _text(raw: Any) -> str:
    if type(raw) is str:
        return raw
    raise TypeError(f"a set member that is not a string: {type(raw).__name__}")


def _listed(raw: Any) -> list[Any]:
    """A set's members as read (a JSON list; a string would read as its characters)."""
    if type(raw) is list:
        return raw
    raise TypeError(f"a set value that is not a list: {type(raw).__name__}")


def _binary(raw: Any) -> bytes:
    """A binary value as read (``bytes``); anything else is not one (``bytes(5)`` would
    read a number as five zero bytes)."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        return bytes(raw)
    raise TypeError(f"a binary value that is not bytes: {type(raw).__name__}")


def binary_from_json(av: Any) -> Any:
    """An attribute value as read from DynamoDB's JSON (binary values base64 text) with
    its binary values as ``bytes``, as the wire's answers carry them (lists and maps
    looked into; anything else as it is)."""
    if type(av) is not dict or len(av) != 1:
        return av
    ((tag, value),) = av.items()
    if tag == "B" and isinstance(value, str):
        return {"B": base64.b64decode(value)}
    if tag == "BS" and isinstance(value, list) and all(isinstance(v, str) for v in value):
        return {"BS": [base64.b64decode(v) for v in value]}
    if tag == "L" and isinstance(value, list):
        return {"L": [binary_from_json(v) for v in value]}
    if tag == "M" and isinstance(value, dict):
        return {"M": {k: binary_from_json(v) for k, v in value.items()}}
    return av


def decode_item(item: Item, names: Iterable[str] | None = None) -> dict[str, Any]:
    """Decode an item; with ``names``, only those attributes."""
    out: dict[str, Any] = {}
    if names is None:
        for k, av in item.items():
            text = av.get("S")
            out[k] = text if text is not None else decode_value(av)
        return out
    for k in names:
        got = item.get(k)
        if got is not None:
            text = got.get("S")
            out[k] = text if text is not None else decode_value(got)
    return out
