"""dynaorm on asyncio (``pip install "dynaorm[async]"``): ``dynaorm.AsyncSession`` runs the
same protocols as ``Session`` through its client's async driver. Two helpers remain from
0.2 for code that manages aiobotocore clients by table: :func:`client` and :func:`close`."""

from typing import Any

from dynaorm.client.client import live_clients


async def client(table: Any) -> Any:
    """The aiobotocore client ``table``'s :class:`~dynaorm.Client` sends through in this
    event loop with ``wire="botocore"`` (register handlers on ``client.meta.events`` to
    instrument it; dynaorm's own wire does not go through it)."""
    return await table.db.aiobotocore()


async def close(table: Any = None) -> None:
    """Close the connections made in the running event loop by ``table``'s client
    (default: by every client) now, rather than when the loop ends (a later request opens
    new ones). ``await client.aclose()`` does the same for one :class:`~dynaorm.Client`."""
    clients = [table.db] if table is not None else live_clients()
    for each in clients:
        await each.aclose()
