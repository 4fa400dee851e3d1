"""Unique attributes through guard items (contract section 5), on both backends; at the
end, the seed scenario step by step, down to the wire-level reasons."""

from __future__ import annotations

from typing import Any

import pytest

import dynaorm
from dynaorm import ConcurrentModificationError, Entity, Unique, UniqueConstraintError
from dynaorm.errors import RequestError as RequestFailed
from dynaorm.testing import TestBackend
from dynaorm.values.records import Put, Role
from tests.support.guards import GUARD, assert_guards_consistent
from tests.support.models import User, app

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class UqMember(Entity):
    """Handle unique per organisation; badge unique table-wide under a custom prefix."""

    class Meta:
        table = app
        pk = "UQMEMBER#{member_id}"
        sk = "UQMEMBER"
        unique = (Unique("handle", scope="ORG#{org}", normalize=str.lower),
                  Unique("badge", prefix="member_badge"))

    member_id: str
    org: str
    handle: str
    badge: str | None = None


def guards(db: TestBackend) -> dict[str, dict[str, Any]]:
    return {i["pk"]: i for i in db.scan() if i.get("_type") == GUARD}


def rows(db: TestBackend, type_name: str) -> list[dict[str, Any]]:
    return [i for i in db.scan() if i.get("_type") == type_name]


def register(db: TestBackend, **fields: Any) -> User:
    user = User(**fields)
    s = db.session()
    s.save(user)
    s.commit()
    return user


def test_register_writes_row_and_guards(db: TestBackend) -> None:
    user = register(db, user_id="u1", username="bob", email="Bobby@Tables.com")
    items = db.scan()
    assert len(items) == 3
    g = guards(db)
    assert set(g) == {"username#bob", "email#bobby@tables.com"}
    for key, field in (("username#bob", "username"), ("email#bobby@tables.com", "email")):
        assert g[key]["owner_pk"] == "USER#u1"
        assert g[key]["owner_sk"] == "PROFILE"
        assert g[key]["owner_type"] == "User"
        assert g[key]["unique_field"] == field
        assert g[key]["sk"] == key
    (row,) = rows(db, "User")
    assert row["email"] == "Bobby@Tables.com"  # the field keeps its case; the guard is lower
    assert dynaorm.inspect(user).persisted
    assert_guards_consistent(db)


def test_duplicate_email_is_refused(db: TestBackend) -> None:
    register(db, user_id="u1", username="bob", email="Bobby@Tables.com")
    before = db.scan_raw()
    s = db.session()
    dup = User(user_id="u2", username="robert", email="BOBBY@tables.com")
    s.save(dup)
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    e = err.value
    assert e.field == "email"
    assert e.value == "BOBBY@tables.com"
    assert e.violations == [("email", "BOBBY@tables.com")]
    assert e.entity is User
    assert "User" in str(e) and "email" in str(e)
    assert db.scan_raw() == before
    assert not dynaorm.inspect(dup).persisted


def test_only_the_clashing_field_is_named(db: TestBackend) -> None:
    register(db, user_id="u1", username="bob", email="bob@x.com")
    before = db.scan_raw()
    s = db.session()
    s.save(User(user_id="u2", username="bob", email="other@x.com"))
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert err.value.field == "username"
    assert err.value.value == "bob"
    assert err.value.violations == [("username", "bob")]
    assert db.scan_raw() == before


def test_two_violations_at_once(db: TestBackend) -> None:
    register(db, user_id="u1", username="bob", email="bob@x.com")
    before = db.scan_raw()
    s = db.session()
    s.save(User(user_id="u2", username="bob", email="Bob@X.com"))
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert sorted(err.value.violations) == [("email", "Bob@X.com"), ("username", "bob")]
    assert err.value.field in ("username", "email")
    assert db.scan_raw() == before


def test_email_change_swaps_guards(db: TestBackend) -> None:
    register(db, user_id="u1", username="bob", email="bob@x.com")
    s = db.session()
    user = s.get(User, user_id="u1", consistent=True)
    assert user is not None
    user.email = "Robert@X.com"
    s.save(user)
    s.commit()
    g = guards(db)
    assert set(g) == {"username#bob", "email#robert@x.com"}
    assert g["email#robert@x.com"]["owner_pk"] == "USER#u1"
    assert g["email#robert@x.com"]["unique_field"] == "email"
    assert_guards_consistent(db)
    # the old value is free again
    register(db, user_id="u2", username="bobby", email="BOB@x.com")
    assert_guards_consistent(db)


