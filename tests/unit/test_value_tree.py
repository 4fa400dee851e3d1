"""The value tree (contract 25, "One value tree"; :mod:`dynaorm.values.tree`): an
annotation compiled once into nodes with their kinds, walked for the members' encoding,
the kind at a path and the refusal of rule kinds no rule reaches. Its behaviour on a table
(a member stored in its format, updated and compared by path) is in
``integration/test_stored_values.py`` and ``integration/test_round_trip.py``; the
refusal of an entity in ``unit/test_definitions.py``.

The properties compare the tree with the two walks of an annotation it replaced
(0.9's, kept below as references): the members' encoding of random annotations and
values, and which rule kind a definition refuses, at which path."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections import abc
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from functools import partial
from typing import Annotated, Any, NamedTuple, TypedDict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, create_model

from dynaorm import Compressed, Encrypted, Offloaded, StoredAs, Vector
from dynaorm.errors import DynaormError
from dynaorm.values.codec import Kind, encode_value
from dynaorm.values.tree import (
    FirstTaking,
    Node,
    StoredMembers,
    check_hidden,
    compile_tree,
    kind_at,
    markers,
    merged_kinds,
)
from tests.support.examples import examples

ISO = StoredAs.ISO_Z
EPOCH = StoredAs.EPOCH_SECONDS


def _tree(annotation: Any) -> Node:
    return compile_tree(annotation, {})


def _field(model: type[BaseModel], name: str) -> Node:
    node = _tree(model).child(f".{name}")
    assert node is not None
    return node


class Stamp(BaseModel):
    at: Annotated[datetime, ISO]
    children: list[Stamp] = []


class Line(BaseModel):
    sku: str
    shipped: Annotated[datetime, EPOCH] | None = None


@dataclasses.dataclass
class Point:
    x: int
    when: Annotated[datetime, ISO]


class Pair(NamedTuple):
    a: int
    b: str


class Typed(TypedDict):
    name: str


# -- shapes, kinds, paths -----------------------------------------------------------------
def test_each_annotation_compiles_to_its_shape_with_children_by_step() -> None:
    shapes = {list[int]: ("list", ["[]"]), tuple[int, ...]: ("list", ["[]", "[]"]),
              set[str]: ("set", ["[]"]), frozenset[str]: ("set", ["[]"]),
              dict[str, int]: ("mapping", ["{}"]), abc.Mapping[str, int]: ("mapping", ["{}"]),
              int | None: ("union", [""]), int | str: ("union", ["", ""]),
              Line: ("model", [".sku", ".shipped"]), Point: ("record", [".x", ".when"]),
              Pair: ("record", [".a", ".b"]), Typed: ("record", [".name"]),
              tuple[int, str]: ("scalar", ["[]", "[]"]), str: ("scalar", []),
              typing.Literal["a"]: ("scalar", ["[]"])}
    for annotation, (shape, steps) in shapes.items():
        node = _tree(annotation)
        assert (node.shape, [s for s, _ in node.children]) == (shape, steps), annotation


def test_a_nodes_kinds_are_in_the_order_a_write_applies_them() -> None:
    """``StoredAs``, ``Compressed``, ``Encrypted``, ``Offloaded``, then any other, whatever
    the order they are declared in; metadata that is no kind (a constraint) is left out."""
    from annotated_types import Gt

    node = _tree(Offloaded[Encrypted[Compressed[Annotated[datetime, Gt(0), ISO]]]])
    assert [type(k).__name__ if not isinstance(k, str) else k for k in node.kinds] == [
        "StoredAs", "Compressed", "dynaorm:encrypted", "dynaorm:offloaded"]
    vector = Vector(3)
    node = _tree(Annotated[list[float], vector, Encrypted[int]])
    assert node.kinds == (vector,)
    assert _tree(Encrypted[Offloaded[str]]).kinds == ("dynaorm:encrypted", "dynaorm:offloaded")


def test_a_model_inside_itself_is_the_same_node() -> None:
    root = _tree(Stamp)
    member = root.child(".children")
    assert member is not None and member.child("[]") is root
    assert _field(Stamp, "at").kinds == (ISO,)


def test_the_kind_at_a_path_is_the_kind_its_node_stores() -> None:
    class Log(BaseModel):
        last: Line | None = None
        seen: list[Annotated[datetime, ISO]] = []
        by_day: dict[str, Stamp] = {}
        either: Line | Stamp | None = None
        point: Point | None = None

    kinds = {name: StoredMembers.of(_field(Log, name)) for name in Log.model_fields}
    when = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)
    for path, stored in (("last.shipped", {"N": str(int(when.timestamp()))}),
                         ("seen[0]", {"S": "2026-11-27T09:30:00Z"}), ("seen", {"L": [
                             {"S": "2026-11-27T09:30:00Z"}]}),
                         ("by_day.mon.at", {"S": "2026-11-27T09:30:00Z"}),
                         ("by_day.mon.children[3].at", {"S": "2026-11-27T09:30:00Z"})):
        kind = kind_at(kinds, path)
        assert kind is not None, path
        assert kind.encode([when] if path == "seen" else when) == stored, path
    for path in ("last.sku", "last.nothing", "either.sku", "point.when", "seen[0].x",
                 "by_day[0]"):  # (no kind there; a union of several; a record's member)
        assert kind_at(kinds, path) is None, path


# -- the references: 0.9's walks of an annotation -------------------------------------------
_Patch = Callable[[Any, Any], Any]


def _old_patch(annotation: Any, seen: dict[type, list[_Patch | None]],
               lazy: bool = False) -> _Patch | None:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        kind = next((m for m in annotation.__metadata__ if isinstance(m, Kind)), None)
        return _old_kind(kind) if kind else _old_patch(args[0], seen, lazy)
    if origin in (typing.Union, types.UnionType):
        arms = [a for a in args if a is not type(None)]
        return _old_patch(arms[0], seen, lazy) if len(arms) == 1 else None
    if origin in (list, tuple, set, frozenset, abc.Sequence, abc.MutableSequence, abc.Set,
                  abc.MutableSet) and args and (origin is not tuple or args[-1] is Ellipsis):
        member = _old_patch(args[0], seen, lazy)
        return None if member is None else partial(_old_list, member)
    if origin in (dict, abc.Mapping, abc.MutableMapping) and len(args) == 2:
        member = _old_patch(args[1], seen, lazy)
        return None if member is None else partial(_old_map, member)
    if isinstance(annotation, type) and (hasattr(annotation, "model_fields") or (
            dataclasses.is_dataclass(annotation))):  # (a record walked as a model: 0.10)
        if annotation in seen:
            cell = seen[annotation]
            return (lambda v, av: cell[0](v, av) if cell[0] else av) if lazy else None
        made: list[_Patch | None] = []
        made.append(_old_model(annotation, {**seen, annotation: made}, lazy))
        return made[0]
    return None


def _old_list(member: _Patch, value: Any, av: Any) -> Any:
    if isinstance(value, list | tuple | set | frozenset) and "L" in av:
        return {"L": [member(v, a) for v, a in zip(value, av["L"], strict=True)]}
    return member(value, av)


def _old_map(member: _Patch, value: Any, av: Any) -> Any:
    if not isinstance(value, dict) or "M" not in av:
        return av
    return {"M": {k: member(v, a) for v, (k, a) in zip(value.values(), av["M"].items(),
                                                        strict=True)}}


def _old_kind(kind: Kind) -> _Patch:
    return lambda value, av: av if value is None else kind.encode(value)


def _old_model(model: Any, seen: dict[type, list[_Patch | None]], lazy: bool) -> _Patch | None:
    fields: dict[str, _Patch] = {}
    for name, member in _old_members(model).items():
        if (found := _old_patch(member, seen, lazy)):
            fields[name] = found
    if not fields:
        return None

    def patch(value: Any, av: Any) -> Any:
        if not isinstance(value, dict) or "M" not in av:
            return av
        members = dict(av["M"])
        for name, found in fields.items():
            if name in members and name in value:
                members[name] = found(value[name], members[name])
        return {"M": members}
    return patch


def _old_members_kind(annotation: Any) -> _Patch | None:
    return _old_patch(annotation, {}, lazy=True) if _old_patch(annotation, {}) else None


def _name(marker: Any) -> str:
    return (marker.split(":", 1)[1].capitalize() if isinstance(marker, str)
            else type(marker).__name__.lstrip("_"))


def _rule_marker(marker: Any) -> bool:
    return (marker.startswith("dynaorm:") if isinstance(marker, str)
            else type(marker).__module__.startswith("dynaorm.schema.rules"))


def _old_members(cls: type) -> dict[str, Any]:
    if hasattr(cls, "model_fields"):
        return {name: Annotated[(info.annotation, *info.metadata)] if info.metadata
                else info.annotation for name, info in cls.model_fields.items()}
    if dataclasses.is_dataclass(cls) or hasattr(cls, "__required_keys__") or (
            issubclass(cls, tuple) and hasattr(cls, "_fields")):
        return typing.get_type_hints(cls, include_extras=True)
    return {}


def _old_hidden(annotation: Any, path: str, depth: int,
                models: frozenset[type]) -> Iterable[tuple[str, Any]]:
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        if depth > 1:
            yield from ((path, m) for m in annotation.__metadata__ if _rule_marker(m))
        yield from _old_hidden(args[0], path, depth, models)
    elif isinstance(annotation, type) and annotation not in models:
        for name, member in _old_members(annotation).items():
            yield from _old_hidden(member, f"{path}.{name}", 2, models | {annotation})
    else:
        mapping = isinstance(origin, type) and issubclass(origin, Mapping)
        step = "" if origin in (typing.Union, types.UnionType) else "{}" if mapping else "[]"
        for arg in args[1:] if mapping else args:  # (a union's arm is no level)
            yield from _old_hidden(arg, path + step, depth + (step != ""), models)


def _read(annotation: Any, first: bool = True) -> Iterable[Any]:
    """The metadata a field's rules read: its own and its type's first-level arguments',
    each through a union's arms."""
    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin is Annotated:
        yield from annotation.__metadata__
        yield from _read(args[0], first)
    elif first or origin in (typing.Union, types.UnionType):
        for arg in args:
            yield from _read(arg, first and origin in (typing.Union, types.UnionType))


