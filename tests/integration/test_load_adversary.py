"""``dynaorm.jobs.load`` and the filtered ``jobs.export`` against an adversary (beside
``test_load.py``, the load's own behaviour; ``test_bulk_api.py``, the emulator's): what must
never happen, whatever the faults, the second writers and the bytes S3 hands back.

- Every entity is stored exactly as the rules imply (every rule at once, the user's rule
  among them), a clash between two entities of one load or with a stored one is reported by
  field, and afterwards no guard is without its owner nor an owner without its guards
  (``dynaorm check`` clean): a property over random loads, cancelled at a random record and
  resumed.
- Faults: the process killed while it settles, a lost answer to a rollback's delete, the
  token's 8 hours gone by: never a row reported "left" that is not, never applied twice.
- A second writer inside the window (after the operation wrote an entity's rows, before the
  load read its report): an entity it changed lives on with its guards; its delete of a
  clashing entity is refused by the guards' owners.
- The report is bytes from S3 (a network input): an object that is not a report, a record
  that is not one, a condition failure it makes up, or a few hundred kilobytes that inflate
  to gigabytes never make the load crash, lie or hold more than a bounded amount of memory.
- A filtered export of one tenant holds no row of a tenant whose name extends it.
- Memory: rendering holds one part, whatever the source's size.

The emulator's own answers are checked against botocore's service model in
``test_bulk_api.py``.
"""

from __future__ import annotations

import gzip
import json
import sys
import tracemalloc
import uuid
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from dynaorm import (
    DynaormError,
    ItemExistsError,
    RequestError,
    Session,
    UniqueConstraintError,
)
from dynaorm.jobs import LoadReport, load
from dynaorm.jobs.checking import check_table
from dynaorm.jobs.export_files import s3_client
from dynaorm.protocol.steps import call
from dynaorm.schema.rules import RULES
from dynaorm.testing import (
    TestBackend,
    bulk_pace,
    inject_faults,
    moto_backend,
    use_tables,
    worker_suffix,
)
from tests.support.examples import examples
from tests.support.load_adversary_models import Member, Org, Person, bare, tenants
from tests.support.load_models import Account, Memo, loads
from tests.support.rule_matrix import EXPIRES, PAST, build, matrix_rules

BUCKET = "loads"
WHEN = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)
#: the module of ``dynaorm.jobs.load`` (the package's ``load`` is the function)
LOAD = sys.modules["dynaorm.jobs.load"]


def _aws(monkeypatch: pytest.MonkeyPatch) -> None:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)


@pytest.fixture
def lb(backend: str | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestBackend]:
    """The load tables on the test's engine and moto's S3 in process, the bulk API the
    embedded default's emulator in front of the engine."""
    from moto import mock_aws

    _aws(monkeypatch)
    with mock_aws(), moto_backend(), use_tables(loads, bare, tenants, endpoint_url=backend,
                                                 name_suffix=worker_suffix()) as b:
        s3_client().create_bucket(Bucket=BUCKET)
        yield b


def account(n: int, tenant: str = "acme", **more: Any) -> Account:
    values: dict[str, Any] = {"tenant_id": tenant, "acct_id": f"a{n:03d}",
                              "handle": f"{tenant}-h{n:03d}",
                              "email": f"{tenant}.A{n:03d}@x.io",
                              "balance": Decimal(n) / 4, "created": WHEN, "updated": WHEN,
                              **more}
    return Account(**values)


def person(n: int) -> Person:
    return Person(pid=f"p{n:03d}", handle=f"h{n:03d}", email=f"e{n:03d}@x.io")


def run_load(table: Any, source: Any, name: str = "first", **more: Any) -> LoadReport:
    return load(table, source, s3=f"s3://{BUCKET}/runs", name=name, poll=0, **more)


def saved(table: Any, *objs: Any) -> None:
    with Session(table) as s:
        for obj in objs:
            s.save(obj)


def keys(lb: TestBackend, table: Any) -> list[tuple[str, str]]:
    return sorted((i["pk"]["S"], i["sk"]["S"]) for i in lb.scan_raw(table))


