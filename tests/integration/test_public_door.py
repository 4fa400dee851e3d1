"""The public door (contract 24, issue 80): what a package written on dynaorm's public API
alone uses works, through ``tests/support/extension.py`` (a third party's package, which
``tests/system/test_public_door.py`` proves takes no private name): an operation written
once run by both kinds of session (``Session.run``, ``AsyncSession.run``), an error of a
step thrown into it, a session's scope and idempotency key, ``explain`` in a session, the
key grammar (``dynaorm.keys``), a row kind a package keeps (``Table.keeps``) and an
object's stored item both ways (``dynaorm.codec``). None of it depends on the engine: on
moto."""

from __future__ import annotations

import asyncio
import sys
import uuid
import warnings
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from dynaorm import (
    AsyncSession,
    DynaormError,
    Entity,
    Hook,
    KeyTemplateError,
    Previous,
    RowKind,
    ScopeError,
    Session,
    Table,
    explain,
    keys,
)
from dynaorm.formats import iam
from dynaorm.jobs import check, run_local
from dynaorm.testing import TestBackend
from tests.support import extension as ext
from tests.support.engines import on_engine

pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

desk = Table("public-door")


class Card(Entity):
    class Meta:
        table = desk
        pk = "TENANT#{tenant_id}"
        sk = "CARD#{card_id}"

    tenant_id: str
    card_id: str
    name: str = ""
    n: int = 0


@pytest.fixture
def ddb(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, desk)


def _both(op: Callable[[Any], Any], scope: dict[str, str] | None = None) -> tuple[Any, Any]:
    """``op(session)`` run by a ``Session``, then by an ``AsyncSession``."""
    s = Session(desk, scope=scope)
    sync = s.run(op(s))

    async def go() -> Any:
        a = AsyncSession(desk, scope=scope)
        return await a.run(op(a))

    return sync, asyncio.run(go())


def test_an_operation_written_once_runs_by_both_kinds_of_session(ddb: TestBackend) -> None:
    (made, replayed), (changed, again) = _both(
        lambda s: ext.upsert(s, Card, {"name": "ada", "n": 1}, tenant_id="t1", card_id="c1"))
    assert made.name == changed.name == "ada" and not replayed and not again
    (first, _), (second, _) = _both(
        lambda s: ext.upsert(s, Card, {"n": 2}, tenant_id="t1", card_id="c1"))
    assert first.n == second.n == 2 and second.name == "ada"
    assert Session(desk).get(Card, tenant_id="t1", card_id="c1") == second
    cleanup: list[str] = []
    assert _both(lambda s: ext.count(s, Card, cleanup, tenant_id="t1")) == (1, 1)
    assert cleanup == ["closed", "closed"]


def test_an_error_a_step_raises_is_thrown_into_the_operation(ddb: TestBackend) -> None:
    """A step's error is raised at its ``yield``: the operation handles it (a scoped get
    of another tenant's key) or lets it through; an interrupt (a ``BaseException``) is
    not thrown in: the operation is closed (its ``finally`` runs) and it goes on."""
    Session(desk).run(ext.upsert(Session(desk), Card, {}, tenant_id="t2", card_id="c9"))
    scope = {"tenant_id": "t1"}
    assert _both(lambda s: ext.refused(s, Card, tenant_id="t2", card_id="c9"),
                 scope) == ("refused", "refused")
    with pytest.raises(ScopeError):  # (not handled: through)
        Session(desk, scope=scope).run(ext.upsert(
            Session(desk, scope=scope), Card, {}, tenant_id="t2", card_id="c9"))

    class Interrupt(BaseException):
        pass

    def interrupted() -> Any:
        raise Interrupt

    seen: list[str] = []

    def op() -> Any:
        try:
            yield interrupted
        except Interrupt:  # (never: not thrown in)
            seen.append("caught")
        finally:
            seen.append("closed")

    with pytest.raises(Interrupt):
        Session(desk).run(op())
    with pytest.raises(Interrupt):
        asyncio.run(AsyncSession(desk).run(op()))
    assert seen == ["closed", "closed"]

    def awaiting() -> Any:  # (a step of an AsyncSession, run by a Session)
        yield lambda: asyncio.sleep(0)

    with pytest.raises(TypeError, match=r"AsyncSession\.run"):
        Session(desk).run(awaiting())


