"""A commit of a session's staged writes, written once as a protocol (:func:`commit_p`)
that both kinds of session run through their client's driver. It knows no kind of write:
each staged write implements :class:`dynaorm.write.records.StagedWrite`, and its entities
may live in several tables of one client. Four phases:

1. **prepare** (:func:`prepare_p`) -- the stored state each staged write is planned on
   (its ``_prepare``): an object's own (persisted objects remember what they were loaded
   with), or read first where rules need it (an entity with unique or versioned rules
   saved with ``overwrite=True`` or deleted by key, an ``s.update()`` that touches a rule).
   A commit that needs no read makes no request here.
2. **plan** -- pure: :func:`dynaorm.write.render.compile_commit` turns the writes into a
   :class:`~dynaorm.write.render.WritePlan` (row writes, unique guards, version rows, each
   with its condition), checked against DynamoDB's limits before anything is sent.
3. **send** (:func:`send_p`) -- one request: ``PutItem``/``UpdateItem``/``DeleteItem`` for
   a plan of one action (never resent after an attempt that may have been applied: read
   back instead), else ``TransactWriteItems`` with a fresh ``ClientRequestToken`` (kept
   across retries, which DynamoDB applies at most once). A failure is explained by
   :func:`dynaorm.write.outcomes.failure`: an attempt that may have been applied and was,
   a typed error, or ``OutcomeUnknownError``. A conflict that a staged write plans again
   on a fresh read (an overwrite planned on what it read; a new versioned entity whose
   first version row is taken by a kept history) runs the phases again.
4. **settle** (:func:`settle`) -- only after success: objects take the states the plan
   promised (new snapshots, versions, timestamps), staged updates their results (read
   back when a lost answer left them out). After a failure nothing changes on any object.

A commit closed while its request may be on its way (an ``AsyncSession.commit`` cancelled
or timed out by ``asyncio.wait_for``) changes no object, and remembers what each would
have become: the next commit of such an object reads its key once first (:func:`pending`).
"""

from __future__ import annotations

import functools
import os
import weakref
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, cast

from dynaorm._types import Item, PlainKey
from dynaorm.core.scope import Scope
from dynaorm.core.stage import Stage
from dynaorm.errors import (
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    IdempotencyMismatchError,
    ItemExistsError,
    ItemGoneError,
    ItemNotFoundError,
    RequestError,
    _HoldsItem,
)
from dynaorm.protocol.capacity import Shares
from dynaorm.protocol.events import CommitResult, EventOrigin, recording
from dynaorm.protocol.steps import Call, Proto
from dynaorm.read.batches import FETCHING
from dynaorm.schema.entity import Entity, prepare_rows, spec_of
from dynaorm.schema.rules import Change, Unplaced
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.table import TableSchema
from dynaorm.values.keys import wire_key
from dynaorm.values.records import ConditionCheck
from dynaorm.values.revision import revision_of, stamp_of
from dynaorm.values.state import DELETED
from dynaorm.values.times import apply_stamps
from dynaorm.write.costs import known_items, shares_of
from dynaorm.write.outcomes import failure, unapplied_by
from dynaorm.write.placing import settled_p
from dynaorm.write.records import Outcome, Prepared, Reading, Receipt, StagedWrite
from dynaorm.write.render import WritePlan, compile_commit

#: rounds of a commit whose conflict a staged write plans again on a fresh read (an
#: overwrite while another writer keeps changing the item; a kept history found)
ROUNDS = 3

#: objects of a commit closed after its request may have been sent: what each would have
#: become, keyed by ``id(obj)`` (entries leave with their object); resolved by the next
#: commit of the object
_PENDING: dict[int, tuple[weakref.ref[Entity], Outcome]] = {}


class _Reads:
    """The reads staged writes ask for while they are prepared
    (:class:`dynaorm.write.records.Reads`): consistent, as protocols."""

    #: what a rule that reads whole objects is handed (a previous layout's reads)
    kit = FETCHING
    #: one item by key, read consistently (and prepared for the table's entities whose
    #: rules prepare: whichever it is, it may be decoded)
    item = staticmethod(FETCHING.item)

    def for_insert(self, spec: EntitySpec, values: Mapping[str, Any]) -> Reading[Any]:
        """What the entity's rules read before an insert of ``values`` is planned
        (:meth:`~dynaorm.schema.rules.Rule.prepare_write`: the versioned rule's last
        version kept at its key; ``None``: no rule reads, nothing is read)."""
        key = spec.primary_key(values)
        return spec.rules.prepare_write(Change(spec.cls, key, None, values, None, key,
                                               rules=spec.rules))


