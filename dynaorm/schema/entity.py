"""The :class:`Entity` base class: a pydantic model mapped onto a table through ``Meta``."""

import functools
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping, Sequence
from itertools import count, repeat
from types import MethodType
from typing import TYPE_CHECKING, Any, ClassVar, Self, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from dynaorm._types import Item, PlainKey, Reader
from dynaorm.errors import (
    DecryptionError,
    DynaormError,
    InvalidValueError,
    ItemDecodeError,
    KeyringError,
    OffloadError,
)
from dynaorm.schema.rules import Values, no_values
from dynaorm.schema.rules.indexes import UTC_TIME
from dynaorm.schema.rules.stamps import declare_timestamps
from dynaorm.schema.spec import EntitySpec, build_spec, collect_meta
from dynaorm.schema.table import TableSchema
from dynaorm.values.codec import binary_from_json, decode_item, encode_fields, encode_value
from dynaorm.values.fastload import Fast, collector_paused, fast_answer, fast_validator
from dynaorm.values.keys import key_av
from dynaorm.values.state import (
    Deleted,
    InstanceState,
    LoadedPage,
    answer_items,
    decoded_numbers,
)
from dynaorm.values.ttl import encode_ttl


class Entity(BaseModel):
    """Base class of every mapped entity. Declare keys and rules in an inner ``Meta``.

    Entities compare by field values, like any pydantic model; whether an object was
    loaded from the table is bookkeeping kept outside equality.
    """

    if TYPE_CHECKING:
        __dynaorm_spec__: ClassVar[EntitySpec | None]

    model_config = ConfigDict(populate_by_name=True)
    """pydantic's configuration: fields may be given by name or by alias."""

    # Persistence bookkeeping lives in a slot, not a pydantic private attribute: it stays
    # out of equality, copies and validation (and validation is twice as fast without one).
    __slots__ = ("_dynaorm_slot",)

    @classmethod
    def model_validate(cls, obj: Any, **options: Any) -> Self:
        """pydantic's ``model_validate``, nested models read by their field names too
        (``by_name=True`` unless told): a nested model's fields are stored under their
        names (a stored item and a model dump agree), and their aliases still read."""
        options.setdefault("by_name", True)
        return super().model_validate(obj, **options)

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
        version = cls.model_fields.get("version")
        if collect_meta(cls).get("versioned") and version is not None and (
                version.annotation is not int):  # (refused before the table records it)
            raise DynaormError(f"{cls.__name__}: a versioned entity's 'version' field "
                               f"must be an int, not {version.annotation!r}")
        cls.__dynaorm_spec__ = build_spec(cls, frozenset(cls.model_fields))

    # -- persistence bookkeeping (internal) ---------------------------------------------
    @property
    def _dynaorm_state(self) -> InstanceState | None:
        """The stored state this object was loaded with or last written as (None: new,
        or deleted: a deleted object is written as a new one)."""
        state = raw_state(self)
        return None if isinstance(state, Deleted) else state

    @_dynaorm_state.setter
    def _dynaorm_state(self, state: InstanceState | Deleted | None) -> None:
        _set_state(self, state)

    def __copy__(self) -> Self:
        copy = super().__copy__()  # model_copy(): a copy of a loaded object is loaded too
        _set_state(copy, raw_state(self))
        return copy

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        memo = {} if memo is None else memo
        copy = super().__deepcopy__(memo)
        state = raw_state(self)  # (immutable: shared, but for the members it knows, which
        if isinstance(state, InstanceState) and state.members:  # are the copy's own copies)
            known = state.members
            state = state.revised({})
            state.members = {a: {k: memo.get(id(m), m) for k, m in ms.items()} if isinstance(
                ms, dict) else tuple(memo.get(id(m), m) for m in ms) for a, ms in known.items()}
        _set_state(copy, state)
        return copy

    def __repr_args__(self) -> Iterator[tuple[str | None, Any]]:
        """The fields ``repr`` and ``str`` show, each as the entity's rules let a message
        show it (an encrypted field's value: ``<encrypted>``)."""
        spec = getattr(type(self), "__dynaorm_spec__", None)
        rules = None if spec is None or not spec.rules.redactors else spec.rules
        for name, value in super().__repr_args__():
            yield name, value if rules is None or name is None else rules.redact(name, value)

    def __getstate__(self) -> dict[Any, Any]:
        # pickled with its persistence state (a loaded object stays loaded: a task queue,
        # another process); the state pickles as its plain form (InstanceState.__reduce__)
        return {**super().__getstate__(), "_dynaorm_slot": raw_state(self)}

    def __setstate__(self, state: dict[Any, Any]) -> None:
        slot = state.pop("_dynaorm_slot", None)
        super().__setstate__(state)
        _set_state(self, slot)

    @classmethod
    def _from_item(cls, item: Item, spec: EntitySpec | None = None) -> Self:
        """Build an object from a stored item and mark it persisted."""
        spec = spec_of(cls) if spec is None else spec
        fast = _fast(cls, spec)
        obj: Self = _load(cls, spec, item, _validator(cls), None if fast is None else fast[0])
        return obj


