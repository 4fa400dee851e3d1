"""A DynamoDB botocore client made as dynaorm's botocore wire makes its own
(:func:`~dynaorm.client.settings.client_settings`, answers checked by
:func:`~dynaorm.client.botocore.check_checksums`), for tests that compare settings or act
as another client of the same engine. The package inlines this in ``BotocoreWire.client``;
applications use ``Client(...).botocore``."""

from __future__ import annotations

from typing import Any

import botocore.config

from dynaorm.client.botocore import check_checksums
from dynaorm.client.settings import client_settings, default_session


def create_client(endpoint_url: str | None, region: str | None, *,
                  owner: str = "Client", config: Any = None, session: Any | None = None,
                  verify: bool | str | None = None) -> Any:
    """The client (``session``: the botocore session to use; default: a new one)."""
    session = default_session() if session is None else session
    kwargs, options = client_settings(session, endpoint_url, region, owner=owner,
                                      config=config, verify=verify)
    return check_checksums(session.create_client(
        "dynamodb", config=botocore.config.Config(**options), **kwargs))
