"""Keyrings of ``Encrypted`` fields (:mod:`dynaorm.schema.rules.encrypted`): they wrap and
unwrap data keys and MAC unique values, without I/O of their own.

What a keyring knows is in three caches: the data key new values are sealed under, the
data keys it unwrapped, the MACs it computed. :meth:`Keyring.prepare`, a protocol, fills
them before a read decodes or a write encodes (each entity's ``Rule.prepare``; the MACs a
unique rule's ``prepare`` asks for, before a commit is planned or a ``find`` reads): a
:class:`KmsKeyring` asks KMS with :class:`~dynaorm.protocol.steps.Call` steps
(``"kms:GenerateDataKey"``, ``"kms:Decrypt"``, ``"kms:GenerateMac"``), which the client's
driver sends like any other request (retried by its policy, seen by hooks and spans, held
to ``rate=``, awaited by an ``AsyncSession``). Sealing and opening read the caches,
synchronously; key material a :class:`KmsKeyring` was not asked to prepare is a
programming error (:class:`~dynaorm.schema.rules.encrypted.NotPrepared`), never a
blocking call. A :class:`StaticKeyring` computes everything itself.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import os
import threading
import time
import weakref
from collections.abc import Collection, Container, Iterable
from typing import Any, Final

from dynaorm.errors import DynaormError, KeyringError, RequestError
from dynaorm.protocol.policy import retryable
from dynaorm.protocol.steps import Call, Proto, R


class NotPrepared(RuntimeError):
    """Key material used before it was asked for: a read or a write that did not prepare
    its entity's rules (:meth:`~dynaorm.schema.rules.Rule.prepare`) first. A programming
    error, never a blocking call in its place."""


@functools.lru_cache(64)
def aesgcm(key: bytes) -> Any:
    """AES-GCM under ``key`` (``cryptography``: the extra ``dynaorm[encryption]``)."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM  # dynaorm[encryption]

    return AESGCM(key)


def keyring_of(table: Any) -> Any:
    """The keyring of ``table`` (``Table(keyring=)``, else its client's)."""
    if not hasattr(found := table.keyring or getattr(table.db, "keyring", None), "data_key"):
        raise DynaormError(f"table {table.name!r}: Encrypted fields need a Table/Client keyring=")
    return found


def bound_keyring(table: Any) -> Any:
    """The keyring ``table`` has now (its own, else that of a client it is bound to;
    ``None``: none yet), found without binding it to a client."""
    return table.keyring or getattr(getattr(table, "_client", None), "keyring", None)


def check_macs(keyring: Any, owner: str, fields: Collection[str]) -> None:
    """Refuse ``keyring`` for the unique encrypted ``fields`` of ``owner`` unless it has a
    MAC key (``mac_key_id``): :class:`~dynaorm.KeyringError`, before anything is sent."""
    if keyring is not None and getattr(keyring, "mac_key_id", "") is None:
        raise KeyringError(
            f"{owner}: unique Encrypted {sorted(fields)} need a keyring with a MAC key, "
            f"whose guards do not change when data keys rotate; {keyring!r} has none "
            "(KmsKeyring(..., mac_key_id=<an HMAC_256 key>), StaticKeyring(..., mac_key=...))",
            key_id=str(getattr(keyring, "key_id", "?")))


#: entries each cache of a keyring keeps (unwrapped data keys; MACs), the oldest dropped
#: first (never one a running prepare asked for)
CACHED: Final = 4096
#: AES key sizes, in bytes
_AES: Final = (16, 24, 32)
_LIVE: weakref.WeakSet[Keyring] = weakref.WeakSet()  # (their locks renewed in a fork's child)


