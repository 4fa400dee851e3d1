"""What `pip install dynaorm` gives a user: the wheel is built from this checkout and
installed into fresh virtual environments, without extras and with each extra
(``testing``, ``async``, ``pynamodb``, ``otel``); the README's quickstart, as written, and
``dynaorm demo`` run in the ``testing`` one, and each install's size is measured.

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
import zipfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

import dynaorm
from tests.support.readme_snippets import check_quickstart_output, run_quickstart

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "packaging"
#: Distributions a plain install must not bring (the 0.1 install pulled all of them).
NOT_AT_RUNTIME = {"moto", "pytest", "boto3", "docker", "werkzeug", "flask", "cryptography",
                  "aiobotocore", "pynamodb", "pyarrow"}
#: The runtime dependencies: exactly what dynaorm/ imports.
RUNTIME = {"botocore", "pydantic", "svix-ksuid", "httptools"}
#: The published extras; development tools live in PEP 735 groups, never in the metadata.
EXTRAS = {"testing", "async", "pynamodb", "otel", "encryption", "spark", "export", "mcp", "lake",
          "powertools", "langgraph"}
DEV_TOOLS = {"mypy", "pyright", "ruff", "hypothesis", "pytest-xdist", "mkdocs", "mkdocstrings",
             "radon", "import-linter",
             "pydynantic", "aioboto3", "boto3-stubs", "setuptools", "wheel",
             "opentelemetry-sdk", "fastapi", "uvicorn", "httpx", "duckdb", "polars",
             "cfn-lint", "python-hcl2", "build", "twine",
             "langgraph-checkpoint-conformance", "langgraph-checkpoint-aws"}
#: The `testing` extra's install size (site-packages beyond an empty venv's), in MB:
#: moto[server] made it 307 MB; moto[dynamodb] with flask and flask-cors is ~145.
TESTING_LIMIT_MB = 150
HINT = 'pip install "dynaorm[testing]"'


def _key() -> str:
    """Changes when the declared dependencies (or the Python) change, not on other edits."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = [project["dependencies"], project["optional-dependencies"]]
    digest = hashlib.sha256(json.dumps(declared).encode())
    digest.update(sys.version.encode())
    digest.update(b"venvs without pip")  # (how they are made: see _venv)
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


#: The environments: name -> what is installed after the wheel ("empty": nothing at all,
#: the baseline of the sizes).
VENVS = {"empty": None, "plain": "", "testing": "[testing]", "async": "[async]",
         "pynamodb": "[pynamodb]", "otel": "[otel]"}


def _pip(bin_dir: Path, *args: str | Path) -> subprocess.CompletedProcess[str]:
    """This interpreter's pip acting on the venv of ``bin_dir`` (``pip --python``)."""
    return _run(sys.executable, "-m", "pip", "--python", bin_dir / "python", *args)


def _venv(name: str, wheel: Path, extra: str | None) -> Path:
    """A cached venv holding ``wheel`` (with ``extra``); returns its bin directory. Made
    without pip (``--without-pip``; this interpreter's pip installs into it): ensurepip
    cost ~3 s of CPU a venv, six of them on every cold cache (every CI run), and pip
    itself is nothing a user's install of dynaorm holds."""
    home = CACHE / _key() / name
    bin_dir = home / "bin"
    ready = home / ".ready"
    if not ready.exists():
        shutil.rmtree(home, ignore_errors=True)
        _run(sys.executable, "-m", "venv", "--without-pip", home)
        if extra is not None:
            _pip(bin_dir, "install", "--quiet", f"{wheel}{extra}")
        ready.touch()
    elif extra is not None:  # the dependencies are there: swap in the wheel just built
        _pip(bin_dir, "install", "--quiet", "--no-deps", "--force-reinstall", wheel)
    return bin_dir


def _distributions(bin_dir: Path) -> set[str]:
    out = _pip(bin_dir, "list", "--format=json").stdout
    return {d["name"].lower().replace("_", "-") for d in json.loads(out)}


def _size_mb(bin_dir: Path) -> float:
    """The disk space the venv's site-packages takes, in MB as ``du -sm`` counts it
    (allocated blocks, MiB: the unit 0.2's 307 MB was measured in)."""
    (site,) = (bin_dir.parent / "lib").glob("python*/site-packages")
    total = sum(f.lstat().st_blocks * 512 for f in site.rglob("*"))
    return total / 2**20


@pytest.fixture(scope="module")
def venvs(wheel: Path) -> dict[str, Path]:
    """Every environment of VENVS (bin directories), built side by side: installing from
    the index is mostly waiting, and a cold cache would otherwise take minutes."""
    CACHE.mkdir(parents=True, exist_ok=True)
    key = _key()
    for old in CACHE.iterdir():  # environments of older dependency sets
        if old.name != key:
            shutil.rmtree(old, ignore_errors=True)
    with ThreadPoolExecutor(max_workers=len(VENVS)) as pool:
        futures = {name: pool.submit(_venv, name, wheel, extra) for name, extra in VENVS.items()}
        return {name: f.result() for name, f in futures.items()}


@pytest.fixture(scope="module")
def plain(venvs: dict[str, Path]) -> Path:
    return venvs["plain"]


@pytest.fixture(scope="module")
def testing(venvs: dict[str, Path]) -> Path:
    return venvs["testing"]


