"""Vector search without an engine (contract 21): vector indexes as a table declares them,
``Vector`` fields, what an entity definition refuses, what a search refuses before
sending, the request it sends, where it sends it, and the adversary: a hostile server
answering ``SearchVectors`` on both wires, sync and async. The engines' side is
``tests/integration/test_vectors.py``."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Annotated, Any

import pytest
from pydantic import ValidationError

from dynaorm import (
    AsyncSession,
    BadAnswerError,
    DynaormError,
    Encrypted,
    Entity,
    F,
    InvalidValueError,
    ItemDecodeError,
    RequestError,
    Session,
    Table,
    Vector,
    VectorIndex,
)
from dynaorm.aio.blocking import BlockingAsyncSession
from dynaorm.cli.main import describe_entity
from dynaorm.schema.rules import SURFACES
from dynaorm.schema.rules.vectors import Vectors
from tests.support.hostile import Reply, answer, json_body, serving
from tests.support.vector_models import DIMS, Doc, Page, docs

F32_MAX = 3.4028234663852886e38


# -- vector indexes as a table declares them ------------------------------------------------
def test_a_table_creates_its_vector_indexes_with_their_search_schema() -> None:
    table = Table("t_vectors", key_types={"year": "N"}, vector_indexes=[
        VectorIndex("by_meaning", attribute="emb", dimensions=768, partition="tenant",
                    filters=["year", "kind"], projection=["title"])])
    definition = table.definition()
    assert definition["VectorIndexes"] == [{
        "IndexName": "by_meaning", "VectorAttribute": {"AttributeName": "emb"},
        "Dimensions": 768, "DistanceFunction": "COSINE",
        "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["title", "_type"]},
        "SearchSchema": [{"AttributeName": "tenant", "SearchSchemaElementType": "HASH"},
                         {"AttributeName": "year", "SearchSchemaElementType": "INLINE_FILTER"},
                         {"AttributeName": "kind", "SearchSchemaElementType": "INLINE_FILTER"}]}]
    assert {(d["AttributeName"], d["AttributeType"]) for d in definition[
        "AttributeDefinitions"]} == {("pk", "S"), ("sk", "S"), ("tenant", "S"), ("year", "N"),
                                     ("kind", "S")}
    assert definition["BillingMode"] == "PAY_PER_REQUEST"
    assert table.vector_index("by_meaning").search_schema == ("tenant", "year", "kind")
    assert table.key_roles["tenant"] == "partition"
    with pytest.raises(DynaormError, match=r"no vector index 'nope' \(declared: by_meaning"):
        table.vector_index("nope")


@pytest.mark.parametrize("kwargs, message", [
    ({"dimensions": 0}, "dimensions= takes a whole number from 1 to 4096"),
    ({"dimensions": 4097}, "dimensions= takes a whole number from 1 to 4096"),
    ({"dimensions": True}, "dimensions= takes a whole number"),
    ({"distance": "MANHATTAN"}, "distance= takes one of"),
    ({"partition": "emb"}, "each once"),
    ({"filters": ("a", "a")}, "each once"),
    ({"filters": ("",)}, "non-empty strings"),
    ({"projection": "SOME"}, "projection must be"),
    ({"name": "x"}, "invalid index name"),
])
def test_a_vector_index_is_refused_when_declared_wrong(kwargs: dict[str, Any],
                                                        message: str) -> None:
    given = {"name": "by_meaning", "attribute": "emb", "dimensions": 3, **kwargs}
    with pytest.raises(DynaormError, match=message):
        VectorIndex(**given)


@pytest.mark.parametrize("table, message", [
    (lambda: Table("t_v", vector_indexes=[VectorIndex("idx", attribute="pk", dimensions=3)]),
     "a key attribute or one dynaorm writes itself"),
    (lambda: Table("t_v", vector_indexes=[
        VectorIndex("idx", attribute="emb", dimensions=3, partition="_type")]),
     "a key attribute or one dynaorm writes itself"),
    (lambda: Table("t_v", vector_indexes=[VectorIndex("idx", attribute="e", dimensions=3),
                                          VectorIndex("idx", attribute="f", dimensions=3)]),
     "declared twice"),
    (lambda: Table("t_v", vector_indexes=["idx"]), "takes VectorIndex objects"),
    (lambda: Table("t_v", ttl="emb", vector_indexes=[VectorIndex("idx", attribute="emb",
                                                                 dimensions=3)]),
     "ttl must name a non-key attribute"),
])
def test_a_table_refuses_vector_indexes_it_cannot_have(table: Callable[[], Table],
                                                        message: str) -> None:
    with pytest.raises(DynaormError, match=message):
        table()


# -- Vector fields ------------------------------------------------------------------------
def test_a_vector_field_holds_32_bit_floats() -> None:
    d = Doc(doc_id="1", tenant_id="t", category="c", year=1, embedding=[0.1, 1, -2.5, 3e38])
    assert d.embedding == [0.10000000149011612, 1.0, -2.5, 3.0000000054977558e38]
    assert Doc.model_validate(d.model_dump()).embedding == d.embedding
    assert Vector(768).dimensions == 768


@pytest.mark.parametrize("vector, message", [
    ([0.0] * (DIMS - 1), "a vector of 4 numbers, not 3"),
    ([float("nan"), 0, 0, 0], r"element 0 \(nan\) is not a finite number"),
    ([0, float("inf"), 0, 0], "element 1 .* not a finite number"),
    ([0, 0, 3.5e38, 0], r"element 2 \(3.5e\+38\) is not a finite number within float32"),
    (["x", 0, 0, 0], "valid number"),
])
def test_a_vector_field_refuses_what_no_index_holds(vector: list[Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        Doc(doc_id="1", tenant_id="t", category="c", year=1, embedding=vector)


def test_a_vector_marker_needs_a_dimension_count() -> None:
    with pytest.raises(DynaormError, match=r"Vector\(dimensions\) takes a whole number"):
        Vector(0)


@pytest.mark.parametrize("field, annotation, message", [
    ("embedding", Encrypted[Annotated[list[float], Vector(4)]], "cannot be Encrypted"),
    ("other", Encrypted[Annotated[list[float], Vector(4)]], "cannot be Encrypted"),
    ("embedding", list[float], r"declare it Annotated\[list\[float\], Vector\(4\)\]"),
    ("embedding", Annotated[list[float], Vector(5)], "whose vectors hold 4"),
    ("tenant_id", int, "a vector index's search attribute of type S; the field is number"),
])
def test_an_entity_definition_refuses_vectors_no_index_can_read(field: str, annotation: Any,
                                                                 message: str) -> None:
    meta = type("Meta", (), {"pk": "B#{bad_id}", "sk": "B", "table": Table(
        "t_bad", vector_indexes=[VectorIndex("idx", attribute="embedding", dimensions=4,
                                             partition="tenant_id")])})
    meta.__qualname__ = "Bad.Meta"  # (a class of the entity's body: not a field)
    with pytest.raises(DynaormError, match=message):
        type("Bad", (Entity,), {"__module__": __name__, "__qualname__": "Bad", "Meta": meta,
                                "__annotations__": {"bad_id": str, field: annotation}})


def test_a_vector_field_cannot_be_in_a_key() -> None:
    with pytest.raises(DynaormError, match="a vector field cannot be in a key template"):
        class Keyed(Entity):
            class Meta:
                table = Table("t_keyed")
                pk = "K#{emb}"
                sk = "K"

            emb: Annotated[list[float], Vector(2)]


def test_the_vectors_rule_answers_for_every_surface() -> None:
    assert set(Vectors.answers) == set(SURFACES)
    rule = Doc.__dynaorm_spec__.rules.get(Vectors)
    assert rule is not None and rule.names == {"embedding"}
    with pytest.raises(DynaormError, match=r"Doc\.embedding is a vector: append"):
        rule.refuse("append", "embedding")
    rule.refuse("set", "embedding")


def test_describe_names_the_vector_indexes_an_entity_lands_in() -> None:
    rows = "\n".join(describe_entity(Doc.__dynaorm_spec__))
    assert "vector embedding (4, COSINE)   partition tenant_id   filters category, year" in (
        rows)
    assert "by_dot" in rows and "by_distance" in rows


def test_version_rows_keep_the_vector_aside() -> None:
    from dynaorm.schema.entity import encode_entity
    from dynaorm.schema.rules.versioned import VERSION_KEYS, version_row

    spec = Page.__dynaorm_spec__
    page = Page(page_id="p", body="b", embedding=[1, 2, 3, 4], version=2)
    row = version_row(spec, encode_entity(page, spec, 2), "v00000002_PAGE")
    assert "embedding" not in row
    assert row[VERSION_KEYS]["M"]["embedding"] == {"L": [{"N": n} for n in "1234"]}
    assert Page._from_item(row).embedding == [1, 2, 3, 4]


# -- what a search refuses before sending ---------------------------------------------------
def _search(**kwargs: Any) -> Any:
    given = {"vector": [1, 0, 0, 0], "tenant_id": "t1", **kwargs}
    return Session(docs).search(Doc, given.pop("index", "by_meaning"), **given)


@pytest.mark.parametrize("kwargs, error, message", [
    ({"vector": [1, 0, 0]}, InvalidValueError, "vector= takes 4 finite numbers: 3 numbers"),
    ({"vector": [float("nan"), 0, 0, 0]}, InvalidValueError, "not a finite number"),
    ({"vector": [float("-inf"), 0, 0, 0]}, InvalidValueError, "not a finite number"),
    ({"vector": [0, 0, 0, -1e39]}, InvalidValueError, "within float32's range"),
    ({"vector": 3}, InvalidValueError, r"vector= takes a list of 4 numbers; 3 \(int\) is "
                                       "not a list of numbers"),
    ({"vector": "abcd"}, InvalidValueError, r"vector= takes a list of 4 numbers; 'abcd' "
                                            r"\(str\) is not a list of numbers"),
    ({"vector": "hello"}, InvalidValueError, "'hello' \\(str\\) is not a list of numbers"),
    ({"vector": {"a": 1}}, InvalidValueError, r"\(dict\) is not a list of numbers"),
    ({"top": 0}, InvalidValueError, "top= takes a whole number from 1 to 100"),
    ({"top": 101}, InvalidValueError, "top= takes a whole number from 1 to 100"),
    ({"top": True}, InvalidValueError, "top= takes a whole number"),
    ({"tenant_id": 5}, InvalidValueError, "Doc.tenant_id: 5 does not fit the field"),
    ({"tenant_id": ""}, InvalidValueError, "needs a non-empty S value for 'tenant_id'"),
    ({"category": "c"}, DynaormError, r"takes tenant_id=\.\.\., got \['category', 'tenant_id'\]"),
    ({"index": "by_distance"}, DynaormError, r"takes no partition, got \['tenant_id'\]"),
    ({"index": "nope"}, DynaormError, "has no vector index 'nope'"),
])
def test_a_search_refuses_before_sending(kwargs: dict[str, Any], error: type[Exception],
                                         message: str) -> None:
    with pytest.raises(error, match=message):
        _search(**kwargs)
    if "tenant_id" not in kwargs:
        with pytest.raises(DynaormError, match=r"takes tenant_id=\.\.\., got \[\]"):
            Session(docs).search(Doc, "by_meaning", vector=[1, 0, 0, 0])


@pytest.mark.parametrize("condition", [
    F("category") != "news", F("category").begins_with("n"), F("year") > 2020,
    F("year").between(1, 2), F("category").is_in("a", "b"), ~(F("category") == "a"),
    (F("category") == "a") | (F("year") == 1), F("category").exists(),
])
def test_where_takes_only_what_a_search_condition_allows(condition: Any) -> None:
    with pytest.raises(InvalidValueError, match=r"where\(\) takes only F\(field\) == value, "
                                                r"joined with &, of its filter fields"):
        _search().where(condition)


@pytest.mark.parametrize(("condition", "named"), [
    (F("catgory") == "x", "'catgory', no field of Doc"),
    ((F("category") == "x") & (F("yaer") == 1), "'yaer', no field of Doc"),
    (F("title") == "x", "'title', a field of Doc"),
    (F("tenant_id") == "t1", "'tenant_id', a field of Doc"),
])
def test_where_names_a_field_that_is_not_a_filter(condition: Any, named: str) -> None:
    """0.6 listed the filter fields without naming the one it refused (a typo too)."""
    with pytest.raises(InvalidValueError) as refused:
        _search().where(condition)
    assert f"where() names {named} that is not a filter of the index (its filter " \
           "fields: ['category', 'year'])" in str(refused.value)


def test_where_takes_each_filter_once_with_a_value_of_its_type() -> None:
    with pytest.raises(InvalidValueError, match="one condition per attribute"):
        _search().where((F("year") == 1) & (F("year") == 2))
    with pytest.raises(InvalidValueError, match=r"Doc\.year: 'x' does not fit the field"):
        _search().where(F("year") == "x")
    with pytest.raises(TypeError, match=r"where\(\) takes a condition"):
        _search().where("category = 'a'")


def test_the_request_of_a_search() -> None:
    search = _search(vector=[0.1, 0, 1, -2], top=7).where(
        (F("category") == "news") & (F("year") == 2026))
    assert search._request() == {
        "TableName": docs.name, "IndexName": "by_meaning", "TopK": 7,
        "SearchVector": [{"N": "0.100000001"}, {"N": "0"}, {"N": "1"}, {"N": "-2"}],
        "SearchConditionExpression": "#n0 = :v0 AND #n1 = :v1 AND #n2 = :v2",
        "ProjectionExpression": "#n3, #n4, #n5, #n1, #n6, #n7, #n8, #n9, #n10, #n11, #n0, "
                                "#n12, #n2",  # (an ALL index: every attribute of a Doc)
        "ExpressionAttributeNames": {
            "#n0": "tenant_id", "#n1": "category", "#n2": "year", "#n3": "_dynaorm_job",
            "#n4": "_rev", "#n5": "_type", "#n6": "doc_id", "#n7": "embedding",
            "#n8": "expires", "#n9": "pk", "#n10": "secret", "#n11": "sk", "#n12": "title"},
        "ExpressionAttributeValues": {":v0": {"S": "t1"}, ":v1": {"S": "news"},
                                      ":v2": {"N": "2026"}}}
    assert Session(docs).search(Doc, "by_dot", vector=[1, 0, 0, 0])._request() == {
        "TableName": docs.name, "IndexName": "by_dot", "TopK": 10,
        "SearchVector": [{"N": "1"}, {"N": "0"}, {"N": "0"}, {"N": "0"}]}


# -- where a search goes ------------------------------------------------------------------
def test_dynaorms_wire_sends_a_search_to_the_search_endpoint_alone() -> None:
    """The own wire sends ``SearchVectors`` to :attr:`Endpoint.search_url` (AWS's search
    endpoint) over a wire of its own, and every other request to the endpoint; an endpoint
    without one gets the plain wire, which sends everything there."""
    import dataclasses

    from dynaorm.wire import SearchingWire, Wire, wire_for

    def answering(n: int, body: bytes) -> Reply:
        return Reply(answer(json_body({"SearchResults": []} if b"TopK" in body else {})))

    with serving(answering) as main, serving(answering) as search:
        endpoint = Table("t_wire", endpoint_url=main.url, region="us-east-1").db._endpoint()
        assert type(wire_for(endpoint)) is Wire and endpoint.search_url is None
        wire = wire_for(dataclasses.replace(endpoint, search_url=search.url))
        assert isinstance(wire, SearchingWire)
        try:
            wire.send("GetItem", {"TableName": "t", "Key": {"pk": {"S": "a"}}})
            wire.send("SearchVectors", {"TableName": "t", "IndexName": "idx", "TopK": 1,
                                        "SearchVector": [{"N": "1"}]})
            wire.send("DescribeTable", {"TableName": "t"})
        finally:
            wire.close()
    assert [json.loads(b).get("TopK") for b in main.bodies] == [None, None]
    assert [json.loads(b)["TopK"] for b in search.bodies] == [1]
    assert b"host: 127.0.0.1:%d" % search.port in search.heads[0].lower()


# -- the adversary: a hostile server answering SearchVectors ---------------------------------
def _hit(n: int, score: Any, **item: Any) -> dict[str, Any]:
    stored = {"pk": {"S": f"DOC#d{n}"}, "sk": {"S": "DOC"}, "_type": {"S": "Doc"},
              "doc_id": {"S": f"d{n}"}, "tenant_id": {"S": "t1"}, "category": {"S": "c"},
              "year": {"N": "2026"}, "embedding": {"L": [{"N": "1"}] * DIMS}, **item}
    return {"Item": {k: v for k, v in stored.items() if v is not None}, "Score": score}


@contextmanager
def hostile(body: bytes | Reply, wire: str, rows: Sequence[dict[str, Any]] = ()
            ) -> Iterator[None]:
    """``docs`` pointed at a server answering every search with ``body``, and every read
    by key with the items of ``rows`` it asks for."""
    reply = body if isinstance(body, Reply) else Reply(answer(body))

    def script(n: int, request: bytes) -> Reply:
        if b"RequestItems" not in request:
            return reply
        asked = json.loads(request)["RequestItems"][docs.name]["Keys"]
        found = [r for r in rows if {"pk": r["pk"], "sk": r["sk"]} in asked]
        return Reply(answer(json_body({"Responses": {docs.name: found}})))

    with serving(script) as server:
        bound = docs.binding()
        try:
            docs.connect(server.url)
            docs.wire, docs.max_attempts = wire, 1
            yield
        finally:
            docs.restore(bound)


def searched(kind: str, top: int = 3, index: str = "by_distance") -> Any:
    s: Any = Session(docs) if kind == "sync" else BlockingAsyncSession(AsyncSession(docs))
    return s.search(Doc, index, vector=[1, 0, 0, 0], top=top).all()


HOSTILE = {
    "SearchResults not a list": (json_body({"SearchResults": "x"}), "not DynamoDB's"),
    "an entry not an object": (json_body({"SearchResults": [5]}), "not an Item and its"),
    "an Item not an object": (json_body({"SearchResults": [{"Item": "x", "Score": 1}]}),
                              "not an Item and its Score"),
    "a Score as text": (json_body({"SearchResults": [_hit(1, "0.5")]}),
                        "not an Item and its Score"),
    "a Score true": (json_body({"SearchResults": [_hit(1, True)]}), "not an Item and its"),
    "a Score NaN": (b'{"SearchResults": [{"Item": {"pk": {"S": "DOC#d1"}, "sk": {"S": "DOC"}},'
                    b' "Score": NaN}]}', "a hit scored nan"),
    "no Score": (json_body({"SearchResults": [{"Item": _hit(1, 0)["Item"]}]}),
                 "a hit scored None"),
    "scores out of order": (json_body({"SearchResults": [_hit(1, 0.5), _hit(2, 0.25)]}),
                            "scores out of the order of EUCLIDEAN"),
    "more hits than top": (json_body({"SearchResults": [_hit(i, 0.1 * i) for i in range(4)]}),
                           "4 hits for top=3"),
    "a hit without its key": (json_body({"SearchResults": [_hit(1, 0.1, sk=None)]}),
                              "a hit without its table key"),
}


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
@pytest.mark.parametrize("case", list(HOSTILE))
def test_an_answer_that_is_not_dynamodbs_is_a_bad_answer(case: str, wire: str,
                                                         kind: str) -> None:
    body, message = HOSTILE[case]
    with hostile(body, wire), pytest.raises(BadAnswerError, match=message):
        searched(kind)


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_a_truncated_answer_is_a_request_error(wire: str, kind: str) -> None:
    whole = answer(json_body({"SearchResults": [_hit(1, 0.1), _hit(2, 0.2)]}))
    with hostile(Reply(whole[:-20], close=True), wire), pytest.raises(RequestError) as caught:
        searched(kind)
    assert caught.value.maybe_applied


@pytest.mark.parametrize("kind", ["sync", "async"])
@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_hits_of_other_entities_are_skipped_and_counted(
        wire: str, kind: str, caplog: pytest.LogCaptureFixture) -> None:
    """A hit of another type, or of a type name no class claims (warned about), is no hit."""
    stranger = f"Stranger{wire}{kind}"
    results = [_hit(1, 0.1), _hit(9, 0.2, _type={"S": stranger}), _hit(2, 0.3),
               _hit(3, 0.3, _type={"S": "Note"})]
    with hostile(json_body({"SearchResults": results}), wire,
                 [r["Item"] for r in results]):
        hits = searched(kind, top=4)
    assert [(h.item.doc_id, h.score) for h in hits] == [("d1", 0.1), ("d2", 0.3)]
    assert hits.skipped == 2
    assert stranger in caplog.text


@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_a_hit_that_does_not_fit_its_entity_is_an_item_decode_error(wire: str) -> None:
    bad = _hit(1, 0.1, embedding={"L": [{"N": "1"}]})
    with hostile(json_body({"SearchResults": [bad]}), wire, [bad["Item"]]), pytest.raises(
            ItemDecodeError, match="a vector of 4 numbers"):
        searched("sync")


@pytest.mark.parametrize("wire", ["dynaorm", "botocore"])
def test_a_hit_gone_before_its_read_by_key_is_left_out(wire: str) -> None:
    results = [_hit(1, 0.2), _hit(2, 0.1)]  # (a KEYS_ONLY index: hits are read by key)
    with hostile(json_body({"SearchResults": results}), wire, [results[1]["Item"]]):
        hits = searched("sync", index="by_dot")
    assert [h.item.doc_id for h in hits] == ["d2"] and hits.skipped == 0


def test_a_loaded_vector_renders_back_exactly_as_stored_and_pickles() -> None:
    """The loaded state keeps a vector's numbers as their texts: the stored item renders
    back exactly (a write of the object is conditioned on it), through a pickle too."""
    import pickle

    from dynaorm import inspect

    texts = ["1E+2", "0.10", "-0", "3.40282347e+38"]
    item = {"pk": {"S": "DOC#d1"}, "sk": {"S": "DOC"}, "_type": {"S": "Doc"},
            "doc_id": {"S": "d1"}, "tenant_id": {"S": "t"}, "category": {"S": "c"},
            "year": {"N": "2026"}, "embedding": {"L": [{"N": t} for t in texts]}}
    loaded = Doc._from_item(item)
    assert loaded.embedding == [100.0, 0.10000000149011612, -0.0, 3.4028234663852886e38]
    again = pickle.loads(pickle.dumps(loaded))
    for obj in (loaded, again):
        assert inspect(obj).status == "persisted"
        assert obj._dynaorm_state is not None and obj._dynaorm_state.item == item
    assert again == loaded
