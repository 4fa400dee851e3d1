"""A ``DeltaChannel``'s history (contract 24): the parent chain of one checkpoint walked
over its thread's rows read newest first (:class:`_Walk`, pure), as a paged ``Query``
brings them or as a ``list`` read them (carried by the configs it returns,
:class:`_Listed`: ``get_state_history`` asks a history of each checkpoint it lists)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from langgraph.checkpoint.base import DeltaChannelHistory, PendingWrite, writes_sort_key

_PAGE = 1000  # (rows a history's request asks for at most: DynamoDB stops at 1 MB)

_FIRST = 100  # (and first, before the target's metadata says how far back to read)


class _Walk:
    """The parent chain of one checkpoint, walked over rows read newest first (pure):
    what :meth:`~dynaorm.langgraph.Saver.get_delta_channel_history` answers, as the rows come."""

    def __init__(self, saver: Any, target: str | None, channels: Sequence[str],
                 ns: str, opened: dict[str, Any] | None = None) -> None:
        self.saver, self.channels, self.ns = saver, list(channels), ns
        self.opened = {} if opened is None else opened
        self.target = target
        self.at: str | None = None  # (the next ancestor to visit)
        self.started = False
        self.rows: dict[str, Any] = {}
        self.writes: dict[str, list[Any]] = {}
        self.remaining = set(channels)
        self.found: dict[str, list[PendingWrite]] = {c: [] for c in channels}
        self.seeds: dict[str, Any] = {}
        self.last: str | None = None  # (the sort key of the last row read)
        self.done = False
        self.depth: int | None = None  # (checkpoints to walk, as LangGraph counts them)
        self.visited = self.read_rows = 0

    def want(self) -> int:
        """Rows to ask for next: the first page ``_FIRST``; once the target's metadata
        counts the steps since each channel's snapshot, about what is left of the walk
        (rows a checkpoint, writes included, as read so far), else ``_PAGE``."""
        if not self.read_rows:
            return _FIRST
        if self.depth is None:
            return _PAGE
        per = self.read_rows / max(len(self.rows), 1)
        return max(25, min(_PAGE, int((self.depth - self.visited) * per * 1.5) + 20))

    def read(self, items: Sequence[Any]) -> None:
        self.read_rows += len(items)
        for r in items:
            if type(r) is self.saver.w:
                self.writes.setdefault(r.checkpoint_id, []).append(r)
                continue
            self.rows[r.checkpoint_id] = r
            self.last = r.checkpoint_id
            if not self.started and self.target in (None, r.checkpoint_id):
                self._start(r)
        if not self.started and self.last is not None and self.target is not None and _sk(
                self.ns, self.last) < _sk(self.ns, self.target):
            self.started = self.done = True  # (no such checkpoint: nothing to walk)
        while self.started and not self.done and self.at is not None and (
                self.at in self.rows):
            self._visit(self.rows[self.at])
        if self.started and not self.done and self.last is not None and _sk(
                self.ns, self.last) < _sk(self.ns, str(self.at)):
            self.done = True  # (read past where the parent sorts: it is not stored)

    def _start(self, r: Any) -> None:
        """Start the walk at ``r`` (the newest checkpoint, or the one named): its parent
        next, and as deep as its metadata counts, when it counts every channel."""
        self.started, self.at = True, r.parent
        self.done = r.parent is None
        counters = self._open(r)[1]
        if counters and all(c in counters for c in self.channels):
            self.depth = max(counters[c][1] for c in self.channels) + 2

    def _open(self, row: Any) -> tuple[frozenset[str], Any]:
        """The channels ``row`` stores a value of, and its metadata's counters since each
        delta snapshot: decoded once a walk (the list that read it decoded them)."""
        if (got := self.opened.get(row.checkpoint_id)) is None:
            got = self.opened[row.checkpoint_id] = (frozenset(self.saver._load(row.data)[
                "channel_values"]), self.saver._load(row.meta).get(
                "counters_since_delta_snapshot"))
        return got

    def _visit(self, row: Any) -> None:
        for w in reversed(_whole(self.writes.get(row.checkpoint_id, []))):
            if w.channel in self.remaining:
                self.found[w.channel].append((w.task_id, w.channel, self.saver._load(w.value)))
        if seeded := [c for c in self.remaining if c in self._open(row)[0]]:
            channels = self.saver._load(row.data)["channel_values"]  # (its own objects:
            for ch in seeded:  # a reducer may change its input in place)
                self.seeds[ch] = channels[ch]
                self.remaining.discard(ch)
        self.at, self.visited = row.parent, self.visited + 1
        self.done = not self.remaining or row.parent is None

    def result(self) -> dict[str, DeltaChannelHistory]:
        out: dict[str, DeltaChannelHistory] = {}
        for ch in self.channels:
            entry: DeltaChannelHistory = {"writes": self.found[ch][::-1]}
            if ch in self.seeds:
                entry["seed"] = self.seeds[ch]
            out[ch] = entry
        return out


class _Listed(dict[str, Any]):
    """The config of a checkpoint ``list`` returned, carrying the rows it read (``rows``),
    what it decoded of them (``opened``: see :meth:`~dynaorm.langgraph.Saver._tuples`) and
    the checkpoint's ``(saver, thread_id, ns, checkpoint_id)`` (``at``): a history asked
    of another saver, thread or checkpoint reads its own. Copied or pickled, a plain
    config."""

    rows: list[Any]
    opened: dict[str, Any]
    at: tuple[Any, ...]

    def __reduce__(self) -> Any:
        return dict, (dict(self),)


def _sk(ns: str, checkpoint_id: str) -> str:
    """A checkpoint's sort key (its entity's template): rows come in its order."""
    return f"C#{ns}#{checkpoint_id}#"


def _whole(writes: list[Any]) -> list[Any]:
    """A checkpoint's writes in LangGraph's order, less a task's written past one
    transaction and not all in yet (fewer regular rows than their ``total``: a
    ``put_writes`` stopped between its commits, to be run again)."""
    want: Counter[str] = Counter()
    have: Counter[str] = Counter()
    for w in writes:
        want[w.task_id] = max(want[w.task_id], w.total or 0)
        have[w.task_id] += w.idx >= 0
    return sorted((w for w in writes if have[w.task_id] >= want[w.task_id]),
                  key=lambda w: writes_sort_key(w.path, w.task_id, w.idx))

