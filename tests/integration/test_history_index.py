"""``Meta.history_index`` (0.2): an LSI holding each entity's version rows contiguously,
so a page of k versions reads about k items whatever else shares the partition."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import DynaormError, Entity
from dynaorm.testing import TestBackend
from tests.support.models import Audit, app
from tests.support.recording import Requests


class Inspection(Entity):
    class Meta:
        table = app
        pk = "SITE#{site}"
        sk = "{part}"
        versioned = True
        history_index = "lsi1"

    site: str
    part: str
    notes: str = ""
    version: int = 0


def _fill(db: TestBackend, cls: Any, key: str, parts: int, versions: int) -> None:
    s = db.session()
    objs = [cls(**{key: "E1"}, part=f"p{i:02d}") for i in range(parts)]
    for n in range(versions):
        for o in objs:
            o.notes = f"n{n}"
            s.save(o)
        s.commit()


def _read_items(db: TestBackend, run: Any) -> tuple[Any, int]:
    """``run()``'s result and the items its Query requests read (ScannedCount)."""
    rec = Requests(db.table)  # a hook on the table's client, for ``run()`` only
    try:
        out = run()
    finally:
        db.table.db.remove_hook(rec)
    return out, rec.items_read("Query")


def test_history_through_the_index_reads_about_k_items(db: TestBackend) -> None:
    _fill(db, Inspection, "site", parts=11, versions=6)
    _fill(db, Audit, "equipment_id", parts=11, versions=6)
    s = db.session()
    got, with_index = _read_items(db, lambda: s.history(
        Inspection, site="E1", part="p05").limit(5).all())
    assert [h.version for h in got] == [1, 2, 3, 4, 5]
    assert [h.notes for h in got] == ["n0", "n1", "n2", "n3", "n4"]
    rev = s.history(Inspection, site="E1", part="p05").reverse().limit(2).all()
    assert [h.version for h in rev] == [6, 5]
    audits, without = _read_items(db, lambda: s.history(
        Audit, equipment_id="E1", part="p05").limit(5).all())
    assert [h.version for h in audits] == [1, 2, 3, 4, 5]
    print(f"items read for history(...).limit(5) with 10 neighbour parts: "
          f"without history_index {without}, with {with_index}")
    assert with_index <= 6
    assert without > 5 * with_index


def test_a_recreated_entity_continues_the_history_its_index_holds(db: TestBackend) -> None:
    """The kept history a new object continues is found through ``Meta.history_index``
    too, whatever its neighbours' versions."""
    _fill(db, Inspection, "site", parts=3, versions=3)
    s = db.session()
    gone = s.get(Inspection, site="E1", part="p01")
    assert gone is not None and gone.version == 3
    s.delete(gone)
    s.commit()
    again = Inspection(site="E1", part="p01", notes="again")
    s.save(again)
    s.commit()
    assert again.version == 4
    assert [h.version for h in s.history(Inspection, site="E1", part="p01").all()] == [
        1, 2, 3, 4]


def test_history_index_rows_hold_only_versions(db: TestBackend) -> None:
    _fill(db, Inspection, "site", parts=1, versions=2)
    rows = db.scan()
    assert sorted((r["sk"], r.get("lsi1sk")) for r in rows) == [
        ("v00000001_p00", "p00#v00000001"), ("v00000002_p00", "p00#v00000002"),
        ("v0_p00", None)]


def test_history_index_must_be_an_lsi_of_a_versioned_entity() -> None:
    with pytest.raises(DynaormError, match="LSI"):
        class OnGsi(Entity):
            class Meta:
                table = app
                pk = "X#{x}"
                sk = "X"
                versioned = True
                history_index = "gsi1"

            x: str
    with pytest.raises(DynaormError, match="versioned"):
        class Plain(Entity):
            class Meta:
                table = app
                pk = "X#{x}"
                sk = "X"
                history_index = "lsi1"

            x: str
