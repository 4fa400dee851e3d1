"""Launcher for dynoxide, the third engine of the integration tests.

dynoxide is a DynamoDB-compatible server in one native binary (SQLite underneath), shipped
by the npm package ``@dynoxide/linux-x64``. ``scripts/install-dynoxide.sh`` (run by
``make test``) puts it in ``.cache/dynoxide``. It starts in about 0.1 s, in memory::

    with Dynoxide() as server:
        server.endpoint_url   # "http://127.0.0.1:<port>"
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import IO, Final, Self

__all__ = ["BINARY_ENV_VAR", "DEFAULT_CACHE_DIR", "Dynoxide", "find_binary"]

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
DEFAULT_CACHE_DIR: Final = REPO_ROOT / ".cache" / "dynoxide"
#: Set to a dynoxide binary to bypass the lookup in the cache directory.
BINARY_ENV_VAR: Final = "DYNAORM_DYNOXIDE"
_START_TIMEOUT: Final = 20.0


def find_binary(root: Path = DEFAULT_CACHE_DIR) -> Path | None:
    """The dynoxide executable (``$DYNAORM_DYNOXIDE``, else under ``root``), or ``None``."""
    explicit = os.environ.get(BINARY_ENV_VAR)
    if explicit:
        return Path(explicit) if Path(explicit).is_file() else None
    if not root.is_dir():
        return None
    found = sorted(p for p in root.rglob("dynoxide") if p.is_file() and os.access(p, os.X_OK))
    return found[0] if found else None


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class Dynoxide:
    """One in-memory dynoxide server on a free loopback port."""

    def __init__(self, binary: Path | None = None) -> None:
        self.binary = binary or find_binary()
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None
        self._log: IO[bytes] | None = None

    @property
    def endpoint_url(self) -> str:
        """The server's URL (valid once started)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> Self:
        """Start the server and wait until it accepts connections."""
        if self.binary is None:
            raise RuntimeError("dynoxide is not installed (run scripts/install-dynoxide.sh)")
        self.port = _free_port()
        self._log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by stop())
        self._process = subprocess.Popen(
            [str(self.binary), "--host", "127.0.0.1", "--port", str(self.port)],
            stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + _START_TIMEOUT
        while time.monotonic() < deadline:
            if self._process.poll() is not None:
                raise RuntimeError(f"dynoxide exited with {self._process.returncode}: "
                                   f"{self.log_tail()}")
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=0.5):
                return self
            time.sleep(0.02)
        self.stop()
        raise RuntimeError(f"dynoxide did not listen on port {self.port} "
                           f"within {_START_TIMEOUT}s")

    def log_tail(self) -> str:
        """The server's output so far (for diagnosing failures)."""
        if self._log is None:
            return "<no log>"
        self._log.seek(0)
        return self._log.read()[-4000:].decode(errors="replace")

    def stop(self) -> None:
        """Stop the server (idempotent)."""
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()
