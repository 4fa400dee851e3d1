"""Which engine answers at an endpoint: tests whose allowances differ by engine (limits a
few bytes off DynamoDB's, features an engine lacks) key them on the engine, also when the
suite runs against an arbitrary endpoint (``--dynaorm-endpoint URL``).

The engines name themselves in the ``Server`` header of any answer, even a refusal of an
unsigned request: dynoxide ``Dynoxide/<version>``, DynamoDB Local ``Jetty(<version>)``.
Anything else (DynamoDB itself, or an engine not known here) is ``"endpoint"``: held to
DynamoDB's exact behaviour.
"""

from __future__ import annotations

import functools
import http.client
from typing import Final
from urllib.parse import urlsplit

__all__ = ["identify"]

_TIMEOUT: Final = 5.0


@functools.cache
def identify(endpoint_url: str) -> str:
    """``"dynoxide"``, ``"local"`` (DynamoDB Local) or ``"endpoint"`` (anything else)."""
    parts = urlsplit(endpoint_url)
    kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
    connection = kind(parts.hostname or "127.0.0.1", parts.port, timeout=_TIMEOUT)
    try:
        connection.request("POST", parts.path or "/", body=b"{}", headers={
            "X-Amz-Target": "DynamoDB_20120810.ListTables",
            "Content-Type": "application/x-amz-json-1.0"})
        server = connection.getresponse().getheader("Server") or ""
    except OSError:
        return "endpoint"
    finally:
        connection.close()
    if server.startswith("Dynoxide"):
        return "dynoxide"
    if server.startswith("Jetty"):
        return "local"
    return "endpoint"
