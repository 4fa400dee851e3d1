"""The vector way an export reads a full export's lines (``dynaorm.jobs.vector``: a batch
parsed by ``pyarrow.json``, each entity's columns made with Arrow casts) against the
per-row way (each line's attributes decoded, the model validating them, the values made
Arrow's): on batches of generated items of a varied entity, stored as dynaorm writes them
and otherwise (an attribute missing, ``NULL``, under another tag, an empty list, a
string), and on hand-picked edge cases (big and precise decimals, integers at 64 bits,
empty strings, unicode, nested lists and maps, sets, naive and UTC times). An entity's
rows of a batch the vector way reads give exactly the per-row way's Arrow table; a batch
holding any row the per-row way refuses (or would write otherwise) is never read the
vector way. The export's files and reports are the same with it on or off
(``test_an_export_is_the_same_with_the_vector_way_off``)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

pytest.importorskip("pyarrow", reason="dynaorm[export] is not installed")

import pyarrow as pa
import pyarrow.parquet as pq

from dynaorm import Entity, Table, Versioned
from dynaorm.jobs import export_parts
from dynaorm.jobs import exports as export_module
from dynaorm.jobs.arrow import table_of
from dynaorm.jobs.export_parts import RowReader
from dynaorm.jobs.vector import vector_decoder
from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.schema.rules.versioned import version_row, version_sk
from tests.equivalence.test_export_fast import CHANGES, WIDE, Wide, _changed, _plain
from tests.support.examples import examples
from tests.support.exports import dynamodb_json

vector_table = Table("dynaorm-export-vector", revision_attribute=None)


class Leaf(BaseModel):
    name: str
    at: datetime | None = None


class Edge(Entity):
    """Values at the edges of what the vector way reads."""

    class Meta:
        table = vector_table
        pk = "EDGE#{id}"
        sk = "E"
        type_name = "edge"

    id: str
    text: str = ""
    big: Decimal = Decimal("0")  # (decimal128(38, 18): 20 whole digits, 18 places)
    money: Decimal = Field(Decimal("0"), max_digits=12, decimal_places=2)
    n: int = 0
    f: float = 0.0
    maybe: str | None = None
    when: datetime | None = None
    grid: list[list[int]] = []
    leaves: list[Leaf] = []
    tags: set[str] = set()
    ids: set[int] = set()
    counts: dict[str, int] = {}


class Blob(Entity):
    """Fields the vector way does not read (binary): always per row."""

    class Meta:
        table = vector_table
        pk = "BLOB#{id}"
        sk = "B"
        type_name = "blob"

    id: str
    data: bytes = b""
    tags: set[str] = set()


class Note(Versioned):
    """A versioned entity: its latest copies the vector way, its version rows left out
    (or, with ``history=True``, per row)."""

    class Meta:
        table = vector_table
        pk = "NOTE#{id}"
        sk = "N"
        type_name = "note"

    id: str
    text: str = ""
    at: datetime | None = None


def _note(n: int, versions: int) -> list[dict[str, Any]]:
    """A note's stored rows: its latest copy (at version ``versions``) and version rows."""
    spec = spec_of(Note)
    latest = encode_entity(Note(id=f"n{n}", text=f"v{versions}", version=versions,
                                at=datetime(2026, 1, n + 1, tzinfo=UTC)), spec, version=0)
    latest["version"] = {"N": str(versions)}  # (as a save writes it: its version now)
    return [latest, *(version_row(spec, encode_entity(Note(id=f"n{n}", text=f"v{v}",
                                                           version=v), spec, version=0),
                                  version_sk("N", v)) for v in range(1, versions + 1))]


ENTITIES = (Wide, Edge, Blob)


def _line(item: dict[str, Any]) -> bytes:
    return json.dumps({"Item": dynamodb_json(item)}).encode()


def _per_row(cls: type[Entity], items: list[dict[str, Any]]) -> Any:
    """The per-row way's table of ``items`` (all ``cls``'s), or ``None`` where it refuses
    a row (counted, named: the vector way must not take that batch)."""
    reader = RowReader(spec_of(cls), decrypt=False)
    rows = [_plain(reader, item) for item in items]
    if any(isinstance(r, str) for r in rows):
        return None
    table, bad = table_of(reader.columns(), rows)  # type: ignore[arg-type]
    return None if bad else table


