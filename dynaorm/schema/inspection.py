"""``dynaorm.inspect(obj)``: what an entity object remembers of the table, as a frozen
:class:`Inspection` record.

An object is *new* (built by the caller), *persisted* (returned by a read, or written by a
commit: it remembers the stored item) or *deleted* (a commit or a bulk call deleted it).
The record reports that status with what the object remembers: the field values it was
loaded with (the stored item decoded through the entity, as a read decodes it), its loaded
version, its table and the key of its stored item.

Pure: it reads the object's own state, sends nothing and changes nothing.
"""

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Literal

from dynaorm.errors import DynaormError
from dynaorm.schema.entity import Entity, encode_entity, raw_state, spec_of
from dynaorm.schema.spec import EntitySpec
from dynaorm.schema.table import TableSchema
from dynaorm.values.state import Deleted, InstanceState, MovedState

_MISSING: Any = object()


@dataclass(frozen=True, slots=True, repr=False)
class Inspection:
    """An entity object's persistence state, as :func:`dynaorm.inspect` found it.

    A snapshot: it does not follow the object afterwards (inspect it again after a commit).
    ``status`` is one of

    - ``"new"``: built by the caller (or only ever staged, or its commit failed); saving
      it inserts, and the commit fails with ``ItemExistsError`` if its key is taken;
    - ``"persisted"``: returned by a read, or written by a successful commit (or bulk
      call); saving it writes what changed since;
    - ``"deleted"``: a commit or a bulk call deleted its item; saving it again inserts,
      as for a new object.

    ``loaded``, ``version`` and ``changed`` describe what a persisted object remembers;
    they are ``None`` for a new or deleted one.
    """

    entity: type[Entity]
    """The object's entity class."""
    status: Literal["new", "persisted", "deleted"]
    """``"new"``, ``"persisted"`` or ``"deleted"`` (see the class)."""
    table: TableSchema
    """The :class:`~dynaorm.Table` the entity is stored in."""
    key: Mapping[str, Any] | None
    """The table key (key attribute -> value, plain Python values, read-only). Persisted:
    the key of the stored item it was loaded from or written to (the old key when it was
    read from its previous layout; for a versioned entity the latest copy's). New or
    deleted: the key a save would insert it at, rendered from its fields now (``None`` when
    they cannot render it, e.g. a key field is missing)."""
    loaded: Mapping[str, Any] | None
    """The field values it was loaded with, or last written by a commit: field name ->
    Python value, decoded from the stored item as a read decodes it (read-only; a fresh
    copy: compare it with the object's fields). ``None`` for a new or deleted object."""
    version: int | None
    """The version it was loaded with (or written by its last commit) of a versioned
    entity; ``None`` for other entities and for new or deleted objects."""
    changed: frozenset[str] | None
    """The fields a save would write: those whose stored value (as a save encodes it)
    differs from the loaded one. Fields no write stores (``exclude=True``) never count;
    timestamps a save stamps count only when set by hand. Empty right after a read or a
    commit; ``None`` for a new or deleted object (a save writes every field)."""
    previous_layout: bool
    """True when it was read from its entity's previous layout (``Meta.previous``) and not
    moved since: ``key`` is then its old key, and saving or deleting it moves it."""

    @property
    def new(self) -> bool:
        """``status == "new"``."""
        return self.status == "new"

    @property
    def persisted(self) -> bool:
        """``status == "persisted"``."""
        return self.status == "persisted"

    @property
    def deleted(self) -> bool:
        """``status == "deleted"``."""
        return self.status == "deleted"

    def __repr__(self) -> str:
        parts = [f"{self.entity.__name__} {self.status}",
                 f"key={None if self.key is None else dict(self.key)!r}"]
        if self.version is not None:
            parts.append(f"version={self.version}")
        if self.changed:
            parts.append(f"changed={sorted(self.changed)!r}")
        if self.previous_layout:
            parts.append("read from the previous layout")
        return f"<Inspection {', '.join(parts)}>"


def inspect(obj: Entity) -> Inspection:
    """The persistence state of an entity object: new, persisted or deleted; the values
    it was loaded with; its loaded version; its table and key (see :class:`Inspection`).

    ```python
    user = s.get(User, user_id="u1")
    user.full_name = "Ann B."
    state = dynaorm.inspect(user)
    state.status, state.loaded["full_name"], state.changed  # "persisted", "Ann", {"full_name"}
    ```

    Sends nothing. Raises :class:`~dynaorm.DynaormError` for anything but an object of a
    concrete entity class.
    """
    if not isinstance(obj, Entity):
        what = (f"the class {obj.__name__} (pass one of its objects)" if isinstance(obj, type)
                else f"a value of type {type(obj).__name__}")
        raise DynaormError(f"dynaorm.inspect() takes an entity object, not {what}")
    cls = type(obj)
    spec = spec_of(cls)  # (an abstract entity: a DynaormError naming it)
    state = raw_state(obj)
    if isinstance(state, InstanceState):
        before = _loaded_object(spec, state)
        loaded = {name: before.__dict__.get(name) for name in cls.model_fields}
        return Inspection(
            entity=cls, status="persisted", table=spec.table,
            key=MappingProxyType(dict(state.key)), loaded=MappingProxyType(loaded),
            version=state.version, changed=_changed(spec, obj, before),
            previous_layout=isinstance(state, MovedState))
    try:  # the table key a save would insert it at (None: its fields cannot render it)
        key = MappingProxyType(spec.primary_key(obj.__dict__))
    except (DynaormError, LookupError, TypeError, ValueError):
        key = None
    return Inspection(
        entity=cls, status="deleted" if isinstance(state, Deleted) else "new",
        table=spec.table, key=key, loaded=None, version=None, changed=None,
        previous_layout=False)


def _loaded_object(spec: EntitySpec, state: InstanceState) -> Any:
    """An object validated from the state's stored item, as a read validates it (an item
    read from the previous layout: as that read did)."""
    item = state.peek_item()  # (not .item: a loaded state would keep the rendering)
    data = spec.rules.before.values(spec, item) if isinstance(state, MovedState) else (
        spec.decode_fields(item))
    return spec.cls.model_validate(data)


def _changed(spec: EntitySpec, obj: Entity, before: Any) -> frozenset[str]:
    """The fields of ``obj`` a save would write over ``before`` (the loaded object): equal
    values are not compared further; differing ones count when their stored forms differ
    (a TTL stored in whole seconds, a serializer's output) or they are stored in the key."""
    now, then = obj.__dict__, before.__dict__
    differ = [n for n in spec.field_names  # (not fields no write stores: exclude=True)
              if (n not in spec.unstored or n in spec.key_only)
              and now.get(n, _MISSING) != then.get(n, _MISSING)]
    in_key = [n for n in differ if n in spec.key_only]  # (a different key: the item moves)
    stored = [n for n in differ if n not in spec.key_only]
    if stored:
        try:
            after, loaded = encode_entity(obj, spec), encode_entity(before, spec)
        except DynaormError:  # a value no write can store: it differs from the stored one
            return frozenset(differ)
        stored = [n for n in stored if after.get(spec.attr(n)) != loaded.get(spec.attr(n))]
    return frozenset(stored + in_key)
