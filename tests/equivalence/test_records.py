"""The record helper (:func:`dynaorm.records.record`) against ``@dataclass``, the plain
path it replaces: every record of dynaorm, and generated classes of every field shape and
option, compared with the dataclass ``@dataclass`` makes of the same class (fields,
``__init__`` signature, which methods exist, ``repr``, equality, hashing, freezing,
``replace``, ``asdict``, slots, pickling); and what it refuses."""

from __future__ import annotations

import abc
import copy
import dataclasses
import importlib
import importlib.util
import inspect
import os
import pickle
import pkgutil
import pprint
import re
import reprlib
import typing
from dataclasses import FrozenInstanceError
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dynaorm
from dynaorm.records import MADE, record


class Value:
    """A distinct, hashable, picklable field value with a stable repr."""

    def __init__(self, n: int) -> None:
        self.n = n

    def __repr__(self) -> str:
        return f"Value({self.n})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Value) and other.n == self.n

    def __hash__(self) -> int:
        return hash(("Value", self.n))


def _load_every_module() -> None:
    for info in pkgutil.walk_packages(dynaorm.__path__, "dynaorm."):
        if info.name.endswith("__main__"):
            continue
        try:
            importlib.import_module(info.name)
        except ImportError:  # an optional dependency not installed here
            continue


def _twin(made: type, namespace: dict[str, Any], options: dict[str, bool]) -> type:
    """The dataclass ``@dataclass`` makes of the class ``made`` was made from."""
    space = {k: v for k, v in namespace.items() if k not in ("__dict__", "__weakref__")}
    space = {k: (dataclasses.field(**{a: getattr(v, a) for a in (
        "default", "default_factory", "init", "repr", "hash", "compare", "metadata")})
                 if isinstance(v, dataclasses.Field) else v) for k, v in space.items()}
    cls = type(made)(made.__name__, made.__bases__, space)
    return dataclasses.dataclass(**options)(cls)


def _field_facts(cls: type) -> list[tuple[Any, ...]]:
    return [(f.name, f.type, f.default, f.default_factory, f.init, f.repr, f.hash, f.compare,
             f.kw_only, dict(f.metadata)) for f in dataclasses.fields(cls)]


def _class_facts(cls: type) -> dict[str, Any]:
    params = cls.__dataclass_params__  # type: ignore[attr-defined]
    return {
        "fields": _field_facts(cls),
        "init": str(inspect.signature(cls.__init__)),  # type: ignore[misc]
        "own": sorted(m for m in ("__init__", "__repr__", "__eq__", "__hash__", "__setattr__",
                                  "__delattr__", "__match_args__", "__getstate__",
                                  "__setstate__", "__replace__") if m in vars(cls)),
        # (what a bound method shows and pickles by: ``<bound method GSI.__eq__ of ...>``)
        "names": {m: (getattr(v, "__name__", None), getattr(v, "__qualname__", None))
                  for m, v in vars(cls).items() if callable(v) and m.startswith("__")
                  and m != "__class_getitem__" and not m.startswith("__record_")},
        # (how tools tell @dataclass's own methods from a class's: pytest diffs field by
        # field when __eq__'s code is "<string>"; rich lays out when __repr__'s code is in
        # dataclasses or reprlib)
        "made eq": getattr(getattr(cls.__eq__, "__code__", None), "co_filename", None)
        == "<string>",
        "made repr": getattr(getattr(cls.__repr__, "__code__", None), "co_filename", None)
        in (dataclasses.__file__, reprlib.__file__),
        "unhashable": cls.__hash__ is None,
        "slots": vars(cls).get("__slots__"),
        "match_args": getattr(cls, "__match_args__", None),
        "doc": cls.__doc__,
        "params": [getattr(params, a) for a in ("init", "repr", "eq", "order", "unsafe_hash",
                                                "frozen")],
        "qualname": cls.__qualname__,
    }


def _outcome(action: Any) -> tuple[str, Any]:
    try:
        return "ok", action()
    except Exception as exc:  # both paths must fail the same way
        return "raised", (type(exc), str(exc))


