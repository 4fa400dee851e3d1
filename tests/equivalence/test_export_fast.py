"""The fast way an export reads a full export's lines (``dynaorm.jobs.stored``: pydantic-core
reading each entity's fields straight from DynamoDB JSON) against the plain way (the line
parsed, its attributes decoded, the model validating them): on generated items, and on
those items stored otherwise than dynaorm writes them (an attribute missing, ``NULL``,
under another tag, an empty set stored as a list), a line the fast way reads gives exactly
the plain way's field values; every other line comes back as its JSON (read the plain
way). The exports these feed: ``tests/integration/test_export.py``."""

from __future__ import annotations

import enum
import json
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, Field

pytest.importorskip("pyarrow", reason="dynaorm[export] is not installed")

from dynaorm import Entity, Table
from dynaorm.jobs.export_parts import RowReader
from dynaorm.jobs.stored import stored_validator
from dynaorm.schema.entity import encode_entity, spec_of
from tests.support.examples import examples
from tests.support.exports import dynamodb_json

fast_table = Table("dynaorm-export-fast", revision_attribute=None)


class Mood(enum.Enum):
    CALM = "calm"
    BUSY = "busy"


class Part(BaseModel):
    name: str
    count: int = 0
    since: date | None = None


class Wide(Entity):
    """Every stored form the fast way reads, and some it refuses."""

    class Meta:
        table = fast_table
        pk = "WIDE#{id}"
        sk = "W#{group}"
        type_name = "wide"

    id: str
    group: str = "g"  # (a key field with a default: missing, the key says: plain)
    label: str = Field("", alias="lbl")
    n: int = 0
    ratio: float = 0.0
    price: Decimal = Field(Decimal("0"), max_digits=10, decimal_places=2)
    ok: bool = False
    at: datetime = datetime(2026, 1, 1, tzinfo=UTC)
    day: date | None = None
    mood: Mood = Mood.CALM
    tags: set[str] = set()
    ids: frozenset[int] = frozenset()
    parts: list[Part] = []
    counts: dict[str, int] = {}
    nums: list[int] = []
    main: Part | None = None
    note: str | None = "default"  # (None stored as NULL: its default is not None)


_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=8)
_KEY = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="#"),
               min_size=1, max_size=8)
_PART = st.builds(Part, name=_TEXT, count=st.integers(-5, 5),
                  since=st.none() | st.dates(date(1, 1, 1), date(9999, 1, 1)))
WIDE = st.builds(
    Wide, id=_KEY, group=_KEY, lbl=_TEXT,
    n=st.integers(-2 ** 63, 2 ** 63 - 1), ratio=st.floats(-1e9, 1e9),
    price=st.decimals(-10 ** 7, 10 ** 7, places=2), ok=st.booleans(),
    at=st.datetimes(datetime(1900, 1, 1), datetime(2200, 1, 1),
                    timezones=st.sampled_from([UTC, None])),
    day=st.none() | st.dates(), mood=st.sampled_from(Mood),
    tags=st.sets(_TEXT.filter(bool), max_size=3), ids=st.frozensets(st.integers(-9, 9),
                                                                     max_size=3),
    parts=st.lists(_PART, max_size=2), counts=st.dictionaries(_TEXT.filter(bool),
                                                              st.integers(-9, 9), max_size=2),
    nums=st.lists(st.integers(-9, 9), max_size=3), main=st.none() | _PART,
    note=st.none() | _TEXT)
#: how a stored attribute may differ from what dynaorm writes (another tool, an old build)
CHANGES = st.sampled_from(["as written", "missing", "NULL", "other tag", "empty list",
                           "a string"])


def _changed(item: dict[str, Any], attr: str, change: str) -> dict[str, Any]:
    if change == "missing":
        item.pop(attr, None)
    elif change == "NULL":
        item[attr] = {"NULL": True}
    elif change == "other tag":
        item[attr] = {"N": "1"} if "S" in item.get(attr, {}) else {"S": "1"}
    elif change == "empty list":
        item[attr] = {"L": []}
    elif change == "a string":
        item[attr] = {"S": "x"}
    return item


def _plain(reader: RowReader, item: dict[str, Any]) -> dict[str, Any] | str:
    try:
        values = reader.values(item)
    except Exception as exc:  # (the plain way refuses the row: counted, named)
        return type(exc).__name__
    assert values is not None
    return values


@settings(max_examples=examples(150), deadline=None)
@given(obj=WIDE, attr=st.sampled_from(["pk", "sk", "id", "group", "lbl", "n", "ratio", "price",
                                       "ok", "at", "day", "mood", "tags", "ids", "parts",
                                       "counts", "nums", "main", "note", "_type"]),
       change=CHANGES)
def test_a_line_the_fast_way_reads_gives_the_plain_way_s_values(
        obj: Wide, attr: str, change: str) -> None:
    spec = spec_of(Wide)
    reader = RowReader(spec, decrypt=False)
    assert reader.fast
    validate = stored_validator("_type", {"wide": (Wide, spec)})
    assert validate is not None
    item = _changed(encode_entity(obj, spec), attr, change)
    line = json.dumps({"Item": dynamodb_json(item)}).encode()
    (found,) = validate(b"[" + line + b"]")
    plain = _plain(reader, item)
    if type(found) is dict:  # (the plain way reads it)
        stored_otherwise = not obj.tags or not obj.ids  # (an empty set is stored as [])
        assert change != "as written" or stored_otherwise, "a line as written went plain"
        assert found == json.loads(line)
        return
    assert found.__dict__ == plain, (change, attr)
    if change == "as written":
        assert plain == obj.__dict__


def test_an_entity_with_a_rule_that_reads_more_than_its_attributes_is_read_the_plain_way(
        ) -> None:
    """A TTL (rows whose time has passed are skipped), a versioned entity (its latest copy
    and version rows share a type), a previous layout: never the fast way."""
    from tests.support.export_models import Ledger, Member, Profile

    for cls in (Profile, Ledger, Member):
        assert not RowReader(spec_of(cls), decrypt=False).fast, cls
