"""``import dynaorm`` stays cheap: botocore's client and session machinery (most of what
importing botocore costs) loads when a table first sends, not at import."""

from __future__ import annotations

import subprocess
import sys


def _modules_after(statement: str) -> set[str]:
    code = f"{statement}\nimport sys\nprint('\\n'.join(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                         text=True).stdout
    return set(out.split())


def test_import_dynaorm_leaves_botocore_client_machinery_unloaded() -> None:
    loaded = _modules_after("import dynaorm")
    heavy = {"botocore.session", "botocore.client", "botocore.config", "botocore.endpoint", "ksuid",
             "botocore.configprovider", "urllib3", "aiobotocore", "aiohttp"}
    assert not heavy & loaded, sorted(heavy & loaded)


def test_first_table_use_loads_it() -> None:
    loaded = _modules_after(
        "import dynaorm\n"
        "dynaorm.Table('things', endpoint_url='http://127.0.0.1:9', region='eu-west-1').client")
    assert {"botocore.session", "botocore.client"} <= loaded
