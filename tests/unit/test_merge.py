"""The three-way merge a save of a loaded object writes (:mod:`dynaorm.values.merge`), and
the stored time formats (:class:`dynaorm.StoredAs`): pure. On an engine:
``integration/test_round_trip.py``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone
from decimal import Decimal
from typing import Annotated, Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import BaseModel

from dynaorm import DynaormError, StoredAs
from dynaorm.values.limits import updated_item
from dynaorm.values.merge import MAX_MEMBER_PATHS, merge_items
from tests.support.examples import examples


def test_untouched_attributes_keep_their_stored_form() -> None:
    stored = {"n": {"N": "1E2"}, "s": {"S": "2.5"}, "x": {"NULL": True}, "o": {"S": "other"}}
    old = {"n": {"N": "1E+2"}, "s": {"N": "2.5"}}
    new = {"n": {"N": "1E+2"}, "s": {"N": "2.5"}}
    merged = merge_items(stored, old, new)
    assert not merged.touched
    assert merged.item == stored


def test_a_changed_member_is_written_by_its_path_and_the_others_stay() -> None:
    stored = {"p": {"M": {"theme": {"S": "light"}, "beta": {"BOOL": True}}}}
    old = {"p": {"M": {"theme": {"S": "light"}, "lang": {"NULL": True}}}}
    new = {"p": {"M": {"theme": {"S": "dark"}, "lang": {"NULL": True}}}}
    merged = merge_items(stored, old, new)
    assert merged.set == {} and merged.remove == []
    assert merged.members == [(("p", "theme"), {"S": "dark"})]
    assert merged.item == {"p": {"M": {"theme": {"S": "dark"}, "beta": {"BOOL": True}}}}


def test_a_member_removed_by_the_caller_is_removed_and_a_new_one_set() -> None:
    stored = {"m": {"M": {"a": {"N": "1"}, "b": {"N": "2"}, "c.d": {"S": "x"}}}}
    old = {"m": {"M": {"a": {"N": "1"}, "b": {"N": "2"}, "c.d": {"S": "x"}}}}
    new = {"m": {"M": {"a": {"N": "1"}, "c.d": {"S": "y"}, "e": {"S": "z"}}}}
    merged = merge_items(stored, old, new)
    assert sorted(merged.members, key=str) == sorted(
        [(("m", "c.d"), {"S": "y"}), (("m", "e"), {"S": "z"}), (("m", "b"), None)], key=str)
    assert updated_item(stored, {}, [], [], merged.members) == merged.item


def test_a_map_the_stored_item_lacks_or_an_unnamable_member_is_written_whole() -> None:
    new = {"m": {"M": {"a": {"N": "1"}}}}
    assert merge_items({}, {"m": {"M": {}}}, new).set == new
    stored = {"m": {"M": {"": {"N": "0"}, "k": {"N": "1"}}}}
    merged = merge_items(stored, {"m": {"M": {"": {"N": "0"}}}}, {"m": {"M": {"": {"N": "9"}}}})
    assert merged.set == {"m": {"M": {"": {"N": "9"}, "k": {"N": "1"}}}} and not merged.members
    many = {str(i): {"N": str(i)} for i in range(MAX_MEMBER_PATHS + 1)}
    merged = merge_items({"m": {"M": {"keep": {"S": "k"}}}}, {"m": {"M": {}}},
                         {"m": {"M": many}})
    assert merged.set == {"m": {"M": {"keep": {"S": "k"}, **many}}}


def test_attributes_only_the_stored_item_holds_are_kept_unless_left_behind() -> None:
    stored = {"a": {"S": "1"}, "b": {"NULL": True}, "GSI1PK": {"S": "stale"}}
    merged = merge_items(stored, {"a": {"S": "1"}}, {"a": {"S": "2"}}, frozenset({"GSI1PK"}))
    assert merged.item == {"a": {"S": "2"}, "b": {"NULL": True}}


LEAVES = st.one_of(st.builds(lambda n: {"N": n}, st.sampled_from(["1", "2", "1E2"])),
                   st.builds(lambda s: {"S": s}, st.sampled_from(["a", "b"])))
MAPS = st.recursive(LEAVES, lambda inner: st.builds(
    lambda m: {"M": m}, st.dictionaries(st.sampled_from(["a", "b", "c.d", "e"]), inner,
                                        max_size=3)), max_leaves=6)
ITEMS = st.dictionaries(st.sampled_from(["x", "y", "z"]), MAPS, max_size=3)


@settings(max_examples=examples(200), deadline=None)
@given(stored=ITEMS, old=ITEMS, new=ITEMS)
def test_the_update_makes_the_item_the_merge_says(stored: dict[str, Any], old: dict[str, Any],
                                                  new: dict[str, Any]) -> None:
    merged = merge_items(stored, old, new)
    after = updated_item(stored, merged.set, merged.remove, [], merged.members)
    assert after == merged.item
    for name, av in new.items():  # what changed is as the object has it now
        if old.get(name) != av and "M" not in av:
            assert merged.item[name] == av


# -- stored formats -----------------------------------------------------------------------
WHEN = datetime(2026, 11, 27, 9, 30, 56, 761229, tzinfo=UTC)


@pytest.mark.parametrize(("fmt", "stored", "read"), [
    (StoredAs("%Y-%m-%dT%H:%M:%SZ"), {"S": "2026-11-27T09:30:56Z"}, WHEN.replace(microsecond=0)),
    (StoredAs.ISO_Z, {"S": "2026-11-27T09:30:56.761229Z"}, WHEN),
    (StoredAs.ISO_Z_MILLIS, {"S": "2026-11-27T09:30:56.761Z"}, WHEN.replace(microsecond=761000)),
    (StoredAs.EPOCH_SECONDS, {"N": "1795771856.761229"}, WHEN),
    (StoredAs.EPOCH_MILLIS, {"N": "1795771856761"}, WHEN.replace(microsecond=761000)),
    (StoredAs("%d/%m/%Y %H:%M", zone=timezone(timedelta(hours=1))), {"S": "27/11/2026 10:30"},
     WHEN.replace(second=0, microsecond=0)),
])
def test_a_stored_format_writes_and_reads_its_form(fmt: StoredAs, stored: dict[str, Any],
                                                  read: datetime) -> None:
    assert fmt.encode(WHEN) == stored

    class M(BaseModel):
        when: Annotated[datetime, fmt]

    value = stored.get("S") or Decimal(stored["N"])
    assert M.model_validate({"when": value}).when == read
    assert M.model_validate({"when": WHEN.isoformat()}).when == WHEN  # (the default form)


def test_a_naive_time_is_taken_in_the_formats_zone_and_a_bad_format_is_refused() -> None:
    assert StoredAs.ISO_Z.encode(WHEN.replace(tzinfo=None)) == {
        "S": "2026-11-27T09:30:56.761229Z"}
    assert StoredAs.ISO_Z.encode(WHEN.replace(microsecond=0)) == {"S": "2026-11-27T09:30:56Z"}
    with pytest.raises(DynaormError, match="strftime pattern"):
        StoredAs("iso")
    assert repr(StoredAs.EPOCH_SECONDS) == "StoredAs.EPOCH_SECONDS"
    assert StoredAs("%Y") == StoredAs("%Y") and StoredAs("%Y") != StoredAs.ISO_Z


# -- lists of maps (red team of issue 82) ----------------------------------------------------
def _line(sku: str, qty: str, **more: Any) -> dict[str, Any]:
    return {"M": {"sku": {"S": sku}, "qty": {"N": qty}, **more}}


def test_a_changed_list_member_keeps_what_its_stored_map_holds() -> None:
    """A list of maps another writer stored (``note`` no model declares, a number spelled
    ``1E2``): a change to one member's map keeps the rest of every member as stored, as a
    map's change does; the list is written whole (no path names a list member)."""
    stored = {"lines": {"L": [_line("a", "1", note={"S": "keep"}), _line("b", "1E2")]}}
    old = {"lines": {"L": [_line("a", "1"), _line("b", "100")]}}
    new = {"lines": {"L": [_line("a", "2"), _line("b", "100")]}}
    merged = merge_items(stored, old, new)
    assert merged.set == merged.item == {"lines": {"L": [
        _line("a", "2", note={"S": "keep"}), _line("b", "1E2")]}}
    # reordered, each member keeps its own stored form; appended, the new one as it is
    new = {"lines": {"L": [_line("b", "100"), _line("a", "1"), _line("c", "3")]}}
    assert merge_items(stored, old, new).item == {"lines": {"L": [
        _line("b", "1E2"), _line("a", "1", note={"S": "keep"}), _line("c", "3")]}}
    # inside a map: the member written by its path holds the merged list
    stored = {"m": {"M": {"l": stored["lines"], "o": {"S": "x"}}}}
    merged = merge_items(stored, {"m": {"M": {"l": old["lines"]}}},
                         {"m": {"M": {"l": {"L": [_line("a", "1"), _line("b", "7")]}}}})
    assert merged.members == [(("m", "l"), {"L": [_line("a", "1", note={"S": "keep"}),
                                                  _line("b", "7")]})]
    assert merged.item["m"]["M"]["o"] == {"S": "x"}


