"""Values of any size: documents whose body may be megabytes. A value above the table's
``offload_threshold`` is kept in S3 (uploaded before the commit), the row holding a
reference; reads fetch it, a save that leaves it alone uploads nothing, a changed or
deleted value's object is removed once the commit applied, and ``dynaorm check`` finds
no object without a row and no row without its object.

Run: ``python examples/offloaded_values.py [--endpoint-url URL]``
(S3: moto's, in-process beside the in-process DynamoDB, else a moto server's)
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta

from _support import bucket, run

from dynaorm import Entity, Hook, Offloaded, Table
from dynaorm.jobs.checking import check_table

docs = Table("dynaorm-example-offload", offload="s3://placeholder/docs/",
             offload_threshold=4096)


class Document(Entity):
    class Meta:
        table = docs
        pk = "DOC#{doc_id}"
        sk = "DOC"

    doc_id: str
    title: str
    body: Offloaded[str] = ""
    attachment: Offloaded[bytes] | None = None


class S3Requests(Hook):
    """Counts the S3 requests the table's client sends (they are its requests)."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    def on_start(self, phase: object) -> object:
        operation = str(getattr(phase, "operation", ""))
        if operation.startswith("s3:"):
            self.seen.append(operation)
        return None


def main() -> None:
    endpoint = sys.argv[sys.argv.index("--endpoint-url") + 1] if (
        "--endpoint-url" in sys.argv) else os.environ.get("AWS_ENDPOINT_URL_DYNAMODB")
    with run(docs, "values of any size") as db, bucket("dynaorm-example-offload",
                                                        endpoint) as uri:
        docs.offload = f"{uri}/docs/"
        s = db.session()
        s.save(Document(doc_id="d1", title="a note", body="short enough for its row"))
        s.save(Document(doc_id="d2", title="a book", body="chapter " * 150_000,
                        attachment=os.urandom(500_000)))  # (1.2 MB and 500 KB)
        s.commit()
        rows = {r["doc_id"]["S"]: r for r in db.scan_raw()}
        print("d1 body in its row:", "S" in rows["d1"]["body"])
        print("d2 body is a reference:", sorted(rows["d2"]["body"]["M"]))
        book = s.get(Document, doc_id="d2")
        assert book is not None
        print("d2 body read back:", len(book.body), "characters")
        seen = S3Requests()
        docs.db.add_hook(seen)
        book.title = "a longer book"  # (the body is left alone)
        s.save(book)
        s.commit()
        print("renamed, S3 requests:", seen.seen)
        book.body = "epilogue " * 100_000
        s.save(book)
        s.commit()
        print("new body, S3 requests:", seen.seen[-2:])
        s.delete(book)
        s.commit()
        found = check_table(docs, orphan_age=timedelta(0))
        print("check:", len(found.problems), "problems,", found.objects, "objects")
        docs.db.remove_hook(seen)


if __name__ == "__main__":
    main()
