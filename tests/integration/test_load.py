"""``dynaorm.jobs.load`` and ``dynaorm load``: entities loaded with DynamoDB's bulk put
items through the rules, and ``jobs.export`` of one entity or one tenant with the export's
server-side filter. On the embedded default (moto, behind dynaorm's emulator of the bulk
API) and on DynamoDB Local (the rows, their conditions, the settling and ``dynaorm check``
on the reference engine; the bulk API itself served by the same emulator in front of it:
DynamoDB Local has none). The emulator's own behaviour is in ``test_bulk_api.py``."""

from __future__ import annotations

import gzip
import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import DynaormError, ItemExistsError, RequestError, Session, UniqueConstraintError
from dynaorm.jobs import LoadReport, NotLoadedError, load
from dynaorm.jobs.checking import check_table
from dynaorm.jobs.export_files import s3_client
from dynaorm.protocol.steps import call
from dynaorm.testing import (
    TestBackend,
    bulk_pace,
    inject_faults,
    moto_backend,
    use_tables,
    worker_suffix,
)
from tests.support.examples import examples
from tests.support.load_models import Account, Card, Memo, Wallet, loads, wallets

BUCKET = "loads"
WHEN = datetime(2026, 5, 1, 12, 0, tzinfo=UTC)


@pytest.fixture
def lb(backend: str | None, monkeypatch: pytest.MonkeyPatch) -> Iterator[TestBackend]:
    """``loads`` on the test's engine and moto's S3 in process; the bulk API is the
    embedded default's emulator, in front of whichever engine the table is on (its own
    requests go to that engine)."""
    from moto import mock_aws

    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    with mock_aws(), moto_backend(), use_tables(loads, endpoint_url=backend,
                                                 name_suffix=worker_suffix()) as b:
        s3_client().create_bucket(Bucket=BUCKET)
        yield b


def account(n: int, tenant: str = "acme", **more: Any) -> Account:
    values: dict[str, Any] = {"tenant_id": tenant, "acct_id": f"a{n:03d}",
                              "handle": f"{tenant}-h{n:03d}",
                              "email": f"{tenant}.A{n:03d}@x.io",
                              "balance": Decimal(n) / 4, "tags": [f"t{n % 3}"],
                              "prefs": {"k": n}, "extra": {"n": [n, "x"]},
                              "created": WHEN, "updated": WHEN, **more}
    return Account(**values)


def run_load(source: Any, name: str = "first", **more: Any) -> LoadReport:
    return load(loads, source, s3=f"s3://{BUCKET}/runs", name=name, poll=0, **more)


def stored(lb: TestBackend) -> list[dict[str, Any]]:
    """The table's items without what each write draws anew (the revision, the updated
    time ``Meta.timestamps`` stamps)."""
    return sorted(({k: v for k, v in i.items() if k not in ("_rev", "updated")}
                   for i in lb.scan_raw()),
                  key=lambda i: json.dumps(i, sort_keys=True, default=str))


def recoverable() -> None:
    """Point-in-time recovery on, which an export needs; an engine with no backups API
    (dynoxide) has none to turn on, and the emulator in front of it exports anyway."""
    try:
        loads.db.driver.run(call("UpdateContinuousBackups", {
            "TableName": loads.name,
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}))
    except RequestError as exc:
        if exc.code != "UnknownOperationException":
            raise


def readable_once(session: Session, objs: list[Account]) -> None:
    """Each object reads back as it was loaded (version 1, its updated time the load's)."""
    for obj in objs:
        got = session.get(Account, tenant_id=obj.tenant_id, acct_id=obj.acct_id)
        assert got is not None and got.updated is not None and got.updated > WHEN
        assert got.model_dump(exclude={"updated"}) == {
            **obj.model_dump(exclude={"updated"}), "version": 1}


