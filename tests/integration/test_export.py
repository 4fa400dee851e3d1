"""Exports by entity (contract 21): ``dynaorm.jobs.export`` writes one typed Parquet dataset
per entity -- from a live scan (on every engine), from a full and an incremental DynamoDB
export to S3 (moto's S3 in-process, and its server for other processes), locally and into
S3 -- and the datasets read back in DuckDB (and Polars) equal to the entities: every field
kind, versioned history, never a guard, encrypted fields left out or decrypted, previous
layouts read as the current one, items no entity claims counted. Bad input (a missing
manifest, a truncated file, a corrupt line, a field that no longer fits) is a typed error
naming the file and item, or a counted row, and a failed task writes nothing; a task run
again, or twice at once, or after a kill, rewrites its own files (no duplicate rows). The
Arrow types themselves: ``tests/unit/test_export_schema.py``; on Spark:
``tests/integration/test_spark.py``."""

from __future__ import annotations

import gzip
import json
import os
import tempfile
import threading
import uuid
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pyarrow", reason="dynaorm[export] is not installed")
pytest.importorskip("duckdb", reason="the dev group's duckdb reads the datasets back")

from dynaorm import Entity, KmsKeyring, Session, Table
from dynaorm.cli.main import main
from dynaorm.jobs import ExportError, ExportReport, export, run_local
from dynaorm.jobs.export_files import s3_client
from dynaorm.protocol.steps import call
from dynaorm.testing import TestBackend, moto_backend, use_tables, worker_suffix
from tests.support import export_setup
from tests.support.concurrency import join_all
from tests.support.examples import examples
from tests.support.export_models import (
    Card,
    Ledger,
    Profile,
    Wallet,
    exports,
    kept,
)
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
from tests.support.exports import (
    full_export,
    incremental_export,
    read_back,
    row_of,
)
from tests.support.recording import Requests

pytestmark = pytest.mark.sync_only  # processes, threads and the moto server's S3
#: the fixtures: the AWS configuration, the table of every rule on the test's engine
aws, tb = export_setup.aws, export_setup.tb


def _assert_datasets(out: str | Path, entities: dict[str, list[Any]],
                     decrypted: bool = False) -> None:
    """Each dataset of the export at ``out`` reads back equal to the entities."""
    for name, objs in entities.items():
        omit = () if decrypted else ENCRYPTED[name.split(".")[0]]
        rows = sorted(read_back(out, name), key=lambda r: (r["id"], r.get("version")))
        assert rows == [row_of(o, omit, JSON_FIELDS if name == "profile" else ())
                        for o in sorted(objs, key=lambda o: (o.id, getattr(o, "version", 0)))
                        ], name


def test_a_live_export_is_one_typed_dataset_per_entity(tb: TestBackend, tmp_path: Path
                                                       ) -> None:
    """From a live scan in three segments: the latest copies only, no guard, no expired
    row, no revision or index key, encrypted fields left out, the old-layout member in the
    current layout, the ghost counted; then with history and decrypted."""
    entities = fill_exports(tb)
    report = run_local(export(exports, tmp_path / "a", segments=3))
    history = entities.pop("ledger.history")
    assert report == ExportReport(
        rows={"profile": 2, "ledger": 1, "member": 2}, unclaimed={"ghost": 1}, failed=0,
        failures=[], scanned=len(tb.scan_raw()), skipped=1 + 3 + 3)  # expired, guards, versions
    _assert_datasets(tmp_path / "a", entities)
    report = run_local(export(exports, tmp_path / "b", segments=2, history=True,
                              encrypted="decrypt"))
    assert report.rows == {"profile": 2, "ledger": 1, "ledger.history": 3, "member": 2}
    _assert_datasets(tmp_path / "b", {**entities, "ledger.history": history}, decrypted=True)


