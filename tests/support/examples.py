"""How many examples a property draws in this run: a share of the count it declares.

CI and ``make test`` draw a quarter of each property's declared ``max_examples`` (at least
ten, or the declared count when it is fewer): the same properties over the same
strategies, searched less deeply, so the suite fits CI's minutes on two cores.
``DYNAORM_EXAMPLES=1`` (``make deep``) draws every declared example; any other share
(``DYNAORM_EXAMPLES=4``: four times as many) searches deeper. A property that found a
defect keeps that input as an ``@example``, which runs whatever the share.
"""

from __future__ import annotations

import math
import os

import pytest

try:
    SHARE = float(os.environ.get("DYNAORM_EXAMPLES", "0.25"))
except ValueError:
    raise pytest.UsageError("DYNAORM_EXAMPLES must be a number (the share of each "
                            "property's declared examples to draw)") from None
if not SHARE > 0:
    raise pytest.UsageError(f"DYNAORM_EXAMPLES must be above 0, got {SHARE}")


def examples(declared: int) -> int:
    """The examples a property declaring ``declared`` draws in this run."""
    return max(min(declared, 10), math.ceil(declared * SHARE))