def test_a_session_s_scope_and_idempotency_key_are_read_only(ddb: TestBackend) -> None:
    s = Session(desk, scope={"tenant_id": "t1"}, idempotency_key="k-1")
    assert dict(s.scope or {}) == {"tenant_id": "t1"} and s.idempotency_key == "k-1"
    assert Session(desk).scope is None and Session(desk).idempotency_key is None
    with pytest.raises(AttributeError):
        s.scope = {"tenant_id": "t2"}  # type: ignore[misc]
    with pytest.raises(AttributeError):
        s.idempotency_key = "k-2"  # type: ignore[misc]
    with pytest.raises(TypeError):
        s.scope["tenant_id"] = "t2"  # type: ignore[index]
    other = ext.sibling(s)  # (held alike: the same scope, the same key)
    assert other.run(ext.refused(other, Card, tenant_id="t2", card_id="c1")) == "refused"
    key = f"door-{uuid.uuid4().hex}"
    first = ext.sibling(s, key)
    first.save(Card(tenant_id="t1", card_id="c2", n=5))
    again = ext.sibling(first)
    again.save(Card(tenant_id="t1", card_id="c2", n=5))
    assert again.idempotency_key == key and not first.commit().replayed
    assert again.commit().replayed  # (the same key: the first commit's receipt answers)


def test_explain_in_a_session_is_refused_as_its_get_would_be(ddb: TestBackend) -> None:
    s = Session(desk, scope={"tenant_id": "t1"})
    said = explain(s, Card, tenant_id="t1", card_id="c1")
    assert said.requests[0].operation == "GetItem" and "t1" in str(said)
    with pytest.raises(ScopeError):
        explain(s, Card, tenant_id="t2", card_id="c1")
    with pytest.raises(TypeError):
        explain(Card, Card, tenant_id="t1", card_id="c1")
    assert str(explain(Session(desk), Card, tenant_id="t2", card_id="c1")) == str(
        explain(Card, tenant_id="t2", card_id="c1"))


def test_the_key_grammar(ddb: TestBackend) -> None:
    """Parse, render, read back and the proven prefix, by the templates' own parser."""
    assert ext.tenant_prefix("TENANT#{tenant_id}#CARD#{card_id}", "tenant_id") == "TENANT#"
    assert ext.tenant_prefix("{card_id}#{tenant_id}", "tenant_id") is None
    assert ext.tenant_prefix("T{tenant_id!l}#X", "tenant_id") is None
    template = keys.parse("TENANT#{tenant_id}#CARD#{n:04d}")
    assert template.render({"tenant_id": "t1", "n": 7}) == "TENANT#t1#CARD#0007"
    with pytest.raises(KeyTemplateError):
        template.render({"tenant_id": "t#1", "n": 7})  # (a value holding a separator)
    with pytest.raises(KeyTemplateError):
        keys.parse("A#{a}{b}")
    obj = Card(tenant_id="t1", card_id="c3")
    with Session(desk) as s:
        s.save(obj)
    [item] = [i for i in ddb.scan_raw() if i["sk"]["S"] == "CARD#c3"]
    assert ext.fields_of_key("TENANT#{tenant_id}", item, "pk") == {"tenant_id": "t1"}
    assert ext.fields_of_key("USER#{tenant_id}", item, "pk") is None
    assert keys.key_order(keys.key_value({"N": "10"})) > keys.key_order(
        keys.key_value({"N": "9"}))


def test_two_templates_side_by_side() -> None:
    """Whether one key could fit two templates, and whose it is then, as dynaorm ranks two
    entities' keys (what inference asks of the entities it proposes)."""
    org, meta, event = keys.parse("ORG#{org_id}"), keys.parse("METADATA"), keys.parse(
        "{timestamp}")
    assert keys.could_overlap(meta, event) and keys.could_overlap(org, org)
    assert not keys.could_overlap(org, keys.parse("USER#{user_id}"))
    assert keys.literal_outranks(org, meta, org, event)  # (METADATA is the literal's)
    assert not keys.literal_outranks(org, event, org, meta)
    assert not keys.literal_outranks(org, event, keys.parse("ORG#{other}"), event)


