"""A nested model's aliased field (``b: str | None = Field(None, alias="bee")``) reads
back on every read path (issue 59, point 1): a nested model's fields are stored under their
names (contract 14: field name = attribute name inside a nested model; its paths in
conditions use them), and were read back by alias only, so every read and export showed
``None``. Items written by 0.6 (the same names) and items holding the alias (a table
another program writes) both read back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import BaseModel, Field

from dynaorm import Entity, F, Session, Table
from dynaorm.protocol.steps import call
from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.testing import TestBackend
from tests.support.engines import on_engine

nests = Table("dynaorm-nested-alias")


class Inner(BaseModel):
    a: str
    b: str | None = Field(None, alias="bee")


class Doc(Entity):
    class Meta:
        table = nests
        pk = "DOC#{doc_id}"
        sk = "DOC"

    doc_id: str
    inner: Inner
    more: list[Inner] = []
    title: str = Field("", alias="ttl_text")


def _doc(i: str = "1") -> Doc:
    return Doc(doc_id=i, inner=Inner(a="x", bee="y"), more=[Inner(a="m", bee="n")],
               title="t")


@pytest.fixture
def tb(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, nests)


def test_the_nested_field_is_stored_under_its_name() -> None:
    item = encode_entity(_doc(), spec_of(Doc))
    assert item["inner"] == {"M": {"a": {"S": "x"}, "b": {"S": "y"}}}
    assert "ttl_text" in item  # (a top-level field: its alias, as before)


def test_every_read_path_gives_the_nested_value(tb: TestBackend) -> None:
    with Session(nests) as s:
        s.save(_doc("1"))
        s.save(_doc("2"))
    want = _doc("1")
    s = Session(nests)
    assert s.get(Doc, doc_id="1") == want
    assert s.query(Doc, doc_id="1").all() == [want]
    assert s.get_many(Doc, [{"doc_id": "1"}])[0] == want
    assert sorted(s.scan(Doc).all(), key=lambda d: d.doc_id)[0] == want
    assert s.query(Doc, doc_id="1").filter(F("inner.b") == "y").all() == [want]
    assert s.query(Doc, doc_id="1").values("inner") == [{"inner": Inner(a="x", bee="y")}]


def test_items_of_0_6_and_items_holding_the_alias_read_back(tb: TestBackend) -> None:
    """0.6 stored the name (``b``); another program may have stored the alias (``bee``)."""
    for i, attr in (("old", "b"), ("foreign", "bee")):
        nests.db.driver.run(call("PutItem", {"TableName": nests.name, "Item": {
            "pk": {"S": f"DOC#{i}"}, "sk": {"S": "DOC"}, "_type": {"S": "Doc"},
            "doc_id": {"S": i}, "inner": {"M": {"a": {"S": "x"}, attr: {"S": "y"}}}}}))
    s = Session(nests)
    for i in ("old", "foreign"):
        assert s.get(Doc, doc_id=i).inner == Inner(a="x", bee="y")  # type: ignore[union-attr]


def test_an_export_holds_the_nested_value(tb: TestBackend, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    pytest.importorskip("duckdb")
    from dynaorm.jobs import export, run_local
    from tests.support.exports import read_back

    with Session(nests) as s:
        s.save(_doc("1"))
    run_local(export(nests, tmp_path))
    rows = read_back(tmp_path, "Doc")
    assert [r["inner"] for r in rows] == [{"a": "x", "b": "y"}]
    assert [r["more"] for r in rows] == [[{"a": "m", "b": "n"}]]
