"""Arrow types from pydantic models: the schema of an export's datasets (contract 21).

Each field of an entity becomes a column named after the field (never its stored name),
typed from its annotation:

======================================  =============================================
field                                   Arrow type
======================================  =============================================
``str``                                 ``string``
``int`` / ``float`` / ``bool``          ``int64`` / ``float64`` / ``bool``
``Decimal``                             ``decimal128(max_digits, decimal_places)``
                                        (``Field(...)`` constraints; else ``(38, 18)``)
``datetime``                            ``timestamp[us, UTC]`` (a naive value as UTC)
``date`` / ``time`` / ``timedelta``     ``date32`` / ``time64[us]`` / ``duration[us]``
``bytes`` / ``UUID``                    ``binary`` / ``string``
an ``Enum``, a ``Literal``              the type of its values (stored by value)
``list[T]``, ``tuple[T, ...]``          ``list<T>``
``set[T]``, ``frozenset[T]``            ``list<T>`` (sorted where the values order)
``dict[str, T]``                        ``map<string, T>``
a nested model                          ``struct`` of its fields
``T | None``                            ``T``, nullable
anything else (``Any``, ``int | str``)  ``string``: the value as JSON text
======================================  =============================================

A column is nullable when its field may hold ``None`` (``Optional``, or a ``None``
default). Each column knows how to turn a field's Python value into what ``pyarrow``
takes (:attr:`Column.convert`; ``None`` where the value goes as it is).
"""

import contextlib
import enum
import types
import typing
import uuid
from collections.abc import Callable, Mapping, MutableMapping, MutableSequence, MutableSet, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from decimal import Decimal
from typing import Annotated, Any, Literal, Union

import pyarrow as pa  # dynaorm[export]
from pydantic import BaseModel, TypeAdapter

Convert = Callable[[Any], Any]
_LISTS = (list, tuple, Sequence, MutableSequence)
_SETS = (set, frozenset, AbstractSet, MutableSet)
_MAPS = (dict, Mapping, MutableMapping)
#: classes stored as they are, by their Arrow type (the first that a value's class is)
_PLAIN: tuple[tuple[type[Any], Any], ...] = (
    (bool, pa.bool_()), (int, pa.int64()), (float, pa.float64()), (str, pa.string()),
    (bytes, pa.binary()), (datetime, pa.timestamp("us", tz="UTC")), (date, pa.date32()),
    (time, pa.time64("us")), (timedelta, pa.duration("us")))


@dataclass(frozen=True)
class Column:
    """One column of a dataset: a field's name, Arrow type, nullability and how its
    values are handed to ``pyarrow`` (``convert``; ``None``: as they are)."""

    name: str
    type: Any
    nullable: bool
    convert: Convert | None = None
    json: bool = False
    """Whether the column holds the field's value as JSON text (no Arrow type fits it)."""

    @property
    def field(self) -> Any:
        """The ``pyarrow.Field`` of the column."""
        return pa.field(self.name, self.type, self.nullable)


#: the columns a change set (an incremental export's dataset) has before the fields: what
#: happened to the item, and when it was written
CHANGES = (Column("_op", pa.string(), False), Column("_time", pa.timestamp("us", tz="UTC"), True))


def columns(model: type[BaseModel]) -> list[Column]:
    """The columns of ``model``'s fields, in declaration order."""
    out = []
    for name, info in model.model_fields.items():
        kind, convert, nullable = _arrow(info.annotation, tuple(info.metadata))
        out.append(Column(name, kind, nullable or (
            not info.is_required() and info.default is None), convert,
            getattr(convert, "json", False)))
    return out


def schema_of(cols: Sequence[Column]) -> Any:
    """The ``pyarrow.Schema`` of ``cols``."""
    return pa.schema([c.field for c in cols])


def _arrow(tp: Any, metadata: tuple[Any, ...] = ()) -> tuple[Any, Convert | None, bool]:
    """``(Arrow type, convert, nullable)`` of annotation ``tp`` (see the module's table)."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin is Annotated:
        return _arrow(args[0], (*metadata, *args[1:]))
    if origin is Union or origin is types.UnionType:
        return _union(tp, args, metadata)
    if tp is Any:
        return (*_json(tp), True)
    if origin is Literal:
        return (*_of_values(tp, args, None), False)
    if origin in _LISTS or origin in _SETS or origin in _MAPS:
        return (*_collection(tp, origin, args), False)
    return (*_class(tp, metadata), False)


def _union(tp: Any, args: tuple[Any, ...], metadata: tuple[Any, ...]
           ) -> tuple[Any, Convert | None, bool]:
    """An optional type is its one other member's, nullable; a wider union is JSON."""
    inner = [a for a in args if a is not type(None)]
    if len(inner) == 1:
        return (*_arrow(inner[0], metadata)[:2], True)
    return (*_json(tp), type(None) in args)


