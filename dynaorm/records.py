"""One record helper: :func:`record` makes dynaorm's value classes (protocol steps, specs,
plans, results).

A record is a standard-library dataclass in every way a caller can see:
``dataclasses.fields``, ``replace``, ``asdict`` and ``is_dataclass`` work on it, its
``__init__`` takes the same arguments, and its ``repr``, equality, hashing, freezing,
``__slots__``, ``__match_args__`` and pickling behave as ``@dataclass`` with the same
options makes them (``tests/equivalence/test_records.py`` compares every record of
dynaorm with the dataclass its class would make).

Why not ``@dataclass`` itself: making a class costs ``@dataclass`` 0.25-0.3 ms (on Python
3.11 to 3.13: each method is compiled from source apart, six of them for a frozen class),
and ``import dynaorm`` makes about 40 records, a tenth of a cold start. :func:`record`
compiles only ``__init__`` (the method whose speed matters at run time) and shares the code
of one ``__repr__``, ``__eq__`` and ``__hash__`` among all records (each record's own function
object, named as ``@dataclass`` names it, reading its class's field names): about 0.1 ms a
class, against 0.29-0.32 ms. The compiled ``__init__``'s source is registered with
:mod:`linecache` (tracebacks and :func:`inspect.getsource` show it). (The API reference's
Griffe knows ``@dataclass`` only: ``scripts/griffe_records.py`` documents a record as
one.)

What it does not take (a :class:`TypeError`, never a silent difference): ``ClassVar``,
``InitVar`` or ``KW_ONLY`` annotations, keyword-only fields, ``order``,
``unsafe_hash``, and dataclass bases.
"""

from __future__ import annotations

import abc
import dataclasses
import inspect
import linecache
import reprlib
import sys
import types
from collections.abc import Callable
from dataclasses import MISSING, Field, FrozenInstanceError
from operator import attrgetter
from typing import Any, ClassVar, TypeVar, dataclass_transform, overload

__all__ = ["MADE", "record"]

C = TypeVar("C", bound=type)


@dataclasses.dataclass
class _Template:
    value: Any


#: a field as ``@dataclass`` makes it, copied for each record field: its public attributes
#: are set from the class; the marker ``dataclasses.fields`` filters on comes with it
_FIELD: Field[Any] = dataclasses.fields(_Template)[0]
#: the options object ``@dataclass`` leaves on a class, copied the same way
_PARAMS: Any = _Template.__dataclass_params__  # type: ignore[attr-defined]


def _clone(template: Any) -> Any:
    """A copy of ``template`` (a slotted ``Field`` or options object), slot by slot:
    ``copy.copy``'s reduce-and-rebuild costs ~5 us, and a record takes one per field."""
    made = object.__new__(type(template))
    for name in type(template).__slots__:
        object.__setattr__(made, name, getattr(template, name))
    return made


_FIELD_ATTRS = ("default", "default_factory", "init", "repr", "hash", "compare", "metadata",
                "kw_only")