#: the reads of every commit
READS = _Reads()


def _receipt(staged: list[StagedWrite], key: str | None, stage: Stage | None
             ) -> Receipt | None:
    """The receipts of a commit of ``staged`` under the idempotency key ``key`` (``None``:
    not keyed; checked when nothing is staged too), inside the scope of ``stage`` when it
    has one: started by the receipts rule of the first table written (``table.receipts``:
    each table's own), kept where the session's client said when it was made
    (``Client(receipts=)``: that table, ``stage.receipts``; else every table written)."""
    if key is None:
        return None
    if not isinstance(key, str) or not key or len(key) > 2048:
        raise DynaormError(f"idempotency_key must be a non-empty str of at most 2048 "
                           f"characters, got {key!r:.80}")
    if not staged:
        return None
    scope = None if stage is None or stage.scope is None else stage.scope.values
    home = None if stage is None else stage.receipts
    return spec_of(staged[0]._entity).table.receipts.start(staged, key, scope, home)


def commit_p(staged: list[StagedWrite], observed: bool, keyed: bool = True,
             idempotency_key: str | None = None, stage: Stage | None = None
             ) -> Proto[CommitResult]:
    """Every phase of a commit of ``staged`` (see the module); returns the requests sent
    (reads to prepare included). ``observed``: hooks are attached (requests carry their
    actions' origins); ``keyed``: an entity of ``staged`` may need key material
    (:func:`keyed_plan_p`; ``False``: none does, as ``Stage.take`` tells);
    ``idempotency_key``: applied at most once for it, its receipts (rows of its plan:
    ``TableSchema.receipts``) keyed inside the scope of ``stage`` (the session's
    :class:`~dynaorm.core.stage.Stage`). The session's own key (``Session(...,
    idempotency_key=)``) is every commit's of the session: a later commit of other writes
    under it is a mismatch whose error says so."""
    earlier = 0
    if stage is not None and staged and idempotency_key == stage.idempotency_key is not None:
        earlier, stage.key_commits = stage.key_commits, stage.key_commits + 1
    try:
        receipt = _receipt(staged, idempotency_key, stage)
        if not staged:
            return CommitResult()
        if receipt is not None:
            yield from receipt.keyed_p()
        again: Collection[int] = ()
        response = {}
        with recording() as result:
            if receipt is not None:
                receipt.sent = result.requests
            for round_ in range(1, ROUNDS + 1):
                try:
                    prepared = yield from prepare_p(staged, again)
                except ItemNotFoundError as exc:
                    return (yield from _replay_p(receipt, exc))
                if keyed:
                    plan, outcomes = yield from keyed_plan_p(prepared, receipt)
                else:
                    try:
                        plan, outcomes = compile_commit(prepared, receipt)
                    except Unplaced:  # (a stored value kept outside, not at hand: a copied
                        # object's row; its rules' prepare fetches it, then it is planned)
                        plan, outcomes = yield from keyed_plan_p(prepared, receipt)
                if not plan.ops:
                    break
                try:
                    response = yield from send_p(plan, outcomes, observed, prepared, receipt)
                    if isinstance(response, dict):
                        break
                    assert receipt is not None
                    return (yield from _replayed_p(staged, receipt, response, plan, outcomes))
                except (ConcurrentModificationError, ItemExistsError, ItemGoneError) as exc:
                    again = _again(prepared, exc)
                    if round_ == ROUNDS or not again:
                        raise
        settle(outcomes)
        for entry in staged:  # (alone: a lost answer resolved as applied leaves no response)
            yield from entry._finish(response, len(plan.ops) == 1, READS)
        return result if plan.ops else CommitResult()
    except (IdempotencyMismatchError, _HoldsItem) as exc:
        raise _told(exc, earlier, idempotency_key, stage)  # noqa: B904 (its own cause)


def _replay_p(receipt: Receipt | None, exc: ItemNotFoundError) -> Proto[CommitResult]:
    """A commit's item not found (keyed: an earlier commit of these writes may have
    deleted it): its replay's result, else ``exc`` raised."""
    replay = None if receipt is None else (yield from receipt.replayed(READS.item))
    if replay is None:
        raise exc
    return cast(CommitResult, replay.result)


