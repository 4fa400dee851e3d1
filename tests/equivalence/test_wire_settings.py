"""The own wire's settings resolved without a botocore client
(:func:`dynaorm.client.plain.light_settings`) are those a botocore client resolves, for
every configuration source the wire reads (endpoint arguments, ``AWS_ENDPOINT_URL*``,
regions, profiles, CA bundles, proxies, timeouts, the app id); where only a client can
tell (FIPS, dual-stack, account-id endpoints, ``defaults_mode``, refreshable credentials,
other partitions) no light settings are made and the client is built as before."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.config
import botocore.session
import pytest
from botocore.credentials import Credentials, RefreshableCredentials

from dynaorm import Client
from dynaorm.client.plain import light_settings as light_client
from dynaorm.wire import WireSettings
from dynaorm.wire.endpoint import client_endpoint
from tests.support.loaders import shared_loaders

_CLEAR = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_REGION", "AWS_DEFAULT_REGION",
          "AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE", "AWS_USE_FIPS_ENDPOINT",
          "AWS_USE_DUALSTACK_ENDPOINT", "AWS_DEFAULTS_MODE", "AWS_ACCOUNT_ID_ENDPOINT_MODE",
          "AWS_SDK_UA_APP_ID", "HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy",
          "http_proxy", "no_proxy", "AWS_PROFILE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
_PLAIN = Credentials("AKID", "SECRET")


@pytest.fixture(scope="module", autouse=True)
def _parsed_once() -> Iterator[None]:
    """The module's botocore sessions share the parsed models (``shared_loaders``)."""
    with shared_loaders():
        yield


