"""Jobs on Apache Spark (contract 20): ``dynaorm.spark.run`` in Spark's local mode against
DynamoDB Local: the same picklable tasks as ``run_local``, one Spark task per segment,
each run by a Python worker that has only the task (the entity class by reference, the
table's name and endpoint); the merged report is exact."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import Session
from dynaorm.jobs import BackfillReport, backfill
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from dynaorm.tools.cli import main
from tests.support.job_models import STEP, Counter, add_step, jobs_table

pyspark = pytest.importorskip("pyspark", reason="dynaorm[spark] is not installed")
pytestmark = pytest.mark.sync_only


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    session = (SparkSession.builder.master("local[2]").appName("dynaorm-jobs")
               .config("spark.ui.enabled", "false")
               .config("spark.executorEnv.PYTHONPATH", os.pathsep.join(sys.path))
               .getOrCreate())
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


def test_the_command_runs_a_backfill_on_spark(db: TestBackend, spark: Any,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    Session(jobs_table).save_many([Counter(id=f"c{i:03}", n=i) for i in range(6)])
    assert main(["backfill", "tests.support.job_models:Counter",
                 "tests.support.job_models:add_step", "--engine", "spark", "--segments", "3",
                 "--endpoint-url", str(db.endpoint_url)]) == 0
    assert "scanned 6 items, changed 6, 0 conflict(s) retried" in capsys.readouterr().out
    assert sorted(o.n for o in Session(jobs_table).scan(Counter)) == [
        i + STEP for i in range(6)]