#: an entity of one class, as the sessions and the reads take and give it (``T2``-``T4``:
#: the others of a read over several)
T = TypeVar("T", bound=Entity)
T2 = TypeVar("T2", bound=Entity)
T3 = TypeVar("T3", bound=Entity)
T4 = TypeVar("T4", bound=Entity)


#: the state slot's descriptor
_SLOT: Any = Entity.__dict__["_dynaorm_slot"]


def _set_state(obj: Entity, state: InstanceState | Deleted | None) -> None:
    # the slot is not a pydantic field: set as a plain attribute, past pydantic's __setattr__
    object.__setattr__(obj, "_dynaorm_slot", state)


def raw_state(obj: Entity) -> InstanceState | Deleted | None:
    """What ``obj``'s state slot holds: its state, :data:`~dynaorm.values.state.DELETED`
    after a committed delete, or ``None`` (new); ``obj._dynaorm_state`` reads ``DELETED``
    as ``None``."""
    try:  # (the slot itself: an unset one past pydantic's __getattr__, which costs a new
        # object about 5 us to refuse)
        state: InstanceState | Deleted | tuple[LoadedPage, int] | None = _SLOT.__get__(obj)
    except (AttributeError, TypeError):  # (TypeError: not an entity, as getattr's None)
        return None
    if type(state) is tuple:  # read from an answer's bytes: (its page, its place there)
        state = InstanceState.on_page(*state)
        object.__setattr__(obj, "_dynaorm_slot", state)
    assert not isinstance(state, tuple)
    return state


def _validator(cls: type[Any]) -> Callable[[dict[str, Any]], Any]:
    """How a load validates: the entity's own ``model_validate`` when it overrides it, else
    the model's validator as ``model_validate`` calls it (a documented attribute, read for
    each load: a model rebuild replaces it), without that wrapper's keyword handling."""
    if (getattr(cls.model_validate, "__func__", None)
            is not getattr(Entity.model_validate, "__func__", None)):
        return cls.model_validate  # type: ignore[no-any-return]
    return functools.partial(cls.__pydantic_validator__.validate_python, by_name=True)


def _fast(cls: type[Any], spec: EntitySpec) -> Fast | None:
    """The validator reading ``cls``'s items straight from their wire form
    (:mod:`dynaorm.values.fastload`), or ``None`` when every load is plain."""
    return fast_validator(cls, spec.renames, lambda: (
        not spec.unstored and spec.ttl_field is None and not spec.rules.transforms
        and all(k is UTC_TIME for k in spec.kinds.values())  # (read as a plain time)
        and not isinstance(_validator(cls), MethodType)))  # (the model's own validator)


