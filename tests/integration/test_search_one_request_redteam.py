"""Red team (issue 59, point 6): a search of an index that projects every attribute is one
request, its hits decoded from SearchVectors' items: each must equal what a get returns,
for every kind of field (compressed, encrypted, sets, maps, nested models, numbers,
binary, dates, None), for an entity other than the tests' ``Doc``. Embedded default and
dynoxide (DynamoDB Local has no vector index)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Annotated, Any

import pytest
from pydantic import BaseModel

from dynaorm import Encrypted, Entity, Vector, explain
from dynaorm.schema.rules.compressed import Compressed
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.recording import Requests
from tests.support.vector_models import docs, space

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")


class Inner(BaseModel):
    name: str
    tags: list[str] = []
    score: Decimal = Decimal("0")


class Rich(Entity):
    class Meta:
        table = docs
        pk = "RICH#{rid}"
        sk = "RICH"

    rid: str
    tenant_id: str = "t1"
    category: str = "rich"
    year: int = 2026
    big: Compressed[str] = ""
    small: Compressed[str] = ""
    secret: Encrypted[str] | None = None
    secret_blob: Encrypted[bytes] | None = None
    tags: set[str] = set()
    counts: set[int] = set()
    doc: dict[str, Any] = {}
    inner: Inner | None = None
    inners: list[Inner] = []
    price: Decimal = Decimal("0")
    ratio: float = 0.0
    blob: bytes = b""
    when: datetime | None = None
    flag: bool = False
    nothing: str | None = None
    embedding: Annotated[list[float], Vector(4)]


@pytest.fixture
def vdb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    if engine_of(request) == "local":
        pytest.skip("DynamoDB Local has no vector index")
    with use_tables(docs, space, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        tb.session_kind = db.session_kind
        yield tb


def _rich(n: int) -> Rich:
    return Rich(rid=f"r{n}", big="word " * 400, small="tiny", secret=f"s{n}",
                secret_blob=bytes(range(n + 1)), tags={"a", "b"}, counts={1, 2, n},
                doc={"x": [1, "two", None, {"y": Decimal("3.25")}], "z": True},
                inner=Inner(name="i", tags=["t"], score=Decimal("1.5")),
                inners=[Inner(name="j")], price=Decimal("19.99"), ratio=0.1 * n,
                blob=b"\x00\xff" * n, when=datetime(2026, 1, n + 1, 12, tzinfo=UTC),
                flag=bool(n % 2), embedding=[0.1 * (n + 1), 0.2, -0.3, 1 / 3])


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_a_search_hit_of_every_field_kind_is_the_get(vdb: TestBackend) -> None:
    saved = [_rich(n) for n in range(4)]
    with vdb.session() as w:
        for obj in saved:
            w.save(obj)
    s = vdb.session()
    search = s.search(Rich, "by_distance", vector=[0.1, 0.2, -0.3, 0.3], top=10)
    assert len(explain(search).requests) == 1
    sent = Requests(docs)
    hits = search.all()
    assert [op for op, _ in sent.calls] == ["SearchVectors"]
    found = {h.item.rid: h.item for h in hits}
    assert set(found) == {o.rid for o in saved}
    for obj in saved:
        got = s.get(Rich, rid=obj.rid)
        assert found[obj.rid] == got
        assert found[obj.rid].model_dump() == got.model_dump()
