"""A table's operational settings as protocols (pure: a driver performs them): read the
live ones (:func:`settings_p`, what ``Table.settings()`` runs) and apply the declared ones
a table lacks (:func:`apply_settings_p`, the last step of ``create()``). The settings
themselves, their checks and their requests are :mod:`dynaorm.schema.settings`."""

from collections.abc import Callable, Iterator
from typing import Any

from dynaorm.errors import DynaormError, RequestError
from dynaorm.protocol.steps import Proto, call
from dynaorm.schema.settings import (
    INSIGHTS,
    TableSettings,
    check_billing,
    declared_indexes,
    most,
    parse_settings,
    table_drift,
    unapplied,
    warm,
)
from dynaorm.schema.table import TableSchema

#: the codes of an endpoint without an operation (DynamoDB Local has no PITR, Contributor
#: Insights or tagging): the setting is left as it is (``settings()`` says it is unknown)
_NO_API = frozenset({"UnknownOperationException", "NotImplementedError"})


def _optional_p(operation: str, request: dict[str, Any]) -> Proto[dict[str, Any] | None]:
    """``operation``'s answer, ``None`` when the endpoint has no such operation."""
    try:
        out = yield from call(operation, request)
    except RequestError as exc:
        if exc.code in _NO_API or exc.message == "Nothing to update":  # (an engine that
            return None  # keeps no such setting: DynamoDB Local's warm throughput)
        raise
    except NotImplementedError:  # (moto in-process: an operation it does not emulate)
        return None
    return out


def settings_p(table: TableSchema) -> Proto[TableSettings]:
    """The live table's operational settings (see :func:`parse_settings`)."""
    return (yield from _read_p(table))[1]


def _read_p(table: TableSchema) -> Proto[tuple[dict[str, Any], TableSettings]]:
    """DescribeTable's ``Table`` and the settings read from it and its neighbours."""
    described = (yield from call("DescribeTable", {"TableName": table.name}))["Table"]
    backups = yield from _optional_p("DescribeContinuousBackups", {"TableName": table.name})
    insights = yield from _optional_p("DescribeContributorInsights",
                                      {"TableName": table.name})
    tags = yield from _optional_p("ListTagsOfResource",
                                  {"ResourceArn": described.get("TableArn", table.name)})
    unknown = tuple(n for n, found in (("pitr_days", backups), ("contributor_insights",
                                                                 insights), ("tags", tags))
                    if found is None)
    return described, parse_settings(described, backups, insights,
                                     None if tags is None else tags.get("Tags"), unknown)


def drift_p(table: TableSchema) -> Proto[list[str]]:
    """Where the live table differs from the settings declared on it and its GSIs, one
    line each (:func:`dynaorm.schema.settings.drift`; nothing declared: nothing read)."""
    if table.declared_settings == TableSettings() and not declared_indexes(table):
        return []
    return table_drift(table, (yield from settings_p(table)))


def apply_settings_p(table: TableSchema, settle: Callable[[], Proto[None]]) -> Proto[None]:
    """Send what the declared settings need that the live table lacks (after CreateTable,
    which carries most of them, that is PITR and Contributor Insights; on an existing
    table, any change): one request each, the table settled between them. A setting the
    endpoint has no API for is left (``settings()`` names it unknown). ``max_on_demand=``
    on a PROVISIONED table is a :class:`SettingsError` before anything is sent; a request
    failing for good says what is applied and what is not (its error's message)."""
    if table.declared_settings == TableSettings() and not declared_indexes(table):
        return
    described, live = yield from _read_p(table)
    check_billing(table, described)
    lines = table_drift(table, live)
    differs = [line.split(":")[0] for line in lines if "the table has" in line]
    changes = list(_changes(table, set(differs)))
    for number, (_, operation, request) in enumerate(changes):
        try:
            yield from _send_p(table, operation, request, settle)
        except DynaormError as exc:
            if exc.args and isinstance(exc.args[0], str):
                exc.args = (f"{exc.args[0]}; " + unapplied(
                    table.name, _declared(table), [s for s, _, _ in changes[number:]],
                    [line.split(":")[0] for line in lines if "cannot report" in line],
                    getattr(exc, "maybe_applied", False)), *exc.args[1:])
            raise


def _declared(table: TableSchema) -> list[str]:
    """The names of the settings declared on ``table`` and its GSIs (as drift says them)."""
    return [line.split(":")[0] for line in table_drift(table, TableSettings())]


def _send_p(table: TableSchema, operation: str, request: dict[str, Any],
            settle: Callable[[], Proto[None]]) -> Proto[None]:
    """One settings request sent (TagResource by the table's ARN), the table settled
    after an UpdateTable."""
    if operation == "TagResource":
        out = yield from call("DescribeTable", {"TableName": table.name})
        request["ResourceArn"] = out["Table"]["TableArn"]
    else:
        request["TableName"] = table.name
    yield from _contended_p(operation, request, settle)
    if operation == "UpdateTable":
        yield from settle()


def _contended_p(operation: str, request: dict[str, Any],
                 settle: Callable[[], Proto[None]]) -> Proto[None]:
    """``operation`` sent, and sent again once the table has settled while DynamoDB
    refuses it for a change of the table under way (another creator's: its UpdateTable
    puts the table in UPDATING); each setting request is idempotent."""
    for attempt in range(_TRIES):
        try:
            yield from _optional_p(operation, request)
            return
        except RequestError as exc:
            if exc.code != "ResourceInUseException" or attempt == _TRIES - 1:
                raise
            yield from settle()


#: how often a setting request refused for a change under way is sent
_TRIES = 5


def _changes(table: TableSchema, differs: set[str]
             ) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(setting, operation, request) of each declared setting the live table differs in."""
    declared = table.declared_settings
    if "deletion_protection" in differs:
        yield "deletion_protection", "UpdateTable", {
            "DeletionProtectionEnabled": declared.deletion_protection}
    if "warm_throughput" in differs and declared.warm_throughput:
        yield "warm_throughput", "UpdateTable", {
            "WarmThroughput": warm(declared.warm_throughput)}
    if "max_on_demand" in differs and declared.max_on_demand:
        yield "max_on_demand", "UpdateTable", {
            "OnDemandThroughput": most(declared.max_on_demand)}
    for index in table.indexes.values():
        for setting, member, pair, render in (
                ("warm_throughput", "WarmThroughput", getattr(index, "warm_throughput", None),
                 warm), ("max_on_demand", "OnDemandThroughput",
                         getattr(index, "max_on_demand", None), most)):
            if (name := f"index {index.name} {setting}") in differs and pair:
                yield name, "UpdateTable", {"GlobalSecondaryIndexUpdates": [{"Update": {
                    "IndexName": index.name, member: render(pair)}}]}
    if "pitr_days" in differs and declared.pitr_days:
        yield "pitr_days", "UpdateContinuousBackups", {
            "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True,
                                                 "RecoveryPeriodInDays": declared.pitr_days}}
    if "contributor_insights" in differs and declared.contributor_insights:
        yield "contributor_insights", "UpdateContributorInsights", {
            "ContributorInsightsAction": "ENABLE",
            "ContributorInsightsMode": INSIGHTS[declared.contributor_insights]}
    if "tags" in differs:
        yield "tags", "TagResource", {"Tags": [
            {"Key": k, "Value": v} for k, v in sorted(declared.tags.items())]}
