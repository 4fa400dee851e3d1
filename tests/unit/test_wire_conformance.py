"""dynaorm's own wire (dynaorm.wire) against botocore's: every operation dynaorm sends is
rendered as botocore's serializer renders it, answers decode as botocore's parser decodes
them, every documented error maps to the same dynaorm error, requests are signed as the
botocore client signs them, and the endpoint is the one the botocore client resolves from
each configuration source. Pure: nothing is sent (the signature test stops the client
before sending)."""

from __future__ import annotations

import base64
import datetime
import http.server
import json
import threading
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import botocore.auth
import botocore.exceptions
import botocore.parsers
import botocore.serialize
import botocore.session
import pytest
from botocore.awsrequest import AWSResponse
from botocore.config import Config
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from dynaorm import (
    Client,
    DynaormError,
    RequestError,
    Table,
    TableNotFoundError,
    ThrottledError,
    ThrottlingReason,
)
from dynaorm.client.botocore import botocore_error
from dynaorm.protocol.policy import retryable
from dynaorm.wire import TARGET_PREFIX, SyncWire, answer_error, decode, render, sigv4
from tests.support.loaders import shared_loaders
from tests.support.recording import send

MODEL = botocore.session.get_session().get_service_model("dynamodb")

#: every shape of value an item may hold
ITEM: dict[str, Any] = {
    "pk": {"S": "ORDER#1"}, "sk": {"S": "LINE#0001"},
    "n": {"N": "-12.5e3"}, "big": {"N": "123456789012345678901234567890123456789"},
    "b": {"B": b"\x00\xffbinary\n"}, "bs": {"BS": [b"a", b"\x00\x01", b""]},
    "ss": {"SS": ["x", "y"]}, "ns": {"NS": ["1", "2.5"]},
    "t": {"BOOL": True}, "nil": {"NULL": True},
    "m": {"M": {"inner": {"L": [{"S": "é€😀"}, {"B": b"\x01"}, {"M": {"deep": {"N": "0"}}}]}}},
    "l": {"L": [{"SS": ["q"]}, {"BS": [b"z"]}, {"NULL": True}]},
}
KEY = {"pk": {"S": "ORDER#1"}, "sk": {"B": b"\x10\x20"}}
COND = {"ConditionExpression": "attribute_not_exists(#p) AND #v = :v",
        "ExpressionAttributeNames": {"#p": "pk", "#v": "version"},
        "ExpressionAttributeValues": {":v": {"N": "3"}, ":b": {"B": b"\xfe"}}}

