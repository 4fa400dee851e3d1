"""The unit of work: staging (:mod:`dynaorm.core.staging`) plus every operation that does
I/O, written once as a protocol (:mod:`dynaorm.protocol.steps`): the commit
(:class:`dynaorm.core.commit.Commit`), get, find and get_many (batches and snapshots), and
the bulk writes (:mod:`dynaorm.core.bulk`), each on its entities' tables.
:class:`~dynaorm.Session` runs them through its client's sync driver, ``AsyncSession``
through the async one; neither decides anything itself."""

from __future__ import annotations

import copy
from collections.abc import Generator, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

from dynaorm._types import Item, PlainKey
from dynaorm.core.staging import Staging, check_concurrency, history_spec
from dynaorm.errors import DynaormError, KeyTemplateError, TransactionTooLargeError
from dynaorm.model.entity import Entity, answer_reader, spec_of
from dynaorm.model.keys import key_id, key_value, wire_key
from dynaorm.model.rows import OWNER_PK, OWNER_SK, OWNER_TYPE, parse_version_sk
from dynaorm.model.spec import EntitySpec
from dynaorm.model.state import InstanceState
from dynaorm.model.table import TableSchema
from dynaorm.model.unclaimed import note_unclaimed
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.steps import Proto, call
from dynaorm.read.batches import batch_get_p
from dynaorm.write.limits import check_read_key

if TYPE_CHECKING:  # the write path loads with the first commit, plan or bulk write: a
    # program that only reads never pays for it (tests/system/test_import.py)
    from dynaorm.core.commit import Commit
    from dynaorm.model.layouts import MovedState
    from dynaorm.write.render import WritePlan
    from dynaorm.write.staged import StagedWrite

__all__ = ["FIND_ROUNDS", "READS", "UnitOfWork", "describe", "get_item_p"]

T = TypeVar("T", bound=Entity)
#: Items one TransactGetItems reads, at most.
MAX_SNAPSHOT = 100
#: Times ``find`` reads a guard and its owner before concluding nobody holds the value.
FIND_ROUNDS = 3


def get_item_p(table: TableSchema, key: PlainKey, consistent: bool = False,
               origins: tuple[type[Entity], ...] = (), reader: Any = None
               ) -> Proto[Item | None]:
    """The item at ``key`` in ``table`` (GetItem; a key DynamoDB would refuse raises
    before anything is sent); with ``reader`` (:func:`~dynaorm.model.entity.answer_reader`),
    the object it read from the answer's bytes where it could."""
    check_read_key(table, key, "/".join(o.__name__ for o in origins) or "item")
    request: dict[str, Any] = {"TableName": table.name, "Key": wire_key(key)}
    if consistent:
        request["ConsistentRead"] = True
    out = yield from call("GetItem", request, origins, reader=reader)
    item: Item | None = out.get("Item")
    return item


def _old_last_version_p(spec: EntitySpec, fields: dict[str, Any]) -> Proto[int]:
    """The highest version row kept under the previous layout's key of the entity with
    ``fields`` (a deleted entity's history not moved yet: a new object continues it, as
    it would once ``migrate`` moves it): a reverse, consistent query of the old
    partition's version rows, filtered to that entity's sort key and old type name."""
    layout = spec.previous
    assert layout is not None and spec.table.sk is not None
    pk, sk = spec.table.pk, spec.table.sk
    first = layout.key(fields, spec.name, 1)
    base = parse_version_sk(first[sk])
    assert base is not None
    type_attr = spec.table.type_attribute
    request: dict[str, Any] = {
        "TableName": spec.table.name, "ConsistentRead": True, "ScanIndexForward": False,
        "KeyConditionExpression": "#p = :p AND begins_with(#s, :v)",
        "ExpressionAttributeNames": {"#p": pk, "#s": sk},
        "ExpressionAttributeValues": {":p": {"S": first[pk]}, ":v": {"S": "v"}}}
    while True:
        out = yield from call("Query", request, (spec.cls,))
        for item in out.get("Items", []):
            parsed = parse_version_sk(key_value(item[sk]))
            if parsed is None or parsed[0] == 0 or parsed[1] != base[1]:
                continue
            if type_attr is None or item.get(type_attr, {}).get("S") == layout.type_name:
                return parsed[0]
        if not out.get("LastEvaluatedKey"):
            return 0
        request["ExclusiveStartKey"] = out["LastEvaluatedKey"]


class _Reads:
    """The reads a commit's staged writes ask for (:class:`dynaorm.write.staged.Reads`):
    consistent, as protocols."""

    def item(self, table: TableSchema, key: PlainKey) -> Generator[Any, Any, Item | None]:
        """One item by key, read consistently."""
        return get_item_p(table, key, True)

    def last_version(self, obj: Entity) -> Generator[Any, Any, int]:
        """The highest stored version row of ``obj``'s key (0: no history): one reverse,
        consistent query of the partition's version rows."""
        spec = spec_of(type(obj))
        fields = {n: obj.__dict__[n] for n in spec.lookup_fields}
        q = history_spec(type(obj), fields).reverse().consistent().limit(1)
        sel = q._selection()
        found = yield from q._collect_p(sel)
        if found:
            return int(sel.decode(found[0]).version)  # type: ignore[attr-defined]
        if spec.previous is None:
            return 0
        return (yield from _old_last_version_p(spec, fields))

    def stored_now(self, spec: EntitySpec, state: MovedState, new_key: PlainKey
                   ) -> Generator[Any, Any, InstanceState | None]:
        """What an object read from its previous layout stands for now."""
        from dynaorm.read.previous import stored_now_p

        return stored_now_p(spec.table.name, spec, state, new_key)


