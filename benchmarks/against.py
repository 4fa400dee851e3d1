#!/usr/bin/env python
"""Two checkouts side by side in CPU instructions: ``wire.py``'s dynaorm operations and a
cold start, counted by valgrind's callgrind (or ``perf stat`` where it is allowed).

On a shared machine two wall-clock runs a minute apart can disagree by 30%; the
instructions a process executes do not (the same code on the same input: within a fraction
of a percent). This answers "is checkout B slower than checkout A" (issue 69: main against
0.7) on one machine in one run, whatever the neighbours do. Instructions are not time (a
cache miss costs none): a quiet machine's ``wire.py`` and ``cold_start.py`` stay the figures
for time.

Both checkouts run this checkout's harness (``wire.py``'s ``make_dynaorm`` and
``canned_http.py``'s canned endpoint and models): only ``dynaorm`` is imported from each
root. Each child process gets the root on ``PYTHONPATH``, ``PYTHONHASHSEED=0``, the
environment ``cold_start.py`` gives (credentials only) and bytecode under a cache prefix in
``/tmp`` (nothing is written into either checkout; a first, uncounted run of each cold
start program on each root compiles what it imports).

- **wire** (one child per root): ``get``, ``put``, ``tx3``, ``query25``, ``query1000``,
  ``get+save`` (a loaded object changed and saved: a ``GetItem``, then an ``UpdateItem``) on
  dynaorm's own wire against the canned endpoint (in a process of its own, not counted),
  each checked and warmed, then ``--calls`` calls (a tenth for ``query1000``) run inside
  ``operator.call``: callgrind counts only while that function runs
  (``--toggle-collect``) and dumps its count when it returns (``--dump-after``), so start-up
  and warm-up are left out. Figures: instructions per call.
- **cold start** (one child per program and root, counted from its first import to its
  end, the interpreter's own start left out as ``cold_start.py`` does): ``import dynaorm``;
  import + an entity + the first ``get``; the same with a shared config file naming a CA
  bundle (the session path) and with ``AWS_CA_BUNDLE`` set; and + a first save (a new
  item: the canned endpoint answers ``PutItem``, not ``UpdateItem``).

With ``perf`` (``--counter perf``) the wire figures are the difference of two children, one
warmed only and one warmed then calling ``--calls`` times (``instructions.py``'s method),
and cold starts are counted whole, the interpreter's start included.

Usage::

    .venv/bin/python benchmarks/against.py A B [--calls 100] [--only wire|cold]
        [--counter callgrind|perf] [--json PATH]

e.g. ``benchmarks/against.py ../wt-v07 .`` (0.7 against this checkout). Under callgrind a
run takes a few minutes (about 50x slower than native).
"""

from __future__ import annotations

import argparse
import gc
import json
import operator
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
OPS = ("get", "put", "tx3", "query25", "query1000", "get+save")
#: ``idempotency.py``'s commits (``--only keyed``): a new user's 3-Put commit, plain and
#: under an idempotency key
KEYED_OPS = ("commit", "commit-keyed")
#: ``wire.py``'s scoped side by side (``--only scoped``): each op unscoped and scoped
SCOPED = ("query25", "query1000", "gsi25", "gsi1000", "scan25", "scan1000")
SCOPED_OPS = tuple(f"{kind}-{op}" for op in SCOPED for kind in ("unscoped", "scoped"))
#: calls counted per op, as a share of ``--calls`` (a 1,000-item page is ~40x a get)
SHARE = {"get": 1.0, "put": 1.0, "tx3": 1.0, "query25": 1.0, "query1000": 0.1,
         "get+save": 1.0,
         **{op: 0.1 if op.endswith("1000") else 1.0 for op in SCOPED_OPS},
         "commit": 1.0, "commit-keyed": 1.0}
#: bytecode of both checkouts and of site-packages, outside the checkouts
PYCACHE = Path(tempfile.gettempdir()) / "dynaorm-against-pycache"

