"""``dynaorm model --format cloudformation|terraform`` (contract 22): the table of every
design the suite maps as an ``AWS::DynamoDB::Table`` that cfn-lint passes with no error,
and as an ``aws_dynamodb_table`` that python-hcl2 parses, each holding what ``create()``
sends (CreateTable's keys, attribute types, indexes and projections, the stream, TTL and
the operational settings). A vector index is CloudFormation's ``VectorIndexes`` (cfn-lint's
own resource schema checks it); the AWS provider has no argument for one, so Terraform
leaves it out with one stderr line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("hcl2", reason="python-hcl2 (the dev group's) is not installed")
pytest.importorskip("cfnlint", reason="cfn-lint (the dev group's) is not installed")

import shutil
import subprocess
import unicodedata

import hcl2
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import GSI, LSI, Table, VectorIndex
from dynaorm.cli.main import main
from dynaorm.formats import cloudformation, terraform
from dynaorm.formats.terraform import _value
from tests.support.cfn import lint
from tests.support.designs import DESIGNS, design
from tests.support.examples import examples

#: the designs with something of every kind: settings, native keys, vector indexes (one
#: with a search schema, its filter a number, and an INCLUDE projection)
full = Table("ops-formats.v2", indexes=[
    GSI("gsi1", pk="gsi1pk", sk="gsi1sk", projection=["note"], max_on_demand=(10, 5),
        warm_throughput=(12001, 4001)),
    GSI("by_place", pk=("tenant_id", "region"), sk=("placed", "total")),
    LSI("lsi1", sk="lsi1sk", projection="KEYS_ONLY")],
    key_types={"total": "N", "year": "N"}, ttl="expires", stream="NEW_AND_OLD_IMAGES",
    vector_indexes=[VectorIndex("by_meaning", attribute="embedding", dimensions=3),
                    VectorIndex("by_tenant", attribute="embedding", dimensions=3,
                                distance="DOT_PRODUCT", partition="tenant_id",
                                filters=["category", "year"], projection=["title"])],
    warm_throughput=(13000, 5000), max_on_demand=(100, 50), pitr_days=14,
    deletion_protection=True, contributor_insights="throttled",
    tags={"team": "payments", "cost:center": "a/b=c+d@e f"})


def _errors(template: dict[str, Any]) -> list[str]:
    """cfn-lint's errors (rule ids starting with E) on ``template``."""
    found = lint(json.dumps(template))
    return [f"{m.rule.id} {m.message}" for m in found if m.rule.id.startswith("E")]


def _errors_of_each(templates: list[dict[str, Any]]) -> list[list[str]]:
    """cfn-lint's errors on each template, from one run over a template holding them all
    (a run of cfn-lint costs ~0.5 s of CPU whatever it holds, and the designs are some
    fifty). Template n's resources and outputs are renamed ``D<n>D<name>`` (its ``Ref``
    and ``Fn::GetAtt`` with them); an error is template n's by the name in its path, and
    one outside every template's names is every template's. E3019 (a table name unique
    across the resources) is left out: each template holds one table, so it is only ever
    two templates' tables of one name meeting here."""
    joint: dict[str, dict[str, Any]] = {"Resources": {}, "Outputs": {}}
    for n, template in enumerate(templates):
        text = json.dumps({k: template.get(k, {}) for k in joint})
        for name in (*template.get("Resources", {}), *template.get("Outputs", {})):
            text = text.replace(json.dumps(name), json.dumps(f"D{n}D{name}"))
        for part, named in json.loads(text).items():
            joint[part].update(named)
    found: list[list[str]] = [[] for _ in templates]
    for m in lint(json.dumps({**templates[0], **joint})):
        if not m.rule.id.startswith("E") or m.rule.id == "E3019":
            continue
        path = [str(p) for p in (getattr(m, "path", None) or [])]
        name = path[1] if len(path) > 1 and path[0] in joint else ""
        owner = re.match(r"D(\d+)D", name)
        for n in ([int(owner[1])] if owner else range(len(templates))):
            found[n].append(f"{m.rule.id} {m.message}")
    return found