_BULK_ARN = "arn:aws:dynamodb:us-east-1:123456789012:table/app/bulk-operation/0123456789"
REQUESTS: dict[str, list[dict[str, Any]]] = {
    "GetItem": [{"TableName": "app", "Key": KEY, "ConsistentRead": True,
                 "ProjectionExpression": "#a, b", "ExpressionAttributeNames": {"#a": "a"},
                 "ReturnConsumedCapacity": "TOTAL"}],
    "PutItem": [{"TableName": "app", "Item": ITEM, **COND, "ReturnValues": "ALL_OLD",
                 "ReturnConsumedCapacity": "INDEXES",
                 "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
                 "ReturnItemCollectionMetrics": "SIZE"}],
    "UpdateItem": [{"TableName": "app", "Key": KEY,
                    "UpdateExpression": "SET #v = :v ADD s :b REMOVE x", **COND,
                    "ReturnValues": "ALL_NEW"}],
    "DeleteItem": [{"TableName": "app", "Key": KEY, **COND}],
    "TransactWriteItems": [{"ClientRequestToken": "tok-1", "ReturnConsumedCapacity": "INDEXES",
                            "TransactItems": [
                                {"Put": {"TableName": "app", "Item": ITEM, **COND}},
                                {"Update": {"TableName": "app", "Key": KEY,
                                            "UpdateExpression": "SET a = :v",
                                            "ExpressionAttributeValues": {":v": {"L": []}}}},
                                {"Delete": {"TableName": "app", "Key": KEY}},
                                {"ConditionCheck": {"TableName": "app", "Key": KEY, **COND,
                                                    "ReturnValuesOnConditionCheckFailure":
                                                        "ALL_OLD"}}]}],
    "TransactGetItems": [{"TransactItems": [
        {"Get": {"TableName": "app", "Key": KEY, "ProjectionExpression": "a"}},
        {"Get": {"TableName": "other", "Key": {"id": {"N": "7"}}}}]}],
    "BatchGetItem": [{"RequestItems": {"app": {"Keys": [KEY, {"pk": {"S": "x"},
                                                              "sk": {"S": "y"}}],
                                               "ConsistentRead": False}}}],
    "BatchWriteItem": [{"RequestItems": {"app": [{"PutRequest": {"Item": ITEM}},
                                                 {"DeleteRequest": {"Key": KEY}}]},
                        "ReturnConsumedCapacity": "TOTAL"}],
    "Query": [{"TableName": "app", "IndexName": "gsi1", "Limit": 25,
               "KeyConditionExpression": "pk = :p AND begins_with(sk, :s)",
               "FilterExpression": "contains(bs, :b)",
               "ExpressionAttributeValues": {":p": {"S": "A"}, ":s": {"S": "B#"},
                                             ":b": {"B": b"\x00"}},
               "ExclusiveStartKey": KEY, "ScanIndexForward": False, "Select": "COUNT"}],
    "Scan": [{"TableName": "app", "Segment": 1, "TotalSegments": 4, "Limit": 1000,
              "ExclusiveStartKey": {"pk": {"B": b"\xff"}}, "ConsistentRead": True}],
    "DescribeTable": [{"TableName": "app"}],
    "DeleteTable": [{"TableName": "app"}],
    # the table settings create() applies and table.settings() reads back (issue 63)
    "UpdateContinuousBackups": [{"TableName": "app", "PointInTimeRecoverySpecification": {
        "PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 14}}],
    "DescribeContinuousBackups": [{"TableName": "app"}],
    # a filtered export (issue 85: jobs.export(start_export=), the bulk service's emulator)
    "ExportTableToPointInTime": [{
        "TableArn": "arn:aws:dynamodb:us-east-1:123456789012:table/app",
        "S3Bucket": "exports", "S3Prefix": "app/x", "ExportFormat": "DYNAMODB_JSON",
        "ExportType": "FULL_EXPORT", "ClientToken": "0f" * 16,
        "FilterSpecification": {
            "KeyConditionExpression": "#k = :k", "FilterExpression": "#t IN (:a, :b)",
            "ExpressionAttributeNames": {"#k": "pk", "#t": "_type"},
            "ExpressionAttributeValues": {":k": {"S": "T#acme"}, ":a": {"S": "Order"},
                                          ":b": {"B": b"\x00"}}}}],
    "DescribeExport": [{"ExportArn":
                        "arn:aws:dynamodb:us-east-1:123456789012:table/app/export/01"}],
    "ListExports": [{"TableArn": "arn:aws:dynamodb:us-east-1:123456789012:table/app",
                     "MaxResults": 25, "NextToken": "t"}],
    "UpdateContributorInsights": [{"TableName": "app", "ContributorInsightsAction": "ENABLE",
                                   "ContributorInsightsMode": "THROTTLED_KEYS"}],
    "DescribeContributorInsights": [{"TableName": "app"}],
    "TagResource": [{"ResourceArn": "arn:aws:dynamodb:us-east-1:123456789012:table/app",
                     "Tags": [{"Key": "team", "Value": "payments"}]}],
    "ListTagsOfResource": [{"ResourceArn":
                            "arn:aws:dynamodb:us-east-1:123456789012:table/app"}],
    "CreateTable": [{
        "TableName": "app", "BillingMode": "PAY_PER_REQUEST",
        "AttributeDefinitions": [{"AttributeName": "pk", "AttributeType": "S"},
                                 {"AttributeName": "sk", "AttributeType": "B"},
                                 {"AttributeName": "n", "AttributeType": "N"}],
        "KeySchema": [{"AttributeName": "pk", "KeyType": "HASH"},
                      {"AttributeName": "sk", "KeyType": "RANGE"}],
        "GlobalSecondaryIndexes": [{"IndexName": "gsi1", "KeySchema": [
            {"AttributeName": "n", "KeyType": "HASH"}],
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["a", "_type"]}}],
        "LocalSecondaryIndexes": [{"IndexName": "lsi1", "KeySchema": [
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "n", "KeyType": "RANGE"}],
            "Projection": {"ProjectionType": "KEYS_ONLY"}}],
        "StreamSpecification": {"StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"},
        "VectorIndexes": [{
            "IndexName": "by_meaning", "VectorAttribute": {"AttributeName": "emb"},
            "Dimensions": 768, "DistanceFunction": "COSINE",
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["_type"]},
            "SearchSchema": [
                {"AttributeName": "n", "SearchSchemaElementType": "HASH"},
                {"AttributeName": "c", "SearchSchemaElementType": "INLINE_FILTER"}]}]}],
    "UpdateTable": [{"TableName": "app",
                     "AttributeDefinitions": [{"AttributeName": "x", "AttributeType": "S"}],
                     "GlobalSecondaryIndexUpdates": [{"Create": {
                         "IndexName": "xidx", "KeySchema": [{"AttributeName": "x",
                                                          "KeyType": "HASH"}],
                         "Projection": {"ProjectionType": "ALL"}}}]},
                    {"TableName": "app", "VectorIndexUpdates": [{"Create": {
                        "IndexName": "by_e", "VectorAttribute": {"AttributeName": "emb"},
                        "Dimensions": 3, "DistanceFunction": "EUCLIDEAN",
                        "Projection": {"ProjectionType": "KEYS_ONLY"}}}]}],
    "SearchVectors": [{"TableName": "app", "IndexName": "by_meaning", "TopK": 10,
                       "SearchVector": [{"N": "0.100000001"}, {"N": "-3.40282347e+38"}],
                       "SearchConditionExpression": "#n0 = :v0 AND #n1 = :v1",
                       "ExpressionAttributeNames": {"#n0": "n", "#n1": "c"},
                       "ExpressionAttributeValues": {":v0": {"N": "7"}, ":v1": {"B": b"\x00"}},
                       "ProjectionExpression": "#n0, emb", "ReturnConsumedCapacity": "TOTAL"}],
    "UpdateTimeToLive": [{"TableName": "app", "TimeToLiveSpecification": {
        "Enabled": True, "AttributeName": "expires"}}],
    "DescribeTimeToLive": [{"TableName": "app"}],
    "ListTables": [{"Limit": 10, "ExclusiveStartTableName": "app"}],
    # (bulk put items: in botocore's model from 1.43.124; jobs.load and the emulator)
    "StartBulkPutItems": [{
        "TableName": "app", "ClientToken": "dynaorm-" + "0" * 32,
        "InputS3Configuration": {"S3Bucket": "b", "S3KeyPrefix": "loads/x/round-1/input/",
                                 "InputFormat": "DYNAMODB_JSON", "InputCompressionType": "GZIP"},
        "OutputS3Configuration": {"S3Bucket": "b", "S3KeyPrefix": "loads/x/round-1/report",
                                  "OutputType": ["ERROR", "CONDITION_CHECK_FAILURE"]},
        "MaxWriteRequestUnits": 1024}],
    "DescribeBulkOperation": [{"BulkOperationArn": _BULK_ARN}],
    "CancelBulkOperation": [{"BulkOperationArn": _BULK_ARN}],
    "ListBulkOperations": [{"MaxResults": 10, "NextToken": "000000000000000a"}],
}
CASES = [pytest.param(op, req, id=op, marks=() if op in MODEL.operation_names else
                      pytest.mark.skip(reason=f"botocore {botocore.__version__} has no model "
                                                f"of {op} (1.43.124 and later have)"))
         for op, reqs in REQUESTS.items() for req in reqs]


