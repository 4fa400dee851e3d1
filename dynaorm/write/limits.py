"""DynamoDB's value limits, checked on rendered AttributeValues before anything is sent (pure).

Every limit here was measured against DynamoDB Local (the reference engine) and sits
exactly at its boundary: a value just inside is stored and reads back equal, a value just
outside is refused by DynamoDB, so dynaorm refuses it first with a typed error that names
the entity, the field and the key.

- Key attributes (table and index keys): at most 2048 bytes for a partition key and 1024
  for a sort key, never empty (:class:`~dynaorm.KeyTemplateError`).
- Strings must be valid UTF-8: a lone surrogate (``json.loads('"\\ud800"')``) cannot be
  (:class:`~dynaorm.InvalidValueError`), in attribute values, map keys and sets alike.
- Maps and lists nest at most :data:`MAX_NESTING` levels (DynamoDB refuses a map or list
  at level 32 and any value at level 33).
- Numbers: at most 38 significant digits, magnitude ``1E-130 <= |n| < 1E+126`` or zero.
- Attribute names (item attributes and map keys) are never empty.
- Items: at most 400 KB by DynamoDB's own size rules (:mod:`dynaorm.write.sizes`, whose names
  this module re-exports), including the item an update makes of a stored item dynaorm
  knows (:func:`~dynaorm.write.sizes.updated_item`).

All walks are iterative: no input, however deep, raises ``RecursionError`` here.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Final

from dynaorm._types import AttributeValue, Item
from dynaorm.errors import InvalidValueError, ItemTooLargeError, KeyTemplateError
from dynaorm.write.sizes import (
    _EXACT,
    MAX_DIGITS,
    MAX_ITEM_BYTES,
    MAX_NESTING,
    MAX_PARTITION_KEY_BYTES,
    MAX_SORT_KEY_BYTES,
    _integer_size,
    _parse_number,
    _text_size,
    common_values,
    item_size,
    number_size,
    plain_item_size,
    updated_item,
    value_size,
)

__all__ = [
    "MAX_DIGITS",
    "MAX_ITEM_BYTES",
    "MAX_NESTING",
    "MAX_PARTITION_KEY_BYTES",
    "MAX_SORT_KEY_BYTES",
    "check_item",
    "check_key_value",
    "check_size",
    "check_values",
    "common_values",
    "describe_key",
    "item_size",
    "number_problem",
    "number_size",
    "plain_item_size",
    "plain_key_value",
    "updated_item",
    "value_problem",
    "value_size",
]

_LOW: Final = Decimal("1E-130")
_HIGH: Final = Decimal("1E+126")


# -- single values ---------------------------------------------------------------------------
def _utf8_problem(text: str) -> str | None:
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"string is not valid UTF-8 (lone surrogate {text[exc.start]!r} at "
                f"position {exc.start})")
    return None


def number_problem(text: str) -> str | None:
    """Why DynamoDB refuses the number ``text`` (``None``: it stores it)."""
    if type(text) is str and 0 < len(text) <= MAX_DIGITS and text.isdigit() and text.isascii():
        return None  # the common case: a plain integer of at most 38 digits
    number = _parse_number(text)
    if number is None:
        return f"{text!r} is not a finite number"
    if number.is_zero():
        return None
    digits = number.normalize(_EXACT).as_tuple().digits
    if len(digits) > MAX_DIGITS:
        return (f"number {text} has {len(digits)} significant digits; DynamoDB keeps at most "
                f"{MAX_DIGITS}")
    magnitude = number.copy_abs()
    if magnitude < _LOW or magnitude >= _HIGH:
        return (f"number {text} is outside DynamoDB's range (magnitude 1E-130 up to "
                "9.99...E+125)")
    return None


def _set_problem(tag: str, raw: Any) -> str | None:
    if not isinstance(raw, list | tuple | set | frozenset) or not raw:
        return f"a {tag} set must hold at least one member"
    for member in raw:
        if tag == "SS":
            problem = _utf8_problem(member) if isinstance(member, str) else "not a string"
        elif tag == "NS":
            problem = number_problem(member)
        else:
            problem = None if isinstance(member, bytes | bytearray) else "not bytes"
        if problem:
            return f"set member: {problem}"
    return None


def value_problem(av: AttributeValue) -> tuple[str, str] | None:
    """``(path inside the value, reason)`` of the first thing DynamoDB would refuse in
    ``av`` (``None``: nothing). Iterative: any depth is answered, never recursed."""
    text = av.get("S") if type(av) is dict and len(av) == 1 else None
    if type(text) is str and text.isascii():
        return None  # the common case, answered without the walk
    stack: list[tuple[Any, str, int]] = [(av, "", 1)]  # (values may come from anywhere)
    while stack:
        value, path, depth = stack.pop()
        if not isinstance(value, Mapping) or len(value) != 1:
            return path, f"malformed AttributeValue {value!r}"
        (tag, raw), = value.items()
        problem: str | None = None
        if tag == "S":
            problem = _utf8_problem(raw)
        elif tag == "N":
            problem = number_problem(raw)
        elif tag in ("SS", "NS", "BS"):
            problem = _set_problem(tag, raw)
        elif tag in ("M", "L"):
            if depth > MAX_NESTING:
                return path, (f"maps and lists nested more than {MAX_NESTING} levels deep; "
                              "DynamoDB refuses deeper documents")
            if tag == "M":
                for name in raw:
                    problem = _name_problem(name)
                    if problem:
                        return f"{path}.{name!r}" if name else path, problem
                    stack.append((raw[name], f"{path}.{name}", depth + 1))
            else:
                stack.extend((v, f"{path}[{i}]", depth + 1) for i, v in enumerate(raw))
        if problem:
            return path, problem
    return None


def _name_problem(name: Any) -> str | None:
    if not isinstance(name, str) or not name:
        return "empty attribute name (DynamoDB refuses empty names, also as map keys)"
    return _utf8_problem(name)


# -- items and keys ---------------------------------------------------------------------------
def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}...({len(text)} characters)"


def describe_key(key: Mapping[str, Any]) -> str:
    """A key for an error message, long values cut short."""
    return "{" + ", ".join(f"{k!r}: {_short(v)}" for k, v in key.items()) + "}"


def _where(entity: str, key: Mapping[str, Any], name: str, path: str = "") -> str:
    return (f"{entity} {describe_key(key)}: field {name!r}"
            f"{' at ' + _short(path.lstrip('.')) if path else ''}")


def plain_key_value(attr: str, value: Any) -> bool:
    """Whether a key value is the common one with nothing DynamoDB could refuse: a
    non-empty ASCII string within every key limit, under a non-empty ASCII name (the
    write gate and reads by key skip :func:`check_key_value` for it)."""
    return (type(value) is str and 0 < len(value) <= MAX_SORT_KEY_BYTES and value.isascii()
            and bool(attr) and attr.isascii())


def check_key_value(name: str, av: AttributeValue, role: str, *, entity: str,
                    key: Mapping[str, Any]) -> None:
    """A key attribute's value (``role`` "partition" or "sort"): non-empty, valid, within
    DynamoDB's byte limit; else :class:`KeyTemplateError`."""
    limit = MAX_PARTITION_KEY_BYTES if role == "partition" else MAX_SORT_KEY_BYTES
    text = av.get("S") if len(av) == 1 else None
    if type(text) is str and text.isascii() and 0 < len(text) <= limit:
        return  # the common case: one byte a character, nothing to walk
    found = value_problem(av)
    if found is not None:
        raise KeyTemplateError(f"{_where(entity, key, name)}: key value refused: {found[1]}")
    size = value_size(av)
    if size == 0:
        raise KeyTemplateError(f"{_where(entity, key, name)}: a key attribute cannot be empty")
    if size > limit:
        raise KeyTemplateError(f"{_where(entity, key, name)}: {role} key value of {size} bytes "
                               f"exceeds DynamoDB's {limit} byte limit")


