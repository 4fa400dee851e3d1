"""A table's operational settings (contract 22, "Operations from the model"): warm
throughput and on-demand maximum (of the table and of each GSI), point-in-time recovery's
period, deletion protection, Contributor Insights' mode and tags, as declared on a
``Table`` and ``GSI`` (checked here, before anything is sent), as CreateTable and the
follow-up requests send them, and as DescribeTable and its neighbours report them back
(:class:`TableSettings`, what ``Table.settings()`` returns), with the differences
``dynaorm check`` reports (:func:`drift`).

Pure: nothing here sends a request (:mod:`dynaorm.core.admin` does).
"""

import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final, TypedDict

from dynaorm.errors import SettingsError

__all__ = [
    "INSIGHTS",
    "Declared",
    "Pair",
    "TableSettings",
    "check_billing",
    "check_index",
    "check_pair",
    "create_params",
    "declared_indexes",
    "drift",
    "most",
    "parse_settings",
    "settings_of",
    "table_drift",
    "unapplied",
    "warm",
]

#: a (reads, writes) pair: units per second (warm throughput) or request units (maximum)
Pair = tuple[int | None, int | None]
#: ``contributor_insights=`` -> DynamoDB's ``ContributorInsightsMode``
INSIGHTS: Final = {"accessed": "ACCESSED_AND_THROTTLED_KEYS", "throttled": "THROTTLED_KEYS"}
_MODES: Final = {mode: name for name, mode in INSIGHTS.items()}
#: DynamoDB's point-in-time recovery periods (``RecoveryPeriodInDays``)
PITR_DAYS: Final = (1, 35)
#: DynamoDB's limits on tags (per resource, key and value lengths)
_MAX_TAGS, _KEY_LEN, _VALUE_LEN = 50, 128, 256
#: the characters a tag may hold besides letters, numbers and spaces (DynamoDB's tagging
#: restrictions; ``@`` as AWS's tag pattern ``[\\p{L}\\p{Z}\\p{N}_.:/=+\\-@]``)
_TAG_PUNCTUATION: Final = frozenset("_.:/=+-@")
#: the least warm throughput of an on-demand table (what a new one starts with; DynamoDB
#: never lowers it) and the largest number DynamoDB's ``Long`` holds
WARM_LEAST: Final = (12000, 4000)
_LONG: Final = 2**63 - 1


class Declared(TypedDict, total=False):
    """The settings ``Table(...)`` takes (see :class:`TableSettings`)."""

    warm_throughput: Pair | None
    max_on_demand: Pair | None
    pitr_days: int | None
    deletion_protection: bool | None
    contributor_insights: str | None
    tags: Mapping[str, str] | None


@dataclass(frozen=True)
class TableSettings:
    """A table's operational settings: declared (``Table.declared_settings``) or as the
    live table has them (``Table.settings()``). ``None`` is "not declared" (or, read back,
    "off"); ``unknown`` names the settings the endpoint could not report (an engine
    without the API: DynamoDB Local has no PITR, Contributor Insights or tags)."""

    warm_throughput: Pair | None = None
    """(read units per second, write units per second) the table is pre-warmed for."""
    max_on_demand: Pair | None = None
    """(read request units, write request units) per second the table may use at most."""
    pitr_days: int | None = None
    """Point-in-time recovery's period in days (1-35); ``None``: off (not declared)."""
    deletion_protection: bool | None = None
    """Whether DeleteTable is refused."""
    contributor_insights: str | None = None
    """``"accessed"`` (accessed and throttled keys) or ``"throttled"`` (throttled keys)."""
    tags: Mapping[str, str] = field(default_factory=dict)
    """The table's tags (declared: those it has at least)."""
    indexes: Mapping[str, tuple[Pair | None, Pair | None]] = field(default_factory=dict)
    """Each GSI's (warm throughput, on-demand maximum), by index name."""
    unknown: tuple[str, ...] = ()
    """The settings the endpoint could not report."""

    def data(self) -> dict[str, Any]:
        """The settings as plain data (what ``table.model()`` holds: lists for pairs)."""
        return {"warm_throughput": _listed(self.warm_throughput),
                "max_on_demand": _listed(self.max_on_demand), "pitr_days": self.pitr_days,
                "deletion_protection": self.deletion_protection,
                "contributor_insights": self.contributor_insights,
                "tags": dict(sorted(self.tags.items()))}


def _listed(pair: Pair | None) -> list[int | None] | None:
    return None if pair is None else list(pair)


