"""Published single-table designs for the inference tests (``tests/data/designs``, each a
NoSQL Workbench data model with its sample items; sources and licences in
``SOURCES.md``), written raw with boto3, and the models we expect inference to find,
written by hand from each design's own description: each entity's table key templates
and template indexes. :func:`structure` compares templates by structure (literals and
field slots, which slots hold one field), never by field names."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from dynaorm.client.settings import local_credentials
from dynaorm.schema.templates import KeyTemplate

__all__ = ["EXPECTED", "Score", "Want", "boto_client", "create_raw", "entity_structure", "load",
           "matched", "score", "structure", "value_of"]

DATA = Path(__file__).resolve().parents[1] / "data" / "designs"

class Want(NamedTuple):
    """One entity of a design as its publisher describes it: its table key templates,
    the indexes its items land in (a template index as its two templates; a native one,
    keyed on plain attributes, as those attributes, each written ``=Name``), and the model
    type of each attribute it stores (``object`` and ``map`` are one: a map)."""

    pk: str
    sk: str | None
    indexes: dict[str, tuple[str, str | None]]
    fields: dict[str, str]


#: per design file: each entity as the design describes it (its own words: the README, the
#: facet names, the library's declared model), written by hand
EXPECTED: dict[str, dict[str, Want]] = {
    "online_shop": {
        "customer": Want("c#{customer_id}", "c#{customer_id}", {},
                         {"Email": "string", "Name": "string"}),
        "product": Want("p#{product_id}", "p#{product_id}", {},
                        {"Detail": "map", "Price": "string"}),
        "warehouse": Want("w#{warehouse_id}", "w#{warehouse_id}", {}, {"Address": "map"}),
        "warehouseItem": Want("p#{product_id}", "w#{warehouse_id}",
                              {"GSI2": ("w#{warehouse_id}", "p#{product_id}")},
                              {"Quantity": "string"}),
        "order": Want("o#{order_id}", "c#{customer_id}", {}, {"Date": "datetime"}),
        "orderItem": Want("o#{order_id}", "p#{product_id}",
                          {"GSI1": ("p#{product_id}", "{ordered_at}"),
                           "GSI2": ("c#{customer_id}", "{ordered_at}")},
                          {"Price": "string", "Quantity": "string"}),
        # (Date is held in GSI2's sort key: a key holds text)
        "invoice": Want("o#{order_id}", "i#{invoice_id}",
                        {"GSI1": ("i#{invoice_id}", "i#{invoice_id}"),
                         "GSI2": ("c#{customer_id}", "{date}")},
                        {"Detail": "map", "Amount": "string", "Date": "string"}),
        "shipment": Want("o#{order_id}", "sh#{shipment_id}",
                         {"GSI1": ("sh#{shipment_id}", "sh#{shipment_id}"),
                          "GSI2": ("w#{warehouse_id}", "sh#{shipment_id}")},
                         {"Address": "map", "Type": "string", "Date": "datetime"}),
        "shipmentItem": Want("o#{order_id}", "shp#{line_id}",
                             {"GSI1": ("sh#{shipment_id}", "p#{product_id}")},
                             {"Quantity": "string"}),
    },
    "device_state_log": {
        # GSI1 is keyed on the Operator and Date attributes, GSI2 on EscalatedTo and the
        # table's own sort key: both native (an index key attribute of S holds text)
        "DeviceState": Want("d#{device_id}", "{state}#{date}",
                            {"GSI1": ("=Operator", "=Date"),
                             "GSI2": ("=EscalatedTo", "=State#Date")},
                            {"Operator": "string", "Date": "string", "State": "string",
                             "EscalatedTo": "string"}),
    },
    "chat_system": {
        "Comment": Want("User:{user_id}", "{posted_at}",
                        {"RoomID_Comment_IDX": ("=RoomID", "=CreatedAt")},
                        {"RoomID": "string", "Comment": "string", "CreatedAt": "datetime"}),
        "Room": Want("Room:{room_id}", "meta", {}, {"CreatedBy": "string"}),
    },
    "complaint_management": {
        "Complaint": Want("{complaint_id}", "metadata",
                          {"Customer_Complaint_GSI": ("=customer_id", "=complaint_id"),
                           "Escalations_GSI": ("=escalated_to", "=escalation_time")},
                          {"customer_id": "string", "complaint_id": "string",
                           "current_state": "string", "creation_time": "datetime",
                           "severity": "string", "complaint_description": "string",
                           "escalated_to": "string", "escalation_time": "datetime"}),
        "Communication": Want("{complaint_id}", "comm#{comm_date}#{comm_id}",
                              {"Agents_Comments_GSI": ("=agentID", "=comm_date")},
                              {"comm_id": "string", "comm_date": "string",
                               "complaint_state": "string", "comm_text": "string",
                               "agentID": "string", "attachments": "set"}),
    },
    "session_management": {
        # GSI1_inverse: the table's keys inverted (its pk the SK attribute)
        "ChildSession": Want("suuid#{session_id}", "child#suuid#{child_id}",
                             {"GSI1_inverse": ("child#suuid#{child_id}", "suuid#{session_id}")},
                             {"access_token": "string", "session_state": "string"}),
        "CustomerSession": Want("suuid#{session_id}", "c#{customer_id}",
                                {"GSI1_inverse": ("c#{customer_id}", "suuid#{session_id}")},
                                {"last_login_time": "datetime", "access_token": "string",
                                 "session_state": "string"}),
    },
    "social_network": {
        "UserInfo": Want("u#{user_id}", '"info"', {},
                         {"name": "string", "content": "string", "imageUrl": "string"}),
        "UserCount": Want("u#{user_id}", '"count"', {},
                          {"follower#": "integer", "following#": "integer",
                           "post#": "integer"}),
        "Follower": Want("u#{user_id}#follower", "u#{follower_id}", {}, {}),
        "Following": Want("u#{user_id}#following", "u#{followed_id}", {}, {}),
        # (timestamp holds epoch seconds as text: StoredAs writes numbers, so text it stays)
        "Post": Want("u#{user_id}#post", "p#{post_id}", {},
                     {"content": "string", "imageUrl": "string", "timestamp": "string"}),
        "Like": Want("p#{post_id}#likelist", "u#{user_id}", {}, {}),
        "LikeCount": Want("p#{post_id}#likecount", '"count"', {}, {}),
        "TimelineEntry": Want("u#{user_id}#timeline", "p#{post_id}#u#{author_id}", {},
                              {"ttl": "datetime"}),
    },
    "electrodb_tasks": {
        "tasks": Want("$taskapp#team_{team}", "$tasks_1#project_{project}#task_{task}", {},
                      {"status": "string", "points": "integer", "updatedAt": "datetime",
                       "comments": "list", "tags": "set"}),
    },
    "recurring_payments": {  # (its README: an account's subscriptions and receipts)
        "Subscription": Want("ACC#{account_id}", "SUB#{sub_id}#SKU#{sku}",
                             {"GSI-1": ("=NextReminderDate", "=LastReminderDate"),
                              "GSI-2": ("=NextPaymentDate", "=LastPaymentDate")},
                             {"Email": "string", "PaymentDay": "string",
                              "PaymentAmount": "string", "SKU": "string",
                              "PaymentDetails": "map", "CreatedDate": "datetime",
                              "NextPaymentDate": "string", "LastPaymentDate": "datetime",
                              "NextReminderDate": "string", "LastReminderDate": "datetime"}),
        "Receipt": Want("ACC#{account_id}", "REC#{processed}#SKU#{sku}", {},
                        {"Email": "string", "SKU": "string", "ProcessedDate": "datetime",
                         "ProcessedAmount": "string", "TTL": "datetime"}),
    },
    "meetinger": {  # (its README: users, meetings and their attendees; GSI1 and GSI2)
        "User": Want("USER#{username}", "META", {"GSI1": ("USER#{email}", "META")},
                     {"JoinedOn": "datetime", "FullName": "string", "Version": "string"}),
        "Meeting": Want("{meeting_id}", "META",
                        {"GSI1": ("{place}#{month}#Meetings", "{category}#{starts}"),
                         "GSI2": ("{organizer}#MEETINGS", "{starts}")},
                        {"Title": "string", "AvailableSeats": "integer",
                         "Description": "string", "Attendees": "set",
                         "RemainingSeats": "integer", "Version": "string",
                         "Address": "string"}),
        "Attendee": Want("{meeting_id}#ATTENDEES", "{username}",
                         {"GSI1": ("{username}#MEETINGS", "{starts}"),
                          "GSI2": ("{meeting_id}", "{joined}")},
                         {"Title": "string", "FullName": "string", "Version": "string",
                          "Email": "string", "IsOrganizer": "boolean"}),
    },
    # ElectroDB's task-manager example as ElectroDB 3 writes it: its keys lower-cased,
    # each template's entity and version a literal (office_1), its collections' literals
    "electrodb_task_manager": {
        "Office": Want("$task-manager#country_{country}#state_{state}",
                       "$office_1#city_{city}#zip_{zip}#officename_{office}",
                       {"gsi1pk-gsi1sk-index": ("$task-manager#officename_{office}",
                                                "$workplaces#office_1")},
                       {"officeName": "string", "country": "string", "state": "string",
                        "city": "string", "zip": "string", "address": "string"}),
        "employee": Want(
            "$task-manager#employee_{employee}", "$employee_1",
            {"gsi1pk-gsi1sk-index": ("$task-manager#officename_{office}",
                                     "$workplaces#employee_1#team_{team}#title_{title}"
                                     "#employee_{employee}"),
             "gsi2pk-gsi2sk-index": ("$task-manager#team_{team}",
                                     "$employee_1#datehired_{hired}#title_{title}"),
             "gsi3pk-gsi3sk-index": ("$task-manager#employee_{employee}",
                                     "$assignments#employee_1"),
             "gsi4pk-gsi4sk-index": ("$task-manager#title_{title}",
                                     "$employee_1#salary_{salary}"),
             "gsi5pk-gsi5sk-index": ("$task-manager#manager_{manager}",
                                     "$employee_1#team_{team}#officename_{office}")},
            {"firstName": "string", "lastName": "string", "officeName": "string",
             "title": "string", "team": "string", "salary": "string", "manager": "string",
             "dateHired": "string", "birthday": "date"}),
        "task": Want(
            "$task-manager#taskname_{task}", "$task_1#project_{project}#employee_{employee}",
            {"gsi1pk-gsi1sk-index": ("$task-manager#project_{project}",
                                     "$task_1#employee_{employee}#status_{status}"),
             "gsi3pk-gsi3sk-index": ("$task-manager#employee_{employee}",
                                     "$assignments#task_1#project_{project}#status_{status}"),
             "gsi4pk-gsi4sk-index": ("$task-manager#status_{status}",
                                     "$task_1#project_{project}#employee_{employee}")},
            {"description": "string", "status": "string", "points": "integer"}),
    },
    "toolbox_pokemons": {  # (DynamoDB-Toolbox's _ct and _md: its created/modified times)
        "pokemon": Want("{pokemon_id}", None,
                        {"byTrainerId": ("=trainerId", "=captureDate")},
                        {"customName": "string", "species": "string", "level": "integer",
                         "isLegendary": "boolean", "pokeTypes": "set", "evolutions": "list",
                         "resistances": "map", "captureState": "map",
                         "trainerId": "string", "captureDate": "datetime",
                         "_ct": "datetime", "_md": "datetime"}),
    },
}


def load(name: str) -> dict[str, Any]:
    """The Workbench table of design ``name`` (keys, indexes, ``TableData``)."""
    doc: dict[str, Any] = json.loads((DATA / f"{name}.json").read_text(encoding="utf-8"))
    table: dict[str, Any] = doc["DataModel"][0]
    if "TableData" not in table:  # (a model of facets: each facet's items, in order)
        table = {**table, "TableData": [i for f in table.get("TableFacets", ())
                                        for i in f.get("TableData", ())]}
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


@dataclass
class Score:
    """A design's score: entities found with their table key templates (by structure),
    their indexes found (a template index by its templates, a native one by its keys and
    the entity's fields stored as them) and their fields typed as the design's, each as
    (hit, of how many), and what was missed (``entity``, ``entity.index``,
    ``entity.attribute``)."""

    entities: tuple[int, int]
    indexes: tuple[int, int]
    fields: tuple[int, int]
    missed: list[str]


def _kind(desc: Mapping[str, Any]) -> str:
    return "map" if desc["type"] in ("object", "map") else str(desc["type"])


def _index_hit(want: Want, name: str, entity: Mapping[str, Any],
               table: Mapping[str, Any]) -> bool:
    ipk, isk = want.indexes[name]
    if ipk.startswith("="):
        attrs = [a[1:] for a in (ipk, isk) if a]
        native = {i["name"]: i for i in table["indexes"] if i.get("native")}
        stored = {f["stored"] for f in entity["fields"]} | {table["pk"], table["sk"]}
        index = native.get(name)
        return (index is not None and [*index["pk"], *index["sk"]] == attrs
                and all(a in stored for a in attrs))
    found = {i["name"]: i for i in entity["indexes"]}.get(name)
    return found is not None and structure([entity["pk"], entity["sk"], found["pk"],
                                            found["sk"]]) == structure(
        [want.pk, want.sk, ipk, isk])


def score(design: str, model: Mapping[str, Any]) -> Score:
    """How the inferred ``model`` scores on design ``design`` (:data:`EXPECTED`): each
    expected entity matched by one inferred entity at most, by its table key templates'
    structure; the indexes and fields of an entity none matches are missed too."""
    left = list(model["entities"])
    counts = {"entities": [0, 0], "indexes": [0, 0], "fields": [0, 0]}
    missed: list[str] = []
    for name, want in EXPECTED[design].items():
        shape = structure([want.pk, want.sk])
        entity = next((e for e in left if structure([e["pk"], e["sk"]]) == shape), None)
        counts["entities"][1] += 1
        counts["indexes"][1] += len(want.indexes)
        counts["fields"][1] += len(want.fields)
        if entity is None:
            missed.append(name)
            continue
        left.remove(entity)
        counts["entities"][0] += 1
        for index in want.indexes:
            if _index_hit(want, index, entity, model["table"]):
                counts["indexes"][0] += 1
            else:
                missed.append(f"{name}.{index}")
        types = {f["stored"]: _kind(f) for f in entity["fields"]}
        for attr, kind in want.fields.items():
            if types.get(attr) == kind:
                counts["fields"][0] += 1
            else:
                missed.append(f"{name}.{attr} ({types.get(attr)}, not {kind})")
    return Score(*(tuple(counts[k]) for k in ("entities", "indexes", "fields")),  # type: ignore[arg-type]
                 missed)


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