# -- every stored format round trips what it keeps (red team of issue 82) -------------------
def _kept(fmt: StoredAs, when: datetime) -> datetime:
    """``when`` as much as ``fmt`` keeps of it (milliseconds, or all of it)."""
    if fmt in (StoredAs.ISO_Z_MILLIS, StoredAs.EPOCH_MILLIS):
        return when.replace(microsecond=when.microsecond // 1000 * 1000)
    return when


FORMATS = [StoredAs.ISO_Z, StoredAs.ISO_Z_MILLIS, StoredAs.EPOCH_SECONDS, StoredAs.EPOCH_MILLIS,
           StoredAs("%Y-%m-%dT%H:%M:%S.%fZ"), StoredAs("%Y-%m-%d %H:%M:%S.%f%z"),
           StoredAs("%Y-%m-%dT%H:%M:%S.%f", zone=timezone(timedelta(hours=-7)))]


@settings(max_examples=examples(60), deadline=None)
@given(fmt=st.sampled_from(FORMATS),
       when=st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(9999, 12, 30),
                         timezones=st.sampled_from([UTC, timezone(timedelta(hours=5, minutes=30)),
                                                    timezone(timedelta(hours=-11))])))
def test_every_format_reads_back_what_it_writes(fmt: StoredAs, when: datetime) -> None:
    """What a format writes reads back as the same instant (to the format's precision),
    before 1970 and before the year 1000 too: dynaorm never stores a time it cannot read
    (``1-01-01T00:00:00Z``, glibc's unpadded ``%Y``; ``-0.5`` epoch seconds)."""
    from dynaorm.values.codec import decode_value

    class M(BaseModel):
        when: Annotated[datetime, fmt]

    assert M.model_validate({"when": decode_value(fmt.encode(when))}).when == _kept(fmt, when)


