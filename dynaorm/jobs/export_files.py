"""S3 as the jobs read and write it, and the files of a DynamoDB export to S3: the
process's S3 client (:func:`s3_client`), an ``s3://`` URL's bucket and key, an export's
manifest (:func:`read_source`) and its data files' lines (:func:`data_lines`, gunzipped
and checked whole; :func:`batches` of them), each line read as DynamoDB JSON
(:func:`parse_line`). The exports (:mod:`dynaorm.jobs.exports`) and the loads
(:mod:`dynaorm.jobs.load`) read through it."""

from __future__ import annotations

import functools
import json
import os
import threading
import zlib
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic_core import from_json

from dynaorm.errors import DynaormError
from dynaorm.schema.streams import normalize_item

Item = dict[str, Any]  # (a stored row, DynamoDB JSON)
#: a data file's lines read in one batch (the vector way: in one ``pyarrow.json`` call)
LINES = 5000


class ExportError(DynaormError):
    """An export's input cannot be read whole (a missing manifest, a truncated or corrupt
    data file, a format dynaorm does not read), or its options are wrong: the message names
    the file (and line). A task that raises it writes nothing."""


def s3_client() -> Any:
    """An S3 client of the standard AWS configuration (credentials, region, profile,
    ``AWS_ENDPOINT_URL_S3``) as the environment says now: one a process for each setting
    of the ``AWS_*`` variables, as boto3's default session keeps one (a botocore client is
    thread-safe). Made once: a client a task cost 12 ms of CPU, a sixth of
    ``benchmarks/export.py``'s 5,000-item tasks."""
    key = (os.getpid(), tuple(sorted(
        (k, v) for k, v in os.environ.items() if k.startswith("AWS_"))))
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            import botocore.session

            if len(_CLIENTS) >= 16:  # (a process that keeps changing its configuration)
                _CLIENTS.clear()
            session = botocore.session.get_session()
            session.register_component("data_loader", _loader())
            client = _CLIENTS[key] = session.create_client("s3")
    return client


_CLIENTS: dict[tuple[Any, ...], Any] = {}  # (clients, not data: no cache of caches.py)
_CLIENTS_LOCK = threading.Lock()


@functools.cache
def _loader() -> Any:
    """botocore's data files, read once a process (what they say never changes)."""
    import botocore.loaders

    return botocore.loaders.create_loader()


def split_url(url: str) -> tuple[str, str]:
    """The bucket and key of an ``s3://`` URL."""
    bucket, _, key = url.removeprefix("s3://").partition("/")
    return bucket, key


def listed(s3: Any, bucket: str, prefix: str) -> list[str]:
    """The keys of the objects under ``prefix`` in ``bucket``."""
    keys, pages = [], {"Bucket": bucket, "Prefix": prefix}
    while True:
        out = s3.list_objects_v2(**pages)
        keys += [o["Key"] for o in out.get("Contents", [])]
        if not out.get("IsTruncated"):
            return keys
        pages["ContinuationToken"] = out["NextContinuationToken"]