class Keyring:
    """Wraps and unwraps data keys, and MACs unique values (see the module). A data key
    seals new values for ``max_age`` seconds and ``max_uses`` values: the first prepare of
    a write past either gets a new one (a write already planned keeps its key). ``key_id``
    names the key new data keys are wrapped under; keys of ``previous`` still unwrap.
    ``mac(text)`` is a keyed HMAC-SHA256 (hex) under the key ``mac_key_id`` names, the
    same whichever data keys the keyring holds: what the guard of a unique encrypted
    field holds. A subclass gives ``key_id``, ``key_ids``, ``mac_key_id`` and three
    protocols: ``_new`` (a data key and its wrapped form), ``_unwrap`` and ``_mac``."""

    max_age: float = 300.0
    max_uses: int = 100_000
    key_id: str
    key_ids: frozenset[str]
    """The ids of the keys whose data keys it unwraps (``key_id`` and ``previous``'s)."""
    mac_key_id: str | None = None
    """The id of the key unique encrypted values are MAC'd under (``None``: none; an
    entity with a unique encrypted field refuses this keyring)."""

    def __init__(self, previous: Iterable[Any] = ()):
        self.previous = tuple(previous)
        self._fresh()

    def _fresh(self) -> None:
        """Empty caches and a new lock (made, unpickled, or in a fork's child)."""
        self._lock = threading.Lock()
        self._current: list[Any] | None = None  # [key, header, uses left, deadline]
        self._keys: dict[tuple[str, bytes], bytes | Exception] = {}
        self._macs: dict[str, str] = {}
        _LIVE.add(self)

    def __getstate__(self) -> dict[str, Any]:
        return {k: v for k, v in vars(self).items()
                if k not in ("_lock", "_current", "_keys", "_macs")}

    def __setstate__(self, state: dict[str, Any]) -> None:
        vars(self).update(state)
        self._fresh()

    # -- what a subclass gives: protocols (a StaticKeyring's ask for nothing) ------------
    def _new(self, origins: tuple[Any, ...]) -> Proto[tuple[bytes, bytes]]:
        raise NotImplementedError  # pragma: no cover

    def _unwrap(self, key_id: str, wrapped: bytes, origins: tuple[Any, ...]) -> Proto[bytes]:
        raise NotImplementedError  # pragma: no cover

    def _mac(self, text: str, origins: tuple[Any, ...]) -> Proto[str]:
        raise NotImplementedError  # pragma: no cover

    def _wrap(self, key: bytes, origins: tuple[Any, ...]) -> Proto[bytes]:
        raise NotImplementedError  # pragma: no cover

    # -- keys of their own (a protocol each) -------------------------------------------
    def new_key(self, origins: tuple[Any, ...] = ()) -> Proto[tuple[bytes, bytes]]:
        """A data key of its own, never used for anything else (a tenant's key:
        ``Table(key_scope=...)``), and its form wrapped under :attr:`key_id`; a request
        that fails is :class:`~dynaorm.KeyringError`. Nothing is cached."""
        return (yield from self._asked(self._new(origins), self.key_id))

    def wrap(self, key: bytes, origins: tuple[Any, ...] = ()) -> Proto[bytes]:
        """``key`` (a data key already in use: a tenant's) wrapped under :attr:`key_id`,
        as :meth:`unwrap` opens it (rotation: a key wrapped under an older key of
        ``previous`` wrapped anew)."""
        return (yield from self._asked(self._wrap(key, origins), self.key_id))

    def unwrapped(self, key_id: str, wrapped: bytes, origins: tuple[Any, ...]
                  ) -> Proto[bytes]:
        """The data key ``wrapped`` under ``key_id`` (one of :attr:`key_ids`), asked for
        now and not cached (a tenant's key: its own cache keeps it); a key it does not
        hold, or one that does not unwrap, is :class:`~dynaorm.KeyringError`."""
        if key_id not in self.key_ids:
            raise KeyringError(f"{self!r}: key {key_id!r} is not in this keyring",
                               key_id=key_id)
        try:
            return (yield from self._asked(self._unwrap(key_id, wrapped, origins), key_id))
        except KeyringError:
            raise
        except Exception as exc:  # (a StaticKeyring's: a wrapped key that does not open)
            raise KeyringError(f"{self!r}: a key wrapped under {key_id!r} does not unwrap "
                               f"({exc!r})", key_id=key_id) from exc

    # -- preparing (a protocol) --------------------------------------------------------
    def prepare(self, wrapped: Iterable[tuple[str, bytes]] = (), macs: Iterable[str] = (), *,
                writing: bool = False, origins: tuple[Any, ...] = ()) -> Proto[None]:
        """Fill the caches with what a read or a write is about to use (a protocol;
        ``origins``: the entity classes it is for, as hooks see them): with ``writing``,
        a data key for new values; the data keys ``wrapped`` (``(key id, wrapped key)`` of
        stored values) of the keys it holds; the MACs of ``macs``. A request that fails
        after its retries is :class:`~dynaorm.KeyringError` naming the key; a data key
        that KMS refuses to unwrap (a key missing, disabled or not allowed, a wrapped key
        edited) is remembered, and each value under it is
        :class:`~dynaorm.DecryptionError` when it is opened (asked again by the next
        prepare)."""
        if writing and self._stale():
            key, blob = yield from self._asked(self._new(origins), self.key_id)
            with self._lock:
                self._use(key, blob)
        pairs = dict.fromkeys(p for p in wrapped if p[0] in self.key_ids)
        for pair in [p for p in pairs if not isinstance(self._keys.get(p), bytes)]:
            found = yield from self._unwrapped(pair, origins)
            with self._lock:
                self._keys[pair] = found
        texts = dict.fromkeys(macs)
        for text in [t for t in texts if t not in self._macs]:
            mac = yield from self._asked(self._mac(text, origins), self.mac_key_id or "?")
            with self._lock:
                self._macs[text] = mac
        with self._lock:
            _trim(self._keys, pairs)
            _trim(self._macs, texts)

    def _unwrapped(self, pair: tuple[str, bytes], origins: tuple[Any, ...]
                   ) -> Proto[bytes | Exception]:
        """The data key of ``pair``, or the refusal that every value under it opens as."""
        try:
            return (yield from self._asked(self._unwrap(*pair, origins), pair[0]))
        except KeyringError as exc:
            cause = exc.__cause__
            if isinstance(cause, RequestError) and retryable(cause):
                raise  # a throttle or a lost answer that outlived the attempts: no verdict
            return exc
        except Exception as exc:  # (a StaticKeyring's: a wrapped key that does not open)
            return exc

    def _asked(self, proto: Proto[R], key_id: str) -> Proto[R]:
        """``proto``'s result; its failure a :class:`~dynaorm.KeyringError` naming
        ``key_id`` (a refused request, or an answer without what it should hold)."""
        try:
            return (yield from proto)
        except RequestError as exc:
            raise KeyringError(f"{type(self).__name__}, key {key_id!r}: {exc}",
                               key_id=key_id) from exc
        except (KeyError, TypeError) as exc:
            raise KeyringError(f"{type(self).__name__}, key {key_id!r}: the answer lacks "
                               f"{exc}", key_id=key_id) from exc

    # -- using (pure: from the caches) -------------------------------------------------
    def _stale(self) -> bool:
        current = self._current
        return current is None or current[2] <= 0 or time.monotonic() > current[3]

    def _use(self, key: bytes, wrapped: bytes) -> None:
        """Seal new values with ``key`` (``wrapped``: its wrapped form) from now on."""
        kid = self.key_id.encode()
        header = bytes([1, len(kid)]) + kid + len(wrapped).to_bytes(2, "big") + wrapped
        self._current = [key, header, self.max_uses, time.monotonic() + self.max_age]
        self._keys[(self.key_id, wrapped)] = key  # (its own values open without a request)

    def data_key(self) -> tuple[bytes, bytes]:
        """(data key, header) for the next value: the one in use, or a new one where the
        keyring makes it itself (a :class:`KmsKeyring`'s comes from :meth:`prepare`)."""
        with self._lock:
            if self._stale():
                try:
                    self._use(*_local(self, self._new(()), "a data key for new values"))
                except NotPrepared:
                    if self._current is None:
                        raise
            current = self._current
            assert current is not None
            current[2] -= 1
            return current[0], current[1]

    def unwrap(self, key_id: str, wrapped: bytes) -> bytes:
        """The data key ``wrapped`` under key ``key_id`` (prepared, or made where the
        keyring makes it itself); a key it does not hold, or a data key that does not
        unwrap, raises (:func:`~dynaorm.schema.rules.encrypted.open_value` makes it a
        :class:`~dynaorm.DecryptionError`)."""
        found = self._keys.get((key_id, wrapped))
        if found is None:
            if key_id not in self.key_ids:
                raise KeyError(f"key {key_id!r} is not in this keyring")
            found = _local(self, self._unwrap(key_id, wrapped, ()),
                           f"the data key of a value under key {key_id!r}")
        if isinstance(found, Exception):
            raise found
        return found

    def mac(self, text: str) -> str:
        """The keyed HMAC-SHA256 of ``text`` (hex) a unique encrypted field's guard holds
        (prepared, or made where the keyring makes it itself)."""
        found = self._macs.get(text)
        return found if found is not None else _local(self, self._mac(text, ()),
                                                      "the MAC of a unique value")

    def check(self, entities: Iterable[type[Any]]) -> None:
        """Refuse to serve ``entities`` (of a table or client this keyring is bound to)
        if it cannot: one with a unique encrypted field needs a MAC key
        (:attr:`mac_key_id`): :class:`~dynaorm.KeyringError`."""
        for cls in entities:
            spec = cls.__dynaorm_spec__
            fields = [r.field for r in spec.uniques if r.mac is not None]
            if fields:
                check_macs(self, spec.name, fields)


