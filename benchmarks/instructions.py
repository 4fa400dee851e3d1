#!/usr/bin/env python
"""Client-side cost per operation in CPU instructions: overhead.py's contenders and
operations, counted by ``perf stat`` instead of timed.

On a shared machine a CPU clock still moves with what the neighbours do (caches, memory
bandwidth, frequency): two runs of overhead.py a minute apart can disagree by 30%. The
number of instructions a process retires does not: the same code on the same input retires
the same instructions within about 0.2%. So this script answers "how much more work is
dynaorm than raw botocore" exactly, while overhead.py answers "how much more time" on a
quiet machine. Instructions are not time (a cache miss costs no instruction), so both are
reported, never one in place of the other.

For every (contender, op) two child processes run under ``perf stat -e instructions:u``:
one sets the contender up and calls the op ``--warmup`` times, the other does the same
and then calls it ``--calls`` times more; the difference divided by ``--calls`` is the
cost of one call. The child checks the requests the contender sends first, as overhead.py
does (a contender that sends the wrong thing is skipped).

Usage::

    .venv/bin/python benchmarks/instructions.py                 # 500 calls per figure
    .venv/bin/python benchmarks/instructions.py --transport stub --contenders dynaorm
    .venv/bin/python benchmarks/instructions.py --json build/bench/instructions.json

Needs Linux ``perf`` with user-space counters allowed (``perf_event_paranoid`` <= 2).
Two checkouts of dynaorm side by side (``wire.py``'s operations and cold starts, by callgrind
where perf is not allowed): ``against.py``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: overhead.py's operations, and ``loaded``: a save + commit of an object loaded once
#: (dynaorm only: each call changes one field, an ``UpdateItem``)
OPS = ("save", "get", "commit", "query", "loaded")
CONTENDERS = ("dynaorm", "pynamodb", "pydynantic", "botocore")


def child(name: str, op: str, calls: int, warmup: int, transport: str) -> int:
    """Set up ``name``, check what ``op`` sends, then call it ``warmup + calls`` times."""
    import overhead  # (sets dummy credentials before botocore loads)

    args = argparse.Namespace(transport=transport, native_config=False, contenders=[name])
    contenders, unavailable = overhead.build_contenders(args)
    if not contenders:
        print(f"unavailable: {unavailable.get(name)}", file=sys.stderr)
        return 2
    contender = contenders[0]
    problems = overhead.check_requests(contender, show=False)
    if op in problems:
        print(f"skipped: {problems[op]}", file=sys.stderr)
        return 3
    fn = contender.ops[op] if op != "loaded" else loaded(contender)
    if fn is None:
        print(f"unavailable: {name} has no {op}", file=sys.stderr)
        return 2
    for _ in range(warmup + calls):
        fn()
    return 0


def loaded(contender: Any) -> Callable[[], object] | None:
    """The ``loaded`` op of dynaorm's contender: its ``get``'s object (loaded once) with
    ``full_name`` changed, saved and committed in a new session (``None``: another)."""
    if contender.name != "dynaorm":
        return None
    from dynaorm import Session

    contender.transport._bodies["UpdateItem"] = b"{}"
    obj = contender.ops["get"]()
    names = itertools.count()

    def save() -> object:
        obj.full_name = f"Alice {next(names)}"
        session = Session(obj.__dynaorm_spec__.table)
        session.save(obj)
        session.commit()
        return obj
    return save


def count(name: str, op: str, calls: int, warmup: int, transport: str) -> int | None:
    """Instructions retired by a child that calls ``op`` ``calls`` times after warming up."""
    command = ["perf", "stat", "-x,", "-e", "instructions:u", sys.executable, __file__,
               "--child", name, op, str(calls), "--warmup", str(warmup),
               "--transport", transport]
    out = subprocess.run(command, capture_output=True, text=True, check=False, timeout=600)
    if out.returncode != 0:
        return None
    for line in out.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("instructions") and fields[0].isdigit():
            return int(fields[0])
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500, help="calls measured (default 500)")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    parser.add_argument("--contenders", nargs="+", choices=CONTENDERS, default=list(CONTENDERS))
    parser.add_argument("--transport", choices=("botocore", "stub"), default="botocore")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--child", nargs=3, metavar=("CONTENDER", "OP", "CALLS"),
                        help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        name, op, calls = args.child
        return child(name, op, int(calls), args.warmup, args.transport)
    if shutil.which("perf") is None:
        print("perf is not installed: nothing to count with", file=sys.stderr)
        return 1

    figures: dict[str, dict[str, float | None]] = {}
    for op in args.ops:
        figures[op] = {}
        for name in args.contenders:
            base = count(name, op, 0, args.warmup, args.transport)
            full = count(name, op, args.calls, args.warmup, args.transport)
            figures[op][name] = (None if base is None or full is None
                                 else (full - base) / args.calls / 1000)

    print(f"thousands of instructions per operation, client side, canned transport "
          f"({args.transport}); {args.calls} calls after {args.warmup} warm-up calls\n")
    header = ["op", *args.contenders]
    if "botocore" in args.contenders:
        header += [f"{n}/botocore" for n in args.contenders if n != "botocore"]
    rows = [header]
    for op in args.ops:
        row = [op] + [f"{v:.0f}" if v is not None else "-" for v in figures[op].values()]
        boto = figures[op].get("botocore")
        if "botocore" in args.contenders:
            for name in args.contenders:
                if name == "botocore":
                    continue
                mine = figures[op][name]
                row.append(f"{mine / boto:.2f}x" if mine is not None and boto else "-")
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    for n, row in enumerate(rows):
        print(" | ".join(c.ljust(w) if i == 0 else c.rjust(w)
                         for i, (c, w) in enumerate(zip(row, widths, strict=True))))
        if n == 0:
            print("-+-".join("-" * w for w in widths))
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps({"transport": args.transport,
                                                "calls": args.calls,
                                                "kinstructions": figures}, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")  # the children inherit one hash seed
    raise SystemExit(main())
