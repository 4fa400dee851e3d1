"""Queries, scans and searches of an ``AsyncSession``: the same pure descriptions as the
sync ones (:class:`~dynaorm.read.query.QuerySpec`, :class:`~dynaorm.read.scan.ScanSpec`,
:class:`~dynaorm.read.search.SearchSpec`: every builder is theirs), with terminals that
drive the same protocols with asyncio (a cursor from either kind of session resumes in the
other)."""

from collections.abc import AsyncIterator
from typing import Any

from dynaorm.client.drivers import AsyncDriver
from dynaorm.read.grouped import Grouped, group
from dynaorm.read.query import QuerySpec
from dynaorm.read.scan import ScanSpec
from dynaorm.read.search import Hits, SearchSpec
from dynaorm.read.spec import Page, ReadSpec
from dynaorm.schema.entity import T


class AsyncTerminals(ReadSpec[T]):
    """The async terminals of a read (its ``_driver`` is a session's async driver)."""

    _driver: AsyncDriver

    def __aiter__(self) -> AsyncIterator[T]:
        sel = self._selection()  # (decoded one at a time: a loop may stop early)
        return self._driver.iterate(self._items(sel), self._operation_of(), sel.decoded)

    async def all(self) -> list[T]:
        """Every result, as a list."""
        sel = self._selection()
        found: list[T] = []
        await self._driver.collect(self._items(sel), self._operation_of(),
                                   lambda batch: found.extend(sel.decoded(batch)))
        return found

    async def grouped(self) -> Grouped:
        """Every result, grouped by entity class: ``g[Order]`` is a ``list[Order]``."""
        return group(await self.all(), self._entities)

    async def first(self) -> T | None:
        """The first result, or ``None``."""
        found = await self.limit(1).all()
        return found[0] if found else None

    async def count(self) -> int:
        """How many results (``Select=COUNT`` where the types can be selected on the
        server), capped by ``limit``."""
        return await self._driver.run(self._count_p(), self._operation_of("count"))

    async def values(self, *fields: str) -> list[dict[str, Any]]:
        """Just ``fields`` of each result (``ProjectionExpression``; absent: ``None``)."""
        return await self._driver.run(self._values_p(fields), self._operation_of("values"))

    async def keys(self) -> list[dict[str, Any]]:
        """The key fields of each result: what ``get`` takes."""
        return await self._driver.run(self._keys_p(), self._operation_of("keys"))

    async def page(self, cursor: str | None = None) -> Page[T]:
        """One page of results and the cursor that resumes after them (``None`` at the
        end); cursors are those of the sync ``page()``."""
        return await self._driver.run(self._page_p(cursor), self._operation_of("page"))


class AsyncQuery(QuerySpec[T], AsyncTerminals[T]):
    """A query of an ``AsyncSession`` (see :class:`~dynaorm.Query` for the builders)."""

    async def one(self) -> T:
        """The only result (``ItemNotFoundError`` / ``MultipleResultsError`` otherwise)."""
        return self._only(await self.limit(2).all())


class AsyncScan(ScanSpec[T], AsyncTerminals[T]):
    """A scan of an ``AsyncSession`` (see :class:`~dynaorm.Scan`); ``segments=N`` reads
    the segments concurrently with asyncio."""


class AsyncSearch(SearchSpec[T]):
    """A vector search of an ``AsyncSession`` (see :class:`~dynaorm.Search`)."""

    _driver: AsyncDriver

    async def all(self) -> Hits[T]:
        """The hits, nearest first."""
        return await self._driver.run(self._search_p(), self._operation_of())
