"""dynaorm.ksuid (contract section 9): 27 characters, svix-ksuid compatible, strictly
increasing within one process, also within one second and across threads."""

from __future__ import annotations

import importlib
import itertools
import threading
import time
from datetime import UTC, datetime

import pytest
from ksuid import Ksuid

from dynaorm import ksuid
from tests.support.concurrency import join_all

BASE62 = set("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def test_shape_and_parse() -> None:
    value = ksuid()
    assert isinstance(value, str)
    assert len(value) == 27
    assert set(value) <= BASE62
    parsed = Ksuid.from_base62(value)
    assert str(parsed) == value
    stamp = parsed.datetime
    if stamp.tzinfo is None:
        stamp = stamp.replace(tzinfo=UTC)
    assert abs(stamp.timestamp() - time.time()) < 5


def test_strictly_increasing_over_10000_calls() -> None:
    values = [ksuid() for _ in range(10_000)]
    assert all(a < b for a, b in itertools.pairwise(values))
    assert len(set(values)) == len(values)
    for v in values[:: 1000]:
        assert len(v) == 27 and str(Ksuid.from_base62(v)) == v


def test_increasing_within_one_second(monkeypatch: pytest.MonkeyPatch) -> None:
    # A clock stopped within the current second (not ahead of ids already given): every
    # id below has one timestamp, whatever the machine's speed. dynaorm.ksuid takes no
    # clock, so svix's Ksuid is replaced by one that reads the stopped clock.
    frozen = datetime.now(UTC).replace(microsecond=0)

    class StoppedClockKsuid(Ksuid):
        def __init__(self, datetime: datetime | None = None, payload: bytes | None = None,
                     _raw: bytes | None = None) -> None:
            super().__init__(frozen if datetime is None and _raw is None else datetime,
                             payload, _raw)

    monkeypatch.setattr(importlib.import_module("ksuid"), "Ksuid", StoppedClockKsuid)
    values = [ksuid() for _ in range(1000)]
    seconds = {Ksuid.from_base62(v).timestamp // 1 for v in values}
    assert seconds == {frozen.timestamp()}
    assert values == sorted(values) and len(set(values)) == 1000


def test_increasing_across_threads() -> None:
    per_thread: dict[int, list[str]] = {}
    barrier = threading.Barrier(4)

    def work(n: int) -> None:
        barrier.wait()
        per_thread[n] = [ksuid() for _ in range(2500)]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    join_all(threads)
    everything = [v for values in per_thread.values() for v in values]
    assert len(set(everything)) == 10_000
    for values in per_thread.values():
        assert values == sorted(values)  # each thread sees them strictly increasing
        assert all(a < b for a, b in itertools.pairwise(values))
    after = ksuid()
    assert after > max(everything)


def test_sorts_by_time_like_svix() -> None:
    older = str(Ksuid(datetime(2020, 1, 1, tzinfo=UTC)))
    assert older < ksuid()
