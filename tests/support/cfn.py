"""cfn-lint over templates with its rules loaded once a run: loading them is most of what
one ``cfnlint.api.lint`` costs (~1.2 s of CPU; the checks themselves ~0.1 s), and
cfn-lint's own runner checks each of the templates it is given with one set of rules."""

from __future__ import annotations

import functools
from typing import Any

from cfnlint.config import ConfigMixIn
from cfnlint.decode.decode import decode_str
from cfnlint.runner.cli import Runner


@functools.cache
def _runner() -> Runner:
    return Runner(ConfigMixIn(regions=["us-east-1"]))


def lint(text: str) -> list[Any]:
    """cfn-lint's matches on the template ``text`` in us-east-1 (as
    ``cfnlint.api.lint(text, config=ManualArgs(regions=["us-east-1"]))``)."""
    template, errors = decode_str(text)
    if errors:
        return list(errors)
    return [] if template is None else list(_runner().validate_template(template))
