"""``AsyncSession``: the unit of work driven with asyncio (contract section 16).

Staging (``save``, ``delete``, ``update``, ``check``, ``rollback``) is shared with
:class:`~dynaorm.Session` as is; every method that does I/O is a coroutine running the
same protocol of :mod:`dynaorm.core` through its client's async driver (the mirror of the
sync one, on the same client and the same policy).
"""

from __future__ import annotations

from collections.abc import Awaitable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, cast, overload

from dynaorm.aio.reads import AsyncQuery, AsyncScan, AsyncSearch
from dynaorm.client.session import BaseSession, Op, arun_op
from dynaorm.core.lookups import find_p, get_many_p, get_p
from dynaorm.protocol.events import CommitResult
from dynaorm.protocol.policy import Rate
from dynaorm.protocol.steps import Proto, R
from dynaorm.schema.entity import T2, T3, T4, Entity, T

if TYPE_CHECKING:  # (the write path loads with the first write, not with the session)
    from dynaorm.write.render import WritePlan



class AsyncSession(BaseSession):
    """A unit of work for asyncio (``AsyncSession(table)`` or ``AsyncSession(client)``),
    on the tables of one client. Reads may be awaited concurrently (``asyncio.gather``);
    staging and commit belong to one task. ``scope=`` as for :class:`~dynaorm.Session`."""

    _async = True

    def _run(self, proto: Proto[R], name: str,
             entities: Iterable[type[Any]], rate: Rate | None = None) -> Awaitable[R]:
        return cast(Awaitable[R], self._send(proto, name, entities, rate))

    async def __aenter__(self) -> AsyncSession:
        return self

    async def run(self, op: Op[R]) -> R:
        """Run ``op``, the generator of steps :meth:`dynaorm.Session.run` takes, each
        step's call awaited (a step that answers no awaitable is sent back as it
        answered): one operation, written once, for both kinds of session."""
        with self._stage.held():
            return await arun_op(op)

    async def __aexit__(self, exc_type: type[BaseException] | None,
                        exc: BaseException | None, tb: TracebackType | None) -> None:
        if exc_type is None:
            await self.commit()
        else:
            self.rollback()

    # -- commit --------------------------------------------------------------------
    async def plan(self) -> WritePlan:
        """The write plan the next commit would send (reads stored state where needed)."""
        return await cast(Awaitable["WritePlan"], self._plan())

    async def commit(self, *, idempotency_key: str | None = None) -> CommitResult:
        """Send everything staged as one atomic write; clears the stage either way. With
        an ``idempotency_key`` (or the session's): at most once for that key, as
        :meth:`dynaorm.Session.commit`.

        Cancelled (or timed out by ``asyncio.wait_for``) after its request was sent, the
        write may have landed: no object changes, and the next commit of each object it
        would have written first reads that object's key once; when the cancelled write
        landed, the object takes the state it wrote (saving it again updates it, never
        ``ItemExistsError``)."""
        return await cast(Awaitable[CommitResult], self._commit(idempotency_key))

    # -- reads ---------------------------------------------------------------------
    async def get(self, entity: type[T], *, consistent: bool = False,
                  version: int | None = None, **fields: Any) -> T | None:
        """Read one entity by its key fields (``None`` if absent)."""
        return await self._run(get_p(self._stage, entity, consistent, version, fields), "get",
                               (entity,))

    async def get_many(self, entity: type[T], keys: Sequence[Mapping[str, Any]], *,
                       consistent: bool = False, snapshot: bool = False,
                       concurrency: int = 4, rate: Rate | None = None) -> list[T | None]:
        """Read many entities, in input order (BatchGetItem; ``snapshot=True``: one
        TransactGetItems)."""
        return await self._run(get_many_p(self._stage, entity, keys, consistent, snapshot,
                                          concurrency), "get_many", (entity,), rate)

    async def find(self, entity: type[T], *, consistent: bool = False,
                   **fields: Any) -> T | None:
        """Read an entity through one of its unique attributes (the guard item)."""
        return await self._run(find_p(self._stage, entity, consistent, fields), "find",
                               (entity,))

    # -- queries -------------------------------------------------------------------
    @overload
    def query(self, entity: type[T], /, *, index: str | None = None,
              **fields: Any) -> AsyncQuery[T]: ...
    @overload
    def query(self, entity: type[T], other: type[T2], /, *, index: str | None = None,
              **fields: Any) -> AsyncQuery[T | T2]: ...
    @overload
    def query(self, entity: type[T], other: type[T2], third: type[T3], /, *,
              index: str | None = None, **fields: Any) -> AsyncQuery[T | T2 | T3]: ...
    @overload
    def query(self, entity: type[T], other: type[T2], third: type[T3], fourth: type[T4], /,
              *, index: str | None = None, **fields: Any) -> AsyncQuery[T | T2 | T3 | T4]: ...
    @overload
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> AsyncQuery[Any]: ...
    def query(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
              **fields: Any) -> AsyncQuery[Any]:
        """A lazy query over the partition named by ``fields`` (``async for``, ``await
        q.all()``, ``await q.page(cursor)``, ...)."""
        return cast(AsyncQuery[Any], self._query(AsyncQuery, (entity, *more), index, fields))

    @overload
    def scan(self, entity: type[T], /, *, index: str | None = None,
             segment: int | None = None, segments: int | None = None,
             rate: Rate | None = None) -> AsyncScan[T]: ...
    @overload
    def scan(self, entity: type[T], other: type[T2], /, *, index: str | None = None,
             segment: int | None = None, segments: int | None = None,
             rate: Rate | None = None) -> AsyncScan[T | T2]: ...
    @overload
    def scan(self, entity: type[T], other: type[T2], third: type[T3], /, *,
             index: str | None = None, segment: int | None = None,
             segments: int | None = None, rate: Rate | None = None
             ) -> AsyncScan[T | T2 | T3]: ...
    @overload
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None,
             rate: Rate | None = None) -> AsyncScan[Any]: ...
    def scan(self, entity: type[T], /, *more: type[Entity], index: str | None = None,
             segment: int | None = None, segments: int | None = None,
             rate: Rate | None = None) -> AsyncScan[Any]:
        """Every item of the given entity types; ``segments=N`` reads N segments
        concurrently."""
        return cast(AsyncScan[Any], self._scan(AsyncScan, (entity, *more), index, segment,
                                               segments, rate))

    def history(self, entity: type[T], **fields: Any) -> AsyncQuery[T]:
        """The stored versions ``1..n`` of one versioned entity, in version order."""
        return cast(AsyncQuery[T], self._history(AsyncQuery, entity, fields))

    def search(self, entity: type[T], index: str, /, *, vector: Any, top: int = 10,
               **fields: Any) -> AsyncSearch[T]:
        """A vector search, as :meth:`dynaorm.Session.search` (``await s.search(...).all()``)."""
        return cast(AsyncSearch[T], self._search(AsyncSearch, entity, index, vector, top,
                                                 fields))

    # -- bulk ----------------------------------------------------------------------
    async def save_many(self, objs: Iterable[Entity], *, concurrency: int = 4,
                        rate: Rate | None = None) -> None:
        """Bulk save, as :meth:`dynaorm.Session.save_many`: new objects in BatchWriteItem
        puts (25 a request, ``concurrency`` in flight), loaded ones as conditioned single
        writes; :class:`~dynaorm.BulkWriteError` when the call cannot finish."""
        await self._save_many(objs, concurrency, rate)

    async def delete_many(self, objs: Iterable[Entity] | type[Entity],
                          keys: Iterable[Mapping[str, Any]] | None = None, *,
                          concurrency: int = 4, rate: Rate | None = None) -> None:
        """Bulk delete of objects, or of one entity's keys, as
        :meth:`dynaorm.Session.delete_many` (BatchWriteItem; loaded objects as conditioned
        single deletes); :class:`~dynaorm.BulkWriteError` when the call cannot finish."""
        await self._delete_many(objs, keys, concurrency, rate)
