"""dynaorm's own wire against a real engine: the same requests get the same answers and
the same errors through ``wire="dynaorm"`` and ``wire="botocore"``; the wire signs with the
credentials the botocore client would use; moto's in-process mock keeps the client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dynaorm import RequestError, Table
from dynaorm.client.settings import LOOPBACK_ACCESS_KEY
from dynaorm.wire import SyncWire
from tests.support.models import User
from tests.support.recording import Requests, send

pytestmark = pytest.mark.sync_only

ITEM: dict[str, Any] = {
    "b": {"B": b"\x00\xffbin"}, "bs": {"BS": [b"a", b"\x00"]}, "n": {"N": "12.50"},
    "m": {"M": {"l": {"L": [{"B": b"\x01"}, {"NULL": True}, {"SS": ["x", "y"]}]}}},
}


@pytest.fixture
def both(db: Any) -> list[str]:
    """The wires ``db``'s engine can take (moto's in-process mock: only botocore's); the
    table is bound back as it was when the test ends (``use_tables``)."""
    return ["botocore", "dynaorm"] if db.endpoint_url else ["botocore"]


def _call(table: Table, wire: str, operation: str, request: dict[str, Any]) -> Any:
    table.wire = wire
    out = send(table, operation, request)
    out.pop("ResponseMetadata", None)
    return out


def test_same_answers_on_both_wires(db: Any, both: list[str]) -> None:
    table = db.table
    answers = []
    for n, wire in enumerate(both):
        key = {"pk": {"S": f"WIRE#{n}"}, "sk": {"S": "X"}}
        _call(table, wire, "PutItem", {"TableName": table.name, "Item": {**key, **ITEM}})
        got = _call(table, wire, "GetItem", {"TableName": table.name, "Key": key,
                                             "ConsistentRead": True})
        got["Item"].pop("pk")
        answers.append(got)
        page = _call(table, wire, "Query", {
            "TableName": table.name, "KeyConditionExpression": "pk = :p",
            "ExpressionAttributeValues": {":p": key["pk"]}, "ConsistentRead": True})
        assert page["Count"] == 1 and page["Items"][0]["b"] == {"B": b"\x00\xffbin"}
    assert all(a == answers[0] for a in answers)
    assert sorted(answers[0]["Item"]["bs"]["BS"]) == [b"\x00", b"a"]


def test_same_errors_on_both_wires(db: Any, both: list[str]) -> None:
    table = db.table
    key = {"pk": {"S": "WIRE#err"}, "sk": {"S": "X"}}
    _call(table, "botocore", "PutItem", {"TableName": table.name, "Item": {**key, **ITEM}})
    seen = []
    for wire in both:
        table.wire = wire
        with pytest.raises(RequestError) as put:
            send(table, "PutItem", {
                "TableName": table.name, "Item": key,
                "ConditionExpression": "attribute_not_exists(pk)",
                "ReturnValuesOnConditionCheckFailure": "ALL_OLD"})
        with pytest.raises(RequestError) as tx:
            send(table, "TransactWriteItems", {"TransactItems": [
                {"ConditionCheck": {"TableName": table.name, "Key": key,
                                    "ConditionExpression": "attribute_not_exists(pk)",
                                    "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}},
                {"Put": {"TableName": table.name,
                         "Item": {"pk": {"S": "WIRE#other"}, "sk": {"S": "X"}}}}]})
        with pytest.raises(RequestError) as missing:
            send(table, "GetItem", {"TableName": table.name + "-nope", "Key": key})
        seen.append((put.value.code, put.value.item, tx.value.code,
                     [None if r is None else (r.code, r.item) for r in tx.value.reasons],
                     type(missing.value).__name__, missing.value.code))
    assert all(s == seen[0] for s in seen)
    assert seen[0][0] == "ConditionalCheckFailedException"
    assert seen[0][1] is not None and seen[0][1]["b"] == {"B": b"\x00\xffbin"}
    assert seen[0][3][0] is not None and seen[0][3][0][0] == "ConditionalCheckFailed"
    assert seen[0][4] == "TableNotFoundError"


def test_sessions_go_over_dynaorm_wire_on_a_server_engine(db: Any) -> None:
    if not db.endpoint_url:
        assert db.table.db.sync_wire is None  # the in-process mock: botocore
        return
    db.table.wire = "dynaorm"
    assert isinstance(db.table.db.sync_wire, SyncWire)
    through_botocore: list[str] = []
    db.table.client.meta.events.register(
        "before-call.dynamodb.*", lambda model, **_: through_botocore.append(model.name))
    seen = Requests(db.table)  # a hook: it sees every attempt, on any wire
    s = db.session()
    s.save(User(user_id="w1", org_id="o", username="wire1", email="w1@x.com"))
    s.commit()
    assert db.session().get(User, user_id="w1") is not None
    assert [op for op, _ in seen.calls] == ["TransactWriteItems", "GetItem"]
    assert through_botocore == []  # nothing went through the botocore client


def _authorizations(table: Table, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    wire = table.db.sync_wire
    assert isinstance(wire, SyncWire)
    seen: list[str] = []
    prepare = wire.prepare

    def spy(operation: str, request: dict[str, Any]) -> Any:
        body, headers = prepare(operation, request)
        seen.append(headers["Authorization"].split("Credential=", 1)[1].split("/", 1)[0])
        return body, headers

    monkeypatch.setattr(wire, "prepare", spy)
    return seen


@pytest.fixture
def no_aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
                 "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_ENDPOINT_URL",
                 "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(name, raising=False)
    (tmp_path / "config").write_text("")
    (tmp_path / "credentials").write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    return tmp_path


def test_wire_signs_a_loopback_engine_with_the_shared_dummy_key(
        no_aws: Path, ddb_local: str, monkeypatch: pytest.MonkeyPatch) -> None:
    table = Table("dynaorm-wire-cfg", endpoint_url=ddb_local, wire="dynaorm")
    keys = _authorizations(table, monkeypatch)
    assert table.exists() in (True, False)
    assert keys == [LOOPBACK_ACCESS_KEY]


def test_wire_signs_with_configured_credentials(
        no_aws: Path, ddb_local: str, monkeypatch: pytest.MonkeyPatch) -> None:
    (no_aws / "credentials").write_text(
        "[dev]\naws_access_key_id = devkey\naws_secret_access_key = devsecret\n")
    monkeypatch.setenv("AWS_PROFILE", "dev")
    table = Table("dynaorm-wire-cfg", endpoint_url=ddb_local, wire="dynaorm")
    keys = _authorizations(table, monkeypatch)
    table.exists()
    assert keys == ["devkey"]