@pytest.fixture(scope="module")
def design_errors() -> dict[str, list[str]]:
    """cfn-lint's errors on the CloudFormation template of every design, by design."""
    templates = [cloudformation.to_format(design(r).model())[0] for r in DESIGNS]
    return dict(zip(DESIGNS, _errors_of_each(templates), strict=True))


def _unquoted(value: Any) -> Any:
    """python-hcl2's values with their string quotes taken off (blocks as dicts)."""
    if isinstance(value, str):
        return json.loads(value) if value.startswith('"') else value
    if isinstance(value, list):
        return [_unquoted(v) for v in value]
    if isinstance(value, dict):
        return {_unquoted(k): _unquoted(v) for k, v in value.items() if k != "__is_block__"}
    return value


def _parsed(text: str) -> dict[str, Any]:
    """The ``aws_dynamodb_table`` resource of a configuration, parsed by python-hcl2."""
    (resource,) = [r for r in _unquoted(hcl2.loads(text))["resource"]
                   if "aws_dynamodb_table" in r]
    (body,) = resource["aws_dynamodb_table"].values()
    return dict(body)


def _without_vectors(table: Table) -> dict[str, Any]:
    """CreateTable of ``table`` without its vector indexes (neither format has them) and
    the attributes only their search schemas define."""
    request = table.definition()
    keys = {k["AttributeName"] for part in (
        [request], request.get("GlobalSecondaryIndexes", []),
        request.get("LocalSecondaryIndexes", [])) for k in
        (k for x in part for k in x["KeySchema"])}
    request["AttributeDefinitions"] = [a for a in request["AttributeDefinitions"]
                                       if a["AttributeName"] in keys]
    request.pop("VectorIndexes", None)
    return request


def test_cfn_lint_finds_errors_in_a_broken_table() -> None:  # (the check can fail)
    template, _ = cloudformation.to_format(full.model())
    props = next(iter(template["Resources"].values()))["Properties"]
    broken = {**template, "Resources": {"T": {"Type": "AWS::DynamoDB::Table", "Properties": {
        **props, "BillingMode": "FREE", "KeySchema": []}}}}
    assert len(_errors(broken)) >= 2
    vector = {**props["VectorIndexes"][0], "Dimensions": 0, "DistanceFunction": "MANHATTAN"}
    del vector["Projection"]
    (name, resource), = template["Resources"].items()
    broken = {**template, "Resources": {name: {**resource, "Properties": {
        **props, "VectorIndexes": [vector, *props["VectorIndexes"][1:]]}}}}
    assert len(_errors(broken)) == 3  # (its resource schema checks a vector index)


def test_the_joint_lint_names_the_template_it_faults() -> None:  # (the check can fail)
    good, _ = cloudformation.to_format(full.model())
    (name, resource), = good["Resources"].items()
    bad = {**good, "Resources": {name: {**resource, "Properties": {
        **resource["Properties"], "BillingMode": "FREE"}}}}
    found = _errors_of_each([good, bad, good])
    assert found[0] == found[2] == [] and len(found[1]) >= 1, found
    assert found[1] == _errors(bad)  # (what it finds alone)


@pytest.mark.parametrize("reference", DESIGNS)
def test_every_design_is_a_table_cfn_lint_passes_holding_what_create_sends(
        reference: str, design_errors: dict[str, list[str]]) -> None:
    table = design(reference)
    template, notes = cloudformation.to_format(table.model())
    assert design_errors[reference] == []
    (resource,) = template["Resources"].values()
    props, request = resource["Properties"], table.definition()
    for key in ("TableName", "BillingMode", "KeySchema", "AttributeDefinitions",
                "GlobalSecondaryIndexes", "LocalSecondaryIndexes", "VectorIndexes"):
        assert props.get(key) == request.get(key), key
    assert props.get("StreamSpecification", {}).get("StreamViewType") == (
        request.get("StreamSpecification", {}).get("StreamViewType"))
    assert props.get("TimeToLiveSpecification", {}).get("AttributeName") == table.ttl
    assert notes == []


