"""Async queries and scans: the builders of :class:`~dynaorm.Query` /
:class:`~dynaorm.Scan`, with terminals that drive the same read protocols with asyncio
(a cursor from either kind of session resumes in the other)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, Generic, Self, TypeVar

from dynaorm.model.entity import Entity
from dynaorm.model.expressions import Condition
from dynaorm.read.query import Query
from dynaorm.read.scan import Scan
from dynaorm.read.terminals import Page, ReadBase
from dynaorm.transport.aio import AsyncTransport

__all__ = ["AsyncQuery", "AsyncRead", "AsyncScan"]

T = TypeVar("T", bound=Entity)


class AsyncRead(Generic[T]):
    """Modifiers and async terminals shared by :class:`AsyncQuery` and :class:`AsyncScan`."""

    def __init__(self, read: ReadBase[T], transport: AsyncTransport) -> None:
        self._read = read
        self._transport = transport

    def _wrap(self, read: ReadBase[T]) -> Self:
        return type(self)(read, self._transport)

    # -- modifiers -------------------------------------------------------------------
    def limit(self, n: int) -> Self:
        """At most ``n`` results in all (across pages too)."""
        return self._wrap(self._read.limit(n))

    def page_size(self, n: int) -> Self:
        """Results per request."""
        return self._wrap(self._read.page_size(n))

    def consistent(self) -> Self:
        """Strongly consistent reads (the table or an LSI)."""
        return self._wrap(self._read.consistent())

    def filter(self, condition: Condition) -> Self:
        """Keep results matching ``condition`` (a FilterExpression; several are ANDed)."""
        return self._wrap(self._read.filter(condition))

    # -- terminals -------------------------------------------------------------------
    async def __aiter__(self) -> AsyncIterator[T]:
        stream, decode = self._read._decoded()
        async for batch in self._transport.iterate(stream):
            for obj in decode(batch):  # one at a time: a loop may stop early
                yield obj

    async def all(self) -> list[T]:
        """Every result, as a list."""
        return [obj async for obj in self]

    async def first(self) -> T | None:
        """The first result, or ``None``."""
        found = await self.limit(1).all()
        return found[0] if found else None

    async def count(self) -> int:
        """How many results (``Select=COUNT`` where the types can be selected on the
        server), capped by ``limit``."""
        return await self._transport.run(self._read._count_p())

    async def values(self, *fields: str) -> list[dict[str, Any]]:
        """Just ``fields`` of each result (``ProjectionExpression``; absent: ``None``)."""
        return await self._transport.run(self._read._values_p(fields))

    async def keys(self) -> list[dict[str, Any]]:
        """The key fields of each result: what ``get`` takes."""
        return await self._transport.run(self._read._keys_p())

    async def page(self, cursor: str | None = None) -> Page[T]:
        """One page of results and the cursor that resumes after them (``None`` at the
        end); cursors are those of the sync ``page()``."""
        return await self._transport.run(self._read._page_p(cursor))


class AsyncQuery(AsyncRead[T]):
    """A query of an ``AsyncSession`` (see :class:`~dynaorm.Query` for the builders)."""

    _read: Query[T]

    def eq(self, **fields: Any) -> AsyncQuery[T]:
        """Sort key equal to the one rendered from these sort-key fields."""
        return self._wrap(self._read.eq(**fields))

    def lt(self, **fields: Any) -> AsyncQuery[T]:
        """Sort key before the one rendered from these fields."""
        return self._wrap(self._read.lt(**fields))

    def lte(self, **fields: Any) -> AsyncQuery[T]:
        """Sort key at or before the one rendered from these fields."""
        return self._wrap(self._read.lte(**fields))

    def gt(self, **fields: Any) -> AsyncQuery[T]:
        """Sort key after the one rendered from these fields."""
        return self._wrap(self._read.gt(**fields))

    def gte(self, **fields: Any) -> AsyncQuery[T]:
        """Sort key at or after the one rendered from these fields."""
        return self._wrap(self._read.gte(**fields))

    def between(self, low: Mapping[str, Any], high: Mapping[str, Any]) -> AsyncQuery[T]:
        """Inclusive range between two sets of sort-key fields."""
        return self._wrap(self._read.between(low, high))

    def begins_with(self, **fields: Any) -> AsyncQuery[T]:
        """Sort key starts with these fields; the last one may be a partial value."""
        return self._wrap(self._read.begins_with(**fields))

    def reverse(self) -> AsyncQuery[T]:
        """The same query in descending sort-key order."""
        return self._wrap(self._read.reverse())

    async def one(self) -> T:
        """The only result (``ItemNotFoundError`` / ``MultipleResultsError`` otherwise)."""
        return self._read._only(await self.limit(2).all())


class AsyncScan(AsyncRead[T]):
    """A scan of an ``AsyncSession`` (see :class:`~dynaorm.Scan`); ``segments=N`` reads
    the segments concurrently with asyncio."""

    _read: Scan[T]
