"""What `pip install X` costs a user: disk footprint and import time.

For dynaorm (the wheel built from this checkout), PynamoDB and pydynantic, each is
installed into its own fresh virtual environment; the footprint is the size of that
environment's site-packages minus the size of an empty environment's, and the import time
is the best of several cold ``python -c "import X"`` runs (a new interpreter each time,
minus the interpreter's own start-up). Target: dynaorm's footprint <= 1.5x PynamoDB's.

Beside the totals it prints where dynaorm's weight is: each distribution of its install by
the files its RECORD lists (with the bytecode pip compiled), marked "shared" when PynamoDB's
install holds the same one, and the floor: PynamoDB's footprint plus the distributions
dynaorm needs beyond it (pydantic and its own dependencies, httptools), dynaorm's own
wheel left out -- what the budget leaves dynaorm's own code is the target minus that.

    python benchmarks/footprint.py [--runs 7] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 1.5


def _run(*cmd: str | Path, cwd: Path | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    out = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                         text=True, check=False, timeout=900)
    if out.returncode != 0:
        raise SystemExit(f"{cmd} failed:\n{out.stdout}\n{out.stderr}")
    return out.stdout


def _size(path: Path) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for name in files:
            p = Path(root, name)
            if not p.is_symlink():
                total += p.stat().st_size
    return total


def _site_packages(venv: Path) -> Path:
    rel = Path(sysconfig.get_path("purelib")).relative_to(sysconfig.get_path("data"))
    return venv / rel


def _venv(home: Path, *requirements: str | Path) -> Path:
    _run(sys.executable, "-m", "venv", home)
    if requirements:
        _run(home / "bin" / "python", "-m", "pip", "install", "--quiet", *requirements)
    return home / "bin" / "python"


def _best(python: Path, code: str, runs: int, cwd: Path) -> float:
    best = float("inf")
    for _ in range(runs):
        start = time.perf_counter()
        _run(python, "-c", code, cwd=cwd)
        best = min(best, time.perf_counter() - start)
    return best


def _distributions(python: Path) -> int:
    out = _run(python, "-m", "pip", "list", "--format=freeze")
    return sum(1 for line in out.splitlines() if line and not line.startswith(("pip==",
                                                                               "setuptools==")))


#: each distribution's installed bytes (its RECORD's files that exist), printed as JSON
_BY_DISTRIBUTION = """
import json, importlib.metadata as md
sizes = {}
for dist in md.distributions():
    name = dist.metadata["Name"].lower().replace("_", "-")
    files = [dist.locate_file(f) for f in dist.files or ()]
    sizes[name] = sum(p.stat().st_size for p in files if p.is_file() and not p.is_symlink())
print(json.dumps(sizes))
"""


def _by_distribution(python: Path, cwd: Path) -> dict[str, float]:
    """MB of each distribution installed beside pip and setuptools (the empty venv's)."""
    sizes = json.loads(_run(python, "-c", _BY_DISTRIBUTION, cwd=cwd))
    return {k: v / 1e6 for k, v in sizes.items() if k not in ("pip", "setuptools")}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7, help="import timings per package")
    parser.add_argument("--keep", type=Path, default=None,
                        help="build the environments here (default: a temporary dir)")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        work = args.keep or Path(tmp)
        work.mkdir(parents=True, exist_ok=True)
        wheels = work / "wheels"
        _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
             "--no-build-isolation", "-w", wheels, ROOT)
        (wheel,) = wheels.glob("dynaorm-*.whl")
        empty = _venv(work / "empty")
        base = _size(_site_packages(work / "empty"))
        bare = _best(empty, "pass", args.runs, work)
        rows = []
        parts: dict[str, dict[str, float]] = {}
        for name, requirement, module in (("dynaorm", wheel, "dynaorm"),
                                          ("PynamoDB", "pynamodb", "pynamodb.models"),
                                          ("pydynantic", "pydynantic", "pydynantic")):
            python = _venv(work / name, requirement)
            mb = (_size(_site_packages(work / name)) - base) / 1e6
            seconds = _best(python, f"import {module}", args.runs, work) - bare
            rows.append((name, mb, _distributions(python) - 1, seconds))
            parts[name] = _by_distribution(python, work)
    print(f"{'package':<12} {'footprint MB':>13} {'dependencies':>13} {'import ms':>10}")
    for name, mb, deps, seconds in rows:
        print(f"{name:<12} {mb:>13.1f} {deps:>13} {seconds * 1000:>10.0f}")
    ours, theirs = parts["dynaorm"], parts["PynamoDB"]
    print("\ndynaorm's install by distribution (MB; 'shared': PynamoDB's install has it too)")
    for dist, mb in sorted(ours.items(), key=lambda kv: -kv[1]):
        print(f"  {dist:<20} {mb:>7.2f}{'  shared' if dist in theirs else ''}")
    ratio = rows[0][1] / rows[1][1]
    verdict = "ok" if ratio <= TARGET else "OVER TARGET"
    print(f"dynaorm / PynamoDB footprint: {ratio:.2f}x (target <= {TARGET}x): {verdict}")
    beyond = sum(mb for dist, mb in ours.items() if dist not in theirs and dist != "dynaorm")
    floor = rows[1][1] + beyond
    print(f"floor (PynamoDB's footprint + dynaorm's dependencies beyond it, {beyond:.1f} MB; "
          f"dynaorm's own wheel left out): {floor:.1f} MB = {floor / rows[1][1]:.2f}x; "
          f"the target leaves dynaorm's own files {TARGET * rows[1][1] - floor:.1f} MB, "
          f"they take {ours['dynaorm']:.1f} MB")
    return 0 if ratio <= TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
