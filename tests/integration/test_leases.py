"""Leases (:class:`dynaorm.Lease`, ``Session.lease``; contract 24): one row naming who
holds something, its epoch checked by the commits that hold it. An acquire is refused
while another holder's lease is live, a holder that lost its lease is refused on its next
commit, and nothing staged beside a refused lease is stored; random sequences of every
action from several holders answer as a model does (sync and async sessions, every
engine). ``dynaorm.langgraph``'s single writer is built on it
(tests/system/test_langgraph_single_writer.py)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import suppress
from datetime import timedelta
from functools import partial
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, rule, run_state_machine_as_test

from dynaorm import (
    DynaormError,
    Entity,
    Lease,
    LeaseError,
    OutcomeUnknownError,
    ScopeError,
    Session,
    Table,
)
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support import mocked_aws
from tests.support.clocks import Clock
from tests.support.examples import examples

aws_moto = mocked_aws.aws_moto  # (a fixture: moto in process, boto3's clients too)

app = Table("leases")
SECONDS = timedelta(seconds=30)


#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class JobLease(Lease):
    tenant_id: str
    job: str

    class Meta:
        table = app
        pk = "T#{tenant_id}"
        sk = "LEASE#{job}"


class Report(Entity):
    tenant_id: str
    job: str
    text: str

    class Meta:
        table = app
        pk = "T#{tenant_id}"
        sk = "REPORT#{job}"


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    found = Clock()
    monkeypatch.setattr(JobLease, "clock", found)
    return found


@pytest.fixture
def tb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(app, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as found:
        found.session_kind = db.session_kind
        yield found


def _acquire(tb: TestBackend, holder: str, job: str = "j", **more: Any) -> JobLease:
    s = tb.session()
    held = s.lease(JobLease, holder=holder, duration=SECONDS, tenant_id="t1", job=job)
    for obj in more.get("beside", ()):
        s.save(obj)
    s.commit()
    return held


def test_an_acquire_is_refused_while_another_holds_and_taken_once_lapsed(
        tb: TestBackend, clock: Clock) -> None:
    first = _acquire(tb, "w1")
    assert (first.holder, first.until) == ("w1", int(clock.now * 1000) + 30_000)
    with pytest.raises(LeaseError, match="held by 'w1'") as refused:
        _acquire(tb, "w2", beside=[Report(tenant_id="t1", job="j", text="w2's")])
    assert refused.value.item is not None and refused.value.item.epoch == first.epoch
    assert [i["sk"]["S"] for i in tb.scan_raw()] == ["LEASE#j"]  # (w2's report: not stored)
    clock.now += 31  # (past the lease: anyone's)
    second = _acquire(tb, "w2")
    assert second.epoch != first.epoch
    stored = tb.session().get(JobLease, tenant_id="t1", job="j")
    assert stored is not None and (stored.holder, stored.epoch) == ("w2", second.epoch)


def test_a_holder_that_lost_its_lease_is_refused_and_writes_nothing(
        tb: TestBackend, clock: Clock) -> None:
    """w1 slept past its lease, w2 took it: w1's commit holding its old epoch is refused,
    its report not stored, however it holds (a check, a renewal, a release)."""
    first = _acquire(tb, "w1")
    clock.now += 31
    _acquire(tb, "w2")
    for action in ({}, {"duration": SECONDS}, {"release": True}):
        s = tb.session()
        s.lease(first, **action)
        s.save(Report(tenant_id="t1", job="j", text="stale"))
        with pytest.raises(LeaseError, match="held by 'w2'"):
            s.commit()
    assert tb.session().get(Report, tenant_id="t1", job="j") is None


def test_a_holder_renews_holds_and_releases_its_lease(tb: TestBackend, clock: Clock) -> None:
    held = _acquire(tb, "w1")
    clock.now += 20
    s = tb.session()
    renewed = s.lease(held, duration=SECONDS)
    s.save(Report(tenant_id="t1", job="j", text="mine"))
    s.commit()
    assert renewed.until == int(clock.now * 1000) + 30_000 and renewed.epoch == held.epoch
    clock.now += 20  # (40 s after the acquire, 20 after the renewal: still w1's)
    with pytest.raises(LeaseError):
        _acquire(tb, "w2")
    s = tb.session()
    s.lease(renewed)  # (a check: still this holder's)
    s.save(Report(tenant_id="t1", job="j", text="mine again"), overwrite=True)
    s.commit()
    s = tb.session()
    released = s.lease(renewed, release=True)
    s.commit()
    assert released.until == 0
    assert _acquire(tb, "w2").holder == "w2"  # (released: at once)


def test_the_same_holder_acquiring_again_supersedes_its_older_tenure(
        tb: TestBackend, clock: Clock) -> None:
    """A retried job of the same name takes the lease anew; the tenure it left is
    refused (a zombie of the first attempt)."""
    zombie = _acquire(tb, "job-7")
    _acquire(tb, "job-7")
    s = tb.session()
    s.lease(zombie)
    with pytest.raises(LeaseError):
        s.commit()


def test_a_lease_stays_in_its_scope(tb: TestBackend, clock: Clock) -> None:
    from dynaorm import ScopeError, Session

    with pytest.raises(ScopeError):
        Session(app, scope={"tenant_id": "t2"}).lease(
            JobLease, holder="w1", duration=SECONDS, tenant_id="t1", job="j")


def test_what_a_lease_takes_is_refused_before_sending() -> None:
    from dynaorm import Session

    s = Session(app)
    with pytest.raises(DynaormError, match="takes holder= and duration="):
        s.lease(JobLease, holder="w1", tenant_id="t1", job="j")  # type: ignore[call-overload]
    with pytest.raises(DynaormError, match="takes a Lease"):
        s.lease(Report, holder="w1", duration=SECONDS, tenant_id="t1", job="j")  # type: ignore[type-var]
    with pytest.raises(DynaormError, match="timedelta of 0 or more"):
        s.lease(JobLease, holder="w1", duration=timedelta(seconds=-1), tenant_id="t", job="j")
    with pytest.raises(DynaormError, match="an acquire returned"):
        s.lease(JobLease(tenant_id="t1", job="j"))
    assert not s._stage.writes  # (nothing staged by a refusal)


@pytest.mark.engines("moto", "local")
@pytest.mark.sync_only
def test_an_acquire_whose_answer_is_lost_with_another_holder_in_the_window(
        backend: str | None, clock: Clock) -> None:
    """w1's acquire applied, its answer lost; in the window w2 tries to acquire (refused:
    w1 holds) and w1's commit, sent again with its token, is told the truth: acquired."""
    from dynaorm import Session

    with use_tables(app, endpoint_url=backend, name_suffix=worker_suffix()):
        refused: list[Exception] = []

        def in_the_window() -> None:
            try:
                with Session(app) as s:
                    s.lease(JobLease, holder="w2", duration=SECONDS, tenant_id="t1", job="j")
                    s.save(Report(tenant_id="t1", job="j", text="w2's"))
            except LeaseError as exc:
                refused.append(exc)
        with inject_faults(app) as faults:
            faults.lose_answer("TransactWriteItems", after=in_the_window)
            s = Session(app)
            held = s.lease(JobLease, holder="w1", duration=SECONDS, tenant_id="t1", job="j")
            s.save(Report(tenant_id="t1", job="j", text="w1's"))
            with suppress(OutcomeUnknownError):  # (told it may not have happened: it did)
                s.commit()
        assert len(refused) == 1
        stored = Session(app).get(JobLease, tenant_id="t1", job="j")
        assert stored is not None and stored.epoch == held.epoch
        report = Session(app).get(Report, tenant_id="t1", job="j")
        assert report is not None and report.text == "w1's"


