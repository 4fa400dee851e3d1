"""Read planning shared by queries and scans (pure: no I/O).

- :class:`Selection` says which returned items are results (the requested entity types,
  by their type attribute or, where an index does not project it, by key shape), how a
  result decodes, and which condition selects the types on the server.
- :class:`~dynaorm.read.pager.Pager` (in :mod:`dynaorm.read.pager`, re-exported here) is the
  paging state of one read over one or more streams; a cursor stores its positions.
"""

import base64
import dataclasses
import functools
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Generic, TypeVar

from pydantic import ValidationError

from dynaorm._types import Item, Reader
from dynaorm.caches import cache
from dynaorm.errors import DynaormError, InvalidCursorError
from dynaorm.read.pager import DONE
from dynaorm.schema.entity import LoadedItems, answer_reader, raw_state, spec_of
from dynaorm.schema.rules import PLAIN_KEYS, KeyLayout
from dynaorm.schema.spec import EntitySpec, annotation_adapter
from dynaorm.schema.table import TableSchema
from dynaorm.schema.templates import KeyTemplate, parse_keys
from dynaorm.schema.unclaimed import note_unclaimed, unclaimed_shape
from dynaorm.values.codec import decode_value
from dynaorm.values.expressions import Condition, attribute
from dynaorm.values.keys import named
from dynaorm.values.ttl import expired

T = TypeVar("T")
#: what an item without the type attribute reads as in Selection.kept (never written to)
#: Keys per BatchGetItem request.
BATCH_GET: Final = 100


def projection_of(table: TableSchema, index: str | None) -> str:
    """``"ALL"``, ``"KEYS_ONLY"`` or ``"INCLUDE"`` for the table (ALL) or one index."""
    if index is None:
        return "ALL"
    projection = table.index(index).projection
    return projection.upper() if isinstance(projection, str) else "INCLUDE"


def _shape_checks(spec: EntitySpec, index: str | None
                  ) -> tuple[tuple[str, KeyTemplate, str], ...]:
    """(attribute, template, prefix) that an item of ``spec`` matches (a prefix: of the
    sort key of its own rows, a latest copy's ``v0_``)."""
    table = spec.table
    checks = [(table.pk, spec.pk, "")]
    if spec.sk is not None and table.sk is not None:
        checks.append((table.sk, spec.sk, spec.rules.sort_keys.latest))
    for idx in spec.indexes:
        if idx.name == index:
            checks.append((idx.pk_attr, idx.pk, ""))
            if idx.sk is not None and idx.sk_attr is not None:
                checks.append((idx.sk_attr, idx.sk, ""))
    return tuple(dict.fromkeys(checks))


