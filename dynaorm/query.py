"""Lazy, generative queries: each builder method returns a new :class:`Query`."""

from __future__ import annotations

import dataclasses
import heapq
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from ._types import Item
from .cursor import decode_cursor_state, encode_cursor, fingerprint
from .entity import Entity, spec_of
from .errors import DynaormError, InvalidCursorError, ItemNotFoundError, MultipleResultsError
from .expressions import Condition, Placeholders
from .keycond import KeyPlan, SortCondition, plan_keys, widen
from .spec import LATEST_PREFIX, EntitySpec, parse_version_sk

if TYPE_CHECKING:
    from .transport import Transport

__all__ = ["Page", "Query"]

T = TypeVar("T", bound=Entity)
#: Results per ``Query.page()`` when neither ``page_size`` nor ``limit`` is set.
DEFAULT_PAGE_SIZE = 100


@dataclass(frozen=True)
class Page(Generic[T]):
    """One page of results and the cursor of the next (``None`` on the last page)."""

    items: list[T]
    cursor: str | None


@dataclass(frozen=True, eq=False)
class Query(Generic[T]):
    """A query over one partition (or all shards of one). Build with ``Session.query``."""

    _transport: Transport
    _entities: tuple[type[T], ...]
    _fields: Mapping[str, Any]
    _index: str | None = None
    _cond: SortCondition | None = None
    _reverse: bool = False
    _limit: int | None = None
    _page_size: int | None = None
    _consistent: bool = False
    _filter: Condition | None = None
    _history: bool = False
    _plan_cache: list[KeyPlan] = field(default_factory=list, compare=False)

    # -- builders ------------------------------------------------------------------
    def _with(self, **changes: Any) -> Query[T]:
        return dataclasses.replace(self, _plan_cache=[], **changes)

    def _sort(self, op: str, *args: Mapping[str, Any]) -> Query[T]:
        if len(self._entities) > 1:
            raise DynaormError("sort-key conditions need a single entity type")
        if self._cond is not None:
            raise DynaormError("a query takes one sort-key condition")
        return self._with(_cond=SortCondition(op, args))

    def eq(self, **fields: Any) -> Query[T]:
        return self._sort("eq", fields)

    def lt(self, **fields: Any) -> Query[T]:
        return self._sort("lt", fields)

    def lte(self, **fields: Any) -> Query[T]:
        return self._sort("lte", fields)

    def gt(self, **fields: Any) -> Query[T]:
        return self._sort("gt", fields)

    def gte(self, **fields: Any) -> Query[T]:
        return self._sort("gte", fields)

    def between(self, low: Mapping[str, Any], high: Mapping[str, Any]) -> Query[T]:
        """Inclusive range between two sets of sort-key fields."""
        return self._sort("between", low, high)

    def begins_with(self, **fields: Any) -> Query[T]:
        """Sort key starts with these fields; the last one may be a partial value."""
        return self._sort("begins_with", fields)

    def reverse(self) -> Query[T]:
        return self._with(_reverse=not self._reverse)

    def limit(self, n: int) -> Query[T]:
        if n < 1:
            raise ValueError("limit must be >= 1")
        return self._with(_limit=n)

    def page_size(self, n: int) -> Query[T]:
        if n < 1:
            raise ValueError("page_size must be >= 1")
        return self._with(_page_size=n)

    def consistent(self) -> Query[T]:
        table = spec_of(self._entities[0]).table
        if self._index is not None and not table.index(self._index).is_local:
            raise DynaormError(f"index {self._index!r} is global; a GSI cannot be read "
                               "consistently")
        return self._with(_consistent=True)

    def filter(self, condition: Condition) -> Query[T]:
        if not isinstance(condition, Condition):
            raise TypeError("filter() takes a condition built from F(...)")
        combined = condition if self._filter is None else self._filter & condition
        return self._with(_filter=combined)

    # -- planning ------------------------------------------------------------------
    def _plan(self) -> KeyPlan:
        if not self._plan_cache:
            spec = spec_of(self._entities[0])
            plan = plan_keys(spec, self._index, self._fields, self._cond,
                             latest=spec.versioned and not self._history and self._index is None,
                             history=self._history)
            for other in self._entities[1:]:
                other_spec = spec_of(other)
                other_plan = plan_keys(other_spec, self._index, self._fields, None,
                                       latest=other_spec.versioned and self._index is None)
                if other_plan.pk_values != plan.pk_values:
                    raise DynaormError(f"{other.__name__} does not share the partition of "
                                       f"{self._entities[0].__name__} for {dict(self._fields)}")
                plan = widen(plan, other_plan)  # read what every requested type reads
            self._plan_cache.append(plan)
        return self._plan_cache[0]

    def _request(self, plan: KeyPlan, pk_value: str) -> dict[str, Any]:
        spec = spec_of(self._entities[0])
        ph = Placeholders()
        expr = f"{ph.name(plan.pk_attr)} = {ph.value_av({'S': pk_value})}"
        if plan.sk_op is not None and plan.sk_attr is not None:
            name = ph.name(plan.sk_attr)
            vals = [ph.value_av({"S": v}) for v in plan.sk_values]
            if plan.sk_op == "BETWEEN":
                expr += f" AND {name} BETWEEN {vals[0]} AND {vals[1]}"
            elif plan.sk_op == "begins_with":
                expr += f" AND begins_with({name}, {vals[0]})"
            else:
                expr += f" AND {name} {plan.sk_op} {vals[0]}"
        request: dict[str, Any] = {"TableName": spec.table.name, "KeyConditionExpression": expr,
                                   "ScanIndexForward": not self._reverse}
        if plan.index is not None:  # the query's index, or Meta.history_index for history
            request["IndexName"] = plan.index
        if self._filter is not None:
            request["FilterExpression"] = self._filter.render(ph)
        if self._consistent:
            request["ConsistentRead"] = True
        size = self._page_size or (self._limit + 1 if self._limit else None)
        if size:
            request["Limit"] = size
        return ph.apply(request)

    def _shape(self) -> dict[str, Any]:
        plan = self._plan()
        probe = self._request(plan, plan.pk_values[0])
        probe.pop("Limit", None)
        types = sorted(spec_of(e).type_name for e in self._entities)
        return {"r": probe, "t": types, "x": plan.exclude, "h": plan.history_base,
                "n": len(plan.pk_values)}

    # -- execution -----------------------------------------------------------------
    def _reader(self) -> _Reader[T]:
        plan = self._plan()
        spec = spec_of(self._entities[0])
        types = {spec_of(e).type_name: (e, spec_of(e)) for e in self._entities}
        latest_only = frozenset(
            name for name, (_, s) in types.items()
            if len(types) > 1 and plan.index is None and s.versioned)
        attrs = (spec.table.pk, spec.table.sk, plan.pk_attr, plan.sk_attr)
        return _Reader(spec.table.type_attribute, types, plan.sk_attr, spec.table.sk,
                       plan.exclude, plan.history_base, latest_only,
                       tuple(dict.fromkeys(a for a in attrs if a)))

    def _start(self, plan: KeyPlan, shard: int, start: Any) -> dict[str, Any]:
        """The first Query request of one shard, resuming after ``start`` if given."""
        request = self._request(plan, plan.pk_values[shard])
        if start:
            request["ExclusiveStartKey"] = start
        return request

    def _stream(self, plan: KeyPlan, reader: _Reader[T], shard: int, start: Any,
                first: dict[str, Any] | None = None) -> Iterator[Item]:
        """Kept items of one partition, pages fetched lazily."""
        request = self._start(plan, shard, start)
        page = first
        keep = reader.keep
        while True:
            if page is None:
                page = self._transport.call("Query", request)
            for item in page.get("Items", ()):
                if keep(item):
                    yield item
            last = page.get("LastEvaluatedKey")
            if not last:
                return
            request = {**request, "ExclusiveStartKey": last}
            page = None

    def _merged(self, reader: _Reader[T], starts: list[Any]) -> Iterator[tuple[int, Item]]:
        """(shard, item) in key order across every shard of the partition."""
        plan = self._plan()
        if plan.empty:
            return
        n = len(plan.pk_values)
        if n == 1:
            for item in self._stream(plan, reader, 0, starts[0]):
                yield 0, item
            return
        sk_attr, pk_attr = plan.sk_attr, plan.pk_attr

        def first_page(i: int) -> dict[str, Any]:
            result: dict[str, Any] = self._transport.call("Query", self._start(plan, i, starts[i]))
            return result

        with ThreadPoolExecutor(max_workers=min(n, 16)) as pool:
            firsts = list(pool.map(first_page, range(n)))

        def tagged(i: int) -> Iterator[tuple[int, Item]]:
            # a function, not a generator expression: each stream must keep its own ``i``
            for item in self._stream(plan, reader, i, starts[i], first=firsts[i]):
                yield i, item

        def order(entry: tuple[int, Item]) -> tuple[str, str]:
            item = entry[1]
            return (item[sk_attr]["S"] if sk_attr else "", item[pk_attr]["S"])

        yield from heapq.merge(*(tagged(i) for i in range(n)), key=order,
                               reverse=self._reverse)

    def __iter__(self) -> Iterator[T]:
        reader = self._reader()
        decode = reader.decode
        n = len(self._plan().pk_values)
        for count, (_, item) in enumerate(self._merged(reader, [None] * n), start=1):
            yield decode(item)
            if self._limit is not None and count >= self._limit:
                return

    def all(self) -> list[T]:
        return list(self)

    def first(self) -> T | None:
        for obj in self.limit(1):
            return obj
        return None

    def one(self) -> T:
        found = list(self.limit(2))
        what = f"{'/'.join(e.__name__ for e in self._entities)} {dict(self._fields)}"
        if not found:
            raise ItemNotFoundError(f"no {what} matched the query")
        if len(found) > 1:
            raise MultipleResultsError(f"more than one {what} matched the query")
        return found[0]

    def count(self) -> int:
        return sum(1 for _ in self)

    def page(self, cursor: str | None = None) -> Page[T]:
        """Up to ``page_size`` (or ``limit``) results and the cursor that resumes after them."""
        plan = self._plan()
        n = len(plan.pk_values)
        fp = fingerprint(self._shape())
        positions: list[Any] = [None] * n
        served = 0  # results given by earlier pages: a limit holds across pages
        if cursor is not None:
            try:
                positions, served = decode_cursor_state(cursor, fp, n)
            except InvalidCursorError as exc:
                names = "/".join(e.__name__ for e in self._entities)
                raise InvalidCursorError(f"{names} query {dict(self._fields)}: {exc}") from exc
        size = self._page_size or self._limit or DEFAULT_PAGE_SIZE
        if self._limit is not None:
            size = min(size, self._limit - served)
        items: list[T] = []
        exhausted = True
        reader = self._reader()
        for shard, item in self._merged(reader, list(positions)):
            if len(items) >= size:
                exhausted = False
                break
            items.append(reader.decode(item))
            positions[shard] = reader.position(item)
        served += len(items)
        if self._limit is not None and served >= self._limit:
            exhausted = True
        return Page(items, None if exhausted else encode_cursor(fp, positions, served))


