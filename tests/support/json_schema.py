"""A JSON Schema validator for the keywords the model's schema (``docs/guide/model.md``)
uses: ``type``, ``const``, ``enum``, ``required``, ``properties``,
``additionalProperties``, ``items``, ``anyOf``, ``allOf`` and ``$ref`` into ``$defs``."""

from __future__ import annotations

from typing import Any

__all__ = ["problems"]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,), "array": (list,), "string": (str,), "integer": (int,),
    "number": (int, float), "boolean": (bool,), "null": (type(None),)}


def _is(value: Any, kind: str) -> bool:
    if kind in ("integer", "number") and isinstance(value, bool):
        return False
    return isinstance(value, _TYPES[kind])


def problems(value: Any, schema: dict[str, Any], root: dict[str, Any] | None = None,
             at: str = "$") -> list[str]:
    """Where ``value`` does not fit ``schema`` (empty: it fits)."""
    root = schema if root is None else root
    if "$ref" in schema:
        name = schema["$ref"].removeprefix("#/$defs/")
        return problems(value, root["$defs"][name], root, at)
    out: list[str] = []
    kinds = schema.get("type")
    if kinds is not None and not any(_is(value, k) for k in (
            [kinds] if isinstance(kinds, str) else kinds)):
        return [f"{at}: {value!r} is not {kinds}"]
    if "const" in schema and value != schema["const"]:
        out.append(f"{at}: {value!r} is not {schema['const']!r}")
    if "enum" in schema and value not in schema["enum"]:
        out.append(f"{at}: {value!r} is not one of {schema['enum']}")
    for sub in schema.get("allOf", ()):
        out += problems(value, sub, root, at)
    if "anyOf" in schema and all(problems(value, s, root, at) for s in schema["anyOf"]):
        out.append(f"{at}: {value!r} fits none of anyOf")
    if isinstance(value, dict):
        out += [f"{at}: missing {k!r}" for k in schema.get("required", ()) if k not in value]
        known = schema.get("properties", {})
        extra = schema.get("additionalProperties", True)
        for key, member in value.items():
            if key in known:
                out += problems(member, known[key], root, f"{at}.{key}")
            elif extra is False and not _allowed_elsewhere(key, schema, root):
                out.append(f"{at}: unexpected {key!r}")
            elif isinstance(extra, dict):
                out += problems(member, extra, root, f"{at}.{key}")
    if isinstance(value, list) and "items" in schema:
        for i, member in enumerate(value):
            out += problems(member, schema["items"], root, f"{at}[{i}]")
    return out


def _allowed_elsewhere(key: str, schema: dict[str, Any], root: dict[str, Any]) -> bool:
    """Whether an ``allOf`` member of ``schema`` names ``key``."""
    for sub in schema.get("allOf", ()):
        found = root["$defs"][sub["$ref"].removeprefix("#/$defs/")] if "$ref" in sub else sub
        if key in found.get("properties", {}):
            return True
    return False
