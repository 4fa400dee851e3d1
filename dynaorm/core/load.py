"""Bulk loads through the rules, pure (``dynaorm.jobs.load`` drives them): each entity's
insert planned as ``save`` plans a new object (its row, or a versioned entity's latest
copy and version row, its unique guards, every row its rules add, each with its
condition: the key must be free), rendered as the records of DynamoDB's bulk put items
input (:func:`input_record`); and, once the service has said which records it could not
write, each entity's outcome (:func:`outcome_p`): stored, or the typed error a commit of
its save would have raised (a unique clash names its field, an existing item is
:class:`~dynaorm.ItemExistsError`) with the rows the load wrote of it, to delete
(:func:`rollback`), so that no guard is left without its owner nor an owner without its
guards.

A row is the load's when the table holds it as the load wrote it: a row the load stamps
(an entity's row or latest copy) holds the load's revision (a fresh random value per
entity, as each save draws one); any other row (a guard, a version row) holds every
attribute the load wrote (:func:`mine`; the same test, as a condition, guards each
rollback's delete: a row another writer changed since is never deleted).
"""

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any, Final

from dynaorm._types import Item, PlainKey
from dynaorm.core.commit import keyed_plan_p, prepare_p
from dynaorm.errors import DynaormError, RequestError
from dynaorm.protocol.events import Reason
from dynaorm.protocol.steps import Proto, call
from dynaorm.schema.entity import Entity, _set_state, spec_of
from dynaorm.values.expressions import Placeholders, all_of, holds, raw_eq, stored_as
from dynaorm.values.keys import key_id, wire_key
from dynaorm.values.records import Put, Role
from dynaorm.values.revision import new_revision
from dynaorm.write.outcomes import map_failure
from dynaorm.write.render import WritePlan, render_op
from dynaorm.write.save import SaveEntry

#: what became of one row of a load: written as the load wrote it
APPLIED: Final = "applied"
#: refused: its condition was false (the item found, if any, alongside)
FAILED: Final = "failed"
#: not an item the table takes (the service's validation error alongside)
ERROR: Final = "error"
#: not written (not processed, or written and gone since: either way, not the load's)
UNKNOWN: Final = "unknown"

#: the members of an input record besides its item (PutItem's parameter names)
_CONDITION_MEMBERS: Final = ("ConditionExpression", "ExpressionAttributeNames",
                             "ExpressionAttributeValues")


class NotLoadedError(DynaormError):
    """An entity a bulk load did not write (its operation was cancelled or failed before
    it): none of its rows is left; loading it again stores it."""


@dataclass(frozen=True, slots=True)
class Loaded:
    """One entity of a load: its insert's plan and the revision its stamped rows hold."""

    obj: Entity
    plan: WritePlan
    rev: str
    #: each row's item as the load wrote it, in plan order (``None``: as rendered now;
    #: an entity planned again to settle it: its timestamps are stamped anew)
    written: tuple[Item, ...] | None = None

    @property
    def entity(self) -> type[Entity]:
        """The entity class."""
        return type(self.obj)

    @property
    def key(self) -> PlainKey:
        """The entity's primary key (plain values)."""
        return self.plan.ops[0].origin.owner_key


#: what became of one row: (:data:`APPLIED` | :data:`FAILED` | :data:`ERROR` |
#: :data:`UNKNOWN`, the item found for a failed condition or the error's message)
Found = tuple[str, Any]


