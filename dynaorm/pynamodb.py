"""The PynamoDB bridge: a dynaorm entity that reads and writes exactly a PynamoDB model's
items, so a team can move service by service (``pip install 'dynaorm[pynamodb]'``).

::

    from dynaorm.pynamodb import entity_from_pynamodb, table_from_pynamodb

    app = table_from_pynamodb(ThreadModel)           # keys, indexes, TTL, discriminator
    Thread = entity_from_pynamodb(ThreadModel, table=app)

    with Session(app) as s:
        thread = s.get(Thread, forum_name="dynamo", subject="bridge")

Every PynamoDB attribute maps to a pydantic field under the model's Python name, stored
under its ``attr_name`` (a pydantic alias, contract 14), in PynamoDB's own encoding:

==========================  =====================================================
PynamoDB                    dynaorm field
==========================  =====================================================
``UnicodeAttribute``        ``str``
``NumberAttribute``         ``int | float`` (a key: ``int | Decimal``)
``BinaryAttribute``         ``bytes`` (raw: ``legacy_encoding=False``)
``BooleanAttribute``        ``bool``
``UTCDateTimeAttribute``    aware UTC ``datetime``, stored as PynamoDB's string
                            ``2024-01-02T03:04:05.000006+0000``
``JSONAttribute``           any JSON value, stored as a JSON string
``MapAttribute``            a nested pydantic model (subclass) or a ``dict`` (raw)
``ListAttribute(of=...)``   ``list`` of the element's type
``Unicode/Number/Binary``   ``set`` of ``str`` / numbers / ``bytes`` (empty: left out,
``SetAttribute``            as PynamoDB does)
``TTLAttribute``            aware ``datetime``: the table's TTL attribute
``VersionAttribute``        ``int | None``: see :func:`versioned_save`
``DiscriminatorAttribute``  the table's ``type_attribute``; each class's value is its
                            entity's type name
``NullAttribute``           ``None``
==========================  =====================================================

The model's hash and range keys are the table's ``pk`` and ``sk`` attributes, with key
templates that are exactly the field (``"{forum_name}"``: the raw value, no prefix);
its GSIs and LSIs become the table's indexes with the same one-field templates.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from types import FunctionType
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, cast

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    PlainSerializer,
)

import dynaorm
from dynaorm import GSI, LSI, Condition, DynaormError, Entity, F, Table
from dynaorm.codec import Kind, fields_of, item_of, kinds

try:
    from pynamodb.attributes import (
        Attribute,
        BinaryAttribute,
        BinarySetAttribute,
        BooleanAttribute,
        DiscriminatorAttribute,
        DynamicMapAttribute,
        JSONAttribute,
        ListAttribute,
        MapAttribute,
        NullAttribute,
        NumberAttribute,
        NumberSetAttribute,
        TTLAttribute,
        UnicodeAttribute,
        UnicodeSetAttribute,
        UTCDateTimeAttribute,
        VersionAttribute,
    )
    from pynamodb.constants import DATETIME_FORMAT
    from pynamodb.indexes import Index, LocalSecondaryIndex
    from pynamodb.models import Model
except ModuleNotFoundError as exc:  # pragma: no cover - the extra is not installed
    raise ImportError("dynaorm.pynamodb needs PynamoDB: pip install 'dynaorm[pynamodb]'",
                      name=exc.name) from exc

if TYPE_CHECKING:
    from dynaorm import AsyncSession, Session, StagedUpdate

class PynamoDBEntity(Entity):
    """Base class of the entities :func:`entity_from_pynamodb` makes (abstract: no ``pk``).

    Type checkers see any attribute of such an entity as ``Any``: its fields are made at
    run time from the PynamoDB model.
    """

    #: the PynamoDB model class this entity was made from
    __pynamodb_model__: ClassVar[type[Model]]
    #: the field holding the model's VersionAttribute, if it has one
    __pynamodb_version__: ClassVar[str | None] = None

    if TYPE_CHECKING:  # the fields are made at run time: any field, any attribute
        def __init__(self, **data: Any): ...
        def __getattr__(self, name: str) -> Any: ...
        def __setattr__(self, name: str, value: Any) -> None: ...

    def to_pynamodb(self) -> Model:
        """This object as an instance of its PynamoDB model (the item it is stored as)."""
        return type(self).__pynamodb_model__.from_raw_data(item_of(self))

    @classmethod
    def from_pynamodb(cls, instance: Model) -> Any:
        """A new (unsaved) object of this entity holding the values of a PynamoDB model
        instance."""
        return cls.model_validate(fields_of(cls, instance.serialize(null_check=False)))


# -- value conversions (each both ways: what PynamoDB stores <-> what Python holds) --------
def utc_datetime_string(value: datetime) -> str:
    """A datetime as PynamoDB's ``UTCDateTimeAttribute`` stores it
    (``2024-01-02T03:04:05.000006+0000``; naive means UTC): compare such a field in ``F``
    conditions and filters with this string."""
    return str(_UTC_DATETIME.serialize(value))


#: PynamoDB's own encodings, asked (their methods are untyped)
_UTC_DATETIME: Any = UTCDateTimeAttribute()
_NUMBER_ATTR: Any = NumberAttribute()
_JSON_ATTR: Any = JSONAttribute()


def _to_datetime(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return _UTC_DATETIME.deserialize(value)
        except ValueError:
            return value  # pydantic's own parsing (ISO 8601) then decides
    return value


def _utc(value: datetime) -> datetime:
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def _to_ttl(value: Any) -> Any:
    if isinstance(value, timedelta):  # PynamoDB's relative expiry: from now
        return datetime.now(UTC).replace(microsecond=0) + value
    return value


def _plain_number(value: Any) -> Any:
    """A stored number as PynamoDB reads it (``json.loads``): an int when written without
    a fraction or exponent, else a float (dynaorm decodes those as ``Decimal``)."""
    return _NUMBER_ATTR.deserialize(str(value)) if isinstance(value, Decimal) else value


def _key_number(value: Any) -> Any:
    if isinstance(value, float):
        return int(value) if value.is_integer() else Decimal(repr(value))
    return value


def _plain(value: Any) -> Any:
    """Numbers inside a raw map, an untyped list or a number set as PynamoDB reads them."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, set | frozenset):
        return {_plain(v) for v in value}
    return _plain_number(value)