def test_the_columns_are_typed_from_the_model(tb: TestBackend, tmp_path: Path) -> None:
    """DuckDB and Polars see the model's types (field names, not stored names)."""
    import duckdb
    import polars

    fill_exports(tb)
    run_local(export(exports, tmp_path, entities=[Profile]))
    assert sorted(os.listdir(tmp_path)) == ["profile"]
    described = duckdb.connect().execute(
        f"DESCRIBE SELECT * FROM read_parquet('{tmp_path}/profile/*.parquet')").fetchall()
    assert {name: kind for name, kind, *_ in described} == {
        "id": "VARCHAR", "email": "VARCHAR", "name": "VARCHAR", "age": "BIGINT",
        "score": "DOUBLE", "balance": "DECIMAL(12,2)", "ratio": "DECIMAL(38,18)",
        "active": "BOOLEAN", "born": "DATE", "seen": "TIMESTAMP WITH TIME ZONE",
        "wake": "TIME", "nap": "BIGINT", "uid": "VARCHAR", "tier": "VARCHAR",
        "level": "BIGINT", "mood": "VARCHAR", "tags": "VARCHAR[]", "nums": "BIGINT[]",
        "weights": "DOUBLE[]", "prefs": "MAP(VARCHAR, BIGINT)",
        "address": "STRUCT(city VARCHAR, lines VARCHAR[], \"where\" STRUCT(x BIGINT, y BIGINT))",
        "blob": "BLOB", "anything": "VARCHAR", "either": "VARCHAR",
        "expires": "TIMESTAMP WITH TIME ZONE"}
    frame = polars.read_parquet(tmp_path / "profile" / "*.parquet").sort("id")
    assert frame["id"].to_list() == ["p1", "p2"]
    assert frame["balance"].to_list() == [Decimal("1234.50"), Decimal("0.00")]
    assert frame["address"].to_list()[0] == {"city": "Paris", "lines": ["1 rue"],
                                             "where": {"x": 1, "y": None}}


def test_an_export_from_s3_full_then_incremental(tb: TestBackend, tmp_path: Path) -> None:
    """A full export (two data files: a task each) gives the live export's datasets; an
    incremental one gives each entity's changes: inserts, modifies and removes, with the
    new values (a remove: its key fields), history as inserted version rows. The export's
    files are in DynamoDB's format: the summary names its view ``outputView`` (issue 59:
    0.6 read ``exportViewType``, so on a NEW_IMAGE export every modify was an insert)."""
    entities = fill_exports(tb)
    s3 = s3_client()
    before = tb.scan_raw()
    job = export(exports, tmp_path / "full", source=full_export(s3, "exports", "full", before),
                 history=True, encrypted="decrypt")
    assert len(job.tasks()) == 2
    report = run_local(job)
    assert report.rows == {"profile": 2, "ledger": 1, "ledger.history": 3, "member": 2}
    assert report.unclaimed == {"ghost": 1} and report.failed == 0
    _assert_datasets(tmp_path / "full", entities, decrypted=True)
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
    after = tb.scan_raw()
    for view, insert in (("NEW_AND_OLD_IMAGES", "insert"), ("NEW_IMAGE", "modify")):
        url = incremental_export(s3, "exports", view, before, after, ("pk", "sk"), WHEN, view)
        out = tmp_path / view
        report = run_local(export(exports, out, source=url, history=True))
        assert report.rows == {"profile": 3, "ledger": 1, "ledger.history": 1, "member": 0}
        at = datetime(2026, 1, 1, tzinfo=UTC)
        changes = {r["id"]: r for r in read_back(out, "profile")}
        assert changes["p1"] == {"_op": "modify", "_time": at,
                                 **row_of(s.get(Profile, id="p1"), ("ssn",), JSON_FIELDS)}
        assert changes["p4"] == {"_op": insert, "_time": at,
                                 **row_of(s.get(Profile, id="p4"), ("ssn",), JSON_FIELDS)}
        assert changes["p2"] == {**{k: None for k in changes["p1"]}, "_op": "remove",
                                 "_time": at, "id": "p2"}
        (latest,) = read_back(out, "ledger")
        (version,) = read_back(out, "ledger.history")
        assert (latest["_op"], latest["balance"], latest["version"]) == ("modify", 40, 4)
        assert (version["_op"], version["balance"], version["version"]) == (insert, 40, 4)
    # the guide's recipe: the base (the full export before) and the window's changes give
    # the full export after it
    run_local(export(exports, tmp_path / "base", source=full_export(s3, "exports", "b", before)))
    run_local(export(exports, tmp_path / "now", source=full_export(s3, "exports", "a", after)))
    assert _fresh(tmp_path / "base", tmp_path / "NEW_AND_OLD_IMAGES", "profile", "id") == \
        sorted(read_back(tmp_path / "now", "profile"), key=lambda r: r["id"])


