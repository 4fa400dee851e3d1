"""Scans: every item of some entity types in the table or an index (contract section 13).

A :class:`ScanSpec` has a query's modifiers and terminal protocols. Type selection happens
on the server (``FilterExpression`` on the type attribute, and ``begins_with(sk, "v0_")``
for versioned entities' latest copies), so guard items, version rows and other types are
never results and ``count()`` counts only the requested types. ``segments=N`` reads N
segments concurrently (a parallel scan: no order); ``segment=i, segments=N`` reads one
segment, for one worker of a distributed job. Cursors hold one position per segment.
"""

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Self

from dynaorm.errors import DynaormError
from dynaorm.read.selection import Selection, selection
from dynaorm.read.spec import ReadSpec
from dynaorm.schema.entity import T, spec_of
from dynaorm.values.expressions import Condition, Placeholders

#: DynamoDB's largest TotalSegments.
MAX_SEGMENTS = 1_000_000


def check_segments(segment: int | None, segments: int | None) -> tuple[int, ...]:
    """The segment numbers a scan reads (``()``: a plain sequential scan)."""
    for name, value in (("segment", segment), ("segments", segments)):
        if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
            raise DynaormError(f"scan {name}= must be an int, got {value!r}")
    if segments is None:
        if segment is not None:
            raise DynaormError("scan segment= needs segments= (the total)")
        return ()
    if not 1 <= segments <= MAX_SEGMENTS:
        raise DynaormError(f"scan segments= must be 1..{MAX_SEGMENTS}, got {segments}")
    if segment is None:
        return tuple(range(segments))
    if not 0 <= segment < segments:
        raise DynaormError(f"scan segment={segment} is outside 0..{segments - 1}")
    return (segment,)


@dataclass(frozen=True, eq=False)
class ScanSpec(ReadSpec[T]):
    """A scan of some entity types, as data. Build one with ``Session.scan`` (a
    :class:`dynaorm.Scan`) or ``AsyncSession.scan``."""

    _operation = "Scan"
    _types_on_server = True
    _ordered = False

    _entities: tuple[type[T], ...]
    _index: str | None = None
    _segments: tuple[int, ...] = ()
    _total: int | None = None
    _limit: int | None = None
    _page_size: int | None = None
    _consistent: bool = False
    _filter: Condition | None = None
    _driver: Any = field(default=None, compare=False, repr=False)
    _budget: Any = field(default=None, compare=False, repr=False)
    #: a scoped session's scope (:class:`~dynaorm.core.scope.Scope`; ``None``: unscoped):
    #: each item a scan returns is a result only when its stored key is inside it
    _scope: Any = field(default=None, compare=False, repr=False)

    def _with(self, **changes: Any) -> Self:
        return dataclasses.replace(self, **changes)

    def _streams(self) -> int:
        return len(self._segments) or 1

    def _source(self, i: int, ph: Placeholders) -> dict[str, Any]:
        request: dict[str, Any] = {"TableName": spec_of(self._entities[0]).table.name}
        if self._index is not None:
            request["IndexName"] = self._index
        if self._segments:
            request["Segment"] = self._segments[i]
            request["TotalSegments"] = self._total
        return request

    def _selection(self) -> Selection[T]:
        return selection(self._entities, self._index, latest_only=True, scope=self._scope)

    def _describe(self) -> str:
        names = "/".join(e.__name__ for e in self._entities)
        where = f" on index {self._index!r}" if self._index else ""
        return f"{names} scan{where}"
