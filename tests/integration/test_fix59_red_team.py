"""Red team of issue 59's fixes (branch fix59): ways to make ``use_tables`` reach AWS
anyway. Every refused endpoint below is refused before any request is sent; the test
engines (the in-process moto, DynamoDB Local) still work."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

import pytest

from dynaorm import RequestEvent, Session
from dynaorm.client.table import Table
from dynaorm.testing import NotATestEngineError, moto_backend, use_tables, worker_suffix
from dynaorm.testing.engines import check_test_engine
from tests.integration.test_safe_use_tables import Order

REAL_LOOKING = {"AWS_ACCESS_KEY_ID": "AKIAIOSFODNN7EXAMPLE",
                "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
                "AWS_REGION": "us-east-1"}


@pytest.fixture
def aws_like(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A developer's shell: real-looking credentials, no endpoint, an empty config file
    (returned, for tests that write one)."""
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_PROFILE",
                 "DYNAORM_TEST_ENDPOINT", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"):
        monkeypatch.delenv(name, raising=False)
    config = tmp_path / "config"
    config.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    for name, value in REAL_LOOKING.items():
        monkeypatch.setenv(name, value)
    return config


@pytest.fixture
def no_dns(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every host name looked up (none is: a refused endpoint is refused before sending)."""
    looked: list[str] = []

    def lookup(host: Any, *args: Any, **kwargs: Any) -> Any:
        looked.append(str(host))
        raise socket.gaierror("the red team's tests never resolve a name")

    monkeypatch.setattr(socket, "getaddrinfo", lookup)
    return looked


def _refused(table: Table, no_dns: list[str], **kwargs: Any) -> NotATestEngineError:
    events: list[RequestEvent] = []
    table.on_request(events.append)
    with (pytest.raises(NotATestEngineError) as caught, use_tables(table, **kwargs)):
        raise AssertionError("the block must not run")
    assert events == [] and no_dns == []  # nothing sent, not even a name looked up
    return caught.value


#: endpoints on AWS (0.7's fix59 accepted each of the first group)
AWS_ENDPOINTS = [
    # urllib3 (botocore's sender) reads the host before the backslash, the standard
    # library after the "@": fix59 took this for loopback, botocore sent it to AWS
    "http://dynamodb.us-east-1.amazonaws.com\\@127.0.0.1:8000",
    # the ISO and European sovereign partitions (botocore's partitions.json)
    "https://dynamodb.us-iso-east-1.c2s.ic.gov",
    "https://dynamodb.us-isob-east-1.sc2s.sgov.gov",
    "https://dynamodb.eu-isoe-west-1.cloud.adc-e.uk",
    "https://dynamodb.us-isof-south-1.csp.hci.ic.gov",
    "https://dynamodb.eusc-de-east-1.amazonaws.eu",
    # a "loopback" name (127.*) on AWS's domain is AWS's name, not this machine
    "https://127.0.0.1.amazonaws.com",
    # already refused by fix59: kept as regression guards
    "https://DYNAMODB.US-EAST-1.AMAZONAWS.COM",
    "http://127.0.0.1@dynamodb.us-east-1.amazonaws.com",
    "https://localhost.amazonaws.com",
    "https://dynamodb.us-east-1.amazonaws.com.",
    "https://dynamodb-fips.us-gov-west-1.amazonaws.com",
    "https://dynamodb.us-gov-east-1.amazonaws.com",
    "https://dynamodb-fips.us-east-1.api.aws",
    "https://dynamodb.us-east-1.amazonaws.com:443/",
    "https://vpce-0a1b-2c3d.dynamodb.us-east-1.vpce.amazonaws.com",
]


@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
@pytest.mark.parametrize("endpoint", AWS_ENDPOINTS)
def test_aws_endpoints_refused(aws_like: Path, no_dns: list[str], endpoint: str,
                               wire: str) -> None:
    caught = _refused(Table("orders-prod"), no_dns, endpoint_url=endpoint, wire=wire)
    assert caught.endpoint == endpoint and caught.table == "orders-prod"


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"])
def test_environment_endpoint_on_aws_refused(aws_like: Path, no_dns: list[str],
                                             monkeypatch: pytest.MonkeyPatch,
                                             variable: str) -> None:
    monkeypatch.setenv(variable, "http://dynamodb.us-east-1.amazonaws.com\\@localhost:8000")
    _refused(Table("orders-prod"), no_dns)


@pytest.mark.parametrize("config", [
    "[default]\nendpoint_url = https://dynamodb.us-iso-east-1.c2s.ic.gov\n",
    "[default]\nservices = prod\n[services prod]\ndynamodb =\n"
    "  endpoint_url = https://dynamodb.eu-west-1.amazonaws.com\n",
    "[default]\nuse_fips_endpoint = true\nuse_dualstack_endpoint = true\n",
])
def test_config_file_endpoint_on_aws_refused(aws_like: Path, no_dns: list[str],
                                             config: str) -> None:
    aws_like.write_text(config)
    _refused(Table("orders-prod"), no_dns)


def test_ignored_configured_loopback_is_aws(aws_like: Path, no_dns: list[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """A loopback endpoint in the environment that botocore is told to ignore: requests go
    to AWS, so it must not count as a test engine."""
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "http://localhost:8000")
    monkeypatch.setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true")
    assert _refused(Table("orders-prod"), no_dns).endpoint is None


def test_moto_started_then_stopped_is_aws(aws_like: Path, no_dns: list[str]) -> None:
    table = Table("orders-prod")
    with moto_backend(), use_tables(table):
        pass  # inside moto: fine
    _refused(table, no_dns)  # after it: AWS again


def test_bound_to_an_aws_endpoint_then_no_endpoint_given(aws_like: Path,
                                                         no_dns: list[str]) -> None:
    """A table whose client points at AWS, handed to use_tables with no endpoint: the
    table's own endpoint counts (use_tables(endpoint_url=None) does not reset it to a test
    engine)."""
    table = Table("orders-prod", endpoint_url="https://dynamodb.us-east-1.amazonaws.com")
    _refused(table, no_dns)
    assert table.endpoint_url == "https://dynamodb.us-east-1.amazonaws.com"


@pytest.mark.parametrize("endpoint", ["http://[::1]:8000", "http://127.0.0.2:8000",
                                      "http://LOCALHOST:8000"])
def test_test_engine_endpoints_accepted(aws_like: Path, endpoint: str) -> None:
    table = Table("orders-test")
    table.connect(endpoint)
    check_test_engine(table)  # no error: not AWS


def test_still_works_on_test_engines(backend: str | None) -> None:
    """The fix keeps moto and DynamoDB Local usable (both parsers read loopback there)."""
    table = Order.Meta.table
    with use_tables(table, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        with Session(table) as s:
            s.save(Order(order_id="r1"))
        assert [i["order_id"] for i in tb.scan()] == ["r1"]


# --- nested models' aliases of every kind (issue 59, point 1b) ---------------------------

from pydantic import AliasChoices, BaseModel, ConfigDict, Field  # noqa: E402
from pydantic.alias_generators import to_camel  # noqa: E402

from dynaorm import Entity, F  # noqa: E402

aliased = Table("dynaorm-red-aliases")


class Deep(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    long_name: str = "d"


class Camel(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel)
    first_name: str
    deep: Deep | None = None


class OnlyValidation(BaseModel):
    x: str = Field(validation_alias=AliasChoices("ex", "x_in"))


class OnlySerialization(BaseModel):
    y: str = Field(serialization_alias="why")


class Aliased(Entity):
    class Meta:
        table = aliased
        pk = "DOC#{doc_id}"
        sk = "DOC"

    doc_id: str
    camel: Camel
    by: dict[str, Camel] = {}
    grid: list[list[Camel]] = []
    va: OnlyValidation | None = None
    sa: OnlySerialization | None = None


def _aliased(i: str = "1") -> Aliased:
    return Aliased(doc_id=i, camel=Camel(firstName="a", deep=Deep(longName="L")),
                   by={"k": Camel(firstName="b")}, grid=[[Camel(firstName="n")]],
                   va=OnlyValidation(ex="v"), sa=OnlySerialization(y="s"))


@pytest.fixture
def aliased_tb(backend: str | None) -> Any:
    with use_tables(aliased, endpoint_url=backend, name_suffix=worker_suffix()) as b:
        yield b


def test_every_alias_kind_saves_and_reads_back(aliased_tb: Any) -> None:
    """alias_generator (nested twice), dicts and lists of lists of aliased models, a
    validation_alias only and a serialization_alias only: fix59 refused the last two at
    save (``InvalidValueError``: check_fields dumped them by alias and validated by
    alias, which a validation_alias or serialization_alias alone does not round-trip)."""
    want = _aliased()
    with Session(aliased) as s:
        s.save(want)
    s = Session(aliased)
    assert s.get(Aliased, doc_id="1") == want
    assert s.query(Aliased, doc_id="1").all() == [want]
    assert s.scan(Aliased).all() == [want]
    assert s.get_many(Aliased, [{"doc_id": "1"}]) == [want]
    assert s.query(Aliased, doc_id="1").filter(F("camel.deep.long_name") == "L").all() == [want]
    assert s.query(Aliased, doc_id="1").values("va", "sa") == [
        {"va": OnlyValidation(ex="v"), "sa": OnlySerialization(y="s")}]


def test_an_aliased_nested_model_changed_in_place_saves(aliased_tb: Any) -> None:
    with Session(aliased) as s:
        s.save(_aliased())
    with Session(aliased) as s:
        got = s.get(Aliased, doc_id="1")
        assert got is not None and got.sa is not None and got.va is not None
        got.sa.y, got.va.x, got.camel.first_name = "s2", "v2", "a2"
        s.save(got)
    again = Session(aliased).get(Aliased, doc_id="1")
    assert again is not None and again.sa is not None and again.va is not None
    assert (again.sa.y, again.va.x, again.camel.first_name) == ("s2", "v2", "a2")


# --- a key move onto an expired item, a second writer in the window (issue 59, point 5) ---

import time  # noqa: E402

from dynaorm import DynaormError  # noqa: E402
from tests.integration.test_ttl import Lock, Login, cache  # noqa: E402


@pytest.fixture
def ttl_tb(backend: str | None) -> Any:
    with use_tables(cache, endpoint_url=backend, name_suffix=worker_suffix()) as b:
        yield b


def test_a_move_onto_an_expired_key_revived_in_the_window_is_refused(ttl_tb: Any) -> None:
    """A second writer revives the expired item (a live TTL) after the move is planned and
    before it commits: the move must not overwrite it, must say so with a typed error, and
    must leave the table as it was (the mover's item where it was, the reviver's intact)."""
    past, later, other = int(time.time()) - 60, int(time.time()) + 600, int(time.time()) + 900
    s = Session(cache)
    s.save(Lock(name="old", until=past))
    s.save(Lock(name="mine", until=later))
    s.commit()
    lock = s.get(Lock, name="mine")
    assert lock is not None
    lock.name = "old"
    s.save(lock)
    with Session(cache) as second:  # the window: "old" is live again
        second.save(Lock(name="old", until=other))
    with pytest.raises(DynaormError):
        s.commit()
    check = Session(cache)
    assert check.get(Lock, name="old", consistent=True) == Lock(name="old", until=other)
    assert check.get(Lock, name="mine", consistent=True) == Lock(name="mine", until=later)


def test_a_login_move_onto_an_expired_guard_revived_in_the_window_is_refused(
        ttl_tb: Any) -> None:
    """The same with a unique guard moving along: the revived login keeps its token."""
    from datetime import UTC, datetime, timedelta

    s = Session(cache)
    s.save(Login(user="u1", token="gone", expires=datetime.now(UTC) - timedelta(minutes=1)))
    s.save(Login(user="u2", token="t2", expires=datetime.now(UTC) + timedelta(hours=1)))
    s.commit()
    login = s.get(Login, user="u2", token="t2")
    assert login is not None
    login.user, login.token = "u1", "gone"
    s.save(login)
    revived = Login(user="u1", token="gone", expires=datetime.now(UTC) + timedelta(hours=2))
    with Session(cache) as second:  # the expired login renewed in the window
        second.save(revived)
    with pytest.raises(DynaormError):
        s.commit()
    check = Session(cache)
    found = check.find(Login, token="gone", consistent=True)
    assert found is not None and revived.expires is not None and found.expires is not None
    assert (found.user, int(found.expires.timestamp())) == ("u1", int(revived.expires.timestamp()))
    assert check.find(Login, token="t2", consistent=True) is not None
    assert len(ttl_tb.scan()) == 4  # two logins, two guards


# --- find in a migration window: a versioned entity with a unique (encrypted) field ----------

from tests.integration.test_migrations import (  # noqa: E402
    OldVault,
    Vault,
    db,  # noqa: F401  (the fixtures: both designs, with keyrings)
    keyed,  # noqa: F401
    old,
)


def test_find_of_a_versioned_entity_in_the_window(keyed: Any) -> None:  # noqa: F811
    """A versioned entity whose type name changed (``safe`` -> ``Vault``), found by its
    unique encrypted field in the window: what get gives, in the previous layout."""
    import dynaorm

    with Session(old) as s:
        s.save(OldVault(id="v1", pin="1234", code="s3"))
    s = keyed.session()
    found = s.find(Vault, pin="1234")
    assert found is not None and found == s.get(Vault, id="v1")
    assert found.secret == "s3" and dynaorm.inspect(found).previous_layout
    found.secret = "s4"
    s.save(found)
    s.commit()
    again = Session(keyed.table).find(Vault, pin="1234", consistent=True)
    assert again is not None and again.secret == "s4"
