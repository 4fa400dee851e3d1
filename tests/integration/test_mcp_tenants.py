"""Red team of the MCP server (contract 22, issue 61), driven by the official SDK's own
client in memory and over streamable HTTP, on moto and DynamoDB Local: explain of another
tenant's key, plaintext of encrypted fields in results, errors, explanations and the model
resource, hostile arguments (deep, huge, keys and versions in ``set``), and a per-request
tenant header that is repeated, empty or raced by another tenant."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import Client
from pydantic import field_validator

import dynaorm.mcp
from dynaorm import Encrypted, Entity, ItemDecodeError, Session, StaticKeyring, Table
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.mcp_client import call, http_client, http_server, text
from tests.support.tenant_models import Customer, Memo, tenants

pytestmark = pytest.mark.sync_only  # (the server makes its own sessions)

SECRET = "4111-SECRET"


def _canonical(items: Any) -> list[str]:
    """Raw items as sorted canonical text: an engine's attribute order is not the item's."""
    return sorted(json.dumps(i, sort_keys=True, default=repr) for i in items)


@pytest.fixture
def tdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(tenants, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        with Session(tenants) as s:
            for t in ("t1", "t2"):
                s.save(Customer(tenant_id=t, customer_id="c1", name=f"n-{t}",
                                email=f"c1@{t}.example", card=f"{SECRET}-{t}"))
                s.save(Memo(tenant_id=t, memo_id="m1", text=f"memo of {t}"))
        yield tb


def test_explain_holds_the_scope(tdb: TestBackend) -> None:
    """explain of a get or find naming another tenant is refused as the call would be."""
    srv = dynaorm.mcp.server(tenants, scope={"tenant_id": "t1"})
    get, find, mine = call(
        srv, ("explain", {"tool": "get_customer",
                          "arguments": {"tenant_id": "t2", "customer_id": "c1"}}),
        ("explain", {"tool": "find_customer_by_email",
                     "arguments": {"tenant_id": "t2", "email": "c1@t2.example"}}),
        ("explain", {"tool": "get_customer", "arguments": {"customer_id": "c1"}}))
    assert get.is_error and "ScopeError" in text(get)
    assert find.is_error and "ScopeError" in text(find)
    assert not mine.is_error and "'tenant_id': 't1'" in text(mine)


def test_no_plaintext_of_an_encrypted_field_leaves_the_server(tdb: TestBackend) -> None:
    srv = dynaorm.mcp.server(tenants, writes=["Customer"], scope={"tenant_id": "t1"})
    new = f"{SECRET}-new"
    results = call(
        srv, ("get_customer", {"customer_id": "c1"}),
        ("query_customer_on_gsi1", {}),
        ("find_customer_by_email", {"email": "c1@t1.example"}),
        ("save_customer", {"item": {"customer_id": "c1", "name": "x", "email": "a@b",
                                    "card": new}}),  # exists
        ("save_customer", {"item": {"customer_id": "c9", "name": "x",
                                    "email": "c1@t1.example", "card": new}}),  # unique
        ("save_customer", {"item": {"customer_id": "c8", "name": "x", "email": "e@f",
                                    "card": new}}),
        ("update_customer", {"customer_id": "c1", "set": {"card": new, "notes": "n"}}),
        ("update_customer", {"customer_id": "c1", "set": {"card": 4111}}),  # wrong type
        ("explain", {"tool": "save_customer", "arguments": {"item": {
            "customer_id": "c7", "name": "x", "email": "g@h", "card": new}}}),
        ("explain", {"tool": "update_customer", "arguments": {
            "customer_id": "c1", "set": {"card": new}}}))
    for r in results:
        assert SECRET not in text(r), text(r)
        assert SECRET not in json.dumps(r.structured_content or {})
    assert [r.is_error for r in results] == [False, False, False, True, True, False, False,
                                             True, False, False]
    stored = Session(tenants).get(Customer, tenant_id="t1", customer_id="c1")
    assert stored is not None and stored.card == new  # (written, never echoed)

    async def model() -> str:
        async with Client(srv) as client:
            found = await client.read_resource("dynaorm://model")
            return "".join(getattr(c, "text", "") for c in found.contents)
    said = model_text = asyncio.run(model())
    assert SECRET not in said and "t" * 32 not in model_text  # (nor the keyring's key)


def test_hostile_arguments(tdb: TestBackend) -> None:
    """Deep and huge arguments, key fields and versions in ``set``, tools of entities
    not in ``writes``: tool errors, the table unchanged, the server still answering."""
    srv = dynaorm.mcp.server(tenants, writes=["Memo"], scope={"tenant_id": "t1"})
    deep: Any = "x"
    for _ in range(200):  # (deeper: the SDK's client cannot serialize it)
        deep = {"a": deep}
    before = _canonical(tdb.scan_raw(tenants))
    results = call(
        srv, ("explain", {"tool": "get_memo", "arguments": deep}),
        ("update_memo", {"memo_id": "m1", "set": {"tenant_id": "t2"}}),
        ("update_memo", {"memo_id": "m1", "set": {"memo_id": "m2"}}),
        ("update_memo", {"memo_id": "m1", "set": {"version": 9}}),
        ("update_memo", {"memo_id": "m1", "version": 7, "set": {"text": "x"}}),
        ("delete_memo", {"memo_id": "m1", "version": 7}),
        ("save_customer", {"item": {"customer_id": "c5", "name": "x", "email": "y"}}),
        ("update_customer", {"customer_id": "c1", "set": {"name": "x"}}),
        ("save_memo", {"item": {"memo_id": "m3", "text": "x" * 600_000}}),
        ("get_memo", {"memo_id": "m1"}))
    assert all(r.is_error for r in results[:-1]), [text(r) for r in results]
    assert "Traceback" not in "".join(map(text, results))
    assert json.loads(text(results[-1]))["item"]["text"] == "memo of t1"
    assert _canonical(tdb.scan_raw(tenants)) == before


vault = Table("red_vault", keyring=StaticKeyring(b"r" * 32))


class Secretive(Entity):
    """An encrypted field whose validator quotes the value it refuses."""

    class Meta:
        table = vault
        pk = "TENANT#{tenant_id}"
        sk = "S#{sid}"

    tenant_id: str
    sid: str
    secret: Encrypted[str]

    @field_validator("secret")
    @classmethod
    def _refuse(cls, v: str) -> str:
        if v.startswith("BAD"):
            raise ValueError(f"refused {v}")
        return v


def test_a_validator_quoting_an_encrypted_value_is_not_echoed(
        db: TestBackend, request: pytest.FixtureRequest) -> None:
    """A stored item whose decrypted value its model now refuses (ItemDecodeError), and a
    save the validator refuses: the tool error names the field, never the plaintext."""
    with use_tables(vault, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        with Session(vault) as s:  # (stored before the validator refused it)
            s.save(Secretive.model_construct(tenant_id="t1", sid="s", secret="BAD-PLAIN"))
        srv = dynaorm.mcp.server(vault, writes=["Secretive"], scope={"tenant_id": "t1"})
        stored, saved = call(srv, ("get_secretive", {"sid": "s"}), (
            "save_secretive", {"item": {"sid": "x", "secret": "BAD-MINE"}}))
    assert stored.is_error and "ItemDecodeError" in text(stored) and "secret" in text(stored)
    assert saved.is_error and "secret" in text(saved)
    assert "PLAIN" not in text(stored) and "MINE" not in text(saved)
    with use_tables(vault, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        with Session(vault) as s:
            s.save(Secretive.model_construct(tenant_id="t1", sid="s", secret="BAD-PLAIN"))
        with pytest.raises(ItemDecodeError) as info:  # (nor the library's own error)
            Session(vault).get(Secretive, tenant_id="t1", sid="s")
    assert "secret: value_error" in str(info.value) and "PLAIN" not in str(info.value)


# -- over streamable HTTP: the tenant header --------------------------------------------
def test_the_tenant_header_over_http(db: TestBackend, request: pytest.FixtureRequest
                                     ) -> None:
    """Two tenant headers (a proxy appending its own after the client's), an empty one:
    refused; two tenants calling at once on one server: each gets its own."""
    endpoint = db.endpoint_url or request.getfixturevalue("dynaorm_moto_server")
    with use_tables(tenants, endpoint_url=endpoint):
        with Session(tenants) as s:
            for t in ("t1", "t2"):
                s.save(Customer(tenant_id=t, customer_id="c1", name=f"n-{t}", email="e@x",
                                card=f"{SECRET}-{t}"))
        with http_server(endpoint, "--scope", "tenant_id", "--tenant-header",
                         "X-Tenant-Id") as url:
            async def as_tenant(headers: list[tuple[str, str]], n: int = 1) -> list[Any]:
                async with http_client(url, headers) as client:
                    return list(await asyncio.gather(*(client.call_tool(
                        "get_customer", {"customer_id": "c1"}) for _ in range(n))))

            async def both() -> list[list[Any]]:
                return list(await asyncio.gather(
                    as_tenant([("X-Tenant-Id", "t1")], 6),
                    as_tenant([("X-Tenant-Id", "t2")], 6)))
            [twice] = asyncio.run(as_tenant([("X-Tenant-Id", "t2"), ("X-Tenant-Id", "t1")]))
            [empty] = asyncio.run(as_tenant([("X-Tenant-Id", "")]))
            [hashed] = asyncio.run(as_tenant([("X-Tenant-Id", "t1#CUSTOMER#c1")]))
            t1s, t2s = asyncio.run(both())
    for refused in (twice, empty, hashed):
        assert refused.is_error and "ScopeError" in text(refused), text(refused)
    assert [json.loads(text(r))["item"]["name"] for r in t1s] == ["n-t1"] * 6
    assert [json.loads(text(r))["item"]["name"] for r in t2s] == ["n-t2"] * 6
    assert SECRET not in "".join(text(r) for r in [*t1s, *t2s])
