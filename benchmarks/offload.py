#!/usr/bin/env python
"""Offloaded values (contract 24, issue 84's budgets), on an in-process moto (DynamoDB and
S3: nothing leaves the process):

- **inline**: client time per insert, update (of a loaded object's other field) and get
  of an entity whose ``Offloaded[str]`` field holds
  a value below the threshold (it stays in its row), beside the same entity without the
  marker (``plain``), and a ``get_many`` of 25 such rows: what the rule costs a row that
  offloads nothing (the threshold check only). Run with ``--plain-only`` under another
  checkout (``PYTHONPATH=/path/to/0.8``) to time the plain entity there: the figures to
  compare with 0.8's; ``dynaorm calls`` count the calls into dynaorm's own functions of
  one operation, a figure the machine's load does not move.
- **offloaded**: the requests a get of a row whose value is in S3 sends (one ``GetItem``,
  one ``s3:GetObject``), and those a scan reading 25 such rows sends (25 GETs), with how
  many GETs were in flight at once (a page's are gathered); and the requests an insert, a
  replacement of the value and a delete of such a row send (its S3 ones apart).

Usage::

    .venv/bin/python benchmarks/offload.py [--ops 2000] [--plain-only] [--json F]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("AWS_DEFAULT_REGION", "us-east-1")
for _name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
    os.environ.setdefault(_name, "x")

import boto3  # noqa: E402

import dynaorm  # noqa: E402
from dynaorm import Entity, Table  # noqa: E402
from dynaorm.testing import moto_backend, use_tables  # noqa: E402

PLAIN_ONLY = "--plain-only" in sys.argv
plain_table = Table("bench-offload-plain")


class Plain(Entity):
    class Meta:
        table = plain_table
        pk = "D#{did}"
        sk = "D"

    did: str
    title: str
    body: str


if not PLAIN_ONLY:
    from dynaorm import Offloaded

    offload_table = Table("bench-offload", offload="s3://bench-offload/v/",
                          offload_threshold=4096)

    class Doc(Entity):
        class Meta:
            table = offload_table
            pk = "D#{did}"
            sk = "D"

        did: str
        title: str
        body: Offloaded[str]


def _time(fn: Any, ops: int) -> float:
    """Median microseconds per call over five runs of ``ops`` calls."""
    runs = []
    for _ in range(5):
        start = time.perf_counter()
        for i in range(ops):
            fn(i)
        runs.append((time.perf_counter() - start) / ops * 1e6)
    return statistics.median(runs)


PACKAGE = str(Path(dynaorm.__file__).resolve().parent)


def _calls(fn: Any) -> float:
    """Calls into dynaorm's own functions (generator resumptions included) of one
    ``fn(1)``: a figure the machine's load does not move."""
    count = 0

    def profile(frame: Any, event: str, arg: Any) -> None:
        nonlocal count
        if event == "call" and frame.f_code.co_filename.startswith(PACKAGE):
            count += 1

    sys.setprofile(profile)
    try:
        fn(1)
    finally:
        sys.setprofile(None)
    return float(count)


