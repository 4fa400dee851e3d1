"""Condition and filter expressions as small immutable trees.

``F("status") == "open"`` builds a :class:`Condition`; ``&``, ``|`` and ``~`` combine them.
Rendering goes through :class:`Placeholders`, so every attribute name travels as ``#nX``
and every value as ``:vX``: nothing from the caller is ever spliced into expression text.

A tree is also evaluated in Python against a stored item (:func:`holds`): when one action
carries both the caller's condition and dynaorm's own, DynamoDB only says "the condition
failed" and returns the stored item (``ALL_OLD``); evaluating the caller's condition on
that item tells which of the two failed. The semantics follow DynamoDB's condition
expressions: comparisons only between values of the same type (else false),
``attribute_exists``/``attribute_not_exists``, ``begins_with``, ``contains``, and the
``size`` of a list, map or set (dynaorm's own conditions on an update's result:
:class:`Rule`).
"""

from __future__ import annotations

import operator
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from dynaorm._types import AttributeValue, Item
from dynaorm.caches import cache
from dynaorm.values.codec import encode_value
from dynaorm.values.tree import kind_at


class Placeholders:
    """Allocates ``#n``/``:v`` placeholders for one request (names are reused)."""

    __slots__ = ("_by_name", "_renames", "names", "values")

    def __init__(self, renames: Mapping[str, str] | None = None):
        self.names: dict[str, str] = {}
        self.values: dict[str, AttributeValue] = {}
        self._by_name: dict[str, str] = {}
        #: field name -> stored attribute name (the first segment of a path is translated)
        self._renames = renames or {}

    def name(self, attr: str) -> str:
        """The placeholder of an attribute path (its first segment translated to the
        stored name when it is a renamed field: that name whole, dots included); a
        :class:`Name` is one attribute's whole name."""
        if type(attr) is Name:
            return self.segments((attr,))
        parts = []
        for at, segment in enumerate(attr.split(".")):  # (a loop, no call per segment:
            segment, bracket, index = segment.partition("[")  # every write's names; a
            if not at:  # list index: tags[0])
                segment = self._renames.get(segment, segment)
            ph = self._by_name.get(segment)
            if ph is None:
                ph = self._by_name[segment] = f"#n{len(self._by_name)}"
                self.names[ph] = segment
            parts.append(ph + bracket + index)
        return ".".join(parts)

    def segments(self, path: tuple[str, ...]) -> str:
        """The placeholder of a document path given as its names (a map member's: each
        name as it is, dots and brackets included)."""
        parts = []
        for segment in path:
            ph = self._by_name.get(segment)
            if ph is None:
                ph = self._by_name[segment] = f"#n{len(self._by_name)}"
                self.names[ph] = segment
            parts.append(ph)
        return ".".join(parts)

    def value_av(self, av: AttributeValue) -> str:
        """A placeholder for a value already in AttributeValue form."""
        ph = f":v{len(self.values)}"
        self.values[ph] = av
        return ph

    def apply(self, request: dict[str, Any]) -> dict[str, Any]:
        """Add ExpressionAttributeNames/Values to ``request`` when any were used."""
        if self.names:
            request["ExpressionAttributeNames"] = self.names
        if self.values:
            request["ExpressionAttributeValues"] = self.values
        return request


class _Raw:
    """A value already in AttributeValue form (internal conditions use this)."""

    __slots__ = ("av",)

    def __init__(self, av: AttributeValue):
        self.av = av


class Condition:
    """A node of a condition tree. Combine with ``&``, ``|`` and ``~``."""

    def render(self, ph: Placeholders) -> str:  # pragma: no cover - abstract
        """The expression text, with names and values added to ``ph`` as placeholders."""
        raise NotImplementedError

    def holds(self, item: Item) -> bool:
        """Whether the condition is true on the stored ``item`` (``{}``: no item)."""
        raise TypeError(f"cannot evaluate condition {self!r}")

    def __and__(self, other: Condition) -> Condition:
        return _Bool("AND", (self, _check(other)))

    def __or__(self, other: Condition) -> Condition:
        return _Bool("OR", (self, _check(other)))

    def __invert__(self) -> Condition:
        return _Not(self)

    def __bool__(self) -> bool:
        raise TypeError("use &, | and ~ to combine conditions, not and/or/not")


