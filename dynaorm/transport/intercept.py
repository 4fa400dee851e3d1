"""The interception point at a transport's send boundary (see
:attr:`dynaorm.transport.sync.Transport.interceptor`): every raw send of a table -- one
attempt of one request, from a :class:`~dynaorm.Session` or an :class:`~dynaorm.AsyncSession`
(the async transport uses the table's sync transport's interceptor) -- goes through
:meth:`Interceptor.send` / :meth:`Interceptor.send_async`, which get the operation, the
request and ``forward``, a callable that performs the raw send on the wire. An interceptor
may answer without sending, raise a :class:`~dynaorm.RequestError`, or call ``forward`` and
then fail anyway. It sits below the retry rules and above the wire, so what it does is seen
by the retry layer exactly as a real answer or failure. :func:`dynaorm.testing.inject_faults`
is the public interceptor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Protocol

__all__ = ["Interceptor", "Response"]

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