def read_object(s3: Any, bucket: str, key: str) -> bytes:
    """An S3 object's bytes; :class:`ExportError` when it cannot be read."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        body: bytes = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    except (ClientError, BotoCoreError) as exc:
        raise ExportError(f"s3://{bucket}/{key} cannot be read: {exc}") from exc
    return body


def manifest(url: str) -> tuple[Any, str, str]:
    """The ``manifest-summary.json`` of the DynamoDB export at ``url`` (its
    ``.../AWSDynamoDB/<id>/`` folder, or the file), read, with its bucket and key."""
    bucket, key = split_url(url)
    where = key if key.endswith(".json") else f"{key.rstrip('/')}/manifest-summary.json"
    return json.loads(read_object(s3_client(), bucket, where)), bucket, where


def read_source(url: str) -> tuple[tuple[str, ...], str, str]:
    """The data files of the DynamoDB export at ``url`` (its ``.../AWSDynamoDB/<id>/``
    folder, or its ``manifest-summary.json``), as ``s3://`` URLs with the item count the
    manifest gives each (``#<count>``), its kind (``"full"`` or ``"incremental"``) and
    view type; :class:`ExportError` for a missing manifest or an ION export."""
    try:
        summary, bucket, where = manifest(url)
        files = summary.get("manifestFilesS3Key") or where.replace("summary", "files")
        entries = [json.loads(line) for line in read_object(s3_client(), bucket, files
                                                            ).splitlines() if line]
        found = tuple(f"s3://{bucket}/{e['dataFileS3Key']}#{e.get('itemCount', '')}"
                      for e in entries)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ExportError(f"the manifest of the export at {url} is not DynamoDB's: {exc!r}"
                          ) from exc
    if summary.get("outputFormat", "DYNAMODB_JSON") != "DYNAMODB_JSON":
        raise ExportError(f"the export at {url} is {summary['outputFormat']}: dynaorm reads "
                          "DYNAMODB_JSON exports")
    kind = "incremental" if summary.get("exportType") == "INCREMENTAL_EXPORT" else "full"
    # (the view is the summary's ``outputView``, as DynamoDB writes it; ``exportViewType``
    # is the API's name of it, which 0.6 read: a file that has only that still reads)
    view = summary.get("outputView") or summary.get("exportViewType")
    return found, kind, str(view or "NEW_AND_OLD_IMAGES")


#: the longest line a data file or a report of DynamoDB's may hold (an item is at most
#: 400 KB; its DynamoDB JSON, base64 and all, and a report record's two items, far less)
_MAX_LINE = 16 << 20


def data_lines(s3: Any, url: str) -> Iterator[tuple[Sequence[int], list[bytes]]]:
    """The lines of one data file (gzipped, as DynamoDB writes them), streamed a megabyte
    at a time: each megabyte's lines but blank ones, and their numbers;
    :class:`ExportError` naming the file when it is cut short or corrupt."""
    from botocore.exceptions import BotoCoreError, ClientError

    url, _, count = url.partition("#")
    bucket, key = split_url(url)
    n = items = 0
    try:
        body = s3.get_object(Bucket=bucket, Key=key)["Body"]
        rest = b""
        for data in _unzipped(body.iter_chunks(1 << 20), key.endswith(".gz")):
            *lines, rest = (rest + data).split(b"\n")
            if len(rest) > _MAX_LINE:  # (bytes from S3: no line of an export is that long)
                raise ValueError(f"a line longer than {_MAX_LINE} bytes")
            kept = [line for line in lines if line.strip()]
            numbers = range(n + 1, n + 1 + len(lines)) if len(
                kept) == len(lines) else [n + 1 + i for i, line in enumerate(lines)
                          if line.strip()]
            n, items = n + len(lines), items + len(kept)
            yield numbers, kept
        if rest.strip():
            items += 1
            yield [n + 1], [rest]
    except (ClientError, BotoCoreError, EOFError, OSError, ValueError, zlib.error) as exc:
        raise ExportError(f"{url}: cannot be read whole (truncated or corrupt after line "
                          f"{n}): {exc}") from exc
    if count and int(count) != items:
        raise ExportError(f"{url}: {items} items read, the manifest says {count}: the "
                          "file is truncated")


def _unzipped(chunks: Iterable[bytes], gzipped: bool) -> Iterator[bytes]:
    """``chunks`` of a file, gunzipped (every member of it); ``EOFError`` when the file
    ends inside a member."""
    if not gzipped:
        yield from chunks
        return
    unzip, fed = zlib.decompressobj(wbits=31), False
    for chunk in chunks:
        while True:  # (a megabyte out at most a step: a small hostile object may inflate
            fed = fed or bool(chunk)  # to gigabytes)
            out = unzip.decompress(chunk, 1 << 20)
            if out:
                yield out
            if unzip.eof:
                chunk = unzip.unused_data  # (the next member)
                unzip, fed = zlib.decompressobj(wbits=31), False
                if not chunk:
                    break
                continue
            chunk = unzip.unconsumed_tail
            if not chunk and len(out) < 1 << 20:
                break
    if fed:
        raise EOFError("the file ends inside a compressed member")


def parse_line(line: bytes, where: str, record: Any = None) -> dict[str, Any]:
    """One line of a data file as JSON (``record``: as read already), its binary values
    as ``bytes``."""
    try:
        record = from_json(line) if record is None else record
        if b'"B"' in line or b'"BS"' in line:  # (base64 text in DynamoDB JSON: bytes)
            record = {k: normalize_item(v, where) if k in _IMAGES else v
                      for k, v in record.items()}
    except (ValueError, AttributeError, DynaormError) as exc:
        raise ExportError(f"{where}: not DynamoDB JSON: {exc}") from exc
    if not isinstance(record, dict):
        raise ExportError(f"{where}: not DynamoDB JSON: {line[:80]!r}")
    return record


_IMAGES = ("Item", "Keys", "NewImage", "OldImage")


@dataclass(frozen=True)
class Batch:
    """Lines of one data file read together, and their numbers in it (where each was
    read is made only for the lines that need it: the vector way's need none)."""

    name: str
    numbers: Sequence[int]
    lines: list[bytes]

    def where(self, n: int) -> str:
        """Where line ``n`` of the batch was read: its file and line."""
        return f"{self.name} line {self.numbers[n]}"

    def only(self, kept: Iterable[int]) -> Batch:
        """The batch's lines ``kept`` (indices, in order)."""
        kept = list(kept)
        return Batch(self.name, [self.numbers[n] for n in kept],
                     [self.lines[n] for n in kept])


def batches(s3: Any, url: str) -> Iterator[Batch]:
    """The lines of one data file, in batches of :data:`LINES`."""
    name = url.partition("#")[0]
    numbers: list[int] = []
    lines: list[bytes] = []
    for more_numbers, more in data_lines(s3, url):
        numbers += more_numbers
        lines += more
        while len(lines) >= LINES:
            yield Batch(name, numbers[:LINES], lines[:LINES])
            numbers, lines = numbers[LINES:], lines[LINES:]
    if lines:
        yield Batch(name, numbers, lines)
