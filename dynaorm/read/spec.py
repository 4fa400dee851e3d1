"""What queries and scans share, as a pure description (:class:`ReadSpec`): the modifiers
(``limit``, ``page_size``, ``consistent``, ``filter``), the requests they render, and the
protocol of every terminal (iteration, ``all``, ``count``, ``values``, ``keys``, ``page``)
over the pure paging state (:class:`dynaorm.read.pager.Pager`).

A modifier is written once, here or on :class:`~dynaorm.read.query.QuerySpec`: it returns a
new object of the same class, so the sync terminals (:mod:`dynaorm.sync.reads`) and the
async ones (:mod:`dynaorm.aio.reads`) get it as they are; they only run these protocols
through their session's driver. Cursors are accepted in one place (``_accept_cursor``), so
a cursor from either kind of session resumes in the other.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, ClassVar, Generic, Self

from pydantic import Field as PydanticField

from dynaorm._types import Item
from dynaorm.errors import DynaormError, InvalidCursorError
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.steps import Emit, Proto, Stream, call, consume, forward, gather, pull
from dynaorm.read.batches import batch_get_p
from dynaorm.read.pager import Pager, per_request_limit
from dynaorm.read.selection import BATCH_GET, Selection
from dynaorm.schema.entity import T, prepare_rows, spec_of
from dynaorm.schema.paths import check_names
from dynaorm.values.expressions import Condition, Placeholders, rename_paths
from dynaorm.values.keys import key_id
from dynaorm.values.tree import merged_kinds

#: Results per ``page()`` when neither ``page_size`` nor ``limit`` is set.
DEFAULT_PAGE_SIZE = 100
#: Items one request of an iteration (``for``/``.all()``) reads when neither ``page_size``
#: nor ``limit`` says: DynamoDB's own 1 MB pages parse into some 25 MB of Python objects,
#: which would dominate the memory of a large ``.all()``; 1000 keeps one raw page small.
ITER_PAGE_ITEMS = 1000
#: Concurrent requests of one read (drivers cap it: threads, connections).
FAN_OUT = 64


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of results, and the cursor of the next page (null on the last page)."""

    items: list[T]
    """The page's entities, in read order."""
    cursor: str | None
    """The cursor of the next page (``None`` on the last page); pass it to ``page(cursor)``."""
    # a diagnostic, not an API's answer: left out of a web framework's response schema
    skipped: Annotated[int, PydanticField(exclude=True)] = 0
    """How many items of the read were skipped: items no entity of the table owns (a type
    name no class claims, e.g. after a class was renamed, or on a table without a type
    attribute other tools' items), and rows that fit a requested
    type's template but that another type's literal key claims (``Meta.overlaps``)."""


