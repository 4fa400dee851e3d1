"""Only the latest copy of a versioned entity takes part in secondary indexes."""

from __future__ import annotations

from dynaorm import Entity
from dynaorm.testing import TestBackend
from tests.support.models import app


class VDoc(Entity):
    class Meta:
        table = app
        pk = "VDOC#{doc_id}"
        sk = "DOC"
        versioned = True
        indexes = {
            "gsi1": ("OWNER#{owner}", "VDOC#{doc_id}"),
            "lsi1": ("VDOC#{doc_id}", "T#{title}"),
        }

    doc_id: str
    owner: str
    title: str


def test_index_queries_see_only_the_latest_copy(db: TestBackend) -> None:
    s = db.session()
    doc = VDoc(doc_id="d1", owner="ann", title="draft")
    for title in ("draft", "review", "final"):
        doc.title = title
        s.save(doc)
        s.commit()
    assert doc.version == 3
    by_owner = s.query(VDoc, index="gsi1", owner="ann").all()
    assert [(d.title, d.version) for d in by_owner] == [("final", 3)]
    by_title = s.query(VDoc, index="lsi1", doc_id="d1").all()
    assert [(d.title, d.version) for d in by_title] == [("final", 3)]
    rows = [i for i in db.scan_raw() if i["pk"]["S"] == "VDOC#d1"]
    assert len(rows) == 4  # v0_ plus three versions
    indexed = [i["sk"]["S"] for i in rows if "gsi1pk" in i or "lsi1sk" in i]
    assert indexed == ["v0_DOC"]
    assert [d.title for d in s.history(VDoc, doc_id="d1")] == ["draft", "review", "final"]
