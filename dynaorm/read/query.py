"""Queries as pure descriptions: :class:`QuerySpec`, generative (each builder method returns
a new object of the same class), planned into key conditions and requests without I/O.
:class:`dynaorm.Query` (sync) and ``AsyncQuery`` add the terminals that run it."""

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Self

from dynaorm.errors import DynaormError, ItemNotFoundError, MultipleResultsError, ScopeError
from dynaorm.read.keycond import KeyPlan, SortCondition, plan_keys, widen
from dynaorm.read.selection import Selection, selection
from dynaorm.read.spec import ReadSpec
from dynaorm.schema.entity import T, spec_of
from dynaorm.values.expressions import Condition, Placeholders
from dynaorm.values.keys import key_av


@dataclass(frozen=True, eq=False)
class QuerySpec(ReadSpec[T]):
    """A query over one partition (or all shards of one), as data. Build one with
    ``Session.query`` (a :class:`dynaorm.Query`) or ``AsyncSession.query``."""

    _operation = "Query"

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
    _shard: int | None = None
    _plan_cache: list[KeyPlan] = field(default_factory=list, compare=False)
    _driver: Any = field(default=None, compare=False, repr=False)
    #: a scoped session's scope (:class:`~dynaorm.core.scope.Scope`; ``None``: unscoped)
    _scope: Any = field(default=None, compare=False, repr=False)

    # -- builders ------------------------------------------------------------------
    def _with(self, **changes: Any) -> Self:
        return dataclasses.replace(self, _plan_cache=[], **changes)

    def _sort(self, op: str, *args: Mapping[str, Any]) -> Self:
        if self._cond is not None:
            raise DynaormError("a query takes one sort-key condition")
        return self._with(_cond=SortCondition(op, args))

    def eq(self, **fields: Any) -> Self:
        """Sort key equal to the one rendered from these sort-key fields."""
        return self._sort("eq", fields)

    def lt(self, **fields: Any) -> Self:
        """Sort key before the one rendered from these fields (kept inside the entity's prefix)."""
        return self._sort("lt", fields)

    def lte(self, **fields: Any) -> Self:
        """Sort key at or before the one rendered from these fields."""
        return self._sort("lte", fields)

    def gt(self, **fields: Any) -> Self:
        """Sort key after the one rendered from these fields (kept inside the entity's prefix)."""
        return self._sort("gt", fields)

    def gte(self, **fields: Any) -> Self:
        """Sort key at or after the one rendered from these fields."""
        return self._sort("gte", fields)

    def between(self, low: Mapping[str, Any], high: Mapping[str, Any]) -> Self:
        """Inclusive range between two sets of sort-key fields."""
        return self._sort("between", low, high)

    def begins_with(self, **fields: Any) -> Self:
        """Sort key starts with these fields; the last one may be a partial value."""
        return self._sort("begins_with", fields)

    def reverse(self) -> Self:
        """The same query in descending sort-key order (again: ascending)."""
        return self._with(_reverse=not self._reverse)

    # -- planning ------------------------------------------------------------------
    def _plan(self) -> KeyPlan:
        if not self._plan_cache:
            plan = plan_keys(spec_of(self._entities[0]), self._index, self._fields, self._cond,
                             latest=not self._history and self._index is None,
                             history=self._history, shard=self._shard)
            for other in self._entities[1:]:
                other_plan = plan_keys(spec_of(other), self._index, self._fields, self._cond,
                                       latest=self._index is None,
                                       shard=self._shard)
                if other_plan.pk_values != plan.pk_values:
                    raise DynaormError(f"{other.__name__} does not share the partition of "
                                       f"{self._entities[0].__name__} for {dict(self._fields)}")
                if self._cond is None:
                    plan = widen(plan, other_plan)  # read what every requested type reads
                elif (other_plan.sk_op, other_plan.sk_values, other_plan.exclude) != (
                        plan.sk_op, plan.sk_values, plan.exclude):
                    # one key condition spans several types only where it reads the same
                    # range for each: their sort-key templates agree on it
                    raise DynaormError(
                        f"a sort-key condition over several types needs their sort-key "
                        f"templates to agree: {other.__name__}'s differs from "
                        f"{self._entities[0].__name__}'s; query them one by one")
            self._plan_cache.append(plan)
        return self._plan_cache[0]

    def _streams(self) -> int:
        plan = self._plan()
        return 0 if plan.empty else len(plan.pk_values)

    def _source(self, i: int, ph: Placeholders) -> dict[str, Any]:
        plan = self._plan()
        parts = []
        for attr, op, values in plan.conditions(i):
            name, vals = ph.segments((attr,)), [ph.value_av(v) for v in values]
            parts.append(f"begins_with({name}, {vals[0]})" if op == "begins_with" else
                         f"{name} BETWEEN {vals[0]} AND {vals[1]}" if op == "BETWEEN" else
                         f"{name} {op} {vals[0]}")
        request = {"TableName": self._table_name(),
                   "KeyConditionExpression": " AND ".join(parts),
                   "ScanIndexForward": not self._reverse}
        if plan.index is not None:  # the query's index, or Meta.history_index for history
            request["IndexName"] = plan.index
        return request

    def _fixed(self, i: int) -> dict[str, Any]:
        plan = self._plan()
        return {plan.pk_attr: key_av(plan.pk_values[i])}

    def _key_conditions(self, i: int) -> list[tuple[str, str, tuple[Any, ...]]]:
        return self._plan().conditions(i)

    def _selection(self) -> Selection[T]:
        plan = self._plan()
        table = spec_of(self._entities[0]).table
        # (one type on the table: its key condition reads latest copies only)
        several = len(self._entities) > 1 and plan.index is None
        scope = self._scope
        keys = True
        if scope is not None and (plan.index is None or table.index(plan.index).is_local):
            # the table's own partition (an LSI's too): every item the query returns holds
            # the partition key it names, admitted here once, by its grammar (each item's
            # stored scope fields are still asked: a stale key's row says another scope)
            for entity in self._entities:
                spec = spec_of(entity)
                for value in plan.pk_values:
                    if not scope.admits_key(spec, value):
                        raise ScopeError(f"{spec.name}: a query of the partition {value!r}"
                                         f", outside this session's scope ({scope}); "
                                         "nothing was sent")
            keys = False
        return selection(self._entities, plan.index, sk_attr=plan.sk_attr,
                         exclude=plan.exclude, history_base=plan.history_base,
                         latest_only=several or table.native(plan.index) is not None,
                         scope=scope, scope_keys=keys)

    def _describe(self) -> str:
        names = "/".join(e.__name__ for e in self._entities)
        return f"{names} query {dict(self._fields)}"

    # -- what the terminal one() decides -----------------------------------------------
    def _only(self, found: list[T]) -> T:
        """The one result of ``found`` (what ``one()`` read with ``limit(2)``)."""
        what = f"{'/'.join(e.__name__ for e in self._entities)} {dict(self._fields)}"
        if not found:
            raise ItemNotFoundError(f"no {what} matched the query")
        if len(found) > 1:
            raise MultipleResultsError(f"more than one {what} matched the query")
        return found[0]
