"""``s.update()`` on both backends: every action, upsert, results, rules kept."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import dynaorm
from dynaorm import (
    ConcurrentModificationError,
    ConditionFailedError,
    F,
    InvalidValueError,
    ItemNotFoundError,
    UniqueConstraintError,
)
from dynaorm.testing import TestBackend
from tests.support.examples import examples
from tests.support.recording import Requests, send
from tests.support.update_models import Counter, Doc, FieldRules, Needy, Player, Product, Window

#: what the engine answers is the subject: run on the reference engine too
pytestmark = pytest.mark.engines("moto", "local")


def _seed(db: TestBackend, *objs: object) -> None:
    with db.session() as s:
        for o in objs:
            s.save(o)  # type: ignore[arg-type]


def test_every_action_alone_is_one_update_item_and_result_is_the_stored_entity(
        db: TestBackend) -> None:
    _seed(db, Counter(name="c1", tags={"a", "b"}, log=["m"], label="x"))
    s = db.session()
    u = (s.update(Counter, name="c1").add(count=5, tags={"c"})
         .append(log=["z"]).remove("label").set(status="open")
         .set_default(score=2.5))
    sent = Requests(db.table)
    s.commit()
    assert sent.operations == ["UpdateItem"]
    expected = Counter(name="c1", count=5, score=0.0, tags={"a", "b", "c"}, log=["m", "z"],
                       label=None, status="open")
    assert u.result == expected
    assert s.get(Counter, name="c1") == expected
    assert dynaorm.inspect(u.result).persisted  # the result is a loaded object


def test_discard_removes_set_elements(db: TestBackend) -> None:
    _seed(db, Counter(name="c1", tags={"a", "b"}))
    s = db.session()
    u = s.update(Counter, name="c1").discard(tags={"a", "zz"})
    s.commit()
    assert u.result.tags == {"b"}


def test_prepend_puts_items_first_and_works_on_a_missing_list(db: TestBackend) -> None:
    send(db.table, "PutItem", {"TableName": db.table.name, "Item": {
        "pk": {"S": "CTR#c1"}, "sk": {"S": "CTR"}, "_type": {"S": "Counter"},
        "name": {"S": "c1"}}})
    s = db.session()
    s.update(Counter, name="c1").prepend(log=["b"])
    s.commit()
    u = s.update(Counter, name="c1").prepend(log=["a"])
    s.commit()
    assert u.result.log == ["a", "b"]


def test_set_default_keeps_a_stored_value(db: TestBackend) -> None:
    _seed(db, Counter(name="c1", score=1.0))
    s = db.session()
    u = s.update(Counter, name="c1").set_default(score=9.0, label="fresh")
    s.commit()
    assert (u.result.score, u.result.label) == (1.0, "fresh")


def test_update_of_a_missing_item_raises_and_writes_nothing(db: TestBackend) -> None:
    s = db.session()
    s.update(Counter, name="ghost").add(count=1)
    with pytest.raises(ItemNotFoundError) as err:
        s.commit()
    assert err.value.entity is Counter
    assert db.scan() == []


def test_upsert_creates_then_updates(db: TestBackend) -> None:
    s = db.session()
    u = s.update(Counter, name="c1", upsert=True).add(count=2)
    s.commit()
    assert u.result == Counter(name="c1", count=2)
    u = s.update(Counter, name="c1", upsert=True).add(count=3)
    s.commit()
    assert u.result.count == 5
    (row,) = db.scan()
    assert (row["name"], row["_type"], row["count"]) == ("c1", "Counter", 5)


def test_upsert_missing_a_required_field_sends_nothing(db: TestBackend) -> None:
    s = db.session()
    s.update(Needy, nid="n1", upsert=True).add(hits=1)
    with pytest.raises(InvalidValueError, match="owner"):
        s.commit()
    assert db.scan() == []
    u = s.update(Needy, nid="n1", upsert=True).add(hits=1).set_default(owner="ann")
    s.commit()
    assert u.result == Needy(nid="n1", owner="ann", hits=1)


def test_in_a_transaction_result_needs_returning(db: TestBackend) -> None:
    _seed(db, Counter(name="c1"), Counter(name="c2"))
    s = db.session()
    a = s.update(Counter, name="c1").add(count=1)
    b = s.update(Counter, name="c2").add(count=2).returning()
    s.commit()
    assert b.result.count == 2
    with pytest.raises(Exception, match="returning"):
        _ = a.result
    assert [r["count"] for r in db.scan()] == [1, 2]


def test_update_by_loaded_object(db: TestBackend) -> None:
    _seed(db, Counter(name="c1", count=1))
    s = db.session()
    c = s.get(Counter, name="c1")
    assert c is not None
    u = s.update(c).add(count=1)
    s.commit()
    assert u.result.count == 2


def test_where_false_raises_condition_failed_with_the_stored_entity(db: TestBackend) -> None:
    _seed(db, Counter(name="c1", count=50))
    s = db.session()
    s.update(Counter, name="c1").add(count=1).where(F("count") < 50)
    before = db.scan()
    with pytest.raises(ConditionFailedError) as err:
        s.commit()
    assert err.value.item == Counter(name="c1", count=50)
    assert err.value.failures == [(Counter, {"pk": "CTR#c1", "sk": "CTR"}, err.value.item)]
    assert db.scan() == before


def test_where_on_a_missing_item_is_item_not_found(db: TestBackend) -> None:
    s = db.session()
    s.update(Counter, name="c1").add(count=1).where(F("count") < 50)
    with pytest.raises(ItemNotFoundError):
        s.commit()
    assert db.scan() == []


# -- rules -------------------------------------------------------------------------------
@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_add_on_a_gsi_sort_key_field_re_renders_the_index_key(db: TestBackend) -> None:
    _seed(db, Player(player_id="p1", handle="ann", score=5))
    s = db.session()
    sent = Requests(db.table)
    u = s.update(Player, player_id="p1").add(score=10)
    s.commit()
    assert sent.operations == ["GetItem", "UpdateItem"]
    assert u.result.score == 15
    row = next(r for r in db.scan() if r["_type"] == "Player")
    assert row["gsi2sk"] == "0000000015#p1"
    top = s.query(Player, index="gsi2", board="main").all()
    assert [p.score for p in top] == [15]


def test_a_unique_field_update_swaps_the_guard(db: TestBackend) -> None:
    _seed(db, Player(player_id="p1", handle="ann"), Player(player_id="p2", handle="bob"))
    s = db.session()
    s.update(Player, player_id="p1").set(handle="cat")
    s.commit()
    guards = sorted(r["pk"] for r in db.scan() if r["_type"] == "dynaorm:unique")
    assert guards == ["handle#bob", "handle#cat"]
    s.update(Player, player_id="p1").set(handle="bob")
    before = db.scan()
    with pytest.raises(UniqueConstraintError):
        s.commit()
    assert db.scan() == before


def test_a_rule_update_of_a_changed_item_is_a_concurrent_modification(db: TestBackend) -> None:
    _seed(db, Player(player_id="p1", handle="ann", score=1))
    s = db.session()
    p = s.get(Player, player_id="p1")
    assert p is not None
    other = db.session()
    other.update(Player, player_id="p1").add(score=1)
    other.commit()
    s.update(p).add(score=5)  # planned on the loaded (now stale) state, no read
    before = db.scan()
    with pytest.raises(ConcurrentModificationError):
        s.commit()
    assert db.scan() == before


def test_a_versioned_update_writes_the_next_version(db: TestBackend) -> None:
    _seed(db, Doc(doc_id="d1", title="t"))
    s = db.session()
    u = s.update(Doc, doc_id="d1").add(views=3)
    s.commit()
    assert (u.result.views, u.result.version) == (3, 2)
    assert [d.views for d in s.history(Doc, doc_id="d1").all()] == [0, 3]


def test_a_versioned_update_of_a_missing_item(db: TestBackend) -> None:
    s = db.session()
    s.update(Doc, doc_id="d1").add(views=3)
    with pytest.raises(ItemNotFoundError):
        s.commit()
    assert db.scan() == []  # no version row, no latest copy
    u = s.update(Doc, doc_id="d1", upsert=True).add(views=3)
    s.commit()
    assert (u.result.views, u.result.version) == (3, 1)


# -- updates never store what the model would refuse -----------------------------------------
def test_update_runs_field_validators_and_constraints(db: TestBackend) -> None:
    _seed(db, FieldRules(pid="p1"))
    s = db.session()
    sent = Requests(db.table)
    u = s.update(FieldRules, pid="p1").set(sku="zz")
    s.commit()
    assert sent.operations == ["UpdateItem"]  # no rule across fields: still one request
    assert u.result.sku == "ZZ"
    assert db.scan_raw()[0]["sku"] == {"S": "ZZ"}  # stored as the model stores it
    with pytest.raises(ValidationError):
        s.update(Product, pid="p1").set(qty=-1)


def test_update_refuses_a_frozen_field(db: TestBackend) -> None:
    _seed(db, FieldRules(pid="p1", owner="ann"))
    for stage in (lambda u: u.set(owner="bob"), lambda u: u.remove("owner")):
        with pytest.raises(InvalidValueError, match="frozen"):
            stage(db.session().update(FieldRules, pid="p1"))
    s = db.session()
    assert s.get(FieldRules, pid="p1") == FieldRules(pid="p1", owner="ann")
    u = s.update(FieldRules, pid="p2", upsert=True).set_default(owner="cid")  # where none: fine
    s.commit()
    assert u.result.owner == "cid"


def test_a_stored_computed_field_is_recomputed_by_a_save_of_a_loaded_object(
        db: TestBackend) -> None:
    """Red team of issue 82: the save's merge took a computed field's stored value for an
    attribute another writer kept (the class writes it, but declares no field of it), so
    a loaded object's change never stored its recomputed value."""
    _seed(db, Product(pid="p1", price=1.5, qty=2))
    s = db.session()
    p = s.get(Product, pid="p1")
    assert p is not None
    p.qty = 4
    s.save(p)
    s.commit()
    assert float(db.scan_raw()[0]["total"]["N"]) == 6.0


