"""Stored type names that no class claims (a renamed class): never invisible. A query
counts such items in ``Page.skipped``, a read that meets one logs one WARNING naming the
fix, and ``dynaorm check`` lists them with a count. (The pure side: dynaorm.schema.unclaimed.)"""

from __future__ import annotations

import itertools
import json
import logging
from pathlib import Path
from typing import Any

import pytest

from dynaorm import Entity, ItemExistsError, Previous, Table
from dynaorm.cli.main import main
from dynaorm.jobs.audit import audit_items
from dynaorm.jobs.checking import check_table
from dynaorm.jobs.checkpoint import CheckpointError
from dynaorm.schema import unclaimed
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.models import EMsg, Note
from tests.support.recording import send


def _put_renamed(db: TestBackend, note_id: str, type_name: str = "OldNote") -> None:
    """An item a class named ``type_name`` stored before it was renamed to ``Note``."""
    item: dict[str, Any] = {"pk": {"S": f"NOTE#{note_id}"}, "sk": {"S": "NOTE"},
                            "_type": {"S": type_name}, "note_id": {"S": note_id},
                            "body": {"S": "kept"}}
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": item})


@pytest.fixture(autouse=True)
def _fresh_warnings() -> None:
    unclaimed._warned.clear()


def test_query_counts_items_of_an_unclaimed_type_name(db: TestBackend,
                                                      caplog: pytest.LogCaptureFixture
                                                      ) -> None:
    _put_renamed(db, "n1")
    with caplog.at_level(logging.WARNING, logger="dynaorm"):
        s = db.session()
        page = s.query(Note, note_id="n1").page()
    assert page.items == []
    assert page.skipped == 1
    warned = [r.getMessage() for r in caplog.records if "no class claims" in r.getMessage()]
    assert len(warned) == 1
    assert "'OldNote'" in warned[0] and "type_name = 'OldNote'" in warned[0]


def test_iterating_a_query_warns_of_an_unclaimed_type_name(db: TestBackend,
                                                          caplog: pytest.LogCaptureFixture
                                                          ) -> None:
    """Iteration takes the read path that validates an answer's bytes on dynaorm's own
    wire: an item whose type name no class claims still comes to light (it left such
    items out before anything looked at them)."""
    with db.session() as s:
        s.save(EMsg(room="r9", date="d1", time="t1"))
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": {
        "pk": {"S": "EROOM#r9"}, "sk": {"S": "DATE#d2#TIME#t2"}, "_type": {"S": "OldMsg"},
        "room": {"S": "r9"}, "date": {"S": "d2"}, "time": {"S": "t2"}}})
    with caplog.at_level(logging.WARNING, logger="dynaorm"):
        found = db.session().query(EMsg, room="r9").all()
    assert [(m.date, m.time) for m in found] == [("d1", "t1")]
    warned = [r.getMessage() for r in caplog.records if "no class claims" in r.getMessage()]
    assert len(warned) == 1 and "'OldMsg'" in warned[0]


def test_get_and_get_many_warn_once_per_type_name(db: TestBackend,
                                      caplog: pytest.LogCaptureFixture) -> None:
    _put_renamed(db, "n2")
    _put_renamed(db, "n3")
    with caplog.at_level(logging.WARNING, logger="dynaorm"):
        s = db.session()
        assert s.get(Note, note_id="n2") is None
        assert s.get(Note, note_id="n3") is None
        assert s.get_many(Note, [{"note_id": "n2"}, {"note_id": "n3"}]) == [None, None]
    warned = [r for r in caplog.records if "no class claims" in r.getMessage()]
    assert len(warned) == 1


def test_claimed_names_are_not_skipped(db: TestBackend) -> None:
    with db.session() as s:
        s.save(Note(note_id="n4", body="x"))
    page = db.session().query(Note, note_id="n4").page()
    assert [n.note_id for n in page.items] == ["n4"]
    assert page.skipped == 0


@pytest.mark.sync_only
def test_audit_reports_unclaimed_type_names(db: TestBackend) -> None:
    _put_renamed(db, "n5")
    problems = audit_items(db.table, db.scan_raw())
    found = [p for p in problems if p.kind == "unclaimed-type"]
    assert [p.key for p in found] == [("NOTE#n5", "NOTE")]
    assert not found[0].repairable
    assert "type_name = 'OldNote'" in found[0].detail


