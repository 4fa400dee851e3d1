"""Consumed capacity by entity and row role, at run time (pure: no I/O).

DynamoDB reports what a request consumed by table and index, not by the items it wrote.
A commit's request carries its *shares* (:data:`Shares`): for each action, the entity, the
role of the row it writes (``row``, ``latest copy``, ``version row``, ``unique guard``,
``check``, and ``index entry`` for its index entries) and what it weighs on each table and
``table/index`` (the units :mod:`dynaorm.core.explain` prices it at). The units DynamoDB
reports for a table or an index are split over the shares on it by weight
(:func:`attribute`), so they add up to exactly what was reported. A read's units go to its
entity types (``read``, and ``index read`` for an index's). A vector search reports no
units but bytes (``VectorSearchRequestBytes``, metered apart from units): they go to its
entity types as ``vector search bytes`` (:func:`searched`). A client's :class:`Meter`
keeps the totals (``client.capacity()``); tracing puts each attempt's on its span.
"""

import threading
from collections.abc import Mapping
from typing import Any

#: ``(entity, role, "table" or "table/index", weight)`` for each row a request writes
Shares = tuple[tuple[str, str, str, float], ...]
#: the role a vector search's consumed bytes are counted under (bytes, not units)
SEARCH_BYTES = "vector search bytes"


def attribute(shares: Shares, origins: tuple[Any, ...], consumed: Mapping[str, float]
              ) -> dict[tuple[str, str], float]:
    """``consumed`` (units by table and ``table/index``, :func:`~dynaorm.protocol.events.
    capacity_of`) by ``(entity, role)``: split over ``shares`` by weight where a write
    carries them, else to the entity types of ``origins`` (a read's)."""
    out: dict[tuple[str, str], float] = {}
    for name, units in consumed.items():
        if not units:
            continue
        on = [(e, r, w) for e, r, where, w in shares if where == name]
        total = sum(w for _, _, w in on)
        if on:  # (none priced: evenly)
            for entity, role, weight in on:
                share = weight / total if total > 0 else 1 / len(on)
                if share:
                    out[(entity, role)] = out.get((entity, role), 0.0) + units * share
            continue
        key = (_entities(origins), "index read" if "/" in name else "read")
        out[key] = out.get(key, 0.0) + units
    return out


def _entities(origins: tuple[Any, ...]) -> str:
    """The entity types a read's ``origins`` name, joined by ``|`` (``-``: none)."""
    names = [o.__name__ if isinstance(o, type) else o[0].__name__ for o in origins
             if isinstance(o, type) or (isinstance(o, tuple) and isinstance(o[0], type))]
    return "|".join(dict.fromkeys(names)) or "-"


def searched(origins: tuple[Any, ...], response: Mapping[str, Any]
             ) -> dict[tuple[str, str], float]:
    """A ``SearchVectors`` answer's consumed capacity, by ``(entity, role)``: its
    ``VectorSearchRequestBytes`` to the entity types searched, as :data:`SEARCH_BYTES`
    (a search is metered in bytes, apart from capacity units); nothing for any other
    answer."""
    raw = response.get("ConsumedCapacity")
    if not isinstance(raw, Mapping) or "VectorSearchRequestBytes" not in raw:
        return {}
    return {(_entities(origins), SEARCH_BYTES): float(raw["VectorSearchRequestBytes"])}


class Meter:
    """The consumed capacity of a client's requests by entity and role, added up since it
    was made or last reset (thread-safe)."""

    __slots__ = ("_lock", "_totals")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[str, dict[str, float]] = {}

    def add(self, by: Mapping[tuple[str, str], float]) -> None:
        """Add units by ``(entity, role)``."""
        with self._lock:
            for (entity, role), units in by.items():
                roles = self._totals.setdefault(entity, {})
                roles[role] = roles.get(role, 0.0) + units

    def renew(self) -> None:
        """Start from 0 with a lock of its own (in a child of ``os.fork()``: what the parent
        consumed is the parent's, and its lock may be held by a thread the child has
        not)."""
        self._lock = threading.Lock()
        self._totals = {}

    def totals(self, reset: bool = False) -> dict[str, dict[str, float]]:
        """The totals, ``{entity: {role: units}}`` (``reset``: and start again from 0)."""
        with self._lock:
            out = {e: dict(r) for e, r in self._totals.items()}
            if reset:
                self._totals.clear()
        return out
