"""The I/O half of a unit of work, written once as :mod:`dynaorm.core.protocol` generators:
commit (prepare reads, compile, send, resolve an ambiguous outcome, map the failure,
finalize), get, find, get_many (batches and snapshots), save_many and delete_many.
:class:`~dynaorm.Session` drives them with the sync transport, ``AsyncSession`` with
asyncio; neither decides anything itself."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import Any, TypeVar, cast

from dynaorm._types import Item, PlainKey
from dynaorm.core.batches import batch_get_p, batch_rounds
from dynaorm.core.commit import (
    _accumulates,
    _all_ready,
    _finish_actions,
    _finished,
    _Need,
    _ready,
    _set_state,
)
from dynaorm.core.protocol import Call, Proto, call, gather
from dynaorm.core.staging import Staging, check_concurrency, refuse_rules
from dynaorm.errors import (
    DynaormError,
    ItemNotFoundError,
    KeyTemplateError,
    TransactionTooLargeError,
)
from dynaorm.model.entity import Entity, encode_entity, spec_of
from dynaorm.model.keys import key_id, wire_key
from dynaorm.model.rows import OWNER_PK, OWNER_SK, OWNER_TYPE
from dynaorm.model.spec import EntitySpec
from dynaorm.model.state import InstanceState
from dynaorm.model.timestamps import Stamps, apply_stamps, stamped, stamps
from dynaorm.transport.events import CommitResult, write_origins
from dynaorm.transport.retry import recording
from dynaorm.transport.sync import RequestFailed
from dynaorm.write.failures import map_failure
from dynaorm.write.limits import plain_key_value
from dynaorm.write.outcomes import APPLIED, resolve, unknown_batch
from dynaorm.write.planner import compile_commit
from dynaorm.write.records import ConditionCheck
from dynaorm.write.render import WritePlan, check_batch_delete, check_batch_put, check_read_key
from dynaorm.write.staged import DeleteEntry, Entry, Outcome, SaveEntry
from dynaorm.write.updates import StagedCheck, StagedUpdate

__all__ = ["FIND_ROUNDS", "UnitOfWork"]

T = TypeVar("T", bound=Entity)
R = TypeVar("R")
#: Items one TransactGetItems reads, at most.
MAX_SNAPSHOT = 100
BATCH_WRITE = 25
#: Times ``find`` reads a guard and its owner before concluding nobody holds the value.
FIND_ROUNDS = 3

Read = Callable[[PlainKey], Item | None]
LastVersion = Callable[[Entity], int]


class UnitOfWork(Staging):
    """Staging plus the protocols of every operation that does I/O (see the module)."""

    # -- plain reads -----------------------------------------------------------------
    def _get_request(self, key: PlainKey, consistent: bool,
                     origins: tuple[type[Entity], ...]) -> dict[str, Any]:
        """The GetItem request of ``key`` (checked: a key DynamoDB would refuse raises)."""
        for attr, value in key.items():
            # a key of short ASCII strings under ASCII names has nothing check_read_key
            # could refuse (check_key_value's common case): the others are checked
            if not plain_key_value(attr, value):
                check_read_key(self.table, key, "/".join(o.__name__ for o in origins) or "item")
                break
        request: dict[str, Any] = {"TableName": self.table.name, "Key": wire_key(key)}
        if consistent:
            request["ConsistentRead"] = True
        return request

    def _get_item_p(self, key: PlainKey, consistent: bool = False,
                    origins: tuple[type[Entity], ...] = ()) -> Proto[Item | None]:
        # the Call step yielded here, as call() would (no generator layer per get)
        out: dict[str, Any] = yield Call("GetItem", self._get_request(key, consistent, origins),
                                         origins)
        item: Item | None = out.get("Item")
        return item

    def _get_p(self, entity: type[T], consistent: bool, version: int | None,
               fields: Mapping[str, Any]) -> Proto[T | None]:
        spec = self._spec(entity)
        key = self._lookup_key(spec, fields, version)
        origins = (entity,)
        # _get_item_p's step, yielded here (a get is one request: no nested generator)
        out: dict[str, Any] = yield Call("GetItem", self._get_request(key, consistent, origins),
                                         origins)
        item: Item | None = out.get("Item")
        return entity._from_item(item, spec) if item is not None and spec.owns(item) else None

    def _get_many_p(self, entity: type[T], keys: Sequence[Mapping[str, Any]],
                    consistent: bool, snapshot: bool, concurrency: int
                    ) -> Proto[list[T | None]]:
        spec = self._spec(entity)
        check_concurrency(concurrency)
        wanted = [self._lookup_key(spec, k) for k in keys]
        if snapshot:
            found = yield from self._snapshot_p(spec, wanted)
        else:
            found = yield from batch_get_p(self.table.name, [wire_key(k) for k in wanted],
                                           consistent=consistent, concurrency=concurrency)
        items = [found.get(key_id(key)) for key in wanted]
        return [entity._from_item(i, spec) if i is not None and spec.owns(i) else None
                for i in items]

    def _snapshot_p(self, spec: EntitySpec, wanted: list[PlainKey]) -> Proto[dict[Any, Item]]:
        unique = list({key_id(k): k for k in wanted}.values())
        if len(unique) > MAX_SNAPSHOT:
            raise TransactionTooLargeError(
                f"{spec.name}: get_many(snapshot=True) reads at most {MAX_SNAPSHOT} distinct "
                f"items in one TransactGetItems, got {len(unique)}")
        if not unique:
            return {}
        request = {"TransactItems": [{"Get": {"TableName": self.table.name,
                                              "Key": wire_key(k)}} for k in unique]}
        out = yield from call("TransactGetItems", request)
        found: dict[Any, Item] = {}
        for key, response in zip(unique, out.get("Responses", []), strict=False):
            item = response.get("Item")
            if item is not None:
                found[key_id(key)] = item
        return found

    def _find_p(self, entity: type[T], consistent: bool,
                fields: Mapping[str, Any]) -> Proto[T | None]:
        """The owner of a unique value: the guard names it, and the owner, when read,
        must still hold the value (a guard can be re-pointed between the two reads); else
        the guard is read again (consistently), up to :data:`FIND_ROUNDS` times."""
        spec = self._spec(entity)
        rule = next((r for r in spec.uniques if r.field in fields), None)
        if rule is None:
            names = [r.field for r in spec.uniques]
            raise DynaormError(f"{spec.name}: find() takes one unique field ({names}), "
                               f"got {sorted(fields)}")
        if set(fields) != set(rule.fields):
            raise KeyTemplateError(f"{spec.name}: find() by {rule.field!r} takes "
                                   f"exactly {sorted(rule.fields)}")
        key = rule.guard_key(fields, spec.name)
        if key is None:  # no value, no guard: nothing can be found by it
            return None
        guard_key = {self.table.pk: key}
        if self.table.sk:
            guard_key[self.table.sk] = key
        for _ in range(FIND_ROUNDS):
            guard = yield from self._get_item_p(guard_key, consistent, (entity,))
            if guard is None or guard.get(OWNER_TYPE, {}).get("S") != spec.type_name:
                return None
            owner = {self.table.pk: guard[OWNER_PK]["S"]}
            if self.table.sk:
                owner[self.table.sk] = guard[OWNER_SK]["S"]
            item = yield from self._get_item_p(owner, consistent, (entity,))
            if item is not None and spec.owns(item):
                obj = entity._from_item(item, spec)
                held = rule.guard_key({f: obj.__dict__.get(f) for f in rule.fields},
                                      spec.name)
                if held == key:
                    return obj
            consistent = True  # the guard moved under us: read the latest state
        return None

    # -- commit ----------------------------------------------------------------------
    def _replayed(self, fn: Callable[[Read, LastVersion], R]) -> Proto[R]:
        """``fn(read, last_version)`` with callbacks that read: a callback whose answer is
        not known yet stops ``fn``; the read is made, and ``fn`` runs again from the start
        (it must not change anything before its reads, as prepare/finish/map_failure do)."""
        items: dict[Any, Item | None] = {}
        versions: dict[Any, int] = {}

        def version_key(obj: Entity) -> Any:
            return type(obj), key_id(spec_of(type(obj)).primary_key(obj.__dict__))

        def read(key: PlainKey) -> Item | None:
            kid = key_id(key)
            if kid not in items:
                raise _Need("item", key)
            return items[kid]

        def last_version(obj: Entity) -> int:
            if version_key(obj) not in versions:
                raise _Need("version", obj)
            return versions[version_key(obj)]

        while True:
            try:
                return fn(read, last_version)
            except _Need as need:
                if need.kind == "item":
                    items[key_id(need.arg)] = yield from self._get_item_p(need.arg, True)
                else:
                    versions[version_key(need.arg)] = yield from self._last_version_p(
                        need.arg)

    def _last_version_p(self, obj: Entity) -> Proto[int]:
        """The highest stored version row of ``obj``'s key (0: no history): one reverse,
        consistent query of the partition's version rows."""
        spec = spec_of(type(obj))
        fields = {n: obj.__dict__[n] for n in spec.lookup_fields}
        q = self._history(type(obj), fields).reverse().consistent().limit(1)
        sel = q._selection()
        found = yield from q._collect_p(sel)
        if not found:
            return 0
        return int(sel.decode(found[0]).version)  # type: ignore[attr-defined]

    def _prepare_p(self, staged: list[Entry]
                   ) -> Proto[list[tuple[Entry, InstanceState | None]]]:
        out: list[tuple[Entry, InstanceState | None]] = []
        for entry in staged:
            ready = _ready(entry)
            if ready is not None:  # nothing to read for it
                out.append(ready)
                continue
            if not isinstance(entry, SaveEntry | DeleteEntry):
                action = cast("StagedUpdate[Any] | StagedCheck", entry)
                state = yield from self._replayed(action._prepare)
                out.append((entry, state))
                continue
            state = entry.obj._dynaorm_state
            spec = spec_of(type(entry.obj))
            needs_read = state is None and spec.has_rules and (
                isinstance(entry, DeleteEntry) or entry.overwrite)
            if needs_read:
                key = spec.primary_key(entry.obj.__dict__)
                item = yield from self._get_item_p(key, True)
                if item is not None:
                    state = type(entry.obj)._from_item(item)._dynaorm_state
                elif isinstance(entry, DeleteEntry):
                    raise ItemNotFoundError(f"{spec.name} {key} does not exist",
                                            entity=spec.cls, key=key)
            if state is None and spec.versioned and isinstance(entry, SaveEntry):
                last = yield from self._last_version_p(entry.obj)  # a deleted entity's
                if last:  # kept history
                    entry = replace(entry, after_version=last)
            out.append((entry, state))
        return out

    def _plan_p(self) -> Proto[WritePlan]:
        prepared = yield from self._prepare_p(self._coalesced())
        plan, _ = compile_commit(self.table.name, prepared)
        return plan

    def _commit_p(self) -> Proto[CommitResult]:
        """Everything staged as one atomic write; clears the stage either way."""
        staged = self._coalesced()
        self._staged.clear()
        if not staged:
            return CommitResult()
        with recording() as result:  # the requests sent in this context, drivers' included
            # the common commit reads nothing first: then no protocol of its own for that
            prepared = _all_ready(staged)
            if prepared is None:
                prepared = yield from self._prepare_p(staged)
            plan, outcomes = compile_commit(self.table.name, prepared)
            response: dict[str, Any] = {}
            if plan.ops:  # (sent from here: no protocol layer of its own)
                operation, request, origins, idempotent = self._request(plan)
                try:
                    response = yield Call(operation, request, origins, idempotent)
                except RequestFailed as exc:
                    response = yield from self._failed_p(plan, exc)
        yield from self._finish_p(staged, response, _finished(plan, outcomes, response))
        return result if plan.ops else CommitResult()

    def _direct(self) -> tuple[list[Entry], WritePlan, list[Outcome], Call | None] | None:
        """The common commit (no staged entry needs a read first), planned without the
        commit protocol, the stage taken: its entries, plan, outcomes and the request to
        send (``None``: nothing to write). ``None`` when the protocol must run (nothing
        staged, or a read first). ``Session.commit`` and ``AsyncSession.commit`` send it
        themselves (no generator and driver loop per commit), then :meth:`_settle`."""
        staged = self._coalesced()
        prepared = _all_ready(staged) if staged else None
        if prepared is None:
            return None
        self._staged.clear()
        plan, outcomes = compile_commit(self.table.name, prepared)
        return staged, plan, outcomes, Call(*self._request(plan)) if plan.ops else None

    @staticmethod
    def _settle(staged: list[Entry], plan: WritePlan, outcomes: list[Outcome],
                response: dict[str, Any]) -> tuple[bool, int]:
        """After a direct commit succeeded: objects take the states it left and staged
        actions their results; ``(single, at)``: whether it was one answered request,
        and the first action whose finish needs a read (:meth:`_finish_p` from there;
        -1: none)."""
        single = _finished(plan, outcomes, response)
        return single, _finish_actions(staged, response, single, 0)

    def _finish_p(self, staged: list[Entry], response: dict[str, Any], single: bool,
                  start: int = 0) -> Proto[None]:
        """After a successful commit (:func:`_finished` done): staged actions from
        ``start`` on take their results, in staging order, reading what a lost answer
        left out."""
        at = _finish_actions(staged, response, single, start)
        while at >= 0:  # that action's finish needs a read: replayed with reads
            action: StagedUpdate[Any] | StagedCheck = staged[at]  # type: ignore[assignment]
            yield from self._replayed(
                lambda r, v, a=action: a._finish(response, single, r))  # type: ignore[misc]
            at = _finish_actions(staged, response, single, at + 1)

    def _request(self, plan: WritePlan) -> tuple[str, dict[str, Any], tuple[Any, ...], bool]:
        """(operation, request, origins for hooks, idempotent) that send ``plan``."""
        if len(plan.ops) == 1 and not isinstance(plan.ops[0], ConditionCheck):
            operation, request = plan.single_request()
        else:  # a ConditionCheck alone is a transaction of one
            operation = "TransactWriteItems"
            # a fresh token per commit: 128 random bits (as uuid4's, without its costly
            # object), 32 characters of DynamoDB's 36 at most
            request = plan.transaction_request(os.urandom(16).hex())
        request["ReturnConsumedCapacity"] = "INDEXES"
        origins = write_origins(plan) if self.table._listeners else ()
        idempotent = len(plan.ops) > 1 or not _accumulates(plan.ops[0])  # (a token dedupes)
        return operation, request, origins, idempotent

    def _failed_p(self, plan: WritePlan, exc: RequestFailed) -> Proto[dict[str, Any]]:
        """After ``plan``'s request failed: ``{}`` when an ambiguous attempt was in fact
        applied; else the typed error is raised (reading what it needs to tell which)."""
        outcome = resolve(plan, exc)  # an attempt may have applied: what is stored?
        if outcome == APPLIED:
            return {}
        if isinstance(outcome, DynaormError):
            raise outcome from exc
        error = yield from self._replayed(
            lambda r, v: map_failure(plan, exc, lambda key: r(key) is not None))
        if error is exc:
            raise exc
        raise error from exc

    # -- bulk ------------------------------------------------------------------------
    def _batch_write_p(self, requests: list[dict[str, Any]]) -> Proto[None]:
        pending = {self.table.name: requests}
        try:
            yield from batch_rounds("BatchWriteItem", self.table.name, pending,
                                    "UnprocessedItems")
        except RequestFailed as exc:
            if exc.maybe_applied:
                raise unknown_batch(exc, pending, self.table.key_attributes()) from exc
            raise

    def _save_many_p(self, objs: Iterable[Entity], concurrency: int) -> Proto[None]:
        check_concurrency(concurrency)
        Row = tuple[list[tuple[Entity, Stamps]], Item, PlainKey]
        rows: dict[Any, Row] = {}
        for obj in objs:
            spec = self._spec(obj)
            if spec.has_rules:
                raise DynaormError(f"{spec.name} has unique or versioned rules; save_many "
                                   "cannot keep them; use Session.save and commit")
            pairs = stamps(obj, spec, insert=True)  # Meta.timestamps (a Put: created unless set)
            written = stamped(obj, pairs)
            key = spec.primary_key(written.__dict__)
            item = encode_entity(written, spec, key=key)  # (the key rendered once)
            check_batch_put(spec.cls, key, item)  # the gate every write passes
            ident = key_id(key)
            same = rows.pop(ident, None)  # one key twice: the last object wins
            rows[ident] = ([*(same[0] if same else []), (obj, pairs)], item, key)
        batch = list(rows.values())
        chunks = [batch[i:i + BATCH_WRITE] for i in range(0, len(batch), BATCH_WRITE)]

        def write(chunk: list[Row]) -> Proto[None]:
            yield from self._batch_write_p([{"PutRequest": {"Item": item}}
                                            for _, item, _ in chunk])
            for objs_at_key, item, key in chunk:
                for obj, pairs in objs_at_key:  # all of them now stand for the stored item
                    apply_stamps(obj, pairs)
                    _set_state(obj, InstanceState(key, item))  # (not via pydantic)

        yield from gather([write(c) for c in chunks], concurrency)

    def _delete_many_p(self, objs: Iterable[Entity] | type[Entity],
                       keys: Iterable[Mapping[str, Any]] | None,
                       concurrency: int) -> Proto[None]:
        check_concurrency(concurrency)
        targets: list[tuple[Entity | None, PlainKey]] = []
        if isinstance(objs, type):
            spec = self._spec(objs)
            refuse_rules(spec, "delete_many")
            targets = [(None, self._lookup_key(spec, k)) for k in keys or ()]
        else:
            if keys is not None:
                raise DynaormError("delete_many(objs) takes no keys; "
                                   "delete_many(Entity, keys) does")
            for obj in objs:
                spec = self._spec(obj)
                refuse_rules(spec, "delete_many")
                state = obj._dynaorm_state
                targets.append((obj, state.key if state is not None
                                else spec.primary_key(obj.__dict__)))
        for target, k in targets:  # the gate every write passes
            check_batch_delete(spec.cls if target is None else type(target), k)
        unique = list({key_id(k): k for _, k in targets}.values())
        chunks = [unique[i:i + BATCH_WRITE] for i in range(0, len(unique), BATCH_WRITE)]
        yield from gather([self._batch_write_p([{"DeleteRequest": {"Key": wire_key(k)}}
                                                for k in c]) for c in chunks], concurrency)
        for target, _ in targets:
            if target is not None:
                _set_state(target, None)  # deleted: saving it again inserts
