"""Operational settings (contract 22): declared on ``Table`` and ``GSI``, refused before
sending when DynamoDB would refuse them, applied by ``create()``, read back by
``Table.settings()`` and compared by ``dynaorm check``.

What each engine has (probed, and held here: a change in an engine fails the test that
names it, so the table stays true):

| setting | moto 5.2 | DynamoDB Local | dynoxide |
| --- | --- | --- | --- |
| deletion protection | yes | yes | see ``_HAS`` |
| warm throughput (table, GSI) | yes | dropped silently | see ``_HAS`` |
| on-demand maximum (table, GSI) | dropped silently | yes | see ``_HAS`` |
| PITR with RecoveryPeriodInDays | yes | no API (UnknownOperation) | see ``_HAS`` |
| Contributor Insights | no API (NotImplemented) | no API | see ``_HAS`` |
| tags | yes | no API | see ``_HAS`` |

A setting an engine has no API for is named in ``settings().unknown`` (and ``create()``
leaves it); one an engine drops silently is drift ``dynaorm check`` reports.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dynaorm import GSI, SettingsError, Table
from dynaorm.cli.main import main
from dynaorm.core.settings import drift_p
from dynaorm.schema.settings import TableSettings
from dynaorm.testing import worker_suffix
from tests.conftest import engine_of

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

#: what each engine keeps: the settings it stores and reports back
_HAS: dict[str, set[str]] = {
    "moto": {"deletion_protection", "warm_throughput", "pitr_days", "tags"},
    "local": {"deletion_protection", "max_on_demand"},
    "dynoxide": {"deletion_protection", "max_on_demand", "tags"},
}
#: what each engine cannot report (``settings().unknown``): no API, or no member of
#: DescribeTable for it
_NO_API: dict[str, set[str]] = {
    "moto": {"contributor_insights", "max_on_demand", "index by_owner max_on_demand"},
    "local": {"pitr_days", "contributor_insights", "tags", "warm_throughput",
              "index by_owner warm_throughput"},
    "dynoxide": {"pitr_days", "contributor_insights", "warm_throughput",
                 "index by_owner warm_throughput", "index by_owner max_on_demand"},
}

def settings_drift(table: Table) -> list[str]:
    """What ``dynaorm check`` reports of the table's settings."""
    found: list[str] = table.db.driver.run(drift_p(table), table._admin("describe_table"))
    return found


DECLARED: dict[str, Any] = {
    "warm_throughput": (13000, 5000), "max_on_demand": (100, 50), "pitr_days": 7,
    "deletion_protection": True, "contributor_insights": "throttled",
    "tags": {"team": "payments", "env": "test"}}

ops = Table("ops_settings", indexes=[GSI("by_owner", pk="owner",
                                         warm_throughput=(12001, 4001),
                                         max_on_demand=(10, 5))], **DECLARED)


def _unprotect(table: Table) -> None:
    table.client.update_table(TableName=table.name, DeletionProtectionEnabled=False)


@pytest.fixture
def live(backend: str | None, request: pytest.FixtureRequest) -> Iterator[Table]:
    """``ops`` created on the engine (deletion protection lifted to delete it)."""
    yield from _ops_on(backend, create=True)


@pytest.mark.parametrize(("given", "says"), [
    ({"pitr_days": 0}, "pitr_days= takes a whole number of days from 1 to 35"),
    ({"pitr_days": 36}, "from 1 to 35"),
    ({"pitr_days": 7.0}, "pitr_days="),
    ({"pitr_days": True}, "pitr_days="),
    ({"warm_throughput": (0, 4000)}, "warm_throughput= takes (reads, writes)"),
    ({"warm_throughput": 12000}, "warm_throughput="),
    ({"warm_throughput": (None, None)}, "warm_throughput="),
    ({"max_on_demand": (1, 2, 3)}, "max_on_demand="),
    ({"max_on_demand": ("5", 1)}, "max_on_demand="),
    ({"deletion_protection": "yes"}, "deletion_protection= takes True or False"),
    ({"contributor_insights": "ACCESSED_AND_THROTTLED_KEYS"}, "'accessed' or 'throttled'"),
    ({"tags": {"aws:owner": "x"}}, "not starting with 'aws:'"),
    ({"tags": {"": "x"}}, "keys of 1-128"),
    ({"tags": {"k" * 129: "x"}}, "keys of 1-128"),
    ({"tags": {"k": "v" * 257}}, "values of at most 256"),
    ({"tags": {"k": 1}}, "both strings"),
    ({"tags": [("k", "v")]}, "tags= takes a mapping"),
    ({"tags": {f"k{i}": "v" for i in range(51)}}, "DynamoDB allows 50"),
])
def test_a_setting_dynamodb_refuses_is_refused_when_declared(given: dict[str, Any],
                                                             says: str) -> None:
    with pytest.raises(SettingsError, match=None) as caught:
        Table("ops_refused", **given)
    assert says in str(caught.value) and "ops_refused" in str(caught.value)


