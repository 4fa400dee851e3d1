"""The Arrow types of an export's datasets, from pydantic models (``dynaorm.jobs.arrow``):
each field kind's type and nullability, what has no Arrow type (JSON text), and values a
column cannot hold (their rows left out and named). The export itself, on every engine:
``tests/integration/test_export.py``."""

from __future__ import annotations

import enum
import uuid
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

pa = pytest.importorskip("pyarrow", reason="dynaorm[export] is not installed")

from dynaorm.jobs.arrow import columns, schema_of, table_of  # noqa: E402


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Rank(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Mixed(enum.Enum):
    A = "a"
    B = 2


class Inner(BaseModel):
    n: int
    label: str | None = None


class Outer(BaseModel):
    inner: Inner
    inners: list[Inner] = []


class Every(BaseModel):
    s: str
    i: int
    f: float
    b: bool
    d: Decimal
    money: Decimal = Field(max_digits=10, decimal_places=2)
    places: Annotated[Decimal, Field(decimal_places=4)]
    at: datetime
    day: date
    clock: time
    span: timedelta
    uid: uuid.UUID
    raw: bytes
    color: Color
    rank: Rank
    mixed: Mixed
    lit: Literal["x", "y"]
    ints: list[int]
    tup: tuple[str, ...]
    pair: tuple[int, str]
    tags: set[str]
    frozen: frozenset[Color]
    counts: dict[str, int]
    by_color: dict[Color, float]
    by_int: dict[int, str]
    nested: Outer
    maybe: int | None
    defaulted: str = None  # type: ignore[assignment]  # (None by default: nullable)
    anything: Any
    either: int | str
    nested_list: list[list[int]]


def test_each_field_kind_has_its_arrow_type() -> None:
    inner = pa.struct([pa.field("n", pa.int64(), False), pa.field("label", pa.string(), True)])
    assert schema_of(columns(Every)) == pa.schema([
        pa.field("s", pa.string(), False), pa.field("i", pa.int64(), False),
        pa.field("f", pa.float64(), False), pa.field("b", pa.bool_(), False),
        pa.field("d", pa.decimal128(38, 18), False),
        pa.field("money", pa.decimal128(10, 2), False),
        pa.field("places", pa.decimal128(38, 4), False),
        pa.field("at", pa.timestamp("us", tz="UTC"), False),
        pa.field("day", pa.date32(), False), pa.field("clock", pa.time64("us"), False),
        pa.field("span", pa.duration("us"), False), pa.field("uid", pa.string(), False),
        pa.field("raw", pa.binary(), False), pa.field("color", pa.string(), False),
        pa.field("rank", pa.int64(), False), pa.field("mixed", pa.string(), False),
        pa.field("lit", pa.string(), False), pa.field("ints", pa.list_(pa.int64()), False),
        pa.field("tup", pa.list_(pa.string()), False), pa.field("pair", pa.string(), False),
        pa.field("tags", pa.list_(pa.string()), False),
        pa.field("frozen", pa.list_(pa.string()), False),
        pa.field("counts", pa.map_(pa.string(), pa.int64()), False),
        pa.field("by_color", pa.map_(pa.string(), pa.float64()), False),
        pa.field("by_int", pa.string(), False),
        pa.field("nested", pa.struct([pa.field("inner", inner, False),
                                      pa.field("inners", pa.list_(inner), False)]), False),
        pa.field("maybe", pa.int64(), True), pa.field("defaulted", pa.string(), True),
        pa.field("anything", pa.string(), True), pa.field("either", pa.string(), False),
        pa.field("nested_list", pa.list_(pa.list_(pa.int64())), False)])


def test_values_convert_to_their_columns() -> None:
    """Enums by value, sets sorted, maps and nested models as Arrow takes them, UUIDs as
    text, naive datetimes as UTC, anything without an Arrow type as its JSON text."""
    row = Every(
        s="s", i=1, f=0.5, b=True, d=Decimal("1.5"), money=Decimal("9.99"),
        places=Decimal("0.0001"), at=datetime(2026, 1, 1, 12), day=date(2026, 1, 2),
        clock=time(1, 2), span=timedelta(seconds=3), uid=uuid.UUID(int=1), raw=b"\x00",
        color=Color.BLUE, rank=Rank.HIGH, mixed=Mixed.B, lit="y", ints=[2, 1], tup=("a",),
        pair=(1, "a"), tags={"b", "a"}, frozen=frozenset({Color.RED, Color.BLUE}),
        counts={"k": 1}, by_color={Color.RED: 1.5}, by_int={3: "three"},
        nested=Outer(inner=Inner(n=1), inners=[Inner(n=2, label="two")]), maybe=None,
        anything={"a": [1, None]}, either="text", nested_list=[[1], []])
    cols = columns(Every)
    table, bad = table_of(cols, [row.__dict__])
    assert bad == {}
    (got,) = table.to_pylist()
    assert got["at"] == datetime(2026, 1, 1, 12, tzinfo=UTC)
    assert (got["color"], got["rank"], got["mixed"], got["lit"]) == ("blue", 2, "2", "y")
    assert got["uid"] == str(uuid.UUID(int=1)) and got["tags"] == ["a", "b"]
    assert got["frozen"] == ["blue", "red"] and got["counts"] == [("k", 1)]
    assert got["by_color"] == [("red", 1.5)] and got["by_int"] == '{"3":"three"}'
    assert got["nested"] == {"inner": {"n": 1, "label": None},
                             "inners": [{"n": 2, "label": "two"}]}
    assert got["pair"] == '[1,"a"]' and got["anything"] == '{"a":[1,null]}'
    assert got["either"] == '"text"' and got["maybe"] is None and got["tup"] == ["a"]


def test_a_value_a_column_cannot_hold_leaves_its_row_out_named() -> None:
    """An int past 64 bits, a Decimal with more places than its column keeps: those rows
    are left out (by index, with why); the others are the table."""
    class Small(BaseModel):
        n: int
        money: Decimal = Field(max_digits=6, decimal_places=2)

    rows = [{"n": 1, "money": Decimal("1.50")}, {"n": 2 ** 70, "money": Decimal("1")},
            {"n": 3, "money": Decimal("0.125")}, {"n": 4, "money": Decimal("2")}]
    table, bad = table_of(columns(Small), rows)
    assert table.column("n").to_pylist() == [1, 4]
    assert sorted(bad) == [1, 2]
    assert "field 'n' does not fit int64" in bad[1]
    assert "field 'money' does not fit decimal128(6, 2)" in bad[2]
