"""dynaorm's own DynamoDB wire on asyncio: the async counterpart of
:class:`dynaorm.wire.SyncWire`, one per client and event loop (:class:`dynaorm.wire.Wire`
opens it with the loop's first request).

A request is rendered and signed as on the sync wire (:meth:`dynaorm.wire.WireSettings.
prepare`), sent over keep-alive connections of the running loop
(:class:`dynaorm.wire.http.AsyncHTTPPool`, an ``asyncio.Protocol`` per connection; through
a proxy, one aiohttp ``ClientSession``), its answer checked and decoded by
:func:`dynaorm.wire.checked_answer`. Failures are raised as the sync wire raises them:
:class:`~dynaorm.RequestError` classes that say whether the request was sent.
"""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Callable
from typing import Any

from dynaorm.errors import AnswerLostError, DynaormError, RequestError, RequestNotSentError
from dynaorm.private_apis import PROXY_HOOK, proxy_tls_connector
from dynaorm.wire import (
    CONNECTION_ERROR,
    Endpoint,
    WireSettings,
    checked_answer,
    failed,
    proxy_tls_context,
)
from dynaorm.wire.http import AsyncHTTPPool, WireFailure, tls_context

__all__ = ["KEEPALIVE_SECONDS", "AsyncWire"]

#: seconds an idle connection stays in the pool (aiobotocore's default)
KEEPALIVE_SECONDS = 12.0


