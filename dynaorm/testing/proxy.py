"""The fault proxy: an HTTP server on a loopback port in front of a DynamoDB engine, every
request going through an :class:`~dynaorm.testing.emulation.emulator.Emulator` (index reads lag
while :func:`~dynaorm.testing.index_lag` is on; ``rules=True``: what moto skips, as in
front of dynaorm's moto server). A request the emulator leaves alone, and its answer, pass
byte for byte; what it sends itself (a mirror's writes, the reads after a write) goes
with the headers of the request it handles (the same credentials: the same database of
an engine that keeps one per access key), unsigned anew: for local engines, which do
not check signatures (DynamoDB's own indexes lag already).
"""

from __future__ import annotations

import http.client
import json
import threading
import zlib
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from dynaorm.errors import RequestError
from dynaorm.testing.emulation.bulk import s3_factory
from dynaorm.testing.emulation.emulator import Emulator
from dynaorm.wire import BadAnswer, checked_answer, decode, render

_TARGET = "DynamoDB_20120810."
_HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authorization", "te", "trailers",
                         "transfer-encoding", "upgrade", "host", "content-length", "date",
                         "server"})


class _Upstream:
    """Requests to the engine: one kept-alive connection per thread of the proxy."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        self.https = parts.scheme == "https"
        self.host = parts.hostname or "localhost"
        self.port = parts.port or (443 if self.https else 80)
        self.path = parts.path or "/"
        self._local = threading.local()

    def close(self) -> None:
        """Close this thread's connection (a thread that answered its last request)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = None

    def send(self, method: str, path: str, body: bytes, headers: dict[str, str]
             ) -> tuple[int, dict[str, str], bytes]:
        """The engine's answer to a request (status, lower-case headers, bytes): to
        DynamoDB's ``POST`` to :attr:`path`, or another (a moto server's S3, a KMS
        request); a kept connection the engine closed meanwhile is replaced once."""
        for fresh in (False, True):
            conn = getattr(self._local, "conn", None)
            if conn is None or fresh:
                kind = http.client.HTTPSConnection if self.https else http.client.HTTPConnection
                conn = self._local.conn = kind(self.host, self.port, timeout=60)
            try:
                conn.request(method, path, body, headers)
                answer = conn.getresponse()
                return (answer.status, {k.lower(): v for k, v in answer.getheaders()},
                        answer.read())
            except (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError):
                conn.close()
                if fresh:
                    raise
        raise AssertionError("unreachable")


