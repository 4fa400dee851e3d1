"""Fault injection at the transport's send boundary: a table's requests throttled, answered
with a 5xx, or applied by the server and then losing their answer, for users' own tests
(public as :func:`dynaorm.testing.inject_faults`).

The interception point is :attr:`dynaorm.transport.sync.Transport.interceptor`: when set,
every raw send of the table -- one attempt of one request, from a :class:`~dynaorm.Session`
or an :class:`~dynaorm.AsyncSession` (the async transport uses the table's sync transport's
interceptor) -- goes through :meth:`Interceptor.send` / :meth:`Interceptor.send_async`, which
get the operation, the request and ``forward``, a callable that performs the raw send on the
wire. An interceptor may answer without sending, raise a :class:`~dynaorm.RequestError`, or
call ``forward`` and then fail anyway. Since it sits below the retry rules and above the
wire, an injected fault is seen by the retry layer exactly as a real one (the same
``RequestError`` code and ``maybe_applied``), on every engine and on any wire that sends
through the transport.

Example::

    from dynaorm.testing import inject_faults

    with inject_faults(table) as faults:
        faults.throttle("PutItem", times=2)        # two attempts refused (4xx, not applied)
        faults.server_error("UpdateItem")          # one attempt answered 500 (not applied)
        faults.lose_answer("DeleteItem", after=b)  # applied, ``b()`` runs, answer lost
        with Session(table) as s:
            ...
    assert faults.sent["PutItem"] == 3
"""

from __future__ import annotations

import inspect
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

from dynaorm.errors import RequestError

__all__ = ["FaultInjector", "Interceptor", "inject_faults"]

Response = dict[str, Any]


class Interceptor(Protocol):
    """What a transport calls around each raw send (one attempt of one request)."""

    def send(self, operation: str, request: dict[str, Any],
             forward: Callable[[], Response]) -> Response:
        """One attempt from the sync transport: ``forward()`` sends it on the wire."""
        ...  # pragma: no cover

    async def send_async(self, operation: str, request: dict[str, Any],
                         forward: Callable[[], Awaitable[Response]]) -> Response:
        """One attempt from the async transport: ``await forward()`` sends it."""
        ...  # pragma: no cover


#: ``after`` callbacks: plain functions, or (in an async session) coroutine functions
Callback = Callable[[], Any]


@dataclass
class _Rule:
    operation: str
    kind: str  # "throttle" | "server_error" | "lose_answer"
    left: int | None  # attempts still to fault (None: every attempt)
    skip: int  # attempts let through before the first fault
    after: Callback | None = None
    how: str = "timeout"  # how a lost answer fails: "timeout" or "500"


class FaultInjector:
    """The faults planned for one table's requests (see the module). Rules apply to the
    next attempts of an operation, in the order they were added; ``sent`` counts every
    attempt that reached the interceptor, per operation (faulted or not)."""

    def __init__(self) -> None:
        self._rules: list[_Rule] = []
        self._lock = threading.Lock()
        #: attempts per operation seen since the injector was installed
        self.sent: Counter[str] = Counter()

    # -- planning faults -------------------------------------------------------------
    def throttle(self, operation: str, *, times: int | None = 1, skip: int = 0) -> None:
        """The next ``times`` attempts of ``operation`` (``None``: all; after ``skip``
        attempts pass) are refused with ``ThrottlingException`` before reaching the
        server: nothing is applied."""
        self._add(_Rule(operation, "throttle", times, skip))

    def server_error(self, operation: str, *, times: int | None = 1, skip: int = 0) -> None:
        """The next ``times`` attempts of ``operation`` are answered with an
        ``InternalServerError`` (HTTP 500) without reaching the server. A 5xx may come
        after the server applied a request, so dynaorm treats it as possibly applied."""
        self._add(_Rule(operation, "server_error", times, skip))

    def lose_answer(self, operation: str, *, times: int | None = 1, skip: int = 0,
                    after: Callback | None = None, how: str = "timeout") -> None:
        """The next ``times`` attempts of ``operation`` are sent for real (the server
        applies them), then ``after()`` runs (another writer sequenced into the window:
        in an async session it may be a coroutine function), then the attempt fails:
        ``how="timeout"`` as a timeout or a dropped connection does (``ConnectionError``),
        ``how="500"`` as a server error after applying (``InternalServerError``); both
        possibly applied."""
        if how not in ("timeout", "500"):
            raise ValueError('how must be "timeout" or "500"')
        self._add(_Rule(operation, "lose_answer", times, skip, after, how))

    def clear(self) -> None:
        """Drop every planned fault (``sent`` is kept)."""
        with self._lock:
            self._rules.clear()

    def _add(self, rule: _Rule) -> None:
        if rule.left is not None and rule.left < 1:
            raise ValueError("times must be at least 1 (or None for every attempt)")
        with self._lock:
            self._rules.append(rule)

    def _next(self, operation: str) -> _Rule | None:
        """The rule that faults this attempt of ``operation``, if any (counted)."""
        with self._lock:
            self.sent[operation] += 1
            for rule in self._rules:
                if rule.operation != operation:
                    continue
                if rule.skip > 0:
                    rule.skip -= 1
                    return None
                if rule.left is not None:
                    rule.left -= 1
                    if rule.left <= 0:
                        self._rules.remove(rule)
                return rule
            return None

    # -- the interceptor -------------------------------------------------------------
    def send(self, operation: str, request: dict[str, Any],
             forward: Callable[[], Response]) -> Response:
        """The sync interception (see :class:`Interceptor`)."""
        rule = self._next(operation)
        if rule is None:
            return forward()
        if rule.kind != "lose_answer":
            raise _error(operation, rule.kind)
        try:
            forward()
        except RequestError:
            raise  # refused by the server: that is the answer
        if rule.after is not None:
            result = rule.after()
            if inspect.isawaitable(result):
                close = getattr(result, "close", None)
                if close is not None:
                    close()
                raise TypeError("a coroutine callback needs an AsyncSession")
        raise _error(operation, rule.kind, rule.how)

    async def send_async(self, operation: str, request: dict[str, Any],
                         forward: Callable[[], Awaitable[Response]]) -> Response:
        """The async interception (see :class:`Interceptor`)."""
        rule = self._next(operation)
        if rule is None:
            return await forward()
        if rule.kind != "lose_answer":
            raise _error(operation, rule.kind)
        await forward()
        if rule.after is not None:
            result = rule.after()
            if inspect.isawaitable(result):
                await result
        raise _error(operation, rule.kind, rule.how)


def _error(operation: str, kind: str, how: str = "timeout") -> RequestError:
    """The error a real fault of ``kind`` maps to (:mod:`dynaorm.transport.errors`)."""
    if kind == "throttle":
        return RequestError(operation, "ThrottlingException", "injected throttling")
    if kind == "server_error" or how == "500":
        err = RequestError(operation, "InternalServerError", "injected server error (500)")
    else:
        err = RequestError(operation, "ConnectionError",
                           "injected: the request was applied and its answer lost")
    err.maybe_applied = True
    return err


@contextmanager
def inject_faults(table: Any) -> Iterator[FaultInjector]:
    """Install a :class:`FaultInjector` on ``table``'s transport for the block (sync and
    async sessions alike); the interceptor installed before is restored afterwards."""
    transport = table.transport
    injector = FaultInjector()
    previous = transport.interceptor
    transport.interceptor = injector
    try:
        yield injector
    finally:
        transport.interceptor = previous
