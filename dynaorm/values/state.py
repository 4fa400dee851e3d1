"""Per-object persistence state: what the stored item looked like when last seen.

State objects are immutable; a successful commit replaces an object's state, a failed one
leaves it untouched (never mutate-then-undo).

A loaded object's state is compact: rather than the raw item (a dict of one-entry dicts
per attribute, about twice the memory of the object itself), it keeps the attribute names
once per item *shape* (shared by every item with the same attributes) and one tuple of
values per item. Strings and numbers are the very objects the entity holds (pydantic keeps
them), so they cost nothing extra; a list of numbers (a vector) keeps its numbers' texts in
one string; other attributes with container values (lists, maps, sets, binary) and
attributes whose value the entity did not decode keep their raw wire form.
:attr:`InstanceState.item` renders the stored item again, exactly, when a write needs it.
"""

from __future__ import annotations

import itertools
import json
import operator
import sys
import threading
from collections.abc import Container, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Final, final

from dynaorm._types import AttributeValue, Item, PlainKey
from dynaorm.caches import cache
from dynaorm.errors import ItemDecodeError
from dynaorm.values.codec import binary_from_json, decode_number
from dynaorm.values.expressions import Condition, all_of, exists, not_exists, stored_as
from dynaorm.values.merge import Merged, Where, merge_items

__all__ = ["DELETED", "Deleted", "InstanceState", "LoadedPage", "MovedState", "answer_items",
           "declared", "decoded_numbers", "undeclared"]

#: decoded field values that stand for their own wire form (immutable scalars)
_SCALARS = frozenset({str, int, Decimal, bool})
_MISSING: Any = object()
_S = itertools.repeat("S")  # endless: map(dict.get, avs, _S, avs) is av.get("S", av)
_SHAPES_MAX = 4096
_Attrs = set[str] | frozenset[str]


class _Shape:
    """The attribute names of a family of items, in order, and where the key, the
    discriminator, the partition key and the non-string attributes sit in them."""

    __slots__ = ("key_at", "key_attrs", "names", "other_at", "pk_at", "type_at",
                 "type_attr")

    def __init__(self, item: Item, key_attrs: tuple[str, ...], type_attr: str | None):
        names = self.names = tuple(item)
        self.key_attrs = key_attrs
        self.type_attr = type_attr
        self.key_at = tuple((a, names.index(a)) for a in key_attrs if a in names)
        self.pk_at = names.index(key_attrs[0]) if key_attrs and key_attrs[0] in names else -1
        self.type_at = names.index(type_attr) if type_attr in names else -1  # None: absent
        # where the first item of the shape held no string: scalars there are kept decoded
        # (another item of the shape with a non-string elsewhere keeps its wire form there)
        self.other_at = tuple(i for i, av in enumerate(item.values()) if "S" not in av)


#: shapes by attribute names, shared by every loaded item of one shape (memory: each
#: loaded state keeps its values only)
_shapes: dict[tuple[str, ...], _Shape] = cache("state.shapes")


def answer_items(answer: Mapping[str, Any]) -> list[Any]:
    """The items of an answer, in order: a Query's or Scan's ``Items``, a GetItem's
    ``Item``, a BatchGetItem's ``Responses`` (each table's in turn)."""
    if "Item" in answer:
        return [answer["Item"]]
    if "Responses" in answer:
        return [item for items in answer["Responses"].values() for item in items]
    return answer.get("Items") or []


def decoded_numbers(item: Item, fields: Container[str]) -> dict[str, Any]:
    """The number attributes of ``item`` that store ``fields`` (stored names), decoded:
    the values a plain load's snapshot shares (:meth:`InstanceState.loaded`; every other
    attribute keeps its wire form), for an object validated from the wire form itself."""
    try:
        return {name: decode_number(av["N"]) for name, av in item.items()
                if "N" in av and name in fields}
    except TypeError:  # (a member that is not an attribute value: loaded() refuses the item)
        return {}