def _check(items: list[dict[str, Any]], entities: tuple[type[Entity], ...] = ENTITIES
           ) -> dict[str, tuple[Any, list[int]]]:
    """The vector way's answer for ``items`` as a batch, checked against the per-row way
    entity by entity."""
    decode = vector_decoder("_type", {spec_of(c).type_name: (c, spec_of(c)) for c in entities})
    assert decode is not None
    found, left_out = decode([_line(i) for i in items])
    assert "blob" not in found and left_out == []
    for cls in entities:
        name = spec_of(cls).type_name
        where = [n for n, i in enumerate(items) if i.get("_type") == {"S": name}]
        reference = _per_row(cls, [items[n] for n in where])
        if name not in found:
            continue
        assert reference is not None, f"{name}: the vector way took a batch the per-row way refuses"
        table, lines = found[name]
        assert lines == where
        assert table.schema == reference.schema
        assert table.equals(reference), (table.to_pylist(), reference.to_pylist())
        pq.write_table(table, pa.BufferOutputStream())  # (Parquet takes it: no null where a
        # column says none, under a null struct too)
    return found


@settings(max_examples=examples(150), deadline=None)
@given(objs=st.lists(WIDE, min_size=1, max_size=5), data=st.data())
def test_a_batch_the_vector_way_reads_equals_the_per_row_way(
        objs: list[Wide], data: st.DataObject) -> None:
    spec = spec_of(Wide)
    items, written = [], True
    for obj in objs:
        change = data.draw(CHANGES)
        attr = data.draw(st.sampled_from(["pk", "id", "group", "lbl", "n", "ratio", "price",
                                          "ok", "at", "day", "mood", "tags", "ids", "parts",
                                          "counts", "nums", "main", "note"]))
        items.append(_changed(encode_entity(obj, spec), attr, change))
        written = written and change == "as written"
    found = _check(items)
    if written and all(len(o.counts) <= 1 and abs(o.n) < 2 ** 63 for o in objs):
        assert "wide" in found, "lines as dynaorm writes them went per row"


EDGES = [
    Edge(id="e1"),
    Edge(id="e2", text="", big=Decimal("12345678901234567890.123456789012345678"),
         money=Decimal("9999999999.99"), n=2 ** 63 - 1, f=-0.0, maybe="",
         when=datetime(1, 1, 1, tzinfo=UTC)),
    Edge(id="e3", text="日本語 \u0301 \x00 🦆 \"quoted\" \\", big=Decimal("-0.000000000000000001"),
         money=Decimal("-0.01"), n=-(2 ** 63), f=1e-300, when=datetime(9999, 12, 31, 23, 59,
                                                                        59, 999999)),
    Edge(id="e4", grid=[[1, 2], [], [3]], leaves=[Leaf(name="a"), Leaf(
        name="", at=datetime(2026, 5, 6, 7, 8, 9, 10, tzinfo=UTC))], tags={"b", "a", "é", "Z"},
         ids={3, -1, 2}, counts={"only": 7}),
    Edge(id="e5", f=123456789.123456789, big=Decimal("1E+19"), money=Decimal("1.5"),
         counts={}),
]


def test_hand_picked_edges_read_the_same_either_way() -> None:
    items = [encode_entity(e, spec_of(Edge)) for e in EDGES]
    found = _check(items)
    assert found["edge"][1] == list(range(len(EDGES)))
    assert found["edge"][0].column("id").to_pylist() == [e.id for e in EDGES]


