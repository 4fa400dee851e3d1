"""Streams (contract 15): ``table.changes(records)`` classifies DynamoDB Streams records.

The tests feed hand-written Lambda-shaped events (binary as base64, times as epoch
numbers). No I/O: a real stream read back from the engines is in
tests/integration/test_streams.py.
"""

from __future__ import annotations

import base64
import importlib
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from dynaorm import Change, DynaormError, InvalidValueError, ItemDecodeError, Table
from tests.support.stream_models import Blob, Doc, Person, stream_app

ARN = ("arn:aws:dynamodb:us-east-1:123456789012:table/dynaorm-streams/stream/"
       "2024-01-01T00:00:00.000")


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def lambda_record(name: str, keys: dict[str, Any], new: dict[str, Any] | None = None,
                  old: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    """A record as Lambda delivers it (JSON: binary base64, time as epoch seconds)."""
    data: dict[str, Any] = {"ApproximateCreationDateTime": 1700000000, "Keys": keys,
                            "SequenceNumber": "111", "SizeBytes": 26,
                            "StreamViewType": "NEW_AND_OLD_IMAGES"}
    if new is not None:
        data["NewImage"] = new
    if old is not None:
        data["OldImage"] = old
    return {"eventID": "e1", "eventName": name, "eventVersion": "1.1",
            "eventSource": "aws:dynamodb", "awsRegion": "us-east-1", "dynamodb": data,
            "eventSourceARN": ARN, **extra}


PKEY = {"pk": {"S": "PERSON#p1"}, "sk": {"S": "PROFILE"}}
PERSON = {**PKEY, "_type": {"S": "Person"}, "person_id": {"S": "p1"},
          "org_id": {"S": "acme"}, "email": {"S": "Ann@x.com"}, "status": {"S": "new"}}


def one(records: Any) -> Change:
    (change,) = list(stream_app.changes(records))
    return change


def test_insert_modify_remove_of_a_row() -> None:
    ins = one([lambda_record("INSERT", PKEY, new=PERSON)])
    assert (ins.kind, ins.entity, ins.role, ins.old) == ("insert", Person, "row", None)
    assert ins.new == Person(person_id="p1", email="Ann@x.com")
    assert ins.key == {"pk": "PERSON#p1", "sk": "PROFILE"}
    assert ins.time == datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    assert (ins.sequence_number, ins.event_id, ins.field, ins.version) == ("111", "e1",
                                                                           None, None)
    done = {**PERSON, "status": {"S": "done"}}
    mod = one([lambda_record("MODIFY", PKEY, new=done, old=PERSON)])
    assert mod.kind == "modify"
    assert mod.old is not None and mod.new is not None
    assert (mod.old.status, mod.new.status) == ("new", "done")  # type: ignore[attr-defined]
    rem = one([lambda_record("REMOVE", PKEY, old=done)])
    assert (rem.kind, rem.new, rem.expired) == ("remove", None, False)
    assert rem.old == Person(person_id="p1", email="Ann@x.com", status="done")


def test_guard_items_are_classified_with_owner_and_field() -> None:
    key = {"pk": {"S": "email#ann@x.com"}, "sk": {"S": "email#ann@x.com"}}
    guard = {**key, "_type": {"S": "dynaorm:unique"}, "owner_pk": {"S": "PERSON#p1"},
             "owner_sk": {"S": "PROFILE"}, "owner_type": {"S": "Person"},
             "unique_field": {"S": "email"}}
    change = one([lambda_record("INSERT", key, new=guard)])
    assert (change.kind, change.entity, change.role, change.field) == (
        "insert", Person, "guard", "email")
    assert (change.old, change.new) == (None, None)
    assert change.new_item == guard


def test_latest_copy_and_version_rows() -> None:
    def doc(sk: str, version: int) -> dict[str, Any]:
        return {"pk": {"S": "DOC#d1"}, "sk": {"S": sk}, "_type": {"S": "Doc"},
                "doc_id": {"S": "d1"}, "part": {"S": "intro"}, "body": {"S": f"b{version}"},
                "version": {"N": str(version)}}

    latest = one([lambda_record("MODIFY", {}, new=doc("v0_intro", 2), old=doc("v0_intro", 1))])
    assert (latest.entity, latest.role, latest.version) == (Doc, "latest", 0)
    assert latest.new == Doc(doc_id="d1", part="intro", body="b2", version=2)
    assert latest.key == {"pk": "DOC#d1", "sk": "v0_intro"}  # from the image: no Keys
    row = one([lambda_record("INSERT", {}, new=doc("v00000002_intro", 2))])
    assert (row.entity, row.role, row.version) == (Doc, "version", 2)
    assert row.new == Doc(doc_id="d1", part="intro", body="b2", version=2)


def test_items_no_entity_owns() -> None:
    foreign = {"pk": {"S": "X#1"}, "sk": {"S": "Y"}, "_type": {"S": "Elsewhere"}}
    untyped = {"pk": {"S": "X#1"}, "sk": {"S": "Y"}, "n": {"N": "1"}}
    for image in (foreign, untyped):
        change = one([lambda_record("INSERT", {}, new=image)])
        assert (change.entity, change.role, change.old, change.new) == (None, "row", None, None)
        assert change.new_item == image


def test_keys_only_records_are_matched_by_key_shape() -> None:
    row = one([lambda_record("REMOVE", PKEY)])
    assert (row.entity, row.role, row.old, row.new) == (Person, "row", None, None)
    email = {"pk": {"S": "email#a@x.com"}, "sk": {"S": "email#a@x.com"}}
    assert (one([lambda_record("INSERT", email)]).role,
            one([lambda_record("INSERT", email)]).field) == ("guard", "email")
    scoped = {"pk": {"S": "ORG#acme#nick#ann"}, "sk": {"S": "ORG#acme#nick#ann"}}
    got = one([lambda_record("INSERT", scoped)])
    assert (got.entity, got.role, got.field) == (Person, "guard", "nick")
    version = one([lambda_record("INSERT", {"pk": {"S": "DOC#d1"},
                                            "sk": {"S": "v00000007_intro"}})])
    assert (version.entity, version.role, version.version) == (Doc, "version", 7)
    other = one([lambda_record("INSERT", {"pk": {"S": "NOPE#1"}, "sk": {"S": "x"}})])
    assert (other.entity, other.role) == (None, "row")


def test_binary_sets_numbers_and_nesting_in_both_shapes() -> None:
    raw = {"pk": {"S": "BLOB#b1"}, "sk": {"S": "BLOB"}, "_type": {"S": "Blob"},
           "blob_id": {"S": "b1"}}
    lam = {**raw, "data": {"B": b64(b"\x00\xffbin")},
           "chunks": {"BS": [b64(b"a"), b64(b"\x01")]}, "tags": {"SS": ["x", "y"]},
           "sizes": {"NS": ["1", "20"]}, "ratio": {"N": "0.25"},
           "meta": {"M": {"raw": {"B": b64(b"deep")}, "n": {"N": "3"},
                          "inner": {"M": {"ok": {"BOOL": True}, "none": {"NULL": True}}}}},
           "history": {"L": [{"S": "a"}, {"N": "1.5"}, {"L": [{"B": b64(b"z")}]}]}}
    boto = {**raw, "data": {"B": b"\x00\xffbin"}, "chunks": {"BS": [b"a", b"\x01"]},
            "tags": {"SS": ["x", "y"]}, "sizes": {"NS": ["1", "20"]}, "ratio": {"N": "0.25"},
            "meta": {"M": {"raw": {"B": b"deep"}, "n": {"N": "3"},
                           "inner": {"M": {"ok": {"BOOL": True}, "none": {"NULL": True}}}}},
            "history": {"L": [{"S": "a"}, {"N": "1.5"}, {"L": [{"B": b"z"}]}]}}
    from_lambda = one({"Records": [lambda_record("INSERT", {}, new=lam)]})
    record = lambda_record("INSERT", {}, new=boto)
    del record["eventSourceARN"]  # GetRecords records carry no ARN
    record["dynamodb"]["ApproximateCreationDateTime"] = datetime(2023, 11, 14, 22, 13, 20,
                                                                 tzinfo=UTC)
    from_boto = one({"Records": [record]})
    expected = Blob(blob_id="b1", data=b"\x00\xffbin", chunks={b"a", b"\x01"},
                    tags={"x", "y"}, sizes={1, 20}, ratio=Decimal("0.25"),
                    meta={"raw": b"deep", "n": 3, "inner": {"ok": True, "none": None}},
                    history=["a", Decimal("1.5"), [b"z"]])
    assert from_lambda.new == expected and from_boto.new == expected
    assert from_lambda.new_item == from_boto.new_item
    assert from_lambda.time == from_boto.time


def test_ttl_removal_is_marked_expired() -> None:
    identity = {"type": "Service", "principalId": "dynamodb.amazonaws.com"}
    change = one([lambda_record("REMOVE", PKEY, old=PERSON, userIdentity=identity)])
    assert change.expired and change.kind == "remove"


def test_bad_records_raise_typed_errors() -> None:
    with pytest.raises(DynaormError, match="unknown eventName 'UPSERT'"):
        one([lambda_record("UPSERT", PKEY, new=PERSON)])
    other = lambda_record("INSERT", PKEY, new=PERSON,
                          eventSourceARN=ARN.replace("dynaorm-streams", "other-table"))
    with pytest.raises(DynaormError, match="comes from table 'other-table'"):
        one([other])
    bad_b64 = {**PERSON, "photo": {"B": "not base64!"}}
    with pytest.raises(InvalidValueError, match=r"'photo'.*not base64"):
        one([lambda_record("INSERT", PKEY, new=bad_b64)])
    invalid = {k: v for k, v in PERSON.items() if k != "email"}
    change = one([lambda_record("INSERT", PKEY, new=invalid)])  # decoded when read
    assert (change.entity, change.old) == (Person, None)
    with pytest.raises(ItemDecodeError, match=r"stream record e1: the Person image"):
        _ = change.new
    with pytest.raises(DynaormError, match="mapping with 'Records'"):
        one({"records": []})


def test_definition_carries_the_stream() -> None:
    assert stream_app.definition()["StreamSpecification"] == {
        "StreamEnabled": True, "StreamViewType": "NEW_AND_OLD_IMAGES"}
    assert "StreamSpecification" not in Table("dynaorm-plain").definition()


# -- the aggregation example's consumer logic (no update needed) -----------------------------
def test_aggregate_consumer_deltas(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(Path(__file__).resolve().parents[2] / "examples"))
    agg = importlib.import_module("stream_aggregate")
    table: Table = agg.shop

    def rec(name: str, new: str | None, old: str | None, type_name: str = "Order",
            total: int = 1) -> dict[str, Any]:
        def image(status: str) -> dict[str, Any]:
            if type_name == "StatusCount":
                return {"pk": {"S": "STATS"}, "sk": {"S": f"STATUS#{status}"},
                        "_type": {"S": type_name}, "status": {"S": status},
                        "count": {"N": "3"}}
            return {"pk": {"S": "ORDER#o1"}, "sk": {"S": "ORDER"}, "_type": {"S": type_name},
                    "order_id": {"S": "o1"}, "status": {"S": status},
                    "total": {"N": str(total)}}
        data: dict[str, Any] = {"Keys": {}}
        if new is not None:
            data["NewImage"] = image(new)
        if old is not None:
            data["OldImage"] = image(old)
        return {"eventID": "x", "eventName": name, "dynamodb": data}

    records = [
        rec("INSERT", "open", None), rec("INSERT", "open", None),
        rec("MODIFY", "shipped", "open"),
        rec("MODIFY", "open", "open", total=5),              # status unchanged
        rec("REMOVE", None, "shipped"),
        rec("MODIFY", "open", "open", type_name="StatusCount"),  # the consumer's own write
        rec("INSERT", "zzz", None, type_name="Other"),           # an item no entity owns
    ]
    assert dict(agg.deltas(table.changes(records))) == {"open": 1, "shipped": 0}


def test_a_row_of_a_previous_layout_is_a_change_of_its_entity() -> None:
    """(0.6, the rule matrix) A record of a row stored in an entity's previous layout
    (its retired type name, old key, old stored names) was an item no entity owns; it is
    a change of the entity, its image read as the current class reads it."""
    from dynaorm.schema.entity import encode_entity, spec_of
    from tests.support.migration_models import Account, Ledger, OldAccount, OldLedger, mig

    row = encode_entity(OldAccount(id="a1", mail="ann@x.io", name="Ann"), spec_of(OldAccount))
    version = encode_entity(OldLedger(id="l1", code="C1", balance=5), spec_of(OldLedger), 2)
    version["sk"] = {"S": "v00000002_LEDGER"}
    changes = list(mig.changes([
        {"eventName": "INSERT", "dynamodb": {"Keys": {a: i[a] for a in ("pk", "sk")},
                                             "NewImage": i}} for i in (row, version)]))
    assert [(c.entity, c.role, c.version) for c in changes] == [
        (Account, "row", None), (Ledger, "version", 2)]
    assert changes[0].new == Account(id="a1", email="ann@x.io", name="Ann")
    assert changes[1].new == Ledger(id="l1", code="C1", balance=5, version=2)



def test_a_rules_rows_are_told_from_its_rows_hook_after_every_entitys_own() -> None:
    """On a table without a type attribute, a rule's row is told by the key shapes its
    ``rows`` hook renders for a described write (``table.model()``'s row kinds): a
    sibling row under the entity's own partition with a sort key every write renders
    alike (``COUNTER``) must fit both; the entity's own rows stay the entity's, and an
    item fitting neither stays nobody's."""
    from dynaorm import Entity, Rule, register_rule
    from dynaorm.rules import Fail, Put, Role, Rows
    from dynaorm.schema.rules import RULES
    from dynaorm.schema.streams import classify

    class Counted(Rule):
        __slots__ = ()
        name = "tests-counted"
        options = ("counted",)
        order = 90
        transforms = False

        @classmethod
        def build(cls, decl: Any) -> Counted | None:
            return cls() if decl.meta.get("counted") else None

        def rows(self, change: Any) -> Any:
            key = change.new_key or change.old_key
            at = {"pk": key["pk"], "sk": "COUNTER"}
            return Rows(after=(Put(at, {a: {"S": v} for a, v in at.items()}, None,
                                   change.origin(Role.ROW, Fail.CALLER, owner=at)),))

    flat = Table("dynaorm-streams-rule-rows", type_attribute=None)
    register_rule(Counted)
    try:
        class Tally(Entity):
            class Meta:
                table = flat
                pk = "TALLY#{tally_id}"
                sk = "TALLY"
                counted = True

            tally_id: str
    finally:
        RULES.pop(Counted.name, None)

    def kind(pk: str, sk: str) -> tuple[Any, str, Any]:
        cls, role, _, name = classify(flat, {"pk": {"S": pk}, "sk": {"S": sk}})
        return cls, role, name

    assert kind("TALLY#1", "TALLY") == (Tally, "row", None)
    assert kind("TALLY#1", "COUNTER") == (Tally, "rule", "tests-counted")
    assert kind("TALLY#1", "OTHER") == (None, "row", None)
    assert kind("ELSE#1", "COUNTER") == (None, "row", None)
    record = lambda_record("INSERT", {"pk": {"S": "TALLY#2"}, "sk": {"S": "COUNTER"}})
    (change,) = flat.changes([{**record, "eventSourceARN": None}])
    assert (change.entity, change.role, change.rule, change.new) == (
        Tally, "rule", "tests-counted", None)
