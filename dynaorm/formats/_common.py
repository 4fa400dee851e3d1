"""What the format modules share: a parsed file's values with their places (:class:`At`)
and the checks of a name, a key template or a function a file gives, and the notes an
export writes for what a format has no place for."""

from __future__ import annotations

import ast
import builtins
import importlib
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from dynaorm.errors import DynaormError, ModelFileError
from dynaorm.schema.templates import SHARD_FIELD, KeyTemplate

RANGES: Final = ("begins_with", "between", ">", "<", ">=", "<=")


def left_out(model: Mapping[str, Any], fmt: str, multi: bool = False
             ) -> tuple[list[dict[str, Any]], list[str]]:
    """The table's GSIs a format can hold (one attribute per key; ``multi``: any number),
    and notes for the rest."""
    kept, notes = [], []
    for index in model["table"]["indexes"]:
        if index["kind"] == "gsi" and (multi or (len(index["pk"]) == 1
                                                 and len(index["sk"]) <= 1)):
            kept.append(index)
        else:
            what = ("a vector index" if index["kind"] == "vector" else "an LSI"
                    if index["kind"] == "lsi" else "a multi-attribute index")
            notes.append(f"{fmt}: left out {what}, {index['name']!r}: the format has no "
                         "place for it")
    return kept, notes



def vector_fields(e: Mapping[str, Any], fmt: str) -> list[str]:
    """Notes for an entity's vector fields, which a format holds as lists of numbers."""
    return [f"{fmt}: left out that {e['name']}.{f['name']} is a Vector({f['vector']}): a "
            "list of numbers there" for f in e["fields"] if f.get("vector") is not None]



# -- reading -------------------------------------------------------------------------------
class At:
    """A value of a parsed file and its place in it (a JSON path)."""

    def __init__(self, value: Any, place: str = "$"):
        self.value, self.place = value, place

    def fail(self, message: str) -> ModelFileError:
        return ModelFileError(message, place=self.place)

    def of(self, kind: type[Any] | tuple[type[Any], ...], what: str) -> Any:
        """The value, refused unless it is of ``kind``."""
        if not isinstance(self.value, kind) or (isinstance(self.value, bool) and (
                bool not in (kind if isinstance(kind, tuple) else (kind,)))):
            raise self.fail(f"expected {what}, got {json.dumps(self.value)[:60]}")
        return self.value

    def get(self, name: str, kind: type[Any] | tuple[type[Any], ...] = object,
            what: str = "a value", *, default: Any = ..., choices: tuple[Any, ...] = ()
            ) -> At:
        """Member ``name`` of this object (``default``: what an absent one is)."""
        members = self.of(dict, "an object")
        place = f"{self.place}.{name}"
        if name not in members and default is ...:
            raise self.fail(f"missing {name!r} ({what})")
        if name not in members or (members[name] is None and default is not ...):
            return At(default, place)  # (null: as absent)
        found = At(members[name], place)
        found.of(kind, what)
        if choices and found.value not in choices:
            raise found.fail(f"expected one of {', '.join(map(str, choices))}; got "
                             f"{json.dumps(found.value)[:60]}")
        return found

    def items(self, what: str = "a list") -> Iterator[At]:
        for i, value in enumerate(self.of(list, what)):
            yield At(value, f"{self.place}[{i}]")

    def members(self) -> Iterator[tuple[str, At]]:
        for name, value in self.of(dict, "an object").items():
            yield name, At(value, f"{self.place}.{name}")


def name_of(at: At, what: str) -> str:
    """A name that must be a Python identifier (a class or a field)."""
    text = at.of(str, what)
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", text):
        raise at.fail(f"{what} must be a Python identifier, got {text!r}")
    return str(text)


def template(at: At, what: str) -> str:
    text = at.of(str, what)
    try:
        KeyTemplate.parse(text, owner=at.place)
    except DynaormError as exc:  # (its message starts with the place: said once)
        raise at.fail(str(exc).removeprefix(f"{at.place}: ")) from None
    return str(text)


def attributes(at: At, least: int = 0, most: int = 4) -> list[str]:
    """``least`` to ``most`` attribute names (an index's keys): a list, or one name."""
    names = [at.value] if isinstance(at.value, str) else [a.of(str, "an attribute name")
                                                          for a in at.items()]
    if not least <= len(names) <= most:
        raise at.fail(f"expected {least} to {most} attribute names, got {len(names)}")
    return names


def maybe_template(at: At) -> str | None:
    return None if at.value is None else template(at, "a key template")



