"""The analytics lake (contract 22): ``jobs.export(..., format="iceberg")`` makes each entity
an Iceberg table ``<namespace>.<type name>`` in a local pyiceberg SQL catalog (sqlite),
from a live scan (every engine) and from DynamoDB full and incremental exports in moto's
S3 (both view types), read back by pyiceberg, DuckDB and Polars equal to what reads return.
A full export replaces the rows in one commit; an incremental one applies its changes by
key in one commit, once (applied twice: nothing changes; out of order: refused, nothing
changes); a field the model gained is a new column; two merges at once never lose a
change (the loser applies again on top, or fails cleanly after its retries); a job whose
task was killed commits nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyiceberg", reason="dynaorm[lake] is not installed")
pytest.importorskip("duckdb", reason="the dev group's duckdb reads the tables back")

from dynaorm import Entity, Session, Table
from dynaorm.errors import DynaormError
from dynaorm.jobs import ExportError, export, run_local
from dynaorm.jobs.export_files import s3_client
from dynaorm.lake import LakeError
from dynaorm.lake import iceberg as lake_module
from dynaorm.schema.entity import spec_of
from dynaorm.testing import TestBackend, moto_backend, use_tables, worker_suffix
from tests.support import export_setup
from tests.support.concurrency import join_all
from tests.support.examples import examples
from tests.support.export_models import Ledger, Profile, exports
from tests.support.export_setup import (
    ENCRYPTED,
    JSON_FIELDS,
    KINDS,
    WHEN,
    KillAtScan,
    Killed,
    any_model,
    fill_exports,
    prop,
)
from tests.support.exports import full_export, incremental_export, row_of

pytestmark = pytest.mark.sync_only
#: the lake's own behaviour (exports from S3 files the test makes from the items, the
#: commits, merges and races in the catalog, its option checks) is the same whatever engine
#: held the items: moto only (CI's 30 minutes). A live scan's export (segments, hooks, a
#: killed task) reads the engine: every engine.
LAKE_SIDE = pytest.mark.engines("moto")
#: the export tests' fixtures: the table of every rule on the test's engine, moto's S3
aws, tb = export_setup.aws, export_setup.tb


@pytest.fixture
def catalog(tmp_path: Path) -> Iterator[Any]:
    """A local pyiceberg SQL catalog (sqlite), its warehouse in ``tmp_path``."""
    from pyiceberg.catalog.sql import SqlCatalog

    (tmp_path / "warehouse").mkdir()
    yield SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db",
                     warehouse=f"file://{tmp_path}/warehouse")


def _rows(catalog: Any, name: str) -> list[dict[str, Any]]:
    """The rows of Iceberg table ``name``, scanned by pyiceberg and read by DuckDB (as
    the Parquet tests read theirs: timestamps in UTC), sorted by key."""
    import duckdb

    arrow = catalog.load_table(name).scan().to_arrow()
    con = duckdb.connect()
    try:
        con.execute("SET TimeZone='UTC'")
        con.register("t", arrow)
        cursor = con.execute("SELECT * FROM t")
        names = [d[0] for d in cursor.description]
        rows = [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]
    finally:
        con.close()
    return sorted(rows, key=lambda r: (r["id"], r.get("version") or 0))


def _expected(entities: dict[str, list[Any]], decrypted: bool) -> dict[str, list[Any]]:
    """What each Iceberg table of ``entities`` (by dataset) reads back as."""
    out = {}
    for name, objs in entities.items():
        omit = () if decrypted else ENCRYPTED[name.split(".")[0]]
        out[f"app.{name.replace('.history', '_history')}"] = [
            row_of(o, omit, JSON_FIELDS if name == "profile" else ())
            for o in sorted(objs, key=lambda o: (o.id, getattr(o, "version", 0)))]
    return out


def _snapshots(catalog: Any, name: str) -> list[dict[str, str]]:
    return [dict(s.summary.additional_properties) for s in
            catalog.load_table(name).snapshots() if s.summary is not None]


def _live(tb: TestBackend) -> dict[str, list[Any]]:
    """What reads return now: every profile, ledger and member, and the ledger's history."""
    s = Session(exports)
    ids = sorted({i["id"]["S"] for i in tb.scan_raw() if "id" in i})
    return {"profile": [p for i in ids if (p := s.get(Profile, id=i)) is not None],
            "ledger": [x for i in ids if (x := s.get(Ledger, id=i)) is not None],
            "ledger.history": [v for i in ids if s.get(Ledger, id=i) is not None
                               for v in s.history(Ledger, id=i)]}


