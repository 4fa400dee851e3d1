"""Rolling deploys (contract section 18, "Unknown attributes survive"): a newer model
version writes attributes an older class does not declare; the older class loads, edits and
saves through every write path; the newer class reads its attributes back intact.

Each pair is one class in two deploys: one name (two deploys never run in one process;
here they do, so the older version re-defines the class, as a reload does). The newer
version has extra fields (a scalar, a map, a set, a new GSI's keys), the older one not.
"""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import Entity, Unique
from dynaorm.testing import TestBackend
from tests.support.entities import entity_class
from tests.support.models import app

EXTRA: dict[str, Any] = {"extra_tag": "keep-me", "extra_map": {"a": [1, "two", {"b": None}]},
                         "extra_set": {"x", "y"}}


#: what the newer deploy of each class declares beside the older's fields
NEWER: dict[str, tuple[Any, Any]] = {"extra_tag": (str | None, None),
                                     "extra_map": (dict[str, Any] | None, None),
                                     "extra_set": (set[str] | None, None)}


def _deploys(name: str, meta: dict[str, Any], newer_meta: dict[str, Any] | None = None,
             **fields: tuple[Any, Any]) -> tuple[type[Entity], type[Entity]]:
    """Class ``name`` in its newer deploy (:data:`NEWER`'s fields, ``newer_meta`` beside
    ``meta``), then its older one (``fields`` alone), defined in that order."""
    newer = entity_class(name, {**meta, **(newer_meta or {})}, __name__, **fields, **NEWER)
    return newer, entity_class(name, meta, __name__, **fields)


#: the newer version: three fields and an index the older version does not know
DocNew, DocOld = _deploys("EvoDoc", {"table": app, "pk": "EVO#{doc_id}", "sk": "SLOT#{slot}"},
                          {"indexes": {"gsi2": ("TAG#{extra_tag}", "EVO#{doc_id}")}},
                          doc_id=(str, ...), slot=(str, "a"), title=(str, ""))
VDocNew, VDocOld = _deploys("EvoVDoc", {"table": app, "pk": "VEVO#{doc_id}", "sk": "DOC",
                                        "versioned": True},
                            doc_id=(str, ...), title=(str, ""))
UDocNew, UDocOld = _deploys("EvoUDoc", {"table": app, "pk": "UEVO#{doc_id}", "sk": "DOC",
                                        "unique": (Unique("email"),)},
                            doc_id=(str, ...), email=(str, ...), title=(str, ""))


def _extras_intact(obj: Any) -> None:
    assert obj is not None
    assert (obj.extra_tag, obj.extra_map, obj.extra_set) == (
        EXTRA["extra_tag"], EXTRA["extra_map"], EXTRA["extra_set"])


def _newer_writes(db: TestBackend) -> DocOld:
    with db.session() as s:
        s.save(DocNew(doc_id="d1", title="v1", **EXTRA))
    old = db.session().get(DocOld, doc_id="d1", slot="a", consistent=True)
    assert old is not None and old.title == "v1"
    return old


def _in_gsi2(db: TestBackend) -> list[str]:
    return [i["doc_id"] for i in db.scan() if i.get("gsi2pk") == "TAG#keep-me"]


@pytest.mark.parametrize("overwrite", [False, True], ids=["update", "overwrite"])
def test_plain_save_keeps_unknown_attributes(db: TestBackend, overwrite: bool) -> None:
    old = _newer_writes(db)
    s = db.session()
    for title in ("edited", "edited twice"):  # the second save plans from the first's state
        old.title = title
        s.save(old, overwrite=overwrite)
        s.commit()
        got = db.session().get(DocNew, doc_id="d1", slot="a", consistent=True)
        _extras_intact(got)
        assert got is not None and got.title == title
    assert _in_gsi2(db) == ["d1"]  # the newer class's index keys stay too


def test_key_move_keeps_unknown_attributes(db: TestBackend) -> None:
    old = _newer_writes(db)
    old.slot, old.title = "b", "moved"
    with db.session() as s:
        s.save(old)
    s = db.session()
    assert s.get(DocNew, doc_id="d1", slot="a", consistent=True) is None
    got = s.get(DocNew, doc_id="d1", slot="b", consistent=True)
    _extras_intact(got)
    assert got is not None and got.title == "moved"


def test_save_many_of_loaded_objects_keeps_unknown_attributes(db: TestBackend) -> None:
    old = _newer_writes(db)
    old.title = "bulk"
    db.session().save_many([old])
    got = db.session().get(DocNew, doc_id="d1", slot="a", consistent=True)
    _extras_intact(got)
    assert got is not None and got.title == "bulk"
    old.title = "bulk again"  # from the state the bulk write left
    db.session().save_many([old])
    _extras_intact(db.session().get(DocNew, doc_id="d1", slot="a", consistent=True))


@pytest.mark.parametrize("overwrite", [False, True], ids=["save", "overwrite"])
def test_versioned_save_keeps_unknown_attributes(db: TestBackend, overwrite: bool) -> None:
    with db.session() as s:
        s.save(VDocNew(doc_id="v", title="one", **EXTRA))
    old = db.session().get(VDocOld, doc_id="v", consistent=True)
    assert old is not None
    s = db.session()
    for title in ("two", "three"):
        old.title = title
        s.save(old, overwrite=overwrite)
        s.commit()
    got = db.session().get(VDocNew, doc_id="v", consistent=True)
    _extras_intact(got)
    assert got is not None and (got.title, got.version) == ("three", 3)  # type: ignore[attr-defined]
    for n in (1, 2, 3):  # every version row is the whole item of its version
        _extras_intact(db.session().get(VDocNew, doc_id="v", version=n))
    old.title = "three"  # nothing changed: no new version
    with db.session() as s:
        s.save(old)
    assert db.session().get(VDocNew, doc_id="v").version == 3  # type: ignore[union-attr]


def test_unique_entity_save_and_overwrite_keep_unknown_attributes(db: TestBackend) -> None:
    with db.session() as s:
        s.save(UDocNew(doc_id="u", email="a@x", title="one", **EXTRA))
    old = db.session().get(UDocOld, doc_id="u", consistent=True)
    assert old is not None
    old.email, old.title = "b@x", "two"  # a guard moves with the update
    with db.session() as s:
        s.save(old)
    old.title = "three"
    with db.session() as s:
        s.save(old, overwrite=True)
    got = db.session().get(UDocNew, doc_id="u", consistent=True)
    _extras_intact(got)
    assert got is not None and (got.email, got.title) == ("b@x", "three")
    assert db.session().find(UDocNew, email="b@x") == got


def test_staged_update_keeps_unknown_attributes(db: TestBackend) -> None:
    """``s.update()`` of a plain entity only SETs; one of a versioned or unique entity is
    planned as a save of the item it reads: both keep what they do not declare."""
    _newer_writes(db)
    with db.session() as s:
        s.save(VDocNew(doc_id="v", title="one", **EXTRA))
        s.save(UDocNew(doc_id="u", email="a@x", **EXTRA))
    with db.session() as s:
        s.update(DocOld, doc_id="d1", slot="a").set(title="staged")
        s.update(VDocOld, doc_id="v").set(title="staged")
        s.update(UDocOld, doc_id="u").set(email="b@x")
    read = db.session()
    for got in (read.get(DocNew, doc_id="d1", slot="a", consistent=True),
                read.get(VDocNew, doc_id="v", consistent=True),
                read.get(UDocNew, doc_id="u", consistent=True)):
        _extras_intact(got)
