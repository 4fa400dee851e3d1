"""A full export's lines decoded in bulk, in Arrow (issue 62, "vectorized decoding"): the
vector way of :func:`~dynaorm.jobs.exports.export_part`.

A batch of data-file lines (``{"Item": {...}}`` each) is parsed by ``pyarrow.json`` with an
explicit schema made from the entities' fields (``Item.<attribute>.<tag>``: the text of
``S`` and ``N`` values as strings, ``BOOL``, ``NULL``, ``SS``/``NS`` as lists of strings,
``L`` as lists and ``M`` as structs of their members, a ``dict`` field's ``M`` as the
reader infers it), and each entity's rows (by the type attribute) become its dataset's
columns with Arrow casts and compute: numbers from their text (``int64``,
``float64``, ``decimal128``), timestamps and dates from ISO text, sets sorted, a missing
attribute its field's default.

The per-row way (:mod:`dynaorm.jobs.stored`, then the plain way) stays the reference: the
vector way takes only what it decodes exactly as that way does, and gives an entity's rows
of a batch back to it whole (so a part keeps the lines' order) when any of them is stored
otherwise than the plain types below say or when a cast refuses a value -- an attribute
missing whose field has no constant default or is in a key template, ``NULL`` where the
field takes no ``None``, another tag, text a strict pattern does not match (a number with
spaces, a naive or non-UTC time, a year 0), a number past its column, a set listing a
member twice, a map of more than one key (its order is the line's, which the parsed
struct does not keep) -- and when the batch cannot be parsed at all. Rows that do not fit
are so counted and named as the per-row way names them, and a set of lines reads the same
either way (``tests/equivalence/test_export_vector.py``).

Fields the vector way reads (else the entity is read per row): ``str``, ``int``,
``float``, ``bool``, ``Decimal`` (no constraint, or both ``max_digits`` and
``decimal_places``), ``datetime``, ``date``, an enum or ``Literal`` of strings, each
optionally ``| None``; ``list`` of those or of nested models; ``set``/``frozenset`` of
``str`` or ``int``; ``dict[str, T]`` of a plain ``T``; a nested model of those fields --
with no constraint, validator, alias (but the entity's stored names), strict mode or
other model setting that could make the model's answer differ.
"""

import io
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa  # dynaorm[export]
import pyarrow.compute as pc
import pyarrow.json as pj

from dynaorm.jobs.arrow import Column, columns
from dynaorm.schema.spec import EntitySpec

#: text the casts take exactly as pydantic reads it (else: the per-row way)
_INT = r"^-?[0-9]{1,19}$"
_NUMBER = r"^-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?$"
_YEAR = r"([1-9][0-9]{3}|0[1-9][0-9]{2}|00[1-9][0-9]|000[1-9])"
_DATE = rf"^{_YEAR}-[0-9]{{2}}-[0-9]{{2}}$"
_TIME = _DATE[:-1] + r"T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,6})?(Z|\+00:00)?$"
#: the core-schema keys a field's or model's schema may have and still read as plain
_PLAIN_KEYS = frozenset({"type", "ref", "metadata"})
_CONFIG = frozenset({"title", "validate_by_alias", "validate_by_name", "loc_by_alias",
                     "frozen"})


_SETS = ("SS", "NS")
_EMPTY = pa.list_(pa.struct([pa.field("NULL", pa.bool_())]))


class Unfit(Exception):
    """Rows the vector way does not decode exactly (read per row instead)."""


@dataclass(frozen=True)
class _Plan:
    """How one stored value (``{tag: ...}``) becomes its column's value."""

    tag: str
    json: Any
    """The type of what is under the tag in the explicit schema (``None``: inferred)."""
    decode: Callable[[Any], Any]
    """The values under the tag (nulls where absent) -> the column's values."""


@dataclass(frozen=True)
class _Field:
    """A field of a model as stored: its attribute, plan, nullability and default."""

    attr: str
    plan: _Plan
    nullable: bool
    default: Any = None
    """The column's value of a missing attribute (a ``pyarrow.Scalar``; ``None``: none,
    the row is unfit)."""