def check_pair(where: str, name: str, value: Any) -> Pair | None:
    """``value`` as a (reads, writes) pair of whole numbers of at least 1 (either may be
    ``None``: not declared), else a :class:`SettingsError` naming ``where``."""
    if value is None:
        return None
    if (not isinstance(value, tuple | list) or len(value) != 2
            or tuple(value) == (None, None) or not all(
                v is None or (type(v) is int and 1 <= v <= _LONG) for v in value)):
        raise SettingsError(f"{where}: {name}= takes (reads, writes), each a whole number "
                            f"of at least 1 (or None), got {value!r}")
    return (value[0], value[1])


def _check_warm(where: str, pair: Pair | None) -> Pair | None:
    """A table's warm throughput, refused below what a new on-demand table has already
    (DynamoDB refuses to lower warm throughput: CreateTable and UpdateTable fail)."""
    if pair is not None and any(v is not None and v < least
                                for v, least in zip(pair, WARM_LEAST, strict=True)):
        raise SettingsError(f"{where}: warm_throughput= of an on-demand table is at least "
                            f"{WARM_LEAST[0]} reads and {WARM_LEAST[1]} writes per second "
                            f"(DynamoDB's starting values, never lowered), got {pair!r}")
    return pair


def check_index(index: Any) -> None:
    """A GSI's ``warm_throughput=`` and ``max_on_demand=`` checked (and kept as tuples)."""
    for name in ("warm_throughput", "max_on_demand"):
        object.__setattr__(index, name, check_pair(f"index {index.name!r}", name,
                                                   getattr(index, name)))


def declared_indexes(table: Any) -> dict[str, tuple[Pair | None, Pair | None]]:
    """Each GSI of ``table`` that declares settings: (warm throughput, on-demand maximum)."""
    return {i.name: (i.warm_throughput, i.max_on_demand) for i in table.indexes.values()
            if getattr(i, "warm_throughput", None) or getattr(i, "max_on_demand", None)}


def table_drift(table: Any, live: TableSettings) -> list[str]:
    """:func:`drift` of ``table``'s declared settings (its GSIs' too) from ``live``."""
    return drift(table.declared_settings, live, declared_indexes(table))


def settings_of(where: str, *, warm_throughput: Any = None, max_on_demand: Any = None,
                pitr_days: Any = None, deletion_protection: Any = None,
                contributor_insights: Any = None, tags: Any = None) -> TableSettings:
    """The table settings declared, checked (a :class:`SettingsError` for a bad one, before
    anything is sent)."""
    if pitr_days is not None and (type(pitr_days) is not int
                                  or not PITR_DAYS[0] <= pitr_days <= PITR_DAYS[1]):
        raise SettingsError(f"{where}: pitr_days= takes a whole number of days from 1 to 35 "
                            f"(DynamoDB's RecoveryPeriodInDays), got {pitr_days!r}")
    if deletion_protection is not None and not isinstance(deletion_protection, bool):
        raise SettingsError(f"{where}: deletion_protection= takes True or False, got "
                            f"{deletion_protection!r}")
    if contributor_insights is not None and (not isinstance(contributor_insights, str)
                                             or contributor_insights not in INSIGHTS):
        raise SettingsError(f"{where}: contributor_insights= takes 'accessed' or "
                            f"'throttled', got {contributor_insights!r}")
    return TableSettings(_check_warm(where, check_pair(where, "warm_throughput",
                                                       warm_throughput)),
                         check_pair(where, "max_on_demand", max_on_demand), pitr_days,
                         deletion_protection, contributor_insights, _tags(where, tags))


def _tags(where: str, tags: Any) -> dict[str, str]:
    """``tags=`` checked against DynamoDB's rules: at most 50, keys of 1-128 characters not
    starting with ``aws:`` (in any case), values of 0-256 characters, all strings of
    letters, numbers, spaces and ``_.:/=+-@``."""
    if tags is None:
        return {}
    if not isinstance(tags, Mapping):
        raise SettingsError(f"{where}: tags= takes a mapping of strings, got {tags!r}")
    for key, value in tags.items():
        if not isinstance(key, str) or not isinstance(value, str) or not (
                1 <= len(key) <= _KEY_LEN) or len(value) > _VALUE_LEN or (
                key[:4].lower() == "aws:"):
            raise SettingsError(f"{where}: tag {key!r}: {value!r} refused (keys of 1-128 "
                                "characters not starting with 'aws:', values of at most "
                                "256, both strings)")
        if not all(c in _TAG_PUNCTUATION or unicodedata.category(c)[0] in "LNZ"
                   for c in key + value):
            raise SettingsError(f"{where}: tag {key!r}: {value!r} refused: DynamoDB takes "
                                "letters, numbers, spaces and _ . : / = + - @ only")
    if len(tags) > _MAX_TAGS:
        raise SettingsError(f"{where}: tags= holds {len(tags)} tags; DynamoDB allows 50")
    return dict(tags)




