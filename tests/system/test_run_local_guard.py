"""Red team (issue 59, point 7): ``run_local``'s guard check holds for the ways a script
runs: a guard nested in a top-level ``try``/``with`` is a guard (tools59 refused it: it
looked at the top-level statement only), a zipapp and a latin-1 source are read as Python
reads them (tools59: ``NotADirectoryError``/``UnicodeDecodeError`` from ``open``), ``python
-m`` and ``runpy`` are checked like a script, a ``__main__`` without ``__file__`` (Jupyter,
``python -c``) is not refused."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
HEAD = "from dynaorm import jobs\nfrom tests.support.job_models import Doc, add_step\n"
CALL = ("Doc.Meta.table.connect('http://127.0.0.1:9')\n"
        "try:\n    jobs.run_local(jobs.backfill(Doc, add_step, segments=2), workers=2)\n"
        "except Exception as exc:\n    print(type(exc).__name__, 'top level' in str(exc))\n")


def _indent(text: str, by: int) -> str:
    return textwrap.indent(text, " " * by)


def _run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{cwd}"}
    return subprocess.run([sys.executable, *args], cwd=cwd, env=env, text=True,
                          capture_output=True, timeout=120, check=False)


GUARDED = HEAD + "if __name__ == '__main__':\n" + _indent(CALL, 4)
UNGUARDED = HEAD + CALL
SCRIPTS = {
    "in-try": HEAD + "try:\n    if __name__ == '__main__':\n" + _indent(CALL, 8)
    + "except KeyboardInterrupt:\n    pass\n",
    "in-with": HEAD + "import contextlib\nwith contextlib.suppress(KeyboardInterrupt):\n"
    "    if __name__ == '__main__':\n" + _indent(CALL, 8),
    "reversed": HEAD + "if '__main__' == __name__:\n" + _indent(CALL, 4),
}


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_a_guard_nested_in_a_top_level_block_is_a_guard(tmp_path: Path, name: str) -> None:
    (tmp_path / "script.py").write_text(SCRIPTS[name])
    result = _run(["script.py"], tmp_path)
    assert result.stdout.split() == ["RequestNotSentError", "False"], result.stderr


def test_a_zipapp_is_read_as_python_reads_it(tmp_path: Path) -> None:
    with zipfile.ZipFile(tmp_path / "app.pyz", "w") as app:
        app.writestr("__main__.py", GUARDED)
    result = _run(["app.pyz"], tmp_path)
    assert result.stdout.split() == ["RequestNotSentError", "False"], result.stderr


def test_a_latin1_script_is_read_as_python_reads_it(tmp_path: Path) -> None:
    text = "# -*- coding: latin-1 -*-\n# caf\xe9\n" + GUARDED
    (tmp_path / "script.py").write_bytes(text.encode("latin-1"))
    result = _run(["script.py"], tmp_path)
    assert result.stdout.split() == ["RequestNotSentError", "False"], result.stderr


@pytest.mark.parametrize("how", ["-m", "runpy"])
def test_module_and_runpy_runs_are_checked(tmp_path: Path, how: str) -> None:
    (tmp_path / "jobscript.py").write_text(UNGUARDED)
    args = (["-m", "jobscript"] if how == "-m" else
            ["-c", "import runpy; runpy.run_path('jobscript.py', run_name='__main__')"])
    result = _run(args, tmp_path)
    assert result.stdout.split() == ["DynaormError", "True"], result.stderr
    (tmp_path / "jobscript.py").write_text(GUARDED)
    result = _run(args, tmp_path)
    assert result.stdout.split() == ["RequestNotSentError", "False"], result.stderr


def test_a_main_without_a_file_is_not_refused(tmp_path: Path) -> None:
    """``python -c`` (as Jupyter: ``__main__`` without ``__file__``): nothing to read."""
    result = _run(["-c", UNGUARDED], tmp_path)
    assert "top level" not in result.stdout + result.stderr
