"""Red team (issue 59, point 7): every dynaorm error pickles whole, not only
``RequestError`` (a ``run_local`` worker sends its error to the process that started it;
0.6's tools59 pickled ``RequestError`` only: an ``OutcomeUnknownError``, a
``DecryptionError`` or a ``BulkWriteError`` raised in a worker failed to unpickle, since
unpickling called ``__init__`` without its keyword-only arguments)."""

from __future__ import annotations

import pickle
from typing import Any

import pytest

import dynaorm
import dynaorm.errors
from dynaorm import (
    BulkWriteError,
    DecryptionError,
    DynaormError,
    KeyringError,
    ModelFileError,
    OutcomeUnknownError,
)


def _all(cls: type[DynaormError]) -> list[type[DynaormError]]:
    found = [cls]
    for sub in cls.__subclasses__():
        found.extend(_all(sub))
    return found


ERRORS = sorted({c for c in _all(DynaormError) if c.__module__.startswith("dynaorm")},
                key=lambda c: c.__qualname__)


@pytest.mark.parametrize("cls", ERRORS, ids=lambda c: c.__qualname__)
def test_every_error_class_pickles_whole(cls: type[DynaormError]) -> None:
    error = cls.__new__(cls)
    error.args = ("what went wrong",)
    error.__dict__.update({"field": "f", "key_id": "k", "extra": [1, {"a": 2}]})
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is cls and back.args == error.args and str(back) == str(error)
    assert back.__dict__ == error.__dict__


@pytest.mark.parametrize("error", [
    DecryptionError("no key", field="secret", key_id="k1"),
    KeyringError("kms down", key_id="k2"),
    ModelFileError("bad file", place="m.py:3"),
    OutcomeUnknownError("lost answer", operation="PutItem", keys=[{"pk": {"S": "a"}}],
                        tables=["t"]),
    BulkWriteError("partial", written=[1], not_written=[2], unknown=[3]),
], ids=lambda e: type(e).__name__)
def test_errors_made_as_dynaorm_makes_them_pickle(error: Any) -> None:
    back = pickle.loads(pickle.dumps(error))
    assert type(back) is type(error) and str(back) == str(error)
    assert back.__dict__ == error.__dict__
    assert set(dynaorm.errors.__all__) >= {type(error).__name__}