@dataclass(frozen=True)
class _Model:
    fields: tuple[tuple[str, _Field], ...]
    type: Any
    json: Any = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "json", pa.struct([
            pa.field(f.attr, _stored_type(f)) for _, f in self.fields]))


def _stored_type(f: _Field) -> Any:
    """What an attribute of field ``f`` is parsed as: its tag's value, ``NULL`` only for
    a field that takes ``None`` (another's ``NULL`` parses as an attribute without its
    tag: per row, as ``NULL`` would be; not parsing it is an eighth of a batch's CPU), or
    as the attribute's only member (a map's: whether it is there)."""
    kinds = [] if f.plan.json is None else [pa.field(f.plan.tag, f.plan.json)]
    if f.nullable or not kinds:
        kinds.append(pa.field("NULL", pa.bool_()))
    if f.plan.tag in _SETS:  # (an empty set is stored as an empty list)
        kinds.append(pa.field("L", _EMPTY))
    return pa.struct(kinds)


# -- plans from the core schema ---------------------------------------------------------------
def _plain(schema: Mapping[str, Any], *allowed: str) -> bool:
    return set(schema) <= _PLAIN_KEYS | set(allowed)


def _checked(pattern: str) -> Callable[[Any], Any]:
    def check(values: Any) -> Any:
        if pc.all(pc.match_substring_regex(values.drop_null(), pattern)).as_py() is False:
            raise Unfit(f"text not matching {pattern}")
        return values
    return check


def _cast(kind: Any, pattern: str) -> Callable[[Any], Any]:
    check = _checked(pattern)

    def cast(values: Any) -> Any:
        try:
            return pc.cast(check(values), kind)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
            raise Unfit(str(exc)) from exc
    return cast


def _timestamp(values: Any) -> Any:
    """ISO text in UTC, or naive (as UTC, as the per-row way writes a naive datetime)."""
    naive = pc.replace_substring_regex(_checked(_TIME)(values), r"(Z|\+00:00)$", "")
    try:
        return pc.cast(pc.cast(naive, pa.timestamp("us")), pa.timestamp("us", tz="UTC"))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as exc:
        raise Unfit(str(exc)) from exc


def _in(members: Sequence[str]) -> Callable[[Any], Any]:
    allowed = pa.array(list(members), pa.string())

    def check(values: Any) -> Any:
        if pc.all(pc.is_in(values.drop_null(), allowed)).as_py() is False:
            raise Unfit("not one of the values")
        return values
    return check


#: what a plain value reads as: (its stored attribute's type tag, the arrow type it is
#: parsed as, what turns that into the column's values, the column type it reads into)
_Found = tuple[str, Any, Callable[[Any], Any], Any]


def _same(values: Any) -> Any:
    return values


def _decimal(schema: Mapping[str, Any], column: Any) -> _Found | None:
    """A decimal's reading: into its column's type, when its digits and places are both
    bound or neither."""
    if ("max_digits" in schema) != ("decimal_places" in schema):
        return None
    return "N", pa.string(), _cast(column, _NUMBER), column


def _members(schema: Mapping[str, Any], column: Any) -> _Found | None:
    """An enum's or literal's reading: strings checked against its values, when these
    are all strings."""
    values = [getattr(m, "value", m) for m in schema.get("members", schema.get(
        "expected", ()))]
    if values and all(type(v) is str for v in values):
        return "S", pa.string(), _in(values), pa.string()
    return None