def test_a_stored_computed_field_is_recomputed_by_an_update(db: TestBackend) -> None:
    _seed(db, Product(pid="p1", price=1.5, qty=2))
    assert float(db.scan_raw()[0]["total"]["N"]) == 3.0
    s = db.session()
    u = s.update(Product, pid="p1").set(qty=5)
    s.commit()
    assert u.result.total == 7.5
    assert float(db.scan_raw()[0]["total"]["N"]) == 7.5
    s.update(Product, pid="p1").add(qty=1).set(sku="ab")
    s.commit()
    stored = db.scan_raw()[0]
    assert float(stored["total"]["N"]) == 9.0 and stored["sku"] == {"S": "AB"}


def test_list_actions_run_the_field_validator_on_the_combined_value(db: TestBackend) -> None:
    _seed(db, Product(pid="p1", tags=["a"]))
    s = db.session()
    s.update(Product, pid="p1").append(tags=["B"])
    s.commit()
    assert db.scan_raw()[0]["tags"] == {"L": [{"S": "a"}, {"S": "b"}]}


def test_a_model_validator_refuses_an_update(db: TestBackend) -> None:
    _seed(db, Window(wid="w1", start=1, end=5))
    s = db.session()
    s.update(Window, wid="w1").set(start=9)
    sent = Requests(db.table)
    with pytest.raises(InvalidValueError, match="refuses"):
        s.commit()
    assert "UpdateItem" not in sent.operations and "TransactWriteItems" not in sent.operations
    assert db.session().get(Window, wid="w1") == Window(wid="w1", start=1, end=5)
    s = db.session()
    s.update(Window, wid="w1").set(start=4)
    s.commit()
    assert db.session().get(Window, wid="w1") == Window(wid="w1", start=4, end=5)


