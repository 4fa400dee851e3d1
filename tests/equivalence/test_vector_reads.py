"""The fast way a stored vector is read against the plain way (issue 70): its numbers'
texts parsed in pydantic-core (:func:`~dynaorm.schema.rules.vectors.vector_values`)
against ``float()`` of each, the rounding to 32-bit floats in bulk
(:func:`~dynaorm.schema.rules.vectors.float32`) against ``array("f")`` and a finiteness
check a number, the loaded state's copy of the vector joined in C against a comprehension. On
generated vectors, stored as dynaorm writes them and as other tools may (the shortest
text of a double, decimal texts with exponents, ``-0``), and on texts that are no numbers:
the same floats bit for bit, or the same error; the same object loaded; the stored item
rendered back exactly; the same change detection (an unchanged vector written as dynaorm
writes it is not rewritten, one changed in place is)."""

from __future__ import annotations

import struct
from typing import Annotated, Any

from hypothesis import given, settings
from hypothesis import strategies as st

from dynaorm import Entity, Table, Vector, VectorIndex
from dynaorm.schema.entity import encode_entity, raw_state, spec_of
from dynaorm.schema.rules.vectors import float32, vector_values
from dynaorm.values.limits import float32 as float32_plain
from dynaorm.values.merge import merge_items
from dynaorm.values.state import _Numbers
from tests.support.examples import examples

DIMS = 6
table = Table("vector-reads", vector_indexes=[
    VectorIndex("by_meaning", attribute="embedding", dimensions=DIMS)])


class Doc(Entity):
    class Meta:
        table = table
        pk = "DOC#{doc_id}"
        sk = "DOC"

    doc_id: str
    title: str = ""
    embedding: Annotated[list[float], Vector(DIMS)]


def outcome(fn: Any, *args: Any) -> tuple[Any, ...]:
    """What ``fn(*args)`` gives, floats bit for bit (``-0.0`` and NaN told apart), or its
    error's type and message."""
    try:
        out = fn(*args)
    except Exception as exc:
        return ("error", type(exc), str(exc))
    return ("value", None if out is None else [struct.pack("<d", x) for x in out])


def _vector_values_plain(av: dict[str, Any]) -> list[float] | None:
    """A stored vector's numbers read the plain way: ``float()`` of each text."""
    return None if "NULL" in av else [float(n["N"]) for n in av["L"]]


numbers = st.one_of(
    st.floats(), st.floats(width=32), st.integers(-2**64, 2**64), st.booleans(),
    st.sampled_from([3.4028234663852886e38, 3.4028235677973366e38, 3.5e38, -0.0, 1e-46,
                     10**400, "1", None]))  # (no float: the plain way says so)


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(numbers, max_size=12))
def test_float32_in_bulk_is_the_plain_rounding(values: list[Any]) -> None:
    assert outcome(float32, values) == outcome(float32_plain, values)


texts = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
    st.floats(width=32, allow_nan=False, allow_infinity=False).map(lambda v: f"{v:.9g}"),
    st.decimals(allow_nan=False, allow_infinity=False, places=None).map(str),
    st.builds(lambda m, e: f"{m}E{e:+d}", st.integers(-10**38 + 1, 10**38 - 1),
              st.integers(-130, 125)),
    st.sampled_from(["-0", "0.10", "1E+2", "1e400", "-1e-400", "nan", "inf", "1_0", " 1 ",
                     "0x10", "", "\u0661", "1e", "--1"]),
    st.text(max_size=8))


@settings(max_examples=examples(400), deadline=None)
@given(st.lists(texts, max_size=10))
def test_a_vector_s_texts_read_as_float_reads_them(numbers_: list[str]) -> None:
    av = {"L": [{"N": t} for t in numbers_]}
    assert outcome(vector_values, av) == outcome(_vector_values_plain, av)
    assert vector_values({"NULL": True}) is None


def _plain_load(item: dict[str, Any]) -> Doc:
    """The object the plain way reads: ``float()`` of each text, rounded a number at a
    time."""
    values = _vector_values_plain(item["embedding"])
    assert values is not None
    return Doc.model_construct(doc_id=item["doc_id"]["S"], title=item["title"]["S"],
                               embedding=float32_plain(values))


def _plain_numbers(av: dict[str, Any]) -> str | None:
    """The loaded state's copy of a list of numbers, the plain way: its texts joined when
    each element is ``{"N": text}`` and nothing else."""
    raw = av.get("L")
    if raw and all(type(n) is dict and list(n) == ["N"] and type(n["N"]) is str
                   for n in raw):
        return ",".join([n["N"] for n in raw])
    return None


elements = st.one_of(st.dictionaries(st.sampled_from(["N", "S"]), st.one_of(
    st.text(max_size=3), st.integers())), st.text(max_size=2), st.none())


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(st.one_of(st.builds(lambda t: {"N": t}, st.text(max_size=3)), elements),
                max_size=5))
def test_the_loaded_state_keeps_a_list_of_numbers_as_the_plain_way(raw: list[Any]) -> None:
    assert _Numbers.of({"L": raw}) == _plain_numbers({"L": raw})


stored_texts = st.lists(st.one_of(
    st.floats(width=32, allow_nan=False, allow_infinity=False).map(lambda v: f"{v:.9g}"),
    st.floats(-1e30, 1e30).map(repr),
    st.decimals(-10**30, 10**30, places=12).map(str),
    st.sampled_from(["-0", "0.10", "1E+2", "3.40282347e+38"])), min_size=DIMS, max_size=DIMS)


@settings(max_examples=examples(200), deadline=None)
@given(stored_texts, st.integers(0, DIMS - 1), st.floats(-1e6, 1e6, width=32))
def test_a_loaded_vector_is_the_plain_one_and_its_changes_are_seen(
        numbers_: list[str], at: int, other: float) -> None:
    item = {"pk": {"S": "DOC#d1"}, "sk": {"S": "DOC"}, "_type": {"S": "Doc"},
            "doc_id": {"S": "d1"}, "title": {"S": "t"},
            "embedding": {"L": [{"N": t} for t in numbers_]}}
    loaded, plain = Doc._from_item(item), _plain_load(item)
    assert [struct.pack("<d", x) for x in loaded.embedding] == [
        struct.pack("<d", x) for x in plain.embedding] and type(loaded.embedding) is list
    assert loaded == plain
    assert _Numbers.of(item["embedding"]) == _plain_numbers(item["embedding"])
    state, spec = raw_state(loaded), spec_of(Doc)
    assert state is not None and state.item == item  # (rendered back exactly)
    written = [f"{v:.9g}" for v in plain.embedding]  # (what a write of it stores)
    to_set = merge_items(state.item, state.item, encode_entity(loaded, spec)).set
    assert ("embedding" in to_set) == (written != numbers_)
    assert to_set.get("embedding", {"L": [{"N": t} for t in written]}) == {
        "L": [{"N": t} for t in written]}
    before = loaded.embedding[at]
    loaded.embedding[at] = other  # (in place: no validation; a save rounds it)
    to_set = merge_items(state.item, state.item, encode_entity(loaded, spec)).set  # type: ignore[union-attr]
    rounded = float32([other])[0]
    assert ("embedding" in to_set) == (written != numbers_ or rounded != before
                                       or struct.pack("<d", rounded) != struct.pack(
                                           "<d", before))
