"""What both session kinds share before any I/O: staging saves, deletes, updates and
checks (of entities of any table bound to the session's client), coalescing them per
stored item, key lookups, and building queries and scans."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from dynaorm._types import PlainKey
from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.model.entity import Entity, spec_of
from dynaorm.model.expressions import Condition
from dynaorm.model.spec import EntitySpec
from dynaorm.model.table import TableSchema
from dynaorm.protocol.policy import MAX_CONCURRENCY
from dynaorm.read.query import QuerySpec
from dynaorm.read.scan import ScanSpec, check_segments

if TYPE_CHECKING:  # the write path loads with the first staged write (a program that
    # only reads never pays for it: tests/system/test_import.py)
    from dynaorm.write.entries import DeleteEntry, SaveEntry
    from dynaorm.write.staged import StagedWrite
    from dynaorm.write.updates import StagedUpdate

__all__ = ["Staging"]

T = TypeVar("T", bound=Entity)


class Staging:
    """The staging half of a unit of work (no I/O): on ``table`` and every table bound to
    the same client, or (``table=None``) on every table bound to ``client``. What a client
    is, pure code does not know: it compares identities, and hands the driver a session
    gives it to the reads it builds."""

    #: the classes of the session's reads (sync or async terminals over the same specs)
    _query_class: ClassVar[type[QuerySpec[Any]]] = QuerySpec
    _scan_class: ClassVar[type[ScanSpec[Any]]] = ScanSpec

    def __init__(self, table: TableSchema | None, client: object = None) -> None:
        self.table = table
        """The table the session was made with (``None``: made with a client)."""
        self._given = client
        self._staged: dict[int, StagedWrite] = {}  # by object identity, in staging order

    @property
    def _client(self) -> Any:
        """The client of the session: its table's (as the table is bound now), or the
        one it was made with."""
        return self._given if self.table is None else self.table.db

    def _spec(self, obj_or_cls: Any) -> EntitySpec:
        cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
        spec = spec_of(cls)
        table = spec.table
        if table is not self.table and table.db is not self._client:
            mine = (f"this session's table {self.table.name!r}" if self.table is not None
                    else f"this session's client ({self._client!r})")
            raise DynaormError(
                f"{spec.name} lives in table {table.name!r}, which is bound to another "
                f"client than {mine}: a session commits the tables of one client (bind "
                "both tables to one Client)")
        return spec

    def _stage(self, entry: SaveEntry | DeleteEntry) -> None:
        spec = self._spec(entry.obj)
        spec.primary_key(entry.obj.__dict__)  # a key that cannot render fails here, not later
        self._staged.pop(id(entry.obj), None)  # restaged: its last staging wins
        self._staged[id(entry.obj)] = entry

    def save(self, obj: Entity, *, overwrite: bool = False,
             condition: Condition | None = None) -> None:
        """Stage an insert (new object) or an update (persisted object); with
        ``condition=`` the commit also requires it on the stored item."""
        from dynaorm.write.entries import SaveEntry

        self._stage(SaveEntry(obj, overwrite, _condition(condition)))

    def delete(self, obj: Entity | type[Entity], /, *, history: bool = False,
               condition: Condition | None = None, **fields: Any) -> None:
        """Stage a delete of an object, or by key: ``s.delete(User, user_id="u1")`` (with
        ``history=True`` a versioned entity's rows go too; ``condition=`` must hold)."""
        from dynaorm.write.entries import DeleteEntry

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
        from dynaorm.model.layouts import MovedState
        from dynaorm.write.updates import StagedUpdate

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
        from dynaorm.write.updates import StagedCheck

        spec = self._spec(entity)
        check = StagedCheck(entity, self._lookup_key(spec, fields), condition)
        self._staged[id(check)] = check

    def _coalesced(self) -> list[StagedWrite]:
        """The staged work, one write per stored item: when two objects stand for the same
        item, the one staged last wins."""
        entries = list(self._staged.values())
        if len(entries) < 2:
            return entries
        by_item: dict[Any, StagedWrite] = {}
        for entry in entries:
            key = entry._stage_key()
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
               fields: dict[str, Any], driver: object) -> Any:
        for e in entities:
            self._spec(e)
        _same_table(entities, "query")
        shard = fields.pop("shard", None)
        return self._query_class(entities, fields, index, _shard=shard, _driver=driver)

    def _scan(self, entities: tuple[type[Entity], ...], index: str | None,
              segment: int | None, segments: int | None, driver: object) -> Any:
        for e in entities:
            self._spec(e)
        table = _same_table(entities, "scan")
        if index is not None:
            table.index(index)
        chosen = check_segments(segment, segments)
        return self._scan_class(entities, index, chosen, segments, _driver=driver)

    def _history(self, entity: type[T], fields: dict[str, Any], driver: object) -> Any:
        spec = self._spec(entity)
        if not spec.versioned:
            raise DynaormError(f"{spec.name} is not versioned")
        self._lookup_key(spec, fields)
        return self._query_class((entity,), fields, None, _history=True, _driver=driver)


def history_spec(entity: type[T], fields: dict[str, Any]) -> QuerySpec[T]:
    """The pure query over one versioned entity's stored versions (what a commit reads to
    continue a kept history: run by the commit's own driver)."""
    return QuerySpec((entity,), fields, None, _history=True)


def _same_table(entities: tuple[type[Entity], ...], what: str) -> TableSchema:
    """The one table a query or scan of ``entities`` reads (a read is of one table)."""
    table = spec_of(entities[0]).table
    for other in entities[1:]:
        if spec_of(other).table is not table:
            raise DynaormError(f"a {what} reads one table: {entities[0].__name__} lives in "
                               f"{table.name!r}, {other.__name__} in "
                               f"{spec_of(other).table.name!r}")
    return table


def check_concurrency(concurrency: int) -> None:
    """``concurrency=`` of the bulk operations: an int in ``1..MAX_CONCURRENCY``."""
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or not (
            1 <= concurrency <= MAX_CONCURRENCY):
        raise DynaormError(f"concurrency must be an int in 1..{MAX_CONCURRENCY}, "
                           f"got {concurrency!r}")


def refuse_rules(spec: EntitySpec, what: str) -> None:
    """Bulk operations cannot keep unique or versioned rules."""
    if spec.has_rules:
        raise DynaormError(f"{spec.name} has unique or versioned rules; {what} cannot keep "
                           "them; use Session.delete and commit")


def _condition(condition: Condition | None) -> Condition | None:
    if condition is not None and not isinstance(condition, Condition):
        raise DynaormError(f"condition= takes a condition built with F, got {condition!r}")
    return condition
