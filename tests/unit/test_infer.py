"""The pure inference (:mod:`dynaorm.formats.infer`) on hand-made samples: what needs no
table. ``integration/test_infer.py`` reads live tables (published designs, tables dynaorm
wrote, the command)."""

from __future__ import annotations

from typing import Any

import pytest

from dynaorm.formats.infer import InferenceError, infer_model


def _table(*gsis: tuple[str, list[str], list[str]], types: dict[str, str] | None = None
           ) -> dict[str, Any]:
    attrs = {"PK": "S", "SK": "S", **(types or {})}
    for _, pk, sk in gsis:
        attrs.update({a: attrs.get(a, "S") for a in (*pk, *sk)})
    return {"TableName": "unit-table",
            "KeySchema": [{"AttributeName": "PK", "KeyType": "HASH"},
                          {"AttributeName": "SK", "KeyType": "RANGE"}],
            "AttributeDefinitions": [{"AttributeName": a, "AttributeType": t}
                                     for a, t in attrs.items()],
            "GlobalSecondaryIndexes": [
                {"IndexName": name, "Projection": {"ProjectionType": "ALL"},
                 "KeySchema": [*({"AttributeName": a, "KeyType": "HASH"} for a in pk),
                               *({"AttributeName": a, "KeyType": "RANGE"} for a in sk)]}
                for name, pk, sk in gsis]}


def s(text: str) -> dict[str, str]:
    return {"S": text}


