"""dynaorm's own rows -- exactly-once receipts and AWS Lambda Powertools idempotency
records -- are never an entity of any table, typed or not (contract 23, issue 68): on a
table without a type attribute whose entities' key templates are single fields
(``"{id}"``/``"{kind}"``, which fit any text), a receipt's or a Powertools record's key
fits the templates, yet no read (scan, query, get, batch get), export, stream change or
``dynaorm check`` takes it for an entity, nor counts it as an item nobody claims. A key
template that would render the reserved ``dynaorm:`` prefix is refused when the entity is
defined, and a key value that renders an own row's key when it is written. The same rows
on a typed table: ``tests/integration/test_idempotency.py``, ``test_powertools.py``."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig, idempotent

from dynaorm import GSI, Entity, KeyTemplateError, Table
from dynaorm.jobs.checking import check_table
from dynaorm.powertools import POWERTOOLS_TYPE, DynaormPersistenceLayer
from dynaorm.schema.rules.receipts import RECEIPT_TYPE, own_row
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import session_kind, wire_of

#: keys of this run (DynamoDB Local keeps transaction tokens ten minutes across tables)
RUN = uuid.uuid4().hex[:8]

#: (an index: an own row taken for an entity would be a stale index entry to ``check``)
plain = Table("own-rows", pk="pk", sk="sk", type_attribute=None,
              indexes=[GSI("by_status", pk="gpk", sk="gsk")])
flat = Table("own-rows-flat", pk="id", sk=None, type_attribute=None,
             indexes=[GSI("by_status", pk="gpk")])
typed = Table("own-rows-typed", pk="pk", sk="sk")


class Thing(Entity):
    """Any item of the table fits its key templates (each exactly one field)."""

    class Meta:
        table = plain
        pk = "{id}"
        sk = "{kind}"
        indexes = {"by_status": ("STATUS#{status}", "{id}")}

    id: str
    kind: str
    body: str = ""
    status: str = "new"


class Tag(Entity):
    class Meta:
        table = plain
        pk = "TAG#{name}"
        sk = "TAG"

    name: str


class Flat(Entity):
    class Meta:
        table = flat
        pk = "{id}"
        indexes = {"by_status": ("STATUS#{status}", None)}

    id: str
    body: str = ""
    status: str = "new"


class Typed(Entity):
    class Meta:
        table = typed
        pk = "{id}"
        sk = "{kind}"

    id: str
    kind: str
    body: str = ""


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(plain, flat, typed, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        if session_kind(request) == "async":
            tb.session_kind = "async"
        yield tb


class _Context:
    """The parts of a Lambda context Powertools reads."""

    function_name = "handler"
    memory_limit_in_mb = 128
    invoked_function_arn = "arn:aws:lambda:us-east-1:123456789012:function:handler"
    aws_request_id = "req-1"

    def get_remaining_time_in_millis(self) -> int:
        return 30_000


def _powertools_record(table: Table) -> None:
    """One completed Powertools idempotency record in ``table``."""
    @idempotent(persistence_store=DynaormPersistenceLayer(table),
                config=IdempotencyConfig(event_key_jmespath="order_id"))
    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"done": event["order_id"]}

    assert handler({"order_id": f"o-{RUN}"}, _Context()) == {"done": f"o-{RUN}"}


def _own_rows(db: TestBackend, table: Table, obj: Entity) -> list[dict[str, Any]]:
    """A keyed commit of ``obj`` and a Powertools record in ``table``: the stored own
    rows (a receipt, a record), as raw items."""
    s = db.session(table)
    s.save(obj)
    s.commit(idempotency_key=f"k-{db.session_kind}-{RUN}")
    _powertools_record(table)
    rows = [i for i in db.scan_raw(table) if own_row(table, i)]
    prefixes = sorted(i[table.pk]["S"].split("#")[0] for i in rows)
    assert prefixes == [POWERTOOLS_TYPE, RECEIPT_TYPE]  # (the rows are there)
    assert len(db.scan_raw(table)) == 3
    return rows


def _key(table: Table, item: dict[str, Any]) -> dict[str, Any]:
    return {a: item[a]["S"] for a in (table.pk, table.sk) if a}


def test_no_read_takes_an_own_row_for_an_entity(db: TestBackend) -> None:
    rows = _own_rows(db, plain, Thing(id="t1", kind="a", body="x"))
    s = db.session(plain)
    assert [(t.id, t.kind) for t in s.scan(Thing).all()] == [("t1", "a")]
    assert [type(o).__name__ for o in s.scan(Thing, Tag).all()] == ["Thing"]
    page = s.scan(Thing).page()
    assert [t.id for t in page.items] == ["t1"] and page.skipped == 0
    assert s.scan(Thing).count() == 1 and s.scan(Thing, Tag).page().skipped == 0
    assert s.scan(Thing).values("id") == [{"id": "t1"}]
    assert [t.id for t in s.query(Thing, index="by_status", status="new").all()] == ["t1"]
    for row in rows:
        key = _key(plain, row)
        assert s.query(Thing, id=key["pk"]).all() == []
        assert s.query(Thing, id=key["pk"]).page().skipped == 0
        assert s.query(Thing, id=key["pk"]).count() == 0
        fields = {"id": key["pk"], "kind": key["sk"]}
        for read, args, options in ((s.get, (), fields),
                                    (s.get, (), {**fields, "consistent": True}),
                                    (s.get_many, ([fields],), {}),
                                    (s.get_many, ([fields],), {"snapshot": True})):
            with pytest.raises(KeyTemplateError, match="reserved") as refused:
                read(Thing, *args, **options)  # (an own row's key is no entity's: refused)
            assert refused.value.field == "id"
    assert s.get_many(Thing, [{"id": "t1", "kind": "a"}]) == [
        Thing(id="t1", kind="a", body="x")]


def test_no_read_takes_an_own_row_for_an_entity_of_a_table_without_a_sort_key(
        db: TestBackend) -> None:
    rows = _own_rows(db, flat, Flat(id="f1", body="x"))
    s = db.session(flat)
    assert [f.id for f in s.scan(Flat).all()] == ["f1"]
    assert s.scan(Flat).page().skipped == 0
    for row in rows:
        assert s.query(Flat, id=row["id"]["S"]).all() == []
        with pytest.raises(KeyTemplateError, match="reserved"):
            s.get(Flat, id=row["id"]["S"])


def _records(table: Table, items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stream records of each stored item: inserted (new image), removed (old image),
    and removed as a keys-only stream view tells it."""
    out: list[dict[str, Any]] = []
    for item in items:
        keys = {a: item[a] for a in (table.pk, table.sk) if a}
        for name, section in (("INSERT", {"Keys": keys, "NewImage": item}),
                              ("REMOVE", {"Keys": keys, "OldImage": item}),
                              ("REMOVE", {"Keys": keys})):
            out.append({"eventName": name, "eventID": str(len(out)), "dynamodb": section})
    return out


