"""dynaorm.wire.http, the wires' HTTP/1.1 client (sync and asyncio), against real loopback
servers:
keep-alive reuse, a server that drops idle connections, every way an answer can be framed,
and each failure raised as what it means for the request (not sent, sent and no answer in
time, lost in the middle); then through SyncWire, each failure raised as the
RequestError class botocore's exception maps to, and TLS verified as the client says."""

from __future__ import annotations

import asyncio
import itertools
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm.wire.http import (
    AnswerTimeout,
    AsyncHTTPPool,
    BadAnswer,
    ConnectFailed,
    ConnectionLost,
    Destination,
    HTTPPool,
)
from tests.support.examples import examples
from tests.support.hostile import accepting, certificate

Handler = Callable[[socket.socket, bytes, int], bool]  # (conn, request body, n) -> keep open


class Server:
    """A loopback server that reads each request (headers + Content-Length body) and lets
    ``handler`` answer it; counts connections and requests."""

    def __init__(self, handler: Handler, tls: ssl.SSLContext | None = None) -> None:
        self.handler = handler
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.tls = tls
        self.connections = 0
        self.requests = 0
        self.heads: list[bytes] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        for conn in accepting(self.listener, self.tls):
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        reader = conn.makefile("rb")
        try:
            while True:
                head = b""
                while not head.endswith(b"\r\n\r\n"):
                    line = reader.readline()
                    if not line:
                        return
                    head += line
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = reader.read(length)
                self.requests += 1
                self.heads.append(head)
                if not self.handler(conn, body, self.requests):
                    return
        except OSError:
            return
        finally:
            conn.close()

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    servers: list[Server] = []

    def start(handler: Handler, tls: ssl.SSLContext | None = None) -> Server:
        servers.append(Server(handler, tls))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def answer(body: bytes = b"{}", *, status: str = "200 OK", extra: str = "") -> bytes:
    return (f"HTTP/1.1 {status}\r\nContent-Type: application/x-amz-json-1.0\r\n"
            f"Content-Length: {len(body)}\r\n{extra}\r\n").encode() + body


def echo(conn: socket.socket, body: bytes, n: int) -> bool:
    conn.sendall(answer(body))
    return True


def _raw(status: int, headers: dict[str, str], body: bytes) -> tuple[int, dict[str, str], bytes]:
    return status, headers, body


class _Sync:
    """An :class:`HTTPPool` whose ``post`` returns the raw answer."""

    def __init__(self, pool: HTTPPool) -> None:
        self.pool = pool

    def post(self, path: str, body: bytes, headers: dict[str, str]
             ) -> tuple[int, dict[str, str], bytes]:
        return self.pool.post(path, body, headers, _raw)

    def close(self) -> None:
        self.pool.close()


class _OnALoop:
    """An :class:`AsyncHTTPPool` driven from sync test code on one event loop of its own
    (its connections belong to that loop)."""

    def __init__(self, pool: AsyncHTTPPool) -> None:
        self.pool = pool
        self.loop = asyncio.new_event_loop()

    def post(self, path: str, body: bytes, headers: dict[str, str]
             ) -> tuple[int, dict[str, str], bytes]:
        return self.loop.run_until_complete(self.pool.post(path, body, headers, _raw))

    def close(self) -> None:
        self.loop.run_until_complete(self.pool.close())
        self.loop.close()


@pytest.fixture(params=["sync", "async"])
def kind(request: pytest.FixtureRequest) -> Iterator[str]:
    yield request.param
    for opened in _OPENED:
        opened.close()
    _OPENED.clear()


_OPENED: list[Any] = []  # the pools a test opened, closed after it


def pool(server: Server, kind: str = "sync", **options: Any) -> Any:
    """A pool to ``server``: the sync :class:`HTTPPool`, or the asyncio one driven on a
    loop of its own (the same ``post``)."""
    settings: dict[str, Any] = {"host_header": f"127.0.0.1:{server.port}", "tls": None,
                                "connect_timeout": 2, "read_timeout": 2}
    settings.update(options)
    to = Destination("127.0.0.1", server.port, **settings)
    opened: Any = _Sync(HTTPPool(to)) if kind == "sync" else _OnALoop(AsyncHTTPPool(to))
    _OPENED.append(opened)
    return opened


