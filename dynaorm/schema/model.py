"""The model as data: a table, its indexes of every kind and the entities mapped onto it,
as plain JSON-ready data (:func:`model_of`, what ``Table.model()`` returns), and the access
patterns a module declares on a table (:class:`AccessPattern`, ``Table.pattern()``).

The data holds what an entity declares (fields with their stored names and types, key
templates, template indexes, unique rules, versioning, encryption, TTL and timestamps,
shards, a previous layout) and what follows from it: which index each entity lands in
(``lands_in``), every kind of row it writes with its key shape (``rows``) and the rows
each kind of write adds by role (``writes``), both from each rule's ``rows`` hook run on a
write described (:func:`described`), and its access patterns (the declared ones, else
those its keys allow); the functions of one entity take its spec (:func:`spec_of`: what
dynaorm compiled of the class's declaration). The formats dynaorm writes and reads
(:mod:`dynaorm.formats`) and the chart (:mod:`dynaorm.formats.chart`) are built on it;
``docs/guide/model.md`` gives its JSON schema.

Pure: nothing here sends a request.
"""

import enum
import operator
import re
import types
import typing
import uuid
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any, Final

from pydantic import BaseModel
from pydantic_core import PydanticUndefined

from dynaorm.errors import DynaormError
from dynaorm.schema.described import described, own_key
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules.compressed import _Compressed
from dynaorm.schema.rules.encrypted import ENCRYPTED
from dynaorm.schema.rules.offloaded import OFFLOADED
from dynaorm.schema.rules.vectors import Vector
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.table import GSI, LSI, TableSchema, VectorIndex
from dynaorm.schema.templates import SHARD_FIELD
from dynaorm.values.formats import StoredAs

__all__ = ["FORMAT", "OPERATIONS", "AccessPattern", "declared_patterns", "derived_patterns",
           "describe_type", "entity_model", "index_model", "lands_in", "model_of",
           "own_key", "patterns_of", "row_kinds", "rows_of", "spec_of"]

#: the version of the model's JSON format (``"dynaorm_model"``)
FORMAT: Final = 1
#: the operations an access pattern may name (the AWS DynamoDB MCP server's,
#: TransactWriteItems, which a save with guards or history is, and SearchVectors, a
#: search of a vector index)
OPERATIONS: Final = ("GetItem", "PutItem", "UpdateItem", "DeleteItem", "Query", "Scan",
                     "BatchGetItem", "BatchWriteItem", "TransactWriteItems", "SearchVectors")
#: scalar annotations and the type names the model gives them (bool before int)
_SCALARS: Final[tuple[tuple[type[Any], str], ...]] = (
    (bool, "boolean"), (int, "integer"), (float, "number"), (Decimal, "decimal"),
    (str, "string"), (bytes, "binary"), (datetime, "datetime"), (date, "date"),
    (uuid.UUID, "uuid"))
#: the write kinds whose rows the model counts
_WRITES: Final = ("insert", "update", "delete")