@dataclass(frozen=True)
class _Reader(Generic[T]):
    """What one execution of a query needs per item, computed once."""

    type_attr: str
    types: Mapping[str, tuple[type[T], EntitySpec]]
    sk_attr: str | None
    table_sk: str | None
    exclude: str | None
    history_base: str | None
    latest_only: frozenset[str]
    key_attrs: tuple[str, ...]

    def keep(self, item: Item) -> bool:
        """Whether a returned item is one of the requested results."""
        kind = item.get(self.type_attr)
        name = None if kind is None else kind.get("S")
        if name not in self.types:
            return False
        if self.exclude is not None and self.sk_attr and item[self.sk_attr]["S"] == self.exclude:
            return False
        if self.history_base is not None and self.table_sk:
            parsed = parse_version_sk(item[self.table_sk]["S"])
            return parsed is not None and parsed[0] >= 1 and parsed[1] == self.history_base
        if name in self.latest_only and self.table_sk:  # several types: latest copies only
            return str(item[self.table_sk]["S"]).startswith(LATEST_PREFIX)
        return True

    def position(self, item: Item) -> Item:
        """The ExclusiveStartKey that resumes right after ``item``."""
        return {a: item[a] for a in self.key_attrs if a in item}

    def decode(self, item: Item) -> T:
        cls, spec = self.types[item[self.type_attr]["S"]]
        return cls._from_item(item, spec)