# -- requests ------------------------------------------------------------------------------
def warm(pair: Pair) -> dict[str, int]:
    """A ``WarmThroughput`` request member."""
    return {k: v for k, v in zip(("ReadUnitsPerSecond", "WriteUnitsPerSecond"), pair,
                                 strict=True) if v is not None}


def most(pair: Pair) -> dict[str, int]:
    """An ``OnDemandThroughput`` request member."""
    return {k: v for k, v in zip(("MaxReadRequestUnits", "MaxWriteRequestUnits"), pair,
                                 strict=True) if v is not None}


def create_params(declared: TableSettings, warm_pair: Pair | None = None,
                  most_pair: Pair | None = None) -> dict[str, Any]:
    """The members of CreateTable (or of one GSI's definition, given its pairs) that carry
    the settings: deletion protection, warm throughput, on-demand maximum and tags."""
    warm_pair = declared.warm_throughput if warm_pair is None else warm_pair
    most_pair = declared.max_on_demand if most_pair is None else most_pair
    out: dict[str, Any] = {}
    if warm_pair is not None:
        out["WarmThroughput"] = warm(warm_pair)
    if most_pair is not None:
        out["OnDemandThroughput"] = most(most_pair)
    if declared.deletion_protection is not None:
        out["DeletionProtectionEnabled"] = declared.deletion_protection
    if declared.tags:
        out["Tags"] = [{"Key": k, "Value": v} for k, v in sorted(declared.tags.items())]
    return out


# -- read back -----------------------------------------------------------------------------
def _pair(found: Mapping[str, Any] | None, names: tuple[str, str]) -> Pair | None:
    if not found:
        return None
    pair = tuple(found.get(n) for n in names)
    pair = tuple(None if v is None or v < 1 else int(v) for v in pair)
    return None if pair == (None, None) else (pair[0], pair[1])


_WARM: Final = ("ReadUnitsPerSecond", "WriteUnitsPerSecond")
_MOST: Final = ("MaxReadRequestUnits", "MaxWriteRequestUnits")


def parse_settings(table: Mapping[str, Any], backups: Mapping[str, Any] | None,
                   insights: Mapping[str, Any] | None, tags: list[Mapping[str, str]] | None,
                   unknown: tuple[str, ...]) -> TableSettings:
    """The settings of a live table from DescribeTable's ``Table``, DescribeContinuousBackups,
    DescribeContributorInsights and ListTagsOfResource's ``Tags`` (``None``: the endpoint
    has no such API, named in ``unknown``)."""
    days, mode = _pitr_days(backups), _insights_mode(insights)
    gsis = table.get("GlobalSecondaryIndexes") or []
    indexes = {g["IndexName"]: (_pair(g.get("WarmThroughput"), _WARM),
                                _pair(g.get("OnDemandThroughput"), _MOST)) for g in gsis}
    # a member DescribeTable does not report at all is a setting the endpoint does not
    # keep (DynamoDB reports each on every table; DynamoDB Local has no warm throughput)
    unknown += tuple(n for n, member in _MEMBERS if member not in table)
    unknown += tuple(f"index {g['IndexName']} {n}" for g in gsis
                     for n, member in _MEMBERS[:2] if member not in g)
    return TableSettings(_pair(table.get("WarmThroughput"), _WARM),
                         _pair(table.get("OnDemandThroughput"), _MOST), days,
                         table.get("DeletionProtectionEnabled"), mode,
                         {t["Key"]: t["Value"] for t in tags or []}, indexes, unknown)


def _pitr_days(backups: Mapping[str, Any] | None) -> int | None:
    """The recovery period of point-in-time recovery (DescribeContinuousBackups), or
    ``None`` when it is off."""
    pitr = ((backups or {}).get("ContinuousBackupsDescription") or {}).get(
        "PointInTimeRecoveryDescription") or {}
    return (pitr.get("RecoveryPeriodInDays") or 35) if pitr.get(
        "PointInTimeRecoveryStatus") in ("ENABLED", "ENABLING") else None


def _insights_mode(insights: Mapping[str, Any] | None) -> Any:
    """The contributor insights mode (DescribeContributorInsights), or ``None`` when off."""
    insights = insights or {}
    return _MODES.get(insights.get("ContributorInsightsMode") or "ACCESSED_AND_THROTTLED_KEYS"
                      ) if insights.get("ContributorInsightsStatus") in ("ENABLED",
                                                                         "ENABLING") else None