def in_window(act: Any) -> Any:
    """A ``progress`` that runs ``act()`` once, when the operation has processed every
    record and before the load reads its report (the last look before settling)."""
    done: list[bool] = []

    def progress(processed: int, rows: int) -> None:
        if processed == rows and not done:
            done.append(True)
            act()
    return progress


def _cancel_first(table: Any) -> Any:
    """A ``progress`` that cancels the (newest) operation at its first look."""
    done: list[bool] = []

    def cancel(processed: int, rows: int) -> None:
        if not done:
            done.append(True)
            arn = table.db.driver.run(call("ListBulkOperations", {}))[
                "BulkOperationsSummaryList"][0]["BulkOperationArn"]
            try:
                table.db.driver.run(call("CancelBulkOperation", {"BulkOperationArn": arn}))
            except RequestError as exc:  # (it ended before: nothing to cancel)
                assert "only an operation in progress" in exc.message
    return cancel


class _Stop(Exception):
    """The loading process stopped (killed)."""


# -- a second writer inside the window ---------------------------------------------------
@pytest.mark.engines("moto", "local")
def test_an_entity_a_second_writer_changed_lives_on_with_its_guards(lb: TestBackend) -> None:
    """Account 1 clashes (its e-mail is taken), but inside the window a second writer
    reads it and saves a change: the entity is that writer's now. The load reports the
    clash by field and takes back nothing of it (its delete of the changed row is refused:
    the entity lives on, so its handle's guard and its history are its own); no one can
    then claim account 1's handle twice. (Before: the load deleted the guard under the live
    owner, and a third writer saved the same handle.)"""
    saved(loads, account(900, email="taken@x.io"))
    objs = [account(1, email="taken@x.io"), account(2)]
    s = Session(loads)

    def change() -> None:
        one = s.get(Account, tenant_id="acme", acct_id="a001")
        assert one is not None
        one.plan = "pro"
        s.save(one)
        s.commit()

    report = run_load(loads, objs, progress=in_window(change))
    (failure,) = report.failures
    assert isinstance(failure.error, UniqueConstraintError) and failure.error.field == "email"
    assert report.loaded == 1 and [r for r in report.left if "a001" in r]
    one = s.get(Account, tenant_id="acme", acct_id="a001")
    assert one is not None and one.plan == "pro" and one.version == 2
    assert ("handle#acme-h001", "handle#acme-h001") in keys(lb, loads)
    assert ("T#acme#ACCT#a001", "v00000001_A") in keys(lb, loads)  # (its history kept)
    with pytest.raises(UniqueConstraintError) as refused:
        saved(loads, account(3, handle=objs[0].handle))
    assert refused.value.field == "handle"
    # what is left is the second writer's doing: a001 holds an e-mail a900's guard holds
    problems = check_table(loads).problems
    assert problems and all("a001" in p and "email" in p for p in problems), problems


@pytest.mark.engines("moto")
def test_a_second_writers_delete_of_a_clashing_entity_is_refused_and_the_load_settles(
        lb: TestBackend) -> None:
    """Inside the window a second writer deletes account 1, whose e-mail guard is
    another's: its commit is refused (the guard is not its owner's), and the load settles
    the clash as if no one had come."""
    saved(loads, account(900, email="taken@x.io"))
    told: list[BaseException] = []

    def delete() -> None:
        s = Session(loads)
        one = s.get(Account, tenant_id="acme", acct_id="a001")
        assert one is not None
        s.delete(one)
        try:
            s.commit()
        except DynaormError as exc:
            told.append(exc)

    report = run_load(loads, [account(1, email="taken@x.io"), account(2)],
                      progress=in_window(delete))
    assert len(told) == 1 and report.loaded == 1 and report.left == []
    assert Session(loads).get(Account, tenant_id="acme", acct_id="a001") is None
    assert check_table(loads).problems == []