@dataclass(frozen=True)
class AccessPattern:
    """An access pattern a module declares on its table (``table.pattern(...)``): what it
    is called, which entity it reads or writes, the DynamoDB operation, the index, the
    parameters (names, or ``(name, type)`` / ``(name, "entity", Entity)`` as the AWS
    DynamoDB MCP server's schema gives them), the range condition on the sort key and what
    it returns. ``dynaorm explain MODULE`` explains each; the model lists them."""

    name: str
    """The pattern's name (``"get_user"``)."""
    entity: type[Any]
    """The entity class it is for."""
    operation: str
    """One of :data:`OPERATIONS`."""
    parameters: tuple[Any, ...] = ()
    """What it is called with: field names, or ``(name, type)`` pairs."""
    index: str | None = None
    """The index it reads (``None``: the table)."""
    range_condition: str | None = None
    """``begins_with``, ``between``, ``>``, ``<``, ``>=`` or ``<=`` on the sort key."""
    returns: str | None = None
    """``single_entity``, ``entity_list``, ``success_flag``, ``mixed_data`` or ``void``."""
    description: str = ""
    """What it is for, in words."""
    pattern_id: int | None = None
    """Its number in a design (the MCP server's ``pattern_id``)."""

    def __post_init__(self) -> None:
        if self.operation not in OPERATIONS:
            raise DynaormError(f"access pattern {self.name!r}: operation must be one of "
                               f"{', '.join(OPERATIONS)}; got {self.operation!r}")

    def data(self) -> dict[str, Any]:
        """The pattern as the model holds it."""
        params = []
        for p in self.parameters:
            name, kind, *rest = (p, None) if isinstance(p, str) else p
            params.append({"name": name, "type": kind or _param_type(self.entity, name),
                           **({"entity_type": e if isinstance(e := rest[0], str) else str(
                               e.__name__)} if rest else {})})
        out: dict[str, Any] = {"name": self.name, "operation": self.operation,
                               "index": self.index, "parameters": params,
                               "range_condition": self.range_condition,
                               "returns": self.returns or _returns(self.operation),
                               "description": self.description}
        if self.pattern_id is not None:
            out["pattern_id"] = self.pattern_id
        return out




def _returns(operation: str) -> str:
    return {"GetItem": "single_entity", "DeleteItem": "success_flag", "PutItem": "void",
            "UpdateItem": "single_entity", "TransactWriteItems": "void"}.get(
        operation, "entity_list")


def _param_type(entity: type[Any], name: str) -> str:
    """A parameter's type as the MCP server names them (``string``, ``integer``,
    ``boolean``), from the entity's field of that name."""
    info = getattr(entity, "model_fields", {}).get(name)
    found = describe_type(info.annotation)["type"] if info is not None else "string"
    return found if found in ("integer", "boolean") else "string"


# -- types ---------------------------------------------------------------------------------
def _unwrapped(annotation: Any) -> tuple[Any, bool, tuple[Any, ...]]:
    """``annotation`` without ``Optional`` and ``Annotated``: (the type, whether ``None``
    is allowed, the ``Annotated`` metadata met on the way)."""
    nullable, metadata = False, ()
    while True:
        origin = typing.get_origin(annotation)
        if origin is typing.Annotated:
            annotation, *more = typing.get_args(annotation)
            metadata += tuple(more)
        elif origin in (typing.Union, types.UnionType):
            args = typing.get_args(annotation)
            rest = tuple(a for a in args if a is not type(None))
            nullable = nullable or len(rest) < len(args)
            if len(rest) != 1:
                return typing.Union[rest], nullable, metadata  # noqa: UP007 (a value)
            annotation = rest[0]
        else:
            return annotation, nullable, metadata


def describe_type(annotation: Any, above: tuple[type, ...] = ()) -> dict[str, Any]:
    """The model's description of a field annotation: ``{"type": "string"}``, ``{"type":
    "list", "items": {...}}``, ``{"type": "object", "model": "Address", "fields": [...]}``
    and so on (``Optional`` is the field's ``nullable``; ``Annotated`` metadata other than
    dynaorm's is looked through). A model inside itself (one of ``above``, the models
    described around it) is named without its fields: a back-reference."""
    plain, _, metadata = _unwrapped(annotation)
    out = _described(plain, above)
    for m in metadata:  # (the first of each)
        if isinstance(m, Vector):
            out.setdefault("vector", m.dimensions)
        elif isinstance(m, StoredAs):  # (a time's stored format: a strftime pattern or its name)
            out.setdefault("stored_as", m.format)
    return out


