"""A commit of a unit of work: one object, four named phases, written once as a protocol
that both kinds of session run through their client's driver (``Session.commit`` with
:meth:`dynaorm.client.drivers.SyncDriver.run`, ``AsyncSession.commit`` with
:meth:`dynaorm.client.drivers.AsyncDriver.run`). It knows no kind of write: each staged
write implements :class:`dynaorm.write.staged.StagedWrite`, and its entities may live in
several tables of one client.

1. **prepare** -- the stored state each staged write is planned on (its ``_prepare``): an
   object's own (persisted objects remember what they were loaded with), or read first
   where rules need it (an entity with unique or versioned rules saved with
   ``overwrite=True`` or deleted by key, a new versioned entity whose deleted predecessor
   kept its history, an ``s.update()`` that touches a rule). A commit that needs no read
   makes no request here.
2. **plan** -- pure: :func:`dynaorm.write.planner.compile_commit` turns the entries into a
   :class:`~dynaorm.write.render.WritePlan` (row writes, unique guards, version rows, each
   with its condition), checked against DynamoDB's limits before anything is sent.
3. **send** -- one request: ``PutItem``/``UpdateItem``/``DeleteItem`` for a plan of one
   action (never resent after an attempt that may have been applied: read back instead),
   else ``TransactWriteItems`` with a fresh ``ClientRequestToken`` (kept across retries,
   which DynamoDB applies at most once). A failure is explained by
   :func:`dynaorm.write.outcomes.failure`: an attempt that may have been applied and was,
   a typed error, or ``OutcomeUnknownError``.
4. **settle** -- only after success: objects take the states the plan promised (new
   snapshots, versions, timestamps), staged updates their results (read back when a lost
   answer left them out). After a failure nothing changes on any object.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.errors import (
    ConcurrentModificationError,
    ItemExistsError,
    ItemGoneError,
    RequestError,
)
from dynaorm.model.entity import Entity, spec_of
from dynaorm.model.keys import wire_key
from dynaorm.model.state import DELETED
from dynaorm.model.table import TableSchema
from dynaorm.model.timestamps import apply_stamps
from dynaorm.protocol.events import CommitResult, EventOrigin, recording
from dynaorm.protocol.steps import Call, Proto
from dynaorm.write.outcomes import failure, same_item, unapplied_by
from dynaorm.write.planner import compile_commit
from dynaorm.write.records import ConditionCheck
from dynaorm.write.render import WritePlan
from dynaorm.write.staged import Outcome, Prepared, Reads, StagedWrite

__all__ = ["Commit", "pending", "write_origins"]

#: times a commit with an overwrite of an entity with rules reads, plans and sends when
#: another writer keeps changing the item between its read and its write
OVERWRITE_ROUNDS = 3

#: objects of a commit abandoned after its request was sent (an ``AsyncSession.commit``
#: cancelled, or timed out by ``asyncio.wait_for``): what each would have become, keyed by
#: ``id(obj)`` (entries leave with their object); resolved by the next commit of the object
_PENDING: dict[int, tuple[weakref.ref[Entity], Outcome]] = {}

_ROLES = {"ROW": "row", "LATEST": "latest", "VERSION": "version", "GUARD": "guard",
          "CHECK": "check"}


class Commit:
    """One commit of ``staged`` writes (see the module), reading through ``reads``:
    :meth:`run` is the whole protocol; :meth:`prepare`, :meth:`plan`, :meth:`send` and
    :meth:`settle` its phases, in that order."""

    def __init__(self, staged: list[StagedWrite], reads: Reads, *, observed: bool) -> None:
        self.staged = staged
        self._reads = reads
        #: whether hooks are attached (then the request carries its actions' origins)
        self._observed = observed
        #: each write with the stored state it is planned on (after :meth:`prepare`)
        self.prepared: list[Prepared] = []
        #: the plan and what each object becomes on success (after :meth:`plan`)
        self.write_plan: WritePlan | None = None
        self.outcomes: list[Outcome] = []
        #: the successful response (``{}`` when a lost answer's write was applied)
        self.response: dict[str, Any] = {}
        #: whether the request was handed to the driver, and whether objects settled
        self._sent = False
        self._settled = False
        #: what a probe read after the last attempt, when it proved nothing
        self._probed: list[Item | None] = []

    def run(self) -> Proto[CommitResult]:
        """Every phase; returns the requests sent (reads to prepare included)."""
        if not self.staged:
            return CommitResult()
        with recording() as result:
            for round_ in range(1, OVERWRITE_ROUNDS + 1):
                yield from self.prepare()
                plan = self.plan()
                if not plan.ops:
                    break
                try:
                    yield from self.send()
                    break
                except (ConcurrentModificationError, ItemExistsError, ItemGoneError) as exc:
                    # an overwrite planned on what it read: another writer changed (or
                    # deleted) the item in between (nothing was written); read and plan
                    # again: last writer wins, a deleted item is recreated
                    if round_ == OVERWRITE_ROUNDS or not any(
                            entry._rereads(exc.table, exc.key, state)
                            for entry, state in self.prepared):
                        raise
        yield from self.settle()
        return result if plan.ops else CommitResult()

    # -- 1. prepare ------------------------------------------------------------------
    def prepare(self) -> Proto[None]:
        """The stored state of every staged write, read where its rules need it."""
        self.prepared = []
        for entry in self.staged:
            obj = entry._obj
            if obj is not None:
                yield from self._resolve_abandoned(obj)
            self.prepared.append((yield from entry._prepare(self._reads)))

    def _resolve_abandoned(self, obj: Entity) -> Proto[None]:
        """An object whose last commit was abandoned after sending (see :meth:`abandon`):
        read what is stored at the key it was written to; when it is what that commit
        wrote, the write landed and the object takes the state it promised (so saving it
        again is an update, not an insert that fails with ``ItemExistsError``)."""
        entry = _PENDING.pop(id(obj), None)
        if entry is None or entry[0]() is not obj:
            return
        outcome = entry[1]
        assert outcome.state is not None
        table = spec_of(type(obj)).table
        stored = yield from self._reads.item(table, outcome.state.key)
        if stored is not None and same_item(stored, outcome.state.item):
            _finalize(outcome)

    def abandon(self) -> None:
        """The commit was abandoned (its task cancelled) after its request may have been
        sent: no object changed, and every object it would have written is remembered;
        the next commit of such an object reads its key once and, if the abandoned write
        landed, takes its state first."""
        if not self._sent or self._settled:
            return
        for outcome in self.outcomes:
            if outcome.state is None:
                continue
            key = id(outcome.obj)
            _PENDING[key] = (weakref.ref(outcome.obj, _forgetter(key)), outcome)

    # -- 2. plan ---------------------------------------------------------------------
    def plan(self) -> WritePlan:
        """The write plan of the prepared entries (pure; raises before anything is sent
        when the plan is impossible)."""
        self.write_plan, self.outcomes = compile_commit(self.prepared)
        return self.write_plan

    # -- 3. send ---------------------------------------------------------------------
    def request(self) -> Call:
        """The one request that sends the plan."""
        plan = self._planned()
        if plan.single_item:
            operation, request = plan.single_request()
        else:
            operation = "TransactWriteItems"
            # a fresh token per commit: 128 random bits, 32 of DynamoDB's 36 characters
            request = plan.transaction_request(os.urandom(16).hex())
        request["ReturnConsumedCapacity"] = "INDEXES"
        origins = write_origins(plan) if self._observed else ()
        # a transaction's token dedupes its retries; a single-item write has no token: after
        # an attempt that may have been applied it is never resent (a resend could apply
        # twice, or over what another writer committed meanwhile), it is read back instead
        # (dynaorm.write.outcomes.read_back)
        if not plan.single_item:
            return Call(operation, request, origins, True)
        op = plan.ops[0]  # (a 5xx it proves unapplied is retried: see the outcomes)
        probe = Call("GetItem", {"TableName": op.origin.table.name, "Key": wire_key(op.key),
                                 "ConsistentRead": True}, origins)
        return Call(operation, request, origins, False, probe=probe,
                    unapplied=self._judge_probe)

    def _judge_probe(self, item: dict[str, Any] | None) -> bool:
        """Whether the item read after a 5xx proves the single-item write unapplied; one
        that proves nothing ends the attempts at once, and the read back after them
        takes it (no second read)."""
        unapplied = unapplied_by(self._planned().ops[0], item)
        self._probed = [] if unapplied else [item]
        return unapplied

    def _read(self, table: TableSchema, key: PlainKey) -> Proto[Item | None]:
        """The read back after a failure: the probe's item when it was the last read."""
        if self._probed:
            return self._probed.pop()
        return (yield from self._reads.item(table, key))

    def send(self) -> Proto[None]:
        """Send the plan; after a failure, the error it means is raised (reading what
        that needs), unless an attempt that may have been applied was."""
        self._probed = []
        call = self.request()
        self._sent = True
        try:
            self.response = yield call
        except RequestError as exc:
            error = yield from failure(self._planned(), exc, self._read)
            if error is None:  # applied: the commit succeeded, its answer was lost
                self.response = {}
                return
            if error is exc:
                raise
            raise error from exc

    # -- 4. settle -------------------------------------------------------------------
    def settle(self) -> Proto[None]:
        """After success: objects take their new states, staged actions their results
        (in staging order, reading back what a lost answer left out)."""
        self._settled = True
        for outcome in self.outcomes:
            _PENDING.pop(id(outcome.obj), None)
            _finalize(outcome)
        plan = self._planned()
        # (alone: a lost answer resolved as applied leaves no response: read back then)
        single = len(plan.ops) == 1
        for entry in self.staged:
            yield from entry._finish(self.response, single, self._reads)

    def _planned(self) -> WritePlan:
        if self.write_plan is None:
            raise RuntimeError("Commit.plan() comes before send and settle")
        return self.write_plan


