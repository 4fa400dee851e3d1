"""The ``dynaorm iam`` command, found by its entry point (group ``dynaorm.commands``): a
least-privilege IAM policy from a table's model (:mod:`dynaorm.formats.iam`)."""

import argparse
import json
import sys
from typing import Any, TextIO

from dynaorm.cli import load_table


def _iam(args: argparse.Namespace, out: TextIO) -> int:
    from dynaorm.formats import iam

    where = {k: v for k, v in (("partition", args.partition), ("region", args.aws_region),
                               ("account", args.account)) if v}
    model = load_table(args.table).model()
    policy, uncovered = iam.to_format(model, args.role, args.scope, where)
    for line in uncovered:
        print(f"dynaorm iam: --scope {args.scope} cannot cover {line}", file=sys.stderr)
    if uncovered:
        return 2
    for line in iam.unbound_rows(model, args.role, args.scope):
        print(f"dynaorm iam: --scope {args.scope}: {line}", file=sys.stderr)
    out.write(json.dumps(policy, indent=2) + "\n")
    return 0


def add_iam_command(sub: Any) -> None:
    """Add ``iam`` to the subcommands ``sub`` of the ``dynaorm`` command's parser."""
    p = sub.add_parser("iam", help="a least-privilege IAM policy from the access patterns",
                       description="Print the IAM policy a role needs for MODULE:TABLE's "
                                   "access patterns (read: the reads; write: every pattern), "
                                   "with their rules' rows, on the table's and each index's "
                                   "ARN; SearchVectors in a statement of its own. --scope "
                                   "FIELD binds every partition key to the principal's tag "
                                   "FIELD (dynamodb:LeadingKeys, from the key grammar: each "
                                   "template's start, the tag, the field's separator); exit "
                                   "2 naming each template it cannot prove, with no policy.")
    p.add_argument("table", metavar="MODULE:TABLE", help="e.g. myapp.models:app")
    p.add_argument("--role", choices=("read", "write"), required=True)
    p.add_argument("--scope", metavar="FIELD",
                   help="the key field each principal is held to (its tag aws:PrincipalTag/"
                        "FIELD)")
    p.add_argument("--account", help="the ARNs' account (default: *)")
    p.add_argument("--aws-region", help="the ARNs' region (default: *)")
    p.add_argument("--partition", help="the ARNs' partition (default: aws)")
    p.set_defaults(run=_iam)
