"""The seams of release 0.9 (contract 24), attacked pair by pair by someone who wrote none
of them: the round trip and ``StoredAs`` (a), inference (b), leases (c), the public door's
``Session.run`` (d), scoped sessions (e), bulk loads (f), offloaded values and keys per
tenant (g). Each test states what must never happen where two surfaces meet. Nothing here
depends on the engine: moto only."""

from __future__ import annotations

import sys
import types
import uuid
import warnings
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Annotated, Any

import pytest

from dynaorm import (
    DynaormError,
    Encrypted,
    Entity,
    Lease,
    LeaseError,
    Offloaded,
    OffloadError,
    ScopeError,
    Session,
    StaticKeyring,
    StoredAs,
    Table,
)
from dynaorm.testing import TestBackend, moto_backend, use_tables

pytestmark = [pytest.mark.engines("moto"), pytest.mark.sync_only]

WHEN = datetime(2026, 1, 1, 10, 30, tzinfo=UTC)
EPOCH = str(int(WHEN.timestamp()))


@pytest.fixture
def moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in process, boto3's own clients (inference's) included."""
    from moto import mock_aws

    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    with mock_aws(), moto_backend():
        yield


# -- (a) x (b): the model inference prints writes a time as the table stores it -------------
times = Table("seams09_times")


class Visit(Entity):
    """An optional epoch time spelled as pydantic lets one spell it: the ``Annotated``
    inside the ``| None``."""

    class Meta:
        table = times
        pk = "V#{visit_id}"
        sk = "VISIT"

    visit_id: str
    expires: Annotated[datetime, StoredAs.EPOCH_SECONDS] | None = None


def test_an_optional_stored_as_time_is_written_in_its_format(moto: None) -> None:
    """``Annotated[datetime, StoredAs.EPOCH_SECONDS] | None`` stores a number, as
    ``Annotated[datetime | None, StoredAs.EPOCH_SECONDS]`` does: never ISO text beside
    the other writers' numbers (it did, silently), and reads back, changed or not."""
    with use_tables(times) as b:
        with Session(times) as s:
            s.save(Visit(visit_id="v1", expires=WHEN))
        (item,) = b.scan_raw()
        assert item["expires"] == {"N": EPOCH}
        with Session(times) as s:
            got = s.get(Visit, visit_id="v1")
            assert got is not None and got.expires == WHEN
            got.expires = WHEN + timedelta(seconds=1)
            s.save(got)
        (item,) = b.scan_raw()
        assert item["expires"] == {"N": str(int(WHEN.timestamp()) + 1)}


