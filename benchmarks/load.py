"""Bulk loads (issue 85): what ``dynaorm.jobs.load`` costs the client, beside the other ways
of storing the same entities.

- **render**: client CPU per entity of rendering the input files (each entity planned as
  ``save`` plans its insert, its records as JSON lines, gzipped; the upload left out), for a
  plain entity and for a unique + versioned one (3 rows: latest copy, version row, guard);
- **save_many**: client CPU per entity of ``Session.save_many`` of the plain entity (it
  refuses rules), and of ``save`` + ``commit`` per entity of the unique + versioned one (a
  transaction each), both over a stub transport answering at once (no network, no engine);
- **memory**: tracemalloc's peak while rendering N and 5N entities in parts of 30,000 rows
  (a part's worth, not the source's: a part is uploaded and dropped as it fills; the
  upload reads the part's gzipped bytes whole);
- **floor**: the same three records of the unique + versioned entity built by hand from
  ``model_dump`` (no check, no plan), JSON lines, gzip at level 1: the least a load
  rendered in pure Python pays (issue 91: where the budget is below it, the figure says so);
- **end to end** (``--e2e N``): a load of N unique + versioned entities on the embedded
  default (moto behind dynaorm's emulator, in this process): seconds, and the process's
  peak RSS (no transaction per entity: moto keeps a copy of each transaction's tables).

Budget (issue 85): rendering >= 50,000 entities a second of client CPU for the unique +
versioned entity.

    python benchmarks/load.py [--entities 20000] [--repeats 3] [--e2e 0] [--json PATH]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dynaorm import Entity, Session, Table, Unique

bench = Table("bench-load")


class Plain(Entity):
    class Meta:
        table = bench
        pk = "P#{pid}"
        sk = "P"

    pid: str
    name: str = ""
    n: int = 0


class Account(Entity):
    class Meta:
        table = bench
        pk = "ACCT#{acct_id}"
        sk = "A"
        unique = (Unique("email", normalize=str.lower),)
        versioned = True

    acct_id: str
    email: str
    name: str = ""
    n: int = 0


def plains(count: int) -> list[Plain]:
    return [Plain(pid=f"p{i:07d}", name="n" * 20, n=i) for i in range(count)]


def accounts(count: int) -> list[Account]:
    return [Account(acct_id=f"a{i:07d}", email=f"e{i}@x.io", name="n" * 20, n=i)
            for i in range(count)]


class _Discard:
    """A load job whose uploads go nowhere (rendering measured alone), in parts of 30,000
    rows (the memory figure: both counts fill several)."""

    part_rows = 30_000

    def put(self, rest: str, body: bytes) -> None:
        del rest, body


def render(objs: list[Any]) -> float:
    """Client CPU seconds of rendering ``objs`` as a load does."""
    from dynaorm.jobs.load import _render_p
    from dynaorm.jobs.load_files import Parts

    writer = Parts(_Discard(), 1)  # type: ignore[arg-type]
    gc.collect()
    start = time.process_time()
    bench.db.driver.run(_render_p(bench, iter(objs), writer))
    writer.close()
    return time.process_time() - start


def floor(objs: list[Account]) -> float:
    """Client CPU seconds of the least any load must do for ``objs``: each entity's three
    records (latest copy, version row, guard, as dynaorm renders them) built by hand from
    ``model_dump`` with no check and no plan, as JSON lines, gzipped at level 1 as a part
    is (what pure Python pays for JSON and gzip alone)."""
    import zlib

    cond = {"ConditionExpression": "attribute_not_exists(#n0)",
            "ExpressionAttributeNames": {"#n0": "pk"}}
    packer = zlib.compressobj(1, zlib.DEFLATED, 31)
    gc.collect()
    start = time.process_time()
    for obj in objs:
        data = obj.model_dump()
        item = {k: {"S": v} if isinstance(v, str) else {"N": str(v)} for k, v in data.items()}
        pk = {"S": f"ACCT#{data['acct_id']}"}
        guard = f"email#{data['email'].lower()}"
        records = (
            {"Item": {**item, "version": {"N": "1"}, "pk": pk, "sk": {"S": "v00000001_A"},
                      "_type": {"S": "Account"}}, **cond},
            {"Item": {**item, "version": {"N": "1"}, "pk": pk, "sk": {"S": "v0_A"},
                      "_type": {"S": "Account"}, "_rev": {"S": os.urandom(8).hex()}}, **cond},
            {"Item": {"pk": {"S": guard}, "sk": {"S": guard}, "_type": {"S": "dynaorm:unique"},
                      "owner_pk": pk, "owner_sk": {"S": "v0_A"},
                      "owner_type": {"S": "Account"}, "unique_field": {"S": "email"}}, **cond})
        packer.compress(b"".join(json.dumps(r, separators=(",", ":")).encode() + b"\n"
                                 for r in records))
    packer.flush()
    return time.process_time() - start


class _Stub:
    """A transport answering every request at once, as DynamoDB answers a success."""

    botocore = False

    def send(self, operation: str, request: dict[str, Any], reader: Any = None
             ) -> dict[str, Any]:
        return {}

    async def asend(self, operation: str, request: dict[str, Any], reader: Any = None
                    ) -> dict[str, Any]:
        return {}

    def close(self) -> None: ...

    async def aclose(self) -> None: ...

    def where(self) -> tuple[str, str] | None:
        return None


def stubbed(fn: Callable[[], None]) -> float:
    """Client CPU seconds of ``fn`` with the table's client on the stub transport."""
    client = bench.db
    saved = client._swap((_Stub(), client._boto))
    try:
        gc.collect()
        start = time.process_time()
        fn()
        return time.process_time() - start
    finally:
        client._swap(saved)


