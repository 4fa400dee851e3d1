"""(red team 63) The CloudFormation a design prints describes exactly the table ``create()``
makes: for every design the suite maps, the table is created on the engine and its
DescribeTable (and DescribeTimeToLive, ListTagsOfResource, DescribeContinuousBackups
where the engine has them) is compared with the ``AWS::DynamoDB::Table`` resource's
properties, field by field. A field the engine does not report is not compared (DynamoDB
Local keeps no warm throughput, tags or PITR; moto keeps no on-demand maximum).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from dynaorm import Table
from dynaorm.errors import DynaormError
from dynaorm.formats import cloudformation
from dynaorm.testing import worker_suffix
from tests.conftest import engine_of
from tests.support.designs import DESIGNS, design

pytestmark = [pytest.mark.sync_only,  # (DDL only: one path for sync and async)
              pytest.mark.engines("moto", "local", "dynoxide")]


@pytest.fixture
def created(backend: str | None, request: pytest.FixtureRequest) -> Iterator[Table]:
    """The design's table created on the engine under a name of its own, then deleted."""
    table = design(request.param)
    bound, name = table.binding(), table.name
    table.name = f"{name[:200]}-red63{worker_suffix()}"
    table.connect(backend)
    try:
        if table.exists():
            table.delete()
        try:
            table.create()
        except DynaormError as exc:
            if table.vector_indexes and engine_of(request) != "moto":
                pytest.skip(f"{engine_of(request)} has no vector indexes: {exc}")
            raise
        yield table
    finally:
        try:
            if table.exists():
                table.client.update_table(TableName=table.name,
                                          DeletionProtectionEnabled=False)
                table.delete()
        finally:
            table.name = name
            table.restore(bound)


def _keys(found: list[Mapping[str, Any]] | None) -> list[tuple[str, str]]:
    return [(k["AttributeName"], k["KeyType"]) for k in found or []]


def _projection(found: Mapping[str, Any]) -> tuple[str, list[str]]:
    return found["ProjectionType"], sorted(found.get("NonKeyAttributes") or [])


def _pair(found: Mapping[str, Any] | None, names: tuple[str, str]) -> dict[str, int]:
    """A throughput member without the engine's "not set" values (-1, 0, absent)."""
    return {n: found[n] for n in names if found and (found.get(n) or 0) > 0}


_MOST = ("MaxReadRequestUnits", "MaxWriteRequestUnits")
_WARM = ("ReadUnitsPerSecond", "WriteUnitsPerSecond")


def _indexes(found: list[Mapping[str, Any]] | None, declared: list[Mapping[str, Any]] | None
             ) -> None:
    """Each index of DescribeTable against the template's, by name."""
    live = {i["IndexName"]: i for i in found or []}
    want = {i["IndexName"]: i for i in declared or []}
    assert sorted(live) == sorted(want)
    for name, index in want.items():
        have = live[name]
        assert _keys(have["KeySchema"]) == _keys(index["KeySchema"]), name
        assert _projection(have["Projection"]) == _projection(index["Projection"]), name
        if "OnDemandThroughput" in have:
            assert _pair(have["OnDemandThroughput"], _MOST) == _pair(
                index.get("OnDemandThroughput"), _MOST), name
        if "WarmThroughput" in index and "WarmThroughput" in have:
            for unit in _WARM:
                assert have["WarmThroughput"].get(unit, 0) >= index["WarmThroughput"].get(
                    unit, 0), name


def _optional(call: Any, **request: Any) -> dict[str, Any] | None:
    """An API's answer, ``None`` on an engine without it."""
    try:
        found: dict[str, Any] = call(**request)
    except Exception as exc:  # (botocore's ClientError, moto's NotImplementedError)
        if "UnknownOperation" in str(exc) or isinstance(exc, NotImplementedError) or (
                "not" in str(exc).lower() and "implement" in str(exc).lower()):
            return None
        raise
    return found


@pytest.mark.parametrize("created", DESIGNS, indirect=True)
def test_red_the_template_describes_the_table_create_makes(created: Table) -> None:
    table = created
    template, _ = cloudformation.to_format(table.model())
    (resource,) = template["Resources"].values()
    props = resource["Properties"]
    client = table.client
    live = client.describe_table(TableName=table.name)["Table"]
    assert live["TableName"] == props["TableName"]
    assert _keys(live["KeySchema"]) == _keys(props["KeySchema"])
    assert {(a["AttributeName"], a["AttributeType"]) for a in live["AttributeDefinitions"]
            } == {(a["AttributeName"], a["AttributeType"]) for a in props["AttributeDefinitions"]}
    shape = ("VectorAttribute", "Dimensions", "DistanceFunction", "SearchSchema")
    assert {v["IndexName"]: ({k: v.get(k) for k in shape}, _projection(v["Projection"]))
            for v in live.get("VectorIndexes") or []} == {
        v["IndexName"]: ({k: v.get(k) for k in shape}, _projection(v["Projection"]))
        for v in props.get("VectorIndexes") or []}
    assert (live.get("BillingModeSummary") or {}).get(
        "BillingMode", "PAY_PER_REQUEST") == props["BillingMode"]
    _indexes(live.get("GlobalSecondaryIndexes"), props.get("GlobalSecondaryIndexes"))
    _indexes(live.get("LocalSecondaryIndexes"), props.get("LocalSecondaryIndexes"))
    stream = live.get("StreamSpecification") or {}
    assert (stream.get("StreamViewType") if stream.get("StreamEnabled") else None) == (
        props.get("StreamSpecification") or {}).get("StreamViewType")
    ttl = client.describe_time_to_live(TableName=table.name)["TimeToLiveDescription"]
    live_ttl = ttl.get("AttributeName") if ttl.get("TimeToLiveStatus") in (
        "ENABLED", "ENABLING") else None
    assert live_ttl == (props.get("TimeToLiveSpecification") or {}).get("AttributeName")
    if "DeletionProtectionEnabled" in live:
        assert live["DeletionProtectionEnabled"] == props.get(
            "DeletionProtectionEnabled", False)
    if "OnDemandThroughput" in live:
        assert _pair(live["OnDemandThroughput"], _MOST) == _pair(
            props.get("OnDemandThroughput"), _MOST)
    tags = _optional(client.list_tags_of_resource, ResourceArn=live["TableArn"])
    if tags is not None:
        assert {t["Key"]: t["Value"] for t in tags.get("Tags") or []} == {
            t["Key"]: t["Value"] for t in props.get("Tags") or []}
    backups = _optional(client.describe_continuous_backups, TableName=table.name)
    if backups is not None:
        pitr = backups["ContinuousBackupsDescription"].get(
            "PointInTimeRecoveryDescription") or {}
        on = pitr.get("PointInTimeRecoveryStatus") == "ENABLED"
        spec = props.get("PointInTimeRecoverySpecification") or {}
        assert on == bool(spec.get("PointInTimeRecoveryEnabled"))
        if on:
            assert pitr.get("RecoveryPeriodInDays", 35) == spec["RecoveryPeriodInDays"]