class _Numbers(str):
    """A stored list of numbers, kept as its numbers' texts joined by commas: a vector of
    768 numbers in a tenth of the memory of its wire form, rendered back exactly."""

    __slots__ = ()

    @classmethod
    def of(cls, av: AttributeValue) -> _Numbers | None:
        """``av`` kept so, when it is a non-empty list of numbers only (else ``None``)."""
        raw = av.get("L")
        try:  # (each a dict of one key, "N": checked in C, then joined, in C too)
            if raw and sum(map(len, raw)) == len(raw):
                return cls(",".join(map(operator.itemgetter("N"), raw)))
        except (KeyError, TypeError):
            pass
        return None


def _render(value: Any) -> AttributeValue:
    t = type(value)
    if t is str:
        return {"S": value}
    if t is dict:
        return value  # type: ignore[no-any-return]  # kept in wire form
    if t is _Numbers:
        return {"L": [{"N": n} for n in value.split(",")]}
    if t is bool:
        return {"BOOL": value}
    if value is None:
        return {"NULL": True}
    if isinstance(value, dict):  # (a map's subclass: a reference carrying its object)
        return value
    return {"N": str(value)}  # int or Decimal, decoded from this very text


@dataclass(slots=True, eq=False)
class LoadedPage:
    """The checked bytes of one answer whose objects were validated straight from them:
    the loaded states of those objects keep this and their item's place in ``Items`` (no
    item dicts are built for a read that writes nothing), and the first to be needed
    (a write plans from it, :func:`dynaorm.inspect`) decodes the page again and takes
    its compact form then (see :meth:`InstanceState.on_page`). ``fields``: each type's
    field attributes (type name -> names), whose numbers a snapshot holds decoded, as a
    plain load's."""

    data: bytes
    key_attrs: tuple[str, ...]
    type_attr: str
    fields: Mapping[str, frozenset[str]]

    def state_of(self, at: int) -> InstanceState:
        """The compact state (:meth:`InstanceState.loaded`) of item ``at``, as a plain
        load of it makes it: its fields' numbers decoded, everything else as stored."""
        item = self.items()[at]
        kind = item[self.type_attr]["S"]
        return InstanceState.loaded(item, decoded_numbers(item, self.fields[kind]),
                                    self.key_attrs, self.type_attr, kind)

    def items(self) -> list[Item]:
        """The page's items as stored (decoded once for the last page asked: the objects
        of one page are usually written together)."""
        global _last_page
        last = _last_page
        if last is not None and last[0] is self:
            return last[1]
        items = answer_items(json.loads(self.data))
        if b'"B' in self.data or b"\\" in self.data:  # (binary values: bytes, as the wire's
            # answers carry them, a tag spelt with an escape too: see wire.decode)
            items = binary_from_json(items)
        _last_page = (self, items)
        return items


def _not_attribute_values(item: Item, key_attrs: tuple[str, ...],
                          type_name: str) -> ItemDecodeError:
    """The error for a stored item read with members that are not attribute values (JSON
    ``null``, a bare string...: botocore's parser and the wire's decoding hand them on);
    no value is quoted."""
    bad = [name for name, av in item.items() if type(av) is not dict]
    key = {a: str(item[a].get("S", item[a])) for a in key_attrs if a in item and a not in bad}
    return ItemDecodeError(f"the stored item {key} ({type_name}) has members that are not "
                           f"DynamoDB attribute values: {', '.join(bad)}", key=key)


#: the last page decoded again, and its items (one: it does not keep pages alive)
_last_page: tuple[LoadedPage, list[Item]] | None = None
#: one realization at a time (a state's two slots change together)
_REALIZING: Final = threading.Lock()


