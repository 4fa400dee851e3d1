"""The model as data (contract 21, "The model as data"): ``Table.model()``, its formats
(dynaorm's JSON, NoSQL Workbench, the AWS DynamoDB MCP server's ``schema.json``), the
entity code ``dynaorm model --import`` prints, which exports back to the same model (every
design the suite maps, and models hypothesis makes), files it refuses (a
``ModelFileError`` naming the place), and the chart. The command itself is in
``system/test_cli.py``, the chart in a browser in ``system/test_chart.py``, ``explain``
in ``integration/test_explain.py``."""

from __future__ import annotations

import ast
import json
import keyword
import math
import os
import re
import sys
import types
import uuid
from pathlib import Path
from typing import Any, Final

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import DynaormError, Entity, ModelFileError, Table, formats
from dynaorm.formats import code as codegen
from dynaorm.formats import read
from dynaorm.formats._common import PURE_MODULES
from dynaorm.formats.chart import chart_of
from dynaorm.formats.code import code_of, import_code
from dynaorm.schema.model import FORMAT, _returns
from tests.support.designs import DESIGNS, defined, design, roundtrip
from tests.support.examples import examples
from tests.support.json_schema import problems
from tests.support.models import app


def _entity(model: dict[str, Any], name: str) -> dict[str, Any]:
    return next(e for e in model["entities"] if e["name"] == name)


def test_the_model_holds_the_table_and_every_entity_with_what_follows_from_it() -> None:
    model = app.model()
    assert model["dynaorm_model"] == FORMAT == 1
    assert [r["type"] for r in model["table"]["rows"][1:]] == [
        k.type for k in app.row_kinds[1:]]
    assert model["table"] == {
        "name": "dynaorm-tests", "pk": "pk", "sk": "sk", "key_types": {},
        "type_attribute": "_type", "revision_attribute": "_rev", "ttl": None, "stream": None,
        "indexes": [
            {"name": "gsi1", "kind": "gsi", "native": False, "pk": ["gsi1pk"],
             "sk": ["gsi1sk"], "projection": "ALL"},
            {"name": "gsi2", "kind": "gsi", "native": False, "pk": ["gsi2pk"],
             "sk": ["gsi2sk"], "projection": "ALL"},
            {"name": "lsi1", "kind": "lsi", "sk": ["lsi1sk"], "projection": "ALL"}],
        # (issue 60) the row the table keeps for itself: an idempotent commit's receipt
        "rows": [{"role": "receipt", "type": "dynaorm:receipt",
                  "key": {"pk": "dynaorm:receipt#{hash of the key}",
                          "sk": "dynaorm:receipt#{hash of the key}"},
                  "ttl_seconds": 7 * 86400, "scoped": True,
                  "writer": "Session.commit(idempotency_key=)"},
                 # (a kind a surface registered on this process's table, Powertools'
                 # records once tests/integration/test_powertools.py ran, follows it)
                 *model["table"]["rows"][1:]],
        "settings": {"warm_throughput": None, "max_on_demand": None, "pitr_days": None,
                     "deletion_protection": None, "contributor_insights": None, "tags": {}}}
    user = _entity(model, "User")
    assert (user["pk"], user["sk"], user["type_name"]) == ("USER#{user_id}", "PROFILE", "User")
    assert user["fields"][0] == {"name": "user_id", "stored": "user_id", "type": "string",
                                 "required": False, "nullable": False,
                                 "default_factory": "dynaorm.ksuid:ksuid"}
    assert user["indexes"] == [{"name": "gsi1", "pk": "ORG#{org_id}", "sk": "USER#{username}"}]
    assert user["lands_in"] == ["gsi1"]
    assert user["unique"] == [
        {"field": "username", "prefix": "username", "scope": None, "normalize": None},
        {"field": "email", "prefix": "email", "scope": None, "normalize": "str.lower"}]
    assert user["writes"]["insert"] == {"row": 1, "unique guard": 2, "index entry": 1}
    assert user["writes"]["update"]["unique guard"] == 4  # (a changed value: release, claim)
    audit = _entity(model, "Audit")
    assert audit["versioned"] and audit["writes"] == {
        "insert": {"latest copy": 1, "version row": 1},
        "update": {"latest copy": 1, "version row": 1}, "delete": {"latest copy": 1}}
    assert _entity(model, "SOrder")["shards"] == {"gsi1": {"count": 4, "first": 0, "by": None}}
    patterns = {p["name"]: p for p in user["access_patterns"]}
    assert user["patterns"] == "derived"
    assert patterns["find_user_by_email"]["parameters"] == [{"name": "email", "type": "string"}]
    assert patterns["query_user_on_gsi1"]["index"] == "gsi1"
    assert json.loads(json.dumps(model)) == model  # plain JSON-ready data


def _documented_schema() -> dict[str, Any]:
    guide = (Path(__file__).resolve().parents[2] / "docs" / "guide" / "model.md").read_text()
    block = guide.split("### The JSON schema of the model")[1].split("```json\n")[1]
    schema: dict[str, Any] = json.loads(block.split("```")[0])
    return schema


@pytest.mark.parametrize("reference", ["tests.support.models:app", *DESIGNS])
def test_the_model_of_every_design_fits_the_documented_schema(reference: str) -> None:
    table = app if reference.endswith("models:app") else design(reference)
    assert problems(table.model(), _documented_schema()) == []


def test_the_documented_schema_refuses_what_is_not_a_model() -> None:
    model = app.model()
    schema = _documented_schema()
    assert problems({**model, "dynaorm_model": 2}, schema) == ["$.dynaorm_model: 2 is not 1"]
    user = {**model["entities"][0], "versioned": "no", "colour": "red"}
    assert problems({**model, "entities": [user]}, schema) == [
        "$.entities[0].versioned: 'no' is not boolean", "$.entities[0]: unexpected 'colour'"]
    vector = {"name": "v", "kind": "vector", "attribute": "e", "distance": "COSINE",
              "partition": None, "filters": [], "projection": "ALL"}  # (no dimensions)
    assert problems({**model, "table": {**model["table"], "indexes": [vector]}}, schema) == [
        f"$.table.indexes[0]: {vector!r} fits none of anyOf"]
    assert problems({**model, "table": {**model["table"], "indexes": [
        {**vector, "dimensions": 4}]}}, schema) == []


def test_the_model_of_native_aliased_encrypted_and_previous_designs() -> None:
    native = design("examples.native_index:shop").model()
    by_native = [i for i in native["table"]["indexes"] if i.get("native")]
    assert by_native and all(len(i["pk"]) >= 1 for i in by_native)
    landed = {n for e in native["entities"] for n in e["lands_in"]}
    assert {i["name"] for i in by_native} <= landed
    aliased = design("tests.support.alias_models:games").model()
    assert any(f["stored"] != f["name"] for e in aliased["entities"] for f in e["fields"])
    sealed = design("examples.encrypted_fields:clinic").model()
    patient = _entity(sealed, "Patient")
    assert patient["encrypted"] == ["ssn"]
    assert next(f for f in patient["fields"] if f["name"] == "ssn")["encrypted"] is True
    moved = design("tests.support.migration_models:mig").model()
    assert any(e["previous"] for e in moved["entities"])