def _json_in(value: Any) -> Any:
    """A JSON field's text (stored, or given as a string) is parsed: a ``str`` given to a
    JSON field is JSON text, as PynamoDB stores it."""
    if isinstance(value, str | bytes):
        try:
            return _JSON_ATTR.deserialize(value)
        except ValueError:
            return value
    return value


def _empty_set_out(value: Any) -> Any:
    return value or None  # PynamoDB stores no empty set: the attribute is left out


def _map_out(value: BaseModel) -> dict[str, Any]:
    return value.model_dump(mode="python", by_alias=True, exclude_none=True)


_DATETIME = Annotated[datetime, BeforeValidator(_to_datetime), AfterValidator(_utc),
                      PlainSerializer(utc_datetime_string, when_used="unless-none")]
_NUMBER = Annotated[int | float, BeforeValidator(_plain_number)]
_KEY_NUMBER = Annotated[int | Decimal, BeforeValidator(_key_number)]
_JSON = Annotated[Any, BeforeValidator(_json_in), PlainSerializer(_JSON_ATTR.serialize)]
_ANY = Annotated[Any, BeforeValidator(_plain)]


# -- attribute -> field --------------------------------------------------------------------
def _kind(attr: Any, owner: str, name: str) -> type[Attribute[Any]]:
    """The attribute class whose encoding ``attr`` uses: a class a registered kind names
    (:attr:`dynaorm.codec.Kind.pynamodb`: registered ahead of the bridge's own), or one of
    :data:`_FIELD_TYPES`; a subclass that keeps its serialize/deserialize counts as it,
    typed maps as MapAttribute."""
    cls = type(attr)
    if isinstance(attr, MapAttribute) and not isinstance(attr, DynamicMapAttribute):
        return MapAttribute
    for known in (*(c for c in cls.__mro__ if _named(c) is not None), *_FIELD_TYPES):
        if isinstance(attr, known) and all(
                getattr(cls, m) is getattr(known, m) for m in ("serialize", "deserialize")):
            return known
    raise DynaormError(f"{owner}.{name}: {cls.__name__} has its own encoding; dynaorm's "
                       "bridge maps PynamoDB's built-in attribute types only (pass "
                       f"fields={{{name!r}: <annotation>}} to map it by hand)")