class AsyncWire(WireSettings):
    """Sends one client's DynamoDB requests to its :class:`~dynaorm.wire.Endpoint` in one
    event loop.

    Connections (or, through a proxy, the aiohttp session) are opened by :meth:`send`
    inside the running loop and closed by :meth:`close` (the client's ``aclose``;
    ``async with`` works too).

    Credentials are frozen for every request with the sync ``get_frozen_credentials()``:
    a refreshable set refreshes there when due, which may block the loop for the refresh
    (an STS or metadata call), as aiobotocore's own path does for botocore's non-async
    credential providers. Between refreshes it is a lock and a few attribute reads.
    """

    def __init__(self, endpoint: Endpoint) -> None:
        super().__init__(endpoint)
        self._session: Any = None
        self._lock: asyncio.Lock | None = None
        # without a proxy: dynaorm's own keep-alive connections (dynaorm.wire.http);
        # through one: an aiohttp session (CONNECT tunnels, proxy authentication)
        self._direct: AsyncHTTPPool | None = (
            AsyncHTTPPool(self._destination()) if self.proxy is None else None)
        if self.proxy is not None:
            self._check_proxy_tls()

    def _check_proxy_tls(self) -> None:
        """Refuse a ``proxies_config`` this aiohttp cannot honour (the connection to the
        proxy needs its own TLS context: aiohttp 3.13.3 or later) rather than verify the
        proxy with the endpoint's settings."""
        import aiohttp

        given = [key for key in ("proxy_ca_bundle", "proxy_client_cert")
                 if self.proxies_config.get(key) is not None]
        if given and not hasattr(aiohttp.TCPConnector, PROXY_HOOK):
            raise DynaormError(
                f"proxies_config {given[0]!r} needs aiohttp 3.13.3 or later on the async "
                f"wire (installed: aiohttp {aiohttp.__version__}); upgrade aiohttp or use "
                f"wire='botocore'")

    # -- the session -------------------------------------------------------------------
    async def _open(self) -> Any:
        import aiohttp

        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._session is None:
                # both contexts read files: off the loop (as aiobotocore builds them)
                ssl_context, proxy_ssl = await asyncio.to_thread(self._tls_contexts)
                options: dict[str, Any] = {
                    "limit": self.pool_size, "keepalive_timeout": KEEPALIVE_SECONDS,
                    "ssl": ssl_context if ssl_context is not None else True}
                if hasattr(aiohttp.TCPConnector, PROXY_HOOK):
                    connector = proxy_tls_connector()(proxy_ssl=proxy_ssl, **options)
                else:  # an old aiohttp: the proxy gets the endpoint's context
                    connector = aiohttp.TCPConnector(**options)
                self._session = aiohttp.ClientSession(
                    connector=connector,
                    timeout=aiohttp.ClientTimeout(sock_connect=self.connect_timeout,
                                                  sock_read=self.read_timeout),
                    skip_auto_headers={"Accept-Encoding", "Content-Type", "User-Agent"},
                    auto_decompress=False)
        return self._session

    def _tls_contexts(self) -> tuple[ssl.SSLContext | None, ssl.SSLContext]:
        """The endpoint's TLS context (``None`` for an ``http://`` one) and the proxy's
        (:func:`~dynaorm.wire.proxy_tls_context`). ``proxy_use_forwarding_for_https`` is
        not honoured: aiohttp always tunnels to an ``https://`` endpoint with ``CONNECT``,
        and aiobotocore ignores the key the same way."""
        ssl_context = (tls_context(self.verify, self._client_cert)
                       if self.endpoint_url.startswith("https:") else None)
        proxy_ssl = proxy_tls_context(str(self.proxy), self.proxies_config, self.verify)
        if proxy_ssl.verify_mode == ssl.CERT_REQUIRED:
            # asyncio gives an IP address to the context as the server name, so the
            # context can match it (urllib3 cannot; it matches an IP itself)
            proxy_ssl.check_hostname = True
        return ssl_context, proxy_ssl

    @property
    def closed(self) -> bool:
        """Whether no connection is kept open (none made yet, or closed)."""
        if self._direct is not None:
            return not self._direct._idle
        return self._session is None or bool(self._session.closed)

    async def close(self) -> None:
        """Close the wire's connections (a later :meth:`send` opens new ones)."""
        if self._direct is not None:
            await self._direct.close()
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> AsyncWire:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- requests ----------------------------------------------------------------------
    async def send(self, operation: str, request: dict[str, Any],
                   reader: Callable[[bytes], dict[str, Any] | None] | None = None
                   ) -> dict[str, Any]:
        """Send ``request`` once; the answer as an aiobotocore client returns it
        (``reader``: see :func:`~dynaorm.wire.checked_answer`), or its
        :class:`~dynaorm.RequestError`."""
        body, headers = self.prepare(operation, request)
        try:
            if self._direct is not None:
                return await self._direct.post(self._path, body, headers, checked_answer,
                                               operation, request, reader)
            return await self._via_proxy(operation, request, body, headers)
        except WireFailure as exc:
            raise failed(operation, exc) from exc

    async def _via_proxy(self, operation: str, request: dict[str, Any], body: bytes,
                         headers: dict[str, str]) -> dict[str, Any]:
        """Send through the proxy (aiohttp): no connection (refused, DNS, the proxy or TLS
        refused, a connect timeout) left the request unsent; a connection that broke or an
        answer that timed out after sending is a lost answer."""
        import aiohttp

        session = self._session
        if session is None or session.closed:
            try:
                session = await self._open()
            except Exception as exc:  # its TLS files do not load: nothing was sent
                raise RequestError(operation, type(exc).__name__, str(exc)) from exc
        try:
            async with session.post(self._url, data=body, headers=headers, proxy=self.proxy,
                                    proxy_headers=self._proxy_headers or None) as resp:
                data = await resp.read()
                status = resp.status
                answer_headers = {k.lower(): v for k, v in resp.headers.items()}
        except (aiohttp.ClientConnectorError, aiohttp.ClientHttpProxyError,
                aiohttp.ConnectionTimeoutError, socket.gaierror) as exc:
            raise RequestNotSentError(operation, CONNECTION_ERROR, _text(exc)) from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError,
                aiohttp.ServerTimeoutError, aiohttp.ClientOSError) as exc:
            raise AnswerLostError(operation, CONNECTION_ERROR, _text(exc)) from exc
        except aiohttp.ClientConnectionError as exc:  # (written to a connection found closed)
            raise RequestNotSentError(operation, CONNECTION_ERROR, _text(exc)) from exc
        except (aiohttp.ClientError, TimeoutError) as exc:  # a malformed answer, a timeout
            raise AnswerLostError(operation, CONNECTION_ERROR, _text(exc)) from exc
        return checked_answer(status, answer_headers, data, operation, request)


def _text(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"