def botocore_body(operation: str, request: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """What botocore's serializer sends for ``request``: the parsed body and the target."""
    serialized = botocore.serialize.create_serializer("json").serialize_to_request(
        request, MODEL.operation_model(operation))
    return json.loads(serialized["body"]), serialized["headers"]["X-Amz-Target"]


def fields(a: Any, b: Any, path: str = "$") -> Iterator[str]:
    """Every path where ``a`` and ``b`` differ (type or value)."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            if k not in a or k not in b:
                yield f"{path}.{k}: only in {'botocore' if k in b else 'dynaorm'}"
            else:
                yield from fields(a[k], b[k], f"{path}.{k}")
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from fields(x, y, f"{path}[{i}]")
    elif type(a) is not type(b) or a != b:
        yield f"{path}: dynaorm {a!r} != botocore {b!r}"


@pytest.mark.parametrize(("operation", "request_"), CASES)
def test_requests_render_as_botocore_serializes_them(operation: str,
                                                     request_: dict[str, Any]) -> None:
    ours = json.loads(render(request_))
    theirs, target = botocore_body(operation, request_)
    assert list(fields(ours, theirs)) == []
    assert target == TARGET_PREFIX + operation


def test_every_operation_dynaorm_sends_is_covered() -> None:
    import re

    ops = set(MODEL.operation_names)
    sent = {m for p in Path(__file__).parents[2].joinpath("dynaorm").rglob("*.py")
            for m in re.findall(r'"([A-Z][A-Za-z]+)"', p.read_text()) if m in ops}
    assert sent and sent <= set(REQUESTS)


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode()


#: answers as DynamoDB sends them (binary values base64, numbers as strings)
WIRE_ITEM = {"pk": {"S": "A"}, "b": {"B": _b64(b"\x00\xff")},
             "bs": {"BS": [_b64(b"x"), _b64(b"")]},
             "m": {"M": {"l": {"L": [{"B": _b64(b"\x01")}, {"N": "1.50"}, {"S": "B"}]}}},
             "looks": {"M": {"B": {"S": "not binary"}, "BS": {"L": []}}}}
ANSWERS: list[tuple[str, dict[str, Any]]] = [
    ("GetItem", {"Item": WIRE_ITEM, "ConsumedCapacity": {"TableName": "app",
                                                         "CapacityUnits": 0.5}}),
    ("GetItem", {}),
    ("PutItem", {"Attributes": WIRE_ITEM, "ConsumedCapacity": {
        "TableName": "app", "CapacityUnits": 1.0, "Table": {"CapacityUnits": 1.0},
        "GlobalSecondaryIndexes": {"g": {"CapacityUnits": 1.0}}}}),
    ("Query", {"Items": [WIRE_ITEM] * 3, "Count": 3, "ScannedCount": 3,
               "LastEvaluatedKey": {"pk": {"B": _b64(b"k")}}}),
    ("Scan", {"Items": [], "Count": 0, "ScannedCount": 10}),
    ("BatchGetItem", {"Responses": {"app": [WIRE_ITEM]}, "UnprocessedKeys": {
        "app": {"Keys": [{"pk": {"B": _b64(b"u")}}]}}}),
    ("BatchWriteItem", {"UnprocessedItems": {"app": [{"PutRequest": {"Item": WIRE_ITEM}}]}}),
    ("TransactGetItems", {"Responses": [{"Item": WIRE_ITEM}, {}]}),
    ("TransactWriteItems", {"ConsumedCapacity": [{"TableName": "app", "CapacityUnits": 6.0}]}),
    ("DescribeTimeToLive", {"TimeToLiveDescription": {"TimeToLiveStatus": "ENABLED",
                                                      "AttributeName": "expires"}}),
    ("SearchVectors", {"SearchResults": [{"Item": WIRE_ITEM, "Score": 0.25},
                                         {"Item": {"pk": {"S": "B"}}, "Score": 2}],
                       "ConsumedCapacity": {"VectorSearchRequestBytes": 1024.0}}),
    ("SearchVectors", {"SearchResults": []}),
]


def botocore_parse(operation: str, status: int, body: bytes,
                   headers: dict[str, str] | None = None) -> dict[str, Any]:
    """What the botocore client makes of an answer (its endpoint's steps: parse with the
    output shape, then add an error's modeled fields)."""
    op = MODEL.operation_model(operation)
    parser = botocore.parsers.create_parser("json")
    response = {"status_code": status, "headers": headers or {}, "body": body}
    parsed: dict[str, Any] = parser.parse(response, op.output_shape)
    if status >= 300:
        shape = MODEL.shape_for_error_code(parsed.get("Error", {}).get("Code"))
        if shape is not None:
            parsed.update(parser.parse(response, shape))
    return parsed


@pytest.mark.parametrize(("operation", "answer"), ANSWERS, ids=[op for op, _ in ANSWERS])
def test_answers_decode_as_botocore_parses_them(operation: str, answer: dict[str, Any]) -> None:
    body = json.dumps(answer).encode()
    theirs = botocore_parse(operation, 200, body)
    theirs.pop("ResponseMetadata")
    assert list(fields(decode(body), theirs)) == []


#: (status, __type, extra modeled fields) of every error DynamoDB documents for these calls
ERRORS: list[tuple[int, str, dict[str, Any]]] = [
    (400, "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException",
     {"Item": {"pk": {"S": "A"}, "b": {"B": _b64(b"\x07")}, "v": {"N": "2"}}}),
    (400, "com.amazonaws.dynamodb.v20120810#ConditionalCheckFailedException", {}),
    (400, "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
     {"CancellationReasons": [
         {"Code": "None"},
         {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed",
          "Item": {"pk": {"S": "A"}, "b": {"B": _b64(b"\x08")}}},
         {"Code": "TransactionConflict", "Message": "conflict"},
         {"Code": "ThrottlingError"}, {"Code": "ValidationError", "Message": "bad"}]}),
    (400, "com.amazonaws.dynamodb.v20120810#TransactionCanceledException",
     {"CancellationReasons": [{"Code": "ThrottlingError"}, {"Code": "None"}]}),
    (400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException", {}),
    (400, "com.amazon.coral.availability#ThrottlingException", {}),
    (400, "com.amazonaws.dynamodb.v20120810#ProvisionedThroughputExceededException",
     {"ThrottlingReasons": [{"reason": "TableWriteProvisionedThroughputExceeded",
                             "resource": "arn:aws:dynamodb:eu-west-1:1:table/app"},
                            {"reason": "IndexWriteProvisionedThroughputExceeded",
                             "resource": "arn:aws:dynamodb:eu-west-1:1:table/app/index/gsi1"}]}),
    (400, "com.amazon.coral.availability#ThrottlingException",
     {"throttlingReasons": [{"reason": "TableReadKeyRangeThroughputExceeded",
                             "resource": "arn:aws:dynamodb:eu-west-1:1:table/app"}]}),
    (400, "com.amazon.coral.validate#ValidationException", {}),
    (400, "com.amazonaws.dynamodb.v20120810#ResourceNotFoundException", {}),
    (500, "com.amazonaws.dynamodb.v20120810#InternalServerError", {}),
    (500, "com.amazon.coral.service#InternalFailure", {}),
    (503, "com.amazon.coral.availability#ServiceUnavailable", {}),
    (400, "com.amazonaws.dynamodb.v20120810#RequestLimitExceeded", {}),
    (400, "com.amazonaws.dynamodb.v20120810#ItemCollectionSizeLimitExceededException", {}),
    (400, "com.amazonaws.dynamodb.v20120810#TransactionConflictException", {}),
    (400, "com.amazonaws.dynamodb.v20120810#TransactionInProgressException", {}),
    (400, "com.amazonaws.dynamodb.v20120810#IdempotentParameterMismatchException", {}),
    (400, "com.amazonaws.dynamodb.v20120810#ResourceInUseException", {}),
    (400, "com.amazonaws.dynamodb.v20120810#LimitExceededException", {}),
    (400, "com.amazonaws.dynamodb.v20120810#ReplicatedWriteConflictException", {}),
    (400, "com.amazon.coral.service#AccessDeniedException", {}),
    (400, "com.amazon.coral.service#UnrecognizedClientException", {}),
    (400, "com.amazon.coral.service#MissingAuthenticationTokenException", {}),
    (400, "com.amazon.coral.service#IncompleteSignatureException", {}),
    (403, "com.amazon.coral.service#InvalidSignatureException", {}),
    (400, "com.amazon.coral.service#ExpiredTokenException", {}),
    (400, "com.amazon.coral.service#RequestExpired", {}),
    (400, "com.amazon.coral.service#SerializationException", {}),
]


def _mapped(operation: str, request: dict[str, Any], response: dict[str, Any] | RequestError
            ) -> tuple[Any, ...]:
    """What a wire raises for an error answer: dynaorm's own (the RequestError it made),
    or botocore's (``response``: its parsed answer, raised as ``ClientError``)."""
    err = response if isinstance(response, RequestError) else botocore_error(
        operation, request, ClientError(response, operation))  # type: ignore[arg-type]
    assert isinstance(err, RequestError)
    return (type(err), err.code, str(err), err.maybe_applied, err.item, retryable(err),
            err.reasons)  # (Reason or ThrottlingReason records: equal by value)


@pytest.mark.parametrize(("status", "kind", "extra"), ERRORS,
                         ids=[f"{k.rpartition('#')[2]}-{i}" for i, (_, k, _) in
                              enumerate(ERRORS)])
@pytest.mark.parametrize("message_key", ["message", "Message"])
def test_errors_map_as_through_botocore(status: int, kind: str, extra: dict[str, Any],
                                        message_key: str) -> None:
    operation = "TransactWriteItems" if "Cancellation" in json.dumps(extra) else "PutItem"
    request = REQUESTS[operation][0]
    body = json.dumps({"__type": kind, message_key: "it failed", **extra}).encode()
    headers = {"x-amzn-requestid": "RID", "content-type": "application/x-amz-json-1.0"}
    ours = answer_error(operation, request, status, headers, body)
    theirs = botocore_parse(operation, status, body, headers)
    assert ours.code == theirs["Error"]["Code"] == kind.rpartition("#")[2]
    assert theirs["Error"]["Message"] == "it failed"
    assert ours.message == botocore_error(operation, request, ClientError(
        theirs, operation)).message  # type: ignore[arg-type, attr-defined]
    assert _mapped(operation, request, ours) == _mapped(operation, request, theirs)
    if kind.endswith("ResourceNotFoundException"):
        assert _mapped(operation, request, ours)[0] is TableNotFoundError


def test_throttling_reasons_make_a_throttled_error_on_both_wires() -> None:
    request = REQUESTS["PutItem"][0]
    reasons = [{"reason": "IndexWriteAccountLimitExceeded",
                "resource": "arn:aws:dynamodb:eu-west-1:1:table/app/index/gsi1"}]
    body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#"
                       "ProvisionedThroughputExceededException", "message": "slow down",
                       "ThrottlingReasons": reasons}).encode()
    headers = {"x-amzn-requestid": "RID", "content-type": "application/x-amz-json-1.0"}
    ours = answer_error("PutItem", request, 400, headers, body)
    theirs = botocore_error("PutItem", request, ClientError(
        botocore_parse("PutItem", 400, body, headers), "PutItem"))  # type: ignore[arg-type]
    for err in (ours, theirs):
        assert isinstance(err, ThrottledError) and retryable(err) and not err.maybe_applied
        (reason,) = err.reasons
        assert reason == ThrottlingReason("IndexWriteAccountLimitExceeded",
                                          "arn:aws:dynamodb:eu-west-1:1:table/app/index/gsi1")
        assert (reason.table, reason.index, reason.write) == ("app", "gsi1", True)
    bare = answer_error("Query", request, 400, headers, body.replace(b"Reasons", b"Other"))
    assert isinstance(bare, ThrottledError) and bare.reasons == []
    table = ThrottlingReason("TableReadProvisionedThroughputExceeded", "arn:x:table/app")
    assert (table.table, table.index, table.write) == ("app", None, False)
    assert ThrottlingReason("Unknown").write is None and ThrottlingReason("x").table is None


@pytest.mark.parametrize("status", [500, 502, 503, 504])
def test_a_bodyless_server_error_is_a_retryable_maybe_applied_one(status: int) -> None:
    err = answer_error("PutItem", {}, status, {}, b"<html>")
    assert err is not None and err.maybe_applied and retryable(err)


# -- the wire itself ------------------------------------------------------------------------
FROZEN = datetime.datetime(2026, 11, 23, 12, 34, 56)


@pytest.fixture(scope="module", autouse=True)
def _parsed_once() -> Iterator[None]:
    """The module's botocore sessions share the parsed models (``shared_loaders``)."""
    with shared_loaders():
        yield


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A configuration of our own: an empty profile file, test credentials, no endpoint."""
    config = tmp_path / "config"
    config.write_text("[default]\n")
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_CA_BUNDLE", "REQUESTS_CA_BUNDLE",
                 "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT", "AWS_SESSION_TOKEN",
                 "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "AWS_SHARED_CREDENTIALS_FILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
    return config


def wire_of(table: Table) -> SyncWire:
    wire = table.db.sync_wire
    assert isinstance(wire, SyncWire)
    return wire


class _Raw:
    """A canned urllib3 body for botocore's AWSResponse."""

    def stream(self, *_: Any, **__: Any) -> Iterator[bytes]:
        yield b"{}"


@pytest.mark.parametrize("endpoint", [None, "http://127.0.0.1:8000", "https://h.test:443",
                                      "https://h.test/base/path"])
@pytest.mark.parametrize("session_token", [None, "TOKEN/with+chars="])
def test_requests_are_signed_as_the_botocore_client_signs_them(
        aws: Path, monkeypatch: pytest.MonkeyPatch, session_token: str | None,
        endpoint: str | None) -> None:
    if session_token:
        monkeypatch.setenv("AWS_SESSION_TOKEN", session_token)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda *a, **k: FROZEN)
    monkeypatch.setattr(sigv4, "_stamp", lambda: FROZEN.strftime("%Y%m%dT%H%M%SZ"))
    table = Table("app", region="eu-west-1", endpoint_url=endpoint)
    request = REQUESTS["PutItem"][0]
    body, ours = wire_of(table).prepare("PutItem", request)

    sent: list[Any] = []

    def grab(request: Any, **_: Any) -> AWSResponse:
        sent.append(request)
        return AWSResponse(request.url, 200, {}, _Raw())

    def same_body(request: Any, **_: Any) -> None:
        request.data = body  # botocore's json.dumps keeps spaces; the signature covers bytes

    client = botocore.session.get_session().create_client("dynamodb", region_name="eu-west-1",
                                                          endpoint_url=endpoint)
    client.meta.events.register_first("before-send.dynamodb", grab)
    client.meta.events.register_first("before-sign.dynamodb", same_body)
    client.put_item(**request)
    theirs = sent[0]
    assert theirs.body == body

    def header(name: str) -> str | None:
        value = theirs.headers.get(name)
        return value.decode() if isinstance(value, bytes) else value

    assert ours["Authorization"] == header("Authorization")
    assert ours["X-Amz-Date"] == header("X-Amz-Date") == "20261123T123456Z"
    assert ours.get("X-Amz-Security-Token") == header("X-Amz-Security-Token") == session_token
    for name in ("X-Amz-Target", "Content-Type"):
        assert ours[name] == header(name)


