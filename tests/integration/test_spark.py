"""Jobs on Apache Spark (contract 20): ``dynaorm.spark.run`` in Spark's local mode against
DynamoDB Local: the same picklable tasks as ``run_local``, one Spark task per segment (or
per data file of an export to S3: a moto server, which the executors reach as an
application reaches S3, through ``AWS_ENDPOINT_URL_S3``), each run by a Python worker that
has only the task (the entity class by reference, the table's name and endpoint); the
merged report is exact, and an export's parts are written by the executors."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynaorm import Session
from dynaorm.cli.main import main
from dynaorm.jobs import BackfillReport, backfill
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support.job_models import STEP, Counter, add_step, jobs_table

pyspark = pytest.importorskip("pyspark", reason="dynaorm[spark] is not installed")
pytestmark = pytest.mark.sync_only


#: the AWS configuration of the executors (S3: the moto server)
AWS = {"AWS_ACCESS_KEY_ID": "x", "AWS_SECRET_ACCESS_KEY": "x", "AWS_DEFAULT_REGION": "us-east-1"}


@pytest.fixture(scope="module")
def spark(dynaorm_moto_server: str) -> Iterator[Any]:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master("local[2]").appName("dynaorm-jobs")
               .config("spark.ui.enabled", "false")
               # (a JVM of a few minutes: C1's code and one GC thread cost a fraction of
               # C2's compiling and parallel GC's threads, and prove the same)
               .config("spark.driver.extraJavaOptions",
                       "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(sys.path)))
    for name, value in {**AWS, "AWS_ENDPOINT_URL_S3": dynaorm_moto_server}.items():
        builder = builder.config(f"spark.executorEnv.{name}", value)
    session = builder.getOrCreate()
    yield session
    session.stop()


@pytest.fixture
def db(ddb_local: str) -> Iterator[TestBackend]:
    with use_tables(jobs_table, endpoint_url=ddb_local, name_suffix=worker_suffix()) as b:
        yield b


def test_a_backfill_on_spark_changes_every_item_once(db: TestBackend, spark: Any) -> None:
    from dynaorm.spark import run

    Session(jobs_table).save_many([Counter(id=f"c{i:03}", n=i) for i in range(30)])
    job = backfill(Counter, add_step, segments=4, name="spark-1")
    assert run(job, spark) == BackfillReport(changed=30, conflicts=0, failed=[], scanned=30)
    assert run(job, spark) == BackfillReport(changed=30, conflicts=0, failed=[], scanned=30)
    stored = {o.id: o.n for o in Session(jobs_table).scan(Counter).consistent()}
    assert stored == {f"c{i:03}": i + STEP for i in range(30)}


def test_an_export_on_spark_from_a_scan_and_from_s3(
        ddb_local: str, spark: Any, dynaorm_moto_server: str, tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The executors scan their segments, or read their data files of a full export to
    S3, and write the parts: the datasets read back equal to the entities."""
    from dynaorm.jobs import export
    from dynaorm.jobs.export_files import s3_client
    from dynaorm.spark import run
    from tests.support.export_models import Ledger, Profile, exports
    from tests.support.exports import full_export, read_back, row_of

    for name, value in {**AWS, "AWS_ENDPOINT_URL_S3": dynaorm_moto_server}.items():
        monkeypatch.setenv(name, value)
    with use_tables(exports, endpoint_url=ddb_local, name_suffix=worker_suffix()) as tb:
        s = Session(exports)
        for i in range(8):
            s.save(Profile(id=f"p{i}", email=f"p{i}@x.io", age=i, tags={f"t{i}"}))
        s.save(Ledger(id="l1", balance=5, memo="m"))
        s.commit()
        s3 = s3_client()
        s3.create_bucket(Bucket="spark-exports")
        source = full_export(s3, "spark-exports", "full", tb.scan_raw(), files=3)
        want = sorted((row_of(p, ("ssn",), ("anything", "either")) for p in
                       s.scan(Profile).consistent()), key=lambda r: r["id"])
        for out, job in ((tmp_path / "scan", export(exports, tmp_path / "scan", segments=4)),
                         (tmp_path / "s3", export(exports, tmp_path / "s3", source=source))):
            report = run(job, spark)
            assert report.rows == {"profile": 8, "ledger": 1, "member": 0} and not report.failed
            assert sorted(read_back(out, "profile"), key=lambda r: r["id"]) == want
            assert [r["balance"] for r in read_back(out, "ledger")] == [5]
            if out.name == "s3":  # (the same writer's parts: Spark reads the first's)
                continue
            # Spark reads them too (a ``time`` field: Spark's TIME type, off by default)
            spark.conf.set("spark.sql.timeType.enabled", "true")
            frame = spark.read.parquet(str(out / "profile"))
            assert sorted((r["id"], r["age"], r["tags"]) for r in frame.collect()) == [
                (f"p{i}", i, [f"t{i}"]) for i in range(8)]
            assert dict(frame.dtypes)["balance"] == "decimal(12,2)"


def test_the_command_runs_a_backfill_on_spark(db: TestBackend, spark: Any,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    Session(jobs_table).save_many([Counter(id=f"c{i:03}", n=i) for i in range(6)])
    assert main(["backfill", "tests.support.job_models:Counter",
                 "tests.support.job_models:add_step", "--engine", "spark", "--segments", "3",
                 "--endpoint-url", str(db.endpoint_url)]) == 0
    assert "scanned 6 items, changed 6, 0 conflict(s) retried" in capsys.readouterr().out
    assert sorted(o.n for o in Session(jobs_table).scan(Counter)) == [
        i + STEP for i in range(6)]
