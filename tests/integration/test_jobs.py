"""Jobs (contract 20, "Beyond one machine"): ``dynaorm.jobs`` backfill, migrate and check
split into picklable tasks, run in processes, on DynamoDB Local (moto is not atomic: the
races here need a real engine; tests without a race run on every engine too). The
adversary kills tasks at random points, runs them twice at once and changes items during
the job: every item is changed exactly once, no newer state is overwritten, and the
merged report is exact."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import multiprocessing
import os
import pickle
import random
import signal
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dynaorm
from dynaorm import DynaormError, Rate, Session
from dynaorm.cli.main import main
from dynaorm.errors import ConflictError
from dynaorm.jobs import MARK, BackfillReport, Job, backfill, run_local
from dynaorm.jobs.checking import check_table
from dynaorm.protocol.events import Reason
from dynaorm.protocol.policy import Budget
from dynaorm.protocol.steps import call
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.support.concurrency import join_all
from tests.support.engines import on_engine
from tests.support.examples import examples
from tests.support.job_models import (
    STEP,
    Counter,
    Doc,
    add_step,
    add_step_as_new_object,
    add_step_if_rate_untouched,
    add_step_or_fail,
    add_step_to_even,
    jobs_table,
)
from tests.support.migration_models import Account, OldAccount, OldLedger, mig, old

pytestmark = pytest.mark.sync_only  # processes and threads of the sync client


@pytest.fixture
def db(ddb_local: str) -> Iterator[TestBackend]:
    with use_tables(jobs_table, endpoint_url=ddb_local, name_suffix=worker_suffix()) as b:
        yield b


@pytest.fixture
def every(backend: str | None) -> Iterator[TestBackend]:
    """``jobs_table`` on every engine, moto in-process too: for jobs run in this process
    (``run_local``'s one worker), with no race to need an atomic engine."""
    yield from on_engine(backend, jobs_table)


def _fill(count: int, cls: type[Any] = Counter) -> dict[str, int]:
    s = Session(jobs_table)
    values = {f"c{i:03}": i for i in range(count)}
    objs = [cls(id=k, n=v) for k, v in values.items()]
    s.save_many(objs)
    return values


def _stored(cls: type[Any] = Counter) -> dict[str, Any]:
    return {o.id: o for o in Session(jobs_table).scan(cls).consistent()}


def _marks(db: TestBackend) -> dict[str, str]:
    """The job names each marked item holds (one name: as a string; several: joined)."""
    return {i["pk"]["S"]: ",".join(sorted(i[MARK]["SS"])) for i in db.scan_raw() if MARK in i}


def test_a_backfill_changes_every_item_once_in_processes(db: TestBackend) -> None:
    values = _fill(40)
    job = backfill(Counter, add_step, segments=4, name="add-1")
    assert pickle.loads(pickle.dumps(job.tasks())) == job.tasks()
    report = run_local(job, workers=2)
    assert report == BackfillReport(changed=40, conflicts=0, failed=[], scanned=40)
    assert {k: o.n for k, o in _stored().items()} == {k: v + STEP for k, v in values.items()}
    assert set(_marks(db).values()) == {"add-1"} and len(_marks(db)) == 40
    again = run_local(job, workers=1)  # the same job again: counted, changed no more
    assert again == report
    assert {k: o.n for k, o in _stored().items()} == {k: v + STEP for k, v in values.items()}
    assert check_table(jobs_table).problems == []  # (the marker is no problem to check)


def test_a_job_resumed_after_another_job_changes_each_item_once(every: TestBackend) -> None:
    """(0.6, contract 21) A job resumed after another job (another name) changed the
    same items changes none of them twice: the marker keeps every job name (0.5 kept the
    last one: the resumed job applied its change again)."""
    values = _fill(12)
    first = backfill(Counter, add_step, segments=2, name="grant-a")
    done = dict([first.run(first.tasks()[0])])  # (killed after its first segment)
    assert done[0].changed > 0
    assert run_local(backfill(Counter, add_step, segments=2, name="grant-b")).changed == 12
    resumed = run_local(first)
    assert resumed.changed == 12 and resumed.conflicts == 0
    assert {k: o.n for k, o in _stored().items()} == {
        k: v + 2 * STEP for k, v in values.items()}
    assert set(_marks(every).values()) == {"grant-a,grant-b"}


def test_fn_returning_a_new_object_changes_the_item_read(every: TestBackend) -> None:
    """(0.6) ``fn`` may return a new object in place of the one it got: it is saved as a
    change of the item read (0.5 saved it as an insert: five conflicts an item, with no
    other writer, and nothing changed)."""
    values = _fill(6)
    report = run_local(backfill(Counter, add_step_as_new_object, name="renew"))
    assert report == BackfillReport(changed=6, conflicts=0, failed=[], scanned=6)
    assert {k: o.n for k, o in _stored().items()} == {k: v + STEP for k, v in values.items()}


def test_a_task_holds_its_requests_to_its_budget_not_its_client(db: TestBackend) -> None:
    """(0.6) A task's share of the job's budget holds its own requests; the table's
    shared client keeps its rate (0.5 swapped it for the task's length, so every other
    thread on that client was held to the task's budget meanwhile)."""
    _fill(4)
    report = run_local(backfill(Counter, add_step_if_rate_untouched, name="budgeted",
                                rate=Rate(read=1000, write=1000)))
    assert report.changed == 4 and report.failed == []


def test_fn_none_leaves_an_item_alone_and_a_versioned_entity_gets_its_next_version(
        db: TestBackend) -> None:
    s = Session(jobs_table)
    for i in range(6):
        s.save(Doc(id=f"d{i}", n=i))
    s.commit()
    report = run_local(backfill(Doc, add_step_to_even, segments=2), workers=1)
    assert (report.changed, report.scanned, report.failed) == (3, 6, [])
    docs = _stored(Doc)
    assert {k: (d.n, d.version) for k, d in docs.items()} == {
        f"d{i}": (i + STEP, 2) if i % 2 == 0 else (i, 1) for i in range(6)}
    assert [v.n for v in Session(jobs_table).history(Doc, id="d0").all()] == [0, STEP]
    # (0.6) the version row the change wrote is the latest copy as written: marked too
    marked = {(i["pk"]["S"], i["sk"]["S"]) for i in db.scan_raw() if MARK in i}
    assert {k for k in marked if k[0] == "DOC#d0"} == {("DOC#d0", "v0_D"),
                                                      ("DOC#d0", "v00000002_D")}


class Killed(BaseException):
    """A worker dying in the middle of a task (not an Exception: nothing catches it)."""


def _killing(after: int) -> Any:
    calls = iter(range(10**9))

    def fn(obj: Counter) -> Counter:
        if next(calls) == after:
            raise Killed
        return add_step(obj)
    return fn


def _bump(stop: threading.Event, bumps: dict[str, int], seed: int) -> None:
    """A second writer: ``n += 1`` on random items (save's conditions; lost races
    retried from a fresh read) until ``stop``; counts what it committed."""
    rng = random.Random(seed)
    s = Session(jobs_table)
    while not stop.is_set():
        key = f"c{rng.randrange(12):03}"
        for _ in range(20):
            obj = s.get(Counter, id=key, consistent=True)
            obj.n += 1
            s.save(obj)
            try:
                s.commit()
            except ConflictError:
                s.rollback()
                continue
            bumps[key] = bumps.get(key, 0) + 1
            break


@settings(max_examples=examples(6), deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), kills=st.lists(st.integers(0, 5), min_size=1, max_size=3))
def test_adversary_kills_twice_run_tasks_and_a_second_writer(
        db: TestBackend, seed: int, kills: list[int]) -> None:
    """Tasks killed at random points (one change's answer lost, with another writer
    bumping an item after DynamoDB applied it), run again, every task run twice at once,
    and a second writer bumping items all along: each item ends at its value + the writer's
    bumps + STEP exactly once, and the merged report counts every item once."""
    for item in db.scan_raw():  # (hypothesis reuses the fixture's table: start empty)
        jobs_table.db.driver.run(call("DeleteItem", {"TableName": jobs_table.name, "Key": {
            "pk": item["pk"], "sk": item["sk"]}}))
    values = _fill(12)
    job = backfill(Counter, add_step, segments=3, name=f"adv-{seed}")
    rng = random.Random(seed)
    bumps: dict[str, int] = {}

    def bump_in_the_window() -> None:  # another writer, after a change applied, before
        key = f"c{rng.randrange(12):03}"  # its answer (lost) arrives
        s = Session(jobs_table)
        obj = s.get(Counter, id=key, consistent=True)
        assert obj is not None
        obj.n += 1
        s.save(obj)
        s.commit()
        bumps[key] = bumps.get(key, 0) + 1

    for after in kills:  # a killed run of a random task: some items done, others not; one
        task = rng.choice(job.tasks())  # change's answer lost with a writer in its window
        with inject_faults(jobs_table) as faults, contextlib.suppress(Killed):
            faults.lose_answer("UpdateItem", skip=rng.randrange(3), after=bump_in_the_window)
            job.run(dataclasses.replace(task, fn=_killing(after)))
    stop = threading.Event()
    writer = threading.Thread(target=_bump, args=(stop, bumps, seed))
    writer.start()
    results: list[tuple[int, Any]] = []
    try:
        runs = [threading.Thread(target=lambda t=t: results.append(job.run(t)))
                for t in job.tasks() * 2]  # every task twice, at once
        join_all(runs)
    finally:
        stop.set()
        writer.join()
    report = job.merge(results)
    assert report.changed == 12 and report.failed == [] and report.scanned == 12
    stored = _stored()
    assert {k: o.n for k, o in stored.items()} == {
        k: v + bumps.get(k, 0) + STEP for k, v in values.items()}
    assert set(_marks(db).values()) == {f"adv-{seed}"} and len(_marks(db)) == 12