def test_a_load_with_clashes_stores_the_rest_once_and_leaves_nothing_of_the_clashes(
        lb: TestBackend) -> None:
    """Unique and versioned entities loaded against existing items: every clash reported
    by field (a unique value taken, in any spelling its rule folds) or as
    ItemExistsError (an item at the key), none of their rows left (their other guards and
    version rows deleted), every other entity stored once; then ``dynaorm check`` is
    clean."""
    s = Session(loads)
    s.save(account(900, handle="taken", email="Taken@X.io"))
    s.save(account(1, handle="old"))  # (an item at account 1's key)
    s.commit()
    objs = [account(n) for n in range(1, 9)]
    objs[3] = account(4, email="TAKEN@x.io")  # (email folded by its rule: taken)
    objs[5] = account(6, handle="taken")
    objs.append(Memo(tenant_id="acme", memo_id="m1", body="hi"))
    report = run_load(objs)
    assert (report.entities, report.loaded, report.pending, report.left) == (9, 6, 0, [])
    by_key = {f.key["pk"]: f.error for f in report.failures}
    assert set(by_key) == {"T#acme#ACCT#a001", "T#acme#ACCT#a004", "T#acme#ACCT#a006"}
    assert isinstance(by_key["T#acme#ACCT#a001"], ItemExistsError)
    assert isinstance(by_key["T#acme#ACCT#a004"], UniqueConstraintError)
    assert by_key["T#acme#ACCT#a004"].field == "email"
    assert isinstance(by_key["T#acme#ACCT#a006"], UniqueConstraintError)
    assert by_key["T#acme#ACCT#a006"].field == "handle"
    readable_once(s, [o for o in objs if isinstance(o, Account) and o.acct_id in (
        "a002", "a003", "a005", "a007", "a008")])
    old = s.get(Account, tenant_id="acme", acct_id="a001")
    assert old is not None and old.handle == "old"
    assert check_table(loads).problems == []
    # (rows: 2 existing accounts x 4, 5 loaded x 4, a memo)
    assert len(lb.scan_raw()) == 2 * 4 + 5 * 4 + 1
    again = run_load(objs)  # the same load: its state, nothing sent again
    assert (again.loaded, len(again.failures), again.operations) == (
        6, 3, report.operations)
    assert {type(f.error) for f in again.failures} == {ItemExistsError,
                                                      UniqueConstraintError}


@pytest.mark.engines("moto")
@settings(max_examples=examples(12), deadline=None, suppress_health_check=[
    HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(["acme", "beta"]),
                          st.sampled_from(["free", "pro"]),
                          st.lists(st.sampled_from("abc"), max_size=2),
                          st.one_of(st.none(), st.integers(-3, 3))),
                min_size=1, max_size=4, unique_by=lambda t: (t[0], t[1])))
def test_a_loaded_entity_is_stored_exactly_as_a_save_stores_it(
        lb: TestBackend, drawn: list[tuple[int, str, str, list[str], int | None]]) -> None:
    """Property: the rows a load writes are the rows a save of the same new objects
    writes (every attribute, but the revision each write draws)."""
    def objs() -> list[Any]:
        return [account(n, tenant, plan=plan, tags=tags, extra=extra)
                if n % 2 else Memo(tenant_id=tenant, memo_id=f"m{n}", body=plan)
                for n, tenant, plan, tags, extra in drawn]

    _clear(lb)
    report = run_load(objs(), name=uuid.uuid4().hex)  # (a new load each example)
    assert report.ok and report.loaded == len(drawn)
    loaded = stored(lb)
    _clear(lb)
    with Session(loads) as s:
        for obj in objs():
            s.save(obj)
    assert stored(lb) == loaded


