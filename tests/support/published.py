"""Published single-table designs for the inference tests (``tests/data/designs``, each a
NoSQL Workbench data model with its sample items; sources and licences in
``SOURCES.md``), written raw with boto3, and the models we expect inference to find,
written by hand from each design's own description: each entity's table key templates
and template indexes. :func:`structure` compares templates by structure (literals and
field slots, which slots hold one field), never by field names."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from dynaorm.client.settings import local_credentials
from dynaorm.schema.templates import KeyTemplate

__all__ = ["EXPECTED", "boto_client", "create_raw", "entity_structure", "load", "matched",
           "score", "structure", "value_of"]

DATA = Path(__file__).resolve().parents[1] / "data" / "designs"

#: per design file: each entity's (pk, sk, {index: (pk, sk)}) as the design describes it
EXPECTED: dict[str, dict[str, tuple[str, str | None, dict[str, tuple[str, str | None]]]]] = {
    "online_shop": {
        "customer": ("c#{customer_id}", "c#{customer_id}", {}),
        "product": ("p#{product_id}", "p#{product_id}", {}),
        "warehouse": ("w#{warehouse_id}", "w#{warehouse_id}", {}),
        "warehouseItem": ("p#{product_id}", "w#{warehouse_id}",
                          {"GSI2": ("w#{warehouse_id}", "p#{product_id}")}),
        "order": ("o#{order_id}", "c#{customer_id}", {}),
        "orderItem": ("o#{order_id}", "p#{product_id}",
                      {"GSI1": ("p#{product_id}", "{ordered_at}"),
                       "GSI2": ("c#{customer_id}", "{ordered_at}")}),
        "invoice": ("o#{order_id}", "i#{invoice_id}",
                    {"GSI1": ("i#{invoice_id}", "i#{invoice_id}"),
                     "GSI2": ("c#{customer_id}", "{date}")}),
        "shipment": ("o#{order_id}", "sh#{shipment_id}",
                     {"GSI1": ("sh#{shipment_id}", "sh#{shipment_id}"),
                      "GSI2": ("w#{warehouse_id}", "sh#{shipment_id}")}),
        "shipmentItem": ("o#{order_id}", "shp#{line_id}",
                         {"GSI1": ("sh#{shipment_id}", "p#{product_id}")}),
    },
    "device_state_log": {
        # GSI1 is keyed on the Operator and Date attributes, GSI2 on EscalatedTo and the
        # table's own sort key: both native, no template
        "DeviceState": ("d#{device_id}", "{state}#{date}", {}),
    },
    "chat_system": {
        "Comment": ("User:{user_id}", "{posted_at}", {}),
        "Room": ("Room:{room_id}", "meta", {}),
    },
    "complaint_management": {
        "Complaint": ("{complaint_id}", "metadata", {}),
        "Communication": ("{complaint_id}", "comm#{comm_date}#{comm_id}", {}),
    },
    "session_management": {
        # GSI1_inverse: the table's keys inverted (its pk the SK attribute)
        "ChildSession": ("suuid#{session_id}", "child#suuid#{child_id}",
                         {"GSI1_inverse": ("child#suuid#{child_id}", "suuid#{session_id}")}),
        "CustomerSession": ("suuid#{session_id}", "c#{customer_id}",
                            {"GSI1_inverse": ("c#{customer_id}", "suuid#{session_id}")}),
    },
    "social_network": {
        "UserInfo": ("u#{user_id}", '"info"', {}),
        "UserCount": ("u#{user_id}", '"count"', {}),
        "Follower": ("u#{user_id}#follower", "u#{follower_id}", {}),
        "Following": ("u#{user_id}#following", "u#{followed_id}", {}),
        "Post": ("u#{user_id}#post", "p#{post_id}", {}),
        "Like": ("p#{post_id}#likelist", "u#{user_id}", {}),
        "LikeCount": ("p#{post_id}#likecount", '"count"', {}),
        "TimelineEntry": ("u#{user_id}#timeline", "p#{post_id}#u#{author_id}", {}),
    },
    "electrodb_tasks": {
        "tasks": ("$taskapp#team_{team}", "$tasks_1#project_{project}#task_{task}", {}),
    },
}


def load(name: str) -> dict[str, Any]:
    """The Workbench table of design ``name`` (keys, indexes, ``TableData``)."""
    doc: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    table: dict[str, Any] = doc["DataModel"][0]
    return table


def boto_client(endpoint_url: str | None) -> Any:
    """A plain boto3 DynamoDB client of the engine (moto when ``endpoint_url`` is None)."""
    import boto3

    return boto3.client("dynamodb", endpoint_url=endpoint_url, region_name="us-east-1",
                        **local_credentials(endpoint_url))


def _key(attrs: Mapping[str, Any]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    schema = [{"AttributeName": attrs["PartitionKey"]["AttributeName"], "KeyType": "HASH"}]
    defs = [dict(attrs["PartitionKey"])]
    if "SortKey" in attrs:
        schema.append({"AttributeName": attrs["SortKey"]["AttributeName"], "KeyType": "RANGE"})
        defs.append(dict(attrs["SortKey"]))
    return schema, defs


def create_raw(client: Any, table_name: str, design: Mapping[str, Any]) -> int:
    """Create ``table_name`` as the design declares it and put its items with raw boto3
    calls (as the design's own code would); the number of items."""
    schema, defs = _key(design["KeyAttributes"])
    gsis = []
    for index in design.get("GlobalSecondaryIndexes", ()):
        keys, more = _key(index["KeyAttributes"])
        defs += more
        gsis.append({"IndexName": index["IndexName"], "KeySchema": keys,
                     "Projection": index.get("Projection", {"ProjectionType": "ALL"})})
    unique = list({d["AttributeName"]: d for d in defs}.values())
    extra = {"GlobalSecondaryIndexes": gsis} if gsis else {}
    client.create_table(TableName=table_name, KeySchema=schema, AttributeDefinitions=unique,
                        BillingMode="PAY_PER_REQUEST", **extra)
    for item in design["TableData"]:
        client.put_item(TableName=table_name, Item=item)
    return len(design["TableData"])


def structure(templates: Iterable[str | None]) -> tuple[Any, ...]:
    """Templates by structure: literal texts, and each field slot as the number of the
    field in order of first appearance (so names do not matter, sharing does)."""
    numbers: dict[str, int] = {}
    out: list[Any] = []
    for source in templates:
        if source is None:
            out.append(None)
            continue
        parts: list[Any] = []
        for seg in KeyTemplate.parse(source).segments:
            if isinstance(seg, str):
                parts.append(seg)
            else:
                parts.append(numbers.setdefault(seg.name, len(numbers)))
        out.append(tuple(parts))
    return tuple(out)


def _expected_structure(entry: tuple[str, str | None, dict[str, tuple[str, str | None]]]
                        ) -> tuple[Any, ...]:
    pk, sk, indexes = entry
    names = sorted(indexes)
    return (structure([pk, sk, *(t for n in names for t in indexes[n])]), tuple(names))


def _inferred_structure(entity: Mapping[str, Any]) -> tuple[Any, ...]:
    indexes = {i["name"]: (i["pk"], i["sk"]) for i in entity["indexes"]}
    names = sorted(indexes)
    return (structure([entity["pk"], entity["sk"], *(t for n in names for t in indexes[n])]),
            tuple(names))


def score(design: str, model: Mapping[str, Any]) -> tuple[int, int, list[str]]:
    """How many of the design's expected entities an inferred entity matches by structure
    (each inferred entity matches one at most), of how many, and the ones missed."""
    inferred = [_inferred_structure(e) for e in model["entities"]]
    missed = []
    hit = 0
    for name, entry in EXPECTED[design].items():
        want = _expected_structure(entry)
        if want in inferred:
            inferred.remove(want)
            hit += 1
        else:
            missed.append(name)
    return hit, len(EXPECTED[design]), missed


# -- the project's own designs, filled with values ------------------------------------------
def value_of(annotation: Any, n: int, name: str) -> Any:
    """A value of ``annotation`` for object ``n`` (distinct per field and object; ids hold
    a digit, no separator), or :class:`TypeError` for a type it cannot make."""
    import datetime as dt
    import decimal
    import enum
    import types as pytypes
    import typing
    import uuid

    import pydantic

    origin, args = typing.get_origin(annotation), typing.get_args(annotation)
    if origin in (typing.Union, pytypes.UnionType):
        return value_of(next(a for a in args if a is not type(None)), n, name)
    if origin is typing.Literal:
        return args[0]
    if origin is typing.Annotated:
        return value_of(args[0], n, name)
    if origin in (list, set, frozenset, tuple):
        return origin([value_of(args[0], n, name)]) if args else origin()
    if origin is dict or annotation is dict:
        return {}
    simple: dict[Any, Any] = {
        typing.Any: "any", str: f"{name.replace('_', '')}{n}x{n * 7}", bool: n % 2 == 0,
        int: n + 3, float: n + 0.5, decimal.Decimal: decimal.Decimal(n) + decimal.Decimal(
            "0.25"), dt.datetime: dt.datetime(2024, 1, 1 + n, tzinfo=dt.UTC),
        dt.date: dt.date(2024, 1, 1 + n), bytes: b"b%d" % n, uuid.UUID: uuid.UUID(int=n + 1)}
    if annotation in simple:
        return simple[annotation]
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        members = list(annotation)
        return members[n % len(members)]
    if isinstance(annotation, type) and issubclass(annotation, pydantic.BaseModel):
        return annotation(**{k: value_of(f.annotation, n, k)
                             for k, f in annotation.model_fields.items()})
    raise TypeError(f"no value for {annotation!r}")


def entity_structure(entity: Mapping[str, Any], table: Mapping[str, Any] | None = None
                     ) -> tuple[Any, ...]:
    """An entity of a model by the structure of its table key and its indexes: template
    indexes, and (``table`` given) each native index keyed on attributes the entity
    stores as fields, as the template of that field (``{map}``: one slot either way)."""
    indexes = list(entity["indexes"])
    stored = {f["stored"]: f["name"] for f in entity["fields"]}
    for index in (table or {}).get("indexes", ()):
        keys = [*index.get("pk", ()), *index.get("sk", ())]
        if index.get("native") and len(keys) <= 2 and all(k in stored for k in keys):
            templates = ["{" + stored[k] + "}" for k in keys]
            indexes.append({"name": index["name"], "pk": templates[0],
                            "sk": templates[1] if len(keys) > 1 else None})
    indexes.sort(key=lambda i: i["name"])
    return (structure([entity["pk"], entity["sk"],
                       *(t for i in indexes for t in (i["pk"], i["sk"]))]),
            tuple(i["name"] for i in indexes))


def matched(want: Mapping[str, Any], got: Mapping[str, Any]) -> tuple[int, list[str]]:
    """How many entities of model ``want`` an entity of model ``got`` matches by
    structure (each once), and the names of those none matches."""
    left = [entity_structure(e, got["table"]) for e in got["entities"]]
    missed = []
    for e in want["entities"]:
        shape = entity_structure(e, want["table"])
        if shape in left:
            left.remove(shape)
        else:
            missed.append(str(e["name"]))
    return len(want["entities"]) - len(missed), missed