@dataclass(frozen=True)
class Selection(Generic[T]):
    """Which returned items are results of a read, and how they decode."""

    type_attr: str
    types: Mapping[str, tuple[type[T], EntitySpec]]
    table_sk: str | None
    key_attrs: tuple[str, ...]          # a position: table keys plus the source's keys
    order_attrs: tuple[str | None, str]  # (sort attribute, partition attribute) of the source
    sk_attr: str | None = None          # the source's sort attribute (for ``exclude``)
    exclude: str | None = None          # drop the item whose sort key equals this
    history_base: str | None = None     # history: keep only v<n>_<base> rows, n >= 1
    latest_only: frozenset[str] = frozenset()  # types whose rows count only as v0_ copies
    #: the requested types whose table sort key carries a prefix (``v0_`` on the latest
    #: copy, ``v<n>_`` on version rows: ``Meta.versioned``), and their layout
    version_keyed: frozenset[str] = frozenset()
    layout: KeyLayout = PLAIN_KEYS
    by_shape: bool = False              # the type attribute is not there: match key shapes
    fetch: bool = False                 # the source lacks attributes: read items by key
    shapes: tuple[tuple[str, tuple[tuple[str, KeyTemplate, str], ...]], ...] = ()
    #: field name -> stored attribute name of the requested types (aliases)
    renames: Mapping[str, str] = field(default_factory=dict)
    #: the table's TTL attribute: items whose TTL has passed are not results
    ttl_attr: str | None = None
    #: the table has no type attribute: items are told apart by key shape only
    shapeless: bool = False
    #: every entity of the table (to tell another type's item from a foreign one)
    table_specs: tuple[EntitySpec, ...] = ()
    #: the table (on a table with a type attribute: to tell type names no class claims)
    table: Any = None
    #: the requested types whose rules prepare before their rows decode (key material)
    preparing: tuple[EntitySpec, ...] = ()
    #: the requested types some rule of which keeps rows from the results
    #: (:meth:`~dynaorm.schema.rules.Rule.keeps`): asked of each of their rows
    keeping: frozenset[str] = frozenset()
    #: a scoped session's :class:`~dynaorm.core.scope.Scope` (``None``: unscoped): an item
    #: is a result only when its stored key is inside it and its stored scope fields say
    #: so too (``scope.admits(spec, item)``)
    scope: Any = None
    #: whether each result's partition key is admitted (``False``: a query of one
    #: partition the scope admitted before sending; its items' stored fields are asked)
    scope_keys: bool = True

    def foreign(self, item: Item) -> bool:
        """Whether ``item`` is skipped (counted in ``Page.skipped``): no entity of the table
        owns it (a type name no class claims, or no fitting key shape on a table without
        a type attribute), or it fits a requested type's templates but another type's
        literal key claims it (``Meta.overlaps``)."""
        if not self.shapeless:
            if self.table is None:
                return False
            name = named(item, self.type_attr)
            if name is None or name in self.types or name in self.table.entities:
                return False  # (most items: a class claims them, one dict lookup)
            return note_unclaimed(self.table, item)
        if not any(s.fits(item) for s in self.table_specs):
            return unclaimed_shape(self.table, item)  # (a receipt is dynaorm's: claimed)
        return self.type_of(item) is None and any(parse_keys(item, checks) is not None
                                                  for _, checks in self.shapes)

    def type_of(self, item: Item) -> str | None:
        """The requested type ``item`` is one of, else ``None``. By key shape on a table
        without a type attribute, a literal key outranks a template where both fit."""
        if self.by_shape:
            for shaped, checks in self.shapes:
                if parse_keys(item, checks) is not None and not (
                        self.shapeless and self.types[shaped][1].outranked(item)):
                    return shaped
            return None
        name = named(item, self.type_attr)
        return name if name in self.types else None

    def keep(self, item: Item) -> bool:
        """Whether a returned item is one of the requested results."""
        name = self.type_of(item)
        if name is None or expired(item, self.ttl_attr) or (
                name in self.keeping and not self.types[name][1].rules.keeps(item)):
            return False
        if self.scope is not None and not self._scoped(self.types[name][1], item):
            return False  # (another scope's key, or attributes of another scope: stale)
        if self.exclude is not None and self.sk_attr and item[self.sk_attr]["S"] == self.exclude:
            return False
        if self.history_base is not None and self.table_sk:
            parsed = self.layout.parse(item[self.table_sk]["S"])
            return parsed is not None and parsed[0] >= 1 and parsed[1] == self.history_base
        if name in self.latest_only and self.table_sk:
            return str(item[self.table_sk]["S"]).startswith(self.layout.latest)
        return True

    def kept(self, items: Sequence[Item]) -> list[Item]:
        """The results among a response's ``items``, in order (:meth:`keep` of each)."""
        if type(items) is LoadedItems:  # objects read from the answer's bytes, all results
            return items
        return [item for item in items if self.keep(item)]

    def owns(self, item: Item) -> bool:
        """Whether a whole item read by key is still one of the requested results."""
        name = (self.type_of(item) if self.shapeless else
                named(item, self.type_attr))
        if name is None or name not in self.types or expired(item, self.ttl_attr) or (
                name in self.keeping and not self.types[name][1].rules.keeps(item)):
            return False
        if self.scope is not None and not self._scoped(self.types[name][1], item):
            return False
        if name in self.version_keyed and self.table_sk and self.history_base is None:
            return str(item[self.table_sk]["S"]).startswith(self.layout.latest)
        return True

    def _scoped(self, spec: EntitySpec, item: Item) -> bool:
        """Whether the scope admits ``item`` (its key and its stored scope fields; only
        the latter where the partition was admitted before sending)."""
        if self.scope_keys:
            return bool(self.scope.admits(spec, item))
        return bool(self.scope.stored(spec, item))

    @functools.cached_property
    def scope_attrs(self) -> tuple[str, ...]:
        """The stored attributes of the scope's fields in the requested types (what a
        read projected to some attributes reads too, for :meth:`keep` to ask them)."""
        if self.scope is None:
            return ()
        return tuple(dict.fromkeys(spec.attr(name) for _, spec in self.types.values()
                                   for name in self.scope.values))

    def position(self, item: Item | T) -> Item | Callable[[], Item]:
        """The ExclusiveStartKey that resumes right after ``item``; after an object read
        from the answer's bytes, what gives it from its stored item when a cursor asks
        (:meth:`pack`: its page decodes again)."""
        if type(item) is not dict:
            return lambda: self.position(raw_state(item).peek_item())  # type: ignore[arg-type,union-attr,return-value]
        return {a: item[a] for a in self.key_attrs if a in item}

    def pack(self, position: Any, fixed: Mapping[str, Any]) -> Any:
        """A position made short for a cursor: its key values in ``key_attrs`` order,
        without the attributes the stream fixes (a shard's partition key)."""
        if position is None or position is DONE:
            return position
        if callable(position):  # (after an object read from the answer's bytes)
            position = position()
        out = []
        for attr in self.key_attrs:
            if attr in fixed:
                continue
            av = position.get(attr)
            if av is not None and "B" in av:
                av = {"B": base64.urlsafe_b64encode(bytes(av["B"])).decode()}
            out.append(None if av is None else av["S"] if set(av) == {"S"} else av)
        return out

    def unpack(self, packed: Any, fixed: Mapping[str, Any]) -> Any:
        """Inverse of :meth:`pack`; anything else is an :class:`InvalidCursorError`."""
        if packed is None or packed is DONE:
            return packed
        names = [a for a in self.key_attrs if a not in fixed]
        if not isinstance(packed, list) or len(packed) != len(names):
            raise InvalidCursorError("page cursor holds a malformed position")
        position = dict(fixed)
        for attr, value in zip(names, packed, strict=True):
            if value is None:
                continue
            if isinstance(value, str):
                position[attr] = {"S": value}
            elif isinstance(value, dict) and len(value) == 1 and set(value) <= {"S", "N"} and (
                    isinstance(next(iter(value.values())), str)):
                position[attr] = value
            elif isinstance(value, dict) and set(value) == {"B"} and isinstance(
                    value["B"], str):
                try:
                    position[attr] = {"B": base64.urlsafe_b64decode(value["B"])}
                except (ValueError, TypeError):
                    raise InvalidCursorError("page cursor holds a malformed position") from None
            else:
                raise InvalidCursorError("page cursor holds a malformed position")
        return position

    def decode(self, item: Item | T) -> T:
        """The entity object of a (whole) result item (an object read from the answer's
        bytes is one already)."""
        if type(item) is not dict:
            return item  # type: ignore[return-value]
        name = self.type_of(item) if self.shapeless else item[self.type_attr]["S"]
        cls, spec = self.types[name or ""]
        return cls._from_item(item, spec)  # type: ignore[attr-defined,no-any-return]

    def decoded(self, items: Sequence[Item | T]) -> Iterator[T]:
        """The entity objects of (whole) result items, in order, one at a time (a loop
        may stop early: the rest are not decoded)."""
        if dict not in map(type, items):  # objects read from the answers' bytes
            return iter(items)  # type: ignore[arg-type]
        return map(self.decode, items)

    def reader(self) -> Reader | None:
        """How a read of whole items may read each answer's bytes into its objects
        itself (:func:`~dynaorm.schema.entity.answer_reader`), or ``None``: a read whose
        results are not decided by the type attribute alone (key shapes, a TTL, a
        strict bound, history, latest copies among several types, a rule that keeps some
        rows from the results), or whose items are read again by key. Scoped: each
        result's stored partition key is admitted as :meth:`keep` admits it (the scope's
        :meth:`~dynaorm.core.scope.Scope.admitter_all` of each type)."""
        if (self.shapeless or self.fetch or self.by_shape
                or self.ttl_attr is not None or self.exclude is not None
                or self.history_base is not None or self.latest_only or self.keeping):
            return None
        if self.scope is not None:
            return answer_reader(self.types, *self._scope_tests)
        return answer_reader(self.types)

    @functools.cached_property
    def _scope_tests(self) -> tuple[dict[str, Any] | None, dict[str, Any]]:
        """The scope's tests of an answer read from its bytes, per type: of its items'
        partition keys (``None`` where they were admitted before sending) and of its
        objects' scope fields."""
        scope = self.scope
        keys = {name: scope.admitter_all(spec) for name, (_, spec) in self.types.items()}
        return (keys if self.scope_keys else None,
                {name: scope.holder(spec) for name, (_, spec) in self.types.items()})

    def type_condition(self, *, latest: bool, ttl: bool) -> Condition:
        """``type IN (...)``; with ``latest``, versioned types only as ``v0_`` copies (the
        table's sort key must then be nameable in the filter: scans, not queries)."""
        copies = self.version_keyed if latest else frozenset()
        plain = sorted(self.types.keys() - copies)
        versioned = sorted(copies)
        parts = []
        if plain:
            parts.append(attribute(self.type_attr).is_in(*plain))
        if versioned and self.table_sk:
            parts.append(attribute(self.type_attr).is_in(*versioned)
                         & attribute(self.table_sk).begins_with(self.layout.latest))
        cond = parts[0]
        for extra in parts[1:]:
            cond = cond | extra
        if ttl and self.ttl_attr is not None:  # expired, not yet deleted: not a result
            ttl_attr = attribute(self.ttl_attr)  # (no TTL, or one still ahead)
            cond = cond & (ttl_attr.not_exists() | (ttl_attr > int(time.time())))
        return cond

    def counts_on_client(self, latest_on_server: bool) -> bool:
        """Whether a count must read keys and apply the rules only the client can (a
        strict bound, history, latest copies among several types, a rule's ``keeps``)
        itself. With ``latest_on_server`` (scans: :meth:`type_condition` with ``latest``)
        the latest-copy rule is part of the server's filter, so it alone does not need
        the client."""
        latest_on_client = bool(self.latest_only) and not (latest_on_server and self.table_sk)
        return bool(self.exclude or self.history_base or latest_on_client or self.keeping
                    or self.scope is not None)

    # -- partial reads -----------------------------------------------------------------
    def check_fields(self, names: Iterable[str]) -> None:
        known = frozenset().union(*(s.field_names for _, s in self.types.values()))
        unknown = sorted(set(names) - known)
        if unknown:
            owners = "/".join(sorted(self.types))
            raise DynaormError(f"{owners} has no field(s) {unknown}")

    def values_of(self, item: Item, names: Sequence[str] | None = None) -> dict[str, Any]:
        """``{name: value}`` of ``names`` from ``item`` (typed like the entity's field;
        ``None`` for a field the item lacks); ``None``: the fields ``get`` takes."""
        name = self.type_of(item) if self.by_shape else str(item[self.type_attr]["S"])
        cls, spec = self.types.get(name or "", (None, None))
        data = spec.decode_fields(item) if spec is not None else {}
        if names is None:
            assert spec is not None
            names = spec.lookup_fields
        return {n: _field_value(cls, n, data[n] if n in data else item.get(
            self.renames.get(n, n)), n in data) for n in names}


