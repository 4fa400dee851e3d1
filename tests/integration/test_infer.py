"""``dynaorm.infer`` and ``dynaorm model --infer`` (contract 23, "Tables you already
have") on live tables: published single-table designs written raw with boto3 (scored
against hand-written models, the score printed per design), tables dynaorm wrote (unique
guards, versions, TTL; and random models, a hypothesis property), the code it prints run
and checked with ``dynaorm check``, every request it sends captured (it writes nothing),
and bad input. The pure inference is :mod:`dynaorm.formats.infer`; ``unit/test_infer.py``
holds what needs no table."""

from __future__ import annotations

import contextlib
import copy
import importlib.util
import io
import json
import os
import subprocess
import sys
import types
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, Phase, example, given, settings
from hypothesis import strategies as st

from dynaorm import DynaormError, Session, Table
from dynaorm.cli.main import main
from dynaorm.client.infer import EndpointUnreachableError, infer, infer_code, unplaced_note
from dynaorm.formats import FORMATS
from dynaorm.formats.infer import InferenceError
from dynaorm.jobs.checking import check_table
from dynaorm.protocol.steps import call
from dynaorm.testing import moto_backend, use_tables, worker_suffix
from tests.support import published as published_designs
from tests.support.designs import DESIGNS, design
from tests.support.engines import identify
from tests.support.examples import examples
from tests.support.other_writers import ENHANCED, MAPPER_V1, PYNAMODB, Mapper, Refused
from tests.support.published import (
    EXPECTED,
    boto_client,
    create_raw,
    load,
    matched,
    score,
    structure,
    value_of,
)

# (sync only: botocore events on a plain boto3 client)
# (moto and DynamoDB Local where the engine's answers are asserted: its errors, pages,
# capacity, TTL, indexes and legacy conditions; moto alone where what inference makes of
# the items is the subject, marked)
pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto", "local")]

READS = {"DescribeTable", "DescribeTimeToLive", "Scan"}


@pytest.fixture
def raw(backend: str | None) -> Iterator[tuple[Any, list[str]]]:
    """A boto3 client of the engine and the tables a test creates on it (deleted after)."""
    client = boto_client(backend)
    made: list[str] = []
    yield client, made
    for name in made:
        with contextlib.suppress(Exception):
            client.delete_table(TableName=name)


def _name(base: str) -> str:
    return f"infer-{base}-{uuid.uuid4().hex[:6]}{worker_suffix()}".replace("_", "-")


def _design(raw: tuple[Any, list[str]], design: str) -> str:
    client, made = raw
    name = _name(design)
    made.append(name)
    create_raw(client, name, load(design))
    return name