def test_a_row_kind_a_package_keeps_is_in_the_model_and_never_an_entity(
        ddb: TestBackend) -> None:
    """A package's own rows, registered on the table: listed by the model (what ``dynaorm
    iam`` reads: a kind whose key renders no scope is named, never granted), told apart
    by ``table.own_row``, never read as an entity nor reported by ``check``."""
    with Session(desk) as s:
        s.save(Card(tenant_id="t1", card_id="c4"))
    note = ext.keep_note(desk, "n1", "hello")
    kinds = desk.model()["table"]["rows"]
    assert [k["type"] for k in kinds] == ["dynaorm:receipt", "dynaorm:note"]
    assert kinds[1]["ttl_seconds"] == 86400 and kinds[1]["scoped"] is False
    [said] = iam.unbound_rows(desk.model(), "write", "tenant_id")
    assert "'dynaorm:note#{name}'" in said and "keep_note" in said
    assert ext.notes(desk, ddb.scan_raw()) == [note]
    assert [c.card_id for c in Session(desk).scan(Card)] == ["c4"]
    report = run_local(check(desk))
    assert report.problems == [] and report.unclaimed == {}


def test_an_object_s_stored_item_both_ways() -> None:
    obj = Card(tenant_id="t1", card_id="c5", name="x", n=3)
    item = ext.stored(obj)
    assert item["pk"] == {"S": "TENANT#t1"} and item["n"] == {"N": "3"}
    assert ext.loaded(Card, item) == obj


# --- hostile operations, row kinds and plugins at the door
# (moved from system/test_red_team_80.py:
# The red team of issue 80 ("one public door", contract 24): what a hostile operation,
# row kind, key or plugin does to the door. ``Session.run`` / ``AsyncSession.run`` given
# operations that misbehave (an async step in the sync runner, an operation already run or
# re-entered, one that fails halfway, one that will not close when cancelled); row kinds
# and type names that claim dynaorm's namespace or another kind's; an old layout's key in
# that namespace. None of it
# depends on the engine: on moto; each test drives both kinds of session itself.)

door = Table("red-door", sk=None)
Op = Generator[Any, Any, Any]


class Note(Entity):
    class Meta:
        table = door
        pk = "NOTE#{note_id}"

    note_id: str
    text: str = ""


@pytest.fixture
def ddb_door(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, door)


def _stored() -> list[str]:
    return sorted(n.note_id for n in Session(door).scan(Note).all())


def save_one(s: Any, note_id: str) -> Op:
    s.save(Note(note_id=note_id))
    return (yield s.commit)


def test_the_sync_runner_refuses_an_async_step_before_it_sends(ddb_door: TestBackend) -> None:
    """A step of an AsyncSession in ``Session.run``: refused with the TypeError its
    docstring names, and nothing of the step runs (the commit was sent, and applied,
    while the caller was told the step was refused; with no loop running, the caller
    got a RuntimeError of asyncio)."""

    async def in_a_loop() -> None:
        a = AsyncSession(door)
        with pytest.raises(TypeError, match=r"AsyncSession\.run"):
            Session(door).run(save_one(a, "in-loop"))
        a.rollback()

    asyncio.run(in_a_loop())
    a = AsyncSession(door)
    with pytest.raises(TypeError, match=r"AsyncSession\.run"):
        Session(door).run(save_one(a, "no-loop"))
    a.rollback()
    assert _stored() == []


def test_run_refuses_an_operation_already_run_started_or_not_one(ddb_door: TestBackend) -> None:
    """An operation runs once, from its start: one run to its end, or one a step of its
    own runs again, is refused (it answered None, a result it never returned); what is
    no generator is a TypeError, not an AttributeError of ``send``."""
    s = Session(door)
    op = save_one(s, "once")
    assert s.run(op) is not None
    with pytest.raises(ValueError, match="already"):
        s.run(op)

    def reentered(s: Any, me: list[Op]) -> Op:
        return (yield partial(s.run, me[0]))

    holder: list[Op] = []
    holder.append(reentered(s, holder))
    with pytest.raises(ValueError, match="already"):
        s.run(holder[0])
    coroutine = asyncio.sleep(0)
    for bad in (None, [1], lambda: 1, coroutine):
        with pytest.raises(TypeError, match="generator"):
            s.run(bad)  # type: ignore[arg-type]
    coroutine.close()

    async def go() -> None:
        a = AsyncSession(door)
        done = save_one(a, "once-async")
        await a.run(done)
        with pytest.raises(ValueError, match="already"):
            await a.run(done)

    asyncio.run(go())
    assert _stored() == ["once", "once-async"]


def half(s: Any, commit_first: bool) -> Op:
    if commit_first:
        s.save(Note(note_id="committed"))
        yield s.commit
    s.save(Note(note_id="half"))
    yield partial(s.get, Note, nope="x")  # raises KeyTemplateError
    s.save(Note(note_id="rest"))
    yield s.commit