def _shown(obj: Any) -> tuple[str, Any]:
    """``repr(obj)``, an object's address left out (``object.__repr__``)."""
    return _outcome(lambda: re.sub(r" at 0x[0-9a-f]+", "", repr(obj)))


def _behaviour(cls: type, values: dict[str, Any], other: dict[str, Any]) -> list[Any]:
    """What a caller sees of instances of ``cls`` built from ``values`` (and ``other``)."""
    made = _outcome(lambda: cls(**values))
    if made[0] != "ok":
        return [made]
    a, b = made[1], cls(**values)
    c = _outcome(lambda: cls(**other))
    seen: list[Any] = [_shown(a), _outcome(lambda: a == b), _outcome(lambda: a != b),
                       c[0] == "ok" and _outcome(lambda: a == c[1])]
    seen.append(_outcome(lambda: hash(a) == hash(b)))
    names = [f.name for f in dataclasses.fields(a)]
    if names:
        seen.append(_outcome(lambda: setattr(a, names[0], Value(99))))
        seen.append(_outcome(lambda: delattr(b, names[-1])))
        seen.append(_shown(a))
    # (refused alike; the exception differs on a frozen slots class, where @dataclass's
    # __setattr__ names the class before slots and raises TypeError: a CPython bug)
    seen.append(_outcome(lambda: setattr(cls(**values), "not_a_field", 1))[0])
    seen.append(_shown(_outcome(lambda: dataclasses.replace(cls(**values), **other))))
    seen.append(_outcome(lambda: dataclasses.asdict(cls(**values))))
    seen.append(_outcome(lambda: dataclasses.astuple(cls(**values))))
    seen.append(dataclasses.is_dataclass(a))
    fresh = cls(**values)
    seen += [_shown(_outcome(lambda: copy.copy(fresh))),
             _shown(_outcome(lambda: copy.deepcopy(fresh))),
             _outcome(lambda: copy.deepcopy(fresh) == fresh),
             _shown(_outcome(lambda: cls(*values.values()))),
             _outcome(lambda: cls(**values, not_a_field=1)),
             # (pprint lays out a dataclass field by field when its repr is @dataclass's)
             _outcome(lambda: re.sub(r" at 0x[0-9a-f]+", "", pprint.pformat(fresh, width=8)))]
    return seen


# -- every record of dynaorm -------------------------------------------------------------------
_load_every_module()
RECORDS = [made for made in MADE if made[0].__module__.startswith("dynaorm.")]


def test_dynaorm_makes_its_value_classes_with_the_record_helper() -> None:
    assert len(RECORDS) >= 55
    import sys

    records = {id(m[0]) for m in RECORDS}
    found = [f"{module}.{name}" for module, loaded in list(sys.modules.items())
             if module.startswith("dynaorm.") for name, obj in vars(loaded).items()
             if isinstance(obj, type) and obj.__module__ == module
             and "__dataclass_fields__" in vars(obj) and id(obj) not in records
             and module != "dynaorm.records"]
    assert found == []  # no dataclass of dynaorm's own but through the record helper


@pytest.mark.parametrize("made", RECORDS, ids=[m[0].__qualname__ for m in RECORDS])
def test_each_record_is_the_dataclass_its_class_would_make(
        made: tuple[type, dict[str, Any], dict[str, bool]]) -> None:
    cls, namespace, options = made
    twin = _twin(cls, namespace, options)
    assert _class_facts(cls) == _class_facts(twin)
    init = [f for f in dataclasses.fields(cls) if f.init]
    values = {f.name: Value(i) for i, f in enumerate(init)}
    other = {f.name: Value(100 + i) for i, f in enumerate(init)}
    assert _behaviour(cls, values, other) == _behaviour(twin, values, other)


