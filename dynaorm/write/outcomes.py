"""What a failed write means: the typed error the caller should see, or, for a write whose
attempts may have been applied, whether it was (pure: reads it needs are asked for as
protocol steps, see :func:`failure`).

DynamoDB reports one cancellation reason per action, in request order; the plan keeps the
session's own order, so reason ``i`` is explained by ``plan.ops[i].origin``
(:func:`map_failure`).

When an attempt of a write may have been applied (a timeout or a dropped connection after
sending, a 5xx), the failure alone does not say what is stored, and neither do equal
values (another writer may have made the same change), absence (another may have deleted
what this write inserted) or presence (another may have put back what it deleted). What
proves an outcome is the revision (:mod:`~dynaorm.schema.rules.revision`): every request
stamps a fresh random one on the rows it puts or updates, so a row holding this request's
revision was written by it (and once: nothing is resent unless proved unapplied), and a row
still holding the revision its object was loaded with was not (a revision never recurs).

- a single-item write (``PutItem``, ``UpdateItem``, ``DeleteItem``) carries no idempotency
  token. After a 5xx, a consistent read (the step's probe) that finds the loaded revision
  proves it unapplied: it is resent (:func:`unapplied_by`). Otherwise it is never resent;
  :func:`read_back` reports it applied when the row holds this write's revision, else
  :class:`~dynaorm.OutcomeUnknownError` (so a delete, which leaves nothing to hold a
  revision, or an insert whose row is gone, is unknown);
- a transaction carries its ``ClientRequestToken`` on every attempt, and DynamoDB applies a
  token at most once (10 minutes), answering a replay with success: it is resent, and
  :func:`resolve` decides from the failed request's own evidence: a failed condition whose
  stored item holds this commit's revision means an earlier attempt was applied
  (:data:`APPLIED`; engines that ignore tokens, like moto); any other failed condition is
  a definite failure (the token was never applied), mapped as usual (``None``); anything
  else (attempts ran out on throttling, 5xx or timeouts):
  :class:`~dynaorm.OutcomeUnknownError`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from dynaorm._types import Item, PlainKey
from dynaorm.errors import (
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    ItemExistsError,
    ItemGoneError,
    ItemNotFoundError,
    LeaseError,
    OutcomeUnknownError,
    RequestError,
    ThrottledError,
    TransactionConflictError,
    UniqueConstraintError,
)
from dynaorm.protocol.events import Reason
from dynaorm.protocol.policy import throttled
from dynaorm.schema.entity import spec_of
from dynaorm.schema.lease import Lease
from dynaorm.schema.rules import Explained
from dynaorm.schema.unclaimed import fix_hint, unclaimed_name
from dynaorm.values.expressions import broken_rules, holds
from dynaorm.values.records import Fail, Op, Role
from dynaorm.values.revision import revision_of
from dynaorm.values.ttl import expired
from dynaorm.write.records import Reading
from dynaorm.write.render import WritePlan, stamps

if TYPE_CHECKING:
    from dynaorm.schema.table import TableSchema

#: reads one key of a table consistently: the stored item or ``None``
Read = Callable[["TableSchema", PlainKey], Reading[Item | None]]

#: :func:`resolve`'s answer when the write is known to have been applied
APPLIED: Final = "applied"

_CONDITION = frozenset({"ConditionalCheckFailed", "ConditionalCheckFailedException"})


def failure(plan: WritePlan, exc: RequestError, read: Read, rev: str | None = None
            ) -> Reading[DynaormError | None]:
    """What the failed send of ``plan`` (stamped with revision ``rev``) means: ``None``
    when an attempt that may have been applied provably was (the write succeeded), else
    the error to raise: an :class:`~dynaorm.OutcomeUnknownError`, the typed error of a
    definite failure, or ``exc`` itself when no typed error says more."""
    if exc.maybe_applied and plan.single_item and exc.code != "ResourceNotFoundException":
        return (yield from read_back(plan, exc, read, rev))
    outcome = resolve(plan, exc, rev)
    if outcome == APPLIED:
        return None
    if isinstance(outcome, DynaormError):
        return outcome
    return (yield from map_failure(plan, exc, read))


def read_back(plan: WritePlan, exc: RequestError, read: Read, rev: str | None
              ) -> Reading[OutcomeUnknownError | None]:
    """After a single-item write's attempt that may have been applied (and was not
    resent): ``None`` when a consistent read shows the row holds this write's revision
    ``rev`` (it succeeded), else an :class:`~dynaorm.OutcomeUnknownError` saying what is
    stored."""
    op = plan.ops[0]
    try:
        stored = yield from read(op.origin.table, op.key)
    except RequestError as err:
        return unknown(plan, exc, f"reading the item back failed too ({err.code})")
    if rev is not None and stamps(op) and revision_of(op.origin.table, stored) == rev:
        return None
    return unknown(plan, exc, "no item is stored now" if stored is None else
                   "the item read back does not hold this write's revision")


def unapplied_by(table: TableSchema, stored: Item | None, loaded: str | None) -> bool:
    """Whether ``stored`` (read after a 5xx) proves a single-item write not applied, so
    that resending it is the retry every SDK makes: it still holds ``loaded``, the
    revision the written object was loaded with (applied, the write would have replaced
    it, and no revision recurs). Nothing else proves it: not absence, not equal values."""
    return loaded is not None and revision_of(table, stored) == loaded


def resolve(plan: WritePlan, exc: RequestError, rev: str | None = None
            ) -> str | OutcomeUnknownError | None:
    """:data:`APPLIED`, an :class:`OutcomeUnknownError`, or ``None`` (the failure is
    definite: map it as usual) for a failed send of ``plan`` stamped with ``rev``."""
    if not exc.maybe_applied or exc.code == "ResourceNotFoundException":
        return None
    failed = _condition_failures(plan, exc)
    if failed is None:
        return unknown(plan, exc)
    if rev is not None and any(stamps(op) and revision_of(op.origin.table, item) == rev
                               for op, item in failed):
        return APPLIED
    return None


def _names(plan: WritePlan) -> str:
    """The plan's table, or its tables: ``table 'app'``, ``tables 'app', 'audit'``."""
    names = plan.tables
    if len(names) == 1:
        return f"table {names[0]!r}"
    return "tables " + ", ".join(repr(n) for n in names)