def test_the_model_of_a_design_with_vector_indexes() -> None:
    model = design("tests.support.vector_models:docs").model()
    assert model["table"]["indexes"] == [
        {"name": "by_meaning", "kind": "vector", "attribute": "embedding", "dimensions": 4,
         "distance": "COSINE", "partition": "tenant_id", "filters": ["category", "year"],
         "projection": "ALL"},
        {"name": "by_distance", "kind": "vector", "attribute": "embedding", "dimensions": 4,
         "distance": "EUCLIDEAN", "partition": None, "filters": [], "projection": "ALL"},
        {"name": "by_dot", "kind": "vector", "attribute": "embedding", "dimensions": 4,
         "distance": "DOT_PRODUCT", "partition": None, "filters": [],
         "projection": "KEYS_ONLY"}]
    doc, page = _entity(model, "Doc"), _entity(model, "Page")
    assert next(f for f in doc["fields"] if f["name"] == "embedding") == {
        "name": "embedding", "stored": "embedding", "type": "list",
        "items": {"type": "number"}, "vector": 4, "required": True, "nullable": False}
    assert doc["lands_in"] == page["lands_in"] == ["by_meaning", "by_distance", "by_dot"]
    # (a version row keeps its vector aside: one entry per index, the latest copy's)
    assert page["writes"]["insert"] == {"latest copy": 1, "version row": 1, "index entry": 3}
    searches = {p["name"]: p for e in (doc, page) for p in e["access_patterns"]
                if p["operation"] == "SearchVectors"}
    assert searches["search_doc_on_by_meaning"]["parameters"] == [
        {"name": "tenant_id", "type": "string"}]
    assert searches["search_doc_on_by_meaning"]["index"] == "by_meaning"
    # (Page has no tenant_id: it cannot name by_meaning's partition)
    assert set(searches) == {"search_doc_on_by_meaning", "search_doc_on_by_distance",
                             "search_doc_on_by_dot", "search_page_on_by_distance",
                             "search_page_on_by_dot"}


def test_imported_json_of_a_vector_design_defines_its_vector_indexes_and_fields() -> None:
    source = design("tests.support.vector_models:docs")
    code = import_code(json.dumps(source.model()))
    assert "_t.Annotated[list[float], _d.Vector(4)]" in code
    (table,) = defined(code)
    assert table.vector_indexes == source.vector_indexes  # the real VectorIndex objects
    assert table.definition() == source.definition()  # CreateTable's VectorIndexes too
    assert table.model() == source.model()


def test_formats_without_vector_indexes_leave_them_out_and_say_so() -> None:
    model = design("examples.vector_search:kb").model()
    workbench, notes = formats.export(model, "workbench")
    assert notes == [
        "workbench: left out a vector index, 'by_meaning': the format has no place for it",
        "workbench: left out that Passage.embedding is a Vector(8): a list of numbers there"]
    (table,) = workbench["DataModel"]
    assert "GlobalSecondaryIndexes" not in table
    assert {"AttributeName": "embedding", "AttributeType": "L"} in table["NonKeyAttributes"]
    mcp, notes = formats.export(model, "mcp")
    assert notes == [
        "mcp: left out a vector index, 'by_meaning': the format has no place for it",
        "mcp: left out that Passage.embedding is a Vector(8): a list of numbers there",
        "mcp: left out Passage's search 'search_passage_on_by_meaning': the format has no "
        "place for it"]
    passage = mcp["tables"][0]["entities"]["Passage"]
    assert {"name": "embedding", "type": "array", "item_type": "decimal",
            "required": True} in passage["fields"]
    assert all(p["name"] != "search_passage_on_by_meaning"
               for p in passage["access_patterns"])


def test_the_chart_draws_vector_indexes_and_who_lands_in_them() -> None:
    model = design("tests.support.vector_models:docs").model()
    page = chart_of(model)
    for index in ("by_meaning", "by_distance", "by_dot"):
        assert f'id="index-{index}"' in page
    assert "vector embedding (4, COSINE)" in page
    assert "partition tenant_id" in page and "filters category, year" in page
    edges = sum(1 + len(e["lands_in"]) for e in model["entities"])
    # (each entity on docs draws a line to the table and to each of the three vector
    # indexes; how many entities docs holds depends on which test modules were imported,
    # integration/test_vectors.py adds Rich, so they are counted)
    assert all(len(e["lands_in"]) == 3 for e in model["entities"])
    assert len(model["entities"]) >= 5
    assert page.count('class="edge"') == edges == len(model["entities"]) * 4


@pytest.mark.parametrize("fmt", formats.READABLE)
@pytest.mark.parametrize("reference", DESIGNS)
def test_every_design_exports_to_code_that_exports_back_to_it(reference: str,
                                                               fmt: str) -> None:
    exported, again = roundtrip(design(reference).model(), fmt)
    assert again == exported


def test_offload_and_offloaded_fields_are_in_the_model_and_its_code() -> None:
    """A table's ``offload=`` and ``offload_threshold=`` and its ``Offloaded`` fields
    (sealed ones too) are in the model, its documented schema, and the code imported
    from its JSON (issue 88: an inferred model declares them)."""
    docs = design("examples.offloaded_values:docs")
    model = docs.model()
    assert (model["table"]["offload"], model["table"]["offload_threshold"]) == (
        "s3://placeholder/docs/", 4096)
    assert any(f.get("offloaded") for e in model["entities"] for f in e["fields"])
    assert problems(model, _documented_schema()) == []
    exported, again = roundtrip(model, "json")
    assert again == exported


def test_another_writers_lock_is_in_the_model_and_its_code() -> None:
    """``Meta.lock`` (issue 89: inference proposes it) is in the model, its documented
    schema and the code imported from its JSON, the Enhanced Client's start and step too."""
    from dynaorm import Lock

    locks = Table("locks", pk="pk", sk="sk")

    class Plain(Entity):
        class Meta:
            table = locks
            pk = "P#{plain_id}"
            sk = "P"
            lock = "version"

        plain_id: str
        version: int | None = None

    class Stepped(Entity):
        class Meta:
            table = locks
            pk = "S#{stepped_id}"
            sk = "S"
            lock = Lock.enhanced("rev", start_at=5, increment_by=10)

        stepped_id: str
        rev: int | None = None

    model = locks.model()
    assert [e["lock"] for e in model["entities"]] == [
        {"field": "version", "first": 1, "step": 1}, {"field": "rev", "first": 15, "step": 10}]
    assert problems(model, _documented_schema()) == []
    exported, again = roundtrip(model, "json")
    assert again == exported


def test_the_json_code_of_a_design_defines_the_same_model() -> None:
    model = app.model()
    (table,) = defined(code_of([{**model, "entities": [
        e for e in model["entities"] if e["name"] in ("User", "Audit", "SOrder")]}]))
    again = table.model()
    assert [e["name"] for e in again["entities"]] == ["User", "Audit", "SOrder"]
    for mine in again["entities"]:
        assert mine == _entity(model, mine["name"])


