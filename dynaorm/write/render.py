"""Write plans: the staged writes of a commit compiled into an ordered tuple of frozen
write records (:func:`compile_commit`: each write's actions in staging order, two actions
on one item folded into one or refused), checked against DynamoDB's limits (every action
passes :func:`check_write`, the gate), and rendered either as one ``TransactWriteItems``
request (in the plan's own order, so cancellation reason ``i`` belongs to ``ops[i]``) or,
when it holds a single action, as one ``PutItem``/``UpdateItem``/``DeleteItem``.

Pure: a plan is plain data, built and checked without I/O.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from dynaorm._types import AttributeValue, Item, PlainKey
from dynaorm.errors import (
    ConditionTooLargeError,
    DynaormError,
    ExpressionTooLargeError,
    TransactionTooLargeError,
    UniqueConstraintError,
)
from dynaorm.schema.entity import spec_of
from dynaorm.values.expressions import Placeholders, condition_values, render_first
from dynaorm.values.keys import OWN_PREFIX, wire_key
from dynaorm.values.limits import (
    check_item,
    check_size,
    check_values,
    item_size,
    text_size,
    updated_item,
    value_size,
)
from dynaorm.values.records import (
    Clause,
    ConditionCheck,
    Delete,
    Fail,
    Op,
    Origin,
    Put,
    Role,
    Update,
)
from dynaorm.values.revision import stamp_of
from dynaorm.write.placing import placed
from dynaorm.write.records import Outcome, Prepared, Receipt

__all__ = ["MAX_ACTIONS", "MAX_REQUEST_BYTES", "WritePlan", "check_batch", "check_write",
           "compile_commit", "stamps"]

MAX_ACTIONS = 100
MAX_REQUEST_BYTES = 4 * 1024 * 1024


def stamps(op: Op) -> bool:
    """Whether ``op`` stamps its request's revision: a put or update of an entity's row
    (or latest copy); guards and version rows carry none."""
    return isinstance(op, (Put, Update)) and op.origin.role in (Role.ROW, Role.LATEST) and (
        op.origin.table.revision_attribute is not None)


def render_op(op: Op, rev: str | None = None) -> tuple[str, dict[str, Any]]:
    """(operation name for a single request, request body) of one action; ``rev``: the
    revision it stamps, if it :func:`stamps` one (:mod:`~dynaorm.schema.rules.revision`);
    a Put its rule built (a receipt: :attr:`~dynaorm.values.records.Put.built`), as built."""
    if isinstance(op, Put) and op.built:
        return "PutItem", op.built.body
    ph = Placeholders()
    table = op.origin.table
    body: dict[str, Any] = {"TableName": table.name}
    stamp = stamp_of(table, rev) if rev is not None else {}
    if isinstance(op, Put):
        name = "PutItem"
        body["Item"] = {**op.item, **stamp} if stamp else op.item
    else:
        body["Key"] = wire_key(op.key)
        if isinstance(op, Update):  # (a save's changes: SET and REMOVE clauses)
            name = "UpdateItem"
            clauses: list[_Clause] = list(op.clauses) or [  # (a save's: whole names,
                *[("SET", (k,), v) for k, v in op.set.items()],  # never split at a dot)
                *[("REMOVE", (k,), None) for k in op.remove]]
            clauses += [("SET" if v is not None else "REMOVE", p, v) for p, v in op.members]
            clauses += [("SET", k, v) for k, v in stamp.items()]
            body["UpdateExpression"] = text = render_clauses(clauses, ph)
            if len(text) > 1200:  # (placeholders: ASCII, a byte a character)
                _bounded(text, op, "update")
        elif isinstance(op, Delete):
            name = "DeleteItem"
        else:
            name = "ConditionCheck"
    if op.condition is not None:
        body["ConditionExpression"] = text = render_first(op.condition, ph)
        if len(text) > 1200:  # (300 operators take at least that)
            _bounded(text, op, "condition")
        # a failed condition returns the stored item: it tells which error applies, and
        # whether an ambiguous earlier attempt had in fact written what this one would
        body["ReturnValuesOnConditionCheckFailure"] = "ALL_OLD"
    ph.apply(body)
    return name, body


#: what DynamoDB counts as an operator of a condition (the AND of a BETWEEN aside)
_OPERATORS = re.compile(r"<>|<=|>=|[=<>]|\b(?:AND|OR|NOT|BETWEEN|IN)\b|\w+\(")


def _bounded(text: str, op: Op, what: str) -> None:
    """``text``, a write's update or condition expression, refused over DynamoDB's
    limits: 4 KB each, and 300 operators in a condition."""
    count = len(_OPERATORS.findall(text)) - text.count("BETWEEN") if what == "condition" else 0
    if len(text.encode()) > 4096 or count > 300:
        o = op.origin
        raise (ConditionTooLargeError if count else ExpressionTooLargeError)(
            f"{o.entity.__name__} {o.owner_key}: its {what} ({len(text.encode())} bytes, "
            f"{count} operators) is over DynamoDB's limits (4 KB; a condition, 300 "
            "operators), nothing was sent: change fewer fields in one commit, or save it "
            "whole (overwrite=True: the last writer wins). A save's condition proves each "
            "attribute it writes as read, a key move's or a delete's the whole item, "
            "unless a lock does: declare the other writer's lock (Meta.lock)")


_SET_FORMS = {
    "SET": "{n} = {v}",
    "DEFAULT": "{n} = if_not_exists({n}, {v})",
    "APPEND": "{n} = list_append(if_not_exists({n}, {e}), {v})",
    "PREPEND": "{n} = list_append({v}, if_not_exists({n}, {e}))",
}


#: a clause to render: an update's (a path), or a save's (a tuple: whole names)
_Clause = Clause | tuple[str, tuple[str, ...], AttributeValue | None]


def render_clauses(clauses: Sequence[_Clause], ph: Placeholders) -> str:
    """``SET ... REMOVE ... ADD ... DELETE ...`` of an update expression; actions keep
    their call order within each clause (an attribute given as a tuple is a map member's
    document path, each of its names one placeholder)."""
    words: dict[str, list[str]] = {"SET": [], "REMOVE": [], "ADD": [], "DELETE": []}
    empty: str | None = None
    for kind, attr, av in clauses:
        n = ph.name(attr) if isinstance(attr, str) else ph.segments(attr)
        if kind == "REMOVE":
            words[kind].append(n)
            continue
        assert av is not None
        v = ph.value_av(av)
        if kind in ("APPEND", "PREPEND") and empty is None:
            empty = ph.value_av({"L": []})
        if kind in ("ADD", "DELETE"):
            words[kind].append(f"{n} {v}")
        else:
            words["SET"].append(_SET_FORMS[kind].format(n=n, v=v, e=empty))
    return " ".join([f"{word} {', '.join(items)}" for word, items in words.items() if items])


# -- the gate every write passes ---------------------------------------------------------
def check_write(op: Op, stamped: bool | None = None) -> int:
    """Refuse before sending anything DynamoDB would refuse in one write action (see
    :mod:`dynaorm.values.limits`); returns the bytes it adds to a request. A refusal names
    the action's table (a commit may write to several). ``stamped``: whether the action
    :func:`stamps` the request's revision (``None``: asked here).

    Keys, item attributes, update values and condition values are all checked (the key
    attributes, the table's and every index's, within their limits; for what is not an
    entity, the key's own, pk first); a Put's item, and an update's result when the stored
    item is known, must fit in 400 KB."""
    entity, key = op.origin.entity.__name__, op.key
    spec = getattr(op.origin.entity, "__dynaorm_spec__", None)
    table = spec.table if spec is not None and spec.cls is op.origin.entity else None
    # (the revision the request will add: its size counts toward the row's 400 KB)
    stamp = stamp_of(op.origin.table, "0" * 16) if (
        stamps(op) if stamped is None else stamped) else None
    try:
        roles = table.key_roles if table is not None else {
            a: "partition" if i == 0 else "sort" for i, a in enumerate(key)}
        if isinstance(op, Put):  # the item's size, then its key, then every value
            size = check_item({**op.item, **stamp} if stamp else op.item, entity=entity,
                              key=key, key_roles=roles)
        else:
            size = check_item(wire_key(key), entity=entity, key=key, key_roles=roles)
        if isinstance(op, Update):
            size = _update_size(op, size, stamp, entity, roles)
        carried = condition_values(op.condition) if op.condition is not None else ()
        if carried:  # the values the condition carries, checked
            check_values([("condition", av) for av in carried], entity=entity, key=key,
                         key_roles={})
            size += sum(map(value_size, carried))
        return size
    except DynaormError as exc:
        table = getattr(spec, "table", None)
        if table is not None and exc.args and repr(table.name) not in str(exc.args[0]):
            exc.args = (f"{exc.args[0]} (table {table.name!r})", *exc.args[1:])
        raise


def _update_size(op: Update, size: int, stamp: Item | None, entity: str,
                 roles: dict[str, str]) -> int:
    """:func:`check_write` of an update's values (set values, then clause values: the
    first refusal), and its size with them (``size``: its key's); the item it makes of
    the stored item, when known, must fit too (with the revision ``stamp``)."""
    key = op.key
    values = [*op.set.items(), *[(a, av) for _, a, av in op.clauses if av is not None]]
    if op.members:
        values += [(".".join(p), av) for p, av in op.members if av is not None]
    check_values(values, entity=entity, key=key, key_roles=roles)
    size = check_size(size + sum(text_size(a) + value_size(av) for a, av in values),
                      entity=entity, key=key, what="update")
    if op.known is not None:
        after = updated_item({**op.known, **(stamp or {})}, op.set, op.remove, op.clauses,
                             op.members)
        check_size(item_size(after), entity=entity, key=key, what="item after the update")
    return size


def check_batch(entity: type[Any], key: PlainKey, item: Item | None = None) -> int:
    """:func:`check_write` of a bulk put of ``item`` (``save_many``), or a bulk delete
    (``delete_many``: no item)."""
    origin = Origin(entity, key, Role.ROW, Fail.GONE if item is None else Fail.EXISTS)
    return check_write(Delete(key, None, origin) if item is None else Put(key, item, None, origin))


@dataclass(frozen=True)
class WritePlan:
    """An ordered, limit-checked tuple of write actions, each on its entity's table (one
    commit may write to several tables of one client); the limits count the whole plan."""

    ops: tuple[Op, ...]
    #: whether each action :func:`stamps` the request's revision, in order
    stamped: tuple[bool, ...] = field(init=False, repr=False, compare=False)
    #: the bytes each action adds to the request, in order
    sizes: tuple[int, ...] = field(init=False, repr=False, compare=False)
    #: the specs of its entities whose rules do something outside the table around it
    #: (:mod:`dynaorm.write.placing`; none: a plain commit's)
    outside: tuple[Any, ...] = field(default=(), repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stamped", tuple(map(stamps, self.ops)))
        if len(self.ops) > MAX_ACTIONS:
            first = self.ops[0].origin
            raise TransactionTooLargeError(
                f"commit needs {len(self.ops)} actions (first: {first.entity.__name__} "
                f"{first.owner_key}; tables {', '.join(map(repr, self.tables))}); "
                f"DynamoDB allows {MAX_ACTIONS} per transaction")
        sizes = [op.built.size if isinstance(op, Put) and op.built else check_write(
            op, stamped) for op, stamped in zip(self.ops, self.stamped, strict=True)]
        object.__setattr__(self, "sizes", tuple(sizes))
        total = sum(sizes)
        if total > MAX_REQUEST_BYTES:
            first = self.ops[0].origin
            raise TransactionTooLargeError(
                f"commit (first: {first.entity.__name__} {first.owner_key}; tables "
                f"{', '.join(map(repr, self.tables))}) of {total} bytes exceeds DynamoDB's "
                f"{MAX_REQUEST_BYTES} byte request limit")

    def __len__(self) -> int:
        return len(self.ops)

    @property
    def tables(self) -> tuple[str, ...]:
        """The names of the tables the plan writes to, in order of first action."""
        return tuple(dict.fromkeys(op.origin.table.name for op in self.ops))

    @property
    def single_item(self) -> bool:
        """Whether the plan goes as one ``PutItem``/``UpdateItem``/``DeleteItem`` (a
        ``ConditionCheck`` alone is a transaction of one). Such a request has no
        idempotency token: after an attempt that may have been applied it is never resent,
        it is read back (:func:`dynaorm.write.outcomes.read_back`)."""
        return len(self.ops) == 1 and not isinstance(self.ops[0], ConditionCheck)

    def single_request(self, rev: str | None = None) -> tuple[str, dict[str, Any]]:
        """The one-item request (PutItem/UpdateItem/DeleteItem) of a one-action plan
        (``rev``: the revision it stamps, see :func:`render_op`)."""
        (op,) = self.ops
        name, body = render_op(op, rev if self.stamped[0] else None)
        if isinstance(op, Update) and op.clauses:
            body["ReturnValues"] = "ALL_NEW"  # s.update(): the stored entity afterwards
        return name, body

    def transaction_request(self, token: str, rev: str | None = None) -> dict[str, Any]:
        """The TransactWriteItems request, actions in plan order (``rev``: the revision
        its rows' writes stamp)."""
        items = []
        for op, stamped in zip(self.ops, self.stamped, strict=True):
            name, body = render_op(op, rev if stamped else None)
            items.append({name.removesuffix("Item"): body})  # (PutItem: Put)
        return {"TransactItems": items, "ClientRequestToken": token}


def compile_commit(entries: Sequence[Prepared], receipt: Receipt | None = None
                   ) -> tuple[WritePlan, list[Outcome]]:
    """Plan a whole commit (each staged write with the state it is planned on, in staging
    order; the tables are its entities'), with the rows of its ``receipt`` (a keyed
    commit's: its receipts and checks, last) counted with the others. Raises before
    anything is sent when the plan is impossible.

    Outcomes are one per write that settles an object (an ``s.update()`` or ``s.check()``
    has one only when it produces an object)."""
    ops: list[Op] = []
    outcomes: list[Outcome] = []
    at: dict[tuple[Any, ...], int] = {}
    outside: dict[int, Any] = {}  # (the specs whose rules may keep a value outside the table)
    for index, (entry, state) in enumerate(entries):
        entry_ops, outcome = entry._plan_ops(state, index)
        if outcome is not None:
            outcomes.append(outcome)
        for op in entry_ops:
            spec = op.origin.entity.__dynaorm_spec__
            if spec.rules.places:  # (a row it deletes, or a held attribute's value in the row
                # it writes or the one it replaces that may be kept outside: _may_place)
                may = isinstance(op, Delete)
                for row in (getattr(op, "item", getattr(op, "set", {})),
                            getattr(op, "known", None) or (state.item if state else {})):
                    for attr in spec.rules.held & row.keys():
                        (value,) = row[attr].values()  # (a short string: no call)
                        may |= (type(value) not in (str, bytes) or 4 * len(value) > (
                            spec.table.offload_threshold)) and _may_place(row[attr], spec.table)
                if may:
                    outside[id(spec)] = spec
            if not ops:  # the first action: nothing to merge with (identified lazily)
                ops.append(op)
                continue
            if not at:
                at[_op_id(ops[0])] = 0
            ident = _op_id(op)
            prev = at.get(ident)
            if prev is None:
                at[ident] = len(ops)
                ops.append(op)
                continue
            ops[prev] = _merge(ops[prev], op)
    if outside:  # (values a rule keeps outside the table: placed once every row is built)
        ops, outcomes = placed(list(outside.values()), ops, entries, outcomes, _op_id)
    if receipt is not None:
        ops += receipt.rows(ops)
    plan = WritePlan(tuple(ops))
    if outside:
        object.__setattr__(plan, "outside", tuple(outside.values()))
    return plan, outcomes


def _may_place(av: AttributeValue, table: Any) -> bool:
    """Whether a held attribute's value ``av`` (a string or bytes only where its bytes, at
    most 4 a character, may pass the threshold) may be kept outside ``table``: a
    reference (a map with a member of dynaorm's name), or a value larger than its
    threshold, as the placing rule sizes it. One that stays in its row is planned as on a
    table without ``offload=``, and a bulk load takes it."""
    return "NULL" not in av and (value_size(av) > table.offload_threshold or (
        "M" in av and any(k.startswith(OWN_PREFIX) for k in av["M"])))


def _op_id(op: Op) -> tuple[Any, ...]:
    """The identity of the item an action writes: its table and key, whatever its
    attributes' order (a table's two-attribute key, the common one, without sorting)."""
    key = op.key
    if len(key) == 2:
        (a, x), (b, y) = key.items()
        ident: tuple[Any, ...] = (a, x, b, y) if a < b else (b, y, a, x)
    else:
        ident = tuple(sorted(key.items()))
    return op.origin.table.name, ident


def _merge(first: Op, second: Op) -> Op:
    """Two actions on one item in one commit: fold them into one, or refuse."""
    release, claim = (first, second) if isinstance(first, Delete) else (second, first)
    if isinstance(release, Delete) and isinstance(claim, Put):
        # one object releases the item (a delete, a key move, a changed unique value) and
        # another claims it, in either staging order: one Put, conditioned like the release
        return Put(claim.key, claim.item, release.condition, release.origin)
    if isinstance(first, Put) and isinstance(second, Put) and (
            first.origin.role is Role.GUARD and second.origin.role is Role.GUARD):
        o = second.origin  # (its value as a message may show it: an encrypted one redacted)
        raise UniqueConstraintError(o.entity, [(o.field or "?", spec_of(o.entity).rules.redact(
            o.field or "?", o.value))], key=o.owner_key)
    raise DynaormError(
        f"commit writes item {first.key} twice ({first.origin.entity.__name__} "
        f"{first.origin.role.value} and {second.origin.entity.__name__} "
        f"{second.origin.role.value}); stage one object per item")