def unknown(plan: WritePlan, exc: RequestError, seen: str | None = None
            ) -> OutcomeUnknownError:
    """The error for a write of ``plan`` whose outcome cannot be known (``seen``: what a
    read back found)."""
    first = plan.ops[0]
    more = f" and {len(plan.ops) - 1} more item(s)" if len(plan.ops) > 1 else ""
    operation = exc.operation
    found = f"; {seen}" if seen else ""
    return OutcomeUnknownError(
        f"{operation} of {first.origin.entity.__name__} {first.key}{more} on "
        f"{_names(plan)}: outcome unknown: an attempt may have been applied (its answer was "
        f"lost or was a server error), and after {exc.attempts} attempt(s) the last failed "
        f"with {exc.code}: {exc.message}{found}; read the items to see what is stored",
        operation=operation, keys=[dict(op.key) for op in plan.ops],
        tables=[op.origin.table.name for op in plan.ops])


def _condition_failures(plan: WritePlan, exc: RequestError
                        ) -> list[tuple[Op, Item | None]] | None:
    """(action, stored item) for every action whose condition failed, or ``None`` when
    the failure was not (only) failed conditions."""
    reasons = _reasons(plan, exc)
    if exc.code not in ("ConditionalCheckFailedException", "TransactionCanceledException"
                        ) or not reasons:
        return None
    failed = [(op, r) for op, r in zip(plan.ops, reasons, strict=False) if r is not None]
    if any(r.code not in _CONDITION for _, r in failed):
        return None
    return [(op, r.item) for op, r in failed]


def _reasons(plan: WritePlan, exc: RequestError) -> list[Reason | None]:
    """The cancellation reasons of ``exc`` (a single write's failed condition as one; a
    throttle's reasons are not cancellations)."""
    if len(plan.ops) == 1 and exc.code == "ConditionalCheckFailedException":
        return [Reason("ConditionalCheckFailed", exc.message, exc.item)]
    return [] if isinstance(exc, ThrottledError) else exc.reasons


def map_failure(plan: WritePlan, exc: RequestError, read: Read) -> Reading[DynaormError]:
    """The typed error for a definite failure of ``plan``'s request (a protocol: ``read``
    reads one key consistently, to tell "item gone" from "item changed" for conditions
    that cover both)."""
    reasons = _reasons(plan, exc)
    failed = [(op, r) for op, r in zip(plan.ops, reasons, strict=False)
              if r is not None and r.code in _CONDITION]
    if failed:
        return (yield from _condition_error(failed, read))
    codes = [r.code for r in reasons if r is not None]
    if "TransactionConflict" in codes or exc.code == "TransactionConflictException":
        first = plan.ops[0].origin
        return TransactionConflictError(
            f"commit of {first.entity.__name__} {first.owner_key} (and {len(plan.ops) - 1} "
            f"more actions) on {_names(plan)} kept conflicting with concurrent "
            f"transactions after retries: {exc.message}")
    if throttled(exc) and not isinstance(exc, ThrottledError):  # (every action throttled)
        err = ThrottledError(exc.operation, exc.code, exc.message)
        err.args, err.attempts, err.request_id = exc.args, exc.attempts, exc.request_id
        return err
    return exc  # no typed error says more: the RequestError itself (operation, code)


