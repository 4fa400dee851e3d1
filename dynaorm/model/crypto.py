"""Field-level encryption (contract 20): ``Encrypted[T]`` fields stored as AES-GCM
ciphertext (the ``cryptography`` package, extra ``dynaorm[encryption]``) under a data key
that a keyring wraps, bound to the table, the item key and the field.

A stored value is ``B``: ``1 | len(key id) | key id | len(wrapped) (2) | wrapped data key |
nonce (12) | AES-GCM of the value's DynamoDB JSON``; the additional data is the table name,
the item key, the attribute and everything before the nonce, so a ciphertext copied to
another item, field or table, or edited anywhere, is :class:`~dynaorm.DecryptionError`.
A keyring caches its current data key (``max_age`` seconds, ``max_uses`` values) and the
data keys it unwrapped, so a steady-state commit or read makes no KMS call.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import time
import typing
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, TypeVar

from dynaorm._types import AttributeValue
from dynaorm.errors import DecryptionError, DynaormError
from dynaorm.model.codec import binary_from_json
from dynaorm.model.expressions import Condition, rename_paths

__all__ = ["ENCRYPTED", "Encrypted", "Keyring", "KmsKeyring", "StaticKeyring", "is_encrypted",
           "keyring_of", "open_fields", "open_value", "renamed", "seal_fields", "seal_value",
           "unique_mac"]

T = TypeVar("T")


class _Marker:
    def __repr__(self) -> str:
        return "ENCRYPTED"


#: The metadata that marks a field encrypted (``Encrypted[T]`` is ``Annotated[T, ENCRYPTED]``).
ENCRYPTED = _Marker()
Encrypted = Annotated[T, ENCRYPTED]
"""A field annotated ``Encrypted[str]`` (any type the codec stores) is stored encrypted."""


def is_encrypted(info: Any) -> bool:
    """Whether a pydantic field is ``Encrypted[...]`` (or ``Encrypted[...] | None``)."""
    return ENCRYPTED in (*info.metadata, *(m for a in typing.get_args(info.annotation)
                                           for m in getattr(a, "__metadata__", ())))


def _aesgcm(key: bytes) -> Any:
    try:
        from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
        raise DynaormError("Encrypted fields need the cryptography package: "
                           "pip install 'dynaorm[encryption]'") from exc
    return AESGCM(key)


class Keyring:
    """Wraps and unwraps data keys; a subclass gives :attr:`key_id`, ``_new`` (a new data
    key and its wrapped form) and ``_unwrap``. Keys of ``previous`` (by id) still unwrap."""

    max_age = 300.0
    """Seconds a data key encrypts new values before a new one is made."""
    max_uses = 100_000
    """Values a data key encrypts before a new one is made."""
    key_id: str
    """The id of the key new data keys are wrapped under."""

    def __init__(self, previous: Iterable[Any] = ()) -> None:
        self.previous = tuple(previous)
        self._current: list[Any] = []
        self._known: dict[bytes, bytes] = {}

    def data_key(self) -> tuple[bytes, bytes]:
        """(data key, header) for the next value: the cached one within its bounds."""
        if not self._current or self._current[2] <= 0 or time.monotonic() > self._current[3]:
            key, wrapped = self._new()
            kid = self.key_id.encode()
            header = bytes([1, len(kid)]) + kid + len(wrapped).to_bytes(2, "big") + wrapped
            self._current = [key, header, self.max_uses, time.monotonic() + self.max_age]
        self._current[2] -= 1
        return self._current[0], self._current[1]

    def unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        """The data key ``wrapped`` holds (cached; any failure raises)."""
        found = self._known.get(wrapped)
        if found is None:
            found = self._unwrap(key_id, wrapped)
            if len(self._known) >= 1024:
                self._known.clear()
            self._known[wrapped] = found
        return found

    def mac(self, text: str) -> str:  # pragma: no cover - abstract
        """The keyed HMAC-SHA256 of ``text`` (hex), stable across rotations: what the
        guard of a unique encrypted field holds in place of the value."""
        raise NotImplementedError

    def _new(self) -> tuple[bytes, bytes]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _unwrap(self, key_id: str, wrapped: bytes) -> bytes:  # pragma: no cover - abstract
        raise NotImplementedError


class StaticKeyring(Keyring):
    """Data keys wrapped (AES-GCM) under a key held in memory: for tests and local use.
    ``previous``: older keys, still read."""

    def __init__(self, key: bytes, previous: Iterable[bytes] = ()) -> None:
        super().__init__(previous)
        self._keys = {hashlib.sha256(k).hexdigest()[:16]: k for k in (*self.previous, key)}
        self.key_id = hashlib.sha256(key).hexdigest()[:16]
        self._mac_key = hmac.new((key, *self.previous)[-1], b"unique", "sha256").digest()

    def mac(self, text: str) -> str:
        """HMAC-SHA256 under a key derived from the oldest key (the last of ``previous``)."""
        return hmac.new(self._mac_key, text.encode(), "sha256").hexdigest()

    def _new(self) -> tuple[bytes, bytes]:
        key, nonce = os.urandom(32), os.urandom(12)
        return key, nonce + _aesgcm(self._keys[self.key_id]).encrypt(nonce, key, b"dk")

    def _unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        return bytes(_aesgcm(self._keys[key_id]).decrypt(wrapped[:12], wrapped[12:], b"dk"))


class KmsKeyring(Keyring):
    """Data keys from AWS KMS (GenerateDataKey, Decrypt) through botocore's KMS client
    (``client``, else one for ``region``). ``previous``: older key ids, still read."""

    def __init__(self, key_id: str, previous: Iterable[str] = (), *, client: Any = None,
                 region: str | None = None, mac_key_id: str | None = None) -> None:
        super().__init__(previous)
        self.key_id, self.mac_key_id = key_id, mac_key_id
        self._macs: dict[str, str] = {}
        if client is None:
            import botocore.session

            client = botocore.session.get_session().create_client("kms", region_name=region)
        self.client = client

    def mac(self, text: str) -> str:
        """KMS GenerateMac (HMAC_SHA_256) under ``mac_key_id``, an HMAC key (cached)."""
        if text not in self._macs:
            if self.mac_key_id is None:
                raise DynaormError("a unique Encrypted field needs KmsKeyring(mac_key_id=...)")
            if len(self._macs) >= 1024:
                self._macs.clear()
            self._macs[text] = bytes(self.client.generate_mac(
                KeyId=self.mac_key_id, Message=text.encode(),
                MacAlgorithm="HMAC_SHA_256")["Mac"]).hex()
        return self._macs[text]

    def _new(self) -> tuple[bytes, bytes]:
        out = self.client.generate_data_key(KeyId=self.key_id, KeySpec="AES_256")
        return bytes(out["Plaintext"]), bytes(out["CiphertextBlob"])

    def _unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        if key_id not in (self.key_id, *self.previous):
            raise KeyError(key_id)
        return bytes(self.client.decrypt(CiphertextBlob=wrapped, KeyId=key_id)["Plaintext"])


def _aad(table: str, key: Mapping[str, Any], attr: str, header: bytes) -> bytes:
    bound = json.dumps([table, sorted((k, str(v)) for k, v in key.items()), attr])
    return bound.encode() + b"\0" + header


def seal_value(keyring: Keyring, av: AttributeValue, table: str, key: Mapping[str, Any],
               attr: str) -> AttributeValue:
    """``av`` encrypted for attribute ``attr`` of the item ``key`` of ``table``."""
    data_key, header = keyring.data_key()
    nonce = os.urandom(12)
    text = json.dumps(av, default=lambda b: base64.b64encode(b).decode()).encode()
    sealed = _aesgcm(data_key).encrypt(nonce, text, _aad(table, key, attr, header))
    return {"B": header + nonce + sealed}


def open_value(keyring: Keyring | None, av: AttributeValue, table: str,
               key: Mapping[str, Any], attr: str, field: str) -> AttributeValue:
    """The value :func:`seal_value` sealed; anything else is :class:`DecryptionError`."""
    key_id = "?"
    try:
        blob = bytes(av["B"])
        n = blob[1]
        key_id = blob[2:2 + n].decode()
        size = int.from_bytes(blob[2 + n:4 + n], "big")
        end = 4 + n + size
        if blob[0] != 1 or len(blob) < end + 28 or keyring is None:
            raise ValueError("not a ciphertext of this version, or no keyring")
        data_key = keyring.unwrap(key_id, blob[4 + n:end])
        text = _aesgcm(data_key).decrypt(blob[end:end + 12], blob[end + 12:],
                                         _aad(table, key, attr, blob[:end]))
        found: AttributeValue = binary_from_json(json.loads(text))
        return found
    except Exception as exc:
        raise DecryptionError(f"field {field!r} does not decrypt under key {key_id!r} "
                              f"(missing or wrong key, or a value not written here: "
                              f"{type(exc).__name__})", field=field, key_id=key_id) from exc


def keyring_of(table: Any) -> Keyring:
    """The keyring of ``table`` (``Table(keyring=)``, else its client's)."""
    found = table.keyring or getattr(table.db, "keyring", None)
    if not isinstance(found, Keyring):
        raise DynaormError(f"table {table.name!r} has Encrypted fields but no keyring: "
                           "Table(keyring=...) or Client(keyring=...)")
    return found


def renamed(spec: Any, cond: Condition) -> Condition:
    """``cond`` on stored names (:func:`rename_paths`); an ``Encrypted`` field in it is
    refused (its stored value is ciphertext: nothing can be compared with it)."""
    stack = [cond] if spec.encrypted else []
    while stack:
        c = stack.pop()
        stack += [*getattr(c, "parts", ()), *filter(None, [getattr(c, "inner", None)])]
        if spec.attr(str(getattr(c, "path", "")).partition(".")[0]) in spec.encrypted:
            raise DynaormError(f"{spec.name}: an Encrypted field cannot be in a condition "
                               f"or filter ({c.path!r})")  # type: ignore[attr-defined]
    return rename_paths(cond, spec.renames)


def unique_mac(table: Any, text: str) -> str:
    """The guard text of a unique encrypted field's value: its keyring's MAC."""
    return keyring_of(table).mac(text)


def _bound_key(spec: Any, item: Mapping[str, AttributeValue]) -> dict[str, Any]:
    """The item's key a ciphertext is bound to (a version row's: its entity's)."""
    key = {a: item[a] for a in (spec.table.pk, spec.table.sk) if a}
    if spec.versioned and spec.table.sk:
        key[spec.table.sk] = {"S": str(item[spec.table.sk]["S"]).partition("_")[2]}
    return key


def seal_fields(spec: Any, item: dict[str, AttributeValue], stored: Any) -> None:
    """Encrypt ``item``'s encrypted attributes in place; a value equal to the stored one
    (``stored``: the loaded item, under the same key) keeps its ciphertext."""
    keyring, key = keyring_of(spec.table), _bound_key(spec, item)
    same = stored is not None and _bound_key(spec, stored) == key
    for attr, name in spec.encrypted.items():
        if attr in item:
            old = stored.get(attr) if same else None
            if old is not None and open_value(keyring, old, spec.table.name, key, attr,
                                              name) == item[attr]:
                item[attr] = old
            else:
                item[attr] = seal_value(keyring, item[attr], spec.table.name, key, attr)


def open_fields(spec: Any, item: Mapping[str, AttributeValue]) -> dict[str, AttributeValue]:
    """``item`` with its encrypted attributes decrypted (:class:`DecryptionError`)."""
    keyring, key, out = keyring_of(spec.table), _bound_key(spec, item), dict(item)
    for attr, name in spec.encrypted.items():
        if attr in out:
            out[attr] = open_value(keyring, out[attr], spec.table.name, key, attr, name)
    return out
