"""``dynaorm.langgraph.Store`` (contract 23): LangGraph's long-term memory store in the
application's table, proven against LangGraph's own ``InMemoryStore`` by random batches of
every op type (puts, deletes, gets, searches with filters, pages and queries,
namespace listings), two tenants at once; then TTL with its refresh on read, tenant
isolation, compression, and the model, IAM, exports and ``check`` that cover its rows.

On DynamoDB Local (no vector index) the semantic half skips; ``db``'s async variant runs
every batch through ``Store.abatch`` on an ``AsyncSession``."""

from __future__ import annotations

import hashlib
import json
import uuid
import zlib
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from langgraph.store.base import (
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    SearchOp,
)
from langgraph.store.memory import InMemoryStore

from dynaorm import DynaormError, Session, Table, TableNotFoundError, VectorIndex
from dynaorm.aio.blocking import loop
from dynaorm.langgraph import Store
from dynaorm.testing import TestBackend, use_tables, worker_suffix
from tests.conftest import engine_of, wire_of
from tests.support.examples import examples

#: (what it asserts depends on the engine: it runs on each)
pytestmark = [pytest.mark.engines("moto", "local", "dynoxide")]

DIMS = 8
plain = Table("lg_store", ttl="expires")
vectors = Table("lg_store_vectors", vector_indexes=[
    VectorIndex("recall", attribute="embedding", dimensions=DIMS, partition="tenant_id")])
bare = Table("lg_store_bare")
INDEX: Any = {"dims": DIMS, "fields": ["text"]}


def embed(texts: Sequence[str]) -> list[list[float]]:
    """A stand-in embedding: a direction drawn from the text's hash."""
    return [[b / 255 - 0.5 for b in hashlib.sha256(t.encode()).digest()[:DIMS]]
            for t in texts]


INDEX["embed"] = embed
# (declared with the tables, as a user declares them: table.model() lists their rows)
Store(plain, scope={"tenant_id": "-"})
Store(vectors, scope={"tenant_id": "-"}, index=INDEX)
Store(bare)


@pytest.fixture
def tb(db: TestBackend, request: pytest.FixtureRequest) -> Iterator[TestBackend]:
    """The store tables, fresh, on the engine of ``db`` (its kind of session too); the
    vector table where the engine has vector indexes."""
    tables = (plain, bare) if engine_of(request) == "local" else (plain, bare, vectors)
    with use_tables(*tables, endpoint_url=db.endpoint_url, name_suffix=worker_suffix(),
                    wire=wire_of(request)) as found:
        found.session_kind = db.session_kind
        yield found


def run(tb: TestBackend, store: Store, ops: Sequence[Op]) -> list[Any]:
    """``ops`` as one batch: ``abatch`` on an AsyncSession in the async variant."""
    if tb.session_kind == "async":
        return loop().run_until_complete(store.abatch(ops))
    return store.batch(ops)


def semantic(request: pytest.FixtureRequest) -> None:
    if engine_of(request) == "local":
        pytest.skip("DynamoDB Local has no vector index")


# -- the differential test ----------------------------------------------------------------
LABELS = st.sampled_from(["a", "a-b", "b", "c#d é"])
NAMESPACES = st.lists(LABELS, min_size=1, max_size=3).map(tuple)
KEYS = st.sampled_from(["k", ".x", "k..y", "#"])
VALUES = st.fixed_dictionaries(
    {"n": st.integers(0, 2), "tag": st.sampled_from(["red", "blue"])},
    optional={"m": st.fixed_dictionaries({"z": st.integers(0, 1)}),
              "l": st.lists(st.integers(0, 1), max_size=2), "f": st.just(0.1)})
FILTERS = st.sampled_from([
    None, {"n": 1}, {"n": {"$gt": 1}}, {"n": {"$lte": 1, "$ne": 0}}, {"tag": "red"},
    {"m": {"z": 1}}, {"l": [0, 1]}, {"tag": {"$eq": "blue"}, "n": {"$gte": 2}}])
PATTERNS = st.lists(LABELS | st.just("*"), min_size=1, max_size=2).map(tuple)


