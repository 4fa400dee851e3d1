"""Types and stored formats: the model type of the values an attribute holds (a string,
a number, a time and the form it is stored in, a set, a list, a nested model), merged over
the items of one entity, and each attribute's field."""

from __future__ import annotations

import keyword
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from typing import Any, Final

from dynaorm.formats.infer.items import _INTEGER
from dynaorm.formats.infer.naming import _IDENT, _MEMBERS, _class_name, _Namer

_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?\Z")


_DATE = re.compile(r"\d{4}-\d{2}-\d{2}\Z")


def _kind(av: Mapping[str, Any]) -> dict[str, Any]:
    """The model type of one attribute value."""
    (tag, value), = av.items()
    if tag == "S":
        return _text_kind(value)
    if tag == "N":
        return {"type": "integer" if _INTEGER.match(value) else "decimal"}
    if tag in _PLAIN:
        return {"type": _PLAIN[tag]}
    if tag == "L":
        return {"type": "list", "items": _merge([_kind(v) for v in value], members=True)}
    if tag == "M":
        return {"type": "map", "_values": [value]}
    # (a set, SS, NS or BS: of strings, else of its members' one type)
    return {"type": "set", "items": {"type": "string"} if tag == "SS" else _merge(
        [_kind({tag[0]: v}) for v in value])}


#: the model type of a value of each tag of one
_PLAIN: Final = {"BOOL": "boolean", "B": "binary", "NULL": "null"}


def _text_kind(value: str) -> dict[str, Any]:
    """The model type of a string value: a time (and its stored format), a date, else a
    string."""
    if _DATETIME.match(value) and _parses(datetime.fromisoformat, value):
        stored = _stored_format(value)
        return {"type": "datetime", **({"stored_as": stored} if stored else {})}
    return {"type": "date" if _DATE.match(value) and _parses(date.fromisoformat, value)
            else "string"}


def _parses(parse: Callable[[str], object], text: str) -> bool:
    """Whether ``text`` (of a time's or a date's shape) is one (``2024-02-30`` is not)."""
    try:
        parse(text.replace("Z", "+00:00"))
    except ValueError:
        return False
    return True


#: a time as text other writers store it: its separator, fraction and zone
_TIME_TEXT = re.compile(r"\d{4}-\d{2}-\d{2}([T ])\d{2}:\d{2}:\d{2}(?:\.(\d+))?(Z?)\Z")


def _stored_format(text: str) -> str | None:
    """The stored format (:class:`~dynaorm.StoredAs`) of a time stored as ``text``, when
    dynaorm's own form (ISO-8601 with an offset) is not it: ISO-8601 with ``Z`` (with
    milliseconds, JavaScript's, or microseconds), a pattern for whole seconds, with or
    without ``Z``, and for microseconds without a zone; ``None`` for any other text."""
    found = _TIME_TEXT.match(text)
    if found is None:
        return None
    sep, fraction, zone = found.groups()
    if fraction is None:
        return f"%Y-%m-%d{sep}%H:%M:%S{zone}"
    if zone and sep == "T" and len(fraction) != 9:
        return "iso-z-millis" if len(fraction) == 3 else "iso-z"
    return {6: f"%Y-%m-%d{sep}%H:%M:%S.%f{zone}", 9: f"%Y-%m-%d{sep}%H:%M:%S.%f000{zone}"}.get(
        len(fraction))


#: the stored formats of ISO-8601 times with ``Z``
_ZULU: Final = frozenset({"iso-z", "iso-z-millis", "%Y-%m-%dT%H:%M:%SZ",
                          "%Y-%m-%dT%H:%M:%S.%f000Z"})


#: the model types of values stored as ``S`` and as ``N``
_TEXTS: Final = frozenset({"string", "date", "datetime"})


_NUMBERS: Final = frozenset({"integer", "decimal"})


def _merge(kinds: Sequence[dict[str, Any]], members: bool = False) -> dict[str, Any]:
    """The one type of values of ``kinds`` (``any`` when they differ): texts of several
    kinds are strings, integers and fractions decimals, and values stored as ``S`` on some
    items and ``N`` on others a union of a string and a number (pydantic keeps each value
    its type, so each is written back with the tag it was read with). ``members``: the
    values of a list or a map, where a ``NULL`` among others makes the type ``any`` (a
    field's ``NULL`` makes it optional instead)."""
    real = [k for k in kinds if k["type"] != "null"]
    if not real or (members and len(real) < len(kinds)):
        return {"type": "any"}
    names = {k["type"] for k in real}
    return _merge_names(names) if len(names) > 1 else _merge_one(real)


def _merge_names(names: set[str]) -> dict[str, Any]:
    """The one type of values of two or more model types ``names``."""
    number = {"type": "decimal" if "decimal" in names else "integer"}
    if names <= _NUMBERS:
        return number
    if names <= _TEXTS:
        return {"type": "string"}
    if names <= _TEXTS | _NUMBERS:
        return {"type": "union", "of": [{"type": "string"}, number]}
    return {"type": "any"}