def test_one_connection_serves_every_request(serve: Callable[..., Server], kind: str) -> None:
    server = serve(echo)
    p = pool(server, kind)
    for i in range(20):
        status, headers, body = p.post("/", b'{"n":%d}' % i, {"X-Amz-Target": "x"})
        assert (status, body) == (200, b'{"n":%d}' % i)
        assert headers["content-type"] == "application/x-amz-json-1.0"
    assert (server.connections, server.requests) == (1, 20)
    head = server.heads[0].decode()
    assert head.startswith("POST / HTTP/1.1\r\n")
    assert f"Host: 127.0.0.1:{server.port}\r\n" in head and "X-Amz-Target: x\r\n" in head


def test_a_connection_the_server_closed_is_not_reused(serve: Callable[..., Server],
                                                      kind: str) -> None:
    def once(conn: socket.socket, body: bytes, n: int) -> bool:
        conn.sendall(answer(body))
        return False  # the server closes after each answer, without saying so

    server = serve(once)
    p = pool(server, kind)
    for _ in range(3):
        assert p.post("/", b"{}", {})[0] == 200
        time.sleep(0.05)  # the close reaches the client before the next request
    assert (server.connections, server.requests) == (3, 3)


def test_a_connection_the_server_closes_later_is_not_reused(serve: Callable[..., Server],
                                                           kind: str) -> None:
    def idle_timeout(conn: socket.socket, body: bytes, n: int) -> bool:
        conn.sendall(answer(body))
        time.sleep(0.1)  # the server's idle timeout: it closes a while after answering
        return False

    server = serve(idle_timeout)
    p = pool(server, kind)
    for _ in range(3):
        assert p.post("/", b"{}", {})[0] == 200
        time.sleep(0.3)  # (an asyncio pool's loop does not run in between)
    assert (server.connections, server.requests) == (3, 3)


def test_connection_close_chunked_and_unframed_answers(serve: Callable[..., Server],
                                                       kind: str) -> None:
    def framed(conn: socket.socket, body: bytes, n: int) -> bool:
        if n == 1:
            conn.sendall(answer(b'{"a":1}', extra="Connection: close\r\n"))
            return False
        if n == 2:
            conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n"
                         b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         b"3\r\n{\"b\r\n5;x=y\r\n\":22}\r\n0\r\nTrailer: t\r\n\r\n")
            return True
        conn.sendall(b"HTTP/1.0 200 OK\r\n\r\n{\"c\":3}")  # framed by the close
        return False

    server = serve(framed)
    p = pool(server, kind)
    assert p.post("/", b"{}", {})[2] == b'{"a":1}'
    assert p.post("/", b"{}", {})[2] == b'{"b":22}'
    assert p.post("/", b"{}", {})[2] == b'{"c":3}'
    assert server.connections == 2  # a new one after "Connection: close"


def test_nothing_listening_is_connect_failed(kind: str) -> None:
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    server = Server.__new__(Server)
    server.port = port
    with pytest.raises(ConnectFailed):
        pool(server, kind).post("/", b"{}", {})


def test_no_answer_in_time_is_answer_timeout(serve: Callable[..., Server], kind: str) -> None:
    def slow(conn: socket.socket, body: bytes, n: int) -> bool:
        time.sleep(1.0)
        return False

    p = pool(serve(slow), kind, read_timeout=0.2)
    with pytest.raises(AnswerTimeout):
        p.post("/", b"{}", {})


def test_each_request_on_a_kept_connection_gets_its_whole_read_timeout(
        serve: Callable[..., Server], kind: str) -> None:
    """The asyncio pool watches its requests' deadlines with one timer per connection,
    moved on only when it fires: the timer a quick request left behind (due 1 s after it)
    must neither leave the next request, never answered, without a deadline, nor cut short
    one answered 0.7 s into its own timeout (each starts 0.6 s after a quick one)."""
    def later(conn: socket.socket, body: bytes, n: int) -> bool:
        if n == 2:
            time.sleep(3)  # never answered
            return False
        if n == 4:
            time.sleep(0.7)
        conn.sendall(answer(body))
        return True

    server = serve(later)
    p = pool(server, kind, read_timeout=1.0)
    assert p.post("/", b'{"n":1}', {})[2] == b'{"n":1}'
    time.sleep(0.6)
    with pytest.raises(AnswerTimeout):
        p.post("/", b'{"n":2}', {})
    assert p.post("/", b'{"n":3}', {})[2] == b'{"n":3}'
    time.sleep(0.6)
    assert p.post("/", b'{"n":4}', {})[2] == b'{"n":4}'
    assert server.connections == 2


