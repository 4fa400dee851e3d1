"""The unit of work: staging (:mod:`dynaorm.core.staging`) plus every operation that does
I/O, written once as a protocol (:mod:`dynaorm.transport.steps`): the commit
(:class:`dynaorm.core.commit.Commit`), get, find, get_many (batches and snapshots),
save_many and delete_many. :class:`~dynaorm.Session` runs them through the sync transport,
``AsyncSession`` through the async one; neither decides anything itself."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from dynaorm._types import Item, PlainKey
from dynaorm.core.commit import Commit
from dynaorm.core.staging import Staging, check_concurrency, refuse_rules
from dynaorm.errors import (
    BulkWriteError,
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    ItemNotFoundError,
    KeyTemplateError,
    OutcomeUnknownError,
    RequestError,
    TransactionTooLargeError,
)
from dynaorm.model.entity import Entity, encode_entity, spec_of
from dynaorm.model.expressions import Condition, all_of
from dynaorm.model.keys import key_id, wire_key
from dynaorm.model.rows import OWNER_PK, OWNER_SK, OWNER_TYPE
from dynaorm.model.spec import EntitySpec
from dynaorm.model.state import DELETED, InstanceState
from dynaorm.model.timestamps import Stamps, apply_stamps, stamped, stamps
from dynaorm.read.batches import batch_get_p, batch_rounds
from dynaorm.read.previous import previous_get_p
from dynaorm.transport.steps import Proto, call, gather
from dynaorm.write.conditions import stored_as
from dynaorm.write.render import WritePlan, check_batch_delete, check_batch_put, check_read_key
from dynaorm.write.staged import DeleteEntry, SaveEntry

__all__ = ["FIND_ROUNDS", "BulkResult", "UnitOfWork"]

T = TypeVar("T", bound=Entity)
R = TypeVar("R")
#: Items one TransactGetItems reads, at most.
MAX_SNAPSHOT = 100
BATCH_WRITE = 25
#: Times ``find`` reads a guard and its owner before concluding nobody holds the value.
FIND_ROUNDS = 3


class UnitOfWork(Staging):
    """Staging plus the protocols of every operation that does I/O (see the module)."""

    # -- plain reads -----------------------------------------------------------------
    def _get_request(self, key: PlainKey, consistent: bool,
                     origins: tuple[type[Entity], ...]) -> dict[str, Any]:
        """The GetItem request of ``key`` (checked: a key DynamoDB would refuse raises)."""
        check_read_key(self.table, key, "/".join(o.__name__ for o in origins) or "item")
        request: dict[str, Any] = {"TableName": self.table.name, "Key": wire_key(key)}
        if consistent:
            request["ConsistentRead"] = True
        return request

    def _get_item_p(self, key: PlainKey, consistent: bool = False,
                    origins: tuple[type[Entity], ...] = ()) -> Proto[Item | None]:
        out = yield from call("GetItem", self._get_request(key, consistent, origins), origins)
        item: Item | None = out.get("Item")
        return item

    def _get_p(self, entity: type[T], consistent: bool, version: int | None,
               fields: Mapping[str, Any]) -> Proto[T | None]:
        spec = self._spec(entity)
        key = self._lookup_key(spec, fields, version)
        item = yield from self._get_item_p(key, consistent, (entity,))
        if item is not None and spec.owns(item):
            return entity._from_item(item, spec)
        if spec.previous is not None and version is None:  # a migration window
            found: T | None = yield from previous_get_p(self.table.name, spec, fields, key,
                                                         item)
            return found
        return None

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
    def _commit(self) -> Commit:
        """The commit of everything staged (the stage is taken: cleared either way)."""
        commit = self._new_commit(observed=bool(self.table._listeners))
        self._staged.clear()
        return commit

    def _new_commit(self, staged: list[Any] | None = None, *, observed: bool) -> Commit:
        """A commit of ``staged`` entries (default: what is staged now; the stage is left
        as it is)."""
        return Commit(self.table.name, self._coalesced() if staged is None else staged,
                      read=self._read_item_p, last_version=self._last_version_p,
                      observed=observed)

    def _plan_p(self) -> Proto[WritePlan]:
        """The write plan the next commit would send (reading what rules need); the
        stage stays as it is."""
        commit = self._new_commit(observed=False)
        yield from commit.prepare()
        return commit.plan()

    def _read_item_p(self, key: PlainKey) -> Proto[Item | None]:
        """One item by key, read consistently (what a commit reads to plan or settle)."""
        return self._get_item_p(key, True)

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

    # -- bulk ------------------------------------------------------------------------
    def _batch_write_p(self, targets: list[tuple[list[Any], dict[str, Any]]],
                       result: BulkResult) -> Proto[None]:
        """Send BatchWriteItem rounds of ``targets`` (what each request stands for, and
        the request) until nothing is left unprocessed, recording in ``result`` what was
        written, what was not and what may have been. Never raises after sending: a
        definite failure (throttled to the end, unprocessed after the last round) leaves
        the rest not written, a lost answer leaves that round unknown. A round is never
        resent after an attempt that may have been applied (a resend could apply over
        another writer's newer state)."""
        table = self.table.name
        attrs = [a for a in self.table.key_attributes() if a is not None]
        pending = targets  # what the next round sends: the previous round's unprocessed

        def collect(out: dict[str, Any]) -> None:
            nonlocal pending
            left = {_request_id(r, attrs)
                    for r in (out.get("UnprocessedItems") or {}).get(table, [])}
            for done_targets, request in pending:
                if _request_id(request, attrs) not in left:
                    result.written.extend(done_targets)
            pending = [t for t in pending if _request_id(t[1], attrs) in left]

        try:
            yield from batch_rounds("BatchWriteItem", table, {table: [r for _, r in targets]},
                                    "UnprocessedItems", collect, idempotent=False)
        except RequestError as exc:  # the round in flight: unknown if it may have applied
            result.fail(pending, exc, unknown=exc.maybe_applied)
        except DynaormError as exc:  # unprocessed after the last round: not written
            result.fail(pending, exc, unknown=False)

    def _single_commit(self, entry: SaveEntry | DeleteEntry, state: InstanceState) -> Commit:
        """The planned commit of one loaded object of a bulk call (a plain entity: planned
        on its own state, nothing to read), checked before anything is sent."""
        commit = self._new_commit([entry], observed=bool(self.table._listeners))
        commit.prepared = [(entry, state)]
        commit.plan()  # (limits, values: raises here, before anything is sent)
        return commit

    def _save_many_p(self, objs: Iterable[Entity], concurrency: int) -> Proto[None]:
        """New objects go in BatchWriteItem puts (25 a request); loaded (persisted) ones
        as the conditioned write ``save`` + ``commit`` sends (a lost update is refused,
        attributes the class does not declare are kept). Everything is planned and
        checked before anything is sent; a call that cannot finish raises
        :class:`~dynaorm.BulkWriteError`."""
        check_concurrency(concurrency)
        Row = tuple[list[tuple[Entity, Stamps]], Item, PlainKey]
        rows: dict[Any, Row] = {}
        loaded: dict[Any, Commit] = {}
        for obj in objs:
            spec = self._spec(obj)
            if spec.has_rules:
                raise DynaormError(f"{spec.name} has unique or versioned rules; save_many "
                                   "cannot keep them; use Session.save and commit")
            state = obj._dynaorm_state
            if state is not None:  # loaded: the conditioned single write of save + commit
                ident = key_id(state.key)
                commit = self._single_commit(SaveEntry(obj), state)
                _refuse_twice(ident in rows or ident in loaded, spec.name, state.key)
                loaded[ident] = commit
                continue
            pairs = stamps(obj, spec, insert=True)  # Meta.timestamps (a Put: created unless set)
            written = stamped(obj, pairs)
            key = spec.primary_key(written.__dict__)
            item = encode_entity(written, spec, key=key)  # (the key rendered once)
            check_batch_put(spec.cls, key, item)  # the gate every write passes
            ident = key_id(key)
            _refuse_twice(ident in loaded, spec.name, key)
            same = rows.pop(ident, None)  # one key twice: the last object wins
            rows[ident] = ([*(same[0] if same else []), (obj, pairs)], item, key)
        batch = list(rows.values())
        chunks = [batch[i:i + BATCH_WRITE] for i in range(0, len(batch), BATCH_WRITE)]
        result = BulkResult()

        def write(chunk: list[Row]) -> Proto[None]:
            targets = [([obj for obj, _ in objs_at_key], {"PutRequest": {"Item": item}})
                       for objs_at_key, item, _ in chunk]
            before = len(result.written)
            yield from self._batch_write_p(targets, result)
            stored = {id(obj) for obj in result.written[before:]}
            for objs_at_key, item, key in chunk:
                for obj, pairs in objs_at_key:  # all of them now stand for the stored item
                    if id(obj) in stored:
                        apply_stamps(obj, pairs)
                        obj._dynaorm_state = InstanceState(key, item)

        protos = [write(c) for c in chunks]
        protos += [_single_p(commit, result) for commit in loaded.values()]
        yield from gather(protos, concurrency)
        result.raise_if_failed("save_many")

    def _delete_many_p(self, objs: Iterable[Entity] | type[Entity],
                       keys: Iterable[Mapping[str, Any]] | None,
                       concurrency: int) -> Proto[None]:
        """Keys and never-loaded objects go in BatchWriteItem deletes (25 a request);
        loaded objects as a DeleteItem conditioned on the item being gone or still as
        loaded (a newer state is never deleted silently). A call that cannot finish raises
        :class:`~dynaorm.BulkWriteError` (``delete_many(Entity, keys)`` reports the keys
        as given)."""
        check_concurrency(concurrency)
        targets: list[tuple[Any, type[Entity], PlainKey]] = []
        loaded: list[Commit] = []
        if isinstance(objs, type):
            spec = self._spec(objs)
            refuse_rules(spec, "delete_many")
            targets = [(k, objs, self._lookup_key(spec, k)) for k in keys or ()]
        else:
            if keys is not None:
                raise DynaormError("delete_many(objs) takes no keys; "
                                   "delete_many(Entity, keys) does")
            seen: set[Any] = set()
            for obj in objs:
                spec = self._spec(obj)
                refuse_rules(spec, "delete_many")
                state = obj._dynaorm_state
                if state is None:
                    targets.append((obj, type(obj), spec.primary_key(obj.__dict__)))
                    continue
                _refuse_twice(key_id(state.key) in seen, spec.name, state.key)
                seen.add(key_id(state.key))
                entry = DeleteEntry(obj, condition=_still_as_loaded(state.item))
                commit = self._single_commit(entry, state)
                loaded.append(commit)
            for _, _, k in targets:
                _refuse_twice(key_id(k) in seen, "delete_many", k)
        for _, cls, k in targets:  # the gate every write passes
            check_batch_delete(cls, k)
        grouped: dict[Any, tuple[list[Any], PlainKey]] = {}
        for target, _, k in targets:
            grouped.setdefault(key_id(k), ([], k))[0].append(target)
        unique = list(grouped.values())
        chunks = [unique[i:i + BATCH_WRITE] for i in range(0, len(unique), BATCH_WRITE)]
        result = BulkResult()
        protos = [self._batch_write_p([(t, {"DeleteRequest": {"Key": wire_key(k)}})
                                       for t, k in c], result) for c in chunks]
        protos += [_single_p(commit, result) for commit in loaded]
        yield from gather(protos, concurrency)
        for target in result.written:
            if isinstance(target, Entity):
                target._dynaorm_state = DELETED  # deleted: saving it again inserts
        result.raise_if_failed("delete_many")


@dataclass
class BulkResult:
    """What a bulk call did so far: objects (or keys) written, not written, unknown, and
    the error behind each that was not written or is unknown."""

    written: list[Any] = field(default_factory=list)
    not_written: list[Any] = field(default_factory=list)
    unknown: list[Any] = field(default_factory=list)
    errors: list[tuple[Any, DynaormError]] = field(default_factory=list)

    def fail(self, targets: Sequence[tuple[list[Any], Any]], error: DynaormError, *,
             unknown: bool) -> None:
        """Every target of ``targets`` failed with ``error`` (``unknown``: maybe applied)."""
        for each, _ in targets:
            for target in each:
                self.failed(target, error, unknown=unknown)

    def failed(self, target: Any, error: DynaormError, *, unknown: bool) -> None:
        """``target`` failed with ``error`` (``unknown``: it may have been applied)."""
        (self.unknown if unknown else self.not_written).append(target)
        self.errors.append((target, error))

    def raise_if_failed(self, what: str) -> None:
        """:class:`~dynaorm.BulkWriteError` unless everything was written."""
        if not self.not_written and not self.unknown:
            return
        first = self.errors[0][1] if self.errors else None
        raise BulkWriteError(
            f"{what}: {len(self.written)} written, {len(self.not_written)} not written, "
            f"{len(self.unknown)} unknown (may have been applied: read them to see)"
            + (f"; first error: {first}" if first is not None else ""),
            written=self.written, not_written=self.not_written, unknown=self.unknown,
            errors=self.errors) from first


def _single_p(commit: Commit, result: BulkResult) -> Proto[None]:
    """Send one planned single-object commit of a bulk call, recording its outcome (a
    definite failure: not written; ``OutcomeUnknownError``: unknown)."""
    (entry, _), = commit.prepared
    obj = entry.obj  # type: ignore[union-attr]
    if not commit._planned().ops:  # nothing changed: nothing to send
        yield from commit.settle()
        result.written.append(obj)
        return
    try:
        yield from commit.send()
    except ItemNotFoundError as exc:
        if isinstance(entry, DeleteEntry):  # already gone: deleted, as asked
            result.written.append(obj)
        else:
            result.failed(obj, exc, unknown=False)
        return
    except ConditionFailedError as exc:  # (a delete's own "as loaded" condition)
        state = obj._dynaorm_state
        key = exc.key if state is None else state.key
        result.failed(obj, ConcurrentModificationError(
            f"{type(obj).__name__} {key}: changed by another writer since it was "
            "loaded; not deleted (reload it to delete the newer state)",
            entity=type(obj), key=key), unknown=False)
        return
    except DynaormError as exc:  # unknown, a failed request, or another writer's change
        unknown = isinstance(exc, OutcomeUnknownError) or (
            isinstance(exc, RequestError) and exc.maybe_applied)
        result.failed(obj, exc, unknown=unknown)
        return
    yield from commit.settle()
    result.written.append(obj)


def _still_as_loaded(item: Item) -> Condition | None:
    """The condition of a bulk delete of a loaded object: every attribute it was loaded
    with is still stored as loaded (an item already gone counts as deleted)."""
    return all_of(stored_as(item, frozenset(item)))


def _refuse_twice(twice: bool, name: str, key: PlainKey) -> None:
    if twice:
        raise DynaormError(f"{name} {key}: one stored item twice in one bulk call, one of "
                           "them loaded; pass one object per item")


def _request_id(request: dict[str, Any], attrs: list[str]) -> tuple[Any, ...]:
    """The identity of a BatchWriteItem request by the key it writes."""
    body = request.get("PutRequest", {}).get("Item") or request["DeleteRequest"]["Key"]
    return tuple((a, *(tuple(body[a].items()) if a in body else ())) for a in attrs)