def test_a_live_export_is_one_iceberg_table_per_entity(tb: TestBackend, tmp_path: Path,
                                                       catalog: Any) -> None:
    """From a live scan: ``app.<type name>`` (and ``_history``) typed from the model and
    equal to what reads return, read by pyiceberg, DuckDB and Polars; exported again
    (a new scan), the rows are replaced in one commit."""
    import polars

    entities = fill_exports(tb)
    job = export(exports, tmp_path / "stage", format="iceberg", catalog=catalog,
                 namespace="app", segments=2, history=True, encrypted="decrypt")
    report = run_local(job)
    assert report.tables == {"app.profile": 2, "app.ledger": 1, "app.ledger_history": 3,
                             "app.member": 2}
    for name, rows in _expected(entities, decrypted=True).items():
        assert _rows(catalog, name) == rows, name
    types = {f.name: str(f.field_type) for f in catalog.load_table("app.profile").schema().fields}
    assert (types["balance"], types["age"], types["seen"], types["nap"]) == (
        "decimal(12, 2)", "long", "timestamptz", "long")
    assert types["tags"].startswith("list<") and types["address"].startswith("struct<")
    frame = polars.scan_iceberg(catalog.load_table("app.profile")).collect().sort("id")
    assert frame["id"].to_list() == ["p1", "p2"]
    # again: the rows replaced, one snapshot more a table
    s = Session(exports)
    s.delete(s.get(Profile, id="p2"))
    s.commit()
    before = len(_snapshots(catalog, "app.profile"))
    run_local(export(exports, tmp_path / "stage2", format="iceberg", catalog=catalog,
                     namespace="app", history=True, encrypted="decrypt"))
    assert [r["id"] for r in _rows(catalog, "app.profile")] == ["p1"]
    assert len(catalog.load_table("app.profile").history()) > before


def _summary(s3: Any, url: str, **fields: Any) -> str:
    """The export at ``url`` with ``fields`` set in its manifest summary (its times)."""
    bucket, _, key = url.removeprefix("s3://").partition("/")
    where = f"{key.rstrip('/')}/manifest-summary.json"
    summary = json.loads(s3.get_object(Bucket=bucket, Key=where)["Body"].read())
    s3.put_object(Bucket=bucket, Key=where, Body=json.dumps({**summary, **fields}).encode())
    return url


def _change(tb: TestBackend) -> None:
    """Changes of every kind: a modify, a remove, an insert, a new version."""
    s = Session(exports)
    p1 = s.get(Profile, id="p1")
    p1.age, p1.tags = 37, {"c"}
    s.save(p1)
    s.delete(s.get(Profile, id="p2"))
    s.save(Profile(id="p4", email="new@x.io"))
    ledger = s.get(Ledger, id="l1")
    ledger.balance = 40
    s.save(ledger)
    s.commit()