@pytest.mark.parametrize(("attr", "stored"), [
    ("big", {"N": "123456789012345678901"}),  # (21 whole digits: past decimal128(38, 18))
    ("big", {"N": "0.0000000000000000001"}),  # (19 places)
    ("money", {"N": "0.001"}),  # (more places than the field takes: pydantic refuses)
    ("money", {"N": "12345678901.5"}),  # (too many whole digits)
    ("n", {"N": "9223372036854775808"}),  # (past int64: the column refuses)
    ("n", {"N": "1.5"}), ("n", {"N": " 1"}), ("n", {"N": "1e3"}), ("f", {"N": "NaN"}),
    ("when", {"S": "2026-02-30T00:00:00+00:00"}), ("when", {"S": "0000-01-01T00:00:00Z"}),
    ("when", {"S": "2026-01-01T00:00:00+01:00"}), ("when", {"S": "2026-01-01T00:00:00.1234567Z"}),
    ("tags", {"SS": ["a", "a"]}), ("tags", {"L": [{"S": "a"}]}), ("tags", {"NULL": True}),
    ("ids", {"NS": ["1", "x"]}), ("counts", {"M": {"a": {"N": "1"}, "b": {"N": "2"}}}),
    ("counts", {"M": {"a": {"S": "1"}}}), ("grid", {"L": [{"L": [{"S": "1"}]}]}),
    ("leaves", {"L": [{"M": {}}]}), ("leaves", {"L": [{"NULL": True}]}), ("id", None),
    ("text", {"S": "a", "N": "1"}), ("text", {"NULL": True}), ("maybe", {"NULL": True}),
    ("maybe", None), ("counts", {"M": {}}), ("tags", {"L": []}), ("ids", {"L": []}),
])
def test_a_row_stored_otherwise_reads_the_same_either_way(attr: str, stored: Any) -> None:
    """Each changed row beside plain ones: the batch reads as the per-row way reads it
    (taken the vector way where it reads exactly, else per row: the failure counted)."""
    items = [encode_entity(e, spec_of(Edge)) for e in EDGES]
    if stored is None:
        del items[1][attr]
    else:
        items[1][attr] = stored
    _check(items)


def test_a_map_key_of_any_text_reads_the_vector_way() -> None:
    """A map's keys Arrow would read as a path (``.``, ``a.b``, ``[0]``) are its members'
    names all the same: the batch reads the vector way, as the per-row way reads it."""
    keys = [".", "a.b", "[0]", "x", ""]
    items = [encode_entity(Edge(id=f"e{n}", counts={k: n}), spec_of(Edge))
             for n, k in enumerate(keys)]
    found = _check(items)
    assert found["edge"][0].column("counts").to_pylist() == [[(k, n)] for n, k in
                                                              enumerate(keys)]


flat_table = Table("dynaorm-export-flat", revision_attribute=None)


class Flat(Entity):
    """No map field: the vector way's parse leaves out what it does not ask for."""

    class Meta:
        table = flat_table
        pk = "FLAT#{id}"
        sk = "F"
        type_name = "flat"

    id: str
    text: str = ""
    maybe: str | None = None
    tags: set[str] = set()
    leaves: list[Leaf] = []


FLATS = [Flat(id="f0"), Flat(id="f1", text="t", maybe="m", tags={"b", "a"}, leaves=[
    Leaf(name="x", at=datetime(2026, 1, 2, tzinfo=UTC)), Leaf(name="y")]), Flat(id="f2")]


@pytest.mark.parametrize(("attr", "stored"), [
    ("text", {"NULL": True}), ("text", {"NULL": False}), ("text", {"S": "a", "NULL": True}),
    ("maybe", {"NULL": True}), ("maybe", {"NULL": False}), ("maybe", {"S": "a", "NULL": True}),
    ("tags", {"NULL": True}), ("tags", {"SS": ["a"], "NULL": True}), ("leaves", {"NULL": True}),
    ("leaves", {"L": [{"M": {"name": {"NULL": True}}}]}),
    ("leaves", {"L": [{"M": {"name": {"S": "x"}, "at": {"NULL": True}}}]}),
    ("leaves", {"L": [{"M": {"name": {"S": "x"}, "at": {"NULL": False}}}]}),
])
@pytest.mark.parametrize("entities", [(Flat,), (Flat, Edge)], ids=["ignored", "inferred"])
def test_a_null_stored_anywhere_reads_the_same_either_way(
        attr: str, stored: Any, entities: tuple[type[Entity], ...]) -> None:
    """``NULL`` (an attribute's only member, or beside another) where a field takes
    ``None`` and where it takes none, at the top and in a nested model, whether the
    parse leaves out the members it does not ask for or infers them (an entity with a map
    field): read as the per-row way reads it. Only a field that takes ``None`` parses
    ``NULL``; another's reads as an attribute without its tag (per row)."""
    items = [encode_entity(f, spec_of(Flat)) for f in FLATS]
    items[1][attr] = stored
    found = _check(items, entities)
    plain = _check([encode_entity(f, spec_of(Flat)) for f in FLATS], entities)
    assert "flat" in plain  # (the batch as written: the vector way reads it)
    if attr != "maybe" and stored.get("NULL") is True and len(stored) == 1:
        assert "flat" not in found  # (a NULL where the field takes none: per row)