def _load(cls: type[Any], spec: EntitySpec, item: Item,
          validate: Callable[[dict[str, Any]], Any],
          fast: Callable[[Item], Any] | None = None) -> Any:
    """An object of ``cls`` (described by ``spec``) from a stored item, marked persisted:
    through ``fast`` (from the wire form, as its rules decode it; the snapshot keeps the
    wire form of every attribute that is not a string) where it takes the item, else
    decoded then validated."""
    if fast is not None:
        read = spec.rules.decode(item) if spec.rules.decoders else item  # (plain: none)
        try:
            obj = fast(read)
        except ValidationError:
            pass  # not expressible there (or does not fit): the plain way says which
        else:
            return _mark_loaded(obj, spec, item, decoded_numbers(read, spec.stored_fields))
    plain_names = spec.plain_field_names
    try:
        decoded = spec.fill_from_keys(item, decode_item(item, plain_names)) if (
            plain_names is not None) else spec.decode_fields(item)
    except (ItemDecodeError, DecryptionError, KeyringError, OffloadError):
        raise  # (what a rule found: a key missing or forgotten, an object missing)
    except _MALFORMED as exc:  # an attribute value that is not DynamoDB's: never raw
        raise _decode_error(cls, spec, item, exc) from exc
    try:
        obj = validate(decoded)
    except ValidationError as exc:
        raise _decode_error(cls, spec, item, exc) from exc
    if spec.renames:  # the snapshot shares values by stored attribute name
        decoded = {spec.attr(n): v for n, v in decoded.items()}
    return _mark_loaded(obj, spec, item, decoded)


def _mark_loaded(obj: Any, spec: EntitySpec, item: Item, decoded: dict[str, Any]) -> Any:
    """``obj`` marked persisted as loaded from ``item`` (``decoded``: the values it was
    validated from, by stored attribute name, shared with the snapshot; see
    :meth:`InstanceState.loaded`)."""
    key_attrs = spec.table_key_attrs
    if spec.rules.transforms:  # the snapshot keeps what they stored (ciphertexts...)
        decoded = {}
    elif spec.rules.held and decoded:  # (and a rule's references, as stored)
        decoded = {k: v for k, v in decoded.items() if k not in spec.rules.held}
    key, version = None, None  # None: the stored key, kept in the compact snapshot
    if spec.versioned:
        key = spec.primary_key(obj.__dict__)
        version = obj.version
    elif spec.table.key_types:  # number/binary keys: their rendered (typed) values
        key = spec.stored_key(item)
    members = spec.members_of(obj.__dict__) if spec.item_tree.holds_lists else None
    _set_state(obj, InstanceState.loaded(item, decoded, key_attrs, spec.table.type_attribute,
                                         spec.type_name, key, version, members))
    return obj


class LoadedItems(list[Any]):
    """The ``Items`` of an answer read by a reader of :func:`answer_reader`: the objects
    themselves, validated and marked persisted, items of other types left out (a read
    hands them on as they are)."""

    __slots__ = ()


