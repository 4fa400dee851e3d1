"""What both session kinds share before any I/O: staging saves, deletes, updates and
checks, coalescing them per stored item, key lookups, and building queries and scans."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeVar, overload

from dynaorm._types import PlainKey
from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.model.entity import Entity, spec_of
from dynaorm.model.expressions import Condition
from dynaorm.model.keys import key_id
from dynaorm.model.layouts import MovedState
from dynaorm.model.spec import EntitySpec
from dynaorm.model.table import Table
from dynaorm.read.query import Query
from dynaorm.read.scan import Scan, check_segments
from dynaorm.transport.sync import MAX_WORKERS
from dynaorm.write.staged import DeleteEntry, Entry, SaveEntry
from dynaorm.write.updates import StagedCheck, StagedUpdate

__all__ = ["Staging"]

T = TypeVar("T", bound=Entity)


class Staging:
    """The staging half of a unit of work on one table (no I/O)."""

    def __init__(self, table: Table) -> None:
        if not isinstance(table, Table):
            raise DynaormError(f"{type(self).__name__}() takes a dynaorm Table, got {table!r}")
        self.table = table
        self._staged: dict[int, Entry] = {}  # by object identity, in staging order

    def _spec(self, obj_or_cls: Any) -> EntitySpec:
        cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
        spec = spec_of(cls)
        if spec.table is not self.table:
            raise DynaormError(f"{spec.name} lives in table {spec.table.name!r}, not in this "
                               f"session's table {self.table.name!r}")
        return spec

    def _stage_key(self, obj: Any) -> Any:
        """Which stored item an entry stands for: where it is and where it goes. Objects
        coalesce only when both agree (a key move and an insert at the old key do not)."""
        if not isinstance(obj, Entity):  # an s.update() or s.check(): never coalesced
            return id(obj)
        spec = spec_of(type(obj))
        state = obj._dynaorm_state
        new = key_id(spec.primary_key(obj.__dict__))
        return spec.type_name, new if state is None else key_id(state.key), new

    def _stage(self, entry: SaveEntry | DeleteEntry) -> None:
        spec = self._spec(entry.obj)
        spec.primary_key(entry.obj.__dict__)  # a key that cannot render fails here, not later
        self._staged.pop(id(entry.obj), None)  # restaged: its last staging wins
        self._staged[id(entry.obj)] = entry

    def save(self, obj: Entity, *, overwrite: bool = False,
             condition: Condition | None = None) -> None:
        """Stage an insert (new object) or an update (persisted object); with
        ``condition=`` the commit also requires it on the stored item."""
        self._stage(SaveEntry(obj, overwrite, _condition(condition)))

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
        self._stage(DeleteEntry(obj, history, _condition(condition)))

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
            key = self._lookup_key(spec, fields)
            staged: StagedUpdate[T] = StagedUpdate(target, fields, None, upsert, key)
        else:
            if fields:
                raise DynaormError("update(obj) takes no key fields; update(Entity, **key) "
                                   "does")
            spec = self._spec(target)
            if isinstance(target._dynaorm_state, MovedState):  # (it would update the old
                # row under the current names: a row of neither layout)
                raise DynaormError(
                    f"{spec.name} {target._dynaorm_state.key} was read from its previous "
                    "layout (Meta.previous): update() cannot move it; change the object "
                    "and save it (the save moves it), or run dynaorm migrate first")
            key_fields = {n: target.__dict__[n] for n in spec.lookup_fields}
            staged = StagedUpdate(type(target), key_fields, target, upsert)
        self._staged[id(staged)] = staged
        return staged

    def check(self, entity: type[Entity], /, *, condition: Condition,
              **fields: Any) -> None:
        """Stage a ConditionCheck: the commit fails (ConditionFailedError) and writes
        nothing unless ``condition`` holds on that stored item."""
        spec = self._spec(entity)
        check = StagedCheck(entity, self._lookup_key(spec, fields), condition)
        self._staged[id(check)] = check

    def _coalesced(self) -> list[Entry]:
        """The staged work, one entry per stored item: when two objects stand for the same
        item, the one staged last wins."""
        entries = list(self._staged.values())
        if len(entries) < 2:
            return entries
        by_item: dict[Any, Entry] = {}
        for entry in entries:
            obj = entry.obj if isinstance(entry, SaveEntry | DeleteEntry) else entry
            key = self._stage_key(obj)
            by_item.pop(key, None)
            by_item[key] = entry
        return list(by_item.values())

    def rollback(self) -> None:
        """Drop everything staged."""
        self._staged.clear()

    # -- keys and reads' builders ----------------------------------------------------
    def _lookup_key(self, spec: EntitySpec, fields: Mapping[str, Any],
                    version: int | None = None) -> PlainKey:
        expected = set(spec.lookup_fields)
        if version is not None and not spec.versioned and "version" in expected:
            fields, version = {**fields, "version": version}, None  # a key field so named
        given = set(fields)
        if given != expected:
            missing, extra = sorted(expected - given), sorted(given - expected)
            raise KeyTemplateError(f"{spec.name}: a key lookup takes exactly the fields "
                                   f"{sorted(expected)} (missing {missing}, unexpected {extra})")
        if version is not None and not spec.versioned:
            raise DynaormError(f"{spec.name} is not versioned; get() takes no version")
        return spec.primary_key(fields, version)

    def _query(self, entities: tuple[type[Entity], ...], index: str | None,
               fields: dict[str, Any]) -> Query[Any]:
        for e in entities:
            self._spec(e)
        shard = fields.pop("shard", None)
        return Query(self.table.transport, entities, fields, index, _shard=shard)

    def _scan(self, entities: tuple[type[Entity], ...], index: str | None,
              segment: int | None, segments: int | None) -> Scan[Any]:
        for e in entities:
            self._spec(e)
        if index is not None:
            self.table.index(index)
        chosen = check_segments(segment, segments)
        return Scan(self.table.transport, entities, index, chosen, segments)

    def _history(self, entity: type[T], fields: dict[str, Any]) -> Query[T]:
        spec = self._spec(entity)
        if not spec.versioned:
            raise DynaormError(f"{spec.name} is not versioned")
        self._lookup_key(spec, fields)
        return Query(self.table.transport, (entity,), fields, None, _history=True)


def check_concurrency(concurrency: int) -> None:
    """``concurrency=`` of the bulk operations: an int in ``1..MAX_WORKERS``."""
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or not (
            1 <= concurrency <= MAX_WORKERS):
        raise DynaormError(f"concurrency must be an int in 1..{MAX_WORKERS}, got {concurrency!r}")


def refuse_rules(spec: EntitySpec, what: str) -> None:
    """Bulk operations cannot keep unique or versioned rules."""
    if spec.has_rules:
        raise DynaormError(f"{spec.name} has unique or versioned rules; {what} cannot keep "
                           "them; use Session.delete and commit")


def _condition(condition: Condition | None) -> Condition | None:
    if condition is not None and not isinstance(condition, Condition):
        raise DynaormError(f"condition= takes a condition built with F, got {condition!r}")
    return condition
