"""Document tracking: everything about one document under its id, told apart by the sort
key (metadata, permissions), plus versioned content with ``v0_`` as the latest copy.

Run: ``python examples/document_tracking.py [--endpoint-url URL]``
"""

from __future__ import annotations

from _support import keys, run, show, table_keys

from dynaorm import Entity, Table

docs = Table("dynaorm-example-documents")


class Metadata(Entity):
    class Meta:
        table = docs
        pk = "DOC#{doc_id}"
        sk = "METADATA"

    doc_id: str
    title: str
    owner: str
    pages: int = 0


class Permissions(Entity):
    class Meta:
        table = docs
        pk = "DOC#{doc_id}"
        sk = "PERMISSIONS"

    doc_id: str
    readers: list[str]
    editors: list[str]


class Content(Entity):
    """Stored as v0_CONTENT (latest) plus v00000001_CONTENT, v00000002_CONTENT, ..."""

    class Meta:
        table = docs
        pk = "DOC#{doc_id}"
        sk = "CONTENT"
        versioned = True

    doc_id: str
    body: str
    editor: str


def main() -> None:
    with run(docs, "document metadata, permissions and versions under one id") as db:
        s = db.session()
        s.save(Metadata(doc_id="d1", title="Q3 report", owner="ana", pages=12))
        s.save(Permissions(doc_id="d1", readers=["ana", "bo", "cy"], editors=["ana"]))
        content = Content(doc_id="d1", body="draft", editor="ana")
        s.save(content)
        s.commit()
        for body, editor in [("draft, with numbers", "ana"), ("final", "bo")]:
            content.body, content.editor = body, editor
            s.save(content)
            s.commit()
        s.save(Metadata(doc_id="d2", title="Budget", owner="bo"))
        s.commit()
        table_keys(db, "three saves of d1's content", extra=["version"])

        show('s.query(Metadata, doc_id="d1")  # sk = "METADATA"',
             s.query(Metadata, doc_id="d1"), keys)
        show('s.query(Permissions, doc_id="d1")', s.query(Permissions, doc_id="d1"), keys)
        show('s.query(Metadata, Permissions, Content, doc_id="d1")  # the whole document',
             s.query(Metadata, Permissions, Content, doc_id="d1"), keys)
        show('s.history(Content, doc_id="d1")', s.history(Content, doc_id="d1"), keys)
        show('s.history(Content, doc_id="d1").reverse().limit(1)',
             s.history(Content, doc_id="d1").reverse().limit(1), keys)
        v1 = s.get(Content, doc_id="d1", version=1)
        print(f"\ns.get(Content, doc_id='d1', version=1) -> {keys(v1) if v1 else None}")
        latest = s.get(Content, doc_id="d1")
        print(f"s.get(Content, doc_id='d1') -> {keys(latest) if latest else None}")


if __name__ == "__main__":
    main()
