"""Static typing contract, checked by ``mypy --strict`` and pyright in ``make test``
(imported by tests/system/test_docstrings.py only to prove it runs; the functions are never called).

`Session.get` is typed `Entity | None`, queries yield the entity class, pages hold it;
`version` is an `int` exactly on versioned entities.
"""

from __future__ import annotations

from typing import Any, Literal, assert_type

from dynaorm import (
    AsyncSession,
    Attempt,
    Client,
    CommitResult,
    Entity,
    F,
    Hit,
    Hits,
    Hook,
    Operation,
    Page,
    Query,
    RequestError,
    Scan,
    Search,
    Session,
    StagedUpdate,
    Table,
    Versioned,
    inspect,
)
from tests.support.models import Audit, Note, User, app
from tests.support.vector_models import Doc, docs

typed = Table("typing-check")


class Revision(Versioned):
    """A versioned entity through the base class: `version` is declared by Versioned."""

    class Meta:
        table = typed
        pk = "DOC#{doc_id}"
        sk = "REV"

    doc_id: str
    text: str = ""


class Ledger(Entity):
    """A versioned entity through Meta, declaring `version` itself for type checkers."""

    class Meta:
        table = typed
        pk = "LEDGER#{ledger_id}"
        sk = "LEDGER"
        versioned = True

    ledger_id: str
    version: int = 0


class Animal(Entity):
    """An abstract base entity (no pk) with its own Meta."""

    class Meta:
        table = typed

    name: str


class Dog(Animal):
    """A subclass with its own Meta: derived from the base's Meta, as pyright requires of
    an overriding nested class (runtime options merge exactly as for a plain `class Meta:`)."""

    class Meta(Animal.Meta):
        pk = "DOG#{name}"
        sk = "DOG"


class Puppy(Dog):
    """Two levels down: the nearest base's Meta."""

    class Meta(Dog.Meta):
        sk = "PUPPY"


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
    scan = s.scan(User, segments=4)
    assert_type(scan, Scan[User])
    assert_type(scan.filter(F("org_id") == "acme").limit(3).page_size(10), Scan[User])
    assert_type(scan.all(), list[User])
    assert_type(scan.first(), User | None)
    assert_type(scan.page(), Page[User])
    assert_type(scan.count(), int)
    assert_type(q.values("username"), list[dict[str, Any]])
    assert_type(q.keys(), list[dict[str, Any]])
    assert_type(s.get_many(User, [{"user_id": "u1"}], snapshot=True), list[User | None])

    u = s.update(User, user_id="u1").set(full_name="x").where(F("org_id") == "acme")
    assert_type(u, StagedUpdate[User])
    assert_type(u.result, User)
    loaded = User(username="a", email="a@b.c")
    assert_type(s.update(loaded).returning().result, User)


def check_version_only_on_versioned_entities() -> None:
    s = Session(typed)
    rev = s.get(Revision, doc_id="d")
    if rev is not None:
        assert_type(rev.version, int)
    for old in s.history(Revision, doc_id="d"):
        assert_type(old.version, int)
    assert_type(Ledger(ledger_id="l").version, int)
    assert_type(s.get(Dog, name="rex"), Dog | None)
    assert_type(s.get(Puppy, name="bit"), Puppy | None)
    note = Note(note_id="n")
    # Both checkers must report these lines (an unneeded ignore is an error for both).
    note.version  # type: ignore[attr-defined]  # noqa: B018
    Entity().version  # type: ignore[attr-defined]  # noqa: B018


class Spans(Hook):
    """A hook as a user writes one: typed phases, any token."""

    def on_start(self, phase: Operation | Attempt) -> object:
        if isinstance(phase, Attempt):
            assert_type(phase.request, dict[str, Any])
            assert_type(phase.number, int)
        else:
            assert_type(phase.tables, tuple[str, ...])
        return None

    def on_end(self, phase: Operation | Attempt, token: Any) -> object:
        if isinstance(phase, Attempt):
            assert_type(phase.error, RequestError | None)
            assert_type(phase.response, dict[str, Any] | None)
        return None


def check_the_client() -> None:
    db = Client("http://localhost:8000", region="eu-west-1", max_attempts=3)
    shop = Table("shop", client=db)
    assert_type(shop.db, Client)
    assert_type(db.add_hook(Spans()), Spans)
    s = Session(db)
    assert_type(s.client, Client)
    assert_type(Session(shop).get(Note, note_id="n"), Note | None)
    assert_type(s.commit(), CommitResult)
    assert_type(inspect(Note(note_id="n")).status, Literal["new", "persisted", "deleted"])


async def check_the_async_client() -> None:
    async with Client() as db:
        s = AsyncSession(db)
        assert_type(await s.get(Note, note_id="n"), Note | None)
        assert_type(await s.commit(), CommitResult)


def check_multi_type_reads() -> None:
    s = Session(app)
    q = s.query(User, Note, user_id="u")
    assert_type(q, Query[User | Note])
    for obj in q:
        assert_type(obj, User | Note)
    assert_type(s.query(User, Note, Audit, user_id="u").all(), list[User | Note | Audit])
    assert_type(s.scan(User, Note).page().items, list[User | Note])
    groups = s.query(User, Note, user_id="u").grouped()
    assert_type(groups[Note], list[Note])
    assert_type(groups[User], list[User])


async def check_async_multi_type_reads() -> None:
    s = AsyncSession(app)
    assert_type(await s.query(User, Note, user_id="u").all(), list[User | Note])
    assert_type((await s.query(User, Note, user_id="u").grouped())[User], list[User])


def check_vector_search() -> None:
    s = Session(docs)
    search = s.search(Doc, "by_meaning", vector=[0.1, 0.2, 0.3, 0.4], top=5, tenant_id="t")
    assert_type(search, Search[Doc])
    assert_type(search.where(F("category") == "news"), Search[Doc])
    hits = search.all()
    assert_type(hits, Hits[Doc])
    assert_type(hits.skipped, int)
    for hit in hits:
        assert_type(hit, Hit[Doc])
        assert_type(hit.item, Doc)
        assert_type(hit.score, float)
        assert_type(hit.item.embedding, list[float])


async def check_async_vector_search() -> None:
    s = AsyncSession(docs)
    hits = await s.search(Doc, "by_dot", vector=[0.0] * 4).where(F("year") == 2026).all()
    assert_type(hits, Hits[Doc])
    assert_type(hits[0].item, Doc)