@LAKE_SIDE
@pytest.mark.parametrize("view", ["NEW_AND_OLD_IMAGES", "NEW_IMAGE"])
def test_full_then_incremental_exports_keep_the_tables_current(
        tb: TestBackend, tmp_path: Path, catalog: Any, view: str) -> None:
    """A full export to S3, then the window's incremental one: each table equals what
    reads return after it; the commit records the export; applied again, nothing
    changes (no snapshot)."""
    fill_exports(tb)
    s3 = s3_client()
    before = tb.scan_raw()
    full = _summary(s3, full_export(s3, "exports", "full", before),
                    exportTime="2026-01-01T00:00:00Z", exportArn="arn:full")
    run_local(export(exports, tmp_path / "full", source=full, format="iceberg",
                     catalog=catalog, namespace="app", history=True, encrypted="decrypt"))
    _change(tb)
    inc = _summary(s3, incremental_export(s3, "exports", "inc", before, tb.scan_raw(),
                                          ("pk", "sk"), WHEN, view),
                   exportFromTime="2026-01-01T00:00:00Z", exportToTime="2026-01-01T01:00:00Z",
                   exportArn="arn:inc")
    job = export(exports, tmp_path / "inc", source=inc, format="iceberg", catalog=catalog,
                 namespace="app", history=True, encrypted="decrypt")
    report = run_local(job)
    assert report.tables["app.profile"] == 2  # (p1 modified, p4 inserted; p2 removed)
    live = _live(tb)
    for name, rows in _expected(live, decrypted=True).items():
        assert _rows(catalog, name) == rows, name
    assert _snapshots(catalog, "app.profile")[-1]["dynaorm.export"] == "arn:inc"
    assert catalog.load_table("app.profile").properties["dynaorm.as-of"].startswith(
        "2026-01-01T01:00")
    snapshots = len(_snapshots(catalog, "app.profile"))
    again = run_local(job)
    assert set(again.tables.values()) == {0}
    assert len(_snapshots(catalog, "app.profile")) == snapshots
    for name, rows in _expected(live, decrypted=True).items():
        assert _rows(catalog, name) == rows, name


@LAKE_SIDE
def test_change_sets_out_of_order_are_refused(tb: TestBackend, tmp_path: Path,
                                              catalog: Any) -> None:
    """A change set that starts after the table's rows (one missed between) or ends
    before them is ``LakeError``, and the table is left as it was; in order, both apply."""
    fill_exports(tb)
    s3 = s3_client()
    t0 = tb.scan_raw()
    full = _summary(s3, full_export(s3, "exports", "f", t0), exportTime="2026-01-01T00:00:00Z")
    run_local(export(exports, tmp_path / "f", source=full, format="iceberg", catalog=catalog,
                     namespace="app"))
    _change(tb)
    t1 = tb.scan_raw()
    s = Session(exports)
    s.save(Profile(id="p5", email="later@x.io"))
    s.commit()
    t2 = tb.scan_raw()
    first = _summary(s3, incremental_export(s3, "exports", "a", t0, t1, ("pk", "sk"), WHEN),
                     exportFromTime="2026-01-01T00:00:00Z", exportToTime="2026-01-01T01:00:00Z",
                     exportArn="arn:first")
    second = _summary(s3, incremental_export(s3, "exports", "b", t1, t2, ("pk", "sk"), WHEN),
                      exportFromTime="2026-01-01T01:00:00Z",
                      exportToTime="2026-01-01T02:00:00Z", exportArn="arn:second")

    def apply(url: str, out: str) -> Any:
        return run_local(export(exports, tmp_path / out, source=url, format="iceberg",
                                catalog=catalog, namespace="app"))
    held = _rows(catalog, "app.profile")
    with pytest.raises(LakeError, match=r"starts at .* after the table's rows"):
        apply(second, "s1")
    assert _rows(catalog, "app.profile") == held
    apply(first, "f1")
    apply(second, "s2")
    assert [r["id"] for r in _rows(catalog, "app.profile")] == ["p1", "p4", "p5"]
    older = _summary(s3, incremental_export(s3, "exports", "c", t0, t1, ("pk", "sk"), WHEN),
                     exportFromTime="2026-01-01T00:00:00Z", exportToTime="2026-01-01T00:30:00Z",
                     exportArn="arn:older")
    with pytest.raises(LakeError, match="before the table's rows"):
        apply(older, "o1")
    assert [r["id"] for r in _rows(catalog, "app.profile")] == ["p1", "p4", "p5"]


