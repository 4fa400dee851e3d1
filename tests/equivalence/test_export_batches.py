"""What a full export's task does once instead of for each file or line (issue 70), against
the plain way: the process's S3 client follows the AWS configuration as it is when asked
for; a data file's lines read in bulk give the same lines, numbers and errors as read one by
one. The exports these feed: ``tests/equivalence/test_export_vector.py`` (the vector way on
and off) and ``tests/integration/test_export.py``."""

from __future__ import annotations

import pytest

pytest.importorskip("pyarrow", reason="dynaorm[export] is not installed")

from dynaorm.tools.export import _s3


def test_the_s3_client_is_one_a_process_for_each_aws_configuration(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Asked again with the same ``AWS_*`` variables: the same client (made once); with
    any of them changed (another endpoint, other credentials): a client of the new one."""
    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1"),
                        ("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:1")):
        monkeypatch.setenv(name, value)
    first = _s3()
    assert _s3() is first and first.meta.endpoint_url == "http://127.0.0.1:1"
    monkeypatch.setenv("AWS_ENDPOINT_URL_S3", "http://127.0.0.1:2")
    second = _s3()
    assert second is not first and second.meta.endpoint_url == "http://127.0.0.1:2"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "y")
    third = _s3()
    assert third is not second and third._request_signer._credentials.access_key == "y"
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    assert _s3() is second
