"""One value tree per field (contract 25, "One value tree"): an entity's field
annotations compiled once, when its spec is built (:func:`compile_tree`, kept as
``EntitySpec.trees``), into :class:`Node` s that the walks of a value read instead of the
annotation: a field's kind (:func:`field_kind`), the encoding of the kinds given to its
members (:class:`StoredMembers`), the kind at a path (:func:`kind_at`: updates,
conditions and filters by path), the kinds a field's rules read (:func:`markers`), the
nested model a field's values are and its members' aliases (:func:`nested`,
``Node.aliases``: a loaded object's list members, a save's merge with the stored item:
:mod:`dynaorm.values.merge`) and the rule kinds declared where no rule reaches
(:func:`check_hidden`).

A node's ``shape`` and its ``children`` by step: ``model`` (a pydantic model: a member
``.name``), ``record`` (a dataclass, ``TypedDict`` or ``NamedTuple``: ``.name``),
``list`` and ``set`` (a member ``[]``), ``mapping`` (a value ``{}``), ``union`` (each arm
but ``None``, step ``""``), ``scalar`` (anything else; a generic's arguments as ``[]``, a
mapping's values as ``{}``). The encoding and paths walk models, lists, sets, mappings and
unions of one arm (a record as a model: a ``NamedTuple``'s members by place); scalars are
stored as pydantic dumps them. A model inside
itself is the same node (a back-reference).

A node's ``kinds``: the value kinds (:class:`~dynaorm.values.codec.Kind`: ``StoredAs``)
and rule markers (``Compressed``, ``Encrypted``, ``Offloaded``, ``Vector``) of its
``Annotated`` metadata, in the order a write applies them: ``StoredAs``, ``Compressed``,
``Encrypted``, ``Offloaded``, then any other."""

from __future__ import annotations

import copy
import dataclasses
import functools
import re
import sys
import types
import typing
from collections import abc
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from typing import Annotated, Any

import typing_extensions

from dynaorm._types import AttributeValue
from dynaorm.errors import DynaormError, InvalidValueError
from dynaorm.values.codec import Kind, encode_value

__all__ = ["FirstTaking", "Node", "StoredMembers", "Where", "check_hidden", "compile_tree",
           "field_kind", "kind_at", "lists_in", "markers", "merged_kinds", "nested"]

_SHAPES = {list: "list", tuple: "list", abc.Sequence: "list", abc.MutableSequence: "list",
           set: "set", frozenset: "set", abc.Set: "set", abc.MutableSet: "set",
           dict: "mapping", abc.Mapping: "mapping", abc.MutableMapping: "mapping",
           # (a TypedDict's member marked: of the one type it marks, as Optional's arm)
           typing.Required: "union", typing.NotRequired: "union",
           typing_extensions.ReadOnly: "union"}
_ORDER = ("StoredAs", "Compressed", "Encrypted", "Offloaded")
#: a place in a value: its attribute, then a member's name, place or key at each level
Where = tuple[Any, ...]


@dataclass(eq=False)
class Node:
    """One node of a value tree (see the module's docstring)."""

    shape: str
    kinds: tuple[Any, ...] = ()
    children: list[tuple[str, Node]] = field(default_factory=list)
    #: a model's members read by an alias: member -> alias
    aliases: dict[str, str] = field(default_factory=dict)

    def child(self, step: str) -> Node | None:
        """The first child at ``step`` (``None``: none)."""
        return next((n for s, n in self.children if s == step), None)

    @property
    def kind(self) -> Kind | None:
        """The node's first value kind."""
        return next((k for k in self.kinds if isinstance(k, Kind)), None)

    @functools.cached_property
    def holds_models(self) -> bool:
        """Whether its values may hold a model or a record (a dataclass...), at any depth."""
        return any(n.shape in ("model", "record") for _, n in _nodes(self))

    @functools.cached_property
    def holds_lists(self) -> bool:
        """Whether its values may hold a list or a mapping of nested models, at any depth."""
        return any(n.collects for _, n in _nodes(self, walked=True))

    @property
    def collects(self) -> bool:
        """Whether its values are lists or mappings of nested models (whose members a
        loaded object's state knows)."""
        return self.shape in ("list", "mapping") and len(self.walked) == 1 and nested(
            self.walked[0], True) is not None

    @property
    def walked(self) -> list[Node]:
        """The children the encoding and paths walk."""
        return [n for _, n in self.children] if self.shape != "scalar" and (
            self.shape != "union" or len(self.children) == 1) else []


