"""A hostile DynamoDB endpoint on loopback (plain TCP or TLS): each request is answered by
a scripted :class:`Reply` that misbehaves the way proxies, load balancers and broken
networks do (malformed framing, extra answers, trickling, early refusals, garbage).

The server records what it saw: connections made, each request's connection and body, so
a test can tell whether a connection was reused after a bad answer and which request an
answer belonged to. Used by ``tests/unit/test_wire_hostile.py`` against both wires, sync
and async."""

from __future__ import annotations

import contextlib
import http.server
import json
import shutil
import socket
import ssl
import subprocess
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

__all__ = [
    "EmptyAnswers",
    "HostileServer",
    "Reply",
    "accepting",
    "answer",
    "certificate",
    "json_body",
    "read_head",
    "self_signed",
    "serving",
]


class EmptyAnswers(http.server.BaseHTTPRequestHandler):
    """A well-behaved endpoint's handler (for ``http.server``): every POST answered
    ``{}`` (a GetItem that found nothing), nothing logged."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, *args: Any) -> None:
        pass


def answer(body: bytes = b"{}", *, status: str = "200 OK", headers: str = "",
           crc: bool = True, length: bool = True, request_id: str = "RID") -> bytes:
    """A well-formed DynamoDB answer (CRLF line ends, ``Content-Length``, a right
    ``x-amz-crc32``, ``x-amzn-RequestId``), bent by the arguments: ``headers`` are extra
    header lines (each ending in CRLF)."""
    head = [f"HTTP/1.1 {status}", "Content-Type: application/x-amz-json-1.0",
            f"x-amzn-RequestId: {request_id}"]
    if crc:
        head.append(f"x-amz-crc32: {zlib.crc32(body) & 0xFFFFFFFF}")
    if length:
        head.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(head) + "\r\n" + headers + "\r\n").encode("latin-1") + body


@dataclass
class Reply:
    """What the server does with one request."""

    data: bytes = b""
    """The bytes sent back."""
    close: bool = False
    """Close the connection after sending (else keep it open for the next request)."""
    later: bytes = b""
    """Bytes sent a moment after :attr:`data`, unasked (a second answer, leftovers)."""
    trickle: float = 0.0
    """Seconds between each byte of :attr:`data` (a server that holds the answer)."""
    head_only: bool = False
    """Answer after reading the request's head only, then read and drop the body (an early
    refusal with a lingering close: the client sees the answer, not a reset)."""
    drain: bool = True
    """With :attr:`head_only`: read and drop the body after answering (a lingering close);
    ``False``: close at once with the body unread (the client's kernel gets a reset,
    which may discard the answer)."""
    never_read: bool = False
    """Read nothing of the request and never answer (a server that stops reading)."""
    hold: float = 0.0
    """Seconds to wait before answering (the client's timeout runs out)."""
    mark: dict[str, object] = field(default_factory=dict)
    """Free notes for the test."""


Script = Callable[[int, bytes], Reply]


class HostileServer:
    """Serves requests on ``127.0.0.1`` with ``script(n, body)`` (``n`` counts requests
    from 1), over TLS when ``tls`` is given. ``early``: the script is asked as soon as a
    request's head is read, with an empty body (for :attr:`Reply.head_only` and
    :attr:`Reply.never_read`); else once its body is read."""

    def __init__(self, script: Script, tls: ssl.SSLContext | None = None, *,
                 early: bool = False) -> None:
        self.script = script
        self.tls = tls
        self.early = early
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self.listener.getsockname()[1]
        self.connections = 0
        #: for each request, the number of the connection (from 1) it came on
        self.request_connections: list[int] = []
        #: each request's body
        self.bodies: list[bytes] = []
        #: each request's head (request line and header lines)
        self.heads: list[bytes] = []
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._stop = threading.Event()
        #: the server's threads (the accepting one, one per connection): joined by close()
        self._threads = [threading.Thread(target=self._accept, daemon=True)]
        self._threads[0].start()

    @property
    def url(self) -> str:
        """The endpoint URL."""
        return f"{'https' if self.tls else 'http'}://127.0.0.1:{self.port}"

    def close(self) -> None:
        """Stop serving and close every connection: each socket is shut down first (which
        wakes a thread blocked on it; a close alone neither wakes it nor sends the client
        a FIN), and closed only once the server's threads ended, so that no thread of this
        server can use a descriptor number the next server's sockets were given (a socket
        closed under a thread about to use it frees its number while the thread holds it).
        """
        self._stop.set()
        with self._lock:
            opened, self._open = self._open, []
            threads = list(self._threads)
        for sock in (self.listener, *opened):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)  # (wakes the threads blocked on it)
        for thread in threads:
            thread.join(10)
        for sock in (self.listener, *opened):
            with contextlib.suppress(OSError):
                sock.close()

    def _accept(self) -> None:
        for conn in accepting(self.listener, self.tls):
            with self._lock:
                if self._stop.is_set():
                    conn.close()
                    return
                self.connections += 1
                number = self.connections
                self._open.append(conn)
                thread = threading.Thread(target=self._serve, args=(conn, number), daemon=True)
                self._threads.append(thread)
            thread.start()

    def _serve(self, conn: socket.socket, number: int) -> None:
        buffered = b""
        try:
            while not self._stop.is_set():
                read = read_head(conn, buffered)
                if read is None:
                    return
                head, buffered = read
                length = 0
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                with self._lock:
                    n = len(self.bodies) + 1
                    self.request_connections.append(number)
                    self.bodies.append(b"")
                    self.heads.append(head)
                if self.early:
                    reply = self.script(n, b"")
                    if reply.never_read:  # (until ``hold`` seconds passed)
                        self._stop.wait(reply.hold or 30)
                        return
                    if reply.head_only:
                        self._send(conn, reply)
                        with contextlib.suppress(OSError):
                            conn.shutdown(socket.SHUT_WR)
                            while reply.drain and conn.recv(65536):  # a lingering close
                                pass
                        return
                while len(buffered) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buffered += chunk
                body, buffered = buffered[:length], buffered[length:]
                with self._lock:
                    self.bodies[n - 1] = body
                if not self.early:
                    reply = self.script(n, body)
                if reply.hold:
                    self._stop.wait(reply.hold)
                self._send(conn, reply)
                if reply.close:
                    return
        except OSError:
            return
        finally:
            with self._lock:  # (closed here unless close() took it: one closer each)
                mine = conn in self._open
                if mine:
                    self._open.remove(conn)
            if mine:
                with contextlib.suppress(OSError):
                    conn.close()

    def _send(self, conn: socket.socket, reply: Reply) -> None:
        if reply.trickle:
            for i in range(len(reply.data)):
                if self._stop.wait(reply.trickle):
                    return
                conn.sendall(reply.data[i:i + 1])
        else:
            conn.sendall(reply.data)
        if reply.later:
            time.sleep(0.05)
            conn.sendall(reply.later)