def test_formats_leave_out_what_they_cannot_hold_and_say_so() -> None:
    model = app.model()
    workbench, notes = formats.export(model, "workbench")
    assert "workbench: left out an LSI, 'lsi1': the format has no place for it" in notes
    assert "workbench: left out User's unique rules" in notes
    (table,) = workbench["DataModel"]
    assert [g["IndexName"] for g in table["GlobalSecondaryIndexes"]] == ["gsi1", "gsi2"]
    facet = next(f for f in table["TableFacets"] if f["FacetName"] == "User")
    assert facet["KeyAttributeAlias"] == {"PartitionKeyAlias": "USER#{user_id}",
                                          "SortKeyAlias": "PROFILE"}
    assert facet["NonKeyAttributes"] == ["user_id", "org_id", "username", "email",
                                         "full_name", "gsi1pk", "gsi1sk", "_type", "_rev"]
    mcp, notes = formats.export(model, "mcp")  # (other tests' entities may share a name)
    assert [n for n in notes if "several entities" not in n][:1] == [
        "mcp: left out an LSI, 'lsi1': the format has no place for it"]
    assert "mcp: Audit's version rows ({'pk': 'EQUIPMENT#{equipment_id}', 'sk': 'v<n>_{part}'}" \
        ", <n> in 8 digits) have no template there: its history pattern reads them" in notes
    (schema,) = mcp["tables"]
    assert schema["table_config"] == {"table_name": "dynaorm-tests", "partition_key": "pk",
                                      "sort_key": "sk"}
    user = schema["entities"]["User"]
    assert user["gsi_mappings"] == [{"name": "gsi1", "pk_template": "ORG#{org_id}",
                                     "sk_template": "USER#{username}"}]
    ids = [p["pattern_id"] for e in schema["entities"].values() for p in e["access_patterns"]]
    assert ids == list(range(1, len(ids) + 1))


#: a NoSQL Workbench model as its documentation shows one (aliases are friendly names)
WORKBENCH = {
    "ModelName": "Music", "DataModel": [{
        "TableName": "Songs",
        "KeyAttributes": {"PartitionKey": {"AttributeName": "Id", "AttributeType": "S"},
                          "SortKey": {"AttributeName": "Metadata", "AttributeType": "S"}},
        "NonKeyAttributes": [{"AttributeName": "Title", "AttributeType": "S"},
                             {"AttributeName": "Plays", "AttributeType": "N"},
                             {"AttributeName": "Tags", "AttributeType": "SS"},
                             {"AttributeName": "Month", "AttributeType": "S"}],
        "TableFacets": [
            {"FacetName": "Song", "KeyAttributeAlias": {"PartitionKeyAlias": "SongId",
                                                        "SortKeyAlias": "DETAILS"},
             "NonKeyAttributes": ["Title", "Plays", "Tags"]},
            {"FacetName": "Download", "KeyAttributeAlias": {
                "PartitionKeyAlias": "SONG#<SongId>", "SortKeyAlias": "MONTH#<Month>"},
             "NonKeyAttributes": ["Month", "Plays"]}],
        "GlobalSecondaryIndexes": [{
            "IndexName": "ByMonth",
            "KeyAttributes": {"PartitionKey": {"AttributeName": "Month",
                                               "AttributeType": "S"}},
            "Projection": {"ProjectionType": "KEYS_ONLY"}}]}]}

#: the AWS DynamoDB MCP server's schema.json, in its documented shape
MCP = {"tables": [{
    "table_config": {"table_name": "Arcade", "partition_key": "pk", "sort_key": "sk"},
    "gsi_list": [{"name": "ByPlayer", "partition_key": "player_id", "sort_key": "points"}],
    "entities": {
        "Machine": {
            "entity_type": "MACHINE", "pk_template": "MACHINE#{machine_id}",
            "sk_template": "INFO",
            "fields": [{"name": "machine_id", "type": "string", "required": True},
                       {"name": "coins", "type": "integer", "required": True},
                       {"name": "price", "type": "decimal", "required": False},
                       {"name": "games", "type": "array", "item_type": "string",
                        "required": False}],
            "access_patterns": [
                {"pattern_id": 1, "name": "get_machine", "description": "A machine by id",
                 "operation": "GetItem", "parameters": [{"name": "machine_id",
                                                          "type": "string"}],
                 "return_type": "single_entity"},
                {"pattern_id": 2, "name": "add_machine", "description": "A new machine",
                 "operation": "PutItem", "parameters": [{"name": "machine",
                                                          "type": "entity",
                                                          "entity_type": "Machine"}],
                 "return_type": "single_entity"}]},
        "Score": {
            "entity_type": "SCORE", "pk_template": "MACHINE#{machine_id}",
            "sk_template": "SCORE#{player_id}", "gsi_mappings": [
                {"name": "ByPlayer", "pk_template": "{player_id}",
                 "sk_template": "{points}"}],
            "fields": [{"name": "machine_id", "type": "string", "required": True},
                       {"name": "player_id", "type": "string", "required": True},
                       {"name": "points", "type": "integer", "required": True}],
            "access_patterns": [
                {"pattern_id": 3, "name": "best_of_player", "description": "Top scores",
                 "operation": "Query", "index_name": "ByPlayer", "range_condition": ">=",
                 "parameters": [{"name": "player_id", "type": "string"},
                                {"name": "points", "type": "integer"}],
                 "return_type": "entity_list"}]}}}]}


def test_a_workbench_model_of_other_tools_imports_as_entities() -> None:
    code = import_code(json.dumps(WORKBENCH), "workbench")
    (table,) = defined(code)
    model = table.model()
    assert (model["table"]["name"], model["table"]["pk"], model["table"]["sk"]) == (
        "Songs", "Id", "Metadata")
    # (no facet holds a type attribute, and the facets' key shapes overlap: the code
    # tells them apart by dynaorm's own)
    assert model["table"]["type_attribute"] == "_type"
    (index,) = model["table"]["indexes"]
    assert index == {"name": "ByMonth", "kind": "gsi", "native": True, "pk": ["Month"],
                     "sk": [], "projection": "KEYS_ONLY"}
    song, download = model["entities"]
    assert (song["pk"], song["sk"]) == ("{SongId}", "{DETAILS}")
    assert (download["pk"], download["sk"]) == ("SONG#{SongId}", "MONTH#{Month}")
    types = {f["name"]: f["type"] for f in song["fields"]}
    assert types == {"SongId": "string", "DETAILS": "string", "Title": "string",
                     "Plays": "decimal", "Tags": "set"}
    assert download["lands_in"] == ["ByMonth"]


def test_an_mcp_schema_imports_as_entities_and_exports_back_the_same() -> None:
    code = import_code(json.dumps(MCP), "mcp")
    assert "arcade.pattern('best_of_player', Score, 'Query'" in code
    (table,) = defined(code)
    exported, notes = formats.export(table.model(), "mcp")
    assert exported == MCP and notes == []
    score = _entity(table.model(), "Score")
    assert score["type_name"] == "SCORE" and score["patterns"] == "declared"
    assert score["lands_in"] == ["ByPlayer"]


def _place(text: str, fmt: str) -> str:
    with pytest.raises(ModelFileError) as err:
        import_code(text, fmt)
    assert str(err.value).startswith(err.value.place + ": ")
    return err.value.place


def test_a_file_that_is_not_json_is_refused_at_its_line_and_column() -> None:
    assert _place('{"tables": [\n  {"table_config": }\n]}', "mcp") == "line 2, column 20"


