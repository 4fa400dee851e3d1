"""The FastAPI example (examples/web_service.py) tested the way its guide tells a team to
test a service: through dynaorm's pytest plugin (``dynaorm_endpoint``, else the
``dynaorm_moto_server`` fixture: async sessions need an HTTP endpoint) and Starlette's
``TestClient``, with the tables created fresh per test by ``dynaorm.testing.use_tables``.
(The example's own run, over uvicorn and httpx: system/test_examples.py.)"""

from __future__ import annotations

import importlib.util
import string
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from fastapi.testclient import TestClient
from hypothesis import given
from hypothesis import strategies as st

from dynaorm.testing import use_tables

pytestmark = pytest.mark.sync_only

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "web_service.py"


def _load() -> ModuleType:
    sys.path.insert(0, str(EXAMPLE.parent))  # (the example imports examples/_support.py)
    spec = importlib.util.spec_from_file_location("web_service_example", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


service = _load()


@pytest.fixture
def client(request: pytest.FixtureRequest, dynaorm_endpoint: str | None) -> Iterator[TestClient]:
    url = dynaorm_endpoint or request.getfixturevalue("dynaorm_moto_server")
    with use_tables(service.table, endpoint_url=url), TestClient(service.app) as http:
        yield http


def test_create_read_and_conflicts(client: TestClient) -> None:
    # a moto server in this process, over the default wire (dynaorm's own HTTP)
    assert service.table.db.transport.botocore is False
    created = client.post("/tenants/t1/customers", json={"name": "Ada", "email": "a@x.io"})
    assert created.status_code == 201 and created.headers["etag"] == '"1"'
    body = created.json()
    assert set(body) >= {"customer_id", "created_at", "updated_at", "version"}
    again = client.post("/tenants/t1/customers", json={"name": "Eve", "email": "A@X.IO"})
    assert again.status_code == 409 and again.json()["field"] == "email"
    one = f"/tenants/t1/customers/{body['customer_id']}"
    assert client.get(one).json()["name"] == "Ada"
    ok = client.put(one, json={"name": "Ada L.", "email": "a@x.io"},
                    headers={"If-Match": '"1"'})
    assert ok.status_code == 200 and ok.headers["etag"] == '"2"'
    stale = client.put(one, json={"name": "x", "email": "a@x.io"}, headers={"If-Match": '"1"'})
    assert stale.status_code == 412 and stale.headers["etag"] == '"2"'
    assert client.get(one).json()["name"] == "Ada L."


def test_input_model_cannot_set_server_owned_fields(client: TestClient) -> None:
    made = client.post("/tenants/t1/customers", json={
        "name": "Mal", "email": "m@x.io", "customer_id": "mine", "version": 7,
        "created_at": "2000-01-01T00:00:00Z"}).json()
    assert made["customer_id"] != "mine" and made["version"] == 1
    assert not made["created_at"].startswith("2000")


def test_pages_and_bad_input(client: TestClient) -> None:
    for i in range(5):
        client.post("/tenants/t2/customers", json={"name": f"u{i}", "email": f"{i}@x.io"})
    first = client.get("/tenants/t2/customers", params={"limit": 3}).json()
    assert len(first["items"]) == 3 and set(first) == {"items", "cursor"}
    rest = client.get("/tenants/t2/customers", params={"limit": 3,
                                                       "cursor": first["cursor"]}).json()
    assert len(rest["items"]) == 2 and rest["cursor"] is None
    other = client.get("/tenants/t1/customers", params={"cursor": first["cursor"]})
    assert other.status_code == 400  # a cursor of another tenant's query
    assert client.get("/tenants/t2/customers/a%23b").json()["field"] == "customer_id"
    gone = client.delete("/tenants/t2/customers/nobody")
    assert gone.status_code == 404
    assert gone.json()["key"] == {"tenant": "t2", "customer_id": "nobody"}


@given(st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=1,
               max_size=200))
def test_the_demo_tampers_with_bits_that_count(cursor: str) -> None:
    """The demo's tampered cursor always differs in a character whose bits all count:
    never the cursor itself, never only its last character (base64 padding bits)."""
    changed = service.tampered(cursor)
    assert len(changed) == len(cursor) and changed != cursor
    (at,) = [i for i, (a, b) in enumerate(zip(cursor, changed, strict=True)) if a != b]
    assert at < len(cursor) - 1 or len(cursor) == 1


