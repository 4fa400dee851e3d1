"""Offloaded values under an adversary (contract 24): a hypothesis state machine drives
random saves (small and large values), updates by key, deletes (loaded and by key),
key moves and a versioned entity's saves and deletes with its history, each commit under a
fault drawn at random (a throttle, a 500, a lost answer, a lost answer seen as a 500: the
public injector, ``tests/support/fault_kinds.py``) with a second writer acting inside the
fault's window (it changes the value, or deletes the entity, after the write applied and
before its answer), and S3 requests throttled or their answers lost now and then. After
every step, against the bucket and the table:

- no dangling reference: every reference a row holds names an object, and every row of
  every entity reads (no :class:`~dynaorm.OffloadError`);
- no orphan: the bucket holds exactly the objects the rows reference; after a commit
  whose outcome stayed unknown (``OutcomeUnknownError``) what it left behind is removed
  by nobody (a fresh read of its rows cannot prove an object unreferenced: another writer
  may have moved a row, its objects with it): ``dynaorm check`` reports exactly those
  orphans, and nothing else, and ``--repair`` removes them.

On moto and DynamoDB Local (the reference engine), S3 from moto beside each.
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from dynaorm import (
    DynaormError,
    Entity,
    Offloaded,
    OutcomeUnknownError,
    Session,
    Table,
    Versioned,
)
from dynaorm.jobs.checking import check_table
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.examples import examples
from tests.support.fault_kinds import arm
from tests.support.offload import Bucket, bucket, referenced

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto", "local")]

LIMIT = 200
model_store = Table("offload_model", offload="s3://placeholder/m/", offload_threshold=LIMIT)


class MDoc(Entity):
    class Meta:
        table = model_store
        pk = "MDOC#{run}#{key}"
        sk = "MDOC"

    run: str
    key: str
    body: Offloaded[str] = ""
    title: str = ""


class MNote(Versioned):
    class Meta:
        table = model_store
        pk = "MNOTE#{run}#{key}"
        sk = "MNOTE"

    run: str
    key: str
    body: Offloaded[str] = ""


KEYS = st.sampled_from(["1", "2"])
#: the values a write stores: small (in the row), or one of two large ones (in S3)
VALUES = st.sampled_from(["small", "A" * 300, "B" * 300, "small2"])
FAULTS = st.sampled_from(["none", "none", "none", "throttle", "500", "lose", "lose500"])
#: what a second writer does inside a fault's window
MOVES = st.sampled_from(["none", "change", "delete"])
#: what happens to the commit's S3 requests (each retried within its attempts)
S3_FAULTS = st.sampled_from(["none", "none", "throttle-put", "lose-delete", "lose-get"])
WRITES = ("PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems")
FIGURES: Counter[str] = Counter()


class OffloadModel(RuleBasedStateMachine):
    """One run: entities of its own, a bucket shared by the runs of one test."""

    db: TestBackend
    bucket: Bucket

    def __init__(self) -> None:
        super().__init__()
        self.run = uuid.uuid4().hex[:8]
        self.unknown = False

    def _cls(self, versioned: bool) -> type[Any]:
        return MNote if versioned else MDoc

    def _window(self, cls: type[Any], key: str, move: str) -> Any:
        if move == "none":
            return None

        def act() -> None:
            FIGURES[f"window {move}"] += 1
            w = Session(model_store)
            try:
                found = w.get(cls, run=self.run, key=key, consistent=True)
                if found is None:
                    return
                if move == "delete":
                    w.delete(found, history=True)
                else:
                    found.body = "W" * 300
                    w.save(found)
                w.commit()
            except DynaormError:
                FIGURES["window refused"] += 1

        return act

    def _commit(self, s: Session, cls: type[Any], key: str, fault: str, move: str,
                s3: str, label: str) -> None:
        FIGURES["operations"] += 1
        with inject_faults(model_store) as faults:
            window = self._window(cls, key, move)

            def after() -> None:
                faults.clear()  # (the second writer's own requests are not faulted)
                assert window is not None
                window()

            arm(faults, WRITES, fault, None if window is None else after)
            if s3 == "throttle-put":
                faults.throttle("s3:PutObject")
            elif s3 == "lose-delete":
                faults.lose_answer("s3:DeleteObjects")
            elif s3 == "lose-get":
                faults.lose_answer("s3:GetObject")
            try:
                s.commit()
                FIGURES["applied"] += 1
            except OutcomeUnknownError:
                FIGURES["unknown"] += 1
                self.unknown = True
            except DynaormError as exc:
                FIGURES[f"{label} refused {type(exc).__name__}"] += 1

    def save(self, versioned: bool, key: str, value: str, fault: str, move: str,
             s3: str) -> None:
        cls = self._cls(versioned)
        s = Session(model_store)
        obj = s.get(cls, run=self.run, key=key, consistent=True) or cls(run=self.run, key=key)
        obj.body = value
        s.save(obj)
        self._commit(s, cls, key, fault, move, s3, "save")

    def retitle(self, key: str, title: str, fault: str, move: str) -> None:
        """A change of another field: its object stays."""
        s = Session(model_store)
        obj = s.get(MDoc, run=self.run, key=key, consistent=True)
        if obj is None:
            return
        obj.title = title
        s.save(obj)
        self._commit(s, MDoc, key, fault, move, "none", "retitle")

    def update_by_key(self, key: str, value: str, fault: str, move: str) -> None:
        s = Session(model_store)
        if s.get(MDoc, run=self.run, key=key, consistent=True) is None:
            return
        s.update(MDoc, run=self.run, key=key).set(body=value)
        self._commit(s, MDoc, key, fault, move, "none", "update")

    def delete(self, versioned: bool, key: str, loaded: bool, fault: str, move: str) -> None:
        cls = self._cls(versioned)
        s = Session(model_store)
        obj = s.get(cls, run=self.run, key=key, consistent=True)
        if obj is None:
            return
        if not loaded:
            obj = cls(run=self.run, key=key)  # (by key: read again at the commit)
        s.delete(obj, history=versioned)
        self._commit(s, cls, key, fault, move, "none", "delete")

    def move(self, source: str, fault: str, move: str) -> None:
        """A key move: the entity's row goes to the other key, its object with it."""
        s = Session(model_store)
        obj = s.get(MDoc, run=self.run, key=source, consistent=True)
        target = "2" if source == "1" else "1"
        if obj is None or s.get(MDoc, run=self.run, key=target, consistent=True):
            return
        obj.key = target
        s.save(obj)
        self._commit(s, MDoc, source, fault, move, "none", "move")

    @rule(op=st.sampled_from(["save", "save", "save", "retitle", "update", "delete",
                              "move"]),
          versioned=st.booleans(), key=KEYS, value=VALUES, loaded=st.booleans(),
          fault=FAULTS, move=MOVES, s3=S3_FAULTS)
    def write(self, op: str, versioned: bool, key: str, value: str, loaded: bool,
              fault: str, move: str, s3: str) -> None:
        """One write of a kind drawn at random (saves weigh most: the others need an
        entity stored)."""
        FIGURES[f"op {op}"] += 1
        if op == "save":
            self.save(versioned, key, value, fault, move, s3)
        elif op == "retitle":
            self.retitle(key, value[:2], fault, move)
        elif op == "update":
            self.update_by_key(key, value, fault, move)
        elif op == "delete":
            self.delete(versioned, key, loaded, fault, move)
        else:
            self.move(key, fault, move)

    @invariant()
    def no_orphan_and_no_dangling_reference(self) -> None:
        rows = self.db.scan_raw()
        refs = referenced(rows)
        objects = self.bucket.uris()
        assert refs <= objects, f"dangling: {sorted(refs - objects)}"
        reader = Session(model_store)
        for cls in (MDoc, MNote):  # (every row reads: no OffloadError)
            for obj in reader.scan(cls).all():
                assert len(obj.body) in (0, 5, 6, 300)
        if self.unknown:  # (dynaorm check finds what it left, and nothing else)
            found = check_table(model_store, fix=True, orphan_age=timedelta(0))
            assert all(p.startswith("orphan-object") for p in found.problems), found.problems
            assert found.repaired == len(objects - refs), found.problems
            objects = self.bucket.uris()
            self.unknown = False
            FIGURES["checked after unknown"] += 1
        assert objects == refs, f"orphans: {sorted(objects - refs)}"
        FIGURES["invariants checked"] += 1


@pytest.fixture
def store(backend: str | None, request: pytest.FixtureRequest,
          monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestBackend, Bucket]]:
    with bucket(backend, request, monkeypatch, model_store) as b, use_tables(
            model_store, endpoint_url=backend, name_suffix=worker_suffix(),
            wire=wire_of(request)) as tb:
        before = model_store.binding()
        model_store.max_wait = 0  # (faults are retried without waiting)
        try:
            yield tb, b
        finally:
            model_store.restore(before)


def test_no_orphan_and_no_dangling_reference(store: tuple[TestBackend, Bucket]) -> None:
    tb, b = store
    machine = type("Machine", (OffloadModel,), {"db": tb, "bucket": b})
    machine.TestCase.settings = settings(  # type: ignore[attr-defined]
        max_examples=examples(12), stateful_step_count=10, deadline=None, derandomize=True,
        suppress_health_check=list(HealthCheck), print_blob=True)
    FIGURES.clear()
    machine.TestCase().runTest()  # type: ignore[attr-defined]
    print("\noffload model figures: " + ", ".join(f"{k}={v}" for k, v in sorted(
        FIGURES.items())))
    assert FIGURES["invariants checked"] > 0 and FIGURES["applied"] > 0