def check_values(values: Iterable[tuple[str, AttributeValue]], *, entity: str,
                 key: Mapping[str, Any], key_roles: Mapping[str, str]) -> None:
    """Every ``(attribute name, value)``: valid names and values, and key attributes
    (``key_roles``: name -> "partition"/"sort") within their limits."""
    for name, av in values:
        if type(name) is str and name.isascii() and name not in key_roles:
            text = av.get("S") if type(av) is dict and len(av) == 1 else None
            if type(text) is str and text.isascii() and name:
                continue  # the common case: a plain ASCII string under a plain name
        problem = _name_problem(name)
        if problem:
            raise InvalidValueError(f"{entity} {describe_key(key)}: attribute {_short(name)}: "
                                    f"{problem}")
        role = key_roles.get(name)
        if role is not None:
            check_key_value(name, av, role, entity=entity, key=key)
            continue
        found = value_problem(av)
        if found is not None:
            path, reason = found
            raise InvalidValueError(f"{_where(entity, key, name, path)}: {reason}")


def check_item(item: Item, *, entity: str, key: Mapping[str, Any],
               key_roles: Mapping[str, str], key_item: Item | None = None) -> int:
    """Check a whole item (its size, then ``key_item``'s values, then the item's, with
    :func:`check_values`); returns its size.

    One pass answers the common attributes (an ASCII string, or a plain integer of at
    most :data:`MAX_DIGITS` digits, under an ASCII name; keys within their limits); only
    the others are walked."""
    size = plain_item_size(item, key_roles)
    if size >= 0:  # nothing in it to refuse but its size
        check_size(size, entity=entity, key=key)
        if key_item is not None:
            check_values(key_item.items(), entity=entity, key=key, key_roles=key_roles)
        return size
    size = 0
    rest: list[tuple[str, AttributeValue]] = []
    for name, av in item.items():
        text = av.get("S") if len(av) == 1 else None
        if (type(text) is str and type(name) is str and name and name.isascii()
                and text.isascii()):
            size += len(name) + len(text)
            role = key_roles.get(name)
            if role is None or 0 < len(text) <= (
                    MAX_PARTITION_KEY_BYTES if role == "partition" else MAX_SORT_KEY_BYTES):
                continue
        elif (text is None and len(av) == 1 and type(number := av.get("N")) is str
              and 0 < len(number) <= MAX_DIGITS and number.isdigit() and number.isascii()
              and type(name) is str and name and name.isascii() and name not in key_roles):
            size += len(name) + _integer_size(number)
            continue
        elif (text is None and len(av) == 1 and type(members := av.get("L")) is list
              and type(name) is str and name and name.isascii() and name not in key_roles
              and (strings := _ascii_strings(members)) >= 0):
            size += len(name) + 3 + len(members) + strings  # value_size's rule for a list
            continue
        else:
            # (a malformed value has no size: check_values refuses it below)
            with contextlib.suppress(AttributeError, TypeError, ValueError):
                size += (_text_size(name) if type(name) is str else 0) + value_size(av)
        rest.append((name, av))
    check_size(size, entity=entity, key=key)
    if key_item is not None:  # the primary key (a key problem is reported as such first)
        check_values(key_item.items(), entity=entity, key=key, key_roles=key_roles)
    if rest:
        check_values(rest, entity=entity, key=key, key_roles=key_roles)
    return size


def _ascii_strings(members: list[Any]) -> int:
    """The bytes of a list's members when every one is an ASCII string (``{"S": ...}``:
    nothing in it to refuse, tags and the like), else -1 (it is walked)."""
    try:
        joined = "".join([m["S"] for m in members])
    except (KeyError, TypeError):  # a member not a string, or not an AttributeValue
        return -1
    if not joined.isascii() or sum(map(len, members)) != len(members):  # one entry each
        return -1
    return len(joined)


def check_size(size: int, *, entity: str, key: Mapping[str, Any], what: str = "item") -> int:
    """``size`` if an item of that many bytes fits, else :class:`ItemTooLargeError`."""
    if size > MAX_ITEM_BYTES:
        raise ItemTooLargeError(f"{entity} {describe_key(key)}: {what} of {size} bytes exceeds "
                                f"DynamoDB's {MAX_ITEM_BYTES} byte item limit")
    return size

