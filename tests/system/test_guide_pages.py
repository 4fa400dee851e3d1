"""The guide pages of issue 60 run as written: each block marked ``<!-- file: NAME -->``
of "Exactly once" (docs/guide/exactly-once.md) and "Lambda with Powertools"
(docs/guide/lambda-powertools.md), and of "LangGraph agents" (docs/guide/langgraph.md,
issue 71) is a file of a project using the plugin; its tests pass
on the plugin's embedded test backend and on DynamoDB Local."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = {"exactly-once": 3, "lambda-powertools": 3, "langgraph": 2}


def _files(page: str) -> dict[str, str]:
    text = (ROOT / "docs" / "guide" / f"{page}.md").read_text()
    return dict(re.findall(r"<!-- file: (\S+) -->\n```python\n(.*?)```", text, re.S))


@pytest.mark.dynaorm_index_lag(0, reason="runs pytest itself")
@pytest.mark.parametrize("engine", ["moto", "local"])
@pytest.mark.parametrize("page", sorted(PAGES))
def test_the_page_runs_as_written(tmp_path: Path, page: str, engine: str,
                                  request: pytest.FixtureRequest) -> None:
    files = _files(page)
    assert {"models.py", "conftest.py"} <= set(files)
    for name, code in files.items():
        (tmp_path / name).write_text(code)
    endpoint = () if engine == "moto" else (
        "--dynaorm-endpoint", request.getfixturevalue("ddb_local"))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "DYNAORM_"))}
    env["PYTHONPATH"] = os.pathsep.join((str(tmp_path), str(ROOT)))
    run = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                          *endpoint], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=600, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert f"{PAGES[page]} passed" in run.stdout, run.stdout[-2000:]
