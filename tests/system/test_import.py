"""``import dynaorm`` stays cheap: botocore (its client and session machinery, its
exceptions) and the thread pool load when a table first sends, not at import."""

from __future__ import annotations

import subprocess
import sys


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
