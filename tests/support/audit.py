"""A whole table scanned and audited at once, as the tests check one."""

from __future__ import annotations

from dynaorm import Table
from dynaorm.jobs.audit import Problem, audit_items, keyed, scan_pages


def audit_table(table: Table) -> tuple[int, list[Problem]]:
    """Scan ``table`` and audit it: ``(items scanned, problems)``."""
    items = [item for page, _ in scan_pages(table) for item in page]
    keyed(table, items)
    return len(items), audit_items(table, items)