def _check(other: object) -> Condition:
    if not isinstance(other, Condition):
        raise TypeError(f"cannot combine a condition with {other!r}")
    return other


def _av(value: Any) -> AttributeValue:
    """A condition's value encoded (one already encoded, internal, as it is)."""
    return value.av if type(value) is _Raw else encode_value(value)  # (never subclassed)


#: the comparisons a test renders between its path and its value
_COMPARISONS = frozenset({"=", "<>", "<", "<=", ">", ">="})


@dataclass(frozen=True, eq=False)
class _Test(Condition):
    """One test of one attribute: a comparison (:data:`_COMPARISONS`), ``BETWEEN``,
    ``IN``, or a function (``begins_with``, ``contains``, ``attribute_exists``,
    ``attribute_not_exists``) of the attribute and ``args``, its values."""

    op: str
    path: str
    args: tuple[Any, ...] = ()

    def render(self, ph: Placeholders) -> str:
        op = self.op
        if op in _COMPARISONS:
            return f"{ph.name(self.path)} {op} {ph.value_av(_av(self.args[0]))}"
        rendered = [ph.name(self.path), *map(ph.value_av, map(_av, self.args))]
        if op == "BETWEEN":
            return f"{rendered[0]} BETWEEN {rendered[1]} AND {rendered[2]}"
        if op == "IN":
            return f"{rendered[0]} IN ({', '.join(rendered[1:])})"
        return f"{op}({', '.join(rendered)})"

    def holds(self, item: Item) -> bool:
        op, stored, args = self.op, _path(item, self.path), self.args
        if op == "BETWEEN":
            return _compare(stored, ">=", _av(args[0])) and _compare(stored, "<=", _av(args[1]))
        if op == "IN":
            return any(_compare(stored, "=", _av(v)) for v in args)
        if op in ("attribute_exists", "attribute_not_exists"):
            return (stored is None) is (op == "attribute_not_exists")
        if op == "begins_with":
            arg = _av(args[0])
            return stored is not None and "S" in stored and "S" in arg and str(
                stored["S"]).startswith(arg["S"])
        if op == "contains":
            return stored is not None and _contains(stored, _av(args[0]))
        return _compare(stored, op, _av(args[0]))


@dataclass(frozen=True, eq=False)
class _Size(_Test):
    """``size(path) op n``: the number of elements of a stored list, map or set."""

    def render(self, ph: Placeholders) -> str:
        return f"size({ph.name(self.path)}) {self.op} {ph.value_av(_av(self.args[0]))}"

    def holds(self, item: Item) -> bool:
        ((tag, raw),) = (_path(item, self.path) or {"S": ""}).items()
        return tag in ("L", "M", "SS", "NS", "BS") and _compare(
            {"N": str(len(raw))}, self.op, _av(self.args[0]))


def size_is(path: str, op: str, n: int) -> Condition:
    """``size(path) op n``."""
    return _Size(op, path, (n,))


@dataclass(frozen=True, eq=False)
class _Bool(Condition):
    op: str
    parts: tuple[Condition, ...]

    def render(self, ph: Placeholders) -> str:
        return f" {self.op} ".join([f"({p.render(ph)})" for p in self.parts])

    def holds(self, item: Item) -> bool:
        parts = (p.holds(item) for p in self.parts)
        return all(parts) if self.op == "AND" else any(parts)


@dataclass(frozen=True, eq=False)
class _Not(Condition):
    inner: Condition

    def render(self, ph: Placeholders) -> str:
        return f"NOT ({self.inner.render(ph)})"

    def holds(self, item: Item) -> bool:
        return not self.inner.holds(item)


