"""dynaorm on asyncio (``pip install "dynaorm[async]"``): ``dynaorm.AsyncSession`` runs the
same protocols as ``Session`` through each table's async transport (one aiobotocore client
per table and event loop). This module keeps those transports and offers the two public
functions that manage their clients: :func:`client` and :func:`close`."""

from __future__ import annotations

import weakref
from typing import Any

from dynaorm.transport.aio import AsyncTransport, Table

__all__ = ["client", "close", "transport_of"]

_TRANSPORTS: weakref.WeakKeyDictionary[Any, AsyncTransport] = weakref.WeakKeyDictionary()
_RETIRED: list[AsyncTransport] = []  # replaced (the table moved), clients still to close


def transport_of(table: Table) -> AsyncTransport:
    """The table's async transport (one per table and endpoint; a ``Table.connect`` to
    another endpoint gets a new one)."""
    transport = _TRANSPORTS.get(table)
    if transport is None or (transport.endpoint_url, transport.region) != (
            table.endpoint_url, table.region):
        if transport is not None and transport._contexts:
            _RETIRED.append(transport)
        transport = _TRANSPORTS[table] = AsyncTransport(table)
    return transport


async def client(table: Table) -> Any:
    """The aiobotocore client AsyncSessions on ``table`` send through in this event loop
    (register handlers on ``client.meta.events`` to instrument or inject faults)."""
    return await transport_of(table).client()


async def close(table: Table | None = None) -> None:
    """Close the aiobotocore clients of ``table`` (default: of every table) made in the
    running event loop; call it before the loop ends (a later request makes new ones)."""
    if table is not None:
        found = _TRANSPORTS.get(table)
        transports = [found] if found is not None else []
    else:
        transports = [*_TRANSPORTS.values(), *_RETIRED]
    for transport in transports:
        await transport.close()
    _RETIRED[:] = [t for t in _RETIRED if t._contexts]
