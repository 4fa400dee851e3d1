"""The budgets the project holds itself to (issue 39), measured by its own tools:
calls and modules of the everyday paths (``benchmarks/traces.py``, on the canned endpoint
of the wire benchmarks, so the figures never vary), the figures ``docs/architecture.md``
states, and the code lines of the package (``scripts/code_lines.py``)."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _load(path: Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


traces = _load(ROOT / "benchmarks" / "traces.py")
code_lines = _load(ROOT / "scripts" / "code_lines.py")


@pytest.fixture(scope="module")
def figures() -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = traces.measure()
    return result


def test_the_paths_keep_their_budgets(figures: dict[str, dict[str, Any]]) -> None:
    over = {f"{path} {key}": (figures[path][key], most)
            for path, budget in traces.BUDGETS.items() for key, most in budget.items()
            if figures[path][key] > most}
    assert not over, f"over budget (measured, budget): {over}"
    assert all(f["climbs_down"] == 0 for f in figures.values()), figures


def test_the_architecture_doc_states_the_measured_figures(
        figures: dict[str, dict[str, Any]]) -> None:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    section = doc.split("### What the paths cross", 1)[1]
    stated = re.search(r"^\| path \|.*?(?=\n\n)", section, re.S | re.M)
    assert stated is not None, "no figures under 'What the paths cross'"
    assert stated.group(0).strip() == traces.table(figures), (
        "docs/architecture.md states other figures than benchmarks/traces.py measures; "
        "paste its table:\n" + traces.table(figures))


def test_the_package_keeps_its_code_budget() -> None:
    total = sum(code_lines.count(ROOT / "dynaorm").values())
    assert total <= code_lines.BUDGET, f"{total} lines of code, budget {code_lines.BUDGET}"


def test_the_line_counter_skips_docstrings_comments_and_blanks(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text('"""Doc\nstring."""\n\n# a comment\ndef f(x):\n    """Doc."""\n'
                      "    return (x +\n            1)  # trailing\n")
    assert code_lines.code_lines(module) == 3