_MEMBER_KEYS = ("cls", "members", "sub_type", "expected")
#: a plain value's type -> (the keys its schema may hold beyond the plain ones, its
#: reading from its schema and column type, or ``None`` when it has none)
_SCALARS: dict[str, tuple[tuple[str, ...], Callable[[Mapping[str, Any], Any],
                                                     _Found | None]]] = {
    "str": ((), lambda s, c: ("S", pa.string(), _same, pa.string())),
    "int": ((), lambda s, c: ("N", pa.string(), _cast(pa.int64(), _INT), pa.int64())),
    "float": ((), lambda s, c: ("N", pa.string(), _cast(pa.float64(), _NUMBER),
                                pa.float64())),
    "bool": ((), lambda s, c: ("BOOL", pa.bool_(), _same, pa.bool_())),
    "decimal": (("max_digits", "decimal_places"), _decimal),
    "datetime": (("microseconds_precision",), lambda s, c: (
        "S", pa.string(), _timestamp, c)),
    "date": ((), lambda s, c: ("S", pa.string(), _cast(pa.date32(), _DATE), pa.date32())),
    "enum": (_MEMBER_KEYS, _members),
    "literal": (_MEMBER_KEYS, _members)}


def _scalar(schema: Mapping[str, Any], column: Any) -> _Plan | None:
    """The plan of a plain value, where its column's type is the one it reads into."""
    kind = schema.get("type")
    case = _SCALARS.get(kind) if isinstance(kind, str) else None
    if case is None or not _plain(schema, *case[0]):
        return None
    found = case[1](schema, column)
    if found is None or found[3] != column:
        return None
    return _Plan(found[0], found[1], found[2])

def _plan(schema: Mapping[str, Any], column: Column) -> tuple[_Plan, bool] | None:
    """``(plan, nullable)`` of a field's schema (without its default) and column."""
    if schema.get("type") == "nullable" and _plain(schema, "schema"):
        found = _plan(schema["schema"], column)
        return None if found is None else (found[0], True)
    plan = _value(schema, column.type)
    return None if plan is None else (plan, False)


def _value(schema: Mapping[str, Any], kind: Any) -> _Plan | None:
    """The plan of a value of ``schema`` read into Arrow type ``kind``."""
    tp = schema.get("type")
    if tp in ("list", "set", "frozenset") and _plain(schema, "items_schema") and (
            pa.types.is_list(kind)):
        inner = schema.get("items_schema", {})
        if tp != "list":
            item = _scalar(inner, kind.value_type)
            if item is None or inner.get("type") not in ("str", "int"):
                return None
            tag = "SS" if inner["type"] == "str" else "NS"
            return _Plan(tag, pa.list_(pa.string()), _set(item.decode))
        member = _value(inner, kind.value_type)  # (not None: a NULL member is per row)
        return None if member is None else _Plan("L", pa.list_(pa.struct(
            [pa.field(member.tag, member.json)])), _list(member))
    if tp == "dict" and _plain(schema, "keys_schema", "values_schema") and (
            pa.types.is_map(kind)) and schema.get("keys_schema", {}).get("type") == "str" \
            and _plain(schema["keys_schema"]):
        value = _scalar(schema.get("values_schema", {}), kind.item_type)
        return None if value is None else _Plan("M", None, _map(value, kind))
    if tp == "model":
        model = _nested(schema, kind)
        return None if model is None else _Plan("M", model.json, model_decoder(model))
    return _scalar(schema, kind)


def _nested(schema: Mapping[str, Any], kind: Any) -> _Model | None:
    """A nested model (its fields stored by their names under ``M``)."""
    cls = schema.get("cls")
    if not pa.types.is_struct(kind) or not isinstance(cls, type):
        return None
    return model_plan(schema, {c.name: c for c in columns(cls)}, {}, frozenset(), kind)


def model_plan(schema: Mapping[str, Any], cols: Mapping[str, Column],
               stored: Mapping[str, str], keyed: frozenset[str], kind: Any = None
               ) -> _Model | None:
    """The plan of a model's core schema whose fields are ``cols`` (stored under
    ``stored`` names; ``keyed``: fields a key template gives, per row when missing), or
    ``None`` where any of it is not plain (see the module)."""
    if not _plain_model(schema, cols):
        return None
    out = []
    for name, spec in schema["schema"]["fields"].items():
        if not _plain_field(spec, renamed=bool(stored.get(name))):
            return None
        found = _field(spec["schema"], cols[name], stored.get(name, name),
                       name in keyed)
        if found is None:
            return None
        out.append((name, found))
    struct = kind if kind is not None else pa.struct([c.field for c in cols.values()])
    return _Model(tuple(out), struct)