#: the settings DescribeTable reports, and the member it reports each in
_MEMBERS: Final = (("warm_throughput", "WarmThroughput"),
                   ("max_on_demand", "OnDemandThroughput"),
                   ("deletion_protection", "DeletionProtectionEnabled"))


def drift(declared: TableSettings, live: TableSettings,
          index_declared: Mapping[str, tuple[Pair | None, Pair | None]]) -> list[str]:
    """Where the live table differs from what is declared, one line each (settings not
    declared are not compared; a warm throughput the table has grown past is no drift; a
    setting the endpoint could not report is said so)."""
    out = []

    def differs(name: str, want: Any, have: Any) -> None:
        if want is None or (isinstance(want, Mapping) and not want):
            return
        if name in live.unknown:
            out.append(f"{name}: declared {want!r}, the endpoint cannot report it")
        elif want != have:
            out.append(f"{name}: declared {want!r}, the table has {have!r}")

    differs("warm_throughput", declared.warm_throughput, _floor(declared.warm_throughput,
                                                                live.warm_throughput))
    differs("max_on_demand", declared.max_on_demand, _sides(declared.max_on_demand,
                                                            live.max_on_demand))
    differs("pitr_days", declared.pitr_days, live.pitr_days)
    differs("deletion_protection", declared.deletion_protection, live.deletion_protection)
    differs("contributor_insights", declared.contributor_insights,
            live.contributor_insights)
    differs("tags", declared.tags, {k: v for k, v in live.tags.items() if k in declared.tags})
    for name, (want_warm, want_most) in index_declared.items():
        have_warm, have_most = live.indexes.get(name, (None, None))
        differs(f"index {name} warm_throughput", want_warm, _floor(want_warm, have_warm))
        differs(f"index {name} max_on_demand", want_most, _sides(want_most, have_most))
    return out


def check_billing(table: Any, described: Mapping[str, Any]) -> None:
    """A :class:`SettingsError` when ``table`` (or a GSI of it) declares ``max_on_demand=``
    and DescribeTable's ``described`` is of a PROVISIONED table (``OnDemandThroughput`` is
    for on-demand tables): refused before it is sent."""
    mode = (described.get("BillingModeSummary") or {}).get("BillingMode") or (
        "PROVISIONED" if (described.get("ProvisionedThroughput") or {}).get(
            "ReadCapacityUnits") else "PAY_PER_REQUEST")
    named = ["max_on_demand"] * bool(table.declared_settings.max_on_demand) + [
        f"index {name} max_on_demand" for name, (_, most_pair) in declared_indexes(
            table).items() if most_pair]
    if mode == "PROVISIONED" and named:
        raise SettingsError(
            f"table {table.name!r} is PROVISIONED (BillingMode): {', '.join(named)} declared "
            "(OnDemandThroughput, for on-demand tables only) is refused, nothing sent; drop "
            "it or switch the table to on-demand (BillingMode PAY_PER_REQUEST)")


def unapplied(name: str, declared: list[str], pending: list[str], unknown: list[str],
              maybe: bool = False) -> str:
    """What ``create()`` says after a settings request failed for good: the table ``name``
    is there, which ``declared`` settings are applied, which are ``pending`` (the failed
    one first, ``maybe`` applied) and which the endpoint cannot report; a retried
    ``create()`` converges."""
    applied = [n for n in declared if n not in pending and n not in unknown]
    cannot = f"; the endpoint cannot report {', '.join(unknown)}" if unknown else ""
    perhaps = f" ({pending[0]}'s request may have been applied)" if maybe else ""
    return (f"table {name!r} is created (or existed) and ACTIVE; of its declared settings, "
            f"applied: {', '.join(applied) or 'none'}; not applied: {', '.join(pending)}"
            f"{perhaps}{cannot}; create() again applies the rest (each settings request is "
            "idempotent)")


def _floor(want: Pair | None, have: Pair | None) -> Pair | None:
    """``want`` when ``have`` is at least it on each declared side (warm throughput grows
    with use), else ``have``."""
    if want is None or have is None:
        return have
    ok = all(w is None or (h is not None and h >= w) for w, h in zip(want, have, strict=True))
    return want if ok else have


def _sides(want: Pair | None, have: Pair | None) -> Pair | None:
    """``have`` with the sides ``want`` leaves undeclared (``None``) left out: a maximum
    declared for reads only is no drift from the table's maximum for writes."""
    if want is None or have is None:
        return have
    found = tuple(h if w is not None else None for w, h in zip(want, have, strict=True))
    return None if found == (None, None) else (found[0], found[1])