@pytest.mark.parametrize("commit_first", [False, True])
def test_a_failed_run_leaves_none_of_its_writes_staged(ddb_door: TestBackend,
                                                       commit_first: bool) -> None:
    """An operation that fails halfway stages nothing a later commit writes: what was
    staged before the run stays staged (unless the operation committed it); the half it
    staged after its last commit is dropped (it was written by the session's next commit,
    or by ``with Session(...)`` when the caller handled the error)."""
    with Session(door) as s:
        s.save(Note(note_id="before"))
        with pytest.raises(KeyTemplateError):
            s.run(half(s, commit_first))
    assert _stored() == (["before", "committed"] if commit_first else ["before"])

    async def go() -> None:
        async with AsyncSession(door) as a:
            a.save(Note(note_id="before-async"))
            with pytest.raises(KeyTemplateError):
                await a.run(half(a, False))

    asyncio.run(go())
    assert "half" not in _stored() and "before-async" in _stored()


def test_cancelling_a_run_stays_a_cancellation(ddb_door: TestBackend) -> None:
    """A run cancelled while an operation that yields again as it closes is at a step:
    the task is cancelled (it raised the operation's RuntimeError instead, so
    ``asyncio``'s cancellation, a timeout, was lost), and the operation's commit in its
    ``finally`` never runs."""

    def stubborn(a: AsyncSession) -> Op:
        try:
            yield partial(asyncio.sleep, 10)
        finally:
            a.save(Note(note_id="stubborn"))
            yield a.commit

    async def go() -> None:
        a = AsyncSession(door)
        task = asyncio.ensure_future(a.run(stubborn(a)))
        await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(a.run(stubborn(a)), 0.01)

    asyncio.run(go())
    assert _stored() == []


def test_a_row_kind_claims_no_type_dynaorm_or_another_kind_keeps() -> None:
    """``Table.keeps`` refuses a kind under the receipts' or the unique guards' type (its
    rows would be taken for theirs: ``row_kinds`` listed the receipts twice), a kind with
    no name after ``dynaorm:``, and another kind under a type already kept (it replaced
    the first silently: two packages' rows under one type); the same kind again is
    kept once."""
    table = Table("red-kinds")
    for taken in ("dynaorm:receipt", "dynaorm:unique", "dynaorm:"):
        with pytest.raises(DynaormError, match="dynaorm"):
            table.keeps(RowKind("mine", taken))
    table.keeps(ext.NOTES)
    table.keeps(ext.NOTES)
    with pytest.raises(DynaormError, match="dynaorm:note"):
        table.keeps(RowKind("another package's note", "dynaorm:note", scoped=True))
    assert [k.type for k in table.row_kinds] == ["dynaorm:receipt", "dynaorm:note"]
    assert table.row_kinds[1] == ext.NOTES


def test_an_entity_type_name_in_dynaorm_namespace_is_refused() -> None:
    """An entity (or its previous layout) named ``dynaorm:unique`` had its items taken for
    unique guards by ``check`` (an orphan guard to delete) and inference; ``dynaorm:note``
    for a row kind's."""
    table = Table("red-names")

    for name in ("dynaorm:unique", "dynaorm:note"):
        for meta in ({"type_name": name}, {"previous": Previous(type_name=name)}):
            with pytest.raises(DynaormError, match="reserved"):
                type("Named", (Entity,), {
                    "__module__": __name__, "__qualname__": "Named",
                    "__annotations__": {"item_id": str},
                    "Meta": type("Meta", (), {"__qualname__": "Named.Meta", "table": table,
                                              "pk": "N#{item_id}", "sk": "N", **meta})})


bare = Table("red-bare", sk=None, type_attribute=None)


class Doc(Entity):
    class Meta:
        table = bare
        pk = "DOC#{kind}#{doc_id}"
        previous = Previous(pk="{kind}#{doc_id}")

    kind: str
    doc_id: str
    text: str = ""


@pytest.fixture
def bare_db(backend: str | None) -> Iterator[TestBackend]:
    yield from on_engine(backend, bare)


