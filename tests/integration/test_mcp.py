"""The MCP server of a table (contract 22, "Agents"), driven by the official SDK's own
client: in memory (``mcp.Client(server)``) on moto (the embedded default) and DynamoDB
Local, and over stdio (``dynaorm mcp`` as a subprocess) against the embedded default as a
server and DynamoDB Local. A hostile client: wrong types, unknown tools, huge arguments,
another tenant's or another pattern's cursor, a call naming another tenant, concurrent
calls. The server picks its own sessions, so the async variant is not run."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

import dynaorm.mcp
from dynaorm import AsyncSession, Attempt, Entity, Hook, Session, Table
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.mcp_client import ROOT, call, http_client, http_server, text
from tests.support.tenant_models import Customer, Memo, shelf, tenants

pytestmark = [pytest.mark.sync_only,  # (the server makes its own sessions)
              pytest.mark.engines("moto", "local", "dynoxide")]

@pytest.fixture
def tdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The tenants table, fresh, with customers of two tenants (encrypted cards)."""
    with use_tables(tenants, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        with Session(tenants) as s:
            for t in ("t1", "t2"):
                for n in range(1, 4):
                    s.save(Customer(tenant_id=t, customer_id=f"c{n}", name=f"{t}-n{n}",
                                    email=f"c{n}@{t}.example", card=f"4111-SECRET-{t}{n}"))
        yield tb


def ok(result: Any) -> Any:
    assert not result.is_error, text(result)
    assert json.loads(text(result)) == result.structured_content
    return result.structured_content


def failed(result: Any) -> str:
    assert result.is_error
    said = text(result)
    assert "Traceback" not in said and "SECRET" not in said
    return said


def test_tools_come_from_the_model(tdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(tenants, writes=["Memo"])

    async def go() -> tuple[Any, Any]:
        async with Client(srv) as client:
            return await client.list_tools(), await client.read_resource("dynaorm://model")
    listed, model = asyncio.run(go())
    tools = {t.name: t for t in listed.tools}
    assert {"get_customer", "find_customer_by_email", "query_customer_on_gsi1",
            "query_customer_on_gsi2", "get_memo", "query_memo", "history_memo",
            "save_memo", "update_memo", "delete_memo", "get_setting", "explain"} <= set(tools)
    assert "save_customer" not in tools and "delete_setting" not in tools  # no writes
    get = tools["get_customer"].input_schema
    assert get["required"] == ["tenant_id", "customer_id"]
    assert get["properties"]["customer_id"]["type"] == "string"
    assert get["additionalProperties"] is False
    assert tools["update_memo"].input_schema["properties"]["version"]["type"] == "integer"
    assert tools["get_memo"].annotations.read_only_hint is True
    assert tools["delete_memo"].annotations.destructive_hint is True
    assert json.loads(model.contents[0].text)["table"]["name"] == tenants.name


def test_reads_return_typed_json_without_encrypted_fields(tdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(tenants)
    got, found, missing, page1 = call(
        srv, ("get_customer", {"tenant_id": "t1", "customer_id": "c1"}),
        ("find_customer_by_email", {"tenant_id": "t1", "email": "C2@t1.example"}),
        ("get_customer", {"tenant_id": "t1", "customer_id": "nobody"}),
        ("query_customer_on_gsi1", {"tenant_id": "t1", "limit": 2}))
    assert ok(got)["item"] == {"tenant_id": "t1", "customer_id": "c1", "name": "t1-n1",
                               "email": "c1@t1.example", "region": "eu", "notes": ""}
    assert ok(found)["item"]["customer_id"] == "c2"
    assert ok(missing) == {"item": None}
    first = ok(page1)
    assert [i["name"] for i in first["items"]] == ["t1-n1", "t1-n2"]
    [rest] = call(srv, ("query_customer_on_gsi1", {"tenant_id": "t1", "limit": 2,
                                                    "cursor": first["cursor"]}))
    assert [i["name"] for i in ok(rest)["items"]] == ["t1-n3"] and ok(rest)["cursor"] is None
    for result in (got, found, page1, rest):
        assert "SECRET" not in text(result) and "card" not in text(result)
    [inline] = call(dynaorm.mcp.server(tenants, threads=False),
                    ("get_customer", {"tenant_id": "t1", "customer_id": "c1"}))
    assert ok(inline) == ok(got)  # (on the event loop: the same answer)


def test_writes_go_through_a_session(tdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(tenants, writes=["Memo", "Customer"])
    saved, again, upd, stale, deleted, clash = call(
        srv, ("save_memo", {"item": {"tenant_id": "t1", "memo_id": "m1", "text": "a"}}),
        ("save_memo", {"item": {"tenant_id": "t1", "memo_id": "m1", "text": "b"}}),
        ("update_memo", {"tenant_id": "t1", "memo_id": "m1", "set": {"text": "c"},
                         "version": 1}),
        ("update_memo", {"tenant_id": "t1", "memo_id": "m1", "set": {"text": "d"},
                         "version": 1}),
        ("delete_memo", {"tenant_id": "t1", "memo_id": "m1", "version": 2}),
        ("save_customer", {"item": {"tenant_id": "t1", "customer_id": "c9", "name": "x",
                                    "email": "C1@t1.example", "card": "4111-SECRET-x"}}))
    assert ok(saved)["item"]["version"] == 1
    assert "ItemExistsError" in failed(again)
    assert ok(upd)["item"] == {"tenant_id": "t1", "memo_id": "m1", "text": "c",
                               "kind": "note", "version": 2}
    assert failed(stale).startswith("ConcurrentModificationError: ")  # If-Match
    ok(deleted)
    assert Session(tenants).get(Memo, tenant_id="t1", memo_id="m1") is None
    assert [m.text for m in Session(tenants).history(Memo, tenant_id="t1",
                                                     memo_id="m1").all()] == ["a", "c"]
    assert "UniqueConstraintError" in failed(clash)  # the guard holds
    assert Session(tenants).get(Customer, tenant_id="t1", customer_id="c9") is None


class _AfterRead(Hook):
    """Runs ``write`` (a second writer) after the next consistent ``GetItem`` a commit
    reads the item with, in the window before its transaction, ``left`` times."""

    def __init__(self, write: Any) -> None:
        self.write, self.left, self.busy = write, 1, False
        tenants.db.add_hook(self)

    def on_end(self, phase: Any, token: Any) -> object:
        if (self.busy or not self.left or not isinstance(phase, Attempt)
                or phase.operation != "GetItem" or not phase.request.get("ConsistentRead")):
            return None
        self.busy, self.left = True, self.left - 1
        try:
            self.write()
        finally:
            self.busy = False
        return None


def _their_write() -> None:
    """A second writer: the stored memo m1 of t1 saved again (its next version)."""
    with Session(tenants) as other:
        theirs = other.get(Memo, tenant_id="t1", memo_id="m1")
        assert theirs is not None
        theirs.text = f"theirs-{theirs.version}"
        other.save(theirs)


def test_a_failed_if_match_is_a_concurrent_modification(tdb: TestBackend) -> None:
    """An update or delete whose version is not the stored one, or whose item a second
    writer changes between the tool's read and its commit, is a tool error naming
    ``ConcurrentModificationError`` (the typed error a session raises), and the table
    holds what the second writer wrote."""
    with Session(tenants) as s:
        s.save(Memo(tenant_id="t1", memo_id="m1", text="a"))
    srv = dynaorm.mcp.server(tenants, writes=["Memo"])
    ahead, behind, gone = call(
        srv, ("update_memo", {"tenant_id": "t1", "memo_id": "m1", "set": {"text": "b"},
                              "version": 2}),
        ("delete_memo", {"tenant_id": "t1", "memo_id": "m1", "version": 7}),
        ("update_memo", {"tenant_id": "t1", "memo_id": "m1", "set": {"text": "c"},
                         "version": 1, "idempotency_key": "k-race"}))
    for said in (failed(ahead), failed(behind)):
        assert said.startswith("ConcurrentModificationError: "), said
        assert "version" in said
    assert ok(gone)["item"]["version"] == 2  # (the stored version: it applies)
    writer = _AfterRead(_their_write)
    try:
        [lost_update] = call(srv, ("update_memo", {
            "tenant_id": "t1", "memo_id": "m1", "set": {"text": "d"}, "version": 2,
            "idempotency_key": "k-lost"}))
        assert writer.left == 0
        writer.left = 1
        [lost_delete] = call(srv, ("delete_memo", {"tenant_id": "t1", "memo_id": "m1",
                                                   "version": 3}))
        assert writer.left == 0
    finally:
        tenants.db.remove_hook(writer)
    assert failed(lost_update).startswith("ConcurrentModificationError: ")
    assert failed(lost_delete).startswith("ConcurrentModificationError: ")
    stored = Session(tenants).get(Memo, tenant_id="t1", memo_id="m1")
    assert stored is not None and (stored.version, stored.text) == (4, "theirs-3")
    assert [m.text for m in Session(tenants).history(Memo, tenant_id="t1",
                                                     memo_id="m1").all()] == [
        "a", "c", "theirs-2", "theirs-3"]


def test_idempotency_keys_pass_through(tdb: TestBackend) -> None:
    """A write tool's idempotency key reaches the commit: a retried call applies once
    (replayed), and the same key with other writes is a tool error that writes nothing."""
    srv = dynaorm.mcp.server(tenants, writes=["Memo"])
    args = {"item": {"tenant_id": "t1", "memo_id": "m5", "text": "x"},
            "idempotency_key": "receipt-1"}
    other = {"item": {"tenant_id": "t1", "memo_id": "m6", "text": "y"},
             "idempotency_key": "receipt-1"}
    first, second, third = call(srv, ("save_memo", args), ("save_memo", args),
                                ("save_memo", other))
    assert ok(first)["replayed"] is False and ok(second)["replayed"] is True
    assert "IdempotencyMismatchError" in failed(third)
    assert Session(tenants).get(Memo, tenant_id="t1", memo_id="m6") is None


def test_a_hostile_client_gets_tool_errors(tdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(tenants, writes=["Memo"])
    big = "x" * (dynaorm.mcp.tools.MAX_ARGUMENT_BYTES + 1)
    results = call(
        srv, ("get_customer", {"tenant_id": "t1", "customer_id": 5}),
        ("get_customer", {"tenant_id": "t1"}),
        ("get_customer", {"tenant_id": "t1", "customer_id": "c1", "extra": 1}),
        ("drop_table", {}),
        ("save_memo", {"item": {"tenant_id": "t1", "memo_id": "m1", "text": big}}),
        ("query_customer_on_gsi1", {"tenant_id": "t1", "limit": 10_000}),
        ("query_customer_on_gsi1", {"tenant_id": "t1", "cursor": "not-a-cursor"}),
        ("get_customer", {"tenant_id": "a#b", "customer_id": "c1"}),
        ("update_memo", {"tenant_id": "t1", "memo_id": "none", "set": {"text": "x"}}),
        ("save_memo", {"item": {"tenant_id": "t1", "memo_id": "m2", "version": "x"}}),
        ("explain", {"tool": "get_nothing"}))
    said = [failed(r) for r in results]
    assert "argument 'customer_id' must be string, not an integer" in said[0]
    assert "missing required argument 'customer_id'" in said[1]
    assert "unknown argument 'extra'" in said[2]
    assert "no tool 'drop_table'" in said[3] and "bytes" in said[4]
    assert "argument 'limit' must be at most 100" in said[5]
    assert "InvalidCursorError: cursor: " in said[6]
    assert "KeyTemplateError" in said[7] and "does not exist" in said[8]
    assert "unknown argument 'item/version'" in said[9]
    assert "argument 'tool' must be one of " in said[10]
    assert Session(tenants).get(Memo, tenant_id="t1", memo_id="m1") is None


def test_cursors_of_another_pattern_or_tenant_are_refused(tdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(tenants)
    [t2] = call(srv, ("query_customer_on_gsi1", {"tenant_id": "t2", "limit": 1}))
    cursor = ok(t2)["cursor"]
    other_tenant, other_pattern = call(
        srv, ("query_customer_on_gsi1", {"tenant_id": "t1", "limit": 1, "cursor": cursor}),
        ("query_customer_on_gsi2", {"region": "eu", "limit": 1, "cursor": cursor}))
    assert "InvalidCursorError" in failed(other_tenant)
    assert "InvalidCursorError" in failed(other_pattern)


def test_a_scoped_server_holds_one_tenant(tdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(tenants, writes=["Memo"], scope={"tenant_id": "t1"})

    async def names() -> set[str]:
        async with Client(srv) as client:
            return {t.name for t in (await client.list_tools()).tools}
    listed = asyncio.run(names())
    # an index across tenants and entities the scope cannot cover have no tools
    assert "query_customer_on_gsi2" not in listed and "get_setting" not in listed
    assert "get_handle" not in listed and "get_customer" in listed
    mine, named, other, cross, write, found = call(
        srv, ("get_customer", {"customer_id": "c1"}),
        ("get_customer", {"tenant_id": "t1", "customer_id": "c1"}),
        ("get_customer", {"tenant_id": "t2", "customer_id": "c1"}),
        ("find_customer_by_email", {"tenant_id": "t2", "email": "c1@t2.example"}),
        ("save_memo", {"item": {"tenant_id": "t2", "memo_id": "m1"}}),
        ("query_customer_on_gsi1", {}))
    assert ok(mine)["item"]["tenant_id"] == "t1" and ok(named) == ok(mine)
    assert "ScopeError" in failed(other) and "ScopeError" in failed(cross)
    assert "ScopeError" in failed(write)
    assert {i["tenant_id"] for i in ok(found)["items"]} == {"t1"}
    assert Session(tenants).get(Memo, tenant_id="t2", memo_id="m1") is None
    # per request (HTTP): no tenant header on the in-memory transport: refused
    per_request = dynaorm.mcp.server(tenants, scope="tenant_id",
                                     tenant_header="x-tenant-id")
    [refused] = call(per_request, ("get_customer", {"customer_id": "c1"}))
    assert "x-tenant-id" in failed(refused)
    with pytest.raises(dynaorm.DynaormError):
        dynaorm.mcp.server(tenants, scope="tenant_id")


def test_concurrent_calls(tdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(tenants, writes=["Memo"])

    async def go() -> list[Any]:
        async with Client(srv) as client:
            saves = [client.call_tool("save_memo", {"item": {"tenant_id": "t1",
                                                             "memo_id": f"m{i}"}})
                     for i in range(8)]
            reads = [client.call_tool("get_customer", {"tenant_id": "t1",
                                                       "customer_id": "c1"})
                     for _ in range(8)]
            races = [client.call_tool("update_memo", {"tenant_id": "t1", "memo_id": "m0",
                                                      "set": {"text": f"r{i}"},
                                                      "version": 1}) for i in range(4)]
            first = await asyncio.gather(*saves, *reads)
            return [*first, *await asyncio.gather(*races)]
    results = asyncio.run(go())
    assert all(not r.is_error for r in results[:16])
    won = [r for r in results[16:] if not r.is_error]
    assert len(won) == 1  # If-Match: one of the racing updates lands
    for lost in results[16:]:
        if lost.is_error:
            assert failed(lost).startswith("ConcurrentModificationError: ")
    stored = Session(tenants).get(Memo, tenant_id="t1", memo_id="m0")
    assert stored is not None and stored.version == 2
    assert stored.text == won[0].structured_content["item"]["text"]


class _Gate(Hook):
    """Holds the ``GetItem`` attempt of customer ``c1`` until ``opened`` is set, by
    returning an awaitable from its end (awaited by an async session on the event loop;
    a blocking session refuses one)."""

    def __init__(self) -> None:
        self.opened = asyncio.Event()

    def on_end(self, phase: Any, token: Any) -> object:
        if (isinstance(phase, Attempt) and phase.operation == "GetItem"
                and "c1" in json.dumps(phase.request)):
            return self.opened.wait()
        return None


def test_a_get_tool_call_waits_on_the_event_loop_not_blocking_it(tdb: TestBackend) -> None:
    """The default server's get awaits DynamoDB on the event loop (no worker thread, no
    blocked loop): while one get is held, another call is answered, then the held one
    answers with its item, as a session's get reads it."""
    srv, gate = dynaorm.mcp.server(tenants), _Gate()
    tenants.db.add_hook(gate)
    done: list[str] = []

    async def go() -> list[Any]:
        async with Client(srv) as client:
            async def one(customer: str) -> Any:
                result = await client.call_tool(
                    "get_customer", {"tenant_id": "t1", "customer_id": customer})
                done.append(customer)
                return result
            held = asyncio.ensure_future(one("c1"))
            other = await asyncio.wait_for(one("c2"), 30)  # (answered while c1 is held)
            gate.opened.set()
            return [await asyncio.wait_for(held, 30), other]
    try:
        held, other = asyncio.run(go())
    finally:
        tenants.db.remove_hook(gate)
    assert done == ["c2", "c1"]
    stored = Session(tenants).get(Customer, tenant_id="t1", customer_id="c1")
    assert stored is not None
    assert ok(held)["item"]["name"] == stored.name and ok(other)["item"]["customer_id"] == "c2"


def test_explain_and_search_tools(tdb: TestBackend, request: pytest.FixtureRequest) -> None:
    srv = dynaorm.mcp.server(tenants, writes=["Memo"])
    got, save = call(srv, ("explain", {"tool": "get_customer", "arguments": {
        "tenant_id": "t1", "customer_id": "c1"}}),
        ("explain", {"tool": "save_memo", "arguments": {"item": {"tenant_id": "t1",
                                                                  "memo_id": "m1"}}}))
    assert "GetItem" in ok(got)["explanation"]
    assert "TransactWriteItems" in ok(save)["explanation"]
    assert Session(tenants).get(Memo, tenant_id="t1", memo_id="m1") is None  # nothing sent
    if engine_of(request) == "local":
        return  # (no vector index on DynamoDB Local)
    from tests.support.tenant_models import Clip

    with use_tables(shelf, endpoint_url=tdb.endpoint_url, name_suffix=worker_suffix()):
        with Session(shelf) as s:
            s.save(Clip(tenant_id="t1", clip_id="k1", embedding=[1, 0, 0, 0]))
            s.save(Clip(tenant_id="t1", clip_id="k2", embedding=[0, 1, 0, 0]))
        vsrv = dynaorm.mcp.server(shelf, embed=lambda t: [1.0, 0, 0, 0] if "one" in t
                                  else [0, 1.0, 0, 0], scope={"tenant_id": "t1"})
        by_text, by_vector, wrong = call(
            vsrv, ("search_clip_on_by_tenant", {"text": "the one", "top": 2}),
            ("search_clip_on_by_tenant", {"vector": [0, 1, 0, 0], "top": 1}),
            ("search_clip_on_by_tenant", {"vector": [1, 0], "top": 1}))
        assert [h["item"]["clip_id"] for h in ok(by_text)["hits"]] == ["k1", "k2"]
        assert [h["item"]["clip_id"] for h in ok(by_vector)["hits"]] == ["k2"]
        assert "argument 'vector' must be at least 4 items" in failed(wrong)


def test_the_command_serves_over_stdio(db: TestBackend, request: pytest.FixtureRequest
                                      ) -> None:
    """``dynaorm mcp`` in a subprocess, against the embedded default as a server or
    DynamoDB Local (the table under its own name: the subprocess imports the module)."""
    endpoint = db.endpoint_url or request.getfixturevalue("dynaorm_moto_server")
    with use_tables(tenants, endpoint_url=endpoint):
        with Session(tenants) as s:
            s.save(Customer(tenant_id="t1", customer_id="c1", name="n", email="e@x",
                            card="4111-SECRET"))
        params = StdioServerParameters(
            command=sys.executable,
            args=["-m", "dynaorm", "mcp", "tests.support.tenant_models:tenants",
                  "--endpoint-url", endpoint, "--writes", "Memo", "--scope", "tenant_id",
                  "--tenant", "t1"],
            env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=str(ROOT))

        async def go() -> list[Any]:
            async with Client(params) as client:
                names = {t.name for t in (await client.list_tools()).tools}
                assert "save_memo" in names and "get_setting" not in names
                return [await client.call_tool("get_customer", {"customer_id": "c1"}),
                        await client.call_tool("get_customer", {"tenant_id": "t2",
                                                                "customer_id": "c1"}),
                        await client.call_tool("save_memo", {"item": {"memo_id": "m1"}})]
        mine, other, saved = asyncio.run(go())
        assert ok(mine)["item"] == {"tenant_id": "t1", "customer_id": "c1", "name": "n",
                                    "email": "e@x", "region": "eu", "notes": ""}
        assert "ScopeError" in failed(other)
        assert ok(saved)["item"]["version"] == 1
        stored = Session(tenants).get(Memo, tenant_id="t1", memo_id="m1")
        assert stored is not None and stored.version == 1


def test_over_http_the_tenant_comes_from_the_request_header(
        db: TestBackend, request: pytest.FixtureRequest) -> None:
    """``dynaorm mcp --http`` with ``--scope`` and ``--tenant-header``: each request's
    header names its tenant (as an authenticating proxy would set it); none: refused."""
    endpoint = db.endpoint_url or request.getfixturevalue("dynaorm_moto_server")
    with use_tables(tenants, endpoint_url=endpoint):
        with Session(tenants) as s:
            for t in ("t1", "t2"):
                s.save(Customer(tenant_id=t, customer_id="c1", name=f"n-{t}", email="e@x"))
        with http_server(endpoint, "--scope", "tenant_id", "--tenant-header",
                         "X-Tenant-Id") as url:
            async def as_tenant(headers: dict[str, str]) -> Any:
                async with http_client(url, headers) as client:
                    return await client.call_tool("get_customer", {"customer_id": "c1"})
            t1 = asyncio.run(as_tenant({"X-Tenant-Id": "t1"}))
            t2 = asyncio.run(as_tenant({"X-Tenant-Id": "t2"}))
            nobody = asyncio.run(as_tenant({}))
    assert ok(t1)["item"]["name"] == "n-t1" and ok(t2)["item"]["name"] == "n-t2"
    assert "X-Tenant-Id" in failed(nobody)


# -- a server tested on moto's own mock_aws, as a user's test does (issue 81) ----------------
own_mock = Table("dynaorm-mcp-own-mock")


class Pin(Entity):
    class Meta:
        table = own_mock
        pk = "PIN#{pin_id}"
        sk = "PIN"
        unique = ("code",)

    pin_id: str
    code: str


def test_a_server_on_moto_s_own_mock_answers_every_tool(monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """Inside the caller's ``mock_aws`` (no dynaorm test backend), a get or find runs on
    an ``AsyncSession`` on the loop, whose requests aiobotocore cannot get answered by
    moto: every such call answered ``TypeError: the call failed``. They are sent by
    botocore's client on a worker thread, so the server answers (and an
    ``AsyncSession`` reads) as on any engine."""
    from moto import mock_aws

    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    with mock_aws():
        own_mock.create()
        with Session(own_mock) as s:
            s.save(Pin(pin_id="p1", code="c1"))

        async def go() -> list[Any]:
            async with Client(dynaorm.mcp.server(own_mock)) as client:
                return [await client.call_tool(name, args) for name, args in (
                    ("get_pin", {"pin_id": "p1"}), ("find_pin_by_code", {"code": "c1"}),
                    ("get_pin", {"pin_id": "none"}))]

        got, found, missing = asyncio.run(go())
        assert ok(got)["item"] == ok(found)["item"] == {"pin_id": "p1", "code": "c1"}
        assert ok(missing)["item"] is None

        async def read() -> Any:
            return await AsyncSession(own_mock).get(Pin, pin_id="p1")

        assert asyncio.run(read()) == Pin(pin_id="p1", code="c1")
