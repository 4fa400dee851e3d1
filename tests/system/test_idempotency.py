"""ClientRequestToken idempotency (contract section 4), where tokens hold: DynamoDB Local
and dynaorm's test backend (moto ignores ClientRequestToken; the backend's emulator
applies it, contract section 21), not dynoxide."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm.errors import RequestError as RequestFailed
from dynaorm.testing import TestBackend
from tests.conftest import engine_of
from tests.support.models import Note, User
from tests.support.recording import Recorder, recording, send

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")


@pytest.fixture
def local(db: TestBackend, request: pytest.FixtureRequest
          ) -> Iterator[tuple[TestBackend, Recorder]]:
    """The test table where tokens hold, its requests recorded (a hook on its client)."""
    if engine_of(request) == "dynoxide":
        pytest.skip("dynoxide does not apply a ClientRequestToken at most once")
    yield db, recording(db.table)


def _last_transaction(rec: Recorder) -> dict[str, Any]:
    (req,) = [req for op, req in rec.writes if op == "TransactWriteItems"]
    return req


def test_replay_with_the_same_token_applies_nothing(
        local: tuple[TestBackend, Recorder]) -> None:
    db, rec = local
    s = db.session()
    s.save(Note(note_id="n1", body="one"))
    s.save(Note(note_id="n2", body="two"))
    s.commit()
    request = _last_transaction(rec)
    assert request["ClientRequestToken"]

    gone = s.get(Note, note_id="n1", consistent=True)
    assert gone is not None
    s.delete(gone)
    s.commit()
    before = db.scan_raw()
    assert [i["pk"]["S"] for i in before] == ["NOTE#n2"]

    # an ambiguous failure retried later: the identical request and token
    send(db.table, "TransactWriteItems", request)
    assert db.scan_raw() == before  # n1 stays deleted: the commit was not applied twice


def test_replay_of_a_unique_registration(local: tuple[TestBackend, Recorder]) -> None:
    db, rec = local
    s = db.session()
    user = User(user_id="u1", username="bob", email="bob@x.com")
    s.save(user)
    s.commit()
    request = _last_transaction(rec)
    s.delete(user)
    s.commit()
    assert db.scan_raw() == []
    # without idempotency the replay would pass its attribute_not_exists conditions
    send(db.table, "TransactWriteItems", request)
    assert db.scan_raw() == []


def test_same_token_with_another_request_is_refused(
        local: tuple[TestBackend, Recorder]) -> None:
    db, rec = local
    s = db.session()
    s.save(Note(note_id="n1"))
    s.save(Note(note_id="n2"))
    s.commit()
    request = _last_transaction(rec)
    before = db.scan_raw()
    other = {**request, "TransactItems": [
        {"Put": {"TableName": db.table.name, "Item": {
            "pk": {"S": "NOTE#n3"}, "sk": {"S": "NOTE"}, "_type": {"S": "Note"},
            "note_id": {"S": "n3"}}}},
        *request["TransactItems"][1:],
    ]}
    with pytest.raises(RequestFailed) as err:
        send(db.table, "TransactWriteItems", other)
    assert err.value.code == "IdempotentParameterMismatchException"
    assert db.scan_raw() == before


def test_each_commit_has_its_own_token(local: tuple[TestBackend, Recorder]) -> None:
    db, rec = local
    for i in range(3):
        s = db.session()
        s.save(Note(note_id=f"a{i}"))
        s.save(Note(note_id=f"b{i}"))
        s.commit()
    tokens = [req["ClientRequestToken"] for op, req in rec.writes]
    assert len(tokens) == 3 == len(set(tokens))