@pytest.mark.engines("moto")
def test_kinds_over_nested_models_and_lists_load_as_a_save_stores_them(
        lb: TestBackend) -> None:
    """Entities whose ``Offloaded`` values are nested models and lists (inline: below the
    threshold; a map, of one member too, is not a reference) and whose sealed values are a list's
    members and a nested model: a load stores the rows a save stores (every attribute
    but the revision; sealed ones binary, never the plaintext) and reads back as saved;
    one above the threshold is still refused, nothing written."""
    def objs(*ids: str) -> list[Wallet]:
        card = Card(pan="4111-0000-SECRET", at=WHEN)
        return [Wallet(wallet_id=i, card=card, cards=[card], labels={"k": i}, pans=[card.pan],
                       sealed=card) for i in ids]

    with use_tables(wallets, endpoint_url=lb.endpoint_url, name_suffix=worker_suffix()
                    ) as wb:
        report = load(wallets, objs("a", "b"), s3=f"s3://{BUCKET}/runs", name="w", poll=0)
        assert report.ok and report.loaded == 2
        loaded = {i["wallet_id"]["S"]: i for i in wb.scan_raw()}
        with Session(wallets) as s:
            for obj in objs("c"):
                s.save(obj)
        saved = next(i for i in wb.scan_raw() if i["wallet_id"]["S"] == "c")
        drawn = ("_rev", "pk", "wallet_id", "labels", "pans", "sealed")
        for item in loaded.values():
            assert set(item) == set(saved) and "SECRET" not in json.dumps(
                {a: item[a] for a in ("pans", "sealed")}, default=str)
            assert {a: av for a, av in item.items() if a not in drawn} == {
                a: av for a, av in saved.items() if a not in drawn}
            assert item["labels"] == {"M": {"k": item["wallet_id"]}}
            assert list(item["pans"]) == list(item["sealed"]) == ["B"]
        with Session(wallets) as s:
            assert [s.get(Wallet, wallet_id=i) for i in ("a", "b")] == objs("a", "b")
        big = objs("d")
        big[0].cards = [Card(pan="x" * 70_000, at=WHEN)]
        with pytest.raises(DynaormError, match="outside the table"):
            load(wallets, big, s3=f"s3://{BUCKET}/runs", name="big", poll=0)
        assert {i["wallet_id"]["S"] for i in wb.scan_raw()} == {"a", "b", "c"}


@pytest.mark.engines("moto")
def test_an_export_without_its_encrypted_fields_is_refused_before_anything_is_written(
        lb: TestBackend, tmp_path: Path) -> None:
    """``jobs.export``'s default (``encrypted="omit"``) leaves the sealed fields' columns
    out: loaded back, each entity would be stored with its model's defaults in their
    place, its secrets lost without a word. The load refuses such a source before it
    writes anything, over the stored entities and into an empty table alike, naming the
    fields and the export that keeps them, which loads back whole."""
    from dynaorm.jobs import export, run_local

    card = Card(pan="4111-0000-SECRET", at=WHEN)
    obj = Wallet(wallet_id="a", pans=[card.pan], sealed=card)
    with use_tables(wallets, endpoint_url=lb.endpoint_url, name_suffix=worker_suffix()
                    ) as wb:
        with Session(wallets) as s:
            s.save(obj)
        run_local(export(wallets, tmp_path / "out"))
        run_local(export(wallets, tmp_path / "kept", encrypted="decrypt"))
        for name in ("over", "fresh"):
            before = wb.scan_raw()
            with pytest.raises(DynaormError, match=r"Wallet.*pans, sealed.*encrypted='omit'"
                               r".*encrypted='decrypt'"):
                load(wallets, str(tmp_path / "out"), s3=f"s3://{BUCKET}/runs", name=name,
                     poll=0)
            assert wb.scan_raw() == before
            for item in before:
                wallets.db.driver.run(call("DeleteItem", {"TableName": wallets.name, "Key": {
                    "pk": item["pk"], "sk": item["sk"]}}))
        assert load(wallets, str(tmp_path / "kept"), s3=f"s3://{BUCKET}/runs", name="kept",
                    poll=0).ok
        assert Session(wallets).get(Wallet, wallet_id="a") == obj


def _clear(lb: TestBackend) -> None:
    for item in lb.scan_raw():
        loads.db.driver.run(call("DeleteItem", {"TableName": loads.name, "Key": {
            "pk": item["pk"], "sk": item["sk"]}}))


