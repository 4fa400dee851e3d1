"""URL-safe, tamper-evident page cursors, and the checks a cursor must pass.

A cursor holds the resume positions of a read (one per shard or segment), how many results
earlier pages served, and a fingerprint of the read it came from. Whatever it holds, it
never widens a read: :func:`decode_cursor_state` refuses anything malformed, edited or
taken from another read, and :func:`check_positions` (pure) refuses positions that lie
outside the read's partitions or key condition, or that have the wrong shape, and served
counts outside ``0..limit``. Every refusal is an :class:`~dynaorm.InvalidCursorError`.

Two forms, chosen by whether a secret is configured (``Table(cursor_secret=...)``, else
the ``DYNAORM_CURSOR_SECRET`` environment variable):

- **No secret** (the default): the cursor is the base64 of its JSON and a checksum. It
  resumes in any process and after a restart (two workers behind a load balancer need
  no configuration); a client can read it, and an edit is caught by the checksum and,
  whatever it holds, by the checks against the read: a client can only start the same
  read at another key inside it.
- **A secret**: the cursor is sealed with it by AES-SIV (RFC 5297, the ``cryptography``
  package: extra ``dynaorm[encryption]``), a standard deterministic AEAD, so the same
  page gives the same cursor. Opaque to clients, and a cursor sealed with another secret
  (or none) is refused. The key is derived from the secret by HKDF-SHA256; the source
  holds no key.
"""

import base64
import binascii
import hashlib
import hmac
import json
import operator
import os
import re
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

from dynaorm.errors import DynaormError, InvalidCursorError
from dynaorm.schema.entity import spec_of
from dynaorm.values.limits import check_key_value

#: The environment variable a shared cursor secret is read from.
ENV_SECRET = "DYNAORM_CURSOR_SECRET"
#: Longest cursor accepted (a real one holds a few keys: well under this).
MAX_CURSOR_CHARS = 64 * 1024
_MAC_BYTES = 16
_TEXT = re.compile(r"[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+")
_CHECKSUM_DOMAIN = b"dynaorm page cursor, unsealed\0"
_AAD = b"dynaorm page cursor"


def secret_of(table: Any) -> bytes | None:
    """The secret cursors of ``table`` are sealed with: its ``cursor_secret``, else
    ``DYNAORM_CURSOR_SECRET``, else ``None`` (cursors are then checksummed, not sealed)."""
    found = getattr(table, "cursor_secret", None) or os.environ.get(ENV_SECRET) or None
    if found is None or isinstance(found, bytes):
        return found
    if isinstance(found, str):
        return found.encode("utf-8", "surrogatepass")
    raise DynaormError(f"cursor_secret must be str or bytes, got {type(found).__name__}")