HOLDERS = st.sampled_from(["w1", "w2", "w3"])


class Leases(RuleBasedStateMachine):
    """Acquires, holds, renewals and releases by three holders (each remembering its
    last tenure) and a clock that moves, against a model of the lease: every commit's
    outcome and the stored lease are the model's."""

    tb: TestBackend
    clock: Clock

    @initialize()
    def start(self) -> None:
        self.tenures: dict[str, JobLease] = {}
        self.model: dict[str, Any] | None = None  # (holder, epoch, until)
        self.job = f"j{os.urandom(8).hex()}"  # (id(self) is reused by a later example's
        # machine once this one is gone: it found this one's lease, a flaky failure in CI)

    def _commit(self, stage: Any) -> bool:
        s = self.tb.session()
        obj = stage(s)
        try:
            s.commit()
        except LeaseError:
            return False
        return obj

    @rule(holder=HOLDERS, seconds=st.sampled_from([0, 10, 30]))
    def acquire(self, holder: str, seconds: int) -> None:
        now = int(self.clock.now * 1000)
        m = self.model
        free = m is None or m["until"] <= now or m["holder"] == holder
        got = self._commit(lambda s: s.lease(JobLease, holder=holder, duration=timedelta(
            seconds=seconds), tenant_id="t1", job=self.job))
        assert bool(got) == free
        if got:
            self.tenures[holder] = got
            self.model = {"holder": holder, "epoch": got.epoch, "until": now + seconds * 1000}

    @rule(holder=HOLDERS, action=st.sampled_from(["hold", "renew", "release"]))
    def keep(self, holder: str, action: str) -> None:
        mine = self.tenures.get(holder)
        if mine is None:
            return
        ok = self.model is not None and self.model["epoch"] == mine.epoch
        kw: dict[str, Any] = {"hold": {}, "renew": {"duration": SECONDS},
                              "release": {"release": True}}[action]
        got = self._commit(lambda s: s.lease(mine, **kw))
        assert bool(got) == ok
        if got and self.model is not None and action != "hold":
            self.model["until"] = got.until
            self.tenures[holder] = got

    @rule(seconds=st.sampled_from([5, 31]))
    def wait(self, seconds: int) -> None:
        self.clock.now += seconds

    def teardown(self) -> None:
        stored = self.tb.session().get(JobLease, tenant_id="t1", job=self.job)
        if self.model is None:
            assert stored is None
        else:
            assert stored is not None and {k: getattr(stored, k) for k in self.model} == \
                self.model