def test_a_tampered_cursor_is_refused(client: TestClient) -> None:
    for i in range(3):
        client.post("/tenants/t3/customers", json={"name": f"u{i}", "email": f"{i}@x.io"})
    first = client.get("/tenants/t3/customers", params={"limit": 2}).json()
    bad = client.get("/tenants/t3/customers",
                     params={"cursor": service.tampered(first["cursor"])})
    assert bad.status_code == 400


def test_page_as_a_response_model_holds_items_and_cursor_only() -> None:
    from fastapi import FastAPI

    from dynaorm import Page

    api = FastAPI()

    @api.get("/page", response_model=Page[service.CustomerFields])
    def page() -> Any:
        return Page([service.CustomerFields(name="Ada", email="a@x.io")], "next", skipped=2)

    with TestClient(api) as http:
        assert http.get("/page").json() == {
            "items": [{"name": "Ada", "email": "a@x.io"}], "cursor": "next"}
    schema = api.openapi()["components"]["schemas"]
    page_schema = next(v for k, v in schema.items() if k.startswith("Page"))
    assert set(page_schema["properties"]) == {"items", "cursor"}
    assert "``" not in page_schema.get("description", "")


GUIDE = EXAMPLE.parents[1] / "docs" / "guide" / "web-services.md"


def test_the_guide_s_code_is_the_tested_code_line_for_line() -> None:
    """Every Python block of the web-services guide is a run of lines of the example, of
    the Lambda example or of this test module: what the guide shows is what runs."""
    import re

    sources = [EXAMPLE.read_text(), (EXAMPLE.parent / "lambda_handler.py").read_text(),
               Path(__file__).read_text()]
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(), re.S)
    assert len(blocks) >= 6
    for block in blocks:
        assert any(block in source for source in sources), block


def test_if_match_star_and_garbage(client: TestClient) -> None:
    made = client.post("/tenants/t4/customers", json={"name": "Ada", "email": "s@x.io"})
    one = f"/tenants/t4/customers/{made.json()['customer_id']}"
    ok = client.put(one, json={"name": "Any", "email": "s@x.io"}, headers={"If-Match": "*"})
    assert ok.status_code == 200 and ok.headers["etag"] == '"2"'
    for garbage in ('"abc"', "W/", "", '"1" junk'):
        assert client.put(one, json={"name": "x", "email": "s@x.io"},
                          headers={"If-Match": garbage}).status_code in (412, 422)
    assert client.get(one).json()["name"] == "Any"


@pytest.mark.parametrize("cursor", ["garbage", "x" * 300, "eyJ9", ""])
def test_a_foreign_or_garbage_cursor_is_a_400(client: TestClient, cursor: str) -> None:
    client.post("/tenants/t5/customers", json={"name": "Ada", "email": "c@x.io"})
    answer = client.get("/tenants/t5/customers", params={"cursor": cursor})
    assert answer.status_code == 400, answer.text


def test_a_cursor_of_another_tenant_is_a_400(client: TestClient) -> None:
    for i in range(3):
        client.post("/tenants/t6/customers", json={"name": f"u{i}", "email": f"t6{i}@x.io"})
    cursor = client.get("/tenants/t6/customers", params={"limit": 1}).json()["cursor"]
    assert client.get("/tenants/t7/customers", params={"cursor": cursor}).status_code == 400


def test_a_hash_in_a_path_is_a_400(client: TestClient) -> None:
    answer = client.get("/tenants/t8/customers/a%23b")
    assert answer.status_code == 400 and answer.json()["field"] == "customer_id"


def test_every_error_of_the_guide_s_table_has_its_status() -> None:
    from dynaorm import (
        ConcurrentModificationError,
        ConditionFailedError,
        ConflictError,
        InvalidCursorError,
        InvalidValueError,
        ItemExistsError,
        ItemNotFoundError,
        ItemTooLargeError,
        KeyTemplateError,
        OutcomeUnknownError,
        TransactionConflictError,
        TransactionTooLargeError,
        UniqueConstraintError,
    )

    handled = set(service.app.exception_handlers)
    for error in (ConcurrentModificationError, ConditionFailedError, ConflictError,
                  InvalidCursorError, InvalidValueError, ItemNotFoundError, KeyTemplateError,
                  OutcomeUnknownError, TransactionConflictError, ItemTooLargeError,
                  TransactionTooLargeError, UniqueConstraintError):
        assert error in handled, error
    assert any(issubclass(ItemExistsError, h) for h in handled if isinstance(h, type))
    assert "ValidationError" in {getattr(h, "__name__", "") for h in handled}
