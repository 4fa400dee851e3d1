"""What `pip install dynaorm` gives a user: the wheel is built from this checkout and
installed into fresh virtual environments, without extras and with ``[testing]``.

The environments are cached under ``.cache/packaging/<hash of the declared dependencies>``:
dependencies are installed once per change of them; each run reinstalls only the freshly
built wheel (no dependencies), so the test stays fast enough for every CI run.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dynaorm

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "packaging"
#: Distributions a plain install must not bring (the 0.1 install pulled all of them).
NOT_AT_RUNTIME = {"moto", "pytest", "boto3", "docker", "werkzeug", "flask", "cryptography",
                  "aiobotocore"}
HINT = 'pip install "dynaorm[testing]"'


def _key() -> str:
    """Changes when the declared dependencies (or the Python) change, not on other edits."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [project["dependencies"], project["optional-dependencies"]["testing"]]
    digest = hashlib.sha256(json.dumps(declared).encode())
    digest.update(sys.version.encode())
    return digest.hexdigest()[:16]


def _run(*cmd: str | Path, cwd: Path | None = None, check: bool = True,
         timeout: float = 600) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTHON", "VIRTUAL_ENV", "DYNAORM_", "PYTEST_"))}
    result = subprocess.run([str(c) for c in cmd], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=timeout, check=False)
    if check and result.returncode != 0:
        raise AssertionError(f"{cmd} exited {result.returncode}:\n{result.stdout}\n"
                             f"{result.stderr}")
    return result


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheelhouse")
    _run(sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps",
         "--no-build-isolation", "-w", out, ROOT,
         cwd=out)
    (built,) = out.glob("dynaorm-*.whl")
    assert f"dynaorm-{dynaorm.__version__}-" in built.name
    return built


def _venv(name: str, wheel: Path, extra: str = "") -> Path:
    """A cached venv holding ``wheel`` (with ``extra``); returns its bin directory."""
    CACHE.mkdir(parents=True, exist_ok=True)
    key = _key()
    for old in CACHE.iterdir():  # environments of older dependency sets
        if old.name != key:
            shutil.rmtree(old, ignore_errors=True)
    home = CACHE / key / name
    bin_dir = home / "bin"
    ready = home / ".ready"
    if not ready.exists():
        shutil.rmtree(home, ignore_errors=True)
        _run(sys.executable, "-m", "venv", home)
        _run(bin_dir / "python", "-m", "pip", "install", "--quiet", f"{wheel}{extra}")
        ready.touch()
    else:  # the dependencies are there: swap in the wheel just built
        _run(bin_dir / "python", "-m", "pip", "install", "--quiet", "--no-deps",
             "--force-reinstall", wheel)
    return bin_dir


def _distributions(bin_dir: Path) -> set[str]:
    out = _run(bin_dir / "python", "-m", "pip", "list", "--format=json").stdout
    return {d["name"].lower().replace("_", "-") for d in json.loads(out)}


@pytest.fixture(scope="module")
def plain(wheel: Path) -> Path:
    return _venv("plain", wheel)


@pytest.fixture(scope="module")
def testing(wheel: Path) -> Path:
    return _venv("testing", wheel, "[testing]")


def test_plain_install_has_only_runtime_dependencies(plain: Path) -> None:
    installed = _distributions(plain)
    assert {"dynaorm", "pydantic", "pynamodb", "botocore", "svix-ksuid"} <= installed
    assert not installed & NOT_AT_RUNTIME, installed & NOT_AT_RUNTIME


def test_plain_install_imports_and_runs_the_command(plain: Path, tmp_path: Path) -> None:
    python = plain / "python"
    out = _run(python, "-c", "import dynaorm, dynaorm.tools.cli; print(dynaorm.__version__)",
               cwd=tmp_path)
    assert out.stdout.strip() == dynaorm.__version__
    version = _run(plain / "dynaorm", "--version", cwd=tmp_path)
    assert version.stdout.strip() == f"dynaorm {dynaorm.__version__}"
    for cmd in ((plain / "dynaorm", "--help"), (python, "-m", "dynaorm", "--help")):
        result = _run(*cmd, cwd=tmp_path)
        assert "usage: dynaorm" in result.stdout
        assert all(c in result.stdout for c in ("create-table", "describe", "check", "demo"))


def test_plain_install_demo_says_what_to_install(plain: Path, tmp_path: Path) -> None:
    result = _run(plain / "dynaorm", "demo", cwd=tmp_path, check=False)
    assert result.returncode == 1
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and HINT in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_testing_extra_runs_the_demo(testing: Path, tmp_path: Path) -> None:
    installed = _distributions(testing)
    assert {"moto", "pytest"} <= installed
    result = _run(testing / "dynaorm", "demo", cwd=tmp_path)
    assert "dynaorm demo on the in-process moto backend" in result.stdout
    assert "0 problem(s)" in result.stdout
