"""A surface of your own on dynaorm's public API (docs/guide/extending.md): one operation
written once and run by a ``Session`` and an ``AsyncSession``, a session's scope carried
to another, the key grammar, and a kind of row of the surface's own in the table.

Run: ``python examples/surface.py [--endpoint-url URL]``
"""

from __future__ import annotations

import asyncio
from datetime import timedelta
from functools import partial
from typing import Any

from _support import run

from dynaorm import AsyncSession, Entity, Operation, RowKind, ScopeError, Session, Table, keys
from dynaorm.rules import call

shelf = Table("dynaorm-example-surface")
#: the rows this surface keeps in the application's table
NOTES = RowKind("surface note", "dynaorm:note", "{name}", ttl=timedelta(days=1),
                writer="examples.surface")


class Book(Entity):
    class Meta:
        table = shelf
        pk = "TENANT#{tenant_id}"
        sk = "BOOK#{book_id}"

    tenant_id: str
    book_id: str
    title: str = ""
    loans: int = 0


def lend(s: Any, **key: Any) -> Any:
    """One loan of a book, written once for both kinds of session: the book, or
    ``"refused"`` when the session's scope refuses its key."""
    try:
        book = yield partial(s.get, Book, consistent=True, **key)
    except ScopeError:
        return "refused"
    book.loans += 1
    s.save(book)
    yield s.commit
    return book


def main() -> None:
    with run(shelf, "a surface on the public API") as db:
        with db.session() as s:
            s.save(Book(tenant_id="t1", book_id="b1", title="Dune"))
        s = Session(shelf, scope={"tenant_id": "t1"})
        print(f"by a Session: loans={s.run(lend(s, tenant_id='t1', book_id='b1')).loans}")

        async def lend_async() -> Any:
            a = AsyncSession(shelf, scope=s.scope)  # (held alike)
            return await a.run(lend(a, tenant_id="t1", book_id="b1"))

        print(f"by an AsyncSession: loans={asyncio.run(lend_async()).loans}")
        print(f"another tenant's book: {s.run(lend(s, tenant_id='t2', book_id='b1'))}")

        template = keys.parse(Book.Meta.pk)
        print(f"every key of tenant t1 begins {template.scope_prefix(['tenant_id'])}")

        shelf.keeps(NOTES)
        note = {"pk": {"S": "dynaorm:note#n1"}, "sk": {"S": "dynaorm:note#n1"},
                "_type": {"S": NOTES.type}, "text": {"S": "shelved"}}
        shelf.db.driver.run(call("PutItem", {"TableName": shelf.name, "Item": note}),
                            Operation("surface.note", (shelf.name,)))
        print(f"row kinds: {[k['role'] for k in shelf.model()['table']['rows']]}")
        print(f"books a scan reads: {[b.book_id for b in db.session().scan(Book)]}")


if __name__ == "__main__":
    main()