class ReadSpec(Generic[T]):
    """Modifiers, requests and terminal protocols shared by queries and scans (subclasses
    are frozen dataclasses with these fields, and give the source of each stream's
    requests). ``_driver`` is whatever runs the protocols (a session's driver); pure code
    never calls it."""

    _operation: ClassVar[str]
    _driver: Any
    _entities: tuple[type[T], ...]
    _index: str | None
    _limit: int | None
    _page_size: int | None
    _consistent: bool
    _filter: Condition | None
    _budget: Any = None  # a scan's ``rate=`` (a Budget; ``None``: the client's)

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

    def _key_conditions(self, i: int) -> list[tuple[str, str, tuple[Any, ...]]]:
        """Stream ``i``'s key condition as data (none for a scan): what a cursor's
        position must satisfy (:func:`~dynaorm.read.cursor.check_positions`)."""
        return []

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
        table = spec_of(self._entities[0]).table
        if self._index is not None and not table.index(self._index).is_local:
            raise DynaormError(f"index {self._index!r} is global; a GSI cannot be read "
                               "consistently")
        return self._with(_consistent=True)

    def filter(self, condition: Condition) -> Self:
        """Keep results matching ``condition`` (a FilterExpression; several are ANDed)."""
        if not isinstance(condition, Condition):
            raise TypeError("filter() takes a condition built from F(...)")
        check_names(self._entities, condition)
        kinds = merged_kinds([spec_of(e) for e in self._entities])
        if kinds:  # (values compared with a field-level kind's field: as it stores them)
            condition = rename_paths(condition, {}, kinds)
        combined = condition if self._filter is None else self._filter & condition
        return self._with(_filter=combined)

    # -- requests --------------------------------------------------------------------
    def _request(self, i: int, sel: Selection[T], *, count: bool = False,
                 attrs: Sequence[str] = ()) -> dict[str, Any]:
        ph = Placeholders(sel.renames)
        request = self._source(i, ph)
        cond = self._filter
        if (count or self._types_on_server) and not sel.by_shape:  # (projected)
            selected = sel.type_condition(latest=self._types_on_server, ttl=count)
            cond = selected if cond is None else selected & cond
        if cond is not None:
            request["FilterExpression"] = cond.render(ph)
        if attrs:
            wanted = dict.fromkeys([*attrs, sel.ttl_attr])  # TTL: to tell expired items
            request["ProjectionExpression"] = ", ".join(  # (whole names: never paths)
                ph.segments((sel.renames.get(a, a),)) for a in wanted if a)
        if count:
            request["Select"] = "COUNT"
        if self._consistent:
            request["ConsistentRead"] = True
        return ph.apply(request)

    def _pager(self, sel: Selection[T], positions: list[Any],
               attrs: Sequence[str] = ()) -> Pager:
        """The paging state of this read from ``positions``; its answers read from their
        bytes into objects where they can be (:meth:`Selection.reader`), else as items
        (decoded when taken). Not where items are projected, nor for a merge of ordered
        streams (it orders items by their stored keys), nor for a scan with a limit (a
        scan's ``Limit`` counts items evaluated, so an answer may hold far more results
        than such a read takes: only those it takes are decoded)."""
        n = len(positions)
        ordered = self._ordered
        reader = None if attrs or (n > 1 if ordered else self._limit is not None) else (
            sel.reader())
        return Pager([self._request(i, sel, attrs=attrs) for i in range(n)], positions,
                     sel.kept, sel.position, ordered=ordered, reverse=self._reverse,
                     order_attrs=sel.order_attrs, foreign=sel.foreign, reader=reader)

    def _run(self, pager: Pager, limit: Callable[[int], int | None],
             max_rounds: int | None = None, room: Callable[[], int | None] = lambda: None,
             preparing: tuple[Any, ...] = ()) -> Stream:
        """Results in order (items, or objects read from the answers' bytes), requests
        sent as the pager asks (several at once); each batch prepared for the specs
        ``preparing`` (key material its decoding needs) before it goes out.

        Results go out in batches (what the pager holds), each at most ``room()``: how
        many the consumer still takes (``None``: any number; at least 1 whenever it
        resumes the stream). A consumer that stops once its room is filled so leaves
        the pager exactly where it would have item by item, and nothing more is read.
        """
        origins = tuple(self._entities)  # on_request hooks see which entities a read was for
        rounds = 0
        while True:
            wanted = pager.wants(limit)
            if wanted:
                if max_rounds is not None and rounds >= max_rounds:
                    return
                rounds += 1
                outs = yield from gather([call(self._operation, r, origins, reader=pager.reader,
                                               budget=self._budget) for _, r in wanted],
                                         FAN_OUT)
                for (i, _), out in zip(wanted, outs, strict=True):
                    pager.feed(i, out)
                continue
            batch = pager.take(room())
            if not batch:
                return
            if preparing:
                yield from prepare_rows(preparing, batch)
            yield Emit(batch)

    def _results(self, sel: Selection[T], pager: Pager, want: int | None,
                 limit: Callable[[int], int | None], max_rounds: int | None = None,
                 room: Callable[[], int | None] = lambda: None) -> Stream:
        """Whole result items: read by key in batches where the source lacks attributes
        (in the read's order, requested types only, reading on to reach ``want``).
        ``room``: as for :meth:`_run` (the consumer takes ``want`` in all)."""
        if not sel.fetch:
            yield from self._run(pager, limit, max_rounds, room, sel.preparing)
            return
        attrs = spec_of(self._entities[0]).table_key_attrs
        produced = 0
        n = 0
        chunk: list[Item] = []

        def chunk_room() -> int:
            return n - len(chunk)

        def take(batch: Sequence[Item]) -> bool:
            chunk.extend(batch)
            return len(chunk) >= n

        stream = self._run(pager, limit, max_rounds, chunk_room)
        while want is None or produced < want:
            n = BATCH_GET if want is None else min(BATCH_GET, want - produced)
            chunk.clear()
            yield from consume(stream, take)
            if not chunk:
                return
            keys = [{a: c[a] for a in attrs} for c in chunk]
            found = yield from batch_get_p(self._table_name(), keys, consistent=self._consistent,
                                           origins=tuple(self._entities))
            owned = [item for key in keys
                     if (item := found.get(key_id(key))) is not None and sel.owns(item)]
            if owned:  # at most n, within the consumer's room
                produced += len(owned)
                if sel.preparing:
                    yield from prepare_rows(sel.preparing, owned)
                yield Emit(owned)

    def _iter_limit(self, remaining: Callable[[], int | None]) -> Callable[[int], int | None]:
        def limit(live: int) -> int | None:
            if self._page_size is not None:
                return self._page_size
            if (left := remaining()) is None:
                return ITER_PAGE_ITEMS
            return per_request_limit(left, live) if self._ordered else None
        return limit

    def _items(self, sel: Selection[T], attrs: Sequence[str] = ()) -> Stream:
        """Results (projected to ``attrs`` when given), up to ``limit``: what iteration
        and every terminal reading to the end drive."""
        pager = self._pager(sel, [None] * self._streams(), attrs)
        want = self._limit
        if want is None:
            return self._results(sel, pager, None, self._iter_limit(lambda: None))
        count = 0

        def remaining() -> int:
            return want - count

        def seen(batch: Sequence[Item]) -> bool:
            nonlocal count
            count += len(batch)
            return count >= want

        return forward(self._results(sel, pager, want, self._iter_limit(remaining),
                                     room=remaining), seen)

    # -- protocols of the terminals (both session kinds drive these) -----------------
    def _count_p(self) -> Proto[int]:
        sel = self._selection()
        n = self._streams()
        if not sel.by_shape and not sel.counts_on_client(self._types_on_server):
            requests = [self._request(i, sel, count=True) for i in range(n)]
            total = sum((yield from gather([self._count_stream(r) for r in requests], FAN_OUT)))
            return total if self._limit is None else min(total, self._limit)
        # (a rule keeps: whole rows; a scoped read asks each item's stored scope fields too)
        attrs = [] if sel.keeping else [*sel.key_attrs, *([] if sel.by_shape else [
            sel.type_attr]), *sel.scope_attrs]
        counted = 0
        cap = self._limit
        pager = Pager([self._request(i, sel, attrs=attrs) for i in range(n)], [None] * n,
                      sel.kept, sel.position, ordered=False)

        def room() -> int | None:
            return None if cap is None else cap - counted

        def seen(batch: Sequence[Item]) -> bool:
            nonlocal counted
            counted += len(batch)
            return cap is not None and counted >= cap

        yield from consume(self._run(pager, lambda live: None, room=room), seen)
        return counted

    def _count_stream(self, request: dict[str, Any]) -> Proto[int]:
        total = 0
        while True:
            out = yield from call(self._operation, request, tuple(self._entities),
                                 budget=self._budget)
            total += int(out.get("Count", 0))
            last = out.get("LastEvaluatedKey")
            if not last or (self._limit is not None and total >= self._limit):
                return total
            request = {**request, "ExclusiveStartKey": last}

    def _values_p(self, fields: tuple[str, ...]) -> Proto[list[dict[str, Any]]]:
        if not fields:
            raise DynaormError("values() needs at least one field name")
        sel = self._selection()
        sel.check_fields(fields)
        names = list(dict.fromkeys(fields))
        items = yield from self._holding_p(sel, names)
        return [sel.values_of(item, names) for item in items]

    def _keys_p(self) -> Proto[list[dict[str, Any]]]:
        sel = self._selection()
        items = yield from self._holding_p(sel, [f for _, s in sel.types.values()
                                                 for f in s.lookup_fields])
        return [sel.values_of(item) for item in items]

    def _holding_p(self, sel: Selection[T], names: Sequence[str]) -> Proto[list[Item]]:
        """The result items holding ``names``: projected to them (and to what tells the
        items apart), or whole where they are read by key or a rule's ``keeps`` reads
        them."""
        attrs = () if sel.fetch or sel.keeping else (  # (each once: _request)
            *names, *sel.key_attrs, sel.type_attr, *sel.scope_attrs)
        return (yield from pull(self._items(sel, attrs), None))

    def _operation_of(self, terminal: str | None = None) -> Operation:
        """What the hooks are told this read is: each page of an iteration, or (named)
        a terminal that reads to its end (``count``, ``values``, ``keys``, ``page``)."""
        name = self._operation.lower() + ("" if terminal is None else f".{terminal}")
        return Operation(name, (self._table_name(),), self._entities)

    def _table_name(self) -> str:
        return spec_of(self._entities[0]).table.name

    # -- pages -----------------------------------------------------------------------
    def _fingerprint(self, sel: Selection[T]) -> str:
        from dynaorm.read import cursor as cursors  # (loaded by the first page's cursor)

        probe = self._request(0, sel) if self._streams() else None
        return cursors.fingerprint({"o": self._operation, "r": probe, "t": sorted(sel.types),
                                    "x": sel.exclude, "h": sel.history_base,
                                    "n": self._streams()})

    def _accept_cursor(self, cursor: str | None, sel: Selection[T]) -> tuple[
            list[Any], int, str | None]:
        """THE place where a client's cursor is accepted: decoded, verified, and its
        positions checked against this read's plan (its partitions and key conditions).
        Returns (positions, results served, the read's fingerprint: made only when a
        cursor comes in, or later when one goes out)."""
        n = self._streams()
        if cursor is None:
            return [None] * n, 0, None
        from dynaorm.read import cursor as cursors

        fp = self._fingerprint(sel)
        try:
            packed, served = cursors.decode_cursor_state(cursor, fp, n,
                                                         secret=cursors.read_secret(self))
            positions = [sel.unpack(p, self._fixed(i)) for i, p in enumerate(packed)]
            cursors.check_positions(positions, served, limit=self._limit,
                                    conditions=[self._key_conditions(i) for i in range(n)],
                                    key_attrs=sel.key_attrs,
                                    roles=spec_of(self._entities[0]).table.key_roles)
        except InvalidCursorError as exc:
            raise InvalidCursorError(f"{self._describe()}: {exc}") from exc
        return positions, served, fp

    def _page_p(self, cursor: str | None) -> Proto[Page[T]]:
        sel = self._selection()
        positions, served, fp = self._accept_cursor(cursor, sel)
        pager = self._pager(sel, positions)
        items: list[T] = []
        ordered = self._ordered  # (a scan's page: one request per segment still reading)
        want = (self._page_size or self._limit or DEFAULT_PAGE_SIZE) if ordered else None
        if self._limit is not None:
            left = self._limit - served
            want = left if want is None else min(want, left)

        def per_request(live: int) -> int | None:
            if not ordered or want is None:
                return self._page_size or DEFAULT_PAGE_SIZE
            return per_request_limit(want - len(items), live)

        def room() -> int | None:
            return None if want is None else want - len(items)

        def take(batch: Sequence[Item]) -> bool:
            items.extend(sel.decoded(batch))
            return len(items) == want

        if want != 0:
            yield from consume(self._results(sel, pager, want, per_request,
                                             None if ordered else 1, room), take)
        served += len(items)
        if pager.exhausted or (self._limit is not None and served >= self._limit):
            return Page(items, None, pager.skipped)
        from dynaorm.read import cursor as cursors

        packed = [sel.pack(p, self._fixed(i)) for i, p in enumerate(pager.positions)]
        cursor = cursors.encode_cursor(fp or self._fingerprint(sel), packed, served,
                                       secret=cursors.read_secret(self))
        return Page(items, cursor, pager.skipped)

