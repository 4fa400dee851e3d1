"""The ``dynaorm`` command (:mod:`dynaorm.cli.main`: its parser, the table references it
resolves, and ``create-table``, ``describe``, ``check``, ``migrate``, ``backfill``,
``export`` and ``demo``; ``model`` and ``explain`` in :mod:`~dynaorm.cli.model`) and what a
command of your own uses. A command is found, never imported: the entry point of the group
``dynaorm.commands`` names a function of the subparsers that adds its parser, with
``run(args, out) -> int`` in its defaults (see :doc:`the CLI guide </guide/cli>`).
dynaorm's ``iam`` (:mod:`~dynaorm.cli.iam`) and ``mcp`` (:mod:`dynaorm.mcp.command`) are
found so. What such a command uses is here (:mod:`dynaorm.cli.command`)."""

from dynaorm.cli.command import (
    BadReference,
    connect,
    connection_options,
    entity_named,
    find_tables,
    import_module,
    load_attribute,
    load_table,
)

__all__ = ["BadReference", "connect", "connection_options", "entity_named", "find_tables",
           "import_module", "load_attribute", "load_table"]
