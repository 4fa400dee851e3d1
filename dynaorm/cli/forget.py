"""The ``dynaorm forget`` command (added by :mod:`dynaorm.cli.main`): a tenant's key
destroyed (``Table.forget``: keys per tenant, ``Table(key_scope=...)``)."""

import argparse
import sys
from typing import Any, TextIO

from dynaorm.cli.command import connect, load_table, table_command


def _forget(args: argparse.Namespace, out: TextIO) -> int:
    """The tenant's key destroyed, idempotent; what the key table records is printed."""
    table = connect(load_table(args.table), args)
    field, _, value = args.scope.partition("=")
    if table.key_scope is None or field != table.key_scope or not value:
        print(f"dynaorm forget: error: --scope takes {table.key_scope or 'FIELD'}=VALUE, "
              f"the key_scope of table {table.name!r} ({table.key_scope or 'none declared'})",
              file=sys.stderr)
        return 2
    found = table.forget(scope={field: value})
    if found.now:
        print(f"forgot tenant {field}={value!r} of table {table.name!r} at "
              f"{found.forgotten_at}: " + ("its key is destroyed" if found.sealed else
                                          "it had no key: nothing was sealed for it, none "
                                          "of its values became unreadable") +
              f" (recorded in {table.key_table!r})", file=out)
    else:
        print(f"tenant {field}={value!r} of table {table.name!r} was forgotten at "
              f"{found.forgotten_at}: nothing to do", file=out)
    return 0


def add_forget_command(sub: Any) -> None:
    """Add ``forget`` to the subcommands ``sub`` of the ``dynaorm`` command's parser."""
    p = table_command(sub, "forget", _forget,
                      help="destroy a tenant's key (Table(key_scope=...))",
                      description="Destroy the key of one tenant of MODULE:TABLE (a table "
                                  "declaring key_scope): every Encrypted value of that "
                                  "tenant, wherever a copy lives, can no longer be read "
                                  "(ForgottenError), and no write seals one for it; its "
                                  "other fields and every other tenant read as before. "
                                  "Idempotent: the key table keeps a tombstone of when.")
    p.add_argument("--scope", metavar="FIELD=VALUE", required=True,
                   help="the tenant: the table's key_scope field and its value")