def _defined(code: str) -> Table:
    module = types.ModuleType(f"inferred_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module  # (pydantic resolves annotations through it)
    exec(compile(code, "<inferred>", "exec"), module.__dict__)
    return next(v for v in vars(module).values() if isinstance(v, Table))


def _canon(item: Any) -> str:
    """An item's text whatever order the engine gives its attributes in (dynoxide's
    scans order them anew)."""
    return json.dumps(item, sort_keys=True, default=repr)


def _scan(client: Any, name: str) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    kwargs: dict[str, Any] = {"TableName": name, "ConsistentRead": True}
    while True:
        page = client.scan(**kwargs)
        items += page["Items"]
        if "LastEvaluatedKey" not in page:
            return sorted(items, key=_canon)
        kwargs["ExclusiveStartKey"] = page["LastEvaluatedKey"]


# -- published designs ---------------------------------------------------------------------
@pytest.mark.engines("moto")  # (what it proves does not depend on the engine)
def test_published_designs_score(raw: tuple[Any, list[str]],
                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Published designs of several origins (AWS samples, NoSQL Workbench models, items
    ElectroDB and DynamoDB-Toolbox write), written raw, score on entities (table key
    templates by structure), their indexes (templates, or native keys the entity's fields
    are stored as) and their fields' types, against the designs' own descriptions; every
    item placed (decoded by the printed model). The floors hold what 0.9 reaches (issue
    82: 32/34 entities, 24/33 indexes, 110/118 fields; 0.8's inference 32, 24 and 107)."""
    lines, totals = [], [0] * 6
    for published in EXPECTED:
        name = _design(raw, published)
        model = infer(name, client=raw[0], report=None)
        got = score(published, model)
        parts = (got.entities, got.indexes, got.fields)
        totals = [t + v for t, v in zip(totals, (n for part in parts for n in part),
                                          strict=True)]
        lines.append(f"{published:24} " + "  ".join(
            f"{what} {hit}/{count}" for what, (hit, count) in zip(
                ("entities", "indexes", "fields"), parts, strict=True))
            + (f"  missed {got.missed}" if got.missed else ""))
        assert model["inferred"]["unplaced"]["count"] == 0, model["inferred"]
    e, ei, i, ii, f, fi = totals
    with capsys.disabled():
        print("\ninferred published designs:\n  " + "\n  ".join(lines)
              + f"\n  all: entities {e}/{ei}, indexes {i}/{ii}, fields {f}/{fi}")
    assert len(EXPECTED) >= 11
    assert e >= 0.9 * ei and i >= 0.7 * ii and f >= 0.9 * fi, (totals, lines)


#: the index entries ``dynaorm check`` finds the data and the inferred model disagree on:
#: the online shop's second warehouse item, left out of GSI2 by the published data; the
#: Meetinger users and attendees, read as meetings (inference cannot tell a bare meeting id
#: from a user's key there), whose index entries the model does not render
STALE = {"online_shop": 1, "meetinger": 2}


@pytest.mark.parametrize("design", sorted(EXPECTED))
def test_code_runs_and_check_claims_every_placed_item(raw: tuple[Any, list[str]],
                                                      backend: str | None, design: str) -> None:
    """The printed code defines the model, and ``dynaorm check`` with it claims every
    item of the table (all of them placed) and finds nothing wrong but the index entries
    of :data:`STALE` (an item its entity's other items say is in an index, left out of
    it: dynaorm renders an index entry from the fields)."""
    name = _design(raw, design)
    code, model = infer_code(name, client=raw[0], report=None)
    assert model["inferred"]["placed"] == len(load(design)["TableData"])
    table = _defined(code)
    assert table.name == name
    table.connect(backend, "us-east-1")
    result = check_table(table)
    assert result.scanned == len(load(design)["TableData"])
    assert result.unclaimed == {}
    stale = [str(p) for p in result.problems if str(p).startswith("stale-index")]
    assert [str(p) for p in result.problems if str(p) not in stale] == []
    assert len(stale) == STALE.get(design, 0), stale
    # every entity reads its items back
    assert structure([e["pk"] for e in table.model()["entities"]]) == structure(
        [e["pk"] for e in model["entities"]])


@pytest.mark.engines("moto")  # (what it proves does not depend on the engine)
def test_nothing_is_written(raw: tuple[Any, list[str]]) -> None:
    """Every request inference sends is a read (captured at botocore), and the table
    holds what it held."""
    client = raw[0]
    name = _design(raw, "online_shop")
    before = _scan(client, name)
    sent: list[str] = []

    def record(model: Any, **_: Any) -> None:
        sent.append(model.name)

    client.meta.events.register("before-call.dynamodb", record)
    try:
        infer(name, client=client, sample=7, report=None)
        infer_code(name, client=client, report=None)
    finally:
        client.meta.events.unregister("before-call.dynamodb", record)
    assert set(sent) <= READS and {"DescribeTable", "DescribeTimeToLive", "Scan"} <= set(sent)
    assert _scan(client, name) == before


def test_sample_bounds_the_scan(raw: tuple[Any, list[str]]) -> None:
    name = _design(raw, "social_network")
    model = infer(name, client=raw[0], sample=5, report=None)
    assert model["inferred"]["sampled"] == 5


def test_consumed_capacity_reported(raw: tuple[Any, list[str]]) -> None:
    name = _design(raw, "chat_system")
    report = io.StringIO()
    infer(name, client=raw[0], report=report)
    assert "scanned 8 items" in report.getvalue()
    assert "read capacity units consumed" in report.getvalue()


# -- the project's own designs ------------------------------------------------------------
@pytest.mark.engines("moto")  # (what it proves does not depend on the engine)
def test_project_designs_score(backend: str | None, capsys: pytest.CaptureFixture[str]) -> None:
    """Every table of the examples and the suite's designs (tests/support/designs.py),
    written by dynaorm with three objects of each entity, is inferred back: at least 90%
    of the entities with their templates (by structure). A design whose objects this
    test cannot make or save (a vector index moto lacks, a value its rules refuse) is
    named, not scored."""
    hits = total = 0
    lines, skipped = [], []
    for ref in DESIGNS:
        table = design(ref)
        classes = list(dict.fromkeys(table._own[0].values()))
        count = len(table.model()["entities"])
        with contextlib.ExitStack() as stack:
            try:
                tb = stack.enter_context(use_tables(table, endpoint_url=backend,
                                                   name_suffix=worker_suffix()))
                s = tb.session()
                for cls in classes:
                    for n in range(3):
                        s.save(cls(**{k: value_of(f.annotation, n, k)
                                      for k, f in cls.model_fields.items()}))
                    s.commit()
            except (TypeError, DynaormError, ValueError) as exc:
                skipped.append(f"{ref} ({type(exc).__name__})")
                continue
            try:
                model = infer(table.name, client=table.client, report=None)
            except DynaormError as exc:  # (counted: every entity missed)
                model = {"table": {}, "entities": []}
                lines.append(f"{ref}: not inferred: {exc}"[:160])
        hit, missed = matched(table.model(), model)
        hits, total = hits + hit, total + count
        if missed:
            lines.append(f"{ref}: {hit}/{count}, missed {missed}")
    with capsys.disabled():
        print(f"\ninferred project designs: {hits}/{total} entities"
              + "".join(f"\n  {line}" for line in lines)
              + f"\n  not written: {', '.join(skipped) or 'none'}")
    assert total >= 60 and hits >= 0.9 * total


# -- what dynaorm wrote: unique guards, versions, TTL --------------------------------------
_RULES = '''
import datetime as dt
from dynaorm import Entity, Table
shop = Table({name!r}, ttl="expires")

class Customer(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{{customer_id}}"
        sk = "PROFILE"
        unique = ("email",)
    customer_id: str
    email: str
    visits: int = 0

class Order(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{{customer_id}}"
        sk = "ORDER#{{order_id}}"
        versioned = True
    customer_id: str
    order_id: str
    total: float
    placed_at: dt.datetime
    tags: set[str] = set()

class Session(Entity):
    class Meta:
        table = shop
        pk = "SESSION#{{token}}"
        sk = "SESSION"
    token: str
    expires: dt.datetime
'''


def test_guards_versions_and_ttl(backend: str | None) -> None:
    """A table dynaorm wrote: its unique guards become ``unique`` rules, ``v0_``/``v<n>_``
    rows a versioned entity, the TTL attribute its field, the types read back."""
    from datetime import UTC, datetime, timedelta

    module = types.ModuleType(f"rules_model_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module  # (pydantic resolves annotations through it)
    exec(_RULES.format(name=_name("rules")), module.__dict__)
    shop = module.shop
    with use_tables(shop, endpoint_url=backend) as tb:
        s = tb.session()
        now = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
        for n in range(3):
            s.save(module.Customer(customer_id=f"c{n}1", email=f"u{n}@x.com", visits=n))
            order = module.Order(customer_id=f"c{n}1", order_id=f"o{n}9", total=n + 0.5,
                                 placed_at=now, tags={"a", f"t{n}"})
            s.save(order)
            later = now + timedelta(days=36500)  # (not expired: an expired item is not read)
            s.save(module.Session(token=f"tk{n}7", expires=later))
        s.commit()
        order.total = 9.5
        s.save(order)
        s.commit()
        model = infer(shop.name, client=shop.client, report=None)
    entities = {e["type_name"]: e for e in model["entities"]}
    assert model["table"]["type_attribute"] == "_type"
    assert model["table"]["ttl"] == "expires"
    assert sorted(entities) == ["Customer", "Order", "Session"]
    assert [(u["field"], u["prefix"]) for u in entities["Customer"]["unique"]] == [
        ("email", "email")]
    assert entities["Order"]["versioned"] is True
    assert (entities["Order"]["pk"], entities["Order"]["sk"]) == (
        "CUSTOMER#{customer_id}", "ORDER#{order_id}")
    assert entities["Session"]["ttl_field"] == "expires"
    types_of = {f["stored"]: f for f in entities["Order"]["fields"]}
    assert types_of["placed_at"]["type"] == "datetime"
    assert types_of["total"]["type"] == "decimal"
    assert types_of["tags"]["type"] == "set"
    assert {f["stored"]: f["type"] for f in entities["Customer"]["fields"]}["visits"] == (
        "integer")
    assert model["inferred"]["unplaced"]["count"] == 0


# -- random models written by dynaorm -------------------------------------------------------
_TAGS = st.sampled_from(["USER", "ORDER", "ITEM", "ORG", "TEAM", "DOC", "NOTE", "EVENT"])


@st.composite
def _models(draw: st.DrawFn) -> list[tuple[str, ...]]:
    """Entities as (pk, sk[, gsi1 pk, gsi1 sk]) templates of distinct literal shapes."""
    out: list[tuple[str, ...]] = []
    sep = draw(st.sampled_from(["#", "|"]))  # (a table's keys join their parts one way)
    count = draw(st.integers(1, 4))
    tags = draw(st.lists(_TAGS, min_size=count + 1, max_size=count + 1, unique=True))
    for n in range(count):
        tag = tags[n]
        pk = draw(st.sampled_from([f"{tag}#{{a}}", f"{tags[-1]}#{{a}}#{tag}#{{b}}"]))
        sk = draw(st.sampled_from([tag, f"{tag}#{{c}}", "META", f"{{c}}#{tag}"]))
        index = draw(st.sampled_from([(), (f"{tag}#{{b}}", "{c}"), ("ALL", f"{tag}#{{a}}"),
                                      (f"{{b}}#{tag}", f"{tag}#{{c}}#{{a}}")]))
        out.append(tuple(t.replace("#", sep) for t in (pk, sk, *index)))
    return out


def _entity_source(n: int, templates: tuple[str, ...], table: str) -> str:
    names = sorted({f for t in templates for f in ("a", "b", "c") if "{" + f + "}" in t})
    fields = "".join(f"    {f}: str\n" for f in names)
    index = (f"        indexes = {{'gsi1': {templates[2:]!r}}}\n" if len(templates) > 2
             else "")
    return (f"class E{n}(Entity):\n    class Meta:\n        table = {table}\n"
            f"        pk = {templates[0]!r}\n        sk = {templates[1]!r}\n{index}"
            f"{fields}    note: str = ''\n")


@pytest.mark.engines("moto")  # (what it proves does not depend on the engine)
@given(model=_models(), data=st.data())
@settings(max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                 HealthCheck.function_scoped_fixture])
def test_random_model_round_trip(backend: str | None, model: list[tuple[str, ...]],
                                 data: st.DataObject) -> None:
    """A table dynaorm wrote from a random model is inferred back to the same templates
    (field names may differ), whichever of ``#`` and ``|`` its keys join their parts
    with."""
    source = ("from dynaorm import GSI, Entity, Table\n"
              f"t = Table({_name('rt')!r}, indexes=[GSI('gsi1', pk='gsi1pk', sk='gsi1sk')])\n")
    source += "".join(_entity_source(n, templates, "t") for n, templates in enumerate(model))
    module = types.ModuleType(f"random_model_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(source, module.__dict__)
    ids = st.from_regex(r"[a-z0-9]{0,6}[0-9]", fullmatch=True)
    with use_tables(module.t, endpoint_url=backend) as tb:
        s = tb.session()
        for n in range(len(model)):
            for _ in range(data.draw(st.integers(1, 3))):
                # (distinct ids in one item: one value in two fields cannot be told from
                # one field in two places)
                drawn = data.draw(st.lists(ids, min_size=3, max_size=3, unique=True))
                values = dict(zip(("a", "b", "c"), drawn, strict=True))
                cls = getattr(module, f"E{n}")
                s.save(cls(**{k: v for k, v in values.items() if k in cls.model_fields}))
        s.commit()
        found = infer(module.t.name, client=module.t.client, report=None)
    want = sorted(structure(templates) for templates in model)
    got = sorted(structure([e["pk"], e["sk"], *(t for i in e["indexes"] for t in (
        i["pk"], i["sk"]))]) for e in found["entities"])
    assert got == want


# -- the command ---------------------------------------------------------------------------
def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["model", *args])
    return code, out.getvalue(), err.getvalue()


def _where(backend: str | None) -> list[str]:
    return ["--region", "us-east-1", *(["--endpoint", backend] if backend else [])]


@pytest.mark.engines("moto")  # (what it proves does not depend on the engine)
def test_cli_every_format(raw: tuple[Any, list[str]], backend: str | None) -> None:
    name = _design(raw, "session_management")
    for fmt in (*FORMATS, "code"):
        code, out, err = _cli("--infer", name, "--format", fmt, *_where(backend))
        assert code == 0, err
        assert out.strip()
        assert "read capacity units consumed" in err
    code, out, _ = _cli("--infer", name, "--sample", "3", *_where(backend))
    assert code == 0 and '"sampled": 3' in out


@pytest.mark.engines("moto")  # (what it proves does not depend on the engine)
def test_cli_code_imports_and_runs(raw: tuple[Any, list[str]], backend: str | None,
                                   tmp_path: Path) -> None:
    name = _design(raw, "online_shop")
    code, out, err = _cli("--infer", name, "--format", "code", *_where(backend))
    assert code == 0, err
    path = tmp_path / "inferred_shop.py"
    path.write_text(out, encoding="utf-8")
    done = subprocess.run([sys.executable, "-c", "import inferred_shop as m; "
                           "print(len(m.__dict__['" + _var(out) + "'].model()['entities']))"],
                          cwd=tmp_path, capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": str(Path(__file__).resolve().parents[2]),
                               "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "9"


def _var(code: str) -> str:
    return next(line.split(" = ")[0] for line in code.splitlines() if "_d.Table(" in line)


# -- bad input -----------------------------------------------------------------------------
def test_no_table(raw: tuple[Any, list[str]], backend: str | None) -> None:
    with pytest.raises(InferenceError, match="no table named"):
        infer("infer-missing-table", client=raw[0], report=None)
    code, _, err = _cli("--infer", "infer-missing-table", *_where(backend))
    assert code == 2 and "no table named 'infer-missing-table'" in err


def test_empty_table(raw: tuple[Any, list[str]], backend: str | None) -> None:
    client, made = raw
    name = _name("empty")
    made.append(name)
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "S"}])
    with pytest.raises(InferenceError, match="has no items"):
        infer(name, client=client, report=None)
    code, _, err = _cli("--infer", name, *_where(backend))
    assert code == 2 and "has no items" in err


def test_binary_keys(raw: tuple[Any, list[str]], backend: str | None) -> None:
    client, made = raw
    name = _name("binary")
    made.append(name)
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "B"}])
    client.put_item(TableName=name, Item={"pk": {"B": b"\x01\x02"}})
    with pytest.raises(InferenceError, match="binary key attributes"):
        infer(name, client=client, report=None)
    code, _, err = _cli("--infer", name, *_where(backend))
    assert code == 2 and "binary key attributes (pk)" in err


