"""Changing a key template on a live table: ``USER#{id}`` becomes ``ACCOUNT#{id}``, the type
name ``user`` becomes ``account`` and the stored attribute ``mail`` becomes ``email``.

The new class declares ``Meta.previous``: reads find each account under either layout,
any write moves what it touches (its unique guard with it), and ``migrate`` moves the
rest, ending with ``dynaorm check``.

Run: ``python examples/migration.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import run, table_keys

from dynaorm import Client, Entity, Previous, Session, Table, Unique
from dynaorm.jobs.migration import migrate

accounts = Table("dynaorm-example-migration")
#: the same DynamoDB table as the previous release of the code saw it, from its own process
#: (a client of its own: one client's Table objects of a table share one registry of type
#: names, and the two releases' classes claim the same one, "user")
before = Table("dynaorm-example-migration", client=Client())


class OldUser(Entity):
    """The previous release's class (only here to write the old items)."""

    class Meta:
        table = before
        pk = "USER#{id}"
        sk = "PROFILE"
        type_name = "user"
        unique = (Unique("mail", prefix="email", normalize=str.lower),)

    id: str
    mail: str
    name: str = ""


class Account(Entity):
    """The current class: a new key template, type name and stored name."""

    class Meta:
        table = accounts
        pk = "ACCOUNT#{id}"
        sk = "PROFILE"
        type_name = "account"
        unique = (Unique("email", normalize=str.lower),)
        previous = Previous(pk="USER#{id}", type_name="user", stored_names={"email": "mail"})

    id: str
    email: str
    name: str = ""


def main() -> None:
    with run(accounts, "changing a key template on a live table") as db:
        before.name = accounts.name
        before.connect(accounts.endpoint_url)
        old = Session(before)
        for n, name in enumerate(["Ann", "Bob", "Cat"]):
            old.save(OldUser(id=f"u{n}", mail=f"{name}@example.com", name=name))
        old.commit()
        table_keys(db, "the previous release wrote three users")

        s = db.session()
        ann = s.get(Account, id="u0")  # missed under ACCOUNT#u0, found under USER#u0
        assert ann is not None
        print(f"\nread under the old layout: {ann.name} <{ann.email}>")
        ann.name = "Ann Lee"
        s.save(ann)  # moves it: old row deleted, new row put, guard re-pointed
        s.commit()
        table_keys(db, "saving Ann moved her", extra=["owner_pk"])

        dry = migrate(accounts, dry_run=True)
        print(f"\ndry run: {dry.found} in the previous layout")
        report = migrate(accounts, checkpoint=None)
        print(f"migrate: moved {report.moved}; check problems: {report.problems}")
        table_keys(db, "dynaorm migrate", extra=["owner_pk"])
        found = s.find(Account, email="bob@example.com")
        print(f"\nfind by email after the move: {found.name if found else None}")


if __name__ == "__main__":
    main()