# -- generated annotations, with values as pydantic dumps them ------------------------------
_Pair = tuple[Any, st.SearchStrategy[Any]]
_times = st.datetimes(min_value=datetime(1971, 1, 1), max_value=datetime(2200, 1, 1),
                      timezones=st.just(UTC))
_LEAVES: list[_Pair] = [
    (int, st.integers(-10**6, 10**6)), (str, st.text(max_size=4)),
    (Annotated[datetime, ISO], _times), (Annotated[datetime, EPOCH], _times),
    (Annotated[datetime, StoredAs.EPOCH_MILLIS], _times),
    (Encrypted[str], st.text(max_size=4)), (Compressed[str], st.text(max_size=4)),
    (Offloaded[int], st.integers(0, 9)), (Annotated[list[float], Vector(2)],
                                          st.lists(st.floats(0, 1), min_size=2, max_size=2))]
_counter = iter(range(10**9))


def _model(a: _Pair, b: _Pair) -> _Pair:
    model = create_model(f"M{next(_counter)}", x=(a[0], ...), y=(b[0], ...))
    return model, st.fixed_dictionaries({"x": a[1], "y": b[1]})


def _record(a: _Pair, b: _Pair) -> _Pair:
    record = dataclasses.make_dataclass(f"D{next(_counter)}", [("x", a[0]), ("y", b[0])])
    return record, st.fixed_dictionaries({"x": a[1], "y": b[1]})