def test_dead_endpoint() -> None:
    with pytest.raises(EndpointUnreachableError, match="cannot reach DynamoDB"):
        infer("any-table", endpoint_url="http://127.0.0.1:9", region="us-east-1",
              report=None)
    code, _, err = _cli("--infer", "any-table", "--endpoint", "http://127.0.0.1:9",
                        "--region", "us-east-1")
    assert code == 1 and "cannot reach DynamoDB" in err


def test_cli_refuses_two_sources() -> None:
    code, _, err = _cli("examples.key_layouts:shop", "--infer", "x-table")
    assert code == 2 and "--infer TABLE" in err
    code, _, err = _cli("--infer", "x-table", "--sample", "0")
    assert code == 2 and "--sample must be at least 1" in err


# -- issue 82: an attribute stored as S on some items and N on others ------------------------
def test_two_typed_attribute_round_trips(raw: tuple[Any, list[str]], backend: str | None) -> None:
    """Items another writer stored with ``user_id`` and ``zip`` as ``S`` on some and ``N``
    on others: the printed model's scan reads every item, and a save of each (another
    attribute changed) writes each back with its tag, number spelling and text (raw
    GetItem compared); a value set anew is written with its own type's tag."""
    client, made = raw
    name = _name("twotyped")
    made.append(name)
    client.create_table(TableName=name, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"},
                                   {"AttributeName": "SK", "KeyType": "RANGE"}],
                        AttributeDefinitions=[{"AttributeName": "PK", "AttributeType": "S"},
                                              {"AttributeName": "SK", "AttributeType": "S"}])
    items = [{"PK": {"S": f"USER#{n}"}, "SK": {"S": "PROFILE"},
              "user_id": {"S": str(n)} if n % 2 else {"N": str(n)},
              "zip": {"S": "0123"} if n % 2 else {"N": "5.50"}, "note": {"S": "x"},
              "created_at": {"N": str(1_700_000_000 + n)}} for n in range(6)]
    for item in items:
        client.put_item(TableName=name, Item=item)
    # (as the engine stores them: DynamoDB Local spells 5.50 as 5.5)
    items = [client.get_item(TableName=name, Key={"PK": i["PK"], "SK": i["SK"]},
                             ConsistentRead=True)["Item"] for i in items]
    code, model = infer_code(name, client=client, report=None)
    assert model["inferred"]["placed"] == 6
    table = _defined(code)
    table.connect(backend, "us-east-1")
    from dynaorm import Session

    with Session(table) as s:
        objs = [o for cls in table.entities.values() for o in s.scan(cls).all()]
        assert len(objs) == 6
        for obj in objs:
            obj.note = "changed"
            s.save(obj)
        s.commit()
    for item in items:
        got = client.get_item(TableName=name, Key={"PK": item["PK"], "SK": item["SK"]},
                              ConsistentRead=True)["Item"]
        got.pop("_rev", None)
        assert got == {**item, "note": {"S": "changed"}}
    with Session(table) as s:
        (obj,) = [o for o in s.scan(next(iter(table.entities.values()))).all()
                  if o.user_id == 0]  # (stored as N 0)
        obj.user_id = "7"
        s.save(obj)
        s.commit()
    got = client.get_item(TableName=name, Key={"PK": items[0]["PK"], "SK": items[0]["SK"]},
                          ConsistentRead=True)["Item"]
    assert got["user_id"] == {"S": "7"} and got["zip"] == items[0]["zip"]



# -- issue 89: times in the forms other writers store them ---------------------------------
def test_changed_times_and_booleans_are_written_back_in_the_form_seen(
        raw: tuple[Any, list[str]], backend: str | None) -> None:
    """Times other writers stored (Java's ``Date`` as ``...05.123Z`` in a native index's
    sort key, ``Instant.toString()`` with 0, 3, 6 or 9 fraction digits, naive ISO, nine
    fraction digits) and a boolean stored as the number 1 or 0: the inferred model reads
    them as datetimes and a bool, and a changed value is written back in the form seen
    (never ``+00:00``, never ``BOOL``), the index still finding the item."""
    import datetime as dt

    from dynaorm import Session

    client, made = raw
    name = _name("times")
    made.append(name)
    client.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "PK", "KeyType": "HASH"},
                   {"AttributeName": "SK", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"}
                              for a in ("PK", "SK", "owner", "placedAt")],
        GlobalSecondaryIndexes=[{"IndexName": "byOwner", "Projection": {"ProjectionType": "ALL"},
                                 "KeySchema": [{"AttributeName": "owner", "KeyType": "HASH"},
                                               {"AttributeName": "placedAt",
                                                "KeyType": "RANGE"}]}])
    fractions = ("", ".120", ".123456", ".123456789")
    for n in range(4):
        client.put_item(TableName=name, Item={
            "PK": {"S": f"ORDER#o{n}x"}, "SK": {"S": "ORDER"}, "owner": {"S": f"c{n}x"},
            "placedAt": {"S": f"2020-04-24T14:4{n}:05.123Z"},
            "seen": {"S": f"2020-04-24T14:40:05{fractions[n]}Z"},
            "naive": {"S": f"2020-04-24T14:4{n}:00"},
            "nanos": {"S": f"2020-04-24T14:40:05.12345678{n}Z"}, "isActive": {"N": str(n % 2)}})
    code, model = infer_code(name, client=client, report=None)
    assert model["inferred"]["placed"] == 4
    table = _defined(code)
    table.connect(backend, "us-east-1")
    (cls,) = table.entities.values()
    at = dt.datetime(2021, 5, 6, 7, 8, 9, 250000, tzinfo=dt.UTC)
    with Session(table) as s:
        (obj,) = [o for o in s.scan(cls).all() if o.owner == "c1x"]
        assert isinstance(obj.placed_at, dt.datetime) and isinstance(obj.naive, dt.datetime)
        assert obj.is_active is True
        obj.placed_at = obj.seen = obj.naive = obj.nanos = at
        obj.is_active = False
        s.save(obj)
        s.commit()
    got = client.get_item(TableName=name, Key={"PK": {"S": "ORDER#o1x"}, "SK": {"S": "ORDER"}},
                          ConsistentRead=True)["Item"]
    assert {a: got[a]["S"] for a in ("placedAt", "seen", "naive", "nanos")} == {
        "placedAt": "2021-05-06T07:08:09.250Z", "seen": "2021-05-06T07:08:09.250000Z",
        "naive": "2021-05-06T07:08:09", "nanos": "2021-05-06T07:08:09.250000000Z"}
    assert got["isActive"] == {"N": "0"}
    found = client.query(TableName=name, IndexName="byOwner",
                         KeyConditionExpression="#o = :o AND placedAt = :t",
                         ExpressionAttributeNames={"#o": "owner"},
                         ExpressionAttributeValues={":o": {"S": "c1x"},
                                                    ":t": {"S": "2021-05-06T07:08:09.250Z"}})
    assert found["Count"] == 1



# -- issue 89: another writer's optimistic lock --------------------------------------------
@pytest.mark.parametrize("style", [MAPPER_V1, ENHANCED, PYNAMODB], ids=lambda m: m.style)
def test_another_writers_lock_is_proposed_and_the_printed_model_keeps_it(
        raw: tuple[Any, list[str]], backend: str | None, style: Mapper) -> None:
    """Items DynamoDBMapper v1, the Enhanced Client or PynamoDB saved (their mimics), each
    with its optimistic lock (``version``: N 1, +1 per save): the inferred model declares
    it (``Meta.lock``) and the report names the convention it saw. The printed model,
    imported and used, keeps their lock: a save of a copy loaded before their save is
    refused, a fresh one moves it by one, and their copy loaded before ours is refused."""
    from dynaorm import ConcurrentModificationError, Session
    from dynaorm.client.infer import unplaced_note

    client, made = raw
    name = _name(f"lock-{style.style}")
    made.append(name)
    client.create_table(
        TableName=name, BillingMode="PAY_PER_REQUEST",
        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"},
                   {"AttributeName": "sk", "KeyType": "RANGE"}],
        AttributeDefinitions=[{"AttributeName": a, "AttributeType": "S"} for a in ("pk", "sk")])
    them = style.bound(client, name, {"status": "S", "qty": "N"})
    for n in range(4):
        doc = {"pk": f"ORDER#o{n}x", "sk": "ORDER", "status": "NEW", "qty": n, "version": None}
        for _ in range(n % 3 + 1):
            them.save(doc)
    code, model = infer_code(name, client=client, report=None)
    (entity,) = model["entities"]
    assert entity["lock"] == {"field": "version", "first": 1, "step": 1}
    assert "lock = _d.Lock(**{'field': 'version', 'first': 1, 'step': 1})" in code
    assert "DynamoDBMapper" in unplaced_note(model) and "PynamoDB" in unplaced_note(model)
    table = _defined(code)
    table.connect(backend, "us-east-1")
    (cls,) = table.entities.values()
    key = {"pk": "ORDER#o2x", "sk": "ORDER"}
    with Session(table) as s:
        (ours,) = [o for o in s.scan(cls).all() if o.qty == 2]
        assert ours.version == 3
        them.save(them.load(key))  # (theirs, after our load: 4)
        ours.status = "PAID"
        s.save(ours)
        with pytest.raises(ConcurrentModificationError):
            s.commit()
    with Session(table) as s:
        (ours,) = [o for o in s.scan(cls).all() if o.qty == 2]
        stale = them.load(key)
        ours.status = "PAID"
        s.save(ours)
        s.commit()
    assert them.load(key) == {**key, "status": "PAID", "qty": 2, "version": 5}
    assert stale is not None
    if style.style != "v1" or (backend is not None and identify(backend) == "local"):
        with pytest.raises(Refused):  # (moto ignores the legacy Expected of v1's save)
            them.save(stale)


