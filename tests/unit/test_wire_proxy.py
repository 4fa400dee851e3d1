"""The wires through a real HTTPS proxy: botocore's ``proxies_config`` keys
(``proxy_ca_bundle``, ``proxy_client_cert``, ``proxy_use_forwarding_for_https``) on
:class:`~dynaorm.wire.SyncWire` and :class:`~dynaorm.wire.AsyncWire`, each outcome
compared with what the botocore (sync) or aiobotocore (async) client of the same
configuration does through the same proxy (the library's failure as the RequestError class
dynaorm maps it to, :func:`dynaorm.client.botocore.botocore_error`).

The proxy is a small loopback CONNECT proxy over TLS whose certificate is signed by a
private CA (made with ``openssl``); the endpoint behind it is a TLS server with a
self-signed certificate of its own, trusted through the client's ``verify``, so a proxy
verified with the endpoint's settings fails. ``tests/unit/test_wire_conformance.py`` checks
that the configuration is read as botocore reads it."""

from __future__ import annotations

import asyncio
import functools
import http.server
import select
import shutil
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import InvalidProxiesConfigError

from dynaorm import Client, RequestError
from dynaorm.client.botocore import botocore_error
from dynaorm.protocol.policy import retryable
from dynaorm.wire import AsyncWire, SyncWire
from dynaorm.wire.endpoint import client_endpoint, proxy_tls_context
from tests.support.hostile import EmptyAnswers, read_head

CREDENTIALS = Credentials("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
KEY = {"TableName": "app", "Key": {"pk": {"S": "a"}}}


# -- certificates ------------------------------------------------------------------------
class PKI:
    """The files of one test run: a private CA, the proxy's certificate and a client
    certificate it signed, and the endpoint's self-signed certificate."""

    def __init__(self, where: Path) -> None:
        self.where = where
        self.ca = self._self_signed("ca", "dynaorm test proxy CA")
        self.proxy = self._signed("proxy", "localhost",
                                  "subjectAltName=DNS:localhost,IP:127.0.0.1")
        self.client = self._signed("client", "dynaorm client", "extendedKeyUsage=clientAuth")
        self.endpoint = self._self_signed("endpoint", "localhost",
                                          "subjectAltName=DNS:localhost,IP:127.0.0.1")
        # one file holding both, as proxy_client_cert takes it as a string
        self.client_pem = str(where / "client-both.pem")
        Path(self.client_pem).write_text(Path(self.client[0]).read_text()
                                         + Path(self.client[1]).read_text())

    def _openssl(self, *args: str) -> None:
        subprocess.run(["openssl", *args], check=True, capture_output=True, cwd=self.where)

    def _key(self, name: str) -> list[str]:
        return ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                "-keyout", f"{name}.key"]

    def _self_signed(self, name: str, cn: str, *ext: str) -> str:
        extra = [a for e in ext for a in ("-addext", e)]
        self._openssl("req", "-x509", *self._key(name), "-out", f"{name}.pem", "-days", "1",
                      "-subj", f"/CN={cn}", *extra)
        return str(self.where / f"{name}.pem")

    def _signed(self, name: str, cn: str, ext: str) -> tuple[str, str]:
        self._openssl("req", *self._key(name), "-out", f"{name}.csr", "-subj", f"/CN={cn}")
        (self.where / f"{name}.ext").write_text(ext + "\n")
        self._openssl("x509", "-req", "-in", f"{name}.csr", "-CA", "ca.pem", "-CAkey",
                      "ca.key", "-CAcreateserial", "-out", f"{name}.pem", "-days", "1",
                      "-extfile", f"{name}.ext")
        return str(self.where / f"{name}.pem"), str(self.where / f"{name}.key")


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> PKI:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    return PKI(Path(tmp_path_factory.mktemp("pki")))


# -- the endpoint and the proxy ----------------------------------------------------------
class _Answer(EmptyAnswers):
    protocol_version = "HTTP/1.1"


