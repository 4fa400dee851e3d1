"""The plain environment (AWS Lambda, a container with credentials in its environment),
resolved without importing botocore's session.

Importing ``botocore.session`` (with the credential chain, ``botocore.auth`` and
``botocore.httpsession`` the wire needed) is most of a process's first request. In one
environment the outcome of all of it is known without it: :func:`plain_settings`
resolves the endpoint, the region, the credentials, TLS verification and the
``User-Agent`` there, and returns ``None`` whenever anything else could have a say, so that
the botocore session decides as before. It accepts only when all of these hold:

- no ``Config`` given, dynaorm's own wire, no in-process mock;
- ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` set (``AWS_SECURITY_TOKEN`` /
  ``AWS_SESSION_TOKEN`` optional): botocore's environment provider comes first in its chain;
- the region from the argument, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION`` (for a
  loopback endpoint without one, :data:`~dynaorm.client.settings.LOOPBACK_REGION`);
- the endpoint the argument (a plain ``http(s)://host[:port][/]``), else AWS's regional one
  for a region of the ``aws`` partition;
- no shared config or credentials file, or files whose ``default`` profile (the one
  read: ``AWS_PROFILE`` is not in :data:`ALLOWED`) holds only :data:`PROFILE_KEYS` (a
  region, read after the environment's, the CLI's output format, credentials); no
  ``~/.aws/models``;
- every ``AWS_*`` / ``BOTO*`` variable set is in :data:`ALLOWED` (or starts with
  ``AWS_LAMBDA_``): none that changes the endpoint, credentials, TLS or config; no
  ``*_proxy`` variable, no ``REQUESTS_CA_BUNDLE``; Linux (proxies come from the environment
  only); no ``awscrt`` (botocore would name it in the ``User-Agent``).

``tests/equivalence/test_plain_settings.py`` compares the outcome (settings and the signed
request) with the botocore session's over generated environments.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any, Final, NamedTuple
from urllib.parse import urlsplit

from dynaorm.client.endpoint import _AWS_REGION, _HOST_LABEL, LightClient
from dynaorm.client.settings import (
    CONFIG_DEFAULTS,
    LOOPBACK_REGION,
    expanded_path,
    is_loopback,
    shared_files,
)
from dynaorm.wire import sanitized
from dynaorm.wire.sigv4 import plain_host

__all__ = ["ALLOWED", "PROFILE_KEYS", "PlainCredentials", "PlainSettings", "plain_settings"]

#: the ``AWS_*`` variables the plain environment may set: credentials, region, the paths of
#: the shared files (read by :func:`_profile`), and what AWS Lambda, X-Ray and the CLI set
#: (none of which botocore reads for the endpoint, credentials, TLS or config;
#: ``AWS_EXECUTION_ENV`` reaches the ``User-Agent``, ``AWS_LAMBDA_FUNCTION_NAME`` the trace
#: header, both read alike on either path)
ALLOWED: Final = frozenset({
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
    "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_EXECUTION_ENV", "AWS_XRAY_CONTEXT_MISSING", "AWS_XRAY_DAEMON_ADDRESS",
    "AWS_DEFAULT_OUTPUT", "AWS_PAGER"})
#: botocore's host-name check (``botocore.utils.is_valid_endpoint_url``)
_HOSTNAME: Final = re.compile(r"^((?!-)[A-Z\d-]{1,63}(?<!-)\.)*((?!-)[A-Z\d-]{1,63}(?<!-))$",
                              re.IGNORECASE)


class PlainCredentials(NamedTuple):
    """Credentials from the environment, frozen: what botocore's ``Credentials`` of its
    environment provider hold, with the attributes the signer reads."""

    access_key: str
    secret_key: str
    token: str | None
    account_id: str | None = None
    method: str = "env"

    def get_frozen_credentials(self) -> PlainCredentials:
        """These credentials (they never change)."""
        return self


class _Config:
    """The ``Config`` options :class:`~dynaorm.wire.WireSettings` reads, as a client made
    with no ``Config`` has them (:data:`~dynaorm.client.settings.CONFIG_DEFAULTS`)."""

    __slots__ = ("user_agent",)
    connect_timeout: Final = CONFIG_DEFAULTS["connect_timeout"]
    read_timeout: Final = CONFIG_DEFAULTS["read_timeout"]
    max_pool_connections: Final = CONFIG_DEFAULTS["max_pool_connections"]
    client_cert = proxies = proxies_config = user_agent_appid = user_agent_extra = None

    def __init__(self, user_agent: str) -> None:
        self.user_agent = user_agent


class PlainSettings(NamedTuple):
    """What :func:`plain_settings` resolved: a client's settings in its shape, and the
    credentials."""

    client: LightClient
    credentials: PlainCredentials


def _declined_variable(environ: dict[str, str] | os._Environ[str]) -> bool:
    for name, value in environ.items():
        if name.lower().endswith("_proxy") and value:
            return True
        if name.startswith("AWS_") and name not in ALLOWED and not name.startswith(
                "AWS_LAMBDA_"):
            return True
        if name.startswith(("BOTO", "REQUESTS_CA_BUNDLE")):
            return True
    return False


def _exists(path: str) -> bool:
    return os.path.exists(expanded_path(path))


#: what the shared files' ``default`` profile may hold in the plain environment: the region
#: (read as botocore reads it), the CLI's output format (no client reads it) and
#: credentials (the environment's come first in botocore's chain)
PROFILE_KEYS: Final = frozenset({"region", "output", "aws_access_key_id",
                                 "aws_secret_access_key", "aws_session_token",
                                 "aws_security_token"})


def _profile(environ: dict[str, str] | os._Environ[str]) -> dict[str, Any] | None:
    """The ``default`` profile of the shared config and credentials files as botocore's
    session merges them (read by botocore's own ``configloader``; ``{}`` without files),
    or ``None`` when something there could have a say: a key outside
    :data:`PROFILE_KEYS`, a file that does not read, or ``~/.aws/models``."""
    if _exists("~/.aws/models"):
        return None
    config, shared = shared_files(environ)
    has_config, has_shared = _exists(config), _exists(shared)
    if not (has_config or has_shared):
        return {}
    from botocore.configloader import load_config, raw_config_parse

    try:  # (botocore's Session.full_config: the credentials file's keys merged in last)
        profile = dict(load_config(config)["profiles"].get("default", {})) if has_config else {}
        if has_shared:
            profile.update(raw_config_parse(shared).get("default", {}))
    except Exception:  # (what the session would raise, it raises there)
        return None
    if not set(profile) <= PROFILE_KEYS or not isinstance(profile.get("region", ""), str):
        return None
    return profile


def _region(region: str | None, environ: dict[str, str] | os._Environ[str],
            profile: dict[str, Any]) -> str | None:
    """The region: the argument, else ``AWS_REGION``, else botocore's (``AWS_DEFAULT_REGION``
    when set, even empty, else the profile's)."""
    if region or environ.get("AWS_REGION"):
        return region or environ["AWS_REGION"]
    if "AWS_DEFAULT_REGION" in environ:
        return environ["AWS_DEFAULT_REGION"]
    found: str | None = profile.get("region")
    return found


def _plain_endpoint(endpoint_url: str) -> bool:
    """An endpoint argument taken as it is (scheme, lower-case host name, port, at most a
    ``/``: :func:`~dynaorm.wire.sigv4.plain_host`) whose host botocore accepts."""
    if plain_host(endpoint_url) is None:  # (the port, if any, is in range there)
        return False
    parts = urlsplit(endpoint_url)
    host = parts.hostname or ""
    port = parts.port
    return (0 < len(host) <= 255 and host[-1] != "." and _HOSTNAME.match(host) is not None
            and (port is None or port > 0))


def _part(prefix: str, name: str, value: str | None = None) -> str:
    """botocore's ``UserAgentComponent.to_string``."""
    text = f"{sanitized(prefix, allow_hash=True)}/{sanitized(name)}"
    return f"{text}#{sanitized(value, allow_hash=True)}" if value else text


def user_agent(environ: dict[str, str] | os._Environ[str]) -> str:
    """The ``User-Agent`` botocore's session makes for a DynamoDB client with dynaorm's
    options (``UserAgentString.from_environment().with_client_config(...)``), less the
    business-metrics token (``m/...``: which features making a client used, none here)."""
    import platform

    import botocore

    version = str(botocore.__version__)
    system = platform.system()
    lowered = system.lower()
    family = {"darwin": "macos"}.get(lowered, lowered)
    parts = [_part("Botocore", version), "ua/2.1"]
    if family in ("windows", "linux", "macos", "android", "ios", "watchos", "tvos", "other"):
        parts.append(_part("os", family, platform.release()))
    else:
        parts += [_part("os", "other"), _part("md", system, platform.release())]
    machine = platform.machine()
    if machine:
        parts.append(_part("md", "arch", machine.lower()))
    parts.append(_part("lang", "python", platform.python_version()))
    implementation = platform.python_implementation()
    if implementation:
        parts.append(_part("md", "pyimpl", implementation))
    execution = environ.get("AWS_EXECUTION_ENV")
    if execution:
        parts.append(_part("exec-env", execution))
    parts.append(_part("cfg", "retry-mode", "standard"))
    return " ".join(p for p in parts if p)


def _unusual_install() -> bool:
    """Whether botocore's ``User-Agent`` could say more than :func:`user_agent` knows
    (``awscrt`` installed, botocore's own customizations) or proxies could come from
    anywhere but the environment (macOS, Windows)."""
    import importlib.util

    import botocore

    if sys.platform == "darwin" or os.name == "nt":
        return True
    here = os.path.dirname(botocore.__file__ or "")
    return (importlib.util.find_spec("awscrt") is not None
            or os.path.exists(os.path.join(here, "customizations")))


def _verify() -> str:
    """The CA bundle botocore verifies against when nothing configures one."""
    try:
        from certifi import where
    except ImportError:  # pragma: no cover - (certifi is botocore's dependency here)
        import botocore

        return os.path.join(os.path.dirname(botocore.__file__ or ""), "cacert.pem")
    return str(where())


def _credentials(environ: dict[str, str] | os._Environ[str]) -> PlainCredentials | None:
    access = environ.get("AWS_ACCESS_KEY_ID", "")
    secret = environ.get("AWS_SECRET_ACCESS_KEY", "")
    if not access or not secret:
        return None  # none (another provider) or partial (botocore raises)
    token = environ.get("AWS_SECURITY_TOKEN") or environ.get("AWS_SESSION_TOKEN") or None
    return PlainCredentials(access, secret, token)


def plain_settings(endpoint_url: str | None, region: str | None, config: Any = None, *,
                   environ: dict[str, str] | os._Environ[str] | None = None,
                   ) -> PlainSettings | None:
    """The settings and credentials botocore's session would resolve for a client of
    these arguments, when the environment is the plain one (see the module's docstring);
    else ``None``. ``environ``: the environment (``os.environ``)."""
    from dynaorm.client.settings import in_process_mock_depth
    from dynaorm.private_apis import moto_active

    env = os.environ if environ is None else environ
    if config is not None or in_process_mock_depth() or moto_active():
        return None
    credentials = _credentials(env)
    if credentials is None or _declined_variable(env):
        return None
    profile = _profile(env)
    if profile is None:
        return None
    name = _region(region, env, profile)
    if endpoint_url:
        if not _plain_endpoint(endpoint_url):
            return None
        endpoint = endpoint_url
        name = name or (LOOPBACK_REGION if is_loopback(endpoint_url) else None)
        if not name or not _HOST_LABEL.match(name):
            return None
    elif name and _AWS_REGION.match(name) and _HOST_LABEL.match(name):
        endpoint = f"https://dynamodb.{name}.amazonaws.com"
    else:
        return None
    if _unusual_install():
        return None
    client = LightClient(endpoint, name, _Config(user_agent(env)), _verify())
    return PlainSettings(client, credentials)