def test_refreshable_credentials_are_frozen_at_each_request(aws: Path) -> None:
    keys = iter(["AKID1", "AKID2"])

    class Rotating:
        def get_frozen_credentials(self) -> Any:
            return Credentials(next(keys), "secret")

    table = Table("app", region="eu-west-1")
    wire = wire_of(table)
    wire._credentials = Rotating()
    first = wire.prepare("GetItem", {"TableName": "app"})[1]["Authorization"]
    second = wire.prepare("GetItem", {"TableName": "app"})[1]["Authorization"]
    assert "Credential=AKID1/" in first and "Credential=AKID2/" in second


def test_a_crc32_mismatch_is_a_bad_answer_retried(aws: Path) -> None:
    from botocore.exceptions import ChecksumError

    from dynaorm.errors import BadAnswerError

    body = b'{"Item":{}}'
    crc = zlib.crc32(body) & 0xFFFFFFFF
    exc = ChecksumError(checksum_type="crc32", expected_checksum=str(crc + 1),
                        actual_checksum=str(crc), error="x-amz-crc32 mismatch")
    err = botocore_error("GetItem", {}, exc)
    assert isinstance(err, BadAnswerError) and err.code == "ConnectionError"
    assert err.maybe_applied
    assert retryable(err)
    assert "crc32" in str(err)


