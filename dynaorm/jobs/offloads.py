"""What ``dynaorm check`` finds of a table's offloaded values (``Table(offload=...)``):
objects under the table's prefix that no row references (*orphans*: a commit whose outcome
stayed unknown, an item DynamoDB's TTL deleted, a write outside dynaorm) and references to
no object (*dangling*: an object removed behind dynaorm's back), and the removal of
orphans (``--repair``).

The references are collected from the pages the check scans; the objects are listed once
the scan is done. An object is an orphan only when it is older than ``orphan_age`` before
the scan began (a commit uploads before it writes its row: an object younger than that may
belong to a commit in flight) and no reference names it; before ``--repair`` removes one,
the table's references are collected again by a second scan, and only an object that
neither scan found referenced goes (a row moved to a page already scanned while the first
scan ran is found by the second). Every request goes through the table's client.
"""

from collections.abc import Generator, Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from dynaorm._types import Item
from dynaorm.client.table import Table
from dynaorm.errors import RequestError
from dynaorm.jobs.audit import Key, Problem, Repair
from dynaorm.protocol.hooks import Operation
from dynaorm.protocol.steps import Call
from dynaorm.schema.places import offload_location
from dynaorm.schema.rules.offloaded import S3, Reference, delete_objects, references

#: how old an object must be (before the check began) to be judged an orphan
ORPHAN_AGE = timedelta(hours=1)


def referenced(items: Iterable[Item], key_of: Any) -> dict[str, tuple[Key, str]]:
    """The URIs the references of ``items`` name: the item (its key, as ``key_of`` gives
    it) and the attribute of the first that names each."""
    found: dict[str, tuple[Key, str]] = {}
    for item in items:
        for attr, ref in references(item).items():
            found.setdefault(ref.uri, (key_of(item), attr))
    return found


@dataclass(frozen=True)
class Found:
    """The objects of a table's prefix (URI -> when written) and the prefix listed."""

    objects: Mapping[str, datetime]
    bucket: str
    prefix: str


def _listed(bucket: str, prefix: str) -> Generator[Any, Any, dict[str, datetime]]:
    """Every object right under ``prefix`` (ListObjectsV2, a thousand a page): none below
    a further ``/``, which only another table's (its prefix under this one's) holds."""
    found = {}
    request = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/"}
    while True:
        out = yield Call("s3:ListObjectsV2", dict(request), service=S3)
        for entry in out.get("Contents") or ():
            found[f"s3://{bucket}/{entry['Key']}"] = entry["LastModified"]
        token = out.get("NextContinuationToken")
        if not out.get("IsTruncated") or not token:
            return found
        request["ContinuationToken"] = token


def _present(uris: Iterable[str]) -> Generator[Any, Any, set[str]]:
    """Which of ``uris`` (outside the listed prefix) name an object (HeadObject each)."""
    present = set()
    for uri in uris:
        bucket, _, key = uri[5:].partition("/")
        try:
            yield Call("s3:HeadObject", {"Bucket": bucket, "Key": key}, service=S3)
        except RequestError as exc:
            if exc.code in ("404", "NoSuchKey", "NotFound", "NoSuchBucket"):
                continue
            raise
        present.add(uri)
    return present


def collect(table: Table) -> Found:
    """The objects right under ``table``'s prefix (its ``offload=`` prefix and its name,
    then ``/``): where it writes each, and where no other table does (a table name holds
    no ``/``), whatever their prefixes."""
    assert table.offload is not None
    bucket, prefix = offload_location(table.offload)
    prefix = f"{prefix}{table.name}/"
    objects = table.db.driver.run(_listed(bucket, prefix),
                                  Operation("check.objects", (table.name,)))
    return Found(objects, bucket, prefix)


def compare(table: Table, refs: Mapping[str, tuple[Key, str]], found: Found,
            began: datetime, orphan_age: timedelta = ORPHAN_AGE) -> list[Problem]:
    """The dangling references of ``refs`` (each a problem of the item holding it) and the
    orphans of ``found`` (objects no reference names, older than ``orphan_age`` before
    ``began``), as problems (neither repaired by a transaction: see :func:`remove`)."""
    outside = [u for u in refs if not u.startswith(f"s3://{found.bucket}/{found.prefix}")]
    present = table.db.driver.run(_present(outside), Operation("check.objects", (
        table.name,))) if outside else set()
    problems = [Problem("dangling-ref", key, f"{attr} references {uri}, which is missing")
                for uri, (key, attr) in sorted(refs.items())
                if uri not in found.objects and uri not in present]
    cutoff = began - orphan_age
    problems += [Problem("orphan-object", (uri, ""), "no row references it")
                 for uri, written in sorted(found.objects.items())
                 if uri not in refs and written <= cutoff]
    return problems


def remove(table: Table, orphans: list[Problem], page_size: int | None = None
           ) -> tuple[list[Problem], list[Problem]]:
    """Remove the objects of ``orphans`` that a second scan of ``table`` finds no
    reference to either: ``(removed, kept)`` (kept: referenced now, or refused by S3)."""
    again = table.db.driver.run(_references(table, page_size),
                                Operation("check.references", (table.name,)))
    gone = [p for p in orphans if p.key[0] not in again]
    refs = [_ref(p.key[0]) for p in gone]
    refused = set(table.db.driver.run(delete_objects(refs), Operation(
        "check.repair", (table.name,)))) if refs else set()
    removed = [p for p in gone if p.key[0] not in refused]
    return removed, [p for p in orphans if p not in removed]


def _references(table: Table, page_size: int | None) -> Generator[Any, Any, set[str]]:
    """The URIs every row of ``table`` references (a consistent scan of the rows as
    stored: their objects are not read)."""
    request: dict[str, Any] = {"TableName": table.name, "ConsistentRead": True}
    if page_size:
        request["Limit"] = page_size
    found = set()
    while True:
        out = yield Call("Scan", dict(request))
        found |= set(referenced(out.get("Items") or (), lambda item: ("", "")))
        last = out.get("LastEvaluatedKey")
        if not last:
            return found
        request["ExclusiveStartKey"] = last


def _ref(uri: str) -> Reference:
    bucket, _, key = uri[5:].partition("/")
    return Reference(bucket, key, "", 0, "")


@dataclass(frozen=True)
class Judged:
    """What :func:`judged_objects` found and did: the problems (dangling references, which
    no repair mends, and orphans), the repairs tried, and the objects listed."""

    problems: list[Problem]
    repairs: list[Repair]
    objects: int
    unrepairable: int
    repaired: int
    resolved: int


def judged_objects(table: Table, refs: Mapping[str, tuple[Key, str]], began: datetime,
                   orphan_age: timedelta, fix: bool, page_size: int | None) -> Judged:
    """The objects of ``table``'s prefix compared with ``refs`` (every reference its rows
    hold, collected by a whole scan that began at ``began``), and with ``fix`` the orphans
    removed (:func:`remove`)."""
    found = collect(table)
    judged = compare(table, refs, found, began, orphan_age)
    orphans = [p for p in judged if p.kind == "orphan-object"]
    removed: list[Problem] = []
    kept: list[Problem] = []
    if fix and orphans:
        removed, kept = remove(table, orphans, page_size)
    repairs = [*(Repair(p, True) for p in removed),
               *(Repair(p, False, "referenced again, or S3 refused to remove it")
                 for p in kept)]
    return Judged(judged, repairs, len(found.objects), len(judged) - len(orphans),
                  len(removed), len(kept))
