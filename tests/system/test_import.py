"""``import dynaorm`` stays cheap: botocore (its client and session machinery, its
exceptions) and the thread pool load when a table first sends, not at import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def _modules_after(statement: str) -> set[str]:
    code = f"{statement}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return set(out.split())


def test_import_dynaorm_loads_no_botocore() -> None:
    loaded = _modules_after("import dynaorm")
    heavy = {m for m in loaded if m.split(".")[0] in (
        "botocore", "urllib3", "aiobotocore", "aiohttp", "ksuid", "concurrent")}
    assert not heavy, sorted(heavy)


def test_first_table_use_loads_it() -> None:
    loaded = _modules_after(
        "import dynaorm\n"
        "dynaorm.Table('things', endpoint_url='http://127.0.0.1:9', region='eu-west-1').client")
    assert {"botocore.session", "botocore.client"} <= loaded


def test_import_dynaorm_loads_no_wire_or_async_machinery() -> None:
    """The wire, asyncio, the async session, the jobs, the command and the PynamoDB bridge load when
    used: ``import dynaorm`` pays for none of them."""
    loaded = _modules_after("import dynaorm")
    deferred = {m for m in loaded if m.split(".")[0] in ("asyncio", "ssl", "http", "httptools")
                or m.split(".")[:2] in (["dynaorm", n] for n in (
                    "wire", "aio", "jobs", "cli", "testing", "pynamodb"))}
    assert not deferred, sorted(deferred)


#: the entity the child programs define (on ``app``; a template: ``.format()`` it)
_THING = (
    "class Thing(dynaorm.Entity):\n"
    "    class Meta:\n"
    "        table = app\n"
    "        pk = 'THING#{{thing_id}}'\n"
    "        sk = 'THING'\n"
    "    thing_id: str\n")

_FIRST_GET = (
    "import os, socket, sys\n"
    "closed = socket.socket()\n"
    "closed.bind(('127.0.0.1', 0))\n"
    "url = '{scheme}://127.0.0.1:%d' % closed.getsockname()[1]\n"
    "import dynaorm\n"
    "app = dynaorm.Table('things', endpoint_url=url, max_attempts=1)\n"
    + _THING +
    "try:\n"
    "    dynaorm.Session(app).get(Thing, thing_id='t1')\n"
    "except dynaorm.RequestNotSentError:\n"
    "    pass\n"
    "else:\n"
    "    raise AssertionError('the request was answered')\n"
    "print('\\n'.join(sorted(sys.modules)))\n")
#: what a first request in the plain environment does without (the botocore session, its
#: credential chain, its signer, its HTTP session, urllib3)
_SESSION_MODULES = {"botocore.session", "botocore.credentials", "botocore.auth",
                    "botocore.httpsession", "botocore.useragent", "botocore.utils",
                    "botocore.client", "urllib3"}


def _first_get_modules(scheme: str, home: str, **extra: str) -> set[str]:
    out = subprocess.run([sys.executable, "-c", _FIRST_GET.format(scheme=scheme)], check=True,
                         capture_output=True, text=True, env=_plain_environ(home, **extra)).stdout
    return set(out.split())


def _plain_environ(home: str, **extra: str) -> dict[str, str]:
    """The plain environment (as on AWS Lambda): credentials and region in it, no shared
    files under ``home``, no other AWS setting."""
    import os

    environ = {k: v for k, v in os.environ.items() if not (
        k.startswith(("AWS_", "BOTO", "_X_AMZN")) or k.lower().endswith("_proxy")
        or k == "REQUESTS_CA_BUNDLE")}
    environ.update(HOME=home, AWS_ACCESS_KEY_ID="AKID", AWS_SECRET_ACCESS_KEY="SECRET",
                   AWS_SESSION_TOKEN="TOKEN", AWS_REGION="eu-west-1",
                   AWS_LAMBDA_FUNCTION_NAME="f", AWS_EXECUTION_ENV="AWS_Lambda_python3.11",
                   **extra)
    return environ


def test_a_first_request_in_the_plain_environment_imports_no_botocore_session(
        tmp_path: Path) -> None:
    """Credentials and region in the environment, no shared files (as on AWS Lambda) or
    files whose default profile holds only a region, the output format, credentials, a
    retry mode and a number of attempts:
    the first request is resolved, signed and sent without botocore's session (an
    ``https://`` endpoint's TLS context included); in any other environment the session
    decides."""
    for scheme in ("http", "https"):
        loaded = _first_get_modules(scheme, str(tmp_path))
        assert "dynaorm.wire.http" in loaded
        assert not loaded & _SESSION_MODULES, sorted(loaded & _SESSION_MODULES)
        assert not {m for m in loaded if m.split(".")[0] == "urllib3"}
    (tmp_path / ".aws").mkdir()
    config = tmp_path / ".aws" / "config"
    config.write_text("[default]\nregion = eu-west-1\noutput = json\n")
    with_plain_config = _first_get_modules("http", str(tmp_path))
    assert "botocore.configloader" in with_plain_config
    assert not with_plain_config & _SESSION_MODULES, sorted(with_plain_config & _SESSION_MODULES)
    config.write_text("[default]\nregion = eu-west-1\nretry_mode = standard\n")
    with_retry_mode = _first_get_modules("http", str(tmp_path))  # (dynaorm's Config sets it)
    assert not with_retry_mode & _SESSION_MODULES, sorted(with_retry_mode & _SESSION_MODULES)
    config.write_text("[default]\nregion = eu-west-1\nmax_attempts = 3\n")
    with_attempts = _first_get_modules("http", str(tmp_path))  # (dynaorm reads it itself)
    assert not with_attempts & _SESSION_MODULES, sorted(with_attempts & _SESSION_MODULES)
    config.write_text("[default]\nregion = eu-west-1\nca_bundle = /etc/ssl/certs/none.pem\n")
    with_config = _first_get_modules("http", str(tmp_path))
    assert {"botocore.session", "botocore.credentials"} <= with_config


def test_first_sync_request_loads_no_asyncio(tmp_path: Path) -> None:
    """A sync process's first request (here one refused by a port bound but not listening:
    the request is rendered and signed on dynaorm's own wire, its connection refused)
    imports the wire but never asyncio, whether botocore's session resolved its settings
    (a shared config file with a setting the plain path does not read) or not."""
    plain = _first_get_modules("http", str(tmp_path))
    (tmp_path / "config").write_text("[default]\nca_bundle = /etc/ssl/certs/none.pem\n")
    with_session = _first_get_modules("http", str(tmp_path),
                                      AWS_CONFIG_FILE=str(tmp_path / "config"))
    assert "botocore.session" in with_session and "botocore.session" not in plain
    for loaded in (plain, with_session):
        assert "dynaorm.wire.http" in loaded
        assert not {m for m in loaded if m.split(".")[0] == "asyncio"}, sorted(loaded)


#: what ``import dynaorm``, an entity and ``Session``'s reads (get, query, scan) never load:
#: the write path (staging a write, planning, rendering, sending and settling a commit, the
#: bulk writes), the previous-layout rule, page cursors, inspection, streams and
#: :mod:`logging` (loaded when a record is emitted); each is imported by the
#: first operation that needs it
DEFERRED = frozenset({
    "dynaorm.core.bulk", "dynaorm.core.commit",
    "dynaorm.schema.inspection", "dynaorm.schema.rules.previous",
    "dynaorm.schema.streams", "dynaorm.read.cursor", "dynaorm.write.conditions",
    "dynaorm.write.delete",
    "dynaorm.write.outcomes", "dynaorm.write.records", "dynaorm.write.render",
    "dynaorm.write.save", "dynaorm.write.updates", "logging"})
#: of those, what a first request loads all the same: :mod:`logging`, imported by
#: ``import botocore`` (the own wire's ``User-Agent`` names botocore's version)
_READ_LOADS = {"logging"}
#: of those, what the first save and commit load (not: the bulk writes, ``s.update()``, a
#: delete, inspection, streams, page cursors, nor the previous-layout rule (its reads
#: too): since issue 58 the write path names no rule, so that rule loads
#: with the first entity that declares ``Meta.previous``)
_COMMIT = DEFERRED - {"dynaorm.core.bulk", "dynaorm.write.updates", "dynaorm.write.delete",
                      "dynaorm.schema.inspection", "dynaorm.schema.streams",
                      "dynaorm.read.cursor", "dynaorm.schema.rules.previous"}

_READ_THEN_WRITE = (
    "import json, sys\n"
    "def loaded():\n"
    "    return sorted(m for m in sys.modules if m in DEFERRED)\n"
    "seen = {{}}\n"
    "import dynaorm\n"
    "app = dynaorm.Table({table!r}, endpoint_url={url!r}, region='eu-west-1')\n"
    + _THING +
    "    label: str = ''\n"
    "from dynaorm import Session\n"
    "seen['defined'] = loaded()\n"
    "app.create()\n"
    "s = Session(app)\n"
    "assert s.get(Thing, thing_id='t1') is None\n"
    "assert list(s.query(Thing, thing_id='t1')) == [] and list(s.scan(Thing)) == []\n"
    "import asyncio\n"
    "async def reads():\n"
    "    a = dynaorm.AsyncSession(app)\n"
    "    assert await a.get(Thing, thing_id='t1') is None\n"
    "    assert [x async for x in a.query(Thing, thing_id='t1')] == []\n"
    "    assert [x async for x in a.scan(Thing)] == []\n"
    "asyncio.run(reads())\n"
    "seen['read'] = loaded()\n"
    "s.save(Thing(thing_id='t1', label='first'))\n"
    "s.commit()\n"
    "seen['committed'] = loaded()\n"
    "found = Session(app).get(Thing, thing_id='t1')\n"
    "seen['label'] = found.label\n"
    "found.label = 'second'\n"
    "s.save(found)\n"
    "s.commit()\n"
    "seen['again'] = Session(app).get(Thing, thing_id='t1').label\n"
    "print(json.dumps(seen))\n")


def test_defining_entities_and_reading_loads_no_write_path(
        dynaorm_moto_server: str, tmp_path: Path) -> None:
    """``import dynaorm``, an entity and ``from dynaorm import Session`` load none of
    :data:`DEFERRED`, and neither do a get, a query and a scan of a ``Session`` and of an
    ``AsyncSession`` on dynaorm's own wire (a moto server; :mod:`logging` aside: see
    :data:`_READ_LOADS`); the first commit imports
    the write path, and it works: the saved item reads back, and a change of it is
    written."""
    import json
    import uuid

    code = f"DEFERRED = {sorted(DEFERRED)!r}\n" + _READ_THEN_WRITE.format(
        table=f"imports-{uuid.uuid4().hex[:8]}", url=dynaorm_moto_server)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=_plain_environ(str(tmp_path))).stdout
    seen = json.loads(out.splitlines()[-1])
    assert seen["defined"] == []
    assert set(seen["read"]) <= _READ_LOADS, seen["read"]
    assert set(seen["committed"]) >= _COMMIT, sorted(_COMMIT - set(seen["committed"]))
    assert (seen["label"], seen["again"]) == ("first", "second")


def test_import_dynaorm_loads_none_of_the_deferred_modules() -> None:
    """Nor does ``import dynaorm`` alone, whose lazy public names (``StagedUpdate``,
    ``Change``, ``Previous``, ``inspect``, ``Inspection``, ``AsyncSession``) import their
    modules on first use, stay listed by ``dir()`` and ``__all__``, and an unknown name is
    still an AttributeError."""
    assert not _modules_after("import dynaorm") & DEFERRED
    code = ("import dynaorm, sys\n"
            "lazy = ['StagedUpdate', 'Change', 'Previous', 'inspect', 'Inspection']\n"
            "assert set(lazy) <= set(dir(dynaorm)) & set(dynaorm.__all__)\n"
            "assert 'dynaorm.write.updates' not in sys.modules\n"
            "from dynaorm import StagedUpdate, Change, Previous, inspect, Inspection\n"
            "from dynaorm.write.updates import StagedUpdate as S\n"
            "assert StagedUpdate is S and dynaorm.StagedUpdate is S\n"
            "try:\n"
            "    dynaorm.NoSuchName\n"
            "except AttributeError as exc:\n"
            "    assert 'NoSuchName' in str(exc)\n"
            "else:\n"
            "    raise AssertionError('an unknown name was found')\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_warning_with_no_logging_configured_still_reaches_stderr() -> None:
    """:mod:`logging` loads with the first record, not before: a program that configured
    no logging still gets a WARNING (here: items of a type name no class claims, met by
    a read) on stderr through logging's last-resort handler."""
    code = ("import sys\n"
            "import dynaorm\n"
            "from dynaorm.schema.unclaimed import note_unclaimed\n"
            "class Table:\n"
            "    name = 'things'\n"
            "    type_attribute = '_type'\n"
            "    entities = {}\n"
            "assert 'logging' not in sys.modules\n"
            "assert note_unclaimed(Table(), {'_type': {'S': 'OldName'}})\n"
            "assert 'logging' in sys.modules\n")
    err = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stderr
    assert "type name 'OldName' that no class claims" in err, err


