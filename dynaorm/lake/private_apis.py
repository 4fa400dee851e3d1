"""Every private attribute of a dependency that the lake (:mod:`dynaorm.lake`) relies on,
in one place (the core's are :mod:`dynaorm.private_apis`): pyiceberg's. Each function names
the library, the attribute and why no public way serves; pyiceberg is imported when a
function is called."""

from typing import Any

__all__ = ["iceberg_require_snapshot"]


def iceberg_require_snapshot(tx: Any) -> None:
    """Make pyiceberg transaction ``tx`` commit only onto the table's snapshot it was
    planned on (``main`` as it was, or still absent), as its snapshot producers require.

    pyiceberg: ``Transaction._apply(updates, requirements)``. A transaction that only
    sets properties (an export with no rows onto an empty table) has no producer, and no
    public call adds a requirement; the lake's order of exports (``dynaorm.as-of``) must
    never be written over a snapshot committed since it was checked."""
    from pyiceberg.table.update import AssertRefSnapshotId

    tx._apply((), (AssertRefSnapshotId(snapshot_id=tx.table_metadata.current_snapshot_id,
                                       ref="main"),))
