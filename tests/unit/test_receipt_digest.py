"""The receipt digest is pinned (issue 60): a receipt written by an earlier release within
its TTL must still match a replay of the same writes, so the canonical text of staged
writes -- and so the digest -- never changes for the same writes, however it is computed."""

from __future__ import annotations

import enum
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from pydantic import BaseModel

from dynaorm import Entity, F, Table
from dynaorm.schema.rules.receipts import _canon, digest
from dynaorm.values.state import InstanceState
from dynaorm.write.delete import DeleteEntry
from dynaorm.write.save import SaveEntry
from tests.support.models import Audit, Note, User

_pinned = Table("dynaorm-digest-pin")


class Colour(enum.Enum):
    RED = "red"


class Inner(BaseModel):
    n: int = 1
    s: str = "x"


class Rich(Entity):
    class Meta:
        table = _pinned
        pk = "RICH#{rich_id}"
        sk = "RICH"

    rich_id: str
    amount: Decimal = Decimal("1.50")
    ratio: float = 0.25
    flag: bool = True
    count: int = 7
    at: datetime = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    day: date = date(2026, 1, 2)
    blob: bytes = b"\x00\x01"
    tags: set[str] = {"b", "a"}
    colour: Colour = Colour.RED
    inner: Inner = Inner()
    extra: dict[str, Any] = {"z": [1, 2], "a": {"k": None}}
    maybe: str | None = None


def _loaded() -> Note:
    note = Note(note_id="n3", body="loaded")
    note._dynaorm_state = InstanceState({"pk": "NOTE#n3", "sk": "NOTE"}, {}, 2)
    return note


def _staged() -> list[Any]:
    return [
        SaveEntry(_loaded()),
        SaveEntry(User(user_id="u1", username="ada", email="ada@example.com",
                       full_name="Ada Lovelace")),
        SaveEntry(Note(note_id="n1", body="x", tags=["b", "a"]), overwrite=True),
        DeleteEntry(Note(note_id="n2")),
        SaveEntry(Audit(equipment_id="e1", part="p1", auditor="me"),
                  condition=F("auditor") == "x"),
        SaveEntry(Rich(rich_id="r1")),
    ]


def test_the_digest_of_a_fixed_commit_is_pinned() -> None:
    assert digest(_staged()) == (
        "b45011fedc2de73bd991e008a527a437fb6371db1451d11e40a1877bd14c1682")
    assert digest(_staged()[:2]) == (
        "31ccdc1d71e280a8fdcd0e83de1c104c7d8e2a23debd0e3cb68d4c13fcc478e4")


def test_the_canonical_text_of_values_is_pinned() -> None:
    values: list[Any] = [
        "s'q\"", 3, -0, True, False, None, 1.5, float("nan"), [1, "a"], (2,),
        {"b": 1, "a": 2}, {2: "x", 1: "y"}, {"x", "y"}, frozenset({3, 1}), Decimal("1.500"),
        Decimal("NaN"), b"\xff", bytearray(b"a"), datetime(2026, 1, 2, tzinfo=UTC),
        date(2026, 1, 2), timedelta(seconds=1.5), Colour.RED, int, Inner(),
    ]
    assert [_canon(v) for v in values] == [
        "'s\\'q\"'", "i3", "i0", "T", "F", "N", "f1.5", "fnan", "[i1,'a']", "[i2]",
        "{'a':i2,'b':i1}", "{i1:'y',i2:'x'}", "<'x','y'>", "<i1,i3>", "d1.5", "dNaN", "bff",
        "b61", "t2026-01-02T00:00:00+00:00", "t2026-01-02", "D1.5", "eColour.'red'", "cint",
        "pInner{'n':i1,'s':'x'}"]