def _assert_attributes_and_gsis(body: dict[str, Any], request: dict[str, Any],
                                escaped: bool = False) -> None:
    """A Terraform table ``body`` (python-hcl2's) declares the attributes and global
    indexes of the CreateTable ``request``: keys, projection, projected attributes
    (``escaped``: as Terraform reads python-hcl2's escapes, an absent list empty)."""
    assert {(a["name"], a["type"]) for a in body["attribute"]} == {
        (a["AttributeName"], a["AttributeType"]) for a in request["AttributeDefinitions"]}
    gsis = {g["IndexName"]: g for g in request.get("GlobalSecondaryIndexes", [])}
    for index in body.get("global_secondary_index", []):
        wanted = gsis.pop(index["name"])
        keys = ([(k["attribute_name"], k["key_type"]) for k in index["key_schema"]]
                if "key_schema" in index else
                [(index["hash_key"], "HASH")] + ([(index["range_key"], "RANGE")]
                                                 if "range_key" in index else []))
        assert keys == [(k["AttributeName"], k["KeyType"]) for k in wanted["KeySchema"]]
        assert index["projection_type"] == wanted["Projection"]["ProjectionType"]
        if escaped:
            assert [_unescaped(a) for a in index.get("non_key_attributes") or []] == (
                wanted["Projection"].get("NonKeyAttributes") or [])
        else:
            assert index.get("non_key_attributes") == wanted["Projection"].get(
                "NonKeyAttributes")
    assert gsis == {}


@pytest.mark.parametrize("reference", DESIGNS)
def test_every_design_is_terraform_that_parses_with_the_providers_names(
        reference: str) -> None:
    table = design(reference)
    text, notes = terraform.to_format(table.model())
    body = _parsed(text)
    request = _without_vectors(table)
    assert body["name"] == table.name and body["billing_mode"] == "PAY_PER_REQUEST"
    assert body["hash_key"] == table.pk and body.get("range_key") == table.sk
    _assert_attributes_and_gsis(body, request)
    lsis = {i["IndexName"]: i for i in request.get("LocalSecondaryIndexes", [])}
    assert {i["name"]: i["range_key"] for i in body.get("local_secondary_index", [])} == {
        n: i["KeySchema"][1]["AttributeName"] for n, i in lsis.items()}
    assert (body.get("ttl") or [{}])[0].get("attribute_name") == table.ttl
    assert body.get("stream_view_type") == table.stream
    assert len(notes) == len(table.vector_indexes)


