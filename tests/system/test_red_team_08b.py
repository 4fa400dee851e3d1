"""Red team of four changes merged for 0.8, by someone who wrote none of them: the MCP
get/find calls on the event loop (issue 70, :func:`dynaorm.mcp.tools.run` by an AsyncSession), the
receipt digest's shortcuts (key70), the ranking of rule rows by template specificity
(r73, :meth:`KeyTemplate.covers`) and the separator of an inferred model (``_separator``).
Each test states what must never happen. Nothing here depends on the engine: moto only."""

from __future__ import annotations

import asyncio
import enum
import json
import sys
import types
import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any, Literal

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

import dynaorm.mcp
from dynaorm import DynaormError, Entity, IdempotencyMismatchError, Session, Table
from dynaorm.aio.session import AsyncSession
from dynaorm.errors import KeyTemplateError
from dynaorm.mcp.server import prepare
from dynaorm.mcp.tools import check_arguments, message_of, run
from dynaorm.protocol.steps import call
from dynaorm.schema.rules.receipts import digest
from dynaorm.schema.templates import KeyTemplate
from dynaorm.testing import moto_backend, use_tables, worker_suffix
from tests.support.examples import examples
from tests.support.mcp_client import call as mcp_call
from tests.support.mcp_client import text
from tests.support.tenant_models import Customer, tenants

pytestmark = pytest.mark.sync_only  # (each test makes its own sessions, on moto)

_QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    with moto_backend():
        yield


# -- 1. MCP: a get/find on the event loop answers what the threaded path answers ------------
@pytest.fixture(scope="module")
def customers(moto: None) -> Iterator[None]:
    """Customers of two tenants (encrypted cards, a unique email per tenant)."""
    with use_tables(tenants, name_suffix=worker_suffix()):
        with Session(tenants) as s:
            for t in ("t1", "t2"):
                for n in ("c1", "c|2"):
                    s.save(Customer(tenant_id=t, customer_id=n, name=f"{t}-{n}",
                                    email=f"{n}@{t}.EXAMPLE", card=f"SECRET-{t}{n}"))
        yield


def _answer(tool: Any, args: dict[str, Any], scope: dict[str, Any], tools: Any,
            on_loop: bool) -> tuple[str, Any]:
    """What a call answers (its result, or the tool error's text), by the threaded
    server's sync path (``run``) or the event loop's (``run`` by an AsyncSession)."""
    async def read() -> Any:
        return await run(tool, dict(args), AsyncSession(tenants, scope=scope or None),
                          scope, None, tools)
    try:
        check_arguments(tool, args)
        found = (asyncio.run(read()) if on_loop else
                 run(tool, dict(args), Session(tenants, scope=scope or None), scope, None,
                     tools))
    except Exception as exc:  # (a tool error: what the server tells the client)
        return "error", message_of(exc)
    return "ok", found


_value = st.one_of(st.sampled_from(["t1", "t2", "c1", "c|2", "c1@t1.example",
                                    "C|2@T2.EXAMPLE", ""]),
                   st.text(st.sampled_from("ct12#|@.\x00 é"), min_size=1, max_size=6))


@settings(_QUICK, max_examples=examples(40))
@given(scoped=st.sampled_from([None, "t1", "t2"]),
       name=st.sampled_from(["get_customer", "find_customer_by_email"]),
       args=st.dictionaries(st.sampled_from(["tenant_id", "customer_id", "email"]), _value,
                            max_size=3))
@example(scoped="t1", name="get_customer", args={"tenant_id": "t2", "customer_id": "c1"})
@example(scoped="t1", name="find_customer_by_email", args={"email": "C1@t1.example"})
@example(scoped=None, name="get_customer", args={"tenant_id": "t1#CUSTOMER#c1",
                                                 "customer_id": "c1"})
