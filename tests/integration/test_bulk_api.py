"""The embedded default's bulk put items and filtered exports (``dynaorm.testing.emulation.bulk``):
``StartBulkPutItems``, ``DescribeBulkOperation``, ``ListBulkOperations``,
``CancelBulkOperation`` and ``ExportTableToPointInTime``'s ``FilterSpecification``, as
botocore's service model and the developer guide describe them, over moto's S3 (in process,
and on dynaorm's moto server: the async variant's, for two of them). ``dynaorm.jobs.load``
and the filtered ``jobs.export`` are in ``test_load.py``.

Through ``--dynaorm-endpoint`` a test runs on the engine given where it has the API (its
S3 the engine's own, which it reads and writes), and skips, saying so, where the engine
answers ``UnknownOperationException`` (dynoxide and DynamoDB Local have no bulk API).
"""

from __future__ import annotations

import gzip
import json
import uuid
from typing import Any

import pytest

from dynaorm import RequestError, TableNotFoundError
from dynaorm.protocol.steps import call
from dynaorm.testing import TestBackend, bulk_pace
from dynaorm.testing.emulation.bulk import s3_factory
from tests.conftest import engine_of
from tests.support.engines import lacks

pytestmark = pytest.mark.engines("moto")

NEW = "attribute_not_exists(pk)"
BUCKET = ""  # (each test's own: the moto server outlives a test)
ENGINE = ""  # (the test's: tests.conftest.engine_of)
BULK = ("StartBulkPutItems", "DescribeBulkOperation", "ListBulkOperations",
        "CancelBulkOperation")
EXPORT = ("ExportTableToPointInTime", "DescribeExport")


def run(db: TestBackend, operation: str, request: dict[str, Any]) -> dict[str, Any]:
    answer: dict[str, Any] = db.table.db.driver.run(call(operation, request))
    return answer


@pytest.fixture(autouse=True)
def _bucket(request: pytest.FixtureRequest) -> Any:
    global BUCKET, ENGINE
    BUCKET, ENGINE = f"bulk-{uuid.uuid4().hex[:12]}", engine_of(request)
    yield
    BUCKET = ""


def needs(db: TestBackend, *operations: str) -> None:
    """Skip, naming it, when the test's engine has no API for one of ``operations``; never
    on the embedded default (its emulation is the subject: a refusal there fails)."""
    if ENGINE == "moto":
        return
    for operation in operations:
        if lacks(lambda op, request: run(db, op, request), operation):
            pytest.skip(f"the engine ({ENGINE}) has no {operation} API: it answers "
                        "UnknownOperationException")


def s3_of(db: TestBackend, *operations: str) -> Any:
    """The engine's S3 with the test's bucket, once the engine is known to have the API
    of ``operations`` (default: the bulk API)."""
    needs(db, *(operations or BULK))
    s3 = s3_factory(db.endpoint_url)()
    s3.create_bucket(Bucket=BUCKET)
    return s3


def put_input(s3: Any, key: str, records: list[Any], compressed: bool = True) -> None:
    text = "\n".join(r if isinstance(r, str) else json.dumps(r) for r in records) + "\n"
    s3.put_object(Bucket=BUCKET, Key=key,
                  Body=gzip.compress(text.encode()) if compressed else text.encode())


def item(pk: str, **more: str) -> dict[str, Any]:
    return {"pk": {"S": pk}, "sk": {"S": "X"}, **{k: {"S": v} for k, v in more.items()}}


def start(db: TestBackend, prefix: str = "in/", token: str | None = "t-1",
          **more: Any) -> dict[str, Any]:
    """``StartBulkPutItems`` of what is under ``prefix`` (the token made the test's own:
    the moto server's emulator outlives a test)."""
    request: dict[str, Any] = {
        "TableName": db.table.name,
        "InputS3Configuration": {"S3Bucket": BUCKET, "S3KeyPrefix": prefix,
                                 "InputFormat": "DYNAMODB_JSON",
                                 "InputCompressionType": "GZIP"},
        "OutputS3Configuration": {"S3Bucket": BUCKET, "S3KeyPrefix": "out",
                                  "OutputType": ["ERROR", "CONDITION_CHECK_FAILURE"]},
        **more}
    if token is not None:
        request["ClientToken"] = f"{BUCKET}-{token}"
    described: dict[str, Any] = run(db, "StartBulkPutItems", request)[
        "BulkOperationDescription"]
    return described


