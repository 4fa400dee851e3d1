"""What a full export's task does once instead of for each file or line (issue 70), against
the plain way: the process's S3 client follows the AWS configuration as it is when asked
for; a data file's lines read in bulk give the same lines, numbers and errors as read one by
one. The exports these feed: ``tests/equivalence/test_export_vector.py`` (the vector way on
and off) and ``tests/integration/test_export.py``."""

from __future__ import annotations

import gzip
import itertools
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("pyarrow", reason="dynaorm[export] is not installed")

from dynaorm.jobs import export_files
from dynaorm.jobs.export_files import ExportError, s3_client
from tests.support.examples import examples


def test_the_s3_client_is_one_a_process_for_each_aws_configuration(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked again with the same ``AWS_*`` variables: the same client (made once); with
    any of them changed (another endpoint, other credentials): a client of the new one."""
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1"),
                        ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")):
        monkeypatch.setenv(name, value)
    first = s3_client()
    assert s3_client() is first and first.meta.endpoint_url == "http://127.0.0.1:1"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:2")
    second = s3_client()
    assert second is not first and second.meta.endpoint_url == "http://127.0.0.1:2"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "y")
    third = s3_client()
    assert third is not second and third._request_signer._credentials.access_key == "y"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    assert s3_client() is second


class _Body:
    """An S3 object's body served in chunks of ``size`` bytes (whatever is asked)."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size = data, size

    def iter_chunks(self, _: int) -> Iterator[bytes]:
        for at in range(0, len(self.data), self.size):
            yield self.data[at:at + self.size]


class _S3:
    def __init__(self, data: bytes, size: int) -> None:
        self.body = _Body(data, size)

    def get_object(self, Bucket: str, Key: str) -> dict[str, Any]:
        return {"Body": self.body}


_LINE = st.sampled_from([b"", b" ", b"\t\r", b"{}", b'{"Item": {}}', b"x" * 40, b"a b"])


@settings(max_examples=examples(150), deadline=None)
@given(lines=st.lists(_LINE, max_size=40), end=st.booleans(), members=st.integers(1, 3),
       size=st.integers(1, 64), batch=st.integers(1, 7))
def test_a_file_s_lines_read_in_bulk_are_its_lines_read_one_by_one(
        lines: list[bytes], end: bool, members: int, size: int, batch: int) -> None:
    """Any lines (blank ones, whitespace, a last line with or without its newline), gzipped
    in one member or several, served in chunks of any size, read in batches of any size:
    the batches hold the file's lines but blank ones, in order, each with its number (as
    read one by one), and the item count the manifest gives is checked against them."""
    text = b"\n".join(lines) + (b"\n" if end and lines else b"")
    cut = [len(text) * k // members for k in range(members + 1)]
    data = b"".join(gzip.compress(text[a:b]) for a, b in itertools.pairwise(cut))
    plain = [(n, line) for n, line in enumerate(text.split(b"\n"), 1) if line.strip()]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(export_files, "LINES", batch)
        batches = list(export_files.batches(_S3(data, size),
                                            f"s3://b/f.json.gz#{len(plain)}"))
    assert all(0 < len(b.lines) <= batch for b in batches)
    assert all(len(b.lines) == batch for b in batches[:-1])
    assert [(b.numbers[n], line) for b in batches for n, line in enumerate(b.lines)] == plain
    assert [b.where(n) for b in batches for n in range(len(b.lines))] == [
        f"s3://b/f.json.gz line {n}" for n, _ in plain]
    with pytest.raises(ExportError, match="the file is truncated"):
        list(export_files.batches(_S3(data, size), f"s3://b/f.json.gz#{len(plain) + 1}"))
    with pytest.raises(ExportError, match="cannot be read whole"):  # (its last member cut)
        list(export_files.batches(_S3(data[:-1], size), "s3://b/f.json.gz"))
