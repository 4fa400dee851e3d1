"""The designs the test suite maps (the examples' tables, the suite's own models, and the
published designs the integration tests map: the AWS labs, a CRM with its own
discriminator, a shop written by other tools), named as ``dynaorm model`` takes them
(``MODULE:TABLE``, loaded with the command's own loader); and the round trip of a model
through a format and the entity code ``dynaorm model --import`` prints for it."""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from dynaorm import Table, formats
from dynaorm.cli import BadReference, load_table
from dynaorm.formats.code import import_code

__all__ = ["DESIGNS", "defined", "design", "roundtrip"]

_ROOT = Path(__file__).resolve().parents[2]
#: every table of the examples, then the suite's models (vector indexes among them) and the
#: published designs
DESIGNS: tuple[str, ...] = (
    "examples.adjacency_list:campus", "examples.async_quickstart:app",
    "examples.audit_versions:plant", "examples.backfill_job:accounts",
    "examples.cents_rule:shop", "examples.chat_messages:chat", "examples.counter:stats",
    "examples.course_enrollments:school", "examples.document_tracking:docs",
    "examples.encrypted_fields:clinic", "examples.event_logs:logs",
    "examples.existing_table:legacy", "examples.game_lobby:games",
    "examples.iot_latest_readings:iot", "examples.key_layouts:shop",
    "examples.leaderboard:arcade", "examples.locations:geo", "examples.migration:accounts",
    "examples.model_and_cost:shop", "examples.operations:saas",
    "examples.native_index:shop", "examples.nested_profile:profiles",
    "examples.observe_requests:shop", "examples.orders_and_audit:shop",
    "examples.orders_and_audit:audit", "examples.orders_by_status:shop",
    "examples.outcome_proofs:wallets", "examples.pynamodb_bridge:app",
    "examples.state_machine:shop", "examples.stream_aggregate:shop", "examples.ttl_rules:store",
    "examples.users_unique:accounts", "examples.web_service:table",
    "examples.wire_failures:notes", "tests.support.alias_models:games",
    "tests.support.migration_models:mig", "tests.support.stream_models:stream_app",
    "tests.integration.test_labs:labs", "tests.integration.test_labs:catalog",
    "tests.integration.test_labs:invoices", "tests.integration.test_mapping_tables:crm",
    "tests.integration.test_foreign_items:shop", "tests.integration.test_native_index:native",
    "tests.integration.test_key_only:keys",
    "examples.vector_search:kb", "tests.support.vector_models:docs",
    "tests.support.vector_models:space",
)


def design(reference: str) -> Table:
    """The table a ``MODULE:TABLE`` reference of :data:`DESIGNS` names (the examples
    import their ``_support`` as a sibling module)."""
    if str(_ROOT / "examples") not in sys.path:
        sys.path.append(str(_ROOT / "examples"))
    try:
        return load_table(reference)
    except BadReference as exc:
        # An example that needs an optional library (FastAPI, PynamoDB) skips where it is
        # absent (``make quick``'s venv); a module of the repository's own never does.
        missing = exc.__cause__
        if not isinstance(missing, ModuleNotFoundError) or (missing.name or "").partition(
                ".")[0] in {"dynaorm", "examples", "tests", "_support"}:
            raise
        pytest.skip(f"{reference} needs {missing.name}, which is not installed")


def defined(code: str) -> list[Table]:
    """The tables ``code`` (a module ``dynaorm model --import`` printed) defines, defined in
    a module of its own."""
    module = types.ModuleType(f"imported_design_{id(code)}")
    sys.modules[module.__name__] = module
    try:
        exec(compile(code, module.__name__, "exec"), module.__dict__)
    finally:
        del sys.modules[module.__name__]
    return [v for v in vars(module).values() if isinstance(v, Table)]


def roundtrip(model: Mapping[str, Any], fmt: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """``model`` in ``fmt``, and the model in ``fmt`` of the code imported from that."""
    exported, _ = formats.export(model, fmt)
    (table,) = defined(import_code(json.dumps(exported), fmt))
    again, _ = formats.export(table.model(), fmt)
    return exported, again
