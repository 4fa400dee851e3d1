"""dynaorm's own DynamoDB wire on asyncio: the async counterpart of
:class:`dynaorm.wire.SyncWire`, over one aiohttp ``ClientSession`` per wire.

A request is rendered and signed by :func:`dynaorm.wire.prepare` (the one signing path of
both wires: :class:`dynaorm.wire.sigv4.Signer`), sent over a keep-alive aiohttp connector,
its answer checked against ``x-amz-crc32`` and decoded with :func:`dynaorm.wire.decode`.
Endpoint, region, timeouts, proxies, TLS verification and ``User-Agent`` are read once from
the (aio)botocore client the async transport creates for the table, as the sync wire reads
them, so a configuration that works with that client works here. Failures are raised as the
botocore exceptions aiobotocore raises for them (``ClientError`` with the same
``error_response``, ``EndpointConnectionError``, ``ConnectTimeoutError``,
``ReadTimeoutError``, ``ConnectionClosedError``, ``SSLError``, ``ProxyConnectionError``; a
crc32 mismatch as the sync wire's checksum error, a lost answer), so
:func:`~dynaorm.transport.errors.map_error` and the retry rules see the same failures
whichever wire is under them.
"""

from __future__ import annotations

import asyncio
import socket
import zlib
from typing import Any
from urllib.parse import urlsplit

from dynaorm.wire import (
    _checksum_error,
    _proxy_for,
    _user_agent,
    decode,
    error_response,
    prepare,
    tls_verify,
)
from dynaorm.wire.sigv4 import Signer

__all__ = ["KEEPALIVE_SECONDS", "AsyncWire"]

#: seconds an idle connection stays in the pool (aiobotocore's default)
KEEPALIVE_SECONDS = 12.0


