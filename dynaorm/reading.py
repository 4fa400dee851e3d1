"""Running reads synchronously: the terminals :class:`~dynaorm.Query` and
:class:`~dynaorm.Scan` share (iteration, ``all``, ``first``, ``count``, ``values``,
``keys``, ``page``), and batch reads by key.

Everything here only sends what the pure core (:mod:`dynaorm.reads`) plans and feeds the
answers back; streams (shards, segments) are read concurrently with threads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from typing import TYPE_CHECKING, Any, ClassVar, Generic, Self, TypeVar

from ._types import Item
from .cursor import check_cursor, decode_cursor_state, encode_cursor, fingerprint, read_secret
from .entity import Entity
from .errors import DynaormError, InvalidCursorError
from .expressions import Condition, Placeholders
from .reads import BATCH_GET, Pager, Selection

if TYPE_CHECKING:
    from .transport import Transport

__all__ = ["MAX_WORKERS", "Page", "ReadBase", "batch_get"]

T = TypeVar("T", bound=Entity)
#: Threads reading streams (shards, segments, batches) at once, at most.
MAX_WORKERS = 16
#: Rounds of a batch request before unprocessed keys are an error.
MAX_BATCH_ROUNDS = 12
#: Results per ``page()`` when neither ``page_size`` nor ``limit`` is set.
DEFAULT_PAGE_SIZE = 100


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of results and the cursor of the next (``None`` on the last page)."""

    items: list[T]
    cursor: str | None
    #: items of the read that no entity of the table owns (a table without a type
    #: attribute holding items of other tools), skipped
    skipped: int = 0


def _key_id(key: Item) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(next(iter(v.values())))) for k, v in key.items()))


def batch_get(transport: Transport, table: str, keys: Sequence[Item], *,
              consistent: bool = False, concurrency: int = 1) -> dict[Any, Item]:
    """Items by key (BatchGetItem, 100 keys a request, ``concurrency`` requests in
    flight; unprocessed keys retried with backoff), by their key's identity."""
    unique = list({_key_id(k): k for k in keys}.values())
    chunks = [unique[i:i + BATCH_GET] for i in range(0, len(unique), BATCH_GET)]

    def one(chunk: list[Item]) -> list[Item]:
        request: dict[str, Any] = {"Keys": chunk}
        if consistent:
            request["ConsistentRead"] = True
        pending: dict[str, Any] | None = {table: request}
        items: list[Item] = []
        rounds = 0
        while pending:
            rounds += 1
            if rounds > MAX_BATCH_ROUNDS:
                raise DynaormError(f"BatchGetItem on {table!r} still had unprocessed keys "
                                   f"after {MAX_BATCH_ROUNDS} rounds")
            if rounds > 1:
                transport._sleep(transport.backoff(rounds - 1))
            out = transport.call("BatchGetItem", {"RequestItems": pending})
            items.extend(out.get("Responses", {}).get(table, []))
            pending = out.get("UnprocessedKeys") or None
        return items

    if concurrency > 1 and len(chunks) > 1:
        with ThreadPoolExecutor(max_workers=min(concurrency, len(chunks))) as pool:
            results = list(pool.map(one, chunks))
    else:
        results = [one(c) for c in chunks]
    key_attrs = list(unique[0]) if unique else []
    return {_key_id({a: item[a] for a in key_attrs}): item for got in results for item in got}


