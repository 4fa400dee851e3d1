"""Queries, scans and searches of a :class:`~dynaorm.Session`: the pure descriptions
(:class:`~dynaorm.read.query.QuerySpec`, :class:`~dynaorm.read.scan.ScanSpec`,
:class:`~dynaorm.read.search.SearchSpec`) with blocking terminals that run their protocols
through the session's driver (each page one operation for the hooks)."""

from collections.abc import Iterator
from typing import Any

from dynaorm.client.drivers import SyncDriver
from dynaorm.read.grouped import Grouped, group
from dynaorm.read.query import QuerySpec
from dynaorm.read.scan import ScanSpec
from dynaorm.read.search import Hits, SearchSpec
from dynaorm.read.spec import Page, ReadSpec
from dynaorm.schema.entity import T


class SyncTerminals(ReadSpec[T]):
    """The blocking terminals of a read (its ``_driver`` is a session's sync driver)."""

    _driver: SyncDriver

    def __iter__(self) -> Iterator[T]:
        sel = self._selection()  # (decoded one at a time: a loop may stop early)
        return self._driver.iterate(self._items(sel), self._operation_of(), sel.decoded)

    def all(self) -> list[T]:
        """Every result, as a list."""
        return list(self)

    def grouped(self) -> Grouped:
        """Every result, grouped by entity class: ``g[Order]`` is a ``list[Order]``."""
        return group(self, self._entities)

    def first(self) -> T | None:
        """The first result, or ``None``."""
        for obj in self.limit(1):
            return obj
        return None

    def count(self) -> int:
        """How many results (``Select=COUNT``: no item is sent or decoded), capped by
        ``limit``. Where the type selection cannot be a filter, keys are read and counted."""
        return self._driver.run(self._count_p(), self._operation_of("count"))

    def values(self, *fields: str) -> list[dict[str, Any]]:
        """Just ``fields`` of each result (``ProjectionExpression``; absent: ``None``)."""
        return self._driver.run(self._values_p(fields), self._operation_of("values"))

    def keys(self) -> list[dict[str, Any]]:
        """The key fields of each result: what ``Session.get`` takes."""
        return self._driver.run(self._keys_p(), self._operation_of("keys"))

    def page(self, cursor: str | None = None) -> Page[T]:
        """One page of results and the cursor that resumes after them (``None`` at the end).

        A query's page holds ``page_size`` (or ``limit``, else 100) results and costs one
        request when unsharded; a scan's page is one request per segment still reading,
        each evaluating ``page_size`` items (default 100), so it may hold fewer.
        """
        return self._driver.run(self._page_p(cursor), self._operation_of("page"))


class Query(QuerySpec[T], SyncTerminals[T]):
    """A lazy query over one partition (or all shards of one). Build with
    ``Session.query``; every builder returns a new query."""

    def one(self) -> T:
        """The only result (``ItemNotFoundError`` / ``MultipleResultsError`` otherwise)."""
        return self._only(list(self.limit(2)))


class Scan(ScanSpec[T], SyncTerminals[T]):
    """A scan of some entity types. Build with ``Session.scan``."""


class Search(SearchSpec[T]):
    """A vector search (``Session.search``): ``where`` narrows it, ``all()`` runs it."""

    _driver: SyncDriver

    def all(self) -> Hits[T]:
        """The hits, nearest first (one ``SearchVectors`` request; a ``BatchGetItem`` too
        where the index does not project every attribute)."""
        return self._driver.run(self._search_p(), self._operation_of())
