"""What a package adds to dynaorm, found by its entry points (issue 80, contract 24 "One
public door"; :mod:`dynaorm.plugins`): a command (``dynaorm.commands``), a model format
(``dynaorm.formats``), an export format (``dynaorm.export_formats``) and a tracer
(``dynaorm.tracers``), each registered by a third party's distribution made for the test
(``tests/support/distributions.py``: a dist-info on ``sys.path``, what pip would install),
written on the public API only, found and used. dynaorm's own (``iam``, ``mcp``, the model
formats, ``iceberg``, OpenTelemetry's tracer) are found the same way: their tests are
the lake's, the MCP server's, the formats' and tracing's; ``test_import.py`` holds
``import dynaorm`` to loading no OpenTelemetry module."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dynaorm import Client, Entity, Session, Table, Tracing, formats
from dynaorm.cli.main import main
from dynaorm.errors import DynaormError
from dynaorm.jobs import ExportError, export, run_local
from dynaorm.plugins import GROUPS, found, loaded
from dynaorm.testing import TestBackend, moto_backend
from tests.support.distributions import distribution, installed
from tests.support.export_models import exports
from tests.support.export_setup import aws, fill_exports, tb
from tests.support.models import app

#: the export tests' fixtures (moto's S3, ``exports`` filled)
_ = aws, tb

#: the third party's package: written on dynaorm's public API alone
PROBE = '''
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from dynaorm import Hook, Operation
from dynaorm.cli import connection_options, load_table
from dynaorm.jobs import ExportError, Job


# a command: `dynaorm hello MODULE:TABLE`
def add_hello(sub):
    p = sub.add_parser("hello", help="count a table's entities (a probe)")
    p.add_argument("table", metavar="MODULE:TABLE")
    connection_options(p)
    p.set_defaults(run=hello)


def add_check(sub):  # (dynaorm's own name: refused)
    sub.add_parser("check", help="not dynaorm's check")


def hello(args, out):
    table = load_table(args.table)
    print(f"hello {table.name}: {len(table.entities)} entities", file=out)
    return 3


# a model format: the entities' names and keys, as text
def to_format(model):
    lines = [f"{e['name']} {e['pk']} {e['sk']}" for e in model["entities"]]
    return "\\n".join(lines) + "\\n", ["names: only names and keys"]


# an export format: the staged datasets' row counts, written to `into`
@dataclass(frozen=True)
class CountingJob(Job):
    staged: Any = None
    into: str = ""

    def merge(self, results):
        report = super().merge(results)
        counts = {name: sum(part.num_rows for part in self.staged.read(name))
                  for name, _, _ in self.staged.datasets}
        Path(self.into).write_text(json.dumps(counts))
        return report


class Counting:
    def check(self, options):
        if set(options) != {"into"}:
            raise ExportError("format='counts' takes into= alone")

    def job(self, job, staged, options):
        return CountingJob(job.template, job.rate, staged, options["into"])

    def add_arguments(self, parser):
        parser.add_argument("--into", default=None, help="--format counts: the file")

    def arguments(self, args):
        return {"into": args.into}


COUNTS = Counting()


# a tracer: the operations of every client, while it is on
SEEN: list[str] = []


class Recorder(Hook):
    wants_origins = False

    def __init__(self, client):
        self.client = client
        self.on = True

    def active(self):
        return self.on

    def on_start(self, phase):
        if isinstance(phase, Operation):
            SEEN.append(phase.name)
        return None

    def on_end(self, phase, token):
        return None


def recorder(client):
    return Recorder(client)


# the rows a surface keeps: under PROBE#, or stored as ProbeRow
class Rows:
    hint = "a probe's row: declare the probe's table"

    def claims(self, item, pk, sk, type_name):
        if type_name is not None:
            return type_name == "ProbeRow"
        return (item.get(pk) or {}).get("S", "").startswith("PROBE#")


ROWS = Rows()
'''

#: what the probe's distribution registers
ENTRY_POINTS = {
    "dynaorm.commands": {"hello": "probe_plugin:add_hello",
                         "broken": "probe_missing_module:add",
                         "check": "probe_plugin:add_check"},
    "dynaorm.formats": {"names": "probe_plugin"},
    "dynaorm.export_formats": {"counts": "probe_plugin:COUNTS"},
    "dynaorm.tracers": {"recorder": "probe_plugin:recorder"},
    "dynaorm.surface_rows": {"probed": "probe_plugin:ROWS"},
}


@pytest.fixture
def probe(tmp_path: Path) -> Iterator[Any]:
    """The probe's distribution installed (first on ``sys.path``); its module."""
    root = distribution(tmp_path / "site", "probe-plugin", ENTRY_POINTS, {"probe_plugin": PROBE})
    with installed(root):
        import probe_plugin

        yield probe_plugin
    sys.modules.pop("probe_plugin", None)


