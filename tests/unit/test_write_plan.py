"""Pure write plans (contract sections 4 and 5): the exact request dicts a commit renders,
action order, conditions, and placeholders. No I/O."""

from __future__ import annotations

import json
from typing import Any

import pytest

from dynaorm import Entity, ItemTooLargeError, TransactionTooLargeError, Unique
from dynaorm.schema.entity import encode_entity, spec_of
from dynaorm.values.records import Delete, Put, Role, Update
from dynaorm.write.delete import DeleteEntry
from dynaorm.write.render import WritePlan, compile_commit
from dynaorm.write.save import SaveEntry
from tests.support.models import Audit, Note, User, app

T = "dynaorm-tests"
HOSTILE = "a) OR (b"
HOSTILE2 = "#x :v"


class PlanMember(Entity):
    """Unique values scoped by an organisation, with a prefix."""

    class Meta:
        table = app
        pk = "MEMBER#{member_id}"
        sk = "MEMBER"
        unique = (Unique("handle", scope="ORG#{org}"), Unique("code", prefix="member_code"))

    member_id: str
    org: str
    handle: str
    code: str | None = None


def _persisted(obj: Any, version: int | None = None) -> Any:
    """``obj`` as if it had been loaded from the table (no I/O)."""
    return type(obj)._from_item(encode_entity(obj, spec_of(type(obj)), version))


def _request(*entries: SaveEntry | DeleteEntry) -> dict[str, Any]:
    plan, _ = compile_commit([(e, e.obj._dynaorm_state) for e in entries])
    return plan.transaction_request("tok-1")


def _single(*entries: SaveEntry | DeleteEntry) -> tuple[str, dict[str, Any]]:
    plan, _ = compile_commit([(e, e.obj._dynaorm_state) for e in entries])
    return plan.single_request()


def _user_item(user_id: str, username: str, email: str, org: str = "acme",
               full_name: str = "") -> dict[str, Any]:
    return {
        "user_id": {"S": user_id}, "org_id": {"S": org}, "username": {"S": username},
        "email": {"S": email}, "full_name": {"S": full_name},
        "pk": {"S": f"USER#{user_id}"}, "sk": {"S": "PROFILE"},
        "gsi1pk": {"S": f"ORG#{org}"}, "gsi1sk": {"S": f"USER#{username}"},
        "_type": {"S": "User"},
    }


def _guard(key: str, owner_pk: str, field: str, owner_sk: str = "PROFILE",
           owner_type: str = "User") -> dict[str, Any]:
    return {"pk": {"S": key}, "sk": {"S": key}, "_type": {"S": "dynaorm:unique"},
            "owner_pk": {"S": owner_pk}, "owner_sk": {"S": owner_sk},
            "owner_type": {"S": owner_type}, "unique_field": {"S": field}}


ABSENT = {"ConditionExpression": "attribute_not_exists(#n0)",
          "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
          "ExpressionAttributeNames": {"#n0": "pk"}}


def _owned_by(owner_pk: str, owner_sk: str = "PROFILE") -> dict[str, Any]:
    """A guard release: still the owner's, or no guard at all (an owner stored before
    its rule was declared has none: no conflict, 0.4)."""
    return {"ConditionExpression": "((#n0 = :v0) AND (#n1 = :v1)) OR "
                                   "(attribute_not_exists(#n2))",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            "ExpressionAttributeNames": {"#n0": "owner_pk", "#n1": "owner_sk", "#n2": "pk"},
            "ExpressionAttributeValues": {":v0": {"S": owner_pk}, ":v1": {"S": owner_sk}}}


def _gkey(key: str) -> dict[str, Any]:
    return {"pk": {"S": key}, "sk": {"S": key}}


USER_KEY = {"pk": {"S": "USER#u1"}, "sk": {"S": "PROFILE"}}


