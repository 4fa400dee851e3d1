"""The interaction matrix (contract 21, DESIGN 0.6; contract 22): every entity rule of the
registry (:data:`dynaorm.schema.rules.RULES`) and a rule a user registers
(``tests/support/user_rules.py``, through ``dynaorm.register_rule``), alone and in every
pair, on every surface.

The rows come from the registry: a rule dynaorm registers without a declaration in
``tests/support/rule_matrix.py`` (:data:`DECLARED`), or whose ``answers`` leave out a
surface of :data:`SURFACES`, fails :func:`test_every_rule_has_a_row`. Each combination
gets entity classes on a table of its own; a pair the model refuses when the class is
defined must be refused as documented (:data:`REFUSED`). Every other combination runs
(:func:`test_cell`: a rule alone, on moto and on DynamoDB Local, the reference;
:func:`test_pair_cell`: a pair, composed on the client, on moto), each surface in turn --
save (insert, update, key change), ``s.update``, get, query (table and index),
``values()``, scan, stream decode (records built from the stored images), history,
migrate (a previous layout's items moved by ``dynaorm.jobs.migrate``), backfill
(``dynaorm.jobs.backfill`` run in-process), check (a healthy table shows no problem),
export (``dynaorm.jobs.export`` read back in DuckDB: in the migration window and after the
writes, encrypted fields left out and decrypted, with history), search (``s.search`` of the
vector index: exactly the entities a get reads, in the migration window, past a TTL and
after the writes; refused without a vector index), delete, error messages,
log records and span attributes -- asserting after each write
that the stored rows are exactly what the rules imply (:meth:`Matrix.assert_rows`: no
version row in any index, guards naming their owners, ciphertexts that open only in their
own row) and that no message, log record or span attribute holds an encrypted field's
plaintext.

:func:`test_lost_answers` writes each combination under a lost answer (a rule alone also
under a lost answer's 500 and a 500 that applied nothing) with a second writer acting
inside the fault's window: no caller is told anything untrue (success only where the
write's own revision proves it; otherwise a typed error or ``OutcomeUnknownError``) and
the table is consistent afterwards.

DynamoDB Local has no vector index (it refuses a table declaring one): the cells of
``vectors`` run on moto (the embedded default answers ``SearchVectors`` exactly) and skip
there, saying so.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from typing import Annotated, Any

import pytest
from pydantic import ValidationError

import dynaorm
from dynaorm import (
    ConflictError,
    DynaormError,
    Encrypted,
    Entity,
    F,
    InvalidValueError,
    OutcomeUnknownError,
    Session,
    UniqueConstraintError,
    Vector,
)
from dynaorm.jobs import MARK, backfill, export, migrate, run_local
from dynaorm.jobs.checking import check_table
from dynaorm.protocol.steps import call
from dynaorm.schema.rules import RULES, SURFACES
from dynaorm.schema.rules.vectors import float32
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.exports import read_back, row_of
from tests.support.fault_kinds import arm
from tests.support.offload import bucket
from tests.support.raw import raw_delete, raw_get, raw_set, raw_set_member
from tests.support.rule_matrix import (
    DECLARED,
    PAST,
    REFUSED,
    Matrix,
    answers_missing,
    build,
    combinations,
    key_of,
    label,
    matrix_rules,
    point_old,
    vector_of,
    with_fields,
)
from tests.support.spans import Spans

#: (each cell checks every surface right after its writes, index reads included: the
#: matrix is about the rules, not about an index's lag)
pytestmark = [pytest.mark.sync_only,
              pytest.mark.dynaorm_index_lag(0, reason="checks its own writes at once"),
              # (moto and the reference engine: dynoxide's 465 variants were collected only
              # to be skipped, by ``engine`` below, which stays for --dynaorm-endpoint)
              pytest.mark.engines("moto", "local")]

COMBOS = [c for c in combinations() if frozenset(c) not in REFUSED]
#: why the cells of ``vectors`` skip on DynamoDB Local
NO_VECTORS = ("DynamoDB Local has no vector index: it refuses a table declaring one (its "
              "search schema's attribute definitions) and SearchVectors as an unknown operation")
#: the query vector of every search
QUERY = [1.0, 0.5, 0.5]
#: the vector a backfill sets
FILLED = [0.7, 0.2, 0.1]


# -- the registry's rows -------------------------------------------------------------------
def test_every_rule_has_a_row() -> None:
    """A rule dynaorm registers, and the user's rule the matrix runs, has a declaration
    here and an answer for every surface."""
    rules = matrix_rules()
    assert set(rules) == set(DECLARED), "declare each new rule in tests/support/rule_matrix.py"
    assert answers_missing() == {name: [] for name in rules}


def test_every_surface_has_its_step() -> None:
    """Each surface of :data:`SURFACES` is exercised by a step of every cell."""
    assert {s for surfaces, _ in STEPS for s in surfaces} == set(SURFACES)


@pytest.mark.parametrize("pair", sorted(REFUSED, key=sorted), ids=lambda p: "+".join(sorted(p)))
def test_a_refused_pair_is_refused_as_documented(pair: frozenset[str]) -> None:
    combo = tuple(sorted(pair, key=lambda n: matrix_rules()[n].order))
    with pytest.raises(DynaormError, match=REFUSED[pair]):
        build(combo)


# -- one combination, every surface --------------------------------------------------------
@pytest.fixture
def spans() -> Iterator[Spans]:
    yield Spans()


@pytest.fixture
def engine(request: pytest.FixtureRequest) -> str:
    """The engine of the test, skipped before its backend starts unless it is moto or
    DynamoDB Local (the reference engine): the matrix runs on those two."""
    engine = engine_of(request)
    if engine == "dynoxide":
        pytest.skip("the matrix runs on moto and DynamoDB Local (the reference engine)")
    return engine


def _tables(m: Matrix, backend: str | None, request: pytest.FixtureRequest,
            stack: ExitStack) -> TestBackend:
    if m.has("vectors") and engine_of(request) == "local":
        pytest.skip(NO_VECTORS)
    wire = wire_of(request)
    if m.has("offloaded"):  # (S3 beside the engine: a bucket of the cell's own)
        m.bucket = stack.enter_context(bucket(backend, request, request.getfixturevalue(
            "monkeypatch"), m.table, *(() if m.old_table is None else (m.old_table,))))
    tb = stack.enter_context(use_tables(m.table, endpoint_url=backend,
                                        name_suffix=worker_suffix(), wire=wire))
    if m.old_table is not None:
        stack.enter_context(point_old(m, wire))
    before = m.table.binding()
    m.table.max_wait = 0
    stack.callback(m.table.restore, before)
    return tb


class Cell:
    """What one combination stores, and what every surface must show of it."""

    def __init__(self, m: Matrix, tb: TestBackend) -> None:
        self.m, self.tb, self.cls = m, tb, m.cls
        self.live: dict[str, Entity] = {}
        #: entities whose TTL has passed (``stamps``): stored, read as gone
        self.expired: dict[str, Entity] = {}
        #: expired entities whose unique value another has claimed (their guard with it)
        self.claimed: set[str] = set()
        self.history: dict[str, list[dict[str, Any]]] = {}
        self.errors: list[BaseException] = []
        self.plaintexts: set[str] = set()
        #: id -> the version a backfill marked (0: unversioned): its row, and every
        #: version row from then on (a copy of the latest copy), carry the job's marker
        self.marked: dict[str, int] = {}

    # -- helpers ---------------------------------------------------------------------
    def session(self) -> Session:
        return Session(self.m.table)

    def get(self, ident: str) -> Any:
        return self.session().get(self.cls, id=ident, consistent=True)

    def stored(self, ident: str) -> None:
        """Record entity ``ident`` as it now reads (and its version as history)."""
        obj = self.get(ident)
        assert obj is not None, (self.m.name, ident)
        self.live[ident] = obj
        self.plaintexts |= {obj.secret, obj.code}
        if self.m.has("versioned"):
            versions = self.history.setdefault(ident, [])
            if len(versions) < obj.version:
                versions.append(dict(obj.__dict__))
            assert len(versions) == obj.version, (self.m.name, ident, versions)

    def reread_history(self, ident: str) -> None:
        """Take entity ``ident``'s history as it reads (a test that lets a second writer
        write versions of its own)."""
        if self.m.has("versioned"):
            self.history[ident] = [dict(v.__dict__) for v in
                                   self.session().history(self.cls, id=ident)]

    def raw(self) -> list[dict[str, Any]]:
        return self.tb.scan_raw()

    def assert_rows(self) -> None:
        extra = {self.m.key(i): {MARK} for i in self.marked if i in self.live}
        extra.update({self.m.key(i, n): {MARK} for i, first in self.marked.items() if first
                      for n in range(first, len(self.history.get(i, ())) + 1)})
        self.m.assert_rows(self.raw(), self.live, self.history, extra, self.expired,
                           frozenset(self.claimed))
        self.assert_indexes()

    def assert_indexes(self) -> None:
        """Every index holds the entity rows (latest copies) only: never a version row
        or a guard."""
        table = self.m.table
        rows = sorted(self.m.key(i) for i in {**self.live, **self.expired})
        for index in table.indexes:
            out = table.db.driver.run(call("Scan", {"TableName": table.name,
                                                    "IndexName": index}))
            keys = sorted(key_of(i) for i in out.get("Items", []))
            assert keys == rows, (self.m.name, index, keys)

    def refused(self, error: type[BaseException] | tuple[type[BaseException], ...],
                fn: Callable[[], object]) -> BaseException:
        with pytest.raises(error) as info:
            fn()
        self.errors.append(info.value)
        return info.value

    def commit(self, *objs: Entity) -> None:
        s = self.session()
        for obj in objs:
            s.save(obj)
        s.commit()

    # -- the surfaces ----------------------------------------------------------------
    def migrate_window(self) -> None:
        """``previous``: an item stored in the old layout reads (get, and find by a
        unique value its guard names), decodes from a stream image, is no problem to
        check, is no result of a query, scan, history or backfill, refuses an update by
        key, and ``jobs.migrate`` moves it with its guards and history; without a previous
        layout, migrate moves nothing."""
        m = self.m
        if not m.has("previous"):
            report = run_local(migrate(m.table))
            assert (report.moved, report.left, report.failed) == ({}, [], []), (m.name, report)
            return
        assert m.old_table is not None and m.old_cls is not None
        old = m.old("o")
        with Session(m.old_table) as s:
            s.save(old)
        if m.has("versioned"):
            old.memo = "old 2"  # type: ignore[attr-defined]
            with Session(m.old_table) as s:
                s.save(old)
        found = self.get("o")
        assert found is not None, m.name
        assert (found.note, found.secret, found.code) == (
            old.memo, old.sec, old.code), (m.name, found)  # type: ignore[attr-defined]
        for change in m.table.changes(_records(self.raw())):
            if change.role != "guard":
                assert change.entity is self.cls, (m.name, change)
                assert change.new.note == ("old" if change.version == 1 else old.memo), (
                    m.name, change.new)  # type: ignore[attr-defined]
        s = self.session()
        assert s.query(self.cls, id="o").all() == [] and s.scan(self.cls).all() == []
        if m.has("versioned"):
            assert s.history(self.cls, id="o").all() == []
        if m.has("unique"):  # (the guard names the old-layout owner, which holds the value)
            assert s.find(self.cls, code=old.code) == found, m.name  # type: ignore[attr-defined]
        self.assert_search({"o": found})  # (read as current)
        self.refused(DynaormError, lambda: self._update("o", note="by key"))
        assert run_local(backfill(self.cls, _fill, name="window")).scanned == 0
        assert check_table(m.table).problems == [], m.name
        window = self.export({"o": found})  # (in the current layout, history and all)
        report = run_local(migrate(m.table))
        assert (report.moved, report.left, report.failed) == ({m.cls.__name__: 1}, [], []), (
            m.name, report)
        moved = self.get("o")
        assert moved == found, m.name
        self.reread_history("o")  # (the old history moved with it, as it read)
        self.stored("o")
        self.assert_rows()
        assert window == {i: [row_of(v) for v in vs] for i, vs in self.history.items()
                          }, m.name  # (the window's export wrote the old history as it reads)

    def _update(self, ident: str, **values: Any) -> None:
        s = self.session()
        s.update(self.cls, id=ident).set(**values)
        s.commit()

    def insert(self) -> None:
        a, b = self.m.new("a"), self.m.new("b", zone="z2", n=2)
        self.commit(a, b)
        for obj in (a, b):
            assert dynaorm.inspect(obj).persisted
        self.stored("a")
        self.stored("b")
        assert self.live["a"] == a and self.live["b"] == b, self.m.name
        self.assert_rows()
        if self.m.has("unique"):  # a taken value: refused, named (never its plaintext)
            error = self.refused(UniqueConstraintError,
                                 lambda: self.commit(self.m.new("x", code=a.code)))
            assert "code" in str(error)

    def ttl(self) -> None:
        """``stamps``: an entity whose TTL has passed reads as gone on every read, is no
        problem to check, and its unique value is free to claim."""
        if not self.m.has("stamps"):
            return
        e = self.m.new("e", expires=PAST)
        self.commit(e)
        self.expired["e"] = e
        if self.m.has("versioned"):
            self.history["e"] = [dict(e.__dict__)]
        s = self.session()
        assert self.get("e") is None and s.query(self.cls, id="e").all() == []
        assert "e" not in {o.id for o in s.scan(self.cls).consistent()}
        assert s.query(self.cls, id="e").values("note") == []
        self.assert_search(self.live)
        self.assert_rows()
        self.check()
        if self.m.has("unique"):
            assert s.find(self.cls, code=e.code) is None  # type: ignore[attr-defined]
            self.commit(self.m.new("f", code=e.code))  # type: ignore[attr-defined]
            self.stored("f")
            self.claimed.add("e")
            self.assert_rows()

    def save_update(self) -> None:
        a = self.get("a")
        a.note, a.secret, a.code, a.n = "second", "secret-a2", "code-a2", 5
        self.commit(a)
        self.stored("a")
        assert (self.live["a"].note, self.live["a"].secret, self.live["a"].code) == (
            "second", "secret-a2", "code-a2"), self.m.name
        self.assert_rows()

    def update(self) -> None:
        """``s.update``: plain, encrypted and unique values set (``vectors``: a vector of
        numbers a 32-bit float rounds, read back rounded); what a ciphertext or a vector
        cannot take is refused before sending."""
        vec = {"vec": [0.1, 0.2, 0.3]} if self.m.has("vectors") else {}
        self._update("a", note="third", secret="secret-a3", code="code-a3", **vec)
        self.stored("a")
        assert (self.live["a"].note, self.live["a"].secret, self.live["a"].code) == (
            "third", "secret-a3", "code-a3"), self.m.name
        if vec:
            assert self.live["a"].vec == float32(vec["vec"]) != vec["vec"], self.m.name
            for bad in (lambda u: u.append(vec=[1.0]), lambda u: u.add(vec=[1.0])):
                self.refused(DynaormError, lambda bad=bad: bad(  # type: ignore[misc]
                    self.session().update(self.cls, id="a")))
        self.assert_rows()
        if self.m.has("encrypted") or self.m.has("compressed") or self.m.has(
                "offloaded"):  # what a ciphertext, a compressed or an offloaded value
            # cannot take: refused before sending
            for bad in (lambda u: u.add(secret="x"), lambda u: u.append(secret=["x"])):
                self.refused(DynaormError, lambda bad=bad: bad(  # type: ignore[misc]
                    self.session().update(self.cls, id="a")))

    def key_change(self) -> None:
        """A loaded object whose key field changes moves (versioned: refused)."""
        b = self.get("b")
        b.id = "c"
        if self.m.has("versioned"):
            self.refused(DynaormError, lambda: self.commit(b))
            return
        self.commit(b)
        del self.live["b"]
        self.stored("c")
        assert self.get("b") is None
        self.assert_rows()

    def reads(self) -> None:
        m, s = self.m, self.session()
        names = ("note", "secret", "code", *(("vec",) if m.has("vectors") else ()),
                 *(("motto",) if m.has("reversed") else ()))
        for ident, obj in self.live.items():
            assert s.get(self.cls, id=ident) == obj, (m.name, ident)
            assert s.query(self.cls, id=ident).all() == [obj], (m.name, ident)
            assert s.query(self.cls, id=ident).values(*names) == [
                {n: getattr(obj, n) for n in names}], (m.name, ident)
            for n, version in enumerate(self.history.get(ident, ()), 1):
                assert s.get(self.cls, id=ident, version=n).__dict__ == version, (m.name, n)
        scanned = sorted(s.scan(self.cls).consistent(), key=lambda o: o.id)
        assert scanned == [self.live[i] for i in sorted(self.live)], m.name
        assert sorted(s.scan(self.cls).consistent().values("id", "secret", *names[3:]),
                      key=lambda v: v["id"]) == [
            {"id": i, "secret": self.live[i].secret, **{n: getattr(self.live[i], n)
                                                        for n in names[3:]}}
            for i in sorted(self.live)], m.name
        if m.has("unique"):
            for obj in self.live.values():
                assert s.find(self.cls, code=obj.code) == obj, (m.name, obj)
        if m.has("indexes"):
            for index in ("gsi1", "by_zone"):
                got = [o for z in ("z1", "z2") for o in s.query(self.cls, index=index, zone=z)]
                assert sorted(got, key=lambda o: o.id) == [
                    self.live[i] for i in sorted(self.live)], (m.name, index)
                assert sorted(v["secret"] for z in ("z1", "z2") for v in s.query(
                    self.cls, index=index, zone=z).values("secret")) == sorted(
                    o.secret for o in self.live.values()), (m.name, index)
        else:
            self.refused(DynaormError, lambda: s.query(self.cls, index="gsi1", zone="z1").all())
        if m.has("encrypted") or m.has("compressed") or m.has("offloaded"):  # a filter
            # on a ciphertext, a compressed or an offloaded value: refused before sending,
            # naming the entity (compressed, offloaded)
            error = self.refused(DynaormError, lambda: s.scan(self.cls).filter(
                F("secret") == "secret-a3").all())
            assert not (m.has("compressed") or (m.has("offloaded") and not m.has(
                "encrypted"))) or f"{self.cls.__name__}.secret" in str(error), (m.name, error)
        if m.has("reversed"):  # a user's rule refuses a filter on its stored text
            self.refused(DynaormError, lambda: s.scan(self.cls).filter(
                F("motto") == "motto-a").all())

    def search(self) -> None:
        """``vectors``: a search finds exactly the entities a get reads (never a version
        row, a guard, an expired row or another type's item), and ``where`` narrows it by
        the index's filter; no other index is searched, and an ``Encrypted`` vector field
        is refused as its class is defined. Without a vector index: refused."""
        m, s = self.m, self.session()
        if not m.has("vectors"):
            self.refused(DynaormError, lambda: s.search(self.cls, "by_vec", vector=QUERY,
                                                        zone="z1").all())
            return
        other = {"pk": f"OTHER{m.prefix}#1", "sk": "E"}  # (another type's item, indexed)
        raw_set(m.table, other, _type="Other", zone="z1", n=0, vec=vector_of("o"))
        self.assert_search(self.live, skipped={"z1": 1})
        raw_delete(m.table, other)
        for n in {o.n for o in self.live.values()}:
            got = s.search(self.cls, "by_vec", vector=QUERY, top=100, zone="z1").where(
                F("n") == n).all()
            assert sorted(h.item.id for h in got) == sorted(
                i for i, o in self.live.items() if (o.zone, o.n) == ("z1", n)), (m.name, n)
        if m.has("indexes"):  # a native index is no vector index
            self.refused(DynaormError, lambda: s.search(self.cls, "gsi1", vector=QUERY,
                                                        zone="z1").all())
        if m.has("encrypted"):
            with pytest.raises(DynaormError, match="vec: a vector field cannot be Encrypted"):
                m.variant(vec=(Encrypted[Annotated[list[float], Vector(3)]], ...))

    def assert_search(self, rows: dict[str, Entity],
                      skipped: dict[str, int] | None = None) -> None:
        """A search of each zone (``top=100``) finds exactly ``rows`` of that zone, each
        equal to what a get reads, nearest first, with ``skipped`` items of another type
        (``vectors`` only)."""
        if not self.m.has("vectors"):
            return
        s = self.session()
        for zone in ("z1", "z2"):
            hits = s.search(self.cls, "by_vec", vector=QUERY, top=100, zone=zone).all()
            want = {i: o for i, o in rows.items() if o.zone == zone}  # type: ignore[attr-defined]
            assert {h.item.id: h.item for h in hits} == want, (self.m.name, zone, hits)
            assert len(hits) == len(want), (self.m.name, zone, hits)
            assert [h.score for h in hits] == sorted(h.score for h in hits), self.m.name
            assert hits.skipped == (skipped or {}).get(zone, 0), (self.m.name, zone)

    def stream(self) -> None:
        """Records built from the stored images classify as the rules' rows and decode to
        what a read gives; a TTL deletion is a change of kind expired."""
        m, rows = self.m, {**self.expired, **self.live}
        raw = self.raw()
        for change in m.table.changes(_records(raw)):
            if change.role == "guard":
                assert m.has("unique") and change.entity is self.cls and change.field == "code"
                continue
            assert change.entity is self.cls, (m.name, change)
            ident = change.key["pk"].split("#")[1]
            if change.role == "version":
                assert change.new.__dict__ == self.history[ident][change.version - 1], (
                    m.name, change.key)
            else:
                assert change.role == ("latest" if m.has("versioned") else "row")
                assert change.new == rows[ident], (m.name, change.key)
        if self.expired:
            item = next(i for i in raw if key_of(i) == m.key("e"))
            (gone,) = m.table.changes([{
                "eventName": "REMOVE", "userIdentity": {
                    "type": "Service", "principalId": "dynamodb.amazonaws.com"},
                "dynamodb": {"Keys": {"pk": item["pk"], "sk": item["sk"]}, "OldImage": item}}])
            assert gone.expired and gone.kind == "remove" and gone.old == self.expired["e"]

    def history_surface(self) -> None:
        s = self.session()
        if not self.m.has("versioned"):
            self.refused(DynaormError, lambda: s.history(self.cls, id="a").all())
            return
        for ident, versions in self.history.items():
            got = [dict(v.__dict__) for v in s.history(self.cls, id=ident)]
            assert got == versions, (self.m.name, ident)

    def backfill(self) -> None:
        report = run_local(backfill(self.cls, _fill, name="matrix"))
        assert (report.changed, report.failed) == (len(self.live), []), (self.m.name, report)
        for ident in list(self.live):
            before = self.live[ident]
            self.stored(ident)
            assert (self.live[ident].note, self.live[ident].code) == (
                "filled", before.code + "+"), self.m.name
            assert getattr(self.live[ident], "vec", None) == (
                float32(FILLED) if self.m.has("vectors") else None), self.m.name
            self.marked[ident] = getattr(self.live[ident], "version", 0)
        self.assert_rows()

    def check(self) -> None:
        result = check_table(self.m.table)
        assert result.problems == [], (self.m.name, result.problems)

    def repair(self) -> None:
        """A latest copy that differs from its newest version row (a partial restore)
        and an index key that differs from its fields (another tool's write) are found,
        and their repair leaves the rows the rules imply (a rebuilt latest copy: its
        ciphertexts sealed for its own key, native index keys back, a fresh revision)."""
        m, kinds = self.m, set()
        if m.has("versioned"):
            raw_set(m.table, dict(zip(("pk", "sk"), m.key("b"), strict=True)), note="restored")
            kinds.add("stale-latest")
        if m.has("indexes"):
            raw_set(m.table, dict(zip(("pk", "sk"), m.key("a"), strict=True)), gsi1sk="x")
            kinds.add("stale-index")
        if not kinds:
            return
        result = check_table(m.table, fix=True)
        assert {p.split()[0] for p in result.problems} == kinds, (m.name, result.problems)
        assert (result.repaired, result.left) == (len(kinds), 0), (m.name, result)
        self.check()
        self.assert_rows()

    def export(self, rows: dict[str, Entity] | None = None,
               history: dict[str, list[dict[str, Any]]] | None = None
               ) -> dict[str, list[dict[str, Any]]]:
        """``jobs.export`` (two tasks) read back in DuckDB: one dataset of the entity's
        ``rows`` (default: the live ones; never a guard, an expired row, the revision or
        an index key), encrypted fields left out, then decrypted; versioned, its history
        too (``<Entity>.history``: every version row, equal to ``history`` where given);
        nothing unclaimed, nothing failed. Returns the history read back (decrypted)."""
        m, name = self.m, self.cls.__name__
        rows = self.live if rows is None else rows
        secret = ("secret", "code") if m.has("encrypted") else ()
        found: dict[str, list[dict[str, Any]]] = {}
        for encrypted, omit in (("omit", secret), ("decrypt", ())):
            with tempfile.TemporaryDirectory() as out:
                report = run_local(export(m.table, out, segments=2, encrypted=encrypted,
                                          history=m.has("versioned")))
                got = sorted(read_back(out, name), key=lambda r: r["id"])
                assert got == [row_of(rows[i], omit) for i in sorted(rows)], (m.name, got)
                found = {}
                for row in read_back(out, f"{name}.history") if m.has("versioned") else ():
                    found.setdefault(row["id"], []).append(row)
            found = {i: sorted(vs, key=lambda r: r["version"]) for i, vs in found.items()}
            if history is not None:
                assert found == {i: [row_of(v, omit) for v in vs] for i, vs in history.items()
                                 }, (m.name, found)
            assert report.rows == {name: len(rows), **(
                {f"{name}.history": sum(map(len, found.values()))} if m.has("versioned")
                else {})}, (m.name, report)
            assert (report.unclaimed, report.failed) == ({}, 0), (m.name, report)
        return found

    def exported(self) -> None:
        """The export of the table as it now stands."""
        self.export(history=self.history if self.m.has("versioned") else None)

    def messages(self) -> None:
        """Errors that show a value: an encrypted field's is never its plaintext."""
        s = self.session()
        bad = self.cls.model_construct(**{**self.m.new("x").__dict__, "secret": 424242})
        self.plaintexts.add("424242")  # (not a str: refused before sending)
        error = self.refused(InvalidValueError, lambda: self.commit(bad))
        assert "secret" in str(error)
        self.refused(InvalidValueError if self.m.has("encrypted") else ValidationError,
                     lambda: s.update(self.cls, id="a").set(secret=424242))
        if self.m.has("vectors"):  # a vector error names the entity, field and element
            for bad in ([1.0, float("nan"), 0.5], [1.0, 0.5, 1e39]):
                stale = self.get("a")
                stale.vec[:] = bad  # (changed in place: validated as it is saved)
                for error in (self.refused(InvalidValueError, lambda s=stale: self.commit(s)),
                              self.refused(ValidationError, lambda bad=bad: s.update(
                                  self.cls, id="a").set(vec=bad))):
                    text = str(error)
                    assert all(w in text for w in (self.cls.__name__, "vec", "element 1"
                                                   if bad[1] != 0.5 else "element 2")), text
        stale, fresh = self.get("a"), self.get("a")
        fresh.note = "fourth"
        self.commit(fresh)
        self.stored("a")
        stale.note = "stale"
        error = self.refused(ConflictError, lambda: self.commit(stale))
        repr(error.item)  # type: ignore[attr-defined]  # (shown: the stored entity, redacted)

    def delete(self) -> None:
        """A stale loaded object's delete conflicts: the row proves a change since (its
        revision, its version; without either, the whole item as loaded: contract 25); a
        delete releases the guards and keeps the history (``history=True``: deletes it)."""
        stale = self.get("a")
        self._update("a", note="moved on")
        self.stored("a")
        s = self.session()
        s.delete(stale)
        self.refused(ConflictError, s.commit)
        s = self.session()
        s.delete(self.get("a"))
        s.commit()
        del self.live["a"]
        assert self.get("a") is None
        if self.m.has("versioned"):  # its history goes with it when asked
            s.delete(self.get("b"), history=True)
            s.commit()
            del self.live["b"], self.history["b"]
        self.assert_search(self.live)  # (gone from the vector index with its rows)
        self.assert_rows()

    def assert_nothing_shown(self, caplog: pytest.LogCaptureFixture, spans: Spans) -> None:
        """No message, log record or span attribute holds an encrypted plaintext; the
        spans name the entity and each index read."""
        names = {v for span in spans.all
                 for v in (span.attributes or {}).get("dynaorm.entity_types", ())}
        assert self.cls.__name__ in names, self.m.name
        indexes = {(span.attributes or {}).get("aws.dynamodb.index_name") for span in spans.all}
        assert (indexes >= {"gsi1", "by_zone"}) == self.m.has("indexes"), (self.m.name, indexes)
        if not self.m.has("encrypted"):
            return
        shown = [text for e in self.errors for text in (str(e), repr(e), repr(e.args),
                                                        repr(vars(e)))]
        shown += [r.getMessage() for r in caplog.records] + [repr({
            k: v for k, v in vars(r).items() if k not in _CLOCKS}) for r in caplog.records]
        for span in spans.all:
            shown.append(repr(dict(span.attributes or {})))
            shown += [repr(dict(event.attributes or {})) for event in span.events]
        assert caplog.records and spans.all
        for text in shown:
            for plain in self.plaintexts:
                assert plain not in text, (self.m.name, plain, text)


#: what logging itself puts in a record (times, thread and process ids): numbers in which a
#: plaintext number's digits may stand by chance (a created time held 424242 in one run)
_CLOCKS = frozenset({"created", "msecs", "relativeCreated", "thread", "process"})


#: every step of a cell, in order, and the surfaces it exercises
STEPS: list[tuple[tuple[str, ...], Callable[[Cell, Any, Spans], None]]] = [
    (("migrate", "get", "query", "scan", "history", "stream", "update", "backfill", "check",
      "search"), lambda c, *_: c.migrate_window()),
    (("save",), lambda c, *_: c.insert()),
    (("get", "query", "values", "scan", "stream", "check", "search"),
     lambda c, *_: c.ttl()),
    (("save",), lambda c, *_: c.save_update()),
    (("update",), lambda c, *_: c.update()),
    (("save",), lambda c, *_: c.key_change()),
    (("get", "query", "values", "scan"), lambda c, *_: c.reads()),
    (("search",), lambda c, *_: c.search()),
    (("stream",), lambda c, *_: c.stream()),
    (("history",), lambda c, *_: c.history_surface()),
    (("check",), lambda c, *_: c.check()),
    (("check",), lambda c, *_: c.repair()),
    (("backfill",), lambda c, *_: c.backfill()),
    (("export",), lambda c, *_: c.exported()),
    (("messages",), lambda c, *_: c.messages()),
    (("check",), lambda c, *_: c.check()),
    (("delete", "search"), lambda c, *_: c.delete()),
    (("check",), lambda c, *_: c.check()),
    (("messages", "logs", "spans"), lambda c, caplog, spans: c.assert_nothing_shown(caplog,
                                                                                 spans)),
]


def _fill(obj: Any) -> Any:
    """A backfill's change: a plain field, an encrypted one, the unique one, and the
    vector (to numbers a 32-bit float rounds)."""
    obj.note, obj.secret, obj.code = "filled", obj.secret + "!", obj.code + "+"
    if "vec" in type(obj).model_fields:
        obj.vec = FILLED
    return obj


def _records(raw: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Stream records (GetRecords' shape) inserting each stored item."""
    return [{"eventID": str(n), "eventName": "INSERT",
             "dynamodb": {"Keys": {"pk": i["pk"], "sk": i["sk"]}, "NewImage": i}}
            for n, i in enumerate(raw)]


#: each rule alone, and each pair the model accepts
SINGLES = [c for c in COMBOS if len(c) == 1]
PAIRS = [c for c in COMBOS if len(c) > 1]


@pytest.mark.parametrize("combo", SINGLES, ids=label)
def test_cell(combo: tuple[str, ...], engine: str, backend: str | None,
              request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture,
              spans: Spans) -> None:
    """Every surface of one rule, in turn, on one table: on the embedded default and on
    the reference engine (what each rule asks of DynamoDB, proved on DynamoDB Local)."""
    _cell(combo, backend, request, caplog, spans)


# (a pair's rules compose on the client, in the plan each one's single cell already proved
# on DynamoDB Local: the pair's cell runs on the embedded default)
@pytest.mark.engines("moto")
@pytest.mark.parametrize("combo", PAIRS, ids=label)
def test_pair_cell(combo: tuple[str, ...], engine: str, backend: str | None,
                   request: pytest.FixtureRequest, caplog: pytest.LogCaptureFixture,
                   spans: Spans) -> None:
    """Every surface of one pair of rules, in turn, on one table."""
    _cell(combo, backend, request, caplog, spans)


def _cell(combo: tuple[str, ...], backend: str | None, request: pytest.FixtureRequest,
          caplog: pytest.LogCaptureFixture, spans: Spans) -> None:
    m = build(combo)
    with ExitStack() as stack:
        tb = _tables(m, backend, request, stack)
        provider = m.table.db.tracing.tracer_provider
        m.table.db.tracing.tracer_provider = spans.provider
        stack.callback(setattr, m.table.db.tracing, "tracer_provider", provider)
        caplog.set_level(logging.DEBUG, logger="dynaorm")
        cell = Cell(m, tb)
        for surfaces, step in STEPS:
            try:
                step(cell, caplog, spans)
            except AssertionError as exc:  # (what the combination's rules promised there)
                exc.add_note("\n".join(f"{rule} on {surface}: {RULES[rule].answers[surface]}"
                                       for surface in surfaces for rule in combo))
                raise


# -- lost answers, with a second writer in the window --------------------------------------
MOVES = ("change", "delete")


#: the faults of a write's answer: lost after the write applied (a timeout; a 500), or a 500
#: without applying (tests/support/fault_kinds.py)
FAULTS = ("lose", "lose500", "500")


#: the rules that change how a lost answer is heard or what it leaves behind: a transaction
#: (``unique``, ``versioned``: resent under its token), the revision's condition, an
#: offloaded value's objects (an orphan for ``dynaorm check``). Every other rule only adds
#: its own stored form to the write (each one proved under every fault alone, and beside
#: every other rule in the plan of a stale write by :func:`test_pair_cell`'s conflicts)
FAULT_RULES = frozenset({"unique", "versioned", "revision", "offloaded"})
TRANSACTION_RULES = frozenset({"unique", "versioned"})
#: the pairs with a rule of :data:`FAULT_RULES`, each under a lost answer with one second
#: writer's move (taken in turn: each such rule meets both moves)
FAULT_PAIRS = [(c, MOVES[i % len(MOVES)]) for i, c in enumerate(
    c for c in PAIRS if FAULT_RULES & set(c))]


# (each rule alone under every fault and every move, on both engines)
@pytest.mark.parametrize(("combo", "move", "fault"), [
    pytest.param(c, move, fault, id=f"{label(c)}-{move}-{fault}")
    for c in SINGLES for move in MOVES for fault in FAULTS])
def test_lost_answers(combo: tuple[str, ...], move: str, fault: str, engine: str,
                      backend: str | None, request: pytest.FixtureRequest) -> None:
    """The first writer changes ``a`` (note, a unique and encrypted value); its answer is
    lost after the write applied (``lose``: a timeout; ``lose500``: a 500), or it is
    answered 500 without applying (tests/support/fault_kinds.py);
    inside that window a second writer changes ``a`` its own way or deletes it. The first
    is told success only when the write is proved its own, else a typed error; the second
    is told the truth of its own commit; the table is consistent afterwards."""
    _lost_answer(combo, move, fault, engine, backend, request)


# (a pair under a lost answer, the fault whose window its rules must prove together: how
# the client hears a fault is each rule's alike; a transaction's pair on the reference
# engine, which applies a ClientRequestToken at most once, the others on the embedded
# default)
@pytest.mark.engines("local")
@pytest.mark.parametrize(("combo", "move"), [
    pytest.param(c, move, id=f"{label(c)}-{move}")
    for c, move in FAULT_PAIRS if TRANSACTION_RULES & set(c)])
def test_a_transaction_pair_under_a_lost_answer(
        combo: tuple[str, ...], move: str, engine: str, backend: str | None,
        request: pytest.FixtureRequest) -> None:
    _lost_answer(combo, move, "lose", engine, backend, request)


@pytest.mark.engines("moto")
@pytest.mark.parametrize(("combo", "move"), [
    pytest.param(c, move, id=f"{label(c)}-{move}")
    for c, move in FAULT_PAIRS if not TRANSACTION_RULES & set(c)])
def test_a_pair_under_a_lost_answer(combo: tuple[str, ...], move: str, engine: str,
                                    backend: str | None,
                                    request: pytest.FixtureRequest) -> None:
    _lost_answer(combo, move, "lose", engine, backend, request)


def _lost_answer(combo: tuple[str, ...], move: str, fault: str, engine: str,
                 backend: str | None, request: pytest.FixtureRequest) -> None:
    m = build(combo)
    transaction = m.has("unique") or m.has("versioned")
    if transaction and engine == "moto":
        pytest.skip("moto does not apply a ClientRequestToken at most once")
    with ExitStack() as stack:
        tb = _tables(m, backend, request, stack)
        cell = Cell(m, tb)
        cell.commit(m.new("a"))
        cell.stored("a")
        mine = cell.get("a")
        mine.note, mine.secret, mine.code = "mine", "secret-mine", "code-mine"
        told: dict[str, Any] = {}

        def window() -> None:
            theirs = cell.get("a")
            told["applied"] = theirs is not None and theirs.note == "mine"
            try:
                if move == "change":
                    theirs.note, theirs.code = "theirs", "code-theirs"
                    cell.commit(theirs)
                else:
                    s = cell.session()
                    s.delete(theirs)
                    s.commit()
                told["theirs"] = None
            except DynaormError as exc:
                told["theirs"] = exc
            told["after"] = cell.raw()

        operation = "TransactWriteItems" if transaction else "UpdateItem"
        with inject_faults(m.table) as faults:
            arm(faults, [operation], fault, after=window)
            try:
                cell.commit(mine)
                error: BaseException | None = None
            except DynaormError as exc:
                error = exc
        applied = fault != "500"
        assert told["applied"] == applied, (m.name, told)
        assert told["theirs"] is None, (m.name, told["theirs"])  # (nothing faulted it)
        if applied:  # applied, then the window's writer acted: success only as
            # DynamoDB proves it (a transaction's resend under its token), never a resend
            # landing over the window writer's commit
            assert (error is None and transaction) or isinstance(error, OutcomeUnknownError), (
                m.name, error)
            assert cell.raw() == told["after"], f"{m.name}: a resend over the window writer"
        else:  # never applied; the window's writer committed since the load
            assert isinstance(error, ConflictError | OutcomeUnknownError), (m.name, error)
        if m.has("offloaded") and isinstance(error, OutcomeUnknownError):
            # (an unknown outcome removes no object: what it left is an orphan that
            # dynaorm check reports, and nothing else, and --repair removes)
            from datetime import timedelta

            from dynaorm.jobs.checking import check_table

            found = check_table(m.table, fix=True, orphan_age=timedelta(0))
            assert all(p.startswith("orphan-object") for p in found.problems), found.problems
        cell.live.clear()
        cell.reread_history("a")
        if move == "change":
            cell.stored("a")
            assert cell.live["a"].note == "theirs", m.name
        else:
            assert cell.get("a") is None
        cell.assert_rows()
        cell.check()


# -- a previous layout's move under a key (receipts), with every rule -----------------------
@pytest.mark.parametrize("combo", [c for c in COMBOS if "previous" in c], ids=label)
def test_a_keyed_move(combo: tuple[str, ...], engine: str, backend: str | None,
                      request: pytest.FixtureRequest) -> None:
    """Issue 69: a previous layout's move is planned with the rows of every other rule, the
    receipts of a keyed commit (``idempotency_key``, contract 22) included: the object
    read from the old layout is moved once (no row left under the old key, the moved row
    read back as saved, its guard naming it); the handler retried in a fresh session, on
    the object as it now reads, replays: nothing is written again."""
    m = build(combo)
    with ExitStack() as stack:
        tb = _tables(m, backend, request, stack)
        assert m.old_table is not None
        with Session(m.old_table) as s:
            s.save(m.old("k"))
        key = f"move-{m.name}-{worker_suffix()}"
        s = Session(m.table)
        obj: Any = s.get(m.cls, id="k", consistent=True)
        assert obj is not None, m.name
        obj.note = "moved"
        s.save(obj)
        s.commit(idempotency_key=key)
        after = tb.scan_raw()
        assert not [i for i in after if i["pk"]["S"].startswith("OLD")], (m.name, after)
        moved: Any = Session(m.table).get(m.cls, id="k", consistent=True)
        assert moved is not None and moved.note == "moved", (m.name, moved)
        assert moved.code == obj.code and moved.secret == obj.secret, m.name
        if m.has("unique"):
            assert Session(m.table).find(m.cls, code=obj.code) == moved, m.name
        again = Session(m.table)  # (the handler retried: it reads the object as it is now)
        retried: Any = again.get(m.cls, id="k", consistent=True)
        retried.note = "moved"
        again.save(retried)
        again.commit(idempotency_key=key)
        assert tb.scan_raw() == after, f"{m.name}: the retry wrote again"


# -- a map member written by its path, with every rule (issue 82) ---------------------------
@pytest.mark.engines("moto")
@pytest.mark.parametrize("combo", [c for c in COMBOS if len(c) == 1], ids=label)
def test_a_member_write_keeps_every_rule(combo: tuple[str, ...], engine: str,
                                         backend: str | None,
                                         request: pytest.FixtureRequest) -> None:
    """Red team of issue 82: each rule alone, on an entity with a map field ``doc``. A
    save that changes one member of it (with a plain field and the unique value) keeps a
    member another writer set (no revision moved) as stored, and the rows the rule implies
    exactly right (guards, version rows, ciphertexts, index keys; ``dynaorm check`` finds
    nothing); a previous layout's object moves with its members. A second writer setting
    another member between the load and the save: the save is a conflict, and the table
    holds what that writer left."""
    m = with_fields(build(combo), doc=(dict[str, Any], {}))
    with ExitStack() as stack:
        tb = _tables(m, backend, request, stack)
        cell = Cell(m, tb)
        cell.commit(m.new("a", doc={"k": "v", "n": 1}))
        cell.stored("a")
        key = dict(zip(("pk", "sk"), m.key("a"), strict=True))
        raw_set_member(m.table, key, "doc", "beta", {"N": "1E2"})
        beta = (raw_get(m.table, key) or {})["doc"]["M"]["beta"]  # (as the engine keeps it)
        mine = cell.get("a")
        mine.doc["k"], mine.note, mine.code = "w", "mine", "code-mine"
        cell.commit(mine)
        cell.stored("a")
        assert (raw_get(m.table, key) or {})["doc"] == {"M": {
            "k": {"S": "w"}, "n": {"N": "1"}, "beta": beta}}, m.name
        if m.old_cls is not None:  # an object of the old layout, moved with its members
            with Session(m.old_table) as s:  # type: ignore[arg-type]
                s.save(m.old("b", doc={"k": "v"}))
            old_key = dict(zip(("pk", "sk"), key_of(next(
                i for i in cell.raw() if i["pk"]["S"].startswith("OLD"))), strict=True))
            raw_set_member(m.table, old_key, "doc", "beta", beta)
            moved = cell.get("b")
            moved.doc["k"] = "w"
            cell.commit(moved)
            cell.stored("b")
            assert (raw_get(m.table, dict(zip(("pk", "sk"), m.key("b"), strict=True)))
                    or {})["doc"] == {"M": {"k": {"S": "w"}, "beta": beta}}, m.name
        extra = {m.key(i): {"doc"} for i in cell.live}
        extra.update({m.key(i, n): {"doc"} for i, versions in cell.history.items()
                      for n in range(1, len(versions) + 1)})
        m.assert_rows(cell.raw(), cell.live, cell.history, extra)
        cell.check()
        theirs = cell.get("a")  # the window: another member set between load and save
        raw_set_member(m.table, key, "doc", "gamma", {"S": "theirs"})
        left = cell.raw()
        theirs.doc["k"], theirs.note, theirs.code = "x", "x", "code-x"
        with pytest.raises(ConflictError):
            cell.commit(theirs)
        assert cell.raw() == left, m.name
