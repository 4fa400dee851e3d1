"""Where and how dynaorm's own wire connects: one :class:`Endpoint` per client, made once
from what a configuration resolved (:mod:`dynaorm.client.plain` without a botocore client,
:func:`client_endpoint` from one), and what botocore decides along the way, decided the
same way here: proxies (:func:`proxy_tls_context`), TLS verification (:func:`tls_verify`),
the ``User-Agent`` (:func:`sanitized`), Lambda's trace header (:func:`trace_header`) and
the vector-search endpoint ``SearchVectors`` goes to (:func:`search_endpoint`).
"""

import dataclasses
import ipaddress
import os
import re
import ssl
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from dynaorm.private_apis import botocore_operation_url, botocore_verify
from dynaorm.wire.http import tls_context


@dataclass(frozen=True)
class Endpoint:
    """Where and how a client's requests go (:func:`endpoint_of`): what dynaorm's own wire
    reads of a configuration, once, for its sync and async sides alike."""

    url: str
    """The endpoint requests go to (every source botocore reads: ``endpoint_url=``,
    ``AWS_ENDPOINT_URL*``, FIPS, dual-stack)."""
    region: str
    """The region requests are signed for."""
    credentials: Any
    """botocore credentials (refreshable ones refresh on ``get_frozen_credentials``), or
    ``None`` (every request then fails as botocore's ``NoCredentialsError``)."""
    verify: bool | str
    """``False``, or the CA bundle TLS connections are verified against."""
    user_agent: str
    """The ``User-Agent`` header (sanitized)."""
    connect_timeout: float | None
    """Seconds to connect (the ``Config``'s)."""
    read_timeout: float | None
    """Seconds to send, then for a whole answer (the ``Config``'s)."""
    pool_size: int
    """Connections kept open at most (the ``Config``'s ``max_pool_connections``)."""
    client_cert: str | tuple[str, str] | None
    """The client certificate offered to the endpoint (a file, or ``(cert, key)``)."""
    proxy: str | None
    """The proxy requests go through (``Config(proxies=)``, else ``HTTPS_PROXY`` /
    ``HTTP_PROXY`` unless ``NO_PROXY`` covers the endpoint, as botocore decides)."""
    proxy_headers: Mapping[str, str]
    """Headers for the proxy (``Proxy-Authorization`` from its URL)."""
    proxies_config: Mapping[str, Any]
    """botocore's ``proxies_config`` (see :func:`proxy_tls_context`)."""
    search_url: str | None
    """Where ``SearchVectors`` goes when not to :attr:`url` (AWS's vector-search endpoint:
    :func:`search_endpoint`)."""


#: AWS's DynamoDB hosts: a region's (``dynamodb.REGION.``, ``dynamodb-fips.REGION.``) or an
#: account's (``ACCOUNT.ddb.REGION.``), in every partition
_AWS_HOST = re.compile(r"(?:(?P<regional>dynamodb(?:-fips)?)|(?P<account>\d+)\.ddb)\."
                       r"(?P<region>[a-z0-9-]+)\.")


def search_endpoint(url: str, region: str) -> str:
    """The endpoint ``SearchVectors`` goes to from a client of ``url`` in ``region``, as
    botocore's endpoint rules resolve it (``IsSearchOperation``) where the settings are
    read without a botocore client (:mod:`dynaorm.client.plain`: the ``aws`` partition,
    neither FIPS nor dual-stack; :func:`client_endpoint` asks the client's own rules):
    beside AWS's DynamoDB endpoint of the region, its vector-search endpoint
    (``search-dynamodb.REGION...``; ``ACCOUNT.search-ddb.REGION...``); any other endpoint
    (DynamoDB Local, dynoxide, a proxy of one's own) gets it as every request. (botocore
    sends it to an endpoint given as ``endpoint_url`` even when that is AWS's regional
    one, where a search is not answered: here it goes to the search endpoint.)"""
    parts = urlsplit(url)
    found = _AWS_HOST.match(parts.hostname or "")
    if found is None or found["region"] != region or "@" in parts.netloc:
        return url
    prefix = (f"search-{found['regional']}." if found["regional"] else
              f"{found['account']}.search-ddb.")
    return parts._replace(netloc=prefix + parts.netloc[found.start("region"):]).geturl()


