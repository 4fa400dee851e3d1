"""Red team 08d, previous layouts (``Meta.previous``: the moves planned in
:mod:`dynaorm.schema.rules.previous`): what must never happen to an entity still stored in
its old layout while sessions and ``dynaorm migrate`` write it.

- a move whose answer is lost, with a second writer acting in the window (after the move
  applied, before its answer): the caller is never told ``ConflictError`` for a move that
  is stored, the second writer's work is never undone, the old row is never resurrected,
  and an entity is never stored under both layouts;
- ``dynaorm migrate`` racing a session inside its own move's window: the same;
- random sequences of creates (either design), changes, deletes, refused updates and
  migrate runs checked against a model (hypothesis stateful): every read answers the
  model, every unique guard names its live owner, no entity is stored twice.

The lost-answer tests run on moto and DynamoDB Local (a transaction's resend is
deduplicated by its token on DynamoDB Local; moto ignores tokens, so the outcome there is
read back); the model-based test on moto only (the moves' plans do not depend on the
engine)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from dynaorm import (
    Client,
    ConflictError,
    DynaormError,
    Entity,
    OutcomeUnknownError,
    Previous,
    Session,
    Table,
    Unique,
    UniqueConstraintError,
    Versioned,
)
from dynaorm.jobs.migration import migrate
from dynaorm.testing import TestBackend, inject_faults, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.examples import examples

pytestmark = pytest.mark.sync_only

cur = Table("red08d-previous")
old = Table("red08d-previous")


class OldAcct(Entity):
    class Meta:
        table = old
        pk = "U#{id}"
        sk = "P"
        type_name = "u_old"
        unique = (Unique("mail", prefix="email", normalize=str.lower),)

    id: str
    mail: str
    name: str = ""


class Acct(Entity):
    class Meta:
        table = cur
        pk = "A#{id}"
        sk = "P"
        type_name = "acct"
        unique = (Unique("email", normalize=str.lower),)
        previous = Previous(pk="U#{id}", type_name="u_old", stored_names={"email": "mail"})

    id: str
    email: str
    name: str = ""


class OldBook(Versioned):
    class Meta:
        table = old
        pk = "OB#{id}"
        sk = "BOOK"
        type_name = "book"
        unique = ("code",)

    id: str
    code: str
    n: int = 0


class Book(Versioned):
    class Meta:
        table = cur
        pk = "B#{id}"
        sk = "BOOK"
        type_name = "book"
        unique = ("code",)
        previous = Previous(pk="OB#{id}")

    id: str
    code: str
    n: int = 0


@pytest.fixture
def both(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """``cur`` fresh on the engine; ``old`` the same table on a client of its own (the
    previous release's process), put back after."""
    wire = wire_of(request)
    with use_tables(cur, endpoint_url=backend, name_suffix=worker_suffix(), wire=wire) as tb:
        saved = (old.name, old.binding())
        old.name = cur.name
        old.restore((None, {}, Client(cur.endpoint_url, wire=wire or "dynaorm")))
        cur.max_wait = 0
        try:
            yield tb
        finally:
            old.name = saved[0]
            old.restore(saved[1])


def _rows(tb: TestBackend) -> dict[tuple[str, str], dict[str, Any]]:
    return {(i["pk"], i["sk"]): i for i in tb.scan()}


def _guards_consistent(tb: TestBackend) -> None:
    """Every guard names a live owner holding its value; every owner has its guard; no
    entity is stored under both layouts."""
    rows = _rows(tb)
    for (pk, _sk), g in rows.items():
        if g.get("_type") != "dynaorm:unique":
            continue
        owner = rows.get((g["owner_pk"], g["owner_sk"]))
        assert owner is not None, f"orphan guard {pk}"
        assert owner["_type"] == g["owner_type"], (g, owner)
    ids = [(t, i["id"]) for (pk, sk), i in rows.items()
           for t in [i.get("_type")] if t in ("acct", "u_old")]
    assert len(ids) == len({i for _, i in ids}), f"stored under both layouts: {ids}"
    for (pk, sk), i in rows.items():
        if i.get("_type") in ("acct", "u_old"):
            email = (i.get("email") or i.get("mail")).lower()
            g = rows.get((f"email#{email}", f"email#{email}"))
            assert g is not None and (g["owner_pk"], g["owner_sk"]) == (pk, sk), (i, g)


def _old_acct(email: str = "Ann@X.io", id: str = "a1") -> None:
    with Session(old) as s:
        s.save(OldAcct(id=id, mail=email, name="ann"))


# == lost answers of a move, a second writer in the window ================================
@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("second", ["none", "build", "delete", "rename_email"])
def test_a_lost_move_never_undoes_the_second_writer(both: TestBackend, second: str) -> None:
    """A move (a changed save of an old-layout object) applied, its answer lost; in the
    window a second session builds on the moved entity, deletes it, or changes its unique
    email. Never: a ``ConflictError`` (the move is stored), the old row back, the second
    writer's change undone, an orphan guard."""
    _old_acct()
    s = Session(cur)
    moved = s.get(Acct, id="a1")
    assert moved is not None and moved.email == "Ann@X.io"
    moved.name = "moved"

    def window() -> None:
        with Session(cur) as b:
            theirs = b.get(Acct, id="a1")
            assert theirs is not None and theirs.name == "moved"  # (the move applied)
            if second == "build":
                theirs.name = "theirs"
                b.save(theirs)
            elif second == "delete":
                b.delete(theirs)
            elif second == "rename_email":
                theirs.email = "Bob@X.io"
                b.save(theirs)

    outcome: str
    with inject_faults(cur) as faults:
        faults.lose_answer("TransactWriteItems", after=None if second == "none" else window)
        try:
            s.save(moved)
            s.commit()
            outcome = "ok"
        except ConflictError as exc:
            pytest.fail(f"a stored move reported as a conflict: {exc!r}")
        except OutcomeUnknownError:
            outcome = "unknown"
    rows = _rows(both)
    assert ("U#a1", "P") not in rows  # (never resurrected)
    _guards_consistent(both)
    now = Session(cur).get(Acct, id="a1")
    expected = {"none": ("moved", "Ann@X.io"), "build": ("theirs", "Ann@X.io"),
                "delete": None, "rename_email": ("moved", "Bob@X.io")}[second]
    assert (None if now is None else (now.name, now.email)) == expected
    if second == "none":
        assert outcome == "ok"


@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("second", ["build", "delete"])
def test_a_lost_versioned_move_keeps_history_and_the_second_writer(both: TestBackend,
                                                                    second: str) -> None:
    """A versioned entity with two old version rows, moved by a changed save whose answer
    is lost; a second writer builds on it (a version 4) or deletes it in the window.
    Never: a conflict for the stored move, old rows back, a version lost or doubled."""
    book = OldBook(id="b1", code="C1")
    for n in (1, 2):
        book.n = n
        with Session(old) as o:
            o.save(book)
    s = Session(cur)
    moved = s.get(Book, id="b1")
    assert moved is not None and moved.version == 2  # type: ignore[attr-defined]
    moved.n = 3

    def window() -> None:
        with Session(cur) as b:
            theirs = b.get(Book, id="b1")
            assert theirs is not None and theirs.n == 3
            if second == "build":
                theirs.n = 4
                b.save(theirs)
            else:
                b.delete(theirs)

    with inject_faults(cur) as faults:
        faults.lose_answer("TransactWriteItems", after=window)
        try:
            s.save(moved)
            s.commit()
        except ConflictError as exc:
            pytest.fail(f"a stored move reported as a conflict: {exc!r}")
        except OutcomeUnknownError:
            pass
    keys = set(_rows(both))
    assert not any(pk.startswith("OB#") for pk, _ in keys), keys
    now = Session(cur).get(Book, id="b1")
    if second == "build":
        assert now is not None and (now.n, now.version) == (4, 4)  # type: ignore[attr-defined]
        assert [b.n for b in Session(cur).history(Book, id="b1")] == [1, 2, 3, 4]
    else:
        assert now is None
        assert ("code#C1", "code#C1") not in keys


@pytest.mark.engines("moto", "local")
@pytest.mark.parametrize("second", ["build", "delete"])
def test_migrate_racing_a_session_in_its_move_window(both: TestBackend, second: str) -> None:
    """``dynaorm migrate`` moves an account, its answer lost; a session builds on or
    deletes the moved account in the window. Never: the session's work undone, the old
    row back, migrate claiming a failure for a row it moved, an orphan guard."""
    _old_acct()
    _old_acct("Cy@X.io", id="a2")

    def window() -> None:
        with Session(cur) as b:
            theirs = b.get(Acct, id="a1")
            if theirs is None:  # (the first move was a2's)
                return
            if second == "build":
                theirs.name = "theirs"
                b.save(theirs)
            else:
                b.delete(theirs)

    with inject_faults(cur) as faults:
        faults.lose_answer("TransactWriteItems", after=window, times=2)
        report = migrate(cur, check=False)
    assert report.failed == [], report
    rows = _rows(both)
    assert not any(pk.startswith("U#") for pk, _ in rows), rows
    _guards_consistent(both)
    now = Session(cur).get(Acct, id="a1")
    assert (None if now is None else now.name) == ("theirs" if second == "build" else None)
    assert Session(cur).get(Acct, id="a2") is not None


# == random sequences against a model ======================================================
REFUSED = (ConflictError, UniqueConstraintError)
IDS = st.sampled_from(["a", "b", "c"])
EMAILS = st.sampled_from(["x@e.io", "X@E.IO", "y@e.io", "z@e.io"])


class PreviousLayoutMachine(RuleBasedStateMachine):
    """Accounts created by either design, changed, renamed, deleted, updated (refused in
    the old layout) and migrated; the model: id -> (email, name, layout)."""

    tb: TestBackend

    def __init__(self) -> None:
        super().__init__()
        self.model: dict[str, tuple[str, str, str]] = {}
        for i in self.tb.scan_raw():
            self.tb.table.db.send("DeleteItem", {"TableName": cur.name, "Key": {
                "pk": i["pk"], "sk": i["sk"]}})

    def _taken(self, email: str, but: str | None = None) -> bool:
        return any(e.lower() == email.lower() for i, (e, _, _) in self.model.items()
                   if i != but)

    @rule(id=IDS, email=EMAILS)
    def create_old(self, id: str, email: str) -> None:
        """The previous release, still running, creates an account."""
        if id in self.model:
            return  # (the old release cannot see a current-layout row: not its business)
        try:
            _old_acct(email, id)
        except REFUSED:
            assert self._taken(email)
            return
        assert not self._taken(email)
        self.model[id] = (email, "ann", "old")

    @rule(id=IDS, email=EMAILS)
    def create_new(self, id: str, email: str) -> None:
        try:
            with Session(cur) as s:
                s.save(Acct(id=id, email=email))
        except REFUSED:
            assert id in self.model or self._taken(email)
            return
        assert id not in self.model and not self._taken(email), (id, email, self.model)
        self.model[id] = (email, "", "new")

    @rule(id=IDS, email=EMAILS, name=st.sampled_from(["", "n1", "n2"]))
    def change(self, id: str, email: str, name: str) -> None:
        with Session(cur) as s:
            obj = s.get(Acct, id=id)
            if obj is None:
                assert id not in self.model
                return
            obj.email, obj.name = email, name
            try:
                s.save(obj)
                s.commit()
            except REFUSED:
                assert self._taken(email, but=id)
                return
        assert not self._taken(email, but=id)
        self.model[id] = (email, name, "new")

    @rule(id=IDS)
    def delete(self, id: str) -> None:
        with Session(cur) as s:
            obj = s.get(Acct, id=id)
            assert (obj is None) == (id not in self.model)
            if obj is not None:
                s.delete(obj)
                s.commit()
                del self.model[id]

    @rule(id=IDS, name=st.sampled_from(["u1", "u2"]))
    def update(self, id: str, name: str) -> None:
        if id not in self.model:
            return
        try:
            with Session(cur) as s:
                s.update(Acct, id=id).set(name=name)
        except DynaormError as exc:
            assert self.model[id][2] == "old", exc
            assert "previous layout" in str(exc)
            return
        assert self.model[id][2] == "new"
        e, _, layout = self.model[id]
        self.model[id] = (e, name, layout)

    @precondition(lambda self: any(v[2] == "old" for v in self.model.values()))
    @rule()
    def run_migrate(self) -> None:
        report = migrate(cur, check=False)
        assert report.failed == [] and report.done
        self.model = {i: (e, n, "new") for i, (e, n, _) in self.model.items()}

    @invariant()
    def reads_answer_the_model(self) -> None:
        s = Session(cur)
        for id in ("a", "b", "c"):
            got = s.get(Acct, id=id)
            want = self.model.get(id)
            assert (None if got is None else (got.email, got.name)) == (
                None if want is None else want[:2]), id
        for id, (email, _, _) in self.model.items():
            found = s.find(Acct, email=email.swapcase())
            assert found is not None and found.id == id
        _guards_consistent(self.tb)
        layouts = {i["id"]: i["_type"] for i in self.tb.scan() if i.get("_type") in (
            "acct", "u_old")}
        assert layouts == {i: ("u_old" if v[2] == "old" else "acct")
                           for i, v in self.model.items()}


@pytest.mark.engines("moto")
def test_previous_layout_sequences_against_a_model(both: TestBackend) -> None:
    PreviousLayoutMachine.tb = both
    run = PreviousLayoutMachine.TestCase
    run.settings = settings(max_examples=examples(15), stateful_step_count=10, deadline=None,
                            suppress_health_check=list(HealthCheck))
    run().runTest()