#: a function a model names: ``module:qualname`` or a builtin's ``qualname``
NAMED: Final = re.compile(r"([A-Za-z_]\w*(\.[A-Za-z_]\w*)*:)?[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
_OPERATORS: Final = ("methodcaller", "attrgetter", "itemgetter")
#: the standard library modules a file's functions may come from: functions of values
#: (ids, times, text, numbers). Any other module of the standard library (``os``,
#: ``subprocess``, ``builtins``, ``importlib``, ``pickle``, ``antigravity``...) is refused:
#: its functions reach the machine, not a value
PURE_MODULES: Final = frozenset({
    "base64", "binascii", "calendar", "colorsys", "datetime", "decimal", "fractions",
    "hashlib", "html", "ipaddress", "json", "math", "operator", "random", "re", "secrets",
    "statistics", "string", "textwrap", "time", "unicodedata", "urllib.parse", "uuid",
    "zlib", "zoneinfo"})
#: the builtins a file's functions may be (a type's methods too: ``str.lower``)
PURE_BUILTINS: Final = frozenset({
    "abs", "ascii", "bin", "bool", "bytes", "chr", "complex", "dict", "float", "format",
    "frozenset", "hash", "hex", "int", "len", "list", "max", "min", "oct", "ord", "repr",
    "round", "set", "sorted", "str", "sum", "tuple"})


def named(text: str) -> bool:
    """Whether a function a model names is a name to import, or a call of ``operator``'s
    ``methodcaller``, ``attrgetter`` or ``itemgetter`` with literal arguments
    (``operator:methodcaller('lower')``): anything else is never written as code."""
    if NAMED.fullmatch(text):
        return True
    return _operator_call(text) is not None


def _operator_call(text: str) -> ast.Call | None:
    module, _, call = text.partition(":")
    try:
        node = ast.parse(call, mode="eval").body
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    ok = module == "operator" and isinstance(node, ast.Call) and isinstance(
        node.func, ast.Name) and node.func.id in _OPERATORS and all(
        isinstance(a, ast.Constant) for a in [*node.args, *(k.value for k in node.keywords)]
        ) and all(k.arg is not None for k in node.keywords)
    return node if ok and isinstance(node, ast.Call) else None


def refused(text: str) -> str | None:
    """Why a function a file names is refused, or ``None``: only what dynaorm's own model
    can name is taken (``<lambda>``; ``operator``'s getters and ``methodcaller`` of
    literal, public names; a builtin of :data:`PURE_BUILTINS` or a public method of one;
    ``module:qualname`` of :data:`PURE_MODULES`, found there, or of a module outside the
    standard library, your application's, never imported here) and no part of a name is
    a dunder (``__globals__``, ``__builtins__``). Nothing is run to decide but imports of
    :data:`PURE_MODULES`."""
    if text == "<lambda>":
        return None
    if (call := _operator_call(text)) is not None:
        return _operator_refused(call)
    if not NAMED.fullmatch(text):
        return "expected a function as module:name"
    module, _, qualname = text.rpartition(":")
    if any(part.startswith("__") for part in re.split(r"[.:]", text)):
        return "a dunder name is no function of a model"
    if not module or module == "builtins":
        return _builtin_refused(qualname)
    if module.partition(".")[0] not in sys.stdlib_module_names:
        return None  # (your application's or a package's: written as named, not imported)
    return _stdlib_refused(module, qualname)


def _operator_refused(call: ast.Call) -> str | None:
    """Why an ``operator`` getter or ``methodcaller`` is refused, or ``None``: the
    names it is given must be literal and public."""
    assert isinstance(call.func, ast.Name)  # (what _operator_call returns)
    names = [a.value for a in call.args[:{"methodcaller": 1, "itemgetter": 0}.get(
        call.func.id)] if isinstance(a, ast.Constant)]
    if all(isinstance(n, str) and not any(p.startswith("_") for p in n.split("."))
           for n in names):
        return None
    return "operator's getters and methodcaller take public names only"


def _builtin_refused(qualname: str) -> str | None:
    """Why a builtin ``qualname`` is refused, or ``None``: one of
    :data:`PURE_BUILTINS` or a public method of one."""
    head, _, method = qualname.partition(".")
    if head not in PURE_BUILTINS or "." in method or method.startswith("_") or (
            method and not hasattr(getattr(builtins, head), method)):
        return f"{qualname!r} is not a builtin dynaorm takes (a type or function of values)"
    return None


def _stdlib_refused(module: str, qualname: str) -> str | None:
    """Why ``module:qualname`` of the standard library is refused, or ``None``: the
    module is one of :data:`PURE_MODULES` and has that function."""
    if module not in PURE_MODULES:
        return (f"module {module!r} of the standard library reaches beyond values (not "
                "one of the modules of values dynaorm takes functions from)")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return None if callable(found) else f"{module} has no function {qualname!r}"


def function(at: At) -> str:
    """A function a file names (see :func:`refused`), or ``<lambda>`` (one that cannot
    be named: code gets a stub that raises until written)."""
    text = at.of(str, "a function's name")
    why = refused(text)
    if why is not None:
        raise at.fail(f"{why}, got {text[:60]!r}")
    return str(text).removeprefix("builtins:")  # (a builtin's: the model names it so)


def maybe(at: At, read: Callable[[At], Any]) -> Any:
    return None if at.value is None else read(at)



def unknown_shards(templates: Mapping[str, tuple[str | None, ...]]) -> dict[str, Any]:
    """The shards of the targets whose templates use ``{shard}``, in a format that keeps
    no shard count: one shard each, marked for the code to say so."""
    return {target: {"count": 1, "first": 0, "by": None, "unknown": True}
            for target, pair in templates.items()
            if any(SHARD_FIELD in KeyTemplate.parse(t).fields for t in pair if t)}

