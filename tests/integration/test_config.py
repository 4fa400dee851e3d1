"""Configuration (contract 17, issue 21): read exactly as botocore reads it, never written.

Every source is checked on its own and against the others: environment variables, a profile
in a temporary ``AWS_CONFIG_FILE`` / ``AWS_SHARED_CREDENTIALS_FILE``, loopback endpoints from
each endpoint source. Every call is made through :func:`unchanged`, which asserts that
``os.environ`` is the same before and after.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import botocore.session
import pytest

from dynaorm import DynaormError, RequestError, Table
from dynaorm.client.settings import (
    DEFAULT_MAX_ATTEMPTS,
    LOOPBACK_ACCESS_KEY,
    LOOPBACK_REGION,
    LOOPBACK_SECRET_KEY,
    configured_endpoint,
    is_local,
    is_loopback,
    local_credentials,
)
from dynaorm.testing import moto_backend, use_tables

T = TypeVar("T")

AWS_ENV = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
           "AWS_DEFAULT_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_MAX_ATTEMPTS",
           "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB",
           "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS")
DUMMY = {"aws_access_key_id": LOOPBACK_ACCESS_KEY, "aws_secret_access_key": LOOPBACK_SECRET_KEY}
LOCAL = "http://127.0.0.1:8000"


def unchanged(fn: Callable[[], T]) -> T:
    """``fn()``, asserting it leaves ``os.environ`` exactly as it found it."""
    before = dict(os.environ)
    result = fn()
    assert dict(os.environ) == before
    return result


class Aws:
    """A temporary AWS configuration: the config and credentials files."""

    def __init__(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        self.config = tmp_path / "config"
        self.credentials = tmp_path / "credentials"
        self.config.write_text("")
        self.credentials.write_text("")
        self.monkeypatch = monkeypatch

    def profile(self, text: str, credentials: str = "") -> None:
        self.config.write_text(text)
        self.credentials.write_text(credentials)

    def env(self, **values: str) -> None:
        for name, value in values.items():
            self.monkeypatch.setenv(name, value)


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Aws:
    """No AWS configuration at all (empty files, no variables, no metadata service)."""
    for name in AWS_ENV:
        monkeypatch.delenv(name, raising=False)
    found = Aws(tmp_path, monkeypatch)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(found.config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(found.credentials))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return found


def region_of(table: Table) -> str:
    return str(unchanged(lambda: table.client.meta.region_name))


def credentials_of(table: Table) -> Any:
    """The credentials the table's client signs with (``None``: none resolvable)."""
    return unchanged(lambda: table.client._request_signer._credentials)


# -- region -------------------------------------------------------------------------------
def test_profile_region_from_the_config_file(aws: Aws) -> None:
    aws.profile("[default]\nregion = eu-west-1\n")
    assert region_of(Table("dynaorm-cfg")) == "eu-west-1"


def test_an_edited_config_file_is_read_again_at_a_path_with_a_variable(
        aws: Aws, tmp_path: Path) -> None:
    """``AWS_CONFIG_FILE`` may name its file through a variable (botocore expands it): the
    file is watched there, so an edit gives tables made after it the new configuration."""
    aws.env(DYNAORM_TEST_AWS_DIR=str(tmp_path), AWS_CONFIG_FILE="$DYNAORM_TEST_AWS_DIR/config")
    aws.config.write_text("[default]\nregion = eu-west-1\n")
    assert region_of(Table("dynaorm-cfg-var")) == "eu-west-1"
    aws.config.write_text("[default]\nregion = eu-central-1\n")  # (the other file untouched)
    assert region_of(Table("dynaorm-cfg-var")) == "eu-central-1"


def test_named_profile_region(aws: Aws) -> None:
    aws.profile("[default]\nregion = eu-west-1\n[profile work]\nregion = ap-south-1\n")
    aws.env(AWS_PROFILE="work")
    assert region_of(Table("dynaorm-cfg")) == "ap-south-1"