class ReadBase(Generic[T]):
    """Modifiers and terminals shared by queries and scans (subclasses are frozen
    dataclasses with these fields, and give the source of each stream's requests)."""

    _operation: ClassVar[str]
    _transport: Transport
    _entities: tuple[type[T], ...]
    _index: str | None
    _limit: int | None
    _page_size: int | None
    _consistent: bool
    _filter: Condition | None

    # -- what a subclass gives ------------------------------------------------------
    def _streams(self) -> int:
        raise NotImplementedError  # pragma: no cover

    def _source(self, i: int, ph: Placeholders) -> dict[str, Any]:
        """Stream ``i``'s request without filter, projection, Limit or start key."""
        raise NotImplementedError  # pragma: no cover

    def _selection(self) -> Selection[T]:
        raise NotImplementedError  # pragma: no cover

    def _fixed(self, i: int) -> dict[str, Any]:
        """Key attributes every position of stream ``i`` holds (a shard's partition key):
        left out of cursors, and imposed on the positions a cursor brings back."""
        return {}

    def _describe(self) -> str:
        raise NotImplementedError  # pragma: no cover

    def _with(self, **changes: Any) -> Self:
        raise NotImplementedError  # pragma: no cover

    #: scans select types in the FilterExpression (and may name the table's sort key there)
    _types_on_server: ClassVar[bool] = False
    _ordered: ClassVar[bool] = True
    _reverse: bool = False

    # -- modifiers -------------------------------------------------------------------
    def limit(self, n: int) -> Self:
        """At most ``n`` results in all (across pages too)."""
        if n < 1:
            raise ValueError("limit must be >= 1")
        return self._with(_limit=n)

    def page_size(self, n: int) -> Self:
        """Results per request (a query's page holds ``n``; a scan's ``Limit`` is ``n``)."""
        if n < 1:
            raise ValueError("page_size must be >= 1")
        return self._with(_page_size=n)

    def consistent(self) -> Self:
        """Strongly consistent reads (the table or an LSI; a GSI cannot be)."""
        from .entity import spec_of

        table = spec_of(self._entities[0]).table
        if self._index is not None and not table.index(self._index).is_local:
            raise DynaormError(f"index {self._index!r} is global; a GSI cannot be read "
                               "consistently")
        return self._with(_consistent=True)

    def filter(self, condition: Condition) -> Self:
        """Keep results matching ``condition`` (a FilterExpression; several are ANDed)."""
        if not isinstance(condition, Condition):
            raise TypeError("filter() takes a condition built from F(...)")
        combined = condition if self._filter is None else self._filter & condition
        return self._with(_filter=combined)

    # -- requests --------------------------------------------------------------------
    def _request(self, i: int, sel: Selection[T], *, count: bool = False,
                 attrs: Sequence[str] = (), types: bool | None = None) -> dict[str, Any]:
        ph = Placeholders(sel.renames)
        request = self._source(i, ph)
        cond = self._filter
        if (self._types_on_server if types is None else types) and sel.server_filterable:
            selected = sel.type_condition(latest=self._types_on_server, ttl=count)
            cond = selected if cond is None else selected & cond
        if cond is not None:
            request["FilterExpression"] = cond.render(ph)
        if attrs:
            wanted = dict.fromkeys([*attrs, sel.ttl_attr])  # TTL: to tell expired items
            request["ProjectionExpression"] = ", ".join(ph.name(a) for a in wanted if a)
        if count:
            request["Select"] = "COUNT"
        if self._consistent:
            request["ConsistentRead"] = True
        return ph.apply(request)

    def _pager(self, sel: Selection[T], positions: list[Any],
               attrs: Sequence[str] = ()) -> Pager:
        requests = [self._request(i, sel, attrs=attrs) for i in range(self._streams())]
        return Pager(requests, positions, sel.keep, sel.position, ordered=self._ordered,
                     reverse=self._reverse, order_attrs=sel.order_attrs,
                     foreign=sel.foreign if sel.shapeless else None)

    def _run(self, pager: Pager, limit: Callable[[int], int | None],
             max_rounds: int | None = None) -> Iterator[Item]:
        """Results in order, requests sent as the pager asks (several at once: threads)."""
        call = self._transport.call
        op = self._operation
        origins = tuple(self._entities)  # on_request hooks see which entities a read was for
        rounds = 0
        pool: ThreadPoolExecutor | None = None
        try:
            while True:
                wanted = pager.wants(limit)
                if wanted:
                    if max_rounds is not None and rounds >= max_rounds:
                        return
                    rounds += 1
                    if len(wanted) == 1:
                        pager.feed(wanted[0][0], call(op, wanted[0][1], origins))
                        continue
                    if pool is None:
                        _ = self._transport.client  # made once here, not by racing threads
                        pool = ThreadPoolExecutor(max_workers=min(len(wanted), MAX_WORKERS))
                    outs = list(pool.map(lambda w: call(op, w[1], origins), wanted))
                    for (i, _), out in zip(wanted, outs, strict=True):
                        pager.feed(i, out)
                    continue
                nxt = pager.pop()
                if nxt is None:
                    return
                yield nxt[1]
        finally:
            if pool is not None:
                pool.shutdown(wait=False)

    def _results(self, sel: Selection[T], pager: Pager, want: int | None,
                 limit: Callable[[int], int | None],
                 max_rounds: int | None = None) -> Iterator[Item]:
        """Whole result items: read by key in batches where the source lacks attributes
        (in the read's order, requested types only, reading on to reach ``want``)."""
        stream = self._run(pager, limit, max_rounds)
        if not sel.fetch:
            yield from stream
            return
        table = sel.types[next(iter(sel.types))][1].table
        attrs = [a for a in (table.pk, table.sk) if a]
        produced = 0
        while want is None or produced < want:
            n = BATCH_GET if want is None else min(BATCH_GET, want - produced)
            chunk = list(islice(stream, n))
            if not chunk:
                return
            keys = [{a: c[a] for a in attrs} for c in chunk]
            found = batch_get(self._transport, table.name, keys, consistent=self._consistent)
            for key in keys:
                item = found.get(_key_id(key))
                if item is not None and sel.owns(item):
                    produced += 1
                    yield item

    def _iter_limit(self, remaining: Callable[[], int | None]) -> Callable[[int], int | None]:
        def limit(live: int) -> int | None:
            if self._page_size is not None:
                return self._page_size
            left = remaining()
            if left is None or not self._ordered:
                return None
            from .reads import per_request_limit
            return per_request_limit(left, live)
        return limit

    def _items(self, sel: Selection[T], attrs: Sequence[str] = ()) -> Iterator[Item]:
        """Result items (projected to ``attrs`` when given), up to ``limit``."""
        pager = self._pager(sel, [None] * self._streams(), attrs)
        count = 0
        want = self._limit

        def remaining() -> int | None:
            return None if want is None else want - count

        for item in self._results(sel, pager, want, self._iter_limit(remaining)):
            yield item
            count += 1
            if want is not None and count >= want:
                return

    # -- terminals -------------------------------------------------------------------
    def __iter__(self) -> Iterator[T]:
        sel = self._selection()
        decode = sel.decode
        for item in self._items(sel):
            yield decode(item)

    def all(self) -> list[T]:
        """Every result, as a list."""
        return list(self)

    def first(self) -> T | None:
        """The first result, or ``None``."""
        for obj in self.limit(1):
            return obj
        return None

    def count(self) -> int:
        """How many results (``Select=COUNT``: no item is sent or decoded), capped by
        ``limit``. Where the type selection cannot be a filter, keys are read and counted."""
        sel = self._selection()
        n = self._streams()
        if sel.server_filterable and not sel.client_rules:
            requests = [self._request(i, sel, count=True, types=True) for i in range(n)]
            total = sum(self._fan_out(self._count_stream, requests))
            return total if self._limit is None else min(total, self._limit)
        attrs = list(sel.key_attrs)
        if not sel.by_shape:
            attrs.append(sel.type_attr)
        total = 0
        pager = Pager([self._request(i, sel, attrs=attrs) for i in range(n)], [None] * n,
                      sel.keep, sel.position, ordered=False)
        for _ in self._run(pager, lambda live: None):
            total += 1
            if self._limit is not None and total >= self._limit:
                break
        return total

    def _count_stream(self, request: dict[str, Any]) -> int:
        total = 0
        while True:
            out = self._transport.call(self._operation, request, tuple(self._entities))
            total += int(out.get("Count", 0))
            last = out.get("LastEvaluatedKey")
            if not last or (self._limit is not None and total >= self._limit):
                return total
            request = {**request, "ExclusiveStartKey": last}

    def _fan_out(self, fn: Callable[[dict[str, Any]], int],
                 requests: list[dict[str, Any]]) -> list[int]:
        if len(requests) <= 1:
            return [fn(r) for r in requests]
        with ThreadPoolExecutor(max_workers=min(len(requests), MAX_WORKERS)) as pool:
            return list(pool.map(fn, requests))

    def values(self, *fields: str) -> list[dict[str, Any]]:
        """Just ``fields`` of each result (``ProjectionExpression``; absent: ``None``)."""
        if not fields:
            raise DynaormError("values() needs at least one field name")
        sel = self._selection()
        sel.check_fields(fields)
        names = list(dict.fromkeys(fields))
        if sel.fetch:
            return [sel.values_of(item, names) for item in self._items(sel)]
        attrs = [*names, *sel.key_attrs, sel.type_attr]
        return [sel.values_of(item, names)
                for item in self._items(sel, list(dict.fromkeys(attrs)))]

    def keys(self) -> list[dict[str, Any]]:
        """The key fields of each result: what ``Session.get`` takes."""
        sel = self._selection()
        if sel.fetch:
            return [sel.lookup_of(item) for item in self._items(sel)]
        lookup = [f for _, s in sel.types.values() for f in s.lookup_fields]
        attrs = [*lookup, *sel.key_attrs, sel.type_attr]
        return [sel.lookup_of(item) for item in self._items(sel, list(dict.fromkeys(attrs)))]

    # -- pages -----------------------------------------------------------------------
    def _fingerprint(self, sel: Selection[T]) -> str:
        probe = self._request(0, sel) if self._streams() else None
        types = sorted(sel.types)
        return fingerprint({"o": self._operation, "r": probe, "t": types, "x": sel.exclude,
                            "h": sel.history_base, "n": self._streams()})

    def _accept_cursor(self, cursor: str | None, fp: str, sel: Selection[T]) -> tuple[
            list[Any], int]:
        """THE place where a client's cursor is accepted: decoded, verified, and its
        positions checked against this read. Returns (positions, results served)."""
        n = self._streams()
        if cursor is None:
            return [None] * n, 0
        try:
            packed, served = decode_cursor_state(cursor, fp, n, secret=read_secret(self))
            positions = [sel.unpack(p, self._fixed(i)) for i, p in enumerate(packed)]
            check_cursor(self, sel, positions, served)  # inside the read's partitions and range
            if served < 0 or (self._limit is not None and served > self._limit):
                raise InvalidCursorError("page cursor does not fit this query")
        except InvalidCursorError as exc:
            raise InvalidCursorError(f"{self._describe()}: {exc}") from exc
        return positions, served

    def page(self, cursor: str | None = None) -> Page[T]:
        """One page of results and the cursor that resumes after them (``None`` at the end).

        A query's page holds ``page_size`` (or ``limit``, else 100) results and costs one
        request when unsharded; a scan's page is one request per segment still reading,
        each evaluating ``page_size`` items (default 100), so it may hold fewer.
        """
        sel = self._selection()
        fp = self._fingerprint(sel)
        positions, served = self._accept_cursor(cursor, fp, sel)
        pager = self._pager(sel, positions)
        items: list[T] = []
        if self._ordered:
            size = self._page_size or self._limit or DEFAULT_PAGE_SIZE
            rounds = None

            def per_request(live: int) -> int | None:
                from .reads import per_request_limit
                return per_request_limit(size - len(items), live)
        else:
            size = -1
            rounds = 1

            def per_request(live: int) -> int | None:
                return self._page_size or DEFAULT_PAGE_SIZE
        if self._limit is not None:
            left = self._limit - served
            size = left if size < 0 else min(size, left)
        if size != 0:
            want = None if size < 0 else size
            for item in self._results(sel, pager, want, per_request, rounds):
                items.append(sel.decode(item))
                if len(items) == size:
                    break
        served += len(items)
        done = pager.exhausted or (self._limit is not None and served >= self._limit)
        if done:
            return Page(items, None, pager.skipped)
        packed = [sel.pack(p, self._fixed(i)) for i, p in enumerate(pager.positions)]
        return Page(items, encode_cursor(fp, packed, served, secret=read_secret(self)),
                    pager.skipped)

