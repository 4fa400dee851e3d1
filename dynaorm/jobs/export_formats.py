"""The formats an export writes besides Parquet: what an entry point of the group
``dynaorm.export_formats`` names (:class:`ExportFormat`, found by :func:`export_format`)
and what it is handed (:class:`Staged`: the datasets the export's tasks stage, what they
read, and :func:`read_parts` of what they wrote)."""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from dynaorm.jobs.export_files import ExportError, manifest, s3_client, split_url
from dynaorm.jobs.export_parts import RowReader
from dynaorm.jobs.job import Job
from dynaorm.plugins import EXPORT_FORMATS, found
from dynaorm.schema.model import spec_of

if TYPE_CHECKING:
    import argparse


class ExportFormat(Protocol):
    """What an entry point of the group ``dynaorm.export_formats`` names (an object, such
    as the lake's ``dynaorm.lake:ICEBERG``): a format :func:`~dynaorm.jobs.export` writes besides
    Parquet, found by its entry point's name (``format="NAME"``, ``dynaorm export
    --format NAME``). The export's tasks stage each dataset as Parquet parts; the format
    makes the job that runs them and does what it does with what they staged (the lake:
    its merge commits each dataset to an Iceberg table)."""

    def check(self, options: Mapping[str, Any]) -> None:
        """Refuse (:class:`ExportError`) options the format does not take or lacks, or
        a package it needs that is not installed, before anything is read."""

    def job(self, job: Job, staged: Staged, options: Mapping[str, Any]) -> Job:
        """The job :func:`~dynaorm.jobs.export` returns: ``job`` (the export's: its tasks write the
        parts ``staged`` describes) with the format's work, given its ``options``."""

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """Add the format's options to ``dynaorm export``'s parser (none: add nothing)."""

    def arguments(self, args: argparse.Namespace) -> dict[str, Any]:
        """The format's options as ``dynaorm export``'s parsed ``args`` give them (an
        option not given: ``None``), by the keyword :func:`~dynaorm.jobs.export` takes."""


@dataclass(frozen=True)
class Staged:
    """What an export's tasks stage, for the :class:`ExportFormat` that runs on them."""

    to: str
    """Where the parts are written (a directory or an ``s3://`` URL)."""
    datasets: tuple[tuple[str, Any, tuple[str, ...]], ...]
    """Each dataset: its name (``"user"``, ``"order.history"``), the model's
    ``pyarrow.Schema`` of its rows and the fields of its key (a version row's: with
    ``version``)."""
    source: tuple[str, str, str, str]
    """What the export reads: its kind (``"scan"``, ``"full"``, ``"incremental"``), an
    id (a DynamoDB export's ARN, a scan's new id), the ISO time its rows are as of and an
    incremental export's start (``""``: none)."""
    parts: int
    """How many tasks write parts (one a task, ``part-00000`` on)."""

    def read(self, name: str) -> Iterator[Any]:
        """The staged parts of dataset ``name``, each a ``pyarrow.Table`` (once the tasks
        ran: in the job's merge)."""
        return read_parts(self.to, name, self.parts)


def export_format(name: str, options: Mapping[str, Any]) -> ExportFormat | None:
    """The export format named ``name`` (``None``: Parquet alone), its ``options``
    checked; :class:`ExportError` for a format not found or its options wrong."""
    points = found(EXPORT_FORMATS)
    if name == "parquet":
        if options:
            taken = ", ".join(f"{k}=" for k in sorted(options))
            raise ExportError(f"export: {taken} {'is' if len(options) == 1 else 'are'} for "
                              f"another format= than 'parquet' (found: "
                              f"{', '.join(map(repr, points)) or 'none'})")
        return None
    point = points.get(name)
    if point is None:
        names = " or ".join(repr(n) for n in ("parquet", *points))
        raise ExportError(f"export: format= is {names}, not {name!r}")
    kind: ExportFormat = point.load()
    kind.check(options)
    return kind


# -- what an export format's job needs (Staged) ----------------------------------------
def datasets_of(job: Job) -> list[tuple[str, Any, tuple[str, ...]]]:
    """Each dataset ``job`` writes: its name, the model's ``pyarrow.Schema`` of its rows
    and the fields of its key (a version row's: with ``version``)."""
    from dynaorm.jobs.arrow import schema_of

    options = dict(job.template.options)
    decrypt = options["encrypted"] == "decrypt"
    out = []
    for cls in options["entities"]:
        spec = spec_of(cls)
        keys = tuple(dict.fromkeys((*spec.pk.fields, *(spec.sk.fields if spec.sk else ()))))
        cols = schema_of(RowReader(spec, decrypt).columns())
        out.append((spec.type_name, cols, keys))
        if options["history"] and spec.versioned:
            out.append((f"{spec.type_name}.history", cols, (*keys, "version")))
    return out


def source_of(job: Job) -> tuple[str, str, str, str]:
    """What ``job`` reads: its kind (``"scan"``, ``"full"``, ``"incremental"``), an id
    (a DynamoDB export's ARN, else its source URL; a scan: a new id), the ISO time its
    rows are as of (an incremental export's end) and an incremental export's start."""
    options = dict(job.template.options)
    if options["kind"] == "scan":
        return "scan", f"scan-{uuid.uuid4().hex}", datetime.now(UTC).isoformat(), ""
    source = str(options.get("source", ""))
    summary = manifest(source)[0]
    as_of = (summary.get("exportToTime") or summary.get("exportTime")
             or summary.get("endTime") or "")
    return (options["kind"], str(summary.get("exportArn") or source), _iso(as_of),
            _iso(summary.get("exportFromTime") or ""))


def _iso(value: Any) -> str:
    """A manifest's time (ISO text, or seconds since the epoch) as ISO 8601 UTC text."""
    if value in ("", None):
        return ""
    if isinstance(value, int | float):
        return datetime.fromtimestamp(value, UTC).isoformat()
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).astimezone(UTC).isoformat()


def read_parts(to: str, name: str, parts: int) -> Iterator[Any]:
    """The parts ``part-00000`` to ``part-<parts - 1>`` of dataset ``name`` an export
    wrote under ``to`` (a directory or an ``s3://`` URL), each a ``pyarrow.Table`` (a
    part a task left out, finding nothing: none)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    s3 = s3_client() if to.startswith("s3://") else None
    for n in range(parts):
        part = f"{to.rstrip('/')}/{name}/part-{n:05d}.parquet"
        if s3 is None:
            if Path(part).exists():
                yield pq.read_table(part)
            continue
        from botocore.exceptions import ClientError

        bucket, key = split_url(part)
        try:
            body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                continue
            raise ExportError(f"{part} cannot be read: {exc}") from exc
        yield pq.read_table(pa.BufferReader(body))