def _put(namespace: tuple[str, ...], key: str, value: dict[str, Any] | None, n: int) -> PutOp:
    text = f"{'/'.join(namespace)}|{key}|{n}"  # (each item its own text: no tied scores)
    return PutOp(namespace, key, None if value is None else {**value, "text": text})


def _list(prefix: tuple[str, ...] | None, suffix: tuple[str, ...] | None,
          depth: int | None, limit: int, offset: int) -> ListNamespacesOp:
    conditions = [MatchCondition("prefix", prefix)] if prefix else []
    conditions += [MatchCondition("suffix", suffix)] if suffix else []
    return ListNamespacesOp(tuple(conditions), depth, limit, offset)


PUTS = st.builds(_put, NAMESPACES, KEYS, VALUES, st.integers(0, 9))
OPS = st.one_of(
    st.builds(_put, NAMESPACES, KEYS, st.none() | VALUES, st.integers(0, 9)), PUTS, PUTS,
    st.builds(GetOp, NAMESPACES, KEYS),
    st.builds(SearchOp, st.lists(LABELS, max_size=2).map(tuple), FILTERS,
              st.integers(0, 6), st.integers(0, 3), st.none() | st.sampled_from(["q1", "q2"])),
    st.builds(_list, st.none() | PATTERNS, st.none() | PATTERNS,
              st.none() | st.integers(1, 2), st.integers(1, 5), st.integers(0, 2)))
#: batches of ops, each for tenant 0 or 1
RUNS = st.lists(st.tuples(st.integers(0, 1), st.lists(OPS, min_size=1, max_size=6)),
                min_size=1, max_size=8)


#: labels that begin alike, keys holding the separators: the prefix is a whole label
NEIGHBOURS = [(0, [_put(("a-b",), "k", {"n": 0, "tag": "red"}, 1),
                   _put(("a", "b"), ".x", {"n": 1, "tag": "red"}, 2),
                   _put(("a",), "k..y", {"n": 2, "tag": "blue"}, 3)]),
              (0, [SearchOp(("a",)), SearchOp(("a",), query="q1"), SearchOp(("a", "b")),
                   _list(("a",), None, None, 10, 0), GetOp(("a",), "k..y")])]


def _order(item: Item) -> str:
    """The store's order of a search without a query: its sort key's."""
    return ".".join(item.namespace) + ".." + item.key


def expected(model: InMemoryStore, ops: Sequence[Op]) -> list[Any]:
    """What ``InMemoryStore`` answers, where it defines the answer: a namespace is listed
    while it holds an item (InMemoryStore also lists one emptied, or only read by a get);
    a search without a query is in the store's own order (InMemoryStore's is the order
    of insertion), the same items, paged alike."""
    for namespace in [ns for ns, items in model._data.items() if not items]:
        del model._data[namespace]
    pre: list[Any] = []
    for op in ops:  # (a batch's reads see the store as it was before the batch)
        if isinstance(op, ListNamespacesOp):
            pre.append(model.batch([op]))
        elif isinstance(op, SearchOp) and not (op.query and model.embeddings):
            every = model.batch([op._replace(limit=10**6, offset=0)])[0]
            pre.append([sorted(every, key=_order)[op.offset:op.offset + op.limit]])
        else:
            pre.append(None)
    answers = model.batch(ops)
    return [answer if first is None else first[0] for first, answer in zip(pre, answers,
                                                                             strict=True)]


def _plain(result: Any) -> Any:
    if isinstance(result, Item):
        return (result.namespace, result.key, result.value)
    return [_plain(r) for r in result] if isinstance(result, list) else result


def _scores(result: Any) -> list[float | None]:
    return [getattr(r, "score", None) for r in result] if isinstance(result, list) else []


def differential(tb: TestBackend, table: Table, index: Any, runs: list[Any]) -> None:
    tenants = [f"t{uuid.uuid4().hex[:8]}" for _ in range(2)]
    stores = [Store(table, scope={"tenant_id": t}, index=index) for t in tenants]
    models = [InMemoryStore(index=index) for _ in tenants]
    for who, ops in runs:
        want = expected(models[who], ops)
        got = run(tb, stores[who], ops)
        assert _plain(got) == _plain(want), ops
        for mine, theirs in zip(got, want, strict=True):
            assert _scores(mine) == pytest.approx(_scores(theirs), abs=1e-5), ops