def _field_value(cls: type[Any] | None, name: str, found: Any, decoded: bool) -> Any:
    """Field ``name``'s value: ``found`` decoded through the entity's rules (``decoded``:
    an encrypted value opened), else the attribute as stored."""
    if found is None:
        return None
    raw = found if decoded else decode_value(found)
    if cls is None or raw is None or name not in cls.model_fields:
        return raw
    try:  # (a nested model read by its field names too: they are stored)
        return annotation_adapter(cls, name).validate_python(raw, by_name=True)
    except ValidationError:
        return raw


#: (entity classes, index, sort attribute, latest copies only) -> the Selection of their
#: reads: what a read of the same types from the same source selects and decodes the same
#: way (a frozen record, shared by every such read; its cached properties filled once)
_SELECTIONS: dict[tuple[Any, ...], Selection[Any]] = cache("read.selections")
#: the same, of scoped reads: by the read and the scope's values (a Selection's scope
#: decides by its values alone)
_SCOPED: dict[tuple[Any, ...], Selection[Any]] = cache("read.scoped_selections")


def selection(entities: Sequence[type[T]], index: str | None, *, sk_attr: str | None = None,
              exclude: str | None = None, history_base: str | None = None,
              latest_only: bool = False, scope: Any = None,
              scope_keys: bool = True) -> Selection[T]:
    """The :class:`Selection` of a read of ``entities`` from the table or ``index``
    (``latest_only``: a versioned type's rows are results only as its latest copies,
    where no key condition says so): one per kind of read, kept (``read.selections``),
    except where it holds a key value (``exclude``, ``history_base``) or snapshots the
    table's entities (a table without a type attribute, whose later classes change what
    its reads skip): those are built for each read. With ``scope`` (a scoped session's
    :class:`~dynaorm.core.scope.Scope`), its results are only the items it admits (by
    their keys, unless ``scope_keys`` is false, and by their stored scope fields), kept
    per scope's values as well (a web service makes a scoped session a request)."""
    kept = exclude is None and history_base is None  # (no key value held: a kind of read)
    if scope is not None:
        read = (tuple(entities), index, sk_attr, exclude, history_base, latest_only,
                scope_keys, *scope.values.items())
        scoped = _SCOPED.get(read)
        if scoped is None:
            scoped = dataclasses.replace(selection(
                entities, index, sk_attr=sk_attr, exclude=exclude,
                history_base=history_base, latest_only=latest_only), scope=scope,
                scope_keys=scope_keys)
            if kept and not scoped.shapeless:
                if len(_SCOPED) >= 4096:  # (many tenants: the oldest let go)
                    _SCOPED.pop(next(iter(_SCOPED)), None)
                _SCOPED[read] = scoped  # (a table without a type attribute: each read)
        return scoped
    if not kept:
        return _selection(entities, index, sk_attr, exclude, history_base, latest_only)
    key = (tuple(entities), index, sk_attr, latest_only)
    found = _SELECTIONS.get(key) or _selection(entities, index, sk_attr, None, None,
                                               latest_only)
    if not found.shapeless:
        _SELECTIONS[key] = found
    return found


