"""Settings resolved without a botocore client: the own wire's :class:`~dynaorm.wire.
Endpoint` in the environments where botocore's outcome is known without building one.

Importing ``botocore.session`` (with the credential chain, ``botocore.auth`` and
``botocore.httpsession`` the wire needed) is most of a process's first request, and
building a botocore client costs tens of milliseconds more (its service model and
endpoint rules are loaded and a client class is made), while the own wire uses none of
its pipeline. Two readings spare them, each returning ``None`` whenever anything else
could have a say, so that the botocore client decides as before (raising what a
malformed endpoint raises):

:func:`plain_settings`, the plain environment (AWS Lambda, a container with credentials
in its environment), without a botocore session. It accepts only when all of these hold:

- dynaorm's own wire, no in-process mock, and no ``Config`` or one that sets only
  :data:`PLAIN_OPTIONS` (what the own wire reads of a ``Config`` itself: timeouts, pool,
  proxies, client certificate, ``user_agent_extra``; its region; retries and parameter
  validation, which dynaorm overrides);
- ``AWS_ACCESS_KEY_ID`` and ``AWS_SECRET_ACCESS_KEY`` set (``AWS_SECURITY_TOKEN`` /
  ``AWS_SESSION_TOKEN`` optional): botocore's environment provider comes first in its chain;
- the region from the argument, else ``AWS_REGION``, else ``AWS_DEFAULT_REGION`` (for a
  loopback endpoint without one, :data:`~dynaorm.client.settings.LOOPBACK_REGION`);
- the endpoint the argument (a plain ``http(s)://host[:port][/]``), else AWS's regional one
  for a region of the ``aws`` partition;
- no shared config or credentials file, or files whose profile (``AWS_PROFILE``'s, which
  must exist then, else ``default``) holds only :data:`PROFILE_KEYS` (a region, read after
  the environment's, the CLI's output format, credentials, a retry mode, ``max_attempts``,
  read after ``AWS_MAX_ATTEMPTS`` by :func:`configured_attempts`); no ``~/.aws/models``;
- every ``AWS_*`` / ``BOTO*`` variable set is in :data:`ALLOWED` (or starts with
  ``AWS_LAMBDA_``): none that changes the endpoint, credentials, TLS or config; no
  ``*_proxy`` variable, no empty ``REQUESTS_CA_BUNDLE``; Linux (proxies come from the
  environment only); no ``awscrt`` (botocore would name it in the ``User-Agent``);
- TLS verified against ``AWS_CA_BUNDLE``, else ``REQUESTS_CA_BUNDLE``, else the default
  bundle (as botocore's session decides).

:func:`light_settings`, any environment, through a botocore session but no client: the
endpoint given or configured (``AWS_ENDPOINT_URL*``, the profile's), else AWS's regional
one for a region of the ``aws`` partition when neither FIPS nor dual-stack endpoints are
asked for, ``account_id_endpoint_mode`` is not ``required`` and the credentials are plain
ones (not refreshable) carrying no account id; no ``defaults_mode`` but ``legacy`` (the
others change timeouts); TLS verified by botocore's own rule (the profile's ``ca_bundle``
/ ``AWS_CA_BUNDLE``, else ``REQUESTS_CA_BUNDLE``, else the default bundle).

``tests/equivalence/test_plain_settings.py`` compares both with the botocore session's and
client's outcome (settings and the signed request) over generated environments.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Mapping
from types import SimpleNamespace
from typing import Any, Final, NamedTuple
from urllib.parse import urlsplit

from dynaorm.client.settings import (
    LOOPBACK_REGION,
    client_options,
    client_settings,
    configured_endpoint,
    expanded_path,
    in_process_mock_depth,
    is_loopback,
    shared_files,
)
from dynaorm.wire.endpoint import Endpoint, endpoint_of, sanitized
from dynaorm.wire.sigv4 import plain_host

#: the regions of AWS's ``aws`` partition (botocore's partitions.json)
_AWS_REGION: Final = re.compile(r"^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$")
#: what botocore takes for a region (``botocore.utils.validate_region_name``)
_HOST_LABEL: Final = re.compile(r"^(?![0-9]+$)(?!-)[a-zA-Z0-9-]{,63}(?<!-)$")
#: configuration that changes the endpoint or the config (name, values that do not):
#: any other value and the botocore client decides
_USUAL: Final = (("use_fips_endpoint", (None, False)), ("use_dualstack_endpoint", (None, False)),
                 ("defaults_mode", (None, "legacy")),
                 ("account_id_endpoint_mode", (None, "preferred", "disabled")))

#: the ``AWS_*`` variables the plain environment may set: credentials, region, the paths of
#: the shared files (read by :func:`_profile`), the retry mode (which dynaorm's ``Config``
#: overrides), the attempts per request (read by :func:`configured_attempts`, which no
#: botocore client of dynaorm's reads), and what AWS Lambda, X-Ray and the CLI set (none of
#: which botocore reads for the endpoint, credentials, TLS or config;
#: ``AWS_EXECUTION_ENV`` reaches the ``User-Agent``, ``AWS_LAMBDA_FUNCTION_NAME`` the trace
#: header, both read alike on either path)
ALLOWED: Final = frozenset({
    "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN",
    "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE",
    "AWS_EXECUTION_ENV", "AWS_XRAY_CONTEXT_MISSING", "AWS_XRAY_DAEMON_ADDRESS",
    "AWS_DEFAULT_OUTPUT", "AWS_PAGER", "AWS_CA_BUNDLE", "AWS_PROFILE", "AWS_RETRY_MODE",
    "AWS_MAX_ATTEMPTS"})
#: the ``Config`` options the plain environment takes: those the own wire reads of the
#: ``Config`` as given (:func:`~dynaorm.wire.endpoint.endpoint_of`, ``user_agent_extra``
#: last in botocore's ``User-Agent``), the region (read as the session path reads it), and
#: those dynaorm overrides; any other (``user_agent``, ``tcp_keepalive``, ...) and the
#: session decides
PLAIN_OPTIONS: Final = frozenset({
    "connect_timeout", "read_timeout", "max_pool_connections", "proxies", "proxies_config",
    "client_cert", "user_agent_extra", "region_name", "retries", "parameter_validation"})
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


def _declined_variable(environ: Mapping[str, str]) -> bool:
    return any((name.lower().endswith("_proxy") and value)
               or (name.startswith("AWS_") and name not in ALLOWED
                   and not name.startswith("AWS_LAMBDA_"))
               or name.startswith("BOTO")
               or (name in ("REQUESTS_CA_BUNDLE", "AWS_PROFILE") and not value)
               for name, value in environ.items())


def _exists(path: str) -> bool:
    return os.path.exists(expanded_path(path))


#: what the shared files' ``default`` profile may hold in the plain environment: the region
#: (read as botocore reads it), the CLI's output format (no client reads it), credentials
#: (the environment's come first in botocore's chain), ``retry_mode`` and ``max_attempts`` (a
#: client's ``Config`` sets its retries, and dynaorm's always does: see ``_FORCED`` in
#: :mod:`dynaorm.client.settings`; dynaorm retries itself, ``max_attempts`` times:
#: :func:`configured_attempts`)
PROFILE_KEYS: Final = frozenset({"region", "output", "aws_access_key_id",
                                 "aws_secret_access_key", "aws_session_token",
                                 "aws_security_token", "retry_mode", "max_attempts"})


def _profile(environ: Mapping[str, str]) -> dict[str, Any] | None:
    """The ``default`` profile of the shared config and credentials files as botocore's
    session merges them (read by botocore's own ``configloader``; ``{}`` without files),
    or ``None`` when something there could have a say: a key outside
    :data:`PROFILE_KEYS`, a file that does not read, or ``~/.aws/models``."""
    if _exists("~/.aws/models"):
        return None
    config, shared = shared_files(environ)
    has_config, has_shared = _exists(config), _exists(shared)
    named = environ.get("AWS_PROFILE")  # (one named must exist, even "default")
    name = named or "default"
    if not (has_config or has_shared):
        return None if named else {}
    from botocore.configloader import load_config, raw_config_parse

    try:  # (botocore's Session.full_config: the credentials file's keys merged in last)
        found = [load_config(config)["profiles"] if has_config else {},
                 raw_config_parse(shared) if has_shared else {}]
    except Exception:  # (what the session would raise, it raises there)
        return None
    profile = {**found[0].get(name, {}), **found[1].get(name, {})}
    if not set(profile) <= PROFILE_KEYS or not isinstance(profile.get("region", ""), str) or (
            named and not any(name in each for each in found)):
        return None
    return profile


def configured_attempts() -> Any:
    """In the plain environment, ``max_attempts`` as botocore's session reads it, before its
    ``int()`` (:func:`~dynaorm.client.settings.resolve_max_attempts` converts it):
    ``AWS_MAX_ATTEMPTS`` when set (even empty), else the profile's; ``None``: neither."""
    return os.environ.get("AWS_MAX_ATTEMPTS", (_profile(os.environ) or {}).get("max_attempts"))


def _plain_endpoint(endpoint_url: str) -> bool:
    """An endpoint argument taken as it is (scheme, lower-case host name, port, at most a
    ``/``: :func:`~dynaorm.wire.sigv4.plain_host`) whose host botocore accepts."""
    if plain_host(endpoint_url) is None:  # (the port, if any, is in range there)
        return False
    parts = urlsplit(endpoint_url)
    host = parts.hostname or ""
    return (0 < len(host) <= 255 and host[-1] != "." and _HOSTNAME.match(host) is not None
            and (parts.port is None or parts.port > 0))


def _part(prefix: str, name: str, value: str | None = None) -> str:
    """botocore's ``UserAgentComponent.to_string``."""
    text = f"{sanitized(prefix, allow_hash=True)}/{sanitized(name)}"
    return f"{text}#{sanitized(value, allow_hash=True)}" if value else text


def user_agent(environ: Mapping[str, str], extra: str | None = None) -> str:
    """The ``User-Agent`` botocore's session makes for a DynamoDB client with dynaorm's
    options (``UserAgentString.from_environment().with_client_config(...)``), less the
    business-metrics token (``m/...``: which features making a client used, none here);
    ``extra``: the ``Config``'s ``user_agent_extra`` (sanitized), last as botocore puts it."""
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
    if machine := platform.machine():
        parts.append(_part("md", "arch", machine.lower()))
    parts.append(_part("lang", "python", platform.python_version()))
    if implementation := platform.python_implementation():
        parts.append(_part("md", "pyimpl", implementation))
    if execution := environ.get("AWS_EXECUTION_ENV"):
        parts.append(_part("exec-env", execution))
    parts += [_part("cfg", "retry-mode", "standard"), extra or ""]
    return " ".join(p for p in parts if p)


def _unusual_install() -> bool:
    """Whether botocore's ``User-Agent`` could say more than :func:`user_agent` knows
    (``awscrt`` installed, botocore's own customizations) or proxies could come from
    anywhere but the environment (macOS, Windows)."""
    import importlib.util

    import botocore

    if sys.platform == "darwin" or os.name == "nt":
        return True
    return importlib.util.find_spec("awscrt") is not None or os.path.exists(
        os.path.join(os.path.dirname(botocore.__file__ or ""), "customizations"))


def _verify() -> str:
    """The CA bundle botocore verifies against when nothing configures one."""
    try:
        from certifi import where
    except ImportError:  # pragma: no cover - (certifi is botocore's dependency here)
        import botocore

        return os.path.join(os.path.dirname(botocore.__file__ or ""), "cacert.pem")
    return str(where())


def _credentials(environ: Mapping[str, str]) -> PlainCredentials | None:
    access = environ.get("AWS_ACCESS_KEY_ID", "")
    secret = environ.get("AWS_SECRET_ACCESS_KEY", "")
    if not (access and secret):
        return None  # none (another provider) or partial (botocore raises)
    token = environ.get("AWS_SECURITY_TOKEN") or environ.get("AWS_SESSION_TOKEN") or None
    return PlainCredentials(access, secret, token)


def _endpoint_and_region(endpoint_url: str | None, region: str | None
                         ) -> tuple[str, str] | None:
    """The endpoint and region a client of ``endpoint_url`` (when given, else DynamoDB's
    endpoint of ``region``) and ``region`` (a loopback endpoint's: a stand-in when none)
    signs for; ``None`` when botocore would take them otherwise or refuse them."""
    if endpoint_url:
        if not _plain_endpoint(endpoint_url):
            return None
        name = region or (LOOPBACK_REGION if is_loopback(endpoint_url) else None)
        if not name or not _HOST_LABEL.match(name):
            return None
        return endpoint_url, name
    if region and _AWS_REGION.match(region) and _HOST_LABEL.match(region):
        return f"https://dynamodb.{region}.amazonaws.com", region
    return None


def plain_settings(endpoint_url: str | None, region: str | None, config: Any = None, *,
                   environ: Mapping[str, str] | None = None,
                   ) -> Endpoint | None:
    """The endpoint and credentials botocore's session would resolve for a client of
    these arguments, when the environment is the plain one (see the module's docstring);
    else ``None``. ``environ``: the environment (``os.environ``)."""
    from dynaorm.private_apis import config_options, moto_active

    env = os.environ if environ is None else environ
    given = config_options(config)
    if not set(given) <= PLAIN_OPTIONS or in_process_mock_depth() or moto_active():
        return None
    credentials = _credentials(env)
    if credentials is None or _declined_variable(env) or (profile := _profile(env)) is None:
        return None
    # the region: the argument, else the Config's (given: its options), else AWS_REGION,
    # else botocore's (AWS_DEFAULT_REGION when set, even empty, else the profile's)
    resolved = _endpoint_and_region(endpoint_url, region or given.get("region_name") or env.get(
        "AWS_REGION") or env.get("AWS_DEFAULT_REGION", profile.get("region")))
    if resolved is None or _unusual_install():
        return None
    endpoint, name = resolved
    verify = env.get("AWS_CA_BUNDLE") or env.get("REQUESTS_CA_BUNDLE") or _verify()
    options = client_options(given)
    return endpoint_of(endpoint, name, credentials, verify, SimpleNamespace(**options),
                       user_agent(env, options.get("user_agent_extra")))


def light_settings(endpoint_url: str | None, region: str | None, *, owner: str, config: Any,
                   session: Any, credentials: Any) -> Endpoint | None:
    """The endpoint a botocore client of these arguments would have, read from the botocore
    ``session`` without making the client, or ``None`` when only the client itself can
    tell (see the module's docstring). ``credentials``: the ones the wire signs with."""
    if any(session.get_config_variable(name) not in usual for name, usual in _USUAL):
        return None
    kwargs, options = client_settings(session, endpoint_url, region, owner=owner,
                                      config=config)
    name = kwargs["region_name"]
    endpoint = configured_endpoint(endpoint_url, session)
    if endpoint is None:
        if not _AWS_REGION.match(name) or getattr(credentials, "account_id", None) or (
                type(credentials).__name__ != "Credentials"):
            return None  # (refreshable credentials may bring an account id later)
        endpoint = f"https://dynamodb.{name}.amazonaws.com"
    import botocore.config
    from botocore.utils import is_valid_endpoint_url, is_valid_ipv6_endpoint_url

    if not (is_valid_endpoint_url(endpoint) or is_valid_ipv6_endpoint_url(endpoint)) or (
            not _HOST_LABEL.match(name)):
        return None  # the client refuses it (or the region), and says why
    config_of: Any = botocore.config.Config  # (its options are keywords botocore checks)
    appid = options.get("user_agent_appid") or session.get_config_variable("user_agent_appid")
    made = config_of(**options)
    if appid is not None and getattr(made, "user_agent_appid", None) is None:
        made = made.merge(config_of(user_agent_appid=appid))
    if getattr(made, "user_agent", None) is None:  # a client's meta.config: botocore's own
        agent = session.get_component("user_agent_creator").with_client_config(made)
        made = made.merge(config_of(user_agent=agent.to_string()))
    verify = session.get_config_variable("ca_bundle") or os.environ.get(
        "REQUESTS_CA_BUNDLE", True)  # (botocore's HTTP session's, for a client's verify=None)
    if verify is True:  # (botocore's get_cert_path: the default bundle)
        from botocore.httpsession import get_cert_path

        verify = str(get_cert_path(True))
    return endpoint_of(endpoint, name, credentials, verify, made)
