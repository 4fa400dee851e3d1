"""Condition and filter expressions as small immutable trees.

``F("status") == "open"`` builds a :class:`Condition`; ``&``, ``|`` and ``~`` combine them.
Rendering goes through :class:`Placeholders`, so every attribute name travels as ``#nX``
and every value as ``:vX``: nothing from the caller is ever spliced into expression text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from dynaorm._types import AttributeValue
from dynaorm.model.codec import encode_value

__all__ = ["Condition", "F", "Placeholders", "rename_paths"]


class Placeholders:
    """Allocates ``#n``/``:v`` placeholders for one request (names are reused)."""

    __slots__ = ("_by_name", "_renames", "names", "values")

    def __init__(self, renames: Mapping[str, str] | None = None) -> None:
        self.names: dict[str, str] = {}
        self.values: dict[str, AttributeValue] = {}
        self._by_name: dict[str, str] = {}
        #: field name -> stored attribute name (the first segment of a path is translated)
        self._renames = renames or {}

    def name(self, attr: str) -> str:
        """The placeholder of an attribute path (its first segment translated to the
        stored name when it is a renamed field)."""
        if not self._renames and "." not in attr:  # one segment: its own placeholder
            ph = self._by_name.get(attr)
            if ph is None:
                ph = self._by_name[attr] = f"#n{len(self._by_name)}"
                self.names[ph] = attr
            return ph
        parts = []
        if self._renames:
            head, dot, rest = attr.partition(".")
            attr = self._renames.get(head, head) + dot + rest
        for segment in attr.split("."):
            ph = self._by_name.get(segment)
            if ph is None:
                ph = f"#n{len(self._by_name)}"
                self._by_name[segment] = ph
                self.names[ph] = segment
            parts.append(ph)
        return ".".join(parts)

    def value(self, value: Any) -> str:
        ph = f":v{len(self.values)}"
        self.values[ph] = encode_value(value)
        return ph

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

    def __init__(self, av: AttributeValue) -> None:
        self.av = av


class Condition:
    """A node of a condition tree. Combine with ``&``, ``|`` and ``~``."""

    def render(self, ph: Placeholders) -> str:  # pragma: no cover - abstract
        """The expression text, with names and values added to ``ph`` as placeholders."""
        raise NotImplementedError

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


def _val(ph: Placeholders, value: Any) -> str:
    if type(value) is _Raw:  # (internal: never subclassed)
        return ph.value_av(value.av)
    return ph.value(value)


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
            return f"{ph.name(self.path)} {op} {_val(ph, self.args[0])}"
        rendered = [ph.name(self.path), *[_val(ph, a) for a in self.args]]
        if op == "BETWEEN":
            return f"{rendered[0]} BETWEEN {rendered[1]} AND {rendered[2]}"
        if op == "IN":
            return f"{rendered[0]} IN ({', '.join(rendered[1:])})"
        return f"{op}({', '.join(rendered)})"


@dataclass(frozen=True, eq=False)
class _Bool(Condition):
    op: str
    parts: tuple[Condition, ...]

    def render(self, ph: Placeholders) -> str:
        return f" {self.op} ".join([f"({p.render(ph)})" for p in self.parts])


@dataclass(frozen=True, eq=False)
class _Not(Condition):
    inner: Condition

    def render(self, ph: Placeholders) -> str:
        return f"NOT ({self.inner.render(ph)})"


class F:
    """An attribute path for filters: ``F("status") == "open"``, ``F("a.b").exists()``."""

    __slots__ = ("path",)
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, path: str) -> None:
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

    def __repr__(self) -> str:
        return f"F({self.path!r})"


# -- internal helpers for write conditions (values already encoded) --------------------
def raw_eq(attr: str, av: AttributeValue) -> Condition:
    """``attr = av``, the value already encoded (every update of a loaded object makes
    one per attribute it writes: no lost updates)."""
    return _Test("=", attr, (_Raw(av),))


def not_exists(attr: str) -> Condition:
    """``attribute_not_exists(attr)``."""
    return _Test("attribute_not_exists", attr)


def exists(attr: str) -> Condition:
    """``attribute_exists(attr)``."""
    return _Test("attribute_exists", attr)


def all_of(conditions: list[Condition]) -> Condition | None:
    """The conditions ANDed (in order), the only one itself, ``None`` for none."""
    if not conditions:
        return None
    if len(conditions) == 1:
        return conditions[0]
    return _Bool("AND", tuple(conditions))


def condition_values(cond: Condition) -> list[AttributeValue]:
    """Every value a condition tree carries, encoded (for request size estimates)."""
    if type(cond) is _Test:  # (nearly every caller's condition: one test)
        return [v.av if type(v) is _Raw else encode_value(v) for v in cond.args]
    if isinstance(cond, _Bool):
        return [v for part in reversed(cond.parts) for v in condition_values(part)]
    if isinstance(cond, _Not):
        return condition_values(cond.inner)
    return [v.av if type(v) is _Raw else encode_value(v) for v in getattr(cond, "args", ())]


def rename_paths(cond: Condition, names: Mapping[str, str]) -> Condition:
    """``cond`` with the first segment of every attribute path translated through
    ``names`` (field name -> stored attribute name); unchanged when ``names`` is empty."""
    if not names:
        return cond
    if isinstance(cond, _Bool):
        return _Bool(cond.op, tuple(rename_paths(p, names) for p in cond.parts))
    if isinstance(cond, _Not):
        return _Not(rename_paths(cond.inner, names))
    if not isinstance(cond, _Test):
        return cond
    head, dot, rest = cond.path.partition(".")
    return replace(cond, path=names[head] + dot + rest) if head in names else cond
