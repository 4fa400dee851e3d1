"""The seed scenario of unique attributes, step by step, down to the wire-level reasons."""

from __future__ import annotations

import pytest

from dynaorm import UniqueConstraintError
from dynaorm.testing import TestBackend
from dynaorm.transport.sync import RequestFailed
from dynaorm.write.records import Put, Role
from tests.models import User


def keys(db: TestBackend) -> list[tuple[str, str]]:
    return [(i["pk"]["S"], i["sk"]["S"]) for i in db.scan_raw()]


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
