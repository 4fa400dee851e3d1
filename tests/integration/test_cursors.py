"""Page cursors: chained pages cover every item exactly once; foreign or edited cursors fail."""

from __future__ import annotations

import base64
import json
import re
from typing import Any

import pytest

from dynaorm import Entity, F, InvalidCursorError, Page, Query, Session
from dynaorm.testing import TestBackend
from tests.support.models import app, unsaved

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


class CPost(Entity):
    """Posts of a blog, keyed by date; the blog item and tags share the partition."""

    class Meta:
        table = app
        pk = "CBLOG#{blog}"
        sk = "POST#{date}#{slug}"
        indexes = {"gsi1": ("CAUTHOR#{author}", "{date}#{slug}")}

    blog: str
    date: str
    slug: str
    author: str
    likes: int = 0


class CBlog(Entity):
    class Meta:
        table = app
        pk = "CBLOG#{blog}"
        sk = "BLOG"

    blog: str


class CTag(Entity):
    class Meta:
        table = app
        pk = "CBLOG#{blog}"
        sk = "A#TAG#{tag}"

    blog: str
    tag: str


POSTS = [CPost(blog="b1", date=f"2024-0{1 + i % 9}-{10 + i}", slug=f"p{i}",
               author="ann" if i % 3 else "bo", likes=i * 3 % 11) for i in range(17)]


def ordered(pred: Any = lambda p: True) -> list[CPost]:
    return sorted((p for p in POSTS if pred(p)), key=lambda p: (p.date, p.slug))


@pytest.fixture
def s(db: TestBackend) -> Session:
    session = db.session()
    session.save_many([*unsaved(POSTS), CBlog(blog="b1"), *(CTag(blog="b1", tag=t) for t in "xyz"),
                       CPost(blog="b2", date="2024-01-01", slug="other", author="cy")])
    return session


def pages(q: Query[Any], first: str | None = None) -> list[Page[Any]]:
    out = [q.page(first)]
    while out[-1].cursor is not None:
        cursor = out[-1].cursor
        assert cursor is not None
        out.append(q.page(cursor))
        assert len(out) < 100, "pages never end"
    return out


def flat(ps: list[Page[Any]]) -> list[Any]:
    return [x for p in ps for x in p.items]


def test_chained_pages_cover_every_item_once(s: Session) -> None:
    base = s.query(CPost, blog="b1")
    expected = ordered(lambda p: p.blog == "b1")
    for size in (1, 2, 3, 5, 16, 17, 18, 100):
        for q, want in ((base.page_size(size), expected),
                        (base.page_size(size).reverse(), expected[::-1]),
                        (base.page_size(size).filter(F("likes") > 4),
                         [p for p in expected if p.likes > 4]),
                        (base.page_size(size).filter(F("author") == "bo").reverse(),
                         [p for p in expected if p.author == "bo"][::-1])):
            ps = pages(q)
            assert flat(ps) == want, size
            assert all(len(p.items) <= size for p in ps)
            assert all(len(p.items) == size for p in ps[:-1])  # only the last page is short
            assert ps[-1].cursor is None


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_pages_with_a_key_condition_and_an_index(s: Session) -> None:
    q = s.query(CPost, blog="b1").gte(date="2024-04").page_size(4)
    assert flat(pages(q)) == ordered(lambda p: p.blog == "b1" and p.date >= "2024-04")
    by_author = s.query(CPost, index="gsi1", author="ann").page_size(3)
    assert flat(pages(by_author)) == ordered(lambda p: p.author == "ann")
    assert flat(pages(by_author.reverse())) == ordered(lambda p: p.author == "ann")[::-1]


def test_default_page_and_empty_results(s: Session) -> None:
    page = s.query(CPost, blog="b1").page()
    assert page.items == ordered(lambda p: p.blog == "b1") and page.cursor is None
    empty = s.query(CPost, blog="nope").page()
    assert empty.items == [] and empty.cursor is None
    none = s.query(CPost, blog="b1").filter(F("likes") > 1000).page_size(2).page()
    assert none.items == [] and none.cursor is None


def test_limit_holds_across_pages(s: Session) -> None:
    q = s.query(CPost, blog="b1").limit(7).page_size(3)
    ps = pages(q)
    assert [len(p.items) for p in ps] == [3, 3, 1]
    assert flat(ps) == ordered(lambda p: p.blog == "b1")[:7]
    assert flat(pages(s.query(CPost, blog="b1").limit(4))) == ordered(
        lambda p: p.blog == "b1")[:4]


def test_a_cursor_is_stateless_and_url_safe(s: Session) -> None:
    q = s.query(CPost, blog="b1").page_size(5)
    first = q.page()
    assert first.cursor is not None
    assert re.fullmatch(r"[A-Za-z0-9_.\-]+", first.cursor)
    assert q.page(first.cursor) == q.page(first.cursor)
    # the same query built again, in another session, resumes from it
    again = Session(app).query(CPost, blog="b1").page_size(5).page(first.cursor)
    assert again.items == ordered(lambda p: p.blog == "b1")[5:10]
    # another page size is the same query: the cursor still resumes
    assert s.query(CPost, blog="b1").page_size(2).page(first.cursor).items == ordered(
        lambda p: p.blog == "b1")[5:7]


def test_a_cursor_from_another_query_is_refused(s: Session) -> None:
    q = s.query(CPost, blog="b1").page_size(3)
    cursor = q.page().cursor
    assert cursor is not None
    others: list[Query[Any]] = [
        s.query(CPost, blog="b2"),
        q.reverse(),
        q.filter(F("likes") > 1),
        q.gt(date="2024-02"),
        s.query(CTag, blog="b1"),
        s.query(CPost, CTag, blog="b1"),
        s.query(CPost, index="gsi1", author="ann"),
    ]
    for other in others:
        with pytest.raises(InvalidCursorError):
            other.page(cursor)
    # filters differing only in a value are different queries too
    a = q.filter(F("author") == "ann")
    b = q.filter(F("author") == "bo")
    ca = a.page().cursor
    assert ca is not None
    with pytest.raises(InvalidCursorError):
        b.page(ca)


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def test_a_tampered_cursor_is_refused(s: Session) -> None:
    q = s.query(CPost, blog="b1").page_size(3)
    cursor = q.page().cursor
    assert cursor is not None
    body, mac = cursor.split(".")
    decoded = json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    decoded["p"][0][-1] = "POST#2099"  # jump ahead (positions: packed key values)
    forged = _b64(json.dumps(decoded, separators=(",", ":"), sort_keys=True).encode())
    flipped = body[:-1] + ("A" if body[-1] != "A" else "B")
    bad = [forged + "." + mac, flipped + "." + mac, body + "." + mac[::-1], body, "",
           "a.b.c", "!!!.???", cursor + "x", "." + mac, body + "."]
    for text in bad:
        with pytest.raises(InvalidCursorError):
            q.page(text)
    assert issubclass(InvalidCursorError, ValueError)


def test_a_cursor_signed_with_another_secret_is_refused(
        s: Session, monkeypatch: pytest.MonkeyPatch) -> None:
    q = s.query(CPost, blog="b1").page_size(3)
    monkeypatch.setenv("DYNAORM_CURSOR_SECRET", "one")
    cursor = q.page().cursor
    assert cursor is not None
    assert q.page(cursor).items == ordered(lambda p: p.blog == "b1")[3:6]
    monkeypatch.setenv("DYNAORM_CURSOR_SECRET", "two")
    with pytest.raises(InvalidCursorError):
        q.page(cursor)