def _named(cls: type[Any]) -> Kind | None:
    """The registered kind that names attribute class ``cls`` (stored as dynaorm does)."""
    return next((k for k in kinds() if cls.__name__ in k.pynamodb), None)


#: where a typed MapAttribute class keeps its pydantic model (made once, at definition)
_NESTED = "__dynaorm_model__"


def _nested_model(map_cls: type[MapAttribute[Any, Any]], owner: str) -> type[BaseModel]:
    """A pydantic model for a typed MapAttribute subclass (made once per class)."""
    found: type[BaseModel] | None = map_cls.__dict__.get(_NESTED)  # not a parent's
    if found is not None:
        return found
    namespace: dict[str, Any] = {"__module__": map_cls.__module__,
                                 "__qualname__": map_cls.__qualname__,
                                 "model_config": ConfigDict(populate_by_name=True)}
    annotations = {}
    for name, attr in map_cls.get_attributes().items():
        if isinstance(attr, DiscriminatorAttribute):
            raise DynaormError(f"{owner}: polymorphic maps ({map_cls.__name__}.{name}) are "
                               "not supported by the bridge")
        annotations[name], namespace[name] = _field(attr, owner, name, key=None)
    namespace["__annotations__"] = annotations
    model = cast(type[BaseModel], type(map_cls.__name__, (BaseModel,), namespace))
    setattr(map_cls, _NESTED, model)
    return model


def _number(attr: Any, owner: str, name: str, key: str | None) -> Any:
    return _KEY_NUMBER if key == "N" else _NUMBER


def _map(attr: Any, owner: str, name: str, key: str | None) -> Any:
    if type(attr).is_raw():
        return dict[str, _ANY]
    return Annotated[_nested_model(type(attr), owner), PlainSerializer(_map_out)]


def _list(attr: Any, owner: str, name: str, key: str | None) -> Any:
    of = attr.element_type
    if of is None:
        return list[_ANY]
    sample = of(legacy_encoding=False) if issubclass(of, BinaryAttribute | BinarySetAttribute
                                                     ) else of()
    return list[_type(sample, owner, name, None)]  # type: ignore[misc]


def _no_field(attr: Any, owner: str, name: str, key: str | None) -> Any:
    raise DynaormError(f"{owner}.{name}: {type(attr).__name__} has no field type")


#: PynamoDB's attribute classes the bridge maps itself (subclasses before their bases):
#: each with its field's annotation, or the function that makes it of the attribute (its
#: owner's and field's names, its key type); PynamoDB's own encodings of datetimes,
#: numbers, JSON, sets and TTLs, the containers, the discriminator, the plain Unicode,
#: Binary and Boolean. A class a registered kind names is that kind's, ahead of these.
_FIELD_TYPES: dict[type[Attribute[Any]], Any] = {
    VersionAttribute: int,
    TTLAttribute: Annotated[datetime, BeforeValidator(_to_ttl)],
    UTCDateTimeAttribute: _DATETIME,
    JSONAttribute: _JSON,
    NullAttribute: None,
    UnicodeSetAttribute: Annotated[set[str], PlainSerializer(_empty_set_out)],
    NumberSetAttribute: Annotated[set[int | float], BeforeValidator(_plain),
                                  PlainSerializer(_empty_set_out)],
    BinarySetAttribute: Annotated[set[bytes], PlainSerializer(_empty_set_out)],
    DynamicMapAttribute: dict[str, _ANY],
    MapAttribute: _map,
    ListAttribute: _list,
    NumberAttribute: _number,
    DiscriminatorAttribute: _no_field,
    BooleanAttribute: bool,
    UnicodeAttribute: str,
    BinaryAttribute: bytes,
}