# -- unique guards -------------------------------------------------------------------------
def test_insert_user_row_then_two_guards() -> None:
    u = User(user_id="u1", username="alice", email="Alice@X.com")
    assert _request(SaveEntry(u)) == {
        "ClientRequestToken": "tok-1",
        "TransactItems": [
            {"Put": {"TableName": T, "Item": _user_item("u1", "alice", "Alice@X.com"), **ABSENT}},
            {"Put": {"TableName": T, "Item": _guard("username#alice", "USER#u1", "username"),
                     **ABSENT}},
            {"Put": {"TableName": T, "Item": _guard("email#alice@x.com", "USER#u1", "email"),
                     **ABSENT}},
        ],
    }


def test_email_change_updates_owner_swaps_guard() -> None:
    u = _persisted(User(user_id="u1", username="alice", email="Alice@X.com"))
    u.email = "New@X.com"
    items = _request(SaveEntry(u))["TransactItems"]
    assert items == [
        {"Update": {
            "TableName": T, "Key": USER_KEY,
            "UpdateExpression": "SET #n0 = :v0",
            "ConditionExpression": "(attribute_exists(#n1)) AND (#n0 = :v1) AND (#n2 = :v2)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            "ExpressionAttributeNames": {"#n0": "email", "#n1": "pk", "#n2": "username"},
            "ExpressionAttributeValues": {":v0": {"S": "New@X.com"}, ":v1": {"S": "Alice@X.com"},
                                          ":v2": {"S": "alice"}},
        }},
        {"Delete": {"TableName": T, "Key": _gkey("email#alice@x.com"),
                    **_owned_by("USER#u1")}},
        {"Put": {"TableName": T, "Item": _guard("email#new@x.com", "USER#u1", "email"),
                 **ABSENT}},
    ]


def test_case_only_email_change_keeps_guard_but_conditions_on_old_value() -> None:
    u = _persisted(User(user_id="u1", username="alice", email="Alice@X.com"))
    u.email = "alice@x.com"  # same normalized value: same guard
    name, req = _single(SaveEntry(u))
    assert name == "UpdateItem"
    assert req["UpdateExpression"] == "SET #n0 = :v0"
    assert req["ExpressionAttributeValues"][":v0"] == {"S": "alice@x.com"}
    # the owner update is conditioned on the email it read, so a concurrent change of the
    # email (which moved the guard) cannot be overwritten silently
    assert {"S": "Alice@X.com"} in req["ExpressionAttributeValues"].values()


def test_username_change_rewrites_derived_index_key() -> None:
    u = _persisted(User(user_id="u1", username="alice", email="a@x.com"))
    u.username = "bob"
    items = _request(SaveEntry(u))["TransactItems"]
    update = items[0]["Update"]
    names = update["ExpressionAttributeNames"]
    values = update["ExpressionAttributeValues"]
    assert update["UpdateExpression"] == "SET #n0 = :v0, #n1 = :v1"
    assert (names["#n0"], values[":v0"]) == ("username", {"S": "bob"})
    assert (names["#n1"], values[":v1"]) == ("gsi1sk", {"S": "USER#bob"})
    assert [list(i) for i in items] == [["Update"], ["Delete"], ["Put"]]
    assert items[1]["Delete"]["Key"] == _gkey("username#alice")
    assert items[2]["Put"]["Item"] == _guard("username#bob", "USER#u1", "username")


def test_unchanged_unique_values_leave_guards_untouched() -> None:
    u = _persisted(User(user_id="u1", username="alice", email="a@x.com"))
    u.full_name = "Alice A."
    name, req = _single(SaveEntry(u))
    assert name == "UpdateItem"
    assert req == {
        "TableName": T, "Key": USER_KEY,
        "UpdateExpression": "SET #n0 = :v0",
        # the guards' values and the written attribute's old value (no lost updates),
        # each as stored when read, in the stored item's order
        "ConditionExpression": "(attribute_exists(#n1)) AND (#n2 = :v1) AND (#n0 = :v2) "
                               "AND (#n3 = :v3)",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        "ExpressionAttributeNames": {"#n0": "full_name", "#n1": "pk", "#n2": "email",
                                     "#n3": "username"},
        "ExpressionAttributeValues": {":v0": {"S": "Alice A."}, ":v1": {"S": "a@x.com"},
                                      ":v2": {"S": ""}, ":v3": {"S": "alice"}},
    }