@pytest.mark.engines("moto")
def test_langgraph_rows_on_a_table_without_a_type_attribute_are_dynaorms_own(
        backend: str | None) -> None:
    """Red team of issue 82: on a table without a type attribute, the rows of
    ``dynaorm.langgraph``'s ``Saver`` and ``Store`` are told by their keys and attributes:
    counted apart, never printed as entities (printed, ``Saver(table)`` of the code's
    table was refused: its rows' keys clash with the entities printed for them)."""
    pytest.importorskip("langgraph")
    from langgraph.checkpoint.base import empty_checkpoint

    from dynaorm.langgraph import Saver, Store

    module = types.ModuleType(f"lg_model_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(f'''
from dynaorm import Entity, Table
app = Table({_name("lg-bare")!r}, pk="PK", sk="SK", type_attribute=None)

class Note(Entity):
    class Meta:
        table = app
        pk = "NOTE#{{note_id}}"
        sk = "NOTE"

    note_id: str
    text: str = ""
''', module.__dict__)
    app = module.app
    with use_tables(app, endpoint_url=backend) as tb:
        s = tb.session()
        for n in range(3):
            s.save(module.Note(note_id=f"n{n}", text="t"))
        s.commit(idempotency_key=f"lg-{uuid.uuid4().hex}")  # (a receipt too)
        saver = Saver(app)
        config: Any = {"configurable": {"thread_id": "th1", "checkpoint_ns": ""}}
        for step in range(2):
            config = saver.put(config, empty_checkpoint(), {"source": "loop", "step": step}, {})
            saver.put_writes(config, [("channel", "value")], "task-1")
        Store(app).put(("users", "u1"), "prefs", {"theme": "dark"})
        config = {"configurable": {"thread_id": "th2", "checkpoint_ns": ""}}  # (its lease)
        Saver(app, single_writer=True).put(config, empty_checkpoint(), {"step": 0}, {})
        code, model = infer_code(app.name, client=app.client, report=None)
        assert [e["type_name"] for e in model["entities"]] == ["Note"], code
        assert model["inferred"]["own"] >= 6 and model["inferred"]["unplaced"]["count"] == 0
        table = _defined(code)
        table.connect(backend, "us-east-1")
        Saver(table)  # (the printed table takes LangGraph's rows again)
        Store(table)


# -- issue 88: a table with offloaded values -------------------------------------------------
_OFFLOADED = '''
from typing import Any
from dynaorm import Entity, Offloaded, Table
docs = Table({name!r}, offload="s3://placeholder/v/", offload_threshold=200)

class Doc(Entity):
    class Meta:
        table = docs
        pk = "DOC#{{doc_id}}"
        sk = "DOC"
    doc_id: str
    body: Offloaded[str] = ""
    lines: Offloaded[list[str]] = []
    blob: Offloaded[bytes] = b""
'''


@pytest.mark.engines("moto")
def test_offloaded_values_are_read_through_the_printed_model(
        backend: str | None, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A table dynaorm wrote with ``offload=``, some values kept in S3 (moto's), the rows
    holding references: the printed model declares ``offload=`` (the bucket and prefix
    its references name), each field holding a reference ``Offloaded`` and typed as the
    value it holds (``lines``: from the objects alone, every value of it offloaded), and
    the printed code, imported, reads the values, not the references."""
    from dynaorm import Session
    from tests.support.offload import bucket, referenced

    module = types.ModuleType(f"offloaded_model_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(_OFFLOADED.format(name=_name("offloaded")), module.__dict__)
    docs, doc = module.docs, module.Doc
    wrote = [doc(doc_id="d0", body="short", lines=["x" * 300, "y"], blob=b"\x00" * 500),
             doc(doc_id="d1", body="b" * 400, lines=["z" * 250], blob=b"\x01\x02"),
             doc(doc_id="d2", body="c" * 300, lines=["w" * 220], blob=b"\x03" * 300)]
    with bucket(backend, request, monkeypatch, docs) as b, use_tables(
            docs, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        s = tb.session()
        for obj in wrote:
            s.save(obj)
        s.commit()
        assert len(referenced(tb.scan_raw())) == 7  # (the short values stay in their rows)
        code, model = infer_code(docs.name, client=docs.client, report=None)
        assert model["table"].get("offload") == f"s3://{b.name}/v/", code
        (entity,) = model["entities"]
        fields = {f["name"]: f for f in entity["fields"]}
        assert {n for n, f in fields.items() if f.get("offloaded")} == {"body", "lines",
                                                                      "blob"}, code
        assert (fields["body"]["type"], fields["lines"]["type"], fields["lines"]["items"],
                fields["blob"]["type"]) == ("string", "list", {"type": "string"}, "binary")
        assert model["inferred"]["unplaced"]["count"] == 0
        printed = _defined(code)
        printed.connect(backend, "us-east-1")
        (cls,) = printed.entities.values()
        with Session(printed) as s:
            read = {o.doc_id: o for o in s.scan(cls).all()}
            got = s.get(cls, doc_id="d1")
    assert {k: (o.body, o.lines, o.blob) for k, o in read.items()} == {
        o.doc_id: (o.body, o.lines, o.blob) for o in wrote}
    assert (got.body, got.lines, got.blob) == (wrote[1].body, wrote[1].lines, wrote[1].blob)


_COMPRESSED = '''
from pydantic import BaseModel
from dynaorm import Compressed, Entity, Offloaded, Table
docs = Table({name!r}, offload="s3://placeholder/v/", offload_threshold=300)

class Card(BaseModel):
    pan: str

class Doc(Entity):
    class Meta:
        table = docs
        pk = "DOC#{{doc_id}}"
        sk = "DOC"
    doc_id: str
    body: Compressed[str] = ""
    card: Compressed[Card] | None = None
    lines: Compressed[list[str]] = []
    kept: Offloaded[Compressed[str]] = ""
    blob: bytes = b""
'''


@pytest.mark.engines("moto")
def test_compressed_values_are_read_through_the_printed_model(
        backend: str | None, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A table dynaorm wrote with ``Compressed`` values (a text, a nested model, a list;
    one kept in S3 too), the long ones stored compressed (binary), the short ones as they
    are: the printed model declares each such field ``Compressed``, typed as the value it
    holds, never the zlib bytes as the value; a field of plain binary values stays
    ``bytes``; the printed code, imported, reads every value back."""
    from dynaorm import Session
    from tests.support.offload import bucket

    module = types.ModuleType(f"compressed_model_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(_COMPRESSED.format(name=_name("compressed")), module.__dict__)
    docs, doc, card = module.docs, module.Doc, module.Card
    wrote = [doc(doc_id="d0", body="b" * 400, card=card(pan="p" * 300), lines=["x" * 300],
                 kept="".join(uuid.uuid4().hex for _ in range(40)), blob=b"\x00\x01"),
             doc(doc_id="d1", body="short", card=card(pan="p"), lines=["y"], kept="k",
                 blob=b"\x02")]
    with bucket(backend, request, monkeypatch, docs), use_tables(
            docs, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        s = tb.session()
        for obj in wrote:
            s.save(obj)
        s.commit()
        code, model = infer_code(docs.name, client=docs.client, report=None)
        fields = {f["name"]: f for f in model["entities"][0]["fields"]}
        assert {n for n, f in fields.items() if "compressed" in f} == {
            "body", "card", "lines", "kept"}, code
        assert (fields["body"]["type"], fields["card"]["type"], fields["lines"]["type"],
                fields["kept"]["type"], fields["blob"]["type"]) == (
            "string", "object", "list", "string", "binary"), code
        assert [n for n, f in fields.items() if f.get("offloaded")] == ["kept"], code
        printed = _defined(code)
        printed.connect(backend, "us-east-1")
        (cls,) = printed.entities.values()
        with Session(printed) as s:
            read = {o.doc_id: o for o in s.scan(cls).all()}
    assert {k: (o.body, o.card.pan, o.lines, o.kept, o.blob) for k, o in read.items()} == {
        o.doc_id: (o.body, o.card.pan, o.lines, o.kept, o.blob) for o in wrote}


_SEALED = '''
from pydantic import BaseModel
from dynaorm import Encrypted, Entity, Table
vault = Table({name!r})

class Card(BaseModel):
    pan: str

class Account(Entity):
    class Meta:
        table = vault
        pk = "ACC#{{acc_id}}"
        sk = "ACC"
    acc_id: str
    secret: Encrypted[str] = ""
    card: Encrypted[Card] | None = None
    blob: bytes = b""
'''


@pytest.mark.engines("moto")
def test_sealed_values_are_declared_encrypted_and_read_with_the_tables_keyring(
        backend: str | None) -> None:
    """A table dynaorm wrote with ``Encrypted`` values (a text, a nested model): the
    printed model declares each such field ``Encrypted`` (of ``Any`` without the keyring:
    its type is sealed with it; with the keyring, of its plaintexts' type: the card a
    model), never the ciphertext as ``bytes``; a field of plain binary values stays
    ``bytes``; the printed code, given the table's keyring, reads every value back."""
    from dynaorm import Session, StaticKeyring
    from dynaorm.codec import sealed_by

    module = types.ModuleType(f"sealed_model_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(_SEALED.format(name=_name("sealed")), module.__dict__)
    vault, account, card = module.vault, module.Account, module.Card
    vault.keyring = keyring = StaticKeyring(os.urandom(32))
    wrote = [account(acc_id="a0", secret="s0", card=card(pan="4111"), blob=b"\x00\x01"),
             account(acc_id="a1", secret="s1", card=card(pan="5500"), blob=b"\x02")]
    with use_tables(vault, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        with Session(vault) as s:
            for obj in wrote:
                s.save(obj)
        code, model = infer_code(vault.name, client=vault.client, report=None)
        # (without the keyring, no item holding a sealed value is decoded: unplaced, each
        # saying why; with the client's keyring every one is)
        assert model["inferred"]["unplaced"]["count"] == 2, model["inferred"]
        assert all("keyring" in why and "malformed" not in why
                   for why in model["inferred"]["unplaced"]["unreadable"]), model["inferred"]
        # (a client of the wrong keyring decodes none of them either: unplaced, no crash)
        vault.client.keyring = StaticKeyring(os.urandom(32))
        code, model = infer_code(vault.name, client=vault.client, report=None)
        assert model["inferred"]["unplaced"]["count"] == 2, model["inferred"]
        assert all("not in this keyring" in why
                   for why in model["inferred"]["unplaced"]["unreadable"]), model["inferred"]
        vault.client.keyring = keyring
        code, model = infer_code(vault.name, client=vault.client, report=None)
        fields = {f["name"]: f for f in model["entities"][0]["fields"]}
        assert {n for n, f in fields.items() if f.get("encrypted")} == {"secret", "card"}, code
        assert "Account.secret: sealed by dynaorm (Encrypted)" in unplaced_note(model)
        [raw] = [i for i in tb.scan_raw() if i["acc_id"]["S"] == "a0"]
        assert sealed_by(raw["secret"]) == sealed_by(raw["card"]) != None  # noqa: E711
        assert sealed_by(raw["blob"]) is None and sealed_by(raw["acc_id"]) is None
        assert fields["blob"]["type"] == "binary" and not fields["blob"].get("encrypted")
        printed = _defined(code)
        printed.connect(backend, "us-east-1")
        printed.keyring = keyring
        (cls,) = printed.entities.values()
        with Session(printed) as s:
            read = {o.acc_id: o for o in s.scan(cls).all()}
    assert {k: (o.secret, o.card.pan, o.blob) for k, o in read.items()} == {
        o.acc_id: (o.secret, o.card.pan, o.blob) for o in wrote}


_UNIQUE_SEALED = '''
from dynaorm import Encrypted, Entity, Table
vault = Table({name!r})

class Member(Entity):
    class Meta:
        table = vault
        pk = "MEM#{{mid}}"
        sk = "MEM"
        unique = ("email",)
    mid: str
    email: Encrypted[str] = ""
'''


@pytest.mark.engines("moto")
def test_a_keyring_the_printed_model_refuses_leaves_its_items_unplaced_saying_why(
        backend: str | None) -> None:
    """A unique ``Encrypted`` field (its guard keyed by the keyring's MAC key), inferred
    with a Client whose keyring has no MAC key: the printed model refuses that keyring, so
    the item is unplaced with the refusal as its reason; inference does not raise it."""
    from dynaorm import StaticKeyring

    module = types.ModuleType(f"unique_sealed_model_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(_UNIQUE_SEALED.format(name=_name("unique-sealed")), module.__dict__)
    vault = module.vault
    vault.keyring = StaticKeyring(os.urandom(32), mac_key=os.urandom(32))
    with use_tables(vault, endpoint_url=backend, name_suffix=worker_suffix()):
        with Session(vault) as s:
            s.save(module.Member(mid="a", email="a@example.com"))
        vault.client.keyring = StaticKeyring(os.urandom(32))  # (no MAC key)
        _, model = infer_code(vault.name, client=vault.client, report=None)
        vault.client.keyring = vault.keyring
        _, right = infer_code(vault.name, client=vault.client, report=None)
    assert model["entities"][0]["unique"][0]["field"] == "email", model
    assert model["inferred"]["unplaced"]["count"] == 1, model["inferred"]
    (why,) = model["inferred"]["unplaced"]["unreadable"]
    assert "need a keyring with a MAC key" in why, why
    assert right["inferred"]["unplaced"]["count"] == 0, right["inferred"]


_LOCKED_SEALED = '''
from pydantic import BaseModel
from dynaorm import Encrypted, Entity, Offloaded, Table
vault = Table({name!r}, offload="s3://placeholder/v/", offload_threshold=300)

class Card(BaseModel):
    pan: str

class Account(Entity):
    class Meta:
        table = vault
        pk = "ACC#{{acc_id}}"
        sk = "ACC"
        lock = "version"
    acc_id: str
    status: str = ""
    secret: Encrypted[str] = ""
    notes: Encrypted[Offloaded[str]] = ""
    card: Encrypted[Card] | None = None
    version: int | None = None
'''


@pytest.mark.engines("moto")
def test_a_locked_table_of_sealed_values_kept_in_s3_is_inferred_with_all_three(
        backend: str | None, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """0.10's seams in one table: items another writer saved with its lock (PynamoDB's,
    moved past 1 by its saves) holding values dynaorm sealed, one of them kept in S3 on
    some items (its object holds the ciphertext) and in its row on others. The printed
    model declares the lock, each sealed field ``Encrypted`` (the offloaded one
    ``Offloaded`` too), never the ciphertext or a reference as the value; given the keyring
    it reads every value back, and its save moves their lock."""
    from dynaorm import Session, StaticKeyring
    from tests.support.offload import bucket
    from tests.support.other_writers import client_for

    module = types.ModuleType(f"locked_sealed_model_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(_LOCKED_SEALED.format(name=_name("locked-sealed")), module.__dict__)
    vault, account, card = module.vault, module.Account, module.Card
    vault.keyring = keyring = StaticKeyring(os.urandom(32))
    wrote = [account(acc_id=f"a{n}", status="NEW", secret=f"s{n}", card=card(pan=f"41{n}"),
                     notes=("n" * 2000 if n % 2 else "short") + str(n)) for n in range(4)]
    with bucket(backend, request, monkeypatch, vault), use_tables(
            vault, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        with Session(vault) as s:
            for obj in wrote:
                s.save(obj)
        them = PYNAMODB.bound(client_for(tb.endpoint_url), vault.name, {"status": "S"})
        them.keys = ("pk", "sk")
        for n in range(4):  # (their update of status: every other attribute kept)
            doc = them.load({"pk": f"ACC#a{n}", "sk": "ACC"})
            assert doc is not None
            them.update(doc, status="SEEN")
        code, model = infer_code(vault.name, client=vault.client, report=None)
        # (without the keyring, no item holding a sealed value is decoded: unplaced, each
        # saying why; with the client's keyring every one is)
        assert model["inferred"]["unplaced"]["count"] == 4, model["inferred"]
        assert all("keyring" in why and "malformed" not in why
                   for why in model["inferred"]["unplaced"]["unreadable"]), model["inferred"]
        vault.client.keyring = keyring
        code, model = infer_code(vault.name, client=vault.client, report=None)
        (entity,) = model["entities"]
        fields = {f["name"]: f for f in entity["fields"]}
        assert entity.get("lock") == {"field": "version", "first": 1, "step": 1}, code
        assert {n for n, f in fields.items() if f.get("encrypted")} == {
            "secret", "notes", "card"}, code
        assert [n for n, f in fields.items() if f.get("offloaded")] == ["notes"], code
        printed = _defined(code)
        printed.connect(backend, "us-east-1")
        printed.keyring = keyring
        (cls,) = printed.entities.values()
        with Session(printed) as s:
            read = {o.acc_id: o for o in s.scan(cls).all()}
            assert {k: (o.status, o.secret, o.notes, o.card.pan, o.version)
                    for k, o in read.items()} == {
                o.acc_id: ("SEEN", o.secret, o.notes, o.card.pan, 2) for o in wrote}
            got = read["a1"]
            got.status = "OURS"
            s.save(got)
        assert them.load({"pk": "ACC#a1", "sk": "ACC"})["version"] == 3  # type: ignore[index]
    # (every item is read by the printed model given its keyring: none is unplaced, and
    # none is said to hold "a malformed attribute value")
    assert model["inferred"]["unplaced"]["count"] == 0, model["inferred"]["unplaced"]["unreadable"]


@pytest.mark.engines("moto")
def test_an_offloaded_value_whose_object_is_gone_is_reported(
        backend: str | None, request: pytest.FixtureRequest,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A reference whose object is gone (removed behind dynaorm's back): the field is
    still ``Offloaded``, typed from the values the other rows hold (optional: one value is
    not known), and its item is reported as one the printed model cannot read (the object
    named), not placed."""
    from tests.support.offload import bucket

    module = types.ModuleType(f"offloaded_gone_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module
    exec(_OFFLOADED.format(name=_name("offgone")), module.__dict__)
    docs, doc = module.docs, module.Doc
    with bucket(backend, request, monkeypatch, docs) as b, use_tables(
            docs, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        s = tb.session()
        s.save(doc(doc_id="d0", body="short"))
        s.save(doc(doc_id="d1", body="b" * 400))
        s.commit()
        (uri,) = b.uris()
        b.remove(uri)
        model = infer(docs.name, client=docs.client, report=None)
    fields = {f["name"]: f for f in model["entities"][0]["fields"]}
    assert (fields["body"]["type"], fields["body"].get("offloaded")) == ("string", True)
    assert fields["body"]["nullable"]  # (a value not known)
    unplaced = model["inferred"]["unplaced"]
    assert unplaced["count"] == 1 and unplaced["keys"] == [{"pk": "DOC#d1", "sk": "DOC"}]
    assert uri in unplaced["unreadable"][0]


# --- hostile tables; every request inference sends; the score
# (moved from system/test_infer_red_team.py:
# Red team of ``dynaorm.infer`` / ``dynaorm model --infer`` (issue 72, contract 23):
# hostile tables written raw with boto3 on moto and DynamoDB Local, every request the
# inference sends captured (reads only, under every option and failure path, the sample
# bound held through parallel segments, pages and throttling), the printed code run and
# checked with ``dynaorm check`` (every placed item claimed; a hypothesis property over
# random raw tables), bad input typed and never a traceback, the published-design score
# shown able to fail, and the benchmark's CPU figure measured here.)

# (sync only: botocore events on a plain boto3 client; moto only: inference is pure, and
# tests/integration/test_infer.py reads moto and DynamoDB Local)

ROOT = Path(__file__).resolve().parents[2]


def S(text: str) -> dict[str, str]:
    return {"S": text}


def N(number: object) -> dict[str, str]:
    return {"N": str(number)}






def _create(raw: tuple[Any, list[str]], base: str, *, types_: tuple[str, str] = ("S", "S"),
            gsi: bool = False, sk: bool = True, ttl: str | None = None) -> str:
    client, made = raw
    name = _name(base)
    schema = [{"AttributeName": "pk", "KeyType": "HASH"}]
    defs = [{"AttributeName": "pk", "AttributeType": types_[0]}]
    if sk:
        schema.append({"AttributeName": "sk", "KeyType": "RANGE"})
        defs.append({"AttributeName": "sk", "AttributeType": types_[1]})
    extra: dict[str, Any] = {}
    if gsi:
        defs += [{"AttributeName": "gsi1pk", "AttributeType": "S"},
                 {"AttributeName": "gsi1sk", "AttributeType": "S"}]
        extra["GlobalSecondaryIndexes"] = [{
            "IndexName": "gsi1", "Projection": {"ProjectionType": "ALL"},
            "KeySchema": [{"AttributeName": "gsi1pk", "KeyType": "HASH"},
                          {"AttributeName": "gsi1sk", "KeyType": "RANGE"}]}]
    client.create_table(TableName=name, KeySchema=schema, AttributeDefinitions=defs,
                        BillingMode="PAY_PER_REQUEST", **extra)
    made.append(name)
    if ttl:
        client.update_time_to_live(TableName=name, TimeToLiveSpecification={
            "Enabled": True, "AttributeName": ttl})
    return name


def _put(client: Any, name: str, items: list[dict[str, Any]]) -> None:
    for item in items:
        client.put_item(TableName=name, Item=item)








def _claims(client: Any, backend: str | None, name: str, count: int) -> dict[str, Any]:
    """Infer ``name`` (no warning), define the printed code, and ``dynaorm check`` it:
    every item scanned, every item the inference placed read by the printed model's
    entities and no other (on a table with a type attribute, those it could not place are
    the only ones no class claims). The model."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, model = infer_code(name, client=client, report=None)
        table = _defined(code)
    info = model["inferred"]
    assert info["sampled"] == count
    assert info["placed"] + info["unplaced"]["count"] == count
    table.connect(backend, "us-east-1")
    result = check_table(table)
    assert result.scanned == count
    with Session(table) as s:  # (what the printed model reads: what the report placed)
        read = sum(len(s.scan(cls).all()) for cls in table.entities.values())
    assert read == info["placed"], (read, info, code)
    if table.type_attribute is not None:  # (without one, check names no unclaimed type)
        assert sum(result.unclaimed.values()) == info["unplaced"]["count"], (
            result.unclaimed, info, code)
    return model


# -- read-only, under every option and failure path -----------------------------------------
class _Wire:
    """Every operation a client sends, and the items each Scan returned (at botocore)."""

    def __init__(self, client: Any) -> None:
        self.client = client
        self.ops: list[str] = []
        self.scanned: list[int] = []
        self.limits: list[int] = []

    def _before(self, model: Any, **_: Any) -> None:
        self.ops.append(model.name)

    def _params(self, model: Any, params: dict[str, Any], **_: Any) -> None:
        if model.name == "Scan":
            self.limits.append(int(params["Limit"]))

    def _after(self, model: Any, parsed: dict[str, Any], **_: Any) -> None:
        if model.name == "Scan":
            self.scanned.append(len(parsed.get("Items", [])))

    def __enter__(self) -> _Wire:
        self.client.meta.events.register("before-call.dynamodb", self._before)
        self.client.meta.events.register("before-parameter-build.dynamodb", self._params)
        self.client.meta.events.register("after-call.dynamodb", self._after)
        return self

    def __exit__(self, *_: object) -> None:
        self.client.meta.events.unregister("before-call.dynamodb", self._before)
        self.client.meta.events.unregister("before-parameter-build.dynamodb", self._params)
        self.client.meta.events.unregister("after-call.dynamodb", self._after)


def _many(raw: tuple[Any, list[str]], count: int) -> str:
    name = _create(raw, "many")
    client = raw[0]
    big = "x" * 3000  # (pages of Scan end at 1 MB: a few hundred items a page)
    _put(client, name, [{"pk": S(f"USER#u{n}"), "sk": S(f"ORDER#o{n}"), "note": S(big)}
                        for n in range(count)])
    return name


@pytest.mark.engines('moto')
def test_sample_bound_and_reads_only(raw: tuple[Any, list[str]]) -> None:
    """Whatever ``sample``: only reads are sent, and the Scans together return at most
    ``sample`` items (each asks for no more than its share: the segments in parallel and
    the pages of each never exceed the bound). (One table for every bound: the wire
    proves each run only reads it.)"""
    client = raw[0]
    name = _many(raw, 400)
    for sample in (1, 2, 3, 5, 7, 64, 1000):
        with _Wire(client) as wire:
            model = infer(name, client=client, sample=sample, report=None)
        assert set(wire.ops) <= READS, (sample, wire.ops)
        assert sum(wire.scanned) <= sample, (sample, wire.scanned, wire.limits)
        assert all(limit <= sample for limit in wire.limits), (sample, wire.limits)
        assert model["inferred"]["sampled"] == min(sample, 400), sample


@pytest.mark.engines('moto')
def test_scan_pages_are_followed(raw: tuple[Any, list[str]]) -> None:
    """More than 1 MB of items: the Scan pages (``LastEvaluatedKey``) until the sample is
    read, reads only."""
    client = raw[0]
    name = _many(raw, 600)  # (~1.8 MB: at least two pages)
    with _Wire(client) as wire:
        model = infer(name, client=client, sample=600, report=None)
    assert set(wire.ops) <= READS
    assert model["inferred"]["sampled"] == 600
    assert wire.ops.count("Scan") > 4  # (4 segments, some paged)
    assert sum(wire.scanned) == 600


def _binary_table(raw: tuple[Any, list[str]]) -> str:
    """A table keyed by a binary attribute, with one item: its name."""
    client, made = raw
    binary = _name("binary")
    client.create_table(TableName=binary, BillingMode="PAY_PER_REQUEST",
                        KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
                        AttributeDefinitions=[{"AttributeName": "pk", "AttributeType": "B"}])
    made.append(binary)
    client.put_item(TableName=binary, Item={"pk": {"B": b"\x00\xff"}})
    return binary


@pytest.mark.engines('moto')
def test_failure_paths_send_only_reads(raw: tuple[Any, list[str]], backend: str | None) -> None:
    """No table, an empty table, binary keys, a bad sample: typed errors, reads only."""
    client = raw[0]
    empty = _create(raw, "empty")
    binary = _binary_table(raw)
    with _Wire(client) as wire:
        for table, message in (("red-missing-table", "no table named"),
                               (empty, "has no items"), (binary, "binary key attributes")):
            with pytest.raises(InferenceError, match=message):
                infer(table, client=client, report=None)
        with pytest.raises(InferenceError, match="--sample must be at least 1"):
            infer(empty, client=client, sample=0, report=None)
    assert set(wire.ops) <= READS, wire.ops
    for table, message in (("red-missing-table", "no table named"), (empty, "has no items"),
                           (binary, "binary key attributes (pk)")):
        code, _, err = _cli("--infer", table, *_where(backend))
        assert code == 2 and message in err and "Traceback" not in err, err


@pytest.mark.engines('moto')
def test_binary_key_refused_before_scanning(raw: tuple[Any, list[str]]) -> None:
    client = raw[0]
    binary = _binary_table(raw)
    with _Wire(client) as wire, pytest.raises(InferenceError):
        infer(binary, client=client, report=None)
    assert wire.ops == ["DescribeTable"]


def _throttle(client: Any, times: int) -> list[int]:
    """Answer the first ``times`` Scans with DynamoDB's throttling error (before they are
    sent: botocore's retries see a real 400)."""
    from botocore.awsrequest import AWSResponse

    left = [times]

    class _Raw:
        def stream(self, **_: Any) -> Iterator[bytes]:
            yield b""

    def send(request: Any, **_: Any) -> AWSResponse | None:
        target = request.headers.get("X-Amz-Target", b"")
        if isinstance(target, bytes):
            target = target.decode()
        if not target.endswith(".Scan") or left[0] <= 0:
            return None
        left[0] -= 1
        body = json.dumps({"__type": "com.amazonaws.dynamodb.v20120810#"
                           "ProvisionedThroughputExceededException",
                           "message": "throttled"}).encode()
        response = AWSResponse(request.url, 400, {"x-amzn-requestid": "red",
                                                  "content-type":
                                                  "application/x-amz-json-1.0"}, _Raw())
        response._content = body  # (botocore reads .content)
        return response

    client.meta.events.register("before-send.dynamodb", send)
    return left


@pytest.mark.engines('moto')
def test_throttled_scan_is_retried_and_stays_read_only(raw: tuple[Any, list[str]]) -> None:
    """Throttled Scans are retried (botocore's retries), the sample still read in full,
    nothing but reads sent; throttled for good, the command fails in one line."""
    client = raw[0]
    name = _many(raw, 40)
    left = _throttle(client, 3)
    with _Wire(client) as wire:
        model = infer(name, client=client, sample=40, report=None)
    assert left == [0]
    assert model["inferred"]["sampled"] == 40
    assert set(wire.ops) <= READS


@pytest.mark.engines('moto')
def test_throttled_for_good_is_one_line(raw: tuple[Any, list[str]], backend: str | None,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    import botocore.endpoint

    client = raw[0]
    name = _many(raw, 5)
    _throttle(client, 10_000)
    waits: list[float] = []  # (botocore's backoff, recorded: it slept ~25 s of CI's 30 min)
    monkeypatch.setattr(botocore.endpoint, "time", types.SimpleNamespace(sleep=waits.append))
    with pytest.raises(Exception, match=r"ProvisionedThroughputExceeded|throttled"):
        infer(name, client=client, report=None)
    assert waits  # (retried, backing off, before giving up)
    # the command: a dynaorm client of its own, throttled the same way
    from dynaorm.client import infer as driver

    made = driver._client

    def throttled(*args: Any) -> Any:
        c = made(*args)
        _throttle(c, 10_000)
        return c

    monkeypatch.setattr(driver, "_client", throttled)
    code, _, err = _cli("--infer", name, *_where(backend))
    assert code == 1 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


# -- hostile tables ----------------------------------------------------------------------------
def _items(kind: str) -> list[dict[str, Any]]:
    five = range(5)
    return {
        "unicode": [{"pk": S(f"USER#ü{i}🙂"), "sk": S("PROFILE#ñ"), "name": S("Zoë")}
                    for i in five],
        "hash_values": [{"pk": S(f"U#{i}#a#b" * (i + 1)), "sk": S("P#" + "#" * i)}
                        for i in five],
        "empty_segments": [{"pk": S(f"A##B{i}"), "sk": S(f"X#{i}#")} for i in five],
        "digits": [{"pk": S(f"{i}123"), "sk": S(f"{i}")} for i in five],
        "huge": [{"pk": S("U#" + "x" * 1000 + str(i)), "sk": S("P" * 900)} for i in five],
        "braces_quotes": [{"pk": S(f"U#{{x}}'\"\\{i}"), "sk": S('{P}"""\'\'\'')}
                          for i in five],
        "mixed_types": [{"pk": S(f"U#{i}"), "sk": S("P"),
                         "v": [S("a"), N(1), {"BOOL": True}, {"L": []}, {"M": {}}][i]}
                        for i in five],
        "own_names": [{"pk": S(f"U#{i}"), "sk": S("P"), "_rev": N(i), "dynaorm:x": S("y"),
                       "_type": S("User"), "v0_": S("z")} for i in five],
        "type_keywords": [{"pk": S(f"U#{i}"), "sk": S(f"S#{i}"), "type": S(v)}
                          for i, v in enumerate(["class", "None", "class", "None", "def"])],
        "type_spaces": [{"pk": S(f"U#{i}"), "sk": S(f"S#{i}"), "_type": S(v)}
                        for i, v in enumerate(["my type", "my-type", "my_type", "My Type",
                                               "x y"])],
        "type_collide": [{"pk": S(f"U#{i}"), "sk": S(f"S#{i}"), "type": S(v)}
                         for i, v in enumerate(["user", "User", "USER", "user_", "user"])],
        "type_dynaorm": [{"pk": S(f"U#{i}"), "sk": S(f"S#{i}"), "_type": S("dynaorm:foo")}
                         for i in five],
        "keyword_fields": [{"pk": S(f"U#{i}"), "sk": S("P"), "class": S("a"), "None": S("b"),
                            "not an id": S("c"), "1abc": N(1), "model_config": S("m"),
                            "def": {"M": {"class": S("x"), "import": N(2),
                                          "None": {"BOOL": True}}},
                            "m": {"M": {"model_dump": S("z"), "json": S("j")}}}
                           for i in five],
        "model_members": [{"pk": S(f"U#{i}"), "sk": S("P"),
                           **{n: S("v") for n in ("json", "copy", "schema", "validate",
                                                  "dict", "Meta", "meta", "fields",
                                                  "construct", "model_fields", "__class__",
                                                  "_private", "__dict__", "pk_", "self")}}
                          for i in five],
        "nested_meta": [{"pk": S(f"U#{i}"), "sk": S("P"), "m": {"M": {"Meta": N(1)}}}
                        for i in five],
        "class_clash": [*({"pk": S(f"USER#u{i}"), "sk": S("PROFILE"), "order": {"M": {
                            "x": S("y")}}} for i in five),
                        *({"pk": S(f"USER#u{i}"), "sk": S(f"PROFILE#ORDER#o{i}")}
                          for i in five)],
        "deep": [{"pk": S(f"U#{i}"), "sk": S("P"),
                  "d": {"M": {"a": {"M": {"b": {"M": {"c": {"M": {"e": {"L": [
                      {"M": {"f": N(i)}}]}}}}}}}}}} for i in five],
        "empties": [{"pk": S(f"U#{i}"), "sk": S("P"), "m": {"M": {}}, "l": {"L": []},
                     "ss": {"SS": ["a"]}, "ns": {"NS": ["1", "2.5"]}, "nul": {"NULL": True}}
                    for i in five],
    }[kind]


HOSTILE = ["unicode", "hash_values", "empty_segments", "digits", "huge", "braces_quotes",
           "mixed_types", "own_names", "type_keywords", "type_spaces", "type_collide",
           "type_dynaorm", "keyword_fields", "model_members", "nested_meta", "class_clash", "deep",
           "empties"]


@pytest.mark.engines('moto')
@pytest.mark.parametrize("kind", HOSTILE)
def test_hostile_table(raw: tuple[Any, list[str]], backend: str | None, kind: str) -> None:
    """A hostile table: the code runs, ``dynaorm check`` claims every placed item, the
    command prints it (exit 0, no traceback, no warning)."""
    client = raw[0]
    name = _create(raw, kind)
    items = _items(kind)
    _put(client, name, items)
    _claims(client, backend, name, len(items))
    code, out, err = _cli("--infer", name, "--format", "code", *_where(backend))
    assert code == 0 and "Traceback" not in err and "Warning" not in err, err
    _defined(out)


@pytest.mark.engines('moto')
def test_numeric_keys(raw: tuple[Any, list[str]], backend: str | None) -> None:
    client = raw[0]
    name = _create(raw, "numeric", types_=("N", "N"))
    _put(client, name, [{"pk": N(i), "sk": N(i * 10 + 1), "v": S("x")} for i in range(6)])
    model = _claims(client, backend, name, 6)
    assert model["table"]["key_types"] == {"pk": "N", "sk": "N"}


@pytest.mark.engines('moto')
def test_sparse_index(raw: tuple[Any, list[str]], backend: str | None) -> None:
    """An index whose key attributes most items lack."""
    client = raw[0]
    name = _create(raw, "sparse", gsi=True)
    items = [{"pk": S(f"USER#u{i}"), "sk": S("PROFILE"), "email": S(f"e{i}@x"),
              **({"gsi1pk": S("ACTIVE"), "gsi1sk": S(f"USER#u{i}")} if i < 2 else {})}
             for i in range(12)]
    _put(client, name, items)
    _claims(client, backend, name, 12)


@pytest.mark.engines('moto')
def test_ttl_and_hash_only(raw: tuple[Any, list[str]], backend: str | None) -> None:
    client = raw[0]
    name = _create(raw, "ttl", sk=False, ttl="expires")
    _put(client, name, [{"pk": S(f"SESSION#s{i}"), "expires": N(1_900_000_000 + i)}
                        for i in range(5)])
    _claims(client, backend, name, 5)


# -- the property: random raw tables ---------------------------------------------------------
_token = st.one_of(st.sampled_from(["USER", "ORDER", "a", "x y", "class", "None", "", "0",
                                    "ü", "{", "}", "Item", "$v", "team_1"]),
                   st.text(alphabet="abcXYZ019_-:. ü", min_size=0, max_size=6))
_key = st.lists(_token, min_size=1, max_size=4).map("#".join).filter(bool)
_attr_name = st.one_of(st.sampled_from(["type", "_type", "class", "json", "Meta", "meta",
                                        "_rev", "dynaorm:x", "a b", "1x", "model_x", "pk_",
                                        "kind", "GSI1PK"]),
                       st.text(alphabet="abAB_:- 1", min_size=1, max_size=5))
_leaf = st.one_of(st.builds(S, st.text(max_size=5)), st.builds(N, st.integers(-5, 10**6)),
                  st.just({"N": "1.5"}), st.just({"BOOL": False}), st.just({"NULL": True}),
                  st.just({"S": "2024-01-02T03:04:05Z"}), st.just({"SS": ["a", "b"]}),
                  st.just({"B": b"\x00"}))
_value = st.recursive(_leaf, lambda inner: st.one_of(
    st.builds(lambda v: {"L": v}, st.lists(inner, max_size=3)),
    st.builds(lambda v: {"M": v}, st.dictionaries(_attr_name, inner, max_size=3))),
    max_leaves=6)
_item = st.fixed_dictionaries({"pk": st.builds(S, _key), "sk": st.builds(S, _key)},
                              optional={}).flatmap(lambda k: st.dictionaries(
                                  _attr_name.filter(lambda a: a not in ("pk", "sk")), _value,
                                  max_size=4).map(lambda rest: {**rest, **k}))


@pytest.mark.engines('moto')
@settings(max_examples=examples(12), deadline=None, derandomize=True,  # (no shrinking: a failure
          phases=(Phase.explicit, Phase.generate),  # that fails shrank for 5 min in CI)
          suppress_health_check=[HealthCheck.function_scoped_fixture,
                                 HealthCheck.too_slow, HealthCheck.data_too_large])
@given(items=st.lists(_item, min_size=1, max_size=8,
                      unique_by=lambda i: (i["pk"]["S"], i["sk"]["S"])))
def test_random_raw_tables(raw: tuple[Any, list[str]], backend: str | None,
                           items: list[dict[str, Any]]) -> None:
    """Any raw table: the printed code imports and runs, and ``dynaorm check`` claims
    every item the inference placed (the rest are named unplaced); never a crash."""
    client = raw[0]
    name = _create(raw, "prop")
    _put(client, name, items)
    _claims(client, backend, name, len(items))
    client.delete_table(TableName=name)
    raw[1].remove(name)


# -- bad input --------------------------------------------------------------------------------
@pytest.mark.engines('moto')
def test_dead_endpoint_is_one_line() -> None:
    with pytest.raises(EndpointUnreachableError):
        infer("any-table", endpoint_url="http://127.0.0.1:9", region="us-east-1",
              report=None)
    code, out, err = _cli("--infer", "any-table", "--endpoint", "http://127.0.0.1:9",
                          "--region", "us-east-1", "--format", "code")
    assert code == 1 and out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err


@pytest.mark.engines('moto')
def test_wrong_region(raw: tuple[Any, list[str]], backend: str | None) -> None:
    """The table in us-east-1, asked for in another region: on moto (regions apart) no
    such table, exit 2; DynamoDB Local keeps one database whatever the region."""
    client = raw[0]
    name = _create(raw, "region")
    _put(client, name, [{"pk": S("USER#a"), "sk": S("P")}])
    where = ["--region", "eu-west-3", *(["--endpoint", backend] if backend else [])]
    code, _, err = _cli("--infer", name, *where)
    assert "Traceback" not in err
    if backend is None:
        assert code == 2 and f"no table named {name!r}" in err, err
    else:
        assert code == 0, err


# -- score honesty ------------------------------------------------------------------------------
@pytest.mark.engines('moto')
def test_score_is_structural_and_can_fail(raw: tuple[Any, list[str]],
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """The published-design score compares template structures, index keys and field
    types with the hand-written models: the online shop scores all of them, and mutating
    one expected template (a literal, a field slot shared or not), index or field type
    loses that one."""
    client = raw[0]
    design = "online_shop"
    name = _create_design(raw, design)
    model = infer(name, client=client, report=None)
    full = score(design, model)
    assert full.missed == [] and full.entities[0] == full.entities[1]
    entity, want = next((n, w) for n, w in EXPECTED[design].items() if w.indexes and w.fields)
    literal = want.pk.replace("#", "-", 1)
    slot = want.pk.replace("}", "}#{extra}", 1)
    index = next(iter(want.indexes))
    attr = next(iter(want.fields))
    mutants = [(want._replace(pk=literal), "entities", [entity]),
               (want._replace(pk=slot), "entities", [entity]),
               (want._replace(sk=(want.sk or "") + "Z"), "entities", [entity]),
               (want._replace(indexes={**want.indexes, index: (want.indexes[index][0] + "X",
                                                               want.indexes[index][1])}),
                "indexes", [f"{entity}.{index}"]),
               (want._replace(fields={**want.fields, attr: "boolean"}), "fields",
                [f"{entity}.{attr} ({model_type(model, entity, attr)}, not boolean)"])]
    for mutant, part, missed in mutants:
        changed = copy.deepcopy(EXPECTED)
        changed[design][entity] = mutant
        monkeypatch.setattr(published_designs, "EXPECTED", changed)
        got = published_designs.score(design, model)
        hit, count = getattr(full, part)
        assert getattr(got, part) == (hit - 1, count), (mutant, got)
        if part == "entities":
            assert got.missed == missed
        else:
            assert got.missed == missed, got.missed
    # the names of fields do not matter, their sharing does
    first = model["entities"][0]
    assert published_designs.structure([first["pk"]]) == published_designs.structure(
        [first["pk"].replace("{", "{renamed_")])


def model_type(model: dict[str, Any], entity: str, attr: str) -> str:
    e = next(e for e in model["entities"] if e["type_name"] == entity)
    kind = next(f["type"] for f in e["fields"] if f["stored"] == attr)
    return "map" if kind == "object" else str(kind)


def _create_design(raw: tuple[Any, list[str]], design: str) -> str:
    client, made = raw
    name = _name(design)
    made.append(name)
    create_raw(client, name, load(design))
    return name


# -- CPU ------------------------------------------------------------------------------------
@pytest.mark.engines('moto')
def test_benchmark_figure_is_real() -> None:
    """benchmarks/infer.py's 10,000 items are what it says (distinct, five entities, all
    placed) and its timed work is the whole inference: the model, its code and that code
    defined. The 2 s budget itself is the benchmark's to measure, never a timed test's (a
    loaded CI machine once took 2.3 s of CPU for what takes 0.6 s here)."""
    spec = importlib.util.spec_from_file_location("red_bench_infer", ROOT / "benchmarks"
                                                  / "infer.py")
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    sample = bench.items(10_000)
    distinct = {json.dumps(i, sort_keys=True, default=str) for i in sample}
    assert len(sample) == 10_000 and len(distinct) > 9000
    seconds, model = bench.once(sample)  # the benchmark's own timed block
    assert seconds > 0 and bench.BUDGET == 2.0
    assert model["inferred"]["placed"] >= 9_900 and len(model["entities"]) >= 5


# --- the separator of an inferred model
# (moved from system/test_red_team_08b.py:
# Red team of four changes merged for 0.8, by someone who wrote none of them: the MCP
# get/find calls on the event loop (issue 70, :func:`dynaorm.mcp.tools.run` by an AsyncSession), the
# receipt digest's shortcuts (key70), the ranking of rule rows by template specificity
# (r73, :meth:`KeyTemplate.covers`) and the separator of an inferred model (``_separator``).
# Each test states what must never happen. Nothing here depends on the engine: moto only.)

_QUICK = settings(deadline=None, suppress_health_check=list(HealthCheck))


@pytest.fixture(scope="module")
def moto() -> Iterator[None]:
    with moto_backend():
        yield


# -- 4. inference: every item it says it placed is read by the model it prints ---------------


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


def _raw_key(pk: str, sk: str, n: int = 0) -> dict[str, Any]:
    return {"pk": _s(pk), "sk": _s(sk), "x": _s(str(n))}


@pytest.mark.parametrize("items", [
    [_raw_key("USER|1", "NOTE|a#b"), _raw_key("USER|2", "NOTE|c"), _raw_key("USER|3", "NOTE|d")],
    [_raw_key("USER#a|b", "NOTE#1"), _raw_key("USER#c", "NOTE#2")],
    [_raw_key("USER|1", "PROFILE"), _raw_key("USER|2", "PROFILE"), _raw_key("ORDER#1", "ITEM#1"),
     _raw_key("ORDER#2", "ITEM#2"), _raw_key("ORDER#3", "ITEM#3")],
    [_raw_key("alpha", "beta"), _raw_key("gamma", "delta"), _raw_key("USER|1", "A|b")],
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
    placed, read = _placed_and_read([_raw_key("USER|1", "A", 1), _raw_key("USER#1", "A", 1),
                                     _raw_key("USER#1|2", "B|x", 1)])
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
    placed, read = _placed_and_read([_raw_key(pk, sk, n + i % 2) for i, (pk, sk) in
                                     enumerate(keys)])
    assert read == placed


# -- 5. a save that succeeds is read back: never claimed by a rule's row kind ---------------
_part = st.one_of(st.sampled_from(["ORDER", "AUDIT", "insert", "update", "delete", "1",
                                   "000000", "K", "w"]),
                  st.text(st.sampled_from("ORDE1a-|#"), min_size=1, max_size=5))