class InstanceState:
    """A persisted object's snapshot: stored primary key, stored item, version read.

    ``InstanceState(key, item, version)`` keeps an item as given (what a commit wrote);
    :meth:`loaded` builds the compact form of an item read from the table.
    """

    __slots__ = ("_data", "_key", "_rendered", "_shape", "members", "version")

    _rendered: Item | None
    #: the version read (versioned entities), else ``None``
    version: int | None
    #: the object's members of each list (in order) or mapping (a dict) of nested
    #: models the item holds at any depth (by its place: ``spec.members_of``; ``None``: not
    #: known): a member moved, or another deleted, is still known as the one read from
    #: its stored map
    members: Mapping[Where, Any] | None

    def __init__(self, key: PlainKey | None, item: Item | tuple[Any, ...] | int,
                 version: int | None = None, shape: _Shape | LoadedPage | None = None,
                 members: Mapping[Where, Any] | None = None):
        # (with ``shape``: the compact form, ``item`` the values in the shape's order and
        # ``key`` None when the stored key is in them; see :meth:`loaded`. A LoadedPage
        # shape: ``item`` is the item's place in it, see :meth:`on_page`)
        self._key = key
        self._data = item
        self._shape = shape
        self._rendered = None
        self.version = version
        self.members = members

    @classmethod
    def loaded(cls, item: Item, decoded: Mapping[str, Any], key_attrs: tuple[str, ...],
               type_attr: str | None, type_name: str, key: PlainKey | None = None,
               version: int | None = None,
               members: Mapping[Where, Any] | None = None) -> InstanceState:
        """The state of an object loaded from ``item``.

        ``decoded`` holds the item's field values as the object was validated from (their
        value objects are shared); ``key_attrs`` are the table's key attributes (the
        stored key, unless ``key`` gives it); ``type_attr`` / ``type_name``: the
        discriminator, whose stored string is replaced by the entity's own one;
        ``members``: see :attr:`members`.
        """
        avs = item.values()
        try:
            values = list(map(dict.get, avs, _S, avs))  # (wire_values, inline)
        except TypeError:  # a member that is not an attribute value (a JSON null): never raw
            raise _not_attribute_values(item, key_attrs, type_name) from None
        shape = _shapes.get(tuple(item))
        if shape is None or shape.key_attrs != key_attrs or shape.type_attr != type_attr:
            if len(_shapes) >= _SHAPES_MAX:  # many shapes (sparse attributes): start over
                _shapes.clear()
            shape = _Shape(item, key_attrs, type_attr)
            _shapes[shape.names] = shape
        if decoded:  # (none: every non-string attribute keeps its wire form)
            names = shape.names
            for at in shape.other_at:
                av = values[at]
                if type(av) is dict:
                    value = decoded.get(names[at], _MISSING)
                    if value is None or type(value) in _SCALARS:
                        if "N" in av and str(value) != av["N"]:
                            continue  # (a number in another spelling, "1E2": kept as is)
                        values[at] = value  # shared with the entity; stands for its wire form
                    elif type(value) is list and (numbers := _Numbers.of(av)) is not None:
                        values[at] = numbers
        at = shape.type_at
        if at >= 0 and values[at] == type_name:
            values[at] = type_name  # one string for every item of the type
        at = shape.pk_at
        if at >= 0 and type(values[at]) is str:  # partition keys repeat over a query's items
            values[at] = sys.intern(values[at])
        return InstanceState(key, tuple(values), version, shape, members)

    @classmethod
    def on_page(cls, page: LoadedPage, at: int,
                members: Mapping[Where, Any] | None = None) -> InstanceState:
        """The state of an object validated from item ``at`` of ``page``'s bytes (its
        table not versioned, its keys strings): what :meth:`loaded` gives for that item
        (``page.state_of(at)``), made when first needed."""
        return InstanceState(None, at, None, page, members)

    def _compact(self) -> tuple[_Shape | None, Item | tuple[Any, ...]]:
        """The shape and data of the state, in compact form once a page's state is
        needed (:meth:`on_page`)."""
        shape, data = self._shape, self._data
        if type(shape) is LoadedPage:
            with _REALIZING:
                shape = self._shape
                if type(shape) is LoadedPage:
                    at = self._data
                    assert type(at) is int
                    found = shape.state_of(at)
                    self._data = found._data  # (first: a reader that sees the shape
                    self._shape = found._shape  # changed sees the data changed too)
                shape, data = self._shape, self._data
        assert not isinstance(shape, LoadedPage) and not isinstance(data, int)
        return shape, data

    @property
    def key(self) -> PlainKey:
        """The stored primary key (attribute name -> string)."""
        if self._key is not None:
            return self._key
        shape, data = self._compact()
        assert shape is not None and isinstance(data, tuple)
        return {attr: data[i] for attr, i in shape.key_at}

    @property
    def item(self) -> Item:
        """The stored item in wire form (rendered on first access: only objects a write
        plans from pay for it; do not mutate it)."""
        if self._rendered is None:
            self._rendered = self.peek_item()
        return self._rendered

    def peek_item(self) -> Item:
        """:attr:`item` for a reader that needs it once (:func:`dynaorm.inspect`): rendered
        afresh and not kept, unless a write rendered it already (do not mutate it)."""
        shape, data = self._compact()
        if shape is None:
            assert isinstance(data, dict)
            return data
        if self._rendered is not None:
            return self._rendered
        assert isinstance(data, tuple)
        return {name: _render(value) for name, value in zip(shape.names, data, strict=True)}

    def revised(self, attrs: Item) -> InstanceState:
        """This state with ``attrs`` set on its item (a copy, of the same kind)."""
        new = object.__new__(type(self))  # (with a subclass's own slots: Written's values,
        for name in type(self).__slots__:  # MovedState's history)
            setattr(new, name, getattr(self, name))
        new._key, new._data, new.version = self.key, {**self.item, **attrs}, self.version
        new._shape = new._rendered = None
        new.members = self.members
        return new

    def merged(self, spec: Any, old: Item, new: Item, values: Mapping[str, Any]) -> Merged:
        """What a save of the object writes (:mod:`dynaorm.values.merge`): its item ``new``
        (of its field ``values``) merged with the one stored, given ``old``, the stored
        values as its entity (``spec``) writes them; the attributes the entity does not
        write (:func:`undeclared`: neither ``old`` nor ``new`` holds them) kept as stored,
        each member of a list or mapping of nested models merged with the stored map it was
        read as: where it was read, by identity (:attr:`members`, whichever list or mapping
        it was read in; ``None``: a new one, an equal copy or another item's member too). A
        list the state does not know, none of whose members it knows, is left to the merge
        (by value)."""
        known = self.members
        origins: dict[Where, Where | None] = {}
        if known:
            places: dict[int, list[Where | None]] = {}
            for where, loaded in known.items():
                for at, member in _each(loaded):
                    places.setdefault(id(member), []).append((*where, at))
            for where, now in (spec.members_of(values) or {}).items():
                found = {(*where, at): (places.get(id(m)) or [None]).pop(0)
                         for at, m in _each(now)}
                if where in known or any(found.values()):
                    origins |= found
        return merge_items(self.item, old, new, _left_behind(spec), origins, spec.item_tree,
                           spec.rules.held)

    def guards(self, spec: Any, held: _Attrs = frozenset(), leave: _Attrs | None = None
               ) -> list[Condition]:
        """The conditions a write of the whole loaded object rests on: the stored
        attributes ``held`` and the unique fields' (those their guards are built from)
        still as read, and, with ``leave``, the item exactly as loaded but for those
        (:meth:`as_loaded`)."""
        return [*stored_as(self.item, held | _stored(spec, spec.unique_fields)),
                *(() if leave is None else self.as_loaded(spec, leave))]

    def update_guard(self, spec: Any, touched: set[str]) -> Condition | None:
        """An update of the loaded item: it exists, and what it writes (``touched``) and
        the fields its guards and index keys are built from are still as read (no lost
        updates)."""
        depends = set(spec.unique_fields)
        if spec.indexes:
            for attr in touched:
                depends.update(spec.derived_fields(attr))
        return all_of([exists(spec.table.pk), *stored_as(self.item, touched | _stored(
            spec, depends))])

    def as_loaded(self, spec: Any, leave: _Attrs = frozenset()) -> list[Condition]:
        """Conditions that the item is still exactly as loaded, for a write that replaces
        or removes the whole item (a bulk delete, a key move): every attribute it held
        still holds its value, and every attribute the class writes that it did not hold
        (a field left out while ``None``, a sparse index key) is still absent, so a value
        another writer set after the load is never dropped. ``leave``: attributes the
        caller conditions otherwise. Every dynaorm write stamps the row's revision, so one
        since the load fails this, whatever it wrote. (An attribute a writer outside
        dynaorm added after the load is beyond what a condition can name: see
        failure-semantics.md.)"""
        stored = self.item
        own = declared(spec) | {a for a in (spec.table.revision_attribute,) if a}
        return [*stored_as(stored, set(stored) - leave),
                *(not_exists(a) for a in sorted(own - stored.keys() - leave))]

    def __reduce__(self) -> tuple[Any, ...]:
        # (pickled as its plain form: a page's bytes and a shape stay behind; its members
        # with the object's, one pickle keeping them one)
        return InstanceState, (self.key, self.item, self.version, None, self.members)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, InstanceState):
            return NotImplemented
        return (self.key, self.item, self.version) == (other.key, other.item, other.version)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self.key.items())))

    def __repr__(self) -> str:
        return f"InstanceState(key={self.key!r}, item={self.item!r}, version={self.version!r})"