@pytest.mark.parametrize(("fmt", "doc", "place"), [
    ("json", {"dynaorm_model": 2}, "$.dynaorm_model"),
    ("json", {"dynaorm_model": 1, "table": {"name": "t-1", "pk": "pk"},
              "entities": [{"name": "A", "pk": "A#{a", "fields": []}]}, "$.entities[0].pk"),
    ("json", {"dynaorm_model": 1, "table": {"name": "t-1", "pk": "pk"}, "entities": [
        {"name": "A", "pk": "A#{a}", "fields": [{"name": "a", "type": "text"}]}]},
     "$.entities[0].fields[0].type"),
    ("json", {"dynaorm_model": 1, "table": {"name": "t-1", "pk": "pk", "key_types": {
        "pk": "X"}}, "entities": []}, "$.table.key_types.pk"),
    ("workbench", {"DataModel": [{"TableName": "t-1", "KeyAttributes": {
        "PartitionKey": {"AttributeName": "pk", "AttributeType": "Q"}}}]},
     "$.DataModel[0].KeyAttributes.PartitionKey.AttributeType"),
    ("workbench", {"DataModel": [{"TableName": "t-1", "KeyAttributes": {
        "PartitionKey": {"AttributeName": "pk", "AttributeType": "S"}}, "TableFacets": [
        {"FacetName": "A", "KeyAttributeAlias": {"PartitionKeyAlias": "A",
                                                 "SortKeyAlias": "B"}}]}]},
     "$.DataModel[0].TableFacets[0].KeyAttributeAlias"),
    ("mcp", {"tables": [{"table_config": {"table_name": "t-1"}}]},
     "$.tables[0].table_config"),
    ("mcp", {"tables": [{"table_config": {"table_name": "t-1", "partition_key": "pk"},
                         "entities": {"A": {"entity_type": "A", "pk_template": "{a}",
                                            "fields": [{"name": "a", "type": "float",
                                                        "required": True}]}}}]},
     "$.tables[0].entities.A.fields[0].type"),
    ("mcp", {"tables": [{"table_config": {"table_name": "t-1", "partition_key": "pk"},
                         "entities": {"A": {"entity_type": "A", "pk_template": "{a}",
                                            "gsi_mappings": [{"name": "G", "pk_template":
                                                              "{a}"}], "fields": []}}}]},
     "$.tables[0].entities.A.gsi_mappings[0].name"),
])
def test_a_bad_file_is_refused_naming_the_place(fmt: str, doc: Any, place: str) -> None:
    assert _place(json.dumps(doc), fmt) == place


def test_an_imported_file_never_runs_code_of_its_own() -> None:
    """A file names functions (a default factory, a unique rule's normalize): the import
    checks the design without importing them, and takes a default only as a literal."""
    model = app.model()
    user = {**_entity(model, "User"), "patterns": "derived"}
    user["fields"] = [{**f, "default_factory": "flights.ids:fly"} if f["name"] == "user_id"
                      else f for f in user["fields"]]
    import sys

    code = import_code(json.dumps({**model, "entities": [user]}))
    assert "from flights.ids import fly" in code and "flights" not in sys.modules
    user["fields"][0] = {**user["fields"][0], "default_factory": "antigravity:fly"}
    with pytest.raises(ModelFileError, match="standard library"):  # (it opens a browser)
        import_code(json.dumps({**model, "entities": [user]}))
    assert "antigravity" not in sys.modules
    user["fields"][0] = {**user["fields"][0], "default_factory": "flights.ids:fly"}
    user["fields"][1] = {**user["fields"][1], "default_repr": "__import__('os').getcwd()"}
    with pytest.raises(ModelFileError) as err:
        import_code(json.dumps({**model, "entities": [user]}))
    assert err.value.place == "$.entities[0].fields[1].default_repr"


def test_a_design_dynaorm_refuses_is_refused_at_the_entity_that_declares_it() -> None:
    doc = {"tables": [{"table_config": {"table_name": "t-1", "partition_key": "pk"},
                       "entities": {"Good": {"entity_type": "G", "pk_template": "G#{g}",
                                             "fields": [{"name": "g", "type": "string",
                                                         "required": True}]},
                                    "Bad": {"entity_type": "B", "pk_template": "B#{missing}",
                                            "fields": [{"name": "b", "type": "string",
                                                        "required": True}]}}}]}
    with pytest.raises(ModelFileError) as err:
        import_code(json.dumps(doc), "mcp")
    assert err.value.place == "$.tables[0].entities.Bad"
    assert "missing" in str(err.value)


booking = Table("declared-patterns")


class Ticket(Entity):
    class Meta:
        table = booking
        pk = "T#{ticket_id}"
        sk = "T"

    ticket_id: str
    seats: int = 1


def test_declared_access_patterns_are_the_model_s() -> None:
    table = booking
    table.pattern("ticket_by_id", Ticket, "GetItem", "ticket_id",
                  description="one ticket", pattern_id=7)
    (entity,) = table.model()["entities"]
    assert entity["patterns"] == "declared"
    assert entity["access_patterns"] == [{
        "name": "ticket_by_id", "operation": "GetItem", "index": None,
        "parameters": [{"name": "ticket_id", "type": "string"}], "range_condition": None,
        "returns": "single_entity", "description": "one ticket", "pattern_id": 7}]
    with pytest.raises(DynaormError, match="operation must be one of"):
        table.pattern("nope", Ticket, "Merge")


def test_the_chart_draws_every_entity_index_and_landing_without_the_network() -> None:
    model = app.model()
    page = chart_of(model)
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    assert not re.search(r"""(src|href)=["']?https?:""", page)  # nothing fetched
    for entity in model["entities"]:
        assert f'id="entity-{entity["name"]}"' in page
    for index in ("dynaorm-tests", "gsi1", "gsi2", "lsi1"):
        assert f'id="index-{index}"' in page
    edges = sum(1 + len(e["lands_in"]) for e in model["entities"])
    assert page.count('class="edge"') == edges
    assert "ORG#{org_id} / USER#{username}" in page  # User's gsi1 templates on its edge
    assert "insert: row 1, unique guard 2, index entry 1" in page


# -- models hypothesis makes ----------------------------------------------------------------
_TYPES = st.sampled_from([{"type": t} for t in (
    "string", "integer", "number", "decimal", "boolean", "binary", "datetime", "date",
    "uuid")] + [{"type": "list", "items": {"type": "string"}},
                {"type": "set", "items": {"type": "integer"}},
                {"type": "map", "values": {"type": "number"}},
                {"type": "enum", "values": ["a", "b"]},
                {"type": "object", "model": "Part", "fields": [
                    {"name": "label", "stored": "label", "type": "string", "required": True,
                     "nullable": False}]}])


