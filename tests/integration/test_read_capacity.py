"""``Table(return_consumed_capacity=...)`` (contract 18, "Wire"): every request that takes
``ReturnConsumedCapacity`` asks for it, reads included, and the units come back in each
``RequestEvent`` (and the log record); the default leaves reads without it and writes at
``INDEXES``. On every engine, through both kinds of session."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dynaorm import DynaormError, RequestEvent, Table
from dynaorm.testing import TestBackend
from tests.support.models import Note

READS = ("GetItem", "Query", "Scan", "BatchGetItem")


#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


@pytest.fixture
def events(db: TestBackend) -> Iterator[list[RequestEvent]]:
    seen: list[RequestEvent] = []
    hook = db.table.on_request(seen.append)
    yield seen
    db.table._listeners.remove(hook)
    db.table.return_consumed_capacity = None


def _read_everything(db: TestBackend) -> None:
    s = db.session()
    s.save(Note(note_id="n1", body="a"))
    s.save(Note(note_id="n2", body="b"))
    s.commit()
    assert s.get(Note, note_id="n1") is not None
    assert len(s.query(Note, note_id="n2").all()) == 1
    assert len(s.scan(Note).all()) == 2
    assert len(s.get_many(Note, [{"note_id": "n1"}, {"note_id": "n2"}])) == 2


def test_reads_ask_for_nothing_by_default(db: TestBackend, events: list[RequestEvent]) -> None:
    _read_everything(db)
    reads = [e for e in events if e.operation in READS]
    assert {e.operation for e in reads} == set(READS)
    assert all("ReturnConsumedCapacity" not in e.request for e in reads)
    writes = [e for e in events if e.operation not in READS]
    assert writes and all(e.request["ReturnConsumedCapacity"] == "INDEXES" for e in writes)


@pytest.mark.parametrize("mode", ["TOTAL", "INDEXES"])
def test_every_read_and_write_asks_when_the_table_says(db: TestBackend,
                                                        events: list[RequestEvent],
                                                        mode: str) -> None:
    db.table.return_consumed_capacity = mode
    _read_everything(db)
    assert {e.operation for e in events} >= set(READS)
    assert all(e.request["ReturnConsumedCapacity"] == mode for e in events)
    for e in events:  # every engine answers with the units (a read of n items: > 0)
        if e.operation in ("GetItem", "Query", "Scan", "PutItem"):
            assert e.consumed_capacity.get(db.table.name, 0) > 0, e


def test_none_turns_the_writes_off_too(db: TestBackend, events: list[RequestEvent]) -> None:
    db.table.return_consumed_capacity = "NONE"
    s = db.session()
    s.save(Note(note_id="n1"))
    result = s.commit()
    assert result.consumed_capacity == {}
    assert [e.request["ReturnConsumedCapacity"] for e in events] == ["NONE"]


def test_a_bad_mode_is_refused() -> None:
    with pytest.raises(DynaormError, match="return_consumed_capacity"):
        Table("tbl", return_consumed_capacity="ALL")
    table = Table("tbl", return_consumed_capacity="TOTAL")
    assert table.return_consumed_capacity == "TOTAL"
    with pytest.raises(DynaormError, match="return_consumed_capacity"):
        table.return_consumed_capacity = "total"