def _described(plain: Any, above: tuple[type, ...]) -> dict[str, Any]:
    """:func:`describe_type` of an annotation without ``Optional`` and ``Annotated``: a
    generic (``list[str]``, ``A | B``, a ``Literal``) by its origin and arguments."""
    args = typing.get_args(plain)
    origin = typing.get_origin(plain) or (plain if plain in (list, set, frozenset, dict) else None)
    if origin in (typing.Union, types.UnionType):
        return {"type": "union", "of": [describe_type(a, above) for a in args]}
    if origin is typing.Literal:
        return {"type": "enum", "values": list(args)}
    kind = origin if isinstance(origin, type) else object  # (issubclass takes classes)
    if issubclass(kind, Mapping):
        return {"type": "map", "values": describe_type((*args, Any, Any)[1], above)}  # (bare: Any)
    if issubclass(kind, list | tuple | set | frozenset):
        return {"type": "list" if issubclass(kind, list | tuple) else "set",
                "items": describe_type((*args, Any)[0], above)}
    if not isinstance(plain, type):  # (another generic: Python 3.11's are not types)
        return {"type": "any"}
    if issubclass(plain, enum.Enum):
        return {"type": "enum", "values": [m.value for m in plain]}
    if issubclass(plain, BaseModel):
        return {"type": "object", "model": plain.__name__, **({} if plain in above else {
            "fields": [_field(n, i, {}, (*above, plain)) for n, i in plain.model_fields.items()]})}
    # (bool first: it is an int too)
    return {"type": next((name for cls, name in _SCALARS if issubclass(plain, cls)), "any")}


def _default(info: Any) -> dict[str, Any]:
    """A field's default as the model holds it: ``default`` (a JSON value: a decimal, a
    date or time, a UUID as text, bytes as hex, a nested model as an object) or
    ``default_factory`` (the factory's name); nothing when it is required."""
    value = info.default
    if info.default_factory is not None:
        factory = info.default_factory
        if factory in (list, set, frozenset, dict):
            return {"default": [] if factory is not dict else {}}
        return {"default_factory": _qualified(factory)}  # (never called: a lambda's
    if value is PydanticUndefined:                       # value differs object by object)
        return {}
    plain = _plain_default(value)
    return {"default": plain} if plain is not _NO_JSON else {"default_repr": repr(value)}


_NO_JSON: Final = object()


def _plain_default(value: Any) -> Any:
    """``value`` as JSON (see :func:`_default`), else :data:`_NO_JSON`."""
    if isinstance(value, enum.Enum):
        value = value.value
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Decimal | uuid.UUID):
        return str(value)
    if isinstance(value, date):  # (a datetime too)
        return value.isoformat()
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, list | tuple | set | frozenset) and all(
            isinstance(v, bool | int | float | str) for v in value):
        return sorted(value) if isinstance(value, set | frozenset) else list(value)
    return value if isinstance(value, list | dict) and _json(value) else _NO_JSON


def _json(value: Any) -> bool:
    """Whether ``value`` is JSON's data as Python holds it (lists, dicts of text keys,
    text, numbers, ``None``; a NaN too: a default holding one reads back as such)."""
    if isinstance(value, list):
        return all(_json(v) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _json(v) for k, v in value.items())
    return value is None or isinstance(value, bool | int | float | str)


def _field(name: str, info: Any, renames: Mapping[str, str], above: tuple[type, ...] = ()
           ) -> dict[str, Any]:
    """One field as the model holds it."""
    _, nullable, metadata = _unwrapped(info.annotation)
    metadata += tuple(info.metadata)
    out = {"name": name, "stored": renames.get(name, name),
           **describe_type(typing.Annotated[(info.annotation, *info.metadata)]
                           if info.metadata else info.annotation, above),
           "required": info.is_required(), "nullable": nullable,
           **_default(info)}
    if ENCRYPTED in metadata:
        out["encrypted"] = True
    if OFFLOADED in metadata:
        out["offloaded"] = True
    squeezed = next((m for m in metadata if isinstance(m, _Compressed)), None)
    if squeezed is not None:  # (stored binary from min_size bytes on)
        out["compressed"] = squeezed._min_size
    if info.exclude:
        out["excluded"] = True
    return out


