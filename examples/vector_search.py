"""Retrieval on one table: passages with an embedding, found by meaning through a vector
index, one tenant at a time, narrowed by category. The embedding function is yours (a
Bedrock model, a sentence-transformer...): here a stand-in that counts eight words, so
the example downloads nothing.

Run: ``python examples/vector_search.py [--endpoint-url URL]`` (the embedded default or
dynoxide: DynamoDB Local has no vector index)
"""

from __future__ import annotations

from typing import Annotated

from _support import run, show

from dynaorm import Entity, F, InvalidValueError, RequestError, Table, Vector, VectorIndex

DIMS = 8

kb = Table("dynaorm-example-vector-search", vector_indexes=[
    VectorIndex("by_meaning", attribute="embedding", dimensions=DIMS, distance="COSINE",
                partition="tenant_id", filters=("category",))])


class Passage(Entity):
    class Meta:
        table = kb
        pk = "PASSAGE#{passage_id}"
        sk = "PASSAGE"

    passage_id: str
    tenant_id: str
    category: str
    text: str
    embedding: Annotated[list[float], Vector(DIMS)]


#: what the stand-in embedding counts, one number each
WORDS = ("refund", "paid", "card", "invoice", "month", "password", "login", "damage")


def embed(text: str) -> list[float]:
    """One vector of ``DIMS`` numbers per text: put your embedding model here (the query
    and the passages must go through the same one). This stand-in counts the words of
    :data:`WORDS` (and their plurals)."""
    words = text.lower().replace(".", " ").replace("?", " ").split()
    return [float(sum(w.rstrip("s") == root for w in words)) for root in WORDS]


PASSAGES = [
    ("p1", "acme", "billing", "Refunds are paid back to the card within five days."),
    ("p2", "acme", "billing", "Invoices are sent on the first day of each month."),
    ("p3", "acme", "support", "Reset your password from the login page."),
    ("p4", "acme", "support", "Refunds for broken items need a photo of the damage."),
    ("p5", "globex", "billing", "Refunds are paid back to the card within five days."),
]


def main() -> None:
    try:
        with run(kb, "retrieval with a vector index (SearchVectors)") as db:
            with db.session() as s:
                for pid, tenant, category, text in PASSAGES:
                    s.save(Passage(passage_id=pid, tenant_id=tenant, category=category,
                                   text=text, embedding=embed(text)))
            s = db.session()
            question = "how are refunds paid back?"
            show(f'search(Passage, "by_meaning", vector=embed({question!r}), top=2, '
                 'tenant_id="acme")',
                 s.search(Passage, "by_meaning", vector=embed(question), top=2,
                          tenant_id="acme").all(),
                 lambda hit: f"{hit.score:.3f} {hit.item.passage_id} {hit.item.text}")
            show('... .where(F("category") == "support")',
                 s.search(Passage, "by_meaning", vector=embed(question), top=3,
                          tenant_id="acme").where(F("category") == "support").all(),
                 lambda hit: f"{hit.score:.3f} {hit.item.passage_id} {hit.item.text}")
            try:
                s.search(Passage, "by_meaning", vector=[1.0, 2.0], tenant_id="acme")
            except InvalidValueError:
                print("a vector of another length: refused before sending")
    except RequestError as exc:  # DynamoDB Local ignores vector indexes and refuses searches
        print(f"this endpoint has no vector search ({exc.code}): run it on the embedded "
              "default or dynoxide")


if __name__ == "__main__":
    main()