def _fresh(base: Path, changes: Path, dataset: str, key: str) -> list[dict[str, Any]]:
    """docs/guide/exports.md's recipe (DuckDB), applied to ``dataset`` keyed on ``key``."""
    import duckdb

    db = duckdb.connect()
    db.execute("SET TimeZone='UTC'")
    cursor = db.execute(f"""
        WITH changes AS (
            SELECT * FROM '{changes}/{dataset}/*.parquet'
            QUALIFY row_number() OVER (PARTITION BY {key} ORDER BY _time DESC) = 1)
        SELECT * FROM '{base}/{dataset}/*.parquet'
        WHERE {key} NOT IN (SELECT {key} FROM changes)
        UNION ALL BY NAME
        SELECT * EXCLUDE (_op, _time) FROM changes WHERE _op <> 'remove'
        ORDER BY {key}""")
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def test_the_embedded_default_s_own_export_reads_like_a_scan(
        tb: TestBackend, tmp_path: Path) -> None:
    """The export the embedded default's ``ExportTableToPointInTime`` writes (DynamoDB's
    layout, manifests included: ``dynaorm.testing.emulation.bulk``) exports like a scan (moto
    in-process only)."""
    if tb.endpoint_url is not None:
        pytest.skip("the embedded default exports the tables of its in-process DynamoDB")
    entities = fill_exports(tb)
    arn = exports.db.driver.run(call("DescribeTable", {"TableName": exports.name}))[
        "Table"]["TableArn"]
    exports.db.driver.run(call("UpdateContinuousBackups", {
        "TableName": exports.name,
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}))
    done = exports.db.driver.run(call("ExportTableToPointInTime", {
        "TableArn": arn, "S3Bucket": "exports", "S3Prefix": "moto",
        "ExportFormat": "DYNAMODB_JSON"}))["ExportDescription"]["ExportArn"]
    described = exports.db.driver.run(call("DescribeExport", {"ExportArn": done}))[
        "ExportDescription"]
    assert described["ExportStatus"] == "COMPLETED"
    folder = described["ExportManifest"].rsplit("/", 1)[0]
    report = run_local(export(exports, tmp_path, source=f"s3://exports/{folder}/"))
    assert report.failed == 0 and report.unclaimed == {"ghost": 1}
    entities.pop("ledger.history")
    _assert_datasets(tmp_path, entities)


# moto only: what is read is the export's files in S3 (moto's, on every engine alike); the
# table only fills them
@pytest.mark.engines("moto")
def test_values_kept_in_s3_export_as_values_from_a_scan_and_a_dynamodb_export(
        tb: TestBackend, tmp_path: Path) -> None:
    """An entity whose ``Offloaded`` values (a nested model, a list of them, a sealed
    model) are kept in S3: an export from a scan and from a DynamoDB export (its data
    files) writes the values, never the references, and leaves the sealed one out (no
    plaintext in any file) unless decrypted."""
    s3 = s3_client()
    card = Card(pan="4111-" + "9" * 80, tags=["a"])
    secret = Card(pan=f"sealed-{uuid.uuid4().hex}")
    with use_tables(kept, endpoint_url=tb.endpoint_url, name_suffix=worker_suffix()) as kb:
        with Session(kept) as s:
            s.save(Wallet(id="w1", card=card, cards=[card, card], sealed=secret))
        assert card.pan not in json.dumps(kb.scan_raw(), default=str)  # (all kept in S3)
        source = full_export(s3, "exports", "kept", kb.scan_raw())
        for name, via in (("scan", None), ("files", source)):
            report = run_local(export(kept, tmp_path / name, source=via))
            assert (report.rows, report.failed) == ({"Wallet": 1}, 0), report
            (row,) = read_back(tmp_path / name, "Wallet")
            assert (row["card"]["pan"], [c["pan"] for c in row["cards"]]) == (
                card.pan, [card.pan] * 2) and "sealed" not in row
            assert not any(secret.pan.encode() in f.read_bytes()
                           for f in (tmp_path / name).rglob("*") if f.is_file())
            run_local(export(kept, tmp_path / f"{name}-open", source=via, encrypted="decrypt"))
            (row,) = read_back(tmp_path / f"{name}-open", "Wallet")
            assert row["sealed"]["pan"] == secret.pan


