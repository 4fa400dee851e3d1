"""SigV4 for DynamoDB's one request shape, as botocore's ``SigV4Auth`` computes it.

Every DynamoDB request is a ``POST`` of JSON to the endpoint's root with the same four
signed headers (``content-type``, ``host``, ``x-amz-date``, ``x-amz-target``, plus
``x-amz-security-token`` with temporary credentials). botocore's signer rebuilds all of
that through ``email.message`` headers and re-derives the signing key (four HMACs) on each
call: about a fifth of a request's client CPU. :class:`Signer` computes the same canonical
request directly and keeps the signing key, set into an HMAC, per (secret, day,
region). Endpoints with a path or a query string are signed by botocore's ``SigV4Auth``
itself (:attr:`Signer.fast` is false). ``tests/unit/test_wire_conformance.py`` checks
the result against the botocore client's signature.
"""

import hashlib
import hmac
import re
import time
from typing import Any
from urllib.parse import urlsplit

_SERVICE = "dynamodb"
#: the ``Content-Type`` of every DynamoDB request (JSON 1.0)
CONTENT_TYPE = "application/x-amz-json-1.0"


def _stamp() -> str:
    """Now as SigV4's ``X-Amz-Date``: UTC, whole seconds (botocore's format). Read from
    :mod:`time` directly: a datetime made, stripped of its zone and formatted (botocore's
    ``get_current_datetime`` then ``strftime``) cost a 25-item query about 4% of its
    client CPU."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode("utf-8"), hashlib.sha256).digest()


#: an endpoint whose ``host`` is read without botocore: scheme, host name, port
_PLAIN = re.compile(r"^https?://[a-z0-9.-]+(:[0-9]{1,5})?/?$")


def plain_host(endpoint_url: str) -> str | None:
    """botocore's ``_host_from_url`` for a plain endpoint (no IPv6 literal, user info,
    path or query), else ``None``: the host name, and the port unless the scheme's own."""
    if not _PLAIN.match(endpoint_url):
        return None
    parts = urlsplit(endpoint_url)
    try:
        port = parts.port
    except ValueError:
        return None
    host = parts.hostname or ""
    if port is not None and port != {"http": 80, "https": 443}[parts.scheme]:
        return f"{host}:{port}"
    return host


def _botocore_host(endpoint_url: str, region: str) -> str:
    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    probe = SigV4Auth(Credentials("k", "s"), _SERVICE, region)
    return str(probe.headers_to_sign(AWSRequest("POST", endpoint_url))["host"])


class Signer:
    """Signs DynamoDB requests to one endpoint and region (thread-safe: the key cache is
    a tuple replaced whole, and each request feeds its own copy of the keyed HMAC)."""

    def __init__(self, endpoint_url: str, region: str):
        self.endpoint_url = endpoint_url
        self.region = region
        parts = urlsplit(endpoint_url)
        #: whether the direct path applies (else botocore's SigV4Auth signs)
        self.fast = parts.path in ("", "/") and not parts.query
        #: the ``host`` value botocore signs for this endpoint (default ports dropped)
        self.host = plain_host(endpoint_url) or _botocore_host(endpoint_url, region)
        self._scope_tail = f"/{region}/{_SERVICE}/aws4_request"
        # the canonical request's start: method, path, no query, the constant headers
        self._head = f"POST\n/\n\ncontent-type:{CONTENT_TYPE}\nhost:{self.host}\nx-amz-date:"
        self._keys: tuple[str, str, hmac.HMAC] | None = None  # (secret, day, keyed HMAC)

    def sign(self, body: bytes, target: str, user_agent: str, credentials: Any
             ) -> dict[str, str]:
        """The headers of a request for ``target`` (``X-Amz-Target``) with ``body``:
        ``Content-Type``, ``User-Agent``, ``X-Amz-Date``, ``X-Amz-Security-Token``
        (temporary credentials) and ``Authorization``, signed with frozen
        ``credentials``, then ``Accept-Encoding: identity`` (what http.client asks for,
        not signed, as botocore leaves it out of the signature)."""
        headers = {"X-Amz-Target": target, "Content-Type": CONTENT_TYPE,
                   "User-Agent": user_agent}
        if not self.fast:
            return {**self._botocore(body, headers, credentials), "Accept-Encoding": "identity"}
        stamp = _stamp()
        day = stamp[:8]
        token = credentials.token
        if token:
            signed = "content-type;host;x-amz-date;x-amz-security-token;x-amz-target"
            extra = "x-amz-security-token:" + " ".join(token.split()) + "\n"
        else:
            signed, extra = "content-type;host;x-amz-date;x-amz-target", ""
        canonical = (f"{self._head}{stamp}\n{extra}x-amz-target:{target}\n\n{signed}\n"
                     f"{hashlib.sha256(body).hexdigest()}")
        scope = day + self._scope_tail
        to_sign = (f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n"
                   f"{hashlib.sha256(canonical.encode('utf-8')).hexdigest()}")
        secret = credentials.secret_key
        keyed = self._keys  # (secret, day, keyed HMAC): the signing key derived once a day
        if keyed is None or keyed[0] != secret or keyed[1] != day:
            key = _hmac(_hmac(_hmac(_hmac(("AWS4" + secret).encode("utf-8"), day),
                                    self.region), _SERVICE), "aws4_request")
            keyed = self._keys = (secret, day, hmac.new(key, digestmod=hashlib.sha256))
        mac = keyed[2].copy()  # (each request feeds its own copy: thread-safe)
        mac.update(to_sign.encode("utf-8"))
        headers["X-Amz-Date"] = stamp
        if token:
            headers["X-Amz-Security-Token"] = token
        headers["Authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={credentials.access_key}/{scope}, "
            f"SignedHeaders={signed}, Signature={mac.hexdigest()}")
        headers["Accept-Encoding"] = "identity"
        return headers

    def _botocore(self, body: bytes, headers: dict[str, str], credentials: Any
                  ) -> dict[str, str]:
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        request = AWSRequest(method="POST", url=self.endpoint_url, data=body,
                             headers=dict(headers))
        SigV4Auth(credentials, _SERVICE, self.region).add_auth(request)
        return {str(k): str(v) for k, v in request.headers.items()}
