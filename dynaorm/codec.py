"""What dynaorm stores, public (contract 24, "One public door"): the registry of the kinds
of value a field holds (:class:`Kind`, :func:`kinds`, and :func:`register` with
:func:`stored_as` for a class of your own: the guide's "Field types, and adding one"), an
entity object's stored item both ways (:func:`item_of`, :func:`fields_of`), an item's
values with no entity (:func:`decode_item`), DynamoDB's count of its size
(:func:`item_size`, :func:`value_size`, :data:`MAX_ITEM_BYTES`), which key sealed a value
(:func:`sealed_by`), and how dynaorm's own rows
of an entity are stored (a unique guard's type, :data:`GUARD_TYPE`; what a version row
keeps aside, :data:`VERSION_TTL` and :data:`VERSION_KEYS`; its sort key read back,
:func:`dynaorm.keys.parse_version_sk`), for code outside dynaorm that reads or writes items
itself (a bridge to another library, an exporter, inference, a test engine). Pure: it
sends nothing; a session reads and writes items."""

from collections.abc import Mapping
from typing import Any

from dynaorm.errors import KeyringError, OffloadError
from dynaorm.schema.entity import Entity, encode_entity, spec_of
from dynaorm.schema.rules import Unplaced
from dynaorm.schema.rules.encrypted import header_of
from dynaorm.schema.rules.keyrings import NotPrepared
from dynaorm.schema.rules.offloaded import reference
from dynaorm.schema.rules.versioned import VERSION_KEYS, VERSION_TTL
from dynaorm.values.codec import Kind, decode_item, kinds, register, stored_as
from dynaorm.values.keys import GUARD_TYPE
from dynaorm.values.limits import MAX_ITEM_BYTES, item_size, value_size

__all__ = ["GUARD_TYPE", "MAX_ITEM_BYTES", "VERSION_KEYS", "VERSION_TTL", "Kind", "decode_item",
           "fields_of", "item_of", "item_size", "kinds", "register", "sealed_by", "stored_as",
           "value_size"]


def item_of(obj: Entity) -> dict[str, Any]:
    """The item ``obj`` is stored as (DynamoDB JSON): its keys, its index keys, the type
    attribute and its fields, encoded as a save encodes them now (what the rules add
    when writing, a revision or a version, is not in it)."""
    return encode_entity(obj, spec_of(type(obj)))


def fields_of(entity: type[Entity], item: Mapping[str, Any]) -> dict[str, Any]:
    """The field values a stored item of ``entity`` (DynamoDB JSON) holds, by field name,
    decoded as a read decodes them (through the entity's rules: a compressed field
    expanded, an encrypted one decrypted): ``entity.model_validate(...)`` makes a new
    object of them. It sends nothing: a value kept in S3 (``Offloaded``) is an
    :class:`~dynaorm.OffloadError` naming it, a value sealed under a key this process has
    not unwrapped (a KMS ``Decrypt`` no read asked yet) a :class:`~dynaorm.KeyringError`
    (a session's read asks for both)."""
    try:
        return spec_of(entity).decode_fields(dict(item))
    except Unplaced as exc:
        raise OffloadError(f"{exc}: fields_of sends nothing; read it through a session"
                           ) from None
    except NotPrepared as exc:
        raise KeyringError(f"{exc}: fields_of sends nothing; read it through a session",
                           key_id=str(getattr(spec_of(entity).table.keyring, "key_id", "?"))
                           ) from None


def sealed_by(value: Mapping[str, Any]) -> str | None:
    """The id of the key that sealed ``value`` (a stored attribute value, DynamoDB JSON as
    botocore gives it: ``{"B": ...}``) when ``Encrypted`` sealed it, else ``None``: which
    attributes are sealed, and which values a key still holds. A value kept in S3 (a row's
    reference to its object) is :class:`~dynaorm.OffloadError` naming the object: its
    bytes, not the row, hold the seal (ask of ``{"B": <the object's bytes>}``)."""
    found = header_of(value)
    if found is None and (ref := reference(value)) is not None:
        raise OffloadError("sealed_by: the value is kept in S3; whether it is sealed, and "
                           "by which key, is in its object: ask of {'B': <its bytes>}",
                           uri=ref.uri)
    return None if found is None else found[0]
