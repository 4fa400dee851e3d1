#!/usr/bin/env python
"""Jobs (issue 44), on DynamoDB Local: a backfill's throughput with 1, 2, 4 and 8 workers.

A table of ``--items`` small items (one write unit each) is backfilled by
``dynaorm.jobs.backfill`` (``n += 1``: one conditioned UpdateItem per item, with the job's
marker) as ``--segments`` tasks run by ``run_local(job, workers=W)``; each run is a fresh
job on freshly written items. Printed per worker count: wall time (worker start-up
included), items a second, and write units a second: one unit per item (an UpdateItem of
an item under 1 KB consumes one write unit, as DynamoDB Local reports it).

Then the estimate on paper for a billion items on Glue (see docs/guide/jobs.md): a task
writes one item at a time, so on DynamoDB its rate is 1 / the write latency
(``--latency-ms``); tasks at once = 4 per G.1X worker.

    python benchmarks/jobs.py [--items 3000] [--segments 16] [--workers 1,2,4,8]
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from dynaorm import Session
from dynaorm.jobs import backfill, run_local
from dynaorm.testing import use_tables
from tests.support.ddb_local import DynamoDBLocal
from tests.support.job_models import Counter, add_step, jobs_table

BILLION = 1_000_000_000


def one_run(items: int, segments: int, workers: int) -> tuple[float, int]:
    """Seconds a backfill of ``items`` takes with ``workers`` processes; items changed."""
    Session(jobs_table).save_many([Counter(id=f"c{i:06d}", n=i) for i in range(items)],
                                  concurrency=8)
    job = backfill(Counter, add_step, segments=segments, name=f"bench-{workers}")
    started = time.perf_counter()
    report = run_local(job, workers=workers)
    return time.perf_counter() - started, report.changed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=3000)
    parser.add_argument("--segments", type=int, default=16)
    parser.add_argument("--workers", default="1,2,4,8")
    parser.add_argument("--latency-ms", type=float, default=8.0,
                        help="a conditioned UpdateItem's latency on DynamoDB, for the estimate")
    args = parser.parse_args()
    counts = [int(w) for w in args.workers.split(",")]
    rows: list[tuple[int, float, float]] = []
    with DynamoDBLocal() as ddb, use_tables(jobs_table, endpoint_url=ddb.endpoint_url):
        one_run(200, 2, 1)  # DynamoDB Local's JIT warms up: not counted
        for workers in counts:
            seconds, changed = one_run(args.items, args.segments, workers)
            assert changed == args.items, (changed, args.items)
            rows.append((workers, seconds, changed / seconds))
    print(f"backfill of {args.items} items in {args.segments} segments, DynamoDB Local")
    print("workers   seconds   items/s   WCU/s (1 unit an item)")
    for workers, seconds, rate in rows:
        print(f"{workers:7d} {seconds:9.2f} {rate:9.0f} {rate:9.0f}")
    best = max(rows, key=lambda r: r[2])
    print(f"\nbest: {best[2]:.0f} items/s with {best[0]} workers (DynamoDB Local's own CPU "
          "bounds it on a small machine; on DynamoDB a task is bound by write latency)")
    per_task = 1000 / args.latency_ms  # one conditioned write at a time per task
    for glue_workers in (10, 50, 100):
        tasks = glue_workers * 4  # a G.1X worker runs 4 tasks at once
        rate = per_task * tasks
        print(f"a billion items, {glue_workers} Glue G.1X workers ({tasks} tasks at "
              f"{per_task:.0f} items/s, {args.latency_ms} ms a write): {rate:,.0f} items/s "
              f"= {rate:,.0f} WCU/s, {BILLION / rate / 3600:.1f} h")

if __name__ == "__main__":
    main()