@dataclass(frozen=True, eq=False)
class Rule(_Bool):
    """A condition dynaorm derives from a field's rule (``Rule("AND", (condition,),
    what)``); ``what`` names the field and the rule when it fails (:func:`broken_rules`)."""

    what: str = ""

    def render(self, ph: Placeholders) -> str:
        return self.parts[0].render(ph)  # (DynamoDB refuses redundant parentheses)


def broken_rules(cond: Condition | None, item: Item | None) -> list[str]:
    """What the :class:`Rule` nodes of ``cond`` (ANDed in) that fail on ``item`` name."""
    parts = cond.parts if type(cond) is _Bool and cond.op == "AND" else (cond,)
    return [p.what for p in parts if isinstance(p, Rule) and not p.holds(item or {})]


class F:
    """An attribute path for filters, conditions and update actions: ``F("status") ==
    "open"``, ``F("address.city").exists()``, a list element ``F("tags")[0]``, a map's key
    ``F("prefs")["theme"]``. The path is checked against the entities of the read or
    write it is given to (a name none declares is ``InvalidValueError``)."""

    __slots__ = ("path",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, path: str):
        if not isinstance(path, str) or not path or any(not p for p in path.split(".")):
            raise ValueError(f"F() needs an attribute name, got {path!r}")
        self.path = path
        """The attribute path (``"a.b"``: attribute ``b`` of map ``a``)."""

    def __eq__(self, value: object) -> Condition:  # type: ignore[override]
        return _Test("=", self.path, (value,))

    def __ne__(self, value: object) -> Condition:  # type: ignore[override]
        return _Test("<>", self.path, (value,))

    def __lt__(self, value: Any) -> Condition:
        return _Test("<", self.path, (value,))

    def __le__(self, value: Any) -> Condition:
        return _Test("<=", self.path, (value,))

    def __gt__(self, value: Any) -> Condition:
        return _Test(">", self.path, (value,))

    def __ge__(self, value: Any) -> Condition:
        return _Test(">=", self.path, (value,))

    def between(self, low: Any, high: Any) -> Condition:
        """``low <= attribute <= high``."""
        return _Test("BETWEEN", self.path, (low, high))

    def begins_with(self, prefix: str) -> Condition:
        """The attribute (a string) starts with ``prefix``."""
        return _Test("begins_with", self.path, (prefix,))

    def contains(self, value: Any) -> Condition:
        """The attribute (a string, set or list) contains ``value``."""
        return _Test("contains", self.path, (value,))

    def exists(self) -> Condition:
        """The item has the attribute."""
        return _Test("attribute_exists", self.path)

    def not_exists(self) -> Condition:
        """The item lacks the attribute."""
        return _Test("attribute_not_exists", self.path)

    def is_in(self, *values: Any) -> Condition:
        """The attribute equals one of ``values`` (given as arguments or one collection)."""
        if len(values) == 1 and isinstance(values[0], list | tuple | set | frozenset):
            values = tuple(values[0])
        if not values:
            raise ValueError(f"F({self.path!r}).is_in() needs at least one value")
        return _Test("IN", self.path, tuple(values))

    def __getitem__(self, key: int | str) -> F:
        """A list element (``F("tags")[0]``) or a map's key (``F("prefs")["theme"]``)."""
        if isinstance(key, int) and key >= 0:
            return F(f"{self.path}[{key}]")
        if isinstance(key, str) and key and not set(key) & set(".[]"):
            return F(f"{self.path}.{key}")
        raise ValueError(f"F({self.path!r})[{key!r}]: an index >= 0, or a key without .[]")

    def __repr__(self) -> str:
        return f"F({self.path!r})"


def paths(cond: Condition) -> list[str]:
    """The attribute paths a condition tree names (not those of dynaorm's :class:`Rule`)."""
    if isinstance(cond, _Bool):
        return [p for part in cond.parts for p in paths(part)]
    return paths(cond.inner) if isinstance(cond, _Not) else (
        [cond.path] if isinstance(cond, _Test) else [])


