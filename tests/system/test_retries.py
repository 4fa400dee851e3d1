"""Retries at the client boundary (contract 4 "one retry layer", 10 errors, 17 client), on
moto and DynamoDB Local: HTTP attempts are counted with botocore event handlers on the real
botocore client of a table's :class:`~dynaorm.Client` (its ``wire="botocore"``), and faults
are injected there too (tests/support/faults.py)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from botocore.exceptions import BotoCoreError, ClientError

import dynaorm
from dynaorm import (
    DynaormError,
    Entity,
    OutcomeUnknownError,
    RequestError,
    Session,
    Table,
    TableNotFoundError,
    ThrottledError,
    ThrottlingReason,
)
from dynaorm.protocol.policy import Policy
from dynaorm.testing import TestBackend, use_tables
from tests.support.concurrency import join_all
from tests.support.faults import Faults, faults_on
from tests.support.models import Note, User

pytestmark = [pytest.mark.sync_only,  # instruments of the sync client (see conftest)
              pytest.mark.engines("moto", "local")]

knobs = Table("dynaorm-knobs", max_attempts=3, max_wait=0)
missing = Table("dynaorm-no-such-table", max_wait=0)


class Thing(Entity):
    class Meta:
        table = knobs
        pk = "THING#{thing_id}"
        sk = "THING"

    thing_id: str
    label: str = ""


class Ghost(Entity):
    class Meta:
        table = missing
        pk = "GHOST#{ghost_id}"
        sk = "GHOST"

    ghost_id: str


faults = pytest.fixture(faults_on, name="faults")


@pytest.fixture
def knob_db(backend: str | None) -> Iterator[TestBackend]:
    with use_tables(knobs, endpoint_url=backend) as tb:
        yield tb


# -- one retry layer -----------------------------------------------------------------------
def test_botocore_itself_sends_once(db: TestBackend, faults: Faults) -> None:
    """botocore's own retries are off: a throttled call through the bare client is one
    HTTP attempt, so dynaorm's attempts are never multiplied by botocore's."""
    sent = faults.count()
    faults.refuse("GetItem")
    with pytest.raises(ClientError):
        db.table.client.get_item(TableName=db.table.name,
                                 Key={"pk": {"S": "x"}, "sk": {"S": "y"}})
    assert sent["GetItem"] == 1


def test_persistent_throttling_sends_max_attempts_then_throttled_error(
        knob_db: TestBackend) -> None:
    """Table(max_attempts=3): a write throttled on every attempt is sent exactly 3 times,
    then fails with ThrottledError (a RequestError) naming the operation, the code and
    DynamoDB's ThrottlingReasons, read from botocore's answer; nothing is stored."""
    faults = Faults(knobs)
    sent = faults.count()
    why = {"reason": "TableWriteKeyRangeThroughputExceeded",
           "resource": f"arn:aws:dynamodb:us-east-1:1:table/{knobs.name}"}
    faults.refuse("PutItem", fields={"throttlingReasons": [why]})
    s = Session(knobs)
    thing = Thing(thing_id="t1")
    s.save(thing)
    with pytest.raises(ThrottledError) as err:
        s.commit()
    assert err.value.reasons == [ThrottlingReason(why["reason"], why["resource"])]
    assert (err.value.operation, err.value.code) == ("PutItem", "ThrottlingException")
    assert err.value.attempts == 3 and not err.value.maybe_applied
    assert str(err.value).endswith("(after 3 attempts)")
    assert sent["PutItem"] == 3
    assert knob_db.scan() == []
    assert dynaorm.inspect(thing).new  # the failed insert changed nothing


def test_default_is_five_attempts_for_reads_batches_and_transactions(
        db: TestBackend, faults: Faults) -> None:
    sent = faults.count()
    faults.refuse("GetItem")
    faults.refuse("BatchGetItem", code="ProvisionedThroughputExceededException")
    faults.refuse("TransactWriteItems")
    faults.refuse("Query")
    s = db.session()
    with pytest.raises(RequestError) as get:
        s.get(Note, note_id="n1")
    with pytest.raises(RequestError) as batch:
        s.get_many(Note, [{"note_id": "n1"}, {"note_id": "n2"}])
    with pytest.raises(RequestError) as query:
        s.query(Note, note_id="n1").all()
    s.save(User(username="ada", email="ada@x.com"))
    with pytest.raises(RequestError) as tx:
        s.commit()
    assert [e.value.operation for e in (get, batch, query, tx)] == [
        "GetItem", "BatchGetItem", "Query", "TransactWriteItems"]
    assert dict(sent) == {"GetItem": 5, "BatchGetItem": 5, "Query": 5,
                          "TransactWriteItems": 5}
    assert db.scan() == []


def test_persistent_5xx_on_a_read_is_a_request_error(db: TestBackend, faults: Faults) -> None:
    sent = faults.count()
    faults.refuse("GetItem", status=500, code="InternalServerError")
    with pytest.raises(RequestError) as err:
        db.session().get(Note, note_id="n1")
    assert (err.value.operation, err.value.code) == ("GetItem", "InternalServerError")
    assert sent["GetItem"] == 5


def test_persistent_5xx_on_a_write_is_outcome_unknown(db: TestBackend, faults: Faults) -> None:
    """A 5xx may come after the server applied the write: dynaorm does not claim a
    definite failure. (0.3) A single-item write is not resent after it (it has no
    idempotency token): it is read back. (0.5) No item stored proves nothing (another
    writer may have deleted what it inserted): not resent (0.4 resent it)."""
    sent = faults.count()
    faults.refuse("PutItem", status=500, code="InternalServerError")
    s = db.session()
    note = Note(note_id="n1")
    s.save(note)
    with pytest.raises(OutcomeUnknownError) as err:
        s.commit()
    assert err.value.operation == "PutItem"
    assert err.value.keys == [{"pk": "NOTE#n1", "sk": "NOTE"}]
    assert "InternalServerError" in str(err.value) and "no item is stored" in str(err.value)
    assert (sent["PutItem"], sent["GetItem"]) == (1, 1)
    assert dynaorm.inspect(note).new  # the failed insert changed nothing


def test_throttled_then_served(db: TestBackend, faults: Faults) -> None:
    sent = faults.count()
    faults.refuse("PutItem", times=2)
    s = db.session()
    s.save(Note(note_id="n1", body="hi"))
    s.commit()
    assert sent["PutItem"] == 3
    assert [i["body"] for i in db.scan()] == ["hi"]


def test_a_transaction_keeps_its_token_across_retries(db: TestBackend, faults: Faults) -> None:
    tokens: list[str] = []

    def token(request: Any, **_: Any) -> None:
        tokens.append(json.loads(request.body)["ClientRequestToken"])

    faults._on("before-send.dynamodb.TransactWriteItems", token, first=True)
    faults.refuse("TransactWriteItems", times=2, code="TransactionInProgressException")
    s = db.session()
    s.save(User(username="ada", email="ada@x.com"))
    s.commit()
    assert len(tokens) == 3 and len(set(tokens)) == 1
    assert len(db.scan()) == 3


def test_not_retried_when_retrying_cannot_help(db: TestBackend, faults: Faults) -> None:
    sent = faults.count()
    faults.refuse("GetItem", code="ValidationException")
    with pytest.raises(RequestError) as err:
        db.session().get(Note, note_id="n1")
    assert err.value.code == "ValidationException" and err.value.attempts == 1
    assert sent["GetItem"] == 1


def test_max_wait_bounds_the_total_wait(db: TestBackend) -> None:
    sleeps: list[float] = []
    db.table.max_attempts = 12
    db.table.max_wait = 0.5
    faults = Faults(db.table)  # (it rebinds the table to botocore's wire: the client first)
    db.table.db.driver.sleep = sleeps.append
    faults.refuse("GetItem")
    try:
        with pytest.raises(RequestError):
            db.session().get(Note, note_id="n1")
    finally:
        faults.clear()
    assert 0 < sum(sleeps) <= 0.5 + 1e-9
    assert all(d > 0 for d in sleeps)
    assert len(sleeps) <= 11

    sleeps.clear()
    db.table.max_wait = 0  # another client: the table's settings with this one changed
    faults = Faults(db.table)
    db.table.db.driver.sleep = sleeps.append
    faults.refuse("GetItem")
    try:
        with pytest.raises(RequestError) as err:
            db.session().get(Note, note_id="n1")
    finally:
        faults.clear()
    assert err.value.attempts == 12
    assert sleeps == []


def test_backoff_is_full_jitter_exponential() -> None:
    p = Policy()
    for attempt in range(1, 8):
        cap = min(p.max_delay, p.base_delay * 2 ** attempt)
        delays = [p.backoff(attempt) for _ in range(200)]
        assert all(0 <= d <= cap for d in delays)
        assert max(delays) > cap / 2  # spread over the whole range, not a fixed delay


# -- one client for the tables that connect alike -----------------------------------------
def test_one_client_per_table_shared_by_threads(db: TestBackend) -> None:
    """Threads racing to a table's first use get one client; (0.4) a table that connects
    alike shares it."""
    table = Table("dynaorm-fresh", endpoint_url=db.endpoint_url)
    seen: list[Any] = []
    barrier = threading.Barrier(16)

    def grab() -> None:
        barrier.wait()
        seen.append(table.client)

    threads = [threading.Thread(target=grab) for _ in range(16)]
    join_all(threads)
    assert len({id(c) for c in seen}) == 1
    assert table.client is seen[0] is table.db.botocore
    assert table.client.meta.config.max_pool_connections >= 64
    alike = Table("dynaorm-fresh-too", endpoint_url=db.endpoint_url)
    assert alike.db is table.db and alike.client is seen[0]


def test_sessions_send_through_table_client(db: TestBackend, faults: Faults) -> None:
    sent = faults.count()
    with db.session() as s:
        s.save(Note(note_id="n1"))
    db.session().get(Note, note_id="n1")
    assert sent["PutItem"] == 1 and sent["GetItem"] == 1


# -- errors at one boundary ----------------------------------------------------------------
def test_missing_table_is_table_not_found(backend: str | None) -> None:
    missing.connect(backend)
    assert not missing.exists()
    s = Session(missing)
    with pytest.raises(TableNotFoundError) as get:
        s.get(Ghost, ghost_id="g")
    with pytest.raises(TableNotFoundError) as query:
        s.query(Ghost, ghost_id="g").all()
    s.save(Ghost(ghost_id="g"))
    with pytest.raises(TableNotFoundError) as put:
        s.commit()
    assert [e.value.operation for e in (get, query, put)] == ["GetItem", "Query", "PutItem"]
    for e in (get, query, put):
        assert e.value.code == "ResourceNotFoundException"
        assert "dynaorm-no-such-table" in str(e.value)
        assert isinstance(e.value, RequestError) and isinstance(e.value, DynaormError)


def test_no_connection_is_a_request_error() -> None:
    table = Table("dynaorm-nowhere", endpoint_url="http://127.0.0.1:9", max_attempts=2,
                  max_wait=0)
    with pytest.raises(RequestError) as err:
        table.exists()
    assert not isinstance(err.value, BotoCoreError)
    assert (err.value.operation, err.value.code) == ("DescribeTable", "ConnectionError")
    assert err.value.attempts == 2 and not err.value.maybe_applied


def test_scatter_threads_send_through_the_table_client(db: TestBackend, faults: Faults) -> None:
    """A query over a sharded key runs one thread per shard; every one of them sends
    through ``table.client`` (counted there), from threads that are not the caller's."""
    from tests.support.models import SEvent

    threads: set[int] = set()

    def seen(**_: Any) -> None:
        threads.add(threading.get_ident())

    faults._on("request-created.dynamodb.Query", seen)
    sent = faults.count("Query")
    with db.session() as s:
        for i in range(6):
            s.save(SEvent(day="d1", at=f"{i:02d}", event_id=f"e{i}"))
    assert len(list(db.session().query(SEvent, day="d1"))) == 6
    assert sent["Query"] == 3
    assert threads and threading.get_ident() not in threads


def test_a_malformed_endpoint_is_a_dynaorm_error() -> None:
    table = Table("dynaorm-bad-url", endpoint_url="localhost:8000", region="us-east-1")
    with pytest.raises(DynaormError) as err:
        table.exists()
    assert "localhost:8000" in str(err.value) and "dynaorm-bad-url" in str(err.value)
    assert not isinstance(err.value, RequestError)  # nothing could be sent