@pytest.mark.sync_only
def test_check_command_lists_unclaimed_names_with_counts(
        db: TestBackend, capsys: pytest.CaptureFixture[str]) -> None:
    _put_renamed(db, "n6")
    _put_renamed(db, "n7")
    _put_renamed(db, "n8", type_name="Gone")
    args = ["check", "tests.support.models:app"]
    if db.endpoint_url:
        args += ["--endpoint-url", db.endpoint_url]
    code = main(args)
    text = capsys.readouterr().out
    assert code != 0
    assert "type name 'OldNote' is claimed by no class: 2 item(s)" in text
    assert "type name 'Gone' is claimed by no class: 1 item(s)" in text


def test_an_insert_over_an_unclaimed_item_says_why(db: TestBackend) -> None:
    _put_renamed(db, "n9")
    s = db.session()
    s.save(Note(note_id="n9"))
    with pytest.raises(ItemExistsError, match="type name 'OldNote', which no class claims"):
        s.commit()


#: a table of its own: the classes a test defines on it claim type names for good
later = Table("type-names-later")
_runs = itertools.count()


class Kept(Entity):
    class Meta:
        table = later
        pk = "KEPT#{k}"
        sk = "ITEM#{i}"

    k: str
    i: str


def test_a_class_defined_later_claims_its_names_for_reads_already_made(
        backend: str | None) -> None:
    """A query's Selection is kept per kind of read (``read.selections``): a class defined
    after it, claiming a type name by its own or by ``Meta.previous``, is seen by the next
    read as by a read made afresh (its items are another type's, not skipped)."""
    run = next(_runs)
    names = (f"LaterOwn{run}", f"LaterRetired{run}")
    with use_tables(later, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        with tb.session() as s:
            s.save(Kept(k="k", i="0"))
        for n, name in enumerate(names, 1):
            send(later, "PutItem", {"TableName": later.name, "Item": {
                "pk": {"S": "KEPT#k"}, "sk": {"S": f"ITEM#{n}"}, "_type": {"S": name},
                "k": {"S": "k"}, "i": {"S": str(n)}}})

        def read() -> tuple[list[str], int]:
            page = tb.session().query(Kept, k="k").page()
            return [x.i for x in page.items], page.skipped

        assert read() == (["0"], 2)

        class LaterOwn(Entity):
            class Meta:
                table = later
                type_name = names[0]
                pk = "LATER#{x}"
                sk = "OWN"

            x: str

        assert read() == (["0"], 1)

        class LaterRetiring(Entity):
            class Meta:
                table = later
                type_name = f"LaterNew{run}"
                pk = "LATER#{x}"
                sk = "NEW"
                previous = Previous(type_name=names[1])

            x: str

        assert read() == (["0"], 0)


@pytest.mark.sync_only
def test_a_resumed_check_counts_unclaimed_names_of_its_earlier_runs(
        db: TestBackend, tmp_path: Path) -> None:
    """The counts of the summary are kept with the checkpoint: a run stopped after any
    page (or after every page) and resumed reports every unclaimed item once, whichever
    run found it, as a run never stopped does."""
    for n in range(4):
        _put_renamed(db, f"r{n}")
    _put_renamed(db, "r4", type_name="Gone")
    whole = check_table(db.table, page_size=2)
    assert whole.unclaimed == {"OldNote": 4, "Gone": 1}
    pages = -(-whole.scanned // 2)
    for stops in [{k} for k in range(1, pages)] + [set(range(1, pages))]:
        checkpoint = tmp_path / f"check-{min(stops)}-{len(stops)}.json"
        left, runs = set(stops), 0

        def stop_at(scanned: int, path: Path = checkpoint, left: set[int] = left) -> None:
            state = json.loads(path.read_text())  # (written before each call)
            if state["pages"] in left:
                left.discard(state["pages"])
                assert sum(state["unclaimed"].values()) <= scanned
                raise KeyboardInterrupt

        while True:
            runs += 1
            try:
                result = check_table(db.table, checkpoint=checkpoint, page_size=2,
                                     progress=stop_at)
            except KeyboardInterrupt:
                continue
            break
        assert runs > 1 and result.resumed, stops
        assert result.unclaimed == whole.unclaimed, stops
        assert result.problems == whole.problems, stops


@pytest.mark.sync_only
def test_a_checkpoint_with_unclaimed_counts_that_are_not_counts_is_refused(
        db: TestBackend, tmp_path: Path) -> None:
    path = tmp_path / "edited.json"
    for bad in ({"OldNote": "2"}, {"OldNote": True}, ["OldNote"]):
        path.write_text(json.dumps({"table": db.table.name, "repair": False, "scanned": 1,
                                    "unclaimed": bad}))
        with pytest.raises(CheckpointError, match="not a dynaorm check checkpoint"):
            check_table(db.table, checkpoint=path)