def test_a_get_or_find_on_the_event_loop_answers_what_the_sync_path_answers(
        customers: None, scoped: str | None, name: str, args: dict[str, Any]) -> None:
    """For any arguments (a missing item, hostile key values, another tenant named, an
    argument the tool does not take), with and without a tenant scope: the event loop's
    :func:`run` by an AsyncSession gives the same result or the same tool error text as :func:`run`,
    and never an encrypted value."""
    scope = {} if scoped is None else {"tenant_id": scoped}
    tools, _ = prepare(tenants, scope=scope)
    tool = tools[name]
    args = {k: v for k, v in args.items() if k in tool.input_schema["properties"]}
    threaded = _answer(tool, args, scope, tools, on_loop=False)
    on_loop = _answer(tool, args, scope, tools, on_loop=True)
    assert on_loop == threaded
    assert "SECRET" not in repr(on_loop) and "Traceback" not in repr(on_loop)
    if scoped is not None and on_loop[0] == "ok" and on_loop[1]["item"] is not None:
        assert on_loop[1]["item"]["tenant_id"] == scoped


mcp_odd = Table("red08b_mcp_odd")


class Colour(str, enum.Enum):  # noqa: UP042 (the older spelling: also a str)
    RED = "r"


class Odd(Entity):
    """Values JSON has no plain form for, and numbers at DynamoDB's edges."""

    class Meta:
        table = mcp_odd
        pk = "ODD#{odd_id}"
        sk = "N#{n}"

    odd_id: str
    n: int
    big: int = 0
    small: Decimal = Decimal(0)
    f: float = 0.0
    when: datetime | None = None
    day: date | None = None
    gap: timedelta | None = None
    tags: set[str] = set()
    nums: frozenset[int] = frozenset()
    colour: Colour = Colour.RED
    anything: Any = None


_ODD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("get_odd", {"odd_id": "x", "n": 10**30}), ("get_odd", {"odd_id": "x", "n": 10**400}),
    ("get_odd", {"odd_id": "x", "n": float("nan")}), ("get_odd", {"odd_id": "x", "n": 1e400}),
    ("get_odd", {"odd_id": "\udcff", "n": 1}), ("get_odd", {"odd_id": "x\x00", "n": 1}),
    ("get_odd", {"odd_id": "x#y", "n": 1}), ("get_odd", {"odd_id": "gone", "n": 1}),
]


def test_hostile_stored_values_reach_the_client_alike_on_either_path(moto: None) -> None:
    """A get through the SDK's client of an item holding huge numbers, a tiny Decimal,
    datetimes, sets, a str enum and nested ``Any`` data, and gets with NaN, infinite,
    over-long numbers, lone surrogates and NUL in the key: the server answers each (a
    result whose text is the JSON of its structured content, or a tool error without a
    traceback), and the event loop's answers equal the one-call-at-a-time server's."""
    with use_tables(mcp_odd, name_suffix=worker_suffix()):
        with Session(mcp_odd) as s:
            s.save(Odd(odd_id="x", n=10**30, big=-(10**37), small=Decimal("1E-130"),
                       f=1e125, when=datetime(2020, 1, 1, tzinfo=UTC), day=date(2020, 1, 2),
                       gap=timedelta(days=1, microseconds=3), tags={"a", "b"},
                       nums=frozenset({1, 10**20}),
                       anything={"k": [1, Decimal("1.5"), {"n": None}], "s": {1, 2}}))
        answers = []
        for threads in (True, False):
            results = mcp_call(dynaorm.mcp.server(mcp_odd, threads=threads), *_ODD_CALLS)
            shown = []
            for r in results:
                said = text(r)
                assert "Traceback" not in said
                if not r.is_error:
                    assert json.loads(said) == r.structured_content
                shown.append((r.is_error, said))
            answers.append(shown)
        assert answers[0] == answers[1]
        first = json.loads(answers[0][0][1])["item"]
        assert (first["n"], first["big"], first["small"]) == (10**30, -(10**37), "1E-130")
        assert answers[0][-1] == (False, '{"item":null}')


# -- 2. receipts: the digest tells apart what is stored apart --------------------------------
receipts_table = Table("red08b_receipts")


class Sku(str):
    """A str subclass (as a NewType-like wrapper or a library's string type is)."""


class Size(str, enum.Enum):  # noqa: UP042 (the older spelling: also a str)
    S = "s"
    L = "l"


class Count(int):
    pass


class Part(BaseModel):
    sku: Any = None
    size: Literal["s", "l"] = "s"
    qty: Any = 0


class Order(Entity):
    class Meta:
        table = receipts_table
        pk = "ORDER#{order_id}"
        sk = "ORDER"

    order_id: str
    note: Any = None
    size: Size = Size.S
    price: Decimal = Decimal(0)
    blob: bytes = b""
    tags: set[str] = set()
    parts: list[Part] = []


