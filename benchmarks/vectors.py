#!/usr/bin/env python
"""Client CPU of a vector search into entities, and the memory of its hits (issue 51).

Over the canned endpoint of ``wire.py`` (``benchmarks/canned_http.py``: a child process on
loopback answering fixed bodies), a search of the 10 and of the 100 nearest documents of
768 dimensions, each contender returning objects that hold the vector:

``botocore``         a raw botocore client (its model has ``SearchVectors``): one
                     ``search_vectors`` asking for every attribute (the vector included:
                     DynamoDB leaves it out unless asked), unmarshalled by hand into
                     dataclasses
``pydynox``          pydynox's ``VectorIndex.sync_search`` (its Rust client; one request
                     asking for the model's attributes, its ``VectorAttribute`` rounding
                     each number to float32)
``dynaorm-botocore`` ``Session.search(...).all()`` on ``Table(wire="botocore")``
``dynaorm``          the same on dynaorm's own wire (the default)
``floor``            (reference) ``json.loads`` of the answer holding the vectors and a
                     plain pydantic model validated per item: no HTTP, no client

The index projects every attribute, so dynaorm sends one request too (0.7; 0.6 read each
hit again by key, ``SearchVectors`` then ``BatchGetItem``: 0.26x with two requests), asking
for every attribute of the entity. Target: dynaorm <= 0.15x raw botocore and below
pydynox.

Memory: ``tracemalloc``'s retained bytes of 100 hits of 768 dimensions (their entities and
loaded states) against the same 100 plain pydantic objects. Target: <= 1.5x.

Usage::

    .venv/bin/python benchmarks/vectors.py [--repeats 5] [--scale 1.0] [--json PATH]
"""

from __future__ import annotations

import gc
import json
import os
import statistics
import sys
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchmarks.canned_http import (
    DIMENSIONS,
    REGION,
    TABLE,
    answers,
    arguments,
    canned_endpoint,
)

CONTENDERS = ("botocore", "pydynox", "dynaorm-botocore", "dynaorm", "floor")
OPS = {"top10": 10, "top100": 100}
#: iterations per repeat of each op (``--scale`` multiplies them)
ITERATIONS = {"top10": 60, "top100": 8}
TARGET = 0.15
MEMORY_TARGET = 1.5
QUERY = [0.5] * DIMENSIONS
Op = Callable[[], list[Any]]


@dataclass(slots=True)
class RawDoc:
    """What the hand-written contender builds from a hit."""

    doc_id: str
    tenant_id: str
    category: str
    title: str
    embedding: list[float]
    score: float


def make_botocore(endpoint: str) -> dict[str, Op]:
    import botocore.config
    import botocore.session

    client: Any = botocore.session.get_session().create_client(
        "dynamodb", region_name=REGION, endpoint_url=endpoint,
        config=botocore.config.Config(parameter_validation=False,
                                      retries={"total_max_attempts": 1, "mode": "standard"}))
    names = ("pk", "sk", "_type", "doc_id", "tenant_id", "category", "title", "embedding")
    vector = [{"N": str(x)} for x in QUERY]

    def search(top: int) -> Op:
        def run() -> list[Any]:
            out = client.search_vectors(
                TableName=TABLE, IndexName="by_meaning", SearchVector=vector, TopK=top,
                SearchConditionExpression="#t = :t", ExpressionAttributeValues={
                    ":t": {"S": "t1"}},
                ExpressionAttributeNames={"#t": "tenant_id", **{f"#{n}": n for n in names}},
                ProjectionExpression=", ".join(f"#{n}" for n in names))
            return [RawDoc(i["doc_id"]["S"], i["tenant_id"]["S"], i["category"]["S"],
                           i["title"]["S"], [float(x["N"]) for x in i["embedding"]["L"]],
                           hit["Score"]) for hit in out["SearchResults"] for i in [hit["Item"]]]
        return run

    return {op: search(top) for op, top in OPS.items()}


def make_pydynox(endpoint: str) -> dict[str, Op]:
    from pydynox import DynamoDBClient, Model, ModelConfig
    from pydynox.attributes import StringAttribute, VectorAttribute
    from pydynox.indexes import VectorIndex

    client = DynamoDBClient(endpoint_url=endpoint, region=REGION, access_key="x",
                            secret_key="x")

    class PDoc(Model):
        model_config = ModelConfig(table=TABLE, client=client)
        pk = StringAttribute(partition_key=True)
        sk = StringAttribute(sort_key=True)
        type = StringAttribute(alias="_type", default="Doc")
        doc_id = StringAttribute()
        tenant_id = StringAttribute()
        category = StringAttribute()
        title = StringAttribute()
        embedding = VectorAttribute(DIMENSIONS)
        by_meaning = VectorIndex("by_meaning", "embedding", partition_key="tenant_id")

    def search(top: int) -> Op:
        return lambda: list(PDoc.by_meaning.sync_search(QUERY, partition_key="t1", top_k=top))

    return {op: search(top) for op, top in OPS.items()}


