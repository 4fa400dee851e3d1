"""The MCP server of a table (contract 22, "Agents"), driven by the official SDK's own
client: in memory (``mcp.Client(server)``) on moto (the embedded default) and DynamoDB
Local, and over stdio (``dynaorm mcp`` as a subprocess) against the embedded default as a
server and DynamoDB Local. A hostile client: wrong types, unknown tools, huge arguments,
another tenant's or another pattern's cursor, a call naming another tenant, concurrent
calls. The server picks its own sessions, so the async variant is not run."""

from __future__ import annotations

import asyncio
import base64
import enum
import json
import os
import sys
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st
from mcp import Client, StdioServerParameters
from pydantic import ConfigDict

import dynaorm.mcp
from dynaorm import AsyncSession, Attempt, Entity, Hook, Session, Table
from dynaorm.mcp.server import prepare
from dynaorm.mcp.tools import check_arguments, message_of, run, tools_of
from dynaorm.testing import TestBackend, inject_faults, moto_backend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.concurrency import join_all
from tests.support.engines import on_engine
from tests.support.examples import examples
from tests.support.mcp_client import ROOT, call, http_client, http_server, text
from tests.support.mcp_client import call as mcp_call
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


# --- the server's async path: lost answers, cancellations, event loops
# (moved from system/test_red_team_08e_mcp.py:
# Red team 08e, the MCP server's async path (``server``: a get or find awaited by an
# :class:`~dynaorm.AsyncSession` on the event loop (``AsyncSession.run``),
# any other call in a worker thread) and ``run`` by it itself: what must never happen.
#
# - concurrent tool calls on one event loop (saves, updates, deletes and gets of the same
#   and of different items) with answers lost at the wire (``inject_faults``): a call is
#   told something untrue (a save "ok" whose item is not what is stored, a save refused
#   that is stored, two creates of one item both "ok"), or what a tool stored differs from
#   what a ``Session`` save stores of the same JSON;
# - a write cancelled mid-commit (by an AsyncSession, at any point of its attempts): the
#   table holds anything but what it held before or what the whole commit writes, or the caller is
#   told it succeeded or failed when it was cancelled; a retry with its idempotency key
#   writes it twice;
# - a call after the event loop that made the session closed, or on loops in threads at
#   once sharing the table's client: a hang, a wrong answer, an error other than a clear
#   refusal.
#
# moto only: the server's concurrency does not depend on the engine.)

crates = Table("red08e-mcp")
#: examples are slow (a server, a client, threads each): found ones are printed unshrunk
NO_SHRINK = (Phase.explicit, Phase.reuse, Phase.generate)
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")


class Crate(Entity):
    model_config = ConfigDict(ser_json_bytes="base64", val_json_bytes="base64")

    class Meta:
        table = crates
        pk = "CRATE#{crate_id}"
        sk = "CRATE"

    crate_id: str
    n: int = 0
    words: set[str] = set()
    blob: bytes = b""


@pytest.fixture
def cdb(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, crates)


def _raw(crate_id: str) -> dict[str, Any] | None:
    """The item stored under ``crate_id`` as DynamoDB holds it (but its revision)."""
    found = crates.db.send("GetItem", {"TableName": crates.name, "ConsistentRead": True,
                                       "Key": {"pk": {"S": f"CRATE#{crate_id}"},
                                               "sk": {"S": "CRATE"}}}).get("Item")
    return None if found is None else json.loads(json.dumps(
        {k: v for k, v in found.items() if k != "_rev"}, sort_keys=True, default=str))


def _as_session_saves(item: dict[str, Any]) -> dict[str, Any] | None:
    """What a ``Session`` save of the object the entity validates from ``item`` (JSON)
    stores, read back (saved under the same key, then the key is put back as it was)."""
    before = _raw(item["crate_id"])
    obj = Crate.model_validate_json(json.dumps(item))
    with Session(crates) as s:
        s.save(obj, overwrite=True)
    stored = _raw(item["crate_id"])
    if before is None:
        with Session(crates) as s:
            s.delete(Crate, crate_id=item["crate_id"])
    return stored


def _plain(item: dict[str, Any]) -> dict[str, Any]:
    """``item`` (JSON) with its set sorted and its bytes decoded: the MCP tools write bytes
    in standard base64 (``/``), the entity's own JSON in the URL-safe alphabet (``_``)."""
    blob = item["blob"].replace("-", "+").replace("_", "/")
    return {**item, "words": sorted(item["words"]), "blob": base64.b64decode(blob)}


