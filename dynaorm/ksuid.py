"""Monotonic KSUIDs: 27-character, time-ordered identifiers (svix-ksuid underneath)."""

import threading

__all__ = ["ksuid"]

_lock = threading.Lock()
_last = b""
_MAX = (1 << 160) - 1


def ksuid() -> str:
    """A new KSUID, strictly greater than every earlier one returned in this process.

    svix-ksuid alone has one-second (or, for ``KsuidMs``, 4 ms) resolution and random
    payloads, so two ids from the same instant sort at random. When a fresh id would not
    sort after the previous one, this returns the previous one plus one instead (the
    timestamp part stays; the payload counts up), as monotonic ULID generators do.
    """
    from ksuid import Ksuid  # (svix-ksuid: imported by the first id, not by ``import dynaorm``)

    global _last
    fresh = bytes(Ksuid())
    with _lock:
        if fresh <= _last:
            value = int.from_bytes(_last, "big") + 1
            if value > _MAX:  # pragma: no cover - needs 2**128 ids within one second
                raise OverflowError("KSUID space of this second exhausted")
            fresh = value.to_bytes(20, "big")
        _last = fresh
    return str(Ksuid.from_bytes(fresh))