def test_no_change_plans_nothing() -> None:
    u = _persisted(User(user_id="u1", username="alice", email="a@x.com"))
    plan, _ = compile_commit([(SaveEntry(u), u._dynaorm_state)])
    assert plan.ops == ()


def test_delete_user_row_then_guards() -> None:
    u = _persisted(User(user_id="u1", username="alice", email="a@x.com"))
    assert _request(DeleteEntry(u))["TransactItems"] == [
        {"Delete": {
            "TableName": T, "Key": USER_KEY,
            # (the revision it was loaded with: none here, a row never stamped, so the
            # item as loaded, 0.10: another writer's change since is never deleted unseen)
            "ConditionExpression": "(attribute_exists(#n0)) AND (attribute_not_exists(#n1)) "
                                   "AND (#n2 = :v0) AND (#n3 = :v1) AND (#n4 = :v2) AND "
                                   "(#n5 = :v3) AND (#n6 = :v4) AND (#n7 = :v5) AND "
                                   "(#n8 = :v6) AND (#n9 = :v7)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
            "ExpressionAttributeNames": {"#n0": "pk", "#n1": "_rev", "#n2": "email",
                                         "#n3": "username", "#n4": "_type", "#n5": "full_name",
                                         "#n6": "gsi1pk", "#n7": "gsi1sk", "#n8": "org_id",
                                         "#n9": "user_id"},
            "ExpressionAttributeValues": {":v0": {"S": "a@x.com"}, ":v1": {"S": "alice"},
                                          ":v2": {"S": "User"}, ":v3": {"S": ""},
                                          ":v4": {"S": "ORG#acme"}, ":v5": {"S": "USER#alice"},
                                          ":v6": {"S": "acme"}, ":v7": {"S": "u1"}},
        }},
        {"Delete": {"TableName": T, "Key": _gkey("username#alice"), **_owned_by("USER#u1")}},
        {"Delete": {"TableName": T, "Key": _gkey("email#a@x.com"), **_owned_by("USER#u1")}},
    ]


def test_scope_and_prefix_guard_keys() -> None:
    m = PlanMember(member_id="m1", org="o1", handle="alice", code="C7")
    items = _request(SaveEntry(m))["TransactItems"]
    keys = [i["Put"]["Item"]["pk"]["S"] for i in items]
    assert keys == ["MEMBER#m1", "ORG#o1#handle#alice", "member_code#C7"]
    assert items[1]["Put"]["Item"] == _guard("ORG#o1#handle#alice", "MEMBER#m1", "handle",
                                             owner_sk="MEMBER", owner_type="PlanMember")


def test_none_unique_value_has_no_guard() -> None:
    m = PlanMember(member_id="m1", org="o1", handle="alice")  # code is None
    items = _request(SaveEntry(m))["TransactItems"]
    assert [i["Put"]["Item"]["pk"]["S"] for i in items] == ["MEMBER#m1", "ORG#o1#handle#alice"]


def test_scope_change_moves_guard() -> None:
    m = _persisted(PlanMember(member_id="m1", org="o1", handle="alice"))
    m.org = "o2"
    items = _request(SaveEntry(m))["TransactItems"]
    assert [next(iter(i)) for i in items] == ["Update", "Delete", "Put"]
    assert items[1]["Delete"]["Key"] == _gkey("ORG#o1#handle#alice")
    assert items[2]["Put"]["Item"]["pk"] == {"S": "ORG#o2#handle#alice"}