def endpoint_of(url: str, region: str, credentials: Any, verify: bool | str, config: Any,
                user_agent: str | None = None) -> Endpoint:
    """The :class:`Endpoint` of a configuration: ``url``, ``region``, ``credentials`` and
    ``verify`` as resolved, and what a ``Config`` (or an object of its options) says of
    timeouts, the pool, the client certificate, proxies and the ``User-Agent``
    (``user_agent``: botocore's, when the config does not hold it)."""
    proxy, headers = _proxy_for(url, config)
    search = search_endpoint(url, region)
    return Endpoint(url, region, credentials, verify, _user_agent(config, user_agent),
                    config.connect_timeout, config.read_timeout,
                    int(getattr(config, "max_pool_connections", 10) or 10),
                    getattr(config, "client_cert", None), proxy, headers,
                    dict(getattr(config, "proxies_config", None) or {}),
                    None if search == url else search)


def client_endpoint(client: Any, credentials: Any) -> Endpoint:
    """The :class:`Endpoint` of a botocore (or aiobotocore) client: its resolved endpoint,
    region, ``Config`` and TLS verification, signing with ``credentials``; ``SearchVectors``
    where a botocore client's own endpoint rules send it (in every partition, FIPS and
    dual-stack)."""
    from botocore.exceptions import BotoCoreError

    meta = client.meta
    endpoint = endpoint_of(meta.endpoint_url, meta.region_name, credentials,
                           tls_verify(client), meta.config)
    try:
        search = botocore_operation_url(client, "SearchVectors")
    except BotoCoreError:  # (no search endpoint resolves: as every request, then)
        search = endpoint.url
    if search is None:  # (an aiobotocore client: as resolved without a client)
        return endpoint
    return dataclasses.replace(endpoint, search_url=None if search == endpoint.url else search)


def tls_verify(client: Any) -> bool | str:
    """How ``client`` (a botocore client) verifies TLS: ``False`` (``verify=False``), or the
    CA bundle path it trusts (``AWS_CA_BUNDLE``, the profile's ``ca_bundle``,
    ``REQUESTS_CA_BUNDLE``, else certifi's bundle), read from the client's HTTP session so
    that whatever botocore decided holds on this wire too."""
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


def _user_agent(config: Any, given: str | None) -> str:
    """dynaorm's name and version ahead of the ``User-Agent`` botocore makes for a client
    (``given``, else the config's ``user_agent``), with ``Config(user_agent_extra=)`` and
    the app id (``Config(user_agent_appid=)``, ``AWS_SDK_UA_APP_ID``), each part sanitized
    (:func:`sanitized`): configuration never writes a header line."""
    from dynaorm._version import __version__

    given = given or getattr(config, "user_agent", None)
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


def trace_header() -> str | None:
    """The ``X-Amzn-Trace-Id`` a request carries, as botocore's
    ``add_recursion_detection_header`` decides it, read at each request (a wire knows
    once whether it runs in AWS Lambda): inside AWS Lambda (``AWS_LAMBDA_FUNCTION_NAME``
    set) with ``_X_AMZN_TRACE_ID`` set, that id percent-quoted (no line break or non-ASCII
    character survives); else ``None``."""
    if "AWS_LAMBDA_FUNCTION_NAME" not in os.environ:
        return None
    trace = os.environ.get("_X_AMZN_TRACE_ID")
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
    ``https://`` one), from botocore's ``proxies_config``:

    - ``proxy_ca_bundle``: the proxy is verified against this bundle alone, whatever
      ``verify`` says (as botocore's ``URLLib3Session`` does); without it, as the endpoint
      is (``verify``: its CA bundle, or no verification for ``False``);
    - ``proxy_client_cert`` (a file, or ``(cert, key)``): the certificate offered to the
      proxy; the endpoint's ``client_cert`` never is (as botocore and aiobotocore);
    - the context checks the proxy's host name unless the proxy is an IP address (as
      botocore: urllib3 matches an IP itself and cannot have the context do it).

    A file that cannot be read or is not a certificate raises botocore's
    ``InvalidProxiesConfigError``, as botocore does. ``proxy_use_forwarding_for_https`` is
    not a TLS setting: :class:`~dynaorm.wire.SyncWire` passes it to urllib3."""
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
