"""Forgetting tenants, as a property (contract 24): a hypothesis state machine saves,
changes and deletes entities of three tenants (a plain one with an ``Encrypted`` field, a
versioned one with its history), seals bytes for them (``Table.seal``), and forgets
tenants at random, against a model. After every step, by every read path (get, query,
scan, ``values()``, history, a version by number, ``Table.open`` of what was sealed, and
the rows as a scan copied them before the forget, decoded later):

- no value of a forgotten tenant is readable: each raises ``ForgottenError``, and a
  write sealing one for it is refused before anything is sent;
- its plain fields read as before (``values()`` of them);
- every other tenant reads exactly what the model says.

On moto and DynamoDB Local (the reference engine).
"""

from __future__ import annotations

import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from dynaorm import (
    Encrypted,
    Entity,
    F,
    ForgottenError,
    Session,
    StaticKeyring,
    Table,
    Versioned,
)
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.examples import examples

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto", "local")]

tenants_store = Table("tenant_model", keyring=StaticKeyring(b"q" * 32), key_scope="tenant")


class TNote(Entity):
    class Meta:
        table = tenants_store
        pk = "T#{tenant}#{run}#N#{key}"
        sk = "N"

    run: str
    tenant: str
    key: str
    label: str = ""
    secret: Encrypted[str] = ""


class TLog(Versioned):
    class Meta:
        table = tenants_store
        pk = "T#{tenant}#{run}#L"
        sk = "L"

    run: str
    tenant: str
    entry: Encrypted[str] = ""


TENANTS = st.sampled_from(["a", "b", "c"])
KEYS = st.sampled_from(["1", "2"])
TEXTS = st.sampled_from(["x", "y", "z"])
FIGURES: Counter[str] = Counter()


def forgotten(call: Callable[[], Any]) -> bool:
    """Whether ``call`` raises ForgottenError (anything else it raises propagates)."""
    try:
        call()
    except ForgottenError:
        return True
    return False