def _type(attr: Any, owner: str, name: str, key: str | None) -> Any:
    """The annotation of the field for ``attr`` (``key``: its key type, if a key)."""
    kind = _kind(attr, owner, name)
    if issubclass(kind, BinaryAttribute | BinarySetAttribute) and getattr(
            attr, "legacy_encoding", False):
        raise DynaormError(f"{owner}.{name}: legacy_encoding=True (PynamoDB 5's base64 "
                           "inside binary) is not supported: migrate it as PynamoDB's "
                           "'Upgrading Binary' guide says, then bridge it")
    found = _named(kind) or _FIELD_TYPES[kind]
    if isinstance(found, Kind):
        return found.python[0]
    return found(attr, owner, name, key) if isinstance(found, FunctionType) else found


def _field(attr: Any, owner: str, name: str, key: str | None,
           annotation: Any = None, table_key: bool = False) -> tuple[Any, Any]:
    """(annotation, pydantic FieldInfo) for one PynamoDB attribute (``key``: its key type
    when it is a table or index key; ``table_key``: a table key, always required)."""
    ann = _type(attr, owner, name, key) if annotation is None else annotation
    default = attr.default if attr.default is not None else attr.default_for_new
    optional = not table_key and (attr.null or isinstance(attr, VersionAttribute | NullAttribute))
    kwargs = {"alias": attr.attr_name} if attr.attr_name != name else {}
    if callable(default):
        kwargs["default_factory"] = default
    elif default is not None:
        kwargs["default"] = default
    elif optional:
        kwargs["default"] = None
    if optional and ann is not None:
        ann = ann | None
    return ann, Field(**kwargs)


# -- the table --------------------------------------------------------------------------
def _find(model: type[Model], test: Callable[[Attribute[Any]], bool]
          ) -> Attribute[Any] | None:
    """The model's first attribute that passes ``test`` (PynamoDB's public attribute map)."""
    return next((a for a in model.get_attributes().values() if test(a)), None)


def _discriminator(model: type[Model]) -> DiscriminatorAttribute | None:
    found = _find(model, lambda a: isinstance(a, DiscriminatorAttribute))
    return found if isinstance(found, DiscriminatorAttribute) else None


def _keys(attrs: Iterable[Attribute[Any]], owner: str
          ) -> tuple[Attribute[Any], Attribute[Any] | None]:
    """The hash and range key attributes among ``attrs`` (of a model or an index)."""
    found = list(attrs)
    hash_key = next((a for a in found if a.is_hash_key), None)
    if hash_key is None:
        raise DynaormError(f"{owner} has no hash key")
    return hash_key, next((a for a in found if a.is_range_key), None)


def _ttl_attr(model: type[Model]) -> Attribute[Any] | None:
    return _find(model, lambda a: isinstance(a, TTLAttribute))


def _indexes(model: type[Model]) -> dict[str, Index[Any]]:
    """The model's secondary indexes by index name (its Index class attributes)."""
    return {index.Meta.index_name: index for _, index in inspect.getmembers(
        model, lambda o: isinstance(o, Index))}


def _key_type(attr: Attribute[Any]) -> str:
    if attr.attr_type not in ("S", "N", "B"):
        raise DynaormError(f"key attribute {attr.attr_name!r} of type {attr.attr_type} "
                           "cannot be a DynamoDB key")
    return str(attr.attr_type)


def _projection(index: Index[Any]) -> Any:
    projection = index.Meta.projection
    if projection.projection_type == "INCLUDE":
        return list(projection.non_key_attributes)
    return str(projection.projection_type)


def _models_of(model: type[Model]) -> list[type[Model]]:
    """The model and every class registered on its discriminator (PynamoDB's own table
    schema merges their indexes)."""
    disc = _discriminator(model)
    if disc is None:
        return [model]
    return [model, *(c for c in disc.get_registered_subclasses(model) if c is not model)]


