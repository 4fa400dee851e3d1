"""The plain environment's fast path (:mod:`dynaorm.client.plain`) end to end on DynamoDB
Local: credentials and region in the environment, no shared files. Requests are signed
with the environment's key and session token for its region (and carry Lambda's trace
header) without a botocore session ever being made, and what they write is what a botocore
client of the same environment reads."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import botocore.session
import pytest

from dynaorm import AsyncSession, Session
from dynaorm.client.plain import PlainCredentials
from dynaorm.testing import use_tables
from tests.support.models import Note, app


@pytest.fixture
def plain(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name in list(os.environ):
        if (name.startswith(("AWS_", "BOTO", "_X_AMZN")) or name.lower().endswith("_proxy")
                or name == "REQUESTS_CA_BUNDLE"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "plainenvkey")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "plainenvsecret")
    monkeypatch.setenv("AWS_SESSION_TOKEN", "plain-session-token")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-north-1")
    monkeypatch.setenv("AWS_LAMBDA_FUNCTION_NAME", "notes")
    monkeypatch.setenv("_X_AMZN_TRACE_ID", "Root=1-5759e988-bd862e3fe1be46a994272793")


def _stored(endpoint: str, table: str, note_id: str) -> dict[str, object] | None:
    """The item as a botocore client of the same environment reads it."""
    client = botocore.session.get_session().create_client("dynamodb", endpoint_url=endpoint)
    found = client.get_item(TableName=table, Key={"pk": {"S": f"NOTE#{note_id}"},
                                                  "sk": {"S": "NOTE"}}, ConsistentRead=True)
    return found.get("Item")


def test_sync_requests_in_the_plain_environment(plain: None, ddb_local: str,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    with use_tables(app, endpoint_url=ddb_local, name_suffix="-plain-env"):
        _sync_requests(ddb_local, monkeypatch)


def _sync_requests(ddb_local: str, monkeypatch: pytest.MonkeyPatch) -> None:
    table = app
    wire = table.db.sync_wire
    sent: list[dict[str, str]] = []
    prepare = wire.prepare

    def spy(operation: str, request: dict[str, Any]) -> Any:
        body, headers = prepare(operation, request)
        sent.append(headers)
        return body, headers

    monkeypatch.setattr(wire, "prepare", spy)
    s = Session(table)
    s.save(Note(note_id="n1", body="hello"))
    s.commit()
    assert Session(table).get(Note, note_id="n1").body == "hello"
    client = table.db
    assert client._session is None  # no botocore session was ever made
    assert isinstance(client._plain.credentials, PlainCredentials)
    assert client.sync_wire.endpoint.region == "eu-north-1" and len(sent) == 2
    for headers in sent:
        scope = headers["Authorization"].split("Credential=", 1)[1].split(",")[0].split("/")
        assert scope[0] == "plainenvkey" and scope[2:] == ["eu-north-1", "dynamodb",
                                                           "aws4_request"]
        assert "x-amz-security-token" in headers["Authorization"]
        assert headers["X-Amz-Security-Token"] == "plain-session-token"
        assert headers["X-Amzn-Trace-Id"] == "Root=1-5759e988-bd862e3fe1be46a994272793"
    item = _stored(ddb_local, table.name, "n1")
    assert item is not None and item["body"] == {"S": "hello"}


def test_async_requests_in_the_plain_environment(plain: None, ddb_local: str) -> None:
    pytest.importorskip("aiobotocore")
    with use_tables(app, endpoint_url=ddb_local, name_suffix="-plain-env-async"):
        _async_requests(ddb_local)


def _async_requests(ddb_local: str) -> None:
    table = app

    async def run() -> str:
        async with AsyncSession(table) as s:
            s.save(Note(note_id="a1", body="async"))
            await s.commit()
        async with AsyncSession(table) as s:
            found = await s.get(Note, note_id="a1")
        await table.db.aclose()
        return str(found.body)

    assert asyncio.run(run()) == "async"
    assert table.db._session is None
    item = _stored(ddb_local, table.name, "a1")
    assert item is not None and item["body"] == {"S": "async"}