def test_swapping_unique_values_folds_guard_actions() -> None:
    a = _persisted(User(user_id="u1", username="alice", email="a@x.com"))
    b = _persisted(User(user_id="u2", username="bob", email="b@x.com"))
    a.email, b.email = "b@x.com", "a@x.com"
    items = _request(SaveEntry(a), SaveEntry(b))["TransactItems"]
    keys = [json.dumps(next(iter(i.values())).get("Key") or next(iter(i.values()))["Item"]["pk"])
            for i in items]
    assert len(keys) == len(set(keys)) == 4  # one action per item: two rows, two guards
    guards = {i["Put"]["Item"]["pk"]["S"]: i["Put"] for i in items if "Put" in i}
    # each guard changes hands, conditioned on its previous owner
    assert guards["email#a@x.com"]["Item"]["owner_pk"] == {"S": "USER#u2"}
    assert guards["email#a@x.com"]["ExpressionAttributeValues"][":v0"] == {"S": "USER#u1"}
    assert guards["email#b@x.com"]["Item"]["owner_pk"] == {"S": "USER#u1"}
    assert guards["email#b@x.com"]["ExpressionAttributeValues"][":v0"] == {"S": "USER#u2"}


def test_two_new_objects_claiming_one_value_are_refused_before_sending() -> None:
    from dynaorm import UniqueConstraintError

    a = User(user_id="u1", username="alice", email="same@x.com")
    b = User(user_id="u2", username="bob", email="SAME@x.com")
    with pytest.raises(UniqueConstraintError) as err:
        compile_commit([(SaveEntry(a), None), (SaveEntry(b), None)])
    assert err.value.field == "email"
    assert err.value.entity is User


# -- versioned -----------------------------------------------------------------------------
def _audit_item(sk: str, version: int, notes: str = "") -> dict[str, Any]:
    return {"equipment_id": {"S": "E1"}, "part": {"S": "P1"}, "auditor": {"S": ""},
            "notes": {"S": notes}, "version": {"N": str(version)},
            "pk": {"S": "EQUIPMENT#E1"}, "sk": {"S": sk}, "_type": {"S": "Audit"}}


def test_versioned_first_save() -> None:
    a = Audit(equipment_id="E1", part="P1")
    assert _request(SaveEntry(a))["TransactItems"] == [
        {"Put": {"TableName": T, "Item": _audit_item("v00000001_P1", 1), **ABSENT}},
        {"Put": {"TableName": T, "Item": _audit_item("v0_P1", 1), **ABSENT}},
    ]


def test_versioned_update() -> None:
    a = _persisted(Audit(equipment_id="E1", part="P1"), version=7)
    assert a.version == 7
    a.notes = HOSTILE
    assert _request(SaveEntry(a))["TransactItems"] == [
        {"Put": {"TableName": T, "Item": _audit_item("v00000008_P1", 8, HOSTILE), **ABSENT}},
        {"Put": {"TableName": T, "Item": _audit_item("v0_P1", 8, HOSTILE),
                 # at the version and the revision loaded (none: a row before 0.5), and
                 # (0.9: it is put whole) every other attribute as loaded, the ones a
                 # version row keeps aside absent as they were: another tool's change since
                 # the load is a conflict, never put over
                 "ConditionExpression": (
                     "(#n0 = :v0) AND (attribute_not_exists(#n1)) AND (#n2 = :v1) AND "
                     "(#n3 = :v2) AND (#n4 = :v3) AND (#n5 = :v4) AND (#n6 = :v5) AND "
                     "(attribute_not_exists(#n7)) AND (attribute_not_exists(#n8))"),
                 "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                 "ExpressionAttributeNames": {
                     "#n0": "version", "#n1": "_rev", "#n2": "_type", "#n3": "auditor",
                     "#n4": "equipment_id", "#n5": "notes", "#n6": "part",
                     "#n7": "_version_keys", "#n8": "_version_ttl"},
                 "ExpressionAttributeValues": {
                     ":v0": {"N": "7"}, ":v1": {"S": "Audit"}, ":v2": {"S": ""},
                     ":v3": {"S": "E1"}, ":v4": {"S": ""}, ":v5": {"S": "P1"}}}},
    ]


def test_versioned_unchanged_plans_nothing() -> None:
    a = _persisted(Audit(equipment_id="E1", part="P1"), version=2)
    plan, _ = compile_commit([(SaveEntry(a), a._dynaorm_state)])
    assert plan.ops == ()