@pytest.mark.parametrize(("fmt", "stored", "read"), [
    (StoredAs.EPOCH_SECONDS, Decimal("-1.5"), datetime(1969, 12, 31, 23, 59, 58, 500000, UTC)),
    (StoredAs.EPOCH_MILLIS, Decimal("-1500"), datetime(1969, 12, 31, 23, 59, 58, 500000, UTC)),
    (StoredAs.EPOCH_SECONDS, Decimal("1795772456.9999999"), datetime(2026, 11, 27, 9, 40, 57,
                                                                      tzinfo=UTC)),
])
def test_epoch_numbers_another_writer_stored_read(fmt: StoredAs, stored: Decimal,
                                                  read: datetime) -> None:
    """Epoch numbers before 1970 with a fraction, and a fraction finer than microseconds
    (rounded to one: the next second), read as times."""

    class M(BaseModel):
        when: Annotated[datetime, fmt]

    assert M.model_validate({"when": stored}).when == read


@pytest.mark.parametrize("stored", [Decimal("1E20"), Decimal("-1E20"), Decimal("1E12")])
def test_an_epoch_number_beyond_any_time_is_a_validation_error(stored: Decimal) -> None:
    """A number no datetime holds fails validation like any other bad value (a read then
    raises ItemDecodeError), never an OverflowError from the depths of ``datetime``."""
    from pydantic import ValidationError

    class M(BaseModel):
        when: Annotated[datetime, StoredAs.EPOCH_SECONDS]

    with pytest.raises(ValidationError):
        M.model_validate({"when": stored})