@pytest.mark.parametrize("pair", [(0, 1), (1,), "12000", (1.5, 2)])
def test_a_gsi_setting_is_refused_when_declared(pair: Any) -> None:
    with pytest.raises(SettingsError, match="index 'by_x': warm_throughput="):
        GSI("by_x", pk="x", warm_throughput=pair)
    with pytest.raises(SettingsError, match="index 'by_x': max_on_demand="):
        GSI("by_x", pk="x", max_on_demand=pair)


def test_create_table_carries_the_settings_its_request_has() -> None:
    request = ops.definition()
    assert request["DeletionProtectionEnabled"] is True
    assert request["WarmThroughput"] == {"ReadUnitsPerSecond": 13000,
                                         "WriteUnitsPerSecond": 5000}
    assert request["OnDemandThroughput"] == {"MaxReadRequestUnits": 100,
                                             "MaxWriteRequestUnits": 50}
    assert request["Tags"] == [{"Key": "env", "Value": "test"},
                               {"Key": "team", "Value": "payments"}]
    (gsi,) = request["GlobalSecondaryIndexes"]
    assert gsi["WarmThroughput"] == {"ReadUnitsPerSecond": 12001, "WriteUnitsPerSecond": 4001}
    assert gsi["OnDemandThroughput"] == {"MaxReadRequestUnits": 10, "MaxWriteRequestUnits": 5}
    assert "WarmThroughput" not in Table("ops_plain").definition()


def test_create_applies_the_settings_and_settings_reads_them_back(
        live: Table, request: pytest.FixtureRequest) -> None:
    engine = engine_of(request)
    found = live.settings()
    assert set(found.unknown) == _NO_API[engine]
    expected: dict[str, Any] = {"deletion_protection": True,
                                "warm_throughput": (13000, 5000),
                                "max_on_demand": (100, 50), "pitr_days": 7,
                                "tags": DECLARED["tags"]}
    for name, value in expected.items():
        if name in _HAS[engine]:
            assert getattr(found, name) == value, name
        elif name not in _NO_API[engine]:  # (dropped silently: drift, said by check)
            assert getattr(found, name) != value, f"{engine} now keeps {name}: update _HAS"
    if "index by_owner warm_throughput" not in _NO_API[engine]:
        assert found.indexes["by_owner"][0] == (12001, 4001)
    if "index by_owner max_on_demand" not in _NO_API[engine]:
        assert found.indexes["by_owner"][1] == (10, 5)
    drifted = settings_drift(live)
    assert {line.split(":")[0] for line in drifted} == _NO_API[engine]  # (else applied)
    for name in _NO_API[engine] & set(DECLARED):
        assert f"{name}: declared {DECLARED[name]!r}, the endpoint cannot report it" in drifted


def test_create_on_an_existing_table_applies_a_changed_declaration(
        live: Table, request: pytest.FixtureRequest) -> None:
    engine = engine_of(request)
    if "deletion_protection" not in _HAS[engine]:
        pytest.skip(f"{engine} keeps no deletion protection")
    _unprotect(live)
    assert live.settings().deletion_protection is False
    assert "deletion_protection: declared True, the table has False" in settings_drift(live)
    live.create()  # (the table exists: the setting it lost is applied again)
    assert live.settings().deletion_protection is True
    if "pitr_days" in _HAS[engine]:
        live.client.update_continuous_backups(
            TableName=live.name, PointInTimeRecoverySpecification={
                "PointInTimeRecoveryEnabled": True, "RecoveryPeriodInDays": 30})
        assert "pitr_days: declared 7, the table has 30" in settings_drift(live)
        live.create()
        assert live.settings().pitr_days == 7
    assert not [line for line in settings_drift(live) if "the table has" in line]