def table_from_pynamodb(model: type[Model], *, name: str | None = None,
                        endpoint_url: str | None = None, region: str | None = None,
                        **options: Any) -> Table:
    """A :class:`~dynaorm.Table` for the table of a PynamoDB model: its hash and range key
    attribute names and types, its GSIs and LSIs (with their projections), its TTL
    attribute, and its discriminator as the ``type_attribute`` (``None`` when the model
    has none: items are then matched by key shape). Name, endpoint and region default to
    the model's ``Meta`` (``table_name``, ``host``, ``region``); ``options`` go to
    ``Table`` (``client=`` to bind it to a :class:`~dynaorm.Client`, so that its entities
    commit together with other tables' in one transaction; or ``max_attempts``, ...)."""
    meta = model.Meta
    hash_key, range_key = _keys(model.get_attributes().values(), model.__name__)
    key_types = {a.attr_name: _key_type(a) for a in (hash_key, range_key) if a is not None}
    indexes = _table_indexes(model, key_types)
    disc = _discriminator(model)
    ttl = _ttl_attr(model)
    options.update(_where(model, endpoint_url, region, options.get("client")))
    return Table(name or meta.table_name, pk=hash_key.attr_name,
                 sk=None if range_key is None else range_key.attr_name,
                 indexes=list(indexes.values()),
                 type_attribute=None if disc is None else disc.attr_name,
                 key_types={a: t for a, t in key_types.items() if t != "S"} or None,
                 ttl=None if ttl is None else ttl.attr_name, **options)


def _table_indexes(model: type[Model], key_types: dict[str, str]) -> dict[str, GSI | LSI]:
    """The GSIs and LSIs of ``model`` and its discriminated subclasses (their key
    attributes' types added to ``key_types``)."""
    indexes: dict[str, GSI | LSI] = {}
    for klass in _models_of(model):
        for index_name, index in _indexes(klass).items():
            ih, ir = _keys(index.Meta.attributes.values(), index_name)
            for attr in (ih, ir):
                if attr is not None:
                    key_types[attr.attr_name] = _key_type(attr)
            if isinstance(index, LocalSecondaryIndex):
                assert ir is not None
                indexes[index_name] = LSI(index_name, sk=ir.attr_name,
                                          projection=_projection(index))
            else:
                indexes[index_name] = GSI(index_name, pk=ih.attr_name,
                                          sk=None if ir is None else ir.attr_name,
                                          projection=_projection(index))
    return indexes


def _where(model: type[Model], endpoint_url: str | None, region: str | None,
           client: Any) -> dict[str, Any]:
    """The endpoint and region a table of ``model`` connects to: the model's ``Meta``
    (``host``, ``region``) unless given, none when a ``client`` says where (given both:
    refused)."""
    if client is None:
        return {"endpoint_url": endpoint_url or getattr(model.Meta, "host", None),
                "region": region or getattr(model.Meta, "region", None)}
    if endpoint_url is not None or region is not None:
        raise DynaormError(f"{model.__name__}: client= and endpoint_url=/region= exclude each "
                           "other (the client says where requests go)")
    return {}


def _check_table(model: type[Model], table: Table) -> None:
    """Refuse a table whose layout is not the model's (reads would miss its items)."""
    owner = model.__name__
    hash_key, range_key = _keys(model.get_attributes().values(), owner)
    want = (hash_key.attr_name, None if range_key is None else range_key.attr_name)
    if (table.pk, table.sk) != want:
        raise DynaormError(f"{owner}: its keys are {want}, table {table.name!r} has "
                           f"({table.pk!r}, {table.sk!r}) (table_from_pynamodb makes a "
                           "matching table)")
    disc = _discriminator(model)
    want_type = None if disc is None else disc.attr_name
    if table.type_attribute != want_type:
        raise DynaormError(f"{owner}: its discriminator attribute is {want_type!r}, table "
                           f"{table.name!r} has type_attribute={table.type_attribute!r} "
                           "(PynamoDB's items would not be found)")
    ttl = _ttl_attr(model)
    if ttl is not None and table.ttl != ttl.attr_name:
        raise DynaormError(f"{owner}: its TTL attribute is {ttl.attr_name!r}, table "
                           f"{table.name!r} has ttl={table.ttl!r}")
    for index_name in _indexes(model):
        table.index(index_name)  # an index the table does not declare: DynaormError


def _template(field: str, attr: Attribute[Any]) -> str:
    """A key template that is exactly the field (a datetime in PynamoDB's format)."""
    if _kind(attr, "", field) is UTCDateTimeAttribute:
        return "{" + field + ":" + DATETIME_FORMAT + "}"
    return "{" + field + "}"


