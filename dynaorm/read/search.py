"""Vector search as a pure description (contract 21): :class:`SearchSpec`, one
``SearchVectors`` request of a :class:`~dynaorm.VectorIndex` and the protocol that reads
its answer into typed :class:`Hit` s. :class:`dynaorm.sync.reads.Search` (sync) and
``AsyncSearch`` add the terminal that runs it.

Everything a search takes is checked before it is sent: the vector (its length, each
number finite within float32's range), ``top`` (1 to 100, DynamoDB's bounds), the
partition value the index's search schema requires, and ``where``, which takes only what
DynamoDB's search condition allows (``F(filter) == value`` joined with ``&``, each filter
attribute of the index once).

Hits are read as a query reads its items: only the requested entity's rows are hits (its
latest copies, not expired); an item of another type in the index is skipped and counted
(:attr:`Hits.skipped`); an item still in the entity's previous layout (``Meta.previous``)
is a hit, read as current (a write of it moves it). A search leaves the vector out of what
it returns unless asked, and an index's copy of it holds 32-bit floats, the numbers
dynaorm stores: where the index projects every attribute of the entity (:func:`asked`),
the search asks for them all and each hit is the stored item (one request); elsewhere each
hit is read by key (``BatchGetItem``), as a projected GSI's items are, so that an object
found by a search is the stored item exactly (what a later write of it is conditioned
on); where the index carries the type attribute (``ALL``, ``INCLUDE``), items of other
types and expired ones are left out before that read. An answer that is not DynamoDB's
(more hits than asked, scores out of the index's order, a hit without its key) is
:class:`~dynaorm.BadAnswerError`.
"""

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, Self, TypeVar

from dynaorm._types import AttributeValue, Item
from dynaorm.caches import cache
from dynaorm.errors import BadAnswerError, DynaormError, InvalidValueError
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.steps import Proto, call
from dynaorm.read.batches import FETCHING, batch_get_p
from dynaorm.read.selection import Selection, selection
from dynaorm.schema.checks import JOB_MARK
from dynaorm.schema.entity import T, prepare_rows, spec_of
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.table import VectorIndex
from dynaorm.values.codec import encode_value
from dynaorm.values.expressions import Condition, Placeholders, equalities
from dynaorm.values.keys import key_id
from dynaorm.values.limits import float32, short_repr
from dynaorm.values.ttl import expired

S = TypeVar("S", bound="SearchSpec[Any]")
#: the most hits one search returns (DynamoDB's ``TopK`` bound)
MAX_TOP = 100
#: the operation's name
OPERATION = "SearchVectors"


@dataclass(frozen=True, slots=True)
class Hit(Generic[T]):
    """One hit of a vector search: the entity as stored, and its score (COSINE: 0 to 2,
    EUCLIDEAN: a distance, lower is nearer; DOT_PRODUCT: higher is nearer)."""

    item: T
    """The entity."""
    score: float
    """Its score for the search's vector, under the index's distance function."""


class Hits(list[Hit[T]]):
    """The hits of a search, nearest first (DynamoDB's order), with :attr:`skipped`."""

    skipped: int = 0
    """Items the search returned that are not hits: of another entity type (or of none),
    or not the entity's latest copy. Expired items (past their TTL) are left out
    uncounted, as a query leaves them."""


def _field_of(spec: EntitySpec, attr: str, index: VectorIndex) -> str:
    """The field of ``spec`` stored as ``attr`` (an attribute of ``index``), else a
    :class:`DynaormError`."""
    name = spec.stored_fields.get(attr)
    if name is None:
        raise DynaormError(f"{spec.name} has no field stored as {attr!r}, an attribute of "
                           f"vector index {index.name!r}")
    return name