@pytest.mark.engines("moto")
def test_a_lost_answer_to_the_start_starts_one_operation(lb: TestBackend) -> None:
    """The start's answer lost after it was applied: the request goes again with the
    same token, and DynamoDB (the emulator) answers the operation already started."""
    objs = [account(n) for n in range(3)]
    with inject_faults(loads) as faults:
        faults.lose_answer("StartBulkPutItems", times=2)
        report = run_load(objs)
    assert report.ok and report.loaded == 3 and len(report.operations) == 1
    listed = loads.db.driver.run(call("ListBulkOperations", {"MaxResults": 25}))
    assert len(listed["BulkOperationsSummaryList"]) == 1
    assert check_table(loads).problems == []


class _Stop(Exception):
    """The loading process stopped (killed) while it waited."""


def test_a_load_stopped_while_it_waits_resumes_its_operation_and_applies_once(
        lb: TestBackend) -> None:
    """The process stops while the operation runs; run again with the same name, the load
    finds its input rendered and its operation started (the same token), waits for it
    and settles: every entity stored once, the clash reported."""
    s = Session(loads)
    s.save(account(99, handle="taken"))
    s.commit()
    objs = [account(n) for n in range(6)]
    objs[2] = account(2, handle="taken")

    def stop(done: int, total: int) -> None:
        raise _Stop

    with bulk_pace(5):
        with pytest.raises(_Stop):
            run_load(objs, progress=stop)
        seen: list[tuple[int, int]] = []
        report = run_load([], progress=lambda d, t: seen.append((d, t)))
    assert report.loaded == 5 and len(report.failures) == 1 and len(report.operations) == 1
    assert report.failures[0].error.field == "handle"  # type: ignore[attr-defined]
    assert seen[-1] == (24, 24) and len(seen) > 1  # (the pace: a few records a look)
    readable_once(s, [o for n, o in enumerate(objs) if n != 2])
    assert check_table(loads).problems == []


def test_a_cancelled_operation_leaves_no_half_entity_and_the_next_run_loads_the_rest(
        lb: TestBackend) -> None:
    """An operation cancelled half-way: the entities it wrote part of are taken back
    (not loaded: NotLoadedError), ``dynaorm check`` is clean; the load run again loads
    them in a new operation, each once."""
    objs = [account(n) for n in range(8)]
    cancelled: list[str] = []

    def cancel(done: int, total: int) -> None:
        if not cancelled:
            arn = loads.db.driver.run(call("ListBulkOperations", {}))[
                "BulkOperationsSummaryList"][0]["BulkOperationArn"]
            loads.db.driver.run(call("CancelBulkOperation", {"BulkOperationArn": arn}))
            cancelled.append(arn)

    with bulk_pace(6):  # (a load of 32 records: stopped after 6, mid-entity)
        first = run_load(objs, progress=cancel)
    assert first.status == "CANCELLED" and first.pending > 0
    assert first.loaded + first.pending == 8 and not first.failures
    assert check_table(loads).problems == []
    half = [f for f in first.failures if isinstance(f.error, NotLoadedError)]
    assert half == []  # (pending ones are counted, not failures)
    second = run_load([])
    assert second.ok and second.loaded == 8 and len(second.operations) == 2
    readable_once(Session(loads), objs)
    assert check_table(loads).problems == []


def test_a_second_writer_inside_the_operation_is_met_as_a_clash_or_reported_left(
        lb: TestBackend) -> None:
    """A second writer acting while the operation runs (after an entity's row was
    written, before its guard): it takes the e-mail the entity claims, so the entity's
    guard is refused; the load reports the clash by field and takes back the rows it
    wrote, the second writer's entity intact. A second writer that changed an entity of
    the load meanwhile (one whose guard clashes) keeps its change: the load does not
    delete over it, and reports the row it left (``dynaorm check`` names what is
    missing)."""
    objs = [account(1), account(2), account(3)]
    # (rows in plan order: version row, latest copy, handle's guard, e-mail's guard)
    s = Session(loads)

    def writer(done: int, total: int) -> None:
        if done == 2:  # account 1's version row and latest copy written
            s.save(account(901, email=objs[0].email.upper()))
            s.commit()
        if done == 6:  # account 2's latest copy written: changed, its e-mail then taken
            two = s.get(Account, tenant_id="acme", acct_id="a002")
            assert two is not None
            two.plan = "pro"
            s.save(two)
            s.save(account(902, email=objs[1].email))
            s.commit()

    with bulk_pace(2):
        report = run_load(objs, progress=writer)
    errors = {f.key["pk"]: f.error for f in report.failures}
    assert set(errors) == {"T#acme#ACCT#a001", "T#acme#ACCT#a002"} and report.loaded == 1
    assert all(isinstance(e, UniqueConstraintError) and e.field == "email"
               for e in errors.values())
    assert s.get(Account, tenant_id="acme", acct_id="a001") is None
    assert s.get(Account, tenant_id="acme", acct_id="a901") is not None
    two = s.get(Account, tenant_id="acme", acct_id="a002")
    assert two is not None and two.plan == "pro"  # (the second writer's change kept)
    assert [r for r in report.left if "a002" in r] and not report.ok
    problems = check_table(loads).problems
    assert problems and all("a002" in p for p in problems)