def answer_reader(types: Mapping[str, tuple[type[Any], EntitySpec]],
                  admit: Mapping[str, Callable[[list[str]], bool]] | None = None,
                  hold: Mapping[str, Callable[[list[Any]], bool]] | None = None
                  ) -> Reader | None:
    """How one read of the entity ``types`` (type name -> (class, spec); every item of
    its answers one of them, told apart by the type attribute) reads an answer's checked
    bytes itself (a Query's or Scan's ``Items``, a GetItem's ``Item``, a BatchGetItem's
    ``Responses``, with their stored ``Keys``): the whole answer validated in one
    pydantic-core call (:func:`~dynaorm.values.fastload.fast_answer`), each object marked
    persisted with a state kept on the page's bytes (:meth:`InstanceState.on_page`);
    ``None`` for an answer it declines (an item of its types the fast way refuses, an
    item whose type attribute is not a string, an item of another type read by key: then
    that answer and every later one of the read decode the plain way, so errors stay the
    plain path's). ``None`` when some type is not for it (no fast validator, a rule that
    decodes its rows or keeps some from the results, number or binary keys, stored names,
    a TTL). A scoped read's answer is read so only when each result's stored partition
    key passes ``admit`` of its type (type name -> a test of a list of keys' texts;
    ``None``: keys not asked) and its objects pass ``hold`` (type name -> a test of a list of its
    objects: their scope fields), else the plain way, which leaves out what they
    refuse."""
    specs = [spec for _, spec in types.values()]
    type_attr = specs[0].table.type_attribute if specs else None
    # (a placing rule's references are maps, which the fast way never reads: an answer
    # holding one is declined, and read the plain way, its references fetched first)
    if type_attr is None or any(spec.rules.opaque or spec.rules.keepers or spec.renames
                                or spec.table.key_types or spec.table.ttl for spec in specs):
        return None
    key_attrs, table = specs[0].table_key_attrs, specs[0].table
    validate = fast_answer(type_attr, {name: (cls, _fast(cls, spec))
                                       for name, (cls, spec) in types.items()}, key_attrs,
                           None if admit is None else table.pk)
    if validate is None:
        return None
    fields, lists = {}, {}  # (one loop, no call of its own: on every read's path)
    for name, (cls, spec) in types.items():
        fields[name] = spec.field_names
        if spec.item_tree.holds_lists:
            lists[cls] = spec.members_of
    refused = False
    admits, only, holds = None, None, None  # (unscoped: no call made for them)
    if admit is not None or hold is not None:
        admits, only, holds = _scope_tests(types, admit, hold)

    def read(data: bytes) -> dict[str, Any] | None:
        nonlocal refused
        if refused:
            return None
        try:
            answer = validate(data)
        except ValidationError:
            refused = True  # (its later pages most likely hold the same: not tried again)
            return None
        pks = None if admits is None else answer.pop("Pks", None)
        objs = answer_items(answer)
        if objs:
            page = LoadedPage(data, key_attrs, type_attr, fields)
            places: Iterable[int] = count()
            if dict in map(type, objs):  # items of other types: not results of a query
                kept = _of_types(answer, objs, types, table)
                if type(kept) is not tuple:
                    refused = kept == "refused"
                    return None
                places, objs = kept
            if admits is not None and not _admitted(admits, only, pks, objs, places):
                return None  # (another scope's key, or no keys read: the plain way)
            if holds is not None and not _held(holds, objs):
                return None  # (a stale key: fields of another scope; the plain way)
            # each object marked persisted, in C: (its page, its place), made its state
            # (InstanceState.on_page) when first asked for (raw_state)
            slots: Iterable[tuple[Any, ...]] = zip(repeat(page), places)
            if lists:  # (and the members of its lists of nested models: see InstanceState)
                slots = [(page, at, (members := lists.get(type(o))) and members(o.__dict__))
                         for o, at in zip(objs, places, strict=False)]
            deque(map(object.__setattr__, objs, repeat("_dynaorm_slot"), slots), maxlen=0)
            if "Items" in answer:
                answer["Items"] = LoadedItems(objs)
        last = answer.get("LastEvaluatedKey")
        if type(last) is dict:  # (an index's binary key: bytes, as the wire decodes it)
            answer["LastEvaluatedKey"] = binary_from_json(last)
        return answer

    return collector_paused(read)  # (see there: the page's objects made at once)


def _of_types(answer: Mapping[str, Any], objs: list[Any],
              types: Mapping[str, tuple[type[Any], EntitySpec]], table: TableSchema
              ) -> tuple[list[int], list[Any]] | str | None:
    """The places and objects of an answer's items of ``types`` among others' (left as
    dicts by the fast way): ``"refused"`` when it is no query's (or holds an item of its
    types the fast way refuses: the read's later answers are read the plain way too),
    ``None`` when an item's type name no class may claim (the plain read tells)."""
    if "Items" not in answer or any(type(o) is dict and o["type"] in types for o in objs):
        return "refused"
    if any(type(o) is dict and o["type"] not in table.entities for o in objs):
        return None  # (an item left as a dict whose type name no class may claim)
    places = [at for at, o in enumerate(objs) if type(o) is not dict]
    return places, [objs[at] for at in places]


def _scope_tests(types: Mapping[str, tuple[type[Any], EntitySpec]],
                 admit: Mapping[str, Callable[[list[str]], bool]] | None,
                 hold: Mapping[str, Callable[[list[Any]], bool]] | None) -> tuple[
        dict[type[Any], Callable[[list[str]], bool]] | None,
        Callable[[list[str]], bool] | None, dict[type[Any], Callable[[list[Any]], bool]] | None]:
    """A scoped read's tests by class (see :func:`answer_reader`): its keys' (``admits``),
    the one test when it reads one type (``only``), its objects' (``holds``)."""
    admits = None if admit is None else {cls: admit[name] for name, (cls, _) in types.items()}
    only = None if admits is None or len(admits) != 1 else next(iter(admits.values()))
    holds = None if hold is None else {cls: hold[name] for name, (cls, _) in types.items()}
    return admits, only, holds