def _replayed_p(staged: list[StagedWrite], receipt: Receipt, response: Any, plan: Any,
                outcomes: Any) -> Proto[CommitResult]:
    """A replay (the same writes applied under the key): the first commit's made values
    were put back on the objects, whose states are planned on them."""
    if response.restored:
        prepared = yield from prepare_p(staged)
        plan, outcomes = yield from keyed_plan_p(prepared, receipt)
        _stamp(plan, outcomes, receipt.token[:16])
    settle(outcomes)
    yield from _as_stored(outcomes, receipt.token[:16])
    for entry in staged:
        yield from entry._finish({}, False, READS)
    return cast(CommitResult, response.result)


def _again(prepared: Any, exc: ConcurrentModificationError | ItemExistsError | ItemGoneError
           ) -> set[int]:
    """Nothing was written: a write planned on what it read (an overwrite: last writer
    wins, a deleted item is recreated; a versioned insert: the kept history continued)
    reads and plans again (the places of ``prepared`` returned), any other conflict is
    raised (none returned)."""
    return {at for at, (entry, state) in enumerate(prepared)
            if entry._rereads(exc.table, exc.key, state)}


def _told(exc: Exception, earlier: int, idempotency_key: str | None, stage: Stage | None
          ) -> Exception:
    """``exc`` as a commit raises it: a session-wide key's mismatch says the key is the
    session's; a scoped session's error holds the scope's stored objects only."""
    if isinstance(exc, IdempotencyMismatchError):
        if not earlier:
            return exc
        told = IdempotencyMismatchError(
            f"{exc.args[0]}. This session was made with idempotency_key="
            f"{idempotency_key!r:.80}, which applies to every commit of the session, "
            f"and {earlier} earlier commit(s) of it used the key: give each commit its "
            "own key (s.commit(idempotency_key=...)) or each its own session",
            key=exc.key)
        told.__cause__ = exc
        return told
    if stage is not None and stage.scope is not None:
        _in_scope(cast(_HoldsItem, exc), stage.scope)
    return exc


def _in_scope(exc: _HoldsItem, scope: Scope) -> None:
    """``exc`` with no stored object the scope does not hold (a stale key's row, whose
    fields name another tenant: a scoped session never sees it, on an error either)."""
    def held(obj: Any) -> Any:
        return obj if obj is None or scope.holds(obj) else None

    exc.item = held(exc.item)
    if isinstance(exc, ConditionFailedError) and exc.failures:
        exc.failures = [(e, k, held(i)) for e, k, i in exc.failures]


def _as_stored(outcomes: list[Outcome], rev: str) -> Proto[None]:
    """After a replay, each object whose rules seal, place or stamp its values (what the
    replay's plan made anew, never stored) takes its row as read, and the times stamped
    there, where the row is what the replayed commit stored: it holds that commit's
    revision ``rev``; on a table that keeps none, its fields (decoded, the stamped ones
    aside) are the object's, all that a write there compares. Else (changed since, the
    read failed) the state planned, on which a conditioned write fails."""
    for outcome in outcomes:
        state, obj, spec = outcome.state, outcome.obj, spec_of(type(outcome.obj))
        rules = spec.rules
        if state is None or not (rules.transforms or rules.held or rules.stampers):
            continue
        try:
            stored = yield from READS.item(spec.table, state.key)
            loaded = spec.cls._from_item(stored, spec) if stored else None
        except (DynaormError, ValueError):  # (the replay's answer stands)
            continue
        was = {} if loaded is None else loaded.__dict__
        times = tuple((name, was.get(name)) for name, _ in outcome.stamps)
        if loaded is not None and (revision_of(spec.table, stored) == rev or (
                spec.table.revision_attribute is None and was == {**obj.__dict__, **dict(times)})):
            if outcome.version is not None:  # (the version stored: the replay numbered one more)
                times += (("version", was.get("version")),)
            apply_stamps(obj, times)  # type: ignore[arg-type]
            loaded._dynaorm_state.members = state.members  # (the object's own: as stored)
            obj._dynaorm_state = loaded._dynaorm_state  # (as a load of the row makes it)


def plan_p(staged: list[StagedWrite]) -> Proto[WritePlan]:
    """The write plan a commit of ``staged`` would send (reading what rules need)."""
    prepared = yield from prepare_p(staged)
    return (yield from keyed_plan_p(prepared))[0]