_USER = '''
from dynaorm import Client, Entity, Session, Table
app = Table("app", endpoint_url=ENDPOINT, region="us-east-1")
class User(Entity):
    class Meta:
        table = app
        pk = "USER#{user_id}"
        sk = "PROFILE"
    user_id: str
    org_id: str
    username: str
    email: str
    full_name: str = ""
    logins: int = 0
user = Session(app).get(User, user_id="u1")
assert user.username == "alice", user
'''
#: each cold-start program: (source, shared config file or None, extra environment)
COLD: dict[str, tuple[str, str | None, dict[str, str]]] = {
    "import dynaorm": ("import dynaorm\n", None, {}),
    "import + entity + first get": (_USER, None, {}),
    "the same, config file with ca_bundle": (
        _USER, "[default]\nregion = us-east-1\nca_bundle = CA_BUNDLE\n", {}),
    "the same, AWS_CA_BUNDLE": (_USER, None, {"AWS_CA_BUNDLE": "CA_BUNDLE"}),
    "import + entity + first get + first save (a new item)": (
        _USER + 's = Session(app)\ns.save(User(user_id="u2", org_id="o1", username="bob", '
        'email="bob@x.com"))\ns.commit()\n', None, {}),
}


def _ca_bundle() -> str:
    from botocore.httpsession import get_cert_path

    return str(get_cert_path(True))


def environment(root: Path, config: str | None = None,
                extra: dict[str, str] | None = None) -> dict[str, str]:
    """A child's environment: ``cold_start.py``'s (credentials only, no AWS setting of this
    machine), ``root`` on ``PYTHONPATH``, one hash seed, bytecode under :data:`PYCACHE`."""
    env = {k: v for k, v in os.environ.items() if not (
        k.startswith(("AWS_", "BOTO")) or k.lower().endswith("_proxy")
        or k in ("REQUESTS_CA_BUNDLE", "PYTHONDONTWRITEBYTECODE"))}
    config_file = "/nonexistent/aws-config"
    if config is not None:
        config_file = tempfile.mkstemp(prefix="against-config-")[1]
        Path(config_file).write_text(config.replace("CA_BUNDLE", _ca_bundle()))
    env.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", PYTHONPATH=str(root),
               PYTHONHASHSEED="0", PYTHONPYCACHEPREFIX=str(PYCACHE),
               AWS_CONFIG_FILE=config_file,
               AWS_SHARED_CREDENTIALS_FILE="/nonexistent/aws-credentials")
    env.update({k: _ca_bundle() if v == "CA_BUNDLE" else v for k, v in (extra or {}).items()})
    return env


# -- the children --------------------------------------------------------------------------

def _wire_ops(root: Path, endpoint: str) -> dict[str, Callable[[], object]]:
    """``wire.py``'s dynaorm ops (own wire) with ``root``'s ``dynaorm``."""
    import wire  # this checkout's harness (it puts this checkout first on sys.path)...

    sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != REPO]
    sys.path.insert(0, str(root))  # ...and root's dynaorm, imported only now
    import dynaorm

    assert Path(dynaorm.__file__).resolve().is_relative_to(root), dynaorm.__file__
    ops = wire.make_dynaorm(endpoint, "dynaorm")
    for op, (plain, scoped) in wire.scoped_pairs(endpoint).items():
        ops[f"unscoped-{op}"], ops[f"scoped-{op}"] = plain, scoped
    import idempotency

    cases = idempotency._cases(endpoint)
    ops["commit"], ops["commit-keyed"] = cases["commit"], cases["commit, keyed"]
    return ops