def accepting(listener: socket.socket, tls: ssl.SSLContext | None
              ) -> Iterator[socket.socket]:
    """The connections ``listener`` accepts (wrapped in ``tls`` when given; a failed
    handshake is dropped), until it is closed."""
    while True:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        if tls is not None:
            try:
                conn.settimeout(5)
                conn = tls.wrap_socket(conn, server_side=True)
                conn.settimeout(None)
            except (OSError, ssl.SSLError):
                conn.close()
                continue
        yield conn


def read_head(conn: socket.socket, buffered: bytes) -> tuple[bytes, bytes] | None:
    """The next request head read from ``conn`` (after what is ``buffered``) and the bytes
    read after it; ``None`` when the connection closes first."""
    while b"\r\n\r\n" not in buffered:
        chunk = conn.recv(65536)
        if not chunk:
            return None
        buffered += chunk
    head, _, rest = buffered.partition(b"\r\n\r\n")
    return head, rest


def json_body(value: object) -> bytes:
    """``value`` as a compact JSON body."""
    return json.dumps(value, separators=(",", ":")).encode()


@contextlib.contextmanager
def serving(script: Script, tls: ssl.SSLContext | None = None, *, early: bool = False
            ) -> Iterator[HostileServer]:
    """A :class:`HostileServer` for the block."""
    server = HostileServer(script, tls, early=early)
    try:
        yield server
    finally:
        server.close()


def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """For a module's fixture: a self-signed certificate for 127.0.0.1 and its key in a
    new temporary directory (the test skips without ``openssl``)."""
    made = self_signed(Path(tmp_path_factory.mktemp("tls")))
    if made is None:
        pytest.skip("openssl is not installed")
    return made


def self_signed(where: Path) -> tuple[str, str] | None:
    """A self-signed certificate for 127.0.0.1 and its key (made with ``openssl``);
    ``None`` when ``openssl`` is not installed."""
    if shutil.which("openssl") is None:
        return None
    cert, key = str(where / "cert.pem"), str(where / "key.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                    key, "-out", cert, "-days", "1", "-subj", "/CN=127.0.0.1",
                    "-addext", "subjectAltName=IP:127.0.0.1"], check=True,
                   capture_output=True)
    return cert, key
