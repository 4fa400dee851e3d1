"""dynaorm's own DynamoDB wire: requests rendered straight to JSON, signed with SigV4 over
botocore's credentials (:class:`~dynaorm.wire.sigv4.Signer`: DynamoDB's one canonical
request computed directly, the signing key kept per day; botocore's ``SigV4Auth`` for
endpoints with a path), sent over keep-alive connections (:mod:`dynaorm.wire.http`;
urllib3 through a proxy), answers checked against ``x-amz-crc32`` and decoded with
:func:`json.loads`. ``Client(wire="dynaorm")``, the default, sends through it; see
``docs/guide/wire.md``.

Everything a configuration decides (endpoint, region, timeouts, proxies, TLS verification,
credentials, ``User-Agent``) is read once from a botocore client created as the botocore
path creates it, so a configuration that works with the client works here. Failures are
raised as what is known of them: :mod:`dynaorm.wire.http`'s failed exchanges (not sent,
answer lost, answer not to be trusted: :func:`checked_answer` adds the checks of the
answer itself), an error answer as :class:`ErrorAnswer` (botocore's ``error_response``
shape); through a proxy, botocore's exceptions. The one
:func:`~dynaorm.client.errors.map_error` turns each into the same
:class:`~dynaorm.RequestError` class whichever wire is under it.
"""

from __future__ import annotations

import base64
import binascii
import functools
import ipaddress
import json
import os
import ssl
import sys
import zlib
from collections.abc import Callable, Mapping
from http.client import responses as _REASONS
from typing import Any
from urllib.parse import quote, urlsplit

from dynaorm.private_apis import botocore_verify
from dynaorm.wire.http import BadAnswer, Destination, HTTPPool, tls_context
from dynaorm.wire.sigv4 import Signer

__all__ = [
    "TARGET_PREFIX",
    "ErrorAnswer",
    "SyncWire",
    "WireSettings",
    "answer_problem",
    "checked_answer",
    "decode",
    "decoded_success",
    "error_response",
    "prepare",
    "proxy_tls_context",
    "render",
    "sanitized",
    "shape_problem",
    "tls_verify",
    "trace_header",
]

#: the ``X-Amz-Target`` prefix of every DynamoDB operation
TARGET_PREFIX = "DynamoDB_20120810."
#: the ``Content-Type`` of every DynamoDB request (JSON 1.0)
CONTENT_TYPE = "application/x-amz-json-1.0"


def _blob(value: object) -> str:
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    raise TypeError(f"cannot render {type(value).__name__} to DynamoDB JSON")


#: one encoder for every request (``json.dumps`` with options builds one per call); a
#: request is a tree built by dynaorm, never cyclic: no check for cycles
_ENCODER = json.JSONEncoder(separators=(",", ":"), default=_blob, check_circular=False)


def render(request: dict[str, Any]) -> bytes:
    """The JSON body of ``request`` (botocore-shaped parameters), binary values base64
    encoded as botocore encodes them."""
    return _ENCODER.encode(request).encode("utf-8")