# -- indexes and entities ------------------------------------------------------------------
def index_model(index: GSI | LSI | VectorIndex) -> dict[str, Any]:
    """One index of a table: a GSI (``native`` when keyed on entity attributes as they are
    stored), an LSI or a vector index."""
    projection = index.projection if isinstance(index.projection, str) else list(
        index.projection)
    if isinstance(index, GSI):
        return {"name": index.name, "kind": "gsi", "native": isinstance(index.pk, tuple),
                "pk": list(index.hash_keys), "sk": list(index.range_keys),
                "projection": projection, **{k: list(v) for k, v in (
                    ("warm_throughput", index.warm_throughput),
                    ("max_on_demand", index.max_on_demand)) if v is not None}}
    if isinstance(index, LSI):
        return {"name": index.name, "kind": "lsi", "sk": [index.sk], "projection": projection}
    return {"name": index.name, "kind": "vector", "attribute": index.attribute,
            "dimensions": index.dimensions, "distance": index.distance,
            "partition": index.partition, "filters": list(index.filters),
            "projection": projection}


def _indexes(table: TableSchema) -> list[GSI | LSI | VectorIndex]:
    """Every index of ``table``: its GSIs and LSIs, then its vector indexes."""
    return [*table.indexes.values(), *table.vector_indexes.values()]


def lands_in(spec: EntitySpec) -> list[str]:
    """The indexes an entity's rows land in: its template indexes, the native indexes
    keyed on its stored fields, its history index (version rows) and the vector indexes
    of its vector attribute."""
    stored, table = spec.stored_fields, spec.table
    found = [i.name for i in spec.indexes]
    for index in _indexes(table):
        keys = (index.attribute,) if not isinstance(index, GSI | LSI) else (
            table.key_names(index.name)[len(spec.table_key_attrs):]
            if table.native(index.name) else ())
        if keys and all(a in stored for a in keys):
            found.append(index.name)
    if spec.history_index is not None:
        found.append(spec.history_index[0])
    return list(dict.fromkeys(found))


def rows_of(spec: EntitySpec) -> dict[str, dict[str, int]]:
    """The rows each kind of write of the entity writes, by role: its own row (a
    versioned entity's latest copy), what its rules add (their ``rows`` hook, run on the
    write described: unique guards, a version row), and its index entries (at most one
    per index it lands in)."""
    own = "latest copy" if spec.versioned else "row"
    entries = len(lands_in(spec))
    out = {}
    for write in _WRITES:
        rows = {own: 1}
        change = described(spec, write)
        for add in spec.rules.adders:  # (rule by rule: roles in the rules' order)
            for op in (*(added := add(change)).before, *added.after):
                role = op.origin.role.value
                rows[role] = rows.get(role, 0) + 1
        if entries:
            rows["index entry"] = entries
        out[write] = rows
    return out


def row_kinds(spec: EntitySpec) -> list[dict[str, Any]]:
    """Every kind of row the entity writes, with its key shape: its own row (``item``, or
    a versioned entity's ``latest copy``), then the rows its rules add to an insert, as
    their ``rows`` hook gives them (a version row ``v<n>_...``, a unique guard
    ``[scope#]prefix#{value}``, with the field it guards and its scope)."""
    key = own_key(spec)
    out = [{"role": "latest copy" if spec.versioned else "item", "key": key}]
    scopes = {r.field: None if r.scope is None else r.scope.source for r in spec.uniques}
    for op in (*(rows := spec.rules.rows(described(spec, "insert"))).before, *rows.after):
        kind: dict[str, Any] = {"role": op.origin.role.value, "key": dict(op.key)}
        if op.origin.field is not None:
            kind["field"] = op.origin.field
            kind["scope"] = scopes.get(op.origin.field)
        out.append(kind)
    return out


