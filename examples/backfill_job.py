"""A backfill as a job: every item passed through a function and saved (never over a
newer state), split into one task per scan segment and run in worker processes under a
capacity budget shared by all of them; run again, it changes nothing twice. A scan with a
budget of its own reads the result.

The same job runs on Apache Spark (AWS Glue, EMR) with ``dynaorm.spark.run(job, spark)``.

Run: ``python examples/backfill_job.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import served

from dynaorm import Entity, Rate, Session, Table, jobs

accounts = Table("dynaorm-example-backfill")


class Account(Entity):
    class Meta:
        table = accounts
        pk = "ACCOUNT#{id}"
        sk = "A"

    id: str
    plan: str = "free"
    credits: int = 0


def grant_credits(account: Account) -> Account | None:
    """The change: 100 credits for every paying account (others left alone)."""
    if account.plan == "free":
        return None
    account.credits += 100
    return account


def main() -> None:
    with served(accounts, "a backfill as a job of segments, in processes"):
        s = Session(accounts)
        s.save_many([Account(id=f"a{i:02}", plan="pro" if i % 3 else "free")
                     for i in range(30)])
        job = jobs.backfill(Account, grant_credits, segments=4, rate=Rate(write=200),
                            name="credits-2026")
        print(f"tasks: {len(job.tasks())} (picklable: one per scan segment)")
        report = jobs.run_local(job, workers=2)
        print(f"changed {report.changed} of {report.scanned}, failed {len(report.failed)}")
        again = jobs.run_local(job, workers=2)  # the same job: counted, not changed again
        print(f"run again: changed {again.changed}")
        # a budget of its own on one scan (or bulk call): 50 read units a second at most
        credits = sorted({a.credits for a in s.scan(Account, rate=Rate(read=50)).consistent()})
        print(f"credits now held: {credits}")


if __name__ == "__main__":
    main()