@pytest.fixture(scope="module")
def endpoint(pki: PKI) -> Iterator[str]:
    """A TLS endpoint answering every request with ``{}`` (an empty GetItem answer)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Answer)
    server.daemon_threads = True
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(pki.endpoint, str(pki.where / "endpoint.key"))
    server.socket = context.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"https://localhost:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


class Proxy:
    """A TLS proxy on loopback: ``CONNECT`` tunnels to 127.0.0.1, and a request in
    absolute form (forwarding) answered by the proxy itself; records each request line.
    ``client_ca``: the proxy asks for a client certificate signed by it."""

    def __init__(self, pki: PKI, client_ca: str | None = None) -> None:
        self.context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.context.load_cert_chain(*pki.proxy)
        if client_ca is not None:
            self.context.verify_mode = ssl.CERT_REQUIRED
            self.context.load_verify_locations(client_ca)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"https://localhost:{self.listener.getsockname()[1]}"
        self.seen: list[str] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                raw, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(raw,), daemon=True).start()

    def _serve(self, raw: socket.socket) -> None:
        try:
            with self.context.wrap_socket(raw, server_side=True) as conn:
                conn.settimeout(5)
                buffer = b""
                while True:
                    read = read_head(conn, buffer)
                    if read is None:
                        return
                    head, buffer = read
                    method, target = head.split(b"\r\n")[0].decode().split()[:2]
                    self.seen.append(f"{method} {target}")
                    if method == "CONNECT":
                        upstream = socket.create_connection(
                            ("127.0.0.1", int(target.rsplit(":", 1)[1])))
                        conn.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                        self._relay(conn, upstream)
                        return
                    length = 0
                    for line in head.split(b"\r\n")[1:]:
                        name, _, value = line.partition(b":")
                        if name.strip().lower() == b"content-length":
                            length = int(value)
                    while len(buffer) < length:
                        buffer += conn.recv(65536)
                    buffer = buffer[length:]
                    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0"
                                 b"\r\nContent-Length: 2\r\n\r\n{}")
        except OSError:  # a refused handshake, a client gone
            return

    @staticmethod
    def _relay(conn: ssl.SSLSocket, upstream: socket.socket) -> None:
        with upstream:
            while True:
                ready = [conn] if conn.pending() else select.select(
                    [conn, upstream], [], [], 5)[0]
                if not ready:
                    return
                for source in ready:
                    data = source.recv(65536)
                    if not data:
                        return
                    (upstream if source is conn else conn).sendall(data)

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def proxies(pki: PKI) -> Iterator[Callable[..., Proxy]]:
    made: list[Proxy] = []

    def start(client_ca: str | None = None) -> Proxy:
        made.append(Proxy(pki, client_ca))
        return made[-1]

    yield start
    for proxy in made:
        proxy.close()


# -- the two wires and their libraries ---------------------------------------------------
@pytest.fixture(autouse=True)
def _no_profile(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", CREDENTIALS.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", CREDENTIALS.secret_key)
    for name in ("AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)


def _client_args(endpoint: str, verify: str | bool, proxy: str,
                 proxies_config: dict[str, Any], **config: Any) -> dict[str, Any]:
    return {"region_name": "eu-west-1", "endpoint_url": endpoint, "verify": verify,
            "aws_access_key_id": CREDENTIALS.access_key,
            "aws_secret_access_key": CREDENTIALS.secret_key,
            "config": Config(proxies={"https": proxy}, proxies_config=proxies_config or None,
                             connect_timeout=3, read_timeout=3,
                             retries={"total_max_attempts": 1}, **config)}


@functools.cache
def _session() -> Any:
    """One botocore session for every client here (explicit region, endpoint and
    credentials: nothing is read from a profile), so the service model loads once."""
    return botocore.session.get_session()


@functools.cache
def _aio_session() -> Any:
    import aiobotocore.session

    return aiobotocore.session.get_session()


def _bare(answer: dict[str, Any]) -> dict[str, Any]:
    """An answer without its ``ResponseMetadata``."""
    return {k: v for k, v in answer.items() if k != "ResponseMetadata"}


def _outcome(call: Callable[[], Any]) -> str:
    """``"ok"`` or the name of the RequestError class the exception ``call`` raised is (a
    library's exception mapped as the botocore wire maps it; the own wire's as it is)."""
    try:
        call()
    except Exception as exc:
        return type(botocore_error("GetItem", KEY, exc)).__name__
    return "ok"


def through_sync(endpoint: str, verify: str | bool, proxy: str,
                 proxies_config: dict[str, Any], **config: Any) -> tuple[str, str]:
    """What SyncWire and the botocore client do with one GetItem through ``proxy``."""
    args = _client_args(endpoint, verify, proxy, proxies_config, **config)
    client = _session().create_client("dynamodb", **args)
    try:
        def ours() -> None:
            wire = SyncWire(client_endpoint(client, CREDENTIALS))
            try:
                assert _bare(wire.send("GetItem", dict(KEY))) == {}
            finally:
                wire.close()

        return _outcome(ours), _outcome(lambda: client.get_item(**KEY))
    finally:
        client.close()


def through_async(endpoint: str, verify: str | bool, proxy: str,
                  proxies_config: dict[str, Any], **config: Any) -> tuple[str, str]:
    """What AsyncWire and the aiobotocore client do with one GetItem through ``proxy``."""
    async def run() -> tuple[str, str]:
        args = _client_args(endpoint, verify, proxy, proxies_config, **config)
        async with _aio_session().create_client("dynamodb",
                                                                   **args) as client:
            async def ours() -> None:
                wire = AsyncWire(client_endpoint(client, CREDENTIALS))
                try:
                    assert _bare(await wire.send("GetItem", dict(KEY))) == {}
                finally:
                    await wire.close()

            async def theirs() -> None:
                await client.get_item(**KEY)

            return await _aoutcome(ours), await _aoutcome(theirs)

    return asyncio.run(run())


async def _aoutcome(call: Callable[[], Any]) -> str:
    try:
        await call()
    except Exception as exc:
        return type(botocore_error("GetItem", KEY, exc)).__name__
    return "ok"


WIRES = {"sync": through_sync, "async": through_async}


@pytest.fixture(params=sorted(WIRES))
def through(request: pytest.FixtureRequest) -> Callable[..., tuple[str, str]]:
    if request.param == "async":
        pytest.importorskip("aiobotocore")
    return WIRES[request.param]


# -- the tests ---------------------------------------------------------------------------
def test_a_private_ca_proxy_is_trusted_with_proxy_ca_bundle(
        pki: PKI, endpoint: str, proxies: Callable[..., Proxy],
        through: Callable[..., tuple[str, str]]) -> None:
    proxy = proxies()
    # the endpoint's CA bundle does not cover the proxy: refused, as the library refuses it
    ours, theirs = through(endpoint, pki.endpoint, proxy.url, {})
    assert ours == theirs == "RequestNotSentError"  # (a ProxyConnectionError or SSLError)
    assert proxy.seen == []  # no request line got through the handshake
    ours, theirs = through(endpoint, pki.endpoint, proxy.url, {"proxy_ca_bundle": pki.ca})
    assert (ours, theirs) == ("ok", "ok")
    port = endpoint.rsplit(":", 1)[1]
    assert proxy.seen == [f"CONNECT localhost:{port}"] * 2  # a tunnel each


def test_the_proxy_client_certificate_is_offered(
        pki: PKI, endpoint: str, proxies: Callable[..., Proxy],
        through: Callable[..., tuple[str, str]]) -> None:
    proxy = proxies(client_ca=pki.ca)  # asks for a certificate of the private CA
    trusted = {"proxy_ca_bundle": pki.ca}
    # no proxy_client_cert: refused, even when the endpoint's client certificate
    # (Config(client_cert=)) is one the proxy would accept, as botocore never offers it
    # to the proxy. Under TLS 1.3 the client learns of the refusal after its handshake,
    # as an alert or a reset connection depending on timing: either way "not sent" (as
    # aiobotocore's EndpointConnectionError), never a lost answer
    for config in ({}, {"client_cert": pki.client}):
        ours, theirs = through(endpoint, pki.endpoint, proxy.url, trusted, **config)
        assert theirs != "ok"
        assert ours == "RequestNotSentError"
    for cert in (pki.client, pki.client_pem):  # (cert, key), or one file holding both
        ours, theirs = through(endpoint, pki.endpoint, proxy.url,
                               {**trusted, "proxy_client_cert": cert})
        assert (ours, theirs) == ("ok", "ok")


# botocore's own client passes its ssl_context with forwarding (urllib3 deprecates that);
# the wire passes only proxy_ssl_context
@pytest.mark.filterwarnings("ignore:Passing ssl_context when use_forwarding_for_https"
                            ":FutureWarning")
def test_forwarding_for_https(pki: PKI, endpoint: str, proxies: Callable[..., Proxy],
                              through: Callable[..., tuple[str, str]]) -> None:
    """botocore (urllib3) sends the absolute URL to an https:// proxy, which answers;
    aiobotocore (aiohttp) cannot and tunnels with CONNECT; dynaorm's async wire sends
    through proxies as its sync wire does, so it forwards too."""
    proxy = proxies()
    config = {"proxy_ca_bundle": pki.ca, "proxy_use_forwarding_for_https": True}
    assert through(endpoint, pki.endpoint, proxy.url, config) == ("ok", "ok")
    port = endpoint.rsplit(":", 1)[1]
    if through is through_sync:
        assert proxy.seen == [f"POST https://localhost:{port}/"] * 2
    else:  # the async wire sends through a proxy as the sync one: forwarding, not aiohttp
        assert proxy.seen == [f"POST https://localhost:{port}/", f"CONNECT localhost:{port}"]


def test_an_unreadable_proxy_file_is_a_typed_error(pki: PKI, tmp_path: Path) -> None:
    for config in ({"proxy_ca_bundle": str(tmp_path / "missing.pem")},
                   {"proxy_client_cert": pki.ca}):  # a certificate without its key
        with pytest.raises(InvalidProxiesConfigError):
            proxy_tls_context("https://proxy.test:3128", config, pki.endpoint)
    args = _client_args("https://localhost:1", pki.endpoint, "https://proxy.test:3128",
                        {"proxy_ca_bundle": str(tmp_path / "missing.pem")})
    client = _session().create_client("dynamodb", **args)
    with pytest.raises(InvalidProxiesConfigError):
        SyncWire(client_endpoint(client, CREDENTIALS))  # made by the table's first request
    # through a client: a request error that was not sent and is not retried (botocore's
    # own session wraps it into HTTPClientError, a lost answer it would retry)
    client = Client("https://localhost:1", "eu-west-1", config=args["config"])
    with pytest.raises(RequestError) as raised:
        client.send("GetItem", dict(KEY))
    assert raised.value.code == "InvalidProxiesConfigError"
    assert not raised.value.maybe_applied and not retryable(raised.value)


def test_the_proxy_context_follows_botocore(pki: PKI) -> None:
    """proxy_ca_bundle alone decides whom the proxy may be, even with verify=False (as
    botocore); without it the endpoint's setting does; a host name is checked by the
    context, an IP address is left to urllib3."""
    given = {"proxy_ca_bundle": pki.ca}
    for verify in (pki.endpoint, False):
        context = proxy_tls_context("https://localhost:1", given, verify)
        assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
        assert [c["subject"] for c in context.get_ca_certs()] == [
            ((("commonName", "dynaorm test proxy CA"),),)]
    assert proxy_tls_context("https://localhost:1", {}, False).verify_mode == ssl.CERT_NONE
    endpoint_only = proxy_tls_context("https://localhost:1", None, pki.endpoint)
    assert [c["subject"] for c in endpoint_only.get_ca_certs()] == [
        ((("commonName", "localhost"),),)]
    assert not proxy_tls_context("https://127.0.0.1:1", given, False).check_hostname
