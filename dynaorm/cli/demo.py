"""The quickstart, narrated: what ``dynaorm demo`` (and ``make demo``) runs.

It needs no AWS account: by default it runs on moto's in-process DynamoDB. Read it top to
bottom: every step prints what it did and the items that are now stored.
"""

import sys
from contextlib import ExitStack
from typing import TextIO

from pydantic import Field

from dynaorm import GSI, Entity, Session, Table, Unique, UniqueConstraintError, ksuid
from dynaorm.jobs.checking import check_table
from dynaorm.testing import TestBackend, moto_backend, use_tables

# -- 1. the model: one table, two entity types --------------------------------------------
demo_table = Table("dynaorm-demo", indexes=[GSI("gsi1", pk="gsi1pk", sk="gsi1sk")])


class User(Entity):
    """A user: unique username and (case-insensitive) email, listed per organisation."""

    class Meta:
        table = demo_table
        pk = "USER#{user_id}"
        sk = "PROFILE"
        unique = ("username", Unique("email", normalize=str.lower))
        indexes = {"gsi1": ("ORG#{org_id}", "USER#{username}")}

    user_id: str = Field(default_factory=ksuid)
    org_id: str
    username: str
    email: str


class Document(Entity):
    """A versioned document: a latest copy plus one immutable row per saved version."""

    class Meta:
        table = demo_table
        pk = "DOC#{doc_id}"
        sk = "BODY"
        versioned = True

    doc_id: str
    title: str
    body: str = ""
    version: int = 0


class _Narrator:
    """Prints numbered steps and the table's items."""

    def __init__(self, out: TextIO, backend: TestBackend):
        self.out = out
        self.backend = backend
        self.step = 0

    def say(self, text: str) -> None:
        print(text, file=self.out)

    def heading(self, text: str) -> None:
        self.step += 1
        self.say(f"\n{self.step}. {text}")

    def items(self) -> None:
        table = self.backend.table
        rows = [(str(i[table.pk]), str(i.get(table.sk or "", "")),
                 str(i.get(table.type_attr, ""))) for i in self.backend.scan()]
        w_pk = max(len(r[0]) for r in rows)
        w_sk = max(len(r[1]) for r in rows)
        self.say(f"   stored items ({len(rows)}):")
        for pk, sk, kind in rows:
            self.say(f"     {pk:<{w_pk}}  {sk:<{w_sk}}  {kind}")


def run_demo(endpoint_url: str | None = None, *, region: str | None = None,
             out: TextIO | None = None) -> None:
    """Run the quickstart on moto (or on ``endpoint_url``), narrating to ``out``."""
    stream = out or sys.stdout
    if region is not None:
        demo_table.region = region
    where = endpoint_url or "the in-process moto backend"
    with ExitStack() as stack:
        if endpoint_url is None:
            stack.enter_context(moto_backend())
        n = _Narrator(stream, stack.enter_context(use_tables(demo_table,
                                                             endpoint_url=endpoint_url)))
        n.say(f"dynaorm demo on {where}")
        n.heading(f"Created table {demo_table.name!r} (pk, sk, GSI gsi1) for entities "
                  f"{', '.join(demo_table.entities)}")
        _users(n)
        _versions(n)
        n.heading("Audit (what `dynaorm check` does)")
        checked = check_table(demo_table)
        n.say(f"   scanned {checked.scanned} items: {len(checked.problems)} problem(s)")
        for problem in checked.problems:
            n.say(f"   {problem}")
        n.say("\nDone: the table is deleted again.")


def _users(n: _Narrator) -> None:
    ada = User(org_id="acme", username="ada", email="Ada@Example.com")
    bob = User(org_id="acme", username="bob", email="bob@example.com")
    with Session(demo_table) as s:
        s.save(ada)
        s.save(bob)
    n.heading("Registered ada and bob in one transaction (each user + 2 guard items)")
    n.items()

    n.heading("Registering a third user with ada's email in another case")
    try:
        with Session(demo_table) as s:
            s.save(User(org_id="acme", username="eve", email="ADA@example.com"))
    except UniqueConstraintError as exc:
        n.say(f"   refused: UniqueConstraintError(field={exc.field!r}, value={exc.value!r})")
        n.say(f"   message: {exc}")

    n.heading("Changing bob's email (old guard deleted, new guard put: one transaction)")
    s = Session(demo_table)
    found = s.find(User, email="BOB@example.com")
    assert found is not None
    found.email = "robert@example.com"
    s.save(found)
    s.commit()
    emails = [str(i["pk"]) for i in n.backend.scan() if str(i["pk"]).startswith("email#")]
    n.say(f"   email guards now: {', '.join(emails)}")
    by_new = s.find(User, email="Robert@Example.com")
    n.say(f"   find(User, email='Robert@Example.com') -> {by_new and by_new.username}")

    n.heading("Query: users of org acme on gsi1")
    names = [u.username for u in s.query(User, index="gsi1", org_id="acme").all()]
    n.say(f"   query(User, index='gsi1', org_id='acme') -> {names}")

    n.heading("Deleting ada (her guard items go in the same transaction)")
    loaded = s.get(User, user_id=ada.user_id)
    assert loaded is not None
    s.delete(loaded)
    s.commit()
    n.items()
    left = [str(i["pk"]) for i in n.backend.scan() if str(i["pk"]).endswith("#ada")
            or i.get("owner_pk") == f"USER#{ada.user_id}"]
    n.say(f"   guard items left for ada: {len(left)}")


def _versions(n: _Narrator) -> None:
    s = Session(demo_table)
    doc = Document(doc_id="readme", title="Hello")
    for body in ("", "first draft", "second draft"):
        doc.body = body
        s.save(doc)
        s.commit()
    n.heading(f"Saved document 'readme' three times (now version {doc.version})")
    n.items()
    rows = s.history(Document, doc_id="readme").all()
    n.say("   history(Document, doc_id='readme'):")
    for row in rows:
        n.say(f"     v{row.version}: title={row.title!r} body={row.body!r}")
    latest = s.get(Document, doc_id="readme")
    n.say(f"   get(Document, doc_id='readme') -> version {latest and latest.version}")


if __name__ == "__main__":  # pragma: no cover
    run_demo()