def _local(keyring: Keyring, proto: Proto[R], what: str) -> R:
    """The result of a keyring's protocol that asks for nothing (a StaticKeyring's); one
    that would ask is :class:`NotPrepared`."""
    try:
        proto.send(None)
    except StopIteration as stop:
        result: R = stop.value
        return result
    proto.close()
    raise NotPrepared(f"{type(keyring).__name__}: {what} was not prepared: a read or write "
                      "runs Keyring.prepare (its entity's Rule.prepare) through the client "
                      "first; code that seals or opens values itself must too")


def _trim(cache: dict[Any, Any], keep: Container[Any]) -> None:
    """Drop ``cache``'s oldest entries beyond :data:`CACHED`, but none of ``keep`` (what
    a running prepare asked for)."""
    if (excess := len(cache) - CACHED) > 0:
        for entry in [e for e in cache if e not in keep][:excess]:
            del cache[entry]


def _key_id(key: bytes) -> str:
    """A static key's id: the first 16 hex digits of its SHA-256."""
    return hashlib.sha256(key).hexdigest()[:16]


def _checked(key: Any, what: str) -> bytes:
    """``key`` if it is an AES key (16, 24 or 32 bytes), else a KeyringError."""
    if isinstance(key, bytes | bytearray) and len(key) in _AES:
        return bytes(key)
    kid = _key_id(bytes(key)) if isinstance(key, bytes | bytearray) else "?"
    size = f"{len(key)} bytes" if isinstance(key, bytes | bytearray) else type(key).__name__
    raise KeyringError(f"StaticKeyring: {what} must be an AES key of 16, 24 or 32 bytes, got "
                       f"{size} (key id {kid})", key_id=kid)


