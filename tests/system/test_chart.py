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


LONG_KEYS = '''
from dynaorm import GSI, Entity, Table

shop = Table("chart-long-keys", indexes=[GSI("by_customer", pk="gsi1pk", sk="gsi1sk")])


class PurchaseOrder(Entity):
    class Meta:
        table = shop
        pk = "CUSTOMER#{customer_id}#ORDER#{order_id}"
        sk = "PURCHASE_ORDER#{created_at}#REVISION#{revision}"
        indexes = {"by_customer": ("CUSTOMER#{customer_id}#STATUS#{status}",
                                   "CREATED#{created_at}#ORDER#{order_id}")}

    customer_id: str
    order_id: str
    created_at: str
    revision: int
    status: str
'''

#: run in the page once drawn: every label's rendered box that meets a box of the design
MEASURE = """<script>
window.addEventListener("load", () => {
  const boxes = [...document.querySelectorAll("svg rect")].map(r => r.getBBox());
  const found = [];
  for (const text of document.querySelectorAll("svg text.label")) {
    const a = text.getBBox();
    for (const b of boxes) {
      const w = Math.min(a.x + a.width, b.x + b.width) - Math.max(a.x, b.x);
      const h = Math.min(a.y + a.height, b.y + b.height) - Math.max(a.y, b.y);
      if (w > 0 && h > 0) found.push([text.textContent, w, h]);
    }
  }
  const labels = document.querySelectorAll("svg text.label").length;
  document.body.setAttribute("data-measured", JSON.stringify({labels, found}));
});
</script></body>"""


@pytest.mark.parametrize("design", ["tests.support.models:app", "long_keys:shop"])
def test_no_label_overlaps_a_box_as_the_browser_draws_it(tmp_path: Path, design: str) -> None:
    """0.6 put the index boxes 260 px right of the entities whatever their labels: a label
    longer than that (a long key template) ran into a box. Measured in the page as
    Chromium lays it out (each label's and each box's bounding box)."""
    import json
    import re

    browser = _browser()
    (tmp_path / "long_keys.py").write_text(LONG_KEYS)
    page = tmp_path / "design.html"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), str(tmp_path)])}
    made = subprocess.run([sys.executable, "-m", "dynaorm", "model", design, "--chart",
                           str(page)], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=120)
    assert made.returncode == 0, made.stderr
    page.write_text(page.read_text().replace("</body>", MEASURE))
    dumped = subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu",
                             "--dump-dom", page.as_uri()], cwd=tmp_path, capture_output=True,
                            text=True, timeout=120, env={**os.environ, "HOME": str(tmp_path)})
    found = re.search(r'data-measured="([^"]*)"', dumped.stdout)
    assert found is not None, dumped.stdout[-500:] + dumped.stderr[-2000:]
    measured = json.loads(found[1].replace("&quot;", '"').replace("&amp;", "&"))
    assert measured["labels"] >= 2 and measured["found"] == []