_text = st.text(st.sampled_from("ab'\"\\é"), max_size=3)
_leaf = st.one_of(_text, st.builds(Sku, _text), st.integers(-3, 3),
                  st.builds(Count, st.integers(-3, 3)),
                  st.sampled_from(list(Size)), st.none(), st.booleans(),
                  st.decimals(allow_nan=False, allow_infinity=False, places=2, min_value=-9,
                              max_value=9), st.binary(max_size=2))
_nested = st.recursive(_leaf, lambda inner: st.one_of(
    st.lists(inner, max_size=3), st.dictionaries(_text, inner, max_size=2),
    st.frozensets(st.one_of(_text, st.integers(0, 3)), max_size=2)), max_leaves=6)
_order = st.builds(
    Order, order_id=st.just("o1"), note=_nested, size=st.sampled_from(list(Size)),
    price=st.decimals(allow_nan=False, allow_infinity=False, places=1, min_value=0,
                      max_value=3),
    blob=st.binary(max_size=2), tags=st.sets(_text, max_size=2),
    parts=st.lists(st.builds(Part, sku=_nested, size=st.sampled_from(["s", "l"]),
                             qty=_leaf), max_size=2))


def _stored(order: Order) -> str:
    """What a save of ``order`` stores, as comparable text."""
    from dynaorm.schema.entity import encode_entity

    spec = Order.__dynaorm_spec__
    item = encode_entity(order, spec, None, spec.primary_key(dict(order)))
    return json.dumps(item, sort_keys=True, default=repr)


@settings(_QUICK, max_examples=examples(200))
@given(a=_order, b=_order)
@example(a=Order(order_id="o1", note=Sku("a")), b=Order(order_id="o1", note=Sku("b")))
@example(a=Order(order_id="o1", note={"k": [Sku("a")]}),
         b=Order(order_id="o1", note={"k": [Sku("b")]}))
@example(a=Order(order_id="o1", note=Count(1)), b=Order(order_id="o1", note=Count(2)))
def test_two_commits_digest_alike_only_when_they_store_alike(a: Order, b: Order) -> None:
    """Two saves whose digests are equal store the same item: a retry under an
    idempotency key is a replay only of the very same write (a ``str`` subclass in an
    ``Any`` field digested as its class name alone, ``?Sku``: any two values alike)."""
    if digest([a]) == digest([b]):
        assert _stored(a) == _stored(b)
    assert digest([a]) == digest([a.model_copy(deep=True)])


def test_a_key_reused_with_another_str_subclass_value_is_refused_not_replayed(
        moto: None) -> None:
    """A keyed save of ``note=Sku("a")``, then the same key with ``Sku("b")``: the second
    is refused as a reused key (it was answered as a replay, writing nothing, the caller
    told its value was stored); the same write again replays."""
    with use_tables(receipts_table, name_suffix=worker_suffix()):
        s = Session(receipts_table)
        s.save(Order(order_id="o1", note=Sku("a")))
        assert s.commit(idempotency_key="k1").replayed is False
        s.save(Order(order_id="o1", note=Sku("a")))
        assert s.commit(idempotency_key="k1").replayed is True
        s.save(Order(order_id="o1", note=Sku("b")))
        with pytest.raises(IdempotencyMismatchError):
            s.commit(idempotency_key="k1")
        s.rollback()
        stored = Session(receipts_table).get(Order, order_id="o1")
        assert stored is not None and stored.note == "a"


# -- 3. rule rows: covers agrees with parse_key --------------------------------------------
_literal = st.sampled_from(["A", "AB", "A#", "AB#", "#", "|", "-", "A|", "A-", "#B", "B",
                            "A#B#", "AUDIT#ORDER#"])
_field = st.tuples(st.sampled_from("xyz"),
                   st.sampled_from(["", ":05d", "!u", "!l", ":>3", ":|>4", ":-<3", "!u:>2"]))
_template = st.lists(st.one_of(_literal, _field), min_size=1, max_size=5).map(
    lambda parts: "".join(p if isinstance(p, str) else "{" + p[0] + p[1] + "}"
                          for p in parts))
_key_value = st.one_of(st.text(st.sampled_from("a#|-1 A"), max_size=4), st.integers(-5, 200))


