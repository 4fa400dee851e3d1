"""The README's quickstart is the code that ``make typecheck`` checks: every statement of
its first Python block stands, in order, in ``tests/support/readme_snippets.py`` (which mypy
--strict and pyright check), so the two cannot drift apart unnoticed. And it runs: the
block, exactly as written, is saved as a script and run by a fresh Python in an empty
directory, with no AWS configuration in its environment (what a new user has).

tests/system/test_packaging.py runs it again in a venv holding only the built wheel and
its ``testing`` extra.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from dynaorm import Table
from tests.support.readme_snippets import (
    check_quickstart_output,
    on_endpoint,
    quickstart_source,
    run_quickstart,
)

ROOT = Path(__file__).resolve().parents[2]


def _python(tmp_path: Path) -> Path:
    """This Python, importing the dynaorm under test: the new user's environment has no
    ``PYTHONPATH`` (``clean_env()``), and the interpreter's own install of dynaorm may be
    another checkout's (an editable install), so the checkout is put first on its path and
    nothing else changes."""
    wrapper = tmp_path / "bin" / "python"
    wrapper.parent.mkdir()
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={shlex.quote(str(ROOT))} "
                       f"exec {shlex.quote(sys.executable)} \"$@\"\n")
    wrapper.chmod(0o755)
    found = subprocess.run([str(wrapper), "-c", "import dynaorm; print(dynaorm.__file__)"],
                           cwd=tmp_path, env={}, capture_output=True, text=True, timeout=60,
                           check=True).stdout.strip()
    assert Path(found).parent.parent == ROOT, found
    return wrapper


def _statements(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        code = re.sub(r"\s+#.*$", "", line).strip()
        if code and not code.startswith("#"):
            out.append(re.sub(r"\s+", " ", code))
    return out


def _quickstart() -> str:
    return quickstart_source()


def _imports(lines: list[str]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for line in lines:
        if m := re.fullmatch(r"from (\S+) import (.*)", line):
            out.setdefault(m.group(1), set()).update(n.strip() for n in m.group(2).split(","))
    return out


def _missing(wanted: list[str], have: list[str]) -> list[str]:
    """Statements of ``wanted`` not found, in order, in ``have`` (imports: by name)."""
    imported = _imports(have)
    missing = [f"{mod}: {sorted(names - imported.get(mod, set()))}"
               for mod, names in _imports(wanted).items() if names - imported.get(mod, set())]
    rest = iter(line for line in have if not line.startswith("from "))
    for line in wanted:
        if not line.startswith("from ") and line not in rest:  # consumes up to the match
            missing.append(line)
            break
    return missing


def test_the_quickstart_is_the_type_checked_snippet() -> None:
    missing = _missing(_statements(_quickstart()),
                       _statements((ROOT / "tests" / "support" / "readme_snippets.py").read_text()))
    assert missing == [], f"README quickstart lines not in readme_snippets.py: {missing}"


def test_the_check_catches_a_drift() -> None:
    have = _statements((ROOT / "tests" / "support" / "readme_snippets.py").read_text())
    quickstart = _quickstart()
    for before, after in (("normalize=str.lower", "normalize=str.upper"),
                          ("Unique, ksuid", "Unique, Shards, ksuid"),
                          ("s.save(bob)\n    s.commit()", "s.commit()\n    s.save(bob)")):
        assert before in quickstart
        assert _missing(_statements(quickstart.replace(before, after)), have), after


def test_the_quickstart_runs_as_written(tmp_path: Path) -> None:
    workdir = tmp_path / "project"
    workdir.mkdir()
    check_quickstart_output(run_quickstart(_python(tmp_path), workdir))


@pytest.mark.dynaorm_index_lag(0, reason="checks its own writes through a global index")
def test_the_quickstart_runs_on_dynamodb_local_with_the_one_change(
        tmp_path: Path, ddb_local: str) -> None:
    """The README: put ``main()`` after ``app.connect(url)`` in place of the last two lines;
    no AWS configuration is needed for a loopback endpoint."""
    source = on_endpoint(quickstart_source(), ddb_local)
    table = Table("app", endpoint_url=ddb_local)  # the run's shared server: start clean
    table.delete()
    workdir = tmp_path / "project"
    workdir.mkdir()
    try:
        check_quickstart_output(run_quickstart(_python(tmp_path), workdir, source))
    finally:
        table.delete()