class _Canned(http.server.BaseHTTPRequestHandler):
    """Answers every request with ``body`` and a wrong ``x-amz-crc32``, counting them."""

    body = b'{"Item":{"pk":{"S":"A"}}}'
    seen: list[str] = []

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        self.seen.append(self.headers["X-Amz-Target"])
        self.send_response(200)
        self.send_header("Content-Length", str(len(self.body)))
        self.send_header("x-amz-crc32", str((zlib.crc32(self.body) + 1) & 0xFFFFFFFF))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *_: Any) -> None:
        pass


def test_a_crc32_mismatch_on_the_wire_is_retried_then_a_request_error(aws: Path) -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Canned)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        table = Table("app", region="eu-west-1", max_attempts=3,
                      endpoint_url=f"http://127.0.0.1:{server.server_address[1]}")
        table.db.driver.sleep = lambda _: None
        with pytest.raises(RequestError) as caught:
            send(table, "GetItem", {"TableName": "app", "Key": {"pk": {"S": "A"}}})
        assert caught.value.code == "ConnectionError" and "crc32" in str(caught.value)
        assert _Canned.seen == [TARGET_PREFIX + "GetItem"] * 3
    finally:
        server.shutdown()
        server.server_close()


def _botocore_endpoint(**config: Any) -> str:
    session = botocore.session.get_session()
    client = session.create_client("dynamodb", config=Config(**config) if config else None,
                                   **{k: v for k, v in (("region_name", "eu-west-1"),)})
    return str(client.meta.endpoint_url)