def describe(db: TestBackend, arn: str) -> dict[str, Any]:
    described: dict[str, Any] = run(db, "DescribeBulkOperation", {"BulkOperationArn": arn})[
        "BulkOperationDescription"]
    return described


def report(s3: Any, arn: str) -> list[dict[str, Any]]:
    """Every record of an operation's report, through its manifest."""
    ident = arn.rsplit("/", 1)[1]
    manifest = json.loads(s3.get_object(Bucket=BUCKET, Key=(
        f"out/AWSDynamoDBBulkPut/{ident}/manifest.json"))["Body"].read())
    return [json.loads(line) for f in manifest["OutputFiles"] for line in gzip.decompress(
        s3.get_object(Bucket=BUCKET, Key=f["Key"])["Body"].read()).splitlines()]


def stored(db: TestBackend) -> dict[str, dict[str, Any]]:
    return {i["pk"]["S"]: i for i in db.scan_raw()}


def test_records_are_conditional_puts_and_failures_are_reported(db: TestBackend) -> None:
    """Each record is one conditional put; a false condition is a
    CONDITION_CHECK_FAILURE with the item found; what is not an item of the table
    (malformed JSON, an unknown member, a key missing, over 400 KB, a bad expression) is an
    ERROR; condition failures do not count as failed items."""
    s3 = s3_of(db)
    run(db, "PutItem", {"TableName": db.table.name, "Item": item("taken", v="old")})
    put_input(s3, "in/a.json.gz", [
        {"Item": item("a", v="1"), "ConditionExpression": NEW},
        {"Item": item("taken", v="new"), "ConditionExpression": NEW},
        {"Item": item("b", v="2"), "ConditionExpression": "#v = :v",
         "ExpressionAttributeNames": {"#v": "v"}, "ExpressionAttributeValues": {
             ":v": {"S": "x"}}},
        "{not json",
        {"Item": item("c"), "Condition": NEW},
        {"Item": {"sk": {"S": "X"}}},
        {"Item": item("big", v="x" * 420_000)},
        {"Item": item("d"), "ConditionExpression": "name = :v",  # (a reserved word)
         "ExpressionAttributeValues": {":v": {"S": "x"}}},
    ])
    put_input(s3, "in/b.json.gz", [{"Item": item("e", v="5")}, ""])
    arn = start(db)["BulkOperationArn"]
    done = describe(db, arn)
    assert done["BulkOperationStatus"] == "COMPLETED_WITH_ERRORS"
    assert (done["ProcessedItemCount"], done["FailedItemCount"]) == (9, 5)
    assert done["ProcessedInputBytes"] == done["TotalInputBytes"] > 0 and "EndTime" in done
    assert set(stored(db)) == {"a", "taken", "e"} and stored(db)["taken"]["v"] == {"S": "old"}
    records = report(s3, arn)
    failed = sorted(r["Item"]["pk"]["S"] for r in records
                    if r["OutputType"] == "CONDITION_CHECK_FAILURE")
    assert failed == ["b", "taken"]
    (taken,) = [r for r in records if r.get("Item", {}).get("pk") == {"S": "taken"}]
    assert taken["ExistingItem"]["v"] == {"S": "old"} and taken["InputObject"] == "in/a.json.gz"
    errors = [r for r in records if r["OutputType"] == "ERROR"]
    assert [r["LineNumber"] for r in errors] == [4, 5, 6, 7, 8]
    assert all(r["ErrorCode"] == "ValidationException" for r in errors)
    assert "maximum allowed size" in errors[3]["ErrorMessage"]