class StaticKeyring(Keyring):
    """Data keys wrapped (AES-GCM) under a key held in memory: for tests and local use.
    ``key`` and each of ``previous`` (older keys, still read) are AES keys (16, 24 or 32
    bytes; refused otherwise). ``mac_key`` (the same kind of key) keys ``mac``: an entity
    with a unique encrypted field needs it (refused without), and it never changes with
    the data keys, so rotating them, and dropping an old one, leaves every guard as it
    is. A table written by 0.5 keeps its guards with ``mac_key=`` its oldest key (the
    last of ``previous``, else ``key``)."""

    def __init__(self, key: bytes, previous: Iterable[bytes] = (), *,
                 mac_key: bytes | None = None):
        super().__init__(_checked(k, "a previous key") for k in previous)
        key = _checked(key, "key")
        self._by_id = {_key_id(k): k for k in (*self.previous, key)}
        self.key_id = _key_id(key)
        """The id of ``key``: the first 16 hex digits of its SHA-256."""
        self.key_ids = frozenset(self._by_id)
        """The ids of ``key`` and of each of ``previous``."""
        source = None if mac_key is None else _checked(mac_key, "mac_key")
        self.mac_key_id = None if source is None else _key_id(source)
        """The id of ``mac_key`` (``None``: none given)."""
        self._mac_key = None if source is None else hmac.new(source, b"unique",
                                                             "sha256").digest()

    def __repr__(self) -> str:
        return f"StaticKeyring(key id {self.key_id!r})"

    def _new(self, origins: tuple[Any, ...]) -> Proto[tuple[bytes, bytes]]:
        key = os.urandom(32)
        return key, (yield from self._wrap(key, origins))

    def _unwrap(self, key_id: str, wrapped: bytes, origins: tuple[Any, ...]) -> Proto[bytes]:
        return bytes(aesgcm(self._by_id[key_id]).decrypt(wrapped[:12], wrapped[12:], b"dk"))
        yield  # (asks for nothing)

    def _mac(self, text: str, origins: tuple[Any, ...]) -> Proto[str]:
        if self._mac_key is None:
            raise KeyringError(f"{self!r}: unique encrypted fields need mac_key=",
                               key_id=self.key_id)
        return hmac.new(self._mac_key, text.encode(), "sha256").hexdigest()
        yield  # (asks for nothing)

    def _wrap(self, key: bytes, origins: tuple[Any, ...]) -> Proto[bytes]:
        nonce = os.urandom(12)
        return nonce + bytes(aesgcm(self._by_id[self.key_id]).encrypt(nonce, key, b"dk"))
        yield  # (asks for nothing)