def _run_all(job: Job) -> None:
    for task in job.tasks(parallel=1):
        job.run(task)


def test_a_worker_killed_by_sigkill_mid_job_then_the_job_run_again(db: TestBackend) -> None:
    """A worker process killed (SIGKILL: no cleanup at all) once it has changed some of
    the items, at a random count; the job run again changes the rest, each item once."""
    values = _fill(60)
    job = backfill(Counter, add_step, segments=2, rate=Rate(write=40), name="sigkill")
    proc = multiprocessing.get_context("spawn").Process(target=_run_all, args=(job,))
    proc.start()
    at = random.randrange(5, 40)
    deadline = time.monotonic() + 60
    while len(_marks(db)) < at and proc.is_alive() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert proc.pid is not None
    os.kill(proc.pid, signal.SIGKILL)
    proc.join()
    partly = len(_marks(db))
    assert at <= partly < 60  # killed in the middle (40 a second: 60 items take 1.5 s)
    report = run_local(job, workers=2)
    assert report == BackfillReport(changed=60, conflicts=0, failed=[], scanned=60)
    assert {k: o.n for k, o in _stored().items()} == {k: v + STEP for k, v in values.items()}


def test_a_failing_fn_is_listed_and_the_other_items_are_changed(db: TestBackend) -> None:
    values = _fill(8)
    report = run_local(backfill(Counter, add_step_or_fail, segments=2), workers=1)
    assert report.changed == 7 and report.scanned == 8
    assert report.failed == ["Counter {'pk': 'COUNTER#c003', 'sk': 'C'}: add_step_or_fail "
                             "raised ValueError('bad data')"]
    assert {k: o.n for k, o in _stored().items()} == {
        k: v + (STEP if k != "c003" else 0) for k, v in values.items()}


