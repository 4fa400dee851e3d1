"""What a session is before any I/O (pure): its :class:`Stage`, the writes it staged
(saves, deletes, updates and checks of entities of any table bound to its client, one per
stored item once coalesced) and the scope it stages and reads in (a table, or a client);
key lookups, and what the hooks are told an operation is. The protocols of
:mod:`dynaorm.core.lookups`, :mod:`dynaorm.core.commit` and :mod:`dynaorm.core.bulk`
take the stage; :class:`dynaorm.client.session.BaseSession` holds one for each session."""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from dynaorm._types import PlainKey
from dynaorm.core.scope import Scope
from dynaorm.errors import DynaormError, KeyTemplateError
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.policy import MAX_CONCURRENCY
from dynaorm.schema.entity import Entity, spec_of
from dynaorm.schema.paths import check_names
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.table import TableSchema
from dynaorm.values.expressions import Condition

if TYPE_CHECKING:  # the write path loads with the first staged write (a program that
    # only reads never pays for it: tests/system/test_import.py)
    from dynaorm.write.records import StagedWrite



class Stage:
    """The writes a session staged, by object identity in staging order, and its scope:
    ``table`` and every table bound to the same client, or (``table=None``) every table
    bound to ``client``. What a client is, pure code does not know: it compares
    identities."""

    __slots__ = ("_given", "idempotency_key", "key_commits", "keyed", "receipts", "scope",
                 "table", "takes", "writes")

    def __init__(self, table: TableSchema | None, client: object,
                 scope: Mapping[str, Any] | None, idempotency_key: str | None,
                 receipts: TableSchema | None):
        self.table = table
        self._given = client
        #: the table that keeps the receipts of the session's keyed commits, resolved when
        #: the session is made (its client's ``receipts``; ``None``: every table written)
        self.receipts = receipts
        #: the tenant scope every key is checked against (``None``: unscoped)
        self.scope = None if scope is None else Scope.of(scope)
        self.writes: dict[int, StagedWrite] = {}
        #: whether the writes :meth:`take` took last are of an entity whose rules prepare
        #: key material (``Rules.keyed``: its commit asks for it; a plain commit asks nothing)
        self.keyed = False
        #: the idempotency key the session commits with (``Session(...,
        #: idempotency_key=)``; ``None``: none unless ``commit()`` is given one)
        self.idempotency_key = idempotency_key
        #: the commits of writes made under that key so far (a later one of other writes
        #: is a mismatch: its error says why)
        self.key_commits = 0
        #: how many times :meth:`take` took the staged writes (a commit): :meth:`held`
        self.takes = 0

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """One operation's staging (``Session.run``): when it fails, what it staged since
        it began, or since its last commit, is dropped; what was staged before it stays
        staged unless it committed it. Its half is never written by a later commit."""
        before, takes = dict(self.writes), self.takes
        try:
            yield
        except BaseException:
            self.writes.clear()
            if self.takes == takes:
                self.writes.update(before)
            raise

    @property
    def client(self) -> Any:
        """The client of the scope: its table's (as the table is bound now), or the one
        it was made with."""
        return self._given if self.table is None else self.table.db

    def spec(self, obj_or_cls: Any) -> EntitySpec:
        """The spec of an entity (class or object) of the scope, else ``DynaormError``."""
        cls = obj_or_cls if isinstance(obj_or_cls, type) else type(obj_or_cls)
        spec = spec_of(cls)
        table = spec.table
        if table is not self.table and table.db is not self.client:
            if self.table is None and getattr(table.db, "_origin", None) is self.client:
                self._given = table.db  # (its table, given this client, was pointed
                return spec  # elsewhere by a test fixture: the session follows it)
            mine = (f"this session's table {self.table.name!r}" if self.table is not None
                    else f"this session's client ({self.client!r})")
            raise DynaormError(
                f"{spec.name} lives in table {table.name!r}, which is bound to another "
                f"client than {mine}: a session commits the tables of one client (bind "
                "both tables to one Client)")
        if self.scope is not None:
            self.scope.entity(spec)
        return spec

    def key(self, spec: EntitySpec, fields: Mapping[str, Any],
            version: int | None = None) -> PlainKey:
        """The primary key a lookup by ``fields`` (exactly the key templates' fields)
        names."""
        expected = set(spec.lookup_fields)
        unversioned = version is not None and not spec.rules.sort_keys.latest
        if unversioned and "version" in expected:  # a key field so named
            fields, version, unversioned = {**fields, "version": version}, None, False
        given = set(fields)
        if given != expected:
            missing, extra = sorted(expected - given), sorted(given - expected)
            raise KeyTemplateError(f"{spec.name}: a key lookup takes exactly the fields "
                                   f"{sorted(expected)} (missing {missing}, unexpected {extra})")
        if unversioned:
            raise DynaormError(f"{spec.name} is not versioned; get() takes no version")
        if self.scope is None:
            return spec.primary_key(fields, version)
        self.scope.fields(spec, fields, "a key")
        key = spec.primary_key(fields, version)
        self.scope.key(spec, key, "a key")  # (parsed back: the key decides the scope)
        return key

    def by_key(self, entity: Any, condition: Condition | None) -> Condition | None:
        """``condition`` of a write by key of ``entity`` (a class or an object; of an
        item never read) held to the scope: ANDed with :meth:`Scope.guard` in a scoped
        session (a stale key's row is not its)."""
        if self.scope is None:
            return condition
        guard = self.scope.guard(self.spec(entity))
        return guard if condition is None else condition & guard

    def add(self, entry: StagedWrite) -> None:
        """Stage ``entry`` (one of an object: its key must render, and a write of the same
        object staged before is replaced)."""
        obj = entry._obj
        if obj is None:  # (an update or a check by key: its own)
            self.writes[id(entry)] = entry
            return
        spec = self.spec(obj)
        key = spec.primary_key(obj.__dict__)  # a key that cannot render fails now
        if self.scope is not None:
            self.scope.obj(spec, obj, "a write")
            self.scope.key(spec, key, "a write")
        self.writes.pop(id(obj), None)  # restaged: its last staging wins
        self.writes[id(obj)] = entry

    def coalesced(self) -> list[StagedWrite]:
        """The staged work, one write per stored item: when two objects stand for the same
        item, the one staged last wins."""
        entries = list(self.writes.values())
        if len(entries) < 2:
            return entries
        by_item: dict[Any, StagedWrite] = {}
        for entry in entries:
            key = entry._stage_key()
            by_item.pop(key, None)
            by_item[key] = entry
        return list(by_item.values())

    def take(self) -> list[StagedWrite]:
        """The staged work, coalesced; the stage is cleared either way. Every staged
        entity's table is checked again to be in the scope (a table may have been rebound
        since it was staged: its writes would go elsewhere)."""
        self.keyed = False
        self.takes += 1
        try:
            for entry in self.writes.values():
                spec = self.spec(entry._entity)
                if spec.rules.keyed:
                    self.keyed = True
                if self.scope is not None and entry._obj is not None:  # (changed since?)
                    self.scope.obj(spec, entry._obj, "a commit")
            return self.coalesced()
        finally:
            self.writes.clear()

    def staged(self) -> list[str]:
        """Each staged write as ``"<kind> <Entity> <key>"`` (``"save User {'pk': ...}"``),
        in staging order: what a dropped session loses."""
        found = []
        for entry in self.writes.values():
            obj = entry._obj
            key = getattr(entry, "key", None) if obj is None else spec_of(
                type(obj)).primary_key(obj.__dict__)
            kind = type(entry).__name__.removesuffix("Entry").removeprefix("Staged").lower()
            found.append(f"{kind} {entry._entity.__name__} {key}")
        return found

    def same_table(self, entities: tuple[type[Entity], ...], what: str) -> TableSchema:
        """The one table a query or scan of ``entities`` reads (a read is of one table)."""
        specs = [self.spec(e) for e in entities]
        table = specs[0].table
        for other in specs[1:]:
            if other.table is not table:
                raise DynaormError(f"a {what} reads one table: {entities[0].__name__} "
                                   f"lives in {table.name!r}, {other.cls.__name__} in "
                                   f"{other.table.name!r}")
        return table


def describe(name: str, entities: Iterable[type[Entity]]) -> Operation:
    """What the hooks are told a session operation on ``entities`` is: its name, the
    tables it is for, the entity classes."""
    classes = tuple(dict.fromkeys(entities))
    tables = tuple(dict.fromkeys(spec_of(e).table.name for e in classes))
    return Operation(name, tables, classes)


def check_concurrency(concurrency: int) -> None:
    """``concurrency=`` of the bulk operations: an int in ``1..MAX_CONCURRENCY``."""
    if not isinstance(concurrency, int) or isinstance(concurrency, bool) or not (
            1 <= concurrency <= MAX_CONCURRENCY):
        raise DynaormError(f"concurrency must be an int in 1..{MAX_CONCURRENCY}, "
                           f"got {concurrency!r}")


def condition_given(condition: Condition | None, obj: Entity) -> Condition | None:
    if condition is not None and not isinstance(condition, Condition):
        raise DynaormError(f"condition= takes a condition built with F, got {condition!r}")
    if condition is not None:
        check_names([type(obj)], condition)
    return condition