def _caller_failed(op: Op, reason: Reason) -> bool:
    """Whether the caller's own condition is what failed on this action: the returned
    stored item decides when dynaorm's condition is on the same action."""
    o = op.origin
    if o.fail is Fail.CALLER:
        return True
    if o.caller is None:
        return False
    if reason.item is None:  # (every condition asks for the stored item: none is stored,
        return o.fail is Fail.EXISTS  # so an insert's "not there yet" held)
    return not holds(o.caller, reason.item)


def _stored_entity(entity: type[Any], item: Item | None) -> Any:
    """The stored item as an entity (``None``: no item, or not this entity's)."""
    if item is None:
        return None
    try:
        spec = spec_of(entity)
        before = spec.rules.before  # (the previous layout; a stand-in stores no row)
        if before.stores(spec, item):  # a row in Meta.previous's layout (a move's)
            return spec.cls.model_validate(before.values(spec, item))
        return entity._from_item(item, spec) if spec.owns(item) else None
    except Exception:  # an item that does not validate any more: report it raw
        return None


def _exists_hint(entity: type[Any], item: Item | None) -> str:
    """How to go on after an insert found an item at its key: replace it; when the
    stored item is the entity in its previous layout, move it first (an overwrite would
    write the current row beside it: the entity stored twice); or, when the stored item's
    type name no class claims (a renamed class), restore that name."""
    spec = spec_of(entity)
    if spec.rules.before.stores(spec, item):
        return ("stored in Meta.previous's layout: get it and save it, which moves it, or "
                "run `dynaorm migrate`; overwrite=True would leave that row beside the new one")
    name = None if item is None else unclaimed_name(spec.table, item)
    if name is None:
        return "save with overwrite=True to replace it"
    return f"stored with type name {name!r}, which no class claims: {fix_hint(name)}"


def _explained(op: Op, reason: Reason, stored: Item | None) -> Explained:
    """What the failed condition of ``op`` means, as the rule that added its row says
    (``stored``: the row the failure returned, or one read since)."""
    origin = op.origin
    return spec_of(origin.entity).rules.explain(origin, reason.code, stored)


def _caller_error(failed: list[tuple[Op, Reason]]) -> ConditionFailedError:
    """The error of the caller's own conditions that failed (``failed``'s first did)."""
    failures: list[tuple[type[Any] | None, dict[str, Any] | None, Any]] = [
                (op.origin.entity, op.origin.owner_key,
                 _stored_entity(op.origin.entity, r.item))
                for op, r in failed if _caller_failed(op, r)]
    entity, key, item = failures[0]
    assert entity is not None
    more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
    if issubclass(entity, Lease):
        return LeaseError(f"{entity.__name__} {key}: {_lease_held(item)}{more}",
                          entity=entity, key=key, item=item, failures=failures)
    why = "; ".join(broken_rules(failed[0][0].origin.caller, failed[0][1].item))
    return ConditionFailedError(
        f"{entity.__name__} {key}: {why or 'the condition given did not hold'}{more}",
        entity=entity, key=key, item=item, failures=failures)


def _lease_held(stored: Any) -> str:
    """Who holds a lease a commit was refused for, as its stored row says."""
    if stored is None:
        return "no lease is stored (it was deleted, or never acquired)"
    until = datetime.fromtimestamp(stored.until / 1000, UTC).isoformat(timespec="seconds")
    return (f"the lease is held by {stored.holder!r} (epoch {stored.epoch}) " + (
        f"until {until}" if stored.until else "and released"))


def _exists_error(failed: list[tuple[Op, Reason]]) -> ItemExistsError | None:
    """The error of an insert that found an item at its key (``None``: none did)."""
    for op, r in failed:
        o = op.origin
        if o.fail is Fail.EXISTS:
            return ItemExistsError(
                f"{o.entity.__name__} {op.key} already exists ({_exists_hint(o.entity, r.item)})",
                entity=o.entity, key=op.key, item=_stored_entity(o.entity, r.item))
    return None