def test_email_change_to_a_taken_value_is_refused(db: TestBackend) -> None:
    register(db, user_id="u1", username="bob", email="bob@x.com")
    register(db, user_id="u2", username="amy", email="amy@x.com")
    before = db.scan_raw()
    s = db.session()
    amy = s.get(User, user_id="u2", consistent=True)
    assert amy is not None
    amy.email = "BOB@X.COM"
    s.save(amy)
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert (err.value.field, err.value.value) == ("email", "BOB@X.COM")
    assert db.scan_raw() == before
    # the object kept its loaded state: fix the value and retry
    amy.email = "amy.new@x.com"
    s.save(amy)
    s.commit()
    assert "email#amy.new@x.com" in guards(db)
    assert_guards_consistent(db)


def test_case_only_change_keeps_guard(db: TestBackend) -> None:
    register(db, user_id="u1", username="bob", email="bob@x.com")
    s = db.session()
    user = s.get(User, user_id="u1", consistent=True)
    assert user is not None
    g_before = guards(db)
    user.email = "BOB@x.com"
    s.save(user)
    s.commit()
    assert guards(db) == g_before
    assert rows(db, "User")[0]["email"] == "BOB@x.com"


def test_case_only_change_after_concurrent_email_change_is_refused(db: TestBackend) -> None:
    register(db, user_id="u1", username="bob", email="bob@x.com")
    mine = db.session().get(User, user_id="u1", consistent=True)
    theirs = db.session().get(User, user_id="u1", consistent=True)
    assert mine is not None and theirs is not None
    theirs.email = "other@x.com"
    s = db.session()
    s.save(theirs)
    s.commit()
    before = db.scan_raw()
    mine.email = "BOB@x.com"  # same guard as the value it read, which is no longer stored
    s2 = db.session()
    s2.save(mine)
    with pytest.raises(ConcurrentModificationError):
        s2.commit()
    assert db.scan_raw() == before
    assert_guards_consistent(db)


def test_delete_removes_user_and_guards(db: TestBackend) -> None:
    register(db, user_id="u1", username="bob", email="bob@x.com")
    s = db.session()
    user = s.get(User, user_id="u1", consistent=True)
    assert user is not None
    s.delete(user)
    s.commit()
    assert db.scan_raw() == []


def test_delete_of_a_built_object_reads_the_stored_guards(db: TestBackend) -> None:
    register(db, user_id="u1", username="bob", email="bob@x.com")
    s = db.session()
    # built by the caller, with stale unique values: dynaorm reads the stored item first
    s.delete(User(user_id="u1", username="whatever", email="w@x.com"))
    s.commit()
    assert db.scan_raw() == []


def test_find_through_the_guard(db: TestBackend) -> None:
    user = register(db, user_id="u1", username="bob", email="Bobby@Tables.com")
    s = db.session()
    assert s.find(User, email="bobby@tables.com") == user
    assert s.find(User, email="BOBBY@TABLES.COM", consistent=True) == user
    assert s.find(User, username="bob") == user
    assert s.find(User, username="Bob") is None  # username has no normalization
    assert s.find(User, email="nobody@x.com") is None
    found = s.find(User, email="bobby@tables.com")
    assert found is not None and dynaorm.inspect(found).persisted
    found.full_name = "Bobby"
    s.save(found)
    s.commit()
    assert rows(db, "User")[0]["full_name"] == "Bobby"


def test_find_by_none_finds_nothing(db: TestBackend) -> None:
    assert db.session().find(User, email=None) is None