def _told(result: Any) -> tuple[str, Any]:
    """("ok", structured content) or ("error", the message), never a traceback."""
    said = text(result)
    assert "Traceback" not in said, said
    return ("error", said) if result.is_error else ("ok", result.structured_content)


def _unknown(message: str) -> bool:
    """Whether an error says the outcome is not known (the write may have been applied)."""
    return message.startswith(("OutcomeUnknownError", "RequestError")) or "may have" in message


# == concurrent calls on one loop, answers lost at the wire ===================================
_ITEM = st.fixed_dictionaries({
    "n": st.integers(-(10**6), 10**6),
    "words": st.lists(st.sampled_from(["a", "b", "é", "\u200d"]), max_size=3, unique=True),
    "blob": st.sampled_from(["", "/w==", "AAEC"]),
})


@st.composite
def _plans(draw: Any) -> dict[str, Any]:
    racing = draw(st.lists(st.tuples(_ITEM, st.booleans()), min_size=1, max_size=4))
    alone = draw(st.lists(st.tuples(_ITEM, st.booleans()), min_size=0, max_size=3))
    updates = draw(st.lists(st.tuples(st.integers(1, 99), st.booleans()), max_size=3))
    delete = draw(st.booleans())
    lost = {op: draw(st.integers(0, 2)) for op in WRITES}
    return {"racing": racing, "alone": alone, "updates": updates, "delete": delete,
            "lost": lost, "gets": draw(st.integers(0, 4))}


