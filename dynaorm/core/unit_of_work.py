"""The unit of work: staging (:mod:`dynaorm.core.staging`) plus every operation that does
I/O, written once as a protocol (:mod:`dynaorm.transport.steps`): the commit
(:class:`dynaorm.core.commit.Commit`), get, find, get_many (batches and snapshots),
save_many and delete_many. :class:`~dynaorm.Session` runs them through the sync transport,
``AsyncSession`` through the async one; neither decides anything itself."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeVar

from dynaorm._types import Item, PlainKey
from dynaorm.core.commit import Commit
from dynaorm.core.staging import Staging, check_concurrency, refuse_rules
from dynaorm.errors import DynaormError, KeyTemplateError, RequestError, TransactionTooLargeError
from dynaorm.model.entity import Entity, encode_entity, spec_of
from dynaorm.model.keys import key_id, wire_key
from dynaorm.model.rows import OWNER_PK, OWNER_SK, OWNER_TYPE
from dynaorm.model.spec import EntitySpec
from dynaorm.model.state import InstanceState
from dynaorm.model.timestamps import Stamps, apply_stamps, stamped, stamps
from dynaorm.read.batches import batch_get_p, batch_rounds
from dynaorm.transport.steps import Proto, call, gather
from dynaorm.write.outcomes import unknown_batch
from dynaorm.write.render import WritePlan, check_batch_delete, check_batch_put, check_read_key

__all__ = ["FIND_ROUNDS", "UnitOfWork"]

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
    def _commit(self) -> Commit:
        """The commit of everything staged (the stage is taken: cleared either way)."""
        commit = self._new_commit(observed=bool(self.table._listeners))
        self._staged.clear()
        return commit

    def _new_commit(self, *, observed: bool) -> Commit:
        """A commit of what is staged now (the stage is left as it is)."""
        return Commit(self.table.name, self._coalesced(), read=self._read_item_p,
                      last_version=self._last_version_p, observed=observed)

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
    def _batch_write_p(self, requests: list[dict[str, Any]]) -> Proto[None]:
        pending = {self.table.name: requests}
        try:
            yield from batch_rounds("BatchWriteItem", self.table.name, pending,
                                    "UnprocessedItems")
        except RequestError as exc:
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
                    obj._dynaorm_state = InstanceState(key, item)

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
                target._dynaorm_state = None  # deleted: saving it again inserts