def _key_types(model: type[Model], table: Table) -> dict[str, str]:
    """Key attribute name -> its key type, for the table's keys and the keys of the
    model's indexes."""
    indexed = (a for name in _indexes(model) for a in table.key_attributes(name))
    return {a: table.key_type(a) for a in (table.pk, table.sk, *indexed) if a is not None}


def _entity_fields(model: type[Model], owner: str, key_types: Mapping[str, str],
                   overrides: dict[str, Any], table_keys: tuple[Any, Any],
                   disc: DiscriminatorAttribute | None
                   ) -> tuple[dict[str, str], dict[str, Any], dict[str, Any], str | None]:
    """A field for each attribute of the model but its discriminator: ``(attribute name
    -> field name, annotations, pydantic FieldInfos, the field of the model's
    VersionAttribute)``, fields by name. ``overrides`` (``fields=``) is emptied as its
    entries are used; one left over names no attribute of the model. ``table_keys``: the
    model's hash and range key attributes."""
    by_attr = {}
    annotations = {}
    infos = {}
    version = None
    for py_name, attr in model.get_attributes().items():
        if attr is disc:
            continue
        by_attr[attr.attr_name] = py_name
        table_key = attr is table_keys[0] or attr is table_keys[1]
        annotations[py_name], infos[py_name] = _field(
            attr, owner, py_name, key_types.get(attr.attr_name), overrides.pop(py_name, None),
            table_key)
        if isinstance(attr, VersionAttribute):
            version = py_name
    if overrides:
        raise DynaormError(f"{owner}: fields={sorted(overrides)} are not attributes of "
                           f"{model.__name__}")
    return by_attr, annotations, infos, version


def _index_templates(model: type[Model], owner: str, by_attr: Mapping[str, str],
                     pk: str) -> dict[str, tuple[str, str | None]]:
    """``Meta.indexes``: each index of the model with templates that are exactly its key
    fields (an LSI's partition key: the table's template ``pk``)."""
    indexes = {}
    for index_name, index in _indexes(model).items():
        ih, ir = _keys(index.Meta.attributes.values(), index_name)
        for index_key in (ih, ir):
            if index_key is not None and index_key.attr_name not in by_attr:
                raise DynaormError(f"{owner}: index {index_name!r} key {index_key.attr_name!r} "
                                   f"is no attribute of {model.__name__}")
        indexes[index_name] = (pk if isinstance(index, LocalSecondaryIndex)
                               else _template(by_attr[ih.attr_name], ih),
                               None if ir is None else _template(by_attr[ir.attr_name], ir))
    return indexes


def _entity_meta(model: type[Model], owner: str, table: Table, by_attr: Mapping[str, str],
                 hash_key: Attribute[Any], range_key: Attribute[Any] | None,
                 disc: DiscriminatorAttribute | None) -> dict[str, Any]:
    """The namespace of the entity's ``Meta``: its table, key templates that are exactly
    the key fields, the class's discriminator value as its type name, its indexes."""
    meta: dict[str, Any] = {"__module__": model.__module__, "__qualname__": f"{owner}.Meta",
                            "table": table, "pk": _template(by_attr[hash_key.attr_name],
                                                            hash_key)}
    if range_key is not None:
        meta["sk"] = _template(by_attr[range_key.attr_name], range_key)
    if disc is not None:
        value = disc.get_discriminator(model)
        if value is None:
            raise DynaormError(f"{model.__name__} has a discriminator but no value of its "
                               "own (class X(Base, discriminator='x')): bridge its classes")
        meta["type_name"] = str(value)
    indexes = {n: t for n, t in _index_templates(model, owner, by_attr, meta["pk"]).items()
               if not table.native(n)}  # (a native index of the table: no templates)
    if indexes:
        meta["indexes"] = indexes
    return meta


