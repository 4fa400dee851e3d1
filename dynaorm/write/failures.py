"""Mapping a failed write to the typed error the caller should see.

DynamoDB reports one cancellation reason per action, in request order; the plan keeps the
session's own order, so reason ``i`` is explained by ``plan.ops[i].origin``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.errors import (
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    ItemExistsError,
    ItemNotFoundError,
    TransactionConflictError,
    UniqueConstraintError,
)
from dynaorm.model.entity import spec_of
from dynaorm.model.evaluate import holds
from dynaorm.transport.retry import Reason
from dynaorm.transport.sync import RequestFailed
from dynaorm.write.records import Fail, Op
from dynaorm.write.render import WritePlan

__all__ = ["map_failure"]

_CONDITION_CODES = {"ConditionalCheckFailed", "ConditionalCheckFailedException"}


def map_failure(plan: WritePlan, exc: RequestFailed,
                is_stored: Callable[[PlainKey], bool]) -> DynaormError:
    """The typed error for a failed commit of ``plan``.

    ``is_stored`` reads one key (consistently); it separates "item gone" from "item changed"
    for conditions that cover both.
    """
    if len(plan.ops) == 1 and exc.code == "ConditionalCheckFailedException":
        reasons: list[Reason | None] = [Reason("ConditionalCheckFailed", exc.message,
                                               exc.item)]
    else:
        reasons = exc.reasons
    failed = [(plan.ops[i], r) for i, r in enumerate(reasons[:len(plan.ops)])
              if r is not None and r.code in _CONDITION_CODES]
    if failed:
        return _condition_error(failed, is_stored)
    codes = [r.code for r in reasons if r is not None]
    if "TransactionConflict" in codes or exc.code == "TransactionConflictException":
        first = plan.ops[0].origin
        return TransactionConflictError(
            f"commit of {first.entity.__name__} {first.owner_key} (and {len(plan.ops) - 1} "
            f"more actions) on table {plan.table!r} kept conflicting with concurrent "
            f"transactions after retries: {exc.message}")
    return exc  # no typed error says more: the RequestError itself (operation, code)


def _caller_failed(op: Op, reason: Reason) -> bool:
    """Whether the caller's own condition is what failed on this action: the returned
    stored item decides when dynaorm's condition is on the same action."""
    o = op.origin
    if o.fail is Fail.CALLER:
        return True
    return o.caller is not None and reason.item is not None and not holds(o.caller,
                                                                          reason.item)


def _stored_entity(entity: type[Any], item: Item | None) -> Any:
    """The stored item as an entity (``None``: no item, or not this entity's)."""
    if item is None:
        return None
    try:
        spec = spec_of(entity)
        return entity._from_item(item, spec) if spec.owns(item) else None
    except Exception:  # an item that does not validate any more: report it raw
        return None


def _condition_error(failed: list[tuple[Op, Reason]],
                     is_stored: Callable[[PlainKey], bool]) -> DynaormError:
    if _caller_failed(*failed[0]):
        failures: list[tuple[type[Any] | None, dict[str, Any] | None, Any]] = [
                    (op.origin.entity, op.origin.owner_key,
                     _stored_entity(op.origin.entity, r.item))
                    for op, r in failed if _caller_failed(op, r)]
        entity, key, item = failures[0]
        assert entity is not None
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        return ConditionFailedError(
            f"{entity.__name__} {key}: the condition given did not hold{more}",
            entity=entity, key=key, item=item, failures=failures)
    failed = [(op, r) for op, r in failed if not _caller_failed(op, r)]
    for op, _ in failed:
        o = op.origin
        if o.fail is Fail.EXISTS:
            return ItemExistsError(
                f"{o.entity.__name__} {op.key} already exists (save with overwrite=True "
                "to replace it)", entity=o.entity, key=op.key)
    uniques = [op.origin for op, _ in failed if op.origin.fail is Fail.UNIQUE]
    if uniques:
        return UniqueConstraintError(uniques[0].entity,
                                     [(o.field or "?", o.value) for o in uniques],
                                     key=uniques[0].owner_key)
    op = failed[0][0]
    o = op.origin
    if o.fail is Fail.GONE and not is_stored(op.key):
        return ItemNotFoundError(f"{o.entity.__name__} {op.key} no longer exists",
                                 entity=o.entity, key=op.key)
    return ConcurrentModificationError(
        f"{o.entity.__name__} {o.owner_key}: the stored {o.role.value} was changed by another "
        "writer since it was read; reload and retry", entity=o.entity, key=o.owner_key)
