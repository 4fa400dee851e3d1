"""A clock the test moves: what a lease reads as now (``JobLease.clock``, the LangGraph
saver's ``lease_row.clock``), never moved by sleeping."""

from __future__ import annotations


class Clock:
    """Seconds since the epoch (``now``), moved by the test."""

    def __init__(self) -> None:
        self.now = 1_800_000_000.0

    def __call__(self) -> float:
        return self.now