class AsyncWire:
    """Sends DynamoDB requests for one table in one event loop: resolved once from
    ``client`` (an aiobotocore or botocore client: its endpoint, region and config) and
    ``credentials`` (botocore credentials, :func:`dynaorm.wire.credentials_for`).

    The aiohttp session is made on the first :meth:`send` (inside the running loop) and
    closed by :meth:`close` (the async transport's close path; ``async with`` works too).

    Credentials are frozen for every request with the sync ``get_frozen_credentials()``:
    a refreshable set refreshes there when due, which may block the loop for the refresh
    (an STS or metadata call), as aiobotocore's own path does for botocore's non-async
    credential providers. Between refreshes it is a lock and a few attribute reads.
    """

    def __init__(self, client: Any, credentials: Any) -> None:
        meta = client.meta
        self.endpoint_url: str = meta.endpoint_url
        self.region: str = meta.region_name
        # the request target: the endpoint's path, "/" when it has none (as botocore sends
        # it; a proxy is given the absolute URL and must see a path)
        self._url = (self.endpoint_url if urlsplit(self.endpoint_url).path else
                     self.endpoint_url + "/")
        config = meta.config
        self._credentials = credentials
        self._user_agent = _user_agent(config)
        self._signer = Signer(self.endpoint_url, self.region)
        self.connect_timeout: float | None = config.connect_timeout
        self.read_timeout: float | None = config.read_timeout
        #: connections kept open at most (the client config's ``max_pool_connections``)
        self.pool_size = int(getattr(config, "max_pool_connections", 10) or 10)
        #: ``False`` or the CA bundle TLS connections are verified against (the client's)
        self.verify = tls_verify(client)
        self._client_cert = getattr(config, "client_cert", None)
        proxy, proxy_headers = _proxy_for(self.endpoint_url, config)
        #: the proxy requests go through (``Config(proxies=)``, else ``HTTPS_PROXY`` /
        #: ``HTTP_PROXY`` unless ``NO_PROXY`` covers the endpoint), as botocore decides
        self.proxy: str | None = proxy
        self._proxy_headers = proxy_headers
        self._session: Any = None
        self._lock: asyncio.Lock | None = None

    # -- the session -------------------------------------------------------------------
    def _ssl(self) -> Any:
        """The connector's TLS context, made as botocore makes it: no verification for
        ``verify=False``, else against the client's CA bundle; the client certificate of
        ``Config(client_cert=)`` if any."""
        import ssl

        from botocore.httpsession import create_urllib3_context

        context = create_urllib3_context()
        if self.verify is False:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        else:
            context.check_hostname = True
            context.load_verify_locations(self.verify, None, None)
        cert = self._client_cert
        if cert:
            context.load_cert_chain(*((cert,) if isinstance(cert, str) else cert))
        return context

    async def _open(self) -> Any:
        import aiohttp

        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._session is None:
                ssl_context = (await asyncio.to_thread(self._ssl)
                               if self.endpoint_url.startswith("https:") else None)
                connector = aiohttp.TCPConnector(
                    limit=self.pool_size, keepalive_timeout=KEEPALIVE_SECONDS,
                    ssl=ssl_context if ssl_context is not None else True)
                self._session = aiohttp.ClientSession(
                    connector=connector,
                    timeout=aiohttp.ClientTimeout(sock_connect=self.connect_timeout,
                                                  sock_read=self.read_timeout),
                    skip_auto_headers={"Accept-Encoding", "Content-Type", "User-Agent"},
                    auto_decompress=False)
        return self._session

    @property
    def closed(self) -> bool:
        """Whether no aiohttp session is open (none made yet, or closed)."""
        return self._session is None or bool(self._session.closed)

    async def close(self) -> None:
        """Close the aiohttp session and its connections (a later :meth:`send` opens a
        new one)."""
        session, self._session = self._session, None
        if session is not None:
            await session.close()

    async def __aenter__(self) -> AsyncWire:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- requests ----------------------------------------------------------------------
    async def send(self, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``request`` once; the answer as an aiobotocore client returns it."""
        import aiohttp
        from botocore.exceptions import (
            ClientError,
            ConnectionClosedError,
            ConnectTimeoutError,
            EndpointConnectionError,
            HTTPClientError,
            ProxyConnectionError,
            ReadTimeoutError,
            SSLError,
        )
        from botocore.httpsession import mask_proxy_url

        body, headers = prepare(self._signer, self._credentials, self._user_agent,
                                operation, request)
        headers["Accept-Encoding"] = "identity"
        session = self._session
        if session is None or session.closed:
            session = await self._open()
        url = self._url
        try:
            async with session.post(url, data=body, headers=headers, proxy=self.proxy,
                                    proxy_headers=self._proxy_headers or None) as resp:
                data = await resp.read()
                status = resp.status
                answer_headers = {k.lower(): v for k, v in resp.headers.items()}
        except aiohttp.ClientSSLError as exc:
            raise SSLError(endpoint_url=url, error=exc) from exc
        except (aiohttp.ClientProxyConnectionError, aiohttp.ClientHttpProxyError) as exc:
            raise ProxyConnectionError(proxy_url=mask_proxy_url(str(self.proxy)),
                                       error=exc) from exc
        except (aiohttp.ServerDisconnectedError, aiohttp.ClientPayloadError) as exc:
            raise ConnectionClosedError(endpoint_url=url, error=exc) from exc
        except aiohttp.ConnectionTimeoutError as exc:
            raise ConnectTimeoutError(endpoint_url=url, error=exc) from exc
        except aiohttp.ServerTimeoutError as exc:  # the read timeout
            raise ReadTimeoutError(endpoint_url=url, error=exc) from exc
        except aiohttp.ClientConnectorError as exc:  # not sent: refused, no route, DNS
            raise EndpointConnectionError(endpoint_url=url, error=exc) from exc
        except aiohttp.ClientOSError as exc:  # sent, then the connection failed
            raise ConnectionClosedError(endpoint_url=url, error=exc) from exc
        except (aiohttp.ClientConnectionError, socket.gaierror) as exc:
            raise EndpointConnectionError(endpoint_url=url, error=exc) from exc
        except TimeoutError as exc:
            raise ReadTimeoutError(endpoint_url=url, error=exc) from exc
        except aiohttp.ClientError as exc:  # a malformed answer, ...
            raise HTTPClientError(error=exc) from exc
        crc = answer_headers.get("x-amz-crc32")
        if crc is not None:
            actual = zlib.crc32(data) & 0xFFFFFFFF
            if not crc.isdigit() or int(crc) != actual:
                raise _checksum_error()(checksum_type="crc32", expected_checksum=crc,
                                        actual_checksum=str(actual),
                                        error="x-amz-crc32 mismatch")
        if status >= 300:
            raise ClientError(error_response(status, data, answer_headers),  # type: ignore[arg-type]
                              operation)
        return decode(data)