def test_a_pickled_record_comes_back_equal() -> None:
    pickled = 0
    for cls, _, _ in RECORDS:
        if cls.__qualname__ != cls.__name__:  # (nested: not importable by name)
            continue
        init = [f for f in dataclasses.fields(cls) if f.init]
        made = _outcome(lambda cls=cls, init=init: cls(**{f.name: Value(i) for i, f in
                                                         enumerate(init)}))
        if made[0] != "ok":
            continue
        back = _outcome(lambda made=made: pickle.loads(pickle.dumps(made[1])))
        if back[0] != "ok":  # a field holding something unpicklable (a lock, a function)
            continue
        assert [getattr(back[1], f.name) for f in dataclasses.fields(cls)] == [
            getattr(made[1], f.name) for f in dataclasses.fields(cls)]
        pickled += 1
    assert pickled >= 30


# -- generated classes ---------------------------------------------------------------------------
KINDS = ("required", "default", "factory")
field_specs = st.lists(st.tuples(st.sampled_from(KINDS), st.booleans(), st.booleans(),
                                 st.booleans(), st.sampled_from((None, True, False))),
                       max_size=6)
options_st = st.fixed_dictionaries({"frozen": st.booleans(), "eq": st.booleans(),
                                    "repr": st.booleans(), "slots": st.booleans()})


def _namespace(specs: list[tuple[str, bool, bool, bool, bool | None]], post_init: bool,
               own: str | None) -> dict[str, Any]:
    # required fields first (a default may not come before a required argument)
    specs = sorted(specs, key=lambda s: (s[0] != "required" or not s[1]))
    annotations: dict[str, Any] = {}
    space: dict[str, Any] = {"__annotations__": annotations, "__module__": __name__,
                             "__qualname__": "Generated"}
    for i, (kind, init, show, compare, hashed) in enumerate(specs):
        name = f"f{i}"
        annotations[name] = "Any"
        if kind == "required" and init and show and compare and hashed is None:
            continue
        options: dict[str, Any] = {"init": init, "repr": show, "compare": compare,
                                   "hash": hashed}
        if kind == "default":
            options["default"] = Value(50 + i)
        elif kind == "factory":
            options["default_factory"] = lambda i=i: [Value(70 + i)]
        space[name] = dataclasses.field(**options)
    if post_init:
        def __post_init__(self: Any) -> None:
            object.__setattr__(self, "seen", True) if not hasattr(self, "__slots__") else None
        space["__post_init__"] = __post_init__
    if own == "eq":
        space["__eq__"] = lambda self, other: self is other
    elif own == "hash":
        space["__hash__"] = lambda self: 7
    elif own == "no hash":
        space["__hash__"] = None
    elif own == "eq and hash":
        space["__eq__"] = lambda self, other: self is other
        space["__hash__"] = lambda self: 7
    elif own == "repr":
        space["__repr__"] = lambda self: "mine"
    elif own == "setattr":  # (refused on a frozen class, as @dataclass refuses it)
        space["__setattr__"] = object.__setattr__
    return space


class _Plain:
    """A base that is no dataclass: its class attributes are defaults of fields so named."""

    f0 = Value(40)
    f2 = Value(42)


class _Abstract(abc.ABC):
    """A base whose ``__repr__`` and ``__eq__`` the made methods implement."""

    @abc.abstractmethod
    def __repr__(self) -> str: ...

    @abc.abstractmethod
    def __eq__(self, other: object) -> bool: ...


class _Slotted:
    """A base with slots: a field of the same name has no default from it."""

    __slots__ = ("f1",)


@settings(max_examples=int(os.environ.get("DYNAORM_RECORD_EXAMPLES", "150")), deadline=None)
@given(specs=field_specs, options=options_st, post_init=st.booleans(),
       own=st.sampled_from((None, "eq", "hash", "no hash", "eq and hash", "repr", "setattr")),
       base=st.sampled_from((object, _Plain, _Abstract, _Slotted)), data=st.data())
