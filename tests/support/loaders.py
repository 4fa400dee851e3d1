"""One botocore data loader per search path for a module's botocore sessions.

A new botocore session makes a new loader, which reads and parses the service models and
endpoint rules again (most of what making a session's first client costs). The files
never change during a run, so tests that compare how sessions resolve the environment,
which is their subject, share the parsed files: each session is still new and reads the
environment and the shared files as they are."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator

import pytest


@contextlib.contextmanager
def shared_loaders() -> Iterator[None]:
    """Within the block, sessions share the loader of their data path
    (``AWS_DATA_PATH``: one loader per value)."""
    import botocore.loaders
    import botocore.session

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(botocore.session, "create_loader",
                      functools.cache(botocore.loaders.create_loader))
        yield