def write_origins(plan: WritePlan) -> tuple[EventOrigin, ...]:
    """One ``(entity_class, key, role)`` per action of ``plan``, in request order (what
    ``on_request`` hooks see as ``event.origins``)."""
    return tuple(
        (op.origin.entity, dict(op.origin.owner_key),
         "check" if isinstance(op, ConditionCheck) else
         _ROLES.get(op.origin.role.name, op.origin.role.name.lower()))
        for op in plan.ops)


def pending(obj: Entity) -> bool:
    """Whether ``obj`` was in a commit abandoned after sending and not resolved since."""
    entry = _PENDING.get(id(obj))
    return entry is not None and entry[0]() is obj


def _forgetter(key: int) -> Callable[[object], None]:
    """The weakref callback that drops ``key``'s pending entry with its object."""
    def forget(_: object, pending: dict[int, Any] = _PENDING) -> None:
        pending.pop(key, None)  # (bound now: at interpreter exit the global may be gone)
    return forget


def _finalize(outcome: Outcome) -> None:
    obj = outcome.obj
    if outcome.stamps:
        apply_stamps(obj, outcome.stamps)
    obj._dynaorm_state = DELETED if outcome.state is None else outcome.state  # None: deleted
    if outcome.version is not None:
        obj.version = outcome.version  # type: ignore[attr-defined]
