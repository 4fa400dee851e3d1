"""Values DynamoDB would refuse are refused before sending, at DynamoDB's exact boundary.

The pure rules (dynaorm.values.limits) get unit tests; the boundaries are then checked on the
backends: just inside is stored and reads back equal, just outside raises the typed error
with entity, field and key named, no request is sent and the table is unchanged.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any

import pytest

from dynaorm import (
    Entity,
    F,
    InvalidValueError,
    ItemTooLargeError,
    KeyTemplateError,
    Session,
)
from dynaorm.errors import RequestError as RequestFailed
from dynaorm.testing import TestBackend
from dynaorm.values.limits import (
    MAX_NESTING,
    item_size,
    number_problem,
    number_size,
    updated_item,
    value_problem,
    value_size,
)
from tests.conftest import engine_of
from tests.support.models import app
from tests.support.recording import Requests, send

#: (what it asserts depends on the engine: it runs on each)
pytestmark = pytest.mark.engines("moto", "local", "dynoxide")

LONE = json.loads('"\\ud800"')  # a lone surrogate, as JSON from a client can carry


class VDoc(Entity):
    """A document whose sort key is one field verbatim, with a GSI key from another."""

    class Meta:
        table = app
        type_name = "LimitVDoc"  # test_versions has a VDoc on this table too
        pk = "VD#{doc}"
        sk = "{part}"
        indexes = {"gsi1": ("VG#{group}", "{rank}")}

    doc: str
    part: str = "p"
    group: str = "g"
    rank: str = "r"
    data: Any = None
    num: Decimal | None = None
    text: str = ""


def nested(levels: int, inner: Any = "x") -> Any:
    value = inner
    for _ in range(levels):
        value = {"a": value}
    return value


# -- pure rules -----------------------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "1" * 38, "-" + "1" * 38, "1" * 38 + "0" * 50, "0." + "0" * 40 + "1" * 38, "9.99E+125",
    "9.9999999999999999999999999999999999999E+125", "1E-130", "-1E-130", "-9.99E+125",
    "0", "0.0", "-0", "1.00000000000000000000000000000000000000000"])
def test_numbers_dynamodb_stores(text: str) -> None:
    assert number_problem(text) is None


@pytest.mark.parametrize("text", [
    "1" * 39, "1." + "1" * 38, "1E+126", "-1E+126", "1E-131", "-1E-131", "9.99E-131",
    "NaN", "Infinity", "", "1e", " 1"])
def test_numbers_dynamodb_refuses(text: str) -> None:
    assert number_problem(text) is not None


# measured on DynamoDB Local: bytes each number adds to an item's size
@pytest.mark.parametrize(("text", "size"), [
    ("1.1", 3), ("11", 2), ("0.1", 2), ("0.11", 2), ("1.11", 3), ("10.1", 3), ("123.4", 4),
    ("100", 2), ("1000", 2), ("10", 2), ("0.01", 2), ("0.001", 2), ("12.34", 3), ("-1", 3),
    ("-12", 3), ("-1.1", 4), ("1E+125", 2), ("1.5E-130", 3), ("99", 2), ("999", 3),
    ("9999", 3), ("99999", 4), ("12345.6789", 6), ("1234.56789", 6), ("0.123", 3),
    ("0.0123", 3), ("1" * 38, 20), ("-" + "1" * 38, 21), ("1E100", 2),
    ("0", 1), ("-0", 1), ("0.0", 1), ("0E+5", 1), ("000", 1)])
def test_number_size_matches_dynamodb(text: str, size: int) -> None:
    assert number_size(text) == size


def test_sizes_of_documents_match_dynamodb() -> None:
    # measured on DynamoDB Local: a map of one entry adds 3 + 1, a list 3 + 1 per member
    assert value_size({"M": {"k": {"S": "abc"}}}) == 3 + 1 + 1 + 3
    assert value_size({"L": [{"S": "abc"}, {"S": "b"}]}) == 3 + 2 + 4
    assert value_size({"SS": ["ab", "c"]}) == 3
    assert item_size({"pk": {"S": "é"}, "v": {"BOOL": True}}) == 2 + 2 + 1 + 1


def test_nesting_limit_is_dynamodbs() -> None:
    from dynaorm.values.codec import encode_value
    assert value_problem(encode_value(nested(MAX_NESTING))) is None  # 31 maps, a string in
    assert value_problem(encode_value(nested(MAX_NESTING - 1, {}))) is None
    assert value_problem(encode_value(nested(MAX_NESTING, None))) is None
    assert value_problem(encode_value(nested(MAX_NESTING, {"s"}))) is None
    found = value_problem(encode_value(nested(MAX_NESTING + 1)))
    assert found is not None and "nested" in found[1]
    found = value_problem(encode_value(nested(MAX_NESTING, [])))  # an empty 32nd level too
    assert found is not None
    deep: dict[str, Any] = {"L": []}
    for _ in range(100_000):  # any depth is answered without recursion
        deep = {"L": [deep]}
    assert value_problem(deep) is not None
    assert value_size(deep) > 0


def test_strings_names_and_sets() -> None:
    assert value_problem({"S": "ok é 𝄞"}) is None
    assert value_problem({"S": "a" + LONE}) is not None
    assert value_problem({"M": {"": {"S": "x"}}}) is not None
    assert value_problem({"M": {LONE: {"S": "x"}}}) is not None
    assert value_problem({"SS": ["a", LONE]}) is not None
    assert value_problem({"NS": ["1", "1E+200"]}) is not None
    found = value_problem({"L": [{"M": {"n": {"N": "1" * 39}}}]})
    assert found is not None and found[0] == "[0].n" and "38" in found[1]


def test_updated_item_applies_each_clause() -> None:
    known: dict[str, Any] = {"pk": {"S": "k"}, "n": {"N": "5"}, "l": {"L": [{"S": "a"}]},
             "s": {"SS": ["x", "y"]}, "gone": {"S": "z"}}
    after = updated_item(known, {}, (), (
        ("ADD", "n", {"N": "2.5"}), ("APPEND", "l", {"L": [{"S": "b"}]}),
        ("PREPEND", "l", {"L": [{"S": "0"}]}), ("DELETE", "s", {"SS": ["x", "y"]}),
        ("REMOVE", "gone", None), ("DEFAULT", "d", {"S": "new"}),
        ("DEFAULT", "n", {"N": "100"}), ("ADD", "t", {"SS": ["q"]})))
    assert after == {"pk": {"S": "k"}, "n": {"N": "7.5"},
                     "l": {"L": [{"S": "0"}, {"S": "a"}, {"S": "b"}]},
                     "d": {"S": "new"}, "t": {"SS": ["q"]}}


# -- on the backends: the gate every write passes --------------------------------------------
@pytest.fixture
def s(db: TestBackend) -> Session:
    return db.session()


def refused(db: TestBackend, error: type[Exception], action: Callable[[], Any],
            *words: str) -> str:
    """``action`` raises ``error`` naming ``words``, sends nothing, changes nothing."""
    before = db.scan_raw()
    rec = Requests(db.table)
    with pytest.raises(error) as info:
        action()
    assert rec.calls == [], f"sent {[op for op, _ in rec.calls]}"
    message = str(info.value)
    for word in words:
        assert word in message
    assert len(message) < 1000  # long values are cut short in messages
    assert db.scan_raw() == before
    return message


def commit(s: Session, *objs: Entity) -> Callable[[], Any]:
    def run() -> Any:
        for obj in objs:
            s.save(obj)
        return s.commit()
    return run


def stored(s: Session, obj: VDoc) -> VDoc:
    s.save(obj)
    s.commit()
    got = s.get(VDoc, doc=obj.doc, part=obj.part)
    assert got is not None and got == obj
    return got


def test_key_sizes_at_dynamodbs_limits(db: TestBackend, s: Session) -> None:
    stored(s, VDoc(doc="a" * 2045, part="b" * 1024))  # "VD#" + 2045 = 2048 bytes
    stored(s, VDoc(doc="é" * 1022 + "x", part="ü" * 512))  # bytes, not characters
    stored(s, VDoc(doc="gsi", group="g" * 2045, rank="r" * 1024))
    refused(db, KeyTemplateError, commit(s, VDoc(doc="a" * 2046)), "VDoc", "'pk'", "2049")
    refused(db, KeyTemplateError, commit(s, VDoc(doc="x", part="b" * 1025)), "'sk'", "1025")
    refused(db, KeyTemplateError, commit(s, VDoc(doc="x", part="é" * 513)), "'sk'")
    refused(db, KeyTemplateError, commit(s, VDoc(doc="x", group="g" * 2046)), "gsi1pk")
    refused(db, KeyTemplateError, commit(s, VDoc(doc="x", rank="r" * 1025)), "gsi1sk")
    refused(db, KeyTemplateError, commit(s, VDoc(doc="x", part="")), "VDoc", "empty")
    # in a transaction with a valid item: nothing of either is sent
    refused(db, KeyTemplateError, commit(s, VDoc(doc="ok"), VDoc(doc="y", part="b" * 1025)))
    refused(db, KeyTemplateError, lambda: s.save_many([VDoc(doc="ok"), VDoc(doc="a" * 2046)]))
    refused(db, KeyTemplateError, lambda: s.delete_many(VDoc, [{"doc": "a" * 2046,
                                                                "part": "p"}]))


def test_a_key_read_by_get_is_checked(db: TestBackend, s: Session) -> None:
    refused(db, KeyTemplateError, lambda: s.get(VDoc, doc="a" * 2046, part="p"), "'pk'")
    refused(db, KeyTemplateError, lambda: s.get(VDoc, doc="x", part=LONE), "'sk'")
    assert s.get(VDoc, doc="a" * 2045, part="b" * 1024) is None


def test_guard_keys_are_checked_too(db: TestBackend, s: Session) -> None:
    from tests.support.models import User
    refused(db, KeyTemplateError, commit(s, User(username="u", email="e" * 2100 + "@x")),
            "User")


def test_lone_surrogates_are_refused_everywhere(db: TestBackend, s: Session) -> None:
    refused(db, InvalidValueError, commit(s, VDoc(doc="x", text="a" + LONE)),
            "VDoc", "'text'", "UTF-8")
    refused(db, InvalidValueError, commit(s, VDoc(doc="x", data={"k": ["ok", LONE]})),
            "'data'", "k[1]")
    refused(db, InvalidValueError, commit(s, VDoc(doc="x", data={LONE: 1})), "'data'")
    refused(db, KeyTemplateError, commit(s, VDoc(doc=LONE)), "'pk'")
    stored(s, VDoc(doc="u", text="é 𝄞 \x00 end"))

    def update() -> None:
        s.update(VDoc, doc="u", part="p").set(text=LONE)
        s.commit()
    refused(db, InvalidValueError, update, "VDoc", "text")

    def check() -> None:
        s.check(VDoc, doc="u", part="p", condition=F("text") == LONE)
        s.save(VDoc(doc="v"))
        s.commit()
    refused(db, InvalidValueError, check, "VDoc", "condition")
    refused(db, InvalidValueError, lambda: s.save_many([VDoc(doc="y", text=LONE)]), "text")


def test_nesting_at_dynamodbs_limit(db: TestBackend, s: Session) -> None:
    stored(s, VDoc(doc="d31", data=nested(MAX_NESTING)))
    stored(s, VDoc(doc="l31", data=[nested(MAX_NESTING - 1, None)]))
    refused(db, InvalidValueError, commit(s, VDoc(doc="d32", data=nested(MAX_NESTING + 1))),
            "VDoc", "'data'", "nested")
    refused(db, InvalidValueError, commit(s, VDoc(doc="d600", data=nested(600))), "nested")
    refused(db, InvalidValueError, commit(s, VDoc(doc="d5000", data=nested(5000))), "nested")
    refused(db, InvalidValueError, lambda: s.save_many([VDoc(doc="d", data=nested(40))]))


@pytest.mark.parametrize("text", ["1" * 38, "9.99E+125", "9.9999E+125", "1E-130", "-1E-130",
                                  "-9.99E+125", "0", "1" * 38 + "0" * 20])
def test_numbers_inside_the_range_are_stored(s: Session, text: str) -> None:
    got = stored(s, VDoc(doc="n", num=Decimal(text), data={"n": Decimal(text)}))
    assert got.num == Decimal(text)


@pytest.mark.parametrize("text", ["1" * 39, "1E+126", "-1E+126", "1E-131", "-1E-131"])
def test_numbers_outside_the_range_are_refused(db: TestBackend, s: Session, text: str) -> None:
    refused(db, InvalidValueError, commit(s, VDoc(doc="n", num=Decimal(text))),
            "VDoc", "'num'", "number")
    refused(db, InvalidValueError, commit(s, VDoc(doc="n", data=[1, {"x": Decimal(text)}])),
            "'data'", "[1].x")


def test_empty_attribute_names_are_refused(db: TestBackend, s: Session) -> None:
    refused(db, InvalidValueError, commit(s, VDoc(doc="e", data={"": 1})), "'data'", "empty")
    refused(db, InvalidValueError, commit(s, VDoc(doc="e", data=[{"a": {"": 1}}])), "empty")
    stored(s, VDoc(doc="e", data={" ": "", "a": {"b": ""}}))  # empty values are fine


#: (0.5) what a row holds besides its values: the revision every dynaorm write stamps
REVISION_BYTES = 20
ITEM_LIMIT = 400 * 1024 - REVISION_BYTES  # the most an entity's own attributes may take


def _fill(obj: VDoc, total: int) -> VDoc:
    """``obj`` with ``text`` grown so the stored item is exactly ``total`` bytes."""
    from dynaorm.schema.entity import encode_entity, spec_of
    base = item_size(encode_entity(obj.model_copy(update={"text": ""}), spec_of(VDoc)))
    return obj.model_copy(update={"text": "t" * (total - base)})


def slack(request: pytest.FixtureRequest) -> int:
    """moto refuses items about 4.6 KB below DynamoDB's limit, dynoxide updates a few bytes
    below it: exact boundaries are DynamoDB Local's; elsewhere the inside case stays this
    far inside."""
    return {"moto": 5000, "dynoxide": 60}.get(engine_of(request), 0)


def test_items_up_to_400_kb_are_stored(db: TestBackend, s: Session,
                                       request: pytest.FixtureRequest) -> None:
    stored(s, _fill(VDoc(doc="big"), ITEM_LIMIT - slack(request)))
    refused(db, ItemTooLargeError, commit(s, _fill(VDoc(doc="big2"), ITEM_LIMIT + 1)),
            "VDoc", "409601")  # (its revision counted)


def test_an_update_that_grows_a_known_item_past_400_kb(
        db: TestBackend, s: Session, request: pytest.FixtureRequest) -> None:
    half = "h" * 200_000
    obj = stored(s, VDoc(doc="grow", data={"a": half}))
    obj.text = "t" * 250_000  # the diff alone is small enough; the item would not be
    s.save(obj)
    refused(db, ItemTooLargeError, s.commit, "VDoc", "after the update")

    loaded = s.get(VDoc, doc="grow", part="p")
    assert loaded is not None

    def grow() -> None:
        s.update(loaded).set(text="t" * 250_000)
        s.commit()
    refused(db, ItemTooLargeError, grow, "VDoc", "after the update")
    # just inside: the same update, sized to land on the limit exactly, is stored
    current = item_size(_encoded(loaded))
    fitting = ITEM_LIMIT - current - slack(request)  # text is "": it grows by this much
    s.update(loaded).set(text="t" * fitting)
    s.commit()
    again = s.get(VDoc, doc="grow", part="p")
    assert again is not None and len(again.text) == fitting
    assert item_size(_encoded(again)) == ITEM_LIMIT - slack(request)


def _encoded(obj: VDoc) -> dict[str, Any]:
    from dynaorm.schema.entity import encode_entity, spec_of
    return encode_entity(obj, spec_of(VDoc))


def test_the_gate_knows_every_key_attribute_and_checks_every_action() -> None:
    from dynaorm.schema.entity import spec_of
    from dynaorm.values.records import ConditionCheck, Delete, Fail, Origin, Put, Role, Update
    from dynaorm.write.render import WritePlan
    assert spec_of(VDoc).table.key_roles == {
        "pk": "partition", "sk": "sort", "gsi1pk": "partition", "gsi1sk": "sort",
        "gsi2pk": "partition", "gsi2sk": "sort", "lsi1sk": "sort"}
    key = {"pk": "VD#x", "sk": "p"}
    origin = Origin(VDoc, key, Role.ROW, Fail.EXISTS)
    item = {"pk": {"S": "VD#x"}, "sk": {"S": "p"}}
    long_key = {"pk": "VD#" + "a" * 2046, "sk": "p"}
    bad: list[tuple[Any, type[Exception]]] = [
        (Put(key, {**item, "lsi1sk": {"S": "s" * 1025}}, None, origin), KeyTemplateError),
        (Put(key, {**item, "v": {"N": "1E+126"}}, None, origin), InvalidValueError),
        (Delete(long_key, None, origin), KeyTemplateError),
        (Update(key, {"v": {"S": LONE}}, (), None, origin), InvalidValueError),
        (Update(key, {}, (), None, origin, (("ADD", "v", {"N": "1" * 39}),)),
         InvalidValueError),
        (Update(key, {"v": {"S": "x" * 1000}}, (), None, origin,
                known={**item, "w": {"S": "w" * 409_000}}), ItemTooLargeError),
        (ConditionCheck(key, F("v") == {"": 1}, origin), InvalidValueError),
    ]
    for op, error in bad:
        with pytest.raises(error, match="VDoc"):
            WritePlan((Put({"pk": "VD#ok", "sk": "p"}, item, None, origin), op))
    # the same update on an item that leaves room fits
    WritePlan((Update(key, {"v": {"S": "x" * 1000}}, (), None, origin,
                           known={**item, "w": {"S": "w" * 400_000}}),))


# -- what the engine refuses itself: raw requests, behind dynaorm's back ----------------------
# (dynaorm's own checks never let these out; on moto, dynaorm's test backend refuses them
# as DynamoDB does, contract section 21: plain moto counts sizes its own way and stores
# them)
def _ones(n: int) -> dict[str, Any]:
    """A list of ``n`` ones: 3 bytes each as DynamoDB counts (a number and its place in
    the list), one as moto does."""
    return {"L": [{"N": "1"}] * n}


def _raw(key: str, size: int, ones: int) -> dict[str, Any]:
    """An item of ``size`` bytes as DynamoDB counts them, ``ones`` of them in a list (for
    moto, then, ``2 * ones`` bytes fewer)."""
    item = {"pk": {"S": f"RAW#{key}"}, "sk": {"S": "RAW"}, "l": _ones(ones), "s": {"S": ""}}
    item["s"] = {"S": "s" * (size - item_size(item))}
    assert item_size(item) == size
    return item


def _engine_refuses(db: TestBackend, operation: str, request: dict[str, Any],
                    code: str) -> RequestFailed:
    before = db.scan_raw()
    with pytest.raises(RequestFailed) as err:
        send(db.table, operation, request)
    assert err.value.code == code
    assert db.scan_raw() == before
    return err.value


def test_the_engine_refuses_an_item_over_400_kb_as_dynamodb_counts_it(
        db: TestBackend, request: pytest.FixtureRequest) -> None:
    put = {"TableName": db.table.name, "Item": _raw("big", 400 * 1024 + 1, 3000)}
    err = _engine_refuses(db, "PutItem", put, "ValidationException")
    assert "Item size has exceeded the maximum allowed size" in err.message
    batch = {"RequestItems": {db.table.name: [{"PutRequest": {"Item": put["Item"]}}]}}
    _engine_refuses(db, "BatchWriteItem", batch, "ValidationException")
    inside = _raw("fits", 400 * 1024 - slack(request), 3000)
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": inside})
    assert db.scan_raw() == [inside]


def test_the_engine_refuses_an_update_that_grows_an_item_past_400_kb(
        db: TestBackend) -> None:
    item = _raw("grow", 401_000, 3000)
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": item})
    key = {"pk": item["pk"], "sk": item["sk"]}
    double = {"TableName": db.table.name, "Key": key, "UpdateExpression": "SET t = :t",
              "ExpressionAttributeValues": {":t": {"S": "t" * 9000}}}  # (moto: 404,000)
    err = _engine_refuses(db, "UpdateItem", double, "ValidationException")
    assert "Item size to update has exceeded the maximum allowed size" in err.message
    other = {"pk": {"S": "RAW#other"}, "sk": {"S": "RAW"}}
    err = _engine_refuses(db, "TransactWriteItems", {"TransactItems": [
        {"Put": {"TableName": db.table.name, "Item": other}}, {"Update": double}]},
        "TransactionCanceledException")
    assert [None if r is None else r.code for r in err.reasons] == [None, "ValidationError"]


def test_the_engine_refuses_a_transaction_over_4_mb_and_a_batch_of_26(
        db: TestBackend) -> None:
    puts = [{"Put": {"TableName": db.table.name, "Item": {
        "pk": {"S": f"RAW#{i}"}, "sk": {"S": "RAW"}, "s": {"S": "s" * 390_000}}}}
        for i in range(11)]
    err = _engine_refuses(db, "TransactWriteItems", {"TransactItems": puts},
                          "ValidationException")
    assert "4MB" in err.message
    batch = [{"PutRequest": {"Item": {"pk": {"S": f"RAW#{i}"}, "sk": {"S": "RAW"}}}}
             for i in range(26)]
    _engine_refuses(db, "BatchWriteItem", {"RequestItems": {db.table.name: batch}},
                    "ValidationException")