@settings(_QUICK, max_examples=examples(400))
@given(wide=_template, narrow=_template,
       values=st.fixed_dictionaries({"x": _key_value, "y": _key_value, "z": _key_value}))
@example(wide="AUDIT#{x}#{y}", narrow="AUDIT#ORDER#{z}", values={"x": 0, "y": 0, "z": "1"})
@example(wide="A#{x}", narrow="A#{y}|B", values={"x": 0, "y": "a-b", "z": 0})
def test_a_covered_templates_keys_all_parse_under_the_wider_one(
        wide: str, narrow: str, values: dict[str, Any]) -> None:
    """Random pairs of templates (``#``, ``|``, ``-``; formats, conversions, fill
    characters that are separators; literals that prefix one another): when ``wide``
    covers ``narrow``, every key ``narrow`` renders parses under ``wide``."""
    try:
        a, b = KeyTemplate.parse(wide), KeyTemplate.parse(narrow)
        key = b.render(values)
    except KeyTemplateError:
        return
    assert b.parse_key(key) is not None
    if a.covers(b):
        assert a.parse_key(key) is not None, (wide, narrow, key)


# -- 4. inference: every item it says it placed is read by the model it prints ---------------
def _defined(code: str) -> Table:
    module = types.ModuleType(f"red08b_inferred_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(compile(code, "<inferred>", "exec"), module.__dict__)
    return next(v for v in vars(module).values() if isinstance(v, Table))


def _placed_and_read(items: list[dict[str, Any]]) -> tuple[int, int]:
    """How many of ``items`` (put raw in a fresh table) inference says it placed, and how
    many the printed model's entities read back (a scan of each); ``dynaorm check`` with
    that model claims every item inference placed and names each it did not (contract 24:
    check reports unclaimed items on a table without a type attribute too)."""
    from dynaorm.client.infer import infer_code
    from dynaorm.jobs.checking import check_table

    copied = Table(f"red08b_infer_{uuid.uuid4().hex[:8]}",
                   key_types={"pk": next(iter(items[0]["pk"]))})
    with use_tables(copied, name_suffix=worker_suffix()):
        for item in items:
            copied.db.driver.run(call("PutItem", {"TableName": copied.name, "Item": item}))
        code, model = infer_code(copied.name, report=None)
        inferred = _defined(code)
        assert inferred.type_attribute is None, code  # (the items hold none)
        inferred.connect(None)
        with Session(inferred) as s:
            read = sum(len(s.scan(cls).all()) for cls in inferred.entities.values())
        unclaimed = check_table(inferred).unclaimed
        assert sum(unclaimed.values()) == model["inferred"]["unplaced"]["count"], (
            unclaimed, model["inferred"])
        return model["inferred"]["placed"], read


def _s(text: str) -> dict[str, str]:
    return {"S": text}


def _key(pk: str, sk: str, n: int = 0) -> dict[str, Any]:
    return {"pk": _s(pk), "sk": _s(sk), "x": _s(str(n))}


@pytest.mark.parametrize("items", [
    [_key("USER|1", "NOTE|a#b"), _key("USER|2", "NOTE|c"), _key("USER|3", "NOTE|d")],
    [_key("USER#a|b", "NOTE#1"), _key("USER#c", "NOTE#2")],
    [_key("USER|1", "PROFILE"), _key("USER|2", "PROFILE"), _key("ORDER#1", "ITEM#1"),
     _key("ORDER#2", "ITEM#2"), _key("ORDER#3", "ITEM#3")],
    [_key("alpha", "beta"), _key("gamma", "delta"), _key("USER|1", "A|b")],
    [{"pk": {"N": "1"}, "sk": _s("A|1")}, {"pk": {"N": "22"}, "sk": _s("A|2#3")}],
], ids=["pipe-table-hash-in-value", "hash-table-pipe-in-value", "mixed", "neither",
        "number-pk"])
def test_every_item_inference_placed_is_read_by_the_inferred_model(
        moto: None, items: list[dict[str, Any]]) -> None:
    """Tables mixing ``#`` and ``|`` keys, ``#`` inside the values of a ``|`` table and
    the reverse, keys with neither: each item the report counts as placed is read by the
    printed model (``USER|1``/``NOTE|a#b`` was counted placed under ``NOTE|{note_id}``,
    a template whose field never holds ``#``: no read returned it)."""
    placed, read = _placed_and_read(items)
    assert read == placed


def test_an_inferred_model_of_mixed_separators_reads_what_it_placed(moto: None) -> None:
    """``USER|1``/``A`` and ``USER#1``/``A`` were inferred as two entities that overlap
    unranked (``{pk}``/``A`` beside ``USER|{x}``/``A``); import then gave the table the
    type attribute ``_type``, which no item holds: 2 said placed, none read. Now the
    wider entity takes the narrower's items: both placed, both read."""
    placed, read = _placed_and_read([_key("USER|1", "A", 1), _key("USER#1", "A", 1),
                                     _key("USER#1|2", "B|x", 1)])
    assert read == placed == 2


_part = st.sampled_from(["USER", "ORDER", "A", "B", "root", "Item", "1", "2", "x", "a-b",
                         "USER#1", "c|d"])
_mixed_key = st.lists(st.tuples(st.sampled_from(["#", "|"]), _part), min_size=1,
                      max_size=3).map(lambda parts: "".join(s + p for s, p in parts)[1:])


@settings(_QUICK, max_examples=examples(30))
@given(keys=st.lists(st.tuples(_mixed_key, _mixed_key), min_size=1, max_size=7,
                     unique=True), n=st.integers(0, 3))
@example(keys=[("USER|1", "A"), ("USER#1", "A"), ("USER#1|2", "B|x")], n=1)
@example(keys=[("USER#1", "A"), ("USER#2", "A"), ("USER|1", "A")], n=0)
@example(keys=[("A", "1"), ("A", "B"), ("x|1", "B")], n=2)
def test_random_mixed_tables_read_what_inference_placed(moto: None,
                                                        keys: list[tuple[str, str]],
                                                        n: int) -> None:
    """Random tables of keys joined by ``#`` and ``|`` (values holding the other): the
    items the report counts placed are exactly the items the printed model reads, and
    the printed model defines as inferred (no type attribute the items lack)."""
    placed, read = _placed_and_read([_key(pk, sk, n + i % 2) for i, (pk, sk) in
                                     enumerate(keys)])
    assert read == placed


_audit_pk = st.lists(st.one_of(st.sampled_from(["AUDIT", "ORDER", "AUDIT#", "#", "|", "-",
                                                "ORD", "AUDIT#ORDER#", "R"]),
                               st.tuples(st.sampled_from(["kind", "ref", "oid"]),
                                         st.sampled_from(["", "!u", "!l"]))),
                     min_size=1, max_size=5).map(
    lambda parts: "".join(p if isinstance(p, str) else "{" + p[0] + p[1] + "}"
                          for p in parts))


@settings(_QUICK, max_examples=examples(25))
@given(pk=_audit_pk, oid=st.sampled_from(["1", "a-b", "x|y"]))
@example(pk="AUDIT#{kind}#{ref}", oid="1")
@example(pk="AUDIT#ORDER#{ref}", oid="1")
@example(pk="AUDIT#{kind}#1", oid="1")
@example(pk="{kind}", oid="1")
@example(pk="AUDIT#ORDER#1", oid="1")
@example(pk="AUDIT#ORDER#{ref!u}", oid="a-b")
def test_an_entity_beside_a_rule_row_kind_is_ranked_or_refused(moto: None, pk: str,
                                                                oid: str) -> None:
    """An entity keyed ``pk`` beside an audited entity whose rule writes rows keyed
    ``AUDIT#ORDER#{oid}`` on a table without a type attribute: defining it is refused
    exactly when the shapes could fit one key and neither covers the other; once
    defined, the audit row an audited save writes is claimed once (the entity's reads
    return it only when its templates are narrower) and ``dynaorm check`` finds nothing."""
    from dynaorm import DynaormError
    from dynaorm.jobs.checking import check_table
    from dynaorm.schema.checks import could_overlap
    from dynaorm.schema.rules import RULES, register_rule
    from tests.system.test_red_team_073 import Red73Audit, _keyed

    try:
        mine = KeyTemplate.parse(pk)
    except KeyTemplateError:
        return
    row = KeyTemplate.parse("AUDIT#ORDER#{oid}")
    ranked = mine.covers(row) != row.covers(mine)
    register_rule(Red73Audit)
    try:
        home = Table(f"red08b-ranked-{uuid.uuid4().hex[:8]}", type_attribute=None)
        audited = _keyed(home, "Red73AuditedThing", "ORDER#{oid}", "ORDER")
        try:
            other = _keyed(home, "Red08bOther", pk, "{what}#{a}#{b}")
        except DynaormError as exc:
            assert could_overlap(row, mine) and not ranked, (pk, exc)
            return
        assert not could_overlap(row, mine) or ranked, pk
        with use_tables(home, name_suffix=worker_suffix()):
            with Session(home) as s:
                s.save(audited(oid=oid))
            seen = Session(home).scan(other).all()
            wins = ranked and row.covers(mine)  # (the entity's shape is the narrower)
            key = row.render({"oid": oid})
            assert len(seen) == (1 if wins and mine.parse_key(key) is not None else 0), pk
            assert check_table(home).problems == []
    finally:
        RULES.pop(Red73Audit.name, None)


# -- 5. a save that succeeds is read back: never claimed by a rule's row kind ---------------
_part = st.one_of(st.sampled_from(["ORDER", "AUDIT", "insert", "update", "delete", "1",
                                   "000000", "K", "w"]),
                  st.text(st.sampled_from("ORDE1a-|#"), min_size=1, max_size=5))


@pytest.fixture(scope="module")
def ledgers(moto: None) -> Iterator[dict[str, tuple[Table, Any, Any]]]:
    """The ``ruled`` shapes of the red team of r73 (moto): on a table with and one without a
    type attribute, an audited order whose rule writes ``AUDIT#ORDER#{oid}`` /
    ``<what>#ORDER#<n>`` rows (no sort key shape of its own), and a ledger keyed
    ``AUDIT#{kind}#{ref}`` / ``{what}#{a}#{b}``, wider than those rows."""
    from dynaorm.schema.rules import RULES, register_rule
    from tests.system.test_red_team_073 import Red73Audit, _keyed

    register_rule(Red73Audit)
    try:
        made = {}
        for label, attr in (("typed", "_type"), ("untyped", None)):
            home = Table(f"red08b-ledger-{label}", type_attribute=attr)
            made[label] = (home, _keyed(home, "Red73AuditedOrder", "ORDER#{oid}", "ORDER"),
                           _keyed(home, "Red08bLedger", "AUDIT#{kind}#{ref}",
                                  "{what}#{a}#{b}"))
        with use_tables(*(m[0] for m in made.values()), name_suffix=worker_suffix()):
            yield made
    finally:
        RULES.pop(Red73Audit.name, None)


@settings(_QUICK, max_examples=examples(60))
@given(label=st.sampled_from(["typed", "untyped"]), oid=_part,
       values=st.fixed_dictionaries({k: _part for k in ("kind", "ref", "what", "a", "b")}))
@example(label="untyped", oid="1", values={"kind": "ORDER", "ref": "1", "what": "w",
                                           "a": "a", "b": "b"})
@example(label="untyped", oid="1", values={"kind": "ORDER", "ref": "1", "what": "insert",
                                           "a": "ORDER", "b": "000000"})
def test_a_save_that_succeeds_is_read_back_by_get_and_by_a_scan(
        ledgers: dict[str, tuple[Table, Any, Any]], label: str, oid: str,
        values: dict[str, str]) -> None:
    """For any key values (the rule's own kind ``ORDER``, its ``insert``/``delete`` sort
    keys, separators): a ledger save that succeeds is read back by a get and returned by
    a scan of the ledger, and the audit rows the rule writes beside it stay the rule's
    (``Red73Ledger`` keyed ``AUDIT#ORDER#1``/``w#a#b`` on a table without a type
    attribute was stored, told it was, and never read back: the rule's row kind, ranked
    on its partition key alone, claimed it)."""
    from dynaorm.jobs.checking import check_table

    home, audited, ledger = ledgers[label]
    try:
        with Session(home) as s:
            s.save(audited(oid=oid))
    except DynaormError:
        pass  # (an order id no key holds)
    try:
        obj = ledger(**values)
        with Session(home) as s:
            s.save(obj)
    except DynaormError:  # (refused: a key the rule claims, or one stored already)
        return
    s = Session(home)
    assert s.get(ledger, **values) == obj
    assert obj in s.scan(ledger).all()
    assert check_table(home).problems == []
