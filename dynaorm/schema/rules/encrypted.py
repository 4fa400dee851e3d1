"""Field-level encryption (contract 20): ``Encrypted[T]`` fields stored as AES-GCM
ciphertext (the ``cryptography`` package, extra ``dynaorm[encryption]``) under a data key
that a keyring wraps, bound to the table, the item key and the field.

A stored value is ``B``: ``1 | len(key id) | key id | len(wrapped) (2) | wrapped data key |
nonce (12) | AES-GCM of the value's DynamoDB JSON``; the additional data is the table name,
the item key, the attribute and everything before the nonce, so a ciphertext copied to
another item, field or table, or edited anywhere, is :class:`~dynaorm.DecryptionError`.
The keyrings (:mod:`dynaorm.client.keyrings`) cache their data keys, so a steady-state
commit or read makes no KMS call.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import typing
from collections.abc import Mapping
from typing import Annotated, Any, TypeVar, cast

from dynaorm._types import AttributeValue
from dynaorm.errors import DecryptionError, DynaormError
from dynaorm.values.codec import binary_from_json
from dynaorm.values.expressions import Condition, paths, rename_paths

__all__ = ["ENCRYPTED", "Encrypted", "aesgcm", "is_encrypted", "keyring_of", "open_fields",
           "open_value", "refuse_encrypted", "renamed", "seal_fields", "seal_value",
           "unique_mac"]

T = TypeVar("T")
#: The metadata that marks a field encrypted (``Encrypted[T]`` is ``Annotated[T, ENCRYPTED]``).
ENCRYPTED = "dynaorm:encrypted"
Encrypted = Annotated[T, ENCRYPTED]
"""A field annotated ``Encrypted[str]`` (any type the codec stores) is stored encrypted."""


def is_encrypted(info: Any) -> bool:
    """Whether a pydantic field is ``Encrypted[...]`` (or ``Encrypted[...] | None``)."""
    return ENCRYPTED in (*info.metadata, *(m for a in typing.get_args(info.annotation)
                                           for m in getattr(a, "__metadata__", ())))


@functools.lru_cache(64)
def aesgcm(key: bytes) -> Any:
    """AES-GCM under ``key`` (``cryptography``: the extra ``dynaorm[encryption]``)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # dynaorm[encryption]

    return AESGCM(key)


def _aad(table: str, key: Mapping[str, Any], attr: str, header: bytes) -> bytes:
    return repr((table, sorted(key.items(), key=str), attr)).encode() + b"\0" + header


def seal_value(keyring: Any, av: AttributeValue, table: str, key: Mapping[str, Any],
               attr: str) -> AttributeValue:
    """``av`` encrypted for attribute ``attr`` of the item ``key`` of ``table``."""
    (data_key, header), nonce = keyring.data_key(), os.urandom(12)
    text = json.dumps(av, default=lambda b: base64.b64encode(b).decode()).encode()
    return {"B": header + nonce + aesgcm(data_key).encrypt(nonce, text, _aad(
        table, key, attr, header))}


def open_value(keyring: Any, av: AttributeValue, table: str,
               key: Mapping[str, Any], attr: str, field: str) -> AttributeValue:
    """The value :func:`seal_value` sealed; anything else is :class:`DecryptionError`."""
    key_id = "?"
    try:
        blob, n = bytes(av["B"]), av["B"][1]
        key_id, end = blob[2:2 + n].decode(), 4 + n + int.from_bytes(blob[2 + n:4 + n], "big")
        text = aesgcm(keyring.unwrap(key_id, blob[4 + n:end])).decrypt(
            blob[end:end + 12], blob[end + 12:], _aad(table, key, attr, blob[:end]))
        return cast(AttributeValue, binary_from_json(json.loads(text)))
    except Exception as exc:
        raise DecryptionError(f"field {field!r} does not decrypt under key {key_id!r} (missing "
                              f"or wrong key, or a value not written here: {exc!r})",
                              field=field, key_id=key_id) from exc


def keyring_of(table: Any) -> Any:
    """The keyring of ``table`` (``Table(keyring=)``, else its client's)."""
    if not hasattr(found := table.keyring or getattr(table.db, "keyring", None), "data_key"):
        raise DynaormError(f"table {table.name!r}: Encrypted fields need a Table/Client keyring=")
    return found


def refuse_encrypted(spec: Any, cond: Condition) -> None:
    """Refuse ``cond`` if it names an ``Encrypted`` field of ``spec`` (its stored value is
    ciphertext: nothing can be compared with it)."""
    for path in paths(cond) if spec.encrypted else ():
        if spec.attr(name := re.split(r"[.\[]", path)[0]) in spec.encrypted:
            raise DynaormError(f"{spec.name}: Encrypted {name!r} cannot be in a condition")


def renamed(spec: Any, cond: Condition) -> Condition:
    """``cond`` on stored names (:func:`rename_paths`), refused if it names an
    ``Encrypted`` field (:func:`refuse_encrypted`)."""
    refuse_encrypted(spec, cond)
    return rename_paths(cond, spec.renames)


def unique_mac(table: Any, text: str) -> str:
    """The guard text of a unique encrypted field's value: its keyring's MAC."""
    return str(keyring_of(table).mac(text))


def _bound_key(spec: Any, item: Mapping[str, AttributeValue]) -> dict[str, Any]:
    """The item's key a ciphertext is bound to (a version row's: its entity's)."""
    key = {a: item[a] for a in (spec.table.pk, spec.table.sk) if a}
    return {**key, spec.table.sk: {"S": str(item[spec.table.sk]["S"]).partition("_")[2]}} if (
        spec.versioned) else key


def seal_fields(spec: Any, item: dict[str, AttributeValue], stored: Any) -> None:
    """Encrypt ``item``'s encrypted attributes in place; a value equal to the stored one
    (``stored``: the loaded item, under the same key) keeps its ciphertext."""
    keyring, key = keyring_of(spec.table), _bound_key(spec, item)
    same = stored is not None and _bound_key(spec, stored) == key
    for attr, name in spec.encrypted.items():
        old = stored.get(attr) if same else None
        if attr in item:  # (the stored value opened: equal, it stays)
            item[attr] = old if old is not None and open_value(keyring, old, spec.table.name, key,
                attr, name) == item[attr] else seal_value(keyring, item[attr], spec.table.name,
                                                          key, attr)


def open_fields(spec: Any, item: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    """``item`` with its encrypted attributes decrypted (:class:`DecryptionError`)."""
    keyring, key, names = keyring_of(spec.table), _bound_key(spec, item), spec.encrypted
    return {a: v if a not in names else open_value(keyring, v, spec.table.name, key, a, names[a])
            for a, v in item.items()}