def test_a_throttle_halves_the_budget(db: TestBackend) -> None:
    client = jobs_table.db
    client.rate = Rate(write=1000)
    try:
        with inject_faults(jobs_table) as faults:
            faults.throttle("PutItem", times=2)
            s = Session(jobs_table)
            s.save(Counter(id="t1"))
            s.commit()  # throttled twice, then written
        budget = client.policy.budget
        assert budget is not None and budget.scale[True] == pytest.approx(0.25 * 1.02)
        assert Session(jobs_table).get(Counter, id="t1") is not None
    finally:
        client.rate = None


def test_merge_needs_every_segment_and_keeps_one_result_per_segment(db: TestBackend) -> None:
    job = backfill(Counter, add_step, segments=3)
    part = BackfillReport(changed=2, scanned=2)
    with pytest.raises(DynaormError, match=r"no result for segments \[2\]"):
        job.merge([(0, part), (1, part)])
    assert job.merge([(0, part), (1, part), (2, part), (2, part)]).changed == 6


def test_options_are_checked() -> None:
    with pytest.raises(DynaormError, match=r"rate= takes a dynaorm\.Rate"):
        backfill(Counter, add_step, rate=5)  # type: ignore[arg-type]
    with pytest.raises(DynaormError, match="segments= must be"):
        backfill(Counter, add_step, segments=0)
    with pytest.raises(DynaormError, match="positive number"):
        Rate(write=0)
    with pytest.raises(DynaormError, match=r"rate= takes a dynaorm\.Rate"):
        dynaorm.Client(rate={"write": 5})  # type: ignore[arg-type]
    with pytest.raises(DynaormError, match="has no entity classes"):
        dynaorm.jobs.migrate(dynaorm.Table("empty"))


