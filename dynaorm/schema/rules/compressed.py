"""Compressed fields (contract 22): ``Compressed[T]`` stores a field's value compressed
(zlib, a binary attribute) when it is at least ``min_size`` bytes, and reads it back as
the plain value on every read path.

This rule is written against dynaorm's public rule protocol only, as a rule of your own
would be (docs/guide/rules.md): it uses the public names :class:`dynaorm.Rule`,
:func:`dynaorm.register_rule`, :class:`dynaorm.DynaormError` and :class:`dynaorm.Vector`
and nothing else of dynaorm (no helper, no private member; its ``build`` reads the
declaration as the guide documents it). It imports them from the modules that define them,
not from the package root: the root names ``Compressed`` for type checkers, and importing it
back would close an import circle.

A value is stored as it is while it is shorter than ``min_size`` (default 256) bytes: a
string's UTF-8 text, a number's digits, any other value's DynamoDB JSON; from that size on
it is stored as ``B``: ``zlib.compress`` of the value's DynamoDB JSON (``{"S": ...}``,
``{"M": ...}``, binary values inside as base64). **A stored value is told apart by its
type**: a binary attribute is a compressed value, anything else the value itself. So a
value that is binary itself (``Compressed[bytes]``) is always compressed, whatever its
size, and never read back as something it is not.

It composes with :data:`~dynaorm.Encrypted` as rules compose (encoded in the order the
rules run, decoded in the reverse order): compression runs before encryption, so
``Encrypted[Compressed[str]]`` is compressed, then sealed, and on a read opened, then
decompressed. ``Compressed[Encrypted[str]]`` means the same (the order of the markers in
an annotation does not reorder the rules: compressing a ciphertext would gain nothing).

A compressed field cannot be in a key template or an index key, nor be the table's TTL
attribute or a versioned entity's ``version`` (refused as the class is defined), nor in
a condition or a filter, nor take an update's ``add``/``append``/... (refused before
sending); ``set()`` of it is compressed as a save's value is.
"""

from __future__ import annotations

import base64
import json
import zlib
from collections.abc import Mapping
from decimal import Decimal
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar

from dynaorm.errors import DynaormError, unreadable
from dynaorm.schema.rules import Rule, refuse_stored, register_rule
from dynaorm.values.tree import markers

T = TypeVar("T")
#: the most bytes a compressed value decompresses to (its DynamoDB JSON): a longer value
#: is refused when saved, and a stored one that decompresses to more (a bomb) when read
MAX_INFLATED = 64 << 20


class _Compressed:
    """The marker of a compressed field, with its threshold (``min_size``: a value of at
    least this many bytes is stored compressed)."""

    __slots__ = ("_min_size",)

    def __init__(self, *, min_size: int = 256):
        if type(min_size) is not int or min_size < 0:
            raise DynaormError(f"Compressed(min_size={min_size!r}): a number of bytes >= 0")
        self._min_size = min_size

    def __repr__(self) -> str:
        return f"Compressed(min_size={self._min_size})"

    def __class_getitem__(cls, item: Any) -> Any:
        return Annotated[item, cls()]


if TYPE_CHECKING:  # (to a type checker, ``Compressed[str]`` is ``str``)
    Compressed = Annotated[T, "dynaorm:compressed"]
    """A field annotated ``Compressed[T]`` (any type the codec stores) is stored
    zlib-compressed, as a binary attribute, from 256 bytes on, and as it is when shorter;
    ``Annotated[T, Compressed(min_size=n)]``: from ``n`` bytes on. Read back as the plain
    value by every read; refused in keys, indexes, conditions and filters. A binary
    stored value is a compressed one, anything else the value itself (so a ``bytes``
    value is always compressed). ``Encrypted[Compressed[str]]``: compressed, then
    sealed."""
else:
    Compressed = _Compressed
    Compressed.__name__ = Compressed.__qualname__ = "Compressed"
    Compressed.__doc__ = """``Compressed[T]``: a field stored compressed (zlib) from 256
    bytes on; ``Annotated[T, Compressed(min_size=n)]`` from ``n`` bytes on."""


def _marker(node: Any) -> _Compressed | None:
    """A field's ``Compressed`` marker (of its value tree) (of ``Compressed[...]``, or of
    ``Compressed[...] | None``), if it has one."""
    return next((m for m in markers(node) if isinstance(m, _Compressed)), None)


def _dumped(av: Mapping[str, Any]) -> bytes:
    """A DynamoDB attribute value as compact JSON (binary values as base64)."""
    return json.dumps(av, separators=(",", ":"),
                      default=lambda b: base64.b64encode(bytes(b)).decode()).encode()


#: the attribute value kinds :func:`_dumped` writes, and the JSON type of each one's value
_KINDS: dict[str, Any] = {"S": str, "N": str, "B": str, "BOOL": bool, "NULL": bool,
                           "SS": list, "NS": list, "BS": list, "L": list, "M": dict}


def _number(text: Any) -> str:
    """``text`` if it is a finite number's digits, else :class:`ValueError`."""
    try:
        if isinstance(text, str) and Decimal(text).is_finite():
            return text
    except ArithmeticError:
        pass
    raise ValueError(f"not a number: {text!r}")