def equalities(cond: Condition) -> list[tuple[str, Any]] | None:
    """The ``(path, value)`` of each ``F(path) == value`` of a condition that is only such
    tests joined by ``&`` (what a vector search's condition takes), in order; ``None``
    for any other condition."""
    if type(cond) is _Bool and cond.op == "AND":
        found = [equalities(p) for p in cond.parts]
        return None if None in found else [e for part in found for e in part or ()]
    if type(cond) is _Test and cond.op == "=":
        return [(cond.path, cond.args[0])]
    return None


# -- internal helpers for write conditions (values already encoded) --------------------
class Name(str):
    """An attribute's whole name where a path is expected: never split at dots or
    brackets (``legacy.field``, an attribute another writer named so)."""

    __slots__ = ()


def whole(name: str) -> str:
    """One attribute's whole name (a key's, a TTL's, the type's, a field's stored one),
    where a path is expected: never split at dots or brackets."""
    return Name(name) if "." in name or "[" in name else name


def attribute(name: str) -> F:
    """:class:`F` of one attribute's whole name (:func:`whole`)."""
    return F(whole(name))


def raw_eq(attr: str, av: AttributeValue) -> Condition:
    """``attr = av``, the value already encoded (every update of a loaded object makes
    one per attribute it writes: no lost updates); ``attr`` is one attribute's name."""
    return _Test("=", whole(attr), (_Raw(av),))


def not_exists(attr: str) -> Condition:
    """``attribute_not_exists(attr)`` (``attr``: one attribute's name)."""
    return _Test("attribute_not_exists", whole(attr))


def stored_as(stored: Item, attrs: set[str] | frozenset[str]) -> list[Condition]:
    """Conditions that the stored attributes ``attrs`` still hold what ``stored`` says (a
    loaded item, raw): one ``=`` or ``attribute_not_exists`` per attribute."""
    return [not_exists(name) if (av := stored.get(name)) is None else raw_eq(name, av)
            for name in sorted(attrs)]


def free(pk: str, ttl: str | None) -> Condition:
    """The condition of a write that claims a key: no item exists there, or (a table with
    the TTL attribute ``ttl``) the one stored has a TTL that has passed now, its owner
    expired: reads count it as gone (``expired`` in :mod:`dynaorm.schema.rules.stamps`
    uses the same ``<=``), so a claim does too. One condition, no read (without a TTL,
    one per ``pk``, its text computed once: :func:`render_first`)."""
    if ttl is not None:
        return not_exists(pk) | (attribute(ttl) <= int(time.time()))
    absent = _ABSENT.get(pk)
    if absent is None:  # (the one made here is returned: clear_caches() may run between)
        ph = Placeholders()
        _ABSENT[pk] = absent = not_exists(pk)
        RENDERED_ALONE[absent] = absent.render(ph), ph.names, ph._by_name
    return absent


def render_first(condition: Condition, ph: Placeholders) -> str:
    """``condition.render(ph)``; the text computed once where ``condition`` is one
    :func:`free` shares (:data:`RENDERED_ALONE`) and the first expression ``ph`` renders
    (a claim's: every insert's row and guards)."""
    found = None if ph.names or ph.values else RENDERED_ALONE.get(condition)
    if found is None:
        return condition.render(ph)
    ph.names.update(found[1])
    ph._by_name.update(found[2])  # (the next name is #n1)
    return str(found[0])


_ABSENT: dict[str, Condition] = cache("expressions.absent")
#: per condition :func:`free` shares, its text and names as the first expression of a
#: request
RENDERED_ALONE = cache("expressions.alone")


def exists(attr: str) -> Condition:
    """``attribute_exists(attr)`` (``attr``: one attribute's name)."""
    return _Test("attribute_exists", whole(attr))


def all_of(conditions: list[Condition]) -> Condition | None:
    """The conditions ANDed (in order), the only one itself, ``None`` for none."""
    if not conditions:
        return None
    if len(conditions) == 1:
        return conditions[0]
    return _Bool("AND", tuple(conditions))


def condition_values(cond: Condition) -> list[AttributeValue]:
    """Every value a condition tree carries, encoded (for request size estimates)."""
    out = []
    stack = [cond]
    while stack:
        node = stack.pop()
        if isinstance(node, _Bool):
            stack.extend(node.parts)
        elif isinstance(node, _Not):
            stack.append(node.inner)
        else:
            for v in getattr(node, "args", ()):
                out.append(_av(v))
    return out


