"""dynaorm's own DynamoDB wire on asyncio: one client's connections in one event loop
(:class:`dynaorm.wire.Wire` opens it with the loop's first request).

A request is rendered and signed as on the sync wire (:meth:`dynaorm.wire.WireSettings.
prepare`), sent over keep-alive connections of the running loop
(:class:`dynaorm.wire.http.AsyncHTTPPool`, an ``asyncio.Protocol`` per connection), its
answer checked and decoded by :func:`dynaorm.wire.checked_answer`. Through a proxy, the
request goes as the sync wire sends it (urllib3's ``ProxyManager``), on a worker thread:
one way through proxies for both kinds of session. Failures are raised as on the sync
wire: :class:`~dynaorm.RequestError` classes that say whether the request was sent.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from dynaorm.wire import SyncWire, WireSettings, checked_answer, failed
from dynaorm.wire.endpoint import Endpoint
from dynaorm.wire.http import AsyncHTTPPool, WireFailure

__all__ = ["AsyncWire"]


class AsyncWire(WireSettings):
    """Sends one client's DynamoDB requests to its endpoint in one event loop: connections
    opened by :meth:`send` inside the running loop, closed by :meth:`close` (the client's
    ``aclose``; ``async with`` works too).

    Credentials are frozen for every request with the sync ``get_frozen_credentials()``:
    a refreshable set refreshes there when due, which may block the loop for the refresh
    (an STS or metadata call), as aiobotocore's own path does for botocore's non-async
    credential providers. Between refreshes it is a lock and a few attribute reads.
    """

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(endpoint)
        self._proxied = None if endpoint.proxy is None else SyncWire(endpoint)
        self._direct = AsyncHTTPPool(self._destination()) if self._proxied is None else None

    @property
    def closed(self) -> bool:
        """Whether no connection is kept open (none made yet, or closed)."""
        if self._direct is not None:
            return not self._direct._idle
        return not len(self._proxied._manager.pools)  # type: ignore[union-attr]

    async def close(self) -> None:
        """Close the wire's connections (a later :meth:`send` opens new ones)."""
        if self._direct is not None:
            await self._direct.close()
        if self._proxied is not None:
            self._proxied.close()

    async def __aenter__(self) -> AsyncWire:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def send(self, operation: str, request: dict[str, Any],
                   reader: Callable[[bytes], dict[str, Any] | None] | None = None
                   ) -> dict[str, Any]:
        """Send ``request`` once; the answer as an aiobotocore client returns it
        (``reader``: see :func:`~dynaorm.wire.checked_answer`), or its
        :class:`~dynaorm.RequestError`."""
        if self._direct is None:  # through a proxy
            return await asyncio.to_thread(self._proxied.send,  # type: ignore[union-attr]
                                           operation, request, reader)
        body, headers = self.prepare(operation, request)
        try:
            return await self._direct.post(self._path, body, headers, checked_answer,
                                           operation, request, reader)
        except WireFailure as exc:
            raise failed(operation, exc) from exc