# -- faults: killed, lost answers, the token's window -------------------------------------
@pytest.mark.engines("moto")
def test_a_load_killed_while_it_settles_reports_nothing_left_when_run_again(
        lb: TestBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """The process is killed after the first of a failed entity's rollback deletes; run
    again, the load settles the round anew: the rows it deleted already are gone, not
    "changed by another writer" (before: reported left, ``report.ok`` false on a clean
    table)."""
    saved(loads, account(1, handle="old", email="old@x.io"))
    real = LOAD._Load.send
    deletes: list[str] = []

    def send(self: Any, operation: str, request: dict[str, Any]) -> dict[str, Any]:
        if operation == "DeleteItem":
            deletes.append(operation)
            if len(deletes) == 2:
                raise _Stop
        answer: dict[str, Any] = real(self, operation, request)
        return answer

    monkeypatch.setattr(LOAD._Load, "send", send)
    with pytest.raises(_Stop):
        run_load(loads, [account(1), account(2)])
    monkeypatch.setattr(LOAD._Load, "send", real)
    report = run_load(loads, [])
    assert report.left == [] and report.loaded == 1
    assert [type(f.error) for f in report.failures] == [ItemExistsError]
    assert check_table(loads).problems == []


@pytest.mark.engines("moto", "local")
def test_a_lost_answer_to_a_rollback_delete_is_not_a_row_left(lb: TestBackend) -> None:
    """A rollback delete applied and its answer lost: sent again, its condition is false
    because the row is gone, which is what the load wanted, not a row another writer
    changed (before: reported left)."""
    saved(loads, account(1, handle="old", email="old@x.io"))
    with inject_faults(loads) as faults:
        faults.lose_answer("DeleteItem")
        report = run_load(loads, [account(1), account(2)])
    assert faults.sent["DeleteItem"] >= 3  # (two guards taken back, one sent twice)
    assert report.left == [] and report.loaded == 1
    assert check_table(loads).problems == []


@pytest.mark.engines("moto")
def test_a_load_resumed_past_its_tokens_window_applies_once(
        lb: TestBackend, monkeypatch: pytest.MonkeyPatch) -> None:
    """Killed while the operation ran, run again after the token's 8 hours: DynamoDB starts
    a second operation of the same input, whose conditions refuse every row the first
    wrote; the load tells its own rows by their revision: every entity stored once, the
    clash reported by field, nothing left."""
    import dynaorm.testing.emulation.bulk as bulk

    saved(loads, account(99, handle="taken"))
    objs = [account(n) for n in range(5)]
    objs[2] = account(2, handle="taken")

    def stop(processed: int, rows: int) -> None:
        raise _Stop

    with bulk_pace(5):
        with pytest.raises(_Stop):
            run_load(loads, objs, progress=stop)
        monkeypatch.setattr(bulk, "_TOKEN_SECONDS", 0.0)
        report = run_load(loads, [])
    assert (report.loaded, report.left) == (4, [])
    (failure,) = report.failures
    assert isinstance(failure.error, UniqueConstraintError) and failure.error.field == "handle"
    listed = loads.db.driver.run(call("ListBulkOperations", {}))["BulkOperationsSummaryList"]
    assert len(listed) == 2
    assert len(lb.scan_raw(loads)) == 5 * 4
    assert check_table(loads).problems == []


# -- the report is bytes from S3 ----------------------------------------------------------
def _planted(key: str, body: bytes) -> Any:
    """A ``progress`` that puts ``body`` under the round's report prefix, in the window."""
    return in_window(lambda: s3_client().put_object(
        Bucket=BUCKET, Key=f"runs/first/round-1/report/AWSDynamoDBBulkPut/x/{key}",
        Body=body))


HOSTILE = {
    "not gzip": b"not gzip at all",
    "cut short": gzip.compress(b'{"OutputType": "ERROR"}\n' * 100)[:40],
    "not an object": gzip.compress(b"[1, 2]\n"),
    "an item of no attribute values": gzip.compress(
        b'{"OutputType": "CONDITION_CHECK_FAILURE", "Item": {"pk": 5, "sk": [1]}}\n'),
    "a key of no type": gzip.compress(
        b'{"OutputType": "CONDITION_CHECK_FAILURE", "Item": {"pk": {"Q": "x"}}}\n'),
    "an existing item that is none": gzip.compress(json.dumps({
        "OutputType": "CONDITION_CHECK_FAILURE", "ExistingItem": 7, "Item": {
            "pk": {"S": "T#acme#ACCT#a002"}, "sk": {"S": "v0_A"}}}).encode() + b"\n"),
}


@pytest.mark.engines("moto")
@pytest.mark.parametrize("body", list(HOSTILE.values()), ids=list(HOSTILE))
def test_a_report_object_that_is_not_a_report_is_never_taken_at_its_word(
        lb: TestBackend, body: bytes) -> None:
    """An object under the report's prefix that is not a report (not gzip, cut short, a
    line that is not a record, a record whose item is not one) makes the load read every
    row back, never crash (before: a corrupt object raised ExportError from every run of
    the load: it could never settle)."""
    report = run_load(loads, [account(1), account(2)], progress=_planted("junk.json.gz", body))
    assert report.ok and report.loaded == 2
    assert check_table(loads).problems == []


@pytest.mark.engines("moto")
def test_a_condition_failure_the_report_makes_up_leaves_no_orphan_guard(
        lb: TestBackend) -> None:
    """A record of a condition failure for a row the operation wrote (account 2's handle
    guard, "held by" another owner): no count checks such a record, so the load reads the
    row back, finds it as it wrote it and stores account 2 (before: it failed account 2 and
    deleted its other rows, leaving the guard without its owner: the handle blocked for
    good)."""
    guard = {"pk": {"S": "handle#acme-h002"}, "sk": {"S": "handle#acme-h002"}}
    line = json.dumps({"OutputType": "CONDITION_CHECK_FAILURE", "Item": guard,
                       "ExistingItem": {**guard, "owner_pk": {"S": "T#evil"}}}).encode()
    report = run_load(loads, [account(1), account(2)],
                      progress=_planted("forged.json.gz", gzip.compress(line + b"\n")))
    assert report.ok and report.loaded == 2
    assert check_table(loads).problems == []


@pytest.mark.engines("moto")
def test_a_report_object_that_inflates_to_gigabytes_is_read_in_bounded_memory(
        lb: TestBackend) -> None:
    """100 KB of gzip under the report's prefix that inflate to 100 MB of one line (six
    times the longest line a report holds; held whole, past the peak asserted): the load
    reads it a megabyte at a time, gives up on a line no report holds, reads the rows back
    and settles (before: 644 MB at the peak for 300 MB, tracemalloc's count; a few such
    objects, or a larger one, and the process is gone)."""
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = b"\0" * (1 << 20)
    bomb = b"".join(z.compress(zeros) for _ in range(100)) + z.flush()
    assert len(bomb) < 400_000
    tracemalloc.start()
    try:
        report = run_load(loads, [account(1)], progress=_planted("bomb.json.gz", bomb))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.ok and report.loaded == 1
    assert peak < 64e6, f"{peak / 1e6:.0f} MB"


# -- one load's own entities, and every rule -------------------------------------------------
@pytest.mark.engines("moto", "local")
def test_entities_of_one_load_that_clash_with_each_other_are_reported_by_field(
        lb: TestBackend) -> None:
    """Two new entities of one load with the same handle, the same object twice, and an
    e-mail another entity of the load holds in another case: one of each stored, each other
    reported by field (or as an item at its key), nothing of them left."""
    objs = [account(1), account(2, handle=account(1).handle), account(1),
            account(3, email=account(1).email.upper())]
    report = run_load(loads, objs)
    assert report.loaded == 1 and report.left == [] and not report.pending
    errors = sorted((f.key["pk"], type(f.error).__name__, getattr(f.error, "field", None))
                     for f in report.failures)
    assert errors == [("T#acme#ACCT#a001", "ItemExistsError", None),
                      ("T#acme#ACCT#a002", "UniqueConstraintError", "handle"),
                      ("T#acme#ACCT#a003", "UniqueConstraintError", "email")]
    assert len(lb.scan_raw(loads)) == 4
    assert check_table(loads).problems == []


@pytest.mark.engines("moto")
def test_an_entity_that_clashed_with_one_the_load_took_back_loads_in_the_next_round(
        lb: TestBackend) -> None:
    """Account 2 is stored; the load brings account 2 again (an item at its key) with
    e-mail h2, whose guard the operation writes, then account 4 with the same e-mail, whose
    guard is refused. Settling takes account 2's guard back: the e-mail account 4 met is
    free, so account 4 is pending, not a clash (before: reported UniqueConstraintError on
    an e-mail no one holds), and the next run stores it."""
    saved(loads, account(2, handle="h2", email="h0@x.io"))
    objs = [account(2, handle="h2", email="h2@x.io"), account(4, handle="h4", email="H2@x.io")]
    first = run_load(loads, objs)
    assert [type(f.error) for f in first.failures] == [ItemExistsError]
    assert (first.loaded, first.pending, first.left) == (0, 1, [])
    second = run_load(loads, [])
    assert second.loaded == 1 and second.pending == 0
    four = Session(loads).get(Account, tenant_id="acme", acct_id="a004")
    assert four is not None and four.email == "H2@x.io"
    assert check_table(loads).problems == []


_POOL = ["h0", "h1", "h2", "h3"]


@pytest.mark.engines("moto")
@settings(max_examples=examples(15), deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    phases=[Phase.explicit, Phase.reuse, Phase.generate])  # (shrinking a load is slow)
@given(stored=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(_POOL),
                                 st.sampled_from(_POOL)),
                       max_size=2, unique_by=lambda t: t[0]),
       source=st.lists(st.tuples(st.integers(0, 5), st.sampled_from(_POOL),
                                 st.sampled_from(_POOL)), min_size=1, max_size=5),
       pace=st.one_of(st.none(), st.integers(1, 6)))
