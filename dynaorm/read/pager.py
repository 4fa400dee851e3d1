"""Paging state of a read (pure: no I/O): :class:`Pager` over one or more streams (the
shards of a scatter-gather query, the segments of a parallel scan). It says which requests
must be answered before the next results can be chosen, takes their responses, hands
results out in key order (or in any order for scans), a run of them at a time, and gives
the resume position of every stream after the results handed out: that is what a cursor
stores (positions, never items).

A driver only sends what :meth:`Pager.wants` asks for and feeds the answers back.
"""

import math
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from dynaorm._types import Item, Reader
from dynaorm.values.keys import key_order, key_value

#: A cursor position meaning "this stream has nothing left".
DONE: Final = False


def per_request_limit(remaining: int, live: int) -> int:
    """DynamoDB ``Limit`` per stream when ``remaining`` results are wanted from ``live``
    streams: about an even share (plus one, so that a shard rarely runs dry mid-page)."""
    if live <= 1:
        return max(1, remaining)
    return math.ceil(remaining / live) + 1


@dataclass
class Pager:
    """Paging state over streams (pure). ``positions[i]``: ``None`` (start), a key
    (resume after it) or :data:`DONE`."""

    requests: Sequence[dict[str, Any]]
    positions: list[Any]
    #: the results among a response's items, in order (:meth:`Selection.kept`)
    keep: Callable[[Sequence[Item]], list[Item]]
    #: the position after an item (or what gives it, when asked: see Selection.position)
    position_of: Callable[[Item], Any]
    ordered: bool = True
    reverse: bool = False
    order_attrs: tuple[str | None, str] = (None, "pk")
    #: tells items no entity owns (counted in ``skipped``); None: nothing is foreign
    foreign: Callable[[Item], bool] | None = None
    #: how the answers may be read from their bytes into objects (see
    #: :meth:`~dynaorm.read.selection.Selection.reader`); a merge of several ordered
    #: streams has none (it orders the items by their stored keys)
    reader: Reader | None = None
    #: items read that no entity owns
    skipped: int = 0
    _buffers: list[deque[Item]] = field(init=False)
    _resume: list[Any] = field(init=False)

    def __post_init__(self) -> None:
        self.positions = list(self.positions)
        self._buffers = [deque() for _ in self.requests]
        self._resume = list(self.positions)

    def wants(self, limit: Callable[[int], int | None]) -> list[tuple[int, dict[str, Any]]]:
        """Requests to answer before the next result can be chosen (empty: call
        :meth:`take`). ``limit(live)`` gives each request's ``Limit`` (``None``: no Limit)."""
        buffers, resume = self._buffers, self._resume
        empty = [i for i in range(len(buffers)) if not buffers[i] and resume[i] is not DONE]
        if not empty or (not self.ordered and any(buffers)):
            return []  # (a scan hands out what it holds before reading on)
        size = limit(len(self.positions) - self.positions.count(DONE))  # (streams live)
        out = []
        for i in empty:
            request = dict(self.requests[i])
            start = resume[i]
            if start:
                request["ExclusiveStartKey"] = start
            if size is not None:
                request["Limit"] = size
            out.append((i, request))
        return out

    def feed(self, i: int, response: Mapping[str, Any]) -> None:
        """The answer to stream ``i``'s request."""
        items = response.get("Items", ())
        kept = self.keep(items)
        self._buffers[i].extend(kept)
        if self.foreign is not None and len(kept) < len(items):  # (a foreign item is
            self.skipped += sum(1 for item in items if self.foreign(item))  # never kept)
        self._resume[i] = response.get("LastEvaluatedKey") or DONE
        if not self._buffers[i]:
            self.positions[i] = self._resume[i]

    def take(self, room: int | None = None) -> list[Item]:
        """The next results, at most ``room`` (``None``: no bound), in order (empty:
        nothing left). Only valid when :meth:`wants` asked for nothing.

        The same results, in the same order, with the same positions after them, as
        taking them one at a time: it hands out a run of one stream's buffer (or, for
        a scan, the buffers in stream order) in one step, and a stream's position is
        computed once, after the last result taken from it.
        """
        if room is not None and room <= 0:
            return []
        buffers = self._buffers
        if len(buffers) == 1 or not self.ordered:
            out: list[Item] = []
            for i, buf in enumerate(buffers):
                if not buf:
                    continue
                want = len(buf) if room is None else min(len(buf), room - len(out))
                self._take_run(i, want, out)
                if room is not None and len(out) >= room:
                    break
            return out
        return self._merge(room)

    def _take_run(self, i: int, n: int, out: list[Item]) -> None:
        """Move the first ``n`` results of stream ``i``'s buffer to ``out``."""
        buf = self._buffers[i]
        if n == len(buf):
            out.extend(buf)
            buf.clear()
            self.positions[i] = self._resume[i]
            return
        popleft = buf.popleft
        for _ in range(n):
            out.append(popleft())
        self.positions[i] = self.position_of(out[-1])

    def _merge(self, room: int | None) -> list[Item]:
        """Ordered results of several streams: the least (greatest, reversed) head first,
        until ``room`` is filled or a stream that may hold more runs dry (it must be read
        on before the next result can be chosen)."""
        buffers, resume = self._buffers, self._resume
        sk, pk = self.order_attrs

        def order(j: int) -> tuple[Any, Any]:
            item = buffers[j][0]
            return (key_order(key_value(item[sk])) if sk else "",
                    key_order(key_value(item[pk])))

        out: list[Item] = []
        while room is None or len(out) < room:
            heads = [i for i, b in enumerate(buffers) if b]
            if not heads:
                break
            if len(heads) == 1:
                i = heads[0]
            else:
                i = max(heads, key=order) if self.reverse else min(heads, key=order)
            buf = buffers[i]
            item = buf.popleft()
            out.append(item)
            if buf:
                self.positions[i] = self.position_of(item)
            else:
                self.positions[i] = resume[i]
                if resume[i] is not DONE:
                    break
        return out

    @property
    def exhausted(self) -> bool:
        return self.positions.count(DONE) == len(self.positions)  # (DONE: False)