def test_an_upsert_of_a_class_with_rules_validates_the_created_item(db: TestBackend) -> None:
    s = db.session()
    u = s.update(Product, pid="p9", upsert=True).set(qty=3, price=2.0, sku="ab")
    s.commit()
    assert (u.result.sku, u.result.total) == ("AB", 6.0)
    assert float(db.scan_raw()[0]["total"]["N"]) == 6.0


def test_update_of_a_loaded_object_honours_its_expected_version(db: TestBackend) -> None:
    from tests.support.models import Audit
    with db.session() as s:
        s.save(Audit(equipment_id="E7", part="P"))
    s = db.session()
    audit = s.get(Audit, equipment_id="E7", part="P")
    assert audit is not None and audit.version == 1
    audit.version = 5  # an If-Match the loaded object does not satisfy
    s.update(audit).set(notes="x")
    with pytest.raises(ConcurrentModificationError, match="expected version 5"):
        s.commit()


# -- the adversary: random updates never store what the model would refuse ---------------------
ACTIONS = st.lists(st.one_of(
    st.tuples(st.just("set"), st.sampled_from(["sku", "qty", "price", "owner"]),
              st.one_of(st.integers(-3, 5), st.text("aZ9#", max_size=3),
                        st.floats(-2, 4, allow_nan=False))),
    st.tuples(st.just("add"), st.just("qty"), st.integers(-4, 4)),
    st.tuples(st.just("append"), st.just("tags"), st.lists(st.text("aB", max_size=2),
                                                           max_size=2))),
    min_size=1, max_size=3, unique_by=lambda a: a[1])


@settings(max_examples=examples(30), deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(actions=ACTIONS)
def test_random_updates_store_only_what_the_model_accepts(
        db: TestBackend, actions: list[tuple[str, str, Any]]) -> None:
    with db.session() as s:
        s.save(Product(pid="h1", sku="A", qty=2, price=1.5, tags=["x"]), overwrite=True)
    before = db.scan_raw()
    s = db.session()
    try:
        u = s.update(Product, pid="h1")
        for method, name, value in actions:
            getattr(u, method)(**{name: value})
        s.commit()
    except (ValidationError, InvalidValueError):
        assert db.scan_raw() == before  # refused: nothing stored
        return
    stored = db.session().get(Product, pid="h1")
    assert stored is not None
    # what is stored is what the model makes of it: validating it again changes nothing
    again = Product.model_validate(stored.model_dump(exclude={"total"}))
    assert again == stored
    raw = db.scan_raw()[0]
    assert float(raw["total"]["N"]) == stored.price * stored.qty  # never stale
    assert raw["sku"]["S"] == raw["sku"]["S"].upper() and stored.qty >= 0
    assert all(t == t.lower() for t in stored.tags) and stored.owner == "nobody"