class _Factory:
    """The default an ``__init__`` parameter with a ``default_factory`` shows."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<factory>"


#: (``@dataclass``'s own marker where the running Python has it: a caller testing an
#: ``inspect.signature`` default for it finds it on a record too)
_HAS_FACTORY: Any = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None) or _Factory()

#: every record made: (the record, its class's namespace as written, its options), for the
#: test that compares each with the dataclass ``@dataclass`` would make of the same class
MADE: list[tuple[type, dict[str, Any], dict[str, bool]]] = []


# -- the methods every record shares ----------------------------------------------------------
# (what they read of a record's class is kept under dunder names, which no field takes: a
# field may be named anything ``@dataclass`` takes, ``_record_key`` too)
def _repr(self: Any) -> str:
    names = type(self).__record_repr__
    inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in names)
    return f"{self.__class__.__qualname__}({inner})"


def _eq(self: Any, other: Any) -> Any:
    if other.__class__ is self.__class__:
        key = type(self).__record_key__
        return key(self) == key(other)
    return NotImplemented


if sys.version_info >= (3, 13):  # (its @dataclass compares field by field, ``a == a`` first)
    def _eq(self: Any, other: Any) -> Any:
        if self is other:
            return True
        if other.__class__ is self.__class__:
            same: Any = True  # (what ``x == y and ...`` gives: the first false answer)
            for name in type(self).__record_compared__:
                same = getattr(self, name) == getattr(other, name)
                if not same:
                    return same
            return same
        return NotImplemented

#: ``copy.replace``'s hook, which ``@dataclass`` sets from Python 3.13 on
_REPLACE = getattr(dataclasses, "_replace", None)


def _hash(self: Any) -> int:
    return hash(type(self).__record_hash__(self))


# (the instance's fields, as @dataclass's: a dataclass subclass of a record adds its own)
def _dataclass_getstate(self: Any) -> list[Any]:
    return [getattr(self, f.name) for f in dataclasses.fields(self)]


def _dataclass_setstate(self: Any, state: list[Any]) -> None:
    for f, value in zip(dataclasses.fields(self), state, strict=False):
        object.__setattr__(self, f.name, value)


#: (``@dataclass``'s own where the running Python has them, as it shares them too)
_getstate: Any = getattr(dataclasses, "_dataclass_getstate", _dataclass_getstate)
_setstate: Any = getattr(dataclasses, "_dataclass_setstate", _dataclass_setstate)


# How tools tell @dataclass's own methods from a class's, and lay a dataclass out field by
# field only for its own: pytest's assertion diff wants __eq__'s code from "<string>" (what
# @dataclass compiles); pprint wants a __repr__ whose __wrapped__ was made in __create_fn__,
# rich one whose code is in reprlib (or dataclasses): a record's are named alike (the shared
# code of __eq__ said where it comes from, as dataclasses' would).
_eq.__code__ = _eq.__code__.replace(co_filename="<string>")
_REPR_INNER = types.FunctionType(_repr.__code__, _repr.__globals__, "__repr__")
_REPR_INNER.__qualname__ = "__create_fn__.<locals>.__repr__"


def _shown(cls: type) -> Any:
    """``cls``'s ``__repr__``, as ``@dataclass`` makes it: the shared one under
    :func:`reprlib.recursive_repr` (an object met again in its own repr shows as ``...``)."""
    made: Any = reprlib.recursive_repr()(_REPR_INNER)
    made.__qualname__ = f"{cls.__qualname__}.__repr__"
    made.__wrapped__ = _REPR_INNER  # (as functools.wraps leaves it on @dataclass's)
    return made


def _method(cls: type, shared: Any, name: str) -> Any:
    """``shared`` as ``cls``'s method ``name`` (its code shared, nothing compiled): named as
    ``@dataclass`` names its methods, so a bound method shows and pickles as one of
    ``cls`` (``<bound method GSI.__eq__ of ...>``)."""
    made = types.FunctionType(shared.__code__, shared.__globals__, name, shared.__defaults__,
                              shared.__closure__)
    made.__qualname__ = f"{cls.__qualname__}.{name}"
    return made


def _getter(names: list[str]) -> Callable[[Any], tuple[Any, ...]]:
    """The tuple of ``names``' values of an object (what ``@dataclass`` compares)."""
    if not names:
        return lambda obj: ()
    if len(names) == 1:
        one = attrgetter(names[0])
        return lambda obj: (one(obj),)
    return attrgetter(*names)


def _frozen(cls: type, names: frozenset[str]) -> tuple[Callable[..., None], Callable[..., None]]:
    """``@dataclass(frozen=True)``'s ``__setattr__`` and ``__delattr__`` for ``cls``."""
    def __setattr__(self: Any, name: str, value: Any) -> None:  # (named as @dataclass's)
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot assign to field {name!r}")
        super(cls, self).__setattr__(name, value)  # type: ignore[arg-type]

    def __delattr__(self: Any, name: str) -> None:
        if type(self) is cls or name in names:
            raise FrozenInstanceError(f"cannot delete field {name!r}")
        super(cls, self).__delattr__(name)  # type: ignore[arg-type]

    __setattr__.__qualname__ = f"{cls.__qualname__}.__setattr__"
    __delattr__.__qualname__ = f"{cls.__qualname__}.__delattr__"
    return __setattr__, __delattr__


# -- making a record ---------------------------------------------------------------------------
def _marked(annotation: str, module: Any) -> bool:
    """Whether the written annotation names ``ClassVar``, ``InitVar`` or ``KW_ONLY`` under
    another name of the class's module (``CV[int]``: ``@dataclass`` looks it up there)."""
    head = annotation.split("[", 1)[0].strip().split(".")
    found: Any = vars(module).get(head[0]) if module else None
    for part in head[1:]:
        found = getattr(found, part, None)
    return any(found is mark for mark in (ClassVar, dataclasses.InitVar, dataclasses.KW_ONLY))