def _plain_model(schema: Mapping[str, Any], cols: Mapping[str, Column]) -> bool:
    """Whether a model's core schema is a plain model of the fields ``cols``: no custom
    or post init, no root model, only :data:`_CONFIG` settings, no extra fields kept."""
    inner, config = schema.get("schema") or {}, schema.get("config") or {}
    return not (schema.get("type") != "model" or schema.get("custom_init")
                or schema.get("root_model") or schema.get("post_init")
                or inner.get("type") != "model-fields"
                or not set(config) <= _CONFIG or inner.get("extras_schema")
                or inner.get("extra_behavior") not in (None, "ignore")
                or list(inner.get("fields", {})) != list(cols))


def _plain_field(spec: Mapping[str, Any], renamed: bool) -> bool:
    """Whether a model field's schema is a plain one: aliases only where ``renamed``."""
    return spec.get("type") == "model-field" and set(spec) <= {
        "type", "schema", "metadata", *(("validation_alias", "serialization_alias")
                                        if renamed else ())}

def _field(schema: Mapping[str, Any], column: Column, attr: str, keyed: bool
           ) -> _Field | None:
    default = None
    if schema.get("type") == "default":
        if not _plain(schema, "schema", "default") or "default" not in schema:
            return None  # (a default factory, validate_default: per row when missing)
        value = schema["default"]
        if not keyed:
            convert = column.convert
            default = pa.scalar(None if value is None else convert(value) if convert
                                else value, column.type)
        schema = schema["schema"]
    found = _plan(schema, column)
    if found is None:
        return None
    return _Field(attr, found[0], found[1], default)


# -- decoding ---------------------------------------------------------------------------------
def _field_values(stored: Any, f: _Field) -> Any:
    """One field's column from its attributes' structs (null: the attribute missing)."""
    n = len(stored)
    names = {x.name for x in stored.type}
    if f.plan.json is None:  # (inferred: a map)
        tagged = pc.struct_field(stored, f.plan.tag) if f.plan.tag in names else pa.nulls(n)
    else:
        tagged = pc.struct_field(stored, f.plan.tag)
    if f.plan.tag in _SETS:
        tagged = _or_empty(stored, tagged)
    if "NULL" not in names or stored.field("NULL").null_count == n:
        # (no NULL: a row's tag is there only where its attribute is, so an attribute
        # without its tag is a null count above the attribute's)
        if tagged.null_count != stored.null_count:
            raise Unfit(f"{f.attr}: another tag, or two")
    else:
        _nulls_checked(stored, tagged, f)
    values = f.plan.decode(tagged)
    if not stored.null_count:
        return values
    present = stored.is_valid()
    if f.default is None:
        raise Unfit(f"{f.attr}: missing")
    if not f.default.is_valid:
        return values
    return pc.if_else(present, values, pa.repeat(f.default, n))


def _nulls_checked(stored: Any, tagged: Any, f: _Field) -> None:
    """:class:`Unfit` where a row's attribute holds both ``NULL`` and its tag, or
    neither, or ``NULL`` for a field that takes no ``None``."""
    present, has = stored.is_valid(), tagged.is_valid()
    null = pc.fill_null(pc.struct_field(stored, "NULL"), False)
    if (pc.any(pc.and_(has, null)).as_py() or pc.any(pc.and_(
            present, pc.invert(pc.or_(has, null)))).as_py()):
        raise Unfit(f"{f.attr}: another tag, or two")
    if pc.any(null).as_py() and not f.nullable:
        raise Unfit(f"{f.attr}: NULL")


def _or_empty(stored: Any, tagged: Any) -> Any:
    """A set's lists, an empty list (``{"L": []}``) as an empty set; a set stored as a
    list of members is per row."""
    empty = pc.struct_field(stored, "L")
    if empty.null_count != len(empty):
        if pc.any(pc.greater(pc.list_value_length(empty), 0)).as_py():
            raise Unfit("a set stored as a list")
        none = pa.array([[]], tagged.type)
        tagged = pc.if_else(empty.is_valid(), pa.repeat(none[0], len(tagged)), tagged)
    return tagged