# -- capacity budgets -----------------------------------------------------------------------
def test_budget_waits_for_consumed_units_and_adapts_down_on_throttles() -> None:
    now = [0.0]
    budget = Budget(Rate(write=10), clock=lambda: now[0])
    assert budget.wait("PutItem") == 0 and budget.wait("Query") == 0
    budget.spent("PutItem", 5.0)
    assert budget.wait("PutItem") == pytest.approx(0.5) and budget.wait("GetItem") == 0
    budget.judge("PutItem", dynaorm.RequestError("PutItem", "ThrottlingException", "slow"))
    budget.spent("PutItem", 5.0)  # (now at half the rate)
    assert budget.wait("PutItem") == pytest.approx(0.5 + 1.0)
    budget.judge("PutItem", dynaorm.RequestError("PutItem", "ValidationException", "no"))
    assert budget.scale == {True: pytest.approx(0.5 * 1.02), False: 1.0}


def test_throttling_reasons_slow_the_kind_they_name() -> None:
    """A throttle slows its own request's kind, unless its ThrottlingReasons name another
    (an index's writes throttled under a read: writes slow down, reads do not)."""
    budget = Budget(Rate(read=10, write=10), clock=lambda: 0.0)
    budget.judge("Query", dynaorm.ThrottledError("Query", "ThrottlingException", "slow"))
    assert budget.scale == {True: 1.0, False: 0.5}
    write = dynaorm.ThrottlingReason("IndexWriteProvisionedThroughputExceeded", "arn:i")
    budget.judge("Query", dynaorm.ThrottledError(
        "Query", "ProvisionedThroughputExceededException", "slow", [write]))
    assert budget.scale == {True: 0.5, False: 0.5}
    both = [write, dynaorm.ThrottlingReason("TableReadAccountLimitExceeded", "arn:t")]
    budget.judge("PutItem", dynaorm.ThrottledError("PutItem", "ThrottlingException", "", both))
    assert budget.scale == {True: 0.25, False: 0.25}
    budget.judge("PutItem", dynaorm.RequestError("TransactWriteItems", "Transaction"
                                                 "CanceledException", "", [Reason("None")]))
    assert budget.scale == {True: 0.25, False: 0.25}  # (not a throttle)
    budget.spent("PutItem", 1.0)
    assert budget.wait("PutItem") == pytest.approx(1 / (10 * 0.25))


def test_a_job_budget_holds_across_its_workers(db: TestBackend) -> None:
    _fill(30)
    started = time.monotonic()
    report = run_local(backfill(Counter, add_step, segments=2, rate=Rate(write=15)),
                       workers=2)
    elapsed = time.monotonic() - started
    assert report.changed == 30
    assert elapsed >= 30 / 15 - 0.5  # 30 write units at 15 a second, both workers together


