"""The clients tables share when they are given none: the process's default client, and
one client per set of connection keywords (``Table(endpoint_url=..., region=...)``,
``table.connect(url)``), so that 0.3 code runs unchanged and tables that say the same thing
share one client (and can commit together).

A shared client is built from the configuration as it is when a table first needs one:
environment variables, the AWS config and credentials files, and whether an in-process mock
is on. When that changes (a test sets ``AWS_REGION``, writes a profile, starts moto), the
next table to bind gets a new client; tables already bound keep theirs, as each 0.3 table
kept its own connection in 0.3. Clients no table holds any more are collected.
"""

import os
import threading
import weakref
from collections.abc import Mapping
from typing import Any

from dynaorm.client.client import Client
from dynaorm.client.settings import expanded_path, in_process_mock_depth, shared_files

_CLIENTS: weakref.WeakValueDictionary[tuple[Any, ...], Client] = weakref.WeakValueDictionary()
_LOCK = threading.Lock()
_VARIABLES = ("AWS_", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy",
              "no_proxy", "REQUESTS_CA_BUNDLE")


def _file(path: str) -> tuple[str, int, int]:
    """A shared file's (path, modification time, size), found where botocore looks
    (:func:`~dynaorm.client.settings.expanded_path`); (path, -1, -1) when there is none."""
    try:
        found = os.stat(expanded_path(path))
    except OSError:
        return (path, -1, -1)
    return (path, found.st_mtime_ns, found.st_size)


def configuration_fingerprint() -> tuple[Any, ...]:
    """What a client built now would read: the AWS and proxy environment variables, the
    config and credentials files (path, modification time, size), and whether an
    in-process mock is on."""
    env = tuple(sorted((k, v) for k, v in os.environ.items() if k.startswith(_VARIABLES)))
    files = tuple(_file(path) for path in shared_files())
    return (env, files, in_process_mock_depth() > 0)


def shared_client(settings: Mapping[str, Any], table: str) -> Client:
    """The client tables with these connection ``settings`` (``Client``'s keyword
    arguments; empty: the default client) share under the current configuration;
    ``table`` names the table asking (messages about the client name its tables)."""
    key = (tuple(sorted(settings.items())), configuration_fingerprint())
    with _LOCK:
        found = _CLIENTS.get(key)
        if found is None:
            found = _CLIENTS[key] = Client(**settings)
            found._label = f"table {table!r}"
        elif repr(table) not in found._label and found._label.count(",") < 2:
            found._label = found._label.replace("table ", "tables ", 1) + f", {table!r}"
        return found