@pytest.mark.sync_only  # (the moto server's path: the tests above and below)
def test_only_condition_failures_complete_without_errors(db: TestBackend) -> None:
    s3 = s3_of(db)
    put_input(s3, "in/a.json", [{"Item": item("a"), "ConditionExpression": NEW}] * 2,
              compressed=False)
    request = {"InputS3Configuration": {"S3Bucket": BUCKET, "S3KeyPrefix": "in/",
                                        "InputFormat": "DYNAMODB_JSON"}}
    arn = run(db, "StartBulkPutItems", {
        "TableName": db.table.name, **request, "OutputS3Configuration": {
            "S3Bucket": BUCKET, "S3KeyPrefix": "out", "OutputType": ["ERROR"]}})[
        "BulkOperationDescription"]["BulkOperationArn"]
    done = describe(db, arn)
    assert (done["BulkOperationStatus"], done["ProcessedItemCount"],
            done["FailedItemCount"]) == ("COMPLETED", 2, 0)
    assert report(s3, arn) == []  # (CONDITION_CHECK_FAILURE not asked for)


@pytest.mark.sync_only  # (the moto server's path: the tests above and below)
def test_a_token_starts_one_operation_and_other_parameters_are_refused(
        db: TestBackend) -> None:
    """The same token and parameters answer the operation already started (applied once:
    a later change stays); the same token with other parameters is refused."""
    s3 = s3_of(db)
    put_input(s3, "in/a.json.gz", [{"Item": item("a", v="1")}])
    first = start(db)
    assert describe(db, first["BulkOperationArn"])["BulkOperationStatus"] == "COMPLETED"
    run(db, "PutItem", {"TableName": db.table.name, "Item": item("a", v="changed")})
    again = start(db)
    assert again["BulkOperationArn"] == first["BulkOperationArn"]
    assert again["BulkOperationStatus"] == "COMPLETED"
    assert stored(db)["a"]["v"] == {"S": "changed"}
    with pytest.raises(RequestError) as refused:
        start(db, MaxWriteRequestUnits=2048)
    assert refused.value.code == "IdempotentParameterMismatchException"
    other = start(db, token="t-2")["BulkOperationArn"]
    assert other != first["BulkOperationArn"]
    listed = run(db, "ListBulkOperations", {"MaxResults": 1})
    assert [s["BulkOperationArn"] for s in listed["BulkOperationsSummaryList"]] == [other]
    seen, page = [], listed  # (newest first, page by page: the account's operations)
    while True:
        seen += [s["BulkOperationArn"] for s in page["BulkOperationsSummaryList"]]
        if "NextToken" not in page:
            break
        page = run(db, "ListBulkOperations", {"NextToken": page["NextToken"]})
    assert [a for a in seen if a in (other, first["BulkOperationArn"])] == [
        other, first["BulkOperationArn"]]


@pytest.mark.sync_only  # (the moto server's path: the tests above and below)
def test_an_operation_moves_on_at_its_pace_and_a_cancel_keeps_what_it_wrote(
        db: TestBackend) -> None:
    s3 = s3_of(db)
    put_input(s3, "in/a.json.gz", [{"Item": item(f"k{i}")} for i in range(5)])
    with bulk_pace(2):
        arn = start(db)["BulkOperationArn"]
        seen = describe(db, arn)
        assert (seen["BulkOperationStatus"], seen["ProcessedItemCount"]) == ("IN_PROGRESS", 2)
        assert 0 < seen["ProcessedInputBytes"] <= seen["TotalInputBytes"]
        cancelled = run(db, "CancelBulkOperation", {"BulkOperationArn": arn})
        assert (cancelled["BulkOperationArn"], cancelled["BulkOperationStatus"]) == (
            arn, "CANCELLING")
        done = describe(db, arn)
    assert done["BulkOperationStatus"] == "CANCELLED" and done["FailureCode"]
    assert done["ProcessedItemCount"] == 4 and set(stored(db)) == {"k0", "k1", "k2", "k3"}
    with pytest.raises(RequestError) as refused:
        run(db, "CancelBulkOperation", {"BulkOperationArn": arn})
    assert refused.value.code == "ValidationException"