def test_a_close_in_the_middle_is_connection_lost(serve: Callable[..., Server], kind: str) -> None:
    def cut(conn: socket.socket, body: bytes, n: int) -> bool:
        conn.sendall(answer(b'{"long": "answer"}')[:-5])
        return False

    p = pool(serve(cut), kind)
    with pytest.raises(ConnectionLost):
        p.post("/", b"{}", {})


def test_garbage_is_a_bad_answer(serve: Callable[..., Server], kind: str) -> None:
    def garbage(conn: socket.socket, body: bytes, n: int) -> bool:
        conn.sendall(b"SSH-2.0-OpenSSH\r\n\r\n")
        return False

    p = pool(serve(garbage), kind)
    with pytest.raises(BadAnswer):
        p.post("/", b"{}", {})


def test_an_answer_with_garbage_in_the_same_packet_is_not_reused(
        serve: Callable[..., Server], kind: str) -> None:
    """The answer and bytes after it come in one read (one ``data_received`` on asyncio):
    the answer is the request's, the connection is not reused."""
    def trailing(conn: socket.socket, body: bytes, n: int) -> bool:
        conn.sendall(answer(body) + (b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n"
                                     b'{"n":-1}x' if n == 1 else b""))
        return True

    server = serve(trailing)
    p = pool(server, kind)
    assert p.post("/", b'{"n":1}', {})[2] == b'{"n":1}'
    assert p.post("/", b'{"n":2}', {})[2] == b'{"n":2}'
    assert server.connections == 2


def _destination(port: int, **options: Any) -> Destination:
    settings: dict[str, Any] = {"host_header": f"127.0.0.1:{port}", "tls": None,
                                "connect_timeout": 2, "read_timeout": 2}
    settings.update(options)
    return Destination("127.0.0.1", port, **settings)


@pytest.mark.parametrize("spoken", ["bytes", "close"])
def test_a_connection_spoken_to_while_idle_is_dropped(serve: Callable[..., Server],
                                                      spoken: str) -> None:
    """The loop runs while the connection sits in the pool and the server writes to it
    (an answer nobody asked for) or closes it: the protocol sees it then (the socket is
    quiet again by the next request), and the next request goes on a new connection."""
    def unasked(conn: socket.socket, body: bytes, n: int) -> bool:
        conn.sendall(answer(body))
        time.sleep(0.05)
        if spoken == "bytes":
            conn.sendall(answer(b'{"n":-1}'))
            return True
        return False  # closed without saying so

    server = serve(unasked)

    async def main() -> list[bytes]:
        p = AsyncHTTPPool(_destination(server.port))
        try:
            first = await p.post("/", b'{"n":1}', {}, _raw)
            await asyncio.sleep(0.3)  # the unasked bytes (or the close) come meanwhile
            second = await p.post("/", b'{"n":2}', {}, _raw)
            return [first[2], second[2]]
        finally:
            await p.close()

    assert asyncio.run(main()) == [b'{"n":1}', b'{"n":2}']
    assert server.connections == 2