def test_a_batch_not_json_is_read_per_row() -> None:
    decode = vector_decoder("_type", {"edge": (Edge, spec_of(Edge))})
    assert decode is not None
    good = _line(encode_entity(EDGES[0], spec_of(Edge)))
    assert decode([good, b'{"Item": {"id": ']) == ({}, [])
    assert decode([good, b'{"Item": {"id": {"S": 5}}}']) == ({}, [])
    assert decode([good, b"[]"]) == ({}, [])
    assert list(decode([good])[0]) == ["edge"]


@pytest.mark.parametrize("history", [False, True])
def test_a_versioned_entity_s_latest_copies_read_the_vector_way(history: bool) -> None:
    """Its latest copies (``v0_...``) are its rows; its version rows are left out (their
    lines listed) without ``history``, else read per row (into the history dataset); a
    row holding a version row's own attributes, or no sort key as text: per row."""
    spec = spec_of(Note)
    decode = vector_decoder("_type", {"note": (Note, spec)}, "sk", history)
    assert decode is not None
    items = [*_note(0, 2), *_note(1, 0), *_note(2, 1)]
    found, left_out = decode([_line(i) for i in items])
    table, lines = found["note"]
    assert lines == [0, 3, 4] and left_out == ([] if history else [1, 2, 5])
    reader = RowReader(spec, decrypt=False)
    assert reader.vectored and not reader.fast
    reference, bad = table_of(reader.columns(), [reader.values(items[n]) for n in lines])
    assert not bad and table.equals(reference)
    assert table.column("version").to_pylist() == [2, 0, 1]
    odd = [dict(i) for i in items]
    odd[4].pop("sk")
    assert "note" not in decode([_line(i) for i in odd])[0]
    odd = [dict(i) for i in items]
    odd[1]["sk"] = {"N": "1"}
    assert decode([_line(i) for i in odd]) == ({}, [])
    assert vector_decoder("_type", {"note": (Note, spec)}) is None  # (no sort key named)


def test_an_export_is_the_same_with_the_vector_way_off(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A full export from S3 of mixed entities (one per row) and edge cases, with rows that
    do not fit: the same Parquet files and the same report with the vector way on or off."""
    from moto import mock_aws

    from dynaorm.jobs import export, run_local
    from dynaorm.jobs.export_files import s3_client
    from tests.support.exports import full_export

    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    items = [encode_entity(e, spec_of(Edge)) for e in EDGES]
    items += [encode_entity(Blob(id=f"b{n}", data=bytes([n, 0, 255]), tags={"x"}),
                            spec_of(Blob)) for n in range(3)]
    bad = encode_entity(Edge(id="bad"), spec_of(Edge))
    bad["n"] = {"N": "99999999999999999999"}
    items += [*_note(0, 2), *_note(1, 1)]
    with mock_aws():
        s3 = s3_client()
        s3.create_bucket(Bucket="vector")
        # (the bad row in the first file only: its edges are read per row, the second's
        # the vector way)
        records = [*items * 3, bad]
        url = full_export(s3, "vector", "full", records, files=2)
        # (the edges of the file without the bad row, and the notes' 6 latest copies)
        vectored = 6 + sum(r["_type"] == {"S": "edge"} for f in (records[0::2], records[1::2])
                           if bad not in f for r in f)
        reports, tables = {}, []
        add_table = export_parts.Part.add_table
        monkeypatch.setattr(export_parts.Part, "add_table", lambda part, table, report: (
            tables.append(table.num_rows), add_table(part, table, report))[-1])
        for history in (False, True):
            for on in (True, False):
                monkeypatch.setattr(export_module, "VECTOR", on)
                reports[on] = run_local(export(vector_table, tmp_path / f"{history}{on}",
                                               source=url, history=history))
                assert sum(tables) == (vectored if on else 0)
                tables.clear()
            assert reports[True] == reports[False]
            assert reports[True].rows == {"edge": 15, "blob": 9, "note": 6, **(
                {"note.history": 9} if history else {})}
            assert reports[True].skipped == (0 if history else 9)
            assert reports[True].failed == 1 and "'n'" in reports[True].failures[0]
            for name in ("edge", "blob", "note", *(("note.history",) if history else ())):
                parts = sorted((tmp_path / f"{history}True" / name).glob("*.parquet"))
                assert len(parts) == 2
                for part in parts:
                    other = tmp_path / f"{history}False" / name / part.name
                    assert pq.read_table(part).equals(pq.read_table(other)), (name, part)