def _defined(code: str) -> Table:
    module = types.ModuleType(f"seams09_inferred_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module  # (pydantic resolves annotations through it)
    exec(compile(code, "<inferred>", "exec"), module.__dict__)
    return next(v for v in vars(module).values() if isinstance(v, Table))


def test_the_inferred_model_of_an_optional_epoch_time_saves_numbers(moto: None) -> None:
    """Inference of a table whose items hold an epoch time on some items only prints an
    optional ``StoredAs`` time; a save through the printed model (a new object, and a
    changed time of a loaded one) stores a number there, never ISO text the table's other
    writers cannot read as their time."""
    import boto3

    from dynaorm.client.infer import infer_code

    with use_tables(times) as b:
        raw = boto3.client("dynamodb", region_name="us-east-1")
        for n in range(6):
            item: dict[str, Any] = {"pk": {"S": f"V#v{n}"}, "sk": {"S": "VISIT"},
                                    "visit_id": {"S": f"v{n}"}}
            if n % 2:
                item["expires"] = {"N": str(int(WHEN.timestamp()) + n)}
            raw.put_item(TableName=times.name, Item=item)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            code, _ = infer_code(times.name, client=raw, report=None)
        assert "StoredAs.EPOCH_SECONDS" in code, code
        table = _defined(code)
        cls = next(iter(table.entities.values()))
        table.connect(None, "us-east-1")
        with Session(table) as s:
            s.save(cls(visit_id="new", expires=WHEN))
            old = s.get(cls, visit_id="v0")
            assert old is not None
            old.expires = WHEN
            s.save(old)
        stored = {i["visit_id"]["S"]: i.get("expires") for i in b.scan_raw()}
        assert stored["new"] == {"N": EPOCH} and stored["v0"] == {"N": EPOCH}, stored


# -- (d) x (c): an operation run by Session.run holding a lease -----------------------------
work = Table("seams09_work")


class Doc(Entity):
    class Meta:
        table = work
        pk = "T#{tenant_id}#D#{doc_id}"
        sk = "DOC"

    tenant_id: str
    doc_id: str
    n: int = 0


class JobLease(Lease):
    class Meta:
        table = work
        pk = "T#{tenant_id}#LEASE#{job}"
        sk = "LEASE"

    tenant_id: str
    job: str


def _leased(s: Session, holder: str, n: int) -> Any:
    """Acquire the job's lease with a first write, then hold it for a second: one
    operation, as a surface writes it for ``Session.run``."""
    lease = s.lease(JobLease, holder=holder, duration=timedelta(seconds=30),
                    tenant_id="acme", job="j")
    s.save(Doc(tenant_id="acme", doc_id="d1", n=n))
    yield s.commit
    doc = yield partial(s.get, Doc, tenant_id="acme", doc_id="d1")
    s.lease(lease)
    doc.n = n + 1
    s.save(doc)
    yield s.commit
    return lease


def test_a_run_refused_its_lease_leaves_nothing_for_a_later_commit(moto: None) -> None:
    """A second holder's operation is refused at its first commit (``LeaseError``) and
    nothing it staged is stored, then or by the session's next commit; a scoped session
    reaches no other tenant's lease, by key or by the lease object."""
    with use_tables(work) as b:
        first = Session(work)
        lease = first.run(_leased(first, "w1", 1))
        before = b.scan_raw()
        second = Session(work)
        with pytest.raises(LeaseError):
            second.run(_leased(second, "w2", 10))
        assert b.scan_raw() == before
        second.save(Doc(tenant_id="acme", doc_id="d2"))
        second.commit()
        rows = {i["sk"]["S"] + i["pk"]["S"]: i for i in b.scan_raw()}
        assert len(rows) == 3 and rows["DOCT#acme#D#d1"]["n"] == {"N": "2"}
        assert rows["LEASET#acme#LEASE#j"]["holder"] == {"S": "w1"}
        other = Session(work, scope={"tenant_id": "globex"})
        with pytest.raises(ScopeError):
            other.lease(JobLease, holder="g", duration=timedelta(seconds=30),
                        tenant_id="acme", job="j")
        with pytest.raises(ScopeError):
            other.lease(lease)


# -- (f) x (a): a bulk load of StoredAs times, loaded and saved back ------------------------
stamped = Table("seams09_stamped")


class Event(Entity):
    class Meta:
        table = stamped
        pk = "T#{tenant_id}#E#{event_id}"
        sk = "EVENT"
        unique = ("ref",)
        versioned = True

    tenant_id: str
    event_id: str
    ref: str
    total: int = 0
    placed: Annotated[datetime, StoredAs.EPOCH_SECONDS] | None = None
    seen: Annotated[datetime | None, StoredAs("%Y/%m/%d %H:%M")] = None


def test_a_loaded_entity_stores_its_formats_and_a_save_back_keeps_them(moto: None) -> None:
    """``jobs.load`` renders each time in its ``StoredAs`` format (the optional one too),
    as ``save`` does; a loaded object changed elsewhere and saved back keeps both as
    stored, the latest copy and the new version row alike."""
    import boto3

    from dynaorm.jobs import load

    with use_tables(stamped) as b:
        boto3.client("s3").create_bucket(Bucket="seams09-loads")
        report = load(stamped, [Event(tenant_id="acme", event_id=f"e{n}", ref=f"r{n}",
                                      placed=WHEN, seen=WHEN) for n in range(2)],
                      s3="s3://seams09-loads/runs", name="first", poll=0)
        assert report.loaded == 2 and not report.failures
        with Session(stamped) as s:
            got = s.get(Event, tenant_id="acme", event_id="e1")
            assert got is not None and got.placed == WHEN and got.seen == WHEN
            got.total = 7
            s.save(got)
        rows = [i for i in b.scan_raw() if "event_id" in i]
        assert len(rows) == 5  # (two latest copies, three version rows)
        assert all(i["placed"] == {"N": EPOCH} and i["seen"] == {"S": "2026/01/01 10:30"}
                   for i in rows), rows


# -- (f) x (g), (b) x (g): offloaded values, keys per tenant, forget -------------------------
OFFLOAD_BUCKET = "seams09-offload"
kept = Table("seams09_kept", offload=f"s3://{OFFLOAD_BUCKET}/v/", offload_threshold=1024,
             keyring=StaticKeyring(b"k" * 32), key_scope="tenant_id")


class Paper(Entity):
    class Meta:
        table = kept
        pk = "T#{tenant_id}#P#{paper_id}"
        sk = "PAPER"

    tenant_id: str
    paper_id: str
    title: str = ""
    body: Offloaded[str] = ""
    secret: Encrypted[str] | None = None


@pytest.fixture
def papers(moto: None) -> Iterator[tuple[TestBackend, Any]]:
    """``kept`` on moto, its offload bucket and a bucket for loads' staging, in moto's
    S3 (boto3's client of it)."""
    import boto3

    with use_tables(kept) as b:
        s3 = boto3.client("s3")
        for name in (OFFLOAD_BUCKET, "seams09-loads"):
            s3.create_bucket(Bucket=name)
        yield b, s3


def _objects(s3: Any) -> list[str]:
    return [o["Key"] for o in s3.list_objects_v2(Bucket=OFFLOAD_BUCKET).get("Contents", [])]


def test_a_bulk_load_never_stores_a_reference_to_a_value_it_did_not_upload(
        papers: tuple[TestBackend, Any]) -> None:
    """An entity whose ``Offloaded`` value is above the table's threshold is refused by
    ``jobs.load`` (its save uploads the value before the commit, which a bulk put cannot),
    the whole load with it, nothing written: the load stored rows whose references named
    objects never uploaded, every such value lost (a read failed, ``OffloadError``). A
    load whose values all stay in their rows, sealed under the tenant's key, stores and
    reads back."""
    from dynaorm.jobs import load

    b, s3 = papers
    big = [Paper(tenant_id="acme", paper_id=f"p{n}", body="x" * 5000, secret="s")
           for n in range(2)]
    with pytest.raises(DynaormError, match="outside the table"):
        load(kept, big, s3="s3://seams09-loads/runs", name="big", poll=0)
    assert b.scan_raw() == [] and _objects(s3) == []
    small = [Paper(tenant_id="acme", paper_id="q", body="short", secret="s")]
    assert load(kept, small, s3="s3://seams09-loads/runs", name="small", poll=0).loaded == 1
    with Session(kept) as s:
        got = s.get(Paper, tenant_id="acme", paper_id="q")
        assert got is not None and (got.body, got.secret) == ("short", "s")


def test_check_names_a_dangling_reference_beside_a_tenant_sealed_value(
        papers: tuple[TestBackend, Any]) -> None:
    """``dynaorm check`` of a table whose entity has an ``Encrypted`` field beside an
    ``Offloaded`` one names a row whose object is gone (``dangling-ref``), as it does
    without the encrypted field: it raised ``OffloadError`` from the rows' preparing, and
    checked nothing. A read of that row still refuses."""
    from dynaorm.jobs.checking import check_table

    _, s3 = papers
    with Session(kept) as s:
        s.save(Paper(tenant_id="acme", paper_id="p1", body="x" * 5000, secret="s"))
        s.save(Paper(tenant_id="acme", paper_id="p2", body="y" * 5000, secret="t"))
    s3.delete_object(Bucket=OFFLOAD_BUCKET, Key=sorted(_objects(s3))[0])
    result = check_table(kept, orphan_age=timedelta(0))
    assert result.scanned == 2
    assert [p.split()[0] for p in result.problems] == ["dangling-ref"], result.problems
    with Session(kept) as s, pytest.raises(OffloadError, match="missing"):
        for paper_id in ("p1", "p2"):  # (a read of it still refuses: its value is gone)
            s.get(Paper, tenant_id="acme", paper_id=paper_id)


def test_inference_of_a_key_table_prints_no_entity(papers: tuple[TestBackend, Any]) -> None:
    """``dynaorm model --infer`` of a table's key table (``key_scope``: each tenant's
    wrapped key, a forgotten tenant's tombstone) counts its rows as dynaorm's own, as it
    does a receipts table's, and prints no entity that would read or write them."""
    import boto3

    from dynaorm.client.infer import infer_code

    with Session(kept) as s:
        for tenant in ("acme", "globex"):
            s.save(Paper(tenant_id=tenant, paper_id="p", secret="s"))
    kept.forget(scope={"tenant_id": "acme"})
    assert kept.key_table is not None
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code, model = infer_code(kept.key_table, client=boto3.client("dynamodb"), report=None)
    assert model["inferred"]["own"] == 2 and model["inferred"]["placed"] == 0, code