def test_bad_input_is_a_typed_error_naming_the_file_or_a_counted_row(
        tb: TestBackend, tmp_path: Path) -> None:
    """A missing manifest, a truncated data file, a corrupt line and an ION export are
    :class:`ExportError` naming the file (and line), and the failed task writes nothing; a
    stored field that no longer fits its model is a row left out, counted and named."""
    fill_exports(tb)
    s3 = s3_client()
    with pytest.raises(ExportError, match=r"s3://exports/nothing/manifest-summary\.json"):
        export(exports, tmp_path, source="s3://exports/nothing/")
    items = tb.scan_raw()
    url = full_export(s3, "exports", "bad", items, files=1)
    folder = url.removeprefix("s3://exports/")
    data_key = json.loads(s3.get_object(Bucket="exports", Key=folder + "manifest-files.json")[
        "Body"].read())["dataFileS3Key"]
    whole = s3.get_object(Bucket="exports", Key=data_key)["Body"].read()
    out = tmp_path / "out"
    for body, error in ((whole[: len(whole) // 2], "cannot be read whole"),
                        (gzip.compress(gzip.decompress(whole)[:-40]), "line"),
                        (gzip.compress(gzip.decompress(whole).splitlines()[0] + b"\n"),
                         "the manifest says")):
        s3.put_object(Bucket="exports", Key=data_key, Body=body)
        with pytest.raises(ExportError, match=rf"s3://exports/{data_key}.*{error}"):
            run_local(export(exports, out, source=url))
        assert not out.exists() or not any(out.rglob("*")), "a failed task wrote something"
    summary = folder + "manifest-summary.json"
    ion = {**json.loads(s3.get_object(Bucket="exports", Key=summary)["Body"].read()),
           "outputFormat": "ION"}
    s3.put_object(Bucket="exports", Key=summary, Body=json.dumps(ion).encode())
    with pytest.raises(ExportError, match="is ION: dynaorm reads DYNAMODB_JSON"):
        export(exports, out, source=url)
    # a profile whose stored age is text now (another tool wrote it): left out and named
    exports.db.driver.run(call("UpdateItem", {
        "TableName": exports.name, "Key": {"pk": {"S": "PROFILE#p2"}, "sk": {"S": "P"}},
        "UpdateExpression": "SET age = :a", "ExpressionAttributeValues": {":a": {"S": "old"}}}))
    url = full_export(s3, "exports", "mismatch", tb.scan_raw(), files=1)
    report = run_local(export(exports, out, source=url))
    assert report.rows["profile"] == 1 and report.failed == 1
    (why,) = report.failures
    assert why.startswith("s3://exports/") and " line " in why
    assert "Profile {'pk': 'PROFILE#p2', 'sk': 'P'}" in why and "age" in why
    assert [r["id"] for r in read_back(out, "profile")] == ["p1"]


def test_a_column_that_cannot_hold_a_value_leaves_its_row_out_and_names_it(
        tb: TestBackend, tmp_path: Path) -> None:
    """An ``int`` past 64 bits (DynamoDB holds 38 digits) does not fit ``int64``: the row
    is left out and counted, the others written."""
    s = Session(exports)
    s.save(Profile(id="big", email="big@x.io", age=10 ** 30))
    s.save(Profile(id="ok", email="ok@x.io", age=1))
    s.commit()
    report = run_local(export(exports, tmp_path, entities=[Profile]))
    assert report.rows == {"profile": 1} and report.failed == 1
    assert "PROFILE#big" in report.failures[0] and "'age' does not fit int64" in \
        report.failures[0]
    assert [r["id"] for r in read_back(tmp_path, "profile")] == ["ok"]


def test_tasks_rerun_twice_at_once_and_after_a_kill_leave_no_duplicate(
        tb: TestBackend, tmp_path: Path) -> None:
    """A task killed half-way writes nothing; once the job runs again, every task twice
    at once, each row is written once: what a SIGKILL leaves (a temporary dot file) is
    no data to a reader, and a part an earlier run wrote for a dataset the task now finds
    empty is gone."""
    entities = fill_exports(tb)
    entities.pop("ledger.history")
    job = export(exports, tmp_path, segments=2)
    kill = exports.db.add_hook(KillAtScan())
    with pytest.raises(Killed):
        job.run(job.tasks()[0])
    exports.db.remove_hook(kill)
    assert not tmp_path.exists() or not any(tmp_path.rglob("*"))
    killed = tmp_path / "profile" / f".part-00000.parquet.{uuid.uuid4().hex}.tmp"
    stale = [tmp_path / name / f"part-0000{n}.parquet" for name in ("profile", "member")
             for n in (0, 1)]
    for path in (killed, *stale):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"what an earlier run left")
    results: list[tuple[int, Any]] = []
    runs = [threading.Thread(target=lambda t=t: results.append(job.run(t)))
            for t in job.tasks() * 2]
    join_all(runs)
    report = job.merge(results)
    assert report.rows == {"profile": 2, "ledger": 1, "member": 2}
    _assert_datasets(tmp_path, entities)  # (a stale part left would not read as Parquet)
    written = {(p.parent.name, p.name) for p in tmp_path.rglob("*.parquet")}
    assert written == {(name, f"part-0000{n}.parquet") for n, r in results
                       for name in r.rows}
    assert killed.exists() and not list(tmp_path.rglob(".*.tmp"))[1:]


def test_into_s3_from_processes_through_the_moto_server(
        tb: TestBackend, tmp_path: Path, dynaorm_moto_server: str,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Tasks in two worker processes read the table and write the parts into S3 (a moto
    server, found as an application finds its S3: ``AWS_ENDPOINT_URL_S3``)."""
    if tb.endpoint_url is None:
        pytest.skip("worker processes need an engine they can reach")
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", dynaorm_moto_server)
    entities = fill_exports(tb)
    entities.pop("ledger.history")
    import botocore.session

    s3 = botocore.session.get_session().create_client("s3")
    s3.create_bucket(Bucket="served")
    report = run_local(export(exports, "s3://served/out/", segments=4), workers=2)
    assert report.rows == {"profile": 2, "ledger": 1, "member": 2}
    for obj in s3.list_objects_v2(Bucket="served", Prefix="out/")["Contents"]:
        local = tmp_path / obj["Key"]
        local.parent.mkdir(parents=True, exist_ok=True)
        local.write_bytes(s3.get_object(Bucket="served", Key=obj["Key"])["Body"].read())
    _assert_datasets(tmp_path / "out", entities)


def test_keys_come_through_the_client_to_decrypt(tb: TestBackend, tmp_path: Path) -> None:
    """``encrypted="decrypt"`` with a KMS keyring: the data keys are asked for through
    the table's client (requests its hooks see), once a key; ``"omit"`` (the default)
    asks for none (an exporter needs no right to decrypt)."""
    if tb.endpoint_url is not None:
        pytest.skip("moto's in-process KMS")
    import boto3

    kms = boto3.client("kms", region_name="us-east-1")
    key = kms.create_key()["KeyMetadata"]["KeyId"]
    mac = kms.create_key(KeySpec="HMAC_256", KeyUsage="GENERATE_VERIFY_MAC")["KeyMetadata"][
        "KeyId"]
    saved = exports.keyring
    exports.keyring = KmsKeyring(key, mac_key_id=mac)
    try:
        s = Session(exports)
        s.save(Ledger(id="k1", memo="kept secret"))
        s.save(Ledger(id="k2", memo="another"))
        s.commit()
        exports.keyring = KmsKeyring(key, mac_key_id=mac)  # (a worker: nothing cached)
        seen = Requests(exports)
        run_local(export(exports, tmp_path, entities=[Ledger], encrypted="decrypt"))
        assert seen.operations.count("kms:Decrypt") == 1
        assert sorted(r["memo"] for r in read_back(tmp_path, "ledger")) == [
            "another", "kept secret"]
        exports.keyring = KmsKeyring(key, mac_key_id=mac)
        seen = Requests(exports)
        run_local(export(exports, tmp_path / "omit", entities=[Ledger]))
        assert not [op for op in seen.operations if op.startswith("kms:")]
        assert [r.get("memo") for r in read_back(tmp_path / "omit", "ledger")] == [None] * 2
    finally:
        exports.keyring = saved


twins = Table("dynaorm-export-twins")


def _twin(module: str, type_name: str) -> type[Entity]:
    """A class named ``Thing`` of module ``module`` with type name ``type_name``."""
    meta = type("Meta", (), {"table": twins, "pk": f"{type_name.upper()}#{{id}}", "sk": "T",
                             "type_name": type_name, "__qualname__": "Thing.Meta",
                             "__module__": module})
    return type("Thing", (Entity,), {"__annotations__": {"id": str, "n": int},
                                     "Meta": meta, "__module__": module,
                                     "__qualname__": "Thing"})


def test_two_classes_of_one_name_write_two_datasets(backend: str | None, aws: None,
                                                    tmp_path: Path) -> None:
    """Issue 59: two classes named ``Thing`` (two modules, two type names), exported one
    at a time into one folder, or together, write two datasets, each named by its type
    name: the second never replaces the first."""
    a, b = _twin("shop.orders", "order_thing"), _twin("shop.stock", "stock_thing")
    with use_tables(twins, endpoint_url=backend, name_suffix=worker_suffix()):
        s = Session(twins)
        s.save_many([a(id="a1", n=1), a(id="a2", n=2), b(id="b1", n=10)])
        for cls in (a, b):
            run_local(export(twins, tmp_path / "apart", entities=[cls]))
        report = run_local(export(twins, tmp_path / "together", entities=[a, b]))
        assert report.rows == {"order_thing": 2, "stock_thing": 1}
        for out in ("apart", "together"):
            assert sorted(os.listdir(tmp_path / out)) == ["order_thing", "stock_thing"]
            assert sorted(r["n"] for r in read_back(tmp_path / out, "order_thing")) == [1, 2]
            assert [r["id"] for r in read_back(tmp_path / out, "stock_thing")] == ["b1"]
        odd = _twin("shop.odd", "odd/thing")
        with pytest.raises(ExportError, match="cannot name a dataset"):
            export(twins, tmp_path, entities=[odd])


@pytest.mark.engines("moto")  # (refused before anything is sent)
def test_options_are_checked(tb: TestBackend, tmp_path: Path) -> None:
    with pytest.raises(ExportError, match="encrypted= is 'omit' or 'decrypt'"):
        export(exports, tmp_path, encrypted="plain")
    stray = Table("elsewhere")

    class Stray(Entity):
        class Meta:
            table = stray
            pk = "S#{id}"
            sk = "S"

        id: str

    with pytest.raises(ExportError, match="are not entities of table"):
        export(exports, tmp_path, entities=[Stray])


def test_the_command_exports_with_progress(tb: TestBackend, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    if tb.endpoint_url is None:
        pytest.skip("the command's worker processes need an engine they can reach")
    fill_exports(tb)
    assert main(["export", "tests.support.export_models:exports", str(tmp_path),
                 "--engine", "local", "--segments", "3", "--workers", "2", "--history",
                 "--decrypt", "--endpoint-url", str(tb.endpoint_url)]) == 0
    out, err = capsys.readouterr()
    assert "exported table" in out and "ledger.history: 3 rows" in out
    assert "1 item(s) of type 'ghost' claimed by no entity" in out
    assert "3 of 3 tasks done" in err
    assert sorted(r["memo"] for r in read_back(tmp_path, "ledger.history")) == [
        "at 20", "at 30", "first"]


@settings(max_examples=examples(12), deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(fields=st.lists(st.tuples(st.sampled_from(sorted(KINDS)), st.booleans()), min_size=1,
                       max_size=6, unique_by=lambda f: f[0]), data=st.data())
def test_any_model_reads_back_equal_from_a_scan_and_from_exports(
        aws: None, fields: list[tuple[str, bool]], data: st.DataObject) -> None:
    """A model made of any field kinds, optional or not: its objects read back in DuckDB
    equal to the entities, exported from a live scan, from a full export to S3, and from
    an incremental one (each change with its new values)."""
    from moto import mock_aws

    cls = any_model(fields)
    values = st.fixed_dictionaries({
        f"f_{kind}": KINDS[kind][1] | st.none() if optional else KINDS[kind][1]
        for kind, optional in fields})
    objs = [cls(id=f"i{n}", **data.draw(values)) for n in range(data.draw(st.integers(1, 4)))]
    with mock_aws(), moto_backend(), use_tables(prop, name_suffix=worker_suffix()) as b, \
            tempfile.TemporaryDirectory() as out:
        s = Session(prop)
        s.save_many(objs)
        expected = sorted((row_of(s.get(cls, id=o.id)) for o in objs), key=lambda r: r["id"])
        s3 = s3_client()
        s3.create_bucket(Bucket="anything")
        before = b.scan_raw()
        run_local(export(prop, f"{out}/live", entities=[cls], segments=2))
        run_local(export(prop, f"{out}/full", entities=[cls],
                         source=full_export(s3, "anything", "full", before)))
        for name in ("live", "full"):
            assert sorted(read_back(f"{out}/{name}", "any" + cls.__name__[3:]),
                          key=lambda r: r["id"]) == expected, name
        changed = cls(id=objs[0].id, **data.draw(values))
        s.save(changed, overwrite=True)
        s.delete(cls, id=objs[-1].id) if len(objs) > 1 else None
        s.commit()
        url = incremental_export(s3, "anything", "inc", before, b.scan_raw(), ("pk", "sk"), WHEN)
        run_local(export(prop, f"{out}/inc", entities=[cls], source=url))
        got = {r.pop("id"): r for r in read_back(f"{out}/inc", "any" + cls.__name__[3:])}
        want = {changed.id: {  # (written again: a change, even of equal values)
            "_op": "modify", "_time": datetime(2026, 1, 1, tzinfo=UTC),
            **{k: v for k, v in row_of(s.get(cls, id=changed.id)).items() if k != "id"}}}
        if len(objs) > 1:
            want[objs[-1].id] = {"_op": "remove", "_time": datetime(2026, 1, 1, tzinfo=UTC),
                                 **{f"f_{kind}": None for kind, _ in fields}}
        assert got == want


def test_a_hostile_s3_is_an_export_error_naming_the_file(
        aws: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """S3 that answers a manifest with an HTML page, or cuts a data file's body short
    (its Content-Length says more, then the connection closes): ``ExportError`` naming
    the file, and nothing written."""
    from tests.support.hostile import Reply, answer, json_body, serving

    item = {"pk": {"S": "LEDGER#x"}, "sk": {"S": "v0_L"}, "_type": {"S": "ledger"},
            "id": {"S": "x"}, "version": {"N": "1"}}
    data = gzip.compress(json.dumps({"Item": item}).encode() + b"\n")
    summary = json_body({"manifestFilesS3Key": "e/manifest-files.json",
                         "outputFormat": "DYNAMODB_JSON", "exportType": "FULL_EXPORT"})
    files = json_body({"dataFileS3Key": "e/data/f.json.gz", "itemCount": 1}) + b"\n"
    cut = answer(data, headers="")[:-len(data) // 2]  # (the head says the whole length)
    for replies, error in (
            ([Reply(answer(b"<html>proxy error</html>"))], "manifest of the export at"),
            ([Reply(answer(summary)), Reply(answer(files)), Reply(cut, close=True)],
             r"s3://hostile/e/data/f\.json\.gz: cannot be read whole")):
        with serving(lambda n, _, replies=replies: replies[min(n, len(replies)) - 1]) as s:
            monkeypatch.setenv("AWS_ENDPOINT_URL_S3", s.url)
            with pytest.raises(ExportError, match=error):
                run_local(export(exports, tmp_path / "out", source="s3://hostile/e/"))
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*"))


# moto only: pickling, and what each Scan asks (its request), are dynaorm's on every engine
@pytest.mark.engines("moto")
def test_tasks_and_reports_pickle_and_a_rate_holds_the_scans(tb: TestBackend, tmp_path: Path
                                                             ) -> None:
    """A task crosses processes (pickled: the entity classes by reference); the report
    too. With ``rate=``, each Scan asks for its consumed capacity (what the budget is
    measured by)."""
    import pickle

    from dynaorm import Rate

    fill_exports(tb)
    job = export(exports, tmp_path, segments=3, rate=Rate(read=1000))
    assert pickle.loads(pickle.dumps(job.tasks())) == job.tasks()
    seen = Requests(exports)
    report = run_local(job)
    assert pickle.loads(pickle.dumps(report)) == report
    scans = [params for op, params in seen.calls if op == "Scan"]
    assert len(scans) == 3 and all(p.get("ReturnConsumedCapacity") == "TOTAL" for p in scans)


def test_a_user_rules_rows_are_the_rules_never_unclaimed(db: TestBackend, tmp_path: Path
                                                         ) -> None:
    """The rows a rule a user registers adds (the rules guide's audit rule), with a type
    name of their own or none, are told apart as the rule's: not exported, not counted
    as unclaimed (they were, by their type name or ``"?"``)."""
    from tests.support.user_rules import audited_entities

    order_cls, ticket_cls = audited_entities()
    with db.session() as s:
        s.save(order_cls(order_id="o1", total=3))
        s.save(ticket_cls(ticket_id="t1"))
    report = run_local(export(db.table, tmp_path, entities=[order_cls, ticket_cls]))
    assert report.unclaimed == {} and report.failed == 0
    assert report.rows == {"AuditedOrder": 1, "AuditedTicket": 1}
    assert report.skipped == 2  # (the two audit rows)
