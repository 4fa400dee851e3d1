"""The model as a CloudFormation template: one ``AWS::DynamoDB::Table`` resource with the
table's keys, every GSI (native multi-attribute ones as their key schema) and LSI, the
stream, TTL and the operational settings (warm throughput, on-demand maximum, PITR period,
deletion protection, Contributor Insights' mode, tags), as ``create()`` makes the table.
Reads the model's plain data only. Vector indexes are the resource's ``VectorIndexes``
(cfn-lint's resource schema holds them), their search schemas' attributes defined as
CloudFormation asks; cfn-lint's E3039, which counts only key schemas, is told so in the
resource's ``Metadata``."""

import json
import re
from collections.abc import Mapping
from typing import Any, Final

from dynaorm.formats.tables import (
    attribute_types,
    key_schema,
    logical_name,
    projection,
    search_schema,
)
from dynaorm.schema.settings import INSIGHTS, most, warm


def to_format(model: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """(the template, notes on what it leaves out) of the model's table."""
    table = model["table"]
    settings = table.get("settings") or {}
    props = {
        "TableName": table["name"], "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": a, "AttributeType": t}
                 for a, t in attribute_types(table, search=True).items()],
        "KeySchema": _keys({}, table)}
    indexes = table.get("indexes", ())
    gsis = [_index(i, table) for i in indexes if i["kind"] == "gsi"]
    lsis = [_index(i, table) for i in indexes if i["kind"] == "lsi"]
    vectors = [_vector(i, table) for i in indexes if i["kind"] == "vector"]
    if gsis:
        props["GlobalSecondaryIndexes"] = gsis
    if lsis:
        props["LocalSecondaryIndexes"] = lsis
    if vectors:
        props["VectorIndexes"] = vectors
    if table.get("stream"):
        props["StreamSpecification"] = {"StreamViewType": table["stream"]}
    if table.get("ttl"):
        props["TimeToLiveSpecification"] = {"AttributeName": table["ttl"], "Enabled": True}
    props.update(_settings(settings))
    resource = {"Type": "AWS::DynamoDB::Table", "Properties": props}
    if len(props["AttributeDefinitions"]) > len(attribute_types(table)):
        resource["Metadata"] = _SEARCH_ATTRIBUTES
    if settings.get("deletion_protection"):
        resource |= {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
    name = logical_name(table["name"])
    outputs = {f"{name}Arn": {"Value": {"Fn::GetAtt": [name, "Arn"]}}}
    if table.get("stream"):
        outputs[f"{name}StreamArn"] = {"Value": {"Fn::GetAtt": [name, "StreamArn"]}}
    doc = {"AWSTemplateFormatVersion": "2010-09-09",
           "Description": f"DynamoDB table {table['name']!r}, written by dynaorm model",
           "Resources": {name: resource}, "Outputs": outputs}
    return doc, []


#: a search schema's attributes are defined as CloudFormation asks ("This attribute must also
#: be declared in the table's AttributeDefinitions"), which cfn-lint's E3039 (it counts the
#: key schemas only, 1.58) calls a mismatch: the check is off for this resource
_SEARCH_ATTRIBUTES: Final = {"cfn-lint": {"config": {"ignore_checks": ["E3039"]}}}


#: what YAML (which cfn-lint and CloudFormation's YAML reader parse JSON templates as)
#: does not take raw in a string: written as ``\\uXXXX``
_UNPRINTABLE = re.compile("[\x7f-\x84\x86-\x9f\ufffe\uffff\ud800-\udfff]")


def text_of(template: Mapping[str, Any]) -> str:
    """The template as JSON text: a character outside the Basic Multilingual Plane (an
    attribute named with an emoji) written as itself, since a JSON surrogate pair escape
    is refused by YAML readers (cfn-lint: "invalid Unicode character escape code")."""
    text = json.dumps(template, indent=2, ensure_ascii=False)
    return _UNPRINTABLE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) + "\n"


def _keys(index: Mapping[str, Any], table: Mapping[str, Any]) -> list[dict[str, str]]:
    return [{"AttributeName": a, "KeyType": k} for a, k in key_schema(index, table)]


def _projection(index: Mapping[str, Any], table: Mapping[str, Any]) -> dict[str, Any]:
    kind, included = projection(index, table)
    return {"ProjectionType": kind, **({"NonKeyAttributes": included} if included else {})}


def _index(index: Mapping[str, Any], table: Mapping[str, Any]) -> dict[str, Any]:
    return {"IndexName": index["name"], "KeySchema": _keys(index, table),
            "Projection": _projection(index, table), **_throughput(index)}


def _vector(index: Mapping[str, Any], table: Mapping[str, Any]) -> dict[str, Any]:
    """A vector index as ``VectorIndexes`` holds it (CreateTable's shape)."""
    found = {
        "IndexName": index["name"], "VectorAttribute": {"AttributeName": index["attribute"]},
        "Dimensions": index["dimensions"], "DistanceFunction": index["distance"],
        "Projection": _projection(index, table)}
    schema = search_schema(index)
    if schema:
        found["SearchSchema"] = [{"AttributeName": a, "SearchSchemaElementType": role}
                                 for a, role in schema.items()]
    return found


def _settings(settings: Mapping[str, Any]) -> dict[str, Any]:
    """The table properties of its operational settings."""
    found = _throughput(settings)
    if settings.get("pitr_days"):
        found["PointInTimeRecoverySpecification"] = {
            "PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": settings["pitr_days"]}
    if settings.get("deletion_protection") is not None:
        found["DeletionProtectionEnabled"] = settings["deletion_protection"]
    if settings.get("contributor_insights"):
        found["ContributorInsightsSpecification"] = {
            "Enabled": True, "Mode": INSIGHTS[settings["contributor_insights"]]}
    if settings.get("tags"):
        found["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(settings["tags"].items())]
    return found


def _throughput(declared: Mapping[str, Any]) -> dict[str, Any]:
    """``WarmThroughput`` and ``OnDemandThroughput`` of a table or a GSI, as declared."""
    found = {}
    if declared.get("warm_throughput"):
        found["WarmThroughput"] = warm(declared["warm_throughput"])
    if declared.get("max_on_demand"):
        found["OnDemandThroughput"] = most(declared["max_on_demand"])
    return found
