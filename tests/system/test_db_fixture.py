"""The suite's ``db`` fixture (tests/conftest.py) on DynamoDB Local and dynoxide: the
worker's table stands from one test to the next, and no test sees another's rows or its
changes to the table. (On moto each test has a new mock: nothing to share.)
"""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import Table
from dynaorm.rules import call
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import clear, shape
from tests.support.models import Audit, Note, User, app

pytestmark = [pytest.mark.sync_only,  # (the table's life: one path for sync and async)
              pytest.mark.engines("local", "dynoxide")]

#: the table a previous test of this module saw, by engine (``id`` of nothing: its
#: CreationDateTime and ARN, which a table made anew does not keep)
SEEN: dict[str, Any] = {}


def _rows(db: TestBackend) -> dict[str, list[dict[str, Any]]]:
    """Every item of the table and of each of its indexes (consistent where it can be)."""
    found = {"table": db.scan_raw()}
    for index in ("gsi1", "gsi2", "lsi1"):
        found[index] = app.db.driver.run(call("Scan", {
            "TableName": app.name, "IndexName": index})).get("Items", [])
    return found


def _fill(db: TestBackend) -> None:
    with db.session() as s:
        for i in range(30):  # (more than one BatchWriteItem of deletes)
            s.save(Note(note_id=f"n{i}", text="x"))
        s.save(User(username="ada", email="ada@example.com", org_id="o1"))
        s.save(Audit(equipment_id="e1", part="p1"))


def test_clear_leaves_no_item_in_the_table_or_any_index(db: TestBackend) -> None:
    _fill(db)
    assert len(db.scan_raw()) > 25 and _rows(db)["gsi1"]
    made = shape(app)
    clear(app)
    assert _rows(db) == {"table": [], "gsi1": [], "gsi2": [], "lsi1": []}
    assert shape(app) == made  # (items only: the table is the one made)


def test_shape_tells_a_changed_table_from_one_that_only_holds_items(
        db: TestBackend) -> None:
    made = shape(app)
    _fill(db)
    assert shape(app) == made
    app.db.driver.run(call("UpdateTimeToLive", {"TableName": app.name,
                                                "TimeToLiveSpecification": {
                                                    "Enabled": True,
                                                    "AttributeName": "expires"}}))
    assert shape(app) != made
    app.delete()
    assert shape(app) is None
    app.create()
    assert shape(app) != made  # (made anew: another CreationDateTime)


@pytest.mark.parametrize("turn", range(4))
def test_each_test_finds_the_table_empty_and_as_made(db: TestBackend, backend: str,
                                                     turn: int) -> None:
    """In turn, tests on one worker: each finds no row of the one before it (which left
    thirty and changed the table's TTL on odd turns) and, where the one before left the
    table as made, the same table (not made anew)."""
    assert _rows(db) == {"table": [], "gsi1": [], "gsi2": [], "lsi1": []}
    [ttl] = [app.db.driver.run(call("DescribeTimeToLive", {"TableName": app.name}))]
    assert ttl["TimeToLiveDescription"]["TimeToLiveStatus"] == "DISABLED"
    made = app.db.driver.run(call("DescribeTable", {"TableName": app.name}))["Table"][
        "CreationDateTime"]
    before = SEEN.get(backend)
    if before is not None and before[0] == turn - 1 and before[0] % 2 == 0:
        assert made == before[1]  # (reused: the same table, emptied)
    SEEN[backend] = (turn, made)
    _fill(db)
    if turn % 2:
        app.db.driver.run(call("UpdateTimeToLive", {"TableName": app.name,
                                                    "TimeToLiveSpecification": {
                                                        "Enabled": True,
                                                        "AttributeName": "expires"}}))


def test_a_test_that_leaves_the_table_standing(db: TestBackend) -> None:
    _fill(db)


def test_a_use_tables_of_the_same_table_in_a_test_without_db(backend: str) -> None:
    """(other modules' fixtures make and delete the suite's table by ``use_tables``: the
    table ``db`` left standing is gone when the next test asks for it)"""
    with use_tables(app, endpoint_url=backend, name_suffix=worker_suffix()) as tb, \
            tb.session() as s:
        s.save(Note(note_id="left"))
    assert not Table(app.name + worker_suffix(), endpoint_url=backend).exists()


def test_the_next_test_finds_the_table_made_anew(db: TestBackend) -> None:
    assert _rows(db) == {"table": [], "gsi1": [], "gsi2": [], "lsi1": []}
    _fill(db)
    assert len(db.scan_raw()) > 25