#: the generics, as values (an annotation made of a drawn one)
_LIST: Any = list
_TUPLE: Any = tuple
_DICT: Any = dict
_ENCRYPTED: Any = Encrypted


def _extend(children: st.SearchStrategy[_Pair]) -> st.SearchStrategy[_Pair]:
    return st.one_of(
        children.map(lambda p: (_LIST[p[0]], st.lists(p[1], max_size=3))),
        children.map(lambda p: (_TUPLE[p[0], ...], st.lists(p[1], max_size=3).map(tuple))),
        children.map(lambda p: (p[0] | None, st.none() | p[1])),
        children.map(lambda p: (p[0] | bytes, p[1])),
        children.map(lambda p: (_DICT[str, p[0]], st.dictionaries(
            st.text(max_size=3), p[1], max_size=3))),
        children.map(lambda p: (_ENCRYPTED[p[0]], p[1])),
        st.tuples(children, children).map(lambda ab: _model(*ab)),
        st.tuples(children, children).map(lambda ab: _record(*ab)))


_ANNOTATED = st.recursive(st.sampled_from(_LEAVES), _extend, max_leaves=6)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=_ANNOTATED, data=st.data())
def test_the_members_encoding_is_the_old_walks_on_random_values(pair: _Pair,
                                                                   data: Any) -> None:
    annotation, values = pair
    old = _old_members_kind(annotation)
    new = StoredMembers.of(_tree(annotation))
    assert (old is None) == (new is None)
    value = data.draw(values)
    if old is not None and new is not None:
        assert new.encode(value) == old(value, encode_value(value))


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=_ANNOTATED)
def test_a_definition_is_refused_where_the_old_walk_found_a_hidden_kind(pair: _Pair) -> None:
    """The same path; of several kinds on one value, the first in the documented order
    (the old walk named the first declared)."""
    holder = create_model("Holder", wallet=(pair[0], ...))
    taken = set(map(_name, filter(_rule_marker, _read(pair[0]))))  # (the whole value's)
    found = [(p, m) for p, m in _old_hidden(pair[0], "wallet", 0, frozenset({holder}))
             if _name(m) not in taken]
    try:
        check_hidden("Holder", _tree(holder))
    except DynaormError as exc:
        assert found, exc
        names = [_name(m) for path, m in found if path == found[0][0]]
        first = min(names, key=("Compressed", "Encrypted", "Offloaded", "Vector").index)
        assert str(exc).startswith(f"Holder.{found[0][0]}: {first} inside a field's value"), exc
    else:
        assert not found