def test_scope_and_prefix(db: TestBackend) -> None:
    s = db.session()
    s.save(UqMember(member_id="m1", org="o1", handle="Alice", badge="B-7"))
    s.save(UqMember(member_id="m2", org="o2", handle="alice"))  # another scope: allowed
    s.commit()
    g = guards(db)
    assert set(g) == {"ORG#o1#handle#alice", "ORG#o2#handle#alice", "member_badge#B-7"}
    assert g["member_badge#B-7"]["owner_pk"] == "UQMEMBER#m1"
    assert g["member_badge#B-7"]["unique_field"] == "badge"
    assert g["ORG#o2#handle#alice"]["owner_pk"] == "UQMEMBER#m2"
    assert s.find(UqMember, org="o1", handle="ALICE") == UqMember(
        member_id="m1", org="o1", handle="Alice", badge="B-7")
    assert s.find(UqMember, badge="B-7") is not None

    before = db.scan_raw()
    s.save(UqMember(member_id="m3", org="o1", handle="ALICE"))
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert (err.value.field, err.value.value) == ("handle", "ALICE")
    assert err.value.entity is UqMember
    assert db.scan_raw() == before

    s.save(UqMember(member_id="m4", org="o3", handle="zed", badge="B-7"))
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert err.value.violations == [("badge", "B-7")]
    assert db.scan_raw() == before


def test_moving_to_another_scope_moves_the_guard(db: TestBackend) -> None:
    s = db.session()
    m = UqMember(member_id="m1", org="o1", handle="alice")
    s.save(m)
    s.commit()
    m.org = "o2"
    s.save(m)
    s.commit()
    assert set(guards(db)) == {"ORG#o2#handle#alice"}
    s.save(UqMember(member_id="m2", org="o1", handle="alice"))
    s.commit()
    assert set(guards(db)) == {"ORG#o1#handle#alice", "ORG#o2#handle#alice"}


def test_unique_value_set_and_cleared(db: TestBackend) -> None:
    s = db.session()
    m = UqMember(member_id="m1", org="o1", handle="h")
    s.save(m)
    s.commit()
    m.badge = "B1"
    s.save(m)
    s.commit()
    assert "member_badge#B1" in guards(db)
    m.badge = None
    s.save(m)
    s.commit()
    assert set(guards(db)) == {"ORG#o1#handle#h"}


def test_swap_emails_in_one_commit(db: TestBackend) -> None:
    register(db, user_id="u1", username="amy", email="amy@x.com")
    register(db, user_id="u2", username="bob", email="bob@x.com")
    s = db.session()
    amy = s.get(User, user_id="u1", consistent=True)
    bob = s.get(User, user_id="u2", consistent=True)
    assert amy is not None and bob is not None
    amy.email, bob.email = bob.email, amy.email
    s.save(amy)
    s.save(bob)
    s.commit()
    g = guards(db)
    assert g["email#amy@x.com"]["owner_pk"] == "USER#u2"
    assert g["email#bob@x.com"]["owner_pk"] == "USER#u1"
    assert len(g) == 4
    assert_guards_consistent(db)
    assert s.find(User, email="amy@x.com") == bob


def test_rotate_usernames_in_one_commit(db: TestBackend) -> None:
    for i, name in enumerate(("a", "b", "c")):
        register(db, user_id=f"u{i}", username=name, email=f"{name}@x.com")
    s = db.session()
    users = [s.get(User, user_id=f"u{i}", consistent=True) for i in range(3)]
    assert all(u is not None for u in users)
    a, b, c = users
    assert a is not None and b is not None and c is not None
    a.username, b.username, c.username = "b", "c", "a"
    for u in (a, b, c):
        s.save(u)
    s.commit()
    assert_guards_consistent(db)
    assert s.find(User, username="a") == c


def test_release_and_claim_in_one_commit(db: TestBackend) -> None:
    register(db, user_id="u1", username="amy", email="amy@x.com")
    s = db.session()
    amy = s.get(User, user_id="u1", consistent=True)
    assert amy is not None
    s.delete(amy)
    s.save(User(user_id="u2", username="amy", email="AMY@x.com"))
    s.commit()
    g = guards(db)
    assert g["username#amy"]["owner_pk"] == "USER#u2"
    assert g["email#amy@x.com"]["owner_pk"] == "USER#u2"
    assert_guards_consistent(db)
    assert len(db.scan()) == 3


def test_claim_then_release_in_one_commit(db: TestBackend) -> None:
    register(db, user_id="u1", username="amy", email="amy@x.com")
    s = db.session()
    amy = s.get(User, user_id="u1", consistent=True)
    assert amy is not None
    s.save(User(user_id="u2", username="amy", email="amy@x.com"))  # staged before the release
    s.delete(amy)
    s.commit()
    g = guards(db)
    assert {k: v["owner_pk"] for k, v in g.items()} == {
        "username#amy": "USER#u2", "email#amy@x.com": "USER#u2"}
    assert_guards_consistent(db)


# -- the seed scenario, step by step -------------------------------------------------------

