"""Bulk reads and writes: ``get_many`` (BatchGetItem) and ``save_many`` (BatchWriteItem).

Unprocessed keys and items are provoked for real: a phase hook answers the first batch
requests by really sending only part of them and returning the rest as unprocessed, as
DynamoDB does under throttling, and the session has to retry until everything converged.

Also ``get_many(..., snapshot=True)`` as one TransactGetItems, and ``concurrency=`` of bulk
reads and writes (contract section 8, 0.2). A test that instruments the sync client (a
flaky hook that sends on its own, a fake sleep, thread barriers) is ``sync_only`` (see
conftest); the others also run through AsyncSession.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest
from botocore.exceptions import ConnectionClosedError

import dynaorm
from dynaorm import (
    BulkWriteError,
    ConcurrentModificationError,
    DynaormError,
    Entity,
    ItemTooLargeError,
    OutcomeUnknownError,
    RequestError,
    Session,
    TransactionTooLargeError,
)
from dynaorm.testing import TestBackend
from tests.support.faults import Faults, faults_on
from tests.support.models import Audit, EMsg, EReading, Note, User, app
from tests.support.raw import raw_get, raw_set
from tests.support.recording import FlakyBatches, Requests

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class BItem(Entity):
    class Meta:
        table = app
        pk = "BGROUP#{group}"
        sk = "ITEM#{n:04d}"

    group: str
    n: int
    label: str = ""
    note: str | None = None  # (absent from the stored item while None)


class Flaky(FlakyBatches):
    """Really processes only half of each of the first ``flaky`` batch requests and returns
    the other half as unprocessed (a phase hook on the table's client); records requests
    and, through the client's sync driver, the back-off sleeps."""

    def __init__(self, db: TestBackend, flaky: int) -> None:
        super().__init__(db.table, flaky)
        self.sleeps: list[float] = []
        self.client.driver.sleep = self.sleeps.append  # reset after the test by the suite


def flaky(db: TestBackend, rounds: int) -> Flaky:
    return Flaky(db, rounds)


def items(group: str, count: int, start: int = 0) -> list[BItem]:
    return [BItem(group=group, n=i, label=f"{group}-{i}") for i in range(start, start + count)]


def stored(db: TestBackend) -> list[dict[str, Any]]:
    return [i for i in db.scan() if i["_type"] == "BItem"]


@pytest.mark.sync_only
def test_save_many_writes_in_chunks_of_25(db: TestBackend) -> None:
    transport = flaky(db, 0)
    objs = items("g", 60)
    db.session().save_many(objs)
    # (0.2) chunks go out concurrently (concurrency=4): their order is not promised
    assert sorted((op, asked) for op, asked, _ in transport.batches) == [
        ("BatchWriteItem", 10), ("BatchWriteItem", 25), ("BatchWriteItem", 25)]
    assert sorted(i["n"] for i in stored(db)) == list(range(60))
    s = db.session()
    assert s.query(BItem, group="g").all() == objs


@pytest.mark.sync_only
def test_save_many_retries_unprocessed_items_until_converged(db: TestBackend) -> None:
    transport = flaky(db, 5)
    objs = items("g", 60)
    db.session().save_many(objs, concurrency=1)  # one at a time: rounds in order
    assert sorted(i["n"] for i in stored(db)) == list(range(60))
    # the first chunk of 25 needed several rounds: 25 -> 13 -> 7 -> 4 -> 2 -> 1 left
    rounds = [(asked, done) for _, asked, done in transport.batches]
    assert rounds[:6] == [(25, 12), (13, 6), (7, 3), (4, 2), (2, 1), (1, 1)]
    assert sum(done for _, done in rounds) == 60
    assert len(transport.sleeps) == 5  # one back-off before each retry round
    assert all(0 <= d <= db.table.db.policy.max_delay for d in transport.sleeps)


@pytest.mark.sync_only
def test_save_many_gives_up_when_nothing_converges(db: TestBackend) -> None:
    transport = flaky(db, 10_000)
    with pytest.raises(DynaormError, match="unprocessed"):
        db.session().save_many(items("g", 3))
    assert transport.sleeps  # it did back off between rounds


@pytest.mark.sync_only
def test_save_many_objects_are_persisted_and_duplicates_coalesce(db: TestBackend) -> None:
    s = db.session()
    a, b = BItem(group="g", n=1, label="first"), BItem(group="g", n=1, label="second")
    s.save_many([a, b, BItem(group="g", n=2)])
    assert [(i["n"], i["label"]) for i in stored(db)] == [(1, "second"), (2, "")]
    b.label = "edited"
    s.save(b)
    s.commit()  # an update of a persisted object, not a refused insert
    assert s.get(BItem, group="g", n=1) == b
    s.save_many([])
    assert len(stored(db)) == 2


def test_save_many_marks_every_object_of_a_repeated_key_persisted(db: TestBackend) -> None:
    s = db.session()
    first, last = EReading(device="d", ts=7, v=1), EReading(device="d", ts=7, v=2)
    s.save_many([first, last])
    assert dynaorm.inspect(first).persisted and dynaorm.inspect(last).persisted
    assert [i["v"] for i in db.scan()] == [2]
    s.save(first)  # an update back to v=1, not an insert that clashes
    s.commit()
    assert [i["v"] for i in db.scan()] == [1]


@pytest.mark.sync_only
def test_save_many_refuses_entities_with_rules(db: TestBackend) -> None:
    s = db.session()
    cases: list[list[Entity]] = [
        [User(username="ann", email="ann@example.com")],
        [Audit(equipment_id="E1", part="P1")],
        [Note(note_id="n1"), User(username="bo", email="bo@example.com")],
    ]
    for objs in cases:
        with pytest.raises(DynaormError, match=r"Session\.save") as err:
            s.save_many(objs)
        assert type(objs[-1]).__name__ in str(err.value)
    assert db.scan() == []  # nothing at all was written, not even the plain note


def test_save_many_refuses_an_oversized_item_before_writing(db: TestBackend) -> None:
    s = db.session()
    objs = [EMsg(room="r", date="d", time="1"), EMsg(room="r", date="d", time="x" * 500_000)]
    with pytest.raises(ItemTooLargeError, match="EMsg"):
        s.save_many(objs)
    assert db.scan_raw() == []


@pytest.mark.sync_only
def test_get_many_over_100_keys_in_input_order(db: TestBackend) -> None:
    db.session().save_many(items("g", 200))
    transport = flaky(db, 0)
    wanted = [*range(229, -1, -1), 5, 5, 250]  # 200 stored, 30 + 1 missing, duplicates
    got = db.session().get_many(BItem, [{"group": "g", "n": n} for n in wanted],
                                    concurrency=1)  # requests in order
    assert len(got) == len(wanted)
    for n, obj in zip(wanted, got, strict=True):
        if n < 200:
            assert obj == BItem(group="g", n=n, label=f"g-{n}")
        else:
            assert obj is None
    asked = [a for op, a, _ in transport.batches if op == "BatchGetItem"]
    assert asked == [100, 100, 31]  # 231 distinct keys, 100 a request


@pytest.mark.sync_only
def test_get_many_retries_unprocessed_keys_until_converged(db: TestBackend) -> None:
    s = db.session()
    s.save_many(items("g", 120))
    transport = flaky(db, 4)
    keys = [{"group": "g", "n": n} for n in range(0, 140, 2)]  # 60 present, 10 missing
    got = s.get_many(BItem, keys, consistent=True)
    assert [o.n if o else None for o in got] == [n if n < 120 else None for n in range(0, 140, 2)]
    rounds = [(asked, done) for op, asked, done in transport.batches if op == "BatchGetItem"]
    assert rounds == [(70, 35), (35, 17), (18, 9), (9, 4), (5, 5)]
    assert len(transport.sleeps) == 4


@pytest.mark.sync_only
def test_get_many_edge_cases(db: TestBackend) -> None:
    s = db.session()
    s.save_many(items("g", 3))
    s.save(Note(note_id="n1"))
    s.commit()
    assert s.get_many(BItem, []) == []
    assert s.get_many(BItem, [{"group": "h", "n": 1}]) == [None]
    loaded = s.get_many(BItem, [{"group": "g", "n": 2}])[0]
    assert loaded is not None
    loaded.label = "changed"
    s.save(loaded)
    s.commit()  # loaded objects are persisted
    assert s.get(BItem, group="g", n=2) == loaded
    assert s.get_many(Note, [{"note_id": "n1"}, {"note_id": "n2"}]) == [Note(note_id="n1"), None]


@pytest.mark.sync_only
def test_bulk_session_on_a_plain_session(db: TestBackend) -> None:
    """save_many and get_many work on any Session of the table, not only test helpers."""
    s = Session(app)
    s.save_many(items("p", 30))
    assert [o.n for o in s.get_many(BItem, [{"group": "p", "n": n} for n in (29, 0)]) if o] == [
        29, 0]


# -- get_many(snapshot=True) and concurrency= of bulk reads and writes ---------------------

NOTES = [Note(note_id=f"n{i:03d}", body=f"b{i}") for i in range(260)]


@pytest.fixture
def rec(db: TestBackend) -> Requests:
    # fresh objects: an object save_many persisted (in an earlier test) is loaded, and
    # saving it again unchanged sends nothing
    db.session().save_many([Note(**n.model_dump()) for n in NOTES])
    return Requests(db.table)


def test_snapshot_is_one_transact_get(db: TestBackend, rec: Requests) -> None:
    s = db.session()
    keys = [{"note_id": "n005"}, {"note_id": "nope"}, {"note_id": "n001"}, {"note_id": "n005"}]
    got = s.get_many(Note, keys, snapshot=True)
    assert got == [NOTES[5], None, NOTES[1], NOTES[5]]
    assert [op for op, _ in rec.calls] == ["TransactGetItems"]
    (request,) = rec.of("TransactGetItems")
    assert [g["Get"]["Key"]["pk"]["S"] for g in request["TransactItems"]] == [
        "NOTE#n005", "NOTE#nope", "NOTE#n001"]  # a repeated key is read once
    assert all(g["Get"]["TableName"] == db.table.name for g in request["TransactItems"])
    loaded = got[0]
    assert loaded is not None and dynaorm.inspect(loaded).persisted
    assert s.get_many(Note, [], snapshot=True) == []


def test_snapshot_of_100_distinct_items_and_no_more(db: TestBackend, rec: Requests) -> None:
    s = db.session()
    n = 100  # (plain moto refuses more than 25: dynaorm's test backend reads them all)
    keys = [{"note_id": note.note_id} for note in NOTES[:n]]
    assert s.get_many(Note, [*keys, *keys], snapshot=True) == [*NOTES[:n], *NOTES[:n]]
    assert len(rec.of("TransactGetItems")[0]["TransactItems"]) == n
    rec.clear()
    with pytest.raises(TransactionTooLargeError, match="101"):
        s.get_many(Note, [{"note_id": n.note_id} for n in NOTES[:101]], snapshot=True)
    assert rec.calls == []  # refused before anything was sent


@pytest.mark.sync_only
def test_get_many_sends_batches_concurrently(db: TestBackend, rec: Requests) -> None:
    s = db.session()
    keys = [{"note_id": n.note_id} for n in reversed(NOTES)]
    rec.expect_overlap(2)
    assert s.get_many(Note, keys) == NOTES[::-1]
    assert sorted(len(r["RequestItems"][db.table.name]["Keys"])
                  for r in rec.of("BatchGetItem")) == [60, 100, 100]
    assert rec.overlapped  # two batches were in flight at once
    rec.clear()
    rec.expect_overlap(2, timeout=0.5)  # the same check fails when batches go one by one
    assert s.get_many(Note, keys, concurrency=1) == NOTES[::-1]
    assert len(rec.threads) == 1 and rec.overlapped is False
    for bad in (0, 17, 2.0, True):
        with pytest.raises(DynaormError, match="concurrency"):
            s.get_many(Note, keys, concurrency=bad)  # type: ignore[arg-type]


@pytest.mark.sync_only
def test_save_many_sends_batches_concurrently(db: TestBackend, rec: Requests) -> None:
    s = db.session()
    more = [Note(note_id=f"m{i:03d}", body="x") for i in range(120)]
    rec.expect_overlap(3)
    s.save_many(more, concurrency=3)
    assert sorted(len(r["RequestItems"][db.table.name]) for r in rec.of("BatchWriteItem")) == [
        20, 25, 25, 25, 25]
    assert rec.overlapped  # three batches were in flight at once
    assert s.get_many(Note, [{"note_id": n.note_id} for n in more]) == more
    with pytest.raises(DynaormError, match="concurrency"):
        s.save_many(more, concurrency=0)


# -- (0.3) exact results and no lost updates -----------------------------------------------

def _load(db: TestBackend, *ns: int) -> list[BItem]:
    got = db.session().get_many(BItem, [{"group": "g", "n": n} for n in ns], consistent=True)
    assert all(o is not None for o in got)
    return [o for o in got if o is not None]


def _edit_elsewhere(db: TestBackend, n: int, label: str) -> None:
    """Another writer changes item ``n`` (its own session, its own load)."""
    with db.session() as other:
        obj = other.get(BItem, group="g", n=n, consistent=True)
        assert obj is not None
        obj.label = label
        other.save(obj)


def test_save_many_never_overwrites_a_newer_state_of_a_loaded_object(db: TestBackend) -> None:
    db.session().save_many(items("g", 3))
    a, b, c = _load(db, 0, 1, 2)
    _edit_elsewhere(db, 1, "theirs")  # b is stale now
    a.label, b.label = "mine-a", "mine-b"  # c unchanged: nothing to send for it
    fresh = BItem(group="g", n=9, label="new")
    with pytest.raises(BulkWriteError) as err:
        db.session().save_many([a, b, c, fresh])
    e = err.value
    assert (e.not_written, e.unknown) == ([b], [])
    assert sorted(o.n for o in e.written) == [0, 2, 9]
    ((obj, cause),) = e.errors
    assert obj is b and isinstance(cause, ConcurrentModificationError)
    assert {i["n"]: i["label"] for i in stored(db)} == {0: "mine-a", 1: "theirs", 2: "g-2",
                                                       9: "new"}
    assert dynaorm.inspect(fresh).persisted and dynaorm.inspect(a).persisted
    a.label = "again"  # a's state is the one it wrote: saving it again is an update
    with db.session() as s:
        s.save(a)
    assert _load(db, 0)[0].label == "again"


def test_save_many_of_loaded_objects_sends_only_changes(db: TestBackend) -> None:
    db.session().save_many(items("g", 2))
    a, b = _load(db, 0, 1)
    a.label = "changed"
    rec = Requests(db.table) if db.session_kind == "sync" else None
    db.session().save_many([a, b])
    if rec is not None:  # one UpdateItem for a, nothing for b, no BatchWriteItem
        assert [op for op, _ in rec.calls] == ["UpdateItem"]
    assert {i["n"]: i["label"] for i in stored(db)} == {0: "changed", 1: "g-1"}


def test_save_many_refuses_one_item_twice_when_one_is_loaded(db: TestBackend) -> None:
    db.session().save_many(items("g", 1))
    (a,) = _load(db, 0)
    with pytest.raises(DynaormError, match="twice"):
        db.session().save_many([a, BItem(group="g", n=0, label="other")])
    with pytest.raises(DynaormError, match="twice"):
        db.session().delete_many([a, a])
    assert [i["label"] for i in stored(db)] == ["g-0"]  # nothing sent


def test_delete_many_never_deletes_a_newer_state_of_a_loaded_object(db: TestBackend) -> None:
    db.session().save_many(items("g", 4))
    a, b, c = _load(db, 0, 1, 2)
    _edit_elsewhere(db, 1, "theirs")
    db.session().delete_many(BItem, [{"group": "g", "n": 2}])  # c is already gone
    with pytest.raises(BulkWriteError) as err:
        db.session().delete_many([a, b, c, BItem(group="g", n=3)])
    e = err.value
    assert (e.not_written, e.unknown) == ([b], [])
    assert sorted(o.n for o in e.written) == [0, 2, 3]
    ((obj, cause),) = e.errors
    assert obj is b and isinstance(cause, ConcurrentModificationError)
    assert cause.key == {"pk": "BGROUP#g", "sk": "ITEM#0001"}
    assert {i["n"]: i["label"] for i in stored(db)} == {1: "theirs"}
    assert dynaorm.inspect(a).deleted and dynaorm.inspect(c).deleted  # deleted, as asked
    assert dynaorm.inspect(b).persisted  # not written: as loaded


@pytest.mark.parametrize("attr", ["note", "newer_model_attr"])
def test_delete_many_never_deletes_an_attribute_set_after_the_load(
        db: TestBackend, attr: str) -> None:
    # (0.4) the condition covered only the attributes present at load: a value another
    # writer set where the loaded item had none (a declared field left out while None,
    # or an attribute only a newer model writes) was deleted with the row. (0.5) A newer
    # model's dynaorm writes its attribute with a fresh revision, as every dynaorm write
    # does: the one request's condition names the loaded revision (contract 20)
    db.session().save_many(items("g", 1))
    (a,) = _load(db, 0)
    key = {"pk": "BGROUP#g", "sk": "ITEM#0000"}
    newer = {"_rev": "a-newer-model-wrote"} if attr == "newer_model_attr" else {}
    raw_set(db.table, key, **{attr: "theirs"}, **newer)
    rec = Requests(db.table) if db.session_kind == "sync" else None
    with pytest.raises(BulkWriteError) as err:
        db.session().delete_many([a])
    assert (err.value.written, err.value.not_written) == ([], [a])
    if rec is not None:  # one request: no read first
        assert [op for op, _ in rec.calls] == ["DeleteItem"]
    stored_item = raw_get(db.table, key)
    assert stored_item is not None and stored_item[attr] == {"S": "theirs"}
    assert dynaorm.inspect(a).persisted


faults = pytest.fixture(faults_on, name="faults")


@pytest.mark.sync_only
def test_a_later_round_throttled_to_the_end_reports_exactly_what_was_written(
        db: TestBackend) -> None:
    refused = Faults(db.table)  # (first: it puts the table on botocore's wire)
    transport = flaky(db, 1)  # the first round processes half, returns half unprocessed
    refused.refuse("BatchWriteItem", after=1)  # every later attempt is throttled
    objs = items("g", 6)
    try:
        with pytest.raises(BulkWriteError) as err:
            db.session().save_many(objs, concurrency=1)
    finally:
        refused.clear()
    e = err.value
    assert e.written == objs[:3] and e.not_written == objs[3:] and e.unknown == []
    assert "3 written, 3 not written" in str(e)
    assert all(isinstance(c, RequestError) and c.code == "ThrottlingException"
               for _, c in e.errors)
    assert sorted(i["n"] for i in stored(db)) == [0, 1, 2]
    assert transport.batches[0] == ("BatchWriteItem", 6, 3)
    assert [dynaorm.inspect(o).persisted for o in objs] == [True] * 3 + [False] * 3
    with db.session() as s:  # saving them all again: updates and inserts, no ItemExistsError
        for o in objs:
            o.label = "again"
            s.save(o)
    assert {i["label"] for i in stored(db)} == {"again"}


@pytest.mark.sync_only
def test_unprocessed_to_the_last_round_is_not_written(db: TestBackend) -> None:
    flaky(db, 10_000)  # every round leaves half (rounded up) unprocessed
    objs = items("g", 3)
    with pytest.raises(BulkWriteError, match="unprocessed") as err:
        db.session().save_many(objs)
    e = err.value
    assert len(e.written) == 2 and len(e.not_written) == 1 and e.unknown == []
    assert sorted(i["n"] for i in stored(db)) == sorted(o.n for o in e.written)
    assert all(dynaorm.inspect(o).persisted for o in e.written)
    assert not dynaorm.inspect(e.not_written[0]).persisted


@pytest.mark.sync_only
def test_a_round_whose_answer_is_lost_is_unknown(db: TestBackend, faults: Faults) -> None:
    db.session().save_many(items("g", 30))
    sent = faults.count()
    faults.lose("BatchWriteItem", how="500")  # the first round of 25 applied, answer lost
    keys = [{"group": "g", "n": n} for n in range(30)]
    with pytest.raises(BulkWriteError) as err:
        db.session().delete_many(BItem, keys, concurrency=1)
    e = err.value
    assert e.unknown == keys[:25] and e.written == keys[25:] and e.not_written == []
    assert all(k is given for k, given in zip(e.unknown, keys, strict=False))  # as given
    assert sent["BatchWriteItem"] == 2  # the lost round was not resent
    assert stored(db) == []


@pytest.mark.sync_only
def test_a_lost_conditioned_write_of_a_loaded_object_is_unknown(db: TestBackend,
                                                               faults: Faults) -> None:
    db.session().save_many(items("g", 2))
    a, b = _load(db, 0, 1)
    a.label, b.label = "x", "y"
    answers = [0]

    def second_answer_lost(http_response: Any, **_: Any) -> None:
        answers[0] += 1
        if answers[0] == 2:  # b's answer arrives, a's (applied) is lost
            raise ConnectionClosedError(endpoint_url="injected")

    faults._on("after-call.dynamodb.UpdateItem", second_answer_lost)
    faults.refuse("UpdateItem", after=2, status=500, code="InternalServerError")
    # (0.3) a lost single-item write is read back, not resent: refused reads keep it unknown
    faults.refuse("GetItem")
    with pytest.raises(BulkWriteError) as err:
        db.session().save_many([b, a], concurrency=1)  # (one at a time, in order)
    e = err.value
    assert e.unknown == [a] and e.written == [b] and e.not_written == []
    assert isinstance(e.errors[0][1], OutcomeUnknownError)
    faults.clear()
    assert {i["n"]: i["label"] for i in stored(db)} == {0: "x", 1: "y"}  # a was applied
    assert dynaorm.inspect(b).persisted
    assert dynaorm.inspect(a).persisted  # a keeps its last known state


class _FakeTime:
    """A clock and a sleep for a client's budget and sync driver: a sleep of ``s`` seconds
    moves the clock to ``s`` after the time its thread last read (threads sleeping at once
    do not add up their sleeps)."""

    def __init__(self) -> None:
        self.now, self.read, self.lock = 0.0, threading.local(), threading.Lock()

    def clock(self) -> float:
        self.read.at = self.now
        return self.now

    def sleep(self, seconds: float) -> None:
        with self.lock:
            self.now = max(self.now, getattr(self.read, "at", self.now) + seconds)


class _Sent(dynaorm.Hook):
    """Each successful write attempt: (when it was sent, the units its answer consumed)."""

    def __init__(self, time: _FakeTime) -> None:
        self.time, self.sent = time, []

    def on_start(self, phase: Any) -> object:
        return self.time.now

    def on_end(self, phase: Any, token: Any) -> object:
        if isinstance(phase, dynaorm.Attempt) and phase.response is not None:
            used = phase.response.get("ConsumedCapacity") or [{}]
            self.sent.append((token, sum(c.get("CapacityUnits", 1.0) for c in used)))
        return None


@pytest.mark.sync_only  # (the sync driver's sleep)
def test_a_write_budget_holds_requests_sent_at_once(db: TestBackend) -> None:
    """(0.6, contract 20 "Capacity budgets") ``Rate(write=40)`` holds ``save_many``'s four
    batches in flight to 40 units a second (15% margin): each request is held its
    expected units (one an item) as it goes, settled by its answer. 0.5 let concurrent
    requests all go before any answer said what they cost (53 units a second over 400
    items on DynamoDB Local: four batches at once, then a pause)."""
    client, time = db.table.db, _FakeTime()
    client.rate = dynaorm.Rate(write=40)
    try:
        assert client.policy.budget is not None
        client.policy.budget.clock = time.clock
        client.driver.sleep = time.sleep
        sent = client.add_hook(_Sent(time)).sent
        db.session().save_many([Note(note_id=f"n{i:03}") for i in range(400)], concurrency=4)
    finally:
        client.rate = None
    assert len(sent) == 16 and len(db.scan_raw()) == 400
    last = max(at for at, _ in sent)  # every unit of the others was paid for by then
    units = sum(u for _, u in sent) - max(u for _, u in sent)
    assert units <= 40 * 1.15 * last