def test_cloudformation_holds_the_settings_and_native_keys() -> None:
    template, notes = cloudformation.to_format(full.model())
    assert _errors(template) == []
    resource = template["Resources"]["OpsFormatsV2"]
    props = resource["Properties"]
    assert resource["DeletionPolicy"] == resource["UpdateReplacePolicy"] == "Retain"
    assert props["WarmThroughput"] == {"ReadUnitsPerSecond": 13000, "WriteUnitsPerSecond": 5000}
    assert props["OnDemandThroughput"] == {"MaxReadRequestUnits": 100,
                                           "MaxWriteRequestUnits": 50}
    assert props["PointInTimeRecoverySpecification"] == {
        "PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 14}
    assert props["DeletionProtectionEnabled"] is True
    assert props["ContributorInsightsSpecification"] == {"Enabled": True,
                                                         "Mode": "THROTTLED_KEYS"}
    assert {t["Key"]: t["Value"] for t in props["Tags"]} == full.declared_settings.tags
    gsi1, native = props["GlobalSecondaryIndexes"]
    assert gsi1["OnDemandThroughput"] == {"MaxReadRequestUnits": 10, "MaxWriteRequestUnits": 5}
    assert gsi1["WarmThroughput"] == {"ReadUnitsPerSecond": 12001, "WriteUnitsPerSecond": 4001}
    assert gsi1["Projection"] == {"ProjectionType": "INCLUDE",
                                  "NonKeyAttributes": ["note", "_type", "expires"]}
    assert [k["AttributeName"] for k in native["KeySchema"]] == [
        "tenant_id", "region", "placed", "total"]
    assert props["StreamSpecification"] == {"StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert props["TimeToLiveSpecification"] == {"AttributeName": "expires", "Enabled": True}
    assert props["VectorIndexes"] == full.definition()["VectorIndexes"]
    assert props["VectorIndexes"][1] == {
        "IndexName": "by_tenant", "VectorAttribute": {"AttributeName": "embedding"},
        "Dimensions": 3, "DistanceFunction": "DOT_PRODUCT",
        "Projection": {"ProjectionType": "INCLUDE",
                       "NonKeyAttributes": ["title", "_type", "expires"]},
        "SearchSchema": [{"AttributeName": "tenant_id", "SearchSchemaElementType": "HASH"},
                         {"AttributeName": "category",
                          "SearchSchemaElementType": "INLINE_FILTER"},
                         {"AttributeName": "year", "SearchSchemaElementType": "INLINE_FILTER"}]}
    types = {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]}
    assert types["category"] == "S" and types["year"] == "N"  # (as CloudFormation asks)
    assert notes == []


def test_terraform_holds_the_settings_native_keys_and_contributor_insights() -> None:
    text, notes = terraform.to_format(full.model())
    parsed = _unquoted(hcl2.loads(text))
    body = _parsed(text)
    assert body["deletion_protection_enabled"] is True
    assert body["warm_throughput"] == [{"read_units_per_second": 13000,
                                        "write_units_per_second": 5000}]
    assert body["on_demand_throughput"] == [{"max_read_request_units": 100,
                                             "max_write_request_units": 50}]
    assert body["point_in_time_recovery"] == [{"enabled": True,
                                               "recovery_period_in_days": 14}]
    assert body["stream_enabled"] is True
    assert body["tags"] == {"team": "payments", "cost:center": "a/b=c+d@e f"}
    gsi1, native = body["global_secondary_index"]
    assert gsi1["on_demand_throughput"] == [{"max_read_request_units": 10,
                                             "max_write_request_units": 5}]
    assert native["key_schema"] == [
        {"attribute_name": "tenant_id", "key_type": "HASH"},
        {"attribute_name": "region", "key_type": "HASH"},
        {"attribute_name": "placed", "key_type": "RANGE"},
        {"attribute_name": "total", "key_type": "RANGE"}]
    assert "hash_key" not in native
    (insights,) = [r["aws_dynamodb_contributor_insights"] for r in parsed["resource"]
                   if "aws_dynamodb_contributor_insights" in r]
    (found,) = insights.values()
    assert found["mode"] == "THROTTLED_KEYS"
    assert found["table_name"] == "${aws_dynamodb_table.ops-formats_v2.name}"
    assert "embedding" not in text
    assert notes == [f"Terraform has no vector index: {name!r} (on 'embedding', 3 dimensions) "
                     "left out; create() adds it" for name in ("by_meaning", "by_tenant")]


@pytest.mark.parametrize("fmt", ["cloudformation", "terraform"])
def test_the_command_prints_the_format_and_a_note_per_vector_index_left_out(
        fmt: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["model", f"{__name__}:full", "--format", fmt]) == 0
    out, err = capsys.readouterr()
    if fmt == "cloudformation":
        assert _errors(json.loads(out)) == []
        assert err == ""  # (its vector indexes are in the template)
    else:
        assert _parsed(out)["name"] == "ops-formats.v2"
        assert err.splitlines() == [
            f"dynaorm model: Terraform has no vector index: {name!r} (on 'embedding', 3 "
            "dimensions) left out; create() adds it" for name in ("by_meaning", "by_tenant")]
    target = tmp_path / "out"
    assert main(["model", f"{__name__}:full", "--format", fmt, "-o", str(target)]) == 0
    assert target.read_text(encoding="utf-8") == out
    assert main(["model", "--import", str(target), "--format", fmt]) == 2
    assert "--import reads json, mcp or workbench" in capsys.readouterr().err


# --- what must never happen in a printed template, searched by hypothesis
# (moved from unit/test_infrastructure_formats_red.py:
# (red team 63) What must never happen in ``dynaorm model --format cloudformation|
# terraform``, searched by hypothesis: a table DynamoDB takes printed as a template cfn-lint
# refuses, as Terraform that does not parse (python-hcl2, and ``terraform fmt`` where the
# binary is installed) or that holds other keys, indexes, projections or settings than
# ``create()`` sends; a string (a projected attribute's name, a tag) that Terraform reads as
# another string than the one written (checked by Terraform itself evaluating it).)

pytest.importorskip("hcl2", reason="python-hcl2 (the dev group's) is not installed")
pytest.importorskip("cfnlint", reason="cfn-lint (the dev group's) is not installed")


TERRAFORM = shutil.which("terraform")
_NAME = st.text("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-",
                min_size=3, max_size=255)
_ATTR = st.from_regex(r"[a-z][a-z0-9_]{0,12}", fullmatch=True).filter(
    lambda a: a not in ("pk", "sk", "_type", "_rev", "expires"))
#: a DynamoDB attribute name (any UTF-8 text) as a projection may name it
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=20)
#: a tag DynamoDB takes: letters, numbers, spaces and ``_.:/=+-@``
_TAG = st.text(st.characters(whitelist_categories=("L", "N", "Zs"),
                             whitelist_characters="_.:/=+-@"), max_size=30)