def test_random_leases_answer_as_the_model(tb: TestBackend, clock: Clock) -> None:
    Leases.tb, Leases.clock = tb, clock
    run_state_machine_as_test(Leases, settings=settings(
        max_examples=examples(20), stateful_step_count=12, deadline=None,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]))


# --- a run refused its lease
# (moved from system/test_seams_09.py:
# The seams of release 0.9 (contract 24), attacked pair by pair by someone who wrote none
# of them: the round trip and ``StoredAs`` (a), inference (b), leases (c), the public door's
# ``Session.run`` (d), scoped sessions (e), bulk loads (f), offloaded values and keys per
# tenant (g). Each test states what must never happen where two surfaces meet. Nothing here
# depends on the engine: moto only.)

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


class TenantJobLease(Lease):
    class Meta:
        table = work
        pk = "T#{tenant_id}#LEASE#{job}"
        sk = "LEASE"
        type_name = "JobLease"  # (the name it was written with, beside JobLease above)

    tenant_id: str
    job: str


def _leased(s: Session, holder: str, n: int) -> Any:
    """Acquire the job's lease with a first write, then hold it for a second: one
    operation, as a surface writes it for ``Session.run``."""
    lease = s.lease(TenantJobLease, holder=holder, duration=timedelta(seconds=30),
                    tenant_id="acme", job="j")
    s.save(Doc(tenant_id="acme", doc_id="d1", n=n))
    yield s.commit
    doc = yield partial(s.get, Doc, tenant_id="acme", doc_id="d1")
    s.lease(lease)
    doc.n = n + 1
    s.save(doc)
    yield s.commit
    return lease


@pytest.mark.engines('moto')
@pytest.mark.sync_only
def test_a_run_refused_its_lease_leaves_nothing_for_a_later_commit(aws_moto: None) -> None:
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
            other.lease(TenantJobLease, holder="g", duration=timedelta(seconds=30),
                        tenant_id="acme", job="j")
        with pytest.raises(ScopeError):
            other.lease(lease)
