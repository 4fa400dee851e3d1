"""The data audit (dynaorm.tools.audit): problems planted through the raw transport are found,
reported with the right kind and key, and repaired by conditional transactions."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm import Entity, Session, Table, Unique
from dynaorm.testing import TestBackend
from dynaorm.tools.audit import Problem, audit_items, audit_table, repair, scan_items
from tests.support.models import Audit, User, app

pytestmark = pytest.mark.sync_only  # instruments of the sync client (see conftest)


def _put(db: TestBackend, item: dict[str, Any]) -> None:
    db.table.transport.call("PutItem", {"TableName": db.table.name, "Item": item})


def _delete(db: TestBackend, pk: str, sk: str) -> None:
    db.table.transport.call("DeleteItem", {"TableName": db.table.name,
                                           "Key": {"pk": {"S": pk}, "sk": {"S": sk}}})


def _guard(key: str, owner_pk: str, field: str, owner_type: str = "User") -> dict[str, Any]:
    return {"pk": {"S": key}, "sk": {"S": key}, "_type": {"S": "dynaorm:unique"},
            "owner_pk": {"S": owner_pk}, "owner_sk": {"S": "PROFILE"},
            "owner_type": {"S": owner_type}, "unique_field": {"S": field}}


def _kinds(problems: list[Problem]) -> list[tuple[str, str]]:
    return [(p.kind, p.key[0]) for p in problems]


@pytest.fixture
def seeded(db: TestBackend) -> TestBackend:
    with db.session() as s:
        s.save(User(user_id="u1", username="ada", email="Ada@Example.com"))
        s.save(User(user_id="u2", username="bob", email="bob@example.com"))
    s = db.session()
    audit = Audit(equipment_id="E1", part="P1", notes="one")
    s.save(audit)
    s.commit()
    audit.notes = "two"
    s.save(audit)
    s.commit()
    return db


def test_clean_table_has_no_problems(seeded: TestBackend) -> None:
    count, problems = audit_table(app)
    assert count == len(seeded.scan_raw())
    assert problems == []


def test_orphan_guards_found_and_deleted(seeded: TestBackend) -> None:
    _put(seeded, _guard("email#ghost@example.com", "USER#gone", "email"))  # owner gone
    _put(seeded, _guard("username#old-ada", "USER#u1", "username"))       # value moved on
    problems = audit_items(app, seeded.scan_raw())
    assert _kinds(problems) == [("orphan-guard", "email#ghost@example.com"),
                                ("orphan-guard", "username#old-ada")]
    assert "USER#gone is gone" in problems[0].detail
    assert "no longer holds that username" in problems[1].detail
    results = repair(app, problems)
    assert [r.ok for r in results] == [True, True]
    keys = {i["pk"] for i in seeded.scan()}
    assert "email#ghost@example.com" not in keys and "username#old-ada" not in keys
    assert audit_table(app)[1] == []


def test_missing_guard_found_and_put_back(seeded: TestBackend) -> None:
    _delete(seeded, "username#bob", "username#bob")
    problems = audit_items(app, seeded.scan_raw())
    assert _kinds(problems) == [("missing-guard", "USER#u2")]
    assert "User.username" in problems[0].detail and "username#bob" in problems[0].detail
    assert [r.ok for r in repair(app, problems)] == [True]
    guard = next(i for i in seeded.scan() if i["pk"] == "username#bob")
    assert guard["owner_pk"] == "USER#u2" and guard["owner_type"] == "User"
    assert Session(app).find(User, username="bob") is not None
    assert audit_table(app)[1] == []


def test_stale_latest_copy_rewritten_from_newest_version(seeded: TestBackend) -> None:
    latest = next(i for i in seeded.scan_raw() if i["sk"]["S"] == "v0_P1")
    _put(seeded, {**latest, "notes": {"S": "edited by hand"}})
    problems = audit_items(app, seeded.scan_raw())
    assert _kinds(problems) == [("stale-latest", "EQUIPMENT#E1")]
    assert problems[0].key == ("EQUIPMENT#E1", "v0_P1")
    assert [r.ok for r in repair(app, problems)] == [True]
    got = Session(app).get(Audit, equipment_id="E1", part="P1", consistent=True)
    assert got is not None
    assert (got.notes, got.model_dump()["version"]) == ("two", 2)
    assert audit_table(app)[1] == []


def test_repair_skips_a_fix_whose_items_changed(seeded: TestBackend) -> None:
    _put(seeded, _guard("email#ghost@example.com", "USER#gone", "email"))
    problems = audit_items(app, seeded.scan_raw())
    # the owner comes back between the scan and the repair: the delete must not apply
    _put(seeded, {"pk": {"S": "USER#gone"}, "sk": {"S": "PROFILE"}, "_type": {"S": "User"},
                  "user_id": {"S": "gone"}, "org_id": {"S": "acme"},
                  "username": {"S": "ghost"}, "email": {"S": "ghost@example.com"}})
    (result,) = repair(app, problems)
    assert not result.ok and "changed" in result.message
    assert any(i["pk"] == "email#ghost@example.com" for i in seeded.scan())


def test_duplicate_values_are_reported_not_repaired(seeded: TestBackend) -> None:
    bob = next(i for i in seeded.scan_raw() if i["pk"]["S"] == "USER#u2")
    _put(seeded, {**bob, "pk": {"S": "USER#u3"}, "user_id": {"S": "u3"}})
    problems = audit_items(app, seeded.scan_raw())
    assert {(p.kind, p.key[0]) for p in problems} == {("duplicate", "USER#u3")}
    assert len(problems) == 2 and not any(p.repairable for p in problems)  # username, email
    assert repair(app, problems) == []


def test_scan_pages(seeded: TestBackend) -> None:
    seen: list[int] = []
    items = list(scan_items(app, seen.append, page_size=2))
    assert len(items) == len(seeded.scan_raw())
    assert seen[-1] == len(items) and len(seen) >= len(items) // 2


# -- pure checks on hand-made items (no backend) -------------------------------------------
pure = Table("audit-pure")


class Member(Entity):
    class Meta:
        table = pure
        pk = "ORG#{org_id}"
        sk = "MEMBER#{name}"
        unique = (Unique("nick", scope="ORG#{org_id}", normalize=str.lower),)

    org_id: str
    name: str
    nick: str


def _member(name: str, nick: str) -> dict[str, Any]:
    return {"pk": {"S": "ORG#o1"}, "sk": {"S": f"MEMBER#{name}"}, "_type": {"S": "Member"},
            "org_id": {"S": "o1"}, "name": {"S": name}, "nick": {"S": nick}}


def _scoped_guard(nick: str, owner: str) -> dict[str, Any]:
    key = f"ORG#o1#nick#{nick}"
    return {"pk": {"S": key}, "sk": {"S": key}, "_type": {"S": "dynaorm:unique"},
            "owner_pk": {"S": "ORG#o1"}, "owner_sk": {"S": f"MEMBER#{owner}"},
            "owner_type": {"S": "Member"}, "unique_field": {"S": "nick"}}


def test_scoped_guards_with_normalization_are_recognised() -> None:
    assert audit_items(pure, [_member("ann", "Annie"), _scoped_guard("annie", "ann")]) == []


def test_guard_held_by_a_gone_owner_is_repointed_to_the_current_holder() -> None:
    (problem,) = audit_items(pure, [_member("bea", "annie"), _scoped_guard("annie", "ann")])
    assert problem.kind == "orphan-guard" and "re-point" in problem.detail
    put = problem.fix[0]["Put"]
    assert put["Item"]["owner_sk"] == {"S": "MEMBER#bea"}
    assert "ConditionExpression" in put


def test_latest_copy_without_history_is_reported() -> None:
    latest = {"pk": {"S": "EQUIPMENT#E9"}, "sk": {"S": "v0_P"}, "_type": {"S": "Audit"},
              "equipment_id": {"S": "E9"}, "part": {"S": "P"}, "version": {"N": "1"}}
    (problem,) = audit_items(app, [latest])
    assert (problem.kind, problem.repairable) == ("no-history", False)