def test_each_group_finds_the_probes_entry_points_by_name(probe: Any) -> None:
    assert {g: set(found(g)) & set(ENTRY_POINTS[g]) for g in GROUPS} == {
        g: set(points) for g, points in ENTRY_POINTS.items()}
    assert list(found("dynaorm.commands")) == sorted(found("dynaorm.commands"))
    with pytest.raises(ValueError, match=r"not 'dynaorm\.plugins'"):
        found("dynaorm.plugins")
    with pytest.warns(RuntimeWarning, match="'broken' .*probe_missing_module"):
        commands = loaded("dynaorm.commands")
    assert commands["hello"] is probe.add_hello and "broken" not in commands


def test_what_is_found_is_what_importlib_finds(probe: Any) -> None:
    """The plain path: ``importlib.metadata.entry_points()`` parses every distribution's;
    :func:`dynaorm.plugins.found` parses only those naming a group of dynaorm's, and finds
    the same (dynaorm's own, the probe's)."""
    from importlib.metadata import entry_points

    every = entry_points()
    assert {g: {n: p.value for n, p in found(g).items()} for g in GROUPS} == {
        g: {p.name: p.value for p in every.select(group=g)} for g in GROUPS}


def test_the_cli_lists_and_runs_a_packages_command(
        probe: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """The help lists ``hello`` beside dynaorm's own ``iam`` and ``mcp``; ``dynaorm hello``
    runs it (its exit code is the command's); a command that cannot be loaded, or that
    takes one of dynaorm's names, is named on stderr and the rest run."""
    with pytest.raises(SystemExit) as done:
        main(["--help"])
    assert done.value.code == 0
    said = capsys.readouterr()
    listed = {line.split()[0] for line in said.out.splitlines() if line.startswith("    ")}
    assert {"hello", "iam", "mcp", "check", "export"} <= listed
    assert "the command 'broken' (probe_missing_module:add) cannot be added" in said.err
    assert "the command 'check' (probe_plugin:add_check) cannot be added" in said.err
    assert main(["hello", "tests.support.models:app"]) == 3
    assert capsys.readouterr().out == f"hello {app.name}: {len(app.entities)} entities\n"
    assert main(["check", "no_such_module:app"]) == 2  # (dynaorm's own check)
    assert "no module named 'no_such_module'" in capsys.readouterr().err


def test_a_packages_model_format_is_found_by_name(
        probe: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert "names" in formats.FORMATS and "names" not in formats.READABLE
    assert {"json", "workbench", "mcp", "cloudformation", "terraform"} <= set(formats.FORMATS)
    text, notes = formats.export(app.model(), "names")
    assert text.splitlines()[0].split()[0] == next(iter(app.entities.values())).__name__
    assert notes == ["names: only names and keys"]
    assert formats.as_text(app.model(), "names") == (text, notes)
    with pytest.raises(DynaormError, match="names is not read back"):
        formats.read("{}", "names")
    with pytest.raises(DynaormError, match="unknown model format 'yaml'"):
        formats.export(app.model(), "yaml")
    assert main(["model", "tests.support.models:app", "--format", "names"]) == 0
    said = capsys.readouterr()
    assert said.out == text and "dynaorm model: names: only names and keys" in said.err


@pytest.mark.engines("moto")
def test_a_packages_export_format_runs_on_the_staged_datasets(
        probe: Any, tb: TestBackend, tmp_path: Path) -> None:
    """``jobs.export(format="counts", into=...)``: the export's tasks stage the Parquet
    parts, the format's job counts them in its merge; ``dynaorm export --format counts
    --into FILE`` the same; its options are checked by it, and refused for another
    format."""
    fill_exports(tb)
    job = export(exports, tmp_path / "stage", format="counts", into=str(tmp_path / "n.json"))
    assert isinstance(job, probe.CountingJob)
    report = run_local(job)
    counts = json.loads((tmp_path / "n.json").read_text())
    assert counts == {name: report.rows.get(name, 0) for name in counts}
    assert sum(counts.values()) == sum(report.rows.values()) > 0
    with pytest.raises(ExportError, match="format='counts' takes into= alone"):
        export(exports, tmp_path, format="counts")
    with pytest.raises(ExportError, match="into= is for another format= than 'parquet'"):
        export(exports, tmp_path, into="x")
    with pytest.raises(ExportError, match="format= is 'parquet' or 'counts' or 'iceberg', "
                                          "not 'delta'"):
        export(exports, tmp_path, format="delta")
    where = "tests.support.export_models:exports"
    out = tmp_path / "cli.json"
    assert main(["export", where, str(tmp_path / "cli"), "--format", "counts",
                 "--into", str(out)]) == 0
    assert json.loads(out.read_text()) == counts
    assert main(["export", where, str(tmp_path / "x"), "--into", str(out)]) == 2
    assert main(["export", where, str(tmp_path / "x"), "--format", "counts"]) == 2


def test_every_client_attaches_a_packages_tracer(probe: Any) -> None:
    """A client made while the tracer is registered attaches it (outermost, while its
    ``active()`` says so) beside OpenTelemetry's: it sees every operation; turned off, it
    is out of the policy."""
    probe.SEEN.clear()
    client = Client(region="us-east-1")
    table = probe_table = Table(f"probe-{id(client)}", client=client)

    class Probed(Entity):
        class Meta:
            table = probe_table
            pk = "P#{pid}"
            sk = "P"

        pid: str

    with moto_backend():
        table.create()
        recorder = next(h for h in client.policy.hooks if isinstance(h, probe.Recorder))
        assert recorder.client is client and client.policy.hooks[0] is recorder
        session = Session(table)
        session.save(Probed(pid="1"))
        session.commit()
        assert Session(table).get(Probed, pid="1") == Probed(pid="1")
        assert probe.SEEN[-2:] == ["commit", "get"]
        recorder.on = False
        assert recorder not in client.policy.hooks
        seen = len(probe.SEEN)
        Session(table).get(Probed, pid="1")
        assert len(probe.SEEN) == seen
    assert isinstance(client.tracing, Tracing) and client.tracing is not recorder


def test_dynaorms_own_surfaces_are_registered_as_pyproject_declares() -> None:
    """The installed metadata is what ``pyproject.toml`` declares (an environment made
    before an entry point was added finds none of it: ``pip install -e .``, which ``make``
    does when ``pyproject.toml`` changes); each of dynaorm's own entry points loads."""
    import tomllib
    from importlib.metadata import distribution as installed_distribution

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    declared = tomllib.loads(pyproject.read_text())["project"]["entry-points"]
    points = installed_distribution("dynaorm").entry_points
    assert {g: {p.name: p.value for p in points if p.group == g} for g in GROUPS} == {
        g: declared.get(g, {}) for g in GROUPS}, "stale metadata: pip install -e . again"
    for group in GROUPS:  # (with LangGraph's adapter's, a distribution of its own)
        assert set(declared.get(group, {})) <= set(loaded(group))


def test_a_surfaces_rows_are_named_by_its_entry_point(probe: Any) -> None:
    """A row a surface keeps (the probe's: by its type name, or its key where it has
    none) is named with the surface's hint wherever dynaorm tells an unclaimed row; any
    other keeps dynaorm's own hint."""
    from dynaorm.schema.unclaimed import fix_hint, surface_hint

    assert fix_hint("ProbeRow") == probe.ROWS.hint
    assert "Meta.previous" in fix_hint("Renamed")
    assert surface_hint({"pk": {"S": "PROBE#1"}}, "pk", "sk", None) == probe.ROWS.hint
    assert surface_hint({"pk": {"S": "USER#1"}}, "pk", "sk", None) is None


#: a third party's surfaces that break: one whose module is missing, one whose claims()
#: raises, each met by every unclaimed row; and a tracer; each load of one counted
BROKEN_ROWS = '''
from dynaorm import Hook

LOADS = []


class Raising:
    hint = "never said"

    def claims(self, item, pk, sk, type_name):
        raise RuntimeError("the third party's bug")


def __getattr__(name):  # (what an entry point's load() reads)
    LOADS.append(name)
    if name == "RAISING":
        return Raising()
    if name == "tracer":
        return lambda client: Hook()
    raise AttributeError(name)
'''


def test_a_broken_surface_is_left_out_once_and_each_plugin_loaded_once_per_forget(
        tmp_path: Path) -> None:
    """A surface whose module cannot be imported, or whose ``claims()`` raises: dynaorm's
    own hint is given (a read's warning, ``dynaorm check``), never the surface's error;
    each is warned about once, not once per row met, and loaded once, until
    :func:`dynaorm.plugins.forget`. A tracer is loaded once, not once per client made
    (0.9 loaded every group's plugins again at each ask)."""
    import warnings

    from dynaorm.plugins import forget
    from dynaorm.schema.unclaimed import fix_hint, surface_hint

    root = distribution(tmp_path / "site", "broken-rows", {"dynaorm.surface_rows": {
        "missing": "broken_rows_missing:ROWS", "raising": "broken_rows:RAISING"},
        "dynaorm.tracers": {"counted": "broken_rows:tracer"}}, {"broken_rows": BROKEN_ROWS})
    with installed(root), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(100):
            if n == 50:
                forget()
            assert "Meta.previous" in fix_hint(f"Renamed{n}")
            assert surface_hint({"pk": {"S": f"USER#{n}"}}, "pk", "sk", None) is None
            Client(region="us-east-1")
        import broken_rows
    sys.modules.pop("broken_rows", None)
    said = [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]
    assert len(said) == 4, said
    assert sum("'missing'" in w for w in said) == 2 and sum(
        "'raising'" in w and "the third party's bug" in w for w in said) == 2, said
    assert sorted(broken_rows.LOADS) == ["RAISING", "RAISING", "tracer", "tracer"]


def test_a_read_that_meets_a_row_of_no_class_imports_no_surface_package() -> None:
    """LangGraph's adapter tells its rows without importing LangGraph: a read's warning
    about an unclaimed type name (its hint asked of every surface) costs no LangGraph
    import in a process that uses none."""
    import os
    import subprocess

    root = Path(__file__).resolve().parents[2]
    code = ("import sys; from dynaorm.schema.unclaimed import fix_hint; "
            "said = fix_hint('LangGraphCheckpoint'); assert 'Saver(table)' in said, said; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] == 'langgraph'))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(root), str(root / "libs" / "langgraph"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    assert out.stdout.strip() == "[]", out.stdout[:300]
