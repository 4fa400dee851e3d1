"""The red team of issue 81 (contract 24, "Scope over rows it did not write"): what a
scoped session must never do to a row whose key parses into its scope while its stored
fields name another tenant (a stale key: acme-corp's paper ``T-acme-corp-123``, which the
grammar reads as acme's paper ``corp-123``). Reads skip it (tests/integration/
test_scope_keys.py); these are the writes by key, which reached it."""

from __future__ import annotations

import contextlib
import itertools
from collections.abc import Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import AsyncSession, DynaormError, Entity, F, Session, Table
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.examples import examples
from tests.support.tenant_models import Paper, plant, plant_stale_rows, stale

pytestmark = pytest.mark.engines("moto")  # (conditions and keys: no engine's own)

ACME_CORP = {"pk": "T-acme-corp-123", "sk": "PAPER", "_type": "Paper",
             "tenant_id": "acme-corp", "paper_id": "123", "category": "x",
             "gsi1pk": "acme-corp-x", "gsi1sk": "123", "body": "acme-corp's"}


@pytest.fixture
def stale_rows(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(stale, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        plant_stale_rows()
        yield tb


def _scoped(kind: str | None, **scope: Any) -> Session:
    """A session of :data:`stale` scoped to ``scope``, of the kind the test runs."""
    if kind == "async":
        return cast(Session, BlockingAsyncSession(AsyncSession(stale, scope=scope)))
    return Session(stale, scope=scope)


def _acme_corp_row(tb: TestBackend) -> dict[str, Any] | None:
    return next((i for i in tb.scan_raw(stale) if i["pk"] == {"S": "T-acme-corp-123"}),
                None)


def _delete(s: Session) -> None:
    s.delete(Paper, tenant_id="acme", paper_id="corp-123")
    s.commit()


def _update(s: Session) -> None:
    s.update(Paper, tenant_id="acme", paper_id="corp-123").set(body="acme's now")
    s.commit()


def _upsert(s: Session) -> None:
    s.update(Paper, upsert=True, tenant_id="acme", paper_id="corp-123").set(body="mine")
    s.commit()


def _overwrite(s: Session) -> None:
    s.save(Paper(tenant_id="acme", paper_id="corp-123", body="acme's now"), overwrite=True)
    s.commit()


def _insert(s: Session) -> None:
    s.save(Paper(tenant_id="acme", paper_id="corp-123", body="acme's now"))
    s.commit()


def _check(s: Session) -> None:
    """A condition check by key: an oracle of the stale row's values, were it asked."""
    s.check(Paper, condition=F("body") == "acme-corp's", tenant_id="acme",
            paper_id="corp-123")
    s.commit()


def _delete_many(s: Session) -> None:
    s.delete_many(Paper, [{"tenant_id": "acme", "paper_id": "corp-123"}])


def _delete_many_objects(s: Session) -> None:
    s.delete_many([Paper(tenant_id="acme", paper_id="corp-123")])


@pytest.mark.parametrize("write", [_delete, _update, _upsert, _overwrite, _insert, _check,
                                   _delete_many, _delete_many_objects],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_scoped_write_by_key_never_touches_a_stale_key_s_row(
        stale_rows: TestBackend, write: Callable[[Session], None]) -> None:
    """acme's session writing acme's key ``corp-123`` by key (never having read it) finds
    acme-corp's row there: it is refused (a ``DynaormError``), the row stays as it was,
    and the refusal names nothing of acme-corp's (its values are not acme's to see)."""
    acme = _scoped(stale_rows.session_kind, tenant_id="acme")
    before = _acme_corp_row(stale_rows)
    assert before is not None
    with pytest.raises(DynaormError) as refused:
        write(acme)
    assert _acme_corp_row(stale_rows) == before
    error = refused.value
    assert "'acme-corp'" not in str(error)  # (its key is acme's; its value is not)
    inner = [error, *(e for _, e in getattr(error, "errors", ()))]  # (a bulk call's)
    for shown in (*(getattr(e, "item", None) for e in inner),
                  *(f[2] for e in inner for f in getattr(e, "failures", None) or ())):
        assert "acme-corp" not in repr(shown)  # (nor its object, on the error)
    # acme's own rows are still acme's to write by key
    acme.update(Paper, tenant_id="acme", paper_id="p1").set(body="edited")
    acme.commit()
    assert acme.get(Paper, tenant_id="acme", paper_id="p1").body == "edited"  # type: ignore[union-attr]
    plant(stale, {k: v for k, v in ACME_CORP.items()})  # (as it was, for the next)


@pytest.mark.sync_only  # (a job: no session kind)
def test_a_tenant_export_holds_no_stale_key_s_row(stale_rows: TestBackend,
                                                   tmp_path: Path) -> None:
    """``jobs.export(..., scope={"tenant_id": "acme"})`` reads every row whose key begins
    with acme's prefix ``T-acme-``: acme-corp's paper ``T-acme-corp-123`` among them. The
    export is a scoped read (contract 24): acme's dataset holds acme's papers alone."""
    pq = pytest.importorskip("pyarrow.parquet")
    from dynaorm.jobs import export, run_local

    report = run_local(export(stale, tmp_path / "acme", scope={"tenant_id": "acme"},
                              entities=[Paper]))
    rows = [r for f in sorted((tmp_path / "acme" / "Paper").glob("*.parquet"))
            for r in pq.read_table(f).to_pylist()]
    assert {(r["tenant_id"], r["paper_id"]) for r in rows} == {("acme", "p1")}
    assert report.rows == {"Paper": 1}


# -- the property: random rows as 0.7 wrote them, every write by key of every scope --------
_SEPS = "-_.:|/ "
_made = itertools.count()


def _prop_entity(home: Table, source: str) -> type[Entity]:
    class PropPaper(Entity):
        class Meta:
            table = home
            pk = source
            sk = "DOC"

        tenant_id: str
        doc_id: str
        body: str = ""

    return PropPaper


def _writes(entity: type[Entity], mine: str, doc: str) -> list[Callable[[Session], None]]:
    def delete(s: Session) -> None:
        s.delete(entity, tenant_id=mine, doc_id=doc)
        s.commit()

    def update(s: Session) -> None:
        s.update(entity, tenant_id=mine, doc_id=doc).set(body="written")
        s.commit()

    def upsert(s: Session) -> None:
        s.update(entity, upsert=True, tenant_id=mine, doc_id=doc).set(body="written")
        s.commit()

    def overwrite(s: Session) -> None:
        s.save(entity(tenant_id=mine, doc_id=doc, body="written"), overwrite=True)
        s.commit()

    def delete_many(s: Session) -> None:
        s.delete_many(entity, [{"tenant_id": mine, "doc_id": doc}])

    return [delete, update, upsert, overwrite, delete_many]


@pytest.mark.sync_only
@settings(max_examples=examples(20), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(head=st.sampled_from(["T", "", "T#"]), sep=st.sampled_from(_SEPS),
       base=st.text(st.sampled_from("ab"), min_size=1, max_size=2),
       after=st.text(st.sampled_from("ab1" + _SEPS), min_size=1, max_size=3),
       doc=st.text(st.sampled_from("ab1" + _SEPS), min_size=1, max_size=3))
def test_no_scoped_write_by_key_changes_a_row_of_another_tenant(
        db: TestBackend, request: pytest.FixtureRequest, head: str, sep: str, base: str,
        after: str, doc: str) -> None:
    """Tenant ``base<sep><after>``'s row as 0.7 wrote it (``<head>{tenant_id}<sep>
    {doc_id}``): for ``base``'s session every write by key at a key that parses into its
    scope (delete, update, upsert, overwrite, bulk delete) leaves the other tenant's row
    as it was (refused, or written at a key that was empty)."""
    table = Table(f"red81_prop_{next(_made)}")
    source = head + "{tenant_id}" + sep + "{doc_id}"
    entity = _prop_entity(table, source)
    other = base + sep + after
    stored = {"pk": {"S": source.format(tenant_id=other, doc_id=doc)}, "sk": {"S": "DOC"},
              "_type": {"S": "PropPaper"}, "tenant_id": {"S": other},
              "doc_id": {"S": doc}, "body": {"S": other}}
    pk = entity.__dynaorm_spec__.pk  # type: ignore[attr-defined]
    parsed = pk.parse_key(stored["pk"]["S"])
    with use_tables(table, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        if parsed is None or parsed["tenant_id"] != base:
            return  # (the grammar reads it as no key of base's: no write reaches it)
        for write in _writes(entity, base, parsed["doc_id"]):
            plant(table, {k: v["S"] for k, v in stored.items()})
            with contextlib.suppress(DynaormError):
                write(Session(table, scope={"tenant_id": base}))
            found = [i for i in tb.scan_raw(table) if i["pk"] == stored["pk"]]
            assert found == [stored], (write.__name__, source, other)


# -- one scope object per scope: equal values that render other keys ------------------------
ledgers = Table("red81_ledgers")


class Ledger(Entity):
    """Keyed by a Decimal tenant: ``1`` and ``1.0`` are two keys, so two tenants."""

    class Meta:
        table = ledgers
        pk = "L#{tenant}#{ledger_id}"
        sk = "LEDGER"

    tenant: Decimal
    ledger_id: str
    body: str = ""


@pytest.mark.sync_only
def test_two_scopes_of_equal_values_rendering_other_keys_are_two_scopes(
        db: TestBackend, request: pytest.FixtureRequest) -> None:
    """``Decimal("1")`` and ``Decimal("1.0")`` are equal (and hash alike) but render the
    keys ``L#1#...`` and ``L#1.0#...``: a session scoped to one never reads the other's
    rows, whichever scope was made first in the process (``Scope.of`` kept one object
    per equal values)."""
    with use_tables(ledgers, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        with Session(ledgers) as s:
            for tenant in ("1", "1.0"):
                s.save(Ledger(tenant=Decimal(tenant), ledger_id="l1", body=tenant))
        for tenant in ("1", "1.0"):
            scoped = Session(ledgers, scope={"tenant": Decimal(tenant)})
            got = scoped.get(Ledger, tenant=Decimal(tenant), ledger_id="l1")
            assert {o.body for o in scoped.scan(Ledger).all()} <= {tenant}
            assert got is None or got.body == tenant
        # (tenant 1's own rows are its; tenant 1.0's are skipped where the engine stores
        # the number as 1, as DynamoDB does: its stored field no longer renders its key)
        one = Session(ledgers, scope={"tenant": Decimal(1)})
        assert [o.body for o in one.scan(Ledger).all()] == ["1"]


class Counter(Entity):
    """Keyed by an int tenant (a scope may name it ``5`` or ``"5"``: both render ``5``)."""

    class Meta:
        table = ledgers
        pk = "C#{tenant}#{counter_id}"
        sk = "COUNTER"

    tenant: int
    counter_id: str
    n: int = 0


@pytest.mark.sync_only
@pytest.mark.parametrize("given", [5, "5"])
def test_a_scoped_write_by_key_of_its_own_row_is_never_refused(
        db: TestBackend, request: pytest.FixtureRequest, given: Any) -> None:
    """The scope's own rows stay its to write by key whatever form the scope's value was
    given in (the guard compares the stored field as the entity stores it)."""
    with use_tables(ledgers, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)):
        with Session(ledgers) as s:
            s.save(Counter(tenant=5, counter_id="c1"))
            s.save(Counter(tenant=5, counter_id="c2"))
        scoped = Session(ledgers, scope={"tenant": given})
        scoped.update(Counter, tenant=given, counter_id="c1").add(n=1)
        scoped.save(Counter(tenant=5, counter_id="c2", n=7), overwrite=True)
        scoped.commit()
        scoped.delete_many(Counter, [{"tenant": given, "counter_id": "c2"}])
        assert [(o.counter_id, o.n) for o in scoped.scan(Counter).all()] == [("c1", 1)]
        scoped.delete(Counter, tenant=given, counter_id="c1")
        scoped.commit()
        assert Session(ledgers).scan(Counter).all() == []
