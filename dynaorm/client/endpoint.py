"""What dynaorm's own wire reads from a botocore client, resolved without building one.

Building a botocore client costs tens of milliseconds (its service model and endpoint
rules are loaded and a client class is made) and the default wire uses none of its
pipeline: only the endpoint, the region, the ``Config`` and how TLS is verified
(:class:`~dynaorm.wire.WireSettings`). :func:`light_client` resolves those the way
botocore does and hands them on in a client's shape (``meta.endpoint_url``,
``meta.region_name``, ``meta.config``, and the HTTP session's ``verify``), so a process's
first request pays no client; the botocore client is still made when something needs it
(``wire="botocore"``, ``table.client``, event handlers).

Only the plain cases are resolved here; anything else returns ``None`` and the caller
builds the botocore client as before (which also raises what a malformed endpoint
raises), so nothing a configuration can say is lost:

- the endpoint: ``endpoint_url=`` or a configured one (``AWS_ENDPOINT_URL*``, the
  profile's), else AWS's regional endpoint ``https://dynamodb.<region>.amazonaws.com`` for a
  region of the ``aws`` partition when neither FIPS nor dual-stack endpoints are asked for,
  ``account_id_endpoint_mode`` is not ``required`` and the credentials are plain ones
  (not refreshable) carrying no account id;
- no ``defaults_mode`` but ``legacy`` (the others change timeouts);
- TLS verification: ``Config``'s own rule of botocore (the profile's ``ca_bundle`` /
  ``AWS_CA_BUNDLE``, else ``REQUESTS_CA_BUNDLE``, else the default bundle).
"""

from __future__ import annotations

import os
import re
from typing import Any, Final

from dynaorm.client.settings import client_settings, configured_endpoint

__all__ = ["LightClient", "light_client"]

#: the regions of AWS's ``aws`` partition (botocore's partitions.json)
_AWS_REGION: Final = re.compile(r"^(us|eu|ap|sa|ca|me|af|il|mx)\-\w+\-\d+$")
#: what botocore takes for a region (``botocore.utils.validate_region_name``)
_HOST_LABEL: Final = re.compile(r"^(?![0-9]+$)(?!-)[a-zA-Z0-9-]{,63}(?<!-)$")
#: configuration that changes the endpoint or the config (name, values that do not):
#: any other value and the full client decides
_USUAL: Final = (("use_fips_endpoint", (None, False)), ("use_dualstack_endpoint", (None, False)),
                 ("defaults_mode", (None, "legacy")),
                 ("account_id_endpoint_mode", (None, "preferred", "disabled")))


class _Meta:
    __slots__ = ("config", "endpoint_url", "region_name")

    def __init__(self, endpoint_url: str, region_name: str, config: Any) -> None:
        self.endpoint_url = endpoint_url
        self.region_name = region_name
        self.config = config


class _HTTPSession:
    __slots__ = ("_verify",)

    def __init__(self, verify: Any) -> None:
        self._verify = verify


class _Endpoint:
    __slots__ = ("http_session",)

    def __init__(self, verify: Any) -> None:
        self.http_session = _HTTPSession(verify)


class LightClient:
    """A botocore client's settings, in its shape (what :class:`~dynaorm.wire.WireSettings`
    reads), with no client behind them."""

    __slots__ = ("_endpoint", "meta")

    def __init__(self, endpoint_url: str, region_name: str, config: Any, verify: Any) -> None:
        self.meta = _Meta(endpoint_url, region_name, config)
        self._endpoint = _Endpoint(verify)


def _verify(session: Any, config: Any) -> Any:
    """How botocore's HTTP session verifies TLS for a client created with ``verify=None``."""
    bundle = session.get_config_variable("ca_bundle")
    if bundle:
        return bundle
    return os.environ.get("REQUESTS_CA_BUNDLE", True)


def light_client(endpoint_url: str | None, region: str | None, *, owner: str, config: Any,
                 session: Any, credentials: Any) -> LightClient | None:
    """The settings a botocore client of these arguments would have, or ``None`` when only
    the client itself can tell (see the module's docstring). ``credentials``: the ones the
    wire signs with."""
    if any(session.get_config_variable(name) not in usual for name, usual in _USUAL):
        return None
    kwargs, options = client_settings(session, endpoint_url, region, owner=owner,
                                      config=config)
    name: str = kwargs["region_name"]
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
    return LightClient(endpoint, name, made, _verify(session, made))
