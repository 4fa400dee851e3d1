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
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from dynaorm import (
    AsyncSession,
    Entity,
    KeyTemplateError,
    ScopeError,
    Session,
    Table,
    explain,
    keys,
)
from dynaorm.formats import iam
from dynaorm.jobs import check, run_local
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.support import extension as ext

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
    with use_tables(desk, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        yield tb


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
