"""``import dynaorm`` stays cheap: botocore (its client and session machinery, its
exceptions) and the thread pool load when a table first sends, not at import."""

from __future__ import annotations

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
    """The wire, asyncio, the async session, the tools and the PynamoDB bridge load when
    used: ``import dynaorm`` pays for none of them."""
    loaded = _modules_after("import dynaorm")
    deferred = {m for m in loaded if m.split(".")[0] in ("asyncio", "ssl", "http", "httptools")
                or m.startswith(("dynaorm.wire", "dynaorm.aio", "dynaorm.tools",
                                 "dynaorm.testing", "dynaorm.pynamodb"))}
    assert not deferred, sorted(deferred)


_FIRST_GET = (
    "import os, socket, sys\n"
    "closed = socket.socket()\n"
    "closed.bind(('127.0.0.1', 0))\n"
    "url = '{scheme}://127.0.0.1:%d' % closed.getsockname()[1]\n"
    "import dynaorm\n"
    "app = dynaorm.Table('things', endpoint_url=url, max_attempts=1)\n"
    "class Thing(dynaorm.Entity):\n"
    "    class Meta:\n"
    "        table = app\n"
    "        pk = 'THING#{{thing_id}}'\n"
    "        sk = 'THING'\n"
    "    thing_id: str\n"
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
    import os

    environ = {k: v for k, v in os.environ.items() if not (
        k.startswith(("AWS_", "BOTO", "_X_AMZN")) or k.lower().endswith("_proxy")
        or k == "REQUESTS_CA_BUNDLE")}
    environ.update(HOME=home, AWS_ACCESS_KEY_ID="AKID", AWS_SECRET_ACCESS_KEY="SECRET",
                   AWS_SESSION_TOKEN="TOKEN", AWS_REGION="eu-west-1",
                   AWS_LAMBDA_FUNCTION_NAME="f", AWS_EXECUTION_ENV="AWS_Lambda_python3.11",
                   **extra)
    out = subprocess.run([sys.executable, "-c", _FIRST_GET.format(scheme=scheme)], check=True,
                         capture_output=True, text=True, env=environ).stdout
    return set(out.split())


def test_a_first_request_in_the_plain_environment_imports_no_botocore_session(
        tmp_path: Path) -> None:
    """Credentials and region in the environment, no shared files (as on AWS Lambda): the
    first request is resolved, signed and sent without botocore's session (an ``https://``
    endpoint's TLS context included); in any other environment the session decides."""
    for scheme in ("http", "https"):
        loaded = _first_get_modules(scheme, str(tmp_path))
        assert "dynaorm.wire.http" in loaded
        assert not loaded & _SESSION_MODULES, sorted(loaded & _SESSION_MODULES)
        assert not {m for m in loaded if m.split(".")[0] == "urllib3"}
    (tmp_path / ".aws").mkdir()
    (tmp_path / ".aws" / "config").write_text("[default]\nregion = eu-west-1\n")
    with_config = _first_get_modules("http", str(tmp_path))
    assert {"botocore.session", "botocore.credentials"} <= with_config


def test_first_sync_request_loads_no_asyncio(tmp_path: Path) -> None:
    """A sync process's first request (here one refused by a port bound but not listening:
    the request is rendered and signed on dynaorm's own wire, its connection refused)
    imports the wire but never asyncio, whether botocore's session resolved its settings
    (a shared config file present) or not."""
    plain = _first_get_modules("http", str(tmp_path))
    (tmp_path / "config").write_text("[default]\n")
    with_session = _first_get_modules("http", str(tmp_path),
                                      AWS_CONFIG_FILE=str(tmp_path / "config"))
    assert "botocore.session" in with_session and "botocore.session" not in plain
    for loaded in (plain, with_session):
        assert "dynaorm.wire.http" in loaded
        assert not {m for m in loaded if m.split(".")[0] == "asyncio"}, sorted(loaded)
