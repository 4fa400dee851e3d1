"""Opaque, URL-safe, tamper-evident page cursors.

A cursor holds the resume positions of a query (one per shard for scatter-gather reads)
and a fingerprint of the query it came from, signed with HMAC-SHA256. The key is taken
from ``DYNAORM_CURSOR_SECRET`` when set (do set it where cursors reach untrusted clients);
otherwise a fixed key still detects edits and cursors from other queries.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import os
from typing import Any

from .errors import InvalidCursorError

__all__ = ["decode_cursor_state", "encode_cursor", "fingerprint"]

_DEFAULT_SECRET = b"dynaorm-cursor-v1"


def _secret() -> bytes:
    env = os.environ.get("DYNAORM_CURSOR_SECRET")
    return env.encode() if env else _DEFAULT_SECRET


def fingerprint(shape: Any) -> str:
    """A short digest of a query's shape (table, index, key condition, filter, order)."""
    text = json.dumps(shape, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def encode_cursor(query_fingerprint: str, positions: list[Any], served: int = 0) -> str:
    """``served``: results already returned by earlier pages (so ``limit`` holds in all)."""
    data: dict[str, Any] = {"q": query_fingerprint, "p": positions}
    if served:
        data["n"] = served
    body = json.dumps(data, separators=(",", ":"), sort_keys=True).encode()
    mac = hmac.new(_secret(), body, hashlib.sha256).digest()[:16]
    return _b64(body) + "." + _b64(mac)


def decode_cursor_state(cursor: str, query_fingerprint: str,
                        shards: int) -> tuple[list[Any], int]:
    """Resume positions and the count of results already served, from ``cursor``."""
    if not isinstance(cursor, str) or cursor.count(".") != 1:
        raise InvalidCursorError("malformed page cursor")
    body_text, mac_text = cursor.split(".")
    try:
        body, mac = _unb64(body_text), _unb64(mac_text)
    except (binascii.Error, ValueError) as exc:
        raise InvalidCursorError("malformed page cursor") from exc
    expected = hmac.new(_secret(), body, hashlib.sha256).digest()[:16]
    if not hmac.compare_digest(mac, expected):
        raise InvalidCursorError("page cursor was altered or signed with another secret")
    try:
        data = json.loads(body)
    except ValueError as exc:  # pragma: no cover - a valid MAC implies our own JSON
        raise InvalidCursorError("malformed page cursor") from exc
    if data.get("q") != query_fingerprint:
        raise InvalidCursorError("page cursor belongs to another query")
    positions = data.get("p")
    served = data.get("n", 0)
    if not isinstance(positions, list) or len(positions) != shards or not isinstance(
            served, int):
        raise InvalidCursorError("page cursor does not fit this query")
    return positions, served