def test_client_rate_holds_reads_to_the_budget(db: TestBackend) -> None:
    _fill(20)
    client = jobs_table.db
    seen: list[float] = []
    client.rate = Rate(read=4)
    try:
        started = time.monotonic()
        for _ in range(4):  # each: one page of 20 small items
            seen.append(len(Session(jobs_table).scan(Counter).consistent().all()))
        elapsed = time.monotonic() - started
    finally:
        client.rate = None
    units = jobs_table.db.driver.run(call("Scan", {
        "TableName": jobs_table.name, "ConsistentRead": True,
        "ReturnConsumedCapacity": "TOTAL"}))["ConsumedCapacity"]["CapacityUnits"]
    assert seen == [20] * 4 and units > 0
    assert elapsed >= 3 * units / 4 - 0.1  # (the first scan is free: the next wait for it)


# -- migrate and check as jobs ----------------------------------------------------------------
@pytest.fixture
def mig_db(ddb_local: str) -> Iterator[TestBackend]:
    """``mig`` on DynamoDB Local, with ``old`` (its previous design) naming the same table."""
    with use_tables(mig, endpoint_url=ddb_local, name_suffix=worker_suffix()) as tb:
        saved = (old.name, old.binding())
        old.name = mig.name  # (the previous release: another process, a client of its own)
        old.restore((None, {}, dynaorm.Client(mig.endpoint_url)))
        try:
            yield tb
        finally:
            old.name = saved[0]
            old.restore(saved[1])


def test_migrate_and_check_as_jobs_in_processes(mig_db: TestBackend) -> None:
    s = Session(old)
    for n in range(12):
        s.save(OldAccount(id=f"a{n}", mail=f"u{n}@x.io"))
    ledger = OldLedger(id="l1", code="C1")
    s.save(ledger)
    s.commit()
    ledger.balance = 5
    s.save(ledger)
    s.commit()
    # (a dry run's task is a migration's: its pickling and its workers are the next run's)
    dry = run_local(dynaorm.jobs.migrate(mig, segments=3, dry_run=True), workers=1)
    assert dry.found == {"Account": 12, "Ledger": 1} and dry.moved == {} and dry.done
    report = run_local(dynaorm.jobs.migrate(mig, segments=3), workers=2)
    assert report.moved == {"Account": 12, "Ledger": 1} and report.left == [] and report.ok
    assert report.failed == [] and report.scanned >= dry.scanned  # (moved rows: seen again)
    again = run_local(dynaorm.jobs.migrate(mig, segments=3), workers=1)
    assert again.found == {} and again.ok  # nothing left to move: a re-run changes nothing
    # a problem: an account's row deleted behind dynaorm's back leaves its guard orphaned
    row = Session(mig).get(Account, id="a3")
    mig.db.driver.run(call("DeleteItem", {"TableName": mig.name, "Key": {
        "pk": {"S": "ACCOUNT#a3"}, "sk": {"S": "PROFILE"}}}))
    whole = check_table(mig)
    found = run_local(dynaorm.jobs.check(mig, segments=4), workers=2)
    assert row is not None and len(whole.problems) == 1 and "orphan" in whole.problems[0]
    assert sorted(found.problems) == sorted(whole.problems)
    assert found.scanned == whole.scanned and found.left == 1
    fixed = run_local(dynaorm.jobs.check(mig, segments=4, fix=True), workers=1)
    assert fixed.repaired == 1 and fixed.left == 0
    assert run_local(dynaorm.jobs.check(mig, segments=2), workers=1).problems == []