def _unbin(value: Any) -> Any:
    if isinstance(value, dict):
        if len(value) == 1:
            b = value.get("B")
            if isinstance(b, str):
                return {"B": base64.b64decode(b)}
            bs = value.get("BS")
            if isinstance(bs, list) and all(isinstance(x, str) for x in bs):
                return {"BS": [base64.b64decode(x) for x in bs]}
        return {k: _unbin(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unbin(v) for v in value]
    return value


def decode(body: bytes) -> dict[str, Any]:
    """The answer ``body`` as a botocore client returns it (binary values as ``bytes``,
    numbers as strings); a body that is not a JSON object raises ``ValueError``."""
    if not body:
        return {}
    try:
        data = json.loads(body)
        if b'"B"' in body or b'"BS"' in body:
            data = _unbin(data)
        if b"null" in body and isinstance(data, dict):  # (botocore drops null members)
            data = {k: v for k, v in data.items() if v is not None}
    except (binascii.Error, RecursionError) as exc:  # (a ValueError, or nesting too deep)
        raise ValueError(f"not a DynamoDB answer: {exc}") from exc
    if not isinstance(data, dict):
        raise ValueError(f"not a DynamoDB answer: a JSON {type(data).__name__}")
    return data


def _metadata(status: int, headers: dict[str, str]) -> dict[str, Any]:
    """The ``ResponseMetadata`` botocore puts in every answer (``RequestId`` when the
    answer has ``x-amzn-requestid``; ``RetryAttempts`` 0: dynaorm retries, one attempt
    per answer)."""
    meta: dict[str, Any] = {"HTTPStatusCode": status, "HTTPHeaders": headers,
                            "RetryAttempts": 0}
    request_id = headers.get("x-amzn-requestid")
    if request_id is not None:
        meta["RequestId"] = request_id
    return meta


def _error_code(code: object) -> str:
    """An error answer's ``__type`` as botocore's JSON parser reads it: the part before a
    ``:`` (a ``:uri`` suffix), after the last ``#`` (a namespace)."""
    text = str(code)
    if ":" in text:
        text = text.split(":", 1)[0]
    if "#" in text:
        text = text.rsplit("#", 1)[1]
    return text


def error_response(status: int, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
    """The ``error_response`` botocore's ``ClientError`` carries for a failed answer:
    a 5xx without a body or with an HTML page gets the status as code and its reason as
    message; a body that is not JSON is the message, the status the code; else the type
    (the ``X-Amzn-Errortype`` header, the body's ``code`` or ``__type``, as awsJson1_0
    resolves it; read as botocore reads ``__type``; the status when absent) and
    ``message``, the modeled fields (``CancellationReasons``, ``Item``) kept."""
    text = body.strip()
    data: dict[str, Any] = {}
    if status >= 500 and (not text or text.startswith(b"<html>")):
        code, message = str(status), _REASONS.get(status, "")
    else:
        try:
            data = decode(body)
        except ValueError:  # (UnicodeDecodeError included) botocore: the page as message
            data = {"message": body.decode("utf-8", "replace")}
        message = data.pop("message", data.pop("Message", ""))
        kind = data.pop("__type", None)
        # awsJson1_0: the X-Amzn-Errortype header first, then "code", then "__type"
        code = _error_code(headers.get("x-amzn-errortype") or data.get("code") or kind
                           or status)
    response: dict[str, Any] = {"Error": {"Code": code, "Message": str(message or "")}}
    response.update(data)  # modeled fields: CancellationReasons, Item
    response["ResponseMetadata"] = _metadata(status, headers)
    return response


def tls_verify(client: Any) -> bool | str:
    """How ``client`` (a botocore client) verifies TLS: ``False`` (``verify=False``), or the
    CA bundle path it trusts (``Table``'s client: ``AWS_CA_BUNDLE``, the profile's
    ``ca_bundle``, ``REQUESTS_CA_BUNDLE``, else certifi's bundle), read from the client's
    HTTP session so that whatever botocore decided holds on this wire too."""
    verify = botocore_verify(client)
    if verify is False:
        return False
    if isinstance(verify, str):  # (botocore's get_cert_path keeps a path as it is)
        return verify
    from botocore.httpsession import get_cert_path

    return str(get_cert_path(True))


#: the characters botocore keeps in a ``User-Agent`` component
_UA_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                     "!$%&'*+-.^_`|~,")


def _ua_component(raw: str, allow_hash: bool) -> str:
    """botocore's ``sanitize_user_agent_string_component`` (without importing
    ``botocore.useragent``, which imports urllib3: a cold start's cost)."""
    return "".join(c if c in _UA_SAFE or (allow_hash and c == "#") else "-" for c in raw)


def sanitized(value: str, *, allow_hash: bool = False, spaces: bool = False) -> str:
    """``value`` fit for a ``User-Agent`` header as botocore's
    ``sanitize_user_agent_string_component`` makes it (every character outside ASCII
    letters, digits and ``!$%&'*+-.^_`|~,`` becomes ``-``; ``#`` kept with
    ``allow_hash``); ``spaces`` keeps spaces and ``/`` too (a ``user_agent_extra`` is
    several ``name/version`` parts). No line break or non-latin-1 character survives."""
    if not spaces:
        return _ua_component(value, allow_hash)
    return " ".join("/".join(_ua_component(piece, True)
                             for piece in part.split("/"))
                    for part in value.split(" "))


def _user_agent(config: Any) -> str:
    """dynaorm's name and version ahead of the ``User-Agent`` botocore made for the client
    (``Config(user_agent=, user_agent_extra=)``, the app id of ``AWS_SDK_UA_APP_ID``),
    each part sanitized (:func:`sanitized`): configuration never writes a header line."""
    from dynaorm._version import __version__

    given = getattr(config, "user_agent", None)
    if not given:
        import botocore

        given = f"botocore/{botocore.__version__}"
    agent = f"dynaorm/{__version__} {sanitized(str(given), spaces=True)}"
    appid = getattr(config, "user_agent_appid", None)
    extra = getattr(config, "user_agent_extra", None)
    for part in (f"app/{sanitized(str(appid), allow_hash=True)}" if appid else "",
                 sanitized(str(extra), spaces=True) if extra else ""):
        if part and part not in agent:  # (botocore's own agent may hold them already)
            agent += f" {part}"
    return agent


#: the characters ``X-Amzn-Trace-Id`` keeps unquoted (botocore's
#: ``add_recursion_detection_header``)
_TRACE_SAFE = "-=;:+&[]{}\"',"


def trace_header(environ: Mapping[str, str] = os.environ) -> str | None:
    """The ``X-Amzn-Trace-Id`` a request carries, as botocore's
    ``add_recursion_detection_header`` decides it, read at each request (a wire knows
    once whether it runs in AWS Lambda: :class:`WireSettings`): inside AWS
    Lambda (``AWS_LAMBDA_FUNCTION_NAME`` set) with ``_X_AMZN_TRACE_ID`` set, that id
    percent-quoted (no line break or non-ASCII character survives); else ``None``."""
    if "AWS_LAMBDA_FUNCTION_NAME" not in environ:
        return None
    trace = environ.get("_X_AMZN_TRACE_ID")
    return quote(trace, safe=_TRACE_SAFE) if trace else None


def _no_environ_proxies() -> bool:
    """Whether ``urllib.request.getproxies()`` (botocore's ``get_environ_proxies``) finds
    none: where it reads only the environment (not macOS, not Windows), no ``*_proxy``
    variable with a value."""
    if sys.platform == "darwin" or os.name == "nt":
        return False
    return not any(value and name.lower().endswith("_proxy")
                   for name, value in os.environ.items())


def _proxy_for(endpoint_url: str, config: Any) -> tuple[str | None, dict[str, str]]:
    """The proxy URL (and its ``Proxy-Authorization``) botocore's HTTP session would use."""
    proxies = getattr(config, "proxies", None)
    if proxies is None and _no_environ_proxies():
        return None, {}  # (botocore: no proxies at all, so no proxy URL)
    from botocore.httpsession import ProxyConfiguration
    from botocore.utils import get_environ_proxies

    if proxies is None:
        proxies = get_environ_proxies(endpoint_url)
    found = ProxyConfiguration(proxies=proxies,
                               proxies_settings=getattr(config, "proxies_config", None))
    url = found.proxy_url_for(endpoint_url)
    return (str(url), dict(found.proxy_headers_for(url))) if url else (None, {})


def proxy_tls_context(proxy_url: str, proxies_config: Mapping[str, Any] | None,
                      verify: bool | str) -> ssl.SSLContext:
    """The TLS context of the connection *to* the proxy ``proxy_url`` (used when it is an
    ``https://`` one), from botocore's ``proxies_config``; the one rule of both wires.

    - ``proxy_ca_bundle``: the proxy is verified against this bundle alone, whatever
      ``verify`` says (as botocore's ``URLLib3Session`` does); without it, as the endpoint
      is (``verify``: its CA bundle, or no verification for ``False``);
    - ``proxy_client_cert`` (a file, or ``(cert, key)``): the certificate offered to the
      proxy; the endpoint's ``client_cert`` never is (as botocore and aiobotocore);
    - the context checks the proxy's host name unless the proxy is an IP address (as
      botocore: urllib3 matches an IP itself and cannot have the context do it).

    A file that cannot be read or is not a certificate raises botocore's
    ``InvalidProxiesConfigError``, as botocore does. ``proxy_use_forwarding_for_https`` is
    not a TLS setting: :class:`SyncWire` passes it to urllib3."""
    from botocore.exceptions import InvalidProxiesConfigError

    settings = proxies_config or {}
    bundle = settings.get("proxy_ca_bundle")
    cert = settings.get("proxy_client_cert")
    try:
        context = tls_context(verify if bundle is None else str(bundle), cert)
    except OSError as exc:  # ssl.SSLError included: not a certificate, a wrong key
        raise InvalidProxiesConfigError(error=exc) from exc
    try:
        ipaddress.ip_address(urlsplit(proxy_url).hostname or "")
    except ValueError:
        return context
    context.check_hostname = False
    return context


def prepare(signer: Signer, credentials: Any, user_agent: str, operation: str,
            request: dict[str, Any], *, in_lambda: bool = True
            ) -> tuple[bytes, dict[str, str]]:
    """The rendered body of ``request`` and its headers for ``operation``, signed by
    ``signer`` with ``credentials`` frozen now (a refreshable set refreshes here when due,
    as botocore's signer does; ``None``: botocore's ``NoCredentialsError``). The one
    signing path of :class:`SyncWire` and :class:`~dynaorm.wire.aio.AsyncWire`.
    ``in_lambda=False``: the process is known not to run in AWS Lambda, no
    :func:`trace_header` is looked for."""
    body = render(request)
    if credentials is None:
        from botocore.exceptions import NoCredentialsError

        raise NoCredentialsError()
    headers = {"X-Amz-Target": TARGET_PREFIX + operation, "Content-Type": CONTENT_TYPE,
               "User-Agent": user_agent}
    signed = signer.sign(body, headers, credentials.get_frozen_credentials())
    # not signed, as botocore leaves them out of the signature: the encoding http.client
    # asks for, the Lambda trace id
    signed["Accept-Encoding"] = "identity"
    trace = trace_header() if in_lambda else None
    if trace is not None:
        signed["X-Amzn-Trace-Id"] = trace
    return body, signed


class WireSettings:
    """What a botocore client's configuration decides for a wire, read once per table:
    the one constructor of :class:`SyncWire` and :class:`~dynaorm.wire.aio.AsyncWire`
    (each adds its own pool)."""

    def __init__(self, client: Any, credentials: Any) -> None:
        meta = client.meta
        config = meta.config
        #: the endpoint requests go to (every source botocore reads: ``endpoint_url=``,
        #: ``AWS_ENDPOINT_URL*``, FIPS, dual-stack)
        self.endpoint_url: str = meta.endpoint_url
        #: the region requests are signed for
        self.region: str = meta.region_name
        #: seconds to connect and to wait for an answer (the client config's)
        self.connect_timeout: float | None = config.connect_timeout
        self.read_timeout: float | None = config.read_timeout
        #: connections kept open at most (the client config's ``max_pool_connections``)
        self.pool_size = int(getattr(config, "max_pool_connections", 10) or 10)
        #: ``False`` or the CA bundle TLS connections are verified against (the client's)
        self.verify = tls_verify(client)
        self._client_cert: str | tuple[str, str] | None = getattr(config, "client_cert",
                                                                  None)
        #: the proxy requests go through (``Config(proxies=)``, else ``HTTPS_PROXY`` /
        #: ``HTTP_PROXY`` unless ``NO_PROXY`` covers the endpoint), as botocore decides
        self.proxy: str | None
        self.proxy, self._proxy_headers = _proxy_for(self.endpoint_url, config)
        #: botocore's ``proxies_config`` (``proxy_ca_bundle``, ``proxy_client_cert``,
        #: ``proxy_use_forwarding_for_https``): see :func:`proxy_tls_context`
        self.proxies_config: dict[str, Any] = dict(getattr(config, "proxies_config", None)
                                                   or {})
        #: botocore credentials (refreshable ones refresh on ``get_frozen_credentials``;
        #: resolved by the client: :func:`dynaorm.client.settings.credentials_for`)
        self._credentials = credentials
        self._user_agent = _user_agent(config)
        self._signer = Signer(self.endpoint_url, self.region)
        # AWS Lambda sets its variables before the process starts: whether this one runs
        # in a Lambda function is read once, here (outside Lambda, no request pays for
        # looking up a variable that is not there); the trace id, per request
        self._in_lambda = "AWS_LAMBDA_FUNCTION_NAME" in os.environ
        # the request target: the endpoint's path, "/" when it has none, and its query
        # string (signed and sent as botocore signs and sends it)
        parts = urlsplit(self.endpoint_url)
        self._path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        # the absolute URL a proxy is given: it must carry a path too
        self._url = self.endpoint_url if parts.path else parts._replace(path="/").geturl()

    def _destination(self) -> Destination:
        """Where dynaorm's own connections go (the endpoint, when no proxy is used)."""
        parts = urlsplit(self.endpoint_url)
        https = parts.scheme == "https"
        return Destination(parts.hostname or "", parts.port or (443 if https else 80),
                           host_header=self._signer.host,
                           tls=functools.partial(tls_context, self.verify, self._client_cert)
                           if https else None,
                           connect_timeout=self.connect_timeout,
                           read_timeout=self.read_timeout, maxsize=self.pool_size)

    def prepare(self, operation: str, request: dict[str, Any]) -> tuple[bytes, dict[str, str]]:
        """The body and the signed headers of ``request`` (credentials frozen now: a
        refreshable set refreshes here when due, as botocore's signer does)."""
        return prepare(self._signer, self._credentials, self._user_agent, operation, request,
                       in_lambda=self._in_lambda)


class SyncWire(WireSettings):
    """Sends DynamoDB requests of one client: resolved once from ``client`` (a botocore
    client), thread-safe (each connection serves one request at a time)."""

    def __init__(self, client: Any, credentials: Any) -> None:
        super().__init__(client, credentials)
        # without a proxy: dynaorm's own keep-alive connections (dynaorm.wire.http);
        # through one: urllib3's ProxyManager (CONNECT tunnels, proxy authentication)
        self._direct: HTTPPool | None = None
        self._manager: Any = None
        if self.proxy is None:
            self._direct = HTTPPool(self._destination())
            return
        import urllib3

        self.timeout = urllib3.Timeout(connect=self.connect_timeout, read=self.read_timeout)
        tls: dict[str, Any] = ({"cert_reqs": "CERT_NONE"} if self.verify is False else
                               {"cert_reqs": "CERT_REQUIRED", "ca_certs": self.verify})
        cert = self._client_cert
        if cert:
            tls.update({"cert_file": cert} if isinstance(cert, str) else
                       {"cert_file": cert[0], "key_file": cert[1]})
        # the connection to the proxy: its own TLS context, as botocore builds it
        tls["proxy_ssl_context"] = proxy_tls_context(self.proxy, self.proxies_config,
                                                     self.verify)
        forwarding = self.proxies_config.get("proxy_use_forwarding_for_https")
        if forwarding is not None:  # an https:// proxy gets the absolute URL, no CONNECT
            tls["use_forwarding_for_https"] = bool(forwarding)
        self._manager = urllib3.ProxyManager(self.proxy, maxsize=self.pool_size,
                                             proxy_headers=self._proxy_headers, **tls)

    def send(self, operation: str, request: dict[str, Any],
             reader: Callable[[bytes], dict[str, Any] | None] | None = None) -> dict[str, Any]:
        """Send ``request`` once; the answer as a botocore client returns it (``reader``:
        see :func:`checked_answer`)."""
        body, headers = self.prepare(operation, request)
        if self._direct is not None:
            accept = checked_answer if reader is None else functools.partial(
                checked_answer, reader=reader)
            return self._direct.post(self._path, body, headers, accept)
        return self._via_proxy(body, headers)

    def _via_proxy(self, body: bytes, headers: dict[str, str]) -> dict[str, Any]:
        """Send through the proxy (urllib3), its failures raised as botocore raises them."""
        import urllib3
        from botocore.exceptions import (
            ConnectionClosedError,
            ConnectTimeoutError,
            EndpointConnectionError,
            ProxyConnectionError,
            ReadTimeoutError,
            SSLError,
        )
        from botocore.httpsession import mask_proxy_url

        try:
            resp = self._manager.urlopen("POST", self._url, body=body,
                                         headers=headers, timeout=self.timeout,
                                         retries=False, preload_content=True)
        # as botocore's URLLib3Session maps them (a TLS failure *to the proxy* is urllib3's
        # ProxyError, so botocore's ProxyConnectionError)
        except urllib3.exceptions.SSLError as exc:
            raise SSLError(endpoint_url=self.endpoint_url, error=exc) from exc
        except urllib3.exceptions.NewConnectionError as exc:
            raise EndpointConnectionError(endpoint_url=self.endpoint_url,
                                          error=exc) from exc
        except urllib3.exceptions.ProxyError as exc:
            raise ProxyConnectionError(proxy_url=mask_proxy_url(str(self.proxy)),
                                       error=exc) from exc
        except urllib3.exceptions.ConnectTimeoutError as exc:
            raise ConnectTimeoutError(endpoint_url=self.endpoint_url, error=exc) from exc
        except urllib3.exceptions.ReadTimeoutError as exc:
            raise ReadTimeoutError(endpoint_url=self.endpoint_url, error=exc) from exc
        except urllib3.exceptions.ProtocolError as exc:
            raise ConnectionClosedError(endpoint_url=self.endpoint_url) from exc
        except urllib3.exceptions.HTTPError as exc:
            raise EndpointConnectionError(endpoint_url=self.endpoint_url,
                                          error=exc) from exc
        return checked_answer(resp.status,
                              {k.lower(): v for k, v in resp.headers.items()}, resp.data)

    def close(self) -> None:
        """Close the wire's idle connections."""
        if self._direct is not None:
            self._direct.close()
        if self._manager is not None:
            self._manager.clear()


class ErrorAnswer(Exception):
    """An error answer (status 300 or more) of the own wire: ``response`` is the
    ``error_response`` botocore's ``ClientError`` would carry (:func:`error_response`);
    :func:`~dynaorm.client.errors.map_error` maps it as it maps that ``ClientError``."""

    def __init__(self, response: dict[str, Any]) -> None:
        error = response.get("Error", {})
        super().__init__(f"{error.get('Code')}: {error.get('Message')}")
        #: botocore's ``error_response`` shape: ``Error``, modeled fields, ``ResponseMetadata``
        self.response = response


def answer_problem(status: int, headers: Mapping[str, str], data: bytes) -> str | None:
    """What makes an answer untrustworthy, whichever HTTP stack read it (``None``:
    nothing): a body that does not match its ``x-amz-crc32`` (or a header that is not a
    number), a compressed body (dynaorm asks for ``identity``), an interim or protocol-
    switching status as the final answer, a body whose size is not its
    ``Content-Length``, or an empty successful answer framed by nothing (a close: DynamoDB
    always sends a length, and a head cut short reads so)."""
    crc = headers.get("x-amz-crc32")
    if crc is not None:
        actual = zlib.crc32(data) & 0xFFFFFFFF
        if not (crc.isascii() and crc.isdigit()) or int(crc) != actual:
            return f"x-amz-crc32 mismatch: {crc[:40]!r} != {actual}"
    encoding = headers.get("content-encoding", "identity").strip().lower()
    if encoding not in ("identity", ""):
        return f"an answer with Content-Encoding {encoding[:40]!r}"
    if status < 200:
        return f"a {status} answer as the final one"
    length = headers.get("content-length")
    if length is not None and not (length.isascii() and length.isdigit()
                                   and int(length) == len(data)):
        return f"a body of {len(data)} bytes with Content-Length {length[:40]!r}"
    if (not data and status < 300 and length is None
            and "chunked" not in str(headers.get("transfer-encoding", "")).lower()):
        return "an empty answer framed by nothing (cut in its head?)"
    return None


#: the JSON type of each top-level member of DynamoDB's answers that dynaorm reads
_MEMBERS: dict[str, type | tuple[type, ...]] = {
    "Item": dict, "Attributes": dict, "Items": list, "LastEvaluatedKey": dict,
    "Responses": (dict, list), "UnprocessedKeys": dict, "UnprocessedItems": dict,
    "Count": int, "ScannedCount": int, "ConsumedCapacity": (dict, list),
    "ItemCollectionMetrics": dict, "Table": dict, "TableDescription": dict,
    "TimeToLiveDescription": dict, "TableNames": list}


def shape_problem(answer: Mapping[str, Any]) -> str | None:
    """What makes a decoded successful answer not DynamoDB's (``None``: nothing): a
    top-level member of another JSON type than DynamoDB sends (``"Item": "x"``), or an
    ``Items`` entry that is not an object. Deeper shapes are the readers' to judge."""
    for name, value in answer.items():  # (an answer has a few members: walk those)
        kind = _MEMBERS.get(name)
        if kind is not None and value is not None and not isinstance(value, kind):
            return f"a {type(value).__name__} as {name}"
    items = answer.get("Items")
    if items and not all(isinstance(item, dict) for item in items):
        return "an entry of Items that is not an object"
    return None


def checked_answer(status: int, headers: dict[str, str], data: bytes,
                   reader: Callable[[bytes], dict[str, Any] | None] | None = None
                   ) -> dict[str, Any]:
    """An answer checked (:func:`answer_problem`) and decoded, as a botocore client
    returns it (with its ``ResponseMetadata``): both wires end here. An untrustworthy
    answer, or a successful one that is not a JSON object of DynamoDB's shape
    (:func:`shape_problem`), raises
    :class:`~dynaorm.wire.http.BadAnswer`; an error answer :class:`ErrorAnswer`.
    ``reader``: what a read reads the checked body's bytes into itself (its objects
    validated straight from them), else ``None`` (then the body decodes as always)."""
    problem = answer_problem(status, headers, data)
    if problem is not None:
        raise BadAnswer(problem)
    if status >= 300:
        raise ErrorAnswer(error_response(status, data, headers))
    if reader is not None:
        read = reader(data)
        if read is not None:
            read["ResponseMetadata"] = _metadata(status, headers)
            return read
    answer = decoded_success(status, data)
    answer["ResponseMetadata"] = _metadata(status, headers)
    return answer


def decoded_success(status: int, data: bytes) -> dict[str, Any]:
    """A successful answer's body decoded (:func:`decode`), or :class:`BadAnswer` when it
    is not JSON or not an object of DynamoDB's shape (:func:`shape_problem`): the check
    both wires make of a success (botocore's through its ``before-parse`` handler)."""
    try:
        answer = decode(data)
    except ValueError as exc:
        raise BadAnswer(f"a {status} answer that is not DynamoDB JSON: {exc}") from exc
    problem = shape_problem(answer)
    if problem is not None:
        raise BadAnswer(f"a {status} answer that is not DynamoDB's: {problem}")
    return answer