def test_generated_classes_are_the_same_as_with_dataclass(
        specs: list[tuple[str, bool, bool, bool, bool | None]], options: dict[str, bool],
        post_init: bool, own: str | None, base: type, data: st.DataObject) -> None:
    space = _namespace(specs, post_init, own)  # (both classes share its fields' factories)
    made = _outcome(lambda: record(**options)(type("Generated", (base,), dict(space))))
    plain = _outcome(lambda: dataclasses.dataclass(**options)(type("Generated", (base,), dict(
        space))))
    assert made[0] == plain[0], (made, plain)
    if made[0] != "ok":
        assert made[1][0] is plain[1][0]
        return
    mine, theirs = made[1], plain[1]
    assert _class_facts(mine) == _class_facts(theirs)
    init = [f for f in dataclasses.fields(mine) if f.init]
    given_ = [f for f in init if data.draw(st.booleans())
              or (f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING)]
    values = {f.name: Value(i) for i, f in enumerate(given_)}
    other = {f.name: Value(200 + i) for i, f in enumerate(given_)}
    assert _behaviour(mine, values, other) == _behaviour(theirs, values, other)


def test_a_subclass_of_a_frozen_record_may_set_its_own_attributes() -> None:
    @record(frozen=True, eq=False)
    class Spec:
        a: int
        b: int = 2

    class Built(Spec):
        pass

    built = Built(1)
    built.extra = 3  # type: ignore[attr-defined]  # (a subclass's own attribute: allowed)
    assert built.extra == 3  # type: ignore[attr-defined]
    with pytest.raises(FrozenInstanceError):
        built.a = 5  # type: ignore[misc]
    with pytest.raises(FrozenInstanceError):
        Spec(1).extra = 3  # type: ignore[attr-defined]


@pytest.mark.parametrize("annotation", ["ClassVar[int]", "InitVar[int]", "KW_ONLY"])
def test_what_it_does_not_take_is_refused(annotation: str) -> None:
    with pytest.raises(TypeError, match="not supported"):
        record(type("Odd", (), {"__annotations__": {"x": annotation}}))


def test_keyword_only_fields_and_dataclass_bases_are_refused() -> None:
    with pytest.raises(TypeError, match="kw_only"):
        record(type("Odd", (), {"__annotations__": {"x": "int"},
                                "x": dataclasses.field(kw_only=True)}))

    @dataclasses.dataclass
    class Base:
        a: int

    with pytest.raises(TypeError, match="dataclass base"):
        record(type("Odd", (Base,), {"__annotations__": {"x": "int"}}))


def test_a_frozen_record_that_defines_setattr_is_refused_as_dataclass_refuses_it() -> None:
    def space() -> dict[str, Any]:
        return {"__annotations__": {"x": "int"}, "__setattr__": lambda s, n, v: None}

    with pytest.raises(TypeError) as mine:
        record(frozen=True)(type("Odd", (), space()))
    with pytest.raises(TypeError) as theirs:
        dataclasses.dataclass(frozen=True)(type("Odd", (), space()))
    assert str(mine.value) == str(theirs.value)


# -- counterexamples: classes where a record once differed from the dataclass ----------------------
def _both(body: Any) -> tuple[tuple[str, Any], tuple[str, Any]]:
    """``body(decorator)``'s outcome with ``@record`` and with ``@dataclass``."""
    return _outcome(lambda: body(record)), _outcome(lambda: body(dataclasses.dataclass))


class Hinted:
    """A name the annotations below resolve in this module only."""


def test_init_annotations_resolve_in_the_class_module_as_with_dataclass() -> None:

    def body(deco: Any) -> Any:
        made = deco(type("R", (), {"__module__": __name__, "__annotations__": {"x": "Hinted"}}))
        return made.__init__.__module__, typing.get_type_hints(made.__init__)

    mine, theirs = _both(body)
    assert mine == theirs == ("ok", (__name__, {"x": Hinted, "return": type(None)}))


