"""Paths into an entity's fields (``F("address.city")``, ``F("tags")[0]``): their parts,
the type and stored name they reach, the validator of a value there and its bounds
(``ge``, ``max_length``, ...), and the check of every name a condition uses (a typo is an
error, never an empty result).
"""

import re
import types
import typing
from collections.abc import Iterable, Mapping
from typing import Annotated, Any

from pydantic import TypeAdapter

from dynaorm.caches import cache
from dynaorm.errors import InvalidValueError
from dynaorm.values.expressions import paths


def field_adapter(cls: type[Any], path: str, operand: bool = False) -> TypeAdapter[Any]:
    """A validator of a field's type (or a nested path's: :func:`path_type`), its
    constraints included (cached per class and path, any list index alike); ``operand``:
    without the bounds an update holds its *result* to (:func:`bounds`), for the operand
    of ``add``, ``append``, ``prepend``, ``discard``."""
    key = (cls, path if "[" not in path else re.sub(r"\[\d+\]", "[]", path), operand)
    if key not in _ADAPTERS:
        owner, leaf, ann = path_type(cls, path)
        if owner is not None:
            meta = [m for m in owner.model_fields[leaf].metadata
                    if not (operand and _bounds_of(m))]
        else:
            meta = []
            if operand and typing.get_origin(ann) is Annotated:  # (an element: its bounds
                ann = typing.get_args(ann)[0]  # are held on the result)
        _ADAPTERS[key] = TypeAdapter(Annotated[(ann, *meta)] if meta else ann)
    return _ADAPTERS[key]


def _bounds_of(meta: Any) -> dict[str, Any]:
    return {b: v for b in _BOUND_NAMES if (v := getattr(meta, b, None)) is not None}


def bounds(cls: type[Any], path: str) -> dict[str, Any]:
    """The bounds of a field or nested path (``Field(ge=0, max_length=3)``: ``{"ge": 0,
    ...}``; a map's value or list's element: those its ``Annotated`` type carries)."""
    owner, leaf, ann = path_type(cls, path)
    meta = owner.model_fields[leaf].metadata if owner is not None else (
        typing.get_args(ann)[1:] if typing.get_origin(ann) is Annotated else ())
    flat = [x for m in meta for x in getattr(m, "metadata", [m])]  # (a Field(...): its own)
    return {b: v for m in flat for b, v in _bounds_of(m).items()}


def path_parts(path: str) -> list[str | int]:
    """An attribute path's parts: ``"a.b[0]"``: ``["a", "b", 0]``."""
    return [name or int(index) for name, index in re.findall(r"([^.\[\]]+)|\[(\d+)\]", path)]


def path_type(cls: type[Any], path: str) -> tuple[type[Any] | None, str, Any]:
    """What the attribute ``path`` (``"address.city"``, ``"tags[0]"``) of an object of
    ``cls`` is: (the model declaring it, its name there, its annotation; for a map's value
    or a list's element, ``None``, the part, its annotation). ``InvalidValueError`` for an
    unknown name, an index on what is not a list, a key on what is not a dict."""
    ann = cls
    owner = None
    part: Any = ""
    for part in path_parts(path):
        ann = _unwrapped(ann)
        if ann is Any:
            return None, str(part), Any
        owner, part, ann = _step(cls, path, ann, part)
    return owner, str(part), ann


def _unwrapped(ann: Any) -> Any:
    """``ann`` out of its ``Optional`` or ``Annotated`` (``Any`` for a union of types)."""
    if typing.get_origin(ann) not in (typing.Union, types.UnionType, typing.Annotated):
        return ann
    args = [a for a in typing.get_args(ann) if a is not type(None)]
    return args[0] if len(args) == 1 or typing.get_origin(ann) is typing.Annotated else Any


def _step(cls: type[Any], path: str, ann: Any, part: str | int
          ) -> tuple[type[Any] | None, str | int, Any]:
    """One step of :func:`path_type` down ``ann``: a model's field (the model, the field's
    name, its annotation), a list's index or a map's key (``None``, ``part``, the element's
    or value's annotation); refused otherwise."""
    origin, inner = typing.get_origin(ann) or ann, typing.get_args(ann)
    fields = getattr(ann, "model_fields", None) if isinstance(ann, type) else None
    if fields is not None and isinstance(part, str):  # (a nested model stores its names)
        found = [n for n, i in fields.items() if part in (n, ann is cls and i.alias)]
        if not found:
            alias = [f" (its field {n!r} is stored under its name)" for n, i in fields.items()
                     if part == i.alias]
            raise InvalidValueError(f"{cls.__name__}: {path!r}: {ann.__name__} has no "
                                    f"field {part!r}{''.join(alias[:1])}")
        return ann, found[0], fields[found[0]].annotation
    if isinstance(part, int) and origin in (list, tuple) and inner:
        return None, part, inner[0]
    if isinstance(part, str) and origin in (dict, Mapping) and len(inner) == 2:
        return None, part, inner[1]
    what = "an index" if isinstance(part, int) else "a key"
    raise InvalidValueError(f"{cls.__name__}: {path!r}: {what} on {ann!r}")


def check_names(classes: Iterable[type[Any]], cond: Any) -> None:
    """Refuse a condition or filter naming an attribute path none of the entity
    ``classes`` declares (a typo matches nothing, silently), or a field a rule of theirs
    keeps out of conditions (an encrypted one); the table's key, type and TTL attributes
    may be named too."""
    for path in paths(cond):
        errors = []
        for cls in classes:
            spec = cls.__dynaorm_spec__
            t = spec.table  # (its key, type and TTL attributes may be named)
            try:
                root = path_parts(path)[0]
                if root not in {*t.key_roles, t.ttl, t.type_attribute}:
                    path_type(cls, path)
                    spec.rules.refuse("condition", spec.stored_fields.get(root, root))
                break
            except InvalidValueError as exc:
                errors.append(str(exc))
        else:
            raise InvalidValueError(f"F({path!r}) names nothing it could match: "
                                    + "; ".join(errors))


# -- a field's rules on every write (contract 20) -------------------------------------
#: per (entity class, field[+]): a TypeAdapter takes milliseconds to build
_ADAPTERS: dict[tuple[type[Any], str, bool], TypeAdapter[Any]] = cache("updates.adapters")


#: the constraints an update's result is held to (amends 12: not its operand)
_BOUND_NAMES = ("ge", "gt", "le", "lt", "multiple_of", "min_length", "max_length")