def test_a_model_inside_itself_encodes_as_the_old_walk() -> None:
    when = datetime(2026, 11, 27, 9, 30, 56, 761229, tzinfo=UTC)
    value = Stamp(at=when, children=[Stamp(at=when, children=[Stamp(at=when)])]).model_dump()
    old = _old_members_kind(Stamp)
    new = StoredMembers.of(_tree(Stamp))
    assert old is not None and new is not None
    assert new.encode(value) == old(value, encode_value(value))
    assert new.encode(value)["M"]["children"]["L"][0]["M"]["children"]["L"][0]["M"][
        "at"] == {"S": "2026-11-27T09:30:56.761229Z"}


def test_a_hidden_kind_in_a_model_inside_itself_is_refused_once() -> None:
    class Node_(BaseModel):
        secret: Encrypted[str]
        children: list[Node_] = []

    holder = create_model("Holder", root=(Node_, ...))
    with pytest.raises(DynaormError, match=r"Holder\.root\.secret: Encrypted inside"):
        check_hidden("Holder", _tree(holder))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pair=_ANNOTATED)
def test_the_kinds_a_fields_rules_read_are_the_old_walks(pair: _Pair) -> None:
    """A field's own kinds and its first level's, as the rules read them (0.9 read the
    pydantic field's metadata and its type's arguments'); in the write's order."""
    old = list(_read(pair[0]))
    new = markers(_tree(pair[0]))
    assert sorted(map(repr, filter(_rule_marker, old))) == sorted(
        map(repr, filter(_rule_marker, new)))


def test_a_query_of_several_entities_stores_an_operand_by_the_first_kind_that_takes_it() -> None:
    """The entities' kinds of one field differ: the operand of the field, or of a path
    into it, is stored by the first of their kinds there that takes it."""
    class Log(BaseModel):
        seen: list[Annotated[datetime, ISO]] = []
        last: Line | None = None

    class Note(BaseModel):
        seen: list[str] = []
        last: str = ""

    specs = [types.SimpleNamespace(cls=cls, kinds={
        name: kind for name in cls.model_fields
        if (kind := StoredMembers.of(_field(cls, name)))}) for cls in (Log, Note)]
    kinds = merged_kinds(specs)
    assert isinstance(kinds["seen"], FirstTaking) and isinstance(kinds["last"], FirstTaking)
    when = datetime(2026, 11, 27, 9, 30, tzinfo=UTC)
    for path, value, stored in (("seen[0]", when, {"S": "2026-11-27T09:30:00Z"}),
                                ("seen[0]", "x", {"S": "x"}),
                                ("last.shipped", when, {"N": str(int(when.timestamp()))}),
                                ("last", "y", {"S": "y"})):
        found = kind_at(kinds, path)
        assert found is not None and found.encode(value) == stored, path
