"""The MCP tools a table's model gives (no I/O, no MCP SDK): one :class:`Tool` per access
pattern of each entity (:func:`dynaorm.schema.model.patterns_of`: declared with
``table.pattern()``, else derived from its keys), each with a JSON Schema of its input
made from the entity's fields, and the write tools of the entities an operator allows.

A tool runs through a session made for its call (scoped when the server is), so every
rule, guard, version and outcome holds as for any caller; its result is the entity's own
JSON (``model_dump(mode="json")``: its serializers; encrypted fields left out, ``bytes`` as
base64 text: :func:`dump`), pages with their opaque cursors, hits with their scores; its
arguments are validated as the entity validates JSON (``bytes`` from base64 text). An
adapter's own rows (``__dynaorm_internal__``) get no tools. Each tool's operation is one
generator of session calls (:func:`_op`), driven by a :class:`~dynaorm.Session` or an
:class:`~dynaorm.AsyncSession` (:meth:`~dynaorm.Session.run`).
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import threading
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, get_args

from pydantic import ValidationError
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import SchemaSerializer, SchemaValidator, core_schema
from pydantic_core.core_schema import ErrorType

from dynaorm import (
    ConcurrentModificationError,
    ConditionFailedError,
    DynaormError,
    Entity,
    F,
    InvalidCursorError,
    ItemDecodeError,
    ScopeError,
    Session,
    Table,
    explain,
)
from dynaorm.schema.model import AccessPattern, patterns_of, spec_of

if TYPE_CHECKING:
    from dynaorm import AsyncSession

#: Largest tool call accepted (its arguments as JSON): a DynamoDB item holds 400 KB.
MAX_ARGUMENT_BYTES = 512 * 1024
#: Most items one page of a query tool returns.
MAX_PAGE = 100
#: Embeds text into a vector for the search tools (``embed=``).
Embed = Callable[[str], Sequence[float]]


class ToolError(DynaormError):
    """A tool call that cannot run as given (unknown tool, arguments not of its schema,
    too large); its message is what the client is told."""


@dataclass(frozen=True)
class Tool:
    """One MCP tool: its name, what it does, its input schema and how it runs."""

    name: str
    description: str
    input_schema: dict[str, Any]
    entity: type[Entity]
    kind: str  # get, find, query, history, search, save, update, delete
    pattern: AccessPattern | None = None
    #: the key (or partition) fields a call names, as the session takes them
    keys: tuple[str, ...] = ()
    writes: bool = False
    extra: Mapping[str, Any] = field(default_factory=dict)


#: pydantic's configuration of bytes in JSON as the tools take and give them
_BASE64_CONFIG: Any = {"ser_json_bytes": "base64", "val_json_bytes": "base64"}


@dataclass(frozen=True)
class _Json:
    """An entity's own JSON (its core schema: its validators, serializers, nested
    models), each ``bytes`` value in it as base64 text: the tools' wire form."""

    serializer: SchemaSerializer
    validator: SchemaValidator
    fields: SchemaValidator  # (of some of its fields, by name: keys, an update's values)
    hidden: set[str]  # (its encrypted fields: never in a result)


_JSON: dict[type[Entity], _Json] = {}
#: bytes in JSON as standard base64 text (RFC 4648, padded; either alphabet is taken)
_STANDARD = core_schema.plain_serializer_function_ser_schema(
    lambda b: base64.b64encode(b).decode("ascii"), when_used="json")
_BUILDING = threading.Lock()