@LAKE_SIDE
def test_two_merges_at_once_lose_no_change(tb: TestBackend, tmp_path: Path, catalog: Any,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    """Two change sets merged at once (the second commits while the first is building
    its commit): the first's commit fails, it reloads and applies on top, both changes
    kept; a merge that loses every race fails with ``LakeError``, the table as the
    winner left it. The same change set merged twice at once applies once."""
    fill_exports(tb)
    s3 = s3_client()
    t0 = tb.scan_raw()
    full = _summary(s3, full_export(s3, "exports", "f", t0), exportTime="2026-01-01T00:00:00Z")
    run_local(export(exports, tmp_path / "f", source=full, format="iceberg", catalog=catalog,
                     namespace="app", entities=[Profile]))
    s = Session(exports)
    s.save(Profile(id="a1", email="a1@x.io"))
    s.commit()
    t1 = tb.scan_raw()
    s.save(Profile(id="b1", email="b1@x.io"))
    s.commit()
    t2 = tb.scan_raw()
    window = {"exportFromTime": "2026-01-01T00:00:00Z", "exportToTime": "2026-01-01T01:00:00Z"}
    a = _summary(s3, incremental_export(s3, "exports", "a", t0, t1, ("pk", "sk"), WHEN),
                 exportArn="arn:a", **window)
    b = _summary(s3, incremental_export(s3, "exports", "b", t1, t2, ("pk", "sk"), WHEN),
                 exportArn="arn:b", **window)
    jobs = {url: export(exports, tmp_path / url[-12:-1], source=url, format="iceberg",
                        catalog=catalog, namespace="app", entities=[Profile]) for url in (a, b)}
    due, raced = lake_module._due, list[bool]()

    def racing(table: Any, ds: Any, source: Any) -> bool:
        found = due(table, ds, source)
        if source.export == "arn:a" and not raced:
            raced.append(True)
            run_local(jobs[b])  # (the other merge commits first)
        return found
    monkeypatch.setattr(lake_module, "_due", racing)
    assert run_local(jobs[a]).tables == {"app.profile": 1}
    assert raced and [r["id"] for r in _rows(catalog, "app.profile")] == [
        "a1", "b1", "p1", "p2"]
    exports_of = [p.get("dynaorm.export") for p in _snapshots(catalog, "app.profile")]
    assert "arn:a" in exports_of and "arn:b" in exports_of

    c = _summary(s3, incremental_export(s3, "exports", "c", t2, t2[:1], ("pk", "sk"), WHEN),
                 exportArn="arn:c", exportFromTime="2026-01-01T01:00:00Z",
                 exportToTime="2026-01-01T02:00:00Z")
    rival = _summary(s3, incremental_export(s3, "exports", "d", t2, t2[1:], ("pk", "sk"), WHEN),
                     exportArn="arn:rival", exportFromTime="2026-01-01T01:00:00Z",
                     exportToTime="2026-01-01T01:00:00Z")
    rival_job = export(exports, tmp_path / "rival", source=rival, format="iceberg",
                       catalog=catalog, namespace="app", entities=[Profile])

    def always_raced(table: Any, ds: Any, source: Any) -> bool:
        found = due(table, ds, source)
        if source.export == "arn:c":  # (a rival commits each time first)
            import pyarrow as pa

            rival = catalog.load_table("app.profile")
            row = rival.scan(limit=1).to_arrow()
            rival.append(row.set_column(row.column_names.index("id"), "id", pa.array(
                [f"rival{len(rivals)}"])).cast(rival.schema().as_arrow()))
            rivals.append(f"rival{len(rivals)}")
        return found
    run_local(rival_job)
    held = _rows(catalog, "app.profile")
    monkeypatch.setattr(lake_module, "RETRIES", 3)
    monkeypatch.setattr(lake_module, "_due", always_raced)
    rivals: list[str] = []
    with pytest.raises(LakeError, match="3 commits lost the race"):
        run_local(export(exports, tmp_path / "c", source=c, format="iceberg",
                         catalog=catalog, namespace="app", entities=[Profile]))
    assert rivals == ["rival0", "rival1", "rival2"]  # (each won, and is kept)
    assert sorted(r["id"] for r in _rows(catalog, "app.profile")) == sorted(
        [*(r["id"] for r in held), *rivals])
    assert "arn:c" not in [p.get("dynaorm.export") for p in _snapshots(catalog, "app.profile")]
    monkeypatch.setattr(lake_module, "_due", due)
    # the same change set, two merges at once: once
    import threading

    job = export(exports, tmp_path / "twice", source=c, format="iceberg", catalog=catalog,
                 namespace="app", entities=[Profile])
    results = [job.run(t) for t in job.tasks()]
    merges = [threading.Thread(target=job.merge, args=(results,)) for _ in range(2)]
    join_all(merges)
    assert [p.get("dynaorm.export") for p in _snapshots(catalog, "app.profile")].count(
        "arn:c") == 1


@LAKE_SIDE
def test_a_field_the_model_gained_is_a_new_column(backend: str | None, aws: None,
                                                  tmp_path: Path, catalog: Any) -> None:
    """The model gains an optional field: the next export adds its column (old rows read
    it as null), in the commit that applies the export."""
    evolving = Table("dynaorm-lake-evolving")

    def model(extra: bool) -> type[Entity]:
        meta = type("Meta", (), {"table": evolving, "pk": "E#{id}", "sk": "E",
                                 "type_name": "evo", "__qualname__": "Evo.Meta",
                                 "__module__": __name__})
        fields: dict[str, Any] = {"id": str, "n": int}
        more: dict[str, Any] = {}
        if extra:
            fields["note"] = str | None
            more["note"] = None
        return type("Evo", (Entity,), {"__annotations__": fields, "Meta": meta,
                                       "__module__": __name__, "__qualname__": "Evo", **more})
    from moto import mock_aws

    with mock_aws(), moto_backend(), use_tables(evolving, endpoint_url=backend,
                                                name_suffix=worker_suffix()) as b:
        old = model(False)
        Session(evolving).save_many([old(id="a", n=1), old(id="b", n=2)])
        run_local(export(evolving, tmp_path / "1", format="iceberg", catalog=catalog,
                         namespace="app"))
        assert [f.name for f in catalog.load_table("app.evo").schema().fields] == ["id", "n"]
        s3 = s3_client()
        s3.create_bucket(Bucket="evolving")
        before = b.scan_raw()
        new = model(True)
        s = Session(evolving)
        s.save(new(id="c", n=3, note="new"))
        s.commit()
        inc = _summary(s3, incremental_export(s3, "evolving", "i", before, b.scan_raw(),
                                              ("pk", "sk"), WHEN),
                       exportArn="arn:evo", exportToTime="2100-01-01T00:00:00Z")
        run_local(export(evolving, tmp_path / "2", source=inc, format="iceberg",
                         catalog=catalog, namespace="app"))
        assert [f.name for f in catalog.load_table("app.evo").schema().fields] == [
            "id", "n", "note"]
        assert [(r["id"], r["n"], r["note"]) for r in _rows(catalog, "app.evo")] == [
            ("a", 1, None), ("b", 2, None), ("c", 3, "new")]


def test_a_killed_task_commits_nothing(tb: TestBackend, tmp_path: Path, catalog: Any) -> None:
    """A task killed half-way: the job has no result for its segment, the merge refuses
    and the Iceberg tables hold what they did (a reader sees no staged file)."""
    fill_exports(tb)
    run_local(export(exports, tmp_path / "a", format="iceberg", catalog=catalog,
                     namespace="app", entities=[Profile]))
    held = _rows(catalog, "app.profile")
    snapshots = len(_snapshots(catalog, "app.profile"))
    s = Session(exports)
    s.delete(s.get(Profile, id="p1"))
    s.commit()
    job = export(exports, tmp_path / "b", format="iceberg", catalog=catalog, namespace="app",
                 entities=[Profile], segments=2)
    kill = exports.db.add_hook(KillAtScan())
    with pytest.raises(Killed):
        job.run(job.tasks()[0])
    exports.db.remove_hook(kill)
    with pytest.raises(DynaormError, match="no result for segments"):
        job.merge([job.run(job.tasks()[1])])
    assert _rows(catalog, "app.profile") == held
    assert len(_snapshots(catalog, "app.profile")) == snapshots


@LAKE_SIDE
def test_options_of_the_lake_are_checked(tb: TestBackend, tmp_path: Path, catalog: Any
                                         ) -> None:
    with pytest.raises(ExportError, match="format= is 'parquet' or 'iceberg'"):
        export(exports, tmp_path, format="delta")
    with pytest.raises(ExportError, match="needs catalog="):
        export(exports, tmp_path, format="iceberg", namespace="app")
    with pytest.raises(ExportError, match="catalog= is for another format= than 'parquet'"):
        export(exports, tmp_path, catalog=catalog)
    with pytest.raises(LakeError, match="catalog 'nowhere' cannot be loaded"):
        run_local(export(exports, tmp_path, format="iceberg", catalog="nowhere",
                         namespace="app", entities=[Profile]))


@settings(max_examples=examples(8), deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(fields=st.lists(st.tuples(st.sampled_from(sorted(KINDS)), st.booleans()), min_size=1,
                       max_size=5, unique_by=lambda f: f[0]), data=st.data())
def test_any_model_reads_back_equal_from_the_lake(
        aws: None, fields: list[tuple[str, bool]], data: st.DataObject) -> None:
    """A model of any field kinds, optional or not: its Iceberg table reads back equal to
    what reads return, after a full export and after an incremental one (a change and a
    remove) merged into it."""
    import tempfile

    from moto import mock_aws
    from pyiceberg.catalog.sql import SqlCatalog

    cls = any_model(fields)
    values = st.fixed_dictionaries({
        f"f_{kind}": KINDS[kind][1] | st.none() if optional else KINDS[kind][1]
        for kind, optional in fields})
    objs = [cls(id=f"i{n}", **data.draw(values)) for n in range(data.draw(st.integers(1, 4)))]
    with mock_aws(), moto_backend(), use_tables(prop, name_suffix=worker_suffix()) as b, \
            tempfile.TemporaryDirectory() as out:
        Path(out, "warehouse").mkdir()
        lake = SqlCatalog("any", uri=f"sqlite:///{out}/catalog.db",
                          warehouse=f"file://{out}/warehouse")
        name = f"app.{spec_of(cls).type_name}"
        s = Session(prop)
        s.save_many(objs)
        s3 = s3_client()
        s3.create_bucket(Bucket="anything")
        before = b.scan_raw()
        full = _summary(s3, full_export(s3, "anything", "full", before),
                        exportTime="2026-01-01T00:00:00Z")
        run_local(export(prop, f"{out}/full", entities=[cls], source=full, format="iceberg",
                         catalog=lake, namespace="app"))
        assert _rows(lake, name) == [row_of(s.get(cls, id=o.id)) for o in objs]
        s.save(cls(id=objs[0].id, **data.draw(values)), overwrite=True)
        s.delete(cls, id=objs[-1].id) if len(objs) > 1 else None
        s.commit()
        inc = _summary(s3, incremental_export(s3, "anything", "inc", before, b.scan_raw(),
                                              ("pk", "sk"), WHEN),
                       exportToTime="2026-01-01T01:00:00Z")
        run_local(export(prop, f"{out}/inc", entities=[cls], source=inc, format="iceberg",
                         catalog=lake, namespace="app"))
        live = [x for o in objs if (x := s.get(cls, id=o.id)) is not None]
        assert _rows(lake, name) == [row_of(x) for x in live]


def test_a_history_suffixed_type_name_beside_a_versioned_entity_is_refused(
        tmp_path: Path, catalog: Any) -> None:
    """``<type name>_history`` is where a versioned entity's version rows go: another
    entity of that type name would be the same Iceberg table, so the export is
    :class:`LakeError` before any task runs (and without ``history=True`` it is not)."""
    from dynaorm import Versioned

    clash = Table("dynaorm-lake-clash")

    class Doc(Versioned):
        class Meta:
            table = clash
            pk = "DOC#{id}"
            sk = "D"
            type_name = "doc"

        id: str

    class DocHistory(Entity):
        class Meta:
            table = clash
            pk = "DOCH#{id}"
            sk = "H"
            type_name = "doc_history"

        id: str

    with pytest.raises(LakeError, match=r"would be one Iceberg table \(a type name ending "
                                        r"in '_history'\)") as raised:
        export(clash, tmp_path, format="iceberg", catalog=catalog, namespace="app",
               history=True)
    assert "doc.history" in str(raised.value) and "doc_history" in str(raised.value)
    assert not list(tmp_path.glob("*/part-*"))
    job = export(clash, tmp_path, format="iceberg", catalog=catalog, namespace="app")
    assert len(job.tasks()) == 1  # (without version rows, no two datasets are one table)


@LAKE_SIDE
def test_the_command_exports_to_the_lake_full_then_incremental(
        tb: TestBackend, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``dynaorm export --format iceberg --catalog URI --warehouse URL --namespace NS``:
    a full export from S3, then the window's incremental one, each committed to the
    catalog the URI names; read back by pyiceberg equal to what reads return. Lake options
    without ``--format iceberg`` (or it without a catalog) are a usage error (exit 2)."""
    from pyiceberg.catalog.sql import SqlCatalog

    from dynaorm.cli.main import main

    fill_exports(tb)
    s3 = s3_client()
    before = tb.scan_raw()
    full = _summary(s3, full_export(s3, "exports", "cli-full", before),
                    exportTime="2026-01-01T00:00:00Z", exportArn="arn:cli-full")
    (tmp_path / "warehouse").mkdir()
    lake = ["--format", "iceberg", "--catalog", f"sqlite:///{tmp_path}/catalog.db",
            "--warehouse", f"file://{tmp_path}/warehouse", "--namespace", "app",
            "--history", "--decrypt"]
    where = "tests.support.export_models:exports"
    assert main(["export", where, str(tmp_path / "full"), "--source", full, *lake]) == 0
    out = capsys.readouterr().out
    assert "app.profile: 2 rows" in out
    _change(tb)
    inc = _summary(s3, incremental_export(s3, "exports", "cli-inc", before, tb.scan_raw(),
                                          ("pk", "sk"), WHEN),
                   exportFromTime="2026-01-01T00:00:00Z", exportToTime="2026-01-01T01:00:00Z",
                   exportArn="arn:cli-inc")
    assert main(["export", where, str(tmp_path / "inc"), "--source", inc, *lake]) == 0
    assert "app.profile: 2 rows" in capsys.readouterr().out
    catalog = SqlCatalog("dynaorm", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"file://{tmp_path}/warehouse")
    for name, rows in _expected(_live(tb), decrypted=True).items():
        assert _rows(catalog, name) == rows, name
    assert _snapshots(catalog, "app.profile")[-1]["dynaorm.export"] == "arn:cli-inc"
    assert main(["export", where, str(tmp_path / "again"), "--source", inc, *lake]) == 0
    assert "app.profile: 0 rows" in capsys.readouterr().out
    assert main(["export", where, str(tmp_path / "x"), "--namespace", "app"]) == 2
    assert main(["export", where, str(tmp_path / "x"), "--format", "iceberg",
                 "--namespace", "app"]) == 2
    assert "format='iceberg' needs catalog=" in capsys.readouterr().err
    assert main(["export", where, str(tmp_path / "x"), "--format", "iceberg", "--catalog",
                 "ftp://nowhere", "--namespace", "app"]) == 1
    assert "catalog 'ftp://nowhere' cannot be loaded" in capsys.readouterr().err
