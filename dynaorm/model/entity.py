"""The :class:`Entity` base class: a pydantic model mapped onto a table through ``Meta``."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict

from dynaorm._types import Item, PlainKey
from dynaorm.errors import DynaormError
from dynaorm.model.codec import decode_item, decode_value, encode_fields, encode_value
from dynaorm.model.keys import key_av, key_value
from dynaorm.model.spec import EntitySpec, build_spec, collect_meta
from dynaorm.model.state import InstanceState, new_state, shape_of, wire_values
from dynaorm.model.timestamps import declare_timestamps, encode_ttl

__all__ = ["Entity", "Versioned", "spec_of"]


class Entity(BaseModel):
    """Base class of every mapped entity. Declare keys and rules in an inner ``Meta``.

    Entities compare by field values, like any pydantic model; whether an object was
    loaded from the table is bookkeeping kept outside equality.
    """

    if TYPE_CHECKING:
        __dynaorm_spec__: ClassVar[EntitySpec | None]

    #: fields accept their name as well as their alias (stored names, contract 14)
    model_config = ConfigDict(populate_by_name=True)

    # Persistence bookkeeping lives in a slot, not a pydantic private attribute: it stays
    # out of equality, copies and validation (and validation is twice as fast without one).
    __slots__ = ("_dynaorm_slot",)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if collect_meta(cls).get("versioned"):
            annotations = cls.__dict__.get("__annotations__")  # noqa: RUF063 (must mutate)
            inherited = any("version" in getattr(b, "model_fields", {}) for b in cls.__mro__[1:])
            if annotations is not None and "version" not in annotations and not inherited:
                annotations["version"] = int
                # setattr, not `cls.version = 0`: type checkers would read that assignment
                # as a `version` attribute of every Entity (see Versioned).
                setattr(cls, "version", 0)  # noqa: B010
        declare_timestamps(cls, collect_meta(cls).get("timestamps"))

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        spec = build_spec(cls, frozenset(cls.model_fields))
        if spec is not None and spec.versioned:
            ann = cls.model_fields["version"].annotation
            if ann is not int:
                raise DynaormError(f"{cls.__name__}: a versioned entity's 'version' field "
                                   f"must be an int, not {ann!r}")
        cls.__dynaorm_spec__ = spec

    # -- persistence bookkeeping (internal) ---------------------------------------------
    @property
    def _dynaorm_state(self) -> InstanceState | None:
        """The stored state this object was loaded with or last written as (None: new)."""
        try:  # the slot's own descriptor: an unset slot never reaches pydantic's __getattr__
            state: InstanceState | None = _STATE_SLOT.__get__(self, type(self))
        except AttributeError:
            return None
        return state

    @_dynaorm_state.setter
    def _dynaorm_state(self, state: InstanceState | None) -> None:
        object.__setattr__(self, "_dynaorm_slot", state)

    def __copy__(self) -> Self:
        copy = super().__copy__()  # model_copy(): a copy of a loaded object is loaded too
        object.__setattr__(copy, "_dynaorm_slot", self._dynaorm_state)
        return copy

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copy = super().__deepcopy__(memo)
        object.__setattr__(copy, "_dynaorm_slot", self._dynaorm_state)  # immutable: shared
        return copy

    @property
    def _is_persisted(self) -> bool:
        return self._dynaorm_state is not None

    @classmethod
    def _from_item(cls, item: Item, spec: EntitySpec | None = None) -> Self:
        """Build an object from a stored item and mark it persisted."""
        load: Callable[[Item], Self] = _loader(cls, spec_of(cls) if spec is None else spec)
        return load(item)

    @classmethod
    def _from_items(cls, items: Iterable[Item], spec: EntitySpec | None = None
                    ) -> Iterator[Self]:
        """Objects from stored items, one at a time, each as :meth:`_from_item` builds it."""
        load_page: _PageLoader = _loaders(cls, spec_of(cls) if spec is None else spec)[1]
        return load_page(items)


_STATE_SLOT: Any = Entity.__dict__["_dynaorm_slot"]
#: a loader of a page of items: the objects, one at a time (a loop may stop early)
_PageLoader = Callable[[Iterable[Item]], Iterator[Any]]
_LOADERS: dict[type[Any], tuple[EntitySpec, Callable[[Item], Any], _PageLoader]] = {}


def _loader(cls: type[Any], spec: EntitySpec) -> Callable[[Item], Any]:
    """How an item of ``cls`` (described by ``spec``) loads, made once per class."""
    found = _LOADERS.get(cls)
    if found is not None and found[0] is spec:
        return found[1]
    return _loaders(cls, spec)[0]


def _loaders(cls: type[Any], spec: EntitySpec) -> tuple[Callable[[Item], Any], _PageLoader]:
    """How an item and a page of items of ``cls`` load, made once per class."""
    found = _LOADERS.get(cls)
    if found is not None and found[0] is spec:
        return found[1], found[2]
    load, load_page = _make_loader(cls, spec)
    _LOADERS[cls] = (spec, load, load_page)
    return load, load_page


def _make_loader(cls: type[Any], spec: EntitySpec
                 ) -> tuple[Callable[[Item], Any], _PageLoader]:
    # What every item needs is looked up here, once (a read loads its items in a loop).
    decode_fields = spec.decode_fields
    plain_names = spec.plain_field_names
    table = spec.table
    key_attrs = spec.table_key_attrs
    type_attr, type_name = table.type_attribute, spec.type_name
    versioned, typed_keys, renames = spec.versioned, bool(table.key_types), spec.renames
    loaded, set_state = InstanceState.loaded, _STATE_SLOT.__set__
    # an entity that overrides model_validate gets it called, as before
    custom_validate = (getattr(cls.model_validate, "__func__", None)
                       is not getattr(BaseModel.model_validate, "__func__", None))

    if (plain_names is not None and not custom_validate and not versioned
            and not typed_keys and not renames):
        # The common case, fused: the item's values are read once, for both the fields to
        # validate and the compact snapshot (decode_item + InstanceState.loaded in one).
        from_values = InstanceState.from_values
        # Per item shape (its attribute names, in order), made once: the shape, the fields
        # to validate and their positions, and (while every item of the shape has held
        # strings only: the common item) its generated loader (see _string_loader).
        plans: dict[tuple[str, ...], _Plan] = {}

        def plan_of(item: Item) -> _Plan:
            if len(plans) >= 4096:  # many shapes (sparse attributes): start over
                plans.clear()
            shape = shape_of(item, key_attrs, type_attr)
            names = shape.names
            fields = tuple(n for n in plain_names if n in names)
            field_at = tuple((n, names.index(n)) for n in fields)
            fast = None if shape.other_at else _string_loader(field_at, shape, type_name,
                                                              set_state)
            plan = plans[names] = (shape, fields, field_at, fast)
            return plan

        def load_plain(item: Item) -> Any:
            """An object from a stored item, marked persisted."""
            names = tuple(item)
            plan = plans.get(names)
            if plan is None:
                plan = plan_of(item)
            shape, fields, field_at, fast = plan
            if fast is not None:
                obj = fast(item, cls.__pydantic_validator__.validate_python)
                if obj is not None:
                    return obj
                # not strings only: from now on the shape's items mix types
                plans[names] = (shape, fields, field_at, None)
            values = wire_values(item)
            decoded = {}
            for name, at in field_at:
                value = values[at]
                decoded[name] = value if type(value) is str else decode_value(value)
            obj = cls.__pydantic_validator__.validate_python(decoded)
            set_state(obj, from_values(values, shape, decoded, type_name))
            return obj

        def load_page(items: Iterable[Item]) -> Iterator[Any]:
            """load_plain of each item, one at a time: its all-string branch runs here,
            with the validator bound once per page (one call per item)."""
            validate = cls.__pydantic_validator__.validate_python
            last: tuple[str, ...] | None = None  # the shape of the item before
            fast = None
            for item in items:
                names = tuple(item)
                # A page's items mostly share one shape, and items of one response
                # share the very name strings: this compare is by identity, cheaper
                # than hashing the names to look their plan up (~0.1 us an item).
                if names != last:
                    last = names
                    plan = plans.get(names)
                    fast = None if plan is None else plan[3]
                if fast is not None:
                    obj = fast(item, validate)
                    if obj is not None:
                        yield obj
                        continue
                yield load_plain(item)  # its long way (a new or mixed shape)
                last = None  # which made or changed its plan: look it up again

        return load_plain, load_page

    def load(item: Item) -> Any:
        """An object from a stored item, marked persisted."""
        decoded = decode_fields(item) if plain_names is None else decode_item(item, plain_names)
        # The model's own validator, as model_validate calls it (a documented attribute,
        # looked up each time: a model rebuild replaces it), without that wrapper's
        # keyword handling: a read validates every item it returns.
        obj = cls.model_validate(decoded) if custom_validate else (
            cls.__pydantic_validator__.validate_python(decoded))
        key, version = None, None  # None: the stored key, kept in the compact snapshot
        if versioned:
            key = spec.primary_key(obj.__dict__)
            version = obj.version
        elif typed_keys:  # number/binary keys: their rendered (typed) values
            key = {a: key_value(item[a]) for a in key_attrs}
        if renames:  # the snapshot shares values by stored attribute name
            decoded = {renames.get(n, n): v for n, v in decoded.items()}
        set_state(obj, loaded(item, decoded, key_attrs, type_attr, type_name, key, version))
        return obj

    def load_each(items: Iterable[Item]) -> Iterator[Any]:
        return map(load, items)

    return load, load_each


#: a plain entity's loader's plan of an item shape (see _make_loader)
_Plan = tuple[Any, tuple[str, ...], tuple[tuple[str, int], ...],
              "Callable[[Item, Callable[[Any], Any]], Any] | None"]


def _string_loader(field_at: tuple[tuple[str, int], ...], shape: Any, type_name: str,
                   set_state: Callable[[Any, InstanceState], None]
                   ) -> Callable[[Item, Callable[[Any], Any]], Any] | None:
    """The loader of an all-string item of ``shape``: ``load(item, validate)`` is the
    object, marked persisted (``None``, before anything else, when some value is not a
    string: the caller takes the long way).

    The same rule as the long way for such an item (the values are the strings, as
    ``wire_values`` gives them; the fields validated are ``{field: value}`` in
    ``field_at``'s order; the snapshot is ``compact_state(values, shape, type_name)``),
    generated per shape (as namedtuple and dataclasses generate their methods) so an
    item's values are unpacked into locals once, with no list, index or call per value:
    ``a0, a1, ... = item.values()``, ``v0 = a0['S']``, ``validate({'room': v2, ...})``,
    the state's tuple ``(v0, v1, ...)``. About a sixth less than the list-and-builder
    form it replaces (a 25-item page 37 -> 31 us, pydantic's own share ~10 us). Only
    field names (repr'd string literals) and integer positions go into the source.
    """
    n = len(shape.names)
    if not n:  # pragma: no cover (a stored item has its key)
        return None
    got = ", ".join(f"a{k}" for k in range(n))
    lines = ["def load(item, validate):",
             f"    {got}, = item.values()",
             "    try:  # a string attribute's string (KeyError: not one)"]
    lines += [f"        v{k} = a{k}['S']" for k in range(n)]
    lines += ["    except KeyError:",
              "        return None",
              "    obj = validate({" + ", ".join(f"{name!r}: v{int(at)}"
                                              for name, at in field_at) + "})"]
    if shape.type_at >= 0:  # one string for every item of the type
        lines.append(f"    if v{int(shape.type_at)} == type_name:")
        lines.append(f"        v{int(shape.type_at)} = type_name")
    if shape.pk_at >= 0:  # partition keys repeat over a query's items
        lines.append(f"    v{int(shape.pk_at)} = intern(v{int(shape.pk_at)})")
    lines += ["    state = new_state(InstanceState)",
              "    state._key = None",
              "    state._data = (" + "".join(f"v{k}, " for k in range(n)) + ")",
              "    state._shape = shape",
              "    state.version = None  # _rendered stays unset until item is first read",
              "    set_state(obj, state)",
              "    return obj"]
    scope: dict[str, Any] = {"type_name": type_name, "intern": sys.intern, "shape": shape,
                             "new_state": new_state, "InstanceState": InstanceState,
                             "set_state": set_state}
    exec("\n".join(lines), scope)  # names and positions only (see above)
    load: Callable[[Item, Callable[[Any], Any]], Any] = scope["load"]
    return load


class Versioned(Entity):
    """Base class of versioned entities: ``class Audit(Versioned): ...``.

    It declares the ``version: int`` field (0 until the first commit) and implies
    ``Meta.versioned = True``, so type checkers see ``version`` exactly on versioned
    entities. ``Meta.versioned = True`` on a plain :class:`Entity` works the same at run
    time, but then declare ``version: int = 0`` yourself for type checkers to know it.
    """

    # A marker rather than an inner Meta: a subclass's own Meta must not "override" one
    # (type checkers would flag it). spec.collect_meta reads it as Meta.versioned = True.
    __dynaorm_versioned__: ClassVar[bool] = True

    version: int = 0


def spec_of(cls: type[Any]) -> EntitySpec:
    """The spec of a concrete entity class (error for abstract ones or non-entities)."""
    spec: EntitySpec | None = getattr(cls, "__dynaorm_spec__", None)
    if spec is None or spec.cls is not cls:
        name = getattr(cls, "__name__", repr(cls))
        if isinstance(cls, type) and issubclass(cls, Entity):
            raise DynaormError(f"{name} is abstract (its Meta has no pk) and cannot be stored")
        raise DynaormError(f"{name} is not a dynaorm Entity")
    return spec


def encode_entity(obj: Entity, spec: EntitySpec, version: int | None = None,
                  key: PlainKey | None = None) -> Item:
    """The full stored item of ``obj`` (keys, index keys, discriminator, fields).

    ``key`` is the primary key when the caller has rendered it already.
    """
    data = obj.model_dump(mode="python")
    if version is not None:
        data["version"] = version
    if spec.ttl_field is not None:
        data[spec.ttl_field] = encode_ttl(data.get(spec.ttl_field), spec.name, spec.ttl_field)
    renames = spec.renames
    if renames:
        data = {renames.get(k, k): v for k, v in data.items()}
    try:  # encode_fields' rule, a plain str (the common value) answered inline
        item = {k: {"S": v} if type(v) is str else encode_value(v)
                for k, v in data.items() if v is not None}
    except DynaormError:
        encode_fields(data, spec.name)  # raises again, naming the field
        raise
    if len(item) != len(data):  # some value is None (the item leaves it out): NULLs
        for name in spec.null_fields:
            attr = renames.get(name, name) if renames else name
            if data.get(attr, 0) is None:
                item[attr] = {"NULL": True}
    values = obj.__dict__ if version is None else {**obj.__dict__, "version": version}
    for attr, text in (key or spec.primary_key(values)).items():
        item[attr] = {"S": text} if type(text) is str else key_av(text)
    if spec.indexes:
        table_keys = (spec.table.pk, spec.table.sk)
        for attr, text in spec.index_keys(values).items():
            if attr not in table_keys:  # an index reusing a table key (inverted) reads it
                item[attr] = {"S": text} if type(text) is str else key_av(text)
    type_attribute = spec.table.type_attribute
    if type_attribute is not None:
        item[type_attribute] = {"S": spec.type_name}
    return item