def json_of(entity: type[Entity]) -> _Json:
    """:class:`_Json` of ``entity``. pydantic reuses a complete model's own (prebuilt)
    serializer and validator inside any schema that names it, whose bytes are UTF-8
    text; so its models are marked incomplete while this one is built (once, under a
    lock), and their core schemas say base64."""
    found = _JSON.get(entity)
    if found is not None:
        return found
    classes: list[type[Any]] = []
    schema = _base64_schema(entity.__pydantic_core_schema__, classes)
    defs = schema.get("definitions", []) if schema["type"] == "definitions" else []
    fields = next(_nodes(schema, "model-fields", entity.__name__))["fields"]
    with _BUILDING:
        held = [c for c in dict.fromkeys(classes) if c.__dict__.get("__pydantic_complete__")]
        try:
            for c in held:
                type.__setattr__(c, "__pydantic_complete__", False)
            found = _JSON[entity] = _Json(
                SchemaSerializer(schema, _BASE64_CONFIG),
                SchemaValidator(schema, _BASE64_CONFIG),
                SchemaValidator({"type": "definitions", "definitions": defs, "schema": {
                    "type": "typed-dict", "config": _BASE64_CONFIG, "extra_behavior": "forbid",
                    "fields": {n: {"type": "typed-dict-field", "schema": _given(f["schema"]),
                                   "required": False} for n, f in fields.items()}}},
                    _BASE64_CONFIG), set(spec_of(entity).encrypted))
        finally:
            for c in held:
                type.__setattr__(c, "__pydantic_complete__", True)
    return found


def _base64_schema(node: Any, classes: list[type[Any]]) -> Any:
    """A copy of core schema ``node`` whose configurations say base64 for bytes
    (``classes``: the models and dataclasses it holds)."""
    if isinstance(node, list):
        return [_base64_schema(v, classes) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _base64_schema(v, classes) for k, v in node.items()}
    if node.get("type") == "bytes" and "serialization" not in node:  # (pydantic's is URL-safe)
        out["serialization"] = _STANDARD
    if node.get("type") in ("model", "dataclass"):
        classes.append(node["cls"])
        out["config"] = {**node.get("config", {}), **_BASE64_CONFIG}
    return out


def _given(schema: Any) -> Any:
    """A field's core schema of a value given (its default left out)."""
    return schema["schema"] if schema.get("type") == "default" else schema


def _nodes(node: Any, kind: str, name: str) -> Iterator[Any]:
    """The nodes of core schema ``node`` of type ``kind`` for the model ``name``."""
    if isinstance(node, dict):
        if node.get("type") == kind and node.get("model_name") == name:
            yield node
        node = list(node.values())
    if isinstance(node, list):
        for v in node:
            yield from _nodes(v, kind, name)


def dump(obj: Entity) -> dict[str, Any]:
    """``obj`` as its JSON (``model_dump(mode="json")``: its own serializers), its
    encrypted fields left out, each ``bytes`` value as base64 text (RFC 4648)."""
    found = json_of(type(obj))
    data: dict[str, Any] = found.serializer.to_python(obj, mode="json", exclude=found.hidden)
    return data