@st.composite
def _models(draw: st.DrawFn) -> dict[str, Any]:
    """A model of a table and one to three entities, each keyed on its own prefix."""
    has_sk = draw(st.booleans())
    native = draw(st.booleans())
    indexes: list[dict[str, Any]] = [{"name": "GSI1", "kind": "gsi", "native": False,
                                      "pk": ["g1pk"], "sk": ["g1sk"], "projection": "ALL"}]
    if native:
        indexes.append({"name": "ByTag", "kind": "gsi", "native": True, "pk": ["tag"],
                        "sk": [], "projection": draw(st.sampled_from(
                            ["ALL", "KEYS_ONLY", ["note"]]))})
    vector = draw(st.none() | st.integers(1, 8))
    if vector is not None:
        indexes.append({"name": "by_meaning", "kind": "vector", "attribute": "emb",
                        "dimensions": vector, "distance": draw(st.sampled_from(
                            ["COSINE", "EUCLIDEAN", "DOT_PRODUCT"])),
                        "partition": draw(st.sampled_from([None, "ident"])),
                        "filters": draw(st.sampled_from([[], ["grade"]])),
                        "projection": draw(st.sampled_from(["ALL", "KEYS_ONLY"]))})
    entities = []
    for i in range(draw(st.integers(1, 3))):
        extra = draw(st.lists(_TYPES, max_size=4))
        fields = [{"name": "ident", "stored": "ident", "type": "string", "required": True,
                   "nullable": False}]
        fields += [{"name": f"f{n}", "stored": draw(st.sampled_from([f"f{n}", f"a{n}"])),
                    **t, "required": False, "nullable": True, "default": None}
                   for n, t in enumerate(extra)]
        if native and draw(st.booleans()):
            fields.append({"name": "tag", "stored": "tag", "type": "string",
                           "required": False, "nullable": True, "default": None})
        if vector is not None and draw(st.booleans()):
            fields.append({"name": "emb", "stored": "emb", "type": "list",
                           "items": {"type": "number"}, "vector": vector, "required": False,
                           "nullable": True, "default": None})
        versioned = has_sk and draw(st.booleans())
        if versioned:
            fields.append({"name": "version", "stored": "version", "type": "integer",
                           "required": False, "nullable": False, "default": 0})
        entities.append({
            "name": f"E{i}", "type_name": draw(st.sampled_from([f"E{i}", f"kind-{i}"])),
            "pk": f"E{i}#{{ident}}", "sk": "ROOT" if has_sk else None, "fields": fields,
            "indexes": [{"name": "GSI1", "pk": f"E{i}", "sk": "{ident}"}]
            if draw(st.booleans()) else [],
            "unique": [{"field": "ident", "prefix": f"u{i}", "scope": None,
                        "normalize": None}] if has_sk and draw(st.booleans()) else [],
            "versioned": versioned, "key_only": ["ident"] if not versioned and draw(
                st.booleans()) else []})
    return {"dynaorm_model": 1, "table": {
        "name": "hypothesis-model", "pk": "PK", "sk": "SK" if has_sk else None,
        "key_types": {}, "type_attribute": "_type", "revision_attribute": "_rev",
        "ttl": None, "stream": None, "indexes": indexes, "settings": {
            "warm_throughput": None, "max_on_demand": draw(st.sampled_from([None, [5, None]])),
            "pitr_days": draw(st.sampled_from([None, 7])), "deletion_protection": None,
            "contributor_insights": draw(st.sampled_from([None, "throttled"])),
            "tags": draw(st.sampled_from([{}, {"team": "a"}]))}}, "entities": entities}


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_models())
def test_hypothesis_models_export_from_their_code_as_they_were_made(model: dict[str, Any]
                                                                   ) -> None:
    (table,) = defined(code_of([model]))
    made = table.model()
    assert made["table"] == {**model["table"], "rows": [table.row_kinds[0].data(table)]}  # (60)
    for mine, given_ in zip(made["entities"], model["entities"], strict=True):
        assert {k: mine[k] for k in given_} == given_
    for fmt in formats.READABLE:
        exported, again = roundtrip(made, fmt)
        assert again == exported


# -- damaged files -------------------------------------------------------------------------
_JSON = st.recursive(st.none() | st.booleans() | st.integers(-3, 3) | st.text(max_size=4)
                     | st.sampled_from(["S", "N", "gsi", "{x}", "A#{a}", "string", "GetItem"]),
                     lambda inner: st.lists(inner, max_size=2)
                     | st.dictionaries(st.text(max_size=3), inner, max_size=2), max_leaves=4)


def _paths(doc: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document, as a path of keys and indexes."""
    inner = doc.items() if isinstance(doc, dict) else enumerate(doc) if isinstance(
        doc, list) else ()
    return [at, *(p for k, v in inner for p in _paths(v, (*at, k)))]


@settings(max_examples=examples(120), deadline=None)
@given(data=st.data(), fmt=st.sampled_from(formats.READABLE))
def test_a_damaged_file_imports_or_is_refused_naming_the_place(data: st.DataObject,
                                                               fmt: str) -> None:
    doc = formats.export(design("examples.native_index:shop").model(), fmt)[0] if (
        data.draw(st.booleans())) else formats.export(app.model(), fmt)[0]
    path = data.draw(st.sampled_from(_paths(doc)[1:]))
    parent = doc
    for step in path[:-1]:
        parent = parent[step]
    if data.draw(st.booleans()) and isinstance(parent, dict):
        del parent[path[-1]]
    else:
        parent[path[-1]] = data.draw(_JSON)
    try:
        import_code(json.dumps(doc), fmt)
    except ModelFileError as exc:  # (anything else escaping fails the test)
        assert exc.place.startswith("$"), exc.place


def test_entities_of_one_class_name_are_each_kept_in_the_mcp_format() -> None:
    """Two classes named alike (two modules), each with its own type name, on one table:
    the MCP server's format keys entities by name, so each is keyed by its type name, and
    said; no pattern is lost (they were: the second replaced the first)."""
    table = Table("mcp-dupes")

    def first() -> type[Entity]:
        class Doc(Entity):
            doc_id: str

            class Meta:
                table, pk, sk, type_name = tbl, "DOC#{doc_id}", "A", "DocA"
        return Doc

    def second() -> type[Entity]:
        class Doc(Entity):
            doc_id: str

            class Meta:
                table, pk, sk, type_name = tbl, "DOC#{doc_id}", "B", "DocB"
        return Doc

    tbl = table
    first(), second()
    mcp, notes = formats.export(table.model(), "mcp")
    (schema,) = mcp["tables"]
    assert sorted(schema["entities"]) == ["DocA", "DocB"]
    assert sum("several entities are named 'Doc'" in n for n in notes) == 2
    ids = [p["pattern_id"] for e in schema["entities"].values() for p in e["access_patterns"]]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= 6


def test_the_model_of_an_entity_holding_a_model_inside_itself() -> None:
    """The model inside itself is named without its fields (a back-reference): the
    model, its JSON read back and its code (which defines the same shape) hold it."""
    from pydantic import BaseModel

    class Node(BaseModel):
        label: str
        children: list[Node] = []

    class Tree(Entity):
        class Meta:
            table = Table("dynaorm-model-trees")
            pk = "TREE#{tree_id}"
            sk = "TREE"

        tree_id: str
        root: Node

    model = Tree.__dynaorm_spec__.table.model()
    root = _entity(model, "Tree")["fields"][1]
    assert root["model"] == "Node" and root["fields"][1]["items"] == {
        "type": "object", "model": "Node"}
    namespace: dict[str, Any] = {}
    exec(import_code(json.dumps(model)), namespace)  # (checked: definitions only)
    tree = namespace["Tree"](tree_id="t", root={"label": "a", "children": [{"label": "b"}]})
    assert tree.root.children[0].label == "b"


# --- a hostile model file: refused, or code that defines the same model and runs nothing
# (moved from unit/test_model_import_red_team.py:
# Red team of ``dynaorm model --import`` (issue 59 point 2, contract 22): a hostile file
# gives a ``ModelFileError`` or code that compiles, defines without side effects and defines
# the same model; it never runs what the file says.)

_BASE: dict[str, Any] = {
    "dynaorm_model": 1, "table": {"name": "red-team", "pk": "pk", "sk": "sk"},
    "entities": [{"name": "A", "pk": "A#{a}", "sk": "A",
                  "fields": [{"name": "a", "type": "string"}]}]}


def _doc(**table: Any) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(json.dumps(_BASE))
    doc["table"].update(table)
    return doc


def _field(doc: dict[str, Any], **field: Any) -> dict[str, Any]:
    doc["entities"][0]["fields"].append({"type": "string", "required": False, **field})
    return doc


def _only_definitions(code: str) -> None:
    """``code``'s statements only import, define or assign: its docstring first, then
    imports, classes, functions, assignments of ``_d.Table(...)`` and pattern calls."""
    tree = ast.parse(code)
    first, *rest = tree.body
    assert isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
    for node in rest:
        if isinstance(node, ast.Expr):  # (a declared access pattern: table.pattern(...))
            call = node.value
            assert isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and (
                call.func.attr == "pattern"), ast.unparse(node)
        else:
            assert isinstance(node, ast.Import | ast.ImportFrom | ast.ClassDef |
                              ast.FunctionDef | ast.Assign), ast.unparse(node)


def test_a_table_name_never_closes_the_docstring_and_runs_code(tmp_path: Path) -> None:
    """0.7 draft: a table name holding triple quotes ended the module's docstring, and
    what followed ran when ``--import`` defined the code to check it."""
    marker = tmp_path / "pwned"
    name = f'x"""; import os; os.system("touch {marker}"); """'
    with pytest.raises(ModelFileError):  # (no DynamoDB table has that name)
        codegen.import_code(json.dumps(_doc(name=name)))
    assert not marker.exists()
    code = codegen.code_of([_doc(name=name)], check=True)
    compile(code, "<code>", "exec")
    assert name in str(ast.get_docstring(ast.parse(code)))
    _only_definitions(code)


def test_a_named_function_called_todo_is_not_replaced_by_the_stub() -> None:
    """0.7 draft: ``mod:todo`` was imported as ``_todo``, the name of the stub a lambda
    gets, so the stub replaced the named function."""
    doc = _field(_field(json.loads(json.dumps(_BASE)), name="x",
                        default_factory="myapp.ids:todo"), name="y", default_factory="<lambda>")
    code = codegen.import_code(json.dumps(doc))
    assert "import todo as _todo\n" not in code, code
    assert "from myapp.ids import todo as _myapp_ids_todo" in code


# -- the property: any document is a ModelFileError or code that defines the same model ------
#: text that, run anywhere (a docstring closed, an f-string, an expression), writes the
#: file ``pwned`` in the working directory: the property's sentinel
_RUNS: Final = ("open('pwned', 'w')", '""";open("pwned","w");"""',
                "''';open('pwned','w');'''", "{open('pwned','w')}",
                "\\n__import__('pathlib').Path('pwned').touch()#")
_HOSTILE_TEXT = st.sampled_from([*_RUNS,
    'a"""b', "a'''b", "a\nb", "a\\", "\\", '"', "'", "a\x00b", "\u0391\u0392", "\U0001d5ba",
    "__import__('os').system('x')", "{a}", "a#b", "", " ", "\u2028", "\r"]) | st.text(
    max_size=12)
