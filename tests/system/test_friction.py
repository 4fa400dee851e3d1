"""Friction a new user met in 0.6 (issue 59, point 7): ``jobs.run_local`` from a script
without ``if __name__ == "__main__":``, ``--workers 0``, a moto server's request log."""

from __future__ import annotations

import logging
import os
import pickle
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from dynaorm import DynaormError, RequestError, jobs
from dynaorm.testing import moto_server
from tests.support.job_models import Counter, Doc, add_step

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = '''
from dynaorm import jobs
from tests.support.job_models import Counter, Doc, add_step

{body}
'''


def _script(tmp_path: Path, body: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "job_script.py"
    path.write_text(SCRIPT.format(body=textwrap.dedent(body)))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, str(path)], cwd=tmp_path, env=env, text=True,
                          capture_output=True, timeout=120, check=False)


def test_run_local_at_a_scripts_top_level_says_to_guard_it(tmp_path: Path) -> None:
    """0.6: each spawned worker ran the script again and the pool broke
    (``BrokenProcessPool``, or ``RuntimeError`` about bootstrapping): now a clear
    ``DynaormError`` before any process starts."""
    result = _script(tmp_path, "jobs.run_local(jobs.backfill(Doc, add_step, segments=2), "
                               "workers=2)\nprint('ran')")
    assert result.returncode == 1 and "ran" not in result.stdout
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("dynaorm.errors.DynaormError: run_local: called at the top level"
                           ), result.stderr
    assert 'if __name__ == "__main__":' in last and "(line 5)" in last
    assert "BrokenProcessPool" not in result.stderr


def test_run_local_under_the_guard_is_not_refused(tmp_path: Path) -> None:
    """A guarded call runs its workers; their failure (no table at that endpoint) comes
    back as itself (0.6: a ``RequestError`` did not unpickle, so the pool broke)."""
    result = _script(tmp_path, '''
        if __name__ == "__main__":
            Doc.Meta.table.connect("http://127.0.0.1:9")
            try:
                jobs.run_local(jobs.backfill(Doc, add_step, segments=2), workers=2)
            except Exception as exc:
                print(type(exc).__name__, "top level" in str(exc))
        ''')
    assert result.stdout.split() == ["RequestNotSentError", "False"], (
        result.stdout + result.stderr)


def test_a_request_error_pickles_whole() -> None:
    error = RequestError("Scan", "ConnectionError", "refused", [None], {"pk": {"S": "a"}})
    error.maybe_applied, error.attempts = True, 3
    back = pickle.loads(pickle.dumps(error))
    assert (type(back), str(back), back.reasons, back.item, back.maybe_applied,
            back.attempts) == (RequestError, str(error), [None], error.item, True, 3)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True])
def test_run_local_refuses_a_bad_number_of_workers(workers: object) -> None:
    with pytest.raises(DynaormError, match="workers must be an int >= 1"):
        jobs.run_local(jobs.backfill(Doc, add_step), workers=workers)  # type: ignore[arg-type]


@pytest.mark.parametrize("option", ["--workers", "--segments"])
@pytest.mark.parametrize("value", ["0", "-2", "x"])
def test_workers_0_is_a_usage_error(option: str, value: str, tmp_path: Path) -> None:
    """0.6: ``--workers 0`` was a raw ``ValueError`` (exit 1); the CLI promises 2."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    result = subprocess.run([sys.executable, "-m", "dynaorm", "check",
                             "tests.support.job_models:jobs_table", "--engine", "local",
                             option, value], cwd=tmp_path, env=env, text=True,
                            capture_output=True, timeout=120, check=False)
    assert result.returncode == 2, result.stderr
    assert result.stderr.splitlines() == [
        f"dynaorm check: error: argument {option}: a whole number of at least 1, not "
        f"{value!r} (see dynaorm check --help)"]


def test_moto_server_logs_no_line_per_request(capfd: pytest.CaptureFixture[str],
                                              caplog: pytest.LogCaptureFixture) -> None:
    """0.6: werkzeug logged ``"POST / HTTP/1.1" 200`` for every request."""
    from dynaorm import Session

    caplog.set_level(logging.INFO)
    table = Doc.Meta.table
    saved = table.binding()
    try:
        with moto_server() as url:
            table.connect(url)
            table.create()
            with Session(table) as s:
                s.save(Counter(id="d1"))
            assert Session(table).get(Counter, id="d1") is not None
    finally:
        table.restore(saved)
    out, err = capfd.readouterr()
    assert "HTTP/1.1" not in out + err + caplog.text


def test_install_lists_every_extra_and_the_bridge_as_present() -> None:
    """0.6's install page left out the ``export`` extra and called the PynamoDB bridge
    future work (``dynaorm/pynamodb.py`` exists). An extra of 0.7 is required here once
    its module has landed."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    page = (ROOT / "docs" / "guide" / "install.md").read_text()
    rows = {line.split("|")[1].strip().strip("`") for line in page.splitlines()
            if line.startswith("| `")}
    landed = {name for name in extras if name not in ("mcp", "lake", "powertools") or (
        ROOT / "dynaorm" / name).exists() or (ROOT / "dynaorm" / f"{name}.py").exists()}
    assert landed - rows == set()
    assert {"export", "pynamodb"} <= {name for name in extras if f'dynaorm[{name}]' in page}
    assert (ROOT / "dynaorm" / "pynamodb.py").exists()
    assert "imports it yet" not in page and "later release" not in page


def _section(text: str, heading: str) -> str:
    """The text of a ``## heading`` section of a markdown page, up to the next one."""
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start:end if end >= 0 else len(text)]


def test_the_readme_lists_every_extra_and_what_is_new() -> None:
    """(issue 73) 0.7's README said nothing of 0.7, and its extras left out ``mcp``,
    ``lake`` and ``powertools``."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    readme = (ROOT / "README.md").read_text()
    install = _section(readme, "Install")
    assert {name for name in extras if f"`{name}`" not in install} == set()
    new = _section(readme, "What's new")
    for release in ("0.7", "0.8"):
        assert f"### {release}" in new, release
    for name in ("idempotency_key", "scope=", "dynaorm mcp", 'format="iceberg"',
                 "dynaorm.powertools", "VectorIndexes", "--format cloudformation"):
        assert name in new, name


def test_make_demo_is_said_to_need_what_it_needs() -> None:
    """(issue 73) the README and the install page said ``make demo`` needs npm and Java:
    it runs on the in-process moto of its own ``.venv-demo``; ``make test`` needs them."""
    make = (ROOT / "Makefile").read_text()
    demo = make[make.index("\ndemo:"):].split("\n\n")[0]
    assert "npm" not in demo and "engines" not in demo and "ddb-local" not in demo
    for page in (ROOT / "README.md", ROOT / "docs" / "guide" / "install.md"):
        text = page.read_text()
        said = [p for p in text.split("\n\n") if "make demo" in p and "Java" in p]
        assert said, page
        for paragraph in said:
            sentence = next(s for s in paragraph.replace("\n", " ").split(". ")
                            if "Java" in s)
            assert "make test" in sentence and "make demo" not in sentence, (page, sentence)


def test_the_agents_guide_says_receipts_shipped() -> None:
    """(issue 73) agents.md said an idempotent tool call "needs dynaorm's receipts ...
    without them the tool says so", as if they had not shipped (0.7 shipped them)."""
    page = (ROOT / "docs" / "guide" / "agents.md").read_text()
    assert "without them the tool" not in page
    assert "needs dynaorm's receipts" not in page and "(exactly-once.md)" in page