def test_endpoint_explicit(aws: Path) -> None:
    table = Table("app", region="eu-west-1", endpoint_url="https://ddb.example.test:8443")
    assert wire_of(table).endpoint.url == "https://ddb.example.test:8443"


@pytest.mark.parametrize("variable", ["AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"])
def test_endpoint_from_environment(aws: Path, monkeypatch: pytest.MonkeyPatch,
                                   variable: str) -> None:
    monkeypatch.setenv(variable, "https://env.example.test")
    assert wire_of(Table("app", region="eu-west-1")).endpoint.url == _botocore_endpoint() == (
        "https://env.example.test")


def test_endpoint_service_specific_variable_wins(aws: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", "https://general.example.test")
    monkeypatch.setenv("AWS_ENDPOINT_URL_DYNAMODB", "https://ddb.example.test")
    assert wire_of(Table("app", region="eu-west-1")).endpoint.url == _botocore_endpoint() == (
        "https://ddb.example.test")


def test_endpoint_from_profile(aws: Path) -> None:
    aws.write_text("[default]\nendpoint_url = https://profile.example.test\n")
    assert wire_of(Table("app", region="eu-west-1")).endpoint.url == _botocore_endpoint() == (
        "https://profile.example.test")


def test_endpoint_from_profile_services_section(aws: Path) -> None:
    aws.write_text("[default]\nservices = mine\n\n[services mine]\ndynamodb =\n"
                   "  endpoint_url = https://services.example.test\n")
    assert wire_of(Table("app", region="eu-west-1")).endpoint.url == _botocore_endpoint() == (
        "https://services.example.test")


def test_endpoint_from_region_only(aws: Path) -> None:
    wire = wire_of(Table("app", region="ap-southeast-2"))
    assert wire.endpoint.url == "https://dynamodb.ap-southeast-2.amazonaws.com"
    assert wire.endpoint.region == "ap-southeast-2"


@pytest.mark.parametrize(("variable", "option", "expected"), [
    ("AWS_USE_FIPS_ENDPOINT", "use_fips_endpoint", "https://dynamodb-fips.eu-west-1.amazonaws.com"),
    ("AWS_USE_DUALSTACK_ENDPOINT", "use_dualstack_endpoint",
     "https://dynamodb.eu-west-1.api.aws"),
])
def test_endpoint_fips_and_dualstack(aws: Path, monkeypatch: pytest.MonkeyPatch,
                                     variable: str, option: str, expected: str) -> None:
    monkeypatch.setenv(variable, "true")
    assert wire_of(Table("app", region="eu-west-1")).endpoint.url == expected
    monkeypatch.delenv(variable)
    assert _botocore_endpoint(**{option: True}) == expected
    aws.write_text(f"[default]\n{option} = true\n")
    assert wire_of(Table("app", region="eu-west-1")).endpoint.url == expected


#: a region of each partition botocore knows
_PARTITIONS = ("us-east-1", "eu-west-1", "ap-southeast-7", "cn-north-1", "cn-northwest-1",
               "eusc-de-east-1", "us-gov-west-1", "us-gov-east-1", "us-iso-east-1",
               "us-isob-east-1", "eu-isoe-west-1", "us-isof-south-1")


def _botocore_search_url(region: str, **config: Any) -> str | None:
    """Where botocore's client sends ``SearchVectors`` (its own endpoint rules, through
    its whole pipeline: stopped before sending), or ``None`` where it makes no client."""
    try:
        client = botocore.session.get_session().create_client(
            "dynamodb", region_name=region, config=Config(**config))
    except botocore.exceptions.BotoCoreError:  # (no such endpoint in that partition)
        return None
    sent: list[str] = []

    def grab(request: Any, **_: Any) -> AWSResponse:
        sent.append(request.url)
        return AWSResponse(request.url, 200, {}, _Raw())

    client.meta.events.register_first("before-send.dynamodb", grab)
    client.search_vectors(TableName="app", IndexName="idx", SearchVector=[{"N": "1"}], TopK=1)
    return sent[0].rstrip("/")


@pytest.mark.parametrize("variant", ["", "AWS_USE_FIPS_ENDPOINT", "AWS_USE_DUALSTACK_ENDPOINT"])
@pytest.mark.parametrize("region", _PARTITIONS)
def test_search_goes_where_botocore_sends_it(aws: Path, monkeypatch: pytest.MonkeyPatch,
                                             region: str, variant: str) -> None:
    """On AWS, ``SearchVectors`` goes to the vector-search endpoint botocore's own rules
    resolve (``IsSearchOperation``), in every partition, FIPS and dual-stack alike, while
    every other request goes to the regional endpoint."""
    option = {"AWS_USE_FIPS_ENDPOINT": "use_fips_endpoint",
              "AWS_USE_DUALSTACK_ENDPOINT": "use_dualstack_endpoint"}.get(variant)
    expected = _botocore_search_url(region, **({option: True} if option else {}))
    if expected is None:
        pytest.skip(f"botocore has no {variant} endpoint in {region}")
    if variant:
        monkeypatch.setenv(variant, "true")
    endpoint = wire_of(Table("app", region=region)).endpoint
    assert endpoint.search_url == expected != endpoint.url
    assert "search" not in endpoint.url


@pytest.mark.parametrize("endpoint", ["http://127.0.0.1:8000", "https://ddb.example.test",
                                      "https://dynamodb.example.test:4443/base"])
def test_search_goes_to_an_endpoint_given_as_every_request(aws: Path, endpoint: str) -> None:
    """An endpoint of one's own (DynamoDB Local, dynoxide, a proxy) gets ``SearchVectors``
    as botocore sends it there: as every other request."""
    assert wire_of(Table("app", region="eu-west-1", endpoint_url=endpoint)
                   ).endpoint.search_url is None


def test_tls_verification_follows_the_client(aws: Path, monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    bundle = tmp_path / "ca.pem"
    bundle.write_text("")
    monkeypatch.setenv("AWS_CA_BUNDLE", str(bundle))
    assert wire_of(Table("app", region="eu-west-1")).endpoint.verify == str(bundle)
    monkeypatch.delenv("AWS_CA_BUNDLE")
    aws.write_text(f"[default]\nca_bundle = {bundle}\n")
    assert wire_of(Table("app", region="eu-west-1")).endpoint.verify == str(bundle)
    aws.write_text("[default]\n")
    default = wire_of(Table("app", region="eu-west-1")).endpoint.verify
    assert isinstance(default, str) and default.endswith(".pem") and default != str(bundle)


def test_wire_parameter(aws: Path) -> None:
    assert Table("app").wire == "dynaorm"
    table = Table("app", region="eu-west-1", wire="botocore")
    assert table.db.wire == "botocore" and table.db.sync_wire is None
    assert table.client.meta.region_name == "eu-west-1"  # the botocore client stays
    with pytest.raises(DynaormError, match="wire must be one of"):
        Table("app", wire="http2")
    with pytest.raises(DynaormError, match="wire must be one of"):
        Client(wire="boto3")


def test_the_in_process_mock_keeps_the_botocore_client(aws: Path) -> None:
    from dynaorm.client.client import in_process_mock

    with in_process_mock():
        assert Table("app").db.sync_wire is None


def test_proxies_follow_botocore(aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://user:pw@proxy.test:3128")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    wire = wire_of(Table("app", region="eu-west-1"))
    assert wire.endpoint.proxy == "http://user:pw@proxy.test:3128"
    assert wire._manager.proxy_headers["Proxy-Authorization"].startswith("Basic ")
    monkeypatch.setenv("NO_PROXY", "amazonaws.com")
    assert wire_of(Table("app", region="eu-west-1")).endpoint.proxy is None


def test_proxies_config_follows_botocore(aws: Path) -> None:
    """``proxies_config`` (a ``Config`` given to the client) gives the connection to the
    proxy the TLS context botocore's own session builds, and forwarding for https."""
    from botocore.httpsession import where

    client = Client(region="eu-west-1", config=Config(
        proxies={"https": "https://proxy.test:3128"},
        proxies_config={"proxy_ca_bundle": where(),
                        "proxy_use_forwarding_for_https": True}))
    table = Table("app", client=client)
    wire = wire_of(table)
    assert wire.endpoint.proxies_config == table.client.meta.config.proxies_config
    proxy_config = wire._manager.proxy_config
    assert proxy_config.use_forwarding_for_https is True
    ours = proxy_config.ssl_context
    theirs = table.client._endpoint.http_session._setup_proxy_ssl_context(wire.endpoint.proxy)
    assert ours.get_ca_certs() == theirs.get_ca_certs() and ours.get_ca_certs()
    assert (ours.verify_mode, ours.check_hostname) == (theirs.verify_mode,
                                                       theirs.check_hostname)


def test_user_agent_names_dynaorm_and_the_app(aws: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AWS_SDK_UA_APP_ID", "shop")
    headers = wire_of(Table("app", region="eu-west-1")).prepare("GetItem", {})[1]
    assert headers["User-Agent"].startswith("dynaorm/") and "app/shop" in headers["User-Agent"]


# -- awsJson1_0 protocol cases (DynamoDB-shaped) ---------------------------------------------
# Written for this project from the Smithy awsJson1_0 protocol-test definitions (error type
# resolution, nulls, empty bodies) that botocore's JSON-protocol test data is generated from;
# none of that data is copied here. Each case: status, headers, body, what a client must
# make of it (an answer, or the error code and message).
_URI = ":http://internal.amazon.com/coral/com.amazon.coral.validate/"
_NS = "aws.protocoltests.restjson#"
PROTOCOL_CASES: list[tuple[str, int, dict[str, str], bytes, dict[str, Any]]] = [
    ("type from the header", 400, {"x-amzn-errortype": "FooError"}, b"{}",
     {"Error": {"Code": "FooError", "Message": ""}}),
    ("type from the header with a uri", 400, {"x-amzn-errortype": "FooError" + _URI}, b"{}",
     {"Error": {"Code": "FooError", "Message": ""}}),
    ("type from the header with a uri and namespace", 400,
     {"x-amzn-errortype": _NS + "FooError" + _URI}, b"{}",
     {"Error": {"Code": "FooError", "Message": ""}}),
    ("type from code", 400, {}, b'{"code": "FooError"}',
     {"Error": {"Code": "FooError", "Message": ""}}),
    ("type from code with a namespace", 400, {}, b'{"code": "%sFooError"}' % _NS.encode(),
     {"Error": {"Code": "FooError", "Message": ""}}),
    ("type from code with a uri and namespace", 400, {},
     b'{"code": "%sFooError%s"}' % (_NS.encode(), _URI.encode()),
     {"Error": {"Code": "FooError", "Message": ""}}),
    ("type from __type", 400, {}, b'{"__type": "FooError"}',
     {"Error": {"Code": "FooError", "Message": ""}}),
    ("type from __type with a namespace", 400, {},
     b'{"__type": "%sFooError"}' % _NS.encode(), {"Error": {"Code": "FooError", "Message": ""}}),
    ("type from __type with a uri and namespace", 400, {},
     b'{"__type": "%sFooError%s"}' % (_NS.encode(), _URI.encode()),
     {"Error": {"Code": "FooError", "Message": ""}}),
    ("a throttle with a uri", 400, {},
     b'{"__type": "com.amazon.coral.availability#ThrottlingException%s", "message": "x"}'
     % _URI.encode(), {"Error": {"Code": "ThrottlingException", "Message": "x"}}),
    ("Message spelled with a capital", 500, {},
     b'{"__type": "com.amazonaws.dynamodb.v20120810#InternalServerError", "Message": "m"}',
     {"Error": {"Code": "InternalServerError", "Message": "m"}}),
    ("an error body that is not JSON", 400, {}, b"Bad Request",
     {"Error": {"Code": "400", "Message": "Bad Request"}}),
    ("an HTML 502", 502, {}, b"<html>bad gateway</html>",
     {"Error": {"Code": "502", "Message": "Bad Gateway"}}),
    ("an empty 503", 503, {}, b"", {"Error": {"Code": "503", "Message": "Service Unavailable"}}),
    ("an empty output", 200, {}, b"", {}),
    ("an empty object output", 200, {}, b"{}", {}),
    ("null members dropped", 200, {}, b'{"Item": null, "ConsumedCapacity": null}', {}),
    ("sparse lists kept", 200, {}, b'{"Items": [{"pk": {"S": "a"}}, null], "Count": 2}',
     {"Items": [{"pk": {"S": "a"}}, None], "Count": 2}),
    ("numbers stay strings", 200, {}, b'{"Item": {"n": {"N": "1.50"}}}',
     {"Item": {"n": {"N": "1.50"}}}),
    ("binary decoded", 200, {}, b'{"Item": {"b": {"B": "aGkh"}}}', {"Item": {"b": {"B": b"hi!"}}}),
]


def _ours(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    if status >= 300:
        got = answer_error("GetItem", {}, status, headers, body)
        return {"Error": {"Code": got.code, "Message": got.message}}
    return decode(body)


def _theirs(status: int, headers: dict[str, str], body: bytes) -> dict[str, Any]:
    got = botocore_parse("GetItem" if b'"Item"' in body else "Query", status, body, headers)
    got.pop("ResponseMetadata", None)
    return {"Error": got["Error"]} if status >= 300 else got


def _passes(read: Any, case: tuple[str, int, dict[str, str], bytes, dict[str, Any]]) -> bool:
    _, status, headers, body, expected = case
    try:
        return bool(read(status, headers, body) == expected)
    except Exception:  # a parser that raises fails the case
        return False


@pytest.mark.parametrize("case", PROTOCOL_CASES, ids=[c[0] for c in PROTOCOL_CASES])
def test_awsjson_protocol_cases(case: tuple[str, int, dict[str, str], bytes, dict[str, Any]]
                                ) -> None:
    _, status, headers, body, expected = case
    assert _ours(status, headers, body) == expected


def test_the_wire_passes_at_least_the_protocol_cases_botocore_passes() -> None:
    ours = [c[0] for c in PROTOCOL_CASES if _passes(_ours, c)]
    theirs = [c[0] for c in PROTOCOL_CASES if _passes(_theirs, c)]
    assert set(theirs) <= set(ours)
    assert len(ours) == len(PROTOCOL_CASES)