_NAMES = st.sampled_from([
    "a", "b", "A", "Entity", "Table", "Field", "BaseModel", "Meta", "date", "datetime", "str",
    "int", "float", "list", "dict", "set", "bytes", "bool", "type", "object", "None", "True",
    "class", "def", "lambda", "import", "match", "_", "__class__", "__init__", "__dict__",
    "_d", "_p", "_t", "_dt", "_b", "_dec", "_uuid", "_todo", "_system", "model_config",
    "model_dump", "save", "delete", "copy", "json", "schema", "fields", "pk", "sk", "Order",
    "order", "red_team", "Ord\u0435r"])
_NAMES = _NAMES.filter(lambda n: not keyword.iskeyword(n))
_FUNCTIONS = st.sampled_from([
    "<lambda>", "builtins:str", "str", "uuid:uuid4", "operator:methodcaller('lower')",
    "operator:methodcaller('__class__')", "operator:attrgetter('__globals__')",
    "operator:itemgetter(0)", "operator:methodcaller('replace', 'a', 'b')",
    "operator:todo", "os:system", "exec", "eval", "breakpoint", "os:environ.clear",
    "operator:methodcaller(__import__('os'))", "operator:methodcaller('a', str('x'))",
    "operator:attrgetter('a').__call__", "<lambda>; import os", "a:b\nimport os",
    "colorsys:rgb_to_hsv", "builtins:eval", "builtins:open", "io:open", "pathlib:Path.touch",
    "subprocess:run", "importlib:import_module", "getattr", "type", "str.__class__",
    "operator:methodcaller('__init_subclass__')", "operator:attrgetter('__globals__')",
    "operator:methodcaller('replace', '_', '')", "str.lower", "uuid:nope", "antigravity:fly",
    "myapp.__builtins__:eval", "myapp.ids:new_id", "dynaorm.ksuid:ksuid"])
_FLOATS = st.floats(allow_nan=True, allow_infinity=True)
_VALUES = st.recursive(st.none() | st.booleans() | st.integers(-2**70, 2**70) | _FLOATS
                       | _HOSTILE_TEXT,
                       lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(_HOSTILE_TEXT, inner, max_size=3), max_leaves=8)
_SCALAR_TYPES = st.sampled_from(["string", "integer", "number", "decimal", "boolean",
                                 "binary", "datetime", "date", "uuid", "any"])


