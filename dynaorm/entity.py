"""The :class:`Entity` base class: a pydantic model mapped onto a table through ``Meta``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Self

from pydantic import BaseModel, PrivateAttr

from ._types import Item
from .codec import decode_item, encode_fields
from .errors import DynaormError
from .spec import EntitySpec, build_spec, collect_meta
from .state import InstanceState

__all__ = ["Entity", "spec_of"]


class Entity(BaseModel):
    """Base class of every mapped entity. Declare keys and rules in an inner ``Meta``.

    Entities compare by field values, like any pydantic model; whether an object was
    loaded from the table is bookkeeping kept outside equality.
    """

    if TYPE_CHECKING:
        __dynaorm_spec__: ClassVar[EntitySpec | None]

    _dynaorm_state: InstanceState | None = PrivateAttr(default=None)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if collect_meta(cls).get("versioned"):
            annotations = cls.__dict__.get("__annotations__")  # noqa: RUF063 (must mutate)
            inherited = any("version" in getattr(b, "model_fields", {}) for b in cls.__mro__[1:])
            if annotations is not None and "version" not in annotations and not inherited:
                annotations["version"] = int
                cls.version = 0  # type: ignore[attr-defined]

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

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BaseModel):
            return NotImplemented
        return (type(self) is type(other) and self.__dict__ == other.__dict__
                and self.__pydantic_extra__ == other.__pydantic_extra__)

    __hash__ = None  # type: ignore[assignment]

    # -- persistence bookkeeping (internal) ---------------------------------------------
    @property
    def _is_persisted(self) -> bool:
        return self._dynaorm_state is not None

    @classmethod
    def _from_item(cls, item: Item, state_version: int | None = None) -> Self:
        """Build an object from a stored item and mark it persisted."""
        spec = spec_of(cls)
        obj = cls.model_validate(decode_item(item, spec.field_names))
        key = {spec.table.pk: item[spec.table.pk]["S"]}
        if spec.table.sk is not None:
            key[spec.table.sk] = item[spec.table.sk]["S"]
        version = None
        if spec.versioned:
            version = obj.version if state_version is None else state_version  # type: ignore[attr-defined]
            key = spec.primary_key(obj.__dict__)
        obj._dynaorm_state = InstanceState(key, item, version)
        return obj


def spec_of(cls: type[Any]) -> EntitySpec:
    """The spec of a concrete entity class (error for abstract ones or non-entities)."""
    spec: EntitySpec | None = getattr(cls, "__dynaorm_spec__", None)
    if spec is None or spec.cls is not cls:
        name = getattr(cls, "__name__", repr(cls))
        if isinstance(cls, type) and issubclass(cls, Entity):
            raise DynaormError(f"{name} is abstract (its Meta has no pk) and cannot be stored")
        raise DynaormError(f"{name} is not a dynaorm Entity")
    return spec


def encode_entity(obj: Entity, spec: EntitySpec, version: int | None = None) -> Item:
    """The full stored item of ``obj`` (keys, index keys, discriminator, fields)."""
    data = obj.model_dump(mode="python")
    if version is not None:
        data["version"] = version
    item = encode_fields(data)
    values = obj.__dict__ if version is None else {**obj.__dict__, "version": version}
    for attr, text in spec.primary_key(values).items():
        item[attr] = {"S": text}
    for attr, text in spec.index_keys(values).items():
        item[attr] = {"S": text}
    item[spec.table.type_attribute] = {"S": spec.type_name}
    return item