@pytest.mark.sync_only  # (the moto server's path: the tests above and below)
def test_refusals_before_an_operation_starts(db: TestBackend) -> None:
    """A table that does not exist, a global table (replicas), fewer than 1,024 write
    units, an unknown operation: refused as DynamoDB refuses them; an empty input or
    bucket fails the operation."""
    s3 = s3_of(db)
    with pytest.raises(TableNotFoundError):
        run(db, "StartBulkPutItems", {
            "TableName": "no-such-table", "InputS3Configuration": {
                "S3Bucket": BUCKET, "InputFormat": "DYNAMODB_JSON"},
            "OutputS3Configuration": {"OutputType": ["ERROR"]}})
    with pytest.raises(RequestError, match="greater than or equal to 1024"):
        start(db, MaxWriteRequestUnits=1000)
    with pytest.raises(RequestError) as missing:
        describe(db, db.table.name + "/bulk-operation/" + "0" * 32)
    assert missing.value.code == "ResourceNotFoundException"
    failed = describe(db, start(db, prefix="nothing/")["BulkOperationArn"])
    assert (failed["BulkOperationStatus"], failed["FailureCode"]) == ("FAILED", "InputNotFound")
    put_input(s3, "in/a.json.gz", [{"Item": item("a")}])
    run(db, "UpdateTable", {"TableName": db.table.name,
                            "ReplicaUpdates": [{"Create": {"RegionName": "eu-west-1"}}]})
    assert run(db, "DescribeTable", {"TableName": db.table.name})["Table"]["Replicas"] == [
        {"RegionName": "eu-west-1", "ReplicaStatus": "ACTIVE"}]
    with pytest.raises(RequestError, match="global table") as global_table:
        start(db, token="t-global")
    assert global_table.value.code == "ValidationException" and "a" not in stored(db)


#: requests botocore's service model (1.43.124 and later: the shapes' required members,
#: lengths, patterns and enums) makes DynamoDB refuse as a ValidationException, each with
#: what it breaks
MODEL_REFUSES: dict[str, tuple[str, dict[str, Any]]] = {
    "NextToken not ([0-9a-f]{16})+": ("ListBulkOperations", {"NextToken": "zz"}),
    "NextToken of 15 digits": ("ListBulkOperations", {"NextToken": "0" * 15}),
    "BulkOperationArn required": ("DescribeBulkOperation", {}),
    "BulkOperationArn of 36 characters": ("DescribeBulkOperation", {
        "BulkOperationArn": "a" * 36}),
    "CancelBulkOperation's too": ("CancelBulkOperation", {"BulkOperationArn": "short"}),
    "S3Bucket's pattern": ("StartBulkPutItems", {"InputS3Configuration": {
        "S3Bucket": "no such bucket!", "InputFormat": "DYNAMODB_JSON"}}),
    "the output's S3Bucket's pattern": ("StartBulkPutItems", {"OutputS3Configuration": {
        "S3Bucket": "-x", "OutputType": ["ERROR"]}}),
    "S3KeyPrefix over 1,024": ("StartBulkPutItems", {"InputS3Configuration": {
        "S3Bucket": "b-1", "S3KeyPrefix": "p" * 1025, "InputFormat": "DYNAMODB_JSON"}}),
    "S3BucketOwner not an account": ("StartBulkPutItems", {"InputS3Configuration": {
        "S3Bucket": "b-1", "S3BucketOwner": "me", "InputFormat": "DYNAMODB_JSON"}}),
    "S3SseAlgorithm's enum": ("StartBulkPutItems", {"OutputS3Configuration": {
        "S3Bucket": "b-1", "S3SseAlgorithm": "ROT13", "OutputType": ["ERROR"]}}),
}


@pytest.mark.parametrize("refused", list(MODEL_REFUSES.values()), ids=list(MODEL_REFUSES))
def test_what_the_service_model_refuses_the_emulator_refuses(
        db: TestBackend, refused: tuple[str, dict[str, Any]]) -> None:
    """A request that breaks a constraint of botocore's service model is refused with a
    ValidationException before anything starts (before: a NextToken that is not hex
    crashed the emulator with Python's ValueError; a short or missing ARN was
    ResourceNotFoundException; a bucket name no bucket can have started an operation)."""
    operation, request = refused
    needs(db, operation)
    if operation == "StartBulkPutItems":
        request = {"TableName": db.table.name, "InputS3Configuration": {
            "S3Bucket": "b-1", "InputFormat": "DYNAMODB_JSON"},
            "OutputS3Configuration": {"OutputType": ["ERROR"]}, **request}
    with pytest.raises(RequestError) as info:
        run(db, operation, request)
    assert info.value.code == "ValidationException", info.value
    assert "validation error" in info.value.message