@pytest.mark.parametrize("variable", ["AWS_DEFAULT_REGION", "AWS_REGION"])
def test_region_variables_beat_the_profile(aws: Aws, variable: str) -> None:
    aws.profile("[default]\nregion = eu-west-1\n")
    aws.env(**{variable: "us-west-2"})
    assert region_of(Table("dynaorm-cfg")) == "us-west-2"


def test_aws_region_beats_aws_default_region(aws: Aws) -> None:
    """As in the other AWS SDKs (botocore alone ignores AWS_REGION)."""
    aws.env(AWS_REGION="eu-north-1", AWS_DEFAULT_REGION="us-west-2")
    assert region_of(Table("dynaorm-cfg")) == "eu-north-1"
    assert botocore.session.get_session().get_config_variable("region") == "us-west-2"


def test_explicit_region_wins(aws: Aws) -> None:
    aws.env(AWS_REGION="us-west-2", AWS_DEFAULT_REGION="us-west-2")
    assert region_of(Table("dynaorm-cfg", region="eu-central-1")) == "eu-central-1"


def test_no_region_says_how_to_set_one_before_sending(aws: Aws) -> None:
    table = Table("dynaorm-cfg")
    with pytest.raises(DynaormError) as err:
        unchanged(table.exists)
    assert not isinstance(err.value, RequestError)  # nothing was sent
    message = str(err.value)
    assert "dynaorm-cfg" in message and "region" in message
    assert "AWS_REGION" in message and "AWS_DEFAULT_REGION" in message


# -- loopback recognised from every endpoint source ---------------------------------------
def _explicit(aws: Aws) -> str | None:
    return LOCAL


def _env_global(aws: Aws) -> str | None:
    aws.env(AWS_ENDPOINT_URL=LOCAL)
    return None


def _env_service(aws: Aws) -> str | None:
    aws.env(AWS_ENDPOINT_URL_DYNAMODB=LOCAL)
    return None


def _profile_global(aws: Aws) -> str | None:
    aws.profile(f"[profile dev]\nendpoint_url = {LOCAL}\n")
    aws.env(AWS_PROFILE="dev")
    return None


def _profile_services(aws: Aws) -> str | None:
    aws.profile(f"[profile dev]\nservices = local\n[services local]\ndynamodb =\n"
                f"  endpoint_url = {LOCAL}\n")
    aws.env(AWS_PROFILE="dev")
    return None


SOURCES = {"argument": _explicit, "AWS_ENDPOINT_URL": _env_global,
           "AWS_ENDPOINT_URL_DYNAMODB": _env_service, "profile endpoint_url": _profile_global,
           "profile services section": _profile_services}


@pytest.mark.parametrize("source", SOURCES)
def test_loopback_is_recognised_from_every_endpoint_source(aws: Aws, source: str) -> None:
    endpoint = SOURCES[source](aws)
    table = Table("dynaorm-cfg", endpoint_url=endpoint)
    assert unchanged(lambda: configured_endpoint(endpoint)) == LOCAL
    assert unchanged(lambda: is_local(endpoint))
    assert unchanged(lambda: local_credentials(endpoint)) == DUMMY
    assert unchanged(lambda: table.client.meta.endpoint_url) == LOCAL
    assert region_of(table) == LOOPBACK_REGION
    assert credentials_of(table).access_key == LOOPBACK_ACCESS_KEY


@pytest.mark.parametrize("source", [s for s in SOURCES if s != "argument"])
def test_ignored_configured_endpoints_are_not_local(aws: Aws, source: str) -> None:
    """AWS_IGNORE_CONFIGURED_ENDPOINT_URLS: the request goes to AWS, so no dummy key and no
    loopback region: a missing region or missing credentials are the caller's to fix."""
    SOURCES[source](aws)
    aws.env(AWS_IGNORE_CONFIGURED_ENDPOINT_URLS="true")
    assert unchanged(lambda: configured_endpoint(None)) is None
    assert not unchanged(lambda: is_local(None))
    assert unchanged(lambda: local_credentials(None)) == {}
    with pytest.raises(DynaormError, match="no AWS region configured"):
        unchanged(lambda: Table("dynaorm-cfg").client)
    table = Table("dynaorm-cfg", region="eu-west-1")
    assert "amazonaws.com" in unchanged(lambda: table.client.meta.endpoint_url)
    assert credentials_of(table) is None