def test_an_old_layout_key_in_dynaorm_namespace_is_no_entity_row(bare_db: TestBackend) -> None:
    """An entity whose previous layout's key renders ``dynaorm:note#n1`` (its current key
    does not): a get returned a package's own row as the entity's, and a save moved it
    (deleted it): an own row is never an entity's, in any layout."""
    note = ext.keep_note(bare, "n1", "hello")
    s = Session(bare)
    assert s.get(Doc, kind="dynaorm:note", doc_id="n1") is None
    try:
        s.save(Doc(kind="dynaorm:note", doc_id="n1", text="mine"))
        s.commit()
    except DynaormError:
        s.rollback()  # (refused: the old key is not vacant) or saved beside it
    assert note in bare_db.scan_raw()
    assert ext.notes(bare, bare_db.scan_raw()) == [note]


#: a hostile package: it registers dynaorm's own names (``iam``, ``json``, ``iceberg``,
#: ``opentelemetry``), the built-in ``parquet``, and a tracer that raises when made
HOSTILE = '''
def add_iam(sub):
    p = sub.add_parser("iam", help="not dynaorm's iam")
    p.set_defaults(run=lambda args, out: 99)


def to_format(model):
    return "hijacked", []


class Format:
    def add_arguments(self, parser):
        parser.add_argument("--hijacked")


FORMAT = Format()


def boom(client):
    raise RuntimeError("this tracer is broken")
'''
HOSTILE_POINTS = {
    "dynaorm.commands": {"iam": "hostile_plugin:add_iam"},
    "dynaorm.formats": {"json": "hostile_plugin"},
    "dynaorm.export_formats": {"iceberg": "hostile_plugin:FORMAT",
                               "parquet": "hostile_plugin:FORMAT"},
    "dynaorm.tracers": {"opentelemetry": "hostile_plugin:boom", "boom": "hostile_plugin:boom"},
}


def test_a_package_takes_none_of_dynaorms_names_and_a_broken_tracer_breaks_no_client(
        tmp_path: Path) -> None:
    """A package first on ``sys.path`` registering ``iam``, ``json``, ``iceberg`` or
    ``opentelemetry`` replaced dynaorm's own (``dynaorm iam``'s policy, ``--format json``,
    the tracer) without a word; one registering ``parquet`` added its options to
    ``dynaorm export``'s; a tracer that raises when made broke every ``Client()``. Each
    is left out with a RuntimeWarning naming it; dynaorm's own are found."""
    import tomllib
    from importlib.metadata import distribution as installed_distribution

    from dynaorm import Client, formats
    from dynaorm.plugins import EXPORT_FORMATS, GROUPS, found
    from dynaorm.testing import moto_backend
    from tests.support.distributions import distribution, installed

    own = {g: {p.name: p.value for p in installed_distribution("dynaorm").entry_points
               if p.group == g} for g in GROUPS}
    assert own["dynaorm.commands"]["iam"] == tomllib.loads(
        (Path(__file__).parents[2] / "pyproject.toml").read_text())["project"][
        "entry-points"]["dynaorm.commands"]["iam"]
    root = distribution(tmp_path / "site", "hostile-plugin", HOSTILE_POINTS,
                        {"hostile_plugin": HOSTILE})
    try:
        with installed(root), warnings.catch_warnings(record=True) as said:
            warnings.simplefilter("always")
            for group, points in HOSTILE_POINTS.items():
                for name in points:
                    if name in own[group]:
                        assert found(group)[name].value == own[group][name]
            assert "parquet" not in found(EXPORT_FORMATS)
            text, _ = formats.export(door.model(), "json")
            assert text != "hijacked"
            client = Client(region="us-east-1")
            with moto_backend():
                table = Table(f"red-tracer-{id(client)}", sk=None, client=client)
                table.create()  # (sent through the client's policy: it works)
            text = "\n".join(str(w.message) for w in said)
            for name in ("'iam'", "'json'", "'iceberg'", "'parquet'", "'boom'"):
                assert name in text, name
    finally:
        sys.modules.pop("hostile_plugin", None)


FLAKY_TRACER = '''
from dynaorm import Hook


class Flaky(Hook):
    def active(self):
        raise RuntimeError("this tracer's switch is broken")

    def on_start(self, phase):
        return None

    def on_end(self, phase, token):
        return None


def flaky(client):
    return Flaky()
'''


