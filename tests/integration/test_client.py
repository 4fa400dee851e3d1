"""The client (contract 19): a ``Client`` holds where and how requests go for any number
of tables; ``Table(client=)`` binds a table to one; a table given none uses the shared
client of its connection keywords (none: the process's default one, built from the
environment as it is on first use); a botocore ``Config``'s options are honoured on every
wire; ``close`` / ``aclose`` and the context managers close the connections."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

import pytest
from botocore.config import Config

from dynaorm import AsyncSession, Client, DynaormError, Entity, Operation, Session, Table
from dynaorm.testing import TestBackend
from tests.support.models import Note, app

pytestmark = pytest.mark.sync_only  # each test makes its own sessions of both kinds


def note_on(bound: Table) -> type[Any]:
    """An entity of ``bound`` (a table of a client of the test's own, named as the suite's
    table) shaped as ``Note``."""

    class ClientNote(Entity):
        class Meta:
            table = bound
            pk = "NOTE#{note_id}"
            sk = "NOTE"

        note_id: str
        body: str = ""

    return ClientNote


def test_tables_that_connect_alike_share_one_client() -> None:
    a = Table("dynaorm-c1", endpoint_url="http://127.0.0.1:9")
    b = Table("dynaorm-c2", endpoint_url="http://127.0.0.1:9")
    c = Table("dynaorm-c3", endpoint_url="http://127.0.0.1:9", max_attempts=2)
    assert a.db is b.db and a.db is not c.db
    assert (c.db.endpoint_url, c.db.max_attempts) == ("http://127.0.0.1:9", 2)
    assert Table("dynaorm-c4").db is Table("dynaorm-c5").db  # the default client


def test_a_changed_environment_gives_later_tables_a_new_client(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    first = Table("dynaorm-env1")
    assert first.client.meta.region_name == "eu-west-1"
    monkeypatch.setenv("AWS_REGION", "ap-south-1")
    later = Table("dynaorm-env2")
    assert later.db is not first.db
    assert later.client.meta.region_name == "ap-south-1"
    assert first.client.meta.region_name == "eu-west-1"  # bound tables keep theirs


def test_a_table_given_a_client_uses_it() -> None:
    db = Client("http://127.0.0.1:9", region="eu-west-1", max_attempts=2, max_wait=0)
    table = Table("dynaorm-given", client=db)
    assert table.db is db
    assert (table.endpoint_url, table.region, table.max_attempts, table.max_wait,
            table.wire) == ("http://127.0.0.1:9", "eu-west-1", 2, 0.0, "dynaorm")
    assert table.client is db.botocore
    with pytest.raises(DynaormError, match="change \\['max_attempts'\\] on that client"):
        table.max_attempts = 4


@pytest.mark.parametrize("kwargs", [{"endpoint_url": "http://127.0.0.1:9"},
                                    {"wire": "botocore"}, {"max_wait": 1.0}])
def test_client_and_connection_keywords_exclude_each_other(kwargs: dict[str, Any]) -> None:
    with pytest.raises(DynaormError, match="exclude each other"):
        Table("dynaorm-both", client=Client(), **kwargs)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"wire": "http2"}, "wire must be one of"),
    ({"max_attempts": 0}, "max_attempts must be an int >= 1"),
    ({"max_attempts": True}, "max_attempts must be an int >= 1"),
    ({"max_wait": -1}, "max_wait must be a number of seconds >= 0"),
    ({"return_consumed_capacity": "ALL"}, "return_consumed_capacity must be one of"),
])
def test_bad_settings_are_refused_by_the_client_and_by_the_table(
        kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(DynaormError, match=message):
        Client(**kwargs)
    with pytest.raises(DynaormError, match=message):
        Table("dynaorm-bad", **kwargs)


def test_a_session_takes_a_table_or_a_client_only() -> None:
    with pytest.raises(DynaormError, match="takes a dynaorm Table or Client"):
        Session("app")  # type: ignore[arg-type]
    with pytest.raises(DynaormError, match="takes a dynaorm Table or Client"):
        AsyncSession(object())  # type: ignore[arg-type]


def test_the_configs_options_are_honoured_on_both_wires(ddb_local: str) -> None:
    """Timeouts and pool size given in a ``Config`` reach dynaorm's own wires (sync and
    async); what the Config leaves unset takes dynaorm's defaults (not botocore's 60 s
    and 10 connections)."""
    given = Client(ddb_local, config=Config(connect_timeout=3, read_timeout=4,
                                             max_pool_connections=7))
    plain = Client(ddb_local)
    partial = Client(ddb_local, config=Config(read_timeout=9))

    def settings(c: Client) -> tuple[Any, ...]:
        wire = c.sync_wire
        return wire.endpoint.connect_timeout, wire.endpoint.read_timeout, wire.endpoint.pool_size

    assert settings(given) == (3, 4, 7)
    assert settings(plain) == (15, 30, 64)
    assert settings(partial) == (15, 9, 64)
    assert given.botocore.meta.config.retries["total_max_attempts"] == 1  # dynaorm retries

    async def async_settings() -> tuple[Any, ...]:
        table = Table("dynaorm-cfg-async", client=given)
        with contextlib.suppress(DynaormError):  # no such table: a real round trip
            await AsyncSession(table).get(note_on(table), note_id="x")
        wire = given.async_wire
        found = (wire.endpoint.connect_timeout, wire.endpoint.read_timeout, wire.endpoint.pool_size)
        await given.aclose()
        return found

    assert asyncio.run(async_settings()) == (3, 4, 7)


def test_a_plain_config_serves_without_a_botocore_session(
        ddb_local: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """In the plain environment (credentials in the environment, no shared files), a
    ``Config`` of options the own wire reads itself keeps the path without a botocore
    session (issue 41's cold start): a real round trip on DynamoDB Local uses its timeouts,
    pool and ``user_agent_extra``, and no session is ever made; a ``Config`` with another
    option (``tcp_keepalive``) takes the session."""
    import os

    for name in [n for n in os.environ if n.startswith(("AWS_", "BOTO"))
                 or n.lower().endswith("_proxy") or n == "REQUESTS_CA_BUNDLE"]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "plainconfig")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    sent: list[str] = []
    db = Client(ddb_local, "eu-west-1", config=Config(
        connect_timeout=2, read_timeout=6, max_pool_connections=3,
        retries={"max_attempts": 9}, user_agent_extra="orders/1.0"))
    db.on_request(lambda event: sent.append(event.operation))
    table = Table("dynaorm-plain-config", client=db)
    entity = note_on(table)
    table.create()
    with Session(table) as s:
        s.save(entity(note_id="n1", body="hello"))
    assert Session(table).get(entity, note_id="n1").body == "hello"
    assert db._session is None and "GetItem" in sent  # (requests sent, no session made)
    end = db.sync_wire.endpoint
    assert (end.connect_timeout, end.read_timeout, end.pool_size) == (2, 6, 3)
    assert end.user_agent.endswith(" orders/1.0") and db.max_attempts == 5
    other = Client(ddb_local, "eu-west-1", config=Config(read_timeout=6, tcp_keepalive=True))
    other_table = Table("dynaorm-plain-config", client=other)
    assert Session(other_table).get(note_on(other_table), note_id="n1").body == "hello"
    assert other._session is not None and other.sync_wire.endpoint.read_timeout == 6


def test_close_and_reopen(db: TestBackend) -> None:
    if db.endpoint_url is None:
        pytest.skip("the in-process mock has no connections")
    with Client(db.endpoint_url) as client:
        table = Table(app.name, client=client)
        assert table.exists()
        wire = client.sync_wire
        assert wire is not None and wire._direct is not None and wire._direct._idle
    assert not wire._direct._idle  # closed when the block ended
    assert table.exists()  # a later request opens new connections


def test_async_with_closes_this_loops_connections(db: TestBackend) -> None:
    if db.endpoint_url is None:
        pytest.skip("the in-process mock has no connections")

    async def main() -> bool:
        async with Client(db.endpoint_url) as client:
            table = Table(app.name, client=client)
            s = AsyncSession(table)
            s.save(note_on(table)(note_id="n1"))
            await s.commit()
            wire = client.async_wire
            assert wire is not None and not wire.closed
        return bool(wire.closed and client.async_wire is None)

    assert asyncio.run(main())
    assert [r["pk"] for r in db.scan()] == ["NOTE#n1"]


def test_one_client_serves_threads_and_both_kinds_of_session(db: TestBackend) -> None:
    from concurrent.futures import ThreadPoolExecutor

    def write(i: int) -> None:
        with Session(app) as s:
            s.save(Note(note_id=f"t{i}"))

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(write, range(8)))
    assert len(db.scan()) == 8
    if db.endpoint_url is None:
        pytest.skip("threads checked; aiobotocore cannot reach moto's in-process mock")

    async def read() -> list[Any]:
        s = AsyncSession(app.db)
        found = await asyncio.gather(*(s.get(Note, note_id=f"t{i}") for i in range(8)))
        await app.db.aclose()
        return found

    assert all(n is not None for n in asyncio.run(read()))


def test_connect_keeps_the_given_clients_settings_and_hooks(db: TestBackend) -> None:
    """``connect`` (what the pytest plugin's fixtures call) on a table given a client binds
    it to that client pointed at the endpoint: its Config, wire, retries and hooks go
    along, and the tables of one client, connected alike, still share one."""
    from dynaorm import Hook

    class Seen(Hook):
        def __init__(self) -> None:
            self.ops: list[str] = []

        def on_end(self, phase: Any, token: Any) -> object:
            if not isinstance(phase, Operation):
                self.ops.append(phase.operation)
            return None

    seen = Seen()
    given = Client(config=Config(read_timeout=3), max_attempts=2, max_wait=0,
                   return_consumed_capacity="TOTAL")
    given.add_hook(seen)
    one = Table(app.name, client=given)
    two = Table("dynaorm-other", client=given)
    bound = one.binding()
    one.connect(db.endpoint_url)
    two.connect(db.endpoint_url)
    try:
        assert one.db is two.db and one.db is not given
        assert (one.db.endpoint_url, one.db.config, one.db.max_attempts, one.db.max_wait,
                one.db.return_consumed_capacity) == (db.endpoint_url, given.config, 2, 0.0,
                                                     "TOTAL")
        assert one.exists()
        assert seen.ops == ["DescribeTable"]
    finally:
        one.restore(bound)