def _timed(db: Any, name: str, cls: Any, table: Table, ops: int, body: str
           ) -> dict[str, float]:
    s = db.session(table)
    fresh = iter(range(10**9))

    def put(i: int) -> None:  # (an insert: a new object each time)
        s.save(cls(did=f"n{next(fresh)}", title="a note", body=body))
        s.commit()

    for i in range(50):
        s.save(cls(did=str(i), title="a note", body=body))
    s.commit()
    loaded = [s.get(cls, did=str(i)) for i in range(50)]

    def update(i: int) -> None:  # (a loaded object's other field changed: an UpdateItem)
        obj = loaded[i % 50]
        obj.title = f"note {i}"
        s.save(obj)
        s.commit()

    def get(i: int) -> None:
        s.get(cls, did=str(i % 50))

    get(0)
    calls = {f"{name} put dynaorm calls": _calls(put), f"{name} update dynaorm calls":
             _calls(update), f"{name} get dynaorm calls": _calls(get)}
    return {**calls, f"{name} put us": _time(put, ops),
            f"{name} update us": _time(update, ops),
            f"{name} get us": _time(get, ops),
            f"{name} get_many of 25 us": _time(lambda i: s.get_many(cls, [
                {"did": str((i + j) % 50)} for j in range(25)]), max(ops // 10, 1))}


class Seen(dynaorm.Hook):
    """The operations sent, and the most S3 GETs in flight at once."""

    def __init__(self) -> None:
        self.ops: Counter[str] = Counter()
        self.flying = 0
        self.most = 0
        self.lock = threading.Lock()

    def on_start(self, phase: Any) -> object:
        if not isinstance(phase, dynaorm.Attempt):
            return None
        with self.lock:
            self.ops[phase.operation] += 1
            if phase.operation == "s3:GetObject":
                self.flying += 1
                self.most = max(self.most, self.flying)
        time.sleep(0.002 if phase.operation == "s3:GetObject" else 0)  # (overlap visible)
        return phase.operation

    def on_end(self, phase: Any, token: Any) -> object:
        if token == "s3:GetObject":
            with self.lock:
                self.flying -= 1
        return None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--ops", type=int, default=2000)
    parser.add_argument("--plain-only", action="store_true")
    parser.add_argument("--json")
    args = parser.parse_args()
    figures: dict[str, float] = {}
    with moto_backend():
        if PLAIN_ONLY:
            with use_tables(plain_table) as db:
                figures.update(_timed(db, "plain", Plain, plain_table, args.ops, "a" * 1000))
        else:
            boto3.client("s3").create_bucket(Bucket="bench-offload")
            with use_tables(plain_table, offload_table) as db:
                figures.update(_timed(db, "plain", Plain, plain_table, args.ops, "a" * 1000))
                figures.update(_timed(db, "inline", Doc, offload_table, args.ops, "a" * 1000))
                s = db.session(offload_table)
                for i in range(25):
                    s.save(Doc(did=f"big{i}", title="t", body="b" * 200_000))
                s.commit()
                seen = Seen()
                offload_table.db.add_hook(seen)
                assert db.session(offload_table).get(Doc, did="big0") is not None
                figures["offloaded get: requests"] = sum(seen.ops.values())
                figures["offloaded get: s3 GETs"] = seen.ops["s3:GetObject"]
                seen.ops.clear()
                found = db.session(offload_table).scan(Doc).all()
                assert len([d for d in found if len(d.body) == 200_000]) == 25
                figures["scan page of 25 offloaded: s3 GETs"] = seen.ops["s3:GetObject"]
                figures["scan page of 25 offloaded: GETs in flight at once"] = seen.most
                w = db.session(offload_table)
                for what, write in (
                        ("insert", lambda d: w.save(Doc(did="new", title="t", body="n" * 200_000))),
                        ("replace", lambda d: (setattr(d, "body", "r" * 200_000), w.save(d))),
                        ("delete", lambda d: w.delete(d))):
                    loaded = w.get(Doc, did="new", consistent=True)
                    seen.ops.clear()
                    write(loaded)
                    w.commit()
                    figures[f"offloaded {what}: requests"] = sum(seen.ops.values())
                    figures[f"offloaded {what}: s3 requests"] = sum(
                        n for op, n in seen.ops.items() if op.startswith("s3:"))
                offload_table.db.remove_hook(seen)
    for key, value in figures.items():
        print(f"{key:48} {value:10.1f}")
    if "plain put us" in figures and "inline put us" in figures:
        for what in ("put", "update", "get", "get_many of 25"):
            ratio = figures[f"inline {what} us"] / figures[f"plain {what} us"]
            print(f"inline / plain {what + ' time':31} {ratio:10.3f}")
        for what in ("put", "update", "get"):
            more = figures[f"inline {what} dynaorm calls"] - figures[f"plain {what} dynaorm calls"]
            print(f"inline - plain {what + ' calls':31} {more:10.0f}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