def _name(marker: Any) -> str:
    return (marker.split(":", 1)[1].capitalize() if isinstance(marker, str)
            else type(marker).__name__.lstrip("_"))


def _rule_marker(marker: Any) -> bool:
    """Whether ``marker`` is one of dynaorm's rules' (a ``"dynaorm:..."`` text or an object
    of a rule module), as opposed to a value kind or anyone else's metadata."""
    return (marker.startswith("dynaorm:") if isinstance(marker, str)
            else type(marker).__module__.startswith("dynaorm.schema.rules"))


def _members(cls: type) -> tuple[str, dict[str, Any]]:
    """The shape of a class and the members a value of it holds, with their metadata; a
    name not resolved yet (a forward reference, an annotation's text) resolved in the
    class's module as ``typing`` does, else left a ``ForwardRef``."""
    if hasattr(cls, "model_fields"):
        shape, found = "model", {
            name: Annotated[(info.annotation, *info.metadata)] if info.metadata
            else info.annotation for name, info in cls.model_fields.items()}
    elif dataclasses.is_dataclass(cls) or hasattr(cls, "__required_keys__") or (
            issubclass(cls, tuple) and hasattr(cls, "_fields")):  # (TypedDict, NamedTuple)
        shape, found = "record", {k: v for c in reversed(cls.__mro__) for k, v in vars(
            c).get("__annotations__", {}).items()}
    else:
        return "scalar", {}
    names = vars(sys.modules.get(cls.__module__, typing))
    for name, member in found.items():
        if isinstance(member, str | typing.ForwardRef):
            text = member if isinstance(member, str) else member.__forward_arg__
            try:
                found[name] = eval(text, dict(names))
            except Exception:  # (a name only its defining function sees)
                found[name] = typing.ForwardRef(text)
    return shape, found