def rename_paths(cond: Condition, names: Mapping[str, str],
                 kinds: Mapping[str, Any] | None = None) -> Condition:
    """``cond`` as stored: the first segment of every attribute path translated through
    ``names`` (field name -> stored attribute name), and the values compared with a field
    of a field-level kind (``kinds``: field name -> :class:`~dynaorm.values.codec.Kind`)
    encoded as that kind stores them; unchanged when both are empty."""
    if not names and not kinds:
        return cond
    if isinstance(cond, _Bool):
        return _Bool(cond.op, tuple(rename_paths(p, names, kinds) for p in cond.parts))
    if isinstance(cond, _Not):
        return _Not(rename_paths(cond.inner, names, kinds))
    if not isinstance(cond, _Test):
        return cond
    head, rest = re.match(r"([^.\[]*)(.*)", cond.path).groups()  # type: ignore[union-attr]
    kind = kind_at(kinds, cond.path) if kinds else None  # (a path's: a member's kind)
    if kind is not None and cond.op not in ("attribute_exists", "attribute_not_exists"):
        cond = replace(cond, args=tuple(a if type(a) is _Raw else _Raw(kind.encode(a))
                                        for a in cond.args))
    return replace(cond, path=whole(names[head]) if not rest else  # (the stored name
                   names[head] + rest) if head in names else cond  # whole, but in a path)


# -- evaluation against a stored item (DynamoDB's semantics) ------------------------
def holds(cond: Condition, item: Item | None) -> bool:
    """Whether ``cond`` is true on the stored ``item`` (``None``: no item)."""
    return cond.holds(item or {})


def _path(item: Item, path: str) -> AttributeValue | None:
    if type(path) is Name:
        return item.get(path)
    current = None
    scope: Any = item
    for segment in re.findall(r"[^.\[\]]+|\[\d+\]", path):
        if segment[0] == "[":  # a list index
            at = int(segment[1:-1])
            if current is None or "L" not in current or at >= len(current["L"]):
                return None
            current = current["L"][at]
        elif not isinstance(scope, dict) or segment not in scope:
            return None
        else:
            current = scope[segment]
        assert current is not None
        scope = current.get("M")
    return current


def _key(av: AttributeValue) -> tuple[str, Any] | None:
    """A comparable form of a scalar (N, S, B), else None (not orderable)."""
    (tag, raw), = av.items()
    if tag == "N":
        return tag, Decimal(raw)
    if tag in ("S", "B"):
        return tag, raw
    return None


def _equal(a: AttributeValue, b: AttributeValue) -> bool:
    ka, kb = _key(a), _key(b)
    if ka is not None and kb is not None:
        return ka == kb
    (ta, ra), = a.items()
    (tb, rb), = b.items()
    if ta != tb:
        return False
    if ta in ("SS", "NS", "BS"):
        return {_key({ta[0]: x}) for x in ra} == {_key({tb[0]: x}) for x in rb}
    return bool(ra == rb)


_ORDER = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _compare(stored: AttributeValue | None, op: str, value: AttributeValue) -> bool:
    if stored is None:  # a missing attribute equals nothing, so it differs from anything
        return op == "<>"
    if op == "=":
        return _equal(stored, value)
    if op == "<>":
        return not _equal(stored, value)
    ks, kv = _key(stored), _key(value)
    if ks is None or kv is None or ks[0] != kv[0]:
        return False
    return bool(_ORDER[op](ks[1], kv[1]))


def _contains(stored: AttributeValue, value: AttributeValue) -> bool:
    (tag, raw), = stored.items()
    if tag == "S":
        return "S" in value and value["S"] in raw
    if tag in ("SS", "NS", "BS"):
        k = _key(value)
        return k is not None and k in {_key({tag[0]: x}) for x in raw}
    if tag == "L":
        return any(_equal(x, value) for x in raw)
    return False
