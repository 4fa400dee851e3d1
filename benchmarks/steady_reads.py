#!/usr/bin/env python
"""Client CPU of a 1,000-item query in a steady state, and the garbage collector's share of
it: dynaorm (own wire) against raw botocore (items unmarshalled by hand), sync.

``wire.py`` collects before each short batch of queries (so that one contender's garbage is
not paid by the next), which leaves the collector in a fresh state: it shows little of what
a process that reads continuously pays. Here each contender runs ``--queries`` queries in a
row after a warm-up, with ``--keep`` pages of objects held alive (a heap as an application
holds one), and the collector's own time is summed through ``gc.callbacks``. Endpoint:
``benchmarks/canned_http.py`` (a canned keep-alive DynamoDB over loopback HTTP).

Usage::

    .venv/bin/python benchmarks/steady_reads.py [--queries 300] [--keep 20] [--baseline DIR]

``--baseline DIR``: also run another checkout (its own dynaorm), interleaved, in a fresh
process each time.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent


class _Collections:
    """The collector's time and collections while :meth:`run` runs (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self.by_generation = [0, 0, 0]
        self._began = 0.0

    def __call__(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._began = time.process_time()
        else:
            self.seconds += time.process_time() - self._began
            self.by_generation[info["generation"]] += 1

    def run(self, fn: Any, n: int) -> tuple[float, float, list[float]]:
        """Per query: CPU seconds, the collector's seconds; collections of each
        generation per 100 queries (a full one, generation 2, walks the whole heap)."""
        self.seconds, self.by_generation = 0.0, [0, 0, 0]
        gc.callbacks.append(self)
        try:
            began = time.process_time()
            for _ in range(n):
                fn()
            spent = time.process_time() - began
        finally:
            gc.callbacks.remove(self)
        return spent / n, self.seconds / n, [c * 100 / n for c in self.by_generation]


def child(queries: int, keep: int) -> dict[str, Any]:
    """One process's figures (run in a fresh process by :func:`main`)."""
    sys.path.insert(0, os.environ.get("STEADY_TREE", str(HERE)))  # (the tree measured)
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "x")  # (dummy credentials, as in wire.py)
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "x")
    import dynaorm
    from benchmarks.canned_http import canned_endpoint, dynaorm_models
    from benchmarks.wire import make_botocore
    from dynaorm import Session

    out: dict[str, Any] = {"module": dynaorm.__file__}
    with canned_endpoint() as endpoint:
        app, _, _, message = dynaorm_models(endpoint, "dynaorm")
        contenders = {
            "dynaorm": lambda: Session(app).query(message, room="r1000").all(),
            "botocore": make_botocore(endpoint)["query1000"],  # (wire.py's contender)
        }
        held = [fn() for fn in contenders.values() for _ in range(keep)]
        watch = _Collections()
        for name, fn in contenders.items():
            for _ in range(30):
                fn()
            out[name] = watch.run(fn, queries)
        out["heap"] = len(gc.get_objects())
        del held
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--keep", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", type=Path)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.queries, args.keep)))
        return 0
    trees = [("this checkout", HERE)] + ([("baseline", args.baseline.resolve())]
                                         if args.baseline else [])
    print(f"1,000-item query, steady state ({args.queries} in a row, {args.keep} pages held), "
          "ms of client CPU a query; one line per process")
    print("| tree | dynaorm | of which collector | collections / 100 queries (gen 0/1/2) | "
          "botocore | dynaorm / botocore | heap objects |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for _ in range(args.rounds):
        for label, tree in trees:
            env = {**os.environ, "PYTHONPATH": str(tree), "STEADY_TREE": str(tree)}
            ran = subprocess.run(
                [sys.executable, str(Path(__file__).resolve()), "--child",
                 "--queries", str(args.queries), "--keep", str(args.keep)],
                env=env, cwd=tree, capture_output=True, text=True, check=True)
            got = json.loads(ran.stdout.strip().splitlines()[-1])
            assert str(got["module"]).startswith(str(tree)), got["module"]
            mine, theirs = got["dynaorm"], got["botocore"]
            made = "/".join(f"{c:.1f}" for c in mine[2])
            print(f"| {label} | {mine[0] * 1e3:.2f} | {mine[1] * 1e3:.2f} | {made} | "
                  f"{theirs[0] * 1e3:.2f} | {mine[0] / theirs[0]:.3f}x | {got['heap']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