def _lint_errors(template: dict[str, Any]) -> list[str]:
    found = lint(cloudformation.text_of(template))
    return [f"{m.rule.id} {m.message}" for m in found if m.rule.id.startswith("E")]


@st.composite
def tables(draw: st.DrawFn) -> Table:
    """A table DynamoDB takes, with GSIs (one attribute or native multi-attribute keys),
    LSIs, projections of every kind, key types, stream, TTL and settings."""
    attrs = draw(st.lists(_ATTR, min_size=6, max_size=6, unique=True))
    projection = st.one_of(st.just("ALL"), st.just("KEYS_ONLY"),
                           st.lists(_TEXT, min_size=1, max_size=3, unique=True))
    gsis = [GSI(f"g{i}x", pk=tuple(draw(st.lists(st.sampled_from(attrs[:3]), min_size=1,
                                                   max_size=2, unique=True))),
                sk=tuple(draw(st.lists(st.sampled_from(attrs[3:]), max_size=2, unique=True))),
                projection=draw(projection),
                max_on_demand=draw(st.none() | st.tuples(st.integers(1, 10**6),
                                                         st.none() | st.integers(1, 10**6))),
                warm_throughput=draw(st.none() | st.tuples(st.integers(12000, 10**6),
                                                           st.integers(4000, 10**6))))
            for i in range(draw(st.integers(0, 3)))]
    lsis = [LSI(f"l{i}x", sk=attrs[3 + i], projection=draw(projection))
            for i in range(draw(st.integers(0, 2)))]
    keyed = {a for g in gsis for a in (*g.hash_keys, *g.range_keys)} | {
        i.sk for i in lsis}
    return Table(
        draw(_NAME), indexes=[*gsis, *lsis],
        key_types={a: draw(st.sampled_from("SNB")) for a in sorted(keyed)},
        ttl=draw(st.none() | st.just("expires")),
        stream=draw(st.none() | st.sampled_from(["KEYS_ONLY", "NEW_IMAGE", "OLD_IMAGE",
                                                 "NEW_AND_OLD_IMAGES"])),
        pitr_days=draw(st.none() | st.integers(1, 35)),
        deletion_protection=draw(st.none() | st.booleans()),
        contributor_insights=draw(st.none() | st.sampled_from(["accessed", "throttled"])),
        max_on_demand=draw(st.none() | st.tuples(st.integers(1, 10**6),
                                                 st.integers(1, 10**6))),
        warm_throughput=draw(st.none() | st.tuples(st.integers(12000, 10**6),
                                                   st.integers(4000, 10**6))),
        tags=draw(st.dictionaries(_TAG.filter(lambda k: k[:4].lower() != "aws:" and k),
                                  _TAG, max_size=3)))




@settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck))
@given(tables())
def test_red_every_table_is_a_template_cfn_lint_passes_holding_what_create_sends(
        table: Table) -> None:
    template, _ = cloudformation.to_format(table.model())
    assert _lint_errors(template) == []
    (resource,) = template["Resources"].values()
    props, request = resource["Properties"], table.definition()
    for key in ("TableName", "BillingMode", "KeySchema", "AttributeDefinitions",
                "GlobalSecondaryIndexes", "LocalSecondaryIndexes", "WarmThroughput",
                "OnDemandThroughput", "DeletionProtectionEnabled", "Tags"):
        assert props.get(key) == request.get(key), key
    assert (props.get("StreamSpecification") or {}).get("StreamViewType") == table.stream
    assert (props.get("TimeToLiveSpecification") or {}).get("AttributeName") == table.ttl
    declared = table.declared_settings
    assert (props.get("PointInTimeRecoverySpecification") or {}).get(
        "RecoveryPeriodInDays") == declared.pitr_days
    assert (props.get("ContributorInsightsSpecification") or {}).get("Mode") == (
        {"accessed": "ACCESSED_AND_THROTTLED_KEYS", "throttled": "THROTTLED_KEYS"}.get(
            declared.contributor_insights or ""))


@settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck))
@given(tables())
def test_red_every_table_is_terraform_that_parses_holding_what_create_sends(
        table: Table) -> None:
    text, _ = terraform.to_format(table.model())
    if TERRAFORM:
        found = subprocess.run([TERRAFORM, "fmt", "-no-color", "-"], input=text.encode(),
                               capture_output=True, timeout=60, check=False)
        assert found.returncode == 0, found.stderr.decode()
    (resource,) = [r for r in _unquoted(hcl2.loads(text))["resource"]
                   if "aws_dynamodb_table" in r]
    (body,) = resource["aws_dynamodb_table"].values()
    request = table.definition()
    _assert_attributes_and_gsis(body, request, escaped=True)
    assert {_unescaped(k): _unescaped(v) for k, v in (body.get("tags") or {}).items()} == (
        dict(table.declared_settings.tags))


def _unescaped(text: str) -> str:
    """python-hcl2 keeps a template's ``$${`` and ``%%{`` escapes: Terraform reads them as
    ``${`` and ``%{``."""
    return text.replace("$${", "${").replace("%%{", "%{")


@pytest.mark.skipif(TERRAFORM is None, reason="terraform is not installed")
@settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck))
@given(texts=st.lists(st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
                      .map(lambda t: unicodedata.normalize("NFC", t)), min_size=1, max_size=20))
def test_red_terraform_reads_every_string_as_written(texts: list[str],
                                                     tmp_path_factory: Any) -> None:
    """A string written by the Terraform format (a projected attribute, a tag) evaluates,
    in Terraform itself, to the same string: an emoji was written as a JSON surrogate pair
    (``\\ud83d\\ude00``), which Terraform refuses as an invalid escape. (Strings in NFC:
    HCL normalizes every string literal to NFC, so Terraform reads U+F900 as U+8C48
    whatever the file says.)"""
    assert TERRAFORM is not None
    root = Path(tmp_path_factory.mktemp("tf"))
    (root / "main.tf").write_text(
        f'locals {{\n  v = {_value(texts)}\n  m = {_value(dict.fromkeys(texts, "x"))}\n}}\n'
        'output "v" {\n  value = local.v\n}\noutput "m" {\n  value = local.m\n}\n',
        encoding="utf-8")
    applied = subprocess.run([TERRAFORM, "apply", "-auto-approve", "-input=false",
                              "-no-color"], cwd=root, capture_output=True, timeout=120,
                             check=False, env={"PATH": "/usr/bin:/bin", "TF_IN_AUTOMATION": "1",
                                               "CHECKPOINT_DISABLE": "1", "HOME": str(root)})
    assert applied.returncode == 0, applied.stderr.decode()
    out = subprocess.run([TERRAFORM, "output", "-json"], cwd=root, capture_output=True,
                         timeout=60, check=True, env={"PATH": "/usr/bin:/bin",
                                                      "CHECKPOINT_DISABLE": "1",
                                                      "HOME": str(root)})
    found = json.loads(out.stdout)
    assert found["v"]["value"] == texts
    assert found["m"]["value"] == dict.fromkeys(texts, "x")


def test_red_a_long_table_name_is_a_template_cfn_lint_passes() -> None:
    """A table name of 255 characters gave a logical id (and outputs ``...Arn``,
    ``...StreamArn``) longer than CloudFormation's 255 (cfn-lint E6011, E3001)."""
    for name in ("a" * 255, "1" + "b" * 254):
        template, _ = cloudformation.to_format(Table(name, stream="KEYS_ONLY").model())
        assert _lint_errors(template) == []