def model_decoder(model: _Model) -> Callable[[Any], Any]:
    """What decodes ``M`` structs (the attributes of each row) into ``model``'s struct."""
    def decode(stored: Any) -> Any:
        if stored.null_count:  # (rows without the model: their fields are not asked)
            valid = stored.is_valid()
            inner = decode(stored.filter(valid))
            if not len(inner):
                return pa.array([None] * len(stored), model.type)
            # (under a null, a row's values: a non-nullable field holds no null, as
            # pyarrow fills it from Python's None)
            at = pc.max_element_wise(pc.subtract(pc.cumulative_sum(pc.cast(
                valid, pa.int64())), 1), 0)
            taken = inner.take(at)
            return pa.StructArray.from_arrays(
                [taken.field(n) for n in range(taken.type.num_fields)],
                fields=list(model.type), mask=pc.invert(valid))
        fields = [_field_values(pc.struct_field(stored, f.attr), f) for _, f in model.fields]
        return pa.StructArray.from_arrays(fields, fields=list(model.type),
                                          mask=stored.is_null())
    return decode


def _list(member: _Plan) -> Callable[[Any], Any]:
    def decode(lists: Any) -> Any:
        tagged = pc.struct_field(lists.values, member.tag)
        if tagged.null_count:
            raise Unfit("a list member of another tag, or NULL")
        return pa.ListArray.from_arrays(lists.offsets, member.decode(tagged),
                                        mask=lists.is_null())
    return decode