def dynaorm_entity(endpoint: str, wire: str) -> Any:
    from dynaorm import Entity, Table, Vector, VectorIndex

    docs = Table(TABLE, endpoint_url=endpoint, region=REGION, wire=wire, vector_indexes=[
        VectorIndex("by_meaning", attribute="embedding", dimensions=DIMENSIONS,
                    partition="tenant_id")])

    class Doc(Entity):
        class Meta:
            table = docs
            pk = "DOC#{doc_id}"
            sk = "DOC"

        doc_id: str
        tenant_id: str
        category: str
        title: str
        embedding: Annotated[list[float], Vector(DIMENSIONS)]

    return docs, Doc


def make_dynaorm(endpoint: str, wire: str) -> dict[str, Op]:
    from dynaorm import Session

    docs, doc = dynaorm_entity(endpoint, wire)

    def search(top: int) -> Op:
        return lambda: Session(docs).search(doc, "by_meaning", vector=QUERY, top=top,
                                            tenant_id="t1").all()

    return {op: search(top) for op, top in OPS.items()}


def floor_model() -> Any:
    from pydantic import BaseModel

    class PlainDoc(BaseModel):
        doc_id: str
        tenant_id: str
        category: str
        title: str
        embedding: list[float]

    return PlainDoc


def make_floor() -> dict[str, Op]:
    plain = floor_model()
    validate = plain.__pydantic_validator__.validate_python
    bodies = answers()

    def search(top: int) -> Op:
        body = bodies[f"SearchVectors:k{top}:v"]

        def run() -> list[Any]:
            return [validate({k: [float(x["N"]) for x in v["L"]] if "L" in v else v["S"]
                              for k, v in hit["Item"].items() if k in plain.model_fields})
                    for hit in json.loads(body)["SearchResults"]]
        return run

    return {op: search(top) for op, top in OPS.items()}


def timed(fn: Op, n: int) -> float:
    gc.collect()
    start = time.process_time()
    for _ in range(n):
        fn()
    return (time.process_time() - start) / n


def retained(build: Callable[[], object]) -> int:
    """Bytes still allocated after ``build()`` (its result kept), as tracemalloc counts."""
    build()  # (warm: pools, caches and schemas made before measuring)
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = build()
        gc.collect()
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    del kept
    return after - before


def memory(endpoint: str) -> tuple[int, int]:
    """(dynaorm's 100 hits, the same 100 plain pydantic objects): retained bytes."""
    from dynaorm import Session

    docs, doc = dynaorm_entity(endpoint, "dynaorm")
    plain = floor_model()
    body = answers()["SearchVectors:k100:v"]

    def plain_objects() -> list[Any]:  # (from the answer's bytes: their own numbers)
        return [plain(**{k: [float(x["N"]) for x in v["L"]] if "L" in v else v["S"]
                         for k, v in hit["Item"].items() if k in plain.model_fields})
                for hit in json.loads(body)["SearchResults"]]

    ours = retained(lambda: Session(docs).search(doc, "by_meaning", vector=QUERY, top=100,
                                                 tenant_id="t1").all())
    return ours, retained(plain_objects)


def main() -> int:
    args = arguments(__doc__)
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "x")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "x")
    os.environ["AWS_EC2_METADATA_DISABLED"] = "true"
    with canned_endpoint() as endpoint:
        contenders = {"botocore": make_botocore(endpoint), "pydynox": make_pydynox(endpoint),
                      "dynaorm-botocore": make_dynaorm(endpoint, "botocore"),
                      "dynaorm": make_dynaorm(endpoint, "dynaorm"), "floor": make_floor()}
        for name, ops in contenders.items():
            for op, fn in ops.items():
                assert len(fn()) == OPS[op], (name, op)  # (and warm: pools, caches)
        samples: dict[tuple[str, str], list[float]] = {}
        for _ in range(args.repeats):
            for op in OPS:
                n = max(1, int(ITERATIONS[op] * args.scale))
                for name in CONTENDERS:
                    samples.setdefault((name, op), []).append(timed(contenders[name][op], n))
        ours, theirs = memory(endpoint)
    median = {k: statistics.median(v) for k, v in samples.items()}
    print(f"client CPU per search into objects (ms, median of {args.repeats}), ratio to raw "
          f"botocore; {DIMENSIONS} dimensions; canned endpoint over loopback HTTP")
    print(f"| op | {' | '.join(CONTENDERS)} | target (dynaorm) |")
    print(f"| --- | {' | '.join('---:' for _ in CONTENDERS)} | ---: |")
    for op in OPS:
        base = median[("botocore", op)]
        cells = [f"{median[(c, op)] * 1e3:.2f}" + (
            "" if c == "botocore" else f" ({median[(c, op)] / base:.2f}x)") for c in CONTENDERS]
        ratio = median[("dynaorm", op)] / base
        met = ratio <= TARGET and median[("dynaorm", op)] < median[("pydynox", op)]
        print(f"| {op} | {' | '.join(cells)} | <={TARGET}x, < pydynox: "
              f"{'met' if met else 'MISSED'} |")
    times = ours / theirs
    print(f"memory of 100 hits of {DIMENSIONS} dimensions: dynaorm {ours / 1e6:.2f} MB, plain "
          f"pydantic {theirs / 1e6:.2f} MB: {times:.2f}x (<={MEMORY_TARGET}x "
          f"{'met' if times <= MEMORY_TARGET else 'MISSED'})")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({**{f"{c}:{o}": v for (c, o), v in median.items()},
                                         "memory:dynaorm": ours, "memory:pydantic": theirs},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
