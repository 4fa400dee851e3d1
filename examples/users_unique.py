"""Unique attributes through guard items: register users, refuse a duplicate e-mail (the
error names the field), change an e-mail, delete a user. The table is printed after each
step: the guard items ``username#...`` and ``email#...`` follow their owner.

Run: ``python examples/users_unique.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run, table_keys

from dynaorm import Entity, Table, Unique, UniqueConstraintError

accounts = Table("dynaorm-example-users")


class User(Entity):
    class Meta:
        table = accounts
        pk = "USER#{user_id}"
        sk = "PROFILE"
        unique = ("username", Unique("email", normalize=str.lower))

    user_id: str
    username: str
    email: str
    full_name: str = ""


def main() -> None:
    with run(accounts, "unique username and e-mail through guard items") as db:
        s = db.session()
        s.save(User(user_id="u1", username="bobby", email="Bobby@Tables.com",
                    full_name="Bobby Tables"))
        s.commit()
        table_keys(db, "register bobby")

        s.save(User(user_id="u2", username="robert", email="bobby@tables.com"))
        try:
            s.commit()
        except UniqueConstraintError as exc:
            print(f"\nrefused: {type(exc).__name__}: field={exc.field!r} value={exc.value!r}")
        table_keys(db, "a second user with the same e-mail (refused, nothing written)")

        s.save(User(user_id="u2", username="robert", email="robert@tables.com"))
        s.commit()
        table_keys(db, "register robert with his own e-mail")

        bobby = s.find(User, email="BOBBY@tables.com")
        assert bobby is not None
        print(f"\nfind(User, email='BOBBY@tables.com') -> {bobby.username}")
        bobby.email = "bobby@newmail.com"
        s.save(bobby)
        s.commit()
        table_keys(db, "bobby changes his e-mail (old guard deleted, new one put)")

        robert = s.get(User, user_id="u2")
        assert robert is not None
        robert.email = "Bobby@NewMail.com"
        s.save(robert)
        try:
            s.commit()
        except UniqueConstraintError as exc:
            print(f"\nrefused: {type(exc).__name__}: field={exc.field!r} value={exc.value!r}")

        for user_id in ("u1", "u2"):
            user = s.get(User, user_id=user_id)
            assert user is not None
            s.delete(user)
        s.commit()
        table_keys(db, "deleting both users (their guards go with them)")


if __name__ == "__main__":
    main()