def test_check_reports_the_drift_and_exits_1(live: Table, backend: str | None,
                                             request: pytest.FixtureRequest,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    engine = engine_of(request)
    _unprotect(live)
    argv = ["check", f"{__name__}:ops"] + ([] if backend is None else
                                          ["--endpoint-url", backend])
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "setting deletion_protection: declared True, the table has False" in out
    if "pitr_days" in _NO_API[engine]:
        assert "setting pitr_days: declared 7, the endpoint cannot report it" in out


def test_a_table_without_settings_reads_none_and_check_asks_nothing() -> None:
    plain = Table("ops_plain")
    assert plain.declared_settings == TableSettings()
    assert list(drift_p(plain)) == []  # (nothing declared: no request planned)


@pytest.mark.parametrize(("given", "says"), [
    ({"warm_throughput": (1, 1)}, "at least 12000 reads and 4000 writes"),
    ({"warm_throughput": (11999, None)}, "at least 12000 reads"),
    ({"warm_throughput": (None, 3999)}, "4000 writes"),
    ({"warm_throughput": (2**63, 5000)}, "warm_throughput= takes (reads, writes)"),
    ({"max_on_demand": (2**63, 1)}, "max_on_demand= takes (reads, writes)"),
    ({"tags": {"AWS:owner": "x"}}, "not starting with 'aws:'"),
    ({"tags": {"Aws:owner": "x"}}, "not starting with 'aws:'"),
    ({"tags": {"cost${center}": "x"}}, "letters, numbers, spaces"),
    ({"tags": {"k": '"quoted"'}}, "letters, numbers, spaces"),
    ({"tags": {"k": "line\nbreak"}}, "letters, numbers, spaces"),
    ({"tags": {"k": "nul\x00"}}, "letters, numbers, spaces"),
    ({"tags": {"k": "\U0001f600"}}, "letters, numbers, spaces"),
    ({"contributor_insights": ["accessed"]}, "'accessed' or 'throttled'"),
])
def test_red_a_setting_dynamodb_refuses_is_refused_before_sending(
        given: dict[str, Any], says: str) -> None:
    """(red team 63) warm throughput below a new on-demand table's (DynamoDB never lowers
    it), numbers past DynamoDB's Long, a tag key ``AWS:`` in another case, tag characters
    outside DynamoDB's set and an unhashable mode were accepted (or a TypeError)."""
    with pytest.raises(SettingsError) as caught:
        Table("ops_refused", **given)
    assert says in str(caught.value) and "ops_refused" in str(caught.value)


def test_red_every_tag_dynamodb_allows_is_accepted() -> None:
    """The tag check refuses nothing DynamoDB takes: letters of any script, numbers,
    spaces and ``_ . : / = + - @``, at the length limits."""
    tags = {"é" * 128: "ü" * 256, "a b_c.d:e/f=g+h-i@j": "", "日本": "٣"}
    assert Table("ops_allowed", tags=tags, warm_throughput=(12000, 4000)
                 ).declared_settings.tags == tags


@pytest.fixture
def absent(backend: str | None) -> Iterator[Table]:
    """``ops`` on the engine, not yet created (deleted after the test)."""
    yield from _ops_on(backend, create=False)


def _ops_on(backend: str | None, create: bool) -> Iterator[Table]:
    """``ops`` on the engine under a name of this worker's, none there before it
    (``create``: created), deleted (deletion protection lifted) and named back after."""
    name = ops.name
    ops.name = name + worker_suffix()
    ops.connect(backend)
    try:
        if ops.exists():
            _unprotect(ops)
            ops.delete()
        if create:
            ops.create()
        yield ops
    finally:
        try:
            if create or ops.exists():  # (the table created must be there to delete)
                _unprotect(ops)
                ops.delete()
        finally:
            ops.name = name


_SETTING_CALLS = ("CreateTable", "UpdateTable", "UpdateContinuousBackups", "TagResource",
                  "UpdateTimeToLive", "DescribeTable")


def _applied(table: Table) -> list[str]:
    """The drift of the settings the engine keeps (what is not as declared)."""
    return [line for line in settings_drift(table) if "the table has" in line]


@pytest.mark.sync_only  # (a second creator inside the fault's window: threads-free, sync)
@pytest.mark.parametrize("operation", _SETTING_CALLS)
def test_red_create_converges_after_a_lost_answer_with_a_second_creator_in_the_window(
        absent: Table, backend: str | None, operation: str,
        request: pytest.FixtureRequest) -> None:
    """(red team 63) ``create()`` is several calls: each one's answer lost once, with a
    second creator running its whole ``create()`` in the window, ends with the table fully
    set (a retried create converges); every answer of the call lost is an error naming
    the operation, and the next ``create()`` converges."""
    from dynaorm.errors import DynaormError
    from dynaorm.testing import inject_faults

    other = Table(absent.name, indexes=[GSI("by_owner", pk="owner",
                                            warm_throughput=(12001, 4001),
                                            max_on_demand=(10, 5))], **DECLARED)
    other.connect(backend)
    with inject_faults(absent) as faults:
        faults.lose_answer(operation, after=other.create)
        try:
            absent.create()
        except DynaormError as exc:
            assert operation in str(exc) or operation.lower() in str(exc).lower(), exc
            absent.create()
    assert _applied(absent) == [] or (engine_of(request) == "moto" and _applied(absent) == [
        "max_on_demand: declared (100, 50), the table has None",
        "index by_owner max_on_demand: declared (10, 5), the table has None"])
    with inject_faults(absent) as faults:
        _unprotect(absent)
        absent.delete()
        faults.lose_answer(operation, times=None)
        try:
            absent.create()
        except DynaormError as exc:
            assert operation in str(exc) or operation.lower() in str(exc).lower(), exc
    absent.create()
    assert absent.settings().deletion_protection in (True, None)
    drifted = _applied(absent)
    assert drifted == [] or (engine_of(request) == "moto" and {
        line.split(":")[0] for line in drifted} == {"max_on_demand",
                                                    "index by_owner max_on_demand"})


@pytest.mark.sync_only
def test_red_a_failed_settings_call_says_what_create_applied(
        absent: Table, request: pytest.FixtureRequest) -> None:
    """(red team 63) A settings request failing for good after CreateTable: the error (the
    request's own, its type kept) says the table is there, which declared settings are
    applied and which are not, and that create() again converges -- and it does."""
    from dynaorm.errors import DynaormError
    from dynaorm.testing import inject_faults

    if "pitr_days" not in _HAS[engine_of(request)]:
        pytest.skip(f"{engine_of(request)} has no UpdateContinuousBackups: nothing fails")
    with inject_faults(absent) as faults, pytest.raises(DynaormError) as caught:
        faults.lose_answer("UpdateContinuousBackups", times=None)
        absent.create()
    said = str(caught.value)
    assert "created" in said and "pitr_days" in said, said
    assert "UpdateContinuousBackups" in said and "not applied: pitr_days" in said, said
    assert "applied: " in said and "deletion_protection" in said.split("not applied")[0]
    assert "create() again" in said and "may have been applied" in said, said
    absent.create()
    assert absent.settings().pitr_days == ops.declared_settings.pitr_days


def test_red_the_failed_settings_message_and_the_billing_check_are_pure() -> None:
    """(issue 63) What create() says after a failed settings request, and the refusal of
    ``max_on_demand=`` on a PROVISIONED table, from what DescribeTable answered alone."""
    from dynaorm.schema.settings import check_billing, unapplied

    said = unapplied("t", ["deletion_protection", "pitr_days", "tags", "contributor_insights"],
                     ["pitr_days", "tags"], ["contributor_insights"])
    assert "applied: deletion_protection;" in said and "not applied: pitr_days, tags" in said
    assert "cannot report contributor_insights" in said and "create() again" in said
    assert "may have been" not in said and "may have been" in unapplied(
        "t", ["tags"], ["tags"], [], maybe=True)
    provisioned = {"ProvisionedThroughput": {"ReadCapacityUnits": 5, "WriteCapacityUnits": 5}}
    with pytest.raises(SettingsError, match="max_on_demand, index by_owner max_on_demand"):
        check_billing(ops, provisioned)
    with pytest.raises(SettingsError, match="PROVISIONED"):
        check_billing(ops, {"BillingModeSummary": {"BillingMode": "PROVISIONED"}})
    check_billing(ops, {"BillingModeSummary": {"BillingMode": "PAY_PER_REQUEST"},
                        **provisioned})  # (the mode said wins)
    check_billing(ops, {"ProvisionedThroughput": {"ReadCapacityUnits": 0}})  # on demand
    check_billing(Table("plain", pk="pk"), provisioned)  # nothing declared: nothing refused


def test_red_a_side_not_declared_is_no_drift() -> None:
    """(red team 63) A maximum declared for reads only drifted from a table with a write
    maximum (``create()`` then sent the reads again, and ``check`` kept reporting it)."""
    from dynaorm.schema.settings import drift

    declared = TableSettings(max_on_demand=(100, None))
    assert drift(declared, TableSettings(max_on_demand=(100, 200)), {}) == []
    assert drift(TableSettings(), TableSettings(indexes={"g": (None, (5, 7))}),
                 {"g": (None, (5, None))}) == []
    assert drift(declared, TableSettings(max_on_demand=(101, 200)), {}) == [
        "max_on_demand: declared (100, None), the table has (101, None)"]


#: each setting changed behind dynaorm's back, as the engine takes it: (setting, request
#: method, its keywords) -- the drift line ``check`` says, then ``create()`` repairs it
_CHANGES: list[tuple[str, str, dict[str, Any]]] = [
    ("deletion_protection", "update_table", {"DeletionProtectionEnabled": False}),
    ("max_on_demand", "update_table", {"OnDemandThroughput": {
        "MaxReadRequestUnits": 7, "MaxWriteRequestUnits": 50}}),
    ("index by_owner max_on_demand", "update_table", {"GlobalSecondaryIndexUpdates": [
        {"Update": {"IndexName": "by_owner", "OnDemandThroughput": {
            "MaxReadRequestUnits": 3, "MaxWriteRequestUnits": 5}}}]}),
    ("pitr_days", "update_continuous_backups", {"PointInTimeRecoverySpecification": {
        "PointInTimeRecoveryEnabled": False}}),
    ("tags", "tag_resource", {"Tags": [{"Key": "team", "Value": "other"}]}),
]


@pytest.mark.parametrize(("setting", "method", "change"), _CHANGES,
                         ids=[c[0] for c in _CHANGES])
def test_red_check_reports_each_setting_changed_and_create_repairs_it(
        live: Table, request: pytest.FixtureRequest, setting: str, method: str,
        change: dict[str, Any]) -> None:
    """(red team 63) Drift for every setting the engine keeps, on each engine: changed
    out of band, ``check`` names it; ``create()`` puts it back; nothing is left."""
    engine = engine_of(request)
    if setting not in _HAS[engine] | {"index by_owner max_on_demand"} or (
            setting in _NO_API[engine]):
        pytest.skip(f"{engine} does not keep {setting}")
    target = ({"ResourceArn": live.client.describe_table(TableName=live.name)["Table"][
        "TableArn"]} if method == "tag_resource" else {"TableName": live.name})
    getattr(live.client, method)(**target, **change)
    if setting.startswith("index") and live.settings().indexes["by_owner"][1] == (10, 5):
        pytest.skip(f"{engine} ignores UpdateTable of a GSI's OnDemandThroughput")
    assert [line for line in _applied(live) if line.startswith(f"{setting}:")], (
        settings_drift(live))
    live.create()
    assert _applied(live) == []


def test_red_create_waits_out_another_creators_table_update(
        live: Table, request: pytest.FixtureRequest) -> None:
    """(red team 63) A settings UpdateTable refused with ResourceInUseException (DynamoDB's
    answer while another creator's UpdateTable has the table UPDATING, which the engines
    apply at once) raised out of ``create()``; the indexes, stream and TTL already waited
    such a change out. botocore's own pipeline answers (moto in-process only)."""
    from tests.support.faults import Faults

    if engine_of(request) != "moto":
        pytest.skip("the refusal is injected in botocore's pipeline: moto in-process only")
    _unprotect(live)
    faults = Faults(live)
    try:
        faults.refuse("UpdateTable", times=1, code="ResourceInUseException")
        live.create()
    finally:
        faults.clear()
    assert live.settings().deletion_protection is True


def test_red_max_on_demand_on_a_provisioned_table_is_refused_before_sending(
        backend: str | None) -> None:
    """(red team 63) ``max_on_demand=`` on an existing PROVISIONED table: a SettingsError
    from the DescribeTable create() reads anyway, OnDemandThroughput never sent."""
    table = Table("ops_provisioned" + worker_suffix(), max_on_demand=(100, 50))
    table.connect(backend)
    if table.exists():
        table.delete()
    table.client.create_table(
        TableName=table.name, BillingMode="PROVISIONED",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                   {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"},
                              {"AttributeName": "sk", "AttributeType": "S"}],
        ProvisionedThroughput={"ReadCapacityUnits": 5, "WriteCapacityUnits": 5})
    try:
        with pytest.raises(SettingsError, match="max_on_demand"):
            table.create()
        assert table.client.describe_table(TableName=table.name)["Table"].get(
            "OnDemandThroughput", {}).get("MaxReadRequestUnits", -1) in (-1, 0)
    finally:
        table.delete()