def fingerprint(shape: Any) -> str:
    """A short digest of a read's shape (table, index, key condition, filter, order)."""
    text = json.dumps(shape, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    data = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if _b64(data) != text:  # only the canonical spelling: no two cursors decode alike
        raise ValueError("not canonical base64")
    return data


def _siv(secret: bytes) -> Any:
    """AES-256-SIV under a key HKDF derives from ``secret``."""
    try:
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.ciphers.aead import AESSIV
        from cryptography.hazmat.primitives.kdf.hkdf import HKDF
    except ImportError as exc:  # pragma: no cover - the extra is part of the dev install
        raise DynaormError("sealed page cursors need the cryptography package: "
                           "pip install 'dynaorm[encryption]'") from exc
    return AESSIV(HKDF(hashes.SHA256(), 64, None, b"dynaorm page cursor key").derive(secret))


def seal(body: bytes, secret: bytes | None) -> str:
    """The cursor text of ``body``: checksummed (no secret, as ``body.check``) or sealed by
    AES-SIV under a key derived from ``secret`` (as ``ciphertext.tag``)."""
    if secret is None:
        return f"{_b64(body)}.{_b64(hashlib.sha256(_CHECKSUM_DOMAIN + body).digest()[:_MAC_BYTES])}"
    sealed = _siv(secret).encrypt(body, [_AAD])
    return _b64(sealed[_MAC_BYTES:]) + "." + _b64(sealed[:_MAC_BYTES])


def open_sealed(cursor: Any, secret: bytes | None) -> bytes:
    """The body of a cursor :func:`seal` made with ``secret``; anything else (malformed,
    edited, sealed with another secret or none) is :class:`InvalidCursorError`."""
    if not isinstance(cursor, str) or len(cursor) > MAX_CURSOR_CHARS or not _TEXT.fullmatch(
            cursor):
        raise InvalidCursorError("malformed page cursor")
    body_text, mac_text = cursor.split(".")
    try:
        data, tag = _unb64(body_text), _unb64(mac_text)
    except (binascii.Error, ValueError) as exc:
        raise InvalidCursorError("malformed page cursor") from exc
    if secret is None:
        if not hmac.compare_digest(tag, hashlib.sha256(_CHECKSUM_DOMAIN + data).digest()[
                :_MAC_BYTES]):
            raise InvalidCursorError("page cursor was altered, or sealed with a secret this "
                                     "process does not have (set the same cursor secret "
                                     "everywhere: Table(cursor_secret=...) or "
                                     f"{ENV_SECRET})")
        return data
    from cryptography.exceptions import InvalidTag
    try:
        return bytes(_siv(secret).decrypt(tag + data, [_AAD]))
    except (InvalidTag, ValueError) as exc:
        raise InvalidCursorError("page cursor was altered or sealed with another secret"
                                 ) from exc


def encode_cursor(query_fingerprint: str, positions: list[Any], served: int, *,
                  secret: bytes | None) -> str:
    """A cursor: the read's fingerprint, each stream's position and the count of results
    already served (so ``limit`` holds across pages), as :func:`seal` makes it."""
    data: dict[str, Any] = {"q": query_fingerprint, "p": positions}
    if served:
        data["n"] = served
    body = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    return seal(body, secret)


def decode_cursor_state(cursor: Any, query_fingerprint: str, shards: int, *,
                        secret: bytes | None) -> tuple[list[Any], int]:
    """Resume positions (still packed) and the count of results already served, from a
    cursor of this read; anything else is :class:`InvalidCursorError`."""
    body = open_sealed(cursor, secret)
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:  # checksummed or sealed, yet not ours
        raise InvalidCursorError("malformed page cursor") from exc
    if not isinstance(data, dict) or set(data) - {"q", "p", "n"}:
        raise InvalidCursorError("malformed page cursor")
    if data.get("q") != query_fingerprint:
        raise InvalidCursorError("page cursor belongs to another query")
    positions = data.get("p")
    served = data.get("n", 0)
    if (not isinstance(positions, list) or len(positions) != shards
            or not isinstance(served, int) or isinstance(served, bool)):
        raise InvalidCursorError("page cursor does not fit this query")
    return positions, served


# -- positions against the read ------------------------------------------------------------
def _scalar(av: Mapping[str, Any]) -> tuple[str, Any]:
    (tag, raw), = av.items()
    if tag == "N":
        return tag, Decimal(raw)
    if tag == "B":
        return tag, bytes(raw)
    return tag, raw


#: a key condition's comparisons (``begins_with`` and ``BETWEEN`` are :func:`_holds`' own)
_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "=": operator.eq, "<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge}


def _holds(value: Mapping[str, Any], op: str, bounds: Sequence[Any]) -> bool:
    tag, got = _scalar(value)
    parsed = [_scalar(b) for b in bounds]
    if any(t != tag for t, _ in parsed):
        return False
    ends = [v for _, v in parsed]
    if op == "begins_with":
        return isinstance(got, str | bytes) and got[:len(ends[0])] == ends[0]
    if op == "BETWEEN":
        return bool(ends[0] <= got <= ends[1])
    return _COMPARE[op](got, ends[0])


def _check_key_value(attr: str, value: Any, roles: Mapping[str, str]) -> None:
    """Refuse a position's value of ``attr`` unless it is one valid key value of a key
    type (``roles``: attribute -> "partition"/"sort", for DynamoDB's key limits)."""
    if not isinstance(value, dict) or len(value) != 1 or not set(value) <= {
            "S", "N", "B"} or not isinstance(next(iter(value.values())), str | bytes):
        raise InvalidCursorError("page cursor holds a position of the wrong shape")
    try:
        check_key_value(attr, value, roles.get(attr, "sort"), entity="cursor", key={})
        _scalar(value)
    except (DynaormError, ArithmeticError, ValueError, TypeError) as exc:
        raise InvalidCursorError("page cursor holds an invalid key value") from exc


def check_positions(positions: Sequence[Any], served: Any, *, limit: int | None,
                    conditions: Sequence[Sequence[tuple[str, str, Sequence[Any]]]],
                    key_attrs: Sequence[str], roles: Mapping[str, str]) -> None:
    """Refuse (:class:`InvalidCursorError`) resume positions that a read could not have
    produced. ``conditions``: each stream's key condition as the read's plan states it
    (``(attribute, operator, [AttributeValue...])``, see
    :meth:`~dynaorm.read.keycond.KeyPlan.conditions`; none for a scan).

    A position is ``None`` (start), ``False`` (stream done) or an ExclusiveStartKey
    holding exactly ``key_attrs``, each a valid key value of a key type (``roles``:
    attribute -> "partition"/"sort", for DynamoDB's key limits), inside the stream's
    partition and key condition. ``served`` must lie in ``0..limit``."""
    if not isinstance(served, int) or isinstance(served, bool) or served < 0 or (
            limit is not None and served > limit):
        raise InvalidCursorError("page cursor holds an impossible count of served results")
    if len(positions) != len(conditions):
        raise InvalidCursorError("page cursor does not fit this query")
    for position, condition in zip(positions, conditions, strict=True):
        if position is None or position is False:
            continue
        if not isinstance(position, dict) or set(position) != set(key_attrs):
            raise InvalidCursorError("page cursor holds a position of the wrong shape")
        for attr in key_attrs:
            _check_key_value(attr, position[attr], roles)
        for attr, op, bounds in condition:
            if not _holds(position[attr], op, bounds):
                raise InvalidCursorError("page cursor holds a position outside this query's "
                                         "partition or key range")


def read_secret(read: Any) -> bytes | None:
    """:func:`secret_of` the table a read (a Query or Scan) reads."""
    return secret_of(spec_of(read._entities[0]).table)
