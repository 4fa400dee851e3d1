"""The guide's "What your tests now catch" (docs/guide/what-tests-catch.md) does what it
says: each of its examples, as written there, is a test file of a project using the
plugin (with the guide's models, conftest and pytest configuration); run as the guide
runs it (``--dynaorm-index-lag``), every "fails" test fails and every "passes" test
passes, on the test backend and on DynamoDB Local."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "guide" / "what-tests-catch.md"
#: the project's own files, by the guide's marks
FILES = {"models": "models.py", "conftest": "conftest.py", "pyproject": "pyproject.toml"}


def _blocks() -> dict[str, str]:
    """Each marked block of the guide, by its mark (``models``, ``token fails``, ...)."""
    found = re.findall(r"<!-- catches: (.+?) -->\n```(?:python|toml)\n(.*?)```",
                       GUIDE.read_text(), re.S)
    return dict(found)


def test_every_example_has_a_failing_and_a_fixed_version() -> None:
    marks = set(_blocks())
    names = {m.split()[0] for m in marks} - set(FILES)
    assert names == {"index-lag", "token", "item-size", "race", "throttle", "dropped"}
    assert marks == set(FILES) | {f"{n} {v}" for n in names for v in ("fails", "passes")}


@pytest.mark.dynaorm_index_lag(0, reason="runs pytest itself, with a lag of its own")
@pytest.mark.parametrize("engine", ["moto", "local"])
def test_the_examples_fail_and_pass_as_the_guide_says(tmp_path: Path, engine: str,
                                                      request: pytest.FixtureRequest) -> None:
    for mark, code in _blocks().items():
        name = FILES.get(mark, "test_" + mark.replace("-", "_").replace(" ", "_") + ".py")
        (tmp_path / name).write_text(code)
    endpoint = () if engine == "moto" else (
        "--dynaorm-endpoint", request.getfixturevalue("ddb_local"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DYNAORM_"))}
    env["PYTHONPATH"] = os.pathsep.join((str(tmp_path), str(ROOT)))
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-rA",
                          "--dynaorm-index-lag=60", *endpoint], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=600, check=False)
    seen = {module: outcome for outcome, module in re.findall(
        r"^(PASSED|FAILED) (test_\S+?)\.py::", run.stdout, re.M)}
    expected = {f"test_{m.replace('-', '_').replace(' ', '_')}": (
        "FAILED" if m.endswith("fails") else "PASSED") for m in _blocks() if m not in FILES}
    assert seen == expected, run.stdout[-3000:] + run.stderr[-2000:]