def _set(decode_member: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A set's members decoded, sorted (as the per-row way lists them), none twice."""
    def decode(lists: Any) -> Any:
        flat = lists.flatten()
        if flat.null_count:
            raise Unfit("a set member null")
        flat = decode_member(flat)
        parents = pc.list_parent_indices(lists)
        order = pc.sort_indices(pa.table({"p": parents, "v": flat}),
                                sort_keys=[("p", "ascending"), ("v", "ascending")])
        flat, parents = flat.take(order), parents.take(order)
        if len(flat) > 1 and pc.any(pc.and_(
                pc.equal(flat[1:], flat[:-1]), pc.equal(parents[1:], parents[:-1]))).as_py():
            raise Unfit("a set lists a member twice")
        offsets = _offsets(pc.fill_null(pc.list_value_length(lists), 0))
        return pa.ListArray.from_arrays(offsets, flat, mask=lists.is_null())
    return decode


def _map(value: _Plan, kind: Any) -> Callable[[Any], Any]:
    """A ``dict`` field's map from the struct the reader inferred: a key a row has is a
    member whose value is present; more than one a row is per row (their order)."""
    def decode(structs: Any) -> Any:
        n = len(structs)
        if pa.types.is_null(structs.type):
            return pa.nulls(n, kind)
        if not pa.types.is_struct(structs.type):
            raise Unfit("a map not a JSON object")
        keys = [f.name for f in structs.type]
        counts = pa.repeat(pa.scalar(0, pa.int32()), n)
        found = []
        for i, key in enumerate(keys):
            member = pc.struct_field(structs, [i])  # (by place: a key is any text, "." too)
            if not pa.types.is_struct(member.type) or [f.name for f in member.type] != [
                    value.tag] or member.type[0].type != value.json:
                raise Unfit("a map member of another tag, or two")
            has = member.is_valid()
            counts = pc.add(counts, pc.cast(has, pa.int32()))
            found.append((key, has, value.decode(pc.struct_field(member, value.tag))))
        if pc.any(pc.greater(counts, 1)).as_py():
            raise Unfit("a map of two keys or more (their order is the line's)")
        one_key = pa.nulls(n, pa.string())
        one_value = pa.nulls(n, kind.item_type)
        for key, has, decoded in found:
            one_key = pc.if_else(has, pa.scalar(key), one_key)
            one_value = pc.if_else(has, decoded, one_value)
        offsets = _offsets(pc.if_else(structs.is_valid(), counts, 0))
        keep = pc.fill_null(pc.is_valid(one_key), False)
        return pa.MapArray.from_arrays(offsets, one_key.filter(keep),
                                       one_value.filter(keep), type=kind,
                                       mask=structs.is_null())
    return decode


def _offsets(lengths: Any) -> Any:
    """A list array's offsets from its lists' lengths."""
    return pa.concat_arrays([pa.array([0], pa.int32()), pc.cast(
        pc.cumulative_sum(lengths), pa.int32())])


# -- a batch ----------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Entity:
    name: str
    model: _Model
    schema: Any
    versioned: bool = False


def _latest(items: Any, sk: str, history: bool) -> tuple[Any, list[int]]:
    """A versioned entity's rows (``items``): which are its latest copies (``v0_...``, or
    a sort key no version reads from: the entity's row, as the per-row way classifies
    them) and which its version rows left out (``history=False``; with it: per row,
    read into the history dataset). :class:`Unfit` for a sort key not text, or a row
    holding a version row's own attributes."""
    from dynaorm.codec import VERSION_KEYS, VERSION_TTL
    from dynaorm.keys import parse_version_sk

    keys = pc.struct_field(pc.struct_field(items, sk), "S")
    if keys.null_count or any(pc.struct_field(items, a).null_count != len(items)
                              for a in (VERSION_KEYS, VERSION_TTL)):
        raise Unfit("a sort key not text, or a version row's attributes")
    versions = [parse_version_sk(k) for k in keys.to_pylist()]
    latest = pa.array([v is None or v[0] == 0 for v in versions])
    left_out = [] if history else [n for n, v in enumerate(versions) if v and v[0] > 0]
    return latest, left_out


def _merged(a: Any, b: Any) -> Any:
    """Two explicit schemas' types as one (``None``: they disagree)."""
    if a == b:
        return a
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        out = {f.name: f.type for f in a}
        for f in b:  # (a field of b alone: merged with itself, its own type)
            both = _merged(out.get(f.name, f.type), f.type)
            if both is None:
                return None
            out[f.name] = both
        return pa.struct(list(out.items()))
    if pa.types.is_list(a) and pa.types.is_list(b):
        inner = _merged(a.value_type, b.value_type)
        return None if inner is None else pa.list_(inner)
    return None


#: what a batch decodes into: each entity's table of its rows and their lines' indices,
#: and the lines of version rows left out (``history=False``)
Decoded = tuple[dict[str, tuple[Any, list[int]]], list[int]]


def vector_decoder(type_attribute: str, entities: Mapping[str, tuple[type[Any], EntitySpec]],
                   sk: str | None = None, history: bool = False
                   ) -> Callable[[Sequence[bytes]], Decoded] | None:
    """What decodes a batch of a full export's lines: for each entity (``entities``: type
    name -> (the class its rows are read into, its spec)) whose rows of the batch it
    decodes exactly, the dataset's ``pyarrow.Table`` of them and their lines' indices;
    ``None`` when no entity can be read this way. A batch it cannot parse gives nothing
    (every line per row). A versioned entity's latest copies are read so (by the table's
    sort key ``sk``); its version rows are left out (their lines listed) unless
    ``history``, then read per row."""
    found, item = _readable(type_attribute, entities, sk)
    if not found:
        return None
    infer = any(f.plan.json is None for e in found for _, f in e.model.fields)
    options = pj.ParseOptions(explicit_schema=pa.schema([pa.field("Item", item)]),
                              unexpected_field_behavior="infer" if infer else "ignore")

    def decode(lines: Sequence[bytes]) -> Decoded:
        return _decode(lines, found, options, type_attribute, sk, history)
    return decode


def _readable(type_attribute: str, entities: Mapping[str, tuple[type[Any], EntitySpec]],
              sk: str | None) -> tuple[list[_Entity], Any]:
    """The entities of ``entities`` read by vectors, and the arrow type of an ``Item``
    holding all their attributes (the type attribute's and, for a table with a sort key,
    whether a row is a version's)."""
    from dynaorm.codec import VERSION_KEYS, VERSION_TTL

    found = []
    present = pa.struct([pa.field("NULL", pa.bool_())])  # (whether an attribute is there)
    item = pa.struct([pa.field(type_attribute, pa.struct([pa.field("S", pa.string())]))])
    if sk is not None:
        item = pa.struct([*item, pa.field(VERSION_KEYS, present),
                          pa.field(VERSION_TTL, present)])
    reserved = {type_attribute, VERSION_KEYS, VERSION_TTL, sk or ""}
    for name, (cls, spec) in entities.items():
        if spec.versioned and sk is None:
            continue
        read = _entity(name, cls, spec, item, sk, reserved)
        if read is not None:
            entity, item = read
            found.append(entity)
    return found, item


def _entity(name: str, cls: type[Any], spec: EntitySpec, item: Any, sk: str | None,
            reserved: set[str]) -> tuple[_Entity, Any] | None:
    """How vectors read one entity, and ``item`` widened by its attributes; ``None``
    when its model has no plan, its attributes clash with ``item``'s, or it stores one
    of the ``reserved`` attributes."""
    from dynaorm.jobs.stored import _inlined, _keyed

    cols = {c.name: c for c in columns(cls)}
    model = model_plan(_inlined(cls.__dict__.get("__pydantic_core_schema__") or {}),
                       cols, spec.renames, _keyed(spec))
    if model is None:
        return None
    stored = {f.attr for _, f in model.fields}
    both = _merged(item, model.json)
    if spec.versioned and both is not None:
        both = _merged(both, pa.struct([pa.field(sk, pa.struct([pa.field(
            "S", pa.string())]))]))
    if both is None or stored & reserved:
        return None
    return _Entity(name, model, pa.schema([c.field for c in cols.values()]),
                   spec.versioned), both


def _decode(lines: Sequence[bytes], found: list[_Entity], options: Any,
            type_attribute: str, sk: str | None, history: bool) -> Decoded:
    """What :func:`vector_decoder`'s decoder gives for a batch of lines."""
    data = b"\n".join(lines)
    try:
        parsed = pj.read_json(io.BytesIO(data), read_options=pj.ReadOptions(
            block_size=max(len(data) + 1, 1 << 20)), parse_options=options)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return {}, []
    if parsed.num_rows != len(lines):
        return {}, []
    items = parsed.column("Item").combine_chunks()
    kinds = pc.struct_field(pc.struct_field(items, type_attribute), "S")
    out, left_out = {}, []
    for entity in found:
        mask = pc.fill_null(pc.equal(kinds, entity.name), False)
        decoded = _entity_table(entity, items, mask, sk, history)
        if decoded is not None:
            table, where, versions = decoded
            everyone = pc.indices_nonzero(mask).to_pylist()
            out[entity.name] = (table, where.to_pylist())
            left_out += [everyone[n] for n in versions]
    return out, left_out


def _entity_table(entity: _Entity, items: Any, mask: Any, sk: str | None, history: bool
                  ) -> tuple[Any, Any, list[int]] | None:
    """One entity's rows of a batch (``mask``) as its dataset's table, their lines'
    indices, and which of them are versions left out; ``None`` when it has none there
    or they are read per row."""
    where = pc.indices_nonzero(mask)
    if not len(where):
        return None
    try:
        rows, versions = items.filter(mask), list[int]()
        if entity.versioned:
            assert sk is not None
            latest, versions = _latest(rows, sk, history)
            rows, where = rows.filter(latest), where.filter(latest)
        table = pa.Table.from_struct_array(model_decoder(entity.model)(rows))
    except (Unfit, pa.ArrowException, ValueError, TypeError):
        return None  # (this entity's rows of the batch: per row)
    if not table.schema.equals(entity.schema):
        return None
    return table, where, versions
