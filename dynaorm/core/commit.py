"""A commit of a unit of work: one object, four named phases, written once as a protocol
that both kinds of session run through their transport (``Session.commit`` with
:meth:`dynaorm.transport.sync.Transport.run`, ``AsyncSession.commit`` with
:meth:`dynaorm.transport.aio.AsyncTransport.run`).

1. **prepare** -- the stored state each staged entry is planned on: an object's own
   (persisted objects remember what they were loaded with), or read first where rules need
   it (an entity with unique or versioned rules saved with ``overwrite=True`` or deleted by
   key, a new versioned entity whose deleted predecessor kept its history, an
   ``s.update()`` that touches a rule). A commit that needs no read makes no request here.
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

import dataclasses
import os
import weakref
from collections.abc import Callable
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.errors import (
    ConcurrentModificationError,
    ItemExistsError,
    ItemNotFoundError,
    RequestError,
)
from dynaorm.model.entity import Entity, spec_of
from dynaorm.model.layouts import MovedState
from dynaorm.model.state import DELETED, InstanceState
from dynaorm.model.timestamps import apply_stamps
from dynaorm.read.previous import stored_now_p
from dynaorm.transport.events import CommitResult, Origin
from dynaorm.transport.retry import recording
from dynaorm.transport.steps import Call, Proto
from dynaorm.write.outcomes import failure, same_item
from dynaorm.write.planner import compile_commit
from dynaorm.write.records import ConditionCheck
from dynaorm.write.render import WritePlan
from dynaorm.write.staged import DeleteEntry, Entry, Outcome, SaveEntry
from dynaorm.write.updates import StagedCheck, StagedUpdate

__all__ = ["Commit", "pending", "write_origins"]

#: reads one key consistently (a protocol): the stored item or ``None``
ReadItem = Callable[[PlainKey], Proto[Item | None]]
#: the highest stored version row of an object's key (a protocol; 0: no history)
LastVersion = Callable[[Entity], Proto[int]]

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
    """One commit of ``staged`` entries on ``table`` (see the module): :meth:`run` is the
    whole protocol; :meth:`prepare`, :meth:`plan`, :meth:`send` and :meth:`settle` its
    phases, in that order."""

    def __init__(self, table_name: str, staged: list[Entry], *, read: ReadItem,
                 last_version: LastVersion, observed: bool) -> None:
        self.table_name = table_name
        self.staged = staged
        self._read = read
        self._last_version = last_version
        #: whether ``on_request`` hooks are registered (then the request carries origins)
        self._observed = observed
        #: each entry with the stored state it is planned on (after :meth:`prepare`)
        self.prepared: list[tuple[Entry, InstanceState | None]] = []
        #: the plan and what each object becomes on success (after :meth:`plan`)
        self.write_plan: WritePlan | None = None
        self.outcomes: list[Outcome] = []
        #: the successful response (``{}`` when a lost answer's write was applied)
        self.response: dict[str, Any] = {}
        #: whether the request was handed to the transport, and whether objects settled
        self._sent = False
        self._settled = False

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
                except (ConcurrentModificationError, ItemExistsError) as exc:
                    # an overwrite planned on what it read: another writer changed the
                    # item in between (nothing was written); read and plan again
                    if round_ == OVERWRITE_ROUNDS or not self._rereads(exc.key):
                        raise
        yield from self.settle()
        return result if plan.ops else CommitResult()

    def _rereads(self, key: PlainKey | None) -> bool:
        """Whether :meth:`prepare` reads afresh what the item at ``key`` (a conflict's) is
        planned on (an overwrite of an entity with rules): then a conflict there is planned
        again, not reported."""
        for entry, state in self.prepared:
            if not (isinstance(entry, SaveEntry) and entry.overwrite
                    and spec_of(type(entry.obj)).has_rules):
                continue
            mine = state.key if state is not None else None
            if key is None or key in (mine, spec_of(type(entry.obj)).primary_key(
                    entry.obj.__dict__)):
                return True
        return False

    # -- 1. prepare ------------------------------------------------------------------
    def prepare(self) -> Proto[None]:
        """The stored state of every staged entry, read where rules need it."""
        self.prepared = []
        for entry in self.staged:
            if isinstance(entry, StagedUpdate | StagedCheck):
                state = yield from entry._prepare(self._read, self._last_version)
                self.prepared.append((entry, state))
                continue
            assert isinstance(entry, SaveEntry | DeleteEntry)
            obj = entry.obj
            yield from self._resolve_abandoned(obj)
            state = obj._dynaorm_state
            spec = spec_of(type(obj))
            deleting = isinstance(entry, DeleteEntry)
            overwrite = isinstance(entry, SaveEntry) and entry.overwrite
            if overwrite and spec.has_rules and isinstance(state, MovedState):
                # read from Meta.previous's layout: planned on what is stored now, under
                # either layout (the old row again, or the row another writer moved)
                state = yield from stored_now_p(self.table_name, spec, state,
                                                spec.primary_key(obj.__dict__))
            elif spec.has_rules and (overwrite or (deleting and state is None)):
                # (an overwrite of a loaded object too: last writer wins, and its guards
                # are planned from what is stored now, not from what was loaded)
                key = spec.primary_key(obj.__dict__) if state is None else state.key
                item = yield from self._read(key)
                state = None
                if item is not None:
                    state = type(obj)._from_item(item)._dynaorm_state
                elif deleting:
                    raise ItemNotFoundError(f"{spec.name} {key} does not exist",
                                            entity=spec.cls, key=key)
            if state is None and spec.versioned and isinstance(entry, SaveEntry):
                last = yield from self._last_version(obj)  # a deleted entity's kept history
                if last:
                    entry = dataclasses.replace(entry, after_version=last)
            self.prepared.append((entry, state))

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
        stored = yield from self._read(outcome.state.key)
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
        self.write_plan, self.outcomes = compile_commit(self.table_name, self.prepared)
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
        return Call(operation, request, origins, operation == "TransactWriteItems")

    def send(self) -> Proto[None]:
        """Send the plan; after a failure, the error it means is raised (reading what
        that needs), unless an attempt that may have been applied was."""
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
        single = len(plan.ops) == 1 and bool(self.response)
        for entry in self.staged:
            if isinstance(entry, StagedUpdate | StagedCheck):
                yield from entry._finish(self.response, single, self._read)

    def _planned(self) -> WritePlan:
        if self.write_plan is None:
            raise RuntimeError("Commit.plan() comes before send and settle")
        return self.write_plan


def write_origins(plan: WritePlan) -> tuple[Origin, ...]:
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
