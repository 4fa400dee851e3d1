"""Static typing contract, checked by mypy --strict in `make test` (never executed).

`Session.get` is typed `Entity | None`, queries yield the entity class, pages hold it.
"""

from __future__ import annotations

from typing import assert_type

from dynaorm import F, Page, Query, Session, StagedUpdate
from tests.models import Audit, User, app


def check_types() -> None:
    s = Session(app)
    assert_type(s.get(User, user_id="u1"), User | None)
    assert_type(s.get(Audit, equipment_id="e", part="p", version=2), Audit | None)
    assert_type(s.find(User, email="a@b.c"), User | None)
    assert_type(s.get_many(User, [{"user_id": "u1"}]), list[User | None])
    q = s.query(User, index="gsi1", org_id="acme")
    assert_type(q, Query[User])
    assert_type(q.begins_with(username="a").reverse().limit(3), Query[User])
    for user in q:
        assert_type(user, User)
    assert_type(q.all(), list[User])
    assert_type(q.first(), User | None)
    assert_type(q.one(), User)
    assert_type(q.page(), Page[User])
    assert_type(s.history(Audit, equipment_id="e", part="p"), Query[Audit])
    u = s.update(User, user_id="u1").set(full_name="x").where(F("org_id") == "acme")
    assert_type(u, StagedUpdate[User])
    assert_type(u.result, User)
    loaded = User(username="a", email="a@b.c")
    assert_type(s.update(loaded).returning().result, User)