def test_a_tracer_whose_switch_raises_breaks_no_operation(tmp_path: Path) -> None:
    from dynaorm import Client
    from dynaorm.testing import moto_backend
    from tests.support.distributions import distribution, installed

    root = distribution(tmp_path / "site", "flaky-tracer",
                        {"dynaorm.tracers": {"flaky": "flaky_tracer:flaky"}},
                        {"flaky_tracer": FLAKY_TRACER})
    try:
        with installed(root):
            client = Client(region="us-east-1")
            with moto_backend():
                table = Table(f"red-flaky-{id(client)}", sk=None, client=client)
                with pytest.warns(RuntimeWarning, match="'flaky' is left out: its active"):
                    table.create()
                with warnings.catch_warnings():
                    warnings.simplefilter("error")  # (said once: left out of this client)
                    assert table.exists()
                assert "flaky" not in client._named
    finally:
        sys.modules.pop("flaky_tracer", None)


class _Switch(Hook):
    """A tracer whose ``active()`` raises on the asks ``raises`` names (counted from 1),
    counting the operations it traced."""

    def __init__(self, raises: Any = lambda n: True) -> None:
        self.asked, self.raises, self.traced = 0, raises, 0

    def active(self) -> bool:
        self.asked += 1
        if self.raises(self.asked):
            raise RuntimeError("this tracer's switch is broken")
        return True

    def on_start(self, phase: Any) -> None:
        self.traced += 1


@dataclass(init=False)
class _Unhashable(_Switch):
    """A tracer a dataclass makes unhashable (its ``__eq__``, no ``__hash__``)."""


def test_a_raising_switch_left_out_is_said_by_client_tracing() -> None:
    """Red team: the hook a user gives ``client.tracing`` raising in ``active()`` is left
    out as one found is; ``client.tracing`` then said no tracer was registered, "is
    dynaorm installed?" (untrue), and ``Table.connect`` of a table given the client raised
    ``ValueError`` (it paired the tracers by position, one now missing). It says the
    tracer was left out and why; connect works; a hook assigned again traces."""
    from dynaorm import Client
    from dynaorm.testing import moto_backend

    client = Client(region="us-east-1")
    with moto_backend():
        table = Table(f"red-switch-{id(client)}", sk=None, client=client)
        client.tracing = _Switch()
        with pytest.warns(RuntimeWarning, match="'opentelemetry' is left out: its active"):
            table.create()
        with pytest.raises(DynaormError, match="left out of this client: its active"):
            client.tracing  # noqa: B018
        Table(f"red-switch-2-{id(client)}", sk=None, client=client).connect(
            "http://127.0.0.1:9")
        client.tracing = working = _Switch(lambda n: False)
        assert table.exists() and working.traced > 0


@pytest.mark.parametrize("kind", ["once", "unhashable"])
def test_a_switch_that_raises_once_is_left_out_and_one_that_cannot_be_hashed_traces(
        kind: str) -> None:
    """Red team: every exception of the tracers' check was caught, then each ``active()``
    asked again, and only those that raised again left out: one that raised once was
    kept, unsaid, that operation untraced (the guide says left out the first time); a
    tracer that cannot be hashed (a dataclass) raised ``TypeError`` in the policies'
    cache, never again, and never traced, unsaid. The one that raised is left out; the
    cache keys tracers by identity."""
    from dynaorm import Client
    from dynaorm.testing import moto_backend

    client = Client(region="us-east-1")
    with moto_backend():
        table = Table(f"red-switch-{kind}-{id(client)}", sk=None, client=client)
        if kind == "once":
            client.tracing = _Switch(lambda n: n == 1)
            with pytest.warns(RuntimeWarning, match="'opentelemetry' is left out"):
                table.create()
            assert table.exists()
            with pytest.raises(DynaormError, match="left out"):
                client.tracing  # noqa: B018
            return
        client.tracing = unhashable = _Unhashable(lambda n: False)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            table.create()
            assert table.exists()
        assert unhashable.traced > 0


def test_a_broken_model_format_breaks_no_other_format(tmp_path: Path) -> None:
    """A package's model format that cannot be loaded: ``formats.READABLE`` (which
    ``dynaorm model --import FILE`` asks whatever the format) loaded every format and
    raised its ImportError, so no file of any format could be imported. It is left out
    with a RuntimeWarning; dynaorm's own formats read as before."""
    from dynaorm import formats
    from tests.support.distributions import distribution, installed

    root = distribution(tmp_path / "site", "broken-format",
                        {"dynaorm.formats": {"broken": "broken_format_missing"}})
    with installed(root), pytest.warns(RuntimeWarning, match="'broken'"):
        readable = formats.READABLE
    assert "json" in readable and "broken" not in readable