@pytest.mark.engines("moto")
def test_a_global_table_and_too_few_write_units_are_refused_with_the_reason(
        lb: TestBackend) -> None:
    from dynaorm import Rate

    with pytest.raises(DynaormError, match="below 1,024 write units"):
        run_load([account(1)], rate=Rate(write=100))
    report = run_load([account(1)], rate=Rate(write=2048))
    described = loads.db.driver.run(call("DescribeBulkOperation", {
        "BulkOperationArn": report.operations[0]}))["BulkOperationDescription"]
    assert described["MaxWriteRequestUnits"] == 2048
    loads.db.driver.run(call("UpdateTable", {"TableName": loads.name, "ReplicaUpdates": [
        {"Create": {"RegionName": "eu-west-1"}}]}))
    with pytest.raises(DynaormError, match=r"global table .*eu-west-1.*does not support"):
        run_load([account(2)], name="second")
    assert Session(loads).get(Account, tenant_id="acme", acct_id="a002") is None


@pytest.mark.engines("moto")
def test_parquet_iceberg_and_a_dynamodb_export_load_into_a_fresh_table(
        lb: TestBackend, tmp_path: Path) -> None:
    """What ``jobs.export`` writes (a folder of datasets by type name, an Iceberg table)
    and a DynamoDB export (entities' rows; guards and version rows made anew) load back:
    the same entities, every row of theirs."""
    from dynaorm.jobs import export, run_local

    objs = [account(n) for n in range(4)] + [Memo(tenant_id="beta", memo_id="m", body="b")]
    assert run_load(objs).ok
    before = stored(lb)
    run_local(export(loads, tmp_path / "out"))
    folder = _dynamodb_export()
    _clear(lb)
    assert run_load(str(tmp_path / "out"), name="from-parquet").loaded == 5
    assert stored(lb) == before
    _clear(lb)
    assert run_load(folder, name="from-export").loaded == 5
    assert stored(lb) == before
    from pyiceberg.catalog.sql import SqlCatalog

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"file://{tmp_path}/warehouse")
    run_local(export(loads, tmp_path / "staged", format="iceberg", catalog=catalog,
                     namespace="app"))
    _clear(lb)
    iceberg = catalog.load_table(("app", "Account"))
    assert run_load(iceberg, name="from-iceberg", entity=Account).loaded == 4
    assert stored(lb) == [i for i in before if i["_type"] == {"S": "Account"} or (
        i["_type"] == {"S": "dynaorm:unique"})]


def _dynamodb_export() -> str:
    """The folder of a DynamoDB export of ``loads`` to S3 (the table made recoverable
    first), as a load takes it."""
    recoverable()
    arn = loads.db.driver.run(call("DescribeTable", {"TableName": loads.name}))[
        "Table"]["TableArn"]
    manifest = loads.db.driver.run(call("ExportTableToPointInTime", {
        "TableArn": arn, "S3Bucket": BUCKET, "S3Prefix": "exp"}))["ExportDescription"][
        "ExportManifest"]
    return f"s3://{BUCKET}/{manifest.rsplit('/', 1)[0]}/"