def _stored(spec: EntitySpec, name: str, value: Any, attr: str) -> AttributeValue:
    """``value`` of field ``name`` as a search condition sends it: validated as the field,
    of the type the index's search schema declares for ``attr``."""
    try:
        av = encode_value(spec.dump_field(name, value))
    except (ValueError, TypeError) as exc:  # (pydantic's ValidationError is a ValueError)
        raise InvalidValueError(f"{spec.name}.{name}: {value!r} does not fit the field: "
                                f"{exc}") from None
    declared = spec.table.key_type(attr)
    if declared not in av or av.get(declared) in ("", b""):
        raise InvalidValueError(f"{spec.name}.{name}: a search needs a non-empty "
                                f"{declared} value for {attr!r}, not {value!r}")
    return av


def _vector(index: VectorIndex, vector: Any) -> tuple[float, ...]:
    """The search vector as float32 numbers, or :class:`InvalidValueError` (showing a
    summary of it, never the whole of a long one)."""
    if isinstance(vector, str | bytes | bytearray | Mapping) or not isinstance(
            vector, Iterable):
        raise InvalidValueError(f"search of vector index {index.name!r}: vector= takes a "
                                f"list of {index.dimensions} numbers; {short_repr(vector)} "
                                f"({type(vector).__name__}) is not a list of numbers")
    try:
        values = list(vector)
        if len(values) != index.dimensions:
            raise ValueError(f"{len(values)} numbers, not {index.dimensions}")
        return tuple(float32(values))
    except (TypeError, ValueError) as exc:
        raise InvalidValueError(f"search of vector index {index.name!r}: vector= takes "
                                f"{index.dimensions} finite numbers: {exc}") from None


_ASKED: dict[tuple[type[Any], str], tuple[str, ...]] = cache("search.asked")


def asked(spec: EntitySpec, index: VectorIndex) -> tuple[str, ...]:
    """The attributes a search of ``index`` asks for: every one a row of ``spec`` may hold
    (its fields, keys, index keys, type, revision, the rules' own), when the index
    projects them all; then the search is one request, each hit the stored item (the
    index's copy of a vector holds the 32-bit floats dynaorm stored). ``()``: the index
    leaves some out (``KEYS_ONLY``, an ``INCLUDE`` short of them): each hit is read by
    key, as a projected global index's items are."""
    found = _ASKED.get((spec.cls, index.name))
    if found is None:
        table = spec.table
        names = {*spec.stored_fields, *spec.table_key_attrs, *spec.index_attributes,
                 *spec.rules.attributes, *(n for n, _ in spec.rules.pin(0)), JOB_MARK,
                 *(a for a in (table.type_attribute, table.revision_attribute) if a)}
        projection = index.projection
        held = None if projection == "ALL" else set() if isinstance(projection, str) else {
            *projection, *spec.table_key_attrs, *index.search_schema}
        found = tuple(sorted(names)) if held is None or names <= held else ()
        _ASKED[spec.cls, index.name] = found
    return found


def search_spec(kind: type[S], entity: type[Any], index: str, vector: Any, top: int,
                fields: Mapping[str, Any], driver: Any) -> S:
    """A search (of class ``kind``) of ``entity`` in its table's vector index ``index`` for
    the ``top`` nearest to ``vector``, in the partition ``fields`` name (the field stored
    as the index's partition attribute), every argument checked."""
    spec = spec_of(entity)
    found = spec.table.vector_index(index)
    _field_of(spec, found.attribute, found)
    if type(top) is not int or not 1 <= top <= MAX_TOP:
        raise InvalidValueError(f"search of vector index {index!r}: top= takes a whole "
                                f"number from 1 to {MAX_TOP}, got {top!r}")
    partition = None if found.partition is None else _field_of(spec, found.partition, found)
    if set(fields) != ({partition} if partition else set()):
        wants = f"{partition}=..." if partition else "no partition"
        raise DynaormError(f"search of vector index {index!r} of {spec.name}: it takes "
                           f"{wants}, got {sorted(fields)}")
    scope = () if partition is None or found.partition is None else (
        (found.partition, _stored(spec, partition, fields[partition], found.partition)),)
    return kind((entity,), found, _vector(found, vector), top, scope, _driver=driver)