@pytest.mark.engines('moto')
@settings(max_examples=examples(12), deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(plan=_plans())
def test_concurrent_tool_calls_with_lost_answers_are_told_the_truth(
        cdb: TestBackend, plan: dict[str, Any]) -> None:
    """On one event loop at once: creates racing for one item, creates of items of their
    own, updates racing on a seeded item, a delete of another seeded item, gets of the
    raced item; some write answers lost (applied, then failed). Never: two creates of one
    item "ok"; an "ok" create whose item is not stored exactly as a ``Session`` save
    stores its JSON; a create refused as existing while none was stored by another; an
    "ok" update whose returned item is not what it set; a get answering an item no
    create sent; a deleted item still stored after its delete said "ok"."""
    tag = uuid.uuid4().hex[:8]
    raced, seeded, gone = f"r-{tag}", f"u-{tag}", f"d-{tag}"
    with Session(crates) as s:
        s.save(Crate(crate_id=seeded))
        s.save(Crate(crate_id=gone))
    calls: list[tuple[str, dict[str, Any]]] = []
    for item, keyed in plan["racing"]:
        calls.append(("save_crate", {"item": {**item, "crate_id": raced},
                                     **({"idempotency_key": uuid.uuid4().hex} if keyed
                                        else {})}))
    for i, (item, keyed) in enumerate(plan["alone"]):
        calls.append(("save_crate", {"item": {**item, "crate_id": f"a{i}-{tag}"},
                                     **({"idempotency_key": uuid.uuid4().hex} if keyed
                                        else {})}))
    for n, keyed in plan["updates"]:
        calls.append(("update_crate", {"crate_id": seeded, "set": {"n": n},
                                       **({"idempotency_key": uuid.uuid4().hex} if keyed
                                          else {})}))
    if plan["delete"]:
        calls.append(("delete_crate", {"crate_id": gone}))
    calls += [("get_crate", {"crate_id": raced})] * plan["gets"]
    srv = dynaorm.mcp.server(crates, writes=["Crate"])

    async def go() -> list[Any]:
        async with Client(srv) as client:
            return list(await asyncio.gather(*(client.call_tool(name, args)
                                               for name, args in calls)))

    with inject_faults(crates) as faults:
        for op, times in plan["lost"].items():
            if times:
                faults.lose_answer(op, times=times)
        results = [_told(r) for r in asyncio.run(go())]
    told = list(zip(calls, results, strict=True))

    # the raced create: at most one "ok"; stored exactly as a Session save stores it
    creates = [(args["item"], said) for (name, args), said in told
               if name == "save_crate" and args["item"]["crate_id"] == raced]
    oks = [item for item, (how, _) in creates if how == "ok"]
    assert len(oks) <= 1, f"two creates of one item told ok: {oks}"
    stored = _raw(raced)
    possible = [item for item, (how, said) in creates
                if how == "ok" or _unknown(said)]
    if oks:
        assert stored == _as_session_saves(oks[0])
    elif stored is not None:
        assert any(stored == _as_session_saves(i) for i in possible), (
            "stored by a create told it failed", creates)
    for _, (how, said) in creates:
        if how == "error" and said.startswith("ItemExistsError"):
            assert stored is not None, said
    # gets of the raced item: nothing or what one create sent
    sent = [json.loads(Crate.model_validate_json(json.dumps(i)).model_dump_json())
            for i, _ in creates]
    for (name, _), (how, said) in told:
        if name == "get_crate":
            assert how == "ok", said
            got = said["item"]
            assert got is None or _plain(got) in [_plain(s) for s in sent], got
    # creates of items of their own
    for (name, args), (how, said) in told:
        item = args.get("item", {})
        if name != "save_crate" or item.get("crate_id") == raced:
            continue
        mine = _raw(item["crate_id"])
        if how == "ok":
            assert mine == _as_session_saves(item)
        else:
            assert _unknown(said), f"a create of an item of its own refused: {said}"
            assert mine is None or mine == _as_session_saves(item)
    # updates racing on one item: each "ok" returns what it set; the stored n is one set
    ns = [args["set"]["n"] for (name, args), (how, said) in told
          if name == "update_crate" and (how == "ok" or _unknown(said))]
    for (name, args), (how, said) in told:
        if name == "update_crate":
            assert how == "ok" or _unknown(said), said
            if how == "ok" and "idempotency_key" not in args:  # (its own ALL_NEW)
                assert said["item"]["n"] == args["set"]["n"]
            elif how == "ok":  # (a transaction's item is read after it: maybe a later
                assert said["item"]["n"] in ns  # racing update's, never one not applied)
    last = Session(crates).get(Crate, crate_id=seeded, consistent=True)
    assert last is not None and (last.n in ns if ns else last.n == 0)
    # the delete
    for (name, _), (how, said) in told:
        if name == "delete_crate":
            assert how == "ok" or _unknown(said), said
            if how == "ok":
                assert _raw(gone) is None


class _WriteAfterReadBack(Hook):
    """After the first consistent ``GetItem`` of ``crate_id`` (the read-back that proves
    a lost answer applied), another writer sets ``n`` to ``later`` (once)."""

    def __init__(self, crate_id: str, later: int) -> None:
        self.crate_id, self.later, self.done = crate_id, later, False

    def on_end(self, phase: Any, token: Any) -> object:
        if (not self.done and isinstance(phase, Attempt) and phase.operation == "GetItem"
                and self.crate_id in json.dumps(phase.request)):
            self.done = True
            with Session(crates) as s:
                s.update(Crate, crate_id=self.crate_id).set(n=self.later)
        return None


@pytest.mark.engines('moto')
@pytest.mark.parametrize("through", ["session", "mcp"])
def test_an_update_whose_answer_was_lost_returns_its_own_item(cdb: TestBackend,
                                                              through: str) -> None:
    """Fixed: an update alone (``UpdateItem``, ``ALL_NEW``) whose answer was lost, proved
    applied by the item read back holding its revision, had its ``result`` (and an MCP
    update's returned item) read again afterwards: another writer's later change was
    returned as this update's item (n=2 for an update that set n=1). Now its result is the
    item read back, the one that proved it."""
    tag = uuid.uuid4().hex[:8]
    with Session(crates) as s:
        s.save(Crate(crate_id=tag))
    hook = _WriteAfterReadBack(tag, 2)
    crates.db.add_hook(hook)
    try:
        with inject_faults(crates) as faults:
            faults.lose_answer("UpdateItem")
            if through == "session":
                with Session(crates) as s:
                    staged = s.update(Crate, crate_id=tag).set(n=1).returning()
                got = staged.result.n
            else:
                srv = dynaorm.mcp.server(crates, writes=["Crate"], threads=False)

                async def go() -> Any:
                    async with Client(srv) as client:
                        return await client.call_tool("update_crate", {
                            "crate_id": tag, "set": {"n": 1}})
                how, said = _told(asyncio.run(go()))
                assert how == "ok", said
                got = said["item"]["n"]
    finally:
        crates.db.remove_hook(hook)
    assert hook.done
    assert got == 1
    assert Session(crates).get(Crate, crate_id=tag, consistent=True).n == 2  # type: ignore[union-attr]


# == cancelled mid-commit =====================================================================
class _CancelAt(Hook):
    """Cancels the task running the ``at``-th hook event (each attempt's start and end
    counted, in order) of a write."""

    def __init__(self, at: int) -> None:
        self.at, self.seen, self.fired = at, 0, False

    def _tick(self, phase: Any) -> None:
        if isinstance(phase, Attempt) and phase.operation in WRITES:
            if self.seen == self.at and not self.fired:
                self.fired = True
                task = asyncio.current_task()
                assert task is not None
                task.cancel()
            self.seen += 1

    def on_start(self, phase: Any) -> object:
        self._tick(phase)
        return None

    def on_end(self, phase: Any, token: Any) -> object:
        self._tick(phase)
        return None


@pytest.mark.engines('moto')
@settings(max_examples=examples(20), deadline=None, phases=NO_SHRINK,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(kind=st.sampled_from(["save", "update", "delete"]), at=st.integers(0, 5),
       lost=st.integers(0, 1), item=_ITEM)
def test_a_write_cancelled_mid_commit_is_all_or_nothing(
        cdb: TestBackend, kind: str, at: int, lost: int, item: dict[str, Any]) -> None:
    """A write (by an AsyncSession) with an idempotency key, cancelled at its ``at``-th
    attempt event (an answer lost first, or not): it raises ``CancelledError`` (or, cancelled
    after its last await, answers the truth); the table holds what it held before or
    what the whole write makes; retried with its key, it is applied once."""
    tag = uuid.uuid4().hex[:8]
    crate_id = f"c-{tag}"
    if kind != "save":
        with Session(crates) as s:
            s.save(Crate(crate_id=crate_id, n=7))
    before = _raw(crate_id)
    tools = tools_of(crates, ["Crate"])
    key = uuid.uuid4().hex
    args: dict[str, Any] = {
        "save": {"item": {**item, "crate_id": crate_id}},
        "update": {"crate_id": crate_id, "set": {"n": item["n"]}},
        "delete": {"crate_id": crate_id}}[kind]
    args["idempotency_key"] = key
    tool = tools[f"{kind}_crate"]
    hook = _CancelAt(at)

    async def once() -> Any:
        return await run(tool, dict(args), AsyncSession(crates), {}, None, tools)

    crates.db.add_hook(hook)
    try:
        with inject_faults(crates) as faults:
            if lost:
                faults.lose_answer("TransactWriteItems", times=lost)
            try:
                outcome: Any = asyncio.run(once())
            except asyncio.CancelledError:
                outcome = "cancelled"
            except dynaorm.DynaormError as exc:
                outcome = exc
    finally:
        crates.db.remove_hook(hook)
    middle = _raw(crate_id)
    retried = asyncio.run(once())  # (no fault, no cancel: its key makes it once)
    after = _raw(crate_id)
    if kind == "save":
        whole = _as_session_saves({**item, "crate_id": crate_id})
    elif kind == "update":
        whole = None if before is None else {**before, "n": {"N": str(item["n"])}}
    else:
        whole = None
    assert middle in (before, whole), (outcome, before, middle, whole)
    if hook.fired and outcome != "cancelled":
        assert isinstance(outcome, dict), outcome  # (cancelled past its last await: true)
    if isinstance(outcome, dict):
        assert middle == whole
    assert after == whole, (outcome, retried)
    assert retried.get("replayed") is (middle == whole and middle != before) or (
        kind == "update" and before == whole)


# == loops closed, loops in threads ===========================================================
@pytest.mark.engines('moto')
def test_a_session_used_again_after_its_loop_closed(cdb: TestBackend) -> None:
    """An ``AsyncSession`` that ran a tool on one event loop, used by ``run`` on another
    after the first closed: it answers as on the first (or refuses clearly; never a
    hang or a wrong answer)."""
    tools = tools_of(crates, ["Crate"])
    with Session(crates) as s:
        s.save(Crate(crate_id="kept", n=3))
    session = AsyncSession(crates)

    async def get() -> Any:
        return await run(tools["get_crate"], {"crate_id": "kept"}, session, {}, None,
                          tools)

    first = asyncio.run(get())
    try:
        second = asyncio.run(asyncio.wait_for(get(), 30))
    except dynaorm.DynaormError as exc:  # (a clear refusal)
        assert "loop" in str(exc), exc
    else:
        assert second == first and first["item"]["n"] == 3

    async def save() -> Any:
        return await run(tools["save_crate"], {"item": {"crate_id": "late", "n": 4}},
                          AsyncSession(crates), {}, None, tools)

    assert asyncio.run(save()) == {"replayed": False, "item": {
        "crate_id": "late", "n": 4, "words": [], "blob": ""}}
    assert _raw("late") == _as_session_saves({"crate_id": "late", "n": 4})


@pytest.mark.engines('moto')
def test_tool_calls_on_loops_in_threads_at_once(cdb: TestBackend) -> None:
    """Four threads, each its own event loop and MCP client of one server (one table
    client shared by them all): gets (on each loop, by an AsyncSession) and saves (in
    worker threads) all answer the truth; nothing hangs."""
    with Session(crates) as s:
        for i in range(4):
            s.save(Crate(crate_id=f"t{i}", n=i))
    srv = dynaorm.mcp.server(crates, writes=["Crate"])
    errors: list[BaseException] = []
    answers: dict[int, list[Any]] = {}

    def work(i: int) -> None:
        async def go() -> list[Any]:
            async with Client(srv) as client:
                calls = [client.call_tool("get_crate", {"crate_id": f"t{j % 4}"})
                         for j in range(8)]
                calls += [client.call_tool("save_crate", {"item": {
                    "crate_id": f"s{i}-{j}", "n": j}}) for j in range(3)]
                return list(await asyncio.gather(*calls))
        try:
            answers[i] = [_told(r) for r in asyncio.run(asyncio.wait_for(go(), 60))]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    join_all(threads, 90)
    assert not errors, errors
    for i, told in answers.items():
        for j, (how, said) in enumerate(told[:8]):
            assert how == "ok" and said["item"]["n"] == j % 4, said
        for j, (how, said) in enumerate(told[8:]):
            assert how == "ok", said
            assert _raw(f"s{i}-{j}") == _as_session_saves({"crate_id": f"s{i}-{j}", "n": j})
    assert len(answers) == 4


# --- get and find on the event loop answer what the sync path answers
# (moved from system/test_red_team_08b.py:
# Red team of four changes merged for 0.8, by someone who wrote none of them: the MCP
# get/find calls on the event loop (issue 70, :func:`dynaorm.mcp.tools.run` by an AsyncSession), the
# receipt digest's shortcuts (key70), the ranking of rule rows by template specificity
# (r73, :meth:`KeyTemplate.covers`) and the separator of an inferred model (``_separator``).
# Each test states what must never happen. Nothing here depends on the engine: moto only.)

_QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    with moto_backend():
        yield


# -- 1. MCP: a get/find on the event loop answers what the threaded path answers ------------
@pytest.fixture(scope="module")
def customers(moto: None) -> Iterator[None]:
    """Customers of two tenants (encrypted cards, a unique email per tenant)."""
    with use_tables(tenants, name_suffix=worker_suffix()):
        with Session(tenants) as s:
            for t in ("t1", "t2"):
                for n in ("c1", "c|2"):
                    s.save(Customer(tenant_id=t, customer_id=n, name=f"{t}-{n}",
                                    email=f"{n}@{t}.EXAMPLE", card=f"SECRET-{t}{n}"))
        yield


def _answer(tool: Any, args: dict[str, Any], scope: dict[str, Any], tools: Any,
            on_loop: bool) -> tuple[str, Any]:
    """What a call answers (its result, or the tool error's text), by the threaded
    server's sync path (``run``) or the event loop's (``run`` by an AsyncSession)."""
    async def read() -> Any:
        return await run(tool, dict(args), AsyncSession(tenants, scope=scope or None),
                          scope, None, tools)
    try:
        check_arguments(tool, args)
        found = (asyncio.run(read()) if on_loop else
                 run(tool, dict(args), Session(tenants, scope=scope or None), scope, None,
                     tools))
    except Exception as exc:  # (a tool error: what the server tells the client)
        return "error", message_of(exc)
    return "ok", found


_value = st.one_of(st.sampled_from(["t1", "t2", "c1", "c|2", "c1@t1.example",
                                    "C|2@T2.EXAMPLE", ""]),
                   st.text(st.sampled_from("ct12#|@.\x00 é"), min_size=1, max_size=6))


@settings(_QUICK, max_examples=examples(40))
@given(scoped=st.sampled_from([None, "t1", "t2"]),
       name=st.sampled_from(["get_customer", "find_customer_by_email"]),
       args=st.dictionaries(st.sampled_from(["tenant_id", "customer_id", "email"]), _value,
                            max_size=3))
@example(scoped="t1", name="get_customer", args={"tenant_id": "t2", "customer_id": "c1"})
@example(scoped="t1", name="find_customer_by_email", args={"email": "C1@t1.example"})
@example(scoped=None, name="get_customer", args={"tenant_id": "t1#CUSTOMER#c1",
                                                 "customer_id": "c1"})
def test_a_get_or_find_on_the_event_loop_answers_what_the_sync_path_answers(
        customers: None, scoped: str | None, name: str, args: dict[str, Any]) -> None:
    """For any arguments (a missing item, hostile key values, another tenant named, an
    argument the tool does not take), with and without a tenant scope: the event loop's
    :func:`run` by an AsyncSession gives the same result or the same tool error text as :func:`run`,
    and never an encrypted value."""
    scope = {} if scoped is None else {"tenant_id": scoped}
    tools, _ = prepare(tenants, scope=scope)
    tool = tools[name]
    args = {k: v for k, v in args.items() if k in tool.input_schema["properties"]}
    threaded = _answer(tool, args, scope, tools, on_loop=False)
    on_loop = _answer(tool, args, scope, tools, on_loop=True)
    assert on_loop == threaded
    assert "SECRET" not in repr(on_loop) and "Traceback" not in repr(on_loop)
    if scoped is not None and on_loop[0] == "ok" and on_loop[1]["item"] is not None:
        assert on_loop[1]["item"]["tenant_id"] == scoped


mcp_odd = Table("red08b_mcp_odd")


class Colour(str, enum.Enum):  # noqa: UP042 (the older spelling: also a str)
    RED = "r"


class Odd(Entity):
    """Values JSON has no plain form for, and numbers at DynamoDB's edges."""

    class Meta:
        table = mcp_odd
        pk = "ODD#{odd_id}"
        sk = "N#{n}"

    odd_id: str
    n: int
    big: int = 0
    small: Decimal = Decimal(0)
    f: float = 0.0
    when: datetime | None = None
    day: date | None = None
    gap: timedelta | None = None
    tags: set[str] = set()
    nums: frozenset[int] = frozenset()
    colour: Colour = Colour.RED
    anything: Any = None


_ODD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_odd", {"odd_id": "x", "n": 10**30}), ("get_odd", {"odd_id": "x", "n": 10**400}),
    ("get_odd", {"odd_id": "x", "n": float("nan")}), ("get_odd", {"odd_id": "x", "n": 1e400}),
    ("get_odd", {"odd_id": "\udcff", "n": 1}), ("get_odd", {"odd_id": "x\x00", "n": 1}),
    ("get_odd", {"odd_id": "x#y", "n": 1}), ("get_odd", {"odd_id": "gone", "n": 1}),
]


def test_hostile_stored_values_reach_the_client_alike_on_either_path(moto: None) -> None:
    """A get through the SDK's client of an item holding huge numbers, a tiny Decimal,
    datetimes, sets, a str enum and nested ``Any`` data, and gets with NaN, infinite,
    over-long numbers, lone surrogates and NUL in the key: the server answers each (a
    result whose text is the JSON of its structured content, or a tool error without a
    traceback), and the event loop's answers equal the one-call-at-a-time server's."""
    with use_tables(mcp_odd, name_suffix=worker_suffix()):
        with Session(mcp_odd) as s:
            s.save(Odd(odd_id="x", n=10**30, big=-(10**37), small=Decimal("1E-130"),
                       f=1e125, when=datetime(2020, 1, 1, tzinfo=UTC), day=date(2020, 1, 2),
                       gap=timedelta(days=1, microseconds=3), tags={"a", "b"},
                       nums=frozenset({1, 10**20}),
                       anything={"k": [1, Decimal("1.5"), {"n": None}], "s": {1, 2}}))
        answers = []
        for threads in (True, False):
            results = mcp_call(dynaorm.mcp.server(mcp_odd, threads=threads), *_ODD_CALLS)
            shown = []
            for r in results:
                said = text(r)
                assert "Traceback" not in said
                if not r.is_error:
                    assert json.loads(said) == r.structured_content
                shown.append((r.is_error, said))
            answers.append(shown)
        assert answers[0] == answers[1]
        first = json.loads(answers[0][0][1])["item"]
        assert (first["n"], first["big"], first["small"]) == (10**30, -(10**37), "1E-130")
        assert answers[0][-1] == (False, '{"item":null}')