def test_any_load_cancelled_anywhere_and_resumed_ends_consistent(
        lb: TestBackend, stored: list[tuple[int, str, str]],
        source: list[tuple[int, str, str]], pace: int | None) -> None:
    """Property: stored accounts, a source of accounts drawn from a few keys, handles and
    e-mails (clashes with the stored ones and among themselves, the same key twice), the
    operation cancelled at a random record (or not), the load run again until nothing is
    pending: every entity of the source is either stored as it was loaded or failed with
    the error a save would raise (a unique clash naming a field whose value another stored
    account holds, an item at its key), each once; no row left; ``dynaorm check`` clean."""
    for item in lb.scan_raw(loads):
        loads.db.driver.run(call("DeleteItem", {"TableName": loads.name, "Key": {
            "pk": item["pk"], "sk": item["sk"]}}))
    before: list[Account] = []
    for n, h, e in stored:  # (what is stored is consistent: no value held twice)
        if all(h != b.handle and f"{e}@x.io" != b.email for b in before):
            before.append(account(n, handle=h, email=f"{e}@x.io"))
    saved(loads, *before)
    objs = [account(n, handle=h, email=f"{e.upper()}@x.io") for n, h, e in source]
    name = uuid.uuid4().hex
    if pace is None:
        report = run_load(loads, objs, name=name)
    else:
        with bulk_pace(pace):
            report = run_load(loads, objs, name=name, progress=_cancel_first(loads))
    for _ in range(3):
        if not report.pending:
            break
        report = run_load(loads, [], name=name)
    assert report.pending == 0 and report.left == [], report.lines()
    assert report.loaded + len(report.failures) == len(objs), report.lines()
    assert check_table(loads).problems == []
    now = {a.acct_id: a for a in Session(loads).scan(Account)}
    for old in before:  # (what was stored is untouched)
        got = now[old.acct_id]
        assert (got.handle, got.email, got.version) == (old.handle, old.email, 1)
    fresh = [a for a in now.values() if a.acct_id not in {b.acct_id for b in before}]
    assert len(fresh) == report.loaded, report.lines()
    for got in fresh:  # (each stored once, at version 1, as one of the source)
        assert got.version == 1 and any((o.acct_id, o.handle, o.email) == (
            got.acct_id, got.handle, got.email) for o in objs), got
    for failure in report.failures:
        obj = next(o for o in objs if f"T#acme#ACCT#{o.acct_id}" == failure.key["pk"])
        if isinstance(failure.error, UniqueConstraintError):
            field = failure.error.field
            assert any(str(getattr(a, field)).lower() == str(getattr(
                failure.error, "value", None) or getattr(obj, field)).lower()
                for a in now.values()) or any(
                str(getattr(a, field)).lower() == str(getattr(o, field)).lower()
                for a in now.values() for o in objs if o.acct_id == obj.acct_id), (
                failure, report.lines())
        else:
            assert isinstance(failure.error, ItemExistsError), failure
            assert obj.acct_id in now, failure
    for field in ("handle", "email"):  # no value held twice
        values = [str(getattr(a, field)).lower() for a in now.values()]
        assert len(values) == len(set(values)), (field, values)