@st.composite
def _types(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    kind = draw(st.sampled_from(["scalar"] * 4 + (
        ["list", "set", "map", "enum", "union", "object"] if depth < 2 else [])))
    if kind == "scalar":
        return {"type": draw(_SCALAR_TYPES)}
    if kind in ("list", "set"):
        return {"type": kind, "items": draw(_types(depth + 1))}
    if kind == "map":
        return {"type": kind, "values": draw(_types(depth + 1))}
    if kind == "enum":
        return {"type": kind, "values": draw(st.lists(
            st.integers(-5, 5) | _HOSTILE_TEXT | _FLOATS | st.booleans(), min_size=1,
            max_size=3))}
    if kind == "union":
        return {"type": kind, "of": draw(st.lists(_types(depth + 1), min_size=2, max_size=2))}
    return {"type": "object", "model": draw(_NAMES),
            "fields": draw(st.lists(_fields(depth + 1), max_size=2))}


@st.composite
def _fields(draw: st.DrawFn, depth: int = 0) -> dict[str, Any]:
    out: dict[str, Any] = {"name": draw(_NAMES), **draw(_types(depth))}
    if draw(st.booleans()):
        out["stored"] = draw(_HOSTILE_TEXT)
    if draw(st.booleans()):
        out["required"] = False
        choice = draw(st.sampled_from(["default", "factory", "none"]))
        if choice == "default":
            out["default"] = draw(_VALUES)
        elif choice == "factory":
            out["default_factory"] = draw(_FUNCTIONS)
    out["nullable"] = draw(st.booleans())
    return out


@st.composite
def _documents(draw: st.DrawFn) -> dict[str, Any]:
    entities = []
    for _ in range(draw(st.integers(1, 2))):
        fields = [{"name": "a", "type": "string"}, *draw(st.lists(_fields(), max_size=4))]
        entity: dict[str, Any] = {
            "name": draw(_NAMES), "pk": draw(st.sampled_from(["A#{a}", "{a}", "X"])),
            "sk": draw(st.sampled_from([None, "S", "S#{a}"])), "fields": fields}
        if draw(st.booleans()):
            entity["type_name"] = draw(_HOSTILE_TEXT)
        if draw(st.booleans()):
            entity["unique"] = [{"field": "a", "normalize": draw(_FUNCTIONS),
                                 "prefix": draw(_HOSTILE_TEXT)}]
        if draw(st.booleans()):
            entity["patterns"] = "declared"
            entity["access_patterns"] = [{
                "name": draw(_NAMES), "operation": "GetItem",
                "description": draw(_HOSTILE_TEXT),
                "parameters": [{"name": draw(_HOSTILE_TEXT), "type": draw(_HOSTILE_TEXT)}]}]
        entities.append(entity)
    table = {"name": draw(st.sampled_from(["red-team", "str", "int", "order", "Order",
                                           "entity", "a.b-c"]) | _HOSTILE_TEXT),
             "pk": draw(st.sampled_from(["pk", "PK"]) | _HOSTILE_TEXT), "sk": "sk"}
    return {"dynaorm_model": 1, "table": table, "entities": entities}


#: the modules code --import prints may import (a file's ``module:name`` adds its module)
_ALLOWED = ("dynaorm", "pydantic", "pydantic_core", "typing", "datetime", "decimal", "uuid",
            "builtins", "operator", "annotated_types", *PURE_MODULES)


def _new_id() -> str:
    """The application's function a file may name (``myapp.ids:new_id``): stood in for."""
    return str(uuid.uuid4())


_new_id.__module__, _new_id.__qualname__ = "myapp.ids", "new_id"


def _comparable(model: dict[str, Any]) -> Any:
    """A model read back as the reader gives it, without places."""
    (table,) = read(json.dumps(model))
    for e in table["entities"]:
        e.pop("_place", None)
        e["name"] = codegen.identifier(e["name"])  # (a keyword, or a leading _: renamed)
        if e["patterns"] == "derived":  # (recomputed from the keys: not the file's)
            e.pop("access_patterns")
        for p in e.get("access_patterns", ()):  # (none given: the operation's, as code says)
            p["returns"] = p["returns"] or _returns(p["operation"])
    _as_json_defaults(table["entities"])
    return json.loads(json.dumps(table, default=str).replace("NaN", '"nan"'))


def _as_json_defaults(value: Any) -> None:
    """Each field's ``default_repr`` (a Python literal the model gives for a default JSON
    holds too, a dict or a list of lists) as its ``default``: the same value."""
    if isinstance(value, dict):
        if "default_repr" in value:
            value["default"] = ast.literal_eval(value.pop("default_repr"))
        for v in value.values():
            _as_json_defaults(v)
    elif isinstance(value, list):
        for v in value:
            _as_json_defaults(v)


@settings(max_examples=examples(int(os.environ.get("DYNAORM_RED_TEAM_EXAMPLES", "300"))),
          derandomize=True, deadline=5000, suppress_health_check=list(HealthCheck))
@given(doc=_documents())
def test_any_model_document_is_refused_or_defines_the_same_model_without_side_effects(
        doc: dict[str, Any], tmp_path_factory: pytest.TempPathFactory) -> None:
    """0.7 draft: the model differed (two classes of one name, a union or enum repeating
    a member, empty names, an optional field's default), and an entity named ``model_x``
    hung ``identifier`` (``model_x_``, ``model_x__``...: each still a ``model_`` name).
    Every document is now refused or imported within the deadline (5 s, most take ms),
    and importing never runs what it says: nothing is written, nothing imported but the
    standard modules of values (:data:`_RUNS` writes a sentinel file if ever run)."""
    text = json.dumps(doc)
    where = tmp_path_factory.mktemp("import")
    before, cwd = set(sys.modules), Path.cwd()
    os.chdir(where)
    try:
        try:
            code = codegen.import_code(text)
        except ModelFileError as exc:
            assert exc.place.startswith(("$", "line ")), exc.place
            assert list(where.iterdir()) == [], "refusing the file ran code"
            assert {m.split(".")[0] for m in set(sys.modules) - before} <= {*_ALLOWED}
            return
        assert list(where.iterdir()) == [], "importing the file ran code"
        assert {m.split(".")[0] for m in set(sys.modules) - before} <= {*_ALLOWED}, (
            "--import imported what the file names", set(sys.modules) - before)
        compile(code, "<code>", "exec")
        _only_definitions(code)
        named = {f.partition(":")[0] for f in re.findall(r"[\w.]+:[\w.]+", text)}
        app = {m: types.ModuleType(m) for m in ("myapp", "myapp.ids")}
        app["myapp.ids"].new_id = _new_id  # type: ignore[attr-defined]
        sys.modules.update(app)  # (the application module a file may name: stood in for)
        try:
            (table,) = defined(code)
        finally:
            del sys.modules["myapp"], sys.modules["myapp.ids"]
        new = {m.split(".")[0] for m in set(sys.modules) - before}
        assert new <= {*_ALLOWED, *(n.split(".")[0] for n in named)}, new
        assert list(where.iterdir()) == [], "defining the code wrote files"
        assert _comparable(table.model()) == _comparable(doc), code
    finally:
        os.chdir(cwd)



@pytest.mark.parametrize("fields", [["a"], ["Meta"], ["_p"], ["model_config"]])
def test_a_field_no_class_can_hold_is_refused_never_silently_dropped(fields: list[str]) -> None:
    """0.7 draft: a field named twice kept the last; ``Meta`` dropped the entity; ``_p``
    became a private attribute (the code defined another model)."""
    doc = json.loads(json.dumps(_BASE))
    for name in fields:
        _field(doc, name=name)
    with pytest.raises(ModelFileError) as err:
        codegen.import_code(json.dumps(doc))
    assert err.value.place == "$.entities[0].fields[1]" + (".name" if fields != ["a"] else "")


def _same(doc: dict[str, Any]) -> Any:
    """``doc`` imports as code defining the model it says; the table it defines."""
    (table,) = defined(codegen.import_code(json.dumps(doc)))
    assert _comparable(table.model()) == _comparable(doc)
    return table


@pytest.mark.parametrize("name", ["str", "addr", "Addr", "float", "red_team", "set", "dict"])
def test_a_table_named_like_a_builtin_or_a_class_imports(name: str) -> None:
    """0.7 draft: the table's variable was its lowercased name: a table named ``str`` (a
    valid DynamoDB name) rebound ``str`` and the design was refused; one named like a
    nested model (``addr`` beside ``class addr``) replaced it."""
    doc = _doc(name=name)
    _field(doc, name="x", type="object", model="addr",
           fields=[{"name": "street", "type": "string"}])
    _field(doc, name="y", type="object", model="Addr", fields=[{"name": "z", "type": "integer"}])
    _field(doc, name="s", type="string", default="text")
    _same(doc)


def test_a_nan_inside_a_default_imports() -> None:
    """0.7 draft: a NaN or infinity inside a list or an object was written as ``nan``,
    ``inf``: a NameError, so the design was refused."""
    doc = _field(json.loads(json.dumps(_BASE)), name="x", type="any",
                 default=[math.nan, {"k": -math.inf}, [math.inf]])
    table = _same(doc)
    (entity,) = table.entities.values()
    x = entity.model_fields["x"].default
    assert math.isnan(x[0]) and x[1] == {"k": -math.inf} and x[2] == [math.inf]


def test_an_entity_named_model_something_imports_at_once() -> None:
    """0.7 draft: ``identifier('model_config')`` added ``_`` while the name started with
    ``model_``: forever (the property's hang at 300 examples)."""
    doc = json.loads(json.dumps(_BASE))
    doc["entities"][0]["name"] = "model_config"
    assert codegen.identifier("model_config") == "fmodel_config"
    _same(doc)


def _twice(d: dict[str, Any]) -> None:
    d["entities"].append(json.loads(json.dumps(d["entities"][0])))


@pytest.mark.parametrize(("change", "place"), [
    (_twice, "$"),
    (lambda d: _field(d, name="x", type="object", model="A", fields=[]), "$"),
    (lambda d: _field(_field(d, name="x", type="object", model="N", fields=[]), name="y",
                      type="object", model="N", fields=[{"name": "q", "type": "string"}]), "$"),
    (lambda d: _field(d, name="x", type="union", of=[{"type": "number"}] * 2),
     "$.entities[0].fields[1].of"),
    (lambda d: _field(d, name="x", type="enum", values=[1, 1]),
     "$.entities[0].fields[1].values"),
    (lambda d: _field(d, name="x", stored=""), "$.entities[0].fields[1].stored"),
    (lambda d: d["entities"][0].update(type_name=""), "$.entities[0].type_name"),
    (lambda d: d["entities"][0].update(unique=[{"field": "a", "prefix": ""}]),
     "$.entities[0].unique[0].prefix"),
], ids=["entity-twice", "entity-and-nested", "nested-two-shapes", "union-repeats",
        "enum-repeats", "empty-alias", "empty-type-name", "empty-prefix"])
def test_what_code_would_define_otherwise_is_refused(change: Any, place: str) -> None:
    """0.7 draft: each of these imported as code defining another model (a second class of
    a name renamed ``A_``; ``float | float`` is ``float``; ``Literal[1, 1]`` is
    ``Literal[1]``; an empty alias, type name or prefix is the default one)."""
    doc = json.loads(json.dumps(_BASE))
    change(doc)
    with pytest.raises(ModelFileError, match=r"named|once|never empty") as err:
        codegen.import_code(json.dumps(doc))
    assert err.value.place.startswith(place)


def test_an_optional_field_without_a_default_defaults_to_none() -> None:
    _same(_field(json.loads(json.dumps(_BASE)), name="x"))


# -- what a file may name as a function (issue 59: "a hostile file can still name eval") ----
_REFUSED = ["eval", "builtins:eval", "exec", "open", "getattr", "type", "breakpoint",
            "os:system", "posix:system", "subprocess:run", "importlib:import_module",
            "antigravity:fly", "pathlib:Path.touch", "str.__class__", "uuid:nope",
            "myapp:__builtins__", "myapp.__init__:x", "operator:methodcaller('__class__')",
            "operator:attrgetter('a.__globals__')", "operator:attrgetter('_x')"]
_TAKEN = {"str.lower": "normalize=str.lower", "builtins:str": "normalize=str",
          "uuid:uuid4": "from uuid import uuid4 as _uuid4",
          "operator:methodcaller('replace', '_', '')": "methodcaller('replace', '_', '')",
          "myapp.ids:new_id": "from myapp.ids import new_id as _new_id",
          "dynaorm.ksuid:ksuid": "from dynaorm.ksuid import ksuid as _ksuid"}


@pytest.mark.parametrize(("name", "where"), [
    (name, where) for name in _REFUSED for where in ("normalize", "default_factory", "by")
    if where != "by" or ":" in name])  # (a bare name a shard is chosen by is a field's)
def test_a_function_that_reaches_beyond_values_is_refused(name: str, where: str) -> None:
    """0.7 draft: ``"normalize": "eval"`` printed ``normalize=eval``: code that evals every
    value saved. Only what dynaorm's own model names is taken: builtins of values and their
    public methods, ``operator``'s getters of public names, the standard library's modules
    of values (:data:`~dynaorm.formats._common.PURE_MODULES`, found there) and modules
    outside the standard library (the application's: written as named, never imported)."""
    doc = json.loads(json.dumps(_BASE))
    entity, place = doc["entities"][0], "$.entities[0]."
    if where == "normalize":
        entity["unique"], place = [{"field": "a", "normalize": name}], place + "unique[0].normalize"
    elif where == "by":
        entity["shards"] = {"pk": {"count": 2, "by": name}}
        entity["pk"], place = "A#{a}#{shard}", place + "shards.pk.by"
    else:
        _field(doc, name="x", default_factory=name)
        place += "fields[1].default_factory"
    before = set(sys.modules)
    with pytest.raises(ModelFileError) as err:
        codegen.import_code(json.dumps(doc))
    assert err.value.place == place, err.value
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] not in _ALLOWED}


