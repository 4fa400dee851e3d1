"""Red team of composed transforms (contract 22: "encoded in the order their rules apply,
decoded in the reverse order"): a user's two rules registered through the public
``dynaorm.register_rule`` in both orders (tests/support/user_rules.py: reverse then
base64, base64 then reverse) on one field with ``Compressed`` (a short value is stored
transformed by them, a long one compressed), and the same inside ``Encrypted``, on a
versioned entity. Hypothesis draws unicode text around ``min_size``; decode must invert
encode on every read path: get, query, scan, get_many, ``values()``, a projection, a
stream image, history, an export, an object pickled and unpickled, a forked child
process, and ``AsyncSession`` in many event loops."""

from __future__ import annotations

import asyncio
import itertools
import multiprocessing
import pickle
import tempfile
from collections.abc import Iterator
from typing import Annotated, Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import AsyncSession, Compressed, Encrypted, Entity, Session, StaticKeyring, Table
from dynaorm.jobs import export, run_local
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import wire_of
from tests.support.examples import examples
from tests.support.exports import read_back
from tests.support.user_rules import B64_1, B64_2, REV1, REV2

C = Compressed(min_size=24)
stack = Table("red_stack", keyring=StaticKeyring(b"s" * 32))


class Layered(Entity):
    class Meta:
        table = stack
        pk = "LAY#{lid}"
        sk = "LAY"
        versioned = True

    lid: str
    first: Annotated[str, REV1, B64_1, C] = ""
    second: Annotated[str, REV2, B64_2, C] = ""
    sealed: Encrypted[Annotated[str, REV1, B64_1, C]] = ""
    version: int = 0


FIELDS = ("first", "second", "sealed")
_ids = itertools.count()
texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=40)


@pytest.fixture
def sb(backend: str | None, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    with use_tables(stack, endpoint_url=backend, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as tb:
        yield tb


def _raw(tb: TestBackend, pk: str, sk: str) -> dict[str, Any]:
    return next(i for i in tb.scan_raw() if (i["pk"]["S"], i["sk"]["S"]) == (pk, sk))


@pytest.mark.sync_only
@settings(max_examples=examples(30), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(a=st.tuples(texts, texts, texts), b=st.tuples(texts, texts, texts))
def test_decode_inverts_encode_on_every_read_path(sb: TestBackend, a: tuple[str, ...],
                                                  b: tuple[str, ...]) -> None:
    lid = f"l{next(_ids)}"
    one = Layered(lid=lid, **dict(zip(FIELDS, a, strict=True)))
    with Session(stack) as s:
        s.save(one)
    two = Session(stack).get(Layered, lid=lid)
    assert two == one.model_copy(update={"version": 1})
    for name, value in zip(FIELDS, b, strict=True):
        setattr(two, name, value)
    with Session(stack) as s:
        s.save(two)
    s = Session(stack)
    now = s.get(Layered, lid=lid)
    assert now == two
    assert s.query(Layered, lid=lid).all() == [two]
    assert s.get_many(Layered, [{"lid": lid}]) == [two]
    assert [x for x in s.scan(Layered).consistent() if x.lid == lid] == [two]
    assert s.query(Layered, lid=lid).values(*FIELDS) == [{f: getattr(two, f) for f in FIELDS}]
    assert s.query(Layered, lid=lid).values("second") == [{"second": two.second}]
    assert [tuple(getattr(v, f) for f in FIELDS) for v in s.history(Layered, lid=lid)] == (
        [a] if a == b else [a, b])  # (an unchanged save writes nothing)
    assert s.get(Layered, lid=lid, version=1) == one.model_copy(update={"version": 1})
    raw = _raw(sb, f"LAY#{lid}", "v0_LAY")
    (change,) = stack.changes([{"eventName": "MODIFY", "dynamodb": {"NewImage": raw}}])
    assert change.new == two
    assert pickle.loads(pickle.dumps(now)) == two


def test_an_export_writes_the_plain_values(sb: TestBackend) -> None:
    rows = [Layered(lid=f"x{i}", first=t, second=t[::-1], sealed=t + "!")
            for i, t in enumerate(["", "short", "\u00e9t\u00e9 " * 9, "long text " * 10])]
    with Session(stack) as s:
        for r in rows:
            s.save(r)
    with tempfile.TemporaryDirectory() as out:
        run_local(export(stack, out, encrypted="decrypt"))
        got = sorted(read_back(out, "Layered"), key=lambda r: r["lid"])
    assert [{f: g[f] for f in FIELDS} for g in got] == [
        {f: getattr(r, f) for f in FIELDS} for r in rows]


def _child(lid: str, out: Any) -> None:
    try:
        got = Session(stack).get(Layered, lid=lid, consistent=True)
        out.put(("ok", None if got is None else {f: getattr(got, f) for f in FIELDS}))
    except BaseException as exc:  # (reported to the parent)
        out.put(("error", repr(exc)))


@pytest.mark.sync_only
def test_a_forked_child_reads_the_plain_values(sb: TestBackend, backend: str | None) -> None:
    if backend is None:
        pytest.skip("moto runs in this process only")
    obj = Layered(lid="fork", first="a" * 30, second="b", sealed="c" * 40)
    with Session(stack) as s:
        s.save(obj)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_child, args=("fork", out))
    child.start()
    child.join(60)
    assert out.get(timeout=5) == ("ok", {f: getattr(obj, f) for f in FIELDS})


@pytest.mark.sync_only
def test_many_event_loops_read_the_plain_values(sb: TestBackend, backend: str | None) -> None:
    if backend is None:
        pytest.skip("AsyncSession needs an endpoint (moto runs in this process only)")
    objs = [Layered(lid=f"a{i}", first="f" * (20 + i), second="s" * i, sealed="x" * (i * 9))
            for i in range(5)]
    with Session(stack) as s:
        for o in objs:
            s.save(o)

    async def read(i: int) -> Any:
        async with AsyncSession(stack) as s:
            got = await s.get(Layered, lid=f"a{i}")
            many = await s.get_many(Layered, [{"lid": f"a{j}"} for j in range(5)])
            return got, many, await s.query(Layered, lid=f"a{i}").values(*FIELDS)

    for i in range(5):  # (a new loop each time)
        got, many, values = asyncio.run(read(i))
        assert got == objs[i].model_copy(update={"version": 1})
        assert [m.first for m in many] == [o.first for o in objs]
        assert values == [{f: getattr(objs[i], f) for f in FIELDS}]
