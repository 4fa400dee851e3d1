"""``dynaorm model MODULE:TABLE --chart OUT.html`` in a real browser: the page is drawn by
headless Chromium (Debian's ``chromium``) into a screenshot that is not blank and shows
the design's boxes in their colours. Skipped where no browser is installed, except in CI
(``CI=true``), where a missing browser fails, as a missing engine does. The chart's
content is checked in ``unit/test_model.py``."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.support.png import pixels

ROOT = Path(__file__).resolve().parents[2]
#: the browsers tried, in order (``DYNAORM_CHROMIUM``: one's path)
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def _browser() -> str:
    found = os.environ.get("DYNAORM_CHROMIUM") or next(
        (path for name in BROWSERS if (path := shutil.which(name))), None)
    if found is None:
        message = "no Chromium installed (apt-get install chromium)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


def test_the_chart_renders_in_a_headless_browser(tmp_path: Path) -> None:
    browser = _browser()
    page, shot = tmp_path / "design.html", tmp_path / "design.png"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "examples")])}
    made = subprocess.run([sys.executable, "-m", "dynaorm", "model",
                           "tests.support.models:app", "--chart", str(page)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    assert made.stdout == f"wrote {page}\n"
    drawn = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                            "--hide-scrollbars", "--window-size=1200,900",
                            f"--screenshot={shot}", page.as_uri()],
                           cwd=tmp_path, capture_output=True, timeout=120,
                           env={**os.environ, "HOME": str(tmp_path)})
    assert drawn.returncode == 0 and shot.exists(), drawn.stderr.decode(errors="replace")
    width, height, found = pixels(shot.read_bytes())
    assert (width, height) == (1200, 900)
    colours = Counter(p[:3] for p in found)
    background = (0xF6, 0xF8, 0xFA)
    assert colours.most_common(1)[0][0] == background  # the page, drawn
    assert len(found) - colours[background] > len(found) // 10  # boxes and text on it
    for box in ((0x1F, 0x6F, 0xEB), (0x82, 0x50, 0xDF), (0xBF, 0x87, 0x00),
                (0x57, 0x60, 0x6A)):  # the table, a GSI, the LSI, an entity's title bar
        assert colours[box] > 500, box
