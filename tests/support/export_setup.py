"""The set-up the export and lake tests share (``tests/integration/test_export.py``,
``tests/integration/test_lake.py``): the AWS configuration and the table of every rule on
the test's engine with moto's S3 (fixtures: import them into the test module), a table
filled with every kind of row, a hook that kills a task mid-scan, and models made of any
field kinds."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import UTC, date, datetime, time, timedelta, timezone
from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import strategies as st
from pydantic import Field

from dynaorm import Client, Entity, Session, Table
from dynaorm.jobs.export_files import s3_client
from dynaorm.protocol.hooks import Hook
from dynaorm.protocol.steps import call
from dynaorm.testing import TestBackend, moto_backend, use_tables, worker_suffix
from tests.support.export_models import (
    Address,
    Ledger,
    Level,
    Member,
    OldMember,
    Point,
    Profile,
    Tier,
    exports,
    old_exports,
)

__all__ = ["ENCRYPTED", "JSON_FIELDS", "KINDS", "WHEN", "KillAtScan", "Killed", "any_model",
           "aws", "export_profiles", "fill_exports", "prop", "tb"]

#: encrypted fields: left out unless decrypted; fields of no Arrow type: JSON text
ENCRYPTED = {"profile": ("ssn",), "ledger": ("memo",), "member": ("note",)}
JSON_FIELDS = ("anything", "either")
WHEN = 1_767_225_600_000_000  # 2026-01-01T00:00:00Z in microseconds


@pytest.fixture
def aws(monkeypatch: pytest.MonkeyPatch) -> None:
    """The standard AWS configuration an application has (what S3 is reached with)."""
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)


@pytest.fixture
def tb(backend: str | None, aws: None) -> Iterator[TestBackend]:
    """``exports`` on the test's engine, ``old_exports`` (the release before) pointed at
    it on a client of its own, and moto's S3 in-process."""
    from moto import mock_aws

    with mock_aws(), moto_backend(), use_tables(exports, endpoint_url=backend,
                                                 name_suffix=worker_suffix()) as b:
        saved = (old_exports.name, old_exports.binding())
        old_exports.name = exports.name
        old_exports.restore((None, {}, Client(exports.endpoint_url)))
        s3_client().create_bucket(Bucket="exports")
        try:
            yield b
        finally:
            old_exports.name = saved[0]
            old_exports.restore(saved[1])


def export_profiles() -> list[Profile]:
    """Profiles holding every kind of value (one with every optional field empty)."""
    full = Profile(
        id="p1", email="ada@x.io", nm="Ada", age=36, score=1.25, balance=Decimal("1234.50"),
        ratio=Decimal("0.333333333333333333"), active=False, born=date(1990, 12, 10),
        seen=datetime(2026, 3, 1, 12, 30, 15, 123456, tzinfo=UTC), wake=time(6, 45),
        nap=timedelta(minutes=20), uid=uuid.UUID(int=7), tier=Tier.PRO, level=Level.HIGH,
        mood="busy", tags={"b", "a"}, nums=[3, 1, 2], weights=frozenset({0.5, 2.0}),
        prefs={"theme": 1, "font": 2}, address=Address(city="Paris", lines=["1 rue"],
                                                       where=Point(x=1)),
        blob=b"\x00\xffdata", anything={"k": [1, "two"]}, either="text", ssn="123-45-6789",
        expires=datetime(2100, 1, 1, tzinfo=UTC))
    bare = Profile(id="p2", email="bob@x.io", seen=datetime(2026, 1, 2, 3, 4, 5), either=7)
    return [full, bare]