@pytest.mark.sync_only  # (the moto server's path: the tests above and below)
def test_an_object_that_cannot_be_read_is_reported_and_the_rest_is_loaded(
        db: TestBackend) -> None:
    s3 = s3_of(db)
    s3.put_object(Bucket=BUCKET, Key="in/a.json.gz", Body=gzip.compress(
        json.dumps({"Item": item("a")}).encode())[:-6])  # (cut short)
    put_input(s3, "in/b.json.gz", [{"Item": item("b")}])
    arn = start(db)["BulkOperationArn"]
    assert describe(db, arn)["BulkOperationStatus"] == "COMPLETED_WITH_ERRORS"
    assert "b" in stored(db)
    (error,) = report(s3, arn)
    assert (error["ErrorCode"], error["InputObject"]) == ("InvalidInputObject", "in/a.json.gz")


# -- exports --------------------------------------------------------------------------
def _export(db: TestBackend, **filters: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """An export of the table (with ``filters``), described once done, and its items."""
    s3 = s3_factory(db.endpoint_url)()
    arn = run(db, "DescribeTable", {"TableName": db.table.name})["Table"]["TableArn"]
    request: dict[str, Any] = {"TableArn": arn, "S3Bucket": BUCKET, "S3Prefix": "exp"}
    if filters:
        request["FilterSpecification"] = filters
    started = run(db, "ExportTableToPointInTime", request)["ExportDescription"]
    done: dict[str, Any] = run(db, "DescribeExport", {"ExportArn": started["ExportArn"]})[
        "ExportDescription"]
    summary = json.loads(s3.get_object(Bucket=BUCKET, Key=done["ExportManifest"])[
        "Body"].read())
    entries = [json.loads(line) for line in s3.get_object(
        Bucket=BUCKET, Key=summary["manifestFilesS3Key"])["Body"].read().splitlines()]
    items = [json.loads(line)["Item"] for e in entries for line in gzip.decompress(
        s3.get_object(Bucket=BUCKET, Key=e["dataFileS3Key"])["Body"].read()).splitlines()]
    assert done["ItemCount"] == summary["itemCount"] == len(items)
    return done, items


def test_a_filtered_export_holds_what_its_filter_selects(db: TestBackend) -> None:
    """The engine evaluates the filter: a key condition reads one partition, a filter
    expression may name key attributes without one, a projection keeps its attributes;
    without point-in-time recovery, or incremental, an export is refused."""
    s3_of(db, *EXPORT)
    for pk, sk, v in (("T#a#1", "X", "1"), ("T#a#1", "Y", "2"), ("T#a#2", "X", "3"),
                      ("T#b#1", "X", "4")):
        run(db, "PutItem", {"TableName": db.table.name, "Item": {
            "pk": {"S": pk}, "sk": {"S": sk}, "v": {"S": v}}})
    arn = run(db, "DescribeTable", {"TableName": db.table.name})["Table"]["TableArn"]
    with pytest.raises(RequestError) as no_pitr:
        run(db, "ExportTableToPointInTime", {"TableArn": arn, "S3Bucket": BUCKET})
    assert no_pitr.value.code == "PointInTimeRecoveryUnavailableException"
    run(db, "UpdateContinuousBackups", {
        "TableName": db.table.name,
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}})
    done, items = _export(db)
    assert done["ExportStatus"] == "COMPLETED" and len(items) == 4
    _, items = _export(db, FilterExpression="begins_with(pk, :t)",
                       ExpressionAttributeValues={":t": {"S": "T#a#"}})
    assert sorted(i["v"]["S"] for i in items) == ["1", "2", "3"]
    done, items = _export(db, KeyConditionExpression="pk = :p", FilterExpression="v <> :v",
                          ProjectionExpression="pk, v", ExpressionAttributeValues={
                              ":p": {"S": "T#a#1"}, ":v": {"S": "2"}})
    assert items == [{"pk": {"S": "T#a#1"}, "v": {"S": "1"}}]
    assert done["FilterSpecification"]["KeyConditionExpression"] == "pk = :p"
    with pytest.raises(RequestError, match="full tables only"):
        run(db, "ExportTableToPointInTime", {"TableArn": arn, "S3Bucket": BUCKET,
                                             "ExportType": "INCREMENTAL_EXPORT"})