@settings(max_examples=examples(40), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(runs=RUNS)
@example(runs=NEIGHBOURS)
def test_batches_answer_as_in_memory_store_does(tb: TestBackend, runs: list[Any]) -> None:
    """Gets, puts, deletes, filtered and paged searches and namespace listings, in random
    batches of two tenants, answer as InMemoryStore does (items, order, pages)."""
    differential(tb, plain, None, runs)


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
@settings(max_examples=examples(25), deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(runs=RUNS)
@example(runs=NEIGHBOURS)
def test_semantic_search_ranks_as_in_memory_store_does(
        tb: TestBackend, request: pytest.FixtureRequest, runs: list[Any]) -> None:
    """With ``index=``, a search with a query ranks by the vector index as InMemoryStore
    ranks by cosine similarity: the same items, order and scores, under prefixes, filters
    and offsets."""
    semantic(request)
    differential(tb, vectors, INDEX, runs)


# -- tenants ----------------------------------------------------------------------------
def test_a_tenant_never_reads_lists_searches_or_deletes_another_s(tb: TestBackend) -> None:
    one, two = (Store(plain, scope={"tenant_id": t}) for t in ("t1", "t2"))
    run(tb, one, [PutOp(("users", "u1"), "prefs", {"theme": "dark"})])
    run(tb, two, [PutOp(("users", "u1"), "prefs", None)])  # a delete of its own key only
    assert run(tb, two, [GetOp(("users", "u1"), "prefs"), SearchOp(()),
                         ListNamespacesOp()]) == [None, [], []]
    (got,) = run(tb, one, [GetOp(("users", "u1"), "prefs")])
    assert got.value == {"theme": "dark"}
    keys = {(i["pk"]["S"], i["sk"]["S"]) for i in tb.scan_raw(plain)}
    assert keys == {("LANGGRAPH#STORE#t1#", "users.u1..prefs")}


def test_a_scope_value_with_the_key_s_separator_is_refused(tb: TestBackend) -> None:
    """``t1#x`` would render another tenant's partition: the key grammar refuses it."""
    with pytest.raises(DynaormError, match="tenant_id"):
        run(tb, Store(plain, scope={"tenant_id": "t1#x"}), [SearchOp(())])


@pytest.mark.dynaorm_index_lag(0, reason="searches what it has just saved")
def test_a_tenant_s_semantic_search_finds_only_its_own(
        tb: TestBackend, request: pytest.FixtureRequest) -> None:
    semantic(request)
    one, two = (Store(vectors, scope={"tenant_id": t}, index=INDEX) for t in ("t1", "t2"))
    run(tb, one, [PutOp(("m",), "k", {"text": "train"})])
    run(tb, two, [PutOp(("m",), "j", {"text": "plane"})])
    (hits,) = run(tb, two, [SearchOp(("m",), query="train")])
    assert [(h.key, round(h.score, 5)) for h in hits] == [("j", round(
        _cosine(embed(["train"])[0], embed(["plane"])[0]), 5))]


def _cosine(a: list[float], b: list[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return float(dot / (sum(x * x for x in a) ** 0.5 * sum(y * y for y in b) ** 0.5))


# -- TTL ----------------------------------------------------------------------------------
def _expires(tb: TestBackend, store: Store, path: str) -> datetime | None:
    obj = Session(plain, scope=store.scope).get(store.entity, consistent=True, path=path,
                                                **store.scope)
    return None if obj is None else obj.expires


def test_ttl_is_the_table_s_and_a_read_refreshes_it(tb: TestBackend) -> None:
    store = Store(plain, scope={"tenant_id": "t1"}, ttl={"default_ttl": 60})
    now = datetime.now(UTC)
    store_put = store.put if tb.session_kind == "sync" else None
    if store_put is None:
        loop().run_until_complete(store.aput(("a",), "k", {"v": 1}))
        loop().run_until_complete(store.aput(("a",), "never", {"v": 2}, ttl=None))
    else:
        store_put(("a",), "k", {"v": 1})
        store_put(("a",), "never", {"v": 2}, ttl=None)
    stored = _expires(tb, store, "a..k")
    assert stored is not None and abs(stored - (now + timedelta(minutes=60))) < timedelta(
        seconds=30)
    assert _expires(tb, store, "a..never") is None
    # an item near its end: a get without refresh leaves it, a get or a search refreshes
    soon = datetime.now(UTC).replace(microsecond=0) + timedelta(seconds=90)
    with Session(plain, scope=store.scope) as s:
        s.update(store.entity, path="a..k", tenant_id="t1").set(expires=soon)
    run(tb, store, [GetOp(("a",), "k", refresh_ttl=False)])
    assert _expires(tb, store, "a..k") == soon
    run(tb, store, [GetOp(("a",), "k")])
    refreshed = _expires(tb, store, "a..k")
    assert refreshed is not None and refreshed > soon + timedelta(minutes=50)
    with Session(plain, scope=store.scope) as s:
        s.update(store.entity, path="a..k", tenant_id="t1").set(expires=soon)
    run(tb, store, [SearchOp(("a",), refresh_ttl=False)])
    assert _expires(tb, store, "a..k") == soon
    run(tb, store, [SearchOp(("a",))])
    assert (_expires(tb, store, "a..k") or soon) > soon + timedelta(minutes=50)


def test_an_expired_item_is_not_read_listed_nor_searched(tb: TestBackend) -> None:
    store = Store(plain, scope={"tenant_id": "t1"})
    run(tb, store, [PutOp(("gone",), "k", {"v": 1}, ttl=-1), PutOp(("kept",), "k", {"v": 2})])
    assert _plain(run(tb, store, [GetOp(("gone",), "k"), SearchOp(()), ListNamespacesOp()])
                  ) == [None, [(("kept",), "k", {"v": 2})], [("kept",)]]


class _Racing(Store):
    """A store whose batch meets another writer deleting ``a..k`` after its reads."""

    def _write(self, s: Any, writes: Any) -> Any:
        Session(plain, scope=self.scope).delete_many(self.entity, [
            {"path": "a..k", **self.scope}])
        return super()._write(s, writes)


def test_a_refresh_of_an_item_deleted_meanwhile_is_dropped(tb: TestBackend) -> None:
    """The get read it, another writer deleted it before the refresh: the batch still
    answers what it read, and the refresh neither fails nor brings the item back."""
    store = _Racing(plain, scope={"tenant_id": "t1"})
    Store(plain, scope={"tenant_id": "t1"}).batch([PutOp(("a",), "k", {"v": 1}, ttl=5)])
    (got,) = run(tb, store, [GetOp(("a",), "k")])
    assert got.value == {"v": 1} and store.batch([GetOp(("a",), "k")]) == [None]
    assert tb.scan_raw(plain) == []


@pytest.mark.engines("moto")
@pytest.mark.parametrize("ttl", [timedelta(minutes=60), 3600, {"default_ttl": 60}])
def test_ttl_is_a_timedelta_seconds_or_langgraphs_ttl_config(tb: TestBackend, ttl: Any) -> None:
    """Issue 81: the store takes the saver's forms too (a length: refreshed on read)."""
    store = Store(plain, scope={"tenant_id": "t1"}, ttl=ttl)
    now = datetime.now(UTC)
    if tb.session_kind == "async":
        loop().run_until_complete(store.aput(("a",), "k", {"v": 1}))
    else:
        store.put(("a",), "k", {"v": 1})
    stored = _expires(tb, store, "a..k")
    assert stored is not None and abs(stored - (now + timedelta(minutes=60))) < timedelta(
        seconds=30)


@pytest.mark.parametrize("ttl, error", [("60", TypeError), (0, ValueError), (
    {"default_ttl": 60, "strategy": "delete"}, ValueError), ({"refresh_on_read": "yes"},
                                                             TypeError)])
def test_a_ttl_no_form_takes_is_refused_when_the_store_is_made(
        ttl: Any, error: type[Exception]) -> None:
    with pytest.raises(error):
        Store(plain, scope={"tenant_id": "-"}, ttl=ttl)


@pytest.mark.engines("moto")
def test_a_put_or_delete_on_a_missing_table_is_table_not_found(backend: str | None) -> None:
    """Issue 81: a put said BulkWriteError ("may have been applied") where a get says
    TableNotFoundError; nothing was written, and the table is missing: the same error."""
    missing = Table(f"lg_store_missing{worker_suffix()}", ttl="expires").connect(backend)
    store = Store(missing)
    with pytest.raises(TableNotFoundError):
        store.get(("a",), "k")
    with pytest.raises(TableNotFoundError):
        store.put(("a",), "k", {"v": 1})
    with pytest.raises(TableNotFoundError):
        store.delete(("a",), "k")


def test_ttl_needs_the_table_s_ttl_attribute() -> None:
    with pytest.raises(DynaormError, match="TTL attribute"):
        Store(bare, ttl={"default_ttl": 5})
    with pytest.raises(NotImplementedError):
        Store(bare).put(("a",), "k", {"v": 1}, ttl=5)


# -- rows, compression, limits ------------------------------------------------------------
def test_a_large_value_is_stored_compressed(tb: TestBackend) -> None:
    store = Store(bare)
    big = {"text": "memory " * 2000}
    run(tb, store, [PutOp(("docs",), "big", big), PutOp(("docs",), "small", {"v": 1})])
    raw = {i["sk"]["S"]: i["value"] for i in tb.scan_raw(bare)}
    assert json.loads(zlib.decompress(raw["docs..big"]["B"]))["S"] == json.dumps(big)
    assert raw["docs..small"] == {"S": '{"v": 1}'}
    assert run(tb, store, [GetOp(("docs",), "big")])[0].value == big


def test_a_batch_of_more_than_a_transaction_s_writes_commits_them_all(tb: TestBackend) -> None:
    store = Store(bare)
    run(tb, store, [PutOp(("n", str(i)), "k", {"i": i}) for i in range(130)])
    assert len(run(tb, store, [SearchOp(("n",), limit=1000)])[0]) == 130
    run(tb, store, [PutOp(("n", str(i)), "k", None) for i in range(130)])
    assert run(tb, store, [ListNamespacesOp()]) == [[]]


def test_namespaces_are_validated_as_langgraph_validates_them(tb: TestBackend) -> None:
    with pytest.raises(InvalidNamespaceError):
        run(tb, Store(bare), [GetOp(("a.b",), "k")])


def test_a_store_needs_a_table_it_can_keep_it_in() -> None:
    with pytest.raises(DynaormError, match="sort key"):
        Store(Table("lg_store_no_sk", sk=None))
    with pytest.raises(DynaormError, match="vector index of 3 dimensions"):
        Store(vectors, scope={"tenant_id": "-"}, index={"dims": 3, "embed": embed})
    with pytest.raises(DynaormError, match="one scope's fields"):
        Store(plain, scope={"org": "o1"})


def test_the_model_iam_and_check_cover_the_store_s_rows(tb: TestBackend) -> None:
    from dynaorm.formats.iam import to_format
    from dynaorm.jobs.checking import check_table

    (memory,) = [e for e in plain.model()["entities"] if e["name"] == "LangGraphMemory"]
    assert memory["pk"] == "LANGGRAPH#STORE#{tenant_id}#" and memory["ttl_field"] == "expires"
    policy, unbound = to_format(plain.model(), "write", "tenant_id")
    assert "LANGGRAPH#STORE#${aws:PrincipalTag/tenant_id}#" in json.dumps(policy)
    assert unbound == []
    run(tb, Store(plain, scope={"tenant_id": "t1"}), [PutOp(("a",), "k", {"v": 1})])
    assert check_table(plain).problems == []


def test_an_export_has_a_dataset_of_the_store_s_items(tb: TestBackend, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow", reason="dynaorm[export] is not installed")
    from dynaorm.jobs import export, run_local

    run(tb, Store(bare), [PutOp(("a",), "k", {"v": 1}), PutOp(("b", "c"), "j", {"v": 2})])
    report = run_local(export(bare, tmp_path))
    assert sum(report.rows.values()) == 2 and report.unclaimed == {}