@pytest.mark.parametrize("which", ["plain", "flat", "typed"])
def test_an_own_row_is_no_stream_change(db: TestBackend, which: str) -> None:
    """Neither an image nor a keys-only record of an own row is a change, on a table
    with a type attribute or without one (a keys-only record carries no type name)."""
    from dynaorm.powertools import changes

    table, obj = {"plain": (plain, Thing(id="t1", kind="a")), "flat": (flat, Flat(id="f1")),
                  "typed": (typed, Typed(id="t1", kind="a"))}[which]
    rows = _own_rows(db, table, obj)
    assert list(table.changes(_records(table, rows))) == []
    for record in _records(table, rows):
        assert changes(record, table) is None
    entity = [i for i in db.scan_raw(table) if not own_row(table, i)]
    assert [c.entity for c in table.changes(_records(table, entity))] == [type(obj)] * 3


@pytest.mark.parametrize("which", ["plain", "flat"])
def test_check_finds_nothing_in_own_rows(db: TestBackend, which: str) -> None:
    """An own row taken for the entity would lack the entity's index keys: a stale index
    entry, which ``--fix`` would write into the receipt."""
    table, obj = {"plain": (plain, Thing(id="t1", kind="a")),
                  "flat": (flat, Flat(id="f1"))}[which]
    rows = _own_rows(db, table, obj)
    result = check_table(table)
    assert result.problems == [] and result.unclaimed == {} and result.scanned == 3
    assert check_table(table, fix=True).repaired == 0
    assert [i for i in db.scan_raw(table) if own_row(table, i)] == rows


@pytest.mark.sync_only  # (an export's tasks run on threads)
def test_an_export_writes_no_own_row(db: TestBackend, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="dynaorm[export] is not installed")
    pytest.importorskip("duckdb", reason="the dev group's duckdb reads the datasets back")
    from dynaorm.jobs import export, run_local
    from tests.support.exports import read_back

    _own_rows(db, plain, Thing(id="t1", kind="a", body="x"))
    report = run_local(export(plain, tmp_path))
    assert report.rows == {"Thing": 1, "Tag": 0} and report.unclaimed == {}
    assert report.failed == 0 and report.scanned == 3
    assert [(r["id"], r["kind"]) for r in read_back(tmp_path, "Thing")] == [("t1", "a")]


# -- the reserved prefix ---------------------------------------------------------------------
@pytest.mark.parametrize("template", ["dynaorm:receipt#{x}", "dynaorm:{x}", "dynaorm:x",
                                      "dynaorm:idempotency#{x}#A"])
def test_a_key_template_of_the_reserved_prefix_is_refused(template: str) -> None:
    with pytest.raises(KeyTemplateError, match="dynaorm:"):
        class Bad(Entity):
            class Meta:
                table = Table("x-own-rows-reserved")
                pk = template
                sk = "A"

            x: str = "1"


@pytest.mark.parametrize("value", [f"{RECEIPT_TYPE}#abc", f"{POWERTOOLS_TYPE}#f#abc"])
def test_a_key_value_rendering_an_own_row_s_key_is_refused(
        db: TestBackend, value: str) -> None:
    """``{id}`` takes any text, '#' included, but never an own row's key: such an item
    would overwrite a receipt or a Powertools record, or forge one."""
    s = db.session(plain)
    with pytest.raises(KeyTemplateError, match="reserved"):
        s.save(Thing(id=value, kind=value))
        s.commit()
    s = db.session(flat)
    with pytest.raises(KeyTemplateError, match="reserved"):
        s.save(Flat(id=value))
        s.commit()
    assert db.scan_raw(plain) == [] and db.scan_raw(flat) == []
