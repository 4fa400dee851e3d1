"""A query's request from the cached skeleton (text, names and placeholders rendered once
per key attributes and operator, values filled in) equals rendering it afresh: same keys
in the same order, same text, names and values, for every kind of key condition."""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from dynaorm import F, Session
from dynaorm.model.expressions import Placeholders
from dynaorm.read.query import Query
from tests.integration.test_typed_keys import Blob, Product, Reading
from tests.support.models import Audit, Note, User, app


def _afresh(q: Query[Any]) -> dict[str, Any]:
    """The request as _request renders it without the skeleton cache."""
    ph = Placeholders()
    request = q._source(0, ph)
    if q._consistent:
        request["ConsistentRead"] = True
    return ph.apply(request)


Build = Callable[[str], Query[Any]]
_CASES: list[Build] = [
    lambda v: Session(app).query(User, user_id=v),
    lambda v: Session(app).query(User, user_id=v).reverse(),
    lambda v: Session(app).query(User, user_id=v).consistent(),
    lambda v: Session(app).query(User, index="gsi1", org_id=v),
    lambda v: Session(app).query(User, index="gsi1", org_id=v).begins_with(username=v[:2]),
    lambda v: Session(app).query(User, index="gsi1", org_id=v).between(
        {"username": "a" + v}, {"username": "z" + v}),
    lambda v: Session(app).query(User, index="gsi1", org_id="o").gt(username=v),
    lambda v: Session(app).query(User, index="gsi1", org_id="o").lte(username=v).reverse(),
    lambda v: Session(app).query(Audit, equipment_id=v),
    lambda v: Session(app).query(Audit, equipment_id=v).eq(part=v),
    lambda v: Session(app).query(Note, note_id=v),
    lambda v: Session(Reading.__dynaorm_spec__.table).query(  # type: ignore[union-attr]
        Reading, device_id=v).gte(ts=len(v)),
    lambda v: Session(Reading.__dynaorm_spec__.table).query(  # type: ignore[union-attr]
        Reading, index="by_site", site_id=v).lt(score=Decimal(len(v)) / 4),
    lambda v: Session(Product.__dynaorm_spec__.table).query(  # type: ignore[union-attr]
        Product, Id=len(v)),
    lambda v: Session(Blob.__dynaorm_spec__.table).query(  # type: ignore[union-attr]
        Blob, digest=v.encode()),
]


@pytest.mark.parametrize("build", _CASES)
def test_a_cached_request_equals_rendering_it_afresh(build: Build) -> None:
    for value in ["first", "second", "second", "a third one"]:  # made, then from the cache
        q = build(value)
        sel = q._selection()
        got = q._request(0, sel)
        want = _afresh(build(value))
        assert got == want
        assert list(got) == list(want)
        assert got["ExpressionAttributeNames"] is not q._request(0, sel)[
            "ExpressionAttributeNames"]  # each request its own (hooks may keep them)


def test_a_filtered_or_projected_request_is_rendered_as_before(
        monkeypatch: pytest.MonkeyPatch) -> None:
    def requests() -> list[dict[str, Any]]:
        q = Session(app).query(Note, note_id="n1")
        filtered = q.filter(F("body") == "x")
        return [q._request(0, q._selection()), filtered._request(0, filtered._selection()),
                q._request(0, q._selection(), attrs=["body"]),
                q._request(0, q._selection(), count=True, types=True)]

    got = requests()
    assert "FilterExpression" in got[1] and "ProjectionExpression" in got[2]
    monkeypatch.setattr(Query, "_plain_request", lambda self, i: None)
    assert requests() == got
