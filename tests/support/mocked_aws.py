"""``aws_moto``: moto in process for a whole test, AWS's own clients included (boto3's
S3 and the clients inference makes, not only dynaorm's), with the configuration an
application has (credentials and a region). A module that uses it imports it
(``aws_moto = mocked_aws.aws_moto``, as ``export_setup``'s fixtures are taken)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from dynaorm.testing import moto_backend


@pytest.fixture
def aws_moto(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto in process, boto3's own clients (inference's) included."""
    from moto import mock_aws

    for name, value in (("AWS_ACCESS_KEY_ID", "x"), ("AWS_SECRET_ACCESS_KEY", "x"),
                        ("AWS_DEFAULT_REGION", "us-east-1")):
        monkeypatch.setenv(name, value)
    with mock_aws(), moto_backend():
        yield