def _values(entity: type[Entity], args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` (fields of ``entity`` by name, as JSON) each validated as the entity
    validates its JSON (a ``bytes`` value from base64 text)."""
    if not args:
        return {}
    found: dict[str, Any] = json_of(entity).fields.validate_json(json.dumps(args))
    return found


class _Base64Bytes(GenerateJsonSchema):
    """The JSON Schema of a model whose ``bytes`` travel as base64 text (its bounds are
    of the bytes: the entity checks them once the text is decoded)."""

    def bytes_schema(self, schema: core_schema.BytesSchema) -> JsonSchemaValue:
        return {"type": "string", "contentEncoding": "base64"}


def _field_schemas(entity: type[Entity]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Each field's JSON Schema (from the model) and the schema's shared ``$defs``."""
    schema = entity.model_json_schema(schema_generator=_Base64Bytes)
    props = schema.get("properties", {})
    by_name = {}
    for name, info in entity.model_fields.items():
        found = props.get(info.alias or name) or props.get(name) or {}
        by_name[name] = {k: v for k, v in found.items() if k not in ("default", "title")}
    return by_name, schema.get("$defs", {})


def _object(props: Mapping[str, Any], required: Sequence[str],
            defs: Mapping[str, Any]) -> dict[str, Any]:
    out = {"type": "object", "properties": dict(props),
           "required": list(required), "additionalProperties": False}
    if defs:
        out["$defs"] = dict(defs)
    return out


_IDEMPOTENCY = {"type": "string", "minLength": 1, "maxLength": 200,
                "description": "applies the write at most once for this key"}
_CURSOR = {"type": "string", "maxLength": 65536,
           "description": "the cursor a previous page returned (opaque)"}
_LIMIT = {"type": "integer", "minimum": 1, "maximum": MAX_PAGE}


def _read_tool(p: AccessPattern, fields: Mapping[str, Any], defs: Mapping[str, Any],
               scoped: frozenset[str], embed: Embed | None) -> Tool | None:
    """The tool of a read pattern (``None``: a pattern no tool answers)."""
    entity, spec = p.entity, spec_of(p.entity)
    names = tuple(q if isinstance(q, str) else q[0] for q in p.parameters)
    props = {n: fields.get(n, {"type": "string"}) for n in names}
    required = [n for n in names if n not in scoped]
    what = f"{entity.__name__}"
    if p.operation == "GetItem" and p.name.startswith("find_"):
        return Tool(p.name, f"The {what} holding this unique value, or null.",
                    _object(props, required, defs), entity, "find", p, names)
    if p.operation == "GetItem":
        return Tool(p.name, f"One {what} by its key, or null.",
                    _object(props, required, defs), entity, "get", p, names)
    if p.operation == "Query":
        kind = "history" if p.name.startswith("history_") and not p.index else "query"
        where = f" on index {p.index}" if p.index else ""
        desc = (f"The stored versions of one {what}, oldest first." if kind == "history" else
                f"A page of the {what} items of one partition{where}, in key order.")
        return Tool(p.name, desc + " Pass the returned cursor to read the next page.",
                    _object({**props, "limit": _LIMIT, "cursor": _CURSOR}, required, defs),
                    entity, kind, p, names)
    if p.operation == "SearchVectors":
        index = spec.table.vector_index(p.index or "")
        vector = {"type": "array", "items": {"type": "number"},
                  "minItems": index.dimensions, "maxItems": index.dimensions}
        more = {"vector": vector, "top": {**_LIMIT},
                "filters": {"type": "object", "additionalProperties": True}}
        if embed is not None:
            more["text"] = {"type": "string", "minLength": 1, "maxLength": 8192}
        desc = (f"The {what} items nearest to a vector" + (" or a text" if embed else "")
                + f" in vector index {index.name}, nearest first, with their scores.")
        return Tool(p.name, desc, _object({**props, **more}, required, defs), entity,
                    "search", p, names, extra={"index": index.name})
    return None


def _pinned(entity: type[Entity]) -> str | None:
    """The field a versioned entity's rules keep (its version: the If-Match of its
    update and delete tools, never in what a call sets); ``None`` for another entity,
    whose field of any name is a field like the others."""
    return next((name for name, _ in spec_of(entity).rules.pin(0)), None)


def _write_tools(entity: type[Entity], fields: Mapping[str, Any], defs: Mapping[str, Any],
                 scoped: frozenset[str]) -> list[Tool]:
    """save, update and delete of ``entity`` (an entity the operator allows writes of)."""
    spec = spec_of(entity)
    low = entity.__name__.lower()
    keys = tuple(spec.lookup_fields)
    pinned = _pinned(entity)
    required = [n for n, i in entity.model_fields.items()
                if i.is_required() and n not in scoped and n != pinned]
    item = _object({n: s for n, s in fields.items() if n != pinned}, required, {})
    key_props = {n: fields[n] for n in keys}
    key_required = [n for n in keys if n not in scoped]
    version = {"type": "integer", "minimum": 1,
               "description": "If-Match: the version read; refused if the stored one differs"}
    matched = {"version": version} if pinned else {}
    changes = _object({n: s for n, s in fields.items() if n not in keys and n != pinned},
                      [], {})
    return [
        Tool(f"save_{low}", f"Create a new {entity.__name__} (fails if it exists).",
             _object({"item": item, "idempotency_key": _IDEMPOTENCY}, ["item"], defs),
             entity, "save", None, keys, True),
        Tool(f"update_{low}", f"Change fields of an existing {entity.__name__}"
             + (" (version: If-Match)." if pinned else "."),
             _object({**key_props, "set": changes, **matched,
                      "idempotency_key": _IDEMPOTENCY}, [*key_required, "set"], defs),
             entity, "update", None, keys, True, {"version": pinned}),
        Tool(f"delete_{low}", f"Delete a {entity.__name__}"
             + (" (version: If-Match)." if pinned else "."),
             _object({**key_props, **matched, "idempotency_key": _IDEMPOTENCY},
                     key_required, defs), entity, "delete", None, keys, True,
             {"version": pinned}),
    ]


def tools_of(table: Table, writes: Sequence[str | type[Entity]] = (),
             scope: Sequence[str] = (), embed: Embed | None = None) -> dict[str, Tool]:
    """Every tool of ``table``'s model: reads of each entity, writes of those in
    ``writes`` (class names or classes); with ``scope`` (field names), the entities a
    tenant scope cannot cover are left out and the scope's fields are optional inputs."""
    allowed = {w if isinstance(w, str) else w.__name__ for w in writes}
    unknown = allowed - set(table.entities)
    if unknown:
        raise DynaormError(f"writes= names no entity of table {table.name!r}: "
                           f"{sorted(unknown)} (its entities: {sorted(table.entities)})")
    internal = sorted(n for n in allowed if not _offered(table.entities[n]))
    if internal:
        raise DynaormError(f"writes= names {internal}: rows an adapter keeps for itself "
                           "(__dynaorm_internal__), which get no tools")
    scoped = frozenset(scope)
    # (what a session scoped so refuses, it refuses as it builds a query: no tool offers it)
    probe = Session(table, scope=dict.fromkeys(scoped, "x")) if scoped else None
    out = {}
    for name in sorted(table.entities):
        entity = table.entities[name]
        if not _offered(entity) or not _covered(probe, entity):
            continue
        fields, defs = _field_schemas(entity)
        json_of(entity)  # (built now: never while calls are served)
        for p in patterns_of(spec_of(entity)):
            tool = _read_tool(p, fields, defs, scoped, embed)
            if tool is not None and _covered(probe, entity, tool):
                out[tool.name] = tool
        if name in allowed:
            out.update((t.name, t) for t in _write_tools(entity, fields, defs, scoped))
    out["explain"] = Tool("explain", "What a call of another tool would send and cost "
                          "(requests, index, rows by role, capacity units); sends nothing.",
                          _object({"tool": {"type": "string", "enum": sorted(out)},
                                   "arguments": {"type": "object"}}, ["tool"], {}),
                          Entity, "explain")
    return out


def _offered(entity: type[Entity]) -> bool:
    """Whether ``entity`` gets tools: not rows an adapter keeps for itself, whose class
    declares ``__dynaorm_internal__ = True`` (dynaorm.langgraph's checkpoints, pending
    writes and memories: the adapter's storage, not the application's model)."""
    return not getattr(entity, "__dynaorm_internal__", False)


def _covered(probe: Session | None, entity: type[Entity], tool: Tool | None = None) -> bool:
    """Whether a session scoped as ``probe`` takes ``entity``, and runs ``tool`` of it (an
    index query or a search the scope cannot hold is left out)."""
    if probe is None:
        return True
    try:
        if tool is None or tool.kind == "query":
            probe.query(entity, index=None if tool is None or tool.pattern is None
                        else tool.pattern.index)
        elif tool.kind == "search":
            spec = spec_of(entity)
            index = spec.table.vector_index(tool.extra["index"])
            return all(spec.attr(f) in (index.partition, *index.filters)
                       for f in probe.scope or ())
    except ScopeError:
        return False
    return True


# -- running a call ----------------------------------------------------------------------
#: a tool's operation: a generator of steps, each a call of its session (a coroutine
#: function's for an ``AsyncSession``), sent back what the call returned
Op = Generator[Callable[[], Any], Any, Any]


def _scoped_args(args: Mapping[str, Any], scope: Mapping[str, Any], names: Iterable[str]
                 ) -> dict[str, Any]:
    """The call's arguments with the scope's fields filled in where the call omits them
    (one it names is kept: the session refuses another tenant's)."""
    return {**{k: v for k, v in scope.items() if k in names}, **args}


class Cursors:
    """The cursors a server gives and takes: opaque to clients whatever the table's
    configuration. With a cursor secret (``Table(cursor_secret=...)`` or
    ``DYNAORM_CURSOR_SECRET``) a page's cursor is already sealed by it and passes as it
    is (any server with the secret resumes it, after a restart too); without one, it is
    sealed again (AES-SIV) under a key this server draws when it is made, so a client
    can neither read nor forge one, and one from another server, or from before a
    restart, is refused."""

    def __init__(self, table: Table):
        # (the table's secret, as a read finds it: Table(cursor_secret=...), else the
        # environment's)
        secret = table.cursor_secret or os.environ.get("DYNAORM_CURSOR_SECRET")
        self._key = None if secret else os.urandom(64)

    def give(self, cursor: str | None) -> str | None:
        """The cursor a client is given for a page's ``cursor``."""
        if cursor is None or self._key is None:
            return cursor
        from dynaorm.read.cursor import seal

        return seal(cursor.encode(), self._key)

    def take(self, cursor: str) -> str:
        """The page cursor a client's ``cursor`` stands for, else :class:`ToolError`."""
        if self._key is None:
            return cursor
        from dynaorm.read.cursor import open_sealed

        try:
            return open_sealed(cursor, self._key).decode()
        except (InvalidCursorError, UnicodeDecodeError) as exc:
            raise InvalidCursorError(
                "cursor: not a cursor this server gave (altered, forged, from another "
                "server, or from before it restarted: without a cursor secret a server's "
                "cursors last as long as it runs); read the first page again without "
                "one") from exc


def run(tool: Tool, args: dict[str, Any], session: Session | AsyncSession,
        scope: Mapping[str, Any], embed: Embed | None, tools: Mapping[str, Tool],
        cursors: Cursors | None = None) -> Any:
    """Execute ``tool`` with ``args`` (checked against its schema) in ``session``: its
    JSON result (pages' cursors given and taken by ``cursors``, the server's); by an
    ``AsyncSession``, a coroutine of it (``session.run``: one operation, either kind)."""
    return session.run(_op(tool, args, session, scope, embed, tools, cursors))


#: the tools a server runs on its event loop (by an ``AsyncSession``)
KEYED_READS = frozenset({"get", "find"})


def _op(tool: Tool, args: dict[str, Any], session: Any, scope: Mapping[str, Any],
        embed: Embed | None, tools: Mapping[str, Tool], cursors: Cursors | None,
        explained: bool = False) -> Op:
    """``tool`` run (or explained) with ``args`` in ``session``, either kind."""
    if tool.kind == "explain":
        return (yield from _explain(tools, args, session, scope))
    entity = tool.entity
    if tool.kind in ("save", "update", "delete"):
        return (yield from _write(tool, args, session, scope, explained))
    given = {n: v for n, v in args.items() if n in tool.keys}
    keys = _values(entity, _scoped_args(given, scope, tool.keys))
    if tool.kind in KEYED_READS:
        if explained:
            return explain(session, entity, **keys)  # (refused as the call would be)
        call = session.get if tool.kind == "get" else session.find
        found = yield partial(call, entity, **keys)
        return {"item": None if found is None else dump(found)}
    if tool.kind == "search":
        return (yield from _search(tool, args, keys, session, embed, explained))
    index = tool.pattern.index if tool.pattern else None
    q = (session.history(entity, **keys) if tool.kind == "history"
         else session.query(entity, index=index, **keys))
    if explained:
        return explain(q)
    cursor = args.get("cursor")
    if cursors is not None and cursor is not None:
        cursor = cursors.take(cursor)
    page = yield partial(q.page_size(args.get("limit", 25)).page, cursor)
    return {"items": [dump(o) for o in page.items],
            "cursor": page.cursor if cursors is None else cursors.give(page.cursor)}


def _search(tool: Tool, args: Mapping[str, Any], keys: Mapping[str, Any], session: Any,
            embed: Embed | None, explained: bool) -> Op:
    if ("text" in args) == ("vector" in args):
        raise ToolError(f"{tool.name} takes one of vector" + (" or text" if embed else ""))
    vector = embed(args["text"]) if "text" in args and embed else args["vector"]
    search = session.search(tool.entity, tool.extra["index"], vector=vector,
                            top=args.get("top", 10), **keys)
    for name, value in (args.get("filters") or {}).items():
        search = search.where(F(name) == value)
    if explained:
        return explain(search)
    hits = yield search.all
    return {"hits": [{"item": dump(h.item), "score": h.score} for h in hits]}


def _write(tool: Tool, args: dict[str, Any], session: Any, scope: Mapping[str, Any],
           explained: bool) -> Op:
    """A save, update or delete staged as any caller stages it (``session.save(obj)``
    of the item validated as the entity validates JSON, ``session.update(Entity,
    **key).set(**values)``, ``session.delete(Entity, **key)``): the entity validates,
    converts and refuses the values, its rules plan the rows, the commit reads what they
    need and keeps the idempotency key's receipt (a retry is a replay). ``version`` is an
    If-Match, a condition on the stored version."""
    entity, key = tool.entity, args.get("idempotency_key")
    if explained and key is not None:  # (as the commit it would be: keyed, its receipt)
        session = type(session)(session.table or session.client, scope=session.scope,
                                idempotency_key=key)
    keys = _values(entity, _scoped_args({n: args[n] for n in tool.keys if n in args}, scope,
                                        tool.keys))
    pinned, expected = tool.extra.get("version"), args.get("version")
    match = None if pinned is None or expected is None else F(pinned) == expected
    staged = _stage_write(tool, args, session, scope, keys, match)
    if explained:
        try:
            return explain(session)
        finally:
            session.rollback()
    try:
        done = yield partial(session.commit, idempotency_key=key)
    except ConditionFailedError as exc:  # (the one condition given: the If-Match)
        if match is None:
            raise
        stored = "no item at that version is stored" if exc.item is None else (
            f"version {getattr(exc.item, str(pinned), '?')} is stored")
        raise ConcurrentModificationError(
            f"{entity.__name__} {keys}: expected version {expected} (an If-Match), but "
            f"{stored}: nothing was written; read it again", entity=entity,
            key=exc.key, item=exc.item) from exc
    result = {"replayed": done.replayed}
    if tool.kind == "update" and done.replayed:  # (a replay: the item as stored now)
        staged = yield partial(session.get, entity, consistent=True, **keys)
    elif tool.kind == "update":
        staged = staged.result
    if tool.kind != "delete":
        result["item"] = None if staged is None else dump(staged)
    return result


def _stage_write(tool: Tool, args: dict[str, Any], session: Any, scope: Mapping[str, Any],
                 keys: dict[str, Any], match: Any) -> Any:
    """:func:`_write`'s save, update (returning the item) or delete, staged on
    ``session``; ``match`` the If-Match condition or ``None``."""
    entity = tool.entity
    if tool.kind == "save":
        staged = json_of(entity).validator.validate_json(
            json.dumps(_scoped_args(args["item"], scope, entity.model_fields)))
        session.save(staged)
        return staged
    if tool.kind == "update":
        staged = session.update(entity, **keys).set(**_values(entity, args["set"]))
        return staged.returning() if match is None else staged.returning().where(match)
    session.delete(entity, condition=match, **keys)
    return None


def _explain(tools: Mapping[str, Tool], args: Mapping[str, Any], session: Any,
             scope: Mapping[str, Any]) -> Op:
    target = tools.get(args["tool"])
    if target is None or target.kind == "explain":
        raise ToolError(f"explain: no tool {args['tool']!r}")
    inner = dict(args.get("arguments") or {})
    check_arguments(target, inner)
    dims = int(target.input_schema["properties"].get("vector", {}).get("minItems", 1))
    found = yield from _op(target, inner, session, scope, lambda text: [1.0] * dims, tools,
                           None, True)
    return {"explanation": str(found), "tool": target.name}


def _compiled(tool: Tool) -> tuple[Tool, Callable[[Any], bool] | None, Any]:
    """``tool``, its quick check (:func:`_quick`) and its input schema's JSON Schema
    2020-12 validator, compiled once."""
    found = _COMPILED.get(id(tool))
    if found is None or found[0] is not tool:
        schemas = importlib.import_module("jsonschema")  # (untyped: stubs or not)
        found = _COMPILED[id(tool)] = (tool, _quick(tool.input_schema),
                                       schemas.Draft202012Validator(tool.input_schema))
    return found


_COMPILED: dict[int, tuple[Tool, Callable[[Any], bool] | None, Any]] = {}
#: JSON Schema's scalar types (a bool is neither an integer nor a number)
_SCALARS: dict[str, Callable[[Any], bool]] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool)}
_BOUNDS: dict[str, Callable[[Any, Any], bool]] = {
    "minimum": lambda v, b: v >= b, "maximum": lambda v, b: v <= b,
    "minLength": lambda v, b: len(v) >= b, "maxLength": lambda v, b: len(v) <= b,
    "minItems": lambda v, b: len(v) >= b, "maxItems": lambda v, b: len(v) <= b}
_PLAIN = frozenset({"type", "description", "title", "contentEncoding", *_BOUNDS})
#: what a schema bounds a value by: (the check of :data:`_BOUNDS`, the bound)
_Bounds = list[tuple[Callable[[Any, Any], bool], Any]]


def _quick(schema: Any) -> Callable[[Any], bool] | None:
    """A check accepting only values ``schema`` accepts, for the shapes tools' schemas
    take (objects of scalars, arrays of numbers; ``None``: another shape). What it does
    not accept is left to the full validator, which says why."""
    if not isinstance(schema, Mapping) or not isinstance(schema.get("type"), str):
        return None  # (a boolean schema, a list of types: the full validator's)
    kind, keys = schema["type"], set(schema)
    bounds = [(_BOUNDS[k], schema[k]) for k in keys & _BOUNDS.keys()]
    if kind == "object" and keys <= {"type", "description", "title", "properties",
                                     "required", "additionalProperties", "$defs"}:
        return _quick_object(schema)
    if kind == "array" and keys <= _PLAIN | {"items"}:
        return _quick_array(schema, bounds)
    if kind in _SCALARS and keys <= _PLAIN | {"enum"}:
        return _quick_scalar(_SCALARS[kind], schema, bounds)
    return None


def _quick_object(schema: Mapping[str, Any]) -> Callable[[Any], bool] | None:
    """:func:`_quick` of an object schema: a dict with the required keys, no others when
    closed, each property's value accepted by its own check."""
    props = {n: _quick(s) for n, s in schema.get("properties", {}).items()}
    more = schema.get("additionalProperties", True)
    if any(c is None for c in props.values()) or more not in (True, False):
        return None
    need, closed = frozenset(schema.get("required", ())), more is False
    return lambda v: (isinstance(v, dict) and need <= v.keys()
                      and (not closed or v.keys() <= props.keys())
                      and all(c(v[n]) for n, c in props.items() if n in v))  # type: ignore[misc]


def _quick_array(schema: Mapping[str, Any], bounds: _Bounds) -> Callable[
        [Any], bool] | None:
    """:func:`_quick` of an array schema: a list within ``bounds``, each item accepted
    by the items' check (numbers unless said)."""
    item = _quick(schema.get("items", {"type": "number"}))
    return None if item is None else (lambda v: isinstance(v, list) and all(
        b(v, x) for b, x in bounds) and all(item(i) for i in v))


def _quick_scalar(typed: Callable[[Any], bool], schema: Mapping[str, Any],
                  bounds: _Bounds) -> Callable[[Any], bool] | None:
    """:func:`_quick` of a scalar schema: a value of its type, within ``bounds``, one of
    its string ``enum`` if it has one."""
    enum = schema.get("enum")
    if enum is not None and not all(isinstance(e, str) for e in enum):
        return None
    return lambda v: typed(v) and (enum is None or v in enum) and all(
        b(v, x) for b, x in bounds)

def check_arguments(tool: Tool, args: Mapping[str, Any]) -> None:
    """``args`` fit ``tool``'s input schema, else :class:`ToolError` naming each argument
    refused and why (never quoting a value: it may be an encrypted field's plaintext)."""
    if len(json.dumps(args, default=str)) > MAX_ARGUMENT_BYTES:
        raise ToolError(f"{tool.name}: arguments over {MAX_ARGUMENT_BYTES} bytes")
    _, quick, validator = _compiled(tool)
    if quick is not None and quick(args):
        return  # (the plain case, checked without the full validator)
    errors = sorted(validator.iter_errors(args),
                    key=lambda e: list(map(str, e.absolute_path)))
    if errors:  # (one refusal said once: jsonschema reports a missing name per name, each
        # naming all that are missing)
        said = "; ".join(list(dict.fromkeys(_refusal(e) for e in errors))[:5])
        raise ToolError(f"{tool.name}: arguments refused: {said}")


#: JSON Schema's bounds, as a refusal says them
_BOUND_WORDS = {"maximum": "at most {}", "minimum": "at least {}",
                "exclusiveMaximum": "below {}", "exclusiveMinimum": "above {}",
                "maxLength": "at most {} characters", "minLength": "at least {} characters",
                "maxItems": "at most {} items", "minItems": "at least {} items",
                "maxProperties": "at most {} names", "minProperties": "at least {} names"}
_JSON_TYPES = ((bool, "a boolean"), (int, "an integer"), (float, "a number"),
               (str, "a string"), (list, "an array"), (dict, "an object"),
               (type(None), "null"))


def _types(schema: Any) -> str:
    """What a schema (or each of its ``anyOf``/``oneOf`` choices) takes, by type."""
    if not isinstance(schema, Mapping):
        return "a value"
    choices = schema.get("anyOf") or schema.get("oneOf")
    if choices:
        return " or ".join(dict.fromkeys(_types(c) for c in choices))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " or ".join(map(str, kind))
    return str(kind) if kind else ("a reference" if "$ref" in schema else "a value")


def _named(e: Any, where: str) -> str | None:
    """A refusal of an object's names (unknown or missing ones), naming each; ``None``:
    not one."""
    instance, rule = e.instance, e.validator
    if not isinstance(instance, Mapping) or rule not in ("additionalProperties", "required"):
        return None
    if rule == "required":
        missing = [n for n in e.validator_value if n not in instance]
        names = ", ".join(repr(n if not where else f"{where}/{n}") for n in missing)
        return f"missing required argument{'s' * (len(missing) > 1)} {names}"
    known = set(e.schema.get("properties", {}))
    extra = sorted(str(n)[:100] for n in instance if n not in known)
    names = ", ".join(repr(n if not where else f"{where}/{n}") for n in extra)
    return (f"unknown argument{'s' * (len(extra) > 1)} {names}: takes "
            f"{', '.join(sorted(known)) or 'none'}")


def _refusal(e: Any) -> str:
    """One schema error as a refusal naming the argument (its path) and what was wrong,
    by the schema's words alone: never the value given."""
    where = "/".join(map(str, e.absolute_path))
    named = _named(e, where)
    if named is not None:
        return named
    at = f"argument {where!r}" if where else "the arguments"
    rule, bound = e.validator, e.validator_value
    got = next((name for kind, name in _JSON_TYPES if isinstance(e.instance, kind)), "a value")
    if rule == "type":
        return f"{at} must be {' or '.join(bound) if isinstance(bound, list) else bound}, " \
               f"not {got}"
    if rule in _BOUND_WORDS:
        return f"{at} must be {_BOUND_WORDS[rule].format(bound)}"
    if rule == "enum":
        shown = ", ".join(map(repr, bound[:20])) + (", ..." if len(bound) > 20 else "")
        return f"{at} must be one of {shown}"
    if rule in ("anyOf", "oneOf"):
        return f"{at} must be {_types(e.schema)}, not {got} (or out of its bounds)"
    return f"{at} does not fit its schema ({rule!r})"


#: pydantic's own error types, whose messages never quote the value (a validator's
#: ``value_error`` / ``assertion_error`` and custom errors may: said by type alone)
_OWN_MESSAGES = frozenset(get_args(ErrorType)) - {"value_error", "assertion_error"}


def _problems(exc: ValidationError) -> str:
    return "; ".join(f"{'.'.join(map(str, e['loc']))}: "
                     + (e["msg"] if e["type"] in _OWN_MESSAGES else
                        f"refused by a validator ({e['type']})")
                     for e in exc.errors()[:10])


def message_of(exc: BaseException) -> str:
    """What a client is told of a failed call: dynaorm's message; a model's validation
    failure by field and reason (never the value given)."""
    if isinstance(exc, ValidationError):
        return "invalid values: " + _problems(exc)
    if isinstance(exc, ItemDecodeError):  # (its message quotes validators: plaintext)
        cause = exc.__cause__
        return (f"ItemDecodeError: the stored item {exc.key} does not fit "
                f"{getattr(exc.entity, '__name__', '?')}"
                + (f": {_problems(cause)}" if isinstance(cause, ValidationError) else ""))
    if isinstance(exc, DynaormError):
        return f"{type(exc).__name__}: {exc}"
    return f"{type(exc).__name__}: the call failed"

