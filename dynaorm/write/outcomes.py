"""Honest outcomes of writes whose attempts may have been applied. Pure: no I/O.

When an attempt of a write may have been applied (a timeout or a dropped connection after
sending, a 5xx) and a later attempt then fails, the failure alone does not say what is
stored. :func:`resolve` decides from the failed request's own evidence:

- the retried condition failed, and every failed action's stored item (returned with the
  failure, ``ReturnValuesOnConditionCheckFailure=ALL_OLD``) is what this commit wrote:
  the earlier attempt was applied, so the commit succeeded (:data:`APPLIED`);
- the retried condition failed on a state this commit did not write: a definite failure,
  mapped as usual (``None``);
- anything else (attempts ran out on throttling, 5xx or timeouts after an attempt that may
  have applied): :class:`~dynaorm.OutcomeUnknownError` naming the items and why.

"What this commit wrote" is: for a put, the same item; for a delete, no item; for an
update, every attribute it sets holds the value set and every attribute it removes is
absent. A condition check writes nothing, so its failure is never explained by this commit.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal, InvalidOperation
from typing import Any, Final

from dynaorm._types import Item
from dynaorm.errors import OutcomeUnknownError, RequestError
from dynaorm.write.records import Delete, Op, Put, Update
from dynaorm.write.render import WritePlan

__all__ = ["APPLIED", "resolve", "unknown_batch", "written_by"]

#: :func:`resolve`'s answer when the write is known to have been applied
APPLIED: Final = "applied"

_CONDITION = frozenset({"ConditionalCheckFailed", "ConditionalCheckFailedException"})
_UPDATE_FIELDS = frozenset({"key", "set", "remove", "condition", "origin", "known", "known_size"})


def resolve(plan: WritePlan, exc: RequestError) -> str | OutcomeUnknownError | None:
    """:data:`APPLIED`, an :class:`OutcomeUnknownError`, or ``None`` (the failure is
    definite: map it as usual) for a failed send of ``plan``."""
    if not exc.maybe_applied or exc.code == "ResourceNotFoundException":
        return None
    failed = _condition_failures(plan, exc)
    if failed is None:
        return unknown(plan, exc)
    if failed and all(written_by(op, item) for op, item in failed):
        return APPLIED
    return None


def unknown(plan: WritePlan, exc: RequestError) -> OutcomeUnknownError:
    """The error for a write of ``plan`` whose outcome cannot be known."""
    first = plan.ops[0]
    more = f" and {len(plan.ops) - 1} more item(s)" if len(plan.ops) > 1 else ""
    operation = exc.operation
    return OutcomeUnknownError(
        f"{operation} of {first.origin.entity.__name__} {first.key}{more} on table "
        f"{plan.table!r}: outcome unknown: an attempt may have been applied (its answer was "
        f"lost or was a server error), and after {exc.attempts} attempt(s) the last failed "
        f"with {exc.code}: {exc.message}; read the items to see what is stored",
        operation=operation, keys=[dict(op.key) for op in plan.ops])


def unknown_batch(exc: RequestError, pending: dict[str, Any],
                  key_attributes: tuple[str, str | None]) -> OutcomeUnknownError:
    """The error for a BatchWriteItem round that may have been applied and then failed for
    good: ``pending`` is the round's ``RequestItems``."""
    keys: list[dict[str, Any]] = []
    for entries in pending.values():
        for entry in entries:
            body = entry.get("PutRequest", {}).get("Item") or entry.get(
                "DeleteRequest", {}).get("Key", {})
            keys.append({a: next(iter(body[a].values())) for a in key_attributes
                         if a is not None and a in body})
    return OutcomeUnknownError(
        f"{exc.operation} of {len(keys)} item(s) on table(s) {sorted(pending)}: outcome "
        f"unknown: an attempt may have been applied, and after {exc.attempts} attempt(s) "
        f"the last failed with {exc.code}: {exc.message}; read the items to see what is "
        "stored", operation=exc.operation, keys=keys)


def _condition_failures(plan: WritePlan, exc: RequestError
                        ) -> list[tuple[Op, Item | None]] | None:
    """(action, stored item) for every action whose condition failed, or ``None`` when
    the failure was not (only) failed conditions."""
    if len(plan.ops) == 1 and exc.code == "ConditionalCheckFailedException":
        return [(plan.ops[0], exc.item)]
    if exc.code != "TransactionCanceledException" or not exc.reasons:
        return None
    failed: list[tuple[Op, Item | None]] = []
    for op, reason in zip(plan.ops, exc.reasons, strict=False):
        if reason is None:
            continue
        if reason.code not in _CONDITION:
            return None
        failed.append((op, reason.item))
    return failed


def written_by(op: Op, stored: Item | None) -> bool:
    """Whether ``stored`` (an item in wire form, or ``None``) is what ``op`` writes."""
    if isinstance(op, Put):
        return stored is not None and same_item(stored, op.item)
    if isinstance(op, Delete):
        return stored is None
    if isinstance(op, Update):
        if stored is None or _other_update_parts(op):
            return False
        return (all(k in stored and same_value(stored[k], v) for k, v in op.set.items())
                and not any(k in stored for k in op.remove))
    return False


def _other_update_parts(op: Update) -> bool:
    """An update that does more than SET values and REMOVE attributes (counters, list
    appends): its result cannot be told from the stored item, so it is never 'written'."""
    return any(getattr(op, f.name) for f in dataclasses.fields(op)
               if f.name not in _UPDATE_FIELDS)


def same_item(a: Item, b: Item) -> bool:
    """Two items in wire form hold the same values (numbers compared as numbers)."""
    return a.keys() == b.keys() and all(same_value(a[k], b[k]) for k in a)


def same_value(a: Any, b: Any) -> bool:
    """Two AttributeValues are equal as DynamoDB stores them."""
    if not isinstance(a, dict) or not isinstance(b, dict) or len(a) != 1 or len(b) != 1:
        return bool(a == b)
    (ta, va), = a.items()
    (tb, vb), = b.items()
    if ta != tb:
        return False
    if ta == "N":
        return _number(va) == _number(vb)
    if ta == "NS":
        return {_number(v) for v in va} == {_number(v) for v in vb}
    if ta == "SS":
        return set(va) == set(vb)
    if ta == "BS":
        return {_bytes(v) for v in va} == {_bytes(v) for v in vb}
    if ta == "B":
        return _bytes(va) == _bytes(vb)
    if ta == "L":
        return len(va) == len(vb) and all(same_value(x, y) for x, y in zip(va, vb, strict=True))
    if ta == "M":
        return same_item(va, vb)
    return bool(va == vb)


def _bytes(value: Any) -> bytes:
    return value.encode() if isinstance(value, str) else bytes(value)


def _number(text: Any) -> Decimal | str:
    try:
        return Decimal(str(text)).normalize()
    except InvalidOperation:
        return str(text)
