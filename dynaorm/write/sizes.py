"""DynamoDB's size rules and limits, on rendered AttributeValues (pure).

How many bytes DynamoDB counts for a value, an item and the item an update makes of a
known one, measured on DynamoDB Local (the reference engine), and the limits
:mod:`dynaorm.write.limits` checks with them. Sizing is kept apart from the refusals so that
the write path can size the common item (plain strings and integers) in one pass.
All walks are iterative: no input, however deep, raises ``RecursionError`` here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from decimal import Context, Decimal, InvalidOperation
from typing import Any, Final

from dynaorm._types import AttributeValue, Item

__all__ = [
    "MAX_DIGITS",
    "MAX_ITEM_BYTES",
    "MAX_NESTING",
    "MAX_PARTITION_KEY_BYTES",
    "MAX_SORT_KEY_BYTES",
    "common_values",
    "item_size",
    "number_size",
    "plain_item_size",
    "updated_item",
    "value_size",
]

#: Bytes of a partition key value (table or index), at most.
MAX_PARTITION_KEY_BYTES: Final = 2048
#: Bytes of a sort key value (table or index; guard keys too), at most.
MAX_SORT_KEY_BYTES: Final = 1024
#: Maps or lists inside one attribute value, nested, at most (a 32nd level is refused).
MAX_NESTING: Final = 31
#: Significant digits of a number, at most.
MAX_DIGITS: Final = 38
#: Bytes of an item, at most.
MAX_ITEM_BYTES: Final = 400 * 1024
_EXACT: Final = Context(prec=400, Emax=999_999, Emin=-999_999)


def _parse_number(text: Any) -> Decimal | None:
    if not isinstance(text, str) or not text or text.strip() != text:
        return None
    try:
        number = Decimal(text)
    except (InvalidOperation, ValueError):
        return None
    return number if number.is_finite() else None


def number_size(text: str) -> int:
    """DynamoDB's size of a number: one byte per pair of digits (pairs aligned on the
    decimal point, leading and trailing zero pairs dropped), one more, one for a sign."""
    if type(text) is str and text.isdigit() and text.isascii():
        return _integer_size(text)
    number = _parse_number(text)
    if number is None or number.is_zero():
        return 2 if number is not None else len(text)
    sign, digits, exponent = number.normalize(_EXACT).as_tuple()
    assert isinstance(exponent, int)
    top = exponent + len(digits) - 1
    return top // 2 - exponent // 2 + 2 + sign


def _integer_size(digits: str) -> int:
    """:func:`number_size` of a plain non-negative integer (ASCII digits only), without
    parsing it: the same arithmetic on its significant digits."""
    significant = digits.lstrip("0")
    if not significant:
        return 2  # zero
    stripped = significant.rstrip("0")
    exponent = len(significant) - len(stripped)  # trailing zeros: the normalized exponent
    top = exponent + len(stripped) - 1
    return top // 2 - exponent // 2 + 2


def common_values(values: Iterable[tuple[str, AttributeValue]], key_roles: Mapping[str, str],
                  *, named: bool = True) -> tuple[int, list[tuple[str, AttributeValue]]]:
    """One pass over ``(attribute name, value)`` pairs: the size of the common ones (an
    ASCII string, or a plain integer of at most :data:`MAX_DIGITS` digits, under an ASCII
    name that is not a key attribute: nothing in them DynamoDB could refuse), their names'
    too when ``named``, and the others, in order, for :func:`check_values` and sizing."""
    size = 0
    rest: list[tuple[str, AttributeValue]] = []
    for name, av in values:
        if type(name) is str and name and name.isascii() and name not in key_roles and (
                type(av) is dict and len(av) == 1):
            text = av.get("S")
            if type(text) is str:
                if text.isascii():
                    size += len(name) + len(text) if named else len(text)
                    continue
            else:
                text = av.get("N")
                if (type(text) is str and 0 < len(text) <= MAX_DIGITS and text.isdigit()
                        and text.isascii()):
                    size += len(name) + _integer_size(text) if named else _integer_size(text)
                    continue
        rest.append((name, av))
    return size, rest


def _text_size(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def value_size(av: AttributeValue) -> int:
    """DynamoDB's size of one AttributeValue in bytes (iterative; measured on DynamoDB
    Local: strings and binaries their length, numbers :func:`number_size`, booleans and
    nulls 1, sets the sum of their members, maps and lists 3 plus 1 per member plus
    their members, and a map its key names)."""
    total = 0
    stack: list[AttributeValue] = [av]
    while stack:
        (tag, raw), = stack.pop().items()
        if tag == "S":
            total += _text_size(raw)
        elif tag == "N":
            total += number_size(raw)
        elif tag == "B":
            total += len(raw)
        elif tag in ("BOOL", "NULL"):
            total += 1
        elif tag == "SS":
            total += sum(_text_size(s) for s in raw)
        elif tag == "NS":
            total += sum(number_size(n) for n in raw)
        elif tag == "BS":
            total += sum(len(b) for b in raw)
        elif tag == "L":
            total += 3 + len(raw)
            stack.extend(raw)
        else:
            total += 3 + sum(_text_size(k) + 1 for k in raw)
            stack.extend(raw.values())
    return total


def item_size(item: Item) -> int:
    """DynamoDB's size of an item: attribute names plus values."""
    total = 0
    for name, value in item.items():
        text = value.get("S")
        if type(text) is str and text.isascii() and name.isascii():  # one byte a character
            total += len(name) + len(text)
            continue
        if text is None and len(value) == 1 and name.isascii():
            number = value.get("N")
            if type(number) is str and number.isdigit() and number.isascii():
                total += len(name) + _integer_size(number)  # a plain integer, unparsed
                continue
        total += _text_size(name)
        total += value_size(value) if text is None else _text_size(text)
    return total