def _merge_one(real: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The one type of values ``real`` (none ``null``) all of one model type."""
    kind = real[0]["type"]
    if kind == "union":  # (two-typed on every item: a fraction on one makes it decimal)
        return _merge_names({t["type"] for k in real for t in k["of"]})
    if kind in ("list", "set"):
        return {"type": kind, "items": _merge([k["items"] for k in real])}
    if kind == "map":
        return {"type": "map", "_values": [m for k in real for m in k["_values"]]}
    if kind == "datetime":  # (one stored format, when every value was stored in it; ISO
        # with Z and any fraction, Java's Instant.toString(), is ISO_Z)
        formats = {k.get("stored_as") for k in real}
        one = formats.pop() if len(formats) == 1 else "iso-z" if formats <= _ZULU else None
        return {"type": kind, **({"stored_as": one} if one else {})}
    return dict(real[0])


def _resolved(kind: dict[str, Any], name: str, models: _Namer) -> dict[str, Any]:
    """``kind`` with each map of identifier keys a nested model (``name`` its class), any
    other map ``dict[str, ...]``."""
    if kind["type"] in ("list", "set"):
        return {**kind, "items": _resolved(kind["items"], name, models)}
    if kind["type"] != "map":
        return kind
    values = kind["_values"]
    keys = {k for v in values for k in v}
    if keys and all(_IDENT.match(k) and not k.startswith(("_", "model_")) and k != "Meta"
                    and not keyword.iskeyword(k) and k not in _MEMBERS for k in keys):
        fields = _fields_of(values, keys, models)
        return {"type": "object", "model": models(_class_name(name)), "fields": fields}
    inner = _merge([_kind(av) for v in values for av in v.values()], members=True)
    return {"type": "map", "values": _resolved(inner, name, models)}


def _fields_of(values: Sequence[Mapping[str, Any]], keys: Iterable[str], models: _Namer
               ) -> list[dict[str, Any]]:
    """The fields of a nested model from the maps ``values`` (each attribute a field under
    its own name; optional unless every map holds it)."""
    out = []
    for key in sorted(keys):
        avs = [v[key] for v in values if key in v]
        kind = _resolved(_merge([_kind(av) for av in avs]), key[:1].upper() + key[1:], models)
        out.append(_field(key, key, kind, len(avs) == len(values), avs))
    return out


#: the last word of an attribute named as a time (``createdAt``, ``updated_at``,
#: ``expires``, ``timestamp``, ``LastLoginTime``, ``ttl``)
_TIME_WORDS: Final = frozenset({"at", "time", "timestamp", "ts", "epoch", "date", "datetime",
                                "expires", "expiry", "expiration", "ttl", "created",
                                "updated", "modified", "deleted"})


#: the first or last word of an attribute named as a boolean
_BOOL_WORDS: Final = frozenset({"is", "has", "can", "enabled", "active", "deleted", "flag"})


#: the epoch numbers read as times: from 2000-01-01 to 2100-01-01, in seconds or in
#: milliseconds (the two ranges are a thousand times apart: no number is in both)
_EPOCHS: Final = (("epoch-seconds", 946_684_800, 4_102_444_800),
                  ("epoch-millis", 946_684_800_000, 4_102_444_800_000))


def _epoch(stored: str, kind: Mapping[str, Any], avs: Sequence[Mapping[str, Any]]
           ) -> dict[str, Any] | None:
    """A time stored as a number of epoch seconds or milliseconds (``StoredAs``), when both
    say so: the attribute is named as a time (its last word one of :data:`_TIME_WORDS`)
    and every value is a whole number of one of :data:`_EPOCHS`' ranges; or a boolean
    stored as 1 or 0, named as one (``isActive``, ``enabled``: :data:`_BOOL_WORDS`)."""
    words = [w for w in re.split(r"[^a-z0-9]+", re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "_", stored)
                                 .lower()) if w]
    if kind.get("type") != "integer" or not avs or not words:
        return None
    try:
        numbers = [int(av["N"]) for av in avs if "NULL" not in av]
    except (KeyError, ValueError):
        return None
    if {words[0], words[-1]} & _BOOL_WORDS and set(numbers) <= {0, 1}:
        return {"type": "boolean", "stored_as": "number"}
    if words[-1] not in _TIME_WORDS:
        return None
    for fmt, low, high in _EPOCHS:
        if all(low <= v < high for v in numbers):  # (one at least: the kind is integer)
            return {"type": "datetime", "stored_as": fmt}
    return None


def _field(name: str, stored: str, kind: dict[str, Any], required: bool,
           avs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    kind = _epoch(stored, kind, avs) or kind
    nullable = not required or any("NULL" in av for av in avs)
    out = {"name": name, "stored": stored, **kind,
           "required": required and not nullable, "nullable": nullable}
    if nullable:
        out["default"] = None
    return out