def plan_load_p(obj: Entity, rev: str | None = None) -> Proto[Loaded]:
    """``obj``'s insert, planned as ``save`` plans a new object (what its rules read or
    ask for first included: key material, a migration window's old key), stamped with
    ``rev`` (default: a fresh revision). Refused (:class:`~dynaorm.DynaormError`) for an
    object that is not new, whose insert is not puts alone, or that keeps a value outside
    the table (``Offloaded``)."""
    if obj._dynaorm_state is not None:
        raise DynaormError(f"{type(obj).__name__} {spec_of(type(obj)).primary_key(obj.__dict__)}"
                           " was loaded from the table: a bulk load inserts new objects only")
    prepared = yield from prepare_p([SaveEntry(obj)])
    plan, _ = yield from keyed_plan_p(prepared)
    if not plan.ops or not all(isinstance(op, Put) for op in plan.ops):
        raise DynaormError(f"{type(obj).__name__}'s insert is not puts alone (a migration "
                           "window's old row to check?): load it with save")
    if plan.outside:  # (its save uploads them before the commit: a bulk put cannot)
        raise DynaormError(f"{type(obj).__name__}'s insert keeps values outside the table "
                           "(Offloaded, above the table's offload_threshold): load it with save")
    return Loaded(obj, plan, rev or new_revision())


def input_record(loaded: Loaded, at: int) -> dict[str, Any]:
    """The bulk put items input record of row ``at`` of ``loaded``'s plan: its item (the
    revision stamped where a save stamps one) and its condition, as ``PutItem`` takes
    them (wire form: binary values as ``bytes``)."""
    op, stamped = loaded.plan.ops[at], loaded.plan.stamped[at]
    _, body = render_op(op, loaded.rev if stamped else None)
    record = {"Item": body["Item"] if loaded.written is None
              else loaded.written[at]}
    for member in _CONDITION_MEMBERS:
        if member in body:
            record[member] = body[member]
    return record


def mine(loaded: Loaded, at: int, stored: Item | None) -> bool:
    """Whether ``stored`` (the item at row ``at``'s key) is that row as the load wrote
    it (:func:`row_is`)."""
    return row_is(loaded.plan.ops[at].origin.table, input_record(loaded, at)["Item"], stored)


def row_is(table: Any, item: Item, stored: Item | None) -> bool:
    """Whether ``stored`` is the row a load wrote as ``item`` (an input record's) to
    ``table``: the same revision, where ``item`` holds one (an entity's row or latest
    copy), else every attribute of ``item`` as it is."""
    return stored is not None and holds(_as_written(table, item), stored)


def _as_written(table: Any, item: Item) -> Any:
    """The condition that a row is as a load wrote ``item`` (see :func:`row_is`)."""
    attribute = table.revision_attribute
    if attribute in item:
        return raw_eq(attribute, item[attribute])
    return all_of(stored_as(item, frozenset(item)))


def fresh(cls: type[Entity], item: Item) -> Entity:
    """The object a stored ``item`` (a row of ``cls``) holds, as a new object (an insert
    plans it anew: a load's record read back, a row of an export)."""
    obj = cls._from_item(item)
    _set_state(obj, None)
    return obj


