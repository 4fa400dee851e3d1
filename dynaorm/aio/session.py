"""``AsyncSession``: the unit of work driven with asyncio (contract section 16).

Staging (``save``, ``delete``, ``update``, ``check``, ``rollback``) is shared with
:class:`~dynaorm.Session` as is; every method that does I/O is a coroutine running the
same protocol (:mod:`dynaorm.core.unit_of_work`) through the table's async transport
(:meth:`~dynaorm.transport.aio.AsyncTransport.run`, the mirror of the sync one).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar, overload

from dynaorm.aio import transport_of
from dynaorm.aio.reads import AsyncQuery, AsyncScan
from dynaorm.core.unit_of_work import UnitOfWork
from dynaorm.model.entity import Entity
from dynaorm.model.table import Table
from dynaorm.transport.aio import AsyncTransport
from dynaorm.transport.events import CommitResult
from dynaorm.write.render import WritePlan

__all__ = ["AsyncSession"]

T = TypeVar("T", bound=Entity)


class AsyncSession(UnitOfWork):
    """A unit of work on one table, for asyncio. Reads may be awaited concurrently
    (``asyncio.gather``); staging and commit belong to one task."""

    def __init__(self, table: Table) -> None:
        super().__init__(table)
        self._aio: AsyncTransport = transport_of(table)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            await self.commit()
        else:
            self.rollback()

    # -- commit --------------------------------------------------------------------
    async def plan(self) -> WritePlan:
        """The write plan the next commit would send (reads stored state where needed)."""
        return await self._aio.run(self._plan_p())

    async def commit(self) -> CommitResult:
        """Send everything staged as one atomic write; clears the stage either way.

        Cancelled (or timed out by ``asyncio.wait_for``) after its request was sent, the
        write may have landed: no object changes, and the next commit of each object it
        would have written first reads that object's key once; when the cancelled write
        landed, the object takes the state it wrote (saving it again updates it, never
        ``ItemExistsError``)."""
        commit = self._commit()
        try:
            return await self._aio.run(commit.run())
        except asyncio.CancelledError:
            commit.abandon()
            raise

    # -- reads ---------------------------------------------------------------------
    async def get(self, entity: type[T], *, consistent: bool = False,
                  version: int | None = None, **fields: Any) -> T | None:
        """Read one entity by its key fields (``None`` if absent)."""
        return await self._aio.run(self._get_p(entity, consistent, version, fields))

    async def get_many(self, entity: type[T], keys: Sequence[Mapping[str, Any]], *,
                       consistent: bool = False, snapshot: bool = False,
                       concurrency: int = 4) -> list[T | None]:
        """Read many entities, in input order (BatchGetItem; ``snapshot=True``: one
        TransactGetItems)."""
        return await self._aio.run(
            self._get_many_p(entity, keys, consistent, snapshot, concurrency))

    async def find(self, entity: type[T], *, consistent: bool = False,
                   **fields: Any) -> T | None:
        """Read an entity through one of its unique attributes (the guard item)."""
        return await self._aio.run(self._find_p(entity, consistent, fields))

    # -- queries -------------------------------------------------------------------
    @overload
    def query(self, entity: type[T], /, *, index: str | None = None,
              **fields: Any) -> AsyncQuery[T]: ...
    @overload
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> AsyncQuery[Any]: ...
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> AsyncQuery[Any]:
        """A lazy query over the partition named by ``fields`` (``async for``, ``await
        q.all()``, ``await q.page(cursor)``, ...)."""
        return AsyncQuery(self._query((entity, *more), index, dict(fields)), self._aio)

    @overload
    def scan(self, entity: type[T], /, *, index: str | None = None,
             segment: int | None = None, segments: int | None = None) -> AsyncScan[T]: ...
    @overload
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None) -> AsyncScan[Any]: ...
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None) -> AsyncScan[Any]:
        """Every item of the given entity types; ``segments=N`` reads N segments
        concurrently."""
        return AsyncScan(self._scan((entity, *more), index, segment, segments), self._aio)

    def history(self, entity: type[T], **fields: Any) -> AsyncQuery[T]:
        """The stored versions ``1..n`` of one versioned entity, in version order."""
        return AsyncQuery(self._history(entity, dict(fields)), self._aio)

    # -- bulk ----------------------------------------------------------------------
    async def save_many(self, objs: Iterable[Entity], *, concurrency: int = 4) -> None:
        """Bulk save, as :meth:`dynaorm.Session.save_many`: new objects in BatchWriteItem
        puts (25 a request, ``concurrency`` in flight), loaded ones as conditioned single
        writes; :class:`~dynaorm.BulkWriteError` when the call cannot finish."""
        await self._aio.run(self._save_many_p(objs, concurrency))

    async def delete_many(self, objs: Iterable[Entity] | type[Entity],
                          keys: Iterable[Mapping[str, Any]] | None = None, *,
                          concurrency: int = 4) -> None:
        """Bulk delete of objects, or of one entity's keys, as
        :meth:`dynaorm.Session.delete_many` (BatchWriteItem; loaded objects as conditioned
        single deletes); :class:`~dynaorm.BulkWriteError` when the call cannot finish."""
        await self._aio.run(self._delete_many_p(objs, keys, concurrency))