def _fields(cls: type) -> dict[str, Field[Any]]:
    """The class's fields, from its own annotations (as ``@dataclass`` reads them)."""
    for base in cls.__mro__[1:]:
        if "__dataclass_fields__" in base.__dict__:
            raise TypeError(f"record {cls.__qualname__}: a dataclass base is not supported")
    fields: dict[str, Field[Any]] = {}
    annotations = inspect.get_annotations(cls)
    module = sys.modules.get(cls.__module__)
    for name, annotation in annotations.items():
        text = annotation if isinstance(annotation, str) else repr(annotation)
        if any(mark in text for mark in ("ClassVar", "InitVar", "KW_ONLY")) or (
                isinstance(annotation, str) and _marked(annotation, module)):
            raise TypeError(f"record {cls.__qualname__}.{name}: {text} is not supported")
        # (read as @dataclass reads it: a base's class attribute, or what a descriptor
        # gives the class, is the default too; a slot is none)
        given = getattr(cls, name, MISSING)
        if isinstance(given, types.MemberDescriptorType):
            given = MISSING
        made = _clone(_FIELD)
        made.name = name
        made.type = annotation
        if isinstance(given, Field):
            for attr in _FIELD_ATTRS:
                setattr(made, attr, getattr(given, attr))
            if made.kw_only is True:
                raise TypeError(f"record {cls.__qualname__}.{name}: kw_only is not supported")
            made.kw_only = False
        else:
            made.default = given
        if made.default is not MISSING and made.default_factory is not MISSING:
            raise ValueError("cannot specify both default and default_factory")
        if made.default.__class__.__hash__ is None:
            raise ValueError(f"mutable default {type(made.default)} for field {name} is not "
                             "allowed: use default_factory")
        fields[name] = made
    for name, value in cls.__dict__.items():
        if isinstance(value, Field) and name not in annotations:
            raise TypeError(f"{name!r} is a field but has no type annotation")
    return fields


def _init(cls: type, fields: dict[str, Field[Any]], frozen: bool, slots: bool
          ) -> Callable[..., None]:
    """``__init__`` as ``@dataclass`` writes it (one compilation): a function of the class's
    module (its globals: ``typing.get_type_hints`` resolves its annotations there)."""
    scope: dict[str, Any] = {"__setter": object.__setattr__, "__FACTORY": _HAS_FACTORY}
    me = "__dataclass_self__" if "self" in fields else "self"
    params: list[str] = []
    body: list[str] = []
    seen_default = False
    for name, f in fields.items():
        value: str | None = name
        if f.default_factory is not MISSING:
            scope[f"__factory_{name}"] = f.default_factory
            value = (f"__factory_{name}() if {name} is __FACTORY else {name}" if f.init
                     else f"__factory_{name}()")
            default = "__FACTORY"
        elif f.default is not MISSING:
            scope[f"__default_{name}"] = f.default
            default = f"__default_{name}"
            if not f.init:
                value = default if slots else None
        else:
            default = ""
            if not f.init:
                value = None
        if f.init:
            if default:
                seen_default = True
                params.append(f"{name}={default}")
            elif seen_default:
                raise TypeError(f"non-default argument {name!r} follows default argument")
            else:
                params.append(name)
        if value is not None:
            body.append(f"  __setter({me}, {name!r}, {value})" if frozen
                        else f"  {me}.{name} = {value}")
    if hasattr(cls, "__post_init__"):
        body.append(f"  {me}.__post_init__()")
    source = "def __create_fn__({}):\n def __init__({}{}):\n{}\n return __init__\n".format(
        ", ".join(scope), me, "".join(f", {p}" for p in params),
        "\n".join(body) or "  pass")
    module = sys.modules.get(cls.__module__)
    made: dict[str, Any] = {}
    # (made from field names only; its source registered with linecache under a name of
    # its own, so tracebacks and inspect show the __init__ that runs)
    filename = f"<dynaorm.records {cls.__module__}.{cls.__qualname__}.__init__>"
    linecache.cache[filename] = (len(source), None, source.splitlines(True), filename)
    exec(compile(source, filename, "exec"), module.__dict__ if module else {}, made)
    init: Callable[..., None] = made["__create_fn__"](**scope)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__annotations__ = {**{n: f.type for n, f in fields.items() if f.init},
                            "return": None}
    return init


def _slotted(cls: type, names: tuple[str, ...]) -> type:
    """``cls`` made again with ``__slots__`` (as ``@dataclass(slots=True)`` does)."""
    if "__slots__" in cls.__dict__:
        raise TypeError(f"{cls.__name__} already specifies __slots__")
    inherited: set[str] = set()
    for base in cls.__mro__[1:-1]:
        slots = base.__dict__.get("__slots__", ())
        inherited.update((slots,) if isinstance(slots, str) else slots)
    namespace = dict(cls.__dict__)
    namespace["__slots__"] = tuple(n for n in names if n not in inherited)
    for name in names:
        namespace.pop(name, None)
    namespace.pop("__dict__", None)
    namespace.pop("__weakref__", None)
    made = type(cls)(cls.__name__, cls.__bases__, namespace)
    made.__qualname__ = cls.__qualname__
    return made