def test_ignoring_endpoints_keeps_an_explicit_one(aws: Aws) -> None:
    aws.env(AWS_IGNORE_CONFIGURED_ENDPOINT_URLS="true")
    assert unchanged(lambda: is_local(LOCAL))


def test_remote_endpoint_is_not_local(aws: Aws) -> None:
    aws.env(AWS_ENDPOINT_URL="https://dynamodb.eu-west-1.amazonaws.com",
            AWS_REGION="eu-west-1")
    assert not unchanged(lambda: is_local(None))
    assert credentials_of(Table("dynaorm-cfg")) is None


def test_is_loopback() -> None:
    assert all(is_loopback(u) for u in ("http://localhost:8000", "http://127.0.0.1:1",
                                         "http://[::1]:8000"))
    assert not any(is_loopback(u) for u in (None, "", "https://dynamodb.eu-west-1.amazonaws.com",
                                            "http://10.0.0.5:8000", "not a url"))


# -- credentials --------------------------------------------------------------------------
def _signed_key(table: Table) -> str:
    """The access key the table's requests are signed with (from the Authorization header)."""
    keys: list[str] = []

    def grab(request: Any, **_: Any) -> None:
        auth = request.headers["Authorization"]
        auth = auth.decode() if isinstance(auth, bytes) else auth
        keys.append(auth.split("Credential=", 1)[1].split("/", 1)[0])

    table.wire = "botocore"  # hooks botocore's client: its wire
    table.client.meta.events.register_first("before-send.dynamodb", grab)
    unchanged(table.exists)
    return keys[0]


def test_loopback_without_credentials_gets_the_shared_dummy_key(aws: Aws,
                                                                 ddb_local: str) -> None:
    assert _signed_key(Table("dynaorm-cfg", endpoint_url=ddb_local)) == LOOPBACK_ACCESS_KEY


def test_configured_credentials_are_never_replaced(aws: Aws, ddb_local: str) -> None:
    aws.env(AWS_ACCESS_KEY_ID="mykey", AWS_SECRET_ACCESS_KEY="mysecret")
    assert _signed_key(Table("dynaorm-cfg", endpoint_url=ddb_local)) == "mykey"
    assert unchanged(lambda: local_credentials(ddb_local)) == {}


def test_profile_credentials_are_used_for_a_loopback_endpoint(aws: Aws, ddb_local: str) -> None:
    aws.profile("[profile dev]\nregion = eu-west-1\n",
                "[dev]\naws_access_key_id = devkey\naws_secret_access_key = devsecret\n")
    aws.env(AWS_PROFILE="dev")
    table = Table("dynaorm-cfg", endpoint_url=ddb_local)
    assert _signed_key(table) == "devkey"
    assert region_of(table) == "eu-west-1"


def test_profile_endpoint_and_credentials_together(aws: Aws, ddb_local: str) -> None:
    """A profile naming DynamoDB Local is recognised as local and its key is kept."""
    aws.profile(f"[profile dev]\nendpoint_url = {ddb_local}\n",
                "[dev]\naws_access_key_id = devkey\naws_secret_access_key = devsecret\n")
    aws.env(AWS_PROFILE="dev")
    table = Table("dynaorm-cfg")
    assert _signed_key(table) == "devkey"
    assert region_of(table) == LOOPBACK_REGION