@pytest.mark.engines("moto")
def test_a_dynamodb_exports_undeclared_attributes_are_reported_as_dropped(
        lb: TestBackend) -> None:
    """Items another writer gave attributes the model does not declare: a load from the
    table's export makes each entity anew, so it leaves them out, and its report says
    which and how many items held each (contract 25: say so plainly), never silence."""
    assert run_load([account(n) for n in range(3)]).ok
    for n, extra in ((0, {"legacy": {"S": "x"}}), (1, {"legacy": {"N": "1"},
                                                       "audit": {"BOOL": True}})):
        for row in (i for i in lb.scan_raw() if i["pk"]["S"] == f"T#acme#ACCT#a{n:03d}"):
            loads.db.driver.run(call("PutItem", {  # (the row and its latest copy)
                "TableName": loads.name, "Item": {**row, **extra}}))
    folder = _dynamodb_export()
    _clear(lb)
    with pytest.warns(RuntimeWarning, match=r"Account\.legacy \(2 items\)"):
        report = run_load(folder, name="exported")
    assert report.loaded == 3 and report.dropped == {"Account.legacy": 2, "Account.audit": 1}
    assert any("not declared" in line and "Account.audit" in line for line in report.lines())
    assert not [i for i in lb.scan_raw() if "legacy" in i or "audit" in i]
    with pytest.warns(RuntimeWarning, match="Account.audit"):
        again = run_load(folder, name="exported")
    assert again.dropped == report.dropped  # (a resumed load reports what it dropped)


def test_an_export_of_one_tenant_or_entity_sends_a_filter_and_holds_only_its_rows(
        lb: TestBackend, tmp_path: Path) -> None:
    """``jobs.export(..., scope=, entities=, start_export=)`` sends the export's
    FilterSpecification built from the model (the tenant's proven key prefix, the
    entities' type names): the export holds only those items, the datasets only those
    rows."""
    from dynaorm.jobs import export, run_local
    from tests.support.exports import read_back

    objs: list[Any] = [account(n, tenant) for n in range(3) for tenant in ("acme", "acmex")]
    objs += [Memo(tenant_id=t, memo_id="m", body=t) for t in ("acme", "acmex")]
    assert run_load(objs).ok
    if lb.endpoint_url is None:
        loads.db.driver.run(call("UpdateContinuousBackups", {
            "TableName": loads.name,
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}))
    sent: list[dict[str, Any]] = []
    loads.db.on_request(lambda e: sent.append(e.request) if (
        e.operation == "ExportTableToPointInTime") else None)
    job = export(loads, tmp_path / "acme", scope={"tenant_id": "acme"}, entities=[Account],
                 start_export=f"s3://{BUCKET}/filtered", poll=0)
    report = run_local(job)
    (request,) = sent
    spec = request["FilterSpecification"]
    assert spec["ExpressionAttributeValues"] == {":v0": {"S": "T#acme#ACCT#"},
                                                 ":v1": {"S": "Account"}}
    assert report.rows == {"Account": 3}
    rows = read_back(tmp_path / "acme", "Account")
    assert sorted((r["tenant_id"], r["acct_id"]) for r in rows) == [
        ("acme", "a000"), ("acme", "a001"), ("acme", "a002")]
    exported = _export_items(request)
    assert {i["pk"]["S"].split("#")[1] for i in exported} == {"acme"}
    assert {i["_type"]["S"] for i in exported} == {"Account"}
    # a scan export of one tenant: the same rows, no filter to send
    report = run_local(export(loads, tmp_path / "scan", scope={"tenant_id": "acmex"}))
    assert report.rows == {"Account": 3, "Memo": 1}
    with pytest.raises(DynaormError, match="proves no prefix"):
        export(loads, tmp_path / "x", scope={"acct_id": "a001"})


def _export_items(request: dict[str, Any]) -> list[dict[str, Any]]:
    """The items of the (one) export written under the request's prefix."""
    s3 = s3_client()
    listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=request["S3Prefix"])["Contents"]
    return [json.loads(line)["Item"] for o in listed if o["Key"].endswith(".json.gz")
            for line in gzip.decompress(s3.get_object(Bucket=BUCKET, Key=o["Key"])[
                "Body"].read()).splitlines()]