@pytest.mark.parametrize("made", RECORDS, ids=[m[0].__qualname__ for m in RECORDS])
def test_each_record_init_has_its_module_globals(
        made: tuple[type, dict[str, Any], dict[str, bool]]) -> None:

    cls, namespace, options = made
    twin = _twin(cls, namespace, options)
    seen = [(c.__init__.__module__, _outcome(  # type: ignore[misc]
        lambda c=c: typing.get_type_hints(c.__init__)))  # type: ignore[misc]
        for c in (cls, twin)]
    assert seen[0] == seen[1]


@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"slots": True}])
def test_a_record_that_holds_itself_shows_as_dataclass_shows_it(options: dict[str, bool]) -> None:
    def body(deco: Any) -> str:
        made = deco(**options)(type("Node", (), {"__annotations__": {"nxt": "Any", "items":
                                                                       "list[Any]"}}))
        node = made(None, [])
        node.items.append(node)
        object.__setattr__(node, "nxt", node)
        return repr(node)

    mine, theirs = _both(body)
    assert mine == theirs


def test_defaults_are_read_as_dataclass_reads_them() -> None:
    class Base:
        inherited = 5

    class Descriptor:
        def __get__(self, obj: Any, owner: Any = None) -> Any:
            return 42 if obj is None else obj.__dict__.get("_d", 7)

        def __set__(self, obj: Any, value: Any) -> None:
            obj.__dict__["_d"] = value

    def body(deco: Any) -> Any:
        made = deco(type("R", (Base,), {"__annotations__": {"inherited": "int", "d": "int"},
                                        "d": Descriptor()}))
        return str(inspect.signature(made)), repr(made()), repr(made(1, 2))

    mine, theirs = _both(body)
    assert mine == theirs
    assert theirs[0] == "ok"


@pytest.mark.parametrize("space", [
    {"__annotations__": {"x": "list[int]"}, "x": []},
    {"__annotations__": {"x": "dict[str, int]"}, "x": dataclasses.field(default={})},
    {"__annotations__": {"x": "int"}, "y": dataclasses.field(default=1)},
], ids=["mutable default", "mutable field default", "field without annotation"])
def test_what_dataclass_refuses_a_record_refuses_alike(space: dict[str, Any]) -> None:
    mine, theirs = _both(lambda deco: deco(type("Odd", (), dict(space))))
    assert theirs[0] == "raised"
    assert mine == theirs


def test_methods_made_for_an_abstract_base_count_as_with_dataclass() -> None:
    import abc

    class Shown(abc.ABC):
        @abc.abstractmethod
        def __repr__(self) -> str: ...

    mine, theirs = _both(lambda deco: repr(deco(type("R", (Shown,), {
        "__annotations__": {"x": "int"}}))(1)))
    assert mine == theirs == ("ok", "R(x=1)")


@pytest.mark.parametrize("name", ["self", "_record_key", "_record_names", "_record_repr",
                                  "_record_hash"])
@pytest.mark.parametrize("options", [{}, {"frozen": True, "slots": True}])
def test_any_field_name_dataclass_takes_works(name: str, options: dict[str, bool]) -> None:
    def body(deco: Any) -> Any:
        made = deco(**options)(type("R", (), {"__annotations__": {"a": "int", name: "int"},
                                              name: 0, "__module__": __name__}))
        a, b = made(1), made(1, 2)
        return (repr(a), repr(b), a == made(1), a == b, options and hash(a) == hash(made(1)),
                repr(getattr(made, name, "none")), vars(made).get("__slots__"),
                dataclasses.replace(a, a=3) == made(3), copy.deepcopy(b) == b)

    mine, theirs = _both(body)
    assert mine == theirs
    assert theirs[0] == "ok"


