"""AsyncSession: the quickstart on asyncio (guide "Async").

Runs on a moto server started for the run (moto's in-process mock cannot serve
aiobotocore), or on any endpoint given with ``--endpoint-url`` / ``AWS_ENDPOINT_URL_DYNAMODB``
(DynamoDB Local, for example). Needs ``pip install "dynaorm[async]"``.
"""

from __future__ import annotations

import asyncio

from _support import served
from pydantic import Field

from dynaorm import AsyncSession, Entity, Table, Unique, UniqueConstraintError, ksuid
from dynaorm.aio import close

app = Table("dynaorm-example-async")


class User(Entity):
    class Meta:
        table = app
        pk = "USER#{user_id}"
        sk = "PROFILE"
        unique = (Unique("email", normalize=str.lower),)

    user_id: str = Field(default_factory=ksuid)
    name: str
    email: str


class Message(Entity):
    class Meta:
        table = app
        pk = "ROOM#{room}"
        sk = "MSG#{sent}#{message_id}"

    room: str
    sent: str
    message_id: str = Field(default_factory=ksuid)
    author: str
    body: str


def show(code: str, rows: list[str]) -> None:
    """Print some code and its results, one per line."""
    print(f"\n>>> {code}")
    for row in rows or ["(nothing)"]:
        print(f"    {row}")


async def main() -> None:
    """Stage, commit, read concurrently, page with cursors: all awaited."""
    async with AsyncSession(app) as s:  # commits on normal exit
        s.save(User(user_id="ada", name="Ada", email="ada@example.com"))
        s.save(User(user_id="bob", name="Bob", email="bob@example.com"))

    s = AsyncSession(app)
    await s.save_many([Message(room="lobby", sent=f"2024-05-01T10:{i:02}", author="ada",
                               body=f"hello {i}") for i in range(12)])

    ada, bob = await asyncio.gather(s.get(User, user_id="ada"), s.get(User, user_id="bob"))
    show('await asyncio.gather(s.get(User, user_id="ada"), s.get(User, user_id="bob"))',
         [repr(u.name if u else None) for u in (ada, bob)])

    found = await s.find(User, email="BOB@example.com")
    show('await s.find(User, email="BOB@example.com")', [repr(found and found.user_id)])

    s.save(User(user_id="eve", name="Eve", email="ADA@example.com"))
    try:
        await s.commit()
    except UniqueConstraintError as exc:
        show("await s.commit()  # Eve takes Ada's email", [type(exc).__name__])

    q = s.query(Message, room="lobby").page_size(5)
    page = await q.page()
    first = [m.body for m in page.items]
    more = [m.body for m in (await q.page(page.cursor)).items] if page.cursor else []
    show('await s.query(Message, room="lobby").page_size(5).page()', first)
    show("await q.page(page.cursor)", more)

    latest = [m.body async for m in s.query(Message, room="lobby").reverse().limit(3)]
    show('[m.body async for m in s.query(Message, room="lobby").reverse().limit(3)]', latest)
    show('await s.query(Message, room="lobby").count()',
         [str(await s.query(Message, room="lobby").count())])
    await close()  # this event loop's clients


if __name__ == "__main__":
    with served(app, "AsyncSession quickstart"):
        asyncio.run(main())
