#!/usr/bin/env python
"""The marginal entity of a unit of work (issue 91): what each entity beyond the first
costs a commit, against what raw botocore pays for the same actions.

A commit of 1 and of 8 new ``User`` entities (two unique attributes each: a row and two
guards, so 3 and 24 ``Put`` actions in one ``TransactWriteItems``) through dynaorm's own
wire, beside raw botocore sending the same actions (``transact_write_items``, parameter
validation off, as ``wire.py``'s botocore contender), both to the canned endpoint of
``canned_http.py`` (a child process answering ``{}``, not counted). The marginal entity is
``(T(8) - T(1)) / 7`` of each: the request's fixed costs (connection, signing, the answer)
cancel, and what is left is each side's work per entity -- dynaorm's plan, gate, render
and JSON, botocore's serialization and JSON of three actions.

Client CPU (``time.process_time``) of batches of each of the four cases, alternating, the
collector off in each; the least batch of each case (a machine's noise only adds), and the
median of the ratios of the marginals of each round (what a loaded machine still measures
fairly: a round shares its moment's load).

Budget (issue 91): dynaorm's marginal entity <= 0.25x botocore's marginal serialization.

    python benchmarks/unit_of_work.py [--iterations 200] [--rounds 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from canned_http import REGION, TABLE, canned_endpoint, dynaorm_models, ids

#: issue 91's budget: dynaorm's marginal entity at most this share of botocore's
BUDGET = 0.25
SIZES = (1, 8)
#: raw botocore with its parameter validation off (``wire.py``'s contender)
UNCHECKED = "botocore, validation off"


def _s(value: str) -> dict[str, str]:
    return {"S": value}


def _actions(user_id: str) -> list[dict[str, Any]]:
    """The three Put actions of a new ``User``, as dynaorm sends them."""
    cond = {"ConditionExpression": "attribute_not_exists(#n0)",
            "ExpressionAttributeNames": {"#n0": "pk"},
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD"}
    item = {"user_id": _s(user_id), "org_id": _s("o1"), "username": _s(f"alice{user_id}"),
            "email": _s(f"{user_id}@x.com"), "full_name": _s("Alice Liddell"),
            "logins": {"N": "0"}, "pk": _s(f"USER#{user_id}"), "sk": _s("PROFILE"),
            "_type": _s("User")}
    guards = [{"Put": {"TableName": TABLE, "Item": {
        "pk": _s(f"{a}#{item[a]['S']}"), "sk": _s(f"{a}#{item[a]['S']}"),
        "_type": _s("dynaorm:unique"), "owner_pk": item["pk"], "owner_sk": item["sk"],
        "owner_type": _s("User"), "unique_field": _s(a)}, **cond}}
        for a in ("username", "email")]
    return [{"Put": {"TableName": TABLE, "Item": item, **cond}}, *guards]


def cases(endpoint: str) -> dict[tuple[str, int], Callable[[], object]]:
    import botocore.config
    import botocore.session

    from dynaorm import Session

    app, user, _, _ = dynaorm_models(endpoint, "dynaorm")
    def client(validation: bool) -> Any:
        return botocore.session.get_session().create_client(
            "dynamodb", region_name=REGION, endpoint_url=endpoint,
            config=botocore.config.Config(parameter_validation=validation, retries={
                "total_max_attempts": 1, "mode": "standard"}))

    new_id = ids()

    def ours(n: int) -> Callable[[], object]:
        def run() -> object:
            s = Session(app)
            for _ in range(n):
                i = new_id()
                s.save(user(user_id=i, org_id="o1", username=f"alice{i}", email=f"{i}@x.com",
                            full_name="Alice Liddell"))
            return s.commit()
        return run

    def theirs(n: int, raw: Any) -> Callable[[], object]:
        def run() -> object:
            actions = [a for _ in range(n) for a in _actions(new_id())]
            return raw.transact_write_items(TransactItems=actions,
                                            ClientRequestToken=new_id().ljust(36, "0"))
        return run

    plain, unchecked = client(True), client(False)
    return {**{("dynaorm", n): ours(n) for n in SIZES},
            **{("botocore", n): theirs(n, plain) for n in SIZES},
            **{(UNCHECKED, n): theirs(n, unchecked) for n in SIZES}}


def batch(fn: Callable[[], object], n: int) -> float:
    """Client CPU seconds of one call of ``fn``, the mean of a batch of ``n``."""
    gc.collect()
    gc.disable()
    try:
        start = time.process_time()
        for _ in range(n):
            fn()
        return (time.process_time() - start) / n
    finally:
        gc.enable()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    # dummy credentials for the contenders that read the environment (a script, not dynaorm)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "x")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "x")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    with canned_endpoint() as url:
        run = cases(url)
        for fn in run.values():  # (warm: connections, caches)
            batch(fn, 20)
        best: dict[tuple[str, int], float] = {}
        ratios: dict[str, list[float]] = {"botocore": [], UNCHECKED: []}
        for _ in range(args.rounds):
            took = {case: batch(fn, args.iterations) for case, fn in run.items()}
            for case, t in took.items():
                best[case] = min(best.get(case, t), t)
            ours = (took["dynaorm", 8] - took["dynaorm", 1]) / 7
            for side, kept in ratios.items():
                kept.append(ours / ((took[side, 8] - took[side, 1]) / 7))
    sides = ("dynaorm", "botocore", UNCHECKED)
    marginal = {side: (best[side, 8] - best[side, 1]) / 7 for side in sides}
    print(f"client CPU per commit (least batch of {args.rounds} x {args.iterations})")
    for (side, n), t in best.items():
        print(f"  {side:26s} {n} entities ({3 * n:2d} actions) {t * 1e6:9.1f} us")
    for side, t in marginal.items():
        print(f"  {side:26s} marginal entity         {t * 1e6:9.1f} us")
    figures: dict[str, Any] = {
        "per_commit_us": {f"{s} {n}": t * 1e6 for (s, n), t in best.items()},
        "marginal_us": {s: t * 1e6 for s, t in marginal.items()}}
    for side, kept in ratios.items():
        median, least = statistics.median(kept), marginal["dynaorm"] / marginal[side]
        figures[f"ratio to {side}"] = {"median": median, "least": least}
        print(f"marginal entity, dynaorm / {side}: {median:.2f}x (median of rounds), "
              f"{least:.2f}x (least batches); budget <= {BUDGET}x: "
              f"{'met' if median <= BUDGET else 'NOT met'}")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