def keyed_plan_p(prepared: list[Prepared], receipt: Receipt | None = None
                 ) -> Proto[tuple[WritePlan, list[Outcome]]]:
    """:func:`~dynaorm.write.render.compile_commit` of ``prepared``, planned once, with the
    key material it needs asked for first: each written entity's rules prepare
    (``Rule.prepare``: a data key for new values, the data keys of the stored items the
    writes are planned on, the MACs of the unique encrypted values they render). A commit
    of plain entities asks for nothing. ``receipt``: a keyed commit's receipts, planned
    with its rows."""
    for spec in {id(spec): spec for entry, _ in prepared
                 if (spec := spec_of(entry._entity)).rules.preparers}.values():
        mine = [(entry, state) for entry, state in prepared if entry._entity is spec.cls]
        # (a move from a previous layout copies its old version rows too)
        rows = [row for _, state in mine if state is not None
                for row in (state.item, *getattr(state, "history", ()))]
        yield from prepare_rows((spec,), rows, True, lambda mine=mine: [  # type: ignore[misc]
            values for entry, state in mine for values in entry._renders(state)])
    return compile_commit(prepared, receipt)


def prepare_p(staged: list[StagedWrite], again: Collection[int] = ()
              ) -> Proto[list[Prepared]]:
    """Every staged write with the stored state it is planned on, read where its rules
    need it (``again``: the indexes of the writes that plan a conflict again)."""
    prepared = []
    for at, entry in enumerate(staged):
        obj = entry._obj
        if obj is not None and _PENDING:
            yield from _resolve_abandoned(obj)
        prepared.append((yield from entry._prepare(READS, at in again)))
    return prepared


def send_p(plan: WritePlan, outcomes: list[Outcome], observed: bool,
           prepared: Sequence[Prepared] = (), receipt: Receipt | None = None,
           outside: bool = True) -> Proto[Any]:
    """Send ``plan`` as its one request; the response (``{}`` when a lost answer's write
    was applied). After a failure, the error it means is raised (reading what that
    needs), unless an attempt that may have been applied was. Closed on its way, the
    objects of ``outcomes`` are remembered (:func:`pending`). The capacity it consumed is
    split over its rows as priced on the stored items ``prepared`` read (:func:`~dynaorm.
    write.costs.shares_of`). With a ``receipt`` (an idempotent commit: always a
    transaction, its receipts rows of ``plan``) its failures are settled by it first
    (a replay: its :class:`~dynaorm.schema.rules.receipts.Replay`, not a response)."""
    if outside and plan.outside:  # (what its entities' rules do outside the table, around
        # it: write.placing.settled_p; a plain commit's plan has nothing outside)
        return (yield from settled_p(plan, prepared, send_p(
            plan, outcomes, observed, prepared, receipt, outside=False)))
    origins = write_origins(plan) if observed else ()
    probed: list[Item | None] = []  # what a probe read after the last attempt, when it
    # proved nothing: the read back after a failure takes it (no second read)
    # 128 random bits, 32 of DynamoDB's 36 characters (keyed: derived from the key)
    token = os.urandom(16).hex() if receipt is None else receipt.token
    rev = token[:16]  # the revision the plan's rows are stamped with (64 random bits)
    _stamp(plan, outcomes, rev)
    if plan.single_item and receipt is None:
        op = plan.ops[0]
        operation, request = plan.single_request(rev)
        request["ReturnConsumedCapacity"] = "INDEXES"

        def unapplied(item: Item | None) -> bool:
            """Whether the item read after a 5xx proves the single-item write unapplied
            (then it is retried); one that proves nothing ends the attempts at once."""
            proved = unapplied_by(op.origin.table, item,
                                  _loaded_revision(op.origin.table, op.key, outcomes))
            probed[:] = [] if proved else [item]
            return proved

        # no token: after an attempt that may have been applied it is never resent (a
        # resend could apply twice, or over what another writer committed meanwhile), it is
        # read back instead (dynaorm.write.outcomes.read_back); a 5xx it proves unapplied
        # is retried (its probe)
        step = Call(operation, request, origins, False, probe=Call("GetItem", {
            "TableName": op.origin.table.name, "Key": wire_key(op.key),
            "ConsistentRead": True}, origins), unapplied=unapplied,
            shares=functools.partial(_shares, plan, prepared))
    else:
        request = plan.transaction_request(token, rev)
        request["ReturnConsumedCapacity"] = "INDEXES"
        step = Call("TransactWriteItems", request, origins, True,
                    shares=functools.partial(_shares, plan, prepared))

    seen: list[Item | None] = []

    def read(table: TableSchema, key: PlainKey) -> Proto[Item | None]:
        item = probed.pop() if probed else (yield from READS.item(table, key))
        seen[:] = [item]  # (the last item read back: what proves a lost answer applied)
        return item

    try:
        try:
            response = yield step
            return response
        except RequestError as exc:
            settled = None if receipt is None else (
                yield from receipt.settle(exc, plan.ops, read, step))
            if settled is not None:  # (an idempotent commit's receipt says what it means)
                return settled
            error = yield from failure(plan, exc, read, rev)
            if error is None:  # applied: the commit succeeded, its answer was lost; a
                # single update's ALL_NEW is the item read back holding its revision (a
                # later read could show another writer's change instead)
                return {"Attributes": seen[0]} if seen and "ReturnValues" in request else {}
            if error is exc:
                raise
            raise error from exc
    except GeneratorExit:  # closed (a task cancelled) after the request may have gone
        for outcome in outcomes:
            if outcome.state is not None:
                key = id(outcome.obj)
                _PENDING[key] = (weakref.ref(outcome.obj, _forgetter(key)), outcome)
        raise