def test_plugin_and_applications_see_one_local_database(aws: Aws, ddb_local: str) -> None:
    """DynamoDB Local keeps one database per key and region: a table created by an
    application with no credentials is the one the test fixtures and the credentials
    dynaorm hands out (``local_credentials``) see."""
    app = Table("dynaorm-shared-db", endpoint_url=ddb_local)
    unchanged(app.create)
    try:
        client = botocore.session.get_session().create_client(
            "dynamodb", endpoint_url=ddb_local, region_name=LOOPBACK_REGION,
            **local_credentials(ddb_local))
        assert "dynaorm-shared-db" in client.list_tables()["TableNames"]
    finally:
        app.delete()


# -- max_attempts -------------------------------------------------------------------------
def test_max_attempts_default(aws: Aws) -> None:
    assert unchanged(lambda: Table("dynaorm-cfg").max_attempts) == DEFAULT_MAX_ATTEMPTS == 5


def test_max_attempts_from_the_environment(aws: Aws) -> None:
    aws.env(AWS_MAX_ATTEMPTS="3")
    table = Table("dynaorm-cfg")
    assert unchanged(lambda: (table.max_attempts, table.db.policy.max_attempts)) == (3, 3)


def test_max_attempts_from_the_profile(aws: Aws) -> None:
    aws.profile("[profile dev]\nmax_attempts = 2\n")
    aws.env(AWS_PROFILE="dev")
    assert unchanged(lambda: Table("dynaorm-cfg").max_attempts) == 2


def test_max_attempts_environment_beats_the_profile(aws: Aws) -> None:
    aws.profile("[default]\nmax_attempts = 2\n")
    aws.env(AWS_MAX_ATTEMPTS="7")
    assert unchanged(lambda: Table("dynaorm-cfg").max_attempts) == 7


def test_explicit_max_attempts_wins(aws: Aws) -> None:
    aws.profile("[default]\nmax_attempts = 2\n")
    aws.env(AWS_MAX_ATTEMPTS="7")
    table = Table("dynaorm-cfg", max_attempts=4)
    assert unchanged(lambda: (table.max_attempts, table.db.policy.max_attempts)) == (4, 4)


@pytest.mark.parametrize("value", ["three", "0"])
def test_bad_configured_max_attempts_is_a_dynaorm_error(aws: Aws, value: str) -> None:
    aws.env(AWS_MAX_ATTEMPTS=value)
    with pytest.raises(DynaormError, match="AWS_MAX_ATTEMPTS"):
        unchanged(lambda: Table("dynaorm-cfg").db.policy)


def test_configured_max_attempts_is_what_a_failing_request_gets(aws: Aws) -> None:
    """The configured number is the number of attempts sent (moto, throttled every time)."""
    aws.env(AWS_MAX_ATTEMPTS="2")
    table = Table("dynaorm-cfg-attempts")
    sent: list[str] = []

    def throttle(request: Any, **_: Any) -> Any:
        from botocore.awsrequest import AWSResponse

        sent.append(request.url)
        body = b'{"__type":"com.amazonaws.dynamodb.v20120810#ThrottlingException"}'
        return AWSResponse(request.url, 400, {"x-amzn-RequestId": "r"}, _Raw(body))

    with moto_backend(), use_tables(table):
        table.max_wait = 0  # retry without waiting
        table.wire = "botocore"  # hooks botocore's client: its wire
        events = table.client.meta.events
        events.register_first("before-send.dynamodb", throttle)
        with pytest.raises(RequestError, match="after 2 attempts"):
            unchanged(table.exists)
        events.unregister("before-send.dynamodb", throttle)
    assert len(sent) == 2


class _Raw:
    def __init__(self, body: bytes) -> None:
        self.body = body

    def stream(self, **_: Any) -> Any:
        yield self.body


# -- the in-process backend and the fixtures ----------------------------------------------
def test_in_process_backend_needs_no_configuration_and_sets_nothing(aws: Aws) -> None:
    table = Table("dynaorm-cfg-moto")

    def run() -> bool:
        with moto_backend():
            assert local_credentials(None) == DUMMY
            with use_tables(table):
                return table.exists() and region_of(table) == LOOPBACK_REGION

    assert unchanged(run)
    assert not unchanged(lambda: is_local(None))  # the block is over