def test_logging_configured_after_import_dynaorm_gets_the_debug_records(
        dynaorm_moto_server: str, tmp_path: Path) -> None:
    """The DEBUG check costs no :mod:`logging` import while nothing imported it, and a
    program that configures logging after ``import dynaorm`` (and after its first
    request) still gets one DEBUG record per attempt."""
    code = ("import dynaorm\n"
            f"app = dynaorm.Table('imports-debug', endpoint_url={dynaorm_moto_server!r})\n"
            + _THING.format() +
            "app.create()\n"
            "dynaorm.Session(app).get(Thing, thing_id='before')\n"
            "import logging\n"
            "logging.basicConfig(level=logging.WARNING)\n"
            "logging.getLogger('dynaorm').setLevel(logging.DEBUG)\n"
            "dynaorm.Session(app).get(Thing, thing_id='after')\n")
    err = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True, env=_plain_environ(str(tmp_path))).stderr
    assert err.count("GetItem on imports-debug") == 1, err


def _otel(loaded: set[str]) -> set[str]:
    """The OpenTelemetry modules of ``loaded``: OpenTelemetry's own, and dynaorm's tracer
    (``dynaorm.protocol.tracing`` and its metrics)."""
    return {m for m in loaded if m.split(".")[0] == "opentelemetry"
            or m in ("dynaorm.protocol.tracing", "dynaorm.protocol.metrics")}