def compile_tree(annotation: Any, models: dict[type, Node]) -> Node:
    """The tree of ``annotation`` (``models``: the classes' nodes made so far)."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        inner = compile_tree(args[0], models)
        kinds = (*annotation.__metadata__, *inner.kinds)
        return Node(inner.shape, tuple(sorted(
            (k for k in kinds if isinstance(k, Kind | typing.ForwardRef) or _rule_marker(k)),
            key=lambda k: (*_ORDER, _name(k)).index(_name(k)))), inner.children)
    if isinstance(annotation, typing.ForwardRef):  # (what it holds is not known)
        return Node("unresolved", (annotation,))
    if hasattr(annotation, "__value__") and not isinstance(annotation, type):  # (an alias)
        return Node("alias", (), [("~", compile_tree(annotation.__value__, models))])
    if isinstance(annotation, type) and origin is None:
        if annotation not in models:
            shape, members = _members(annotation)
            models[annotation] = node = Node(shape, aliases={n: a for n, i in getattr(
                annotation, "model_fields", {}).items() if isinstance(
                a := i.validation_alias, str) and a != n})
            node.children += [(f".{n}", compile_tree(m, models)) for n, m in members.items()]
        return models[annotation]
    if origin in (typing.Union, types.UnionType):
        return Node("union", (), [("", compile_tree(a, models)) for a in args
                                  if a is not type(None)])
    return _generic(origin, args, models)


def _generic(origin: Any, args: tuple[Any, ...], models: dict[type, Node]) -> Node:
    """A generic's node: a list, set or mapping of its members (``tuple[X, ...]``), else
    a scalar whose arguments are its children."""
    mapping = isinstance(origin, type) and issubclass(origin, abc.Mapping)
    shape = _SHAPES.get(origin, "scalar") if args and (
        len(args) == 2 if mapping else origin is not tuple or args[-1] is Ellipsis) else "scalar"
    return Node(shape, (), [("{}" if mapping else "[]", compile_tree(a, models))
                            for a in (args[1:] if mapping else args)])


def _encode(node: Node, value: Any, av: AttributeValue) -> AttributeValue:
    """How ``value`` (as pydantic dumps it), ``av`` by default, is stored at ``node``."""
    if kind := node.kind:
        return av if value is None else kind.encode(value)
    walked = node.walked
    if node.shape in ("list", "set", "record") and "L" in av:  # (a set's: in order; a
        members = walked if node.shape == "record" else walked[:1] * len(value)  # NamedTuple's
        return {"L": [_encode(n, v, a) for n, v, a in zip(members, value, av["L"], strict=True)]}
    if walked and node.shape in ("list", "set", "union", "alias"):  # (a list's: one member,
        return _encode(walked[0], value, av)  # an operand of contains)
    if not isinstance(value, dict) or "M" not in av:
        return av
    if node.shape == "mapping":
        return {"M": {k: _encode(walked[0], v, a)
                      for v, (k, a) in zip(value.values(), av["M"].items(), strict=True)}}
    return {"M": {k: _encode(n, value[k], a) if (n := node.child(f".{k}")) and k in value
                  else a for k, a in av["M"].items()}}  # (a model's, a record's: by name)


@dataclass(frozen=True, eq=False)
class StoredMembers(Kind):
    """The field-level kind of a field whose members are of a kind given in their own
    ``Annotated`` metadata (``list[Annotated[datetime, StoredAs.ISO_Z]]``, a nested
    model's ``StoredAs`` time, as inference prints them): the field is stored as any value
    of its type, each such member its kind's way. A value that is one member (an operand
    of ``contains``) is stored as a member."""

    node: Node | None = None

    @staticmethod
    def of(node: Node | None) -> StoredMembers | None:
        """The kind storing the values of ``node`` (``None``: no value kind is given in it)."""
        return None if node is None or all(n.kind is None for _, n in _nodes(
            node, walked=True)) else StoredMembers(
            "members of their own kinds", (object,), "",
            lambda v: _encode(node, v, encode_value(v)), node=node)


def nested(node: Node, listed: bool = False) -> Node | None:
    """The model node a field's values are (or are lists of, unless ``listed``), through
    ``Optional``."""
    if (node.shape == "union" or (node.shape == "list" and not listed)) and len(node.walked) == 1:
        return nested(node.walked[0], listed or node.shape == "list")
    return node if node.shape == "model" else None


def lists_in(node: Node, value: Any, path: Where) -> Iterator[tuple[Where, Any]]:
    """Every list or mapping of nested models ``value`` (of ``node``, at ``path``) holds (a
    copy), by path: a model's member by name, a list's by place, a mapping's by key (a
    loaded object's state knows their members: :mod:`dynaorm.values.merge`)."""
    while len(node.walked) == 1 and node.shape in ("union", "alias"):
        node = node.walked[0]
    if not node.holds_lists or value is None:
        return
    if node.shape in ("model", "record"):
        for step, child in node.children:
            yield from lists_in(child, getattr(value, step[1:], None), (*path, step[1:]))
        return
    if node.collects:
        yield path, copy.copy(value)
    for at, member in value.items() if isinstance(value, dict) else enumerate(value):
        yield from lists_in(node.walked[0], member, (*path, at))


def _reached(node: Node, first: bool = True) -> Iterator[Node]:
    """The nodes a field's rules reach: the field's own and its first level's (a list's
    member, a mapping's value), each through its ``Optional``'s arm (a union's arm is no
    level); never a model's member nor an alias's value."""
    yield node
    for step, child in node.children:
        if step == "" or (first and step in ("[]", "{}")):
            yield from _reached(child, first and step == "")


def markers(node: Node) -> list[Any]:
    """The kinds a field's rules read (:mod:`dynaorm.schema.rules`): of the nodes they
    reach (:func:`_reached`: ``list[Encrypted[str]] | None``)."""
    return [k for n in _reached(node) for k in n.kinds]


def field_kind(node: Node) -> Kind | None:
    """A field's field-level kind: given on it or its ``Optional``'s arm, else the one
    storing the kinds given to its members."""
    arm = node.walked[0] if node.shape == "union" and node.walked else node
    return node.kind or arm.kind or StoredMembers.of(node)


