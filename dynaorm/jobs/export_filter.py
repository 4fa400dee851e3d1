"""What an export keeps of a table, told to DynamoDB and checked again here: each entity's
key prefix proving a scope (:func:`scope_prefixes`), the ``FilterSpecification`` of a
DynamoDB export started for it (:func:`export_filter`, :func:`started_export`), and
whether a stored item is in the scope (:func:`in_scope`)."""

import uuid
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dynaorm.client.table import Table
from dynaorm.core.scope import Scope
from dynaorm.jobs.export_files import ExportError, Item, split_url
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.steps import call
from dynaorm.schema.entity import Entity
from dynaorm.schema.model import spec_of
from dynaorm.values.expressions import Placeholders
from dynaorm.values.keys import named


def scope_prefixes(classes: Sequence[type[Entity]], scope: Mapping[str, Any]
                   ) -> dict[str, tuple[str, bool]]:
    """Each entity's key prefix that proves its rows belong to ``scope`` (type name ->
    ``(prefix, exact)``: exact when the prefix is the whole partition key), from the key
    grammar (:meth:`~dynaorm.schema.templates.KeyTemplate.scope_prefix`); an entity whose
    partition key template proves none is :class:`ExportError`."""
    if not isinstance(scope, Mapping) or not scope:
        raise ExportError(f"export: scope= takes key fields and their values, got {scope!r}")
    out = {}
    for cls in classes:
        spec = spec_of(cls)
        proven = spec.pk.scope_prefix(scope.keys())
        if proven is None:
            raise ExportError(
                f"export: {cls.__name__}'s partition key {spec.pk.source!r} proves no "
                f"prefix of the scope {sorted(scope)} (its fields must lead it, unformatted)"
                ": export it without scope=, or leave it out of entities=")
        out[spec.type_name] = (spec.pk.render_prefix(scope, cls.__name__), proven[1])
    return out


def export_filter(table: Table, classes: Sequence[type[Entity]],
                  prefixes: Mapping[str, tuple[str, bool]] | None, chosen: bool
                  ) -> dict[str, Any] | None:
    """The ``FilterSpecification`` of an export of ``classes`` (``chosen``: fewer than all
    of the table's: their type names) within ``prefixes`` (:func:`scope_prefixes`):
    ``None`` when it would keep every item. The one whole partition key they name is read
    alone, else their prefixes are a filter (an exact prefix is the whole key: ``T#acme``
    never selects ``T#acme-corp``); the key and type attributes named whole, never as
    paths."""
    found = sorted(set((prefixes or {}).values()))
    ph, spec = Placeholders(), {}
    parts = [_within(ph, table.pk, found)]
    if len(found) == 1 and found[0][1]:
        spec["KeyConditionExpression"], parts = parts[0], []
    if chosen and table.type_attribute is not None:
        parts.append(_one_of(ph, table.type_attribute, classes))
    if parts := [f"({p})" for p in parts if p]:
        spec["FilterExpression"] = " AND ".join(parts)
    return ph.apply(spec) if spec else None


def _within(ph: Placeholders, pk: str, found: list[tuple[str, bool]]) -> str:
    """The partition key ``pk`` (one whole attribute) equal to each exact prefix of
    ``found``, or beginning with another, ORed."""
    pk = ph.segments((pk,))
    return " OR ".join(f"{pk} = {ph.value_av({'S': p})}" if exact else
                       f"begins_with({pk}, {ph.value_av({'S': p})})" for p, exact in found)


def _one_of(ph: Placeholders, attr: str, classes: Sequence[type[Entity]]) -> str:
    """``attr`` (one whole attribute) one of the type names of ``classes``, in order."""
    names = sorted(spec_of(c).type_name for c in classes)
    return f"{ph.segments((attr,))} IN ({', '.join(ph.value_av({'S': n}) for n in names)})"


def started_export(table: Table, to: str, filters: dict[str, Any] | None, poll: float,
                   sleep: Callable[[float], object]) -> str:
    """Start ``ExportTableToPointInTime`` of ``table`` into ``to`` (``s3://bucket/prefix``)
    with ``filters`` and wait for it: its ``manifest-summary.json`` URL."""
    if not to.startswith("s3://") or len(to) <= 5:
        raise ExportError(f"export: start_export= takes an s3://bucket/prefix URL, got {to!r}")
    bucket, prefix = split_url(to)
    operation = Operation("export", (table.name,))
    run = table.db.driver.run
    arn = run(call("DescribeTable", {"TableName": table.name}), operation)["Table"]["TableArn"]
    request = {"TableArn": arn, "S3Bucket": bucket,
               "ExportFormat": "DYNAMODB_JSON", "ExportType": "FULL_EXPORT",
               "ClientToken": uuid.uuid4().hex}
    if prefix.strip("/"):
        request["S3Prefix"] = prefix.strip("/")
    if filters:
        request["FilterSpecification"] = filters
    done = run(call("ExportTableToPointInTime", request), operation)["ExportDescription"]
    while done.get("ExportStatus") == "IN_PROGRESS":
        sleep(poll)
        done = run(call("DescribeExport", {"ExportArn": done["ExportArn"]}), operation)[
            "ExportDescription"]
    if done.get("ExportStatus") != "COMPLETED":
        raise ExportError(f"export: DynamoDB's export {done.get('ExportArn')} ended "
                          f"{done.get('ExportStatus')}: {done.get('FailureCode')} "
                          f"{done.get('FailureMessage')}")
    return f"s3://{bucket}/{done['ExportManifest']}"


def in_scope(table: Any, prefixes: Mapping[str, tuple[str, bool]] | None,
             values: Mapping[str, Any] | None, classes: Sequence[Any]
             ) -> Callable[[Item | None], bool] | None:
    """Whether a stored item is in an export's scope (``None``: no scope): its partition
    key starts with its entity's proven prefix (:func:`scope_prefixes`; exact: is it),
    and its stored scope fields (``values``: the scope as given) are the scope's (a
    stale key's row, whose key parses into the scope while its fields name another
    tenant, is not: :meth:`~dynaorm.core.scope.Scope.stored`, as a scoped read skips
    it)."""
    if prefixes is None:
        return None
    kind, pk = table.type_attribute, table.pk
    anyone = sorted(set(prefixes.values()))
    held = None if not values else Scope(values)
    specs = {spec_of(c).type_name: spec_of(c) for c in classes}

    def stored(name: Any, item: Item) -> bool:
        if held is None:
            return True
        spec = specs.get(name)  # (a type name of the scope, or none: no type attribute)
        return all(held.stored(s, item) for s in (
            [spec] if spec is not None else specs.values()))

    def scoped(item: Item | None) -> bool:
        item = item or {}
        key = named(item, pk)
        if key is None:
            return False
        name = named(item, kind)
        mine = [prefixes[name]] if name is not None and name in prefixes else (
            anyone if kind is None else [])
        return any(key == p if exact else key.startswith(p) for p, exact in mine) and (
            stored(name, item))
    return scoped
