"""``dynaorm.infer`` and ``dynaorm model --infer`` (contract 23, "Tables you already
have") on live tables: published single-table designs written raw with boto3 (scored
against hand-written models, the score printed per design), tables dynaorm wrote (unique
guards, versions, TTL; and random models, a hypothesis property), the code it prints run
and checked with ``dynaorm check``, every request it sends captured (it writes nothing),
and bad input. The pure inference is :mod:`dynaorm.formats.infer`; ``unit/test_infer.py``
holds what needs no table."""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
import types
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dynaorm import DynaormError, Table
from dynaorm.cli.main import main
from dynaorm.client.infer import EndpointUnreachableError, infer, infer_code, unplaced_note
from dynaorm.formats import FORMATS
from dynaorm.formats.infer import InferenceError
from dynaorm.jobs.checking import check_table
from dynaorm.testing import use_tables, worker_suffix
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
    printed model declares each such field ``Encrypted`` (of ``Any``: its type is sealed
    with it), never the ciphertext as ``bytes``; a field of plain binary values stays
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
    assert {k: (o.secret, o.card["pan"], o.blob) for k, o in read.items()} == {
        o.acc_id: (o.secret, o.card.pan, o.blob) for o in wrote}


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


@pytest.mark.xfail(strict=True, reason="seams 0.10: inference counts every item holding a "
                   "sealed value unplaced, 'a malformed attribute value' (its printed model is "
                   "checked without the keyring its report says to give)")
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
            assert {k: (o.status, o.secret, o.notes, o.card["pan"], o.version)
                    for k, o in read.items()} == {
                o.acc_id: ("SEEN", o.secret, o.notes, o.card.pan, 2) for o in wrote}
            got = read["a1"]
            got.status = "OURS"
            s.save(got)
        assert them.load({"pk": "ACC#a1", "sk": "ACC"})["version"] == 3  # type: ignore[index]
    # (every item is read by the printed model given its keyring: none is unplaced, and
    # none is said to hold "a malformed attribute value")
    assert model["inferred"]["unplaced"]["count"] == 0, model["inferred"]["unplaced"]


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
