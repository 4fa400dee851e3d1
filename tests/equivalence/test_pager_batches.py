"""The pager hands results out in batches: the same results, order and positions as one
at a time (pure: exact paging state, no backend)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from dynaorm._types import Item
from dynaorm.read.pager import DONE, Pager


def _item(pk: str, sk: str, kind: str = "msg") -> Item:
    return {"pk": {"S": pk}, "sk": {"S": sk}, "type": {"S": kind}}


def _kept(items: Sequence[Item]) -> list[Item]:
    return [i for i in items if i["type"]["S"] == "msg"]


def _position(item: Item) -> Item:
    return {"pk": item["pk"], "sk": item["sk"]}


def _pages(streams: int) -> list[list[dict[str, Any]]]:
    """Two pages per stream; the first ends with an item that is no result."""
    out: list[list[dict[str, Any]]] = []
    for s in range(streams):
        first = [_item(f"P{s}", f"{k:02d}") for k in range(s, 12, 3)]
        first.append(_item(f"P{s}", "99", kind="other"))
        second = [_item(f"P{s}", f"{k:02d}") for k in range(12 + s, 20, 2)]
        out.append([{"Items": first, "LastEvaluatedKey": _position(first[-1])},
                    {"Items": second}])
    return out


def _drain(pager: Pager, room: int | None) -> list[tuple[list[str], list[Any]]]:
    """(results of each take, positions after it), answering what the pager asks."""
    pages = _pages(len(pager.requests))
    sent = [0] * len(pages)
    log: list[tuple[list[str], list[Any]]] = []
    while True:
        wanted = pager.wants(lambda live: None)
        if wanted:
            for i, _ in wanted:
                pager.feed(i, pages[i][sent[i]])
                sent[i] += 1
            continue
        batch = pager.take(room)
        if not batch:
            return log
        assert room is None or len(batch) <= room
        log.append(([b["pk"]["S"] + b["sk"]["S"] for b in batch], list(pager.positions)))


def _flat(log: list[tuple[list[str], list[Any]]]) -> list[str]:
    return [k for keys, _ in log for k in keys]


@pytest.mark.parametrize("streams", [1, 3])
@pytest.mark.parametrize("ordered", [True, False])
@pytest.mark.parametrize("reverse", [False, True])
def test_batches_give_the_results_of_one_at_a_time(streams: int, ordered: bool,
                                                   reverse: bool) -> None:
    def pager() -> Pager:
        return Pager([{"n": i} for i in range(streams)], [None] * streams, _kept, _position,
                     ordered=ordered, reverse=reverse, order_attrs=("sk", "pk"))

    one = _drain(pager(), 1)
    assert len(_flat(one)) == len(set(_flat(one))) == streams * 4 + sum(
        len(range(12 + s, 20, 2)) for s in range(streams))
    assert all(len(keys) == 1 for keys, _ in one)
    for room in (None, 2, 3, 100):
        batched = _drain(pager(), room)
        assert _flat(batched) == _flat(one)
        # after each batch, the positions are those after the same result one at a time
        done = 0
        for keys, positions in batched:
            done += len(keys)
            assert positions == one[done - 1][1]
    assert one[-1][1] == [DONE] * streams


def test_a_batch_of_one_stream_resumes_after_its_last_result() -> None:
    pager = Pager([{}], [None], _kept, _position)
    assert pager.wants(lambda live: 5) == [(0, {"Limit": 5})]
    page = [_item("P", f"{k}") for k in range(5)]
    pager.feed(0, {"Items": page, "LastEvaluatedKey": _position(page[-1])})
    assert [b["sk"]["S"] for b in pager.take(2)] == ["0", "1"]
    assert pager.positions == [_position(page[1])]
    assert [b["sk"]["S"] for b in pager.take(None)] == ["2", "3", "4"]
    assert pager.positions == [_position(page[-1])]  # the page's own resume key
    assert pager.take(0) == []
    assert pager.wants(lambda live: 5) == [
        (0, {"ExclusiveStartKey": _position(page[-1]), "Limit": 5})]
