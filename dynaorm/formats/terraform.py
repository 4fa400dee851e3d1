"""The model as Terraform: an ``aws_dynamodb_table`` resource (the AWS provider's argument
names) with the table's keys, every GSI (a native multi-attribute one as ``key_schema``
blocks, the provider's form since 6.x; a one-attribute one as ``hash_key`` /
``range_key``) and LSI, the stream, TTL and the operational settings (``warm_throughput``,
``on_demand_throughput``, ``point_in_time_recovery`` with its period,
``deletion_protection_enabled``, ``tags``), and an ``aws_dynamodb_contributor_insights``
resource with its ``mode`` when Contributor Insights is declared. Reads the model's plain
data only. A vector index has no argument in the provider: it is left out, with a note."""

import re
from collections.abc import Mapping
from typing import Any

from dynaorm.formats.tables import attribute_types, key_schema, projection, vector_notes
from dynaorm.schema.settings import INSIGHTS


class _Block:
    """HCL text: arguments and nested blocks, indented."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.depth = 0

    def arg(self, name: str, value: Any) -> None:
        self.lines.append(f"{'  ' * self.depth}{name} = {_value(value)}")

    def open(self, header: str) -> None:
        self.lines.append(f"{'  ' * self.depth}{header} {{")
        self.depth += 1

    def close(self) -> None:
        self.depth -= 1
        self.lines.append(f"{'  ' * self.depth}}}")

    def block(self, header: str, args: Mapping[str, Any]) -> None:
        self.open(header)
        for name, value in args.items():
            self.arg(name, value)
        self.close()


def _value(value: Any) -> str:
    """A value as HCL (strings quoted with HCL's escapes, ``${`` escaped; maps as objects)."""
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{_value(str(k))} = {_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_value(v) for v in value) + "]"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | _Raw):  # (a number; a reference, written as it is)
        return str(value)
    text = "".join(_ESCAPES.get(c) or (f"\\u{ord(c):04x}" if c < " " or c == "\x7f" else c)
                   for c in str(value))
    return f'"{text}"'.replace("${", "$${").replace("%{", "%%{")


#: HCL's escapes (no JSON ``\\b``/``\\f``; a character beyond the Basic Multilingual Plane
#: is written raw: Terraform refuses a JSON surrogate pair escape)
_ESCAPES = {'"': '\\"', "\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def resource_name(name: str) -> str:
    """A table name as a Terraform resource name (letters, digits, ``_`` and ``-``)."""
    found = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    return found if found[:1].isalpha() or found[:1] == "_" else f"t_{found}"


def to_format(model: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(the Terraform configuration, notes on what it leaves out) of the model's table."""
    table = model["table"]
    settings = table.get("settings") or {}
    name = resource_name(table["name"])
    w = _Block()
    w.open(f'resource "aws_dynamodb_table" "{name}"')
    w.arg("name", table["name"])
    w.arg("billing_mode", "PAY_PER_REQUEST")
    w.arg("hash_key", table["pk"])
    if table.get("sk"):
        w.arg("range_key", table["sk"])
    if settings.get("deletion_protection") is not None:
        w.arg("deletion_protection_enabled", settings["deletion_protection"])
    if table.get("stream"):
        w.arg("stream_enabled", True)
        w.arg("stream_view_type", table["stream"])
    if settings.get("tags"):
        w.arg("tags", dict(sorted(settings["tags"].items())))
    for attribute, kind in attribute_types(table).items():
        w.block("attribute", {"name": attribute, "type": kind})
    for index in table.get("indexes", ()):
        if index["kind"] in ("gsi", "lsi"):
            _index(w, index, table)
    if table.get("ttl"):
        w.block("ttl", {"attribute_name": table["ttl"], "enabled": True})
    if settings.get("pitr_days"):
        w.block("point_in_time_recovery", {"enabled": True,
                                           "recovery_period_in_days": settings["pitr_days"]})
    _pairs(w, settings)
    w.close()
    if settings.get("contributor_insights"):
        w.lines.append("")
        w.block(f'resource "aws_dynamodb_contributor_insights" "{name}"', {
            "table_name": _Raw(f"aws_dynamodb_table.{name}.name"),
            "mode": INSIGHTS[settings["contributor_insights"]]})
    return "\n".join(w.lines) + "\n", vector_notes(table)


class _Raw(str):
    """An HCL expression written as it is (a reference)."""


def _index(w: _Block, index: Mapping[str, Any], table: Mapping[str, Any]) -> None:
    local = index["kind"] == "lsi"
    w.open("local_secondary_index" if local else "global_secondary_index")
    w.arg("name", index["name"])
    keys = key_schema(index, table)
    if local:
        w.arg("range_key", keys[-1][0])
    elif index.get("native"):
        for attribute, kind in keys:
            w.block("key_schema", {"attribute_name": attribute, "key_type": kind})
    else:
        for attribute, kind in keys:
            w.arg("hash_key" if kind == "HASH" else "range_key", attribute)
    kind, included = projection(index, table)
    w.arg("projection_type", kind)
    if included:
        w.arg("non_key_attributes", included)
    _pairs(w, index)
    w.close()


def _pairs(w: _Block, declared: Mapping[str, Any]) -> None:
    """``warm_throughput`` and ``on_demand_throughput`` blocks of a table or a GSI."""
    for key, block, names in (
            ("warm_throughput", "warm_throughput", ("read_units_per_second",
                                                    "write_units_per_second")),
            ("max_on_demand", "on_demand_throughput", ("max_read_request_units",
                                                       "max_write_request_units"))):
        pair = declared.get(key)
        if pair:
            w.block(block, {n: v for n, v in zip(names, pair, strict=True) if v is not None})