def test_plain_install_has_only_runtime_dependencies(plain: Path) -> None:
    installed = _distributions(plain)
    assert {"dynaorm"} | RUNTIME <= installed
    assert not installed & NOT_AT_RUNTIME, installed & NOT_AT_RUNTIME


def test_plain_install_imports_and_runs_the_command(plain: Path, tmp_path: Path) -> None:
    python = plain / "python"
    out = _run(python, "-c", "import dynaorm, dynaorm.cli.main; print(dynaorm.__version__)",
               cwd=tmp_path)
    assert out.stdout.strip() == dynaorm.__version__
    version = _run(plain / "dynaorm", "--version", cwd=tmp_path)
    assert version.stdout.strip() == f"dynaorm {dynaorm.__version__}"
    for cmd in ((plain / "dynaorm", "--help"), (python, "-m", "dynaorm", "--help")):
        result = _run(*cmd, cwd=tmp_path)
        assert "usage: dynaorm" in result.stdout
        # (iam and mcp: found by the wheel's entry points, group dynaorm.commands)
        assert all(c in result.stdout for c in ("create-table", "describe", "check", "demo",
                                                "iam", "mcp"))


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


def test_the_readme_quickstart_runs_as_written_in_the_testing_install(
        testing: Path, tmp_path: Path) -> None:
    check_quickstart_output(run_quickstart(testing / "python", tmp_path))


def test_testing_extra_serves_the_moto_server(testing: Path, tmp_path: Path) -> None:
    """The plugin's ``dynaorm_moto_server`` runs on the extra (flask, flask-cors: no
    moto[server])."""
    code = ("import botocore.session\n"
            "from dynaorm.testing import moto_server\n"
            "from dynaorm.client.settings import local_credentials\n"
            "with moto_server() as url:\n"
            "    c = botocore.session.get_session().create_client(\n"
            "        'dynamodb', endpoint_url=url, region_name='us-east-1',\n"
            "        **local_credentials(url))\n"
            "    print(c.list_tables()['TableNames'])\n")
    result = _run(testing / "python", "-c", code, cwd=tmp_path)
    assert result.stdout.strip().endswith("[]"), result.stdout


def test_the_wheel_publishes_only_runtime_needs(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(zf.read(meta_name).decode())
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), names
    assert meta["License-Expression"] == "MIT"
    assert set(meta.get_all("Provides-Extra") or []) == EXTRAS
    requires = [Requirement(r) for r in meta.get_all("Requires-Dist") or []]
    assert {r.name.lower() for r in requires if r.marker is None} == RUNTIME, requires
    assert not {r.name.lower() for r in requires} & DEV_TOOLS, requires
    (pynamodb,) = [r for r in requires if r.name.lower() == "pynamodb"]
    assert pynamodb.marker is not None and not any(s.operator.startswith("<")
                                                   for s in pynamodb.specifier), pynamodb
    # (0.10: LangGraph's adapter is a distribution of its own: none of it in this wheel)
    assert not [n for n in names if n.startswith(("dynaorm_langgraph", "dynaorm/langgraph/"))]


def test_the_langgraph_adapter_is_released_beside_dynaorm() -> None:
    """0.10: LangGraph's adapter is the distribution ``dynaorm-langgraph`` (``libs/
    langgraph``), at dynaorm's version: the ``langgraph`` extra pins it, and it pins
    dynaorm (``scripts/release-check.sh`` builds and installs both)."""
    version = dynaorm.__version__
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    lib = tomllib.loads((ROOT / "libs" / "langgraph" / "pyproject.toml").read_text())["project"]
    assert (lib["name"], lib["version"]) == ("dynaorm-langgraph", version)
    assert root["optional-dependencies"]["langgraph"] == [f"dynaorm-langgraph=={version}"]
    assert f"dynaorm=={version}" in lib["dependencies"]


@pytest.mark.parametrize("extra", ["async", "pynamodb", "otel"])
def test_each_extra_installs_and_imports(venvs: dict[str, Path], extra: str,
                                         tmp_path: Path) -> None:
    bin_dir = venvs[extra]
    module = {"async": "aiobotocore", "pynamodb": "pynamodb",
              "otel": "opentelemetry.trace"}[extra]
    out = _run(bin_dir / "python", "-c",
               f"import dynaorm, {module}; from dynaorm import AsyncSession; print('ok')",
               cwd=tmp_path)
    assert out.stdout.strip() == "ok"
    assert not _distributions(bin_dir) & {"moto", "pytest"}


def test_install_sizes(venvs: dict[str, Path],
                       record_property: Callable[[str, object], None]) -> None:
    """Each install's site-packages beyond an empty venv's, in MB; the ``testing`` extra
    stays under TESTING_LIMIT_MB (the demo needs nothing more)."""
    base = _size_mb(venvs["empty"])
    sizes = {name: _size_mb(b) - base for name, b in venvs.items() if name != "empty"}
    counts = {name: len(_distributions(b)) for name, b in venvs.items() if name != "empty"}
    report = ", ".join(f"{k}: {v:.1f} MB" for k, v in sizes.items())
    print(f"\ninstall sizes beyond an empty venv: {report}; distributions: {counts}")
    for name, mb in sizes.items():
        record_property(f"install_mb_{name}", round(mb, 1))
    assert sizes["testing"] < TESTING_LIMIT_MB, report
    assert sizes["plain"] < sizes["testing"], report
