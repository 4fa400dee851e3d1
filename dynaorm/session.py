"""The unit of work: stage saves and deletes, commit them atomically, read entities back."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from types import TracebackType
from typing import Any, TypeVar, cast, overload

from ._types import Item, PlainKey
from .compile import OWNER_PK, OWNER_SK, OWNER_TYPE, Outcome, Staged, compile_commit
from .entity import Entity, encode_entity, spec_of
from .errors import DynaormError, ItemNotFoundError, KeyTemplateError, TransactionTooLargeError
from .events import CommitResult, write_origins
from .expressions import Condition
from .failures import map_failure
from .keys import key_av
from .outcomes import APPLIED, resolve, unknown_batch
from .plan import ConditionCheck, WritePlan, check_batch_delete, check_batch_put, check_read_key
from .query import Query
from .reading import MAX_WORKERS, batch_get
from .scan import Scan, check_segments
from .spec import EntitySpec
from .stamps import apply_stamps, stamp
from .state import InstanceState
from .table import Table
from .transport import RequestFailed
from .updates import StagedCheck, StagedUpdate

__all__ = ["Session"]

T = TypeVar("T", bound=Entity)
E = TypeVar("E", bound=Entity)
BATCH_GET = 100
#: Items one TransactGetItems reads, at most.
MAX_SNAPSHOT = 100
BATCH_WRITE = 25
MAX_BATCH_ROUNDS = 12


def _key_av(key: PlainKey) -> Item:
    return {k: key_av(v) for k, v in key.items()}


def _key_id(key: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, v["S"] if isinstance(v, dict) else v) for k, v in key.items()))


class Session:
    """A unit of work on one table. Cheap to create; not to be shared between threads."""

    def __init__(self, table: Table) -> None:
        if not isinstance(table, Table):
            raise DynaormError(f"Session() takes a dynaorm Table, got {table!r}")
        self.table = table
        self._staged: dict[int, Staged] = {}  # by object identity, in staging order

    @property
    def _transport(self) -> Any:
        return self.table.transport

    # -- staging -------------------------------------------------------------------
    def _spec(self, obj_or_cls: Any) -> EntitySpec:
        cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
        spec = spec_of(cls)
        if spec.table is not self.table:
            raise DynaormError(f"{spec.name} lives in table {spec.table.name!r}, not in this "
                               f"session's table {self.table.name!r}")
        return spec

    def _stage_key(self, obj: Entity) -> Any:
        """Which stored item an entry stands for: where it is and where it goes. Objects
        coalesce only when both agree (a key move and an insert at the old key do not)."""
        if not isinstance(obj, Entity):  # an s.update() or s.check(): never coalesced
            return id(obj)
        spec = spec_of(type(obj))
        state = obj._dynaorm_state
        new = _key_id(spec.primary_key(obj.__dict__))
        return spec.type_name, new if state is None else _key_id(state.key), new

    def _stage(self, entry: Staged) -> None:
        spec = self._spec(entry.obj)
        spec.primary_key(entry.obj.__dict__)  # a key that cannot render fails here, not later
        self._staged.pop(id(entry.obj), None)  # restaged: its last staging wins
        self._staged[id(entry.obj)] = entry

    def save(self, obj: Entity, *, overwrite: bool = False,
             condition: Condition | None = None) -> None:
        """Stage an insert (new object) or an update (persisted object); with
        ``condition=`` the commit also requires it on the stored item."""
        self._stage(Staged(obj, "save", overwrite, condition=_condition(condition)))

    def delete(self, obj: Entity | type[Entity], /, *, history: bool = False,
               condition: Condition | None = None, **fields: Any) -> None:
        """Stage a delete of an object, or by key: ``s.delete(User, user_id="u1")`` (with
        ``history=True`` a versioned entity's rows go too; ``condition=`` must hold)."""
        if isinstance(obj, type):
            spec = self._spec(obj)
            self._lookup_key(spec, fields)
            obj = obj.model_construct(**fields)  # only its key: entities with rules are
            # read at commit (consistently), like any never-loaded object
        elif fields:
            raise DynaormError("delete(obj) takes no key fields; delete(Entity, **key) does")
        self._stage(Staged(obj, "delete", history=history, condition=_condition(condition)))

    @overload
    def update(self, target: type[T], /, *, upsert: bool = False,
               **fields: Any) -> StagedUpdate[T]: ...
    @overload
    def update(self, target: T, /, *, upsert: bool = False) -> StagedUpdate[T]: ...
    def update(self, target: type[T] | T, /, *, upsert: bool = False,
               **fields: Any) -> StagedUpdate[T]:
        """Stage an update expression by key (``s.update(User, user_id="u1")``) or by a
        loaded object; add actions to what it returns (see :class:`StagedUpdate`)."""
        if isinstance(target, type):
            spec = self._spec(target)
            self._lookup_key(spec, fields)
            staged: StagedUpdate[T] = StagedUpdate(target, fields, None, upsert)
        else:
            if fields:
                raise DynaormError("update(obj) takes no key fields; update(Entity, **key) "
                                   "does")
            spec = self._spec(target)
            key_fields = {n: target.__dict__[n] for n in spec.lookup_fields}
            staged = StagedUpdate(type(target), key_fields, target, upsert)
        self._staged[id(staged)] = Staged(cast(Any, staged), "update")
        return staged

    def check(self, entity: type[Entity], /, *, condition: Condition,
              **fields: Any) -> None:
        """Stage a ConditionCheck: the commit fails (ConditionFailedError) and writes
        nothing unless ``condition`` holds on that stored item."""
        spec = self._spec(entity)
        check = StagedCheck(entity, self._lookup_key(spec, fields), condition)
        self._staged[id(check)] = Staged(cast(Any, check), "check")

    def _coalesced(self) -> list[Staged]:
        """The staged work, one entry per stored item: when two objects stand for the same
        item, the one staged last wins."""
        entries = list(self._staged.values())
        if len(entries) < 2:
            return entries
        by_item: dict[Any, Staged] = {}
        for entry in entries:
            key = self._stage_key(entry.obj)
            by_item.pop(key, None)
            by_item[key] = entry
        return list(by_item.values())

    def rollback(self) -> None:
        """Drop everything staged."""
        self._staged.clear()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.rollback()

    # -- commit --------------------------------------------------------------------
    def plan(self) -> WritePlan:
        """The write plan the next commit would send (reads stored state where needed)."""
        plan, _ = compile_commit(self.table.name, self._prepare(self._coalesced()))
        return plan

    def _prepare(self, staged: list[Staged]) -> list[tuple[Staged, InstanceState | None]]:
        out: list[tuple[Staged, InstanceState | None]] = []
        for entry in staged:
            if entry.action in ("update", "check"):
                action = cast(StagedUpdate[Any] | StagedCheck, entry.obj)
                out.append((entry, action.prepare(self._read_consistent, self._last_version)))
                continue
            state = entry.obj._dynaorm_state
            spec = spec_of(type(entry.obj))
            needs_read = state is None and spec.has_rules and (
                entry.overwrite or entry.action == "delete")
            if needs_read:
                key = spec.primary_key(entry.obj.__dict__)
                item = self._get_item(key, consistent=True)
                if item is not None:
                    state = type(entry.obj)._from_item(item)._dynaorm_state
                elif entry.action == "delete":
                    raise ItemNotFoundError(f"{spec.name} {key} does not exist",
                                            entity=spec.cls, key=key)
            if state is None and spec.versioned and entry.action == "save":
                last = self._last_version(entry.obj)  # a deleted entity's kept history
                if last:
                    entry = entry._replace(after_version=last)
            out.append((entry, state))
        return out

    def commit(self) -> CommitResult:
        """Send everything staged as one atomic write; clears the stage either way.
        Returns what was sent (a :class:`~dynaorm.CommitResult`)."""
        staged = self._coalesced()
        self._staged.clear()
        if not staged:
            return CommitResult()
        with self._transport.recording() as result:
            plan, outcomes = compile_commit(self.table.name, self._prepare(staged))
            response: dict[str, Any] = {}
            if plan.ops:
                response = self._send(plan)
        for outcome in outcomes:
            _finalize(outcome)
        single = len(plan.ops) == 1 and bool(response)  # an applied-but-lost answer: read
        for entry in staged:
            if entry.action in ("update", "check"):
                cast(StagedUpdate[Any] | StagedCheck, entry.obj).finish(
                    response, single, self._read_consistent)
        return result if plan.ops else CommitResult()

    def _send(self, plan: WritePlan) -> dict[str, Any]:
        """Send ``plan``; the response (``{}`` when an ambiguous attempt was found applied)."""
        if len(plan.ops) == 1 and not isinstance(plan.ops[0], ConditionCheck):
            operation, request = plan.single_request()
        else:  # a ConditionCheck alone is a transaction of one
            operation = "TransactWriteItems"
            request = plan.transaction_request(str(uuid.uuid4()))
        request["ReturnConsumedCapacity"] = "INDEXES"
        origins = write_origins(plan) if self.table._listeners else ()
        idempotent = len(plan.ops) > 1 or not _accumulates(plan.ops[0])  # (a token dedupes)
        try:
            out: dict[str, Any] = self._transport.call(operation, request, origins,
                                                       idempotent=idempotent)
        except RequestFailed as exc:
            outcome = resolve(plan, exc)  # an attempt may have applied: what is stored?
            if outcome == APPLIED:
                return {}
            if isinstance(outcome, DynaormError):
                raise outcome from exc
            error = map_failure(plan, exc, self._exists)
            if error is exc:
                raise
            raise error from exc
        return out

    def _last_version(self, obj: Entity) -> int:
        """The highest stored version row of ``obj``'s key (0: no history): one reverse,
        consistent query of the partition's version rows."""
        spec = spec_of(type(obj))
        fields = {n: obj.__dict__[n] for n in spec.lookup_fields}
        last = self.history(type(obj), **fields).reverse().consistent().first()
        return 0 if last is None else int(last.version)  # type: ignore[attr-defined]

    def _read_consistent(self, key: PlainKey) -> Item | None:
        return self._get_item(key, consistent=True)

    def _exists(self, key: PlainKey) -> bool:
        return self._get_item(key, consistent=True) is not None

    # -- reads ---------------------------------------------------------------------
    def _get_item(self, key: PlainKey, consistent: bool = False,
                  origins: tuple[type[Entity], ...] = ()) -> Item | None:
        check_read_key(self.table, key, "/".join(o.__name__ for o in origins) or "item")
        request: dict[str, Any] = {"TableName": self.table.name, "Key": _key_av(key)}
        if consistent:
            request["ConsistentRead"] = True
        item: Item | None = self._transport.call("GetItem", request, origins).get("Item")
        return item

    def _lookup_key(self, spec: EntitySpec, fields: Mapping[str, Any],
                    version: int | None = None) -> PlainKey:
        expected = set(spec.lookup_fields)
        given = set(fields)
        if given != expected:
            missing, extra = sorted(expected - given), sorted(given - expected)
            raise KeyTemplateError(f"{spec.name}: a key lookup takes exactly the fields "
                                   f"{sorted(expected)} (missing {missing}, unexpected {extra})")
        if version is not None and not spec.versioned:
            raise DynaormError(f"{spec.name} is not versioned; get() takes no version")
        return spec.primary_key(fields, version)

    def get(self, entity: type[T], *, consistent: bool = False, version: int | None = None,
            **fields: Any) -> T | None:
        """Read one entity by its key fields (``None`` if absent)."""
        spec = self._spec(entity)
        item = self._get_item(self._lookup_key(spec, fields, version), consistent, (entity,))
        return entity._from_item(item, spec) if item is not None and spec.owns(item) else None

    def get_many(self, entity: type[T], keys: Sequence[Mapping[str, Any]], *,
                 consistent: bool = False, snapshot: bool = False,
                 concurrency: int = 4) -> list[T | None]:
        """Read many entities; results in input order. BatchGetItem, 100 keys a request,
        ``concurrency`` requests in flight; ``snapshot=True``: one TransactGetItems (a
        consistent snapshot of at most 100 distinct items; repeated keys read once)."""
        spec = self._spec(entity)
        _check_concurrency(concurrency)
        wanted = [self._lookup_key(spec, k) for k in keys]
        if snapshot:
            found = self._snapshot(spec, wanted)
        else:
            got = batch_get(self._transport, self.table.name, [_key_av(k) for k in wanted],
                            consistent=consistent, concurrency=concurrency)
            found = got  # by key identity, the same as _key_id gives
        items = [found.get(_key_id(key)) for key in wanted]
        return [entity._from_item(i, spec) if i is not None and spec.owns(i) else None
                for i in items]

    def _snapshot(self, spec: EntitySpec, wanted: list[PlainKey]) -> dict[Any, Item]:
        unique = list({_key_id(k): k for k in wanted}.values())
        if len(unique) > MAX_SNAPSHOT:
            raise TransactionTooLargeError(
                f"{spec.name}: get_many(snapshot=True) reads at most {MAX_SNAPSHOT} distinct "
                f"items in one TransactGetItems, got {len(unique)}")
        if not unique:
            return {}
        request = {"TransactItems": [{"Get": {"TableName": self.table.name,
                                              "Key": _key_av(k)}} for k in unique]}
        out = self._transport.call("TransactGetItems", request)
        found: dict[Any, Item] = {}
        for key, response in zip(unique, out.get("Responses", []), strict=False):
            item = response.get("Item")
            if item is not None:
                found[_key_id(key)] = item
        return found

    def _batch_get(self, request: dict[str, Any]) -> list[Item]:
        items: list[Item] = []
        self._batch("BatchGetItem", "UnprocessedKeys", {self.table.name: request},
                    lambda out: items.extend(out.get("Responses", {}).get(self.table.name, [])))
        return items

    def _batch(self, operation: str, unprocessed: str, pending: dict[str, Any] | None,
               collect: Callable[[dict[str, Any]], object] = lambda out: None) -> None:
        """Send a batch request until nothing is left unprocessed (backoff with jitter)."""
        rounds = 0
        waited = 0.0  # the rounds' waits, like a request's retries, stay within max_wait
        while pending:
            rounds += 1
            if rounds > MAX_BATCH_ROUNDS:
                raise DynaormError(f"{operation} on {self.table.name!r} still had unprocessed "
                                   f"requests after {MAX_BATCH_ROUNDS} rounds")
            if rounds > 1:
                delay = min(self._transport.backoff(rounds - 1),
                            self._transport.max_wait - waited)
                if delay > 0:
                    self._transport._sleep(delay)
                    waited += delay
            try:
                out = self._transport.call(operation, {"RequestItems": pending})
            except RequestFailed as exc:
                if exc.maybe_applied and operation == "BatchWriteItem":
                    raise unknown_batch(exc, pending, self.table.key_attributes()) from exc
                raise
            collect(out)
            pending = out.get(unprocessed) or None

    def find(self, entity: type[T], *, consistent: bool = False, **fields: Any) -> T | None:
        """Read an entity through one of its unique attributes (the guard item)."""
        spec = self._spec(entity)
        for rule in spec.uniques:
            if rule.field in fields:
                if set(fields) != set(rule.fields):
                    raise KeyTemplateError(f"{spec.name}: find() by {rule.field!r} takes "
                                           f"exactly {sorted(rule.fields)}")
                key = rule.guard_key(fields, spec.name)
                if key is None:  # no value, no guard: nothing can be found by it
                    return None
                guard_key = {self.table.pk: key}
                if self.table.sk:
                    guard_key[self.table.sk] = key
                guard = self._get_item(guard_key, consistent)
                if guard is None or guard.get(OWNER_TYPE, {}).get("S") != spec.type_name:
                    return None
                owner = {self.table.pk: guard[OWNER_PK]["S"]}
                if self.table.sk:
                    owner[self.table.sk] = guard[OWNER_SK]["S"]
                item = self._get_item(owner, consistent)
                return entity._from_item(item) if item is not None and spec.owns(item) else None
        names = [r.field for r in spec.uniques]
        raise DynaormError(f"{spec.name}: find() takes one unique field ({names}), "
                           f"got {sorted(fields)}")

    # -- queries -------------------------------------------------------------------
    @overload
    def query(self, entity: type[T], /, *, index: str | None = None,
              **fields: Any) -> Query[T]: ...
    @overload
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> Query[Any]: ...
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> Query[Any]:
        """A lazy query over the partition named by ``fields`` (section 6 of the docs)."""
        for e in (entity, *more):
            self._spec(e)
        shard = fields.pop("shard", None)
        return Query(self._transport, (entity, *more), dict(fields), index, _shard=shard)

    @overload
    def scan(self, entity: type[T], /, *, index: str | None = None,
             segment: int | None = None, segments: int | None = None) -> Scan[T]: ...
    @overload
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None) -> Scan[Any]: ...
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None) -> Scan[Any]:
        """Every item of the given entity types in the table or ``index`` (section 13 of
        the docs); ``segments=N`` reads N segments concurrently, ``segment=i`` only one."""
        for e in (entity, *more):
            self._spec(e)
        if index is not None:
            self.table.index(index)
        chosen = check_segments(segment, segments)
        return Scan(self._transport, (entity, *more), index, chosen, segments)

    def history(self, entity: type[T], **fields: Any) -> Query[T]:
        """The stored versions ``1..n`` of one versioned entity, in version order."""
        spec = self._spec(entity)
        if not spec.versioned:
            raise DynaormError(f"{spec.name} is not versioned")
        self._lookup_key(spec, fields)
        return Query(self._transport, (entity,), dict(fields), None, _history=True)

    # -- bulk ----------------------------------------------------------------------
    def save_many(self, objs: Iterable[Entity], *, concurrency: int = 4) -> None:
        """Bulk load (BatchWriteItem, 25 a request, ``concurrency`` requests in flight):
        fast, not atomic, no rules."""
        _check_concurrency(concurrency)
        rows: dict[Any, tuple[list[Entity], Item, PlainKey]] = {}
        for obj in objs:
            spec = self._spec(obj)
            if spec.has_rules:
                raise DynaormError(f"{spec.name} has unique or versioned rules; save_many "
                                   "cannot keep them; use Session.save and commit")
            stamp(obj, spec, insert=True)  # Meta.timestamps (a Put: created unless set)
            key = spec.primary_key(obj.__dict__)
            item = encode_entity(obj, spec)
            check_batch_put(spec.cls, key, item)  # the gate every write passes
            same = rows.pop(_key_id(key), None)  # one key twice: the last object wins
            rows[_key_id(key)] = ([*(same[0] if same else []), obj], item, key)
        batch = list(rows.values())
        chunks = [batch[i:i + BATCH_WRITE] for i in range(0, len(batch), BATCH_WRITE)]

        def write(chunk: list[tuple[list[Entity], Item, PlainKey]]) -> None:
            self._batch_write([{"PutRequest": {"Item": item}} for _, item, _ in chunk])
            for objs_at_key, item, key in chunk:
                for obj in objs_at_key:  # all of them now stand for the stored item
                    obj._dynaorm_state = InstanceState(key, item)

        if concurrency > 1 and len(chunks) > 1:
            with ThreadPoolExecutor(max_workers=min(concurrency, len(chunks))) as pool:
                for _ in pool.map(write, chunks):
                    pass
        else:
            for chunk in chunks:
                write(chunk)
    def delete_many(self, objs: Iterable[Entity] | type[Entity],
                    keys: Iterable[Mapping[str, Any]] | None = None) -> None:
        """Bulk delete (BatchWriteItem, 25 a request) of objects, or of one entity's keys:
        ``s.delete_many(User, [{"user_id": "u1"}])``. Not atomic, no rules (entities with
        unique or versioned rules are refused, as by ``save_many``)."""
        targets: list[tuple[Entity | None, PlainKey]] = []
        if isinstance(objs, type):
            spec = self._spec(objs)
            _refuse_rules(spec, "delete_many")
            targets = [(None, self._lookup_key(spec, k)) for k in keys or ()]
        else:
            if keys is not None:
                raise DynaormError("delete_many(objs) takes no keys; "
                                   "delete_many(Entity, keys) does")
            for obj in objs:
                spec = self._spec(obj)
                _refuse_rules(spec, "delete_many")
                state = obj._dynaorm_state
                targets.append((obj, state.key if state is not None
                                else spec.primary_key(obj.__dict__)))
        unique = list({_key_id(k): k for _, k in targets}.values())
        for target, k in targets:  # the gate every write passes
            check_batch_delete(spec.cls if target is None else type(target), k)
        for start in range(0, len(unique), BATCH_WRITE):
            self._batch_write([{"DeleteRequest": {"Key": _key_av(k)}}
                               for k in unique[start:start + BATCH_WRITE]])
        for target, _ in targets:
            if target is not None:
                target._dynaorm_state = None  # deleted: saving it again inserts

    def _batch_write(self, requests: list[dict[str, Any]]) -> None:
        self._batch("BatchWriteItem", "UnprocessedItems", {self.table.name: requests})

def _check_concurrency(concurrency: int) -> None:
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or not (
            1 <= concurrency <= MAX_WORKERS):
        raise DynaormError(f"concurrency must be an int in 1..{MAX_WORKERS}, got {concurrency!r}")
def _accumulates(op: Any) -> bool:
    """Whether applying ``op`` twice differs from applying it once (ADD, list appends)."""
    return any(kind in ("ADD", "APPEND", "PREPEND") for kind, _, _ in getattr(op, "clauses", ()))


def _refuse_rules(spec: EntitySpec, what: str) -> None:
    if spec.has_rules:
        raise DynaormError(f"{spec.name} has unique or versioned rules; {what} cannot keep "
                           "them; use Session.delete and commit")


def _condition(condition: Condition | None) -> Condition | None:
    if condition is not None and not isinstance(condition, Condition):
        raise DynaormError(f"condition= takes a condition built with F, got {condition!r}")
    return condition


def _finalize(outcome: Outcome) -> None:
    obj = outcome.obj
    apply_stamps(obj, outcome.stamps)
    obj._dynaorm_state = outcome.state
    if outcome.version is not None:
        obj.version = outcome.version  # type: ignore[attr-defined]