def test_the_commands_take_engine_local(mig_db: TestBackend,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    s = Session(old)
    for n in range(5):
        s.save(OldAccount(id=f"a{n}", mail=f"u{n}@x.io"))
    s.commit()
    ref, where = "tests.support.migration_models:mig", ["--endpoint-url", str(mig.endpoint_url)]
    job = ["--engine", "local", "--segments", "3", "--write-units", "50"]
    assert main(["migrate", ref, *job, "--workers", "2", *where]) == 0
    assert "Account: 5 in the previous layout, moved 5" in capsys.readouterr().out
    # (the check in this process: its workers are test_migrate_and_check_as_jobs_in_processes')
    assert main(["check", ref, *job, "--workers", "1", *where]) == 0
    assert "0 problem(s)" in capsys.readouterr().out
    assert main(["migrate", ref, *job, "--checkpoint", "m.json", *where]) == 2
    assert main(["check", ref, *job, "--checkpoint", "c.json", *where]) == 2
    assert "--checkpoint goes without --engine" in capsys.readouterr().err
    assert main(["backfill", "tests.support.migration_models:Account",
                 "tests.support.job_models:nothing", *where]) == 2
    assert "has no attribute 'nothing'" in capsys.readouterr().err


def test_rate_on_a_scan_and_on_bulk_calls_sync_and_async(db: TestBackend) -> None:
    started = time.monotonic()
    Session(jobs_table).save_many([Counter(id=f"c{i:03}", n=i) for i in range(40)],
                                  rate=Rate(write=20), concurrency=1)
    wrote = time.monotonic() - started  # 25 units at once, then 15 once they are paid for
    # (requests sent at once go before any answer says what they cost: concurrency=1)
    assert wrote >= 25 / 20 - 0.1
    started = time.monotonic()
    pages = [len(Session(jobs_table).scan(Counter, rate=Rate(read=2)).page_size(10)
                 .consistent().all()) for _ in range(2)]
    read = time.monotonic() - started  # 8 pages of about 1 unit each, at 2 a second
    assert pages == [40, 40] and read >= 7 * 0.5 - 0.2

    async def run() -> tuple[int, float]:
        from dynaorm import AsyncSession

        s = AsyncSession(jobs_table)
        begun = time.monotonic()
        found = await s.scan(Counter, rate=Rate(read=2)).page_size(20).consistent().all()
        await s.delete_many(found, rate=Rate(write=20))  # 40 loaded: 40 conditioned deletes
        return len(found), time.monotonic() - begun

    count, took = asyncio.run(run())
    assert count == 40 and took >= 0.5 + (40 - 4) / 20 - 0.3  # (4 deletes in flight)
    assert Session(jobs_table).scan(Counter).consistent().all() == []
    assert jobs_table.db.rate is None  # (a call's budget is its own, not the client's)


def test_a_backfill_from_an_export_to_s3_rejudges_each_item_live(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """One task per data file of a DynamoDB export (the embedded default writes one for a
    small table): each
    exported item is read again live, so a change made after the export is kept, a
    deleted item is skipped, and an item made after the export is not in it."""
    from moto import mock_aws

    from dynaorm.jobs.export_files import s3_client
    from dynaorm.testing import moto_backend

    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    with mock_aws(), moto_backend(), use_tables(jobs_table, name_suffix=worker_suffix()):
        values = _fill(6)
        s3 = s3_client()
        s3.create_bucket(Bucket="exports")
        arn = jobs_table.db.driver.run(call("DescribeTable", {"TableName": jobs_table.name}))[
            "Table"]["TableArn"]
        jobs_table.db.driver.run(call("UpdateContinuousBackups", {
            "TableName": jobs_table.name,
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}))
        summary = jobs_table.db.driver.run(call("ExportTableToPointInTime", {
            "TableArn": arn, "S3Bucket": "exports", "S3Prefix": "snap",
            "ExportFormat": "DYNAMODB_JSON"}))["ExportDescription"]["ExportManifest"]
        (key,) = [o["Key"] for o in s3.list_objects_v2(
            Bucket="exports", Prefix=summary.rsplit("/", 1)[0] + "/data/")["Contents"]]
        s = Session(jobs_table)
        later = s.get(Counter, id="c001")
        assert later is not None
        later.n = 500  # changed after the export: the backfill starts from 500
        s.save(later)
        s.delete(Counter, id="c002")
        s.save(Counter(id="new", n=7))  # not in the export
        s.commit()
        export = "s3://exports/" + key.split("/data/")[0] + "/"
        job = backfill(Counter, add_step, export=export, name="from-export")
        assert len(job.tasks()) == 1 and job.tasks()[0].files == (
            f"s3://exports/{key}",)
        report = run_local(job, workers=1)
        assert report == BackfillReport(changed=5, conflicts=0, failed=[], scanned=6)
        stored = {k: o.n for k, o in _stored().items()}
        assert stored == {**{k: v + STEP for k, v in values.items() if k != "c002"},
                          "c001": 500 + STEP, "new": 7}
        with pytest.raises(DynaormError, match="no data files under"):
            backfill(Counter, add_step, export="s3://exports/nothing/")