class MovedState(InstanceState):
    """The state of an object read from its entity's previous layout (``Meta.previous``,
    :mod:`~dynaorm.schema.rules.previous`): ``key`` / ``item`` are the old row as stored,
    ``history`` its old version rows (versioned entities), read with it. Any write of the
    object moves it (the previous-layout rule plans it, the phases ask
    ``spec.rules.before``). Plain state, as :class:`InstanceState`."""

    __slots__ = ("history",)

    history: tuple[Item, ...]

    def __init__(self, key: PlainKey, item: Item, version: int | None,
                 history: tuple[Item, ...]):
        super().__init__(key, item, version)
        self.history = history

    def __reduce__(self) -> tuple[Any, ...]:
        return MovedState, (self.key, self.item, self.version, self.history)


@final
class Deleted:
    """What an object's state slot holds after a commit (or a bulk call) deleted its item:
    :data:`DELETED`, the one instance. It tells a deleted object from a new one for
    :func:`dynaorm.inspect` only: ``Entity._dynaorm_state`` reads it as ``None``, so every
    write path treats a deleted object exactly as a new one (saving it again inserts)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "DELETED"

    def __reduce__(self) -> str:
        return "DELETED"  # (pickled and copied as the one instance)


#: the state of a deleted object (see :class:`Deleted`)
DELETED: Final = Deleted()


def _stored(spec: Any, names: _Attrs) -> set[str]:
    """The stored attributes of fields ``names`` (a key-only field's: none, its key holds
    it)."""
    return {spec.attr(n) for n in names if n not in spec.unstored}


def _each(members: Any) -> Any:
    """The members a state knows of a list or a mapping (a dict), by place."""
    return members.items() if type(members) is dict else enumerate(members)


def undeclared(spec: Any, stored: Item) -> Item:
    """The attributes of a stored item that entity ``spec`` does not write (a newer model
    version wrote them: rolling deploys): every write that rewrites the item carries them
    over. Not the entity's fields (by stored name), table keys, its own index keys, the
    discriminator, nor the version of a versioned entity or its history key."""
    known = declared(spec)
    if len(stored) <= len(known) and stored.keys() <= known:
        return {}
    return {k: v for k, v in stored.items() if k not in known}


def declared(spec: Any) -> frozenset[str]:
    """Every attribute a stored item of entity ``spec`` may hold that its class writes."""
    found = _DECLARED.get(spec.cls)
    if found is None:
        table = spec.table
        names = {*spec.stored_fields, *spec.table_key_attrs, *spec.index_attributes}
        # (a computed field's value: the class writes it too, recomputed on each write)
        names.update(spec.renames.get(n, n) for n in spec.cls.model_computed_fields)
        if table.type_attribute is not None:
            names.add(table.type_attribute)
        names.update(name for name, _ in spec.rules.pin(0))  # (a versioned entity's version)
        # (a version row's kept TTL, ...; the revision is carried: each write stamps anew)
        names |= spec.rules.attributes - {table.revision_attribute}
        found = _DECLARED[spec.cls] = frozenset(names)
    return found


def _left_behind(spec: Any) -> frozenset[str]:
    """The attributes a stored item may hold that a write of it leaves behind when its
    values hold none: key-only fields' (written before they became key-only: removed)
    and the entity's own index keys (a sparse index's entry whose field is ``None``)."""
    found = _LEFT.get(spec.cls)
    if found is None:
        found = _LEFT[spec.cls] = frozenset(
            {spec.attr(n) for n in spec.unstored} | set(spec.index_attributes))
    return found


#: the attributes each entity class writes (:func:`declared`), and those a write leaves
#: behind (:func:`_left_behind`), by class
_DECLARED: dict[type[Any], frozenset[str]] = cache("records.declared")
_LEFT: dict[type[Any], frozenset[str]] = cache("save.left_behind")