@pytest.fixture(autouse=True)
def _clean(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in _CLEAR:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKID")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "SECRET")


def _seen(settings: WireSettings) -> dict[str, Any]:
    """The settings; of the ``User-Agent``, all but botocore's business-metrics token
    (``m/...``: which features making a client used -- where its credentials came from, an
    endpoint override -- which light settings, making no client, do not report)."""
    seen = {k: v for k, v in {**vars(settings), **vars(settings.endpoint)}.items()
            if k not in ("_credentials", "_signer", "endpoint", "credentials")}
    for name in ("_user_agent", "user_agent"):
        seen[name] = " ".join(t for t in seen[name].split() if not t.startswith("m/"))
    return seen | {"signer": (settings._signer.host, settings._signer.region)}


def _both(endpoint_url: str | None, region: str | None, config: Any = None,
          credentials: Any = _PLAIN) -> tuple[Any, dict[str, Any]]:
    session = botocore.session.get_session()
    light = light_client(endpoint_url, region, owner="test", config=config, session=session,
                         credentials=credentials)
    client = Client(endpoint_url, region, config=config).botocore
    full = _seen(WireSettings(client_endpoint(client, credentials)))
    return (None if light is None else _seen(WireSettings(light))), full


@pytest.mark.parametrize("endpoint_url, region", [
    ("http://127.0.0.1:8000", "eu-west-1"),
    ("http://localhost:8000", None),
    ("https://dynamodb.example.test:4443/some/path", "us-east-2"),
    (None, "eu-west-3"),
    (None, "us-east-1"),
    (None, "il-central-1"),
])
def test_endpoints_and_regions(endpoint_url: str | None, region: str | None) -> None:
    light, full = _both(endpoint_url, region)
    assert light == full


def test_configured_endpoint_and_region(monkeypatch: pytest.MonkeyPatch,
                                        tmp_path: Path) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8123")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    light, full = _both(None, None)
    assert light == full and full["url"] == "http://127.0.0.1:8123"
    monkeypatch.delenv("AWS_ENDPOINT_URL_DYNAMODB")
    monkeypatch.delenv("AWS_DEFAULT_REGION")
    (tmp_path / "config").write_text("[default]\nregion = sa-east-1\n"
                                     "endpoint_url = http://127.0.0.1:9999\n")
    light, full = _both(None, None)
    assert light == full and full["region"] == "sa-east-1"


def test_config_options(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    config = botocore.config.Config(connect_timeout=2, read_timeout=7, max_pool_connections=3,
                                    user_agent_extra="extra/1", user_agent_appid="myapp",
                                    proxies={"https": "http://proxy.test:3128"},
                                    proxies_config={"proxy_use_forwarding_for_https": True})
    light, full = _both(None, "eu-central-1", config)
    assert light == full and full["proxy"] == "http://proxy.test:3128"
    monkeypatch.setenv("AWS_SDK_UA_APP_ID", "from-env")
    monkeypatch.setenv("HTTPS_PROXY", "http://envproxy.test:8080")
    light, full = _both(None, "eu-central-1")
    assert light == full and "app/from-env" in full["_user_agent"]


def test_tls_verification_sources(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("not read here")
    for name in ("AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE"):
        monkeypatch.setenv(name, str(bundle))
        light, full = _both(None, "us-west-2")
        assert light == full and full["verify"] == str(bundle)
        monkeypatch.delenv(name)
    (tmp_path / "config").write_text(f"[default]\nca_bundle = {bundle}\n")
    light, full = _both(None, "us-west-2")
    assert light == full and full["verify"] == str(bundle)


@pytest.mark.parametrize("variable, value", [
    ("AWS_USE_FIPS_ENDPOINT", "true"), ("AWS_USE_DUALSTACK_ENDPOINT", "true"),
    ("AWS_DEFAULTS_MODE", "standard"), ("AWS_ACCOUNT_ID_ENDPOINT_MODE", "required"),
])
def test_what_only_a_client_tells(monkeypatch: pytest.MonkeyPatch, variable: str,
                                  value: str) -> None:
    monkeypatch.setenv(variable, value)
    session = botocore.session.get_session()
    assert light_client(None, "us-east-1", owner="t", config=None, session=session,
                        credentials=_PLAIN) is None


def test_other_partitions_and_account_ids_need_the_client() -> None:
    session = botocore.session.get_session()
    for region in ("cn-north-1", "us-gov-west-1", "eu-isoe-west-1"):
        assert light_client(None, region, owner="t", config=None, session=session,
                            credentials=_PLAIN) is None
    with_account = Credentials("AKID", "SECRET", account_id="123456789012")
    refreshable = RefreshableCredentials.create_from_metadata(
        {"access_key": "a", "secret_key": "b", "token": "c",
         "expiry_time": "2999-01-01T00:00:00Z"}, lambda: {}, "test")
    for creds in (with_account, refreshable):
        assert light_client(None, "us-east-1", owner="t", config=None, session=session,
                            credentials=creds) is None
    # an explicit endpoint needs no resolution: any credentials
    assert light_client("http://127.0.0.1:8000", "us-east-1", owner="t", config=None,
                        session=session, credentials=refreshable) is not None


@pytest.mark.parametrize("endpoint_url, region", [
    ("localhost:8000", "us-east-1"), ("http://", "us-east-1"), ("not a url", "us-east-1"),
    ("http://127.0.0.1:8000", "us east 1"), ("http://127.0.0.1:8000", "-bad"),
])
def test_malformed_endpoints_and_regions_are_the_clients_to_refuse(endpoint_url: str,
                                                                    region: str) -> None:
    session = botocore.session.get_session()
    assert light_client(endpoint_url, region, owner="t", config=None, session=session,
                        credentials=_PLAIN) is None
    with pytest.raises(Exception):  # noqa: B017 (botocore's own refusal, whatever it is)
        Client(endpoint_url, region).botocore  # noqa: B018 (made on first use)


def test_the_own_wire_opens_without_a_botocore_client() -> None:
    from dynaorm import Client

    client = Client("http://127.0.0.1:9", region="eu-west-1", max_attempts=1)
    wire = client.sync_wire
    assert wire is not None and wire.endpoint.url == "http://127.0.0.1:9"
    assert client._boto._client is None  # made when something needs it
    assert client.botocore.meta.endpoint_url == "http://127.0.0.1:9"


def test_the_async_wire_opens_without_a_botocore_client() -> None:
    import asyncio

    from dynaorm import Client

    client = Client("http://127.0.0.1:9", region="eu-west-1", max_attempts=1)

    async def opened() -> Any:
        transport = await asyncio.to_thread(lambda: client.transport)  # (as asend does)
        await client.aclose()
        return transport

    wire = asyncio.run(opened())
    assert wire.endpoint.url == "http://127.0.0.1:9" and wire.endpoint.region == "eu-west-1"
    assert client._boto._client is None