@pytest.mark.engines("moto")
def test_every_rule_at_once_is_stored_as_the_rules_imply_and_clashes_by_field(
        backend: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """One entity with every rule of the registry but a previous layout and an offloaded
    value (revision, timestamps and TTL, shards, indexes, a vector, compressed, encrypted,
    the user's rule, unique, versioned): loaded rows are exactly what the rules imply (its
    guard a MAC of the encrypted value, carrying its owner's TTL; its version row apart
    from the indexes; ciphertexts that open only in their own row); an encrypted unique
    value taken is a clash naming its field; a value held by an owner whose TTL has passed
    is claimed, as a save claims it; ``dynaorm check`` clean."""
    from moto import mock_aws

    # (an offloaded value is refused by a load: test_offload.py's, with its S3)
    combo = tuple(sorted((n for n in matrix_rules() if n not in ("previous", "offloaded")),
                         key=lambda n: RULES[n].order))
    m = build(combo)
    _aws(monkeypatch)
    with mock_aws(), moto_backend(), use_tables(m.table, endpoint_url=backend,
                                                 name_suffix=worker_suffix()) as tb:
        s3_client().create_bucket(Bucket=BUCKET)
        saved(m.table, m.new("x", code="code-taken"), m.new("old", code="code-free",
                                                             expires=PAST))
        objs = [m.new("a"), m.new("b", secret="secret-longer-b"),
                m.new("c", code="code-taken"), m.new("d", code="code-free")]
        report = run_load(m.table, objs)
        (failure,) = report.failures
        assert isinstance(failure.error, UniqueConstraintError)
        assert failure.error.field == "code" and report.loaded == 3 and report.left == []
        s = Session(m.table)
        live = {i: s.get(m.cls, id=i, consistent=True) for i in ("a", "b", "d", "x")}
        expired = m.new("old", code="code-free", expires=PAST, version=1)
        history = {i: [dict(o.__dict__)] for i, o in {**live, "old": expired}.items()}
        m.assert_rows(tb.scan_raw(), live, history, expired={"old": expired},
                      claimed=frozenset({"old"}))
        assert live["d"].expires == EXPIRES  # type: ignore[attr-defined]
        assert check_table(m.table).problems == []


@pytest.mark.engines("moto")
def test_an_entity_in_a_previous_layouts_window_refuses_the_load_before_it_writes(
        backend: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    """An entity in a previous layout's window is not loaded as a save stores it: a save's
    insert checks that no row of the old layout holds the entity, which a bulk put's
    per-item condition cannot. The closest honest behaviour (0.9's strict xfail, kept
    unbuilt: proving it at settling costs a read of every entity's old key): the load is
    refused with the reason and the way (``save``) before any row is written."""
    from moto import mock_aws

    m = build(("previous",))
    _aws(monkeypatch)
    with mock_aws(), moto_backend(), use_tables(m.table, endpoint_url=backend,
                                                 name_suffix=worker_suffix()) as tb:
        s3_client().create_bucket(Bucket=BUCKET)
        with pytest.raises(DynaormError, match=r"window's old row.*load it with save"):
            run_load(m.table, [m.new("a")])
        assert tb.scan_raw() == []
        s = Session(m.table)  # (the way it names)
        s.save(m.new("a"))
        s.commit()
        live = {"a": Session(m.table).get(m.cls, id="a", consistent=True)}
        m.assert_rows(tb.scan_raw(), live)


# -- an operation stopped inside an entity -------------------------------------------------
@pytest.mark.engines("moto", "local")
def test_an_operation_stopped_between_a_version_row_and_its_latest_copy_leaves_neither(
        lb: TestBackend) -> None:
    """The operation is cancelled after 9 of 24 records: accounts 0 and 1 whole, and
    account 2's version row alone. A version row carries no revision, and its entity has
    no row: no one's but the load's, so it is taken back and account 2 is pending (before:
    the version row was left, account 2 reported ItemExistsError, and a save of it then
    met its own history); run again, every account is stored once."""
    objs = [account(n) for n in range(6)]
    with bulk_pace(3):  # (3 records a look: the first look, the list and the cancel)
        first = run_load(loads, objs, progress=_cancel_first(loads))
    assert first.status == "CANCELLED" and not first.failures
    assert (first.loaded, first.pending, first.left) == (2, 4, [])
    assert not [k for k in keys(lb, loads) if "a002" in k[0]]
    assert check_table(loads).problems == []
    second = run_load(loads, [])
    assert second.ok and second.loaded == 6 and len(keys(lb, loads)) == 6 * 4
    assert check_table(loads).problems == []


@pytest.mark.engines("moto")
def test_a_clashing_entity_stopped_inside_leaves_no_guard_its_owner_does_not_hold(
        lb: TestBackend) -> None:
    """Account 1 is stored (handle h1, e-mail one@); the load brings account 1 again with
    the same handle and another e-mail, and is cancelled after its e-mail's guard was
    written. That guard names account 1, whose row holds another e-mail: no owner claims
    it, so it is the load's, taken back (before: left behind as an orphan guard, the
    e-mail blocked, ``dynaorm check`` not clean); account 1 is ItemExistsError."""
    saved(loads, account(1, handle="h1", email="one@x.io"))
    with bulk_pace(2):  # (the look, the list: account 1's 4 records; then the cancel)
        report = run_load(loads, [account(1, handle="h1", email="two@x.io"), account(2)],
                          progress=_cancel_first(loads))
    assert report.status == "CANCELLED"
    assert [type(f.error) for f in report.failures] == [ItemExistsError]
    assert ("email#two@x.io", "email#two@x.io") not in keys(lb, loads)
    assert check_table(loads).problems == []


# -- a table without a revision attribute ------------------------------------------------------
@pytest.mark.engines("moto")
def test_a_cancelled_load_on_a_table_without_revisions_leaves_no_half_entity(
        lb: TestBackend) -> None:
    """On a table without a revision attribute the operation is cancelled inside person 2
    (its version row written, not its latest copy): the version row is no one's but the
    load's (no row at its entity's key), taken back; person 2 is pending and the next run
    stores it (before: the version row was left and person 2 reported ItemExistsError)."""
    with bulk_pace(3):  # (9 of the 24 records: persons 0 and 1 whole, one row of 2)
        first = run_load(bare, [person(n) for n in range(6)], progress=_cancel_first(bare))
    assert first.status == "CANCELLED" and first.pending == 4
    assert not [k for k in keys(lb, bare) if "p002" in k[0]]
    second = run_load(bare, [])
    assert second.pending == 0 and second.left == [] and len(keys(lb, bare)) == 6 * 4
    got = Session(bare).get(Person, pid="p002")
    assert got is not None and got.version == 1
    assert check_table(bare).problems == []


@pytest.mark.engines("moto")
def test_a_cancelled_load_on_a_table_without_revisions_reports_what_it_stored(
        lb: TestBackend) -> None:
    """On a table without a revision attribute, a cancelled operation's entities written
    whole are stored, not ItemExistsError: an entity's row found as the load wrote it,
    which the operation's report (it names each row whose condition failed) does not
    name, is the load's, and so are its other rows (was a strict xfail of 0.9)."""
    with bulk_pace(3):
        first = run_load(bare, [person(n) for n in range(6)], progress=_cancel_first(bare))
    assert not first.failures, [str(f.error) for f in first.failures]
    assert (first.loaded, first.pending) == (2, 4)


# -- the source is the load's --------------------------------------------------------------------
@pytest.mark.engines("moto")
def test_a_name_loads_one_source_and_refuses_another(lb: TestBackend, tmp_path: Path) -> None:
    """A second source under a load's name is refused with the reason (before: the load
    found its state, rendered nothing of the new source and reported the first source's
    outcome as its own: ``ok``, exit 0, not one of the new entities loaded)."""
    from dynaorm.jobs import export, run_local

    saved(loads, account(1))
    run_local(export(loads, tmp_path / "monday"))
    saved(loads, account(2))
    run_local(export(loads, tmp_path / "tuesday"))
    for item in lb.scan_raw(loads):
        loads.db.driver.run(call("DeleteItem", {"TableName": loads.name, "Key": {
            "pk": item["pk"], "sk": item["sk"]}}))
    assert run_load(loads, str(tmp_path / "monday"), name="nightly").loaded == 1
    with pytest.raises(DynaormError, match="a name is one load"):
        run_load(loads, str(tmp_path / "tuesday"), name="nightly")
    assert run_load(loads, str(tmp_path / "monday"), name="nightly").loaded == 1  # (resumed)
    assert run_load(loads, str(tmp_path / "tuesday"), name="tuesday").loaded == 1
    assert len(lb.scan_raw(loads)) == 2 * 4


# -- filtered exports -----------------------------------------------------------------------------
@pytest.mark.engines("moto", "local")
def test_a_tenant_export_holds_no_row_of_a_tenant_whose_name_extends_it(
        lb: TestBackend, tmp_path: Path) -> None:
    """Tenants ``acme`` and ``acme-corp``: an organisation's key is the tenant's whole key
    (``T#acme``), a member's is under its prefix (``T#acme#M#``). The export of tenant
    ``acme`` (its filter sent to DynamoDB) holds exactly acme's rows, version rows
    included, and nothing of ``acme-corp`` (before: ``begins_with(pk, 'T#acme')`` put every
    row of acme-corp in acme's export, in S3, where the datasets left them out); a tenant
    value holding a separator is refused."""
    from dynaorm.jobs import export, run_local

    saved(tenants, *[obj for t in ("acme", "acme-corp", "acm") for obj in (
        Org(tenant_id=t, name=t), Member(tenant_id=t, member_id="m1", login=f"{t}-1"))])
    if lb.endpoint_url is None:
        tenants.db.driver.run(call("UpdateContinuousBackups", {
            "TableName": tenants.name,
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}))
    report = run_local(export(tenants, tmp_path / "acme", scope={"tenant_id": "acme"},
                              start_export=f"s3://{BUCKET}/filtered", poll=0))
    assert report.rows == {"Org": 1, "Member": 1}
    s3 = s3_client()
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix="filtered")["Contents"]
    items = [json.loads(line)["Item"] for o in listed if o["Key"].endswith(".json.gz")
             for line in gzip.decompress(s3.get_object(Bucket=BUCKET, Key=o["Key"])[
                 "Body"].read()).splitlines()]
    assert sorted((i["pk"]["S"], i["sk"]["S"]) for i in items) == [
        ("T#acme", "ORG"), ("T#acme#M#m1", "v00000001_M"), ("T#acme#M#m1", "v0_M")]
    with pytest.raises(DynaormError, match="#"):
        export(tenants, tmp_path / "x", scope={"tenant_id": "acme#M"},
               start_export=f"s3://{BUCKET}/sep", poll=0)


# -- memory ----------------------------------------------------------------------------------
@pytest.mark.engines("moto")
def test_rendering_holds_one_part_whatever_the_sources_size(lb: TestBackend) -> None:
    """tracemalloc's peak while a load renders 600 and then 2,400 entities (a generator,
    parts of 500 rows) and starts its operation, less what is still held after it (moto's
    S3 keeps the parts): the same, a part's worth (0.6 MB), not the source's."""
    def transient(n: int) -> int:
        objs = (Memo(tenant_id="acme", memo_id=f"m{i:05d}", body="x" * 200)
                for i in range(n))

        def stop(processed: int, rows: int) -> None:
            raise _Stop

        tracemalloc.start()
        try:
            with bulk_pace(1), pytest.raises(_Stop):
                run_load(loads, objs, name=f"mem-{n}", part_rows=500, progress=stop)
            current, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
        return peak - current

    small, large = transient(600), transient(2_400)
    assert large < 4e6 and large < small * 1.5 + 1e6, (small, large)