#: the reads of every commit
READS = _Reads()


def describe(name: str, entities: Iterable[type[Entity]]) -> Operation:
    """What the hooks are told a session operation on ``entities`` is: its name, the
    tables it is for, the entity classes."""
    classes = tuple(dict.fromkeys(entities))
    tables = tuple(dict.fromkeys(spec_of(e).table.name for e in classes))
    return Operation(name, tables, classes)


class UnitOfWork(Staging):
    """Staging plus the protocols of every operation that does I/O (see the module)."""

    # -- plain reads -----------------------------------------------------------------
    def _get_p(self, entity: type[T], consistent: bool, version: int | None,
               fields: Mapping[str, Any]) -> Proto[T | None]:
        spec = self._spec(entity)
        key = self._lookup_key(spec, fields, version)
        item = yield from get_item_p(spec.table, key, consistent, (entity,),
                                     answer_reader({spec.type_name: (entity, spec)}))
        if isinstance(item, entity):  # (read from the answer's bytes)
            return item
        if item is not None and spec.owns(item):
            return entity._from_item(item, spec)
        if spec.previous is not None and version is None:  # a migration window
            from dynaorm.read.previous import previous_get_p

            found: T | None = yield from previous_get_p(spec.table.name, spec, fields, key,
                                                         item)
            return found
        if item is not None:
            note_unclaimed(spec.table, item)  # a renamed class: say so, once
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
            found = yield from batch_get_p(spec.table.name, [wire_key(k) for k in wanted],
                                           consistent=consistent, concurrency=concurrency,
                                           reader=answer_reader({spec.type_name: (entity, spec)}))
        items = [found.get(key_id(key)) for key in wanted]
        out: list[T | None] = []
        for item in items:
            if isinstance(item, entity):  # (read from the answer's bytes; asked again: a copy)
                out.append(copy.deepcopy(item) if any(o is item for o in out) else item)
                continue
            if item is not None and spec.owns(item):
                out.append(entity._from_item(item, spec))
                continue
            if item is not None:
                note_unclaimed(spec.table, item)  # a renamed class: say so, once
            out.append(None)
        if spec.previous is not None and not snapshot:
            from dynaorm.read.previous import previous_get_p

            # a migration window: a miss is looked up under either layout, as get does
            for at, obj in enumerate(out):
                if obj is None:
                    out[at] = yield from previous_get_p(spec.table.name, spec, keys[at],
                                                        wanted[at], items[at])
        return out

    def _snapshot_p(self, spec: EntitySpec, wanted: list[PlainKey]) -> Proto[dict[Any, Item]]:
        unique = list({key_id(k): k for k in wanted}.values())
        if len(unique) > MAX_SNAPSHOT:
            raise TransactionTooLargeError(
                f"{spec.name}: get_many(snapshot=True) reads at most {MAX_SNAPSHOT} distinct "
                f"items in one TransactGetItems, got {len(unique)}")
        if not unique:
            return {}
        request = {"TransactItems": [{"Get": {"TableName": spec.table.name,
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
        table = spec.table
        guard_key = {table.pk: key}
        if table.sk:
            guard_key[table.sk] = key
        for _ in range(FIND_ROUNDS):
            guard = yield from get_item_p(table, guard_key, consistent, (entity,))
            if guard is None or guard.get(OWNER_TYPE, {}).get("S") != spec.type_name:
                return None
            owner = {table.pk: guard[OWNER_PK]["S"]}
            if table.sk:
                owner[table.sk] = guard[OWNER_SK]["S"]
            item = yield from get_item_p(table, owner, consistent, (entity,))
            if item is not None and spec.owns(item):
                obj = entity._from_item(item, spec)
                held = rule.guard_key({f: obj.__dict__.get(f) for f in rule.fields},
                                      spec.name)
                if held == key:
                    return obj
            consistent = True  # the guard moved under us: read the latest state
        return None

    # -- commit ----------------------------------------------------------------------
    def _commit(self, observed: bool) -> Commit:
        """The commit of everything staged (the stage is taken: cleared either way);
        ``observed``: hooks are attached (requests carry their actions' origins). Every
        staged entity's table is checked again to be bound to the session's client (a
        table may have been rebound since it was staged: its writes would go elsewhere)."""
        try:
            for entry in self._staged.values():
                self._spec(entry._entity)
            return self._new_commit(observed=observed)
        finally:
            self._staged.clear()

    def _new_commit(self, staged: list[StagedWrite] | None = None, *,
                    observed: bool) -> Commit:
        """A commit of ``staged`` writes (default: what is staged now; the stage is left
        as it is)."""
        from dynaorm.core.commit import Commit

        return Commit(self._coalesced() if staged is None else staged, READS,
                      observed=observed)

    def _plan_p(self) -> Proto[WritePlan]:
        """The write plan the next commit would send (reading what rules need); the
        stage stays as it is."""
        commit = self._new_commit(observed=False)
        yield from commit.prepare()
        return commit.plan()

    # -- bulk ------------------------------------------------------------------------
    def _save_many_p(self, objs: Iterable[Entity], concurrency: int,
                     observed: bool) -> Proto[None]:
        from dynaorm.core.bulk import save_many_p

        return save_many_p(self, objs, concurrency, observed)

    def _delete_many_p(self, objs: Iterable[Entity] | type[Entity],
                       keys: Iterable[Mapping[str, Any]] | None, concurrency: int,
                       observed: bool) -> Proto[None]:
        from dynaorm.core.bulk import delete_many_p

        return delete_many_p(self, objs, keys, concurrency, observed)
