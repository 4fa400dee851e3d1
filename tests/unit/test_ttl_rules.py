"""TTL with rules, as pure write plans (contract 18, amends 14): a guard carries its owner's
TTL and the claim condition lets an expired guard go; a TTL change rewrites the guards it
keeps (one Put each) and nothing else; version rows keep the TTL aside. No I/O; the
behaviour on every engine is ``integration/test_ttl_rules.py``."""

from __future__ import annotations

import time
from typing import Any

from dynaorm import Entity, Table
from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.values.expressions import Placeholders
from dynaorm.values.records import Put, Role, Update
from dynaorm.write.render import compile_commit
from dynaorm.write.save import SaveEntry

plans = Table("ttl-plans", ttl="expires")
T = "ttl-plans"
LATER = int(time.time()) + 86_400


class Holder(Entity):
    class Meta:
        table = plans
        pk = "H#{holder_id}"
        sk = "H"
        unique = ("handle",)

    holder_id: str
    handle: str
    note: str = ""
    expires: int | None = None


class Page(Entity):
    class Meta:
        table = plans
        pk = "P#{page_id}"
        sk = "P"
        versioned = True

    page_id: str
    body: str
    expires: int | None = None


def _persisted(obj: Any, version: int | None = None) -> Any:
    return type(obj)._from_item(encode_entity(obj, spec_of(type(obj)), version))


def _ops(*objs: Any) -> list[Any]:
    plan, _ = compile_commit([(SaveEntry(o), o._dynaorm_state) for o in objs])
    return list(plan.ops)


def test_a_claim_carries_the_ttl_and_lets_an_expired_guard_go() -> None:
    row, guard = _ops(Holder(holder_id="h1", handle="ada", expires=LATER))
    assert isinstance(guard, Put) and guard.origin.role is Role.GUARD
    assert guard.item["expires"] == {"N": str(LATER)}
    request = compile_commit([(SaveEntry(Holder(holder_id="h1", handle="ada")), None)]
                             )[0].transaction_request("tok")
    put = request["TransactItems"][1]["Put"]
    assert "expires" not in put["Item"]  # an owner without a TTL: a guard without one
    names = put["ExpressionAttributeNames"]
    assert put["ConditionExpression"] == "(attribute_not_exists(#n0)) OR (#n1 <= :v0)"
    assert (names["#n0"], names["#n1"]) == ("pk", "expires")
    assert abs(int(put["ExpressionAttributeValues"][":v0"]["N"]) - time.time()) < 5
    assert row.condition is not None  # the row's insert: the same cut-off


def test_a_guard_claim_without_a_table_ttl_is_attribute_not_exists() -> None:
    from dynaorm.schema.model import described
    from dynaorm.schema.rules.unique import Uniqueness
    from tests.support.models import User
    unique = spec_of(User).rules.get(Uniqueness)
    assert unique is not None
    change = described(spec_of(User), "insert")
    claims = [op for op in unique.rows(change).after if isinstance(op, Put)]
    assert claims and all(op.condition is not None and op.condition.render(Placeholders())
                          == "attribute_not_exists(#n0)" for op in claims)


def test_a_ttl_change_rewrites_the_guard_and_nothing_else_does() -> None:
    h = _persisted(Holder(holder_id="h1", handle="ada", expires=LATER))
    h.note = "hello"
    assert [type(op) for op in _ops(h)] == [Update]  # the TTL is unchanged: the row only
    h = _persisted(Holder(holder_id="h1", handle="ada", expires=LATER))
    h.expires = LATER + 60
    row, guard = _ops(h)
    assert isinstance(row, Update) and isinstance(guard, Put)
    assert guard.item["expires"] == {"N": str(LATER + 60)}
    ph = Placeholders()
    assert guard.condition is not None
    guard.condition.render(ph)  # conditioned on still owning it
    assert {"owner_pk", "owner_sk"} <= set(ph.apply({})["ExpressionAttributeNames"].values())
    h = _persisted(Holder(holder_id="h1", handle="ada", expires=LATER))
    h.expires = None
    _, guard = _ops(h)
    assert "expires" not in guard.item


def test_version_rows_keep_the_ttl_aside() -> None:
    row, latest = _ops(Page(page_id="p1", body="one", expires=LATER))
    assert row.origin.role is Role.VERSION and latest.origin.role is Role.LATEST
    assert "expires" not in row.item and row.item["_version_ttl"] == {"N": str(LATER)}
    assert latest.item["expires"] == {"N": str(LATER)}
    decoded = Page._from_item(row.item)
    assert decoded.expires == LATER