def _collection(tp: Any, origin: Any, args: tuple[Any, ...]) -> tuple[Any, Convert | None]:
    """A list, a set or a ``tuple[T, ...]`` is a list of its items' type; a mapping with
    string keys a map; any other tuple or mapping is JSON."""
    if origin in _MAPS:
        key, key_convert, _ = _arrow(args[0] if args else Any)
        value, convert, _ = _arrow(args[1] if args else Any)
        if key != pa.string():
            return _json(tp)
        return pa.map_(key, value), _entries(key_convert, convert)
    if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
        return _json(tp)
    item, convert, _ = _arrow(args[0] if args else Any)
    return pa.list_(item), _each(convert, origin in _SETS)


def _class(tp: Any, metadata: tuple[Any, ...]) -> tuple[Any, Convert | None]:
    """The Arrow type of a plain class (no ``typing`` origin) and its convert."""
    if not isinstance(tp, type):
        return _json(tp)
    if issubclass(tp, enum.Enum):
        return _of_values(tp, tuple(m.value for m in tp), lambda m: m.value)
    if issubclass(tp, BaseModel):
        return _struct(tp)
    if issubclass(tp, Decimal):
        digits = next((m.max_digits for m in metadata if getattr(m, "max_digits", None)), None)
        places = next((m.decimal_places for m in metadata
                       if getattr(m, "decimal_places", None) is not None), None)
        return pa.decimal128(digits or 38, 18 if places is None else places), None
    if issubclass(tp, uuid.UUID):
        return pa.string(), str
    found = next((kind for cls, kind in _PLAIN if issubclass(tp, cls)), None)
    return (found, None) if found is not None else _json(tp)


def _of_values(tp: Any, values: tuple[Any, ...], convert: Convert | None
               ) -> tuple[Any, Convert | None]:
    """An enum's or a ``Literal``'s type: its values' (strings, integers or booleans)."""
    for cls, kind in _PLAIN[:4]:
        if values and all(type(v) is cls for v in values):
            return kind, convert
    return _json(tp)


def _struct(model: type[BaseModel]) -> tuple[Any, Convert]:
    """A nested model: a struct of its fields."""
    cols = columns(model)
    converts = [(c.name, c.convert) for c in cols]

    def convert(obj: Any) -> dict[str, Any]:
        values = obj.__dict__
        return {name: values[name] if fn is None or values[name] is None else fn(values[name])
                for name, fn in converts}
    return pa.struct([c.field for c in cols]), convert


def _each(convert: Convert | None, unordered: bool) -> Convert | None:
    """A list's (or a set's: sorted where its values order) convert from its items'."""
    if convert is None and not unordered:
        return None
    one = convert or (lambda v: v)

    def each(values: Any) -> list[Any]:
        items = [None if v is None else one(v) for v in values]
        if unordered:
            with contextlib.suppress(TypeError):  # (values that do not order: as given)
                items.sort()
        return items
    return each


def _entries(key: Convert | None, value: Convert | None) -> Convert | None:
    """A map's convert (keys and values) from its keys' and values' (``None``: as it is)."""
    if key is None and value is None:
        return None
    k, v = key or (lambda x: x), value or (lambda x: x)
    return lambda d: [(k(a), None if b is None else v(b)) for a, b in d.items()]


def _json(tp: Any) -> tuple[Any, Convert]:
    """Anything else: a string of the value as JSON (pydantic's serialization)."""
    adapter = TypeAdapter(tp)

    def as_json(v: Any) -> str:
        return adapter.dump_json(v).decode()
    as_json.json = True  # type: ignore[attr-defined]  # (Column.json: read back as JSON)
    return pa.string(), as_json


def table_of(cols: Sequence[Column], rows: Sequence[Mapping[str, Any]]
             ) -> tuple[Any, dict[int, str]]:
    """``rows`` (field values by name) as a ``pyarrow.Table`` of ``cols``, and the rows
    left out, by index, with why (a value the column's type cannot hold: an ``int`` past
    64 bits, a ``Decimal`` with more places than the column keeps)."""
    arrays, bad = [], {}
    for col in cols:
        values = [row.get(col.name) for row in rows]
        try:
            arrays.append(_array(col, values))
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            bad.update(_refused(col, values))
            break
    if bad:
        kept = [row for i, row in enumerate(rows) if i not in bad]
        table, more = table_of(cols, kept)
        left = [i for i in range(len(rows)) if i not in bad]
        return table, {**bad, **{left[i]: why for i, why in more.items()}}
    return pa.Table.from_arrays(arrays, schema=schema_of(cols)), {}


def _array(col: Column, values: list[Any]) -> Any:
    convert = col.convert
    if convert is not None:
        values = [None if v is None else convert(v) for v in values]
    return pa.array(values, col.type)


def _refused(col: Column, values: list[Any]) -> dict[int, str]:
    """The values of ``col`` its type refuses, by row: why."""
    out = {}
    for i, value in enumerate(values):
        try:
            _array(col, [value])
        except (pa.ArrowException, OverflowError, TypeError, ValueError) as exc:
            out[i] = f"field {col.name!r} does not fit {col.type}: {exc}"
    return out
