"""The bulk writes (``save_many``, ``delete_many``) as protocols (pure: a driver performs
them): fast, not atomic, no unique or versioned rules. New objects and keys go in
``BatchWriteItem`` requests (25 a request, grouped per table); loaded objects as the
conditioned single write ``save`` + ``commit`` (or ``delete``) sends, so another writer's
newer state is never overwritten silently. A call that cannot finish raises
:class:`~dynaorm.BulkWriteError` with what was written, what was not and what may have
been."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from dynaorm._types import Item, PlainKey
from dynaorm.core.commit import commit_p, send_p, settle
from dynaorm.core.stage import Stage, check_concurrency
from dynaorm.errors import (
    BulkWriteError,
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    ItemNotFoundError,
    OutcomeUnknownError,
    RequestError,
)
from dynaorm.protocol.steps import Proto, R, gather
from dynaorm.read.batches import batch_rounds
from dynaorm.schema.entity import Entity, encode_entity, prepare_rows, spec_of
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.table import TableSchema
from dynaorm.values.expressions import all_of
from dynaorm.values.keys import key_id, wire_key
from dynaorm.values.revision import new_revision, stamp_of
from dynaorm.values.state import DELETED, InstanceState
from dynaorm.values.times import Stamps, apply_stamps, stamped
from dynaorm.write.delete import DeleteEntry
from dynaorm.write.records import Outcome
from dynaorm.write.render import WritePlan, check_batch, compile_commit
from dynaorm.write.save import SaveEntry

#: Requests one BatchWriteItem carries, at most.
BATCH_WRITE = 25
#: what a BatchWriteItem request stands for (the objects or keys), and the request
Target = tuple[list[Any], dict[str, Any]]


def _batch_write_p(table: TableSchema, targets: list[Target], result: BulkResult
                   ) -> Proto[None]:
    """Send BatchWriteItem rounds of ``targets`` (on ``table``) until nothing is left
    unprocessed, recording in ``result`` what was written, what was not and what may
    have been. Never raises after sending: a definite failure (throttled to the end,
    unprocessed after the last round) leaves the rest not written, a lost answer leaves
    that round unknown. A round is never resent after an attempt that may have been
    applied (a resend could apply over another writer's newer state)."""
    name = table.name
    attrs = [a for a in table.key_attributes() if a is not None]
    pending = targets  # what the next round sends: the previous round's unprocessed

    def collect(out: dict[str, Any]) -> None:
        nonlocal pending
        left = {_request_id(r, attrs)
                for r in (out.get("UnprocessedItems") or {}).get(name, [])}
        for done_targets, request in pending:
            if _request_id(request, attrs) not in left:
                result.written.extend(done_targets)
        pending = [t for t in pending if _request_id(t[1], attrs) in left]

    try:
        yield from batch_rounds("BatchWriteItem", name, {name: [r for _, r in targets]},
                                "UnprocessedItems", collect, idempotent=False)
    except RequestError as exc:  # the round in flight: unknown if it may have applied
        result.fail(pending, exc, unknown=exc.maybe_applied)
    except DynaormError as exc:  # unprocessed after the last round: not written
        result.fail(pending, exc, unknown=False)


def _chunks(rows: Iterable[tuple[TableSchema, R]]) -> list[tuple[TableSchema, list[R]]]:
    """``rows`` by table, in chunks of :data:`BATCH_WRITE` (one request each)."""
    by_table: dict[str, tuple[TableSchema, list[R]]] = {}
    for table, row in rows:
        by_table.setdefault(table.name, (table, []))[1].append(row)
    return [(table, each[i:i + BATCH_WRITE]) for table, each in by_table.values()
            for i in range(0, len(each), BATCH_WRITE)]


#: a loaded object's write of a bulk call, planned (on its own state: nothing to read)
Single = tuple[SaveEntry | DeleteEntry, WritePlan, list[Outcome]]


def _single(entry: SaveEntry | DeleteEntry, state: InstanceState | None) -> Single:
    """The planned write of one object of a bulk call (a plain entity: planned on its
    own state, or as an insert), checked before anything is sent."""
    plan, outcomes = compile_commit([(entry, state)])  # (limits, values: raises here)
    return entry, plan, outcomes


def _bulk_spec(stage: Stage, target: Any, what: str) -> EntitySpec:
    """The spec of ``target`` (an object, in the scope; or an entity class) for the bulk
    call ``what``, which cannot keep unique or versioned rules."""
    spec = stage.spec(target)
    if stage.scope is not None and isinstance(target, Entity):
        stage.scope.obj(spec, target, what)
    if spec.has_rules:
        raise DynaormError(f"{spec.name} has unique or versioned rules; {what} cannot keep "
                           f"them; use Session.{what.removesuffix('_many')} and commit")
    return spec


Row = tuple[list[tuple[Entity, Stamps]], Item, PlainKey]


def save_many_p(stage: Stage, objs: Iterable[Entity], concurrency: int,
                observed: bool) -> Proto[None]:
    """New objects go in BatchWriteItem puts (25 a request, per table); loaded (persisted)
    ones as the conditioned write ``save`` + ``commit`` sends (a lost update is refused,
    attributes the class does not declare are kept). Everything is planned and checked
    before anything is sent; a call that cannot finish raises
    :class:`~dynaorm.BulkWriteError`."""
    check_concurrency(concurrency)
    rows: dict[Any, tuple[TableSchema, Row]] = {}
    loaded = {}
    for obj in objs:
        spec = _bulk_spec(stage, obj, "save_many")
        state = obj._dynaorm_state
        if spec.rules.preparers:  # (key material: a data key, the loaded item's)
            yield from prepare_rows((spec,), () if state is None else (state.item,), True,
                                    lambda: (obj.__dict__,))  # noqa: B023 (its tenant's, at once)
        if state is not None or spec.rules.before.key(obj.__dict__, spec.name) is not None:
            # loaded: the conditioned single write of save + commit; new, of an entity in
            # its migration window: the insert save + commit sends (refused where either
            # layout holds the entity: a blind put would store it twice)
            at = spec.primary_key(obj.__dict__) if state is None else state.key
            ident = (spec.table.name, key_id(at))
            single = _single(SaveEntry(obj), state)
            _refuse_twice(ident in rows or ident in loaded, spec.name, at)
            loaded[ident] = single
            continue
        pairs = spec.rules.stamp(obj, True)  # Meta.timestamps (a Put: created unless set)
        written = stamped(obj, pairs)
        key = spec.primary_key(written.__dict__)
        item = encode_entity(written, spec, key=key)  # (the key rendered once)
        item.update(stamp_of(spec.table, new_revision()))  # (as every write: write/outcomes)
        check_batch(spec.cls, key, item)  # the gate every write passes
        ident = (spec.table.name, key_id(key))
        _refuse_twice(ident in loaded, spec.name, key)
        same = rows.pop(ident, None)  # one key twice: the last object wins
        rows[ident] = (spec.table, ([*(same[1][0] if same else []), (obj, pairs)], item, key))
    result = BulkResult()

    def write(table: TableSchema, chunk: list[Row]) -> Proto[None]:
        targets = [([obj for obj, _ in objs_at_key], {"PutRequest": {"Item": item}})
                   for objs_at_key, item, _ in chunk]
        before = len(result.written)
        yield from _batch_write_p(table, targets, result)
        stored = {id(obj) for obj in result.written[before:]}
        for objs_at_key, item, key in chunk:
            for obj, pairs in objs_at_key:  # all of them now stand for the stored item
                if id(obj) in stored:
                    apply_stamps(obj, pairs)
                    obj._dynaorm_state = InstanceState(key, item)

    protos = [write(table, c) for table, c in _chunks(rows.values())]
    protos += [_single_p(single, observed, result) for single in loaded.values()]
    yield from gather(protos, concurrency)
    result.raise_if_failed("save_many")


def delete_many_p(stage: Stage, objs: Iterable[Entity] | type[Entity],
                  keys: Iterable[Mapping[str, Any]] | None, concurrency: int,
                  observed: bool) -> Proto[None]:
    """Keys and never-loaded objects go in BatchWriteItem deletes (25 a request, per
    table); loaded objects as one DeleteItem each, conditioned on the item being gone or
    still as loaded: every attribute it held (its revision among them, so anything
    another dynaorm writer stored since the load), every declared one it lacked still
    absent (a newer state is never deleted silently). A call that cannot finish raises
    :class:`~dynaorm.BulkWriteError` (``delete_many(Entity, keys)`` reports the keys as
    given)."""
    check_concurrency(concurrency)
    loaded: list[Single] = []
    by_key: list[tuple[Any, DeleteEntry]] = []  # (a migration window: both layouts read)
    if isinstance(objs, type):
        targets, by_key = _deletes_of_keys(stage, objs, keys)
    elif keys is not None:
        raise DynaormError("delete_many(objs) takes no keys; delete_many(Entity, keys) does")
    else:
        targets, loaded = yield from _deletes_of_objects(stage, objs)
        if stage.scope is not None:  # (never-loaded objects: as keys are, above)
            by_key = [(obj, DeleteEntry(obj, condition=stage.by_key(obj, None)))
                      for obj, _, _ in targets]
            targets = []
    grouped: dict[Any, tuple[TableSchema, list[Any], PlainKey]] = {}
    for target, cls, k in targets:
        check_batch(cls, k)  # the gate every write passes
        table = spec_of(cls).table
        grouped.setdefault((table.name, key_id(k)), (table, [], k))[1].append(target)
    result = BulkResult()
    protos = [_batch_write_p(table, [(t, {"DeleteRequest": {"Key": wire_key(k)}})
                                     for t, k in c], result)
              for table, c in _chunks((table, (each, k)) for table, each, k in grouped.values())]
    protos += [_single_p(single, observed, result) for single in loaded]
    protos += [_by_key_p(entry, key, observed, result, stage) for key, entry in by_key]
    yield from gather(protos, concurrency)
    for target in result.written:
        if isinstance(target, Entity):
            target._dynaorm_state = DELETED  # deleted: saving it again inserts
    result.raise_if_failed("delete_many")


def _deletes_of_keys(stage: Stage, cls: type[Entity], keys: Iterable[Mapping[str, Any]] | None
                     ) -> tuple[list[tuple[Any, type[Entity], PlainKey]],
                                list[tuple[Any, DeleteEntry]]]:
    """``delete_many(Entity, keys)``: the batch deletes, or (a key rule, a scope) the
    deletes one by one, each conditioned as a single delete is."""
    spec = _bulk_spec(stage, cls, "delete_many")
    targets = [(k, cls, stage.key(spec, k)) for k in keys or ()]
    by_key = [(k, DeleteEntry(cls.model_construct(**k))) for k, _, _ in targets
              if spec.rules.before.key(k, spec.name) is not None]
    if stage.scope is not None and not by_key:  # (scoped: each conditioned on the
        # stored item being the scope's, which a batch delete cannot say)
        guard = stage.by_key(cls, None)
        by_key = [(k, DeleteEntry(cls.model_construct(**k), condition=guard))
                  for k, _, _ in targets]
    return ([] if by_key else targets), by_key


def _deletes_of_objects(stage: Stage, objs: Iterable[Entity]
                        ) -> Proto[tuple[list[tuple[Any, type[Entity], PlainKey]], list[Single]]]:
    """``delete_many(objs)``: never-loaded objects as batch deletes, loaded ones as one
    delete each, conditioned on the item as loaded (a protocol: key material first)."""
    targets = []
    loaded = []
    seen = set()
    for obj in objs:
        spec = _bulk_spec(stage, obj, "delete_many")
        state = obj._dynaorm_state
        if state is None:
            targets.append((obj, type(obj), spec.primary_key(obj.__dict__)))
            continue
        ident = (spec.table.name, key_id(state.key))
        _refuse_twice(ident in seen, spec.name, state.key)
        seen.add(ident)
        if spec.rules.preparers:  # (key material: the loaded item's)
            yield from prepare_rows((spec,), (state.item,))
        # (a lock, or a row no revision stamped: conditioned as s.delete conditions it)
        whole = not spec.lock and spec.table.revision_attribute in state.item
        entry = DeleteEntry(obj, condition=all_of(state.as_loaded(spec)) if whole else None)
        loaded.append(_single(entry, state))
    for _, cls, k in targets:
        _refuse_twice((spec_of(cls).table.name, key_id(k)) in seen,
                      "delete_many", k)
    return targets, loaded


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

    def failed_by(self, target: Any, error: DynaormError) -> None:
        """``target``'s write raised ``error``: unknown when it may have been applied
        (``OutcomeUnknownError``, a request error after an attempt that may have been),
        else not written."""
        self.failed(target, error, unknown=isinstance(error, OutcomeUnknownError) or (
            isinstance(error, RequestError) and error.maybe_applied))

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


def _single_p(single: Single, observed: bool, result: BulkResult) -> Proto[None]:
    """Send one planned single-object write of a bulk call, recording its outcome (a
    definite failure: not written; ``OutcomeUnknownError``: unknown)."""
    entry, plan, outcomes = single
    obj = entry.obj
    try:
        if plan.ops:  # (nothing changed: nothing to send)
            yield from send_p(plan, outcomes, observed)
    except DynaormError as exc:  # unknown, a failed request, or another writer's change
        if isinstance(exc, ItemNotFoundError) and isinstance(entry, DeleteEntry):
            result.written.append(obj)  # already gone: deleted, as asked
            return
        if isinstance(exc, ConditionFailedError):  # (a delete's own "as loaded" one)
            state = obj._dynaorm_state
            exc = _changed(obj, exc.key if state is None else state.key)
        result.failed_by(obj, exc)
        return
    settle(outcomes)
    result.written.append(obj)


def _by_key_p(entry: DeleteEntry, key: Any, observed: bool, result: BulkResult,
              stage: Stage | None) -> Proto[None]:
    """Delete by ``key`` an entity declaring ``Meta.previous`` (in its migration window):
    read under both layouts, then deleted where it is (its old row, guards and all), or
    already gone (deleted, as asked); reported as ``key``."""
    try:
        yield from commit_p([entry], observed, stage=stage)  # (scoped: its errors too)
    except ItemNotFoundError:
        pass  # (gone under both layouts: deleted, as asked)
    except DynaormError as exc:
        result.failed_by(key, exc)
        return
    result.written.append(key)


def _changed(obj: Entity, key: PlainKey | None) -> ConcurrentModificationError:
    return ConcurrentModificationError(
        f"{type(obj).__name__} {key}: changed by another writer since it was "
        "loaded; not deleted (reload it to delete the newer state)",
        entity=type(obj), key=key)


def _refuse_twice(twice: bool, name: str, key: PlainKey) -> None:
    if twice:
        raise DynaormError(f"{name} {key}: one stored item twice in one bulk call, one of "
                           "them loaded; pass one object per item")


def _request_id(request: dict[str, Any], attrs: list[str]) -> tuple[Any, ...]:
    """The identity of a BatchWriteItem request by the key it writes."""
    body = request.get("PutRequest", {}).get("Item") or request["DeleteRequest"]["Key"]
    return tuple((a, *(tuple(body[a].items()) if a in body else ())) for a in attrs)
