"""Typed key values: number (``N``) and binary (``B``) key attributes (contract 14).

Rendered keys travel through dynaorm as plain strings (``PlainKey``). A key attribute
declared ``N`` renders to a :class:`NumberKey` and one declared ``B`` to a
:class:`BinaryKey`: both are ``str`` subclasses, so every place that compares, hashes or
logs keys keeps working, and :func:`key_av` gives each its wire form.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from dynaorm._types import AttributeValue
from dynaorm.errors import DynaormError, KeyTemplateError

#: what the partition key of every row a table keeps for itself or for a surface begins with
#: (a receipt's ``dynaorm:receipt#...``, any row kind's: ``dynaorm.RowKind``): no entity's
#: key may (refused when rendered)
OWN_PREFIX = "dynaorm:"
#: the type of a unique guard row (``dynaorm.schema.rules.unique`` writes them; here, on
#: the floor below the schema, so that what names dynaorm's own types imports no rule)
GUARD_TYPE = OWN_PREFIX + "unique"
#: the type of an idempotent commit's receipt row (``dynaorm.schema.rules.receipts``'s)
RECEIPT_TYPE = OWN_PREFIX + "receipt"


def named(item: Mapping[str, Any], type_attr: str | None) -> str | None:
    """The type name ``item`` stores under ``type_attr`` (``None``: none, no type
    attribute, or a value no string attribute is: a bare string, as a get has it)."""
    value = item.get(type_attr or "")
    name = value.get("S") if isinstance(value, dict) else None
    return name if isinstance(name, str) else None


class NumberKey(str):
    """The rendered value of a number (``N``) key attribute, in DynamoDB's decimal text."""

    __slots__ = ()

    @property
    def number(self) -> Decimal:
        """The value as a :class:`~decimal.Decimal` (for ordering)."""
        return Decimal(str(self))


class BinaryKey(str):
    """The rendered value of a binary (``B``) key attribute; ``raw`` holds the bytes.

    Its text is ``repr(bytes)``, the same identity that batch reads give a binary key.
    """

    raw: bytes

    def __new__(cls, raw: bytes) -> BinaryKey:
        """A binary key of ``raw``."""
        obj = super().__new__(cls, str(bytes(raw)))
        obj.raw = bytes(raw)
        return obj


def key_av(value: str) -> AttributeValue:
    """The AttributeValue of one rendered key value."""
    if isinstance(value, NumberKey):
        return {"N": str.__str__(value)}
    if isinstance(value, BinaryKey):
        return {"B": value.raw}
    return {"S": value}


def key_value(av: AttributeValue) -> str:
    """Inverse of :func:`key_av`: a stored key attribute as a rendered key value."""
    if "S" in av:
        text: str = av["S"]
        return text
    if "N" in av:
        return NumberKey(av["N"])
    if "B" in av:
        return BinaryKey(av["B"])
    raise DynaormError(f"a key attribute holds {av!r}, not a string, number or binary")


def wire_key(key: Mapping[str, str]) -> dict[str, AttributeValue]:
    """A rendered key (attribute -> value) in wire form."""
    # a plain str (the common key value; NumberKey and BinaryKey are str subclasses) is
    # answered inline, key_av's last case
    return {k: {"S": v} if type(v) is str else key_av(v) for k, v in key.items()}


def key_id(key: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """A hashable identity of a key, the same whether given rendered or in wire form
    (so keys a request was built from find the items a response returns)."""
    return tuple(sorted((k, key_value(v) if isinstance(v, dict) else v)
                        for k, v in key.items()))


def key_order(value: str) -> Any:
    """A sort key for rendered key values of one attribute (numbers by value)."""
    if isinstance(value, NumberKey):
        return (0, value.number, "")
    if isinstance(value, BinaryKey):
        return (0, 0, value.raw)
    return (1, 0, value)


def number_key(value: Any, owner: str, field: str) -> NumberKey:
    """A field value (int, Decimal, or a numeric string) as a number key."""
    if isinstance(value, bool):
        raise KeyTemplateError(f"{owner}: field {field!r} value {value!r} is not a number key",
                               field=field)
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        raise KeyTemplateError(f"{owner}: field {field!r} value {value!r} is not a number "
                           "and cannot be a number key", field=field) from None
    if not number.is_finite():
        raise KeyTemplateError(f"{owner}: field {field!r} value {value!r} is not finite",
                               field=field)
    return NumberKey(str(number))
