"""The sync edge: :class:`Session`, the unit of work of :mod:`dynaorm.core.unit_of_work` run
through the table's sync transport (each method that does I/O runs one protocol with
:meth:`~dynaorm.transport.sync.Transport.run`; staging is :mod:`dynaorm.core.staging`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, overload

from dynaorm.core.unit_of_work import UnitOfWork
from dynaorm.model.entity import Entity
from dynaorm.read.query import Query
from dynaorm.read.scan import Scan
from dynaorm.transport.events import CommitResult
from dynaorm.transport.sync import Transport
from dynaorm.write.render import WritePlan

__all__ = ["Session"]

T = TypeVar("T", bound=Entity)


class Session(UnitOfWork):
    """A unit of work on one table (``Session(table)``). Cheap to create; not to be shared
    between threads."""

    @property
    def _transport(self) -> Transport:
        return self.table.transport

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
        return self._transport.run(self._plan_p())

    def commit(self) -> CommitResult:
        """Send everything staged as one atomic write; clears the stage either way.
        Returns what was sent (a :class:`~dynaorm.CommitResult`)."""
        return self._transport.run(self._commit().run())

    # -- reads ---------------------------------------------------------------------
    def get(self, entity: type[T], *, consistent: bool = False, version: int | None = None,
            **fields: Any) -> T | None:
        """Read one entity by its key fields (``None`` if absent)."""
        return self._transport.run(self._get_p(entity, consistent, version, fields))

    def get_many(self, entity: type[T], keys: Sequence[Mapping[str, Any]], *,
                 consistent: bool = False, snapshot: bool = False,
                 concurrency: int = 4) -> list[T | None]:
        """Read many entities; results in input order. BatchGetItem, 100 keys a request,
        ``concurrency`` requests in flight; ``snapshot=True``: one TransactGetItems (a
        consistent snapshot of at most 100 distinct items; repeated keys read once)."""
        return self._transport.run(
            self._get_many_p(entity, keys, consistent, snapshot, concurrency))

    def find(self, entity: type[T], *, consistent: bool = False, **fields: Any) -> T | None:
        """Read an entity through one of its unique attributes (the guard item); ``None``
        unless the owner, when read, still holds the value looked up."""
        return self._transport.run(self._find_p(entity, consistent, fields))

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
        return self._query((entity, *more), index, dict(fields))

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
        return self._scan((entity, *more), index, segment, segments)

    def history(self, entity: type[T], **fields: Any) -> Query[T]:
        """The stored versions ``1..n`` of one versioned entity, in version order."""
        return self._history(entity, dict(fields))

    # -- bulk ----------------------------------------------------------------------
    def save_many(self, objs: Iterable[Entity], *, concurrency: int = 4) -> None:
        """Bulk save: fast, not atomic, no rules. New objects go in BatchWriteItem puts
        (25 a request, ``concurrency`` requests in flight); loaded (persisted) objects go
        one request each, as ``save`` + ``commit`` sends them (only changed attributes,
        conditioned on their loaded values: another writer's newer state is never
        overwritten). A call that cannot finish raises :class:`~dynaorm.BulkWriteError`
        with what was written, what was not and what may have been."""
        self._transport.run(self._save_many_p(objs, concurrency))

    def delete_many(self, objs: Iterable[Entity] | type[Entity],
                    keys: Iterable[Mapping[str, Any]] | None = None, *,
                    concurrency: int = 4) -> None:
        """Bulk delete (BatchWriteItem, 25 a request, ``concurrency`` requests in flight)
        of objects, or of one entity's keys: ``s.delete_many(User, [{"user_id": "u1"}])``.
        Not atomic, no rules (entities with unique or versioned rules are refused, as by
        ``save_many``). A loaded object goes as one DeleteItem conditioned on the item
        being as loaded (a newer state is never deleted silently; one already gone counts
        as deleted). A call that cannot finish raises :class:`~dynaorm.BulkWriteError`."""
        self._transport.run(self._delete_many_p(objs, keys, concurrency))