def rollback(loaded: Loaded, found: Sequence[Found]) -> list[tuple[bool, dict[str, Any]]]:
    """The ``DeleteItem`` requests that take back the rows of ``loaded`` the load wrote
    (``found``: what became of each), each conditioned on the row being as it wrote it
    (and answering the row found when it is not: ``ALL_OLD``), each with whether it is
    the entity's own row (its row or latest copy). Those come first: a delete of one
    refused with the row there means another writer changed the entity since the load
    wrote it, and it lives on as that writer's, its guards and history with it (deleting
    them would leave a live owner without its guards: a unique value another could then
    claim twice), so the driver deletes nothing more of it."""
    deletes = []
    for at, (what, _) in enumerate(found):
        if what != APPLIED:
            continue
        op = loaded.plan.ops[at]
        item = input_record(loaded, at)["Item"]
        ph = Placeholders()
        body = {"TableName": op.origin.table.name, "Key": wire_key(op.key),
                "ConditionExpression": _as_written(op.origin.table, item
                                                   ).render(ph),
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
        ph.apply(body)
        deletes.append((own_row(op), body))
    return sorted(deletes, key=lambda d: not d[0])  # (stable: the owner's rows first)


def own_row(op: Any) -> bool:
    """Whether ``op`` writes its entity's own row (its row, or a versioned entity's
    latest copy: what its guards name as their owner), not a guard or a version row."""
    return op.origin.role in (Role.ROW, Role.LATEST)


def outcome_p(loaded: Loaded, found: Sequence[Found]) -> Proto[DynaormError | None]:
    """What the load did to ``loaded`` (``found``: what became of each of its rows, in
    plan order): ``None`` when every row is the load's (stored), else the error a commit
    of its save would have raised on the conditions that failed (a protocol: telling a
    gone item from a changed one may read), or, for a row the table refused as an item,
    that refusal; a load that did not write every row and met no refusal (stopped,
    cancelled) answers :class:`NotLoadedError`."""
    if all(what == APPLIED for what, _ in found):
        return None
    reasons = [
        Reason("ConditionalCheckFailed", None, extra) if what == FAILED else None
        for what, extra in found]
    if any(reason is not None for reason in reasons):
        exc = RequestError("TransactWriteItems", "TransactionCanceledException",
                           "the bulk load's condition failed", reasons)
        return (yield from map_failure(loaded.plan, exc, _read))
    errors = [(at, extra) for at, (what, extra) in enumerate(found) if what == ERROR]
    if errors:
        at, message = errors[0]
        op = loaded.plan.ops[at]
        return RequestError("StartBulkPutItems", "ValidationException",
                            f"{loaded.entity.__name__} {loaded.key}: its "
                            f"{op.origin.role.value} was refused: {message}")
    return NotLoadedError(f"{loaded.entity.__name__} {loaded.key} was not loaded (the bulk "
                          "operation stopped before it): load it again")


def _read(table: Any, key: PlainKey) -> Proto[Item | None]:
    """The item at ``key`` of ``table``, read consistently (``None``: none)."""
    out = yield from call("GetItem", {"TableName": table.name, "Key": wire_key(key),
                                      "ConsistentRead": True})
    got = out.get("Item")
    return got


def settled(table: Any, items: Sequence[Item], found: Sequence[Found],
            owners: Sequence[bool] | None = None,
            claimed: Collection[Any] | None = None) -> list[Found]:
    """``found`` (what became of each row a load wrote as ``items``: written, or refused
    with the item found there, or not written) judged: a row found as the load wrote it
    counts as written (an earlier attempt of the same input) when that is proved. An
    entity's row or latest copy proves it by its revision (a fresh random value of the
    load's; a table without a revision attribute proves none this way); a
    guard or a version row carries none, and an identical one may have been there before
    (a guard its owner claimed, a kept history), so it counts as the load's beside an entity's own
    row counted the load's (no one else writes a guard or a version row of that owner
    while its row is the load's), or when no owner claims it: ``claimed`` holds the
    :func:`~dynaorm.values.keys.key_id` of each row the item at the entity's own key claims
    (empty: no item there; ``None``: not known), ``owners`` which rows are the entity's own
    (:func:`own_row`; default: those holding the revision). A version row whose entity has
    no row, a guard whose owner holds another value: no one's but the load's, which wrote
    it."""
    attribute = table.revision_attribute
    revised = [attribute in item for item in items]
    if owners is None:
        owners = revised
    out = [(APPLIED, got) if what == FAILED and is_revised and row_is(table, item, got)
           else (what, got) for item, (what, got), is_revised in zip(
               items, found, revised, strict=True)]
    proven = any(own and what == APPLIED for own, (what, _) in zip(owners, out, strict=True))

    def unclaimed(item: Item) -> bool:
        return claimed is not None and key_id(
            {a: item[a] for a in (table.pk, table.sk) if a in item}
        ) not in claimed

    return [(APPLIED, got) if what == FAILED and not is_revised and (
        proven or (not own and unclaimed(item))) and row_is(table, item, got) else (what, got)
        for item, (what, got), is_revised, own in zip(items, out, revised, owners,
                                                      strict=True)]


def roles(loaded: Loaded) -> list[Role]:
    """The role of each row of ``loaded``'s plan."""
    return [op.origin.role for op in loaded.plan.ops]