def test_versioned_delete_with_and_without_history() -> None:
    a = _persisted(Audit(equipment_id="E1", part="P1"), version=3)
    name, req = _single(DeleteEntry(a))
    assert name == "DeleteItem"
    assert req["Key"] == {"pk": {"S": "EQUIPMENT#E1"}, "sk": {"S": "v0_P1"}}
    # (a latest copy never stamped: as loaded, 0.10; its version as the versioned rule pins it)
    assert req["ConditionExpression"] == (
        "(attribute_exists(#n0)) AND (attribute_not_exists(#n1)) AND (#n2 = :v0) AND "
        "(#n3 = :v1) AND (#n4 = :v2) AND (#n5 = :v3) AND (#n6 = :v4) AND "
        "(attribute_not_exists(#n7)) AND (attribute_not_exists(#n8)) AND (#n9 = :v5)")
    assert req["ExpressionAttributeNames"]["#n9"] == "version"
    assert req["ExpressionAttributeValues"][":v5"] == {"N": "3"}
    items = _request(DeleteEntry(a, history=True))["TransactItems"]
    assert [i["Delete"]["Key"]["sk"]["S"] for i in items] == [
        "v0_P1", "v00000001_P1", "v00000002_P1", "v00000003_P1"]


# -- plain rows ----------------------------------------------------------------------------
def test_plain_insert_and_overwrite() -> None:
    n = Note(note_id="n1", body="hi")
    name, req = _single(SaveEntry(n))
    assert name == "PutItem"
    assert req["ConditionExpression"] == "attribute_not_exists(#n0)"
    name, req = _single(SaveEntry(n, overwrite=True))
    assert name == "PutItem"
    assert "ConditionExpression" not in req


def test_plain_update_writes_only_changed_and_removes_none() -> None:
    from tests.support.models import TplSparse

    s = _persisted(TplSparse(sid="s1", status="open", body="x"))
    s.status = None
    name, req = _single(SaveEntry(s))
    assert name == "UpdateItem"
    assert req["UpdateExpression"] == "REMOVE #n0, #n1, #n2"
    assert set(req["ExpressionAttributeNames"].values()) >= {"gsi2pk", "gsi2sk", "status"}


def test_primary_key_move_deletes_old_and_puts_new() -> None:
    n = _persisted(Note(note_id="n1", body="hi"))
    n.note_id = "n2"
    items = _request(SaveEntry(n))["TransactItems"]
    assert items[0] == {"Delete": {
        "TableName": T, "Key": {"pk": {"S": "NOTE#n1"}, "sk": {"S": "NOTE"}},
        # the move copies every attribute: each must still hold what was loaded (and no
        # dynaorm writer stamped a revision since: the loaded item held none)
        "ConditionExpression": "(attribute_exists(#n0)) AND (#n1 = :v0) AND (#n2 = :v1) "
                               "AND (#n3 = :v2) AND (attribute_not_exists(#n4))",
        "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        "ExpressionAttributeNames": {"#n0": "pk", "#n1": "body", "#n2": "note_id",
                                     "#n3": "tags", "#n4": "_rev"},
        "ExpressionAttributeValues": {":v0": {"S": "hi"}, ":v1": {"S": "n1"},
                                      ":v2": {"L": []}}}}
    assert items[1]["Put"]["Item"]["pk"] == {"S": "NOTE#n2"}
    assert items[1]["Put"]["ConditionExpression"] == "attribute_not_exists(#n0)"


def test_same_item_twice_in_one_plan_is_refused() -> None:
    from dynaorm import DynaormError

    a = Note(note_id="n1")
    b = Note(note_id="n1", body="other")
    with pytest.raises(DynaormError, match="twice"):
        compile_commit([(SaveEntry(a), None), (SaveEntry(b), None)])