def _admitted(admits: Mapping[type[Any], Callable[[list[str]], bool]],
              only: Callable[[list[str]], bool] | None, pks: list[Any] | None,
              objs: list[Any], places: Iterable[int]) -> bool:
    """Whether every result ``objs`` of a scoped answer (at ``places`` of its items) has
    its stored partition key (``pks``, read beside them) in the scope; ``False`` when no
    keys were read (an Item or Responses: the plain way)."""
    if pks is None:
        return False
    if only is not None and type(places) is count:
        return only(pks)
    return all(admits[type(o)]([pks[at]]) for o, at in zip(objs, places, strict=False))


def _held(holds: Mapping[type[Any], Callable[[list[Any]], bool]], objs: list[Any]) -> bool:
    """Whether every result ``objs`` of a scoped answer holds the scope in its fields."""
    if len(holds) == 1:
        return next(iter(holds.values()))(objs)
    return all(holds[type(o)]([o]) for o in objs)



#: what decoding an attribute value that is not of DynamoDB's shapes raises (``{"N":
#: "abc"}``, ``{"L": 5}``, an unknown tag, a bare string): an ItemDecodeError instead
_MALFORMED = (ValueError, TypeError, KeyError, AttributeError, ArithmeticError, DynaormError)


def _decode_error(cls: type[Any], spec: EntitySpec, item: Item,
                  exc: ValidationError | Exception) -> ItemDecodeError:
    """The typed error for a stored item that does not fit ``cls``, naming its key."""
    try:
        key = spec.stored_key(item)
    except _MALFORMED:  # (a malformed key attribute: named as it was read)
        key = {a: repr(item[a]) for a in spec.table_key_attrs if a in item}
    problems = ("; ".join(f"{'.'.join(str(p) for p in e['loc']) or '(item)'}: "
                          + (e["type"] if e["loc"][:1] and e["loc"][0] in spec.encrypted
                             else e["msg"])  # (a validator's message may quote plaintext)
                          for e in exc.errors()[:3]) if isinstance(exc, ValidationError)
                else f"a malformed attribute value ({type(exc).__name__}: {exc})")
    return ItemDecodeError(f"the stored item {key} does not fit {cls.__name__}: {problems}",
                           entity=cls, key=key)


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
    """The entity's version: 0 until its first commit, then 1, 2, ... (one per committed
    change)."""


def prepare_rows(specs: Iterable[EntitySpec], items: Sequence[Any], writing: bool = False,
                 values: Values = no_values) -> Generator[Any, Any, None]:
    """What the rules of ``specs`` (each once) need before stored rows ``items`` are
    decoded, asked for (a protocol: :meth:`~dynaorm.schema.rules.Rule.prepare`, key
    material as steps; ``writing``: before rows of theirs are encoded too, and the values
    they render into keys, ``values()``). Items that are not rows (objects read from an
    answer's bytes) are skipped; a spec whose rules prepare nothing costs one check."""
    rows = None
    for spec in {id(s): s for s in specs}.values():
        if spec.rules.preparers:
            if rows is None:
                rows = tuple(i for i in items if type(i) is dict)
            yield from spec.rules.prepare(rows, writing, values)


def preparing(table: Any) -> tuple[EntitySpec, ...]:
    """The specs of ``table``'s entities whose rules prepare (what a row read from the
    table for a write, of whichever entity, is prepared for)."""
    return tuple(s for e in list(table.entities.values())
                 if (s := e.__dynaorm_spec__).rules.preparers)