def test_in_process_backend_is_every_clients_transport_for_the_block(aws: Aws) -> None:
    """moto's in-process backend is installed as the transport of every client for the
    block, clients made (and used) before it included (a table defined at import, ``main()``
    in the block); after it, each client made before gets back the transport it had, and
    one made inside chooses again (its own wire, not botocore's with the block's dummy
    credentials)."""
    from dynaorm import Client, Session
    from dynaorm.wire import Wire

    aws.env(AWS_ACCESS_KEY_ID="AKID", AWS_SECRET_ACCESS_KEY="SECRET", AWS_REGION="us-east-1")
    before = Client()
    own = before.transport  # chosen before the block: dynaorm's own wire, to AWS
    assert isinstance(own, Wire)
    table = Table("dynaorm-cfg-before", client=before)

    def run() -> tuple[Any, Any]:
        with moto_backend():
            inside = Client()
            assert before.transport.botocore and inside.transport.botocore
            table.create()
            before.send("PutItem", {"TableName": table.name,
                                    "Item": {"pk": {"S": "a"}, "sk": {"S": "b"}}})
            assert Session(table).client.send("GetItem", {
                "TableName": table.name, "Key": {"pk": {"S": "a"}, "sk": {"S": "b"}}})["Item"]
        return before.transport, inside

    after, inside = unchanged(run)
    assert after is own  # back to the one it had
    assert isinstance(inside.transport, Wire) and inside.transport is not own


def test_in_process_backend_keeps_the_configured_region(aws: Aws) -> None:
    aws.profile("[default]\nregion = eu-west-3\n")
    table = Table("dynaorm-cfg-moto")

    def run() -> str:
        with moto_backend(), use_tables(table):
            return region_of(table)

    assert unchanged(run) == "eu-west-3"


def test_use_tables_on_a_loopback_endpoint_sets_nothing(aws: Aws, ddb_local: str) -> None:
    table = Table("dynaorm-cfg-local")

    def run() -> str:
        with use_tables(table, endpoint_url=ddb_local):
            return _signed_key(table)

    assert unchanged(run) == LOOPBACK_ACCESS_KEY


# -- the async client follows the same rules ----------------------------------------------
@pytest.mark.parametrize("profile", [True, False], ids=["profile", "no-credentials"])
def test_async_client_uses_the_same_identity(aws: Aws, ddb_local: str, profile: bool) -> None:
    import asyncio

    import dynaorm.aio

    if profile:
        aws.profile("[profile dev]\nregion = eu-west-1\n",
                    "[dev]\naws_access_key_id = devkey\naws_secret_access_key = devsecret\n")
        aws.env(AWS_PROFILE="dev")
    table = Table("dynaorm-cfg-aio", endpoint_url=ddb_local)

    async def identity() -> tuple[str, str]:
        client = await dynaorm.aio.client(table)
        try:
            credentials = await client._request_signer._credentials.get_frozen_credentials()
            return str(credentials.access_key), str(client.meta.region_name)
        finally:
            await dynaorm.aio.close(table)

    expected = ("devkey", "eu-west-1") if profile else (LOOPBACK_ACCESS_KEY, LOOPBACK_REGION)
    assert unchanged(lambda: asyncio.run(identity())) == expected


def test_in_process_backend_inside_the_callers_own_mock(aws: Aws) -> None:
    """Nested in a caller's mock_aws, moto's own settings stay the caller's, and everything
    moto set is undone when the caller's block ends."""
    from moto import mock_aws

    table = Table("dynaorm-cfg-nested")

    def run() -> bool:
        with mock_aws():
            with moto_backend(), use_tables(table):
                assert region_of(table) == LOOPBACK_REGION
                found = table.exists()
            assert os.environ.get("AWS_ACCESS_KEY_ID")  # the caller's mock: moto's key
        return found

    assert unchanged(run)
