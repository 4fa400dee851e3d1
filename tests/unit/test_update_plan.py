"""Exact requests of ``s.update()`` plans (pure: no backend)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from dynaorm import DynaormError, F, InvalidValueError
from dynaorm.write.render import compile_commit
from dynaorm.write.updates import StagedCheck, StagedUpdate
from tests.support.models import Note
from tests.support.update_models import Counter, Doc, Needy, Player

T = "dynaorm-tests"
CKEY = {"pk": {"S": "CTR#c1"}, "sk": {"S": "CTR"}}


def _plan(*updates: Any) -> Any:
    entries = [(u, None)
               for u in updates]
    plan, _ = compile_commit(entries)
    return plan


def _single(u: Any) -> tuple[str, dict[str, Any]]:
    name, req = _plan(u).single_request()
    return str(name), req


def _counter(upsert: bool = False) -> StagedUpdate[Counter]:
    return StagedUpdate(Counter, {"name": "c1"}, None, upsert)


def test_set_and_add_by_key() -> None:
    name, req = _single(_counter().set(status="open").add(count=2))
    assert name == "UpdateItem"
    assert req == {
        "TableName": T, "Key": CKEY,
        "UpdateExpression": "SET #n0 = :v0 ADD #n1 :v1",
        "ConditionExpression": "attribute_exists(#n2)",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        "ReturnValues": "ALL_NEW",
        "ExpressionAttributeNames": {"#n0": "status", "#n1": "count", "#n2": "pk"},
        "ExpressionAttributeValues": {":v0": {"S": "open"}, ":v1": {"N": "2"}},
    }


def test_every_clause_in_call_order_within_its_keyword() -> None:
    _, req = _single(_counter().append(log=["a"]).set_default(label="x")
                        .discard(tags={"t"}).remove("score"))
    assert req["UpdateExpression"] == (
        "SET #n0 = list_append(if_not_exists(#n0, :v1), :v0), #n1 = if_not_exists(#n1, :v2) "
        "REMOVE #n3 DELETE #n2 :v3")  # placeholders in call order, clauses in keyword order
    assert req["ExpressionAttributeNames"] == {"#n0": "log", "#n1": "label", "#n2": "tags",
                                               "#n3": "score", "#n4": "pk"}
    assert req["ExpressionAttributeValues"] == {
        ":v0": {"L": [{"S": "a"}]}, ":v1": {"L": []}, ":v2": {"S": "x"}, ":v3": {"SS": ["t"]}}
    assert req["ConditionExpression"] == "attribute_exists(#n4)"


def test_repeated_actions_accumulate_or_replace() -> None:
    _, req = _single(_counter().add(count=1).add(count=2).set(status="a").set(status="b")
                     .append(log=["x"]).append(log=["y"]))
    values = req["ExpressionAttributeValues"]
    assert req["UpdateExpression"] == (
        "SET #n1 = :v1, #n2 = list_append(if_not_exists(#n2, :v3), :v2) ADD #n0 :v0")
    assert (values[":v0"], values[":v1"], values[":v2"]) == (
        {"N": "3"}, {"S": "b"}, {"L": [{"S": "x"}, {"S": "y"}]})


def test_prepend_and_set_none_removes_an_optional_field() -> None:
    _, req = _single(_counter().prepend(log=["first"]).set(label=None))
    assert req["UpdateExpression"] == (
        "SET #n0 = list_append(:v0, if_not_exists(#n0, :v1)) REMOVE #n1")
    assert req["ExpressionAttributeValues"] == {":v0": {"L": [{"S": "first"}]},
                                                ":v1": {"L": []}}


def test_where_is_anded_after_the_existence_condition() -> None:
    _, req = _single(_counter().add(count=1).where(F("count") < 50).where(F("status") == "open"))
    assert req["ConditionExpression"] == (
        "(attribute_exists(#n1)) AND ((#n0 < :v1) AND (#n2 = :v2))")
    assert req["ExpressionAttributeValues"] == {":v0": {"N": "1"}, ":v1": {"N": "50"},
                                                ":v2": {"S": "open"}}


def test_upsert_sets_key_fields_and_type_and_has_no_existence_condition() -> None:
    _, req = _single(_counter(upsert=True).add(count=3))
    assert req == {
        "TableName": T, "Key": CKEY,
        "UpdateExpression": "SET #n1 = :v1, #n2 = :v2 ADD #n0 :v0",
        "ReturnValues": "ALL_NEW",
        "ExpressionAttributeNames": {"#n0": "count", "#n1": "name", "#n2": "_type"},
        "ExpressionAttributeValues": {":v0": {"N": "3"}, ":v1": {"S": "c1"},
                                      ":v2": {"S": "Counter"}},
    }


def test_upsert_with_where_has_only_the_callers_condition() -> None:
    _, req = _single(_counter(upsert=True).add(count=1).where(F("count") < 5))
    assert req["ConditionExpression"] == "#n0 < :v3"
    assert "attribute_exists" not in req["ConditionExpression"]


def test_in_a_transaction_updates_keep_session_order_and_no_return_values() -> None:
    a = _counter().add(count=1)
    b = StagedCheck(Note, {"pk": "NOTE#n1", "sk": "NOTE"}, F("body") == "ok")
    c = StagedUpdate(Counter, {"name": "c2"}, None, False).set(status="x")
    req = _plan(a, b, c).transaction_request("tok")
    assert [list(i) for i in req["TransactItems"]] == [["Update"], ["ConditionCheck"],
                                                       ["Update"]]
    assert "ReturnValues" not in req["TransactItems"][0]["Update"]
    assert req["TransactItems"][1]["ConditionCheck"] == {
        "TableName": T, "Key": {"pk": {"S": "NOTE#n1"}, "sk": {"S": "NOTE"}},
        "ConditionExpression": "#n0 = :v0",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        "ExpressionAttributeNames": {"#n0": "body"},
        "ExpressionAttributeValues": {":v0": {"S": "ok"}},
    }
    assert req["TransactItems"][2]["Update"]["Key"]["pk"] == {"S": "CTR#c2"}


def test_values_go_through_the_field_types() -> None:
    _, req = _single(_counter().add(score=1).set(count="7"))  # pydantic's lax coercion
    assert req["ExpressionAttributeValues"][":v0"] == {"N": "1.0"}
    assert req["ExpressionAttributeValues"][":v1"] == {"N": "7"}
    with pytest.raises(ValidationError):
        _counter().set(count="seven")


@pytest.mark.parametrize(("call", "match"), [
    (lambda u: u.set(nope=1), "no such field"),
    (lambda u: u.add(status="x"), "does not fit"),
    (lambda u: u.append(count=[1]), "does not fit"),
    (lambda u: u.discard(log=["a"]), "does not fit"),
    (lambda u: u.add(tags=set()), "non-empty"),
    (lambda u: u.set(name="c9"), "primary-key template"),
    (lambda u: u.set_default(label=None), "needs a value"),
    (lambda u: u.set(count=1).add(count=1), "already has"),
    (lambda u: u.remove("nope"), "no such field"),
])
def test_bad_updates_raise_before_anything_is_planned(call: Any, match: str) -> None:
    with pytest.raises(InvalidValueError, match=match):
        call(_counter())


def test_required_fields_cannot_be_removed_and_upserts_must_give_them() -> None:
    with pytest.raises(InvalidValueError, match="required"):
        StagedUpdate(Needy, {"nid": "n"}, None, False).remove("owner")
    with pytest.raises(InvalidValueError, match=r"missing \['owner'\]"):
        _plan(StagedUpdate(Needy, {"nid": "n"}, None, True).add(hits=1))
    _plan(StagedUpdate(Needy, {"nid": "n"}, None, True).add(hits=1).set_default(owner="o"))
    _plan(StagedUpdate(Needy, {"nid": "n"}, None, False).add(hits=1))  # not an upsert


def test_rules_decide_whether_an_update_reads_first() -> None:
    assert not _counter().add(count=1)._needs_read
    assert StagedUpdate(Player, {"player_id": "p"}, None, False).set(board="b")._needs_read
    assert StagedUpdate(Player, {"player_id": "p"}, None, False).add(score=1)._needs_read
    assert StagedUpdate(Player, {"player_id": "p"}, None, False).set(handle="h")._needs_read
    assert StagedUpdate(Doc, {"doc_id": "d"}, None, False).add(views=1)._needs_read


def test_the_result_is_unknown_before_the_commit() -> None:
    with pytest.raises(DynaormError, match="no result"):
        _ = _counter().add(count=1).result
