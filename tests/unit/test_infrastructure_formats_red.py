"""(red team 63) What must never happen in ``dynaorm model --format cloudformation|
terraform``, searched by hypothesis: a table DynamoDB takes printed as a template cfn-lint
refuses, as Terraform that does not parse (python-hcl2, and ``terraform fmt`` where the
binary is installed) or that holds other keys, indexes, projections or settings than
``create()`` sends; a string (a projected attribute's name, a tag) that Terraform reads as
another string than the one written (checked by Terraform itself evaluating it).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("hcl2", reason="python-hcl2 (the dev group's) is not installed")
pytest.importorskip("cfnlint", reason="cfn-lint (the dev group's) is not installed")

import hcl2

from dynaorm import GSI, LSI, Table
from dynaorm.formats import cloudformation, terraform
from dynaorm.formats.terraform import _value
from tests.support.cfn import lint
from tests.support.examples import examples

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


def _errors(template: dict[str, Any]) -> list[str]:
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


def _unquoted(value: Any) -> Any:
    if isinstance(value, str):
        return json.loads(value) if value.startswith('"') else value
    if isinstance(value, list):
        return [_unquoted(v) for v in value]
    if isinstance(value, dict):
        return {_unquoted(k): _unquoted(v) for k, v in value.items() if k != "__is_block__"}
    return value


@settings(max_examples=examples(15), deadline=None, suppress_health_check=list(HealthCheck))
@given(tables())
def test_red_every_table_is_a_template_cfn_lint_passes_holding_what_create_sends(
        table: Table) -> None:
    template, _ = cloudformation.to_format(table.model())
    assert _errors(template) == []
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
        assert [_unescaped(a) for a in index.get("non_key_attributes") or []] == (
            wanted["Projection"].get("NonKeyAttributes") or [])
    assert gsis == {}
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
        assert _errors(template) == []