def keys(db: TestBackend) -> list[tuple[str, str]]:
    return [(i["pk"]["S"], i["sk"]["S"]) for i in db.scan_raw()]


@pytest.mark.sync_only
def test_user_registration_duplicate_email_change_and_delete(db: TestBackend) -> None:
    s = db.session()
    bob = User(user_id="u1", username="bob", email="bob@tables.com")
    s.save(bob)
    s.commit()
    assert keys(db) == [("USER#u1", "PROFILE"), ("email#bob@tables.com", "email#bob@tables.com"),
                        ("username#bob", "username#bob")]

    # a second user with the same email: the transaction is cancelled on the email guard
    s.save(User(user_id="u2", username="robert", email="Bob@Tables.com"))
    plan = s.plan()
    email_guard = next(i for i, op in enumerate(plan.ops)
                       if op.origin.role is Role.GUARD and op.origin.field == "email")
    assert isinstance(plan.ops[email_guard], Put)
    before = db.scan_raw()
    with pytest.raises(UniqueConstraintError) as err:
        s.commit()
    assert (err.value.field, err.value.violations) == ("email", [("email", "Bob@Tables.com")])
    cause = err.value.__cause__
    assert isinstance(cause, RequestFailed) and cause.code == "TransactionCanceledException"
    codes = [None if r is None else r.code for r in cause.reasons]
    assert codes[email_guard] == "ConditionalCheckFailed"
    assert [c for i, c in enumerate(codes) if i != email_guard] == [None] * (len(codes) - 1)
    assert db.scan_raw() == before

    # bob changes his email: old guard released, new one claimed, one transaction
    bob.email = "bobby@tables.com"
    s.save(bob)
    s.commit()
    assert ("email#bob@tables.com", "email#bob@tables.com") not in keys(db)
    assert ("email#bobby@tables.com", "email#bobby@tables.com") in keys(db)

    # deleting bob leaves nothing behind
    s.delete(bob)
    s.commit()
    assert db.scan_raw() == []


def _drop_guard(db: TestBackend, key: str) -> None:
    """The guard was never written: the owner was stored before its rule was declared
    (or before its normalisation changed the guard's key)."""
    from dynaorm.protocol.steps import call

    db.table.db.driver.run(call("DeleteItem", {
        "TableName": db.table.name, "Key": {"pk": {"S": key}, "sk": {"S": key}}}))


@pytest.mark.parametrize("change", ["email", "delete", "move"])
def test_an_owner_stored_before_its_rule_saves_and_deletes_without_conflict(
        db: TestBackend, change: str) -> None:
    """(0.4) adding a unique rule to live data as the check guide says (deploy, then
    ``check --repair``): until the backfill, changing or deleting an owner without its
    guard raised ConcurrentModificationError although no one else wrote."""
    with db.session() as s:
        s.save(User(user_id="u1", username="ada", email="Ada@X.io"))
    _drop_guard(db, "email#ada@x.io")
    s = db.session()
    user = s.get(User, user_id="u1", consistent=True)
    assert user is not None
    if change == "email":
        user.email = "ada@y.io"
        s.save(user)
    elif change == "move":
        user.user_id = "u2"
        s.save(user)
    else:
        s.delete(user)
    s.commit()
    assert_guards_consistent(db)
    if change != "delete":
        assert s.find(User, email=user.email, consistent=True) == user


def test_a_stale_change_to_the_value_another_writer_just_gave_it_is_a_conflict(
        db: TestBackend) -> None:
    """Found by the adversary (tests/system/test_adversary.py): both load, one changes the
    email to X, the other (stale) changes it to X too. The guard refusing the second
    names the same owner: the row changed, nobody else holds X. (0.4)
    ConcurrentModificationError, a ConflictError (it was UniqueConstraintError)."""
    with db.session() as s:
        s.save(User(user_id="u1", username="ada", email="ada@x.io"))
    s1, s2 = db.session(), db.session()
    a = s1.get(User, user_id="u1", consistent=True)
    b = s2.get(User, user_id="u1", consistent=True)
    assert a is not None and b is not None
    a.email = "ada@y.io"
    s1.save(a)
    s1.commit()
    b.email = "ada@y.io"
    s2.save(b)
    with pytest.raises(ConcurrentModificationError):
        s2.commit()
    assert_guards_consistent(db)
