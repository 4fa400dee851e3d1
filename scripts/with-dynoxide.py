"""Run a command against a fresh dynoxide server: ``DYNAORM_TEST_ENDPOINT`` is its URL in
the command's environment (the pytest plugin's ``--dynaorm-endpoint``), and the server
stops when the command ends. The command's exit status is this script's.

    python scripts/with-dynoxide.py pytest -q tests/integration/test_index_lag.py

``make test-endpoint`` runs the suite's endpoint path this way (part of ``make test``).
Without dynoxide installed (``make dynoxide``) it says so and exits 0, or 1 when an engine
is required (``CI=true`` or ``DYNAORM_REQUIRE_LOCAL=1``, as in ``tests/conftest.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.support.dynoxide import Dynoxide, find_binary


def main(argv: list[str]) -> int:
    if not argv:
        print("usage: with-dynoxide.py COMMAND [ARG...]", file=sys.stderr)
        return 2
    required = os.environ.get("CI", "").lower() == "true" or os.environ.get(
        "DYNAORM_REQUIRE_LOCAL") == "1"
    if find_binary() is None:
        print("dynoxide is not installed (make dynoxide): "
              + ("failing, an engine is required here" if required else "skipped"),
              file=sys.stderr)
        return 1 if required else 0
    with Dynoxide() as server:
        env = {**os.environ, "DYNAORM_TEST_ENDPOINT": server.endpoint_url}
        return subprocess.run(argv, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