def plain_item_size(item: Item, key_roles: Mapping[str, str]) -> int:
    """The size of an item made only of ASCII strings under non-empty ASCII names, keys
    within their limits (the common item, checked whole: joined strings, no loop in
    Python); -1 for any other item."""
    try:
        values = [av["S"] for av in item.values()]
        texts = "".join(values)
        names = "".join(item)
    except (KeyError, TypeError):  # a value not a string, or not an AttributeValue
        return -1
    if (not texts.isascii() or not names.isascii() or "" in item
            or sum(map(len, item.values())) != len(item)):  # (each value: one entry)
        return -1
    if len(texts) <= MAX_SORT_KEY_BYTES and "" not in values:
        return len(names) + len(texts)  # no key value can be empty or too long
    for attr, role in key_roles.items():
        av = item.get(attr)
        if av is not None and not 0 < len(av["S"]) <= (
                MAX_PARTITION_KEY_BYTES if role == "partition" else MAX_SORT_KEY_BYTES):
            return -1
    return len(names) + len(texts)


def _add(old: AttributeValue | None, av: AttributeValue) -> AttributeValue:
    if old is None:
        return av
    if "N" in av and "N" in old:
        total = _EXACT.add(Decimal(old["N"]), Decimal(av["N"]))
        return {"N": str(total)}
    (tag, members), = av.items()
    if tag in old:
        merged = list(old[tag]) + [m for m in members if m not in old[tag]]
        return {tag: merged}
    return av


def updated_item(known: Item, set_: Mapping[str, AttributeValue], remove: Sequence[str],
                 clauses: Sequence[tuple[str, str, AttributeValue | None]]) -> Item:
    """The item an update makes of the stored item ``known`` (``SET``/``REMOVE``, or
    ``s.update()`` clauses: ``SET``, ``DEFAULT``, ``APPEND``, ``PREPEND``, ``ADD``,
    ``DELETE``, ``REMOVE``), for checking its size before sending."""
    out = dict(known)
    for name in remove:
        out.pop(name, None)
    out.update(set_)
    for kind, name, av in clauses:
        old = out.get(name)
        if kind == "REMOVE" or av is None:
            out.pop(name, None)
        elif kind == "SET" or (kind == "DEFAULT" and old is None):
            out[name] = av
        elif kind in ("APPEND", "PREPEND"):
            before = list(old["L"]) if old and "L" in old else []
            after = list(av.get("L", []))
            out[name] = {"L": before + after if kind == "APPEND" else after + before}
        elif kind == "ADD":
            out[name] = _add(old, av)
        elif kind == "DELETE" and old is not None:
            (tag, members), = av.items()
            left = [m for m in old.get(tag, []) if m not in members]
            if left:
                out[name] = {tag: left}
            else:
                out.pop(name, None)
    return out
