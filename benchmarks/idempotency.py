#!/usr/bin/env python
"""Exactly once (issue 60): what an idempotency key costs a commit, side by side.

Each case commits the same new ``User`` (two unique attributes: a 3-Put
``TransactWriteItems``) through dynaorm's own wire to the canned endpoint of
``canned_http.py`` (a child process answering ``{}``), once without a key and once with
``idempotency_key=`` (the same transaction plus its receipt: still one request). Printed:
the client CPU per commit (``time.process_time``, the least batch: the machine's noise
only adds; batches of the two cases alternate, ``--rounds`` x ``--repeats`` of each, the
collector off in each), the ratio beside its budget (issue 70: at most 1.15) -- the
median of the ratios of each pair of batches run one after the other (what a machine
loaded by others still measures fairly: a pair shares its moment's load) and the ratio
of the least batches -- and the requests each commit sent.

    python benchmarks/idempotency.py [--iterations 300] [--repeats 5] [--rounds 2]
                                     [--against CHECKOUT [--runs 3]]

``--against`` measures another checkout (``main``'s, a release's) side by side in the
same run: this benchmark of each checkout, in turn, ``--runs`` times (each in its own
process, importing its own checkout's dynaorm), printing each run's ratio and the median
of each checkout's ratios -- a before and after the machine's load hits alike.
"""

from __future__ import annotations

import argparse
import gc
import itertools
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from canned_http import canned_endpoint, dynaorm_models

#: issue 70's budget: a keyed commit's client CPU at most this many times the plain one's
BUDGET = 1.15


def _cases(endpoint: str) -> dict[str, Callable[[], object]]:
    from dynaorm import Session

    _, user, _, _ = dynaorm_models(endpoint, "dynaorm")
    count = itertools.count()

    def commit(keyed: bool) -> Callable[[], object]:
        def run() -> object:
            n = next(count)
            s = Session(user.__dynaorm_spec__.table)
            s.save(user(user_id=f"u{n}", org_id="acme", username=f"user{n}",
                        email=f"user{n}@example.com", full_name="Ada Lovelace"))
            return s.commit(idempotency_key=f"order-{n}" if keyed else None)
        return run

    return {"commit": commit(False), "commit, keyed": commit(True)}


def _cpu(fn: Callable[[], object], iterations: int) -> float:
    """Client CPU microseconds per call of ``fn`` over one batch (the collector off: it
    runs when it will, not when a case allocates)."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        for _ in range(iterations):
            fn()
        return (time.process_time() - start) / iterations * 1e6
    finally:
        gc.enable()


def _side_by_side(args: argparse.Namespace, rest: list[str]) -> None:
    """This benchmark of this checkout and of ``args.against``, in turn, ``args.runs``
    times each: each run's ratio, and the median of each checkout's."""
    here = Path(__file__).resolve().parent.parent
    checkouts = {"this": here, "against": Path(args.against).resolve()}
    ratios: dict[str, list[float]] = {name: [] for name in checkouts}
    for run in range(args.runs):
        for name, root in checkouts.items():
            out = subprocess.run([sys.executable, "benchmarks/idempotency.py", *rest], cwd=root,
                                 capture_output=True, text=True, check=True).stdout
            found = re.search(r"^ratio ([0-9.]+)", out, re.MULTILINE)
            assert found is not None, out
            ratios[name].append(float(found.group(1)))
            print(f"run {run + 1} {name:<8} {root}: ratio {found.group(1)}")
    for name, root in checkouts.items():
        print(f"{name:<8} median ratio {statistics.median(ratios[name]):.3f} of "
              f"{args.runs} runs ({root}; budget {BUDGET})")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=300)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", help="another checkout, measured side by side")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    if args.against:
        _side_by_side(args, ["--iterations", str(args.iterations), "--repeats",
                             str(args.repeats), "--rounds", str(args.rounds)])
        return
    with canned_endpoint() as endpoint:
        cases = _cases(endpoint)
        for fn in cases.values():  # (warm: imports, connections)
            for _ in range(20):
                fn()
        plain, keyed = cases["commit"], cases["commit, keyed"]
        print("requests:", [op for op, _ in plain().requests],  # type: ignore[attr-defined]
              [(op, len(body["TransactItems"]))
               for op, body in keyed().requests])  # type: ignore[attr-defined]
        pairs = []
        for _ in range(args.rounds * args.repeats):  # (batch by batch, alternately, so
            pairs.append((_cpu(plain, args.iterations),  # drift hits both alike)
                          _cpu(keyed, args.iterations)))
    a, b = min(p for p, _ in pairs), min(k for _, k in pairs)
    median = statistics.median(k / p for p, k in pairs)
    print(f"{'case':<16} {'CPU us/commit':>14} {'median':>8}")
    print(f"{'commit':<16} {a:>14.1f} {statistics.median(p for p, _ in pairs):>8.1f}")
    print(f"{'commit, keyed':<16} {b:>14.1f} {statistics.median(k for _, k in pairs):>8.1f}")
    print(f"ratio {median:.3f} median of {len(pairs)} pairs, {b / a:.3f} of the least batches"
          f" (budget {BUDGET}: {'met' if median <= BUDGET else 'missed'})")


if __name__ == "__main__":
    main()