@dataclass(frozen=True, eq=False)
class SearchSpec(Generic[T]):
    """A vector search as data: build one with ``Session.search`` (a
    :class:`dynaorm.Search`) or ``AsyncSession.search``; :meth:`where` returns a new one."""

    _entities: tuple[type[T], ...]
    _index: VectorIndex
    _vector: tuple[float, ...]
    _top: int
    #: (attribute, value) the condition requires: the partition's, then the filters'
    _scope: tuple[tuple[str, AttributeValue], ...] = ()
    _driver: Any = field(default=None, compare=False, repr=False)
    #: a scoped session's scope (:class:`~dynaorm.core.scope.Scope`; ``None``: unscoped):
    #: a hit is a result only when its stored key is inside it
    _within: Any = field(default=None, compare=False, repr=False)

    def where(self, condition: Condition) -> Self:
        """Only hits whose filter attributes hold these values: ``F(name) == value`` for
        fields stored as the index's ``filters``, joined with ``&``, each once (all DynamoDB's
        search condition allows; anything else is refused before sending)."""
        if not isinstance(condition, Condition):
            raise TypeError("where() takes a condition built from F(...)")
        spec, index = spec_of(self._entities[0]), self._index
        found = equalities(condition)
        allowed = {spec.stored_fields[a]: a for a in index.filters if a in spec.stored_fields}
        unknown = sorted({str(p) for p, _ in found or ()} - set(allowed))
        if unknown:
            what = "a field" if unknown[0] in spec.cls.model_fields else "no field"
            raise InvalidValueError(
                f"search of vector index {index.name!r}: where() names {unknown[0]!r}, "
                f"{what} of {spec.name} that is not a filter of the index (its filter "
                f"fields: {sorted(allowed)})")
        if found is None:
            raise InvalidValueError(
                f"search of vector index {index.name!r}: where() takes only F(field) == "
                f"value, joined with &, of its filter fields {sorted(allowed)}")
        scope = [*self._scope, *((allowed[p], _stored(spec, p, v, allowed[p])) for p, v in found)]
        if len({a for a, _ in scope}) != len(scope):
            raise InvalidValueError(f"search of vector index {index.name!r}: one condition "
                                    "per attribute")
        return dataclasses.replace(self, _scope=tuple(scope))

    # -- the request ---------------------------------------------------------------------
    def _request(self) -> dict[str, Any]:
        """The ``SearchVectors`` request: asking for every attribute the entity's rows may
        hold when the index projects them all (:func:`asked`)."""
        spec, index, ph = spec_of(self._entities[0]), self._index, Placeholders()
        request = {
            "TableName": spec.table.name, "IndexName": index.name, "TopK": self._top,
            "SearchVector": [{"N": f"{v:.9g}"} for v in self._vector]}
        if self._scope:
            request["SearchConditionExpression"] = " AND ".join(
                f"{ph.name(a)} = {ph.value_av(av)}" for a, av in self._scope)
        names = asked(spec, index)
        if names:
            request["ProjectionExpression"] = ", ".join(ph.name(a) for a in names)
        return ph.apply(request)

    def _selection(self) -> Selection[T]:
        return selection(self._entities, None, latest_only=True, scope=self._within)

    def _operation_of(self) -> Operation:
        """What the hooks are told this search is."""
        return Operation("search", (spec_of(self._entities[0]).table.name,), self._entities)

    # -- the protocol --------------------------------------------------------------------
    def _search_p(self) -> Proto[Hits[T]]:
        out = yield from call(OPERATION, self._request(), self._entities)
        sel, hits, spec = self._selection(), Hits[T](), spec_of(self._entities[0])
        old = spec.rules.before
        wanted, found = self._sorted(sel, spec, hits, out.get("SearchResults") or [])
        stored = {} if not wanted else (yield from batch_get_p(
            spec.table.name, [key for key, _ in wanted], origins=self._entities))
        yield from _prepared(sel, stored, found)
        rows = iter(wanted)
        for hit in found:
            key, score = next(rows) if hit is None else hit
            row = stored.get(key_id(key)) if hit is None else key
            if row is None or expired(row, sel.ttl_attr):
                continue  # (gone since the index answered; past its TTL)
            if sel.owns(row):
                hits.append(Hit(sel.decode(row), score))
            elif old.owns(row):  # (read as current, as a scan reads it)
                obj = yield from old.owner(spec, row, FETCHING)
                if self._within is None or self._within.holds(obj):
                    hits.append(Hit(obj, score))  # (else a stale key's row: not a hit)
            else:
                sel.foreign(row)
                hits.skipped += 1
        return hits

    def _sorted(self, sel: Selection[T], spec: Any, hits: Hits[T], results: Any
                ) -> tuple[list[tuple[Item, float]], list[tuple[Item, float] | None]]:
        """The admitted hits in order: each the item the index holds (``found``) when it
        is the whole stored item, else ``None`` and its key to read (``wanted``); a hit
        no class claims noted and skipped."""
        old, whole = spec.rules.before, bool(asked(spec, self._index))
        wanted: list[tuple[Item, float]] = []
        found: list[tuple[Item, float] | None] = []  # (None: the next of ``wanted``)
        for item, score in self._admitted(spec, results):
            if whole and sel.keep(item) and not old.owns(item):
                found.append((item, score))  # (the stored item, its vector the index's copy)
            elif sel.type_attr not in item or sel.keep(item) or (  # (KEYS_ONLY: told after)
                    old.owns(item)):
                wanted.append(({a: item[a] for a in spec.table_key_attrs}, score))
                found.append(None)
            elif not expired(item, sel.ttl_attr):
                sel.foreign(item)  # (a type name no class claims is noted, once)
                hits.skipped += 1
        return wanted, found

    def _admitted(self, spec: Any, results: Any) -> list[tuple[Item, float]]:
        """:meth:`_checked`'s hits, less those whose key is another scope's whatever their
        attributes say (never read, never counted)."""
        checked, within = self._checked(results), self._within
        return checked if within is None else [
            (item, score) for item, score in checked if within.admits(spec, item)]

    def _checked(self, results: Any) -> list[tuple[Item, float]]:
        """The answer's ``(item, score)`` pairs, or :class:`BadAnswerError`: at most
        ``top`` of them, each with its table key and a finite score, in the index's
        order (ascending; descending for ``DOT_PRODUCT``)."""
        keys = spec_of(self._entities[0]).table_key_attrs
        order = -1.0 if self._index.distance == "DOT_PRODUCT" else 1.0
        found: list[tuple[Item, float]] = []
        problem = "SearchResults that are not a list" if not isinstance(results, list) else (
            f"{len(results)} hits for top={self._top}" if len(results) > self._top else None)
        for result in results if problem is None else ():
            item = result.get("Item") if isinstance(result, dict) else None
            score = result.get("Score") if isinstance(result, dict) else None
            if not isinstance(item, dict) or not all(isinstance(item.get(a), dict)
                                                     for a in keys):
                problem = "a hit without its table key"
            elif isinstance(score, bool) or not isinstance(score, int | float) or (
                    not math.isfinite(score)):
                problem = f"a hit scored {score!r}"
            elif found and (score - found[-1][1]) * order < 0:
                problem = f"scores out of the order of {self._index.distance}"
            else:
                found.append((item, float(score)))
                continue
            break
        if problem is not None:
            raise BadAnswerError(OPERATION, "ConnectionError",
                                 f"an answer that is not DynamoDB's: {problem}")
        return found


def _prepared(sel: Selection[Any], stored: Mapping[Any, Item],
              found: list[tuple[Item, float] | None]) -> Proto[None]:
    """What the hits' rules need before they decode (key material, offloaded values):
    the rows read by key and those the index answered whole."""
    if sel.preparing:
        yield from prepare_rows(sel.preparing, [*stored.values(), *(
            hit[0] for hit in found if hit is not None)])
