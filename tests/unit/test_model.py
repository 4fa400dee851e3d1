"""The model as data (contract 21, "The model as data"): ``Table.model()``, its formats
(dynaorm's JSON, NoSQL Workbench, the AWS DynamoDB MCP server's ``schema.json``), the
entity code ``dynaorm model --import`` prints, which exports back to the same model (every
design the suite maps, and models hypothesis makes), files it refuses (a
``ModelFileError`` naming the place), and the chart. The command itself is in
``system/test_cli.py``, the chart in a browser in ``system/test_chart.py``, ``explain``
in ``integration/test_explain.py``."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import DynaormError, Entity, ModelFileError, Table, formats
from dynaorm.formats.chart import chart_of
from dynaorm.formats.code import code_of, import_code
from dynaorm.schema.model import FORMAT
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
    # integration/test_search_one_request_redteam.py adds Rich, so they are counted)
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
