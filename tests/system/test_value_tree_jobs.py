"""The value tree (contract 25, issue 88) on the paths least proven to walk it: exports,
loads, inference and the offload audit, of entities holding kinds at depth -- a nested
model's ``StoredAs`` times (and a registered kind, ``Cents``) in lists, mappings and
optionals; ``list[Encrypted[str]]``, ``dict[str, Encrypted[bytes]]``, a sealed model with a
``StoredAs`` time; ``Offloaded`` lists of models and mappings; ``Compressed`` lists of
models and ``Compressed[Encrypted[str]]``; a versioned entity's history; records
(dataclass, ``TypedDict``, ``NamedTuple``) holding a kind. A table of cases, on moto (S3
from moto beside it): what is asked of each is the library's walk, not an engine's answer.

(a) a load (of objects, an export's Parquet and Iceberg, a DynamoDB export) stores each row
    as a save of the same objects does, byte for byte but ciphertexts and objects' names;
(b) ``encrypted="omit"`` leaves no plaintext of a sealed value in any file written;
(c) the model inferred from the table (with the keyring) reads every row as the original;
(d) the offload audit finds every reference dangling, naming its row and attribute.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, NamedTuple, NotRequired, Required

import pytest
from pydantic import BaseModel
from typing_extensions import ReadOnly, TypedDict

from dynaorm import (
    Compressed,
    Encrypted,
    Entity,
    Offloaded,
    Session,
    StaticKeyring,
    StoredAs,
    Table,
)
from dynaorm.codec import register, stored_as
from dynaorm.jobs import export, load, run_local
from dynaorm.jobs.export_files import s3_client
from dynaorm.protocol.steps import call
from dynaorm.schema.entity import spec_of
from dynaorm.schema.rules.offloaded import reference
from dynaorm.testing import TestBackend, moto_backend, use_tables, worker_suffix
from dynaorm.values.tree import holding
from tests.support.offload import Bucket, bucket

pytest.importorskip("pyarrow", reason="dynaorm[export] is not installed")
pytestmark = [pytest.mark.sync_only, pytest.mark.engines("moto")]

LIMIT = 200
LOADS = "value-tree-loads"
WHEN = datetime(2026, 5, 1, 12, 0, 7, tzinfo=UTC)


class Cents:
    def __init__(self, n: int) -> None:
        self.n = n

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cents) and other.n == self.n

    def __hash__(self) -> int:
        return hash(self.n)

    def __repr__(self) -> str:
        return f"Cents({self.n})"


register(stored_as(Cents, int, to=lambda c: c.n, back=Cents))

jobs_table = Table("value_tree_jobs", keyring=StaticKeyring(b"j" * 32),
                   offload="s3://placeholder/v/", offload_threshold=LIMIT)


class Leg(BaseModel):
    at: Annotated[datetime, StoredAs.EPOCH_SECONDS]
    price: Cents = Cents(0)
    seen: list[Annotated[datetime, StoredAs.ISO_Z_MILLIS]] = []


class Card(BaseModel):
    pan: str
    at: Annotated[datetime, StoredAs.EPOCH_MILLIS]


class Trip(Entity):
    class Meta:
        table = jobs_table
        pk = "TRIP#{id}"
        sk = "TRIP"

    id: str
    leg: Leg
    legs: list[Leg] = []
    stops: dict[str, Leg] = {}
    maybe: Leg | None = None
    seen: list[Annotated[datetime, StoredAs.ISO_Z_MILLIS]] = []


class Vault(Entity):
    class Meta:
        table = jobs_table
        pk = "VAULT#{id}"
        sk = "VAULT"
        versioned = True

    id: str
    cards: list[Encrypted[str]] = []
    docs: dict[str, Encrypted[bytes]] = {}
    card: Encrypted[Card] | None = None
    kept: Offloaded[list[Leg]] = []
    packed: Compressed[list[Leg]] = []
    notes: dict[str, Offloaded[str]] = {}
    sealed: Offloaded[Encrypted[Card]] | None = None
    zipped: Compressed[Encrypted[str]] = ""


def leg(n: int) -> Leg:
    return Leg(at=WHEN.replace(second=n), price=Cents(n * 100),
               seen=[WHEN.replace(microsecond=123000 + n)])


def trip(n: int) -> Trip:
    return Trip(id=f"t{n}", leg=leg(n), legs=[leg(n + 1), leg(n + 2)],
                stops={"a": leg(n + 3)}, maybe=leg(n + 4) if n % 2 else None,
                seen=[WHEN.replace(minute=n)])


def vault(n: int, big: bool = True) -> Vault:
    """A vault whose offloaded values are kept in S3 (``big``), else in its row (a bulk
    load takes no value kept in S3)."""
    secret, more = f"PLAIN{n:03d}", LIMIT if big else 0
    return Vault(id=f"v{n}", cards=[f"{secret}card{i}" for i in range(2)],
                 docs={"passport": f"{secret}doc".encode()},
                 card=Card(pan=f"{secret}pan", at=WHEN),
                 kept=[leg(n + i) for i in range(12 if big else 1)], packed=[leg(n)] * 3,
                 notes={"n": f"note{n}" + "x" * more},
                 sealed=Card(pan=f"{secret}big" + "y" * more, at=WHEN),
                 zipped=f"{secret}zip" * 30)


@pytest.fixture
def db(backend: str | None, request: pytest.FixtureRequest,
       monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[TestBackend, Bucket]]:
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    with moto_backend(), bucket(backend, request, monkeypatch, jobs_table) as b, use_tables(
            jobs_table, endpoint_url=backend, name_suffix=worker_suffix()) as tb:
        s3_client().create_bucket(Bucket=LOADS)
        yield tb, b


def _rows(tb: TestBackend) -> list[dict[str, Any]]:
    """Every row as stored, byte for byte but what each write draws anew: the revision,
    a sealed value's ciphertext (its nonce, its data key) and an offloaded one's object
    (its name; its digest where the value is sealed): those are compared decoded
    (:func:`_reads`)."""
    out = []
    for row in tb.scan_raw():
        spec = spec_of(next(c for c in jobs_table.entities.values()
                            if spec_of(c).type_name == row["_type"]["S"]))
        sealed = {spec.attr(n) for n in holding(spec.trees, "dynaorm:encrypted")}
        kept: dict[str, Any] = {}
        for attr, value in row.items():
            if attr == "_rev":
                continue
            if (ref := reference(value)) is not None:
                value = ("ref", ref.tag, ref.size, None if attr in sealed else ref.sha256)
            elif attr in sealed:
                value = ("sealed", len(value["B"]))
            kept[attr] = value
        out.append(kept)
    return out


def _reads() -> list[Any]:
    """Every entity and every version as a read gives it."""
    s = Session(jobs_table)
    found: list[Any] = [*s.scan(Trip).all(), *s.scan(Vault).all()]
    return found + [h for v in s.scan(Vault).all() for h in s.history(Vault, id=v.id).all()]


def _saved(tb: TestBackend, big: bool = True) -> tuple[list[Any], list[Any]]:
    s = Session(jobs_table)
    for n in range(3):
        s.save(trip(n))
        s.save(vault(n, big))
    s.commit()
    return _rows(tb), _reads()


def _clear(tb: TestBackend) -> None:
    for item in tb.scan_raw():
        jobs_table.db.driver.run(call("DeleteItem", {"TableName": jobs_table.name, "Key": {
            "pk": item["pk"], "sk": item["sk"]}}))


def _dynamodb_export() -> str:
    """A DynamoDB export of the table to S3 (the embedded default's), as a load takes it."""
    jobs_table.db.driver.run(call("UpdateContinuousBackups", {
        "TableName": jobs_table.name,
        "PointInTimeRecoverySpecification": {"PointInTimeRecoveryEnabled": True}}))
    arn = jobs_table.db.driver.run(call("DescribeTable", {"TableName": jobs_table.name}))[
        "Table"]["TableArn"]
    manifest = jobs_table.db.driver.run(call("ExportTableToPointInTime", {
        "TableArn": arn, "S3Bucket": LOADS, "S3Prefix": "exp"}))["ExportDescription"][
        "ExportManifest"]
    return f"s3://{LOADS}/{manifest.rsplit('/', 1)[0]}/"


def _lake(tmp_path: Path, **more: Any) -> Any:
    """The table exported as Iceberg tables (the lake's format) to a catalog of its own."""
    from pyiceberg.catalog.sql import SqlCatalog

    (tmp_path / "warehouse").mkdir()
    catalog = SqlCatalog("lake", uri=f"sqlite:///{tmp_path}/catalog.db",
                         warehouse=f"file://{tmp_path}/warehouse")
    run_local(export(jobs_table, tmp_path / "staged", format="iceberg", catalog=catalog,
                     namespace="app", **more))
    return catalog


@pytest.mark.parametrize("via", ["objects", "parquet", "dynamodb-export", "iceberg"])
def test_an_export_loaded_back_stores_each_row_as_a_save_does(
        db: tuple[TestBackend, Bucket], tmp_path: Path, via: str) -> None:
    """(a) The rows a load stores, of the objects, of an export (decrypted: ``omit``
    cannot be loaded back; Parquet, Iceberg) or of a DynamoDB export, are the rows a save
    of the same objects stores: byte for byte but the ciphertexts and objects' names,
    which read back equal."""
    tb, _ = db
    rows, reads = _saved(tb, big=False)
    assert not any(reference(v) for r in tb.scan_raw() for v in r.values())
    sources: list[tuple[Any, type[Entity] | None]]
    if via == "objects":
        sources = [([*map(trip, range(3)), *(vault(n, big=False) for n in range(3))], None)]
    elif via == "parquet":
        run_local(export(jobs_table, tmp_path / "out", encrypted="decrypt"))
        sources = [(str(tmp_path / "out"), None)]
    elif via == "iceberg":
        catalog = _lake(tmp_path, encrypted="decrypt")
        sources = [(catalog.load_table(("app", c.__name__)), c) for c in (Trip, Vault)]
    else:
        sources = [(_dynamodb_export(), None)]
    _clear(tb)
    for n, (source, entity) in enumerate(sources):
        report = load(jobs_table, source, s3=f"s3://{LOADS}/runs", name=f"{via}{n}", poll=0,
                      entity=entity)
        assert report.ok and report.loaded == (6 if entity is None else 3), report
    assert _rows(tb) == rows
    assert _reads() == reads


def _written(folder: Path) -> bytes:
    """Every byte of every file under ``folder``, and the rows of its Parquet files as
    read (a compressed page could hide a plaintext from a search of the bytes)."""
    import pyarrow.parquet as pq

    files = [f for f in folder.rglob("*") if f.is_file()]
    assert files
    return b"".join(f.read_bytes() + (repr(pq.read_table(f).to_pylist()).encode()
                                      if f.suffix == ".parquet" else b"") for f in files)


@pytest.mark.parametrize("via", ["scan", "dynamodb-export"])  # (the lake's: the scan's parts)
def test_an_export_leaving_sealed_values_out_holds_no_plaintext_of_any(
        db: tuple[TestBackend, Bucket], tmp_path: Path, via: str) -> None:
    """(b) ``encrypted="omit"`` (history too): no plaintext of a sealed value (a list's
    members, a mapping's values, a model, one kept in S3) in any file; ``"decrypt"``
    holds each (the search can fail); the values at depth exported as values."""
    tb, _ = db
    _saved(tb)
    source = _dynamodb_export() if via == "dynamodb-export" else None
    for to, encrypted in (("omit", "omit"), ("open", "decrypt")):
        run_local(export(jobs_table, tmp_path / to, history=True, source=source,
                         encrypted=encrypted))
    omitted, opened = _written(tmp_path / "omit"), _written(tmp_path / "open")
    assert b"PLAIN" not in omitted
    assert all(f"PLAIN{n:03d}{what}".encode() in opened for n in range(3)
               for what in ("card0", "card1", "doc", "pan", "big", "zip"))
    assert b"note1xxx" in omitted  # (an offloaded plain value: its value, not a reference)


def _plain(value: Any) -> Any:
    """A value as plain data, whichever model read it (the original's classes or the
    inferred ones: a nested model as a dict of its fields, a ``Cents`` as its int)."""
    if isinstance(value, BaseModel):
        return {k: _plain(v) for k, v in value.__dict__.items()}
    if isinstance(value, Cents):
        return value.n
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value


def test_an_inferred_model_reads_kinds_at_depth_as_the_original_does(
        db: tuple[TestBackend, Bucket]) -> None:
    """(c) Inferred from the table (with its keyring: a client's), the printed model reads
    every row as the original model reads it: a nested model's ``StoredAs`` times (a
    list's members', a mapping's values') as times, sealed lists and mappings, offloaded
    models as values (never a reference map, a ciphertext or a time's stored text)."""
    from dynaorm.client.infer import infer_code

    tb, _ = db
    _saved(tb)
    jobs_table.client.keyring = jobs_table.keyring
    try:
        code, model = infer_code(jobs_table.name, client=jobs_table.client, report=None)
    finally:
        jobs_table.client.keyring = None
    assert model["inferred"]["unplaced"]["count"] == 0, (code, model["inferred"])
    module = types.ModuleType(f"inferred_{uuid.uuid4().hex}")
    sys.modules[module.__name__] = module  # (pydantic resolves annotations through it)
    exec(compile(code, "<inferred>", "exec"), module.__dict__)
    printed = next(v for v in vars(module).values() if isinstance(v, Table))
    printed.connect(tb.endpoint_url, "us-east-1")
    printed.keyring = jobs_table.keyring
    s, o = Session(printed), Session(jobs_table)
    for cls in (Trip, Vault):
        mine = printed.entities[spec_of(cls).type_name]
        got = {r.id: _plain(r.__dict__) for r in s.scan(mine).all()}
        want = {r.id: _plain(r.__dict__) for r in o.scan(cls).all()}
        bad = {(i, f) for i in want for f in want[i] if got[i].get(f) != want[i][f]}
        assert not bad, (bad, [(got[i][f], want[i][f]) for i, f in sorted(bad)[:3]])


def test_the_offload_audit_finds_every_reference_dangling(
        db: tuple[TestBackend, Bucket]) -> None:
    """(d) Every reference a row holds (a list of models, a mapping, a sealed model; the
    latest copy's and the version row's) is found by ``check``: none dangling while
    its object is there, each dangling, naming its row and attribute, once removed."""
    from dynaorm.jobs.checking import check_table

    tb, b = db
    _saved(tb)
    refs = {(r["pk"]["S"], r["sk"]["S"], a): ref.uri for r in tb.scan_raw()
            for a, v in r.items() if (ref := reference(v)) is not None}
    assert len(refs) == 18 and len(set(refs.values())) == 18
    result = check_table(jobs_table)
    assert (result.problems, result.objects) == ([], 18)
    for uri in refs.values():
        b.remove(uri)
    problems = check_table(jobs_table).problems
    assert len(problems) == 18, problems
    assert all(any(p.startswith(f"dangling-ref   {pk} | {sk}  ({attr} references {uri},")
                   for p in problems) for (pk, sk, attr), uri in refs.items()), problems


@dataclasses.dataclass
class Stamp:
    """A dataclass member: a record (not a pydantic model) holding a kind."""

    at: Annotated[datetime, StoredAs.EPOCH_SECONDS]


class Span(TypedDict):
    at: Annotated[datetime, StoredAs.ISO_Z_MILLIS]


class Pair(NamedTuple):
    at: Annotated[datetime, StoredAs.EPOCH_MILLIS]
    n: int


class Log(Entity):
    class Meta:
        table = jobs_table
        pk = "LOG#{id}"
        sk = "LOG"

    id: str
    stamp: Stamp
    stamps: list[Stamp] = []
    span: Span | None = None
    pair: Pair | None = None


def test_a_kind_inside_a_dataclass_typeddict_or_namedtuple_is_stored_its_way(
        db: tuple[TestBackend, Bucket], tmp_path: Path) -> None:
    """A ``StoredAs`` on a record's member (a dataclass's, a ``TypedDict``'s, a
    ``NamedTuple``'s: values pydantic validates as a model's) is stored in its form, as a
    nested model's is, by a save and an update, and reads and exports back."""
    tb, _ = db
    log = Log(id="1", stamp=Stamp(at=WHEN), stamps=[Stamp(at=WHEN)], span={"at": WHEN},
              pair=Pair(at=WHEN, n=2))
    s = Session(jobs_table)
    s.save(log)
    s.commit()
    (row,) = [r for r in tb.scan_raw() if r["pk"] == {"S": "LOG#1"}]
    epoch = {"N": str(int(WHEN.timestamp()))}
    assert (row["stamp"], row["stamps"], row["span"], row["pair"]) == (
        {"M": {"at": epoch}}, {"L": [{"M": {"at": epoch}}]},
        {"M": {"at": {"S": "2026-05-01T12:00:07.000Z"}}},
        {"L": [{"N": f"{int(WHEN.timestamp())}000"}, {"N": "2"}]})
    assert Session(jobs_table).get(Log, id="1") == log
    later = WHEN.replace(year=2027)
    s.update(Log, id="1").set(stamp=Stamp(at=later))  # (a path into a record is refused)
    s.commit()
    (row,) = [r for r in tb.scan_raw() if r["pk"] == {"S": "LOG#1"}]
    assert row["stamp"] == {"M": {"at": {"N": str(int(later.timestamp()))}}}
    run_local(export(jobs_table, tmp_path, entities=[Log]))
    import pyarrow.parquet as pq

    (got,) = pq.read_table(next(tmp_path.rglob("*.parquet"))).to_pylist()
    assert (got["stamp"], got["pair"]) == ('{"at":"2027-05-01T12:00:07Z"}',  # (values: JSON
                                           '["2026-05-01T12:00:07Z",2]')  # text, no Arrow type)


class Window(TypedDict, total=False):
    """A ``TypedDict`` whose members are marked ``Required``/``NotRequired``."""

    start: Required[Annotated[datetime, StoredAs.EPOCH_SECONDS]]
    end: NotRequired[Annotated[datetime, StoredAs.EPOCH_MILLIS]]
    at: NotRequired[ReadOnly[Annotated[datetime, StoredAs.EPOCH_SECONDS]]]


@dataclasses.dataclass
class Branch:
    """A dataclass holding itself (a back-reference) and a kind."""

    at: Annotated[datetime, StoredAs.EPOCH_SECONDS]
    kids: list[Branch] = dataclasses.field(default_factory=list)


class Shift(Entity):
    class Meta:
        table = jobs_table
        pk = "SHIFT#{id}"
        sk = "SHIFT"

    id: str
    windows: list[Window] = []
    branch: Branch | None = None


def test_a_kind_on_a_required_or_not_required_member_is_stored_its_way(
        db: tuple[TestBackend, Bucket]) -> None:
    """A ``TypedDict``'s member marked ``Required``, ``NotRequired`` or ``ReadOnly`` holds
    its kind (the marker only says whether the key may be left out: it was stored as pydantic dumps
    it, a time as ISO text), in a list too; a dataclass inside itself holds its kind at
    every depth."""
    tb, _ = db
    shift = Shift(id="1", windows=[{"start": WHEN, "end": WHEN}, {"start": WHEN, "at": WHEN}],
                  branch=Branch(WHEN, [Branch(WHEN, [Branch(WHEN)])]))
    s = Session(jobs_table)
    s.save(shift)
    s.commit()
    (row,) = [r for r in tb.scan_raw() if r["pk"] == {"S": "SHIFT#1"}]
    seconds, millis = {"N": str(int(WHEN.timestamp()))}, {"N": f"{int(WHEN.timestamp())}000"}
    assert row["windows"] == {"L": [{"M": {"start": seconds, "end": millis}},
                                    {"M": {"start": seconds, "at": seconds}}]}
    leaf = {"M": {"at": seconds, "kids": {"L": []}}}
    assert row["branch"] == {"M": {"at": seconds, "kids": {"L": [
        {"M": {"at": seconds, "kids": {"L": [leaf]}}}]}}}
    assert Session(jobs_table).get(Shift, id="1") == shift