def test_import_dynaorm_loads_no_opentelemetry_module() -> None:
    """Issue 80: the tracer is found by its entry point when a client is made, so ``import
    dynaorm`` loads no module of it (``dynaorm.Tracing`` is loaded on first use)."""
    loaded = _modules_after("import dynaorm")
    assert not _otel(loaded), sorted(_otel(loaded))
    loaded = _modules_after("import dynaorm\nassert dynaorm.Tracing.__name__ == 'Tracing'")
    assert "dynaorm.protocol.tracing" in loaded and "opentelemetry" not in loaded


def test_where_no_tracer_is_registered_a_request_loads_no_opentelemetry_module(
        tmp_path: Path) -> None:
    """Issue 80's budget: while no tracer is registered (here a ``dynaorm`` distribution
    first on the path, registering none: the one read) a client's first request loads no
    OpenTelemetry module, and ``client.tracing`` says why it has none; where dynaorm's own
    is registered (the installed metadata), the same request loads dynaorm's tracer and
    still none of OpenTelemetry's (looked up, not imported), nor any other module an entry
    point names (the lake's, the commands', the formats')."""
    from tests.support.distributions import distribution

    root = Path(__file__).resolve().parents[2]
    bare = distribution(tmp_path / "bare", "dynaorm", {"dynaorm.formats": {}})
    program = _FIRST_GET.format(scheme="http").replace("print(", (
        "try:\n"
        "    print('tracing:', type(app.db.tracing).__name__)\n"
        "except dynaorm.DynaormError as exc:\n"
        "    print('tracing:', exc)\n"
        "print("), 1)
    for path, tracers in ((bare, "no tracer 'opentelemetry' is registered"),
                          (None, "Tracing")):
        environ = _plain_environ(str(tmp_path), PYTHONPATH=os.pathsep.join(
            [*([str(path)] if path else []), str(root)]))
        # (run from tmp_path: ``-c`` puts the working directory first on the path, and a
        # checkout's root holds the editable install's dynaorm.egg-info, read before ``bare``)
        out = subprocess.run([sys.executable, "-c", program], check=True, env=environ,
                             capture_output=True, text=True, cwd=tmp_path).stdout
        names, *modules = out.splitlines()
        assert names.startswith(f"tracing: {tracers}")
        loaded = set(modules)
        assert "dynaorm.wire.http" in loaded
        assert _otel(loaded) == (set() if path else {"dynaorm.protocol.tracing",
                                                     "dynaorm.protocol.metrics"})
        # (finding the tracers loads nothing else a package registers: cold start)
        assert not {m for m in loaded if m.split(".")[:2] in (
            ["dynaorm", n] for n in ("lake", "mcp", "cli", "jobs", "formats"))}