def entity_from_pynamodb(model: type[Model], *, table: Table | None = None,
                         name: str | None = None,
                         fields: Mapping[str, Any] | None = None) -> type[PynamoDBEntity]:
    """An entity class that reads and writes exactly the items of PynamoDB ``model``.

    ``table`` defaults to :func:`table_from_pynamodb` of the model (pass one table to
    every class of a polymorphic model); its keys, type attribute, TTL and indexes must
    be the model's. ``name`` is the class name (default: the model's). ``fields`` maps a
    Python attribute name to a field annotation of your own, for custom attribute
    classes (their own ``serialize``) the bridge cannot map.

    A polymorphic model (a ``DiscriminatorAttribute``) is bridged class by class; each
    class's discriminator value is its entity's type name.
    """
    owner = name or model.__name__
    table = table_from_pynamodb(model) if table is None else table
    _check_table(model, table)
    overrides = dict(fields or {})
    hash_key, range_key = _keys(model.get_attributes().values(), model.__name__)
    key_types = _key_types(model, table)
    disc = _discriminator(model)
    by_attr, annotations, infos, version = _entity_fields(
        model, owner, key_types, overrides, (hash_key, range_key), disc)
    meta = _entity_meta(model, owner, table, by_attr, hash_key, range_key, disc)
    namespace = {"__module__": model.__module__, "__qualname__": owner, **infos,
                 # (a class whose qualified name is inside the entity's: pydantic leaves
                 # it alone)
                 "Meta": type("Meta", (), meta), "__annotations__": annotations,
                 "__pynamodb_model__": model, "__pynamodb_version__": version}
    return cast(type[PynamoDBEntity], type(owner, (PynamoDBEntity,), namespace))


# -- optimistic locking: PynamoDB's VersionAttribute ---------------------------------------
def _version_field(obj: Entity) -> str:
    name = getattr(type(obj), "__pynamodb_version__", None)
    if not isinstance(name, str):
        raise DynaormError(f"{type(obj).__name__} has no PynamoDB VersionAttribute")
    return name


def _expected(obj: Entity, field: str) -> int | None:
    """The version the stored item must hold: the one loaded (whatever the object says
    now: staging twice after a failed commit conditions on the same version), else the
    object's own."""
    loaded = dynaorm.inspect(obj).loaded
    value = getattr(obj, field) if loaded is None else loaded.get(field)
    return None if value is None else int(value)


def _version_condition(field: str, expected: int | None, condition: Condition | None
                       ) -> Condition:
    """The stored version is ``expected`` (absent: ``None``), and ``condition`` holds."""
    own = F(field).not_exists() if expected is None else F(field) == expected
    return own if condition is None else own & condition


def versioned_save(session: Session | AsyncSession, obj: Entity, *,
                   condition: Condition | None = None, overwrite: bool = False) -> None:
    """Stage a save with PynamoDB's optimistic locking (``Model.save()``): the stored
    version must be the one loaded (absent for a new object), and the save writes the
    next one (1 for a new object). The object's version moves when it is staged; after
    a failed commit (``ConditionFailedError``: another writer, PynamoDB or dynaorm, saved
    a newer version), reload it. ``condition=`` is ANDed in."""
    field = _version_field(obj)
    expected = _expected(obj, field)
    object.__setattr__(obj, field, (expected or 0) + 1)
    session.save(obj, overwrite=overwrite,
                 condition=_version_condition(field, expected, condition))


def versioned_delete(session: Session | AsyncSession, obj: Entity, *,
                     condition: Condition | None = None) -> None:
    """Stage a delete with PynamoDB's optimistic locking (``Model.delete()``): only if the
    stored version is still the one loaded. ``condition=`` is ANDed in."""
    field = _version_field(obj)
    session.delete(obj, condition=_version_condition(field, _expected(obj, field), condition))


def versioned_update(session: Session | AsyncSession, obj: Entity) -> StagedUpdate[Any]:
    """Stage an update of a loaded object with PynamoDB's optimistic locking
    (``Model.update(actions)``): it adds 1 to the version, conditioned on the stored
    version being the one loaded. Add your actions to what it returns."""
    field = _version_field(obj)
    expected = _expected(obj, field)
    staged = session.update(obj)
    if expected is None:
        return staged.set(**{field: 1}).where(F(field).not_exists())
    return staged.add(**{field: 1}).where(F(field) == expected)