def save_many(objs: list[Plain]) -> float:
    return stubbed(lambda: Session(bench).save_many(objs, concurrency=1))


def save_commit(objs: list[Account]) -> float:
    def each() -> None:
        s = Session(bench)
        for obj in objs:
            s.save(obj)
            s.commit()
    return stubbed(each)


def peak(objs: list[Any]) -> int:
    """tracemalloc's peak (bytes) while rendering ``objs`` (the objects themselves made
    before it starts)."""
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    render(objs)
    top = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return top - base


def end_to_end(count: int) -> dict[str, float]:
    """A load of ``count`` unique + versioned entities on the embedded default."""
    from moto import mock_aws

    from dynaorm.jobs import load
    from dynaorm.jobs.export_files import s3_client
    from dynaorm.testing import moto_backend, use_tables

    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        os.environ.setdefault(name, value)
    with mock_aws(), moto_backend(), use_tables(bench):
        s3_client().create_bucket(Bucket="bench-loads")
        start = time.perf_counter()
        report = load(bench, (a for a in accounts(count)), s3="s3://bench-loads/x", poll=0)
        seconds = time.perf_counter() - start
        assert report.ok and report.loaded == count, report.lines()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"entities": count, "seconds": seconds, "peak_rss_mb": rss}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--entities", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--e2e", type=int, default=0, metavar="N")
    parser.add_argument("--json", default=None)
    args = parser.parse_args()
    n = args.entities
    figures: dict[str, Any] = {}
    with tempfile.TemporaryDirectory():
        from dynaorm.testing import moto_backend, use_tables

        with moto_backend(), use_tables(bench):
            rows = {
                "render, plain entity (1 row)": lambda: render(plains(n)),
                "render, unique + versioned (3 rows)": lambda: render(accounts(n)),
                "floor: the same 3 records by hand": lambda: floor(accounts(n)),
                "save_many, plain entity": lambda: save_many(plains(n)),
                "save + commit, unique + versioned": lambda: save_commit(accounts(n // 4)) * 4,
            }
            print(f"client CPU per entity, best of {args.repeats} ({n} entities)")
            print(f"{'':40s} {'us/entity':>10s} {'entities/s':>12s}")
            for label, fn in rows.items():
                best = min(fn() for _ in range(args.repeats)) / n
                figures[label] = {"us_per_entity": best * 1e6, "per_second": 1 / best}
                print(f"{label:40s} {best * 1e6:10.1f} {1 / best:12,.0f}")
            for count in (n, 5 * n):
                objs = accounts(count)
                top = peak(objs)
                figures[f"peak render memory, {count} entities"] = top
                print(f"tracemalloc peak rendering {count:>7} entities: {top / 1e6:6.1f} MB")
    if args.e2e:
        e2e = end_to_end(args.e2e)
        figures["end to end"] = e2e
        print(f"end to end on the embedded default: {e2e['entities']} entities in "
              f"{e2e['seconds']:.1f} s, peak RSS {e2e['peak_rss_mb']:.0f} MB")
    target = figures["render, unique + versioned (3 rows)"]["per_second"]
    least = figures["floor: the same 3 records by hand"]["per_second"]
    print(f"budget: >= 50,000 entities/s rendering a unique + versioned entity: "
          f"{target:,.0f} ({'met' if target >= 50_000 else 'NOT met'}; the floor of JSON "
          f"and gzip alone: {least:,.0f}/s, dynaorm at {least / target:.1f}x it)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=2)


if __name__ == "__main__":
    main()