def _entities(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {e["type_name"]: e for e in model["entities"]}


def test_field_types() -> None:
    items = [{"PK": s(f"USER#u{n}1"), "SK": s("PROFILE"), "age": {"N": str(n)},
              "score": {"N": f"{n}.5"}, "ok": {"BOOL": True}, "raw": {"B": b"x"},
              "tags": {"SS": ["a"]}, "nums": {"NS": ["1", "2"]},
              "seen": s("2024-01-02T03:04:05Z"), "born": s("1990-01-02"),
              "home": {"M": {"city": s("Oslo"), "zip": {"N": "1"}}},
              "meta": {"M": {"a b": s("x")}}, "list": {"L": [s("x"), s("y")]},
              **({"note": s("hi")} if n else {"note": {"NULL": True}})}
             for n in range(3)]
    model = infer_model(_table(), None, items).model
    fields = {f["stored"]: f for f in model["entities"][0]["fields"]}
    assert {k: f["type"] for k, f in fields.items() if k != "user_id"} == {
        "age": "integer", "score": "decimal", "ok": "boolean", "raw": "binary",
        "tags": "set", "nums": "set", "seen": "datetime", "born": "date", "home": "object",
        "meta": "map", "list": "list", "note": "string"}
    assert [f["stored"] for f in fields["home"]["fields"]] == ["city", "zip"]
    assert fields["nums"]["items"] == {"type": "integer"}
    assert fields["note"]["nullable"] and not fields["age"]["nullable"]


def test_versions_and_guards() -> None:
    """``v0_``/``v<n>_`` rows are one versioned entity; dynaorm's guard items a unique
    rule of the entity they name, a guard naming no entity is not placed."""
    items = [{"PK": s("DOC#d1"), "SK": s("v0_DOC"), "_type": s("Doc"), "email": s("a@x")},
             {"PK": s("DOC#d1"), "SK": s("v00000001_DOC"), "_type": s("Doc"),
              "email": s("a@x")},
             {"PK": s("DOC#d2"), "SK": s("v0_DOC"), "_type": s("Doc"), "email": s("b@x")},
             {"PK": s("email#a@x"), "SK": s("email#a@x"), "_type": s("dynaorm:unique"),
              "owner_pk": s("DOC#d1"), "owner_sk": s("v0_DOC"), "owner_type": s("Doc"),
              "unique_field": s("email")},
             {"PK": s("code#1"), "SK": s("code#1"), "_type": s("dynaorm:unique"),
              "owner_pk": s("X#1"), "owner_sk": s("X"), "owner_type": s("Gone"),
              "unique_field": s("code")}]
    found = infer_model(_table(), None, items)
    doc = _entities(found.model)["Doc"]
    assert (doc["pk"], doc["sk"], doc["versioned"]) == ("DOC#{doc_id}", "DOC", True)
    assert doc["unique"] == [{"field": "email", "prefix": "email", "scope": None,
                              "normalize": None}]
    assert (found.sampled, found.placed, found.unplaced) == (5, 4, 1)
    assert found.unplaced_keys == [{"PK": "code#1", "SK": "code#1"}]


def test_native_and_template_indexes() -> None:
    """A GSI keyed on plain attributes, or on several, is native; one whose values carry
    literals is a template index, sparse where items leave it off."""
    table = _table(("byCity", ["city"], ["joined"]), ("multi", ["a", "b"], []),
                   ("GSI1", ["GSI1PK"], ["GSI1SK"]))
    items = [{"PK": s(f"USER#u{n}"), "SK": s("PROFILE"), "city": s(f"c{n}"),
              "joined": s(f"2024-01-0{n + 1}"), "a": s("x"), "b": s("y"),
              **({"GSI1PK": s("VIP"), "GSI1SK": s(f"USER#u{n}")} if n % 2 else {})}
             for n in range(4)]
    model = infer_model(table, None, items).model
    native = {i["name"]: i["native"] for i in model["table"]["indexes"]}
    assert native == {"byCity": True, "multi": True, "GSI1": False}
    (user,) = model["entities"]
    assert user["indexes"] == [{"name": "GSI1", "pk": "VIP", "sk": "USER#{user_id}"}]
    stored = {f["stored"]: f["type"] for f in user["fields"]}
    assert stored["joined"] == "string"  # (a native index's S key attribute holds text)


def test_key_shapes_without_a_type_attribute() -> None:
    """No type attribute: entities by literal tokens, leads inside tokens, and a token
    the item holds as an attribute is a value (``NORMAL`` is the item's state)."""
    items = [{"PK": s("User:ann"), "SK": s("2023-01-01T00:00:00Z"), "text": s("hi")},
             {"PK": s("Room:music"), "SK": s("meta"), "by": s("ann")},
             {"PK": s("d#1"), "SK": s("NORMAL#2020-01-01"), "State": s("NORMAL")},
             {"PK": s("d#2"), "SK": s("WARN1#2020-01-02"), "State": s("WARN1")}]
    model = infer_model(_table(), None, items).model
    keys = sorted((e["pk"], e["sk"]) for e in model["entities"])
    assert keys == [("Room:{room_id}", "meta"), ("User:{user_id}", "{sk}"),
                    ("d#{d_id}", "{state}#{sk}")]


def test_bad_input() -> None:
    with pytest.raises(InferenceError, match="has no items"):
        infer_model(_table(), None, [])
    with pytest.raises(InferenceError, match=r"binary key attributes \(PK\)"):
        infer_model({**_table(), "AttributeDefinitions": [
            {"AttributeName": "PK", "AttributeType": "B"}]}, None, [{"PK": {"B": b"1"}}])


def test_a_guard_scope_keeps_the_key_template_as_written() -> None:
    """The scopes a unique guard's key may render before its prefix are the owner's key
    templates' leading parts as written (``S#{n:05d}``, ``U#{uid!u}``): a field's format
    spec or conversion dropped (``S#{n}``) would render another text than the keys hold."""
    from types import SimpleNamespace

    from dynaorm.formats.infer.own import _scopes
    from dynaorm.schema.templates import KeyTemplate

    owner = SimpleNamespace(fields=[{"name": "n"}, {"name": "uid"}], parsed={
        "PK": KeyTemplate.parse("S#{n:05d}"), "SK": KeyTemplate.parse("U#{uid!u}#{{x}}#{n}")})
    scopes = {t.source: t for t in _scopes(owner)}  # type: ignore[arg-type]
    assert set(scopes) == {"{n}", "{uid}", "S#{n:05d}", "U#{uid!u}", "U#{uid!u}#{{x}}#{n}"}
    assert scopes["S#{n:05d}"].render({"n": 7}) == "S#00007"
    assert scopes["U#{uid!u}"].render({"uid": "ab"}) == "U#AB"


# -- issue 82: tables the world has ---------------------------------------------------------
def _defined(found: Any) -> dict[str, Any]:
    """The model the printed code defines (inference's answer), as ``dynaorm.infer``."""
    from dynaorm.client.infer import _defined_table, inferred_code

    model: dict[str, Any] = _defined_table(inferred_code(found)).model()
    return model


def test_odd_type_values_never_refuse_the_table() -> None:
    items = [{"PK": s(f"O#{n}"), "SK": s(f"L#{m}"), "_type": s("Order Line"),
              "qty": {"N": str(m)}} for n in range(3) for m in range(2)]
    items += [{"PK": s(f"C#{n}"), "SK": s("CODE"), "_type": s("2fa-code"), "code": s("1")}
              for n in range(3)]
    found = infer_model(_table(), None, items)
    assert (found.placed, found.unplaced) == (9, 0)
    assert set(_entities(found.model)) == {"Order Line", "2fa-code"}
    assert {e["type_name"] for e in _defined(found)["entities"]} == {"Order Line", "2fa-code"}


def test_stray_items_without_a_type_never_unplace_the_typed_ones() -> None:
    items = [{"PK": s(f"U#{n}"), "SK": s("PROFILE"), "_type": s("User"), "name": s("a")}
             for n in range(9)]
    items += [{"PK": s(f"O#{n}"), "SK": s(f"O#{n}"), "_type": s("Order"), "total": {"N": "1"}}
              for n in range(9)]
    items += [{"PK": s(f"X#{n}"), "SK": s("STRAY"), "note": s("x")} for n in range(3)]
    found = infer_model(_table(), None, items)
    assert found.model["table"]["type_attribute"] == "_type"
    assert found.placed >= 18 and {"User", "Order"} <= set(_entities(found.model))


@pytest.mark.parametrize("langgraph", [False, True], ids=["dynaorm's", "with LangGraph's"])
def test_dynaorms_own_rows_are_counted_apart_never_entities(langgraph: bool) -> None:
    """dynaorm's own rows, and (where its adapter is installed: the rows a surface keeps
    are found by its entry point, ``dynaorm.surface_rows``) LangGraph's."""
    from dynaorm.plugins import SURFACE_ROWS
    from dynaorm.plugins import found as entry_points

    if langgraph and "langgraph" not in entry_points(SURFACE_ROWS):
        pytest.skip("dynaorm-langgraph is not installed (make quick's venv)")
    items = [{"PK": s(f"U#{n}"), "SK": s("PROFILE"), "_type": s("User"), "name": s("a")}
             for n in range(4)]
    own = [{"PK": s("dynaorm:receipt#k1"), "SK": s("dynaorm:receipt#k1"),
            "_type": s("dynaorm:receipt"), "dynaorm:digest": s("d")},
           {"PK": s("dynaorm:idempotency#k2"), "SK": s("x"), "_type": s("dynaorm:idempotency")},
           *([{"PK": s("LG#t1"), "SK": s("C##c1#"), "_type": s("LangGraphCheckpoint"),
               "thread_id": s("t1")},
              {"PK": s("LG#t1"), "SK": s("C##c1#W#t#0"), "_type": s("LangGraphWrite")},
              {"PK": s("LANGGRAPH#STORE#"), "SK": s("a.b"), "_type": s("LangGraphMemory")}]
             if langgraph else [])]
    found = infer_model(_table(), None, items + own)
    assert (found.placed, found.unplaced, found.own) == (4, 0, len(own))
    assert set(_entities(found.model)) == {"User"}
    assert [e["type_name"] for e in _defined(found)["entities"]] == ["User"]
    bare = [{k: v for k, v in i.items() if k != "_type"} for i in items + own[:1]]
    found = infer_model(_table(), None, bare)  # (no type attribute: a receipt by its key)
    assert (found.own, found.unplaced) == (1, 0)


@pytest.mark.parametrize(("texts", "stored"), [
    (["2026-01-02T03:04:05Z", "2025-12-31T23:59:59Z"], "%Y-%m-%dT%H:%M:%SZ"),
    (["2026-01-02T03:04:05.123Z", "2025-12-31T23:59:59.000Z"], "iso-z-millis"),
    (["2026-01-02T03:04:05.123456Z"], "iso-z"),
    (["2026-01-02 03:04:05", "2026-01-03 03:04:05"], "%Y-%m-%d %H:%M:%S"),
    (["2026-01-02T03:04:05+00:00"], None),  # (dynaorm's own form)
    (["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.123Z"], "iso-z"),  # (Z, any fraction)
    (["2026-01-02T03:04:05Z", "2026-01-02T03:04:05"], None),  # (two forms)
])
def test_the_inferred_model_declares_the_stored_format_it_saw(texts: list[str],
                                                               stored: str | None) -> None:
    items = [{"PK": s(f"U#{n}"), "SK": s("PROFILE"), "_type": s("User"), "seen": s(t)}
             for n, t in enumerate(texts * 2)]
    found = infer_model(_table(), None, items)
    (seen,) = [f for f in _entities(found.model)["User"]["fields"] if f["stored"] == "seen"]
    assert seen["type"] == "datetime" and seen.get("stored_as") == stored
    (defined,) = [f for e in _defined(found)["entities"] for f in e["fields"]
                  if f["stored"] == "seen"]
    assert defined.get("stored_as") == stored  # (the printed code declares it)


# -- issue 82, second part: indexes, words, two types, placed means decoded, epochs ---------
def _decoded(found: Any) -> Any:
    """``found`` as ``dynaorm.infer`` reports it: placed means decoded by the printed code."""
    from dynaorm.client.infer import _defined_table, decoded, inferred_code

    return decoded(found, _defined_table(inferred_code(found)))


def test_plain_attribute_indexes_are_declared_on_their_entities() -> None:
    """An index keyed on a plain attribute is native even where its values carry a lead
    (``txn_8f3a``: a transaction id, not a template); one keyed on a plain attribute and
    a template attribute keeps the plain one a field stored as itself, its template that
    field whole (the entity reads and writes ``Operator``)."""
    table = _table(("byTxn", ["TransactionId"], []), ("GSI1", ["Operator"], ["GSI1SK"]))
    items = [{"PK": s(f"ACC#a{n}"), "SK": s(f"TXN#t{n}"), "TransactionId": s(f"txn_{n}8f3a"),
              "Operator": s(["Liz", "Sue"][n % 2]), "GSI1SK": s(f"DATE#2020-0{n + 1}-01")}
             for n in range(5)]
    found = infer_model(table, None, items)
    native = {i["name"]: i["native"] for i in found.model["table"]["indexes"]}
    assert native == {"byTxn": True, "GSI1": False}
    (txn,) = found.model["entities"]
    stored = {f["stored"]: f["name"] for f in txn["fields"]}
    assert {"TransactionId", "Operator"} <= set(stored)
    assert txn["indexes"] == [{"name": "GSI1", "pk": "{" + stored["Operator"] + "}",
                               "sk": "DATE#{gsi1_sk_id}".replace("gsi1_sk_id", txn["indexes"][0][
                                   "sk"].split("{")[1].rstrip("}"))}]
    (defined,) = _defined(found)["entities"]
    assert sorted(defined["lands_in"]) == ["GSI1", "byTxn"]
    assert _decoded(found).placed == 5


def test_a_word_that_varies_within_an_entity_is_a_field() -> None:
    """``Active#2026-01-01``, ``Saved#...``, ``Closed#...`` under one partition, items of
    the same attributes: one entity whose sort key is two fields, not one per word.
    Beside entities whose keys such a template would cover (``ORDER#o1`` under the same
    partitions: no type attribute tells them apart), the words stay literals, and every
    item is placed either way."""
    items = [{"PK": s(f"USER#u{n}"), "SK": s(f"{('Active', 'Saved', 'Closed')[n % 3]}"
                                            f"#2026-01-0{n + 1}"), "amount": {"N": str(n)},
              "note": s("x")} for n in range(6)]
    items += [{"PK": s(f"USER#u{n}"), "SK": s("PROFILE"), "name": s("a")} for n in range(3)]
    found = _decoded(infer_model(_table(), None, items))
    keys = sorted((e["pk"], e["sk"]) for e in found.model["entities"])
    assert keys == [("USER#{user_id}", "PROFILE"), ("USER#{user_id}", "{sk}#{sk_2}")]
    assert (found.placed, found.unplaced) == (9, 0)
    items += [{"PK": s(f"USER#u{n}"), "SK": s(f"ORDER#o{n}"), "total": {"N": "1"}}
              for n in range(3)]
    found = _decoded(infer_model(_table(), None, items))
    keys = sorted((e["pk"], e["sk"]) for e in found.model["entities"])
    assert ("USER#{user_id}", "ORDER#{order_id}") in keys and len(keys) == 5
    assert (found.placed, found.unplaced) == (12, 0)


def test_an_attribute_stored_as_s_and_n_reads_both() -> None:
    """``S`` on some items, ``N`` on others: ``str | int`` (``str | Decimal`` with a
    fraction), never a key template's field (its number would render another text than
    the key holds), and every item decodes through the printed code."""
    items = [{"PK": s(f"USER#{n}"), "SK": s("PROFILE"),
              "user_id": s(str(n)) if n % 2 else {"N": str(n)},
              "zip": s("0123") if n % 2 else {"N": "5.50"}} for n in range(6)]
    found = infer_model(_table(), None, items)
    (user,) = found.model["entities"]
    types = {f["stored"]: f for f in user["fields"]}
    assert types["user_id"]["of"] == [{"type": "string"}, {"type": "integer"}]
    assert types["zip"]["of"] == [{"type": "string"}, {"type": "decimal"}]
    assert user["pk"] != "USER#{user_id}"  # (a key-only field of its own)
    assert (_decoded(found).placed, _decoded(found).unreadable) == (6, [])


def test_placed_means_the_printed_model_decodes_it() -> None:
    """A text of a time's shape that is no time (``2024-02-30T10:00:00Z``) is text, so
    the item decodes; and an item the printed model does not decode is never counted
    placed: unplaced, its key named first, and why."""
    from dynaorm.client.infer import _defined_table, decoded, inferred_code

    items = [{"PK": s(f"U#{n}"), "SK": s("PROFILE"), "_type": s("User"),
              "seen": s("2024-02-30T10:00:00Z" if n == 0 else f"2024-02-0{n}T10:00:00Z")}
             for n in range(1, 4)] + [{"PK": s("U#0"), "SK": s("PROFILE"), "_type": s("User"),
                                       "seen": s("2024-02-30T10:00:00Z")}]
    found = infer_model(_table(), None, items)
    (seen,) = [f for f in found.model["entities"][0]["fields"] if f["stored"] == "seen"]
    assert seen["type"] == "string" and _decoded(found).placed == 4
    # a model the items do not fit (typed by hand here: the sample's own types fit)
    items = [{"PK": s(f"U#{n}"), "SK": s("PROFILE"), "_type": s("User"), "age": {"N": str(n + 2)}}
             for n in range(4)]
    found = infer_model(_table(), None, items)
    (age,) = [f for f in found.model["entities"][0]["fields"] if f["stored"] == "age"]
    age["type"] = "boolean"
    checked = decoded(found, _defined_table(inferred_code(found)))
    assert (checked.placed, checked.unplaced) == (0, 4)
    assert checked.unplaced_keys[0] == {"PK": "U#0", "SK": "PROFILE"}
    assert "age" in checked.unreadable[0] and checked.unreadable[0].startswith('{"PK": "U#0"')


@pytest.mark.parametrize(("name", "numbers", "stored"), [
    ("createdAt", [1_700_000_000, 1_700_000_500], "epoch-seconds"),
    ("updated_at", [1_700_000_000_123, 1_700_000_000_999], "epoch-millis"),
    ("expires", [4_000_000_000], "epoch-seconds"),
    ("TTL", [1_700_318_200], "epoch-seconds"),
    ("LastLoginTime", [1_600_000_000], "epoch-seconds"),
    ("count", [1_700_000_000], None),                   # (a number not named as a time)
    ("createdAt", [1, 2], None),                        # (1970: no epoch of this century)
    ("createdAt", [1_700_000_000, 1_700_000_000_000], None),  # (seconds and millis mixed)
    ("createdAt", [1_700_000_000.5], None),             # (a fraction: a decimal stays one)
])
def test_epoch_numbers_named_as_times_are_times(name: str, numbers: list[float],
                                                stored: str | None) -> None:
    """Conservative: a number is a time stored as epoch seconds or milliseconds only when
    its attribute's name ends in a time's word (``at``, ``time``, ``date``, ``expires``,
    ``ttl``...) and every value is whole and within 2000-2100 in one of the two units."""
    items = [{"PK": s(f"U#{n}"), "SK": s("PROFILE"), "_type": s("User"),
              name: {"N": str(v)}} for n, v in enumerate(numbers * 2)]
    found = infer_model(_table(), None, items)
    (field,) = [f for f in found.model["entities"][0]["fields"] if f["stored"] == name]
    assert field.get("stored_as") == stored
    assert field["type"] == ("datetime" if stored else "integer" if all(
        float(v).is_integer() for v in numbers) else "decimal")
    assert _decoded(found).placed == len(items)


# -- issue 89: designs nobody here wrote ----------------------------------------------------
def _task_manager(edb: bool) -> list[dict[str, Any]]:
    """Items of ElectroDB's task-manager example (tasks, offices, employees), the tasks
    with their data attribute ``type`` (epic, story, defect) the others lack; ``edb``:
    with ElectroDB's own ``__edb_e__`` on every item."""
    items = [{"PK": s(f"$task-manager#taskname_t{n}x"),
              "SK": s(f"$task_1#project_p{n % 3}x#employee_e{n % 4}x"),
              "type": s(("epic", "story", "defect")[n % 3]), "points": {"N": str(n)},
              "status": s("open"), "__edb_e__": s("task")} for n in range(12)]
    items += [{"PK": s(f"$task-manager#country_usa#state_s{n}x"),
               "SK": s(f"$office_1#city_c{n}x#zip_{n}0101#officename_o{n}x"),
               "address": s(f"{n} Main St"), "__edb_e__": s("office")} for n in range(5)]
    items += [{"PK": s(f"$task-manager#employee_e{n}x"), "SK": s("$employee_1"),
               "firstName": s("Ann"), "salary": s("100"), "__edb_e__": s("employee")}
              for n in range(5)]
    return items if edb else [{k: v for k, v in i.items() if k != "__edb_e__"} for i in items]


@pytest.mark.parametrize("edb", [True, False])
def test_a_type_only_one_entity_carries_is_a_field(edb: bool) -> None:
    """A ``type`` attribute only the tasks carry (their kind: epic, story, defect) is a
    field of the tasks, never the table's discriminator: ElectroDB's own type attribute,
    held by every item, is (a regression of 0.9), else the keys tell the entities apart;
    every item placed either way."""
    found = infer_model(_table(), None, _task_manager(edb))
    assert found.model["table"]["type_attribute"] == ("__edb_e__" if edb else None)
    assert (found.placed, found.unplaced) == (22, 0)
    assert len(found.model["entities"]) == 3
    (task,) = [e for e in found.model["entities"] if e["pk"].endswith("taskname_{task}")
               or "taskname" in e["pk"]]
    assert {f["stored"]: f["type"] for f in task["fields"]}["type"] == "string"
    assert _decoded(found).placed == 22


def test_a_status_attribute_never_splits_an_entity() -> None:
    """A cart item's ``Status`` (ACTIVE or SAVED on items of one key shape and the same
    attributes) is a data attribute: one entity with a ``Status`` field, not two."""
    items = [{"PK": s(f"CART#c{n % 4}x"), "SK": s(f"ITEM#sku{n}x"), "qty": {"N": "1"},
              "Status": s(("ACTIVE", "SAVED")[n % 2])} for n in range(12)]
    found = infer_model(_table(), None, items)
    assert found.model["table"]["type_attribute"] is None
    (item,) = found.model["entities"]
    assert (item["pk"], item["sk"]) == ("CART#{cart_id}", "ITEM#{item_id}")
    assert {f["stored"]: f["type"] for f in item["fields"]}["Status"] == "string"


@pytest.mark.parametrize(("texts", "stored"), [
    (["2020-04-24T14:40:00", "2020-04-24T14:45:00"], "%Y-%m-%dT%H:%M:%S"),  # (naive ISO)
    (["2026-01-02T03:04:05.123456789Z"], "%Y-%m-%dT%H:%M:%S.%f000Z"),
    # Java's Instant.toString(): Z, with 0, 3, 6 or 9 fraction digits as the time needs
    (["2026-01-02T03:04:05Z", "2026-01-02T03:04:05.120Z", "2026-01-02T03:04:05.123456Z",
      "2026-01-02T03:04:05.123456789Z"], "iso-z"),
])
@pytest.mark.parametrize("native", [False, True])
def test_times_in_any_consistent_text_form_are_datetimes(texts: list[str], stored: str,
                                                         native: bool) -> None:
    """A time in any consistent text form (naive ISO, ``Z`` with any number of fraction
    digits) is a ``datetime`` declaring the form seen, also where its attribute is a
    native index's key (an ``S`` key attribute: the stored form is text)."""
    table = _table(("byAt", ["owner"], ["at"])) if native else _table()
    items = [{"PK": s(f"U#{n}"), "SK": s("PROFILE"), "owner": s(f"o{n}"), "at": s(t)}
             for n, t in enumerate(texts * 2)]
    found = infer_model(table, None, items)
    (at,) = [f for f in found.model["entities"][0]["fields"] if f["stored"] == "at"]
    assert (at["type"], at.get("stored_as")) == ("datetime", stored)
    assert _decoded(found).placed == len(items)


def test_stray_single_items_are_unplaced_not_entities() -> None:
    """Single items of no entity's shape in a sample of many (``Item``, ``Blob``,
    ``TmpMigrationMarker``) are reported unplaced, not made one-item entities."""
    items: list[dict[str, Any]] = [{"PK": s(f"USER#u{n}x"), "SK": s("PROFILE"),
                                    "name": s("a")} for n in range(30)]
    items += [{"PK": s(f"USER#u{n}x"), "SK": s(f"ORDER#o{n}x"), "total": {"N": "1"}}
              for n in range(30)]
    strays: list[dict[str, Any]] = [
        {"PK": s("8f14e45f"), "SK": s("c9f0f895"), "x": s("1")},
        {"PK": s("BLOB"), "SK": s("BLOB"), "data": {"B": b"x"}},
        {"PK": s("TMP#MIGRATION"), "SK": s("MARKER"), "done": {"BOOL": True}}]
    found = infer_model(_table(), None, items + strays)
    assert (found.placed, found.unplaced) == (60, 3)
    assert sorted(e["sk"] for e in found.model["entities"]) == ["ORDER#{order_id}", "PROFILE"]
    assert {"PK": "BLOB", "SK": "BLOB"} in found.unplaced_keys


def test_a_table_per_class_entity_is_named_after_its_table() -> None:
    """A table of one class, keyed by a bare id (no literal to name it by): its entity is
    named after the table, not ``Item``."""
    table = {"TableName": "prod-orders", "KeySchema": [{"AttributeName": "id",
                                                        "KeyType": "HASH"}],
             "AttributeDefinitions": [{"AttributeName": "id", "AttributeType": "S"}]}
    items = [{"id": s(f"8f14e45f-{n}"), "total": {"N": str(n)}} for n in range(4)]
    (entity,) = infer_model(table, None, items).model["entities"]
    assert entity["name"] == "ProdOrder"


@pytest.mark.parametrize(("name", "numbers", "boolean"), [
    ("isActive", [1, 0], True), ("enabled", [1], True), ("has_kids", [0, 1], True),
    ("count", [1, 0], False),    # (a number not named as a boolean)
    ("isActive", [1, 2], False),  # (a number other than 1 and 0)
])
def test_booleans_stored_as_numbers_keep_that_form(name: str, numbers: list[int],
                                                   boolean: bool) -> None:
    """A boolean stored as the number 1 or 0 (named as one: ``isActive``, ``enabled``) is
    a ``bool`` stored as a number (``StoredAs.NUMBER``), and the printed code says so."""
    items = [{"PK": s(f"U#{n}"), "SK": s("PROFILE"), "_type": s("User"),
              name: {"N": str(v)}} for n, v in enumerate(numbers * 2)]
    found = infer_model(_table(), None, items)
    (field,) = [f for f in found.model["entities"][0]["fields"] if f["stored"] == name]
    want = ("boolean", "number") if boolean else ("integer", None)
    assert (field["type"], field.get("stored_as")) == want
    (defined,) = [f for e in _defined(found)["entities"] for f in e["fields"]
                  if f["stored"] == name]
    assert (defined["type"], defined.get("stored_as")) == want
    assert _decoded(found).placed == len(items)


@pytest.mark.parametrize(("name", "versions", "lock"), [
    ("version", ["1", "2", "7", "1"], True),
    ("record_version", ["3", "3", "1", "1"], True),
    ("version", ["1", "2.5", "3", "1"], False),  # (a fraction: no mapper's lock)
    ("version", ["1", "2", None, "1"], False),   # (missing on one item)
    ("version", ["0", "1", "2", "1"], False),    # (0: none of them stores it)
    ("qty", ["1", "2", "3", "1"], False),        # (a number not named as a lock)
])
def test_a_lock_is_proposed_only_where_the_items_keep_a_mappers_convention(
        name: str, versions: list[str | None], lock: bool) -> None:
    """An attribute named as a version, an integer N of at least 1 on every item (the
    rule DynamoDBMapper, the Enhanced Client and PynamoDB share) is proposed as the
    entity's ``Meta.lock``; a number with a fraction, missing on an item, at 0, or not
    named as a version is a plain field. The printed model declares the lock."""
    items = [{"PK": s(f"ORDER#o{n}1"), "SK": s("ORDER"), "_type": s("Order"),
              **({name: {"N": v}} if v else {})} for n, v in enumerate(versions)]
    found = infer_model(_table(), None, items)
    want = {"field": name, "first": 1, "step": 1} if lock else None
    assert found.model["entities"][0].get("lock") == want
    (entity,) = _defined(found)["entities"]
    assert entity.get("lock") == want
    assert _decoded(found).placed == len(items)


def test_a_versioned_entitys_own_version_is_no_lock() -> None:
    """dynaorm's own ``Meta.versioned`` keeps its version in ``version``: never a lock."""
    items = [{"PK": s(f"DOC#d{n}"), "SK": s(f"v{n:08d}_DOC" if n else "v0_DOC"),
              "_type": s("Doc"), "version": {"N": str(n + 1)}} for n in range(3)]
    (doc,) = infer_model(_table(), None, items).model["entities"]
    assert doc["versioned"] and doc.get("lock") is None


@pytest.mark.parametrize("name", ["versionNo", "Version"])
def test_a_lock_named_in_another_case_is_proposed(name: str) -> None:
    """A Java bean's lock ``versionNo`` (or an attribute renamed ``Version``), an integer
    N from 1 on every item: proposed, and the printed model declares it."""
    items = [{"PK": s(f"ORDER#o{n}1"), "SK": s("ORDER"), "_type": s("Order"),
              name: {"N": v}} for n, v in enumerate(["1", "2", "3"])]
    found = infer_model(_table(), None, items)
    assert found.model["entities"][0].get("lock") is not None
    (entity,) = _defined(found)["entities"]
    assert entity.get("lock") is not None
