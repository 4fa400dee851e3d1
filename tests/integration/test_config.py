"""Region and credentials (contract 17): botocore's own chain, loopback defaults, one dummy
key for every loopback endpoint, configured credentials never replaced."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dynaorm import DynaormError, RequestError, Table
from dynaorm.testing import _DUMMY_ENV, _env
from dynaorm.transport.config import LOOPBACK_ACCESS_KEY, LOOPBACK_REGION, is_loopback

AWS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
           "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION",
           "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB")


@pytest.fixture
def clean_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """No AWS configuration at all; returns the (empty) config file's path."""
    for name in AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    config.write_text("")
    credentials = tmp_path / "credentials"
    credentials.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(credentials))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return config


def test_profile_region_from_the_config_file(clean_aws: Path) -> None:
    clean_aws.write_text("[default]\nregion = eu-west-1\n")
    assert Table("dynaorm-cfg").client.meta.region_name == "eu-west-1"


def test_named_profile_region(clean_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    clean_aws.write_text("[default]\nregion = eu-west-1\n[profile work]\nregion = ap-south-1\n")
    monkeypatch.setenv("AWS_PROFILE", "work")
    assert Table("dynaorm-cfg").client.meta.region_name == "ap-south-1"


@pytest.mark.parametrize("variable", ["AWS_DEFAULT_REGION", "AWS_REGION"])
def test_region_variables_beat_the_profile(clean_aws: Path, monkeypatch: pytest.MonkeyPatch,
                                           variable: str) -> None:
    clean_aws.write_text("[default]\nregion = eu-west-1\n")
    monkeypatch.setenv(variable, "us-west-2")
    assert Table("dynaorm-cfg").client.meta.region_name == "us-west-2"


def test_explicit_region_wins(clean_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-west-2")
    assert Table("dynaorm-cfg", region="eu-central-1").client.meta.region_name == (
        "eu-central-1")


def test_no_region_says_how_to_set_one_before_sending(clean_aws: Path) -> None:
    table = Table("dynaorm-cfg")
    with pytest.raises(DynaormError) as err:
        table.exists()
    assert not isinstance(err.value, RequestError)  # nothing was sent
    message = str(err.value)
    assert "dynaorm-cfg" in message and "region" in message
    assert "AWS_REGION" in message and "AWS_DEFAULT_REGION" in message


def test_loopback_endpoint_gets_a_region(clean_aws: Path) -> None:
    table = Table("dynaorm-cfg", endpoint_url="http://localhost:8000")
    assert table.client.meta.region_name == LOOPBACK_REGION


def test_loopback_endpoint_from_the_environment_gets_a_region(
        clean_aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://127.0.0.1:8000")
    assert Table("dynaorm-cfg").client.meta.region_name == LOOPBACK_REGION


def test_is_loopback() -> None:
    assert all(is_loopback(u) for u in ("http://localhost:8000", "http://127.0.0.1:1",
                                         "http://[::1]:8000"))
    assert not any(is_loopback(u) for u in (None, "", "https://dynamodb.eu-west-1.amazonaws.com",
                                            "http://10.0.0.5:8000", "not a url"))


def _signed_key(table: Table) -> str:
    """The access key the table's requests are signed with (from the Authorization header)."""
    keys: list[str] = []

    def grab(request: Any, **_: Any) -> None:
        auth = request.headers["Authorization"]
        auth = auth.decode() if isinstance(auth, bytes) else auth
        keys.append(auth.split("Credential=", 1)[1].split("/", 1)[0])

    table.client.meta.events.register_first("before-send.dynamodb", grab)
    table.exists()
    return keys[0]


def test_loopback_without_credentials_gets_the_shared_dummy_key(clean_aws: Path,
                                                                 ddb_local: str) -> None:
    assert _signed_key(Table("dynaorm-cfg", endpoint_url=ddb_local)) == LOOPBACK_ACCESS_KEY


def test_configured_credentials_are_never_replaced(clean_aws: Path, ddb_local: str,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "mykey")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "mysecret")
    assert _signed_key(Table("dynaorm-cfg", endpoint_url=ddb_local)) == "mykey"


def test_plugin_and_applications_see_one_local_database(clean_aws: Path,
                                                        ddb_local: str) -> None:
    """DynamoDB Local keeps one database per key and region: a table created by an
    application with no credentials is the one the test plugin's environment sees."""
    app = Table("dynaorm-shared-db", endpoint_url=ddb_local)
    app.create()
    try:
        with _env(_DUMMY_ENV):
            assert Table("dynaorm-shared-db", endpoint_url=ddb_local).exists()
    finally:
        app.delete()
    assert _DUMMY_ENV["AWS_ACCESS_KEY_ID"] == LOOPBACK_ACCESS_KEY