def spec_of(cls: type[Any]) -> EntitySpec:
    """The spec of a concrete entity class: what dynaorm compiled of its declaration (its
    table, type name, key templates, indexes, stored names, rules), as the model's
    functions (:func:`~dynaorm.schema.model.patterns_of`, ...), exporters and the MCP
    server read it. A :class:`~dynaorm.DynaormError` for an abstract class or a class that
    is no entity."""
    spec: EntitySpec | None = getattr(cls, "__dynaorm_spec__", None)
    if spec is None or spec.cls is not cls:
        name = getattr(cls, "__name__", repr(cls))
        if isinstance(cls, type) and issubclass(cls, Entity):
            raise DynaormError(f"{name} is abstract (its Meta has no pk) and cannot be stored")
        raise DynaormError(f"{name} is not a dynaorm Entity")
    return spec


def _field_data(obj: Entity, spec: EntitySpec, version: int | None) -> dict[str, Any]:
    """The field values ``obj`` stores, by stored attribute name (plain Python, ``None``s
    included): key-only fields left out, ``version`` and the TTL as stored."""
    data = obj.model_dump(mode="python")  # (exclude=True fields are left out here)
    for name in spec.key_only:  # Meta.key_only: stored inside the key only
        data.pop(name, None)
    if version is not None:
        data["version"] = version
    if spec.ttl_field is not None:
        data[spec.ttl_field] = encode_ttl(data.get(spec.ttl_field), spec.name, spec.ttl_field)
    renames = spec.renames
    if renames:
        data = {renames.get(k, k): v for k, v in data.items()}
    return data


def _store_kinds(item: Item, data: dict[str, Any], spec: EntitySpec) -> None:
    """The fields of a field-level kind, stored its way (a value it refuses names its
    field)."""
    for name, kind in spec.kinds.items():
        attr = spec.attr(name)
        if data.get(attr) is not None:
            try:
                item[attr] = kind.encode(data[attr])
            except InvalidValueError as exc:
                raise InvalidValueError(f"{spec.name} field {name!r}: {exc}") from None


def _store_index_keys(item: Item, values: dict[str, Any], spec: EntitySpec) -> None:
    """The keys of ``spec``'s indexes, rendered from ``values`` (an index that reuses a
    table key, an inverted one, reads the table's)."""
    table_keys = (spec.table.pk, spec.table.sk)
    for attr, text in spec.index_keys(values).items():
        if attr not in table_keys:
            item[attr] = {"S": text} if type(text) is str else key_av(text)


def encode_entity(obj: Entity, spec: EntitySpec, version: int | None = None,
                  key: PlainKey | None = None) -> Item:
    """The full stored item of ``obj`` (keys, index keys, discriminator, fields).

    ``key`` is the primary key when the caller has rendered it already.
    """
    data = _field_data(obj, spec, version)
    try:  # encode_fields' rule, a plain str (the common value) answered inline
        item = {k: {"S": v} if type(v) is str else encode_value(v)
                for k, v in data.items() if v is not None}
    except DynaormError:
        encode_fields(data, spec.name)  # raises again, naming the field
        raise
    if len(item) != len(data):  # some value is None (the item leaves it out): stored as
        for name in spec.null_fields:  # NULL where its None must be kept (null_fields)
            attr = spec.attr(name)
            if data.get(attr, 0) is None:
                item[attr] = {"NULL": True}
    if spec.kinds:
        _store_kinds(item, data, spec)
    values = obj.__dict__ if version is None else {**obj.__dict__, "version": version}
    key = key or spec.primary_key(values)
    for attr, text in key.items():
        item[attr] = {"S": text} if type(text) is str else key_av(text)
    if spec.indexes:
        _store_index_keys(item, values, spec)
    type_attribute = spec.table.type_attribute
    if type_attribute is not None:
        item[type_attribute] = {"S": spec.type_name}
    # (a plain entity's rules encode nothing; a placing rule's only a row with a held value
    # it may place: it keeps the stored reference of a value it would place anew. A value
    # whose payload is not a string or bytes, a map above all, may be placed; a string's
    # UTF-8 bytes are at most 4 a character)
    rules = spec.rules
    encodes = rules.encode_view
    for attr in rules.held & item.keys():
        (value,) = item[attr].values()
        encodes |= type(value) not in (str, bytes) or 4 * len(value) > spec.table.offload_threshold
    if encodes:  # (the item loaded, where the object was: a deleted one's state has none)
        rules.encode(item, key, getattr(raw_state(obj), "item", None))
    return item
