"""Checkpoint files of the commands that scan a table page by page (``dynaorm check``,
``dynaorm migrate``): a run's scan position and counts, written atomically after every
page and read back whole, or refused with a :class:`CheckpointError` that says why.

A run's state is a dataclass with at least ``table``, ``last_key`` (the scan's
``LastEvaluatedKey``, binary values base64 in the file) and ``done``; each command keeps
its own counts beside them.
"""

import base64
import json
import os
import typing
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any, TypeVar

from dynaorm.errors import DynaormError
from dynaorm.schema.streams import normalize_item

S = TypeVar("S")


class CheckpointError(DynaormError):
    """A checkpoint file that cannot be used (unreadable, another table, other options)."""


def dump(state: Any) -> str:
    """``state`` (a dataclass) as the checkpoint file's text (binary key values base64)."""
    return json.dumps(asdict(state), indent=1,
                      default=lambda raw: base64.b64encode(raw).decode())


def parse(cls: type[S], text: str, where: str, command: str, table: str) -> S:
    """The state of class ``cls`` in the checkpoint text read from ``where``: every field
    must hold what its annotation says (``list[str]``: a list of strings; a hand-edited
    file), ``last_key`` a DynamoDB key; else :class:`CheckpointError` naming ``command``;
    one of another ``table`` than the run's is refused too."""
    try:
        state = cls(**(data := json.loads(text)))
        state.last_key = normalize_item(state.last_key,  # type: ignore[attr-defined]
                                        f"{where} last_key")
        for name, kind in typing.get_type_hints(cls).items():
            value = getattr(state, name)
            if name != "last_key" and not _holds(value, kind):
                raise TypeError(f"{name} must be {kind.__name__}, got {value!r}")
    except (ValueError, TypeError) as exc:
        raise CheckpointError(f"checkpoint {where} is not a dynaorm {command} checkpoint: "
                              f"{exc}") from exc
    if (found := data["table"]) != table:
        raise CheckpointError(f"checkpoint {where} belongs to table {found!r}, not {table!r}")
    return state


def _holds(value: Any, kind: Any) -> bool:
    """Whether ``value``, read from JSON, is of type ``kind`` (``int``, not a bool;
    ``list[str]``, ``dict[str, int]``: their items too)."""
    origin, args = typing.get_origin(kind) or kind, typing.get_args(kind)
    if not isinstance(value, origin) or (origin is int and isinstance(value, bool)):
        return False
    if isinstance(value, dict):
        return all(_holds(k, args[0]) and _holds(v, args[1]) for k, v in value.items())
    return not isinstance(value, list) or all(_holds(v, args[0]) for v in value)


def save(path: Path | None, state: Any) -> None:
    """Write ``state`` to ``path`` atomically (a crash leaves the old checkpoint or the new
    one); nothing without a path."""
    if path is None:
        return
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(dump(state))
    os.replace(tmp, path)


def advance(path: Path | None, state: Any, scanned: int, last: Any,
            progress: Callable[[int], object] | None) -> None:
    """Count a page of ``scanned`` items ending at ``last`` (``None``: the scan's end)
    into ``state``, record it at ``path`` and tell ``progress``."""
    state.scanned += scanned
    state.pages += 1
    state.last_key = last
    state.done = last is None
    save(path, state)
    if progress is not None:
        progress(state.scanned)


def existing(path: Path, fresh: Any, *, create: bool) -> str | None:
    """The text of the checkpoint at ``path``; ``None`` when there is none, after writing
    ``fresh`` there when ``create`` (an unwritable place fails now, before any page is
    scanned or written)."""
    if path.is_dir():
        raise CheckpointError(f"checkpoint {path} is a directory, not a file")
    if not path.exists():
        if create:
            try:
                save(path, fresh)
            except OSError as exc:
                raise CheckpointError(f"checkpoint {path} cannot be written: {exc}") from exc
        return None
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"checkpoint {path} cannot be read: {exc}") from exc
