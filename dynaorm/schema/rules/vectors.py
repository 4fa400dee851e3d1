"""Vector fields and vector index membership (contract 21): ``Annotated[list[float],
Vector(768)]`` fields, stored as DynamoDB stores vectors (a list of numbers), and the rule
that puts an entity's rows into the table's vector indexes.

A vector index holds 32-bit floats: a :class:`Vector` field holds exactly those (each
number rounded to the nearest 32-bit float when validated), so an object read by a search,
whose vector the index gives back, equals the object read by key. A row is in a vector
index when it holds the index's attribute: only an entity's own row or latest copy does
(a version row keeps it aside, :data:`~dynaorm.schema.rules.versioned.VERSION_KEYS`;
guard items never hold one), so a search never finds history or guards.
"""

from __future__ import annotations

import math
import operator
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError
from pydantic_core import core_schema

from dynaorm._types import AttributeValue, Item, PlainKey
from dynaorm.errors import DynaormError, InvalidValueError
from dynaorm.schema.rules import Declaration, Rule, register
from dynaorm.schema.rules.encrypted import ENCRYPTED
from dynaorm.schema.table import MAX_DIMENSIONS
from dynaorm.values.codec import kind_of
from dynaorm.values.limits import float32 as float32_plain
from dynaorm.values.tree import markers

_NUMBER = operator.itemgetter("N")
#: a list of floats, each from a number's text (lax: a text is read as a float)
_FLOATS = TypeAdapter(list[float])


@dataclass(frozen=True)
class Vector:
    """Marks a field as a vector of ``dimensions`` numbers: ``embedding:
    Annotated[list[float], Vector(768)]``. A value validates as that many finite numbers,
    each rounded to the nearest 32-bit float (what a vector index holds and a search gives
    back); it is stored as a list of numbers. A table's :class:`~dynaorm.VectorIndex` on
    the field's attribute searches it."""

    dimensions: int
    """How many numbers the vector holds (1 to 4,096)."""

    def __post_init__(self) -> None:
        if type(self.dimensions) is not int or not 1 <= self.dimensions <= MAX_DIMENSIONS:
            raise DynaormError(f"Vector(dimensions) takes a whole number from 1 to "
                               f"{MAX_DIMENSIONS}, got {self.dimensions!r}")

    def __get_pydantic_core_schema__(self, source: Any, handler: Any) -> core_schema.CoreSchema:
        """The field's schema (its ``list[float]``), each value then checked and rounded
        (:meth:`validate`)."""
        return core_schema.no_info_after_validator_function(self.validate, handler(source))

    def validate(self, values: Sequence[float]) -> list[float]:
        """``values`` as the field holds them: :attr:`dimensions` 32-bit floats."""
        if len(values) != self.dimensions:
            raise ValueError(f"a vector of {self.dimensions} numbers, not {len(values)}")
        return float32(values)


def float32(values: Sequence[Any]) -> list[float]:
    """``values`` rounded to the nearest 32-bit floats, as a vector index holds them; a
    ``ValueError`` names the first that is not a finite number within float32's range.

    In bulk (a vector holds thousands): packed as 32-bit floats and read back, one call
    each way (each number cast as ``array("f")`` casts it), checked finite by their sum (a
    sum of finite float32 values cannot overflow a double; an infinity or NaN makes it not
    finite). What that refuses goes the plain way, a number at a time
    (:func:`dynaorm.values.limits.float32`), which says what is wrong; the bulk way is
    tested against it (``tests/equivalence/test_vector_reads.py``)."""
    try:
        layout = f"{len(values)}f"
        out = list(struct.unpack(layout, struct.pack(layout, *values)))
        if math.isfinite(sum(out)):
            return out
    except (TypeError, struct.error):
        pass
    return float32_plain(values)


def vector_of(node: Any) -> Vector | None:
    """The :class:`Vector` marker of a field's value tree (``Annotated[..., Vector(n)]``, or
    the same ``| None``), else ``None``."""
    return next((m for m in markers(node) if isinstance(m, Vector)), None)


def vector_values(av: AttributeValue) -> list[float] | None:
    """A stored vector read as Python floats (``None`` for ``NULL``); a value that is not a
    list of numbers raises ``TypeError`` or ``ValueError``. The field's :class:`Vector`
    rounds them (reading each number straight to a float: a vector's numbers are not
    decimals).

    The texts are parsed in pydantic-core, in Rust (a vector holds thousands: half the
    time of ``float()`` of each), which reads a number's text to the float ``float()``
    reads (both correctly rounded); what it refuses is read by ``float()``, which gives
    what it gives, errors included (``tests/equivalence/test_vector_reads.py``)."""
    if "NULL" in av:
        return None
    texts = list(map(_NUMBER, av["L"]))
    try:
        return _FLOATS.validate_python(texts)
    except ValidationError:
        return list(map(float, texts))


def stored_vector(av: AttributeValue, dimensions: int, where: str) -> AttributeValue:
    """An encoded vector as a write stores it: ``dimensions`` finite 32-bit floats, each
    written with the 9 significant digits that give it back exactly; anything else is
    :class:`~dynaorm.InvalidValueError` naming ``where`` (a vector changed in place
    without validation, a value of another shape)."""
    if "NULL" in av:
        return av
    try:
        rounded = Vector(dimensions).validate(vector_values(av))  # type: ignore[arg-type]
    except (KeyError, TypeError, ValueError) as exc:
        raise InvalidValueError(f"{where}: {exc}") from None
    return {"L": [{"N": f"{v:.9g}"} for v in rounded]}