def _selection(entities: Sequence[type[T]], index: str | None, sk_attr: str | None,
               exclude: str | None, history_base: str | None,
               latest_only: bool) -> Selection[T]:
    """A new :class:`Selection` (see :func:`selection`)."""
    specs = [(e, spec_of(e)) for e in entities]
    layouts = {s.type_name: s.rules.sort_keys for _, s in specs if s.rules.sort_keys.latest}
    versioned = frozenset(layouts)
    table = specs[0][1].table
    projection = projection_of(table, index)
    pk_attr, source_sk = table.key_attributes(index)
    shapeless = table.type_attribute is None
    by_shape = projection == "KEYS_ONLY" or shapeless
    return Selection(
        type_attr=table.type_attribute or "",
        types={s.type_name: (e, s) for e, s in specs},
        table_sk=table.sk,
        key_attrs=table.key_names(index),
        order_attrs=(source_sk, pk_attr),
        sk_attr=sk_attr, exclude=exclude, history_base=history_base,
        latest_only=versioned if latest_only else frozenset(), version_keyed=versioned,
        layout=next(iter(layouts.values()), PLAIN_KEYS),
        by_shape=by_shape, fetch=projection != "ALL",
        shapes=tuple((s.type_name, _shape_checks(s, index))
                     for _, s in specs) if by_shape else (),
        renames=_renames(specs), ttl_attr=table.ttl, shapeless=shapeless,
        table_specs=tuple(e.__dynaorm_spec__ for e in table.entities.values()) if shapeless
        else (),  # (every entity of the table: to tell another type's item from a foreign one)
        table=table,
        preparing=tuple(s for _, s in specs if s.rules.preparers),
        keeping=frozenset(s.type_name for _, s in specs if s.rules.keepers),
    )


def _renames(specs: Sequence[tuple[Any, EntitySpec]]) -> dict[str, str]:
    """Field name -> stored attribute name of the requested types; one field stored
    under two names is refused."""
    renames: dict[str, str] = {}
    for _, s in specs:
        for name, attr in s.renames.items():
            if renames.setdefault(name, attr) != attr:
                raise DynaormError(f"field {name!r} is stored as {renames[name]!r} in one "
                                   f"requested type and as {attr!r} in another")
    return renames
