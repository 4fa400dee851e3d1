"""The official ``mcp`` SDK's client, as the MCP server's tests drive it: in memory
(:func:`call`), and over streamable HTTP against ``dynaorm mcp --http`` in a subprocess
(:func:`http_server`, :func:`http_client`)."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

from mcp import Client

__all__ = ["ROOT", "call", "http_client", "http_server", "text"]

ROOT = Path(__file__).resolve().parents[2]


def call(srv: Any, *calls: tuple[str, dict[str, Any]]) -> list[Any]:
    """Each call's result, one after another, through one in-memory client session."""
    async def go() -> list[Any]:
        async with Client(srv) as client:
            return [await client.call_tool(name, args) for name, args in calls]
    return asyncio.run(go())


def text(result: Any) -> str:
    """The text of a tool result's content."""
    return "".join(getattr(c, "text", "") for c in result.content)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextmanager
def http_server(endpoint: str, *args: str, module: str = "tests.support.tenant_models:tenants"
                ) -> Iterator[str]:
    """``dynaorm mcp MODULE --http`` against ``endpoint`` with ``args`` in a subprocess,
    once it accepts connections: its URL (stopped on leaving)."""
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dynaorm", "mcp", module, "--endpoint-url", endpoint,
         "--http", f"127.0.0.1:{port}", *args],
        env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT),
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (
                    proc.stderr.read() if proc.stderr else "")
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@asynccontextmanager
async def http_client(url: str, headers: Sequence[tuple[str, str]] | dict[str, str]
                      ) -> AsyncIterator[Client]:
    """An SDK client of the server at ``url`` whose every request carries ``headers``."""
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient(headers=headers, timeout=30) as http, Client(
            streamable_http_client(url, http_client=http)) as client:
        yield client