class KmsKeyring(Keyring):
    """Data keys from AWS KMS: ``GenerateDataKey`` under ``key_id``, ``Decrypt`` under it
    or a key of ``previous`` (older key ids, still read); ``mac`` (unique encrypted
    fields) is ``GenerateMac`` under ``mac_key_id``, an ``HMAC_256`` key. Each is a
    request of the client the keyring's table sends through (see the module), to its KMS
    endpoint (``AWS_ENDPOINT_URL_KMS``, ... ; else AWS's for its region) through
    botocore's KMS client: its own, or ``client`` (a botocore KMS client) when given, or
    its own for ``region`` when given."""

    def __init__(self, key_id: str, previous: Iterable[str] = (), *, client: Any = None,
                 region: str | None = None, mac_key_id: str | None = None):
        super().__init__(previous)
        self.key_id, self.mac_key_id = key_id, mac_key_id
        self.key_ids = frozenset((key_id, *self.previous))
        """``key_id`` and the ids of ``previous``."""
        self.client = client
        """The botocore KMS client requests go through (``None``: the dynaorm client's)."""
        self.region = region
        """The region of KMS requests (``None``: the dynaorm client's)."""

    def __repr__(self) -> str:
        return f"KmsKeyring({self.key_id!r}, mac_key_id={self.mac_key_id!r})"

    def _kms(self, name: str, request: dict[str, Any], origins: tuple[Any, ...]
             ) -> Proto[dict[str, Any]]:
        out: dict[str, Any] = yield Call(f"kms:{name}", request, origins,
                                         via=self.client if self.client is not None
                                         else self.region, service="kms")
        return out

    def _new(self, origins: tuple[Any, ...]) -> Proto[tuple[bytes, bytes]]:
        out = yield from self._kms("GenerateDataKey", {"KeyId": self.key_id,
                                                       "KeySpec": "AES_256"}, origins)
        key, wrapped = out["Plaintext"], out["CiphertextBlob"]
        if not isinstance(key, bytes) or len(key) != 32 or not isinstance(wrapped, bytes):
            raise TypeError("an AES_256 data key (32 bytes) and its wrapped form")
        return key, wrapped

    def _unwrap(self, key_id: str, wrapped: bytes, origins: tuple[Any, ...]) -> Proto[bytes]:
        out = yield from self._kms("Decrypt", {"CiphertextBlob": wrapped, "KeyId": key_id},
                                   origins)
        return bytes(out["Plaintext"])

    def _wrap(self, key: bytes, origins: tuple[Any, ...]) -> Proto[bytes]:
        out = yield from self._kms("Encrypt", {"KeyId": self.key_id, "Plaintext": key},
                                   origins)
        return bytes(out["CiphertextBlob"])

    def _mac(self, text: str, origins: tuple[Any, ...]) -> Proto[str]:
        if self.mac_key_id is None:
            raise KeyringError(f"{self!r}: unique encrypted fields need mac_key_id= (an "
                               "HMAC_256 KMS key)", key_id=self.key_id)
        out = yield from self._kms("GenerateMac", {
            "KeyId": self.mac_key_id, "Message": text.encode(),
            "MacAlgorithm": "HMAC_SHA_256"}, origins)
        return bytes(out["Mac"]).hex()


def _renewed() -> None:
    """In a fork's child: every keyring's lock anew (a thread of the parent may have held
    it); its caches are kept."""
    for keyring in list(_LIVE):
        keyring._lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # (not on Windows)
    os.register_at_fork(after_in_child=_renewed)