def wire_child(root: Path, endpoint: str, calls: int, warmup: int, counted: bool,
               names: list[str]) -> int:
    """Check and warm each op of ``names``, then call it ``calls`` times (scaled by
    :data:`SHARE`) inside ``operator.call`` (what callgrind counts); ``counted=False``: no
    calls after the warm-up (perf's baseline)."""
    from canned_http import check_answer

    ops = _wire_ops(root, endpoint)
    for op in names:
        fn = ops[op]
        if op in KEYED_OPS:
            fn()
        elif op in SHARE and "scoped" not in op:
            check_answer("dynaorm", op, fn())
        else:  # (a scoped side by side's op: a full page)
            size = int(op.rpartition("-")[2].lstrip("querygsican"))
            assert len(fn()) == size, op  # type: ignore[arg-type]
        for _ in range(max(1, int(warmup * SHARE[op]))):
            fn()
        n = max(1, int(calls * SHARE[op])) if counted else 0

        def loop(fn: Callable[[], object] = fn, n: int = n) -> None:
            for _ in range(n):
                fn()

        gc.collect()
        operator.call(loop)
    return 0


def cold_child(program: str, endpoint: str) -> list[str]:
    """The arguments of a child that runs ``program`` inside ``operator.call`` (what
    callgrind counts), with nothing imported before it but ``operator``."""
    return ["-c", f"import operator\noperator.call(exec, compile({program!r}, 'cold', 'exec'),"
            f" {{'ENDPOINT': {endpoint!r}, '__name__': '__main__'}})\n"]


# -- counting ------------------------------------------------------------------------------

