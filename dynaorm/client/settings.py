"""Where requests go and as whom: endpoint, region, credentials, retries, the one client.

Configuration is read exactly as botocore reads it, through a botocore session
(``get_config_variable``, the profile, the credential chain), and never written: dynaorm
sets no environment variable. See ``docs/guide/configuration.md`` for the precedence.

- endpoint: ``Client(endpoint_url=...)``, else ``AWS_ENDPOINT_URL_DYNAMODB``,
  ``AWS_ENDPOINT_URL``, the profile's ``services`` section, the profile's ``endpoint_url``
  (botocore's order); none of the configured ones when
  ``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS`` (or the profile's
  ``ignore_configured_endpoint_urls``) is true;
- region: ``Client(region=...)``, else ``AWS_REGION``, else botocore's (``AWS_DEFAULT_REGION``,
  the profile's ``region``);
- ``max_attempts``: ``Client(max_attempts=...)``, else botocore's (``AWS_MAX_ATTEMPTS``,
  the profile's ``max_attempts``), else :data:`~dynaorm.protocol.policy.DEFAULT_MAX_ATTEMPTS`;
- a ``botocore.config.Config`` given to the client: every option it sets is honoured
  (timeouts, pool size, proxies, TLS, user agent), except retries (dynaorm retries) and
  parameter validation (dynaorm builds the requests); options it leaves unset take
  dynaorm's defaults (:data:`CONFIG_DEFAULTS`).

dynaorm only fills gaps for a *local* engine (a loopback endpoint from any of those sources:
DynamoDB Local, a moto server; or the in-process moto of
:func:`dynaorm.client.client.in_process_mock`): a region
when none is configured, and :data:`LOOPBACK_ACCESS_KEY` / :data:`LOOPBACK_SECRET_KEY` when
no credentials are configured, passed to the client it creates. Configured credentials are
never replaced, so the CLI, the pytest plugin and an application using the same profile see
the same DynamoDB Local database (it keeps one per access key and region).
"""

import os
import threading
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlparse

from dynaorm.errors import DynaormError
from dynaorm.private_apis import config_options, moto_active
from dynaorm.protocol.policy import DEFAULT_MAX_ATTEMPTS

#: the access key every local engine gets where no credentials are configured
#: (DynamoDB Local accepts only letters and digits in one)
LOOPBACK_ACCESS_KEY = "dynaormlocal"
#: its secret (DynamoDB Local and moto accept any; botocore needs some to sign)
LOOPBACK_SECRET_KEY = "dynaormlocal"
#: the region a local engine gets where none is configured
LOOPBACK_REGION = "us-east-1"
#: ``Config`` options a client takes where the ``Config`` it is given leaves them unset:
#: connections kept open (at least the widest fan-out of scatter-gather reads) and timeouts
CONFIG_DEFAULTS: dict[str, Any] = {"connect_timeout": 15, "read_timeout": 30,
                                   "max_pool_connections": 64}
#: ``Config`` options a client always takes: dynaorm retries and builds the requests
_FORCED: dict[str, Any] = {"parameter_validation": False,
                           "retries": {"total_max_attempts": 1, "mode": "standard"}}

_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1", "[::1]"})
_SERVICE = "dynamodb"

_mock_lock = threading.Lock()
_mock_depth = 0  # how many in-process mock blocks are open


def is_loopback(endpoint_url: str | None) -> bool:
    """Whether ``endpoint_url`` points at this machine (DynamoDB Local, a moto server)."""
    if not endpoint_url:
        return False
    try:
        host = urlparse(endpoint_url).hostname or ""
    except ValueError:
        return False
    return host in _LOOPBACK_HOSTS or host.startswith("127.")


def enter_mock(by: int) -> int:
    """Open (``by=1``) or close (``-1``) an in-process mock block; the blocks open now (see
    :func:`dynaorm.client.client.in_process_mock`)."""
    global _mock_depth
    with _mock_lock:
        _mock_depth += by
        return _mock_depth


def default_session() -> Any:
    """A new botocore session: it reads the configuration (environment, files) as it is now.
    botocore's session machinery is most of what importing it costs, so it is imported here,
    when a table first needs it, not when ``dynaorm`` is imported."""
    import botocore.session

    return botocore.session.get_session()


def _session(session: Any | None) -> Any:
    return default_session() if session is None else session


def configured_endpoint(endpoint_url: str | None, session: Any | None = None,
                        service: str = _SERVICE) -> str | None:
    """The DynamoDB endpoint botocore will use: ``endpoint_url``, else the configured one
    (``AWS_ENDPOINT_URL_DYNAMODB``, ``AWS_ENDPOINT_URL``, the profile's ``services``
    section, the profile's ``endpoint_url``) unless configured endpoints are ignored
    (``AWS_IGNORE_CONFIGURED_ENDPOINT_URLS``); ``None``: AWS's endpoint for the region.
    ``service``: another service's (``"kms"``: ``AWS_ENDPOINT_URL_KMS``, ...)."""
    if endpoint_url:
        return endpoint_url
    session = _session(session)
    if session.get_config_variable("ignore_configured_endpoint_urls"):
        return None
    from botocore.configprovider import ConfiguredEndpointProvider

    found = ConfiguredEndpointProvider(
        full_config=session.full_config, scoped_config=session.get_scoped_config(),
        client_name=service).provide()
    return str(found) if found else None