def _set(cls: type, name: str, value: Any) -> None:
    """Set ``name`` on ``cls`` unless the class defines it itself (``@dataclass``'s rule)."""
    if name not in cls.__dict__:
        setattr(cls, name, value)


def _prepare(cls: type, fields: dict[str, Field[Any]], frozen: bool) -> None:
    """Refuse what ``@dataclass`` refuses; leave the class attributes as it leaves them
    (a field's default, none for a field without one)."""
    if frozen:
        for attr in ("__setattr__", "__delattr__"):
            if attr in cls.__dict__:
                raise TypeError(f"Cannot overwrite attribute {attr} in class {cls.__name__}")
    for name, f in fields.items():
        if isinstance(getattr(cls, name, None), Field):
            if f.default is MISSING:
                delattr(cls, name)
            else:
                setattr(cls, name, f.default)


def _compare(made: Any, fields: dict[str, Field[Any]], frozen: bool) -> None:
    """``__eq__`` and ``__hash__`` by ``@dataclass``'s rules (a class's own kept; an
    unfrozen record with ``__eq__`` is unhashable)."""
    own_hash = made.__dict__.get("__hash__", MISSING)
    explicit_hash = not (own_hash is MISSING or (own_hash is None and "__eq__" in made.__dict__))
    compared = [n for n, f in fields.items() if f.compare]
    made.__record_key__ = staticmethod(_getter(compared))
    made.__record_compared__ = tuple(compared)
    _set(made, "__eq__", _method(made, _eq, "__eq__"))
    if explicit_hash:
        return
    if frozen:
        made.__record_hash__ = staticmethod(_getter(
            [n for n, f in fields.items() if (f.compare if f.hash is None else f.hash)]))
        made.__hash__ = _method(made, _hash, "__hash__")
    else:
        made.__hash__ = None


def _document(made: Any) -> None:
    """A class without a docstring gets ``@dataclass``'s: its name and signature."""
    if not made.__doc__:
        try:
            text = str(inspect.signature(made)).replace(" -> None", "")
        except (TypeError, ValueError):  # pragma: no cover - as @dataclass does
            text = ""
        made.__doc__ = made.__name__ + text


def _make(cls: C, frozen: bool, eq: bool, repr: bool, slots: bool) -> C:
    """The record of ``cls``, in ``@dataclass``'s order: fields, class attributes,
    methods (a method the class defines itself is kept), the docstring, then slots."""
    written = dict(cls.__dict__)
    fields = _fields(cls)
    names = tuple(fields)
    _prepare(cls, fields, frozen)
    made: Any = cls
    made.__dataclass_fields__ = fields
    params = _clone(_PARAMS)
    params.init, params.repr, params.eq, params.frozen = True, repr, eq, frozen
    if hasattr(params, "slots"):  # (Python 3.12 and later record it)
        params.slots = slots
    made.__dataclass_params__ = params
    _set(made, "__init__", _init(cls, fields, frozen, slots))
    if _REPLACE is not None:
        _set(made, "__replace__", _REPLACE)
    if repr:
        made.__record_repr__ = tuple(n for n, f in fields.items() if f.repr)
        _set(made, "__repr__", _shown(made))
    if eq:
        _compare(made, fields, frozen)
    _document(made)
    _set(made, "__match_args__", tuple(n for n, f in fields.items() if f.init))
    if slots:
        made = _slotted(made, names)
        if frozen:
            _set(made, "__getstate__", _getstate)
            _set(made, "__setstate__", _setstate)
    if frozen:
        made.__setattr__, made.__delattr__ = _frozen(made, frozenset(names))
    abc.update_abstractmethods(made)  # (a method made here may be one a base left abstract)
    # (one append, the record made: records made at once in threads each keep their class)
    MADE.append((made, written, {"frozen": frozen, "eq": eq, "repr": repr, "slots": slots}))
    return made  # type: ignore[no-any-return]


@overload
def record(cls: C, /) -> C: ...


@overload
def record(*, frozen: bool = False, eq: bool = True, repr: bool = True,
           slots: bool = False) -> Callable[[C], C]: ...


@dataclass_transform(field_specifiers=(dataclasses.field, Field))
def record(cls: C | None = None, /, *, frozen: bool = False, eq: bool = True,
           repr: bool = True, slots: bool = False) -> C | Callable[[C], C]:
    """``@dataclass`` for dynaorm's value classes, with the options dynaorm uses
    (``frozen``, ``eq``, ``repr``, ``slots``; fields may be ``dataclasses.field(...)``):
    the same class ``@dataclass`` makes, made about three times faster (see the module)."""
    if cls is None:
        return lambda c: _make(c, frozen, eq, repr, slots)
    return _make(cls, frozen, eq, repr, slots)
