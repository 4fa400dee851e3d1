"""Evaluating a condition tree against a stored item, in Python (pure).

When one action carries both the caller's condition and dynaorm's own, DynamoDB only says
"the condition failed" and returns the stored item (``ALL_OLD``); evaluating the caller's
condition on that item tells which of the two failed. The semantics follow DynamoDB's
condition expressions: comparisons only between values of the same type (else false),
``attribute_exists``/``attribute_not_exists``, ``begins_with``, ``contains``, ``size`` is
not supported by :class:`~dynaorm.F` and so never needed here.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from dynaorm._types import AttributeValue, Item
from dynaorm.model.codec import encode_value
from dynaorm.model.expressions import Condition, _Bool, _Not, _Raw, _Test

__all__ = ["holds"]


def holds(cond: Condition, item: Item | None) -> bool:
    """Whether ``cond`` is true on the stored ``item`` (``None``: no item)."""
    return _eval(cond, item or {})


def _path(item: Item, path: str) -> AttributeValue | None:
    current: AttributeValue | None = None
    scope: Any = item
    for segment in path.split("."):
        if not isinstance(scope, dict) or segment not in scope:
            return None
        current = scope[segment]
        assert current is not None
        scope = current.get("M")
    return current


def _av(value: Any) -> AttributeValue:
    return value.av if isinstance(value, _Raw) else encode_value(value)


def _key(av: AttributeValue) -> tuple[str, Any] | None:
    """A comparable form of a scalar (N, S, B), else None (not orderable)."""
    (tag, raw), = av.items()
    if tag == "N":
        return tag, Decimal(raw)
    if tag in ("S", "B"):
        return tag, raw
    return None


def _equal(a: AttributeValue, b: AttributeValue) -> bool:
    ka, kb = _key(a), _key(b)
    if ka is not None and kb is not None:
        return ka == kb
    (ta, ra), = a.items()
    (tb, rb), = b.items()
    if ta != tb:
        return False
    if ta in ("SS", "NS", "BS"):
        return {_key({ta[0]: x}) for x in ra} == {_key({tb[0]: x}) for x in rb}
    return bool(ra == rb)


_ORDER = {"<": lambda a, b: a < b, "<=": lambda a, b: a <= b,
          ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def _compare(stored: AttributeValue | None, op: str, value: AttributeValue) -> bool:
    if stored is None:  # a missing attribute equals nothing, so it differs from anything
        return op == "<>"
    if op == "=":
        return _equal(stored, value)
    if op == "<>":
        return not _equal(stored, value)
    ks, kv = _key(stored), _key(value)
    if ks is None or kv is None or ks[0] != kv[0]:
        return False
    return bool(_ORDER[op](ks[1], kv[1]))


def _contains(stored: AttributeValue, value: AttributeValue) -> bool:
    (tag, raw), = stored.items()
    if tag == "S":
        return "S" in value and value["S"] in raw
    if tag in ("SS", "NS", "BS"):
        k = _key(value)
        return k is not None and k in {_key({tag[0]: x}) for x in raw}
    if tag == "L":
        return any(_equal(x, value) for x in raw)
    return False


def _eval(cond: Condition, item: Item) -> bool:
    if isinstance(cond, _Bool):
        parts = (_eval(p, item) for p in cond.parts)
        return all(parts) if cond.op == "AND" else any(parts)
    if isinstance(cond, _Not):
        return not _eval(cond.inner, item)
    if not isinstance(cond, _Test):
        raise TypeError(f"cannot evaluate condition {cond!r}")
    op, stored, args = cond.op, _path(item, cond.path), cond.args
    if op == "BETWEEN":
        return _compare(stored, ">=", _av(args[0])) and _compare(stored, "<=", _av(args[1]))
    if op == "IN":
        return any(_compare(stored, "=", _av(v)) for v in args)
    if op in ("attribute_exists", "attribute_not_exists"):
        return (stored is None) is (op == "attribute_not_exists")
    if op == "begins_with":
        arg = _av(args[0])
        return stored is not None and "S" in stored and "S" in arg and str(
            stored["S"]).startswith(arg["S"])
    if op == "contains":
        return stored is not None and _contains(stored, _av(args[0]))
    return _compare(stored, op, _av(args[0]))