def shared_files(environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """The shared config and credentials files botocore reads, as configured:
    ``AWS_CONFIG_FILE`` (else ``~/.aws/config``) and ``AWS_SHARED_CREDENTIALS_FILE`` (else
    ``~/.aws/credentials``), unexpanded (see :func:`expanded_path`)."""
    return (environ.get("AWS_CONFIG_FILE", "~/.aws/config"),
            environ.get("AWS_SHARED_CREDENTIALS_FILE", "~/.aws/credentials"))


def expanded_path(path: str) -> str:
    """A configured file path as botocore expands it: variables, then ``~``."""
    return os.path.expanduser(os.path.expandvars(path))


def in_process_mock_depth() -> int:
    """How many in-process mock blocks are open."""
    return _mock_depth


def in_process(endpoint: str | None) -> bool:
    """Whether requests to the configured ``endpoint`` go to the in-process mock (no
    endpoint, inside an in-process mock block)."""
    return endpoint is None and _mock_depth > 0


def is_local(endpoint_url: str | None, session: Any | None = None) -> bool:
    """Whether requests for ``endpoint_url`` (with the configured endpoints) go to a local
    engine: a loopback endpoint, or no endpoint inside an in-process mock block."""
    endpoint = configured_endpoint(endpoint_url, session)
    return is_loopback(endpoint) or in_process(endpoint)


def configured_region(session: Any | None = None) -> str | None:
    """The configured region: ``AWS_REGION``, else botocore's (``AWS_DEFAULT_REGION``, the
    profile's ``region``). botocore itself reads only the latter two; ``AWS_REGION`` comes
    first as in the other AWS SDKs and the CLI v2 (and botocore's own ``auto`` defaults mode)."""
    found = os.environ.get("AWS_REGION") or _session(session).get_config_variable("region")
    return str(found) if found else None


def resolve_region(region: str | None, session: Any, endpoint_url: str | None,
                   owner: str = "Client") -> str:
    """The region to sign for: ``region``, else :func:`configured_region`; for a local
    engine :data:`LOOPBACK_REGION`; else a DynaormError saying how to set one."""
    found = region or configured_region(session)
    if found:
        return found
    if is_local(endpoint_url, session):
        return LOOPBACK_REGION
    raise DynaormError(
        f"{owner}: no AWS region configured; pass Client(region=...) or "
        "Table(region=...), set "
        "AWS_REGION or AWS_DEFAULT_REGION, or put 'region = ...' in your AWS profile "
        "(~/.aws/config)")


def resolve_max_attempts(max_attempts: int | None, session: Any | None = None,
                         owner: str = "Client", read: Callable[[], Any] | None = None) -> int:
    """Attempts per request: ``max_attempts``, else botocore's ``max_attempts``
    (``AWS_MAX_ATTEMPTS``, the profile's ``max_attempts``; ``read()`` when given: the
    configured value before botocore's ``int()``, read without a session by the plain
    path's :func:`~dynaorm.client.plain.configured_attempts`), else
    :data:`DEFAULT_MAX_ATTEMPTS`; a DynaormError for a configured value that is not an
    int >= 1 (converted as botocore converts it: ``int()``)."""
    if max_attempts is not None:
        return max_attempts
    try:
        found = read() if read else _session(session).get_config_variable("max_attempts")
        attempts = DEFAULT_MAX_ATTEMPTS if found is None else int(found)
    except (ValueError, TypeError) as exc:  # (TypeError: a nested value in the profile)
        raise DynaormError(f"{owner}: AWS_MAX_ATTEMPTS / the profile's max_attempts "
                           f"must be an int >= 1: {exc}") from None
    if attempts < 1:
        raise DynaormError(f"{owner}: AWS_MAX_ATTEMPTS / the profile's max_attempts "
                           f"must be an int >= 1, got {attempts!r}")
    return attempts


def local_only(session: Any, endpoint_url: str | None) -> bool:
    """For a local engine, make ``session`` use only configured credentials (no
    instance-metadata probe) and say ``True``; else ``False`` and change nothing."""
    if not is_local(endpoint_url, session):
        return False
    resolver = session.get_component("credential_provider")
    for method in ("container-role", "iam-role"):
        resolver.remove(method)
    return True


def _dummy() -> dict[str, Any]:
    return {"aws_access_key_id": LOOPBACK_ACCESS_KEY,
            "aws_secret_access_key": LOOPBACK_SECRET_KEY}


def local_credentials(endpoint_url: str | None, session: Any | None = None) -> dict[str, Any]:
    """The credential keyword arguments dynaorm passes to ``create_client`` for
    ``endpoint_url``: the dummy ones for a local engine with no configured credentials
    (always for the in-process mock), else ``{}`` (botocore's chain decides). Give them to
    your own clients (a streams client, boto3) to see the same local database."""
    session = _session(session)
    if in_process(configured_endpoint(endpoint_url, session)) or (
            local_only(session, endpoint_url) and session.get_credentials() is None):
        return _dummy()
    return {}


def client_settings(session: Any, endpoint_url: str | None, region: str | None, *,
                    owner: str = "Client", config: Any = None, has_credentials: bool | None = None,
                    verify: bool | str | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """What every dynaorm client is created with, sync or async: ``create_client``'s
    keyword arguments (region, endpoint, local credentials) and ``Config``'s options.

    ``config``: the ``botocore.config.Config`` the :class:`~dynaorm.Client` was given:
    every option it sets is kept, those it leaves unset take :data:`CONFIG_DEFAULTS`;
    botocore's retries are off (dynaorm retries) and so is parameter validation (dynaorm
    builds the requests). ``has_credentials``: whether the session has credentials (asked
    of the session when ``None``; an async session's caller awaits it after
    :func:`local_only`). ``verify``: the client's (botocore's ``verify``).
    """
    given = config_options(config)
    name = resolve_region(region or given.get("region_name"), session, endpoint_url, owner)
    kwargs = {"region_name": name, "endpoint_url": endpoint_url, "verify": verify}
    if in_process(configured_endpoint(endpoint_url, session)):
        kwargs.update(_dummy())
    elif local_only(session, endpoint_url):
        if has_credentials is None:
            has_credentials = session.get_credentials() is not None
        if not has_credentials:
            kwargs.update(_dummy())
    return kwargs, client_options(given)


def service_settings(session: Any, service: str, region: str | None, *,
                     endpoint_url: str | None, owner: str,
                     config: Any, verify: bool | str | None
                     ) -> tuple[dict[str, Any], dict[str, Any]]:
    """What the botocore client of another service (``"kms"``) that a dynaorm client sends
    through is created with, as :func:`client_settings` says for DynamoDB: the client's
    region (``region``, else as resolved for its DynamoDB ``endpoint_url``), its
    ``Config``'s options, its ``verify``; the service's endpoint as botocore configures it
    (``AWS_ENDPOINT_URL_KMS``, ``AWS_ENDPOINT_URL``, the profile; else AWS's); the dummy
    credentials of a local engine where that endpoint is moto's in-process mock, or a
    loopback one (a moto server) with no credentials configured."""
    given = config_options(config)
    name = resolve_region(region or given.get("region_name"), session, endpoint_url, owner)
    kwargs = {"region_name": name, "verify": verify}
    endpoint = configured_endpoint(None, session, service)
    if (endpoint is None and (moto_active() or in_process(endpoint))) or (
            is_loopback(endpoint) and session.get_credentials() is None):
        kwargs.update(_dummy())
    return kwargs, client_options(given)


def client_options(given: dict[str, Any]) -> dict[str, Any]:
    """The ``Config`` options of a client whose ``Config`` sets ``given``: those, with the
    ``User-Agent`` parts sanitized, over :data:`CONFIG_DEFAULTS`; retries off and no
    parameter validation (dynaorm retries and builds the requests)."""
    return {**CONFIG_DEFAULTS, **_sanitized(given), **_FORCED}


#: the ``Config`` options that reach the ``User-Agent`` header
_AGENT_OPTIONS = ("user_agent", "user_agent_extra", "user_agent_appid")


def _sanitized(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with the ``User-Agent`` parts sanitized as botocore sanitizes an app id
    (:func:`dynaorm.wire.sanitized`): botocore writes ``user_agent`` and
    ``user_agent_extra`` as given, and a line break there would be a header line of its
    own (http.client refuses it with a raw ``ValueError``; a non-latin-1 one raises)."""
    if not any(isinstance(options.get(name), str) for name in _AGENT_OPTIONS):
        return options
    from dynaorm.wire.endpoint import sanitized

    cleaned = dict(options)
    for name in _AGENT_OPTIONS:
        value = cleaned.get(name)
        if isinstance(value, str):
            cleaned[name] = sanitized(value, allow_hash=name == "user_agent_appid",
                                      spaces=name != "user_agent_appid")
    return cleaned


def credentials_for(endpoint_url: str | None, session: Any | None) -> Any:
    """The credentials the botocore client of ``endpoint_url`` signs with: the dummy ones
    dynaorm gives a local engine without configured credentials, else the session's chain
    (refreshable credentials stay refreshable); ``None`` when there are none."""
    from botocore.credentials import Credentials

    session = _session(session)
    dummy = local_credentials(endpoint_url, session)
    if dummy:
        return Credentials(dummy["aws_access_key_id"], dummy["aws_secret_access_key"])
    return session.get_credentials()