def fill_exports(tb: TestBackend) -> dict[str, Any]:
    """A table of every rule: profiles (guards, an expired one), a ledger's three
    versions, a member in the current layout and one in the previous, an item no entity
    claims. Returns what reads give: ``{dataset: [entity, ...]}``."""
    s = Session(exports)
    for p in export_profiles():
        s.save(p)
    s.save(Profile(id="p3", email="gone@x.io", expires=datetime(2000, 1, 1, tzinfo=UTC)))
    ledger = Ledger(id="l1", balance=10, memo="first")
    s.save(ledger)
    s.save(Member(id="m1", email="m1@x.io", note="current"))
    s.commit()
    for balance in (20, 30):
        ledger.balance, ledger.memo = balance, f"at {balance}"
        s.save(ledger)
        s.commit()
    with Session(old_exports) as old:
        old.save(OldMember(id="m0", mail="m0@x.io", note="stored the old way"))
    exports.db.driver.run(call("PutItem", {"TableName": exports.name, "Item": {
        "pk": {"S": "GHOST#1"}, "sk": {"S": "G"}, "_type": {"S": "ghost"}}}))
    read = Session(exports)
    return {"profile": [read.get(Profile, id=i) for i in ("p1", "p2")],
            "ledger": [read.get(Ledger, id="l1")],
            "ledger.history": list(read.history(Ledger, id="l1")),
            "member": [read.get(Member, id=i) for i in ("m0", "m1")]}



class Killed(BaseException):
    """A worker dying in the middle of a task (not an Exception: nothing catches it)."""


class KillAtScan(Hook):
    """Kills the task that sends the next Scan (as SIGKILL would, mid-task)."""

    def on_start(self, phase: Any) -> object:
        if getattr(phase, "operation", None) == "Scan":
            raise Killed
        return None


# -- any model -------------------------------------------------------------------------
#: field kinds of the generated models: name -> (annotation, values DynamoDB stores)
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
KINDS: dict[str, tuple[Any, Any]] = {
    "str": (str, _TEXT),
    "int": (int, st.integers(-2 ** 63, 2 ** 63 - 1)),
    "float": (float, st.floats(-1e100, 1e100).filter(lambda f: f == 0 or abs(f) > 1e-100)),
    "bool": (bool, st.booleans()),
    "decimal": (Annotated[Decimal, Field(max_digits=12, decimal_places=3)],
                st.decimals(-10 ** 8, 10 ** 8, places=3)),
    "datetime": (datetime, st.datetimes(datetime(1900, 1, 1), datetime(2200, 1, 1),
                                        timezones=st.sampled_from([UTC, None, timezone(
                                            timedelta(hours=5, minutes=30))]))),
    "date": (date, st.dates(date(1, 1, 1), date(9999, 12, 31))),
    "enum": (Tier, st.sampled_from(Tier)),
    "set": (set[str], st.sets(_TEXT.filter(bool), max_size=4)),
    "list": (list[int], st.lists(st.integers(-10 ** 6, 10 ** 6), max_size=4)),
    "map": (dict[str, int], st.dictionaries(_TEXT.filter(bool), st.integers(-9, 9),
                                            max_size=3)),
    "nested": (Address, st.builds(Address, city=_TEXT, lines=st.lists(_TEXT, max_size=2),
                                  where=st.none() | st.builds(Point, x=st.integers(-9, 9)))),
}
prop = Table("dynaorm-export-any")
_made = iter(range(10 ** 9))


def any_model(fields: list[tuple[str, bool]]) -> type[Entity]:
    """An entity class of ``fields`` (kind, optional?) on ``prop``, of a type of its own."""
    n = next(_made)
    annotations: dict[str, Any] = {"id": str}
    for kind, optional in fields:
        annotations[f"f_{kind}"] = KINDS[kind][0] | None if optional else KINDS[kind][0]
    meta = type("Meta", (), {"table": prop, "pk": f"ANY{n}#{{id}}", "sk": "A",
                             "type_name": f"any{n}", "__qualname__": f"Any{n}.Meta"})
    return type(f"Any{n}", (Entity,), {"__annotations__": annotations, "Meta": meta,
                                       "__module__": __name__, "__qualname__": f"Any{n}"})