def test_a_request_cancelled_mid_answer_leaves_nothing_to_the_next(
        serve: Callable[..., Server]) -> None:
    """Half an answer arrived when the request is cancelled; the rest comes later on that
    connection: the next request on the pool gets its own answer, on a new connection."""
    def halting(conn: socket.socket, body: bytes, n: int) -> bool:
        whole = answer(body)
        if n == 1:
            conn.sendall(whole[:len(whole) // 2])
            time.sleep(0.4)
        conn.sendall(whole[len(whole) // 2:] if n == 1 else whole)
        return True

    server = serve(halting)

    async def main() -> bytes:
        p = AsyncHTTPPool(_destination(server.port))
        try:
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(p.post("/", b'{"n":1}', {}, _raw), 0.2)
            assert p._idle == []
            await asyncio.sleep(0.4)  # the rest of the first answer has come
            return (await p.post("/", b'{"n":2}', {}, _raw))[2]
        finally:
            await p.close()

    assert asyncio.run(main()) == b'{"n":2}'
    assert server.connections == 2


BIG = b"x" * (32 << 20)  # more than loopback's socket buffers take at once


@pytest.mark.parametrize("layer", ["tcp", "tls"])
def test_a_server_that_never_reads_is_send_failed_not_reused(
        kind: str, layer: str, tls_cert: tuple[str, str]) -> None:
    """The send is bounded by the read timeout: a request the server stops reading is not
    sent (it cannot have been applied) and its connection is dropped; a small one the
    kernel takes whole is sent, and gets no answer in time. Over TLS too (on asyncio the
    TLS layer hands its TCP transport all it is given: a long request goes in pieces)."""
    from dynaorm.wire.http import SendFailed, tls_context
    from tests.support.hostile import Reply, serving

    cert, key = tls_cert
    server_tls = None
    if layer == "tls":
        server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_tls.load_cert_chain(cert, key)
    with serving(lambda n, body: Reply(never_read=True, hold=5), server_tls,
                 early=True) as server:
        p = pool(server, kind, read_timeout=0.3,  # type: ignore[arg-type]
                 tls=None if layer == "tcp" else lambda: tls_context(cert))
        with pytest.raises(SendFailed):
            p.post("/", BIG, {})
        assert p.pool._idle == []
        with pytest.raises(AnswerTimeout):
            p.post("/", b"{}", {})
        assert server.connections == 2


@pytest.mark.parametrize("layer", ["tcp", "tls"])
def test_a_long_request_goes_out_whole_and_in_order(serve: Callable[..., Server], kind: str,
                                                    layer: str,
                                                    tls_cert: tuple[str, str]) -> None:
    """Requests of several MB (over TLS on asyncio: written piece by piece as the transport
    drains) reach the server whole and in order, and the connection is kept."""
    from dynaorm.wire.http import tls_context

    cert, key = tls_cert
    server_tls = None
    if layer == "tls":
        server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_tls.load_cert_chain(cert, key)

    def length(conn: socket.socket, body: bytes, n: int) -> bool:
        conn.sendall(answer(b'{"n":%d,"crc":%d}' % (len(body), zlib.crc32(body))))
        return True

    server = serve(length, tls=server_tls)
    p = pool(server, kind, tls=None if layer == "tcp" else lambda: tls_context(cert))
    for size in (6 << 20, 100, 3 << 20):
        body = bytes(range(256)) * (size // 256)
        assert p.post("/", body, {})[2] == b'{"n":%d,"crc":%d}' % (len(body), zlib.crc32(body))
    assert server.connections == 1


def test_a_reset_with_the_request_partly_sent_is_send_failed(kind: str) -> None:
    """The server reads the head, then closes with the body unread (a reset): the
    transport (or ``sendall``) still held bytes of the request, so it was not sent."""
    from dynaorm.wire.http import SendFailed
    from tests.support.hostile import Reply, serving

    with serving(lambda n, body: Reply(head_only=True, drain=False), early=True) as server:
        p = pool(server, kind)  # type: ignore[arg-type]
        with pytest.raises(SendFailed):
            p.post("/", BIG, {})
        assert p.pool._idle == []


def test_connections_send_without_delay(serve: Callable[..., Server], kind: str) -> None:
    """TCP_NODELAY on every pooled connection: a request written in one piece is not held
    back waiting for the previous one's acknowledgement."""
    p = pool(serve(echo), kind)
    p.post("/", b"{}", {})
    (conn,) = p.pool._idle
    sock = conn.sock if kind == "sync" else conn.transport.get_extra_info("socket")
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY)


# -- through SyncWire: each failure mapped once, as the botocore wire's are ------------------

def wire_for(url: str, **config: Any) -> Any:
    import botocore.config
    import botocore.session
    from botocore.credentials import Credentials

    from dynaorm.wire import SyncWire
    from dynaorm.wire.endpoint import client_endpoint

    client = botocore.session.get_session().create_client(
        "dynamodb", region_name="eu-west-1", endpoint_url=url,
        aws_access_key_id="AKID", aws_secret_access_key="secret",
        verify=config.pop("verify", None),
        config=botocore.config.Config(**config))
    return SyncWire(client_endpoint(client, Credentials("AKID", "secret")))


def test_the_wire_maps_each_failure_as_botocore_does(serve: Callable[..., Server]) -> None:
    from botocore.exceptions import (
        ConnectionClosedError,
        EndpointConnectionError,
        ReadTimeoutError,
    )

    from dynaorm.client.botocore import botocore_error
    from dynaorm.errors import AnswerLostError, RequestError, RequestNotSentError

    def failing(conn: socket.socket, body: bytes, n: int) -> bool:
        if n == 1:
            error = b'{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException",' \
                    b'"message":"bad"}'
            conn.sendall(answer(error, status="400 Bad Request"))
            return True
        if n == 2:
            conn.sendall(answer(b"{}")[:-1])
            return False
        time.sleep(1.0)
        return False

    def mapped(call: Callable[[], object]) -> Exception:
        with pytest.raises(RequestError) as caught:  # (the wire's own errors)
            call()
        return caught.value

    server = serve(failing)
    wire = wire_for(f"http://127.0.0.1:{server.port}", read_timeout=0.3)
    request = {"TableName": "t", "Key": {"pk": {"S": "a"}}}
    bad = mapped(lambda: wire.send("GetItem", request))
    assert isinstance(bad, RequestError) and not bad.maybe_applied
    assert (bad.code, bad.message) == ("ValidationException", "bad")
    lost = mapped(lambda: wire.send("GetItem", request))
    late = mapped(lambda: wire.send("GetItem", request))
    # the same classes botocore's exceptions map to
    url = "http://x"
    for own, theirs in ((lost, ConnectionClosedError(endpoint_url=url)),
                        (late, ReadTimeoutError(endpoint_url=url))):
        other = botocore_error("GetItem", request, theirs)
        assert type(own) is type(other) is AnswerLostError
        assert own.maybe_applied and other.maybe_applied and own.code == other.code
    probe = socket.create_server(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    refused = mapped(lambda: wire_for(f"http://127.0.0.1:{port}").send("GetItem", request))
    other = botocore_error("GetItem", request, EndpointConnectionError(endpoint_url=url))
    assert type(refused) is type(other) is RequestNotSentError
    assert not refused.maybe_applied and refused.code == other.code == "ConnectionError"
    wire.close()


@pytest.fixture(scope="module")
def tls_cert(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """A self-signed certificate for 127.0.0.1 and its key."""
    return certificate(tmp_path_factory)


def test_tls_is_verified_as_the_client_says(serve: Callable[..., Server],
                                            tls_cert: tuple[str, str]) -> None:
    from dynaorm.errors import RequestNotSentError

    cert, key = tls_cert
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    server = serve(echo, tls=context)
    url = f"https://127.0.0.1:{server.port}"
    for verify in (cert, False):  # the CA bundle given, or no verification
        wire = wire_for(url, verify=verify)
        answer = wire.send("GetItem", {"TableName": "t"})
        assert answer.pop("ResponseMetadata")["HTTPStatusCode"] == 200
        assert answer == {"TableName": "t"}
        wire.close()
    with pytest.raises(RequestNotSentError) as refused:  # botocore's bundle does not know it
        wire_for(url).send("GetItem", {"TableName": "t"})
    assert "CERTIFICATE_VERIFY_FAILED" in str(refused.value)


# -- the answer state machine alone: any split of the bytes reads the same -----------------
_ANSWERS = [
    answer(b'{"Item":{"pk":{"S":"A"}}}'),
    b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
    b"3\r\n{\"b\r\n5;x=y\r\n\":22}\r\n0\r\nTrailer: t\r\n\r\n",
    answer(b'{"a":1}', extra="Connection: keep-alive, close\r\n"),
    answer(b"{}", status="400 Bad Request"),
]


@settings(max_examples=examples(60), deadline=None, database=None)
@given(which=st.integers(0, len(_ANSWERS) - 1), cuts=st.lists(st.integers(0, 400),
                                                             max_size=12))
def test_any_split_of_an_answer_reads_the_same(which: int, cuts: list[int]) -> None:
    from dynaorm.wire.connection import AnswerReader

    data = _ANSWERS[which]
    whole = AnswerReader()
    assert whole.feed(data)
    split = AnswerReader()
    edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    done = False
    for start, end in itertools.pairwise(edges):
        assert not done
        done = split.feed(data[start:end])
    assert done
    assert (split.status, split.headers, split.body, split.reusable) == (
        whole.status, whole.headers, whole.body, whole.reusable)


@settings(max_examples=examples(80), deadline=None, database=None)
@given(which=st.integers(0, len(_ANSWERS) - 1),
       tail=st.sampled_from([b"x", b"\r\n", b"HTTP/1.1 200 OK\r\n", _ANSWERS[0]]) | st.binary(
           min_size=1, max_size=40),
       cuts=st.lists(st.integers(0, 800), max_size=12))
def test_bytes_after_an_answer_spoil_its_connection_however_split(
        which: int, tail: bytes, cuts: list[int]) -> None:
    """Whatever follows an answer, in the piece that ends it or in a later one (after the
    reader has let its parser go), is never read as a next answer: the answer reads as it
    does alone, and its connection is not reusable. Except blank lines alone in the piece
    that ends the answer: llhttp skips them, as HTTP/1.1 lets empty lines precede a
    message (nothing is left over: the connection stays usable)."""
    from dynaorm.wire.connection import AnswerReader

    alone = AnswerReader()
    assert alone.feed(_ANSWERS[which])
    data = _ANSWERS[which] + tail
    split = AnswerReader()
    edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    ended = [split.feed(data[start:end]) for start, end in itertools.pairwise(edges)]
    assert ended[-1] and ended == sorted(ended)  # (once ended, every later feed says so)
    assert (split.status, split.headers, split.body) == (alone.status, alone.headers,
                                                         alone.body)
    if tail.strip(b"\r\n"):
        assert not split.reusable


class _LlhttpHeaders:
    """The plain path: llhttp's own ``on_header`` callback for each header line, joined as
    the reader joins repeated ones (the final answer's, after any interim ones)."""

    def __init__(self) -> None:
        self.headers: dict[str, str] = {}

    def on_message_begin(self) -> None:
        self.headers = {}

    def on_header(self, name: bytes, value: bytes) -> None:
        key, text = name.decode("latin-1").lower(), value.decode("latin-1")
        old = self.headers.get(key)
        self.headers[key] = text if old is None else f"{old}, {text}"


_NAMES = st.sampled_from(["Content-Type", "x-amz-crc32", "X-Amzn-RequestId", "Date", "X-A",
                          "x-a", "Server", "Vary", "X-Amz-Id-2", "Cache-Control"])
_VALUES = st.text(st.sampled_from("ab 1,;=/\t\x80\xe9"), max_size=12).map(
    lambda v: v.lstrip(" \t"))  # (no leading whitespace: llhttp strips it, and so do we)


@settings(max_examples=examples(150), deadline=None, database=None)
@given(lines=st.lists(st.tuples(_NAMES, _VALUES, st.sampled_from(["", " ", "  ", "\t"])),
                      max_size=12),
       interim=st.booleans(), blank=st.sampled_from([b"", b"\r\n", b"\r\n\r\n"]),
       cuts=st.lists(st.integers(0, 600), max_size=6))
def test_the_head_is_read_as_llhttp_reads_its_header_lines(
        lines: list[tuple[str, str, str]], interim: bool, blank: bytes,
        cuts: list[int]) -> None:
    """The reader takes the final answer's headers from its head at once (no callback per
    line): the same names and values, repeated ones joined, as llhttp's own ``on_header``
    gives them (leading whitespace dropped, trailing kept), however the bytes arrive."""
    import httptools

    from dynaorm.wire.connection import AnswerReader

    head = "".join(f"{n}:{pad}{v}\r\n" for n, v, pad in lines).encode("latin-1")
    data = (blank + (b"HTTP/1.1 100 Continue\r\nX-A: interim\r\n\r\n" if interim else b"")
            + b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: 2\r\n\r\n{}")
    plain = _LlhttpHeaders()
    httptools.HttpResponseParser(plain).feed_data(data)
    reader = AnswerReader()
    edges = sorted({0, len(data), *(c % (len(data) + 1) for c in cuts)})
    for start, end in itertools.pairwise(edges):
        reader.feed(data[start:end])
    assert reader.done and reader.headers == plain.headers