def _run(command: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    out = subprocess.run(command, env=env, capture_output=True, text=True, check=False,
                         cwd=env["PYTHONPATH"], timeout=3600)  # (root: ``-c`` puts it first)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(command[-6:])} failed:\n{out.stderr[-3000:]}")
    return out


def callgrind(args: list[str], env: dict[str, str], keep: Path | None = None) -> list[int]:
    """Instructions of each ``operator.call`` of the child ``python args``, in order (callgrind's
    dump after each; ``keep``: where to leave the dumps for ``callgrind_annotate``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "callgrind.out"
        _run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
              "--collect-atstart=no", "--toggle-collect=_operator_call",
              "--dump-after=_operator_call", sys.executable, *args], env)
        parts = sorted(Path(tmp).glob("callgrind.out.*"),
                       key=lambda p: int(p.name.rpartition(".")[2]))
        if keep is not None:
            keep.mkdir(parents=True, exist_ok=True)
            for p in parts:
                shutil.copy(p, keep / p.name)
        counts = []
        for part in parts:
            total = re.search(r"^(?:totals|summary): (\d+)", part.read_text(), re.M)
            counts.append(int(total[1]) if total else 0)
        return counts


def perf(args: list[str], env: dict[str, str]) -> int:
    """Instructions (user space) of the whole child ``python args``."""
    out = _run(["perf", "stat", "-x,", "-e", "instructions:u", sys.executable, *args], env)
    for line in out.stderr.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("instructions") and fields[0].isdigit():
            return int(fields[0])
    raise RuntimeError(f"no instruction count in: {out.stderr[-500:]}")


def wire_figures(root: Path, endpoint: str, calls: int, warmup: int, counter: str,
                 keep: Path | None, ops: tuple[str, ...] = OPS) -> dict[str, float]:
    """Instructions per call of each op of ``ops`` with ``root``'s dynaorm."""
    env = environment(root)
    child = [__file__, "--wire-child", str(root), endpoint, str(calls), str(warmup)]
    n = {op: max(1, int(calls * SHARE[op])) for op in ops}
    if counter == "perf":  # (the whole process: a child that calls minus one that does not)
        return {op: (perf([*child, "1", op], env) - perf([*child, "0", op], env)) / n[op]
                for op in ops}
    counts = callgrind([*child, "1", ",".join(ops)], env, keep)
    return {op: counts[i] / n[op] for i, op in enumerate(ops)}


def cold_figure(root: Path, name: str, endpoint: str, counter: str) -> int:
    program, config, extra = COLD[name]
    env = environment(root, config, extra)
    child = cold_child(program, endpoint)
    if counter == "perf":
        return perf(child, env)
    return sum(callgrind(child, env))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("a", type=Path, nargs="?", help="checkout A (the baseline)")
    parser.add_argument("b", type=Path, nargs="?", help="checkout B")
    parser.add_argument("--calls", type=int, default=100,
                        help="calls counted per op (a tenth for query1000)")
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--only", choices=("wire", "cold", "scoped", "keyed"),
                        help="scoped: wire.py's scoped side by side alone (each op unscoped "
                        "and scoped, and their ratio on each side); keyed: "
                        "idempotency.py's commit, plain and keyed")
    parser.add_argument("--counter", choices=("callgrind", "perf"),
                        default="callgrind" if shutil.which("valgrind") else "perf")
    parser.add_argument("--keep", type=Path, help="keep the wire children's callgrind dumps "
                        "here (A/ and B/, one part per op) for callgrind_annotate")
    parser.add_argument("--json", type=Path)
    parser.add_argument("--wire-child", nargs=6, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.wire_child:
        root, endpoint, calls, warmup, counted, names = args.wire_child
        return wire_child(Path(root), endpoint, int(calls), int(warmup), counted == "1",
                          names.split(","))
    if args.a is None or args.b is None:
        parser.error("give two checkouts")
    roots = {"A": args.a.resolve(), "B": args.b.resolve()}
    sys.path.insert(0, str(HERE))
    from canned_http import canned_endpoint

    figures: dict[str, dict[str, float]] = {}
    with canned_endpoint() as endpoint, ThreadPoolExecutor(2) as pool:
        for root in roots.values():  # uncounted first runs: bytecode into PYCACHE
            for program, config, extra in COLD.values():
                _run([sys.executable, *cold_child(program, endpoint)],
                     environment(root, config, extra))
        jobs: dict[str, dict[str, Future[Any]]] = {}
        if args.only != "cold":
            for side, root in roots.items():
                keep = args.keep / side if args.keep else None
                jobs.setdefault("wire", {})[side] = pool.submit(
                    wire_figures, root, endpoint, args.calls, args.warmup, args.counter, keep,
                    {"scoped": SCOPED_OPS, "keyed": KEYED_OPS}.get(args.only or "", OPS))
        if args.only not in ("wire", "scoped", "keyed"):
            for name in COLD:
                for side, root in roots.items():
                    jobs.setdefault(name, {})[side] = pool.submit(
                        cold_figure, root, name, endpoint, args.counter)
        for name, sides in jobs.items():
            results = {side: job.result() for side, job in sides.items()}
            if name == "wire":
                for op in results["A"]:
                    figures[op] = {side: results[side][op] for side in results}
            else:
                figures[name] = {side: float(v) for side, v in results.items()}
    print(f"A = {roots['A']}\nB = {roots['B']}\n{args.counter}: instructions per wire op "
          f"(own wire, canned endpoint; {args.calls} calls, query1000 a tenth), cold starts "
          "whole (from the first import)\n")
    print("| measure | A | B | B / A |")
    print("| --- | ---: | ---: | ---: |")
    for name, f in figures.items():
        print(f"| {name} | {f['A']:,.0f} | {f['B']:,.0f} | {f['B'] / f['A']:.3f} |")
    if args.only == "scoped":
        print("\n| op | scoped / unscoped, A | scoped / unscoped, B |")
        print("| --- | ---: | ---: |")
        for op in SCOPED:
            plain, scoped = figures[f"unscoped-{op}"], figures[f"scoped-{op}"]
            print(f"| {op} | {scoped['A'] / plain['A']:.3f} | {scoped['B'] / plain['B']:.3f} |")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"a": str(roots["A"]), "b": str(roots["B"]),
                                         "counter": args.counter, "figures": figures},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(HERE))
    raise SystemExit(main())