class _Relay(Exception):
    """The engine's answer to the request as it came, which the emulator cannot read:
    passed on as it is."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: a proxy for tests."""

    def finish(self) -> None:
        """The client's connection is done: so is this thread's to the engine."""
        super().finish()
        self.server.upstream.close()

    def relay(self) -> None:
        """Pass a request that is not DynamoDB's on as it came (another service of a
        moto server: S3, KMS), and its answer back."""
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        try:
            status, got, data = self.server.upstream.send(self.command, self.path, body,
                                                          headers)
        except (OSError, http.client.HTTPException):  # no answer from the engine: none
            self.close_connection = True  # to the client either
            return
        self.send_response(status)
        for name, value in got.items():
            if name not in _HOP_BY_HOP:
                self.send_header(name, value)
        self.send_header("Content-Length", got.get("content-length", str(len(data))))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    do_GET = do_PUT = do_DELETE = do_HEAD = relay

    def do_POST(self) -> None:
        """Answer one request through the emulator (DynamoDB's and its streams'; any other
        is relayed as it came)."""
        target = str(self.headers.get("X-Amz-Target", ""))
        if not target.startswith("DynamoDB"):
            self.relay()
            return
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        operation = target.removeprefix(_TARGET)  # (a stream's operation keeps its prefix)
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        request = decode(body) if body else {}
        passed: dict[str, Any] = {}  # what the engine answered the request as it came

        def forward(op: str, req: dict[str, Any]) -> dict[str, Any]:
            raw = body if req is request else render(req)
            sent = headers if req is request else {**headers, "X-Amz-Target": _TARGET + op}
            upstream = self.server.upstream
            status, got, data = upstream.send("POST", upstream.path, raw, sent)
            try:
                answer = checked_answer(status, got, data, op, req)
            except RequestError as exc:
                if req is request:
                    passed.update(error=exc, raw=(status, got, data))
                raise
            except BadAnswer:  # (the client judges the engine's answer itself)
                if req is request:
                    passed.update(raw=(status, got, data))
                    raise _Relay from None
                raise
            if req is request:
                passed.update(answer=answer, raw=(status, got, data))
            return answer

        try:
            answer = self.server.emulator.handle(operation, request, forward)
        except RequestError as exc:
            if passed.get("error") is exc:
                self._reply(*passed["raw"])
            else:
                self._refuse(exc)
        except _Relay:
            self._reply(*passed["raw"])
        except (OSError, http.client.HTTPException):  # no answer from the engine: none
            self.close_connection = True  # to the client either
        else:
            if passed.get("answer") is answer:
                self._reply(*passed["raw"])
            else:
                self._reply(200, {}, render(_epochs({k: v for k, v in answer.items()
                                                     if k != "ResponseMetadata"})))

    def _refuse(self, exc: RequestError) -> None:
        """The emulator's refusal as DynamoDB answers one."""
        error: dict[str, Any] = {"__type": f"com.amazonaws.dynamodb.v20120810#{exc.code}",
                                 "message": exc.message}
        if exc.reasons:
            error["CancellationReasons"] = [
                {"Code": "None"} if r is None else {"Code": r.code, "Message": r.message}
                for r in exc.reasons]
        self._reply(500 if exc.maybe_applied else 400, {}, json.dumps(error).encode())

    def _reply(self, status: int, headers: dict[str, str], data: bytes) -> None:
        self.send_response(status)
        for name, value in headers.items():
            if name not in _HOP_BY_HOP:
                self.send_header(name, value)
        if "x-amz-crc32" not in headers:
            self.send_header("Content-Type", "application/x-amz-json-1.0")
            self.send_header("x-amz-crc32", str(zlib.crc32(data)))
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


def _epochs(value: Any) -> Any:
    """``value`` with each ``datetime`` (a table's, as the wire decodes an answer) the epoch
    seconds DynamoDB's JSON sends."""
    if isinstance(value, datetime):
        return value.timestamp()
    if isinstance(value, dict):
        return {k: _epochs(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_epochs(v) for v in value]
    return value


#: the ports of this process's fault proxies (on 127.0.0.1) while they run
_RUNNING: set[int] = set()


def _proxied(url: str) -> bool:
    """Whether ``url`` is one of this process's fault proxies."""
    parts = urlsplit(url)
    return parts.hostname in ("127.0.0.1", "localhost") and parts.port in _RUNNING


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, upstream: str, emulator: Emulator):
        super().__init__(("127.0.0.1", 0), _Handler)
        self.upstream = _Upstream(upstream)
        self.emulator = emulator


@contextmanager
def fault_proxy(endpoint_url: str, *, rules: bool = False,
                s3: str | Callable[[], Any] | None = None) -> Iterator[str]:
    """A proxy in front of the DynamoDB at ``endpoint_url`` (a local engine: DynamoDB
    Local, dynoxide, a moto server) for the block: yields its URL. Index reads through it
    lag while :func:`~dynaorm.testing.index_lag` is on; ``rules=True`` also enforces what
    moto skips (:mod:`dynaorm.testing.emulation.emulator`). Requests it leaves alone pass as they
    are; so do their answers. In front of another fault proxy of this process (the pytest
    plugin's ``--dynaorm-endpoint``, a moto server) it leaves the lag to that one.
    ``s3``: an S3 (the URL of one, a moto server's; or a maker of a botocore S3 client:
    :func:`~dynaorm.testing.emulation.bulk.s3_factory`) through which it answers the bulk API and
    filtered exports itself (:mod:`dynaorm.testing.emulation.bulk`), in front of any engine;
    ``None``: it passes them on."""
    maker = s3_factory(s3) if isinstance(s3, str) else s3
    emulator = Emulator(rules=rules, lags=not _proxied(endpoint_url), s3=maker)
    server = _Server(endpoint_url, emulator)
    port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, name="dynaorm-fault-proxy",
                              daemon=True)
    thread.start()
    _RUNNING.add(port)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        _RUNNING.discard(port)
        emulator.forget()
        emulator.close()
        server.upstream.close()
        server.shutdown()
        server.server_close()
        thread.join()