def test_records_made_at_once_in_threads_are_each_kept_with_their_class() -> None:
    import sys
    import threading

    barrier = threading.Barrier(4)
    start = len(MADE)
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # (threads switch often: the race shows in a few classes)

    def make(i: int) -> None:
        barrier.wait()
        for _ in range(50):
            record(slots=True)(type(f"T{i}", (), {"__annotations__": {"x": "int"}, "tag": i}))

    threads = [threading.Thread(target=make, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    try:
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    made = MADE[start:]
    assert len(made) == 200
    assert all(cls.__name__ == f"T{space['tag']}" for cls, space, _ in made)
    assert all("__slots__" in vars(cls) for cls, _, _ in made)


@pytest.mark.parametrize("options", [{}, {"frozen": True}, {"slots": True},
                                     {"frozen": True, "slots": True}])
def test_copy_replace_takes_a_record_where_it_takes_a_dataclass(options: dict[str, bool]) -> None:
    replace = getattr(copy, "replace", None)  # (Python 3.13 and later)

    def body(deco: Any) -> Any:
        made = deco(**options)(type("R", (), {"__annotations__": {"a": "int", "b": "int"},
                                              "b": 2}))
        return replace(made(1), b=3) == made(1, 3) if replace else "__replace__" in vars(made)

    mine, theirs = _both(body)
    assert mine == theirs


def test_slots_over_a_class_that_has_slots_is_refused_alike() -> None:
    mine, theirs = _both(lambda deco: deco(slots=True)(type("Odd", (), {
        "__annotations__": {"x": "int"}, "__slots__": ("x",)})))
    assert theirs[0] == "raised"
    assert mine == theirs


class Vague:
    """A value whose ``==`` answers neither True nor False, and is never equal to itself."""

    def __eq__(self, other: object) -> Any:
        return "vague"

    def __ne__(self, other: object) -> Any:
        return "vague"

    __hash__ = object.__hash__


@pytest.mark.parametrize("options", [{}, {"frozen": True, "slots": True}])
def test_equality_asks_each_field_as_the_running_pythons_dataclass_does(
        options: dict[str, bool]) -> None:
    # (Python 3.12 and earlier compare tuples of the fields, a field's own object equal to
    # itself; 3.13 and later compare field by field, ``a == a`` short-circuited)
    nan, vague = float("nan"), Vague()

    def body(deco: Any) -> Any:
        made = deco(**options)(type("R", (), {"__annotations__": {"a": "Any", "b": "Any"}}))
        x, y = made(nan, vague), made(nan, vague)
        return [x == x, x == y, x != y, made(1, vague) == made(1, vague),
                made(vague, 1) == made(vague, 2), made(nan, 1) == made(float("nan"), 1)]

    mine, theirs = _both(body)
    assert mine == theirs


@pytest.mark.parametrize("sub", [{"frozen": True}, {"frozen": True, "slots": True}])
def test_a_dataclass_subclass_of_a_frozen_slots_record_copies_its_own_fields(
        sub: dict[str, bool]) -> None:
    def body(deco: Any) -> Any:
        base = deco(frozen=True, slots=True)(type("Base", (), {"__annotations__": {"a": "int"}}))
        made = dataclasses.dataclass(**sub)(type("Sub", (base,), {
            "__annotations__": {"x": "int"}, "x": 0}))
        one = made(1, 3)
        return [repr(copy.copy(one)), repr(copy.deepcopy(one)), one.__getstate__()]

    mine, theirs = _both(body)
    assert mine == theirs
    assert theirs[1][0].endswith("Sub(a=1, x=3)")


def test_init_defaults_are_the_objects_dataclass_shows() -> None:
    def body(deco: Any) -> Any:
        made = deco(type("R", (), {"__annotations__": {"a": "int", "b": "list[int]"}, "a": 1,
                                   "b": dataclasses.field(default_factory=list)}))
        return [p.default for p in inspect.signature(made).parameters.values()]

    mine, theirs = _both(body)
    assert mine[0] == theirs[0] == "ok"
    assert [id(d) for d in mine[1]] == [id(d) for d in theirs[1]]


def test_the_api_reference_shows_each_record_with_the_signature_it_has() -> None:
    """Griffe (mkdocstrings, reading the source) knows ``@dataclass`` only: the extension
    ``mkdocs.yml`` loads gives each record the ``__init__`` a dataclass would show there."""
    griffe = pytest.importorskip("griffe")
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    assert "scripts/griffe_records.py" in (root / "mkdocs.yml").read_text()
    extensions = griffe.load_extensions(str(root / "scripts" / "griffe_records.py"))
    package = griffe.load("dynaorm", search_paths=[str(root)], extensions=extensions)
    shown = {}
    for cls, _, _ in RECORDS:
        if "<locals>" in cls.__qualname__:
            continue
        found = package[f"{cls.__module__.removeprefix('dynaorm.')}.{cls.__qualname__}"]
        init = found.members.get("__init__")
        shown[cls.__qualname__] = (
            "dataclass" in found.labels,
            init and [p.name for p in init.parameters][1:])
    assert shown == {cls.__qualname__: (True, list(inspect.signature(cls).parameters))
                     for cls, _, _ in RECORDS if "<locals>" not in cls.__qualname__}


def test_a_bound_method_of_a_record_pickles_as_a_dataclass_one() -> None:
    def body(deco: Any) -> Any:
        made = deco(frozen=True)(type("R", (), {"__annotations__": {"a": "int"}}))
        one = made(1)
        return [repr(pickle.loads(pickle.dumps(m))).split(" of ")[0] for m in (
            one.__repr__, one.__eq__, one.__hash__, one.__init__, one.__setattr__)]

    globals()["R"] = None  # (pickle finds the instance's class by name: made per call)
    try:
        mine, theirs = _outcome(lambda: _pickled(record, body)), _outcome(
            lambda: _pickled(dataclasses.dataclass, body))
    finally:
        del globals()["R"]
    assert mine == theirs
    assert theirs[0] == "ok"


def _pickled(deco: Any, body: Any) -> Any:
    def made(options: Any = None, **kw: Any) -> Any:
        def wrap(cls: type) -> type:
            cls.__module__, cls.__qualname__ = __name__, "R"
            out = deco(**kw)(cls)
            globals()["R"] = out
            return out
        return wrap
    return body(made)


def test_pytest_and_rich_show_a_record_as_a_dataclass() -> None:
    rich_pretty = pytest.importorskip("rich.pretty")
    guards = [importlib.import_module(m) for m in ("_pytest.assertion.util",
                                                  "_pytest.assertion._guards")
              if importlib.util.find_spec(m)]
    has_default_eq = next(g.has_default_eq for g in guards if hasattr(g, "has_default_eq"))

    def body(deco: Any) -> Any:
        made = deco(frozen=True)(type("R", (), {"__annotations__": {"a": "int", "b": "Any"}}))
        return (has_default_eq(made(1, 2)),
                rich_pretty.pretty_repr(made(1, [2] * 30), max_width=20))

    mine, theirs = _both(body)
    assert mine == theirs
    assert theirs[1][0] is True


Shared = ClassVar  # (a ClassVar under another name: @dataclass still finds it)


@pytest.mark.parametrize("annotation", ["Shared[int]", "Shared", "typing.ClassVar[int]",
                                        "dataclasses.InitVar[int]"])
def test_a_class_variable_under_another_name_is_no_field(annotation: str) -> None:
    mine, theirs = _both(lambda deco: [f.name for f in dataclasses.fields(deco(type("R", (), {
        "__module__": __name__, "__annotations__": {"a": "int", "b": annotation}, "b": 0})))])
    assert theirs[0] == "ok"
    assert mine == theirs or (mine[0] == "raised" and "not supported" in mine[1][1])


def test_a_records_init_shows_its_source_in_tracebacks_and_inspect() -> None:
    """The compiled ``__init__``'s source is registered with linecache (DESIGN: generated
    code registers its source): a traceback through it quotes its line, and
    ``inspect.getsource`` reads it."""
    import traceback

    @record(frozen=True)
    class Traced:
        n: int

        def __post_init__(self) -> None:
            raise ValueError("refused")

    with pytest.raises(ValueError) as caught:
        Traced(1)
    text = "".join(traceback.format_exception(caught.value))
    assert "Traced.__init__>" in text and "self.__post_init__()" in text
    assert "__setter(self, 'n', n)" in inspect.getsource(Traced.__init__)