@dataclass(frozen=True, eq=False)
class FirstTaking(Kind):
    """The kind a filter's operand on a field (or a path into it) is stored by where the
    entities of one query give it different kinds (a ``StoredAs`` time in one, text in
    another): the first of ``kinds`` that takes the operand (``None``: as any value is
    stored), else as any value is (:func:`merged_kinds`)."""

    kinds: tuple[Kind | None, ...] = ()

    @staticmethod
    def of(kinds: Iterable[Kind | None]) -> Kind | None:
        """The one of ``kinds``, or the first of them that takes a value."""
        found = tuple(dict.fromkeys(kinds))

        def encode(value: Any) -> AttributeValue:
            for kind in found:
                if kind is not None:
                    with suppress(InvalidValueError):
                        return kind.encode(value)
            return encode_value(value)
        return found[0] if len(found) == 1 else FirstTaking(
            f"first of {len(found)} kinds", (object,), "", encode, kinds=found)


def merged_kinds(specs: Sequence[Any]) -> dict[str, Kind]:
    """The field-level kinds of the entity specs of one query, by field name: an
    entity's own, or :class:`FirstTaking` where the entities holding the field differ."""
    return {name: kind for name in {n for spec in specs for n in spec.kinds} if (
        kind := FirstTaking.of(spec.kinds.get(name) for spec in specs
                               if name in spec.cls.model_fields))}


def kind_at(kinds: Mapping[str, Kind | None], path: str) -> Kind | None:
    """The kind a value at attribute ``path`` (a field's name, or a path into it:
    ``last.at``, ``seen[0]``) is stored by, of the field-level ``kinds``; ``None``: none."""
    name = re.split(r"[.\[]", path, maxsplit=1)[0]
    kind = kinds.get(name)
    if name == path:
        return kind
    if isinstance(kind, FirstTaking):  # (each entity's at the path)
        return FirstTaking.of(kind_at({name: k}, path) for k in kind.kinds)
    if not isinstance(kind, StoredMembers):
        return None
    node = kind.node
    for step in re.findall(r"\.[^.\[]+|\[\d+\]", path[len(name):]):
        while node and (node.shape in ("union", "alias") or node.kind):
            node = None if node.kind or len(node.walked) != 1 else node.walked[0]
        node = node and node.child("[]" if step[0] == "[" else step if (
            node.shape == "model") else "{}")
    return StoredMembers.of(node)


def _nodes(node: Node, path: str = "", above: frozenset[int] = frozenset(),
           walked: bool = False) -> Iterator[tuple[str, Node]]:
    """Every node at or below ``node``, by path (a model inside itself once); ``walked``:
    where the encoding walks (:attr:`Node.walked`)."""
    yield path, node
    for step, child in () if id(node.children) in above else node.children:
        if not walked or child in node.walked:
            yield from _nodes(child, path + step.strip("~"), above | {id(node.children)}, walked)


def check_hidden(owner: str, root: Node) -> None:
    """Refuse a rule's kind declared inside a field's value (a nested model's
    ``Encrypted`` field, ``list[list[Compressed[str]]]``): its rule works on whole
    fields, so the value would be stored without it (a card number in plaintext), unless
    the field's rules take it already. The error names the path and the way out: the kind
    on the entity's own field."""
    for step, top in root.children:
        reached = {id(n) for n in _reached(top) if n.shape != "unresolved"}
        taken = {_name(m) for m in markers(top)}  # (its rule takes the whole value)
        for path, marker in ((p, m) for p, n in _nodes(top, step[1:], frozenset({id(
                root.children)})) if id(n) not in reached for m in n.kinds
                             if not isinstance(m, Kind) and _name(m) not in taken):
            if isinstance(marker, typing.ForwardRef):
                raise DynaormError(
                    f"{owner}.{path}: {marker.__forward_arg__!r} is not resolved when {owner} "
                    "is defined, so the kinds its value holds cannot be checked; define it "
                    "first (at module level), or rebuild the model that names it "
                    "(model_rebuild())")
            raise DynaormError(
                f"{owner}.{path}: {_name(marker)} inside a field's value is not applied (its "
                f"rule works on whole fields: the value would be stored without it); "
                f"declare it on the entity's field, as {step[1:]}: {_name(marker)}[...]")


# -- where a rule's kind lives: what the rules and the jobs ask -----------------------------
def holding(trees: Mapping[str, Node], marker: str) -> list[str]:
    """The fields holding a value of the rule kind ``marker`` where their rules reach
    (:func:`markers`; elsewhere refused, :func:`check_hidden`): every sealed node
    (``"dynaorm:encrypted"``), every reference (``"dynaorm:offloaded"``). Its rule takes
    the field's whole value: a job reaching the field reaches every such node."""
    return [name for name, node in trees.items() if marker in markers(node)]