def _loaded(av: Any) -> Any:
    """The attribute value :func:`_dumped` wrote, its binary values bytes again; anything
    else (a kind or a value no attribute value has: another writer's bytes) is a
    :class:`ValueError`, never a value read wrongly."""
    if not isinstance(av, dict) or len(av) != 1:
        raise ValueError("not an attribute value")
    ((kind, value),) = av.items()
    if not isinstance(value, _KINDS.get(kind, ())):  # (of the JSON type kind holds)
        raise ValueError(f"not an attribute value: {kind!r}")
    if kind in ("SS", "NS", "BS") and not all(isinstance(v, str) for v in value):
        raise ValueError(f"not a set of text: {kind!r}")
    if kind == "NULL" and value is not True:
        raise ValueError("NULL is true")
    return {kind: _LOADERS[kind](value)} if kind in _LOADERS else av


#: what :func:`_loaded` makes of a value of each kind that is not as JSON holds it: binary
#: values bytes again, numbers checked, maps and lists looked into
_LOADERS: dict[str, Any] = {
    "B": lambda value: base64.b64decode(value, validate=True),
    "BS": lambda value: [base64.b64decode(v, validate=True) for v in value],
    "N": _number, "NS": lambda value: [_number(v) for v in value],
    "M": lambda value: {k: _loaded(v) for k, v in value.items()},
    "L": lambda value: [_loaded(v) for v in value]}


def _size(av: Mapping[str, Any]) -> tuple[int, bytes]:
    """The size of a value as ``min_size`` measures it, and its JSON."""
    text = _dumped(av)
    if "S" in av:
        return len(av["S"].encode()), text
    if "N" in av:
        return len(av["N"]), text
    return len(text), text


@register_rule
class Compression(Rule):
    """``Compressed[T]`` fields: compressed on every row written from ``min_size`` bytes
    on, decompressed on every row read, refused where a stored value must be compared."""

    __slots__ = ("fields", "owner")
    name = "compressed"
    order = 48  # (before encryption, 50: compressed, then sealed)
    answers: ClassVar[Mapping[str, str]] = {
        "save": "a value of at least min_size bytes (default 256) is stored compressed "
                "(zlib, binary); a shorter one as it is; then sealed if also Encrypted",
        "update": "set() of a compressed field is compressed as a save's value; add, "
                  "append and conditions on it are refused before sending",
        "delete": "nothing of its own",
        "get": "a binary stored value is decompressed; any other is the value itself",
        "query": "filters naming it are refused before sending; results are decompressed",
        "values": "values() of a compressed field are the plain value",
        "scan": "as query",
        "stream": "images are decompressed (Change.new, Change.old)",
        "history": "version rows hold the value as the latest copy did, read back plain",
        "migrate": "a row moved to a new key keeps its compressed value",
        "backfill": "fn sees the plain value; a changed value is compressed again",
        "check": "compares the stored values as stored: nothing of its own",
        "export": "written as the plain value",
        "search": "a vector field cannot be Compressed (refused at class definition)",
        "messages": "the plain value, as any field's",
        "logs": "as messages",
        "spans": "as messages",
    }

    def __init__(self, fields: Mapping[str, tuple[str, int]], owner: str):
        #: stored attribute name -> (field name, min_size)
        self.fields = fields
        self.owner = owner

    @classmethod
    def build(cls, decl: Any) -> Compression | None:
        marked = {n: m for n, node in decl.trees.items() if (m := _marker(node)) is not None}
        if not marked:
            return None
        decl.uncompared("Compressed", marked)
        return cls({decl.attr(n): (n, m._min_size) for n, m in marked.items()}, decl.owner)

    def renamed(self, attributes: Mapping[str, str]) -> Compression:
        """This rule for rows whose fields are stored under other attribute names
        (``attributes``: stored name -> field name): how a previous layout's rows are
        read (``Meta.previous`` asks a rule that has it)."""
        sizes = dict(self.fields.values())
        return Compression({a: (n, sizes[n]) for a, n in attributes.items() if n in sizes},
                           self.owner)

    def encode(self, item: dict[str, Any], key: Mapping[str, Any],
               stored: Mapping[str, Any] | None) -> None:
        for attr in self.fields.keys() & item.keys():
            av = item[attr]
            if "NULL" in av:
                continue
            size, text = _size(av)
            if len(text) > MAX_INFLATED:
                raise DynaormError(f"{self.owner}.{self.fields[attr][0]}: a Compressed value "
                                   f"is at most {MAX_INFLATED} bytes (its DynamoDB JSON)")
            if size >= self.fields[attr][1] or "B" in av:
                item[attr] = {"B": zlib.compress(text)}

    def decode(self, item: dict[str, Any]) -> dict[str, Any]:
        if not any("B" in item[a] for a in self.fields.keys() & item.keys()):
            return item
        return {a: self._opened(a, v) if a in self.fields and "B" in v else v
                for a, v in item.items()}

    def _opened(self, attr: str, av: Mapping[str, Any]) -> Any:
        """The value a stored binary ``av`` of ``attr`` holds compressed."""
        try:
            inflate = zlib.decompressobj()
            text = inflate.decompress(bytes(av["B"]), MAX_INFLATED)
            if inflate.unconsumed_tail or not inflate.eof:
                raise ValueError(f"not one zlib stream of at most {MAX_INFLATED} bytes: more "
                                 "than that, or cut short")
            return _loaded(json.loads(text))
        except (zlib.error, ValueError, TypeError, RecursionError) as exc:
            raise unreadable(f"{self.owner}.{self.fields[attr][0]}: the stored binary value "
                             f"is not a value Compressed wrote ({exc})", av) from exc

    def refuse(self, use: str, name: str) -> None:
        field = self.fields[name][0] if name in self.fields else name
        if field in dict(self.fields.values()):
            refuse_stored(self.owner, "Compressed", field, use, "its stored value is compressed")
