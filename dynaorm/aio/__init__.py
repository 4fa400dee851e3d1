"""dynaorm on asyncio (``pip install "dynaorm[async]"``): :class:`AsyncSession` and its
query objects, thin drivers of the protocols the sync session runs."""

from __future__ import annotations

from dynaorm.aio.reads import AsyncQuery, AsyncRead, AsyncScan
from dynaorm.aio.session import AsyncSession
from dynaorm.transport.aio import AsyncTransport, client, close

__all__ = ["AsyncQuery", "AsyncRead", "AsyncScan", "AsyncSession", "AsyncTransport",
           "client", "close"]