@pytest.mark.parametrize(("name", "line"), _TAKEN.items())
def test_a_function_of_values_is_written_as_named_and_not_imported(name: str, line: str) -> None:
    doc = json.loads(json.dumps(_BASE))
    doc["entities"][0]["unique"] = [{"field": "a", "normalize": name}]
    before = set(sys.modules)
    code = codegen.import_code(json.dumps(doc))
    assert line in code, code
    assert "myapp" not in sys.modules and not {
        m for m in set(sys.modules) - before if m.split(".")[0] not in _ALLOWED}


@pytest.mark.parametrize("statement", [
    "import os as _d", "from os import system", "_b.eval('1')", "open('pwned', 'w')",
    "x = (1).__class__", "def f(): pass", "print('x')", "t = _d.Table('t'); t.save()",
    "x = [y for y in ()]", "x = __import__('os')", "x = _dt.__builtins__",
    "class A(_p.BaseModel):\n    x: int = open('pwned', 'w')"])
def test_the_check_defines_only_definitions(statement: str, tmp_path: Path) -> None:
    """The check behind ``--import`` defines the code it wrote (to see dynaorm take the
    design): before that, the code's syntax tree must hold only what the writer writes
    (imports of its aliases, classes, assignments, ``table.pattern`` calls, naming only
    its aliases, what it defines and the builtin types), and it is defined with no other
    builtins. Code the writer might one day get wrong is refused, never run."""
    code = f'"""doc"""\nimport dynaorm as _d\nimport pydantic as _p\n{statement}\n'
    cwd = Path.cwd()
    os.chdir(tmp_path)
    try:
        with pytest.raises(ModelFileError, match="would run"):
            codegen._define(code)
    finally:
        os.chdir(cwd)
    assert list(tmp_path.iterdir()) == []


def test_the_check_has_no_builtins_but_the_types_it_names(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Even code the tree check let through reaches no builtin that runs code."""
    monkeypatch.setattr(codegen, "_only_definitions", lambda tree: None)
    with pytest.raises(ModelFileError, match="name 'print' is not defined"):
        codegen._define('"""doc"""\nimport dynaorm as _d\nt = _d.Table(str(print))\n')


def test_the_command_refuses_a_file_naming_eval_with_exit_2(tmp_path: Path) -> None:
    """``dynaorm model --import`` of a file whose unique rule normalizes with ``eval``: no
    code printed (0.7 draft: ``normalize=eval``), one line naming the place, exit 2."""
    import subprocess

    doc = json.loads(json.dumps(_BASE))
    doc["entities"][0]["unique"] = [{"field": "a", "normalize": "builtins:eval"}]
    (tmp_path / "hostile.json").write_text(json.dumps(doc))
    root = Path(__file__).resolve().parents[2]
    result = subprocess.run(
        [sys.executable, "-m", "dynaorm", "model", "--import", "hostile.json"], cwd=tmp_path,
        capture_output=True, text=True, timeout=120,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})
    assert result.returncode == 2 and result.stdout == "", result
    assert result.stderr == ("dynaorm model: error: $.entities[0].unique[0].normalize: 'eval' "
                             "is not a builtin dynaorm takes (a type or function of values), "
                             "got 'builtins:eval'\n")