def test_origins_follow_plan_order() -> None:
    u = User(user_id="u1", username="alice", email="a@x.com")
    plan, _ = compile_commit([(SaveEntry(u), None)])
    assert [(type(op), op.origin.role, op.origin.field) for op in plan.ops] == [
        (Put, Role.ROW, None), (Put, Role.GUARD, "username"), (Put, Role.GUARD, "email")]
    p = _persisted(u)
    plan, _ = compile_commit([(DeleteEntry(p), p._dynaorm_state)])
    assert [type(op) for op in plan.ops] == [Delete, Delete, Delete]
    p.full_name = "x"
    plan, _ = compile_commit([(SaveEntry(p), p._dynaorm_state)])
    assert [type(op) for op in plan.ops] == [Update]


# -- placeholders --------------------------------------------------------------------------
def _expression_texts(request: dict[str, Any]) -> list[str]:
    out = []
    for item in request["TransactItems"]:
        body = next(iter(item.values()))
        out += [body[k] for k in ("ConditionExpression", "UpdateExpression") if k in body]
    return out


def test_hostile_values_never_enter_expression_text() -> None:
    u = _persisted(User(user_id="u1", username=HOSTILE, email=HOSTILE2))
    u.email = HOSTILE2 + "@x"
    u.full_name = HOSTILE
    req = _request(SaveEntry(u))
    texts = _expression_texts(req)
    assert texts
    for text in texts:
        assert HOSTILE not in text and "#x" not in text and ":v " not in text
        assert "@" not in text and "OR" not in text.replace(") OR (", ") | (")
    dumped = json.dumps(req)
    assert HOSTILE in dumped  # the values do travel, as placeholders


def test_hostile_attribute_values_in_versioned_and_delete_plans() -> None:
    a = _persisted(Audit(equipment_id="E1", part="P1", auditor=HOSTILE), version=1)
    a.auditor = HOSTILE2
    u = _persisted(User(user_id="u9", username=HOSTILE, email=HOSTILE2))
    req = _request(SaveEntry(a), DeleteEntry(u))
    for text in _expression_texts(req):
        assert HOSTILE not in text and "#x" not in text


# -- limits --------------------------------------------------------------------------------
def test_limits_are_checked_when_planning() -> None:
    notes = [Note(note_id=f"n{i}") for i in range(101)]
    with pytest.raises(TransactionTooLargeError, match="101"):
        compile_commit([(SaveEntry(n), None) for n in notes])
    plan, _ = compile_commit([(SaveEntry(n), None) for n in notes[:100]])
    assert len(plan) == 100
    with pytest.raises(ItemTooLargeError, match="Note"):
        compile_commit([(SaveEntry(Note(note_id="big", body="x" * 401 * 1024)), None)])
    big = [Note(note_id=f"b{i}", body="x" * 390 * 1024) for i in range(11)]
    with pytest.raises(TransactionTooLargeError, match="byte"):
        compile_commit([(SaveEntry(n), None) for n in big])


def test_write_plan_is_plain_data() -> None:
    u = User(user_id="u1", username="alice", email="a@x.com")
    p1, _ = compile_commit([(SaveEntry(u), None)])
    p2, _ = compile_commit([(SaveEntry(u), None)])
    assert p1.transaction_request("a") == p2.transaction_request("a")
    assert isinstance(p1, WritePlan)
    assert p1.transaction_request("a") != p1.transaction_request("b")


# -- no lost updates: the values an update is conditioned on count in its request's size --
def test_request_size_counts_condition_values() -> None:
    """Twelve updates of ~190 KB each: 2.3 MB of new values, but each is also conditioned on
    its ~190 KB old value, so the request is over 4 MB and is refused before sending."""


    entries = []
    for i in range(12):
        n = Note._from_item({"pk": {"S": f"NOTE#{i}"}, "sk": {"S": "NOTE"},
                             "type": {"S": "Note"}, "note_id": {"S": str(i)},
                             "body": {"S": "a" * 190_000}})
        n.body = "b" * 190_000
        entries.append((SaveEntry(n), n._dynaorm_state))
    assert isinstance(entries[0][0].obj, Entity)
    with pytest.raises(TransactionTooLargeError):
        compile_commit(entries)
    plan, _ = compile_commit(entries[:5])  # the same shape, small enough, plans fine
    assert len(plan.ops) == 5
