"""What dynaorm stores, public (contract 24, "One public door"): the registry of the kinds
of value a field holds (:class:`Kind`, :func:`kinds`, and :func:`register` with
:func:`stored_as` for a class of your own: the guide's "Field types, and adding one"), and
an entity object's stored item both ways (:func:`item_of`, :func:`fields_of`), for code
outside dynaorm that reads or writes items itself (a bridge to another library, an
exporter). Pure: it sends nothing; a session reads and writes items."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dynaorm.schema.entity import Entity, encode_entity, spec_of
from dynaorm.values.codec import Kind, kinds, register, stored_as

__all__ = ["Kind", "fields_of", "item_of", "kinds", "register", "stored_as"]


def item_of(obj: Entity) -> dict[str, Any]:
    """The item ``obj`` is stored as (DynamoDB JSON): its keys, its index keys, the type
    attribute and its fields, encoded as a save encodes them now (what the rules add
    when writing, a revision or a version, is not in it)."""
    return encode_entity(obj, spec_of(type(obj)))


def fields_of(entity: type[Entity], item: Mapping[str, Any]) -> dict[str, Any]:
    """The field values a stored item of ``entity`` (DynamoDB JSON) holds, by field name,
    decoded as a read decodes them (through the entity's rules: a compressed field
    expanded, an encrypted one decrypted): ``entity.model_validate(...)`` makes a new
    object of them."""
    return spec_of(entity).decode_fields(dict(item))