class TenantModel(RuleBasedStateMachine):
    db: TestBackend

    def __init__(self) -> None:
        super().__init__()
        self.run = uuid.uuid4().hex[:8]
        self.notes: dict[tuple[str, str], tuple[str, str]] = {}  # -> (label, secret)
        self.logs: dict[str, list[str]] = {}  # tenant -> its entries, version by version
        self.sealed: dict[str, list[tuple[bytes, bytes]]] = {}  # tenant -> (blob, bytes)
        self.gone: set[str] = set()
        self.copies: dict[str, list[dict[str, Any]]] = {}  # rows scanned before a forget

    def _refused(self, tenant: str, write: Callable[[], None]) -> None:
        """A write for ``tenant``: done, or (forgotten) refused with ForgottenError."""
        if tenant in self.gone:
            assert forgotten(write), f"a write for forgotten tenant {tenant} went through"
            FIGURES["writes refused"] += 1
            return
        write()
        FIGURES["writes"] += 1

    def t(self, tenant: str) -> str:
        """The run's own tenant of that name (tenants are the table's: a run's own)."""
        return f"{tenant}-{self.run}"

    @rule(tenant=TENANTS, key=KEYS, label=TEXTS, secret=TEXTS)
    def save_note(self, tenant: str, key: str, label: str, secret: str) -> None:
        tenant = self.t(tenant)
        def write() -> None:
            s = Session(tenants_store)
            s.save(TNote(run=self.run, tenant=tenant, key=key, label=label, secret=secret),
                   overwrite=True)
            s.commit()
            self.notes[(tenant, key)] = (label, secret)
        self._refused(tenant, write)

    @rule(tenant=TENANTS, entry=TEXTS)
    def log(self, tenant: str, entry: str) -> None:
        tenant = self.t(tenant)
        def write() -> None:
            s = Session(tenants_store)
            found = s.get(TLog, run=self.run, tenant=tenant, consistent=True)
            obj = found or TLog(run=self.run, tenant=tenant)
            obj.entry = entry + str(len(self.logs.get(tenant, [])))
            s.save(obj)
            s.commit()
            self.logs.setdefault(tenant, []).append(obj.entry)
        self._refused(tenant, write)

    @rule(tenant=TENANTS, key=KEYS)
    def delete_note(self, tenant: str, key: str) -> None:
        """A delete by key: allowed for a forgotten tenant too (it seals nothing)."""
        tenant = self.t(tenant)
        if (tenant, key) not in self.notes:
            return
        s = Session(tenants_store)
        s.delete(TNote(run=self.run, tenant=tenant, key=key))
        s.commit()
        del self.notes[(tenant, key)]

    @rule(tenant=TENANTS, data=st.binary(min_size=1, max_size=20))
    def seal(self, tenant: str, data: bytes) -> None:
        tenant = self.t(tenant)
        def write() -> None:
            blob = tenants_store.seal(data, scope={"tenant": tenant}, context=self.run)
            self.sealed.setdefault(tenant, []).append((blob, data))
        self._refused(tenant, write)

    @rule(tenant=TENANTS)
    def forget(self, tenant: str) -> None:
        tenant = self.t(tenant)
        self.copies[tenant] = [r for r in self.db.scan_raw()
                               if r.get("tenant") == {"S": tenant} and r.get("run") == {
                                   "S": self.run}]
        tenants_store.forget(scope={"tenant": tenant})
        self.gone.add(tenant)
        FIGURES["forgotten"] += 1

    @invariant()
    def nothing_of_a_forgotten_tenant_reads_and_the_others_do(self) -> None:
        r = Session(tenants_store)
        for (tenant, key), (label, secret) in self.notes.items():
            read = lambda t=tenant, k=key: r.get(TNote, run=self.run, tenant=t, key=k,  # noqa: E731
                                                consistent=True)
            query = r.query(TNote, run=self.run, tenant=tenant, key=key)
            if tenant in self.gone:
                assert forgotten(read) and forgotten(query.all)
                assert forgotten(lambda q=query: q.values("secret"))
                assert query.values("label") == [{"label": label}]
            else:
                got = read()
                assert got is not None and (got.label, got.secret) == (label, secret)
        for tenant, entries in self.logs.items():
            history = lambda t=tenant: list(r.history(TLog, run=self.run, tenant=t))  # noqa: E731
            version = lambda t=tenant: r.get(TLog, run=self.run, tenant=t, version=1,  # noqa: E731
                                             consistent=True)
            if tenant in self.gone:
                assert forgotten(history) and forgotten(version)
            else:
                assert [v.entry for v in history()] == entries
        for tenant, blobs in self.sealed.items():
            for blob, data in blobs:
                if tenant in self.gone:
                    assert forgotten(lambda b=blob: tenants_store.open(b, context=self.run))
                else:
                    assert tenants_store.open(blob, context=self.run) == data
        spec = TNote.__dynaorm_spec__
        for rows in self.copies.values():  # (a backup's or an export's copy; a stream's)
            for row in rows:
                if "secret" in row and row["sk"] == {"S": "N"}:
                    assert forgotten(lambda row=row: spec.decode_fields(row))
                    record = {"eventID": "1", "eventName": "INSERT", "dynamodb": {
                        "Keys": {"pk": row["pk"], "sk": row["sk"]}, "NewImage": row}}
                    (change,) = tenants_store.changes([record])
                    assert forgotten(lambda c=change: c.new)
        scan = r.scan(TNote).filter(F("run") == self.run)  # (this run's rows, every tenant)
        if any(t in self.gone for t, _ in self.notes):
            assert forgotten(scan.all)
        else:
            found = {(o.tenant, o.key): (o.label, o.secret) for o in scan.all()}
            assert found == self.notes
        # (a scan of every tenant's plain fields: a forgotten one's among them)
        labels = {(v["tenant"], v["label"]) for v in r.scan(TNote).values("tenant", "label")}
        assert {(t, label) for (t, _), (label, _) in self.notes.items()} <= labels
        FIGURES["invariants checked"] += 1


@pytest.fixture
def model_db(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    tenants_store.keyring = StaticKeyring(b"q" * 32)
    with use_tables(tenants_store, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        yield tb


def test_no_value_of_a_forgotten_tenant_is_readable(model_db: TestBackend) -> None:
    machine = type("Machine", (TenantModel,), {"db": model_db})
    machine.TestCase.settings = settings(  # type: ignore[attr-defined]
        max_examples=examples(15), stateful_step_count=12, deadline=None, derandomize=True,
        suppress_health_check=list(HealthCheck), print_blob=True)
    FIGURES.clear()
    machine.TestCase().runTest()  # type: ignore[attr-defined]
    print("\ntenant model figures: " + ", ".join(f"{k}={v}" for k, v in sorted(
        FIGURES.items())))
    assert FIGURES["forgotten"] > 0 and FIGURES["writes refused"] > 0