def _unique(spec: EntitySpec) -> list[dict[str, Any]]:
    return [{"field": r.field, "prefix": r.prefix,
             "scope": None if r.scope is None else r.scope.source,
             "normalize": None if r.normalize is None else _qualified(r.normalize)}
            for r in spec.uniques]


def _qualified(fn: Any) -> str:
    """A function as ``module:qualname`` (a builtin's or a method of a builtin type's:
    its ``qualname``; one that cannot be imported by its name, a lambda or a local
    function: ``"<lambda>"``)."""
    if isinstance(fn, operator.methodcaller | operator.attrgetter | operator.itemgetter):
        shown = repr(fn).removeprefix("operator.")  # (imported back as the same call)
        return "<lambda>" if "<" in shown else f"operator:{shown}"
    module = getattr(fn, "__module__", None) or ""
    name = getattr(fn, "__qualname__", None) or repr(fn)
    if "<" in name:
        return "<lambda>"
    return name if module in ("builtins", "") else f"{module}:{name}"


def _shards(spec: EntitySpec) -> dict[str, Any]:
    return {target: {"count": rule.count, "first": rule.first,
                     "by": rule.by if rule.by is None or isinstance(rule.by, str)
                     else _qualified(rule.by)}
            for target, rule in spec.shards.items()}


def _previous(spec: EntitySpec) -> dict[str, Any] | None:
    old = spec.previous
    if old is None:
        return None
    return {"pk": old.pk.source, "sk": None if old.sk is None else old.sk.source,
            "type_name": old.type_name,
            "stored_names": {n: a for a, n in sorted(old.fields_by_attr.items())
                             if a != spec.attr(n)}}


def derived_patterns(spec: EntitySpec) -> list[AccessPattern]:
    """The access patterns an entity's declaration allows: get by key, save and delete,
    find by each unique field, the query of its partition (where its sort key has
    fields), history (versioned), a query of each index it lands in, and a search of each
    vector index it can be searched in."""
    cls, name, lookup = spec.cls, _snake(spec.name), spec.lookup_fields
    # (a save in a migration window checks the old layout's key free, or moves its row)
    save = "TransactWriteItems" if spec.has_rules or spec.previous else "PutItem"
    out = [AccessPattern(f"get_{name}", cls, "GetItem", lookup),
           AccessPattern(f"save_{name}", cls, save, ((name, "entity", cls),)),
           AccessPattern(f"delete_{name}", cls, "TransactWriteItems" if spec.uniques
                         else "DeleteItem", lookup)]
    out += [AccessPattern(f"find_{name}_by_{r.field}", cls, "GetItem", r.fields)
            for r in spec.uniques]
    pk, sk = _key_parts(spec.pk, spec.sk)
    if sk or spec.versioned:
        out.append(AccessPattern(f"query_{name}", cls, "Query", pk,
                                 range_condition="begins_with" if sk else None))
    if spec.versioned:
        out.append(AccessPattern(f"history_{name}", cls, "Query", lookup,
                                 index=None if spec.history_index is None
                                 else spec.history_index[0]))
    for idx in spec.indexes:
        ipk, isk = _key_parts(idx.pk, idx.sk)
        out.append(AccessPattern(f"query_{name}_on_{_snake(idx.name)}", cls, "Query", ipk,
                                 index=idx.name,
                                 range_condition="begins_with" if isk else None))
    for vector in _vector_indexes(spec):
        partition = (() if vector.partition is None else
                     (spec.stored_fields[vector.partition],))
        out.append(AccessPattern(f"search_{name}_on_{_snake(vector.name)}", cls,
                                 "SearchVectors", partition, index=vector.name))
    return out


def _vector_indexes(spec: EntitySpec) -> list[VectorIndex]:
    """The vector indexes an entity can be searched in: those whose vector and partition
    attributes it stores."""
    stored = spec.stored_fields
    return [v for v in spec.table.vector_indexes.values() if v.attribute in stored
            and (v.partition is None or v.partition in stored)]