def _unique_error(failed: list[tuple[Op, Reason]], read: Read
                  ) -> Reading[UniqueConstraintError | None]:
    """The error of unique claims refused as taken (``None``: none was)."""
    # (a value refused because the guard names this very owner: another writer gave the
    # owner that value since it was loaded, a change of the row, not a taken value: the
    # rule whose row it is tells)
    uniques = [op.origin for op, r in failed if op.origin.fail is Fail.UNIQUE
               and _explained(op, r, r.item).fail is Fail.UNIQUE]
    if not uniques:
        return None
    stale = yield from held_by_expired(failed, read)
    return UniqueConstraintError(uniques[0].entity,  # (values as a message shows them)
                                 [(o.field or "?", spec_of(o.entity).rules.redact(
                                     o.field or "?", o.value)) for o in uniques],
                                 key=uniques[0].owner_key, hint=STALE_GUARD if stale else "")


def _prepare(entity: type[Any], item: Item) -> Reading[None]:
    """What the rules of ``entity`` read first to decode the stored ``item`` (values kept
    in S3 fetched), so that an error names the stored entity; one that cannot be read
    leaves it unsaid (``None``)."""
    rules = spec_of(entity).rules
    if rules.preparers:
        with contextlib.suppress(DynaormError):
            yield from rules.prepare((item,))


def _condition_error(failed: list[tuple[Op, Reason]], read: Read) -> Reading[DynaormError]:
    for op, r in failed:  # (the items the failure returned, as every error decodes them)
        if r.item is not None:
            yield from _prepare(op.origin.entity, r.item)
    if _caller_failed(*failed[0]):
        return _caller_error(failed)
    failed = [(op, r) for op, r in failed if not _caller_failed(op, r)]
    error = _exists_error(failed) or (yield from _unique_error(failed, read))
    return error or (yield from _gone_or_changed(failed, read))


def _gone_or_changed(failed: list[tuple[Op, Reason]], read: Read) -> Reading[DynaormError]:
    """The error of a failed dynaorm condition on the item itself: not found (by key),
    gone (planned on a read) or changed by another writer (with the stored entity)."""
    op = failed[0][0]
    o = op.origin
    if o.fail is Fail.MISSING:  # by key, never read: absent, maybe never stored
        return ItemNotFoundError(f"{o.entity.__name__} {op.key} does not exist",
                                 entity=o.entity, key=op.key)
    if o.fail is Fail.GONE and (yield from read(op.origin.table, op.key)) is None:
        return ItemGoneError(f"{o.entity.__name__} {op.key} no longer exists",
                             entity=o.entity, key=op.key)
    # the stored item as the failure returned it (the row or latest copy's action), else
    # read: a 412 answers with the current version without another request
    found = [r.item for f, r in failed if f.origin.role in (Role.ROW, Role.LATEST)
             and f.origin.entity is o.entity and f.key == o.owner_key and r.item is not None]
    item = found[0] if found else (yield from read(o.table, o.owner_key))
    if not found and item is not None:
        yield from _prepare(o.entity, item)
    return ConcurrentModificationError(
        f"{o.entity.__name__} {o.owner_key}: the stored {o.role.value} was changed by another "
        "writer since it was read; reload and retry", entity=o.entity, key=o.owner_key,
        item=_stored_entity(o.entity, item))


#: what a :class:`~dynaorm.UniqueConstraintError` adds when the guard that refused the
#: claim names an owner that has expired (or is gone): a guard without the owner's TTL
#: (written before 0.3, or by another tool) or with a stale one
STALE_GUARD = ("the guard's owner has expired or is gone, but the guard does not carry "
               "its TTL (written before dynaorm 0.3?): run `dynaorm check --repair` to "
               "release the value")


def held_by_expired(failed: Sequence[tuple[Op, Reason]], read: Read) -> Reading[bool]:
    """Whether a refused unique claim of ``failed`` (a table with a TTL attribute only)
    was refused by a guard whose owner has expired or is gone: the guard does not carry
    its owner's TTL (a guard that does would have let the claim through), so only
    ``dynaorm check --repair`` releases the value. A protocol: reads the guard when the
    cancellation reason did not return it, and its owner (consistent reads, only after
    a refused claim)."""
    for op, reason in failed:
        origin = op.origin
        if origin.fail is not Fail.UNIQUE:
            continue
        table = spec_of(origin.entity).table
        if table.ttl is None:
            continue
        guard = reason.item if reason.item is not None else (
            yield from read(table, op.key))
        owner = _explained(op, reason, guard).holder  # (the row the guard names)
        if owner is None:
            continue
        held = yield from read(table, owner)
        if held is None or expired(held, table.ttl):
            return True
    return False