def _shares(plan: WritePlan, prepared: Sequence[Prepared]) -> Shares:
    """The shares of ``plan``'s rows (when a response reports its capacity)."""
    return shares_of(plan.ops, plan.sizes, known_items(prepared))


def _stamp(plan: WritePlan, outcomes: list[Outcome], rev: str) -> None:
    """The states ``outcomes`` promise, with the revision ``rev`` their rows will hold."""
    rows = [(op.origin.table, op.key) for op, stamped in zip(plan.ops, plan.stamped,
                                                              strict=True) if stamped]
    for at, outcome in enumerate(outcomes):
        state = outcome.state
        table = spec_of(type(outcome.obj)).table
        if state is not None and (table, state.key) in rows:
            outcomes[at] = outcome._replace(state=state.revised(stamp_of(table, rev)))


def _loaded_revision(table: TableSchema, key: PlainKey, outcomes: list[Outcome]
                     ) -> str | None:
    """The revision the object written at ``key`` was loaded with (``None``: none)."""
    for outcome in outcomes:
        state = outcome.obj._dynaorm_state
        if state is not None and spec_of(type(outcome.obj)).table is table and (
                state.key == key):
            return revision_of(table, state.item)
    return None


def settle(outcomes: list[Outcome]) -> None:
    """After success: every object takes the state the plan promised it."""
    for outcome in outcomes:
        _PENDING.pop(id(outcome.obj), None)
        obj = outcome.obj
        if outcome.stamps:
            apply_stamps(obj, outcome.stamps)
        obj._dynaorm_state = DELETED if outcome.state is None else outcome.state
        if outcome.version is not None:
            obj.version = outcome.version  # type: ignore[attr-defined]


def _resolve_abandoned(obj: Entity) -> Proto[None]:
    """An object whose last commit was closed after sending (see :func:`send_p`): read
    what is stored at the key it was written to; when it holds that commit's revision, the
    write landed and the object takes the state it promised (so saving it again is an
    update, not an insert that fails with ``ItemExistsError``)."""
    entry = _PENDING.pop(id(obj), None)
    if entry is None or entry[0]() is not obj:
        return
    outcome = entry[1]
    assert outcome.state is not None
    table = spec_of(type(obj)).table
    stored = yield from READS.item(table, outcome.state.key)
    written = revision_of(table, outcome.state.item)
    if written is not None and revision_of(table, stored) == written:
        settle([outcome])


def write_origins(plan: WritePlan) -> tuple[EventOrigin, ...]:
    """One ``(entity_class, key, role)`` per action of ``plan``, in request order (what
    ``on_request`` hooks see as ``event.origins``)."""
    return tuple((op.origin.entity, dict(op.origin.owner_key),
                  "check" if isinstance(op, ConditionCheck) else op.origin.role.name.lower())
                 for op in plan.ops)


def pending(obj: Entity) -> bool:
    """Whether ``obj`` was in a commit closed after sending and not resolved since."""
    entry = _PENDING.get(id(obj))
    return entry is not None and entry[0]() is obj


def _forgetter(key: int) -> Callable[[object], None]:
    """The weakref callback that drops ``key``'s pending entry with its object."""
    def forget(_: object, pending: dict[int, Any] = _PENDING) -> None:
        pending.pop(key, None)  # (bound now: at interpreter exit the global may be gone)
    return forget