def _key_parts(pk: Any, sk: Any) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The fields of a partition key template, and those the sort key template adds
    (``{shard}`` left out)."""
    first = tuple(f for f in pk.fields if f != SHARD_FIELD)
    return first, tuple(f for f in (sk.fields if sk else ()) if f not in (SHARD_FIELD, *first))


def _snake(name: str) -> str:
    """``name`` in snake case for a pattern's (and an MCP tool's) name, an acronym kept
    whole: ``Deal`` -> ``deal``, ``ByTenant`` -> ``by_tenant``, ``GSI1`` -> ``gsi1``,
    ``HTTPLog`` -> ``http_log``, ``my-index`` -> ``my_index``."""
    out = _WORDS.sub("_", name).lower()
    return re.sub(r"_+", "_", "".join(c if c.isalnum() else "_" for c in out)).strip("_")


#: where a name's words part: a capital after a lowercase letter or a digit, and the last
#: capital of an acronym before a lowercase letter (``HTTPLog``: ``HTTP``, ``Log``)
_WORDS = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def declared_patterns(spec: EntitySpec) -> list[AccessPattern]:
    """The access patterns declared for the entity on its table (``table.pattern()``)."""
    return [p for p in getattr(spec.table, "patterns", ()) if p.entity is spec.cls]


def patterns_of(spec: EntitySpec) -> list[AccessPattern]:
    """The entity's access patterns: those declared on its table for it, else the ones
    its declaration allows (:func:`derived_patterns`)."""
    return declared_patterns(spec) or derived_patterns(spec)


def entity_model(spec: EntitySpec) -> dict[str, Any]:
    """One entity as the model holds it."""
    created, updated = spec.timestamps
    declared = declared_patterns(spec)
    return {
        "name": spec.name, "type_name": spec.type_name, "pk": spec.pk.source,
        "sk": None if spec.sk is None else spec.sk.source,
        "fields": [_field(n, i, spec.renames) for n, i in spec.cls.model_fields.items()],
        "indexes": [{"name": i.name, "pk": i.pk.source,
                     "sk": None if i.sk is None else i.sk.source} for i in spec.indexes],
        "lands_in": lands_in(spec), "unique": _unique(spec), "versioned": spec.versioned,
        "history_index": None if spec.history_index is None else spec.history_index[0],
        "timestamps": {"created": created, "updated": updated}, "ttl_field": spec.ttl_field,
        "key_only": sorted(spec.key_only), "shards": _shards(spec),
        "encrypted": sorted(spec.encrypted.values()), "previous": _previous(spec),
        "overlaps": spec.overlaps, "writes": rows_of(spec), "rows": row_kinds(spec),
        "lock": spec.lock and asdict(spec.lock),
        "patterns": "declared" if declared else "derived",
        "access_patterns": [p.data() for p in declared or derived_patterns(spec)],
    }


def model_of(table: TableSchema) -> dict[str, Any]:
    """The model of ``table``: the table, its indexes and every entity registered on it,
    as plain data (see the module)."""
    specs = [cls.__dynaorm_spec__ for cls in table.entities.values()]
    return {
        "dynaorm_model": FORMAT,
        "table": {"name": table.name, "pk": table.pk, "sk": table.sk,
                  "key_types": dict(sorted(table.key_types.items())),
                  "type_attribute": table.type_attribute,
                  "revision_attribute": table.revision_attribute, "ttl": table.ttl,
                  "stream": table.stream, **({"offload": table.offload, "offload_threshold":
                                              table.offload_threshold} if table.offload else {}),
                  "indexes": [index_model(i) for i in _indexes(table)],
                  "rows": [kind.data(table) for kind in table.row_kinds],
                  "settings": table.declared_settings.data()},
        "entities": [entity_model(s) for s in specs],
    }
