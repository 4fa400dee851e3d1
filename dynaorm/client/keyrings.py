"""Keyrings of ``Encrypted`` fields (:mod:`dynaorm.schema.rules.encrypted`): they wrap and unwrap
data keys, the KMS one through botocore's KMS client (I/O: this floor's)."""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from botocore.session import get_session

from dynaorm.schema.rules.encrypted import aesgcm

__all__ = ["Keyring", "KmsKeyring", "StaticKeyring"]


class Keyring:
    """Wraps and unwraps data keys. A data key encrypts new values for ``max_age`` seconds
    and ``max_uses`` values; unwrapped ones are cached. ``key_id`` names the key new data
    keys are wrapped under; keys of ``previous`` still unwrap. ``mac(text)`` is a keyed
    HMAC-SHA256 (hex), stable across rotations: what the guard of a unique encrypted field
    holds. A subclass gives ``key_id``, ``mac``, ``_new`` (a data key and its wrapped
    form) and ``_unwrap``."""

    max_age: float = 300.0
    max_uses: int = 100_000
    key_id: str
    _mac: Callable[[str], str]
    _new: Callable[[], tuple[bytes, bytes]]
    _unwrap: Callable[[str, bytes], bytes]

    def __init__(self, previous: Iterable[Any] = ()) -> None:
        self.previous = tuple(previous)
        self._current: list[Any] = []
        self.unwrap = functools.lru_cache(1024)(lambda kid, wrapped: self._unwrap(kid, wrapped))

    def data_key(self) -> tuple[bytes, bytes]:
        """(data key, header) for the next value: the cached one within its bounds."""
        if not self._current or self._current[2] <= 0 or time.monotonic() > self._current[3]:
            (key, wrapped), kid = self._new(), self.key_id.encode()
            header = bytes([1, len(kid)]) + kid + len(wrapped).to_bytes(2, "big") + wrapped
            self._current = [key, header, self.max_uses, time.monotonic() + self.max_age]
        self._current[2] -= 1
        return self._current[0], self._current[1]

    def mac(self, text: str) -> str:
        """The keyed HMAC-SHA256 of ``text`` (hex) a unique encrypted field's guard holds."""
        return self._mac(text)


class StaticKeyring(Keyring):
    """Data keys wrapped (AES-GCM) under a key held in memory: for tests and local use.
    ``previous``: older keys, still read; the last of them (the oldest) keys ``mac``."""

    def __init__(self, key: bytes, previous: Iterable[bytes] = ()) -> None:
        super().__init__(previous)
        self._keys = {hashlib.sha256(k).hexdigest()[:16]: k for k in (*self.previous, key)}
        self.key_id = hashlib.sha256(key).hexdigest()[:16]
        """The id of ``key``: the first 16 hex digits of its SHA-256."""
        mac_key = hmac.new((key, *self.previous)[-1], b"unique", "sha256").digest()
        self._mac = lambda text: hmac.new(mac_key, text.encode(), "sha256").hexdigest()

    def _new(self) -> tuple[bytes, bytes]:
        key, nonce = os.urandom(32), os.urandom(12)
        return key, nonce + aesgcm(self._keys[self.key_id]).encrypt(nonce, key, b"dk")

    def _unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        return bytes(aesgcm(self._keys[key_id]).decrypt(wrapped[:12], wrapped[12:], b"dk"))


class KmsKeyring(Keyring):
    """Data keys from AWS KMS (GenerateDataKey, Decrypt) through botocore's KMS client
    (``client``, else one for ``region``). ``previous``: older key ids, still read.
    ``mac`` (unique encrypted fields) is KMS GenerateMac under ``mac_key_id``, an
    HMAC_256 key, cached."""

    def __init__(self, key_id: str, previous: Iterable[str] = (), *, client: Any = None,
                 region: str | None = None, mac_key_id: str | None = None) -> None:
        super().__init__(previous)
        self.key_id, self.mac_key_id = key_id, mac_key_id
        self._kms: Any = client or get_session().create_client("kms", region_name=region)
        self._mac = functools.lru_cache(1024)(lambda text: bytes(self._kms.generate_mac(
            KeyId=mac_key_id, Message=text.encode(), MacAlgorithm="HMAC_SHA_256")["Mac"]).hex())

    def _new(self) -> tuple[bytes, bytes]:
        out = self._kms.generate_data_key(KeyId=self.key_id, KeySpec="AES_256")
        return bytes(out["Plaintext"]), bytes(out["CiphertextBlob"])

    def _unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        if key_id not in (self.key_id, *self.previous):
            raise KeyError(key_id)
        return bytes(self._kms.decrypt(CiphertextBlob=wrapped, KeyId=key_id)["Plaintext"])