def _check_schema_field(decl: Declaration, attr: str, name: str) -> None:
    """A field stored under a search schema attribute holds the type the index declares
    (DynamoDB refuses a write of another)."""
    kind = kind_of(decl.cls.model_fields[name].annotation)
    declared = decl.table.key_type(attr)
    if kind is not None and kind.tag and kind.tag != declared:
        raise DynaormError(f"{decl.owner}.{name}: stored as {attr!r}, a vector index's search "
                           f"attribute of type {declared}; the field is {kind.name}")


def _validated_on_assignment(cls: type[Any], names: frozenset[str]) -> None:
    """An assignment to one of the vector fields ``names`` of ``cls`` is validated as the
    field (pydantic validates only construction here): the object holds the 32-bit floats
    a save stores and a read gives back."""
    if "__dynaorm_vectors__" in cls.__dict__:
        return
    inherited: Any = cls.__setattr__

    def __setattr__(self: Any, name: str, value: Any) -> None:
        if name in names:
            type(self).__pydantic_validator__.validate_assignment(self, name, value)
        else:
            inherited(self, name, value)

    setattr(cls, "__dynaorm_vectors__", names)  # noqa: B010 (a marker of this class)
    setattr(cls, "__setattr__", __setattr__)  # noqa: B010


@register
class Vectors(Rule):
    """The entity's :class:`Vector` fields: checked against the table's vector indexes
    when the class is defined, each written as a vector index reads it."""

    __slots__ = ("fields", "owner")
    name = "vectors"
    order = 45
    answers = {
        "save": "a vector field is written as a list of numbers, each a 32-bit float in 9 "
                "significant digits; a wrong length or a number beyond float32 is refused",
        "update": "set() validates the whole vector; add, append and prepend are refused",
        "delete": "the row leaves every vector index with it",
        "get": "the vector reads back as the 32-bit floats the field holds",
        "query": "as get",
        "values": "values() of a vector field are its numbers",
        "scan": "as get",
        "stream": "the vector is an attribute of the images",
        "history": "version rows keep the vector aside: history never lands in an index",
        "migrate": "a moved row carries its vector (it is indexed anew)",
        "backfill": "fn may set a vector; it is validated and rounded like any write",
        "check": "nothing of its own: a stored vector of another length than its field's "
                 "does not load (ItemDecodeError names the item)",
        "export": "a field like any: its numbers as a list of floats",
        "search": "search(Entity, index, vector=...) reads hits as typed entities, vector "
                  "included, equal to what get() reads",
        "messages": "a vector error names the entity, the field and the element",
        "logs": "as messages",
        "spans": "vectors are never span attributes",
    }

    def __init__(self, fields: Mapping[str, tuple[str, int]], owner: str):
        self.fields, self.owner = fields, owner

    @classmethod
    def build(cls, decl: Declaration) -> Vectors | None:
        table, owner = decl.table, decl.owner
        by_attribute = {v.attribute: v for v in table.vector_indexes.values()}
        schema = {a for v in table.vector_indexes.values() for a in v.search_schema}
        keyed = {*decl.pk.fields, *(decl.sk.fields if decl.sk else ()),
                 *(f for i in decl.indexes for f in i.fields)}
        fields = {}
        for name, node in decl.trees.items():
            attr, marker = decl.attr(name), vector_of(node)
            index = by_attribute.get(attr)
            if attr in schema:
                _check_schema_field(decl, attr, name)
            if marker is None:
                if index is not None:
                    raise DynaormError(
                        f"{owner}.{name}: stored as {attr!r}, the vector attribute of index "
                        f"{index.name!r}: declare it Annotated[list[float], "
                        f"Vector({index.dimensions})]")
                continue
            problem = (
                "a vector field cannot be Encrypted (a vector index reads its numbers)"
                if ENCRYPTED in markers(node) else "a vector field cannot be in a key template"
                if name in keyed else
                f"Vector({marker.dimensions}) on the attribute of index {index.name!r}, "
                f"whose vectors hold {index.dimensions}" if index is not None
                and index.dimensions != marker.dimensions else None)
            if problem is not None:
                raise DynaormError(f"{owner}.{name}: {problem}")
            fields[attr] = (name, marker.dimensions)
        if not fields:
            return None
        rule = cls(fields, owner)
        _validated_on_assignment(decl.cls, rule.names)
        return rule

    def encode(self, item: Item, key: PlainKey, stored: Item | None) -> None:
        for attr, (name, dimensions) in self.fields.items():
            av = item.get(attr)
            if av is not None:
                item[attr] = stored_vector(av, dimensions, f"{self.owner}.{name}")

    def refuse(self, use: str, name: str) -> None:
        if use in ("add", "append", "prepend", "discard") and name in self.names:
            raise DynaormError(f"{self.owner}.{name} is a vector: {use}() would change its "
                               "length (set() the whole vector)")

    @property
    def names(self) -> frozenset[str]:
        """The vector fields' names."""
        return frozenset(name for name, _ in self.fields.values())
